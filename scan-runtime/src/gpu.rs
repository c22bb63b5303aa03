//! Scans on a CUDA device: [`GpuScanner`].

use crate::cache::DiskCache;
use crate::capture::AddressStream;
use crate::error::{Result, ScanError};
use crate::fast_hash::FastMap;
use crate::kernels::{
    compile_target, kernel_without_compiling, load_kernel, quick_kernel, wait_for_compiles,
    Availability, ColdKernel, LoadedKernel, PipelinedLaunch, ProgramStats,
};
use crate::launch::{self, PassScratch, TileScanArgs};
use crate::operator::OperatorProgram;
use crate::path::{ScanPath, MAX_TILES};
use crate::plan::{self, Path, Readiness, Scratch};
use crate::tuning::Tuning;
use crate::workspace::{single_pass_bytes, stream_key, SinglePassArgs, Workspace};
use cudarc::driver::sys::CUstreamCaptureStatus;
use cudarc::driver::{CudaContext, CudaStream, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use kernels_gen::abi::{KernelAbi, Pass};
use kernels_gen::{Arch, Kernel};
use scan_core::{Direction, ScanOp};
use std::marker::PhantomData;
use std::sync::Arc;

/// Scans with operator `Op` on one CUDA context.
///
/// Create it once and reuse it. Kernels are compiled when a scan first
/// needs them, each on its own: NVRTC builds a CUBIN of that one kernel for
/// the device's architecture (or reads it from the disk cache), the driver
/// loads it, and every later scanner of the operator in the context reuses
/// it. Scans are enqueued on the stream you pass and return without
/// waiting, like any cudarc launch.
///
/// **First use.** On [`ScanPath::Auto`] a scan whose fastest kernel has
/// not been compiled yet (in this process, or on disk by an earlier one)
/// does not wait for it: it runs on a kernel that compiles in about half
/// the time (the single pass over small tiles), and the fastest kernel
/// compiles on another thread meanwhile; scans take it from the first one
/// after it is loaded. The kernel a scan compiles while it waits is a quick
/// build where NVRTC has one ([`QUICK_BUILDS_ENV`](crate::QUICK_BUILDS_ENV)):
/// NVRTC's fast-compile mode, about half the compile for slower code; its
/// optimized build compiles in the background too and replaces it. The
/// results are the same either way. Turn it off
/// with [`Tuning::background_compile`], or wait for those compiles with
/// [`GpuScanner::wait_for_background_compiles`] (before timing scans, say).
/// Dropping a scanner waits for the background compiles of its operator,
/// so that a program never exits while NVRTC runs on another thread (which
/// can crash the process in the libraries' exit handlers) and the next
/// process finds the optimized kernels in the disk cache: a process that
/// scans once and exits gets its result sooner but ends later (one tile on
/// the H200: the result at 157 ms instead of 249, the exit at 449 ms).
///
/// **Paths.** An input of one tile is scanned by one block in one launch.
/// Longer inputs take the single pass with decoupled look-back or
/// reduce-then-scan, by size by default ([`ScanPath`], [`Tuning::path`]).
///
/// **Scratch.** A scan of `n` elements needs [`GpuScanner::workspace_bytes`]
/// bytes: a few per tile (`ceil(n / tile_items)` tiles, none for a single
/// tile). The scanner keeps one workspace *per stream* it has scanned on,
/// and grows it only when a longer input needs more, so repeated scans of
/// one size allocate nothing after the first; [`GpuScanner::reserve`]
/// sizes it up front. Scans on different streams therefore never share
/// tile state: one scanner may be used on several streams, and scans on
/// them may run concurrently. A workspace lives as long as the scanner.
///
/// **Graphs.** A single pass keeps its launch state (tile counter, epoch)
/// in its workspace on the device, never in launch arguments, and scratch
/// is ordered by its stream alone (no cudarc events), so scans can be
/// captured into a CUDA graph and replayed any number of times, on new
/// data in the same buffers. Reserve before capturing
/// ([`GpuScanner::reserve`]): a scan that would grow its workspace while its stream is being
/// captured fails with [`ScanError::WorkspaceDuringCapture`] and enqueues
/// nothing. Streams from `ctx.new_stream()` with cudarc's event tracking on
/// (its default) capture too: while a stream is captured, the scan leaves
/// its buffers' events alone on it (a capture cannot wait on work outside
/// it), so order the graph's launches after the writes to its inputs, as
/// with any graph.
///
/// ```no_run
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
///
/// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
/// struct Sum;
///
/// let ctx = gpu_scan::scan_runtime::open_device(0)?;
/// let stream = ctx.new_stream()?;
/// let mut input = stream.alloc_zeros::<u32>(1 << 20)?;
/// let mut output = stream.alloc_zeros::<u32>(1 << 20)?;
/// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
/// scanner.reserve(&stream, ScanKind::Inclusive, 1 << 20)?;
/// stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
/// scanner.inclusive(&stream, &input, &mut output)?;
/// let graph = stream.end_capture(CUgraphInstantiate_flags(0))?.expect("a graph");
/// for round in 0..3u32 {
///     stream.memcpy_htod(&vec![round; 1 << 20], &mut input)?;
///     graph.launch()?;   // scans the new data
/// }
/// # Ok::<(), ScanError>(())
/// ```
///
/// **In place.** The `*_in_place` forms scan a buffer onto itself. Out of
/// place, the input is never written.
///
/// **Errors** leave the output untouched: lengths are checked before
/// anything is enqueued.
pub struct GpuScanner<Op: ScanOp> {
    pub(crate) ctx: Arc<CudaContext>,
    /// The architecture kernels are compiled for (see [`target_arch`](crate::target_arch)).
    pub(crate) arch: Arch,
    /// The kernels this scanner has used, by ABI entry.
    kernels: FastMap<KernelAbi, Arc<LoadedKernel>>,
    /// Quick builds it runs on while their optimized builds compile in the
    /// background ([`GpuScanner::kernel_now`]).
    quick: FastMap<KernelAbi, Arc<LoadedKernel>>,
    /// Kernels a scan found cold, whose background compiles start after
    /// its launch.
    cold: Vec<ColdKernel>,
    stats: ProgramStats,
    pub(crate) disk: DiskCache,
    /// Scratch, one workspace per stream (keyed by [`stream_key`]).
    workspaces: FastMap<usize, Workspace>,
    pub(crate) workspace_allocations: usize,
    pub(crate) tuning: Tuning,
    pub(crate) law_check: LawCheck,
    /// Column-scan blocks resident on the device at once (measured at the
    /// first column scan): where a matrix has this many strips of 32
    /// columns, each block walks down a whole strip (`columns.cuh`).
    pub(crate) column_residency: Option<usize>,
    /// Blocks of a two-dimensional scan's tiles resident at once (measured
    /// at the first such scan): its tiling aims at one wave of them.
    pub(crate) area_residency: Option<usize>,
    /// Where buffers' addresses are taken while a stream is captured.
    addresses: AddressStream,
    /// What its kernels are compiled from.
    pub(crate) op: OperatorProgram,
    /// The operator's identity ([`ScanOp::IDENTITY`], or a built
    /// operator's).
    pub(crate) identity: Op::Element,
    _op: PhantomData<Op>,
}

/// Whether a scan may take the pipelined single pass now
/// ([`GpuScanner::pipelined_shape`]).
pub(crate) enum PipelinedShape {
    /// Its kernel is loaded, and launches so.
    Ready(Arc<LoadedKernel>, PipelinedLaunch),
    /// Its kernel is compiling in the background: take a kernel that
    /// compiles faster meanwhile.
    Compiling,
    /// It cannot run here: take the single pass with look-back.
    CannotRun,
}

impl<Op: ScanOp> Drop for GpuScanner<Op> {
    /// Waits for the background compiles of `Op`'s kernels (see the type's
    /// docs, **First use**).
    fn drop(&mut self) {
        wait_for_compiles(&self.op, &self.ctx);
    }
}

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// A scanner on `ctx`, using the disk cache the environment selects.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        Self::with_disk_cache(ctx, &DiskCache::from_env())
    }

    /// A scanner on `ctx` with an explicit disk cache.
    pub fn with_disk_cache(ctx: &Arc<CudaContext>, disk: &DiskCache) -> Result<Self> {
        Self::with_operator(ctx, disk, OperatorProgram::of::<Op>(), Op::IDENTITY)
    }

    /// A scanner on `ctx` of the operator whose program is `op` and whose
    /// identity is `identity` (`Op`'s own, or an operator built at run
    /// time: [`crate::dynamic`]).
    pub(crate) fn with_operator(
        ctx: &Arc<CudaContext>,
        disk: &DiskCache,
        op: OperatorProgram,
        identity: Op::Element,
    ) -> Result<Self> {
        let (arch, _) = compile_target(ctx)?;
        Ok(GpuScanner {
            ctx: ctx.clone(),
            arch,
            kernels: FastMap::default(),
            quick: FastMap::default(),
            cold: Vec::new(),
            stats: ProgramStats::NONE,
            disk: disk.clone(),
            workspaces: FastMap::default(),
            workspace_allocations: 0,
            tuning: Tuning::default(),
            law_check: LawCheck::initial(),
            column_residency: None,
            area_residency: None,
            addresses: AddressStream::default(),
            op,
            identity,
            _op: PhantomData,
        })
    }

    /// The context this scanner launches in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// How this scanner obtained the kernels it has used so far: compiled,
    /// read from the disk cache, or already loaded in this context by an
    /// earlier scanner ([`crate::ProgramOrigin::Memory`], also before the first
    /// scan: kernels are compiled when a scan first needs them, each on its
    /// own).
    pub fn program_stats(&self) -> ProgramStats {
        self.stats
    }

    /// Kernel `abi`, loaded for this scanner (compiled, read from the disk
    /// cache, or found in memory the first time).
    pub(crate) fn kernel(&mut self, abi: KernelAbi) -> Result<Arc<LoadedKernel>> {
        Ok(self.load(abi)?.0)
    }

    /// [`GpuScanner::kernel`], with how this call obtained it
    /// ([`ProgramStats::NONE`] when the scanner had it already); the
    /// scanner's [`GpuScanner::program_stats`] add them up.
    pub(crate) fn load(&mut self, abi: KernelAbi) -> Result<(Arc<LoadedKernel>, ProgramStats)> {
        if let Some(k) = self.kernels.get(&abi) {
            return Ok((k.clone(), ProgramStats::NONE));
        }
        let (kernel, stats) = load_kernel(&self.op, &self.ctx, &self.disk, abi)?;
        Ok((self.keep(abi, kernel, stats), stats))
    }

    /// Kernel `abi` if this scan may have it now. With background compiles
    /// on ([`Tuning::background_compile`], [`ScanPath::Auto`], `stream` not
    /// being captured), a kernel that would need an NVRTC compile is noted
    /// instead, to compile on another thread once the scan is launched
    /// ([`GpuScanner::start_background_compiles`]), and this says `None`:
    /// the scan takes a kernel that compiles faster. Otherwise it is loaded
    /// as [`GpuScanner::kernel`] does.
    pub(crate) fn kernel_if_ready(
        &mut self,
        abi: KernelAbi,
        stream: &CudaStream,
    ) -> Result<Option<Arc<LoadedKernel>>> {
        if let Some(k) = self.kernels.get(&abi) {
            return Ok(Some(k.clone()));
        }
        if !self.may_compile_in_background(stream)? {
            return self.kernel(abi).map(Some);
        }
        Ok(
            match kernel_without_compiling(&self.op, &self.ctx, &self.disk, abi)? {
                Availability::Ready(kernel, stats) => Some(self.keep(abi, kernel, stats)),
                Availability::Compiling => None,
                Availability::Cold(cold) => {
                    self.cold.push(cold);
                    None
                }
            },
        )
    }

    /// Kernel `abi` for a scan on `stream` to launch now. Where the scan may
    /// compile in the background ([`GpuScanner::kernel_if_ready`]) and the
    /// kernel's optimized build would need an NVRTC compile (or is
    /// compiling on another thread), the scan runs on a quick build of it
    /// ([`kernels_gen::QUICK_BUILD_OPTION`]: compiled now in a fraction of
    /// the time, or held from an earlier scan) and the optimized build
    /// compiles in the background; the first scan after that one is loaded
    /// takes it. Otherwise, and where NVRTC has no quick builds, as
    /// [`GpuScanner::kernel`]: a stream being captured always gets the
    /// optimized build (a graph keeps the kernels it was captured with).
    pub(crate) fn kernel_now(
        &mut self,
        abi: KernelAbi,
        stream: &CudaStream,
    ) -> Result<Arc<LoadedKernel>> {
        if let Some(k) = self.kernels.get(&abi) {
            return Ok(k.clone());
        }
        if !self.may_compile_in_background(stream)? {
            return self.kernel(abi);
        }
        let cold = match kernel_without_compiling(&self.op, &self.ctx, &self.disk, abi)? {
            Availability::Ready(kernel, stats) => return Ok(self.keep(abi, kernel, stats)),
            Availability::Compiling => None,
            Availability::Cold(cold) => Some(cold),
        };
        let quick = match self.quick.get(&abi) {
            Some(k) => Some(k.clone()),
            None => quick_kernel(&self.op, &self.ctx, &self.disk, abi)?.map(|(kernel, stats)| {
                self.stats = self.stats.then(stats);
                self.quick.insert(abi, kernel.clone());
                kernel
            }),
        };
        match quick {
            Some(kernel) => {
                self.cold.extend(cold);
                Ok(kernel)
            }
            // No quick build: the optimized one now (or its background
            // compile waited for).
            None => self.kernel(abi),
        }
    }

    /// Whether a scan on `stream` may run on other kernels while the ones
    /// it prefers compile in the background ([`Tuning::background_compile`]
    /// on [`ScanPath::Auto`], `stream` not being captured).
    fn may_compile_in_background(&self, stream: &CudaStream) -> Result<bool> {
        Ok(self.tuning.background_compile
            && self.tuning.resolved_path() == ScanPath::Auto
            && stream.capture_status()? == CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Keeps the optimized build `kernel` of `abi`, loaded with `stats`, in
    /// place of any quick one, and returns it.
    fn keep(
        &mut self,
        abi: KernelAbi,
        kernel: Arc<LoadedKernel>,
        stats: ProgramStats,
    ) -> Arc<LoadedKernel> {
        self.stats = self.stats.then(stats);
        self.quick.remove(&abi);
        self.kernels.insert(abi, kernel.clone());
        kernel
    }

    /// Starts the background compiles of the kernels this scan found cold
    /// ([`GpuScanner::kernel_if_ready`]). A scan calls it after its launch,
    /// so that its interim kernel's compile, which it waits for, does not
    /// share the machine with them.
    pub(crate) fn start_background_compiles(&mut self) -> Result<()> {
        for cold in std::mem::take(&mut self.cold) {
            cold.compile_in_background(&self.op, &self.ctx, &self.disk)?;
        }
        Ok(())
    }

    /// [`GpuScanner::start_background_compiles`] after `launched`, a scan's
    /// launch: its error first.
    pub(crate) fn then_start_background_compiles(&mut self, launched: Result<()>) -> Result<()> {
        let started = self.start_background_compiles();
        launched.and(started)
    }

    /// Waits until every kernel of this scanner's operator that is
    /// compiling in the background (see [`Tuning::background_compile`]) is
    /// loaded, so that the next scans take the kernels they prefer: call it
    /// before timing scans, say. A compile that failed there is done again
    /// by the next scan that needs the kernel, which returns its error.
    ///
    /// ```no_run
    /// use gpu_scan::prelude::*;
    ///
    /// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
    /// struct Sum;
    ///
    /// let ctx = gpu_scan::scan_runtime::open_device(0)?;
    /// let stream = ctx.default_stream();
    /// let input = stream.alloc_zeros::<u32>(1 << 24)?;
    /// let mut output = stream.alloc_zeros::<u32>(1 << 24)?;
    /// let mut scanner = GpuScanner::<Sum>::new(&ctx)?;
    /// scanner.inclusive(&stream, &input, &mut output)?; // may run an interim kernel
    /// scanner.wait_for_background_compiles();
    /// scanner.inclusive(&stream, &input, &mut output)?; // the fastest one
    /// # Ok::<(), ScanError>(())
    /// ```
    pub fn wait_for_background_compiles(&self) {
        wait_for_compiles(&self.op, &self.ctx);
    }

    /// How pipelined kernel `abi` launches here, compiling it if needed
    /// (in the background where [`GpuScanner::kernel_if_ready`] does);
    /// [`PipelinedShape::CannotRun`] (and nothing compiled) where it cannot
    /// run: a program architecture without bulk copies, an element it does
    /// not take, or a device without the shared memory it needs.
    pub(crate) fn pipelined_shape(
        &mut self,
        abi: KernelAbi,
        shared_bytes: usize,
        stream: &CudaStream,
    ) -> Result<PipelinedShape> {
        if !self.arch.has_bulk_copies() || shared_bytes == 0 {
            return Ok(PipelinedShape::CannotRun);
        }
        Ok(match self.kernel_if_ready(abi, stream)? {
            Some(kernel) => match kernel.pipelined {
                Some(shape) => PipelinedShape::Ready(kernel, shape),
                None => PipelinedShape::CannotRun,
            },
            None => PipelinedShape::Compiling,
        })
    }

    /// How this scanner runs its scans (new scanners: [`Tuning::default`]).
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// Changes how this scanner runs its scans. Every tuning gives the same
    /// results (bit for bit for exactly associative operators).
    pub fn set_tuning(&mut self, tuning: Tuning) {
        self.tuning = tuning;
    }

    /// Elements per tile (one block's share).
    pub fn tile_items(&self) -> usize {
        self.op.tile_items()
    }

    /// Elements per small tile: the single pass uses these for inputs of at
    /// most [`Tuning::small_tile_limit`] elements, so that a short input
    /// spreads over more blocks.
    pub fn small_tile_items(&self) -> usize {
        self.op.small_tile_items()
    }

    /// Scratch bytes [`GpuScanner::reserve`] reserves for scans of `n`
    /// elements on `path` (with the default tuning otherwise), plain or
    /// segmented: for the single passes a status entry every 64 bytes
    /// (elements over 48 bytes: every multiple of 64 that holds a 16-byte
    /// chunk per 12 bytes) plus two elements per tile and a 16-byte launch
    /// state, for the most tiles the path may use; for reduce-then-scan one
    /// element and one byte per tile. None for a single tile.
    /// Each stream a scanner scans on has a workspace of its own.
    pub fn workspace_bytes(n: usize, path: ScanPath) -> usize {
        scratch_bytes(&OperatorProgram::of::<Op>(), n, path)
    }

    /// How many times this scanner has allocated workspace memory, on all
    /// streams.
    pub fn workspace_allocations(&self) -> usize {
        self.workspace_allocations
    }

    /// Reserves `scratch` on `stream` (nothing where the workspace holds it
    /// already) and returns its addresses.
    pub(crate) fn reserve_scratch(
        &mut self,
        scratch: Scratch,
        stream: &Arc<CudaStream>,
    ) -> Result<PassScratch> {
        Ok(match scratch {
            Scratch::None => PassScratch::None,
            Scratch::SinglePass { tiles } => {
                PassScratch::SinglePass(self.reserve_single_pass(tiles, stream)?)
            }
            Scratch::TileTotals { tiles, flags } => {
                self.reserve_tile_totals(tiles, flags, stream)?;
                let element_size = self.op.element_size() as u64;
                let workspace = self.workspace(stream);
                PassScratch::TileTotals {
                    totals: workspace.tile_totals(),
                    flags: if flags { workspace.tile_flags() } else { 0 },
                    element_size,
                }
            }
            // Reserved only (GpuScanner::reserve): a path takes one of them.
            Scratch::Deterministic {
                single_pass,
                totals,
            } => {
                self.reserve_single_pass(single_pass, stream)?;
                self.reserve_tile_totals(totals, true, stream)?;
                PassScratch::None
            }
        })
    }

    /// The workspace of `stream` (created empty on first use).
    pub(crate) fn workspace(&mut self, stream: &CudaStream) -> &mut Workspace {
        let element_size = self.op.element_size();
        self.workspaces
            .entry(stream_key(stream))
            .or_insert_with(|| Workspace::new(element_size))
    }

    /// Makes sure `stream`'s reduce-then-scan scratch (one element per
    /// tile, and with `with_flags` one byte per tile) covers `tiles`.
    pub(crate) fn reserve_tile_totals(
        &mut self,
        tiles: usize,
        with_flags: bool,
        stream: &Arc<CudaStream>,
    ) -> Result<()> {
        self.workspace_allocations += self
            .workspace(stream)
            .reserve_tile_totals(stream, tiles, with_flags)?;
        Ok(())
    }

    internal! {
        /// The launch state of the single passes on `stream` as the device holds
        /// it (synchronises `stream`; `None` before the first single pass on it).
        /// For tests of the launch-state protocol.
        #[doc(hidden)]
        pub fn launch_state_for_tests(
            &mut self,
            stream: &Arc<CudaStream>,
        ) -> Result<Option<kernels_gen::launch_state::LaunchState>> {
            self.workspace(stream).read_launch_state(stream)
        }
    }

    internal! {
        /// The symbols of the kernels this scanner has used, sorted. For tests
        /// of which kernels a scan takes.
        #[doc(hidden)]
        pub fn kernel_symbols_for_tests(&self) -> Vec<String> {
            let name = self.op.name;
            let quick = self.quick.keys().map(|k| format!("{}~quick", k.symbol(name)));
            let mut symbols: Vec<String> =
                self.kernels.keys().map(|k| k.symbol(name)).chain(quick).collect();
            symbols.sort();
            symbols
        }
    }

    internal! {
        /// Sets the epoch the next single pass on `stream` uses (synchronises
        /// `stream`), to exercise the epoch's wrap-around in tests.
        #[doc(hidden)]
        pub fn set_launch_epoch_for_tests(
            &mut self,
            stream: &Arc<CudaStream>,
            epoch: u32,
        ) -> Result<()> {
            self.workspace(stream).write_launch_epoch(stream, epoch)
        }
    }

    /// Makes sure `stream`'s single-pass scratch covers `tiles` tiles.
    /// Returns the scratch's addresses for the launch.
    pub(crate) fn reserve_single_pass(
        &mut self,
        tiles: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<SinglePassArgs> {
        let workspace = self.workspace(stream);
        let allocated = workspace.reserve_single_pass(stream, tiles)?;
        let args = workspace.single_pass_args();
        self.workspace_allocations += allocated;
        Ok(args)
    }

    /// The stream on which a scan enqueued on `stream` takes its buffers'
    /// addresses: `stream` itself, or a side stream while `stream` is being
    /// captured under cudarc's event tracking ([`crate::capture`]).
    pub(crate) fn address_stream(&self, stream: &Arc<CudaStream>) -> Result<Arc<CudaStream>> {
        self.addresses.for_stream(stream)
    }

    /// The planner's path for `request` ([`plan::choose`]), asking about
    /// the pipelined kernel `pipelined` (its ABI entry and dynamic shared
    /// memory; `None`: there is none) and the full-tile look-back kernel
    /// `full_tiles`; with the pipelined kernel and its launch shape where
    /// it chose that pass.
    pub(crate) fn plan_path(
        &mut self,
        stream: &CudaStream,
        request: &plan::Request,
        pipelined: Option<(KernelAbi, usize)>,
        full_tiles: Option<KernelAbi>,
    ) -> Result<(Path, Option<ReadyPipelined>)> {
        let tuning = self.tuning;
        let mut probe = KernelProbe {
            scanner: self,
            stream,
            pipelined,
            full_tiles,
            ready: None,
        };
        let path = plan::choose(request, &tuning, &mut probe)?;
        Ok((path, probe.ready))
    }

    /// [`ScanError::TooLong`] where `n` elements are more than the passes
    /// take.
    pub(crate) fn check_length(&self, n: usize) -> Result<()> {
        check_length(&self.op, n)
    }

    /// Checks the length and reserves the scratch of scans of up to `n`
    /// elements, plain or segmented ([`plan::reserved_scratch`]).
    pub(crate) fn prepare(&mut self, n: usize, stream: &Arc<CudaStream>) -> Result<()> {
        self.check_length(n)?;
        let request = plan_request(&self.op, n, Direction::Forward, None, true);
        let scratch = plan::reserved_scratch(&request, &self.tuning);
        self.reserve_scratch(scratch, stream).map(|_| ())
    }
}

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// The carry-out of a scan of nothing, `seed`, written to the slot at
    /// `carry` (nothing when 0) on the stream: the one-tile kernel over no
    /// elements, whose tile total is the identity, writes `seed` behind
    /// it. Plain and segmented scans alike (no segment is open).
    pub(crate) fn launch_empty_carry(
        &mut self,
        stream: &Arc<CudaStream>,
        seed: Op::Element,
        carry: u64,
    ) -> Result<()> {
        if carry == 0 {
            return Ok(());
        }
        let abi = KernelAbi::plain(Kernel::ScanTilesExclusive);
        let function = &self.kernel(abi)?.function;
        let empty = TileScanArgs {
            input: 0,
            output: 0,
            heads: None,
            carry_out: carry,
            seed,
            seeded: false,
            staged: false,
            n: 0,
        };
        let args = launch::tile_pass(Pass::ScanTiles, &empty, PassScratch::None, 1);
        let config = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (self.op.block_threads(), 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: (const T* input, T* output, const T* tile_prefixes, T* carry_out,
        // T seed, u64 n), checked against the ABI table; n = 0, so the kernel reads
        // and writes no element (null input and output), and a null prefix array
        // selects the seed; carry holds one element.
        unsafe { launch::launch(stream, function, abi, self.op.name, &args, config) }
    }
}

/// [`ScanError::TooLong`] where `n` elements of `op` are more than the
/// passes take.
pub(crate) fn check_length(op: &OperatorProgram, n: usize) -> Result<()> {
    let tiles = n.div_ceil(op.tile_items());
    if tiles > MAX_TILES {
        return Err(ScanError::TooLong {
            len: n,
            max: MAX_TILES * op.tile_items(),
        });
    }
    Ok(())
}

/// The scratch bytes [`GpuScanner::reserve`] reserves for scans of `n`
/// elements of `op` on `path` ([`GpuScanner::workspace_bytes`]).
pub(crate) fn scratch_bytes(op: &OperatorProgram, n: usize, path: ScanPath) -> usize {
    let request = plan_request(op, n, Direction::Forward, None, true);
    let size = op.element_size();
    match plan::reserved_scratch(&request, &Tuning::default().with_path(path)) {
        Scratch::None => 0,
        Scratch::SinglePass { tiles } => single_pass_bytes(size, tiles),
        Scratch::TileTotals { tiles, flags } => tiles * (size + flags as usize),
        Scratch::Deterministic {
            single_pass,
            totals,
        } => single_pass_bytes(size, single_pass) + totals * (size + 1),
    }
}

/// What the planner needs to know of a scan of `n` elements of `op`
/// ([`plan::Request`]).
pub(crate) fn plan_request(
    op: &OperatorProgram,
    n: usize,
    direction: Direction,
    segments: Option<plan::Segments>,
    aligned: bool,
) -> plan::Request {
    plan::Request {
        n,
        element_size: op.element_size(),
        tile_items: op.tile_items(),
        small_tile_items: op.small_tile_items(),
        pipelined_tile_items: op.pipelined_tile_items(),
        direction,
        segments,
        aligned,
        deterministic: deterministic_shape(op),
    }
}

/// The shape of `op`'s deterministic plain scans.
pub(crate) fn deterministic_shape(op: &OperatorProgram) -> plan::DeterministicShape {
    let layout = op.layout;
    plan::DeterministicShape {
        tile_items: layout.deterministic_tile_items(),
        one_pass: layout.deterministic_pipelined(),
    }
}

/// Whether a scanner still checks the laws on its next scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LawCheck {
    /// Check on the next scan that has data and is not being captured.
    Pending,
    /// Checked once, or turned off.
    Done,
}

impl LawCheck {
    /// What a new scanner does: check its first call in debug builds.
    pub(crate) fn initial() -> Self {
        Self::requested(cfg!(debug_assertions))
    }

    /// Check the next scan when `on`, never otherwise (`set_law_checks`).
    pub(crate) fn requested(on: bool) -> Self {
        if on {
            LawCheck::Pending
        } else {
            LawCheck::Done
        }
    }
}

/// A pipelined kernel found ready, and how it launches here.
pub(crate) type ReadyPipelined = (Arc<LoadedKernel>, PipelinedLaunch);

/// The planner's answers from a scanner's kernels ([`plan::Probe`]): the
/// pipelined kernel of `pipelined` (its ABI entry and dynamic shared
/// memory) and the full-tile look-back kernel `full_tiles`.
struct KernelProbe<'s, Op: ScanOp> {
    scanner: &'s mut GpuScanner<Op>,
    stream: &'s CudaStream,
    pipelined: Option<(KernelAbi, usize)>,
    full_tiles: Option<KernelAbi>,
    /// The pipelined kernel and its launch shape, once found ready.
    ready: Option<ReadyPipelined>,
}

impl<Op: ScanOp> plan::Probe for KernelProbe<'_, Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    type Error = ScanError;

    fn pipelined(&mut self) -> Result<Readiness> {
        let Some((abi, shared_bytes)) = self.pipelined else {
            return Ok(Readiness::CannotRun);
        };
        Ok(
            match self
                .scanner
                .pipelined_shape(abi, shared_bytes, self.stream)?
            {
                PipelinedShape::Ready(kernel, shape) => {
                    self.ready = Some((kernel, shape));
                    Readiness::Ready
                }
                PipelinedShape::Compiling => Readiness::Compiling,
                PipelinedShape::CannotRun => Readiness::CannotRun,
            },
        )
    }

    fn full_tiles(&mut self) -> Result<Readiness> {
        let Some(abi) = self.full_tiles else {
            return Ok(Readiness::Ready);
        };
        Ok(match self.scanner.kernel_if_ready(abi, self.stream)? {
            Some(_) => Readiness::Ready,
            None => Readiness::Compiling,
        })
    }
}
