//! Segments given by keys on the GPU (`DeviceKeys`: a scan by key, one key
//! per element of 1, 2, 4 or 8 bytes, the heads found in each tile by
//! comparing neighbouring keys, no flags in memory), inclusive, exclusive
//! and exclusive with init, forward and in reverse (`GPU_SUITE_DIRECTIONS`
//! runs one), in both segmented strategies, through the three paths
//! (pipelined, look-back single pass, reduce-then-scan), for sums and
//! non-commutative operators.
//!
//! Keys: segment numbers rotated so that neighbouring keys differ only in
//! their top byte (a kernel comparing fewer bits than the key's width
//! misses those heads), keys alternating between two values (equal keys
//! apart are different segments), and runs of random length over an
//! alphabet of three values; over segment lengths of 1, of the whole
//! input, geometric of mean 7 and 1000, and heads on every tile boundary.
//! Widths alternate by case (`u8`, `i16`, `u32`, `i64`). Lengths 0, 1, 31,
//! 32, 33, a tile ± 1, many tiles ± 1 and a large one. Inputs are fresh
//! random values (seed printed; GPU_SUITE_SEED replays); outputs are
//! poisoned and have a poisoned guard band after them that must survive;
//! every element is compared with the CPU backend over the same keys
//! (`Segments::keys`), under the tolerances justified in
//! `tests/gpu_suite.rs`. Keys of another length than the input are refused
//! with the CPU's error and nothing is written. Without a GPU it prints one
//! line and passes.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::*;
use common::ops::*;
use common::segmented_paths::*;
use common::segments::*;
use common::specs::*;
use gpu_scan::cudarc::driver::{CudaStream, DeviceRepr};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::DeviceKeys;
use gpu_scan::segmented::{self as cpu_segmented, KeysLengthMismatch, SegmentKey, Segments};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// How a case's keys are drawn.
#[derive(Clone, Copy, Debug)]
enum KeyPattern {
    /// Segment numbers of a head pattern, rotated so that neighbours differ
    /// in the key's top byte.
    Numbers(Pattern),
    /// The segments of a head pattern keyed 0, 1, 0, 1, …
    Alternating(Pattern),
    /// Each key repeats the one before it with probability 0.7, else is
    /// drawn from {0, 1, 2} (so some draws continue the run).
    SmallAlphabet,
}

impl KeyPattern {
    fn label(&self) -> String {
        match self {
            KeyPattern::Numbers(p) => format!("numbers, {}", p.label()),
            KeyPattern::Alternating(p) => format!("alternating, {}", p.label()),
            KeyPattern::SmallAlphabet => "runs over 3 values".into(),
        }
    }

    /// The keys as `u64`s, to be cut to a width by [`Key::from_u64`] (the
    /// rotation by the width happens there).
    fn segment_numbers(&self, n: usize, rng: &mut Rng64) -> Vec<u64> {
        let numbers = |heads: &[u8]| {
            let mut s = 0u64;
            heads
                .iter()
                .enumerate()
                .map(|(i, &h)| {
                    s += (i > 0 && h != 0) as u64;
                    s
                })
                .collect::<Vec<u64>>()
        };
        match *self {
            KeyPattern::Numbers(p) => numbers(&random_heads(n, p, rng)),
            KeyPattern::Alternating(p) => numbers(&random_heads(n, p, rng))
                .into_iter()
                .map(|s| s % 2)
                .collect(),
            KeyPattern::SmallAlphabet => {
                let mut key = 0u64;
                (0..n)
                    .map(|_| {
                        if !rng.random_bool(0.7) {
                            key = rng.random_range(0..3);
                        }
                        key
                    })
                    .collect()
            }
        }
    }
}

/// A key type of the suite: built from a segment number so that
/// neighbouring numbers differ in the key's top byte.
trait Key: SegmentKey + DeviceRepr + std::fmt::Debug {
    const NAME: &'static str;
    fn from_u64(s: u64) -> Self;
}

impl Key for u8 {
    const NAME: &'static str = "u8";
    fn from_u64(s: u64) -> u8 {
        s as u8
    }
}
impl Key for i16 {
    const NAME: &'static str = "i16";
    fn from_u64(s: u64) -> i16 {
        (s as u16).rotate_left(8) as i16
    }
}
impl Key for u32 {
    const NAME: &'static str = "u32";
    fn from_u64(s: u64) -> u32 {
        (s as u32).rotate_left(24)
    }
}
impl Key for i64 {
    const NAME: &'static str = "i64";
    fn from_u64(s: u64) -> i64 {
        s.rotate_left(56) as i64
    }
}

/// (length, keys) pairs at every boundary.
fn cases<Op: ScanOp>(big: usize) -> Vec<(usize, KeyPattern)> {
    let t = Op::tile_items();
    let numbers = |m| KeyPattern::Numbers(Pattern::MeanLength(m));
    vec![
        (0, numbers(7.0)),
        (1, numbers(7.0)),
        (31, KeyPattern::Numbers(Pattern::EveryElement)),
        (32, numbers(7.0)),
        (33, KeyPattern::Numbers(Pattern::OneSegment)),
        (t - 1, KeyPattern::Alternating(Pattern::MeanLength(7.0))),
        (t, KeyPattern::SmallAlphabet),
        (t + 1, numbers(1000.0)),
        (3 * t + 17, KeyPattern::Alternating(Pattern::EveryElement)),
        (
            129 * t - 1,
            KeyPattern::Numbers(Pattern::Stride {
                stride: t,
                extra_mean: 3000.0,
            }),
        ),
        (129 * t + 1, KeyPattern::SmallAlphabet),
        (
            200 * t + 3,
            KeyPattern::Alternating(Pattern::MeanLength(1000.0)),
        ),
        (big, numbers(1000.0)),
        (big + 5, KeyPattern::SmallAlphabet),
        (big, KeyPattern::Numbers(Pattern::OneSegment)),
    ]
}

#[allow(clippy::too_many_arguments)]
fn run_case<Op: Case, K: Key>(
    scanner: &mut GpuScanner<Op>,
    stream: &Arc<CudaStream>,
    rows: &mut [Row],
    first_row: usize,
    specs: &[(&'static str, ScanSpec<Op::Element>)],
    (c, n, pattern): (usize, usize, KeyPattern),
    case_seed: u64,
) {
    let mut rng = Rng64::seed_from_u64(case_seed ^ 0x77);
    let input = random_input::<Op>(n, case_seed);
    let keys: Vec<K> = pattern
        .segment_numbers(n, &mut rng)
        .into_iter()
        .map(K::from_u64)
        .collect();
    let d_input = stream.clone_htod(&input).unwrap();
    let d_keys = stream.clone_htod(&keys).unwrap();
    let segments = (1..n).filter(|&i| keys[i] != keys[i - 1]).count() + (n > 0) as usize;
    for (k, (name, spec)) in specs.iter().enumerate() {
        let mut expected = vec![Op::IDENTITY; n];
        let mut expected_carry = Op::IDENTITY;
        cpu_segmented::par_scan::<Op>(
            spec.carry_out(&mut expected_carry),
            Segments::keys(&keys),
            &input,
            &mut expected,
        )
        .unwrap();
        // Every segment's total: the device counts them (counted slots).
        let mut expected_totals = vec![Op::IDENTITY; segments];
        cpu_segmented::par_scan::<Op>(
            spec.segment_totals(&mut expected_totals),
            Segments::keys(&keys),
            &input,
            &mut vec![Op::IDENTITY; n],
        )
        .unwrap();
        let what = format!(
            "n={n} {} ({segments} segments, {} keys)",
            pattern.label(),
            K::NAME
        );
        scan_every_path(
            scanner,
            stream,
            rows,
            first_row,
            (name, *spec),
            &what,
            c + k,
            &d_input,
            (&expected, expected_carry, Some(&expected_totals)),
            || DeviceSegments::keys(&d_keys),
        );
    }
    if stream.clone_dtoh(&d_input).unwrap() != input || stream.clone_dtoh(&d_keys).unwrap() != keys
    {
        rows[first_row]
            .failures
            .push(format!("n={n}: a scan modified its input or its keys"));
    }
}

fn run_op<Op: Case>(stream: &Arc<CudaStream>, big: usize, seed: u64, rows: &mut Vec<Row>) {
    let mut scanner = GpuScanner::<Op>::new(stream.context()).expect("scanner");
    let init = Op::random(&mut Rng64::seed_from_u64(seed ^ 0x5555));
    let specs = named_specs(init, &suite_directions());
    let first_row = path_rows::<Op>("keys", rows);
    for (c, &(n, pattern)) in cases::<Op>(big).iter().enumerate() {
        let case_seed = seed ^ (n as u64).wrapping_mul(31) ^ (c as u64) << 56;
        let case = (c, n, pattern);
        let at = (&mut scanner, stream, &mut rows[..], first_row, &specs[..]);
        match c % 4 {
            0 => run_case::<Op, u8>(at.0, at.1, at.2, at.3, at.4, case, case_seed),
            1 => run_case::<Op, i16>(at.0, at.1, at.2, at.3, at.4, case, case_seed),
            2 => run_case::<Op, u32>(at.0, at.1, at.2, at.3, at.4, case, case_seed),
            _ => run_case::<Op, i64>(at.0, at.1, at.2, at.3, at.4, case, case_seed),
        }
    }
    // Keys of another length than the input: refused, nothing written.
    let n = 3 * Op::tile_items();
    let data = stream.alloc_zeros::<Op::Element>(n).unwrap();
    for keys_len in [n - 1, n + 1] {
        let keys = stream.alloc_zeros::<u32>(keys_len).unwrap();
        let mut out = unsafe { stream.alloc::<Op::Element>(n) }.unwrap();
        poison(stream, &mut out);
        let got = scanner.scan(
            stream,
            ScanSpec::inclusive().segments(DeviceKeys::new(&keys)),
            &data,
            &mut out,
        );
        let want = KeysLengthMismatch {
            keys: keys_len,
            elements: n,
        };
        let refused = matches!(got, Err(ScanError::KeysLength(e)) if e == want);
        if !refused || !still_poisoned(stream, &out) {
            rows[first_row].failures.push(format!(
                "{keys_len} keys over {n} elements: {got:?}, output untouched: {}",
                still_poisoned(stream, &out)
            ));
        }
    }
}

#[test]
fn gpu_keys_suite() {
    let Some(ctx) = open_gpu("gpu_keys") else {
        return;
    };
    let seed = suite_seed();
    let big = std::env::var("GPU_KEYS_BIG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1usize << 22);
    println!(
        "gpu_keys: device {}, seed {seed} (GPU_SUITE_SEED={seed} replays), largest length {big}, directions {:?}",
        ctx.name().unwrap(),
        suite_directions()
    );
    let stream = ctx.default_stream();
    let mut rows = Vec::new();
    run_op::<SumU32>(&stream, big, seed, &mut rows);
    run_op::<AffineU32>(&stream, big, seed, &mut rows);
    run_op::<Mat2>(&stream, big, seed, &mut rows);
    run_op::<Latest>(&stream, big, seed, &mut rows);
    run_op::<MaxF32>(&stream, big, seed, &mut rows);
    run_op::<Affine>(&stream, big / 4, seed, &mut rows);
    let failed = print_rows(&rows);
    println!(
        "gpu_keys: {} rows, {} passed, {failed} failed (seed {seed})",
        rows.len(),
        rows.len() - failed
    );
    assert_eq!(
        failed, 0,
        "GPU scans by key differ from the CPU (seed {seed})"
    );
}
