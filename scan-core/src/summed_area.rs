//! Two-dimensional scans on the CPU (summed-area tables, integral images),
//! the oracle of the GPU's.
//!
//! The matrix is `input.len() / row_length` rows of `row_length` elements,
//! row-major. Going forward, an inclusive scan's `out[r][c]` combines the
//! rectangle of rows `0..=r` and columns `0..=c`; an exclusive one's the
//! rectangle of rows `0..r` and columns `0..c` (the identity where it is
//! empty, on the first row and the first column); in reverse the rectangle
//! runs from `(r, c)` to the last row and column (rows `r + 1..` and
//! columns `c + 1..` when exclusive). An initial value comes first in scan
//! order, as in one dimension: in front of every rectangle going forward,
//! after it in reverse. The rectangle's elements are combined in memory order,
//! row by row, each row from its first column to its last, so an operator
//! need not be commutative: the result is the scan along the rows (of the
//! same kind and direction, without the initial value) followed by the
//! scan down the columns with the spec, which is how it is computed.
//! A row length of 0, or one that does not divide the length, is
//! [`RowLengthMismatch`](crate::segmented::RowLengthMismatch).
//!
//! ```
//! use gpu_scan::prelude::*;
//! use gpu_scan::summed_area;
//!
//! #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
//! struct Sum;
//!
//! // A 3 × 3 matrix, row-major.
//! let x = [1, 2, 3, /**/ 4, 5, 6, /**/ 7, 8, 9];
//! let mut sat = vec![0; 9];
//! summed_area::scan::<Sum>(ScanKind::Inclusive, 3, &x, &mut sat).unwrap();
//! assert_eq!(sat, [1, 3, 6, 5, 12, 21, 12, 27, 45]);
//! // Exclusive: the rectangle strictly above and to the left.
//! summed_area::scan::<Sum>(ScanKind::Exclusive, 3, &x, &mut sat).unwrap();
//! assert_eq!(sat, [0, 0, 0, 0, 1, 3, 0, 5, 12]);
//! ```

use crate::columns;
use crate::cpu::plan;
use crate::segmented::{self, SegmentedError, Segments};
use crate::spec::ScanSpec;
use crate::{ScanKind, ScanOp};

/// The scan along the rows that the two-dimensional scan `spec` begins
/// with: the same kind and direction, without the initial value (which
/// the scan down the columns puts in front once).
pub fn row_spec<E: Copy>(spec: &ScanSpec<E>) -> ScanSpec<E> {
    let (inclusive, _, reverse) = plan(spec);
    let kind = if inclusive {
        ScanKind::Inclusive
    } else {
        ScanKind::Exclusive
    };
    let rows = ScanSpec::new(kind);
    if reverse {
        rows.reverse()
    } else {
        rows
    }
}

/// The scan along the rows, then down the columns, sequentially or on all
/// cores.
fn run<Op: ScanOp>(
    parallel: bool,
    spec: ScanSpec<Op::Element>,
    row_length: usize,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    columns::check(input.len(), output.len(), row_length)?;
    let rows = Segments::rows(row_length);
    if parallel {
        segmented::par_scan::<Op>(row_spec(&spec), rows, input, output)?;
        columns::par_scan_in_place::<Op>(spec, row_length, output)
    } else {
        segmented::scan::<Op>(row_spec(&spec), rows, input, output)?;
        columns::scan_in_place::<Op>(spec, row_length, output)
    }
}

/// Sequential two-dimensional scan of `input` (rows of `row_length`) into
/// `output`.
pub fn scan<Op: ScanOp>(
    spec: impl Into<ScanSpec<Op::Element>>,
    row_length: usize,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    run::<Op>(false, spec.into(), row_length, input, output)
}

/// Sequential two-dimensional scan of `data` (rows of `row_length`) in
/// place.
pub fn scan_in_place<Op: ScanOp>(
    spec: impl Into<ScanSpec<Op::Element>>,
    row_length: usize,
    data: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    columns::check(data.len(), data.len(), row_length)?;
    let input = data.to_vec();
    run::<Op>(false, spec.into(), row_length, &input, data)
}

/// Two-dimensional scan of `input` into `output` on all cores.
pub fn par_scan<Op: ScanOp>(
    spec: impl Into<ScanSpec<Op::Element>>,
    row_length: usize,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    run::<Op>(true, spec.into(), row_length, input, output)
}

/// Two-dimensional scan of `data` in place on all cores.
pub fn par_scan_in_place<Op: ScanOp>(
    spec: impl Into<ScanSpec<Op::Element>>,
    row_length: usize,
    data: &mut [Op::Element],
) -> Result<(), SegmentedError> {
    columns::check(data.len(), data.len(), row_length)?;
    let input = data.to_vec();
    run::<Op>(true, spec.into(), row_length, &input, data)
}
