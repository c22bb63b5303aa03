//! What a scan computes: its [`ScanKind`], its [`Direction`] and where its
//! carry-out goes, together a [`ScanSpec`]. Every scan entry point (CPU,
//! GPU, plain, segmented) takes `impl Into<ScanSpec<E, C>>`, so a bare
//! [`ScanKind`] still reads as a forward scan of that kind with no
//! carry-out.
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
//! element. For a plain scan that is the seed (an
//! [`ExclusiveWithInit`](ScanKind::ExclusiveWithInit) scan's `init`, or
//! the identity) combined with every element; for a segmented scan, the
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
//! cpu::scan::<Sum>(ScanSpec::exclusive_with_init(carry), &[4, 5, 6], &mut second).unwrap();
//! assert_eq!((first, second), ([1, 3, 6], [6, 10, 15]));
//! ```

use crate::cpu::ScanKind;
pub use kernels_gen::Direction;

/// A scan's kind, direction and carry-out slot (`C`: [`NoCarryOut`], or
/// where the backend writes the carry-out, see the [module docs](self)).
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
pub struct ScanSpec<E, C = NoCarryOut> {
    /// Inclusive, exclusive, or exclusive from an initial value.
    pub kind: ScanKind<E>,
    /// Forward (prefix) or reverse (suffix).
    pub direction: Direction,
    /// Where the carry-out goes: [`NoCarryOut`], a `&mut E` on the CPU, a
    /// one-element device buffer on the GPU.
    pub carry_out: C,
}

/// A scan without a carry-out (a [`ScanSpec`]'s default slot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoCarryOut;

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

impl<E> ScanSpec<E> {
    /// A forward scan of `kind`.
    pub const fn new(kind: ScanKind<E>) -> Self {
        ScanSpec {
            kind,
            direction: Direction::Forward,
            carry_out: NoCarryOut,
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
}

impl<E, C> ScanSpec<E, C> {
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
    pub fn carry_out<S>(self, slot: S) -> ScanSpec<E, S> {
        ScanSpec {
            kind: self.kind,
            direction: self.direction,
            carry_out: slot,
        }
    }

    /// The spec without its carry-out slot, and the slot.
    pub fn split_carry_out(self) -> (ScanSpec<E>, C) {
        let spec = ScanSpec {
            kind: self.kind,
            direction: self.direction,
            carry_out: NoCarryOut,
        };
        (spec, self.carry_out)
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
/// scan without carry-out) or a [`ScanSpec`]. The carry-out slot's type is
/// an associated type, so entry points keep one generic parameter (the
/// operator) and `cpu::scan::<Op>(…)` still names it alone.
pub trait IntoScanSpec<E> {
    /// Where the carry-out goes ([`NoCarryOut`] for none).
    type Carry;
    /// The spec.
    fn into_spec(self) -> ScanSpec<E, Self::Carry>;
}

impl<E, C> IntoScanSpec<E> for ScanSpec<E, C> {
    type Carry = C;
    fn into_spec(self) -> ScanSpec<E, C> {
        self
    }
}

impl<E> IntoScanSpec<E> for ScanKind<E> {
    type Carry = NoCarryOut;
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
