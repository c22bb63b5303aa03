//! The floats the numeric applications (recurrences, sparse products) run
//! over on the CPU: `f32` and `f64`.

/// `f32` or `f64`.
pub trait Real:
    Copy
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
}

impl Real for f32 {
    const ZERO: Self = 0.0;
}

impl Real for f64 {
    const ZERO: Self = 0.0;
}
