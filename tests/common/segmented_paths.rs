//! One segmented scan through every path and strategy, for the GPU suites
//! whose segments are not flags (`gpu_rows`, `gpu_offsets`): result rows
//! per path × strategy, and the scan itself with a poisoned output, a
//! guard band after it, in place or not, compared with the CPU.

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
/// where `(parity + path + strategy)` is odd, and compares with `expected`;
/// failures go to the rows from `first_row` (see [`path_rows`]), named
/// `what` and the spec's `name`.
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
    expected: &[Op::Element],
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
            let result = if in_place {
                let mut view = out.slice_mut(..n);
                stream.memcpy_dtod(d_input, &mut view).unwrap();
                scanner.segmented_scan_in_place(stream, spec, segments(), &mut view)
            } else {
                let mut view = out.slice_mut(..n);
                scanner.segmented_scan(stream, spec, segments(), d_input, &mut view)
            };
            let got = stream.clone_dtoh(&out).unwrap();
            row.seconds += start.elapsed().as_secs_f64();
            row.lengths += 1;
            row.elements += n;
            let what = format!("{what} {name}{}", if in_place { " in place" } else { "" });
            if let Err(e) = result {
                row.failures.push(format!("{what}: {e}"));
                continue;
            }
            compare::<Op>(&what, n, &got[..n], expected, &mut row.failures);
            if !poisoned(&got[n..]) {
                row.failures.push(format!(
                    "{what}: the guard band after the output was written"
                ));
            }
        }
    }
}
