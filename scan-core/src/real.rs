//! The floats the numeric applications (recurrences, sparse products) run
//! over on the CPU: `f32` and `f64`.

mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `f32` or `f64` (sealed: the error bounds of the applications over it
/// are derived for these two).
pub trait Real:
    private::Sealed
    + Copy
    + Send
    + Sync
    + PartialEq
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + 'static
{
    /// 0.
    const ZERO: Self;
    /// The unit roundoff u (2^-24, 2^-53): one rounding to this type is
    /// off by at most u relatively, the unit of the error bounds the tests
    /// and benchmarks derive.
    const UNIT_ROUNDOFF: f64;
    /// The value of this type nearest to `v`.
    fn from_f64(v: f64) -> Self;
    /// This value as an `f64` (exact).
    fn to_f64(self) -> f64;
}

impl Real for f32 {
    const ZERO: Self = 0.0;
    const UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 24) as f64;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Real for f64 {
    const ZERO: Self = 0.0;
    const UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 53) as f64;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}
