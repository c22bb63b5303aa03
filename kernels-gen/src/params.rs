//! Generation parameters: the tile shape of an operator's program, chosen
//! from its element's size or given with `#[scan_op]`, and the limits on
//! elements.

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
/// (architectures without occupancy targets always ask for one:
/// [`crate::tuning::ArchTuning::occupancy_targets`]): for
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

/// Rows per thread of a column scan's tile for elements of `element_size`
/// bytes in tiles of `items_per_thread`: the tiles' items per thread
/// (twice as many for 4-byte elements measured 5-15% slower on the H200
/// for wide matrices: fewer blocks fit an SM).
pub const fn column_items_per_thread(element_size: usize, items_per_thread: u32) -> u32 {
    let _ = element_size;
    items_per_thread
}

/// Columns of one column-scan tile ([`Kernel::ColumnsInclusive`](crate::Kernel::ColumnsInclusive)): a warp's
/// lanes.
pub const COLUMNS_PER_TILE: usize = 32;

/// Whether the column scans of elements of `element_size` bytes hold
/// several rows of a narrow matrix in one warp (`columns.cuh`): up to 8
/// bytes (16-byte compensated sums spilled with it). Wider rows are long
/// enough for whole-sector loads as they are.
pub const fn column_rows_packed(element_size: usize) -> bool {
    element_size <= 8
}

/// Whether the column scans of elements of `element_size` bytes stage each
/// tile in shared memory by asynchronous copies (`columns.cuh`; sm_80 and
/// newer, plain copies before): whole 4-byte words, in tiles of up to 8
/// bytes an element (18 to 27 KiB a block). The tile's items then take no
/// registers while the block looks back; wider or odd-sized elements load
/// into registers (16-byte compensated sums spilled when staged).
pub const fn column_staged(element_size: usize) -> bool {
    element_size % 4 == 0 && element_size <= 8
}

/// Whether the column scans of elements of `element_size` bytes look back
/// over windows of 32 tiles at a time (`columns.cuh`): staged tiles of
/// 4-byte elements. For wider elements its registers cost blocks (ptxas
/// took 100 to 128 for 8- to 16-byte operators), and they look back one
/// tile a round trip.
pub const fn column_windowed(element_size: usize) -> bool {
    column_staged(element_size) && element_size <= 4
}

/// Blocks an SM the column scans ask ptxas for on architectures with
/// occupancy targets ([`crate::tuning::ArchTuning::occupancy_targets`]):
/// four for windowed look-backs ([`column_windowed`]: 64 registers, which
/// spilled at five), ptxas's default (0) for the other staged tiles, and
/// one for tiles in registers (ptxas's default spilled a 20-byte element).
pub const fn column_staged_min_blocks(element_size: usize) -> u32 {
    if column_windowed(element_size) {
        4
    } else if column_staged(element_size) {
        0
    } else {
        1
    }
}

/// Lanes of a warp that hold one row of a column-scan tile of a matrix
/// `cols` wide: a strip of [`COLUMNS_PER_TILE`] columns, or where rows are
/// packed ([`column_rows_packed`]) and 16 columns or fewer, the power of
/// two at or above `cols`, so that a warp holds `32 / lanes` rows and each
/// of its loads reads that many consecutive rows (16 columns of `f32`: two
/// rows, 128 bytes, where one row left half the lanes idle).
///
/// ```
/// use kernels_gen::column_row_lanes;
/// assert_eq!(column_row_lanes(1000, true), 32);
/// assert_eq!(column_row_lanes(17, true), 32);
/// assert_eq!(column_row_lanes(16, true), 16);
/// assert_eq!(column_row_lanes(5, true), 8);
/// assert_eq!(column_row_lanes(1, true), 1);
/// assert_eq!(column_row_lanes(5, false), 32);
/// ```
pub const fn column_row_lanes(cols: usize, packed: bool) -> usize {
    if !packed || cols > COLUMNS_PER_TILE / 2 {
        COLUMNS_PER_TILE
    } else {
        cols.next_power_of_two()
    }
}

/// Tiles of a column scan of a `rows` × `cols` matrix in tiles of
/// `tile_rows` rows a warp's row of lanes (the block's warps × items per
/// thread), `row_lanes` lanes a row ([`column_row_lanes`]): a warp holds
/// `32 / row_lanes` rows at a time, so a tile is that many times taller.
pub const fn columns_tiles(rows: usize, cols: usize, tile_rows: usize, row_lanes: usize) -> usize {
    cols.div_ceil(COLUMNS_PER_TILE) * rows.div_ceil(tile_rows * (COLUMNS_PER_TILE / row_lanes))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_items_keep_about_96_bytes_per_thread() {
        assert_eq!(auto_items_per_thread(1), 16);
        assert_eq!(auto_items_per_thread(4), 16);
        assert_eq!(auto_items_per_thread(8), 12);
        assert_eq!(auto_items_per_thread(12), 8);
        assert_eq!(auto_items_per_thread(24), 4);
        assert_eq!(auto_items_per_thread(64), 1);
        assert_eq!(auto_items_per_thread(200), 1);
        // Small tiles: a quarter of the items, at least one.
        assert_eq!(small_items_per_thread(16), 4);
        assert_eq!(small_items_per_thread(5), 1);
        assert_eq!(small_items_per_thread(1), 1);
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
}

/// Most tiles across a two-dimensional scan in tiles (`summed_area.cuh`):
/// its carries walk each row's tiles one after the other, so a wider matrix
/// (more than 256 columns per thread of a block) scans rows, then columns.
pub const AREA_MAX_COLUMN_TILES: usize = 256;

/// How a two-dimensional scan in tiles (`summed_area.cuh`, for commutative
/// operators) cuts a `rows` × `cols` matrix: bands of `band` rows, and
/// column tiles of the block's threads (one column each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AreaTiles {
    /// Rows of a tile: a multiple of the items a thread loads at a time.
    pub band: usize,
    /// Bands of rows: `rows.div_ceil(band)`.
    pub bands: usize,
    /// Tiles across a row: `cols.div_ceil(block_threads)`.
    pub col_tiles: usize,
}

impl AreaTiles {
    /// The tiling of a `rows` × `cols` matrix (both at least 1) by blocks of
    /// `block_threads` threads loading `items` rows at a time, in at most
    /// `resident` tiles (the blocks the device holds at once: one wave,
    /// each block walking down a band; at least one band); `None` where the matrix has
    /// more than [`AREA_MAX_COLUMN_TILES`] tiles across.
    pub const fn new(
        rows: usize,
        cols: usize,
        block_threads: usize,
        items: usize,
        resident: usize,
    ) -> Option<AreaTiles> {
        let col_tiles = cols.div_ceil(block_threads);
        if col_tiles > AREA_MAX_COLUMN_TILES || rows == 0 || items == 0 {
            return None;
        }
        // As many bands as one wave of resident blocks holds, never more:
        // a second wave of a few tiles would take as long as the first.
        let fit = resident / col_tiles;
        let target_bands = if fit == 0 { 1 } else { fit };
        let band = rows.div_ceil(target_bands).div_ceil(items) * items;
        Some(AreaTiles {
            band,
            bands: rows.div_ceil(band),
            col_tiles,
        })
    }

    /// Tiles, one block each.
    pub const fn tiles(&self) -> usize {
        self.bands * self.col_tiles
    }

    /// Elements of scratch for the row totals (`rows` per column tile),
    /// the column totals (`cols` per band) and the tile totals, in that
    /// order.
    pub const fn scratch_len(&self, rows: usize, cols: usize) -> usize {
        rows * self.col_tiles + self.bands * cols + self.tiles()
    }
}

#[cfg(test)]
mod area_tests {
    use super::*;

    #[test]
    fn area_tiles_fill_one_wave_in_bands_of_whole_chunks() {
        // 8192² by 256-thread blocks of 16 items, 1056 resident blocks:
        // 32 tiles across, 33 bands fit, bands of 256 rows (32 of them).
        let t = AreaTiles::new(8192, 8192, 256, 16, 1056).unwrap();
        assert_eq!(
            t,
            AreaTiles {
                band: 256,
                bands: 32,
                col_tiles: 32
            }
        );
        assert!(t.tiles() <= 1056);
        assert_eq!(t.scratch_len(8192, 8192), 8192 * 32 + 32 * 8192 + 1024);
        // 264 resident (two blocks on each of 132 SMs): 8 bands of 1024
        // rows, 256 tiles, one wave (9 bands would leave 24 tiles to a
        // second wave as long as the first).
        let t = AreaTiles::new(8192, 8192, 256, 16, 264).unwrap();
        assert_eq!((t.band, t.bands, t.tiles()), (1024, 8, 256));
        for resident in [1, 31, 100, 264, 528, 1056, 5000] {
            for (rows, cols) in [(8192, 8192), (1000, 300), (7, 65536), (1 << 20, 3)] {
                let t = AreaTiles::new(rows, cols, 256, 16, resident).unwrap();
                assert!(
                    t.tiles() <= resident.max(t.col_tiles),
                    "{rows} × {cols}, {resident} resident: {t:?}"
                );
                assert!(t.band * t.bands >= rows && t.band % 16 == 0);
            }
        }
        // One row: one band of one chunk.
        let one = AreaTiles::new(1, 1000, 256, 16, 1056).unwrap();
        assert_eq!((one.band, one.bands, one.col_tiles), (16, 1, 4));
        // Tall and narrow: one tile across, bands of whole chunks.
        let tall = AreaTiles::new(1 << 20, 3, 256, 7, 1000).unwrap();
        assert_eq!(tall.col_tiles, 1);
        assert_eq!(tall.band % 7, 0);
        assert!(tall.bands * tall.band >= 1 << 20 && tall.bands <= 1000);
        // Too wide for the carries' walks across a row.
        assert_eq!(AreaTiles::new(4, 256 * 257, 256, 16, 1056), None);
        assert!(AreaTiles::new(4, 256 * 256, 256, 16, 1056).is_some());
    }
}
