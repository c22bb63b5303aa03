//! Operators read back from their text (`ScanOp::OPERATOR_IR`,
//! `kernels_gen::ir_text`), the form operators built at run time take
//! (issue 50: the Python binding hands the generator this text): for
//! every operator of the built-ins, the test operators and the
//! differential family (every construct and method of the subset), the
//! text parses, prints back to itself, and the generator given the parsed
//! operator alone writes the operator's CUDA byte for byte as `#[scan_op]`
//! wrote it at compile time, with the same tile shape and live
//! temporaries. No GPU and no NVRTC needed.

mod common;
#[path = "common/differential_ops.rs"]
mod differential_ops;

use common::ops::*;
use differential_ops::*;
use gpu_scan::kernels_gen::{self, ir_text, ItemsPerThread, Part};
use gpu_scan::ops::{BitXor, Max, Min, Product, Sum};
use gpu_scan::prelude::*;

/// The operator's CUDA from its text, with the element's declarations in
/// front and the structs it names by path resolved from `named`.
fn source_from_text<Op: ScanOp>(text: &str, named: &[(&str, &str)]) -> String {
    let (desc, params) = ir_text::parse(text).unwrap_or_else(|e| panic!("{}: {e}", Op::NAME));
    let parts = kernels_gen::operator_source_parts(&desc, &params).unwrap();
    let mut source = String::from(<Op::Element as ScanElement>::CUDA_DECL);
    for part in parts {
        match part {
            Part::Text(t) => source.push_str(&t),
            Part::Element => source.push_str(<Op::Element as ScanElement>::CUDA_TYPE),
            Part::Named(path) => match named.iter().find(|(p, _)| *p == path) {
                Some((_, cuda)) => source.push_str(cuda),
                None => panic!("{}: struct `{path}` not given to the test", Op::NAME),
            },
            Part::Field(_) => unreachable!("an operator's part names no fields' types"),
        }
    }
    source
}

/// Checks operator `Op` read back from its text.
fn check<Op: ScanOp>(named: &[(&str, &str)]) {
    let text = Op::OPERATOR_IR;
    assert!(!text.is_empty(), "{}: #[scan_op] wrote no text", Op::NAME);
    let (desc, params) = ir_text::parse(text).unwrap_or_else(|e| panic!("{}: {e}", Op::NAME));
    assert_eq!(ir_text::print(&desc, &params), text, "{}", Op::NAME);
    assert_eq!(desc.name, Op::NAME);
    assert_eq!(
        source_from_text::<Op>(text, named),
        Op::CUDA_SOURCE,
        "{}: the CUDA from the text differs from #[scan_op]'s",
        Op::NAME
    );
    // The tile shape and the live temporaries from the text and the
    // element's size.
    let size = std::mem::size_of::<Op::Element>();
    let items = match params.items_per_thread {
        ItemsPerThread::Fixed(n) => n,
        ItemsPerThread::Auto => kernels_gen::auto_items_per_thread(size),
    };
    let threads = params
        .block_threads
        .unwrap_or_else(|| kernels_gen::auto_block_threads(size, items));
    assert_eq!(
        (threads, items),
        (Op::BLOCK_THREADS, Op::ITEMS_PER_THREAD),
        "{}",
        Op::NAME
    );
    assert_eq!(
        kernels_gen::pressure::peak_live_lets(&desc.body) as u32,
        Op::LIVE_TEMPORARIES,
        "{}",
        Op::NAME
    );
}

#[test]
fn built_in_operators_generate_from_their_text() {
    check::<Sum<u32>>(&[]);
    check::<Sum<i64>>(&[]);
    check::<Sum<f32>>(&[]);
    check::<Sum<f64>>(&[]);
    check::<Product<u16>>(&[]);
    check::<Min<i8>>(&[]);
    check::<Max<f64>>(&[]);
    check::<BitXor<u64>>(&[]);
}

#[test]
fn test_operators_generate_from_their_text() {
    check::<SumU32>(&[]);
    check::<MaxF32>(&[]);
    check::<MinI64>(&[]);
    check::<Affine>(&[]);
    check::<Stats>(&[]);
    check::<Mat2>(&[]);
    check::<AffineU32>(&[]);
    check::<Latest>(&[]);
    check::<SumU8>(&[]);
    check::<JoinSpans>(&[]);
    check::<SumU32Small>(&[]);
    check::<SaturatingLanes>(&[]);
    // Struct literals of other structs name them by path.
    check::<Pairs>(&[
        ("left::Pair", <left::Pair as ScanElement>::CUDA_TYPE),
        ("right::Pair", <right::Pair as ScanElement>::CUDA_TYPE),
    ]);
}

#[test]
fn every_construct_generates_from_its_text() {
    let inner = [("Inner", <Inner as ScanElement>::CUDA_TYPE)];
    check::<Ints>(&[]);
    check::<IntMethods>(&[]);
    check::<Floats>(&[]);
    check::<Transcendental>(&[]);
    check::<Casts>(&[]);
    check::<Control>(&inner);
    check::<KeepLargerOdd>(&[]);
}

/// The comparison sees the text: another identity, or another operand
/// order, is another program.
#[test]
fn a_changed_text_is_another_program() {
    let text = <Sum<u32> as ScanOp>::OPERATOR_IR;
    let one = text.replacen("(identity (int 0 -))", "(identity (int 1 -))", 1);
    assert_ne!(one, text, "{text}");
    assert_ne!(
        source_from_text::<Sum<u32>>(&one, &[]),
        <Sum<u32> as ScanOp>::CUDA_SOURCE
    );
    let text = <Affine as ScanOp>::OPERATOR_IR;
    let swapped = text.replacen(r#"(params "x" "y")"#, r#"(params "y" "x")"#, 1);
    assert_ne!(swapped, text, "{text}");
    assert_ne!(
        source_from_text::<Affine>(&swapped, &[]),
        <Affine as ScanOp>::CUDA_SOURCE
    );
}
