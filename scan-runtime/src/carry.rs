//! Where a GPU scan writes its carry-out ([`DeviceCarryOut`]): nowhere, or
//! a one-element device buffer the kernels write on the stream, so a scan
//! with a carry-out stays asynchronous and can be captured in a CUDA graph.

use crate::error::{Result, ScanError};
use cudarc::driver::{CudaStream, DevicePtrMut, SyncOnDrop};
use scan_core::segmented::SegmentTotalsLength;
use scan_core::{NoCarryOut, SegmentTotals};

/// A GPU scan's carry-out slot ([`ScanSpec::carry_out`](scan_core::ScanSpec::carry_out)):
/// [`NoCarryOut`], or `&mut D` for a device buffer `D` of exactly one
/// element (`CudaSlice<E>`, `CudaViewMut<E>`), which the scan's last kernel
/// writes.
///
/// ```no_run
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::open_device;
///
/// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
/// struct Sum;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.default_stream();
/// let keep = stream.clone_htod(&[1u32, 0, 1, 1, 0])?;
/// let mut slots = stream.alloc_zeros::<u32>(5)?;
/// let mut kept = stream.alloc_zeros::<u32>(1)?;
/// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
/// scanner.scan(&stream, ScanSpec::exclusive().carry_out(&mut kept), &keep, &mut slots)?;
/// assert_eq!(stream.clone_dtoh(&slots)?, [0, 1, 1, 2, 3]);
/// assert_eq!(stream.clone_dtoh(&kept)?, [3]);
/// # Ok::<(), ScanError>(())
/// ```
pub trait DeviceCarryOut<E> {
    /// Checks the slot (one element), before the scan enqueues anything.
    fn check(&self) -> Result<()>;

    /// The slot's length where it takes one total per segment
    /// ([`SegmentTotals`]), `None` for a one-element carry-out.
    fn totals_len(&self) -> Option<usize> {
        None
    }

    /// The slot's device address on `stream` (0 for none) and the guard
    /// that orders the scan's write after the slot's earlier uses.
    fn slot<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, Option<SyncOnDrop<'a>>);
}

impl<E> DeviceCarryOut<E> for NoCarryOut {
    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn slot<'a>(&'a mut self, _: &'a CudaStream) -> (u64, Option<SyncOnDrop<'a>>) {
        (0, None)
    }
}

impl<E, D: DevicePtrMut<E>> DeviceCarryOut<E> for &mut D {
    fn check(&self) -> Result<()> {
        match self.len() {
            1 => Ok(()),
            len => Err(ScanError::CarryOutLength { len }),
        }
    }

    fn slot<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, Option<SyncOnDrop<'a>>) {
        let (address, sync) = self.device_ptr_mut(stream);
        (address, Some(sync))
    }
}

/// One total per segment ([`ScanSpec::segment_totals`](scan_core::ScanSpec::segment_totals)):
/// a device buffer `D` of one element per segment. A scan without segments
/// is one segment, so there it is a one-element carry-out slot.
///
/// ```no_run
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::{open_device, DeviceOffsets};
///
/// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
/// struct Sum;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.default_stream();
/// // CSR rows of 2, 0 and 3 elements, and each row's sum.
/// let values = stream.clone_htod(&[1u32, 2, 3, 4, 5])?;
/// let row_ptr = stream.clone_htod(&[0u32, 2, 2, 5])?;
/// let offsets = DeviceOffsets::check(&stream, row_ptr.as_view(), 5)?;
/// let mut out = stream.alloc_zeros::<u32>(5)?;
/// let mut row_sums = stream.alloc_zeros::<u32>(3)?;
/// let spec = ScanSpec::inclusive().segments(&offsets).segment_totals(&mut row_sums);
/// GpuScanner::<Sum>::new(&ctx)?.scan(&stream, spec, &values, &mut out)?;
/// assert_eq!(stream.clone_dtoh(&out)?, [1, 3, 3, 7, 12]);
/// assert_eq!(stream.clone_dtoh(&row_sums)?, [3, 0, 12]);
/// # Ok::<(), ScanError>(())
/// ```
impl<E, D: DevicePtrMut<E>> DeviceCarryOut<E> for SegmentTotals<&mut D> {
    fn check(&self) -> Result<()> {
        Ok(SegmentTotalsLength::check(self.0.len(), 1)?)
    }

    fn totals_len(&self) -> Option<usize> {
        Some(self.0.len())
    }

    fn slot<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, Option<SyncOnDrop<'a>>) {
        let (address, sync) = self.0.device_ptr_mut(stream);
        (address, Some(sync))
    }
}
