//! Segmented scans on the GPU: [`GpuScanner::scan`],
//! [`GpuScanner::scan_in_place`] and [`GpuScanner::scan_host`] with a spec
//! over segments ([`ScanSpec::segments`]: on the device,
//! [`crate::DeviceSegments`]), and what they run.

use crate::carry::DeviceCarryOut;
use crate::entry::{Bound, Operands};
use crate::error::Result;
use crate::gpu::GpuScanner;
use crate::keys::DeviceKeys;
use crate::offsets::DeviceOffsets;
use crate::verbs::put_carry;

use crate::head_flags::DeviceHeadFlags;
use crate::segment_totals::TotalsPlan;
use crate::segments::DeviceSegments;
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use scan_core::segmented::{segment_ranges, HeadFlags, SegmentOffsets, Segments};
use scan_core::{HostSegmentedCarryOut, ScanOp, ScanSpec};
use std::sync::Arc;

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// [`GpuScanner::scan`] and [`GpuScanner::scan_in_place`] over
    /// segments: the spec without its segments, and the segments.
    pub(crate) fn scan_segments(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element, impl DeviceCarryOut<Op::Element>>,
        segments: DeviceSegments<'_>,
        operands: Operands<'_, Op::Element>,
    ) -> Result<()> {
        let n = operands.len()?;
        segments.check_len(n)?;
        let (spec, mut carry_out) = spec.split_carry_out();
        let plan = TotalsPlan::check(&carry_out, &segments, n)?;
        self.enter(
            stream,
            operands,
            n,
            &mut carry_out,
            |s| s.prepare(n, stream),
            |s, (), b| s.launch_with_plan(stream, spec, &segments, b, plan),
        )
    }

    /// [`GpuScanner::scan_host`] over segments: uploads `input` and the
    /// flags, offsets or keys (offsets are checked on the device), scans,
    /// downloads (synchronising the stream). Per-segment totals are counted
    /// here, so flags and keys, whose count the device scans cannot know,
    /// go to the device as the offsets of their heads.
    pub(crate) fn scan_segments_host(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element, impl HostSegmentedCarryOut<Op::Element>>,
        segments: Segments<'_>,
        input: &[Op::Element],
    ) -> Result<Vec<Op::Element>> {
        let n = input.len();
        segments.check_len(n)?;
        let (spec, mut carry_out) = spec.split_carry_out();
        if input.is_empty() {
            // Nothing to move: the CPU writes the carry-out (the seed), or
            // the seed for each of the (empty) segments.
            scan_core::segmented::scan::<Op>(spec.carry_out(carry_out), segments, &[], &mut [])?;
            return Ok(Vec::new());
        }
        if carry_out.totals().is_some() {
            let ranges = segment_ranges(segments, n);
            let totals = carry_out
                .totals_for(ranges.len())?
                .expect("a slot with totals");
            let mut data = stream.clone_htod(input)?;
            if ranges.is_empty() {
                self.scan_uploaded(stream, spec, segments, &mut data)?;
            } else {
                let mut slot = stream.alloc_zeros::<Op::Element>(ranges.len())?;
                let heads: Vec<u64>;
                let segments = match segments {
                    Segments::Rows { .. } | Segments::Offsets(_) => segments,
                    _ => {
                        heads = ranges
                            .iter()
                            .map(|r| r.start as u64)
                            .chain([n as u64])
                            .collect();
                        Segments::offsets(&heads[..])
                    }
                };
                let spec = spec.segment_totals(&mut slot);
                self.scan_uploaded(stream, spec, segments, &mut data)?;
                // A counted slot may take fewer than every segment's.
                stream.memcpy_dtoh(&slot.slice(..totals.len()), totals)?;
            }
            return Ok(stream.clone_dtoh(&data)?);
        }
        let mut data = stream.clone_htod(input)?;
        let mut slot = stream.alloc_zeros::<Op::Element>(1)?;
        self.scan_uploaded(stream, spec.carry_out(&mut slot), segments, &mut data)?;
        put_carry(stream, &slot, carry_out)?;
        Ok(stream.clone_dtoh(&data)?)
    }

    /// Uploads the segments of a host scan and scans `data` in place over
    /// them.
    fn scan_uploaded(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element, impl DeviceCarryOut<Op::Element>>,
        segments: Segments<'_>,
        data: &mut CudaSlice<Op::Element>,
    ) -> Result<()> {
        let n = data.len();
        match segments {
            Segments::Flags(HeadFlags::Bytes(b)) => {
                let flags = stream.clone_htod(b)?;
                self.scan_in_place(stream, spec.segments(&flags), data)
            }
            Segments::Flags(HeadFlags::Bits { words, len }) => {
                let flags = stream.clone_htod(words)?;
                let flags = DeviceHeadFlags::bits(flags.as_view(), len);
                self.scan_in_place(stream, spec.segments(flags), data)
            }
            Segments::Rows { row_length } => {
                let rows = DeviceSegments::rows(row_length);
                self.scan_in_place(stream, spec.segments(rows), data)
            }
            Segments::Offsets(SegmentOffsets::U32(o)) => {
                let offsets = stream.clone_htod(o)?;
                let offsets = DeviceOffsets::check(stream, offsets.as_view(), n)?;
                self.scan_in_place(stream, spec.segments(offsets), data)
            }
            Segments::Offsets(SegmentOffsets::U64(o)) => {
                let offsets = stream.clone_htod(o)?;
                let offsets = DeviceOffsets::check(stream, offsets.as_view(), n)?;
                self.scan_in_place(stream, spec.segments(offsets), data)
            }
            Segments::Keys(keys) => {
                // The keys' bytes, as keys of their width.
                let bytes = stream.clone_htod(keys.as_bytes())?;
                let keys = match keys.width() {
                    1 => DeviceKeys::new(&bytes),
                    // SAFETY: the bytes of `n` keys of the width, in a fresh
                    // allocation (aligned for any width).
                    2 => DeviceKeys::new(unsafe { bytes.transmute::<u16>(n) }.expect("n keys")),
                    4 => DeviceKeys::new(unsafe { bytes.transmute::<u32>(n) }.expect("n keys")),
                    _ => DeviceKeys::new(unsafe { bytes.transmute::<u64>(n) }.expect("n keys")),
                };
                self.scan_in_place(stream, spec.segments(keys), data)
            }
            _ => unreachable!("a segment source of scan-core without a GPU counterpart"),
        }
    }

    /// The segmented scan with its carry-out slots as `plan` says.
    fn launch_with_plan(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        segments: &DeviceSegments<'_>,
        b: Bound,
        plan: TotalsPlan,
    ) -> Result<()> {
        match plan {
            TotalsPlan::None => self.launch_tiles(stream, spec, Some(segments), &b),
            plan => self.launch_segmented_with_totals(stream, spec, segments, &b, plan),
        }
    }
}
