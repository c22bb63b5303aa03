//! Compactions by stages built at run time (`DynStage::from_text`, the
//! Python package's GPU path for predicates and equalities written in
//! Python): select, partition in both orders, unique and run-length
//! encoding on the GPU by a stage read from its `#[scan_predicate]` or
//! `#[scan_equality]` twin's text (and its struct's), against the CPU
//! backend's functions of the twin, bit for bit: `u32` and `u8` predicates
//! (one kept in three), an `i64` predicate over signed values, predicates
//! over 8-byte affine maps and 24-byte padded statistics, `u32` runs, `f32`
//! runs with NaNs and signed zeros, runs of equal slopes; reduce-by-key of
//! built operators. Lengths at every boundary of the kernels' tiles;
//! adversarial inputs (nothing kept, everything kept, one run, runs of
//! one). Outputs and count slots are poisoned before each run and checked
//! after it, guard bands included. Streams come from `ctx.new_stream()`
//! with cudarc's default event tracking and a second stream alive. The
//! refusals (a stage of the other kind, a buffer of part of an element, a
//! misaligned one) leave every buffer untouched. Without a GPU it prints
//! one line and passes.
#![cfg(feature = "gpu")]

mod common;
use common::gpu::{
    bytes_of, from_bytes, gpu_shared, open_gpu, poisoned_bytes, read_back, structs_of, Case, Rng64,
    POISON,
};
use common::ops::{
    Affine, EvenCount, Growing, Lifting, OneMore, Positive, SameF32, SameSlope, SameU32, Stats,
    Third, ThirdU8,
};
use gpu_scan::kernels_gen::select::SelectKernel;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, CudaViewMut};
use gpu_scan::scan_runtime::{BuiltLayout, DynStage, Elements, ElementsMut, GpuSelect, ScanError};
use gpu_scan::select::{self as cpu, Rejected};
use gpu_scan::stages::{ScanEquality, ScanPredicate};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// Lengths around one tile and around many, for the kernels these tests
/// run over elements of `size` bytes.
fn lengths(select: &GpuSelect, size: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 31, 32, 33, 255, 257, 100_003, (1 << 20) + 3];
    for kernel in [
        SelectKernel::If,
        SelectKernel::PartitionIf,
        SelectKernel::Unique,
        SelectKernel::RunLengthEncode,
        SelectKernel::NonTrivialRuns,
        SelectKernel::PartitionThree,
    ] {
        let tile = select.shape_for(kernel, size).unwrap().tile_items();
        v.extend([tile - 1, tile, tile + 1, 7 * tile + 5, 40 * tile + 1]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The count a compaction wrote.
fn count_of(stream: &Arc<CudaStream>, count: &CudaSlice<u64>) -> usize {
    stream.clone_dtoh(count).unwrap()[0] as usize
}

/// A built view of a device buffer of bytes, for reading, and one for
/// writing.
type In<'a> = Elements<'a, CudaSlice<u8>>;
type Out<'a, 'b> = ElementsMut<'a, CudaViewMut<'b, u8>>;

/// Runs `compaction` from `input` into a poisoned output of `n` elements
/// of `stage` (and its guard band) with a poisoned count slot; returns the
/// output's bytes (the guard band checked) and the count.
fn compacted(
    stream: &Arc<CudaStream>,
    stage: &DynStage,
    input: &CudaSlice<u8>,
    n: usize,
    what: &str,
    compaction: impl FnOnce(&In<'_>, &mut Out<'_, '_>, &mut CudaSlice<u64>) -> Result<(), ScanError>,
) -> (Vec<u8>, usize) {
    let bytes = n * stage.element_size();
    let mut out = poisoned_bytes(stream, bytes);
    let mut count = stream.clone_htod(&[u64::MAX]).unwrap();
    {
        let inp = stage.elements(input).unwrap();
        let mut o = out.slice_mut(..bytes);
        let mut o = stage.elements_mut(&mut o).unwrap();
        compaction(&inp, &mut o, &mut count).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    (
        read_back(stream, &out, bytes, what),
        count_of(stream, &count),
    )
}

/// Select and partition (both orders) by predicate `P`'s built twin, on
/// `inputs`, against the CPU's functions of `P`.
fn predicate_cases<P: ScanPredicate>(
    stream: &Arc<CudaStream>,
    select: &mut GpuSelect,
    inputs: &[(String, Vec<P::Element>)],
) -> usize
where
    P::Element: Copy + PartialEq + std::fmt::Debug,
{
    let stage = DynStage::from_text(P::STAGE_IR, &structs_of::<P::Element>()).unwrap();
    let size = std::mem::size_of::<P::Element>();
    let mut checked = 0;
    for (what, host) in inputs {
        let n = host.len();
        let input = stream.clone_htod(&bytes_of(host)).unwrap();
        // Select: the kept elements to the front, the rest untouched.
        let mut want = host.clone();
        let kept = cpu::select_if::<P>(host, &mut want).unwrap();
        let what_now = format!("select {what}");
        let (got, count) = compacted(stream, &stage, &input, n, &what_now, |i, o, c| {
            select.select_if_built(stream, &stage, i, o, c)
        });
        assert_eq!(count, kept, "{what_now}: count");
        assert_eq!(
            from_bytes::<P::Element>(&got[..kept * size]),
            want[..kept],
            "{what_now}"
        );
        assert!(
            got[kept * size..].iter().all(|&b| b == POISON),
            "{what_now}: written past the count"
        );
        for rejected in [Rejected::Reversed, Rejected::InOrder] {
            let mut want = host.clone();
            let kept = cpu::partition_if::<P>(host, &mut want, rejected).unwrap();
            let what_now = format!("partition {rejected:?} {what}");
            let (got, count) = compacted(stream, &stage, &input, n, &what_now, |i, o, c| {
                select.partition_if_built(stream, &stage, i, o, rejected, c)
            });
            assert_eq!(count, kept, "{what_now}: count");
            assert_eq!(from_bytes::<P::Element>(&got), want, "{what_now}");
        }
        checked += 3;
    }
    checked
}

/// Unique and run-length encoding by equality `E`'s built twin, on
/// `inputs`, against the CPU's functions of `E` (elements compared by
/// their bits: NaNs included).
fn equality_cases<E: ScanEquality>(
    stream: &Arc<CudaStream>,
    select: &mut GpuSelect,
    inputs: &[(String, Vec<E::Element>)],
) -> usize
where
    E::Element: Copy + std::fmt::Debug,
{
    let stage = DynStage::from_text(E::STAGE_IR, &structs_of::<E::Element>()).unwrap();
    let size = std::mem::size_of::<E::Element>();
    let mut checked = 0;
    for (what, host) in inputs {
        let n = host.len();
        let input = stream.clone_htod(&bytes_of(host)).unwrap();
        let mut want = host.clone();
        let runs = cpu::unique::<E>(host, &mut want).unwrap();
        let what_now = format!("unique {what}");
        let (got, count) = compacted(stream, &stage, &input, n, &what_now, |i, o, c| {
            select.unique_built(stream, &stage, i, o, c)
        });
        assert_eq!(count, runs, "{what_now}: count");
        assert_eq!(
            &got[..runs * size],
            &bytes_of(&want)[..runs * size],
            "{what_now}"
        );
        assert!(
            got[runs * size..].iter().all(|&b| b == POISON),
            "{what_now}: past the count"
        );

        let (mut values, mut lens) = (host.clone(), vec![0u64; n]);
        let runs = cpu::run_length_encode::<E>(host, &mut values, &mut lens).unwrap();
        let mut lengths = stream.clone_htod(&vec![u64::MAX; n]).unwrap();
        let what_now = format!("run-length encoding {what}");
        let (got, count) = compacted(stream, &stage, &input, n, &what_now, |i, o, c| {
            select.run_length_encode_built(stream, &stage, i, o, &mut lengths, c)
        });
        assert_eq!(count, runs, "{what_now}: count");
        assert_eq!(
            &got[..runs * size],
            &bytes_of(&values)[..runs * size],
            "{what_now}: values"
        );
        let got_lengths = stream.clone_dtoh(&lengths).unwrap();
        assert_eq!(got_lengths[..runs], lens[..runs], "{what_now}: lengths");
        assert!(
            got_lengths[runs..].iter().all(|&l| l == u64::MAX),
            "{what_now}: lengths past the count"
        );
        checked += 2;
    }
    checked
}

/// The three-way partition by `First`'s and `Second`'s built twins, on
/// `inputs`, against the CPU's.
fn three_way_cases<First, Second>(
    stream: &Arc<CudaStream>,
    select: &mut GpuSelect,
    inputs: &[(String, Vec<First::Element>)],
) -> usize
where
    First: ScanPredicate,
    Second: ScanPredicate<Element = First::Element>,
    First::Element: Copy + PartialEq + std::fmt::Debug,
{
    let structs = structs_of::<First::Element>();
    let first = DynStage::from_text(First::STAGE_IR, &structs).unwrap();
    let second = DynStage::from_text(Second::STAGE_IR, &structs).unwrap();
    let size = std::mem::size_of::<First::Element>();
    for (what, host) in inputs {
        let n = host.len();
        let input = stream.clone_htod(&bytes_of(host)).unwrap();
        let mut want = host.clone();
        let (a, b) = cpu::partition_three::<First, Second>(host, &mut want).unwrap();
        let what = format!("three-way partition {what}");
        let mut out = poisoned_bytes(stream, n * size);
        let mut counts = stream.clone_htod(&[u64::MAX; 2]).unwrap();
        {
            let inp = first.elements(&input).unwrap();
            let mut o = out.slice_mut(..n * size);
            let mut o = first.elements_mut(&mut o).unwrap();
            select
                .partition_three_built(stream, &first, &second, &inp, &mut o, &mut counts)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        assert_eq!(
            stream.clone_dtoh(&counts).unwrap(),
            [a as u64, b as u64],
            "{what}: counts"
        );
        let got = read_back(stream, &out, n * size, &what);
        assert_eq!(from_bytes::<First::Element>(&got), want, "{what}");
    }
    inputs.len()
}

/// Non-trivial runs by equality `E`'s built twin, on `inputs`, against the
/// CPU's.
fn non_trivial_cases<E: ScanEquality>(
    stream: &Arc<CudaStream>,
    select: &mut GpuSelect,
    inputs: &[(String, Vec<E::Element>)],
) -> usize
where
    E::Element: Copy + std::fmt::Debug,
{
    let stage = DynStage::from_text(E::STAGE_IR, &structs_of::<E::Element>()).unwrap();
    for (what, host) in inputs {
        let n = host.len();
        let input = stream.clone_htod(&bytes_of(host)).unwrap();
        let (mut offsets, mut lengths) = (vec![0u64; n], vec![0u64; n]);
        let runs = cpu::non_trivial_runs::<E>(host, &mut offsets, &mut lengths).unwrap();
        let what = format!("non-trivial runs {what}");
        let mut got_offsets = stream.clone_htod(&vec![u64::MAX; n]).unwrap();
        let mut got_lengths = stream.clone_htod(&vec![u64::MAX; n]).unwrap();
        let mut count = stream.clone_htod(&[u64::MAX]).unwrap();
        {
            let inp = stage.elements(&input).unwrap();
            select
                .non_trivial_runs_built(
                    stream,
                    &stage,
                    &inp,
                    &mut got_offsets,
                    &mut got_lengths,
                    &mut count,
                )
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        assert_eq!(count_of(stream, &count), runs, "{what}: count");
        let (o, l) = (
            stream.clone_dtoh(&got_offsets).unwrap(),
            stream.clone_dtoh(&got_lengths).unwrap(),
        );
        assert_eq!(
            (&o[..runs], &l[..runs]),
            (&offsets[..runs], &lengths[..runs]),
            "{what}"
        );
        assert!(
            o[runs..].iter().chain(&l[runs..]).all(|&x| x == u64::MAX),
            "{what}: past the count"
        );
    }
    inputs.len()
}

/// An adversarial input: its name and its element at each index.
type Special<'a, T> = (&'a str, Box<dyn Fn(usize) -> T>);

/// Random inputs of every length, and the adversarial ones at the largest.
fn inputs<T>(
    lengths: &[usize],
    seed: u64,
    mut random: impl FnMut(&mut Rng64) -> T,
    special: &[Special<'_, T>],
) -> Vec<(String, Vec<T>)> {
    let mut rng = Rng64::seed_from_u64(seed);
    let mut out: Vec<(String, Vec<T>)> = lengths
        .iter()
        .map(|&n| {
            let v: Vec<T> = (0..n).map(|_| random(&mut rng)).collect();
            (format!("n = {n} (seed {seed})"), v)
        })
        .collect();
    let n = *lengths.last().unwrap();
    for (name, f) in special {
        out.push((format!("{name}, n = {n}"), (0..n).map(f).collect()));
    }
    out
}

#[test]
fn built_stages_compact_as_their_twins() {
    let Some(ctx) = open_gpu("gpu_built_select") else {
        return;
    };
    let _shared = gpu_shared();
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap(); // a second stream alive
    let seed = common::seed::from_env_or_clock("GPU_BUILT_SELECT_SEED");
    println!("gpu_built_select: seed {seed} (GPU_BUILT_SELECT_SEED)");
    let mut select = GpuSelect::new(&ctx).unwrap();
    let mut checked = 0;

    let words = lengths(&select, 4);
    let cases = inputs(
        &words,
        seed,
        |r| r.random::<u32>(),
        &[
            ("nothing kept", Box::new(|i| 3 * i as u32 + 1)),
            ("everything kept", Box::new(|i| 3 * i as u32)),
        ],
    );
    checked += predicate_cases::<Third>(&stream, &mut select, &cases);
    let bytes = inputs(&lengths(&select, 1), seed ^ 1, |r| r.random::<u8>(), &[]);
    checked += predicate_cases::<ThirdU8>(&stream, &mut select, &bytes);
    let signed = inputs(&lengths(&select, 8), seed ^ 2, |r| r.random::<i64>(), &[]);
    checked += predicate_cases::<Positive>(&stream, &mut select, &signed);

    // Runs: short random runs over few values, one run, runs of one.
    let runs = inputs(
        &words,
        seed ^ 3,
        |r| r.random_range(0..3u32),
        &[
            ("one run", Box::new(|_| 7u32)),
            ("runs of one", Box::new(|i| i as u32)),
        ],
    );
    checked += equality_cases::<SameU32>(&stream, &mut select, &runs);
    let specials = [0.0f32, -0.0, f32::NAN, 1.0, f32::INFINITY];
    let floats = inputs(
        &words,
        seed ^ 4,
        |r| specials[r.random_range(0..specials.len())],
        &[],
    );
    checked += equality_cases::<SameF32>(&stream, &mut select, &floats);

    // Struct elements: 8-byte affine maps, 24-byte padded statistics.
    let affine = |r: &mut Rng64| Affine {
        a: r.random_range(0.0..1.0),
        b: r.random_range(0.0..1.0),
    };
    let maps = inputs(&lengths(&select, 8), seed ^ 5, affine, &[]);
    checked += predicate_cases::<Growing>(&stream, &mut select, &maps);
    let stats = inputs(&lengths(&select, 24), seed ^ 6, Stats::random, &[]);
    checked += predicate_cases::<EvenCount>(&stream, &mut select, &stats);
    // Runs of equal slopes: few slopes.
    let slopes = inputs(
        &lengths(&select, 8),
        seed ^ 7,
        |r| Affine {
            a: r.random_range(0..3) as f32,
            b: r.random_range(0.0..1.0),
        },
        &[],
    );
    checked += equality_cases::<SameSlope>(&stream, &mut select, &slopes);

    // Three-way partitions: words by two remainders, maps by two fields;
    // non-trivial runs of words and of floats.
    checked += three_way_cases::<Third, OneMore>(&stream, &mut select, &cases);
    checked += three_way_cases::<Growing, Lifting>(&stream, &mut select, &maps);
    checked += non_trivial_cases::<SameU32>(&stream, &mut select, &runs);
    checked += non_trivial_cases::<SameF32>(&stream, &mut select, &floats);
    println!("gpu_built_select: {checked} compactions checked");
}

#[test]
fn built_stages_refuse_bad_buffers_and_kinds() {
    let Some(ctx) = open_gpu("gpu_built_select") else {
        return;
    };
    let _shared = gpu_shared();
    let stream = ctx.new_stream().unwrap();
    let mut select = GpuSelect::new(&ctx).unwrap();
    let third = DynStage::from_text(<Third as ScanPredicate>::STAGE_IR, &[]).unwrap();
    let same = DynStage::from_text(<SameU32 as ScanEquality>::STAGE_IR, &[]).unwrap();
    let n = 1000;
    let input = stream
        .clone_htod(&bytes_of(&(0..n as u32).collect::<Vec<_>>()))
        .unwrap();
    let mut out = poisoned_bytes(&stream, 4 * n);
    let mut count = stream.clone_htod(&[u64::MAX]).unwrap();
    let untouched = |out: &CudaSlice<u8>, count: &CudaSlice<u64>, what: &str| {
        assert!(
            stream.clone_dtoh(out).unwrap().iter().all(|&b| b == POISON),
            "{what}: the output was written"
        );
        assert_eq!(
            stream.clone_dtoh(count).unwrap(),
            [u64::MAX],
            "{what}: the count"
        );
    };
    // An equality where a predicate is asked for, and the reverse.
    {
        let inp = same.elements(&input).unwrap();
        let mut o = out.slice_mut(..4 * n);
        let mut o = same.elements_mut(&mut o).unwrap();
        let e = select
            .select_if_built(&stream, &same, &inp, &mut o, &mut count)
            .unwrap_err();
        assert!(matches!(e, ScanError::InvalidOperator(_)), "{e}");
        let inp = third.elements(&input).unwrap();
        let e = select
            .unique_built(&stream, &third, &inp, &mut o, &mut count)
            .unwrap_err();
        assert!(matches!(e, ScanError::InvalidOperator(_)), "{e}");
    }
    untouched(&out, &count, "a stage of the other kind");
    // Part of an element.
    let part = input.slice(..4 * n - 1);
    assert!(matches!(
        third.elements(&part),
        Err(ScanError::ElementBuffer { .. })
    ));
    // A misaligned input: one byte in.
    {
        let shifted = input.slice(1..4 * (n - 1) + 1);
        let inp = third.elements(&shifted).unwrap();
        let mut o = out.slice_mut(..4 * (n - 1));
        let mut o = third.elements_mut(&mut o).unwrap();
        let e = select
            .select_if_built(&stream, &third, &inp, &mut o, &mut count)
            .unwrap_err();
        assert!(matches!(e, ScanError::ElementBuffer { .. }), "{e}");
    }
    untouched(&out, &count, "a misaligned input");
}

/// Reduce-by-key by a built equality over `u32` keys and built operators
/// over the values (a sum, and non-commutative affine maps over wrapping
/// `u32`), against the CPU's of the twins, bit for bit, at every boundary
/// length; one run, runs of one.
#[test]
fn built_reduce_by_key_matches_its_twins() {
    use common::ops::{AffineU32, SumU32};
    use gpu_scan::scan_runtime::DynOperator;
    use gpu_scan::ScanOp;
    let Some(ctx) = open_gpu("gpu_built_select") else {
        return;
    };
    let _shared = gpu_shared();
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let seed = common::seed::from_env_or_clock("GPU_BUILT_SELECT_SEED") ^ 0x5b;
    println!("gpu_built_select: seed {seed} (GPU_BUILT_SELECT_SEED)");
    let mut select = GpuSelect::new(&ctx).unwrap();
    let same = DynStage::from_text(<SameU32 as ScanEquality>::STAGE_IR, &[]).unwrap();
    fn case<Op: ScanOp + Case>(
        stream: &Arc<CudaStream>,
        select: &mut GpuSelect,
        same: &DynStage,
        seed: u64,
    ) {
        let op = DynOperator::from_text(Op::OPERATOR_IR, &structs_of::<Op::Element>()).unwrap();
        let size = std::mem::size_of::<Op::Element>();
        let tile = select
            .shape_for(SelectKernel::ReduceByKey, 4 + size)
            .unwrap()
            .tile_items();
        let mut rng = Rng64::seed_from_u64(seed);
        let mut lengths = vec![0, 1, 31, 33, tile - 1, tile + 1, 40 * tile + 3];
        lengths.push((1 << 20) + 3);
        for (i, &n) in lengths.iter().enumerate() {
            let keys: Vec<u32> = match i % 3 {
                _ if n == (1 << 20) + 3 => (0..n as u32).map(|k| k / 1000).collect(),
                0 => (0..n).map(|_| rng.random_range(0..3)).collect(),
                1 => vec![5; n],
                _ => (0..n as u32).collect(),
            };
            let values: Vec<Op::Element> = (0..n).map(|_| Op::random(&mut rng)).collect();
            let what = format!("{} n = {n} (seed {seed})", Op::NAME);
            let (mut want_keys, mut want_values) = (vec![0u32; n], values.clone());
            let runs =
                cpu::reduce_by_key::<SameU32, Op>(&keys, &values, &mut want_keys, &mut want_values)
                    .unwrap();
            let k = stream.clone_htod(&bytes_of(&keys)).unwrap();
            let v = stream.clone_htod(&bytes_of(&values)).unwrap();
            let mut keys_out = poisoned_bytes(stream, 4 * n);
            let mut values_out = poisoned_bytes(stream, size * n);
            let mut count = stream.clone_htod(&[u64::MAX]).unwrap();
            {
                let ki = same.elements(&k).unwrap();
                let vi = op.elements(&v).unwrap();
                let mut ko = keys_out.slice_mut(..4 * n);
                let mut ko = same.elements_mut(&mut ko).unwrap();
                let mut vo = values_out.slice_mut(..size * n);
                let mut vo = op.elements_mut(&mut vo).unwrap();
                select
                    .reduce_by_key_built(stream, same, &op, &ki, &vi, &mut ko, &mut vo, &mut count)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            assert_eq!(count_of(stream, &count), runs, "{what}: count");
            let got_keys = read_back(stream, &keys_out, 4 * n, &what);
            assert_eq!(
                from_bytes::<u32>(&got_keys[..4 * runs]),
                want_keys[..runs],
                "{what}: keys"
            );
            let got_values = read_back(stream, &values_out, size * n, &what);
            assert_eq!(
                &got_values[..size * runs],
                &bytes_of(&want_values)[..size * runs],
                "{what}: values"
            );
            assert!(
                got_values[size * runs..].iter().all(|&b| b == POISON),
                "{what}: values past the count"
            );
        }
    }
    case::<SumU32>(&stream, &mut select, &same, seed);
    case::<AffineU32>(&stream, &mut select, &same, seed ^ 1);
}
