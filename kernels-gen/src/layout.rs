//! The layout of an operator's program: every size that both the host and
//! the kernels depend on (tile shapes, the single-pass status entries, the
//! pipelined pass's stages and shared memory), computed here and only here.
//!
//! The runtime sizes its workspaces and launches from a [`Layout`], and
//! [`crate::program`] prints the same values into the program as
//! `struct gpu_scan_layout_<op>`, which the library's `Shape<Op>` reads. The
//! CUDA side arranges its shared memory within those sizes and checks that
//! it fits with `static_assert`s; it computes no size of its own.
//!
//! ```
//! use kernels_gen::layout::Layout;
//!
//! let layout = Layout::new(4, 1, 256, 16);
//! assert_eq!(layout.tile_items(), 4096);
//! assert_eq!(layout.tile_status_bytes, 8);
//! assert!(layout.pipelined_supported());
//! assert!(layout.cuda_declaration("sum").contains("struct gpu_scan_layout_sum {"));
//! ```

use crate::params::{
    column_items_per_thread, column_one_block_per_sm, column_row_lanes, column_rows_packed,
    column_staged, column_staged_min_blocks, column_windowed, columns_tiles, packed_element,
    small_items_per_thread,
};
use crate::single_pass_sizes::{
    pipelined_block_threads, pipelined_flag_bits_bytes, pipelined_heads_warps,
    pipelined_items_per_thread, pipelined_looks_back, pipelined_offsets_block_threads,
    pipelined_run_stride, pipelined_segmented_shared_bytes, pipelined_segmented_stages,
    pipelined_shared_bytes, pipelined_squad_warps, pipelined_stages, pipelined_supported,
    pipelined_tile_bytes, pipelined_warp_total_slots, tile_status_bytes, tile_status_stride,
};
use crate::tuning::{
    arch_tuning, by_size, single_pass_min_blocks, ArchTuning, ARCH_TUNING,
    LOOKAHEAD_TILES_PER_LANE, MIRRORED_OVERHEAD, SEGMENTED_LOOKAHEAD_TILES_PER_LANE,
    SEGMENTED_SINGLE_PASS_OVERHEAD, SINGLE_PASS_OVERHEAD,
};
use crate::{abi::KernelAbi, Arch};
use std::fmt::Write;

/// Every size of one operator's program (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// `sizeof` the element.
    pub element_size: usize,
    /// Whether the kernels hold the element as its bytes in 32-bit words
    /// ([`packed_element`]).
    pub packed_element: bool,
    /// Threads per block of the tile kernels.
    pub block_threads: u32,
    /// Elements per thread of a tile.
    pub items_per_thread: u32,
    /// Registers the operator's temporaries take beyond its operands
    /// ([`crate::pressure`]; [`Layout::with_operator_registers`]): the
    /// single passes' register budget adds them.
    pub operator_registers: u32,
    /// Elements per thread of the single pass's small tiles.
    pub small_items_per_thread: u32,
    /// Rows per thread of the column scans' tiles
    /// ([`column_items_per_thread`]).
    pub column_items_per_thread: u32,
    /// Whether the column scans ask for one block per SM on sm_90 too
    /// ([`column_one_block_per_sm`]).
    pub column_one_block_per_sm: bool,
    /// Whether the column scans hold several rows of a narrow matrix in a
    /// warp ([`column_rows_packed`]).
    pub column_rows_packed: bool,
    /// Whether the column scans stage their tiles in shared memory
    /// ([`column_staged`]).
    pub column_staged: bool,
    /// Whether the column scans look back over windows of 32 tiles
    /// ([`column_windowed`]).
    pub column_windowed: bool,
    /// Bytes of a tile's status entry ([`tile_status_bytes`]).
    pub tile_status_bytes: usize,
    /// Bytes between consecutive tiles' status entries
    /// ([`tile_status_stride`]).
    pub tile_status_stride: usize,
    /// Threads per block of the pipelined pass.
    pub pipelined_block_threads: u32,
    /// Threads per block of the pipelined pass over segment offsets (more
    /// heads warps: [`pipelined_offsets_block_threads`]) where it has them
    /// ([`Arch::has_pipelined_heads_warps`]).
    pub pipelined_offsets_block_threads: u32,
    /// Heads warps of the pipelined pass over segment offsets
    /// ([`pipelined_heads_warps`]).
    pub pipelined_heads_warps: u32,
    /// Warps in each of the pipelined pass's two squads.
    pub pipelined_squad_warps: u32,
    /// Elements per squad thread of a pipelined tile.
    pub pipelined_items_per_thread: u32,
    /// Bytes from one squad thread's run of items in a pipelined stage to
    /// the next one's ([`pipelined_run_stride`]: runs of 256-byte elements
    /// padded apart, [`crate::pipelined_run_padding`]).
    pub pipelined_run_stride: usize,
    /// Slots a pipelined stage keeps for the reduce squad's warp totals
    /// ([`pipelined_warp_total_slots`]: none where runs are padded).
    pub pipelined_warp_total_slots: u32,
    /// Bytes of a pipelined stage's tile (128-byte multiple).
    pub pipelined_tile_bytes: usize,
    /// Bytes of a pipelined tile's head flags as bits (16-byte multiple).
    pub pipelined_flag_bits_bytes: usize,
    /// Whether the pipelined lookahead looks back from each tile
    /// ([`pipelined_looks_back`]).
    pub pipelined_look_back: bool,
    /// Stages of the plain pipelined pass (below 2: unsupported).
    pub pipelined_stages: usize,
    /// Its dynamic shared memory per block (0: unsupported).
    pub pipelined_shared_bytes: usize,
    /// Stages of the segmented pipelined pass (below 2: unsupported).
    pub pipelined_segmented_stages: usize,
    /// Its dynamic shared memory per block (0: unsupported).
    pub pipelined_segmented_shared_bytes: usize,
    /// Tiles a lookahead lane of the plain pipelined pass polls per round
    /// ([`LOOKAHEAD_TILES_PER_LANE`]).
    pub lookahead_tiles_per_lane: u32,
    /// The same for the segmented pipelined pass
    /// ([`SEGMENTED_LOOKAHEAD_TILES_PER_LANE`]).
    pub segmented_lookahead_tiles_per_lane: u32,
}

/// What a [`Layout`] asks of the compiler on one architecture, from its
/// row of the tuning table ([`Layout::tuned`]): launch bounds and the
/// pipelined pass's heads warps. `min_blocks` 0 is ptxas's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuned {
    /// Blocks per SM of the plain single passes.
    pub single_pass_min_blocks: u32,
    /// The same in reverse ([`MIRRORED_OVERHEAD`] more registers a thread).
    pub single_pass_min_blocks_mirrored: u32,
    /// Blocks per SM of the segmented single passes.
    pub segmented_single_pass_min_blocks: u32,
    /// The same in reverse.
    pub segmented_single_pass_min_blocks_mirrored: u32,
    /// Blocks per SM of the column scans ([`Layout::column_one_block_per_sm`]).
    pub column_min_blocks: u32,
    /// The same in reverse: the windowed look-back's four where it has them,
    /// else one (reverse column scans of 4-byte elements left at one took
    /// 135 registers with it).
    pub column_min_blocks_mirrored: u32,
    /// Blocks per SM of the kernels with no target of their own.
    pub default_min_blocks: u32,
    /// Heads warps of the pipelined pass over segment offsets.
    pub pipelined_heads_warps: u32,
    /// Threads per block of that pass.
    pub pipelined_offsets_block_threads: u32,
    /// Blocks per SM of the summed-area kernels over a staged 4-byte scalar.
    pub area_scalar_min_blocks: u32,
}

impl Layout {
    /// The layout for elements of `element_size` bytes whose fields take
    /// `element_registers` registers (`ScanElement::REGISTERS`,
    /// [`crate::ir::Prim::registers`] summed over the fields) in tiles of
    /// `block_threads` × `items_per_thread`.
    pub const fn new(
        element_size: usize,
        element_registers: usize,
        block_threads: u32,
        items_per_thread: u32,
    ) -> Layout {
        Layout {
            element_size,
            packed_element: packed_element(element_size, element_registers),
            block_threads,
            items_per_thread,
            operator_registers: 0,
            small_items_per_thread: small_items_per_thread(items_per_thread),
            column_items_per_thread: column_items_per_thread(element_size, items_per_thread),
            column_one_block_per_sm: column_one_block_per_sm(element_size, element_registers),
            column_rows_packed: column_rows_packed(element_size),
            column_staged: column_staged(element_size),
            column_windowed: column_windowed(element_size),
            tile_status_bytes: tile_status_bytes(element_size),
            tile_status_stride: tile_status_stride(element_size),
            pipelined_block_threads: pipelined_block_threads(element_size),
            pipelined_offsets_block_threads: pipelined_offsets_block_threads(element_size),
            pipelined_heads_warps: pipelined_heads_warps(element_size),
            pipelined_squad_warps: pipelined_squad_warps(element_size),
            pipelined_items_per_thread: pipelined_items_per_thread(element_size),
            pipelined_run_stride: pipelined_run_stride(element_size),
            pipelined_warp_total_slots: pipelined_warp_total_slots(element_size),
            pipelined_tile_bytes: pipelined_tile_bytes(element_size),
            pipelined_flag_bits_bytes: pipelined_flag_bits_bytes(element_size),
            pipelined_look_back: pipelined_looks_back(element_size),
            pipelined_stages: pipelined_stages(element_size),
            pipelined_shared_bytes: pipelined_shared_bytes(element_size),
            pipelined_segmented_stages: pipelined_segmented_stages(element_size),
            pipelined_segmented_shared_bytes: pipelined_segmented_shared_bytes(element_size),
            lookahead_tiles_per_lane: by_size(&LOOKAHEAD_TILES_PER_LANE, element_size),
            segmented_lookahead_tiles_per_lane: by_size(
                &SEGMENTED_LOOKAHEAD_TILES_PER_LANE,
                element_size,
            ),
        }
    }

    /// This layout for an operator whose temporaries take `registers`
    /// registers a thread beyond its operands: its `let` values alive at
    /// once ([`crate::pressure::peak_live_lets`]) times the registers of the
    /// element's widest scalar.
    pub const fn with_operator_registers(mut self, registers: u32) -> Layout {
        self.operator_registers = registers;
        self
    }

    /// What this layout asks of the compiler on the architectures of
    /// tuning row `row` ([`crate::tuning`]).
    pub fn tuned(&self, row: &ArchTuning) -> Tuned {
        let size = self.element_size;
        let (threads, items) = (self.block_threads, self.items_per_thread);
        // The measured overheads (operators without temporaries) plus the
        // operator's temporaries; 0 stays 0, no target.
        let with_operator = |overhead: u32| {
            if overhead == 0 {
                0
            } else {
                overhead + self.operator_registers
            }
        };
        let plain = with_operator(by_size(&SINGLE_PASS_OVERHEAD, size));
        let segmented = with_operator(by_size(&SEGMENTED_SINGLE_PASS_OVERHEAD, size));
        let mirrored = |overhead: u32| {
            if overhead == 0 {
                0
            } else {
                overhead + MIRRORED_OVERHEAD
            }
        };
        let target = |overhead: u32| {
            if row.occupancy_targets {
                single_pass_min_blocks(threads, items, size, overhead)
            } else {
                1
            }
        };
        // Where the row has more heads warps, the layout's count and threads
        // (single_pass_sizes); elsewhere one, in the plain pass's block.
        let (heads_warps, offsets_threads) = if row.pipelined_heads_warps {
            (
                self.pipelined_heads_warps,
                self.pipelined_offsets_block_threads,
            )
        } else {
            (1, self.pipelined_block_threads)
        };
        Tuned {
            single_pass_min_blocks: target(plain),
            single_pass_min_blocks_mirrored: target(mirrored(plain)),
            segmented_single_pass_min_blocks: target(segmented),
            segmented_single_pass_min_blocks_mirrored: target(mirrored(segmented)),
            column_min_blocks: if !row.occupancy_targets || self.column_one_block_per_sm {
                1
            } else {
                column_staged_min_blocks(self.element_size)
            },
            column_min_blocks_mirrored: if !row.occupancy_targets || self.column_one_block_per_sm {
                1
            } else {
                column_staged_min_blocks(self.element_size).max(1)
            },
            default_min_blocks: if row.occupancy_targets { 0 } else { 1 },
            pipelined_heads_warps: heads_warps,
            pipelined_offsets_block_threads: offsets_threads,
            area_scalar_min_blocks: row.area_scalar_min_blocks,
        }
    }

    /// Elements per tile.
    pub const fn tile_items(&self) -> usize {
        self.block_threads as usize * self.items_per_thread as usize
    }

    /// Rows of a column scan's tile: its warps, one above the other, each
    /// [`Layout::column_items_per_thread`] rows tall.
    pub const fn column_tile_rows(&self) -> usize {
        (self.block_threads / 32) as usize * self.column_items_per_thread as usize
    }

    /// Lanes of a warp that hold a row of a column scan of a matrix `cols`
    /// wide ([`column_row_lanes`]).
    pub const fn column_row_lanes(&self, cols: usize) -> usize {
        column_row_lanes(cols, self.column_rows_packed)
    }

    /// Rows of a column scan's tile for a matrix `cols` wide: a warp holds
    /// `32 / lanes` rows at once ([`Layout::column_row_lanes`]), each of its
    /// threads [`Layout::column_items_per_thread`] of them.
    pub const fn column_tile_rows_of(&self, cols: usize) -> usize {
        self.column_tile_rows() * (32 / self.column_row_lanes(cols))
    }

    /// Tiles of a column scan of a `rows` × `cols` matrix ([`columns_tiles`]).
    pub const fn columns_tiles(&self, rows: usize, cols: usize) -> usize {
        columns_tiles(
            rows,
            cols,
            self.column_tile_rows(),
            self.column_row_lanes(cols),
        )
    }

    /// Elements per small tile.
    pub const fn small_tile_items(&self) -> usize {
        self.block_threads as usize * self.small_items_per_thread as usize
    }

    /// Elements per pipelined tile.
    pub const fn pipelined_tile_items(&self) -> usize {
        32 * self.pipelined_squad_warps as usize * self.pipelined_items_per_thread as usize
    }

    /// Threads per block of pipelined kernel `abi` on `arch`: over segment
    /// offsets on an architecture with more heads warps
    /// ([`Arch::has_pipelined_heads_warps`]),
    /// [`Layout::pipelined_offsets_block_threads`]; otherwise
    /// [`Layout::pipelined_block_threads`].
    ///
    /// ```
    /// use kernels_gen::abi::KernelAbi;
    /// use kernels_gen::layout::Layout;
    /// use kernels_gen::{Arch, SegmentSource, SegmentedKernel, SegmentedStrategy};
    ///
    /// let layout = Layout::new(4, 1, 256, 16);
    /// let over_offsets = KernelAbi::segmented(
    ///     SegmentedKernel::Pipelined { inclusive: true, source: SegmentSource::Offsets },
    ///     SegmentedStrategy::ConditionalIndexing,
    /// );
    /// assert_eq!(layout.pipelined_threads(over_offsets, Arch::SM_90), 448);
    /// assert_eq!(layout.pipelined_threads(over_offsets, Arch::SM_100), 384);
    /// ```
    pub fn pipelined_threads(&self, abi: KernelAbi, arch: Arch) -> u32 {
        if abi.pipelined_over_offsets() {
            self.tuned(arch_tuning(arch))
                .pipelined_offsets_block_threads
        } else {
            self.pipelined_block_threads
        }
    }

    /// Whether the plain pipelined pass can take these elements.
    pub const fn pipelined_supported(&self) -> bool {
        pipelined_supported(self.element_size)
    }

    /// Whether the deterministic scan's one pass (the pipelined pass with
    /// a lookahead that walks the tiles, `deterministic.cuh`) can take
    /// these elements; its three passes take every element.
    pub const fn deterministic_pipelined(&self) -> bool {
        self.pipelined_supported() && !self.pipelined_look_back
    }

    /// Threads per block of the deterministic scan's tile passes: a
    /// pipelined squad.
    pub const fn deterministic_threads(&self) -> u32 {
        32 * self.pipelined_squad_warps
    }

    /// Elements per tile of the deterministic scan: the pipelined tile.
    pub const fn deterministic_tile_items(&self) -> usize {
        self.deterministic_threads() as usize * self.pipelined_items_per_thread as usize
    }

    /// The CUDA declaration of this layout for operator `op_name`
    /// ([`layout_struct`]), which the operator's policy names as its
    /// `layout`, as a program of plain kernels has it.
    pub fn cuda_declaration(&self, op_name: &str) -> String {
        self.program_declaration(op_name, false)
    }

    /// The same for a program that holds a segmented kernel (`segmented`),
    /// or not: the library's one `lookahead_tiles_per_lane` is the pass's
    /// own value ([`Layout::segmented_lookahead_tiles_per_lane`] in a
    /// segmented program).
    pub fn program_declaration(&self, op_name: &str, segmented: bool) -> String {
        let lookahead_tiles_per_lane = if segmented {
            self.segmented_lookahead_tiles_per_lane
        } else {
            self.lookahead_tiles_per_lane
        };
        let mut out = format!(
            "// ---- Layout of `{op_name}` (kernels_gen::layout::Layout, computed in Rust) ----\n\
             struct {} {{\n",
            layout_struct(op_name)
        );
        let ints: [(&str, usize); 19] = [
            ("element_size", self.element_size),
            ("block_threads", self.block_threads as usize),
            ("items_per_thread", self.items_per_thread as usize),
            (
                "small_items_per_thread",
                self.small_items_per_thread as usize,
            ),
            ("tile_status_bytes", self.tile_status_bytes),
            ("tile_status_stride", self.tile_status_stride),
            (
                "column_items_per_thread",
                self.column_items_per_thread as usize,
            ),
            (
                "pipelined_block_threads",
                self.pipelined_block_threads as usize,
            ),
            ("pipelined_squad_warps", self.pipelined_squad_warps as usize),
            (
                "pipelined_items_per_thread",
                self.pipelined_items_per_thread as usize,
            ),
            ("pipelined_run_stride", self.pipelined_run_stride),
            (
                "pipelined_warp_total_slots",
                self.pipelined_warp_total_slots as usize,
            ),
            ("pipelined_tile_bytes", self.pipelined_tile_bytes),
            ("pipelined_flag_bits_bytes", self.pipelined_flag_bits_bytes),
            ("pipelined_stages", self.pipelined_stages),
            ("pipelined_shared_bytes", self.pipelined_shared_bytes),
            (
                "pipelined_segmented_stages",
                self.pipelined_segmented_stages,
            ),
            (
                "pipelined_segmented_shared_bytes",
                self.pipelined_segmented_shared_bytes,
            ),
            (
                "lookahead_tiles_per_lane",
                lookahead_tiles_per_lane as usize,
            ),
        ];
        for (name, value) in ints {
            let _ = writeln!(out, "  static constexpr unsigned {name} = {value}u;");
        }
        let bools = [
            ("packed_element", self.packed_element),
            ("column_one_block_per_sm", self.column_one_block_per_sm),
            ("column_rows_packed", self.column_rows_packed),
            ("column_staged", self.column_staged),
            ("column_windowed", self.column_windowed),
            ("pipelined_look_back", self.pipelined_look_back),
        ];
        for (name, value) in bools {
            let _ = writeln!(out, "  static constexpr bool {name} = {value};");
        }
        out.push_str("  // Per architecture (kernels_gen::tuning::ARCH_TUNING).\n");
        for (i, row) in ARCH_TUNING.iter().enumerate() {
            let _ = match (row.cuda_arch, i) {
                (Some(arch), 0) => {
                    writeln!(out, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == {arch}")
                }
                (Some(arch), _) => writeln!(
                    out,
                    "#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == {arch}"
                ),
                (None, _) => writeln!(out, "#else"),
            };
            let t = self.tuned(row);
            let tuned = [
                ("single_pass_min_blocks", t.single_pass_min_blocks),
                (
                    "single_pass_min_blocks_mirrored",
                    t.single_pass_min_blocks_mirrored,
                ),
                (
                    "segmented_single_pass_min_blocks",
                    t.segmented_single_pass_min_blocks,
                ),
                (
                    "segmented_single_pass_min_blocks_mirrored",
                    t.segmented_single_pass_min_blocks_mirrored,
                ),
                ("column_min_blocks", t.column_min_blocks),
                ("column_min_blocks_mirrored", t.column_min_blocks_mirrored),
                ("default_min_blocks", t.default_min_blocks),
                ("pipelined_heads_warps", t.pipelined_heads_warps),
                (
                    "pipelined_offsets_block_threads",
                    t.pipelined_offsets_block_threads,
                ),
                ("area_scalar_min_blocks", t.area_scalar_min_blocks),
            ];
            for (name, value) in tuned {
                let _ = writeln!(out, "  static constexpr unsigned {name} = {value}u;");
            }
        }
        out.push_str("#endif\n};\n");
        out
    }
}

/// The name of operator `op_name`'s layout struct in its program.
pub fn layout_struct(op_name: &str) -> String {
    format!("gpu_scan_layout_{op_name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operator's temporaries widen the single passes' register
    /// budget: fewer blocks an SM, each thread's registers covering its
    /// items' words, the measured overhead and the temporaries.
    #[test]
    fn operator_temporaries_widen_the_register_budget() {
        let row = arch_tuning(Arch::SM_90);
        let plain = Layout::new(16, 4, 256, 6);
        assert_eq!(plain.with_operator_registers(0), plain);
        let heavy = plain.with_operator_registers(12);
        let (p, h) = (plain.tuned(row), heavy.tuned(row));
        assert!(
            h.single_pass_min_blocks < p.single_pass_min_blocks,
            "{p:?} {h:?}"
        );
        let budget = |blocks: u32| 65536 / (256 * blocks);
        let overhead = by_size(&SINGLE_PASS_OVERHEAD, 16);
        assert!(budget(h.single_pass_min_blocks) >= 6 * 4 + overhead + 12);
        assert!(budget(p.single_pass_min_blocks) < 6 * 4 + overhead + 12);
        // Kernels with no target keep none.
        assert_eq!(h.segmented_single_pass_min_blocks, 1);
        assert_eq!(h.default_min_blocks, p.default_min_blocks);
    }

    #[test]
    fn the_declaration_carries_every_field() {
        let layout = Layout::new(12, 3, 256, 8);
        let text = layout.cuda_declaration("op");
        assert!(text.contains("struct gpu_scan_layout_op {"));
        for needle in [
            "element_size = 12u;",
            "block_threads = 256u;",
            "items_per_thread = 8u;",
            "small_items_per_thread = 2u;",
            "tile_status_bytes = 16u;",
            "tile_status_stride = 64u;",
            "pipelined_block_threads = 384u;",
            "pipelined_offsets_block_threads = 448u;",
            "pipelined_heads_warps = 3u;",
            "packed_element = false;",
            "column_one_block_per_sm = false;",
            "column_rows_packed = false;",
            "column_staged = false;",
            "column_windowed = false;",
            "pipelined_look_back = false;",
            "pipelined_run_stride = 252u;",
        ] {
            assert!(text.contains(needle), "{needle} in\n{text}");
        }
        // 25 fields, then 10 tuned ones for each row of the tuning table.
        assert_eq!(
            text.matches("static constexpr").count(),
            25 + 10 * ARCH_TUNING.len()
        );
        let (hopper, others) = text.split_once("#else").unwrap();
        assert!(hopper.contains("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900"));
        assert!(others.contains("pipelined_heads_warps = 1u;"), "{others}");
        assert!(
            others.contains("pipelined_offsets_block_threads = 384u;"),
            "{others}"
        );
        assert!(others.contains("single_pass_min_blocks = 1u;"), "{others}");
        assert!(hopper.contains("default_min_blocks = 0u;"), "{hopper}");
        let bytes = Layout::new(201, 201, 128, 1).cuda_declaration("op");
        assert!(bytes.contains("packed_element = true;"), "{bytes}");
        assert!(bytes.contains("column_one_block_per_sm = true;"), "{bytes}");
        assert!(bytes.contains("column_rows_packed = false;"), "{bytes}");
        assert!(bytes.contains("column_staged = false;"), "{bytes}");
        assert!(bytes.contains("pipelined_look_back = true;"), "{bytes}");
    }
}
