//! Sparse matrix–vector products over CSR on the CPU: the oracle of the
//! GPU's (a segmented sum of the products by row, the seeds' example; issue
//! 47), on all cores. Each row's products are summed in entry order from
//! the first (an empty row is 0), the order a sequential segmented scan of
//! the products by the row pointers takes; a GPU sums a row as a tree, so
//! float results agree with these within rounding, not bit for bit.
//!
//! ```
//! use gpu_scan::spmv::{csr_matvec, Csr};
//!
//! // [[1 0 2]
//! //  [0 0 0]
//! //  [0 3 0]]
//! let m = Csr { cols: 3, row_ptr: &[0u32, 2, 2, 3], col_idx: &[0, 2, 1], values: &[1.0f32, 2.0, 3.0] };
//! let mut y = [0.0; 3];
//! csr_matvec(&m, &[1.0, 10.0, 100.0], &mut y).unwrap();
//! assert_eq!(y, [201.0, 0.0, 30.0]);
//! ```

use crate::real::Real;
use crate::segments::{InvalidOffsets, SegmentOffset};
use rayon::prelude::*;

/// A matrix in compressed sparse rows: row `r`'s entries are
/// `col_idx[row_ptr[r]..row_ptr[r + 1]]` and `values[…]` (so there are
/// `row_ptr.len() - 1` rows).
#[derive(Clone, Copy, Debug)]
pub struct Csr<'a, T, O = u32> {
    /// Columns (the length of the vectors it multiplies).
    pub cols: usize,
    /// Row pointers: non-decreasing, from 0 to the number of entries.
    pub row_ptr: &'a [O],
    /// Each entry's column.
    pub col_idx: &'a [u32],
    /// Each entry's value.
    pub values: &'a [T],
}

/// A matrix or vector that does not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpmvError {
    /// No row pointers (even an empty matrix has one: 0).
    #[error("a CSR matrix needs at least one row pointer (0 for no rows)")]
    NoRowPointers,
    /// The row pointers do not cut the entries.
    #[error("row pointers: {0}")]
    RowPointers(#[from] InvalidOffsets),
    /// The row pointers do not start at 0 and end at the entries' count.
    #[error("row pointers run from {first} to {last}, not from 0 to the {entries} entries")]
    RowPointerEnds {
        /// The first.
        first: u64,
        /// The last.
        last: u64,
        /// Entries (values).
        entries: usize,
    },
    /// Column indices and values differ in number.
    #[error("{col_idx} column indices for {values} values")]
    Entries {
        /// Column indices given.
        col_idx: usize,
        /// Values given.
        values: usize,
    },
    /// An entry's column is past the matrix's.
    #[error("entry {entry} is in column {col}, past the matrix's {cols} columns")]
    Column {
        /// The entry.
        entry: usize,
        /// Its column.
        col: u32,
        /// The matrix's columns.
        cols: usize,
    },
    /// `x` or `y` is not as long as the matrix is wide or tall.
    #[error("`{vector}` has {given} values where the matrix needs {expected}")]
    Vector {
        /// `x` or `y`.
        vector: &'static str,
        /// Its length.
        given: usize,
        /// The length needed.
        expected: usize,
    },
}

impl<T, O: SegmentOffset> Csr<'_, T, O> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// Checks the matrix's arrays against each other.
    pub fn check(&self) -> Result<(), SpmvError> {
        let entries = self.values.len();
        if self.col_idx.len() != entries {
            return Err(SpmvError::Entries {
                col_idx: self.col_idx.len(),
                values: entries,
            });
        }
        let (Some(first), Some(last)) = (self.row_ptr.first(), self.row_ptr.last()) else {
            return Err(SpmvError::NoRowPointers);
        };
        InvalidOffsets::check(self.row_ptr, entries)?;
        let (first, last) = (first.to_u64(), last.to_u64());
        if first != 0 || last != entries as u64 {
            return Err(SpmvError::RowPointerEnds {
                first,
                last,
                entries,
            });
        }
        if let Some((entry, &col)) = self
            .col_idx
            .iter()
            .enumerate()
            .find(|(_, &c)| c as usize >= self.cols)
        {
            return Err(SpmvError::Column {
                entry,
                col,
                cols: self.cols,
            });
        }
        Ok(())
    }
}

/// Refuses an `x` of `x_len` values that is not as long as a matrix of
/// `cols` columns is wide, or a `y` of `y_len` that is not as long as its
/// `rows` rows (the GPU's products check the same).
pub fn check_vectors(
    cols: usize,
    rows: usize,
    x_len: usize,
    y_len: usize,
) -> Result<(), SpmvError> {
    for (vector, given, expected) in [("x", x_len, cols), ("y", y_len, rows)] {
        if given != expected {
            return Err(SpmvError::Vector {
                vector,
                given,
                expected,
            });
        }
    }
    Ok(())
}

/// `y = m · x` on all cores (see the module documentation for the order of
/// each row's sum). On an error nothing is written.
pub fn csr_matvec<T: Real, O: SegmentOffset>(
    m: &Csr<'_, T, O>,
    x: &[T],
    y: &mut [T],
) -> Result<(), SpmvError> {
    m.check()?;
    check_vectors(m.cols, m.rows(), x.len(), y.len())?;
    y.par_iter_mut().enumerate().for_each(|(r, out)| {
        let (start, end) = (
            m.row_ptr[r].to_u64() as usize,
            m.row_ptr[r + 1].to_u64() as usize,
        );
        let product = |k: usize| m.values[k] * x[m.col_idx[k] as usize];
        *out = if start == end {
            T::ZERO
        } else {
            (start + 1..end).fold(product(start), |acc, k| acc + product(k))
        };
    });
    Ok(())
}
