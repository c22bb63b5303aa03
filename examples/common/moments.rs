//! Count, sum and sum of squares (wrapping): the moments whose summed-area
//! tables give every box's mean and variance. A commutative operator of 24
//! bytes, so its two-dimensional tiles take the warp-scan forms of
//! `summed_area.cuh` (fewer than 8 items a thread). Exact: outputs compare
//! bit for bit. Shared by `examples/matrix_bench.rs` and
//! `tests/gpu_summed_area.rs`.

use gpu_scan::prelude::*;

/// The moments of a set of values.
#[scan_op(
    identity = Moments { count: 0, sum: 0, squares: 0 },
    op = |x, y| Moments {
        count: x.count.wrapping_add(y.count),
        sum: x.sum.wrapping_add(y.sum),
        squares: x.squares.wrapping_add(y.squares),
    },
    commutative = true
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moments {
    /// How many values.
    pub count: u64,
    /// Their sum.
    pub sum: u64,
    /// The sum of their squares.
    pub squares: u64,
}

impl Moments {
    /// The moments of one value.
    pub fn of(v: u64) -> Moments {
        Moments {
            count: 1,
            sum: v,
            squares: v.wrapping_mul(v),
        }
    }
}
