//! The compensated float sums (`ops::CompensatedF32`, `ops::CompensatedF64`)
//! against exact prefix sums, on the CPU backend and, where a GPU is
//! usable, on the GPU: within the bound the double-word addition proves,
//! and far more accurate than plain sums on inputs that defeat them.
//! `COMPENSATED_SEED` replays a run.

mod common;
#[path = "../examples/common/exact_sum.rs"]
mod exact_sum;

use exact_sum::{f32_cases, f64_cases, max_errors, random_f32, random_f64};
use gpu_scan::ops::{CompensatedF32, CompensatedF64, Sum};
use gpu_scan::prelude::*;
use rand::{Rng, SeedableRng};

type Rng64 = rand::rngs::StdRng;

/// u² for f32 (u = 2^-24) and f64 (u = 2^-53).
const U2_F32: f64 = 1.0 / (1u64 << 48) as f64;
const U2_F64: f64 = U2_F32 * U2_F32 / (1u64 << 10) as f64;

/// The bound on a prefix's error relative to the sum of the magnitudes
/// before it: AccurateDWPlusDW errs by at most 3u² (plus 13u³) of its
/// result a step, and no prefix takes more than `n` steps, each result at
/// most that sum: n·4u².
fn bound(n: usize, u2: f64) -> f64 {
    n as f64 * 4.0 * u2
}

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("COMPENSATED_SEED");
    println!("compensated: seed {seed} (COMPENSATED_SEED={seed} replays)");
    seed
}

/// Errors of a plain and a compensated prefix sum of `input` ([`max_errors`]),
/// as `(plain, compensated)`.
fn errors<T: Copy + Into<f64>, P: Copy>(
    input: &[T],
    plain: &[T],
    pairs: &[P],
    split: impl Fn(P) -> (f64, f64),
) -> ((f64, f64), (f64, f64)) {
    let wide = || input.iter().map(|&x| x.into());
    (
        max_errors(wide(), plain.iter().map(|&v| (v.into(), 0.0))),
        max_errors(wide(), pairs.iter().map(|&p| split(p))),
    )
}

fn split_f32(p: CompensatedF32) -> (f64, f64) {
    (p.sum as f64, p.err as f64)
}

fn split_f64(p: CompensatedF64) -> (f64, f64) {
    (p.sum, p.err)
}

/// Prints a case's errors and checks them: the compensated one within
/// [`bound`] of the magnitudes' sum, and on the adversarial input the plain
/// one a thousand times worse by the same measure, so the test can tell
/// the two apart. (Relative to the exact prefix, which the adversarial
/// input brings near 0, both can be large: only printed.) `floor` is the
/// smallest error worth comparing (u²).
fn judge(
    label: &str,
    case: &str,
    plain: (f64, f64),
    compensated: (f64, f64),
    bound: f64,
    floor: f64,
) {
    println!(
        "{label} {case}: plain {:.3e} of the magnitudes, {:.3e} of the exact sum; compensated {:.3e}, {:.3e}",
        plain.0, plain.1, compensated.0, compensated.1
    );
    assert!(
        compensated.0 <= bound,
        "{label} {case}: {compensated:?} over {bound:e}"
    );
    if case == "adversarial" {
        assert!(
            plain.0 > 1e3 * compensated.0.max(floor),
            "{label} {case}: plain {plain:?}"
        );
    }
}

#[test]
fn compensated_sums_on_the_cpu_are_within_the_bound() {
    let mut rng = Rng64::seed_from_u64(seed());
    let n = (1 << 20) + 17;
    for (case, input) in f32_cases(n, &mut rng) {
        let pairs: Vec<CompensatedF32> = input.iter().map(|&x| CompensatedF32::new(x)).collect();
        let (plain, compensated) = errors(
            &input,
            &cpu::inclusive_vec::<Sum<f32>>(&input),
            &cpu::inclusive_vec::<CompensatedF32>(&pairs),
            split_f32,
        );
        judge(
            "cpu f32",
            case,
            plain,
            compensated,
            bound(n, U2_F32),
            U2_F32,
        );
    }
    for (case, input) in f64_cases(n, &mut rng) {
        let pairs: Vec<CompensatedF64> = input.iter().map(|&x| CompensatedF64::new(x)).collect();
        let (plain, compensated) = errors(
            &input,
            &cpu::inclusive_vec::<Sum<f64>>(&input),
            &cpu::inclusive_vec::<CompensatedF64>(&pairs),
            split_f64,
        );
        judge(
            "cpu f64",
            case,
            plain,
            compensated,
            bound(n, U2_F64),
            U2_F64,
        );
    }
}

/// Two values whose sum f32 rounds: the pair holds it exactly (TwoSum),
/// in either order, and the identity leaves a normalised pair alone.
#[test]
fn one_step_is_exact() {
    let mut rng = Rng64::seed_from_u64(seed());
    for _ in 0..100_000 {
        let (a, b) = (random_f32(&mut rng), random_f32(&mut rng) * 1e-4);
        let ab = CompensatedF32::combine(CompensatedF32::new(a), CompensatedF32::new(b));
        assert_eq!(
            ab.sum as f64 + ab.err as f64,
            a as f64 + b as f64,
            "{a} + {b}"
        );
        assert_eq!(
            ab,
            CompensatedF32::combine(CompensatedF32::new(b), CompensatedF32::new(a))
        );
        assert_eq!(CompensatedF32::combine(CompensatedF32::IDENTITY, ab), ab);
        assert_eq!(CompensatedF32::combine(ab, CompensatedF32::IDENTITY), ab);
    }
    // Infinities stay infinities, as in a plain sum.
    let inf = CompensatedF32::combine(CompensatedF32::new(f32::INFINITY), CompensatedF32::new(1.0));
    assert_eq!((inf.sum, inf.err), (f32::INFINITY, 0.0));
    // The same for f64, the exact sums on the grid (a, b and err all lie on it).
    use exact_sum::to_grid;
    for _ in 0..100_000 {
        // b below 2^-24 on the grid: a + b rounds, and its error is a
        // multiple of 2^-64 too.
        let b = rng.random_range(-(1i64 << 40)..=1 << 40) as f64 * 2f64.powi(-64);
        let a = random_f64(&mut rng);
        let ab = CompensatedF64::combine(CompensatedF64::new(a), CompensatedF64::new(b));
        assert_eq!(
            to_grid(ab.sum) + to_grid(ab.err),
            to_grid(a) + to_grid(b),
            "{a} + {b}"
        );
        assert_eq!(
            ab,
            CompensatedF64::combine(CompensatedF64::new(b), CompensatedF64::new(a))
        );
        assert_eq!(CompensatedF64::combine(CompensatedF64::IDENTITY, ab), ab);
    }
    let nan = CompensatedF64::combine(CompensatedF64::new(f64::NAN), CompensatedF64::new(1.0));
    assert!(nan.sum.is_nan() && nan.err == 0.0);
}

/// The same on the GPU, where one is usable: 2^24 + 3 elements, every
/// path the planner picks by itself, for both widths.
#[cfg(feature = "gpu")]
#[test]
fn compensated_sums_on_the_gpu_are_within_the_bound() {
    use gpu_scan::scan_runtime::cudarc::driver::{CudaStream, DeviceRepr, ValidAsZeroBits};
    use std::sync::Arc;

    /// `Op`'s inclusive scan of `x` on the GPU, its output poisoned first.
    fn on_gpu<Op: ScanOp>(
        stream: &Arc<CudaStream>,
        x: &[Op::Element],
        poison: Op::Element,
    ) -> Vec<Op::Element>
    where
        Op::Element: DeviceRepr + ValidAsZeroBits,
    {
        let mut scanner = GpuScanner::<Op>::new(stream.context()).unwrap();
        let d = stream.clone_htod(x).unwrap();
        let mut out = stream.clone_htod(&vec![poison; x.len()]).unwrap();
        scanner
            .scan(stream, ScanKind::Inclusive, &d, &mut out)
            .unwrap();
        stream.clone_dtoh(&out).unwrap()
    }

    let Some(ctx) = common::gpu::open_gpu("compensated") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng64::seed_from_u64(seed());
    let n = (1 << 24) + 3;
    for (case, input) in f32_cases(n, &mut rng) {
        let pairs: Vec<CompensatedF32> = input.iter().map(|&x| CompensatedF32::new(x)).collect();
        let nan = CompensatedF32 {
            sum: f32::NAN,
            err: f32::NAN,
        };
        let (plain, compensated) = errors(
            &input,
            &on_gpu::<Sum<f32>>(&stream, &input, f32::NAN),
            &on_gpu::<CompensatedF32>(&stream, &pairs, nan),
            split_f32,
        );
        judge(
            "gpu f32",
            case,
            plain,
            compensated,
            bound(n, U2_F32),
            U2_F32,
        );
    }
    for (case, input) in f64_cases(n, &mut rng) {
        let pairs: Vec<CompensatedF64> = input.iter().map(|&x| CompensatedF64::new(x)).collect();
        let nan = CompensatedF64 {
            sum: f64::NAN,
            err: f64::NAN,
        };
        let (plain, compensated) = errors(
            &input,
            &on_gpu::<Sum<f64>>(&stream, &input, f64::NAN),
            &on_gpu::<CompensatedF64>(&stream, &pairs, nan),
            split_f64,
        );
        judge(
            "gpu f64",
            case,
            plain,
            compensated,
            bound(n, U2_F64),
            U2_F64,
        );
    }
}
