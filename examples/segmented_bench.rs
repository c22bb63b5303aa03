//! Segmented `u32` sum, segments of mean length 1000, at 2^24 and 2^28:
//! both strategies and both flag formats, timed with CUDA events (median of
//! 25 calls after 3 warm-ups) against a device-to-device copy of the values
//! measured in the same run. Every configuration's output is checked against
//! the CPU backend first.
//!
//! The data come from a stateless generator that `cub/sum_by_key.cu`
//! repeats exactly, so CUB's `InclusiveSumByKey` (keys = segment numbers)
//! runs on the same segments and values; both print a checksum of their
//! output, and `gpu-bin/run-all` compares them.
//!
//! Output: one line per configuration with ms, GB/s of the bytes that must
//! move (values in, flags in, values out), % of copy speed, and the bytes
//! per element the reduce-then-scan kernels actually move. Prints "no GPU"
//! and exits 0 without one.

use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::{open_device, DeviceHeadFlags, FlagFormat};
use gpu_scan::segmented::HeadFlags;
use rayon::prelude::*;

#[path = "common/timing.rs"]
mod timing;
use timing::time_ms;

#[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
struct SegSum;

/// The generator shared with `cub/sum_by_key.cu`: element i's 64 random bits.
fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add((i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const SEED: u64 = 0x5e6_5ca7;
const MEAN_SEGMENT: u64 = 1000;

/// Element i: value = high 32 bits; head where the low 32 bits are 0 mod 1000.
fn generate(n: usize) -> (Vec<u32>, Vec<u8>) {
    (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let x = mix(SEED, i);
            (
                (x >> 32) as u32,
                (i == 0 || (x as u32) % MEAN_SEGMENT as u32 == 0) as u8,
            )
        })
        .unzip()
}

/// The checksum both programs print: Σ out[i]·(2i+1) mod 2^64.
fn checksum(out: &[u32]) -> u64 {
    out.par_iter()
        .enumerate()
        .map(|(i, &v)| (v as u64).wrapping_mul(2 * i as u64 + 1))
        .reduce(|| 0, u64::wrapping_add)
}

fn main() {
    let ctx = match open_device(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("segmented_bench: no GPU ({e})");
            return;
        }
    };
    let stream = ctx.default_stream();
    let mut scanner = GpuScanner::<SegSum>::new(&ctx).unwrap();
    scanner.prepare_segmented().unwrap();
    println!(
        "segmented_bench on {}: u32 sum, segments of mean {MEAN_SEGMENT}, tile {} elements",
        ctx.name().unwrap(),
        SegSum::tile_items()
    );
    println!(
        "{:<44} {:>6} {:>9} {:>8} {:>7} {:>8}",
        "case", "n", "ms", "GB/s", "%copy", "B/elem"
    );
    let mut best = Vec::new();
    for log_n in [24u32, 28] {
        let n = 1usize << log_n;
        let (values, bytes) = generate(n);
        let bits: Vec<u32> = bytes
            .par_chunks(32)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u32, |w, (i, &f)| w | (f as u32) << i)
            })
            .collect();
        let mut expected = vec![0u32; n];
        gpu_scan::segmented::par_scan::<SegSum>(
            ScanKind::Inclusive,
            HeadFlags::Bytes(&bytes),
            &values,
            &mut expected,
        )
        .unwrap();
        let d_values = stream.clone_htod(&values).unwrap();
        let d_bytes = stream.clone_htod(&bytes).unwrap();
        let d_bits = stream.clone_htod(&bits).unwrap();
        let mut out = stream.alloc_zeros::<u32>(n).unwrap();
        let copy = time_ms(&stream, || stream.memcpy_dtod(&d_values, &mut out).unwrap());
        let copy_gbs = 8.0 * n as f64 / (copy as f64 * 1e6);
        println!(
            "{:<44} {:>6} {:>9.4} {:>8.0} {:>7} {:>8}",
            "device-to-device copy of the values",
            format!("2^{log_n}"),
            copy,
            copy_gbs,
            "100%",
            8
        );
        let mut rows = Vec::new();
        for strategy in SegmentedStrategy::ALL {
            scanner.set_segmented_strategy(strategy);
            for format in FlagFormat::ALL {
                let heads = || -> DeviceHeadFlags<'_> {
                    match format {
                        FlagFormat::Bytes => (&d_bytes).into(),
                        FlagFormat::Bits => (&d_bits).into(),
                    }
                };
                // Correctness first, on a poisoned output.
                stream.memset_zeros(&mut out).unwrap();
                scanner
                    .segmented_inclusive(&stream, heads(), &d_values, &mut out)
                    .unwrap();
                let got = stream.clone_dtoh(&out).unwrap();
                let ok = got == expected;
                let ms = time_ms(&stream, || {
                    scanner
                        .segmented_inclusive(&stream, heads(), &d_values, &mut out)
                        .unwrap()
                });
                let flag_bytes = match format {
                    FlagFormat::Bytes => 1.0,
                    FlagFormat::Bits => 0.125,
                };
                // Must move: value in, flag in, value out.
                let must = 8.0 + flag_bytes;
                // Reduce-then-scan moves values and flags twice, writes once.
                let moved = 2.0 * (4.0 + flag_bytes) + 4.0;
                let gbs = must * n as f64 / (ms as f64 * 1e6);
                println!(
                    "{:<44} {:>6} {:>9.4} {:>8.0} {:>6.1}% {:>8.3}{}",
                    format!("gpu-scan segmented {strategy:?} {format:?}"),
                    format!("2^{log_n}"),
                    ms,
                    gbs,
                    100.0 * gbs / copy_gbs,
                    moved,
                    if ok { "" } else { "  WRONG RESULT" }
                );
                assert!(
                    ok,
                    "{strategy:?} {format:?} differs from the CPU at 2^{log_n}"
                );
                rows.push((strategy, format, ms));
            }
        }
        for format in FlagFormat::ALL {
            let t = |s| {
                rows.iter()
                    .find(|r| r.0 == s && r.1 == format)
                    .map(|r| r.2)
                    .unwrap()
            };
            let (a, b) = (
                t(SegmentedStrategy::OperatorTransformation),
                t(SegmentedStrategy::ConditionalIndexing),
            );
            best.push(format!(
                "2^{log_n} {format:?}: ConditionalIndexing / OperatorTransformation time = {:.3}",
                b / a
            ));
        }
        println!(
            "gpu-scan checksum 2^{log_n} = {:#018x}",
            checksum(&expected)
        );
    }
    for line in best {
        println!("strategy ratio {line}");
    }
}
