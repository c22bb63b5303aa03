//! Load and store stages (`#[scan_map]`, `#[scan_predicate]`,
//! `#[scan_equality]`) and the CPU backend's applications of them: maps with
//! the GPU's integer semantics, stages over `#[scan_op]` structs,
//! compaction, partition, unique, run-length encoding and reduce-by-key
//! against sequential walks over lengths around the CPU's chunks, and,
//! where a GPU is usable, each stage's (and each `#[sort_key]`'s)
//! translation run by a kernel against its Rust function. `STAGES_SEED`
//! replays a run.

mod common;
use common::ops::{
    Affine, AtTwo, BySignCountSum, BySlope, Growing, OneMore, Positive, SameF32, SameSlope,
    SameU32, Shift, Stats, Third, Triple, WrapU8,
};
use gpu_scan::ops::Sum;
use gpu_scan::prelude::*;
use gpu_scan::select::{
    non_trivial_runs, partition_if, partition_three, reduce_by_key, reduce_by_segment,
    run_length_encode, select_flagged, select_if, unique, Rejected, SelectLengthError,
};
use rand::{Rng, SeedableRng};

type Rng64 = rand::rngs::StdRng;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("STAGES_SEED");
    println!("stages: seed {seed} (STAGES_SEED={seed} replays)");
    seed
}

/// Lengths at the CPU's chunk boundaries (chunks of at least 2^14) and
/// the warp's.
const LENGTHS: [usize; 12] = [
    0,
    1,
    31,
    32,
    33,
    (1 << 14) - 1,
    1 << 14,
    (1 << 14) + 1,
    5 * (1 << 14) + 7,
    100_003,
    (1 << 18) - 1,
    (1 << 18) + 1,
];

#[test]
fn maps_apply_with_the_gpus_integer_semantics() {
    for x in 0..=255u8 {
        assert_eq!(WrapU8::apply(x), x.wrapping_mul(200).wrapping_add(7));
        assert_eq!(Triple::apply(x), x as u32 * 3);
    }
    assert_eq!(Shift::apply(7), Affine { a: 1.0, b: 7.0 });
    assert_eq!(AtTwo::apply(Affine { a: 3.0, b: 1.0 }), 7.0);
    assert!(Positive::keep(1) && !Positive::keep(0) && !Positive::keep(i64::MIN));
    assert!(Growing::keep(Affine { a: 0.75, b: 0.0 }));
}

#[test]
fn stage_sources_declare_their_policies_and_types() {
    // The policy's name: the Rust name and a hash of the module path.
    let name = <Triple as ScanMap>::NAME;
    assert!(
        name.starts_with("triple_") && name.len() == "triple_".len() + 16,
        "{name}"
    );
    assert_ne!(name, <WrapU8 as ScanMap>::NAME);
    let triple = <Triple as ScanMap>::CUDA_SOURCE;
    assert!(
        triple.contains(&format!("namespace gpu_scan_stages {{\nstruct {name} {{")),
        "{triple}"
    );
    assert!(
        triple.contains(&format!("#ifndef GPU_SCAN_STAGE_{name}\n")),
        "{triple}"
    );
    assert!(
        triple.contains("typedef unsigned char input_t;"),
        "{triple}"
    );
    assert!(
        triple.contains("output_t apply(const input_t x)"),
        "{triple}"
    );
    // A struct type: its declaration and its CUDA name come with the stage.
    let shift = <Shift as ScanMap>::CUDA_SOURCE;
    let affine = <Affine as ScanElement>::CUDA_TYPE;
    assert!(
        shift.contains(<Affine as ScanElement>::CUDA_DECL),
        "{shift}"
    );
    assert!(
        shift.contains(&format!("typedef {affine} output_t;")),
        "{shift}"
    );
    let growing = <Growing as ScanPredicate>::CUDA_SOURCE;
    assert!(growing.contains("typedef bool output_t;"), "{growing}");
}

/// The sequential reference: kept elements, then the others.
fn split<T: Copy>(input: &[T], keep: impl Fn(T) -> bool) -> (Vec<T>, Vec<T>) {
    input.iter().copied().partition(|&x| keep(x))
}

#[test]
fn compaction_and_partition_match_a_sequential_filter() {
    let mut rng = Rng64::seed_from_u64(seed());
    for n in LENGTHS {
        for range in [3u32, 1_000_000] {
            let input: Vec<u32> = (0..n).map(|_| rng.random_range(0..range)).collect();
            let (kept, rest) = split(&input, Third::keep);
            let poison = u32::MAX;

            let mut out = vec![poison; n];
            assert_eq!(
                select_if::<Third>(&input, &mut out).unwrap(),
                kept.len(),
                "n {n}"
            );
            assert_eq!(&out[..kept.len()], &kept[..], "select_if, n {n}");
            assert!(
                out[kept.len()..].iter().all(|&x| x == poison),
                "select_if wrote past its count, n {n}"
            );

            let flags: Vec<u8> = input
                .iter()
                .map(|&x| u8::from(x % 3 == 0) * rng.random_range(1..=255))
                .collect();
            let mut out = vec![poison; n];
            assert_eq!(
                select_flagged(&input, &flags, &mut out).unwrap(),
                kept.len()
            );
            assert_eq!(&out[..kept.len()], &kept[..], "select_flagged, n {n}");
            assert!(out[kept.len()..].iter().all(|&x| x == poison));

            let mut out = vec![poison; n];
            assert_eq!(
                partition_if::<Third>(&input, &mut out, Rejected::InOrder).unwrap(),
                kept.len()
            );
            assert_eq!(out, [&kept[..], &rest[..]].concat(), "partition, n {n}");
            let mut out = vec![poison; n];
            partition_if::<Third>(&input, &mut out, Rejected::Reversed).unwrap();
            let reversed: Vec<u32> = rest.iter().rev().copied().collect();
            assert_eq!(
                out,
                [&kept[..], &reversed[..]].concat(),
                "partition reversed, n {n}"
            );

            let (second, third) = split(&rest, OneMore::keep);
            let mut out = vec![poison; n];
            let counts = partition_three::<Third, OneMore>(&input, &mut out).unwrap();
            assert_eq!(counts, (kept.len(), second.len()));
            assert_eq!(
                out,
                [&kept[..], &second[..], &third[..]].concat(),
                "three-way, n {n}"
            );
        }
    }
}

#[test]
fn structs_are_selected_whole() {
    let mut rng = Rng64::seed_from_u64(seed());
    let n = 70_001;
    let input: Vec<Affine> = (0..n)
        .map(|_| Affine {
            a: rng.random_range(0.0..1.0),
            b: rng.random_range(-1.0..1.0),
        })
        .collect();
    let (kept, _) = split(&input, Growing::keep);
    let mut out = vec![
        Affine {
            a: f32::NAN,
            b: f32::NAN
        };
        n
    ];
    assert_eq!(select_if::<Growing>(&input, &mut out).unwrap(), kept.len());
    assert_eq!(&out[..kept.len()], &kept[..]);
    let signed: Vec<i64> = (0..n).map(|_| rng.random_range(-5..5)).collect();
    let mut out = vec![0; n];
    let count = select_if::<Positive>(&signed, &mut out).unwrap();
    assert_eq!(out[..count], split(&signed, |v| v > 0).0[..]);
}

/// Runs by a sequential walk: each run's start and length.
fn runs_of<T: Copy>(input: &[T], equal: impl Fn(T, T) -> bool) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, &x) in input.iter().enumerate() {
        match runs.last_mut() {
            Some((start, len)) if equal(input[*start + *len - 1], x) => *len += 1,
            _ => runs.push((i, 1)),
        }
    }
    runs
}

/// `n` values with runs of geometric length of mean `mean` (values below
/// `values`; a new run may repeat the old value, as real data does).
fn runs_input(rng: &mut Rng64, n: usize, mean: u32, values: u32) -> Vec<u32> {
    let mut v = 0;
    (0..n)
        .map(|_| {
            if rng.random_range(0..mean) == 0 {
                v = rng.random_range(0..values);
            }
            v
        })
        .collect()
}

#[test]
fn unique_and_run_length_encoding_match_a_sequential_walk() {
    let mut rng = Rng64::seed_from_u64(seed());
    for n in LENGTHS {
        // All runs of length one, runs of mean 8, and one run.
        let inputs = [
            (0..n as u32).collect::<Vec<_>>(),
            runs_input(&mut rng, n, 8, 1 << 20),
            vec![7; n],
        ];
        for input in inputs {
            let runs = runs_of(&input, |a, b| a == b);
            let poison = 0xdead_beef;
            let mut out = vec![poison; n];
            assert_eq!(
                unique::<SameU32>(&input, &mut out).unwrap(),
                runs.len(),
                "n {n}"
            );
            let firsts: Vec<u32> = runs.iter().map(|&(s, _)| input[s]).collect();
            assert_eq!(out[..runs.len()], firsts[..], "unique, n {n}");
            assert!(out[runs.len()..].iter().all(|&x| x == poison));
            let (mut values, mut lengths) = (vec![poison; n], vec![u64::MAX; n]);
            let count = run_length_encode::<SameU32>(&input, &mut values, &mut lengths).unwrap();
            assert_eq!(count, runs.len());
            assert_eq!(values[..count], firsts[..], "rle values, n {n}");
            let want: Vec<u64> = runs.iter().map(|&(_, l)| l as u64).collect();
            assert_eq!(lengths[..count], want[..], "rle lengths, n {n}");
            assert!(lengths[count..].iter().all(|&x| x == u64::MAX));
            // The runs longer than one: their offsets and lengths.
            let long: Vec<(u64, u64)> = runs
                .iter()
                .filter(|&&(_, l)| l > 1)
                .map(|&(s, l)| (s as u64, l as u64))
                .collect();
            let (mut offsets, mut lengths) = (vec![u64::MAX; n], vec![u64::MAX; n]);
            let count = non_trivial_runs::<SameU32>(&input, &mut offsets, &mut lengths).unwrap();
            assert_eq!(count, long.len(), "non-trivial runs, n {n}");
            let got: Vec<(u64, u64)> = offsets[..count]
                .iter()
                .copied()
                .zip(lengths[..count].iter().copied())
                .collect();
            assert_eq!(got, long, "non-trivial runs, n {n}");
            assert!(offsets[count..].iter().all(|&x| x == u64::MAX));
        }
    }
    // Float keys by `==`: -0.0 joins 0.0's run, every NaN is a run of its own.
    let floats = [0.0, -0.0, f32::NAN, f32::NAN, 1.0, 1.0];
    let (mut values, mut lengths) = ([9.0f32; 6], [0u64; 6]);
    assert_eq!(
        run_length_encode::<SameF32>(&floats, &mut values, &mut lengths).unwrap(),
        4
    );
    assert_eq!(lengths[..4], [2, 1, 1, 2]);
}

#[test]
fn reduce_by_key_combines_each_run_in_order() {
    let mut rng = Rng64::seed_from_u64(seed());
    for n in LENGTHS {
        // Segments of mean 1000 (CUB's benchmark shape), then mean 2.
        for mean in [1000, 2] {
            let keys = runs_input(&mut rng, n, mean, 4);
            // Non-commutative values: affine maps with slopes ±1 and small
            // integer offsets, whose compositions are exact in f32.
            let values: Vec<Affine> = (0..n)
                .map(|_| Affine {
                    a: [1.0, -1.0][rng.random_range(0..2)],
                    b: rng.random_range(-4..4) as f32,
                })
                .collect();
            let runs = runs_of(&keys, |a, b| a == b);
            let mut keys_out = vec![u32::MAX; n];
            let mut values_out = vec![
                Affine {
                    a: f32::NAN,
                    b: f32::NAN
                };
                n
            ];
            let count =
                reduce_by_key::<SameU32, Affine>(&keys, &values, &mut keys_out, &mut values_out)
                    .unwrap();
            assert_eq!(count, runs.len(), "n {n}");
            for (r, &(start, len)) in runs.iter().enumerate() {
                let want = values[start + 1..start + len]
                    .iter()
                    .fold(values[start], |acc, &v| <Affine as ScanOp>::combine(acc, v));
                assert_eq!(
                    (keys_out[r], values_out[r]),
                    (keys[start], want),
                    "n {n}, run {r}"
                );
            }
            assert!(keys_out[count..].iter().all(|&k| k == u32::MAX));
        }
    }
    // Keys that are structs, equal by one field.
    let keys = [
        Affine { a: 1.0, b: 0.0 },
        Affine { a: 1.0, b: 5.0 },
        Affine { a: 2.0, b: 0.0 },
    ];
    let (mut keys_out, mut sums) = ([Affine { a: 0.0, b: 0.0 }; 3], [0u32; 3]);
    let count = reduce_by_key::<SameSlope, Sum<u32>>(&keys, &[1, 2, 3], &mut keys_out, &mut sums);
    assert_eq!(count, Ok(2));
    assert_eq!(
        (keys_out[..2].to_vec(), sums[..2].to_vec()),
        (vec![keys[0], keys[2]], vec![3, 3])
    );
    assert_eq!(
        reduce_by_key::<SameU32, Sum<u32>>(&[1, 2], &[1], &mut [0; 2], &mut [0; 2]),
        Err(SelectLengthError::Values { keys: 2, values: 1 })
    );
}

#[test]
fn reduce_by_segment_combines_each_segment_in_order() {
    let mut rng = Rng64::seed_from_u64(seed());
    let n = 300_001;
    let values: Vec<Affine> = (0..n)
        .map(|_| Affine {
            a: [1.0, -1.0][rng.random_range(0..2)],
            b: rng.random_range(-4..4) as f32,
        })
        .collect();
    // Segments of power-law lengths, some empty, after a gap of 5.
    let mut offsets = vec![5u64];
    while *offsets.last().unwrap() < n as u64 - 9 {
        let len = [0, 1, 2, 40, 3000][rng.random_range(0..5)];
        offsets.push((offsets.last().unwrap() + len).min(n as u64 - 9));
    }
    let mut totals = vec![
        Affine {
            a: f32::NAN,
            b: f32::NAN
        };
        offsets.len() - 1
    ];
    reduce_by_segment::<Affine, u64>(&values, &offsets, &mut totals).unwrap();
    for (s, w) in offsets.windows(2).enumerate() {
        let segment = &values[w[0] as usize..w[1] as usize];
        let want = match segment {
            [] => <Affine as ScanOp>::IDENTITY,
            [first, rest @ ..] => rest
                .iter()
                .fold(*first, |acc, &v| <Affine as ScanOp>::combine(acc, v)),
        };
        assert_eq!(totals[s], want, "segment {s}");
    }
    // Offsets that do not cut the values, totals of the wrong length.
    let mut short = [0u32; 1];
    assert!(matches!(
        reduce_by_segment::<Sum<u32>, u32>(&[1, 2, 3], &[0, 4], &mut short),
        Err(SelectLengthError::Offsets(_))
    ));
    assert_eq!(
        reduce_by_segment::<Sum<u32>, u32>(&[1, 2, 3], &[0, 1, 3], &mut short),
        Err(SelectLengthError::Totals {
            segments: 2,
            totals: 1
        })
    );
    assert_eq!(short, [0]);
}

#[test]
fn nothing_or_everything_kept() {
    let input: Vec<u32> = (0..50_000).map(|i| i * 3).collect();
    let mut out = vec![7; input.len()];
    assert_eq!(select_if::<Third>(&input, &mut out).unwrap(), input.len());
    assert_eq!(out, input);
    let none: Vec<u32> = input.iter().map(|x| x + 1).collect();
    let mut out = vec![7; input.len()];
    assert_eq!(select_if::<Third>(&none, &mut out).unwrap(), 0);
    assert!(out.iter().all(|&x| x == 7));
    assert_eq!(
        partition_if::<Third>(&none, &mut out, Rejected::Reversed).unwrap(),
        0
    );
    assert_eq!(out, none.iter().rev().copied().collect::<Vec<_>>());
}

#[test]
fn bad_lengths_are_typed_errors_that_write_nothing() {
    let input = [3u32, 1, 6];
    let mut short = [9u32; 2];
    assert_eq!(
        select_if::<Third>(&input, &mut short),
        Err(SelectLengthError::Output {
            input: 3,
            output: 2
        })
    );
    assert_eq!(
        partition_three::<Third, OneMore>(&input, &mut short),
        Err(SelectLengthError::Output {
            input: 3,
            output: 2
        })
    );
    let mut out = [9u32; 3];
    assert_eq!(
        select_flagged(&input, &[1, 0], &mut out),
        Err(SelectLengthError::Flags { input: 3, flags: 2 })
    );
    assert_eq!((short, out), ([9; 2], [9; 3]));
    let mut wide = [9u32; 2];
    assert!(
        cpu::scan_mapped::<Triple, Sum<u32>>(ScanKind::Inclusive, &[1, 2, 3], &mut wide).is_err()
    );
    assert_eq!(wide, [9; 2]);
}

#[test]
fn a_mapped_scan_is_the_scan_of_the_mapped_input() {
    let mut rng = Rng64::seed_from_u64(seed());
    for n in LENGTHS {
        let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        let mut got = vec![0u32; n];
        cpu::scan_mapped::<Triple, Sum<u32>>(ScanSpec::exclusive().reverse(), &bytes, &mut got)
            .unwrap();
        let mapped: Vec<u32> = bytes.iter().map(|&b| b as u32 * 3).collect();
        let mut want = vec![0u32; n];
        cpu::scan::<Sum<u32>>(ScanSpec::exclusive().reverse(), &mapped, &mut want).unwrap();
        assert_eq!(got, want, "n {n}");
        // Into a non-commutative operator's elements.
        let shifts: Vec<u32> = (0..n).map(|_| rng.random_range(0..100)).collect();
        let mut maps = vec![Affine { a: 0.0, b: 0.0 }; n];
        cpu::scan_mapped::<Shift, Affine>(ScanKind::Inclusive, &shifts, &mut maps).unwrap();
        let direct: Vec<Affine> = shifts
            .iter()
            .map(|&x| Affine {
                a: 1.0,
                b: x as f32,
            })
            .collect();
        // Sums of integers below 2^24 are exact in f32 in any order.
        if n < 100_000 {
            assert_eq!(maps, cpu::inclusive_vec::<Affine>(&direct), "n {n}");
        }
    }
}

/// A staged scan is its store stage applied to the scan of its load stage
/// of the input, for every kind and direction, the carry-out the scanned
/// element's (exact affine maps over wrapping `u32`: non-commutative).
#[test]
fn a_staged_scan_is_the_store_of_the_scan_of_the_load() {
    use common::ops::{AffineOffset, AffineU32, Double, ToAffineU32};
    let mut rng = Rng64::seed_from_u64(seed());
    let init = AffineU32 { a: 5, b: 11 };
    for n in LENGTHS {
        let words: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        let maps: Vec<AffineU32> = words.iter().map(|&x| ToAffineU32::apply(x)).collect();
        for spec in common::specs::all_specs(init) {
            let mut got = vec![7u32; n];
            let mut total = init;
            cpu::scan_staged::<ToAffineU32, AffineU32, AffineOffset>(
                spec.carry_out(&mut total),
                &words,
                &mut got,
            )
            .unwrap();
            let mut scanned = vec![AffineU32 { a: 0, b: 0 }; n];
            let mut want_total = init;
            cpu::scan::<AffineU32>(spec.carry_out(&mut want_total), &maps, &mut scanned).unwrap();
            let want: Vec<u32> = scanned.iter().map(|&m| AffineOffset::apply(m)).collect();
            assert_eq!(got, want, "n {n} {spec:?}");
            assert_eq!(total, want_total, "n {n} {spec:?}: carry-out");
            // A store stage alone.
            let mut doubled = vec![7u32; n];
            cpu::scan_stored::<Sum<u32>, Double>(spec_u32(&spec), &words, &mut doubled).unwrap();
            let mut sums = vec![0u32; n];
            cpu::scan::<Sum<u32>>(spec_u32(&spec), &words, &mut sums).unwrap();
            let want: Vec<u32> = sums.iter().map(|&x| x.wrapping_mul(2)).collect();
            assert_eq!(doubled, want, "n {n} {spec:?}: store stage alone");
        }
    }
    let mut short = [9u32; 2];
    assert!(cpu::scan_staged::<ToAffineU32, AffineU32, AffineOffset>(
        ScanKind::Inclusive,
        &[1, 2, 3],
        &mut short
    )
    .is_err());
    assert!(
        cpu::scan_stored::<Sum<u32>, Double>(ScanKind::Inclusive, &[1, 2, 3], &mut short).is_err()
    );
    assert_eq!(short, [9; 2]);
}

/// `spec`'s kind and direction for `u32` sums (its seed's offset as the init).
fn spec_u32(spec: &ScanSpec<common::ops::AffineU32>) -> ScanSpec<u32> {
    let kind = match spec.kind {
        ScanKind::Inclusive => ScanKind::Inclusive,
        ScanKind::Exclusive => ScanKind::Exclusive,
        ScanKind::ExclusiveWithInit(m) => ScanKind::ExclusiveWithInit(m.b),
        ScanKind::InclusiveWithInit(m) => ScanKind::InclusiveWithInit(m.b),
        _ => unreachable!("a kind the specs do not make"),
    };
    ScanSpec::from(kind).with_direction(spec.direction)
}

/// Each stage's CUDA translation, run by a kernel over random inputs,
/// against its Rust function (bit for bit), where a GPU is usable.
#[cfg(feature = "gpu")]
#[test]
fn stages_on_the_gpu_match_their_rust_functions() {
    use gpu_scan::scan_runtime::cudarc::driver::{
        DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
    };
    use gpu_scan::scan_runtime::{target_arch, DeviceApi};
    use gpu_scan::sort::SortKey;

    /// Runs stage `name` over `input` (an equality over neighbours, with
    /// `pairs`) and compares each output with `f(input, i)`.
    fn check<I, O>(
        ctx: &std::sync::Arc<gpu_scan::cudarc::driver::CudaContext>,
        name: &str,
        source: &str,
        pairs: bool,
        input: &[I],
        f: impl Fn(&[I], usize) -> O,
    ) where
        I: DeviceRepr + Copy,
        O: DeviceRepr + ValidAsZeroBits + Copy + PartialEq + std::fmt::Debug,
    {
        let program = common::ops::stage_program(name, source, pairs);
        let arch = target_arch(ctx).unwrap();
        let module = ctx
            .load_module(DeviceApi::compile(&program, arch, &[]).unwrap())
            .unwrap();
        let kernel = module.load_function(&format!("run_{name}")).unwrap();
        let stream = ctx.new_stream().unwrap();
        let d_in = stream.clone_htod(input).unwrap();
        let mut d_out = stream.alloc_zeros::<O>(input.len()).unwrap();
        let n = input.len() as u32;
        let config = LaunchConfig::for_num_elems(n);
        // SAFETY: the kernel reads n inputs and writes n outputs of the
        // types its stage declares, which these buffers hold.
        unsafe {
            stream
                .launch_builder(&kernel)
                .arg(&d_in)
                .arg(&mut d_out)
                .arg(&n)
                .launch(config)
        }
        .unwrap();
        let got = stream.clone_dtoh(&d_out).unwrap();
        for (i, g) in got.into_iter().enumerate() {
            assert_eq!(g, f(input, i), "{name}: element {i}");
        }
        println!(
            "stages on the GPU: {name} matches its Rust function on {} inputs",
            input.len()
        );
    }

    /// A function of one element as one of the input and an index.
    fn one<I: Copy, O>(f: impl Fn(I) -> O) -> impl Fn(&[I], usize) -> O {
        move |x, i| f(x[i])
    }
    /// An equality of each element and the next (itself, for the last).
    fn pair<I: Copy>(f: impl Fn(I, I) -> bool) -> impl Fn(&[I], usize) -> bool {
        move |x, i| f(x[i], x[(i + 1).min(x.len() - 1)])
    }

    let Some(ctx) = common::gpu::open_gpu("stages") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    let bytes: Vec<u8> = (0..=255).collect();
    check(
        &ctx,
        <WrapU8 as ScanMap>::NAME,
        <WrapU8 as ScanMap>::CUDA_SOURCE,
        false,
        &bytes,
        one(WrapU8::apply),
    );
    check(
        &ctx,
        <Triple as ScanMap>::NAME,
        <Triple as ScanMap>::CUDA_SOURCE,
        false,
        &bytes,
        one(Triple::apply),
    );
    let words: Vec<u32> = (0..10_000).map(|_| rng.random()).collect();
    check(
        &ctx,
        <Shift as ScanMap>::NAME,
        <Shift as ScanMap>::CUDA_SOURCE,
        false,
        &words,
        one(Shift::apply),
    );
    check(
        &ctx,
        <Third as ScanPredicate>::NAME,
        <Third as ScanPredicate>::CUDA_SOURCE,
        false,
        &words,
        one(Third::keep),
    );
    let maps: Vec<Affine> = (0..10_000)
        .map(|_| Affine {
            a: rng.random(),
            b: rng.random(),
        })
        .collect();
    check(
        &ctx,
        <AtTwo as ScanMap>::NAME,
        <AtTwo as ScanMap>::CUDA_SOURCE,
        false,
        &maps,
        one(AtTwo::apply),
    );
    check(
        &ctx,
        <Growing as ScanPredicate>::NAME,
        <Growing as ScanPredicate>::CUDA_SOURCE,
        false,
        &maps,
        one(Growing::keep),
    );
    let signed: Vec<i64> = (0..10_000).map(|_| rng.random()).collect();
    check(
        &ctx,
        <Positive as ScanPredicate>::NAME,
        <Positive as ScanPredicate>::CUDA_SOURCE,
        false,
        &signed,
        one(Positive::keep),
    );
    // Equalities, over neighbours: runs, signed zeros and NaNs, a struct's field.
    let runs: Vec<u32> = (0..10_000).map(|_| rng.random_range(0..3)).collect();
    check(
        &ctx,
        <SameU32 as ScanEquality>::NAME,
        <SameU32 as ScanEquality>::CUDA_SOURCE,
        true,
        &runs,
        pair(SameU32::equal),
    );
    let floats: Vec<f32> = (0..10_000)
        .map(|_| [0.0, -0.0, 1.5, f32::NAN][rng.random_range(0..4)])
        .collect();
    check(
        &ctx,
        <SameF32 as ScanEquality>::NAME,
        <SameF32 as ScanEquality>::CUDA_SOURCE,
        true,
        &floats,
        pair(SameF32::equal),
    );
    let slopes: Vec<Affine> = (0..10_000)
        .map(|_| Affine {
            a: rng.random_range(0..2) as f32,
            b: rng.random(),
        })
        .collect();
    check(
        &ctx,
        <SameSlope as ScanEquality>::NAME,
        <SameSlope as ScanEquality>::CUDA_SOURCE,
        true,
        &slopes,
        pair(SameSlope::equal),
    );

    // Sort keys: each component's translation against the Rust key, as
    // doubles (every component here is exact in one).
    fn check_key<R: DeviceRepr + Copy>(
        ctx: &std::sync::Arc<gpu_scan::cudarc::driver::CudaContext>,
        name: &str,
        source: &str,
        components: usize,
        records: &[R],
        key: impl Fn(R) -> Vec<f64>,
    ) {
        let program = common::ops::sort_key_program(name, source, components);
        let arch = target_arch(ctx).unwrap();
        let module = ctx
            .load_module(DeviceApi::compile(&program, arch, &[]).unwrap())
            .unwrap();
        let kernel = module.load_function(&format!("run_{name}")).unwrap();
        let stream = ctx.new_stream().unwrap();
        let d_in = stream.clone_htod(records).unwrap();
        let mut d_out = stream
            .alloc_zeros::<f64>(records.len() * components)
            .unwrap();
        let n = records.len() as u32;
        // SAFETY: the kernel reads n records and writes `components`
        // doubles for each, which these buffers hold.
        unsafe {
            stream
                .launch_builder(&kernel)
                .arg(&d_in)
                .arg(&mut d_out)
                .arg(&n)
                .launch(LaunchConfig::for_num_elems(n))
        }
        .unwrap();
        let got = stream.clone_dtoh(&d_out).unwrap();
        for (i, &r) in records.iter().enumerate() {
            let want = key(r);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&got[i * components..(i + 1) * components]),
                bits(&want),
                "{name}: record {i}"
            );
        }
        println!("stages on the GPU: sort key {name} matches its Rust function on {n} records");
    }
    let stats: Vec<Stats> = (0..10_000)
        .map(|_| Stats {
            count: rng.random(),
            sum: rng.random_range(-1e6..1e6),
            max: rng.random_range(-1.0..1.0),
        })
        .collect();
    check_key(
        &ctx,
        <BySignCountSum as SortKey>::NAME,
        <BySignCountSum as SortKey>::CUDA_SOURCE,
        3,
        &stats,
        |s| {
            let (sign, count, sum) = BySignCountSum::key(s);
            vec![sign as f64, count as f64, sum]
        },
    );
    check_key(
        &ctx,
        <BySlope as SortKey>::NAME,
        <BySlope as SortKey>::CUDA_SOURCE,
        1,
        &maps,
        |m| vec![BySlope::key(m) as f64],
    );
}
