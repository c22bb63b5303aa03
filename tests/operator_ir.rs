//! Operators read back from their text (`ScanOp::OPERATOR_IR`,
//! `kernels_gen::ir_text`), the form operators built at run time take
//! (issue 50: the Python binding hands the generator this text): for
//! every operator of the built-ins, the test operators and the
//! differential family (every construct and method of the subset), the
//! text parses, prints back to itself, and the generator given the parsed
//! operator alone writes the operator's CUDA byte for byte as `#[scan_op]`
//! wrote it at compile time, with the same tile shape and live
//! temporaries. The host's evaluator of such operators
//! (`kernels_gen::eval::OpValues`), given the same text, agrees with
//! `ScanOp::IDENTITY` and `ScanOp::combine` bit for bit on random and edge
//! values (the seed is printed; `OPERATOR_IR_SEED` replays it). No GPU and
//! no NVRTC needed.

mod common;
#[path = "common/differential_ops.rs"]
mod differential_ops;

use common::ops::*;
use differential_ops::*;
use gpu_scan::kernels_gen::eval::{OpValues, StructValues, Value};
use gpu_scan::kernels_gen::ir::{ElementType, Prim};
use gpu_scan::kernels_gen::lower::{lower_op, Leaf, Structs};
use gpu_scan::kernels_gen::{self, ir_text, Part};
use gpu_scan::ops::{And, BitAnd, BitOr, BitXor, Max, Min, Or, Product, Sum};
use gpu_scan::prelude::*;
use rand::{Rng, SeedableRng};

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
    let (threads, items) = (
        params.block_threads_for(size),
        params.items_per_thread_for(size),
    );
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

/// The text of `SumU32`, which python/tests/test_cpu.py expects the Python
/// translation of `def sum_u32(a, b): return a + b` over `u32` to write
/// (with the Python operator's name): one text from both languages.
#[test]
fn the_text_python_writes_too() {
    assert_eq!(
        <SumU32 as ScanOp>::OPERATOR_IR,
        r#"(op "sum_u32" (prim u32) (params "a" "b") (identity (int 0 -)) (body (block (add (var "a") (var "b")))) (block_threads auto) (items_per_thread auto))"#
    );
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

/// The bits of a primitive element, zero-extended (what `Value::to_bits`
/// gives).
fn bits_of<T: Copy>(x: T) -> u64 {
    assert!(std::mem::size_of::<T>() <= 8);
    let mut bits = 0u64;
    // SAFETY: copies the value's `size_of::<T>()` (at most 8) bytes into
    // the low bytes of a u64 (the tests run on little-endian hosts).
    unsafe {
        std::ptr::copy_nonoverlapping(
            &x as *const T as *const u8,
            &mut bits as *mut u64 as *mut u8,
            std::mem::size_of::<T>(),
        )
    };
    bits
}

/// The primitive element whose bits are `value`'s.
fn element_of<T: Copy + Default>(value: Value) -> T {
    let bits = value.to_bits();
    let mut x = T::default();
    // SAFETY: writes `size_of::<T>()` (at most 8) bytes of a valid value of
    // T's primitive type (`value` has that type: a bool is 0 or 1).
    unsafe {
        std::ptr::copy_nonoverlapping(
            &bits as *const u64 as *const u8,
            &mut x as *mut T as *mut u8,
            std::mem::size_of::<T>(),
        )
    };
    x
}

/// A random value of `p`: an edge value (zeros, ones, the extremes, the
/// sign bit, infinities, NaNs, a subnormal) half the time, random bits
/// otherwise.
fn random_value(p: Prim, rng: &mut impl Rng) -> Value {
    let bits = 8 * p.size() as u32;
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    let sign = 1u64 << (bits - 1);
    let edges: Vec<u64> = match p {
        Prim::Bool => vec![0, 1],
        Prim::F32 => [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-40,
            f32::MAX,
            f32::MIN,
        ]
        .iter()
        .map(|f| f.to_bits() as u64)
        .collect(),
        Prim::F64 => [
            0.0f64,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-310,
            f64::MAX,
            f64::MIN,
        ]
        .iter()
        .map(|f| f.to_bits())
        .collect(),
        _ => vec![0, 1, 2, mask, sign, sign - 1, sign + 1, mask - 1],
    };
    let bits = if p == Prim::Bool {
        rng.random_range(0..2)
    } else if rng.random_bool(0.5) {
        edges[rng.random_range(0..edges.len())]
    } else {
        rng.random::<u64>() & mask
    };
    Value::from_bits(p, bits)
}

/// The evaluator of `Op`'s text against `Op` itself: the identity, and
/// `combine` on `pairs` random pairs, bit for bit (any NaN equals any
/// NaN; where Rust leaves a result's sign unspecified, the signs may
/// differ).
fn check_values<Op: ScanOp>(rng: &mut impl Rng, pairs: usize)
where
    Op::Element: Default,
{
    let (desc, _) = ir_text::parse(Op::OPERATOR_IR).unwrap();
    let ElementType::Prim(p) = desc.element else {
        panic!("{}: a primitive element expected", Op::NAME)
    };
    let values = OpValues::new(&desc).unwrap_or_else(|e| panic!("{e}"));
    // The compiled evaluator (the CPU path of built operators) gives the
    // interpreter's values, bit for bit.
    let compiled = values.compiled();
    assert_eq!(compiled.identity().to_bits(), values.identity().to_bits());
    let identity = Value::from_bits(p, bits_of(Op::IDENTITY));
    assert!(
        values.identity().same(identity),
        "{}: identity {:?}, not {identity:?}",
        Op::NAME,
        values.identity()
    );
    for _ in 0..pairs {
        let (x, y) = (random_value(p, rng), random_value(p, rng));
        let want = Op::combine(element_of(x), element_of(y));
        let want = Value::from_bits(p, bits_of(want));
        let got = values.combine(x, y);
        let fast = compiled.combine(x, y);
        assert!(
            fast.prim() == got.value.prim() && fast.to_bits() == got.value.to_bits(),
            "{}: {x:?} ∘ {y:?}: compiled {fast:?}, interpreted {:?}",
            Op::NAME,
            got.value
        );
        let same = got.value.same(want)
            || (got.unspecified
                && got.value.to_bits() & !(1 << (8 * p.size() - 1))
                    == want.to_bits() & !(1 << (8 * p.size() - 1)));
        assert!(
            same,
            "{}: {x:?} ∘ {y:?} = {want:?}, evaluated {:?}",
            Op::NAME,
            got.value
        );
    }
}

#[test]
fn the_evaluator_of_the_text_agrees_with_the_operator() {
    let seed = common::seed::from_env_or_clock("OPERATOR_IR_SEED");
    println!("operator_ir seed: {seed} (OPERATOR_IR_SEED={seed} replays it)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let rng = &mut rng;
    const PAIRS: usize = 5_000;
    macro_rules! every_width {
        ($($op:ident),*) => {$(
            check_values::<$op<u8>>(rng, PAIRS);
            check_values::<$op<u16>>(rng, PAIRS);
            check_values::<$op<u32>>(rng, PAIRS);
            check_values::<$op<u64>>(rng, PAIRS);
            check_values::<$op<i8>>(rng, PAIRS);
            check_values::<$op<i16>>(rng, PAIRS);
            check_values::<$op<i32>>(rng, PAIRS);
            check_values::<$op<i64>>(rng, PAIRS);
        )*};
    }
    every_width!(Sum, Product, Min, Max, BitAnd, BitOr, BitXor);
    for_floats(rng, PAIRS);
    check_values::<And<bool>>(rng, PAIRS);
    check_values::<Or<bool>>(rng, PAIRS);
    check_values::<SumU32>(rng, PAIRS);
    check_values::<MaxF32>(rng, PAIRS);
    check_values::<MinI64>(rng, PAIRS);
    check_values::<SumU8>(rng, PAIRS);
    check_values::<SumU32Small>(rng, PAIRS);
    check_values::<KeepLargerOdd>(rng, PAIRS);
}

fn for_floats(rng: &mut impl Rng, pairs: usize) {
    check_values::<Sum<f32>>(rng, pairs);
    check_values::<Sum<f64>>(rng, pairs);
    check_values::<Product<f32>>(rng, pairs);
    check_values::<Product<f64>>(rng, pairs);
    check_values::<Min<f32>>(rng, pairs);
    check_values::<Min<f64>>(rng, pairs);
    check_values::<Max<f32>>(rng, pairs);
    check_values::<Max<f64>>(rng, pairs);
}

/// A struct element is refused by the evaluator with a reason, not
/// evaluated wrongly.
#[test]
fn the_evaluator_refuses_struct_elements() {
    let (desc, _) = ir_text::parse(<Affine as ScanOp>::OPERATOR_IR).unwrap();
    let err = OpValues::new(&desc)
        .err()
        .expect("a struct element is refused");
    assert!(err.to_string().contains("struct element"), "{err}");
}

/// The leaves of a struct element, read from its bytes at their offsets.
fn leaves_of<T: Copy>(x: &T, leaves: &[Leaf]) -> Vec<Value> {
    let mut bytes = vec![0u8; std::mem::size_of::<T>()];
    // SAFETY: copies the value's bytes (padding included, which no leaf
    // reads) into a buffer of its size.
    unsafe {
        std::ptr::copy_nonoverlapping(x as *const T as *const u8, bytes.as_mut_ptr(), bytes.len())
    };
    leaves
        .iter()
        .map(|leaf| {
            let mut bits = [0u8; 8];
            bits[..leaf.prim.size()]
                .copy_from_slice(&bytes[leaf.offset..leaf.offset + leaf.prim.size()]);
            Value::from_bits(leaf.prim, u64::from_le_bytes(bits))
        })
        .collect()
}

/// The struct element whose leaves are `values` (padding zero).
fn element_of_leaves<T: Copy>(values: &[Value], leaves: &[Leaf]) -> T {
    let mut bytes = vec![0u8; std::mem::size_of::<T>()];
    for (leaf, v) in leaves.iter().zip(values) {
        let size = leaf.prim.size();
        bytes[leaf.offset..leaf.offset + size].copy_from_slice(&v.to_bits().to_le_bytes()[..size]);
    }
    // SAFETY: `bytes` holds a `T` laid out as `leaves` says (checked
    // against `size_of` by the caller), each leaf a valid value of its
    // type (a bool 0 or 1); an unaligned read from the buffer.
    unsafe { std::ptr::read_unaligned(bytes.as_ptr() as *const T) }
}

/// The evaluator of `Op`'s text, lowered to its element's leaves, against
/// `Op` itself, leaf by leaf: the identity, and `combine` on `pairs` random
/// pairs (any NaN equals any NaN; a sign Rust leaves unspecified may
/// differ). `nested` gives the nested structs' declarations by the names
/// the operator uses for them.
fn check_struct_values<Op: ScanOp>(rng: &mut impl Rng, pairs: usize, nested: &[(&str, &str)]) {
    let (desc, _) = ir_text::parse(Op::OPERATOR_IR).unwrap();
    let ElementType::Struct(element) = &desc.element else {
        panic!("{}: a struct element expected", Op::NAME)
    };
    let mut structs = Structs::default();
    structs.insert(
        element.clone(),
        ir_text::parse_struct(<Op::Element as ScanElement>::STRUCT_IR).unwrap(),
    );
    for (name, text) in nested {
        structs.insert(*name, ir_text::parse_struct(text).unwrap());
    }
    assert_eq!(
        structs.size(element).unwrap(),
        std::mem::size_of::<Op::Element>(),
        "{}: the repr(C) layout",
        Op::NAME
    );
    let lowered = lower_op(&desc, &structs).unwrap_or_else(|e| panic!("{e}"));
    let values = StructValues::new(&lowered).unwrap_or_else(|e| panic!("{}: {e}", Op::NAME));
    let compiled = values.compiled();
    let leaves = &lowered.leaves;
    // The leaves are the element's lanes, in for_each_lane's order.
    let mut lanes = 0;
    Op::IDENTITY.for_each_lane(&mut |_| lanes += 1);
    assert_eq!(lanes, leaves.len(), "{}", Op::NAME);
    let identity = leaves_of(&Op::IDENTITY, leaves);
    for (got, want) in values.identity().iter().zip(&identity) {
        assert!(
            got.same(*want),
            "{}: identity {got:?}, not {want:?}",
            Op::NAME
        );
    }
    for _ in 0..pairs {
        let x: Vec<Value> = leaves.iter().map(|l| random_value(l.prim, rng)).collect();
        let y: Vec<Value> = leaves.iter().map(|l| random_value(l.prim, rng)).collect();
        let want = Op::combine(element_of_leaves(&x, leaves), element_of_leaves(&y, leaves));
        let want = leaves_of(&want, leaves);
        let got = values.combine_outcomes(&x, &y);
        let fast = compiled.combine(&x, &y);
        for (k, (f, g)) in fast.iter().zip(&got).enumerate() {
            assert!(
                f.prim() == g.value.prim() && f.to_bits() == g.value.to_bits(),
                "{}: leaf {} of {x:?} ∘ {y:?}: compiled {f:?}, interpreted {:?}",
                Op::NAME,
                leaves[k].path,
                g.value
            );
        }
        for ((leaf, got), want) in leaves.iter().zip(&got).zip(&want) {
            let sign = !(1u64 << (8 * leaf.prim.size() - 1));
            let same = got.value.same(*want)
                || (got.unspecified && got.value.to_bits() & sign == want.to_bits() & sign);
            assert!(
                same,
                "{}: leaf {} of {x:?} ∘ {y:?}: {want:?}, evaluated {:?}",
                Op::NAME,
                leaf.path,
                got.value
            );
        }
    }
}

#[test]
fn the_evaluator_of_struct_operators_agrees_with_the_operator() {
    let seed = common::seed::from_env_or_clock("OPERATOR_IR_SEED");
    println!("operator_ir seed: {seed} (OPERATOR_IR_SEED={seed} replays it)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let rng = &mut rng;
    const PAIRS: usize = 2_000;
    check_struct_values::<Affine>(rng, PAIRS, &[]);
    check_struct_values::<Stats>(rng, PAIRS, &[]);
    check_struct_values::<Mat2>(rng, PAIRS, &[]);
    check_struct_values::<AffineU32>(rng, PAIRS, &[]);
    check_struct_values::<Latest>(rng, PAIRS, &[]);
    let span = <Span16 as ScanElement>::STRUCT_IR;
    check_struct_values::<JoinSpans>(rng, PAIRS, &[("Span16", span)]);
    // The differential family: every construct and method of the subset.
    check_struct_values::<Ints>(rng, PAIRS, &[]);
    check_struct_values::<IntMethods>(rng, PAIRS, &[]);
    check_struct_values::<Floats>(rng, PAIRS, &[]);
    check_struct_values::<Transcendental>(rng, PAIRS, &[]);
    check_struct_values::<Casts>(rng, PAIRS, &[]);
    check_struct_values::<Control>(rng, PAIRS, &[("Inner", <Inner as ScanElement>::STRUCT_IR)]);
    // `Pairs` is left out: its two nested structs are both named `Pair`
    // (in two modules), which a description by name cannot tell apart.
}

// Load and store stages as text (`ScanMap::STAGE_IR` and the others):
// what a stage built at run time is read from.

/// Checks a stage read back from its text: it prints back to itself, and
/// the CUDA the generator writes from it (after `decls`, its types'
/// declarations, with the policy named `name` and the structs it names by
/// path resolved from `named`) is the macro's `cuda`.
fn check_stage(name: &str, cuda: &str, text: &str, decls: &str, named: &[(&str, &str)]) {
    assert!(!text.is_empty(), "{name}: the macro wrote no text");
    let stage = ir_text::parse_stage(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(ir_text::print_stage(&stage), text, "{name}");
    let mut source = String::from(decls);
    for part in kernels_gen::stage::stage_source_parts(&stage) {
        match part {
            Part::Text(t) => source.push_str(&t),
            Part::Element => source.push_str(name),
            Part::Named(path) => match named.iter().find(|(p, _)| *p == path) {
                Some((_, cuda)) => source.push_str(cuda),
                None => panic!("{name}: struct `{path}` not given to the test"),
            },
            Part::Field(_) => unreachable!("a stage names no fields' types"),
        }
    }
    assert_eq!(
        source, cuda,
        "{name}: the CUDA from the text differs from the macro's"
    );
}

#[test]
fn stages_generate_from_their_text() {
    use gpu_scan::stages::{ScanEquality, ScanMap, ScanPredicate};
    // The structs the stages name by path.
    let named = [
        ("Affine", <Affine as ScanElement>::CUDA_TYPE),
        ("AffineU32", <AffineU32 as ScanElement>::CUDA_TYPE),
        ("Latest", <Latest as ScanElement>::CUDA_TYPE),
        ("Stats", <Stats as ScanElement>::CUDA_TYPE),
    ];
    macro_rules! maps {
        ($($stage:ty),*) => {$(
            check_stage(
                <$stage as ScanMap>::NAME,
                <$stage as ScanMap>::CUDA_SOURCE,
                <$stage as ScanMap>::STAGE_IR,
                &[
                    <<$stage as ScanMap>::Input as ScanElement>::CUDA_DECL,
                    <<$stage as ScanMap>::Output as ScanElement>::CUDA_DECL,
                ]
                .concat(),
                &named,
            );
        )*};
    }
    macro_rules! judges {
        ($trait_:ident: $($stage:ty),*) => {$(
            check_stage(
                <$stage as $trait_>::NAME,
                <$stage as $trait_>::CUDA_SOURCE,
                <$stage as $trait_>::STAGE_IR,
                <<$stage as $trait_>::Element as ScanElement>::CUDA_DECL,
                &named,
            );
        )*};
    }
    maps!(
        Triple,
        WrapU8,
        Double,
        Shift,
        AtTwo,
        ToAffineU32,
        AffineOffset,
        TagEveryThird,
        LatestValue
    );
    judges!(ScanPredicate: Third, ThirdU8, OneMore, Growing, EvenCount, Lifting, LargeSum, Positive);
    judges!(ScanEquality: SameU32, SameF32, SameSlope);
}

/// The host evaluator of a primitive stage's text against the stage's own
/// function, on random and edge values, bit for bit.
#[test]
fn the_evaluator_of_a_stage_agrees_with_the_stage() {
    use gpu_scan::kernels_gen::eval::StageValues;
    use gpu_scan::stages::{ScanEquality, ScanMap, ScanPredicate};
    let seed = common::seed::from_env_or_clock("OPERATOR_IR_SEED");
    println!("operator_ir seed: {seed} (OPERATOR_IR_SEED={seed} replays it)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    const VALUES: usize = 5_000;
    fn prim_of(text: &str) -> (gpu_scan::kernels_gen::stage::StageDesc, Prim) {
        let stage = ir_text::parse_stage(text).unwrap();
        let ElementType::Prim(p) = stage.input else {
            panic!("{}: a primitive input", stage.name)
        };
        (stage, p)
    }
    macro_rules! maps {
        ($($stage:ty),*) => {$({
            let (desc, p) = prim_of(<$stage as ScanMap>::STAGE_IR);
            let values = StageValues::new(&desc).unwrap();
            let compiled = values.compiled();
            for _ in 0..VALUES {
                let x = random_value(p, &mut rng);
                let want = bits_of(<$stage as ScanMap>::apply(element_of(x)));
                assert_eq!(values.apply(&[x]).value.to_bits(), want, "{} of {x:?}", desc.name);
                assert_eq!(compiled.apply(&[x]).to_bits(), want, "{} of {x:?}", desc.name);
            }
        })*};
    }
    macro_rules! predicates {
        ($($stage:ty),*) => {$({
            let (desc, p) = prim_of(<$stage as ScanPredicate>::STAGE_IR);
            let values = StageValues::new(&desc).unwrap();
            let compiled = values.compiled();
            for _ in 0..VALUES {
                let x = random_value(p, &mut rng);
                let want = Value::Bool(<$stage as ScanPredicate>::keep(element_of(x)));
                assert_eq!(values.apply(&[x]).value, want, "{} of {x:?}", desc.name);
                assert_eq!(compiled.apply(&[x]), want, "{} of {x:?}", desc.name);
            }
        })*};
    }
    macro_rules! equalities {
        ($($stage:ty),*) => {$({
            let (desc, p) = prim_of(<$stage as ScanEquality>::STAGE_IR);
            let values = StageValues::new(&desc).unwrap();
            let compiled = values.compiled();
            for _ in 0..VALUES {
                let (x, y) = (random_value(p, &mut rng), random_value(p, &mut rng));
                // Half the pairs equal, so that both answers are tried.
                let y = if rng.random_bool(0.5) { x } else { y };
                let want = Value::Bool(<$stage as ScanEquality>::equal(element_of(x), element_of(y)));
                assert_eq!(values.apply(&[x, y]).value, want, "{} of {x:?}, {y:?}", desc.name);
                assert_eq!(compiled.apply(&[x, y]), want, "{} of {x:?}, {y:?}", desc.name);
            }
        })*};
    }
    maps!(Triple, WrapU8, Double);
    predicates!(Third, ThirdU8, OneMore, Positive);
    equalities!(SameU32, SameF32);
}

/// What the stage evaluator refuses, with a reason: a struct, a predicate
/// that does not give `bool`, parameters of one name, a body rustc would
/// reject (at its statement).
#[test]
fn the_stage_evaluator_refuses_what_rustc_would() {
    use gpu_scan::kernels_gen::eval::StageValues;
    use gpu_scan::stages::ScanPredicate;
    let refused = |text: &str| {
        let stage = ir_text::parse_stage(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        StageValues::new(&stage).err().expect(text)
    };
    let err = refused(<Growing as ScanPredicate>::STAGE_IR);
    assert!(err.message.contains("struct"), "{err}");
    let err = refused(
        r#"(stage "p" predicate (params "x") (input (prim u32)) (output (prim u32)) (body (block (var "x"))))"#,
    );
    assert!(err.message.contains("bool"), "{err}");
    let err = refused(
        r#"(stage "e" equality (params "a" "a") (input (prim u32)) (output (prim bool)) (body (block (bool true))))"#,
    );
    assert!(err.message.contains("both parameters"), "{err}");
    let err = refused(
        r#"(stage "p" predicate (params "x") (input (prim u32)) (output (prim bool))
            (body (block (let "t" (add (var "x") (int 1 -))) (lt (var "t") (float 0x3ff0000000000000 0x3f800000 -)))))"#,
    );
    assert_eq!(err.statement, Some(1), "{err}");
    // An equality's text with one parameter is not a stage's text at all.
    assert!(ir_text::parse_stage(
        r#"(stage "e" equality (params "a") (input (prim u32)) (output (prim bool)) (body (block (bool true))))"#
    )
    .is_err());
}

/// Sort keys as text (`SortKey::SORT_KEY_IR`): each prints back to itself,
/// and the CUDA the generator writes from it is the macro's byte for byte.
#[test]
fn sort_keys_generate_from_their_text() {
    use gpu_scan::sort::SortKey;
    fn check_key<K: SortKey>(named: &[(&str, &str)]) {
        let text = K::SORT_KEY_IR;
        let key = ir_text::parse_sort_key(text).unwrap_or_else(|e| panic!("{}: {e}", K::NAME));
        assert_eq!(ir_text::print_sort_key(&key), text, "{}", K::NAME);
        let mut source = String::from(<K::Record as ScanElement>::CUDA_DECL);
        for part in kernels_gen::stage::sort_key_source_parts(&key) {
            match part {
                Part::Text(t) => source.push_str(&t),
                Part::Element => source.push_str(K::NAME),
                Part::Named(path) => match named.iter().find(|(p, _)| *p == path) {
                    Some((_, cuda)) => source.push_str(cuda),
                    None => panic!("{}: struct `{path}` not given to the test", K::NAME),
                },
                Part::Field(_) => unreachable!("a key names no fields' types"),
            }
        }
        assert_eq!(
            source,
            K::CUDA_SOURCE,
            "{}: the CUDA from the text differs",
            K::NAME
        );
    }
    let named = [
        ("Stats", <Stats as ScanElement>::CUDA_TYPE),
        ("Affine", <Affine as ScanElement>::CUDA_TYPE),
    ];
    check_key::<BySignCountSum>(&named);
    check_key::<BySlope>(&named);
}
