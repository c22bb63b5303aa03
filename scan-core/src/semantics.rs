//! The arithmetic of translated operators, on the CPU.
//!
//! `#[scan_op]` rewrites `a + b` in an operator to [`add`]`(a, b)` (and so
//! on) so that the Rust side computes exactly what the CUDA side computes,
//! in debug and release builds alike:
//!
//! * integer `+ - *` and unary `-` wrap (two's complement), as
//!   `wrapping_add` and friends;
//! * integer `/` and `%` never panic: `x / 0 == 0`, `x % 0 == 0`,
//!   `MIN / -1 == MIN`, `MIN % -1 == 0`;
//! * `<<` and `>>` take the shift amount modulo the bit width
//!   (`wrapping_shl`), and `>>` is arithmetic on signed types;
//! * integer `abs` wraps (`abs(MIN) == MIN`);
//! * floats are IEEE: `+ - * /` rounded to nearest, `%` is `fmod`.
//!
//! ```
//! use scan_core::semantics::{add, div, shl};
//! assert_eq!(add(250u8, 10), 4);
//! assert_eq!(div(7i32, 0), 0);
//! assert_eq!(shl(1u32, 33), 2);
//! ```

/// Types with the operator arithmetic above.
pub trait Arith: Copy {
    /// `+`
    fn add(self, rhs: Self) -> Self;
    /// `-`
    fn sub(self, rhs: Self) -> Self;
    /// `*`
    fn mul(self, rhs: Self) -> Self;
    /// `/`
    fn div(self, rhs: Self) -> Self;
    /// `%`
    fn rem(self, rhs: Self) -> Self;
}

/// Types with unary minus (signed integers wrap, floats negate).
pub trait Neg: Copy {
    /// `-x`
    fn neg(self) -> Self;
}

/// Types with `abs` (signed integers wrap).
pub trait Abs: Copy {
    /// `|x|`
    fn abs_wrapping(self) -> Self;
}

/// Integer types that can be shifted.
pub trait Shift: Copy {
    /// `<<`, amount modulo the bit width.
    fn shl(self, amount: u32) -> Self;
    /// `>>`, amount modulo the bit width.
    fn shr(self, amount: u32) -> Self;
}

/// Any integer as a shift amount (converted like `as u32`).
pub trait ShiftAmount: Copy {
    /// The amount as `u32`, wrapping.
    fn as_amount(self) -> u32;
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline] fn add(self, rhs: Self) -> Self { self.wrapping_add(rhs) }
            #[inline] fn sub(self, rhs: Self) -> Self { self.wrapping_sub(rhs) }
            #[inline] fn mul(self, rhs: Self) -> Self { self.wrapping_mul(rhs) }
            #[inline] fn div(self, rhs: Self) -> Self { if rhs == 0 { 0 } else { self.wrapping_div(rhs) } }
            #[inline] fn rem(self, rhs: Self) -> Self { if rhs == 0 { 0 } else { self.wrapping_rem(rhs) } }
        }
        impl Shift for $t {
            #[inline] fn shl(self, amount: u32) -> Self { self.wrapping_shl(amount) }
            #[inline] fn shr(self, amount: u32) -> Self { self.wrapping_shr(amount) }
        }
        impl ShiftAmount for $t {
            #[inline] fn as_amount(self) -> u32 { self as u32 }
        }
    )*};
}
integers!(u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! signed {
    ($($t:ty),*) => {$(
        impl Neg for $t { #[inline] fn neg(self) -> Self { self.wrapping_neg() } }
        impl Abs for $t { #[inline] fn abs_wrapping(self) -> Self { self.wrapping_abs() } }
    )*};
}
signed!(i8, i16, i32, i64);

macro_rules! unsigned_abs {
    ($($t:ty),*) => {$(
        impl Abs for $t { #[inline] fn abs_wrapping(self) -> Self { self } }
    )*};
}
unsigned_abs!(u8, u16, u32, u64);

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline] fn add(self, rhs: Self) -> Self { self + rhs }
            #[inline] fn sub(self, rhs: Self) -> Self { self - rhs }
            #[inline] fn mul(self, rhs: Self) -> Self { self * rhs }
            #[inline] fn div(self, rhs: Self) -> Self { self / rhs }
            #[inline] fn rem(self, rhs: Self) -> Self { self % rhs }
        }
        impl Neg for $t { #[inline] fn neg(self) -> Self { -self } }
        impl Abs for $t { #[inline] fn abs_wrapping(self) -> Self { self.abs() } }
    )*};
}
floats!(f32, f64);

/// `a + b` (wrapping on integers).
#[inline]
pub fn add<T: Arith>(a: T, b: T) -> T {
    a.add(b)
}
/// `a - b` (wrapping on integers).
#[inline]
pub fn sub<T: Arith>(a: T, b: T) -> T {
    a.sub(b)
}
/// `a * b` (wrapping on integers).
#[inline]
pub fn mul<T: Arith>(a: T, b: T) -> T {
    a.mul(b)
}
/// `a / b` (integers: `/ 0` gives 0, `MIN / -1` gives `MIN`).
#[inline]
pub fn div<T: Arith>(a: T, b: T) -> T {
    a.div(b)
}
/// `a % b` (integers: `% 0` gives 0, `MIN % -1` gives 0).
#[inline]
pub fn rem<T: Arith>(a: T, b: T) -> T {
    a.rem(b)
}
/// `-a` (wrapping on integers).
#[inline]
pub fn neg<T: Neg>(a: T) -> T {
    a.neg()
}
/// `a.abs()` (wrapping on integers).
#[inline]
pub fn abs<T: Abs>(a: T) -> T {
    a.abs_wrapping()
}
/// `a << amount`, amount modulo the bit width.
#[inline]
pub fn shl<T: Shift, S: ShiftAmount>(a: T, amount: S) -> T {
    a.shl(amount.as_amount())
}
/// `a >> amount`, amount modulo the bit width.
#[inline]
pub fn shr<T: Shift, S: ShiftAmount>(a: T, amount: S) -> T {
    a.shr(amount.as_amount())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_edge_cases_follow_the_documented_rules() {
        assert_eq!(add(i32::MAX, 1), i32::MIN);
        assert_eq!(mul(200u8, 2), 144);
        assert_eq!(div(i64::MIN, -1), i64::MIN);
        assert_eq!(rem(i64::MIN, -1), 0);
        assert_eq!(rem(5u16, 0), 0);
        assert_eq!(neg(i8::MIN), i8::MIN);
        assert_eq!(abs(i16::MIN), i16::MIN);
        assert_eq!(shr(-8i32, 33u8), -4);
        assert_eq!(shl(1u8, -1i32), 128);
    }

    #[test]
    fn floats_are_plain_ieee() {
        assert_eq!(rem(5.5f32, 2.0), 1.5);
        assert!(div(0.0f64, 0.0).is_nan());
        assert_eq!(neg(0.0f32).to_bits(), (-0.0f32).to_bits());
    }
}
