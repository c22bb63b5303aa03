//! The CPU backend: sequential and multi-threaded scans for any [`ScanOp`].
//!
//! Every function exists in four forms: out of place or in place, and
//! sequential or parallel (`par_*`, on rayon's thread pool). The parallel
//! forms use the same reduce-then-scan structure as the GPU (chunk totals,
//! scan of the totals, seeded rescan) and produce the same results as the
//! sequential ones whenever the operator is associative; integers match bit
//! for bit.
//!
//! ```
//! use gpu_scan::prelude::*;
//!
//! #[scan_op(element = u64, identity = 0, op = |a, b| a + b)]
//! struct Sum;
//!
//! let mut out = vec![0; 4];
//! cpu::exclusive::<Sum>(&[1, 2, 3, 4], &mut out).unwrap();
//! assert_eq!(out, [0, 1, 3, 6]);
//! assert_eq!(cpu::par_inclusive_vec::<Sum>(&[1, 2, 3, 4]), [1, 3, 6, 10]);
//! ```

use crate::spec::{HostCarryOut, IntoScanSpec, NoSegments, ScanSpec};
use crate::stages::ScanMap;
use crate::ScanOp;
use rayon::prelude::*;

pub use crate::lengths::LengthMismatch;
pub use crate::spec::ScanKind;

/// `x` joined to the running partial in scan order: `running ∘ x` going
/// forward, `x ∘ running` in reverse (`None`: nothing yet).
pub(crate) fn step<Op: ScanOp>(
    reverse: bool,
    running: Option<Op::Element>,
    x: Op::Element,
) -> Op::Element {
    step_with(&Op::combine, reverse, running, x)
}

/// [`step`] with the operator's `combine` given as a value.
#[inline]
fn step_with<E>(combine: &impl Fn(E, E) -> E, reverse: bool, running: Option<E>, x: E) -> E {
    match running {
        None => x,
        Some(r) if reverse => combine(x, r),
        Some(r) => combine(r, x),
    }
}

/// What a spec asks for: inclusive or not, the seed (`None`: nothing in
/// front), and whether it runs in reverse.
pub(crate) fn plan<E: Copy, C>(spec: &ScanSpec<E, C>) -> (bool, Option<E>, bool) {
    let (inclusive, seed) = kind_parts(spec.kind);
    (inclusive, seed, spec.is_reverse())
}

/// The carry-out of a scan whose running partial ended at `running`
/// (`None`: nothing, the identity).
pub(crate) fn carry_of<Op: ScanOp>(running: Option<Op::Element>) -> Op::Element {
    running.unwrap_or(Op::IDENTITY)
}

/// The `k`-th index of a scan of `len` elements in its order.
#[inline]
pub(crate) fn nth_index(reverse: bool, len: usize, k: usize) -> usize {
    if reverse {
        len - 1 - k
    } else {
        k
    }
}

/// Scans `input` into `output` (equal lengths) with `seed` in front of the
/// scan order (`None`: nothing); returns the carry-out.
fn scan_run<Op: ScanOp>(
    inclusive: bool,
    seed: Option<Op::Element>,
    reverse: bool,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Op::Element {
    let mut running = seed;
    for k in 0..input.len() {
        let i = nth_index(reverse, input.len(), k);
        let next = step::<Op>(reverse, running, input[i]);
        output[i] = if inclusive {
            next
        } else {
            running.unwrap_or(Op::IDENTITY)
        };
        running = Some(next);
    }
    carry_of::<Op>(running)
}

/// [`scan_run`] of `data` onto itself.
fn scan_run_in_place<Op: ScanOp>(
    inclusive: bool,
    seed: Option<Op::Element>,
    reverse: bool,
    data: &mut [Op::Element],
) -> Op::Element {
    scan_run_with(Op::IDENTITY, &Op::combine, inclusive, seed, reverse, data)
}

/// [`scan_run_in_place`] with the operator given as values (cloned where a
/// value goes two places: copies for a `ScanOp`'s elements).
#[inline]
fn scan_run_with<E: Clone>(
    identity: E,
    combine: &impl Fn(E, E) -> E,
    inclusive: bool,
    seed: Option<E>,
    reverse: bool,
    data: &mut [E],
) -> E {
    let mut running = seed;
    for k in 0..data.len() {
        let i = nth_index(reverse, data.len(), k);
        let x = data[i].clone();
        if inclusive {
            let next = step_with(combine, reverse, running.take(), x);
            data[i] = next.clone();
            running = Some(next);
        } else {
            let before = running.take();
            let next = step_with(combine, reverse, before.clone(), x);
            data[i] = before.unwrap_or_else(|| identity.clone());
            running = Some(next);
        }
    }
    running.unwrap_or(identity)
}

/// A sequential scan in place by an operator given as values, its
/// `identity` and its `combine` (`x` first), for operators that exist only
/// at run time (`kernels_gen::eval`, the Python binding): the loop
/// [`scan_in_place`] runs for a [`ScanOp`], with the same kinds and
/// directions. Returns the carry-out.
///
/// ```
/// use scan_core::{cpu, Direction, ScanKind};
///
/// // Affine maps v -> a*v + b as pairs, composed x first.
/// let compose = |x: (i64, i64), y: (i64, i64)| (x.0 * y.0, y.0 * x.1 + y.1);
/// let mut maps = [(2, 1), (3, 0), (1, 5)];
/// let carry = cpu::scan_with((1, 0), compose, ScanKind::Inclusive, Direction::Forward, &mut maps);
/// assert_eq!(maps, [(2, 1), (6, 3), (6, 8)]);
/// assert_eq!(carry, (6, 8));
/// ```
pub fn scan_with<E: Clone>(
    identity: E,
    combine: impl Fn(E, E) -> E,
    kind: ScanKind<E>,
    direction: crate::Direction,
    data: &mut [E],
) -> E {
    let (inclusive, seed) = kind_parts(kind);
    let reverse = direction == crate::Direction::Reverse;
    scan_run_with(identity, &combine, inclusive, seed, reverse, data)
}

/// Whether `kind` is inclusive, and its seed (`None`: nothing in front).
fn kind_parts<E>(kind: ScanKind<E>) -> (bool, Option<E>) {
    match kind {
        ScanKind::Inclusive => (true, None),
        ScanKind::Exclusive => (false, None),
        ScanKind::InclusiveWithInit(init) => (true, Some(init)),
        ScanKind::ExclusiveWithInit(init) => (false, Some(init)),
    }
}

/// A chunk's total, `chunk[0] ∘ … ∘ chunk[last]` (the same in either
/// direction); `None` for an empty chunk.
fn reduce<Op: ScanOp>(chunk: &[Op::Element]) -> Option<Op::Element> {
    chunk
        .iter()
        .fold(None, |acc, x| Some(step::<Op>(false, acc, *x)))
}

/// Scans `input` into `output` sequentially.
///
/// `spec` is a [`ScanKind`] (a forward scan) or a [`ScanSpec`] (see
/// [`Direction`](crate::Direction) for reverse scans, and
/// [`ScanSpec::carry_out`]). On a length error nothing is written, the
/// carry-out slot included.
pub fn scan<Op: ScanOp>(
    spec: impl IntoScanSpec<Op::Element, Carry: HostCarryOut<Op::Element>, Segments = NoSegments>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), LengthMismatch> {
    LengthMismatch::check(input.len(), output.len())?;
    let spec = spec.into_spec();
    let (inclusive, seed, reverse) = plan(&spec);
    let carry = scan_run::<Op>(inclusive, seed, reverse, input, output);
    spec.carry_out.put(carry);
    Ok(())
}

/// Scans `data` in place sequentially.
pub fn scan_in_place<Op: ScanOp>(
    spec: impl IntoScanSpec<Op::Element, Carry: HostCarryOut<Op::Element>, Segments = NoSegments>,
    data: &mut [Op::Element],
) {
    let spec = spec.into_spec();
    let (inclusive, seed, reverse) = plan(&spec);
    let carry = scan_run_in_place::<Op>(inclusive, seed, reverse, data);
    spec.carry_out.put(carry);
}

/// Elements per parallel chunk: enough chunks to balance the pool, never so
/// small that the pass over chunk totals dominates.
pub(crate) fn chunk_len(n: usize) -> usize {
    let chunks = rayon::current_num_threads().max(1) * 4;
    n.div_ceil(chunks).max(1 << 14)
}

/// What goes in front of each chunk in scan order: the chunk totals before
/// it (after it, in reverse) behind `seed`; and the carry-out, everything
/// behind `seed`.
fn chunk_prefixes<Op: ScanOp>(
    seed: Option<Op::Element>,
    reverse: bool,
    totals: &[Option<Op::Element>],
) -> (Vec<Option<Op::Element>>, Op::Element) {
    let mut prefixes = vec![None; totals.len()];
    let mut running = seed;
    for k in 0..totals.len() {
        let c = nth_index(reverse, totals.len(), k);
        prefixes[c] = running;
        if let Some(t) = totals[c] {
            running = Some(step::<Op>(reverse, running, t));
        }
    }
    (prefixes, carry_of::<Op>(running))
}

/// Scans `input` into `output` on all cores.
pub fn par_scan<Op: ScanOp>(
    spec: impl IntoScanSpec<Op::Element, Carry: HostCarryOut<Op::Element>, Segments = NoSegments>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), LengthMismatch> {
    LengthMismatch::check(input.len(), output.len())?;
    let spec = spec.into_spec();
    let (inclusive, seed, reverse) = plan(&spec);
    let len = chunk_len(input.len());
    if input.len() <= len {
        let carry = scan_run::<Op>(inclusive, seed, reverse, input, output);
        spec.carry_out.put(carry);
        return Ok(());
    }
    let totals: Vec<_> = input.par_chunks(len).map(reduce::<Op>).collect();
    let (prefixes, carry) = chunk_prefixes::<Op>(seed, reverse, &totals);
    input
        .par_chunks(len)
        .zip(output.par_chunks_mut(len))
        .zip(prefixes)
        .for_each(|((i, o), prefix)| {
            scan_run::<Op>(inclusive, prefix, reverse, i, o);
        });
    spec.carry_out.put(carry);
    Ok(())
}

/// Scans `input` mapped by load stage `M` into `output`, on all cores:
/// `output` is `Op`'s scan of `M::apply(x)` for each `x` of `input` (the
/// GPU applies the stage as it loads each element, and reads the input
/// once).
///
/// ```
/// use gpu_scan::ops::Sum;
/// use gpu_scan::prelude::*;
///
/// #[scan_map(input = u8, output = u32, map = |x| x as u32)]
/// struct Widen;
///
/// let mut out = [0u32; 3];
/// cpu::scan_mapped::<Widen, Sum<u32>>(ScanKind::Inclusive, &[200, 100, 50], &mut out).unwrap();
/// assert_eq!(out, [200, 300, 350]);
/// ```
pub fn scan_mapped<M: ScanMap<Output = Op::Element>, Op: ScanOp>(
    spec: impl IntoScanSpec<Op::Element, Carry: HostCarryOut<Op::Element>, Segments = NoSegments>,
    input: &[M::Input],
    output: &mut [Op::Element],
) -> Result<(), LengthMismatch> {
    LengthMismatch::check(input.len(), output.len())?;
    let mapped: Vec<Op::Element> = input.par_iter().map(|&x| M::apply(x)).collect();
    par_scan::<Op>(spec, &mapped, output)
}

/// Scans `input` through load stage `L` and store stage `S` into
/// `output`, on all cores: `output[i]` is `S::apply` of element `i` of
/// `Op`'s scan of `L::apply(x)` for each `x` of `input`, what
/// `GpuScanner::scan_through` computes with the stages in its kernels. The
/// carry-out is `Op`'s element, before the store stage.
///
/// ```
/// use gpu_scan::ops::Sum;
/// use gpu_scan::prelude::*;
///
/// #[scan_map(input = u8, output = u32, map = |x| x as u32)]
/// struct Widen;
///
/// #[scan_map(input = u32, output = bool, map = |x| x >= 300)]
/// struct AtLeast300;
///
/// let mut out = [false; 3];
/// cpu::scan_staged::<Widen, Sum<u32>, AtLeast300>(ScanKind::Inclusive, &[200, 100, 50], &mut out).unwrap();
/// assert_eq!(out, [false, true, true]);
/// ```
pub fn scan_staged<L, Op, S>(
    spec: impl IntoScanSpec<Op::Element, Carry: HostCarryOut<Op::Element>, Segments = NoSegments>,
    input: &[L::Input],
    output: &mut [S::Output],
) -> Result<(), LengthMismatch>
where
    L: ScanMap<Output = Op::Element>,
    Op: ScanOp,
    S: ScanMap<Input = Op::Element>,
{
    LengthMismatch::check(input.len(), output.len())?;
    let mapped: Vec<Op::Element> = input.par_iter().map(|&x| L::apply(x)).collect();
    let mut scanned = vec![Op::IDENTITY; input.len()];
    par_scan::<Op>(spec, &mapped, &mut scanned)?;
    output
        .par_iter_mut()
        .zip(scanned)
        .for_each(|(out, x)| *out = S::apply(x));
    Ok(())
}

/// Scans `input` into `output` through store stage `S` alone, on all
/// cores ([`scan_staged`] without a load stage).
pub fn scan_stored<Op, S>(
    spec: impl IntoScanSpec<Op::Element, Carry: HostCarryOut<Op::Element>, Segments = NoSegments>,
    input: &[Op::Element],
    output: &mut [S::Output],
) -> Result<(), LengthMismatch>
where
    Op: ScanOp,
    S: ScanMap<Input = Op::Element>,
{
    LengthMismatch::check(input.len(), output.len())?;
    let mut scanned = vec![Op::IDENTITY; input.len()];
    par_scan::<Op>(spec, input, &mut scanned)?;
    output
        .par_iter_mut()
        .zip(scanned)
        .for_each(|(out, x)| *out = S::apply(x));
    Ok(())
}

/// Scans `data` in place on all cores.
pub fn par_scan_in_place<Op: ScanOp>(
    spec: impl IntoScanSpec<Op::Element, Carry: HostCarryOut<Op::Element>, Segments = NoSegments>,
    data: &mut [Op::Element],
) {
    let spec = spec.into_spec();
    let (inclusive, seed, reverse) = plan(&spec);
    let carry = par_scan_run_with(Op::IDENTITY, &Op::combine, inclusive, seed, reverse, data);
    spec.carry_out.put(carry);
}

/// [`scan_with`] on all cores (chunk totals, their scan, a seeded rescan
/// of each chunk, as [`par_scan_in_place`]): the same results whenever the
/// operator is associative (integers bit for bit). Returns the carry-out.
///
/// ```
/// use scan_core::{cpu, Direction, ScanKind};
///
/// let mut data: Vec<u64> = (1..=100_000).collect();
/// let carry = cpu::par_scan_with(0, |x, y| x + y, ScanKind::Inclusive, Direction::Forward, &mut data);
/// assert_eq!((data[99_999], carry), (5_000_050_000, 5_000_050_000));
/// ```
pub fn par_scan_with<E: Clone + Send + Sync>(
    identity: E,
    combine: impl Fn(E, E) -> E + Sync,
    kind: ScanKind<E>,
    direction: crate::Direction,
    data: &mut [E],
) -> E {
    let (inclusive, seed) = kind_parts(kind);
    let reverse = direction == crate::Direction::Reverse;
    par_scan_run_with(identity, &combine, inclusive, seed, reverse, data)
}

/// The parallel in-place scan of [`par_scan_in_place`] and
/// [`par_scan_with`], the operator given as values.
fn par_scan_run_with<E: Clone + Send + Sync>(
    identity: E,
    combine: &(impl Fn(E, E) -> E + Sync),
    inclusive: bool,
    seed: Option<E>,
    reverse: bool,
    data: &mut [E],
) -> E {
    let len = chunk_len(data.len());
    if data.len() <= len {
        return scan_run_with(identity, combine, inclusive, seed, reverse, data);
    }
    // Each chunk's total (the same in either direction).
    let totals: Vec<Option<E>> = data
        .par_chunks(len)
        .map(|chunk| {
            chunk
                .iter()
                .cloned()
                .fold(None, |acc, x| Some(step_with(combine, false, acc, x)))
        })
        .collect();
    // What goes in front of each chunk in scan order.
    let mut prefixes = vec![None; totals.len()];
    let mut running = seed;
    for k in 0..totals.len() {
        let c = nth_index(reverse, totals.len(), k);
        prefixes[c] = running.clone();
        if let Some(t) = &totals[c] {
            running = Some(step_with(combine, reverse, running, t.clone()));
        }
    }
    data.par_chunks_mut(len)
        .zip(prefixes)
        .for_each(|(chunk, prefix)| {
            scan_run_with(identity.clone(), combine, inclusive, prefix, reverse, chunk);
        });
    running.unwrap_or(identity)
}

macro_rules! forms {
    ($(($doc:literal, $name:ident, $in_place:ident, $vec:ident, $engine:ident, $engine_in_place:ident, $kind:expr $(, $init:ident)?)),* $(,)?) => {$(
        #[doc = concat!("Out-of-place ", $doc, " of `input` into `output` (equal lengths).")]
        pub fn $name<Op: ScanOp>(input: &[Op::Element], output: &mut [Op::Element] $(, $init: Op::Element)?) -> Result<(), LengthMismatch> {
            $engine::<Op>($kind, input, output)
        }
        #[doc = concat!("In-place ", $doc, " of `data`.")]
        pub fn $in_place<Op: ScanOp>(data: &mut [Op::Element] $(, $init: Op::Element)?) {
            $engine_in_place::<Op>($kind, data)
        }
        #[doc = concat!($doc, " of `input` into a new `Vec`.")]
        pub fn $vec<Op: ScanOp>(input: &[Op::Element] $(, $init: Op::Element)?) -> Vec<Op::Element> {
            let mut out = input.to_vec();
            $engine_in_place::<Op>($kind, &mut out);
            out
        }
    )*};
}

forms! {
    ("sequential inclusive scan", inclusive, inclusive_in_place, inclusive_vec, scan, scan_in_place, ScanKind::Inclusive),
    ("sequential exclusive scan", exclusive, exclusive_in_place, exclusive_vec, scan, scan_in_place, ScanKind::Exclusive),
    ("sequential exclusive scan seeded with `init`", exclusive_with_init, exclusive_with_init_in_place, exclusive_with_init_vec, scan, scan_in_place, ScanKind::ExclusiveWithInit(init), init),
    ("sequential inclusive scan seeded with `init`", inclusive_with_init, inclusive_with_init_in_place, inclusive_with_init_vec, scan, scan_in_place, ScanKind::InclusiveWithInit(init), init),
    ("parallel inclusive scan", par_inclusive, par_inclusive_in_place, par_inclusive_vec, par_scan, par_scan_in_place, ScanKind::Inclusive),
    ("parallel exclusive scan", par_exclusive, par_exclusive_in_place, par_exclusive_vec, par_scan, par_scan_in_place, ScanKind::Exclusive),
    ("parallel exclusive scan seeded with `init`", par_exclusive_with_init, par_exclusive_with_init_in_place, par_exclusive_with_init_vec, par_scan, par_scan_in_place, ScanKind::ExclusiveWithInit(init), init),
    ("parallel inclusive scan seeded with `init`", par_inclusive_with_init, par_inclusive_with_init_in_place, par_inclusive_with_init_vec, par_scan, par_scan_in_place, ScanKind::InclusiveWithInit(init), init),
}
