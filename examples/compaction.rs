//! Compaction, partition (two- and three-way), unique, run-length encoding, non-trivial runs and
//! reduce-by-key on the GPU (`GpuSelect`), each checked against the CPU backend's function
//! of the same name; without a usable GPU, the CPU alone.
//!
//! `cargo run --release --example compaction`
//!
//! The data: a day of sensor readings, one a second (86,400 of them, times
//! `DAYS`), each a sensor id that changes now and then and a reading. We
//! keep the readings over a threshold, split them from the rest (and the
//! rest into the low ones and the others), find the
//! runs of one sensor (and those of two readings or more), and compose each
//! run's calibration maps (affine
//! maps over wrapping `u32`, in order: not commutative).

use gpu_scan::prelude::*;
use gpu_scan::select::{self as cpu, Rejected};

const DAYS: usize = 20;

/// Readings over the threshold.
#[scan_predicate(element = u32, keep = |r| r > 3_000_000_000)]
struct High;

/// Readings under a lower threshold.
#[scan_predicate(element = u32, keep = |r| r < 1_000_000_000)]
struct Low;

/// Readings of one sensor.
#[scan_equality(element = u32, eq = |a, b| a == b)]
struct SameSensor;

/// A calibration map v ↦ a·v + b (mod 2^32); `x ∘ y` applies x, then y.
#[scan_op(identity = Calibration { a: 1, b: 0 }, op = |x, y| Calibration { a: x.a * y.a, b: y.a * x.b + y.b })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Calibration {
    a: u32,
    b: u32,
}

fn main() {
    let n = 86_400 * DAYS;
    let mut state = 0x5e05_0123_u64;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut sensor = 0u32;
    let sensors: Vec<u32> = (0..n)
        .map(|_| {
            if next() % 60 == 0 {
                sensor = (next() % 16) as u32;
            }
            sensor
        })
        .collect();
    let readings: Vec<u32> = (0..n).map(|_| next() as u32).collect();
    let maps: Vec<Calibration> = (0..n)
        .map(|_| Calibration {
            a: next() as u32 | 1,
            b: next() as u32,
        })
        .collect();

    // The CPU backend: the oracle.
    let mut high = vec![0; n];
    let kept = cpu::select_if::<High>(&readings, &mut high).unwrap();
    let mut parts = vec![0; n];
    cpu::partition_if::<High>(&readings, &mut parts, Rejected::InOrder).unwrap();
    let mut bands = vec![0; n];
    let (_, low) = cpu::partition_three::<High, Low>(&readings, &mut bands).unwrap();
    let mut heads = vec![0; n];
    let mut lengths = vec![0u64; n];
    let runs = cpu::run_length_encode::<SameSensor>(&sensors, &mut heads, &mut lengths).unwrap();
    let mut starts = vec![0u64; n];
    let mut long_lengths = vec![0u64; n];
    let long =
        cpu::non_trivial_runs::<SameSensor>(&sensors, &mut starts, &mut long_lengths).unwrap();
    let mut keys = vec![0; n];
    let mut composed = vec![Calibration::IDENTITY; n];
    cpu::reduce_by_key::<SameSensor, Calibration>(&sensors, &maps, &mut keys, &mut composed)
        .unwrap();
    println!(
        "{n} readings: {kept} over the threshold, {low} under the lower one, {runs} runs of one sensor (the longest {} s, {long} of two readings or more)",
        lengths[..runs].iter().max().unwrap()
    );

    match gpu_scan::scan_runtime::open_device(0) {
        Ok(ctx) => on_the_gpu(
            &ctx,
            &readings,
            &sensors,
            &maps,
            (&high[..kept], &parts, (&bands, low)),
            (&heads[..runs], &lengths[..runs], &composed[..runs]),
            (&starts[..long], &long_lengths[..long]),
        ),
        Err(e) => println!("no usable GPU ({e}): the CPU backend alone"),
    }
}

/// The same on the GPU, on a stream of the caller's context, compared with
/// the CPU's results.
fn on_the_gpu(
    ctx: &std::sync::Arc<gpu_scan::cudarc::driver::CudaContext>,
    readings: &[u32],
    sensors: &[u32],
    maps: &[Calibration],
    (high, parts, (bands, low)): (&[u32], &[u32], (&[u32], usize)),
    (heads, lengths, composed): (&[u32], &[u64], &[Calibration]),
    (starts, long_lengths): (&[u64], &[u64]),
) {
    let n = readings.len();
    let stream = ctx.new_stream().unwrap();
    let d_readings = stream.clone_htod(readings).unwrap();
    let d_sensors = stream.clone_htod(sensors).unwrap();
    let d_maps = stream.clone_htod(maps).unwrap();
    let mut out = stream.alloc_zeros::<u32>(n).unwrap();
    let mut lengths_out = stream.alloc_zeros::<u64>(n).unwrap();
    let mut maps_out = stream.alloc_zeros::<Calibration>(n).unwrap();
    let mut count = stream.alloc_zeros::<u64>(1).unwrap();
    let mut select = GpuSelect::new(ctx).unwrap();
    let count_of = |count: &gpu_scan::cudarc::driver::CudaSlice<u64>| {
        stream.clone_dtoh(count).unwrap()[0] as usize
    };

    select
        .select_if::<High>(&stream, &d_readings, &mut out, &mut count)
        .unwrap();
    assert_eq!(count_of(&count), high.len());
    assert_eq!(stream.clone_dtoh(&out).unwrap()[..high.len()], *high);
    select
        .partition_if::<High>(
            &stream,
            &d_readings,
            &mut out,
            Rejected::InOrder,
            &mut count,
        )
        .unwrap();
    assert_eq!(stream.clone_dtoh(&out).unwrap(), parts);
    let mut band_counts = stream.alloc_zeros::<u64>(2).unwrap();
    select
        .partition_three::<High, Low>(&stream, &d_readings, &mut out, &mut band_counts)
        .unwrap();
    assert_eq!(
        stream.clone_dtoh(&band_counts).unwrap(),
        [high.len() as u64, low as u64]
    );
    assert_eq!(stream.clone_dtoh(&out).unwrap(), bands);
    select
        .run_length_encode::<SameSensor>(
            &stream,
            &d_sensors,
            &mut out,
            &mut lengths_out,
            &mut count,
        )
        .unwrap();
    let runs = count_of(&count);
    assert_eq!(runs, heads.len());
    assert_eq!(stream.clone_dtoh(&out).unwrap()[..runs], *heads);
    assert_eq!(stream.clone_dtoh(&lengths_out).unwrap()[..runs], *lengths);
    let mut starts_out = stream.alloc_zeros::<u64>(n).unwrap();
    select
        .non_trivial_runs::<SameSensor>(
            &stream,
            &d_sensors,
            &mut starts_out,
            &mut lengths_out,
            &mut count,
        )
        .unwrap();
    let long = count_of(&count);
    assert_eq!(long, starts.len());
    assert_eq!(stream.clone_dtoh(&starts_out).unwrap()[..long], *starts);
    assert_eq!(
        stream.clone_dtoh(&lengths_out).unwrap()[..long],
        *long_lengths
    );
    select
        .reduce_by_key::<SameSensor, Calibration>(
            &stream,
            &d_sensors,
            &d_maps,
            &mut out,
            &mut maps_out,
            &mut count,
        )
        .unwrap();
    assert_eq!(count_of(&count), runs);
    assert_eq!(stream.clone_dtoh(&maps_out).unwrap()[..runs], *composed);
    println!(
        "the GPU's select, partitions (two- and three-way), run-length encoding, non-trivial runs and reduce-by-key match the CPU's"
    );
}
