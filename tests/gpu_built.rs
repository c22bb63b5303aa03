//! Operators built at run time (`DynOperator::from_text`, the Python
//! package's GPU path) scanned on the GPU by `DynScanner`, against the CPU
//! backend scanning their `#[scan_op]` twins: an exact sum, non-commutative
//! affine maps over wrapping `u32` (bit for bit) and over `f32` (within
//! `Case::close`'s tolerance, justified in `gpu_suite`), and a padded
//! 24-byte struct (`Stats`); every kind, forward and in reverse; lengths 0,
//! 1, 31, 32, 33, a tile ± 1, many tiles ± 1 and past 10^6; flat with a
//! carry-out, by byte flags with the last segment's carry-out, by offsets
//! and rows with per-segment totals, by keys; as a matrix down its columns
//! and in two dimensions; in place; from a device
//! address another library owns (`RawElements`). Outputs are poisoned
//! before each scan and checked for guard bands after it; streams come
//! from `ctx.new_stream()` with cudarc's default event tracking and a
//! second stream alive. The refusals (a buffer of part of an element, a
//! misaligned one, an initial value of another size) leave the output
//! untouched. Without a GPU it prints one line and passes.
#![cfg(feature = "gpu")]

mod common;
use common::gpu::*;
use common::ops::*;
use common::seed::from_env_or_clock;
use common::segments::*;
use common::specs::every_named_spec;
use gpu_scan::cudarc::driver::{CudaStream, DevicePtrMut};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::{
    BuiltElement, DeviceOffsets, DeviceSegments, DynOperator, DynScanner, RawElements,
};
use gpu_scan::segmented::{HeadFlags, Segments};
use rand::SeedableRng;
use std::sync::Arc;

/// `op` as built from its twin `Op`'s text (and its struct's).
fn built<Op: ScanOp>() -> DynOperator {
    DynOperator::from_text(Op::OPERATOR_IR, &structs_of::<Op::Element>()).unwrap()
}

/// The built spec of `spec` (its initial value as the built element).
fn built_spec<E: Copy>(op: &DynOperator, spec: ScanSpec<E>) -> ScanSpec<BuiltElement> {
    let kind = match spec.kind {
        ScanKind::Inclusive => ScanKind::Inclusive,
        ScanKind::Exclusive => ScanKind::Exclusive,
        ScanKind::ExclusiveWithInit(e) => {
            ScanKind::ExclusiveWithInit(op.element(&bytes_of(&[e])).unwrap())
        }
        ScanKind::InclusiveWithInit(e) => {
            ScanKind::InclusiveWithInit(op.element(&bytes_of(&[e])).unwrap())
        }
        _ => unreachable!("the four kinds"),
    };
    ScanSpec::from(kind).with_direction(spec.direction)
}

fn check<Op: Case>(what: &str, gpu: &[Op::Element], cpu: &[Op::Element]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}");
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        assert!(Op::close(g, c), "{what}: element {i}: GPU {g:?}, CPU {c:?}");
    }
}

/// Every shape, kind and direction at every length, for `Op` built.
fn scans<Op: Case>(stream: &Arc<CudaStream>, seed: u64) -> usize {
    let op = built::<Op>();
    let size = op.element_size();
    let mut scanner = DynScanner::new(stream.context(), &op).unwrap();
    let mut rng = Rng64::seed_from_u64(seed);
    let init = Op::random(&mut rng);
    let t = Op::tile_items();
    let mut checked = 0;
    for n in [
        0,
        1,
        31,
        32,
        33,
        t - 1,
        t,
        t + 1,
        9 * t - 1,
        9 * t + 1,
        1_000_003,
    ] {
        let host: Vec<Op::Element> = (0..n).map(|_| Op::random(&mut rng)).collect();
        let input = stream.clone_htod(&bytes_of(&host)).unwrap();
        let flags = random_heads(n, Pattern::MeanLength(300.0), &mut rng);
        let offsets = offsets_of(&flags, &mut rng);
        let keys = keys_of(&flags, &mut rng);
        let row_length = [t + 1, 33, 1].into_iter().find(|&l| n % l == 0).unwrap();
        let flags_dev = stream.clone_htod(&flags).unwrap();
        let offsets_dev = stream.clone_htod(&offsets).unwrap();
        let keys_dev = stream.clone_htod(&keys).unwrap();
        let device_offsets = DeviceOffsets::check(stream, offsets_dev.as_view(), n).unwrap();
        for (name, spec) in every_named_spec(init, &[Direction::Forward, Direction::Reverse]) {
            let what = |shape: &str| format!("{} n={n} {name} {shape} (seed {seed})", Op::NAME);
            let bspec = built_spec(&op, spec);
            // Flat, with a carry-out.
            let mut want = vec![Op::IDENTITY; n];
            let mut want_carry = Op::IDENTITY;
            gpu_scan::cpu::scan::<Op>(spec.carry_out(&mut want_carry), &host, &mut want).unwrap();
            let mut out = poisoned_bytes(stream, n * size);
            let mut carry = poisoned_bytes(stream, size);
            {
                let inp = scanner.elements(&input).unwrap();
                let mut o = out.slice_mut(..n * size);
                let mut o = scanner.elements_mut(&mut o).unwrap();
                let mut c = carry.slice_mut(..size);
                let mut c = scanner.elements_mut(&mut c).unwrap();
                scanner
                    .scan(stream, bspec.carry_out(&mut c), &inp, &mut o)
                    .unwrap_or_else(|e| panic!("{}: {e}", what("flat")));
            }
            let got = from_bytes::<Op::Element>(&read_back(stream, &out, n * size, &what("flat")));
            check::<Op>(&what("flat"), &got, &want);
            let got = from_bytes::<Op::Element>(&read_back(stream, &carry, size, &what("carry")));
            check::<Op>(&what("flat carry-out"), &got, &[want_carry]);
            // Segment sources: byte flags with the last segment's
            // carry-out; offsets and rows with a total a segment; keys.
            type Source<'s> = (&'static str, Segments<'s>, DeviceSegments<'s>, bool);
            let sources: Vec<Source<'_>> = vec![
                (
                    "byte flags",
                    Segments::Flags(HeadFlags::Bytes(&flags)),
                    DeviceSegments::from(&flags_dev),
                    false,
                ),
                (
                    "offsets",
                    Segments::offsets(&offsets[..]),
                    DeviceSegments::from(&device_offsets),
                    true,
                ),
                (
                    "rows",
                    Segments::rows(row_length),
                    DeviceSegments::rows(row_length),
                    true,
                ),
                (
                    "keys",
                    Segments::keys(&keys[..]),
                    DeviceSegments::keys(&keys_dev),
                    false,
                ),
            ];
            for (label, host_segments, device_segments, totals) in sources {
                let what = what(label);
                let count = gpu_scan::segmented::segment_ranges(host_segments, n).len();
                let slots = if totals { count } else { 1 };
                let mut want = vec![Op::IDENTITY; n];
                let mut want_totals = vec![Op::IDENTITY; slots];
                if totals {
                    gpu_scan::segmented::scan::<Op>(
                        spec.segment_totals(&mut want_totals[..]),
                        host_segments,
                        &host,
                        &mut want,
                    )
                } else {
                    gpu_scan::segmented::scan::<Op>(
                        spec.carry_out(&mut want_totals[0]),
                        host_segments,
                        &host,
                        &mut want,
                    )
                }
                .unwrap();
                let mut out = poisoned_bytes(stream, n * size);
                let mut slot = poisoned_bytes(stream, slots * size);
                {
                    let inp = scanner.elements(&input).unwrap();
                    let mut o = out.slice_mut(..n * size);
                    let mut o = scanner.elements_mut(&mut o).unwrap();
                    let mut s = slot.slice_mut(..slots * size);
                    let mut s = scanner.elements_mut(&mut s).unwrap();
                    let spec = bspec.segments(device_segments);
                    let done = if totals {
                        scanner.scan(stream, spec.segment_totals(&mut s), &inp, &mut o)
                    } else {
                        scanner.scan(stream, spec.carry_out(&mut s), &inp, &mut o)
                    };
                    done.unwrap_or_else(|e| panic!("{what}: {e}"));
                }
                let got = from_bytes::<Op::Element>(&read_back(stream, &out, n * size, &what));
                check::<Op>(&what, &got, &want);
                let got = from_bytes::<Op::Element>(&read_back(stream, &slot, slots * size, &what));
                check::<Op>(&format!("{what}, totals"), &got, &want_totals);
            }
            checked += 5;
        }
        // A matrix of rows of `row_length`: down its columns, and in two
        // dimensions.
        if n > 0 {
            for (name, spec) in every_named_spec(init, &[Direction::Forward, Direction::Reverse]) {
                for two_d in [false, true] {
                    let what = format!(
                        "{} n={n} {name} {} of rows of {row_length} (seed {seed})",
                        Op::NAME,
                        if two_d { "summed area" } else { "columns" }
                    );
                    let mut want = vec![Op::IDENTITY; n];
                    if two_d {
                        gpu_scan::summed_area::scan::<Op>(spec, row_length, &host, &mut want)
                    } else {
                        gpu_scan::columns::scan::<Op>(spec, row_length, &host, &mut want)
                    }
                    .unwrap();
                    let mut out = poisoned_bytes(stream, n * size);
                    {
                        let inp = scanner.elements(&input).unwrap();
                        let mut o = out.slice_mut(..n * size);
                        let mut o = scanner.elements_mut(&mut o).unwrap();
                        let bspec = built_spec(&op, spec);
                        let done = if two_d {
                            scanner.scan(stream, bspec.summed_area(row_length), &inp, &mut o)
                        } else {
                            scanner.scan(stream, bspec.columns(row_length), &inp, &mut o)
                        };
                        done.unwrap_or_else(|e| panic!("{what}: {e}"));
                    }
                    let got = from_bytes::<Op::Element>(&read_back(stream, &out, n * size, &what));
                    check::<Op>(&what, &got, &want);
                    checked += 1;
                }
            }
        }
        // In place, and at an address another library owns.
        let spec = ScanSpec::from(ScanKind::Exclusive).with_direction(Direction::Reverse);
        let mut want = vec![Op::IDENTITY; n];
        gpu_scan::cpu::scan::<Op>(spec, &host, &mut want).unwrap();
        let mut data = stream.clone_htod(&bytes_of(&host)).unwrap();
        {
            let mut d = scanner.elements_mut(&mut data).unwrap();
            scanner
                .scan_in_place(stream, built_spec(&op, spec), &mut d)
                .unwrap();
        }
        let got = from_bytes::<Op::Element>(&stream.clone_dtoh(&data).unwrap());
        check::<Op>(&format!("{} n={n} in place", Op::NAME), &got, &want);
        let mut data = stream.clone_htod(&bytes_of(&host)).unwrap();
        {
            let (address, _record) = data.device_ptr_mut(stream);
            // SAFETY: `data`'s own allocation, alive and used on `stream`
            // until the copy back below.
            let mut raw = unsafe { RawElements::new(&op, address, n * size, stream) }.unwrap();
            scanner
                .scan_in_place(stream, built_spec(&op, spec), &mut raw)
                .unwrap();
        }
        let got = from_bytes::<Op::Element>(&stream.clone_dtoh(&data).unwrap());
        check::<Op>(&format!("{} n={n} raw, in place", Op::NAME), &got, &want);
        checked += 2;
    }
    checked
}

/// Refusals, each leaving the output poisoned.
fn refusals<Op: Case>(stream: &Arc<CudaStream>) {
    let op = built::<Op>();
    let size = op.element_size();
    let mut scanner = DynScanner::new(stream.context(), &op).unwrap();
    let n = 1000;
    let input = stream.alloc_zeros::<u8>(n * size + 16).unwrap();
    let mut out = poisoned_bytes(stream, n * size + 16);
    // Part of an element.
    let part = input.slice(..n * size - 1);
    assert!(matches!(
        scanner.elements(&part),
        Err(ScanError::ElementBuffer { .. })
    ));
    if op.element_align() > 1 {
        // Whole elements at a misaligned address.
        let skewed = input.slice(1..1 + n * size);
        let inp = scanner.elements(&skewed).unwrap();
        let mut o = out.slice_mut(..n * size);
        let mut o = scanner.elements_mut(&mut o).unwrap();
        let e = scanner
            .scan(stream, ScanKind::Inclusive, &inp, &mut o)
            .unwrap_err();
        assert!(
            matches!(
                e,
                ScanError::ElementBuffer {
                    what: "the input",
                    ..
                }
            ),
            "{e}"
        );
    }
    // An initial value of another operator's size.
    let other = DynOperator::from_text(<SumU8 as ScanOp>::OPERATOR_IR, &[]).unwrap();
    let init = other.element(&[1]).unwrap();
    let whole = input.slice(..n * size);
    let inp = scanner.elements(&whole).unwrap();
    let mut o = out.slice_mut(..n * size);
    let mut o = scanner.elements_mut(&mut o).unwrap();
    let e = scanner
        .scan(stream, ScanKind::ExclusiveWithInit(init), &inp, &mut o)
        .unwrap_err();
    assert!(
        matches!(
            e,
            ScanError::ElementBuffer {
                what: "the initial value",
                ..
            }
        ),
        "{e}"
    );
    let host = stream.clone_dtoh(&out).unwrap();
    assert!(host.iter().all(|&b| b == 0xA5), "a refused scan wrote");
}

#[test]
fn built_operators_scan_as_their_twins() {
    let Some(ctx) = open_gpu("gpu_built") else {
        return;
    };
    let _shared = gpu_shared();
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap(); // a second stream alive
    let seed = from_env_or_clock("GPU_BUILT_SEED");
    println!("gpu_built: seed {seed} (GPU_BUILT_SEED)");
    let mut checked = 0;
    checked += scans::<SumU32>(&stream, seed);
    checked += scans::<AffineU32>(&stream, seed ^ 1);
    checked += scans::<Affine>(&stream, seed ^ 2);
    checked += scans::<Stats>(&stream, seed ^ 3);
    println!("gpu_built: {checked} scans checked");
}

/// A commutative built sum's two-dimensional scans, which read the matrix
/// in tiles, against the CPU's.
#[test]
fn a_commutative_built_operator_scans_matrices_in_tiles() {
    let Some(ctx) = open_gpu("gpu_built") else {
        return;
    };
    let _shared = gpu_shared();
    let stream = ctx.new_stream().unwrap();
    let seed = from_env_or_clock("GPU_BUILT_SEED") ^ 0x2d;
    println!("gpu_built: seed {seed} (GPU_BUILT_SEED)");
    let op = built::<SumU32>().commutative(true);
    assert!(op.is_commutative());
    let mut scanner = DynScanner::new(&ctx, &op).unwrap();
    let mut rng = Rng64::seed_from_u64(seed);
    for (rows, row_length) in [(1, 1), (3, 1000), (1000, 3), (777, 1025), (2048, 2049)] {
        let n = rows * row_length;
        let host: Vec<u32> = (0..n).map(|_| SumU32::random(&mut rng)).collect();
        let input = stream.clone_htod(&bytes_of(&host)).unwrap();
        for (name, spec) in every_named_spec(7u32, &[Direction::Forward, Direction::Reverse]) {
            let what = format!("{rows} x {row_length} {name} (seed {seed})");
            let mut want = vec![0u32; n];
            gpu_scan::summed_area::scan::<SumU32>(spec, row_length, &host, &mut want).unwrap();
            let mut out = poisoned_bytes(&stream, n * 4);
            {
                let inp = scanner.elements(&input).unwrap();
                let mut o = out.slice_mut(..n * 4);
                let mut o = scanner.elements_mut(&mut o).unwrap();
                scanner
                    .scan(
                        &stream,
                        built_spec(&op, spec).summed_area(row_length),
                        &inp,
                        &mut o,
                    )
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            let got = from_bytes::<u32>(&read_back(&stream, &out, n * 4, &what));
            assert_eq!(got, want, "{what}");
        }
    }
}

#[test]
fn built_operators_refuse_bad_buffers() {
    let Some(ctx) = open_gpu("gpu_built") else {
        return;
    };
    let _shared = gpu_shared();
    let stream = ctx.new_stream().unwrap();
    refusals::<Affine>(&stream);
    refusals::<Stats>(&stream);
}
