//! Timing with CUDA events, shared by the benchmark examples.

use gpu_scan::scan_runtime::cudarc::driver::{sys::CUevent_flags, CudaStream};
use std::sync::Arc;

/// The median of `v`.
pub fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds of `f` over 25 calls after 3 warm-ups, each call
/// bracketed by CUDA events on `stream`.
pub fn time_ms(stream: &Arc<CudaStream>, mut f: impl FnMut()) -> f32 {
    for _ in 0..3 {
        f();
    }
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let samples = (0..25)
        .map(|_| {
            let start = stream.record_event(timing).unwrap();
            f();
            let end = stream.record_event(timing).unwrap();
            end.synchronize().unwrap();
            start.elapsed_ms(&end).unwrap()
        })
        .collect();
    median(samples)
}
