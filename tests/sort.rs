//! Radix sort on the CPU (`gpu_scan::sort`), the oracle of the GPU's:
//! against the standard library's stable sorts (integers by `Ord`, floats
//! by `total_cmp`) for every key type, both orders, bit ranges, pairs
//! (stability checked through the values), argsort, records by a
//! `#[sort_key]` of one component or of several (lexicographic, against
//! std's sort of the tuples, bit ranges across components) and segments by
//! offsets (keys and pairs); over lengths around the passes' chunks and
//! inputs that are sorted, reversed, all equal, or differ only in the last
//! bit, with NaNs and signed zeros. `SORT_SEED` replays a run.

mod common;
use gpu_scan::prelude::*;
use gpu_scan::sort::{
    argsort, argsort_by_key, segmented_sort_keys, segmented_sort_pairs, sort_by_key, sort_keys,
    sort_pairs, CompositeKey, RadixKey, SortError, SortKey, SortOrder, SortSpec,
};
use rand::distr::{Distribution, StandardUniform};
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;

type Rng64 = rand::rngs::StdRng;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("SORT_SEED");
    println!("sort: seed {seed} (SORT_SEED={seed} replays)");
    seed
}

/// The lengths of the widest checks; the others stop at a chunk and one.
const SHORT: &[usize] = &[0, 1, 2, 31, 255, (1 << 14) + 1];
const MEDIUM: &[usize] = &[0, 1, 31, (1 << 14) - 1, 100_003];
const LENGTHS: [usize; 9] = [
    0,
    1,
    2,
    31,
    255,
    (1 << 14) - 1,
    (1 << 14) + 1,
    100_003,
    (1 << 18) + 3,
];

/// A key type and the order the standard library gives it.
trait Key: RadixKey + std::fmt::Debug + PartialEq {
    fn compare(a: &Self, b: &Self) -> Ordering;
    fn bits(self) -> u64;
}

macro_rules! int_keys {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn compare(a: &Self, b: &Self) -> Ordering {
                a.cmp(b)
            }
            fn bits(self) -> u64 {
                self as u64
            }
        }
    )*};
}
int_keys!(u8, u16, u32, u64, i8, i16, i32, i64);

/// Floats: IEEE total order, but -0.0 equal to +0.0 (as CUB sorts them).
macro_rules! float_keys {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn compare(a: &Self, b: &Self) -> Ordering {
                if *a == 0.0 && *b == 0.0 {
                    Ordering::Equal
                } else {
                    a.total_cmp(b)
                }
            }
            fn bits(self) -> u64 {
                u64::from(self.to_bits())
            }
        }
    )*};
}
float_keys!(f32, f64);

/// Inputs of `n` keys drawn by `random`: random, sorted, reversed, all
/// equal, and few distinct values (long runs of ties).
fn inputs<K: Key>(
    rng: &mut Rng64,
    n: usize,
    random: impl Fn(&mut Rng64) -> K,
) -> Vec<(&'static str, Vec<K>)> {
    let values: Vec<K> = (0..n).map(|_| random(rng)).collect();
    let mut sorted = values.clone();
    sorted.sort_by(K::compare);
    let reversed: Vec<K> = sorted.iter().rev().copied().collect();
    let equal = vec![values.first().copied().unwrap_or_else(|| random(rng)); n];
    let few: Vec<K> = (0..4).map(|_| random(rng)).collect();
    let ties = (0..n).map(|_| few[rng.random_range(0..4)]).collect();
    vec![
        ("random", values),
        ("sorted", sorted),
        ("reversed", reversed),
        ("equal", equal),
        ("ties", ties),
    ]
}

/// Sorts every input of each length both ways, keys alone and with their
/// input positions as values (which shows stability), against `sort_by`.
fn check_type<K: Key>(rng: &mut Rng64, lengths: &[usize], random: impl Fn(&mut Rng64) -> K) {
    for &n in lengths {
        for (case, input) in inputs(rng, n, &random) {
            for order in [SortOrder::Ascending, SortOrder::Descending] {
                let spec = SortSpec { order, bits: None };
                let mut want: Vec<(K, u32)> = input.iter().copied().zip(0..).collect();
                // Stable: ties keep their input order in both directions.
                want.sort_by(|a, b| match order {
                    SortOrder::Ascending => K::compare(&a.0, &b.0),
                    SortOrder::Descending => K::compare(&b.0, &a.0),
                });
                let mut keys = input.clone();
                sort_keys(&mut keys, spec.clone()).unwrap();
                let bits = |v: &[K]| v.iter().map(|&k| k.bits()).collect::<Vec<_>>();
                let want_keys: Vec<K> = want.iter().map(|p| p.0).collect();
                assert_eq!(
                    bits(&keys),
                    bits(&want_keys),
                    "{} {case} n {n} {order:?}",
                    std::any::type_name::<K>()
                );
                let (mut keys, mut positions) = (input.clone(), (0..n as u32).collect::<Vec<_>>());
                sort_pairs(&mut keys, &mut positions, spec.clone()).unwrap();
                let want_positions: Vec<u32> = want.iter().map(|p| p.1).collect();
                assert_eq!(
                    positions,
                    want_positions,
                    "{} {case} n {n} {order:?}: values",
                    std::any::type_name::<K>()
                );
                let p = argsort(&input, spec).unwrap();
                assert!(p
                    .iter()
                    .zip(&want_positions)
                    .all(|(&a, &b)| a == b as usize));
            }
        }
    }
}

fn random<T>(rng: &mut Rng64) -> T
where
    StandardUniform: Distribution<T>,
{
    rng.random()
}

#[test]
fn every_key_type_sorts_as_the_standard_library_does() {
    let mut rng = Rng64::seed_from_u64(seed());
    check_type::<u8>(&mut rng, SHORT, random);
    check_type::<u16>(&mut rng, SHORT, random);
    check_type::<u32>(&mut rng, &LENGTHS, random);
    check_type::<u64>(&mut rng, SHORT, random);
    check_type::<i8>(&mut rng, SHORT, random);
    check_type::<i16>(&mut rng, SHORT, random);
    check_type::<i32>(&mut rng, SHORT, random);
    check_type::<i64>(&mut rng, SHORT, random);
    // Floats: any bit pattern (NaNs of both signs, infinities, subnormals,
    // signed zeros), and values that differ only in the last bit.
    check_type::<f32>(&mut rng, MEDIUM, |r| f32::from_bits(r.random()));
    check_type::<f64>(&mut rng, SHORT, |r| f64::from_bits(r.random()));
    check_type::<f32>(&mut rng, SHORT, |r| {
        f32::from_bits(0x3f80_0000 | r.random_range(0..2))
    });
    check_type::<f64>(&mut rng, SHORT, |r| {
        [
            0.0,
            -0.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.0,
        ][r.random_range(0..7)]
    });
}

#[test]
fn a_bit_range_sorts_by_those_bits_alone() {
    let mut rng = Rng64::seed_from_u64(seed());
    let input: Vec<u32> = (0..100_003).map(|_| rng.random()).collect();
    for (begin, end) in [(0, 32), (0, 8), (5, 17), (31, 32), (12, 12), (24, 32)] {
        for order in [SortOrder::Ascending, SortOrder::Descending] {
            let spec = SortSpec { order, bits: None }.bits(begin..end);
            let field = |k: u32| ((k as u64) >> begin) & ((1u64 << (end - begin)) - 1);
            let mut want = input.clone();
            match order {
                SortOrder::Ascending => want.sort_by_key(|&k| field(k)),
                SortOrder::Descending => want.sort_by_key(|&k| std::cmp::Reverse(field(k))),
            }
            let mut keys = input.clone();
            sort_keys(&mut keys, spec).unwrap();
            assert_eq!(keys, want, "bits {begin}..{end} {order:?}");
        }
    }
    // Signed and float keys: ranges of their ordered bits (the sign bit
    // flipped; a float's bits flipped when negative, -0.0 read as +0.0),
    // written out here.
    let signed: Vec<i32> = (0..50_001).map(|_| rng.random()).collect();
    let floats: Vec<f32> = (0..50_001)
        .map(|_| [f32::from_bits(rng.random()), 0.0, -0.0][rng.random_range(0..3)])
        .collect();
    let ordered_i32 = |k: i32| (k as u32 ^ 0x8000_0000) as u64;
    let ordered_f32 = |k: f32| {
        let b = if k.to_bits() == 0x8000_0000 {
            0
        } else {
            k.to_bits()
        };
        (if b >> 31 == 1 { !b } else { b | 0x8000_0000 }) as u64
    };
    for (begin, end) in [(24, 32), (31, 32), (0, 23), (20, 31)] {
        let field = |bits: u64| (bits >> begin) & ((1u64 << (end - begin)) - 1);
        let mut want = signed.clone();
        want.sort_by_key(|&k| field(ordered_i32(k)));
        let mut keys = signed.clone();
        sort_keys(&mut keys, SortSpec::ascending().bits(begin..end)).unwrap();
        assert_eq!(keys, want, "i32 bits {begin}..{end}");
        let mut want = floats.clone();
        want.sort_by_key(|&k| std::cmp::Reverse(field(ordered_f32(k))));
        let mut keys = floats.clone();
        sort_keys(&mut keys, SortSpec::descending().bits(begin..end)).unwrap();
        let bits = |v: &[f32]| v.iter().map(|k| k.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&keys),
            bits(&want),
            "f32 bits {begin}..{end} descending"
        );
    }
    // An empty range at the top of a 64-bit key compares nothing.
    let mut wide = [3u64, 1, 2];
    sort_keys(&mut wide, SortSpec::ascending().bits(64..64)).unwrap();
    assert_eq!(wide, [3, 1, 2]);
    let mut keys = [1u16, 2];
    assert_eq!(
        sort_keys(&mut keys, SortSpec::ascending().bits(3..17)),
        Err(SortError::Bits {
            begin: 3,
            end: 17,
            key_bits: 16
        })
    );
    assert_eq!(
        sort_pairs(&mut keys, &mut [0u8; 3], SortSpec::ascending()),
        Err(SortError::Values { keys: 2, values: 3 })
    );
    assert_eq!(keys, [1, 2]);
}

/// A record of 24 bytes keyed by one field.
#[scan_op]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Record {
    weight: f32,
    id: u32,
    payload: [u32; 4],
}

#[sort_key(record = Record, key = f32, by = |r| r.weight)]
struct Weight;

/// By the weight's sign, then by a computed 16-bit bucket, then by the id
/// (descending ids come out with `SortOrder::Descending`).
#[sort_key(record = Record, key = (i8, u16, u32), by = |r| {
    let bucket = (r.payload[0] * 2654435761u32) >> 16;
    (if r.weight < 0.0 { -1 } else if r.weight > 0.0 { 1 } else { 0 }, bucket as u16, r.id)
})]
struct SignBucketId;

/// Two 64-bit components: 128 bits, more than one word.
#[sort_key(record = Record, key = (u64, i64), by = fn wide(r: Record) -> (u64, i64) {
    ((r.payload[1] % 3) as u64, -(r.id as i64))
})]
struct Wide;

/// The three components of `SignBucketId`, as Rust computes them.
fn sign_bucket_id(r: &Record) -> (i8, u16, u32) {
    SignBucketId::key(*r)
}

#[test]
fn records_sort_by_a_key_stage_stably() {
    let mut rng = Rng64::seed_from_u64(seed());
    let n = 70_001;
    let records: Vec<Record> = (0..n)
        .map(|i| Record {
            weight: rng.random_range(-8..8) as f32 * 0.5,
            id: i,
            payload: [i; 4],
        })
        .collect();
    let mut sorted = records.clone();
    sort_by_key::<Weight>(&mut sorted, SortSpec::descending()).unwrap();
    let mut want = records.clone();
    want.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    assert_eq!(sorted, want);
}

/// Records whose fields repeat often, so that every component decides
/// some comparisons.
fn tied_records(rng: &mut Rng64, n: u32) -> Vec<Record> {
    (0..n)
        .map(|i| Record {
            weight: rng.random_range(-2..=2) as f32,
            id: i,
            payload: [rng.random_range(0..64), rng.random_range(0..7), i, 0],
        })
        .collect()
}

#[test]
fn records_sort_by_several_components_most_significant_first() {
    let mut rng = Rng64::seed_from_u64(seed());
    for n in [0u32, 1, 2, 31, 255, (1 << 14) + 1, 70_001] {
        let records = tied_records(&mut rng, n);
        for order in [SortOrder::Ascending, SortOrder::Descending] {
            let spec = SortSpec { order, bits: None };
            // Lexicographic on the tuple, ties in input order.
            let mut want = records.clone();
            match order {
                SortOrder::Ascending => want.sort_by_key(sign_bucket_id),
                SortOrder::Descending => want.sort_by_key(|r| std::cmp::Reverse(sign_bucket_id(r))),
            }
            let mut got = records.clone();
            sort_by_key::<SignBucketId>(&mut got, spec.clone()).unwrap();
            assert_eq!(got, want, "n = {n}, {order:?}");
            let p = argsort_by_key::<SignBucketId>(&records, spec.clone()).unwrap();
            assert_eq!(p.iter().map(|&i| records[i]).collect::<Vec<_>>(), want);
            // 128 bits of key: the ids (second component) decide all ties.
            let mut want = records.clone();
            let wide = |r: &Record| Wide::key(*r);
            match order {
                SortOrder::Ascending => want.sort_by_key(wide),
                SortOrder::Descending => want.sort_by_key(|r| std::cmp::Reverse(wide(r))),
            }
            let mut got = records.clone();
            sort_by_key::<Wide>(&mut got, spec).unwrap();
            assert_eq!(got, want, "n = {n}, {order:?}, two 64-bit components");
        }
    }
}

/// A bit range over a composite key counts from the last component's
/// lowest bit: of (i8, u16, u32), bits 0..32 are the id, 32..48 the bucket
/// and 48..56 the sign, so 16..48 is the bucket and the id's upper half,
/// and 5..37 crosses from the id into the bucket. Each range is checked
/// against a stable sort by the same bits extracted by hand.
#[test]
fn bit_ranges_span_components() {
    let mut rng = Rng64::seed_from_u64(seed());
    let records = tied_records(&mut rng, 20_003);
    let whole = |r: &Record| -> u64 {
        let (sign, bucket, id) = sign_bucket_id(r);
        (((sign as u8 ^ 0x80) as u64) << 48) | ((bucket as u64) << 32) | id as u64
    };
    assert_eq!(<(i8, u16, u32) as CompositeKey>::WIDTHS, &[8, 16, 32]);
    for range in [0..56, 16..48, 32..56, 40..48, 48..56, 0..0, 5..37] {
        let field = |r: &Record| {
            let width = range.end - range.start;
            if width == 0 {
                0
            } else {
                (whole(r) >> range.start) & ((1u64 << width) - 1)
            }
        };
        let mut want = records.clone();
        want.sort_by_key(field);
        let mut got = records.clone();
        sort_by_key::<SignBucketId>(&mut got, SortSpec::ascending().bits(range.clone())).unwrap();
        assert_eq!(got, want, "bits {range:?}");
    }
    // Past the key's 56 bits: a typed error, nothing moved.
    let mut got = records.clone();
    assert_eq!(
        sort_by_key::<SignBucketId>(&mut got, SortSpec::ascending().bits(0..57)),
        Err(SortError::Bits {
            begin: 0,
            end: 57,
            key_bits: 56
        })
    );
    assert_eq!(got, records);
}

#[test]
fn segments_sort_on_their_own() {
    let mut rng = Rng64::seed_from_u64(seed());
    let n = 200_000;
    let input: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..1000)).collect();
    // Power-law segment lengths with empty ones, a gap before the first
    // segment and after the last (left as they are).
    let mut offsets = vec![17u64];
    while *offsets.last().unwrap() < n as u64 - 100 {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        let len = if rng.random_range(0..8) == 0 {
            0
        } else {
            (u.powf(-1.0 / 1.1) as u64).min(20_000)
        };
        offsets.push((*offsets.last().unwrap() + len).min(n as u64 - 100));
    }
    for order in [SortOrder::Ascending, SortOrder::Descending] {
        let mut keys = input.clone();
        segmented_sort_keys(&mut keys, &offsets, SortSpec { order, bits: None }).unwrap();
        let mut want = input.clone();
        for w in offsets.windows(2) {
            let segment = &mut want[w[0] as usize..w[1] as usize];
            match order {
                SortOrder::Ascending => segment.sort(),
                SortOrder::Descending => segment.sort_by(|a, b| b.cmp(a)),
            }
        }
        assert_eq!(keys, want, "{order:?}, {} segments", offsets.len() - 1);
    }
    // Float keys with signed zeros and NaNs, carrying their positions:
    // each segment sorted stably on its own.
    let floats: Vec<f32> = (0..n)
        .map(|_| [f32::from_bits(rng.random()), 0.0, -0.0, 1.0][rng.random_range(0..4)])
        .collect();
    for order in [SortOrder::Ascending, SortOrder::Descending] {
        let (mut keys, mut positions) = (floats.clone(), (0..n as u32).collect::<Vec<_>>());
        segmented_sort_pairs(
            &mut keys,
            &mut positions,
            &offsets,
            SortSpec { order, bits: None },
        )
        .unwrap();
        let mut want: Vec<(f32, u32)> = floats.iter().copied().zip(0..).collect();
        for w in offsets.windows(2) {
            want[w[0] as usize..w[1] as usize].sort_by(|a, b| match order {
                SortOrder::Ascending => f32::compare(&a.0, &b.0),
                SortOrder::Descending => f32::compare(&b.0, &a.0),
            });
        }
        assert_eq!(
            positions,
            want.iter().map(|p| p.1).collect::<Vec<_>>(),
            "pairs {order:?}"
        );
        assert!(keys
            .iter()
            .zip(&want)
            .all(|(k, w)| k.to_bits() == w.0.to_bits()));
    }
    let mut keys = input.clone();
    assert!(matches!(
        segmented_sort_keys(&mut keys, &[0u32, 5, 3], SortSpec::ascending()),
        Err(SortError::Offsets(_))
    ));
    assert_eq!(keys, input);
}
