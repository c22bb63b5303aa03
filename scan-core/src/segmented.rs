//! Segmented scans on the CPU: the oracle for the GPU's segmented kernels.
//!
//! A segmented scan restarts at every *segment head*. Heads are given as
//! [`HeadFlags`]: one byte per element (non-zero marks a head) or bits packed
//! into `u32` words (element `i` is bit `i % 32` of word `i / 32`). Element 0
//! always starts a segment, flagged or not.
//!
//! * inclusive: `out[i] = in[h] ∘ … ∘ in[i]`, where `h` is the head of `i`'s
//!   segment;
//! * exclusive: `out[i] = in[h] ∘ … ∘ in[i-1]`, the identity at each head;
//! * exclusive with `init`: `out[i] = init ∘ in[h] ∘ … ∘ in[i-1]`, `init` at
//!   each head (every segment is seeded).
//!
//! In reverse ([`ScanSpec::reverse`](crate::ScanSpec::reverse)) every segment is scanned from its
//! last element `t`: `out[i] = in[i] ∘ … ∘ in[t]` inclusive, `in[i+1] ∘ … ∘
//! in[t]` exclusive (the identity at `t`), `in[i+1] ∘ … ∘ in[t] ∘ init` with
//! `init` (`init` at `t`).
//!
//! Segments are given as [`Segments`]: head flags, rows of a fixed length
//! ([`Segments::rows`]: a row-major matrix scanned along its rows, with no
//! flags at all), segment start offsets ([`Segments::offsets`], CSR row
//! pointers) or one key per element ([`Segments::keys`], a scan by key).
//! Flags can also be built from offsets and keys ([`heads_from_offsets`],
//! [`heads_from_keys`]; the GPU has the same builders).
//!
//! ```
//! use gpu_scan::prelude::*;
//! use gpu_scan::segmented::{self, FlagFormat, HeadFlags};
//!
//! #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
//! struct Sum;
//!
//! // Segments [1 2 3] [4] [] [5 6]: offsets 0, 3, 4, 4, 6.
//! let heads = segmented::heads_from_offsets(&[0u32, 3, 4, 4], 6, FlagFormat::Bytes).unwrap();
//! let mut out = vec![0; 6];
//! segmented::scan::<Sum>(ScanKind::Inclusive, heads.as_flags(), &[1, 2, 3, 4, 5, 6], &mut out).unwrap();
//! assert_eq!(out, [1, 3, 6, 4, 5, 11]);
//! ```

use crate::cpu::{nth_index, plan, step};
use crate::lengths::LengthMismatch;
use crate::segment_totals;
use crate::spec::{HostSegmentedCarryOut, IntoScanSpec, NoSegments};
use crate::ScanOp;
use rayon::prelude::*;

pub use crate::segment_totals::segment_ranges;
pub use crate::segments::{
    heads_from_keys, heads_from_offsets, FlagsLengthMismatch, HeadFlags, InvalidOffsets,
    KeysLengthMismatch, OwnedHeadFlags, RowLengthMismatch, SegmentKey, SegmentKeys, SegmentOffset,
    SegmentOffsets, SegmentTotalsLength, SegmentedError, Segments,
};
pub use scan_types::FlagFormat;

/// Whether element `i` of `n` starts a segment in scan order: its head
/// going forward; in reverse, the segment's last element (the one before
/// the next head, or the sequence's last).
fn starts(heads: Segments<'_>, reverse: bool, n: usize, i: usize) -> bool {
    if reverse {
        i + 1 == n || heads.is_head(i + 1)
    } else {
        heads.is_head(i)
    }
}

/// Scans `data[k]` (element `offset + k` of a sequence of `n`) in place,
/// in scan order, starting with `carry` (the open segment's seeded partial,
/// `None`: nothing); returns the partial open at the end (`None`: nothing).
#[allow(clippy::too_many_arguments)]
fn run<Op: ScanOp>(
    inclusive: bool,
    init: Option<Op::Element>,
    reverse: bool,
    heads: Segments<'_>,
    n: usize,
    offset: usize,
    carry: Option<Op::Element>,
    data: &mut [Op::Element],
) -> Option<Op::Element> {
    let mut running = carry;
    for k in 0..data.len() {
        let i = nth_index(reverse, data.len(), k);
        if starts(heads, reverse, n, offset + i) {
            running = init;
        }
        let next = step::<Op>(reverse, running, data[i]);
        data[i] = if inclusive {
            next
        } else {
            running.unwrap_or(Op::IDENTITY)
        };
        running = Some(next);
    }
    running
}

/// The carry-out of a segmented scan whose last segment's partial is
/// `open` (`None` for an empty input: the seed).
fn segmented_carry<Op: ScanOp>(
    open: Option<Op::Element>,
    init: Option<Op::Element>,
) -> Op::Element {
    crate::cpu::carry_of::<Op>(open.or(init))
}

/// A chunk's lifted total in scan order: whether a segment starts in it,
/// and the seeded partial of its last segment in scan order (`None` for an
/// empty chunk).
fn chunk_total<Op: ScanOp>(
    init: Option<Op::Element>,
    reverse: bool,
    heads: Segments<'_>,
    n: usize,
    offset: usize,
    chunk: &[Op::Element],
) -> (bool, Option<Op::Element>) {
    let mut has_head = false;
    let mut total = None;
    for k in 0..chunk.len() {
        let i = nth_index(reverse, chunk.len(), k);
        if starts(heads, reverse, n, offset + i) {
            has_head = true;
            total = init;
        }
        total = Some(step::<Op>(reverse, total, chunk[i]));
    }
    (has_head, total)
}

/// Sequential segmented scan of `input` into `output`. `spec` may carry a
/// carry-out slot ([`ScanSpec::carry_out`](crate::ScanSpec::carry_out)): it receives the last
/// segment's partial in scan order; or a slot of one total per segment
/// ([`ScanSpec::segment_totals`](crate::ScanSpec::segment_totals), see
/// [`segment_ranges`] for the segments). On an error nothing is written.
pub fn scan<'a, Op: ScanOp>(
    spec: impl IntoScanSpec<
        Op::Element,
        Carry: HostSegmentedCarryOut<Op::Element>,
        Segments = NoSegments,
    >,
    heads: impl Into<Segments<'a>>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    if input.len() != output.len() {
        return Err(LengthMismatch {
            input: input.len(),
            output: output.len(),
        }
        .into());
    }
    let heads = heads.into();
    heads.check_len(input.len())?;
    let mut spec = spec.into_spec();
    let (inclusive, init, reverse) = plan(&spec);
    put_totals::<Op>(&mut spec.carry_out, init, reverse, heads, input)?;
    output.copy_from_slice(input);
    let open = run::<Op>(
        inclusive,
        init,
        reverse,
        heads,
        input.len(),
        0,
        None,
        output,
    );
    spec.carry_out.put_carry(segmented_carry::<Op>(open, init));
    Ok(())
}

/// Checks a per-segment totals slot against the segments of `input` and
/// fills it (nothing for the other slots); an error writes nothing.
fn put_totals<Op: ScanOp>(
    slot: &mut impl HostSegmentedCarryOut<Op::Element>,
    init: Option<Op::Element>,
    reverse: bool,
    heads: Segments<'_>,
    input: &[Op::Element],
) -> Result<(), SegmentedError> {
    if slot.totals().is_some() {
        let ranges = segment_ranges(heads, input.len());
        if let Some(totals) = slot.totals_for(ranges.len())? {
            segment_totals::fill::<Op>(init, reverse, &ranges[..totals.len()], input, totals);
        }
    }
    Ok(())
}

/// Sequential segmented scan of `data` in place.
pub fn scan_in_place<'a, Op: ScanOp>(
    spec: impl IntoScanSpec<
        Op::Element,
        Carry: HostSegmentedCarryOut<Op::Element>,
        Segments = NoSegments,
    >,
    heads: impl Into<Segments<'a>>,
    data: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    let heads = heads.into();
    heads.check_len(data.len())?;
    let mut spec = spec.into_spec();
    let (inclusive, init, reverse) = plan(&spec);
    put_totals::<Op>(&mut spec.carry_out, init, reverse, heads, data)?;
    let open = run::<Op>(inclusive, init, reverse, heads, data.len(), 0, None, data);
    spec.carry_out.put_carry(segmented_carry::<Op>(open, init));
    Ok(())
}

/// Segmented scan of `input` into `output` on all cores.
pub fn par_scan<'a, Op: ScanOp>(
    spec: impl IntoScanSpec<
        Op::Element,
        Carry: HostSegmentedCarryOut<Op::Element>,
        Segments = NoSegments,
    >,
    heads: impl Into<Segments<'a>>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    if input.len() != output.len() {
        return Err(LengthMismatch {
            input: input.len(),
            output: output.len(),
        }
        .into());
    }
    let heads = heads.into();
    heads.check_len(input.len())?;
    let mut spec = spec.into_spec();
    let (_, init, reverse) = plan(&spec);
    put_totals::<Op>(&mut spec.carry_out, init, reverse, heads, input)?;
    let (spec, carry_out) = spec.split_carry_out();
    output.par_iter_mut().zip(input).for_each(|(o, i)| *o = *i);
    let mut carry = Op::IDENTITY;
    par_scan_in_place::<Op>(spec.carry_out(&mut carry), heads, output)?;
    carry_out.put_carry(carry);
    Ok(())
}

/// Segmented scan of `data` in place on all cores: chunk totals of the
/// operator lifted to (head, value) pairs, their exclusive scan, and a
/// seeded rescan of every chunk (the GPU's structure).
pub fn par_scan_in_place<'a, Op: ScanOp>(
    spec: impl IntoScanSpec<
        Op::Element,
        Carry: HostSegmentedCarryOut<Op::Element>,
        Segments = NoSegments,
    >,
    heads: impl Into<Segments<'a>>,
    data: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    let heads = heads.into();
    heads.check_len(data.len())?;
    let mut spec = spec.into_spec();
    let (inclusive, init, reverse) = plan(&spec);
    put_totals::<Op>(&mut spec.carry_out, init, reverse, heads, data)?;
    let n = data.len();
    let len = crate::cpu::chunk_len(n);
    let totals: Vec<_> = data
        .par_chunks(len)
        .enumerate()
        .map(|(c, chunk)| chunk_total::<Op>(init, reverse, heads, n, c * len, chunk))
        .collect();
    // Exclusive scan of the lifted totals in scan order:
    // (f1, v1) ⊕ (f2, v2) = (f1 | f2, f2 ? v2 : v1 ∘ v2).
    let mut carries = vec![None; totals.len()];
    let mut running: Option<Op::Element> = None;
    for k in 0..totals.len() {
        let c = nth_index(reverse, totals.len(), k);
        carries[c] = running;
        running = match totals[c] {
            (true, t) => t,
            (false, Some(t)) => Some(step::<Op>(reverse, running, t)),
            (false, None) => running,
        };
    }
    data.par_chunks_mut(len)
        .zip(carries)
        .enumerate()
        .for_each(|(c, (chunk, carry))| {
            run::<Op>(inclusive, init, reverse, heads, n, c * len, carry, chunk);
        });
    spec.carry_out
        .put_carry(segmented_carry::<Op>(running, init));
    Ok(())
}
