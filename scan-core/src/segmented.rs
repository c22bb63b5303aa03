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
//! Users with segment offsets (CSR row pointers) or keys build flags with
//! [`heads_from_offsets`] and [`heads_from_keys`] (the GPU has the same
//! builders).
//!
//! ```
//! use gpu_scan::prelude::*;
//! use gpu_scan::segmented::{self, FlagFormat, HeadFlags};
//!
//! #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
//! struct Sum;
//!
//! // Segments [1 2 3] [4] [] [5 6]: offsets 0, 3, 4, 4, 6.
//! let heads = segmented::heads_from_offsets(&[0u32, 3, 4, 4], 6, FlagFormat::Bytes);
//! let mut out = vec![0; 6];
//! segmented::scan::<Sum>(ScanKind::Inclusive, heads.as_flags(), &[1, 2, 3, 4, 5, 6], &mut out).unwrap();
//! assert_eq!(out, [1, 3, 6, 4, 5, 11]);
//! ```

use crate::cpu::{LengthMismatch, ScanKind};
use crate::ScanOp;
use rayon::prelude::*;

pub use kernels_gen::FlagFormat;

/// Segment heads of a host sequence, borrowed.
#[derive(Clone, Copy, Debug)]
pub enum HeadFlags<'a> {
    /// One byte per element; non-zero marks a head.
    Bytes(&'a [u8]),
    /// Bits packed into `u32` words (see [`FlagFormat::Bits`]).
    Bits(&'a [u32]),
}

impl HeadFlags<'_> {
    /// The storage format.
    pub fn format(&self) -> FlagFormat {
        match self {
            HeadFlags::Bytes(_) => FlagFormat::Bytes,
            HeadFlags::Bits(_) => FlagFormat::Bits,
        }
    }

    /// Storage units given (bytes or words).
    pub fn units(&self) -> usize {
        match self {
            HeadFlags::Bytes(b) => b.len(),
            HeadFlags::Bits(w) => w.len(),
        }
    }

    /// Whether element `i` starts a segment (element 0 always does).
    /// Panics if `i` is past the flags.
    pub fn is_head(&self, i: usize) -> bool {
        i == 0
            || match self {
                HeadFlags::Bytes(b) => b[i] != 0,
                HeadFlags::Bits(w) => (w[i / 32] >> (i % 32)) & 1 != 0,
            }
    }

    /// Checks that the flags describe exactly `n` elements.
    pub fn check_len(&self, n: usize) -> Result<(), FlagsLengthMismatch> {
        FlagsLengthMismatch::check(self.format(), n, self.units())
    }
}

/// Owned head flags, as built by [`heads_from_offsets`] and [`heads_from_keys`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedHeadFlags {
    /// One byte per element.
    Bytes(Vec<u8>),
    /// Packed bits.
    Bits(Vec<u32>),
}

impl OwnedHeadFlags {
    /// Borrows the flags.
    pub fn as_flags(&self) -> HeadFlags<'_> {
        match self {
            OwnedHeadFlags::Bytes(b) => HeadFlags::Bytes(b),
            OwnedHeadFlags::Bits(w) => HeadFlags::Bits(w),
        }
    }

    fn set(&mut self, i: usize) {
        match self {
            OwnedHeadFlags::Bytes(b) => b[i] = 1,
            OwnedHeadFlags::Bits(w) => w[i / 32] |= 1 << (i % 32),
        }
    }

    fn zeroed(format: FlagFormat, n: usize) -> Self {
        match format {
            FlagFormat::Bytes => OwnedHeadFlags::Bytes(vec![0; n]),
            FlagFormat::Bits => OwnedHeadFlags::Bits(vec![0; n.div_ceil(32)]),
        }
    }
}

/// The flags do not have the size the sequence needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{elements} elements need {required} {format:?} flag units, but {given} were given")]
pub struct FlagsLengthMismatch {
    /// The flags' format.
    pub format: FlagFormat,
    /// Elements in the sequence.
    pub elements: usize,
    /// Units (bytes or words) given.
    pub given: usize,
    /// Units required.
    pub required: usize,
}

impl FlagsLengthMismatch {
    /// `Ok` when `given` units of `format` describe exactly `elements` elements.
    pub fn check(format: FlagFormat, elements: usize, given: usize) -> Result<(), Self> {
        let required = format.units(elements);
        if given == required {
            Ok(())
        } else {
            Err(FlagsLengthMismatch {
                format,
                elements,
                given,
                required,
            })
        }
    }
}

/// Why a segmented scan was refused (nothing was written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SegmentedError {
    /// Input and output lengths differ.
    #[error(transparent)]
    Length(#[from] LengthMismatch),
    /// The flags do not match the input's length.
    #[error(transparent)]
    Flags(#[from] FlagsLengthMismatch),
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
/// `Self` must be plain data of size 1, 2, 4 or 8 without padding, so that
/// the GPU can compare its bits as an unsigned integer of that size.
pub unsafe trait SegmentKey: Copy + Eq + Send + Sync + 'static {}

macro_rules! segment_keys {
    ($($t:ty),*) => {$(
        // SAFETY: primitive integers have no padding and sizes 1, 2, 4 or 8.
        unsafe impl SegmentKey for $t {}
    )*};
}
segment_keys!(u8, u16, u32, u64, i8, i16, i32, i64);

/// Head flags for `n` elements from segment start offsets (CSR row
/// pointers): element `offsets[r]` starts a segment. Offsets `>= n` (the
/// closing `n` of a row-pointer array, trailing empty segments) are
/// ignored; repeated offsets (empty segments) mark one head.
pub fn heads_from_offsets<O: SegmentOffset>(
    offsets: &[O],
    n: usize,
    format: FlagFormat,
) -> OwnedHeadFlags {
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
    flags
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

fn seed_of<E>(kind: ScanKind<E>) -> (bool, Option<E>) {
    match kind {
        ScanKind::Inclusive => (true, None),
        ScanKind::Exclusive => (false, None),
        ScanKind::ExclusiveWithInit(init) => (false, Some(init)),
    }
}

fn combine_opt<Op: ScanOp>(a: Option<Op::Element>, b: Op::Element) -> Op::Element {
    match a {
        Some(a) => Op::combine(a, b),
        None => b,
    }
}

/// Scans `data[k]` (element `offset + k` of the sequence) in place, starting
/// with `carry` (the open segment's seeded partial, `None`: nothing).
fn run<Op: ScanOp>(
    inclusive: bool,
    init: Option<Op::Element>,
    heads: HeadFlags<'_>,
    offset: usize,
    carry: Option<Op::Element>,
    data: &mut [Op::Element],
) {
    let mut running = carry;
    for (k, slot) in data.iter_mut().enumerate() {
        if heads.is_head(offset + k) {
            running = init;
        }
        let next = combine_opt::<Op>(running, *slot);
        *slot = if inclusive {
            next
        } else {
            running.unwrap_or(Op::IDENTITY)
        };
        running = Some(next);
    }
}

/// A chunk's lifted total: whether it holds a head, and the seeded partial of
/// its last segment (`None` for an empty chunk).
fn chunk_total<Op: ScanOp>(
    init: Option<Op::Element>,
    heads: HeadFlags<'_>,
    offset: usize,
    chunk: &[Op::Element],
) -> (bool, Option<Op::Element>) {
    let mut has_head = false;
    let mut total = None;
    for (k, x) in chunk.iter().enumerate() {
        if heads.is_head(offset + k) {
            has_head = true;
            total = init;
        }
        total = Some(combine_opt::<Op>(total, *x));
    }
    (has_head, total)
}

/// Sequential segmented scan of `input` into `output`.
pub fn scan<Op: ScanOp>(
    kind: ScanKind<Op::Element>,
    heads: HeadFlags<'_>,
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
    heads.check_len(input.len())?;
    output.copy_from_slice(input);
    let (inclusive, init) = seed_of(kind);
    run::<Op>(inclusive, init, heads, 0, None, output);
    Ok(())
}

/// Sequential segmented scan of `data` in place.
pub fn scan_in_place<Op: ScanOp>(
    kind: ScanKind<Op::Element>,
    heads: HeadFlags<'_>,
    data: &mut [Op::Element],
) -> Result<(), FlagsLengthMismatch> {
    heads.check_len(data.len())?;
    let (inclusive, init) = seed_of(kind);
    run::<Op>(inclusive, init, heads, 0, None, data);
    Ok(())
}

/// Segmented scan of `input` into `output` on all cores.
pub fn par_scan<Op: ScanOp>(
    kind: ScanKind<Op::Element>,
    heads: HeadFlags<'_>,
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
    heads.check_len(input.len())?;
    output.par_iter_mut().zip(input).for_each(|(o, i)| *o = *i);
    par_scan_in_place::<Op>(kind, heads, output)?;
    Ok(())
}

/// Segmented scan of `data` in place on all cores: chunk totals of the
/// operator lifted to (head, value) pairs, their exclusive scan, and a
/// seeded rescan of every chunk (the GPU's structure).
pub fn par_scan_in_place<Op: ScanOp>(
    kind: ScanKind<Op::Element>,
    heads: HeadFlags<'_>,
    data: &mut [Op::Element],
) -> Result<(), FlagsLengthMismatch> {
    heads.check_len(data.len())?;
    let (inclusive, init) = seed_of(kind);
    let len = crate::cpu::chunk_len(data.len());
    let totals: Vec<_> = data
        .par_chunks(len)
        .enumerate()
        .map(|(c, chunk)| chunk_total::<Op>(init, heads, c * len, chunk))
        .collect();
    // Exclusive scan of the lifted totals: (f1, v1) ⊕ (f2, v2) = (f1 | f2, f2 ? v2 : v1 ∘ v2).
    let mut carries = Vec::with_capacity(totals.len());
    let mut running: Option<Op::Element> = None;
    for (has_head, total) in totals {
        carries.push(running);
        running = match (has_head, total) {
            (true, t) => t,
            (false, Some(t)) => Some(combine_opt::<Op>(running, t)),
            (false, None) => running,
        };
    }
    data.par_chunks_mut(len)
        .zip(carries)
        .enumerate()
        .for_each(|(c, (chunk, carry))| run::<Op>(inclusive, init, heads, c * len, carry, chunk));
    Ok(())
}
