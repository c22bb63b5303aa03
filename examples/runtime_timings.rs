//! Runtime measurements: first use (NVRTC compile or disk-cache read, and
//! module load), then per-call time of inclusive scans at 2^16 and 2^24
//! elements, timed with CUDA events (median of 25 calls after 3 warm-ups),
//! with the ratio to a device-to-device copy of the same bytes measured in
//! the same run.
//!
//! `runtime_timings cold|warm`: run it twice with the same GPU_SCAN_CACHE_DIR
//! (scripts/gpu-check does) to see a second process start on a warm disk
//! cache. `runtime_timings first tile|long|affine|segmented` times one
//! first use alone (a `u32` sum of one tile, or of 2^24 elements, an affine
//! scan of 2^24, a `u32` sum of 2^24 in segments of 1000 by byte flags) and
//! what it compiled: run each in a fresh process on an empty cache, with
//! `GPU_SCAN_QUICK_BUILDS=never` beside the default to see what quick
//! builds save. Prints "no GPU" and exits 0 without one.

use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{
    sys::CUevent_flags, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits,
};
use gpu_scan::scan_runtime::{DeviceHeadFlags, DeviceSegments, ProgramOrigin, ScanPath};
use std::sync::Arc;
use std::time::Instant;

#[path = "common/timing.rs"]
mod timing;
use timing::time_ms;

/// Milliseconds of one call of `f`, bracketed by CUDA events on `stream`.
fn time_once(stream: &Arc<CudaStream>, f: impl FnOnce()) -> f32 {
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let start = stream.context().new_event(timing).unwrap();
    let end = stream.context().new_event(timing).unwrap();
    start.record(stream).unwrap();
    f();
    end.record(stream).unwrap();
    end.synchronize().unwrap();
    start.elapsed_ms(&end).unwrap()
}

#[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
struct Sum;

#[scan_op(identity = Affine { a: 1.0, b: 0.0 }, op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Affine {
    a: f32,
    b: f32,
}

fn measure<Op: ScanOp>(stream: &Arc<CudaStream>, label: &str, make: impl Fn(usize) -> Op::Element)
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    // First use: a scanner and its first scan (2^24 elements, the default
    // path), which compiles or loads the one kernel it needs.
    let n = 1usize << 24;
    let host: Vec<Op::Element> = (0..n).map(&make).collect();
    let input = stream.clone_htod(&host).unwrap();
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    stream.synchronize().unwrap();
    let start = Instant::now();
    let mut scanner = GpuScanner::<Op>::new(stream.context()).unwrap();
    scanner.inclusive(stream, &input, &mut output).unwrap();
    stream.synchronize().unwrap();
    let first_use = start.elapsed();
    let stats = scanner.program_stats();
    let origin = match stats.origin {
        ProgramOrigin::Compiled => "NVRTC compile",
        ProgramOrigin::DiskCache => "disk cache",
        ProgramOrigin::Memory => "memory",
    };
    // With an empty cache the default path's kernel compiles in the
    // background while the first scan runs on an interim one (the single
    // pass over small tiles): time that scan, then wait for the compile.
    let interim = time_once(stream, || {
        scanner.inclusive(stream, &input, &mut output).unwrap()
    });
    scanner.wait_for_background_compiles();
    let ready = start.elapsed();
    scanner.inclusive(stream, &input, &mut output).unwrap();
    stream.synchronize().unwrap();
    let fastest = time_once(stream, || {
        scanner.inclusive(stream, &input, &mut output).unwrap()
    });
    println!(
        "{label}: first use {:.1} ms (scanner, first scan of 2^24 and its sync; {} kernel(s): {origin} {:.1} ms + module load {:.1} ms); \
         background compiles done {:.1} ms after the start; \
         one scan of 2^24 before them {:.4} ms, after {:.4} ms",
        first_use.as_secs_f64() * 1e3,
        stats.kernels_loaded,
        stats.compile.as_secs_f64() * 1e3,
        stats.load.as_secs_f64() * 1e3,
        ready.as_secs_f64() * 1e3,
        interim,
        fastest,
    );
    // Larger sizes and the comparison with CUB: examples/scan_bench.rs.
    for (log2, path) in [
        (16u32, ScanPath::SinglePass),
        (24, ScanPath::SinglePass),
        (16, ScanPath::ReduceThenScan),
        (24, ScanPath::ReduceThenScan),
    ] {
        scanner.set_tuning(scanner.tuning().with_path(path));
        let n = 1usize << log2;
        let host: Vec<Op::Element> = (0..n).map(&make).collect();
        let input = stream.clone_htod(&host).unwrap();
        let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
        let mut copy: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
        let scan = time_ms(stream, || {
            scanner.inclusive(stream, &input, &mut output).unwrap()
        });
        let copy_ms = time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap());
        let bytes = 2.0 * (n * std::mem::size_of::<Op::Element>()) as f64;
        println!(
            "{label}: n = 2^{log2} {path:?}: scan {:.4} ms ({:.0} GB/s), copy {:.4} ms, scan/copy time {:.2}x",
            scan,
            bytes / (scan as f64 * 1e-3) / 1e9,
            copy_ms,
            scan / copy_ms
        );
    }
}

/// One first use of case `case` (see the file's docs): the scanner, its
/// first scan and the sync, and what its kernels cost; then when the
/// background compiles it started were done (the scanner's drop waits for
/// them).
fn first_use(stream: &Arc<CudaStream>, case: &str) {
    let n = if case == "tile" { 1000 } else { 1 << 24 };
    let host: Vec<u32> = (0..n as u32).collect();
    let input = stream.clone_htod(&host).unwrap();
    let mut output = stream.alloc_zeros::<u32>(n).unwrap();
    let flags: Vec<u8> = (0..n).map(|i| (i % 1000 == 0) as u8).collect();
    let flags = stream.clone_htod(&flags).unwrap();
    let maps: Vec<Affine> = (0..n)
        .map(|i| Affine {
            a: 1.0,
            b: i as f32,
        })
        .collect();
    let maps_in = stream.clone_htod(&maps).unwrap();
    let mut maps_out = stream.alloc_zeros::<Affine>(n).unwrap();
    stream.synchronize().unwrap();
    let start = Instant::now();
    let (first_use, stats) = if case == "affine" {
        let mut scanner = GpuScanner::<Affine>::new(stream.context()).unwrap();
        scanner.inclusive(stream, &maps_in, &mut maps_out).unwrap();
        stream.synchronize().unwrap();
        (start.elapsed(), scanner.program_stats())
    } else {
        let mut scanner = GpuScanner::<Sum>::new(stream.context()).unwrap();
        match case {
            "tile" | "long" => scanner.inclusive(stream, &input, &mut output).unwrap(),
            "segmented" => {
                let spec = ScanSpec::inclusive()
                    .segments(DeviceSegments::Flags(DeviceHeadFlags::from(&flags)));
                scanner.scan(stream, spec, &input, &mut output).unwrap()
            }
            other => panic!("unknown case {other}: tile, long, affine or segmented"),
        }
        stream.synchronize().unwrap();
        (start.elapsed(), scanner.program_stats())
    };
    let ready = start.elapsed();
    println!(
        "first use {case}: {:.1} ms ({} kernel(s) {:?}: compile {:.1} ms + module load {:.1} ms; background compiles done at {:.1} ms; GPU_SCAN_QUICK_BUILDS={})",
        first_use.as_secs_f64() * 1e3,
        stats.kernels_loaded,
        stats.origin,
        stats.compile.as_secs_f64() * 1e3,
        stats.load.as_secs_f64() * 1e3,
        ready.as_secs_f64() * 1e3,
        std::env::var("GPU_SCAN_QUICK_BUILDS").unwrap_or_else(|_| "auto".into()),
    );
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "cold".into());
    let ctx = match gpu_scan::scan_runtime::open_device(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("runtime_timings: no GPU ({e})");
            return;
        }
    };
    println!("runtime_timings ({mode} process): {}", ctx.name().unwrap());
    let stream = ctx.default_stream();
    if mode == "first" {
        let case = std::env::args().nth(2).unwrap_or_else(|| "long".into());
        first_use(&stream, &case);
        return;
    }
    measure::<Sum>(&stream, "u32 sum", |i| i as u32);
    measure::<Affine>(&stream, "affine f32", |i| Affine {
        a: 1.0 - (i % 7) as f32 * 1e-3,
        b: (i % 13) as f32,
    });
}
