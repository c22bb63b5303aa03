//! How a [`GpuScanner`](crate::GpuScanner) chooses among its kernels:
//! [`Tuning`].

use crate::path::ScanPath;
use crate::policy::PLANNER_POLICY;
use kernels_gen::SegmentedStrategy;

/// How a [`GpuScanner`](crate::GpuScanner) runs its scans. Every choice
/// gives the same results (bit for bit for exactly associative operators);
/// they differ in speed. [`Tuning::default`] holds the choices measured
/// fastest on the H200 (BENCHMARKS.md); change them to measure or to work
/// around a device.
///
/// ```
/// use gpu_scan::scan_runtime::{ScanPath, Tuning};
/// use gpu_scan::prelude::*;
///
/// let tuning = Tuning::default().with_path(ScanPath::SinglePass).with_small_tile_limit(0);
/// assert_eq!(tuning.path, ScanPath::SinglePass);
/// assert!(Tuning::default().background_compile);
/// assert!(!Tuning::default().with_background_compile(false).background_compile);
/// assert_eq!(Tuning::default().segmented_strategy, SegmentedStrategy::ConditionalIndexing);
/// // scanner.set_tuning(tuning);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Tuning {
    /// The path of scans longer than one tile ([`ScanPath::Auto`] by default).
    pub path: ScanPath,
    /// The longest input (in elements) the single pass scans in small tiles
    /// (a quarter of the items per thread, so that a short input spreads
    /// over more blocks); 0: never. Default 2^15.
    pub small_tile_limit: usize,
    /// How segmented scans carry segment heads through the tile (default
    /// [`SegmentedStrategy::ConditionalIndexing`], the faster one on the
    /// H200).
    pub segmented_strategy: SegmentedStrategy,
    /// On [`ScanPath::Auto`], whether a scan whose fastest kernel has not
    /// been compiled yet (in this process or the disk cache) runs at once
    /// on a kernel that compiles in about half the time (the single pass
    /// over small tiles, or the segmented single pass with look-back) while
    /// the fastest one compiles on another thread; later scans take it as
    /// soon as it is loaded. A kernel a scan must compile now is a quick
    /// build where NVRTC has one (12.8 and newer;
    /// [`QUICK_BUILDS_ENV`](crate::QUICK_BUILDS_ENV)): NVRTC's fast-compile
    /// mode, same results, slower code, whose optimized build compiles in
    /// the background too and replaces it. Default `true`: a first scan in a fresh
    /// process then waits for about half the compile (BENCHMARKS.md), and
    /// a process that scans for longer runs at full speed a fraction of a
    /// second later. `false`: every scan waits for the kernel it prefers.
    /// Either way the results are the same, and scans on a stream being
    /// captured into a CUDA graph always wait (a graph keeps the kernels
    /// it was captured with).
    /// [`GpuScanner::wait_for_background_compiles`](crate::GpuScanner::wait_for_background_compiles)
    /// waits for the ones running, before timing, say.
    pub background_compile: bool,
    /// Bit-reproducible results (default `false`): the bits of every
    /// output depend only on the input, not on timing, the path, the
    /// number of SMs or the device (the operator's float arithmetic is
    /// never fused, `crate` docs), and a prefix's result only on the input
    /// up to it (batch invariance). Plain scans combine in an order fixed
    /// by the elements' positions (`deterministic.cuh`: the pipelined
    /// pass's tiles, their totals chained left to right), computed in one pass
    /// where the pipelined pass runs (sm_90 and newer, 16-byte aligned
    /// buffers, elements of at most 156 bytes, `path` `Auto` or
    /// `Pipelined`) and otherwise in three passes (`ReduceThenScan` or
    /// `SinglePass` ask for them), which give the same bits. Segmented
    /// scans and scans through load or store stages
    /// ([`GpuScanner::scan_through`](crate::GpuScanner::scan_through)) take
    /// reduce-then-scan, whose tiles and trees are fixed too
    /// (3n elements moved: at most two thirds of copy speed). A reverse
    /// scan's tiles lie where a forward scan's do (from the input's
    /// start), so its result at `i` also depends on where `i` falls in a
    /// tile. Column scans ([`ScanSpec::columns`]), whose pass looks back
    /// over other blocks' results, are refused with
    /// [`ScanError::NotDeterministic`]. BENCHMARKS.md has the measured cost;
    /// `tests/gpu_deterministic.rs` compares the bits on a GPU.
    ///
    /// [`ScanSpec::columns`]: scan_core::ScanSpec::columns
    /// [`ScanError::NotDeterministic`]: crate::ScanError::NotDeterministic
    pub deterministic: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            path: ScanPath::Auto,
            small_tile_limit: PLANNER_POLICY.small_tile_limit,
            segmented_strategy: SegmentedStrategy::ConditionalIndexing,
            background_compile: true,
            deterministic: false,
        }
    }
}

impl Tuning {
    /// This tuning with `path`.
    pub fn with_path(mut self, path: ScanPath) -> Self {
        self.path = path;
        self
    }

    /// This tuning with `small_tile_limit`.
    pub fn with_small_tile_limit(mut self, elements: usize) -> Self {
        self.small_tile_limit = elements;
        self
    }

    /// This tuning with `background_compile`.
    pub fn with_background_compile(mut self, background_compile: bool) -> Self {
        self.background_compile = background_compile;
        self
    }

    /// This tuning with `deterministic`.
    pub fn with_deterministic(mut self, deterministic: bool) -> Self {
        self.deterministic = deterministic;
        self
    }

    /// The path scans take: [`Tuning::path`], or reduce-then-scan when
    /// [`Tuning::deterministic`] (deterministic plain scans choose
    /// between their own one pass and three: `plan::choose`).
    pub(crate) fn resolved_path(&self) -> ScanPath {
        if self.deterministic {
            ScanPath::ReduceThenScan
        } else {
            self.path
        }
    }

    /// This tuning with `segmented_strategy`.
    pub fn with_segmented_strategy(mut self, strategy: SegmentedStrategy) -> Self {
        self.segmented_strategy = strategy;
        self
    }
}
