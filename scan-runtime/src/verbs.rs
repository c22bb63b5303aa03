//! The verb and its conveniences: [`GpuScanner::scan`],
//! [`GpuScanner::scan_in_place`] and [`GpuScanner::scan_host`] with a spec
//! of any kind, direction, carry-out and shape (a sequence, segments, a
//! matrix), the one-line conveniences over them, [`GpuScanner::reserve`]
//! for what a spec needs, and the element-wise [`GpuScanner::combine_pairs`].

use crate::carry::DeviceCarryOut;
use crate::entry::Operands;
use crate::error::{Result, ScanError};
use crate::gpu::GpuScanner;
use crate::launch;
use crate::segments::DeviceSegmentsSpec;
use cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig, ValidAsZeroBits,
};
use kernels_gen::abi::{Family, KernelAbi};
use kernels_gen::Kernel;
use scan_core::segmented::RowLengthMismatch;
use scan_core::{
    HostSegmentedCarryOut, HostSegments, IntoScanSpec, ScanKind, ScanOp, ScanSpec, Shape,
};
use std::sync::Arc;

#[cfg(doc)]
use {crate::path::ScanPath, scan_core::Direction};

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// Makes sure scans like `spec` of up to `n` elements on `stream` need
    /// no allocation and compile nothing: call it before capturing scans
    /// into a CUDA graph, or before timing them. A spec without segments
    /// ([`ScanKind::Inclusive`], say) reserves the scratch of every scan of a
    /// sequence or of segments on the current [`ScanPath`] (that of
    /// [`GpuScanner::workspace_bytes`]) and loads the kernels of the spec's
    /// kind and direction on every path the scan may take; segments load
    /// their source's; a counted totals slot
    /// ([`ScanSpec::counted_segment_totals`]) also reserves for up to as
    /// many totals as the slot holds, whatever the segments, and loads the
    /// kernels that find and count them; a matrix
    /// ([`ScanSpec::columns`], [`ScanSpec::summed_area`]) reserves for its
    /// row length, in place or not (a column scan also loads its kernel). Inputs longer than the scans can take are
    /// [`ScanError::TooLong`], a row length that does not divide `n`
    /// [`ScanError::RowLength`].
    ///
    /// ```no_run
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::scan_runtime::{open_device, DeviceKeys};
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// let ctx = open_device(0)?;
    /// let stream = ctx.new_stream()?;
    /// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
    /// // Scans and segmented scans of up to 2^20 elements, then scans by
    /// // key of up to 2^20 elements with up to 4096 totals.
    /// scanner.reserve(&stream, ScanKind::Inclusive, 1 << 20)?;
    /// let keys = stream.alloc_zeros::<u32>(1 << 20)?;
    /// let (mut totals, mut count) = (stream.alloc_zeros::<u32>(4096)?, stream.alloc_zeros::<u64>(1)?);
    /// let spec = ScanSpec::inclusive()
    ///     .segments(DeviceKeys::new(&keys))
    ///     .counted_segment_totals(&mut totals, &mut count);
    /// scanner.reserve(&stream, spec, 1 << 20)?;
    /// # Ok::<(), ScanError>(())
    /// ```
    pub fn reserve<'a>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<
            Op::Element,
            Carry: DeviceCarryOut<Op::Element>,
            Segments: DeviceSegmentsSpec<'a>,
        >,
        n: usize,
    ) -> Result<()> {
        let (spec, shape) = spec.into_spec().split_segments();
        let (spec, carry_out) = spec.split_carry_out();
        let inclusive = spec.kind.is_inclusive();
        let family = match shape.into_device_shape() {
            // One column is the sequence (see `scan`).
            Shape::Columns { row_length: 1 } => Family::Plain,
            Shape::Columns { row_length } => {
                self.prepare_columns(n, row_length, stream)?;
                let kernel = match inclusive {
                    true => Kernel::ColumnsInclusive,
                    false => Kernel::ColumnsExclusive,
                };
                let abi = KernelAbi::plain(kernel).in_direction(spec.direction);
                return self
                    .kernel(abi.expect("a column scan runs both ways"))
                    .map(|_| ());
            }
            Shape::SummedArea { row_length } => {
                return self.reserve_2d(stream, &spec, n, row_length)
            }
            Shape::Segmented(segments) => {
                Family::Segmented(segments.source(), self.tuning().segmented_strategy)
            }
            _ => Family::Plain,
        };
        self.prepare(n, stream)?;
        self.load_passes(family, inclusive, spec.direction)?;
        self.reserve_carry_out(&carry_out, n, stream)
    }

    /// What a scan of up to `n` elements needs for `carry_out` beyond its
    /// passes ([`GpuScanner::reserve`], `reserve_through`): the one-tile
    /// kernel, which writes an empty scan's carry-out (the seed), and for a
    /// totals slot the kernels that write the totals (and, counted, find
    /// and count the segments, with their scratch).
    pub(crate) fn reserve_carry_out(
        &mut self,
        carry_out: &impl DeviceCarryOut<Op::Element>,
        n: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        if DeviceCarryOut::<Op::Element>::is_none(carry_out) {
            return Ok(());
        }
        self.kernel(KernelAbi::plain(Kernel::ScanTilesExclusive))?;
        if let Some(capacity) = carry_out.totals_len() {
            match carry_out.counts_segments() {
                true => self.reserve_counted_totals(n, capacity, stream)?,
                false => self.load_totals_kernels()?,
            }
        }
        Ok(())
    }

    /// Inclusive scan: `output[i] = input[0] ∘ … ∘ input[i]`.
    pub fn inclusive<I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &I,
        output: &mut O,
    ) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        self.scan(stream, ScanKind::Inclusive, input, output)
    }

    /// Exclusive scan: `output[i] = input[0] ∘ … ∘ input[i-1]`, `output[0]` the identity.
    pub fn exclusive<I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &I,
        output: &mut O,
    ) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        self.scan(stream, ScanKind::Exclusive, input, output)
    }

    /// Exclusive scan seeded with `init`: `output[i] = init ∘ input[0] ∘ … ∘ input[i-1]`.
    pub fn exclusive_with_init<I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &I,
        output: &mut O,
        init: Op::Element,
    ) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        self.scan(stream, ScanKind::ExclusiveWithInit(init), input, output)
    }

    /// Any scan out of place, the library's one verb: `spec` is a
    /// [`ScanKind`] (a forward scan) or a [`ScanSpec`] with a direction
    /// ([`Direction::Reverse`]: suffix scans, `output[i] = input[i] ∘ … ∘
    /// input[n-1]`), optionally segments ([`ScanSpec::segments`]: head
    /// flags, rows, offsets or keys in device memory, see
    /// [`DeviceSegments`](crate::DeviceSegments)) and optionally a carry-out slot
    /// ([`ScanSpec::carry_out`], a one-element device buffer, see
    /// [`DeviceCarryOut`]), which receives the seed combined with every
    /// element (with segments, the last segment's partial), written on the
    /// stream by the scan's last kernel, or a slot of one total per segment
    /// ([`ScanSpec::segment_totals`], segments given as rows or offsets).
    /// The spec's shape may instead be a row-major matrix, scanned down its
    /// columns ([`ScanSpec::columns`]) or in two dimensions
    /// ([`ScanSpec::summed_area`]). Lengths (output, segments, slot, row
    /// length) are checked before anything is enqueued.
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
    /// let input = stream.clone_htod(&[1u32, 2, 3, 4])?;
    /// let mut out = stream.alloc_zeros::<u32>(4)?;
    /// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
    /// scanner.scan(&stream, ScanSpec::inclusive().reverse(), &input, &mut out)?;
    /// assert_eq!(stream.clone_dtoh(&out)?, [10, 9, 7, 4]);
    /// scanner.scan(&stream, ScanKind::Exclusive, &input, &mut out)?;
    /// assert_eq!(stream.clone_dtoh(&out)?, [0, 1, 3, 6]);
    /// // Segments [1 2] [3 4] by head flags, and the last one's total.
    /// let heads = stream.clone_htod(&[1u8, 0, 1, 0])?;
    /// let mut total = stream.alloc_zeros::<u32>(1)?;
    /// let spec = ScanSpec::inclusive().segments(&heads).carry_out(&mut total);
    /// scanner.scan(&stream, spec, &input, &mut out)?;
    /// assert_eq!(stream.clone_dtoh(&out)?, [1, 3, 3, 7]);
    /// assert_eq!(stream.clone_dtoh(&total)?, [7]);
    /// // A 2 × 2 matrix down its columns.
    /// scanner.scan(&stream, ScanSpec::inclusive().columns(2), &input, &mut out)?;
    /// assert_eq!(stream.clone_dtoh(&out)?, [1, 2, 4, 6]);
    /// # Ok::<(), ScanError>(())
    /// ```
    pub fn scan<'a, I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<
            Op::Element,
            Carry: DeviceCarryOut<Op::Element>,
            Segments: DeviceSegmentsSpec<'a>,
        >,
        input: &I,
        output: &mut O,
    ) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        self.scan_shaped(stream, spec.into_spec(), Operands::apart(input, output))
    }

    /// [`GpuScanner::scan`] and [`GpuScanner::scan_in_place`]: the spec's
    /// shape decides which scan runs.
    fn scan_shaped<'a>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element, impl DeviceCarryOut<Op::Element>, impl DeviceSegmentsSpec<'a>>,
        operands: Operands<'_, Op::Element>,
    ) -> Result<()> {
        let (spec, shape) = spec.split_segments();
        // A matrix has no carry-out (the spec's builder allows none; this
        // guards specs put together otherwise).
        let matrix = |spec: ScanSpec<Op::Element, _>| {
            let (spec, carry_out) = spec.split_carry_out();
            match DeviceCarryOut::<Op::Element>::is_none(&carry_out) {
                true => Ok(spec),
                false => Err(ScanError::MatrixCarryOut),
            }
        };
        match shape.into_device_shape() {
            Shape::Flat => self.scan_plain(stream, spec, operands),
            Shape::Segmented(segments) => self.scan_segments(stream, spec, segments, operands),
            // A matrix of one column is a sequence: the plain scan, at its
            // speed (the column kernel holds such a matrix 32 rows a warp,
            // at 16% of copy on the H200).
            Shape::Columns { row_length: 1 } => {
                let spec = matrix(spec)?;
                self.scan_plain(stream, spec, operands)
            }
            Shape::Columns { row_length } => {
                let spec = matrix(spec)?;
                self.scan_columns_of(stream, spec, row_length, operands)
            }
            Shape::SummedArea { row_length } => {
                let spec = matrix(spec)?;
                self.scan_2d_of(stream, spec, row_length, operands)
            }
            _ => unreachable!("a shape of scan-core without a GPU scan"),
        }
    }

    /// [`GpuScanner::scan`] and [`GpuScanner::scan_in_place`] without
    /// segments.
    fn scan_plain(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element, impl DeviceCarryOut<Op::Element>>,
        operands: Operands<'_, Op::Element>,
    ) -> Result<()> {
        let n = operands.len()?;
        let (spec, mut carry_out) = spec.split_carry_out();
        carry_out.check()?;
        self.enter(
            stream,
            operands,
            n,
            &mut carry_out,
            |s| s.prepare(n, stream),
            |s, (), b| {
                s.launch_tiles(stream, spec, None, &b)?;
                s.store_unsegmented_count(stream, b.count)
            },
        )
    }

    /// Inclusive scan of `data` onto itself.
    pub fn inclusive_in_place<D: DevicePtrMut<Op::Element>>(
        &mut self,
        stream: &Arc<CudaStream>,
        data: &mut D,
    ) -> Result<()> {
        self.scan_in_place(stream, ScanKind::Inclusive, data)
    }

    /// Exclusive scan of `data` onto itself.
    pub fn exclusive_in_place<D: DevicePtrMut<Op::Element>>(
        &mut self,
        stream: &Arc<CudaStream>,
        data: &mut D,
    ) -> Result<()> {
        self.scan_in_place(stream, ScanKind::Exclusive, data)
    }

    /// Exclusive scan of `data` onto itself, seeded with `init`.
    pub fn exclusive_with_init_in_place<D: DevicePtrMut<Op::Element>>(
        &mut self,
        stream: &Arc<CudaStream>,
        data: &mut D,
        init: Op::Element,
    ) -> Result<()> {
        self.scan_in_place(stream, ScanKind::ExclusiveWithInit(init), data)
    }

    /// Any scan in place (`spec` as for [`GpuScanner::scan`]).
    pub fn scan_in_place<'a, D: DevicePtrMut<Op::Element>>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<
            Op::Element,
            Carry: DeviceCarryOut<Op::Element>,
            Segments: DeviceSegmentsSpec<'a>,
        >,
        data: &mut D,
    ) -> Result<()> {
        self.scan_shaped(stream, spec.into_spec(), Operands::in_place(data))
    }

    /// The operator applied element-wise: `output[i] = combine(left[i],
    /// right[i])` (a zipped transform; Thrust's `transform` with the
    /// operator). `output` may be one of the inputs' buffers only through
    /// [`GpuScanner::combine_pairs_in_place`].
    ///
    /// Errors ([`ScanError::LengthMismatch`]) leave `output` untouched when
    /// the three lengths differ.
    pub fn combine_pairs<L, R, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        left: &L,
        right: &R,
        output: &mut O,
    ) -> Result<()>
    where
        L: DevicePtr<Op::Element>,
        R: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        let n = left.len();
        for len in [right.len(), output.len()] {
            if len != n {
                return Err(ScanError::LengthMismatch {
                    input: n,
                    output: len,
                });
            }
        }
        let at = self.address_stream(stream)?;
        let (l, _l_sync) = left.device_ptr(&at);
        let (r, _r_sync) = right.device_ptr(&at);
        let (o, _o_sync) = output.device_ptr_mut(&at);
        self.launch_combine_pairs(stream, l, r, o, n)
    }

    /// `data[i] = combine(data[i], right[i])`: [`GpuScanner::combine_pairs`]
    /// with the left operands' buffer as the output.
    pub fn combine_pairs_in_place<R, D>(
        &mut self,
        stream: &Arc<CudaStream>,
        data: &mut D,
        right: &R,
    ) -> Result<()>
    where
        R: DevicePtr<Op::Element>,
        D: DevicePtrMut<Op::Element>,
    {
        let n = data.len();
        if right.len() != n {
            return Err(ScanError::LengthMismatch {
                input: right.len(),
                output: n,
            });
        }
        let at = self.address_stream(stream)?;
        let (r, _r_sync) = right.device_ptr(&at);
        let (d, _d_sync) = data.device_ptr_mut(&at);
        self.launch_combine_pairs(stream, d, r, d, n)
    }

    fn launch_combine_pairs(
        &mut self,
        stream: &Arc<CudaStream>,
        left: u64,
        right: u64,
        output: u64,
        n: usize,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let abi = KernelAbi::CombinePairs;
        let kernel = self.kernel(abi)?;
        let threads = kernels_gen::abi::ELEMENTWISE_BLOCK_THREADS;
        // Enough blocks to fill the device a few times over; the kernel's
        // grid-stride loop covers the rest.
        let blocks = n.div_ceil(threads as usize).min(1 << 16) as u32;
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let args = launch::combine_pairs::<Op::Element>(left, right, output, n as u64);
        // SAFETY: (const T* left, const T* right, T* output, u64 n), checked against the
        // ABI table; the three addresses hold n elements each (lengths checked by the
        // callers); the kernel reads element i of both inputs before writing output i, so
        // output may be left.
        unsafe { launch::launch(stream, &kernel.function, abi, self.op.name, &args, config) }
    }

    /// Host convenience: copies `input` (and segments given in `spec`:
    /// flags, offsets, keys, as the CPU backend takes them) to the device,
    /// scans, copies back (synchronising the stream). A carry-out slot in
    /// `spec` is a `&mut` of the element, and a per-segment totals slot
    /// ([`ScanSpec::segment_totals`]) a `&mut [E]`, as for the CPU backend.
    pub fn scan_host<'a>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<
            Op::Element,
            Carry: HostSegmentedCarryOut<Op::Element>,
            Segments: HostSegments<'a>,
        >,
        input: &[Op::Element],
    ) -> Result<Vec<Op::Element>> {
        let (spec, shape) = spec.into_spec().split_segments();
        let matrix = match shape.into_shape() {
            Shape::Flat => None,
            Shape::Segmented(segments) => {
                return self.scan_segments_host(stream, spec, segments, input)
            }
            Shape::Columns { row_length } => Some((row_length, false)),
            Shape::SummedArea { row_length } => Some((row_length, true)),
            _ => unreachable!("a shape of scan-core without a GPU scan"),
        };
        let (spec, mut carry_out) = spec.split_carry_out();
        if let Some((row_length, two_d)) = matrix {
            return self.scan_matrix_host(stream, spec, carry_out, row_length, two_d, input);
        }
        carry_out.check_unsegmented()?;
        if input.is_empty() {
            // Nothing to move: the carry-out is the seed.
            let mut carry = self.identity;
            scan_core::cpu::scan::<Op>(spec.carry_out(&mut carry), &[], &mut [])?;
            carry_out.put_unsegmented(carry);
            return Ok(Vec::new());
        }
        let mut data = stream.clone_htod(input)?;
        let mut slot = stream.alloc_zeros::<Op::Element>(1)?;
        self.scan_in_place(stream, spec.carry_out(&mut slot), &mut data)?;
        put_carry(stream, &slot, carry_out)?;
        Ok(stream.clone_dtoh(&data)?)
    }

    /// [`GpuScanner::scan_host`] of a matrix of rows of `row_length`, down
    /// its columns or (`two_d`) in two dimensions.
    fn scan_matrix_host<C: HostSegmentedCarryOut<Op::Element>>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        _carry_out: C,
        row_length: usize,
        two_d: bool,
        input: &[Op::Element],
    ) -> Result<Vec<Op::Element>> {
        if C::WANTED {
            return Err(ScanError::MatrixCarryOut);
        }
        RowLengthMismatch::check(input.len(), row_length)?;
        if input.is_empty() {
            return Ok(Vec::new());
        }
        let mut data = stream.clone_htod(input)?;
        if two_d {
            self.scan_in_place(stream, spec.summed_area(row_length), &mut data)?;
        } else {
            self.scan_in_place(stream, spec.columns(row_length), &mut data)?;
        }
        Ok(stream.clone_dtoh(&data)?)
    }
}

/// Copies the carry-out from its device `slot` into the host's `carry_out`
/// where one is asked for (synchronising the stream).
pub(crate) fn put_carry<E: DeviceRepr, C: HostSegmentedCarryOut<E>>(
    stream: &Arc<CudaStream>,
    slot: &CudaSlice<E>,
    carry_out: C,
) -> Result<()> {
    if C::WANTED {
        let carry = stream.clone_dtoh(slot)?.into_iter().next();
        carry_out.put_unsegmented(carry.expect("a one-element slot"));
    }
    Ok(())
}
