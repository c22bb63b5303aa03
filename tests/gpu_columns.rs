//! Column scans on the GPU: a row-major matrix scanned down its columns
//! (`ScanSpec::columns`, `torch.cumsum(x, dim=0)`), inclusive,
//! exclusive and exclusive with init, forward and in reverse
//! (`GPU_SUITE_DIRECTIONS` runs one), for sums and non-commutative
//! operators of 1 to 24 bytes, and two wide ones: 256-byte affine maps of
//! `u32` lanes and 172-byte ones of half-words (held packed in words, in tiles
//! whose warps' prefixes replace their partials in place), whose threads
//! read their items again for the rescan.
//!
//! Shapes hit every boundary of the column kernel's tiles (32 columns by
//! warps × items rows; matrices of 16 columns or fewer several rows a
//! warp): one column and one row, 31/32/33 columns, a tile's rows ± 1, many
//! rows of a narrow matrix (one strip, a long look-back chain, its windows
//! of 32 tiles), packed tiles ± 1 of 2, 3, 5, 8, 9 and 16 columns, wide
//! matrices of many strips (17 000 and 16 384 columns: enough strips to
//! fill the device, where each block walks down its strip instead), and
//! shapes that divide nothing.
//! Inputs are fresh random values (seed printed; GPU_SUITE_SEED replays);
//! outputs are poisoned and have a poisoned guard band after them that must
//! survive; every element is compared with the CPU backend
//! (`gpu_scan::columns`, itself checked against 1-D scans of each column in
//! `tests/cpu_columns.rs`), under the tolerances justified in
//! `tests/gpu_suite.rs`. A scan is repeated on the same scanner and
//! stream to check the launch state carries over. A row length of 0 or one
//! that does not divide the length is refused with `ScanError::RowLength`
//! and writes nothing. Without a GPU it prints one line and passes.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
#[path = "../examples/common/wide_ops.rs"]
mod wide_ops;
use common::gpu::*;
use common::ops::*;
use common::specs::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::CudaStream;
use rand::SeedableRng;
use std::sync::Arc;
use std::time::Instant;

macro_rules! random_wide_cases {
    ($($name:ident),*) => {$(
        impl Case for $name {
            fn random(rng: &mut Rng64) -> $name {
                $name::from_bits(rand::Rng::random(rng))
            }
        }
    )*};
}
use wide_ops::{Half172, Wide256};
random_wide_cases!(Wide256, Half172);

/// Poisoned elements after every output; a scan that writes past its
/// output shows there.
const GUARD: usize = 64;

/// (rows, columns) pairs at every boundary of the column tiles, and about
/// `big` elements as a wide and as a narrow matrix.
fn shapes<Op: ScanOp>(big: usize) -> Vec<(usize, usize)> {
    let layout = gpu_scan::scan_runtime::layout::<Op>();
    let tile_rows = layout.column_tile_rows();
    // Narrow matrices' tiles, several rows a warp where elements allow.
    let packed = |cols: usize| layout.column_tile_rows_of(cols);
    vec![
        (0, 5),
        (1, 1),
        (1, 33),
        (5000, 1),
        (tile_rows - 1, 32),
        (tile_rows, 31),
        (tile_rows + 1, 33),
        (3 * tile_rows + 5, 64),
        (300, 100),
        (3, 4097),
        (100 * tile_rows + 1, 17),
        // Two strips of 41 tiles: look-back windows of 32 tiles, strided.
        (40 * tile_rows + 3, 40),
        (2 * tile_rows + 3, 17_000),
        (packed(16) - 1, 16),
        (packed(16) + 1, 16),
        (packed(2) + 1, 2),
        (2 * packed(3) - 1, 3),
        (3 * packed(8) + 1, 8),
        (70 * packed(5) + 7, 5),
        (packed(9) * 33 + packed(9) / 2, 9),
        (big / 16384, 16384),
        (big / 16, 16),
        (big / 7, 7),
        (big / 1000, 1000),
    ]
}

fn run_op<Op: Case>(stream: &Arc<CudaStream>, big: usize, seed: u64, rows: &mut Vec<Row>) {
    if !suite_runs_op(Op::NAME) {
        return;
    }
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x5555));
    let specs = named_specs(init, &suite_directions());
    let mut row = Row {
        op: Op::NAME,
        kind: "columns",
        lengths: 0,
        elements: 0,
        failures: Vec::new(),
        seconds: 0.0,
    };
    let start = Instant::now();
    for (c, &(count, cols)) in shapes::<Op>(big).iter().enumerate() {
        let n = count * cols;
        let case_seed = seed ^ (n as u64).wrapping_mul(37) ^ (c as u64) << 56;
        let input = random_input::<Op>(n, case_seed);
        let d_input = stream.clone_htod(&input).unwrap();
        for (k, (name, spec)) in specs.iter().enumerate() {
            let mut expected = vec![Op::IDENTITY; n];
            gpu_scan::columns::par_scan::<Op>(*spec, cols, &input, &mut expected).unwrap();
            // Twice: the second launch runs on the state the first left.
            for repeat in 0..2 {
                let mut out = unsafe { stream.alloc::<Op::Element>(n + GUARD) }.unwrap();
                poison(stream, &mut out);
                let in_place = (c + k + repeat) % 2 == 1;
                let result = if in_place {
                    let mut view = out.slice_mut(..n);
                    stream.memcpy_dtod(&d_input, &mut view).unwrap();
                    scanner.scan_in_place(stream, spec.columns(cols), &mut view)
                } else {
                    let mut view = out.slice_mut(..n);
                    scanner.scan(stream, spec.columns(cols), &d_input, &mut view)
                };
                let got = stream.clone_dtoh(&out).unwrap();
                row.lengths += 1;
                row.elements += n;
                let what = format!(
                    "{count} × {cols} {name}{}",
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
    // A row length of 0, or one that does not divide the length: refused,
    // nothing written.
    check_row_length_refusals::<Op>(
        stream,
        |cols, data, out| scanner.scan(stream, ScanSpec::inclusive().columns(cols), data, out),
        &mut row.failures,
    );
    row.seconds = start.elapsed().as_secs_f64();
    rows.push(row);
}

#[test]
fn gpu_columns_suite() {
    let Some(ctx) = open_gpu("gpu_columns") else {
        return;
    };
    let seed = suite_seed();
    let big = std::env::var("GPU_COLUMNS_BIG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1usize << 22);
    println!(
        "gpu_columns: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays), largest length {big}, directions {:?}",
        ctx.name().unwrap(),
        suite_directions()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    run_op::<SumU32>(&stream, big, seed, &mut rows);
    run_op::<SumU8>(&stream, big, seed, &mut rows);
    run_op::<AffineU32>(&stream, big, seed, &mut rows);
    run_op::<Mat2>(&stream, big, seed, &mut rows);
    run_op::<Latest>(&stream, big, seed, &mut rows);
    run_op::<MaxF32>(&stream, big, seed, &mut rows);
    run_op::<Affine>(&stream, big / 4, seed, &mut rows);
    run_op::<Stats>(&stream, big / 4, seed, &mut rows);
    run_op::<Wide256>(&stream, big / 32, seed, &mut rows);
    run_op::<Half172>(&stream, big / 32, seed, &mut rows);
    let failed = print_rows(&rows);
    println!(
        "gpu_columns: {} rows, {} passed, {failed} failed (seed {seed}{})",
        rows.len(),
        rows.len() - failed,
        suite_ops_note()
    );
    assert_eq!(
        failed, 0,
        "GPU column scans differ from the CPU (seed {seed})"
    );
}
