//! Batched rows: a row-major matrix scanned along its rows
//! (`DeviceSegments::rows`), beside `torch.cumsum(x, dim=1)` on the same
//! shapes.
//!
//! `rows_bench [FILE]`: FILE holds what `cub/torch_rows.py` wrote in the
//! same run (one line per case: name, torch ms, copy ms); without it the
//! torch columns stay empty.
//!
//! Cases: 2^14 rows × 2^12 `u32` (sum), 2^22 rows × 16 `f32` (sum), and
//! 2^18 rows × 1000 `u32` for rows that do not divide a tile. Each is timed
//! as the median of 25 calls bracketed by CUDA events after 3 warm-ups
//! (the default path, and every path for reference), with a
//! device-to-device copy of the input timed the same way in the same run,
//! and with the plain scan of the same elements (no segments). Columns:
//! ms, that rate as a percentage of the copy's, torch's ms and percentage
//! of its own copy, torch's time over ours. Before timing, the whole output
//! is compared with the CPU backend: exactly, since the inputs are small
//! integers (`f32` ones in [-8, 8], whose row sums stay below 2^24 in
//! magnitude and are therefore exact in any order). Prints "no GPU" and
//! exits 0 without one.

use gpu_scan::ops::Sum;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::{open_device, DeviceSegments, ScanPath};
use gpu_scan::segmented::{self, Segments};
use std::sync::Arc;

#[path = "common/timing.rs"]
mod timing;
use timing::time_ms;

/// A torch line: (torch ms, its copy's ms).
fn torch_result(file: Option<&str>, case: &str) -> Option<(f64, f64)> {
    let text = std::fs::read_to_string(file?).ok()?;
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next()? == case).then_some(())?;
        Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
    })
}

/// Times one case; returns whether the output matched the CPU.
fn bench<Op: ScanOp>(
    stream: &Arc<CudaStream>,
    torch: Option<&str>,
    case: &str,
    rows: usize,
    row_length: usize,
    element: impl Fn(usize) -> Op::Element + Sync,
) -> bool
where
    Op::Element: DeviceRepr + ValidAsZeroBits + PartialEq + Send + Sync,
{
    let n = rows * row_length;
    let host: Vec<Op::Element> = (0..n).map(&element).collect();
    let mut expected = vec![Op::IDENTITY; n];
    segmented::par_scan::<Op>(
        ScanKind::Inclusive,
        Segments::rows(row_length),
        &host,
        &mut expected,
    )
    .unwrap();
    let input = stream.clone_htod(&host).unwrap();
    drop(host);
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    let mut scanner = GpuScanner::<Op>::new(stream.context()).unwrap();
    let segments = || DeviceSegments::rows(row_length);
    scanner
        .segmented_scan(stream, ScanKind::Inclusive, segments(), &input, &mut output)
        .unwrap();
    let ok = stream.clone_dtoh(&output).unwrap() == expected;
    drop(expected);
    let mut time = |path: ScanPath, rows: bool| {
        scanner.set_path(path);
        time_ms(stream, || {
            if rows {
                scanner
                    .segmented_scan(stream, ScanKind::Inclusive, segments(), &input, &mut output)
                    .unwrap()
            } else {
                scanner.inclusive(stream, &input, &mut output).unwrap()
            }
        }) as f64
    };
    let ours = time(ScanPath::Auto, true);
    let others: Vec<f64> = [ScanPath::SinglePass, ScanPath::ReduceThenScan]
        .into_iter()
        .map(|p| time(p, true))
        .collect();
    let plain = time(ScanPath::Auto, false);
    let copy_ms = {
        let mut copy: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
    };
    let pct = |ms: f64, copy: f64| 100.0 * copy / ms;
    let (torch_ms, torch_pct, ratio) = match torch_result(torch, case) {
        Some((t, c)) => (
            format!("{t:.4}"),
            format!("{:.1}%", pct(t, c)),
            format!("{:.2}", t / ours),
        ),
        None => ("-".into(), "-".into(), "-".into()),
    };
    println!(
        "{case:<22} {ours:>8.4} {:>6.1}%  {:>8.4} {:>6.1}%  {:>8.4} {:>6.1}%  {plain:>8.4} {:>6.1}%  {torch_ms:>8} {torch_pct:>7} {ratio:>7}  {}",
        pct(ours, copy_ms),
        others[0],
        pct(others[0], copy_ms),
        others[1],
        pct(others[1], copy_ms),
        pct(plain, copy_ms),
        if ok { "cpu ok" } else { "DIFFERS FROM CPU" }
    );
    ok
}

/// Small integers from an index, the same for every run.
fn small(i: usize, range: u64) -> u64 {
    let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5bd1_e995;
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (x >> 32) % range
}

fn main() {
    let ctx = match open_device(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("rows_bench: no GPU ({e})");
            return;
        }
    };
    let torch = std::env::args().nth(1);
    let torch = torch.as_deref();
    let stream = ctx.default_stream();
    println!(
        "rows_bench on {} (torch results from {})\n",
        ctx.name().unwrap(),
        torch.unwrap_or("nowhere")
    );
    println!(
        "{:<22} {:>8} {:>7}  {:>8} {:>7}  {:>8} {:>7}  {:>8} {:>7}  {:>8} {:>7} {:>7}  output",
        "case (inclusive sum)",
        "rows ms",
        "%copy",
        "1pass ms",
        "%copy",
        "r-t-s ms",
        "%copy",
        "plain ms",
        "%copy",
        "torch ms",
        "%copy",
        "torch/us"
    );
    let u32s = |i: usize| small(i, 1 << 16) as u32;
    let f32s = |i: usize| small(i, 17) as f32 - 8.0;
    let mut bad = 0;
    bad += usize::from(!bench::<Sum<u32>>(
        &stream,
        torch,
        "u32_2^14x2^12",
        1 << 14,
        1 << 12,
        u32s,
    ));
    bad += usize::from(!bench::<Sum<f32>>(
        &stream,
        torch,
        "f32_2^22x16",
        1 << 22,
        16,
        f32s,
    ));
    bad += usize::from(!bench::<Sum<u32>>(
        &stream,
        torch,
        "u32_2^18x1000",
        1 << 18,
        1000,
        u32s,
    ));
    println!("rows_bench: 3 cases, {bad} differing from the CPU");
    if bad > 0 {
        std::process::exit(1);
    }
}
