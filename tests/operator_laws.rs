//! `check_laws` and the first-call check of the backends: lawful test
//! operators pass on the data their GPU tests scan (so the debug-build
//! check never rejects a good operator there), broken ones are caught with
//! their values, and `Scanner` refuses the first call of a broken operator
//! in debug builds without producing an answer.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::{random_input, Case};
use common::ops::*;
use gpu_scan::laws::{check_laws, sample, sample_ranges, Lane, Lanes};
use gpu_scan::prelude::*;

/// Subtraction: not associative.
#[scan_op(element = i64, identity = 0, op = |a, b| a - b)]
struct Minus;

/// The average of two floats: commutative, not associative.
#[scan_op(element = f32, identity = 0.0, op = |a, b| (a + b) * 0.5)]
struct Average;

/// Min with 0 as its identity: associative, but 0 is no identity for
/// positive data (`min(0, 5) == 0`). A CPU inclusive scan never combines
/// with the identity, so only this check (or the GPU) would tell.
#[scan_op(element = i64, identity = 0, op = |a, b| a.min(b))]
struct MinFromZero;

/// Float sums: associative only up to rounding, which the check allows.
#[scan_op(element = f32, identity = 0.0, op = |a, b| a + b)]
struct SumF32;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("LAWS_SEED");
    println!("operator_laws: seed {seed} (LAWS_SEED={seed} repeats it)");
    seed
}

fn lawful_on_gpu_test_data<Op: Case>(seed: u64) {
    for n in [1, 2, 3, 17, 96, 1000, 100_000] {
        let data = random_input::<Op>(n, seed ^ n as u64);
        if let Err(e) = check_laws::<Op>(&sample(&data, 4096)) {
            panic!("{}: n = {n}, seed {seed}: {e}", Op::NAME);
        }
    }
}

#[test]
fn the_test_operators_pass_on_the_data_their_gpu_tests_scan() {
    let seed = seed();
    lawful_on_gpu_test_data::<SumU32>(seed);
    lawful_on_gpu_test_data::<MaxF32>(seed);
    lawful_on_gpu_test_data::<MinI64>(seed);
    lawful_on_gpu_test_data::<Affine>(seed);
    lawful_on_gpu_test_data::<Stats>(seed);
    lawful_on_gpu_test_data::<Mat2>(seed);
    lawful_on_gpu_test_data::<AffineU32>(seed);
    lawful_on_gpu_test_data::<Latest>(seed);
    lawful_on_gpu_test_data::<SumU8>(seed);
    lawful_on_gpu_test_data::<JoinSpans>(seed);
    lawful_on_gpu_test_data::<SumU32Small>(seed);
    lawful_on_gpu_test_data::<Pairs>(seed);
    lawful_on_gpu_test_data::<SaturatingLanes>(seed);
}

#[test]
fn float_rounding_passes_and_non_finite_results_are_not_judged() {
    // Sums of values of very different magnitudes regroup with rounding
    // errors of a few epsilons of the largest term.
    let data: Vec<f32> = (0..300)
        .map(|i| match i % 3 {
            0 => 1e8,
            1 => -1e8 + 3.0,
            _ => 0.1 * i as f32,
        })
        .collect();
    check_laws::<SumF32>(&data).unwrap();
    // Overflow to infinity in one grouping only, and NaN inputs.
    let wild = [
        f32::MAX,
        f32::MAX,
        -f32::MAX,
        f32::NAN,
        1.0,
        f32::INFINITY,
        2.0,
    ];
    check_laws::<SumF32>(&wild).unwrap();
    check_laws::<MaxF32>(&wild).unwrap();
}

#[test]
fn broken_operators_are_caught_with_their_values() {
    let ints: Vec<i64> = (1..=50).collect();
    let err = check_laws::<Minus>(&ints).unwrap_err();
    assert_eq!(
        err,
        Counterexample::NotAssociative {
            a: Lanes(vec![Lane::Int(1)]),
            b: Lanes(vec![Lane::Int(2)]),
            c: Lanes(vec![Lane::Int(3)]),
            left: Lanes(vec![Lane::Int(-4)]),
            right: Lanes(vec![Lane::Int(2)]),
        }
    );
    assert!(err.to_string().contains("a = [1]"), "{err}");

    let floats: Vec<f32> = (1..=50).map(|i| i as f32 * 0.5).collect();
    assert!(matches!(
        check_laws::<Average>(&floats),
        Err(Counterexample::NotAssociative { .. })
    ));
    assert!(matches!(
        check_laws::<MinFromZero>(&ints),
        Err(Counterexample::NotAnIdentity { .. })
    ));
    // MinFromZero is lawful where no value is positive.
    let negative: Vec<i64> = (-50..=0).collect();
    check_laws::<MinFromZero>(&negative).unwrap();

    // A non-canonical "nothing" breaks the identity law of keep-the-right-one.
    let stale = [Latest {
        valid: false,
        value: 7,
    }];
    let err = check_laws::<Latest>(&stale).unwrap_err();
    assert!(err.to_string().contains("[false, 7]"), "{err}");
}

#[test]
fn lanes_follow_the_field_order() {
    let joined = Joined {
        span: Span16 { first: -3, last: 9 },
        joins: 4,
        empty: false,
    };
    assert_eq!(
        Lanes::of(&joined).0,
        [Lane::Int(-3), Lane::Int(9), Lane::Int(4), Lane::Bool(false)]
    );
    let m = Mat2 {
        m: [1.0, 2.0, 3.0, 4.0],
    };
    assert_eq!(
        Lanes::of(&m).0,
        [1.0f32, 2.0, 3.0, 4.0].map(Lane::F32).to_vec()
    );
    let stats = Stats {
        count: 2,
        sum: 0.5,
        max: -1.0,
    };
    assert_eq!(
        Lanes::of(&stats).0,
        [Lane::Int(2), Lane::F64(0.5), Lane::F32(-1.0)]
    );
}

#[test]
fn samples_come_from_the_whole_input() {
    let data: Vec<u32> = (0..10_000).collect();
    let s = sample(&data, 96);
    assert_eq!(s.len(), 96);
    assert_eq!((s[0], s[95]), (0, 9_999));
    assert_eq!(sample_ranges(10_000, 96).len(), 6);
}

#[test]
fn scanner_refuses_the_first_call_of_a_broken_operator_in_debug_builds() {
    let data: Vec<i64> = (1..=1000).collect();
    let mut scanner = Scanner::<Minus>::cpu();
    // One call checks in any build.
    assert!(matches!(
        scanner.check_laws(&data),
        Err(ScanError::OperatorLaws { op: "minus", .. })
    ));
    let first = scanner.inclusive(&data);
    if cfg!(debug_assertions) {
        let err = first.unwrap_err();
        assert!(matches!(err, ScanError::OperatorLaws { .. }));
        let text = err.to_string();
        assert!(
            text.contains("not associative") && text.contains("set_law_checks(false)"),
            "{text}"
        );
        // Still refused: nothing was checked successfully.
        assert!(scanner.exclusive(&data).is_err());
    } else {
        first.unwrap();
    }
    // The documented opt-out.
    scanner.set_law_checks(false);
    assert_eq!(scanner.inclusive(&data).unwrap().len(), data.len());

    // A broken identity is caught by segmented scans too.
    let mut scanner = Scanner::<MinFromZero>::cpu();
    let heads = gpu_scan::segmented::HeadFlags::Bytes(&[1, 0, 0, 1, 0]);
    let got = scanner.scan(ScanSpec::inclusive().segments(heads), &[5, 4, 3, 2, 1]);
    assert_eq!(got.is_err(), cfg!(debug_assertions));
}

#[test]
fn scanner_checks_a_lawful_operator_once_and_answers() {
    let mut scanner = Scanner::<SumF32>::new();
    let data: Vec<f32> = (0..5000).map(|i| (i % 7) as f32 * 0.25).collect();
    let out = scanner.inclusive(&data).unwrap();
    assert_eq!(out[6], 0.25 * 21.0);
    // Empty inputs have nothing to check and pass.
    assert!(scanner.inclusive(&[]).unwrap().is_empty());
}
