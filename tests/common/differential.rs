//! Inputs and comparisons for the differential tests: random pairs of
//! elements drawn mostly from each field type's edge values, and a
//! field-by-field comparison that names the first field that differs.
#![allow(dead_code)]

use super::differential_ops::*;
use gpu_scan::ScanOp;
use rand::Rng;

/// How closely a field must agree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Bit for bit; for floats any NaN equals any NaN (NaN payloads and
    /// signs differ between x86 and NVIDIA GPUs, and Rust specifies neither).
    Exact,
    /// Floats within this many units in the last place (infinities and
    /// NaNs must match exactly, NaN payloads aside).
    Ulps(u64),
    /// [`Tolerance::Exact`], except that +0.0 equals -0.0: for operators
    /// whose `min`/`max` may meet two zeros, whose sign Rust leaves
    /// unspecified (CUDA's fminf returns -0.0, Rust's x86-64 code the first
    /// operand; the prelude keeps CUDA's single instruction).
    ExactUpToZeroSign,
}

/// A primitive field: edge values, random values, comparison.
pub trait Field: Copy + std::fmt::Debug {
    /// An edge value (most of the time) or a random one.
    fn pick(rng: &mut impl Rng) -> Self;
    /// Whether `got` matches `want` within `tol`.
    fn agrees(got: Self, want: Self, tol: Tolerance) -> bool;
}

macro_rules! int_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            fn pick(rng: &mut impl Rng) -> Self {
                const BITS: u32 = <$t>::BITS;
                match rng.random_range(0..10) {
                    0 => [0, 1, <$t>::MAX, <$t>::MIN, <$t>::MAX - 1, <$t>::MIN.wrapping_add(1), (0 as $t).wrapping_sub(1)][rng.random_range(0..7)],
                    // Shift amounts at, around and past the width.
                    1 | 2 => rng.random_range(0..=2 * BITS) as $t,
                    3 => (rng.random_range(0..8) as $t).wrapping_sub(4),
                    _ => rng.random(),
                }
            }
            fn agrees(got: Self, want: Self, _: Tolerance) -> bool {
                got == want
            }
        }
    )*};
}
int_field!(u8, u16, u32, u64, i8, i16, i32, i64);

impl Field for bool {
    fn pick(rng: &mut impl Rng) -> Self {
        rng.random()
    }
    fn agrees(got: Self, want: Self, _: Tolerance) -> bool {
        got == want
    }
}

macro_rules! float_field {
    ($t:ty, $bits:ty, $subnormal:expr) => {
        impl Field for $t {
            fn pick(rng: &mut impl Rng) -> Self {
                let edges: [$t; 16] = [
                    0.0,
                    -0.0,
                    1.0,
                    -1.0,
                    0.5,
                    2.5,
                    -2.5,
                    <$t>::NAN,
                    <$t>::INFINITY,
                    <$t>::NEG_INFINITY,
                    <$t>::MIN_POSITIVE,
                    $subnormal,
                    -$subnormal,
                    <$t>::MAX,
                    <$t>::MIN,
                    <$t>::EPSILON,
                ];
                match rng.random_range(0..10) {
                    0..=3 => edges[rng.random_range(0..edges.len())],
                    // Integers (exact), and values around casts' limits.
                    4 => rng.random_range(-300..300) as $t,
                    5 => rng.random_range(-1e20..1e20) as $t,
                    // Any bit pattern: subnormals, huge, tiny, NaNs.
                    6 => <$t>::from_bits(rng.random::<$bits>()),
                    _ => rng.random_range(-1e3..1e3),
                }
            }
            fn agrees(got: Self, want: Self, tol: Tolerance) -> bool {
                if got.is_nan() || want.is_nan() {
                    return got.is_nan() && want.is_nan();
                }
                match tol {
                    Tolerance::Exact => got.to_bits() == want.to_bits(),
                    Tolerance::ExactUpToZeroSign => {
                        got.to_bits() == want.to_bits() || (got == 0.0 && want == 0.0)
                    }
                    Tolerance::Ulps(n) => {
                        // Distance on the ordered integer line of floats
                        // (+0 and -0 are adjacent; infinity is the step past
                        // MAX, so a result that overflows in one library and
                        // rounds to MAX in the other is one ulp off: seen on
                        // the H200 for a transcendental near f32::MAX).
                        let key = |v: $t| -> i128 {
                            let b = v.to_bits() as i128;
                            let sign = 1i128 << (<$bits>::BITS - 1);
                            if b & sign != 0 {
                                -(b & (sign - 1))
                            } else {
                                b
                            }
                        };
                        (key(got) - key(want)).unsigned_abs() <= n as u128
                    }
                }
            }
        }
    };
}
float_field!(f32, u32, 1e-40f32);
float_field!(f64, u64, 5e-320f64);

impl<T: Field, const N: usize> Field for [T; N] {
    fn pick(rng: &mut impl Rng) -> Self {
        std::array::from_fn(|_| T::pick(rng))
    }
    fn agrees(got: Self, want: Self, tol: Tolerance) -> bool {
        got.iter().zip(&want).all(|(g, w)| T::agrees(*g, *w, tol))
    }
}

/// An operator of the differential family.
pub trait Differential: ScanOp<Element: Field + PartialEq> {
    /// How close the device's results must be.
    const DEVICE_TOLERANCE: Tolerance = Tolerance::Exact;
    /// How close the host C++ build's results must be.
    const HOST_TOLERANCE: Tolerance = Tolerance::Exact;
    /// The first field where `got` and `want` differ within `tol`.
    fn first_difference(
        got: &Self::Element,
        want: &Self::Element,
        tol: Tolerance,
    ) -> Option<String>;
}

/// `Field` for an element struct, field by field.
macro_rules! struct_field {
    ($s:ident { $($f:ident),* }) => {
        impl Field for $s {
            fn pick(rng: &mut impl Rng) -> Self {
                $s { $($f: Field::pick(rng)),* }
            }
            fn agrees(got: Self, want: Self, tol: Tolerance) -> bool {
                true $(&& Field::agrees(got.$f, want.$f, tol))*
            }
        }
        impl $s {
            /// The first field of `got` that differs from `want`.
            pub fn first_difference(got: &Self, want: &Self, tol: Tolerance) -> Option<String> {
                $(
                    if !Field::agrees(got.$f, want.$f, tol) {
                        return Some(format!(
                            "field `{}`: got {:?}, want {:?}",
                            stringify!($f), got.$f, want.$f
                        ));
                    }
                )*
                None
            }
        }
    };
}

struct_field!(Ints {
    a,
    b,
    c,
    d,
    e,
    f,
    g,
    h
});
struct_field!(IntMethods {
    a,
    b,
    c,
    d,
    e,
    f,
    g,
    h
});
struct_field!(Floats { a, b, c, d, flags });
struct_field!(Transcendental {
    a,
    b,
    c,
    d,
    e,
    f,
    g,
    h,
    i,
    j,
    k,
    l
});
struct_field!(Casts {
    a,
    b,
    c,
    d,
    e,
    f,
    g,
    h,
    i,
    j
});
struct_field!(Inner { lo, hi });
struct_field!(Control {
    tag,
    wide,
    narrow,
    m,
    inner,
    flag,
    v
});

macro_rules! differential {
    ($op:ty, $element:ident $(, $tol:expr, $host_tol:expr)?) => {
        impl Differential for $op {
            $(const DEVICE_TOLERANCE: Tolerance = $tol;
              const HOST_TOLERANCE: Tolerance = $host_tol;)?
            fn first_difference(got: &$element, want: &$element, tol: Tolerance) -> Option<String> {
                $element::first_difference(got, want, tol)
            }
        }
    };
}

differential!(Ints, Ints);
differential!(IntMethods, IntMethods);
differential!(
    Floats,
    Floats,
    Tolerance::ExactUpToZeroSign,
    Tolerance::Exact
);
// CUDA's single-precision sin/cos/exp/exp2/tanh/log10 are within 2 ulps
// (CUDA Programming Guide, "Mathematical Functions": sinf 2, expf 2, exp2f 2,
// logf 1, log2f 1, log10f 2, tanhf 2, cbrtf 1, powf 4 (not used on f32
// here), hypotf 3), the double ones within 1-2 ulps (sin 2, exp 1, log 1,
// tanh 2, pow 2), and Rust's (its own `libm` port or the system's) within
// 1 ulp of the exact result: two results can differ by the sum, at most 4
// ulps. On the host, glibc's (within 1 ulp) meets Rust's: 2 ulps.
differential!(
    Transcendental,
    Transcendental,
    Tolerance::Ulps(4),
    Tolerance::Ulps(2)
);
differential!(Casts, Casts);
differential!(
    Control,
    Control,
    Tolerance::ExactUpToZeroSign,
    Tolerance::Exact
);

impl Differential for KeepLargerOdd {
    fn first_difference(got: &i16, want: &i16, tol: Tolerance) -> Option<String> {
        (!Field::agrees(*got, *want, tol)).then(|| format!("got {got}, want {want}"))
    }
}

/// `count` random pairs of `Op`'s elements.
pub fn random_pairs<Op: Differential>(
    count: usize,
    rng: &mut impl Rng,
) -> (Vec<Op::Element>, Vec<Op::Element>) {
    (0..count)
        .map(|_| (Op::Element::pick(rng), Op::Element::pick(rng)))
        .unzip()
}

/// Compares `got[i]` with `Op::combine(x[i], y[i])`; returns how many
/// differ and a description of the first few.
pub fn compare_pairs<Op: Differential>(
    x: &[Op::Element],
    y: &[Op::Element],
    got: &[Op::Element],
    tol: Tolerance,
) -> (usize, Vec<String>) {
    let mut bad = 0;
    let mut first = Vec::new();
    for i in 0..x.len() {
        let want = Op::combine(x[i], y[i]);
        if let Some(d) = Op::first_difference(&got[i], &want, tol) {
            bad += 1;
            if first.len() < 5 {
                first.push(format!(
                    "{} pair {i}: {d}\n    x = {:?}\n    y = {:?}",
                    Op::NAME,
                    x[i],
                    y[i]
                ));
            }
        }
    }
    (bad, first)
}
