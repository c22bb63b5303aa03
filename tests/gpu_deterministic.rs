//! Deterministic scans (`Tuning::deterministic`) on the GPU: the same bits
//! run after run on several streams, for a prefix of the input as for the
//! whole (batch invariance), on every path a plain scan takes (the one
//! pass, where it runs; the three passes, forced by the path and by an
//! unaligned input), and for the program built for sm_90 and for compute_80
//! (PTX the driver compiles, which has no one pass); and columns refused
//! with a typed error. Float operators, where the order of combination shows in the
//! bits: `f32` sums of values spanning twelve orders of magnitude, and
//! affine maps (non-commutative), plain and by key (runs of 1 to 200),
//! inclusive and exclusive, forward and reverse. `GPU_SUITE_SEED` replays a run;
//! `GPU_DETERMINISTIC_LOG2` sets the length (2^22 + 3).
#![cfg(feature = "gpu")]

mod common;
use common::gpu::{open_gpu, Case, Rng64};
use common::ops::Affine;
use gpu_scan::ops::Sum;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaContext, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::{DeviceSegments, ScanError, ScanPath, TARGET_ARCH_ENV};
use gpu_scan::segmented::{self as cpu_segmented, Segments};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// An `f32` sum in tiles of 32 elements (one warp, one item each): at
/// 2^22 + 3 elements, 131,073 tiles, whose totals one warp chains.
#[scan_op(element = f32, identity = 0.0, op = |a, b| a + b, block_threads = 32, items_per_thread = 1)]
struct TinyTileSum;

fn deterministic<Op: ScanOp>(ctx: &Arc<CudaContext>) -> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let mut scanner = GpuScanner::<Op>::new(ctx).unwrap();
    scanner.set_tuning(scanner.tuning().with_deterministic(true));
    scanner
}

/// A deterministic scanner whose plain scans take the three passes
/// (`ScanPath::ReduceThenScan`), wherever the one pass could run.
fn three_passes<Op: ScanOp>(ctx: &Arc<CudaContext>) -> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let mut scanner = deterministic::<Op>(ctx);
    scanner.set_tuning(scanner.tuning().with_path(ScanPath::ReduceThenScan));
    scanner
}

/// The tiles of a deterministic plain scan, and the tiles a round of its
/// one pass's lookahead polls (32 lanes' worth).
fn deterministic_tiles<Op: ScanOp>() -> (usize, usize) {
    let layout = gpu_scan::scan_runtime::layout::<Op>();
    (
        layout.deterministic_tile_items(),
        32 * layout.lookahead_tiles_per_lane as usize * layout.deterministic_tile_items(),
    )
}

/// `spec` of `input[1..]` read through a view one element past the start
/// of its buffer (not 16-byte aligned, so no one pass), into such a view.
fn run_unaligned<Op: ScanOp>(
    ctx: &Arc<CudaContext>,
    scanner: &mut GpuScanner<Op>,
    spec: ScanSpec<Op::Element>,
    case: &Input<'_, Op::Element>,
) -> Vec<Op::Element>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let stream = ctx.new_stream().unwrap();
    let n = case.input.len();
    let d = stream.clone_htod(case.input).unwrap();
    let mut out = stream.clone_htod(&vec![case.poison; n]).unwrap();
    {
        let mut view = out.slice_mut(1..n);
        scanner
            .scan(&stream, spec, &d.slice(1..n), &mut view)
            .unwrap();
    }
    stream.clone_dtoh(&out).unwrap()[1..].to_vec()
}

/// What a check scans: the elements, their segment keys (a scan by key)
/// or none, and the value outputs are poisoned with.
struct Input<'a, E> {
    input: &'a [E],
    /// Segment keys, one per element: a scan by key.
    keys: Option<&'a [u32]>,
    poison: E,
}

/// `spec` of `case.input[range]` (by the keys of the same range, if any)
/// on a new stream of `ctx`, its output poisoned first.
fn run<Op: ScanOp>(
    ctx: &Arc<CudaContext>,
    scanner: &mut GpuScanner<Op>,
    spec: ScanSpec<Op::Element>,
    case: &Input<'_, Op::Element>,
    range: std::ops::Range<usize>,
) -> Vec<Op::Element>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let stream = ctx.new_stream().unwrap();
    let d = stream.clone_htod(&case.input[range.clone()]).unwrap();
    let mut out = stream.clone_htod(&vec![case.poison; range.len()]).unwrap();
    match case.keys {
        None => scanner.scan(&stream, spec, &d, &mut out).unwrap(),
        Some(keys) => {
            let d_keys = stream.clone_htod(&keys[range]).unwrap();
            let spec = spec.segments(DeviceSegments::keys(&d_keys));
            scanner.scan(&stream, spec, &d, &mut out).unwrap()
        }
    }
    stream.clone_dtoh(&out).unwrap()
}

/// Every spec the checks run: inclusive and exclusive, forward and reverse.
fn specs<E>() -> [ScanSpec<E>; 4] {
    [
        ScanSpec::inclusive(),
        ScanSpec::exclusive(),
        ScanSpec::inclusive().reverse(),
        ScanSpec::exclusive().reverse(),
    ]
}

fn bits<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain-old-data elements (f32, a struct of two f32), read as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        .to_vec()
}

/// The same bits in every run, and batch invariance: a forward scan of a
/// prefix of the input is the prefix of the whole's scan; a reverse scan
/// of a suffix is the suffix of the whole's where the suffix starts on one
/// of the whole's tile boundaries (a reverse scan's tiles lie where a
/// forward scan's do in memory, from the input's start, so that vector
/// loads stay aligned: elsewhere its tiles, and so its bits, differ).
fn check_op<Op: ScanOp<Element: std::fmt::Debug>>(
    ctx: &Arc<CudaContext>,
    rng: &mut Rng64,
    case: Input<'_, Op::Element>,
) where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let n = case.input.len();
    // Plain scans' tiles are the deterministic ones; by key, reduce-then-scan's.
    let (tile, poll_round) = if case.keys.is_some() {
        let tile = GpuScanner::<Op>::new(ctx).unwrap().tile_items();
        (tile, 32 * tile)
    } else {
        deterministic_tiles::<Op>()
    };
    let label = if case.keys.is_some() {
        "by key"
    } else {
        "plain"
    };
    for spec in specs() {
        let mut scanner = deterministic::<Op>(ctx);
        let first = run(ctx, &mut scanner, spec, &case, 0..n);
        if case.keys.is_none() {
            // The three passes give the one pass's bits, and so does an
            // unaligned input (three passes) the aligned one's.
            let mut three = three_passes::<Op>(ctx);
            assert_eq!(
                bits(&run(ctx, &mut three, spec, &case, 0..n)),
                bits(&first),
                "{} {spec:?}: three passes against the one",
                Op::NAME
            );
            let aligned = run(ctx, &mut scanner, spec, &case, 1..n);
            assert_eq!(
                bits(&run_unaligned(ctx, &mut scanner, spec, &case)),
                bits(&aligned),
                "{} {spec:?}: an unaligned input",
                Op::NAME
            );
        }
        // The same bits on five more streams, two scanners alive.
        let mut other = deterministic::<Op>(ctx);
        for round in 0..5 {
            let s = if round % 2 == 0 {
                &mut scanner
            } else {
                &mut other
            };
            assert_eq!(
                bits(&run(ctx, s, spec, &case, 0..n)),
                bits(&first),
                "{} {label} {spec:?} round {round}",
                Op::NAME
            );
        }
        let cuts: Vec<usize> = if spec.direction == Direction::Forward {
            vec![
                1,
                31,
                32,
                33,
                tile - 1,
                tile,
                tile + 1,
                5 * tile + 7,
                32 * tile + 1,
                poll_round - 1,
                poll_round,
                poll_round + 1,
                3 * poll_round + tile + 5,
                1024 * tile - 1,
                1024 * tile + 1,
                32_768 * tile + 1,
                n / 2 + rng.random_range(0..tile),
            ]
        } else {
            // Suffixes from tile boundaries: the partial tile alone, then
            // whole tiles more.
            let last = (n - 1) / tile * tile;
            [0, 1, 2, 33, last / tile / 2]
                .into_iter()
                .filter(|&k| k * tile <= last)
                .map(|k| n - (last - k * tile))
                .collect()
        };
        for m in cuts.into_iter().filter(|&m| m > 0 && m < n) {
            let (part, whole) = if spec.direction == Direction::Forward {
                (run(ctx, &mut scanner, spec, &case, 0..m), &first[..m])
            } else {
                (
                    run(ctx, &mut scanner, spec, &case, n - m..n),
                    &first[n - m..],
                )
            };
            assert_eq!(
                bits(&part),
                bits(whole),
                "{} {label} {spec:?}: {m} of {n}",
                Op::NAME
            );
        }
    }
    println!(
        "{} {label}: {n} elements, same bits in every run and every prefix (suffix)",
        Op::NAME,
    );
}

/// Every spec of `case` once against the CPU backend, bit for bit: for
/// inputs whose every partial combination is exact in `f32` (small
/// integers; maps with `a` = ±1 and integer `b`), any order of combination
/// gives the CPU's bits, so this checks the values the deterministic pass
/// computes, which `check_op` only checks for sameness.
fn check_exact<Op: ScanOp<Element: std::fmt::Debug>>(
    ctx: &Arc<CudaContext>,
    case: Input<'_, Op::Element>,
) where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let n = case.input.len();
    let mut scanner = deterministic::<Op>(ctx);
    for spec in specs() {
        let mut expected = vec![Op::IDENTITY; n];
        let segments = match case.keys {
            Some(keys) => Segments::keys(keys),
            None => Segments::rows(n),
        };
        cpu_segmented::par_scan::<Op>(spec, segments, case.input, &mut expected).unwrap();
        let got = run(ctx, &mut scanner, spec, &case, 0..n);
        let wrong = (0..n).find(|&i| bits(&got[i..=i]) != bits(&expected[i..=i]));
        assert!(
            wrong.is_none(),
            "{} {spec:?} by key {}: element {} of {n} is {:?}, the CPU's {:?}",
            Op::NAME,
            case.keys.is_some(),
            wrong.unwrap_or(0),
            got[wrong.unwrap_or(0)],
            expected[wrong.unwrap_or(0)]
        );
    }
}

/// Keys of runs of 1 to 200 equal keys.
fn run_keys(rng: &mut Rng64, n: usize) -> Vec<u32> {
    let mut keys = Vec::with_capacity(n);
    let mut key = 0u32;
    while keys.len() < n {
        let run = rng.random_range(1..=200).min(n - keys.len());
        keys.extend(std::iter::repeat_n(key, run));
        key += 1;
    }
    keys
}

#[test]
fn deterministic_scans_give_the_same_bits() {
    let Some(ctx) = open_gpu("gpu_deterministic") else {
        return;
    };
    let seed = common::seed::from_env_or_clock("GPU_SUITE_SEED");
    println!("gpu_deterministic: seed {seed} (GPU_SUITE_SEED={seed} replays)");
    let mut rng = Rng64::seed_from_u64(seed);
    // GPU_DETERMINISTIC_LOG2 shrinks it (scripts/gpu-check's sanitizer run).
    let log2: u32 = std::env::var("GPU_DETERMINISTIC_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(22);
    let n = (1 << log2) + 3;
    let sums: Vec<f32> = (0..n)
        .map(|_| rng.random_range(-1.0f32..1.0) * 10f32.powi(rng.random_range(-6..6)))
        .collect();
    let keys = run_keys(&mut rng, n);
    for keys in [None, Some(&keys[..])] {
        let case = Input {
            input: &sums,
            keys,
            poison: f32::NAN,
        };
        check_op::<Sum<f32>>(&ctx, &mut rng, case);
    }
    for keys in [None, Some(&keys[..])] {
        let case = Input {
            input: &sums,
            keys,
            poison: f32::NAN,
        };
        check_op::<TinyTileSum>(&ctx, &mut rng, case);
    }
    let maps: Vec<Affine> = (0..n).map(|_| Affine::random(&mut rng)).collect();
    for keys in [None, Some(&keys[..])] {
        let poison = Affine {
            a: f32::NAN,
            b: f32::NAN,
        };
        let case = Input {
            input: &maps,
            keys,
            poison,
        };
        check_op::<Affine>(&ctx, &mut rng, case);
    }

    // Values: exact inputs, every spec against the CPU. Partial sums of a
    // range of at most 2^22 + 3 values of magnitude at most 2 stay below
    // 2^24, as do the b of composed maps with a = ±1 and |b| <= 2.
    let small: Vec<f32> = (0..n).map(|_| rng.random_range(-2i32..=2) as f32).collect();
    let signs: Vec<Affine> = (0..n)
        .map(|_| Affine {
            a: if rng.random_bool(0.5) { 1.0 } else { -1.0 },
            b: rng.random_range(-2i32..=2) as f32,
        })
        .collect();
    for keys in [None, Some(&keys[..])] {
        let poison = f32::NAN;
        check_exact::<Sum<f32>>(
            &ctx,
            Input {
                input: &small,
                keys,
                poison,
            },
        );
        check_exact::<TinyTileSum>(
            &ctx,
            Input {
                input: &small,
                keys,
                poison,
            },
        );
        let poison = Affine {
            a: f32::NAN,
            b: f32::NAN,
        };
        check_exact::<Affine>(
            &ctx,
            Input {
                input: &signs,
                keys,
                poison,
            },
        );
    }
    println!("gpu_deterministic: exact inputs give the CPU's bits in every spec");

    // The program for compute_80 (PTX the driver compiles for this GPU, no
    // one pass there): the same bits as the device's own, every spec.
    let sum_case = Input {
        input: &sums,
        keys: None,
        poison: f32::NAN,
    };
    let map_case = Input {
        input: &maps,
        keys: None,
        poison: Affine {
            a: f32::NAN,
            b: f32::NAN,
        },
    };
    let mut own_sum = deterministic::<Sum<f32>>(&ctx);
    let mut own_map = deterministic::<Affine>(&ctx);
    let want: Vec<(Vec<u8>, Vec<u8>)> = specs::<f32>()
        .into_iter()
        .zip(specs::<Affine>())
        .map(|(sum_spec, map_spec)| {
            (
                bits(&run(&ctx, &mut own_sum, sum_spec, &sum_case, 0..n)),
                bits(&run(&ctx, &mut own_map, map_spec, &map_case, 0..n)),
            )
        })
        .collect();
    // SAFETY-free: one test in this binary sets the variable, before its
    // scanners compile for it.
    std::env::set_var(TARGET_ARCH_ENV, "compute_80");
    let mut older_sum = deterministic::<Sum<f32>>(&ctx);
    let mut older_map = deterministic::<Affine>(&ctx);
    for ((sum_spec, map_spec), (sum_bits, map_bits)) in
        specs::<f32>().into_iter().zip(specs::<Affine>()).zip(&want)
    {
        let got = run(&ctx, &mut older_sum, sum_spec, &sum_case, 0..n);
        assert_eq!(&bits(&got), sum_bits, "compute_80 f32 sum {sum_spec:?}");
        let got = run(&ctx, &mut older_map, map_spec, &map_case, 0..n);
        assert_eq!(&bits(&got), map_bits, "compute_80 affine {map_spec:?}");
    }
    std::env::remove_var(TARGET_ARCH_ENV);
    println!("gpu_deterministic: compute_80 gives the device's bits in every spec");

    // Columns have no deterministic form: a typed error, output untouched.
    let stream = ctx.new_stream().unwrap();
    let d = stream.clone_htod(&sums[..1024]).unwrap();
    let mut out = stream.clone_htod(&vec![f32::NAN; 1024]).unwrap();
    let err = deterministic::<Sum<f32>>(&ctx)
        .scan(&stream, ScanSpec::inclusive().columns(32), &d, &mut out)
        .unwrap_err();
    assert!(
        matches!(err, ScanError::NotDeterministic { shape: "columns" }),
        "{err}"
    );
    assert!(stream.clone_dtoh(&out).unwrap().iter().all(|x| x.is_nan()));
}
