//! Carry-outs on the GPU ([`ScanSpec::carry_out`]): the scan's last tile in
//! scan order writes what the scan would carry into one more element (a
//! plain scan's seed and every element; a segmented scan's last segment's
//! partial) to a one-element device slot.
//!
//! Plain scans: inclusive, exclusive, and each from an initial value (the
//! carry-in of a chained chunk; the other GPU suites run the first three),
//! forward and in reverse (`GPU_SUITE_DIRECTIONS` runs one), in place and
//! not, through
//! every path (pipelined, look-back single pass in small and full-size
//! tiles, reduce-then-scan, and `Auto`; also small tiles at every length,
//! the interim kernel of background compiles), over lengths 0, 1, 31, 32, 33, a
//! tile ± 1, a pipelined tile ± 1, many tiles ± 1 and a large one, for a
//! sum and non-commutative operators (affine maps, 2×2 matrices,
//! keep-latest), each scan with and without a carry-out (the outputs must
//! not change). Segmented scans by head flags (bytes and bits): every path
//! and strategy through `common::segmented_paths`, which the offsets, rows
//! and keys suites share (each of their scans alternates with and without
//! a carry-out). The slot is the middle element of three poisoned ones;
//! its neighbours must survive, and so must a slot when the scan has none.
//! A slot of 0 or 2 elements is refused with `ScanError::CarryOutLength`
//! and nothing is written. Inputs are fresh random values (seed printed;
//! GPU_SUITE_SEED replays), compared with the CPU backend's outputs and
//! carry-out under the tolerances justified in `tests/gpu_suite.rs`.
//! Without a GPU it prints one line and passes.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::*;
use common::ops::*;
use common::segmented_paths::*;
use common::segments::*;
use common::specs::*;
use gpu_scan::cudarc::driver::CudaStream;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::ScanPath;
use gpu_scan::segmented::{self as cpu_segmented, HeadFlags, Segments};
use rand::SeedableRng;
use std::sync::Arc;
use std::time::Instant;

/// The paths of the plain scans: the three, `Auto`, and the look-back
/// single pass in full-size tiles (`small tiles off`).
/// Which tiles a single pass takes.
#[derive(Clone, Copy, PartialEq)]
enum Tiles {
    /// Small up to the default small-tile limit, full-size past it.
    Default,
    /// Full-size at every length.
    Full,
    /// Small at every length: the interim kernel a scan on `Auto` runs
    /// while its own compiles in the background.
    Small,
}

const PLAIN_PATHS: [(ScanPath, Tiles); 6] = [
    (ScanPath::Auto, Tiles::Default),
    (ScanPath::Pipelined, Tiles::Default),
    (ScanPath::SinglePass, Tiles::Default),
    (ScanPath::SinglePass, Tiles::Full),
    (ScanPath::SinglePass, Tiles::Small),
    (ScanPath::ReduceThenScan, Tiles::Default),
];

/// Lengths at every boundary of the tilings.
fn lengths<Op: ScanOp>(big: usize) -> Vec<usize> {
    let t = Op::tile_items();
    let p = gpu_scan::kernels_gen::pipelined_tile_items(std::mem::size_of::<Op::Element>());
    let mut lengths = vec![0, 1, 31, 32, 33, t - 1, t, t + 1, 3 * t + 17, 33 * t + 1];
    if p > 0 {
        lengths.extend([p - 1, p + 1, 2 * p, 5 * p + 3]);
    }
    lengths.extend([129 * t - 1, big, big + 5]);
    lengths
}

/// One plain scan with or without a carry-out, in place or not; pushes
/// failures to `row`.
#[allow(clippy::too_many_arguments)]
fn plain_scan<Op: Case>(
    scanner: &mut GpuScanner<Op>,
    stream: &Arc<CudaStream>,
    row: &mut Row,
    (name, spec): (&str, ScanSpec<Op::Element>),
    input: &[Op::Element],
    expected: &[Op::Element],
    expected_carry: &Op::Element,
    (in_place, with_carry): (bool, bool),
) {
    let n = input.len();
    let what = format!(
        "n={n} {name}{}{}",
        if in_place { " in place" } else { "" },
        if with_carry { " with carry-out" } else { "" }
    );
    let d_input = stream.clone_htod(input).unwrap();
    let mut out = unsafe { stream.alloc::<Op::Element>(n + GUARD) }.unwrap();
    poison(stream, &mut out);
    let mut slot = unsafe { stream.alloc::<Op::Element>(3) }.unwrap();
    poison(stream, &mut slot);
    let mut view = out.slice_mut(..n);
    let mut carry = slot.slice_mut(1..2);
    if in_place {
        stream.memcpy_dtod(&d_input, &mut view).unwrap();
    }
    let result = match (in_place, with_carry) {
        (true, true) => scanner.scan_in_place(stream, spec.carry_out(&mut carry), &mut view),
        (true, false) => scanner.scan_in_place(stream, spec, &mut view),
        (false, true) => scanner.scan(stream, spec.carry_out(&mut carry), &d_input, &mut view),
        (false, false) => scanner.scan(stream, spec, &d_input, &mut view),
    };
    if let Err(e) = result {
        row.failures.push(format!("{what}: {e}"));
        return;
    }
    let got = stream.clone_dtoh(&out).unwrap();
    let got_slot = stream.clone_dtoh(&slot).unwrap();
    row.lengths += 1;
    row.elements += n;
    compare::<Op>(&what, n, &got[..n], expected, &mut row.failures);
    if !poisoned(&got[n..]) {
        row.failures.push(format!(
            "{what}: the guard band after the output was written"
        ));
    }
    check_carry::<Op>(
        &what,
        with_carry,
        &got_slot,
        expected_carry,
        &mut row.failures,
    );
    if !in_place && stream.clone_dtoh(&d_input).unwrap() != input {
        row.failures
            .push(format!("{what}: the scan modified its input"));
    }
}

fn run_plain<Op: Case>(stream: &Arc<CudaStream>, big: usize, seed: u64, rows: &mut Vec<Row>) {
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x2222));
    let specs = every_named_spec(init, &suite_directions());
    for (path, tiles) in PLAIN_PATHS {
        let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
        let tuning = scanner.tuning().with_path(path);
        scanner.set_tuning(match tiles {
            Tiles::Default => tuning,
            Tiles::Full => tuning.with_small_tile_limit(0),
            Tiles::Small => tuning.with_small_tile_limit(usize::MAX),
        });
        let mut row = Row {
            op: Op::NAME,
            kind: leak(format!(
                "plain [{path:?}{}]",
                match tiles {
                    Tiles::Default => "",
                    Tiles::Full => ", full tiles",
                    Tiles::Small => ", small tiles (background compiles' interim)",
                }
            )),
            lengths: 0,
            elements: 0,
            failures: Vec::new(),
            seconds: 0.0,
        };
        let start = Instant::now();
        for (c, &n) in lengths::<Op>(big).iter().enumerate() {
            let input = random_input::<Op>(n, seed ^ (n as u64).wrapping_mul(77) ^ c as u64);
            for (k, &(name, spec)) in specs.iter().enumerate() {
                let mut expected = vec![Op::IDENTITY; n];
                let mut expected_carry = Op::IDENTITY;
                cpu::par_scan::<Op>(spec.carry_out(&mut expected_carry), &input, &mut expected)
                    .unwrap();
                // Every scan with a carry-out; every other one also without
                // (the outputs and the untouched slot), alternating in place.
                let in_place = (c + k) % 2 == 1;
                for with_carry in [true, false] {
                    if with_carry || (c + k) % 3 == 0 {
                        plain_scan(
                            &mut scanner,
                            stream,
                            &mut row,
                            (name, spec),
                            &input,
                            &expected,
                            &expected_carry,
                            (in_place, with_carry),
                        );
                    }
                }
            }
        }
        row.seconds = start.elapsed().as_secs_f64();
        rows.push(row);
    }
}

/// Segmented scans by head flags, bytes and bits, through every path and
/// strategy, with and without carry-outs.
fn run_flags<Op: Case>(stream: &Arc<CudaStream>, big: usize, seed: u64, rows: &mut Vec<Row>) {
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x3333));
    let specs = every_named_spec(init, &suite_directions());
    let first_row = path_rows::<Op>("flags", rows);
    let t = Op::tile_items();
    let cases = [
        (0, Pattern::MeanLength(7.0)),
        (1, Pattern::EveryElement),
        (33, Pattern::OneSegment),
        (t - 1, Pattern::MeanLength(7.0)),
        (t + 1, Pattern::MeanLength(1000.0)),
        (
            129 * t - 1,
            Pattern::Stride {
                stride: t,
                extra_mean: 3000.0,
            },
        ),
        (big + 5, Pattern::MeanLength(1000.0)),
        (big, Pattern::OneSegment),
    ];
    for (c, &(n, pattern)) in cases.iter().enumerate() {
        let case_seed = seed ^ (n as u64).wrapping_mul(31) ^ (c as u64) << 56;
        let mut rng = Rng64::seed_from_u64(case_seed ^ 0x99);
        let input = random_input::<Op>(n, case_seed);
        let flags = random_heads(n, pattern, &mut rng);
        let bits = pack_bits(&flags, &mut rng);
        let d_input = stream.clone_htod(&input).unwrap();
        let d_bytes = stream.clone_htod(&flags).unwrap();
        let d_bits = stream.clone_htod(&bits).unwrap();
        let segment_count = (0..n).filter(|&i| i == 0 || flags[i] != 0).count();
        for (k, &(name, spec)) in specs.iter().enumerate() {
            let mut expected = vec![Op::IDENTITY; n];
            let mut expected_carry = Op::IDENTITY;
            cpu_segmented::par_scan::<Op>(
                spec.carry_out(&mut expected_carry),
                Segments::Flags(HeadFlags::Bytes(&flags)),
                &input,
                &mut expected,
            )
            .unwrap();
            // Every segment's total: the device counts them (counted slots).
            let mut expected_totals = vec![Op::IDENTITY; segment_count];
            cpu_segmented::par_scan::<Op>(
                spec.segment_totals(&mut expected_totals),
                Segments::Flags(HeadFlags::Bytes(&flags)),
                &input,
                &mut vec![Op::IDENTITY; n],
            )
            .unwrap();
            let bytes = (c + k) % 2 == 0;
            let what = format!(
                "n={n} {} ({})",
                pattern.label(),
                if bytes { "bytes" } else { "bits" }
            );
            scan_every_path(
                &mut scanner,
                stream,
                rows,
                first_row,
                (name, spec),
                &what,
                c + k,
                &d_input,
                (&expected, expected_carry, Some(&expected_totals)),
                || {
                    if bytes {
                        DeviceSegments::from(&d_bytes)
                    } else {
                        DeviceHeadFlags::bits(d_bits.as_view(), n).into()
                    }
                },
            );
        }
    }
}

/// Slots that are not one element: refused before anything is enqueued.
fn bad_slots<Op: Case>(stream: &Arc<CudaStream>, rows: &mut Vec<Row>) {
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let mut row = Row {
        op: Op::NAME,
        kind: "slots of 0 and 2 elements refused",
        lengths: 0,
        elements: 0,
        failures: Vec::new(),
        seconds: 0.0,
    };
    let n = 3 * Op::tile_items();
    let input = stream.alloc_zeros::<Op::Element>(n).unwrap();
    let flags = stream.alloc_zeros::<u8>(n).unwrap();
    for len in [0, 2] {
        let mut slot = unsafe { stream.alloc::<Op::Element>(len.max(1)) }.unwrap();
        poison(stream, &mut slot);
        let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        poison(stream, &mut out);
        let mut data = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        poison(stream, &mut data);
        let mut carry = slot.slice_mut(..len);
        let spec = ScanSpec::exclusive().carry_out(&mut carry);
        let results = [
            scanner.scan(stream, spec, &input, &mut out),
            scanner.scan_in_place(
                stream,
                ScanSpec::inclusive().carry_out(&mut carry),
                &mut data,
            ),
            scanner.scan(
                stream,
                ScanSpec::inclusive().carry_out(&mut carry).segments(&flags),
                &input,
                &mut out,
            ),
            scanner.scan_in_place(
                stream,
                ScanSpec::exclusive()
                    .reverse()
                    .carry_out(&mut carry)
                    .segments(&flags),
                &mut data,
            ),
        ];
        row.lengths += 1;
        for (i, result) in results.into_iter().enumerate() {
            if !matches!(result, Err(ScanError::CarryOutLength { len: l }) if l == len) {
                row.failures
                    .push(format!("a slot of {len} in call {i}: {result:?}"));
            }
        }
        for (what, untouched) in [
            ("output", still_poisoned(stream, &out)),
            ("data", still_poisoned(stream, &data)),
            ("slot", still_poisoned(stream, &slot)),
        ] {
            if !untouched {
                row.failures.push(format!(
                    "a slot of {len}: the refused scans wrote the {what}"
                ));
            }
        }
    }
    rows.push(row);
}

#[test]
fn gpu_carry_suite() {
    let Some(ctx) = open_gpu("gpu_carry") else {
        return;
    };
    let seed = suite_seed();
    let big = std::env::var("GPU_CARRY_BIG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1usize << 22);
    println!(
        "gpu_carry: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays), largest length {big}, directions {:?}",
        ctx.name().unwrap(),
        suite_directions()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    run_plain::<SumU32>(&stream, big, seed, &mut rows);
    run_plain::<AffineU32>(&stream, big, seed, &mut rows);
    run_plain::<Mat2>(&stream, big / 4, seed, &mut rows);
    run_plain::<Latest>(&stream, big / 4, seed, &mut rows);
    run_flags::<AffineU32>(&stream, big, seed, &mut rows);
    run_flags::<Latest>(&stream, big / 4, seed, &mut rows);
    bad_slots::<AffineU32>(&stream, &mut rows);
    let failed = print_rows(&rows);
    println!(
        "gpu_carry: {} rows, {} passed, {failed} failed (seed {seed})",
        rows.len(),
        rows.len() - failed
    );
    assert_eq!(
        failed, 0,
        "GPU carry-outs differ from the CPU (seed {seed})"
    );
}
