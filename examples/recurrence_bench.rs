//! Timings of `GpuRecurrence` (issue 47, item 4) against a device copy of
//! the same bytes, CUDA events around each call, median of 25. Every
//! output is first checked against the CPU's `linear_recurrence` in the
//! same type, within a bound relative to the same recurrence run on the
//! inputs' magnitudes (the tolerance of `tests/gpu_recurrence.rs`).
//!
//! ```text
//! cargo build --release --example recurrence_bench && target/release/examples/recurrence_bench
//! ```
//!
//! `RECURRENCE_BENCH_ONLY=diag,scalar` runs only the cases named.

use gpu_scan::recurrence::{
    linear_recurrence, Recurrence, RecurrenceShape, TimeLayout, Transition, TransitionKind,
};
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream};
use gpu_scan::scan_runtime::{open_device, DeviceRecurrence, DeviceTransition, GpuRecurrence};
use rayon::prelude::*;
use std::sync::Arc;

#[path = "common/timing.rs"]
mod timing;
use timing::time_ms;

#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::bits;

/// `n` values in [lo, hi) from stream `salt` of the generator.
fn values(n: usize, salt: u64, lo: f32, hi: f32) -> Vec<f32> {
    (0..n as u64)
        .into_par_iter()
        .map(|i| lo + (hi - lo) * ((bits(i ^ (salt << 40)) >> 40) as f32 / (1u64 << 24) as f32))
        .collect()
}

fn wanted(name: &str) -> bool {
    std::env::var("RECURRENCE_BENCH_ONLY").map_or(true, |only| only.split(',').any(|c| c == name))
}

struct Case {
    name: &'static str,
    shape: RecurrenceShape,
    kind: TransitionKind,
    readout: bool,
}

fn transition<'a, V>(kind: TransitionKind, a: &'a [V]) -> Transition<'a, V> {
    match kind {
        TransitionKind::Scalar => Transition::Scalar(a),
        TransitionKind::Diagonal => Transition::Diagonal(a),
        TransitionKind::Matrix => Transition::Matrix(a),
    }
}

fn run(stream: &Arc<CudaStream>, recurrences: &mut GpuRecurrence, case: &Case) -> bool {
    let s = case.shape;
    let entries = s.sequences * s.steps;
    // Transitions in (0.5, 1) (scaled by 1/S for matrices), inputs in [-1, 1).
    let scale = if case.kind == TransitionKind::Matrix {
        1.0 / s.state as f32
    } else {
        1.0
    };
    let a = values(entries * case.kind.width(s.state), 1, 0.5 * scale, scale);
    let b = values(entries * s.state, 2, -1.0, 1.0);
    let c = case
        .readout
        .then(|| values(entries * s.state, 3, -1.0, 1.0));
    let (da, db) = (
        stream.clone_htod(&a).unwrap(),
        stream.clone_htod(&b).unwrap(),
    );
    let dc = c.as_ref().map(|c| stream.clone_htod(c).unwrap());
    let device_a = match case.kind {
        TransitionKind::Scalar => DeviceTransition::Scalar(&da),
        TransitionKind::Diagonal => DeviceTransition::Diagonal(&da),
        TransitionKind::Matrix => DeviceTransition::Matrix(&da),
    };
    let mut r = DeviceRecurrence::new(s, device_a, &db);
    if let Some(dc) = &dc {
        r = r.readout(dc);
    }
    let len = r.output_len();
    let mut out: CudaSlice<f32> = stream.alloc_zeros(len).unwrap();
    recurrences.run(stream, &r, &mut out).unwrap();
    let got = stream.clone_dtoh(&out).unwrap();

    // The CPU's result and the magnitudes' (module docs).
    let cpu = |a: &[f32], b: &[f32], c: Option<&[f32]>| {
        let mut r = Recurrence::new(s, transition(case.kind, a), b);
        if let Some(c) = c {
            r = r.readout(c);
        }
        let mut out = vec![0.0f32; len];
        linear_recurrence(&r, &mut out).unwrap();
        out
    };
    let want = cpu(&a, &b, c.as_deref());
    let abs = |v: &[f32]| v.par_iter().map(|x| x.abs()).collect::<Vec<f32>>();
    let magnitude = cpu(&abs(&a), &abs(&b), c.as_deref().map(abs).as_deref());
    let per_step = if case.kind == TransitionKind::Matrix {
        s.state as f64 + 2.0
    } else {
        3.0
    };
    let tol =
        2.0 * (per_step * (s.steps as f64 + 1.0) + 4.0 + s.state as f64) / (1u64 << 24) as f64;
    let bad = (0..len)
        .into_par_iter()
        .filter(|&i| {
            let within = ((got[i] - want[i]).abs() as f64) <= tol * magnitude[i] as f64 + 1e-30;
            !within
        })
        .count();

    let plan = recurrences.plan(&s, case.kind);
    let ms = time_ms(stream, || recurrences.run(stream, &r, &mut out).unwrap()) as f64;
    // A copy of the bytes the recurrence moves: it reads a, b (and c) and
    // writes the output; a copy of half as many bytes reads and writes them.
    let moved = 4 * (a.len() + b.len() + c.as_ref().map_or(0, Vec::len) + len);
    let half = moved / 2 / 4;
    let src: CudaSlice<f32> = stream.alloc_zeros(half).unwrap();
    let mut dst: CudaSlice<f32> = stream.alloc_zeros(half).unwrap();
    let copy_ms = time_ms(stream, || stream.memcpy_dtod(&src, &mut dst).unwrap()) as f64;
    println!(
        "{:<14} {:>6} x {:>7} x {:>3} {:>5} {:>8.4} {:>8.4} {:>6.1}%  {:>6.3} GB  {}",
        case.name,
        s.sequences,
        s.steps,
        s.state,
        plan.chunks,
        ms,
        copy_ms,
        copy_ms / ms * 100.0,
        moved as f64 / 1e9,
        if bad == 0 {
            "ok".to_string()
        } else {
            format!("{bad} OUTSIDE THE BOUND")
        }
    );
    bad == 0
}

fn main() {
    let ctx = open_device(0).expect("a GPU");
    let stream = ctx.new_stream().unwrap();
    let mut recurrences = GpuRecurrence::new(&ctx).unwrap();
    let shape = |sequences, steps, state, layout| RecurrenceShape {
        sequences,
        steps,
        state,
        layout,
    };
    use TimeLayout::*;
    let cases = [
        Case {
            name: "diag-readout",
            shape: shape(1 << 12, 1 << 14, 16, SequenceMajor),
            kind: TransitionKind::Diagonal,
            readout: true,
        },
        Case {
            name: "diag-readout-T",
            shape: shape(1 << 12, 1 << 14, 16, TimeMajor),
            kind: TransitionKind::Diagonal,
            readout: true,
        },
        Case {
            name: "diag-states",
            shape: shape(1 << 12, 1 << 12, 16, SequenceMajor),
            kind: TransitionKind::Diagonal,
            readout: false,
        },
        Case {
            name: "scalar-long",
            shape: shape(1, 1 << 28, 1, SequenceMajor),
            kind: TransitionKind::Scalar,
            readout: false,
        },
        Case {
            name: "scalar-64x",
            shape: shape(64, 1 << 22, 1, TimeMajor),
            kind: TransitionKind::Scalar,
            readout: false,
        },
        Case {
            name: "matrix4",
            shape: shape(1 << 16, 1 << 8, 4, SequenceMajor),
            kind: TransitionKind::Matrix,
            readout: true,
        },
    ];
    println!("case           sequences x steps x state chunks   ms    copy ms   %copy   moved      check");
    let mut ok = true;
    for case in &cases {
        if wanted(case.name.split('-').next().unwrap()) || wanted(case.name) {
            ok &= run(&stream, &mut recurrences, case);
        }
    }
    assert!(ok, "a recurrence differs from the CPU's");
}
