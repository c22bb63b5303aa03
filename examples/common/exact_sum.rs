//! Exact prefix sums of floats, to measure rounding errors: inputs drawn on
//! a grid of 2^-64 (every value a multiple of it, at most 2^56 in magnitude),
//! so every partial sum is an `i128` in units of 2^-64, kept as the inputs
//! are walked (nothing of the input's length is stored: 2^28 elements fit).
#![allow(dead_code)] // each user takes a part

use rand::Rng;

/// Units per 1.0.
const SCALE: f64 = 18446744073709551616.0; // 2^64

/// `x` in units of 2^-64, rounded towards 0: exact for a value on the
/// grid, which every input is, and every `f64` of at least 2^-12.
pub fn to_grid(x: f64) -> i128 {
    (x * SCALE) as i128
}

/// A random `f32` on the grid: a 24-bit mantissa times 2^e, e in
/// [-64, -24] so that the value lies in about [2^-41, 1).
pub fn random_f32(rng: &mut impl Rng) -> f32 {
    random_f32_below(rng, 0)
}

/// The same below 2^`top` (e in [-64, `top` - 24]).
pub fn random_f32_below(rng: &mut impl Rng, top: i32) -> f32 {
    let mantissa = rng.random_range(-(1i32 << 24)..=(1 << 24)) as f32;
    let e = rng.random_range(-64..=top - 24);
    mantissa * 2f32.powi(e)
}

/// A random `f64` on the grid: a 53-bit mantissa times 2^e, e in [-64,
/// -53], so that the value lies in about [2^-11, 1).
pub fn random_f64(rng: &mut impl Rng) -> f64 {
    let mantissa = rng.random_range(-(1i64 << 53)..=(1 << 53)) as f64;
    let e = rng.random_range(-64..=-53);
    mantissa * 2f64.powi(e)
}

/// An input that plain float sums get badly wrong: runs of small values
/// between a large value and its negation, so that the small ones are
/// added to the large partial sum and mostly rounded away. `big` is the
/// large value (2^20 for `f32`, 2^56 for `f64`); `small` must give values
/// on the grid.
pub fn adversarial(n: usize, big: f64, mut small: impl FnMut() -> f64) -> Vec<f64> {
    (0..n)
        .map(|i| match i % 64 {
            0 => big,
            63 => -big,
            _ => small(),
        })
        .collect()
}

/// The two inputs of every measurement, `f32` on the grid: random values of
/// both signs, and the adversarial runs of 2^20 and random values below
/// 2^-10 (all of which a sum near 2^20, whose ulp is 2^-3, rounds away).
pub fn f32_cases(n: usize, rng: &mut impl Rng) -> [(&'static str, Vec<f32>); 2] {
    let random = (0..n).map(|_| random_f32(rng)).collect();
    let hard = adversarial(n, (1u64 << 20) as f64, || random_f32_below(rng, -10) as f64);
    // Every value is an f32 (2^20, or a 24-bit mantissa): the casts are exact.
    let hard = hard.into_iter().map(|x| x as f32).collect();
    [("random", random), ("adversarial", hard)]
}

/// The same for `f64`: random values of both signs in about [2^-11, 1)
/// (whose sums a double-word pair holds exactly: 2^-64 to 2^20 is 84
/// bits), and adversarial runs of 2^56 and random values (whose bits below
/// 2^4 a plain sum near 2^56 rounds away, and of which the pair, 120 bits
/// from 2^56 to 2^-64, rounds some).
pub fn f64_cases(n: usize, rng: &mut impl Rng) -> [(&'static str, Vec<f64>); 2] {
    let random = (0..n).map(|_| random_f64(rng)).collect();
    let hard = adversarial(n, (1u64 << 56) as f64, || random_f64(rng));
    [("random", random), ("adversarial", hard)]
}

/// The largest errors of computed prefix sums against the exact ones, as
/// `(of the magnitudes, of the exact prefix)`: relative to the sum of the
/// magnitudes so far (the measure summation's error bounds are stated in)
/// and to the exact prefix itself where it is not 0 (what a user sees).
/// `input` gives the values (on the grid), `computed` each prefix as a
/// rounded sum and what it lost (`(sum, 0.0)` for a plain sum, `(sum, err)`
/// for a compensated pair): the error is `(sum - exact) + err`, the first
/// difference exact in grid units, so an `err` far below the grid counts.
pub fn max_errors(
    input: impl IntoIterator<Item = f64>,
    computed: impl IntoIterator<Item = (f64, f64)>,
) -> (f64, f64) {
    let (mut exact, mut magnitude) = (0i128, 0f64);
    let (mut of_magnitudes, mut of_exact) = (0f64, 0f64);
    for (x, (sum, err)) in input.into_iter().zip(computed) {
        exact += to_grid(x);
        magnitude += x.abs();
        // sum's distance to the grid (exact: 0 at 2^-12 and above, where
        // sum is on the grid) keeps a sum below the grid exact too.
        let grid = to_grid(sum);
        let below = sum - grid as f64 / SCALE;
        let error = (((grid - exact) as f64) / SCALE + below + err).abs();
        // A NaN (an output never written, poisoned) is no small error.
        let error = if error.is_nan() { f64::INFINITY } else { error };
        of_magnitudes = of_magnitudes.max(error / magnitude.max(f64::MIN_POSITIVE));
        if exact != 0 {
            of_exact = of_exact.max(error / (exact as f64 / SCALE).abs());
        }
    }
    (of_magnitudes, of_exact)
}
