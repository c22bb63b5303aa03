//! Shared by the GPU test binaries: how to generate and compare each test
//! operator's elements (tolerances are justified in `tests/gpu_suite.rs`),
//! poisoning, and result rows.

#![allow(dead_code)] // each test binary uses a different part

use super::ops::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DevicePtrMut, DeviceRepr, ValidAsZeroBits,
};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::sync::Arc;

pub type Rng64 = rand::rngs::StdRng;

/// Device 0 for a GPU test, or `None` (with one line saying why) where no
/// GPU is usable. With `GPU_REQUIRED=1` (the device runs set it) a missing
/// GPU fails the test instead, so a GPU-less run never reads as green.
pub fn open_gpu(test: &str) -> Option<Arc<gpu_scan::scan_runtime::cudarc::driver::CudaContext>> {
    match gpu_scan::scan_runtime::open_device(0) {
        Ok(ctx) => {
            // Which NVRTC compiles (GPU_SCAN_NVRTC may name CUDA 12's).
            let nvrtc = gpu_scan::scan_runtime::nvrtc().expect("open_device found one");
            println!("{test}: NVRTC {} ({})", nvrtc.version(), nvrtc.library());
            Some(ctx)
        }
        Err(e) => {
            assert!(
                std::env::var_os("GPU_REQUIRED").is_none_or(|v| v != "1"),
                "{test}: GPU_REQUIRED=1 but no GPU is usable: {e}"
            );
            println!("{test}: skipped, no usable GPU ({e})");
            None
        }
    }
}

/// A stream captured in `CU_STREAM_CAPTURE_MODE_GLOBAL` makes another
/// thread's unsafe CUDA call (an allocation, a module load, a synchronous
/// copy) fail, and that call invalidates the capture: CUDA's rule, which
/// every program that captures so must keep. A test binary's tests run on
/// threads of one process, so those that capture so hold [`gpu_alone`]
/// and the others [`gpu_shared`]: they never overlap.
static GPU_TESTS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A test's share of the GPU beside the others ([`GPU_TESTS`]).
pub fn gpu_shared() -> std::sync::RwLockReadGuard<'static, ()> {
    GPU_TESTS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The GPU alone, for a test that captures a stream in global mode
/// ([`GPU_TESTS`]).
pub fn gpu_alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    GPU_TESTS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How to generate and compare one operator's elements.
pub trait Case:
    ScanOp<Element: DeviceRepr + ValidAsZeroBits + PartialEq + std::fmt::Debug>
{
    fn random(rng: &mut Rng64) -> Self::Element;
    /// Equal within the operator's tolerance (exact by default).
    fn close(gpu: &Self::Element, cpu: &Self::Element) -> bool {
        gpu == cpu
    }
}

pub fn rel_close(g: f64, c: f64, rel: f64, abs: f64) -> bool {
    (g - c).abs() <= rel * c.abs().max(g.abs()) + abs || (g.is_nan() && c.is_nan())
}

impl Case for SumU32 {
    fn random(rng: &mut Rng64) -> u32 {
        rng.random()
    }
}
impl Case for MaxF32 {
    fn random(rng: &mut Rng64) -> f32 {
        rng.random_range(-1e6..1e6)
    }
    fn close(g: &f32, c: &f32) -> bool {
        g.to_bits() == c.to_bits() // max is exactly associative
    }
}
impl Case for MinI64 {
    fn random(rng: &mut Rng64) -> i64 {
        rng.random()
    }
}
impl Case for Affine {
    fn random(rng: &mut Rng64) -> Affine {
        Affine {
            a: rng.random_range(0.5..0.95),
            b: rng.random_range(0.0..1.0),
        }
    }
    fn close(g: &Affine, c: &Affine) -> bool {
        rel_close(g.a as f64, c.a as f64, 1e-4, 1e-30)
            && rel_close(g.b as f64, c.b as f64, 1e-4, 1e-30)
    }
}
impl Case for Stats {
    fn random(rng: &mut Rng64) -> Stats {
        Stats {
            count: rng.random_range(0..3),
            sum: rng.random_range(0.0..1.0),
            max: rng.random_range(-1e3..1e3),
        }
    }
    fn close(g: &Stats, c: &Stats) -> bool {
        g.count == c.count
            && g.max.to_bits() == c.max.to_bits()
            && rel_close(g.sum, c.sum, 1e-7, 0.0)
    }
}
impl Case for Mat2 {
    fn random(rng: &mut Rng64) -> Mat2 {
        const D4: [[f32; 4]; 8] = [
            [1.0, 0.0, 0.0, 1.0],
            [0.0, -1.0, 1.0, 0.0],
            [-1.0, 0.0, 0.0, -1.0],
            [0.0, 1.0, -1.0, 0.0],
            [1.0, 0.0, 0.0, -1.0],
            [-1.0, 0.0, 0.0, 1.0],
            [0.0, 1.0, 1.0, 0.0],
            [0.0, -1.0, -1.0, 0.0],
        ];
        Mat2 {
            m: D4[rng.random_range(0..8)],
        }
    }
    fn close(g: &Mat2, c: &Mat2) -> bool {
        // -0.0 and 0.0 are the same matrix entry.
        g.m.iter().zip(&c.m).all(|(x, y)| x == y)
    }
}
impl Case for AffineU32 {
    fn random(rng: &mut Rng64) -> AffineU32 {
        AffineU32 {
            a: rng.random(),
            b: rng.random(),
        }
    }
}
impl Case for Latest {
    fn random(rng: &mut Rng64) -> Latest {
        random_latest(rng, 0.01)
    }
}
impl Case for SumU8 {
    fn random(rng: &mut Rng64) -> u8 {
        rng.random()
    }
}
impl Case for JoinSpans {
    fn random(rng: &mut Rng64) -> Joined {
        random_joined(rng, 0.3)
    }
}
impl Case for SumU32Small {
    fn random(rng: &mut Rng64) -> u32 {
        rng.random()
    }
}
impl Case for Pairs {
    fn random(rng: &mut Rng64) -> Pairs {
        // Spans start at 1 or later, so that no combination of elements
        // other than the identity looks like the identity.
        Pairs {
            map: left::Pair {
                mul: rng.random(),
                add: rng.random(),
            },
            span: right::Pair {
                first: rng.random_range(1..=u16::MAX),
                last: rng.random(),
            },
        }
    }
}
impl Case for SaturatingLanes {
    fn random(rng: &mut Rng64) -> u32 {
        rng.random::<u32>() & 0x00ff_00ff
    }
}

pub fn random_input<Op: Case>(n: usize, seed: u64) -> Vec<Op::Element> {
    const CHUNK: usize = 1 << 16;
    let mut v = vec![Op::IDENTITY; n];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
        let mut rng = Rng64::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for x in chunk {
            *x = Op::random(&mut rng);
        }
    });
    v
}

/// Fills a device buffer with 0xA5 bytes so that unwritten outputs show.
pub fn poison<T>(stream: &Arc<CudaStream>, buf: &mut CudaSlice<T>) {
    let bytes = buf.len() * std::mem::size_of::<T>();
    let (ptr, _sync) = buf.device_ptr_mut(stream);
    // SAFETY: `ptr` addresses `bytes` bytes of this allocation, ordered on `stream`.
    unsafe {
        gpu_scan::scan_runtime::cudarc::driver::result::memset_d8_async(
            ptr,
            POISON,
            bytes,
            stream.cu_stream(),
        )
    }
    .expect("memset");
}

/// Whether every byte of a device buffer is still [`poison`].
#[allow(dead_code)]
pub fn still_poisoned<T: gpu_scan::scan_runtime::cudarc::driver::DeviceRepr>(
    stream: &Arc<CudaStream>,
    buf: &CudaSlice<T>,
) -> bool {
    poisoned(&stream.clone_dtoh(buf).expect("download"))
}

/// Whether every byte of `host` (downloaded elements) is still the poison.
pub fn poisoned<T: gpu_scan::scan_runtime::cudarc::driver::DeviceRepr>(host: &[T]) -> bool {
    // SAFETY: the elements' bytes, as the device held them (plain data).
    let bytes = unsafe {
        std::slice::from_raw_parts(host.as_ptr().cast::<u8>(), std::mem::size_of_val(host))
    };
    bytes.iter().all(|&b| b == 0xA5)
}

/// A matrix scan (`scan(row_length, input, output)`) given a row length of
/// 0, or one that does not divide the length, must refuse it with
/// `ScanError::RowLength` and write nothing; what went wrong goes to
/// `failures`.
pub fn check_row_length_refusals<Op: Case>(
    stream: &Arc<CudaStream>,
    mut scan: impl FnMut(
        usize,
        &CudaSlice<Op::Element>,
        &mut CudaSlice<Op::Element>,
    ) -> Result<(), ScanError>,
    failures: &mut Vec<String>,
) {
    let n = 3 * Op::tile_items();
    let data = stream.alloc_zeros::<Op::Element>(n).unwrap();
    for cols in [0, 7 * Op::tile_items() / 3 + 1, n + 1] {
        let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        poison(stream, &mut out);
        let got = scan(cols, &data, &mut out);
        let want = gpu_scan::segmented::RowLengthMismatch {
            elements: n,
            row_length: cols,
        };
        let refused = matches!(got, Err(ScanError::RowLength(e)) if e == want);
        if !refused || !still_poisoned(stream, &out) {
            failures.push(format!(
                "{cols} columns of {n} elements: {got:?}, output untouched: {}",
                still_poisoned(stream, &out)
            ));
        }
    }
}

pub struct Row {
    pub op: &'static str,
    pub kind: &'static str,
    pub lengths: usize,
    pub elements: usize,
    pub failures: Vec<String>,
    pub seconds: f64,
}

pub fn compare<Op: Case>(
    what: &str,
    n: usize,
    gpu: &[Op::Element],
    cpu: &[Op::Element],
    failures: &mut Vec<String>,
) {
    let bad: Vec<usize> = (0..n)
        .into_par_iter()
        .filter(|&i| !Op::close(&gpu[i], &cpu[i]))
        .collect();
    if let Some(&i) = bad.first() {
        failures.push(format!(
            "{what} n={n}: {} mismatches, first at {i}: gpu {:?} cpu {:?}",
            bad.len(),
            gpu[i],
            cpu[i]
        ));
    }
}

pub fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The run's seed: GPU_SUITE_SEED, or the clock.
pub fn suite_seed() -> u64 {
    super::seed::from_env_or_clock("GPU_SUITE_SEED")
}

/// Prints the result table and the failures; returns how many rows failed.
pub fn print_rows(rows: &[Row]) -> usize {
    println!(
        "\n{:<16} {:<40} {:>7} {:>13} {:>9} {:>6}",
        "operator", "kind", "lengths", "elements", "seconds", "result"
    );
    let mut failed = 0;
    for r in rows {
        let ok = r.failures.is_empty();
        failed += usize::from(!ok);
        println!(
            "{:<16} {:<40} {:>7} {:>13} {:>9.2} {:>6}",
            r.op,
            r.kind,
            r.lengths,
            r.elements,
            r.seconds,
            if ok { "pass" } else { "FAIL" }
        );
    }
    for r in rows.iter().filter(|r| !r.failures.is_empty()) {
        for f in &r.failures {
            println!("FAIL {} {}: {f}", r.op, r.kind);
        }
    }
    failed
}

/// The directions the GPU suites run: both, unless `GPU_SUITE_DIRECTIONS`
/// says `forward` or `reverse` (to split a run in two; the suites' summaries
/// name the directions run).
/// Whether operator `name` runs: all of them, unless `GPU_SUITE_OPS=a,b`
/// names the ones to run (for a short device call). A suite that skips
/// operators says so in its summary line.
pub fn suite_runs_op(name: &str) -> bool {
    std::env::var("GPU_SUITE_OPS").map_or(true, |only| only.split(',').any(|o| o.trim() == name))
}

/// What a summary line says of `GPU_SUITE_OPS`: nothing when every
/// operator ran.
pub fn suite_ops_note() -> String {
    std::env::var("GPU_SUITE_OPS")
        .map_or(String::new(), |only| format!(", only GPU_SUITE_OPS={only}"))
}

pub fn suite_directions() -> Vec<gpu_scan::Direction> {
    use gpu_scan::Direction;
    match std::env::var("GPU_SUITE_DIRECTIONS").as_deref() {
        Ok("forward") => vec![Direction::Forward],
        Ok("reverse") => vec![Direction::Reverse],
        _ => vec![Direction::Forward, Direction::Reverse],
    }
}

/// `enqueue`'s work captured from `stream` in `mode` into a graph; the
/// capture's failure, or `enqueue`'s, fails the test (naming `what`).
pub fn captured_graph(
    stream: &Arc<CudaStream>,
    mode: gpu_scan::scan_runtime::cudarc::driver::sys::CUstreamCaptureMode,
    what: &str,
    enqueue: impl FnOnce() -> Result<(), ScanError>,
) -> gpu_scan::scan_runtime::cudarc::driver::CudaGraph {
    stream.begin_capture(mode).unwrap();
    let captured = enqueue();
    let graph = stream
        .end_capture(gpu_scan::scan_runtime::cudarc::driver::sys::CUgraphInstantiate_flags(0));
    captured.unwrap_or_else(|e| panic!("{what} ({mode:?}) is captured: {e}"));
    graph.unwrap().expect("a graph")
}

// Buffers of built elements (`DynOperator`, `DynStage`, `DynSortKey`):
// bytes, poisoned, with a guard band after them.

/// Guard bytes after every output of bytes ([`poisoned_bytes`]), which
/// must stay [`POISON`].
pub const BYTE_GUARD: usize = 64;

/// What [`poison`] and [`poisoned_bytes`] fill buffers with.
pub const POISON: u8 = 0xA5;

/// The bytes of elements (plain data; a padded struct's padding bytes are
/// copied, never interpreted: results are compared through [`from_bytes`]).
pub fn bytes_of<T: Copy>(xs: &[T]) -> Vec<u8> {
    // SAFETY: the elements' bytes, read as bytes.
    unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<u8>(), std::mem::size_of_val(xs)) }
        .to_vec()
}

/// Elements from their bytes.
pub fn from_bytes<T: Copy>(bytes: &[u8]) -> Vec<T> {
    let size = std::mem::size_of::<T>();
    assert_eq!(bytes.len() % size, 0);
    bytes
        .chunks_exact(size)
        // SAFETY: `size` bytes of a `T` the device wrote or moved whole
        // (plain data).
        .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<T>()) })
        .collect()
}

/// A poisoned device buffer of `bytes` bytes and its guard band.
pub fn poisoned_bytes(stream: &Arc<CudaStream>, bytes: usize) -> CudaSlice<u8> {
    stream
        .clone_htod(&vec![POISON; bytes + BYTE_GUARD])
        .unwrap()
}

/// The buffer's first `bytes` bytes, after checking its guard band.
pub fn read_back(
    stream: &Arc<CudaStream>,
    buf: &CudaSlice<u8>,
    bytes: usize,
    what: &str,
) -> Vec<u8> {
    let host = stream.clone_dtoh(buf).unwrap();
    assert!(
        host[bytes..].iter().all(|&b| b == POISON),
        "{what}: the guard band was written"
    );
    host[..bytes].to_vec()
}

/// The declarations of `T`'s struct (`STRUCT_IR`), if it is one: what a
/// built operator, stage or key over `T` is read with.
pub fn structs_of<T: ScanElement>() -> Vec<&'static str> {
    [T::STRUCT_IR]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect()
}
