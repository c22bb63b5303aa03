//! Operators shared by the test suites: the snapshot set and more
//! non-commutative ones. Each is `pub` with a doc comment so that unused
//! ones in a given test binary do not warn.
#![allow(dead_code)]

use gpu_scan::prelude::*;

/// `u32` sum (wraps).
#[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
pub struct SumU32;

/// `f32` max (NaN operands ignored, as Rust's `f32::max`).
#[scan_op(element = f32, identity = f32::NEG_INFINITY, op = |a, b| a.max(b))]
pub struct MaxF32;

/// `i64` min.
#[scan_op(element = i64, identity = i64::MAX, op = |a, b| a.min(b))]
pub struct MinI64;

/// An affine map v ↦ a·v + b; `x ∘ y` applies x first, then y.
#[scan_op(identity = Affine { a: 1.0, b: 0.0 }, op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Affine {
    pub a: f32,
    pub b: f32,
}

/// Count, sum and max at once: three field types in one element.
#[scan_op(
    identity = Stats { count: 0, sum: 0.0, max: f32::NEG_INFINITY },
    op = |x, y| Stats { count: x.count + y.count, sum: x.sum + y.sum, max: x.max.max(y.max) }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub count: u32,
    pub sum: f64,
    pub max: f32,
}

/// A 2×2 matrix (row-major) under matrix product: non-commutative.
#[scan_op(
    identity = Mat2 { m: [1.0, 0.0, 0.0, 1.0] },
    op = |x, y| Mat2 {
        m: [
            x.m[0] * y.m[0] + x.m[1] * y.m[2],
            x.m[0] * y.m[1] + x.m[1] * y.m[3],
            x.m[2] * y.m[0] + x.m[3] * y.m[2],
            x.m[2] * y.m[1] + x.m[3] * y.m[3],
        ],
    }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mat2 {
    pub m: [f32; 4],
}

/// Affine maps over wrapping `u32` arithmetic: non-commutative and exact,
/// so GPU results can be compared bit for bit.
#[scan_op(identity = AffineU32 { a: 1, b: 0 }, op = |x, y| AffineU32 { a: x.a * y.a, b: y.a * x.b + y.b })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AffineU32 {
    pub a: u32,
    pub b: u32,
}

/// "Keep the right one": the latest valid value wins (non-commutative).
#[scan_op(
    identity = Latest { valid: false, value: 0 },
    op = |x, y| if y.valid { y } else { x }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latest {
    pub valid: bool,
    pub value: u64,
}

/// A 1-byte element (for lengths above 2^31): `u8` sum, wrapping.
#[scan_op(element = u8, identity = 0, op = |a, b| a + b)]
pub struct SumU8;

/// An element used only as a field of another element.
#[scan_op]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span16 {
    pub first: i16,
    pub last: i16,
}

/// Concatenation of spans with a nested element struct and a `match`:
/// the result keeps x's first and y's last value and counts joins.
#[scan_op(
    element = Joined,
    identity = Joined { span: Span16 { first: 0, last: 0 }, joins: 0, empty: true },
    op = fn join(x: Joined, y: Joined) -> Joined {
        let kind = (x.empty as u8) * 2 + (y.empty as u8);
        match kind {
            0 => Joined { span: Span16 { first: x.span.first, last: y.span.last }, joins: x.joins + y.joins + 1, empty: false },
            1 => x,
            _ => y,
        }
    }
)]
pub struct JoinSpans;

/// The element of [`JoinSpans`].
#[scan_op]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Joined {
    pub span: Span16,
    pub joins: u32,
    pub empty: bool,
}

/// A fixed tile shape (128 threads × 4 items) for the same operator as
/// [`SumU32`], to compile a non-default generation parameter set.
#[scan_op(element = u32, identity = 0, op = |a, b| a + b, block_threads = 128, items_per_thread = 4)]
pub struct SumU32Small;

/// Exercises casts, shifts, saturating and bit operations on 16-bit lanes
/// packed in a `u32`: per-lane saturating sums (associative, commutative).
#[scan_op(
    element = u32,
    identity = 0,
    op = |x, y| {
        let lo = ((x & 0xffff) as u16).saturating_add((y & 0xffff) as u16);
        let hi = ((x >> 16) as u16).saturating_add((y >> 16) as u16);
        (hi as u32) << 16 | lo as u32
    }
)]
pub struct SaturatingLanes;

/// An operator whose CUDA name, `scan`, starts like the prelude's helpers
/// (`scan_tile_status_bytes`, `scan_pipelined_shared_bytes`, …): its program
/// must still compile, every exported name its own.
#[scan_op(element = u32, identity = 0, op = |a, b| a ^ b)]
pub struct Scan;

/// Two element structs named `Pair`, from two modules, as fields of one
/// element: each gets its own CUDA name (the Rust name and a hash of the
/// module path), so both declarations live in one program.
pub mod left {
    use gpu_scan::scan_op;
    /// An affine map `v ↦ mul·v + add` on wrapping `u32`s.
    #[scan_op]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Pair {
        pub mul: u32,
        pub add: u32,
    }
}
pub mod right {
    use gpu_scan::scan_op;
    /// A span of 16-bit positions.
    #[scan_op]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Pair {
        pub first: u16,
        pub last: u16,
    }
}

/// Composes the affine maps (`x` first) and joins the spans (the first of
/// `x`, the last of `y`): non-commutative in both fields. The joined span
/// is built as a value of its own (`right::Pair { … }` in an expression),
/// which the CUDA names through the policy's alias of `right::Pair`.
#[scan_op(
    identity = Pairs { map: left::Pair { mul: 1, add: 0 }, span: right::Pair { first: 0, last: 0 } },
    op = |x, y| {
        let span = if x.map.mul == 1 && x.map.add == 0 && x.span.first == 0 && x.span.last == 0 {
            y.span
        } else if y.map.mul == 1 && y.map.add == 0 && y.span.first == 0 && y.span.last == 0 {
            x.span
        } else {
            right::Pair { first: x.span.first, last: y.span.last }
        };
        Pairs {
            map: left::Pair { mul: x.map.mul * y.map.mul, add: y.map.mul * x.map.add + y.map.add },
            span,
        }
    }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pairs {
    pub map: left::Pair,
    pub span: right::Pair,
}

/// A random [`Latest`]: valid with probability `p_valid`; invalid ones are
/// canonical (the identity), the only form for which the identity law holds.
pub fn random_latest(rng: &mut impl rand::Rng, p_valid: f64) -> Latest {
    if rng.random_bool(p_valid) {
        Latest {
            valid: true,
            value: rng.random(),
        }
    } else {
        <Latest as ScanOp>::IDENTITY
    }
}

/// A random [`Joined`]: empty with probability `p_empty`; empty ones are
/// canonical (the identity), the only form for which the identity law holds.
pub fn random_joined(rng: &mut impl rand::Rng, p_empty: f64) -> Joined {
    if rng.random_bool(p_empty) {
        return <JoinSpans as ScanOp>::IDENTITY;
    }
    Joined {
        span: Span16 {
            first: rng.random(),
            last: rng.random(),
        },
        joins: rng.random_range(0..3),
        empty: false,
    }
}

// Load and store stages (`#[scan_map]`, `#[scan_predicate]`): integer
// semantics, struct inputs and outputs, both function forms.

/// `u8` to `u32`, times 3.
#[scan_map(input = u8, output = u32, map = |x| x as u32 * 3)]
pub struct Triple;

/// `u8` arithmetic that wraps (`x * 200 + 7`), as in Rust's release builds and on the GPU.
#[scan_map(input = u8, output = u8, map = |x| x * 200 + 7)]
pub struct WrapU8;

/// `u32` to the affine map v ↦ v + x (a struct output).
#[scan_map(input = u32, output = Affine, map = |x| Affine { a: 1.0, b: x as f32 })]
pub struct Shift;

/// An affine map evaluated at 2 (a struct input, the `fn` form).
#[scan_map(input = Affine, output = f32, map = fn at_two(m: Affine) -> f32 { m.a * 2.0 + m.b })]
pub struct AtTwo;

/// Doubles: a stage whose snake-case name is a C++ keyword (`double`), which
/// its CUDA name's module hash keeps apart.
#[scan_map(input = u32, output = u32, map = |x| x * 2)]
pub struct Double;

/// `u32` to an exact affine map (an odd slope, so products stay
/// informative): the load stage of the staged scans of [`AffineU32`].
#[scan_map(input = u32, output = AffineU32, map = |x| AffineU32 { a: x | 1, b: x >> 3 })]
pub struct ToAffineU32;

/// An affine map's offset, the state of the recurrence it composes: the
/// store stage of those scans (8 bytes scanned, 4 written).
#[scan_map(input = AffineU32, output = u32, map = |m| m.b)]
pub struct AffineOffset;

/// A value, valid where it is a multiple of 3 (an invalid one holds 0, as
/// [`Latest`]'s identity needs): the load stage of the staged "keep the
/// right one" scans (8 bytes read, 16 scanned).
#[scan_map(input = u64, output = Latest, map = |x| Latest { valid: x % 3 == 0, value: if x % 3 == 0 { x } else { 0 } })]
pub struct TagEveryThird;

/// The latest valid value: their store stage.
#[scan_map(input = Latest, output = u64, map = |l| l.value)]
pub struct LatestValue;

/// Multiples of 3.
#[scan_predicate(element = u32, keep = |x| x % 3 == 0)]
pub struct Third;

/// Bytes that are multiples of 3: a predicate on an element narrower than
/// a word (a partition's tile staged element by element).
#[scan_predicate(element = u8, keep = |x| x % 3 == 0)]
pub struct ThirdU8;

/// One more than a multiple of 3.
#[scan_predicate(element = u32, keep = |x| x % 3 == 1)]
pub struct OneMore;

/// Affine maps with a > 0.5 (a predicate on a struct).
#[scan_predicate(element = Affine, keep = |m| m.a > 0.5)]
pub struct Growing;

/// Statistics with an even count: a predicate on a 24-byte struct.
#[scan_predicate(element = Stats, keep = |s| s.count % 2 == 0)]
pub struct EvenCount;

/// Affine maps with b > 0.5: after `Growing`, the second of three parts.
#[scan_predicate(element = Affine, keep = |m| m.b > 0.5)]
pub struct Lifting;

/// Statistics whose sum is over 0.5: after `EvenCount`, the second of
/// three parts of a 24-byte struct.
#[scan_predicate(element = Stats, keep = |s| s.sum > 0.5)]
pub struct LargeSum;

/// Positive `i64` (the `fn` form, with a `let`).
#[scan_predicate(element = i64, keep = fn positive(v: i64) -> bool { let zero = 0; v > zero })]
pub struct Positive;

/// Integer keys equal when equal.
#[scan_equality(element = u32, eq = |a, b| a == b)]
pub struct SameU32;

/// Floats equal by `==` (each NaN a run of its own).
#[scan_equality(element = f32, eq = |a, b| a == b)]
pub struct SameF32;

/// Affine maps with the same slope (an equality on a struct's field, the
/// `fn` form).
#[scan_equality(element = Affine, eq = fn same_slope(x: Affine, y: Affine) -> bool { x.a == y.a })]
pub struct SameSlope;

/// Statistics by their maximum's sign, then by count (wrapping, a `let`
/// the components share), then by sum: a sort key of three components
/// over a struct of three field types.
#[sort_key(record = Stats, key = (i8, u32, f64), by = |s| {
    let count = s.count * 3 + 1;
    (if s.max < 0.0 { -1 } else { 1 }, count, s.sum)
})]
pub struct BySignCountSum;

/// A sort key of one component (the `fn` form).
#[sort_key(record = Affine, key = f32, by = fn slope(m: Affine) -> f32 { m.a })]
pub struct BySlope;

/// A program running sort key `name` (whose `CUDA_SOURCE` is `source`) of
/// `components` components over an array: `run_<name>(in, out, n)` writes
/// component c of record i's key to `out[i * components + c]`, as a
/// double.
pub fn sort_key_program(name: &str, source: &str, components: usize) -> String {
    let writes: String = (0..components)
        .map(|c| format!("    out[i * {components} + {c}] = (double)gpu_scan_stages::{name}::key{c}(in[i]);\n"))
        .collect();
    format!(
        "{}\n{source}\nextern \"C\" __global__ void run_{name}(const gpu_scan_stages::{name}::input_t *in, \
         double *out, unsigned int n) {{\n  \
         static_assert(gpu_scan_stages::{name}::components == {components}, \"the key's components\");\n  \
         unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n  \
         if (i < n) {{\n{writes}  }}\n}}\n",
        gpu_scan::kernels_gen::PRELUDE
    )
}

/// A program running stage `name` (whose `CUDA_SOURCE` is `source`) over an
/// array: `run_<name>(in, out, n)` writes `apply(in[i])` to `out[i]`, or
/// for an equality (`pairs`) `apply(in[i], in[i + 1])` (`in[i]` twice for
/// the last).
pub fn stage_program(name: &str, source: &str, pairs: bool) -> String {
    let args = if pairs {
        "in[i], in[i + 1 < n ? i + 1 : i]"
    } else {
        "in[i]"
    };
    format!(
        "{}\n{source}\nextern \"C\" __global__ void run_{name}(const gpu_scan_stages::{name}::input_t *in, \
         gpu_scan_stages::{name}::output_t *out, unsigned int n) {{\n  \
         unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n  \
         if (i < n) out[i] = gpu_scan_stages::{name}::apply({args});\n}}\n",
        gpu_scan::kernels_gen::PRELUDE
    )
}
