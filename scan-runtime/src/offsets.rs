//! Segments given by their start offsets in device memory, checked and
//! indexed once ([`DeviceOffsets`]): the kernels find the heads in each
//! tile from the offsets themselves, so no flags are built, read or
//! written.

use crate::error::Result;
use crate::flag_builder::HeadFlagBuilder;
use crate::launch::OffsetsArg;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, DevicePtr, DeviceRepr, SyncOnDrop};
use scan_core::segmented::{InvalidOffsets, SegmentOffset};
use std::sync::Arc;

/// Segment start offsets (CSR row pointers, `u32` or `u64`) in device
/// memory, checked to cut a sequence of [`DeviceOffsets::len`] elements:
/// they do not decrease and none is past the end. Element `offsets[r]`
/// starts a segment; an offset equal to the length (the closing entry of a
/// row-pointer array, trailing empty segments) starts nothing, repeated
/// offsets (empty segments) mark one head, and element 0 always starts a
/// segment.
///
/// [`DeviceOffsets::check`] is the only way to make one: it checks the
/// offsets on the device and waits for the verdict, once, and builds their
/// index: one `u32` per 32 elements (`u64` beyond 2^32 offsets), where a
/// scan's threads find the
/// offsets of their elements without searching all of them. The value
/// borrows the offsets, so they cannot change while it lives, and every
/// scan through it runs without a check or a wait (it may be captured in
/// a CUDA graph). Clones share the index.
///
/// ```no_run
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::{open_device, DeviceOffsets, GpuScanner};
///
/// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
/// struct Sum;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.default_stream();
/// // Three segments of 2, 0 and 3 elements.
/// let values = stream.clone_htod(&[1u32, 2, 3, 4, 5])?;
/// let row_ptr = stream.clone_htod(&[0u32, 2, 2, 5])?;
/// let offsets = DeviceOffsets::check(&stream, row_ptr.as_view(), 5)?;
/// let mut out = stream.alloc_zeros::<u32>(5)?;
/// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
/// scanner.scan(&stream, ScanSpec::inclusive().segments(&offsets), &values, &mut out)?;
/// assert_eq!(stream.clone_dtoh(&out)?, [1, 3, 3, 7, 12]);
/// // Checked once: later scans with them wait for nothing.
/// scanner.scan(&stream, ScanSpec::exclusive().segments(&offsets), &values, &mut out)?;
/// assert_eq!(stream.clone_dtoh(&out)?, [0, 1, 0, 3, 7]);
/// # Ok::<(), ScanError>(())
/// ```
#[derive(Debug)]
pub struct DeviceOffsets<'a> {
    offsets: OffsetsView<'a>,
    index: Arc<OffsetsIndex>,
    len: usize,
}

/// The index of [`DeviceOffsets`], in `u32` entries where the offsets'
/// count fits.
#[derive(Debug)]
enum OffsetsIndex {
    U32(CudaSlice<u32>),
    U64(CudaSlice<u64>),
}

#[derive(Debug)]
enum OffsetsView<'a> {
    U32(CudaView<'a, u32>),
    U64(CudaView<'a, u64>),
}

impl Clone for OffsetsView<'_> {
    fn clone(&self) -> Self {
        match self {
            OffsetsView::U32(v) => OffsetsView::U32(v.slice(..)),
            OffsetsView::U64(v) => OffsetsView::U64(v.slice(..)),
        }
    }
}

/// Another handle on the same checked offsets (a scan takes its segments
/// by value; `&offsets` converts too).
impl Clone for DeviceOffsets<'_> {
    fn clone(&self) -> Self {
        DeviceOffsets {
            offsets: self.offsets.clone(),
            index: self.index.clone(),
            len: self.len,
        }
    }
}

/// The offset types the kernels read: `u32` and `u64`.
pub trait DeviceOffset: SegmentOffset + DeviceRepr + private::Sealed {
    #[doc(hidden)]
    fn wrap(view: CudaView<'_, Self>) -> DeviceOffsetsView<'_>;
}

/// A view of offsets of either width (an implementation detail of
/// [`DeviceOffset`]).
#[doc(hidden)]
#[derive(Debug)]
pub struct DeviceOffsetsView<'a>(OffsetsView<'a>);

impl DeviceOffset for u32 {
    fn wrap(view: CudaView<'_, u32>) -> DeviceOffsetsView<'_> {
        DeviceOffsetsView(OffsetsView::U32(view))
    }
}

impl DeviceOffset for u64 {
    fn wrap(view: CudaView<'_, u64>) -> DeviceOffsetsView<'_> {
        DeviceOffsetsView(OffsetsView::U64(view))
    }
}

mod private {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

impl<'a> DeviceOffsets<'a> {
    /// Checks on the device that `offsets` cut a sequence of `len`
    /// elements (see [`DeviceOffsets`]) and waits for the verdict: the
    /// first offset past `len` or smaller than the one before it is a
    /// [`ScanError::InvalidOffsets`](crate::ScanError::InvalidOffsets)
    /// naming it. Then indexes them on `stream` (without waiting). Both
    /// run on `stream` after the work already there.
    pub fn check<O: DeviceOffset>(
        stream: &Arc<CudaStream>,
        offsets: CudaView<'a, O>,
        len: usize,
    ) -> Result<Self> {
        let builder = HeadFlagBuilder::new(stream.context())?;
        builder.check_offsets(stream, &offsets, len)?;
        let index = if u32::try_from(offsets.len()).is_ok() {
            OffsetsIndex::U32(builder.index_offsets(stream, &offsets, len)?)
        } else {
            OffsetsIndex::U64(builder.index_offsets(stream, &offsets, len)?)
        };
        Ok(DeviceOffsets {
            offsets: O::wrap(offsets).0,
            index: Arc::new(index),
            len,
        })
    }

    /// The length of the sequence the offsets were checked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether they were checked for an empty sequence.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many offsets there are.
    pub fn count(&self) -> usize {
        match &self.offsets {
            OffsetsView::U32(v) => v.len(),
            OffsetsView::U64(v) => v.len(),
        }
    }

    /// Refuses a sequence of another length than the one checked.
    pub(crate) fn check_len(&self, len: usize) -> std::result::Result<(), InvalidOffsets> {
        if len == self.len {
            Ok(())
        } else {
            Err(InvalidOffsets::CheckedForAnotherLength {
                checked: self.len,
                len,
            })
        }
    }

    /// The kernels' `scan_offsets` argument, and the guards that order the
    /// use of the offsets and their index on `stream` after their writes.
    pub(crate) fn arg<'s>(&'s self, stream: &'s CudaStream) -> (OffsetsArg, [SyncOnDrop<'s>; 2]) {
        let count = self.count() as u64;
        let (address, width, sync) = match &self.offsets {
            OffsetsView::U32(v) => {
                let (address, sync) = v.device_ptr(stream);
                (address, 4, sync)
            }
            OffsetsView::U64(v) => {
                let (address, sync) = v.device_ptr(stream);
                (address, 8, sync)
            }
        };
        let (index, index_width, index_sync) = match &*self.index {
            OffsetsIndex::U32(i) => {
                let (index, sync) = i.device_ptr(stream);
                (index, 4, sync)
            }
            OffsetsIndex::U64(i) => {
                let (index, sync) = i.device_ptr(stream);
                (index, 8, sync)
            }
        };
        let arg = OffsetsArg {
            address,
            count,
            width,
            index,
            index_width,
            index_shift: kernels_gen::OFFSETS_INDEX_SHIFT as u64,
        };
        (arg, [sync, index_sync])
    }
}
