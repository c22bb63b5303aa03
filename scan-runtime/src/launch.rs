//! Kernel launches built from the kernel ABI table
//! ([`kernels_gen::abi::KernelAbi`]): every argument list is made by one of
//! the builders here, tagged with what each argument is, and checked against
//! the table before anything is enqueued. A builder that drifts from the
//! table fails `every_builder_matches_the_abi_table` (no GPU needed) and
//! every launch through it.

use crate::error::{Result, ScanError};
use crate::workspace::SinglePassArgs;
use cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};
use kernels_gen::abi::{KernelAbi, ParamType};

/// One argument of a launch, tagged with the parameter it is for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum KernelArg<E> {
    /// A device address for a pointer parameter of this type.
    Ptr(ParamType, u64),
    /// An element, by value.
    Element(E),
    /// An `int` flag.
    Flag(i32),
    /// A count or length.
    Count(u64),
    /// The length of every segment ([`ParamType::RowLength`]).
    RowLength(u64),
    /// Segment start offsets ([`ParamType::SegmentOffsets`]).
    Offsets(OffsetsArg),
    /// Segment keys ([`ParamType::SegmentKeys`]).
    Keys(KeysArg),
}

/// The CUDA `scan_offsets` a kernel over offsets takes by value (the
/// prelude declares it): the offsets' address, count and width in bytes,
/// and their index's address, entry width and stride (a shift).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OffsetsArg {
    pub(crate) address: u64,
    pub(crate) count: u64,
    pub(crate) width: u64,
    pub(crate) index: u64,
    pub(crate) index_width: u64,
    pub(crate) index_shift: u64,
}

// SAFETY: `#[repr(C)]` with the field order, types and size (48 bytes, no
// padding) of the CUDA struct `scan_offsets { const void*; unsigned long
// long; unsigned long long; const void*; unsigned long long; unsigned long
// long; }`.
unsafe impl DeviceRepr for OffsetsArg {}

/// The CUDA `scan_keys` a kernel over keys takes by value (the prelude
/// declares it): the keys' address and width in bytes (1, 2, 4 or 8).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeysArg {
    pub(crate) address: u64,
    pub(crate) width: u64,
}

// SAFETY: `#[repr(C)]` with the field order, types and size (16 bytes, no
// padding) of the CUDA struct `scan_keys { const void*; unsigned long
// long; }`.
unsafe impl DeviceRepr for KeysArg {}

/// Where a segmented kernel's segment heads come from: the device address
/// of head flags, the length of rows (`SegmentSource::Rows` kernels),
/// offsets or keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Heads {
    /// Head flags at this device address.
    Flags(u64),
    /// Rows of this many elements.
    Rows(u64),
    /// Segments starting at these offsets.
    Offsets(OffsetsArg),
    /// Segments of equal consecutive keys.
    Keys(KeysArg),
}

impl Heads {
    /// The argument for a kernel's `flags`, `row_length`, `offsets` or
    /// `keys` parameter.
    fn arg<E>(self) -> KernelArg<E> {
        match self {
            Heads::Flags(flags) => Ptr(HeadFlags, flags),
            Heads::Rows(length) => KernelArg::RowLength(length),
            Heads::Offsets(offsets) => KernelArg::Offsets(offsets),
            Heads::Keys(keys) => KernelArg::Keys(keys),
        }
    }
}

impl<E> KernelArg<E> {
    /// The parameter type this argument is for.
    fn param_type(&self) -> ParamType {
        match self {
            KernelArg::Ptr(ty, _) => *ty,
            KernelArg::Element(_) => ParamType::Element,
            KernelArg::Flag(_) => ParamType::Flag,
            KernelArg::Count(_) => ParamType::Count,
            KernelArg::RowLength(_) => ParamType::RowLength,
            KernelArg::Offsets(_) => ParamType::SegmentOffsets,
            KernelArg::Keys(_) => ParamType::SegmentKeys,
        }
    }

    /// Whether the value's kind can be passed for its parameter type.
    fn well_formed(&self) -> bool {
        match self {
            KernelArg::Ptr(ty, _) => !matches!(
                ty,
                ParamType::Element
                    | ParamType::Flag
                    | ParamType::Count
                    | ParamType::RowLength
                    | ParamType::SegmentOffsets
                    | ParamType::SegmentKeys
            ),
            _ => true,
        }
    }
}

/// Checks `args` against `abi`'s parameter list: same length, same type at
/// every position.
pub(crate) fn check_args<E>(abi: KernelAbi, op: &'static str, args: &[KernelArg<E>]) -> Result<()> {
    let params = abi.param_list();
    let mismatch = |detail: String| ScanError::KernelAbi {
        kernel: abi.symbol(op),
        detail,
    };
    if params.len() != args.len() {
        return Err(mismatch(format!(
            "{} arguments for {} parameters",
            args.len(),
            params.len()
        )));
    }
    for (i, (param, arg)) in params.zip(args).enumerate() {
        if param.ty != arg.param_type() || !arg.well_formed() {
            return Err(mismatch(format!(
                "argument {i} is {:?}, parameter `{}` is {:?}",
                arg.param_type(),
                param.name,
                param.ty
            )));
        }
    }
    Ok(())
}

/// Enqueues `function`, the kernel `abi` of operator `op`, on `stream` with
/// `args` after checking them against the ABI table.
///
/// # Safety
/// The pointers in `args` must be valid for what the kernel does with them
/// (its documentation in [`kernels_gen::Kernel`] and
/// [`kernels_gen::SegmentedKernel`]), and `config` must be the launch shape
/// the kernel expects.
pub(crate) unsafe fn launch<E: DeviceRepr>(
    stream: &CudaStream,
    function: &CudaFunction,
    abi: KernelAbi,
    op: &'static str,
    args: &[KernelArg<E>],
    config: LaunchConfig,
) -> Result<()> {
    check_args(abi, op, args)?;
    let mut builder = stream.launch_builder(function);
    for arg in args {
        match arg {
            KernelArg::Ptr(_, address) => builder.arg(address),
            KernelArg::Element(e) => builder.arg(e),
            KernelArg::Flag(f) => builder.arg(f),
            KernelArg::Count(c) | KernelArg::RowLength(c) => builder.arg(c),
            KernelArg::Offsets(o) => builder.arg(o),
            KernelArg::Keys(k) => builder.arg(k),
        };
    }
    // SAFETY: the argument list matches the kernel's parameters (checked
    // above); the caller vouches for the pointers and the launch shape.
    unsafe { builder.launch(config) }?;
    Ok(())
}

use KernelArg::{Count, Element, Flag, Ptr};
use ParamType::{ElementsIn, ElementsOut, HeadFlags, SegmentCount, TileFlagsIn, TileFlagsOut};

/// The most arguments a kernel of the ABI table takes.
const MOST_ARGS: usize = 12;

/// An argument list starting with `first`, with room for every argument it
/// gets after them (one allocation per launch).
fn args_for_extending<E, const N: usize>(first: [KernelArg<E>; N]) -> Vec<KernelArg<E>> {
    let mut args = Vec::with_capacity(MOST_ARGS);
    args.extend(first);
    args
}

fn scratch<E>(s: &SinglePassArgs) -> [KernelArg<E>; 4] {
    [
        Ptr(ParamType::Status, s.status),
        Ptr(ElementsOut, s.aggregates),
        Ptr(ElementsOut, s.prefixes),
        Ptr(ParamType::LaunchState, s.launch),
    ]
}

/// `(left, right, output, n)`.
pub(crate) fn combine_pairs<E>(left: u64, right: u64, output: u64, n: u64) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsIn, left),
        Ptr(ElementsIn, right),
        Ptr(ElementsOut, output),
        Count(n),
    ]
}

/// `(input, tile_totals, n)`.
pub(crate) fn reduce_tiles<E>(input: u64, tile_totals: u64, n: u64) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsIn, input),
        Ptr(ElementsOut, tile_totals),
        Count(n),
    ]
}

/// `(tile_totals, num_tiles, seed)`.
pub(crate) fn scan_tile_totals<E>(tile_totals: u64, tiles: u64, seed: E) -> Vec<KernelArg<E>> {
    vec![Ptr(ElementsOut, tile_totals), Count(tiles), Element(seed)]
}

/// `(input, output, tile_prefixes, carry_out, seed, n)`; prefixes 0 for a
/// single tile, `carry_out` 0 for none.
pub(crate) fn scan_tiles<E>(
    input: u64,
    output: u64,
    prefixes: u64,
    carry_out: u64,
    seed: E,
    n: u64,
) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsIn, input),
        Ptr(ElementsOut, output),
        Ptr(ElementsIn, prefixes),
        Ptr(ElementsOut, carry_out),
        Element(seed),
        Count(n),
    ]
}

/// `(input, output, scratch…, carry_out, seed, n)`, and `tiles` for the
/// pipelined pass; `carry_out` 0 for none.
pub(crate) fn single_pass<E>(
    input: u64,
    output: u64,
    s: &SinglePassArgs,
    carry_out: u64,
    seed: E,
    n: u64,
    pipelined_tiles: Option<u64>,
) -> Vec<KernelArg<E>> {
    let mut args = args_for_extending([Ptr(ElementsIn, input), Ptr(ElementsOut, output)]);
    args.extend(scratch(s));
    args.extend([Ptr(ElementsOut, carry_out), Element(seed), Count(n)]);
    args.extend(pipelined_tiles.map(Count));
    args
}

/// `(input, output, scratch…, seed, rows, cols, walk)` of the column scans.
pub(crate) fn columns<E>(
    input: u64,
    output: u64,
    s: &SinglePassArgs,
    seed: E,
    rows: u64,
    cols: u64,
    walk: bool,
) -> Vec<KernelArg<E>> {
    let mut args = args_for_extending([Ptr(ElementsIn, input), Ptr(ElementsOut, output)]);
    args.extend(scratch(s));
    args.extend([Element(seed), Count(rows), Count(cols), Flag(walk as i32)]);
    args
}

/// Segmented `(input, flags | row_length, tile_totals, tile_flags, seed, seeded, n)`.
pub(crate) fn segmented_reduce_tiles<E>(
    input: u64,
    heads: Heads,
    tile_totals: u64,
    tile_flags: u64,
    seed: E,
    seeded: bool,
    n: u64,
) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsIn, input),
        heads.arg(),
        Ptr(ElementsOut, tile_totals),
        Ptr(TileFlagsOut, tile_flags),
        Element(seed),
        Flag(seeded as i32),
        Count(n),
    ]
}

/// Segmented `(tile_totals, tile_flags, num_tiles)`.
pub(crate) fn segmented_scan_tile_totals<E>(
    tile_totals: u64,
    tile_flags: u64,
    tiles: u64,
) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsOut, tile_totals),
        Ptr(TileFlagsIn, tile_flags),
        Count(tiles),
    ]
}

/// Segmented `(input, heads, output, tile_prefixes, carry_out, seed,
/// seeded, n)`; `carry_out` 0 for none.
#[allow(clippy::too_many_arguments)]
pub(crate) fn segmented_scan_tiles<E>(
    input: u64,
    heads: Heads,
    output: u64,
    prefixes: u64,
    carry_out: u64,
    seed: E,
    seeded: bool,
    n: u64,
) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsIn, input),
        heads.arg(),
        Ptr(ElementsOut, output),
        Ptr(ElementsIn, prefixes),
        Ptr(ElementsOut, carry_out),
        Element(seed),
        Flag(seeded as i32),
        Count(n),
    ]
}

/// Segmented `(input, heads, output, scratch…, carry_out, seed, seeded,
/// n)`, and `tiles` for the pipelined pass; `carry_out` 0 for none.
#[allow(clippy::too_many_arguments)]
pub(crate) fn segmented_single_pass<E>(
    input: u64,
    heads: Heads,
    output: u64,
    s: &SinglePassArgs,
    carry_out: u64,
    seed: E,
    seeded: bool,
    n: u64,
    pipelined_tiles: Option<u64>,
) -> Vec<KernelArg<E>> {
    let mut args = args_for_extending([
        Ptr(ElementsIn, input),
        heads.arg(),
        Ptr(ElementsOut, output),
    ]);
    args.extend(scratch(s));
    args.extend([
        Ptr(ElementsOut, carry_out),
        Element(seed),
        Flag(seeded as i32),
        Count(n),
    ]);
    args.extend(pipelined_tiles.map(Count));
    args
}

/// `(input, rows | offsets, totals, segments, segment_count, reverse)` of
/// the per-segment totals' first step (`segment_count`: the device's count
/// of segments, 0 for none).
pub(crate) fn segment_boundaries<E>(
    input: u64,
    ranges: Heads,
    totals: u64,
    segments: u64,
    segment_count: u64,
    reverse: bool,
) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsIn, input),
        ranges.arg(),
        Ptr(ElementsOut, totals),
        Count(segments),
        Ptr(SegmentCount, segment_count),
        Flag(reverse as i32),
    ]
}

/// `(output, rows | offsets, totals, segments, segment_count, seed, seeded,
/// exclusive, reverse)` of the per-segment totals' last step.
#[allow(clippy::too_many_arguments)]
pub(crate) fn segment_totals<E>(
    output: u64,
    ranges: Heads,
    totals: u64,
    segments: u64,
    segment_count: u64,
    seed: E,
    seeded: bool,
    exclusive: bool,
    reverse: bool,
) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsIn, output),
        ranges.arg(),
        Ptr(ElementsOut, totals),
        Count(segments),
        Ptr(SegmentCount, segment_count),
        Element(seed),
        Flag(seeded as i32),
        Flag(exclusive as i32),
        Flag(reverse as i32),
    ]
}

/// Where a two-dimensional scan in tiles keeps its totals and carries
/// (one scratch allocation, [`kernels_gen::AreaTiles::scratch_len`]):
/// row totals, column totals, tile totals; and the matrix's shape.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AreaArgs {
    pub(crate) row_totals: u64,
    pub(crate) column_totals: u64,
    pub(crate) tile_totals: u64,
    pub(crate) rows: u64,
    pub(crate) cols: u64,
    pub(crate) band: u64,
}

/// `(input, row_totals, column_totals, tile_totals, rows, cols, band,
/// reverse)` of a two-dimensional scan's first step.
pub(crate) fn area_tile_totals<E>(input: u64, a: &AreaArgs, reverse: bool) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsIn, input),
        Ptr(ElementsOut, a.row_totals),
        Ptr(ElementsOut, a.column_totals),
        Ptr(ElementsOut, a.tile_totals),
        Count(a.rows),
        Count(a.cols),
        Count(a.band),
        Flag(reverse as i32),
    ]
}

/// `(row_totals, column_totals, tile_totals, rows, cols, band, seed)` of a
/// two-dimensional scan's carries.
pub(crate) fn area_carries<E>(a: &AreaArgs, seed: E) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsOut, a.row_totals),
        Ptr(ElementsOut, a.column_totals),
        Ptr(ElementsOut, a.tile_totals),
        Count(a.rows),
        Count(a.cols),
        Count(a.band),
        Element(seed),
    ]
}

/// `(input, output, left, above, corners, rows, cols, band, reverse,
/// exclusive)` of a two-dimensional scan's last step.
pub(crate) fn area_finish<E>(
    input: u64,
    output: u64,
    a: &AreaArgs,
    reverse: bool,
    exclusive: bool,
) -> Vec<KernelArg<E>> {
    vec![
        Ptr(ElementsIn, input),
        Ptr(ElementsOut, output),
        Ptr(ElementsIn, a.row_totals),
        Ptr(ElementsIn, a.column_totals),
        Ptr(ElementsIn, a.tile_totals),
        Count(a.rows),
        Count(a.cols),
        Count(a.band),
        Flag(reverse as i32),
        Flag(exclusive as i32),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gen::abi::{AreaStep, TotalsStep};
    use kernels_gen::{Kernel, SegmentSource, SegmentedKernel};

    /// The argument list the runtime builds for `abi` (dummy values).
    fn built(abi: KernelAbi) -> Vec<KernelArg<u32>> {
        let s = SinglePassArgs {
            status: 1,
            aggregates: 2,
            prefixes: 3,
            launch: 4,
        };
        let heads = match abi.source() {
            Some(SegmentSource::Rows) => Heads::Rows(5),
            Some(SegmentSource::Offsets) => Heads::Offsets(OffsetsArg {
                address: 2,
                count: 3,
                width: 4,
                index: 5,
                index_width: 4,
                index_shift: 5,
            }),
            Some(SegmentSource::Keys) => Heads::Keys(KeysArg {
                address: 2,
                width: 4,
            }),
            _ => Heads::Flags(2),
        };
        // A reverse kernel takes its forward kernel's arguments.
        match abi.forward() {
            KernelAbi::CombinePairs => combine_pairs(1, 2, 3, 9),
            KernelAbi::SummedArea(step) => {
                let a = AreaArgs {
                    row_totals: 3,
                    column_totals: 4,
                    tile_totals: 5,
                    rows: 6,
                    cols: 7,
                    band: 8,
                };
                match step {
                    AreaStep::TileTotals => area_tile_totals(1, &a, true),
                    AreaStep::Carries => area_carries(&a, 7),
                    AreaStep::Finish => area_finish(1, 2, &a, false, true),
                }
            }
            KernelAbi::SegmentTotals(TotalsStep::Boundaries, _) => {
                segment_boundaries(1, heads, 3, 4, 5, true)
            }
            KernelAbi::SegmentTotals(TotalsStep::Finish, _) => {
                segment_totals(1, heads, 3, 4, 5, 7, true, false, true)
            }
            KernelAbi::Plain(k) => match k {
                Kernel::ReduceTiles => reduce_tiles(1, 2, 3),
                Kernel::ScanTileTotals => scan_tile_totals(1, 2, 7),
                Kernel::ScanTilesInclusive | Kernel::ScanTilesExclusive => {
                    scan_tiles(1, 2, 0, 5, 7, 9)
                }
                Kernel::SinglePassInclusive
                | Kernel::SinglePassExclusive
                | Kernel::SinglePassSmallInclusive
                | Kernel::SinglePassSmallExclusive => single_pass(1, 2, &s, 5, 7, 9, None),
                Kernel::PipelinedInclusive | Kernel::PipelinedExclusive => {
                    single_pass(1, 2, &s, 5, 7, 9, Some(3))
                }
                Kernel::ColumnsInclusive | Kernel::ColumnsExclusive => {
                    columns(1, 2, &s, 7, 8, 9, true)
                }
            },
            KernelAbi::Segmented(k, _) => match k {
                SegmentedKernel::ReduceTiles(_) => {
                    segmented_reduce_tiles(1, heads, 3, 4, 7, true, 9)
                }
                SegmentedKernel::ScanTileTotals => segmented_scan_tile_totals(1, 2, 3),
                SegmentedKernel::ScanTiles { .. } => {
                    segmented_scan_tiles(1, heads, 3, 4, 5, 7, false, 9)
                }
                SegmentedKernel::SinglePass { .. } => {
                    segmented_single_pass(1, heads, 3, &s, 5, 7, true, 9, None)
                }
                SegmentedKernel::Pipelined { .. } => {
                    segmented_single_pass(1, heads, 3, &s, 5, 7, true, 9, Some(4))
                }
            },
            KernelAbi::PlainReverse(_) | KernelAbi::SegmentedReverse(..) => unreachable!(),
        }
    }

    #[test]
    fn every_builder_matches_the_abi_table() {
        for abi in KernelAbi::all() {
            check_args(abi, "op", &built(abi)).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                abi.param_list().len() <= MOST_ARGS,
                "{abi:?}: raise MOST_ARGS"
            );
        }
    }

    #[test]
    fn a_drifted_argument_list_is_refused() {
        let abi = KernelAbi::plain(Kernel::ScanTilesInclusive);
        let mut args = scan_tiles::<u32>(1, 2, 0, 5, 7, 9);
        args.swap(4, 5);
        let err = check_args(abi, "sum", &args).unwrap_err().to_string();
        assert!(err.contains("gpu_scan_sum_scan_tiles_inclusive"), "{err}");
        assert!(err.contains("argument 4"), "{err}");
        args.pop();
        assert!(check_args(abi, "sum", &args).is_err());
        // A count passed as a pointer is refused even where a count is due.
        let bad_kind = vec![
            Ptr(ElementsIn, 1u64),
            Ptr(ElementsOut, 2),
            Ptr(ParamType::Count, 3),
        ];
        assert!(check_args::<u32>(KernelAbi::plain(Kernel::ReduceTiles), "s", &bad_kind).is_err());
    }
}
