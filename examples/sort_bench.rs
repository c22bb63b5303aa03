//! Radix sort timings (`GpuSort`) beside CUB's `DeviceRadixSort` and a
//! copy, in one run, on the keys `cub/sort_bench.cu` generates (the same
//! stateless generator): 2^28 `u32` (all bits, bits 0..24, descending),
//! 2^28 `f32`, 2^27 `u64`, 2^28 `u32` pairs, an argsort of 2^26 `u32`,
//! 2^26 32-byte records by their `f32` field (`sort_by_key`; CUB: a key
//! array, SortPairs, a gather) and 2^20 segments of power-law lengths
//! (`segmented_sort_keys`; CUB: `DeviceSegmentedSort::StableSortKeys`).
//! `GpuSort` sorts in place, so each timed call first restores the input
//! from a pristine copy; the restores' own median time is subtracted (CUB
//! sorts from one buffer into another and needs none). Each is the median
//! of 25 calls bracketed by CUDA events after 3 warm-ups, beside a
//! device-to-device copy of the keys; "bound" is the share of the
//! bytes-moved bound reached (keys and values read and written once a pass,
//! at the copy's bandwidth). Every result is checked in full against the
//! CPU backend's sort and its checksum against CUB's.
//! `SORT_BENCH_SWEEP=1` times every case again in other tile shapes
//! (`GpuSort::set_shape`: threads x items / min blocks, then `b` for the
//! ballot ranking or `o` for the atomic-or one), for the tuning
//! table (or a list of cases: `SORT_BENCH_SWEEP=u32,pairs`);
//! `SORT_BENCH_ONLY=u32,argsort` runs only the cases named.
//!
//! ```text
//! nvcc -O3 -arch=sm_90 -o sort_cub cub/sort_bench.cu && ./sort_cub DIR
//! sort_bench DIR        # reads DIR/cub-sort.txt
//! ```

use gpu_scan::kernels_gen::radix_sort::{SortRank, SortShape};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::{open_device, DeviceSortKey, GpuSort};
use gpu_scan::sort::{self as cpu, SortSpec};
use rayon::prelude::*;
use std::sync::Arc;

#[path = "common/timing.rs"]
mod timing;
use timing::time_ms;

#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::bits;

/// FNV-1a over the bytes of `items`, continuing from `h`.
fn checksum<T: Copy>(items: &[T], mut h: u64) -> u64 {
    // SAFETY: plain data, read as its bytes.
    let bytes = unsafe {
        std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), std::mem::size_of_val(items))
    };
    for &b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}
const FNV: u64 = 0xcbf2_9ce4_8422_2325;

/// CUB's line for a case: `(ms, copy_ms, checksum)`.
fn cub_line(dir: &str, case: &str, log_n: u32) -> Option<(f64, f64, u64)> {
    let text = std::fs::read_to_string(format!("{dir}/cub-sort.txt")).ok()?;
    text.lines().rev().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() == 5 && f[0] == case && f[1] == log_n.to_string())
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?, f[4].parse().ok()?)))
            .flatten()
    })
}

/// The keys of the generator as `K` (its low bytes).
fn keys<K: Copy + Send>(n: usize) -> Vec<K> {
    (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let r = bits(i);
            // SAFETY: K is a primitive of at most 8 bytes, every bit
            // pattern a value; its bytes are r's low bytes.
            unsafe { std::ptr::read_unaligned((&r as *const u64).cast::<K>()) }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn line(
    dir: &str,
    name: &str,
    log_n: u32,
    ms: f64,
    copy_ms: f64,
    passes: u32,
    moved: usize,
    key_bytes: usize,
    h: u64,
    ok: bool,
) -> bool {
    let cub = cub_line(dir, name, log_n);
    let ok = ok && cub.is_none_or(|c| c.2 == h);
    // Bytes-moved bound: every pass reads and writes `moved` bytes, at the
    // copy's bandwidth (which reads and writes `key_bytes`).
    let bound = copy_ms * (passes as usize * moved) as f64 / key_bytes as f64 / ms * 100.0;
    let (cub_ms, ratio) = match cub {
        Some((c, _, _)) => (format!("{c:>8.4}"), format!("{:>6.2}x", c / ms)),
        None => ("       -".into(), "      -".into()),
    };
    println!(
        "{name:<9} 2^{log_n:<3} {ms:>8.4} {copy_ms:>8.4} {:>6.1}% {bound:>6.1}% {cub_ms} {ratio}  {}",
        copy_ms / ms * 100.0,
        if ok { "ok" } else { "MISMATCH" }
    );
    ok
}

/// Whether case `name` runs: `SORT_BENCH_ONLY` (a list of cases) names it,
/// or is unset.
fn wanted(name: &str) -> bool {
    std::env::var("SORT_BENCH_ONLY").map_or(true, |only| only.split(',').any(|c| c == name))
}

/// The tile shapes `SORT_BENCH_SWEEP` times a case in after the default
/// (`1`: every case; or a list of cases), for the tuning table.
fn sweep_shapes(name: &str, key_size: usize, value_size: usize) -> Vec<Option<SortShape>> {
    let sweep = std::env::var("SORT_BENCH_SWEEP").unwrap_or_default();
    let mut shapes = vec![None];
    if sweep == "1" || sweep.split(',').any(|c| c == name) {
        let grid: [(usize, &[usize], &[usize]); 3] = [
            (256, &[8, 12, 16, 20, 24, 32], &[2, 3]),
            (384, &[8, 12, 16], &[2]),
            (512, &[8, 12], &[2]),
        ];
        for rank in [SortRank::Ballots, SortRank::AtomicOr] {
            for (threads, items, min_blocks) in grid {
                for &items in items {
                    for &min_blocks in min_blocks {
                        let shape = SortShape {
                            threads,
                            items,
                            min_blocks,
                            rank,
                        };
                        if shape.check(key_size, value_size).is_ok() {
                            shapes.push(Some(shape));
                        }
                    }
                }
            }
        }
    }
    shapes
}

/// Times a sort of keys `K` (with values `values`, or alone) over `spec`,
/// in the default tile shape and then in each of the sweep's.
fn keys_case<K: DeviceSortKey + DeviceRepr + ValidAsZeroBits + Send + Sync>(
    stream: &Arc<CudaStream>,
    sort: &mut GpuSort,
    dir: &str,
    name: &str,
    log_n: u32,
    spec: SortSpec,
    values: Option<Vec<u32>>,
) -> bool {
    if !wanted(name) {
        return true;
    }
    let n = 1usize << log_n;
    let host: Vec<K> = keys(n);
    let value_size = if values.is_some() { 4 } else { 0 };
    let shapes = sweep_shapes(name, std::mem::size_of::<K>(), value_size);
    let mut want_k = host.clone();
    let mut want_v = values.clone();
    match want_v.as_mut() {
        None => cpu::sort_keys(&mut want_k, spec.clone()).unwrap(),
        Some(v) => cpu::sort_pairs(&mut want_k, v, spec.clone()).unwrap(),
    }
    let mut ok = true;
    for shape in shapes {
        sort.set_shape(shape);
        if let Some(s) = shape {
            let rank = match s.rank {
                SortRank::Ballots => "b",
                SortRank::AtomicOr => "o",
            };
            print!("  {:>3}x{:<2}/{}{rank} ", s.threads, s.items, s.min_blocks);
        }
        ok &= keys_case_in::<K>(
            stream,
            sort,
            dir,
            name,
            log_n,
            &spec,
            &host,
            values.as_deref(),
            &want_k,
            want_v.as_deref(),
        );
    }
    sort.set_shape(None);
    ok
}

/// One shape's timing of [`keys_case`], against the CPU's sorted keys
/// `want_k` (and values `want_v`).
#[allow(clippy::too_many_arguments)]
fn keys_case_in<K: DeviceSortKey + DeviceRepr + ValidAsZeroBits + Send + Sync>(
    stream: &Arc<CudaStream>,
    sort: &mut GpuSort,
    dir: &str,
    name: &str,
    log_n: u32,
    spec: &SortSpec,
    host: &[K],
    values: Option<&[u32]>,
    want_k: &[K],
    want_v: Option<&[u32]>,
) -> bool {
    let n = 1usize << log_n;
    let pristine = stream.clone_htod(host).unwrap();
    let mut work: CudaSlice<K> = stream.alloc_zeros(n).unwrap();
    let passes = spec.range_of(K::BITS).unwrap().len().div_ceil(8) as u32;
    let key_bytes = n * std::mem::size_of::<K>();
    let (ms, ok, h, moved) = match (values, want_v) {
        (None, _) | (_, None) => {
            let want = want_k;
            stream.memcpy_dtod(&pristine, &mut work).unwrap();
            sort.sort_keys(stream, &mut work, spec).unwrap();
            let got = stream.clone_dtoh(&work).unwrap();
            let ok = checksum(&got, FNV) == checksum(want, FNV);
            let both = time_ms(stream, || {
                stream.memcpy_dtod(&pristine, &mut work).unwrap();
                sort.sort_keys(stream, &mut work, spec).unwrap();
            }) as f64;
            let ms =
                both - time_ms(stream, || stream.memcpy_dtod(&pristine, &mut work).unwrap()) as f64;
            (ms, ok, checksum(&got, FNV), key_bytes)
        }
        (Some(values), Some(want_v)) => {
            let pristine_v = stream.clone_htod(values).unwrap();
            let mut work_v: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
            let restore = |w: &mut CudaSlice<K>, wv: &mut CudaSlice<u32>| {
                stream.memcpy_dtod(&pristine, w).unwrap();
                stream.memcpy_dtod(&pristine_v, wv).unwrap();
            };
            restore(&mut work, &mut work_v);
            sort.sort_pairs(stream, &mut work, &mut work_v, spec)
                .unwrap();
            let (got_k, got_v) = (
                stream.clone_dtoh(&work).unwrap(),
                stream.clone_dtoh(&work_v).unwrap(),
            );
            let ok = got_k
                .iter()
                .zip(want_k)
                .all(|(a, b)| checksum(&[*a], 0) == checksum(&[*b], 0))
                && got_v == want_v;
            let both = time_ms(stream, || {
                restore(&mut work, &mut work_v);
                sort.sort_pairs(stream, &mut work, &mut work_v, spec)
                    .unwrap();
            }) as f64;
            let ms = both - time_ms(stream, || restore(&mut work, &mut work_v)) as f64;
            (
                ms,
                ok,
                checksum(&got_v, checksum(&got_k, FNV)),
                key_bytes + 4 * n,
            )
        }
    };
    let copy_ms = time_ms(stream, || stream.memcpy_dtod(&pristine, &mut work).unwrap()) as f64;
    line(
        dir, name, log_n, ms, copy_ms, passes, moved, key_bytes, h, ok,
    )
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    let ctx = open_device(0).expect("a GPU");
    let stream = ctx.new_stream().unwrap();
    let mut sort = GpuSort::new(&ctx).unwrap();
    println!("case      size      ms     copy ms   %copy  %bound  CUB ms  vs CUB  check");
    let mut ok = true;
    let s = &stream;
    ok &= keys_case::<u32>(s, &mut sort, &dir, "u32", 28, SortSpec::ascending(), None);
    ok &= keys_case::<u32>(
        s,
        &mut sort,
        &dir,
        "u32-24",
        28,
        SortSpec::ascending().bits(0..24),
        None,
    );
    ok &= keys_case::<u32>(
        s,
        &mut sort,
        &dir,
        "u32-desc",
        28,
        SortSpec::descending(),
        None,
    );
    ok &= keys_case::<f32>(s, &mut sort, &dir, "f32", 28, SortSpec::ascending(), None);
    ok &= keys_case::<u64>(s, &mut sort, &dir, "u64", 27, SortSpec::ascending(), None);
    let values: Vec<u32> = (0..1u64 << 28)
        .into_par_iter()
        .map(|i| (bits(i) >> 32) as u32)
        .collect();
    ok &= keys_case::<u32>(
        s,
        &mut sort,
        &dir,
        "pairs",
        28,
        SortSpec::ascending(),
        Some(values),
    );

    if wanted("argsort") {
        ok &= argsort_case(s, &mut sort, &dir);
    }
    if wanted("records") {
        ok &= records_case(s, &mut sort, &dir);
    }
    if wanted("segmented") {
        ok &= segmented_case(s, &mut sort, &dir);
    }
    assert!(ok, "a sort differs from the CPU's or CUB's");
}

/// Argsort: the keys are read, not moved; the indices written.
fn argsort_case(stream: &Arc<CudaStream>, sort: &mut GpuSort, dir: &str) -> bool {
    let log_n = 26;
    let n = 1usize << log_n;
    let host: Vec<u32> = keys(n);
    let want: Vec<u64> = cpu::argsort(&host, SortSpec::ascending())
        .unwrap()
        .into_iter()
        .map(|i| i as u64)
        .collect();
    let d_keys = stream.clone_htod(&host).unwrap();
    let mut indices: CudaSlice<u64> = stream.alloc_zeros(n).unwrap();
    sort.argsort(stream, &d_keys, &mut indices, &SortSpec::ascending())
        .unwrap();
    let got = stream.clone_dtoh(&indices).unwrap();
    let sorted: Vec<u32> = got.iter().map(|&i| host[i as usize]).collect();
    let h = checksum(&got, checksum(&sorted, FNV));
    let ms = time_ms(stream, || {
        sort.argsort(stream, &d_keys, &mut indices, &SortSpec::ascending())
            .unwrap()
    }) as f64;
    let mut copy: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    let copy_ms = time_ms(stream, || stream.memcpy_dtod(&d_keys, &mut copy).unwrap()) as f64;
    line(
        dir,
        "argsort",
        log_n,
        ms,
        copy_ms,
        4,
        12 * n,
        4 * n,
        h,
        got == want,
    )
}

/// A 32-byte record sorted by its `f32` field (`cub/sort_bench.cu`'s).
#[scan_op]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Record {
    key: f32,
    payload: [u32; 7],
}

#[sort_key(record = Record, key = f32, by = |r| r.key)]
struct ByRecordKey;

/// Record i, as `cub/sort_bench.cu` makes it: its key from the generator's
/// high bits as a float in [-1, 1), the payload its index and its bits.
fn record(i: u64) -> Record {
    let r = bits(i);
    let mut payload = [0u32; 7];
    for (j, p) in payload.iter_mut().enumerate() {
        *p = if j == 0 {
            i as u32
        } else {
            (r >> (4 * j)) as u32
        };
    }
    Record {
        key: ((r >> 32) as u32 as i32) as f32 / 2_147_483_648.0,
        payload,
    }
}

/// 2^26 records sorted by their key (`GpuSort::sort_by_key`) against CUB's
/// key array, SortPairs and gather; "bound": one read and write of the
/// records.
fn records_case(stream: &Arc<CudaStream>, sort: &mut GpuSort, dir: &str) -> bool {
    let log_n = 26;
    let n = 1usize << log_n;
    let host: Vec<Record> = (0..n as u64).into_par_iter().map(record).collect();
    let mut want = host.clone();
    cpu::sort_by_key::<ByRecordKey>(&mut want, SortSpec::ascending()).unwrap();
    let pristine = stream.clone_htod(&host).unwrap();
    let mut work: CudaSlice<Record> = stream.alloc_zeros(n).unwrap();
    stream.memcpy_dtod(&pristine, &mut work).unwrap();
    sort.sort_by_key::<ByRecordKey>(stream, &mut work, &SortSpec::ascending())
        .unwrap();
    let got = stream.clone_dtoh(&work).unwrap();
    let ok = checksum(&got, FNV) == checksum(&want, FNV);
    let both = time_ms(stream, || {
        stream.memcpy_dtod(&pristine, &mut work).unwrap();
        sort.sort_by_key::<ByRecordKey>(stream, &mut work, &SortSpec::ascending())
            .unwrap();
    }) as f64;
    let copy_ms = time_ms(stream, || stream.memcpy_dtod(&pristine, &mut work).unwrap()) as f64;
    let bytes = 32 * n;
    line(
        dir,
        "records",
        log_n,
        both - copy_ms,
        copy_ms,
        1,
        bytes,
        bytes,
        checksum(&got, FNV),
        ok,
    )
}

/// Segment s's length (`cub/sort_bench.cu`'s): 1 to 2^16 elements, its
/// log2 geometric (the generator's trailing zeros), a power law.
fn segment_length(s: u64) -> u64 {
    let r = bits(s ^ 0x05e6_5e65_e65e_65e6);
    let zeros = r.trailing_zeros().min(16);
    1 + ((r >> 32) & ((1u64 << zeros) - 1))
}

/// 2^20 segments of power-law lengths of `u32` keys sorted by segment
/// (`GpuSort::segmented_sort_keys`) against CUB's
/// `DeviceSegmentedSort::StableSortKeys`.
fn segmented_case(stream: &Arc<CudaStream>, sort: &mut GpuSort, dir: &str) -> bool {
    use gpu_scan::scan_runtime::DeviceOffsets;
    let log_segments = 20;
    let mut offsets = vec![0u32];
    for s in 0..1u64 << log_segments {
        offsets.push(offsets.last().unwrap() + segment_length(s) as u32);
    }
    let n = *offsets.last().unwrap() as usize;
    let host: Vec<u32> = (0..n as u64).map(|i| bits(i) as u32).collect();
    let mut want = host.clone();
    cpu::segmented_sort_keys(&mut want, &offsets, SortSpec::ascending()).unwrap();
    let d_offsets = stream.clone_htod(&offsets).unwrap();
    let checked = DeviceOffsets::check(stream, d_offsets.as_view(), n).unwrap();
    let pristine = stream.clone_htod(&host).unwrap();
    let mut work: CudaSlice<u32> = stream.alloc_zeros(n).unwrap();
    stream.memcpy_dtod(&pristine, &mut work).unwrap();
    sort.segmented_sort_keys(stream, &mut work, &checked, &SortSpec::ascending())
        .unwrap();
    let got = stream.clone_dtoh(&work).unwrap();
    let ok = got == want;
    let both = time_ms(stream, || {
        stream.memcpy_dtod(&pristine, &mut work).unwrap();
        sort.segmented_sort_keys(stream, &mut work, &checked, &SortSpec::ascending())
            .unwrap();
    }) as f64;
    let copy_ms = time_ms(stream, || stream.memcpy_dtod(&pristine, &mut work).unwrap()) as f64;
    println!("segmented: {n} keys in {} segments", offsets.len() - 1);
    line(
        dir,
        "segmented",
        log_segments,
        both - copy_ms,
        copy_ms,
        4,
        4 * n,
        4 * n,
        checksum(&got, FNV),
        ok,
    )
}
