//! Compaction, partition and runs on the CPU, on all cores: what the GPU's
//! select, partition, unique, run-length encoding and reduce-by-key
//! compute, and their oracle. Every function is stable: the
//! elements of each part keep their input order (the rejected part of a
//! partition may instead be reversed, as CUB's `DevicePartition::If` writes
//! it). Output slices are as long as the input; a selection writes its
//! first `count` elements and leaves the rest as they were.
//!
//! ```
//! use gpu_scan::prelude::*;
//! use gpu_scan::select::{partition_if, select_if, Rejected};
//!
//! #[scan_predicate(element = u32, keep = |x| x % 3 == 0)]
//! struct Third;
//!
//! let input = [1, 3, 4, 6, 9, 10];
//! let mut out = [0; 6];
//! assert_eq!(select_if::<Third>(&input, &mut out).unwrap(), 3);
//! assert_eq!(out, [3, 6, 9, 0, 0, 0]);
//! assert_eq!(partition_if::<Third>(&input, &mut out, Rejected::Reversed).unwrap(), 3);
//! assert_eq!(out, [3, 6, 9, 10, 4, 1]);
//! ```

use crate::cpu::chunk_len;
use crate::segments::{InvalidOffsets, SegmentOffset};
use crate::stages::{ScanEquality, ScanPredicate};
use crate::ScanOp;
use rayon::prelude::*;

/// Slices that do not fit a selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectLengthError {
    /// The output is not as long as the input.
    #[error("the output has {output} elements but the input has {input}: a selection needs room for every element")]
    Output {
        /// Input length.
        input: usize,
        /// Output length.
        output: usize,
    },
    /// There is not one flag per element.
    #[error("{flags} flags for {input} elements: a selection by flags takes one byte per element")]
    Flags {
        /// Input length.
        input: usize,
        /// Flags given.
        flags: usize,
    },
    /// The segment offsets do not cut the values.
    #[error("segment offsets: {0}")]
    Offsets(#[from] InvalidOffsets),
    /// There is not one total per segment.
    #[error("{totals} totals for {segments} segments: reduce-by-segment writes one per segment")]
    Totals {
        /// Segments the offsets give.
        segments: usize,
        /// Totals given.
        totals: usize,
    },
    /// There is not one value per key.
    #[error("{values} values for {keys} keys: reduce-by-key takes one value per key")]
    Values {
        /// Keys given.
        keys: usize,
        /// Values given.
        values: usize,
    },
}

/// Where a partition puts the elements its predicate rejects, after the
/// selected ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejected {
    /// In input order.
    InOrder,
    /// In reverse input order, from the end of the output backwards (CUB's
    /// `DevicePartition::If`).
    Reversed,
}

fn check(input: usize, output: usize) -> Result<(), SelectLengthError> {
    if input == output {
        Ok(())
    } else {
        Err(SelectLengthError::Output { input, output })
    }
}

/// Writes the elements of `input` that `P` keeps to the front of `output`,
/// in order; returns how many. `output[count..]` is left as it was.
pub fn select_if<P: ScanPredicate>(
    input: &[P::Element],
    output: &mut [P::Element],
) -> Result<usize, SelectLengthError> {
    select_if_with(input, output, P::keep)
}

/// [`select_if`] by a predicate given as a function (one built at run
/// time: the Python package's).
pub fn select_if_with<T: Copy + Send + Sync>(
    input: &[T],
    output: &mut [T],
    keep: impl Fn(T) -> bool + Sync,
) -> Result<usize, SelectLengthError> {
    check(input.len(), output.len())?;
    let [kept, _] = scatter(
        input,
        output,
        |_, x| usize::from(!keep(x)),
        [true, false],
        false,
    );
    Ok(kept)
}

/// Writes the elements of `input` whose flag is not 0 to the front of
/// `output`, in order; returns how many. `output[count..]` is left as it
/// was.
pub fn select_flagged<T: Copy + Send + Sync>(
    input: &[T],
    flags: &[u8],
    output: &mut [T],
) -> Result<usize, SelectLengthError> {
    if flags.len() != input.len() {
        return Err(SelectLengthError::Flags {
            input: input.len(),
            flags: flags.len(),
        });
    }
    check(input.len(), output.len())?;
    let [kept, _] = scatter(
        input,
        output,
        |i, _| usize::from(flags[i] == 0),
        [true, false],
        false,
    );
    Ok(kept)
}

/// Writes the elements `P` keeps to the front of `output`, in order, and
/// the others after them (`rejected` says in which order); returns how
/// many were kept.
pub fn partition_if<P: ScanPredicate>(
    input: &[P::Element],
    output: &mut [P::Element],
    rejected: Rejected,
) -> Result<usize, SelectLengthError> {
    partition_if_with(input, output, rejected, P::keep)
}

/// [`partition_if`] by a predicate given as a function.
pub fn partition_if_with<T: Copy + Send + Sync>(
    input: &[T],
    output: &mut [T],
    rejected: Rejected,
    keep: impl Fn(T) -> bool + Sync,
) -> Result<usize, SelectLengthError> {
    check(input.len(), output.len())?;
    let reversed = rejected == Rejected::Reversed;
    let [kept, _] = scatter(
        input,
        output,
        |_, x| usize::from(!keep(x)),
        [true, true],
        reversed,
    );
    Ok(kept)
}

/// A three-way partition: the elements `First` keeps, then of the others
/// those `Second` keeps, then the rest, each part in input order, in one
/// output (CUB's three-way `DevicePartition::If` writes the first two parts
/// to one output and the rest to another); returns the first two parts'
/// lengths.
pub fn partition_three<First, Second>(
    input: &[First::Element],
    output: &mut [First::Element],
) -> Result<(usize, usize), SelectLengthError>
where
    First: ScanPredicate,
    Second: ScanPredicate<Element = First::Element>,
{
    partition_three_with(input, output, First::keep, Second::keep)
}

/// [`partition_three`] by predicates given as functions.
pub fn partition_three_with<T: Copy + Send + Sync>(
    input: &[T],
    output: &mut [T],
    first: impl Fn(T) -> bool + Sync,
    second: impl Fn(T) -> bool + Sync,
) -> Result<(usize, usize), SelectLengthError> {
    check(input.len(), output.len())?;
    let class = |_, x| {
        if first(x) {
            0
        } else if second(x) {
            1
        } else {
            2
        }
    };
    let [first, second, _] = scatter(input, output, class, [true; 3], false);
    Ok((first, second))
}

/// Puts the elements of `input` into `K` consecutive parts of `output` by
/// `class` of their index and value (0 to K-1), each part in input order (the last one reversed
/// with `reverse_last`), writing only the parts `write` names; returns
/// the parts' lengths. Two passes over chunks on all cores: count, then
/// write each chunk's elements to its own disjoint ranges.
pub(crate) fn scatter<T: Copy + Send + Sync, const K: usize>(
    input: &[T],
    output: &mut [T],
    class: impl Fn(usize, T) -> usize + Sync,
    write: [bool; K],
    reverse_last: bool,
) -> [usize; K] {
    let n = input.len();
    let len = chunk_len(n);
    let counts: Vec<[usize; K]> = input
        .par_chunks(len)
        .enumerate()
        .map(|(j, chunk)| {
            let mut c = [0; K];
            for (i, &x) in chunk.iter().enumerate() {
                c[class(j * len + i, x)] += 1;
            }
            c
        })
        .collect();
    let mut totals = [0; K];
    for c in &counts {
        for k in 0..K {
            totals[k] += c[k];
        }
    }
    // Each chunk's range in each part: (start, len), in output positions.
    let mut starts = [0; K];
    for k in 1..K {
        starts[k] = starts[k - 1] + totals[k - 1];
    }
    let mut ranges: Vec<(usize, usize, usize, usize)> = Vec::new(); // (start, len, chunk, class)
    let mut before = [0; K];
    for (chunk, c) in counts.iter().enumerate() {
        for k in 0..K {
            if write[k] && c[k] > 0 {
                let start = if reverse_last && k == K - 1 {
                    n - before[k] - c[k]
                } else {
                    starts[k] + before[k]
                };
                ranges.push((start, c[k], chunk, k));
            }
            before[k] += c[k];
        }
    }
    ranges.sort_unstable_by_key(|r| r.0);
    let mut slices: Vec<Vec<Option<&mut [T]>>> = (0..counts.len())
        .map(|_| (0..K).map(|_| None).collect())
        .collect();
    let mut rest = output;
    let mut at = 0;
    for (start, len, chunk, k) in ranges {
        let (_, tail) = rest.split_at_mut(start - at);
        let (slice, tail) = tail.split_at_mut(len);
        slices[chunk][k] = Some(slice);
        rest = tail;
        at = start + len;
    }
    input
        .par_chunks(len)
        .zip(slices.into_par_iter())
        .enumerate()
        .for_each(|(j, (chunk, mut parts))| {
            let mut next = [0; K];
            for (i, &x) in chunk.iter().enumerate() {
                let k = class(j * len + i, x);
                if let Some(part) = parts[k].as_deref_mut() {
                    let i = if reverse_last && k == K - 1 {
                        part.len() - 1 - next[k]
                    } else {
                        next[k]
                    };
                    part[i] = x;
                }
                next[k] += 1;
            }
        });
    totals
}

/// The indices where a run of neighbours `E` finds equal starts (0 first,
/// where the input is not empty), in order.
fn run_heads<T: Copy + Send + Sync>(
    input: &[T],
    equal: impl Fn(T, T) -> bool + Sync,
) -> Vec<usize> {
    (0..input.len())
        .into_par_iter()
        .filter(|&i| i == 0 || !equal(input[i - 1], input[i]))
        .collect()
}

/// Writes the first element of each run of neighbours `E` finds equal to
/// the front of `output`, in order (CUB's `DeviceSelect::Unique`); returns
/// how many. `output[count..]` is left as it was.
///
/// ```
/// use gpu_scan::prelude::*;
/// use gpu_scan::select::unique;
///
/// #[scan_equality(element = u32, eq = |a, b| a == b)]
/// struct Same;
///
/// let mut out = [0; 7];
/// assert_eq!(unique::<Same>(&[1, 1, 2, 2, 2, 1, 3], &mut out).unwrap(), 4);
/// assert_eq!(out[..4], [1, 2, 1, 3]);
/// ```
pub fn unique<E: ScanEquality>(
    input: &[E::Element],
    output: &mut [E::Element],
) -> Result<usize, SelectLengthError> {
    unique_with(input, output, E::equal)
}

/// [`unique`] by an equality given as a function.
pub fn unique_with<T: Copy + Send + Sync>(
    input: &[T],
    output: &mut [T],
    equal: impl Fn(T, T) -> bool + Sync,
) -> Result<usize, SelectLengthError> {
    check(input.len(), output.len())?;
    let [kept, _] = scatter(
        input,
        output,
        |i, x| usize::from(i > 0 && equal(input[i - 1], x)),
        [true, false],
        false,
    );
    Ok(kept)
}

/// Run-length encoding: for each run of neighbours `E` finds equal, its
/// first element in `values` and its length in `lengths`, in order
/// (CUB's `DeviceRunLengthEncode::Encode`); returns the number of runs.
/// Both outputs are as long as the input; entries past the count are left
/// as they were.
///
/// ```
/// use gpu_scan::prelude::*;
/// use gpu_scan::select::run_length_encode;
///
/// #[scan_equality(element = u8, eq = |a, b| a == b)]
/// struct Same;
///
/// let (mut values, mut lengths) = ([0u8; 6], [0u64; 6]);
/// let runs = run_length_encode::<Same>(b"aaabcc", &mut values, &mut lengths).unwrap();
/// assert_eq!((&values[..runs], &lengths[..runs]), (&b"abc"[..], &[3, 1, 2][..]));
/// ```
pub fn run_length_encode<E: ScanEquality>(
    input: &[E::Element],
    values: &mut [E::Element],
    lengths: &mut [u64],
) -> Result<usize, SelectLengthError> {
    run_length_encode_with(input, values, lengths, E::equal)
}

/// [`run_length_encode`] by an equality given as a function.
pub fn run_length_encode_with<T: Copy + Send + Sync>(
    input: &[T],
    values: &mut [T],
    lengths: &mut [u64],
    equal: impl Fn(T, T) -> bool + Sync,
) -> Result<usize, SelectLengthError> {
    check(input.len(), values.len())?;
    check(input.len(), lengths.len())?;
    let heads = run_heads(input, equal);
    let runs = heads.len();
    values[..runs]
        .par_iter_mut()
        .zip(lengths[..runs].par_iter_mut())
        .enumerate()
        .for_each(|(r, (value, length))| {
            let end = heads.get(r + 1).copied().unwrap_or(input.len());
            *value = input[heads[r]];
            *length = (end - heads[r]) as u64;
        });
    Ok(runs)
}

/// The runs of two or more neighbours `E` finds equal: each one's offset
/// in `offsets` and length in `lengths`, in order (CUB's
/// `DeviceRunLengthEncode::NonTrivialRuns`); returns their number. Both
/// outputs are as long as the input; entries past the count are left as
/// they were.
///
/// ```
/// use gpu_scan::prelude::*;
/// use gpu_scan::select::non_trivial_runs;
///
/// #[scan_equality(element = u8, eq = |a, b| a == b)]
/// struct Same;
///
/// let (mut offsets, mut lengths) = ([0u64; 7], [0u64; 7]);
/// let runs = non_trivial_runs::<Same>(b"aabcccd", &mut offsets, &mut lengths).unwrap();
/// assert_eq!((&offsets[..runs], &lengths[..runs]), (&[0, 3][..], &[2, 3][..]));
/// ```
pub fn non_trivial_runs<E: ScanEquality>(
    input: &[E::Element],
    offsets: &mut [u64],
    lengths: &mut [u64],
) -> Result<usize, SelectLengthError> {
    non_trivial_runs_with(input, offsets, lengths, E::equal)
}

/// [`non_trivial_runs`] by an equality given as a function.
pub fn non_trivial_runs_with<T: Copy + Send + Sync>(
    input: &[T],
    offsets: &mut [u64],
    lengths: &mut [u64],
    equal: impl Fn(T, T) -> bool + Sync,
) -> Result<usize, SelectLengthError> {
    check(input.len(), offsets.len())?;
    check(input.len(), lengths.len())?;
    let heads = run_heads(input, equal);
    let runs: Vec<(u64, u64)> = heads
        .par_iter()
        .enumerate()
        .filter_map(|(r, &start)| {
            let end = heads.get(r + 1).copied().unwrap_or(input.len());
            (end - start > 1).then_some((start as u64, (end - start) as u64))
        })
        .collect();
    for (r, &(offset, length)) in runs.iter().enumerate() {
        offsets[r] = offset;
        lengths[r] = length;
    }
    Ok(runs.len())
}

/// Reduce by key: for each run of keys `E` finds equal, its first key in
/// `keys_out` and the combination by `Op` of its values, in order, in
/// `values_out` (CUB's `DeviceReduce::ReduceByKey`; `Op` need not be
/// commutative); returns the number of runs. Values are combined left to
/// right; a GPU groups them differently (never reorders them), so float
/// results agree within rounding and integers exactly. The outputs are as long as
/// the keys; entries past the count are left as they were.
///
/// ```
/// use gpu_scan::ops::Sum;
/// use gpu_scan::prelude::*;
/// use gpu_scan::select::reduce_by_key;
///
/// #[scan_equality(element = u32, eq = |a, b| a == b)]
/// struct Same;
///
/// let (mut keys, mut sums) = ([0u32; 5], [0u32; 5]);
/// let runs = reduce_by_key::<Same, Sum<u32>>(&[7, 7, 3, 7, 7], &[1, 2, 3, 4, 5], &mut keys, &mut sums).unwrap();
/// assert_eq!((&keys[..runs], &sums[..runs]), (&[7, 3, 7][..], &[3, 3, 9][..]));
/// ```
pub fn reduce_by_key<E: ScanEquality, Op: ScanOp>(
    keys: &[E::Element],
    values: &[Op::Element],
    keys_out: &mut [E::Element],
    values_out: &mut [Op::Element],
) -> Result<usize, SelectLengthError> {
    reduce_by_key_with(keys, values, keys_out, values_out, E::equal, Op::combine)
}

/// [`reduce_by_key`] by an equality and an operator given as functions.
pub fn reduce_by_key_with<K: Copy + Send + Sync, V: Copy + Send + Sync>(
    keys: &[K],
    values: &[V],
    keys_out: &mut [K],
    values_out: &mut [V],
    equal: impl Fn(K, K) -> bool + Sync,
    combine: impl Fn(V, V) -> V + Sync,
) -> Result<usize, SelectLengthError> {
    if keys.len() != values.len() {
        return Err(SelectLengthError::Values {
            keys: keys.len(),
            values: values.len(),
        });
    }
    check(keys.len(), keys_out.len())?;
    check(keys.len(), values_out.len())?;
    let heads = run_heads(keys, equal);
    let runs = heads.len();
    keys_out[..runs]
        .par_iter_mut()
        .zip(values_out[..runs].par_iter_mut())
        .enumerate()
        .for_each(|(r, (key, total))| {
            let end = heads.get(r + 1).copied().unwrap_or(keys.len());
            *key = keys[heads[r]];
            *total = values[heads[r] + 1..end]
                .iter()
                .fold(values[heads[r]], |acc, &v| combine(acc, v));
        });
    Ok(runs)
}

/// Reduce by segment: for each segment `values[offsets[s]..offsets[s + 1]]`,
/// the combination by `Op` of its values, in order, in `totals[s]`, the
/// identity for an empty one (CUB's `DeviceSegmentedReduce::Reduce`; `Op`
/// need not be commutative). Segments run in parallel; values before the
/// first offset or after the last belong to none. On an error nothing is
/// written.
///
/// ```
/// use gpu_scan::ops::Sum;
/// use gpu_scan::select::reduce_by_segment;
///
/// // Rows [1 2 3] [] [4 5] of a CSR matrix.
/// let mut sums = [0u32; 3];
/// reduce_by_segment::<Sum<u32>, u32>(&[1, 2, 3, 4, 5], &[0, 3, 3, 5], &mut sums).unwrap();
/// assert_eq!(sums, [6, 0, 9]);
/// ```
pub fn reduce_by_segment<Op: ScanOp, O: SegmentOffset>(
    values: &[Op::Element],
    offsets: &[O],
    totals: &mut [Op::Element],
) -> Result<(), SelectLengthError> {
    InvalidOffsets::check(offsets, values.len())?;
    let segments = offsets.len().saturating_sub(1);
    if totals.len() != segments {
        return Err(SelectLengthError::Totals {
            segments,
            totals: totals.len(),
        });
    }
    totals.par_iter_mut().enumerate().for_each(|(s, total)| {
        let (start, end) = (
            offsets[s].to_u64() as usize,
            offsets[s + 1].to_u64() as usize,
        );
        // From the first value (as reduce_by_key), the identity for none.
        *total = match values[start..end] {
            [] => Op::IDENTITY,
            [first, ref rest @ ..] => rest.iter().fold(first, |acc, &v| Op::combine(acc, v)),
        };
    });
    Ok(())
}
