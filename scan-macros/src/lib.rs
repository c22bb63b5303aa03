//! The `#[scan_op]`, `#[scan_map]`, `#[scan_predicate]` and
//! `#[scan_equality]` attributes of `gpu-scan`, and `#[sort_key]`.
//!
//! Phases, one module each: `attr` parses the attribute's arguments,
//! `ast` reads and checks the annotated item, `translate` turns the
//! operator's Rust into the `kernels-gen` IR (reporting every construct
//! outside the supported subset), `rewrite` gives the Rust side the same
//! integer semantics as the CUDA side, and `expand` writes the trait
//! implementations and the embedded CUDA program. `stage` does the same for
//! the stages (`#[scan_map]`, `#[scan_predicate]`, `#[scan_equality]`),
//! and `sort_key` for `#[sort_key]`, a record's key of one or more
//! components.
//!
//! Use it through the `gpu-scan` facade; its documentation lists the
//! supported subset.

mod ast;
mod attr;
mod expand;
mod rewrite;
mod sort_key;
mod stage;
mod translate;

use proc_macro::TokenStream;

/// Defines an associative scan operator, or an element struct, in plain Rust.
///
/// See the `gpu_scan` crate documentation for the full reference.
#[proc_macro_attribute]
pub fn scan_op(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::scan_op(args.into(), item.into()).into()
}

/// Defines a load stage: a function from an input element to the element a
/// scan combines, applied as the kernels load each element.
///
/// `#[scan_map(input = u8, output = u32, map = |x| x as u32)] struct Widen;`
/// (or `map = fn widen(x: u8) -> u32 { … }`), in the operators' subset of
/// Rust. See `gpu_scan::stages`.
#[proc_macro_attribute]
pub fn scan_map(args: TokenStream, item: TokenStream) -> TokenStream {
    stage::scan_map(args.into(), item.into()).into()
}

/// Defines a store stage choosing elements: what a compaction keeps.
///
/// `#[scan_predicate(element = u32, keep = |x| x % 2 == 0)] struct IsEven;`
/// in the operators' subset of Rust. See `gpu_scan::stages`.
#[proc_macro_attribute]
pub fn scan_predicate(args: TokenStream, item: TokenStream) -> TokenStream {
    stage::scan_predicate(args.into(), item.into()).into()
}

/// Defines when two neighbouring elements are in one run: what unique,
/// run-length encoding and reduce-by-key compare.
///
/// `#[scan_equality(element = Pair, eq = |a, b| a.key == b.key)] struct SameKey;`
/// in the operators' subset of Rust. See `gpu_scan::stages`.
#[proc_macro_attribute]
pub fn scan_equality(args: TokenStream, item: TokenStream) -> TokenStream {
    stage::scan_equality(args.into(), item.into()).into()
}

/// Defines a record's key for sorting: one primitive, or a tuple of them
/// compared most significant first.
///
/// `#[sort_key(record = Task, key = (i32, f32), by = |t| (t.priority, t.deadline))] struct Urgency;`
/// in the operators' subset of Rust. See `gpu_scan::sort::sort_by_key`.
#[proc_macro_attribute]
pub fn sort_key(args: TokenStream, item: TokenStream) -> TokenStream {
    sort_key::sort_key(args.into(), item.into()).into()
}
