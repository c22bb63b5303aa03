//! The compensated float sum (`ops::CompensatedF32`)
//! against exact prefix sums, on the CPU backend and, where a GPU is
//! usable, on the GPU: within the bound the double-word addition proves,
//! and far more accurate than plain sums on inputs that defeat them.
//! `COMPENSATED_SEED` replays a run.

mod common;
#[path = "../examples/common/exact_sum.rs"]
mod exact_sum;

use exact_sum::{adversarial, exact_prefixes, max_errors, random_f32, to_grid};
use gpu_scan::ops::{CompensatedF32, Sum};
use gpu_scan::prelude::*;
use rand::SeedableRng;

type Rng64 = rand::rngs::StdRng;

/// u² for f32 (u = 2^-24).
const U2_F32: f64 = 1.0 / (1u64 << 48) as f64;

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

/// One exact input pair per case: random values of both signs, and the
/// adversarial runs.
fn f32_inputs(n: usize, rng: &mut Rng64) -> Vec<(&'static str, Vec<f32>)> {
    let random: Vec<f32> = (0..n).map(|_| random_f32(rng)).collect();
    let hard = adversarial(n, 1048576.0, || random_f32(rng) as f64 * 1e-3)
        .into_iter()
        .map(|x| x as f32)
        .collect::<Vec<_>>();
    // Every value is on the grid, and f32 -> f64 is exact.
    let hard = hard
        .into_iter()
        .map(|x| f32::from_bits(x.to_bits()))
        .collect();
    vec![("random", random), ("adversarial", hard)]
}

/// Errors of plain and compensated f32 prefix sums of `input`, as
/// `(plain, compensated)`, each relative to the magnitudes' sum and to the
/// exact prefix ([`max_errors`]), for `scan` (the CPU's or the GPU's).
fn f32_errors(
    input: &[f32],
    scan_plain: impl FnOnce(&[f32]) -> Vec<f32>,
    scan_pairs: impl FnOnce(&[CompensatedF32]) -> Vec<CompensatedF32>,
) -> ((f64, f64), (f64, f64)) {
    let wide: Vec<f64> = input.iter().map(|&x| x as f64).collect();
    let (exact, magnitudes) = exact_prefixes(&wide);
    let plain: Vec<i128> = scan_plain(input)
        .iter()
        .map(|&v| to_grid(v as f64))
        .collect();
    let pairs: Vec<CompensatedF32> = input.iter().map(|&x| CompensatedF32::new(x)).collect();
    let compensated: Vec<i128> = scan_pairs(&pairs)
        .iter()
        .map(|p| to_grid(p.sum as f64) + to_grid(p.err as f64))
        .collect();
    (
        max_errors(&plain, &exact, &magnitudes),
        max_errors(&compensated, &exact, &magnitudes),
    )
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
fn compensated_f32_sums_on_the_cpu_are_within_the_bound() {
    let mut rng = Rng64::seed_from_u64(seed());
    let n = (1 << 20) + 17;
    for (case, input) in f32_inputs(n, &mut rng) {
        let (plain, compensated) = f32_errors(
            &input,
            cpu::inclusive_vec::<Sum<f32>>,
            cpu::inclusive_vec::<CompensatedF32>,
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
}

/// The same on the GPU, where one is usable: 2^24 + 3 elements, every
/// path the planner picks by itself.
#[cfg(feature = "gpu")]
#[test]
fn compensated_f32_sums_on_the_gpu_are_within_the_bound() {
    let Some(ctx) = common::gpu::open_gpu("compensated") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng64::seed_from_u64(seed());
    let n = (1 << 24) + 3;
    let mut plain_scanner = GpuScanner::<Sum<f32>>::new(&ctx).unwrap();
    let mut scanner = GpuScanner::<CompensatedF32>::new(&ctx).unwrap();
    for (case, input) in f32_inputs(n, &mut rng) {
        let (plain, compensated) = f32_errors(
            &input,
            |x| {
                let d = stream.clone_htod(x).unwrap();
                let mut out = stream.alloc_zeros::<f32>(x.len()).unwrap();
                plain_scanner
                    .scan(&stream, ScanKind::Inclusive, &d, &mut out)
                    .unwrap();
                stream.clone_dtoh(&out).unwrap()
            },
            |x| {
                let d = stream.clone_htod(x).unwrap();
                let mut out = stream.alloc_zeros::<CompensatedF32>(x.len()).unwrap();
                scanner
                    .scan(&stream, ScanKind::Inclusive, &d, &mut out)
                    .unwrap();
                stream.clone_dtoh(&out).unwrap()
            },
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
}
