//! Kernel launches built from the kernel ABI table
//! ([`kernels_gen::abi::KernelAbi`], and the segment-flags program's
//! [`FlagsKernel`]): every argument list is made by one of the builders
//! here, tagged with what each argument is, and checked against the table
//! before it is enqueued (a scan kernel's on its first launch, every one in
//! debug builds). A builder that drifts from the table fails
//! `every_builder_matches_the_abi_table` (no GPU needed) and the launches
//! through it.

use crate::error::{Result, ScanError};
use crate::kernels::LoadedKernel;
use crate::workspace::SinglePassArgs;
use cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};
use kernels_gen::abi::{KernelAbi, Param, ParamType, Pass};
use kernels_gen::segment_flags::FlagsKernel;
use std::sync::atomic::Ordering;

/// One argument of a launch, tagged with the parameter it is for: its
/// name in the ABI table and what kind of value it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct KernelArg<E> {
    /// The parameter's name ([`kernels_gen::abi::Param::name`]).
    pub(crate) name: &'static str,
    pub(crate) value: ArgValue<E>,
}

/// The value of a [`KernelArg`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ArgValue<E> {
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
            Heads::Flags(flags) => ptr("flags", HeadFlags, flags),
            Heads::Rows(length) => arg("row_length", ArgValue::RowLength(length)),
            Heads::Offsets(offsets) => arg("offsets", ArgValue::Offsets(offsets)),
            Heads::Keys(keys) => arg("keys", ArgValue::Keys(keys)),
        }
    }
}

impl<E> ArgValue<E> {
    /// The parameter type this value is for.
    fn param_type(&self) -> ParamType {
        match self {
            ArgValue::Ptr(ty, _) => *ty,
            ArgValue::Element(_) => ParamType::Element,
            ArgValue::Flag(_) => ParamType::Flag,
            ArgValue::Count(_) => ParamType::Count,
            ArgValue::RowLength(_) => ParamType::RowLength,
            ArgValue::Offsets(_) => ParamType::SegmentOffsets,
            ArgValue::Keys(_) => ParamType::SegmentKeys,
        }
    }

    /// Whether the value's kind can be passed for its parameter type.
    fn well_formed(&self) -> bool {
        match self {
            ArgValue::Ptr(ty, _) => !matches!(
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

/// Checks `args` against `abi`'s parameter list: same length, and at every
/// position the same name and type (so two arguments swapped are refused
/// even where their types agree).
pub(crate) fn check_args<E>(abi: KernelAbi, op: &'static str, args: &[KernelArg<E>]) -> Result<()> {
    check_against(abi.param_list(), || abi.symbol(op), args)
}

/// Checks `args` against `params`, the parameter list of the kernel that
/// `symbol` names (see [`check_args`]).
fn check_against<E>(
    params: impl ExactSizeIterator<Item = Param>,
    symbol: impl FnOnce() -> String,
    args: &[KernelArg<E>],
) -> Result<()> {
    let mismatch = |detail: String| ScanError::KernelAbi {
        kernel: symbol(),
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
        let ty = arg.value.param_type();
        if param.name != arg.name || param.ty != ty || !arg.value.well_formed() {
            return Err(mismatch(format!(
                "argument {i} is `{}` ({ty:?}), parameter `{}` is {:?}",
                arg.name, param.name, param.ty
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
    // SAFETY: the caller's contract, the arguments checked above.
    unsafe { enqueue(stream, function, args, config) }
}

/// [`launch`] for a loaded scan kernel on the hot path: its arguments are
/// checked against the ABI table on its first launch (every launch in
/// debug builds). [`tile_pass`] makes the same parameter names and types
/// for a kernel on every call as long as its caller passes heads exactly
/// for segmented families and a single pass its single-pass scratch (the
/// executor does: [`crate::execute`]); `every_builder_matches_the_abi_table`
/// checks those lists for every kernel without a GPU, and a caller that
/// broke the rule would be refused on a kernel's first launch only.
///
/// # Safety
/// As for [`launch`].
pub(crate) unsafe fn launch_loaded<E: DeviceRepr>(
    stream: &CudaStream,
    kernel: &LoadedKernel,
    abi: KernelAbi,
    op: &'static str,
    args: &[KernelArg<E>],
    config: LaunchConfig,
) -> Result<()> {
    if cfg!(debug_assertions) || !kernel.args_checked.load(Ordering::Relaxed) {
        check_args(abi, op, args)?;
        kernel.args_checked.store(true, Ordering::Relaxed);
    }
    // SAFETY: the caller's contract, the arguments checked (for this
    // kernel's builder) above.
    unsafe { enqueue(stream, &kernel.function, args, config) }
}

/// Enqueues `function`, kernel `kernel` of the segment-flags program, on
/// `stream` with `args` after checking them against its parameter list
/// ([`FlagsKernel::params`]).
///
/// # Safety
/// As for [`launch`]: the pointers must be valid for what the kernel does
/// with them ([`FlagsKernel`]'s documentation), and `config` its shape.
pub(crate) unsafe fn launch_flags(
    stream: &CudaStream,
    function: &CudaFunction,
    kernel: FlagsKernel,
    args: &[KernelArg<NoElement>],
    config: LaunchConfig,
) -> Result<()> {
    check_flags_args(kernel, args)?;
    // SAFETY: the caller's contract, the arguments checked above.
    unsafe { enqueue(stream, function, args, config) }
}

/// Checks `args` against the parameters of `kernel` of the segment-flags
/// program, as [`check_args`] does for the scans' kernels.
pub(crate) fn check_flags_args(kernel: FlagsKernel, args: &[KernelArg<NoElement>]) -> Result<()> {
    check_against(kernel.params(), || kernel.symbol(), args)
}

/// Pushes checked `args` and enqueues the launch.
///
/// # Safety
/// `args` match `function`'s parameters, valid for what it does with them.
unsafe fn enqueue<E: DeviceRepr>(
    stream: &CudaStream,
    function: &CudaFunction,
    args: &[KernelArg<E>],
    config: LaunchConfig,
) -> Result<()> {
    let mut builder = stream.launch_builder(function);
    for arg in args {
        match &arg.value {
            ArgValue::Ptr(_, address) => builder.arg(address),
            ArgValue::Element(e) => builder.arg(e),
            ArgValue::Flag(f) => builder.arg(f),
            ArgValue::Count(c) | ArgValue::RowLength(c) => builder.arg(c),
            ArgValue::Offsets(o) => builder.arg(o),
            ArgValue::Keys(k) => builder.arg(k),
        };
    }
    // SAFETY: the caller's contract.
    unsafe { builder.launch(config) }?;
    Ok(())
}

/// The element type of kernels that take no element (the segment-flags
/// program's): no value of it exists.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum NoElement {}

// SAFETY: uninhabited, so never passed to a kernel.
unsafe impl DeviceRepr for NoElement {}

/// The argument for parameter `name` of the segment-flags program: a
/// pointer of type `ty`.
pub(crate) fn flags_ptr(name: &'static str, ty: ParamType, address: u64) -> KernelArg<NoElement> {
    ptr(name, ty, address)
}

/// The argument for count parameter `name` of the segment-flags program.
pub(crate) fn flags_count(name: &'static str, value: u64) -> KernelArg<NoElement> {
    arg(name, ArgValue::Count(value))
}

use ParamType::{
    ElementsIn, ElementsOut, HeadFlags, SegmentCount, StageIn, StageOut, TileFlagsIn, TileFlagsOut,
};

/// The argument for parameter `name`.
fn arg<E>(name: &'static str, value: ArgValue<E>) -> KernelArg<E> {
    KernelArg { name, value }
}

/// A device address for pointer parameter `name` of type `ty`.
fn ptr<E>(name: &'static str, ty: ParamType, address: u64) -> KernelArg<E> {
    arg(name, ArgValue::Ptr(ty, address))
}

/// An element for parameter `name`.
fn element<E>(name: &'static str, e: E) -> KernelArg<E> {
    arg(name, ArgValue::Element(e))
}

/// An `int` flag for parameter `name`.
fn flag<E>(name: &'static str, on: bool) -> KernelArg<E> {
    arg(name, ArgValue::Flag(on as i32))
}

/// A count for parameter `name`.
fn count<E>(name: &'static str, c: u64) -> KernelArg<E> {
    arg(name, ArgValue::Count(c))
}

/// The most arguments a kernel of the ABI table takes.
const MOST_ARGS: usize = 12;

/// A launch's arguments, held inline (the scans' launches allocate
/// nothing on the heap).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArgList<E> {
    args: [KernelArg<E>; MOST_ARGS],
    len: usize,
}

impl<E: Copy> ArgList<E> {
    fn new() -> Self {
        ArgList {
            args: [arg("", ArgValue::Count(0)); MOST_ARGS],
            len: 0,
        }
    }

    fn push(&mut self, arg: KernelArg<E>) {
        self.args[self.len] = arg;
        self.len += 1;
    }

    fn extend(&mut self, args: impl IntoIterator<Item = KernelArg<E>>) {
        for arg in args {
            self.push(arg);
        }
    }
}

impl<E> std::ops::Deref for ArgList<E> {
    type Target = [KernelArg<E>];

    fn deref(&self) -> &[KernelArg<E>] {
        &self.args[..self.len]
    }
}

fn scratch<E>(s: &SinglePassArgs) -> [KernelArg<E>; 4] {
    [
        ptr("status", ParamType::Status, s.status),
        ptr("aggregates", ElementsOut, s.aggregates),
        ptr("prefixes", ElementsOut, s.prefixes),
        ptr("launch", ParamType::LaunchState, s.launch),
    ]
}

/// `(left, right, output, n)`.
pub(crate) fn combine_pairs<E>(left: u64, right: u64, output: u64, n: u64) -> Vec<KernelArg<E>> {
    vec![
        ptr("left", ElementsIn, left),
        ptr("right", ElementsIn, right),
        ptr("output", ElementsOut, output),
        count("n", n),
    ]
}

/// What a scan over tiles passes to each of its [`Pass`]es, plain or
/// segmented (a plain scan has no `heads`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileScanArgs<E> {
    pub(crate) input: u64,
    pub(crate) output: u64,
    /// Where segment heads come from; `None` for a plain scan.
    pub(crate) heads: Option<Heads>,
    /// The carry-out slot's address (0: none).
    pub(crate) carry_out: u64,
    pub(crate) seed: E,
    /// Whether the seed goes in front of every segment.
    pub(crate) seeded: bool,
    pub(crate) n: u64,
    /// Whether the kernels are staged ([`KernelAbi::Staged`]): `input` and
    /// `output` hold the stages' types.
    pub(crate) staged: bool,
}

/// The scratch a [`Pass`] of a scan over tiles reads and writes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PassScratch {
    /// None (one tile, seeded directly).
    None,
    /// Reduce-then-scan's tile totals (and, segmented, tile flags), of
    /// elements of `element_size` bytes.
    TileTotals {
        totals: u64,
        flags: u64,
        element_size: u64,
    },
    /// The single passes' status, values and launch state.
    SinglePass(SinglePassArgs),
}

/// The arguments of `pass` of the scan `a` over `tiles` tiles, with its
/// scratch: the same builder for the plain kernels and the segmented ones,
/// which take the heads after the input and whether the seed starts every
/// segment after the seed. The deterministic scan's three passes keep the
/// tiles' prefixes in the tile totals' scratch, after the `tiles` totals.
pub(crate) fn tile_pass<E: Copy>(
    pass: Pass,
    a: &TileScanArgs<E>,
    s: PassScratch,
    tiles: u64,
) -> ArgList<E> {
    let mut args = ArgList::new();
    let heads = a.heads.map(Heads::arg);
    let seeded = a.heads.map(|_| flag("seeded", a.seeded));
    let (totals, tile_flags, element_size) = match s {
        PassScratch::TileTotals {
            totals,
            flags,
            element_size,
        } => (totals, flags, element_size),
        _ => (0, 0, 0),
    };
    let (input, output) = match a.staged {
        true => (
            ptr("input", StageIn, a.input),
            ptr("output", StageOut, a.output),
        ),
        false => (
            ptr("input", ElementsIn, a.input),
            ptr("output", ElementsOut, a.output),
        ),
    };
    match pass {
        Pass::ReduceTiles => {
            args.push(input);
            args.extend(heads);
            args.push(ptr("tile_totals", ElementsOut, totals));
            if a.heads.is_some() {
                args.push(ptr("tile_flags", TileFlagsOut, tile_flags));
                args.push(element("seed", a.seed));
            }
            args.extend(seeded);
            args.push(count("n", a.n));
        }
        Pass::ScanTileTotals => {
            args.push(ptr("tile_totals", ElementsOut, totals));
            if a.heads.is_some() {
                args.push(ptr("tile_flags", TileFlagsIn, tile_flags));
                args.push(count("num_tiles", tiles));
            } else {
                args.push(count("num_tiles", tiles));
                args.push(element("seed", a.seed));
            }
        }
        Pass::DeterministicReduce => {
            args.push(input);
            args.push(ptr("tile_totals", ElementsOut, totals));
            args.push(count("n", a.n));
        }
        Pass::DeterministicPrefixes => {
            args.push(ptr("tile_totals", ElementsIn, totals));
            args.push(ptr(
                "tile_prefixes",
                ElementsOut,
                tile_prefixes(totals, tiles, element_size),
            ));
            args.push(ptr("carry_out", ElementsOut, a.carry_out));
            args.push(count("num_tiles", tiles));
            args.push(element("seed", a.seed));
        }
        Pass::DeterministicScan => {
            args.push(input);
            args.push(output);
            args.push(ptr(
                "tile_prefixes",
                ElementsIn,
                tile_prefixes(totals, tiles, element_size),
            ));
            args.push(count("n", a.n));
        }
        Pass::ScanTiles
        | Pass::SinglePass
        | Pass::SinglePassSmall
        | Pass::Pipelined
        | Pass::DeterministicPipelined => {
            args.push(input);
            args.extend(heads);
            args.push(output);
            match s {
                PassScratch::SinglePass(single) => args.extend(scratch(&single)),
                // Null prefixes: one tile, seeded directly.
                _ => args.push(ptr("tile_prefixes", ElementsIn, totals)),
            }
            args.push(ptr("carry_out", ElementsOut, a.carry_out));
            args.push(element("seed", a.seed));
            args.extend(seeded);
            args.push(count("n", a.n));
            if matches!(pass, Pass::Pipelined | Pass::DeterministicPipelined) {
                args.push(count("tiles", tiles));
            }
        }
    }
    args
}

/// Where the deterministic scan's tile prefixes lie (`tiles + 1` of them,
/// the carry-out last): after the `tiles` tile totals at `totals` (0 stays 0: no scratch, as in the builder test).
fn tile_prefixes(totals: u64, tiles: u64, element_size: u64) -> u64 {
    if totals == 0 {
        0
    } else {
        totals + tiles * element_size
    }
}

/// `(input, output, scratch…, seed, rows, cols, row_lanes, walk)` of the
/// column scans.
#[allow(clippy::too_many_arguments)]
pub(crate) fn columns<E>(
    input: u64,
    output: u64,
    s: &SinglePassArgs,
    seed: E,
    rows: u64,
    cols: u64,
    row_lanes: u64,
    walk: bool,
) -> Vec<KernelArg<E>> {
    let mut args = Vec::with_capacity(MOST_ARGS);
    args.extend([
        ptr("input", ElementsIn, input),
        ptr("output", ElementsOut, output),
    ]);
    args.extend(scratch(s));
    args.extend([
        element("seed", seed),
        count("rows", rows),
        count("cols", cols),
        count("row_lanes", row_lanes),
        flag("walk", walk),
    ]);
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
        ptr("input", ElementsIn, input),
        ranges.arg(),
        ptr("totals", ElementsOut, totals),
        count("segments", segments),
        ptr("segment_count", SegmentCount, segment_count),
        flag("reverse", reverse),
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
        ptr("output", ElementsIn, output),
        ranges.arg(),
        ptr("totals", ElementsOut, totals),
        count("segments", segments),
        ptr("segment_count", SegmentCount, segment_count),
        element("seed", seed),
        flag("seeded", seeded),
        flag("exclusive", exclusive),
        flag("reverse", reverse),
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
        ptr("input", ElementsIn, input),
        ptr("row_totals", ElementsOut, a.row_totals),
        ptr("column_totals", ElementsOut, a.column_totals),
        ptr("tile_totals", ElementsOut, a.tile_totals),
        count("rows", a.rows),
        count("cols", a.cols),
        count("band", a.band),
        flag("reverse", reverse),
    ]
}

/// `(row_totals, column_totals, tile_totals, rows, cols, band, seed)` of a
/// two-dimensional scan's carries.
pub(crate) fn area_carries<E>(a: &AreaArgs, seed: E) -> Vec<KernelArg<E>> {
    vec![
        ptr("row_totals", ElementsOut, a.row_totals),
        ptr("column_totals", ElementsOut, a.column_totals),
        ptr("tile_totals", ElementsOut, a.tile_totals),
        count("rows", a.rows),
        count("cols", a.cols),
        count("band", a.band),
        element("seed", seed),
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
        ptr("input", ElementsIn, input),
        ptr("output", ElementsOut, output),
        ptr("left", ElementsIn, a.row_totals),
        ptr("above", ElementsIn, a.column_totals),
        ptr("corners", ElementsIn, a.tile_totals),
        count("rows", a.rows),
        count("cols", a.cols),
        count("band", a.band),
        flag("reverse", reverse),
        flag("exclusive", exclusive),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gen::abi::{AreaStep, TotalsStep};
    use kernels_gen::abi::{Family, Pass, StageRef, Stages};
    use kernels_gen::{Direction, Kernel, SegmentSource, SegmentedKernel};

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
            KernelAbi::Plain(Kernel::ColumnsInclusive | Kernel::ColumnsExclusive) => {
                columns(1, 2, &s, 7, 8, 9, 16, true)
            }
            forward @ (KernelAbi::Plain(_) | KernelAbi::Segmented(..) | KernelAbi::Staged(..)) => {
                // The pass of a family whose kernel this is.
                let (family, inclusive) = match forward {
                    KernelAbi::Plain(k) => (Family::Plain, !k.suffix().contains("exclusive")),
                    KernelAbi::Staged(k, stages) => {
                        (Family::Staged(stages), !k.suffix().contains("exclusive"))
                    }
                    KernelAbi::Segmented(k, strategy) => (
                        Family::Segmented(k.source().unwrap_or(SegmentSource::Rows), strategy),
                        !matches!(
                            k,
                            SegmentedKernel::ScanTiles {
                                inclusive: false,
                                ..
                            } | SegmentedKernel::SinglePass {
                                inclusive: false,
                                ..
                            } | SegmentedKernel::Pipelined {
                                inclusive: false,
                                ..
                            }
                        ),
                    ),
                    _ => unreachable!(),
                };
                let pass = Pass::ALL
                    .into_iter()
                    .find(|&p| family.kernel(p, inclusive, Direction::Forward) == Some(forward))
                    .unwrap_or_else(|| panic!("no pass runs {forward:?}"));
                let a = TileScanArgs {
                    input: 1,
                    output: 2,
                    heads: matches!(family, Family::Segmented(..)).then_some(heads),
                    carry_out: 5,
                    seed: 7,
                    seeded: true,
                    n: 9,
                    staged: matches!(family, Family::Staged(_)),
                };
                let scratch = match pass {
                    Pass::ReduceTiles
                    | Pass::ScanTileTotals
                    | Pass::DeterministicReduce
                    | Pass::DeterministicPrefixes
                    | Pass::DeterministicScan => PassScratch::TileTotals {
                        totals: 3,
                        flags: 4,
                        element_size: 4,
                    },
                    Pass::ScanTiles => PassScratch::None,
                    _ => PassScratch::SinglePass(s),
                };
                tile_pass(pass, &a, scratch, 6).to_vec()
            }
            KernelAbi::PlainReverse(_)
            | KernelAbi::SegmentedReverse(..)
            | KernelAbi::StagedReverse(..) => unreachable!(),
        }
    }

    /// Every staged kernel of a load and a store stage, both ways.
    fn staged_kernels() -> impl Iterator<Item = KernelAbi> {
        let stage = |name| StageRef {
            id: std::any::TypeId::of::<()>(),
            name,
            source: "",
            input_size: 4,
            output_size: 4,
        };
        let stages = Stages {
            load: Some(stage("widen_0")),
            store: Some(stage("narrow_0")),
        };
        KernelAbi::all_staged(stages)
    }

    #[test]
    fn every_builder_matches_the_abi_table() {
        for abi in KernelAbi::all().chain(staged_kernels()) {
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
        let a = TileScanArgs {
            input: 1,
            output: 2,
            heads: None,
            carry_out: 5,
            seed: 7u32,
            seeded: false,
            n: 9,
            staged: false,
        };
        let args = tile_pass(Pass::ScanTiles, &a, PassScratch::None, 1).to_vec();
        check_args(abi, "sum", &args).unwrap();
        // A staged kernel's input and output are of the stages' types: a
        // plain argument list is refused, a staged one taken.
        let staged = staged_kernels()
            .find(|k| matches!(k, KernelAbi::Staged(Kernel::ScanTilesInclusive, _)))
            .expect("a staged tile scan");
        assert!(check_args(staged, "sum", &args).is_err());
        let staged_args = tile_pass(
            Pass::ScanTiles,
            &TileScanArgs { staged: true, ..a },
            PassScratch::None,
            1,
        );
        check_args(staged, "sum", &staged_args).unwrap();
        let mut swapped = args.clone();
        swapped.swap(4, 5);
        let err = check_args(abi, "sum", &swapped).unwrap_err().to_string();
        assert!(err.contains("gpu_scan_sum_scan_tiles_inclusive"), "{err}");
        assert!(err.contains("argument 4"), "{err}");
        // Two pointers of one type swapped: refused by their names.
        let mut swapped = args.clone();
        swapped.swap(0, 2);
        let err = check_args(abi, "sum", &swapped).unwrap_err().to_string();
        assert!(err.contains("argument 0 is `tile_prefixes`"), "{err}");
        let mut short = args;
        short.pop();
        assert!(check_args(abi, "sum", &short).is_err());
        // A count passed as a pointer is refused even where a count is due.
        let bad_kind = vec![
            ptr("input", ElementsIn, 1u64),
            ptr("tile_totals", ElementsOut, 2),
            ptr("n", ParamType::Count, 3),
        ];
        assert!(check_args::<u32>(KernelAbi::plain(Kernel::ReduceTiles), "s", &bad_kind).is_err());
    }
}
