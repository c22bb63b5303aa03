//! What a scan computes: its [`ScanKind`] and its [`Direction`], together a
//! [`ScanSpec`]. Every scan entry point (CPU, GPU, plain, segmented) takes
//! `impl Into<ScanSpec<E>>`, so a bare [`ScanKind`] still reads as a forward
//! scan of that kind.
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

use crate::cpu::ScanKind;
pub use kernels_gen::Direction;

/// A scan's kind and direction.
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
pub struct ScanSpec<E> {
    /// Inclusive, exclusive, or exclusive from an initial value.
    pub kind: ScanKind<E>,
    /// Forward (prefix) or reverse (suffix).
    pub direction: Direction,
}

impl<E> ScanSpec<E> {
    /// A forward scan of `kind`.
    pub const fn new(kind: ScanKind<E>) -> Self {
        ScanSpec {
            kind,
            direction: Direction::Forward,
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
