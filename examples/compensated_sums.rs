//! Compensated float sums: their error against an exact sum, and on a GPU
//! their speed beside the plain sums and a copy.
//!
//! For random values of both signs and for an input plain sums get badly
//! wrong (runs of small values between a large value and its negation),
//! prints the largest error of every prefix (relative to the sum of the
//! magnitudes so far, and to the exact prefix) of `Sum<f32>`,
//! `CompensatedF32`, `Sum<f64>` and `CompensatedF64`, against exact prefix
//! sums computed on the CPU in integers; then, on a GPU, the milliseconds
//! of each scan (median of 25 calls, CUDA events) and of a copy of the same
//! bytes. `COMPENSATED_BACKEND=cpu` scans with the CPU backend instead (the
//! same operators, combined in another order; no timings), which needs no
//! GPU. `COMPENSATED_LOG2=24` picks the length (default 28);
//! `COMPENSATED_SEED` replays the inputs.
//!
//!     cargo run --release --example compensated_sums

#[path = "common/exact_sum.rs"]
mod exact_sum;
#[path = "../tests/common/seed.rs"]
mod seed;
#[path = "common/timing.rs"]
mod timing;

use exact_sum::{f32_cases, f64_cases, max_errors};
use gpu_scan::ops::{CompensatedF32, CompensatedF64, Sum};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::open_device;
use rand::SeedableRng;
use std::sync::Arc;
use timing::time_ms;

/// Where the scans run.
enum Backend {
    Gpu(Arc<CudaStream>),
    Cpu,
}

/// A scan's milliseconds and those of a copy of its input (GPU only).
struct Timed {
    scan_ms: f32,
    copy_ms: f32,
}

impl Backend {
    /// `Op`'s inclusive scan of `host`, and on a GPU its timing.
    fn scan<Op: ScanOp>(&self, host: &[Op::Element]) -> (Vec<Op::Element>, Option<Timed>)
    where
        Op::Element: DeviceRepr + ValidAsZeroBits,
    {
        let stream = match self {
            Backend::Cpu => return (cpu::inclusive_vec::<Op>(host), None),
            Backend::Gpu(stream) => stream,
        };
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
        let timed = Timed { scan_ms, copy_ms };
        (stream.clone_dtoh(&output).unwrap(), Some(timed))
    }
}

/// One width's rows: the errors of the plain and the compensated sum (as
/// a pair and rounded to one value) on each input, and the timings of the
/// random input's scans.
fn measure<T, Plain, Pair>(
    backend: &Backend,
    width: &str,
    cases: [(&'static str, Vec<T>); 2],
    pair: fn(T) -> Pair::Element,
    split: fn(Pair::Element) -> (f64, f64),
    value: fn(Pair::Element) -> f64,
) -> Vec<(String, Timed)>
where
    T: Copy + Into<f64> + DeviceRepr + ValidAsZeroBits,
    Plain: ScanOp<Element = T>,
    Pair: ScanOp,
    Pair::Element: DeviceRepr + ValidAsZeroBits,
{
    let mut times = Vec::new();
    for (case, input) in cases {
        let wide = || input.iter().map(|&x| x.into());
        let (plain, plain_time) = backend.scan::<Plain>(&input);
        let plain_errors = max_errors(wide(), plain.iter().map(|&v| (v.into(), 0.0)));
        drop(plain);
        let pairs: Vec<Pair::Element> = input.iter().map(|&x| pair(x)).collect();
        let (comp, comp_time) = backend.scan::<Pair>(&pairs);
        drop(pairs);
        let pair_errors = max_errors(wide(), comp.iter().map(|&p| split(p)));
        // `.value()`: sum + err rounded to one float of the width.
        let value_errors = max_errors(wide(), comp.iter().map(|&p| (value(p), 0.0)));
        for (name, (of_magnitudes, of_exact)) in [
            (format!("Sum<{width}>"), plain_errors),
            (format!("Compensated{}", width.to_uppercase()), pair_errors),
            ("  .value()".to_string(), value_errors),
        ] {
            println!("{case:<12} {name:<16} {of_magnitudes:>14.3e} {of_exact:>14.3e}");
        }
        if case == "random" {
            times.extend(plain_time.map(|t| (format!("Sum<{width}>"), t)));
            times.extend(comp_time.map(|t| (format!("Compensated{}", width.to_uppercase()), t)));
        }
    }
    times
}

fn main() {
    let log2: u32 = std::env::var("COMPENSATED_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(28);
    let n = 1usize << log2;
    let seed = seed::from_env_or_clock("COMPENSATED_SEED");
    let (backend, on) = if std::env::var("COMPENSATED_BACKEND").as_deref() == Ok("cpu") {
        (Backend::Cpu, "the CPU backend".to_string())
    } else {
        let ctx = open_device(0).expect("a GPU (COMPENSATED_BACKEND=cpu scans on the CPU)");
        let name = ctx.name().unwrap();
        (Backend::Gpu(ctx.new_stream().unwrap()), name)
    };
    println!("compensated_sums on {on}, n = 2^{log2}, seed {seed} (COMPENSATED_SEED replays)");
    println!(
        "{:<12} {:<16} {:>14} {:>14}",
        "input", "scan", "err/|x| sum", "err/|exact|"
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut times = measure::<f32, Sum<f32>, CompensatedF32>(
        &backend,
        "f32",
        f32_cases(n, &mut rng),
        CompensatedF32::new,
        |p| (p.sum as f64, p.err as f64),
        |p| p.value() as f64,
    );
    times.extend(measure::<f64, Sum<f64>, CompensatedF64>(
        &backend,
        "f64",
        f64_cases(n, &mut rng),
        CompensatedF64::new,
        |p| (p.sum, p.err),
        CompensatedF64::value,
    ));
    if times.is_empty() {
        return;
    }
    println!(
        "{:<16} {:>10} {:>10} {:>8} {:>14}",
        "scan", "ms", "copy ms", "%copy", "/ Sum<f32>"
    );
    let plain_ms = times[0].1.scan_ms;
    for (name, t) in times {
        println!(
            "{name:<16} {:>10.4} {:>10.4} {:>7.1}% {:>14.2}",
            t.scan_ms,
            t.copy_ms,
            100.0 * t.copy_ms / t.scan_ms,
            t.scan_ms / plain_ms
        );
    }
}
