//! Timing with CUDA events, shared by the benchmark examples.

use gpu_scan::scan_runtime::cudarc::driver::{sys::CUevent_flags, CudaStream};
use std::sync::Arc;

/// The median of `v`.
pub fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds of `f` over 25 calls after 3 warm-ups, each call
/// bracketed by CUDA events on `stream`. The two events are created once and
/// recorded again for every call, as `cub/scan_bench.cu` does: creating an
/// event is host work that would otherwise land inside the timed interval of
/// a call short enough to finish before the end event is recorded.
pub fn time_ms(stream: &Arc<CudaStream>, mut f: impl FnMut()) -> f32 {
    for _ in 0..3 {
        f();
    }
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let ctx = stream.context();
    let start = ctx.new_event(timing).unwrap();
    let end = ctx.new_event(timing).unwrap();
    let samples = (0..25)
        .map(|_| {
            start.record(stream).unwrap();
            f();
            end.record(stream).unwrap();
            end.synchronize().unwrap();
            start.elapsed_ms(&end).unwrap()
        })
        .collect();
    median(samples)
}

/// A scanner for timing: background compiles off
/// ([`Tuning::background_compile`](gpu_scan::Tuning::background_compile)),
/// so that the first call, a warm-up, waits for the kernel a scan prefers
/// and every timed call runs it.
#[allow(dead_code)] // not every benchmark uses it
pub fn bench_scanner<Op: gpu_scan::ScanOp>(
    stream: &Arc<CudaStream>,
) -> gpu_scan::prelude::GpuScanner<Op>
where
    Op::Element: gpu_scan::scan_runtime::cudarc::driver::DeviceRepr
        + gpu_scan::scan_runtime::cudarc::driver::ValidAsZeroBits,
{
    let mut scanner = gpu_scan::prelude::GpuScanner::<Op>::new(stream.context()).unwrap();
    scanner.set_tuning(scanner.tuning().with_background_compile(false));
    scanner
}

/// Where a short call's time goes: the host's microseconds per call (the
/// call alone, timed on the host, the stream synchronised after each), and
/// the stream's microseconds per call with 100 calls enqueued back to back
/// between two CUDA events (the GPU's own time per call where the host
/// keeps ahead of it). Medians of 9 rounds, after 3 warm-up calls.
#[allow(dead_code)] // not every benchmark uses it
pub fn host_and_stream_us(stream: &Arc<CudaStream>, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..3 {
        f();
    }
    stream.synchronize().unwrap();
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let ctx = stream.context();
    let start = ctx.new_event(timing).unwrap();
    let end = ctx.new_event(timing).unwrap();
    let mut host = Vec::new();
    let mut queued = Vec::new();
    for _ in 0..9 {
        let mut t = 0.0;
        for _ in 0..10 {
            let clock = std::time::Instant::now();
            f();
            t += clock.elapsed().as_secs_f64();
            stream.synchronize().unwrap();
        }
        host.push((t * 1e5) as f32);
        start.record(stream).unwrap();
        for _ in 0..100 {
            f();
        }
        end.record(stream).unwrap();
        end.synchronize().unwrap();
        queued.push(start.elapsed_ms(&end).unwrap() * 10.0);
    }
    (median(host) as f64, median(queued) as f64)
}
