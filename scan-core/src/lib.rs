//! Traits, operator descriptions and the CPU backend of `gpu-scan`.
//!
//! An operator is a type implementing [`ScanOp`]: an element type
//! ([`ScanElement`]), an identity, an associative `combine`, and the CUDA
//! program generated for it by `#[scan_op]`. [`cpu`] scans with any operator
//! on the CPU, sequentially or on all cores; it is the oracle for every GPU
//! result and the backend on machines without a GPU.

pub mod associativity;
pub mod columns;
pub mod const_str;
pub mod cpu;
pub mod distributed;
pub mod laws;
mod lengths;
pub mod real;
pub mod recurrence;
pub mod segment_totals;
pub mod segmented;
mod segments;
pub mod select;
pub mod semantics;
pub mod sort;
pub mod spec;
pub mod spmv;
pub mod stages;
pub mod summed_area;

pub use associativity::{check_associativity, Counterexample};
pub use laws::check_laws;
pub use lengths::LengthMismatch;
pub use spec::ScanKind;
pub use spec::{
    Columns, CountedSegmentTotals, Direction, HostCarryOut, HostSegmentedCarryOut, HostSegments,
    IntoScanSpec, NoCarryOut, NoSegments, Rows, ScanSpec, SegmentTotals, SegmentedBy, Shape,
    SummedArea, TakesCarryOut,
};

/// A type that can be scanned on the GPU: plain data whose CUDA declaration
/// matches its Rust layout.
///
/// Implemented for `u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bool`, and by
/// `#[scan_op]` for annotated `#[repr(C)]` structs.
///
/// # Safety
/// `CUDA_TYPE` must name a CUDA type with exactly the size, alignment and
/// field layout of `Self`, and every bit pattern the GPU may write must be a
/// valid `Self`. `#[scan_op]` guarantees this for the structs it accepts.
pub unsafe trait ScanElement: Copy + Send + Sync + 'static {
    /// The CUDA spelling of the type: `"float"` for `f32`; for a struct,
    /// its Rust name and a hash of its module path (`"Affine_3aee821b5c763e3c"`),
    /// so that two modules' same-named structs never share a declaration.
    const CUDA_TYPE: &'static str;
    /// CUDA declarations the type needs (its struct and nested structs,
    /// each behind an include guard); empty for primitives.
    const CUDA_DECL: &'static str;
    /// The 32-bit registers a value takes in a kernel split into its
    /// fields: one per scalar of up to 4 bytes (a `u8` or `bool` too), two
    /// per 8-byte one. An element whose fields take many more registers
    /// than its bytes fill words is held packed in words on the GPU
    /// (`kernels_gen::packed_element`). `#[scan_op]` sums it over the
    /// fields.
    const REGISTERS: usize;
    /// The registers of the element's widest scalar: two where a field (or
    /// nested field) is 8 bytes, else one. An operator's temporaries
    /// ([`ScanOp::LIVE_TEMPORARIES`]) are counted at this width. The
    /// default, two, never under-counts; `#[scan_op]` computes it.
    const SCALAR_REGISTERS: usize = 2;
    /// The struct's declaration in the text form of
    /// `kernels_gen::ir_text::print_struct` (`#[scan_op]` writes it; empty
    /// for primitives): what a program that evaluates operators at run
    /// time needs of their element. Nested structs are named by their Rust
    /// names and described by their own `STRUCT_IR`.
    const STRUCT_IR: &'static str = "";

    /// Calls `visit` with each scalar of the value in field order (array
    /// elements in index order, nested structs depth first; padding is not
    /// a scalar). [`laws::check_laws`] compares elements through it.
    /// `#[scan_op]` writes it for annotated structs.
    fn for_each_lane(&self, visit: &mut dyn FnMut(laws::Lane));
}

macro_rules! primitive_elements {
    ($($rust:ty => $cuda:literal, $lane:expr;)*) => {
        $(
            // SAFETY: the CUDA type has the same size, alignment and representation.
            unsafe impl ScanElement for $rust {
                const CUDA_TYPE: &'static str = $cuda;
                const CUDA_DECL: &'static str = "";
                const REGISTERS: usize = ::core::mem::size_of::<$rust>().div_ceil(4);
                const SCALAR_REGISTERS: usize = Self::REGISTERS;
                fn for_each_lane(&self, visit: &mut dyn FnMut(laws::Lane)) {
                    let lane: fn($rust) -> laws::Lane = $lane;
                    visit(lane(*self))
                }
            }
        )*
    };
}

primitive_elements! {
    u8 => "unsigned char", |v| laws::Lane::Int(v.into());
    u16 => "unsigned short", |v| laws::Lane::Int(v.into());
    u32 => "unsigned int", |v| laws::Lane::Int(v.into());
    u64 => "unsigned long long", |v| laws::Lane::Int(v.into());
    i8 => "signed char", |v| laws::Lane::Int(v.into());
    i16 => "short", |v| laws::Lane::Int(v.into());
    i32 => "int", |v| laws::Lane::Int(v.into());
    i64 => "long long", |v| laws::Lane::Int(v.into());
    f32 => "float", laws::Lane::F32;
    f64 => "double", laws::Lane::F64;
    bool => "bool", laws::Lane::Bool;
}

/// An associative operator with an identity, runnable on the CPU and (through
/// its generated CUDA program) on the GPU.
///
/// Implement it with `#[scan_op]`, which writes `combine` from your Rust
/// code and translates the same code to CUDA. Integer `+ - *` wrap in both
/// (see [`semantics`]).
pub trait ScanOp: 'static {
    /// The element type.
    type Element: ScanElement;
    /// The operator's name in snake case; every CUDA symbol of its program
    /// starts with it.
    const NAME: &'static str;
    /// The identity: `combine(IDENTITY, v) == combine(v, IDENTITY) == v`
    /// for every value you scan. The GPU relies on it (it seeds the first
    /// tile and pads partial tiles with it), so an element type with several
    /// representations of "nothing" must keep them canonical;
    /// [`check_associativity`] checks this law too.
    const IDENTITY: Self::Element;
    /// The operator's part of its CUDA program: the element's declarations,
    /// the operator policy (its `identity()` and `combine`, translated from
    /// Rust) and the `extern "C"` kernel wrappers. The library of scan
    /// templates goes in front of it: `kernels_gen::program(CUDA_SOURCE)` is
    /// the complete program.
    const CUDA_SOURCE: &'static str;
    /// Threads per block of the program's kernels.
    const BLOCK_THREADS: u32;
    /// Elements per thread of the program's kernels.
    const ITEMS_PER_THREAD: u32;
    /// Whether `combine(x, y) == combine(y, x)` for every two values you
    /// scan (sums, products, minima, maxima, bitwise and logical
    /// operators). Scans never need it; a two-dimensional scan
    /// ([`summed_area`]) of a commutative operator may combine a
    /// rectangle's elements in any order, which lets the GPU read the
    /// matrix in tiles instead of scanning rows, then columns. The built-in
    /// operators say `true`; `#[scan_op(commutative = true, …)]` says it of
    /// yours, and [`check_laws`] then checks it on every sample.
    const COMMUTATIVE: bool = false;
    /// The most of `combine`'s `let` values alive at once: the
    /// temporaries a GPU thread holds beside its tile, which the kernels'
    /// register budget makes room for (`kernels_gen::pressure`). `#[scan_op]`
    /// counts them from the operator's code.
    const LIVE_TEMPORARIES: u32 = 0;
    /// The operator as the generator read it, in the text form of
    /// `kernels_gen::ir_text` (`#[scan_op]` writes it; empty where an
    /// operator was written by hand). The generator given this text alone
    /// writes the operator's part of [`CUDA_SOURCE`](Self::CUDA_SOURCE):
    /// the form operators built at run time take.
    const OPERATOR_IR: &'static str = "";

    /// `x ∘ y`, where `x` comes first in the sequence.
    fn combine(x: Self::Element, y: Self::Element) -> Self::Element;

    /// Elements per tile (one block's share of the input).
    fn tile_items() -> usize {
        Self::BLOCK_THREADS as usize * Self::ITEMS_PER_THREAD as usize
    }
}
