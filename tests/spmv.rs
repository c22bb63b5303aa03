//! Sparse matrix–vector products over CSR on the CPU (`gpu_scan::spmv`),
//! the oracle of the GPU's: against a row-by-row transcription and against
//! the seeds' formulation, a segmented sum of the products by the row
//! pointers (both bit for bit: the same sums in the same order), on
//! matrices with power-law row lengths and empty rows; and typed errors for
//! matrices and vectors that do not fit. `SPMV_SEED` replays a run.

mod common;
use gpu_scan::ops::Sum;
use gpu_scan::prelude::*;
use gpu_scan::segmented::{self, Segments};
use gpu_scan::spmv::{csr_matvec, Csr, SpmvError};
use rand::{Rng, SeedableRng};

type Rng64 = rand::rngs::StdRng;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("SPMV_SEED");
    println!("spmv: seed {seed} (SPMV_SEED={seed} replays)");
    seed
}

/// A random matrix: `rows` rows whose lengths follow a power law (most
/// short, a few up to `cols`; a tenth empty), columns increasing in a row.
fn power_law(rng: &mut Rng64, rows: usize, cols: usize) -> (Vec<u64>, Vec<u32>, Vec<f64>) {
    let mut row_ptr = vec![0u64];
    let (mut col_idx, mut values) = (Vec::new(), Vec::new());
    for _ in 0..rows {
        let len = if rng.random_range(0..10) == 0 {
            0
        } else {
            // Pareto with shape 1.2: P(len > x) ~ x^-1.2.
            let u: f64 = rng.random_range(f64::EPSILON..1.0);
            (u.powf(-1.0 / 1.2) as usize).min(cols)
        };
        let mut cs: Vec<u32> = (0..len).map(|_| rng.random_range(0..cols as u32)).collect();
        cs.sort_unstable();
        for c in cs {
            col_idx.push(c);
            values.push(rng.random_range(-1.0..1.0));
        }
        row_ptr.push(col_idx.len() as u64);
    }
    (row_ptr, col_idx, values)
}

#[test]
fn products_match_rows_and_the_segmented_sum() {
    let mut rng = Rng64::seed_from_u64(seed());
    for (rows, cols) in [(0, 5), (1, 1), (33, 7), (2000, 3000), (50_000, 1000)] {
        let (row_ptr, col_idx, values) = power_law(&mut rng, rows, cols);
        let x: Vec<f64> = (0..cols).map(|_| rng.random_range(-1.0..1.0)).collect();
        let m = Csr {
            cols,
            row_ptr: &row_ptr[..],
            col_idx: &col_idx,
            values: &values,
        };
        let mut y = vec![f64::NAN; rows];
        csr_matvec(&m, &x, &mut y).unwrap();
        // Row by row.
        for r in 0..rows {
            let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            let mut want = if s == e {
                0.0
            } else {
                values[s] * x[col_idx[s] as usize]
            };
            for k in s + 1..e {
                want += values[k] * x[col_idx[k] as usize];
            }
            assert_eq!(y[r].to_bits(), want.to_bits(), "{rows}x{cols}: row {r}");
        }
        // The seeds' formulation: the products, summed by segments.
        let products: Vec<f64> = (0..values.len())
            .map(|k| values[k] * x[col_idx[k] as usize])
            .collect();
        let mut scanned = vec![0.0; products.len()];
        let mut totals = vec![f64::NAN; rows];
        segmented::scan::<Sum<f64>>(
            ScanSpec::inclusive().segment_totals(&mut totals),
            Segments::offsets(&row_ptr[..]),
            &products,
            &mut scanned,
        )
        .unwrap();
        assert_eq!(
            y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            totals.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{rows}x{cols}: the segmented sum"
        );
        // 32-bit row pointers and f32 values: the same sums in f32.
        let narrow: Vec<u32> = row_ptr.iter().map(|&p| p as u32).collect();
        let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let mut y32 = vec![f32::NAN; rows];
        let m32 = Csr {
            cols,
            row_ptr: &narrow[..],
            col_idx: &col_idx,
            values: &values32,
        };
        csr_matvec(&m32, &x32, &mut y32).unwrap();
        for r in 0..rows {
            let (s, e) = (narrow[r] as usize, narrow[r + 1] as usize);
            let product = |k: usize| values32[k] * x32[col_idx[k] as usize];
            let want = (s + 1..e).fold(if s == e { 0.0 } else { product(s) }, |acc, k| {
                acc + product(k)
            });
            assert_eq!(
                y32[r].to_bits(),
                want.to_bits(),
                "{rows}x{cols} f32: row {r}"
            );
        }
    }
}

#[test]
fn matrices_and_vectors_that_do_not_fit_are_typed_errors() {
    let (values, x) = ([1.0f32, 2.0, 3.0], [1.0f32; 3]);
    let mut y = [7.0f32; 2];
    let check = |m: Csr<'_, f32>, x: &[f32], y: &mut [f32], want: SpmvError| {
        assert_eq!(csr_matvec(&m, x, y), Err(want));
        assert!(y.iter().all(|&v| v == 7.0));
    };
    let csr = |row_ptr: &'static [u32], col_idx: &'static [u32]| Csr {
        cols: 3,
        row_ptr,
        col_idx,
        values: &values,
    };
    check(csr(&[], &[0, 1, 2]), &x, &mut y, SpmvError::NoRowPointers);
    check(
        csr(&[0, 2, 3], &[0, 1]),
        &x,
        &mut y,
        SpmvError::Entries {
            col_idx: 2,
            values: 3,
        },
    );
    check(
        csr(&[1, 2, 3], &[0, 1, 2]),
        &x,
        &mut y,
        SpmvError::RowPointerEnds {
            first: 1,
            last: 3,
            entries: 3,
        },
    );
    assert!(matches!(
        csr_matvec(&csr(&[0, 2, 1], &[0, 1, 2]), &x, &mut y),
        Err(SpmvError::RowPointers(_))
    ));
    check(
        csr(&[0, 2, 3], &[0, 3, 2]),
        &x,
        &mut y,
        SpmvError::Column {
            entry: 1,
            col: 3,
            cols: 3,
        },
    );
    check(
        csr(&[0, 2, 3], &[0, 1, 2]),
        &x[..2],
        &mut y,
        SpmvError::Vector {
            vector: "x",
            given: 2,
            expected: 3,
        },
    );
    let mut y3 = [7.0f32; 3];
    check(
        csr(&[0, 2, 3], &[0, 1, 2]),
        &x,
        &mut y3,
        SpmvError::Vector {
            vector: "y",
            given: 3,
            expected: 2,
        },
    );
}
