//! Scans through load and store stages (`GpuScanner::scan_through`) timed
//! beside CUB's `DeviceScan` over Thrust's transform iterators on the same
//! inputs (`cub/stages_bench.cu`), and beside the same scans without
//! stages, at 2^24 and 2^28 elements:
//!   widen         bytes widened to `u32` sums (5 bytes moved per element)
//!   sum           the `u32` sum of the widened bytes, no stage (8 bytes)
//!   affine_state  `u32` x loaded as the exact affine map {x | 1, x >> 3},
//!                 composed, its offset stored (8 bytes)
//!   affine        the maps built first, scanned and stored whole (16 bytes)
//!
//! `stages_bench [DIR]`: DIR holds `cub-stages.txt` from `stages_cub DIR`
//! run first; without it the CUB columns stay empty. Each scan is the median
//! of 25 calls bracketed by CUDA events after 3 warm-ups, with a
//! device-to-device copy of n `u32` timed the same way in the same run.
//! Columns: time, GB/s of the bytes that must move (input read once, output
//! written once), that rate as a percentage of the copy's, CUB's time,
//! CUB's time over ours, and whether the outputs agree (every output is
//! first checked against the CPU backend in full, and its checksum against
//! CUB's). Prints "no GPU" and exits 0 without one.

use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::CudaSlice;
use gpu_scan::scan_runtime::{open_device, ScanPath, ScanStages};
use rayon::prelude::*;

#[path = "common/splitmix.rs"]
mod splitmix;
#[path = "common/timing.rs"]
mod timing;
use timing::{bench_scanner, time_ms};

#[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
struct Sum;

/// v ↦ a·v + b over wrapping `u32`; `x ∘ y` applies x first.
#[scan_op(identity = AffineU32 { a: 1, b: 0 }, op = |x, y| AffineU32 { a: x.a * y.a, b: y.a * x.b + y.b })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AffineU32 {
    a: u32,
    b: u32,
}

#[scan_map(input = u8, output = u32, map = |x| x as u32)]
struct Widen;

#[scan_map(input = u32, output = AffineU32, map = |x| AffineU32 { a: x | 1, b: x >> 3 })]
struct ToAffine;

#[scan_map(input = AffineU32, output = u32, map = |m| m.b)]
struct TakeB;

#[scan_map(input = u32, output = u32, map = |x| x)]
struct Same;

/// `scanner` on the look-back single pass (`on`) or the default path.
fn look_back<Op: gpu_scan::ScanOp>(scanner: &mut GpuScanner<Op>, on: bool)
where
    Op::Element: gpu_scan::scan_runtime::cudarc::driver::DeviceRepr
        + gpu_scan::scan_runtime::cudarc::driver::ValidAsZeroBits,
{
    let path = if on {
        ScanPath::SinglePass
    } else {
        ScanPath::Auto
    };
    scanner.set_tuning(scanner.tuning().with_path(path));
}

/// The sum of `v[i] · (2i + 1)`, wrapping: `cub/stages_bench.cu`'s checksum.
fn checksum(v: &[u32]) -> u64 {
    v.par_iter()
        .enumerate()
        .map(|(i, &x)| (x as u64).wrapping_mul(2 * i as u64 + 1))
        .reduce(|| 0, u64::wrapping_add)
}

/// CUB's (ms, copy ms, checksum) for a case and size, from `cub-stages.txt`.
fn cub_row(rows: &str, case: &str, log2: u32) -> Option<(f64, f64, u64)> {
    rows.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() == 5 && f[0] == case && f[1] == log2.to_string())
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?, f[4].parse().ok()?)))
            .flatten()
    })
}

fn main() {
    let Ok(ctx) = open_device(0) else {
        println!("no GPU");
        return;
    };
    let dir = std::env::args().nth(1);
    let cub = dir
        .as_ref()
        .and_then(|d| std::fs::read_to_string(format!("{d}/cub-stages.txt")).ok())
        .unwrap_or_default();
    let stream = ctx.new_stream().unwrap();
    let mut sums = bench_scanner::<Sum>(&stream);
    let mut maps = bench_scanner::<AffineU32>(&stream);
    println!(
        "{:<16} {:>5} {:>9} {:>7} {:>7} {:>9} {:>7} {:>6}",
        "case", "n", "ms", "GB/s", "%copy", "CUB ms", "xCUB", "agree"
    );
    for log2 in [24u32, 28] {
        let n = 1usize << log2;
        let raw: Vec<u64> = (0..n as u64).into_par_iter().map(splitmix::bits).collect();
        let bytes: Vec<u8> = raw.par_iter().map(|x| (x >> 56) as u8).collect();
        let widened: Vec<u32> = bytes.par_iter().map(|&b| b as u32).collect();
        let words: Vec<u32> = raw.par_iter().map(|x| (x >> 32) as u32).collect();
        let affine: Vec<AffineU32> = words.par_iter().map(|&x| ToAffine::apply(x)).collect();
        drop(raw);
        let d_bytes = stream.clone_htod(&bytes).unwrap();
        let d_widened = stream.clone_htod(&widened).unwrap();
        let d_words = stream.clone_htod(&words).unwrap();
        let d_affine = stream.clone_htod(&affine).unwrap();
        let mut out: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
        let mut maps_out: CudaSlice<AffineU32> = stream.alloc_zeros(n).unwrap();
        let mut copy: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
        let copy_ms = time_ms(&stream, || stream.memcpy_dtod(&d_words, &mut copy).unwrap()) as f64;
        let copy_gbs = 8.0 * n as f64 / copy_ms / 1e6;
        let widen = ScanStages::load::<Widen>();
        let state = ScanStages::both::<ToAffine, TakeB>();
        let row = |case: &str, bytes_moved: usize, ms: f64, got: &[u32], want: &[u32]| {
            let gbs = (bytes_moved * n) as f64 / ms / 1e6;
            let agree_cpu = got == want;
            let (cub_ms, agree_cub) = match cub_row(&cub, case.split(' ').next().unwrap(), log2) {
                Some((cub_ms, _, sum)) => (Some(cub_ms), sum == checksum(got)),
                None => (None, true),
            };
            println!(
                "{case:<16} 2^{log2:<3} {ms:>9.4} {gbs:>7.0} {:>6.1}% {:>9} {:>7} {:>6}",
                100.0 * gbs / copy_gbs,
                cub_ms.map_or("-".into(), |c| format!("{c:.4}")),
                cub_ms.map_or("-".into(), |c| format!("{:.2}", c / ms)),
                if agree_cpu && agree_cub { "yes" } else { "NO" },
            );
        };
        // widen: u8 in, u32 out.
        let mut want = vec![0u32; n];
        cpu::scan_staged::<Widen, Sum, Same>(ScanKind::Inclusive, &bytes, &mut want).unwrap();
        let ms = time_ms(&stream, || {
            sums.scan_through(&stream, ScanKind::Inclusive, widen, &d_bytes, &mut out)
                .unwrap()
        }) as f64;
        row("widen", 5, ms, &stream.clone_dtoh(&out).unwrap(), &want);
        let ms = time_ms(&stream, || {
            sums.inclusive(&stream, &d_widened, &mut out).unwrap()
        }) as f64;
        row("sum", 8, ms, &stream.clone_dtoh(&out).unwrap(), &want);
        // The same on the look-back single pass, the pass staged scans take.
        look_back(&mut sums, true);
        let ms = time_ms(&stream, || {
            sums.inclusive(&stream, &d_widened, &mut out).unwrap()
        }) as f64;
        look_back(&mut sums, false);
        row(
            "sum look-back",
            8,
            ms,
            &stream.clone_dtoh(&out).unwrap(),
            &want,
        );
        // affine_state: u32 in, the maps composed, u32 offsets out.
        cpu::scan_staged::<ToAffine, AffineU32, TakeB>(ScanKind::Inclusive, &words, &mut want)
            .unwrap();
        let ms = time_ms(&stream, || {
            maps.scan_through(&stream, ScanKind::Inclusive, state, &d_words, &mut out)
                .unwrap()
        }) as f64;
        row(
            "affine_state",
            8,
            ms,
            &stream.clone_dtoh(&out).unwrap(),
            &want,
        );
        let ms = time_ms(&stream, || {
            maps.inclusive(&stream, &d_affine, &mut maps_out).unwrap()
        }) as f64;
        let offsets: Vec<u32> = stream
            .clone_dtoh(&maps_out)
            .unwrap()
            .iter()
            .map(|m| m.b)
            .collect();
        row("affine", 16, ms, &offsets, &want);
        look_back(&mut maps, true);
        let ms = time_ms(&stream, || {
            maps.inclusive(&stream, &d_affine, &mut maps_out).unwrap()
        }) as f64;
        look_back(&mut maps, false);
        let offsets: Vec<u32> = stream
            .clone_dtoh(&maps_out)
            .unwrap()
            .iter()
            .map(|m| m.b)
            .collect();
        row("affine look-back", 16, ms, &offsets, &want);
    }
    println!("copy: a device-to-device copy of n u32 in the same run; GB/s of the bytes each case must move");
}
