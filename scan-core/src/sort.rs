//! Radix sort on the CPU, the way the GPU's will sort (issue 48) and its
//! oracle: least-significant digit first, eight bits a pass, each pass a
//! count of digits, an exclusive scan of the counts and a stable scatter,
//! on all cores. Keys are the integers of 8 to 64 bits, signed and
//! unsigned, `f32` and `f64`; a sort is stable (equal keys keep their input
//! order, descending too), may be limited to a range of the keys' bits,
//! and carries values along, gives the permutation (argsort), sorts
//! records by a key function written as a `#[sort_key]` (one primitive, or
//! a tuple of them compared most significant first), or sorts segments
//! independently.
//!
//! Order: integers by value; floats as CUB orders them: -NaN, -∞, …, -0.0
//! and +0.0 (equal keys: CUB reads -0.0 as +0.0, so the two keep their
//! input order), …, +∞, +NaN (a NaN's place follows its sign bit; NaNs of
//! one sign are ordered by their payload). Descending is the reverse
//! order, ties still in input order.
//!
//! ```
//! use gpu_scan::sort::{sort_keys, sort_pairs, SortSpec};
//!
//! let mut keys = [3.5f32, -0.0, 0.0, -2.0, f32::INFINITY];
//! sort_keys(&mut keys, SortSpec::ascending()).unwrap();
//! assert_eq!(keys.map(f32::to_bits), [-2.0f32, -0.0, 0.0, 3.5, f32::INFINITY].map(f32::to_bits));
//!
//! let (mut k, mut v) = ([2u8, 1, 2, 1], ['a', 'b', 'c', 'd']);
//! sort_pairs(&mut k, &mut v, SortSpec::descending()).unwrap();
//! assert_eq!((k, v), ([2, 2, 1, 1], ['a', 'c', 'b', 'd']));
//! ```

use crate::segments::{InvalidOffsets, SegmentOffset};
use crate::select::scatter;
use crate::ScanElement;
use rayon::prelude::*;
use std::ops::Range;

/// A key radix sort takes: its bits in an order whose unsigned comparison
/// is the key's.
pub trait RadixKey: Copy + Send + Sync + 'static {
    /// The key's bits.
    const BITS: u32;
    /// The key's bits, transformed so that unsigned order is key order
    /// (signed integers: the sign bit flipped; floats: -0.0 read as +0.0,
    /// then all bits flipped for a negative sign, else the sign bit set).
    fn ordered_bits(self) -> u64;
}

macro_rules! unsigned_keys {
    ($($t:ty),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = <$t>::BITS;
            fn ordered_bits(self) -> u64 {
                self as u64
            }
        }
    )*};
}
unsigned_keys!(u8, u16, u32, u64);

macro_rules! signed_keys {
    ($($t:ty => $u:ty),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = <$t>::BITS;
            fn ordered_bits(self) -> u64 {
                ((self as $u) ^ (1 << (<$t>::BITS - 1))) as u64
            }
        }
    )*};
}
signed_keys!(i8 => u8, i16 => u16, i32 => u32, i64 => u64);

macro_rules! float_keys {
    ($($t:ty => $bits:literal),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = $bits;
            fn ordered_bits(self) -> u64 {
                let sign = 1 << ($bits - 1);
                // -0.0 sorts as +0.0 (as CUB's digit extractor reads it).
                let bits = if self.to_bits() == sign { 0 } else { self.to_bits() };
                (if bits & sign != 0 { !bits } else { bits | sign }) as u64
            }
        }
    )*};
}
float_keys!(f32 => 32, f64 => 64);

/// A key of one or more [`RadixKey`] components, compared most significant
/// first (lexicographically): a primitive key, or a tuple of two to four
/// of them. Its bits are the components' transformed bits one after
/// another, the first component's highest, so a bit range
/// ([`SortSpec::bits`]) counts from the last component's lowest bit.
pub trait CompositeKey: Copy + Send + Sync + 'static {
    /// The components' widths in bits, most significant first.
    const WIDTHS: &'static [u32];
    /// Component `i`'s transformed bits ([`RadixKey::ordered_bits`]).
    fn component(self, i: usize) -> u64;
}

macro_rules! single_keys {
    ($($t:ty),*) => {$(
        impl CompositeKey for $t {
            const WIDTHS: &'static [u32] = &[<$t as RadixKey>::BITS];
            fn component(self, _: usize) -> u64 {
                self.ordered_bits()
            }
        }
    )*};
}
single_keys!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

macro_rules! tuple_keys {
    ($(($($name:ident $i:tt),+)),*) => {$(
        impl<$($name: RadixKey),+> CompositeKey for ($($name,)+) {
            const WIDTHS: &'static [u32] = &[$($name::BITS),+];
            fn component(self, i: usize) -> u64 {
                match i {
                    $($i => self.$i.ordered_bits(),)+
                    _ => panic!("a key of {} components has no component {i}", Self::WIDTHS.len()),
                }
            }
        }
    )*};
}
tuple_keys!((A 0, B 1), (A 0, B 1, C 2), (A 0, B 1, C 2, D 3));

/// A function from a record to its sort key, written in the operators'
/// subset of Rust (`#[sort_key(record = T, key = K, by = |r| …)]`, `K` a
/// primitive or a tuple of them, the closure giving as many components):
/// what [`sort_by_key`] sorts records by, the CPU running the Rust and the
/// GPU its translation (`CUDA_SOURCE`).
pub trait SortKey: 'static {
    /// What is sorted.
    type Record: ScanElement;
    /// What it is sorted by.
    type Key: CompositeKey;
    /// The key's name in snake case: its CUDA policy struct's name.
    const NAME: &'static str;
    /// The key's part of a CUDA program: the record's declaration and the
    /// policy struct, a function a component (`kernels_gen::stage`).
    const CUDA_SOURCE: &'static str;
    /// The key as text (`kernels_gen::ir_text::print_sort_key`): what a
    /// key built at run time is read from.
    const SORT_KEY_IR: &'static str;

    /// The record's key, as written (with the CUDA side's integer
    /// semantics).
    fn key(record: Self::Record) -> Self::Key;
}

/// Ascending or descending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortOrder {
    /// Smallest first.
    Ascending,
    /// Largest first (ties in input order).
    Descending,
}

/// How to sort: the order, and the range of the keys' bits compared (all
/// of them by default; bits outside it are ignored, so keys equal within
/// it keep their input order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortSpec {
    /// Ascending or descending.
    pub order: SortOrder,
    /// The bits compared, `begin..end` (of the transformed bits), or all.
    pub bits: Option<Range<u32>>,
}

impl SortSpec {
    /// Ascending, all bits.
    pub fn ascending() -> Self {
        SortSpec {
            order: SortOrder::Ascending,
            bits: None,
        }
    }

    /// Descending, all bits.
    pub fn descending() -> Self {
        SortSpec {
            order: SortOrder::Descending,
            bits: None,
        }
    }

    /// This sort comparing only bits `begin..end` of the keys' transformed
    /// bits ([`RadixKey::ordered_bits`]).
    pub fn bits(mut self, bits: Range<u32>) -> Self {
        self.bits = Some(bits);
        self
    }

    /// The bits compared for keys of `key_bits` bits, checked (as the GPU's
    /// sort checks them before it enqueues anything).
    pub fn range_of(&self, key_bits: u32) -> Result<Range<u32>, SortError> {
        let bits = self.bits.clone().unwrap_or(0..key_bits);
        if bits.start > bits.end || bits.end > key_bits {
            return Err(SortError::Bits {
                begin: bits.start,
                end: bits.end,
                key_bits,
            });
        }
        Ok(bits)
    }

    /// The bits compared for keys of `K`, checked.
    fn range<K: RadixKey>(&self) -> Result<Range<u32>, SortError> {
        self.range_of(K::BITS)
    }

    /// The sort bits of transformed bits `ordered`: those of the range,
    /// shifted down, inverted for a descending sort.
    fn sort_bits_of(&self, range: &Range<u32>, ordered: u64) -> u64 {
        let width = range.end - range.start;
        if width == 0 {
            return 0;
        }
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        let bits = (ordered >> range.start) & mask;
        match self.order {
            SortOrder::Ascending => bits,
            SortOrder::Descending => !bits & mask,
        }
    }

    /// `key`'s sort bits ([`SortSpec::sort_bits_of`]).
    fn sort_bits<K: RadixKey>(&self, range: &Range<u32>, key: K) -> u64 {
        self.sort_bits_of(range, key.ordered_bits())
    }
}

/// A sort that cannot run as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SortError {
    /// The bit range is not within the key.
    #[error("bits {begin}..{end} are not a range within the key's {key_bits} bits")]
    Bits {
        /// Its start.
        begin: u32,
        /// Its end.
        end: u32,
        /// The key's bits.
        key_bits: u32,
    },
    /// Keys and values differ in number.
    #[error("{values} values for {keys} keys: a pair sort takes one value per key")]
    Values {
        /// Keys.
        keys: usize,
        /// Values.
        values: usize,
    },
    /// The segments do not cut the keys.
    #[error("segment offsets: {0}")]
    Offsets(#[from] InvalidOffsets),
}

/// The stable order of `bits` (the permutation sorting them), by LSD
/// passes of eight bits over `width` bits.
fn lsd_order(bits: &[u64], width: u32) -> Vec<usize> {
    let mut order: Vec<(u64, usize)> = bits.iter().copied().zip(0..).collect();
    let mut next = order.clone();
    let mut shift = 0;
    while shift < width {
        let digit_mask = (1u64 << (width - shift).min(8)) - 1;
        scatter::<_, 256>(
            &order,
            &mut next,
            |_, (b, _)| ((b >> shift) & digit_mask) as usize,
            [true; 256],
            false,
        );
        std::mem::swap(&mut order, &mut next);
        shift += 8;
    }
    order.into_iter().map(|(_, i)| i).collect()
}

/// The permutation sorting `keys` as `spec` says (`keys[p[0]]` first).
fn permutation<K: RadixKey>(keys: &[K], spec: &SortSpec) -> Result<Vec<usize>, SortError> {
    let range = spec.range::<K>()?;
    let bits: Vec<u64> = keys
        .par_iter()
        .map(|&k| spec.sort_bits(&range, k))
        .collect();
    Ok(lsd_order(&bits, range.end - range.start))
}

/// The permutation sorting composite `keys` as `spec` says: one LSD sort of
/// each component's share of the bit range, the least significant
/// component first, each stable and applied to the order so far, so that
/// the whole is ordered lexicographically (descending: every component
/// descending) with ties in input order.
fn composite_permutation<K: CompositeKey>(
    keys: &[K],
    spec: &SortSpec,
) -> Result<Vec<usize>, SortError> {
    argsort_by_components(K::WIDTHS, keys.len(), |k, i| keys[k].component(i), spec)
}

/// The stable permutation that sorts `n` keys of components `widths` bits
/// wide (most significant first), component `i` of key `k` given as its
/// transformed bits by `component(k, i)` ([`RadixKey::ordered_bits`]), as
/// `spec` says: what [`argsort_by_key`] computes, for keys computed
/// otherwise (a key built at run time: the Python package's).
///
/// ```
/// use gpu_scan::sort::{argsort_by_components, RadixKey, SortSpec};
///
/// // (i8, u32) keys: by the i8, then by the u32.
/// let keys = [(1i8, 5u32), (-1, 9), (1, 2)];
/// let bits = |k: usize, i: usize| if i == 0 { keys[k].0.ordered_bits() } else { keys[k].1.ordered_bits() };
/// let order = argsort_by_components(&[8, 32], keys.len(), bits, &SortSpec::ascending()).unwrap();
/// assert_eq!(order, [1, 2, 0]);
/// ```
pub fn argsort_by_components(
    widths: &[u32],
    n: usize,
    component: impl Fn(usize, usize) -> u64 + Sync,
    spec: &SortSpec,
) -> Result<Vec<usize>, SortError> {
    let total: u32 = widths.iter().sum();
    let range = spec.range_of(total)?;
    let mut order: Vec<usize> = (0..n).collect();
    for (i, share) in component_shares(widths, range) {
        let bits: Vec<u64> = order
            .par_iter()
            .map(|&k| spec.sort_bits_of(&share, component(k, i)))
            .collect();
        let step = lsd_order(&bits, share.end - share.start);
        order = step.into_iter().map(|j| order[j]).collect();
    }
    Ok(order)
}

/// The sorts a composite key of components `widths` bits wide (most
/// significant first) takes over `range` of its bits (counted from the
/// last component's lowest): `(component, its bits in range)`, the least
/// significant component first, those with no bit in range left out. The
/// CPU's sort and the GPU's (`GpuSort::sort_by_key`) both follow it.
///
/// ```
/// use gpu_scan::sort::component_shares;
///
/// // (u8, u32): bits 0..32 are the u32's, 32..40 the u8's.
/// assert_eq!(component_shares(&[8, 32], 4..36), [(1, 4..32), (0, 0..4)]);
/// assert_eq!(component_shares(&[8, 32], 0..16), [(1, 0..16)]);
/// ```
pub fn component_shares(widths: &[u32], range: Range<u32>) -> Vec<(usize, Range<u32>)> {
    let mut shares = Vec::new();
    // Component i covers bits [low, low + width) of the whole key.
    let mut low = 0;
    for i in (0..widths.len()).rev() {
        let width = widths[i];
        let (from, to) = (range.start.max(low), range.end.min(low + width));
        if from < to {
            shares.push((i, (from - low)..(to - low)));
        }
        low += width;
    }
    shares
}

/// `items` rearranged: `items[p[i]]` to position i.
fn gather<T: Copy + Send + Sync>(items: &mut [T], p: &[usize]) {
    let taken: Vec<T> = p.par_iter().map(|&i| items[i]).collect();
    items.copy_from_slice(&taken);
}

/// Sorts `keys` as `spec` says. On an error nothing is moved.
pub fn sort_keys<K: RadixKey>(keys: &mut [K], spec: SortSpec) -> Result<(), SortError> {
    let p = permutation(keys, &spec)?;
    gather(keys, &p);
    Ok(())
}

/// One value per key, or the error saying otherwise.
fn one_value_per_key(keys: usize, values: usize) -> Result<(), SortError> {
    if keys == values {
        Ok(())
    } else {
        Err(SortError::Values { keys, values })
    }
}

/// Sorts `keys` and moves `values` with them (the value at a key's input
/// position goes where the key goes). On an error nothing is moved.
pub fn sort_pairs<K: RadixKey, V: Copy + Send + Sync>(
    keys: &mut [K],
    values: &mut [V],
    spec: SortSpec,
) -> Result<(), SortError> {
    one_value_per_key(keys.len(), values.len())?;
    let p = permutation(keys, &spec)?;
    gather(keys, &p);
    gather(values, &p);
    Ok(())
}

/// The permutation that sorts `keys` (argsort): position i of the sorted
/// sequence holds `keys[result[i]]`.
pub fn argsort<K: RadixKey>(keys: &[K], spec: SortSpec) -> Result<Vec<usize>, SortError> {
    permutation(keys, &spec)
}

/// Sorts records by the key a `#[sort_key]` computes from each (a field, a
/// value computed from several, or a tuple of them compared most
/// significant first), moving whole records; stable. On an error nothing
/// is moved.
///
/// ```
/// use gpu_scan::prelude::*;
/// use gpu_scan::sort::{sort_by_key, SortSpec};
///
/// #[scan_op]
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Task { priority: i32, deadline: f32, id: u32 }
///
/// // By priority, then by deadline.
/// #[sort_key(record = Task, key = (i32, f32), by = |t| (t.priority, t.deadline))]
/// struct Urgency;
///
/// let mut tasks = [
///     Task { priority: 2, deadline: 9.0, id: 0 },
///     Task { priority: -1, deadline: 1.0, id: 1 },
///     Task { priority: 2, deadline: 3.5, id: 2 },
/// ];
/// sort_by_key::<Urgency>(&mut tasks, SortSpec::descending()).unwrap();
/// assert_eq!(tasks.map(|t| t.id), [0, 2, 1]);
/// ```
pub fn sort_by_key<K: SortKey>(records: &mut [K::Record], spec: SortSpec) -> Result<(), SortError> {
    let keys: Vec<K::Key> = records.par_iter().map(|&r| K::key(r)).collect();
    let p = composite_permutation(&keys, &spec)?;
    gather(records, &p);
    Ok(())
}

/// The permutation that sorts `records` by the key `K` computes from each
/// ([`sort_by_key`]'s order): position i of the sorted sequence holds
/// `records[result[i]]`.
pub fn argsort_by_key<K: SortKey>(
    records: &[K::Record],
    spec: SortSpec,
) -> Result<Vec<usize>, SortError> {
    let keys: Vec<K::Key> = records.par_iter().map(|&r| K::key(r)).collect();
    composite_permutation(&keys, &spec)
}

/// The segments `offsets` cut from `items`, back to back
/// (`items[offsets[s]..offsets[s + 1]]`), after the offsets are checked.
fn segments_of<'a, T, O: SegmentOffset>(items: &'a mut [T], offsets: &[O]) -> Vec<&'a mut [T]> {
    let mut segments = Vec::with_capacity(offsets.len().saturating_sub(1));
    let mut at = offsets.first().map_or(0, |o| o.to_u64() as usize);
    let mut rest = &mut items[at..];
    for end in offsets.iter().skip(1).map(|o| o.to_u64() as usize) {
        let (segment, tail) = rest.split_at_mut(end - at);
        segments.push(segment);
        rest = tail;
        at = end;
    }
    segments
}

/// Sorts each segment `keys[offsets[s]..offsets[s + 1]]` on its own, by
/// the same radix passes, segments in parallel (CUB's
/// `DeviceSegmentedSort::StableSortKeys`; CUB takes separate begin and end
/// offsets, which may leave gaps between segments: here segments are back
/// to back, and keys before the first offset or after the last stay where
/// they are). On an error nothing is moved.
pub fn segmented_sort_keys<K: RadixKey, O: SegmentOffset>(
    keys: &mut [K],
    offsets: &[O],
    spec: SortSpec,
) -> Result<(), SortError> {
    InvalidOffsets::check(offsets, keys.len())?;
    spec.range::<K>()?;
    segments_of(keys, offsets)
        .into_par_iter()
        .for_each(|segment| sort_keys(segment, spec.clone()).expect("the range was checked"));
    Ok(())
}

/// [`segmented_sort_keys`] moving `values` with the keys.
pub fn segmented_sort_pairs<K: RadixKey, V: Copy + Send + Sync, O: SegmentOffset>(
    keys: &mut [K],
    values: &mut [V],
    offsets: &[O],
    spec: SortSpec,
) -> Result<(), SortError> {
    one_value_per_key(keys.len(), values.len())?;
    InvalidOffsets::check(offsets, keys.len())?;
    spec.range::<K>()?;
    segments_of(keys, offsets)
        .into_par_iter()
        .zip(segments_of(values, offsets))
        .for_each(|(k, v)| {
            sort_pairs(k, v, spec.clone()).expect("the range and lengths were checked")
        });
    Ok(())
}
