//! The real types of the numeric applications (recurrences, SpMV).

/// A real type of the numeric kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RealType {
    /// `f32`, CUDA `float`.
    F32,
    /// `f64`, CUDA `double`.
    F64,
}

impl RealType {
    /// The CUDA type.
    pub fn cuda_type(self) -> &'static str {
        match self {
            RealType::F32 => "float",
            RealType::F64 => "double",
        }
    }

    /// Bytes of one value.
    pub fn size(self) -> usize {
        match self {
            RealType::F32 => 4,
            RealType::F64 => 8,
        }
    }
}
