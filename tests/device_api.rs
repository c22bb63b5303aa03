//! The device API (`gpu_scan::DeviceApi`): an operator's warp and block
//! scans called from kernels the user writes and compiles.
//!
//! * Without a GPU (CI): test kernels that call every function of the API
//!   compile with NVRTC and assemble with ptxas for every architecture CUDA
//!   13 supports, with no register spills, for operators of 1 to 24 bytes;
//!   several operators' sources (one of them twice) share one program.
//! * On a GPU: those kernels run on random inputs over lengths at every
//!   boundary (a warp, a block, a chunk, ± 1, many of them ± 1), outputs
//!   poisoned with guard bands after them, and every output is compared with
//!   the CPU's scan of the same pieces. The operators are non-commutative
//!   (integer affine maps and "keep the right one", bit for bit; 2×2 float
//!   matrices within `Mat2`'s tolerance, see `tests/gpu_suite.rs`).
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;

use common::gpu::{compare, open_gpu, poison, poisoned, random_input, Case};
use common::ledger::{self, compile_and_assemble};
use common::nvrtc::{compile_program, tools_available, KernelReport};
use common::ops::{AffineU32, Latest, Mat2, Stats, SumU8};
use gpu_scan::cudarc::driver::{CudaContext, CudaFunction, LaunchConfig, PushKernelArg};
use gpu_scan::prelude::*;
use gpu_scan::{Arch, DeviceApi};
use rayon::prelude::*;
use std::sync::Arc;

/// Test kernels over `Op`, the operator's policy (typedef'd by [`program`]).
/// Each writes the inclusive and the exclusive scan of its pieces and each
/// piece's total, forward and, as `<name>_reverse`, from the end of each
/// piece (suffix scans):
/// * `warp_scans`: pieces of 32 (one warp each), one value per lane;
/// * `block_values_1024`: pieces of 1024, `BlockScan<Op, 1024>`, one value
///   per thread (32 warps: warp 0 scans 32 warp totals);
/// * `block_items_160x5`: pieces of 800, `BlockScan<Op, 160>`, 5 items per
///   thread (an odd number of warps and of items);
/// * `chunks_96x3`, `chunks_32x1`: one block per row of `row_length`
///   elements, looping over chunks of 288 (32) elements with a running
///   prefix (from the last chunk, in reverse); the totals are the rows'.
///
/// The inclusive and the exclusive scans use the same storage one after
/// the other, and their totals are both checked.
const TEST_KERNELS: &str = r#"
typedef Op::T T;

template <bool Reverse>
__device__ __forceinline__ void run_warp_scans(const T* in, T* inclusive, T* exclusive, T* totals, unsigned long long n) {
  const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const T v = i < n ? in[i] : Op::identity();
  T total;
  const T incl = Reverse ? gpu_scan::warp_inclusive_reverse_scan<Op>(v) : gpu_scan::warp_inclusive_scan<Op>(v);
  const T excl = Reverse ? gpu_scan::warp_exclusive_reverse_scan<Op>(v, total) : gpu_scan::warp_exclusive_scan<Op>(v, total);
  if (i < n) {
    inclusive[i] = incl;
    exclusive[i] = excl;
    if ((threadIdx.x & 31u) == 0) totals[i >> 5] = total;
  }
}

template <bool Reverse>
__device__ __forceinline__ void run_block_values_1024(const T* in, T* inclusive, T* exclusive, T* totals, unsigned long long n) {
  typedef gpu_scan::BlockScan<Op, 1024> Scan;
  __shared__ Scan::TempStorage storage;
  const unsigned long long i = blockIdx.x * 1024ull + threadIdx.x;
  const T v = i < n ? in[i] : Op::identity();
  T total, total_again;
  const T incl = Reverse ? Scan(storage).inclusive_reverse(v, total) : Scan(storage).inclusive(v, total);
  const T excl = Reverse ? Scan(storage).exclusive_reverse(v, total_again) : Scan(storage).exclusive(v, total_again);
  if (i < n) {
    inclusive[i] = incl;
    exclusive[i] = excl;
  }
  if (threadIdx.x == 0 && blockIdx.x * 1024ull < n) totals[blockIdx.x] = total;
  if (threadIdx.x == 1023 && blockIdx.x * 1024ull < n) totals[gridDim.x + blockIdx.x] = total_again;
}

template <bool Reverse>
__device__ __forceinline__ void run_block_items_160x5(const T* in, T* inclusive, T* exclusive, T* totals, unsigned long long n) {
  typedef gpu_scan::BlockScan<Op, 160> Scan;
  __shared__ Scan::TempStorage storage;
  const unsigned long long first = blockIdx.x * 800ull + threadIdx.x * 5u;
  T incl[5], excl[5];
#pragma unroll
  for (int k = 0; k < 5; ++k) incl[k] = excl[k] = first + k < n ? in[first + k] : Op::identity();
  T total, total_again;
  if (Reverse) {
    Scan(storage).inclusive_reverse(incl, total);
    Scan(storage).exclusive_reverse(excl, total_again);
  } else {
    Scan(storage).inclusive(incl, total);
    Scan(storage).exclusive(excl, total_again);
  }
#pragma unroll
  for (int k = 0; k < 5; ++k) {
    if (first + k < n) {
      inclusive[first + k] = incl[k];
      exclusive[first + k] = excl[k];
    }
  }
  if (threadIdx.x == 0 && blockIdx.x * 800ull < n) totals[blockIdx.x] = total;
  if (threadIdx.x == 159 && blockIdx.x * 800ull < n) totals[gridDim.x + blockIdx.x] = total_again;
}

template <int Threads, int Items, bool Reverse>
__device__ __forceinline__ void chunks(const T* in, T* inclusive, T* exclusive, T* totals, unsigned long long row_length) {
  typedef gpu_scan::BlockScan<Op, Threads> Scan;
  __shared__ typename Scan::TempStorage storage;
  constexpr unsigned long long chunk = Threads * Items;
  const unsigned long long row = blockIdx.x * row_length;
  const unsigned long long chunks = (row_length + chunk - 1) / chunk;
  T running_incl = Op::identity(), running_excl = Op::identity();
  for (unsigned long long c = 0; c < chunks; ++c) {
    const unsigned long long base = (Reverse ? chunks - 1 - c : c) * chunk;
    const unsigned long long first = base + threadIdx.x * Items;
    T incl[Items], excl[Items];
#pragma unroll
    for (int k = 0; k < Items; ++k) incl[k] = excl[k] = first + k < row_length ? in[row + first + k] : Op::identity();
    if (Reverse) {
      Scan(storage).inclusive_reverse_chunk(incl, running_incl);
      Scan(storage).exclusive_reverse_chunk(excl, running_excl);
    } else {
      Scan(storage).inclusive_chunk(incl, running_incl);
      Scan(storage).exclusive_chunk(excl, running_excl);
    }
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      if (first + k < row_length) {
        inclusive[row + first + k] = incl[k];
        exclusive[row + first + k] = excl[k];
      }
    }
  }
  if (threadIdx.x == 0) totals[blockIdx.x] = running_incl;
  if (threadIdx.x == Threads - 1) totals[gridDim.x + blockIdx.x] = running_excl;
}

template <bool Reverse>
__device__ __forceinline__ void run_chunks_96x3(const T* in, T* inclusive, T* exclusive, T* totals, unsigned long long row_length) {
  chunks<96, 3, Reverse>(in, inclusive, exclusive, totals, row_length);
}
template <bool Reverse>
__device__ __forceinline__ void run_chunks_32x1(const T* in, T* inclusive, T* exclusive, T* totals, unsigned long long row_length) {
  chunks<32, 1, Reverse>(in, inclusive, exclusive, totals, row_length);
}

// Kernel `name` (forward) and `name_reverse`, each calling run_name.
#define TEST_KERNEL(name, bounds)                                                                                   \
  extern "C" __global__ void bounds name(const T* in, T* inclusive, T* exclusive, T* totals, unsigned long long n) { \
    run_##name<false>(in, inclusive, exclusive, totals, n);                                                         \
  }                                                                                                                 \
  extern "C" __global__ void bounds name##_reverse(const T* in, T* inclusive, T* exclusive, T* totals,              \
                                                   unsigned long long n) {                                          \
    run_##name<true>(in, inclusive, exclusive, totals, n);                                                          \
  }
TEST_KERNEL(warp_scans, )
TEST_KERNEL(block_values_1024, __launch_bounds__(1024))
TEST_KERNEL(block_items_160x5, __launch_bounds__(160, 1))
TEST_KERNEL(chunks_96x3, __launch_bounds__(96))
TEST_KERNEL(chunks_32x1, __launch_bounds__(32))
"#;

/// The test kernels, each also as `<name>_reverse`.
const KERNELS: [&str; 5] = [
    "warp_scans",
    "block_values_1024",
    "block_items_160x5",
    "chunks_96x3",
    "chunks_32x1",
];

/// Every kernel's symbol, in both directions.
fn symbols() -> Vec<String> {
    KERNELS
        .iter()
        .flat_map(|k| [k.to_string(), format!("{k}_reverse")])
        .collect()
}

/// `Op`'s device API, its policy typedef'd as `Op`, and the test kernels.
fn program<Op: ScanOp>() -> String {
    let api = DeviceApi::of::<Op>();
    format!(
        "{}\ntypedef {} Op;\n{TEST_KERNELS}",
        api.source(),
        api.policy()
    )
}

fn compile_for<Op: ScanOp>(arch: Arch) -> (Vec<KernelReport>, Vec<String>) {
    let label = format!("device_api:{}:{}", Op::NAME, arch.sm_name());
    let symbols = symbols();
    let (mut reports, mut failures) = (Vec::new(), Vec::new());
    compile_and_assemble(
        &label,
        &program::<Op>(),
        DeviceApi::nvrtc_options(arch),
        &symbols,
        arch,
        &mut reports,
        &mut failures,
    );
    (reports, failures)
}

#[test]
fn device_api_compiles_for_every_architecture_without_spills() {
    if !tools_available() {
        return;
    }
    type Job = fn(Arch) -> (Vec<KernelReport>, Vec<String>);
    let ops: [Job; 5] = [
        compile_for::<SumU8>,
        compile_for::<AffineU32>,
        compile_for::<Latest>,
        compile_for::<Mat2>,
        compile_for::<Stats>,
    ];
    let jobs: Vec<(Job, Arch)> = Arch::CUDA_13
        .iter()
        .flat_map(|&arch| ops.iter().map(move |&job| (job, arch)))
        .collect();
    let results: Vec<_> = jobs.par_iter().map(|(job, arch)| job(*arch)).collect();
    let mut failures = Vec::new();
    let mut kernels = 0;
    for (reports, f) in results {
        failures.extend(f);
        for r in reports {
            kernels += 1;
            if !ledger::is_ledger_row(&r) {
                println!(
                    "{:<40} {:<20} {:>4} regs {:>4} spill {:>5} smem",
                    r.program, r.kernel, r.registers, r.spill_bytes, r.smem_bytes
                );
            }
            if r.spill_bytes > 0 {
                failures.push(format!(
                    "{}: {} spills {} bytes",
                    r.program, r.kernel, r.spill_bytes
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(kernels, Arch::CUDA_13.len() * ops.len() * 2 * KERNELS.len());
}

/// The example's kernel (`examples/selective_scan.rs`), for its program.
#[path = "../examples/selective_scan.rs"]
#[allow(dead_code)]
mod selective_scan;

#[test]
fn the_selective_scan_example_compiles_for_every_architecture_without_spills() {
    if !tools_available() {
        return;
    }
    let source = selective_scan::program(&DeviceApi::of::<selective_scan::Affine>());
    let results: Vec<_> = Arch::CUDA_13
        .par_iter()
        .map(|&arch| {
            let label = format!("device_api:selective_scan:{}", arch.sm_name());
            let (mut reports, mut failures) = (Vec::new(), Vec::new());
            compile_and_assemble(
                &label,
                &source,
                DeviceApi::nvrtc_options(arch),
                &["selective_scan".to_string()],
                arch,
                &mut reports,
                &mut failures,
            );
            (reports, failures)
        })
        .collect();
    let mut failures = Vec::new();
    for (reports, f) in results {
        failures.extend(f);
        for r in reports {
            if !ledger::is_ledger_row(&r) {
                println!(
                    "{:<40} {:>4} regs {:>4} spill",
                    r.program, r.registers, r.spill_bytes
                );
            }
            if r.spill_bytes > 0 {
                failures.push(format!("{}: spills {} bytes", r.program, r.spill_bytes));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("device_api: {}", ledger::summary());
}

#[test]
fn several_operators_share_one_program() {
    if !tools_available() {
        return;
    }
    // Two operators, one of them twice (its part is guarded), and a kernel
    // that scans with both.
    let source = format!(
        "{}{}{}\n\
         extern \"C\" __global__ void both(gpu_scan_ops::affine_u32::T* a, gpu_scan_ops::latest::T* b) {{\n\
           a[threadIdx.x] = gpu_scan::warp_inclusive_scan<gpu_scan_ops::affine_u32>(a[threadIdx.x]);\n\
           b[threadIdx.x] = gpu_scan::warp_inclusive_scan<gpu_scan_ops::latest>(b[threadIdx.x]);\n\
         }}\n",
        DeviceApi::of::<AffineU32>().source(),
        DeviceApi::of::<Latest>().source(),
        DeviceApi::of::<AffineU32>().source(),
    );
    assert_eq!(
        DeviceApi::of::<AffineU32>().policy(),
        "gpu_scan_ops::affine_u32"
    );
    assert_eq!(DeviceApi::of::<Latest>().policy(), "gpu_scan_ops::latest");
    let mut failures = Vec::new();
    compile_program(
        "device_api:two_operators",
        &source,
        DeviceApi::nvrtc_options(Arch::SM_90),
        &["both".to_string()],
        &mut failures,
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Two different operators with the same name, from two modules.
mod first {
    use gpu_scan::scan_op;
    #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    pub struct Same;
}
mod second {
    use gpu_scan::scan_op;
    #[scan_op(element = u32, identity = 0, op = |a, b| a ^ b)]
    pub struct Same;
}

#[test]
fn two_operators_of_one_name_in_one_program_are_a_compile_error() {
    if !tools_available() {
        return;
    }
    assert_eq!(
        <first::Same as ScanOp>::NAME,
        <second::Same as ScanOp>::NAME
    );
    let kernel = "extern \"C\" __global__ void k(unsigned* a) { a[threadIdx.x] = gpu_scan::warp_inclusive_scan<gpu_scan_ops::same>(a[threadIdx.x]); }\n";
    // One of them (twice) compiles; both do not, rather than one of them
    // standing in for the other.
    let once = format!(
        "{}{}{kernel}",
        DeviceApi::of::<first::Same>().source(),
        DeviceApi::of::<first::Same>().source()
    );
    let both = format!(
        "{}{}{kernel}",
        DeviceApi::of::<first::Same>().source(),
        DeviceApi::of::<second::Same>().source()
    );
    let mut failures = Vec::new();
    let options = DeviceApi::nvrtc_options(Arch::SM_90);
    compile_program(
        "device_api:same_twice",
        &once,
        options.clone(),
        &["k".to_string()],
        &mut failures,
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    compile_program(
        "device_api:same_names",
        &both,
        options,
        &["k".to_string()],
        &mut failures,
    );
    assert!(
        failures.len() == 1 && failures[0].contains("has already been defined"),
        "two operators named `same` must not compile: {failures:?}"
    );
}

#[test]
fn the_block_scan_storage_size_is_one_element_per_warp_and_one() {
    assert_eq!(DeviceApi::block_shared_bytes::<AffineU32>(256), 9 * 8);
    assert_eq!(DeviceApi::block_shared_bytes::<SumU8>(1024), 33);
    assert_eq!(DeviceApi::block_shared_bytes::<Latest>(32), 2 * 16);
}

// ---------------------------------------------------------------------------
// On the GPU.

/// Elements after each output that must stay poisoned.
const GUARD: usize = 64;

/// The CPU's scans of pieces: inclusive, exclusive, and each piece's total.
struct PieceScans<E> {
    inclusive: Vec<E>,
    exclusive: Vec<E>,
    totals: Vec<E>,
}

/// The CPU's inclusive and exclusive scans of `input` cut into pieces of
/// `piece` elements (the last may be shorter), from each piece's end where
/// `reverse` (element i: x_i ∘ … ∘ x_last, or x_(i+1) ∘ … ∘ x_last), and the
/// pieces' totals.
fn piece_scans<Op: ScanOp>(
    input: &[Op::Element],
    piece: usize,
    reverse: bool,
) -> PieceScans<Op::Element> {
    let mut inclusive = vec![Op::IDENTITY; input.len()];
    let mut exclusive = vec![Op::IDENTITY; input.len()];
    let mut totals = Vec::new();
    for (c, chunk) in input.chunks(piece.max(1)).enumerate() {
        let base = c * piece.max(1);
        let mut running = Op::IDENTITY;
        let order: Box<dyn Iterator<Item = usize>> = if reverse {
            Box::new((0..chunk.len()).rev())
        } else {
            Box::new(0..chunk.len())
        };
        for i in order {
            exclusive[base + i] = running;
            running = if reverse {
                Op::combine(chunk[i], running)
            } else {
                Op::combine(running, chunk[i])
            };
            inclusive[base + i] = running;
        }
        totals.push(running);
    }
    PieceScans {
        inclusive,
        exclusive,
        totals,
    }
}

struct Launch {
    kernel: &'static str,
    /// Elements a block scans: its piece (or row length, for `rows`).
    piece: usize,
    threads: u32,
    /// One block per row of `piece` elements, the kernel told the row length.
    rows: bool,
}

const LAUNCHES: [Launch; 5] = [
    Launch {
        kernel: "warp_scans",
        piece: 32,
        threads: 256,
        rows: false,
    },
    Launch {
        kernel: "block_values_1024",
        piece: 1024,
        threads: 1024,
        rows: false,
    },
    Launch {
        kernel: "block_items_160x5",
        piece: 800,
        threads: 160,
        rows: false,
    },
    Launch {
        kernel: "chunks_96x3",
        piece: 0,
        threads: 96,
        rows: true,
    },
    Launch {
        kernel: "chunks_32x1",
        piece: 0,
        threads: 32,
        rows: true,
    },
];

/// Lengths for the piece kernels: at every boundary of a warp, a block of
/// 800 or 1024, ± 1, many of them ± 1, and a large odd length.
const LENGTHS: [usize; 17] = [
    0,
    1,
    31,
    32,
    33,
    799,
    800,
    801,
    1023,
    1024,
    1025,
    4000,
    8191,
    8192,
    8193,
    100_003,
    1 << 20 | 7,
];

/// (rows, row length) for the chunk kernels: empty and one-element rows,
/// a chunk ± 1 for both chunk sizes, many chunks ± 1, many short rows.
const ROWS: [(usize, usize); 14] = [
    (1, 0),
    (3, 1),
    (1, 31),
    (1, 32),
    (2, 33),
    (1, 287),
    (1, 288),
    (1, 289),
    (3, 288 * 4 - 1),
    (2, 288 * 4 + 1),
    (1, 100_003),
    (1000, 37),
    (64, 5000),
    (5, 1 << 16),
];

fn run_op<Op: Case>(ctx: &Arc<CudaContext>, seed: u64, failures: &mut Vec<String>) -> usize {
    let arch = gpu_scan::scan_runtime::target_arch(ctx).expect("target architecture");
    let ptx = DeviceApi::compile(&program::<Op>(), arch, &[])
        .unwrap_or_else(|e| panic!("{}: NVRTC failed: {e}", Op::NAME));
    let module = ctx.load_module(ptx).expect("load the test module");
    let stream = ctx.default_stream();
    let mut cases = 0;
    for (launch, reverse) in LAUNCHES.iter().flat_map(|l| [(l, false), (l, true)]) {
        let symbol = if reverse {
            format!("{}_reverse", launch.kernel)
        } else {
            launch.kernel.to_string()
        };
        let function: CudaFunction = module.load_function(&symbol).expect("kernel");
        let shapes: Vec<(usize, usize)> = if launch.rows {
            ROWS.to_vec()
        } else {
            LENGTHS.iter().map(|&n| (1, n)).collect()
        };
        for (case, &(rows, row_length)) in shapes.iter().enumerate() {
            let n = rows * row_length;
            let case_seed = seed ^ (case as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
            let input = random_input::<Op>(n, case_seed);
            let (piece, blocks) = if launch.rows {
                (row_length, rows)
            } else {
                (launch.piece, n.div_ceil(launch.piece))
            };
            let PieceScans {
                inclusive: want_incl,
                exclusive: want_excl,
                totals: mut want_totals,
            } = piece_scans::<Op>(&input, piece, reverse);
            // Empty rows have a total too: the identity.
            want_totals.resize(blocks, Op::IDENTITY);
            // Exclusive totals go after the inclusive ones (but for the warp
            // kernel, which has one set).
            let total_slots = if launch.kernel == "warp_scans" {
                blocks
            } else {
                2 * blocks
            };

            let d_in = stream.clone_htod(&input).expect("upload");
            let mut d_incl = stream.alloc_zeros::<Op::Element>(n + GUARD).expect("alloc");
            let mut d_excl = stream.alloc_zeros::<Op::Element>(n + GUARD).expect("alloc");
            let mut d_totals = stream
                .alloc_zeros::<Op::Element>(total_slots + GUARD)
                .expect("alloc");
            poison(&stream, &mut d_incl);
            poison(&stream, &mut d_excl);
            poison(&stream, &mut d_totals);
            if blocks > 0 {
                let config = LaunchConfig {
                    grid_dim: (blocks as u32, 1, 1),
                    block_dim: (launch.threads, 1, 1),
                    shared_mem_bytes: 0,
                };
                let length = if launch.rows { row_length } else { n } as u64;
                let mut builder = stream.launch_builder(&function);
                builder
                    .arg(&d_in)
                    .arg(&mut d_incl)
                    .arg(&mut d_excl)
                    .arg(&mut d_totals)
                    .arg(&length);
                // SAFETY: every test kernel takes (const T* in, T* inclusive,
                // T* exclusive, T* totals, u64 length): `in` holds n elements,
                // the outputs n (+ guard), `totals` 2 per block (+ guard); the
                // block size is the one the kernel's BlockScan is built for.
                unsafe { builder.launch(config) }.expect("launch");
            }
            let got_incl = stream.clone_dtoh(&d_incl).expect("download");
            let got_excl = stream.clone_dtoh(&d_excl).expect("download");
            let got_totals = stream.clone_dtoh(&d_totals).expect("download");
            let got_input = stream.clone_dtoh(&d_in).expect("download");
            let what = format!(
                "{} {} rows={rows} length={row_length}",
                Op::NAME,
                launch.kernel
            );
            compare::<Op>(
                &format!("{what} inclusive"),
                n,
                &got_incl,
                &want_incl,
                failures,
            );
            compare::<Op>(
                &format!("{what} exclusive"),
                n,
                &got_excl,
                &want_excl,
                failures,
            );
            let mut totals = want_totals.clone();
            if total_slots > blocks {
                totals.extend_from_slice(&want_totals);
            }
            compare::<Op>(
                &format!("{what} totals"),
                total_slots,
                &got_totals,
                &totals,
                failures,
            );
            for (name, buf, end) in [
                ("inclusive", &got_incl, n),
                ("exclusive", &got_excl, n),
                ("totals", &got_totals, total_slots),
            ] {
                if !poisoned(&buf[end..]) {
                    failures.push(format!("{what}: wrote past the end of {name}"));
                }
            }
            if got_input != input {
                failures.push(format!("{what}: the input changed"));
            }
            cases += 1;
        }
    }
    cases
}

#[test]
fn gpu_device_api_matches_the_cpu() {
    let Some(ctx) = open_gpu("gpu_device_api_matches_the_cpu") else {
        return;
    };
    let seed = common::gpu::suite_seed();
    println!("gpu_device_api_matches_the_cpu: seed {seed} (GPU_SUITE_SEED replays it)");
    let mut failures = Vec::new();
    let mut cases = 0;
    cases += run_op::<AffineU32>(&ctx, seed, &mut failures);
    cases += run_op::<Latest>(&ctx, seed ^ 1, &mut failures);
    cases += run_op::<Mat2>(&ctx, seed ^ 2, &mut failures);
    cases += run_op::<SumU8>(&ctx, seed ^ 3, &mut failures);
    println!(
        "gpu_device_api_matches_the_cpu: {cases} cases, {} failures",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
