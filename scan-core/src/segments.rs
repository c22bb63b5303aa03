//! How a host sequence is cut into segments ([`Segments`]: head flags,
//! rows, offsets, keys) and the errors of segments that do not fit it: the
//! vocabulary of the segmented scans ([`segmented`](crate::segmented)),
//! their per-segment totals and the specs that carry them.

use crate::lengths::LengthMismatch;
use scan_types::FlagFormat;

/// Segment heads of a host sequence, borrowed.
///
/// Packed bits carry the number of elements they describe: the words of 33
/// elements and of 40 look alike, and flags built for one sequence must not
/// be taken for another's.
#[derive(Clone, Copy, Debug)]
pub enum HeadFlags<'a> {
    /// One byte per element; non-zero marks a head.
    Bytes(&'a [u8]),
    /// Bits packed into `u32` words (see [`FlagFormat::Bits`]).
    Bits {
        /// `ceil(len / 32)` words; bits past `len` are ignored.
        words: &'a [u32],
        /// The number of elements the flags describe.
        len: usize,
    },
}

impl<'a> HeadFlags<'a> {
    /// Packed flags for `len` elements.
    pub fn bits(words: &'a [u32], len: usize) -> Self {
        HeadFlags::Bits { words, len }
    }

    /// The storage format.
    pub fn format(&self) -> FlagFormat {
        match self {
            HeadFlags::Bytes(_) => FlagFormat::Bytes,
            HeadFlags::Bits { .. } => FlagFormat::Bits,
        }
    }

    /// Storage units given (bytes or words).
    pub fn units(&self) -> usize {
        match self {
            HeadFlags::Bytes(b) => b.len(),
            HeadFlags::Bits { words, .. } => words.len(),
        }
    }

    /// The number of elements the flags describe.
    pub fn len(&self) -> usize {
        match self {
            HeadFlags::Bytes(b) => b.len(),
            HeadFlags::Bits { len, .. } => *len,
        }
    }

    /// Whether the flags describe no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether element `i` starts a segment (element 0 always does).
    /// Panics if `i` is past the flags.
    pub fn is_head(&self, i: usize) -> bool {
        assert!(
            i < self.len(),
            "element {i} is past the flags' {}",
            self.len()
        );
        i == 0
            || match self {
                HeadFlags::Bytes(b) => b[i] != 0,
                HeadFlags::Bits { words, .. } => (words[i / 32] >> (i % 32)) & 1 != 0,
            }
    }

    /// Checks that the flags are well formed and describe exactly `n`
    /// elements.
    pub fn check_len(&self, n: usize) -> Result<(), FlagsLengthMismatch> {
        FlagsLengthMismatch::check(self.format(), n, self.len(), self.units())
    }
}

/// How a segmented scan's sequence is cut into segments: head flags (a
/// [`HeadFlags`] converts into this), or rows of a fixed length.
///
/// ```
/// use gpu_scan::prelude::*;
/// use gpu_scan::segmented::{self, Segments};
///
/// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
/// struct Sum;
///
/// // A 2 × 3 matrix, row-major, scanned along its rows.
/// let mut out = vec![0; 6];
/// segmented::scan::<Sum>(ScanKind::Inclusive, Segments::rows(3), &[1, 2, 3, 4, 5, 6], &mut out).unwrap();
/// assert_eq!(out, [1, 3, 6, 4, 9, 15]);
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Segments<'a> {
    /// Heads given as flags.
    Flags(HeadFlags<'a>),
    /// Segments of `row_length` elements each: element `i` starts one where
    /// `i % row_length == 0`. The sequence's length must be a multiple of
    /// `row_length`, which must not be 0.
    Rows {
        /// Elements per row.
        row_length: usize,
    },
    /// Segments starting at these offsets (CSR row pointers): element
    /// `offsets[r]` starts one. Offsets must not decrease and must be at
    /// most the sequence's length; one equal to it (the closing entry,
    /// trailing empty segments) starts nothing, repeated offsets (empty
    /// segments) mark one head, and element 0 always starts a segment.
    Offsets(SegmentOffsets<'a>),
    /// One key per element: element `i` starts a segment where its key
    /// differs from element `i - 1`'s (a scan by key). There must be one
    /// key per element.
    Keys(SegmentKeys<'a>),
}

/// One key per element, of any [`SegmentKey`] type, borrowed
/// ([`Segments::Keys`]): element `i` starts a segment where its key
/// differs, bit for bit, from element `i - 1`'s.
#[derive(Clone, Copy, Debug)]
pub struct SegmentKeys<'a> {
    bytes: &'a [u8],
    width: usize,
}

impl<'a> SegmentKeys<'a> {
    /// The keys `keys`.
    pub fn new<K: SegmentKey>(keys: &'a [K]) -> Self {
        // SAFETY: a SegmentKey is plain data without padding, so every byte
        // of the slice is initialised; the new slice covers the same bytes
        // for the same lifetime.
        let bytes = unsafe {
            std::slice::from_raw_parts(keys.as_ptr().cast::<u8>(), std::mem::size_of_val(keys))
        };
        SegmentKeys {
            bytes,
            width: std::mem::size_of::<K>(),
        }
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.width
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The size of one key in bytes: 1, 2, 4 or 8.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The keys' bytes, in memory order.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether element `i`'s key differs from element `i - 1`'s (element 0
    /// always starts a segment).
    fn is_head(&self, i: usize) -> bool {
        let w = self.width;
        i == 0 || self.bytes[i * w..(i + 1) * w] != self.bytes[(i - 1) * w..i * w]
    }

    fn check(&self, n: usize) -> Result<(), KeysLengthMismatch> {
        KeysLengthMismatch::check(self.len(), n)
    }
}

impl<'a, K: SegmentKey> From<&'a [K]> for SegmentKeys<'a> {
    fn from(keys: &'a [K]) -> Self {
        SegmentKeys::new(keys)
    }
}

impl<'a, K: SegmentKey> From<&'a Vec<K>> for SegmentKeys<'a> {
    fn from(keys: &'a Vec<K>) -> Self {
        SegmentKeys::new(keys)
    }
}

/// Segment keys of another number than the sequence's elements: a scan by
/// key takes one key per element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{keys} segment keys for a sequence of {elements} elements: a scan by key takes one key per element")]
pub struct KeysLengthMismatch {
    /// Keys given.
    pub keys: usize,
    /// Elements in the sequence.
    pub elements: usize,
}

impl KeysLengthMismatch {
    /// `Ok` when `keys` keys fit a sequence of `elements`: one per element.
    pub fn check(keys: usize, elements: usize) -> Result<(), Self> {
        if keys == elements {
            Ok(())
        } else {
            Err(KeysLengthMismatch { keys, elements })
        }
    }
}

/// Segment start offsets of either width ([`Segments::Offsets`]).
#[derive(Clone, Copy, Debug)]
pub enum SegmentOffsets<'a> {
    /// `u32` offsets.
    U32(&'a [u32]),
    /// `u64` offsets.
    U64(&'a [u64]),
}

impl<'a> From<&'a [u32]> for SegmentOffsets<'a> {
    fn from(offsets: &'a [u32]) -> Self {
        SegmentOffsets::U32(offsets)
    }
}

impl<'a> From<&'a [u64]> for SegmentOffsets<'a> {
    fn from(offsets: &'a [u64]) -> Self {
        SegmentOffsets::U64(offsets)
    }
}

impl SegmentOffsets<'_> {
    /// Whether some offset equals `i` (a binary search).
    pub(crate) fn contains(&self, i: usize) -> bool {
        fn find<O: SegmentOffset>(offsets: &[O], i: u64) -> bool {
            let r = offsets.partition_point(|o| o.to_u64() < i);
            r < offsets.len() && offsets[r].to_u64() == i
        }
        match self {
            SegmentOffsets::U32(o) => find(o, i as u64),
            SegmentOffsets::U64(o) => find(o, i as u64),
        }
    }

    fn check(&self, n: usize) -> Result<(), InvalidOffsets> {
        match self {
            SegmentOffsets::U32(o) => InvalidOffsets::check(o, n),
            SegmentOffsets::U64(o) => InvalidOffsets::check(o, n),
        }
    }
}

impl<'a> Segments<'a> {
    /// Rows of `row_length` elements each ([`Segments::Rows`]).
    pub fn rows(row_length: usize) -> Self {
        Segments::Rows { row_length }
    }

    /// Segments starting at `offsets` ([`Segments::Offsets`]): a `&[u32]`
    /// or a `&[u64]`.
    ///
    /// ```
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::segmented::{self, Segments};
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// // Row pointers of three rows of 2, 0 and 3 elements.
    /// let row_ptr: &[u32] = &[0, 2, 2, 5];
    /// let mut out = vec![0; 5];
    /// segmented::scan::<Sum>(ScanKind::Inclusive, Segments::offsets(row_ptr), &[1, 2, 3, 4, 5], &mut out).unwrap();
    /// assert_eq!(out, [1, 3, 3, 7, 12]);
    /// ```
    pub fn offsets(offsets: impl Into<SegmentOffsets<'a>>) -> Self {
        Segments::Offsets(offsets.into())
    }

    /// Segments of equal consecutive keys ([`Segments::Keys`]): a slice of
    /// any [`SegmentKey`] type, one key per element.
    ///
    /// ```
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::segmented::{self, Segments};
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// // Keys 7 7 2 2 2 7: segments [1 2] [3 4 5] [6].
    /// let keys: &[i32] = &[7, 7, 2, 2, 2, 7];
    /// let mut out = vec![0; 6];
    /// segmented::scan::<Sum>(ScanKind::Inclusive, Segments::keys(keys), &[1, 2, 3, 4, 5, 6], &mut out).unwrap();
    /// assert_eq!(out, [1, 3, 3, 7, 12, 6]);
    /// ```
    pub fn keys(keys: impl Into<SegmentKeys<'a>>) -> Self {
        Segments::Keys(keys.into())
    }

    /// Whether element `i` of a checked sequence starts a segment (element
    /// 0 always does).
    pub fn is_head(&self, i: usize) -> bool {
        match self {
            Segments::Flags(heads) => heads.is_head(i),
            Segments::Rows { row_length } => i % row_length == 0,
            Segments::Offsets(offsets) => i == 0 || offsets.contains(i),
            Segments::Keys(keys) => keys.is_head(i),
        }
    }

    /// Checks that the segments fit a sequence of `n` elements: flags of
    /// its length, rows that divide it, or offsets that are its row
    /// pointers.
    pub fn check_len(&self, n: usize) -> Result<(), SegmentedError> {
        match self {
            Segments::Flags(heads) => Ok(heads.check_len(n)?),
            Segments::Rows { row_length } => Ok(RowLengthMismatch::check(n, *row_length)?),
            Segments::Offsets(offsets) => Ok(offsets.check(n)?),
            Segments::Keys(keys) => Ok(keys.check(n)?),
        }
    }
}

impl<'a> From<HeadFlags<'a>> for Segments<'a> {
    fn from(heads: HeadFlags<'a>) -> Self {
        Segments::Flags(heads)
    }
}

impl<'a> From<&'a OwnedHeadFlags> for Segments<'a> {
    fn from(heads: &'a OwnedHeadFlags) -> Self {
        Segments::Flags(heads.as_flags())
    }
}

/// Rows of a fixed length that do not fit the sequence: a length of 0, or
/// one that does not divide the sequence's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("rows of {row_length} elements do not divide a sequence of {elements}: the row length must be at least 1 and divide the length")]
pub struct RowLengthMismatch {
    /// Elements in the sequence.
    pub elements: usize,
    /// The row length given.
    pub row_length: usize,
}

impl RowLengthMismatch {
    /// `Ok` when rows of `row_length` tile `elements` exactly.
    pub fn check(elements: usize, row_length: usize) -> Result<(), Self> {
        if row_length != 0 && elements % row_length == 0 {
            Ok(())
        } else {
            Err(RowLengthMismatch {
                elements,
                row_length,
            })
        }
    }
}

/// Owned head flags, as built by [`heads_from_offsets`] and [`heads_from_keys`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedHeadFlags {
    /// One byte per element.
    Bytes(Vec<u8>),
    /// Packed bits.
    Bits {
        /// `ceil(len / 32)` words.
        words: Vec<u32>,
        /// The number of elements the flags describe.
        len: usize,
    },
}

impl OwnedHeadFlags {
    /// Borrows the flags.
    pub fn as_flags(&self) -> HeadFlags<'_> {
        match self {
            OwnedHeadFlags::Bytes(b) => HeadFlags::Bytes(b),
            OwnedHeadFlags::Bits { words, len } => HeadFlags::bits(words, *len),
        }
    }

    fn set(&mut self, i: usize) {
        match self {
            OwnedHeadFlags::Bytes(b) => b[i] = 1,
            OwnedHeadFlags::Bits { words, .. } => words[i / 32] |= 1 << (i % 32),
        }
    }

    fn zeroed(format: FlagFormat, n: usize) -> Self {
        match format {
            FlagFormat::Bytes => OwnedHeadFlags::Bytes(vec![0; n]),
            FlagFormat::Bits => OwnedHeadFlags::Bits {
                words: vec![0; n.div_ceil(32)],
                len: n,
            },
        }
    }
}

/// The flags do not fit the sequence: they describe another number of
/// elements, or (packed bits) their words do not fit their own count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagsLengthMismatch {
    /// The flags' format.
    pub format: FlagFormat,
    /// Elements in the sequence.
    pub elements: usize,
    /// Elements the flags describe (bytes: the bytes given).
    pub flagged: usize,
    /// Units (bytes or words) given.
    pub given: usize,
    /// Units the flags' own count needs.
    pub required: usize,
}

impl FlagsLengthMismatch {
    /// `Ok` when `given` units of `format`, describing `flagged` elements,
    /// are well formed flags for a sequence of `elements`.
    pub fn check(
        format: FlagFormat,
        elements: usize,
        flagged: usize,
        given: usize,
    ) -> Result<(), Self> {
        let required = format.units(flagged);
        if given == required && flagged == elements {
            Ok(())
        } else {
            Err(FlagsLengthMismatch {
                format,
                elements,
                flagged,
                given,
                required,
            })
        }
    }
}

impl std::fmt::Display for FlagsLengthMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.given != self.required {
            write!(
                f,
                "head flags for {} elements need {} {:?} units, but {} were given",
                self.flagged, self.required, self.format, self.given
            )
        } else {
            write!(
                f,
                "the head flags describe {} elements, but the sequence has {}",
                self.flagged, self.elements
            )
        }
    }
}

impl std::error::Error for FlagsLengthMismatch {}

/// Why a segmented scan was refused (nothing was written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SegmentedError {
    /// Input and output lengths differ.
    #[error(transparent)]
    Length(#[from] LengthMismatch),
    /// The flags do not match the input's length.
    #[error(transparent)]
    Flags(#[from] FlagsLengthMismatch),
    /// The row length does not divide the input's length.
    #[error(transparent)]
    Rows(#[from] RowLengthMismatch),
    /// The segment offsets are not row pointers of the input.
    #[error(transparent)]
    Offsets(#[from] InvalidOffsets),
    /// The keys are not one per element.
    #[error(transparent)]
    Keys(#[from] KeysLengthMismatch),
    /// A per-segment totals slot's length is not the number of segments.
    #[error(transparent)]
    Totals(#[from] SegmentTotalsLength),
}

/// Integer types usable as segment offsets.
pub trait SegmentOffset: Copy + Send + Sync + 'static {
    /// The offset as a `u64`.
    fn to_u64(self) -> u64;
}

impl SegmentOffset for u32 {
    fn to_u64(self) -> u64 {
        self as u64
    }
}

impl SegmentOffset for u64 {
    fn to_u64(self) -> u64 {
        self
    }
}

/// Types usable as segment keys: compared bit for bit (a new segment starts
/// wherever a key differs from the one before it).
///
/// # Safety
/// `Self` must be plain data of size 1, 2, 4 or 8 without padding, aligned
/// to its size, so that the GPU can load and compare its bits as an
/// unsigned integer of that size.
pub unsafe trait SegmentKey: Copy + Eq + Send + Sync + 'static {}

macro_rules! segment_keys {
    ($($t:ty),*) => {$(
        // SAFETY: primitive integers have no padding and sizes 1, 2, 4 or 8.
        unsafe impl SegmentKey for $t {}
    )*};
}
segment_keys!(u8, u16, u32, u64, i8, i16, i32, i64);

/// Segment offsets that are not the row pointers of a sequence: nothing was
/// built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidOffsets {
    /// An offset past the end of the sequence.
    #[error("segment offset {value} (at index {index}) is past the sequence's {len} elements")]
    OutOfRange {
        /// Its index in the offsets.
        index: usize,
        /// The offset.
        value: u64,
        /// Elements in the sequence.
        len: usize,
    },
    /// An offset smaller than the one before it.
    #[error("segment offsets must not decrease: offset {index} is {value}, after {previous}")]
    Decreasing {
        /// Its index in the offsets.
        index: usize,
        /// The offset.
        value: u64,
        /// The offset before it.
        previous: u64,
    },
    /// Offsets checked for a sequence of another length (on the GPU,
    /// offsets are checked once and then used for scans of that length).
    #[error(
        "segment offsets checked for a sequence of {checked} elements cannot cut one of {len}"
    )]
    CheckedForAnotherLength {
        /// The length they were checked for.
        checked: usize,
        /// The length of the sequence scanned.
        len: usize,
    },
}

impl InvalidOffsets {
    /// The first reason `offsets` are not row pointers of `len` elements:
    /// each at most `len`, none smaller than the one before.
    pub fn check<O: SegmentOffset>(offsets: &[O], len: usize) -> Result<(), InvalidOffsets> {
        let mut previous = 0;
        for (index, o) in offsets.iter().enumerate() {
            let value = o.to_u64();
            if value > len as u64 {
                return Err(InvalidOffsets::OutOfRange { index, value, len });
            }
            if value < previous {
                return Err(InvalidOffsets::Decreasing {
                    index,
                    value,
                    previous,
                });
            }
            previous = value;
        }
        Ok(())
    }
}

/// Head flags for `n` elements from segment start offsets (CSR row
/// pointers): element `offsets[r]` starts a segment.
///
/// Offsets must not decrease and must be at most `n`; an offset equal to
/// `n` (the closing entry of a row-pointer array, trailing empty segments)
/// starts nothing, and repeated offsets (empty segments) mark one head.
/// Anything else is an [`InvalidOffsets`] error.
pub fn heads_from_offsets<O: SegmentOffset>(
    offsets: &[O],
    n: usize,
    format: FlagFormat,
) -> Result<OwnedHeadFlags, InvalidOffsets> {
    InvalidOffsets::check(offsets, n)?;
    let mut flags = OwnedHeadFlags::zeroed(format, n);
    if n > 0 {
        flags.set(0);
    }
    for &o in offsets {
        let o = o.to_u64();
        if o < n as u64 {
            flags.set(o as usize);
        }
    }
    Ok(flags)
}

/// Head flags from keys: element `i` starts a segment where
/// `keys[i] != keys[i-1]` (and element 0 always does).
pub fn heads_from_keys<K: SegmentKey>(keys: &[K], format: FlagFormat) -> OwnedHeadFlags {
    let mut flags = OwnedHeadFlags::zeroed(format, keys.len());
    for i in 0..keys.len() {
        if i == 0 || keys[i] != keys[i - 1] {
            flags.set(i);
        }
    }
    flags
}

/// A per-segment totals slot ([`SegmentTotals`](crate::SegmentTotals))
/// whose length is not the number of segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the segment totals slot has {slot} elements for {segments} segments: it takes one per segment"
)]
pub struct SegmentTotalsLength {
    /// Elements in the slot.
    pub slot: usize,
    /// Segments of the scan.
    pub segments: usize,
}

impl SegmentTotalsLength {
    /// `Ok` when a slot of `slot` elements takes the totals of `segments`.
    pub fn check(slot: usize, segments: usize) -> Result<(), Self> {
        if slot == segments {
            Ok(())
        } else {
            Err(SegmentTotalsLength { slot, segments })
        }
    }
}
