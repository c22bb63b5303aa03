//! Compaction on the GPU (`GpuSelect`: select by a predicate and by flags,
//! partition in both orders and three ways, unique, run-length encoding,
//! non-trivial runs, reduce-by-key)
//! against the CPU
//! backend's functions of the same names, on fresh random inputs (`GPU_SELECT_SEED` replays) and
//! adversarial ones (nothing kept, everything kept, one run, all runs of
//! length one, NaNs and signed zeros), over lengths at every boundary of the
//! kernels' tiles, for words, 8-byte and 24-byte structs and bytes. Outputs
//! and count slots are poisoned before each run and checked after it,
//! guard bands included: a selection writes its first `count` elements and
//! nothing else, a partition all `n`. Streams come from `ctx.new_stream()`
//! under cudarc's default event tracking, two of them alive at once. Bad
//! lengths get typed errors and leave every buffer untouched. With
//! `GPU_SELECT_HUGE=1`, a selection of bytes past 2^32 elements.
#![cfg(feature = "gpu")]

mod common;
use common::gpu::{gpu_alone, gpu_shared, open_gpu, poison, poisoned, Rng64};
use common::ops::{
    Affine, AffineU32, EvenCount, Growing, LargeSum, Lifting, OneMore, SameF32, SameSlope, SameU32,
    Stats, SumU32, Third, ThirdU8,
};
use gpu_scan::kernels_gen::select::SelectKernel;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{
    CudaSlice, CudaStream, CudaViewMut, DeviceRepr, ValidAsZeroBits,
};
use gpu_scan::scan_runtime::{GpuSelect, ScanError};
use gpu_scan::select::{self as cpu, Rejected, SelectLengthError};
use rand::{Rng, SeedableRng};
use std::fmt::Debug;
use std::sync::Arc;

/// Elements after each output and count slot, which must stay poisoned.
const GUARD: usize = 67;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("GPU_SELECT_SEED");
    println!("gpu_select: seed {seed} (GPU_SELECT_SEED={seed} replays)");
    seed
}

/// Lengths around one tile and around many, for the tiles of every
/// compaction kernel over elements of `size` bytes.
fn lengths(select: &GpuSelect, size: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 31, 32, 33, 255, 257, 100_003, (1 << 20) + 3];
    for kernel in [
        SelectKernel::If,
        SelectKernel::Flagged,
        SelectKernel::PartitionIf,
        SelectKernel::Unique,
        SelectKernel::RunLengthEncode,
        SelectKernel::NonTrivialRuns,
        SelectKernel::PartitionThree,
    ] {
        let tile = select.shape_for(kernel, size).unwrap().tile_items();
        v.extend([
            tile - 1,
            tile,
            tile + 1,
            2 * tile - 1,
            7 * tile + 5,
            40 * tile - 1,
            40 * tile + 1,
        ]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// What a compaction of `input` must give: the CPU's output (from an
/// output poisoned like the GPU's) and count, and whether it writes all of
/// the output (a partition) or only its first `count` elements.
struct Expected<T> {
    output: Vec<T>,
    count: usize,
    writes_all: bool,
    /// What the count slot holds: `[count]`, or a three-way partition's
    /// two parts' lengths.
    slots: Vec<usize>,
}

/// A poisoned host copy of `n` elements, as the GPU's output starts.
fn poisoned_host<T: Copy>(n: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    // SAFETY: filled with 0xA5 bytes (the device poison) before use; the
    // test types are plain data for which every byte pattern is a value.
    unsafe {
        std::ptr::write_bytes(v.as_mut_ptr(), 0xA5, n);
        v.set_len(n);
    }
    v
}

/// Runs `gpu` on `stream` into a poisoned output and count slot, each with
/// a guard band, and checks them against `expected`.
fn check<T>(
    stream: &Arc<CudaStream>,
    label: &str,
    n: usize,
    expected: Expected<T>,
    gpu: impl FnOnce(&mut CudaViewMut<'_, T>, &mut CudaViewMut<'_, u64>) -> Result<(), ScanError>,
) where
    T: DeviceRepr + ValidAsZeroBits + Copy + PartialEq + Debug,
{
    let mut out: CudaSlice<T> = stream.alloc_zeros(n + GUARD).unwrap();
    let slots = expected.slots.len();
    let mut count: CudaSlice<u64> = stream.alloc_zeros(slots + GUARD).unwrap();
    poison(stream, &mut out);
    poison(stream, &mut count);
    {
        let mut out_view = out.slice_mut(0..n);
        let mut count_view = count.slice_mut(0..slots);
        gpu(&mut out_view, &mut count_view).unwrap_or_else(|e| panic!("{label}: {e}"));
    }
    let got = stream.clone_dtoh(&out).unwrap();
    let got_count = stream.clone_dtoh(&count).unwrap();
    let got_slots: Vec<usize> = got_count[..slots].iter().map(|&c| c as usize).collect();
    assert_eq!(got_slots, expected.slots, "{label}: count (n = {n})");
    assert!(
        poisoned(&got_count[slots..]),
        "{label}: wrote past the count slot"
    );
    let k = expected.count;
    if let Some(i) = (0..k).find(|&i| got[i] != expected.output[i]) {
        panic!(
            "{label}: n = {n}: element {i} of {k} kept: GPU {:?}, CPU {:?}",
            got[i], expected.output[i]
        );
    }
    if expected.writes_all {
        if let Some(i) = (k..n).find(|&i| got[i] != expected.output[i]) {
            panic!(
                "{label}: n = {n}: rejected element {i}: GPU {:?}, CPU {:?}",
                got[i], expected.output[i]
            );
        }
    } else {
        assert!(
            poisoned(&got[k..n]),
            "{label}: n = {n}: wrote past the {k} selected elements"
        );
    }
    assert!(
        poisoned(&got[n..]),
        "{label}: n = {n}: wrote past the output"
    );
}

/// Selection and both partitions of `input` by predicate `P`, checked.
fn check_predicate<P>(
    select: &mut GpuSelect,
    stream: &Arc<CudaStream>,
    what: &str,
    input: &[P::Element],
) where
    P: ScanPredicate,
    P::Element: DeviceRepr + ValidAsZeroBits + PartialEq + Debug,
{
    check_predicate_at::<P>(select, stream, what, input, 0);
}

/// [`check_predicate`] with the input `offset` elements into its
/// allocation (full tiles at 16-byte aligned addresses are staged in
/// 16-byte copies, others in words or elements).
fn check_predicate_at<P>(
    select: &mut GpuSelect,
    stream: &Arc<CudaStream>,
    what: &str,
    input: &[P::Element],
    offset: usize,
) where
    P: ScanPredicate,
    P::Element: DeviceRepr + ValidAsZeroBits + PartialEq + Debug,
{
    let n = input.len();
    if n == 0 && offset > 0 {
        return;
    }
    let padded: Vec<P::Element> = std::iter::repeat_n(input.first().copied(), offset)
        .flatten()
        .chain(input.iter().copied())
        .collect();
    let d_padded = stream.clone_htod(&padded).unwrap();
    let d_in = d_padded.slice(offset..);
    let what = format!("{what}, input at offset {offset}");
    let what = what.as_str();
    let mut cpu_out = poisoned_host::<P::Element>(n);
    let count = cpu::select_if::<P>(input, &mut cpu_out).unwrap();
    let expected = Expected {
        output: cpu_out,
        count,
        writes_all: false,
        slots: vec![count],
    };
    check(
        stream,
        &format!("select_if {what}"),
        n,
        expected,
        |out, c| select.select_if::<P>(stream, &d_in, out, c),
    );
    for rejected in [Rejected::Reversed, Rejected::InOrder] {
        let mut cpu_out = poisoned_host::<P::Element>(n);
        let count = cpu::partition_if::<P>(input, &mut cpu_out, rejected).unwrap();
        let expected = Expected {
            output: cpu_out,
            count,
            writes_all: true,
            slots: vec![count],
        };
        check(
            stream,
            &format!("partition_if {rejected:?} {what}"),
            n,
            expected,
            |out, c| select.partition_if::<P>(stream, &d_in, out, rejected, c),
        );
    }
}

/// The three-way partition of `input` by `First`, then `Second`, checked:
/// every element written, both parts' lengths in the two-element slot.
fn check_three<First, Second>(
    select: &mut GpuSelect,
    stream: &Arc<CudaStream>,
    what: &str,
    input: &[First::Element],
) where
    First: ScanPredicate,
    Second: ScanPredicate<Element = First::Element>,
    First::Element: DeviceRepr + ValidAsZeroBits + PartialEq + Debug,
{
    let n = input.len();
    let d_in = stream.clone_htod(input).unwrap();
    let mut cpu_out = poisoned_host::<First::Element>(n);
    let (first, second) = cpu::partition_three::<First, Second>(input, &mut cpu_out).unwrap();
    let expected = Expected {
        output: cpu_out,
        count: n,
        writes_all: true,
        slots: vec![first, second],
    };
    check(
        stream,
        &format!("partition_three {what}"),
        n,
        expected,
        |out, c| select.partition_three::<First, Second>(stream, &d_in, out, c),
    );
}

/// Selection of `input` by `flags`, checked, the flags `offset` bytes into
/// their allocation (full tiles read 16-byte aligned flags in 16-byte
/// copies, other flags a byte at a time); the bytes before them are set,
/// so that a read of them would keep an element.
fn check_flags<T>(
    select: &mut GpuSelect,
    stream: &Arc<CudaStream>,
    what: &str,
    input: &[T],
    flags: &[u8],
    offset: usize,
) where
    T: ScanElement + DeviceRepr + ValidAsZeroBits + PartialEq + Debug,
{
    let n = input.len();
    let d_in = stream.clone_htod(input).unwrap();
    let padded: Vec<u8> = std::iter::repeat_n(1u8, offset)
        .chain(flags.iter().copied())
        .collect();
    let d_padded = stream.clone_htod(&padded).unwrap();
    let d_flags = d_padded.slice(offset..);
    let what = format!("{what}, flags at offset {offset}");
    let mut cpu_out = poisoned_host::<T>(n);
    let count = cpu::select_flagged(input, flags, &mut cpu_out).unwrap();
    let expected = Expected {
        output: cpu_out,
        count,
        writes_all: false,
        slots: vec![count],
    };
    check(
        stream,
        &format!("select_flagged {what}"),
        n,
        expected,
        |out, c| select.select_flagged(stream, &d_in, &d_flags, out, c),
    );
}

/// The run heads of `input` by equality `E`, checked.
fn check_unique<E>(
    select: &mut GpuSelect,
    stream: &Arc<CudaStream>,
    what: &str,
    input: &[E::Element],
) where
    E: ScanEquality,
    E::Element: DeviceRepr + ValidAsZeroBits + Debug,
{
    let n = input.len();
    let d_in = stream.clone_htod(input).unwrap();
    let mut cpu_out = poisoned_host::<E::Element>(n);
    let count = cpu::unique::<E>(input, &mut cpu_out).unwrap();
    // Compared bit for bit (NaNs are kept as they are).
    let bits = |v: &[E::Element]| -> Vec<Vec<u8>> {
        v.iter()
            .map(|x| {
                // SAFETY: plain data, read as its bytes.
                unsafe {
                    std::slice::from_raw_parts(
                        (x as *const E::Element).cast::<u8>(),
                        std::mem::size_of::<E::Element>(),
                    )
                }
                .to_vec()
            })
            .collect()
    };
    let expected = Expected {
        output: bits(&cpu_out),
        count,
        writes_all: false,
        slots: vec![count],
    };
    let mut out: CudaSlice<E::Element> = stream.alloc_zeros(n + GUARD).unwrap();
    let mut slot: CudaSlice<u64> = stream.alloc_zeros(1 + GUARD).unwrap();
    poison(stream, &mut out);
    poison(stream, &mut slot);
    select
        .unique::<E>(
            stream,
            &d_in,
            &mut out.slice_mut(0..n),
            &mut slot.slice_mut(0..1),
        )
        .unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    let got_slot = stream.clone_dtoh(&slot).unwrap();
    assert_eq!(
        got_slot[0] as usize, count,
        "unique {what}: count (n = {n})"
    );
    assert!(
        poisoned(&got_slot[1..]),
        "unique {what}: wrote past the count slot"
    );
    let got_bits = bits(&got[..count]);
    if let Some(i) = (0..count).find(|&i| got_bits[i] != expected.output[i]) {
        panic!(
            "unique {what}: n = {n}: run {i}: GPU {:?}, CPU {:?}",
            got[i], cpu_out[i]
        );
    }
    assert!(
        poisoned(&got[count..]),
        "unique {what}: n = {n}: wrote past the runs"
    );

    // Run-length encoding of the same input: the same heads, and lengths.
    let mut cpu_values = poisoned_host::<E::Element>(n);
    let mut cpu_lengths = poisoned_host::<u64>(n);
    let runs = cpu::run_length_encode::<E>(input, &mut cpu_values, &mut cpu_lengths).unwrap();
    assert_eq!(
        runs, count,
        "run_length_encode {what}: the CPU's runs are its heads"
    );
    let mut lengths: CudaSlice<u64> = stream.alloc_zeros(n + GUARD).unwrap();
    poison(stream, &mut out);
    poison(stream, &mut lengths);
    poison(stream, &mut slot);
    select
        .run_length_encode::<E>(
            stream,
            &d_in,
            &mut out.slice_mut(0..n),
            &mut lengths.slice_mut(0..n),
            &mut slot.slice_mut(0..1),
        )
        .unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    let got_lengths = stream.clone_dtoh(&lengths).unwrap();
    let got_slot = stream.clone_dtoh(&slot).unwrap();
    let label = format!("run_length_encode {what}: n = {n}");
    assert_eq!(got_slot[0] as usize, runs, "{label}: runs");
    assert!(
        poisoned(&got_slot[1..]),
        "{label}: wrote past the count slot"
    );
    let got_bits = bits(&got[..runs]);
    if let Some(i) = (0..runs).find(|&i| got_bits[i] != expected.output[i]) {
        panic!(
            "{label}: run {i}: GPU {:?}, CPU {:?}",
            got[i], cpu_values[i]
        );
    }
    assert_eq!(got_lengths[..runs], cpu_lengths[..runs], "{label}: lengths");
    assert!(poisoned(&got[runs..]), "{label}: wrote past the runs");
    assert!(
        poisoned(&got_lengths[runs..]),
        "{label}: wrote past the lengths"
    );

    // The non-trivial runs of the same input: offsets and lengths.
    let mut cpu_offsets = poisoned_host::<u64>(n);
    let runs = cpu::non_trivial_runs::<E>(input, &mut cpu_offsets, &mut cpu_lengths).unwrap();
    let mut offsets: CudaSlice<u64> = stream.alloc_zeros(n + GUARD).unwrap();
    poison(stream, &mut offsets);
    poison(stream, &mut lengths);
    poison(stream, &mut slot);
    select
        .non_trivial_runs::<E>(
            stream,
            &d_in,
            &mut offsets.slice_mut(0..n),
            &mut lengths.slice_mut(0..n),
            &mut slot.slice_mut(0..1),
        )
        .unwrap();
    let got_offsets = stream.clone_dtoh(&offsets).unwrap();
    let got_lengths = stream.clone_dtoh(&lengths).unwrap();
    let got_slot = stream.clone_dtoh(&slot).unwrap();
    let label = format!("non_trivial_runs {what}: n = {n}");
    assert_eq!(got_slot[0] as usize, runs, "{label}: runs");
    assert!(
        poisoned(&got_slot[1..]),
        "{label}: wrote past the count slot"
    );
    assert_eq!(got_offsets[..runs], cpu_offsets[..runs], "{label}: offsets");
    assert_eq!(got_lengths[..runs], cpu_lengths[..runs], "{label}: lengths");
    assert!(
        poisoned(&got_offsets[runs..]),
        "{label}: wrote past the offsets"
    );
    assert!(
        poisoned(&got_lengths[runs..]),
        "{label}: wrote past the lengths"
    );
}

/// Reduce-by-key of `values` by runs of `keys` (`E`) under `Op`, checked
/// bit for bit against the CPU.
fn check_reduce_by_key<E, Op>(
    select: &mut GpuSelect,
    stream: &Arc<CudaStream>,
    what: &str,
    keys: &[E::Element],
    values: &[Op::Element],
) where
    E: ScanEquality,
    Op: ScanOp,
    E::Element: DeviceRepr + ValidAsZeroBits + PartialEq + Debug,
    Op::Element: DeviceRepr + ValidAsZeroBits + PartialEq + Debug,
{
    let n = keys.len();
    let mut cpu_keys = poisoned_host::<E::Element>(n);
    let mut cpu_values = poisoned_host::<Op::Element>(n);
    let runs = cpu::reduce_by_key::<E, Op>(keys, values, &mut cpu_keys, &mut cpu_values).unwrap();
    let d_keys = stream.clone_htod(keys).unwrap();
    let d_values = stream.clone_htod(values).unwrap();
    let mut keys_out: CudaSlice<E::Element> = stream.alloc_zeros(n + GUARD).unwrap();
    let mut values_out: CudaSlice<Op::Element> = stream.alloc_zeros(n + GUARD).unwrap();
    let mut slot: CudaSlice<u64> = stream.alloc_zeros(1 + GUARD).unwrap();
    poison(stream, &mut keys_out);
    poison(stream, &mut values_out);
    poison(stream, &mut slot);
    select
        .reduce_by_key::<E, Op>(
            stream,
            &d_keys,
            &d_values,
            &mut keys_out.slice_mut(0..n),
            &mut values_out.slice_mut(0..n),
            &mut slot.slice_mut(0..1),
        )
        .unwrap();
    let got_keys = stream.clone_dtoh(&keys_out).unwrap();
    let got_values = stream.clone_dtoh(&values_out).unwrap();
    let got_slot = stream.clone_dtoh(&slot).unwrap();
    let label = format!("reduce_by_key {what}: n = {n}");
    assert_eq!(got_slot[0] as usize, runs, "{label}: runs");
    assert!(
        poisoned(&got_slot[1..]),
        "{label}: wrote past the count slot"
    );
    if let Some(i) =
        (0..runs).find(|&i| got_keys[i] != cpu_keys[i] || got_values[i] != cpu_values[i])
    {
        panic!(
            "{label}: run {i}: GPU ({:?}, {:?}), CPU ({:?}, {:?})",
            got_keys[i], got_values[i], cpu_keys[i], cpu_values[i]
        );
    }
    assert!(poisoned(&got_keys[runs..]), "{label}: wrote past the keys");
    assert!(
        poisoned(&got_values[runs..]),
        "{label}: wrote past the values"
    );
}

/// Reduce-by-key with a non-commutative exact operator (affine maps over
/// wrapping `u32`) and sums, over runs of mean 8 and 1000, one run, runs
/// of one, and struct keys, at every tile boundary.
#[test]
fn reduce_by_key_matches_the_cpu() {
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_select reduce_by_key") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    let streams = [ctx.new_stream().unwrap(), ctx.new_stream().unwrap()];
    let mut select = GpuSelect::new(&ctx).unwrap();
    let tile = select
        .shape_for(SelectKernel::ReduceByKey, 12)
        .unwrap()
        .tile_items();
    let mut lengths = lengths(&select, 4);
    lengths.extend([
        tile - 1,
        tile,
        tile + 1,
        2 * tile - 1,
        40 * tile - 1,
        40 * tile + 1,
    ]);
    lengths.sort_unstable();
    lengths.dedup();
    let mut cases = 0;
    for (i, &n) in lengths.iter().enumerate() {
        let stream = &streams[i % 2];
        let maps: Vec<AffineU32> = (0..n)
            .map(|_| AffineU32 {
                a: rng.random(),
                b: rng.random(),
            })
            .collect();
        let words: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        for mean in [8u32, 1000] {
            let mut key = 0u32;
            let keys: Vec<u32> = (0..n)
                .map(|_| {
                    if rng.random_range(0..mean) == 0 {
                        key = key.wrapping_add(rng.random_range(1..4));
                    }
                    key
                })
                .collect();
            let what = format!("affine maps, runs of mean {mean}");
            check_reduce_by_key::<SameU32, AffineU32>(&mut select, stream, &what, &keys, &maps);
            let what = format!("sums, runs of mean {mean}");
            check_reduce_by_key::<SameU32, SumU32>(&mut select, stream, &what, &keys, &words);
        }
        check_reduce_by_key::<SameU32, AffineU32>(
            &mut select,
            stream,
            "one run",
            &vec![5; n],
            &maps,
        );
        let distinct: Vec<u32> = (0..n as u32).collect();
        check_reduce_by_key::<SameU32, AffineU32>(
            &mut select,
            stream,
            "runs of one",
            &distinct,
            &maps,
        );
        let slopes: Vec<Affine> = (0..n)
            .map(|_| Affine {
                a: rng.random_range(0..2) as f32,
                b: rng.random(),
            })
            .collect();
        check_reduce_by_key::<SameSlope, SumU32>(
            &mut select,
            stream,
            "struct keys",
            &slopes,
            &words,
        );
        cases += 7;
    }
    println!("gpu_select reduce_by_key: {cases} cases match the CPU");
}

#[test]
fn compaction_matches_the_cpu_over_tile_boundaries() {
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_select") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    // Two streams alive, used in turn.
    let streams = [ctx.new_stream().unwrap(), ctx.new_stream().unwrap()];
    let mut select = GpuSelect::new(&ctx).unwrap();
    let mut cases = 0;

    for (i, n) in lengths(&select, 4).into_iter().enumerate() {
        let stream = &streams[i % 2];
        let words: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        check_predicate::<Third>(&mut select, stream, "random u32", &words);
        let all: Vec<u32> = words.iter().map(|x| x / 3 * 3).collect();
        check_predicate::<Third>(&mut select, stream, "every u32 kept", &all);
        // (Halved first: a multiple of 3 plus 2 stays below 2^32.)
        let none: Vec<u32> = words.iter().map(|x| x / 2 / 3 * 3 + 1).collect();
        check_predicate::<Third>(&mut select, stream, "no u32 kept", &none);
        // Three parts: random (about a third each), all in the first, all
        // in the second, all in the third.
        check_three::<Third, OneMore>(&mut select, stream, "random u32", &words);
        check_three::<Third, OneMore>(&mut select, stream, "all first", &all);
        check_three::<Third, OneMore>(&mut select, stream, "all second", &none);
        let rest: Vec<u32> = words.iter().map(|x| x / 2 / 3 * 3 + 2).collect();
        check_three::<Third, OneMore>(&mut select, stream, "all third", &rest);
        // Flags of every byte value, about half of them zero.
        let flags: Vec<u8> = (0..n)
            .map(|_| {
                if rng.random() {
                    0
                } else {
                    rng.random_range(1..=255)
                }
            })
            .collect();
        for offset in [0, 1, 7, 16] {
            check_flags(&mut select, stream, "random u32", &words, &flags, offset);
        }
        check_flags(
            &mut select,
            stream,
            "all flags zero",
            &words,
            &vec![0; n],
            0,
        );
        check_flags(
            &mut select,
            stream,
            "all flags set",
            &words,
            &vec![255; n],
            0,
        );
        // Runs of mean length 8, one run, runs of length one.
        let mut key = 0u32;
        let runs: Vec<u32> = (0..n)
            .map(|_| {
                if rng.random_range(0..8) == 0 {
                    key = key.wrapping_add(rng.random_range(1..4));
                }
                key
            })
            .collect();
        check_unique::<SameU32>(&mut select, stream, "runs of mean 8", &runs);
        check_unique::<SameU32>(&mut select, stream, "one run", &vec![7; n]);
        let distinct: Vec<u32> = (0..n as u32).collect();
        check_unique::<SameU32>(&mut select, stream, "runs of one", &distinct);
        let floats: Vec<f32> = (0..n)
            .map(|_| [0.0, -0.0, 1.5, f32::NAN][rng.random_range(0..4)])
            .collect();
        check_unique::<SameF32>(&mut select, stream, "f32 with NaN and ±0", &floats);
        // Runs of one and two alternating: every other run non-trivial, the
        // shortest kept.
        let pairs: Vec<u32> = (0..n as u32)
            .map(|i| (i / 3) * 2 + u32::from(i % 3 > 0))
            .collect();
        check_unique::<SameU32>(&mut select, stream, "runs of one and two", &pairs);
        cases += 37; // with run-length encoding and non-trivial runs beside each unique
    }

    for (i, n) in lengths(&select, 8).into_iter().enumerate() {
        let stream = &streams[i % 2];
        let maps: Vec<Affine> = (0..n)
            .map(|_| Affine {
                a: rng.random_range(0..4) as f32 * 0.25,
                b: rng.random(),
            })
            .collect();
        check_predicate::<Growing>(&mut select, stream, "affine", &maps);
        check_predicate_at::<Growing>(&mut select, stream, "affine", &maps, 1);
        check_three::<Growing, Lifting>(&mut select, stream, "affine", &maps);
        check_unique::<SameSlope>(&mut select, stream, "affine slopes", &maps);
        let flags: Vec<u8> = (0..n).map(|_| rng.random_range(0..2)).collect();
        check_flags(&mut select, stream, "affine", &maps, &flags, 0);
        check_flags(&mut select, stream, "affine", &maps, &flags, 5);
        cases += 12;
    }

    // Bytes: tiles staged element by element.
    for (i, n) in lengths(&select, 1).into_iter().enumerate() {
        let stream = &streams[i % 2];
        let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        check_predicate::<ThirdU8>(&mut select, stream, "random u8", &bytes);
        check_predicate_at::<ThirdU8>(&mut select, stream, "random u8", &bytes, 3);
        cases += 6;
    }

    for (i, n) in lengths(&select, 24).into_iter().enumerate() {
        let stream = &streams[i % 2];
        let stats: Vec<Stats> = (0..n)
            .map(|_| Stats {
                count: rng.random_range(0..4),
                sum: rng.random(),
                max: rng.random(),
            })
            .collect();
        check_predicate::<EvenCount>(&mut select, stream, "24-byte struct", &stats);
        check_predicate_at::<EvenCount>(&mut select, stream, "24-byte struct", &stats, 1);
        check_three::<EvenCount, LargeSum>(&mut select, stream, "24-byte struct", &stats);
        let flags: Vec<u8> = (0..n).map(|_| rng.random_range(0..2)).collect();
        check_flags(&mut select, stream, "24-byte struct", &stats, &flags, 0);
        check_flags(&mut select, stream, "24-byte struct", &stats, &flags, 3);
        cases += 9;
    }
    println!(
        "gpu_select: {cases} cases over lengths 0 to {} match the CPU ({:?})",
        (1 << 20) + 3,
        select.program_stats().origin
    );
}

/// Wrong lengths get typed errors, before anything is enqueued: every
/// buffer stays as it was.
#[test]
fn bad_lengths_are_refused_and_leave_buffers_untouched() {
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_select bad lengths") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut select = GpuSelect::new(&ctx).unwrap();
    let input = stream.clone_htod(&[3u32; 100]).unwrap();
    let flags = stream.clone_htod(&[1u8; 99]).unwrap();
    let mut out: CudaSlice<u32> = stream.alloc_zeros(101).unwrap();
    let mut count: CudaSlice<u64> = stream.alloc_zeros(2).unwrap();
    poison(&stream, &mut out);
    poison(&stream, &mut count);
    let err = select
        .select_if::<Third>(&stream, &input, &mut out, &mut count.slice_mut(0..1))
        .unwrap_err();
    assert!(
        matches!(
            err,
            ScanError::Select(SelectLengthError::Output {
                input: 100,
                output: 101
            })
        ),
        "{err}"
    );
    let err = select
        .select_if::<Third>(&stream, &input, &mut out.slice_mut(0..100), &mut count)
        .unwrap_err();
    assert!(
        matches!(
            err,
            ScanError::SelectCountLength {
                len: 2,
                expected: 1
            }
        ),
        "{err}"
    );
    let err = select
        .select_flagged(
            &stream,
            &input,
            &flags,
            &mut out.slice_mut(0..100),
            &mut count.slice_mut(0..1),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            ScanError::Select(SelectLengthError::Flags {
                input: 100,
                flags: 99
            })
        ),
        "{err}"
    );
    let err = select
        .partition_if::<Third>(
            &stream,
            &input,
            &mut out,
            Rejected::InOrder,
            &mut count.slice_mut(0..1),
        )
        .unwrap_err();
    assert!(matches!(err, ScanError::Select(_)), "{err}");
    let mut offsets: CudaSlice<u64> = stream.alloc_zeros(100).unwrap();
    let mut short_lengths: CudaSlice<u64> = stream.alloc_zeros(99).unwrap();
    poison(&stream, &mut offsets);
    poison(&stream, &mut short_lengths);
    let err = select
        .non_trivial_runs::<SameU32>(
            &stream,
            &input,
            &mut offsets,
            &mut short_lengths,
            &mut count.slice_mut(0..1),
        )
        .unwrap_err();
    assert!(matches!(err, ScanError::Select(_)), "{err}");
    assert!(poisoned(&stream.clone_dtoh(&offsets).unwrap()));
    assert!(poisoned(&stream.clone_dtoh(&short_lengths).unwrap()));
    let values = stream.clone_htod(&[1u32; 99]).unwrap();
    let mut keys_out: CudaSlice<u32> = stream.alloc_zeros(100).unwrap();
    poison(&stream, &mut keys_out);
    let err = select
        .reduce_by_key::<SameU32, SumU32>(
            &stream,
            &input,
            &values,
            &mut keys_out,
            &mut out.slice_mut(0..100),
            &mut count.slice_mut(0..1),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            ScanError::Select(SelectLengthError::Values {
                keys: 100,
                values: 99
            })
        ),
        "{err}"
    );
    let err = select
        .partition_three::<Third, OneMore>(
            &stream,
            &input,
            &mut out.slice_mut(0..100),
            &mut count.slice_mut(0..1),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            ScanError::SelectCountLength {
                len: 1,
                expected: 2
            }
        ),
        "{err}"
    );
    let err = select
        .partition_three::<Third, OneMore>(&stream, &input, &mut out, &mut count)
        .unwrap_err();
    assert!(
        matches!(
            err,
            ScanError::Select(SelectLengthError::Output {
                input: 100,
                output: 101
            })
        ),
        "{err}"
    );
    assert!(poisoned(&stream.clone_dtoh(&keys_out).unwrap()));
    assert!(poisoned(&stream.clone_dtoh(&out).unwrap()));
    assert!(poisoned(&stream.clone_dtoh(&count).unwrap()));
    // A tuning shape one kernel refuses (non-trivial runs take at most 31
    // items) still reserves for the others, and that kernel refuses it.
    let wide = gpu_scan::kernels_gen::select::SelectShape {
        threads: 128,
        items: 32,
        min_blocks: 2,
    };
    select.set_shape(Some(wide));
    select.reserve::<u32>(&stream, 1 << 16).unwrap();
    let mut more_lengths = offsets.clone();
    let err = select
        .non_trivial_runs::<SameU32>(
            &stream,
            &input,
            &mut offsets,
            &mut more_lengths,
            &mut count.slice_mut(0..1),
        )
        .unwrap_err();
    assert!(matches!(err, ScanError::SelectShape { .. }), "{err}");
    select.set_shape(None);
    println!("gpu_select: bad lengths refused, buffers untouched: {err}");
}

/// Bytes past 2^32 elements selected by flags (every third), and the count
/// past 2^32 of them by a predicate: 64-bit counts and positions all the
/// way. About 13 GB of device memory; run with `GPU_SELECT_HUGE=1`.
#[test]
fn selections_past_two_to_the_32() {
    if std::env::var_os("GPU_SELECT_HUGE").is_none_or(|v| v != "1") {
        println!("gpu_select huge: skipped (GPU_SELECT_HUGE=1 runs it)");
        return;
    }
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_select huge") else {
        return;
    };
    use rayon::prelude::*;
    let stream = ctx.new_stream().unwrap();
    let mut select = GpuSelect::new(&ctx).unwrap();
    let n: usize = (1 << 32) + 4097;
    let input: Vec<u8> = (0..n).into_par_iter().map(|i| (i % 251) as u8).collect();
    let flags: Vec<u8> = (0..n)
        .into_par_iter()
        .map(|i| u8::from(i % 3 == 0))
        .collect();
    let d_in = stream.clone_htod(&input).unwrap();
    let d_flags = stream.clone_htod(&flags).unwrap();
    drop(flags);
    let mut out: CudaSlice<u8> = stream.alloc_zeros(n).unwrap();
    let mut count: CudaSlice<u64> = stream.alloc_zeros(1).unwrap();
    select
        .select_flagged(&stream, &d_in, &d_flags, &mut out, &mut count)
        .unwrap();
    let kept = n.div_ceil(3);
    assert_eq!(stream.clone_dtoh(&count).unwrap()[0] as usize, kept);
    let got = stream.clone_dtoh(&out).unwrap();
    let bad = (0..kept)
        .into_par_iter()
        .find_any(|&j| got[j] != ((3 * j) % 251) as u8);
    assert_eq!(bad, None, "select_flagged past 2^32: element differs");
    println!("gpu_select huge: {n} bytes, every third kept ({kept}): match");
}

/// Compactions (reduce-by-key and the three-way partition too) captured in a CUDA graph from a `ctx.new_stream()` stream
/// under cudarc's default event tracking, then replayed on new inputs:
/// each replay matches the CPU (the launch state carries the tiles'
/// epochs from one replay to the next).
#[test]
fn compactions_replay_in_a_graph() {
    use gpu_scan::scan_runtime::cudarc::driver::sys::{
        CUgraphInstantiate_flags, CUstreamCaptureMode,
    };
    let _gpu = gpu_alone();
    let Some(ctx) = open_gpu("gpu_select graph") else {
        return;
    };
    let seed = seed();
    let mut rng = Rng64::seed_from_u64(seed);
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let mut select = GpuSelect::new(&ctx).unwrap();
    let n = 40
        * select
            .shape_for(SelectKernel::Flagged, 4)
            .unwrap()
            .tile_items()
        + 17;
    let mut input: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut flags: CudaSlice<u8> = stream.alloc_zeros(n).unwrap();
    let mut kept: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut parted: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut flagged: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut heads: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut run_values: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut run_lengths: CudaSlice<u64> = stream.alloc_zeros(n).unwrap();
    let mut maps: CudaSlice<AffineU32> = stream.alloc_zeros(n).unwrap();
    let mut run_keys: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut run_maps: CudaSlice<AffineU32> = stream.alloc_zeros(n).unwrap();
    let mut run_offsets: CudaSlice<u64> = stream.alloc_zeros(n).unwrap();
    let mut long_lengths: CudaSlice<u64> = stream.alloc_zeros(n).unwrap();
    let mut three: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut counts: CudaSlice<u64> = stream.alloc_zeros(9).unwrap();
    select.reserve::<u32>(&stream, n).unwrap();
    select
        .reserve_reduce_by_key::<SameU32, AffineU32>(&stream, n)
        .unwrap();
    // One ordinary run first, so that every kernel is loaded before the capture.
    let mut enqueue = |select: &mut GpuSelect| -> Result<(), ScanError> {
        select.select_if::<Third>(&stream, &input, &mut kept, &mut counts.slice_mut(0..1))?;
        select.partition_if::<Third>(
            &stream,
            &input,
            &mut parted,
            Rejected::InOrder,
            &mut counts.slice_mut(1..2),
        )?;
        select.select_flagged(
            &stream,
            &input,
            &flags,
            &mut flagged,
            &mut counts.slice_mut(2..3),
        )?;
        select.unique::<SameU32>(&stream, &input, &mut heads, &mut counts.slice_mut(3..4))?;
        select.run_length_encode::<SameU32>(
            &stream,
            &input,
            &mut run_values,
            &mut run_lengths,
            &mut counts.slice_mut(4..5),
        )?;
        select.non_trivial_runs::<SameU32>(
            &stream,
            &input,
            &mut run_offsets,
            &mut long_lengths,
            &mut counts.slice_mut(6..7),
        )?;
        select.partition_three::<Third, OneMore>(
            &stream,
            &input,
            &mut three,
            &mut counts.slice_mut(7..9),
        )?;
        // Affine maps over wrapping u32: non-commutative, exact.
        select.reduce_by_key::<SameU32, AffineU32>(
            &stream,
            &input,
            &maps,
            &mut run_keys,
            &mut run_maps,
            &mut counts.slice_mut(5..6),
        )
    };
    enqueue(&mut select).unwrap();
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .unwrap();
    let captured = enqueue(&mut select);
    let graph = stream.end_capture(CUgraphInstantiate_flags(0));
    captured.unwrap();
    let graph = graph.unwrap().expect("a graph");
    for replay in 0..6 {
        let words: Vec<u32> = (0..n).map(|_| rng.random_range(0..40)).collect();
        let bytes: Vec<u8> = (0..n).map(|_| rng.random_range(0..2)).collect();
        let affine: Vec<AffineU32> = (0..n)
            .map(|_| AffineU32 {
                a: rng.random(),
                b: rng.random(),
            })
            .collect();
        stream.memcpy_htod(&words, &mut input).unwrap();
        stream.memcpy_htod(&bytes, &mut flags).unwrap();
        stream.memcpy_htod(&affine, &mut maps).unwrap();
        graph.launch().unwrap();
        let got_counts = stream.clone_dtoh(&counts).unwrap();
        let mut want = vec![0u32; n];
        let k = cpu::select_if::<Third>(&words, &mut want).unwrap();
        assert_eq!(
            got_counts[0] as usize, k,
            "replay {replay}: select_if count"
        );
        assert_eq!(
            stream.clone_dtoh(&kept).unwrap()[..k],
            want[..k],
            "replay {replay}: select_if"
        );
        let k = cpu::partition_if::<Third>(&words, &mut want, Rejected::InOrder).unwrap();
        assert_eq!(
            got_counts[1] as usize, k,
            "replay {replay}: partition count"
        );
        assert_eq!(
            stream.clone_dtoh(&parted).unwrap(),
            want,
            "replay {replay}: partition_if"
        );
        let k = cpu::select_flagged(&words, &bytes, &mut want).unwrap();
        assert_eq!(got_counts[2] as usize, k, "replay {replay}: flagged count");
        assert_eq!(
            stream.clone_dtoh(&flagged).unwrap()[..k],
            want[..k],
            "replay {replay}: flagged"
        );
        let k = cpu::unique::<SameU32>(&words, &mut want).unwrap();
        assert_eq!(got_counts[3] as usize, k, "replay {replay}: unique count");
        assert_eq!(
            stream.clone_dtoh(&heads).unwrap()[..k],
            want[..k],
            "replay {replay}: unique"
        );
        let mut lengths = vec![0u64; n];
        let k = cpu::run_length_encode::<SameU32>(&words, &mut want, &mut lengths).unwrap();
        assert_eq!(got_counts[4] as usize, k, "replay {replay}: runs");
        assert_eq!(
            stream.clone_dtoh(&run_values).unwrap()[..k],
            want[..k],
            "replay {replay}: run values"
        );
        assert_eq!(
            stream.clone_dtoh(&run_lengths).unwrap()[..k],
            lengths[..k],
            "replay {replay}: run lengths"
        );
        let (mut want_keys, mut want_maps) = (vec![0u32; n], vec![AffineU32 { a: 0, b: 0 }; n]);
        let k = cpu::reduce_by_key::<SameU32, AffineU32>(
            &words,
            &affine,
            &mut want_keys,
            &mut want_maps,
        )
        .unwrap();
        assert_eq!(
            got_counts[5] as usize, k,
            "replay {replay}: reduce_by_key runs"
        );
        assert_eq!(
            stream.clone_dtoh(&run_keys).unwrap()[..k],
            want_keys[..k],
            "replay {replay}: reduce_by_key keys"
        );
        assert_eq!(
            stream.clone_dtoh(&run_maps).unwrap()[..k],
            want_maps[..k],
            "replay {replay}: reduce_by_key values"
        );
        let mut offsets = vec![0u64; n];
        let k = cpu::non_trivial_runs::<SameU32>(&words, &mut offsets, &mut lengths).unwrap();
        assert_eq!(
            got_counts[6] as usize, k,
            "replay {replay}: non-trivial runs"
        );
        assert_eq!(
            stream.clone_dtoh(&run_offsets).unwrap()[..k],
            offsets[..k],
            "replay {replay}: non-trivial run offsets"
        );
        assert_eq!(
            stream.clone_dtoh(&long_lengths).unwrap()[..k],
            lengths[..k],
            "replay {replay}: non-trivial run lengths"
        );
        let (first, second) = cpu::partition_three::<Third, OneMore>(&words, &mut want).unwrap();
        assert_eq!(
            got_counts[7..9],
            [first as u64, second as u64],
            "replay {replay}: partition_three counts"
        );
        assert_eq!(
            stream.clone_dtoh(&three).unwrap(),
            want,
            "replay {replay}: partition_three"
        );
    }
    ctx.check_err().unwrap();
    println!("gpu_select graph: 8 compactions x 6 replays of {n} elements match the CPU");
}
