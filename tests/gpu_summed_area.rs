//! Two-dimensional scans on the GPU (`ScanSpec::summed_area`, summed-area
//! tables): inclusive, inclusive from an initial value, exclusive and
//! exclusive from an initial value, forward and in reverse
//! (`GPU_SUITE_DIRECTIONS` runs one), each out of place and in place.
//!
//! Commutative operators (the built-in `Sum<u32>`, `Sum<f32>`, `BitXor<u64>`
//! and `Max<i16>`, and a 12-byte and a 24-byte struct declared
//! `commutative = true`, the first staged through shared memory, the
//! second in the warp-scan forms) take
//! the tiles (`summed_area.cuh`) for inclusive scans and for exclusive ones
//! out of place (in place, rows then columns), which the test checks by the
//! kernels each scanner loaded; the others (non-commutative affine
//! maps and "keep the latest", and a sum that does not say it commutes)
//! scan rows, then columns. Shapes hit the tiles' boundaries: one row and one
//! column, a block's columns ± 1, a chunk's rows ± 1, matrices of 256 tiles
//! across (the most the tiles take) and 257 (rows then columns even for a
//! commutative operator), tall, wide and square ones that divide nothing.
//! Inputs are fresh random values (seed printed; GPU_SUITE_SEED replays);
//! outputs are poisoned with a poisoned guard band after them; every element
//! is compared bit for bit with the CPU backend (`gpu_scan::summed_area`):
//! the `f32` sums add integers in [-8, 8] over at most 2^21 elements, so
//! every partial sum is an integer below 2^24 in magnitude and exact in any
//! order. Inputs must be untouched; a bad row length is refused, typed,
//! with nothing written. Without a GPU it prints one line and passes.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
#[path = "../examples/common/moments.rs"]
mod moments;
use common::gpu::*;
use common::ops::*;
use common::specs::*;
use gpu_scan::ops::{BitXor, Max, Sum};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::CudaStream;
use moments::Moments;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;

/// Poisoned elements after every output.
const GUARD: usize = 64;

/// Componentwise minimum, maximum and count: a commutative user operator
/// of several fields.
#[scan_op(
    identity = Range3 { min: i32::MAX, max: i32::MIN, count: 0 },
    op = |x, y| Range3 { min: x.min.min(y.min), max: x.max.max(y.max), count: x.count + y.count },
    commutative = true
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range3 {
    min: i32,
    max: i32,
    count: u32,
}

impl Case for Range3 {
    fn random(rng: &mut Rng64) -> Range3 {
        let v = rng.random();
        Range3 {
            min: v,
            max: v,
            count: 1,
        }
    }
}
impl Case for Moments {
    fn random(rng: &mut Rng64) -> Moments {
        Moments::of(rng.random::<u32>() as u64)
    }
}
impl Case for Sum<u32> {
    fn random(rng: &mut Rng64) -> u32 {
        rng.random()
    }
}
impl Case for Sum<f32> {
    fn random(rng: &mut Rng64) -> f32 {
        rng.random_range(-8i32..=8) as f32
    }
    fn close(g: &f32, c: &f32) -> bool {
        g.to_bits() == c.to_bits() // integers below 2^24: exact
    }
}
impl Case for BitXor<u64> {
    fn random(rng: &mut Rng64) -> u64 {
        rng.random()
    }
}
impl Case for Max<i16> {
    fn random(rng: &mut Rng64) -> i16 {
        rng.random()
    }
}

/// (rows, columns) at every boundary of the tiles (blocks of `threads`
/// columns, chunks of `items` rows) and about `big` elements in three
/// shapes.
fn shapes<Op: ScanOp>(big: usize) -> Vec<(usize, usize)> {
    let layout = gpu_scan::scan_runtime::layout::<Op>();
    let threads = Op::BLOCK_THREADS as usize;
    let items = layout.column_items_per_thread as usize;
    vec![
        (0, 7),
        (1, 1),
        (1, threads - 1),
        (1, threads + 1),
        (3, 5),
        (31, 33),
        (items - 1, threads),
        (items + 1, threads + 1),
        (2 * items + 3, 2 * threads - 1),
        (5000, 1),
        (300, 1000),
        (1000, 300),
        (2, 256 * threads),
        (2, 256 * threads + 1),
        (2048, 2048),
        (big / 4096, 4096),
        (big / 777, 777),
        (big / 5, 5),
    ]
}

fn run_op<Op: Case>(stream: &Arc<CudaStream>, big: usize, seed: u64, rows: &mut Vec<Row>) {
    if !suite_runs_op(Op::NAME) {
        return;
    }
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x5555));
    let specs = every_named_spec(init, &suite_directions());
    let mut row = Row {
        op: Op::NAME,
        kind: "2-D",
        lengths: 0,
        elements: 0,
        failures: Vec::new(),
        seconds: 0.0,
    };
    let start = Instant::now();
    for (c, &(count, cols)) in shapes::<Op>(big).iter().enumerate() {
        let n = count * cols;
        let case_seed = seed ^ (n as u64).wrapping_mul(41) ^ (c as u64) << 56;
        let input = random_input::<Op>(n, case_seed);
        let d_input = stream.clone_htod(&input).unwrap();
        for (k, (name, spec)) in specs.iter().enumerate() {
            let mut expected = vec![Op::IDENTITY; n];
            gpu_scan::summed_area::par_scan::<Op>(*spec, cols, &input, &mut expected).unwrap();
            for in_place in [false, true] {
                let mut out = unsafe { stream.alloc::<Op::Element>(n + GUARD) }.unwrap();
                poison(stream, &mut out);
                let result = {
                    let mut view = out.slice_mut(..n);
                    if in_place {
                        stream.memcpy_dtod(&d_input, &mut view).unwrap();
                        scanner.scan_in_place(stream, spec.summed_area(cols), &mut view)
                    } else {
                        scanner.scan(stream, spec.summed_area(cols), &d_input, &mut view)
                    }
                };
                let got = stream.clone_dtoh(&out).unwrap();
                row.lengths += 1;
                row.elements += n;
                let what = format!(
                    "{count} × {cols} {name}{} (case {c}.{k})",
                    if in_place { " in place" } else { "" }
                );
                if let Err(e) = result {
                    row.failures.push(format!("{what}: {e}"));
                    continue;
                }
                compare::<Op>(&what, n, &got[..n], &expected, &mut row.failures);
                if !poisoned(&got[n..]) {
                    row.failures.push(format!(
                        "{what}: the guard band after the output was written"
                    ));
                }
            }
        }
        if stream.clone_dtoh(&d_input).unwrap() != input {
            row.failures
                .push(format!("{count} × {cols}: a scan modified its input"));
        }
    }
    // The tiles ran exactly for the commutative operators.
    let tiled = scanner
        .kernel_symbols_for_tests()
        .iter()
        .any(|s| s.ends_with("_area_finish"));
    if tiled != Op::COMMUTATIVE {
        row.failures.push(format!(
            "the tiles {} for an operator whose COMMUTATIVE is {}",
            if tiled { "ran" } else { "did not run" },
            Op::COMMUTATIVE
        ));
    }
    // A row length of 0, or one that does not divide the length: refused,
    // nothing written.
    check_row_length_refusals::<Op>(
        stream,
        |cols, data, out| scanner.scan(stream, ScanSpec::inclusive().summed_area(cols), data, out),
        &mut row.failures,
    );
    row.seconds = start.elapsed().as_secs_f64();
    rows.push(row);
}

#[test]
fn gpu_summed_area_suite() {
    let Some(ctx) = open_gpu("gpu_summed_area") else {
        return;
    };
    let seed = suite_seed();
    // At most 2^21 elements: the f32 sums stay exact.
    let big = std::env::var("GPU_AREA_BIG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1usize << 21)
        .min(1 << 21);
    println!(
        "gpu_summed_area: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays), largest length {big}, directions {:?}",
        ctx.name().unwrap(),
        suite_directions()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    run_op::<Sum<u32>>(&stream, big, seed, &mut rows);
    run_op::<Sum<f32>>(&stream, big, seed, &mut rows);
    run_op::<BitXor<u64>>(&stream, big, seed, &mut rows);
    run_op::<Max<i16>>(&stream, big, seed, &mut rows);
    run_op::<Range3>(&stream, big, seed, &mut rows);
    run_op::<Moments>(&stream, big, seed, &mut rows);
    run_op::<SumU32>(&stream, big, seed, &mut rows);
    run_op::<AffineU32>(&stream, big, seed, &mut rows);
    run_op::<Latest>(&stream, big / 4, seed, &mut rows);
    let failed = print_rows(&rows);
    println!(
        "gpu_summed_area: {} rows, {} passed, {failed} failed (seed {seed}{})",
        rows.len(),
        rows.len() - failed,
        suite_ops_note()
    );
    assert_eq!(
        failed, 0,
        "GPU two-dimensional scans differ from the CPU (seed {seed})"
    );
}
