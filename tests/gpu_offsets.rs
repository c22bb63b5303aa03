//! Segments given by offsets on the GPU (`DeviceOffsets`: CSR row pointers,
//! `u32` and `u64`, the heads found in each tile, no flags in memory),
//! inclusive, exclusive and exclusive with init, forward and in reverse
//! (`GPU_SUITE_DIRECTIONS` runs one), in both segmented strategies,
//! through the three paths (pipelined, look-back single pass,
//! reduce-then-scan), for sums and non-commutative operators, up to
//! 96-byte affine maps of vectors (`GPU_SUITE_OPS` runs some).
//!
//! Segment lengths: every element its own segment, one segment, geometric
//! lengths of mean 7 and 1000, power-law lengths (a few segments of many
//! tiles among many of a few elements), heads on every tile boundary, and
//! runs of hundreds of empty segments (repeated offsets); offsets with and
//! without the leading 0 and with the closing `n`, 16-byte aligned or not.
//! Lengths 0, 1, 31, 32, 33, a tile ± 1, many tiles ± 1 and a large one.
//! Inputs are fresh random values (seed printed; GPU_SUITE_SEED replays);
//! outputs are poisoned and have a poisoned guard band after them that must
//! survive; every element
//! is compared with the CPU backend over the same segments as head flags
//! (`gpu_scan::segmented::heads_from_offsets`), under the tolerances
//! justified in `tests/gpu_suite.rs`. Offsets that are not row pointers are
//! refused by `DeviceOffsets::check` with the CPU's error, and offsets
//! checked for another length by the scan, which writes nothing. Without a
//! GPU it prints one line and passes.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
#[path = "common/wide_cases.rs"]
mod wide_cases;
use common::gpu::*;
use common::ops::*;
use common::segmented_paths::*;
use common::segments::*;
use common::specs::*;
use gpu_scan::cudarc::driver::CudaStream;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::DeviceOffsets;
use gpu_scan::segmented::{self as cpu_segmented, FlagFormat, InvalidOffsets, Segments};
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use wide_cases::{Wide64, Wide96};

/// How the offsets of a case are drawn.
#[derive(Clone, Copy, Debug)]
enum Lengths {
    /// The heads of a flag pattern (`offsets_of`: with a few empty segments
    /// and the closing n).
    Flags(Pattern),
    /// Power-law lengths: P(length > l) ~ l^-1.1, up to the whole input.
    PowerLaw,
    /// Segments of random length up to 5000 with runs of up to 400 empty
    /// segments between them.
    EmptyRuns,
}

impl Lengths {
    fn label(&self) -> String {
        match self {
            Lengths::Flags(p) => p.label(),
            Lengths::PowerLaw => "power law".into(),
            Lengths::EmptyRuns => "runs of empty segments".into(),
        }
    }

    fn offsets(&self, n: usize, rng: &mut Rng64) -> Vec<u64> {
        let mut offsets = match *self {
            Lengths::Flags(pattern) => offsets_of(&random_heads(n, pattern, rng), rng),
            Lengths::PowerLaw => {
                let mut v = vec![0u64];
                let mut at = 0usize;
                while at < n {
                    let u: f64 = rng.random_range(1e-9..1.0);
                    let length = (u.powf(-1.0 / 1.1) as usize).clamp(1, n);
                    at = (at + length).min(n);
                    v.push(at as u64);
                }
                v
            }
            Lengths::EmptyRuns => {
                let mut v = vec![0u64];
                let mut at = 0usize;
                while at < n {
                    for _ in 0..rng.random_range(0..400) {
                        v.push(at as u64);
                    }
                    at = (at + rng.random_range(1..5000)).min(n);
                    v.push(at as u64);
                }
                v
            }
        };
        // Element 0 starts a segment with or without an offset for it.
        if rng.random_bool(0.5) {
            let leading = offsets.iter().take_while(|&&o| o == 0).count();
            offsets.drain(..leading);
        }
        offsets
    }
}

/// (length, segment lengths) pairs at every boundary.
fn cases<Op: ScanOp>(big: usize) -> Vec<(usize, Lengths)> {
    let t = Op::tile_items();
    let geometric = |m| Lengths::Flags(Pattern::MeanLength(m));
    vec![
        (0, geometric(7.0)),
        (1, geometric(7.0)),
        (31, Lengths::Flags(Pattern::EveryElement)),
        (32, geometric(7.0)),
        (33, Lengths::Flags(Pattern::OneSegment)),
        (t - 1, geometric(7.0)),
        (t, Lengths::EmptyRuns),
        (t + 1, geometric(1000.0)),
        (3 * t + 17, Lengths::Flags(Pattern::EveryElement)),
        (
            129 * t - 1,
            Lengths::Flags(Pattern::Stride {
                stride: t,
                extra_mean: 3000.0,
            }),
        ),
        (129 * t + 1, Lengths::PowerLaw),
        (200 * t + 3, Lengths::EmptyRuns),
        (big, geometric(1000.0)),
        (big + 5, Lengths::PowerLaw),
        (big, Lengths::Flags(Pattern::OneSegment)),
    ]
}

fn run_op<Op: Case>(stream: &Arc<CudaStream>, big: usize, seed: u64, rows: &mut Vec<Row>) {
    if !suite_runs_op(Op::NAME) {
        return;
    }
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x5555));
    let specs = named_specs(init, &suite_directions());
    let first_row = path_rows::<Op>("offsets", rows);
    for (c, &(n, lengths)) in cases::<Op>(big).iter().enumerate() {
        let case_seed = seed ^ (n as u64).wrapping_mul(31) ^ (c as u64) << 56;
        let mut rng = Rng64::seed_from_u64(case_seed ^ 0x77);
        let input = random_input::<Op>(n, case_seed);
        let offsets = lengths.offsets(n, &mut rng);
        let heads = cpu_segmented::heads_from_offsets(&offsets, n, FlagFormat::Bits).unwrap();
        let d_input = stream.clone_htod(&input).unwrap();
        // Both widths where the offsets fit 32 bits, alternating by case.
        let wide = c % 2 == 0;
        // Every third case's offsets start one element into their buffer,
        // off the 16-byte alignment the pipelined pass's heads warps read
        // whole chunks at (they then read them one by one).
        let skip = usize::from(c % 3 == 2);
        let padded: Vec<u64> = std::iter::repeat_n(0, skip)
            .chain(offsets.iter().copied())
            .collect();
        let d_offsets64 = stream.clone_htod(&padded).unwrap();
        let narrow: Vec<u32> = padded.iter().map(|&o| o as u32).collect();
        let d_offsets32 = stream.clone_htod(&narrow).unwrap();
        let checked = if wide {
            DeviceOffsets::check(stream, d_offsets64.slice(skip..), n)
        } else {
            DeviceOffsets::check(stream, d_offsets32.slice(skip..), n)
        };
        let checked = match checked {
            Ok(c) => c,
            Err(e) => {
                rows[first_row]
                    .failures
                    .push(format!("n={n} {}: check refused: {e}", lengths.label()));
                continue;
            }
        };
        for (k, (name, spec)) in specs.iter().enumerate() {
            let mut expected = vec![Op::IDENTITY; n];
            let mut expected_carry = Op::IDENTITY;
            cpu_segmented::par_scan::<Op>(
                spec.carry_out(&mut expected_carry),
                Segments::Flags(heads.as_flags()),
                &input,
                &mut expected,
            )
            .unwrap();
            // Every window's total (CSR row pointers: one fewer than the
            // offsets), folded from the input by the CPU.
            let mut expected_totals = vec![Op::IDENTITY; offsets.len().saturating_sub(1)];
            cpu_segmented::scan::<Op>(
                spec.segment_totals(&mut expected_totals),
                Segments::offsets(&offsets[..]),
                &input,
                &mut vec![Op::IDENTITY; n],
            )
            .unwrap();
            let what = format!(
                "n={n} {} ({} offsets of {} bits{})",
                lengths.label(),
                offsets.len(),
                if wide { 64 } else { 32 },
                if skip == 1 { ", unaligned" } else { "" }
            );
            // The offsets checked once serve every scan.
            scan_every_path(
                &mut scanner,
                stream,
                rows,
                first_row,
                (name, *spec),
                &what,
                c + k,
                &d_input,
                (&expected, expected_carry, Some(&expected_totals)),
                || DeviceSegments::from(&checked),
            );
        }
        drop(checked);
        if stream.clone_dtoh(&d_input).unwrap() != input {
            rows[first_row]
                .failures
                .push(format!("n={n}: a scan modified its input"));
        }
    }
    // Offsets checked for another length: refused, nothing written.
    let n = 3 * Op::tile_items();
    let data = stream.alloc_zeros::<Op::Element>(n).unwrap();
    let row_ptr = stream.clone_htod(&[0u32, 5, 9]).unwrap();
    for checked_for in [n - 1, n + 1] {
        let offsets = DeviceOffsets::check(stream, row_ptr.as_view(), checked_for).unwrap();
        let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        poison(stream, &mut out);
        let got = scanner.scan(
            stream,
            ScanSpec::inclusive().segments(offsets),
            &data,
            &mut out,
        );
        let want = InvalidOffsets::CheckedForAnotherLength {
            checked: checked_for,
            len: n,
        };
        let refused = matches!(got, Err(ScanError::InvalidOffsets(e)) if e == want);
        if !refused || !still_poisoned(stream, &out) {
            rows[first_row].failures.push(format!(
                "offsets checked for {checked_for} over {n} elements: {got:?}, output untouched: {}",
                still_poisoned(stream, &out)
            ));
        }
    }
}

/// Offsets that are not row pointers: `DeviceOffsets::check` gives the
/// CPU's error, in both widths.
fn bad_offsets(stream: &Arc<CudaStream>, rows: &mut Vec<Row>) {
    let mut row = Row {
        op: "-",
        kind: "offsets refused by DeviceOffsets::check",
        lengths: 0,
        elements: 0,
        failures: Vec::new(),
        seconds: 0.0,
    };
    let bad: [(&[u64], usize); 4] = [
        (&[0, 2, 6, 9], 6),
        (&[0, 4, 2, 6], 6),
        (&[1], 0),
        (&[0, 5, 5, 4, 7, 7, 7, 7, 3, 100], 7),
    ];
    for (offsets, n) in bad {
        let want = cpu_segmented::heads_from_offsets(offsets, n, FlagFormat::Bytes).unwrap_err();
        let d64 = stream.clone_htod(offsets).unwrap();
        let narrow: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
        let d32 = stream.clone_htod(&narrow).unwrap();
        for (bits, got) in [
            (
                64,
                DeviceOffsets::check(stream, d64.as_view(), n).map(|_| ()),
            ),
            (
                32,
                DeviceOffsets::check(stream, d32.as_view(), n).map(|_| ()),
            ),
        ] {
            row.lengths += 1;
            match got {
                Err(ScanError::InvalidOffsets(e)) if e == want => {}
                other => row.failures.push(format!(
                    "offsets {offsets:?} for {n} elements ({bits} bits): {other:?} (want {want:?})"
                )),
            }
        }
    }
    rows.push(row);
}

#[test]
fn gpu_offsets_suite() {
    let Some(ctx) = open_gpu("gpu_offsets") else {
        return;
    };
    let seed = suite_seed();
    let big = std::env::var("GPU_OFFSETS_BIG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1usize << 22);
    println!(
        "gpu_offsets: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays), largest length {big}, directions {:?}",
        ctx.name().unwrap(),
        suite_directions()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    bad_offsets(&stream, &mut rows);
    run_op::<SumU32>(&stream, big, seed, &mut rows);
    run_op::<AffineU32>(&stream, big, seed, &mut rows);
    run_op::<Mat2>(&stream, big, seed, &mut rows);
    run_op::<Latest>(&stream, big, seed, &mut rows);
    run_op::<MaxF32>(&stream, big, seed, &mut rows);
    run_op::<Affine>(&stream, big / 4, seed, &mut rows);
    run_op::<Wide64>(&stream, big / 16, seed, &mut rows);
    run_op::<Wide96>(&stream, big / 24, seed, &mut rows);
    let failed = print_rows(&rows);
    println!(
        "gpu_offsets: {} rows, {} passed, {failed} failed (seed {seed}{})",
        rows.len(),
        rows.len() - failed,
        suite_ops_note()
    );
    assert_eq!(
        failed, 0,
        "GPU offset scans differ from the CPU (seed {seed})"
    );
}
