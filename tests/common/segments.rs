//! Segment patterns for the segmented-scan tests (CPU and GPU).

#![allow(dead_code)] // each test binary uses a different part

use rand::Rng;

/// Where segments start.
#[derive(Clone, Copy, Debug)]
pub enum Pattern {
    /// Every element is a head.
    EveryElement,
    /// No flags: one segment (element 0 starts it anyway).
    OneSegment,
    /// Heads with probability 1 / mean: geometric lengths of mean `mean`.
    MeanLength(f64),
    /// Heads exactly at multiples of `stride` (tile, warp or thread
    /// boundaries), plus random ones with probability 1 / `extra_mean`.
    Stride { stride: usize, extra_mean: f64 },
}

impl Pattern {
    pub fn label(&self) -> String {
        match self {
            Pattern::EveryElement => "every element".into(),
            Pattern::OneSegment => "one segment".into(),
            Pattern::MeanLength(m) => format!("mean {m}"),
            Pattern::Stride { stride, .. } => format!("every {stride}"),
        }
    }
}

/// One byte per element. Element 0 is left unflagged half the time, to test
/// that it starts a segment regardless.
pub fn random_heads(n: usize, pattern: Pattern, rng: &mut impl Rng) -> Vec<u8> {
    let mut flags: Vec<u8> = match pattern {
        Pattern::EveryElement => vec![1; n],
        Pattern::OneSegment => vec![0; n],
        Pattern::MeanLength(mean) => {
            let p = 1.0 / mean;
            (0..n).map(|_| rng.random_bool(p) as u8).collect()
        }
        Pattern::Stride { stride, extra_mean } => {
            let p = 1.0 / extra_mean;
            (0..n)
                .map(|i| (i % stride == 0 || rng.random_bool(p)) as u8)
                .collect()
        }
    };
    // Non-zero bytes other than 1 are heads too.
    for f in flags.iter_mut() {
        if *f != 0 && rng.random_bool(0.25) {
            *f = rng.random_range(2..=255);
        }
    }
    if let Some(first) = flags.first_mut() {
        *first = rng.random_bool(0.5) as u8;
    }
    flags
}

/// The same heads packed into bits (element i = bit i % 32 of word i / 32).
/// Bits past `n` in the last word are set at random: they must be ignored.
pub fn pack_bits(flags: &[u8], rng: &mut impl Rng) -> Vec<u32> {
    let mut words = vec![0u32; flags.len().div_ceil(32)];
    for (i, &f) in flags.iter().enumerate() {
        if f != 0 {
            words[i / 32] |= 1 << (i % 32);
        }
    }
    let tail = flags.len() % 32;
    if tail != 0 {
        let last = words.len() - 1;
        words[last] |= rng.random::<u32>() << tail;
    }
    words
}

/// Segment start offsets of `flags`' heads, as a CSR row-pointer array
/// would give them, with empty segments (repeated offsets) sprinkled in and
/// the closing `n`.
pub fn offsets_of(flags: &[u8], rng: &mut impl Rng) -> Vec<u64> {
    let mut offsets = Vec::new();
    for (i, &f) in flags.iter().enumerate() {
        if f != 0 || i == 0 {
            offsets.push(i as u64);
            while rng.random_bool(0.1) {
                offsets.push(i as u64);
            }
        }
    }
    offsets.push(flags.len() as u64);
    offsets
}

/// Keys that change exactly at `flags`' heads (after element 0).
pub fn keys_of(flags: &[u8], rng: &mut impl Rng) -> Vec<u32> {
    let mut key: u32 = rng.random();
    flags
        .iter()
        .enumerate()
        .map(|(i, &f)| {
            if i > 0 && f != 0 {
                key = key.wrapping_add(rng.random_range(1..1000));
            }
            key
        })
        .collect()
}

/// Per-segment totals across ranks as the one-rank scan gives them: for
/// each shard (its segments' element ranges in its own terms,
/// `segment_ranges` of its segments, in shard order), the total of the
/// whole segment of `flags` over `whole` that each of its segments lies
/// in, and the initial value (or the identity) for an empty one.
pub fn totals_across_shards<Op: gpu_scan::ScanOp>(
    spec: gpu_scan::ScanSpec<Op::Element>,
    flags: &[u8],
    whole: &[Op::Element],
    shards: &[Vec<std::ops::Range<usize>>],
    lengths: &[usize],
) -> Vec<Vec<Op::Element>> {
    use gpu_scan::segmented::{self, HeadFlags};
    let n = whole.len();
    let global = segmented::segment_ranges(HeadFlags::Bytes(flags).into(), n);
    let mut global_totals = vec![Op::IDENTITY; global.len()];
    let mut scanned = vec![Op::IDENTITY; n];
    let with_totals = spec.segment_totals(&mut global_totals[..]);
    segmented::par_scan::<Op>(with_totals, HeadFlags::Bytes(flags), whole, &mut scanned).unwrap();
    // The global segment holding element i: the heads up to it.
    let mut heads = 0;
    let segment_of: Vec<usize> = (0..n)
        .map(|i| {
            heads += usize::from(i > 0 && flags[i] != 0);
            heads
        })
        .collect();
    let seed = spec.kind.init().unwrap_or(Op::IDENTITY);
    let mut start = 0;
    shards
        .iter()
        .zip(lengths)
        .map(|(ranges, &len)| {
            let want = ranges
                .iter()
                .map(|r| match r.is_empty() {
                    true => seed,
                    false => global_totals[segment_of[start + r.start]],
                })
                .collect();
            start += len;
            want
        })
        .collect()
}
