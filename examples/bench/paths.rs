//! Where `ScanPath::Auto` should take the pipelined pass and where the
//! look-back single pass (`SCAN_BENCH_PATHS_SWEEP=1 scan_bench`): the main
//! table's plain cases and `u32` rows of 4096 (`DeviceSegments::rows`),
//! from 2^22 to 2^28 elements in half-octave steps, each path timed
//! (median of 25 calls after warm-ups) beside a copy of the same bytes and
//! checked against the CPU at the sampled indices first.

use super::{input_of, sample_indices, timing, Case, SumU32};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::{DeviceSegments, ScanPath};
use std::sync::Arc;
use timing::time_ms;

/// Lengths of the sweep: 2^22 to 2^28 and the odd half-octaves between.
fn lengths() -> Vec<usize> {
    (44..=56)
        .map(|half_octaves: u32| {
            let base = 1usize << (half_octaves / 2);
            if half_octaves % 2 == 0 {
                base
            } else {
                // 2^k · √2, rounded to a multiple of 4096 (whole rows).
                ((base as f64 * std::f64::consts::SQRT_2) as usize) & !4095
            }
        })
        .collect()
}

/// Row length of the rows case.
const ROW: usize = 4096;

/// Row lengths of the rows sweep (`SCAN_BENCH_ROWS_SWEEP=1`).
const ROW_LENGTHS: [usize; 9] = [16, 100, 1000, 1024, 4096, 10_000, 65_536, 1 << 20, 1 << 24];

/// One case at one length on every path: `scan` runs it into `output`.
/// Prints a line; returns whether every path agreed with the CPU.
fn line<Op: Case>(stream: &Arc<CudaStream>, label: &str, rows: Option<usize>, n: usize) -> bool
where
    Op::Element: DeviceRepr + ValidAsZeroBits + Send + Sync,
{
    let host = input_of::<Op>(n);
    let mut expected = vec![Op::IDENTITY; n];
    if let Some(row) = rows {
        gpu_scan::segmented::par_scan::<Op>(
            ScanKind::Inclusive,
            gpu_scan::segmented::Segments::rows(row),
            &host,
            &mut expected,
        )
        .unwrap();
    } else {
        gpu_scan::cpu::par_scan::<Op>(ScanKind::Inclusive, &host, &mut expected).unwrap();
    }
    let input = stream.clone_htod(&host).unwrap();
    drop(host);
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    let copy_ms = {
        let mut copy: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
    };
    let mut scanner = timing::bench_scanner::<Op>(stream);
    let samples = sample_indices(n);
    let mut ok = true;
    let mut cells = String::new();
    let mut times = Vec::new();
    for path in [ScanPath::Auto, ScanPath::Pipelined, ScanPath::SinglePass] {
        scanner.set_tuning(scanner.tuning().with_path(path));
        let mut run = |out: &mut CudaSlice<Op::Element>| {
            if let Some(row) = rows {
                scanner
                    .scan(
                        stream,
                        ScanSpec::inclusive().segments(DeviceSegments::rows(row)),
                        &input,
                        out,
                    )
                    .unwrap()
            } else {
                scanner.inclusive(stream, &input, out).unwrap()
            }
        };
        run(&mut output);
        let got = stream.clone_dtoh(&output).unwrap();
        ok &= samples.iter().all(|&i| Op::agree(&got[i], &expected[i]));
        let ms = time_ms(stream, || run(&mut output)) as f64;
        times.push(ms);
        cells += &format!("  {ms:>8.4} {:>5.1}%", 100.0 * copy_ms / ms);
    }
    let faster = if times[1] <= times[2] {
        "pipelined"
    } else {
        "1 pass"
    };
    println!(
        "{label:<10} {n:>10} {:>5.2}{cells}  {faster:<9}  {}",
        (n as f64).log2(),
        if ok { "cpu ok" } else { "DIFFERS FROM CPU" }
    );
    ok
}

/// The sweep; returns how many lines differed from the CPU.
pub fn sweep(stream: &Arc<CudaStream>) -> usize {
    println!(
        "\nscan_bench: paths by length (ms, % of a copy; Auto takes the pipelined pass from {} MiB)",
        2
    );
    println!(
        "{:<10} {:>10} {:>5}  {:>8} {:>6}  {:>8} {:>6}  {:>8} {:>6}  {:<9}  output",
        "case", "n", "log2", "auto", "%copy", "pipelined", "%copy", "1 pass", "%copy", "faster"
    );
    let mut bad = 0;
    for n in lengths() {
        bad += usize::from(!line::<SumU32>(stream, "u32 sum", None, n));
        bad += usize::from(!line::<super::Affine>(stream, "affine", None, n));
        bad += usize::from(!line::<SumU32>(stream, "u32 rows", Some(ROW), n));
    }
    bad
}

/// Rows of every length in [`ROW_LENGTHS`] at 2^24 and 2^27 `u32`
/// elements (`SCAN_BENCH_ROWS_SWEEP=1`): which pass `Auto` should take
/// for fixed-length rows. Returns how many lines differed from the CPU.
pub fn rows_sweep(stream: &Arc<CudaStream>) -> usize {
    println!("\nscan_bench: u32 sums along rows by row length (ms, % of a copy)");
    println!(
        "{:<10} {:>10} {:>5}  {:>8} {:>6}  {:>8} {:>6}  {:>8} {:>6}  {:<9}  output",
        "row", "n", "log2", "auto", "%copy", "pipelined", "%copy", "1 pass", "%copy", "faster"
    );
    let mut bad = 0;
    for n in [1usize << 24, 1 << 27] {
        for row in ROW_LENGTHS {
            let whole = n / row * row;
            bad += usize::from(!line::<SumU32>(stream, &format!("{row}"), Some(row), whole));
        }
    }
    bad
}
