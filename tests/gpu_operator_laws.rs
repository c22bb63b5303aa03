//! The operator-law check of `GpuScanner` on the device: a broken operator
//! is refused before anything is enqueued (the poisoned output and the
//! input stay as they were, plain and segmented, in and out of place), the
//! opt-out lets it run, a lawful operator passes and is checked once, and a
//! scan captured in a CUDA graph is not checked (it cannot wait) but the
//! next ordinary one is. The check is on by default in debug builds only;
//! these tests turn it on with `set_law_checks(true)` so that the release
//! builds the device runs use exercise it too.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::gpu::*;
use common::ops::*;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use gpu_scan::scan_runtime::FlagFormat;

/// Subtraction: not associative.
#[scan_op(element = i64, identity = 0, op = |a, b| a - b)]
struct Minus;

#[test]
fn a_broken_operator_is_refused_with_everything_untouched() {
    let Some(ctx) = open_gpu("a_broken_operator_is_refused_with_everything_untouched") else {
        return;
    };
    let stream = ctx.default_stream();
    let n = 100_000;
    let host: Vec<i64> = (0..n as i64).map(|i| i * 7 % 1000 - 300).collect();
    let input = stream.clone_htod(&host).unwrap();
    let mut out = stream.alloc_zeros::<i64>(n).unwrap();
    let mut scanner = GpuScanner::<Minus>::new(&ctx).unwrap();
    assert!(matches!(
        scanner.check_laws(&stream, &input),
        Err(ScanError::OperatorLaws { op: "minus", .. })
    ));

    scanner.set_law_checks(true);
    poison(&stream, &mut out);
    let err = scanner.inclusive(&stream, &input, &mut out).unwrap_err();
    assert!(matches!(err, ScanError::OperatorLaws { .. }), "{err}");
    println!("refused: {err}");
    assert!(still_poisoned(&stream, &out), "output written");

    let mut data = input.clone();
    assert!(scanner
        .exclusive_in_place(&stream, &mut data)
        .is_err_and(|e| matches!(e, ScanError::OperatorLaws { .. })));
    assert_eq!(stream.clone_dtoh(&data).unwrap(), host, "data written");

    let flags = HeadFlagBuilder::new(&ctx)
        .unwrap()
        .from_offsets(
            &stream,
            &stream.clone_htod(&[0u32, 10, 5000]).unwrap(),
            n,
            FlagFormat::Bits,
        )
        .unwrap();
    let err = scanner
        .scan(
            &stream,
            ScanSpec::inclusive().segments(flags.as_flags()),
            &input,
            &mut out,
        )
        .unwrap_err();
    assert!(matches!(err, ScanError::OperatorLaws { .. }), "{err}");
    assert!(
        still_poisoned(&stream, &out),
        "output written by a segmented scan"
    );
    assert_eq!(stream.clone_dtoh(&input).unwrap(), host, "input written");

    // The opt-out: the scan runs (its answer depends on the grouping and
    // on the identity the GPU seeds tiles with: not compared).
    scanner.set_law_checks(false);
    scanner.inclusive(&stream, &input, &mut out).unwrap();
    assert!(!still_poisoned(&stream, &out), "the scan wrote nothing");
}

#[test]
fn a_lawful_operator_passes_and_captures_are_not_checked() {
    let Some(ctx) = open_gpu("a_lawful_operator_passes_and_captures_are_not_checked") else {
        return;
    };
    let seed = suite_seed();
    println!("a_lawful_operator_passes_and_captures_are_not_checked: seed {seed}");
    // A non-null stream that leaves cudarc's multi-stream event tracking
    // off, so that a capture depends on nothing outside it (see
    // gpu_launch_state.rs).
    let stream = ctx.per_thread_stream();
    let n = 1 << 20;
    let host = random_input::<Affine>(n, seed);
    let input = stream.clone_htod(&host).unwrap();
    let mut out = stream.alloc_zeros::<Affine>(n).unwrap();
    let mut scanner = GpuScanner::<Affine>::new(&ctx).unwrap();
    scanner.set_law_checks(true);
    scanner.reserve(&stream, ScanKind::Inclusive, n).unwrap();

    // Captured with the check pending: not checked, captured fine.
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    scanner.inclusive(&stream, &input, &mut out).unwrap();
    let graph = stream
        .end_capture(CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a graph");
    poison(&stream, &mut out);
    graph.launch().unwrap();
    let mut want = host.clone();
    cpu::par_scan_in_place::<Affine>(ScanKind::Inclusive, &mut want);
    let mut failures = Vec::new();
    compare::<Affine>(
        "graph replay",
        n,
        &stream.clone_dtoh(&out).unwrap(),
        &want,
        &mut failures,
    );

    // The next ordinary scan checks (the Affine data passes) and answers.
    poison(&stream, &mut out);
    scanner.exclusive(&stream, &input, &mut out).unwrap();
    let mut want = host.clone();
    cpu::par_scan_in_place::<Affine>(ScanKind::Exclusive, &mut want);
    compare::<Affine>(
        "checked scan",
        n,
        &stream.clone_dtoh(&out).unwrap(),
        &want,
        &mut failures,
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
