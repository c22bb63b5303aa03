//! Built-in operators: sums, products, minima and maxima over every integer
//! and float primitive, bitwise and/or/xor over every integer, and logical
//! and/or over `bool`, so the common scans need no `#[scan_op]`; and
//! compensated `f32` and `f64` sums ([`CompensatedF32`], [`CompensatedF64`]).
//!
//! Each is a type parameterised by the element: `Sum<u32>`, `Max<f64>`,
//! `BitXor<u8>`, `And<bool>`. Integer sums and products wrap (as CUB's and
//! PyTorch's do); float sums and products round at every step, so the
//! GPU's order of combination (tile by tile) and the CPU's give results
//! that agree up to rounding, not bit for bit. Float `Min`/`Max` follow
//! Rust's `f32::min`/`max` (a NaN operand is ignored). Every one is
//! commutative ([`ScanOp::COMMUTATIVE`]).
//!
//! ```
//! use gpu_scan::ops::{Max, Sum};
//! use gpu_scan::prelude::*;
//!
//! assert_eq!(cpu::inclusive_vec::<Sum<u32>>(&[1, 2, 3, 4]), [1, 3, 6, 10]);
//! assert_eq!(cpu::inclusive_vec::<Max<i16>>(&[3, -1, 7, 2]), [3, 3, 7, 7]);
//! // Wrapping, as on the GPU.
//! assert_eq!(cpu::inclusive_vec::<Sum<u8>>(&[200, 100]), [200, 44]);
//! let mut scanner = Scanner::<Sum<f64>>::new(); // the GPU if usable, else the CPU
//! assert_eq!(scanner.scan(ScanKind::Exclusive.reverse(), &[1.0, 2.0, 4.0]).unwrap(), [6.0, 4.0, 0.0]);
//! ```

use crate::{scan_op, ScanOp};
use std::marker::PhantomData;

macro_rules! operator_types {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name<T>(PhantomData<T>);
    )*};
}

operator_types! {
    /// `a + b` (wrapping for integers); identity 0.
    Sum;
    /// `a * b` (wrapping for integers); identity 1.
    Product;
    /// The smaller of `a` and `b`; identity the type's largest value
    /// (infinity for floats).
    Min;
    /// The larger of `a` and `b`; identity the type's smallest value
    /// (negative infinity for floats).
    Max;
    /// `a & b`; identity all ones.
    BitAnd;
    /// `a | b`; identity 0.
    BitOr;
    /// `a ^ b`; identity 0.
    BitXor;
    /// `a && b` over `bool`; identity `true`.
    And;
    /// `a || b` over `bool`; identity `false`.
    Or;
}

/// `impl ScanOp for $public<$t>`, delegating to a hidden `#[scan_op]`
/// marker `$hidden` (whose name names the CUDA policy and kernels).
macro_rules! builtin {
    ($public:ident, $hidden:ident, $t:ident, [$($identity:tt)*], [$($op:tt)*]) => {
        #[doc(hidden)]
        #[scan_op(crate = crate, element = $t, identity = $($identity)*, op = $($op)*, commutative = true)]
        pub struct $hidden;

        impl ScanOp for $public<$t> {
            type Element = $t;
            const NAME: &'static str = <$hidden as ScanOp>::NAME;
            const IDENTITY: $t = <$hidden as ScanOp>::IDENTITY;
            const CUDA_SOURCE: &'static str = <$hidden as ScanOp>::CUDA_SOURCE;
            const BLOCK_THREADS: u32 = <$hidden as ScanOp>::BLOCK_THREADS;
            const ITEMS_PER_THREAD: u32 = <$hidden as ScanOp>::ITEMS_PER_THREAD;
            const COMMUTATIVE: bool = <$hidden as ScanOp>::COMMUTATIVE;
            const OPERATOR_IR: &'static str = <$hidden as ScanOp>::OPERATOR_IR;
            #[inline]
            fn combine(x: $t, y: $t) -> $t {
                <$hidden as ScanOp>::combine(x, y)
            }
        }
    };
}

macro_rules! integers {
    ($($t:ident: $sum:ident $product:ident $min:ident $max:ident $and:ident $or:ident $xor:ident;)*) => {$(
        builtin!(Sum, $sum, $t, [0], [|a, b| a.wrapping_add(b)]);
        builtin!(Product, $product, $t, [1], [|a, b| a.wrapping_mul(b)]);
        builtin!(Min, $min, $t, [$t::MAX], [|a, b| a.min(b)]);
        builtin!(Max, $max, $t, [$t::MIN], [|a, b| a.max(b)]);
        builtin!(BitAnd, $and, $t, [!0], [|a, b| a & b]);
        builtin!(BitOr, $or, $t, [0], [|a, b| a | b]);
        builtin!(BitXor, $xor, $t, [0], [|a, b| a ^ b]);
    )*};
}

macro_rules! floats {
    ($($t:ident: $sum:ident $product:ident $min:ident $max:ident;)*) => {$(
        builtin!(Sum, $sum, $t, [0.0], [|a, b| a + b]);
        builtin!(Product, $product, $t, [1.0], [|a, b| a * b]);
        builtin!(Min, $min, $t, [$t::INFINITY], [|a, b| a.min(b)]);
        builtin!(Max, $max, $t, [$t::NEG_INFINITY], [|a, b| a.max(b)]);
    )*};
}

/// The hidden `#[scan_op]` markers behind the built-in operators.
#[doc(hidden)]
pub mod markers {
    use super::*;

    integers! {
        u8: BuiltinSumU8 BuiltinProductU8 BuiltinMinU8 BuiltinMaxU8 BuiltinBitAndU8 BuiltinBitOrU8 BuiltinBitXorU8;
        u16: BuiltinSumU16 BuiltinProductU16 BuiltinMinU16 BuiltinMaxU16 BuiltinBitAndU16 BuiltinBitOrU16 BuiltinBitXorU16;
        u32: BuiltinSumU32 BuiltinProductU32 BuiltinMinU32 BuiltinMaxU32 BuiltinBitAndU32 BuiltinBitOrU32 BuiltinBitXorU32;
        u64: BuiltinSumU64 BuiltinProductU64 BuiltinMinU64 BuiltinMaxU64 BuiltinBitAndU64 BuiltinBitOrU64 BuiltinBitXorU64;
        i8: BuiltinSumI8 BuiltinProductI8 BuiltinMinI8 BuiltinMaxI8 BuiltinBitAndI8 BuiltinBitOrI8 BuiltinBitXorI8;
        i16: BuiltinSumI16 BuiltinProductI16 BuiltinMinI16 BuiltinMaxI16 BuiltinBitAndI16 BuiltinBitOrI16 BuiltinBitXorI16;
        i32: BuiltinSumI32 BuiltinProductI32 BuiltinMinI32 BuiltinMaxI32 BuiltinBitAndI32 BuiltinBitOrI32 BuiltinBitXorI32;
        i64: BuiltinSumI64 BuiltinProductI64 BuiltinMinI64 BuiltinMaxI64 BuiltinBitAndI64 BuiltinBitOrI64 BuiltinBitXorI64;
    }

    floats! {
        f32: BuiltinSumF32 BuiltinProductF32 BuiltinMinF32 BuiltinMaxF32;
        f64: BuiltinSumF64 BuiltinProductF64 BuiltinMinF64 BuiltinMaxF64;
    }

    builtin!(And, BuiltinAndBool, bool, [true], [|a, b| a && b]);
    builtin!(Or, BuiltinOrBool, bool, [false], [|a, b| a || b]);
}

// The compensated sums: `#[scan_op]` structs that are both element and
// operator. Their temporaries (six alive at once) widen the kernels'
// register budget (`ScanOp::LIVE_TEMPORARIES`), which keeps the `f64` one's
// kernels from spilling.
macro_rules! compensated {
    ($($(#[$doc:meta])* $name:ident($t:ident $(, items_per_thread = $items:literal)?);)*) => {$(
        $(#[$doc])*
        #[scan_op(
            crate = crate,
            identity = $name { sum: 0.0, err: 0.0 },
            commutative = true,
            $(items_per_thread = $items,)?
            op = |x, y| {
                // TwoSum of the high parts: sh + sl == x.sum + y.sum exactly.
                let sh = x.sum + y.sum;
                if !sh.is_finite() {
                    $name { sum: sh, err: 0.0 }
                } else {
                    let xv = sh - y.sum;
                    let yv = sh - xv;
                    let sl = (x.sum - xv) + (y.sum - yv);
                    // TwoSum of the low parts.
                    let th = x.err + y.err;
                    let xw = th - y.err;
                    let yw = th - xw;
                    let tl = (x.err - xw) + (y.err - yw);
                    // Fast2Sum twice: renormalise to |err| <= ulp(sum) / 2.
                    let c = sl + th;
                    let vh = sh + c;
                    let vl = c - (vh - sh);
                    let w = tl + vl;
                    let zh = vh + w;
                    $name { sum: zh, err: w - (zh - vh) }
                }
            }
        )]
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name {
            /// The sum, rounded.
            pub sum: $t,
            /// What rounding `sum` lost: the exact value is `sum + err`.
            pub err: $t,
        }

        impl $name {
            /// `x` as a pair with no error.
            pub const fn new(x: $t) -> Self {
                $name { sum: x, err: 0.0 }
            }

            /// `sum + err`, rounded once.
            pub fn value(self) -> $t {
                self.sum + self.err
            }
        }

        impl From<$t> for $name {
            fn from(x: $t) -> Self {
                $name::new(x)
            }
        }
    )*};
}

compensated! {
    /// Float sums that carry their rounding error: each element is a
    /// double-word number `sum + err` (the error-free transformations TwoSum
    /// and Fast2Sum; `combine` is Joldes, Muller and Popescu's
    /// *AccurateDWPlusDW*, 2017, relative error at most 3u² a step, with u =
    /// 2^-24 for `f32`). A prefix sum of `CompensatedF32`
    /// holds about twice `f32`'s precision, where a plain `Sum<f32>` over 2^28
    /// elements loses most of its digits. `tests/compensated.rs` checks the
    /// error against exact prefix sums; `examples/compensated_sums.rs`
    /// measures both errors and speeds on a GPU.
    ///
    /// Build elements with `CompensatedF32::new(x)` (error 0) and read a
    /// result with [`CompensatedF32::value`] (`sum + err`, rounded once). A
    /// non-finite sum (an infinity or NaN operand, or an overflow) is carried
    /// as a plain sum with error 0, as `Sum<f32>` would give it. The laws hold
    /// up to the rounding above, not bit for bit (like any float sum's), so
    /// results on the GPU and the CPU agree to about 2u², not exactly.
    ///
    /// ```
    /// use gpu_scan::ops::{CompensatedF32, Sum};
    /// use gpu_scan::prelude::*;
    ///
    /// // 1 + 2^-30 rounds to 1 in f32; the pair keeps the 2^-30.
    /// let tiny = 2f32.powi(-30);
    /// let data = [1.0, tiny, tiny, -1.0];
    /// let plain = cpu::inclusive_vec::<Sum<f32>>(&data);
    /// let pairs: Vec<CompensatedF32> = data.iter().map(|&x| CompensatedF32::new(x)).collect();
    /// let compensated = cpu::inclusive_vec::<CompensatedF32>(&pairs);
    /// assert_eq!(plain[3], 0.0);
    /// assert_eq!(compensated[3].value(), 2.0 * tiny);
    /// ```
    CompensatedF32(f32);

    /// [`CompensatedF32`] for `f64`: a double-word sum of about 106 bits
    /// (u = 2^-53), for prefix sums that must stay exact to `f64`'s last
    /// bit over billions of elements or across cancellations. It is a
    /// 16-byte element, read and written as such: a scan moves twice the
    /// bytes of a plain `Sum<f64>`.
    ///
    /// ```
    /// use gpu_scan::ops::CompensatedF64;
    /// use gpu_scan::prelude::*;
    ///
    /// // 1 + 2^-60 rounds to 1 in f64; the pair keeps the 2^-60.
    /// let tiny = 2f64.powi(-60);
    /// let pairs: Vec<CompensatedF64> = [1.0, tiny, -1.0].map(CompensatedF64::new).to_vec();
    /// assert_eq!(cpu::inclusive_vec::<CompensatedF64>(&pairs)[2].value(), tiny);
    /// ```
    CompensatedF64(f64);
}
