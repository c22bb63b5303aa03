//! One segmented scan through every path and strategy, for the GPU suites
//! whose segments are not flags (`gpu_rows`, `gpu_offsets`, `gpu_keys`)
//! and `gpu_carry`: result rows per path × strategy, and the scan itself
//! with a poisoned output, a guard band after it, in place or not, with a
//! carry-out or not, compared with the CPU.

#![allow(dead_code)] // each test binary uses a different part

use super::gpu::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream};
use gpu_scan::scan_runtime::{DeviceSegments, ScanPath};
use std::sync::Arc;
use std::time::Instant;

/// Poisoned elements after every output; a scan that writes past its
/// output shows there.
pub const GUARD: usize = 64;

/// Checks a carry-out slot of three elements, the carry-out in the middle
/// (all three poisoned before the scan): the middle one is `want` where
/// the scan had a carry-out and still poisoned where not, and its
/// neighbours are untouched either way.
pub fn check_carry<Op: Case>(
    what: &str,
    with_carry: bool,
    slot: &[Op::Element],
    want: &Op::Element,
    failures: &mut Vec<String>,
) {
    if !poisoned(&slot[..1]) || !poisoned(&slot[2..]) {
        failures.push(format!("{what}: a write next to the carry-out slot"));
    }
    if with_carry && !Op::close(&slot[1], want) {
        failures.push(format!("{what}: carry-out gpu {:?} cpu {want:?}", slot[1]));
    }
    if !with_carry && !poisoned(&slot[1..2]) {
        failures.push(format!("{what}: a carry-out written without a slot"));
    }
}

/// Checks a counted totals slot (`slot`: the totals after one poisoned
/// element, `capacity` of them, then poisoned elements to the end) and its
/// count (`count_slot`: the count between two poisoned `u64`s): the first
/// `min(capacity, segments)` totals as the CPU's, every other element
/// untouched, the count the number of segments.
pub fn check_counted<Op: Case>(
    what: &str,
    (slot, capacity): (&[Op::Element], usize),
    count_slot: &[u64],
    want: &[Op::Element],
    failures: &mut Vec<String>,
) {
    let written = capacity.min(want.len());
    if !poisoned(&slot[..1]) || !poisoned(&slot[1 + written..]) {
        failures.push(format!(
            "{what}: a write outside the {written} counted totals of a slot of {capacity}"
        ));
    }
    let got = &slot[1..1 + written];
    if let Some(r) = (0..written).find(|&r| !Op::close(&got[r], &want[r])) {
        failures.push(format!(
            "{what}: counted total of segment {r} of {}: gpu {:?} cpu {:?}",
            want.len(),
            got[r],
            want[r]
        ));
    }
    if !poisoned(&count_slot[..1]) || !poisoned(&count_slot[2..]) {
        failures.push(format!("{what}: a write next to the segment count"));
    }
    if count_slot[1] != want.len() as u64 {
        failures.push(format!(
            "{what}: segment count gpu {} cpu {}",
            count_slot[1],
            want.len()
        ));
    }
}

/// Checks a per-segment totals slot of `want.len() + 2` elements, the
/// totals between two poisoned guards: every total as the CPU's, the
/// guards untouched.
pub fn check_totals<Op: Case>(
    what: &str,
    slot: &[Op::Element],
    want: &[Op::Element],
    failures: &mut Vec<String>,
) {
    if !poisoned(&slot[..1]) || !poisoned(&slot[slot.len() - 1..]) {
        failures.push(format!("{what}: a write next to the segment totals"));
    }
    let got = &slot[1..slot.len() - 1];
    if let Some(r) = (0..want.len()).find(|&r| !Op::close(&got[r], &want[r])) {
        failures.push(format!(
            "{what}: total of segment {r} of {}: gpu {:?} cpu {:?}",
            want.len(),
            got[r],
            want[r]
        ));
    }
}

/// Where a suite scan's carry-out goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CarryMode {
    None,
    /// A one-element slot: the last segment's partial.
    One,
    /// One total per segment ([`ScanSpec::segment_totals`]).
    Totals,
    /// As many totals as a slot of `capacity` holds, and the count
    /// ([`ScanSpec::counted_segment_totals`]).
    Counted {
        capacity: usize,
    },
}

/// What the CPU computed for one spec: the output, the carry-out, and
/// (where the test checks them) every segment's total.
pub type Expected<'a, E> = (&'a [E], E, Option<&'a [E]>);

/// The three global paths.
pub const PATHS: [ScanPath; 3] = [
    ScanPath::Pipelined,
    ScanPath::SinglePass,
    ScanPath::ReduceThenScan,
];

/// Pushes one row per path × strategy for `Op` (kinds `"{label} {strategy} [{path}]"`)
/// and returns the index of the first.
pub fn path_rows<Op: ScanOp>(label: &str, rows: &mut Vec<Row>) -> usize {
    let first_row = rows.len();
    for path in PATHS {
        for strategy in SegmentedStrategy::ALL {
            rows.push(Row {
                op: Op::NAME,
                kind: leak(format!("{label} {strategy:?} [{path:?}]")),
                lengths: 0,
                elements: 0,
                failures: Vec::new(),
                seconds: 0.0,
            });
        }
    }
    first_row
}

/// Scans `d_input` (n elements) with `spec` over `segments()` on every
/// path and strategy into a poisoned output with a guard band, in place
/// where `(parity + path + strategy)` is odd, with a carry-out where
/// `(parity / 2 + path + strategy)` is even (into the middle element of
/// three poisoned ones, whose neighbours must survive), and compares with
/// `expected` and `expected_carry` (the CPU's carry-out of the same spec);
/// failures go to the rows from `first_row` (see [`path_rows`]), named
/// `what` and the spec's `name`. With `expected_totals` (the CPU's
/// per-segment totals), the carry-out cycles over none, one element and
/// one total per segment (between two poisoned guards) and a counted
/// slot, by `(parity / 2 + path + strategy) % 4`; segments the host cannot
/// count (flags, keys in device memory) skip the slot of one total per
/// segment. A counted slot holds every segment, half of them, or two more,
/// by `parity / 8 % 3`.
#[allow(clippy::too_many_arguments)]
pub fn scan_every_path<'a, Op: Case>(
    scanner: &mut GpuScanner<Op>,
    stream: &Arc<CudaStream>,
    rows: &mut [Row],
    first_row: usize,
    (name, spec): (&str, ScanSpec<Op::Element>),
    what: &str,
    parity: usize,
    d_input: &CudaSlice<Op::Element>,
    (expected, expected_carry, expected_totals): Expected<'_, Op::Element>,
    segments: impl Fn() -> DeviceSegments<'a>,
) {
    let n = expected.len();
    for (q, path) in PATHS.into_iter().enumerate() {
        for (s, strategy) in SegmentedStrategy::ALL.into_iter().enumerate() {
            scanner.set_tuning(
                scanner
                    .tuning()
                    .with_path(path)
                    .with_segmented_strategy(strategy),
            );
            let row = &mut rows[first_row + q * 2 + s];
            let start = Instant::now();
            let mut out = unsafe { stream.alloc::<Op::Element>(n + GUARD) }.unwrap();
            poison(stream, &mut out);
            let in_place = (parity + q + s) % 2 == 1;
            let segment_count = expected_totals.map_or(0, <[_]>::len);
            let counted = CarryMode::Counted {
                capacity: [segment_count, segment_count / 2, segment_count + 2][parity / 8 % 3],
            };
            let host_counts = !matches!(
                segments(),
                DeviceSegments::Flags(_) | DeviceSegments::Keys(_)
            );
            let mode = match expected_totals {
                Some(_) if host_counts => {
                    [CarryMode::One, CarryMode::None, CarryMode::Totals, counted]
                        [(parity / 2 + q + s) % 4]
                }
                Some(_) => [CarryMode::One, CarryMode::None, counted][(parity / 2 + q + s) % 3],
                None if (parity / 2 + q + s) % 2 == 0 => CarryMode::One,
                None => CarryMode::None,
            };
            let with_carry = mode == CarryMode::One;
            let mut slot = unsafe { stream.alloc::<Op::Element>(3) }.unwrap();
            poison(stream, &mut slot);
            let capacity = match mode {
                CarryMode::Counted { capacity } => capacity,
                _ => segment_count,
            };
            let mut totals_slot =
                unsafe { stream.alloc::<Op::Element>(segment_count + 4) }.unwrap();
            poison(stream, &mut totals_slot);
            let mut count_slot = unsafe { stream.alloc::<u64>(3) }.unwrap();
            poison(stream, &mut count_slot);
            let mut view = out.slice_mut(..n);
            let mut carry = slot.slice_mut(1..2);
            let mut totals = totals_slot.slice_mut(1..capacity + 1);
            let mut count = count_slot.slice_mut(1..2);
            let result = match in_place {
                true => stream.memcpy_dtod(d_input, &mut view).map_err(Into::into),
                false => Ok(()),
            }
            // Every scan goes through the one verb, segments and slot in
            // the spec (the slot given after the segments in place, before
            // them out of place).
            .and_then(|()| match (in_place, mode) {
                (true, CarryMode::One) => scanner.scan_in_place(
                    stream,
                    spec.segments(segments()).carry_out(&mut carry),
                    &mut view,
                ),
                (true, CarryMode::Totals) => scanner.scan_in_place(
                    stream,
                    spec.segments(segments()).segment_totals(&mut totals),
                    &mut view,
                ),
                (true, CarryMode::Counted { .. }) => scanner.scan_in_place(
                    stream,
                    spec.segments(segments())
                        .counted_segment_totals(&mut totals, &mut count),
                    &mut view,
                ),
                (true, CarryMode::None) => {
                    scanner.scan_in_place(stream, spec.segments(segments()), &mut view)
                }
                (false, CarryMode::One) => scanner.scan(
                    stream,
                    spec.carry_out(&mut carry).segments(segments()),
                    d_input,
                    &mut view,
                ),
                (false, CarryMode::Totals) => scanner.scan(
                    stream,
                    spec.segment_totals(&mut totals).segments(segments()),
                    d_input,
                    &mut view,
                ),
                (false, CarryMode::Counted { .. }) => scanner.scan(
                    stream,
                    spec.counted_segment_totals(&mut totals, &mut count)
                        .segments(segments()),
                    d_input,
                    &mut view,
                ),
                (false, CarryMode::None) => {
                    scanner.scan(stream, spec.segments(segments()), d_input, &mut view)
                }
            });
            let got = stream.clone_dtoh(&out).unwrap();
            let got_slot = stream.clone_dtoh(&slot).unwrap();
            let got_totals = stream.clone_dtoh(&totals_slot).unwrap();
            let got_count = stream.clone_dtoh(&count_slot).unwrap();
            row.seconds += start.elapsed().as_secs_f64();
            row.lengths += 1;
            row.elements += n;
            let what = format!(
                "{what} {name}{}{}",
                if in_place { " in place" } else { "" },
                match mode {
                    CarryMode::One => " with carry-out",
                    CarryMode::Totals => " with segment totals",
                    CarryMode::Counted { .. } => " with counted segment totals",
                    CarryMode::None => "",
                }
            );
            if let Err(e) = result {
                row.failures.push(format!("{what}: {e}"));
                continue;
            }
            compare::<Op>(&what, n, &got[..n], expected, &mut row.failures);
            check_carry::<Op>(
                &what,
                with_carry,
                &got_slot,
                &expected_carry,
                &mut row.failures,
            );
            match (expected_totals, mode) {
                (Some(want), CarryMode::Totals) => check_totals::<Op>(
                    &what,
                    &got_totals[..segment_count + 2],
                    want,
                    &mut row.failures,
                ),
                (Some(want), CarryMode::Counted { capacity }) => check_counted::<Op>(
                    &what,
                    (&got_totals, capacity),
                    &got_count,
                    want,
                    &mut row.failures,
                ),
                _ if !poisoned(&got_totals) || !poisoned(&got_count) => row
                    .failures
                    .push(format!("{what}: segment totals written without a slot")),
                _ => {}
            }
            if !poisoned(&got[n..]) {
                row.failures.push(format!(
                    "{what}: the guard band after the output was written"
                ));
            }
        }
    }
}
