//! Radix sort on the GPU (`GpuSort`: keys, pairs, argsort) against the CPU
//! backend's sort of the same names, bit for bit, on fresh random keys
//! (`GPU_SORT_SEED` replays): every key type, both orders, all bits and a
//! range of them, keys of few distinct values (stability: values carry
//! their input positions, so a tie out of order shows) and floats with
//! NaNs, infinities and both zeros, over lengths at every boundary of the
//! onesweep tile. Each sort works on the first `n` elements of a longer
//! buffer whose tail is poisoned and must stay so; argsort's indices are
//! poisoned before. Two streams from `ctx.new_stream()` take turns, under
//! cudarc's default event tracking. Bad requests get typed errors and
//! leave the buffers untouched. Other tile shapes (more threads than
//! digits, values staged and not) sort the same. Records sort by a
//! `#[sort_key]` of one and of three components as the CPU sorts them, and
//! segments by offsets (power-law lengths, empty segments, keys outside
//! them) as the CPU's segmented sorts do. A reserved sort is
//! captured in a CUDA graph and replayed on fresh keys.
#![cfg(feature = "gpu")]

mod common;
use common::gpu::{captured_graph, gpu_alone, gpu_shared, open_gpu, poison, poisoned, Rng64};
use common::ops::{Affine, BySignCountSum, BySlope, Stats};
use gpu_scan::kernels_gen::radix_sort::{SortRank, SortShape};
use gpu_scan::scan_runtime::cudarc::driver::sys::CUstreamCaptureMode;
use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use gpu_scan::scan_runtime::{DeviceSortKey, GpuSort, ScanError};
use gpu_scan::sort::{self as cpu, SortError, SortKey, SortSpec};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// Elements after each buffer's `n`, which must stay poisoned.
const GUARD: usize = 67;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("GPU_SORT_SEED");
    println!("gpu_sort: seed {seed} (GPU_SORT_SEED={seed} replays)");
    seed
}

/// Lengths around one onesweep tile and around many, for keys `K` alone
/// and carrying 8-byte values (whose tiles may be smaller), in the tiles
/// `sort` takes on this GPU.
fn lengths<K: DeviceSortKey>(sort: &GpuSort) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 31, 32, 33, 255, 257, 100_003, (1 << 20) + 3];
    for values in [0, 8] {
        let tile = sort.shape_for::<K>(values).unwrap().tile_items();
        v.extend([
            tile - 1,
            tile,
            tile + 1,
            2 * tile - 1,
            7 * tile + 5,
            40 * tile - 1,
            40 * tile + 1,
        ]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// A key type the test draws: full-range keys, keys of few distinct values,
/// and (floats) special values among them.
trait TestKey: DeviceSortKey + DeviceRepr + ValidAsZeroBits + std::fmt::Debug {
    fn random(rng: &mut Rng64, few: bool) -> Self;
    /// The key's bytes, compared bit for bit.
    fn bits(self) -> u64;
}

macro_rules! int_keys {
    ($($t:ty),*) => {$(
        impl TestKey for $t {
            fn random(rng: &mut Rng64, few: bool) -> Self {
                if few { rng.random_range(0..4) as $t } else { rng.random() }
            }
            fn bits(self) -> u64 {
                self as u64
            }
        }
    )*};
}
int_keys!(u8, u16, u32, u64, i8, i16, i32, i64);

impl TestKey for f32 {
    fn random(rng: &mut Rng64, few: bool) -> Self {
        const SPECIAL: [f32; 6] = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        match rng.random_range(0..16) {
            0 => SPECIAL[rng.random_range(0..SPECIAL.len())],
            _ if few => rng.random_range(-2..2) as f32,
            _ => f32::from_bits(rng.random()),
        }
    }
    fn bits(self) -> u64 {
        self.to_bits().into()
    }
}

impl TestKey for f64 {
    fn random(rng: &mut Rng64, few: bool) -> Self {
        const SPECIAL: [f64; 6] = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        match rng.random_range(0..16) {
            0 => SPECIAL[rng.random_range(0..SPECIAL.len())],
            _ if few => rng.random_range(-2..2) as f64,
            _ => f64::from_bits(rng.random()),
        }
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Keys `keys` followed by `GUARD` poisoned elements, on `stream`.
fn upload_with_guard<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    host: &[T],
) -> CudaSlice<T> {
    let mut buf = stream.alloc_zeros::<T>(host.len() + GUARD).expect("alloc");
    poison(stream, &mut buf);
    if !host.is_empty() {
        stream
            .memcpy_htod(host, &mut buf.slice_mut(0..host.len()))
            .expect("upload");
    }
    buf
}

/// The first `n` elements downloaded, and whether the guard after them is
/// still poisoned.
fn download<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    buf: &CudaSlice<T>,
    n: usize,
) -> (Vec<T>, bool) {
    let mut host = stream.clone_dtoh(buf).expect("download");
    let guard_ok = poisoned(&host[n..]);
    host.truncate(n);
    (host, guard_ok)
}

/// Every sort of keys `K` against the CPU's; failures go to `failures`.
fn check_key<K: TestKey>(
    sort: &mut GpuSort,
    streams: &[Arc<CudaStream>; 2],
    rng: &mut Rng64,
    failures: &mut Vec<String>,
) {
    let name = std::any::type_name::<K>();
    let specs = [
        SortSpec::ascending(),
        SortSpec::descending(),
        SortSpec::ascending().bits(3..(K::BITS - 2)),
        SortSpec::descending().bits(0..(K::BITS / 2 + 1)),
    ];
    let mut turn = 0;
    for n in lengths::<K>(sort) {
        for few in [false, true] {
            let keys: Vec<K> = (0..n).map(|_| K::random(rng, few)).collect();
            for spec in &specs {
                let stream = &streams[turn % 2];
                turn += 1;
                let case = format!("{name} n={n} few={few} {spec:?}");
                let bits = |v: &[K]| v.iter().map(|&k| k.bits()).collect::<Vec<_>>();

                // Keys alone.
                let mut want = keys.clone();
                cpu::sort_keys(&mut want, spec.clone()).expect("cpu sort");
                let mut buf = upload_with_guard(stream, &keys);
                let ran = sort.sort_keys(stream, &mut buf.slice_mut(0..n), spec);
                let (got, guard_ok) = download(stream, &buf, n);
                if let Err(e) = ran {
                    failures.push(format!("{case} sort_keys: {e}"));
                } else if bits(&got) != bits(&want) || !guard_ok {
                    failures.push(format!(
                        "{case} sort_keys: wrong keys (guard kept: {guard_ok})"
                    ));
                }

                // Pairs: positions (stability) and a struct (value bytes).
                let positions: Vec<u32> = (0..n as u32).collect();
                let structs: Vec<Affine> = (0..n)
                    .map(|i| Affine {
                        a: i as f32,
                        b: -(i as f32),
                    })
                    .collect();
                let (mut want_k, mut want_p) = (keys.clone(), positions.clone());
                cpu::sort_pairs(&mut want_k, &mut want_p, spec.clone()).expect("cpu pairs");
                let want_s: Vec<Affine> = want_p.iter().map(|&p| structs[p as usize]).collect();
                let mut kbuf = upload_with_guard(stream, &keys);
                let mut pbuf = upload_with_guard(stream, &positions);
                let ran = sort.sort_pairs(
                    stream,
                    &mut kbuf.slice_mut(0..n),
                    &mut pbuf.slice_mut(0..n),
                    spec,
                );
                let (got_k, kguard) = download(stream, &kbuf, n);
                let (got_p, pguard) = download(stream, &pbuf, n);
                match ran {
                    Err(e) => failures.push(format!("{case} sort_pairs: {e}")),
                    Ok(())
                        if bits(&got_k) != bits(&want_k)
                            || got_p != want_p
                            || !kguard
                            || !pguard =>
                    {
                        failures.push(format!(
                            "{case} sort_pairs: wrong (guards kept: {kguard} {pguard})"
                        ))
                    }
                    Ok(()) => {}
                }
                let mut kbuf = upload_with_guard(stream, &keys);
                let mut sbuf = upload_with_guard(stream, &structs);
                let ran = sort.sort_pairs(
                    stream,
                    &mut kbuf.slice_mut(0..n),
                    &mut sbuf.slice_mut(0..n),
                    spec,
                );
                let (got_s, sguard) = download(stream, &sbuf, n);
                if ran.is_err() || got_s != want_s || !sguard {
                    failures.push(format!(
                        "{case} sort_pairs (structs): wrong or failed ({ran:?})"
                    ));
                }

                // Argsort: the keys unmoved, the permutation poisoned before.
                let want_i: Vec<u64> = cpu::argsort(&keys, spec.clone())
                    .expect("cpu argsort")
                    .into_iter()
                    .map(|i| i as u64)
                    .collect();
                let kbuf = upload_with_guard(stream, &keys);
                let mut ibuf = stream.alloc_zeros::<u64>(n + GUARD).expect("alloc");
                poison(stream, &mut ibuf);
                let ran = sort.argsort(stream, &kbuf.slice(0..n), &mut ibuf.slice_mut(0..n), spec);
                let (got_i, iguard) = download(stream, &ibuf, n);
                let (kept, _) = download(stream, &kbuf, n);
                if ran.is_err() || got_i != want_i || !iguard || bits(&kept) != bits(&keys) {
                    failures.push(format!(
                        "{case} argsort: wrong or failed ({ran:?}, guard kept {iguard})"
                    ));
                }
            }
        }
    }
}

#[test]
fn gpu_sorts_match_the_cpu_bit_for_bit() {
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_sort") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    let streams = [ctx.new_stream().unwrap(), ctx.new_stream().unwrap()];
    let mut sort = GpuSort::new(&ctx).unwrap();
    let mut failures = Vec::new();
    check_key::<u8>(&mut sort, &streams, &mut rng, &mut failures);
    check_key::<i16>(&mut sort, &streams, &mut rng, &mut failures);
    check_key::<u32>(&mut sort, &streams, &mut rng, &mut failures);
    check_key::<i32>(&mut sort, &streams, &mut rng, &mut failures);
    check_key::<f32>(&mut sort, &streams, &mut rng, &mut failures);
    check_key::<u64>(&mut sort, &streams, &mut rng, &mut failures);
    check_key::<i64>(&mut sort, &streams, &mut rng, &mut failures);
    check_key::<f64>(&mut sort, &streams, &mut rng, &mut failures);
    for f in failures.iter().take(40) {
        println!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} sorts differ from the CPU's",
        failures.len()
    );
}

/// Keys `K` sorted with positions (staged through shared memory) and
/// 24-byte records (`Stats`, stored where they go directly) in tile shape
/// `shape`, against the CPU, over lengths around its tile.
fn check_shape<K: TestKey>(
    sort: &mut GpuSort,
    stream: &Arc<CudaStream>,
    shape: SortShape,
    rng: &mut Rng64,
    failures: &mut Vec<String>,
) {
    sort.set_shape(Some(shape));
    let tile = shape.tile_items();
    for n in [tile - 1, tile + 1, 5 * tile + 33, 37 * tile + 1] {
        for few in [false, true] {
            let keys: Vec<K> = (0..n).map(|_| K::random(rng, few)).collect();
            let spec = SortSpec::descending();
            let case = format!("{} {shape:?} n={n} few={few}", std::any::type_name::<K>());
            let positions: Vec<u32> = (0..n as u32).collect();
            let records: Vec<Stats> = (0..n)
                .map(|i| Stats {
                    count: i as u32,
                    sum: -(i as f64),
                    max: i as f32 * 0.5,
                })
                .collect();
            let (mut want_k, mut want_p) = (keys.clone(), positions.clone());
            cpu::sort_pairs(&mut want_k, &mut want_p, spec.clone()).expect("cpu pairs");
            let want_r: Vec<Stats> = want_p.iter().map(|&p| records[p as usize]).collect();
            let bits = |v: &[K]| v.iter().map(|&k| k.bits()).collect::<Vec<_>>();
            let mut kbuf = upload_with_guard(stream, &keys);
            let mut pbuf = upload_with_guard(stream, &positions);
            let ran = sort.sort_pairs(
                stream,
                &mut kbuf.slice_mut(0..n),
                &mut pbuf.slice_mut(0..n),
                &spec,
            );
            let (got_k, kguard) = download(stream, &kbuf, n);
            let (got_p, pguard) = download(stream, &pbuf, n);
            if ran.is_err()
                || bits(&got_k) != bits(&want_k)
                || got_p != want_p
                || !kguard
                || !pguard
            {
                failures.push(format!("{case} positions: wrong or failed ({ran:?})"));
            }
            let mut kbuf = upload_with_guard(stream, &keys);
            let mut rbuf = upload_with_guard(stream, &records);
            let ran = sort.sort_pairs(
                stream,
                &mut kbuf.slice_mut(0..n),
                &mut rbuf.slice_mut(0..n),
                &spec,
            );
            let (got_r, rguard) = download(stream, &rbuf, n);
            if ran.is_err() || got_r != want_r || !rguard {
                failures.push(format!("{case} records: wrong or failed ({ran:?})"));
            }
        }
    }
    sort.set_shape(None);
}

#[test]
fn other_tile_shapes_sort_the_same() {
    // More threads than digits, odd item counts and capped registers, as
    // the tuning sweep (sort_bench's SORT_BENCH_SWEEP) tries them.
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_sort") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    let stream = ctx.new_stream().unwrap();
    let mut sort = GpuSort::new(&ctx).unwrap();
    let mut failures = Vec::new();
    // Both rankings, each over tiles with and without a partial warp.
    for (threads, items, min_blocks, rank) in [
        (384, 7, 2, SortRank::Ballots),
        (512, 4, 1, SortRank::AtomicOr),
        (256, 32, 3, SortRank::AtomicOr),
        (288, 9, 2, SortRank::Ballots),
        (256, 20, 3, SortRank::AtomicOr),
    ] {
        let shape = SortShape {
            threads,
            items,
            min_blocks,
            rank,
        };
        check_shape::<u32>(&mut sort, &stream, shape, &mut rng, &mut failures);
        check_shape::<f64>(
            &mut sort,
            &stream,
            SortShape {
                items: items.min(16),
                ..shape
            },
            &mut rng,
            &mut failures,
        );
        check_shape::<u8>(&mut sort, &stream, shape, &mut rng, &mut failures);
    }
    // A shape that cannot hold the keys is a typed error; nothing moves.
    sort.set_shape(Some(SortShape {
        threads: 256,
        items: 64,
        min_blocks: 1,
        rank: SortRank::Ballots,
    }));
    let keys: Vec<u64> = (0..1000).rev().collect();
    let mut buf = stream.clone_htod(&keys).unwrap();
    let err = sort
        .sort_keys(&stream, &mut buf, &SortSpec::ascending())
        .unwrap_err();
    assert!(matches!(err, ScanError::SortShape { .. }), "{err}");
    assert_eq!(stream.clone_dtoh(&buf).unwrap(), keys);
    for f in failures.iter().take(40) {
        println!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} sorts differ from the CPU's",
        failures.len()
    );
}

/// Records sorted (and argsorted) by `S` on the GPU against the CPU's
/// `sort_by_key` / `argsort_by_key`, compared by their bytes (`bits`).
fn check_by_key<S: SortKey>(
    sort: &mut GpuSort,
    stream: &Arc<CudaStream>,
    records: &[S::Record],
    specs: &[SortSpec],
    bits: impl Fn(&S::Record) -> Vec<u64>,
    failures: &mut Vec<String>,
) where
    S::Record: DeviceRepr + ValidAsZeroBits,
{
    let n = records.len();
    for spec in specs {
        let case = format!("{} n={n} {spec:?}", std::any::type_name::<S>());
        let mut want = records.to_vec();
        cpu::sort_by_key::<S>(&mut want, spec.clone()).expect("cpu sort_by_key");
        let mut buf = upload_with_guard(stream, records);
        let ran = sort.sort_by_key::<S>(stream, &mut buf.slice_mut(0..n), spec);
        let (got, guard_ok) = download(stream, &buf, n);
        let same = got.iter().zip(&want).all(|(a, b)| bits(a) == bits(b));
        if ran.is_err() || !same || !guard_ok {
            failures.push(format!(
                "{case} sort_by_key: wrong or failed ({ran:?}, guard kept {guard_ok})"
            ));
        }
        let want_i: Vec<u64> = cpu::argsort_by_key::<S>(records, spec.clone())
            .expect("cpu argsort_by_key")
            .into_iter()
            .map(|i| i as u64)
            .collect();
        let rbuf = upload_with_guard(stream, records);
        let mut ibuf = stream.alloc_zeros::<u64>(n + GUARD).expect("alloc");
        poison(stream, &mut ibuf);
        let ran =
            sort.argsort_by_key::<S>(stream, &rbuf.slice(0..n), &mut ibuf.slice_mut(0..n), spec);
        let (got_i, iguard) = download(stream, &ibuf, n);
        let (kept, _) = download(stream, &rbuf, n);
        let unmoved = kept.iter().zip(records).all(|(a, b)| bits(a) == bits(b));
        if ran.is_err() || got_i != want_i || !iguard || !unmoved {
            failures.push(format!(
                "{case} argsort_by_key: wrong or failed ({ran:?}, guard kept {iguard})"
            ));
        }
    }
}

#[test]
fn records_sort_by_their_key_as_the_cpu_sorts_them() {
    // Stats by (sign of max: i8, count: u32, sum: f64), few distinct counts
    // and signs so that ties fall to later components and to input order;
    // Affine by its slope (f32) with NaNs, infinities and both zeros.
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_sort") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    let stream = ctx.new_stream().unwrap();
    let mut sort = GpuSort::new(&ctx).unwrap();
    let mut failures = Vec::new();
    let mut ns = lengths::<u64>(&sort);
    ns.extend(lengths::<u8>(&sort));
    ns.sort_unstable();
    ns.dedup();
    for n in ns {
        let stats: Vec<Stats> = (0..n)
            .map(|i| Stats {
                count: rng.random_range(0..4),
                sum: if rng.random_range(0..4) == 0 {
                    -0.0
                } else {
                    rng.random_range(-1e3..1e3)
                },
                max: if i % 3 == 0 { -1.0 } else { rng.random() },
            })
            .collect();
        let stat_bits = |s: &Stats| vec![s.count as u64, s.sum.to_bits(), s.max.to_bits() as u64];
        check_by_key::<BySignCountSum>(
            &mut sort,
            &stream,
            &stats,
            &[
                SortSpec::ascending(),
                SortSpec::descending(),
                // The sum's high bits and the count's low ones.
                SortSpec::ascending().bits(40..70),
                SortSpec::descending().bits(64..104),
            ],
            stat_bits,
            &mut failures,
        );
        let specials = [
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
        ];
        let maps: Vec<Affine> = (0..n)
            .map(|i| Affine {
                a: if rng.random_range(0..8) == 0 {
                    specials[rng.random_range(0..specials.len())]
                } else {
                    rng.random_range(-4.0..4.0f32).round()
                },
                b: i as f32,
            })
            .collect();
        check_by_key::<BySlope>(
            &mut sort,
            &stream,
            &maps,
            &[
                SortSpec::ascending(),
                SortSpec::descending(),
                SortSpec::ascending().bits(16..32),
            ],
            |m| vec![m.a.to_bits() as u64, m.b.to_bits() as u64],
            &mut failures,
        );
    }
    for f in failures.iter().take(40) {
        println!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} sorts by key differ from the CPU's",
        failures.len()
    );
}

/// Segment offsets over `n` elements: some before the first offset and
/// after the last, empty segments, and power-law lengths (many of a few
/// elements, a few of thousands).
fn power_law_offsets(rng: &mut Rng64, n: usize) -> Vec<u64> {
    let mut offsets = vec![(n / 50) as u64];
    let end = n - n / 40;
    while (*offsets.last().unwrap() as usize) < end {
        let at = *offsets.last().unwrap();
        let length = match rng.random_range(0..100) {
            0..=9 => 0,
            10..=79 => rng.random_range(1..8),
            80..=97 => rng.random_range(8..300),
            _ => rng.random_range(300..20_000),
        };
        offsets.push((at + length).min(end as u64));
    }
    offsets
}

/// Keys `K` sorted by segments on the GPU against the CPU's segmented
/// sorts: keys alone, and with their positions (stability).
fn check_segmented<K: TestKey>(
    sort: &mut GpuSort,
    stream: &Arc<CudaStream>,
    rng: &mut Rng64,
    failures: &mut Vec<String>,
) {
    use gpu_scan::scan_runtime::DeviceOffsets;
    for n in [0, 1, 2, 33, 5_000, 100_003, (1 << 20) + 7] {
        let keys: Vec<K> = (0..n).map(|_| K::random(rng, n % 2 == 0)).collect();
        let offsets = if n < 2 {
            vec![0, n as u64]
        } else {
            power_law_offsets(rng, n)
        };
        for (spec, wide) in [
            (SortSpec::ascending(), false),
            (SortSpec::descending().bits(1..K::BITS), true),
        ] {
            let case = format!(
                "{} n={n} segments={} {spec:?} u64 offsets={wide}",
                std::any::type_name::<K>(),
                offsets.len()
            );
            let bits = |v: &[K]| v.iter().map(|&k| k.bits()).collect::<Vec<_>>();
            let d_narrow = stream
                .clone_htod(&offsets.iter().map(|&o| o as u32).collect::<Vec<_>>())
                .unwrap();
            let d_wide = stream.clone_htod(&offsets).unwrap();
            let checked = if wide {
                DeviceOffsets::check(stream, d_wide.as_view(), n)
            } else {
                DeviceOffsets::check(stream, d_narrow.as_view(), n)
            };
            let checked = checked.expect("valid offsets");
            let mut want = keys.clone();
            cpu::segmented_sort_keys(&mut want, &offsets, spec.clone())
                .expect("cpu segmented sort");
            let mut buf = upload_with_guard(stream, &keys);
            let ran = sort.segmented_sort_keys(stream, &mut buf.slice_mut(0..n), &checked, &spec);
            let (got, guard_ok) = download(stream, &buf, n);
            if ran.is_err() || bits(&got) != bits(&want) || !guard_ok {
                failures.push(format!(
                    "{case} keys: wrong or failed ({ran:?}, guard kept {guard_ok})"
                ));
            }
            let positions: Vec<u32> = (0..n as u32).collect();
            let (mut want_k, mut want_p) = (keys.clone(), positions.clone());
            cpu::segmented_sort_pairs(&mut want_k, &mut want_p, &offsets, spec.clone())
                .expect("cpu pairs");
            let mut kbuf = upload_with_guard(stream, &keys);
            let mut pbuf = upload_with_guard(stream, &positions);
            let ran = sort.segmented_sort_pairs(
                stream,
                &mut kbuf.slice_mut(0..n),
                &mut pbuf.slice_mut(0..n),
                &checked,
                &spec,
            );
            let (got_k, kguard) = download(stream, &kbuf, n);
            let (got_p, pguard) = download(stream, &pbuf, n);
            if ran.is_err()
                || bits(&got_k) != bits(&want_k)
                || got_p != want_p
                || !kguard
                || !pguard
            {
                failures.push(format!("{case} pairs: wrong or failed ({ran:?})"));
            }
        }
    }
}

#[test]
fn segmented_sorts_match_the_cpu() {
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_sort") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    let stream = ctx.new_stream().unwrap();
    let mut sort = GpuSort::new(&ctx).unwrap();
    let mut failures = Vec::new();
    check_segmented::<u32>(&mut sort, &stream, &mut rng, &mut failures);
    check_segmented::<i8>(&mut sort, &stream, &mut rng, &mut failures);
    check_segmented::<f64>(&mut sort, &stream, &mut rng, &mut failures);
    // Offsets checked for another length: a typed error, nothing moved.
    use gpu_scan::scan_runtime::DeviceOffsets;
    let d_offsets = stream.clone_htod(&[0u32, 3, 10]).unwrap();
    let offsets = DeviceOffsets::check(&stream, d_offsets.as_view(), 10).unwrap();
    let keys: Vec<u32> = (0..11).rev().collect();
    let mut buf = stream.clone_htod(&keys).unwrap();
    let err = sort
        .segmented_sort_keys(&stream, &mut buf, &offsets, &SortSpec::ascending())
        .unwrap_err();
    assert!(
        matches!(err, ScanError::Sort(SortError::Offsets(_))),
        "{err}"
    );
    assert_eq!(stream.clone_dtoh(&buf).unwrap(), keys);
    for f in failures.iter().take(40) {
        println!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} segmented sorts differ from the CPU's",
        failures.len()
    );
}

#[test]
fn bad_requests_are_typed_errors_and_move_nothing() {
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_sort") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut sort = GpuSort::new(&ctx).unwrap();
    let keys: Vec<u32> = (0..1000u32).rev().collect();
    let mut buf = stream.clone_htod(&keys).unwrap();
    let err = sort
        .sort_keys(&stream, &mut buf, &SortSpec::ascending().bits(0..33))
        .unwrap_err();
    assert!(matches!(
        err,
        ScanError::Sort(SortError::Bits {
            begin: 0,
            end: 33,
            key_bits: 32
        })
    ));
    let mut values = stream.alloc_zeros::<u32>(999).unwrap();
    let err = sort
        .sort_pairs(&stream, &mut buf, &mut values, &SortSpec::ascending())
        .unwrap_err();
    assert!(matches!(
        err,
        ScanError::Sort(SortError::Values {
            keys: 1000,
            values: 999
        })
    ));
    let mut indices = stream.alloc_zeros::<u64>(1001).unwrap();
    poison(&stream, &mut indices);
    let err = sort
        .argsort(&stream, &buf, &mut indices, &SortSpec::ascending())
        .unwrap_err();
    assert!(matches!(err, ScanError::Sort(SortError::Values { .. })));
    assert_eq!(stream.clone_dtoh(&buf).unwrap(), keys);
    assert!(poisoned(&stream.clone_dtoh(&indices).unwrap()));
    assert!(stream.clone_dtoh(&values).unwrap().iter().all(|&v| v == 0));
}

#[test]
fn a_sort_past_two_to_the_thirty_one_keys() {
    // Past 2^31 keys (bytes: 2 GiB a buffer), with GPU_SORT_HUGE=1.
    if std::env::var_os("GPU_SORT_HUGE").is_none_or(|v| v != "1") {
        println!("gpu_sort: huge sort skipped (GPU_SORT_HUGE=1 runs it)");
        return;
    }
    let _gpu = gpu_shared();
    let Some(ctx) = open_gpu("gpu_sort") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let mut sort = GpuSort::new(&ctx).unwrap();
    let n = (1usize << 31) + 4099;
    let mut rng = Rng64::seed_from_u64(seed());
    let keys: Vec<u8> = (0..n).map(|_| rng.random()).collect();
    let mut buf = stream.clone_htod(&keys).unwrap();
    sort.sort_keys(&stream, &mut buf, &SortSpec::descending())
        .unwrap();
    let got = stream.clone_dtoh(&buf).unwrap();
    let mut counts = [0usize; 256];
    keys.iter().for_each(|&k| counts[k as usize] += 1);
    let mut at = 0;
    for d in (0..256).rev() {
        assert!(
            got[at..at + counts[d]].iter().all(|&k| k as usize == d),
            "digit {d}"
        );
        at += counts[d];
    }
}

#[test]
fn a_reserved_sort_is_captured_in_a_graph_and_replayed() {
    // Two streams from `ctx.new_stream()`: cudarc's multi-stream mode with
    // its default event tracking, as users run it. Bits 0..24 of u32 keys:
    // three passes, so the graph holds the copy back too.
    let _gpu = gpu_alone();
    let Some(ctx) = open_gpu("gpu_sort") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let mut rng = Rng64::seed_from_u64(seed());
    let mut sort = GpuSort::new(&ctx).unwrap();
    let n = 3 * sort.shape_for::<u32>(4).unwrap().tile_items() + 17;
    let spec = SortSpec::ascending().bits(0..24);
    sort.reserve::<u32, Affine>(&stream, n).unwrap();
    let draw = |rng: &mut Rng64| -> (Vec<u32>, Vec<u32>) {
        (
            (0..n).map(|_| rng.random()).collect(),
            (0..n as u32).collect(),
        )
    };
    let (keys, values) = draw(&mut rng);
    let mut kbuf = stream.clone_htod(&keys).unwrap();
    let mut vbuf = stream.clone_htod(&values).unwrap();
    sort.sort_pairs(&stream, &mut kbuf, &mut vbuf, &spec)
        .unwrap();
    let mut want = (keys, values);
    cpu::sort_pairs(&mut want.0, &mut want.1, spec.clone()).unwrap();
    assert_eq!(
        stream.clone_dtoh(&vbuf).unwrap(),
        want.1,
        "before the capture"
    );

    let graph = captured_graph(
        &stream,
        CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        "the sort",
        || sort.sort_pairs(&stream, &mut kbuf, &mut vbuf, &spec),
    );
    for replay in 0..3 {
        let (keys, values) = draw(&mut rng);
        stream.memcpy_htod(&keys, &mut kbuf).unwrap();
        stream.memcpy_htod(&values, &mut vbuf).unwrap();
        graph.launch().unwrap();
        let mut want = (keys, values);
        cpu::sort_pairs(&mut want.0, &mut want.1, spec.clone()).unwrap();
        assert_eq!(
            stream.clone_dtoh(&kbuf).unwrap(),
            want.0,
            "replay {replay}: keys"
        );
        assert_eq!(
            stream.clone_dtoh(&vbuf).unwrap(),
            want.1,
            "replay {replay}: values"
        );
    }
    ctx.check_err().unwrap();
}

#[test]
fn a_reserved_sort_by_key_is_captured_in_a_graph_and_replayed() {
    // Three components (i8, u32, f64): three sorts of positions and the
    // gather in one graph, from a `ctx.new_stream()` stream under cudarc's
    // default event tracking, a second stream alive.
    let _gpu = gpu_alone();
    let Some(ctx) = open_gpu("gpu_sort") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let mut rng = Rng64::seed_from_u64(seed());
    let mut sort = GpuSort::new(&ctx).unwrap();
    let n = 5 * sort.shape_for::<u64>(8).unwrap().tile_items() + 3;
    let spec = SortSpec::descending();
    sort.reserve_by_key::<BySignCountSum>(&stream, n).unwrap();
    let mut draw = || -> Vec<Stats> {
        (0..n)
            .map(|_| Stats {
                count: rng.random_range(0..5),
                sum: rng.random_range(-10.0..10.0f64).round(),
                max: rng.random_range(-1.0..1.0),
            })
            .collect()
    };
    let records = draw();
    let mut buf = stream.clone_htod(&records).unwrap();
    let graph = captured_graph(
        &stream,
        CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        "the sort",
        || sort.sort_by_key::<BySignCountSum>(&stream, &mut buf, &spec),
    );
    for replay in 0..3 {
        let mut records = draw();
        stream.memcpy_htod(&records, &mut buf).unwrap();
        graph.launch().unwrap();
        cpu::sort_by_key::<BySignCountSum>(&mut records, spec.clone()).unwrap();
        assert_eq!(stream.clone_dtoh(&buf).unwrap(), records, "replay {replay}");
    }
    ctx.check_err().unwrap();
}

#[test]
fn a_reserved_segmented_sort_is_captured_in_a_graph_and_replayed() {
    // Pairs by power-law segments, from a `ctx.new_stream()` stream under
    // cudarc's default event tracking, a second stream alive; the offsets
    // checked before the capture (the check waits for its verdict).
    use gpu_scan::scan_runtime::DeviceOffsets;
    let _gpu = gpu_alone();
    let Some(ctx) = open_gpu("gpu_sort") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let mut rng = Rng64::seed_from_u64(seed());
    let mut sort = GpuSort::new(&ctx).unwrap();
    let n = 300_007;
    let offsets = power_law_offsets(&mut rng, n);
    let d_offsets = stream.clone_htod(&offsets).unwrap();
    let checked = DeviceOffsets::check(&stream, d_offsets.as_view(), n).unwrap();
    sort.reserve_segmented::<u32, u32>(&stream, n, offsets.len())
        .unwrap();
    let spec = SortSpec::descending();
    let mut kbuf = stream.alloc_zeros::<u32>(n).unwrap();
    let mut vbuf = stream.alloc_zeros::<u32>(n).unwrap();
    let graph = captured_graph(
        &stream,
        CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        "the sort",
        || sort.segmented_sort_pairs(&stream, &mut kbuf, &mut vbuf, &checked, &spec),
    );
    for replay in 0..3 {
        let mut keys: Vec<u32> = (0..n).map(|_| rng.random_range(0..1000)).collect();
        let mut values: Vec<u32> = (0..n as u32).collect();
        stream.memcpy_htod(&keys, &mut kbuf).unwrap();
        stream.memcpy_htod(&values, &mut vbuf).unwrap();
        graph.launch().unwrap();
        cpu::segmented_sort_pairs(&mut keys, &mut values, &offsets, spec.clone()).unwrap();
        assert_eq!(
            stream.clone_dtoh(&kbuf).unwrap(),
            keys,
            "replay {replay}: keys"
        );
        assert_eq!(
            stream.clone_dtoh(&vbuf).unwrap(),
            values,
            "replay {replay}: values"
        );
    }
    ctx.check_err().unwrap();
}
