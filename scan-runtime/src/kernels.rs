//! Loading kernels: each kernel a scan needs is compiled on its own (the
//! library, the operator and that one kernel's wrapper), as a CUBIN for the
//! device's architecture, through the disk cache, loaded once per context
//! and kept in memory for every scanner of the operator.

use crate::background::{Job, Jobs};
use crate::cache::{CacheKey, DiskCache};
use crate::device::{device_arch, driver_version, target_arch};
use crate::error::{Result, ScanError};
use crate::jit;
use crate::operator::{OperatorKey, OperatorProgram};
use crate::toolkit;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, LaunchConfig};
use kernels_gen::abi::KernelAbi;
use kernels_gen::layout::Layout;
use kernels_gen::{Arch, Kernel, SegmentedKernel};
use scan_core::ScanOp;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How a scanner's kernels were obtained, for reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgramOrigin {
    /// At least one was compiled by NVRTC in this process.
    Compiled,
    /// At least one was read from the disk cache, none compiled.
    DiskCache,
    /// All were already loaded in this process (memory cache), or none
    /// was needed yet.
    Memory,
}

/// Timing of obtaining a scanner's kernels so far (compile or cache read,
/// plus module load), summed over the kernels it loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramStats {
    /// Where they came from (the costliest source of any of them).
    pub origin: ProgramOrigin,
    /// NVRTC compile or disk read time.
    pub compile: Duration,
    /// Driver module load time.
    pub load: Duration,
    /// Kernels compiled or read from disk and loaded (not from memory).
    pub kernels_loaded: usize,
}

impl ProgramStats {
    /// Nothing loaded yet.
    pub const NONE: ProgramStats = ProgramStats {
        origin: ProgramOrigin::Memory,
        compile: Duration::ZERO,
        load: Duration::ZERO,
        kernels_loaded: 0,
    };

    /// These stats followed by `other`'s.
    pub(crate) fn then(self, other: ProgramStats) -> ProgramStats {
        let rank = |o: ProgramOrigin| match o {
            ProgramOrigin::Memory => 0,
            ProgramOrigin::DiskCache => 1,
            ProgramOrigin::Compiled => 2,
        };
        ProgramStats {
            origin: if rank(other.origin) > rank(self.origin) {
                other.origin
            } else {
                self.origin
            },
            compile: self.compile + other.compile,
            load: self.load + other.load,
            kernels_loaded: self.kernels_loaded + other.kernels_loaded,
        }
    }
}

/// A pipelined single pass's launch shape on one device. Also used by the
/// runtime to decide whether the pass can run at all: no shape, no pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PipelinedLaunch {
    /// Resident blocks: blocks per SM (by occupancy) × SMs.
    pub(crate) blocks: u32,
    /// Dynamic shared memory per block.
    pub(crate) shared_bytes: u32,
    /// Threads per block (`Layout::pipelined_threads`).
    pub(crate) block_threads: u32,
}

impl PipelinedLaunch {
    /// The launch of a pipelined kernel over `tiles` tiles: a persistent
    /// grid of at most one resident block per tile, with its dynamic shared
    /// memory.
    pub(crate) fn config(&self, tiles: usize) -> LaunchConfig {
        LaunchConfig {
            grid_dim: ((self.blocks as usize).min(tiles) as u32, 1, 1),
            block_dim: (self.block_threads, 1, 1),
            shared_mem_bytes: self.shared_bytes,
        }
    }
}

/// Prepares a pipelined kernel of `block_threads` threads a block on
/// `ctx`'s device (opting in to its `shared_bytes` of dynamic shared
/// memory) and sizes its persistent grid;
/// `None` where it cannot run: a program built for an architecture without
/// bulk copies (before sm_90), `shared_bytes` 0 (an element it does not
/// support), or a device whose blocks cannot opt in to that much shared
/// memory. Scans then take the single pass with look-back.
fn pipelined_launch(
    ctx: &Arc<CudaContext>,
    arch: Arch,
    shared_bytes: usize,
    block_threads: u32,
    kernel: &CudaFunction,
) -> Result<Option<PipelinedLaunch>> {
    if !arch.has_bulk_copies() || shared_bytes == 0 {
        return Ok(None);
    }
    let opt_in = ctx.attribute(
        cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    )?;
    if shared_bytes > opt_in.max(0) as usize {
        return Ok(None);
    }
    let shared_bytes = shared_bytes as u32;
    let opted_in = kernel.set_attribute(
        cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        shared_bytes as i32,
    );
    if opted_in.is_err() {
        return Ok(None);
    }
    let per_sm = kernel.occupancy_max_active_blocks_per_multiprocessor(
        block_threads,
        shared_bytes as usize,
        None,
    )?;
    let blocks = per_sm * crate::device::multiprocessors(ctx)? as u32;
    Ok((blocks > 0).then_some(PipelinedLaunch {
        blocks,
        shared_bytes,
        block_threads,
    }))
}

/// The dynamic shared memory a deterministic tile pass of `kernel` gets to
/// stage a tile of `tile_bytes` in: all of it where a block may have that
/// much (opting in past the default 48 KiB), else 0 (the kernel then reads
/// its items from global memory, `deterministic.cuh`).
fn tile_pass_shared(
    ctx: &Arc<CudaContext>,
    tile_bytes: usize,
    kernel: &CudaFunction,
) -> Result<u32> {
    const DEFAULT_LIMIT: usize = 48 * 1024;
    let static_bytes = kernel
        .get_attribute(
            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
        )?
        .max(0) as usize;
    if tile_bytes + static_bytes <= DEFAULT_LIMIT {
        return Ok(tile_bytes as u32);
    }
    let opt_in = ctx.attribute(
        cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    )?;
    if tile_bytes + static_bytes > opt_in.max(0) as usize {
        return Ok(0);
    }
    let opted_in = kernel.set_attribute(
        cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        tile_bytes as i32,
    );
    Ok(if opted_in.is_ok() {
        tile_bytes as u32
    } else {
        0
    })
}

/// What programs are compiled to on `ctx`: the architecture, and whether
/// as a CUBIN for it or as PTX. The device's own architecture gets a CUBIN,
/// which the driver loads as it is; an older target named by
/// [`crate::TARGET_ARCH_ENV`] gets that architecture's PTX, which the driver
/// compiles for the device (so the GPU tests run older GPUs' code paths);
/// a device newer than NVRTC knows gets the PTX of the newest architecture
/// it does.
pub(crate) fn compile_target(ctx: &CudaContext) -> Result<(Arch, bool)> {
    let nvrtc = toolkit::nvrtc()?;
    target_for(
        device_arch(ctx)?,
        target_arch(ctx)?,
        nvrtc,
        toolkit::CudaVersion::from_driver(driver_version()),
    )
}

/// [`compile_target`] for a `device` and the `target` asked of it, with
/// `nvrtc` on a driver of version `driver`.
fn target_for(
    device: Arch,
    target: Arch,
    nvrtc: &impl toolkit::NvrtcFacts,
    driver: Option<toolkit::CudaVersion>,
) -> Result<(Arch, bool)> {
    let archs = nvrtc.archs();
    let ptx = |arch: Arch| {
        if !archs.contains(&arch) {
            return Err(ScanError::TargetUnknownToNvrtc {
                nvrtc: nvrtc.version().to_string(),
                target: arch.compute_name(),
            });
        }
        match nvrtc.fit() {
            toolkit::Fit::Any => Ok((arch, false)),
            toolkit::Fit::CubinOnly => Err(ScanError::PtxNewerThanDriver {
                nvrtc: nvrtc.version().to_string(),
                driver: driver.map_or_else(|| "unknown".to_string(), |v| v.to_string()),
                target: arch.compute_name(),
            }),
        }
    };
    if target != device {
        return ptx(target);
    }
    if archs.contains(&device) {
        return Ok((device, true));
    }
    let newest = archs
        .iter()
        .copied()
        .filter(|a| *a <= device)
        .max()
        .unwrap_or(Arch::MIN_SUPPORTED);
    ptx(newest)
}

/// How a kernel is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Build {
    /// With NVRTC's full optimization: the kernels scans prefer.
    Optimized,
    /// In NVRTC's fast-compile mode ([`kernels_gen::QUICK_BUILD_OPTION`]):
    /// what a scan runs on while the optimized build of its kernel
    /// compiles on another thread (`GpuScanner::kernel_now`). Same
    /// results, slower code, about half the compile of a CUBIN (of PTX for
    /// an older target, only NVRTC's part is shorter: the driver's own
    /// compile of the PTX is a full one).
    Quick,
}

/// The environment variable that says which kernels are built quick
/// ([`kernels_gen::QUICK_BUILD_OPTION`]): `auto` (or unset) those a scan
/// runs on while their optimized builds compile in the background
/// ([`Tuning::background_compile`](crate::Tuning::background_compile));
/// `never` none; `always` every one (how the GPU tests check the quick
/// builds' results). Another value is [`ScanError::BadQuickBuilds`].
pub const QUICK_BUILDS_ENV: &str = "GPU_SCAN_QUICK_BUILDS";

/// The values of [`QUICK_BUILDS_ENV`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QuickBuilds {
    Auto,
    Never,
    Always,
}

/// [`QUICK_BUILDS_ENV`], read once.
fn quick_builds() -> Result<QuickBuilds> {
    static SETTING: OnceLock<std::result::Result<QuickBuilds, String>> = OnceLock::new();
    SETTING
        .get_or_init(|| parse_quick_builds(std::env::var(QUICK_BUILDS_ENV).ok()))
        .clone()
        .map_err(|value| ScanError::BadQuickBuilds { value })
}

/// A value of [`QUICK_BUILDS_ENV`] (`None`: unset), or the value refused.
fn parse_quick_builds(value: Option<String>) -> std::result::Result<QuickBuilds, String> {
    let Some(value) = value else {
        return Ok(QuickBuilds::Auto);
    };
    match value.trim() {
        "" | "auto" => Ok(QuickBuilds::Auto),
        "never" => Ok(QuickBuilds::Never),
        "always" => Ok(QuickBuilds::Always),
        _ => Err(value),
    }
}

/// The NVRTC options of a program for `target` ([`compile_target`]) built
/// as `build`, or quick wherever [`QUICK_BUILDS_ENV`] says `always`.
fn compile_options(target: (Arch, bool), build: Build) -> Result<Vec<String>> {
    Ok(options_under(target, build, quick_builds()?))
}

/// [`compile_options`] under the setting `setting` of [`QUICK_BUILDS_ENV`].
fn options_under((arch, cubin): (Arch, bool), build: Build, setting: QuickBuilds) -> Vec<String> {
    let mut options = if cubin {
        kernels_gen::nvrtc_cubin_options(arch)
    } else {
        kernels_gen::nvrtc_options(arch)
    };
    if build == Build::Quick || setting == QuickBuilds::Always {
        options.push(kernels_gen::QUICK_BUILD_OPTION.to_string());
    }
    options
}

/// The oldest NVRTC with the fast-compile mode of quick builds.
const QUICK_BUILD_NVRTC: toolkit::CudaVersion = toolkit::CudaVersion {
    major: 12,
    minor: 8,
};

/// Set once a quick build failed to compile: this process then builds
/// every kernel optimized (a compile's errors reach the caller from that
/// build, never from a quick one).
static QUICK_BUILDS_REFUSED: AtomicBool = AtomicBool::new(false);

/// Whether a scan may run on a quick build while the optimized one
/// compiles: [`QUICK_BUILDS_ENV`] says `auto`, NVRTC has the fast-compile
/// mode, and no quick build failed in this process. (With `always` every
/// build is quick already, with `never` none is.)
fn quick_builds_available() -> Result<bool> {
    Ok(quick_builds()? == QuickBuilds::Auto
        && toolkit::nvrtc()?.version() >= QUICK_BUILD_NVRTC
        && !QUICK_BUILDS_REFUSED.load(Ordering::Relaxed))
}

/// Compiles `source` for `target` ([`compile_target`]; through the disk
/// cache) and loads it in `ctx`. An image from the disk cache that the
/// driver refuses to load is deleted and compiled anew, so a bad entry
/// costs one compile, not every later process.
pub(crate) fn build_module(
    ctx: &Arc<CudaContext>,
    disk: &DiskCache,
    target: (Arch, bool),
    name: &'static str,
    source: &str,
) -> Result<(Arc<CudaModule>, ProgramStats)> {
    build_module_as(ctx, disk, target, Build::Optimized, name, source)
}

/// [`build_module`], built as `build`.
fn build_module_as(
    ctx: &Arc<CudaContext>,
    disk: &DiskCache,
    target: (Arch, bool),
    build: Build,
    name: &'static str,
    source: &str,
) -> Result<(Arc<CudaModule>, ProgramStats)> {
    let arch = target.0;
    let options = compile_options(target, build)?;
    let driver = driver_version();
    let start = Instant::now();
    let mut compiled = jit::compile(name, source, options.clone(), arch, driver, disk)?;
    let mut compile = start.elapsed();
    let mut load_start = Instant::now();
    let module = match ctx.load_module(compiled.image.to_module_image()) {
        Ok(module) => module,
        Err(_) if compiled.from_disk => {
            jit::forget(source, &options, arch, driver, disk);
            let start = Instant::now();
            compiled = jit::compile(name, source, options, arch, driver, disk)?;
            compile += start.elapsed();
            load_start = Instant::now();
            ctx.load_module(compiled.image.to_module_image())?
        }
        Err(e) => return Err(e.into()),
    };
    let stats = ProgramStats {
        origin: if compiled.from_disk {
            ProgramOrigin::DiskCache
        } else {
            ProgramOrigin::Compiled
        },
        compile,
        load: load_start.elapsed(),
        kernels_loaded: 1,
    };
    Ok((module, stats))
}

/// The programs of one application (recurrences, sparse products) on one
/// context, by their key `P`: each compiled the first time it is needed
/// (through the disk cache), loaded, and kept with its kernels by `K`.
pub(crate) struct ProgramSet<P, K> {
    ctx: Arc<CudaContext>,
    target: (Arch, bool),
    disk: DiskCache,
    /// What `build_module` names the programs (its log and the cache's).
    name: &'static str,
    loaded: HashMap<P, (Arc<CudaModule>, HashMap<K, CudaFunction>)>,
    stats: ProgramStats,
}

impl<P: std::hash::Hash + Eq + Copy, K: std::hash::Hash + Eq + Copy> ProgramSet<P, K> {
    /// No programs yet, for `ctx`'s device ([`compile_target`]).
    pub(crate) fn new(
        ctx: &Arc<CudaContext>,
        disk: &DiskCache,
        name: &'static str,
    ) -> Result<Self> {
        Ok(ProgramSet {
            ctx: ctx.clone(),
            target: compile_target(ctx)?,
            disk: disk.clone(),
            name,
            loaded: HashMap::new(),
            stats: ProgramStats::NONE,
        })
    }

    /// The context.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The architecture the programs are compiled for.
    pub(crate) fn arch(&self) -> Arch {
        self.target.0
    }

    /// How the programs loaded so far were obtained, summed.
    pub(crate) fn stats(&self) -> ProgramStats {
        self.stats
    }

    /// The kernels of `program`: `source()` compiled and loaded the first
    /// time, its `kernels` (key, exported name) looked up.
    pub(crate) fn kernels(
        &mut self,
        program: &P,
        source: impl FnOnce() -> String,
        kernels: impl IntoIterator<Item = (K, String)>,
    ) -> Result<HashMap<K, CudaFunction>> {
        if let Some((_, functions)) = self.loaded.get(program) {
            return Ok(functions.clone());
        }
        let (module, stats) =
            build_module(&self.ctx, &self.disk, self.target, self.name, &source())?;
        let mut functions = HashMap::new();
        for (kernel, symbol) in kernels {
            functions.insert(kernel, module.load_function(&symbol)?);
        }
        self.stats = self.stats.then(stats);
        self.loaded.insert(*program, (module, functions.clone()));
        Ok(functions)
    }
}

/// One kernel of one operator, loaded in one context.
pub(crate) struct LoadedKernel {
    _module: Arc<CudaModule>,
    /// The kernel.
    pub(crate) function: CudaFunction,
    /// How a pipelined kernel launches on this device; `None` for the
    /// others, and for a pipelined kernel that cannot run here.
    pub(crate) pipelined: Option<PipelinedLaunch>,
    /// Dynamic shared memory a deterministic tile pass stages its tile in
    /// (a pipelined stage's tile, where the device allows a block that
    /// much: [`tile_pass_shared`]); 0 for the other kernels, and where it
    /// reads its items from global memory.
    pub(crate) tile_shared: u32,
    /// Whether a launch's arguments were checked against the ABI table
    /// ([`crate::launch::launch_loaded`]).
    pub(crate) args_checked: AtomicBool,
}

type KernelKey = (usize, OperatorKey, KernelAbi, Arch, Build);

fn loaded_kernels() -> &'static Mutex<HashMap<KernelKey, Arc<LoadedKernel>>> {
    static KERNELS: OnceLock<Mutex<HashMap<KernelKey, Arc<LoadedKernel>>>> = OnceLock::new();
    KERNELS.get_or_init(Default::default)
}

/// The dynamic shared memory kernel `abi` asks for where it is a pipelined
/// pass (in either direction), else `None`.
fn pipelined_dynamic_shared(abi: KernelAbi, layout: &Layout) -> Option<usize> {
    match abi.forward() {
        KernelAbi::Plain(
            Kernel::PipelinedInclusive
            | Kernel::PipelinedExclusive
            | Kernel::PipelinedDeterministicInclusive
            | Kernel::PipelinedDeterministicExclusive,
        ) => Some(layout.pipelined_shared_bytes),
        KernelAbi::Segmented(SegmentedKernel::Pipelined { .. }, _) => {
            Some(layout.pipelined_segmented_shared_bytes)
        }
        _ => None,
    }
}

/// Kernel `abi` of `Op` in `ctx`: from memory when a scanner of `Op` loaded
/// it before, else compiled (or read from the disk cache) and loaded. A
/// compile of it already running in the background is waited for, not
/// repeated.
pub(crate) fn load_kernel(
    op: &OperatorProgram,
    ctx: &Arc<CudaContext>,
    disk: &DiskCache,
    abi: KernelAbi,
) -> Result<(Arc<LoadedKernel>, ProgramStats)> {
    let target = compile_target(ctx)?;
    let key = kernel_key(op, ctx, abi, target.0, Build::Optimized);
    compiles().wait(|k| *k == key);
    compiles().forget(&key);
    if let Some(k) = loaded(&key) {
        return Ok((k, ProgramStats::NONE));
    }
    load_new_kernel(op, ctx, disk, target, key, &op.source(&[abi]))
}

/// The quick build ([`Build::Quick`]) of kernel `abi` of `Op` in `ctx`:
/// from memory, the disk cache, or compiled now; `None` where quick builds
/// are not available ([`quick_builds_available`]) or NVRTC refused this
/// one (then none is tried again in this process, and the caller builds
/// the kernel optimized, whose errors it returns). Other errors (the
/// driver's) are returned.
pub(crate) fn quick_kernel(
    op: &OperatorProgram,
    ctx: &Arc<CudaContext>,
    disk: &DiskCache,
    abi: KernelAbi,
) -> Result<Option<(Arc<LoadedKernel>, ProgramStats)>> {
    if !quick_builds_available()? {
        return Ok(None);
    }
    let target = compile_target(ctx)?;
    let key = kernel_key(op, ctx, abi, target.0, Build::Quick);
    if let Some(k) = loaded(&key) {
        return Ok(Some((k, ProgramStats::NONE)));
    }
    match load_new_kernel(op, ctx, disk, target, key, &op.source(&[abi])) {
        Ok(loaded) => Ok(Some(loaded)),
        Err(ScanError::Compile { .. }) => {
            QUICK_BUILDS_REFUSED.store(true, Ordering::Relaxed);
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Whether a kernel can be had without an NVRTC compile
/// ([`kernel_without_compiling`]).
pub(crate) enum Availability {
    /// Loaded (from memory, or from the disk cache just now).
    Ready(Arc<LoadedKernel>, ProgramStats),
    /// Compiling in the background already.
    Compiling,
    /// It needs a compile, not started: [`ColdKernel::compile_in_background`].
    Cold(ColdKernel),
}

/// A kernel that needs an NVRTC compile, and what the compile takes.
pub(crate) struct ColdKernel {
    target: (Arch, bool),
    key: KernelKey,
    source: String,
}

impl ColdKernel {
    /// Compiles and loads the kernel on another thread (unless its compile
    /// is running already); where no thread can be started, here.
    pub(crate) fn compile_in_background(
        self,
        op: &OperatorProgram,
        ctx: &Arc<CudaContext>,
        disk: &DiskCache,
    ) -> Result<()> {
        let ColdKernel {
            target,
            key,
            source,
        } = self;
        let (job_op, job_ctx, job_disk, job_source) =
            (*op, ctx.clone(), disk.clone(), source.clone());
        let started = compiles().start(key, move || {
            load_new_kernel(&job_op, &job_ctx, &job_disk, target, key, &job_source).map(|_| ())
        });
        if started || compiles().state(&key).is_some() || loaded(&key).is_some() {
            return Ok(());
        }
        load_new_kernel(op, ctx, disk, target, key, &source).map(|_| ())
    }
}

/// Kernel `abi` of `Op`, if it can be had without an NVRTC compile (from
/// memory, or from the disk cache and loaded now); otherwise whether its
/// compile is running in the background, or what it takes to start one.
/// A compile that failed in the background is done again here, so its
/// error reaches the caller.
pub(crate) fn kernel_without_compiling(
    op: &OperatorProgram,
    ctx: &Arc<CudaContext>,
    disk: &DiskCache,
    abi: KernelAbi,
) -> Result<Availability> {
    let target = compile_target(ctx)?;
    let key = kernel_key(op, ctx, abi, target.0, Build::Optimized);
    if let Some(k) = loaded(&key) {
        return Ok(Availability::Ready(k, ProgramStats::NONE));
    }
    match compiles().state(&key) {
        Some(Job::Running) => return Ok(Availability::Compiling),
        Some(Job::Failed) => {
            let (kernel, stats) = load_kernel(op, ctx, disk, abi)?;
            return Ok(Availability::Ready(kernel, stats));
        }
        None => {}
    }
    let source = op.source(&[abi]);
    let on_disk = disk
        .entry_path(&cache_key(target, Build::Optimized, &source)?)
        .is_some_and(|path| path.exists());
    if on_disk {
        let (kernel, stats) = load_new_kernel(op, ctx, disk, target, key, &source)?;
        return Ok(Availability::Ready(kernel, stats));
    }
    Ok(Availability::Cold(ColdKernel {
        target,
        key,
        source,
    }))
}

/// Waits for every kernel of `op` in `ctx` compiling in the background.
pub(crate) fn wait_for_compiles(op: &OperatorProgram, ctx: &CudaContext) {
    let (context, op) = (ctx.cu_ctx() as usize, op.key);
    compiles().wait(|k| k.0 == context && k.1 == op);
}

fn kernel_key(
    op: &OperatorProgram,
    ctx: &CudaContext,
    abi: KernelAbi,
    arch: Arch,
    build: Build,
) -> KernelKey {
    (ctx.cu_ctx() as usize, op.key, abi, arch, build)
}

fn loaded(key: &KernelKey) -> Option<Arc<LoadedKernel>> {
    loaded_kernels()
        .lock()
        .expect("kernel cache poisoned")
        .get(key)
        .cloned()
}

/// Kernels compiling on other threads (background compiles).
fn compiles() -> &'static Jobs<KernelKey> {
    static COMPILES: OnceLock<Jobs<KernelKey>> = OnceLock::new();
    COMPILES.get_or_init(Jobs::new)
}

/// The disk cache's key of `source` compiled for `target` as `build`, as
/// [`build_module_as`] looks it up.
fn cache_key(target: (Arch, bool), build: Build, source: &str) -> Result<CacheKey> {
    Ok(CacheKey::new(
        source,
        &compile_options(target, build)?,
        target.0,
        driver_version(),
        toolkit::nvrtc()?.version(),
    ))
}

/// Compiles (or reads from the disk cache) and loads the kernel of `key`
/// from `source`, the program of its one kernel, and keeps it in memory.
fn load_new_kernel(
    op: &OperatorProgram,
    ctx: &Arc<CudaContext>,
    disk: &DiskCache,
    target: (Arch, bool),
    key: KernelKey,
    source: &str,
) -> Result<(Arc<LoadedKernel>, ProgramStats)> {
    // One load of a kernel at a time: threads that need it at once (in the
    // foreground or the background) wait for the first, which compiles it
    // once, and find it loaded.
    let lock = load_lock(&key);
    let _one_at_a_time = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(kernel) = loaded(&key) {
        return Ok((kernel, ProgramStats::NONE));
    }
    build_and_load(op, ctx, disk, target, key, source)
}

/// The lock of one kernel's loads ([`load_new_kernel`]); one a kernel key.
fn load_lock(key: &KernelKey) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<KernelKey, Arc<Mutex<()>>>>> = OnceLock::new();
    LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(*key)
        .or_default()
        .clone()
}

/// Compiles (or reads from the disk cache) and loads kernel `key` of `op`.
fn build_and_load(
    op: &OperatorProgram,
    ctx: &Arc<CudaContext>,
    disk: &DiskCache,
    target: (Arch, bool),
    key: KernelKey,
    source: &str,
) -> Result<(Arc<LoadedKernel>, ProgramStats)> {
    let (abi, build) = (key.2, key.4);
    let (module, stats) = build_module_as(ctx, disk, target, build, op.name, source)?;
    let function = module.load_function(&abi.symbol(op.name))?;
    let layout = op.layout;
    let pipelined = match pipelined_dynamic_shared(abi, &layout) {
        Some(bytes) => pipelined_launch(
            ctx,
            target.0,
            bytes,
            layout.pipelined_threads(abi, target.0),
            &function,
        )?,
        None => None,
    };
    let tile_shared = match abi.forward() {
        KernelAbi::Plain(
            Kernel::DeterministicReduceTiles
            | Kernel::DeterministicScanTilesInclusive
            | Kernel::DeterministicScanTilesExclusive,
        ) => tile_pass_shared(ctx, layout.pipelined_tile_bytes, &function)?,
        _ => 0,
    };
    let kernel = Arc::new(LoadedKernel {
        _module: module,
        function,
        pipelined,
        tile_shared,
        args_checked: AtomicBool::new(false),
    });
    loaded_kernels()
        .lock()
        .expect("kernel cache poisoned")
        .insert(key, kernel.clone());
    Ok((kernel, stats))
}

/// The complete CUDA program of `Op` with the kernels `kernels` (from
/// [`KernelAbi::all`], say): the library, the layout of `Op`'s element and
/// tiles, `Op`'s part ([`ScanOp::CUDA_SOURCE`]) and the kernels' wrappers.
/// The runtime compiles such programs, each with the kernels a kind of scan
/// needs.
///
/// ```
/// use gpu_scan::kernels_gen::abi::KernelAbi;
/// use gpu_scan::{scan_op, scan_runtime::program_source};
///
/// #[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
/// struct Sum;
///
/// let cuda = program_source::<Sum>(&KernelAbi::all().collect::<Vec<_>>());
/// assert!(cuda.contains("struct gpu_scan_layout_sum {"));
/// assert!(cuda.contains(<Sum as gpu_scan::ScanOp>::CUDA_SOURCE));
/// assert!(cuda.contains("gpu_scan_sum_single_pass_inclusive("));
/// ```
pub fn program_source<Op: ScanOp>(kernels: &[KernelAbi]) -> String {
    OperatorProgram::of::<Op>().source(kernels)
}

/// The layout of `Op`'s program: every size the host and the kernels share,
/// computed once, in Rust ([`Layout`]), and printed into the program.
pub fn layout<Op: ScanOp>() -> Layout {
    LayoutOf::<Op>::LAYOUT
}

/// [`layout`] as a constant, so the launch paths compute nothing for it.
struct LayoutOf<Op>(std::marker::PhantomData<Op>);

impl<Op: ScanOp> LayoutOf<Op> {
    const LAYOUT: Layout = Layout::new(
        std::mem::size_of::<Op::Element>(),
        <Op::Element as scan_core::ScanElement>::REGISTERS,
        Op::BLOCK_THREADS,
        Op::ITEMS_PER_THREAD,
    )
    .with_operator_registers(
        Op::LIVE_TEMPORARIES * <Op::Element as scan_core::ScanElement>::SCALAR_REGISTERS as u32,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gen::{Direction, FlagFormat, SegmentedStrategy};
    use toolkit::{CudaVersion, Fit};

    struct Facts(CudaVersion, Fit, Vec<Arch>);
    impl toolkit::NvrtcFacts for Facts {
        fn version(&self) -> CudaVersion {
            self.0
        }
        fn fit(&self) -> Fit {
            self.1
        }
        fn archs(&self) -> &[Arch] {
            &self.2
        }
    }

    /// The compile target for each device, target and NVRTC: a CUBIN of
    /// the device's own architecture where NVRTC knows it, else PTX, and
    /// PTX only where the driver can compile it.
    #[test]
    fn compile_targets_follow_nvrtc_and_the_driver() {
        let v = |major, minor| CudaVersion { major, minor };
        let up_to_90 = vec![
            Arch::SM_75,
            Arch::SM_80,
            Arch::SM_86,
            Arch::SM_89,
            Arch::SM_90,
        ];
        let nvrtc_12_4 = Facts(v(12, 4), Fit::Any, up_to_90.clone());
        let driver = Some(v(12, 4));
        // The device's own architecture: a CUBIN.
        assert!(matches!(
            target_for(Arch::SM_90, Arch::SM_90, &nvrtc_12_4, driver),
            Ok((Arch::SM_90, true))
        ));
        // An older target: its PTX.
        assert!(matches!(
            target_for(Arch::SM_90, Arch::SM_80, &nvrtc_12_4, driver),
            Ok((Arch::SM_80, false))
        ));
        // A device newer than NVRTC knows: the newest PTX it makes.
        assert!(matches!(
            target_for(Arch::SM_120, Arch::SM_120, &nvrtc_12_4, driver),
            Ok((Arch::SM_90, false))
        ));
        // A target NVRTC does not know: a typed error.
        let err = target_for(Arch::SM_120, Arch::SM_100, &nvrtc_12_4, driver).unwrap_err();
        assert!(
            matches!(err, ScanError::TargetUnknownToNvrtc { .. }),
            "{err}"
        );
        // NVRTC 12.9 on a 12.4 driver: CUBINs, but no PTX.
        let nvrtc_12_9 = Facts(v(12, 9), Fit::CubinOnly, up_to_90);
        assert!(matches!(
            target_for(Arch::SM_90, Arch::SM_90, &nvrtc_12_9, driver),
            Ok((Arch::SM_90, true))
        ));
        for (device, target) in [(Arch::SM_90, Arch::SM_80), (Arch::SM_120, Arch::SM_120)] {
            let err = target_for(device, target, &nvrtc_12_9, driver).unwrap_err();
            assert!(matches!(err, ScanError::PtxNewerThanDriver { .. }), "{err}");
            assert!(err.to_string().contains("NVRTC 12.9 makes PTX"), "{err}");
        }
    }

    #[test]
    fn quick_builds_add_the_fast_compile_option_and_nothing_else() {
        for target in [(Arch::SM_90, true), (Arch::SM_80, false)] {
            let optimized = options_under(target, Build::Optimized, QuickBuilds::Auto);
            let quick = options_under(target, Build::Quick, QuickBuilds::Auto);
            assert!(!optimized.iter().any(|o| o.contains("fast-compile")));
            assert_eq!(quick[..optimized.len()], optimized[..]);
            assert_eq!(quick[optimized.len()..], [kernels_gen::QUICK_BUILD_OPTION]);
            // `never` leaves a quick build quick (no scan asks for one
            // then), `always` makes every build quick.
            assert_eq!(
                options_under(target, Build::Quick, QuickBuilds::Never),
                quick
            );
            assert_eq!(
                options_under(target, Build::Optimized, QuickBuilds::Always),
                quick
            );
        }
        // So a quick build is its own disk-cache entry.
        let source = "extern \"C\" __global__ void k() {}";
        let key = |build| {
            CacheKey::new(
                source,
                &options_under((Arch::SM_90, true), build, QuickBuilds::Auto),
                Arch::SM_90,
                13000,
                CudaVersion {
                    major: 13,
                    minor: 0,
                },
            )
        };
        assert_ne!(key(Build::Optimized), key(Build::Quick));
    }

    #[test]
    fn the_quick_builds_variable_takes_three_values() {
        let parse = |v: Option<&str>| parse_quick_builds(v.map(String::from));
        assert_eq!(parse(None), Ok(QuickBuilds::Auto));
        assert_eq!(parse(Some("")), Ok(QuickBuilds::Auto));
        assert_eq!(parse(Some("auto")), Ok(QuickBuilds::Auto));
        assert_eq!(parse(Some(" never ")), Ok(QuickBuilds::Never));
        assert_eq!(parse(Some("always")), Ok(QuickBuilds::Always));
        assert_eq!(parse(Some("sometimes")), Err("sometimes".to_string()));
        let err = ScanError::BadQuickBuilds {
            value: "sometimes".into(),
        };
        assert!(err.to_string().contains("auto, never or always"), "{err}");
    }

    #[test]
    fn pipelined_kernels_get_their_shared_memory_in_both_directions() {
        let layout = Layout::new(4, 1, 256, 16);
        for inclusive in [
            Kernel::PipelinedInclusive,
            Kernel::PipelinedExclusive,
            Kernel::PipelinedDeterministicInclusive,
            Kernel::PipelinedDeterministicExclusive,
        ] {
            for direction in [Direction::Forward, Direction::Reverse] {
                let abi = KernelAbi::plain(inclusive).in_direction(direction).unwrap();
                assert_eq!(
                    pipelined_dynamic_shared(abi, &layout),
                    Some(layout.pipelined_shared_bytes),
                    "{abi:?}"
                );
            }
        }
        let segmented = KernelAbi::segmented(
            SegmentedKernel::Pipelined {
                inclusive: true,
                source: FlagFormat::Bits.into(),
            },
            SegmentedStrategy::ConditionalIndexing,
        );
        assert_eq!(
            pipelined_dynamic_shared(segmented, &layout),
            Some(layout.pipelined_segmented_shared_bytes)
        );
        for other in KernelAbi::all().filter(|k| {
            !matches!(
                k.forward(),
                KernelAbi::Plain(
                    Kernel::PipelinedInclusive
                        | Kernel::PipelinedExclusive
                        | Kernel::PipelinedDeterministicInclusive
                        | Kernel::PipelinedDeterministicExclusive
                ) | KernelAbi::Segmented(SegmentedKernel::Pipelined { .. }, _)
            )
        }) {
            assert_eq!(pipelined_dynamic_shared(other, &layout), None, "{other:?}");
        }
    }
}
