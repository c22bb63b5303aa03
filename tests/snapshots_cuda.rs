//! Snapshots of the CUDA emitted for the operator set: every change to the
//! generated code shows up in review as a snapshot diff. An operator's part
//! (its policy and kernel wrappers, tens of lines) has one snapshot per test
//! operator. The prelude, the library of templates and the device API are
//! checked-in files (`kernels-gen/src`), whose diffs show themselves: the
//! test only checks that every program holds them whole.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::ops::*;
use gpu_scan::{kernels_gen, ScanOp};

/// The operator's part of the program (the prelude, the library and the
/// kernel wrappers have their own snapshots).
fn operator_part<Op: ScanOp>() -> &'static str {
    let program = gpu_scan::scan_runtime::program_source::<Op>(&[]);
    assert!(program.contains(kernels_gen::PRELUDE));
    assert!(program.contains(kernels_gen::LIBRARY));
    assert!(program.contains(Op::CUDA_SOURCE));
    Op::CUDA_SOURCE
}

/// Every kernel's wrapper, as printed from the ABI table, for one operator.
#[test]
fn kernel_wrappers() {
    use gpu_scan::kernels_gen::abi::KernelAbi;
    let wrappers: String = KernelAbi::all().map(|k| k.wrapper("sum_u32")).collect();
    insta::assert_snapshot!("kernel_wrappers", wrappers);
}

#[test]
fn layout_of_sum_u32() {
    insta::assert_snapshot!(
        "layout_sum_u32",
        gpu_scan::scan_runtime::layout::<SumU32>().cuda_declaration(SumU32::NAME)
    );
}

#[test]
fn launch_state_declaration() {
    insta::assert_snapshot!(
        "launch_state",
        kernels_gen::launch_state::launch_state_declaration()
    );
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

/// Two modules' `Pair`s as fields of one element: two declarations with
/// distinct CUDA names, and the policy's alias of the one it names.
#[test]
fn same_named_structs_from_two_modules() {
    let part = operator_part::<Pairs>();
    insta::assert_snapshot!("pairs", part);
    let left = <left::Pair as gpu_scan::ScanElement>::CUDA_TYPE;
    let right = <right::Pair as gpu_scan::ScanElement>::CUDA_TYPE;
    assert_ne!(left, right);
    for name in [left, right] {
        assert!(name.starts_with("Pair_"), "{name}");
        assert!(
            part.contains(&format!("struct {name} {{")),
            "{name} is declared"
        );
    }
    assert!(part.contains(&format!("typedef {right} right__Pair;")));
}

#[test]
fn segment_flag_builders() {
    insta::assert_snapshot!(
        "segment_flags",
        kernels_gen::segment_flags::segment_flags_program()
    );
}
