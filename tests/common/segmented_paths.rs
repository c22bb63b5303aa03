//! One segmented scan through every path and strategy, for the GPU suites
//! whose segments are not flags (`gpu_rows`, `gpu_offsets`, `gpu_keys`)
//! and `gpu_carry`: result rows per path × strategy, and the scan itself
//! with a poisoned output, a guard band after it, in place or not, with a
//! carry-out or not, compared with the CPU.

#![allow(dead_code)] // each test binary uses a different part

use super::gpu::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream};
use gpu_scan::scan_runtime::ScanPath;
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
}

/// What the CPU computed for one spec: the output, the carry-out, and
/// (where the segments are counted) every segment's total.
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
/// one total per segment (between two poisoned guards) by
/// `(parity / 2 + path + strategy) % 3`.
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
            scanner.set_path(path);
            scanner.set_segmented_strategy(strategy);
            let row = &mut rows[first_row + q * 2 + s];
            let start = Instant::now();
            let mut out = unsafe { stream.alloc::<Op::Element>(n + GUARD) }.unwrap();
            poison(stream, &mut out);
            let in_place = (parity + q + s) % 2 == 1;
            let mode = match expected_totals {
                Some(_) => {
                    [CarryMode::One, CarryMode::None, CarryMode::Totals][(parity / 2 + q + s) % 3]
                }
                None if (parity / 2 + q + s) % 2 == 0 => CarryMode::One,
                None => CarryMode::None,
            };
            let with_carry = mode == CarryMode::One;
            let mut slot = unsafe { stream.alloc::<Op::Element>(3) }.unwrap();
            poison(stream, &mut slot);
            let segment_count = expected_totals.map_or(0, <[_]>::len);
            let mut totals_slot =
                unsafe { stream.alloc::<Op::Element>(segment_count + 2) }.unwrap();
            poison(stream, &mut totals_slot);
            let mut view = out.slice_mut(..n);
            let mut carry = slot.slice_mut(1..2);
            let mut totals = totals_slot.slice_mut(1..segment_count + 1);
            let result = match in_place {
                true => stream.memcpy_dtod(d_input, &mut view).map_err(Into::into),
                false => Ok(()),
            }
            // Scans with a carry-out or totals go through the one verb
            // (segments and slot in the spec), the others through the named
            // conveniences.
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
                (true, CarryMode::None) => {
                    scanner.segmented_scan_in_place(stream, spec, segments(), &mut view)
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
                (false, CarryMode::None) => {
                    scanner.segmented_scan(stream, spec, segments(), d_input, &mut view)
                }
            });
            let got = stream.clone_dtoh(&out).unwrap();
            let got_slot = stream.clone_dtoh(&slot).unwrap();
            let got_totals = stream.clone_dtoh(&totals_slot).unwrap();
            row.seconds += start.elapsed().as_secs_f64();
            row.lengths += 1;
            row.elements += n;
            let what = format!(
                "{what} {name}{}{}",
                if in_place { " in place" } else { "" },
                match mode {
                    CarryMode::One => " with carry-out",
                    CarryMode::Totals => " with segment totals",
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
            match expected_totals {
                Some(want) if mode == CarryMode::Totals => {
                    check_totals::<Op>(&what, &got_totals, want, &mut row.failures)
                }
                _ if !poisoned(&got_totals) => row
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
