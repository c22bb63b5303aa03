//! Wide elements on the GPU (issue 16): the affine maps of vectors of
//! `examples/common/wide_ops.rs` (non-commutative, exact) from 16 to 256
//! bytes, whose tile status is 128-bit chunks, with pipelined tiles of 3 to
//! 21 items per thread, and four of bytes and half-words (41, 109, 122 and
//! 172 bytes) that the kernels hold packed in words, through every
//! path (`Auto`, the pipelined pass where it takes the size, the look-back
//! single pass, reduce-then-scan), inclusive, exclusive and exclusive from
//! an initial value, forward and in reverse (`GPU_SUITE_DIRECTIONS` runs
//! one), out of place with a poisoned guard band after the output and the
//! total (carry-out) in a poisoned slot, and in place, over lengths 0, 1, 31, 32, 33, a tile ± 1, a pipelined tile ± 1,
//! 33 tiles + 1 and a long input, on fresh random inputs (seed printed;
//! GPU_SUITE_SEED replays), every element compared with the CPU bit for
//! bit; and the 48-, 128- and 256-byte maps segmented into rows, asking
//! for the pipelined and the look-back pass (the segmented pipelined pass
//! does not take 256 bytes: they fall back to the look-back pass). The 172-
//! and 256-byte maps take the pipelined pass whose lookahead warp looks
//! back from each tile (past 156 bytes), the 256-byte one with padded runs
//! of 6 items in 2 stages and no warp-total slots, the 172-byte one
//! unpadded, 5 items in 3. Without a GPU it prints one line and passes.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
#[path = "common/wide_cases.rs"]
mod wide_cases;

use common::gpu::*;
use common::specs::named_specs;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::CudaStream;
use gpu_scan::scan_runtime::{DeviceSegments, ScanPath};
use rand::SeedableRng;
use std::sync::Arc;
use std::time::Instant;
use wide_cases::*;

/// Elements after each output that must stay poisoned.
const GUARD: usize = 7;

/// Lengths at every boundary of `Op`'s tilings, the longest about 16 MiB.
fn lengths<Op: ScanOp>() -> Vec<usize> {
    let size = std::mem::size_of::<Op::Element>();
    let t = Op::tile_items();
    let p = gpu_scan::kernels_gen::pipelined_tile_items(size);
    let mut v = vec![0, 1, 31, 32, 33, t - 1, t, t + 1, 33 * t + 1];
    if gpu_scan::kernels_gen::pipelined_supported(size) {
        v.extend([p - 1, p + 1, 5 * p + 3]);
    }
    v.push((16 << 20) / size + 3);
    v.sort_unstable();
    v.dedup();
    v
}

fn run_op<Op: Case>(stream: &Arc<CudaStream>, seed: u64, rows: &mut Vec<Row>) {
    if !suite_runs_op(Op::NAME) {
        return;
    }
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x3333));
    let specs = named_specs(init, &suite_directions());
    for path in [
        ScanPath::Auto,
        ScanPath::Pipelined,
        ScanPath::SinglePass,
        ScanPath::ReduceThenScan,
    ] {
        let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
        scanner.set_tuning(scanner.tuning().with_path(path));
        let mut row = Row {
            op: Op::NAME,
            kind: leak(format!(
                "{} bytes [{path:?}]",
                std::mem::size_of::<Op::Element>()
            )),
            lengths: 0,
            elements: 0,
            failures: Vec::new(),
            seconds: 0.0,
        };
        let start = Instant::now();
        for (c, &n) in lengths::<Op>().iter().enumerate() {
            let input = random_input::<Op>(n, seed ^ (n as u64).wrapping_mul(131) ^ c as u64);
            let d_input = stream.clone_htod(&input).unwrap();
            for (k, &(name, spec)) in specs.iter().enumerate() {
                let mut expected = vec![Op::IDENTITY; n];
                let mut expected_carry = Op::IDENTITY;
                gpu_scan::cpu::par_scan::<Op>(
                    spec.carry_out(&mut expected_carry),
                    &input,
                    &mut expected,
                )
                .unwrap();
                // SAFETY: poisoned at once, every element then read back.
                let mut out = unsafe { stream.alloc::<Op::Element>(n + GUARD) }.unwrap();
                poison(stream, &mut out);
                // Out of place, the total too, into the middle of a
                // poisoned three-element slot.
                // SAFETY: as `out`.
                let mut slot = unsafe { stream.alloc::<Op::Element>(3) }.unwrap();
                poison(stream, &mut slot);
                let in_place = (c + k) % 2 == 1;
                if in_place {
                    let mut view = out.slice_mut(0..n);
                    stream.memcpy_htod(&input, &mut view).unwrap();
                    scanner.scan_in_place(stream, spec, &mut view).unwrap();
                } else {
                    let mut view = out.slice_mut(0..n);
                    let mut carry = slot.slice_mut(1..2);
                    scanner
                        .scan(stream, spec.carry_out(&mut carry), &d_input, &mut view)
                        .unwrap();
                }
                let got = stream.clone_dtoh(&out).unwrap();
                let what = format!("{name}{}", if in_place { " in place" } else { "" });
                compare::<Op>(&what, n, &got[..n], &expected, &mut row.failures);
                let got_slot = stream.clone_dtoh(&slot).unwrap();
                let slot_ok = if in_place {
                    poisoned(&got_slot)
                } else {
                    got_slot[1] == expected_carry
                        && poisoned(&got_slot[..1])
                        && poisoned(&got_slot[2..])
                };
                if !slot_ok {
                    row.failures.push(format!(
                        "{what} n={n}: the carry-out slot differs from the CPU's total"
                    ));
                }
                if !poisoned(&got[n..]) {
                    row.failures
                        .push(format!("{what} n={n}: the guard band was written"));
                }
                row.lengths += 1;
                row.elements += n;
            }
            if stream.clone_dtoh(&d_input).unwrap() != input {
                row.failures
                    .push(format!("n={n}: an out-of-place scan modified its input"));
            }
        }
        finish_row(row, start, rows);
    }
}

/// Times `row` from `start`, prints its line and adds it to `rows`.
fn finish_row(mut row: Row, start: Instant, rows: &mut Vec<Row>) {
    row.seconds = start.elapsed().as_secs_f64();
    println!(
        "{} {}: {} scans, {} failures, {:.1} s",
        row.op,
        row.kind,
        row.lengths,
        row.failures.len(),
        row.seconds
    );
    rows.push(row);
}

/// `Op`'s scans segmented into rows (`DeviceSegments::rows`) through the
/// pipelined and the look-back single pass, every kind and direction, out
/// of place with a guard band: row lengths of 1, 7, 1000 and a pipelined
/// tile ± 1 over about four pipelined tiles, compared with the CPU bit for
/// bit. (Segmented scans keep their stage items and lane totals in the
/// same shared memory as plain ones, with the head flags beside them.)
fn run_rows<Op: Case>(stream: &Arc<CudaStream>, seed: u64, rows: &mut Vec<Row>) {
    if !suite_runs_op(Op::NAME) {
        return;
    }
    let size = std::mem::size_of::<Op::Element>();
    let p = gpu_scan::kernels_gen::pipelined_tile_items(size);
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x5555));
    let specs = named_specs(init, &suite_directions());
    for path in [ScanPath::Pipelined, ScanPath::SinglePass] {
        let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
        scanner.set_tuning(scanner.tuning().with_path(path));
        let mut row = Row {
            op: Op::NAME,
            kind: leak(format!("{size} bytes, rows [{path:?}]")),
            lengths: 0,
            elements: 0,
            failures: Vec::new(),
            seconds: 0.0,
        };
        let start = Instant::now();
        for (c, row_length) in [1, 7, 1000, p - 1, p + 1].into_iter().enumerate() {
            let n = (4 * p + 5) / row_length * row_length;
            let input = random_input::<Op>(n, seed ^ (n as u64).wrapping_mul(137) ^ c as u64);
            let d_input = stream.clone_htod(&input).unwrap();
            for &(name, spec) in &specs {
                let mut expected = vec![Op::IDENTITY; n];
                gpu_scan::segmented::par_scan::<Op>(
                    spec,
                    gpu_scan::segmented::Segments::rows(row_length),
                    &input,
                    &mut expected,
                )
                .unwrap();
                // SAFETY: poisoned at once, every element then read back.
                let mut out = unsafe { stream.alloc::<Op::Element>(n + GUARD) }.unwrap();
                poison(stream, &mut out);
                let mut view = out.slice_mut(0..n);
                scanner
                    .scan(
                        stream,
                        spec.segments(DeviceSegments::rows(row_length)),
                        &d_input,
                        &mut view,
                    )
                    .unwrap();
                let got = stream.clone_dtoh(&out).unwrap();
                let what = format!("{name}, rows of {row_length}");
                compare::<Op>(&what, n, &got[..n], &expected, &mut row.failures);
                if !poisoned(&got[n..]) {
                    row.failures
                        .push(format!("{what} n={n}: the guard band was written"));
                }
                row.lengths += 1;
                row.elements += n;
            }
        }
        finish_row(row, start, rows);
    }
}

#[test]
fn gpu_wide_suite() {
    let Some(ctx) = open_gpu("gpu_wide") else {
        return;
    };
    let seed = suite_seed();
    println!(
        "gpu_wide: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays), directions {:?}",
        ctx.name().unwrap(),
        suite_directions()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    run_op::<Wide16>(&stream, seed, &mut rows);
    run_op::<Wide24>(&stream, seed, &mut rows);
    run_op::<Wide32>(&stream, seed, &mut rows);
    run_op::<Wide48>(&stream, seed, &mut rows);
    run_op::<Wide64>(&stream, seed, &mut rows);
    run_op::<Wide72>(&stream, seed, &mut rows);
    run_op::<Wide96>(&stream, seed, &mut rows);
    run_op::<Wide128>(&stream, seed, &mut rows);
    run_op::<Wide256>(&stream, seed, &mut rows);
    run_op::<Bytes41>(&stream, seed, &mut rows);
    run_op::<Half122>(&stream, seed, &mut rows);
    run_op::<Bytes109>(&stream, seed, &mut rows);
    run_op::<Half172>(&stream, seed, &mut rows);
    run_rows::<Wide48>(&stream, seed, &mut rows);
    run_rows::<Wide128>(&stream, seed, &mut rows);
    run_rows::<Wide256>(&stream, seed, &mut rows);
    let failed = print_rows(&rows);
    println!(
        "gpu_wide: {} rows, {} passed, {failed} failed (seed {seed}{})",
        rows.len(),
        rows.len() - failed,
        suite_ops_note()
    );
    assert_eq!(
        failed, 0,
        "wide GPU scans differ from the CPU (seed {seed})"
    );
}
