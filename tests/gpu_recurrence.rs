//! Linear recurrences on the GPU (`GpuRecurrence`) against the CPU's
//! `linear_recurrence` run in `f64`, on fresh random inputs
//! (`GPU_RECURRENCE_SEED` replays): scalar, diagonal and matrix
//! transitions, both layouts, both directions, with and without an initial
//! state and a readout, in `f32` and `f64`, over shapes that take the
//! single pass and the chunked plan (chunk boundaries ± 1, one step, no
//! steps, states of 1, 3, 16, 17, 33 and 256 values, matrices up to the
//! largest the kernels take). Outputs are poisoned before each run, with a
//! guard band after them that must stay poisoned. Streams come from
//! `ctx.new_stream()` under cudarc's default event tracking, two alive at
//! once. Bad lengths and states get typed errors and leave the output
//! untouched; a reserved chunked batch is captured in a graph and replayed
//! on new data.
//!
//! Tolerance. Each state h[t] is a sum over k ≤ t of b[k] (or h[-1]) times
//! the product of the transitions after it, however the GPU groups them
//! (step by step, or a chunk's composed map applied to its carry); each
//! term passes through at most (S + 2)·(t + 1) + 4 roundings of relative
//! size u (S = 1 for scalar and diagonal lanes: a product and a sum a step;
//! a matrix row adds S products a step; composing a chunk and applying its
//! carry add a few), so |gpu − exact| ≤ γ · m[t] with m the same recurrence
//! run on |a|, |b| and |h[-1]| (entrywise for matrices), γ = that count × u.
//! A readout adds S roundings of its own: the bound is γ' · Σ|c|·m. The
//! oracle is f64, whose own error is below the same bound in f64, so the
//! test allows twice the f32 or f64 bound.
#![cfg(feature = "gpu")]

mod common;
use common::gpu::{captured_graph, gpu_alone, gpu_shared, open_gpu, poison, poisoned, Rng64};
use gpu_scan::recurrence::{
    linear_recurrence, Recurrence, RecurrenceLengthError, RecurrenceShape, TimeLayout, Transition,
    TransitionKind,
};
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream};
use gpu_scan::scan_runtime::{DeviceReal, DeviceRecurrence, DeviceTransition, GpuRecurrence};
use gpu_scan::ScanError;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// Values after each output that must stay poisoned.
const GUARD: usize = 41;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("GPU_RECURRENCE_SEED");
    println!("gpu_recurrence: seed {seed} (GPU_RECURRENCE_SEED={seed} replays)");
    seed
}

/// One batch's host arrays (in `T`) and its options.
struct Batch<T> {
    shape: RecurrenceShape,
    kind: TransitionKind,
    a: Vec<T>,
    b: Vec<T>,
    initial: Option<Vec<T>>,
    readout: Option<Vec<T>>,
    reverse: bool,
}

fn transition<'a, V>(kind: TransitionKind, a: &'a [V]) -> Transition<'a, V> {
    match kind {
        TransitionKind::Scalar => Transition::Scalar(a),
        TransitionKind::Diagonal => Transition::Diagonal(a),
        TransitionKind::Matrix => Transition::Matrix(a),
    }
}

impl<T: DeviceReal> Batch<T> {
    /// Random values: transitions in [-1, 1] (scaled by 1/S for matrices,
    /// so that the recurrences stay bounded), inputs in [-1, 1].
    fn random(
        rng: &mut Rng64,
        shape: RecurrenceShape,
        kind: TransitionKind,
        initial: bool,
        readout: bool,
        reverse: bool,
    ) -> Self {
        let entries = shape.sequences * shape.steps;
        let s = shape.state;
        let scale = if kind == TransitionKind::Matrix {
            1.0 / s.max(1) as f64
        } else {
            1.0
        };
        let mut draw = |n: usize, scale: f64| -> Vec<T> {
            (0..n)
                .map(|_| T::from_f64(rng.random_range(-1.0..=1.0) * scale))
                .collect()
        };
        Batch {
            shape,
            kind,
            a: draw(entries * kind.width(s), scale),
            b: draw(entries * s, 1.0),
            initial: initial.then(|| draw(shape.sequences * s, 1.0)),
            readout: readout.then(|| draw(entries * s, 1.0)),
            reverse,
        }
    }

    /// The CPU's result in f64 on these values, and (`magnitude`) on their
    /// absolute values.
    fn oracle(&self, magnitude: bool) -> Vec<f64> {
        let f = |v: &[T]| -> Vec<f64> {
            v.iter()
                .map(|x| {
                    if magnitude {
                        x.to_f64().abs()
                    } else {
                        x.to_f64()
                    }
                })
                .collect()
        };
        let (a, b) = (f(&self.a), f(&self.b));
        let initial = self.initial.as_deref().map(f);
        let readout = self.readout.as_deref().map(f);
        let mut r = Recurrence::new(self.shape, transition(self.kind, &a), &b);
        if let Some(h0) = &initial {
            r = r.initial(h0);
        }
        if let Some(c) = &readout {
            r = r.readout(c);
        }
        if self.reverse {
            r = r.reverse();
        }
        let mut out = vec![0.0; r.output_len()];
        linear_recurrence(&r, &mut out).unwrap();
        out
    }

    /// The bound of the module's comment, a factor of each magnitude.
    fn tolerance(&self) -> f64 {
        let s = self.shape.state as f64;
        let per_step = if self.kind == TransitionKind::Matrix {
            s + 2.0
        } else {
            3.0
        };
        let roundings = per_step * (self.shape.steps as f64 + 1.0) + 4.0 + s;
        2.0 * roundings * T::UNIT_ROUNDOFF
    }
}

/// Runs `batch` on `stream` and compares it with the oracle; every failure
/// is pushed to `failures` with `label`.
fn check<T: DeviceReal>(
    recurrences: &mut GpuRecurrence,
    stream: &Arc<CudaStream>,
    batch: &Batch<T>,
    label: &str,
    failures: &mut Vec<String>,
) {
    let a = stream.clone_htod(&batch.a).unwrap();
    let b = stream.clone_htod(&batch.b).unwrap();
    let initial = batch
        .initial
        .as_ref()
        .map(|v| stream.clone_htod(v).unwrap());
    let readout = batch
        .readout
        .as_ref()
        .map(|v| stream.clone_htod(v).unwrap());
    let a_view = match batch.kind {
        TransitionKind::Scalar => DeviceTransition::Scalar(&a),
        TransitionKind::Diagonal => DeviceTransition::Diagonal(&a),
        TransitionKind::Matrix => DeviceTransition::Matrix(&a),
    };
    let mut r = DeviceRecurrence::new(batch.shape, a_view, &b);
    if let Some(h0) = &initial {
        r = r.initial(h0);
    }
    if let Some(c) = &readout {
        r = r.readout(c);
    }
    if batch.reverse {
        r = r.reverse();
    }
    let len = r.output_len();
    let mut out: CudaSlice<T> = stream.alloc_zeros(len + GUARD).unwrap();
    poison(stream, &mut out);
    if let Err(e) = recurrences.run(stream, &r, &mut out.slice_mut(0..len)) {
        failures.push(format!("{label}: {e}"));
        return;
    }
    let got = stream.clone_dtoh(&out).unwrap();
    if !poisoned(&got[len..]) {
        failures.push(format!(
            "{label}: the guard band after the output was written"
        ));
    }
    let want = batch.oracle(false);
    let magnitude = batch.oracle(true);
    let tol = batch.tolerance();
    let mut bad = 0;
    for (i, g) in got[..len].iter().enumerate() {
        let g = g.to_f64();
        let bound = tol * magnitude[i] + 1e-30;
        // NaN fails too.
        let within = (g - want[i]).abs() <= bound;
        if !within {
            if bad < 3 {
                failures.push(format!(
                    "{label}: output {i} is {g}, the CPU's {} (bound {bound:e})",
                    want[i]
                ));
            }
            bad += 1;
        }
    }
    if bad > 3 {
        failures.push(format!("{label}: {bad} outputs outside the bound"));
    }
}

/// Shapes that take the single pass and the chunked plan, at the chunks'
/// boundaries, for `kind` with a state of `state` values.
fn shapes(recurrences: &GpuRecurrence, kind: TransitionKind, state: usize) -> Vec<(usize, usize)> {
    // The warp-a-unit mapping (one-value states, contiguous steps) takes
    // 256 steps a tile: around one and a few tiles, and many sequences.
    let mut v = vec![
        (1, 0),
        (3, 1),
        (2, 31),
        (1, 127),
        (5, 129),
        (1 << 12, 40),
        (2, 255),
        (300, 257),
        (3, 1023),
    ];
    // One long sequence: chunked (past 256 chunks, the carry takes a
    // block a lane).
    v.push((1, 1 << 19));
    for steps in [1000, 100_003] {
        v.push((1, steps));
        let plan = recurrences.plan(
            &RecurrenceShape {
                sequences: 1,
                steps,
                state,
                layout: TimeLayout::SequenceMajor,
            },
            kind,
        );
        if plan.chunks > 1 {
            let c = plan.chunk_steps;
            v.extend([
                (1, c * (plan.chunks - 1) + 1),
                (2, c * plan.chunks - 1),
                (1, 2 * c + 1),
            ]);
        }
    }
    v
}

fn check_all<T: DeviceReal>(failures: &mut Vec<String>, cases: &mut usize) {
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_recurrence") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    let stream = ctx.new_stream().unwrap();
    let other = ctx.new_stream().unwrap();
    let mut recurrences = GpuRecurrence::new(&ctx).unwrap();
    let most_matrix = gpu_scan::kernels_gen::recurrence::most_matrix_state(T::REAL);
    let kinds: Vec<(TransitionKind, Vec<usize>)> = vec![
        (TransitionKind::Scalar, vec![1, 3, 16]),
        (TransitionKind::Diagonal, vec![1, 16, 17, 33, 256]),
        (TransitionKind::Matrix, vec![1, 2, 4, most_matrix]),
    ];
    for (kind, states) in kinds {
        for state in states {
            for (sequences, steps) in shapes(&recurrences, kind, state) {
                // Keep each batch to a few million values.
                if sequences * steps * kind.width(state).max(state) > 1 << 23 {
                    continue;
                }
                for layout in [TimeLayout::SequenceMajor, TimeLayout::TimeMajor] {
                    let shape = RecurrenceShape {
                        sequences,
                        steps,
                        state,
                        layout,
                    };
                    let (initial, readout, reverse) = (rng.random(), rng.random(), rng.random());
                    let batch =
                        Batch::<T>::random(&mut rng, shape, kind, initial, readout, reverse);
                    let plan = recurrences.plan(&shape, kind);
                    let label = format!(
                        "{:?} {kind:?} state {state}, {sequences} × {steps} {layout:?}, \
                         initial {initial}, readout {readout}, reverse {reverse}, {} chunks",
                        T::REAL,
                        plan.chunks
                    );
                    let s = if *cases % 2 == 0 { &stream } else { &other };
                    check(&mut recurrences, s, &batch, &label, failures);
                    *cases += 1;
                }
            }
        }
    }
}

#[test]
fn gpu_recurrences_match_the_cpu() {
    let (mut failures, mut cases) = (Vec::new(), 0);
    check_all::<f32>(&mut failures, &mut cases);
    check_all::<f64>(&mut failures, &mut cases);
    println!("gpu_recurrence: {cases} batches");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn bad_recurrences_are_typed_errors_and_write_nothing() {
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_recurrence") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut recurrences = GpuRecurrence::new(&ctx).unwrap();
    let shape = RecurrenceShape {
        sequences: 2,
        steps: 5,
        state: 3,
        layout: TimeLayout::TimeMajor,
    };
    let a = stream.alloc_zeros::<f32>(30).unwrap();
    let short = stream.alloc_zeros::<f32>(29).unwrap();
    let b = stream.alloc_zeros::<f32>(30).unwrap();
    let mut out = stream.alloc_zeros::<f32>(30).unwrap();
    poison(&stream, &mut out);
    let cases: Vec<(DeviceRecurrence<'_, f32>, usize, &str)> = vec![
        (
            DeviceRecurrence::new(shape, DeviceTransition::Diagonal(&short), &b),
            30,
            "a",
        ),
        (
            DeviceRecurrence::new(shape, DeviceTransition::Diagonal(&a), &short),
            30,
            "b",
        ),
        (
            DeviceRecurrence::new(shape, DeviceTransition::Diagonal(&a), &b).initial(&short),
            30,
            "initial",
        ),
        (
            DeviceRecurrence::new(shape, DeviceTransition::Diagonal(&a), &b).readout(&short),
            10,
            "readout",
        ),
        (
            DeviceRecurrence::new(shape, DeviceTransition::Diagonal(&a), &b),
            29,
            "output",
        ),
    ];
    for (r, len, array) in cases {
        match recurrences.run(&stream, &r, &mut out.slice_mut(0..len)) {
            Err(ScanError::Recurrence(RecurrenceLengthError { array: a, .. })) => {
                assert_eq!(a, array)
            }
            other => panic!("{array}: expected a length error, got {other:?}"),
        }
    }
    // A matrix state larger than the kernels hold.
    let big = RecurrenceShape {
        sequences: 1,
        steps: 1,
        state: 9,
        layout: TimeLayout::TimeMajor,
    };
    let m = stream.alloc_zeros::<f32>(81).unwrap();
    let b9 = stream.alloc_zeros::<f32>(9).unwrap();
    let r = DeviceRecurrence::new(big, DeviceTransition::Matrix(&m), &b9);
    match recurrences.run(&stream, &r, &mut out.slice_mut(0..9)) {
        Err(ScanError::RecurrenceState {
            state: 9, most: 8, ..
        }) => {}
        other => panic!("expected a state error, got {other:?}"),
    }
    assert!(
        poisoned(&stream.clone_dtoh(&out).unwrap()),
        "a refused run wrote the output"
    );
}

#[test]
fn a_reserved_chunked_recurrence_is_captured_in_a_graph_and_replayed() {
    use gpu_scan::scan_runtime::cudarc::driver::sys::CUstreamCaptureMode;
    let _gpu = gpu_alone();
    let Some(ctx) = open_gpu("gpu_recurrence") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    // Two streams from `ctx.new_stream()`: cudarc's multi-stream mode.
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let mut recurrences = GpuRecurrence::new(&ctx).unwrap();
    let shape = RecurrenceShape {
        sequences: 2,
        steps: 50_001,
        state: 4,
        layout: TimeLayout::SequenceMajor,
    };
    assert!(
        recurrences.plan(&shape, TransitionKind::Diagonal).chunks > 1,
        "a chunked plan"
    );
    recurrences
        .reserve::<f32>(&stream, &shape, TransitionKind::Diagonal)
        .unwrap();
    let first = Batch::<f32>::random(&mut rng, shape, TransitionKind::Diagonal, true, true, false);
    let mut a = stream.clone_htod(&first.a).unwrap();
    let mut b = stream.clone_htod(&first.b).unwrap();
    let mut h0 = stream.clone_htod(first.initial.as_ref().unwrap()).unwrap();
    let mut c = stream.clone_htod(first.readout.as_ref().unwrap()).unwrap();
    let mut out = stream
        .alloc_zeros::<f32>(shape.sequences * shape.steps)
        .unwrap();
    let graph = captured_graph(
        &stream,
        CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        "the recurrence",
        || {
            let r = DeviceRecurrence::new(shape, DeviceTransition::Diagonal(&a), &b)
                .initial(&h0)
                .readout(&c);
            recurrences.run(&stream, &r, &mut out)
        },
    );
    for replay in 0..4 {
        let batch =
            Batch::<f32>::random(&mut rng, shape, TransitionKind::Diagonal, true, true, false);
        stream.memcpy_htod(&batch.a, &mut a).unwrap();
        stream.memcpy_htod(&batch.b, &mut b).unwrap();
        stream
            .memcpy_htod(batch.initial.as_ref().unwrap(), &mut h0)
            .unwrap();
        stream
            .memcpy_htod(batch.readout.as_ref().unwrap(), &mut c)
            .unwrap();
        poison(&stream, &mut out);
        graph.launch().unwrap();
        let got = stream.clone_dtoh(&out).unwrap();
        let (want, magnitude, tol) = (batch.oracle(false), batch.oracle(true), batch.tolerance());
        for (i, g) in got.iter().enumerate() {
            assert!(
                ((*g as f64) - want[i]).abs() <= tol * magnitude[i] + 1e-30,
                "replay {replay}: output {i} is {g}, the CPU's {}",
                want[i]
            );
        }
    }
}
