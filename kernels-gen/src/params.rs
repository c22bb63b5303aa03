//! Generation parameters: tile shape and target architecture.

/// A CUDA compute capability, e.g. `sm_90` for Hopper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Major version (9 for Hopper).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl Arch {
    /// Turing (T4, RTX 20).
    pub const SM_75: Arch = Arch { major: 7, minor: 5 };
    /// Ampere (A100).
    pub const SM_80: Arch = Arch { major: 8, minor: 0 };
    /// Ampere (RTX 30, A10, A40).
    pub const SM_86: Arch = Arch { major: 8, minor: 6 };
    /// Ada (L4, L40, RTX 40).
    pub const SM_89: Arch = Arch { major: 8, minor: 9 };
    /// Hopper (H100, H200): the architecture the defaults are tuned for,
    /// and the first with bulk copies (TMA) and mbarriers, which the
    /// pipelined single pass needs.
    pub const SM_90: Arch = Arch { major: 9, minor: 0 };
    /// Blackwell (B200).
    pub const SM_100: Arch = Arch {
        major: 10,
        minor: 0,
    };
    /// Blackwell (RTX 50, RTX PRO).
    pub const SM_120: Arch = Arch {
        major: 12,
        minor: 0,
    };
    /// The oldest architecture the generated code supports, and the oldest
    /// CUDA 13 compiles for.
    pub const MIN_SUPPORTED: Arch = Arch::SM_75;
    /// Every architecture CUDA 13 compiles for, oldest first: one embedded
    /// source serves them all (Hopper-only code sits behind `__CUDA_ARCH__`
    /// guards).
    pub const CUDA_13: [Arch; 7] = [
        Arch::SM_75,
        Arch::SM_80,
        Arch::SM_86,
        Arch::SM_89,
        Arch::SM_90,
        Arch::SM_100,
        Arch::SM_120,
    ];

    /// Parses `sm_90`, `compute_90`, `90` or `9.0`.
    pub fn parse(text: &str) -> Option<Arch> {
        let t = text.trim();
        let digits = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("compute_"))
            .unwrap_or(t);
        if let Some((major, minor)) = digits.split_once('.') {
            return Some(Arch {
                major: major.parse().ok()?,
                minor: minor.parse().ok()?,
            });
        }
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Some(Arch {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }

    /// Whether this architecture has the Hopper features the pipelined
    /// single pass is built from (bulk copies, mbarriers with transaction
    /// counts).
    pub fn has_bulk_copies(self) -> bool {
        self >= Arch::SM_90
    }

    /// `sm_90`-style name, as ptxas spells it.
    pub fn sm_name(self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }

    /// `compute_90`-style name, as NVRTC's `--gpu-architecture` takes it.
    pub fn compute_name(self) -> String {
        format!("compute_{}{}", self.major, self.minor)
    }

    /// The value of `__CUDA_ARCH__` on this architecture (900 for `sm_90`).
    pub fn cuda_arch_macro(self) -> u32 {
        self.major * 100 + self.minor * 10
    }
}

/// How many elements each thread owns in a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ItemsPerThread {
    /// Chosen from the element size by [`auto_items_per_thread`].
    Auto,
    /// A fixed count.
    Fixed(u32),
}

/// Parameters of one generated program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GenParams {
    /// Threads per block (a multiple of 32, at most 1024); `None`: chosen
    /// from the element size by [`auto_block_threads`].
    pub block_threads: Option<u32>,
    /// Elements per thread.
    pub items_per_thread: ItemsPerThread,
}

impl Default for GenParams {
    fn default() -> Self {
        GenParams {
            block_threads: None,
            items_per_thread: ItemsPerThread::Auto,
        }
    }
}

/// Why a [`GenParams`] was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidParams(pub String);

impl std::fmt::Display for InvalidParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidParams {}

/// Most items per thread allowed (registers hold a thread's items).
pub const MAX_ITEMS_PER_THREAD: u32 = 32;

impl GenParams {
    /// Checks the tile shape is one the kernels can run.
    pub fn validate(&self) -> Result<(), InvalidParams> {
        let b = self.block_threads.unwrap_or(DEFAULT_BLOCK_THREADS);
        if b == 0 || b % 32 != 0 || b > 1024 {
            return Err(InvalidParams(format!(
                "block_threads must be a multiple of 32 between 32 and 1024, not {b}"
            )));
        }
        if let ItemsPerThread::Fixed(i) = self.items_per_thread {
            if i == 0 || i > MAX_ITEMS_PER_THREAD {
                return Err(InvalidParams(format!(
                    "items_per_thread must be between 1 and {MAX_ITEMS_PER_THREAD}, not {i}"
                )));
            }
        }
        Ok(())
    }

    /// Items per thread for an element of `element_size` bytes.
    pub const fn items_per_thread_for(&self, element_size: usize) -> u32 {
        match self.items_per_thread {
            ItemsPerThread::Auto => auto_items_per_thread(element_size),
            ItemsPerThread::Fixed(i) => i,
        }
    }

    /// Threads per block for an element of `element_size` bytes.
    pub const fn block_threads_for(&self, element_size: usize) -> u32 {
        match self.block_threads {
            Some(b) => b,
            None => auto_block_threads(element_size, self.items_per_thread_for(element_size)),
        }
    }

    /// Elements per tile (one block's share) for an element of `element_size` bytes.
    pub const fn tile_items_for(&self, element_size: usize) -> u32 {
        self.block_threads_for(element_size) * self.items_per_thread_for(element_size)
    }
}

/// The largest element `#[scan_op]` accepts, in bytes: every size from 1 to
/// this compiles and runs (`tests/nvrtc_compile.rs` compiles them all).
pub const MAX_ELEMENT_SIZE: usize = 256;

/// The most registers an element's fields may take
/// ([`crate::ir::Prim::registers`] summed: one per field of up to 4 bytes, a
/// `u8` or `bool` too, two per 8-byte field); `#[scan_op]` rejects an
/// element past it. Within it every kernel compiles without spilling for
/// every element size on every architecture (`tests/nvrtc_sizes.rs`): up to
/// 112 bytes of bytes, 224 of half-words, and 256 of 4- or 8-byte fields.
/// Past it, elements of bytes of 161 bytes and more, and of half-words of
/// 234 and more, spilled in the column scan and the single pass's
/// carry-out even held packed (ptxas 13.0): their copies through memory
/// move a byte or half-word at a time.
pub const MAX_ELEMENT_REGISTERS: usize = 112;

/// The most registers an element may take split into its fields
/// ([`crate::ir::Prim::registers`] summed) and still be held that way:
/// past it, and past the words its bytes fill, [`packed_element`] holds.
pub const PACKED_ELEMENT_MIN_REGISTERS: usize = 33;

/// Whether the kernels hold an element of `element_size` bytes whose
/// fields take `element_registers` registers as its bytes in 32-bit words
/// (the prelude's `scan_packed`), unpacking it only inside `combine`:
/// where its fields take more registers than its words would, and at
/// least [`PACKED_ELEMENT_MIN_REGISTERS`]. Elements of many bytes,
/// half-words or bools are held so: split into fields, a 200-byte struct of
/// bytes took 200 registers per value, and the look-back kernels, which
/// keep several values, spilled kilobytes at every such size past about
/// 115 bytes (ptxas 13.0, `tests/nvrtc_sizes.rs`; from 89 bytes on
/// sm_100 and sm_120). Smaller ones keep their fields, which costs no
/// extracting and inserting in `combine`.
///
/// ```
/// use kernels_gen::packed_element;
///
/// assert!(packed_element(201, 201)); // [u8; 201]
/// assert!(!packed_element(256, 64)); // [u32; 64]
/// assert!(!packed_element(24, 24)); // [u8; 24]: few registers either way
/// ```
pub const fn packed_element(element_size: usize, element_registers: usize) -> bool {
    element_registers >= PACKED_ELEMENT_MIN_REGISTERS
        && element_registers > element_size.div_ceil(4)
}

/// Whether the column scans ask ptxas to fit one block per SM on sm_90
/// (every other architecture always asks for one: `SCAN_BOUNDS`): for
/// elements over 128 bytes, and for elements whose fields take more
/// registers than their bytes fill words (structs of bytes or half-words).
/// Without it ptxas 13.0 picks its own register budget on sm_90, which
/// capped a 172-byte element's column scan at 128 registers and a 14-byte
/// one of seven `u16`s at 80, and both spilled (`tests/nvrtc_sizes.rs`);
/// elements of whole words keep the default, which takes fewer registers
/// (a `u32` column scan: 58 against 64).
///
/// ```
/// use kernels_gen::column_one_block_per_sm;
///
/// assert!(column_one_block_per_sm(14, 7)); // [u16; 7]
/// assert!(column_one_block_per_sm(172, 43)); // [u32; 43]
/// assert!(!column_one_block_per_sm(16, 4)); // [u32; 4]
/// ```
pub const fn column_one_block_per_sm(element_size: usize, element_registers: usize) -> bool {
    element_size > 128 || element_registers > element_size.div_ceil(4)
}

/// Threads per block of the tile kernels unless an operator or the element
/// size asks for fewer.
pub const DEFAULT_BLOCK_THREADS: u32 = 256;

/// Static shared memory a block may have without opting in (every CUDA
/// architecture): the tile kernels' staging must fit in it.
pub const STATIC_SHARED_LIMIT: usize = 48 * 1024;

/// An upper bound of the static shared memory of the tile kernels for
/// tiles of `block_threads` × `items_per_thread` elements of `element_size`
/// bytes: the largest is the segmented single pass's, a tile of staging with
/// a padding slot per 32 elements, a total and a flag per warp, and the
/// tile's prefix.
pub const fn tile_shared_bytes(
    element_size: usize,
    block_threads: u32,
    items_per_thread: u32,
) -> usize {
    let tile = block_threads as usize * items_per_thread as usize;
    let warps = block_threads as usize / 32;
    (tile + tile / 32 + warps + 2) * element_size + warps + 16
}

/// Whether the tile kernels of this shape fit in [`STATIC_SHARED_LIMIT`].
pub const fn tile_fits(element_size: usize, block_threads: u32, items_per_thread: u32) -> bool {
    tile_shared_bytes(element_size, block_threads, items_per_thread) <= STATIC_SHARED_LIMIT
}

/// Threads per block chosen from the element size: [`DEFAULT_BLOCK_THREADS`],
/// halved (down to one warp) until a tile of `items_per_thread` items per
/// thread fits in static shared memory. Elements of up to 179 bytes keep
/// 256 threads (one item each); larger ones, up to 256 bytes, take 128.
pub const fn auto_block_threads(element_size: usize, items_per_thread: u32) -> u32 {
    let mut threads = DEFAULT_BLOCK_THREADS;
    while threads > 32 && !tile_fits(element_size, threads, items_per_thread) {
        threads /= 2;
    }
    threads
}

/// Items per thread chosen from the element size: about 96 bytes of elements
/// per thread, between 1 and 16 items. Measured on the H200 (single pass,
/// 2^28 elements, 256 threads), 96 bytes per thread beat 64 for 8-byte
/// affine maps (12 items: 69.9% of copy speed against 59.0% with 8); for
/// `u32` sums 24 items gained little over 16 (56.5% against 53.3%) and made
/// ptxas spill in some segmented kernels, so small elements stay at 16.
pub const fn auto_items_per_thread(element_size: usize) -> u32 {
    if element_size == 0 || element_size >= 96 {
        1
    } else if 96 / element_size > 16 {
        16
    } else {
        (96 / element_size) as u32
    }
}

/// NVRTC options for compiling generated source for `arch`.
///
/// Floating point stays IEEE (`--ftz=false --prec-div=true --prec-sqrt=true`):
/// the operator's `+ - * /` already use `__fadd_rn`-style intrinsics, which
/// the compiler never contracts into FMAs, so results match the CPU backend
/// operation for operation.
///
/// `--minimal` leaves out the CUDA runtime's declarations (textures,
/// device-side launches, runtime types), which the generated programs never
/// use: the front end has less to parse (about 5% of a pipelined kernel's
/// compile), and the CUBIN is byte for byte the same.
pub fn nvrtc_options(arch: Arch) -> Vec<String> {
    let mut options = semantic_nvrtc_options(arch);
    options.extend([
        "--device-as-default-execution-space".to_string(),
        "--minimal".to_string(),
    ]);
    options
}

/// The NVRTC options generated source needs, for `arch`, and no others: the
/// virtual architecture, C++17, and IEEE floating point (see
/// [`nvrtc_options`]). Programs of the device API
/// ([`device_api_source`](crate::device_api_source)) with users' own
/// kernels compile with these.
pub fn semantic_nvrtc_options(arch: Arch) -> Vec<String> {
    vec![
        format!("--gpu-architecture={}", arch.compute_name()),
        "--std=c++17".to_string(),
        "--ftz=false".to_string(),
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
    ]
}

/// NVRTC options for a CUBIN of generated source for exactly `arch`
/// (`--gpu-architecture=sm_XX`: NVRTC runs ptxas itself, and the driver
/// loads the result without compiling anything); otherwise as
/// [`nvrtc_options`].
pub fn nvrtc_cubin_options(arch: Arch) -> Vec<String> {
    let mut options = nvrtc_options(arch);
    options[0] = format!("--gpu-architecture={}", arch.sm_name());
    options
}

/// Which end of the sequence a scan starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Direction {
    /// Prefix scans: `out[i]` combines `in[0] … in[i]`.
    #[default]
    Forward,
    /// Suffix scans: `out[i]` combines `in[i] … in[n-1]`, still in sequence
    /// order (`in[i] ∘ in[i+1] ∘ …`), so non-commutative operators keep
    /// their meaning. An exclusive reverse scan leaves out `in[i]`; its
    /// initial value goes at the right end: `out[i] = in[i+1] ∘ … ∘ in[n-1]
    /// ∘ init` and `out[n-1] = init`. Segmented, every segment is scanned
    /// from its last element.
    Reverse,
}

/// The kernels (`extern "C" __global__` entry points) of one operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Global pass 1: each block reduces its tile to one tile total.
    ReduceTiles,
    /// Global pass 2: one block scans the tile totals (exclusive, seeded).
    ScanTileTotals,
    /// Global pass 3 (or the whole scan when it fits one tile): inclusive.
    ScanTilesInclusive,
    /// Global pass 3 (or the whole scan when it fits one tile): exclusive.
    ScanTilesExclusive,
    /// Single pass with decoupled look-back, inclusive: `(const T* input,
    /// T* output, void* status, T* aggregates, T* prefixes,
    /// scan_launch_state* launch, T seed, u64 n)`, one block per tile
    /// (`launch`: a [`crate::launch_state::LaunchState`]). `status` holds
    /// [`TILE_STATUS_STRIDE`] bytes per tile (an entry of
    /// [`tile_status_bytes`] bytes at the start of each); `aggregates` and `prefixes` one
    /// element per tile, and are only read when [`tile_status_bytes`] is 4.
    SinglePassInclusive,
    /// Single pass with decoupled look-back, exclusive (same parameters).
    SinglePassExclusive,
    /// [`Kernel::SinglePassInclusive`] over small tiles of
    /// [`small_items_per_thread`] items per thread, for short inputs.
    SinglePassSmallInclusive,
    /// [`Kernel::SinglePassExclusive`] over small tiles.
    SinglePassSmallExclusive,
    /// The pipelined single pass (sm_90 and newer), inclusive: `(const T*
    /// input, T* output, void* status, T* aggregates, T* prefixes,
    /// scan_launch_state* launch, T seed, u64 n, u64 tiles)`,
    /// [`PIPELINED_BLOCK_THREADS`] threads and [`pipelined_shared_bytes`]
    /// of dynamic shared memory per block, a persistent grid (each block
    /// takes one counter value past the last tile), tiles of
    /// [`pipelined_tile_items`], input and output 16-byte aligned, elements
    /// for which [`pipelined_supported`] holds. Status as for
    /// [`Kernel::SinglePassInclusive`].
    PipelinedInclusive,
    /// The pipelined single pass, exclusive (same parameters).
    PipelinedExclusive,
    /// A row-major matrix scanned down its columns, inclusive: `(const T*
    /// input, T* output, void* status, T* aggregates, T* prefixes,
    /// scan_launch_state* launch, T seed, u64 rows, u64 cols, int walk)`,
    /// the single pass with decoupled look-back over tiles of 32 columns ×
    /// [`crate::layout::Layout::column_tile_rows`] rows (`columns.cuh`), one block per tile:
    /// [`columns_tiles`] of them; with `walk` one block per strip of 32
    /// columns instead, walking down the whole strip
    /// (`cols.div_ceil(COLUMNS_PER_TILE)` blocks). `status` as for
    /// [`Kernel::SinglePassInclusive`]; `aggregates` and `prefixes` hold 32
    /// elements per tile ([`COLUMNS_PER_TILE`]), whatever the element size.
    ColumnsInclusive,
    /// The column scan, exclusive (same parameters).
    ColumnsExclusive,
}

/// Rows per thread of a column scan's tile for elements of `element_size`
/// bytes in tiles of `items_per_thread`: the tiles' items per thread
/// (twice as many for 4-byte elements measured 5-15% slower on the H200
/// for wide matrices: fewer blocks fit an SM).
pub const fn column_items_per_thread(element_size: usize, items_per_thread: u32) -> u32 {
    let _ = element_size;
    items_per_thread
}

/// Columns of one column-scan tile ([`Kernel::ColumnsInclusive`]): a warp's
/// lanes.
pub const COLUMNS_PER_TILE: usize = 32;

/// Tiles of a column scan of a `rows` × `cols` matrix in tiles of
/// `tile_rows` rows (the block's warps × items per thread).
pub const fn columns_tiles(rows: usize, cols: usize, tile_rows: usize) -> usize {
    cols.div_ceil(COLUMNS_PER_TILE) * rows.div_ceil(tile_rows)
}

impl Kernel {
    /// Every kernel a program contains.
    pub const ALL: [Kernel; 12] = [
        Kernel::ReduceTiles,
        Kernel::ScanTileTotals,
        Kernel::ScanTilesInclusive,
        Kernel::ScanTilesExclusive,
        Kernel::SinglePassInclusive,
        Kernel::SinglePassExclusive,
        Kernel::SinglePassSmallInclusive,
        Kernel::SinglePassSmallExclusive,
        Kernel::PipelinedInclusive,
        Kernel::PipelinedExclusive,
        Kernel::ColumnsInclusive,
        Kernel::ColumnsExclusive,
    ];

    /// The suffix after the operator's name.
    pub fn suffix(self) -> &'static str {
        match self {
            Kernel::ReduceTiles => "reduce_tiles",
            Kernel::ScanTileTotals => "scan_tile_totals",
            Kernel::ScanTilesInclusive => "scan_tiles_inclusive",
            Kernel::ScanTilesExclusive => "scan_tiles_exclusive",
            Kernel::SinglePassInclusive => "single_pass_inclusive",
            Kernel::SinglePassExclusive => "single_pass_exclusive",
            Kernel::SinglePassSmallInclusive => "single_pass_small_inclusive",
            Kernel::SinglePassSmallExclusive => "single_pass_small_exclusive",
            Kernel::PipelinedInclusive => "pipelined_inclusive",
            Kernel::PipelinedExclusive => "pipelined_exclusive",
            Kernel::ColumnsInclusive => "columns_inclusive",
            Kernel::ColumnsExclusive => "columns_exclusive",
        }
    }

    /// The symbol name for operator `op_name`.
    pub fn symbol(self, op_name: &str) -> String {
        format!("{SYMBOL_PREFIX}{op_name}_{}", self.suffix())
    }
}

/// What every exported symbol of an operator's program starts with, before
/// the operator's name. Nothing else in a program has a global name that
/// starts with it (the library lives in namespaces `gpu_scan` and
/// `gpu_scan_ops`, the prelude's names start with `scan_`), so no operator
/// name can collide with the library.
pub const SYMBOL_PREFIX: &str = "gpu_scan_";

/// Items per thread of the small tiles, from the program's items per thread:
/// a quarter (at least 1), so a short input spreads over four times as many
/// blocks. The CUDA source computes the same value.
pub const fn small_items_per_thread(items_per_thread: u32) -> u32 {
    if items_per_thread >= 4 {
        items_per_thread / 4
    } else {
        1
    }
}

/// The fewest bytes between the status entries of consecutive tiles
/// ([`tile_status_stride`]). Waiting tiles poll their newest predecessors'
/// entries; spread out, those fall in more cache lines and L2 slices instead
/// of queuing on a few hot lines.
pub const TILE_STATUS_STRIDE: usize = 64;

/// Bytes between the status entries of consecutive tiles for an element of
/// `element_size` bytes (the layout's `tile_status_stride`), so the status
/// array holds this many bytes per tile: [`TILE_STATUS_STRIDE`], or the
/// entry ([`tile_status_bytes`]) rounded up to a multiple of it.
pub const fn tile_status_stride(element_size: usize) -> usize {
    let bytes = tile_status_bytes(element_size);
    if bytes <= TILE_STATUS_STRIDE {
        TILE_STATUS_STRIDE
    } else {
        round_up(bytes, TILE_STATUS_STRIDE)
    }
}

/// Bytes of one tile's entry in the single-pass status array for an element of
/// `element_size` bytes (the prelude's `scan_tile_status`): 8 when
/// the element packs with its 4-byte status word into one 64-bit word, 16
/// when it packs into a 128-bit word, and for larger elements a 128-bit
/// chunk per 12 bytes of the value, each carrying a copy of the status word
/// (a poll reads the value with the status in one round trip, no fence).
///
/// Each entry starts its own [`tile_status_stride`] bytes of the array.
pub const fn tile_status_bytes(element_size: usize) -> usize {
    if element_size <= 4 {
        8
    } else if element_size <= 12 {
        16
    } else {
        16 * element_size.div_ceil(12)
    }
}

/// Threads per block of the pipelined single pass ([`Kernel::PipelinedInclusive`]):
/// two squads of 4 warps (reduce, rescan) and a producer, a lookahead and a
/// store warp. The prelude's `scan_pipelined_block_threads`.
pub const PIPELINED_BLOCK_THREADS: u32 = 32 * (2 * PIPELINED_SQUAD_WARPS + 3);
/// Warps in each of the pipelined pass's two compute squads (reduce, rescan).
pub const PIPELINED_SQUAD_WARPS: u32 = 4;
const PIPELINED_STAGE_BUDGET: usize = 200 * 1024;
const PIPELINED_MAX_STAGES: usize = 6;

/// Items per thread of the pipelined single pass for an element of
/// `element_size` bytes, odd (threads reading their own consecutive items
/// from shared memory then hit distinct banks): up to 48 bytes, about 252
/// bytes per thread (63 for 4-byte elements: a 31.5 KiB tile, which with 6
/// stages per SM ran a stand-alone `u32` sum at 96.5% of copy speed on the
/// H200, 2^28); wider elements, tiles of about 48 KiB, at least 3 items.
/// A tile's lookahead costs about the same whatever its size, so wide
/// elements need long tiles to hide it: on an H100 (2^24, `scan_bench`
/// `SCAN_BENCH_WIDE=paths`), 56- and 64-byte affine maps ran at 68.5% and
/// 63.7% of copy speed in tiles of 252 bytes per thread (3 items) and at
/// 88.6% and 83.6% in 48 KiB tiles (5 items); 88- to 108-byte ones at
/// 28-34% with one item and 74-83% with 3.
pub const fn pipelined_items_per_thread(element_size: usize) -> u32 {
    if element_size == 0 || element_size >= 252 {
        return 1;
    }
    let items = if element_size > 48 {
        (48 * 1024 / (32 * PIPELINED_SQUAD_WARPS as usize * element_size)) as u32
    } else {
        (252 / element_size) as u32
    };
    let items = if items < 3 && element_size <= PIPELINED_MAX_ELEMENT_SIZE {
        3
    } else {
        items
    };
    if items % 2 == 1 {
        items
    } else {
        items - 1
    }
}

/// Elements per tile of the pipelined single pass.
pub const fn pipelined_tile_items(element_size: usize) -> usize {
    (32 * PIPELINED_SQUAD_WARPS * pipelined_items_per_thread(element_size)) as usize
}

const fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// Bytes of a pipelined stage's tile: a 128-byte multiple, so that every
/// stage's tile starts where bulk copies want it.
pub const fn pipelined_tile_bytes(element_size: usize) -> usize {
    round_up(pipelined_tile_items(element_size) * element_size, 128)
}

/// Shared-memory bytes of one pipeline stage: the tile, then the reduce
/// squad's totals and the tile prefix (a 16-byte multiple), and 64 bytes
/// for six barriers, the tile's index and the padding that puts the values
/// after all stages' barriers and indices at a 16-byte boundary (with an
/// odd number of stages they end 8 bytes short of one).
const fn pipelined_stage_bytes(element_size: usize) -> usize {
    let squad = (32 * PIPELINED_SQUAD_WARPS) as usize;
    pipelined_tile_bytes(element_size)
        + round_up(
            (squad + PIPELINED_SQUAD_WARPS as usize + 1) * element_size,
            16,
        )
        + 64
}

/// Tiles in flight per block of the pipelined single pass: as many stages
/// as 200 KiB of shared memory hold, at most 6.
pub const fn pipelined_stages(element_size: usize) -> usize {
    let stages = PIPELINED_STAGE_BUDGET / pipelined_stage_bytes(element_size);
    if stages > PIPELINED_MAX_STAGES {
        PIPELINED_MAX_STAGES
    } else {
        stages
    }
}

/// The widest element the pipelined single pass takes. Its 352 threads get
/// at most 168 registers each (64 Ki registers per SM, one block), and
/// wider elements spill there (ptxas 13.0, 3 items per thread: 160 bytes
/// on sm_120, `tests/nvrtc_sizes.rs`); they take the look-back single pass
/// instead.
pub const PIPELINED_MAX_ELEMENT_SIZE: usize = 156;

/// Whether elements of `element_size` bytes can take the pipelined single
/// pass: its bulk copies move whole 16-byte units, which whole tiles of
/// elements of a multiple of 4 bytes always are, two stages must fit, and
/// the element is at most [`PIPELINED_MAX_ELEMENT_SIZE`] bytes.
pub const fn pipelined_supported(element_size: usize) -> bool {
    element_size % 4 == 0
        && element_size > 0
        && element_size <= PIPELINED_MAX_ELEMENT_SIZE
        && pipelined_stages(element_size) >= 2
}

/// Dynamic shared memory of one pipelined block (0 when unsupported): the
/// prelude's `scan_pipelined_shared_bytes`.
pub const fn pipelined_shared_bytes(element_size: usize) -> usize {
    if pipelined_supported(element_size) {
        pipelined_stages(element_size) * pipelined_stage_bytes(element_size)
    } else {
        0
    }
}

/// Shared memory the segmented pipelined stages may take: more than the
/// plain pass's (one block per SM has 227 KiB), enough for 6 stages of
/// elements of 4 to 12 bytes with their head flags.
const PIPELINED_SEGMENTED_STAGE_BUDGET: usize = 212 * 1024;

/// Bytes of a pipelined tile's head flags as bits (16-byte multiple: the
/// producer bulk-loads them with the tile).
pub const fn pipelined_flag_bits_bytes(element_size: usize) -> usize {
    round_up(pipelined_tile_items(element_size) / 8, 16)
}

/// One segmented pipelined stage: the plain stage, plus each reduce
/// thread's 64-bit head mask, the flags of the threads' and warps' pairs,
/// and the tile's head flags as bits.
const fn pipelined_segmented_stage_bytes(element_size: usize) -> usize {
    pipelined_stage_bytes(element_size)
        + 32 * PIPELINED_SQUAD_WARPS as usize * 9
        + 16
        + pipelined_flag_bits_bytes(element_size)
}

/// Tiles in flight per block of the segmented pipelined single pass (its
/// stages also hold head flags): the prelude's
/// `scan_pipelined_segmented_stages`.
pub const fn pipelined_segmented_stages(element_size: usize) -> usize {
    let stages = PIPELINED_SEGMENTED_STAGE_BUDGET / pipelined_segmented_stage_bytes(element_size);
    if stages > PIPELINED_MAX_STAGES {
        PIPELINED_MAX_STAGES
    } else {
        stages
    }
}

/// Whether elements of `element_size` bytes can take the segmented
/// pipelined single pass ([`pipelined_supported`], with its larger stages).
pub const fn pipelined_segmented_supported(element_size: usize) -> bool {
    pipelined_supported(element_size) && pipelined_segmented_stages(element_size) >= 2
}

/// Dynamic shared memory of one segmented pipelined block (0 when
/// unsupported): the prelude's `scan_pipelined_segmented_shared_bytes`.
pub const fn pipelined_segmented_shared_bytes(element_size: usize) -> usize {
    if pipelined_segmented_supported(element_size) {
        pipelined_segmented_stages(element_size) * pipelined_segmented_stage_bytes(element_size)
    } else {
        0
    }
}

/// The preprocessor macro that switches on the segmented part of the
/// library; [`crate::program`] defines it when a program holds a segmented
/// kernel, so programs of plain scans do not parse those templates.
pub const SEGMENTED_DEFINE: &str = "GPU_SCAN_SEGMENTED";

/// How segment head flags are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlagFormat {
    /// One byte per element; non-zero marks a head.
    Bytes,
    /// One bit per element, packed into `u32` words, least significant bit
    /// first: element `i` is bit `i % 32` of word `i / 32`.
    Bits,
}

impl FlagFormat {
    /// Both formats.
    pub const ALL: [FlagFormat; 2] = [FlagFormat::Bytes, FlagFormat::Bits];

    /// Storage units (bytes or `u32` words) that `n` elements need.
    pub const fn units(self, n: usize) -> usize {
        match self {
            FlagFormat::Bytes => n,
            FlagFormat::Bits => n.div_ceil(32),
        }
    }

    /// The CUDA template argument selecting this format.
    pub fn cuda_name(self) -> &'static str {
        match self {
            FlagFormat::Bytes => "scan_flags_bytes",
            FlagFormat::Bits => "scan_flags_bits",
        }
    }

    pub(crate) fn suffix(self) -> &'static str {
        match self {
            FlagFormat::Bytes => "bytes",
            FlagFormat::Bits => "bits",
        }
    }
}

/// Where a segmented kernel finds its segments' heads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentSource {
    /// Head flags in memory, in this format (a `flags` parameter).
    Flags(FlagFormat),
    /// Rows of a fixed length (a `row_length` parameter): element `i`
    /// starts a segment where `i % row_length == 0`. The heads are computed
    /// in the tile; nothing but the elements is read.
    Rows,
    /// Segment start offsets, ascending (CSR row pointers: an `offsets`
    /// parameter, a `scan_offsets` by value holding their address, count,
    /// width of 4 or 8 bytes and index, see [`crate::index_offsets_symbol`]):
    /// element `offsets[r]` starts a segment. Each thread finds the offsets
    /// of its items between two index entries; no flags are read or
    /// written.
    Offsets,
    /// One key per element (a `keys` parameter, a `scan_keys` by value
    /// holding their address and width of 1, 2, 4 or 8 bytes): element `i`
    /// starts a segment where its key differs, bit for bit, from element
    /// `i - 1`'s. Each thread compares the keys of its items and the one
    /// before them; no flags are read or written.
    Keys,
}

impl SegmentSource {
    /// Every source: the two flag formats, rows, offsets, then keys.
    pub const ALL: [SegmentSource; 5] = [
        SegmentSource::Flags(FlagFormat::Bytes),
        SegmentSource::Flags(FlagFormat::Bits),
        SegmentSource::Rows,
        SegmentSource::Offsets,
        SegmentSource::Keys,
    ];

    pub(crate) fn suffix(self) -> &'static str {
        match self {
            SegmentSource::Flags(f) => f.suffix(),
            SegmentSource::Rows => "rows",
            SegmentSource::Offsets => "offsets",
            SegmentSource::Keys => "keys",
        }
    }
}

impl From<FlagFormat> for SegmentSource {
    fn from(format: FlagFormat) -> Self {
        SegmentSource::Flags(format)
    }
}

/// The two segmented-scan strategies of the chapter (section 1.5), which
/// differ in how a warp keeps lanes from combining across a segment head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentedStrategy {
    /// The operator lifted to (flag, value) pairs,
    /// `(f1, v1) ⊕ (f2, v2) = (f1 | f2, f2 ? v2 : v1 ∘ v2)`, expanded into a
    /// warp routine that shuffles flags along with values (Figs. 1.9, 1.10).
    OperatorTransformation,
    /// Each lane finds the lane of its segment's head (a max-scan of head
    /// indices, here one ballot) and only combines values from lanes at or
    /// after it (Fig. 1.11). Shuffles values only.
    ConditionalIndexing,
}

impl SegmentedStrategy {
    /// Both strategies.
    pub const ALL: [SegmentedStrategy; 2] = [
        SegmentedStrategy::OperatorTransformation,
        SegmentedStrategy::ConditionalIndexing,
    ];

    /// The CUDA template argument selecting this strategy.
    pub fn cuda_name(self) -> &'static str {
        match self {
            SegmentedStrategy::OperatorTransformation => "scan_segmented_transform",
            SegmentedStrategy::ConditionalIndexing => "scan_segmented_indexing",
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            SegmentedStrategy::OperatorTransformation => "transform",
            SegmentedStrategy::ConditionalIndexing => "indexing",
        }
    }
}

/// The kernels of a program's segmented part: reduce-then-scan with a head
/// flag per tile, and the single pass. Each exists once per
/// [`SegmentedStrategy`], and once per [`SegmentSource`] where it reads
/// heads: the `const void* flags` parameter below is `u64 row_length` for
/// [`SegmentSource::Rows`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentedKernel {
    /// `(const T* input, const void* flags, T* tile_totals, u8* tile_flags,
    /// T seed, int seeded, u64 n)`: per tile, whether it holds a head and
    /// the (seeded) partial of its last segment.
    ReduceTiles(SegmentSource),
    /// `(T* tile_totals, const u8* tile_flags, u64 num_tiles)`: one block
    /// turns the tile totals into the partial of the segment open at each
    /// tile's start.
    ScanTileTotals,
    /// `(const T* input, const void* flags, T* output, const T* tile_prefixes,
    /// T seed, int seeded, u64 n)`: scans every tile seeded with its prefix
    /// (`tile_prefixes == nullptr`: a single tile).
    ScanTiles {
        /// Inclusive or exclusive.
        inclusive: bool,
        /// Where the segments' heads come from.
        source: SegmentSource,
    },
    /// `(const T* input, const void* flags, T* output, void* status,
    /// T* aggregates, T* prefixes, scan_launch_state* launch, T seed,
    /// int seeded, u64 n)`: the single pass with
    /// decoupled look-back, with the scratch of [`Kernel::SinglePassInclusive`].
    SinglePass {
        /// Inclusive or exclusive.
        inclusive: bool,
        /// Where the segments' heads come from.
        source: SegmentSource,
    },
    /// `(const T* input, const void* flags, T* output, void* status,
    /// T* aggregates, T* prefixes, scan_launch_state* launch, T seed,
    /// int seeded, u64 n, u64 tiles)`: the pipelined
    /// single pass (sm_90 and newer), launched as
    /// [`Kernel::PipelinedInclusive`] but with
    /// [`pipelined_segmented_shared_bytes`] of dynamic shared memory, the
    /// flags 16-byte aligned too.
    Pipelined {
        /// Inclusive or exclusive.
        inclusive: bool,
        /// Where the segments' heads come from.
        source: SegmentSource,
    },
}

impl SegmentedKernel {
    /// Every segmented kernel of one strategy: per source, the reduction
    /// of tiles, the tile scans, the single passes and the pipelined ones
    /// (inclusive, then exclusive), and once the pass over tile totals.
    pub const ALL: [SegmentedKernel; 1 + 7 * SegmentSource::ALL.len()] = {
        use SegmentedKernel::{Pipelined, ReduceTiles, ScanTileTotals, ScanTiles, SinglePass};
        let mut all = [ScanTileTotals; 1 + 7 * SegmentSource::ALL.len()];
        let mut i = 0;
        while i < SegmentSource::ALL.len() {
            let source = SegmentSource::ALL[i];
            let at = 1 + 7 * i;
            all[at] = ReduceTiles(source);
            let mut k = 0;
            while k < 2 {
                let inclusive = k == 0;
                all[at + 1 + k] = ScanTiles { inclusive, source };
                all[at + 3 + k] = SinglePass { inclusive, source };
                all[at + 5 + k] = Pipelined { inclusive, source };
                k += 1;
            }
            i += 1;
        }
        all
    };

    /// Where the kernel finds segment heads; `None` for the pass over tile
    /// totals, which reads one flag byte per tile.
    pub fn source(self) -> Option<SegmentSource> {
        match self {
            SegmentedKernel::ReduceTiles(source)
            | SegmentedKernel::ScanTiles { source, .. }
            | SegmentedKernel::SinglePass { source, .. }
            | SegmentedKernel::Pipelined { source, .. } => Some(source),
            SegmentedKernel::ScanTileTotals => None,
        }
    }

    /// The kernel's exported name in operator `op_name`'s program.
    pub fn symbol(self, op_name: &str, strategy: SegmentedStrategy) -> String {
        let s = strategy.suffix();
        match self {
            SegmentedKernel::ReduceTiles(source) => {
                format!(
                    "{SYMBOL_PREFIX}{op_name}_segmented_{s}_reduce_tiles_{}",
                    source.suffix()
                )
            }
            SegmentedKernel::ScanTileTotals => {
                format!("{SYMBOL_PREFIX}{op_name}_segmented_{s}_scan_tile_totals")
            }
            SegmentedKernel::ScanTiles { inclusive, source } => format!(
                "{SYMBOL_PREFIX}{op_name}_segmented_{s}_scan_tiles_{}_{}",
                if inclusive { "inclusive" } else { "exclusive" },
                source.suffix()
            ),
            SegmentedKernel::SinglePass { inclusive, source } => format!(
                "{SYMBOL_PREFIX}{op_name}_segmented_{s}_single_pass_{}_{}",
                if inclusive { "inclusive" } else { "exclusive" },
                source.suffix()
            ),
            SegmentedKernel::Pipelined { inclusive, source } => format!(
                "{SYMBOL_PREFIX}{op_name}_segmented_{s}_pipelined_{}_{}",
                if inclusive { "inclusive" } else { "exclusive" },
                source.suffix()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_shapes_fill_shared_memory_with_odd_item_counts() {
        assert_eq!(pipelined_items_per_thread(4), 63);
        assert_eq!(pipelined_items_per_thread(8), 31);
        assert_eq!(pipelined_items_per_thread(16), 15);
        assert_eq!(pipelined_items_per_thread(24), 9);
        assert_eq!(pipelined_items_per_thread(1000), 1);
        assert_eq!(pipelined_tile_items(4), 128 * 63);
        assert_eq!(pipelined_stages(4), 6);
        // 6 × (31.5 KiB tile + 133 × 4 rounded to 16 + 64 bytes of barriers,
        // index and padding)
        assert_eq!(pipelined_shared_bytes(4), 6 * (32256 + 544 + 64));
        for size in (4..=512).step_by(4) {
            let bytes = pipelined_shared_bytes(size);
            assert!(bytes <= 227 * 1024, "{size}: {bytes}");
            assert_eq!(pipelined_supported(size), bytes > 0, "{size}");
            assert_eq!(pipelined_items_per_thread(size) % 2, 1, "{size}");
        }
        assert!(!pipelined_supported(2));
        assert!(!pipelined_supported(6));
        assert!(pipelined_supported(24));
        assert!(pipelined_supported(PIPELINED_MAX_ELEMENT_SIZE));
        assert!(!pipelined_supported(PIPELINED_MAX_ELEMENT_SIZE + 4));
        assert_eq!(PIPELINED_BLOCK_THREADS, 352);
        // The segmented pass's stages also hold 128 head masks and flags,
        // and the tile's head bits (1008 bytes for 4-byte elements), in a
        // larger budget that keeps 6 stages from 4 to 12 bytes.
        assert_eq!(pipelined_segmented_stages(4), 6);
        assert_eq!(pipelined_segmented_stages(12), 6);
        assert_eq!(
            pipelined_segmented_shared_bytes(4),
            6 * (32256 + 544 + 64 + 128 * 9 + 16 + 1008)
        );
        for size in (4..=512).step_by(4) {
            let bytes = pipelined_segmented_shared_bytes(size);
            assert!(bytes <= 227 * 1024, "{size}: {bytes}");
            // The host sizes segmented scratch by the plain pass's tiles.
            assert!(
                !pipelined_segmented_supported(size) || pipelined_supported(size),
                "{size}"
            );
            assert_eq!(pipelined_segmented_supported(size), bytes > 0, "{size}");
        }
    }

    #[test]
    fn auto_items_keep_about_96_bytes_per_thread() {
        assert_eq!(auto_items_per_thread(1), 16);
        assert_eq!(auto_items_per_thread(4), 16);
        assert_eq!(auto_items_per_thread(8), 12);
        assert_eq!(auto_items_per_thread(12), 8);
        assert_eq!(auto_items_per_thread(24), 4);
        assert_eq!(auto_items_per_thread(64), 1);
        assert_eq!(auto_items_per_thread(200), 1);
    }

    #[test]
    fn large_elements_get_fewer_threads() {
        assert_eq!(auto_block_threads(4, auto_items_per_thread(4)), 256);
        assert_eq!(auto_block_threads(179, 1), 256);
        assert_eq!(auto_block_threads(180, 1), 128);
        assert_eq!(auto_block_threads(256, 1), 128);
        for size in 1..=256 {
            let items = auto_items_per_thread(size);
            assert!(
                tile_fits(size, auto_block_threads(size, items), items),
                "{size}"
            );
        }
        assert!(!tile_fits(256, 256, 1));
    }

    #[test]
    fn invalid_shapes_are_rejected() {
        let ok = GenParams::default();
        assert!(ok.validate().is_ok());
        assert!(GenParams {
            block_threads: Some(100),
            ..ok
        }
        .validate()
        .is_err());
        assert!(GenParams {
            block_threads: Some(2048),
            ..ok
        }
        .validate()
        .is_err());
        assert!(GenParams {
            items_per_thread: ItemsPerThread::Fixed(0),
            ..ok
        }
        .validate()
        .is_err());
        assert!(GenParams {
            items_per_thread: ItemsPerThread::Fixed(33),
            ..ok
        }
        .validate()
        .is_err());
    }

    #[test]
    fn architectures_parse_in_every_spelling() {
        for text in ["sm_90", "compute_90", "90", "9.0", " sm_90 "] {
            assert_eq!(Arch::parse(text), Some(Arch::SM_90), "{text}");
        }
        assert_eq!(Arch::parse("sm_120"), Some(Arch::SM_120));
        assert_eq!(Arch::parse("75"), Some(Arch::SM_75));
        assert_eq!(Arch::parse("compute_86"), Some(Arch::SM_86));
        for bad in ["", "9", "sm_", "sm_9x", "ninety", "9.x"] {
            assert_eq!(Arch::parse(bad), None, "{bad}");
        }
        for arch in Arch::CUDA_13 {
            assert_eq!(Arch::parse(&arch.sm_name()), Some(arch));
            assert_eq!(Arch::parse(&arch.compute_name()), Some(arch));
        }
        assert!(Arch::SM_90.has_bulk_copies() && Arch::SM_120.has_bulk_copies());
        assert!(!Arch::SM_89.has_bulk_copies());
    }

    #[test]
    fn kernel_symbols_carry_the_operator_name() {
        assert_eq!(
            Kernel::ReduceTiles.symbol("affine_op"),
            "gpu_scan_affine_op_reduce_tiles"
        );
        // An operator named like the prelude's helpers gets symbols of its own.
        assert_eq!(
            Kernel::SinglePassInclusive.symbol("scan"),
            "gpu_scan_scan_single_pass_inclusive"
        );
    }

    #[test]
    fn status_packs_elements_up_to_twelve_bytes() {
        assert_eq!(tile_status_bytes(1), 8);
        assert_eq!(tile_status_bytes(4), 8);
        assert_eq!(tile_status_bytes(5), 16);
        assert_eq!(tile_status_bytes(12), 16);
        assert_eq!(tile_status_bytes(13), 32);
        assert_eq!(tile_status_bytes(24), 32);
        assert_eq!(tile_status_bytes(25), 48);
        assert_eq!(tile_status_bytes(48), 64);
        assert_eq!(tile_status_bytes(49), 80);
        assert_eq!(tile_status_bytes(72), 96);
        assert_eq!(tile_status_bytes(256), 352);
        // Entries 64 bytes apart, wider ones a multiple of 64 apart.
        assert_eq!(tile_status_stride(1), 64);
        assert_eq!(tile_status_stride(48), 64);
        assert_eq!(tile_status_stride(49), 128);
        assert_eq!(tile_status_stride(96), 128);
        assert_eq!(tile_status_stride(97), 192);
        assert_eq!(tile_status_stride(256), 384);
        for size in 1..=256 {
            let (bytes, stride) = (tile_status_bytes(size), tile_status_stride(size));
            assert!(
                bytes <= stride && stride % TILE_STATUS_STRIDE == 0,
                "{size}"
            );
            assert!(
                bytes <= 16 || 12 * (bytes / 16) >= size,
                "{size}: the chunks hold it"
            );
        }
        assert_eq!(small_items_per_thread(16), 4);
        assert_eq!(small_items_per_thread(5), 1);
        assert_eq!(small_items_per_thread(1), 1);
    }
}
