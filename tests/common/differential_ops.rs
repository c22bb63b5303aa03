//! The differential family: operators that together use every construct and
//! every numeric method the crate documents, so that comparing their
//! translated `combine` with the Rust one (tests/differential.rs on the
//! host, tests/gpu_differential.rs on the device) checks the whole
//! translation. They need not be associative: only `combine` and the
//! identity are compared, one pair at a time.
//!
//! tests/differential.rs reads this file's text and fails when a method of
//! `kernels_gen::ir::METHODS` or a listed construct appears in none of
//! these operators.
#![allow(dead_code)]

use gpu_scan::prelude::*;

/// Integer arithmetic of every width and signedness: wrapping `+ - *`,
/// `/` and `%` (by zero, `MIN / -1`), unary `-` and `!`, bit operations,
/// shifts by amounts at and past the width, comparisons.
#[scan_op(
    identity = Ints { a: 0, b: 0, c: 0, d: 0, e: 0, f: 0, g: 0, h: 0 },
    op = |x, y| Ints {
        a: x.a * 3 + y.a - (x.a / y.a) + x.a % y.a,
        b: -(x.b * y.b) + x.b / y.b - y.b % x.b,
        c: !x.c ^ (y.c << (x.a as u32)) | (x.c >> y.b) & 0x0ff0,
        d: (x.d << y.c) + (x.d >> (y.e % 40)) - y.d / x.d,
        e: x.e.wrapping_mul(y.e) ^ (x.e << y.e) ^ (y.e >> x.h) ^ (x.e / y.e),
        f: (x.f >> 33) + (y.f << 31) + x.f % y.f + (x.f * y.f) + -x.f,
        g: x.g * y.g + (x.g >> 63) + (y.g << 64) + x.g / y.g - !y.g,
        h: (x.h >> y.a) ^ (y.h << x.b) ^ (x.h / y.h) ^ (x.h % y.h) ^ if x.h < y.h { 1 } else { -1 },
    }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ints {
    pub a: u8,
    pub b: i8,
    pub c: u16,
    pub d: i16,
    pub e: u32,
    pub f: i32,
    pub g: u64,
    pub h: i64,
}

/// Every integer method.
#[scan_op(
    identity = IntMethods { a: 0, b: 0, c: 0, d: 0, e: 0, f: 0, g: 0, h: 0 },
    op = |x, y| IntMethods {
        a: x.a.min(y.a).wrapping_add(y.a.max(x.a)).saturating_add(x.a.count_ones() as u8),
        b: x.b.abs().wrapping_sub(y.b.wrapping_abs()).saturating_sub(y.b).wrapping_neg(),
        c: x.c.saturating_mul(y.c).rotate_left(y.e).wrapping_shl(x.e) ^ x.c.leading_zeros() as u16,
        d: x.d.saturating_mul(y.d).rotate_right(x.e).wrapping_shr(y.e) ^ y.d.trailing_zeros() as i16,
        e: x.e.wrapping_mul(y.e).rotate_left(x.e) ^ y.e.leading_zeros() ^ x.e.trailing_zeros(),
        f: x.f.saturating_add(y.f).saturating_sub(x.f.wrapping_abs()) ^ x.f.count_ones() as i32,
        g: x.g.saturating_mul(y.g).rotate_right(y.e) ^ (x.g.count_ones() as u64) ^ x.g.saturating_sub(y.g),
        h: x.h.saturating_mul(y.h).wrapping_shl(y.e).min(x.h.wrapping_neg()).max(y.h.abs()) ^ x.h.leading_zeros() as i64,
    }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntMethods {
    pub a: u8,
    pub b: i8,
    pub c: u16,
    pub d: i16,
    pub e: u32,
    pub f: i32,
    pub g: u64,
    pub h: i64,
}

/// Float arithmetic and the exactly rounded float methods and constants.
#[scan_op(
    identity = Floats { a: 0.0, b: 0.0, c: 0.0, d: 0.0, flags: 0 },
    op = |x, y| Self {
        a: (x.a * y.a + x.a / y.a - y.a % x.a).min(f32::MAX).max(-x.c).mul_add(y.a, x.a).sqrt() + y.a.powi(3),
        b: x.b.floor() + y.b.ceil() * x.b.round() - y.b.trunc() + x.b.abs().copysign(y.b) + (x.b % y.b).powi(-2),
        c: f32::max(x.c, y.c) * f32::EPSILON + f32::min(x.c, y.c) / f32::MIN_POSITIVE + if x.c.is_nan() { f32::INFINITY } else { f32::NEG_INFINITY * y.c },
        d: x.d.mul_add(y.d, x.d * 0.5) - y.d.sqrt() * 2.5 + x.d.powi(y.flags as i32 % 7) + f64::MIN_POSITIVE * f64::EPSILON + -(x.d.max(f64::MIN)),
        flags: (x.a.is_nan() as u32) | ((y.b.is_finite() as u32) << 1) | ((x.d.is_infinite() as u32) << 2) | ((f64::NAN.is_nan() as u32) << 3) | ((x.c < y.c) as u32) << 4,
    }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Floats {
    pub a: f32,
    pub b: f32,
    pub c: f32,
    pub d: f64,
    pub flags: u32,
}

/// The transcendental methods, one call per field. CUDA's and glibc's
/// implementations are not correctly rounded, so on the device these are
/// compared within a few ulps (tests/gpu_differential.rs says how many).
#[scan_op(
    identity = Transcendental { a: 0.0, b: 0.0, c: 0.0, d: 0.0, e: 0.0, f: 0.0, g: 0.0, h: 0.0, i: 0.0, j: 0.0, k: 0.0, l: 0.0 },
    op = |x, y| Transcendental {
        a: (x.a + y.a).sin(),
        b: (x.b - y.b).cos(),
        c: (x.c * y.c).exp(),
        d: (x.d + y.d).exp2(),
        e: (x.e * y.e).ln(),
        f: (x.f + y.f).log2(),
        g: (x.g * y.g).log10(),
        h: (x.h - y.h).tanh(),
        i: (x.i * y.i).cbrt(),
        j: x.j.powf(y.j),
        k: x.k.hypot(y.k),
        l: (x.l + y.l).sin() + 0.0 * (x.l * y.l).cos(),
    }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transcendental {
    pub a: f32,
    pub b: f64,
    pub c: f32,
    pub d: f64,
    pub e: f32,
    pub f: f64,
    pub g: f32,
    pub h: f64,
    pub i: f32,
    pub j: f64,
    pub k: f32,
    pub l: f64,
}

/// `as` casts between primitives: float to integer saturates and maps NaN
/// to 0, integers truncate or extend, integers round to floats, bools
/// become 0 or 1.
#[scan_op(
    identity = Casts { a: 0, b: 0, c: 0, d: 0, e: 0, f: 0, g: 0.0, h: 0.0, i: false, j: 0 },
    op = |x, y| Casts {
        a: (x.g as u8) ^ (y.h as u8) ^ (x.e as u8) ^ (y.f as u8) ^ (x.i as u8),
        b: (x.g as i8) ^ (y.h as i8) ^ (x.d as i8) ^ (y.j as i8),
        c: (x.h as u16) ^ (y.g as u16) ^ (x.b as u16) ^ (y.a as u16),
        d: (x.h as i32) ^ (y.g as i32) ^ (x.c as i32) ^ (y.b as i32) ^ (x.a as i32),
        e: (x.g as u64) ^ (y.h as u64) ^ (x.b as u64) ^ (y.d as u64) ^ (x.j as u64),
        f: (x.h as i64) ^ (y.g as i64) ^ (x.e as i64) ^ (y.c as i64) ^ (y.i as i64),
        g: (x.e as f32) + (y.f as f32) * (x.h as f32) - (y.d as f32) + (x.b as f32) + (y.j as f32),
        h: (x.e as f64) + (y.f as f64) * (x.g as f64) - (y.c as f64) + (x.a as f64) + (y.j as f64),
        i: ((x.d as u8) == 0) == false || x.i != y.i,
        j: (x.h as u64 as i16) ^ (y.e as i64 as i16) ^ (x.c as i8 as i16) ^ (y.b as u8 as i16),
    }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Casts {
    pub a: u8,
    pub b: i8,
    pub c: u16,
    pub d: i32,
    pub e: u64,
    pub f: i64,
    pub g: f32,
    pub h: f64,
    pub i: bool,
    pub j: i16,
}

/// A nested element for [`Control`].
#[scan_op]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inner {
    pub lo: i16,
    pub hi: u16,
}

/// Control flow and bindings: `match` (literal, negative, range, `|` and
/// `_` patterns), `if`/`else` chains, blocks, shadowing, typed and untyped
/// `let`s whose literals Rust types from their annotation or their uses,
/// struct update syntax, nested structs, arrays, paths to methods and
/// primitive constants.
#[scan_op(
    identity = Control { tag: 0, wide: 0, narrow: 0, m: [0; 3], inner: Inner { lo: 0, hi: 0 }, flag: false, v: 0.0 },
    op = fn control(x: Control, y: Control) -> Control {
        // Typed lets type their literals: a u64 shift (2^40) and a u8 sum that wraps.
        let big: u64 = 1 << 40;
        let half: u8 = (200 + 100) / 2;
        // An untyped let takes the type of its uses: here u64, so 1 << 36 is exact.
        let step = 1 << 36;
        let k = 3;
        let k = k * 5 + 1;
        let bucket = match x.tag {
            -128..=-100 => 0u8,
            -1 => 1,
            0 | 1 | 2 => 2,
            3..10 => half,
            100..=i8::MAX => 4,
            _ => 5,
        };
        let sign = match y.inner.lo { -5 => true, 100..=i16::MAX => true, _ => false };
        let picked = if x.flag && !y.flag { x.narrow } else if sign { y.narrow } else { x.narrow ^ y.narrow };
        let nested = { let t = x.m[0].min(y.m[1]); let t = t.rotate_left(k); t ^ (t >> 3) };
        let wide = x.wide.wrapping_add(big).wrapping_add(step) ^ (y.wide >> k);
        let v = if x.v > y.v { x.v } else { f64::min(y.v, x.v * 2.0) };
        Control {
            tag: x.tag.wrapping_add(bucket as i8),
            wide: wide + std::cmp::max(x.wide, y.wide) % 1000,
            narrow: picked.wrapping_mul(half) + std::cmp::min(x.narrow, 7),
            m: [nested, x.m[1] + u32::BITS, y.m[2] ^ u32::MAX],
            inner: Inner { hi: y.inner.hi.wrapping_add(k as u16), ..x.inner },
            flag: sign || x.v.is_nan() || x.wide == u64::MAX,
            ..Control { v, ..y }
        }
    }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Control {
    pub tag: i8,
    pub wide: u64,
    pub narrow: u8,
    pub m: [u32; 3],
    pub inner: Inner,
    pub flag: bool,
    pub v: f64,
}

/// A primitive element with a typed literal identity and an `op = fn`.
#[scan_op(element = i16, identity = -1i16, op = fn keep_larger_odd(x: i16, y: i16) -> i16 {
    let odd = y % 2 != 0;
    if odd && y > x { y } else { x.max(y >> 1) }
})]
pub struct KeepLargerOdd;
