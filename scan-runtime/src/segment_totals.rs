//! Per-segment totals on the GPU ([`ScanSpec::segment_totals`]): the
//! segmented scan itself, between the two steps of `segment_totals.cuh`
//! that read every segment's total off its output.

use crate::error::Result;
use crate::gpu::GpuScanner;
use crate::launch;
use crate::segmented::kind_parts;
use crate::segments::DeviceSegments;
use cudarc::driver::{CudaStream, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use kernels_gen::abi::{KernelAbi, TotalsStep, ELEMENTWISE_BLOCK_THREADS};
use scan_core::{Direction, ScanOp, ScanSpec};
use std::sync::Arc;

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// The segmented scan of `n` elements from `src` to `dst` (the same
    /// address in place) over rows or offsets, writing segment `r`'s total
    /// to `totals[r]` for each of the `count` segments (checked by the
    /// caller against the slot's length). An exclusive scan first saves
    /// each segment's last element in scan order into its totals slot
    /// (the scan may overwrite it); after the scan each total is read off
    /// the output.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_segmented_with_totals(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        segments: &DeviceSegments<'_>,
        src: u64,
        dst: u64,
        n: usize,
        totals: u64,
        count: usize,
    ) -> Result<()> {
        let (inclusive, seed, seeded) = kind_parts::<Op>(spec.kind);
        let reverse = spec.direction == Direction::Reverse;
        let source = segments.source();
        let count64 = count as u64;
        let config = LaunchConfig {
            grid_dim: (
                count
                    .div_ceil(ELEMENTWISE_BLOCK_THREADS as usize)
                    .clamp(1, 1 << 16) as u32,
                1,
                1,
            ),
            block_dim: (ELEMENTWISE_BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // The guards order the offsets' use after their writes.
        let (ranges, _guards) = segments.heads_arg(stream);
        if !inclusive && n > 0 && count > 0 {
            let abi = KernelAbi::SegmentTotals(TotalsStep::Boundaries, source);
            let kernel = self.kernel(abi)?;
            let args =
                launch::segment_boundaries::<Op::Element>(src, ranges, totals, count64, reverse);
            // SAFETY: (const T* input, u64 row_length or scan_offsets offsets, T* totals,
            // u64 segments, int reverse), checked against the ABI table; the rows or the
            // offsets' windows lie within the n elements at input (checked for n), and
            // totals holds `count` elements, one per row or window (checked).
            unsafe { launch::launch(stream, &kernel.function, abi, Op::NAME, &args, config) }?;
        }
        self.launch_segmented(stream, spec, segments, src, dst, n, 0)?;
        if count == 0 {
            return Ok(());
        }
        let abi = KernelAbi::SegmentTotals(TotalsStep::Finish, source);
        let kernel = self.kernel(abi)?;
        let args = launch::segment_totals::<Op::Element>(
            dst, ranges, totals, count64, seed, seeded, !inclusive, reverse,
        );
        // SAFETY: (const T* output, u64 row_length or scan_offsets offsets, T* totals,
        // u64 segments, T seed, int seeded, int exclusive, int reverse), checked against
        // the ABI table; output holds the n scanned elements, which the rows or windows
        // lie within; totals holds `count` elements (checked), holding each non-empty
        // segment's saved element where the scan is exclusive.
        unsafe { launch::launch(stream, &kernel.function, abi, Op::NAME, &args, config) }
    }
}
