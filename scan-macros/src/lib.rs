//! The `#[scan_op]` attribute of `gpu-scan`.
//!
//! Phases, one module each: `attr` parses the attribute's arguments,
//! `ast` reads and checks the annotated item, `translate` turns the
//! operator's Rust into the `kernels-gen` IR (reporting every construct
//! outside the supported subset), `rewrite` gives the Rust side the same
//! integer semantics as the CUDA side, and `expand` writes the trait
//! implementations and the embedded CUDA program.
//!
//! Use it through the `gpu-scan` facade; its documentation lists the
//! supported subset.

mod ast;
mod attr;
mod expand;
mod rewrite;
mod translate;

use proc_macro::TokenStream;

/// Defines an associative scan operator, or an element struct, in plain Rust.
///
/// See the `gpu_scan` crate documentation for the full reference.
#[proc_macro_attribute]
pub fn scan_op(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::scan_op(args.into(), item.into()).into()
}
