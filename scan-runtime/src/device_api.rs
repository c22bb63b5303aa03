//! An operator's warp- and block-level scans as CUDA source, for kernels
//! you write and compile yourself ([`DeviceApi`]).

use crate::error::Result;
use crate::jit;
use kernels_gen::{Arch, POLICY_NAMESPACE};
use scan_core::ScanOp;

/// The CUDA source of `Op`'s scans for your own kernels: put
/// [`source`](Self::source) in front of your kernels in one NVRTC program,
/// compile it with [`nvrtc_options`](Self::nvrtc_options) (the operator's
/// Rust semantics depend on them), and call, in device code:
///
/// * `gpu_scan::warp_inclusive_scan<Op>(v)` and
///   `gpu_scan::warp_exclusive_scan<Op>(v, total)`, and their reverse
///   (suffix) twins `warp_inclusive_reverse_scan` and
///   `warp_exclusive_reverse_scan`: across the 32 lanes of a warp (all of
///   them call it), no shared memory;
/// * `gpu_scan::BlockScan<Op, BlockThreads>`: across a one-dimensional
///   block of `BlockThreads` threads (a multiple of 32 up to 1024), with
///   [`block_shared_bytes`](Self::block_shared_bytes) of shared memory (its
///   `TempStorage`): `inclusive(v, total)` and `exclusive(v, total)` for one
///   value per thread; `inclusive(items, total)` and `exclusive(items,
///   total)` for `Items` values per thread in the blocked order (thread `t`
///   holds elements `t·Items … t·Items + Items − 1`); and
///   `inclusive_chunk(items, running)` / `exclusive_chunk(items, running)`
///   for loops over chunks of a longer sequence, `running` carrying
///   everything before the chunk. Each has a reverse (suffix) twin,
///   `…_reverse` (`inclusive_reverse_chunk` and `exclusive_reverse_chunk`
///   for chunks walked from the end, `running` carrying everything after
///   the chunk): element `k` gets `x_k ∘ … ∘ x_last`, the operator's order
///   kept.
///
/// `Op` there is the operator's policy, [`policy`](Self::policy)
/// (`gpu_scan_ops::<name>`), and its element type is `Op::T`: the layout of
/// your Rust element, so a `CudaSlice<Element>` is a `T*` in the kernel.
/// For a struct, `Op::scan_element_t` is the struct with its fields, and
/// `Op::T` is how kernels hold it: the same struct, except for elements of
/// many bytes, half-words or bools (`kernels_gen::packed_element`), which
/// are held as their bytes in 32-bit words; `Op::held::fields(v)` and
/// `Op::held::hold(e)` convert either way (for the same struct, they do
/// nothing).
/// The operator combines `x ∘ y` with `x` the earlier element, exactly as
/// on the CPU. Several operators' sources may go in one program, the same
/// one more than once; two different operators of the same name (from two
/// modules) in one program are a compile error there, so rename one.
/// Full reference: the comments of `device_api.cuh` in the source.
///
/// ```
/// use gpu_scan::prelude::*;
/// use gpu_scan::DeviceApi;
///
/// #[scan_op(identity = Affine { a: 1.0, b: 0.0 },
///           op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b })]
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Affine { a: f32, b: f32 }
///
/// let api = DeviceApi::of::<Affine>();
/// assert_eq!(api.policy(), "gpu_scan_ops::affine");
/// let program = format!(
///     "{}\ntypedef {} Op;\n\
///      extern \"C\" __global__ void scan_rows(const Op::T* in, Op::T* out) {{\n\
///        typedef gpu_scan::BlockScan<Op, 128> Scan;\n\
///        __shared__ Scan::TempStorage storage;\n\
///        Op::T total;\n\
///        const unsigned i = blockIdx.x * 128 + threadIdx.x;\n\
///        out[i] = Scan(storage).inclusive(in[i], total);\n\
///      }}\n",
///     api.source(),
///     api.policy()
/// );
/// assert_eq!(DeviceApi::block_shared_bytes::<Affine>(128), 5 * 8);
/// // Compile `program` with cudarc's NVRTC and `DeviceApi::nvrtc_options(arch)`,
/// // load it and launch `scan_rows` with 128 threads per block.
/// # let _ = program;
/// ```
#[derive(Clone, Debug)]
pub struct DeviceApi {
    source: String,
    policy: String,
}

impl DeviceApi {
    /// The device API of operator `Op`.
    pub fn of<Op: ScanOp>() -> Self {
        DeviceApi {
            source: kernels_gen::device_api_source(
                Op::NAME,
                Op::CUDA_SOURCE,
                &crate::kernels::layout::<Op>(),
            ),
            policy: format!("{POLICY_NAMESPACE}::{}", Op::NAME),
        }
    }

    /// The CUDA source to put in front of your kernels: the library's
    /// prelude (Rust's integer and float semantics), the element's
    /// declaration, the operator's policy and the warp and block scans.
    /// Nothing in it is a kernel.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The C++ name of the operator's policy (`gpu_scan_ops::<name>`), the
    /// `Op` of the templates.
    pub fn policy(&self) -> &str {
        &self.policy
    }

    /// NVRTC options for a program holding [`source`](Self::source), for
    /// `arch`: its virtual architecture (PTX; change the first option to
    /// `--gpu-architecture=sm_XX` for a CUBIN), C++17, and IEEE division,
    /// square roots and denormals, which the operator's Rust semantics
    /// need. Pass them as cudarc's `CompileOptions::options` and add your
    /// own.
    pub fn nvrtc_options(arch: Arch) -> Vec<String> {
        kernels_gen::semantic_nvrtc_options(arch)
    }

    /// Compiles your program (holding [`source`](Self::source)) to PTX for
    /// `arch` with [`nvrtc_options`](Self::nvrtc_options) and `extra`
    /// options, with the NVRTC the runtime uses ([`crate::nvrtc`]: the one
    /// that fits the driver, or `GPU_SCAN_NVRTC`'s) rather than the first
    /// one cudarc finds. Load the result with `ctx.load_module`.
    ///
    /// # Errors
    /// [`ScanError::NoNvrtc`](crate::ScanError::NoNvrtc), or [`ScanError::Compile`](crate::ScanError::Compile) with NVRTC's log
    /// and where the source was written.
    pub fn compile(program: &str, arch: Arch, extra: &[&str]) -> Result<cudarc::nvrtc::Ptx> {
        let mut options = Self::nvrtc_options(arch);
        options.extend(extra.iter().map(|o| o.to_string()));
        jit::compile_uncached("device_api", program, &options).map(|image| image.to_module_image())
    }

    /// The shared memory `gpu_scan::BlockScan<Op, block_threads>` takes
    /// (`sizeof(TempStorage)`): one element per warp and one more.
    pub fn block_shared_bytes<Op: ScanOp>(block_threads: u32) -> usize {
        (block_threads as usize / 32 + 1) * std::mem::size_of::<Op::Element>()
    }
}
