//! Segment head flags in device memory, borrowed ([`DeviceHeadFlags`]) or
//! owned ([`OwnedDeviceHeadFlags`], as the
//! [`HeadFlagBuilder`](crate::HeadFlagBuilder) returns them).

use cudarc::driver::{CudaSlice, CudaView};
use kernels_gen::FlagFormat;
use scan_core::segmented::FlagsLengthMismatch;

/// Segment head flags in device memory, borrowed: one byte per element
/// (non-zero marks a head) or bits packed into `u32` words (element `i` is
/// bit `i % 32` of word `i / 32`). Element 0 always starts a segment.
///
/// Build them from `CudaSlice`s or views with `From`, or with a
/// [`HeadFlagBuilder`](crate::HeadFlagBuilder) from segment offsets or keys.
#[derive(Debug)]
pub enum DeviceHeadFlags<'a> {
    /// One byte per element.
    Bytes(CudaView<'a, u8>),
    /// Packed bits: the words, and the number of elements they describe
    /// (the words of 33 elements and of 40 look alike).
    Bits {
        /// `ceil(len / 32)` words; bits past `len` are ignored.
        words: CudaView<'a, u32>,
        /// The number of elements the flags describe.
        len: usize,
    },
}

impl<'a> DeviceHeadFlags<'a> {
    /// Packed flags for `len` elements in `words` (`slice.as_view()`).
    pub fn bits(words: CudaView<'a, u32>, len: usize) -> Self {
        DeviceHeadFlags::Bits { words, len }
    }

    /// The storage format.
    pub fn format(&self) -> FlagFormat {
        match self {
            DeviceHeadFlags::Bytes(_) => FlagFormat::Bytes,
            DeviceHeadFlags::Bits { .. } => FlagFormat::Bits,
        }
    }

    /// Storage units (bytes or words).
    pub fn units(&self) -> usize {
        match self {
            DeviceHeadFlags::Bytes(b) => b.len(),
            DeviceHeadFlags::Bits { words, .. } => words.len(),
        }
    }

    /// The number of elements the flags describe.
    pub fn len(&self) -> usize {
        match self {
            DeviceHeadFlags::Bytes(b) => b.len(),
            DeviceHeadFlags::Bits { len, .. } => *len,
        }
    }

    /// Whether the flags describe no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn check_len(&self, n: usize) -> Result<(), FlagsLengthMismatch> {
        FlagsLengthMismatch::check(self.format(), n, self.len(), self.units())
    }
}

impl<'a> From<&'a CudaSlice<u8>> for DeviceHeadFlags<'a> {
    fn from(bytes: &'a CudaSlice<u8>) -> Self {
        DeviceHeadFlags::Bytes(bytes.as_view())
    }
}

impl<'a> From<CudaView<'a, u8>> for DeviceHeadFlags<'a> {
    fn from(bytes: CudaView<'a, u8>) -> Self {
        DeviceHeadFlags::Bytes(bytes)
    }
}

/// Owned head flags in device memory, as [`HeadFlagBuilder`](crate::HeadFlagBuilder) returns them.
#[derive(Debug)]
pub enum OwnedDeviceHeadFlags {
    /// One byte per element.
    Bytes(CudaSlice<u8>),
    /// Packed bits.
    Bits {
        /// `ceil(len / 32)` words.
        words: CudaSlice<u32>,
        /// The number of elements the flags describe.
        len: usize,
    },
}

impl OwnedDeviceHeadFlags {
    /// Borrows the flags for a scan.
    pub fn as_flags(&self) -> DeviceHeadFlags<'_> {
        match self {
            OwnedDeviceHeadFlags::Bytes(b) => b.into(),
            OwnedDeviceHeadFlags::Bits { words, len } => {
                DeviceHeadFlags::bits(words.as_view(), *len)
            }
        }
    }
}
