//! The kernel ABI: every exported kernel's parameter list, written once.
//!
//! [`KernelAbi`] describes one exported kernel of an operator's program: its
//! parameters ([`Param`], in order, with their [`ParamType`]), its launch
//! bounds and the library template it instantiates. The `extern "C"`
//! wrappers of a program are printed from it ([`KernelAbi::wrapper`]), and
//! the runtime checks every launch's arguments against
//! [`KernelAbi::params`] before it enqueues anything, so the two cannot
//! drift apart.
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

use crate::params::{FlagFormat, Kernel, SegmentedKernel, SegmentedStrategy};
use crate::POLICY_NAMESPACE;

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
}

impl ParamType {
    /// The parameter's CUDA type, for element type `t`.
    pub fn cuda_type(self, t: &str) -> String {
        match self {
            ParamType::ElementsIn => format!("const {t}*"),
            ParamType::ElementsOut => format!("{t}*"),
            ParamType::Element => format!("const {t}"),
            ParamType::HeadFlags => "const void*".into(),
            ParamType::TileFlagsIn => "const unsigned char*".into(),
            ParamType::TileFlagsOut => "unsigned char*".into(),
            ParamType::Status => "void*".into(),
            ParamType::LaunchState => "scan_launch_state*".into(),
            ParamType::Flag => "int".into(),
            ParamType::Count => "unsigned long long".into(),
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
    param("seed", Element),
    param("n", Count),
    param("tiles", Count),
];
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
    param("seed", Element),
    param("seeded", Flag),
    param("n", Count),
    param("tiles", Count),
];

/// One exported kernel of an operator's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelAbi {
    /// A kernel of plain scans.
    Plain(Kernel),
    /// A kernel of segmented scans, in one strategy.
    Segmented(SegmentedKernel, SegmentedStrategy),
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

    /// Every kernel of a program: the plain ones, then (compiled only with
    /// [`crate::SEGMENTED_DEFINE`]) the segmented ones of both strategies.
    pub fn all() -> impl Iterator<Item = KernelAbi> {
        Kernel::ALL.into_iter().map(KernelAbi::Plain).chain(
            SegmentedStrategy::ALL.into_iter().flat_map(|s| {
                SegmentedKernel::ALL
                    .into_iter()
                    .map(move |k| KernelAbi::Segmented(k, s))
            }),
        )
    }

    /// The exported symbol in operator `op_name`'s program.
    pub fn symbol(self, op_name: &str) -> String {
        match self {
            KernelAbi::Plain(k) => k.symbol(op_name),
            KernelAbi::Segmented(k, s) => k.symbol(op_name, s),
        }
    }

    /// The kernel's parameters, in order.
    pub fn params(self) -> &'static [Param] {
        match self {
            KernelAbi::Plain(k) => match k {
                Kernel::ReduceTiles => REDUCE_TILES,
                Kernel::ScanTileTotals => SCAN_TILE_TOTALS,
                Kernel::ScanTilesInclusive | Kernel::ScanTilesExclusive => SCAN_TILES,
                Kernel::SinglePassInclusive
                | Kernel::SinglePassExclusive
                | Kernel::SinglePassSmallInclusive
                | Kernel::SinglePassSmallExclusive => SINGLE_PASS,
                Kernel::PipelinedInclusive | Kernel::PipelinedExclusive => PIPELINED,
            },
            KernelAbi::Segmented(k, _) => match k {
                SegmentedKernel::ReduceTiles(_) => SEGMENTED_REDUCE_TILES,
                SegmentedKernel::ScanTileTotals => SEGMENTED_SCAN_TILE_TOTALS,
                SegmentedKernel::ScanTiles { .. } => SEGMENTED_SCAN_TILES,
                SegmentedKernel::SinglePass { .. } => SEGMENTED_SINGLE_PASS,
                SegmentedKernel::Pipelined { .. } => SEGMENTED_PIPELINED,
            },
        }
    }

    /// The `__launch_bounds__` of the wrapper, for operator policy `op`.
    fn bounds(self, op: &str) -> String {
        let single_pass = |min_blocks: &str| {
            format!("__launch_bounds__(gpu_scan::Shape<{op}>::block_threads, gpu_scan::Shape<{op}>::{min_blocks})")
        };
        match self {
            KernelAbi::Plain(
                Kernel::SinglePassInclusive
                | Kernel::SinglePassExclusive
                | Kernel::SinglePassSmallInclusive
                | Kernel::SinglePassSmallExclusive,
            ) => single_pass("single_pass_min_blocks"),
            KernelAbi::Segmented(SegmentedKernel::SinglePass { .. }, _) => {
                single_pass("segmented_single_pass_min_blocks")
            }
            KernelAbi::Plain(Kernel::PipelinedInclusive | Kernel::PipelinedExclusive)
            | KernelAbi::Segmented(SegmentedKernel::Pipelined { .. }, _) => {
                format!("__launch_bounds__(gpu_scan::Shape<{op}>::pipelined_block_threads, 1)")
            }
            _ => format!("SCAN_BOUNDS(gpu_scan::Shape<{op}>::block_threads)"),
        }
    }

    /// The library template the wrapper calls and its template arguments
    /// after the operator policy.
    fn template(self) -> (&'static str, Vec<&'static str>) {
        let kind = |inclusive: bool| if inclusive { "true" } else { "false" };
        let mode = |inclusive: bool| {
            if inclusive {
                "scan_segmented_inclusive"
            } else {
                "scan_segmented_exclusive"
            }
        };
        let format = FlagFormat::cuda_name;
        match self {
            KernelAbi::Plain(k) => match k {
                Kernel::ReduceTiles => ("reduce_tiles", vec![]),
                Kernel::ScanTileTotals => ("scan_tile_totals", vec![]),
                Kernel::ScanTilesInclusive => ("scan_tile", vec![kind(true)]),
                Kernel::ScanTilesExclusive => ("scan_tile", vec![kind(false)]),
                Kernel::SinglePassInclusive => ("scan_single_pass", vec![kind(true), "LARGE"]),
                Kernel::SinglePassExclusive => ("scan_single_pass", vec![kind(false), "LARGE"]),
                Kernel::SinglePassSmallInclusive => ("scan_single_pass", vec![kind(true), "SMALL"]),
                Kernel::SinglePassSmallExclusive => {
                    ("scan_single_pass", vec![kind(false), "SMALL"])
                }
                Kernel::PipelinedInclusive => ("scan_pipelined", vec![kind(true)]),
                Kernel::PipelinedExclusive => ("scan_pipelined", vec![kind(false)]),
            },
            KernelAbi::Segmented(k, s) => match k {
                SegmentedKernel::ReduceTiles(f) => {
                    ("segmented_reduce_tile", vec![s.cuda_name(), format(f)])
                }
                SegmentedKernel::ScanTileTotals => {
                    ("segmented_scan_tile_totals", vec![s.cuda_name()])
                }
                SegmentedKernel::ScanTiles {
                    inclusive,
                    format: f,
                } => (
                    "segmented_scan_tile",
                    vec![mode(inclusive), s.cuda_name(), format(f)],
                ),
                SegmentedKernel::SinglePass {
                    inclusive,
                    format: f,
                } => (
                    "segmented_scan_single_pass",
                    vec![mode(inclusive), s.cuda_name(), format(f)],
                ),
                SegmentedKernel::Pipelined {
                    inclusive,
                    format: f,
                } => (
                    "segmented_scan_pipelined",
                    vec![mode(inclusive), s.cuda_name(), format(f)],
                ),
            },
        }
    }

    /// The `extern "C"` wrapper of this kernel for operator `op_name`
    /// (whose policy is `gpu_scan_ops::<op_name>`).
    pub fn wrapper(self, op_name: &str) -> String {
        let policy = &format!("{POLICY_NAMESPACE}::{op_name}");
        let t = &format!("{policy}::T");
        let params = self
            .params()
            .iter()
            .map(|p| format!("{} {}", p.ty.cuda_type(t), p.name))
            .collect::<Vec<_>>()
            .join(", ");
        let args = self
            .params()
            .iter()
            .map(|p| p.name)
            .collect::<Vec<_>>()
            .join(", ");
        let (template, extra) = self.template();
        let mut targs = vec![policy.to_string()];
        targs.extend(extra.into_iter().map(|a| match a {
            "LARGE" => format!("gpu_scan::Shape<{policy}>::items_per_thread"),
            "SMALL" => format!("gpu_scan::Shape<{policy}>::small_items_per_thread"),
            other => other.to_string(),
        }));
        format!(
            "extern \"C\" __global__ void {} {}({params}) {{\n  gpu_scan::{template}<{}>({args});\n}}\n",
            self.bounds(policy),
            self.symbol(op_name),
            targs.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_kernel_has_a_distinct_symbol() {
        let symbols: HashSet<String> = KernelAbi::all().map(|k| k.symbol("op")).collect();
        for symbol in &symbols {
            assert!(symbol.starts_with("gpu_scan_op_"), "{symbol}");
        }
        assert_eq!(symbols.len(), KernelAbi::all().count());
        assert_eq!(
            symbols.len(),
            Kernel::ALL.len() + 2 * SegmentedKernel::ALL.len()
        );
    }

    #[test]
    fn wrappers_declare_the_table_s_parameters_and_pass_them_on() {
        let text = KernelAbi::plain(Kernel::ScanTileTotals).wrapper("sum");
        assert!(text.contains(
            "gpu_scan_sum_scan_tile_totals(gpu_scan_ops::sum::T* tile_totals, unsigned long long num_tiles, const gpu_scan_ops::sum::T seed)"
        ));
        assert!(text.contains(
            "gpu_scan::scan_tile_totals<gpu_scan_ops::sum>(tile_totals, num_tiles, seed);"
        ));
    }
}
