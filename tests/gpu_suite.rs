//! The GPU suite: every kind (inclusive, exclusive, exclusive with init, and
//! each in place), forward and in reverse (`GPU_SUITE_DIRECTIONS=forward`
//! or `reverse` runs one), for every test operator, through the three paths (the
//! pipelined single pass, the single pass with decoupled look-back, and
//! reduce-then-scan; the longest inputs through the default pipelined path
//! only, which runs as the plain single pass where it cannot), over lengths at every boundary,
//! on fresh random inputs (seed printed; set GPU_SUITE_SEED to replay), with
//! outputs poisoned before each run and every element compared with the CPU
//! backend. Without a GPU it prints one line and passes.
//!
//! Float tolerances (integers and exactly associative float operators are
//! compared bit for bit):
//! * `Affine` (f32): inputs a ∈ [0.5, 0.95), b ∈ [0, 1): every term of every
//!   output is positive, so there is no cancellation, and each term's weight
//!   decays geometrically (a ≤ 0.95), so an output depends on ~100 recent
//!   terms. Each reassociation changes each term by at most ~2·log2(n) + 40
//!   roundings of u = 2^-24, under 2^-16 relative: tolerance 1e-4 relative,
//!   with an absolute floor of 1e-30 for products that underflow.
//! * `Stats` (f64 sum of values in [0, 1)): for positive terms any
//!   summation order is within n·u·Σx of the exact sum (Higham), so two
//!   orders differ by at most 2·n·u relative = 6e-8 at n = 2^28 with
//!   u = 2^-53: tolerance 1e-7 relative. `count` and `max` are exact.
//! * `Mat2` (f32): inputs are the 8 elements of the dihedral group D4 (entries
//!   0, ±1), closed under products, so every result is exact and compared
//!   bit for bit: the test is about order, which D4 exposes (it is not
//!   commutative).
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::*;
use common::ops::*;
use common::specs::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::CudaStream;
use gpu_scan::scan_runtime::ScanPath;
use gpu_scan::Tuning;
use rand::SeedableRng;
use std::sync::Arc;
use std::time::Instant;

/// Scans every length of `lengths` in every kind and direction (reverse
/// scans only up to `reverse_up_to` elements) on `path`.
fn run_op<Op: Case>(
    stream: &Arc<CudaStream>,
    path: ScanPath,
    lengths: &[usize],
    reverse_up_to: usize,
    seed: u64,
    rows: &mut Vec<Row>,
) {
    if !suite_runs_op(Op::NAME) {
        return;
    }
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    scanner.set_tuning(scanner.tuning().with_path(path));
    let init = {
        let mut rng = Rng64::seed_from_u64(seed ^ 0x1111);
        Op::random(&mut rng)
    };
    let directions = suite_directions();
    let kinds = named_specs(init, &directions);
    let mut per_kind: Vec<Row> = kinds
        .iter()
        .flat_map(|(name, _)| {
            [false, true].map(|in_place| Row {
                op: Op::NAME,
                kind: leak(format!(
                    "{name}{} [{path:?}]",
                    if in_place { " in place" } else { "" }
                )),
                lengths: 0,
                elements: 0,
                failures: Vec::new(),
                seconds: 0.0,
            })
        })
        .collect();
    for &n in lengths {
        let input = random_input::<Op>(n, seed ^ n as u64);
        let d_input = if n > 0 {
            Some(stream.clone_htod(&input).unwrap())
        } else {
            None
        };
        for (k, (_, kind)) in kinds.iter().enumerate() {
            if kind.is_reverse() && n > reverse_up_to {
                continue;
            }
            let mut expected = vec![Op::IDENTITY; n];
            cpu::par_scan::<Op>(*kind, &input, &mut expected).unwrap();
            for in_place in [false, true] {
                let row = &mut per_kind[2 * k + usize::from(in_place)];
                let start = Instant::now();
                let got = if n == 0 {
                    let mut empty_in = stream.alloc_zeros::<Op::Element>(0).unwrap();
                    let mut empty_out = stream.alloc_zeros::<Op::Element>(0).unwrap();
                    if in_place {
                        scanner.scan_in_place(stream, *kind, &mut empty_in).unwrap();
                    } else {
                        scanner
                            .scan(stream, *kind, &empty_in, &mut empty_out)
                            .unwrap();
                    }
                    Vec::new()
                } else if in_place {
                    let mut data = stream.clone_htod(&input).unwrap();
                    scanner.scan_in_place(stream, *kind, &mut data).unwrap();
                    stream.clone_dtoh(&data).unwrap()
                } else {
                    let src = d_input.as_ref().unwrap();
                    let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
                    poison(stream, &mut out);
                    scanner.scan(stream, *kind, src, &mut out).unwrap();
                    stream.clone_dtoh(&out).unwrap()
                };
                stream.synchronize().unwrap();
                row.seconds += start.elapsed().as_secs_f64();
                row.lengths += 1;
                row.elements += n;
                compare::<Op>(row.kind, n, &got, &expected, &mut row.failures);
            }
        }
        // Views one element into the buffers: input and output no longer
        // 16-byte aligned, so whole tiles take the element-wise loads and
        // stores instead of the vector ones.
        if (2..=1 << 21).contains(&n) {
            for (k, (_, kind)) in kinds.iter().enumerate() {
                if kind.kind != ScanKind::Inclusive {
                    continue;
                }
                let mut expected = vec![Op::IDENTITY; n - 1];
                cpu::par_scan::<Op>(*kind, &input[1..], &mut expected).unwrap();
                let src = d_input.as_ref().unwrap();
                let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
                poison(stream, &mut out);
                let mut out_view = out.slice_mut(1..);
                scanner
                    .scan(stream, *kind, &src.slice(1..), &mut out_view)
                    .unwrap();
                let got = stream.clone_dtoh(&out).unwrap();
                let row = &mut per_kind[2 * k];
                row.lengths += 1;
                row.elements += n - 1;
                if !poisoned(&got[..1]) {
                    row.failures
                        .push(format!("n={n}: a misaligned view's scan wrote before it"));
                }
                compare::<Op>(
                    "misaligned views",
                    n - 1,
                    &got[1..],
                    &expected,
                    &mut row.failures,
                );
            }
        }
        // The out-of-place scans never wrote their input.
        if let Some(d) = &d_input {
            let after = stream.clone_dtoh(d).unwrap();
            if after != input {
                per_kind[0]
                    .failures
                    .push(format!("n={n}: out-of-place scans modified the input"));
            }
        }
    }
    // Inputs in full-size tiles of the single passes (the default scans
    // short ones in small tiles): one, two and 33 tiles (a whole look-back
    // window and one more), each ± 1, inclusive and exclusive with init. On
    // the pipelined path those are the pipelined tiles, plus lengths one
    // short of a bulk-copy unit (tail elements read and written directly).
    if path != ScanPath::ReduceThenScan {
        let mut full = GpuScanner::<Op>::new(stream.context()).expect("scanner");
        full.set_tuning(full.tuning().with_path(path).with_small_tile_limit(0));
        let pipelined =
            gpu_scan::kernels_gen::pipelined_tile_items(std::mem::size_of::<Op::Element>());
        let t = if path == ScanPath::Pipelined
            && gpu_scan::kernels_gen::pipelined_supported(std::mem::size_of::<Op::Element>())
        {
            pipelined
        } else {
            Op::tile_items()
        };
        let mut row = Row {
            op: Op::NAME,
            kind: leak(format!("incl/excl+init, full-size tiles [{path:?}]")),
            lengths: 0,
            elements: 0,
            failures: Vec::new(),
            seconds: 0.0,
        };
        for n in [
            t + 1,
            2 * t - 1,
            2 * t,
            2 * t + 1,
            2 * t + 3,
            5 * t + 2,
            33 * t - 1,
            33 * t + 1,
            300 * t + 5,
        ] {
            let input = random_input::<Op>(n, seed ^ n as u64 ^ 0x5eed);
            let src = stream.clone_htod(&input).unwrap();
            let full_kinds = kinds.iter().map(|(_, spec)| *spec).filter(|spec| {
                spec.kind == ScanKind::Inclusive
                    || matches!(spec.kind, ScanKind::ExclusiveWithInit(_))
            });
            for kind in full_kinds {
                let mut expected = vec![Op::IDENTITY; n];
                cpu::par_scan::<Op>(kind, &input, &mut expected).unwrap();
                let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
                poison(stream, &mut out);
                let start = Instant::now();
                full.scan(stream, kind, &src, &mut out).unwrap();
                let got = stream.clone_dtoh(&out).unwrap();
                row.seconds += start.elapsed().as_secs_f64();
                row.lengths += 1;
                row.elements += n;
                compare::<Op>(row.kind, n, &got, &expected, &mut row.failures);
            }
        }
        per_kind.push(row);
    }
    // The in-memory cache: a second scanner of the same operator in the same
    // context, scanning as the first did (first kind and direction, same
    // path), compiles and loads nothing.
    let mut second = GpuScanner::<Op>::new(stream.context()).expect("second scanner");
    second.set_tuning(second.tuning().with_path(path));
    let n = lengths.iter().copied().max().unwrap_or(0);
    let mut data = stream.alloc_zeros::<Op::Element>(n).unwrap();
    second.scan_in_place(stream, kinds[0].1, &mut data).unwrap();
    let stats = second.program_stats();
    if stats.origin != gpu_scan::scan_runtime::ProgramOrigin::Memory || stats.kernels_loaded != 0 {
        per_kind[0].failures.push(format!(
            "a second scanner in the same context loaded kernels again: {stats:?}"
        ));
    }

    // A second scan of the same size and kind allocates no scratch.
    if let Some(&n) = lengths.iter().filter(|&&n| n > Op::tile_items()).max() {
        let mut data = stream.alloc_zeros::<Op::Element>(n).unwrap();
        scanner
            .scan_in_place(stream, kinds[0].1, &mut data)
            .unwrap();
        let before = scanner.workspace_allocations();
        scanner
            .scan_in_place(stream, kinds[0].1, &mut data)
            .unwrap();
        if scanner.workspace_allocations() != before {
            per_kind[0]
                .failures
                .push("repeated scans of one size allocated scratch".into());
        }
    }
    rows.extend(per_kind);
}

fn lengths_for<Op: ScanOp>(big: usize) -> Vec<usize> {
    let t = Op::tile_items();
    // The pipelined tiles (equal to `t` where the element cannot take them).
    let p = match gpu_scan::kernels_gen::pipelined_tile_items(std::mem::size_of::<Op::Element>()) {
        p if gpu_scan::kernels_gen::pipelined_supported(std::mem::size_of::<Op::Element>()) => p,
        _ => t,
    };
    let small = (Op::BLOCK_THREADS
        * gpu_scan::kernels_gen::small_items_per_thread(Op::ITEMS_PER_THREAD))
        as usize;
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
        // Small tiles (the single pass up to the default small-tile limit): a
        // look-back window of 32 of them and one more, and the switch.
        33 * small + 1,
        Tuning::default().small_tile_limit,
        Tuning::default().small_tile_limit + 1,
        1000 * t - 1,
        1000 * t + 1,
        1000 * p - 1,
        1000 * p + 1,
        t * t + 1,
        (1 << 20) + 7,
        big,
    ];
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn gpu_suite() {
    let Some(ctx) = open_gpu("gpu_suite") else {
        return;
    };
    let seed = suite_seed();
    let big = std::env::var("GPU_SUITE_BIG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1usize << 28);
    println!(
        "gpu_suite: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays), largest length {big}, directions {:?}",
        ctx.name().unwrap(),
        suite_directions()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    // Every operator and kind through the three paths; the longest inputs
    // (and the u8 input over 2^31) through the default pipelined path only.
    for path in [
        ScanPath::Pipelined,
        ScanPath::SinglePass,
        ScanPath::ReduceThenScan,
    ] {
        let big = match path {
            ScanPath::Pipelined => big,
            ScanPath::SinglePass => (1 << 24) + 3,
            _ => (1 << 21) + 5,
        };
        // Reverse scans at every length (a parameter, to leave long ones out
        // while iterating).
        let rev = usize::MAX;
        run_op::<SumU32>(
            &stream,
            path,
            &lengths_for::<SumU32>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<MaxF32>(
            &stream,
            path,
            &lengths_for::<MaxF32>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<MinI64>(
            &stream,
            path,
            &lengths_for::<MinI64>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<Affine>(
            &stream,
            path,
            &lengths_for::<Affine>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<Stats>(
            &stream,
            path,
            &lengths_for::<Stats>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<Mat2>(
            &stream,
            path,
            &lengths_for::<Mat2>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<AffineU32>(
            &stream,
            path,
            &lengths_for::<AffineU32>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<Latest>(
            &stream,
            path,
            &lengths_for::<Latest>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<JoinSpans>(
            &stream,
            path,
            &lengths_for::<JoinSpans>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<SaturatingLanes>(
            &stream,
            path,
            &lengths_for::<SaturatingLanes>(big),
            rev,
            seed,
            &mut rows,
        );
        // Two modules' `Pair`s in one element (distinct CUDA names).
        run_op::<Pairs>(
            &stream,
            path,
            &lengths_for::<Pairs>(big),
            rev,
            seed,
            &mut rows,
        );
        run_op::<SumU32Small>(
            &stream,
            path,
            &lengths_for::<SumU32Small>(big.min(1 << 24)),
            rev,
            seed,
            &mut rows,
        );
        // Over 2^31 elements of a 1-byte type: 64-bit indexing end to end.
        let huge = std::env::var("GPU_SUITE_HUGE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or((1usize << 31) + (1 << 20) + 3);
        let last = if path == ScanPath::Pipelined {
            huge
        } else {
            big
        };
        run_op::<SumU8>(
            &stream,
            path,
            &[1, 33, SumU8::tile_items() + 1, last],
            usize::MAX,
            seed,
            &mut rows,
        );
    }
    let failed = print_rows(&rows);
    println!(
        "gpu_suite: {} rows, {} passed, {failed} failed (seed {seed}{})",
        rows.len(),
        rows.len() - failed,
        suite_ops_note()
    );
    assert_eq!(
        failed, 0,
        "GPU results differ from the CPU backend (seed {seed})"
    );
}

/// The pipelined single pass over more than 2^31 four-byte elements (8 GiB
/// each way): 64-bit tile indices and element offsets end to end,
/// inclusive and exclusive with an initial value, against the CPU backend.
/// A separate test so that it can run alone (`gpu_suite pipelined_past`).
#[test]
fn pipelined_past_2_pow_31_elements() {
    let Some(ctx) = open_gpu("pipelined_past_2_pow_31_elements") else {
        return;
    };
    let seed = suite_seed();
    let stream = ctx.default_stream();
    let n = (1usize << 31) + 8064 * 3 + 5;
    println!("pipelined_past_2_pow_31_elements: n = {n}, seed {seed}");
    let input = random_input::<SumU32>(n, seed);
    let src = stream.clone_htod(&input).unwrap();
    let mut scanner = GpuScanner::<SumU32>::new(&ctx).expect("scanner");
    scanner.set_tuning(scanner.tuning().with_path(ScanPath::Pipelined));
    let mut failures = Vec::new();
    for kind in [
        ScanKind::Inclusive,
        ScanKind::ExclusiveWithInit(0x9e37_79b9),
    ] {
        let mut expected = vec![0u32; n];
        cpu::par_scan::<SumU32>(kind, &input, &mut expected).unwrap();
        let mut out = unsafe { stream.alloc::<u32>(n) }.unwrap();
        poison(&stream, &mut out);
        scanner.scan(&stream, kind, &src, &mut out).unwrap();
        let got = stream.clone_dtoh(&out).unwrap();
        compare::<SumU32>("pipelined past 2^31", n, &got, &expected, &mut failures);
    }
    assert!(failures.is_empty(), "seed {seed}: {failures:?}");
    println!("pipelined_past_2_pow_31_elements: inclusive and exclusive+init match the CPU");
}
