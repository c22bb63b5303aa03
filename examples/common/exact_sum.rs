//! Exact prefix sums of floats, to measure rounding errors: inputs drawn on
//! a grid of 2^-64 (every value a multiple of it, below 2^40 in magnitude),
//! so every partial sum is an `i128` in units of 2^-64.
#![allow(dead_code)] // each user takes a part

use rand::Rng;

/// Units per 1.0.
const SCALE: f64 = 18446744073709551616.0; // 2^64

/// `x` in units of 2^-64 (exact for a value on the grid; a value below it,
/// which a rounded result may be, loses less than one unit).
pub fn to_grid(x: f64) -> i128 {
    (x * SCALE) as i128
}

/// A random `f32` on the grid: a 24-bit mantissa times 2^e, e in
/// [-64, -24] so that the value lies in about [2^-41, 1).
pub fn random_f32(rng: &mut impl Rng) -> f32 {
    let mantissa = rng.random_range(-(1i32 << 24)..=(1 << 24)) as f32;
    let e = rng.random_range(-64..=-24);
    mantissa * 2f32.powi(e)
}

/// A random `f64` on the grid: a 53-bit mantissa times 2^e, e in [-64,
/// -53].
pub fn random_f64(rng: &mut impl Rng) -> f64 {
    let mantissa = rng.random_range(-(1i64 << 53)..=(1 << 53)) as f64;
    let e = rng.random_range(-64..=-53);
    mantissa * 2f64.powi(e)
}

/// An input that plain float sums get badly wrong: runs of small values
/// between a large value and its negation, so that the small ones are
/// added to the large partial sum and mostly rounded away. `big` is the
/// large value (2^20 for `f32`, 2^40 for `f64`).
pub fn adversarial(n: usize, big: f64, mut small: impl FnMut() -> f64) -> Vec<f64> {
    (0..n)
        .map(|i| match i % 64 {
            0 => big,
            63 => -big,
            _ => small(),
        })
        .collect()
}

/// The exact prefix sums of `input` (on the grid), in grid units, and the
/// prefix sums of the magnitudes (for errors relative to them).
pub fn exact_prefixes(input: &[f64]) -> (Vec<i128>, Vec<f64>) {
    let (mut sum, mut magnitude) = (0i128, 0f64);
    input
        .iter()
        .map(|&x| {
            sum += to_grid(x);
            magnitude += x.abs();
            (sum, magnitude)
        })
        .unzip()
}

/// The largest errors of `computed` (each a value in grid units) against
/// the exact prefixes: relative to the sum of the magnitudes so far (the
/// measure summation's error bounds are stated in), and relative to the
/// exact prefix itself (where it is not 0; what a user sees).
pub fn max_errors(computed: &[i128], exact: &[i128], magnitudes: &[f64]) -> (f64, f64) {
    let (mut of_magnitudes, mut of_exact) = (0f64, 0f64);
    for ((&c, &e), &m) in computed.iter().zip(exact).zip(magnitudes) {
        let error = ((c - e) as f64 / SCALE).abs();
        of_magnitudes = of_magnitudes.max(error / m.max(f64::MIN_POSITIVE));
        if e != 0 {
            of_exact = of_exact.max(error / (e as f64 / SCALE).abs());
        }
    }
    (of_magnitudes, of_exact)
}
