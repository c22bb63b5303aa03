//! Operators built at run time from their text (`DynOperator::from_text`,
//! what the Python package hands the runtime), without a GPU: an operator
//! over a primitive builds the very program its `#[scan_op]` twin compiles
//! (so its kernels are the ledger's, already compiled and assembled by
//! `nvrtc_compile`), one over a struct the same layout and identity with
//! its own declarations, which NVRTC compiles here; the same text built
//! twice is one operator (its kernels found in memory); and the refusals.
#![cfg(feature = "gpu")]

mod common;
use common::ops::*;
use gpu_scan::kernels_gen::abi::KernelAbi;
use gpu_scan::kernels_gen::{self, Arch, Kernel};
use gpu_scan::ops::{Max, Min, Product, Sum};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::{jit, layout, program_source, DynOperator};

/// The bytes of `x`, an element without padding.
fn bytes_of<T: Copy>(x: &T) -> Vec<u8> {
    // SAFETY: `T` is a plain element without padding (checked by callers
    // through the size of its leaves), so every byte is initialized.
    unsafe { std::slice::from_raw_parts(x as *const T as *const u8, std::mem::size_of::<T>()) }
        .to_vec()
}

/// `Op` built from its text: the same layout, CUDA and whole program, and
/// the same identity, byte for byte.
fn same_program<Op: ScanOp>() {
    let built = DynOperator::from_text(Op::OPERATOR_IR, &[])
        .unwrap_or_else(|e| panic!("{}: {e}", Op::NAME));
    assert_eq!(built.name(), Op::NAME);
    assert_eq!(built.element_size(), std::mem::size_of::<Op::Element>());
    assert_eq!(built.element_align(), std::mem::align_of::<Op::Element>());
    assert_eq!(built.layout_for_tests(), layout::<Op>(), "{}", Op::NAME);
    assert_eq!(built.cuda_source(), Op::CUDA_SOURCE, "{}", Op::NAME);
    let all: Vec<KernelAbi> = KernelAbi::all().collect();
    assert!(
        built.program_source_for_tests(&all) == program_source::<Op>(&all),
        "{}: the built program differs from #[scan_op]'s",
        Op::NAME
    );
    assert_eq!(
        built.identity().bytes(),
        bytes_of(&Op::IDENTITY),
        "{}",
        Op::NAME
    );
}

#[test]
fn operators_over_primitives_build_their_macro_twins_program() {
    same_program::<Sum<u32>>();
    same_program::<Sum<i64>>();
    same_program::<Sum<f32>>();
    same_program::<Sum<f64>>();
    same_program::<Product<u64>>();
    same_program::<Max<f32>>();
    same_program::<Min<i8>>();
    same_program::<SumU32>();
    same_program::<MaxF32>();
    same_program::<MinI64>();
    same_program::<SumU8>();
}

/// `Op` (over a struct whose nested structs are `nested`, by name and
/// text) built from its text: the macro's layout (sizes, tile shape,
/// registers), its identity leaf by leaf, and a program NVRTC compiles.
fn same_layout<Op: ScanOp>(nested: &[&str]) -> DynOperator {
    let mut structs = vec![<Op::Element as ScanElement>::STRUCT_IR];
    structs.extend_from_slice(nested);
    let built = DynOperator::from_text(Op::OPERATOR_IR, &structs)
        .unwrap_or_else(|e| panic!("{}: {e}", Op::NAME));
    assert_eq!(built.element_size(), std::mem::size_of::<Op::Element>());
    assert_eq!(built.element_align(), std::mem::align_of::<Op::Element>());
    assert_eq!(built.layout_for_tests(), layout::<Op>(), "{}", Op::NAME);
    built
}

#[test]
fn operators_over_structs_have_their_macro_twins_layout_and_identity() {
    let affine = same_layout::<Affine>(&[]);
    assert_eq!(
        affine.identity().bytes(),
        bytes_of(&Affine { a: 1.0, b: 0.0 })
    );
    let affine_u32 = same_layout::<AffineU32>(&[]);
    assert_eq!(
        affine_u32.identity().bytes(),
        bytes_of(&AffineU32 { a: 1, b: 0 })
    );
    let mat2 = same_layout::<Mat2>(&[]);
    assert_eq!(
        mat2.identity().bytes(),
        bytes_of(&Mat2 {
            m: [1.0, 0.0, 0.0, 1.0]
        })
    );
    // Padding (u32, then an f64 at 8; 24 bytes): the leaves at their
    // offsets, the padding zero.
    let stats = same_layout::<Stats>(&[]);
    let id = stats.identity();
    let b = id.bytes();
    assert_eq!(b.len(), 24);
    assert_eq!(&b[0..4], &0u32.to_le_bytes());
    assert_eq!(&b[4..8], &[0; 4]);
    assert_eq!(&b[8..16], &0f64.to_le_bytes());
    assert_eq!(&b[16..20], &f32::NEG_INFINITY.to_le_bytes());
    assert_eq!(&b[20..24], &[0; 4]);
    same_layout::<Latest>(&[]);
}

#[test]
fn a_built_struct_operator_compiles() {
    if !jit::nvrtc_present() {
        println!("built_operators: NVRTC not found, compile skipped");
        return;
    }
    let built = same_layout::<Stats>(&[]);
    let abi = KernelAbi::plain(Kernel::SinglePassInclusive);
    let source = built.program_source_for_tests(&[abi]);
    compiles(
        "the built operator's program",
        &source,
        &abi.symbol(built.name()),
    );
}

/// Compiles `program` to PTX for sm_90 and checks that it has the entry
/// `symbol`; panics with `what` where it does not compile.
fn compiles(what: &str, program: &str, symbol: &str) {
    let options = kernels_gen::nvrtc_options(Arch::SM_90);
    match jit::compile_uncached("built", program, &options) {
        Ok(jit::Image::Ptx(ptx)) => {
            assert!(
                ptx.contains(&format!(".entry {symbol}(")),
                "{symbol} missing"
            );
        }
        Ok(jit::Image::Cubin(_)) => panic!("PTX asked for"),
        Err(e) => panic!("{what} does not compile: {e}"),
    }
}

#[test]
fn the_same_text_is_one_operator() {
    let a = DynOperator::from_text(<Affine as ScanOp>::OPERATOR_IR, &[Affine::STRUCT_IR]).unwrap();
    let b = DynOperator::from_text(<Affine as ScanOp>::OPERATOR_IR, &[Affine::STRUCT_IR]).unwrap();
    // One registered program: the same source, not a copy.
    assert!(std::ptr::eq(a.cuda_source(), b.cuda_source()));
    let c = DynOperator::from_text(<AffineU32 as ScanOp>::OPERATOR_IR, &[AffineU32::STRUCT_IR])
        .unwrap();
    assert!(!std::ptr::eq(a.cuda_source(), c.cuda_source()));
}

#[test]
fn refusals_say_what_is_wrong() {
    let refused = |text: &str, structs: &[&str]| match DynOperator::from_text(text, structs) {
        Err(ScanError::InvalidOperator(message)) => message,
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("accepted: {text}"),
    };
    refused("(operator", &[]);
    // The struct element without its declaration.
    let m = refused(<Affine as ScanOp>::OPERATOR_IR, &[]);
    assert!(m.contains("Affine"), "{m}");
    // A body of another type than the element (a bool for a u32).
    let text = <SumU32 as ScanOp>::OPERATOR_IR.replace("(add (var", "(lt (var");
    assert_ne!(text, <SumU32 as ScanOp>::OPERATOR_IR);
    refused(&text, &[]);
    // An element of the wrong size for an initial value.
    let op = DynOperator::from_text(<SumU32 as ScanOp>::OPERATOR_IR, &[]).unwrap();
    assert!(matches!(
        op.element(&[0; 8]),
        Err(ScanError::ElementBuffer {
            size: 4,
            bytes: 8,
            ..
        })
    ));
    assert_eq!(
        op.element(&7u32.to_le_bytes()).unwrap().bytes(),
        7u32.to_le_bytes()
    );
}

/// A predicate or an equality built from its `#[scan_predicate]` or
/// `#[scan_equality]` twin's text writes the twin's policy byte for byte
/// but for its name (the policy's name and a hash of the text), so the
/// select programs it compiles are the twin's, which `nvrtc_compile`
/// compiles and assembles; its host function agrees with the twin's.
#[test]
fn built_stages_write_their_twins_policies() {
    use gpu_scan::scan_runtime::DynStage;
    use gpu_scan::stages::{ScanEquality, ScanPredicate};
    fn same(built: &DynStage, name: &str, cuda: &str) {
        assert_ne!(built.name(), name);
        assert_eq!(
            built.cuda_source().replace(built.name(), name),
            cuda,
            "{name}"
        );
        // The same text built again is the same stage (its kernels found
        // in memory).
        assert_eq!(built.name(), built.clone().name());
    }
    let third = DynStage::from_text(<Third as ScanPredicate>::STAGE_IR, &[]).unwrap();
    same(&third, Third::NAME, Third::CUDA_SOURCE);
    for x in [0u32, 1, 2, 3, 9, 10, u32::MAX] {
        assert_eq!(third.keeps(&x.to_le_bytes()), Third::keep(x), "{x}");
    }
    let positive = DynStage::from_text(<Positive as ScanPredicate>::STAGE_IR, &[]).unwrap();
    same(&positive, Positive::NAME, Positive::CUDA_SOURCE);
    for x in [i64::MIN, -1, 0, 1, i64::MAX] {
        assert_eq!(positive.keeps(&x.to_le_bytes()), Positive::keep(x), "{x}");
    }
    let same_f32 = DynStage::from_text(<SameF32 as ScanEquality>::STAGE_IR, &[]).unwrap();
    same(&same_f32, SameF32::NAME, SameF32::CUDA_SOURCE);
    for (a, b) in [
        (0.0f32, -0.0f32),
        (f32::NAN, f32::NAN),
        (1.0, 1.0),
        (1.0, 2.0),
    ] {
        assert_eq!(
            same_f32.equal(&a.to_le_bytes(), &b.to_le_bytes()),
            SameF32::equal(a, b),
            "{a} {b}"
        );
    }
    assert_eq!(
        DynStage::from_text(<SameF32 as ScanEquality>::STAGE_IR, &[])
            .unwrap()
            .name(),
        same_f32.name()
    );
}

/// What a built stage refuses, before any GPU is involved.
#[test]
fn built_stages_refuse_maps_structs_and_bad_texts() {
    use gpu_scan::scan_runtime::{DynStage, ScanError};
    use gpu_scan::stages::{ScanMap, ScanPredicate};
    for (text, says) in [
        (<Triple as ScanMap>::STAGE_IR, "a map"),
        (<Growing as ScanPredicate>::STAGE_IR, "Affine"), // its struct not given
        ("(stage \"p\" predicate", "expected"),
        (
            r#"(stage "p" predicate (params "x") (input (prim u32)) (output (prim bool)) (body (block (var "x"))))"#,
            "mismatched types",
        ),
    ] {
        match DynStage::from_text(text, &[]) {
            Err(ScanError::InvalidOperator(m)) => assert!(m.contains(says), "{text}: {m}"),
            other => panic!("{text}: {other:?}"),
        }
    }
}

/// The programs the built compactions compile: a Python-style predicate's
/// select pass, and reduce-by-key of a built equality with a built struct
/// operator (its layout's declaration and CUDA as the typed reduce-by-key
/// puts an operator's), compile with NVRTC.
#[test]
fn built_compaction_programs_compile() {
    use gpu_scan::kernels_gen::select::{select_program, SelectKernel, SelectShape, SelectSource};
    use gpu_scan::scan_runtime::DynStage;
    use gpu_scan::stages::{ScanEquality, ScanPredicate};
    if !jit::nvrtc_present() {
        println!("built_operators: NVRTC not found, compile skipped");
        return;
    }
    let arch = Arch::SM_90;
    let unit = DynStage::from_text(
        r#"(stage "py_unit_0123" predicate (params "x") (input (prim f32)) (output (prim bool))
            (body (block (at 3 (and (lt (neg (float 0x3ff0000000000000 0x3f800000 -)) (var "x"))
                                    (lt (var "x") (float 0x3ff0000000000000 0x3f800000 -)))))))"#,
        &[],
    )
    .unwrap();
    assert!(unit.keeps(&0.5f32.to_le_bytes()) && !unit.keeps(&f32::NAN.to_le_bytes()));
    let same = DynStage::from_text(<SameU32 as ScanEquality>::STAGE_IR, &[]).unwrap();
    let third = DynStage::from_text(<Third as ScanPredicate>::STAGE_IR, &[]).unwrap();
    let one_more = DynStage::from_text(<OneMore as ScanPredicate>::STAGE_IR, &[]).unwrap();
    let op = DynOperator::from_text(<AffineU32 as ScanOp>::OPERATOR_IR, &[AffineU32::STRUCT_IR])
        .unwrap();
    let op_part = op.layout_for_tests().cuda_declaration(op.name()) + op.cuda_source();
    let programs = [
        (
            SelectKernel::If,
            SelectSource::Stage {
                name: unit.name(),
                source: unit.cuda_source(),
            },
            4,
        ),
        (
            SelectKernel::ReduceByKey,
            SelectSource::Keyed {
                name: same.name(),
                source: same.cuda_source(),
                op: op.name(),
                op_part: &op_part,
                value_size: op.element_size(),
            },
            4,
        ),
    ];
    let three = (
        SelectKernel::PartitionThree,
        SelectSource::TwoStages {
            first: third.name(),
            first_source: third.cuda_source(),
            second: one_more.name(),
            second_source: one_more.cuda_source(),
        },
        4,
    );
    let runs = (
        SelectKernel::NonTrivialRuns,
        SelectSource::Stage {
            name: same.name(),
            source: same.cuda_source(),
        },
        4,
    );
    for (kernel, source, size) in programs.into_iter().chain([three, runs]) {
        // Reduce-by-key's tiles are shaped by a key and a value together.
        let tile_bytes =
            size + usize::from(kernel == SelectKernel::ReduceByKey) * op.element_size();
        let shape = SelectShape::default_for(kernel, tile_bytes, arch);
        let program = select_program(kernel, &source, size, shape);
        let symbol = kernel.symbol(&source.symbol_name());
        compiles(&format!("{kernel:?} of built stages"), &program, &symbol);
    }
}

/// Predicates and equalities over structs built from their twins' texts
/// and the structs' declarations: their host functions agree with the
/// twins' on random elements (the bytes of the `repr(C)` structs), and the
/// select programs they compile (select, the partition with its reverse
/// tail, unique) compile with NVRTC.
#[test]
fn built_stages_over_structs_judge_as_their_twins() {
    use common::gpu::{Case, Rng64};
    use gpu_scan::kernels_gen::select::{select_program, SelectKernel, SelectShape, SelectSource};
    use gpu_scan::scan_runtime::DynStage;
    use gpu_scan::stages::{ScanEquality, ScanPredicate};
    use rand::{Rng, SeedableRng};
    let seed = common::seed::from_env_or_clock("BUILT_SEED");
    println!("built_operators: seed {seed} (BUILT_SEED)");
    let mut rng = Rng64::seed_from_u64(seed);
    let growing =
        DynStage::from_text(<Growing as ScanPredicate>::STAGE_IR, &[Affine::STRUCT_IR]).unwrap();
    let even =
        DynStage::from_text(<EvenCount as ScanPredicate>::STAGE_IR, &[Stats::STRUCT_IR]).unwrap();
    let slope =
        DynStage::from_text(<SameSlope as ScanEquality>::STAGE_IR, &[Affine::STRUCT_IR]).unwrap();
    assert_eq!((growing.element_size(), growing.element_align()), (8, 4));
    assert_eq!(even.element_size(), std::mem::size_of::<Stats>());
    let affine = |rng: &mut Rng64| Affine {
        a: rng.random_range(0.0..1.0),
        b: rng.random_range(0.0..1.0),
    };
    for _ in 0..2000 {
        let (x, y) = (affine(&mut rng), affine(&mut rng));
        // Equal slopes half the time.
        let y = if rng.random_bool(0.5) {
            Affine { a: x.a, ..y }
        } else {
            y
        };
        assert_eq!(growing.keeps(&bytes_of(&x)), Growing::keep(x), "{x:?}");
        assert_eq!(
            slope.equal(&bytes_of(&x), &bytes_of(&y)),
            SameSlope::equal(x, y),
            "{x:?} {y:?}"
        );
        // Stats has padding: its bytes written field by field, padding 0.
        let s = Stats::random(&mut rng);
        let mut b = [0u8; std::mem::size_of::<Stats>()];
        b[0..4].copy_from_slice(&s.count.to_le_bytes());
        b[8..16].copy_from_slice(&s.sum.to_le_bytes());
        b[16..20].copy_from_slice(&s.max.to_le_bytes());
        assert_eq!(even.keeps(&b), EvenCount::keep(s), "{s:?}");
    }
    assert_eq!(
        even.leaves().iter().map(|l| l.offset).collect::<Vec<_>>(),
        [0, 8, 16]
    );
    if !jit::nvrtc_present() {
        println!("built_operators: NVRTC not found, compile skipped");
        return;
    }
    let arch = Arch::SM_90;
    let programs = [
        (SelectKernel::If, &growing),
        (SelectKernel::PartitionIf, &even),
        (SelectKernel::Unique, &slope),
    ];
    for (kernel, stage) in programs {
        let source = SelectSource::Stage {
            name: stage.name(),
            source: stage.cuda_source(),
        };
        let shape = SelectShape::default_for(kernel, stage.element_size(), arch);
        let program = select_program(kernel, &source, stage.element_size(), shape);
        let symbol = kernel.symbol(&source.symbol_name());
        compiles(
            &format!("{kernel:?} of {}", stage.name()),
            &program,
            &symbol,
        );
    }
}

/// Sort keys built from their `#[sort_key]` twins' texts (and their
/// records' declarations): each record's key, as the radix sort orders its
/// bits, is the twin's; the CPU's permutation by the built key's bits is
/// the twin's `argsort_by_key`; the key's CUDA is the twin's policy but for
/// its name and the record's declaration, and its by-key program compiles.
#[test]
fn built_sort_keys_key_as_their_twins() {
    use common::gpu::{Case, Rng64};
    use gpu_scan::kernels_gen::radix_sort::{sort_by_key_program, ByKeyKernel};
    use gpu_scan::scan_runtime::DynSortKey;
    use gpu_scan::sort::{argsort_by_components, argsort_by_key, CompositeKey, SortKey, SortSpec};
    use rand::SeedableRng;
    let seed = common::seed::from_env_or_clock("BUILT_SEED") ^ 0x50;
    println!("built_operators: seed {seed} (BUILT_SEED)");
    let mut rng = Rng64::seed_from_u64(seed);
    let by_scs = DynSortKey::from_text(
        <BySignCountSum as SortKey>::SORT_KEY_IR,
        &[Stats::STRUCT_IR],
    )
    .unwrap();
    let by_slope =
        DynSortKey::from_text(<BySlope as SortKey>::SORT_KEY_IR, &[Affine::STRUCT_IR]).unwrap();
    assert_eq!(by_scs.widths(), <BySignCountSum as SortKey>::Key::WIDTHS);
    assert_eq!(by_slope.widths(), <BySlope as SortKey>::Key::WIDTHS);
    let stats: Vec<Stats> = (0..3000).map(|_| Stats::random(&mut rng)).collect();
    // Stats has padding: its bytes written field by field.
    let bytes: Vec<[u8; 24]> = stats
        .iter()
        .map(|s| {
            let mut b = [0u8; 24];
            b[0..4].copy_from_slice(&s.count.to_le_bytes());
            b[8..16].copy_from_slice(&s.sum.to_le_bytes());
            b[16..20].copy_from_slice(&s.max.to_le_bytes());
            b
        })
        .collect();
    let bits: Vec<Vec<u64>> = bytes.iter().map(|b| by_scs.ordered_bits(b)).collect();
    for (s, b) in stats.iter().zip(&bits) {
        let key = BySignCountSum::key(*s);
        let want: Vec<u64> = (0..3).map(|i| key.component(i)).collect();
        assert_eq!(b, &want, "{s:?}");
    }
    for spec in [
        SortSpec::ascending(),
        SortSpec::descending(),
        SortSpec::ascending().bits(3..70),
    ] {
        let got =
            argsort_by_components(by_scs.widths(), stats.len(), |k, i| bits[k][i], &spec).unwrap();
        assert_eq!(
            got,
            argsort_by_key::<BySignCountSum>(&stats, spec.clone()).unwrap(),
            "{spec:?}"
        );
    }
    let m = Affine { a: -0.0, b: 1.0 };
    assert_eq!(
        by_slope.ordered_bits(&bytes_of(&m)),
        [BySlope::key(m).component(0)]
    );
    // The policy is the twin's but for its name and the record's
    // declaration; the by-key program compiles.
    assert!(by_slope
        .cuda_source()
        .contains(&format!("struct {} {{", by_slope.name())));
    if !jit::nvrtc_present() {
        return;
    }
    for key in [&by_scs, &by_slope] {
        let program = sort_by_key_program(key.name(), key.cuda_source(), key.widths());
        compiles(
            key.name(),
            &program,
            &ByKeyKernel::Gather.symbol(key.name()),
        );
    }
}
