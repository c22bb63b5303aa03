//! Segmented scans on the GPU: [`GpuScanner`]'s `segmented_*` methods, head
//! flags on the device ([`DeviceHeadFlags`]) and the flag builders
//! ([`HeadFlagBuilder`]).

use crate::cache::DiskCache;
use crate::carry::DeviceCarryOut;
use crate::error::{Result, ScanError};
use crate::gpu::{put_carry, GpuScanner, PipelinedShape};
use crate::kernels::{build_module, compile_target, layout, ProgramStats};
use crate::keys::{DeviceKeys, KeyView};
use crate::launch::{self, Heads};
use crate::offsets::DeviceOffsets;
use crate::path::{
    pipelined_tile_items, pipelined_wanted, resolve_path, single_pass, single_pass_tiles_for,
    ScanPath,
};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaView, DevicePtr,
    DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use kernels_gen::abi::KernelAbi;
use kernels_gen::{FlagFormat, SegmentSource, SegmentedKernel, SegmentedStrategy};
use scan_core::segmented::{
    FlagsLengthMismatch, HeadFlags, InvalidOffsets, RowLengthMismatch, SegmentKey, SegmentOffset,
    SegmentOffsets, Segments,
};
use scan_core::{
    Direction, HostCarryOut, IntoScanSpec, NoSegments, ScanKind, ScanOp, ScanSpec, SegmentedBy,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Segment head flags in device memory, borrowed: one byte per element
/// (non-zero marks a head) or bits packed into `u32` words (element `i` is
/// bit `i % 32` of word `i / 32`). Element 0 always starts a segment.
///
/// Build them from `CudaSlice`s or views with `From`, or with a
/// [`HeadFlagBuilder`] from segment offsets or keys.
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

    fn check_len(&self, n: usize) -> Result<(), FlagsLengthMismatch> {
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
/// scanner.segmented_scan(&stream, ScanKind::Inclusive, DeviceSegments::rows(16), &x, &mut y)?;
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
    fn source(&self) -> SegmentSource {
        match self {
            DeviceSegments::Flags(heads) => SegmentSource::Flags(heads.format()),
            DeviceSegments::Rows { .. } => SegmentSource::Rows,
            DeviceSegments::Offsets(_) => SegmentSource::Offsets,
            DeviceSegments::Keys(_) => SegmentSource::Keys,
        }
    }

    fn check_len(&self, n: usize) -> Result<()> {
        match self {
            DeviceSegments::Flags(heads) => Ok(heads.check_len(n)?),
            DeviceSegments::Rows { row_length } => Ok(RowLengthMismatch::check(n, *row_length)?),
            DeviceSegments::Offsets(offsets) => Ok(offsets.check_len(n)?),
            DeviceSegments::Keys(keys) => Ok(keys.check_len(n)?),
        }
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

/// Owned head flags in device memory, as [`HeadFlagBuilder`] returns them.
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

/// A spec's segments for a GPU scan ([`ScanSpec::segments`]): none
/// ([`NoSegments`]), or anything that converts into [`DeviceSegments`]
/// (head flags, rows, checked offsets, keys).
pub trait DeviceSegmentsSpec<'a> {
    /// The segments, `None` for a scan of the whole input.
    fn into_device_segments(self) -> Option<DeviceSegments<'a>>;
}

impl<'a> DeviceSegmentsSpec<'a> for NoSegments {
    fn into_device_segments(self) -> Option<DeviceSegments<'a>> {
        None
    }
}

impl<'a, T: Into<DeviceSegments<'a>>> DeviceSegmentsSpec<'a> for SegmentedBy<T> {
    fn into_device_segments(self) -> Option<DeviceSegments<'a>> {
        Some(self.0.into())
    }
}

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// The strategy segmented scans use ([`Tuning::segmented_strategy`](crate::Tuning::segmented_strategy)).
    pub fn segmented_strategy(&self) -> SegmentedStrategy {
        self.tuning.segmented_strategy
    }

    /// Sets [`Tuning::segmented_strategy`](crate::Tuning::segmented_strategy).
    pub fn set_segmented_strategy(&mut self, strategy: SegmentedStrategy) {
        self.tuning.segmented_strategy = strategy;
    }

    /// Compiles (or finds in a cache) and loads every segmented kernel of
    /// the current strategy now, each of which the first segmented scan
    /// needing it would load otherwise, and says how they were obtained.
    pub fn prepare_segmented(&mut self) -> Result<ProgramStats> {
        let mut stats = ProgramStats::NONE;
        for kernel in SegmentedKernel::ALL {
            let abi = KernelAbi::segmented(kernel, self.tuning.segmented_strategy);
            stats = stats.then(self.load(abi)?.1);
        }
        Ok(stats)
    }

    /// Scratch bytes a segmented scan of `n` elements needs on `path`: for
    /// reduce-then-scan one element and one byte per tile, for the single
    /// pass what a plain single pass of full tiles needs (none for a single
    /// tile).
    pub fn segmented_workspace_bytes(n: usize, path: ScanPath) -> usize {
        let tiles = n.div_ceil(Op::tile_items());
        if tiles <= 1 {
            0
        } else if single_pass(path) {
            crate::workspace::single_pass_bytes::<Op::Element>(tiles)
        } else {
            tiles * (std::mem::size_of::<Op::Element>() + 1)
        }
    }

    /// Segmented inclusive scan: `output[i] = input[h] ∘ … ∘ input[i]`, `h`
    /// the head of `i`'s segment.
    ///
    /// ```no_run
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::scan_runtime::{open_device, DeviceHeadFlags};
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// let ctx = open_device(0)?;
    /// let stream = ctx.default_stream();
    /// let values = stream.clone_htod(&[1u32, 2, 3, 4, 5])?;
    /// let heads = stream.clone_htod(&[1u8, 0, 1, 0, 0])?;
    /// let mut out = stream.alloc_zeros::<u32>(5)?;
    /// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
    /// scanner.segmented_inclusive(&stream, DeviceHeadFlags::from(&heads), &values, &mut out)?;
    /// assert_eq!(stream.clone_dtoh(&out)?, [1, 3, 3, 7, 12]);
    /// # Ok::<(), ScanError>(())
    /// ```
    pub fn segmented_inclusive<'a, I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        segments: impl Into<DeviceSegments<'a>>,
        input: &I,
        output: &mut O,
    ) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        self.segmented_scan(stream, ScanKind::Inclusive, segments, input, output)
    }

    /// Segmented exclusive scan: `output[i] = input[h] ∘ … ∘ input[i-1]`,
    /// the identity at every head.
    pub fn segmented_exclusive<'a, I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        segments: impl Into<DeviceSegments<'a>>,
        input: &I,
        output: &mut O,
    ) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        self.segmented_scan(stream, ScanKind::Exclusive, segments, input, output)
    }

    /// Segmented exclusive scan with every segment seeded by `init`:
    /// `output[i] = init ∘ input[h] ∘ … ∘ input[i-1]`, `init` at every head.
    pub fn segmented_exclusive_with_init<'a, I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        segments: impl Into<DeviceSegments<'a>>,
        input: &I,
        output: &mut O,
        init: Op::Element,
    ) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        self.segmented_scan(
            stream,
            ScanKind::ExclusiveWithInit(init),
            segments,
            input,
            output,
        )
    }

    /// A segmented scan of any kind and direction, out of place:
    /// [`GpuScanner::scan`] with `spec.segments(segments)` (`spec` a
    /// [`ScanKind`] or a [`ScanSpec`]; in reverse every segment is scanned
    /// from its last element, see `scan_core::segmented`). A carry-out slot
    /// in the spec ([`ScanSpec::carry_out`]) receives the last segment's
    /// partial in scan order. Lengths (output, flags, carry-out slot) are
    /// checked before anything is enqueued.
    pub fn segmented_scan<'a, I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<Op::Element, Carry: DeviceCarryOut<Op::Element>, Segments = NoSegments>,
        segments: impl Into<DeviceSegments<'a>>,
        input: &I,
        output: &mut O,
    ) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        self.scan(stream, spec.into_spec().segments(segments), input, output)
    }

    /// [`GpuScanner::scan`] over segments: the spec without its segments,
    /// and the segments.
    pub(crate) fn scan_segments<I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element, impl DeviceCarryOut<Op::Element>>,
        segments: DeviceSegments<'_>,
        input: &I,
        output: &mut O,
    ) -> Result<()>
    where
        I: DevicePtr<Op::Element>,
        O: DevicePtrMut<Op::Element>,
    {
        let n = input.len();
        if output.len() != n {
            return Err(ScanError::LengthMismatch {
                input: n,
                output: output.len(),
            });
        }
        segments.check_len(n)?;
        let (spec, mut carry_out) = spec.split_carry_out();
        carry_out.check()?;
        self.prepare_segmented_scan(n, stream)?;
        let (src, _src_sync) = input.device_ptr(stream);
        self.first_call_law_check(stream, src, n)?;
        let (dst, _dst_sync) = output.device_ptr_mut(stream);
        let (carry, _carry_sync) = carry_out.slot(stream);
        let launched = self.launch_segmented(stream, spec, &segments, src, dst, n, carry);
        self.then_start_background_compiles(launched)
    }

    /// A segmented scan of `data` onto itself (`spec` as for
    /// [`GpuScanner::segmented_scan`]): [`GpuScanner::scan_in_place`] with
    /// `spec.segments(segments)`.
    pub fn segmented_scan_in_place<'a, D: DevicePtrMut<Op::Element>>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<Op::Element, Carry: DeviceCarryOut<Op::Element>, Segments = NoSegments>,
        segments: impl Into<DeviceSegments<'a>>,
        data: &mut D,
    ) -> Result<()> {
        self.scan_in_place(stream, spec.into_spec().segments(segments), data)
    }

    /// [`GpuScanner::scan_in_place`] over segments.
    pub(crate) fn scan_segments_in_place<D: DevicePtrMut<Op::Element>>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element, impl DeviceCarryOut<Op::Element>>,
        segments: DeviceSegments<'_>,
        data: &mut D,
    ) -> Result<()> {
        let n = data.len();
        segments.check_len(n)?;
        let (spec, mut carry_out) = spec.split_carry_out();
        carry_out.check()?;
        self.prepare_segmented_scan(n, stream)?;
        let (ptr, _sync) = data.device_ptr_mut(stream);
        self.first_call_law_check(stream, ptr, n)?;
        let (carry, _carry_sync) = carry_out.slot(stream);
        let launched = self.launch_segmented(stream, spec, &segments, ptr, ptr, n, carry);
        self.then_start_background_compiles(launched)
    }

    /// Host convenience: [`GpuScanner::scan_host`] with
    /// `spec.segments(segments)`.
    pub fn segmented_scan_host<'a>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<Op::Element, Carry: HostCarryOut<Op::Element>, Segments = NoSegments>,
        segments: impl Into<Segments<'a>>,
        input: &[Op::Element],
    ) -> Result<Vec<Op::Element>> {
        self.scan_host(stream, spec.into_spec().segments(segments), input)
    }

    /// [`GpuScanner::scan_host`] over segments: uploads `input` and the
    /// flags, offsets or keys (offsets are checked on the device), scans,
    /// downloads (synchronising the stream).
    pub(crate) fn scan_segments_host(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element, impl HostCarryOut<Op::Element>>,
        segments: Segments<'_>,
        input: &[Op::Element],
    ) -> Result<Vec<Op::Element>> {
        let n = input.len();
        segments.check_len(n)?;
        let (spec, carry_out) = spec.split_carry_out();
        if input.is_empty() {
            // Nothing to move: the carry-out is the seed.
            scan_core::segmented::scan::<Op>(spec.carry_out(carry_out), segments, &[], &mut [])?;
            return Ok(Vec::new());
        }
        let mut data = stream.clone_htod(input)?;
        let mut slot = stream.alloc_zeros::<Op::Element>(1)?;
        let spec = spec.carry_out(&mut slot);
        match segments {
            Segments::Flags(HeadFlags::Bytes(b)) => {
                let flags = stream.clone_htod(b)?;
                self.segmented_scan_in_place(stream, spec, &flags, &mut data)?;
            }
            Segments::Flags(HeadFlags::Bits { words, len }) => {
                let flags = stream.clone_htod(words)?;
                let flags = DeviceHeadFlags::bits(flags.as_view(), len);
                self.segmented_scan_in_place(stream, spec, flags, &mut data)?;
            }
            Segments::Rows { row_length } => {
                let rows = DeviceSegments::rows(row_length);
                self.segmented_scan_in_place(stream, spec, rows, &mut data)?;
            }
            Segments::Offsets(SegmentOffsets::U32(o)) => {
                let offsets = stream.clone_htod(o)?;
                let offsets = DeviceOffsets::check(stream, offsets.as_view(), n)?;
                self.segmented_scan_in_place(stream, spec, offsets, &mut data)?;
            }
            Segments::Offsets(SegmentOffsets::U64(o)) => {
                let offsets = stream.clone_htod(o)?;
                let offsets = DeviceOffsets::check(stream, offsets.as_view(), n)?;
                self.segmented_scan_in_place(stream, spec, offsets, &mut data)?;
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
                self.segmented_scan_in_place(stream, spec, keys, &mut data)?;
            }
            _ => unreachable!("a segment source of scan-core without a GPU counterpart"),
        }
        put_carry(stream, &slot, carry_out)?;
        Ok(stream.clone_dtoh(&data)?)
    }

    /// Makes sure segmented scans of up to `n` elements on `stream` (on the
    /// current [`ScanPath`]) allocate nothing, and loads the segmented
    /// program: call it before capturing segmented scans into a CUDA graph.
    pub fn reserve_segmented(&mut self, n: usize, stream: &Arc<CudaStream>) -> Result<()> {
        self.prepare_segmented_scan(n, stream)
    }

    fn prepare_segmented_scan(&mut self, n: usize, stream: &Arc<CudaStream>) -> Result<()> {
        self.prepare(n, stream)?;
        let tiles = n.div_ceil(Op::tile_items());
        if tiles <= 1 {
            return Ok(());
        }
        if single_pass(self.path()) {
            // Segmented single passes use the full tiles, or the pipelined ones.
            return self
                .reserve_single_pass(
                    single_pass_tiles_for::<Op>(n, resolve_path(self.path())),
                    stream,
                )
                .map(|_| ());
        }
        self.reserve_tile_totals(tiles, true, stream)
    }

    /// Enqueues the segmented kernels (the library templates with a `head_flags` segment source, `segments.cuh`): one launch for a
    /// single tile; else the single pass, or reduce, scan of the tile pairs,
    /// and rescan, as the [`ScanPath`] says.
    /// In reverse, the same kernels instantiated in reverse, as for plain
    /// scans (no pipelined pass). `carry` is the carry-out slot's address
    /// (0: none); the last tile in scan order writes it.
    #[allow(clippy::too_many_arguments)]
    fn launch_segmented(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        segments: &DeviceSegments<'_>,
        src: u64,
        dst: u64,
        n: usize,
        carry: u64,
    ) -> Result<()> {
        let direction = spec.direction;
        let (inclusive, seed, seeded) = match spec.kind {
            ScanKind::Inclusive => (true, Op::IDENTITY, false),
            ScanKind::Exclusive => (false, Op::IDENTITY, false),
            ScanKind::ExclusiveWithInit(init) => (false, init, true),
            ScanKind::InclusiveWithInit(init) => (true, init, true),
        };
        if n == 0 {
            return self.launch_empty_carry(stream, seed, carry);
        }
        let source = segments.source();
        // The guards order the flags' or offsets' use after their writes.
        let (heads, _guards) = match segments {
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
        };
        let strategy = self.tuning.segmented_strategy;
        let abi = |k: SegmentedKernel| {
            KernelAbi::segmented(k, strategy)
                .in_direction(direction)
                .expect("every segmented kernel but the pipelined ones runs in reverse")
        };
        let scan_tiles_abi = abi(SegmentedKernel::ScanTiles { inclusive, source });
        let name = Op::NAME;
        let tiles = n.div_ceil(Op::tile_items());
        let n64 = n as u64;
        let grid = |x: usize| LaunchConfig {
            grid_dim: (x as u32, 1, 1),
            block_dim: (Op::BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        if tiles == 1 {
            let scan_tiles = &self.kernel(scan_tiles_abi)?.function;
            let args = launch::segmented_scan_tiles(src, heads, dst, 0, carry, seed, seeded, n64);
            // SAFETY: (const T* input, const void* flags, u64 row_length, scan_offsets
            // offsets or scan_keys keys, T* output, const T* tile_prefixes, T* carry_out,
            // T seed, int seeded, u64 n), checked against the ABI table; lengths were
            // checked; null prefixes select a single tile; offsets (when given) are read
            // below their count and were checked for n; carry is null or one element.
            return unsafe {
                launch::launch(stream, scan_tiles, scan_tiles_abi, name, &args, grid(1))
            };
        }
        let pipelined_abi =
            KernelAbi::segmented(SegmentedKernel::Pipelined { inclusive, source }, strategy);
        // Offsets of short segments (on average), and keys, take the
        // look-back pass unless the pipelined one is asked for: finding a
        // tile's heads is latency (loads issued when the tile's turn comes,
        // not ahead with its elements) that the pipelined pass's one
        // reduce squad per block waits out tile after tile, where the
        // look-back pass's many resident blocks hide it (see
        // DENSE_OFFSETS_MEAN_LENGTH for where the passes cross for
        // offsets; keys measured in BENCHMARKS.md).
        let latency_bound_heads = match segments {
            DeviceSegments::Offsets(offsets) => {
                n < DENSE_OFFSETS_MEAN_LENGTH.saturating_mul(offsets.count())
            }
            DeviceSegments::Keys(_) => true,
            _ => false,
        };
        let pipelined_shape = if direction == Direction::Forward
            && pipelined_wanted::<Op>(self.path(), n, true)
            && !(self.path() == ScanPath::Auto && latency_bound_heads)
            && src % 16 == 0
            && dst % 16 == 0
            && match heads {
                Heads::Flags(flags) => flags % 16 == 0,
                Heads::Rows(_) | Heads::Offsets(_) | Heads::Keys(_) => true,
            } {
            let shared_bytes = layout::<Op>().pipelined_segmented_shared_bytes;
            match self.pipelined_shape(pipelined_abi, shared_bytes, stream)? {
                PipelinedShape::Ready(kernel, shape) => Some((kernel, shape)),
                PipelinedShape::Compiling | PipelinedShape::CannotRun => None,
            }
        } else {
            None
        };
        if let Some((pipelined, shape)) = pipelined_shape {
            let tiles = n.div_ceil(pipelined_tile_items::<Op>());
            let scratch = self.workspace(stream).single_pass_args();
            let args = launch::segmented_single_pass(
                src,
                heads,
                dst,
                &scratch,
                carry,
                seed,
                seeded,
                n64,
                Some(tiles as u64),
            );
            // SAFETY: (const T* input, const void* flags, u64 row_length, scan_offsets
            // offsets or scan_keys keys, T* output, void* status, T* aggregates,
            // T* prefixes, scan_launch_state* launch, T* carry_out, T seed, int seeded,
            // u64 n, u64 tiles), checked against the ABI table; lengths were checked;
            // carry is null or one element;
            // input, output and flags (when given) are 16-byte aligned; this stream's scratch holds
            // >= tiles entries (prepare reserved the larger of both tilings) and a reset
            // launch state; the kernel was given its dynamic shared memory at load; every
            // block takes one index past the last tile.
            let config = shape.config(tiles);
            return unsafe {
                launch::launch(
                    stream,
                    &pipelined.function,
                    pipelined_abi,
                    name,
                    &args,
                    config,
                )
            };
        }
        if single_pass(self.path()) {
            let single_pass_abi = abi(SegmentedKernel::SinglePass { inclusive, source });
            let single_pass = self.kernel(single_pass_abi)?;
            let scratch = self.workspace(stream).single_pass_args();
            let args = launch::segmented_single_pass(
                src, heads, dst, &scratch, carry, seed, seeded, n64, None,
            );
            // SAFETY: (const T* input, const void* flags, u64 row_length, scan_offsets
            // offsets or scan_keys keys, T* output, void* status, T* aggregates,
            // T* prefixes, scan_launch_state* launch, T* carry_out, T seed, int seeded,
            // u64 n), checked against the ABI table; lengths were checked; carry is null
            // or one element; this stream's scratch holds >= tiles entries and a reset
            // launch state; one block per tile.
            let function = &single_pass.function;
            return unsafe {
                launch::launch(stream, function, single_pass_abi, name, &args, grid(tiles))
            };
        }
        let reduce_abi = abi(SegmentedKernel::ReduceTiles(source));
        let scan_totals_abi = abi(SegmentedKernel::ScanTileTotals);
        let reduce = self.kernel(reduce_abi)?;
        let scan_totals = self.kernel(scan_totals_abi)?;
        let scan_tiles = self.kernel(scan_tiles_abi)?;
        let workspace = self.workspace(stream);
        let (totals, tile_flags) = (workspace.tile_totals(), workspace.tile_flags());
        let args =
            launch::segmented_reduce_tiles(src, heads, totals, tile_flags, seed, seeded, n64);
        // SAFETY: (const T* input, const void* flags, u64 row_length or scan_offsets offsets, T* tile_totals, u8* tile_flags,
        // T seed, int seeded, u64 n), checked against the ABI table; both workspaces hold
        // >= tiles entries.
        unsafe {
            launch::launch(
                stream,
                &reduce.function,
                reduce_abi,
                name,
                &args,
                grid(tiles),
            )
        }?;
        let args =
            launch::segmented_scan_tile_totals::<Op::Element>(totals, tile_flags, tiles as u64);
        // SAFETY: (T* tile_totals, const u8* tile_flags, u64 num_tiles), checked against
        // the ABI table; one block walks them.
        let function = &scan_totals.function;
        unsafe { launch::launch(stream, function, scan_totals_abi, name, &args, grid(1)) }?;
        let args = launch::segmented_scan_tiles(src, heads, dst, totals, carry, seed, seeded, n64);
        // SAFETY: as the single-tile launch, with `tiles` prefixes in the workspace.
        let function = &scan_tiles.function;
        unsafe { launch::launch(stream, function, scan_tiles_abi, name, &args, grid(tiles)) }
    }
}

/// Segments given by offsets shorter than this on average take the
/// look-back single pass on [`ScanPath::Auto`], not the pipelined one.
/// Measured on the H200 (`scan_bench` with `SCAN_BENCH_OFFSETS_SWEEP=1`,
/// `u32` sums, heads with probability 1/mean): the look-back pass is faster
/// up to mean 256 (73.1% of a copy against 71.4% at 2^28, and by more
/// below: 55% against 16% at mean 2), the pipelined pass from mean 384
/// (74.8% against 73.0%; 79.6% against 74.0% at 1024), at 2^26 and 2^28
/// alike.
const DENSE_OFFSETS_MEAN_LENGTH: usize = 320;

/// Builds segment head flags on the GPU from segment offsets (CSR row
/// pointers) or from keys.
///
/// ```no_run
/// use gpu_scan::scan_runtime::{open_device, HeadFlagBuilder};
/// use gpu_scan::segmented::FlagFormat;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.default_stream();
/// let builder = HeadFlagBuilder::new(&ctx)?;
/// // Row pointers of a 3-row matrix with an empty middle row, 5 non-zeros.
/// let row_ptr = stream.clone_htod(&[0u32, 2, 2, 5])?;
/// let heads = builder.from_offsets(&stream, &row_ptr, 5, FlagFormat::Bits)?;
/// # Ok::<(), gpu_scan::prelude::ScanError>(())
/// ```
pub struct HeadFlagBuilder {
    program: Arc<FlagProgram>,
}

struct FlagProgram {
    _module: Arc<CudaModule>,
    functions: HashMap<String, CudaFunction>,
}

fn flag_programs() -> &'static Mutex<HashMap<usize, Arc<FlagProgram>>> {
    static PROGRAMS: OnceLock<Mutex<HashMap<usize, Arc<FlagProgram>>>> = OnceLock::new();
    PROGRAMS.get_or_init(Default::default)
}

/// Threads per block of the flag builders, and the most blocks they launch
/// (their grid-stride loops cover any length).
const BUILDER_THREADS: u32 = 256;
const BUILDER_MAX_BLOCKS: usize = 8192;

impl HeadFlagBuilder {
    /// Compiles (or finds in the memory or disk cache) the builder program
    /// for `ctx`.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        Self::with_disk_cache(ctx, &DiskCache::from_env())
    }

    /// As [`HeadFlagBuilder::new`], with an explicit disk cache.
    pub fn with_disk_cache(ctx: &Arc<CudaContext>, disk: &DiskCache) -> Result<Self> {
        let key = ctx.cu_ctx() as usize;
        if let Some(p) = flag_programs().lock().expect("poisoned").get(&key) {
            return Ok(HeadFlagBuilder { program: p.clone() });
        }
        let target = compile_target(ctx)?;
        let source = kernels_gen::SEGMENT_FLAGS_SOURCE;
        let (module, _) = build_module(ctx, disk, target, "segment_flags", source)?;
        let mut functions = HashMap::new();
        for format in FlagFormat::ALL {
            let symbols = [32, 64]
                .map(|b| kernels_gen::heads_from_offsets_symbol(b, format))
                .into_iter()
                .chain([8, 16, 32, 64].map(|b| kernels_gen::heads_from_keys_symbol(b, format)));
            let checks = [32, 64].map(kernels_gen::check_offsets_symbol);
            let indexes = [(32, 32), (32, 64), (64, 32), (64, 64)]
                .map(|(offset, entry)| kernels_gen::index_offsets_symbol(offset, entry));
            for symbol in symbols.chain(checks).chain(indexes) {
                let f = module.load_function(&symbol)?;
                functions.insert(symbol, f);
            }
        }
        let program = Arc::new(FlagProgram {
            _module: module,
            functions,
        });
        flag_programs()
            .lock()
            .expect("poisoned")
            .insert(key, program.clone());
        Ok(HeadFlagBuilder { program })
    }

    fn function(&self, symbol: &str) -> &CudaFunction {
        &self.program.functions[symbol]
    }

    /// New flags for `n` elements where element `offsets[r]` starts a
    /// segment. Offsets must not decrease and must be at most `n`: an offset
    /// equal to `n` (the closing entry of a row-pointer array, trailing empty
    /// segments) starts nothing, repeated offsets (empty segments) mark one
    /// head, and element 0 is always a head. Other offsets are a
    /// [`ScanError::InvalidOffsets`](crate::ScanError::InvalidOffsets).
    ///
    /// The offsets are checked on the device first, and the verdict read
    /// back: the call waits for `stream`.
    pub fn from_offsets<O, P>(
        &self,
        stream: &Arc<CudaStream>,
        offsets: &P,
        n: usize,
        format: FlagFormat,
    ) -> Result<OwnedDeviceHeadFlags>
    where
        O: SegmentOffset + DeviceRepr,
        P: DevicePtr<O>,
    {
        Ok(match format {
            FlagFormat::Bytes => {
                let mut out = stream.alloc_zeros::<u8>(n)?;
                self.offsets_into(stream, offsets, n, &mut out)?;
                OwnedDeviceHeadFlags::Bytes(out)
            }
            FlagFormat::Bits => {
                let mut out = stream.alloc_zeros::<u32>(format.units(n))?;
                self.offsets_into(stream, offsets, n, &mut out)?;
                OwnedDeviceHeadFlags::Bits { words: out, len: n }
            }
        })
    }

    /// New flags where element `i` starts a segment when `keys[i]` differs
    /// (bit for bit) from `keys[i - 1]`.
    pub fn from_keys<K, P>(
        &self,
        stream: &Arc<CudaStream>,
        keys: &P,
        format: FlagFormat,
    ) -> Result<OwnedDeviceHeadFlags>
    where
        K: SegmentKey + DeviceRepr,
        P: DevicePtr<K>,
    {
        let n = keys.len();
        Ok(match format {
            FlagFormat::Bytes => {
                // SAFETY: every byte is written by the kernel before it is read.
                let mut out = unsafe { stream.alloc::<u8>(n) }?;
                self.keys_into(stream, keys, &mut out)?;
                OwnedDeviceHeadFlags::Bytes(out)
            }
            FlagFormat::Bits => {
                // SAFETY: every word is written by the kernel before it is read.
                let mut out = unsafe { stream.alloc::<u32>(format.units(n)) }?;
                self.keys_into(stream, keys, &mut out)?;
                OwnedDeviceHeadFlags::Bits { words: out, len: n }
            }
        })
    }

    /// Writes flags from offsets into your buffer: `u8`s for
    /// [`FlagFormat::Bytes`] (`n` of them), `u32`s for [`FlagFormat::Bits`]
    /// (`ceil(n / 32)`); the buffer's type selects the format. The offsets
    /// are checked first (see [`HeadFlagBuilder::from_offsets`]), and the
    /// buffer is left untouched when they or its size are wrong; else it is
    /// cleared, then written.
    pub fn offsets_into<O, P, W, D>(
        &self,
        stream: &Arc<CudaStream>,
        offsets: &P,
        n: usize,
        out: &mut D,
    ) -> Result<()>
    where
        O: SegmentOffset + DeviceRepr,
        P: DevicePtr<O>,
        W: FlagWord,
        D: DevicePtrMut<W>,
    {
        let format = W::FORMAT;
        FlagsLengthMismatch::check(format, n, n, out.len())?;
        self.check_offsets(stream, offsets, n)?;
        if n == 0 {
            return Ok(());
        }
        stream.memset_zeros(out)?;
        // With no offsets the kernel still marks element 0.
        let count = offsets.len();
        let symbol =
            kernels_gen::heads_from_offsets_symbol(8 * std::mem::size_of::<O>() as u32, format);
        let (offsets_ptr, _s1) = offsets.device_ptr(stream);
        let (out_ptr, _s2) = out.device_ptr_mut(stream);
        let (count64, n64) = (count as u64, n as u64);
        let mut launch = stream.launch_builder(self.function(&symbol));
        launch
            .arg(&offsets_ptr)
            .arg(&count64)
            .arg(&out_ptr)
            .arg(&n64);
        // SAFETY: (const uN* offsets, u64 count, flags*, u64 n); `out` holds the units of
        // n elements (checked), offsets are read for r < count and written only below n.
        unsafe { launch.launch(builder_grid(count)) }?;
        Ok(())
    }

    /// The first reason `offsets` are not row pointers of `n` elements, found
    /// on the device: the smallest index breaking a rule, then its offset
    /// (and the one before) read back.
    pub(crate) fn check_offsets<O, P>(
        &self,
        stream: &Arc<CudaStream>,
        offsets: &P,
        n: usize,
    ) -> Result<()>
    where
        O: SegmentOffset + DeviceRepr,
        P: DevicePtr<O>,
    {
        let count = offsets.len();
        if count == 0 {
            return Ok(());
        }
        let mut first_bad = stream.clone_htod(&[u64::MAX])?;
        let symbol = kernels_gen::check_offsets_symbol(8 * std::mem::size_of::<O>() as u32);
        {
            let (offsets_ptr, _s1) = offsets.device_ptr(stream);
            let (bad_ptr, _s2) = first_bad.device_ptr_mut(stream);
            let (count64, n64) = (count as u64, n as u64);
            let mut launch = stream.launch_builder(self.function(&symbol));
            launch
                .arg(&offsets_ptr)
                .arg(&count64)
                .arg(&n64)
                .arg(&bad_ptr);
            // SAFETY: (const uN* offsets, u64 count, u64 n, u64* first_bad); offsets are
            // read for r < count, and first_bad is one u64 of ours.
            unsafe { launch.launch(builder_grid(count)) }?;
        }
        let index = stream.clone_dtoh(&first_bad)?[0];
        if index == u64::MAX {
            return Ok(());
        }
        let index = index as usize;
        // The offset there and the one before it, as the kernel saw them.
        let start = index.saturating_sub(1);
        let width = std::mem::size_of::<O>();
        let mut raw = vec![0u8; width * (index + 1 - start)];
        let (base, _s) = offsets.device_ptr(stream);
        // SAFETY: offsets `start..=index` (< count) of the caller's buffer,
        // `raw.len()` bytes; the stream is synchronised before `raw` is read.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                &mut raw,
                base + (start * width) as u64,
                stream.cu_stream(),
            )
        }?;
        stream.synchronize()?;
        let pair: Vec<u64> = raw
            .chunks(width)
            .map(|c| {
                let mut v = [0u8; 8];
                v[..width].copy_from_slice(c);
                u64::from_le_bytes(v)
            })
            .collect();
        let value = pair[index - start];
        Err(if value > n as u64 {
            InvalidOffsets::OutOfRange {
                index,
                value,
                len: n,
            }
        } else {
            InvalidOffsets::Decreasing {
                index,
                value,
                previous: pair[0],
            }
        }
        .into())
    }

    /// The index of checked `offsets` of `n` elements
    /// ([`kernels_gen::index_offsets_symbol`]) in `E` entries (`u32` or
    /// `u64`, wide enough for the offsets' count), enqueued on `stream`.
    pub(crate) fn index_offsets<O, P, E>(
        &self,
        stream: &Arc<CudaStream>,
        offsets: &P,
        n: usize,
    ) -> Result<CudaSlice<E>>
    where
        O: SegmentOffset + DeviceRepr,
        P: DevicePtr<O>,
        E: DeviceRepr,
    {
        let entries = kernels_gen::offsets_index_len(n);
        // SAFETY: every entry is written by the kernel below before any read.
        let mut index = unsafe { stream.alloc::<E>(entries) }?;
        let symbol = kernels_gen::index_offsets_symbol(
            8 * std::mem::size_of::<O>() as u32,
            8 * std::mem::size_of::<E>() as u32,
        );
        let (offsets_ptr, _s1) = offsets.device_ptr(stream);
        let (index_ptr, _s2) = index.device_ptr_mut(stream);
        let (count, n64, shift) = (
            offsets.len() as u64,
            n as u64,
            kernels_gen::OFFSETS_INDEX_SHIFT as u64,
        );
        let mut launch = stream.launch_builder(self.function(&symbol));
        launch
            .arg(&offsets_ptr)
            .arg(&count)
            .arg(&n64)
            .arg(&shift)
            .arg(&index_ptr);
        // SAFETY: (const uN* offsets, u64 count, u64 n, u64 shift, uM* index); offsets
        // are read below count, and the index has offsets_index_len(n) entries of E, the
        // kernel's grid-stride bound and entry type (the symbol names both widths).
        unsafe { launch.launch(builder_grid(entries)) }?;
        drop((_s1, _s2));
        Ok(index)
    }

    /// Writes flags from keys into your buffer (see
    /// [`HeadFlagBuilder::offsets_into`] for its type and size).
    pub fn keys_into<K, P, W, D>(
        &self,
        stream: &Arc<CudaStream>,
        keys: &P,
        out: &mut D,
    ) -> Result<()>
    where
        K: SegmentKey + DeviceRepr,
        P: DevicePtr<K>,
        W: FlagWord,
        D: DevicePtrMut<W>,
    {
        let n = keys.len();
        let format = W::FORMAT;
        FlagsLengthMismatch::check(format, n, n, out.len())?;
        if n == 0 {
            return Ok(());
        }
        let symbol =
            kernels_gen::heads_from_keys_symbol(8 * std::mem::size_of::<K>() as u32, format);
        let (keys_ptr, _s1) = keys.device_ptr(stream);
        let (out_ptr, _s2) = out.device_ptr_mut(stream);
        let n64 = n as u64;
        let mut launch = stream.launch_builder(self.function(&symbol));
        launch.arg(&keys_ptr).arg(&out_ptr).arg(&n64);
        // SAFETY: (const uN* keys, flags*, u64 n); SegmentKey guarantees a plain N-bit
        // value; `out` holds the units of n elements (checked).
        unsafe { launch.launch(builder_grid(format.units(n).max(1) * 32)) }?;
        Ok(())
    }
}

/// The storage unit of a flag format: `u8` for bytes, `u32` for bits.
pub trait FlagWord: DeviceRepr + ValidAsZeroBits + sealed::Sealed {
    /// The format this unit stores.
    const FORMAT: FlagFormat;
}

impl FlagWord for u8 {
    const FORMAT: FlagFormat = FlagFormat::Bytes;
}

impl FlagWord for u32 {
    const FORMAT: FlagFormat = FlagFormat::Bits;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u32 {}
}

fn builder_grid(threads: usize) -> LaunchConfig {
    let blocks = threads
        .div_ceil(BUILDER_THREADS as usize)
        .clamp(1, BUILDER_MAX_BLOCKS);
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (BUILDER_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}
