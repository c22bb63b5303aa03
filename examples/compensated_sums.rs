//! Compensated float sums on the GPU: their error against an exact sum, and
//! their speed beside a plain `f32` sum and a copy.
//!
//! For random values of both signs and for an input plain sums get badly
//! wrong (runs of small values between a large value and its negation),
//! prints the largest error of every prefix (relative to the sum of the
//! magnitudes so far, and to the exact prefix) for `Sum<f32>`,
//! `CompensatedF32` and `Sum<f64>` on the GPU, against exact prefix sums on
//! the CPU; then the milliseconds of each scan (median of 25 calls, CUDA
//! events) and of a copy of the same bytes. `COMPENSATED_LOG2=24` picks
//! the length (default 28); `COMPENSATED_SEED` replays the inputs.
//!
//!     cargo run --release --example compensated_sums

#[path = "common/exact_sum.rs"]
mod exact_sum;
#[path = "common/timing.rs"]
mod timing;

use exact_sum::{adversarial, exact_prefixes, max_errors, random_f32, to_grid};
use gpu_scan::ops::{CompensatedF32, Sum};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::open_device;
use rand::SeedableRng;
use std::sync::Arc;
use timing::time_ms;

/// Scans `host` inclusively on the GPU; the output back on the host, and
/// the median milliseconds of the scan and of a copy of the input.
fn scan_and_time<Op: ScanOp>(
    stream: &Arc<CudaStream>,
    host: &[Op::Element],
) -> (Vec<Op::Element>, f32, f32)
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    let mut scanner = timing::bench_scanner::<Op>(stream);
    let input = stream.clone_htod(host).unwrap();
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(host.len()).unwrap();
    let scan_ms = time_ms(stream, || {
        scanner
            .scan(stream, ScanKind::Inclusive, &input, &mut output)
            .unwrap()
    });
    let mut copy: CudaSlice<Op::Element> = stream.alloc_zeros(host.len()).unwrap();
    let copy_ms = time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap());
    (stream.clone_dtoh(&output).unwrap(), scan_ms, copy_ms)
}

fn main() {
    let log2: u32 = std::env::var("COMPENSATED_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(28);
    let n = 1usize << log2;
    let seed: u64 = std::env::var("COMPENSATED_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let ctx = open_device(0).expect("a GPU");
    let stream = ctx.new_stream().unwrap();
    println!(
        "compensated_sums on {}, n = 2^{log2}, seed {seed} (COMPENSATED_SEED replays)",
        ctx.name().unwrap()
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let random: Vec<f32> = (0..n).map(|_| random_f32(&mut rng)).collect();
    let hard: Vec<f32> = adversarial(n, 1048576.0, || random_f32(&mut rng) as f64 * 1e-3)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    println!(
        "{:<12} {:<16} {:>14} {:>14}",
        "input", "scan", "err/|x| sum", "err/|exact|"
    );
    let mut times = Vec::new();
    for (case, input) in [("random", &random), ("adversarial", &hard)] {
        let wide: Vec<f64> = input.iter().map(|&x| x as f64).collect();
        let (exact, magnitudes) = exact_prefixes(&wide);
        let (plain, plain_ms, copy4_ms) = scan_and_time::<Sum<f32>>(&stream, input);
        let plain: Vec<i128> = plain.iter().map(|&v| to_grid(v as f64)).collect();
        let pairs: Vec<CompensatedF32> = input.iter().map(|&x| CompensatedF32::new(x)).collect();
        let (comp, comp_ms, copy8_ms) = scan_and_time::<CompensatedF32>(&stream, &pairs);
        let comp_pair: Vec<i128> = comp
            .iter()
            .map(|p| to_grid(p.sum as f64) + to_grid(p.err as f64))
            .collect();
        let comp_value: Vec<i128> = comp.iter().map(|p| to_grid(p.value() as f64)).collect();
        drop(comp);
        let (double, double_ms, _) = scan_and_time::<Sum<f64>>(&stream, &wide);
        let double: Vec<i128> = double.iter().map(|&v| to_grid(v)).collect();
        for (name, computed) in [
            ("Sum<f32>", &plain),
            ("Compensated", &comp_pair),
            ("  .value()", &comp_value),
            ("Sum<f64>", &double),
        ] {
            let (of_magnitudes, of_exact) = max_errors(computed, &exact, &magnitudes);
            println!("{case:<12} {name:<16} {of_magnitudes:>14.3e} {of_exact:>14.3e}");
        }
        if case == "random" {
            times = vec![
                ("Sum<f32>", plain_ms, copy4_ms),
                ("CompensatedF32", comp_ms, copy8_ms),
                ("Sum<f64>", double_ms, copy8_ms),
            ];
        }
    }
    println!(
        "{:<16} {:>10} {:>10} {:>8} {:>14}",
        "scan", "ms", "copy ms", "%copy", "/ Sum<f32>"
    );
    let plain_ms = times[0].1;
    for (name, ms, copy) in times {
        println!(
            "{name:<16} {ms:>10.4} {copy:>10.4} {:>7.1}% {:>14.2}",
            100.0 * copy / ms,
            ms / plain_ms
        );
    }
}
