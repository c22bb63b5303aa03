//! Timings of `GpuSpmv` (issue 47, item 5) against a device copy of the
//! same bytes, CUDA events around each product, median of 25. Every output
//! is first checked against the CPU's `csr_matvec` in `f64`, within the
//! bound of `tests/gpu_spmv.rs` (twice γ_n · Σ|v·x| for a row of n
//! entries).
//!
//! ```text
//! cargo build --release --example spmv_bench && target/release/examples/spmv_bench
//! ```
//!
//! `SPMV_BENCH_ONLY=power-f32,...` runs only the cases named;
//! `SPMV_BENCH_SWEEP=1` times every tile shape of `SpmvShape::sweep` as
//! well; `SPMV_BENCH_DUMP=dir` writes each case's matrix, vector and
//! checked product to `dir/<case>.csr` for `cub/spmv_cusparse.cu` (a
//! header of three `u64`s, rows, columns and entries, and the value size
//! in bytes; then the row pointers as `u32`, the columns as `u32`, the
//! values, `x` and `y`).

use gpu_scan::scan_runtime::cudarc::driver::{CudaSlice, CudaStream};
use gpu_scan::scan_runtime::{open_device, DeviceReal, GpuSpmv, SpmvShape};
use gpu_scan::spmv::{csr_matvec, Csr};
use rayon::prelude::*;
use std::io::Write;
use std::sync::Arc;

#[path = "common/timing.rs"]
mod timing;
use timing::time_ms;
#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::bits;

/// A value in [0, 1) from index `i` of stream `salt`.
fn unit(i: u64, salt: u64) -> f64 {
    (bits(i ^ (salt << 40)) >> 11) as f64 / (1u64 << 53) as f64
}

fn wanted(name: &str) -> bool {
    std::env::var("SPMV_BENCH_ONLY").map_or(true, |only| only.split(',').any(|c| c == name))
}

/// How a case's rows are drawn.
#[derive(Clone, Copy)]
enum Rows {
    /// Pareto of index 1.3 with minimum 2, less 2, at most `most`
    /// (a fifth of the rows empty, the mean about 6, a tail of long rows).
    PowerLaw { most: usize },
    /// Every row `n` entries.
    Uniform(usize),
}

struct Case {
    name: &'static str,
    rows: usize,
    lengths: Rows,
}

/// The host matrix of a case: row pointers, columns, values, and `x`.
struct Host<T> {
    row_ptr: Vec<u32>,
    col_idx: Vec<u32>,
    values: Vec<T>,
    x: Vec<T>,
}

fn matrix<T: DeviceReal>(case: &Case) -> Host<T> {
    let cols = case.rows;
    let lengths: Vec<u32> = (0..case.rows as u64)
        .into_par_iter()
        .map(|r| match case.lengths {
            Rows::PowerLaw { most } => {
                let u = unit(r, 1).max(f64::EPSILON);
                (((2.0 / u.powf(1.0 / 1.3)) as usize).saturating_sub(2)).min(most) as u32
            }
            Rows::Uniform(n) => n as u32,
        })
        .collect();
    let mut row_ptr = Vec::with_capacity(case.rows + 1);
    let mut total = 0u32;
    row_ptr.push(0);
    for l in lengths {
        total += l;
        row_ptr.push(total);
    }
    let entries = total as u64;
    Host {
        row_ptr,
        col_idx: (0..entries)
            .into_par_iter()
            .map(|i| (bits(i ^ (2 << 40)) % cols as u64) as u32)
            .collect(),
        values: (0..entries)
            .into_par_iter()
            .map(|i| T::from_f64(2.0 * unit(i, 3) - 1.0))
            .collect(),
        x: (0..cols as u64)
            .into_par_iter()
            .map(|i| T::from_f64(2.0 * unit(i, 4) - 1.0))
            .collect(),
    }
}

/// Rows of `got` outside the bound against the CPU in f64.
fn outside_the_bound<T: DeviceReal>(h: &Host<T>, got: &[T]) -> usize {
    let product = |magnitude: bool| {
        let f = |v: T| {
            if magnitude {
                v.to_f64().abs()
            } else {
                v.to_f64()
            }
        };
        let values: Vec<f64> = h.values.par_iter().map(|&v| f(v)).collect();
        let x: Vec<f64> = h.x.par_iter().map(|&v| f(v)).collect();
        let m = Csr {
            cols: h.x.len(),
            row_ptr: &h.row_ptr,
            col_idx: &h.col_idx,
            values: &values,
        };
        let mut y = vec![0.0; got.len()];
        csr_matvec(&m, &x, &mut y).unwrap();
        y
    };
    let (want, magnitude) = (product(false), product(true));
    (0..got.len())
        .into_par_iter()
        .filter(|&r| {
            let n = (h.row_ptr[r + 1] - h.row_ptr[r]) as f64;
            let bound = 2.0 * n * T::UNIT_ROUNDOFF / (1.0 - n * T::UNIT_ROUNDOFF) * magnitude[r]
                + f64::MIN_POSITIVE;
            let within = (got[r].to_f64() - want[r]).abs() <= bound;
            !within
        })
        .count()
}

fn dump<T: DeviceReal>(dir: &str, name: &str, h: &Host<T>, y: &[T]) {
    let path = format!("{dir}/{name}.csr");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let bytes = |v: &[u8], f: &mut std::io::BufWriter<std::fs::File>| f.write_all(v).unwrap();
    let header = [
        (h.row_ptr.len() - 1) as u64,
        h.x.len() as u64,
        h.values.len() as u64,
        std::mem::size_of::<T>() as u64,
    ];
    for w in header {
        bytes(&w.to_le_bytes(), &mut f);
    }
    // SAFETY: plain numbers, read as their bytes.
    let raw = |v: &[T]| unsafe {
        std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)).to_vec()
    };
    let words = |v: &[u32]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    bytes(&words(&h.row_ptr), &mut f);
    bytes(&words(&h.col_idx), &mut f);
    bytes(&raw(&h.values), &mut f);
    bytes(&raw(&h.x), &mut f);
    bytes(&raw(y), &mut f);
    println!("  wrote {path}");
}

fn run<T: DeviceReal>(stream: &Arc<CudaStream>, spmv: &mut GpuSpmv, case: &Case) -> bool {
    let h = matrix::<T>(case);
    let (rows, entries) = (case.rows, h.values.len());
    let row_ptr = stream.clone_htod(&h.row_ptr).unwrap();
    let col_idx = stream.clone_htod(&h.col_idx).unwrap();
    let values = stream.clone_htod(&h.values).unwrap();
    let x = stream.clone_htod(&h.x).unwrap();
    let mut y: CudaSlice<T> = stream.alloc_zeros(rows).unwrap();

    // A copy of the bytes a product moves at least: the matrix, x once and
    // y; a copy of half as many bytes reads and writes them.
    let size = std::mem::size_of::<T>();
    let moved = 4 * (rows + 1) + (4 + size) * entries + size * (2 * rows);
    let src: CudaSlice<u8> = stream.alloc_zeros(moved / 2).unwrap();
    let mut dst: CudaSlice<u8> = stream.alloc_zeros(moved / 2).unwrap();
    let copy_ms = time_ms(stream, || stream.memcpy_dtod(&src, &mut dst).unwrap()) as f64;

    let mut shapes = vec![None];
    if std::env::var("SPMV_BENCH_SWEEP").is_ok_and(|v| v == "1") {
        shapes.extend(SpmvShape::sweep(T::REAL).into_iter().map(Some));
    }
    let mut ok = true;
    for (i, shape) in shapes.into_iter().enumerate() {
        spmv.set_shape::<T>(shape).unwrap();
        let clock = std::time::Instant::now();
        let m = spmv
            .check(
                stream,
                rows,
                row_ptr.as_view(),
                col_idx.as_view(),
                values.as_view(),
            )
            .unwrap();
        let check_ms = clock.elapsed().as_secs_f64() * 1e3;
        spmv.matvec(stream, &m, &x, &mut y).unwrap();
        let got = stream.clone_dtoh(&y).unwrap();
        let bad = outside_the_bound(&h, &got);
        ok &= bad == 0;
        let ms = time_ms(stream, || spmv.matvec(stream, &m, &x, &mut y).unwrap()) as f64;
        let shape = m.plan().shape;
        println!(
            "{:<14} {:>9} {:>10} {:>13} {:>8.4} {:>8.4} {:>6.1}% {:>7.1} GB/s {:>9.1}  {}",
            case.name,
            rows,
            entries,
            format!(
                "{}x{}/{}{}",
                shape.threads,
                shape.items,
                shape.min_blocks,
                if shape.gather_l2 { "cg" } else { "" }
            ),
            ms,
            copy_ms,
            copy_ms / ms * 100.0,
            moved as f64 / ms / 1e6,
            check_ms,
            if bad == 0 {
                "ok".to_string()
            } else {
                format!("{bad} ROWS OUTSIDE THE BOUND")
            }
        );
        if i == 0 {
            if let Ok(dir) = std::env::var("SPMV_BENCH_DUMP") {
                dump(&dir, case.name, &h, &got);
            }
        }
    }
    spmv.set_shape::<T>(None).unwrap();
    ok
}

fn main() {
    let ctx = open_device(0).expect("a GPU");
    let stream = ctx.new_stream().unwrap();
    let mut spmv = GpuSpmv::new(&ctx).unwrap();
    let f32_cases = [
        Case {
            name: "power-f32",
            rows: 1 << 24,
            lengths: Rows::PowerLaw { most: 1 << 16 },
        },
        Case {
            name: "uniform16-f32",
            rows: 1 << 22,
            lengths: Rows::Uniform(16),
        },
    ];
    let f64_cases = [Case {
        name: "power-f64",
        rows: 1 << 24,
        lengths: Rows::PowerLaw { most: 1 << 16 },
    }];
    println!(
        "case                rows    entries  shape (T x I/B)   ms  copy ms  %copy    bytes/ms  check ms  check"
    );
    let mut ok = true;
    for case in f32_cases.iter().filter(|c| wanted(c.name)) {
        ok &= run::<f32>(&stream, &mut spmv, case);
    }
    for case in f64_cases.iter().filter(|c| wanted(c.name)) {
        ok &= run::<f64>(&stream, &mut spmv, case);
    }
    assert!(ok, "a product differs from the CPU's");
}
