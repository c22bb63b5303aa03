//! Load and store stages: functions of one element (or of two neighbours),
//! written once in Rust with `#[scan_map]`, `#[scan_predicate]` or
//! `#[scan_equality]`, that the GPU kernels apply
//! as they load or store elements (so that an application reads its input
//! once and writes its output once) and the CPU backend applies the same
//! way. The macro checks the function, translates it to CUDA like an
//! operator, and gives the Rust side the same integer semantics.
//!
//! ```
//! use gpu_scan::prelude::*;
//! use gpu_scan::stages::{ScanMap, ScanPredicate};
//!
//! // Bytes widened as they are loaded, so that their sum cannot wrap at 255.
//! #[scan_map(input = u8, output = u32, map = |x| x as u32)]
//! struct Widen;
//!
//! #[scan_predicate(element = u32, keep = |x| x % 2 == 0)]
//! struct IsEven;
//!
//! assert_eq!(Widen::apply(200), 200u32);
//! assert!(IsEven::keep(4) && !IsEven::keep(7));
//! ```

use crate::ScanElement;

/// A load stage: each input element becomes the element the scan combines
/// (`#[scan_map(input = I, output = O, map = |x| …)]`).
pub trait ScanMap: 'static {
    /// What the kernels read.
    type Input: ScanElement;
    /// What they scan.
    type Output: ScanElement;
    /// The stage's name in snake case: its CUDA policy struct's name.
    const NAME: &'static str;
    /// The stage's part of a CUDA program: its types' declarations and its
    /// policy struct (`kernels_gen::stage`).
    const CUDA_SOURCE: &'static str;
    /// The stage as text (`kernels_gen::ir_text::print_stage`): what a
    /// stage built at run time is read from.
    const STAGE_IR: &'static str;

    /// The function, as written (with the CUDA side's integer semantics).
    fn apply(x: Self::Input) -> Self::Output;
}

/// A store stage choosing elements: what a compaction keeps
/// (`#[scan_predicate(element = T, keep = |x| …)]`).
pub trait ScanPredicate: 'static {
    /// The elements it judges.
    type Element: ScanElement;
    /// The stage's name in snake case: its CUDA policy struct's name.
    const NAME: &'static str;
    /// The stage's part of a CUDA program (`kernels_gen::stage`).
    const CUDA_SOURCE: &'static str;
    /// The stage as text (`kernels_gen::ir_text::print_stage`): what a
    /// stage built at run time is read from.
    const STAGE_IR: &'static str;

    /// Whether `x` is kept.
    fn keep(x: Self::Element) -> bool;
}

/// Whether two neighbouring elements belong to one run: what unique,
/// run-length encoding and reduce-by-key compare
/// (`#[scan_equality(element = T, eq = |a, b| …)]`). It should be an
/// equivalence (reflexive, symmetric, transitive) on the values you pass,
/// as `==` is on integers; float `==` is not reflexive on NaN, so each
/// NaN starts a run of its own, as in CUB.
pub trait ScanEquality: 'static {
    /// The elements it compares.
    type Element: ScanElement;
    /// The stage's name in snake case: its CUDA policy struct's name.
    const NAME: &'static str;
    /// The stage's part of a CUDA program (`kernels_gen::stage`).
    const CUDA_SOURCE: &'static str;
    /// The stage as text (`kernels_gen::ir_text::print_stage`): what a
    /// stage built at run time is read from.
    const STAGE_IR: &'static str;

    /// Whether `a` and `b`, in this order, are in one run.
    fn equal(a: Self::Element, b: Self::Element) -> bool;
}
