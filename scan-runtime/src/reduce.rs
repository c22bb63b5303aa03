//! [`GpuScanner::reduce`]: a sequence folded to one element on the device,
//! reading it once and writing nothing else: the deterministic scan's
//! tiles and chain without its rescan ([`plan::reduce`]), so the total's
//! bits depend on the input alone, and equal the carry-out of a
//! deterministic scan of the same input.

use crate::error::{Result, ScanError};
use crate::execute::TileScan;
use crate::gpu::{deterministic_shape, GpuScanner};
use crate::plan;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits};
use kernels_gen::abi::Family;
use scan_core::{Direction, ScanKind, ScanOp};
use std::sync::Arc;

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// Folds `input` into `total` (one element): `input[0] ∘ input[1] ∘ …
    /// ∘ input[n-1]` in order, the identity for no element (CUB's
    /// `DeviceReduce::Reduce`). It reads the input once, in the tiles and
    /// order of a deterministic scan ([`crate::Tuning::with_deterministic`]):
    /// its bits depend on the input alone, never on timing or the device,
    /// and are that scan's carry-out. A reverse scan's total is the same
    /// fold (a reverse scan keeps the operands in memory order).
    ///
    /// Its scratch (two elements a tile) is the deterministic scan's: a
    /// scanner whose tuning is deterministic reserves it
    /// ([`GpuScanner::reserve`]), as a first call does, before a capture.
    ///
    /// Errors leave `total` untouched: [`ScanError::CarryOutLength`] where
    /// it is not one element, [`ScanError::TooLong`] past the longest scan.
    ///
    /// ```no_run
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::scan_runtime::open_device;
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// let ctx = open_device(0)?;
    /// let stream = ctx.new_stream()?;
    /// let input = stream.clone_htod(&[1u32, 2, 3, 4])?;
    /// let mut total = stream.alloc_zeros::<u32>(1)?;
    /// GpuScanner::<Sum>::new(&ctx)?.reduce(&stream, &input, &mut total)?;
    /// assert_eq!(stream.clone_dtoh(&total)?, [10]);
    /// # Ok::<(), ScanError>(())
    /// ```
    pub fn reduce<I, T>(&mut self, stream: &Arc<CudaStream>, input: &I, total: &mut T) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        T: DevicePtrMut<Op::Element>,
    {
        if total.len() != 1 {
            return Err(ScanError::CarryOutLength { len: total.len() });
        }
        let n = input.len();
        self.check_length(n)?;
        let path = plan::reduce(n, deterministic_shape(&self.op).tile_items);
        let at = self.address_stream(stream)?;
        let (src, _src_guard) = input.device_ptr(&at);
        let (slot, _slot_guard) = total.device_ptr_mut(&at);
        self.first_call_law_check(stream, src, n)?;
        // Forward: the chain runs in memory order, which is the order of the
        // fold whatever the direction of the scan it serves.
        let scan = TileScan::new(
            ScanKind::Inclusive,
            Direction::Forward,
            self.identity,
            src,
            0,
            n,
            slot,
            None,
        );
        let launched = self.run(stream, &scan, Family::Plain, path, None);
        self.then_start_background_compiles(launched)
    }
}
