//! The error every scan of a slice into another shares: their lengths
//! differ.

/// The output slice's length differs from the input's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("output has {output} elements but the input has {input}: scans write one output element per input element")]
pub struct LengthMismatch {
    /// Input length.
    pub input: usize,
    /// Output length.
    pub output: usize,
}
