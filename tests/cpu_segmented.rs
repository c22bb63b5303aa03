//! Property tests of the CPU segmented scans, the oracle of the GPU ones.
//!
//! * The sequential scan equals the definition (each output folded from its
//!   segment's head, or in reverse to its last element) for every kind and
//!   direction, on short inputs and every pattern.
//! * Parallel equals sequential, in place equals out of place, and bytes
//!   equal bits, bit for bit, on inputs long enough for many parallel chunks
//!   (the chunk-carry logic), for sums and non-commutative operators.
//! * The flag builders agree with each other: offsets (with empty segments
//!   and the closing `n`), keys, bytes and bits describe the same heads.
//! * Rows of a fixed length are the segments of their head flags, in every
//!   form; a row length of 0 or one that does not divide the length is a
//!   typed error.
//! * Segments given by offsets (`Segments::offsets`, both widths) are the
//!   segments of the flags built from them; offsets that are not row
//!   pointers are typed errors that write nothing.
//! * Bad flag lengths are typed errors that leave the output alone.
//! * The one verb (`Scanner::scan`, segments and carry-out slot in the
//!   spec) equals the segmented functions for every segment source.

mod common;
use common::ops::*;
use common::segments::*;
use common::specs::*;
use gpu_scan::prelude::*;
use gpu_scan::segmented::{
    self, FlagFormat, HeadFlags, InvalidOffsets, OwnedHeadFlags, RowLengthMismatch, SegmentKey,
    SegmentedError, Segments,
};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

type Rng64 = rand::rngs::StdRng;

fn patterns() -> impl Strategy<Value = Pattern> {
    prop_oneof![
        Just(Pattern::EveryElement),
        Just(Pattern::OneSegment),
        Just(Pattern::MeanLength(1.5)),
        Just(Pattern::MeanLength(7.0)),
        Just(Pattern::MeanLength(1000.0)),
        (1usize..5000).prop_map(|stride| Pattern::Stride {
            stride,
            extra_mean: 1e9
        }),
    ]
}

fn definition<Op: ScanOp>(
    spec: ScanSpec<Op::Element>,
    flags: &[u8],
    input: &[Op::Element],
) -> Vec<Op::Element> {
    let fold =
        |seed: Op::Element, xs: &[Op::Element]| xs.iter().fold(seed, |acc, x| Op::combine(acc, *x));
    // xs[0] ∘ … ∘ xs[last] ∘ tail.
    let fold_right = |xs: &[Op::Element], tail: Op::Element| {
        xs.iter().rev().fold(tail, |acc, x| Op::combine(*x, acc))
    };
    let n = input.len();
    (0..n)
        .map(|i| {
            let head = (0..=i).rev().find(|&h| h == 0 || flags[h] != 0).unwrap();
            // The segment's last element.
            let tail = (i + 1..n).find(|&h| flags[h] != 0).unwrap_or(n) - 1;
            match (spec.direction, spec.kind) {
                (Direction::Forward, ScanKind::Inclusive) => {
                    fold(input[head], &input[head + 1..=i])
                }
                (Direction::Forward, ScanKind::Exclusive) => fold(Op::IDENTITY, &input[head..i]),
                (Direction::Forward, ScanKind::ExclusiveWithInit(init)) => {
                    fold(init, &input[head..i])
                }
                (Direction::Forward, ScanKind::InclusiveWithInit(init)) => {
                    fold(init, &input[head..=i])
                }
                (_, ScanKind::Inclusive) => fold_right(&input[i..tail], input[tail]),
                (_, ScanKind::InclusiveWithInit(init)) => fold_right(&input[i..=tail], init),
                (_, ScanKind::Exclusive) => fold_right(&input[i + 1..=tail], Op::IDENTITY),
                (_, ScanKind::ExclusiveWithInit(init)) => fold_right(&input[i + 1..=tail], init),
                _ => unimplemented!("a scan kind this oracle does not know"),
            }
        })
        .collect()
}

/// The carry-out's definition: the last segment's partial in scan order
/// (from the last head forward; in reverse, from element 0 to the first
/// segment's last element), behind the seed; the seed for no elements.
fn carry_definition<Op: ScanOp>(
    spec: ScanSpec<Op::Element>,
    flags: &[u8],
    input: &[Op::Element],
) -> Op::Element {
    let seed = match spec.kind {
        ScanKind::ExclusiveWithInit(init) | ScanKind::InclusiveWithInit(init) => init,
        _ => Op::IDENTITY,
    };
    let n = input.len();
    let segment = match spec.direction {
        Direction::Forward => {
            let head = (0..n).rev().find(|&h| h == 0 || flags[h] != 0).unwrap_or(n);
            &input[head..]
        }
        _ => &input[..(1..n).find(|&h| flags[h] != 0).unwrap_or(n)],
    };
    match spec.direction {
        Direction::Forward => segment.iter().fold(seed, |acc, x| Op::combine(acc, *x)),
        _ => segment
            .iter()
            .rev()
            .fold(seed, |acc, x| Op::combine(*x, acc)),
    }
}

fn check_against_definition<Op: ScanOp>(flags: &[u8], input: &[Op::Element], init: Op::Element)
where
    Op::Element: PartialEq + std::fmt::Debug,
{
    for kind in all_specs(init) {
        let mut out = vec![Op::IDENTITY; input.len()];
        let mut carry = init;
        let spec = kind.carry_out(&mut carry);
        segmented::scan::<Op>(spec, HeadFlags::Bytes(flags), input, &mut out).unwrap();
        assert_eq!(out, definition::<Op>(kind, flags, input), "{kind:?}");
        assert_eq!(
            carry,
            carry_definition::<Op>(kind, flags, input),
            "{kind:?} carry-out"
        );
    }
}

/// Every form (sequential/parallel, in/out of place, bytes/bits) agrees.
fn check_forms_agree<Op: ScanOp>(
    flags: &[u8],
    input: &[Op::Element],
    init: Op::Element,
    rng: &mut Rng64,
) where
    Op::Element: PartialEq + std::fmt::Debug,
{
    let bits = pack_bits(flags, rng);
    for kind in all_specs(init) {
        let mut want = vec![Op::IDENTITY; input.len()];
        let mut want_carry = Op::IDENTITY;
        let spec = kind.carry_out(&mut want_carry);
        segmented::scan::<Op>(spec, HeadFlags::Bytes(flags), input, &mut want).unwrap();
        for heads in [HeadFlags::Bytes(flags), HeadFlags::bits(&bits, input.len())] {
            let mut out = vec![Op::IDENTITY; input.len()];
            let mut carry = init;
            let spec = kind.carry_out(&mut carry);
            segmented::par_scan::<Op>(spec, heads, input, &mut out).unwrap();
            assert!(
                out == want && carry == want_carry,
                "{kind:?} {:?}: par_scan differs",
                heads.format()
            );
            let mut data = input.to_vec();
            let mut carry = init;
            let spec = kind.carry_out(&mut carry);
            segmented::par_scan_in_place::<Op>(spec, heads, &mut data).unwrap();
            assert!(
                data == want && carry == want_carry,
                "{kind:?} {:?}: par_scan_in_place differs",
                heads.format()
            );
            let mut data = input.to_vec();
            let mut carry = init;
            segmented::scan_in_place::<Op>(kind.carry_out(&mut carry), heads, &mut data).unwrap();
            assert!(
                data == want && carry == want_carry,
                "{kind:?} {:?}: scan_in_place differs",
                heads.format()
            );
        }
    }
}

/// Short lengths, and lengths of 3 to 8 of the parallel backend's chunks
/// (16,384 elements each at these lengths on two threads or more:
/// `cpu::chunk_len`), so that segments and carries cross chunk boundaries.
fn lengths() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 0usize..70, 1 => 33_000usize..115_000]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn sequential_matches_the_definition(len in 0usize..60, pattern in patterns(), seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let flags = random_heads(len, pattern, &mut rng);
        let affine: Vec<AffineU32> = (0..len).map(|_| AffineU32 { a: rng.random(), b: rng.random() }).collect();
        check_against_definition::<AffineU32>(&flags, &affine, AffineU32 { a: 3, b: 7 });
        let latest: Vec<Latest> = (0..len).map(|_| random_latest(&mut rng, 0.3)).collect();
        check_against_definition::<Latest>(&flags, &latest, Latest { valid: true, value: 5 });
        let sums: Vec<u32> = (0..len).map(|_| rng.random()).collect();
        check_against_definition::<SumU32>(&flags, &sums, 11);
    }

    #[test]
    fn every_form_agrees(len in lengths(), pattern in patterns(), seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let flags = random_heads(len, pattern, &mut rng);
        let sums: Vec<u32> = (0..len).map(|_| rng.random()).collect();
        check_forms_agree::<SumU32>(&flags, &sums, 9, &mut rng);
        let affine: Vec<AffineU32> = (0..len).map(|_| AffineU32 { a: rng.random(), b: rng.random() }).collect();
        check_forms_agree::<AffineU32>(&flags, &affine, AffineU32 { a: 5, b: 1 }, &mut rng);
        let joined: Vec<Joined> = (0..len).map(|_| random_joined(&mut rng, 0.2)).collect();
        check_forms_agree::<JoinSpans>(&flags, &joined, random_joined(&mut rng, 0.0), &mut rng);
    }

    #[test]
    fn flag_builders_agree(len in 0usize..3000, pattern in patterns(), seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let mut flags = random_heads(len, pattern, &mut rng);
        // Normalise: element 0 is a head, any non-zero byte is 1.
        for (i, f) in flags.iter_mut().enumerate() {
            *f = (i == 0 || *f != 0) as u8;
        }
        let offsets = offsets_of(&flags, &mut rng);
        let keys = keys_of(&flags, &mut rng);
        let mut rng2 = Rng64::seed_from_u64(seed);
        let bits = {
            let mut b = pack_bits(&flags, &mut rng2);
            // Builders leave the bits past n clear.
            if len % 32 != 0 { let last = b.len() - 1; b[last] &= (1u32 << (len % 32)) - 1; }
            b
        };
        let packed = OwnedHeadFlags::Bits { words: bits, len };
        prop_assert_eq!(segmented::heads_from_offsets(&offsets, len, FlagFormat::Bytes), Ok(OwnedHeadFlags::Bytes(flags.clone())));
        prop_assert_eq!(segmented::heads_from_offsets(&offsets, len, FlagFormat::Bits), Ok(packed.clone()));
        let offsets32: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
        prop_assert_eq!(segmented::heads_from_offsets(&offsets32, len, FlagFormat::Bytes), Ok(OwnedHeadFlags::Bytes(flags.clone())));
        prop_assert_eq!(segmented::heads_from_keys(&keys, FlagFormat::Bytes), OwnedHeadFlags::Bytes(flags));
        prop_assert_eq!(segmented::heads_from_keys(&keys, FlagFormat::Bits), packed);
    }

    #[test]
    fn keys_scan_as_their_heads(len in lengths(), pattern in patterns(), seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let flags = random_heads(len, pattern, &mut rng);
        let keys = keys_of(&flags, &mut rng);
        let affine: Vec<AffineU32> = (0..len).map(|_| AffineU32 { a: rng.random(), b: rng.random() }).collect();
        let init = AffineU32 { a: 3, b: 2 };
        // Keys of every width (cut from the same numbers, so narrower ones
        // may merge segments: each is checked against its own heads), and
        // against the definition over the flags themselves.
        check_keys::<AffineU32, u32>(&keys, &affine, init, Some(&flags));
        let narrow = |k: &u32| *k as u8;
        check_keys::<AffineU32, u8>(&keys.iter().map(narrow).collect::<Vec<_>>(), &affine, init, None);
        check_keys::<AffineU32, i16>(&keys.iter().map(|k| *k as i16).collect::<Vec<_>>(), &affine, init, None);
        check_keys::<AffineU32, i64>(&keys.iter().map(|k| (*k as i64) << 32).collect::<Vec<_>>(), &affine, init, None);
    }
}

/// Scans by `keys` equal scans by the keys' head flags (sequential and
/// parallel, every kind and direction), and the definition over `flags`
/// where given (the heads the keys were made from); keys of another
/// length are refused.
fn check_keys<Op: ScanOp, K: SegmentKey>(
    keys: &[K],
    input: &[Op::Element],
    init: Op::Element,
    flags: Option<&[u8]>,
) where
    Op::Element: PartialEq + std::fmt::Debug,
{
    let heads = segmented::heads_from_keys(keys, FlagFormat::Bytes);
    for spec in all_specs(init) {
        let mut want = vec![Op::IDENTITY; input.len()];
        segmented::scan::<Op>(spec, heads.as_flags(), input, &mut want).unwrap();
        if let Some(flags) = flags {
            if input.len() <= 3000 {
                assert_eq!(
                    want,
                    definition::<Op>(spec, flags, input),
                    "{spec:?}: flags"
                );
            }
        }
        let mut out = vec![Op::IDENTITY; input.len()];
        segmented::scan::<Op>(spec, Segments::keys(keys), input, &mut out).unwrap();
        assert_eq!(
            out,
            want,
            "{spec:?}: keys of {} bytes",
            std::mem::size_of::<K>()
        );
        let mut out = vec![Op::IDENTITY; input.len()];
        segmented::par_scan::<Op>(spec, Segments::keys(keys), input, &mut out).unwrap();
        assert_eq!(
            out,
            want,
            "{spec:?}: keys of {} bytes, parallel",
            std::mem::size_of::<K>()
        );
    }
    if !keys.is_empty() {
        let mut out = vec![Op::IDENTITY; input.len()];
        let err = segmented::scan::<Op>(
            ScanKind::Inclusive,
            Segments::keys(&keys[1..]),
            input,
            &mut out,
        );
        assert_eq!(
            err,
            Err(segmented::SegmentedError::Keys(
                segmented::KeysLengthMismatch {
                    keys: keys.len() - 1,
                    elements: input.len()
                }
            ))
        );
    }
}

/// The head flags of rows of `row_length` over `len` elements.
fn row_flags(len: usize, row_length: usize) -> Vec<u8> {
    (0..len).map(|i| (i % row_length == 0) as u8).collect()
}

/// Rows scan as their head flags do, sequential and parallel, in and out
/// of place: against the definition on short inputs, against the scan of
/// the rows' flags (itself checked against the definition above) on long
/// ones, where the definition's quadratic folds would take minutes.
fn check_rows<Op: ScanOp>(rows: usize, row_length: usize, input: &[Op::Element], init: Op::Element)
where
    Op::Element: PartialEq + std::fmt::Debug,
{
    let flags = row_flags(input.len(), row_length);
    for kind in all_specs(init) {
        let want = if input.len() <= 3000 {
            definition::<Op>(kind, &flags, input)
        } else {
            let mut want = vec![Op::IDENTITY; input.len()];
            segmented::scan::<Op>(kind, HeadFlags::Bytes(&flags), input, &mut want).unwrap();
            want
        };
        let label = format!("{rows} rows of {row_length}, {kind:?}");
        let mut out = vec![Op::IDENTITY; input.len()];
        segmented::scan::<Op>(kind, Segments::rows(row_length), input, &mut out).unwrap();
        assert!(out == want, "{label}: scan");
        let mut out = vec![Op::IDENTITY; input.len()];
        segmented::par_scan::<Op>(kind, Segments::rows(row_length), input, &mut out).unwrap();
        assert!(out == want, "{label}: par_scan");
        let mut data = input.to_vec();
        segmented::par_scan_in_place::<Op>(kind, Segments::rows(row_length), &mut data).unwrap();
        assert!(data == want, "{label}: par_scan_in_place");
        let mut data = input.to_vec();
        segmented::scan_in_place::<Op>(kind, Segments::rows(row_length), &mut data).unwrap();
        assert!(data == want, "{label}: scan_in_place");
    }
}

fn row_shapes() -> impl Strategy<Value = (usize, usize)> {
    prop_oneof![
        3 => (0usize..40, 1usize..70),
        1 => (1usize..4, 20_000usize..70_000),
        1 => (2_000usize..9_000, 1usize..20),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn rows_are_the_segments_of_their_head_flags((rows, row_length) in row_shapes(), seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let len = rows * row_length;
        let affine: Vec<AffineU32> = (0..len).map(|_| AffineU32 { a: rng.random(), b: rng.random() }).collect();
        check_rows::<AffineU32>(rows, row_length, &affine, AffineU32 { a: 3, b: 7 });
        let latest: Vec<Latest> = (0..len).map(|_| random_latest(&mut rng, 0.3)).collect();
        check_rows::<Latest>(rows, row_length, &latest, Latest { valid: true, value: 5 });
    }
}

#[test]
fn bad_row_lengths_are_typed_errors_that_write_nothing() {
    let input = [1u32, 2, 3, 4, 5, 6];
    for (len, row_length) in [(6, 0), (6, 4), (6, 7), (0, 0)] {
        let want = SegmentedError::Rows(RowLengthMismatch {
            elements: len,
            row_length,
        });
        let mut out = [99u32; 6];
        let err = segmented::scan::<SumU32>(
            ScanKind::Inclusive,
            Segments::rows(row_length),
            &input[..len],
            &mut out[..len],
        )
        .unwrap_err();
        assert_eq!(err, want);
        assert!(
            err.to_string()
                .contains(&format!("rows of {row_length} elements")),
            "{err}"
        );
        let err = segmented::par_scan_in_place::<SumU32>(
            ScanKind::Exclusive,
            Segments::rows(row_length),
            &mut out[..len],
        )
        .unwrap_err();
        assert_eq!(err, want);
        assert_eq!(out, [99; 6]);
    }
    // No rows of an empty sequence but rows of any positive length.
    let mut empty: [u32; 0] = [];
    segmented::scan_in_place::<SumU32>(ScanKind::Inclusive, Segments::rows(5), &mut empty).unwrap();
}

#[test]
fn closing_offsets_and_empty_segments() {
    // Segments [a b] [] [] [c] [d e f] [] over 6 elements.
    let offsets = [0u32, 2, 2, 2, 3, 6, 6];
    let heads = segmented::heads_from_offsets(&offsets, 6, FlagFormat::Bytes).unwrap();
    assert_eq!(heads, OwnedHeadFlags::Bytes(vec![1, 0, 1, 1, 0, 0]));
    let mut out = vec![0u32; 6];
    segmented::scan::<SumU32>(
        ScanKind::ExclusiveWithInit(100),
        heads.as_flags(),
        &[1, 2, 3, 4, 5, 6],
        &mut out,
    )
    .unwrap();
    assert_eq!(out, [100, 101, 100, 100, 104, 109]);
    // An offsets array that does not start at 0 still gets element 0 as a head.
    let heads = segmented::heads_from_offsets(&[3u64], 5, FlagFormat::Bits).unwrap();
    assert_eq!(
        heads,
        OwnedHeadFlags::Bits {
            words: vec![0b01001],
            len: 5
        }
    );
    assert_eq!(
        segmented::heads_from_offsets::<u32>(&[], 0, FlagFormat::Bits),
        Ok(OwnedHeadFlags::Bits {
            words: vec![],
            len: 0
        })
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Segments given by offsets scan as the head flags built from them
    /// (`heads_from_offsets`, checked above against keys and bytes), in
    /// every form and both widths, with empty segments, the closing `n`,
    /// and with or without the leading 0.
    #[test]
    fn offsets_are_the_segments_of_their_head_flags(len in lengths(), pattern in patterns(), seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let mut offsets = offsets_of(&random_heads(len, pattern, &mut rng), &mut rng);
        if rng.random_bool(0.5) {
            let leading = offsets.iter().take_while(|&&o| o == 0).count();
            offsets.drain(..leading);
        }
        let narrow: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
        let flags = segmented::heads_from_offsets(&offsets, len, FlagFormat::Bytes).unwrap();
        let input: Vec<AffineU32> = (0..len).map(|_| AffineU32 { a: rng.random(), b: rng.random() }).collect();
        for spec in all_specs(AffineU32 { a: 3, b: 7 }) {
            let mut want = vec![AffineU32::IDENTITY; len];
            segmented::scan::<AffineU32>(spec, flags.as_flags(), &input, &mut want).unwrap();
            for segments in [Segments::offsets(&offsets[..]), Segments::offsets(&narrow[..])] {
                let mut out = vec![AffineU32::IDENTITY; len];
                segmented::scan::<AffineU32>(spec, segments, &input, &mut out).unwrap();
                prop_assert!(out == want, "scan {spec:?}");
                let mut out = vec![AffineU32::IDENTITY; len];
                segmented::par_scan::<AffineU32>(spec, segments, &input, &mut out).unwrap();
                prop_assert!(out == want, "par_scan {spec:?}");
                let mut data = input.clone();
                segmented::par_scan_in_place::<AffineU32>(spec, segments, &mut data).unwrap();
                prop_assert!(data == want, "par_scan_in_place {spec:?}");
            }
        }
    }
}

#[test]
fn bad_offsets_as_segments_are_typed_errors_that_write_nothing() {
    let input = [1u32, 2, 3, 4, 5, 6];
    let cases: [(&[u64], usize); 3] = [(&[0, 2, 6, 9], 6), (&[0, 4, 2, 6], 6), (&[0, 7], 6)];
    for (offsets, len) in cases {
        let want = SegmentedError::Offsets(InvalidOffsets::check(offsets, len).unwrap_err());
        let mut out = [99u32; 6];
        let err = segmented::scan::<SumU32>(
            ScanKind::Inclusive,
            Segments::offsets(offsets),
            &input[..len],
            &mut out[..len],
        )
        .unwrap_err();
        assert_eq!(err, want);
        let err = segmented::par_scan_in_place::<SumU32>(
            ScanKind::Exclusive,
            Segments::offsets(offsets),
            &mut out[..len],
        )
        .unwrap_err();
        assert_eq!(err, want);
        assert_eq!(out, [99; 6]);
    }
}

#[test]
fn offsets_that_are_not_row_pointers_are_errors() {
    // Past the end: the closing offset of a 6-element sequence is 6, not 9.
    let err = segmented::heads_from_offsets(&[0u32, 2, 6, 9], 6, FlagFormat::Bytes).unwrap_err();
    assert_eq!(
        err,
        InvalidOffsets::OutOfRange {
            index: 3,
            value: 9,
            len: 6
        }
    );
    assert_eq!(
        err.to_string(),
        "segment offset 9 (at index 3) is past the sequence's 6 elements"
    );
    // Unsorted.
    let err = segmented::heads_from_offsets(&[0u64, 4, 2, 6], 6, FlagFormat::Bits).unwrap_err();
    assert_eq!(
        err,
        InvalidOffsets::Decreasing {
            index: 2,
            value: 2,
            previous: 4
        }
    );
    // Any offset of an empty sequence but 0.
    assert!(segmented::heads_from_offsets(&[0u32, 0], 0, FlagFormat::Bits).is_ok());
    assert!(segmented::heads_from_offsets(&[1u32], 0, FlagFormat::Bits).is_err());
}

#[test]
fn bad_flag_lengths_are_errors_and_leave_the_output_alone() {
    let input = [1u32, 2, 3, 4, 5];
    let mut out = vec![99u32; 5];
    let err = segmented::scan::<SumU32>(
        ScanKind::Inclusive,
        HeadFlags::Bytes(&[1, 0, 0, 1]),
        &input,
        &mut out,
    )
    .unwrap_err();
    match err {
        SegmentedError::Flags(e) => {
            assert_eq!((e.elements, e.flagged, e.given, e.required), (5, 4, 4, 4));
            assert_eq!(
                e.to_string(),
                "the head flags describe 4 elements, but the sequence has 5"
            );
        }
        other => panic!("expected a flags error, got {other:?}"),
    }
    assert_eq!(out, [99; 5]);
    // 33 elements need two words.
    let mut data = vec![7u32; 33];
    let err = segmented::par_scan_in_place::<SumU32>(
        ScanKind::Inclusive,
        HeadFlags::bits(&[1], 33),
        &mut data,
    )
    .unwrap_err();
    let SegmentedError::Flags(err) = err else {
        panic!("expected a flags error, got {err:?}")
    };
    assert_eq!((err.given, err.required), (1, 2));
    assert_eq!(
        err.to_string(),
        "head flags for 33 elements need 2 Bits units, but 1 were given"
    );
    assert_eq!(data, vec![7u32; 33]);
    // Two words of flags built for 33 elements are not flags for 40: the
    // words alone would fit.
    let mut data = vec![7u32; 40];
    let err = segmented::scan_in_place::<SumU32>(
        ScanKind::Inclusive,
        HeadFlags::bits(&[1, 1], 33),
        &mut data,
    )
    .unwrap_err();
    let SegmentedError::Flags(err) = err else {
        panic!("expected a flags error, got {err:?}")
    };
    assert_eq!((err.elements, err.flagged), (40, 33));
    assert_eq!(data, vec![7u32; 40]);
    let err = segmented::scan::<SumU32>(
        ScanKind::Inclusive,
        HeadFlags::Bytes(&[1; 5]),
        &input,
        &mut out[..4],
    )
    .unwrap_err();
    assert!(matches!(err, SegmentedError::Length(_)));
    assert_eq!(out, [99; 5]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The one verb (`Scanner::scan` on the CPU, segments and carry-out
    /// slot in the spec) equals `segmented::scan` with the segments as an
    /// argument, for flags, rows, offsets and keys, every kind and
    /// direction, outputs and carry-out; a spec without segments equals
    /// `cpu::scan`.
    #[cfg(feature = "gpu")]
    #[test]
    fn the_one_verb_takes_segments_and_carry_out_in_its_spec(len in lengths(), pattern in patterns(), seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let flags = random_heads(len, pattern, &mut rng);
        let offsets = offsets_of(&flags, &mut rng);
        let keys = keys_of(&flags, &mut rng);
        let row_length = (1..=len.max(1)).rev().find(|r| len % r == 0 && *r <= 37).unwrap_or(1);
        let input: Vec<AffineU32> = (0..len).map(|_| AffineU32 { a: rng.random(), b: rng.random() }).collect();
        let mut scanner = Scanner::<AffineU32>::cpu();
        for spec in all_specs(AffineU32 { a: 5, b: 9 }) {
            let sources = [
                Segments::Flags(HeadFlags::Bytes(&flags)),
                Segments::rows(row_length),
                Segments::offsets(&offsets[..]),
                Segments::keys(&keys),
            ];
            for segments in sources {
                let mut want = vec![AffineU32::IDENTITY; len];
                let mut want_carry = AffineU32::IDENTITY;
                segmented::scan::<AffineU32>(spec.carry_out(&mut want_carry), segments, &input, &mut want).unwrap();
                let mut carry = AffineU32 { a: 1, b: 1 };
                let out = scanner.scan(spec.segments(segments).carry_out(&mut carry), &input).unwrap();
                prop_assert!(out == want && carry == want_carry, "{spec:?} over {segments:?}");
            }
            let mut want = vec![AffineU32::IDENTITY; len];
            let mut want_carry = AffineU32::IDENTITY;
            cpu::scan::<AffineU32>(spec.carry_out(&mut want_carry), &input, &mut want).unwrap();
            let mut carry = AffineU32 { a: 1, b: 1 };
            let out = scanner.scan(spec.carry_out(&mut carry), &input).unwrap();
            prop_assert!(out == want && carry == want_carry, "{spec:?} without segments");
        }
    }
}

/// Each segment's total by definition: the seed combined with its elements
/// in scan order (the seed on the left going forward, on the right in
/// reverse), the seed alone for an empty one.
fn totals_definition<Op: ScanOp>(
    spec: ScanSpec<Op::Element>,
    ranges: &[std::ops::Range<usize>],
    input: &[Op::Element],
) -> Vec<Op::Element> {
    let seed = match spec.kind {
        ScanKind::ExclusiveWithInit(init) | ScanKind::InclusiveWithInit(init) => init,
        _ => Op::IDENTITY,
    };
    ranges
        .iter()
        .map(|r| match spec.direction {
            Direction::Forward => input[r.clone()]
                .iter()
                .fold(seed, |acc, x| Op::combine(acc, *x)),
            _ => input[r.clone()]
                .iter()
                .rev()
                .fold(seed, |acc, x| Op::combine(*x, acc)),
        })
        .collect()
}

/// The CPU scanner of the one verb (a stand-in without the `gpu` feature).
#[cfg(feature = "gpu")]
type Verb = Scanner<AffineU32>;
#[cfg(not(feature = "gpu"))]
struct Verb;

fn verb() -> Verb {
    #[cfg(feature = "gpu")]
    return Scanner::cpu();
    #[cfg(not(feature = "gpu"))]
    Verb
}

/// The one verb (`Scanner::scan` on the CPU) with `totals` in its spec,
/// over `segments` (none: `None`); `None` without the `gpu` feature, which
/// the facade's `Scanner` needs.
#[cfg(feature = "gpu")]
fn one_verb_totals(
    scanner: &mut Verb,
    spec: ScanSpec<AffineU32>,
    segments: Option<Segments<'_>>,
    input: &[AffineU32],
    totals: &mut [AffineU32],
) -> Option<Vec<AffineU32>> {
    Some(
        match segments {
            Some(s) => scanner.scan(spec.segments(s).segment_totals(totals), input),
            None => scanner.scan(spec.segment_totals(totals), input),
        }
        .unwrap(),
    )
}

#[cfg(not(feature = "gpu"))]
fn one_verb_totals(
    _: &mut Verb,
    _: ScanSpec<AffineU32>,
    _: Option<Segments<'_>>,
    _: &[AffineU32],
    _: &mut [AffineU32],
) -> Option<Vec<AffineU32>> {
    None
}

/// The segments of head flags, read off the flags (element 0 starts one).
fn flag_ranges(flags: &[u8]) -> Vec<std::ops::Range<usize>> {
    let heads: Vec<usize> = (0..flags.len())
        .filter(|&i| i == 0 || flags[i] != 0)
        .collect();
    heads
        .iter()
        .enumerate()
        .map(|(k, &h)| h..heads.get(k + 1).copied().unwrap_or(flags.len()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Per-segment totals (`ScanSpec::segment_totals`) are every segment's
    /// seeded total in scan order, for flags, keys and rows (the runs at
    /// their heads) and offsets (CSR windows, also a window inside the
    /// input), in every kind and direction, through the sequential,
    /// parallel, in-place functions and the one verb, which scan as they
    /// do without a totals slot; for flags the last total is the carry-out.
    #[test]
    fn segment_totals_are_each_segment_s_seeded_total(len in lengths(), pattern in patterns(), seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let flags = random_heads(len, pattern, &mut rng);
        let offsets = offsets_of(&flags, &mut rng);
        let keys = keys_of(&flags, &mut rng);
        let row_length = (1..=len.max(1)).rev().find(|r| len % r == 0 && *r <= 37).unwrap_or(1);
        let rows = row_flags(len, row_length);
        let inner: Vec<u32> = match len {
            0..=2 => vec![],
            _ => {
                let a = rng.random_range(0..len / 2);
                let b = rng.random_range(a..len);
                vec![a as u32, b as u32, b as u32]
            }
        };
        let input: Vec<AffineU32> = (0..len).map(|_| AffineU32 { a: rng.random(), b: rng.random() }).collect();
        let windows = |o: &[u64]| -> Vec<std::ops::Range<usize>> {
            o.windows(2).map(|w| w[0] as usize..w[1] as usize).collect()
        };
        let inner64: Vec<u64> = inner.iter().map(|&o| o as u64).collect();
        let sources = [
            (Segments::Flags(HeadFlags::Bytes(&flags)), flag_ranges(&flags)),
            (Segments::keys(&keys), flag_ranges(&flags)),
            (Segments::rows(row_length), flag_ranges(&rows)),
            (Segments::offsets(&offsets[..]), windows(&offsets)),
            (Segments::offsets(&inner[..]), windows(&inner64)),
        ];
        let mut scanner = verb();
        for spec in all_specs(AffineU32 { a: 5, b: 9 }) {
            for (segments, ranges) in &sources {
                let want = totals_definition::<AffineU32>(spec, ranges, &input);
                prop_assert_eq!(segmented::segment_ranges(*segments, len), ranges.clone());
                let mut plain = vec![AffineU32::IDENTITY; len];
                segmented::scan::<AffineU32>(spec, *segments, &input, &mut plain).unwrap();
                let fresh = || vec![AffineU32 { a: 7, b: 7 }; ranges.len()];
                let (mut t1, mut t2, mut t3, mut t4) = (fresh(), fresh(), fresh(), fresh());
                let mut out = vec![AffineU32::IDENTITY; len];
                segmented::scan::<AffineU32>(spec.segment_totals(&mut t1), *segments, &input, &mut out).unwrap();
                prop_assert!(out == plain && t1 == want, "{spec:?} over {segments:?}: sequential");
                segmented::par_scan::<AffineU32>(spec.segment_totals(&mut t2), *segments, &input, &mut out).unwrap();
                prop_assert!(out == plain && t2 == want, "{spec:?} over {segments:?}: parallel");
                let mut data = input.clone();
                segmented::par_scan_in_place::<AffineU32>(spec.segment_totals(&mut t3), *segments, &mut data).unwrap();
                prop_assert!(data == plain && t3 == want, "{spec:?} over {segments:?}: in place");
                if let Some(out) = one_verb_totals(&mut scanner, spec, Some(*segments), &input, &mut t4) {
                    prop_assert!(out == plain && t4 == want, "{spec:?} over {segments:?}: one verb");
                }
                // Counted slots of any length: the first totals that fit,
                // the rest untouched, and the count.
                let count = ranges.len();
                for capacity in [0, count / 2, count, count + 2] {
                    let written = capacity.min(count);
                    let sentinel = AffineU32 { a: 7, b: 7 };
                    let check = |what: &str, slot: &[AffineU32], counted: usize, out: &[AffineU32]| {
                        let ok = out == plain
                            && counted == count
                            && slot[..written] == want[..written]
                            && slot[written..].iter().all(|&x| x == sentinel);
                        (ok, format!("{spec:?} over {segments:?}, counted slot of {capacity}: {what}"))
                    };
                    let (mut slot, mut counted) = (vec![sentinel; capacity], usize::MAX);
                    segmented::scan::<AffineU32>(spec.counted_segment_totals(&mut slot, &mut counted), *segments, &input, &mut out).unwrap();
                    let (ok, what) = check("sequential", &slot, counted, &out);
                    prop_assert!(ok, "{}", what);
                    let (mut slot, mut counted) = (vec![sentinel; capacity], usize::MAX);
                    segmented::par_scan::<AffineU32>(spec.counted_segment_totals(&mut slot, &mut counted), *segments, &input, &mut out).unwrap();
                    let (ok, what) = check("parallel", &slot, counted, &out);
                    prop_assert!(ok, "{}", what);
                    let (mut slot, mut counted) = (vec![sentinel; capacity], usize::MAX);
                    let mut data = input.clone();
                    segmented::par_scan_in_place::<AffineU32>(spec.counted_segment_totals(&mut slot, &mut counted), *segments, &mut data).unwrap();
                    let (ok, what) = check("in place", &slot, counted, &data);
                    prop_assert!(ok, "{}", what);
                }
            }
            // Over flags the last segment's total is the carry-out.
            if len > 0 {
                let mut carry = AffineU32::IDENTITY;
                let mut out = vec![AffineU32::IDENTITY; len];
                segmented::scan::<AffineU32>(spec.carry_out(&mut carry), HeadFlags::Bytes(&flags), &input, &mut out).unwrap();
                let totals = totals_definition::<AffineU32>(spec, &flag_ranges(&flags), &input);
                let in_scan_order = match spec.direction {
                    Direction::Forward => totals.last(),
                    _ => totals.first(),
                };
                prop_assert_eq!(Some(&carry), in_scan_order);
            }
            // Without segments: one segment, the carry-out.
            let mut carry = AffineU32::IDENTITY;
            let mut one = [AffineU32 { a: 7, b: 7 }];
            let mut out = vec![AffineU32::IDENTITY; len];
            cpu::scan::<AffineU32>(spec.carry_out(&mut carry), &input, &mut out).unwrap();
            if let Some(out1) = one_verb_totals(&mut scanner, spec, None, &input, &mut one) {
                prop_assert!(out == out1 && one[0] == carry, "{spec:?} without segments");
            }
        }
    }
}

/// A totals slot of another length than the number of segments is a typed
/// error that writes neither the output nor the slot.
#[test]
fn a_totals_slot_of_another_length_is_refused_and_writes_nothing() {
    let input: Vec<u32> = (1..=10).collect();
    let flags = [1u8, 0, 0, 1, 0, 0, 0, 1, 0, 0];
    let offsets: [u32; 4] = [0, 3, 3, 10];
    let cases: [(Segments<'_>, usize); 4] = [
        (Segments::Flags(HeadFlags::Bytes(&flags)), 3),
        (Segments::rows(5), 2),
        (Segments::offsets(&offsets[..]), 3),
        (Segments::keys(&[4u8, 4, 4, 1, 1, 1, 1, 9, 9, 9][..]), 3),
    ];
    for (segments, count) in cases {
        for slot_len in [count - 1, count + 1] {
            let mut slot = vec![77u32; slot_len];
            let mut out = vec![55u32; 10];
            let got = segmented::scan::<SumU32>(
                ScanSpec::inclusive().segment_totals(&mut slot),
                segments,
                &input,
                &mut out,
            );
            let want = segmented::SegmentTotalsLength {
                slot: slot_len,
                segments: count,
            };
            assert_eq!(got, Err(SegmentedError::Totals(want)), "{segments:?}");
            assert!(out.iter().all(|&x| x == 55) && slot.iter().all(|&x| x == 77));
            let mut data = input.clone();
            let got = segmented::par_scan_in_place::<SumU32>(
                ScanSpec::exclusive().segment_totals(&mut slot),
                segments,
                &mut data,
            );
            assert_eq!(got, Err(SegmentedError::Totals(want)));
            assert!(data == input && slot.iter().all(|&x| x == 77));
        }
    }
    // Without segments a scan is one segment.
    #[cfg(feature = "gpu")]
    {
        let mut slot = [77u32; 2];
        let got =
            Scanner::<SumU32>::cpu().scan(ScanSpec::inclusive().segment_totals(&mut slot), &input);
        assert!(got.is_err() && slot == [77, 77], "{got:?}");
    }
    // A counted slot takes any length, and without segments counts one.
    #[cfg(feature = "gpu")]
    for capacity in [0, 1, 2] {
        let mut slot = vec![77u32; capacity];
        let mut count = 0;
        let out = Scanner::<SumU32>::cpu()
            .scan(
                ScanSpec::inclusive().counted_segment_totals(&mut slot[..], &mut count),
                &input,
            )
            .unwrap();
        assert_eq!(out.last(), Some(&55));
        assert_eq!(count, 1);
        assert!(slot
            .iter()
            .enumerate()
            .all(|(i, &x)| x == [55, 77][i.min(1)]));
    }
    // Sums of the segments [1 2 3] [] [4 … 10] by offsets.
    let mut totals = [0u32; 3];
    segmented::scan::<SumU32>(
        ScanSpec::exclusive_with_init(100).segment_totals(&mut totals),
        Segments::offsets(&offsets[..]),
        &input,
        &mut [0; 10],
    )
    .unwrap();
    assert_eq!(totals, [106, 100, 149]);
}
