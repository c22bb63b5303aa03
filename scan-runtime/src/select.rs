//! Compaction on the GPU: select by a predicate or by flags, partition
//! (two- and three-way), unique, run-length encoding, non-trivial runs and
//! reduce-by-key, each one pass over the input (`kernels_gen::select`; the
//! three-way partition counts its parts in a pass before), with the
//! count written to a device slot on the stream, as CUB's
//! `DeviceSelect` and `DevicePartition` write theirs. The CPU backend's
//! functions of the same names ([`scan_core::select`]) compute the same
//! outputs and are their oracle.

use crate::built_stage::DynStage;
use crate::capture::AddressStream;
use crate::dynamic::{check_aligned, check_whole, registered, BuiltElement, DynOperator};
use crate::error::{Result, ScanError};
use crate::kernels::{build_module, compile_target, ProgramStats};
use crate::operator::OperatorKey;
use crate::workspace::{stream_key, Workspace};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig,
    PushKernelArg,
};
use kernels_gen::select::{
    select_program, SelectKernel, SelectShape, SelectSource, REVERSE_TAIL_BLOCK_THREADS,
};
use kernels_gen::stage::StageKind;
use kernels_gen::Arch;
use scan_core::select::{Rejected, SelectLengthError};
use scan_core::stages::{ScanEquality, ScanPredicate};
use scan_core::{ScanElement, ScanOp};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Arc;

/// Compaction on one context: select, partition (two- and three-way),
/// unique, run-length encoding, non-trivial runs and reduce-by-key of any
/// element type, by `#[scan_predicate]`
/// and `#[scan_equality]` stages or by flag bytes (reduce-by-key: any
/// `#[scan_op]` over the values). Each kernel is compiled the first time it
/// is needed (through the disk cache) and kept; scratch is kept per stream,
/// as a [`GpuScanner`](crate::GpuScanner) keeps it, so compactions on
/// several streams never share it, and one can be captured in a CUDA graph
/// after [`GpuSelect::reserve`] (or, for reduce-by-key, once its stream
/// has run one of at least that length with values of that size).
///
/// Every function writes the selected elements to the front of its output
/// (as long as the input; what lies past the count is left as it was,
/// except after a partition, which fills it) and the count to `count`, a
/// one-element `u64` buffer (two for the three-way partition), on the
/// stream: the host learns it by copying it back, and later kernels may
/// read it where it is.
///
/// ```no_run
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::open_device;
///
/// #[scan_predicate(element = u32, keep = |x| x % 3 == 0)]
/// struct Third;
///
/// let ctx = open_device(0)?;
/// let stream = ctx.new_stream()?;
/// let input = stream.clone_htod(&[1u32, 3, 4, 6, 9, 10])?;
/// let mut out = stream.alloc_zeros::<u32>(6)?;
/// let mut count = stream.alloc_zeros::<u64>(1)?;
/// let mut select = GpuSelect::new(&ctx)?;
/// select.select_if::<Third>(&stream, &input, &mut out, &mut count)?;
/// assert_eq!(stream.clone_dtoh(&count)?, [3]);
/// assert_eq!(stream.clone_dtoh(&out)?[..3], [3, 6, 9]);
/// # Ok::<(), gpu_scan::scan_runtime::ScanError>(())
/// ```
pub struct GpuSelect {
    ctx: Arc<CudaContext>,
    target: (Arch, bool),
    disk: crate::cache::DiskCache,
    /// Loaded kernels, by the stage's (or element's) type, kernel and shape.
    kernels: HashMap<(OperatorKey, SelectKernel, SelectShape), (Arc<CudaModule>, CudaFunction)>,
    /// The tile shape, when not each element size's default.
    shape: Option<SelectShape>,
    /// Scratch, one per stream and status stride: the tiles' status (a
    /// count, or a count and a position or partial total) and the launch
    /// state.
    workspaces: HashMap<(usize, usize), Workspace>,
    stats: ProgramStats,
    addresses: AddressStream,
    /// The device's multiprocessors, which size the three-way partition's
    /// count pass.
    multiprocessors: usize,
}

/// What reduce-by-key compiles: the keys' equality and the values'
/// operator, their memory-cache key, and their elements' sizes and
/// alignments (keys, values).
struct Keyed {
    key: OperatorKey,
    equality: &'static str,
    equality_source: &'static str,
    op: &'static str,
    op_part: String,
    key_size: usize,
    value_size: usize,
    aligns: [usize; 2],
}

/// What one compaction launches: its kernel, for which type, from which
/// program source, over elements of which size.
struct Launch<'a> {
    kernel: SelectKernel,
    key: OperatorKey,
    name: &'static str,
    source: SelectSource<'a>,
    element_size: usize,
    /// The alignments the input's and the output's addresses need: a
    /// built stage's element's (its buffers are bytes); 1 for a type's.
    aligns: [usize; 2],
}

impl GpuSelect {
    /// Compaction on `ctx`, with the disk cache the environment selects.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        Self::with_disk_cache(ctx, &crate::cache::DiskCache::from_env())
    }

    /// Compaction on `ctx` with an explicit disk cache.
    pub fn with_disk_cache(ctx: &Arc<CudaContext>, disk: &crate::cache::DiskCache) -> Result<Self> {
        Ok(GpuSelect {
            ctx: ctx.clone(),
            target: compile_target(ctx)?,
            disk: disk.clone(),
            kernels: HashMap::new(),
            shape: None,
            workspaces: HashMap::new(),
            stats: ProgramStats::NONE,
            addresses: AddressStream::default(),
            multiprocessors: crate::device::multiprocessors(ctx)?,
        })
    }

    /// How the kernels used so far were obtained (compiled, read from the
    /// disk cache), summed.
    pub fn program_stats(&self) -> ProgramStats {
        self.stats
    }

    /// Sets the select kernels' tile shape for every element type (`None`:
    /// each kernel's default, [`SelectShape::default_for`]), for
    /// tuning: a shape that cannot hold an element fails that compaction
    /// with [`ScanError::SelectShape`] before anything is enqueued.
    pub fn set_shape(&mut self, shape: Option<SelectShape>) {
        self.shape = shape;
    }

    /// The tile shape `kernel` takes here for elements of `element_size`
    /// bytes: the one [`GpuSelect::set_shape`] set, or the default for the
    /// kernel, the element and the architecture compiled for
    /// ([`SelectShape::default_for`]); an error where it cannot hold them.
    pub fn shape_for(&self, kernel: SelectKernel, element_size: usize) -> Result<SelectShape> {
        let shape = self.shape.unwrap_or(SelectShape::default_for(
            kernel,
            element_size,
            self.target.0,
        ));
        shape
            .check(kernel, element_size)
            .map_err(|detail| ScanError::SelectShape { detail })?;
        Ok(shape)
    }

    /// The shape of `kernel` over elements of `element_size` bytes and its
    /// tiles for `n` elements, which the launch state numbers in 32 bits.
    fn tiles_for(
        &self,
        kernel: SelectKernel,
        element_size: usize,
        n: usize,
    ) -> Result<(SelectShape, usize)> {
        let shape = self.shape_for(kernel, element_size)?;
        let tiles = n.div_ceil(shape.tile_items());
        if tiles > u32::MAX as usize {
            return Err(ScanError::TooLong {
                len: n,
                max: u32::MAX as usize * shape.tile_items(),
            });
        }
        Ok((shape, tiles))
    }

    /// Reserves `stream`'s scratch for select, partition (two- and
    /// three-way), unique, run-length encoding and non-trivial runs of up
    /// to `n` elements of
    /// type `T`, so that later
    /// ones on it allocate nothing: call it before
    /// capturing the stream into a CUDA graph, where an allocation would
    /// belong to the graph (a compaction that needs more then fails with
    /// [`ScanError::WorkspaceDuringCapture`]). Reduce-by-key has its own,
    /// [`GpuSelect::reserve_reduce_by_key`].
    pub fn reserve<T: ScanElement>(&mut self, stream: &Arc<CudaStream>, n: usize) -> Result<()> {
        // The kernel of the smallest tiles needs the most entries; a tuning
        // shape some kernel cannot take reserves for those it can (the
        // others refuse it when called).
        let mut tile_items = usize::MAX;
        let mut refused = None;
        for kernel in [
            SelectKernel::If,
            SelectKernel::Flagged,
            SelectKernel::Unique,
            SelectKernel::PartitionIf,
            SelectKernel::RunLengthEncode,
            SelectKernel::NonTrivialRuns,
            SelectKernel::PartitionThree,
        ] {
            match self.shape_for(kernel, std::mem::size_of::<T>()) {
                Ok(shape) => tile_items = tile_items.min(shape.tile_items()),
                Err(e) => refused = refused.or(Some(e)),
            }
        }
        if tile_items == usize::MAX {
            return Err(refused.expect("a kernel refused the shape"));
        }
        let tiles = n.div_ceil(tile_items);
        self.reserve_status(stream, SelectKernel::If, 0, tiles)?;
        // (Run-length encoding's status serves non-trivial runs and the
        // three-way partition too: 16-byte values.)
        self.reserve_status(stream, SelectKernel::RunLengthEncode, 0, tiles)?;
        Ok(())
    }

    /// Reserves `stream`'s scratch for [`GpuSelect::reduce_by_key`] of up
    /// to `n` keys of `E` with values of `Op`, as [`GpuSelect::reserve`]
    /// does for the other compactions (its tile status carries a partial
    /// total of `Op`'s element, so it has a reservation of its own).
    pub fn reserve_reduce_by_key<E: ScanEquality, Op: ScanOp>(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
    ) -> Result<()> {
        let kernel = SelectKernel::ReduceByKey;
        let value_size = std::mem::size_of::<Op::Element>();
        let key_size = std::mem::size_of::<E::Element>();
        let (_, tiles) = self.tiles_for(kernel, key_size + value_size, n)?;
        self.reserve_status(stream, kernel, value_size, tiles)?;
        Ok(())
    }

    /// The elements `P` keeps, in order, to the front of `output`; their
    /// number to `count` (CUB's `DeviceSelect::If`).
    pub fn select_if<P: ScanPredicate>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &impl DevicePtr<P::Element>,
        output: &mut impl DevicePtrMut<P::Element>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let launch = Self::by_stage::<P>(SelectKernel::If);
        self.compact(stream, launch, input, None, output, None, count, None)
    }

    /// The elements whose flag byte is non-zero, in order, to the front of
    /// `output`; their number to `count` (CUB's `DeviceSelect::Flagged`).
    /// `flags` holds one byte per element.
    pub fn select_flagged<T: ScanElement>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &impl DevicePtr<T>,
        flags: &impl DevicePtr<u8>,
        output: &mut impl DevicePtrMut<T>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        if flags.len() != input.len() {
            return Err(SelectLengthError::Flags {
                input: input.len(),
                flags: flags.len(),
            }
            .into());
        }
        let launch = Self::by_element::<T>(SelectKernel::Flagged);
        self.compact(
            stream,
            launch,
            input,
            Some(flags),
            output,
            None,
            count,
            None,
        )
    }

    /// The elements `P` keeps, in order, then the rest, in the order
    /// `rejected` says (CUB's `DevicePartition::If` writes them reversed,
    /// [`Rejected::Reversed`]; [`Rejected::InOrder`] reverses that part
    /// again in place, one more read and write of it); the number kept to
    /// `count`. Every element of `output` is written.
    pub fn partition_if<P: ScanPredicate>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &impl DevicePtr<P::Element>,
        output: &mut impl DevicePtrMut<P::Element>,
        rejected: Rejected,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let launch = Self::by_stage::<P>(SelectKernel::PartitionIf);
        let reverse_tail = match rejected {
            Rejected::Reversed => None,
            Rejected::InOrder => Some(Self::by_element::<P::Element>(SelectKernel::ReverseTail)),
        };
        self.compact(
            stream,
            launch,
            input,
            None,
            output,
            None,
            count,
            reverse_tail,
        )
    }

    /// A three-way partition: the elements `First` keeps, then of the
    /// others those `Second` keeps, then the rest, each part in input
    /// order, filling `output`; the first two parts' lengths to `counts`,
    /// a two-element slot (CUB's three-way `DevicePartition::If` writes
    /// the parts to three outputs; this is the CPU backend's
    /// [`partition_three`](scan_core::select::partition_three), one
    /// output). The second part starts where the first ends, so a pass
    /// before the partition's counts both parts (the input read twice):
    /// both are on `stream`, and the slot holds the counts when they are
    /// done. The passes classify alike (the same translated predicates,
    /// whose float operations are never contracted); a tile that finds
    /// its parts outside the ranges the count pass gave stops the kernel
    /// with a trap, which poisons the context, rather than write outside
    /// `output`.
    ///
    /// ```no_run
    /// use gpu_scan::prelude::*;
    /// use gpu_scan::scan_runtime::open_device;
    ///
    /// #[scan_predicate(element = u32, keep = |x| x < 10)]
    /// struct Small;
    /// #[scan_predicate(element = u32, keep = |x| x < 100)]
    /// struct Medium;
    ///
    /// let ctx = open_device(0)?;
    /// let stream = ctx.new_stream()?;
    /// let input = stream.clone_htod(&[500u32, 5, 50, 7, 700, 70])?;
    /// let mut out = stream.alloc_zeros::<u32>(6)?;
    /// let mut counts = stream.alloc_zeros::<u64>(2)?;
    /// let mut select = GpuSelect::new(&ctx)?;
    /// select.partition_three::<Small, Medium>(&stream, &input, &mut out, &mut counts)?;
    /// assert_eq!(stream.clone_dtoh(&counts)?, [2, 2]);
    /// assert_eq!(stream.clone_dtoh(&out)?, [5, 7, 50, 70, 500, 700]);
    /// # Ok::<(), gpu_scan::scan_runtime::ScanError>(())
    /// ```
    pub fn partition_three<First, Second>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &impl DevicePtr<First::Element>,
        output: &mut impl DevicePtrMut<First::Element>,
        counts: &mut impl DevicePtrMut<u64>,
    ) -> Result<()>
    where
        First: ScanPredicate,
        Second: ScanPredicate<Element = First::Element>,
    {
        let launch = |kernel| Launch {
            kernel,
            key: OperatorKey::Type(TypeId::of::<(First, Second)>()),
            name: First::NAME,
            source: SelectSource::TwoStages {
                first: First::NAME,
                first_source: First::CUDA_SOURCE,
                second: Second::NAME,
                second_source: Second::CUDA_SOURCE,
            },
            element_size: std::mem::size_of::<First::Element>(),
            aligns: [1, 1],
        };
        self.partition_three_with(stream, launch, input, output, counts)
    }

    /// The three-way partition's count pass and partition pass, their
    /// launches made by `launch`.
    fn partition_three_with<'a, T>(
        &mut self,
        stream: &Arc<CudaStream>,
        launch: impl Fn(SelectKernel) -> Launch<'a>,
        input: &impl DevicePtr<T>,
        output: &mut impl DevicePtrMut<T>,
        counts: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let n = input.len();
        check_count_slots(n, [output.len()], counts.len(), 2)?;
        let (size, aligns) = {
            let l = launch(SelectKernel::PartitionThree);
            (l.element_size, l.aligns)
        };
        let (shape, tiles) = self.tiles_for(SelectKernel::PartitionThree, size, n)?;
        let (count_shape, count_tiles) =
            self.tiles_for(SelectKernel::PartitionThreeCount, size, n)?;
        let at = self.addresses.for_stream(stream)?;
        if n == 0 {
            return zero_count(stream, &at, counts);
        }
        let count_function =
            self.function(&launch(SelectKernel::PartitionThreeCount), count_shape)?;
        let function = self.function(&launch(SelectKernel::PartitionThree), shape)?;
        let scratch = self.reserve_status(stream, SelectKernel::PartitionThree, 0, tiles)?;
        let output_bytes = output.num_bytes();
        let (src, _src_guard) = input.device_ptr(&at);
        let (dst, _dst_guard) = output.device_ptr_mut(&at);
        check_aligned(&[
            ("the input", src, input.num_bytes(), size, aligns[0]),
            ("the output", dst, output_bytes, size, aligns[1]),
        ])?;
        let (slots, _slots_guard) = counts.device_ptr_mut(&at);
        let n64 = n as u64;
        // SAFETY: `slots` is the caller's two-element u64 buffer, valid
        // while its guard lives; the zeroing is ordered on `stream` before
        // the count pass adds to it.
        unsafe { cudarc::driver::result::memset_d8_async(slots, 0, 16, stream.cu_stream()) }?;
        // Enough blocks to fill the device, each striding over tiles, so
        // that few atomics meet at the slots.
        let blocks = count_tiles.min(self.multiprocessors * count_shape.min_blocks);
        let mut builder = stream.launch_builder(&count_function);
        // SelectKernel::PartitionThreeCount's parameters: in, counts, n.
        builder.arg(&src).arg(&slots).arg(&n64);
        // SAFETY: the kernel reads `n` elements of the input's type and
        // adds to the two u64 slots; every address stays valid until its
        // guard drops, after the launch is enqueued.
        unsafe {
            builder.launch(LaunchConfig {
                grid_dim: (blocks as u32, 1, 1),
                block_dim: (count_shape.threads as u32, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        let mut builder = stream.launch_builder(&function);
        // SelectKernel::PartitionThree's parameters: in, out, counts,
        // status, launch, n.
        builder
            .arg(&src)
            .arg(&dst)
            .arg(&slots)
            .arg(&scratch.status)
            .arg(&scratch.launch)
            .arg(&n64);
        // SAFETY: the kernel reads `n` elements and the two counts the pass
        // before wrote (ordered on the stream), writes each element once
        // to the output, which holds `n` (a tile whose parts would leave
        // their ranges traps instead of writing);
        // the status and launch state cover `tiles` tiles (reserved above).
        unsafe {
            builder.launch(LaunchConfig {
                grid_dim: (tiles as u32, 1, 1),
                block_dim: (shape.threads as u32, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        Ok(())
    }

    /// The first element of each run of neighbours `E` calls equal, in
    /// order, to the front of `output`; their number to `count` (CUB's
    /// `DeviceSelect::Unique`).
    pub fn unique<E: ScanEquality>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &impl DevicePtr<E::Element>,
        output: &mut impl DevicePtrMut<E::Element>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let launch = Self::by_equality::<E>(SelectKernel::Unique);
        self.compact(stream, launch, input, None, output, None, count, None)
    }

    /// Run-length encoding: the first element of each run of neighbours
    /// `E` calls equal, in order, to the front of `values`, each run's
    /// length to the front of `lengths`, and the number of runs to `count`
    /// (CUB's `DeviceRunLengthEncode::Encode`), in one pass. `values` and
    /// `lengths` are as long as the input; past the runs they are left as
    /// they were.
    pub fn run_length_encode<E: ScanEquality>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &impl DevicePtr<E::Element>,
        values: &mut impl DevicePtrMut<E::Element>,
        lengths: &mut impl DevicePtrMut<u64>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let launch = Self::by_equality::<E>(SelectKernel::RunLengthEncode);
        self.compact(
            stream,
            launch,
            input,
            None,
            values,
            Some(lengths),
            count,
            None,
        )
    }

    /// The runs of two or more neighbours `E` calls equal: each one's
    /// offset in the input to the front of `offsets` and its length to the
    /// front of `lengths`, in order, and their number to `count` (CUB's
    /// `DeviceRunLengthEncode::NonTrivialRuns`), in one pass. `offsets`
    /// and `lengths` are as long as the input; past the runs they are left
    /// as they were.
    pub fn non_trivial_runs<E: ScanEquality>(
        &mut self,
        stream: &Arc<CudaStream>,
        input: &impl DevicePtr<E::Element>,
        offsets: &mut impl DevicePtrMut<u64>,
        lengths: &mut impl DevicePtrMut<u64>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let launch = Self::by_equality::<E>(SelectKernel::NonTrivialRuns);
        self.compact(
            stream,
            launch,
            input,
            None,
            offsets,
            Some(lengths),
            count,
            None,
        )
    }

    /// Reduce-by-key: for each run of neighbouring keys `E` calls equal,
    /// its first key to the front of `keys_out` and the combination by `Op`
    /// of its values, in order (no commutativity needed), to the front of
    /// `values_out`; the number of runs to `count` (CUB's
    /// `DeviceReduce::ReduceByKey`), in one pass. `values`, `keys_out` and
    /// `values_out` are as long as `keys`; past the runs the outputs are
    /// left as they were.
    pub fn reduce_by_key<E: ScanEquality, Op: ScanOp>(
        &mut self,
        stream: &Arc<CudaStream>,
        keys: &impl DevicePtr<E::Element>,
        values: &impl DevicePtr<Op::Element>,
        keys_out: &mut impl DevicePtrMut<E::Element>,
        values_out: &mut impl DevicePtrMut<Op::Element>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let keyed = Keyed {
            key: OperatorKey::Type(TypeId::of::<(E, Op)>()),
            equality: E::NAME,
            equality_source: E::CUDA_SOURCE,
            op: Op::NAME,
            op_part: crate::kernels::layout::<Op>().cuda_declaration(Op::NAME) + Op::CUDA_SOURCE,
            key_size: std::mem::size_of::<E::Element>(),
            value_size: std::mem::size_of::<Op::Element>(),
            aligns: [1, 1],
        };
        self.reduce_runs(stream, keyed, keys, values, keys_out, values_out, count)
    }

    /// Reduce-by-key's one pass, for the keys' equality and the values'
    /// operator `keyed`.
    #[allow(clippy::too_many_arguments)]
    fn reduce_runs<K, V>(
        &mut self,
        stream: &Arc<CudaStream>,
        keyed: Keyed,
        keys: &impl DevicePtr<K>,
        values: &impl DevicePtr<V>,
        keys_out: &mut impl DevicePtrMut<K>,
        values_out: &mut impl DevicePtrMut<V>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let n = keys.len();
        if values.len() != n {
            return Err(SelectLengthError::Values {
                keys: n,
                values: values.len(),
            }
            .into());
        }
        check_count_slots(n, [keys_out.len(), values_out.len()], count.len(), 1)?;
        let kernel = SelectKernel::ReduceByKey;
        let (key_size, value_size) = (keyed.key_size, keyed.value_size);
        let (shape, tiles) = self.tiles_for(kernel, key_size + value_size, n)?;
        let at = self.addresses.for_stream(stream)?;
        if n == 0 {
            return zero_count(stream, &at, count);
        }
        let launch = Launch {
            kernel,
            key: keyed.key,
            name: keyed.equality,
            source: SelectSource::Keyed {
                name: keyed.equality,
                source: keyed.equality_source,
                op: keyed.op,
                op_part: &keyed.op_part,
                value_size,
            },
            element_size: key_size,
            aligns: [keyed.aligns[0]; 2],
        };
        let function = self.function(&launch, shape)?;
        let scratch = self.reserve_status(stream, kernel, value_size, tiles)?;
        let (keys_bytes, values_bytes) = (keys_out.num_bytes(), values_out.num_bytes());
        let (src, _src_guard) = keys.device_ptr(&at);
        let (vals, _vals_guard) = values.device_ptr(&at);
        let (keys_dst, _keys_guard) = keys_out.device_ptr_mut(&at);
        let (vals_dst, _vals_dst_guard) = values_out.device_ptr_mut(&at);
        let [key_align, value_align] = keyed.aligns;
        check_aligned(&[
            ("the keys", src, keys.num_bytes(), key_size, key_align),
            (
                "the values",
                vals,
                values.num_bytes(),
                value_size,
                value_align,
            ),
            (
                "the keys' output",
                keys_dst,
                keys_bytes,
                key_size,
                key_align,
            ),
            (
                "the values' output",
                vals_dst,
                values_bytes,
                value_size,
                value_align,
            ),
        ])?;
        let (slot, _slot_guard) = count.device_ptr_mut(&at);
        let n64 = n as u64;
        let mut builder = stream.launch_builder(&function);
        // SelectKernel::ReduceByKey's parameters: in, values, keys_out,
        // values_out, count, status, launch, n.
        builder
            .arg(&src)
            .arg(&vals)
            .arg(&keys_dst)
            .arg(&vals_dst)
            .arg(&slot)
            .arg(&scratch.status)
            .arg(&scratch.launch)
            .arg(&n64);
        // SAFETY: the kernel reads `n` keys and `n` values of the types
        // these buffers hold, writes at most `n` keys and values to outputs
        // of `n` each and one u64 to the count slot; the status and launch
        // state cover `tiles` tiles of its entries (reserved above); every
        // address stays valid until its guard drops, after the launch.
        unsafe {
            builder.launch(LaunchConfig {
                grid_dim: (tiles as u32, 1, 1),
                block_dim: (shape.threads as u32, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        Ok(())
    }

    /// The launch of `kernel` for equality `E`.
    fn by_equality<E: ScanEquality>(kernel: SelectKernel) -> Launch<'static> {
        Launch {
            kernel,
            key: OperatorKey::Type(TypeId::of::<E>()),
            name: E::NAME,
            source: SelectSource::Stage {
                name: E::NAME,
                source: E::CUDA_SOURCE,
            },
            element_size: std::mem::size_of::<E::Element>(),
            aligns: [1, 1],
        }
    }

    /// The launch of `kernel` for elements `T` alone.
    fn by_element<T: ScanElement>(kernel: SelectKernel) -> Launch<'static> {
        Launch {
            kernel,
            key: OperatorKey::Type(TypeId::of::<T>()),
            name: T::CUDA_TYPE,
            source: SelectSource::Element {
                cuda_type: T::CUDA_TYPE,
                declarations: T::CUDA_DECL,
            },
            element_size: std::mem::size_of::<T>(),
            aligns: [1, 1],
        }
    }

    /// The launch of `kernel` for predicate `P`.
    fn by_stage<P: ScanPredicate>(kernel: SelectKernel) -> Launch<'static> {
        Launch {
            kernel,
            key: OperatorKey::Type(TypeId::of::<P>()),
            name: P::NAME,
            source: SelectSource::Stage {
                name: P::NAME,
                source: P::CUDA_SOURCE,
            },
            element_size: std::mem::size_of::<P::Element>(),
            aligns: [1, 1],
        }
    }

    /// Every compaction: lengths checked and kernels loaded before
    /// anything is enqueued (an error leaves the buffers untouched), then
    /// the one pass (or, for no elements, a zero count), then the
    /// partition's `reverse_tail`.
    #[allow(clippy::too_many_arguments)]
    fn compact<T, U>(
        &mut self,
        stream: &Arc<CudaStream>,
        launch: Launch<'_>,
        input: &impl DevicePtr<T>,
        flags: Option<&dyn DevicePtr<u8>>,
        output: &mut impl DevicePtrMut<U>,
        lengths: Option<&mut dyn DevicePtrMut<u64>>,
        count: &mut impl DevicePtrMut<u64>,
        reverse_tail: Option<Launch<'_>>,
    ) -> Result<()> {
        let n = input.len();
        let outputs = [Some(output.len()), lengths.as_ref().map(|l| l.len())];
        check_count_slots(n, outputs.into_iter().flatten(), count.len(), 1)?;
        let (shape, tiles) = self.tiles_for(launch.kernel, launch.element_size, n)?;
        let at = self.addresses.for_stream(stream)?;
        if n == 0 {
            return zero_count(stream, &at, count);
        }
        let function = self.function(&launch, shape)?;
        let tail = match &reverse_tail {
            Some(tail) => {
                let shape = SelectShape::default_for(tail.kernel, tail.element_size, self.target.0);
                Some(self.function(tail, shape)?)
            }
            None => None,
        };
        let scratch = self.reserve_status(stream, launch.kernel, 0, tiles)?;
        let output_bytes = output.num_bytes();
        let (src, _src_guard) = input.device_ptr(&at);
        let (dst, _dst_guard) = output.device_ptr_mut(&at);
        let size = launch.element_size;
        check_aligned(&[
            ("the input", src, input.num_bytes(), size, launch.aligns[0]),
            ("the output", dst, output_bytes, size, launch.aligns[1]),
        ])?;
        let (slot, _slot_guard) = count.device_ptr_mut(&at);
        let flags = flags.map(|f| f.device_ptr(&at));
        let lengths = lengths.map(|l| l.device_ptr_mut(&at));
        let n64 = n as u64;
        let mut builder = stream.launch_builder(&function);
        // The wrapper's parameters (SelectKernel::params): in, [flags,]
        // out (non-trivial runs: offsets), [lengths,] count, status,
        // launch, n.
        builder.arg(&src);
        if let Some((flags, _)) = &flags {
            builder.arg(flags);
        }
        builder.arg(&dst);
        if let Some((lengths, _)) = &lengths {
            builder.arg(lengths);
        }
        builder
            .arg(&slot)
            .arg(&scratch.status)
            .arg(&scratch.launch)
            .arg(&n64);
        let config = LaunchConfig {
            grid_dim: (tiles as u32, 1, 1),
            block_dim: (shape.threads as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the kernel reads `n` elements of the input's type (and
        // `n` flag bytes) and writes at most `n` elements of the output's
        // type (the input's, or offsets) to the output (and to the
        // lengths), which hold `n`, and one u64 to the count
        // slot; the status and
        // launch state cover `tiles` tiles (reserved above); every address
        // stays valid until its guard drops, after the launch is enqueued.
        unsafe { builder.launch(config) }?;
        if let Some(tail) = tail {
            let threads = REVERSE_TAIL_BLOCK_THREADS;
            let blocks = (n.div_ceil(2 * threads)).clamp(1, 1 << 16) as u32;
            let mut builder = stream.launch_builder(&tail);
            builder.arg(&dst).arg(&slot).arg(&n64);
            // SAFETY: the kernel reads the count the pass before it wrote
            // (ordered on the stream) and swaps elements of out[count, n),
            // inside the output's `n` elements.
            unsafe {
                builder.launch(LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (threads as u32, 1, 1),
                    shared_mem_bytes: 0,
                })
            }?;
        }
        Ok(())
    }

    /// Makes `stream`'s tile status cover `tiles` tiles of `kernel` (a
    /// count per tile, or a count and a position or a partial total of
    /// `value_size` bytes) and returns its addresses.
    fn reserve_status(
        &mut self,
        stream: &Arc<CudaStream>,
        kernel: SelectKernel,
        value_size: usize,
        tiles: usize,
    ) -> Result<crate::workspace::SinglePassArgs> {
        let (_, stride) = kernel.status_layout(value_size);
        let workspace = self
            .workspaces
            .entry((stream_key(stream), stride))
            .or_insert_with(|| Workspace::new(8));
        workspace
            .reserve_status_strided(stream, tiles, 1, stride)
            .map_err(|e| e.reserved_by("GpuSelect::reserve"))?;
        Ok(workspace.single_pass_args())
    }

    /// The kernel of `launch`, compiled (or read from the disk cache) and
    /// loaded the first time.
    fn function(&mut self, launch: &Launch<'_>, shape: SelectShape) -> Result<CudaFunction> {
        let key = (launch.key, launch.kernel, shape);
        if let Some((_, function)) = self.kernels.get(&key) {
            return Ok(function.clone());
        }
        let source = select_program(launch.kernel, &launch.source, launch.element_size, shape);
        let (module, stats) =
            build_module(&self.ctx, &self.disk, self.target, launch.name, &source)?;
        let function = module.load_function(&launch.kernel.symbol(&launch.source.symbol_name()))?;
        self.stats = self.stats.then(stats);
        self.kernels.insert(key, (module, function.clone()));
        Ok(function)
    }
}

/// Compactions by a predicate or an equality built at run time
/// ([`DynStage`]), over buffers of bytes seen as its elements
/// ([`RawElements`](crate::RawElements)): the same kernels as the typed
/// functions', from the stage's CUDA. A buffer of another element size, an
/// address the element's alignment does not allow, or a stage of the other
/// kind is refused before anything is enqueued.
impl GpuSelect {
    /// [`GpuSelect::select_if`] by a built predicate.
    pub fn select_if_built(
        &mut self,
        stream: &Arc<CudaStream>,
        predicate: &DynStage,
        input: &impl DevicePtr<BuiltElement>,
        output: &mut impl DevicePtrMut<BuiltElement>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let sizes = [input.num_bytes(), output.num_bytes()];
        let launch = Self::built(
            predicate,
            SelectKernel::If,
            StageKind::Predicate,
            sizes,
            input.len(),
        )?;
        self.compact(stream, launch, input, None, output, None, count, None)
    }

    /// [`GpuSelect::partition_if`] by a built predicate.
    pub fn partition_if_built(
        &mut self,
        stream: &Arc<CudaStream>,
        predicate: &DynStage,
        input: &impl DevicePtr<BuiltElement>,
        output: &mut impl DevicePtrMut<BuiltElement>,
        rejected: Rejected,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let (sizes, n) = ([input.num_bytes(), output.num_bytes()], input.len());
        let launch = Self::built(
            predicate,
            SelectKernel::PartitionIf,
            StageKind::Predicate,
            sizes,
            n,
        )?;
        let reverse_tail = match rejected {
            Rejected::Reversed => None,
            Rejected::InOrder => {
                let (cuda_type, declarations) = predicate.element_cuda();
                Some(Launch {
                    kernel: SelectKernel::ReverseTail,
                    source: SelectSource::Element {
                        cuda_type,
                        declarations,
                    },
                    ..Self::built(
                        predicate,
                        SelectKernel::ReverseTail,
                        StageKind::Predicate,
                        sizes,
                        n,
                    )?
                })
            }
        };
        self.compact(
            stream,
            launch,
            input,
            None,
            output,
            None,
            count,
            reverse_tail,
        )
    }

    /// [`GpuSelect::unique`] by a built equality.
    pub fn unique_built(
        &mut self,
        stream: &Arc<CudaStream>,
        equality: &DynStage,
        input: &impl DevicePtr<BuiltElement>,
        output: &mut impl DevicePtrMut<BuiltElement>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let sizes = [input.num_bytes(), output.num_bytes()];
        let launch = Self::built(
            equality,
            SelectKernel::Unique,
            StageKind::Equality,
            sizes,
            input.len(),
        )?;
        self.compact(stream, launch, input, None, output, None, count, None)
    }

    /// [`GpuSelect::run_length_encode`] by a built equality.
    pub fn run_length_encode_built(
        &mut self,
        stream: &Arc<CudaStream>,
        equality: &DynStage,
        input: &impl DevicePtr<BuiltElement>,
        values: &mut impl DevicePtrMut<BuiltElement>,
        lengths: &mut impl DevicePtrMut<u64>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let sizes = [input.num_bytes(), values.num_bytes()];
        let launch = Self::built(
            equality,
            SelectKernel::RunLengthEncode,
            StageKind::Equality,
            sizes,
            input.len(),
        )?;
        self.compact(
            stream,
            launch,
            input,
            None,
            values,
            Some(lengths),
            count,
            None,
        )
    }

    /// [`GpuSelect::partition_three`] by two built predicates over one
    /// element type.
    pub fn partition_three_built(
        &mut self,
        stream: &Arc<CudaStream>,
        first: &DynStage,
        second: &DynStage,
        input: &impl DevicePtr<BuiltElement>,
        output: &mut impl DevicePtrMut<BuiltElement>,
        counts: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let (sizes, n) = ([input.num_bytes(), output.num_bytes()], input.len());
        let kernel = SelectKernel::PartitionThree;
        Self::built(first, kernel, StageKind::Predicate, sizes, n)?;
        Self::built(second, kernel, StageKind::Predicate, sizes, n)?;
        if first.element() != second.element() || first.element_size() != second.element_size() {
            return Err(ScanError::InvalidOperator(format!(
                "stages `{}` and `{}` judge elements of two types",
                first.name(),
                second.name()
            )));
        }
        // The pair's kernels, registered under its names and sources.
        let (key, _, _) = registered(
            &format!("{}+{}", first.name(), second.name()),
            format!("{}{}", first.cuda_source(), second.cuda_source()),
        );
        let launch = |kernel| Launch {
            kernel,
            key,
            name: first.name(),
            source: SelectSource::TwoStages {
                first: first.name(),
                first_source: first.cuda_source(),
                second: second.name(),
                second_source: second.cuda_source(),
            },
            element_size: first.element_size(),
            aligns: [first.element_align(); 2],
        };
        self.partition_three_with(stream, launch, input, output, counts)
    }

    /// [`GpuSelect::non_trivial_runs`] by a built equality.
    pub fn non_trivial_runs_built(
        &mut self,
        stream: &Arc<CudaStream>,
        equality: &DynStage,
        input: &impl DevicePtr<BuiltElement>,
        offsets: &mut impl DevicePtrMut<u64>,
        lengths: &mut impl DevicePtrMut<u64>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let n = input.len();
        let sizes = [input.num_bytes(), n * equality.element_size()];
        let launch = Self::built(
            equality,
            SelectKernel::NonTrivialRuns,
            StageKind::Equality,
            sizes,
            n,
        )?;
        // The outputs are offsets and lengths (u64s), aligned by their type.
        let launch = Launch {
            aligns: [equality.element_align(), 1],
            ..launch
        };
        self.compact(
            stream,
            launch,
            input,
            None,
            offsets,
            Some(lengths),
            count,
            None,
        )
    }

    /// [`GpuSelect::reduce_by_key`] by a built equality over the keys and
    /// a built operator over the values.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_by_key_built(
        &mut self,
        stream: &Arc<CudaStream>,
        equality: &DynStage,
        op: &DynOperator,
        keys: &impl DevicePtr<BuiltElement>,
        values: &impl DevicePtr<BuiltElement>,
        keys_out: &mut impl DevicePtrMut<BuiltElement>,
        values_out: &mut impl DevicePtrMut<BuiltElement>,
        count: &mut impl DevicePtrMut<u64>,
    ) -> Result<()> {
        let sizes = [keys.num_bytes(), keys_out.num_bytes()];
        Self::built(
            equality,
            SelectKernel::ReduceByKey,
            StageKind::Equality,
            sizes,
            keys.len(),
        )?;
        let value_size = op.element_size();
        check_whole(
            op,
            values.len(),
            &[
                ("the values", values.num_bytes()),
                ("the values' output", values_out.num_bytes()),
            ],
        )?;
        let program = op.program();
        // The pair's kernels, registered under its names and sources.
        let op_part = program.layout.cuda_declaration(program.name) + program.cuda_source;
        let (key, _, _) = registered(
            &format!("{}+{}", equality.name(), program.name),
            format!("{}{op_part}", equality.cuda_source()),
        );
        let keyed = Keyed {
            key,
            equality: equality.name(),
            equality_source: equality.cuda_source(),
            op: program.name,
            op_part,
            key_size: equality.element_size(),
            value_size,
            aligns: [equality.element_align(), op.element_align()],
        };
        self.reduce_runs(stream, keyed, keys, values, keys_out, values_out, count)
    }

    /// The launch of `kernel` for built stage `stage`, which must be a
    /// `kind`, over an input and an output of `bytes` each holding `n` of
    /// its elements (else the error that says which does not: a view made
    /// for another element).
    fn built(
        stage: &DynStage,
        kernel: SelectKernel,
        kind: StageKind,
        bytes: [usize; 2],
        n: usize,
    ) -> Result<Launch<'_>> {
        if stage.kind() != kind {
            return Err(ScanError::InvalidOperator(format!(
                "stage `{}` is a {:?}; {kernel:?} takes a {kind:?}",
                stage.name(),
                stage.kind()
            )));
        }
        let size = stage.element_size();
        check_whole(
            stage,
            n,
            &[("the input", bytes[0]), ("the output", bytes[1])],
        )?;
        Ok(Launch {
            kernel,
            key: stage.key(),
            name: stage.name(),
            source: SelectSource::Stage {
                name: stage.name(),
                source: stage.cuda_source(),
            },
            element_size: size,
            aligns: [stage.element_align(); 2],
        })
    }
}

/// Outputs as long as the input's `n` elements and a count slot of
/// `slots` elements, or the error that says which is not.
fn check_count_slots(
    n: usize,
    outputs: impl IntoIterator<Item = usize>,
    count: usize,
    slots: usize,
) -> Result<()> {
    if let Some(output) = outputs.into_iter().find(|&len| len != n) {
        return Err(SelectLengthError::Output { input: n, output }.into());
    }
    if count != slots {
        return Err(ScanError::SelectCountLength {
            len: count,
            expected: slots,
        });
    }
    Ok(())
}

/// Counts of 0 written to every slot of `count` on `stream` (a compaction
/// of nothing), its address taken on `at` ([`AddressStream`]).
fn zero_count(
    stream: &CudaStream,
    at: &Arc<CudaStream>,
    count: &mut impl DevicePtrMut<u64>,
) -> Result<()> {
    let bytes = count.len() * 8;
    let (slot, _slot_guard) = count.device_ptr_mut(at);
    // SAFETY: `slot` is the address of the caller's u64 buffer of
    // `count.len()` elements, valid while its guard lives; the write is
    // ordered on `stream`.
    unsafe { cudarc::driver::result::memset_d8_async(slot, 0, bytes, stream.cu_stream()) }?;
    Ok(())
}
