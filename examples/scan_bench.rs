//! The scan benchmark: `u32` sum, `f32` max, the affine `{a, b: f32}`
//! operator, a mixed three-field struct, a segmented `u32` sum (segments
//! of mean length 1000, bit flags), the same segments given by offsets and
//! by `u32` keys, and power-law segments by offsets, at 2^16, 2^20, 2^24
//! and 2^28 elements, side by side with CUB on the same inputs (its sum by
//! key for the segments of mean 1000; none for the power law).
//!
//! `scan_bench [DIR]`: DIR holds what `cub/scan_bench.cu` wrote there in the
//! same run (`cub-results.txt` and the sampled outputs); without it the CUB
//! columns stay empty. Both programs draw their inputs from the same
//! stateless generator, so they scan the same data.
//!
//! Each scan is timed as the median of 25 calls bracketed by CUDA events
//! after 3 warm-ups, with a device-to-device copy of the input timed the
//! same way in the same run. Columns: time, GB/s of the bytes that must
//! move (input read once, output written once, flags read once), that rate
//! as a percentage of the copy's, CUB's time and percentage, CUB's time
//! over ours, and whether the outputs agree: integers exactly (a checksum of
//! the whole output and 1024 sampled elements), floats at the 1024 sampled
//! elements within a tolerance given per case. Before timing, every output
//! is checked against the CPU backend at the sampled elements.
//!
//! Reverse inclusive scans of `u32` sum and affine at 2^24 and 2^28 are
//! timed beside the forward ones on the same input (the default path, and
//! the single pass with look-back for reference).
//!
//! Wide elements (`SCAN_BENCH_WIDE=1` runs this table alone): affine maps
//! of a vector, 4 to 256 bytes, beside `cub/wide_bench.cu`; `=paths` times
//! each path at 2^24 and 2^26 instead, `=all` both (`bench/wide.rs`).
//!
//! Paths by length (`SCAN_BENCH_PATHS_SWEEP=1` runs this table alone):
//! `u32` sum, affine and `u32` rows of 4096 from 2^22 to 2^28 elements in
//! half-octaves, on `Auto`, the pipelined and the look-back pass
//! (`bench/paths.rs`).
//!
//! Carry-outs (`SCAN_BENCH_CARRY=1` runs this table alone): exclusive
//! scans of `u32` sum and affine, and the segmented case by bit flags, at
//! 2^16 to 2^28, each on the default path and the look-back single pass,
//! timed with and without a carry-out slot, alternately (three medians of
//! each, the smallest kept), with the carry-out checked against the CPU;
//! and exclusive sums by offsets (mean length 1000) and by rows of 1000
//! with and without one total per segment, and by keys (the same
//! segments) with and without counted totals, the totals checked likewise.
//!
//! Deterministic scans (`SCAN_BENCH_DETERMINISTIC=1` runs this table
//! alone): `f32` sums and affine maps on the default path and with
//! `Tuning::deterministic`, at 2^24 to 2^28 (`bench/deterministic.rs`).
//!
//! `SCAN_BENCH_MAIN_ONLY=1` prints the main table alone, and
//! `SCAN_BENCH_LOG2=16,20` restricts it to those sizes. `SCAN_BENCH_HOST=1`
//! adds, for each plain case, where a call's time goes: microseconds per
//! call on the host (enqueueing alone) and per call with 100 calls queued
//! back to back (the GPU's own time where the host keeps ahead).
//!
//! A second table sweeps tile shapes of the single passes (`u32` sum,
//! affine, and the pipelined pass against the look-back for the 24-byte
//! struct) at 2^24 and 2^28; a third times `u32` sum and affine at 2^28
//! between two inputs and three outputs (the spread over buffer
//! placements). Prints "no GPU" and exits 0 without one.

use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr, ValidAsZeroBits,
};
use gpu_scan::scan_runtime::{
    open_device, DeviceHeadFlags, DeviceKeys, DeviceOffsets, DeviceSegments, ScanPath,
};
use rayon::prelude::*;
use std::sync::Arc;

#[path = "bench/deterministic.rs"]
mod deterministic;
#[path = "bench/paths.rs"]
mod paths;
#[path = "common/timing.rs"]
mod timing;
#[path = "bench/wide.rs"]
mod wide;
use timing::time_ms;

/// The generator shared with `cub/scan_bench.cu`: element i's 64 random bits.
fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add((i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
const SEED: u64 = 0x5ca9_b3e7;
const MEAN_SEGMENT: u32 = 1000;

/// A 24-bit integer in [-2^23, 2^23), exact as an `f32`.
fn signed24(bits: u64) -> f32 {
    ((bits & 0xff_ffff) as i32 - (1 << 23)) as f32
}

#[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
struct SumU32;

#[scan_op(element = f32, identity = f32::NEG_INFINITY, op = |a, b| a.max(b))]
struct MaxF32;

/// x ↦ a·x + b; `x ∘ y` applies x first.
#[scan_op(identity = Affine { a: 1.0, b: 0.0 }, op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Affine {
    a: f32,
    b: f32,
}

/// Count, sum and max: three field types in one 24-byte element.
#[scan_op(
    identity = Stats { count: 0, sum: 0.0, max: f32::NEG_INFINITY },
    op = |x, y| Stats { count: x.count + y.count, sum: x.sum + y.sum, max: x.max.max(y.max) }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stats {
    count: u32,
    sum: f64,
    max: f32,
}

/// One benchmark case: an operator, its inputs and how outputs compare.
trait Case: ScanOp
where
    Self::Element: DeviceRepr + ValidAsZeroBits + Send + Sync,
{
    /// The name CUB's results use.
    const CUB_NAME: &'static str;
    /// The generator's seed offset (the case's index in cub/scan_bench.cu).
    const INDEX: u64;
    /// Element i of the input.
    fn element(x: u64) -> Self::Element;
    /// Whether two outputs agree (`Self::Element`s at the same index).
    fn agree(a: &Self::Element, b: &Self::Element) -> bool;
    /// Whether the whole output is checksummed (u32 outputs).
    const CHECKSUM: bool = false;
}

impl Case for SumU32 {
    const CUB_NAME: &'static str = "u32-sum";
    const INDEX: u64 = 0;
    fn element(x: u64) -> u32 {
        (x >> 32) as u32
    }
    fn agree(a: &u32, b: &u32) -> bool {
        a == b
    }
    const CHECKSUM: bool = true;
}

impl Case for MaxF32 {
    const CUB_NAME: &'static str = "f32-max";
    const INDEX: u64 = 1;
    fn element(x: u64) -> f32 {
        signed24(x >> 40)
    }
    // A maximum is one of the inputs whatever the order: exact.
    fn agree(a: &f32, b: &f32) -> bool {
        a.to_bits() == b.to_bits()
    }
}

impl Case for Affine {
    const CUB_NAME: &'static str = "affine";
    const INDEX: u64 = 2;
    fn element(x: u64) -> Affine {
        Affine {
            a: signed24(x >> 40) / 8_388_608.0,
            b: signed24(x) / 8_388_608.0,
        }
    }
    // |a| < 1: the composed maps contract, so the b of a prefix is a sum of
    // O(1) terms with geometrically shrinking weights and stays O(1). Two
    // association orders (and CUB's FMA contraction) round differently;
    // each rounding is 2^-24 relative and the contraction keeps the
    // accumulated difference to a few ulps of an O(1) value: 1e-5 absolute
    // plus 1e-4 relative leaves a wide margin. The a of a long prefix
    // underflows to 0 in both.
    fn agree(x: &Affine, y: &Affine) -> bool {
        let close = |p: f32, q: f32| (p - q).abs() <= 1e-5 + 1e-4 * p.abs().max(q.abs());
        close(x.a, y.a) && close(x.b, y.b)
    }
}

impl Case for Stats {
    const CUB_NAME: &'static str = "stats";
    const INDEX: u64 = 3;
    fn element(x: u64) -> Stats {
        Stats {
            count: (x & 3) as u32,
            sum: (x >> 40) as f64 / 16_777_216.0,
            max: signed24(x >> 8),
        }
    }
    // Counts and maxima are exact; sums of at most 2^28 values in [0, 1)
    // carry a relative error of at most ~2^28 · 2^-53 ≈ 3e-8 in either
    // order: 1e-7 relative.
    fn agree(x: &Stats, y: &Stats) -> bool {
        x.count == y.count
            && x.max.to_bits() == y.max.to_bits()
            && (x.sum - y.sum).abs() <= 1e-7 * x.sum.abs().max(y.sum.abs())
    }
}

/// The 1024 sampled indices, as cub/scan_bench.cu computes them.
fn sample_indices(n: usize) -> Vec<usize> {
    (0..1024).map(|k| k * (n - 1) / 1023).collect()
}

/// Σ out[i]·(2i+1) mod 2^64, as cub/scan_bench.cu computes it.
fn checksum(out: &[u32]) -> u64 {
    out.par_iter()
        .enumerate()
        .map(|(i, &v)| (v as u64).wrapping_mul(2 * i as u64 + 1))
        .reduce(|| 0, u64::wrapping_add)
}

/// CUB's line for a case and size: (ms, copy ms, checksum) and its samples.
struct CubResult<T> {
    ms: f64,
    checksum: u64,
    samples: Vec<T>,
}

/// CUB's time and checksum (the last column, a count for some cases) for
/// case `name` at 2^log_n, from `dir/cub-results.txt`.
fn cub_line(dir: Option<&str>, name: &str, log_n: u32) -> Option<(f64, u64)> {
    let text = std::fs::read_to_string(format!("{}/cub-results.txt", dir?)).ok()?;
    let line = text.lines().find(|l| {
        let mut w = l.split_whitespace();
        w.next() == Some(name) && w.next() == Some(&log_n.to_string())
    })?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let ms: f64 = words.get(2)?.parse().ok()?;
    let checksum = u64::from_str_radix(words.get(4)?.trim_start_matches("0x"), 16).ok()?;
    Some((ms, checksum))
}

fn cub_result<T: Copy>(dir: Option<&str>, name: &str, log_n: u32) -> Option<CubResult<T>> {
    let (ms, checksum) = cub_line(dir, name, log_n)?;
    let dir = dir?;
    let bytes = std::fs::read(format!("{dir}/cub-{name}-{log_n}.bin")).ok()?;
    let size = std::mem::size_of::<T>();
    if bytes.len() != 1024 * size {
        return None;
    }
    let samples = bytes
        .chunks_exact(size)
        // SAFETY: T is a plain #[repr(C)] element written by the CUB program
        // with the same layout; read_unaligned copies it out of the byte buffer.
        .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<T>()) })
        .collect();
    Some(CubResult {
        ms,
        checksum,
        samples,
    })
}

/// One printed row.
struct Row {
    case: &'static str,
    log_n: u32,
    ms: f64,
    gbs: f64,
    percent_of_copy: f64,
    cub_ms: Option<f64>,
    cub_percent: Option<f64>,
    same: &'static str,
}

fn print_header() {
    println!(
        "{:<16} {:>5} {:>9} {:>7} {:>6} {:>9} {:>6} {:>8}  output",
        "case", "n", "ms", "GB/s", "%copy", "CUB ms", "CUB %", "CUB/us"
    );
}

fn print_row(r: &Row) {
    let opt =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    println!(
        "{:<16} {:>5} {:>9.4} {:>7.0} {:>5.1}% {:>9} {:>5}% {:>8}  {}",
        r.case,
        format!("2^{}", r.log_n),
        r.ms,
        r.gbs,
        r.percent_of_copy,
        opt(r.cub_ms, 4),
        opt(r.cub_percent, 1),
        opt(r.cub_ms.map(|c| c / r.ms), 2),
        r.same
    );
}

/// `Op`'s `n` input elements, as `cub/scan_bench.cu` draws them.
fn input_of<Op: Case>(n: usize) -> Vec<Op::Element>
where
    Op::Element: DeviceRepr + ValidAsZeroBits + Send + Sync,
{
    let seed = SEED + Op::INDEX;
    (0..n as u64)
        .into_par_iter()
        .map(|i| Op::element(mix(seed, i)))
        .collect()
}

/// Uploads the input of `Op` at 2^log_n, checks the scan against the CPU at
/// the sampled indices, times it and the copy, and compares with CUB.
fn bench<Op: Case>(stream: &Arc<CudaStream>, cub_dir: Option<&str>, log_n: u32) -> Row
where
    Op::Element: DeviceRepr + ValidAsZeroBits + Send + Sync,
{
    let n = 1usize << log_n;
    let host = input_of::<Op>(n);
    let mut expected = vec![Op::IDENTITY; n];
    gpu_scan::cpu::par_scan::<Op>(ScanKind::Inclusive, &host, &mut expected).unwrap();
    let input = stream.clone_htod(&host).unwrap();
    drop(host);
    let mut scanner = timing::bench_scanner::<Op>(stream);
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    scanner.inclusive(stream, &input, &mut output).unwrap();
    let ours = stream.clone_dtoh(&output).unwrap();
    let samples = sample_indices(n);
    let cpu_ok = samples.iter().all(|&i| Op::agree(&ours[i], &expected[i]));
    drop(expected);
    let ms = time_ms(stream, || {
        scanner.inclusive(stream, &input, &mut output).unwrap()
    }) as f64;
    if std::env::var("SCAN_BENCH_HOST").is_ok_and(|v| v == "1") {
        let (host_us, queued_us) = timing::host_and_stream_us(stream, || {
            scanner.inclusive(stream, &input, &mut output).unwrap()
        });
        println!(
            "host {} 2^{log_n}: {host_us:.2} us per call on the host, {queued_us:.2} us per call queued",
            Op::CUB_NAME
        );
    }
    let copy_ms = {
        let mut copy: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
    };
    let bytes = 2.0 * (n * std::mem::size_of::<Op::Element>()) as f64;
    let cub = cub_result::<Op::Element>(cub_dir, Op::CUB_NAME, log_n);
    let same = match (&cub, cpu_ok) {
        (_, false) => "DIFFERS FROM CPU",
        (None, true) => "cpu ok, no CUB",
        (Some(c), true) => {
            let sampled = samples
                .iter()
                .zip(&c.samples)
                .all(|(&i, theirs)| Op::agree(&ours[i], theirs));
            let whole = !Op::CHECKSUM || {
                // SAFETY: CHECKSUM is set only for u32 elements.
                let words = unsafe { std::slice::from_raw_parts(ours.as_ptr().cast::<u32>(), n) };
                checksum(words) == c.checksum
            };
            if sampled && whole {
                "same as CUB"
            } else {
                "DIFFERS FROM CUB"
            }
        }
    };
    Row {
        case: Op::CUB_NAME,
        log_n,
        ms,
        gbs: bytes / (ms * 1e6),
        percent_of_copy: 100.0 * copy_ms / ms,
        cub_ms: cub.as_ref().map(|c| c.ms),
        cub_percent: cub.as_ref().map(|c| 100.0 * copy_ms / c.ms),
        same,
    }
}

/// The segmented case's `n` values and heads (as `cub/scan_bench.cu`
/// draws them): a head on each element with probability 1/MEAN_SEGMENT,
/// and on element 0.
fn segmented_case(n: usize) -> (Vec<u32>, Vec<bool>) {
    let seed = SEED + 4;
    (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let x = mix(seed, i);
            ((x >> 32) as u32, i == 0 || (x as u32) % MEAN_SEGMENT == 0)
        })
        .unzip()
}

/// Heads as packed bits, element i at bit i % 32 of word i / 32.
fn pack_heads(heads: &[bool]) -> Vec<u32> {
    heads
        .par_chunks(32)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u32, |w, (i, &h)| w | (h as u32) << i)
        })
        .collect()
}

/// The segmented case: u32 sum with bit flags, against CUB's sum by key.
fn bench_segmented(stream: &Arc<CudaStream>, cub_dir: Option<&str>, log_n: u32) -> Row {
    let n = 1usize << log_n;
    let (values, heads) = segmented_case(n);
    let bits = pack_heads(&heads);
    drop(heads);
    let mut expected = vec![0u32; n];
    gpu_scan::segmented::par_scan::<SumU32>(
        ScanKind::Inclusive,
        gpu_scan::segmented::HeadFlags::bits(&bits, n),
        &values,
        &mut expected,
    )
    .unwrap();
    let d_values = stream.clone_htod(&values).unwrap();
    let d_bits = stream.clone_htod(&bits).unwrap();
    let mut scanner = timing::bench_scanner::<SumU32>(stream);
    let spec = ScanSpec::inclusive().segments(DeviceHeadFlags::bits(d_bits.as_view(), n));
    scanner.reserve(stream, spec, n).unwrap();
    let mut output = stream.alloc_zeros::<u32>(n).unwrap();
    scanner
        .scan(
            stream,
            ScanSpec::inclusive().segments(DeviceHeadFlags::bits(d_bits.as_view(), n)),
            &d_values,
            &mut output,
        )
        .unwrap();
    let ours = stream.clone_dtoh(&output).unwrap();
    let cpu_ok = ours == expected;
    let ms = time_ms(stream, || {
        scanner
            .scan(
                stream,
                ScanSpec::inclusive().segments(DeviceHeadFlags::bits(d_bits.as_view(), n)),
                &d_values,
                &mut output,
            )
            .unwrap()
    }) as f64;
    let copy_ms = {
        let mut copy = stream.alloc_zeros::<u32>(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&d_values, &mut copy).unwrap()) as f64
    };
    // Values in and out, flags in (one bit each).
    let bytes = 8.0 * n as f64 + n as f64 / 8.0;
    let copy_rate = 8.0 * n as f64 / copy_ms;
    let cub = cub_result::<u32>(cub_dir, "segmented-sum", log_n);
    let same = verdict_u32(cub.as_ref(), cpu_ok, &ours);
    Row {
        case: "segmented-sum",
        log_n,
        ms,
        gbs: bytes / (ms * 1e6),
        percent_of_copy: 100.0 * (bytes / ms) / copy_rate,
        cub_ms: cub.as_ref().map(|c| c.ms),
        // CUB reads keys instead of flags; measured against the same copy.
        cub_percent: cub.as_ref().map(|c| 100.0 * (bytes / c.ms) / copy_rate),
        same,
    }
}

/// The output column of a `u32` row: against the CPU, then CUB's sampled
/// outputs and checksum.
fn verdict_u32(cub: Option<&CubResult<u32>>, cpu_ok: bool, ours: &[u32]) -> &'static str {
    match (cub, cpu_ok) {
        (_, false) => "DIFFERS FROM CPU",
        (None, true) => "cpu ok, no CUB",
        (Some(c), true) => {
            let sampled = sample_indices(ours.len())
                .iter()
                .zip(&c.samples)
                .all(|(&i, &theirs)| ours[i] == theirs);
            if sampled && checksum(ours) == c.checksum {
                "same as CUB"
            } else {
                "DIFFERS FROM CUB"
            }
        }
    }
}

/// Segment offsets over `n` elements, a head on element `i` where
/// `mix(seed, i) % mean == 0` (and on 0), closed by `n`: the segmented
/// case's heads for `seed = SEED + 4` and `mean = MEAN_SEGMENT`.
fn random_offsets(seed: u64, n: usize, mean: u32) -> Vec<u32> {
    (0..n as u64)
        .into_par_iter()
        .filter(|&i| i == 0 || (mix(seed, i) as u32) % mean == 0)
        .map(|i| i as u32)
        .chain(rayon::iter::once(n as u32))
        .collect()
}

/// Offsets of `n` elements in segments of power-law lengths
/// (P(length > l) ~ l^-1.1, from 1 to the whole input: many short
/// segments among a few of millions; mean about 10).
fn power_law_offsets(seed: u64, n: usize) -> Vec<u32> {
    let mut v = vec![0u32];
    let mut at = 0usize;
    let mut k = 0u64;
    while at < n {
        let u = ((mix(seed ^ 0x9e37, k) >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let length = (u.powf(-1.0 / 1.1) as usize).clamp(1, n);
        at = (at + length).min(n);
        v.push(at as u32);
        k += 1;
    }
    v
}

/// The heads of segments given by `offsets` over `n` elements as packed
/// bits (element i at bit i % 32 of word i / 32).
fn bits_of_offsets(offsets: &[u32], n: usize) -> Vec<u32> {
    let mut bits = vec![0u32; n.div_ceil(32)];
    for &o in &offsets[..offsets.len() - 1] {
        let o = o as usize;
        if o < n {
            bits[o / 32] |= 1 << (o % 32);
        }
    }
    bits
}

/// The values the cases by offsets scan: `n` pseudo-random `u32`s.
fn offsets_case_values(seed: u64, n: usize) -> Vec<u32> {
    (0..n as u64)
        .into_par_iter()
        .map(|i| (mix(seed, i) >> 32) as u32)
        .collect()
}

/// The CPU's inclusive `u32` sum of `values` by segment `offsets`.
fn sum_by_offsets(values: &[u32], offsets: &[u32]) -> Vec<u32> {
    let mut expected = vec![0u32; values.len()];
    gpu_scan::segmented::par_scan::<SumU32>(
        ScanKind::Inclusive,
        gpu_scan::segmented::Segments::offsets(offsets),
        values,
        &mut expected,
    )
    .unwrap();
    expected
}

/// Segments given by offsets (no flags in memory): the heads of the
/// segmented case (mean length 1000; CUB's sum by key over the same
/// segments is the comparator), or power-law lengths (P(length > l) ~
/// l^-1.1, from 1 to the whole input: many short segments among a few of
/// millions), u32 offsets. Percentages are of a copy of the values.
fn bench_offsets(
    stream: &Arc<CudaStream>,
    cub_dir: Option<&str>,
    log_n: u32,
    power_law: bool,
) -> Row {
    let n = 1usize << log_n;
    let seed = SEED + 4;
    let values = offsets_case_values(seed, n);
    let offsets: Vec<u32> = if power_law {
        power_law_offsets(seed, n)
    } else {
        // The segmented case's heads.
        random_offsets(seed, n, MEAN_SEGMENT)
    };
    let expected = sum_by_offsets(&values, &offsets);
    let d_values = stream.clone_htod(&values).unwrap();
    let d_offsets = stream.clone_htod(&offsets).unwrap();
    let checked = DeviceOffsets::check(stream, d_offsets.as_view(), n).unwrap();
    let mut scanner = timing::bench_scanner::<SumU32>(stream);
    scanner
        .reserve(stream, ScanSpec::inclusive().segments(&checked), n)
        .unwrap();
    let mut output = stream.alloc_zeros::<u32>(n).unwrap();
    scanner
        .scan(
            stream,
            ScanSpec::inclusive().segments(&checked),
            &d_values,
            &mut output,
        )
        .unwrap();
    let ours = stream.clone_dtoh(&output).unwrap();
    let cpu_ok = ours == expected;
    let ms = time_ms(stream, || {
        scanner
            .scan(
                stream,
                ScanSpec::inclusive().segments(&checked),
                &d_values,
                &mut output,
            )
            .unwrap()
    }) as f64;
    let copy_ms = {
        let mut copy = stream.alloc_zeros::<u32>(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&d_values, &mut copy).unwrap()) as f64
    };
    // The look-back single pass and the pipelined pass beside the default
    // path, on one line.
    scanner.set_tuning(scanner.tuning().with_path(ScanPath::SinglePass));
    let single_pass_ms = time_ms(stream, || {
        scanner
            .scan(
                stream,
                ScanSpec::inclusive().segments(&checked),
                &d_values,
                &mut output,
            )
            .unwrap()
    }) as f64;
    let single_pass_ok = stream.clone_dtoh(&output).unwrap() == expected;
    // And the pipelined pass.
    scanner.set_tuning(scanner.tuning().with_path(ScanPath::Pipelined));
    let pipelined_ms = time_ms(stream, || {
        scanner
            .scan(
                stream,
                ScanSpec::inclusive().segments(&checked),
                &d_values,
                &mut output,
            )
            .unwrap()
    }) as f64;
    let pipelined_ok = stream.clone_dtoh(&output).unwrap() == expected;
    let verdict = |ok: bool| if ok { "" } else { ", DIFFERS FROM CPU" };
    println!(
        "offsets {} 2^{log_n}: single pass {single_pass_ms:.4} ms, {:.1}% of copy{}; pipelined {pipelined_ms:.4} ms, {:.1}% of copy{}",
        if power_law { "power law" } else { "mean 1000" },
        100.0 * copy_ms / single_pass_ms,
        verdict(single_pass_ok),
        100.0 * copy_ms / pipelined_ms,
        verdict(pipelined_ok),
    );
    let bytes = 8.0 * n as f64 + 4.0 * offsets.len() as f64;
    let cub = if power_law {
        None
    } else {
        cub_result::<u32>(cub_dir, "segmented-sum", log_n)
    };
    let same = verdict_u32(cub.as_ref(), cpu_ok, &ours);
    Row {
        case: if power_law {
            "offsets-power-law"
        } else {
            "offsets-sum"
        },
        log_n,
        ms,
        gbs: bytes / (ms * 1e6),
        percent_of_copy: 100.0 * copy_ms / ms,
        cub_ms: cub.as_ref().map(|c| c.ms),
        cub_percent: cub.as_ref().map(|c| 100.0 * copy_ms / c.ms),
        same,
    }
}

/// Segments given by keys (no flags in memory): the segmented case's
/// heads as `u32` segment numbers, the keys CUB's sum by key reads, which
/// is the comparator on the same bytes (values in and out, keys in).
/// Percentages are of a copy of the values.
fn bench_keys(stream: &Arc<CudaStream>, cub_dir: Option<&str>, log_n: u32) -> Row {
    let n = 1usize << log_n;
    let (values, heads) = segmented_case(n);
    // CUB's keys: the inclusive sum of the heads.
    let keys: Vec<u32> = heads
        .iter()
        .scan(0u32, |s, &h| {
            *s = s.wrapping_add(h as u32);
            Some(*s)
        })
        .collect();
    drop(heads);
    let mut expected = vec![0u32; n];
    gpu_scan::segmented::par_scan::<SumU32>(
        ScanKind::Inclusive,
        gpu_scan::segmented::Segments::keys(&keys),
        &values,
        &mut expected,
    )
    .unwrap();
    let d_values = stream.clone_htod(&values).unwrap();
    let d_keys = stream.clone_htod(&keys).unwrap();
    let mut scanner = timing::bench_scanner::<SumU32>(stream);
    let mut output = stream.alloc_zeros::<u32>(n).unwrap();
    let keyed = || DeviceKeys::new(&d_keys);
    scanner
        .reserve(stream, ScanSpec::inclusive().segments(keyed()), n)
        .unwrap();
    scanner
        .scan(
            stream,
            ScanSpec::inclusive().segments(keyed()),
            &d_values,
            &mut output,
        )
        .unwrap();
    let ours = stream.clone_dtoh(&output).unwrap();
    let cpu_ok = ours == expected;
    let ms = time_ms(stream, || {
        scanner
            .scan(
                stream,
                ScanSpec::inclusive().segments(keyed()),
                &d_values,
                &mut output,
            )
            .unwrap()
    }) as f64;
    let copy_ms = {
        let mut copy = stream.alloc_zeros::<u32>(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&d_values, &mut copy).unwrap()) as f64
    };
    // The other paths beside the default one (the look-back single pass),
    // on one line.
    let mut others = String::new();
    for path in [ScanPath::Pipelined, ScanPath::ReduceThenScan] {
        scanner.set_tuning(scanner.tuning().with_path(path));
        let path_ms = time_ms(stream, || {
            scanner
                .scan(
                    stream,
                    ScanSpec::inclusive().segments(keyed()),
                    &d_values,
                    &mut output,
                )
                .unwrap()
        }) as f64;
        let ok = stream.clone_dtoh(&output).unwrap() == expected;
        others += &format!(
            ", {path:?} {path_ms:.4} ms, {:.1}% of copy{}",
            100.0 * copy_ms / path_ms,
            if ok { "" } else { " DIFFERS FROM CPU" }
        );
    }
    println!("keys 2^{log_n}: default {ms:.4} ms{others}");
    let bytes = 12.0 * n as f64;
    let cub = cub_result::<u32>(cub_dir, "segmented-sum", log_n);
    let same = verdict_u32(cub.as_ref(), cpu_ok, &ours);
    Row {
        case: "keys-sum",
        log_n,
        ms,
        gbs: bytes / (ms * 1e6),
        percent_of_copy: 100.0 * copy_ms / ms,
        cub_ms: cub.as_ref().map(|c| c.ms),
        cub_percent: cub.as_ref().map(|c| 100.0 * copy_ms / c.ms),
        same,
    }
}

/// The numbers the environment variable `name` lists, comma-separated
/// (`SCAN_BENCH_LOG2=24,28`), or `default` where it is unset. An entry
/// that is not a number stops the run, naming the variable.
fn env_numbers(name: &str, default: &[u32]) -> Vec<u32> {
    std::env::var(name).map_or(default.to_vec(), |v| {
        v.split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}: comma-separated numbers, not {v:?}"))
            })
            .collect()
    })
}

/// Whether segments by offsets would ever be faster on the look-back single
/// pass than on the pipelined one (`ScanPath::Auto` takes the pipelined
/// pass over offsets of any mean length): `u32` sums at 2^26 and 2^28
/// (`SCAN_BENCH_OFFSETS_LOG2=26`: one of them) over segments whose heads fall on each element with probability
/// 1/mean, and over power-law lengths (mean 0 in the table), both paths
/// timed and checked against the CPU. Beside them, the same heads as
/// packed bit flags on both paths: what the scan costs when nothing has to
/// find the heads, so that what finding them from offsets costs shows.
/// `SCAN_BENCH_OFFSETS_SWEEP=1` runs this alone; `SCAN_BENCH_OFFSETS_MEANS`
/// picks the means.
fn offsets_crossover(stream: &Arc<CudaStream>) -> bool {
    println!(
        "\nscan_bench: offsets crossover, u32 sum by u32 offsets and by the same heads in bit flags (ms, % of a copy of the values; Auto takes the pipelined pass at every mean; mean 0: power law)"
    );
    println!(
        "{:<5} {:>6} {:>10} {:>9} {:>6} {:>9} {:>6} {:>9} {:>6} {:>9} {:>6}  output",
        "n",
        "mean",
        "segments",
        "pipelined",
        "%copy",
        "1 pass",
        "%copy",
        "bits pip",
        "%copy",
        "bits 1p",
        "%copy"
    );
    let sizes = env_numbers("SCAN_BENCH_OFFSETS_LOG2", &[26, 28]);
    let mut all_ok = true;
    for log_n in sizes {
        let n = 1usize << log_n;
        let values: Vec<u32> = (0..n as u64)
            .into_par_iter()
            .map(|i| (mix(SEED + 7, i) >> 32) as u32)
            .collect();
        let d_values = stream.clone_htod(&values).unwrap();
        let copy_ms = {
            let mut copy = stream.alloc_zeros::<u32>(n).unwrap();
            time_ms(stream, || stream.memcpy_dtod(&d_values, &mut copy).unwrap()) as f64
        };
        let mut output = stream.alloc_zeros::<u32>(n).unwrap();
        let mut scanner = timing::bench_scanner::<SumU32>(stream);
        // SCAN_BENCH_OFFSETS_MEANS=0,2,1024: these means only.
        let means = env_numbers(
            "SCAN_BENCH_OFFSETS_MEANS",
            &[0, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 4096],
        );
        for mean in means {
            let offsets = if mean == 0 {
                power_law_offsets(SEED + 8, n)
            } else {
                random_offsets(SEED + 8, n, mean)
            };
            let expected = sum_by_offsets(&values, &offsets);
            let d_offsets = stream.clone_htod(&offsets).unwrap();
            let d_bits = stream.clone_htod(&bits_of_offsets(&offsets, n)).unwrap();
            let checked = DeviceOffsets::check(stream, d_offsets.as_view(), n).unwrap();
            let mut timed = [0.0f64; 4];
            let mut ok = true;
            for (slot, (bits, path)) in [false, true]
                .into_iter()
                .flat_map(|bits| [(bits, ScanPath::Pipelined), (bits, ScanPath::SinglePass)])
                .enumerate()
            {
                scanner.set_tuning(scanner.tuning().with_path(path));
                let mut run = || {
                    if bits {
                        let flags = DeviceHeadFlags::bits(d_bits.as_view(), n);
                        scanner.scan(
                            stream,
                            ScanSpec::inclusive().segments(flags),
                            &d_values,
                            &mut output,
                        )
                    } else {
                        scanner.scan(
                            stream,
                            ScanSpec::inclusive().segments(&checked),
                            &d_values,
                            &mut output,
                        )
                    }
                    .unwrap()
                };
                timed[slot] = time_ms(stream, &mut run) as f64;
                ok &= stream.clone_dtoh(&output).unwrap() == expected;
            }
            all_ok &= ok;
            let cells: String = timed
                .iter()
                .map(|ms| format!(" {ms:>9.4} {:>5.1}%", 100.0 * copy_ms / ms))
                .collect();
            println!(
                "2^{log_n:<3} {mean:>6} {:>10}{cells}  {}",
                offsets.len() - 1,
                if ok {
                    "same as CPU"
                } else {
                    "DIFFERS FROM CPU"
                }
            );
        }
    }
    all_ok
}

// Tile shapes for the look-back single pass in the sweep (its defaults are
// 256 threads × 16 items for 4-byte and × 12 for 8-byte elements; the
// default path, pipelined, has its own shape).
#[scan_op(element = u32, identity = 0, op = |a, b| a + b, block_threads = 128, items_per_thread = 16)]
struct SumT128I16;
#[scan_op(element = u32, identity = 0, op = |a, b| a + b, block_threads = 512, items_per_thread = 16)]
struct SumT512I16;
#[scan_op(element = u32, identity = 0, op = |a, b| a + b, block_threads = 256, items_per_thread = 24)]
struct SumT256I24;
#[scan_op(element = u32, identity = 0, op = |a, b| a + b, block_threads = 256, items_per_thread = 8)]
struct SumT256I8;
#[scan_op(element = u32, identity = 0, op = |a, b| a + b, block_threads = 128, items_per_thread = 32)]
struct SumT128I32;
#[scan_op(element = Affine, identity = Affine { a: 1.0, b: 0.0 }, op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b }, block_threads = 128, items_per_thread = 16)]
struct AffineT128I16;
#[scan_op(element = Affine, identity = Affine { a: 1.0, b: 0.0 }, op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b }, block_threads = 256, items_per_thread = 8)]
struct AffineT256I8;
#[scan_op(element = Affine, identity = Affine { a: 1.0, b: 0.0 }, op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b }, block_threads = 128, items_per_thread = 24)]
struct AffineT128I24;
#[scan_op(element = Affine, identity = Affine { a: 1.0, b: 0.0 }, op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b }, block_threads = 512, items_per_thread = 8)]
struct AffineT512I8;

/// Times one tile shape's single pass (and the default's reduce-then-scan
/// for reference) at 2^log_n on an input already on the device.
fn sweep<Op: ScanOp>(
    stream: &Arc<CudaStream>,
    label: &str,
    input: &CudaSlice<Op::Element>,
    copy_ms: f64,
    path: ScanPath,
) where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let mut scanner = timing::bench_scanner::<Op>(stream);
    scanner.set_tuning(scanner.tuning().with_path(path));
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(input.len()).unwrap();
    let ms = time_ms(stream, || {
        scanner.inclusive(stream, input, &mut output).unwrap()
    }) as f64;
    println!(
        "{label:<34} {:>5} {:>9.4} {:>5.1}%",
        format!("2^{}", input.len().trailing_zeros()),
        ms,
        100.0 * copy_ms / ms
    );
}

fn shape_sweep(stream: &Arc<CudaStream>) {
    println!("\nscan_bench: tile shapes (single pass unless noted), inclusive");
    println!(
        "{:<34} {:>5} {:>9} {:>6}",
        "operator, threads x items", "n", "ms", "%copy"
    );
    for log_n in [24u32, 28] {
        let n = 1usize << log_n;
        let words: Vec<u32> = (0..n as u64)
            .into_par_iter()
            .map(|i| (mix(SEED, i) >> 32) as u32)
            .collect();
        let input = stream.clone_htod(&words).unwrap();
        drop(words);
        let copy_ms = {
            let mut copy = stream.alloc_zeros::<u32>(n).unwrap();
            time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
        };
        sweep::<SumU32>(
            stream,
            "u32 sum pipelined 128x63 (default)",
            &input,
            copy_ms,
            ScanPath::Pipelined,
        );
        sweep::<SumU32>(
            stream,
            "u32 sum 256x16 look-back",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        sweep::<SumU32>(
            stream,
            "u32 sum 256x16 reduce-then-scan",
            &input,
            copy_ms,
            ScanPath::ReduceThenScan,
        );
        sweep::<SumT128I16>(
            stream,
            "u32 sum 128x16",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        sweep::<SumT512I16>(
            stream,
            "u32 sum 512x16",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        sweep::<SumT256I8>(
            stream,
            "u32 sum 256x8",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        sweep::<SumT256I24>(
            stream,
            "u32 sum 256x24",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        sweep::<SumT128I32>(
            stream,
            "u32 sum 128x32",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        drop(input);
        let maps: Vec<Affine> = (0..n as u64)
            .into_par_iter()
            .map(|i| Affine::element(mix(SEED + 2, i)))
            .collect();
        let input = stream.clone_htod(&maps).unwrap();
        drop(maps);
        let copy_ms = {
            let mut copy = stream.alloc_zeros::<Affine>(n).unwrap();
            time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
        };
        sweep::<Affine>(
            stream,
            "affine pipelined 128x31 (default)",
            &input,
            copy_ms,
            ScanPath::Pipelined,
        );
        sweep::<Affine>(
            stream,
            "affine 256x12 look-back",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        sweep::<Affine>(
            stream,
            "affine 256x12 reduce-then-scan",
            &input,
            copy_ms,
            ScanPath::ReduceThenScan,
        );
        sweep::<AffineT128I16>(
            stream,
            "affine 128x16",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        sweep::<AffineT128I24>(
            stream,
            "affine 128x24",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        sweep::<AffineT256I8>(
            stream,
            "affine 256x8",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        sweep::<AffineT512I8>(
            stream,
            "affine 512x8",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
        drop(input);
        // The 24-byte struct keeps its values apart from its status words:
        // the default takes the look-back for it.
        let stats: Vec<Stats> = (0..n as u64)
            .into_par_iter()
            .map(|i| Stats::element(mix(SEED + 3, i)))
            .collect();
        let input = stream.clone_htod(&stats).unwrap();
        drop(stats);
        let copy_ms = {
            let mut copy = stream.alloc_zeros::<Stats>(n).unwrap();
            time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
        };
        sweep::<Stats>(
            stream,
            "stats pipelined 128x9",
            &input,
            copy_ms,
            ScanPath::Pipelined,
        );
        sweep::<Stats>(
            stream,
            "stats 256x4 look-back (default)",
            &input,
            copy_ms,
            ScanPath::SinglePass,
        );
    }
}

/// The default scan of `Op` at 2^28 from each of two inputs (the same data,
/// two allocations) into each of three outputs, then with three other
/// scanners (other scratch): how much its time depends on where its buffers
/// lie. (The shape sweep's affine pipelined row has run
/// several percent slower than the main table's same scan.)
fn placement<Op: Case>(stream: &Arc<CudaStream>, label: &str)
where
    Op::Element: DeviceRepr + ValidAsZeroBits + Send + Sync,
{
    let n = 1usize << 28;
    let host: Vec<Op::Element> = (0..n as u64)
        .into_par_iter()
        .map(|i| Op::element(mix(SEED + Op::INDEX, i)))
        .collect();
    let inputs = [
        stream.clone_htod(&host).unwrap(),
        stream.clone_htod(&host).unwrap(),
    ];
    drop(host);
    let mut outputs: Vec<CudaSlice<Op::Element>> =
        (0..3).map(|_| stream.alloc_zeros(n).unwrap()).collect();
    let copy_ms = time_ms(stream, || {
        stream.memcpy_dtod(&inputs[0], &mut outputs[0]).unwrap()
    }) as f64;
    let mut scanner = timing::bench_scanner::<Op>(stream);
    let mut times = Vec::new();
    for input in &inputs {
        for output in outputs.iter_mut() {
            times
                .push(time_ms(stream, || scanner.inclusive(stream, input, output).unwrap()) as f64);
        }
    }
    // Three more scanners, alive together: their scratch (tile status) lies
    // in three other places.
    let mut scanners: Vec<GpuScanner<Op>> = (0..3)
        .map(|_| timing::bench_scanner::<Op>(stream))
        .collect();
    for scanner in scanners.iter_mut() {
        times.push(time_ms(stream, || {
            scanner
                .inclusive(stream, &inputs[0], &mut outputs[0])
                .unwrap()
        }) as f64);
    }
    let (fastest, slowest) = times
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let cells: Vec<String> = times.iter().map(|t| format!("{t:.4}")).collect();
    println!(
        "{label:<8} {}  copy {copy_ms:.4}  %copy {:.1}-{:.1}%",
        cells.join(" "),
        100.0 * copy_ms / slowest,
        100.0 * copy_ms / fastest
    );
}

/// u32 sum at short lengths: small tiles, full tiles, pipelined, reduce-then-scan, default.
fn small_inputs(stream: &Arc<CudaStream>) {
    println!("\nscan_bench: short inputs, u32 sum, inclusive");
    for log_n in [12u32, 14, 16, 17, 18, 20, 22, 23, 24] {
        let n = 1usize << log_n;
        let words: Vec<u32> = (0..n as u64).map(|i| (mix(SEED, i) >> 32) as u32).collect();
        let input = stream.clone_htod(&words).unwrap();
        let mut output = stream.alloc_zeros::<u32>(n).unwrap();
        let mut scanner = timing::bench_scanner::<SumU32>(stream);
        let mut line = format!("2^{log_n}:");
        for (label, path, small) in [
            ("small tiles", ScanPath::SinglePass, usize::MAX),
            ("full tiles", ScanPath::SinglePass, 0),
            ("pipelined", ScanPath::Pipelined, 0),
            ("reduce-then-scan", ScanPath::ReduceThenScan, 0),
            (
                "default",
                ScanPath::Auto,
                gpu_scan::Tuning::default().small_tile_limit,
            ),
        ] {
            scanner.set_tuning(
                scanner
                    .tuning()
                    .with_path(path)
                    .with_small_tile_limit(small),
            );
            let ms = time_ms(stream, || {
                scanner.inclusive(stream, &input, &mut output).unwrap()
            });
            line += &format!("  {label} {:.2} µs", ms * 1e3);
        }
        println!("{line}");
    }
}

/// Reverse (suffix) scans against forward ones on the same input and
/// scanner: the default forward scan, the forward single pass with
/// look-back (for reference), and the reverse inclusive scan on the
/// default path, checked against the CPU at the sampled indices; prints one row
/// and returns whether the output agreed.
fn reverse_rows<Op: Case>(stream: &Arc<CudaStream>, log_n: u32) -> bool
where
    Op::Element: DeviceRepr + ValidAsZeroBits + Send + Sync,
{
    let n = 1usize << log_n;
    let host = input_of::<Op>(n);
    let spec = ScanSpec::inclusive().reverse();
    let mut expected = vec![Op::IDENTITY; n];
    gpu_scan::cpu::par_scan::<Op>(spec, &host, &mut expected).unwrap();
    let input = stream.clone_htod(&host).unwrap();
    drop(host);
    let mut scanner = timing::bench_scanner::<Op>(stream);
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    scanner.scan(stream, spec, &input, &mut output).unwrap();
    let ours = stream.clone_dtoh(&output).unwrap();
    let ok = sample_indices(n)
        .iter()
        .all(|&i| Op::agree(&ours[i], &expected[i]));
    drop((ours, expected));
    let mut time = |path: ScanPath, spec: ScanSpec<Op::Element>| {
        scanner.set_tuning(scanner.tuning().with_path(path));
        time_ms(stream, || {
            scanner.scan(stream, spec, &input, &mut output).unwrap()
        }) as f64
    };
    let forward = time(ScanPath::Auto, ScanSpec::inclusive());
    let forward_single = time(ScanPath::SinglePass, ScanSpec::inclusive());
    let reverse = time(ScanPath::Auto, spec);
    let copy_ms = {
        let mut copy: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
    };
    let pct = |ms: f64| 100.0 * copy_ms / ms;
    println!(
        "{:<10} 2^{log_n:<3} {forward:>8.4} {:>5.1}%  {forward_single:>8.4} {:>5.1}%  {reverse:>8.4} {:>5.1}%  {:>6.3} {:>6.3}  {}",
        Op::CUB_NAME,
        pct(forward),
        pct(forward_single),
        pct(reverse),
        reverse / forward,
        reverse / forward_single,
        if ok { "cpu ok" } else { "DIFFERS FROM CPU" }
    );
    ok
}

/// One carry-out row: the scan `run(with_carry)` timed without and with a
/// carry-out, alternately, three medians of 25 calls each, the smallest
/// of each kept (the two differ by a launch parameter and one write, so
/// drift between them would otherwise dominate).
fn carry_row(
    stream: &Arc<CudaStream>,
    label: &str,
    log_n: u32,
    copy_ms: f64,
    ok: bool,
    mut run: impl FnMut(bool),
) -> f64 {
    let (mut without, mut with) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        without = without.min(time_ms(stream, || run(false)) as f64);
        with = with.min(time_ms(stream, || run(true)) as f64);
    }
    println!(
        "{label:<26} 2^{log_n:<3} {without:>9.4} {:>5.1}% {with:>9.4} {:>5.1}% {:>7.4}  {}",
        100.0 * copy_ms / without,
        100.0 * copy_ms / with,
        with / without,
        if ok {
            "carry ok"
        } else {
            "CARRY DIFFERS FROM CPU"
        }
    );
    with
}

/// Exclusive scans of `Op` with and without a carry-out (see [`carry_row`]).
fn carry_rows_plain<Op: Case>(stream: &Arc<CudaStream>, log_n: u32) -> bool
where
    Op::Element: DeviceRepr + ValidAsZeroBits + Send + Sync,
{
    let n = 1usize << log_n;
    let host = input_of::<Op>(n);
    let mut want = Op::IDENTITY;
    let mut expected = vec![Op::IDENTITY; n];
    let spec = ScanSpec::exclusive();
    gpu_scan::cpu::par_scan::<Op>(spec.carry_out(&mut want), &host, &mut expected).unwrap();
    drop(expected);
    let input = stream.clone_htod(&host).unwrap();
    drop(host);
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    let mut slot: CudaSlice<Op::Element> = stream.alloc_zeros(1).unwrap();
    let copy_ms = {
        let mut copy: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
    };
    let mut all_ok = true;
    for path in [ScanPath::Auto, ScanPath::SinglePass] {
        let mut scanner = timing::bench_scanner::<Op>(stream);
        scanner.set_tuning(scanner.tuning().with_path(path));
        scanner
            .scan(stream, spec.carry_out(&mut slot), &input, &mut output)
            .unwrap();
        let ok = Op::agree(&stream.clone_dtoh(&slot).unwrap()[0], &want);
        all_ok &= ok;
        let label = format!("{} excl. [{path:?}]", Op::CUB_NAME);
        carry_row(stream, &label, log_n, copy_ms, ok, |with_carry| {
            if with_carry {
                scanner.scan(stream, spec.carry_out(&mut slot), &input, &mut output)
            } else {
                scanner.scan(stream, spec, &input, &mut output)
            }
            .unwrap()
        });
    }
    all_ok
}

/// The segmented case by bit flags, exclusive, with and without a carry-out.
fn carry_rows_segmented(stream: &Arc<CudaStream>, log_n: u32) -> bool {
    let n = 1usize << log_n;
    let (values, heads) = segmented_case(n);
    let bits = pack_heads(&heads);
    drop(heads);
    let spec = ScanSpec::exclusive();
    let mut want = 0u32;
    let mut expected = vec![0u32; n];
    gpu_scan::segmented::par_scan::<SumU32>(
        spec.carry_out(&mut want),
        gpu_scan::segmented::HeadFlags::bits(&bits, n),
        &values,
        &mut expected,
    )
    .unwrap();
    drop(expected);
    let d_values = stream.clone_htod(&values).unwrap();
    let d_bits = stream.clone_htod(&bits).unwrap();
    let flags = || DeviceHeadFlags::bits(d_bits.as_view(), n);
    let mut output = stream.alloc_zeros::<u32>(n).unwrap();
    let mut slot = stream.alloc_zeros::<u32>(1).unwrap();
    let copy_ms = {
        let mut copy = stream.alloc_zeros::<u32>(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&d_values, &mut copy).unwrap()) as f64
    };
    let mut all_ok = true;
    for path in [ScanPath::Auto, ScanPath::SinglePass] {
        let mut scanner = timing::bench_scanner::<SumU32>(stream);
        scanner.set_tuning(scanner.tuning().with_path(path));
        scanner
            .scan(
                stream,
                spec.carry_out(&mut slot).segments(flags()),
                &d_values,
                &mut output,
            )
            .unwrap();
        let ok = stream.clone_dtoh(&slot).unwrap()[0] == want;
        all_ok &= ok;
        let label = format!("segmented excl. [{path:?}]");
        carry_row(stream, &label, log_n, copy_ms, ok, |with_carry| {
            if with_carry {
                scanner.scan(
                    stream,
                    spec.carry_out(&mut slot).segments(flags()),
                    &d_values,
                    &mut output,
                )
            } else {
                scanner.scan(stream, spec.segments(flags()), &d_values, &mut output)
            }
            .unwrap()
        });
    }
    all_ok
}

/// Exclusive `u32` sums by offsets (the segmented case's heads, mean
/// length 1000) and by rows of 1000, without and with one total per
/// segment ([`ScanSpec::segment_totals`]), the totals checked against the
/// CPU's.
fn carry_rows_totals(stream: &Arc<CudaStream>, cub_dir: Option<&str>, log_n: u32) -> bool {
    let n = 1usize << log_n;
    let seed = SEED + 4;
    let values = offsets_case_values(seed, n);
    let offsets = random_offsets(seed, n, MEAN_SEGMENT);
    let row_length = 1000;
    let rows_n = n / row_length * row_length;
    let spec = ScanSpec::exclusive();
    let cpu_totals = |segments: gpu_scan::segmented::Segments<'_>, len: usize, count: usize| {
        let mut totals = vec![0u32; count];
        gpu_scan::segmented::par_scan::<SumU32>(
            spec.segment_totals(&mut totals),
            segments,
            &values[..len],
            &mut vec![0u32; len],
        )
        .unwrap();
        totals
    };
    let want_offsets = cpu_totals(
        gpu_scan::segmented::Segments::offsets(&offsets[..]),
        n,
        offsets.len() - 1,
    );
    let want_rows = cpu_totals(
        gpu_scan::segmented::Segments::rows(row_length),
        rows_n,
        rows_n / row_length,
    );
    // The same segments as `u32` keys (segment numbers; none is empty).
    let mut keys = vec![0u32; n];
    for (r, w) in offsets.windows(2).enumerate() {
        keys[w[0] as usize..w[1] as usize].fill(r as u32);
    }
    let d_values = stream.clone_htod(&values).unwrap();
    let d_offsets = stream.clone_htod(&offsets).unwrap();
    let d_keys = stream.clone_htod(&keys).unwrap();
    drop(keys);
    let checked = DeviceOffsets::check(stream, d_offsets.as_view(), n).unwrap();
    let mut output = stream.alloc_zeros::<u32>(n).unwrap();
    let copy_ms = {
        let mut copy = stream.alloc_zeros::<u32>(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&d_values, &mut copy).unwrap()) as f64
    };
    let mut scanner = timing::bench_scanner::<SumU32>(stream);
    let mut all_ok = true;
    all_ok &= totals_row(
        stream,
        &mut scanner,
        ("offsets excl. totals", log_n, copy_ms),
        || DeviceSegments::from(&checked),
        &d_values.slice(..),
        &mut output.slice_mut(..),
        (&want_offsets, false),
    )
    .0;
    // By keys, the totals and their count found on the device, beside
    // CUB's ExclusiveSumByKey and ReduceByKey on the same data.
    let (keys_ok, keys_ms) = totals_row(
        stream,
        &mut scanner,
        ("keys excl. counted totals", log_n, copy_ms),
        || DeviceSegments::keys(&d_keys),
        &d_values.slice(..),
        &mut output.slice_mut(..),
        (&want_offsets, true),
    );
    all_ok &= keys_ok;
    if let Some((cub_ms, runs)) = cub_line(cub_dir, "scan-and-reduce-by-key", log_n) {
        println!(
            "{:<26} 2^{log_n:<3} CUB ExclusiveSumByKey + ReduceByKey {cub_ms:.4} ms ({:.1}% of copy, {runs} runs, ours {}), CUB / ours {:.2}",
            "",
            100.0 * copy_ms / cub_ms,
            want_offsets.len(),
            cub_ms / keys_ms
        );
    }
    // By rows (the copy time scaled to the rows' elements).
    all_ok &= totals_row(
        stream,
        &mut scanner,
        (
            "rows of 1000 excl. totals",
            log_n,
            copy_ms * rows_n as f64 / n as f64,
        ),
        || DeviceSegments::rows(row_length),
        &d_values.slice(..rows_n),
        &mut output.slice_mut(..rows_n),
        (&want_rows, false),
    )
    .0;
    all_ok
}

/// One row of [`carry_rows_totals`]: the exclusive sum over `segments()`
/// of `values` into `output`, with and without a slot of `want.len()`
/// totals (checked against `want` first; `counted`: a counted slot, the
/// count checked too); whether they matched, and the time with the slot.
fn totals_row<'a>(
    stream: &Arc<CudaStream>,
    scanner: &mut GpuScanner<SumU32>,
    (label, log_n, copy_ms): (&str, u32, f64),
    segments: impl Fn() -> DeviceSegments<'a>,
    values: &CudaView<'_, u32>,
    output: &mut CudaViewMut<'_, u32>,
    (want, counted): (&[u32], bool),
) -> (bool, f64) {
    let spec = ScanSpec::exclusive();
    let mut totals = stream.alloc_zeros::<u32>(want.len()).unwrap();
    let mut count = stream.alloc_zeros::<u64>(1).unwrap();
    // With the slot (counted or not), or `with` false: without.
    let mut scan = |with: bool, totals: &mut CudaSlice<u32>, count: &mut CudaSlice<u64>| {
        let result = match (with, counted) {
            (true, true) => {
                let spec = spec
                    .segments(segments())
                    .counted_segment_totals(totals, count);
                scanner.scan(stream, spec, values, output)
            }
            (true, false) => {
                let spec = spec.segments(segments()).segment_totals(totals);
                scanner.scan(stream, spec, values, output)
            }
            (false, _) => scanner.scan(stream, spec.segments(segments()), values, output),
        };
        result.unwrap()
    };
    scan(true, &mut totals, &mut count);
    let ok = stream.clone_dtoh(&totals).unwrap() == want
        && (!counted || stream.clone_dtoh(&count).unwrap() == [want.len() as u64]);
    let with_ms = carry_row(stream, label, log_n, copy_ms, ok, |with| {
        scan(with, &mut totals, &mut count)
    });
    (ok, with_ms)
}

/// The carry-out table; returns how many cases' carry-outs differed.
fn carry_table(stream: &Arc<CudaStream>, cub_dir: Option<&str>) -> usize {
    println!(
        "\nscan_bench: carry-out, exclusive scans timed without and with a carry-out slot (ms, % of copy, with/without)"
    );
    println!(
        "{:<26} {:<5} {:>9} {:>6} {:>9} {:>6} {:>7}  output",
        "case", "n", "without", "%copy", "with", "%copy", "ratio"
    );
    let mut bad = 0;
    for log_n in [16u32, 20, 24, 28] {
        bad += usize::from(!carry_rows_plain::<SumU32>(stream, log_n));
        bad += usize::from(!carry_rows_plain::<Affine>(stream, log_n));
        bad += usize::from(!carry_rows_segmented(stream, log_n));
        bad += usize::from(!carry_rows_totals(stream, cub_dir, log_n));
    }
    bad
}

fn main() {
    let ctx = match open_device(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("scan_bench: no GPU ({e})");
            return;
        }
    };
    let cub_dir = std::env::args().nth(1);
    let cub_dir = cub_dir.as_deref();
    let stream = ctx.default_stream();
    println!(
        "scan_bench on {} (CUB results from {})",
        ctx.name().unwrap(),
        cub_dir.unwrap_or("nowhere")
    );
    if std::env::var("SCAN_BENCH_OFFSETS_SWEEP").is_ok_and(|v| v == "1") {
        let ok = offsets_crossover(&stream);
        std::process::exit(if ok { 0 } else { 1 });
    }
    if std::env::var("SCAN_BENCH_PATHS_SWEEP").is_ok_and(|v| v == "1") {
        let bad = paths::sweep(&stream);
        std::process::exit(if bad == 0 { 0 } else { 1 });
    }
    if std::env::var("SCAN_BENCH_ROWS_SWEEP").is_ok_and(|v| v == "1") {
        let bad = paths::rows_sweep(&stream);
        std::process::exit(if bad == 0 { 0 } else { 1 });
    }
    if std::env::var("SCAN_BENCH_DETERMINISTIC").is_ok_and(|v| v == "1") {
        let bad = deterministic::table(&stream);
        std::process::exit(if bad == 0 { 0 } else { 1 });
    }
    if std::env::var("SCAN_BENCH_CARRY").is_ok_and(|v| v == "1") {
        let bad = carry_table(&stream, cub_dir);
        std::process::exit(if bad == 0 { 0 } else { 1 });
    }
    if std::env::var("SCAN_BENCH_WIDE").is_ok_and(|v| ["1", "paths", "all"].contains(&v.as_str())) {
        let rows = wide::sweep(&stream, cub_dir);
        let bad = rows
            .iter()
            .filter(|r| r.same.starts_with("DIFFERS"))
            .count();
        println!(
            "scan_bench: {} wide rows, {bad} with differing outputs",
            rows.len()
        );
        std::process::exit(if bad == 0 { 0 } else { 1 });
    }
    print_header();
    let mut rows = Vec::new();
    // SCAN_BENCH_LOG2=16,20: the main table at these sizes only.
    let sizes = env_numbers("SCAN_BENCH_LOG2", &[16, 20, 24, 28]);
    for log_n in sizes {
        for row in [
            bench::<SumU32>(&stream, cub_dir, log_n),
            bench::<MaxF32>(&stream, cub_dir, log_n),
            bench::<Affine>(&stream, cub_dir, log_n),
            bench::<Stats>(&stream, cub_dir, log_n),
            bench_segmented(&stream, cub_dir, log_n),
            bench_offsets(&stream, cub_dir, log_n, false),
            bench_offsets(&stream, cub_dir, log_n, true),
            bench_keys(&stream, cub_dir, log_n),
        ] {
            print_row(&row);
            rows.push(row);
        }
    }
    // SCAN_BENCH_MAIN_ONLY=1: the main table alone (a short device call).
    let main_only = std::env::var("SCAN_BENCH_MAIN_ONLY").is_ok_and(|v| v == "1");
    if main_only {
        return finish(&rows, 0);
    }
    println!(
        "\nscan_bench: reverse inclusive scans (ms, % of copy; reverse over forward default and over forward single pass)"
    );
    println!(
        "{:<10} {:<5} {:>8} {:>6}  {:>8} {:>6}  {:>8} {:>6}  {:>6} {:>6}  output",
        "case", "n", "forward", "%copy", "fwd 1p", "%copy", "reverse", "%copy", "r/fwd", "r/1p"
    );
    let mut reverse_bad = 0;
    for log_n in [24u32, 28] {
        reverse_bad += usize::from(!reverse_rows::<SumU32>(&stream, log_n));
        reverse_bad += usize::from(!reverse_rows::<Affine>(&stream, log_n));
    }
    reverse_bad += carry_table(&stream, cub_dir);
    small_inputs(&stream);
    shape_sweep(&stream);
    println!(
        "\nscan_bench: placement, default path at 2^28, inputs 1-2 x outputs 1-3, then scanners 2-4 (ms)"
    );
    placement::<SumU32>(&stream, "u32 sum");
    placement::<Affine>(&stream, "affine");
    finish(&rows, reverse_bad);
}

/// Prints the main table again, by case, last (run-all prints it in its
/// summary), and exits with 1 where an output differed.
fn finish(rows: &[Row], reverse_bad: usize) {
    // The main table again, by case, last (run-all prints it in its summary).
    println!("\nscan_bench summary");
    print_header();
    for case in [
        "u32-sum",
        "f32-max",
        "affine",
        "stats",
        "segmented-sum",
        "offsets-sum",
        "offsets-power-law",
        "keys-sum",
    ] {
        for r in rows.iter().filter(|r| r.case == case) {
            print_row(r);
        }
    }
    let bad = rows
        .iter()
        .filter(|r| r.same.starts_with("DIFFERS"))
        .count();
    println!(
        "scan_bench: {} rows, {bad} with differing outputs; reverse and carry-out rows: {reverse_bad} differing from the CPU",
        rows.len()
    );
    if bad + reverse_bad > 0 {
        std::process::exit(1);
    }
}
