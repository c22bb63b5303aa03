//! Matrices: a row-major matrix scanned along its rows
//! (`DeviceSegments::rows`), down its columns (`ScanSpec::columns`), and both
//! (a summed-area table), beside `torch.cumsum` on the same shapes.
//!
//! `matrix_bench [FILE]`: FILE holds what `cub/torch_matrix.py` wrote in
//! the same run (one line per case: name, torch ms, copy ms); without it
//! the torch columns stay empty.
//!
//! Cases (inclusive sums): rows 2^14 × 2^12 `u32`, 2^22 × 16 `f32`, 2^18 ×
//! 1000 `u32`; columns 2^12 × 2^14 `f32`, 2^16 × 2^10 `u32`, 2^22 × 16
//! `f32` (a narrow matrix: one strip of columns); summed-area tables of
//! 8192 × 8192 `f32` by `ScanSpec::summed_area` (in tiles: `Sum` is commutative) and, for
//! reference, rows then columns, of 8192 × 8192 `u32`, and an exclusive
//! one of 8192 × 8192 `f32` (in tiles, out of place), and one of
//! 4096 × 4096 24-byte moments (count, sum, sum of squares: the tiles'
//! warp-scan forms). Each is timed as the median of 25
//! calls bracketed by CUDA events after 3 warm-ups (the default path, and
//! the look-back single pass for reference), with a device-to-device copy
//! of the input timed the same way in the same run, and with the plain
//! scan of the same elements. Columns: ms and that rate as a percentage of
//! the copy's (for a summed-area table, of one copy), torch's ms and
//! percentage of its own copy, torch's time over ours. Before timing, the
//! whole output is compared with the CPU backend (tolerances by case,
//! justified in `main`). Prints "no GPU" and exits 0 without one.

use gpu_scan::ops::Sum;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::{open_device, DeviceSegments, ScanPath};
use gpu_scan::segmented::{self, Segments};
use gpu_scan::{columns, summed_area};
use std::sync::Arc;

#[path = "common/moments.rs"]
mod moments;
#[path = "common/timing.rs"]
mod timing;
use moments::Moments;
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

/// How a case scans its matrix.
#[derive(Clone, Copy)]
enum Shape {
    /// Along rows of this length (`DeviceSegments::rows`).
    Rows(usize),
    /// Down columns, rows of this length (`ScanSpec::columns`).
    Columns(usize),
    /// A summed-area table of rows of this length (`ScanSpec::summed_area`: in tiles for
    /// a commutative operator).
    SummedArea(usize),
    /// The same, along the rows, then down the columns of the result.
    RowsThenColumns(usize),
    /// An exclusive summed-area table (`ScanSpec::summed_area`, out of place).
    ExclusiveArea(usize),
}

impl Shape {
    fn row_length(self) -> usize {
        match self {
            Shape::Rows(l)
            | Shape::Columns(l)
            | Shape::SummedArea(l)
            | Shape::RowsThenColumns(l)
            | Shape::ExclusiveArea(l) => l,
        }
    }
}

/// Scans `input` into `output` as `shape` says (`scratch`: the rows'
/// result of a summed-area table).
fn run<Op: ScanOp>(
    scanner: &mut GpuScanner<Op>,
    stream: &Arc<CudaStream>,
    shape: Shape,
    input: &CudaSlice<Op::Element>,
    scratch: &mut CudaSlice<Op::Element>,
    output: &mut CudaSlice<Op::Element>,
) where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let kind = ScanKind::Inclusive;
    match shape {
        Shape::Rows(l) => scanner
            .scan(
                stream,
                ScanSpec::from(kind).segments(DeviceSegments::rows(l)),
                input,
                output,
            )
            .unwrap(),
        Shape::Columns(l) => scanner
            .scan(stream, ScanSpec::from(kind).columns(l), input, output)
            .unwrap(),
        Shape::SummedArea(l) => scanner
            .scan(stream, ScanSpec::from(kind).summed_area(l), input, output)
            .unwrap(),
        Shape::ExclusiveArea(l) => scanner
            .scan(stream, ScanSpec::exclusive().summed_area(l), input, output)
            .unwrap(),
        Shape::RowsThenColumns(l) => {
            scanner
                .scan(
                    stream,
                    ScanSpec::from(kind).segments(DeviceSegments::rows(l)),
                    input,
                    scratch,
                )
                .unwrap();
            scanner
                .scan(stream, ScanSpec::from(kind).columns(l), scratch, output)
                .unwrap()
        }
    }
}

/// The CPU's result for `shape`.
fn expected<Op: ScanOp>(shape: Shape, host: &[Op::Element]) -> Vec<Op::Element> {
    let kind = ScanKind::Inclusive;
    let mut out = vec![Op::IDENTITY; host.len()];
    match shape {
        Shape::Rows(l) => {
            segmented::par_scan::<Op>(kind, Segments::rows(l), host, &mut out).unwrap()
        }
        Shape::Columns(l) => columns::par_scan::<Op>(kind, l, host, &mut out).unwrap(),
        Shape::SummedArea(l) | Shape::RowsThenColumns(l) => {
            summed_area::par_scan::<Op>(kind, l, host, &mut out).unwrap()
        }
        Shape::ExclusiveArea(l) => {
            summed_area::par_scan::<Op>(ScanKind::Exclusive, l, host, &mut out).unwrap()
        }
    }
    out
}

/// Times one case; returns whether the output matched the CPU (`agree`
/// compares two elements).
fn bench<Op: ScanOp>(
    stream: &Arc<CudaStream>,
    torch: Option<&str>,
    case: &str,
    shape: Shape,
    rows: usize,
    element: impl Fn(usize) -> Op::Element + Sync,
    agree: impl Fn(&Op::Element, &Op::Element) -> bool,
) -> bool
where
    Op::Element: DeviceRepr + ValidAsZeroBits + Send + Sync,
{
    // MATRIX_BENCH_ONLY=a,b runs only the named cases (for a profiler).
    if let Ok(only) = std::env::var("MATRIX_BENCH_ONLY") {
        if !only.split(',').any(|o| o == case) {
            return true;
        }
    }
    let n = rows * shape.row_length();
    let host: Vec<Op::Element> = (0..n).map(&element).collect();
    let want = expected::<Op>(shape, &host);
    let input = stream.clone_htod(&host).unwrap();
    drop(host);
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    let mut scratch: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    let mut scanner = timing::bench_scanner::<Op>(stream);
    run(
        &mut scanner,
        stream,
        shape,
        &input,
        &mut scratch,
        &mut output,
    );
    let got = stream.clone_dtoh(&output).unwrap();
    let ok = got.iter().zip(&want).all(|(g, w)| agree(g, w));
    drop((got, want));
    // The CPU's reference left the GPU idle for a while: 200 calls bring
    // its clocks back up before anything is timed.
    for _ in 0..200 {
        run(
            &mut scanner,
            stream,
            shape,
            &input,
            &mut scratch,
            &mut output,
        );
    }
    let mut time = |path: ScanPath| {
        scanner.set_tuning(scanner.tuning().with_path(path));
        time_ms(stream, || {
            run(
                &mut scanner,
                stream,
                shape,
                &input,
                &mut scratch,
                &mut output,
            )
        }) as f64
    };
    let ours = time(ScanPath::Auto);
    let single = time(ScanPath::SinglePass);
    scanner.set_tuning(scanner.tuning().with_path(ScanPath::Auto));
    let plain = time_ms(stream, || {
        scanner.inclusive(stream, &input, &mut output).unwrap()
    }) as f64;
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
        "{case:<22} {ours:>8.4} {:>6.1}%  {single:>8.4} {:>6.1}%  {plain:>8.4} {:>6.1}%  {torch_ms:>8} {torch_pct:>7} {ratio:>8}  {}",
        pct(ours, copy_ms),
        pct(single, copy_ms),
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
            println!("matrix_bench: no GPU ({e})");
            return;
        }
    };
    let torch = std::env::args().nth(1);
    let torch = torch.as_deref();
    let stream = ctx.default_stream();
    println!(
        "matrix_bench on {} (torch results from {})\n",
        ctx.name().unwrap(),
        torch.unwrap_or("nowhere")
    );
    println!(
        "{:<22} {:>8} {:>7}  {:>8} {:>7}  {:>8} {:>7}  {:>8} {:>7} {:>8}  output",
        "case (inclusive sum)",
        "ours ms",
        "%copy",
        "1pass ms",
        "%copy",
        "plain ms",
        "%copy",
        "torch ms",
        "%copy",
        "torch/us"
    );
    let u32s = |i: usize| small(i, 1 << 16) as u32;
    let f32s = |i: usize| small(i, 17) as f32 - 8.0;
    let exact_u32 = |a: &u32, b: &u32| a == b;
    // Row and column sums of values in [-8, 8] over at most 2^12 terms stay
    // below 2^24 in magnitude: exact in any order.
    let exact_f32 = |a: &f32, b: &f32| a == b;
    // A summed-area table of 8192² values in [-8, 8] can pass 2^24, where
    // f32 sums round, differently in a different order: relative 1e-5.
    let close_f32 = |a: &f32, b: &f32| (a - b).abs() <= 1e-5 * b.abs().max(1.0);
    let mut bad = 0;
    let mut case = |ok: bool| bad += usize::from(!ok);
    case(bench::<Sum<u32>>(
        &stream,
        torch,
        "rows_u32_2^14x2^12",
        Shape::Rows(1 << 12),
        1 << 14,
        u32s,
        exact_u32,
    ));
    case(bench::<Sum<f32>>(
        &stream,
        torch,
        "rows_f32_2^22x16",
        Shape::Rows(16),
        1 << 22,
        f32s,
        exact_f32,
    ));
    case(bench::<Sum<u32>>(
        &stream,
        torch,
        "rows_u32_2^18x1000",
        Shape::Rows(1000),
        1 << 18,
        u32s,
        exact_u32,
    ));
    case(bench::<Sum<f32>>(
        &stream,
        torch,
        "cols_f32_2^12x2^14",
        Shape::Columns(1 << 14),
        1 << 12,
        f32s,
        exact_f32,
    ));
    case(bench::<Sum<u32>>(
        &stream,
        torch,
        "cols_u32_2^16x2^10",
        Shape::Columns(1 << 10),
        1 << 16,
        u32s,
        exact_u32,
    ));
    case(bench::<Sum<f32>>(
        &stream,
        torch,
        "cols_f32_2^22x16",
        Shape::Columns(16),
        1 << 22,
        f32s,
        exact_f32,
    ));
    // Issue 47's column shapes in the other type of each.
    case(bench::<Sum<u32>>(
        &stream,
        torch,
        "cols_u32_2^12x2^14",
        Shape::Columns(1 << 14),
        1 << 12,
        u32s,
        exact_u32,
    ));
    case(bench::<Sum<f32>>(
        &stream,
        torch,
        "cols_f32_2^16x2^10",
        Shape::Columns(1 << 10),
        1 << 16,
        f32s,
        exact_f32,
    ));
    case(bench::<Sum<u32>>(
        &stream,
        torch,
        "cols_u32_2^22x16",
        Shape::Columns(16),
        1 << 22,
        u32s,
        exact_u32,
    ));
    // MATRIX_BENCH_COLUMN_SWEEP=1: column scans of 2^26 `f32` at every
    // width class from 1 to 2^14 columns (packed rows, one strip, a few
    // strips, strips that walk).
    if std::env::var_os("MATRIX_BENCH_COLUMN_SWEEP").is_some() {
        for cols in [
            1usize, 2, 3, 4, 5, 8, 12, 16, 17, 24, 32, 33, 64, 100, 128, 256, 512, 1024, 2048,
            4096, 8192, 16384,
        ] {
            let rows = (1usize << 26) / cols;
            let name = format!("cols_f32_{rows}x{cols}");
            case(bench::<Sum<f32>>(
                &stream,
                torch,
                &name,
                Shape::Columns(cols),
                rows,
                f32s,
                exact_f32,
            ));
        }
    }
    case(bench::<Sum<f32>>(
        &stream,
        torch,
        "sat_f32_8192x8192",
        Shape::SummedArea(8192),
        8192,
        f32s,
        close_f32,
    ));
    case(bench::<Sum<f32>>(
        &stream,
        torch,
        "sat_f32_rows_then_cols",
        Shape::RowsThenColumns(8192),
        8192,
        f32s,
        close_f32,
    ));
    case(bench::<Sum<u32>>(
        &stream,
        torch,
        "sat_u32_8192x8192",
        Shape::SummedArea(8192),
        8192,
        u32s,
        exact_u32,
    ));
    case(bench::<Sum<f32>>(
        &stream,
        torch,
        "sat_f32_exclusive",
        Shape::ExclusiveArea(8192),
        8192,
        f32s,
        close_f32,
    ));
    // Moments (count, sum, sum of squares) of values below 2^16: every
    // box's mean and variance from the table. 24-byte elements, the tiles'
    // warp-scan forms; exact integers.
    case(bench::<Moments>(
        &stream,
        torch,
        "sat_moments24_4096^2",
        Shape::SummedArea(4096),
        4096,
        |i| Moments::of(small(i, 1 << 16)),
        |a, b| a == b,
    ));
    println!("matrix_bench: {bad} cases differing from the CPU");
    if bad > 0 {
        std::process::exit(1);
    }
}
