//! The laws a scan relies on, checked on real data without help from the
//! user: [`check_laws`].
//!
//! A scan regroups `combine` freely (tiles, warps, the CPU's chunks) and
//! seeds tiles with the identity, so an operator that is not associative, or
//! an `IDENTITY` that is not one, gives answers that depend on the backend
//! and the input length. The compiler cannot see either mistake.
//! [`check_associativity`](crate::check_associativity) takes a sampler and
//! an equality of your choosing; [`check_laws`] needs neither: it compares
//! elements scalar by scalar through [`ScanElement::for_each_lane`], so it
//! works for every element type `#[scan_op]` accepts. `Scanner` and
//! `GpuScanner` run it on the first call's data in debug builds.
//!
//! ```
//! use gpu_scan::prelude::*;
//! use gpu_scan::laws::check_laws;
//!
//! #[scan_op(element = i64, identity = 0, op = |a, b| a - b)]  // not associative
//! struct Minus;
//! #[scan_op(element = f32, identity = 0.0, op = |a, b| a.min(b))]  // 0 is no identity for min
//! struct BadMin;
//! #[scan_op(element = f32, identity = f32::INFINITY, op = |a, b| a.min(b))]
//! struct Min;
//!
//! let data: Vec<i64> = (1..=40).collect();
//! let err = check_laws::<Minus>(&data).unwrap_err();
//! println!("{err}");   // operator is not associative: a = [1] b = [2] c = [3] …
//! let floats: Vec<f32> = (1..=40).map(|i| i as f32 * 0.25).collect();
//! assert!(matches!(check_laws::<BadMin>(&floats), Err(Counterexample::NotAnIdentity { .. })));
//! assert!(check_laws::<Min>(&floats).is_ok());
//! ```

use crate::{Counterexample, ScanElement, ScanOp};
use std::fmt;

/// One scalar of an element, as [`ScanElement::for_each_lane`] reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lane {
    /// Any integer (`u8` to `u64`, `i8` to `i64`), widened.
    Int(i128),
    /// A `bool`.
    Bool(bool),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lane::Int(v) => write!(f, "{v}"),
            Lane::Bool(v) => write!(f, "{v}"),
            Lane::F32(v) => write!(f, "{v:?}"),
            Lane::F64(v) => write!(f, "{v:?}"),
        }
    }
}

/// An element as its scalars, in field order: what a [`Counterexample`] of
/// [`check_laws`] shows (`[1.5, -2, true]`), for element types without
/// `Debug`.
#[derive(Clone, PartialEq)]
pub struct Lanes(pub Vec<Lane>);

impl Lanes {
    /// The scalars of `value`.
    pub fn of<E: ScanElement>(value: &E) -> Self {
        let mut lanes = Vec::new();
        value.for_each_lane(&mut |lane| lanes.push(lane));
        Lanes(lanes)
    }
}

impl fmt::Debug for Lanes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, lane) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{lane}")?;
        }
        f.write_str("]")
    }
}

/// How far apart two float results of the same scalar may be, in units of
/// the type's epsilon times the largest magnitude that scalar takes among
/// the values involved. Regrouping a sum of three terms moves it by at most
/// about 3 epsilons of the largest; products and affine compositions of
/// three operands by a few epsilons of their terms. 2^13 epsilons (about
/// 1e-3 relative for `f32`) leaves room for cancellation while an operator
/// that is not associative at all (a difference, an average) or a wrong
/// identity is off by a large fraction of its operands.
const FLOAT_SLACK_EPSILONS: f64 = 8192.0;

/// Whether two results agree: integers and bools exactly; floats within
/// [`FLOAT_SLACK_EPSILONS`] of the largest finite magnitude the scalar has
/// in `context` (the operands and intermediate results). A NaN or an
/// infinity on either side says nothing (overflow and NaN propagation
/// depend on the grouping of lawful operators too), so it agrees.
fn lanes_agree(left: &Lanes, right: &Lanes, context: &[&Lanes]) -> bool {
    left.0.iter().zip(&right.0).enumerate().all(|(k, pair)| {
        let scale = |v: f64| -> f64 {
            context
                .iter()
                .filter_map(|c| match c.0.get(k) {
                    Some(Lane::F32(x)) => Some(f64::from(*x).abs()),
                    Some(Lane::F64(x)) => Some(x.abs()),
                    _ => None,
                })
                .filter(|m| m.is_finite())
                .fold(v, f64::max)
        };
        match pair {
            (Lane::F32(l), Lane::F32(r)) => {
                let (l, r) = (f64::from(*l), f64::from(*r));
                !l.is_finite()
                    || !r.is_finite()
                    || (l - r).abs()
                        <= FLOAT_SLACK_EPSILONS
                            * (f64::from(f32::EPSILON) * scale(l.abs().max(r.abs()))
                                + f64::from(f32::MIN_POSITIVE))
            }
            (Lane::F64(l), Lane::F64(r)) => {
                !l.is_finite()
                    || !r.is_finite()
                    || (l - r).abs()
                        <= FLOAT_SLACK_EPSILONS
                            * (f64::EPSILON * scale(l.abs().max(r.abs())) + f64::MIN_POSITIVE)
            }
            (l, r) => l == r,
        }
    }) && left.0.len() == right.0.len()
}

/// Checks associativity and the identity law on values from `sample`
/// (typically the data about to be scanned): every three consecutive values
/// `a, b, c` must give `(a ∘ b) ∘ c == a ∘ (b ∘ c)` (checked first), and
/// every value `identity ∘ a == a ∘ identity == a`; for an operator that
/// says it is [`ScanOp::COMMUTATIVE`], every two consecutive values
/// `a ∘ b == b ∘ a`.
///
/// Integers and bools are compared exactly; floats up to rounding (within
/// about 1e-3 of the largest magnitude involved for `f32`, 2e-12 for `f64`;
/// results that overflow or are NaN are not judged). This catches operators
/// that are not associative at all and identities that are not identities;
/// it cannot prove the laws, and it cannot see a law broken only by values
/// absent from `sample`. Cheap: three `combine` calls per value.
pub fn check_laws<Op: ScanOp>(sample: &[Op::Element]) -> Result<(), Counterexample<Lanes>> {
    for w in sample.windows(3) {
        let (a, b, c) = (w[0], w[1], w[2]);
        let (ab, bc) = (Op::combine(a, b), Op::combine(b, c));
        let (left, right) = (Op::combine(ab, c), Op::combine(a, bc));
        let lanes = [a, b, c, ab, bc, left, right].map(|v| Lanes::of(&v));
        if !lanes_agree(&lanes[5], &lanes[6], &lanes.each_ref()) {
            let [a, b, c, _, _, left, right] = lanes;
            return Err(Counterexample::NotAssociative {
                a,
                b,
                c,
                left,
                right,
            });
        }
    }
    if Op::COMMUTATIVE {
        for w in sample.windows(2) {
            let (a, b) = (w[0], w[1]);
            let (ab, ba) = (Op::combine(a, b), Op::combine(b, a));
            let lanes = [a, b, ab, ba].map(|v| Lanes::of(&v));
            if !lanes_agree(&lanes[2], &lanes[3], &lanes.each_ref()) {
                let [a, b, left, right] = lanes;
                return Err(Counterexample::NotCommutative { a, b, left, right });
            }
        }
    }
    let identity = Lanes::of(&Op::IDENTITY);
    for a in sample {
        let (l, r) = (Op::combine(Op::IDENTITY, *a), Op::combine(*a, Op::IDENTITY));
        let (a, l, r) = (Lanes::of(a), Lanes::of(&l), Lanes::of(&r));
        let context = [&a, &l, &r, &identity];
        if !lanes_agree(&l, &a, &context) || !lanes_agree(&r, &a, &context) {
            return Err(Counterexample::NotAnIdentity {
                a,
                left: l,
                right: r,
            });
        }
    }
    Ok(())
}

/// Elements of one run of [`sample_ranges`].
const SAMPLE_RUN: usize = 16;

/// Where to sample `count` elements of a sequence of `len`: runs of 16
/// consecutive elements spread evenly from its start to its end (so
/// [`check_laws`] sees neighbours, as a scan combines them, and values from
/// every part of the input); the whole sequence when it is that short.
pub fn sample_ranges(len: usize, count: usize) -> Vec<std::ops::Range<usize>> {
    if len <= count.max(SAMPLE_RUN) {
        return std::iter::once(0..len).collect();
    }
    let runs = (count / SAMPLE_RUN).max(1);
    let last_start = len - SAMPLE_RUN;
    (0..runs)
        .map(|r| match runs {
            1 => 0,
            _ => (r as u128 * last_start as u128 / (runs - 1) as u128) as usize,
        })
        .map(|start| start..start + SAMPLE_RUN)
        .collect()
}

/// The elements of `data` at [`sample_ranges`]`(data.len(), count)`.
pub fn sample<E: Copy>(data: &[E], count: usize) -> Vec<E> {
    sample_ranges(data.len(), count)
        .into_iter()
        .flat_map(|r| data[r].iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_ranges_cover_both_ends_without_overlap() {
        assert_eq!(
            sample_ranges(0, 96),
            std::iter::once(0..0).collect::<Vec<_>>()
        );
        assert_eq!(
            sample_ranges(50, 96),
            std::iter::once(0..50).collect::<Vec<_>>()
        );
        let r = sample_ranges(1000, 96);
        assert_eq!(r.len(), 6);
        assert_eq!(r[0], 0..16);
        assert_eq!(r[5], 984..1000);
        assert!(r.windows(2).all(|w| w[0].end <= w[1].start));
        assert_eq!(
            sample_ranges(1 << 40, 96).last(),
            Some(&((1 << 40) - 16..1 << 40))
        );
    }

    #[test]
    fn float_lanes_agree_up_to_rounding_only() {
        let l = |v: f32| Lanes(vec![Lane::F32(v)]);
        let (a, b) = (l(1.0), l(1.0 + 4.0 * f32::EPSILON));
        assert!(lanes_agree(&a, &b, &[&a, &b]));
        let c = l(1.01);
        assert!(!lanes_agree(&a, &c, &[&a, &c]));
        let (inf, nan) = (l(f32::INFINITY), l(f32::NAN));
        assert!(lanes_agree(&a, &inf, &[&a]) && lanes_agree(&nan, &a, &[&a]));
        let i = |v: i128| Lanes(vec![Lane::Int(v)]);
        assert!(!lanes_agree(&i(5), &i(6), &[]));
    }
}
