//! Sizes of the single passes' scratch: the look-back status entries and
//! the pipelined pass's shared-memory stages, per element size. The
//! layout ([`crate::layout::Layout`]) carries them into the program.

/// The fewest bytes between the status entries of consecutive tiles
/// ([`tile_status_stride`]). Waiting tiles poll their newest predecessors'
/// entries; spread out, those fall in more cache lines and L2 slices instead
/// of queuing on a few hot lines.
pub const TILE_STATUS_STRIDE: usize = 64;

/// Tiles per group of the status array where entries take several 16-byte
/// chunks (elements over 12 bytes): see [`status_chunk_offset`]. The status
/// array holds a whole number of groups ([`status_capacity`]).
pub const STATUS_GROUP_TILES: usize = 32;

/// Where 16-byte chunk `chunk` of tile `tile`'s status entry lies, in bytes
/// from the start of the status array, for elements of `element_size`
/// bytes: the host's statement of the prelude's `scan_status_chunk_offset`,
/// which the device's status reads, writes and sweeps follow.
///
/// * Packed entries (elements of at most 12 bytes, one chunk): tile `t` at
///   `t · stride` ([`tile_status_stride`]).
/// * Chunked entries (wider elements): tiles in groups of
///   [`STATUS_GROUP_TILES`], each group's `32 · stride` bytes chunk-major,
///   chunk `c` of the group's tile `j` at `16 · (32c + j)`. A look-back lane
///   reads one tile of a window of 32, so each of the warp's loads of a chunk
///   covers 512 contiguous bytes (four 128-byte lines, at most eight where
///   the window straddles two groups) where entries one after the other put
///   every lane's chunk in its own line. On the H200 that took 256-byte
///   affine maps from 54% to 61% of copy speed and 16- and 24-byte ones
///   from 87-89% to 94-96% (BENCHMARKS.md).
///
/// ```
/// use kernels_gen::{status_chunk_offset, tile_status_stride};
/// // 4-byte elements: one packed entry every 64 bytes.
/// assert_eq!(status_chunk_offset(4, 3, 0), 3 * tile_status_stride(4));
/// // 256-byte elements: chunk 1 of tile 33 is in the second group.
/// assert_eq!(status_chunk_offset(256, 33, 1), 32 * tile_status_stride(256) + 16 * (32 + 1));
/// ```
pub const fn status_chunk_offset(element_size: usize, tile: usize, chunk: usize) -> usize {
    let stride = tile_status_stride(element_size);
    if tile_status_bytes(element_size) < 32 {
        tile * stride + 16 * chunk
    } else {
        let group = STATUS_GROUP_TILES;
        tile / group * (group * stride) + 16 * (group * chunk + tile % group)
    }
}

/// Status entries the array holds for `tiles` tiles: a whole number of
/// groups of [`STATUS_GROUP_TILES`] ([`status_chunk_offset`]), at least one.
///
/// ```
/// assert_eq!(kernels_gen::status_capacity(33), 64);
/// assert_eq!(kernels_gen::status_capacity(0), 32);
/// ```
pub const fn status_capacity(tiles: usize) -> usize {
    if tiles == 0 {
        STATUS_GROUP_TILES
    } else {
        tiles.next_multiple_of(STATUS_GROUP_TILES)
    }
}

/// Bytes of the status array per tile for an element of `element_size`
/// bytes (the layout's `tile_status_stride`): [`TILE_STATUS_STRIDE`], or the
/// entry ([`tile_status_bytes`]) rounded up to a multiple of it. Packed
/// entries lie this many bytes apart; chunked ones lie chunk-major in
/// groups of [`STATUS_GROUP_TILES`] tiles of this many bytes each
/// ([`status_chunk_offset`]).
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
/// Each entry takes [`tile_status_stride`] bytes of the array, laid out as
/// [`status_chunk_offset`] says.
pub const fn tile_status_bytes(element_size: usize) -> usize {
    if element_size <= 4 {
        8
    } else if element_size <= 12 {
        16
    } else {
        16 * element_size.div_ceil(12)
    }
}

/// Threads per block of the pipelined single pass
/// ([`Kernel::PipelinedInclusive`](crate::Kernel::PipelinedInclusive)) for
/// elements of `element_size` bytes: two squads of
/// [`pipelined_squad_warps`] warps (reduce, rescan) and a producer, a
/// lookahead, a store and a heads warp (which, over segment offsets, finds
/// each tile's heads ahead of the reduce squad; it has nothing to do
/// elsewhere). The layout's `pipelined_block_threads`; over offsets, with
/// more heads warps, [`pipelined_offsets_block_threads`].
pub const fn pipelined_block_threads(element_size: usize) -> u32 {
    32 * (2 * pipelined_squad_warps(element_size) + 4)
}

/// Heads warps of the pipelined pass over segment offsets on sm_90
/// ([`crate::Arch::has_pipelined_heads_warps`]; 1 elsewhere), which take its
/// tiles in turn: 3 for elements of at most
/// [`PIPELINED_HEADS_WARPS_MAX_ELEMENT`] bytes (fewer than the stages: 2
/// where there are 3), 1 for wider ones. A warp finds one tile's heads at
/// a time, in two dependent round trips to memory (the tile's index
/// entries, then its offsets), longer than the copy of a 31.5 KiB tile
/// takes an SM; three keep up (five, in one run, gained up to 2.2 points
/// of copy speed on dense `u32` offsets on the H200 at 2^28 and lost one
/// at mean 64). A block of more than 384 threads leaves ptxas 128
/// registers a thread (168 at 384), which wider elements' squads need
/// more of: at 64 bytes the kernel takes 126 on sm_90.
pub const fn pipelined_heads_warps(element_size: usize) -> u32 {
    let stages = pipelined_segmented_stages(element_size);
    if element_size > PIPELINED_HEADS_WARPS_MAX_ELEMENT || stages < 2 {
        1
    } else if stages > 3 {
        3
    } else {
        stages as u32 - 1
    }
}

/// The widest element whose pipelined pass over offsets has more than one
/// heads warp ([`pipelined_heads_warps`]).
pub const PIPELINED_HEADS_WARPS_MAX_ELEMENT: usize = 64;

/// Threads per block of the pipelined pass over segment offsets:
/// [`pipelined_block_threads`] with the extra heads warps
/// ([`pipelined_heads_warps`]). The layout's
/// `pipelined_offsets_block_threads`.
pub const fn pipelined_offsets_block_threads(element_size: usize) -> u32 {
    pipelined_block_threads(element_size) + 32 * (pipelined_heads_warps(element_size) - 1)
}

/// Warps in each of the pipelined pass's two compute squads (reduce,
/// rescan): 4, and 2 for elements wider than [`PIPELINED_FULL_SQUAD_MAX`]
/// bytes, whose values need more registers than 384 threads can have
/// (65,536 an SM: at most 168 a thread for 384 threads, 255 for 256).
pub const fn pipelined_squad_warps(element_size: usize) -> u32 {
    if element_size > PIPELINED_FULL_SQUAD_MAX {
        2
    } else {
        4
    }
}

/// The widest element whose pipelined squads have 4 warps each (wider ones
/// spilled at 168 registers a thread: 160 bytes on sm_120 with 3 items,
/// `tests/nvrtc_sizes.rs`).
pub const PIPELINED_FULL_SQUAD_MAX: usize = 156;
const PIPELINED_STAGE_BUDGET: usize = 200 * 1024;
/// Shared memory the stages of padded runs ([`pipelined_run_padding`]) may
/// take: all a block can have on sm_90 and newer (227 KiB) but room for
/// the kernels' few static shared variables.
const PIPELINED_PADDED_STAGE_BUDGET: usize = 227 * 1024 - 256;
const PIPELINED_MAX_STAGES: usize = 6;

/// Items per thread of the pipelined single pass for an element of
/// `element_size` bytes, odd (threads reading their own consecutive items
/// from shared memory then hit distinct banks).
///
/// Up to 48 bytes, about 252 bytes per thread (63 for 4-byte elements: a
/// 31.5 KiB tile, which with 6 stages per SM ran a stand-alone `u32` sum
/// at 96.5% of copy speed on the H200, 2^28).
///
/// Wider elements take the longest tiles with which 3 stages fit
/// (200 KiB of shared memory), where those are at least 5 items long;
/// otherwise the longest with which 2 fit (at least 3 items). A tile's
/// lookahead costs about the same whatever its length, and costs more the
/// wider the element, so wide elements need long tiles to hide it, and a
/// third stage pays only where the tiles stay long. On the H200 (2^26 or
/// 2^27, `scan_bench` `SCAN_BENCH_WIDE=1`, % of copy; items × stages):
///
/// | element | 3 items × 3-4 | 5 × 3-4 | 7 × 3 | 5 × 2 | 7 × 2 | 9-11 × 2 |
/// | --- | ---: | ---: | ---: | ---: | ---: | ---: |
/// | 64 B | | 61.6 (× 4) | **71.9** | | | 65.2 (11) |
/// | 72 B | | **82.4** (× 3) | | | 69.3 | 75.9 (9) |
/// | 96 B | 52.6 (× 4) | | | 65.8 | **74.4** | |
/// | 128 B | 55.4 (× 3) | | | **66.8** | | |
/// | 256 B | 31.6 (× 3) | | | **37.8** | | |
///
/// Elements whose runs are padded apart ([`pipelined_run_padding`]: 256
/// bytes) take the most items, odd or even, that 2 stages of all the
/// shared memory a block can have hold (see `padded_tile_items`): 6 × 2,
/// which ran 256-byte maps at 54.1% of copy where 5 × 2 ran them at 47.6%
/// (H200, 2^24 and 2^25, the same call).
pub const fn pipelined_items_per_thread(element_size: usize) -> u32 {
    if element_size == 0 || element_size > PIPELINED_MAX_ELEMENT_SIZE {
        return 1;
    }
    if pipelined_run_padding(element_size) != 0 {
        return padded_tile_items(element_size);
    }
    if element_size <= 48 {
        return odd_at_most(252 / element_size);
    }
    let three = longest_tile_items(element_size, 3);
    if three >= 5 {
        three
    } else {
        let two = longest_tile_items(element_size, 2);
        if two > 3 {
            two
        } else {
            3
        }
    }
}

/// `n`, or `n - 1` where `n` is even (0 stays 0).
const fn odd_at_most(n: usize) -> u32 {
    (if n % 2 == 1 || n == 0 { n } else { n - 1 }) as u32
}

/// The most items per thread, odd, with which `stages` stages of elements
/// of `element_size` bytes fit `PIPELINED_STAGE_BUDGET` (0 if none do).
const fn longest_tile_items(element_size: usize, stages: usize) -> u32 {
    // Tiles round up to 128 bytes: count a whole 128 more.
    let fixed = stage_bytes_besides_tile(element_size) + 128;
    let per_stage = PIPELINED_STAGE_BUDGET / stages;
    if per_stage < fixed {
        return 0;
    }
    let threads = 32 * pipelined_squad_warps(element_size) as usize;
    let per_thread = (per_stage - fixed) / threads;
    let padding = pipelined_run_padding(element_size);
    if per_thread < padding {
        return 0;
    }
    odd_at_most((per_thread - padding) / element_size)
}

/// Items per thread where runs are padded apart ([`pipelined_run_padding`]:
/// 256-byte elements): the most, odd or even (the padding, not the count,
/// spreads the runs over the banks), with which 2 stages fit
/// `PIPELINED_PADDED_STAGE_BUDGET`, the warps' totals read from the lane
/// totals ([`pipelined_warp_total_slots`]). A 256-byte tile's look-back
/// costs about as much whatever its length and bounded the pass (the
/// lookahead warp busy 93% of the time, BENCHMARKS.md), so the tile takes
/// all the shared memory there is: 6 items (384 elements, 97 KiB) where
/// 200 KiB held 5, 54.1% of copy speed against 47.6% on the H200.
const fn padded_tile_items(element_size: usize) -> u32 {
    let besides = stage_bytes_besides_tile(element_size);
    let per_stage = PIPELINED_PADDED_STAGE_BUDGET / 2;
    let threads = 32 * pipelined_squad_warps(element_size) as usize;
    let padding = pipelined_run_padding(element_size);
    let mut items = (per_stage - besides) / threads / element_size;
    while items > 1
        && round_up(threads * (items * element_size + padding), 128) + besides > per_stage
    {
        items -= 1;
    }
    items as u32
}

/// Elements per tile of the pipelined single pass.
pub const fn pipelined_tile_items(element_size: usize) -> usize {
    (32 * pipelined_squad_warps(element_size) * pipelined_items_per_thread(element_size)) as usize
}

const fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// Bytes of padding after each squad thread's run of items in a pipelined
/// stage: 16 for elements of a multiple of 128 bytes in squads of 2 warps
/// (past [`PIPELINED_FULL_SQUAD_MAX`] bytes: 256), 0 for others.
///
/// Such an element starts in bank 0 wherever it lies, so the 8 threads of
/// a quarter warp reading the same 16-byte chunk of their own items would
/// all hit one bank group (8-way conflicts). With 16 bytes after each run,
/// thread t's runs start t chunks further along the banks, and a thread
/// reads its items in order, without the rotation and barrel shifter of
/// selects that unpadded runs need (39% of the 256-byte kernel's
/// instructions: BENCHMARKS.md). The price is a bulk copy per run instead
/// of one per tile, each way, issued by all the producer's and store
/// warp's lanes. Measured on the H200 (`scan_bench` `SCAN_BENCH_WIDE=1`,
/// alternating with the unpadded kernels, two rounds in each of two
/// calls): 256 bytes, 64 runs a tile, went from 37.2-37.9% to 41.0-41.3%
/// of copy; 128 bytes, whose squads of 4 warps make 128 runs, fell from
/// 66.6-66.7% to 49.0-49.3%, so it keeps its rotated chunks.
pub const fn pipelined_run_padding(element_size: usize) -> usize {
    if element_size > PIPELINED_FULL_SQUAD_MAX && element_size % 128 == 0 {
        16
    } else {
        0
    }
}
/// Bytes from one squad thread's run of items in a pipelined stage to the
/// next thread's: its items and [`pipelined_run_padding`]. The layout's
/// `pipelined_run_stride`.
pub const fn pipelined_run_stride(element_size: usize) -> usize {
    pipelined_items_per_thread(element_size) as usize * element_size
        + pipelined_run_padding(element_size)
}
/// Bytes of a pipelined stage's tile: the squad threads' runs
/// ([`pipelined_run_stride`]), a 128-byte multiple, so that every stage's
/// tile starts where bulk copies want it.
pub const fn pipelined_tile_bytes(element_size: usize) -> usize {
    round_up(
        32 * pipelined_squad_warps(element_size) as usize * pipelined_run_stride(element_size),
        128,
    )
}

/// Shared-memory bytes of one pipeline stage: the tile, then the reduce
/// squad's totals and the tile prefix (a 16-byte multiple), and 64 bytes
/// for six barriers, the tile's index and the padding that puts the values
/// after all stages' barriers and indices at a 16-byte boundary (with an
/// odd number of stages they end 8 bytes short of one).
const fn pipelined_stage_bytes(element_size: usize) -> usize {
    pipelined_tile_bytes(element_size) + stage_bytes_besides_tile(element_size)
}

/// A pipelined stage's bytes besides its tile ([`pipelined_stage_bytes`]).
const fn stage_bytes_besides_tile(element_size: usize) -> usize {
    let warps = pipelined_squad_warps(element_size) as usize;
    let slots = pipelined_warp_total_slots(element_size) as usize;
    round_up((32 * warps + slots + 1) * element_size, 16) + 64
}

/// Slots a pipelined stage keeps for its reduce squad's warp totals: one a
/// warp, or none where runs are padded ([`pipelined_run_padding`]), whose
/// stages read a warp's total from its last lane's warp-inclusive total
/// (the same value) to make room for longer tiles ([`pipelined_items_per_thread`]).
/// The layout's `pipelined_warp_total_slots`.
pub const fn pipelined_warp_total_slots(element_size: usize) -> u32 {
    if pipelined_run_padding(element_size) != 0 {
        0
    } else {
        pipelined_squad_warps(element_size)
    }
}

/// Tiles in flight per block of the pipelined single pass: as many stages
/// as 200 KiB of shared memory hold (227 KiB where runs are padded,
/// [`pipelined_items_per_thread`]), at most 6.
pub const fn pipelined_stages(element_size: usize) -> usize {
    let budget = if pipelined_run_padding(element_size) != 0 {
        PIPELINED_PADDED_STAGE_BUDGET
    } else {
        PIPELINED_STAGE_BUDGET
    };
    let stages = budget / pipelined_stage_bytes(element_size);
    if stages > PIPELINED_MAX_STAGES {
        PIPELINED_MAX_STAGES
    } else {
        stages
    }
}

/// The widest element the pipelined single pass takes: the widest
/// `#[scan_op]` accepts ([`crate::MAX_ELEMENT_SIZE`]). Past
/// [`PIPELINED_FULL_SQUAD_MAX`] bytes its squads have 2 warps each, whose
/// 256 threads may take 255 registers.
pub const PIPELINED_MAX_ELEMENT_SIZE: usize = crate::MAX_ELEMENT_SIZE;

/// The widest element whose pipelined lookahead walks forward over every
/// tile's aggregate; wider ones look back from each tile to the nearest
/// inclusive prefix, which their tiles publish
/// ([`pipelined_looks_back`]).
pub const PIPELINED_WALK_MAX_ELEMENT_SIZE: usize = PIPELINED_FULL_SQUAD_MAX;

/// Whether the pipelined pass's lookahead looks back from each tile
/// (decoupled look-back: the tiles publish inclusive prefixes) instead of
/// walking forward over every tile's aggregate. A walk combines every
/// tile's aggregate in every block: work that grows with the number of
/// blocks, and with a wide element's cost of combining.
pub const fn pipelined_looks_back(element_size: usize) -> bool {
    element_size > PIPELINED_WALK_MAX_ELEMENT_SIZE
}

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
        + 32 * pipelined_squad_warps(element_size) as usize * 9
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
/// pipelined single pass ([`pipelined_supported`], with its larger stages),
/// in tiles of a multiple of 128 elements, whose head flags as bits start
/// at 16-byte boundaries for the bulk copies (tiles of 2-warp squads, past
/// [`PIPELINED_FULL_SQUAD_MAX`] bytes, are 64 × 3 elements: such scans take
/// the look-back pass).
pub const fn pipelined_segmented_supported(element_size: usize) -> bool {
    pipelined_supported(element_size)
        && pipelined_segmented_stages(element_size) >= 2
        && pipelined_tile_items(element_size) % 128 == 0
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_chunks_tile_the_array_without_overlap() {
        for size in [4, 8, 12, 16, 24, 64, 72, 100, 128, 172, 252, 256, 512] {
            let stride = tile_status_stride(size);
            let chunks = tile_status_bytes(size).div_ceil(16);
            for tiles in [1, 31, 32, 33, 95] {
                let capacity = status_capacity(tiles);
                assert!(capacity >= tiles && capacity % STATUS_GROUP_TILES == 0);
                let mut seen = std::collections::HashSet::new();
                for tile in 0..capacity {
                    for chunk in 0..chunks {
                        let at = status_chunk_offset(size, tile, chunk);
                        assert!(
                            at + 16 <= capacity * stride,
                            "{size}: tile {tile} chunk {chunk} at {at}"
                        );
                        assert_eq!(at % 16, 0);
                        assert!(
                            seen.insert(at),
                            "{size}: tile {tile} chunk {chunk} overlaps at {at}"
                        );
                    }
                }
            }
            // Chunked entries: one chunk of 32 consecutive tiles of a group is
            // 512 contiguous bytes.
            if chunks > 1 {
                for chunk in 0..chunks {
                    let first = status_chunk_offset(size, 64, chunk);
                    for j in 0..STATUS_GROUP_TILES {
                        assert_eq!(status_chunk_offset(size, 64 + j, chunk), first + 16 * j);
                    }
                }
            }
        }
    }

    #[test]
    fn the_prelude_groups_status_entries_as_the_host_does() {
        let line = format!("constexpr unsigned scan_status_group_tiles = {STATUS_GROUP_TILES};");
        assert!(
            crate::PRELUDE.contains(&line),
            "the prelude's copy of STATUS_GROUP_TILES"
        );
    }

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
            // Odd, but where padding spreads the runs over the banks.
            let odd = pipelined_items_per_thread(size) % 2 == 1;
            assert!(odd || pipelined_run_padding(size) != 0, "{size}");
        }
        assert!(!pipelined_supported(2));
        assert!(!pipelined_supported(6));
        assert!(pipelined_supported(24));
        assert!(pipelined_supported(PIPELINED_MAX_ELEMENT_SIZE));
        assert!(!pipelined_supported(PIPELINED_MAX_ELEMENT_SIZE + 4));
        assert_eq!(pipelined_block_threads(4), 384);
        assert_eq!(pipelined_block_threads(PIPELINED_FULL_SQUAD_MAX), 384);
        // Past 156 bytes: squads of 2 warps, plain scans only.
        assert_eq!(pipelined_block_threads(160), 256);
        // Over offsets, 3 heads warps up to 64 bytes (448 threads; 2 from
        // 52 bytes, whose long tiles leave 3 stages), then 1.
        assert_eq!(pipelined_offsets_block_threads(4), 448);
        assert_eq!(pipelined_offsets_block_threads(48), 448);
        assert_eq!(pipelined_segmented_stages(52), 3);
        assert_eq!(pipelined_offsets_block_threads(52), 416);
        assert_eq!(pipelined_offsets_block_threads(64), 416);
        assert_eq!(pipelined_offsets_block_threads(68), 384);
        assert_eq!(pipelined_offsets_block_threads(160), 256);
        for size in (4..=512).step_by(4) {
            // The kernel's end marks need fewer heads warps than stages.
            assert!(
                !pipelined_segmented_supported(size)
                    || (pipelined_heads_warps(size) as usize) < pipelined_segmented_stages(size),
                "{size}"
            );
        }
        // Past 48 bytes, the longest tiles 3 stages hold where they have 5
        // items or more, else the longest 2 hold.
        assert_eq!(pipelined_items_per_thread(48), 5);
        assert_eq!(pipelined_stages(48), 5);
        for (size, items, stages) in [
            (64, 7, 3),
            (72, 5, 3),
            (96, 7, 2),
            (128, 5, 2),
            (156, 3, 2),
            (160, 5, 3),
        ] {
            let shape = (pipelined_items_per_thread(size), pipelined_stages(size));
            assert_eq!(shape, (items, stages), "{size}");
        }
        // 256 bytes: padded runs, no warp-total slots, 2 stages in 227 KiB.
        assert_eq!(pipelined_items_per_thread(256), 6);
        assert_eq!(pipelined_tile_items(256), 384);
        assert_eq!(pipelined_stages(256), 2);
        assert_eq!(pipelined_warp_total_slots(256), 0);
        assert_eq!(pipelined_warp_total_slots(252), 2);
        assert_eq!(pipelined_warp_total_slots(128), 4);
        assert_eq!(
            pipelined_shared_bytes(256),
            2 * (64 * (6 * 256 + 16) + 65 * 256 + 64)
        );
        assert!(pipelined_shared_bytes(256) + 256 <= 227 * 1024);
        for size in (52..=256).step_by(4) {
            let items = pipelined_items_per_thread(size);
            let stages = pipelined_stages(size);
            assert!(
                items >= 3 && (stages == 2 || (stages == 3 && items >= 5)),
                "{size}: {items} × {stages}"
            );
            // No longer tile (by 2 items, odd counts; by 1, padded ones)
            // would leave as many stages.
            let (more, budget) = if pipelined_run_padding(size) != 0 {
                (1, PIPELINED_PADDED_STAGE_BUDGET)
            } else {
                (2, PIPELINED_STAGE_BUDGET)
            };
            let longer = pipelined_tile_bytes(size)
                + more * 32 * pipelined_squad_warps(size) as usize * size
                + 128;
            assert!(
                stages * (longer + stage_bytes_besides_tile(size)) > budget,
                "{size}"
            );
        }
        assert!(!pipelined_segmented_supported(256));
        // Runs padded by 16 bytes at 256 bytes only (of the sizes up to 256).
        assert_eq!(pipelined_run_stride(256), 6 * 256 + 16);
        assert_eq!(pipelined_tile_bytes(256), 64 * (6 * 256 + 16));
        assert_eq!(pipelined_run_stride(128), 5 * 128);
        assert_eq!(pipelined_tile_bytes(128), 128 * 5 * 128);
        assert_eq!(
            pipelined_run_stride(124),
            pipelined_items_per_thread(124) as usize * 124
        );
        for size in (4..=256).step_by(4) {
            let items = pipelined_items_per_thread(size) as usize;
            let padded = pipelined_run_stride(size) == items * size + 16;
            assert_eq!(padded, size == 256, "{size}");
        }
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
    }
}
