//! The kernels of an operator's program: the plain ones ([`Kernel`]), the
//! segmented ones ([`SegmentedKernel`]) of each strategy and segment
//! source, the direction of a scan, and their exported names.

pub use scan_types::{Direction, FlagFormat};

/// The kernels (`extern "C" __global__` entry points) of one operator.
/// Their parameters are written once, in the ABI table
/// ([`KernelAbi::params`](crate::abi::KernelAbi::params)), which prints the
/// wrappers and checks every launch; the docs here say what each kernel
/// does with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Global pass 1: each block reduces its tile to one tile total.
    ReduceTiles,
    /// Global pass 2: one block scans the tile totals (exclusive, seeded).
    ScanTileTotals,
    /// Global pass 3 (or the whole scan when it fits one tile): inclusive.
    ScanTilesInclusive,
    /// Global pass 3 (or the whole scan when it fits one tile): exclusive.
    ScanTilesExclusive,
    /// Single pass with decoupled look-back, inclusive, one block per tile
    /// (`launch`: a [`crate::launch_state::LaunchState`]). `status` holds
    /// [`TILE_STATUS_STRIDE`](crate::TILE_STATUS_STRIDE) bytes per tile (an entry of
    /// [`tile_status_bytes`](crate::tile_status_bytes) bytes at the start of each); `aggregates` and `prefixes` one
    /// element per tile, and are only read when [`tile_status_bytes`](crate::tile_status_bytes) is 4.
    SinglePassInclusive,
    /// Single pass with decoupled look-back, exclusive (same parameters).
    SinglePassExclusive,
    /// [`Kernel::SinglePassInclusive`] over small tiles of
    /// [`small_items_per_thread`](crate::small_items_per_thread) items per thread, for short inputs.
    SinglePassSmallInclusive,
    /// [`Kernel::SinglePassExclusive`] over small tiles.
    SinglePassSmallExclusive,
    /// The pipelined single pass (sm_90 and newer), inclusive, with `tiles`
    /// after the single pass's parameters:
    /// [`pipelined_block_threads`](crate::pipelined_block_threads) threads and [`pipelined_shared_bytes`](crate::pipelined_shared_bytes)
    /// of dynamic shared memory per block, a persistent grid (each block
    /// takes one counter value past the last tile), tiles of
    /// [`pipelined_tile_items`](crate::pipelined_tile_items), input and output 16-byte aligned, elements
    /// for which [`pipelined_supported`](crate::pipelined_supported) holds. Status as for
    /// [`Kernel::SinglePassInclusive`].
    PipelinedInclusive,
    /// The pipelined single pass, exclusive (same parameters).
    PipelinedExclusive,
    /// A row-major matrix scanned down its columns, inclusive: the single
    /// pass with decoupled look-back over tiles of 32 columns ×
    /// [`crate::layout::Layout::column_tile_rows_of`] rows (`columns.cuh`; `row_lanes`:
    /// [`column_row_lanes`](crate::column_row_lanes), narrow matrices several rows a warp), one block per tile:
    /// [`columns_tiles`](crate::columns_tiles) of them; with `walk` one block per strip of 32
    /// columns instead, walking down the whole strip
    /// (`cols.div_ceil(COLUMNS_PER_TILE)` blocks). `status` as for
    /// [`Kernel::SinglePassInclusive`]; `aggregates` and `prefixes` hold 32
    /// elements per tile ([`COLUMNS_PER_TILE`](crate::COLUMNS_PER_TILE)), whatever the element size.
    ColumnsInclusive,
    /// The column scan, exclusive (same parameters).
    ColumnsExclusive,
    /// A deterministic plain scan in one pass, inclusive
    /// (`templates/deterministic.cuh`): [`Kernel::PipelinedInclusive`]
    /// whose lookahead links the tiles' aggregates one by one in order
    /// (same parameters, grid and shared memory), for
    /// elements whose pipelined lookahead walks
    /// ([`pipelined_looks_back`](crate::pipelined_looks_back) false).
    PipelinedDeterministicInclusive,
    /// The deterministic pipelined pass, exclusive (same parameters).
    PipelinedDeterministicExclusive,
    /// The deterministic scan in three passes, pass 1: each block of
    /// [`deterministic_threads`](crate::layout::Layout::deterministic_threads)
    /// threads writes the total of one pipelined tile, combined as the
    /// pipelined pass combines it.
    DeterministicReduceTiles,
    /// Pass 2: one block of
    /// [`DETERMINISTIC_PREFIXES_THREADS`](crate::abi::DETERMINISTIC_PREFIXES_THREADS)
    /// threads (one warp) writes every tile's prefix, the chain of the
    /// seed and the earlier tiles' totals in order, and the carry-out.
    DeterministicTilePrefixes,
    /// Pass 3, inclusive: each block rescans one tile behind its prefix.
    DeterministicScanTilesInclusive,
    /// Pass 3, exclusive.
    DeterministicScanTilesExclusive,
}

impl Kernel {
    /// Every kernel a program contains.
    pub const ALL: [Kernel; 18] = [
        Kernel::ReduceTiles,
        Kernel::ScanTileTotals,
        Kernel::ScanTilesInclusive,
        Kernel::ScanTilesExclusive,
        Kernel::SinglePassInclusive,
        Kernel::SinglePassExclusive,
        Kernel::SinglePassSmallInclusive,
        Kernel::SinglePassSmallExclusive,
        Kernel::PipelinedInclusive,
        Kernel::PipelinedExclusive,
        Kernel::ColumnsInclusive,
        Kernel::ColumnsExclusive,
        Kernel::PipelinedDeterministicInclusive,
        Kernel::PipelinedDeterministicExclusive,
        Kernel::DeterministicReduceTiles,
        Kernel::DeterministicTilePrefixes,
        Kernel::DeterministicScanTilesInclusive,
        Kernel::DeterministicScanTilesExclusive,
    ];

    /// The suffix after the operator's name.
    pub fn suffix(self) -> &'static str {
        match self {
            Kernel::ReduceTiles => "reduce_tiles",
            Kernel::ScanTileTotals => "scan_tile_totals",
            Kernel::ScanTilesInclusive => "scan_tiles_inclusive",
            Kernel::ScanTilesExclusive => "scan_tiles_exclusive",
            Kernel::SinglePassInclusive => "single_pass_inclusive",
            Kernel::SinglePassExclusive => "single_pass_exclusive",
            Kernel::SinglePassSmallInclusive => "single_pass_small_inclusive",
            Kernel::SinglePassSmallExclusive => "single_pass_small_exclusive",
            Kernel::PipelinedInclusive => "pipelined_inclusive",
            Kernel::PipelinedExclusive => "pipelined_exclusive",
            Kernel::ColumnsInclusive => "columns_inclusive",
            Kernel::ColumnsExclusive => "columns_exclusive",
            Kernel::PipelinedDeterministicInclusive => "pipelined_deterministic_inclusive",
            Kernel::PipelinedDeterministicExclusive => "pipelined_deterministic_exclusive",
            Kernel::DeterministicReduceTiles => "deterministic_reduce_tiles",
            Kernel::DeterministicTilePrefixes => "deterministic_tile_prefixes",
            Kernel::DeterministicScanTilesInclusive => "deterministic_scan_tiles_inclusive",
            Kernel::DeterministicScanTilesExclusive => "deterministic_scan_tiles_exclusive",
        }
    }

    /// The symbol name for operator `op_name`.
    pub fn symbol(self, op_name: &str) -> String {
        format!("{SYMBOL_PREFIX}{op_name}_{}", self.suffix())
    }
}

/// What every exported symbol of an operator's program starts with, before
/// the operator's name. Nothing else in a program has a global name that
/// starts with it (the library lives in namespaces `gpu_scan` and
/// `gpu_scan_ops`, the prelude's names start with `scan_`), so no operator
/// name can collide with the library.
pub const SYMBOL_PREFIX: &str = "gpu_scan_";

/// The preprocessor macro that switches on the segmented part of the
/// library; [`crate::program`] defines it when a program holds a segmented
/// kernel, so programs of plain scans do not parse those templates.
pub const SEGMENTED_DEFINE: &str = "GPU_SCAN_SEGMENTED";

/// The names the generated CUDA gives a [`FlagFormat`].
pub(crate) trait FlagFormatNames {
    /// The CUDA template argument selecting this format.
    fn cuda_name(self) -> &'static str;
    /// The suffix of the symbols of kernels that read this format.
    fn suffix(self) -> &'static str;
}

impl FlagFormatNames for FlagFormat {
    fn cuda_name(self) -> &'static str {
        match self {
            FlagFormat::Bytes => "scan_flags_bytes",
            FlagFormat::Bits => "scan_flags_bits",
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            FlagFormat::Bytes => "bytes",
            FlagFormat::Bits => "bits",
        }
    }
}

/// Where a segmented kernel finds its segments' heads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentSource {
    /// Head flags in memory, in this format (a `flags` parameter).
    Flags(FlagFormat),
    /// Rows of a fixed length (a `row_length` parameter): element `i`
    /// starts a segment where `i % row_length == 0`. The heads are computed
    /// in the tile; nothing but the elements is read.
    Rows,
    /// Segment start offsets, ascending (CSR row pointers: an `offsets`
    /// parameter, a `scan_offsets` by value holding their address, count,
    /// width of 4 or 8 bytes and index, see
    /// [`crate::segment_flags::FlagsKernel::IndexOffsets`]):
    /// element `offsets[r]` starts a segment. Each thread finds the offsets
    /// of its items between two index entries; no flags are read or
    /// written.
    Offsets,
    /// One key per element (a `keys` parameter, a `scan_keys` by value
    /// holding their address and width of 1, 2, 4 or 8 bytes): element `i`
    /// starts a segment where its key differs, bit for bit, from element
    /// `i - 1`'s. Each thread compares the keys of its items and the one
    /// before them; no flags are read or written.
    Keys,
}

impl SegmentSource {
    /// Every source: the two flag formats, rows, offsets, then keys.
    pub const ALL: [SegmentSource; 5] = [
        SegmentSource::Flags(FlagFormat::Bytes),
        SegmentSource::Flags(FlagFormat::Bits),
        SegmentSource::Rows,
        SegmentSource::Offsets,
        SegmentSource::Keys,
    ];

    pub(crate) fn suffix(self) -> &'static str {
        match self {
            SegmentSource::Flags(f) => f.suffix(),
            SegmentSource::Rows => "rows",
            SegmentSource::Offsets => "offsets",
            SegmentSource::Keys => "keys",
        }
    }
}

impl From<FlagFormat> for SegmentSource {
    fn from(format: FlagFormat) -> Self {
        SegmentSource::Flags(format)
    }
}

/// The two segmented-scan strategies of the chapter (section 1.5), which
/// differ in how a warp keeps lanes from combining across a segment head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentedStrategy {
    /// The operator lifted to (flag, value) pairs,
    /// `(f1, v1) ⊕ (f2, v2) = (f1 | f2, f2 ? v2 : v1 ∘ v2)`, expanded into a
    /// warp routine that shuffles flags along with values (Figs. 1.9, 1.10).
    OperatorTransformation,
    /// Each lane finds the lane of its segment's head (a max-scan of head
    /// indices, here one ballot) and only combines values from lanes at or
    /// after it (Fig. 1.11). Shuffles values only.
    ConditionalIndexing,
}

impl SegmentedStrategy {
    /// Both strategies.
    pub const ALL: [SegmentedStrategy; 2] = [
        SegmentedStrategy::OperatorTransformation,
        SegmentedStrategy::ConditionalIndexing,
    ];

    /// The CUDA template argument selecting this strategy.
    pub fn cuda_name(self) -> &'static str {
        match self {
            SegmentedStrategy::OperatorTransformation => "scan_segmented_transform",
            SegmentedStrategy::ConditionalIndexing => "scan_segmented_indexing",
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            SegmentedStrategy::OperatorTransformation => "transform",
            SegmentedStrategy::ConditionalIndexing => "indexing",
        }
    }
}

/// The kernels of a program's segmented part: reduce-then-scan with a head
/// flag per tile, and the single pass. Each exists once per
/// [`SegmentedStrategy`], and once per [`SegmentSource`] where it reads
/// heads (`flags`, `row_length`, `offsets` or `keys` in the parameters of
/// the ABI table, [`KernelAbi::params`](crate::abi::KernelAbi::params)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentedKernel {
    /// Per tile, whether it holds a head (`tile_flags`) and the (seeded)
    /// partial of its last segment (`tile_totals`).
    ReduceTiles(SegmentSource),
    /// One block turns the tile totals into the partial of the segment open
    /// at each tile's start.
    ScanTileTotals,
    /// Scans every tile seeded with its prefix (`tile_prefixes == nullptr`:
    /// a single tile).
    ScanTiles {
        /// Inclusive or exclusive.
        inclusive: bool,
        /// Where the segments' heads come from.
        source: SegmentSource,
    },
    /// The single pass with decoupled look-back, with the scratch of
    /// [`Kernel::SinglePassInclusive`].
    SinglePass {
        /// Inclusive or exclusive.
        inclusive: bool,
        /// Where the segments' heads come from.
        source: SegmentSource,
    },
    /// The pipelined single pass (sm_90 and newer), launched as
    /// [`Kernel::PipelinedInclusive`] but with
    /// [`pipelined_segmented_shared_bytes`](crate::pipelined_segmented_shared_bytes) of dynamic shared memory, the
    /// flags 16-byte aligned too.
    Pipelined {
        /// Inclusive or exclusive.
        inclusive: bool,
        /// Where the segments' heads come from.
        source: SegmentSource,
    },
}

impl SegmentedKernel {
    /// Every segmented kernel of one strategy: per source, the reduction
    /// of tiles, the tile scans, the single passes and the pipelined ones
    /// (inclusive, then exclusive), and once the pass over tile totals.
    pub const ALL: [SegmentedKernel; 1 + 7 * SegmentSource::ALL.len()] = {
        use SegmentedKernel::{Pipelined, ReduceTiles, ScanTileTotals, ScanTiles, SinglePass};
        let mut all = [ScanTileTotals; 1 + 7 * SegmentSource::ALL.len()];
        let mut i = 0;
        while i < SegmentSource::ALL.len() {
            let source = SegmentSource::ALL[i];
            let at = 1 + 7 * i;
            all[at] = ReduceTiles(source);
            let mut k = 0;
            while k < 2 {
                let inclusive = k == 0;
                all[at + 1 + k] = ScanTiles { inclusive, source };
                all[at + 3 + k] = SinglePass { inclusive, source };
                all[at + 5 + k] = Pipelined { inclusive, source };
                k += 1;
            }
            i += 1;
        }
        all
    };

    /// Where the kernel finds segment heads; `None` for the pass over tile
    /// totals, which reads one flag byte per tile.
    pub fn source(self) -> Option<SegmentSource> {
        match self {
            SegmentedKernel::ReduceTiles(source)
            | SegmentedKernel::ScanTiles { source, .. }
            | SegmentedKernel::SinglePass { source, .. }
            | SegmentedKernel::Pipelined { source, .. } => Some(source),
            SegmentedKernel::ScanTileTotals => None,
        }
    }

    /// The kernel's exported name in operator `op_name`'s program.
    pub fn symbol(self, op_name: &str, strategy: SegmentedStrategy) -> String {
        let s = strategy.suffix();
        match self {
            SegmentedKernel::ReduceTiles(source) => {
                format!(
                    "{SYMBOL_PREFIX}{op_name}_segmented_{s}_reduce_tiles_{}",
                    source.suffix()
                )
            }
            SegmentedKernel::ScanTileTotals => {
                format!("{SYMBOL_PREFIX}{op_name}_segmented_{s}_scan_tile_totals")
            }
            SegmentedKernel::ScanTiles { inclusive, source } => format!(
                "{SYMBOL_PREFIX}{op_name}_segmented_{s}_scan_tiles_{}_{}",
                if inclusive { "inclusive" } else { "exclusive" },
                source.suffix()
            ),
            SegmentedKernel::SinglePass { inclusive, source } => format!(
                "{SYMBOL_PREFIX}{op_name}_segmented_{s}_single_pass_{}_{}",
                if inclusive { "inclusive" } else { "exclusive" },
                source.suffix()
            ),
            SegmentedKernel::Pipelined { inclusive, source } => format!(
                "{SYMBOL_PREFIX}{op_name}_segmented_{s}_pipelined_{}_{}",
                if inclusive { "inclusive" } else { "exclusive" },
                source.suffix()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_symbols_carry_the_operator_name() {
        assert_eq!(
            Kernel::ReduceTiles.symbol("affine_op"),
            "gpu_scan_affine_op_reduce_tiles"
        );
        // An operator named like the prelude's helpers gets symbols of its own.
        assert_eq!(
            Kernel::SinglePassInclusive.symbol("scan"),
            "gpu_scan_scan_single_pass_inclusive"
        );
    }
}
