//! Sparse matrix–vector products on the GPU (`GpuSpmv`) against the CPU's
//! `csr_matvec` run in `f64`, on fresh random matrices and vectors
//! (`GPU_SPMV_SEED` replays): `f32` and `f64` values, `u32` and `u64` row
//! pointers, in the table's tile shape and a small one, over matrices that
//! hit every boundary of the tiles: no rows, one, 31 to 33, a tile's merge
//! items ± 1 of rows or of rows and entries together, runs of empty rows
//! longer than a tile, one row across more than 32 tiles (the look-back's
//! window) and more than 64, power-law row lengths, no entries at all.
//! Outputs are poisoned before each run, with a guard band after them that
//! must stay poisoned; two runs of the same product, on two streams from
//! `ctx.new_stream()` under cudarc's default event tracking, give the same
//! bits. Bad matrices and vectors get typed errors and leave the output
//! untouched; a reserved product is captured in a graph (both capture
//! modes) and replayed on new vectors.
//!
//! Tolerance. A row of n entries sums n products, each rounded once, in
//! some order (a thread's in entry order, threads and tiles by a tree): the
//! computed sum is within γ_n · Σ|v·x| of the exact one, γ_n = n·u / (1 −
//! n·u) (Higham, 2002, §4.2), with u = 2^-24 (f32) or 2^-53 (f64), the
//! products' roundings included. The oracle sums in f64 in entry order,
//! within the same bound in f64, so the test allows twice the bound for the
//! GPU's type (plus the smallest normal, for rows that sum to 0).
#![cfg(feature = "gpu")]

mod common;
use common::gpu::{captured_graph, open_gpu, poison, poisoned, Rng64};
use gpu_scan::scan_runtime::cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits,
};
use gpu_scan::scan_runtime::{DeviceOffset, DeviceReal, GpuSpmv, SpmvShape};
use gpu_scan::segmented::{InvalidOffsets, SegmentOffset};
use gpu_scan::spmv::{csr_matvec, Csr, SpmvError};
use gpu_scan::ScanError;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// Values after each output that must stay poisoned.
const GUARD: usize = 37;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("GPU_SPMV_SEED");
    println!("gpu_spmv: seed {seed} (GPU_SPMV_SEED={seed} replays)");
    seed
}

/// Row pointers of both widths.
trait TestOffset: DeviceOffset + SegmentOffset + DeviceRepr + ValidAsZeroBits + Copy {
    fn from_usize(v: usize) -> Self;
}

impl TestOffset for u32 {
    fn from_usize(v: usize) -> Self {
        v as u32
    }
}

impl TestOffset for u64 {
    fn from_usize(v: usize) -> Self {
        v as u64
    }
}

/// A matrix on the host, by its row lengths.
struct Matrix<T, O> {
    cols: usize,
    row_ptr: Vec<O>,
    col_idx: Vec<u32>,
    values: Vec<T>,
}

impl<T: DeviceReal, O: TestOffset> Matrix<T, O> {
    /// Rows of `lengths` entries in random columns of `cols`, values in
    /// [-1, 1].
    fn random(rng: &mut Rng64, lengths: &[usize], cols: usize) -> Self {
        let mut row_ptr = vec![O::from_usize(0)];
        let mut total = 0;
        for &l in lengths {
            total += l;
            row_ptr.push(O::from_usize(total));
        }
        Matrix {
            cols,
            row_ptr,
            col_idx: (0..total)
                .map(|_| rng.random_range(0..cols as u32))
                .collect(),
            values: (0..total)
                .map(|_| T::from_f64(rng.random_range(-1.0..=1.0)))
                .collect(),
        }
    }

    fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// `m · x` by the CPU in f64 (`magnitude`: of |m| and |x|).
    fn oracle(&self, x: &[T], magnitude: bool) -> Vec<f64> {
        let f = |v: T| {
            if magnitude {
                v.to_f64().abs()
            } else {
                v.to_f64()
            }
        };
        let values: Vec<f64> = self.values.iter().map(|&v| f(v)).collect();
        let x: Vec<f64> = x.iter().map(|&v| f(v)).collect();
        let m = Csr {
            cols: self.cols,
            row_ptr: &self.row_ptr,
            col_idx: &self.col_idx,
            values: &values,
        };
        let mut y = vec![0.0; self.rows()];
        csr_matvec(&m, &x, &mut y).unwrap();
        y
    }

    /// Failures of `got` against the CPU within the module's bound.
    fn check(&self, x: &[T], got: &[T], what: &str) -> Vec<String> {
        let (want, magnitude) = (self.oracle(x, false), self.oracle(x, true));
        let mut failures = Vec::new();
        for (r, g) in got.iter().enumerate() {
            let n = (self.row_ptr[r + 1].to_u64() - self.row_ptr[r].to_u64()) as f64;
            let gamma = n * T::UNIT_ROUNDOFF / (1.0 - n * T::UNIT_ROUNDOFF);
            let bound = 2.0 * gamma * magnitude[r] + f64::MIN_POSITIVE;
            // (A NaN fails too.)
            let within = (g.to_f64() - want[r]).abs() <= bound;
            if !within {
                failures.push(format!(
                    "{what}: row {r} ({n} entries) is {g:?}, the CPU's {} (bound {bound:e})",
                    want[r]
                ));
                if failures.len() > 5 {
                    break;
                }
            }
        }
        failures
    }
}

fn random_vector<T: DeviceReal>(rng: &mut Rng64, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::from_f64(rng.random_range(-1.0..=1.0)))
        .collect()
}

/// Power-law row lengths: a Pareto of index 1.3 (mean about 9, some rows
/// of thousands), less 2, so that a fifth of the rows are empty.
fn power_law(rng: &mut Rng64, rows: usize, most: usize) -> Vec<usize> {
    (0..rows)
        .map(|_| {
            let u: f64 = rng.random_range(f64::EPSILON..1.0);
            ((2.0 / u.powf(1.0 / 1.3)) as usize)
                .saturating_sub(2)
                .min(most)
        })
        .collect()
}

/// The table of matrices (row lengths and columns), for tiles of `k`
/// merge items.
fn matrices(rng: &mut Rng64, k: usize) -> Vec<(String, Vec<usize>, usize)> {
    let short = |rng: &mut Rng64, rows: usize, most: usize| -> Vec<usize> {
        (0..rows).map(|_| rng.random_range(0..=most)).collect()
    };
    let mut table = vec![
        ("no rows".to_string(), vec![], 7),
        ("one empty row".into(), vec![0], 3),
        ("one entry".into(), vec![1], 1),
        ("31 rows".into(), short(rng, 31, 5), 40),
        ("32 rows".into(), short(rng, 32, 5), 40),
        ("33 rows".into(), short(rng, 33, 5), 40),
        ("a tile of empty rows - 1".into(), vec![0; k - 1], 5),
        ("a tile of empty rows".into(), vec![0; k], 5),
        ("a tile of empty rows + 1".into(), vec![0; k + 1], 5),
        ("5 tiles of empty rows + 1".into(), vec![0; 5 * k + 1], 5),
        // One row of 40 tiles (past the look-back's window of 32), and one
        // of 70 after empty rows.
        ("one row of 40 tiles".into(), vec![40 * k], 1000),
        (
            "empty rows, a row of 70 tiles, empty rows".into(),
            [vec![0; 3 * k], vec![70 * k + 3], vec![0; 2 * k + 1]].concat(),
            5000,
        ),
        (
            "long rows at tile boundaries".into(),
            [
                vec![k - 1; 3],
                vec![k; 3],
                vec![k + 1; 3],
                vec![0, 1, 2 * k],
            ]
            .concat(),
            300,
        ),
        (
            "power-law rows".into(),
            power_law(rng, 200_000, 50_000),
            150_000,
        ),
    ];
    // Rows and entries together a multiple of the tile ± 1.
    for total in [k - 1, k, k + 1, 7 * k - 1, 7 * k, 7 * k + 1] {
        let rows = total / 4;
        let mut lengths = vec![3; rows];
        let rest = total - rows - 3 * rows;
        lengths[rows - 1] += rest;
        table.push((format!("{total} rows and entries"), lengths, 64));
    }
    table
}

fn upload<T: DeviceRepr + ValidAsZeroBits>(stream: &Arc<CudaStream>, host: &[T]) -> CudaSlice<T> {
    // An empty slice still needs an allocation to view.
    if host.is_empty() {
        stream.alloc_zeros::<T>(0).unwrap()
    } else {
        stream.clone_htod(host).unwrap()
    }
}

/// Every matrix of the table, in `shape` (or the table's), checked and
/// multiplied twice on two streams, against the CPU, bit for bit between
/// the runs.
fn products_match<T: DeviceReal, O: TestOffset>(
    ctx: &Arc<CudaContext>,
    rng: &mut Rng64,
    shape: Option<SpmvShape>,
    failures: &mut Vec<String>,
) {
    let streams = [ctx.new_stream().unwrap(), ctx.new_stream().unwrap()];
    let mut spmv = GpuSpmv::new(ctx).unwrap();
    spmv.set_shape::<T>(shape).unwrap();
    let shape = spmv.shape_for::<T>();
    let name = format!(
        "{}, u{} row pointers, {}×{}",
        std::any::type_name::<T>(),
        8 * std::mem::size_of::<O>(),
        shape.threads,
        shape.items
    );
    for (what, lengths, cols) in matrices(rng, shape.merge_items()) {
        let m = Matrix::<T, O>::random(rng, &lengths, cols);
        let x = random_vector::<T>(rng, cols);
        let stream = &streams[0];
        let (row_ptr, col_idx, values) = (
            upload(stream, &m.row_ptr),
            upload(stream, &m.col_idx),
            upload(stream, &m.values),
        );
        let checked = spmv
            .check(
                stream,
                cols,
                row_ptr.as_view(),
                col_idx.as_view(),
                values.as_view(),
            )
            .unwrap_or_else(|e| panic!("{name}, {what}: {e}"));
        assert_eq!(checked.rows(), m.rows());
        let xd = upload(stream, &x);
        let mut runs = Vec::new();
        for stream in &streams {
            let mut y = stream.alloc_zeros::<T>(m.rows() + GUARD).unwrap();
            poison(stream, &mut y);
            spmv.matvec(stream, &checked, &xd, &mut y.slice_mut(..m.rows()))
                .unwrap_or_else(|e| panic!("{name}, {what}: {e}"));
            let got = stream.clone_dtoh(&y).unwrap();
            if !poisoned(&got[m.rows()..]) {
                failures.push(format!("{name}, {what}: the guard band was written"));
            }
            runs.push(got[..m.rows()].to_vec());
        }
        failures.extend(m.check(&x, &runs[0], &format!("{name}, {what}")));
        let differ = runs[0]
            .iter()
            .zip(&runs[1])
            .position(|(a, b)| a.to_f64().to_bits() != b.to_f64().to_bits());
        if let Some(r) = differ {
            failures.push(format!(
                "{name}, {what}: row {r} differs between runs: {:?}, {:?}",
                runs[0][r], runs[1][r]
            ));
        }
    }
}

#[test]
fn products_match_the_cpu_and_repeat_bit_for_bit() {
    let Some(ctx) = open_gpu("gpu_spmv") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    // A small tile, its registers capped, the vector read through L2.
    let small = Some(SpmvShape {
        min_blocks: 16,
        gather_l2: true,
        ..SpmvShape::new(64, 7)
    });
    let mut failures = Vec::new();
    for shape in [None, small] {
        products_match::<f32, u32>(&ctx, &mut rng, shape, &mut failures);
        products_match::<f64, u32>(&ctx, &mut rng, shape, &mut failures);
        products_match::<f32, u64>(&ctx, &mut rng, shape, &mut failures);
        products_match::<f64, u64>(&ctx, &mut rng, shape, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_matrices_and_vectors_are_refused_and_nothing_is_written() {
    let Some(ctx) = open_gpu("gpu_spmv") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let mut spmv = GpuSpmv::new(&ctx).unwrap();
    let up = |v: &[u32]| stream.clone_htod(v).unwrap();
    let values = stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let cols = up(&[0, 2, 1, 2]);
    let check = |spmv: &mut GpuSpmv, row_ptr: &CudaSlice<u32>, col: &CudaSlice<u32>, cols| {
        spmv.check(
            &stream,
            cols,
            row_ptr.as_view(),
            col.as_view(),
            values.as_view(),
        )
        .map(|_| ())
    };
    let expect = |got: Result<(), ScanError>, want: SpmvError| match got {
        Err(ScanError::Spmv(e)) if e == want => {}
        other => panic!("expected {want:?}, got {other:?}"),
    };
    // The column of entry 2 (and of 3) past 2 columns: the first is named.
    expect(
        check(&mut spmv, &up(&[0, 1, 4]), &up(&[0, 1, 2, 5]), 2),
        SpmvError::Column {
            entry: 2,
            col: 2,
            cols: 2,
        },
    );
    expect(
        check(&mut spmv, &up(&[0, 3, 2, 4]), &cols, 3),
        SpmvError::RowPointers(InvalidOffsets::Decreasing {
            index: 2,
            value: 2,
            previous: 3,
        }),
    );
    expect(
        check(&mut spmv, &up(&[0, 5, 4]), &cols, 3),
        SpmvError::RowPointers(InvalidOffsets::OutOfRange {
            index: 1,
            value: 5,
            len: 4,
        }),
    );
    expect(
        check(&mut spmv, &up(&[1, 2, 4]), &cols, 3),
        SpmvError::RowPointerEnds {
            first: 1,
            last: 4,
            entries: 4,
        },
    );
    expect(
        check(&mut spmv, &up(&[0, 2, 3]), &cols, 3),
        SpmvError::RowPointerEnds {
            first: 0,
            last: 3,
            entries: 4,
        },
    );
    expect(
        check(&mut spmv, &up(&[0, 2, 4]), &up(&[0, 1, 2]), 3),
        SpmvError::Entries {
            col_idx: 3,
            values: 4,
        },
    );
    let none = stream.alloc_zeros::<u32>(0).unwrap();
    expect(check(&mut spmv, &none, &cols, 3), SpmvError::NoRowPointers);
    // A good matrix, then vectors of the wrong lengths: y stays poisoned.
    let row_ptr = up(&[0, 2, 4]);
    let m = spmv
        .check(
            &stream,
            3,
            row_ptr.as_view(),
            cols.as_view(),
            values.as_view(),
        )
        .unwrap();
    let x = stream.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap();
    let short_x = stream.clone_htod(&[1.0f32, 2.0]).unwrap();
    let mut y = stream.alloc_zeros::<f32>(3).unwrap();
    poison(&stream, &mut y);
    let vector = |got: Result<(), ScanError>, vector, given, expected| {
        expect(
            got,
            SpmvError::Vector {
                vector,
                given,
                expected,
            },
        )
    };
    vector(
        spmv.matvec(&stream, &m, &short_x, &mut y.slice_mut(..2)),
        "x",
        2,
        3,
    );
    vector(spmv.matvec(&stream, &m, &x, &mut y), "y", 3, 2);
    assert!(
        poisoned(&stream.clone_dtoh(&y).unwrap()),
        "a refused product wrote its output"
    );
    // The same matrix then multiplies correctly: [1·1 + 2·3, 3·2 + 4·3].
    spmv.matvec(&stream, &m, &x, &mut y.slice_mut(..2)).unwrap();
    assert_eq!(stream.clone_dtoh(&y).unwrap()[..2], [7.0, 18.0]);
    // A shape that cannot run is refused.
    assert!(matches!(
        spmv.set_shape::<f64>(Some(SpmvShape::new(256, 32))),
        Err(ScanError::SpmvShape { .. })
    ));
}

#[test]
fn a_reserved_product_is_captured_in_a_graph_and_replayed() {
    use gpu_scan::scan_runtime::cudarc::driver::sys::CUstreamCaptureMode;
    let Some(ctx) = open_gpu("gpu_spmv") else {
        return;
    };
    let mut rng = Rng64::seed_from_u64(seed());
    // Two streams from `ctx.new_stream()`: cudarc's multi-stream mode.
    let stream = ctx.new_stream().unwrap();
    let _other = ctx.new_stream().unwrap();
    let mut spmv = GpuSpmv::new(&ctx).unwrap();
    let lengths = power_law(&mut rng, 30_000, 20_000);
    let cols = 20_000;
    let m = Matrix::<f32, u32>::random(&mut rng, &lengths, cols);
    let (row_ptr, col_idx, values) = (
        stream.clone_htod(&m.row_ptr).unwrap(),
        stream.clone_htod(&m.col_idx).unwrap(),
        stream.clone_htod(&m.values).unwrap(),
    );
    let checked = spmv
        .check(
            &stream,
            cols,
            row_ptr.as_view(),
            col_idx.as_view(),
            values.as_view(),
        )
        .unwrap();
    spmv.reserve(&stream, &checked).unwrap();
    let mut x = stream.alloc_zeros::<f32>(cols).unwrap();
    let mut y = stream.alloc_zeros::<f32>(m.rows()).unwrap();
    for mode in [
        CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
    ] {
        let graph = captured_graph(&stream, mode, "the product", || {
            spmv.matvec(&stream, &checked, &x, &mut y)
        });
        for replay in 0..12 {
            let xs = random_vector::<f32>(&mut rng, cols);
            stream.memcpy_htod(&xs, &mut x).unwrap();
            poison(&stream, &mut y);
            graph.launch().unwrap();
            let got = stream.clone_dtoh(&y).unwrap();
            let failures = m.check(&xs, &got, &format!("{mode:?}, replay {replay}"));
            assert!(failures.is_empty(), "{}", failures.join("\n"));
        }
    }
}
