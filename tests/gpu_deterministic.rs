//! Deterministic scans (`Tuning::deterministic`) on the GPU: the same bits
//! run after run on several streams, for a prefix of the input as for the
//! whole (batch invariance), and for the program built for sm_90 and for
//! compute_80 (PTX the driver compiles); and columns refused with a typed
//! error. Float operators, where the order of combination shows in the
//! bits: `f32` sums of values spanning twelve orders of magnitude, and
//! affine maps (non-commutative). `GPU_SUITE_SEED` replays a run;
//! `GPU_DETERMINISTIC_LOG2` sets the length (2^22 + 3).
#![cfg(feature = "gpu")]

mod common;
use common::gpu::{open_gpu, Case, Rng64};
use common::ops::Affine;
use gpu_scan::ops::Sum;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaContext, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::{ScanError, TARGET_ARCH_ENV};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

fn deterministic<Op: ScanOp>(ctx: &Arc<CudaContext>) -> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let mut scanner = GpuScanner::<Op>::new(ctx).unwrap();
    scanner.set_tuning(scanner.tuning().with_deterministic(true));
    scanner
}

/// `spec` of `input` on a new stream of `ctx`, output poisoned first.
fn run<Op: ScanOp>(
    ctx: &Arc<CudaContext>,
    scanner: &mut GpuScanner<Op>,
    spec: ScanSpec<Op::Element>,
    input: &[Op::Element],
    poison: Op::Element,
) -> Vec<Op::Element>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let stream = ctx.new_stream().unwrap();
    let d = stream.clone_htod(input).unwrap();
    let mut out = stream.clone_htod(&vec![poison; input.len()]).unwrap();
    scanner.scan(&stream, spec, &d, &mut out).unwrap();
    stream.clone_dtoh(&out).unwrap()
}

fn bits<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain-old-data elements (f32, a struct of two f32), read as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        .to_vec()
}

fn check_op<Op: ScanOp<Element: std::fmt::Debug>>(
    ctx: &Arc<CudaContext>,
    rng: &mut Rng64,
    input: Vec<Op::Element>,
    poison: Op::Element,
) where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let tile = GpuScanner::<Op>::new(ctx).unwrap().tile_items();
    let specs = [
        ScanSpec::inclusive(),
        ScanSpec::exclusive(),
        ScanSpec::inclusive().reverse(),
    ];
    for spec in specs {
        let mut scanner = deterministic::<Op>(ctx);
        let first = run(ctx, &mut scanner, spec, &input, poison);
        // The same bits on five more streams, two scanners alive.
        let mut other = deterministic::<Op>(ctx);
        for round in 0..5 {
            let s = if round % 2 == 0 {
                &mut scanner
            } else {
                &mut other
            };
            assert_eq!(
                bits(&run(ctx, s, spec, &input, poison)),
                bits(&first),
                "{} {spec:?} round {round}",
                Op::NAME
            );
        }
        // Batch invariance: a forward scan of a prefix is the prefix of
        // the scan (a reverse one: of a suffix).
        let n = input.len();
        let mut cuts = vec![
            1,
            31,
            32,
            33,
            tile - 1,
            tile,
            tile + 1,
            5 * tile + 7,
            n / 2 + rng.random_range(0..tile),
        ];
        cuts.retain(|&m| m > 0 && m < n);
        for m in cuts {
            let (part, whole) = if spec.direction == Direction::Forward {
                (
                    run(ctx, &mut scanner, spec, &input[..m], poison),
                    &first[..m],
                )
            } else {
                (
                    run(ctx, &mut scanner, spec, &input[n - m..], poison),
                    &first[n - m..],
                )
            };
            assert_eq!(
                bits(&part),
                bits(whole),
                "{} {spec:?}: the first {m} of {n}",
                Op::NAME
            );
        }
    }
    println!(
        "{}: {} elements, same bits in every run and every prefix",
        Op::NAME,
        input.len()
    );
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
    check_op::<Sum<f32>>(&ctx, &mut rng, sums.clone(), f32::NAN);
    let maps: Vec<Affine> = (0..n).map(|_| Affine::random(&mut rng)).collect();
    check_op::<Affine>(
        &ctx,
        &mut rng,
        maps,
        Affine {
            a: f32::NAN,
            b: f32::NAN,
        },
    );

    // The program for compute_80 (PTX the driver compiles for this GPU):
    // the same bits as the device's own.
    let mut own = deterministic::<Sum<f32>>(&ctx);
    let want = run(&ctx, &mut own, ScanSpec::inclusive(), &sums, f32::NAN);
    // SAFETY-free: one test in this binary sets the variable, before its
    // scanners compile for it.
    std::env::set_var(TARGET_ARCH_ENV, "compute_80");
    let mut older = deterministic::<Sum<f32>>(&ctx);
    let got = run(&ctx, &mut older, ScanSpec::inclusive(), &sums, f32::NAN);
    std::env::remove_var(TARGET_ARCH_ENV);
    assert_eq!(
        bits(&got),
        bits(&want),
        "compute_80 against the device's own architecture"
    );
    println!("gpu_deterministic: compute_80 gives the device's bits");

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
