//! What bit-reproducible scans cost (`SCAN_BENCH_DETERMINISTIC=1
//! scan_bench`): `f32` sums and affine maps at 2^24, 2^26 and 2^28, each
//! timed on the default path and with `Tuning::deterministic` (median of 25
//! calls after warm-ups), in its one pass (where it runs) and in its three
//! passes (`ScanPath::ReduceThenScan`), beside a copy of the same bytes, in
//! one run. Before timing, the deterministic output is checked against the
//! CPU at the sampled indices, and three more deterministic runs on other
//! streams and the three passes must give the same bits.

use super::{input_of, sample_indices, timing, Affine, Case};
use gpu_scan::ops::Sum;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::ScanPath;
use std::sync::Arc;
use timing::time_ms;

impl Case for Sum<f32> {
    const CUB_NAME: &'static str = "f32-sum";
    const INDEX: u64 = 5;
    fn element(x: u64) -> f32 {
        super::signed24(x >> 40)
    }
    // Compared with an f64 prefix of the same values in `agree_sum` below;
    // this form is for CUB's columns, which this table has none of.
    fn agree(a: &f32, b: &f32) -> bool {
        a.to_bits() == b.to_bits()
    }
}

/// The elements' bytes, for comparing bits.
fn bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain-old-data elements (f32, a struct of two f32), read as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// One case at 2^log_n: prints a line; returns whether its outputs were
/// right (against the CPU, and the same bits in every deterministic run).
fn line<Op: Case>(
    stream: &Arc<CudaStream>,
    log_n: u32,
    check: impl Fn(&[Op::Element], &[Op::Element], &[usize]) -> bool,
) -> bool
where
    Op::Element: DeviceRepr + ValidAsZeroBits + Send + Sync,
{
    let n = 1usize << log_n;
    let host = input_of::<Op>(n);
    let input = stream.clone_htod(&host).unwrap();
    let mut output: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
    let copy_ms = {
        let mut copy: CudaSlice<Op::Element> = stream.alloc_zeros(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(&input, &mut copy).unwrap()) as f64
    };
    let mut default = timing::bench_scanner::<Op>(stream);
    default.inclusive(stream, &input, &mut output).unwrap();
    let default_ms = time_ms(stream, || {
        default.inclusive(stream, &input, &mut output).unwrap()
    }) as f64;
    let mut deterministic = timing::bench_scanner::<Op>(stream);
    deterministic.set_tuning(deterministic.tuning().with_deterministic(true));
    deterministic
        .inclusive(stream, &input, &mut output)
        .unwrap();
    let first = stream.clone_dtoh(&output).unwrap();
    let ms = time_ms(stream, || {
        deterministic
            .inclusive(stream, &input, &mut output)
            .unwrap()
    }) as f64;
    let mut three = timing::bench_scanner::<Op>(stream);
    three.set_tuning(
        three
            .tuning()
            .with_deterministic(true)
            .with_path(ScanPath::ReduceThenScan),
    );
    three.inclusive(stream, &input, &mut output).unwrap();
    let mut same = bytes(&stream.clone_dtoh(&output).unwrap()) == bytes(&first);
    let three_ms = time_ms(stream, || {
        three.inclusive(stream, &input, &mut output).unwrap()
    }) as f64;
    // The same bits on other streams (the timed calls ran in between).
    for _ in 0..3 {
        let other = stream.context().new_stream().unwrap();
        let mut out: CudaSlice<Op::Element> = other.alloc_zeros(n).unwrap();
        let input = other.clone_htod(&host).unwrap();
        deterministic.inclusive(&other, &input, &mut out).unwrap();
        same &= bytes(&other.clone_dtoh(&out).unwrap()) == bytes(&first);
    }
    let cpu_ok = check(&host, &first, &sample_indices(n));
    println!(
        "{:<8} 2^{log_n:<3} {copy_ms:>8.4} {default_ms:>8.4} {:>6.1}% {ms:>8.4} {:>6.1}% {:>6.2} {three_ms:>8.4} {:>6.1}%  {}{}",
        Op::CUB_NAME,
        100.0 * copy_ms / default_ms,
        100.0 * copy_ms / ms,
        ms / default_ms,
        100.0 * copy_ms / three_ms,
        if cpu_ok { "cpu ok" } else { "DIFFERS FROM CPU" },
        if same { ", same bits" } else { ", BITS DIFFER" },
    );
    cpu_ok && same
}

/// An `f32` prefix sum against the f64 sum of the same values: within
/// 1e-4 of the sum of magnitudes up to it. A prefix goes through a few
/// hundred roundings at most (16 items a thread, the warp's and the
/// block's trees, and the pass over up to 2^16 tile totals), each at most
/// 2^-24 of a partial no larger than that sum: under 3e-5. The f64
/// reference's own error is ~1e-8 of it.
fn agree_sum(host: &[f32], got: &[f32], samples: &[usize]) -> bool {
    let (mut sum, mut magnitude) = (0.0f64, 0.0f64);
    let mut next = samples.iter().peekable();
    for (i, &x) in host.iter().enumerate() {
        sum += x as f64;
        magnitude += x.abs() as f64;
        while next.peek() == Some(&&i) {
            next.next();
            if (got[i] as f64 - sum).abs() > 1e-4 * magnitude {
                return false;
            }
        }
    }
    true
}

/// Affine maps against the CPU backend's scan, within the main table's
/// tolerance ([`Affine`]'s `Case::agree`).
fn agree_affine(host: &[Affine], got: &[Affine], samples: &[usize]) -> bool {
    let mut expected = vec![Affine::IDENTITY; host.len()];
    gpu_scan::cpu::par_scan::<Affine>(ScanKind::Inclusive, host, &mut expected).unwrap();
    samples
        .iter()
        .all(|&i| Affine::agree(&got[i], &expected[i]))
}

/// The table; returns how many lines were wrong.
pub fn table(stream: &Arc<CudaStream>) -> usize {
    println!(
        "\nscan_bench: deterministic scans (ms; % of copy; deterministic over default; its three passes)"
    );
    println!(
        "{:<8} {:<5} {:>8} {:>8} {:>7} {:>8} {:>7} {:>6} {:>8} {:>7}  output",
        "case", "n", "copy", "default", "%copy", "determ.", "%copy", "ratio", "3 passes", "%copy"
    );
    let mut bad = 0;
    for log_n in [24u32, 26, 28] {
        bad += usize::from(!line::<Sum<f32>>(stream, log_n, agree_sum));
        bad += usize::from(!line::<Affine>(stream, log_n, agree_affine));
    }
    println!("scan_bench: deterministic table, {bad} wrong lines");
    bad
}
