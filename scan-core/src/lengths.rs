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

impl LengthMismatch {
    /// `Ok` where an input of `input` elements and an output of `output`
    /// have the same length, else the error.
    pub(crate) fn check(input: usize, output: usize) -> Result<(), LengthMismatch> {
        if input == output {
            Ok(())
        } else {
            Err(LengthMismatch { input, output })
        }
    }
}
