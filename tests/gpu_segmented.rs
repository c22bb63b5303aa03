//! The segmented GPU suite: segmented inclusive, exclusive and exclusive
//! with init, forward and in reverse (`GPU_SUITE_DIRECTIONS=forward` or
//! `reverse` runs one), in both strategies and both flag formats, through the three
//! paths (pipelined, look-back single pass, reduce-then-scan), for sums and
//! non-commutative operators, over segment patterns (every element a head,
//! one segment, random lengths of mean 2, 7, 1000 and 10^6, heads exactly
//! at tile, warp and thread boundaries) and lengths at every boundary.
//! Inputs are fresh random values (seed printed; GPU_SUITE_SEED replays),
//! outputs are poisoned, and every element is compared with the CPU
//! backend (`gpu_scan::segmented`), under the tolerances justified in
//! `tests/gpu_suite.rs`. Then the GPU flag builders are compared with the
//! CPU ones. Without a GPU it prints one line and passes.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::*;
use common::ops::*;
use common::segments::*;
use common::specs::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::CudaStream;
use gpu_scan::scan_runtime::{DeviceHeadFlags, FlagFormat, OwnedDeviceHeadFlags, ScanPath};
use gpu_scan::segmented::{self as cpu_segmented, HeadFlags, OwnedHeadFlags};
use rand::SeedableRng;
use std::sync::Arc;
use std::time::Instant;

fn patterns<Op: ScanOp>() -> Vec<Pattern> {
    let t = Op::tile_items();
    let warp_span = 32 * Op::ITEMS_PER_THREAD as usize;
    vec![
        Pattern::EveryElement,
        Pattern::OneSegment,
        Pattern::MeanLength(2.0),
        Pattern::MeanLength(7.0),
        Pattern::MeanLength(1000.0),
        Pattern::MeanLength(1e6),
        Pattern::Stride {
            stride: t,
            extra_mean: 1e12,
        },
        Pattern::Stride {
            stride: warp_span,
            extra_mean: 3000.0,
        },
        Pattern::Stride {
            stride: Op::ITEMS_PER_THREAD as usize,
            extra_mean: 50.0,
        },
    ]
}

fn lengths<Op: ScanOp>(big: usize) -> Vec<usize> {
    let t = Op::tile_items();
    let mut v = vec![
        0,
        1,
        31,
        32,
        33,
        t - 1,
        t,
        t + 1,
        3 * t + 17,
        257 * t - 1,
        257 * t + 1,
        big,
    ];
    v.sort_unstable();
    v.dedup();
    v
}

/// Every global path runs every case.
const PATHS: [ScanPath; 3] = [
    ScanPath::Pipelined,
    ScanPath::SinglePass,
    ScanPath::ReduceThenScan,
];

/// (path index, strategy index, strategy, format index, format) for every combination.
fn combinations() -> Vec<(usize, usize, SegmentedStrategy, usize, FlagFormat)> {
    let mut v = Vec::new();
    for q in 0..PATHS.len() {
        for (s, strategy) in SegmentedStrategy::ALL.into_iter().enumerate() {
            for (f, format) in FlagFormat::ALL.into_iter().enumerate() {
                v.push((q, s, strategy, f, format));
            }
        }
    }
    v
}

fn run_op<Op: Case>(stream: &Arc<CudaStream>, big: usize, seed: u64, rows: &mut Vec<Row>) {
    if !suite_runs_op(Op::NAME) {
        return;
    }
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x2222));
    let specs = named_specs(init, &suite_directions());
    let first_row = rows.len();
    let per = specs.len();
    let row_index =
        |q: usize, s: usize, f: usize, k: usize| first_row + ((q * 2 + s) * 2 + f) * per + k;
    for path in PATHS {
        for strategy in SegmentedStrategy::ALL {
            for format in FlagFormat::ALL {
                for (kind, _) in &specs {
                    rows.push(Row {
                        op: Op::NAME,
                        kind: leak(format!("{kind} {strategy:?} {format:?} [{path:?}]")),
                        lengths: 0,
                        elements: 0,
                        failures: Vec::new(),
                        seconds: 0.0,
                    });
                }
            }
        }
    }
    for (p, pattern) in patterns::<Op>().into_iter().enumerate() {
        for &n in &lengths::<Op>(big) {
            let case_seed = seed ^ (n as u64).wrapping_mul(31) ^ (p as u64) << 56;
            let mut rng = Rng64::seed_from_u64(case_seed);
            let input = random_input::<Op>(n, case_seed);
            let bytes = random_heads(n, pattern, &mut rng);
            let bits = pack_bits(&bytes, &mut rng);
            let d_input = stream.clone_htod(&input).unwrap();
            let d_bytes = stream.clone_htod(&bytes).unwrap();
            let d_bits = stream.clone_htod(&bits).unwrap();
            for (k, (name, kind)) in specs.iter().enumerate() {
                let mut expected = vec![Op::IDENTITY; n];
                cpu_segmented::par_scan::<Op>(
                    *kind,
                    HeadFlags::Bytes(&bytes),
                    &input,
                    &mut expected,
                )
                .unwrap();
                for (q, s, strategy, f, format) in combinations() {
                    // Reverse scans take the single pass on the pipelined
                    // path; its longest inputs are left to the single-pass path.
                    if kind.is_reverse() && PATHS[q] == ScanPath::Pipelined && n == big {
                        continue;
                    }
                    scanner.set_tuning(
                        scanner
                            .tuning()
                            .with_path(PATHS[q])
                            .with_segmented_strategy(strategy),
                    );
                    {
                        // In place or not alternates, so every kind, strategy,
                        // format and path runs both ways across the patterns.
                        let in_place = (p + k + f + s + q) % 2 == 1;
                        let heads: DeviceHeadFlags<'_> = match format {
                            FlagFormat::Bytes => (&d_bytes).into(),
                            FlagFormat::Bits => DeviceHeadFlags::bits(d_bits.as_view(), n),
                        };
                        let row = &mut rows[row_index(q, s, f, k)];
                        let start = Instant::now();
                        let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
                        if in_place {
                            stream.memcpy_dtod(&d_input, &mut out).unwrap();
                            scanner
                                .scan_in_place(stream, kind.segments(heads), &mut out)
                                .unwrap();
                        } else {
                            poison(stream, &mut out);
                            scanner
                                .scan(stream, kind.segments(heads), &d_input, &mut out)
                                .unwrap();
                        }
                        let got = stream.clone_dtoh(&out).unwrap();
                        row.seconds += start.elapsed().as_secs_f64();
                        row.lengths += 1;
                        row.elements += n;
                        let what = format!(
                            "{} {}{}",
                            pattern.label(),
                            name,
                            if in_place { " in place" } else { "" }
                        );
                        compare::<Op>(&what, n, &got, &expected, &mut row.failures);
                    }
                }
            }
            // Out-of-place scans never wrote their input or the flags.
            if stream.clone_dtoh(&d_input).unwrap() != input
                || stream.clone_dtoh(&d_bytes).unwrap() != bytes
                || stream.clone_dtoh(&d_bits).unwrap() != bits
            {
                rows[first_row]
                    .failures
                    .push(format!("n={n}: a scan modified its input or flags"));
            }
        }
    }
    // Flags of the wrong size are refused before anything runs.
    let n = 3 * Op::tile_items();
    let data = stream.alloc_zeros::<Op::Element>(n).unwrap();
    let mut out = stream.alloc_zeros::<Op::Element>(n).unwrap();
    let short = stream.alloc_zeros::<u32>(n.div_ceil(32) - 1).unwrap();
    let heads = DeviceHeadFlags::bits(short.as_view(), n);
    match scanner.scan(
        stream,
        ScanSpec::inclusive().segments(heads),
        &data,
        &mut out,
    ) {
        Err(ScanError::FlagsLength(e)) if e.required == n.div_ceil(32) => {}
        other => rows[first_row]
            .failures
            .push(format!("short flags were not refused: {other:?}")),
    }
    // Words that would fit, built for fewer elements (n - 7 needs as many
    // words as n): refused, the output untouched.
    let words = stream.alloc_zeros::<u32>(n.div_ceil(32)).unwrap();
    let heads = DeviceHeadFlags::bits(words.as_view(), n - 7);
    let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
    poison(stream, &mut out);
    let refused = matches!(
        scanner.scan(stream, ScanSpec::inclusive().segments(heads), &data, &mut out),
        Err(ScanError::FlagsLength(e)) if (e.elements, e.flagged) == (n, n - 7)
    );
    if !refused || !still_poisoned(stream, &out) {
        rows[first_row]
            .failures
            .push("flags for n - 7 elements were taken for n, or the output was written".into());
    }
    scanner.set_tuning(
        scanner
            .tuning()
            .with_segmented_strategy(gpu_scan::Tuning::default().segmented_strategy),
    );
}

/// The GPU flag builders against the CPU ones, on every pattern, with
/// offsets in both widths (empty segments, closing `n`) and keys.
fn check_flag_builders(stream: &Arc<CudaStream>, big: usize, seed: u64, rows: &mut Vec<Row>) {
    let builder = HeadFlagBuilder::new(stream.context()).expect("flag builder");
    let mut row = Row {
        op: "flag builders",
        kind: "offsets u32/u64, keys; bytes/bits",
        lengths: 0,
        elements: 0,
        failures: Vec::new(),
        seconds: 0.0,
    };
    let start = Instant::now();
    for (p, pattern) in patterns::<SumU32>().into_iter().enumerate() {
        for &n in &lengths::<SumU32>(big) {
            let mut rng = Rng64::seed_from_u64(seed ^ 0x3333 ^ (n as u64) ^ (p as u64) << 50);
            let heads = random_heads(n, pattern, &mut rng);
            let offsets = offsets_of(&heads, &mut rng);
            let offsets32: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
            let keys = keys_of(&heads, &mut rng);
            let keys64: Vec<u64> = keys.iter().map(|&k| (k as u64) << 33 | 5).collect();
            let d_offsets = stream.clone_htod(&offsets).unwrap();
            let d_offsets32 = stream.clone_htod(&offsets32).unwrap();
            let d_keys = stream.clone_htod(&keys).unwrap();
            let d_keys64 = stream.clone_htod(&keys64).unwrap();
            for format in FlagFormat::ALL {
                let want = cpu_segmented::heads_from_offsets(&offsets, n, format).unwrap();
                let got = [
                    builder.from_offsets(stream, &d_offsets, n, format).unwrap(),
                    builder
                        .from_offsets(stream, &d_offsets32, n, format)
                        .unwrap(),
                    builder.from_keys(stream, &d_keys, format).unwrap(),
                    builder.from_keys(stream, &d_keys64, format).unwrap(),
                ];
                for (which, g) in ["offsets u64", "offsets u32", "keys u32", "keys u64"]
                    .iter()
                    .zip(got)
                {
                    let host = match g {
                        OwnedDeviceHeadFlags::Bytes(b) => {
                            OwnedHeadFlags::Bytes(stream.clone_dtoh(&b).unwrap())
                        }
                        OwnedDeviceHeadFlags::Bits { words, len } => OwnedHeadFlags::Bits {
                            words: stream.clone_dtoh(&words).unwrap(),
                            len,
                        },
                    };
                    if host != want {
                        row.failures.push(format!(
                            "{} n={n} {which} {format:?}: flags differ from the CPU's",
                            pattern.label()
                        ));
                    }
                }
            }
            // Writing into a poisoned buffer of the caller's clears it first.
            let mut words = unsafe { stream.alloc::<u32>(n.div_ceil(32)) }.unwrap();
            poison(stream, &mut words);
            builder
                .offsets_into(stream, &d_offsets, n, &mut words)
                .unwrap();
            let want = cpu_segmented::heads_from_offsets(&offsets, n, FlagFormat::Bits).unwrap();
            let got = OwnedHeadFlags::Bits {
                words: stream.clone_dtoh(&words).unwrap(),
                len: n,
            };
            if got != want {
                row.failures.push(format!(
                    "{} n={n}: offsets_into left poison",
                    pattern.label()
                ));
            }
            row.lengths += 1;
            row.elements += n;
        }
    }
    // Offsets that are not row pointers are refused with the CPU's error,
    // the caller's buffer untouched.
    let bad: [(&[u64], usize); 4] = [
        (&[0, 2, 6, 9], 6),
        (&[0, 4, 2, 6], 6),
        (&[1], 0),
        (&[0, 5, 5, 4, 7, 7, 7, 7, 3, 100], 7),
    ];
    for (offsets, n) in bad {
        let want = cpu_segmented::heads_from_offsets(offsets, n, FlagFormat::Bytes).unwrap_err();
        for wide in [true, false] {
            let mut out = stream.clone_htod(&vec![0xa5u8; n]).unwrap();
            let got = if wide {
                let d = stream.clone_htod(offsets).unwrap();
                builder.offsets_into(stream, &d, n, &mut out)
            } else {
                let narrow: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
                let d = stream.clone_htod(&narrow).unwrap();
                builder.offsets_into(stream, &d, n, &mut out)
            };
            let untouched = stream.clone_dtoh(&out).unwrap() == vec![0xa5u8; n];
            match got {
                Err(ScanError::InvalidOffsets(e)) if e == want && untouched => {}
                other => row.failures.push(format!(
                    "offsets {offsets:?} for {n} elements ({} bits): {other:?} (want {want:?}), buffer untouched: {untouched}",
                    if wide { 64 } else { 32 }
                )),
            }
        }
    }
    // A flag buffer of the wrong size is refused.
    let keys = stream.alloc_zeros::<u32>(100).unwrap();
    let mut small = stream.alloc_zeros::<u8>(99).unwrap();
    if !matches!(
        builder.keys_into(stream, &keys, &mut small),
        Err(ScanError::FlagsLength(_))
    ) {
        row.failures.push("a short output was not refused".into());
    }
    row.seconds = start.elapsed().as_secs_f64();
    rows.push(row);
}

#[test]
fn gpu_segmented_suite() {
    let Some(ctx) = open_gpu("gpu_segmented") else {
        return;
    };
    let seed = suite_seed();
    let big = std::env::var("GPU_SEGMENTED_BIG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or((1usize << 22) + 7);
    println!(
        "gpu_segmented: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays), largest length {big}, directions {:?}",
        ctx.name().unwrap(),
        suite_directions()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    run_op::<SumU32>(&stream, big, seed, &mut rows);
    run_op::<AffineU32>(&stream, big, seed, &mut rows);
    run_op::<Mat2>(&stream, big, seed, &mut rows);
    run_op::<Latest>(&stream, big, seed, &mut rows);
    run_op::<JoinSpans>(&stream, big, seed, &mut rows);
    run_op::<Affine>(&stream, big, seed, &mut rows);
    run_op::<MaxF32>(&stream, big, seed, &mut rows);
    run_op::<SumU32Small>(&stream, big / 4, seed, &mut rows);
    if suite_runs_op("flag_builders") {
        check_flag_builders(&stream, big, seed, &mut rows);
    }
    let failed = print_rows(&rows);
    println!(
        "gpu_segmented: {} rows, {} passed, {failed} failed (seed {seed}{})",
        rows.len(),
        rows.len() - failed,
        suite_ops_note()
    );
    assert_eq!(
        failed, 0,
        "segmented GPU results differ from the CPU (seed {seed})"
    );
}
