//! Scans through load and store stages on the GPU
//! (`GpuScanner::scan_through`, `ScanStages`) against the CPU backend's
//! `cpu::scan_staged` on fresh random inputs (`GPU_STAGES_SEED` replays):
//! bytes widened to `u32` sums (a load stage), `u32` maps into exact affine
//! maps whose offsets are written (both stages; non-commutative), tagged
//! values under "keep the right one" (8 bytes read, 16 scanned, 8 written)
//! and a store stage alone; every kind, forward and in reverse, with a
//! carry-out, over lengths at every tile boundary, on every path
//! (small tiles, full tiles, reduce-then-scan, and the pipelined path,
//! which staged scans leave for the single pass), from an unaligned input
//! into an unaligned output, and an element the kernels hold packed.
//! Outputs and carry-out slots are poisoned before each run, with guard
//! bands after them. Every type here is an integer type, so results
//! compare bit for bit. Streams come from `ctx.new_stream()` under cudarc's
//! default event tracking, two of them alive. Bad lengths get typed errors
//! and leave the output untouched; a graph captured from such a stream
//! replays correctly on new inputs.
#![cfg(feature = "gpu")]

mod common;
use common::gpu::{open_gpu, poison, poisoned, Rng64};
use common::ops::{
    AffineOffset, AffineU32, Double, Latest, LatestValue, SumU32, TagEveryThird, ToAffineU32,
    Triple,
};
use common::specs::named_specs;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::{ScanError, ScanPath, ScanStages, Tuning};
use rand::{Rng, SeedableRng};
use std::fmt::Debug;
use std::sync::Arc;
use wide_cases::{Bytes41, Bytes41Again, Bytes41Lane};

#[path = "common/wide_cases.rs"]
mod wide_cases;

/// Elements after each output and carry-out slot, which must stay poisoned.
const GUARD: usize = 37;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("GPU_STAGES_SEED");
    println!("gpu_stages: seed {seed} (GPU_STAGES_SEED={seed} replays)");
    seed
}

/// Lengths at every boundary of `scanner`'s tiles (small and full).
fn lengths<Op: ScanOp>(scanner: &GpuScanner<Op>) -> Vec<usize>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let mut v = vec![0, 1, 31, 32, 33, 255, 257, 100_003, (1 << 20) + 3];
    for tile in [scanner.small_tile_items(), scanner.tile_items()] {
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

/// The CPU's staged scan of a host input with a host carry-out.
type Oracle<E, In, Out> = fn(ScanSpec<E, &mut E>, &[In], &mut [Out]);

/// A value of all-zero bits.
fn zeroed<T: ValidAsZeroBits>() -> T {
    // SAFETY: all-zero bits are a valid `T` (ValidAsZeroBits).
    unsafe { std::mem::zeroed() }
}

/// One staged scan of `host` (uploaded at element `offset` of its buffer,
/// and written at element `offset` of the output's) into a poisoned output
/// and carry-out slot with guard bands, checked against `oracle`.
#[allow(clippy::too_many_arguments)]
fn check<Op, In, Out>(
    label: &str,
    stream: &Arc<CudaStream>,
    scanner: &mut GpuScanner<Op>,
    stages: ScanStages<In, Op::Element, Out>,
    spec: ScanSpec<Op::Element>,
    host: &[In],
    offset: usize,
    oracle: Oracle<Op::Element, In, Out>,
) where
    Op: ScanOp,
    Op::Element: DeviceRepr + ValidAsZeroBits + PartialEq + Debug,
    In: DeviceRepr + ValidAsZeroBits + Copy,
    Out: DeviceRepr + ValidAsZeroBits + Copy + PartialEq + Debug,
{
    let n = host.len();
    let mut padded = vec![zeroed::<In>(); offset];
    padded.extend_from_slice(host);
    padded.push(zeroed());
    let input = stream.clone_htod(&padded).unwrap();
    let mut out: CudaSlice<Out> = stream.alloc_zeros(offset + n + GUARD).unwrap();
    let mut carry: CudaSlice<Op::Element> = stream.alloc_zeros(1 + GUARD).unwrap();
    poison(stream, &mut out);
    poison(stream, &mut carry);
    {
        let mut slot = carry.slice_mut(0..1);
        let mut view = out.slice_mut(offset..offset + n);
        scanner
            .scan_through(
                stream,
                spec.carry_out(&mut slot),
                stages,
                &input.slice(offset..offset + n),
                &mut view,
            )
            .unwrap_or_else(|e| panic!("{label}: n = {n}: {e}"));
    }
    let mut want = vec![zeroed::<Out>(); n];
    let mut total = Op::IDENTITY;
    oracle(spec.carry_out(&mut total), host, &mut want);
    let all = stream.clone_dtoh(&out).unwrap();
    assert!(
        poisoned(&all[..offset]),
        "{label}: n = {n}: wrote before the output"
    );
    let got = &all[offset..];
    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
        panic!(
            "{label}: n = {n}: element {i}: GPU {:?}, CPU {:?}",
            got[i], want[i]
        );
    }
    assert!(
        poisoned(&got[n..]),
        "{label}: n = {n}: wrote past the output"
    );
    let got_carry = stream.clone_dtoh(&carry).unwrap();
    assert_eq!(got_carry[0], total, "{label}: n = {n}: carry-out");
    assert!(
        poisoned(&got_carry[1..]),
        "{label}: n = {n}: wrote past the carry-out"
    );
}

/// Every named spec (forward and reverse) of `Op` through `stages`, on
/// every path, over every boundary length: fresh inputs from `random`.
fn every_case<Op, In, Out>(
    test: &str,
    stages: ScanStages<In, Op::Element, Out>,
    init: Op::Element,
    random: fn(&mut Rng64) -> In,
    oracle: Oracle<Op::Element, In, Out>,
) where
    Op: ScanOp,
    Op::Element: DeviceRepr + ValidAsZeroBits + PartialEq + Debug,
    In: DeviceRepr + ValidAsZeroBits + Copy,
    Out: DeviceRepr + ValidAsZeroBits + Copy + PartialEq + Debug,
{
    let Some(ctx) = open_gpu(test) else {
        return;
    };
    let seed = seed();
    let mut rng = Rng64::seed_from_u64(seed);
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let mut scanner = GpuScanner::<Op>::new(&ctx).unwrap();
    let lengths = lengths(&scanner);
    let mut runs = 0;
    let paths = [
        ScanPath::Auto,
        ScanPath::SinglePass,
        ScanPath::ReduceThenScan,
        ScanPath::Pipelined,
    ];
    for path in paths {
        scanner.set_tuning(
            Tuning::default()
                .with_path(path)
                .with_background_compile(false),
        );
        for (name, spec) in named_specs(init, &[Direction::Forward, Direction::Reverse]) {
            for &n in &lengths {
                let host: Vec<In> = (0..n).map(|_| random(&mut rng)).collect();
                let label = format!("{test} {path:?} {name}");
                check(
                    &label,
                    &stream,
                    &mut scanner,
                    stages,
                    spec,
                    &host,
                    0,
                    oracle,
                );
                runs += 1;
            }
        }
    }
    // From an input, into an output, one element past a 16-byte boundary
    // (no vector loads or stores), on the look-back and reduce-then-scan.
    let n = 7 * scanner.tile_items() + 5;
    let host: Vec<In> = (0..n).map(|_| random(&mut rng)).collect();
    for path in [ScanPath::Auto, ScanPath::ReduceThenScan] {
        let tuning = Tuning::default().with_path(path);
        scanner.set_tuning(tuning.with_background_compile(false));
        for (name, spec) in named_specs(init, &[Direction::Forward, Direction::Reverse]) {
            let label = format!("{test} unaligned {path:?} {name}");
            check(
                &label,
                &stream,
                &mut scanner,
                stages,
                spec,
                &host,
                1,
                oracle,
            );
            runs += 1;
        }
    }
    println!("{test}: {runs} staged scans match the CPU");
}

#[test]
fn bytes_widened_to_u32_sums() {
    every_case::<SumU32, u8, u32>(
        "gpu_stages widen",
        ScanStages::load::<Triple>(),
        12_345,
        |rng| rng.random(),
        |spec, input, out| cpu::scan_staged::<Triple, SumU32, Same>(spec, input, out).unwrap(),
    );
}

#[test]
fn affine_maps_loaded_and_their_offsets_stored() {
    every_case::<AffineU32, u32, u32>(
        "gpu_stages affine",
        ScanStages::both::<ToAffineU32, AffineOffset>(),
        AffineU32 { a: 3, b: 7 },
        |rng| rng.random(),
        |spec, input, out| {
            cpu::scan_staged::<ToAffineU32, AffineU32, AffineOffset>(spec, input, out).unwrap()
        },
    );
}

#[test]
fn tagged_values_keep_the_right_one() {
    every_case::<Latest, u64, u64>(
        "gpu_stages latest",
        ScanStages::both::<TagEveryThird, LatestValue>(),
        Latest {
            valid: true,
            value: 99,
        },
        |rng| rng.random_range(0..1 << 40),
        |spec, input, out| {
            cpu::scan_staged::<TagEveryThird, Latest, LatestValue>(spec, input, out).unwrap()
        },
    );
}

#[test]
fn a_store_stage_alone() {
    every_case::<SumU32, u32, u32>(
        "gpu_stages store",
        ScanStages::store::<Double>(),
        5,
        |rng| rng.random(),
        |spec, input, out| cpu::scan_stored::<SumU32, Double>(spec, input, out).unwrap(),
    );
}

/// An element the kernels hold packed in words (41 bytes of `u8` lanes:
/// exact, non-commutative affine maps) loaded through a stage and stored
/// as one lane: the stages take and give the element, the kernels its
/// words.
#[test]
fn packed_elements_through_stages() {
    every_case::<Bytes41, Bytes41, u8>(
        "gpu_stages packed",
        ScanStages::both::<Bytes41Again, Bytes41Lane>(),
        Bytes41::from_bits(0x5eed),
        |rng| Bytes41::from_bits(rng.random()),
        |spec, input, out| {
            cpu::scan_staged::<Bytes41Again, Bytes41, Bytes41Lane>(spec, input, out).unwrap()
        },
    );
}

/// `u32` unchanged: the oracle's store stage for a load stage alone.
#[scan_map(input = u32, output = u32, map = |x| x)]
struct Same;

/// Bad lengths are typed errors that leave the output and carry-out slot
/// untouched.
#[test]
fn bad_lengths_are_refused_untouched() {
    let Some(ctx) = open_gpu("gpu_stages bad lengths") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut scanner = GpuScanner::<SumU32>::new(&ctx).unwrap();
    let input: CudaSlice<u8> = stream.alloc_zeros(100).unwrap();
    let mut out: CudaSlice<u32> = stream.alloc_zeros(99).unwrap();
    poison(&stream, &mut out);
    let err = scanner
        .scan_mapped::<Triple>(&stream, ScanKind::Inclusive, &input, &mut out)
        .unwrap_err();
    assert!(
        matches!(
            err,
            ScanError::LengthMismatch {
                input: 100,
                output: 99
            }
        ),
        "{err}"
    );
    let mut carry: CudaSlice<u32> = stream.alloc_zeros(2).unwrap();
    poison(&stream, &mut carry);
    let mut fits: CudaSlice<u32> = stream.alloc_zeros(100).unwrap();
    poison(&stream, &mut fits);
    let spec = ScanSpec::inclusive().carry_out(&mut carry);
    let err = scanner
        .scan_through(
            &stream,
            spec,
            ScanStages::load::<Triple>(),
            &input,
            &mut fits,
        )
        .unwrap_err();
    assert!(matches!(err, ScanError::CarryOutLength { .. }), "{err}");
    assert!(common::gpu::still_poisoned(&stream, &out));
    assert!(common::gpu::still_poisoned(&stream, &fits));
    assert!(common::gpu::still_poisoned(&stream, &carry));
    println!("gpu_stages bad lengths: refused, buffers untouched");
}

/// Staged scans captured in a CUDA graph from a `ctx.new_stream()` stream
/// (a second stream alive, cudarc's default event tracking) after
/// `reserve_through`, replayed on new inputs: each replay matches the CPU.
#[test]
fn staged_scans_replay_in_a_graph() {
    use gpu_scan::scan_runtime::cudarc::driver::sys::{
        CUgraphInstantiate_flags, CUstreamCaptureMode,
    };
    let Some(ctx) = open_gpu("gpu_stages graph") else {
        return;
    };
    let seed = seed();
    let mut rng = Rng64::seed_from_u64(seed);
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let mut sums = GpuScanner::<SumU32>::new(&ctx).unwrap();
    let mut maps = GpuScanner::<AffineU32>::new(&ctx).unwrap();
    let n = 40 * maps.tile_items() + 17;
    let mut bytes: CudaSlice<u8> = stream.alloc_zeros(n).unwrap();
    let mut words: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut totals: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut states: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let mut carry: CudaSlice<AffineU32> = stream.alloc_zeros(1).unwrap();
    let widen = ScanStages::load::<Triple>();
    let affine = ScanStages::both::<ToAffineU32, AffineOffset>();
    let reverse = ScanSpec::exclusive().reverse();
    // Nothing but the reserves before the capture: they load every kernel
    // (the law check, which waits for the stream, is off).
    sums.set_law_checks(false);
    maps.set_law_checks(false);
    sums.reserve_through(&stream, ScanKind::Inclusive, widen, n)
        .unwrap();
    maps.reserve_through(&stream, reverse.carry_out(&mut carry), affine, n)
        .unwrap();
    let loaded = (
        sums.program_stats().kernels_loaded,
        maps.program_stats().kernels_loaded,
    );
    let mut enqueue = |sums: &mut GpuScanner<SumU32>, maps: &mut GpuScanner<AffineU32>| {
        sums.scan_through(&stream, ScanKind::Inclusive, widen, &bytes, &mut totals)?;
        maps.scan_through(
            &stream,
            reverse.carry_out(&mut carry),
            affine,
            &words,
            &mut states,
        )
    };
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .unwrap();
    let captured = enqueue(&mut sums, &mut maps);
    let graph = stream.end_capture(CUgraphInstantiate_flags(0));
    captured.unwrap();
    let graph = graph.unwrap().expect("a graph");
    let after = (
        sums.program_stats().kernels_loaded,
        maps.program_stats().kernels_loaded,
    );
    assert_eq!(
        after, loaded,
        "the capture loaded kernels reserve_through did not"
    );
    for replay in 0..5 {
        let b: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        let w: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        stream.memcpy_htod(&b, &mut bytes).unwrap();
        stream.memcpy_htod(&w, &mut words).unwrap();
        graph.launch().unwrap();
        let mut want = vec![0u32; n];
        cpu::scan_staged::<Triple, SumU32, Same>(ScanKind::Inclusive, &b, &mut want).unwrap();
        assert_eq!(
            stream.clone_dtoh(&totals).unwrap(),
            want,
            "replay {replay}: sums"
        );
        let mut total = AffineU32 { a: 1, b: 0 };
        cpu::scan_staged::<ToAffineU32, AffineU32, AffineOffset>(
            reverse.carry_out(&mut total),
            &w,
            &mut want,
        )
        .unwrap();
        assert_eq!(
            stream.clone_dtoh(&states).unwrap(),
            want,
            "replay {replay}: states"
        );
        assert_eq!(
            stream.clone_dtoh(&carry).unwrap(),
            [total],
            "replay {replay}: carry"
        );
    }
    println!("gpu_stages graph: 2 staged scans x 5 replays of {n} elements match the CPU");
}
