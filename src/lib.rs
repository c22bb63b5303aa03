//! # gpu-scan
//!
//! Generic prefix scans (inclusive and exclusive, each optionally from an
//! initial value; forward or reverse; plain or segmented; with a
//! carry-out) for any associative operator you write once in plain Rust. The
//! `#[scan_op]` attribute checks the operator, translates it to CUDA C and
//! embeds a CUDA program with warp-, block- and global-level scans in your
//! binary; the same operator runs on the CPU ([`cpu`]), so every GPU result
//! has an oracle and machines without a GPU still get answers.
//!
//! ```
//! use gpu_scan::prelude::*;
//!
//! /// An affine map v ↦ a·v + b; composing maps is associative, not commutative.
//! #[scan_op(identity = Affine { a: 1.0, b: 0.0 },
//!           op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b })]
//! #[repr(C)]
//! #[derive(Clone, Copy, Debug, PartialEq)]
//! struct Affine { a: f32, b: f32 }
//!
//! let maps = [Affine { a: 2.0, b: 1.0 }, Affine { a: 1.0, b: 3.0 }];
//! let composed = cpu::inclusive_vec::<Affine>(&maps);
//! assert_eq!(composed[1], Affine { a: 2.0, b: 4.0 });  // v ↦ 2v+1, then +3
//! assert!(<Affine as ScanOp>::CUDA_SOURCE.contains("struct affine {"));  // its CUDA policy
//! ```
//!
//! ## Features
//!
//! `gpu` (on by default): the GPU backend, `GpuScanner`, `Scanner` (the GPU
//! when usable, else the CPU), `DeviceApi`, and `cudarc`. With
//! `default-features = false` the crate has no cudarc and no CUDA at run
//! time: `#[scan_op]` and the CPU backend ([`cpu`], [`segmented`],
//! [`columns`], [`check_laws`]) work alone.
//!
//! ## Writing an operator
//!
//! On a `#[repr(C)]` struct with `#[derive(Clone, Copy)]`, the struct is the
//! element; on a unit struct, `element = <type>` names it (a primitive or an
//! annotated struct). `identity` is a constant expression and `op` a closure
//! `|x, y| …` or a function `fn name(x: T, y: T) -> T { … }` written in the
//! attribute; `x` is the earlier element. A struct annotated with a bare
//! `#[scan_op]` is an element only, usable as a field or as another
//! operator's `element`. `commutative = true` says that `op(x, y) ==
//! op(y, x)` (checked with the other laws), which lets two-dimensional
//! scans ([`summed_area`]) read the matrix in tiles, in one pass over its
//! rectangles instead of rows then columns. `block_threads = N` and `items_per_thread = N` set
//! the tile shape (default: both chosen from the element size, 256 threads
//! up to 179-byte elements). Elements are 1 to 256 bytes
//! (`kernels_gen::MAX_ELEMENT_SIZE`) whose fields take at most 112
//! registers (`kernels_gen::MAX_ELEMENT_REGISTERS`: one per field of up to
//! 4 bytes, `u8` and `bool` included, two per 8-byte field; so up to 112
//! bytes of bytes, 224 of half-words), and a tile must fit in a block's 48
//! KiB of static shared memory; all three are checked when your crate
//! compiles. Elements of many small fields are held packed in 32-bit words
//! on the GPU (`kernels_gen::packed_element`).
//!
//! Element fields: `u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bool`, arrays of
//! those (`[f32; 4]`), and other annotated structs.
//!
//! The operator body may use: literals (integer, float, bool; suffixes
//! allowed); its two operands and immutable `let` bindings (shadowing
//! allowed); `+ - * / %`, `== != < <= > >=`, `&& || !`, `& | ^ << >>`;
//! `as` casts between primitives; `if`/`else` and `match` on integers or
//! bools (literal, range, `|` and `_` patterns) as expressions; blocks;
//! struct literals (with `..base`), field access, array indexing with
//! literal indices, array literals as field values; the numeric methods
//! `min max abs mul_add sqrt cbrt exp exp2 ln log2 log10 sin cos tanh floor
//! ceil round trunc powi powf hypot copysign is_nan is_finite is_infinite
//! wrapping_{add,sub,mul,neg,shl,shr,abs} saturating_{add,sub,mul}
//! rotate_left rotate_right count_ones leading_zeros trailing_zeros`, also
//! as `f32::max(a, b)` or `std::cmp::max(a, b)`; and primitive constants
//! (`u32::MAX`, `i8::MIN`, `u64::BITS`, `f32::INFINITY`, `f64::NAN`,
//! `f32::EPSILON`, …). Anything else (loops, `return`, calls to other
//! functions, references, captured variables, macros, tuples, generics) is
//! a compile error on the offending tokens.
//!
//! Literals have the type Rust infers for them, on the GPU too: in
//! `let k: u64 = 1 << 40;` the shift is a `u64` one (2^40), and a `let`
//! without a type takes the type of the places it is used in (`let step =
//! 1 << 36; x.wide + step` shifts in `u64` when `x.wide` is one).
//! `op = fn name(x: T, y: T) -> T { … }` must declare the element as its
//! return type.
//!
//! ## Semantics shared by the CPU and the GPU
//!
//! Integer `+ - *` and unary `-` **wrap** (two's complement) in debug and
//! release builds and on the GPU; `/` and `%` by zero give 0, `MIN / -1`
//! gives `MIN`; shift amounts are taken modulo the bit width; `abs` wraps.
//! Floats are IEEE: `+ - * /` are rounded to nearest and never fused into
//! FMAs on the GPU (use `mul_add` for a fused one); `min`/`max` ignore a NaN
//! operand as Rust's do; float-to-integer casts saturate and map NaN to 0.
//! See [`semantics`].
//!
//! Every result is bit for bit the same on the CPU and the GPU (NaN
//! payloads, and the sign of `min`/`max` of +0.0 and -0.0, aside: Rust
//! leaves both unspecified) except the transcendental
//! functions `sin cos tanh exp exp2 ln log2 log10 cbrt powf hypot`: neither
//! CUDA's nor Rust's are correctly rounded, and the two agree within 4 ulps
//! (CUDA's error bounds plus Rust's; `tests/differential.rs` checks every
//! construct and method above on random and edge values, on the host and
//! on the GPU). `sqrt`, `mul_add` and the arithmetic operators are exact.
//!
//! Associativity cannot be checked by the compiler. [`check_laws`] checks
//! it, and the identity law, on your data (integers exactly, floats up to
//! rounding) and returns the values that break a law; `Scanner` and
//! `GpuScanner` run it on the first call's data in debug builds (see
//! [`laws`]). [`check_associativity`] takes a sampler and an equality of
//! your own.

pub mod ops;

/// The CUDA generator behind the GPU backend, for the test suites and
/// tools (the `internals` feature): not part of the API, and free to change
/// in any release.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use kernels_gen;
pub use scan_core::{
    check_associativity, check_laws, columns, cpu, laws, real, recurrence, segmented, select,
    semantics, sort, spmv, stages, summed_area, Columns, CountedSegmentTotals, Counterexample,
    Direction, HostCarryOut, HostSegmentedCarryOut, HostSegments, IntoScanSpec, LengthMismatch,
    NoCarryOut, NoSegments, Rows, ScanElement, ScanKind, ScanOp, ScanSpec, SegmentTotals,
    SegmentedBy, Shape, SummedArea, TakesCarryOut,
};
pub use scan_macros::{scan_equality, scan_map, scan_op, scan_predicate, sort_key};

/// Scans across ranks: every rank holds a contiguous shard of one sequence
/// and together they scan it as one. The algorithm on the CPU backend
/// ([`distributed::scan`], with [`distributed::SimulatedRanks`] or any
/// [`distributed::Collective`]) and, with the `gpu` feature, one GPU a rank
/// over NCCL ([`distributed::GpuRank`]). How it behaves at scale:
/// `docs/distributed.md`.
pub mod distributed {
    pub use scan_core::distributed::*;
    #[cfg(feature = "gpu")]
    pub use scan_runtime::distributed::*;
}
#[cfg(feature = "gpu")]
pub use scan_runtime;
/// The `cudarc` this crate was built with: use its `CudaContext`,
/// `CudaStream` and `CudaSlice` for the buffers you pass, so the versions
/// always match.
#[cfg(feature = "gpu")]
pub use scan_runtime::cudarc;
#[cfg(feature = "gpu")]
pub use scan_runtime::{
    open_device, Arch, DeviceApi, DeviceCarryOut, DeviceCsr, DeviceRecurrence, DeviceSegmentsSpec,
    DeviceSortKey, DeviceTransition, GpuRecurrence, GpuScanner, GpuSelect, GpuSort, GpuSpmv,
    ScanError, ScanPath, Scanner, Tuning,
};

/// Everything a user needs: `use gpu_scan::prelude::*;`.
pub mod prelude {
    pub use crate::segmented;
    pub use crate::stages::{ScanEquality, ScanMap, ScanPredicate};
    pub use crate::{
        check_associativity, check_laws, cpu, scan_equality, scan_map, scan_op, scan_predicate,
        sort_key, Counterexample, Direction, ScanElement, ScanKind, ScanOp, ScanSpec,
    };
    #[cfg(feature = "gpu")]
    pub use scan_runtime::{
        BackendKind, DeviceHeadFlags, DeviceOffsets, DeviceSegments, GpuRecurrence, GpuScanner,
        GpuSelect, GpuSort, GpuSpmv, HeadFlagBuilder, ScanError, Scanner, SegmentedStrategy,
    };
}

/// Items the code generated by `#[scan_op]` refers to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use kernels_gen;
    pub use scan_core::{
        concat_const, const_str, laws, semantics, sort, stages, ScanElement, ScanOp,
    };
    #[cfg(feature = "gpu")]
    pub use scan_runtime::cudarc;

    /// `#[scan_op]` on an element struct implements cudarc's `DeviceRepr`
    /// and `ValidAsZeroBits` for it through this macro; without the `gpu`
    /// feature there is no cudarc, and it expands to nothing.
    pub use crate::__scan_device_repr as device_repr;
}

#[cfg(feature = "gpu")]
#[doc(hidden)]
#[macro_export]
macro_rules! __scan_device_repr {
    ($element:ty) => {
        // SAFETY: `#[scan_op]` accepted the struct: `#[repr(C)]`, `Copy`,
        // its fields primitives, arrays of them or other such structs: plain
        // data with the layout of the C struct the kernels read and write,
        // and all-zero bits valid for each field.
        unsafe impl $crate::__private::cudarc::driver::DeviceRepr for $element {}
        unsafe impl $crate::__private::cudarc::driver::ValidAsZeroBits for $element {}
    };
}

#[cfg(not(feature = "gpu"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __scan_device_repr {
    ($element:ty) => {};
}

/// The README's example, compiled and run as a doctest.
#[cfg(all(doctest, feature = "gpu"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
