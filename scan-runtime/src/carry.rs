//! Where a GPU scan writes its carry-out ([`DeviceCarryOut`]): nowhere, or
//! a one-element device buffer the kernels write on the stream, so a scan
//! with a carry-out stays asynchronous and can be captured in a CUDA graph.

use crate::error::{Result, ScanError};
use cudarc::driver::{CudaStream, DevicePtrMut, SyncOnDrop};
use scan_core::segmented::SegmentTotalsLength;
use scan_core::{CountedSegmentTotals, NoCarryOut, SegmentTotals};

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
///
/// The trait is sealed: its slots hand the kernels an address to write,
/// so only the implementations here (over cudarc's buffers) exist.
pub trait DeviceCarryOut<E>: sealed::Sealed {
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

    /// Whether this is no slot at all ([`NoCarryOut`](scan_core::NoCarryOut)).
    #[doc(hidden)]
    fn is_none(&self) -> bool {
        false
    }

    /// Whether the slot takes as many totals as it holds and receives the
    /// number of segments ([`CountedSegmentTotals`]).
    fn counts_segments(&self) -> bool {
        false
    }

    /// [`DeviceCarryOut::slot`], and the address of the segment count's
    /// slot (0 for none), with the guards of both.
    fn slots<'a>(&'a mut self, stream: &'a CudaStream) -> CarrySlots<'a> {
        let (carry, guard) = self.slot(stream);
        CarrySlots {
            carry,
            count: 0,
            _guards: guard.into_iter().collect(),
        }
    }
}

/// The device addresses a scan writes its carry-out to
/// ([`DeviceCarryOut::slots`]): the carry-out or totals (0 for none), the
/// segment count (0 for none), and the guards that order the scan's writes
/// after the slots' earlier uses on the stream.
pub struct CarrySlots<'a> {
    /// The carry-out's or the totals' address.
    pub carry: u64,
    /// The segment count's address.
    pub count: u64,
    _guards: Vec<SyncOnDrop<'a>>,
}

/// Keeps [`DeviceCarryOut`] to this crate's implementations.
mod sealed {
    use scan_core::{CountedSegmentTotals, NoCarryOut, SegmentTotals};

    pub trait Sealed {}
    impl Sealed for NoCarryOut {}
    impl<D: ?Sized> Sealed for &mut D {}
    impl<D: ?Sized> Sealed for SegmentTotals<&mut D> {}
    impl<D: ?Sized, C: ?Sized> Sealed for CountedSegmentTotals<&mut D, &mut C> {}
}

impl<E> DeviceCarryOut<E> for NoCarryOut {
    fn check(&self) -> Result<()> {
        Ok(())
    }

    fn is_none(&self) -> bool {
        true
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

/// As many totals as the slot holds and the number of segments
/// ([`ScanSpec::counted_segment_totals`](scan_core::ScanSpec::counted_segment_totals)):
/// a device buffer `D` of any length for the totals, and a one-element
/// `u64` buffer `C` for the count. Every segmentation takes it: over head
/// flags or keys the device finds the segments' starts and counts them,
/// in stream order, with nothing read back.
///
/// ```no_run
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::{open_device, DeviceSegments};
///
/// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
/// struct Sum;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.default_stream();
/// // Runs of equal keys, and each run's sum: a reduction by key.
/// let keys = stream.clone_htod(&[4u16, 4, 9, 9, 9, 4])?;
/// let values = stream.clone_htod(&[1u32, 2, 3, 4, 5, 6])?;
/// let mut out = stream.alloc_zeros::<u32>(6)?;
/// let mut sums = stream.alloc_zeros::<u32>(6)?;
/// let mut runs = stream.alloc_zeros::<u64>(1)?;
/// let spec = ScanSpec::inclusive()
///     .segments(DeviceSegments::keys(&keys))
///     .counted_segment_totals(&mut sums, &mut runs);
/// GpuScanner::<Sum>::new(&ctx)?.scan(&stream, spec, &values, &mut out)?;
/// let runs = stream.clone_dtoh(&runs)?[0] as usize;
/// assert_eq!(&stream.clone_dtoh(&sums)?[..runs], [3, 12, 6]);
/// # Ok::<(), ScanError>(())
/// ```
impl<E, D, C> DeviceCarryOut<E> for CountedSegmentTotals<&mut D, &mut C>
where
    D: DevicePtrMut<E>,
    C: DevicePtrMut<u64>,
{
    fn check(&self) -> Result<()> {
        match self.count.len() {
            1 => Ok(()),
            len => Err(ScanError::SegmentCountLength { len }),
        }
    }

    fn totals_len(&self) -> Option<usize> {
        Some(self.totals.len())
    }

    fn slot<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, Option<SyncOnDrop<'a>>) {
        if self.totals.len() == 0 {
            return (0, None);
        }
        let (address, sync) = self.totals.device_ptr_mut(stream);
        (address, Some(sync))
    }

    fn counts_segments(&self) -> bool {
        true
    }

    fn slots<'a>(&'a mut self, stream: &'a CudaStream) -> CarrySlots<'a> {
        let (count, count_guard) = self.count.device_ptr_mut(stream);
        let mut guards = vec![count_guard];
        let carry = if self.totals.len() == 0 {
            0
        } else {
            let (address, guard) = self.totals.device_ptr_mut(stream);
            guards.push(guard);
            address
        };
        CarrySlots {
            carry,
            count,
            _guards: guards,
        }
    }
}
