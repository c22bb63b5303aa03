//! Scans across ranks (issue 49): every rank holds a contiguous shard of
//! one sequence, in rank order, of any length (0 included), and together
//! they scan it as one. The algorithm reads each element at most twice and
//! writes each output once: each rank reduces its shard to its total, one
//! all-gather shares the totals (and whether every rank's call is valid),
//! and each rank scans its shard seeded with the combination of the totals
//! before it in scan order (after it, going backwards), the scan's initial
//! value in front. Any associative operator: totals are combined in rank
//! order, never reordered.
//!
//! The ranks talk through a [`Collective`]: [`SimulatedRanks`] here, ranks
//! as threads of one process (what CI tests the algorithm with); NCCL
//! communicators on GPUs implement the same exchange. Every rank must make
//! the same calls in the same order, as with NCCL; a rank whose arguments
//! are wrong still takes part in the exchange, so every rank returns the
//! error ([`DistributedError::OtherRank`] on the others) and no rank waits
//! for ever.
//!
//! ```
//! use gpu_scan::distributed::{scan, SimulatedRanks};
//! use gpu_scan::ops::Sum;
//! use gpu_scan::ScanSpec;
//!
//! // 10 elements over three ranks: 4, 0 and 6 of them.
//! let shards: [Vec<u32>; 3] = [vec![1, 2, 3, 4], vec![], vec![5, 6, 7, 8, 9, 10]];
//! let outputs: Vec<Vec<u32>> = std::thread::scope(|s| {
//!     let ranks = SimulatedRanks::new(3);
//!     let jobs: Vec<_> = ranks
//!         .into_iter()
//!         .zip(&shards)
//!         .map(|(rank, shard)| {
//!             s.spawn(move || {
//!                 let mut out = vec![0; shard.len()];
//!                 scan::<Sum<u32>, _>(&rank, ScanSpec::inclusive(), shard, &mut out).unwrap();
//!                 out
//!             })
//!         })
//!         .collect();
//!     jobs.into_iter().map(|j| j.join().unwrap()).collect()
//! });
//! assert_eq!(outputs[0], [1, 3, 6, 10]);
//! assert_eq!(outputs[2], [15, 21, 28, 36, 45, 55]);
//! ```

use crate::cpu;
use crate::lengths::LengthMismatch;
use crate::segment_totals::{self, segment_ranges};
use crate::segmented::{self, HeadFlags, SegmentTotalsLength, SegmentedError, Segments};
use crate::spec::{
    HostCarryOut, HostSegmentedCarryOut, IntoScanSpec, NoCarryOut, NoSegments, ScanKind, ScanSpec,
};
use crate::{Direction, ScanOp};
use std::any::Any;
use std::sync::{Arc, Barrier, Mutex};

/// How ranks exchange values: one rank of a group of [`Collective::ranks`].
pub trait Collective {
    /// How many ranks the group has.
    fn ranks(&self) -> usize;
    /// This rank's index, `0..ranks()`.
    fn rank(&self) -> usize;
    /// Every rank's `value`, in rank order; every rank calls it.
    fn all_gather<T: Copy + Send + Sync + 'static>(
        &self,
        value: T,
    ) -> Result<Vec<T>, CollectiveError>;
}

/// An exchange between ranks that failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the ranks' exchange failed: {0}")]
pub struct CollectiveError(pub String);

/// A distributed scan that could not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DistributedError {
    /// This rank's input and output differ in length (nothing was written
    /// on any rank).
    #[error(transparent)]
    Length(#[from] LengthMismatch),
    /// This rank's segments do not fit its shard: flags or keys not one
    /// per element, offsets that are not its row pointers (nothing was
    /// written on any rank).
    #[error(transparent)]
    Segmented(#[from] SegmentedError),
    /// Rows across ranks: a row's place depends on the lengths of the
    /// shards before it, which no rank knows before the exchange; give
    /// each shard's row starts as offsets (nothing was written on any
    /// rank).
    #[error("segments by rows cannot span ranks: give each shard's row starts as offsets")]
    RowsAcrossRanks,
    /// Another rank's call was wrong (nothing was written on any rank).
    #[error("rank {rank} of the group could not scan its shard; no rank wrote anything")]
    OtherRank {
        /// The first such rank.
        rank: usize,
    },
    /// The exchange failed.
    #[error(transparent)]
    Collective(#[from] CollectiveError),
}

/// What each rank contributes to the exchange: whether its call is valid,
/// and its shard's total (`None` for an empty shard).
#[derive(Clone, Copy)]
struct Contribution<E> {
    valid: bool,
    total: Option<E>,
}

/// The fold of `values` in order, `None` where there is none.
fn fold<Op: ScanOp>(values: impl Iterator<Item = Option<Op::Element>>) -> Option<Op::Element> {
    values.flatten().reduce(Op::combine)
}

/// A rank's place in the whole: what goes in front of its shard in scan
/// order (the scan's initial value and the other shards' totals before
/// it; after it in memory, going backwards), and the whole sequence's
/// carry-out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankPrefix<E> {
    /// What a scan of the shard alone lacks: `None` where nothing comes
    /// before the shard (the first rank of a scan without an initial
    /// value, and the ranks after empty ones).
    pub prefix: Option<E>,
    /// The whole sequence's carry-out (its total, behind the initial value).
    pub total: E,
    /// The scan's direction.
    pub direction: Direction,
}

impl<E: Copy> RankPrefix<E> {
    /// The spec this rank scans its shard with, inclusive or exclusive:
    /// behind the prefix, in the scan's direction.
    pub fn shard_spec(&self, inclusive: bool) -> ScanSpec<E> {
        ScanSpec::from(seeded(inclusive, self.prefix)).with_direction(self.direction)
    }

    /// Turns `output`, a scan of the shard alone (without the initial
    /// value: [`scan_deferred`]), into the shard's part of the whole scan:
    /// every element behind the prefix (in front of it, for a forward
    /// scan; after it, going backwards). One more pass over the shard.
    pub fn apply<Op: ScanOp<Element = E>>(&self, output: &mut [E]) {
        let Some(prefix) = self.prefix else {
            return;
        };
        for x in output.iter_mut() {
            *x = match self.direction {
                Direction::Forward => Op::combine(prefix, *x),
                Direction::Reverse => Op::combine(*x, prefix),
            };
        }
    }
}

/// The exchange: this rank's validity and total out, every rank's back;
/// the first invalid rank as an error.
fn exchange<Op: ScanOp, C: Collective>(
    comm: &C,
    valid: Result<(), LengthMismatch>,
    total: Option<Op::Element>,
) -> Result<Vec<Option<Op::Element>>, DistributedError> {
    let all = comm.all_gather(Contribution {
        valid: valid.is_ok(),
        total,
    })?;
    valid?;
    if let Some(rank) = all.iter().position(|c| !c.valid) {
        return Err(DistributedError::OtherRank { rank });
    }
    Ok(all.into_iter().map(|c| c.total).collect())
}

/// Rank `rank`'s place among every rank's shard total (`totals`, in rank
/// order, `None` for an empty shard) for a scan in `direction` from
/// `init`: what an implementation of the exchange over another transport
/// (the GPU backend's NCCL ranks) computes from what it gathered.
pub fn rank_prefix<Op: ScanOp>(
    totals: &[Option<Op::Element>],
    rank: usize,
    init: Option<Op::Element>,
    direction: Direction,
) -> RankPrefix<Op::Element> {
    let init = std::iter::once(init);
    let (prefix, total) = match direction {
        Direction::Forward => (
            fold::<Op>(init.clone().chain(totals[..rank].iter().copied())),
            fold::<Op>(init.chain(totals.iter().copied())),
        ),
        Direction::Reverse => (
            fold::<Op>(totals[rank + 1..].iter().copied().chain(init.clone())),
            fold::<Op>(totals.iter().copied().chain(init)),
        ),
    };
    RankPrefix {
        prefix,
        total: total.unwrap_or(Op::IDENTITY),
        direction,
    }
}

/// The kind a shard is scanned with, seeded with what comes before it.
fn seeded<E: Copy>(inclusive: bool, prefix: Option<E>) -> ScanKind<E> {
    match (inclusive, prefix) {
        (true, None) => ScanKind::Inclusive,
        (true, Some(p)) => ScanKind::InclusiveWithInit(p),
        (false, None) => ScanKind::Exclusive,
        (false, Some(p)) => ScanKind::ExclusiveWithInit(p),
    }
}

/// This rank's share of `spec`, a scan of the whole sequence whose shard
/// here is `input`, into `output` (of the same length), on all cores;
/// every rank of `comm` calls it with the same spec (a carry-out, where
/// asked, gets the whole sequence's on every rank). On an error (a length
/// here or on another rank, the exchange) nothing is written on any rank.
pub fn scan<Op: ScanOp, C: Collective>(
    comm: &C,
    spec: impl IntoScanSpec<Op::Element, Carry: HostCarryOut<Op::Element>, Segments = NoSegments>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), DistributedError> {
    let spec = spec.into_spec();
    let (inclusive, init, _) = cpu::plan(&spec);
    let valid = LengthMismatch::check(input.len(), output.len());
    let total = valid.is_ok().then(|| reduce::<Op>(input)).flatten();
    let totals = exchange::<Op, C>(comm, valid, total)?;
    let direction = spec.direction;
    let place = rank_prefix::<Op>(&totals, comm.rank(), init, direction);
    let local = place.shard_spec(inclusive);
    cpu::par_scan::<Op>(local, input, output)?;
    spec.carry_out.put(place.total);
    Ok(())
}

/// The spec the deferred form scans a shard alone with: `spec`'s kind
/// without its initial value, in its direction (the GPU backend's
/// deferred form takes it too).
pub fn shard_alone<E: Copy, C, S>(spec: &ScanSpec<E, C, S>) -> ScanSpec<E> {
    ScanSpec::from(seeded(spec.kind.is_inclusive(), None)).with_direction(spec.direction)
}

/// The deferred form: this rank's shard scanned alone (`spec`'s kind
/// without its initial value), and where it lies in the whole, for a
/// producer that applies the prefix itself (or [`RankPrefix::apply`]).
/// The local scan does not wait for the other ranks: only the one-element
/// exchange does, so its cost is a one-rank scan and the exchange. Every
/// rank calls it with the same spec. A length wrong here is found before
/// anything is written; another rank's is found by the exchange, after
/// this rank's local scan has written `output`
/// ([`DistributedError::OtherRank`]).
pub fn scan_deferred<Op: ScanOp, C: Collective>(
    comm: &C,
    spec: impl IntoScanSpec<Op::Element, Carry = NoCarryOut, Segments = NoSegments>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<RankPrefix<Op::Element>, DistributedError> {
    let spec = spec.into_spec();
    let (init, direction) = (spec.kind.init(), spec.direction);
    let valid = LengthMismatch::check(input.len(), output.len());
    let mut total = None;
    if valid.is_ok() {
        // The shard alone; its carry-out is its total.
        let mut carry = Op::IDENTITY;
        let local = shard_alone(&spec).carry_out(&mut carry);
        cpu::par_scan::<Op>(local, input, output)?;
        total = (!input.is_empty()).then_some(carry);
    }
    let totals = exchange::<Op, C>(comm, valid, total)?;
    Ok(rank_prefix::<Op>(&totals, comm.rank(), init, direction))
}

/// A nonempty shard of a segmented scan across ranks, as every rank sees it
/// after the exchange: what [`segmented_place`] resolves the ranks' places
/// from. Each backend finds it in its own way (the CPU backend on the host,
/// a GPU rank with one search kernel and its local scan's carry-out).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentedShard<E> {
    /// Its number of elements (not 0).
    pub len: usize,
    /// How its ends meet its neighbours'.
    pub edges: ShardEdges,
    /// The first element after element 0 (in memory) that starts a
    /// segment: a non-zero flag, an offset, a key unlike the one before.
    pub first_head: Option<usize>,
    /// The last such element.
    pub last_head: Option<usize>,
    /// The partial of the segment open at the shard's end in scan order,
    /// with its boundary element (its first in scan order) taken as a
    /// head: from the shard's last head in scan order, behind the scan's
    /// initial value where it has one. A local segmented scan's carry-out.
    pub tail: E,
    /// The whole shard's fold without the initial value: what the shard
    /// passes on where no head lies in it and its boundary is no head
    /// either (only read then).
    pub fold: E,
    /// The fold, without the initial value, of the shard's first piece in
    /// scan order: its elements before its first head in scan order (from
    /// element 0 forward; from its last head to its end backwards). What
    /// per-segment totals across ranks add to a segment that runs into the
    /// shard; `None` where the call asked for none (a GPU rank computes it
    /// only then).
    pub lead: Option<E>,
}

impl<E: Copy> SegmentedShard<E> {
    /// The shard's pair `(a head lies in it, partial)` in scan order, with
    /// its boundary element a head or not.
    fn pair(&self, boundary_head: bool) -> (bool, E) {
        match (self.first_head.is_some(), boundary_head) {
            (true, _) | (false, true) => (true, self.tail),
            (false, false) => (false, self.fold),
        }
    }
}

/// What decides whether a segment runs on from one nonempty shard into the
/// next in memory: the first element's own mark (a flag, an offset of 0),
/// or, by keys, the keys at both ends (their bits, zero-extended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardEdges {
    /// Flags or offsets: whether the shard's element 0 is marked as a head.
    Marked {
        /// Its flag is set, or an offset is 0.
        first_is_head: bool,
    },
    /// Keys: the first and last keys' bits.
    Keyed {
        /// Element 0's key.
        first: u64,
        /// The last element's key.
        last: u64,
    },
}

impl ShardEdges {
    /// This nonempty shard's edges in `segments`.
    fn of(segments: &Segments<'_>) -> ShardEdges {
        match segments {
            Segments::Keys(keys) => {
                let (bytes, w) = (keys.as_bytes(), keys.width());
                let bits = |at: usize| {
                    let mut word = [0u8; 8];
                    word[..w].copy_from_slice(&bytes[at..at + w]);
                    u64::from_le_bytes(word)
                };
                ShardEdges::Keyed {
                    first: bits(0),
                    last: bits(bytes.len() - w),
                }
            }
            Segments::Flags(flags) => ShardEdges::Marked {
                first_is_head: first_flag(flags),
            },
            Segments::Offsets(offsets) => ShardEdges::Marked {
                first_is_head: offsets.contains(0),
            },
            // Refused before.
            _ => ShardEdges::Marked {
                first_is_head: true,
            },
        }
    }

    /// Whether the segment open at the end of the shard `self` runs on
    /// into the next nonempty shard in memory, `next`.
    fn runs_into(&self, next: &ShardEdges) -> bool {
        match (self, next) {
            (ShardEdges::Keyed { last, .. }, ShardEdges::Keyed { first, .. }) => last == first,
            (_, ShardEdges::Marked { first_is_head }) => !first_is_head,
            // Ranks that disagree on the kind of segments: a boundary.
            _ => false,
        }
    }
}

/// Whether the first element's own flag is set (`HeadFlags::is_head` says
/// true of element 0 whatever its flag).
fn first_flag(flags: &HeadFlags<'_>) -> bool {
    match flags {
        HeadFlags::Bytes(bytes) => bytes[0] != 0,
        HeadFlags::Bits { words, .. } => words[0] & 1 != 0,
    }
}

/// `(f1, v1) ⊕ (f2, v2)`, in scan order.
fn pair<Op: ScanOp>(
    direction: Direction,
    a: (bool, Op::Element),
    b: (bool, Op::Element),
) -> (bool, Op::Element) {
    let value = match b.0 {
        true => b.1,
        false => cpu::step::<Op>(direction == Direction::Reverse, Some(a.1), b.1),
    };
    (a.0 || b.0, value)
}

/// `partial` behind the scan's initial value `seed` (in scan order: on its
/// left forward, on its right backwards, as the operator keeps memory
/// order), or `partial` where there is none.
pub fn seeded_partial<Op: ScanOp>(
    seed: Option<Op::Element>,
    direction: Direction,
    partial: Op::Element,
) -> Op::Element {
    cpu::step::<Op>(direction == Direction::Reverse, seed, partial)
}

/// Where a rank's shard lies in a segmented scan across ranks
/// ([`segmented_place`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentedPlace<E> {
    /// The partial of the segment that runs into the shard from the shards
    /// before it in scan order (after it in memory, going backwards),
    /// behind the initial value where the scan has one; `None` where the
    /// shard is empty or its boundary element starts a segment.
    pub carry_in: Option<E>,
    /// The shard's elements that segment runs over (in memory): scanned
    /// behind `carry_in`, where the rest are the shard's own segments.
    /// Empty where `carry_in` is `None`.
    pub continued: std::ops::Range<usize>,
    /// The whole sequence's carry-out: its last segment's partial in scan
    /// order (the initial value, or the identity, where every shard is
    /// empty).
    pub total: E,
}

/// Rank `rank`'s place in a segmented scan of `direction` across the ranks
/// whose shards are `shards` (in rank order, `None` for empty ones), the
/// scan's initial value `seed` in front of every segment: the one
/// resolution both backends share. A segment runs from one nonempty shard
/// into the next (in scan order) unless the next one's boundary element
/// starts a segment (its own mark, or keys that differ across the two).
pub fn segmented_place<Op: ScanOp>(
    shards: &[Option<SegmentedShard<Op::Element>>],
    rank: usize,
    seed: Option<Op::Element>,
    direction: Direction,
) -> SegmentedPlace<Op::Element> {
    let order: Vec<usize> = match direction {
        Direction::Forward => (0..shards.len()).collect(),
        Direction::Reverse => (0..shards.len()).rev().collect(),
    };
    let nonempty: Vec<SegmentedShard<Op::Element>> =
        order.iter().filter_map(|&r| shards[r]).collect();
    // Each nonempty shard's boundary (its first element in scan order) is
    // a head where the sequence starts there, or where no segment runs on
    // across it from the shard before it in scan order.
    let boundary_head = |k: usize| -> bool {
        let (this, before) = match k {
            0 => return true,
            _ => (&nonempty[k].edges, &nonempty[k - 1].edges),
        };
        match direction {
            Direction::Forward => !before.runs_into(this),
            // The shard before in scan order is the next one in memory.
            Direction::Reverse => !this.runs_into(before),
        }
    };
    let resolved = |k: usize| nonempty[k].pair(boundary_head(k));
    let total = (0..nonempty.len())
        .map(resolved)
        .reduce(|a, b| pair::<Op>(direction, a, b))
        .map_or(seed.unwrap_or(Op::IDENTITY), |(_, v)| v);
    let mine = shards[rank].and_then(|_| {
        let before = order[..order.iter().position(|&r| r == rank)?]
            .iter()
            .filter(|&&r| shards[r].is_some())
            .count();
        Some(before)
    });
    let Some(k) = mine.filter(|&k| !boundary_head(k)) else {
        return SegmentedPlace {
            carry_in: None,
            continued: 0..0,
            total,
        };
    };
    let carry_in = (0..k)
        .map(resolved)
        .reduce(|a, b| pair::<Op>(direction, a, b))
        .map(|(_, v)| v);
    // The continuation of the segment open at the boundary runs up to the
    // shard's first head in scan order.
    let shard = &nonempty[k];
    let continued = match direction {
        Direction::Forward => 0..shard.first_head.unwrap_or(shard.len),
        Direction::Reverse => shard.last_head.unwrap_or(0)..shard.len,
    };
    SegmentedPlace {
        carry_in,
        continued,
        total,
    }
}

/// The totals of the segments that hold rank `rank`'s first and last
/// elements in memory, each over the whole segment whatever ranks it
/// spans, behind the initial value (as a one-rank scan's per-segment
/// totals): `None` for an empty shard, or where a shard's
/// [`SegmentedShard::lead`] is unknown. What per-segment totals across
/// ranks put in place of the local totals of a shard's two end segments,
/// on both backends.
pub fn segment_edge_totals<Op: ScanOp>(
    shards: &[Option<SegmentedShard<Op::Element>>],
    rank: usize,
    seed: Option<Op::Element>,
    direction: Direction,
) -> Option<(Op::Element, Op::Element)> {
    shards[rank]?;
    let order: Vec<usize> = match direction {
        Direction::Forward => (0..shards.len()).collect(),
        Direction::Reverse => (0..shards.len()).rev().collect(),
    };
    // Scan-order concatenation (going backwards, what comes later in scan
    // order goes on the left).
    let then = |a, b| cpu::step::<Op>(direction == Direction::Reverse, Some(a), b);
    let seeded = |v| seeded_partial::<Op>(seed, direction, v);
    // Walk the nonempty shards in scan order, closing each segment as a
    // head ends it: `totals[id]` is segment `id`'s, and each shard's
    // scan-order first and last elements lie in segments `ids[r]`.
    let mut totals: Vec<Op::Element> = Vec::new();
    let mut ids = vec![(0, 0); shards.len()];
    let mut open: Option<(usize, Op::Element)> = None;
    let mut previous: Option<&SegmentedShard<Op::Element>> = None;
    for &r in &order {
        let Some(shard) = &shards[r] else { continue };
        let boundary_head = match previous {
            None => true,
            Some(before) => match direction {
                Direction::Forward => !before.edges.runs_into(&shard.edges),
                Direction::Reverse => !shard.edges.runs_into(&before.edges),
            },
        };
        let lead = shard.lead?;
        let start = |value: Op::Element, totals: &mut Vec<Op::Element>| {
            totals.push(value);
            totals.len() - 1
        };
        // The segment open before the shard ends at its boundary where that
        // is a head, else runs on into it.
        let first = match open.take() {
            Some((id, value)) if boundary_head => {
                totals[id] = value;
                None
            }
            running => running,
        };
        let interior = shard.first_head.is_some();
        ids[r] = match (first, interior) {
            // A segment runs on into the shard and ends at its first head.
            (Some((id, value)), true) => {
                totals[id] = then(value, lead);
                let last = start(shard.tail, &mut totals);
                open = Some((last, shard.tail));
                (id, last)
            }
            // It runs on through the whole shard.
            (Some((id, value)), false) => {
                open = Some((id, then(value, shard.fold)));
                (id, id)
            }
            // The shard's boundary starts a segment.
            (None, true) => {
                let first = start(seeded(lead), &mut totals);
                let last = start(shard.tail, &mut totals);
                open = Some((last, shard.tail));
                (first, last)
            }
            (None, false) => {
                let id = start(shard.tail, &mut totals);
                open = Some((id, shard.tail));
                (id, id)
            }
        };
        previous = Some(shard);
    }
    if let Some((id, value)) = open {
        totals[id] = value;
    }
    let (first, last) = ids[rank];
    Some(match direction {
        Direction::Forward => (totals[first], totals[last]),
        // Backwards the scan's first element is the shard's last.
        Direction::Reverse => (totals[last], totals[first]),
    })
}

/// The CPU backend's [`SegmentedShard`] of a nonempty shard: `heads(i)`
/// says whether element i (in memory) starts a segment, element 0 aside.
fn cpu_shard<Op: ScanOp>(
    input: &[Op::Element],
    segments: &Segments<'_>,
    seed: Option<Op::Element>,
    direction: Direction,
) -> SegmentedShard<Op::Element> {
    let n = input.len();
    let first_head = (1..n).find(|&i| segments.is_head(i));
    let last_head = (1..n).rev().find(|&i| segments.is_head(i));
    let seeded = |v| seeded_partial::<Op>(seed, direction, v);
    let fold =
        |range: std::ops::Range<usize>| reduce::<Op>(&input[range]).expect("a nonempty range");
    // The open segment at the end in scan order: from the last head
    // forward, up to (not with) the first head backwards.
    let open = match direction {
        Direction::Forward => last_head.unwrap_or(0)..n,
        Direction::Reverse => 0..first_head.unwrap_or(n),
    };
    // The first piece in scan order: up to the first head forward, from
    // the last one backwards.
    let lead = match direction {
        Direction::Forward => 0..first_head.unwrap_or(n),
        Direction::Reverse => last_head.unwrap_or(0)..n,
    };
    let all = fold(0..n);
    let piece = |range: std::ops::Range<usize>| if range.len() == n { all } else { fold(range) };
    SegmentedShard {
        len: n,
        edges: ShardEdges::of(segments),
        first_head,
        last_head,
        tail: seeded(piece(open)),
        fold: all,
        lead: Some(piece(lead)),
    }
}

/// What a rank contributes to a segmented scan's exchange.
#[derive(Clone, Copy)]
struct SegmentedContribution<E> {
    valid: bool,
    shard: Option<SegmentedShard<E>>,
}

/// This rank's share of a segmented scan of the whole sequence, its
/// shard's segments given by `segments` in the shard's own terms: head
/// flags (one per element, non-zero marking the first element of a
/// segment), offsets into the shard (its row pointers: a shard whose
/// offsets do not hold 0 continues the segment open before it), or keys
/// (one per element; a segment runs on across ranks while the keys are
/// equal). The sequence's first element starts a segment whatever its
/// mark; a segment may span any number of ranks. Rows cannot span ranks
/// ([`DistributedError::RowsAcrossRanks`]). `spec` is every rank's, its
/// initial value seeding every segment as in [`segmented::par_scan`]; a
/// carry-out gets the last segment's partial in scan order on every rank.
/// Per-segment totals ([`ScanSpec::segment_totals`],
/// [`ScanSpec::counted_segment_totals`]) get one total for each segment
/// of the shard alone (as [`segment_ranges`]
/// of its segments counts them: the runs from each head, the offsets'
/// windows), each over the whole segment whatever ranks it spans: a
/// segment that runs across ranks has the same total on every rank it
/// touches. On an error (lengths, segments or the totals slot here or on
/// another rank, the exchange) nothing is written on any rank.
pub fn scan_segmented<'a, Op: ScanOp, C: Collective>(
    comm: &C,
    spec: impl IntoScanSpec<
        Op::Element,
        Carry: HostSegmentedCarryOut<Op::Element>,
        Segments = NoSegments,
    >,
    segments: impl Into<Segments<'a>>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), DistributedError> {
    let mut spec = spec.into_spec();
    let segments = segments.into();
    let (inclusive, seed, _) = cpu::plan(&spec);
    let direction = spec.direction;
    let n = input.len();
    let counted = spec.carry_out.counts_segments();
    let valid = LengthMismatch::check(n, output.len())
        .map_err(DistributedError::from)
        .and_then(|()| match segments {
            Segments::Rows { .. } => Err(DistributedError::RowsAcrossRanks),
            _ => Ok(segments.check_len(n)?),
        })
        .and_then(|()| match spec.carry_out.totals() {
            Some(totals) if !counted => {
                let segments = segment_ranges(segments, n).len();
                Ok(SegmentTotalsLength::check(totals.len(), segments)
                    .map_err(SegmentedError::from)?)
            }
            _ => Ok(()),
        });
    let ok = valid.is_ok() && n > 0;
    let all = comm.all_gather(SegmentedContribution {
        valid: valid.is_ok(),
        shard: ok.then(|| cpu_shard::<Op>(input, &segments, seed, direction)),
    })?;
    valid?;
    if let Some(rank) = all.iter().position(|c| !c.valid) {
        return Err(DistributedError::OtherRank { rank });
    }
    let shards: Vec<_> = all.iter().map(|c| c.shard).collect();
    let place = segmented_place::<Op>(&shards, comm.rank(), seed, direction);
    if n > 0 {
        // The continuation of the segment open at the boundary (none where
        // the boundary is a head), then the shard's own segments.
        let continued = place.continued.clone();
        let own = match direction {
            Direction::Forward => continued.end..n,
            Direction::Reverse => {
                0..if continued.is_empty() {
                    n
                } else {
                    continued.start
                }
            }
        };
        let local = ScanSpec::from(seeded(inclusive, place.carry_in)).with_direction(direction);
        cpu::par_scan::<Op>(local, &input[continued.clone()], &mut output[continued])?;
        // The own part's heads in memory order (its first element starts a
        // segment whatever its mark).
        let own_flags: Vec<u8> = own.clone().map(|i| u8::from(segments.is_head(i))).collect();
        let own_spec = ScanSpec::from(spec.kind).with_direction(direction);
        let own_flags = HeadFlags::Bytes(&own_flags);
        segmented::par_scan::<Op>(own_spec, own_flags, &input[own.clone()], &mut output[own])
            .expect("lengths checked");
    }
    if spec.carry_out.totals().is_some() {
        let ranges = segment_ranges(segments, n);
        let edges = segment_edge_totals::<Op>(&shards, comm.rank(), seed, direction);
        let totals = spec
            .carry_out
            .totals_for(ranges.len())
            .expect("the slot checked before the exchange")
            .expect("a totals slot");
        let written = totals.len();
        segment_totals::fill::<Op>(
            seed,
            direction == Direction::Reverse,
            &ranges[..written],
            input,
            totals,
        );
        // The segments that hold the shard's ends may run on across ranks:
        // their totals over the whole segment.
        if let Some((first, last)) = edges {
            for (total, range) in totals.iter_mut().zip(&ranges) {
                if range.end == n && !range.is_empty() {
                    *total = last;
                } else if range.start == 0 && !range.is_empty() {
                    *total = first;
                }
            }
        }
    }
    spec.carry_out.put_carry(place.total);
    Ok(())
}

/// `input`'s total in order, `None` when empty, on all cores (the carry-out
/// of a scan would write an output).
fn reduce<Op: ScanOp>(input: &[Op::Element]) -> Option<Op::Element> {
    use rayon::prelude::*;
    let len = cpu::chunk_len(input.len());
    input
        .par_chunks(len)
        .map(|chunk| chunk.iter().copied().reduce(Op::combine))
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .reduce(Op::combine)
}

/// Ranks as threads of one process: [`SimulatedRanks::new`] gives one
/// [`Collective`] per rank, each to be moved to its own thread (a rank's
/// calls block until every rank has made the same one).
pub struct SimulatedRanks;

impl SimulatedRanks {
    /// A group of `ranks` ranks (at least one).
    #[allow(clippy::new_ret_no_self)]
    pub fn new(ranks: usize) -> Vec<SimulatedRank> {
        assert!(ranks > 0, "a group has a rank at least");
        let shared = Arc::new(Shared {
            slots: Mutex::new((0..ranks).map(|_| None).collect()),
            barrier: Barrier::new(ranks),
        });
        (0..ranks)
            .map(|rank| SimulatedRank {
                rank,
                ranks,
                shared: shared.clone(),
            })
            .collect()
    }
}

/// What a group's ranks share: one slot a rank for the value it gathers,
/// and the barrier every exchange passes twice.
struct Shared {
    slots: Mutex<Vec<Option<Box<dyn Any + Send + Sync>>>>,
    barrier: Barrier,
}

/// One rank of [`SimulatedRanks`].
pub struct SimulatedRank {
    rank: usize,
    ranks: usize,
    shared: Arc<Shared>,
}

impl Collective for SimulatedRank {
    fn ranks(&self) -> usize {
        self.ranks
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn all_gather<T: Copy + Send + Sync + 'static>(
        &self,
        value: T,
    ) -> Result<Vec<T>, CollectiveError> {
        let lock = |what| {
            self.shared.slots.lock().map_err(|_| {
                CollectiveError(format!("a rank panicked during the exchange ({what})"))
            })
        };
        lock("writing")?[self.rank] = Some(Box::new(value));
        // Every rank has written its slot…
        self.shared.barrier.wait();
        let gathered = lock("reading")?
            .iter()
            .map(|slot| slot.as_ref().and_then(|v| v.downcast_ref::<T>()).copied())
            .collect::<Option<Vec<T>>>();
        // …and read them all before any writes again.
        self.shared.barrier.wait();
        gathered
            .ok_or_else(|| CollectiveError("the ranks gathered values of different types".into()))
    }
}
