//! The vocabulary every gpu-scan crate shares, at the bottom of the crate
//! graph: the CPU backend (`scan-core`) and the CUDA generator
//! (`kernels-gen`) both speak it, and neither depends on the other.
//!
//! ```
//! use scan_types::{Direction, FlagFormat};
//!
//! assert_eq!(Direction::default(), Direction::Forward);
//! assert_eq!(FlagFormat::Bits.units(33), 2);
//! ```

/// Which end of the sequence a scan starts from. There are two, and there
/// will be no third: the enum is exhaustive so that every crate's matches
/// on it stay total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Prefix scans: `out[i]` combines `in[0] … in[i]`.
    #[default]
    Forward,
    /// Suffix scans: `out[i]` combines `in[i] … in[n-1]`, still in sequence
    /// order (`in[i] ∘ in[i+1] ∘ …`), so non-commutative operators keep
    /// their meaning. An exclusive reverse scan leaves out `in[i]`; its
    /// initial value goes at the right end: `out[i] = in[i+1] ∘ … ∘ in[n-1]
    /// ∘ init` and `out[n-1] = init`. Segmented, every segment is scanned
    /// from its last element.
    Reverse,
}

/// How segment head flags are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlagFormat {
    /// One byte per element; non-zero marks a head.
    Bytes,
    /// One bit per element, packed into `u32` words, least significant bit
    /// first: element `i` is bit `i % 32` of word `i / 32`.
    Bits,
}

impl FlagFormat {
    /// Both formats.
    pub const ALL: [FlagFormat; 2] = [FlagFormat::Bytes, FlagFormat::Bits];

    /// Storage units (bytes or `u32` words) that `n` elements need.
    pub const fn units(self, n: usize) -> usize {
        match self {
            FlagFormat::Bytes => n,
            FlagFormat::Bits => n.div_ceil(32),
        }
    }
}
