//! Records sorted on the GPU by sort keys built at run time
//! (`DynSortKey::from_text`, the Python package's `sort(records, key=…)`):
//! 24-byte padded statistics by a key of three components (`i8`, `u32`,
//! `f64`) and 8-byte affine maps by an `f32` slope, read from their
//! `#[sort_key]` twins' texts, against the CPU's `sort_by_key` and
//! `argsort_by_key` of the twins, bit for bit; ascending, descending and a
//! bit range; lengths around the sort's tiles; all keys equal. Streams come
//! from `ctx.new_stream()` with cudarc's default event tracking and a
//! second stream alive. Without a GPU it prints one line and passes.
#![cfg(feature = "gpu")]

mod common;
use common::gpu::{bytes_of, from_bytes, gpu_shared, open_gpu, structs_of, Case, Rng64};
use common::ops::{Affine, BySignCountSum, BySlope, Stats};
use gpu_scan::scan_runtime::cudarc::driver::CudaStream;
use gpu_scan::scan_runtime::{BuiltLayout, DynSortKey, GpuSort};
use gpu_scan::sort::{argsort_by_key, sort_by_key, SortKey, SortSpec};
use rand::SeedableRng;
use std::sync::Arc;

/// Sorts and argsorts by `K`'s built twin on `records`, against the CPU's.
fn check<K: SortKey>(
    stream: &Arc<CudaStream>,
    sort: &mut GpuSort,
    records: &[K::Record],
    what: &str,
) where
    K::Record: PartialEq + std::fmt::Debug,
{
    let key = DynSortKey::from_text(K::SORT_KEY_IR, &structs_of::<K::Record>()).unwrap();
    let n = records.len();
    for spec in [
        SortSpec::ascending(),
        SortSpec::descending(),
        SortSpec::ascending().bits(3..key.widths().iter().sum::<u32>() - 2),
    ] {
        let what = format!("{what}, {spec:?}");
        let mut want = records.to_vec();
        sort_by_key::<K>(&mut want, spec.clone()).unwrap();
        let mut device = stream.clone_htod(&bytes_of(records)).unwrap();
        {
            let mut r = key.elements_mut(&mut device).unwrap();
            sort.sort_by_key_built(stream, &key, &mut r, &spec)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        let got = from_bytes::<K::Record>(&stream.clone_dtoh(&device).unwrap());
        assert_eq!(got, want, "{what}: sorted records");

        let want: Vec<u64> = argsort_by_key::<K>(records, spec.clone())
            .unwrap()
            .into_iter()
            .map(|i| i as u64)
            .collect();
        let device = stream.clone_htod(&bytes_of(records)).unwrap();
        let mut indices = stream.clone_htod(&vec![u64::MAX; n]).unwrap();
        {
            let r = key.elements(&device).unwrap();
            sort.argsort_by_key_built(stream, &key, &r, &mut indices, &spec)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        assert_eq!(
            stream.clone_dtoh(&indices).unwrap(),
            want,
            "{what}: permutation"
        );
    }
}

#[test]
fn records_sort_by_built_keys_as_by_their_twins() {
    let Some(ctx) = open_gpu("gpu_built_sort") else {
        return;
    };
    let _shared = gpu_shared();
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap(); // a second stream alive
    let seed = common::seed::from_env_or_clock("GPU_BUILT_SORT_SEED");
    println!("gpu_built_sort: seed {seed} (GPU_BUILT_SORT_SEED)");
    let mut rng = Rng64::seed_from_u64(seed);
    let mut sort = GpuSort::new(&ctx).unwrap();
    for n in [0, 1, 2, 33, 4095, 4097, 100_003, (1 << 20) + 7] {
        let stats: Vec<Stats> = (0..n).map(|_| Stats::random(&mut rng)).collect();
        check::<BySignCountSum>(
            &stream,
            &mut sort,
            &stats,
            &format!("stats n = {n} (seed {seed})"),
        );
        let maps: Vec<Affine> = (0..n).map(|_| Affine::random(&mut rng)).collect();
        check::<BySlope>(
            &stream,
            &mut sort,
            &maps,
            &format!("maps n = {n} (seed {seed})"),
        );
    }
    let same = vec![Affine { a: 0.5, b: 1.0 }; 5000];
    check::<BySlope>(&stream, &mut sort, &same, "all keys equal");
}
