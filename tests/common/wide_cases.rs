//! The affine maps of vectors of `examples/common/wide_ops.rs` as GPU test
//! cases (random elements, compared bit for bit), for the suites that scan
//! them (`gpu_wide`, `gpu_offsets`), which include this file by path. It is
//! not in `common/mod.rs`, so that the other suites do not compile the
//! operators.

#[path = "../../examples/common/wide_ops.rs"]
mod wide_ops;

use crate::common::gpu::{Case, Rng64};
use rand::Rng;
pub use wide_ops::*;

macro_rules! random_cases {
    ($($name:ident),*) => {$(
        impl Case for $name {
            fn random(rng: &mut Rng64) -> $name {
                $name::from_bits(rng.random())
            }
        }
    )*};
}
random_cases!(
    Wide16, Wide24, Wide32, Wide48, Wide64, Wide72, Wide96, Wide128, Wide256, Bytes41, Bytes109,
    Half122, Half172
);
