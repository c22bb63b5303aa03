//! Compaction timings (`GpuSelect`) beside CUB's and a copy, in one run:
//! select by a predicate keeping about half of 2^28 `u32`, select by flags,
//! partition (two ways, and three ways by the words' residues mod 3),
//! unique and run-length encoding over runs of mean length 8,
//! reduce-by-key (sums of the words by keys in runs of mean 1000), and
//! select over 2^26
//! 24-byte structs, select and partition of 2^27 `u64`, on the inputs `cub/select_bench.cu` generates (the same
//! stateless generator). Each is the median of 25 calls bracketed by CUDA
//! events after 3 warm-ups, beside a device-to-device copy of its input;
//! "bound" is the share of the bytes-moved bound reached (input read once,
//! the kept elements written once, at the copy's bandwidth). Every output
//! is first checked in full against the CPU backend, and the count against
//! CUB's. `SELECT_BENCH_SWEEP=1` times every case again in other tile
//! shapes (`GpuSelect::set_shape`), for the tuning table (or a list of
//! cases: `SELECT_BENCH_SWEEP=unique,struct`); `SELECT_BENCH_ONLY=three,rbk`
//! runs only the cases named.
//!
//! ```text
//! nvcc -O3 -arch=sm_90 -o select_cub cub/select_bench.cu && ./select_cub DIR
//! select_bench DIR        # reads DIR/cub-select.txt
//! ```

use gpu_scan::kernels_gen::select::{SelectKernel, SelectShape};
use gpu_scan::ops::Sum;
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::{open_device, GpuSelect};
use gpu_scan::select::{self as cpu, Rejected};
use rayon::prelude::*;
use std::sync::Arc;

#[path = "common/timing.rs"]
mod timing;
use timing::time_ms;

#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::bits;

/// Even words: about half of random ones.
#[scan_predicate(element = u32, keep = |x| x % 2 == 0)]
struct Even;

/// Multiples of three, then one more than them: a three-way partition of
/// random words in about thirds.
#[scan_predicate(element = u32, keep = |x| x % 3 == 0)]
struct Third;
#[scan_predicate(element = u32, keep = |x| x % 3 == 1)]
struct OneMore;

/// Equal words.
#[scan_equality(element = u32, eq = |a, b| a == b)]
struct Same;

/// Count, sum and max: a 24-byte element (CUB's `Stats`).
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

/// Even 8-byte words.
#[scan_predicate(element = u64, keep = |x| x % 2 == 0)]
struct EvenU64;

/// Statistics with an even count.
#[scan_predicate(element = Stats, keep = |s| s.count % 2 == 0)]
struct EvenCount;

/// CUB's line for a case: `(ms, copy_ms, count)`.
fn cub_line(dir: &str, case: &str, log_n: u32) -> Option<(f64, f64, u64)> {
    let text = std::fs::read_to_string(format!("{dir}/cub-select.txt")).ok()?;
    text.lines().rev().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() == 5 && f[0] == case && f[1] == log_n.to_string())
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?, f[4].parse().ok()?)))
            .flatten()
    })
}

/// Times `run` (which writes the counts to `count`, `counts.len()`
/// slots), checks the output against `expected` (the CPU's first
/// `counts[0]` elements, or all of them for a partition) and the slots
/// against `counts`, and prints the case's line.
#[allow(clippy::too_many_arguments)]
fn case<T: DeviceRepr + ValidAsZeroBits + PartialEq + Copy + Send + Sync>(
    stream: &Arc<CudaStream>,
    dir: &str,
    (name, shape): (&str, String),
    log_n: u32,
    input: &CudaSlice<T>,
    expected: &[T],
    counts: &[usize],
    writes_all: bool,
    mut run: impl FnMut(&mut CudaSlice<T>, &mut CudaSlice<u64>),
) -> bool {
    let n = input.len();
    let kept = counts[0];
    let mut out: CudaSlice<T> = stream.alloc_zeros(n).unwrap();
    let mut count: CudaSlice<u64> = stream.alloc_zeros(counts.len()).unwrap();
    run(&mut out, &mut count);
    let got_counts: Vec<usize> = stream
        .clone_dtoh(&count)
        .unwrap()
        .iter()
        .map(|&c| c as usize)
        .collect();
    let got = stream.clone_dtoh(&out).unwrap();
    let upto = if writes_all { n } else { kept };
    let ok = got_counts == counts
        && got[..upto]
            .par_iter()
            .zip(&expected[..upto])
            .all(|(a, b)| a == b);
    let ms = time_ms(stream, || run(&mut out, &mut count)) as f64;
    let copy_ms = {
        let mut copy: CudaSlice<T> = stream.alloc_zeros(n).unwrap();
        time_ms(stream, || stream.memcpy_dtod(input, &mut copy).unwrap()) as f64
    };
    // Bytes-moved bound: n read and `written` written, at the copy's 2n
    // (run-length encoding also writes an 8-byte length per run).
    let written = if writes_all { n } else { kept };
    // (run-length encoding also writes an 8-byte length per run,
    // reduce-by-key reads the keys and writes one per run.)
    let extra = match name {
        "rle" => 8 * kept,
        "rbk" => 4 * (n + kept),
        _ => 0,
    };
    let size = std::mem::size_of::<T>();
    let bound =
        copy_ms * ((n + written) * size + extra) as f64 / (2 * n * size) as f64 / ms * 100.0;
    line(dir, (name, &shape), log_n, (ms, copy_ms, bound), kept, ok)
}

/// Prints a case's line beside CUB's time for it (whose count must be
/// `kept`); returns whether the case and the count agree.
fn line(
    dir: &str,
    (name, shape): (&str, &str),
    log_n: u32,
    (ms, copy_ms, bound): (f64, f64, f64),
    kept: usize,
    mut ok: bool,
) -> bool {
    let cub = cub_line(dir, name, log_n);
    if let Some((_, _, cub_count)) = cub {
        ok &= cub_count as usize == kept;
    }
    let (cub_ms, ratio) = match cub {
        Some((cub_ms, _, _)) => (format!("{cub_ms:>8.4}"), format!("{:>6.2}x", cub_ms / ms)),
        None => ("       -".into(), "      -".into()),
    };
    println!(
        "{name:<10} 2^{log_n:<3} {ms:>8.4} {copy_ms:>8.4} {:>6.1}% {bound:>6.1}% {cub_ms} {ratio}  {} {shape}",
        copy_ms / ms * 100.0,
        if ok { "ok" } else { "MISMATCH" }
    );
    ok
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    let ctx = open_device(0).expect("a GPU");
    let stream = ctx.new_stream().unwrap();
    let mut select = GpuSelect::new(&ctx).unwrap();
    println!("case       size     ms     copy ms   %copy  %bound  CUB ms  vs CUB  check shape");
    // SELECT_BENCH_SWEEP=1: every case again for each tile shape
    // (threads x items / min blocks), after the defaults.
    let sweep = std::env::var("SELECT_BENCH_SWEEP").unwrap_or_default();
    // SELECT_BENCH_ONLY=a,b: only the named cases.
    let only = std::env::var("SELECT_BENCH_ONLY").unwrap_or_default();
    let shapes = |case: &str, size: usize| -> Vec<Option<SelectShape>> {
        if !only.is_empty() && !only.split(',').any(|c| c == case) {
            return Vec::new();
        }
        let mut v = vec![None];
        if sweep == "1" || sweep.split(',').any(|c| c == case) {
            // (Reduce-by-key's threads walk their items in shared memory
            // with a stride of `items` words: odd ones avoid bank
            // conflicts.)
            let items: &[usize] = if case == "rbk" {
                &[13, 17, 19, 21, 23, 25, 27, 29, 31]
            } else if size > 8 {
                &[4, 5, 6, 7]
            } else if size > 4 {
                &[8, 12, 16, 21]
            } else {
                &[16, 20, 24, 28, 32]
            };
            // SELECT_BENCH_THREADS=128,512: other thread counts too.
            let mut threads: Vec<usize> = if case == "rbk" {
                vec![128, 256]
            } else {
                vec![256]
            };
            for t in std::env::var("SELECT_BENCH_THREADS")
                .unwrap_or_default()
                .split(',')
            {
                if let Ok(t) = t.parse::<usize>() {
                    if !threads.contains(&t) {
                        threads.push(t);
                    }
                }
            }
            let blocks: &[usize] = if case == "rbk" {
                &[2, 4]
            } else {
                &[2, 3, 4, 5, 6]
            };
            for &threads in &threads {
                for &items in items {
                    for &min_blocks in blocks {
                        let shape = SelectShape {
                            threads,
                            items,
                            min_blocks,
                        };
                        let kernel = match case {
                            "rbk" => SelectKernel::ReduceByKey,
                            "flagged" => SelectKernel::Flagged,
                            "partition" | "u64-part" => SelectKernel::PartitionIf,
                            "three" => SelectKernel::PartitionThree,
                            "unique" => SelectKernel::Unique,
                            "rle" => SelectKernel::RunLengthEncode,
                            _ => SelectKernel::If,
                        };
                        if shape.check(kernel, size).is_ok() {
                            v.push(Some(shape));
                        }
                    }
                }
            }
        }
        v
    };
    let defaults = GpuSelect::new(&ctx).unwrap();
    let label = |shape: Option<SelectShape>, kernel: SelectKernel, size: usize| {
        let s = shape.unwrap_or(defaults.shape_for(kernel, size).unwrap());
        format!(
            "{}x{}/{}{}",
            s.threads,
            s.items,
            s.min_blocks,
            if shape.is_none() { " (default)" } else { "" }
        )
    };
    let mut ok = true;

    let log_n = 28;
    let n = 1usize << log_n;
    let words: Vec<u32> = (0..n as u64)
        .into_par_iter()
        .map(|i| bits(i) as u32)
        .collect();
    let flags: Vec<u8> = (0..n as u64)
        .into_par_iter()
        .map(|i| ((bits(i) >> 32) & 1) as u8)
        .collect();
    let mut key = 0u32;
    let runs: Vec<u32> = (0..n as u64)
        .map(|i| {
            let r = bits(i);
            if i > 0 && (r >> 40) % 8 == 0 {
                key = key.wrapping_add(1 + ((r >> 48) % 3) as u32);
            }
            key
        })
        .collect();
    let mut segment = 0u32;
    let segments: Vec<u32> = (0..n as u64)
        .map(|i| {
            if i > 0 && (bits(i) >> 36) % 1000 == 0 {
                segment += 1;
            }
            segment
        })
        .collect();
    let d_words = stream.clone_htod(&words).unwrap();
    let d_flags = stream.clone_htod(&flags).unwrap();
    let d_runs = stream.clone_htod(&runs).unwrap();
    let mut expected = vec![0u32; n];

    let kept = cpu::select_if::<Even>(&words, &mut expected).unwrap();
    for shape in shapes("select-if", 4) {
        select.set_shape(shape);
        let name = ("select-if", label(shape, SelectKernel::If, 4));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_words,
            &expected,
            &[kept],
            false,
            |out, c| select.select_if::<Even>(&stream, &d_words, out, c).unwrap(),
        );
    }
    let kept = cpu::select_flagged(&words, &flags, &mut expected).unwrap();
    for shape in shapes("flagged", 4) {
        select.set_shape(shape);
        let name = ("flagged", label(shape, SelectKernel::Flagged, 4));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_words,
            &expected,
            &[kept],
            false,
            |out, c| {
                select
                    .select_flagged(&stream, &d_words, &d_flags, out, c)
                    .unwrap()
            },
        );
    }
    let kept = cpu::partition_if::<Even>(&words, &mut expected, Rejected::Reversed).unwrap();
    for shape in shapes("partition", 4) {
        select.set_shape(shape);
        let name = ("partition", label(shape, SelectKernel::PartitionIf, 4));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_words,
            &expected,
            &[kept],
            true,
            |out, c| {
                select
                    .partition_if::<Even>(&stream, &d_words, out, Rejected::Reversed, c)
                    .unwrap()
            },
        );
    }
    let (first, second) = cpu::partition_three::<Third, OneMore>(&words, &mut expected).unwrap();
    for shape in shapes("three", 4) {
        select.set_shape(shape);
        let name = ("three", label(shape, SelectKernel::PartitionThree, 4));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_words,
            &expected,
            &[first, second],
            true,
            |out, c| {
                select
                    .partition_three::<Third, OneMore>(&stream, &d_words, out, c)
                    .unwrap()
            },
        );
    }
    let kept = cpu::unique::<Same>(&runs, &mut expected).unwrap();
    for shape in shapes("unique", 4) {
        select.set_shape(shape);
        let name = ("unique", label(shape, SelectKernel::Unique, 4));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_runs,
            &expected,
            &[kept],
            false,
            |out, c| select.unique::<Same>(&stream, &d_runs, out, c).unwrap(),
        );
    }
    let mut lengths = vec![0u64; n];
    let kept = cpu::run_length_encode::<Same>(&runs, &mut expected, &mut lengths).unwrap();
    let mut d_lengths = stream.alloc_zeros::<u64>(n).unwrap();
    for shape in shapes("rle", 4) {
        select.set_shape(shape);
        let name = ("rle", label(shape, SelectKernel::RunLengthEncode, 4));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_runs,
            &expected,
            &[kept],
            false,
            |out, c| {
                select
                    .run_length_encode::<Same>(&stream, &d_runs, out, &mut d_lengths, c)
                    .unwrap()
            },
        );
        let got = stream.clone_dtoh(&d_lengths).unwrap();
        if got[..kept] != lengths[..kept] {
            println!("rle: the lengths differ from the CPU's");
            ok = false;
        }
    }
    // Non-trivial runs of the same runs: an 8-byte offset and length each.
    if only.is_empty() || only.split(',').any(|c| c == "ntr") {
        select.set_shape(None);
        let mut offsets = vec![0u64; n];
        let long = cpu::non_trivial_runs::<Same>(&runs, &mut offsets, &mut lengths).unwrap();
        let d_offsets = stream.alloc_zeros::<u64>(n).unwrap();
        let d_count = stream.alloc_zeros::<u64>(1).unwrap();
        let mut d_outputs = (d_offsets, d_lengths.clone(), d_count);
        type Outputs = (CudaSlice<u64>, CudaSlice<u64>, CudaSlice<u64>);
        let mut run = |(offsets, lengths, count): &mut Outputs| {
            select
                .non_trivial_runs::<Same>(&stream, &d_runs, offsets, lengths, count)
                .unwrap()
        };
        run(&mut d_outputs);
        let ok_here = stream.clone_dtoh(&d_outputs.2).unwrap()[0] as usize == long
            && stream.clone_dtoh(&d_outputs.0).unwrap()[..long] == offsets[..long]
            && stream.clone_dtoh(&d_outputs.1).unwrap()[..long] == lengths[..long];
        let ms = time_ms(&stream, || run(&mut d_outputs)) as f64;
        let copy_ms = {
            let mut copy = stream.alloc_zeros::<u32>(n).unwrap();
            time_ms(&stream, || stream.memcpy_dtod(&d_runs, &mut copy).unwrap()) as f64
        };
        let bound = copy_ms * (4 * n + 16 * long) as f64 / (8 * n) as f64 / ms * 100.0;
        let shape = label(None, SelectKernel::NonTrivialRuns, 4);
        ok &= line(
            &dir,
            ("ntr", &shape),
            log_n,
            (ms, copy_ms, bound),
            long,
            ok_here,
        );
    }
    // Reduce-by-key: sums of the words by segment numbers (runs of mean
    // 1000); the keys are checked, the sums compared as the values.
    let mut keys_expected = vec![0u32; n];
    let kept =
        cpu::reduce_by_key::<Same, Sum<u32>>(&segments, &words, &mut keys_expected, &mut expected)
            .unwrap();
    let d_segments = stream.clone_htod(&segments).unwrap();
    let mut d_keys_out = stream.alloc_zeros::<u32>(n).unwrap();
    for shape in shapes("rbk", 8) {
        select.set_shape(shape);
        let name = ("rbk", label(shape, SelectKernel::ReduceByKey, 8));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_words,
            &expected,
            &[kept],
            false,
            |out, c| {
                select
                    .reduce_by_key::<Same, Sum<u32>>(
                        &stream,
                        &d_segments,
                        &d_words,
                        &mut d_keys_out,
                        out,
                        c,
                    )
                    .unwrap()
            },
        );
        let got = stream.clone_dtoh(&d_keys_out).unwrap();
        if got[..kept] != keys_expected[..kept] {
            println!("rbk: the keys differ from the CPU's");
            ok = false;
        }
    }
    drop((
        d_words, d_flags, d_runs, words, flags, runs, expected, lengths,
    ));
    drop((d_segments, segments, d_keys_out, keys_expected));

    let log_n = 26;
    let n = 1usize << log_n;
    let stats: Vec<Stats> = (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let r = bits(i);
            Stats {
                count: (r & 0xff) as u32,
                sum: (r >> 11) as f64 * (-53f64).exp2(),
                max: ((r >> 40) & 0xffff) as f32,
            }
        })
        .collect();
    let d_stats = stream.clone_htod(&stats).unwrap();
    let mut expected = vec![
        Stats {
            count: 0,
            sum: 0.0,
            max: 0.0
        };
        n
    ];
    let kept = cpu::select_if::<EvenCount>(&stats, &mut expected).unwrap();
    for shape in shapes("struct", 24) {
        select.set_shape(shape);
        let name = ("struct", label(shape, SelectKernel::If, 24));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_stats,
            &expected,
            &[kept],
            false,
            |out, c| {
                select
                    .select_if::<EvenCount>(&stream, &d_stats, out, c)
                    .unwrap()
            },
        );
    }
    drop(d_stats);

    // 8-byte words, 2^27 (the same bytes as 2^28 words): select and
    // partition (no CUB line).
    let log_n = 27;
    let n = 1usize << log_n;
    let longs: Vec<u64> = (0..n as u64).into_par_iter().map(bits).collect();
    let d_longs = stream.clone_htod(&longs).unwrap();
    let mut expected = vec![0u64; n];
    let kept = cpu::select_if::<EvenU64>(&longs, &mut expected).unwrap();
    for shape in shapes("u64", 8) {
        select.set_shape(shape);
        let name = ("u64", label(shape, SelectKernel::If, 8));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_longs,
            &expected,
            &[kept],
            false,
            |out, c| {
                select
                    .select_if::<EvenU64>(&stream, &d_longs, out, c)
                    .unwrap()
            },
        );
    }
    let kept = cpu::partition_if::<EvenU64>(&longs, &mut expected, Rejected::Reversed).unwrap();
    for shape in shapes("u64-part", 8) {
        select.set_shape(shape);
        let name = ("u64-part", label(shape, SelectKernel::PartitionIf, 8));
        ok &= case(
            &stream,
            &dir,
            name,
            log_n,
            &d_longs,
            &expected,
            &[kept],
            true,
            |out, c| {
                select
                    .partition_if::<EvenU64>(&stream, &d_longs, out, Rejected::Reversed, c)
                    .unwrap()
            },
        );
    }
    assert!(
        ok,
        "select_bench: an output differs from the CPU's or a count from CUB's"
    );
}
