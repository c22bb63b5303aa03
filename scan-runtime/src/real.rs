//! The real types of the numeric applications on the GPU (recurrences,
//! sparse products) and the device arrays they read.

use cudarc::driver::{DevicePtr, DeviceRepr, ValidAsZeroBits};
use kernels_gen::RealType;
use scan_core::real::Real;

mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A real type the GPU's recurrences and sparse products run in: `f32`
/// or `f64`.
pub trait DeviceReal: Real + DeviceRepr + ValidAsZeroBits + private::Sealed {
    /// The kernels' type.
    const REAL: RealType;
}

impl DeviceReal for f32 {
    const REAL: RealType = RealType::F32;
}

impl DeviceReal for f64 {
    const REAL: RealType = RealType::F64;
}

/// A device array a recurrence or a sparse product reads: a `CudaSlice` or
/// a view of one.
pub type DeviceArray<'a, T> = &'a dyn DevicePtr<T>;
