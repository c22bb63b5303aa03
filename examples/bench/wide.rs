//! The wide-element sweep of `scan_bench` (`SCAN_BENCH_WIDE=1`, issue 16):
//! inclusive scans of elements of 4 to 256 bytes, each the composition of
//! affine maps of a vector, `v -> a·v + b` with `b` a vector of lanes and
//! `a` one lane, in wrapping integer arithmetic: `(a, b)` then `(c, d)` is
//! `(a·c, c·b + d)`. Associative, not commutative, and exact, so outputs
//! compare bit for bit with the CPU's and CUB's (`cub/wide_bench.cu`, the
//! same operators and inputs). Each size runs at 2^24 elements and at the
//! largest power of two up to 2^28 whose buffers fit 8 GiB each.

use super::{bench, env_numbers, input_of, print_header, print_row, timing, Case, Row};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::ScanPath;
use std::sync::Arc;

#[path = "../common/wide_ops.rs"]
mod wide_ops;
pub use wide_ops::*;

/// The benchmark's view of the shared operators.
macro_rules! bench_cases {
    ($($name:ident),*) => {$(
        impl Case for $name {
            const CUB_NAME: &'static str = $name::CUB_NAME;
            const INDEX: u64 = $name::INDEX;
            fn element(x: u64) -> $name {
                $name::from_bits(x)
            }
            fn agree(x: &$name, y: &$name) -> bool {
                x == y
            }
        }
    )*};
}

bench_cases!(
    Wide4, Wide8, Wide12, Wide16, Wide24, Wide28, Wide32, Wide40, Wide48, Wide56, Wide64, Wide72,
    Wide80, Wide88, Wide96, Wide104, Wide108, Wide128, Wide256
);

/// The sizes' log2 lengths: 2^24, and the largest power of two up to 2^28
/// whose buffers take at most 8 GiB each.
fn lengths(size: usize) -> Vec<u32> {
    let largest = (0..=28u32)
        .rev()
        .find(|&l| (size << l) <= 8 << 30)
        .expect("2^0 fits");
    let mut v = vec![24.min(largest), largest];
    v.dedup();
    v
}

/// Runs the sweep; returns the rows (printed as they come).
pub fn sweep(stream: &Arc<CudaStream>, cub_dir: Option<&str>) -> Vec<Row> {
    println!("\nscan_bench: wide elements (affine maps of a vector, inclusive, ScanPath::Auto)");
    print_header();
    let mut rows = Vec::new();
    let mut run = |row: Row| {
        print_row(&row);
        rows.push(row);
    };
    macro_rules! each {
        ($($op:ident),*) => {$(
            for log_n in lengths(std::mem::size_of::<<$op as ScanOp>::Element>()).into_iter().filter(|_| chosen($op::CUB_NAME)) {
                run(bench::<$op>(stream, cub_dir, log_n));
            }
        )*};
    }
    // SCAN_BENCH_WIDE=1: this table; =paths: the table by path; =all: both.
    let mode = std::env::var("SCAN_BENCH_WIDE").unwrap_or_default();
    if mode != "paths" {
        each!(
            Wide4, Wide8, Wide12, Wide16, Wide24, Wide32, Wide48, Wide64, Wide72, Wide96, Wide128,
            Wide256
        );
    }
    if mode != "paths" && mode != "all" {
        return rows;
    }
    println!(
        "\nscan_bench: wide elements by path (ms, % of copy; every output checked against the CPU)"
    );
    println!(
        "{:<14} {:>9} {:>6} {:>9} {:>6} {:>9} {:>6}  output",
        "case", "pipelined", "%copy", "look-back", "%copy", "rts", "%copy"
    );
    macro_rules! by_path {
        ($log_n:ident; $($op:ident),*) => {$(
            if chosen($op::CUB_NAME) && !paths::<$op>(stream, $log_n) {
                rows.push(Row { same: "DIFFERS FROM CPU", ..failure_row($op::CUB_NAME) });
            }
        )*};
    }
    // SCAN_BENCH_WIDE_LOG2=24 narrows the lengths.
    let lengths = env_numbers("SCAN_BENCH_WIDE_LOG2", &[24, 26]);
    for log_n in lengths {
        by_path!(
            log_n;
            Wide16, Wide24, Wide28, Wide32, Wide40, Wide48, Wide56, Wide64, Wide72, Wide80, Wide88,
            Wide96, Wide104, Wide108, Wide128, Wide256
        );
    }
    rows
}

/// Whether case `name` runs: `SCAN_BENCH_WIDE_ONLY=wide-16,wide-72` runs
/// those alone (to profile one kernel, say).
fn chosen(name: &str) -> bool {
    std::env::var("SCAN_BENCH_WIDE_ONLY").map_or(true, |only| only.split(',').any(|o| o == name))
}

/// A row that only carries a failure of `case`.
fn failure_row(case: &'static str) -> Row {
    Row {
        case,
        log_n: 0,
        ms: 0.0,
        gbs: 0.0,
        percent_of_copy: 0.0,
        cub_ms: None,
        cub_percent: None,
        same: "",
    }
}

/// Times `Op`'s inclusive scan at 2^log_n on each explicit path (the
/// pipelined pass runs as the look-back pass where it cannot), each output
/// checked against the CPU whole; prints a line, says whether all agreed.
fn paths<Op: Case>(stream: &Arc<CudaStream>, log_n: u32) -> bool
where
    Op::Element: DeviceRepr + ValidAsZeroBits + Send + Sync + PartialEq,
{
    let n = 1usize << log_n;
    let host = input_of::<Op>(n);
    let mut expected = vec![Op::IDENTITY; n];
    gpu_scan::cpu::par_scan::<Op>(ScanKind::Inclusive, &host, &mut expected).unwrap();
    let input = stream.clone_htod(&host).unwrap();
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    let copy_ms = {
        let mut copy: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
        timing::time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
    };
    let mut ok = true;
    let mut line = format!("{:<14}", format!("{} 2^{log_n}", Op::CUB_NAME));
    for path in [
        ScanPath::Pipelined,
        ScanPath::SinglePass,
        ScanPath::ReduceThenScan,
    ] {
        let mut scanner = timing::bench_scanner::<Op>(stream);
        scanner.set_tuning(scanner.tuning().with_path(path));
        stream.memset_zeros(&mut output).unwrap();
        scanner.inclusive(stream, &input, &mut output).unwrap();
        let same = stream.clone_dtoh(&output).unwrap() == expected;
        ok &= same;
        let ms = timing::time_ms(stream, || {
            scanner.inclusive(stream, &input, &mut output).unwrap()
        }) as f64;
        line += &format!(" {ms:>9.4} {:>5.1}%", 100.0 * copy_ms / ms);
    }
    println!("{line}  {}", if ok { "cpu ok" } else { "DIFFERS FROM CPU" });
    ok
}
