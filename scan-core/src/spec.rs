//! What a scan computes: its [`ScanKind`], its [`Direction`], its segments
//! and where its carry-out goes, together a [`ScanSpec`]. Every scan entry
//! point (CPU, GPU, plain, segmented) takes an [`IntoScanSpec`], so a bare
//! [`ScanKind`] still reads as a forward scan of that kind over the whole
//! input with no carry-out. `Scanner::scan` and `GpuScanner::scan` take
//! every combination in one spec; the CPU functions of [`cpu`](crate::cpu)
//! and [`segmented`](crate::segmented) take segments as an argument.
//!
//! ```
//! use gpu_scan::prelude::*;
//!
//! // "Keep the right one" shows which element each output came from.
//! #[scan_op(element = u32, identity = 0, op = |a, b| if b != 0 { b } else { a })]
//! struct Latest;
//!
//! let input = [1, 0, 2, 0, 3, 0];
//! let mut out = [0; 6];
//! cpu::scan::<Latest>(ScanKind::Inclusive, &input, &mut out).unwrap();
//! assert_eq!(out, [1, 1, 2, 2, 3, 3]);
//! // Reverse: out[i] = in[i] ∘ … ∘ in[n-1], the operator's order kept, so
//! // "the right one" is the last non-zero element from i on.
//! cpu::scan::<Latest>(ScanSpec::inclusive().reverse(), &input, &mut out).unwrap();
//! assert_eq!(out, [3, 3, 3, 3, 3, 0]);
//! ```
//!
//! The **carry-out** is what the scan would carry into one more element
//! after its last (in scan order): the exclusive scan's value for that
//! element. For a plain scan that is the seed (the `init` of an
//! [`ExclusiveWithInit`](ScanKind::ExclusiveWithInit) or
//! [`InclusiveWithInit`](ScanKind::InclusiveWithInit) scan, or the
//! identity) combined with every element; for a segmented scan, the
//! last segment's partial in scan order (behind `init` where there is
//! one). An empty input's carry-out is the seed. It is the count behind a
//! compaction's exclusive sum, and the carry-in of the next chunk of a
//! sequence scanned in chunks:
//!
//! ```
//! use gpu_scan::prelude::*;
//!
//! #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
//! struct Sum;
//!
//! let keep = [1, 0, 1, 1, 0];
//! let (mut slots, mut kept) = ([0; 5], 0);
//! cpu::scan::<Sum>(ScanSpec::exclusive().carry_out(&mut kept), &keep, &mut slots).unwrap();
//! assert_eq!((slots, kept), ([0, 1, 1, 2, 3], 3));
//!
//! // The second half of [1, 2, 3, 4, 5, 6], behind the first half's carry.
//! let (mut first, mut second, mut carry) = ([0; 3], [0; 3], 0);
//! cpu::scan::<Sum>(ScanSpec::inclusive().carry_out(&mut carry), &[1, 2, 3], &mut first).unwrap();
//! cpu::scan::<Sum>(ScanSpec::inclusive_with_init(carry), &[4, 5, 6], &mut second).unwrap();
//! assert_eq!((first, second), ([1, 3, 6], [10, 15, 21]));
//! ```

use crate::segments::{SegmentTotalsLength, Segments};
pub use scan_types::Direction;

/// Which scan to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScanKind<E> {
    /// `out[i] = in[0] ∘ … ∘ in[i]`
    Inclusive,
    /// `out[i] = in[0] ∘ … ∘ in[i-1]`, `out[0] = identity`
    Exclusive,
    /// `out[i] = init ∘ in[0] ∘ … ∘ in[i-1]`, `out[0] = init`
    ExclusiveWithInit(E),
    /// `out[i] = init ∘ in[0] ∘ … ∘ in[i]`: the inclusive scan behind
    /// `init`, as the next chunk of a sequence scanned in chunks takes the
    /// previous chunk's carry-out (CUB's `InclusiveScanInit`)
    InclusiveWithInit(E),
}

impl<E: Copy> ScanKind<E> {
    /// Whether each output includes its own input.
    ///
    /// ```
    /// use gpu_scan::ScanKind;
    /// assert!(ScanKind::InclusiveWithInit(5u32).is_inclusive());
    /// assert!(!ScanKind::<u32>::Exclusive.is_inclusive());
    /// ```
    pub fn is_inclusive(&self) -> bool {
        matches!(self, ScanKind::Inclusive | ScanKind::InclusiveWithInit(_))
    }

    /// The initial value the scan starts from, if it has one (else the
    /// operator's identity).
    ///
    /// ```
    /// use gpu_scan::ScanKind;
    /// assert_eq!(ScanKind::ExclusiveWithInit(7u32).init(), Some(7));
    /// assert_eq!(ScanKind::<u32>::Inclusive.init(), None);
    /// ```
    pub fn init(&self) -> Option<E> {
        match *self {
            ScanKind::ExclusiveWithInit(init) | ScanKind::InclusiveWithInit(init) => Some(init),
            ScanKind::Inclusive | ScanKind::Exclusive => None,
        }
    }
}

/// A scan's kind, direction, carry-out slot (`C`: [`NoCarryOut`], or where
/// the backend writes the carry-out, see the [module docs](self)) and
/// shape (`S`: [`NoSegments`], a whole sequence; [`SegmentedBy`] what
/// [`ScanSpec::segments`] was given; or a row-major matrix scanned down its
/// [`Columns`] or in two dimensions, [`SummedArea`]).
///
/// Build one from a [`ScanKind`] (`ScanKind::Inclusive.into()`, or pass the
/// kind itself where `impl Into<ScanSpec>` is taken) or with the
/// constructors, then adjust it:
///
/// ```
/// use gpu_scan::{Direction, ScanKind, ScanSpec};
///
/// let spec = ScanSpec::exclusive_with_init(10u32).reverse();
/// assert_eq!(spec.kind, ScanKind::ExclusiveWithInit(10));
/// assert_eq!(spec.direction, Direction::Reverse);
/// assert_eq!(ScanSpec::from(ScanKind::<u32>::Inclusive), ScanSpec::inclusive());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScanSpec<E, C = NoCarryOut, S = NoSegments> {
    /// Inclusive, exclusive, or exclusive from an initial value.
    pub kind: ScanKind<E>,
    /// Forward (prefix) or reverse (suffix).
    pub direction: Direction,
    /// Where the carry-out goes: [`NoCarryOut`], a `&mut E` on the CPU, a
    /// one-element device buffer on the GPU.
    pub carry_out: C,
    /// The input's shape: [`NoSegments`]; [`SegmentedBy`] flags, rows,
    /// offsets or keys, each segment scanned on its own; or a matrix,
    /// [`Columns`] or [`SummedArea`].
    pub segments: S,
}

/// A carry-out slot that takes one total per segment
/// ([`ScanSpec::segment_totals`]): segment `r`'s carry-out (its seeded
/// total in scan order, the seed alone for an empty segment) goes to
/// `slot[r]`, segments numbered in memory order. On the CPU the slot is
/// anything that is a `&mut [E]` ([`AsMut`]); on the GPU a device buffer
/// of one element per segment.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SegmentTotals<T>(pub T);

/// A per-segment totals slot that also receives the number of segments
/// ([`ScanSpec::counted_segment_totals`]), for segments whose count the
/// caller does not know beforehand (head flags or keys in device memory):
/// segment `r`'s total goes to `totals[r]` for as many segments as the
/// slot holds, later segments are counted but not written, slots past the
/// count are left as they were, and `count` receives the number of
/// segments. On the CPU `totals` is a `&mut [E]` (or anything
/// [`AsMut<[E]>`](AsMut)) and `count` a `&mut usize`; on the GPU both are
/// device buffers, the count a one-element buffer of `u64`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CountedSegmentTotals<T, N> {
    /// Where the totals go, as many as it holds.
    pub totals: T,
    /// Where the number of segments goes.
    pub count: N,
}

/// A scan without a carry-out (a [`ScanSpec`]'s default slot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoCarryOut;

/// A scan of the whole input as one sequence (a [`ScanSpec`]'s default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoSegments;

/// A row-major matrix of rows of `row_length` elements scanned along its
/// rows, each row a segment ([`ScanSpec::rows`]; PyTorch's `cumsum(dim=1)`):
/// segments that need no flags, on the CPU ([`Segments::rows`]) and the
/// GPU alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rows {
    /// Elements per row.
    pub row_length: usize,
}

impl From<Rows> for Segments<'_> {
    fn from(rows: Rows) -> Self {
        Segments::rows(rows.row_length)
    }
}

/// A row-major matrix of rows of `row_length` elements scanned down its
/// columns, each column on its own ([`ScanSpec::columns`]; PyTorch's
/// `cumsum(dim=0)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Columns {
    /// Elements per row (the number of columns).
    pub row_length: usize,
}

/// A row-major matrix of rows of `row_length` elements scanned in two
/// dimensions ([`ScanSpec::summed_area`]): output `(r, c)` combines the
/// rectangle of rows `0..=r` and columns `0..=c` (a summed-area table),
/// from the bottom right in reverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SummedArea {
    /// Elements per row (the number of columns).
    pub row_length: usize,
}

/// The shape a spec gives its input, as a backend dispatches on it: `S`
/// is the segments in the backend's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shape<S> {
    /// One sequence.
    Flat,
    /// Segments, each scanned on its own.
    Segmented(S),
    /// A matrix scanned down its columns ([`Columns`]).
    Columns {
        /// Elements per row.
        row_length: usize,
    },
    /// A matrix scanned in two dimensions ([`SummedArea`]).
    SummedArea {
        /// Elements per row.
        row_length: usize,
    },
}

/// The shapes that take a carry-out slot ([`ScanSpec::carry_out`]): a
/// sequence and segments; a matrix has none.
pub trait TakesCarryOut: sealed::Sealed {}

impl TakesCarryOut for NoSegments {}
impl<T> TakesCarryOut for SegmentedBy<T> {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NoSegments {}
    impl<T> Sealed for super::SegmentedBy<T> {}
}

/// The segments [`ScanSpec::segments`] was given, in whatever form the
/// backend takes them: on the CPU anything that converts into
/// [`Segments`] (head flags, [`Segments::rows`], offsets, keys), on the
/// GPU anything that converts into a `DeviceSegments`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegmentedBy<T>(pub T);

/// A spec's shape for a host-slice scan (`Scanner::scan`), with segments
/// as the [`Segments`] they convert into.
pub trait HostSegments<'a> {
    /// The shape.
    fn into_shape(self) -> Shape<Segments<'a>>;
}

impl<'a> HostSegments<'a> for NoSegments {
    fn into_shape(self) -> Shape<Segments<'a>> {
        Shape::Flat
    }
}

impl<'a, T: Into<Segments<'a>>> HostSegments<'a> for SegmentedBy<T> {
    fn into_shape(self) -> Shape<Segments<'a>> {
        Shape::Segmented(self.0.into())
    }
}

impl<'a> HostSegments<'a> for Columns {
    fn into_shape(self) -> Shape<Segments<'a>> {
        Shape::Columns {
            row_length: self.row_length,
        }
    }
}

impl<'a> HostSegments<'a> for SummedArea {
    fn into_shape(self) -> Shape<Segments<'a>> {
        Shape::SummedArea {
            row_length: self.row_length,
        }
    }
}

/// Where a CPU scan writes its carry-out: nowhere ([`NoCarryOut`]) or a
/// `&mut E` ([`ScanSpec::carry_out`]).
pub trait HostCarryOut<E> {
    /// Whether a carry-out is asked for (`false` only for [`NoCarryOut`]):
    /// a backend may skip fetching it when not.
    const WANTED: bool = true;

    /// Stores the carry-out.
    fn put(self, carry: E);
}

impl<E> HostCarryOut<E> for NoCarryOut {
    const WANTED: bool = false;

    fn put(self, _: E) {}
}

impl<E> HostCarryOut<E> for &mut E {
    fn put(self, carry: E) {
        *self = carry;
    }
}

/// Where a host scan that may be segmented writes its carry-out: nowhere
/// ([`NoCarryOut`]), a `&mut E` (the last segment's partial,
/// [`ScanSpec::carry_out`]), or one total per segment
/// ([`SegmentTotals`], [`ScanSpec::segment_totals`]).
pub trait HostSegmentedCarryOut<E> {
    /// Whether a carry-out is asked for (`false` only for [`NoCarryOut`]).
    const WANTED: bool = true;

    /// The slot of one total per segment, `None` for the other slots.
    fn totals(&mut self) -> Option<&mut [E]>;

    /// Whether the totals slot takes as many totals as it holds and the
    /// number of segments ([`CountedSegmentTotals`]), rather than exactly
    /// one total per segment ([`SegmentTotals`]).
    fn counts_segments(&self) -> bool {
        false
    }

    /// Stores the number of segments (only [`CountedSegmentTotals`] keeps
    /// it).
    fn put_count(&mut self, _segments: usize) {}

    /// The part of the totals slot that receives the totals of `segments`
    /// segments, `None` for a slot without totals: all of a
    /// [`SegmentTotals`] slot, whose length must be `segments`; the first
    /// `min(len, segments)` elements of a [`CountedSegmentTotals`] slot,
    /// whose count is stored.
    fn totals_for(&mut self, segments: usize) -> Result<Option<&mut [E]>, SegmentTotalsLength> {
        let counted = self.counts_segments();
        if counted {
            self.put_count(segments);
        }
        match self.totals() {
            None => Ok(None),
            Some(totals) if counted => {
                let written = totals.len().min(segments);
                Ok(Some(&mut totals[..written]))
            }
            Some(totals) => {
                SegmentTotalsLength::check(totals.len(), segments)?;
                Ok(Some(totals))
            }
        }
    }

    /// Stores the carry-out of the whole scan (a [`SegmentTotals`] slot,
    /// which received every segment's total, ignores it).
    fn put_carry(self, carry: E);

    /// Checks the slot for a scan without segments, which is one segment:
    /// a [`SegmentTotals`] slot must hold one element.
    fn check_unsegmented(&mut self) -> Result<(), SegmentTotalsLength> {
        let counted = self.counts_segments();
        match self.totals() {
            Some(totals) if !counted => SegmentTotalsLength::check(totals.len(), 1),
            _ => Ok(()),
        }
    }

    /// Stores the carry-out of a scan without segments: its one segment's
    /// total for a [`SegmentTotals`] slot (checked by
    /// [`HostSegmentedCarryOut::check_unsegmented`]).
    fn put_unsegmented(mut self, carry: E)
    where
        Self: Sized,
    {
        if self.totals().is_none() {
            return self.put_carry(carry);
        }
        // Checked by check_unsegmented: one segment fits.
        if let Ok(Some([first, ..])) = self.totals_for(1) {
            *first = carry;
        }
    }
}

impl<E> HostSegmentedCarryOut<E> for NoCarryOut {
    const WANTED: bool = false;

    fn totals(&mut self) -> Option<&mut [E]> {
        None
    }

    fn put_carry(self, _: E) {}
}

impl<E> HostSegmentedCarryOut<E> for &mut E {
    fn totals(&mut self) -> Option<&mut [E]> {
        None
    }

    fn put_carry(self, carry: E) {
        *self = carry;
    }
}

impl<E, T: AsMut<[E]>> HostSegmentedCarryOut<E> for SegmentTotals<T> {
    fn totals(&mut self) -> Option<&mut [E]> {
        Some(self.0.as_mut())
    }

    fn put_carry(self, _: E) {}
}

impl<E, T: AsMut<[E]>> HostSegmentedCarryOut<E> for CountedSegmentTotals<T, &mut usize> {
    fn totals(&mut self) -> Option<&mut [E]> {
        Some(self.totals.as_mut())
    }

    fn counts_segments(&self) -> bool {
        true
    }

    fn put_count(&mut self, segments: usize) {
        *self.count = segments;
    }

    fn put_carry(self, _: E) {}
}

impl<E> ScanSpec<E> {
    /// A forward scan of `kind`.
    pub const fn new(kind: ScanKind<E>) -> Self {
        ScanSpec {
            kind,
            direction: Direction::Forward,
            carry_out: NoCarryOut,
            segments: NoSegments,
        }
    }

    /// A forward inclusive scan.
    pub const fn inclusive() -> Self {
        Self::new(ScanKind::Inclusive)
    }

    /// A forward exclusive scan (the identity first).
    pub const fn exclusive() -> Self {
        Self::new(ScanKind::Exclusive)
    }

    /// A forward exclusive scan from `init`.
    pub const fn exclusive_with_init(init: E) -> Self {
        Self::new(ScanKind::ExclusiveWithInit(init))
    }

    /// A forward inclusive scan behind `init` (with segments, `init` in
    /// front of every segment).
    pub const fn inclusive_with_init(init: E) -> Self {
        Self::new(ScanKind::InclusiveWithInit(init))
    }
}

impl<E, C, S: TakesCarryOut> ScanSpec<E, C, S> {
    /// The same scan, writing its carry-out (see the [module docs](self))
    /// to `slot`: a `&mut E` for the CPU backend, a one-element device
    /// buffer (`&mut CudaSlice<E>` or `&mut CudaViewMut<E>`) for the GPU.
    ///
    /// ```
    /// use gpu_scan::prelude::*;
    ///
    /// #[scan_op(element = u64, identity = 1, op = |a, b| a * b)]
    /// struct Product;
    ///
    /// let mut total = 0;
    /// let suffixes = {
    ///     let mut out = [0; 4];
    ///     let spec = ScanSpec::exclusive().reverse().carry_out(&mut total);
    ///     cpu::scan::<Product>(spec, &[2, 3, 4, 5], &mut out).unwrap();
    ///     out
    /// };
    /// assert_eq!((suffixes, total), ([60, 20, 5, 1], 120));
    /// ```
    pub fn carry_out<T>(self, slot: T) -> ScanSpec<E, T, S> {
        ScanSpec {
            kind: self.kind,
            direction: self.direction,
            carry_out: slot,
            segments: self.segments,
        }
    }

    /// The same scan writing every segment's carry-out to `slot`, one
    /// element per segment in memory order ([`SegmentTotals`]): segment
    /// `r`'s seeded total in scan order (the seed alone where it is empty),
    /// the segmented reduction beside the scan. Segments are those of
    /// [`ScanSpec::segments`] (a scan without segments is one segment), and
    /// with offsets the windows `[offsets[r], offsets[r + 1])` of CSR row
    /// pointers, `offsets.len() - 1` of them, as CUB's segmented reduction
    /// takes them. A slot of another length than the number of segments is
    /// refused before anything is written. On the CPU the slot is a
    /// `&mut [E]` (or anything [`AsMut<[E]>`](AsMut)); on the GPU a device
    /// buffer, for segments given as rows or offsets (a count the host
    /// knows).
    ///
    /// ```
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::segmented::Segments;
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// // CSR row pointers of rows of 2, 0 and 3 elements: each row's sum
    /// // beside the exclusive scan within the rows.
    /// let row_ptr: &[u32] = &[0, 2, 2, 5];
    /// let mut row_sums = [0; 3];
    /// let spec = ScanSpec::exclusive()
    ///     .segments(Segments::offsets(row_ptr))
    ///     .segment_totals(&mut row_sums);
    /// let out = Scanner::<Sum>::cpu().scan(spec, &[1, 2, 3, 4, 5]).unwrap();
    /// assert_eq!((out, row_sums), (vec![0, 1, 0, 3, 7], [3, 0, 12]));
    /// ```
    pub fn segment_totals<T>(self, slot: T) -> ScanSpec<E, SegmentTotals<T>, S> {
        self.carry_out(SegmentTotals(slot))
    }

    /// The same scan writing segment `r`'s total to `totals[r]` for as many
    /// segments as `totals` holds, and the number of segments to `count`
    /// ([`CountedSegmentTotals`]): the segmented reduction for segments
    /// whose count is not known beforehand, CUB's `ReduceByKey` with its
    /// `num_runs_out`. Totals are as for [`ScanSpec::segment_totals`];
    /// later segments are counted but not written, and slots past the
    /// count are left as they were, so a slot of any length is taken (over
    /// flags, keys or rows, one as long as the input always suffices). On
    /// the CPU `totals` is a
    /// `&mut [E]` and `count` a `&mut usize`; on the GPU both are device
    /// buffers, `count` one `u64`, written on the stream, and every
    /// segmentation is taken (head flags and keys too).
    ///
    /// ```
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::segmented::Segments;
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// // Runs of equal keys, each run's sum beside the scan within runs.
    /// let keys: &[u16] = &[4, 4, 9, 9, 9, 4];
    /// let (mut sums, mut runs) = ([0; 6], 0);
    /// let spec = ScanSpec::inclusive()
    ///     .segments(Segments::keys(keys))
    ///     .counted_segment_totals(&mut sums, &mut runs);
    /// let out = Scanner::<Sum>::cpu().scan(spec, &[1, 2, 3, 4, 5, 6]).unwrap();
    /// assert_eq!(out, [1, 3, 3, 7, 12, 6]);
    /// assert_eq!((runs, &sums[..runs]), (3, &[3, 12, 6][..]));
    /// ```
    pub fn counted_segment_totals<T, N>(
        self,
        totals: T,
        count: N,
    ) -> ScanSpec<E, CountedSegmentTotals<T, N>, S> {
        self.carry_out(CountedSegmentTotals { totals, count })
    }
}

impl<E, C> ScanSpec<E, C, NoSegments> {
    /// The same scan over segments, each scanned on its own: head flags,
    /// rows of a fixed length, offsets or keys (see
    /// [`segmented`](crate::segmented)), given as the backend takes them
    /// (on the GPU, device buffers). In reverse each segment is scanned
    /// from its last element; a carry-out is the last segment's partial.
    ///
    /// ```
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::segmented::Segments;
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// // Two rows of three, summed along each row; the last row's total.
    /// let mut last_row = 0;
    /// let spec = ScanSpec::inclusive().segments(Segments::rows(3)).carry_out(&mut last_row);
    /// let out = Scanner::<Sum>::cpu().scan(spec, &[1, 2, 3, 4, 5, 6]).unwrap();
    /// assert_eq!((out, last_row), (vec![1, 3, 6, 4, 9, 15], 15));
    /// ```
    pub fn segments<T>(self, segments: T) -> ScanSpec<E, C, SegmentedBy<T>> {
        ScanSpec {
            kind: self.kind,
            direction: self.direction,
            carry_out: self.carry_out,
            segments: SegmentedBy(segments),
        }
    }

    /// The same scan over a row-major matrix of rows of `row_length`
    /// elements, along each row ([`Rows`]: segments of a fixed length, on
    /// any backend; `torch.cumsum(x, dim=1)`). A carry-out is the last
    /// row's, and [`ScanSpec::segment_totals`] takes every row's total. A
    /// row length of 0 or one that does not divide the input's length is
    /// refused before anything is written.
    ///
    /// ```
    /// use gpu_scan::ops::Sum;
    /// use gpu_scan::prelude::*;
    ///
    /// let mut scanner = Scanner::<Sum<u32>>::new();
    /// let mut totals = [0; 2];
    /// let spec = ScanSpec::inclusive().rows(3).segment_totals(&mut totals[..]);
    /// let out = scanner.scan(spec, &[1, 2, 3, 4, 5, 6]).unwrap();
    /// assert_eq!((out, totals), (vec![1, 3, 6, 4, 9, 15], [6, 15]));
    /// ```
    pub fn rows(self, row_length: usize) -> ScanSpec<E, C, SegmentedBy<Rows>> {
        self.segments(Rows { row_length })
    }
}

impl<E> ScanSpec<E, NoCarryOut, NoSegments> {
    /// The same scan over a row-major matrix of rows of `row_length`
    /// elements, down each of its columns ([`Columns`]): `out[r][c]`
    /// combines `in[0][c] … in[r][c]` (from the last row in reverse). A
    /// row length of 0 or one that does not divide the input's length is
    /// refused before anything is written.
    ///
    /// ```
    /// use gpu_scan::ops::Sum;
    /// use gpu_scan::prelude::*;
    ///
    /// let mut scanner = Scanner::<Sum<u32>>::new();
    /// // A 3 × 2 matrix: cumsum along dim 0, then from the bottom.
    /// let x = [1, 2, 3, 4, 5, 6];
    /// let down = scanner.scan(ScanSpec::inclusive().columns(2), &x).unwrap();
    /// assert_eq!(down, [1, 2, 4, 6, 9, 12]);
    /// let up = scanner.scan(ScanSpec::inclusive().reverse().columns(2), &x).unwrap();
    /// assert_eq!(up, [9, 12, 8, 10, 5, 6]);
    /// ```
    pub fn columns(self, row_length: usize) -> ScanSpec<E, NoCarryOut, Columns> {
        ScanSpec {
            kind: self.kind,
            direction: self.direction,
            carry_out: NoCarryOut,
            segments: Columns { row_length },
        }
    }

    /// The same scan over a row-major matrix of rows of `row_length`
    /// elements in two dimensions ([`SummedArea`]): inclusive, `out[r][c]`
    /// combines the rectangle of rows `0..=r` and columns `0..=c` (a
    /// summed-area table; in reverse the rectangle to the bottom right;
    /// exclusive, the rectangle of rows `0..r` and columns `0..c`). An
    /// initial value comes first in scan order. The rectangle's elements
    /// are combined in memory order, so any operator works
    /// ([`summed_area`](crate::summed_area) states the definition; on the
    /// GPU a commutative operator's scan runs in tiles, any other along the
    /// rows and then down the columns). A row length of 0 or one that does
    /// not divide the input's length is refused before anything is
    /// written.
    ///
    /// ```
    /// use gpu_scan::ops::Sum;
    /// use gpu_scan::prelude::*;
    ///
    /// let mut scanner = Scanner::<Sum<u32>>::new();
    /// // A 2 × 3 matrix: each output sums the rectangle from the top left.
    /// let x = [1, 2, 3, 4, 5, 6];
    /// let sat = scanner.scan(ScanSpec::inclusive().summed_area(3), &x).unwrap();
    /// assert_eq!(sat, [1, 3, 6, 5, 12, 21]);
    /// // From the bottom right.
    /// let sat = scanner.scan(ScanSpec::inclusive().reverse().summed_area(3), &x).unwrap();
    /// assert_eq!(sat, [21, 16, 9, 15, 11, 6]);
    /// ```
    pub fn summed_area(self, row_length: usize) -> ScanSpec<E, NoCarryOut, SummedArea> {
        ScanSpec {
            kind: self.kind,
            direction: self.direction,
            carry_out: NoCarryOut,
            segments: SummedArea { row_length },
        }
    }
}

impl<E, C, S> ScanSpec<E, C, S> {
    /// The spec without its carry-out slot, and the slot.
    pub fn split_carry_out(self) -> (ScanSpec<E, NoCarryOut, S>, C) {
        let spec = ScanSpec {
            kind: self.kind,
            direction: self.direction,
            carry_out: NoCarryOut,
            segments: self.segments,
        };
        (spec, self.carry_out)
    }

    /// The spec without its segments, and the segments.
    pub fn split_segments(self) -> (ScanSpec<E, C>, S) {
        let spec = ScanSpec {
            kind: self.kind,
            direction: self.direction,
            carry_out: self.carry_out,
            segments: NoSegments,
        };
        (spec, self.segments)
    }

    /// The same scan from the other end (see [`Direction::Reverse`]).
    pub fn reverse(self) -> Self {
        self.with_direction(Direction::Reverse)
    }

    /// The same scan in `direction`.
    pub fn with_direction(mut self, direction: Direction) -> Self {
        self.direction = direction;
        self
    }

    /// Whether this is a reverse (suffix) scan.
    pub fn is_reverse(&self) -> bool {
        self.direction == Direction::Reverse
    }
}

/// What a scan entry point takes as its spec: a [`ScanKind`] (a forward
/// scan of the whole input without carry-out) or a [`ScanSpec`]. The
/// carry-out slot's and the segments' types are associated types, so entry
/// points keep one generic parameter (the operator) and
/// `cpu::scan::<Op>(…)` still names it alone; an entry point that takes no
/// segments asks for `Segments = NoSegments`, so a segmented spec passed
/// there is a compile error, never segments ignored.
pub trait IntoScanSpec<E> {
    /// Where the carry-out goes ([`NoCarryOut`] for none).
    type Carry;
    /// The segments ([`NoSegments`] for none).
    type Segments;
    /// The spec.
    fn into_spec(self) -> ScanSpec<E, Self::Carry, Self::Segments>;
}

impl<E, C, S> IntoScanSpec<E> for ScanSpec<E, C, S> {
    type Carry = C;
    type Segments = S;
    fn into_spec(self) -> ScanSpec<E, C, S> {
        self
    }
}

impl<E> IntoScanSpec<E> for ScanKind<E> {
    type Carry = NoCarryOut;
    type Segments = NoSegments;
    fn into_spec(self) -> ScanSpec<E> {
        ScanSpec::new(self)
    }
}

impl<E> From<ScanKind<E>> for ScanSpec<E> {
    fn from(kind: ScanKind<E>) -> Self {
        ScanSpec::new(kind)
    }
}

impl<E> ScanKind<E> {
    /// This kind as a reverse (suffix) scan.
    pub fn reverse(self) -> ScanSpec<E> {
        ScanSpec::new(self).reverse()
    }
}
