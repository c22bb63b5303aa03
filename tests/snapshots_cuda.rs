//! Snapshots of the CUDA emitted for the operator set: every change to the
//! generated code shows up in review as a snapshot diff.

mod common;
use common::ops::*;
use gpu_scan::{kernels_gen, ScanOp};

/// The operator's part of the program (the prelude has its own snapshot).
fn operator_part<Op: ScanOp>() -> &'static str {
    Op::CUDA_SOURCE
        .strip_prefix(kernels_gen::PRELUDE)
        .expect("programs start with the prelude")
}

#[test]
fn prelude() {
    insta::assert_snapshot!("prelude", kernels_gen::PRELUDE);
}

#[test]
fn sum_u32() {
    insta::assert_snapshot!("sum_u32", operator_part::<SumU32>());
}

#[test]
fn max_f32() {
    insta::assert_snapshot!("max_f32", operator_part::<MaxF32>());
}

#[test]
fn min_i64() {
    insta::assert_snapshot!("min_i64", operator_part::<MinI64>());
}

#[test]
fn affine() {
    insta::assert_snapshot!("affine", operator_part::<Affine>());
}

#[test]
fn stats_mixed_struct() {
    insta::assert_snapshot!("stats", operator_part::<Stats>());
}

#[test]
fn mat2_product() {
    insta::assert_snapshot!("mat2", operator_part::<Mat2>());
}

#[test]
fn nested_struct_with_match() {
    insta::assert_snapshot!("join_spans", operator_part::<JoinSpans>());
}

#[test]
fn segment_flag_builders() {
    insta::assert_snapshot!("segment_flags", kernels_gen::SEGMENT_FLAGS_SOURCE);
}
