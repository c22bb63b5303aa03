//! Property tests of the CPU backend and of the operators `#[scan_op]`
//! generates.
//!
//! * The multi-threaded scans equal the sequential ones, bit for bit, for
//!   every kind (inclusive, exclusive, exclusive with init; in place and out
//!   of place) on random inputs and lengths, including lengths well past the
//!   parallel chunk size. Operators are exactly associative here (integers,
//!   `max`), so equality is exact.
//! * The sequential scans equal a direct definition (`out[i]` folded from
//!   scratch) on short inputs, forward and in reverse (suffixes folded in
//!   sequence order, the initial value on the right).
//! * The generated `combine` equals a hand-written version of each operator.

mod common;
use common::ops::*;
use common::specs::*;
use gpu_scan::prelude::*;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn random_vec<T>(
    len: usize,
    seed: u64,
    mut make: impl FnMut(&mut rand::rngs::StdRng) -> T,
) -> Vec<T> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| make(&mut rng)).collect()
}

/// Parallel == sequential, in place == out of place, for every kind.
fn check_parallel_matches_sequential<Op: ScanOp>(input: &[Op::Element], init: Op::Element)
where
    Op::Element: PartialEq + std::fmt::Debug,
{
    for kind in all_specs(init) {
        let mut seq = vec![Op::IDENTITY; input.len()];
        let mut seq_carry = init;
        cpu::scan::<Op>(kind.carry_out(&mut seq_carry), input, &mut seq).unwrap();
        let mut par = vec![Op::IDENTITY; input.len()];
        let mut carry = init;
        cpu::par_scan::<Op>(kind.carry_out(&mut carry), input, &mut par).unwrap();
        assert!(
            seq == par && carry == seq_carry,
            "{kind:?}: parallel scan differs from sequential (n = {})",
            input.len()
        );
        let mut in_place = input.to_vec();
        let mut carry = init;
        cpu::par_scan_in_place::<Op>(kind.carry_out(&mut carry), &mut in_place);
        assert!(
            in_place == seq && carry == seq_carry,
            "{kind:?}: parallel in-place scan differs (n = {})",
            input.len()
        );
        let mut in_place = input.to_vec();
        let mut carry = init;
        cpu::scan_in_place::<Op>(kind.carry_out(&mut carry), &mut in_place);
        assert!(
            in_place == seq && carry == seq_carry,
            "{kind:?}: sequential in-place scan differs (n = {})",
            input.len()
        );
        // Without a carry-out slot the outputs are the same.
        let mut plain = vec![Op::IDENTITY; input.len()];
        cpu::par_scan::<Op>(kind, input, &mut plain).unwrap();
        assert!(
            plain == seq,
            "{kind:?}: a carry-out slot changed the outputs"
        );
    }
}

/// The definition: out[i] is the fold of a prefix, computed from scratch.
fn check_against_definition<Op: ScanOp>(input: &[Op::Element], init: Op::Element)
where
    Op::Element: PartialEq + std::fmt::Debug,
{
    let fold =
        |seed: Op::Element, xs: &[Op::Element]| xs.iter().fold(seed, |acc, x| Op::combine(acc, *x));
    // xs[0] ∘ … ∘ xs[last] ∘ tail.
    let fold_right = |xs: &[Op::Element], tail: Op::Element| {
        xs.iter().rev().fold(tail, |acc, x| Op::combine(*x, acc))
    };
    let n = input.len();
    for kind in all_specs(init) {
        let mut out = vec![Op::IDENTITY; n];
        let mut carry = init;
        cpu::scan::<Op>(kind.carry_out(&mut carry), input, &mut out).unwrap();
        // The carry-out: every element behind the seed, in scan order.
        let seed = match kind.kind {
            ScanKind::ExclusiveWithInit(init) | ScanKind::InclusiveWithInit(init) => init,
            _ => Op::IDENTITY,
        };
        let want_carry = match kind.direction {
            Direction::Forward => fold(seed, input),
            _ => fold_right(input, seed),
        };
        assert_eq!(carry, want_carry, "{kind:?} carry-out");
        for i in 0..n {
            let expected = match (kind.direction, kind.kind) {
                (Direction::Forward, ScanKind::Inclusive) => fold(input[0], &input[1..=i]),
                (Direction::Forward, ScanKind::Exclusive) => fold(Op::IDENTITY, &input[..i]),
                (Direction::Forward, ScanKind::ExclusiveWithInit(init)) => fold(init, &input[..i]),
                (Direction::Forward, ScanKind::InclusiveWithInit(init)) => fold(init, &input[..=i]),
                (_, ScanKind::Inclusive) => fold_right(&input[i..n - 1], input[n - 1]),
                (_, ScanKind::InclusiveWithInit(init)) => fold_right(&input[i..], init),
                (_, ScanKind::Exclusive) => fold_right(&input[i + 1..], Op::IDENTITY),
                (_, ScanKind::ExclusiveWithInit(init)) => fold_right(&input[i + 1..], init),
                _ => unimplemented!("a scan kind this oracle does not know"),
            };
            assert_eq!(out[i], expected, "{kind:?} at {i}");
        }
    }
}

/// A sequence scanned in two chunks, the first's carry-out the second's
/// `init`, equals the sequence scanned at once, and the second's carry-out
/// equals the whole scan's (in reverse, the chunk at the end goes first).
fn check_chunks_chain<Op: ScanOp>(input: &[Op::Element], split: usize, init: Op::Element)
where
    Op::Element: PartialEq + std::fmt::Debug,
{
    let split = split.min(input.len());
    type Seeded<E> = fn(E) -> ScanSpec<E>;
    let seeded: [Seeded<Op::Element>; 2] =
        [ScanSpec::exclusive_with_init, ScanSpec::inclusive_with_init];
    for (direction, seeded) in [Direction::Forward, Direction::Reverse]
        .into_iter()
        .flat_map(|d| seeded.map(|s| (d, s)))
    {
        let whole_spec = seeded(init).with_direction(direction);
        let mut whole = vec![Op::IDENTITY; input.len()];
        let mut whole_carry = Op::IDENTITY;
        cpu::scan::<Op>(whole_spec.carry_out(&mut whole_carry), input, &mut whole).unwrap();
        let (first, second) = match direction {
            Direction::Forward => (0..split, split..input.len()),
            _ => (split..input.len(), 0..split),
        };
        let mut chunked = vec![Op::IDENTITY; input.len()];
        let mut carry = Op::IDENTITY;
        let spec = whole_spec.carry_out(&mut carry);
        cpu::scan::<Op>(spec, &input[first.clone()], &mut chunked[first]).unwrap();
        let spec = seeded(carry).with_direction(direction);
        cpu::par_scan::<Op>(
            spec.carry_out(&mut carry),
            &input[second.clone()],
            &mut chunked[second],
        )
        .unwrap();
        assert!(
            chunked == whole,
            "{direction:?}: chunks chained by carry-outs differ (split {split})"
        );
        assert_eq!(
            carry, whole_carry,
            "{direction:?}: the last chunk's carry-out (split {split})"
        );
    }
}

fn lengths() -> impl Strategy<Value = usize> {
    // Short lengths often, long ones (several parallel chunks) sometimes.
    prop_oneof![3 => 0usize..70, 1 => 60_000usize..200_000]
}

fn affine_u32(rng: &mut rand::rngs::StdRng) -> AffineU32 {
    AffineU32 {
        a: rng.random(),
        b: rng.random(),
    }
}

fn latest(rng: &mut rand::rngs::StdRng) -> Latest {
    random_latest(rng, 0.1)
}

fn joined(rng: &mut rand::rngs::StdRng) -> Joined {
    random_joined(rng, 0.2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn parallel_equals_sequential(len in lengths(), seed in any::<u64>()) {
        check_parallel_matches_sequential::<SumU32>(&random_vec(len, seed, |r| r.random()), 17);
        check_parallel_matches_sequential::<AffineU32>(&random_vec(len, seed, affine_u32), AffineU32 { a: 3, b: 5 });
        check_parallel_matches_sequential::<Latest>(
            &random_vec(len, seed, latest),
            Latest { valid: true, value: 7 },
        );
        check_parallel_matches_sequential::<MaxF32>(&random_vec(len, seed, |r| r.random_range(-1e6f32..1e6)), -5.0);
        check_parallel_matches_sequential::<JoinSpans>(&random_vec(len, seed, joined), joined(&mut rand::rngs::StdRng::seed_from_u64(seed)));
        check_parallel_matches_sequential::<SaturatingLanes>(&random_vec(len, seed, |r| r.random::<u32>() & 0x0fff_0fff), 0x10);
        check_parallel_matches_sequential::<SumU8>(&random_vec(len, seed, |r| r.random()), 200);
    }

    #[test]
    fn chunks_chain_by_their_carry_outs(len in lengths(), split in any::<prop::sample::Index>(), seed in any::<u64>()) {
        let split = split.index(len + 1);
        check_chunks_chain::<AffineU32>(&random_vec(len, seed, affine_u32), split, AffineU32 { a: 7, b: 2 });
        check_chunks_chain::<Latest>(&random_vec(len, seed, latest), split, Latest { valid: true, value: 9 });
        check_chunks_chain::<SumU8>(&random_vec(len, seed, |r| r.random()), split, 250);
    }

    #[test]
    fn sequential_matches_the_definition(len in 0usize..40, seed in any::<u64>()) {
        check_against_definition::<AffineU32>(&random_vec(len, seed, affine_u32), AffineU32 { a: 9, b: 1 });
        check_against_definition::<JoinSpans>(&random_vec(len, seed, joined), joined(&mut rand::rngs::StdRng::seed_from_u64(!seed)));
        check_against_definition::<MinI64>(&random_vec(len, seed, |r| r.random()), i64::MIN + 3);
    }

    // The generated Rust operators equal hand-written ones.

    #[test]
    fn affine_u32_matches_hand_written(xa: u32, xb: u32, ya: u32, yb: u32) {
        let got = <AffineU32 as ScanOp>::combine(AffineU32 { a: xa, b: xb }, AffineU32 { a: ya, b: yb });
        let want = AffineU32 { a: xa.wrapping_mul(ya), b: ya.wrapping_mul(xb).wrapping_add(yb) };
        prop_assert_eq!(got, want);
    }

    #[test]
    fn affine_f32_matches_hand_written(xa in -1e3f32..1e3, xb in -1e3f32..1e3, ya in -1e3f32..1e3, yb in -1e3f32..1e3) {
        let got = <Affine as ScanOp>::combine(Affine { a: xa, b: xb }, Affine { a: ya, b: yb });
        prop_assert_eq!(got.a.to_bits(), (xa * ya).to_bits());
        prop_assert_eq!(got.b.to_bits(), (ya * xb + yb).to_bits());
    }

    #[test]
    fn stats_matches_hand_written(xc: u32, yc: u32, xs in -1e9f64..1e9, ys in -1e9f64..1e9, xm: f32, ym: f32) {
        let got = <Stats as ScanOp>::combine(Stats { count: xc, sum: xs, max: xm }, Stats { count: yc, sum: ys, max: ym });
        prop_assert_eq!(got.count, xc.wrapping_add(yc));
        prop_assert_eq!(got.sum.to_bits(), (xs + ys).to_bits());
        prop_assert_eq!(got.max.to_bits(), xm.max(ym).to_bits());
    }

    #[test]
    fn mat2_matches_hand_written(x in prop::array::uniform4(-100f32..100.0), y in prop::array::uniform4(-100f32..100.0)) {
        let got = <Mat2 as ScanOp>::combine(Mat2 { m: x }, Mat2 { m: y });
        let want = [
            x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3],
            x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3],
        ];
        prop_assert_eq!(got.m.map(f32::to_bits), want.map(f32::to_bits));
    }

    #[test]
    fn latest_matches_hand_written(xv: bool, x: u64, yv: bool, y: u64) {
        let got = <Latest as ScanOp>::combine(Latest { valid: xv, value: x }, Latest { valid: yv, value: y });
        prop_assert_eq!(got, if yv { Latest { valid: yv, value: y } } else { Latest { valid: xv, value: x } });
    }

    #[test]
    fn saturating_lanes_matches_hand_written(x: u32, y: u32) {
        let lo = (x as u16).saturating_add(y as u16);
        let hi = ((x >> 16) as u16).saturating_add((y >> 16) as u16);
        prop_assert_eq!(<SaturatingLanes as ScanOp>::combine(x, y), (hi as u32) << 16 | lo as u32);
    }

    #[test]
    fn join_spans_matches_hand_written(seed: u64) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (x, y) = (joined(&mut rng), joined(&mut rng));
        let want = match (x.empty, y.empty) {
            (false, false) => Joined {
                span: Span16 { first: x.span.first, last: y.span.last },
                joins: x.joins.wrapping_add(y.joins).wrapping_add(1),
                empty: false,
            },
            (false, true) => x,
            (true, _) => y,
        };
        prop_assert_eq!(<JoinSpans as ScanOp>::combine(x, y), want);
    }
}

#[test]
fn length_mismatch_is_an_error_and_leaves_the_output_alone() {
    let mut out = vec![99u32; 3];
    let err = cpu::inclusive::<SumU32>(&[1, 2], &mut out).unwrap_err();
    assert_eq!((err.input, err.output), (2, 3));
    assert!(err
        .to_string()
        .contains("output has 3 elements but the input has 2"));
    assert_eq!(out, [99, 99, 99]);
    assert!(cpu::par_exclusive::<SumU32>(&[1, 2, 3, 4], &mut out).is_err());
    assert_eq!(out, [99, 99, 99]);
}

#[test]
fn identities_and_associativity_hold_for_the_test_operators() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let exact = |a: &AffineU32, b: &AffineU32| a == b;
    check_associativity::<AffineU32>(|| affine_u32(&mut rng), 2000, exact).unwrap();
    check_associativity::<JoinSpans>(|| joined(&mut rng), 2000, |a, b| a == b).unwrap();
    check_associativity::<SaturatingLanes>(|| rng.random(), 2000, |a, b| a == b).unwrap();
    check_associativity::<Latest>(|| latest(&mut rng), 2000, |a, b| a == b).unwrap();
    // A non-canonical invalid element breaks the identity law, and the checker says so.
    let broken = Latest {
        valid: false,
        value: 7,
    };
    assert!(matches!(
        check_associativity::<Latest>(|| broken, 1, |a, b| a == b),
        Err(Counterexample::NotAnIdentity { .. })
    ));
}

/// Subtraction is not associative: the checker must say so and print the triple.
#[scan_op(element = i32, identity = 0, op = |a, b| a - b)]
struct Minus;

#[test]
fn the_associativity_checker_finds_counterexamples() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let err = check_associativity::<Minus>(|| rng.random_range(-100..100), 100, |a, b| a == b)
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("not associative") && text.contains("(a ∘ b) ∘ c"),
        "{text}"
    );
    match err {
        Counterexample::NotAssociative {
            a,
            b,
            c,
            left,
            right,
        } => {
            assert_eq!(left, (a - b) - c);
            assert_eq!(right, a - (b - c));
            assert_ne!(left, right);
        }
        other => panic!("expected NotAssociative, got {other:?}"),
    }
}
