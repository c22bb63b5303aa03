//! Per-segment totals on the GPU ([`ScanSpec::segment_totals`] and
//! [`ScanSpec::counted_segment_totals`]): the segmented scan itself,
//! between the two steps of `segment_totals.cuh` that read every segment's
//! total off its output. Segments the host cannot count (head flags, keys)
//! are first turned into their starts and count on the device
//! (`segment_starts` in kernels-gen), and their totals read as over
//! offsets.

use crate::carry::DeviceCarryOut;
use crate::entry::Bound;
use crate::error::Result;
use crate::flag_builder::{HeadFlagBuilder, StartsScratch};
use crate::gpu::GpuScanner;
use crate::launch::{self, Heads, OffsetsArg};
use crate::segments::DeviceSegments;
use cudarc::driver::{CudaStream, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use kernels_gen::abi::{KernelAbi, TotalsStep, ELEMENTWISE_BLOCK_THREADS};
use kernels_gen::segment_starts::{starts_scratch_words, starts_status_words};
use kernels_gen::SegmentSource;
use scan_core::segmented::SegmentTotalsLength;
use scan_core::{Direction, ScanOp, ScanSpec};
use std::sync::Arc;

/// How a scan writes per-segment totals, decided (and its slots checked)
/// before anything is enqueued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TotalsPlan {
    /// No totals: a one-element carry-out, or none.
    None,
    /// Segments the host counted (`count`), the first `written` of whose
    /// totals the slot takes; `store_count`: a counted slot, whose count
    /// the device stores.
    Host {
        count: usize,
        written: usize,
        store_count: bool,
    },
    /// Segments only the device can count (head flags, keys): up to
    /// `capacity` totals, and the count.
    Device { capacity: usize },
}

impl TotalsPlan {
    /// Checks a scan's carry-out slot against its segments: one element
    /// (or none), one total per segment (the host must count them), or a
    /// counted slot of any length.
    pub(crate) fn check<E>(
        carry_out: &impl DeviceCarryOut<E>,
        segments: &DeviceSegments<'_>,
        n: usize,
    ) -> Result<TotalsPlan> {
        let Some(len) = carry_out.totals_len() else {
            carry_out.check()?;
            return Ok(TotalsPlan::None);
        };
        if carry_out.counts_segments() {
            carry_out.check()?;
            return Ok(match segments.host_count(n) {
                Some(count) => TotalsPlan::Host {
                    count,
                    written: count.min(len),
                    store_count: true,
                },
                None => TotalsPlan::Device { capacity: len },
            });
        }
        let count = segments.totals_count(n)?;
        SegmentTotalsLength::check(len, count)?;
        Ok(TotalsPlan::Host {
            count,
            written: count,
            store_count: false,
        })
    }
}

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// The segmented scan of `n` elements from `src` to `dst` (the same
    /// address in place), writing segment `r`'s total to `totals[r]` as
    /// `plan` says (not [`TotalsPlan::None`]), and the count to `count`
    /// (a `u64`) for a counted slot. An exclusive scan first saves each
    /// segment's last element in scan order into its totals slot (the scan
    /// may overwrite it); after the scan each total is read off the output.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_segmented_with_totals(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        segments: &DeviceSegments<'_>,
        b: &Bound,
        plan: TotalsPlan,
    ) -> Result<()> {
        let (src, dst, n, totals, count) = (b.src, b.dst, b.n, b.carry, b.count);
        let init = spec.kind.init();
        let (inclusive, seed, seeded) = (
            spec.kind.is_inclusive(),
            init.unwrap_or(self.identity),
            init.is_some(),
        );
        let reverse = spec.direction == Direction::Reverse;
        // The segments the totals kernels read (rows, offsets, or the starts
        // found on the device), how many they may write, and the device's
        // count bounding them (0: none). The guards order the segments' use
        // after their writes.
        let (heads, _guards) = segments.heads_arg(&b.at);
        let (ranges, source, written, device_count) = match plan {
            TotalsPlan::None => unreachable!("a plan with totals"),
            TotalsPlan::Host {
                count: segment_count,
                written,
                store_count,
            } => {
                if store_count {
                    HeadFlagBuilder::new(self.context())?.store_count(
                        stream,
                        count,
                        segment_count as u64,
                    )?;
                }
                (heads, segments.source(), written, 0)
            }
            TotalsPlan::Device { capacity } => {
                let builder = HeadFlagBuilder::new(self.context())?;
                self.workspace_allocations += self
                    .workspace(stream)
                    .reserve_starts(stream, starts_scratch_words(n, capacity))?;
                let base = self.workspace(stream).starts();
                let scratch = StartsScratch {
                    status: base,
                    starts: base + 8 * starts_status_words(n) as u64,
                    capacity: capacity as u64,
                };
                let address = match heads {
                    Heads::Flags(address) => address,
                    Heads::Keys(keys) => keys.address,
                    Heads::Rows(_) | Heads::Offsets(_) => unreachable!("counted by the host"),
                };
                if n == 0 {
                    builder.store_count(stream, count, 0)?;
                } else {
                    let source = segments.heads_in().expect("flags or keys");
                    builder.segment_starts(stream, (source, address), n, &scratch, count)?;
                }
                let starts = OffsetsArg {
                    address: scratch.starts,
                    count: capacity as u64 + 1,
                    width: 8,
                    // The totals kernels read offsets only, never an index.
                    index: 0,
                    index_width: 8,
                    index_shift: 0,
                };
                let written = if n == 0 { 0 } else { capacity };
                (
                    Heads::Offsets(starts),
                    SegmentSource::Offsets,
                    written,
                    count,
                )
            }
        };
        let config = LaunchConfig {
            grid_dim: (
                written
                    .div_ceil(ELEMENTWISE_BLOCK_THREADS as usize)
                    .clamp(1, 1 << 16) as u32,
                1,
                1,
            ),
            block_dim: (ELEMENTWISE_BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let written64 = written as u64;
        if !inclusive && n > 0 && written > 0 {
            let abi = KernelAbi::SegmentTotals(TotalsStep::Boundaries, source);
            let kernel = self.kernel(abi)?;
            let args = launch::segment_boundaries::<Op::Element>(
                src,
                ranges,
                totals,
                written64,
                device_count,
                reverse,
            );
            // SAFETY: (const T* input, u64 row_length or scan_offsets offsets, T* totals,
            // u64 segments, const u64* segment_count, int reverse), checked against the
            // ABI table; the rows, the offsets' windows or the starts found on the device
            // lie within the n elements at input (checked for n), and totals holds
            // `written` elements (checked), fewer being written where the device counted
            // fewer segments.
            unsafe { launch::launch(stream, &kernel.function, abi, self.op.name, &args, config) }?;
        }
        self.launch_tiles(stream, spec, Some(segments), &b.without_carry())?;
        if written == 0 {
            return Ok(());
        }
        let abi = KernelAbi::SegmentTotals(TotalsStep::Finish, source);
        let kernel = self.kernel(abi)?;
        let args = launch::segment_totals::<Op::Element>(
            dst,
            ranges,
            totals,
            written64,
            device_count,
            seed,
            seeded,
            !inclusive,
            reverse,
        );
        // SAFETY: (const T* output, u64 row_length or scan_offsets offsets, T* totals,
        // u64 segments, const u64* segment_count, T seed, int seeded, int exclusive,
        // int reverse), checked against the ABI table; output holds the n scanned
        // elements, which the segments lie within; totals holds `written` elements
        // (checked), holding each non-empty segment's saved element where the scan is
        // exclusive.
        unsafe { launch::launch(stream, &kernel.function, abi, self.op.name, &args, config) }
    }

    /// Reserves what a scan of up to `n` elements with a counted totals
    /// slot of up to `capacity` elements needs beyond the scan's scratch,
    /// whatever its segments (their starts: 8 bytes per 4096 elements and
    /// per total), and loads every kernel it launches.
    pub(crate) fn reserve_counted_totals(
        &mut self,
        n: usize,
        capacity: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        self.workspace_allocations += self
            .workspace(stream)
            .reserve_starts(stream, starts_scratch_words(n, capacity))?;
        HeadFlagBuilder::new(self.context())?;
        self.load_totals_kernels()
    }

    /// Loads the kernels that read per-segment totals off a scan's output.
    pub(crate) fn load_totals_kernels(&mut self) -> Result<()> {
        for source in [SegmentSource::Rows, SegmentSource::Offsets] {
            for step in TotalsStep::ALL {
                self.kernel(KernelAbi::SegmentTotals(step, source))?;
            }
        }
        Ok(())
    }

    /// Stores the count of a counted totals slot of a scan without
    /// segments (one segment), at `count` (0: no counted slot).
    pub(crate) fn store_unsegmented_count(
        &self,
        stream: &Arc<CudaStream>,
        count: u64,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        HeadFlagBuilder::new(self.context())?.store_count(stream, count, 1)
    }
}
