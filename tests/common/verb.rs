//! The one verb on the CPU backend, for the CPU suites that check it
//! against their oracles: `Scanner::scan` with a spec of any shape.
#![allow(dead_code)]

use super::ops::{AffineU32, Latest};
use gpu_scan::{HostSegments, NoCarryOut, ScanOp, ScanSpec};

/// `Scanner::scan` of `input` with `spec` on the CPU backend; `None`
/// without the `gpu` feature, which has no `Scanner`.
pub trait ViaScanner: ScanOp {
    fn via_scanner<S: for<'a> HostSegments<'a>>(
        spec: ScanSpec<Self::Element, NoCarryOut, S>,
        input: &[Self::Element],
    ) -> Option<Vec<Self::Element>>;
}

macro_rules! via_scanner {
    ($($op:ty),*) => {$(
        impl ViaScanner for $op {
            #[allow(unused_variables)]
            fn via_scanner<S: for<'a> HostSegments<'a>>(
                spec: ScanSpec<Self::Element, NoCarryOut, S>,
                input: &[Self::Element],
            ) -> Option<Vec<Self::Element>> {
                #[cfg(feature = "gpu")]
                return Some(gpu_scan::Scanner::<Self>::cpu().scan(spec, input).unwrap());
                #[cfg(not(feature = "gpu"))]
                None
            }
        }
    )*};
}

via_scanner!(AffineU32, Latest);
