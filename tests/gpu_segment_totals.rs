//! Per-segment totals on the GPU (`ScanSpec::segment_totals`) beyond the
//! suites: `gpu_rows` and `gpu_offsets` check them on every path, kind,
//! direction and strategy for segments in device memory; this test checks
//! the host conveniences (`GpuScanner::scan_host`, which counts flags' and
//! keys' segments on the host and sends them as offsets), a scan without
//! segments (one segment), offsets that are not a full set of row pointers
//! (elements before the first and after the last offset belong to no
//! window), and the refusals: device flags and keys (uncounted), slots of
//! another length, each leaving the output and the slot untouched. Counted
//! totals (`ScanSpec::counted_segment_totals`) are cycled through every
//! path by the suites; here the host convenience, a scan without segments,
//! five million one-element segments and a count slot of the wrong length.
//! Non-commutative operators (affine maps, 2 × 2 matrices, keep-latest) and
//! a sum, every kind forward and in reverse, lengths 0, 1, 31, 33, a tile
//! ± 1, many tiles + 5 and about 10^5, each against the CPU backend.
//! Without a GPU it prints one line and passes.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::*;
use common::ops::*;
use common::segments::*;
use common::specs::*;
use gpu_scan::cudarc::driver::CudaStream;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::{DeviceHeadFlags, DeviceOffsets, DeviceSegments};
use gpu_scan::segmented::{HeadFlags, SegmentTotalsLength, Segments};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// The host segments of one case, each way they can be given.
fn host_cases<Op: Case>(n: usize, rng: &mut Rng64) -> Vec<(String, Segments<'static>)> {
    let pattern = match rng.random_range(0..4) {
        0 => Pattern::EveryElement,
        1 => Pattern::OneSegment,
        2 => Pattern::MeanLength(7.0),
        _ => Pattern::MeanLength(1000.0),
    };
    let flags = random_heads(n, pattern, rng);
    let bits = pack_bits(&flags, rng);
    let keys: Vec<u16> = keys_of(&flags, rng).iter().map(|&k| k as u16).collect();
    let offsets = offsets_of(&flags, rng);
    // Offsets that are not a full set of row pointers: a window inside.
    let inner: Vec<u32> = if n > 2 {
        let a = rng.random_range(0..n / 2) as u32;
        let b = rng.random_range(a as usize..n) as u32;
        vec![a, a, b]
    } else {
        vec![]
    };
    let row_length = [1, 3, 32, Op::tile_items() + 1]
        .into_iter()
        .filter(|&l| n % l == 0)
        .max()
        .unwrap_or(1);
    let leak = |v: Vec<u8>| -> &'static [u8] { Box::leak(v.into_boxed_slice()) };
    let label = pattern.label();
    vec![
        (
            format!("byte flags, {label}"),
            Segments::Flags(HeadFlags::Bytes(leak(flags))),
        ),
        (
            format!("bit flags, {label}"),
            Segments::Flags(HeadFlags::bits(Box::leak(bits.into_boxed_slice()), n)),
        ),
        (
            format!("u16 keys, {label}"),
            Segments::keys(&*Box::leak(keys.into_boxed_slice())),
        ),
        (
            format!("u64 offsets, {label}"),
            Segments::offsets(&*Box::leak(offsets.into_boxed_slice())),
        ),
        (
            format!("inner offsets {inner:?}"),
            Segments::offsets(&*Box::leak(inner.into_boxed_slice())),
        ),
        (format!("rows of {row_length}"), Segments::rows(row_length)),
    ]
}

/// `GpuScanner::scan_host` with every segment source and a totals slot,
/// against the CPU backend.
fn host_totals<Op: Case>(stream: &Arc<CudaStream>, seed: u64, row: &mut Row) {
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let mut rng = Rng64::seed_from_u64(seed ^ 0x7070);
    let init = Op::random(&mut rng);
    let t = Op::tile_items();
    for n in [0, 1, 31, 33, t - 1, t + 1, 37 * t + 5, 100_003] {
        let input = random_input::<Op>(n, seed ^ n as u64);
        for (label, segments) in host_cases::<Op>(n, &mut rng) {
            for (name, spec) in every_named_spec(init, &[Direction::Forward, Direction::Reverse]) {
                let count = gpu_scan::segmented::segment_ranges(segments, n).len();
                let what = format!("{} n={n} {label} {name}", Op::NAME);
                let mut want = vec![Op::IDENTITY; count];
                let cpu = Scanner::<Op>::cpu()
                    .scan(
                        spec.segments(segments).segment_totals(&mut want[..]),
                        &input,
                    )
                    .unwrap();
                let mut got = vec![Op::IDENTITY; count];
                row.lengths += 1;
                row.elements += n;
                match scanner.scan_host(
                    stream,
                    spec.segments(segments).segment_totals(&mut got[..]),
                    &input,
                ) {
                    Ok(out) => {
                        compare::<Op>(&what, n, &out, &cpu, &mut row.failures);
                        compare::<Op>(
                            &format!("{what} totals"),
                            count,
                            &got,
                            &want,
                            &mut row.failures,
                        );
                    }
                    Err(e) => row.failures.push(format!("{what}: {e}")),
                }
            }
        }
        // Without segments: one segment, the carry-out.
        let spec = ScanSpec::exclusive_with_init(init).reverse();
        let (mut want, mut got) = ([Op::IDENTITY], [Op::IDENTITY]);
        Scanner::<Op>::cpu()
            .scan(spec.segment_totals(&mut want), &input)
            .unwrap();
        match scanner.scan_host(stream, spec.segment_totals(&mut got), &input) {
            Ok(_) if Op::close(&got[0], &want[0]) => {}
            other => row.failures.push(format!(
                "n={n} without segments: {:?}, total gpu {:?} cpu {:?}",
                other.err(),
                got[0],
                want[0]
            )),
        }
    }
}

/// Refusals on the device, each leaving the output and the slot poisoned.
fn refusals<Op: Case>(stream: &Arc<CudaStream>, row: &mut Row) {
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let n = 3 * Op::tile_items() + 7;
    let input = stream.alloc_zeros::<Op::Element>(n).unwrap();
    let flags = stream.alloc_zeros::<u8>(n).unwrap();
    let bits = stream.alloc_zeros::<u32>(n.div_ceil(32)).unwrap();
    let keys = stream.alloc_zeros::<u32>(n).unwrap();
    let row_ptr = stream.clone_htod(&[0u32, 5, 5, n as u32]).unwrap();
    let offsets = DeviceOffsets::check(stream, row_ptr.as_view(), n).unwrap();
    type Refusal<'a> = (
        &'static str,
        DeviceSegments<'a>,
        usize,
        fn(&ScanError) -> bool,
    );
    let uncounted: fn(&ScanError) -> bool =
        |e| matches!(e, ScanError::SegmentTotalsUncounted { .. });
    let cases: Vec<Refusal<'_>> = vec![
        ("byte flags", DeviceSegments::from(&flags), 1, uncounted),
        (
            "bit flags",
            DeviceHeadFlags::bits(bits.as_view(), n).into(),
            1,
            uncounted,
        ),
        ("keys", DeviceSegments::keys(&keys), 1, uncounted),
        ("rows, one short", DeviceSegments::rows(n), 0, |e| {
            matches!(
                e,
                ScanError::SegmentTotalsLength(SegmentTotalsLength {
                    slot: 0,
                    segments: 1
                })
            )
        }),
        (
            "offsets, one long",
            DeviceSegments::from(&offsets),
            4,
            |e| {
                matches!(
                    e,
                    ScanError::SegmentTotalsLength(SegmentTotalsLength {
                        slot: 4,
                        segments: 3
                    })
                )
            },
        ),
    ];
    for (label, segments, slot_len, expected) in cases {
        let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        let mut slot = unsafe { stream.alloc::<Op::Element>(slot_len + 1) }.unwrap();
        poison(stream, &mut out);
        poison(stream, &mut slot);
        let mut view = slot.slice_mut(..slot_len);
        let spec = ScanSpec::exclusive()
            .segments(segments)
            .segment_totals(&mut view);
        let got = scanner.scan(stream, spec, &input, &mut out);
        row.lengths += 1;
        let untouched = still_poisoned(stream, &out) && still_poisoned(stream, &slot);
        if !got.as_ref().is_err_and(expected) || !untouched {
            row.failures.push(format!(
                "{label}: {got:?}, output and slot untouched: {untouched}"
            ));
        }
    }
    // A scan without segments is one segment: a slot of two is refused.
    let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
    let mut slot = unsafe { stream.alloc::<Op::Element>(2) }.unwrap();
    poison(stream, &mut out);
    poison(stream, &mut slot);
    let got = scanner.scan(
        stream,
        ScanSpec::inclusive().segment_totals(&mut slot),
        &input,
        &mut out,
    );
    let want = SegmentTotalsLength {
        slot: 2,
        segments: 1,
    };
    let refused = matches!(got, Err(ScanError::SegmentTotalsLength(e)) if e == want);
    row.lengths += 1;
    if !refused || !still_poisoned(stream, &out) || !still_poisoned(stream, &slot) {
        row.failures
            .push(format!("a slot of two without segments: {got:?}"));
    }
}

/// Counted totals (`ScanSpec::counted_segment_totals`) beyond the suites'
/// paths (`gpu_carry`, `gpu_keys`, `gpu_rows` and `gpu_offsets` cycle
/// through them): the host convenience, a scan without segments (one
/// segment), millions of one-element segments (the starts' chunk ranks in
/// more than one step of their scan), and a count slot of two elements
/// (refused, nothing written).
fn counted<Op: Case>(stream: &Arc<CudaStream>, seed: u64, row: &mut Row) {
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let mut rng = Rng64::seed_from_u64(seed ^ 0xc0c0);
    let init = Op::random(&mut rng);
    let t = Op::tile_items();
    // The host convenience, keys, half the segments' totals.
    for n in [0, 1, 33, t + 1, 100_003] {
        let input = random_input::<Op>(n, seed ^ n as u64);
        let flags = random_heads(n, Pattern::MeanLength(7.0), &mut rng);
        let keys: Vec<u16> = keys_of(&flags, &mut rng)
            .iter()
            .map(|&k| k as u16)
            .collect();
        let segments = Segments::keys(&keys[..]);
        let count = gpu_scan::segmented::segment_ranges(segments, n).len();
        for (name, spec) in every_named_spec(init, &[Direction::Forward, Direction::Reverse]) {
            let what = format!("{} n={n} host keys {name}", Op::NAME);
            let (mut want, mut want_count) = (vec![Op::IDENTITY; count / 2], 0);
            Scanner::<Op>::cpu()
                .scan(
                    spec.segments(segments)
                        .counted_segment_totals(&mut want[..], &mut want_count),
                    &input,
                )
                .unwrap();
            let (mut got, mut got_count) = (vec![Op::IDENTITY; count / 2], 0);
            row.lengths += 1;
            row.elements += n;
            let spec = spec
                .segments(segments)
                .counted_segment_totals(&mut got[..], &mut got_count);
            match scanner.scan_host(stream, spec, &input) {
                Ok(_) if got_count == count && want_count == count => {
                    compare::<Op>(&what, got.len(), &got, &want, &mut row.failures)
                }
                other => row.failures.push(format!(
                    "{what}: {:?}, count gpu {got_count} cpu {want_count}, want {count}",
                    other.err()
                )),
            }
        }
    }
    // Without segments: one segment, its total where the slot has room.
    let n = 5 * t + 3;
    let input = random_input::<Op>(n, seed ^ 0x55);
    let d_input = stream.clone_htod(&input).unwrap();
    for capacity in [0, 1, 2] {
        let spec = ScanSpec::exclusive_with_init(init).reverse();
        let mut want = Op::IDENTITY;
        Scanner::<Op>::cpu()
            .scan(spec.carry_out(&mut want), &input)
            .unwrap();
        let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        let mut totals = unsafe { stream.alloc::<Op::Element>(capacity + 1) }.unwrap();
        let mut count = unsafe { stream.alloc::<u64>(1) }.unwrap();
        poison(stream, &mut totals);
        poison(stream, &mut count);
        let mut view = totals.slice_mut(..capacity);
        let got = scanner.scan(
            stream,
            spec.counted_segment_totals(&mut view, &mut count),
            &d_input,
            &mut out,
        );
        let got_totals = stream.clone_dtoh(&totals).unwrap();
        let got_count = stream.clone_dtoh(&count).unwrap()[0];
        row.lengths += 1;
        let total_ok = capacity == 0 || Op::close(&got_totals[0], &want);
        let rest_ok = poisoned(&got_totals[capacity.min(1)..]);
        if got.is_err() || got_count != 1 || !total_ok || !rest_ok {
            row.failures.push(format!(
                "without segments, capacity {capacity}: {got:?}, count {got_count}, total {:?} cpu {want:?}, rest untouched {rest_ok}",
                got_totals[0]
            ));
        }
    }
    // Millions of one-element segments, by bit flags: the starts' ranks
    // take two steps of their one-block scan.
    let n = 5_000_003;
    let input = random_input::<Op>(n, seed ^ 0x77);
    let d_input = stream.clone_htod(&input).unwrap();
    let words = stream.clone_htod(&vec![u32::MAX; n.div_ceil(32)]).unwrap();
    for (name, spec, capacity) in [
        ("inclusive", ScanSpec::inclusive(), n),
        (
            "reverse exclusive+init",
            ScanSpec::exclusive_with_init(init).reverse(),
            n - 1000,
        ),
    ] {
        let flags = vec![1u8; n];
        let mut want = vec![Op::IDENTITY; n];
        gpu_scan::segmented::par_scan::<Op>(
            spec.segment_totals(&mut want[..]),
            Segments::Flags(HeadFlags::Bytes(&flags)),
            &input,
            &mut vec![Op::IDENTITY; n],
        )
        .unwrap();
        let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        let mut totals = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        let mut count = unsafe { stream.alloc::<u64>(1) }.unwrap();
        poison(stream, &mut totals);
        let mut view = totals.slice_mut(..capacity);
        let got = scanner.scan(
            stream,
            spec.segments(DeviceHeadFlags::bits(words.as_view(), n))
                .counted_segment_totals(&mut view, &mut count),
            &d_input,
            &mut out,
        );
        let got_totals = stream.clone_dtoh(&totals).unwrap();
        let got_count = stream.clone_dtoh(&count).unwrap()[0];
        row.lengths += 1;
        row.elements += n;
        let what = format!("{} n={n} every element a segment, {name}", Op::NAME);
        if got.is_err() || got_count != n as u64 || !poisoned(&got_totals[capacity..]) {
            row.failures.push(format!(
                "{what}: {got:?}, count {got_count}, past the capacity untouched {}",
                poisoned(&got_totals[capacity..])
            ));
        }
        compare::<Op>(
            &what,
            capacity,
            &got_totals[..capacity],
            &want[..capacity],
            &mut row.failures,
        );
    }
    // A count slot of two elements: refused, nothing written.
    let flags = stream.alloc_zeros::<u8>(n).unwrap();
    let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
    let mut totals = unsafe { stream.alloc::<Op::Element>(4) }.unwrap();
    let mut count = unsafe { stream.alloc::<u64>(2) }.unwrap();
    for buf in [&mut out, &mut totals] {
        poison(stream, buf);
    }
    poison(stream, &mut count);
    let got = scanner.scan(
        stream,
        ScanSpec::inclusive()
            .segments(&flags)
            .counted_segment_totals(&mut totals, &mut count),
        &d_input,
        &mut out,
    );
    row.lengths += 1;
    let untouched = still_poisoned(stream, &out)
        && still_poisoned(stream, &totals)
        && still_poisoned(stream, &count);
    if !matches!(got, Err(ScanError::SegmentCountLength { len: 2 })) || !untouched {
        row.failures.push(format!(
            "a count slot of two: {got:?}, everything untouched: {untouched}"
        ));
    }
}

fn run_op<Op: Case>(stream: &Arc<CudaStream>, seed: u64, rows: &mut Vec<Row>) {
    let mut row = Row {
        op: Op::NAME,
        kind: "segment totals: host, refusals, counted",
        lengths: 0,
        elements: 0,
        failures: Vec::new(),
        seconds: 0.0,
    };
    let start = std::time::Instant::now();
    host_totals::<Op>(stream, seed, &mut row);
    refusals::<Op>(stream, &mut row);
    counted::<Op>(stream, seed, &mut row);
    row.seconds = start.elapsed().as_secs_f64();
    rows.push(row);
}

#[test]
fn gpu_segment_totals() {
    let Some(ctx) = open_gpu("gpu_segment_totals") else {
        return;
    };
    let seed = suite_seed();
    println!(
        "gpu_segment_totals: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays)",
        ctx.name().unwrap()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    run_op::<SumU32>(&stream, seed, &mut rows);
    run_op::<AffineU32>(&stream, seed, &mut rows);
    run_op::<Mat2>(&stream, seed, &mut rows);
    run_op::<Latest>(&stream, seed, &mut rows);
    let failed = print_rows(&rows);
    println!(
        "gpu_segment_totals: {} rows, {} passed, {failed} failed (seed {seed})",
        rows.len(),
        rows.len() - failed
    );
    assert_eq!(
        failed, 0,
        "GPU segment totals differ from the CPU (seed {seed})"
    );
}
