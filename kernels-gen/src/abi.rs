//! The kernel ABI: every exported kernel's parameter list, written once.
//!
//! [`KernelAbi`] describes one exported kernel of an operator's program: its
//! parameters ([`Param`], in order, with their [`ParamType`]), its launch
//! bounds and the library template it instantiates. The `extern "C"`
//! wrappers of a program are printed from it ([`KernelAbi::wrapper`]), and
//! the runtime checks every launch's arguments against
//! [`KernelAbi::params`] before it enqueues anything, so the two cannot
//! drift apart. A wrapper passes each parameter on by name: the test
//! `kernels-gen/tests/abi_names.rs` checks every call against the library
//! template's (and policy's) parameter names, so an argument swapped on
//! either side of the table fails a test.
//!
//! ```
//! use kernels_gen::abi::{KernelAbi, ParamType};
//! use kernels_gen::Kernel;
//!
//! let abi = KernelAbi::plain(Kernel::ReduceTiles);
//! let types: Vec<ParamType> = abi.params().iter().map(|p| p.ty).collect();
//! assert_eq!(types, [ParamType::ElementsIn, ParamType::ElementsOut, ParamType::Count]);
//! assert_eq!(abi.symbol("sum_u32"), "gpu_scan_sum_u32_reduce_tiles");
//! ```

use crate::kernel_kinds::{
    Direction, FlagFormat, FlagFormatNames, Kernel, SegmentSource, SegmentedKernel,
    SegmentedStrategy,
};
use crate::stage::STAGE_NAMESPACE;
use crate::{POLICY_NAMESPACE, SYMBOL_PREFIX};

/// What a kernel parameter is, which fixes its CUDA type (for element type
/// `T`) and the host value passed for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// `const T*`: elements the kernel reads (a device address).
    ElementsIn,
    /// `T*`: elements the kernel writes, or reads and writes.
    ElementsOut,
    /// `const T`: one element, by value.
    Element,
    /// `const void*`: head flags in a [`FlagFormat`] the kernel's name fixes.
    HeadFlags,
    /// `unsigned long long`: the length of every segment
    /// ([`SegmentSource::Rows`]), in place of [`ParamType::HeadFlags`].
    RowLength,
    /// `scan_offsets`, by value: the address, count and width (4 or 8
    /// bytes) of segment start offsets ([`SegmentSource::Offsets`]) and
    /// the address and stride of their index, in place of
    /// [`ParamType::HeadFlags`].
    SegmentOffsets,
    /// `scan_keys`, by value: the address and width (1, 2, 4 or 8 bytes)
    /// of one key per element ([`SegmentSource::Keys`]), in place of
    /// [`ParamType::HeadFlags`].
    SegmentKeys,
    /// `const unsigned char*`: one byte per tile, read.
    TileFlagsIn,
    /// `unsigned char*`: one byte per tile, written.
    TileFlagsOut,
    /// `void*`: the single-pass status array of a workspace.
    Status,
    /// `scan_launch_state*`: a workspace's launch state
    /// ([`crate::launch_state::LaunchState`]).
    LaunchState,
    /// `int`: a flag, 0 or 1.
    Flag,
    /// `unsigned long long`: a count or length.
    Count,
    /// `const unsigned long long*`: the number of segments as the device
    /// counted it (segments given as head flags or keys), which bounds
    /// the `segments` [`ParamType::Count`]; null where the host counted
    /// them.
    SegmentCount,
    /// `const unsigned ...*` of this many bits (8, 16, 32 or 64): offsets
    /// or keys a kernel of the segment-flags program reads
    /// ([`crate::segment_flags`]).
    UnsignedIn(u32),
    /// `unsigned ...*` of this many bits: what such a kernel writes.
    UnsignedOut(u32),
    /// `const gpu_scan::stage_input<P>*` for the kernel's policy `P`: a
    /// staged kernel's input, elements of its load stage's input type (the
    /// operator's element without one; see [`Stages`]).
    StageIn,
    /// `gpu_scan::stage_output<P>*`: a staged kernel's output, elements of
    /// its store stage's output type (the operator's element without one).
    StageOut,
}

impl ParamType {
    /// The parameter's CUDA type, for element type `t`.
    pub fn cuda_type(self, t: &str) -> String {
        match self {
            ParamType::ElementsIn => format!("const {t}*"),
            ParamType::ElementsOut => format!("{t}*"),
            ParamType::Element => format!("const {t}"),
            ParamType::HeadFlags => "const void*".into(),
            ParamType::RowLength => "unsigned long long".into(),
            ParamType::SegmentOffsets => "scan_offsets".into(),
            ParamType::SegmentKeys => "scan_keys".into(),
            ParamType::TileFlagsIn => "const unsigned char*".into(),
            ParamType::TileFlagsOut => "unsigned char*".into(),
            ParamType::Status => "void*".into(),
            ParamType::LaunchState => "scan_launch_state*".into(),
            ParamType::Flag => "int".into(),
            ParamType::Count => "unsigned long long".into(),
            ParamType::SegmentCount => "const unsigned long long*".into(),
            ParamType::UnsignedIn(bits) => format!("const {}*", Self::unsigned_name(bits)),
            ParamType::UnsignedOut(bits) => format!("{}*", Self::unsigned_name(bits)),
            // Their types name the kernel's policy, which `t` does not
            // give: KernelAbi::wrapper prints them.
            ParamType::StageIn => "const void*".into(),
            ParamType::StageOut => "void*".into(),
        }
    }

    /// The CUDA unsigned integer type of `bits` bits (8, 16, 32 or 64).
    pub fn unsigned_name(bits: u32) -> &'static str {
        match bits {
            8 => "unsigned char",
            16 => "unsigned short",
            32 => "unsigned",
            64 => "unsigned long long",
            _ => panic!("no unsigned type of {bits} bits"),
        }
    }
}

/// One kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name in the CUDA source.
    pub name: &'static str,
    /// What it is.
    pub ty: ParamType,
}

const fn param(name: &'static str, ty: ParamType) -> Param {
    Param { name, ty }
}

use ParamType::*;

const REDUCE_TILES: &[Param] = &[
    param("input", ElementsIn),
    param("tile_totals", ElementsOut),
    param("n", Count),
];
const SCAN_TILE_TOTALS: &[Param] = &[
    param("tile_totals", ElementsOut),
    param("num_tiles", Count),
    param("seed", Element),
];
const SCAN_TILES: &[Param] = &[
    param("input", ElementsIn),
    param("output", ElementsOut),
    param("tile_prefixes", ElementsIn),
    param("carry_out", ElementsOut),
    param("seed", Element),
    param("n", Count),
];
const SINGLE_PASS: &[Param] = &[
    param("input", ElementsIn),
    param("output", ElementsOut),
    param("status", Status),
    param("aggregates", ElementsOut),
    param("prefixes", ElementsOut),
    param("launch", LaunchState),
    param("carry_out", ElementsOut),
    param("seed", Element),
    param("n", Count),
];
const PIPELINED: &[Param] = &[
    param("input", ElementsIn),
    param("output", ElementsOut),
    param("status", Status),
    param("aggregates", ElementsOut),
    param("prefixes", ElementsOut),
    param("launch", LaunchState),
    param("carry_out", ElementsOut),
    param("seed", Element),
    param("n", Count),
    param("tiles", Count),
];
const COLUMNS: &[Param] = &[
    param("input", ElementsIn),
    param("output", ElementsOut),
    param("status", Status),
    param("aggregates", ElementsOut),
    param("prefixes", ElementsOut),
    param("launch", LaunchState),
    param("seed", Element),
    param("rows", Count),
    param("cols", Count),
    param("row_lanes", Count),
    param("walk", Flag),
];
const DETERMINISTIC_REDUCE_TILES: &[Param] = &[
    param("input", ElementsIn),
    param("tile_totals", ElementsOut),
    param("n", Count),
];
const DETERMINISTIC_TILE_PREFIXES: &[Param] = &[
    param("tile_totals", ElementsIn),
    param("tile_prefixes", ElementsOut),
    param("carry_out", ElementsOut),
    param("num_tiles", Count),
    param("seed", Element),
];
const DETERMINISTIC_SCAN_TILES: &[Param] = &[
    param("input", ElementsIn),
    param("output", ElementsOut),
    param("tile_prefixes", ElementsIn),
    param("n", Count),
];

/// Threads of the one block of the deterministic scan's chain of tile
/// prefixes ([`Kernel::DeterministicTilePrefixes`]): one warp links them
/// all.
pub const DETERMINISTIC_PREFIXES_THREADS: u32 = 32;

const SEGMENTED_REDUCE_TILES: &[Param] = &[
    param("input", ElementsIn),
    param("flags", HeadFlags),
    param("tile_totals", ElementsOut),
    param("tile_flags", TileFlagsOut),
    param("seed", Element),
    param("seeded", Flag),
    param("n", Count),
];
const SEGMENTED_SCAN_TILE_TOTALS: &[Param] = &[
    param("tile_totals", ElementsOut),
    param("tile_flags", TileFlagsIn),
    param("num_tiles", Count),
];
const SEGMENTED_SCAN_TILES: &[Param] = &[
    param("input", ElementsIn),
    param("flags", HeadFlags),
    param("output", ElementsOut),
    param("tile_prefixes", ElementsIn),
    param("carry_out", ElementsOut),
    param("seed", Element),
    param("seeded", Flag),
    param("n", Count),
];
const SEGMENTED_SINGLE_PASS: &[Param] = &[
    param("input", ElementsIn),
    param("flags", HeadFlags),
    param("output", ElementsOut),
    param("status", Status),
    param("aggregates", ElementsOut),
    param("prefixes", ElementsOut),
    param("launch", LaunchState),
    param("carry_out", ElementsOut),
    param("seed", Element),
    param("seeded", Flag),
    param("n", Count),
];
const SEGMENTED_PIPELINED: &[Param] = &[
    param("input", ElementsIn),
    param("flags", HeadFlags),
    param("output", ElementsOut),
    param("status", Status),
    param("aggregates", ElementsOut),
    param("prefixes", ElementsOut),
    param("launch", LaunchState),
    param("carry_out", ElementsOut),
    param("seed", Element),
    param("seeded", Flag),
    param("n", Count),
    param("tiles", Count),
];

const SEGMENT_BOUNDARIES: &[Param] = &[
    param("input", ElementsIn),
    param("flags", HeadFlags),
    param("totals", ElementsOut),
    param("segments", Count),
    param("segment_count", SegmentCount),
    param("reverse", Flag),
];
const SEGMENT_TOTALS: &[Param] = &[
    param("output", ElementsIn),
    param("flags", HeadFlags),
    param("totals", ElementsOut),
    param("segments", Count),
    param("segment_count", SegmentCount),
    param("seed", Element),
    param("seeded", Flag),
    param("exclusive", Flag),
    param("reverse", Flag),
];

const AREA_TILE_TOTALS: &[Param] = &[
    param("input", ElementsIn),
    param("row_totals", ElementsOut),
    param("column_totals", ElementsOut),
    param("tile_totals", ElementsOut),
    param("rows", Count),
    param("cols", Count),
    param("band", Count),
    param("reverse", Flag),
];
const AREA_CARRIES: &[Param] = &[
    param("row_totals", ElementsOut),
    param("column_totals", ElementsOut),
    param("tile_totals", ElementsOut),
    param("rows", Count),
    param("cols", Count),
    param("band", Count),
    param("seed", Element),
];
const AREA_FINISH: &[Param] = &[
    param("input", ElementsIn),
    param("output", ElementsOut),
    param("left", ElementsIn),
    param("above", ElementsIn),
    param("corners", ElementsIn),
    param("rows", Count),
    param("cols", Count),
    param("band", Count),
    param("reverse", Flag),
    param("exclusive", Flag),
];

const COMBINE_PAIRS: &[Param] = &[
    param("left", ElementsIn),
    param("right", ElementsIn),
    param("output", ElementsOut),
    param("n", Count),
];

/// A load or store stage of a staged scan (`#[scan_map]`): the Rust type
/// that defines it, which is what tells two stages apart (two stages of
/// one name, in two functions of one module, are two types), its policy's
/// name in `gpu_scan_stages` (`ScanMap::NAME`: its Rust name and a hash of
/// its module path), its part of a program (`ScanMap::CUDA_SOURCE`: its
/// types and its policy), and the sizes of its input and output in Rust,
/// which each staged kernel asserts its CUDA types have.
#[derive(Clone, Copy, Debug)]
pub struct StageRef {
    /// The type that implements `ScanMap`.
    pub id: std::any::TypeId,
    /// `ScanMap::NAME`.
    pub name: &'static str,
    /// `ScanMap::CUDA_SOURCE`.
    pub source: &'static str,
    /// `size_of::<ScanMap::Input>()`.
    pub input_size: usize,
    /// `size_of::<ScanMap::Output>()`.
    pub output_size: usize,
}

impl PartialEq for StageRef {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for StageRef {}

impl std::hash::Hash for StageRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

/// The adapters between a stage and a staged policy's element
/// (`held_load`, `held_store`): an operator whose element the kernels hold
/// packed in words (`layout::packed_element`, `scan_held`) scans its
/// `held::type`, while a stage gives or takes the element itself. Printed
/// once into each program with a staged kernel.
pub const STAGE_ADAPTERS: &str = r#"#ifndef GPU_SCAN_STAGE_ADAPTERS
#define GPU_SCAN_STAGE_ADAPTERS
namespace gpu_scan {
// Load stage Stage of operator Op: Stage's result, held as Op holds its
// element.
template <class Op, class Stage>
struct held_load {
  typedef scan_held<typename Op::scan_element_t, Op::layout::packed_element> held;
  static_assert(same_type<typename Stage::output_t, typename Op::scan_element_t>::value, "a load stage gives the operator's element");
  typedef typename Stage::input_t input_t;
  typedef typename held::type output_t;
  static __device__ __forceinline__ output_t apply(const input_t x) { return held::hold(Stage::apply(x)); }
};
// Store stage Stage of operator Op: Stage applied to the element Op holds.
template <class Op, class Stage>
struct held_store {
  typedef scan_held<typename Op::scan_element_t, Op::layout::packed_element> held;
  static_assert(same_type<typename Stage::input_t, typename Op::scan_element_t>::value, "a store stage takes the operator's element");
  typedef typename held::type input_t;
  typedef typename Stage::output_t output_t;
  static __device__ __forceinline__ output_t apply(const input_t x) { return Stage::apply(held::fields(x)); }
};
}  // namespace gpu_scan
#endif  // GPU_SCAN_STAGE_ADAPTERS
"#;

/// The stages of a staged scan: a load stage mapping each input element to
/// the operator's element as it is loaded, a store stage mapping each
/// result as it is stored, or both (`gpu_scan::staged<Op, Load, Store>`,
/// `templates/stages.cuh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stages {
    /// The load stage (`None`: the input holds the operator's elements).
    pub load: Option<StageRef>,
    /// The store stage (`None`: the output gets the operator's elements).
    pub store: Option<StageRef>,
}

impl Stages {
    /// The operator policy `op` with these stages (each through its
    /// adapter, [`STAGE_ADAPTERS`]).
    pub fn policy(self, op: &str) -> String {
        let stage = |s: Option<StageRef>, adapter: &str| match s {
            Some(s) => format!("gpu_scan::{adapter}<{op}, {STAGE_NAMESPACE}::{}>", s.name),
            None => "gpu_scan::no_stage".to_string(),
        };
        format!(
            "gpu_scan::staged<{op}, {}, {}>",
            stage(self.load, "held_load"),
            stage(self.store, "held_store")
        )
    }

    /// The checks in front of a staged kernel's wrapper: the stages' CUDA
    /// types have the sizes of their Rust types, which the runtime's
    /// buffers hold (the kernel reads and writes them by the CUDA types).
    fn size_asserts(self, staged_policy: &str) -> String {
        let mut out = String::new();
        if let Some(load) = self.load {
            out += &format!(
                "static_assert(sizeof(gpu_scan::stage_input<{staged_policy}>) == {}, \"the load stage's input has its Rust size\");\n",
                load.input_size
            );
        }
        if let Some(store) = self.store {
            out += &format!(
                "static_assert(sizeof(gpu_scan::stage_output<{staged_policy}>) == {}, \"the store stage's output has its Rust size\");\n",
                store.output_size
            );
        }
        out
    }

    /// What the stages add to a kernel's symbol, after the operator's name.
    fn symbol_part(self) -> String {
        let mut part = String::from("staged");
        for (side, stage) in [("load", self.load), ("store", self.store)] {
            if let Some(stage) = stage {
                part += &format!("_{side}_{}", stage.name);
            }
        }
        part
    }

    /// The stages a reduce-then-scan's first pass needs: it writes tile
    /// totals, not the output, so one kernel serves every store stage.
    fn without_store(self) -> Stages {
        Stages {
            store: None,
            ..self
        }
    }

    /// Whether `kernel` can run staged: the passes that read the input
    /// through `load_tile` and write the output through `store_tile`
    /// (`templates/tile.cuh`); not the pipelined pass, whose bulk copies
    /// move the operator's elements, nor the column scans.
    pub fn runs(kernel: Kernel) -> bool {
        matches!(
            kernel,
            Kernel::ReduceTiles
                | Kernel::ScanTilesInclusive
                | Kernel::ScanTilesExclusive
                | Kernel::SinglePassInclusive
                | Kernel::SinglePassExclusive
                | Kernel::SinglePassSmallInclusive
                | Kernel::SinglePassSmallExclusive
        )
    }
}

/// Threads per block of the element-wise kernels ([`KernelAbi::CombinePairs`]):
/// their launch bounds and the runtime's launches both read it.
pub const ELEMENTWISE_BLOCK_THREADS: u32 = 256;

/// The two steps of a scan's per-segment totals
/// ([`KernelAbi::SegmentTotals`], `segment_totals.cuh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TotalsStep {
    /// Before an exclusive scan: each segment's element at its end in scan
    /// order, saved in its totals slot (`input`, segments, `totals`,
    /// `segments`, `segment_count`, `reverse`).
    Boundaries,
    /// After the scan: each segment's total, read off the scan's output
    /// (`output`, segments, `totals`, `segments`, `segment_count`, `seed`,
    /// `seeded`, `exclusive`, `reverse`).
    Finish,
}

impl TotalsStep {
    /// Both steps.
    pub const ALL: [TotalsStep; 2] = [TotalsStep::Boundaries, TotalsStep::Finish];
}

/// The three kernels of a two-dimensional scan in tiles, for commutative
/// operators ([`KernelAbi::SummedArea`], `summed_area.cuh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AreaStep {
    /// Each tile's row totals, column totals and total (`input`,
    /// `row_totals`, `column_totals`, `tile_totals`, `rows`, `cols`,
    /// `band`, `reverse`): one block per tile.
    TileTotals,
    /// Those scanned in place into each row's and column's carry and each
    /// tile's corner, the initial value in front (`row_totals`,
    /// `column_totals`, `tile_totals`, `rows`, `cols`, `band`, `seed`).
    Carries,
    /// The table (`input`, `output`, `left`, `above`, `corners`, `rows`,
    /// `cols`, `band`, `reverse`, `exclusive`; exclusive out of place
    /// only): one block per tile.
    Finish,
}

impl AreaStep {
    /// The three steps, in launch order.
    pub const ALL: [AreaStep; 3] = [AreaStep::TileTotals, AreaStep::Carries, AreaStep::Finish];
}

/// The segment sources whose segments the host can count, so that a scan
/// can write one total per segment: rows, and offsets (CSR windows).
pub const TOTALS_SOURCES: [SegmentSource; 2] = [SegmentSource::Rows, SegmentSource::Offsets];

/// A pass of a scan over tiles, whichever [`Family`] of kernels runs it:
/// the steps every path of the runtime's planner is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    /// Each tile reduced to its total (reduce-then-scan's first pass).
    ReduceTiles,
    /// One block scans the tile totals (the second pass).
    ScanTileTotals,
    /// Each tile scanned, seeded with its prefix (the third pass, or the
    /// whole scan of one tile).
    ScanTiles,
    /// The single pass with decoupled look-back over full tiles.
    SinglePass,
    /// The single pass over small tiles (plain scans only).
    SinglePassSmall,
    /// The pipelined single pass (sm_90 and newer).
    Pipelined,
    /// A deterministic plain scan in one pass: the pipelined pass with a
    /// lookahead that links the tiles' totals in order (`deterministic.cuh`).
    DeterministicPipelined,
    /// The deterministic scan in three passes, 1: each pipelined tile's
    /// total.
    DeterministicReduce,
    /// 2: one warp, each tile's prefix (the chain of the totals before it).
    DeterministicPrefixes,
    /// 3: each tile rescanned behind its prefix.
    DeterministicScan,
}

impl Pass {
    /// Every pass.
    pub const ALL: [Pass; 10] = [
        Pass::ReduceTiles,
        Pass::ScanTileTotals,
        Pass::ScanTiles,
        Pass::SinglePass,
        Pass::SinglePassSmall,
        Pass::Pipelined,
        Pass::DeterministicPipelined,
        Pass::DeterministicReduce,
        Pass::DeterministicPrefixes,
        Pass::DeterministicScan,
    ];

    /// Whether this is a pass of the deterministic plain scan (plain
    /// scans only).
    pub const fn deterministic(self) -> bool {
        matches!(
            self,
            Pass::DeterministicPipelined
                | Pass::DeterministicReduce
                | Pass::DeterministicPrefixes
                | Pass::DeterministicScan
        )
    }
}

/// Which kernels run a scan over tiles: the plain ones, or the segmented
/// ones of one segment source and strategy. On the device a plain scan is a
/// segmented one with no segments (`gpu_scan::no_segments`); the families
/// differ only in the parameters that carry segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// No segments.
    Plain,
    /// Segments whose heads come from a source, in a strategy.
    Segmented(SegmentSource, SegmentedStrategy),
    /// No segments, the input read through a load stage and the output
    /// written through a store stage ([`Stages`]); no pipelined pass.
    Staged(Stages),
}

impl Family {
    /// The kernel that runs `pass` of an inclusive or exclusive scan in
    /// `direction`; `None` where the family has none (small tiles are
    /// plain only, and so are the deterministic passes; the segmented
    /// pipelined pass runs forward only).
    ///
    /// ```
    /// use kernels_gen::abi::{Family, KernelAbi, Pass};
    /// use kernels_gen::{Direction, Kernel, SegmentSource, SegmentedStrategy};
    ///
    /// let plain = Family::Plain.kernel(Pass::ScanTiles, true, Direction::Forward);
    /// assert_eq!(plain, Some(KernelAbi::plain(Kernel::ScanTilesInclusive)));
    /// let rows = Family::Segmented(SegmentSource::Rows, SegmentedStrategy::ALL[0]);
    /// assert_eq!(rows.kernel(Pass::Pipelined, true, Direction::Reverse), None);
    /// ```
    pub fn kernel(self, pass: Pass, inclusive: bool, direction: Direction) -> Option<KernelAbi> {
        let forward = match self {
            Family::Plain => KernelAbi::Plain(match (pass, inclusive) {
                (Pass::ReduceTiles, _) => Kernel::ReduceTiles,
                (Pass::ScanTileTotals, _) => Kernel::ScanTileTotals,
                (Pass::ScanTiles, true) => Kernel::ScanTilesInclusive,
                (Pass::ScanTiles, false) => Kernel::ScanTilesExclusive,
                (Pass::SinglePass, true) => Kernel::SinglePassInclusive,
                (Pass::SinglePass, false) => Kernel::SinglePassExclusive,
                (Pass::SinglePassSmall, true) => Kernel::SinglePassSmallInclusive,
                (Pass::SinglePassSmall, false) => Kernel::SinglePassSmallExclusive,
                (Pass::Pipelined, true) => Kernel::PipelinedInclusive,
                (Pass::Pipelined, false) => Kernel::PipelinedExclusive,
                (Pass::DeterministicPipelined, true) => Kernel::PipelinedDeterministicInclusive,
                (Pass::DeterministicPipelined, false) => Kernel::PipelinedDeterministicExclusive,
                (Pass::DeterministicReduce, _) => Kernel::DeterministicReduceTiles,
                (Pass::DeterministicPrefixes, _) => Kernel::DeterministicTilePrefixes,
                (Pass::DeterministicScan, true) => Kernel::DeterministicScanTilesInclusive,
                (Pass::DeterministicScan, false) => Kernel::DeterministicScanTilesExclusive,
            }),
            Family::Staged(stages) => {
                let Some(KernelAbi::Plain(kernel)) =
                    Family::Plain.kernel(pass, inclusive, Direction::Forward)
                else {
                    unreachable!("every pass has a plain kernel")
                };
                match pass {
                    Pass::Pipelined
                    | Pass::DeterministicPipelined
                    | Pass::DeterministicReduce
                    | Pass::DeterministicPrefixes
                    | Pass::DeterministicScan => return None,
                    // Over tile totals, which are the operator's elements.
                    Pass::ScanTileTotals => KernelAbi::Plain(kernel),
                    Pass::ReduceTiles => KernelAbi::Staged(kernel, stages.without_store()),
                    _ => KernelAbi::Staged(kernel, stages),
                }
            }
            Family::Segmented(source, strategy) => KernelAbi::Segmented(
                match pass {
                    Pass::ReduceTiles => SegmentedKernel::ReduceTiles(source),
                    Pass::ScanTileTotals => SegmentedKernel::ScanTileTotals,
                    Pass::ScanTiles => SegmentedKernel::ScanTiles { inclusive, source },
                    Pass::SinglePass => SegmentedKernel::SinglePass { inclusive, source },
                    Pass::SinglePassSmall
                    | Pass::DeterministicPipelined
                    | Pass::DeterministicReduce
                    | Pass::DeterministicPrefixes
                    | Pass::DeterministicScan => return None,
                    Pass::Pipelined => SegmentedKernel::Pipelined { inclusive, source },
                },
                strategy,
            ),
        };
        forward.in_direction(direction)
    }
}

/// One exported kernel of an operator's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelAbi {
    /// A kernel of plain scans.
    Plain(Kernel),
    /// A kernel of segmented scans, in one strategy.
    Segmented(SegmentedKernel, SegmentedStrategy),
    /// `output[i] = combine(left[i], right[i])` for `i < n`: the operator
    /// applied element-wise (`left`, `right`, `output`, `n`), a grid-stride
    /// loop of [`ELEMENTWISE_BLOCK_THREADS`]-thread blocks.
    CombinePairs,
    /// A plain scan's kernel run in reverse ([`Direction::Reverse`]): the
    /// same parameters, the template instantiated with
    /// `gpu_scan::reversed<Op>` (`flipped<Op>` for the pass over tile
    /// totals), see `direction.cuh`. Every plain kernel has one.
    PlainReverse(Kernel),
    /// A segmented scan's kernel run in reverse, as [`KernelAbi::PlainReverse`];
    /// every segmented kernel but the pipelined ones has one.
    SegmentedReverse(SegmentedKernel, SegmentedStrategy),
    /// A step of a scan's per-segment totals over segments of a source of
    /// [`TOTALS_SOURCES`] (`segment_totals.cuh`): a grid-stride loop of
    /// [`ELEMENTWISE_BLOCK_THREADS`]-thread blocks, one thread per segment.
    /// Its direction is a parameter (`reverse`), so it has no reverse kernel.
    SegmentTotals(TotalsStep, SegmentSource),
    /// A step of a two-dimensional scan in tiles (`summed_area.cuh`), for
    /// commutative operators. Its direction is a parameter (`reverse`), so
    /// it has no reverse kernel. [`AreaStep::Carries`] runs
    /// [`ELEMENTWISE_BLOCK_THREADS`]-thread blocks, the others the
    /// program's blocks, one per tile.
    SummedArea(AreaStep),
    /// A plain scan's kernel with load and store stages ([`Stages`], for a
    /// kernel [`Stages::runs`]): its parameters, but `input` of
    /// [`ParamType::StageIn`] and `output` of [`ParamType::StageOut`], the
    /// template instantiated with `gpu_scan::staged<Op, Load, Store>`.
    Staged(Kernel, Stages),
    /// A staged kernel run in reverse, as [`KernelAbi::PlainReverse`].
    StagedReverse(Kernel, Stages),
}

impl KernelAbi {
    /// A plain scan's kernel.
    pub const fn plain(kernel: Kernel) -> KernelAbi {
        KernelAbi::Plain(kernel)
    }

    /// A segmented scan's kernel.
    pub const fn segmented(kernel: SegmentedKernel, strategy: SegmentedStrategy) -> KernelAbi {
        KernelAbi::Segmented(kernel, strategy)
    }

    /// Every forward kernel of a program: the plain ones, the element-wise
    /// one, then (compiled only with [`crate::SEGMENTED_DEFINE`]) the
    /// segmented ones of both strategies.
    pub fn all_forward() -> impl Iterator<Item = KernelAbi> {
        Kernel::ALL
            .into_iter()
            .map(KernelAbi::Plain)
            .chain([KernelAbi::CombinePairs])
            .chain(SegmentedStrategy::ALL.into_iter().flat_map(|s| {
                SegmentedKernel::ALL
                    .into_iter()
                    .map(move |k| KernelAbi::Segmented(k, s))
            }))
            .chain(TOTALS_SOURCES.into_iter().flat_map(|source| {
                TotalsStep::ALL
                    .into_iter()
                    .map(move |step| KernelAbi::SegmentTotals(step, source))
            }))
            .chain(AreaStep::ALL.map(KernelAbi::SummedArea))
    }

    /// Every staged kernel a scan through `stages` may take
    /// ([`KernelAbi::Staged`]: the plain kernels [`Stages::runs`], the
    /// first pass of reduce-then-scan without the store stage, forward
    /// then reverse).
    pub fn all_staged(stages: Stages) -> impl Iterator<Item = KernelAbi> {
        let forward = Kernel::ALL
            .into_iter()
            .filter(|&k| Stages::runs(k))
            .map(move |k| match k {
                Kernel::ReduceTiles => KernelAbi::Staged(k, stages.without_store()),
                _ => KernelAbi::Staged(k, stages),
            });
        forward
            .clone()
            .chain(forward.filter_map(KernelAbi::reversed))
    }

    /// Every kernel of a program: [`KernelAbi::all_forward`], then the
    /// reverse ones.
    pub fn all() -> impl Iterator<Item = KernelAbi> {
        Self::all_forward().chain(Self::all_forward().filter_map(KernelAbi::reversed))
    }

    /// This kernel run in `direction`: itself going forward; in reverse its
    /// reverse kernel, `None` where there is none (the segmented pipelined
    /// passes, and the element-wise kernel, which has no direction).
    pub fn in_direction(self, direction: Direction) -> Option<KernelAbi> {
        match direction {
            Direction::Forward => Some(self.forward()),
            Direction::Reverse => self.forward().reversed(),
        }
    }

    /// The reverse kernel of a forward one ([`KernelAbi::in_direction`]).
    fn reversed(self) -> Option<KernelAbi> {
        match self {
            KernelAbi::Segmented(SegmentedKernel::Pipelined { .. }, _)
            | KernelAbi::SegmentedReverse(SegmentedKernel::Pipelined { .. }, _)
            | KernelAbi::CombinePairs
            | KernelAbi::SegmentTotals(..)
            | KernelAbi::SummedArea(_) => None,
            KernelAbi::Plain(k) | KernelAbi::PlainReverse(k) => Some(KernelAbi::PlainReverse(k)),
            KernelAbi::Segmented(k, s) | KernelAbi::SegmentedReverse(k, s) => {
                Some(KernelAbi::SegmentedReverse(k, s))
            }
            KernelAbi::Staged(k, s) | KernelAbi::StagedReverse(k, s) => {
                Some(KernelAbi::StagedReverse(k, s))
            }
        }
    }

    /// The forward kernel this one runs in reverse, or itself.
    pub fn forward(self) -> KernelAbi {
        match self {
            KernelAbi::PlainReverse(k) => KernelAbi::Plain(k),
            KernelAbi::SegmentedReverse(k, s) => KernelAbi::Segmented(k, s),
            KernelAbi::StagedReverse(k, s) => KernelAbi::Staged(k, s),
            forward => forward,
        }
    }

    /// Which way the kernel scans.
    pub fn direction(self) -> Direction {
        match self {
            KernelAbi::PlainReverse(_)
            | KernelAbi::SegmentedReverse(..)
            | KernelAbi::StagedReverse(..) => Direction::Reverse,
            _ => Direction::Forward,
        }
    }

    /// The exported symbol in operator `op_name`'s program: a reverse
    /// kernel's has `reverse_` after the operator's name.
    pub fn symbol(self, op_name: &str) -> String {
        match self {
            KernelAbi::Plain(k) => k.symbol(op_name),
            KernelAbi::Segmented(k, s) => k.symbol(op_name, s),
            KernelAbi::CombinePairs => format!("{SYMBOL_PREFIX}{op_name}_combine_pairs"),
            KernelAbi::SegmentTotals(step, source) => {
                let step = match step {
                    TotalsStep::Boundaries => "boundaries",
                    TotalsStep::Finish => "totals",
                };
                format!(
                    "{SYMBOL_PREFIX}{op_name}_segment_{step}_{}",
                    source.suffix()
                )
            }
            KernelAbi::SummedArea(step) => {
                let step = match step {
                    AreaStep::TileTotals => "tile_totals",
                    AreaStep::Carries => "carries",
                    AreaStep::Finish => "finish",
                };
                format!("{SYMBOL_PREFIX}{op_name}_area_{step}")
            }
            KernelAbi::Staged(k, stages) => format!(
                "{SYMBOL_PREFIX}{op_name}_{}_{}",
                stages.symbol_part(),
                k.suffix()
            ),
            KernelAbi::PlainReverse(_)
            | KernelAbi::SegmentedReverse(..)
            | KernelAbi::StagedReverse(..) => {
                let forward = self.forward().symbol(op_name);
                let head = format!("{SYMBOL_PREFIX}{op_name}_");
                format!("{head}reverse_{}", &forward[head.len()..])
            }
        }
    }

    /// The operator policy the kernel's template takes, for operator policy
    /// `op`: `op` going forward; in reverse `gpu_scan::reversed<op>`, and
    /// `gpu_scan::flipped<op>` for the passes over tile totals, which are
    /// in scan order already (`direction.cuh`). A staged kernel's is
    /// `gpu_scan::staged<op, Load, Store>` ([`Stages::policy`]), reversed
    /// likewise.
    fn policy(self, op: &str) -> String {
        match self {
            KernelAbi::Staged(_, stages) => stages.policy(op),
            KernelAbi::StagedReverse(_, stages) => {
                format!("gpu_scan::reversed<{}>", stages.policy(op))
            }
            KernelAbi::PlainReverse(Kernel::ScanTileTotals)
            | KernelAbi::SegmentedReverse(SegmentedKernel::ScanTileTotals, _) => {
                format!("gpu_scan::flipped<{op}>")
            }
            KernelAbi::PlainReverse(_) | KernelAbi::SegmentedReverse(..) => {
                format!("gpu_scan::reversed<{op}>")
            }
            _ => op.to_string(),
        }
    }

    /// The kernel's parameters, in order (a reverse kernel's are its
    /// forward kernel's). A segmented kernel over [`SegmentSource::Rows`]
    /// takes `row_length` where the others take `flags`, one over
    /// [`SegmentSource::Offsets`] `offsets`, one over
    /// [`SegmentSource::Keys`] `keys`.
    pub fn params(self) -> Vec<Param> {
        self.param_list().collect()
    }

    /// [`KernelAbi::params`] without collecting them (what every launch
    /// checks its arguments against, with no allocation).
    pub fn param_list(self) -> impl ExactSizeIterator<Item = Param> {
        let list = match self.forward() {
            KernelAbi::Plain(k) | KernelAbi::Staged(k, _) => match k {
                Kernel::ReduceTiles => REDUCE_TILES,
                Kernel::ScanTileTotals => SCAN_TILE_TOTALS,
                Kernel::ScanTilesInclusive | Kernel::ScanTilesExclusive => SCAN_TILES,
                Kernel::SinglePassInclusive
                | Kernel::SinglePassExclusive
                | Kernel::SinglePassSmallInclusive
                | Kernel::SinglePassSmallExclusive => SINGLE_PASS,
                Kernel::PipelinedInclusive
                | Kernel::PipelinedExclusive
                | Kernel::PipelinedDeterministicInclusive
                | Kernel::PipelinedDeterministicExclusive => PIPELINED,
                Kernel::ColumnsInclusive | Kernel::ColumnsExclusive => COLUMNS,
                Kernel::DeterministicReduceTiles => DETERMINISTIC_REDUCE_TILES,
                Kernel::DeterministicTilePrefixes => DETERMINISTIC_TILE_PREFIXES,
                Kernel::DeterministicScanTilesInclusive
                | Kernel::DeterministicScanTilesExclusive => DETERMINISTIC_SCAN_TILES,
            },
            KernelAbi::Segmented(k, _) => match k {
                SegmentedKernel::ReduceTiles(_) => SEGMENTED_REDUCE_TILES,
                SegmentedKernel::ScanTileTotals => SEGMENTED_SCAN_TILE_TOTALS,
                SegmentedKernel::ScanTiles { .. } => SEGMENTED_SCAN_TILES,
                SegmentedKernel::SinglePass { .. } => SEGMENTED_SINGLE_PASS,
                SegmentedKernel::Pipelined { .. } => SEGMENTED_PIPELINED,
            },
            KernelAbi::CombinePairs => COMBINE_PAIRS,
            KernelAbi::SegmentTotals(TotalsStep::Boundaries, _) => SEGMENT_BOUNDARIES,
            KernelAbi::SegmentTotals(TotalsStep::Finish, _) => SEGMENT_TOTALS,
            KernelAbi::SummedArea(AreaStep::TileTotals) => AREA_TILE_TOTALS,
            KernelAbi::SummedArea(AreaStep::Carries) => AREA_CARRIES,
            KernelAbi::SummedArea(AreaStep::Finish) => AREA_FINISH,
            KernelAbi::PlainReverse(_)
            | KernelAbi::SegmentedReverse(..)
            | KernelAbi::StagedReverse(..) => {
                unreachable!("forward() is a forward kernel")
            }
        };
        // Staged, the input and output are of the stages' types.
        let staged = matches!(self.forward(), KernelAbi::Staged(..));
        let source = self.source();
        list.iter().map(move |&p| match (p.ty, source) {
            (ElementsIn, _) if staged && p.name == "input" => param("input", StageIn),
            (ElementsOut, _) if staged && p.name == "output" => param("output", StageOut),
            (HeadFlags, Some(SegmentSource::Rows)) => param("row_length", RowLength),
            (HeadFlags, Some(SegmentSource::Offsets)) => param("offsets", SegmentOffsets),
            (HeadFlags, Some(SegmentSource::Keys)) => param("keys", SegmentKeys),
            _ => p,
        })
    }

    /// Where a segmented kernel finds segment heads (`None` for plain
    /// kernels and the segmented pass over tile totals); for the
    /// per-segment totals, where their segments come from.
    pub fn source(self) -> Option<SegmentSource> {
        match self.forward() {
            KernelAbi::Segmented(k, _) => k.source(),
            KernelAbi::SegmentTotals(_, source) => Some(source),
            _ => None,
        }
    }

    /// Whether this is the pipelined pass over segment offsets, whose
    /// blocks have more heads warps where the architecture allows them
    /// ([`crate::layout::Layout::pipelined_threads`]).
    pub fn pipelined_over_offsets(self) -> bool {
        matches!(
            self.forward(),
            KernelAbi::Segmented(
                SegmentedKernel::Pipelined {
                    source: SegmentSource::Offsets,
                    ..
                },
                _
            )
        )
    }

    /// The `__launch_bounds__` of the wrapper, for operator policy `op`.
    fn bounds(self, op: &str) -> String {
        // A staged kernel's are its plain kernel's, for the staged policy.
        if let KernelAbi::Staged(k, _) = self.forward() {
            let plain = KernelAbi::Plain(k).in_direction(self.direction());
            return plain.expect("every plain kernel runs both ways").bounds(op);
        }
        let single_pass = |min_blocks: &str| {
            format!("__launch_bounds__(gpu_scan::Shape<{op}>::block_threads, gpu_scan::Shape<{op}>::{min_blocks})")
        };
        match self.forward() {
            KernelAbi::Plain(
                Kernel::SinglePassInclusive
                | Kernel::SinglePassExclusive
                | Kernel::SinglePassSmallInclusive
                | Kernel::SinglePassSmallExclusive,
            ) => single_pass("single_pass_min_blocks"),
            KernelAbi::Segmented(SegmentedKernel::SinglePass { .. }, _) => {
                single_pass("segmented_single_pass_min_blocks")
            }
            KernelAbi::Segmented(SegmentedKernel::Pipelined { .. }, _)
                if self.pipelined_over_offsets() =>
            {
                format!(
                    "__launch_bounds__(gpu_scan::Shape<{op}>::pipelined_offsets_block_threads, 1)"
                )
            }
            KernelAbi::Plain(
                Kernel::PipelinedInclusive
                | Kernel::PipelinedExclusive
                | Kernel::PipelinedDeterministicInclusive
                | Kernel::PipelinedDeterministicExclusive,
            )
            | KernelAbi::Segmented(SegmentedKernel::Pipelined { .. }, _) => {
                format!("__launch_bounds__(gpu_scan::Shape<{op}>::pipelined_block_threads, 1)")
            }
            KernelAbi::Plain(
                Kernel::DeterministicReduceTiles
                | Kernel::DeterministicScanTilesInclusive
                | Kernel::DeterministicScanTilesExclusive,
            ) => format!("__launch_bounds__(gpu_scan::deterministic_shape<{op}>::threads)"),
            KernelAbi::Plain(Kernel::DeterministicTilePrefixes) => {
                format!("__launch_bounds__({DETERMINISTIC_PREFIXES_THREADS})")
            }
            KernelAbi::CombinePairs
            | KernelAbi::SegmentTotals(..)
            | KernelAbi::SummedArea(AreaStep::Carries) => {
                format!("__launch_bounds__({ELEMENTWISE_BLOCK_THREADS})")
            }
            KernelAbi::SummedArea(_) => {
                format!("__launch_bounds__(gpu_scan::Shape<{op}>::block_threads, gpu_scan::area_stage<{op}>::min_blocks)")
            }
            // Both ways (Shape::column_min_blocks is the mirrored one in reverse).
            KernelAbi::Plain(Kernel::ColumnsInclusive | Kernel::ColumnsExclusive) => {
                single_pass("column_min_blocks")
            }
            // The reduce-then-scan passes in reverse, and over rows,
            // offsets or keys: one block per SM as the floor, on sm_90 too,
            // where ptxas's default spilled a segmented reverse tile scan
            // of 24-byte elements, tile scans over offsets of 8- to 16-byte
            // ones, tile scans by key of 1- to 16-byte ones, and (with the
            // carry-out) tile scans by rows of 12-byte ones.
            _ if self.direction() == Direction::Reverse
                || matches!(
                    self.source(),
                    Some(SegmentSource::Rows | SegmentSource::Offsets | SegmentSource::Keys)
                ) =>
            {
                format!("__launch_bounds__(gpu_scan::Shape<{op}>::block_threads, 1)")
            }
            _ => format!("__launch_bounds__(gpu_scan::Shape<{op}>::block_threads, gpu_scan::Shape<{op}>::default_min_blocks)"),
        }
    }

    /// The library template the wrapper instantiates and the call's
    /// arguments, for operator policy `op`. Plain kernels scan with the
    /// `no_segments` policy; segmented ones build a `head_flags` policy
    /// from their flags, seed and `seeded` parameters. `op` is the policy
    /// of [`KernelAbi::policy`], and `self` a forward kernel. Segmented
    /// kernels over rows build a `fixed_rows` policy from `row_length`, over
    /// offsets a `segment_offsets` policy from `offsets`.
    fn call(self, op: &str) -> (String, String) {
        let mode = |inclusive: bool| {
            if inclusive {
                "scan_inclusive"
            } else {
                "scan_exclusive"
            }
        };
        let items = format!("gpu_scan::Shape<{op}>::items_per_thread");
        let small_items = format!("gpu_scan::Shape<{op}>::small_items_per_thread");
        let plain = "gpu_scan::no_segments";
        let none = "gpu_scan::no_segments{}";
        let heads = |s: SegmentedStrategy, source: SegmentSource| {
            let (policy, heads) = match source {
                SegmentSource::Flags(f) => (
                    format!(
                        "gpu_scan::head_flags<{op}, {}, {}>",
                        f.cuda_name(),
                        s.cuda_name()
                    ),
                    "flags",
                ),
                SegmentSource::Rows => (
                    format!("gpu_scan::fixed_rows<{op}, {}>", s.cuda_name()),
                    "row_length",
                ),
                SegmentSource::Offsets => (
                    format!("gpu_scan::segment_offsets<{op}, {}>", s.cuda_name()),
                    "offsets",
                ),
                SegmentSource::Keys => (
                    format!("gpu_scan::segment_keys<{op}, {}>", s.cuda_name()),
                    "keys",
                ),
            };
            let value = format!("{policy}{{{heads}, seed, seeded != 0}}");
            (policy, value)
        };
        let single_pass = |mode: &str, seg: &str, items: &str, value: &str| {
            (
                format!("scan_single_pass<{op}, {mode}, {seg}, {items}>"),
                format!("input, {value}, output, status, aggregates, prefixes, launch, carry_out, seed, n"),
            )
        };
        let pipelined = |mode: &str, seg: &str, value: &str| {
            (
                format!("scan_pipelined<{op}, {mode}, {seg}>"),
                format!(
                    "input, {value}, output, status, aggregates, prefixes, launch, carry_out, seed, n, tiles"
                ),
            )
        };
        let scan_tiles = |mode: &str, seg: &str, value: &str| {
            (
                format!("scan_tiles<{op}, {mode}, {seg}>"),
                format!("input, {value}, output, tile_prefixes, carry_out, seed, n"),
            )
        };
        match self {
            KernelAbi::CombinePairs => (
                format!("combine_pairs<{op}>"),
                "left, right, output, n".to_string(),
            ),
            KernelAbi::SegmentTotals(step, source) => {
                let ranges = match source {
                    SegmentSource::Rows => "gpu_scan::row_ranges{row_length}",
                    SegmentSource::Offsets => "gpu_scan::offset_ranges{offsets}",
                    _ => unreachable!("per-segment totals over {source:?}"),
                };
                match step {
                    TotalsStep::Boundaries => (
                        format!("segment_boundaries<{op}>"),
                        format!("input, {ranges}, totals, segments, segment_count, reverse"),
                    ),
                    TotalsStep::Finish => (
                        format!("segment_totals<{op}>"),
                        format!(
                            "output, {ranges}, totals, segments, segment_count, seed, seeded, exclusive, reverse"
                        ),
                    ),
                }
            }
            KernelAbi::SummedArea(step) => match step {
                AreaStep::TileTotals => (
                    format!("area_tile_totals<{op}>"),
                    "input, row_totals, column_totals, tile_totals, rows, cols, band, reverse"
                        .to_string(),
                ),
                AreaStep::Carries => (
                    format!("area_carries<{op}>"),
                    "row_totals, column_totals, tile_totals, rows, cols, band, seed".to_string(),
                ),
                AreaStep::Finish => (
                    format!("area_finish<{op}>"),
                    "input, output, left, above, corners, rows, cols, band, reverse, exclusive"
                        .to_string(),
                ),
            },
            KernelAbi::Plain(k) => match k {
                Kernel::ReduceTiles => (
                    format!("reduce_tiles<{op}, {plain}>"),
                    format!("input, {none}, tile_totals, nullptr, n"),
                ),
                Kernel::ScanTileTotals => (
                    format!("scan_tile_totals<{op}, {plain}>"),
                    format!("tile_totals, {none}, num_tiles, seed"),
                ),
                Kernel::ScanTilesInclusive => scan_tiles(mode(true), plain, none),
                Kernel::ScanTilesExclusive => scan_tiles(mode(false), plain, none),
                Kernel::SinglePassInclusive => single_pass(mode(true), plain, &items, none),
                Kernel::SinglePassExclusive => single_pass(mode(false), plain, &items, none),
                Kernel::SinglePassSmallInclusive => {
                    single_pass(mode(true), plain, &small_items, none)
                }
                Kernel::SinglePassSmallExclusive => {
                    single_pass(mode(false), plain, &small_items, none)
                }
                Kernel::PipelinedInclusive => pipelined(mode(true), plain, none),
                Kernel::PipelinedExclusive => pipelined(mode(false), plain, none),
                Kernel::PipelinedDeterministicInclusive
                | Kernel::PipelinedDeterministicExclusive => {
                    let (_, args) = pipelined(mode(true), plain, none);
                    let mode = mode(k == Kernel::PipelinedDeterministicInclusive);
                    // The pipelined pass with its deterministic lookahead.
                    (format!("scan_pipelined<{op}, {mode}, {plain}, true>"), args)
                }
                Kernel::DeterministicReduceTiles => (
                    format!("deterministic_reduce_tiles<{op}>"),
                    "input, tile_totals, n".to_string(),
                ),
                Kernel::DeterministicTilePrefixes => (
                    format!("deterministic_tile_prefixes<{op}>"),
                    "tile_totals, tile_prefixes, carry_out, num_tiles, seed".to_string(),
                ),
                Kernel::DeterministicScanTilesInclusive
                | Kernel::DeterministicScanTilesExclusive => (
                    format!(
                        "deterministic_scan_tiles<{op}, {}>",
                        mode(k == Kernel::DeterministicScanTilesInclusive)
                    ),
                    "input, output, tile_prefixes, n".to_string(),
                ),
                Kernel::ColumnsInclusive | Kernel::ColumnsExclusive => (
                    format!(
                        "scan_columns<{op}, {}>",
                        mode(k == Kernel::ColumnsInclusive)
                    ),
                    "input, output, status, aggregates, prefixes, launch, seed, rows, cols, row_lanes, walk"
                        .to_string(),
                ),
            },
            KernelAbi::Segmented(k, s) => match k {
                SegmentedKernel::ReduceTiles(source) => {
                    let (seg, value) = heads(s, source);
                    (
                        format!("reduce_tiles<{op}, {seg}>"),
                        format!("input, {value}, tile_totals, tile_flags, n"),
                    )
                }
                SegmentedKernel::ScanTileTotals => {
                    // The tiles' flags, one byte each, read one by one; no
                    // seed (it went in front of each segment in pass 1).
                    let seg = format!(
                        "gpu_scan::head_flags<{op}, {}, {}, false>",
                        FlagFormat::Bytes.cuda_name(),
                        s.cuda_name()
                    );
                    (
                        format!("scan_tile_totals<{op}, {seg}>"),
                        format!(
                            "tile_totals, {seg}{{tile_flags, {op}::identity(), false}}, num_tiles, {op}::identity()"
                        ),
                    )
                }
                SegmentedKernel::ScanTiles { inclusive, source } => {
                    let (seg, value) = heads(s, source);
                    scan_tiles(mode(inclusive), &seg, &value)
                }
                SegmentedKernel::SinglePass { inclusive, source } => {
                    let (seg, value) = heads(s, source);
                    single_pass(mode(inclusive), &seg, &items, &value)
                }
                SegmentedKernel::Pipelined { inclusive, source } => {
                    let (seg, value) = heads(s, source);
                    pipelined(mode(inclusive), &seg, &value)
                }
            },
            // The plain kernel's call, `op` the staged policy.
            KernelAbi::Staged(k, _) => KernelAbi::Plain(k).call(op),
            KernelAbi::PlainReverse(_)
            | KernelAbi::SegmentedReverse(..)
            | KernelAbi::StagedReverse(..) => {
                unreachable!("call() takes the forward kernel")
            }
        }
    }

    /// The `extern "C"` wrapper of this kernel for operator `op_name`
    /// (whose policy is `gpu_scan_ops::<op_name>`).
    pub fn wrapper(self, op_name: &str) -> String {
        let policy = &format!("{POLICY_NAMESPACE}::{op_name}");
        let t = &format!("{policy}::T");
        // The stages' types, from the staged policy (the same either way).
        let staged = match self.forward() {
            KernelAbi::Staged(_, stages) => stages.policy(policy),
            _ => policy.clone(),
        };
        let cuda_type = |ty: ParamType| match ty {
            StageIn => format!("const gpu_scan::stage_input<{staged}>*"),
            StageOut => format!("gpu_scan::stage_output<{staged}>*"),
            ty => ty.cuda_type(t),
        };
        let params = self
            .params()
            .iter()
            .map(|p| format!("{} {}", cuda_type(p.ty), p.name))
            .collect::<Vec<_>>()
            .join(", ");
        let (template, args) = self.forward().call(&self.policy(policy));
        let asserts = match self.forward() {
            KernelAbi::Staged(_, stages) => stages.size_asserts(&staged),
            _ => String::new(),
        };
        format!(
            "{asserts}extern \"C\" __global__ void {} {}({params}) {{\n  gpu_scan::{template}({args});\n}}\n",
            self.bounds(&self.policy(policy)),
            self.symbol(op_name),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_families_passes_reach_every_kernel_of_a_scan_over_tiles() {
        let mut reached = HashSet::new();
        let families = std::iter::once(Family::Plain).chain(
            SegmentedStrategy::ALL.into_iter().flat_map(|strategy| {
                SegmentSource::ALL
                    .into_iter()
                    .map(move |source| Family::Segmented(source, strategy))
            }),
        );
        for family in families {
            for pass in Pass::ALL {
                for inclusive in [true, false] {
                    for direction in [Direction::Forward, Direction::Reverse] {
                        let Some(abi) = family.kernel(pass, inclusive, direction) else {
                            let segmented_small = family != Family::Plain
                                && (pass == Pass::SinglePassSmall || pass.deterministic());
                            let segmented_pipelined_reverse = family != Family::Plain
                                && pass == Pass::Pipelined
                                && direction == Direction::Reverse;
                            assert!(segmented_small || segmented_pipelined_reverse);
                            continue;
                        };
                        assert_eq!(abi.direction(), direction, "{abi:?}");
                        let plain = matches!(abi.forward(), KernelAbi::Plain(_));
                        assert_eq!(plain, family == Family::Plain, "{abi:?}");
                        reached.insert(abi);
                    }
                }
            }
        }
        // Every plain and segmented kernel but the column scans.
        let expected: HashSet<KernelAbi> = KernelAbi::all()
            .filter(|abi| match abi.forward() {
                KernelAbi::Plain(k) => {
                    !matches!(k, Kernel::ColumnsInclusive | Kernel::ColumnsExclusive)
                }
                KernelAbi::Segmented(..) => true,
                _ => false,
            })
            .collect();
        assert_eq!(reached, expected);
    }

    #[test]
    fn every_kernel_has_a_distinct_symbol() {
        let symbols: HashSet<String> = KernelAbi::all().map(|k| k.symbol("op")).collect();
        for symbol in &symbols {
            assert!(symbol.starts_with("gpu_scan_op_"), "{symbol}");
        }
        assert_eq!(symbols.len(), KernelAbi::all().count());
        // Reverse kernels for all but the segmented pipelined ones and the
        // element-wise one.
        let forward = Kernel::ALL.len() + 1 + 2 * SegmentedKernel::ALL.len();
        let pipelined = 2 * 2 * SegmentSource::ALL.len();
        // The per-segment totals' steps have no reverse kernel either.
        let totals = TotalsStep::ALL.len() * TOTALS_SOURCES.len();
        // Nor the two-dimensional scan's steps.
        let area = AreaStep::ALL.len();
        assert_eq!(symbols.len(), 2 * forward - 1 - pipelined + totals + area);
    }

    #[test]
    fn wrappers_declare_the_table_s_parameters_and_pass_them_on() {
        let text = KernelAbi::plain(Kernel::ScanTileTotals).wrapper("sum");
        assert!(text.contains(
            "gpu_scan_sum_scan_tile_totals(gpu_scan_ops::sum::T* tile_totals, unsigned long long num_tiles, const gpu_scan_ops::sum::T seed)"
        ));
        assert!(text.contains(
            "gpu_scan::scan_tile_totals<gpu_scan_ops::sum, gpu_scan::no_segments>(tile_totals, gpu_scan::no_segments{}, num_tiles, seed);"
        ));
    }

    #[test]
    fn rows_kernels_take_a_row_length_in_place_of_flags() {
        let rows = SegmentedKernel::SinglePass {
            inclusive: true,
            source: SegmentSource::Rows,
        };
        let flags = SegmentedKernel::SinglePass {
            inclusive: true,
            source: SegmentSource::Flags(FlagFormat::Bits),
        };
        let s = SegmentedStrategy::ConditionalIndexing;
        let (rows, flags) = (
            KernelAbi::segmented(rows, s),
            KernelAbi::segmented(flags, s),
        );
        let differ: Vec<_> = rows
            .params()
            .into_iter()
            .zip(flags.params())
            .filter(|(r, f)| r != f)
            .collect();
        assert_eq!(
            differ,
            [(param("row_length", RowLength), param("flags", HeadFlags))]
        );
        assert_eq!(rows.params().len(), flags.params().len());
        let text = rows.wrapper("op");
        assert!(text.contains("unsigned long long row_length"), "{text}");
        assert!(
            text.contains("gpu_scan::fixed_rows<gpu_scan_ops::op, scan_segmented_indexing>{row_length, seed, seeded != 0}"),
            "{text}"
        );
        assert_eq!(
            rows.symbol("op"),
            "gpu_scan_op_segmented_indexing_single_pass_inclusive_rows"
        );
        assert_eq!(
            rows.in_direction(Direction::Reverse).unwrap().symbol("op"),
            "gpu_scan_op_reverse_segmented_indexing_single_pass_inclusive_rows"
        );
    }

    #[test]
    fn offsets_kernels_take_offsets_in_place_of_flags() {
        let s = SegmentedStrategy::OperatorTransformation;
        for inclusive in [true, false] {
            let kernels = [
                SegmentedKernel::ReduceTiles(SegmentSource::Offsets),
                SegmentedKernel::ScanTiles {
                    inclusive,
                    source: SegmentSource::Offsets,
                },
                SegmentedKernel::SinglePass {
                    inclusive,
                    source: SegmentSource::Offsets,
                },
                SegmentedKernel::Pipelined {
                    inclusive,
                    source: SegmentSource::Offsets,
                },
            ];
            for kernel in kernels {
                let flags = match kernel {
                    SegmentedKernel::ReduceTiles(_) => {
                        SegmentedKernel::ReduceTiles(FlagFormat::Bytes.into())
                    }
                    SegmentedKernel::ScanTiles { inclusive, .. } => SegmentedKernel::ScanTiles {
                        inclusive,
                        source: FlagFormat::Bytes.into(),
                    },
                    SegmentedKernel::SinglePass { inclusive, .. } => SegmentedKernel::SinglePass {
                        inclusive,
                        source: FlagFormat::Bytes.into(),
                    },
                    _ => SegmentedKernel::Pipelined {
                        inclusive,
                        source: FlagFormat::Bytes.into(),
                    },
                };
                let (offsets, flags) = (
                    KernelAbi::segmented(kernel, s),
                    KernelAbi::segmented(flags, s),
                );
                let differ: Vec<_> = offsets
                    .params()
                    .into_iter()
                    .zip(flags.params())
                    .filter(|(o, f)| o != f)
                    .collect();
                assert_eq!(
                    differ,
                    [(param("offsets", SegmentOffsets), param("flags", HeadFlags))]
                );
                let text = offsets.wrapper("op");
                assert!(text.contains("scan_offsets offsets"), "{text}");
                assert!(
                    text.contains("gpu_scan::segment_offsets<gpu_scan_ops::op, scan_segmented_transform>{offsets, seed, seeded != 0}"),
                    "{text}"
                );
                assert!(offsets.symbol("op").ends_with("_offsets"));
            }
        }
    }

    #[test]
    fn keys_kernels_take_keys_in_place_of_flags() {
        for strategy in SegmentedStrategy::ALL {
            for kernel in SegmentedKernel::ALL {
                if kernel.source() != Some(SegmentSource::Keys) {
                    continue;
                }
                let keys = KernelAbi::segmented(kernel, strategy);
                let params = keys.params();
                assert_eq!(
                    params.iter().filter(|p| p.ty == SegmentKeys).count(),
                    1,
                    "{kernel:?}"
                );
                assert!(params.iter().all(|p| p.ty != HeadFlags), "{kernel:?}");
                let text = keys.wrapper("op");
                assert!(text.contains("scan_keys keys"), "{text}");
                assert!(
                    text.contains(&format!(
                        "gpu_scan::segment_keys<gpu_scan_ops::op, {}>{{keys, seed, seeded != 0}}",
                        strategy.cuda_name()
                    )),
                    "{text}"
                );
                assert!(keys.symbol("op").ends_with("_keys"));
            }
        }
    }

    #[test]
    fn segment_totals_kernels_take_rows_or_offsets_and_no_direction() {
        for source in TOTALS_SOURCES {
            for step in TotalsStep::ALL {
                let abi = KernelAbi::SegmentTotals(step, source);
                assert_eq!(abi.in_direction(Direction::Reverse), None);
                assert_eq!(abi.in_direction(Direction::Forward), Some(abi));
                let text = abi.wrapper("op");
                let (segments, ranges) = match source {
                    SegmentSource::Rows => (
                        "unsigned long long row_length",
                        "gpu_scan::row_ranges{row_length}",
                    ),
                    _ => ("scan_offsets offsets", "gpu_scan::offset_ranges{offsets}"),
                };
                assert!(text.contains(segments), "{text}");
                assert!(text.contains(ranges), "{text}");
                assert!(text.contains("__launch_bounds__(256)"), "{text}");
                let name = match step {
                    TotalsStep::Boundaries => "boundaries",
                    TotalsStep::Finish => "totals",
                };
                assert_eq!(
                    abi.symbol("op"),
                    format!("gpu_scan_op_segment_{name}_{}", source.suffix())
                );
            }
        }
        assert_eq!(
            KernelAbi::all()
                .filter(|k| matches!(k, KernelAbi::SegmentTotals(..)))
                .count(),
            4
        );
    }

    /// Stages for the tests: a load and a store stage.
    pub(crate) fn test_stages() -> Stages {
        struct Widen;
        struct Narrow;
        Stages {
            load: Some(StageRef {
                id: std::any::TypeId::of::<Widen>(),
                name: "widen_0123",
                source: "",
                input_size: 1,
                output_size: 4,
            }),
            store: Some(StageRef {
                id: std::any::TypeId::of::<Narrow>(),
                name: "narrow_4567",
                source: "",
                input_size: 4,
                output_size: 2,
            }),
        }
    }

    #[test]
    fn staged_kernels_are_the_plain_ones_through_the_stages() {
        let stages = test_stages();
        let staged = Family::Staged(stages);
        for direction in [Direction::Forward, Direction::Reverse] {
            for inclusive in [true, false] {
                let k = |pass| staged.kernel(pass, inclusive, direction);
                assert_eq!(k(Pass::Pipelined), None);
                // Tile totals are the operator's elements: the plain pass.
                assert_eq!(
                    k(Pass::ScanTileTotals),
                    Family::Plain.kernel(Pass::ScanTileTotals, inclusive, direction)
                );
                // The first pass writes no output: no store stage.
                let Some(reduce) = k(Pass::ReduceTiles) else {
                    panic!()
                };
                assert_eq!(reduce.direction(), direction);
                assert!(
                    matches!(reduce.forward(), KernelAbi::Staged(Kernel::ReduceTiles, s) if s.store.is_none() && s.load == stages.load)
                );
                for pass in [Pass::ScanTiles, Pass::SinglePass, Pass::SinglePassSmall] {
                    let Some(KernelAbi::Plain(plain)) =
                        Family::Plain.kernel(pass, inclusive, Direction::Forward)
                    else {
                        panic!()
                    };
                    let abi = k(pass).unwrap();
                    assert_eq!(abi.forward(), KernelAbi::Staged(plain, stages));
                    assert_eq!(abi.direction(), direction);
                    assert!(KernelAbi::all_staged(stages).any(|s| s == abi));
                }
            }
        }
        assert_eq!(KernelAbi::all_staged(stages).count(), 14);
    }

    #[test]
    fn staged_wrappers_read_and_write_the_stages_types() {
        let stages = test_stages();
        let symbols: HashSet<String> = KernelAbi::all_staged(stages)
            .map(|k| k.symbol("sum"))
            .collect();
        assert_eq!(symbols.len(), 14);
        assert!(symbols.contains(
            "gpu_scan_sum_staged_load_widen_0123_store_narrow_4567_single_pass_inclusive"
        ));
        assert!(symbols.contains(
            "gpu_scan_sum_reverse_staged_load_widen_0123_store_narrow_4567_scan_tiles_exclusive"
        ));
        // Plain kernels' symbols are not among them.
        assert!(KernelAbi::all().all(|k| !symbols.contains(&k.symbol("sum"))));
        let policy = "gpu_scan::staged<gpu_scan_ops::sum, gpu_scan::held_load<gpu_scan_ops::sum, gpu_scan_stages::widen_0123>, gpu_scan::held_store<gpu_scan_ops::sum, gpu_scan_stages::narrow_4567>>";
        let text = KernelAbi::Staged(Kernel::SinglePassExclusive, stages).wrapper("sum");
        assert!(text.contains(&format!("const gpu_scan::stage_input<{policy}>* input, gpu_scan::stage_output<{policy}>* output, void* status")), "{text}");
        assert!(text.contains(&format!("gpu_scan::scan_single_pass<{policy}, scan_exclusive, gpu_scan::no_segments, gpu_scan::Shape<{policy}>::items_per_thread>(input, gpu_scan::no_segments{{}}, output,")), "{text}");
        assert!(text.contains(&format!("__launch_bounds__(gpu_scan::Shape<{policy}>::block_threads, gpu_scan::Shape<{policy}>::single_pass_min_blocks)")), "{text}");
        let reverse = KernelAbi::Staged(Kernel::ScanTilesInclusive, stages)
            .in_direction(Direction::Reverse)
            .unwrap();
        let text = reverse.wrapper("sum");
        assert!(
            text.contains(&format!(
                "gpu_scan::scan_tiles<gpu_scan::reversed<{policy}>, scan_inclusive"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!("const gpu_scan::stage_input<{policy}>* input")),
            "{text}"
        );
        // A load stage alone: the store side is no stage.
        let load_only = Stages {
            store: None,
            ..stages
        };
        assert!(KernelAbi::Staged(Kernel::ReduceTiles, load_only)
            .wrapper("sum")
            .contains("gpu_scan::staged<gpu_scan_ops::sum, gpu_scan::held_load<gpu_scan_ops::sum, gpu_scan_stages::widen_0123>, gpu_scan::no_stage>"));
        // Each staged kernel checks the stages' CUDA sizes against Rust's.
        let text = KernelAbi::Staged(Kernel::SinglePassExclusive, stages).wrapper("sum");
        assert!(
            text.contains(&format!(
                "static_assert(sizeof(gpu_scan::stage_input<{policy}>) == 1,"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "static_assert(sizeof(gpu_scan::stage_output<{policy}>) == 2,"
            )),
            "{text}"
        );
        // Two stages of one name are two stages (by type).
        struct Other;
        let twin = Stages {
            load: Some(StageRef {
                id: std::any::TypeId::of::<Other>(),
                ..stages.load.unwrap()
            }),
            ..stages
        };
        assert_ne!(twin, stages);
    }

    #[test]
    fn every_wrapper_passes_each_of_its_parameters_on() {
        for kernel in KernelAbi::all().chain(KernelAbi::all_staged(test_stages())) {
            let text = kernel.wrapper("op");
            let body = text.split_once("{\n").map(|(_, b)| b).unwrap_or_default();
            let args = body.split_once('(').map(|(_, a)| a).unwrap_or_default();
            for p in &kernel.params() {
                let used = args
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|word| word == p.name);
                assert!(
                    used,
                    "{kernel:?} declares {} but does not pass it: {text}",
                    p.name
                );
            }
        }
    }
}
