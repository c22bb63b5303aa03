//! Batched rows on the GPU: a row-major matrix scanned along its rows
//! (`DeviceSegments::rows`, segments of a fixed length, no flags in
//! memory), inclusive, exclusive and exclusive with init, forward and in
//! reverse (`GPU_SUITE_DIRECTIONS` runs one), in both segmented strategies,
//! through the three paths (pipelined, look-back single pass,
//! reduce-then-scan), for sums and non-commutative operators.
//!
//! Shapes hit every boundary of rows against tiles: rows of one element
//! (every element a head), rows of 31/32/33, rows of a tile ± 1, one row
//! of many tiles, many short rows packed per tile (16, 1000, 4096), and
//! row lengths that do not divide the tile. Inputs are fresh random values
//! (seed printed; GPU_SUITE_SEED replays); outputs are poisoned and have a
//! poisoned guard band after them that must survive; every element is
//! compared with the CPU backend (`gpu_scan::segmented` with
//! `Segments::rows`, itself checked against the definition in
//! `tests/cpu_segmented.rs`), under the tolerances justified in
//! `tests/gpu_suite.rs`. A row length of 0 or one that does not divide the
//! length is refused with `ScanError::RowLength` and writes nothing.
//! Without a GPU it prints one line and passes.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::*;
use common::ops::*;
use common::segmented_paths::*;
use common::specs::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::CudaStream;
use gpu_scan::scan_runtime::DeviceSegments;
use gpu_scan::segmented::{self as cpu_segmented, RowLengthMismatch, Segments};
use rand::SeedableRng;
use std::sync::Arc;

/// (rows, row length) pairs at every boundary of rows against tiles, and
/// `big` elements as rows of 16 and of 4096 and as one row.
fn shapes<Op: ScanOp>(big: usize) -> Vec<(usize, usize)> {
    let t = Op::tile_items();
    let mut v = vec![
        (0, 5),
        (1, 1),
        (33, 1),
        (257 * t + 1, 1),
        (1, 31),
        (1, 32),
        (1, 33),
        (70, 31),
        (70, 33),
        (5, t - 1),
        (3, t),
        (4, t + 1),
        (1, 3 * t + 17),
        (2, 129 * t - 1),
        (1000, 7),
        (3000, 1000),
        (big / 16, 16),
        (big / 4096, 4096),
        (1, big),
    ];
    v.dedup();
    v
}

fn run_op<Op: Case>(stream: &Arc<CudaStream>, big: usize, seed: u64, rows: &mut Vec<Row>) {
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x4444));
    let specs = named_specs(init, &suite_directions());
    let first_row = path_rows::<Op>("rows", rows);
    for (c, &(count, row_length)) in shapes::<Op>(big).iter().enumerate() {
        let n = count * row_length;
        let case_seed = seed ^ (n as u64).wrapping_mul(31) ^ (c as u64) << 56;
        let input = random_input::<Op>(n, case_seed);
        let d_input = stream.clone_htod(&input).unwrap();
        for (k, (name, spec)) in specs.iter().enumerate() {
            let mut expected = vec![Op::IDENTITY; n];
            let mut expected_carry = Op::IDENTITY;
            cpu_segmented::par_scan::<Op>(
                spec.carry_out(&mut expected_carry),
                Segments::rows(row_length),
                &input,
                &mut expected,
            )
            .unwrap();
            // Every row's total (the CPU's, folded from the input).
            let mut expected_totals = vec![Op::IDENTITY; count];
            cpu_segmented::scan::<Op>(
                spec.segment_totals(&mut expected_totals),
                Segments::rows(row_length),
                &input,
                &mut vec![Op::IDENTITY; n],
            )
            .unwrap();
            scan_every_path(
                &mut scanner,
                stream,
                rows,
                first_row,
                (name, *spec),
                &format!("{count} rows of {row_length}"),
                c + k,
                &d_input,
                (&expected, expected_carry, Some(&expected_totals)),
                || DeviceSegments::rows(row_length),
            );
        }
        if stream.clone_dtoh(&d_input).unwrap() != input {
            rows[first_row].failures.push(format!(
                "{count} rows of {row_length}: a scan modified its input"
            ));
        }
    }
    // A row length of 0, or one that does not divide the length: refused,
    // nothing written.
    let n = 3 * Op::tile_items();
    let data = stream.alloc_zeros::<Op::Element>(n).unwrap();
    for row_length in [0, 7 * Op::tile_items() / 3 + 1, n + 1] {
        let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        poison(stream, &mut out);
        let got = scanner.scan(
            stream,
            ScanSpec::inclusive().segments(DeviceSegments::rows(row_length)),
            &data,
            &mut out,
        );
        let want = RowLengthMismatch {
            elements: n,
            row_length,
        };
        let refused = matches!(got, Err(ScanError::RowLength(e)) if e == want);
        if !refused || !still_poisoned(stream, &out) {
            rows[first_row].failures.push(format!(
                "rows of {row_length} over {n} elements: {got:?}, output untouched: {}",
                still_poisoned(stream, &out)
            ));
        }
    }
}

#[test]
fn gpu_rows_suite() {
    let Some(ctx) = open_gpu("gpu_rows") else {
        return;
    };
    let seed = suite_seed();
    let big = std::env::var("GPU_ROWS_BIG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1usize << 22);
    println!(
        "gpu_rows: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays), largest length {big}, directions {:?}",
        ctx.name().unwrap(),
        suite_directions()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    run_op::<SumU32>(&stream, big, seed, &mut rows);
    run_op::<AffineU32>(&stream, big, seed, &mut rows);
    run_op::<Mat2>(&stream, big, seed, &mut rows);
    run_op::<Latest>(&stream, big, seed, &mut rows);
    run_op::<MaxF32>(&stream, big, seed, &mut rows);
    run_op::<Affine>(&stream, big / 4, seed, &mut rows);
    let failed = print_rows(&rows);
    println!(
        "gpu_rows: {} rows, {} passed, {failed} failed (seed {seed})",
        rows.len(),
        rows.len() - failed
    );
    assert_eq!(failed, 0, "GPU row scans differ from the CPU (seed {seed})");
}
