//! Column scans on the CPU: a row-major matrix scanned down its columns
//! (`torch.cumsum(x, dim=0)`), the oracle of the GPU's column scans.
//!
//! The matrix is `input.len() / row_length` rows of `row_length` elements;
//! column `c` is the sequence `in[c], in[row_length + c], …`, scanned with
//! any [`ScanSpec`]: in reverse each column from its last row, an exclusive
//! scan's initial value at the top of every column (at the bottom in
//! reverse). A row length of 0, or one that does not divide the length, is
//! [`RowLengthMismatch`].
//!
//! ```
//! use gpu_scan::prelude::*;
//! use gpu_scan::columns;
//!
//! #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
//! struct Sum;
//!
//! // A 3 × 2 matrix, row-major, summed down its columns.
//! let mut out = vec![0; 6];
//! columns::scan::<Sum>(ScanKind::Inclusive, 2, &[1, 2, 3, 4, 5, 6], &mut out).unwrap();
//! assert_eq!(out, [1, 2, 4, 6, 9, 12]);
//! ```

use crate::cpu::{plan, step, LengthMismatch};
use crate::segmented::{RowLengthMismatch, SegmentedError};
use crate::spec::ScanSpec;
use crate::ScanOp;
use rayon::prelude::*;

/// Scans rows `data` (whole rows of `cols`) in scan order behind `running`
/// (one partial per column, `None`: nothing yet), updating it.
fn run<Op: ScanOp>(
    inclusive: bool,
    reverse: bool,
    cols: usize,
    running: &mut [Option<Op::Element>],
    data: &mut [Op::Element],
) {
    let rows = data.len() / cols;
    for k in 0..rows {
        let r = if reverse { rows - 1 - k } else { k };
        let row = &mut data[r * cols..(r + 1) * cols];
        for (x, run) in row.iter_mut().zip(running.iter_mut()) {
            let next = step::<Op>(reverse, *run, *x);
            *x = if inclusive {
                next
            } else {
                run.unwrap_or(Op::IDENTITY)
            };
            *run = Some(next);
        }
    }
}

/// Each column's total over whole rows `data`, in scan order.
fn totals<Op: ScanOp>(
    reverse: bool,
    cols: usize,
    data: &[Op::Element],
) -> Vec<Option<Op::Element>> {
    let mut total = vec![None; cols];
    let rows = data.len() / cols;
    for k in 0..rows {
        let r = if reverse { rows - 1 - k } else { k };
        for (t, x) in total.iter_mut().zip(&data[r * cols..(r + 1) * cols]) {
            *t = Some(step::<Op>(reverse, *t, *x));
        }
    }
    total
}

/// An output of the input's length and a row length that divides it.
pub(crate) fn check(input: usize, output: usize, row_length: usize) -> Result<(), SegmentedError> {
    if input != output {
        return Err(LengthMismatch { input, output }.into());
    }
    Ok(RowLengthMismatch::check(input, row_length)?)
}

/// Sequential column scan of `input` (rows of `row_length`) into `output`.
pub fn scan<Op: ScanOp>(
    spec: impl Into<ScanSpec<Op::Element>>,
    row_length: usize,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    check(input.len(), output.len(), row_length)?;
    output.copy_from_slice(input);
    scan_in_place::<Op>(spec, row_length, output)
}

/// Sequential column scan of `data` (rows of `row_length`) in place.
pub fn scan_in_place<Op: ScanOp>(
    spec: impl Into<ScanSpec<Op::Element>>,
    row_length: usize,
    data: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    check(data.len(), data.len(), row_length)?;
    let (inclusive, seed, reverse) = plan(&spec.into());
    let mut running = vec![seed; row_length];
    run::<Op>(inclusive, reverse, row_length, &mut running, data);
    Ok(())
}

/// Column scan of `input` into `output` on all cores.
pub fn par_scan<Op: ScanOp>(
    spec: impl Into<ScanSpec<Op::Element>>,
    row_length: usize,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    check(input.len(), output.len(), row_length)?;
    output.par_iter_mut().zip(input).for_each(|(o, i)| *o = *i);
    par_scan_in_place::<Op>(spec, row_length, output)
}

/// Column scan of `data` in place on all cores: bands of rows, each band's
/// column totals, their scan down the bands, and a seeded rescan of every
/// band (the GPU's structure).
pub fn par_scan_in_place<Op: ScanOp>(
    spec: impl Into<ScanSpec<Op::Element>>,
    row_length: usize,
    data: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    check(data.len(), data.len(), row_length)?;
    let (inclusive, seed, reverse) = plan(&spec.into());
    let cols = row_length;
    let rows = data.len() / cols;
    // Bands of about 2^16 elements, at least one row each.
    let band_rows = ((1usize << 16) / cols).clamp(1, rows.max(1));
    let band = band_rows * cols;
    let bands: Vec<_> = data
        .par_chunks(band)
        .map(|b| totals::<Op>(reverse, cols, b))
        .collect();
    // Each band's carry: the seed and the bands before it in scan order.
    let mut carries = vec![Vec::new(); bands.len()];
    let mut running = vec![seed; cols];
    for k in 0..bands.len() {
        let b = if reverse { bands.len() - 1 - k } else { k };
        carries[b] = running.clone();
        for (r, t) in running.iter_mut().zip(&bands[b]) {
            if let Some(t) = t {
                *r = Some(step::<Op>(reverse, *r, *t));
            }
        }
    }
    data.par_chunks_mut(band)
        .zip(carries)
        .for_each(|(b, mut carry)| run::<Op>(inclusive, reverse, cols, &mut carry, b));
    Ok(())
}
