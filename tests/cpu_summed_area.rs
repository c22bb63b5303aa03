//! Property tests of the CPU two-dimensional scans
//! (`gpu_scan::summed_area`), the oracle of the GPU's, and of the
//! commutativity that lets the GPU scan them in tiles:
//!
//! * every output equals its definition: the rectangle from the first row
//!   and column (to the last ones in reverse; strictly before when
//!   exclusive) folded in memory order, the initial value first in scan
//!   order (in front going forward, at the end in reverse), for
//!   every kind and direction, on non-commutative operators (affine maps,
//!   "keep the right one"), where any other order gives another answer;
//! * parallel equals sequential and in place equals out of place;
//! * bad shapes are typed errors that write nothing;
//! * `ScanOp::COMMUTATIVE` is true for every built-in operator and for
//!   `commutative = true`, false by default, and `check_laws` and
//!   `check_associativity` refuse an operator that claims it falsely.

mod common;
use common::ops::*;
use common::specs::*;
use common::verb::ViaScanner;
use gpu_scan::ops::{BitXor, Max, Min, Or, Product, Sum};
use gpu_scan::prelude::*;
use gpu_scan::segmented::{RowLengthMismatch, SegmentedError};
use gpu_scan::{check_associativity, check_laws, summed_area, Counterexample};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

type Rng64 = rand::rngs::StdRng;

/// The definition, element by element.
fn by_rectangles<Op: ScanOp>(
    spec: ScanSpec<Op::Element>,
    cols: usize,
    input: &[Op::Element],
) -> Vec<Op::Element> {
    let rows = input.len() / cols;
    let (inclusive, seed) = match spec.kind {
        ScanKind::Inclusive => (true, None),
        ScanKind::Exclusive => (false, None),
        ScanKind::InclusiveWithInit(init) => (true, Some(init)),
        ScanKind::ExclusiveWithInit(init) => (false, Some(init)),
        _ => unimplemented!("a scan kind this oracle does not know"),
    };
    let reverse = spec.is_reverse();
    let mut out = vec![Op::IDENTITY; input.len()];
    for r in 0..rows {
        for c in 0..cols {
            // Rows and columns of the rectangle, in memory order.
            let (row_range, col_range) = match (reverse, inclusive) {
                (false, true) => (0..r + 1, 0..c + 1),
                (false, false) => (0..r, 0..c),
                (true, true) => (r..rows, c..cols),
                (true, false) => (r + 1..rows, c + 1..cols),
            };
            // The initial value comes first in scan order: in front going
            // forward, at the end (in memory order) in reverse.
            let mut acc = if reverse {
                Op::IDENTITY
            } else {
                seed.unwrap_or(Op::IDENTITY)
            };
            for rr in row_range {
                for cc in col_range.clone() {
                    acc = Op::combine(acc, input[rr * cols + cc]);
                }
            }
            if reverse {
                acc = Op::combine(acc, seed.unwrap_or(Op::IDENTITY));
            }
            out[r * cols + c] = acc;
        }
    }
    out
}

fn check<Op: ViaScanner>(rows: usize, cols: usize, input: &[Op::Element], init: Op::Element)
where
    Op::Element: PartialEq + std::fmt::Debug,
{
    for spec in all_specs(init) {
        let want = by_rectangles::<Op>(spec, cols, input);
        let label = format!("{rows} × {cols}, {spec:?}");
        let mut out = vec![Op::IDENTITY; input.len()];
        summed_area::scan::<Op>(spec, cols, input, &mut out).unwrap();
        assert!(out == want, "{label}: scan");
        let mut out = vec![Op::IDENTITY; input.len()];
        summed_area::par_scan::<Op>(spec, cols, input, &mut out).unwrap();
        assert!(out == want, "{label}: par_scan");
        let mut data = input.to_vec();
        summed_area::scan_in_place::<Op>(spec, cols, &mut data).unwrap();
        assert!(data == want, "{label}: scan_in_place");
        let mut data = input.to_vec();
        summed_area::par_scan_in_place::<Op>(spec, cols, &mut data).unwrap();
        assert!(data == want, "{label}: par_scan_in_place");
        // The one verb, with the shape in the spec (the CPU backend).
        let got = Op::via_scanner(spec.summed_area(cols), input);
        assert!(got.is_none_or(|got| got == want), "{label}: Scanner::scan");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn every_output_folds_its_rectangle_in_memory_order(rows in 0usize..14, cols in 1usize..14, seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let n = rows * cols;
        let affine: Vec<AffineU32> = (0..n).map(|_| AffineU32 { a: rng.random(), b: rng.random() }).collect();
        check::<AffineU32>(rows, cols, &affine, AffineU32 { a: 3, b: 7 });
        let latest: Vec<Latest> = (0..n).map(|_| random_latest(&mut rng, 0.3)).collect();
        check::<Latest>(rows, cols, &latest, Latest { valid: true, value: 5 });
    }
}

#[test]
fn large_matrices_agree_between_the_sequential_and_parallel_scans() {
    let mut rng = Rng64::seed_from_u64(0x5a7);
    for (rows, cols) in [(700, 300), (3, 70_000), (70_000, 3)] {
        let input: Vec<AffineU32> = (0..rows * cols)
            .map(|_| AffineU32 {
                a: rng.random(),
                b: rng.random(),
            })
            .collect();
        for spec in all_specs(AffineU32 { a: 5, b: 1 }) {
            let mut seq = vec![AffineU32 { a: 0, b: 0 }; input.len()];
            summed_area::scan::<AffineU32>(spec, cols, &input, &mut seq).unwrap();
            let mut par = input.clone();
            summed_area::par_scan_in_place::<AffineU32>(spec, cols, &mut par).unwrap();
            assert!(seq == par, "{rows} × {cols}, {spec:?}");
        }
    }
}

#[test]
fn bad_shapes_are_typed_errors_that_write_nothing() {
    let input = [1u32, 2, 3, 4, 5, 6];
    for (len, cols) in [(6, 0), (6, 4), (6, 7), (0, 0)] {
        let want = SegmentedError::Rows(RowLengthMismatch {
            elements: len,
            row_length: cols,
        });
        let mut out = [99u32; 6];
        let err =
            summed_area::scan::<SumU32>(ScanKind::Inclusive, cols, &input[..len], &mut out[..len])
                .unwrap_err();
        assert_eq!(err, want);
        let err =
            summed_area::par_scan_in_place::<SumU32>(ScanKind::Exclusive, cols, &mut out[..len])
                .unwrap_err();
        assert_eq!(err, want);
        assert_eq!(out, [99; 6]);
        #[cfg(feature = "gpu")]
        {
            let err = Scanner::<SumU32>::cpu()
                .scan(ScanSpec::inclusive().summed_area(cols), &input[..len])
                .unwrap_err();
            assert!(
                matches!(err, ScanError::RowLength(e) if e == RowLengthMismatch { elements: len, row_length: cols }),
                "{err:?}"
            );
        }
    }
    let mut out = [99u32; 4];
    let err =
        summed_area::par_scan::<SumU32>(ScanKind::Inclusive, 2, &input, &mut out).unwrap_err();
    assert!(matches!(err, SegmentedError::Length(_)), "{err:?}");
    assert_eq!(out, [99; 4]);
}

/// Claims to commute, and does not: x - y.
#[scan_op(element = i64, identity = 0, op = |a, b| a.wrapping_sub(b), commutative = true)]
struct FalselyCommutative;

/// Componentwise minimum and count, declared commutative.
#[scan_op(
    identity = MinCount { min: u32::MAX, count: 0 },
    op = |x, y| MinCount { min: x.min.min(y.min), count: x.count + y.count },
    commutative = true
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MinCount {
    min: u32,
    count: u32,
}

/// The same, not declared.
#[scan_op(
    identity = MinCount2 { min: u32::MAX, count: 0 },
    op = |x, y| MinCount2 { min: x.min.min(y.min), count: x.count + y.count }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MinCount2 {
    min: u32,
    count: u32,
}

#[test]
fn commutativity_is_declared_and_checked() {
    const {
        assert!(<Sum<u32> as ScanOp>::COMMUTATIVE);
        assert!(<Sum<f64> as ScanOp>::COMMUTATIVE);
        assert!(<Product<i8> as ScanOp>::COMMUTATIVE);
        assert!(<Min<f32> as ScanOp>::COMMUTATIVE);
        assert!(<Max<u16> as ScanOp>::COMMUTATIVE);
        assert!(<BitXor<u64> as ScanOp>::COMMUTATIVE);
        assert!(<Or<bool> as ScanOp>::COMMUTATIVE);
        assert!(<MinCount as ScanOp>::COMMUTATIVE);
        assert!(!<MinCount2 as ScanOp>::COMMUTATIVE);
        assert!(!<SumU32 as ScanOp>::COMMUTATIVE);
        assert!(!<AffineU32 as ScanOp>::COMMUTATIVE);
    }
    // A false claim: x - y is not associative either, so the sample is
    // chosen to pass associativity's check (a, 0, 0) and fail on the pair
    // (a, 0) only.
    let err = check_laws::<FalselyCommutative>(&[5, 0, 0]).unwrap_err();
    assert!(
        matches!(err, Counterexample::NotCommutative { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("commutative"), "{err}");
    let mut values = [5i64, 0, 0].into_iter().cycle();
    let err =
        check_associativity::<FalselyCommutative>(|| values.next().unwrap(), 1, |a, b| a == b)
            .unwrap_err();
    assert!(
        matches!(err, Counterexample::NotCommutative { .. }),
        "{err:?}"
    );
    // A true claim passes, and the same operator undeclared is not asked.
    let sample: Vec<MinCount> = (0..50)
        .map(|i| MinCount {
            min: (i * 7919) % 101,
            count: i,
        })
        .collect();
    check_laws::<MinCount>(&sample).unwrap();
}
