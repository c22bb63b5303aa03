//! Segments on the device, as a segmented scan takes them: head flags
//! ([`DeviceHeadFlags`]), fixed-length rows, offsets and keys
//! ([`DeviceSegments`]), and how a scan spec names them
//! ([`DeviceSegmentsSpec`]).

use crate::error::{Result, ScanError};
use crate::head_flags::{DeviceHeadFlags, OwnedDeviceHeadFlags};
use crate::keys::{DeviceKeys, KeyView};
use crate::launch::Heads;
use crate::offsets::DeviceOffsets;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, DevicePtr, DeviceRepr, SyncOnDrop};
use kernels_gen::segment_starts::HeadsIn;
use kernels_gen::SegmentSource;
use scan_core::segmented::{RowLengthMismatch, SegmentKey};
use scan_core::{Columns, NoSegments, Rows, SegmentedBy, Shape, SummedArea};

/// How a GPU segmented scan's input is cut into segments: head flags in
/// device memory (a [`DeviceHeadFlags`], a `&CudaSlice<u8>` or a byte view
/// converts into this), rows of a fixed length, or segment start offsets
/// ([`DeviceOffsets`] converts into this). Rows and offsets need no flags:
/// the kernels compute the heads of each tile (from the index, or from the
/// offsets that fall in it), so a row-major matrix is scanned along its
/// rows, and a CSR matrix's values along theirs, at about the speed of a
/// plain scan.
///
/// ```no_run
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::{open_device, DeviceSegments, GpuScanner};
///
/// #[scan_op(element = f32, identity = 0.0, op = |a, b| a + b)]
/// struct Sum;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.default_stream();
/// // 1024 rows of 16: cumsum along dim 1.
/// let x = stream.clone_htod(&vec![1.0f32; 1024 * 16])?;
/// let mut y = stream.alloc_zeros::<f32>(1024 * 16)?;
/// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
/// scanner.scan(&stream, ScanSpec::inclusive().segments(DeviceSegments::rows(16)), &x, &mut y)?;
/// # Ok::<(), gpu_scan::prelude::ScanError>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum DeviceSegments<'a> {
    /// Heads given as flags in device memory.
    Flags(DeviceHeadFlags<'a>),
    /// Segments of `row_length` elements each (element `i` starts one
    /// where `i % row_length == 0`); the input's length must be a multiple
    /// of `row_length`, which must not be 0.
    Rows {
        /// Elements per row.
        row_length: usize,
    },
    /// Segments starting at checked offsets.
    Offsets(DeviceOffsets<'a>),
    /// Segments of equal consecutive keys (a scan by key).
    Keys(DeviceKeys<'a>),
}

impl<'a> DeviceSegments<'a> {
    /// Rows of `row_length` elements each ([`DeviceSegments::Rows`]).
    pub fn rows(row_length: usize) -> Self {
        DeviceSegments::Rows { row_length }
    }

    /// Segments of equal consecutive keys ([`DeviceSegments::Keys`]), from
    /// a `&CudaSlice<K>` or a `CudaView<K>` of any
    /// [`SegmentKey`](scan_core::segmented::SegmentKey) type.
    pub fn keys<K: SegmentKey + DeviceRepr>(keys: impl Into<KeyView<'a, K>>) -> Self {
        DeviceSegments::Keys(DeviceKeys::new(keys))
    }

    /// Where the kernels find the heads.
    pub(crate) fn source(&self) -> SegmentSource {
        match self {
            DeviceSegments::Flags(heads) => SegmentSource::Flags(heads.format()),
            DeviceSegments::Rows { .. } => SegmentSource::Rows,
            DeviceSegments::Offsets(_) => SegmentSource::Offsets,
            DeviceSegments::Keys(_) => SegmentSource::Keys,
        }
    }

    pub(crate) fn check_len(&self, n: usize) -> Result<()> {
        match self {
            DeviceSegments::Flags(heads) => Ok(heads.check_len(n)?),
            DeviceSegments::Rows { row_length } => Ok(RowLengthMismatch::check(n, *row_length)?),
            DeviceSegments::Offsets(offsets) => Ok(offsets.check_len(n)?),
            DeviceSegments::Keys(keys) => Ok(keys.check_len(n)?),
        }
    }

    /// How many totals a per-segment totals slot takes for a checked
    /// sequence of `n`: one per row, one per window of the offsets (CSR
    /// row pointers: one fewer than the offsets). Flags and keys in device
    /// memory are refused: the host does not know their count.
    pub(crate) fn totals_count(&self, n: usize) -> Result<usize> {
        self.host_count(n).ok_or(ScanError::SegmentTotalsUncounted {
            source_kind: match self {
                DeviceSegments::Keys(_) => "keys",
                _ => "head flags",
            },
        })
    }

    /// The number of segments of a checked sequence of `n` where the host
    /// knows it (rows, offsets), `None` for flags and keys in device
    /// memory, which the device counts.
    pub(crate) fn host_count(&self, n: usize) -> Option<usize> {
        match self {
            DeviceSegments::Rows { row_length } => Some(n / row_length),
            DeviceSegments::Offsets(offsets) => Some(offsets.count().saturating_sub(1)),
            DeviceSegments::Flags(_) | DeviceSegments::Keys(_) => None,
        }
    }

    /// Where the segment-starts kernels find the heads (flags in their
    /// format, keys of their width), `None` for rows and offsets, whose
    /// segments the host counts.
    pub(crate) fn heads_in(&self) -> Option<HeadsIn> {
        match self {
            DeviceSegments::Flags(flags) => Some(HeadsIn::Flags(flags.format())),
            DeviceSegments::Keys(keys) => Some(HeadsIn::Keys {
                key_bits: 8 * keys.width() as u32,
            }),
            DeviceSegments::Rows { .. } | DeviceSegments::Offsets(_) => None,
        }
    }

    /// The kernels' argument for the segments (flags' address, row length,
    /// offsets, keys), and the guards that order their use on `stream`
    /// after their writes.
    pub(crate) fn heads_arg<'s>(&'s self, stream: &'s CudaStream) -> (Heads, Vec<SyncOnDrop<'s>>) {
        match self {
            DeviceSegments::Flags(DeviceHeadFlags::Bytes(b)) => {
                let (flags, sync) = b.device_ptr(stream);
                (Heads::Flags(flags), vec![sync])
            }
            DeviceSegments::Flags(DeviceHeadFlags::Bits { words, .. }) => {
                let (flags, sync) = words.device_ptr(stream);
                (Heads::Flags(flags), vec![sync])
            }
            DeviceSegments::Rows { row_length } => (Heads::Rows(*row_length as u64), vec![]),
            DeviceSegments::Offsets(offsets) => {
                let (offsets, syncs) = offsets.arg(stream);
                (Heads::Offsets(offsets), syncs.into())
            }
            DeviceSegments::Keys(keys) => {
                let (keys, sync) = keys.arg(stream);
                (Heads::Keys(keys), vec![sync])
            }
        }
    }
}

impl From<Rows> for DeviceSegments<'_> {
    fn from(rows: Rows) -> Self {
        DeviceSegments::rows(rows.row_length)
    }
}

impl<'a> From<DeviceOffsets<'a>> for DeviceSegments<'a> {
    fn from(offsets: DeviceOffsets<'a>) -> Self {
        DeviceSegments::Offsets(offsets)
    }
}

impl<'a> From<&DeviceOffsets<'a>> for DeviceSegments<'a> {
    fn from(offsets: &DeviceOffsets<'a>) -> Self {
        DeviceSegments::Offsets(offsets.clone())
    }
}

impl<'a> From<DeviceKeys<'a>> for DeviceSegments<'a> {
    fn from(keys: DeviceKeys<'a>) -> Self {
        DeviceSegments::Keys(keys)
    }
}

impl<'a> From<&DeviceKeys<'a>> for DeviceSegments<'a> {
    fn from(keys: &DeviceKeys<'a>) -> Self {
        DeviceSegments::Keys(keys.clone())
    }
}

impl<'a> From<DeviceHeadFlags<'a>> for DeviceSegments<'a> {
    fn from(heads: DeviceHeadFlags<'a>) -> Self {
        DeviceSegments::Flags(heads)
    }
}

impl<'a> From<&'a CudaSlice<u8>> for DeviceSegments<'a> {
    fn from(bytes: &'a CudaSlice<u8>) -> Self {
        DeviceSegments::Flags(bytes.into())
    }
}

impl<'a> From<CudaView<'a, u8>> for DeviceSegments<'a> {
    fn from(bytes: CudaView<'a, u8>) -> Self {
        DeviceSegments::Flags(bytes.into())
    }
}

impl<'a> From<&'a OwnedDeviceHeadFlags> for DeviceSegments<'a> {
    fn from(heads: &'a OwnedDeviceHeadFlags) -> Self {
        DeviceSegments::Flags(heads.as_flags())
    }
}

/// A spec's shape for a GPU scan: one sequence ([`NoSegments`]),
/// segments ([`ScanSpec::segments`](scan_core::ScanSpec::segments) given
/// anything that converts into [`DeviceSegments`]: head flags, rows,
/// checked offsets, keys), or a matrix ([`Columns`], [`SummedArea`]).
pub trait DeviceSegmentsSpec<'a> {
    /// The shape, with the segments as [`DeviceSegments`].
    fn into_device_shape(self) -> Shape<DeviceSegments<'a>>;
}

impl<'a> DeviceSegmentsSpec<'a> for NoSegments {
    fn into_device_shape(self) -> Shape<DeviceSegments<'a>> {
        Shape::Flat
    }
}

impl<'a, T: Into<DeviceSegments<'a>>> DeviceSegmentsSpec<'a> for SegmentedBy<T> {
    fn into_device_shape(self) -> Shape<DeviceSegments<'a>> {
        Shape::Segmented(self.0.into())
    }
}

impl<'a> DeviceSegmentsSpec<'a> for Columns {
    fn into_device_shape(self) -> Shape<DeviceSegments<'a>> {
        Shape::Columns {
            row_length: self.row_length,
        }
    }
}

impl<'a> DeviceSegmentsSpec<'a> for SummedArea {
    fn into_device_shape(self) -> Shape<DeviceSegments<'a>> {
        Shape::SummedArea {
            row_length: self.row_length,
        }
    }
}
