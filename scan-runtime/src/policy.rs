//! The planner's thresholds, as data in one place: which path a scan takes
//! on [`ScanPath::Auto`](crate::ScanPath::Auto) and where short inputs
//! switch tilings. Every number was measured on sm_90 (H200 and H100;
//! BENCHMARKS.md, "Where the planner's numbers come from"); the other
//! architectures take the same row, and the pipelined pass does not run
//! there. Each entry keeps one line saying where its number came from.

use std::ops::RangeInclusive;

/// The thresholds the planner ([`crate::plan::choose`]) and
/// [`Tuning::default`](crate::Tuning::default) read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PlannerPolicy {
    /// Inputs of at least this many bytes take the pipelined pass: H200
    /// `u32` sum ties at 2^18 elements and wins from 2^20.
    pub(crate) pipelined_min_bytes: usize,
    /// Elements of at most this many bytes (which pack with their tile
    /// status) take it, plain or segmented: the main table's cases.
    pub(crate) pipelined_packed_max_size: usize,
    /// Wider elements whose plain scans take it: H200 and H100,
    /// `SCAN_BENCH_WIDE=paths`, 13 to 256 bytes (segmented ones were not
    /// measured and keep the look-back pass).
    pub(crate) pipelined_wide_plain_sizes: RangeInclusive<usize>,
    /// Rows of a power-of-two length up to this many elements ...
    pub(crate) look_back_rows_max: usize,
    /// ... of elements of at most this many bytes take the look-back pass:
    /// `SCAN_BENCH_ROWS_SWEEP=1`, 2-5 points of copy faster on the H200.
    pub(crate) look_back_rows_max_size: usize,
    /// Plain inputs of at most this many elements take small tiles: H200
    /// `u32` sum, a little faster at 2^14, even at 2^16, slower at 2^17.
    pub(crate) small_tile_limit: usize,
}

/// The one row: every architecture (measured on sm_90).
pub(crate) const PLANNER_POLICY: PlannerPolicy = PlannerPolicy {
    pipelined_min_bytes: 2 << 20,
    pipelined_packed_max_size: 12,
    pipelined_wide_plain_sizes: 13..=kernels_gen::PIPELINED_MAX_ELEMENT_SIZE,
    look_back_rows_max: 4096,
    look_back_rows_max_size: 4,
    small_tile_limit: 1 << 15,
};
