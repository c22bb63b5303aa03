//! Spot checks of the laws a scan relies on.
//!
//! Associativity cannot be proven by the macro. [`check_associativity`]
//! tries random triples (and the identity law) and returns the first
//! counterexample, which prints all the values involved.
//!
//! ```
//! use gpu_scan::prelude::*;
//!
//! #[scan_op(element = i32, identity = 0, op = |a, b| a - b)]  // not associative!
//! struct Minus;
//!
//! let mut state = 1u32;
//! let mut sample = move || { state = state.wrapping_mul(1664525).wrapping_add(1013904223); (state >> 16) as i32 };
//! let err = check_associativity::<Minus>(&mut sample, 100, |a, b| a == b).unwrap_err();
//! println!("{err}");
//! ```

use crate::ScanOp;
use std::fmt;

/// Values that break associativity or the identity law.
#[derive(Clone, Debug, PartialEq)]
pub enum Counterexample<E> {
    /// `(a ∘ b) ∘ c != a ∘ (b ∘ c)`.
    NotAssociative {
        /// First operand.
        a: E,
        /// Second operand.
        b: E,
        /// Third operand.
        c: E,
        /// `(a ∘ b) ∘ c`
        left: E,
        /// `a ∘ (b ∘ c)`
        right: E,
    },
    /// `a ∘ b != b ∘ a` for an operator that says it is commutative
    /// ([`ScanOp::COMMUTATIVE`]).
    NotCommutative {
        /// First operand.
        a: E,
        /// Second operand.
        b: E,
        /// `a ∘ b`
        left: E,
        /// `b ∘ a`
        right: E,
    },
    /// `identity ∘ a != a` or `a ∘ identity != a`.
    NotAnIdentity {
        /// The element.
        a: E,
        /// `identity ∘ a`
        left: E,
        /// `a ∘ identity`
        right: E,
    },
}

impl<E: fmt::Debug> fmt::Display for Counterexample<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Counterexample::NotAssociative { a, b, c, left, right } => write!(
                f,
                "operator is not associative:\n  a = {a:?}\n  b = {b:?}\n  c = {c:?}\n  (a ∘ b) ∘ c = {left:?}\n  a ∘ (b ∘ c) = {right:?}"
            ),
            Counterexample::NotCommutative { a, b, left, right } => write!(
                f,
                "operator says it is commutative and is not:\n  a = {a:?}\n  b = {b:?}\n  a ∘ b = {left:?}\n  b ∘ a = {right:?}"
            ),
            Counterexample::NotAnIdentity { a, left, right } => write!(
                f,
                "IDENTITY is not an identity:\n  a = {a:?}\n  identity ∘ a = {left:?}\n  a ∘ identity = {right:?}"
            ),
        }
    }
}

impl<E: fmt::Debug> std::error::Error for Counterexample<E> {}

/// Tries `trials` random triples from `sample` (and, for an operator that
/// says it is [`ScanOp::COMMUTATIVE`], pairs in both orders), comparing with `equal`
/// (exact equality for integers; a tolerance of your choosing for floats,
/// whose rounding makes most float operators only approximately associative).
pub fn check_associativity<Op: ScanOp>(
    mut sample: impl FnMut() -> Op::Element,
    trials: usize,
    mut equal: impl FnMut(&Op::Element, &Op::Element) -> bool,
) -> Result<(), Counterexample<Op::Element>>
where
    Op::Element: fmt::Debug,
{
    for _ in 0..trials {
        let (a, b, c) = (sample(), sample(), sample());
        let left = Op::combine(Op::combine(a, b), c);
        let right = Op::combine(a, Op::combine(b, c));
        if !equal(&left, &right) {
            return Err(Counterexample::NotAssociative {
                a,
                b,
                c,
                left,
                right,
            });
        }
        if Op::COMMUTATIVE {
            let (left, right) = (Op::combine(a, b), Op::combine(b, a));
            if !equal(&left, &right) {
                return Err(Counterexample::NotCommutative { a, b, left, right });
            }
        }
        let (l, r) = (Op::combine(Op::IDENTITY, a), Op::combine(a, Op::IDENTITY));
        if !equal(&l, &a) || !equal(&r, &a) {
            return Err(Counterexample::NotAnIdentity {
                a,
                left: l,
                right: r,
            });
        }
    }
    Ok(())
}
