//! Tuning as data: what the kernels do differently per architecture, and
//! the element-size thresholds their register budgets follow, in one table
//! that the host reads and [`Layout::cuda_declaration`] prints into every
//! program. The CUDA library holds no threshold and no architecture switch
//! of its own (only the `__CUDA_ARCH__ >= 900` guards around instructions
//! older architectures lack). Every entry keeps one line saying where its
//! number came from; the measurements are in BENCHMARKS.md.
//!
//! ```
//! use kernels_gen::layout::Layout;
//! use kernels_gen::tuning::arch_tuning;
//! use kernels_gen::Arch;
//!
//! let layout = Layout::new(4, 1, 256, 16);
//! let hopper = layout.tuned(arch_tuning(Arch::SM_90));
//! let ampere = layout.tuned(arch_tuning(Arch::SM_80));
//! assert_eq!(hopper.pipelined_heads_warps, 3);
//! assert_eq!(ampere.pipelined_heads_warps, 1);
//! assert_eq!(ampere.single_pass_min_blocks, 1);
//! ```
//!
//! [`Layout::cuda_declaration`]: crate::layout::Layout::cuda_declaration

use crate::single_pass_sizes::PIPELINED_FULL_SQUAD_MAX;
use crate::Arch;

/// How the kernels are built for one architecture (or for every one
/// without a row of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchTuning {
    /// The architecture, as `__CUDA_ARCH__` spells it (900 for sm_90);
    /// `None`: every architecture without a row of its own.
    pub cuda_arch: Option<u32>,
    /// Whether kernels take the occupancy measured here: the single passes
    /// ask ptxas for blocks per SM from their estimated registers
    /// ([`single_pass_min_blocks`]), and kernels without a target get
    /// ptxas's default. Otherwise every kernel asks for one block per SM,
    /// which lets ptxas use every register it needs.
    pub occupancy_targets: bool,
    /// Whether the pipelined pass over segment offsets has more than one
    /// heads warp ([`crate::pipelined_heads_warps`]).
    pub pipelined_heads_warps: bool,
    /// Blocks per SM of the summed-area kernels over a staged 4-byte
    /// scalar (`summed_area.cuh`; other elements ask for one).
    pub area_scalar_min_blocks: u32,
    /// Where the row's numbers come from.
    pub source: &'static str,
}

/// The table: a row per tuned architecture, then the row for the others.
pub const ARCH_TUNING: [ArchTuning; 2] = [
    ArchTuning {
        cuda_arch: Some(900),
        occupancy_targets: true,
        pipelined_heads_warps: true,
        area_scalar_min_blocks: 3,
        source: "H100 and H200, scan_bench and matrix_bench with ptxas 13.0 (BENCHMARKS.md)",
    },
    ArchTuning {
        cuda_arch: None,
        occupancy_targets: false,
        pipelined_heads_warps: false,
        area_scalar_min_blocks: 1,
        source: "untuned: ptxas 13.0 spilled under tighter bounds on sm_75-sm_120 (nvrtc_sizes)",
    },
];

/// The row of [`ARCH_TUNING`] for `arch`.
pub fn arch_tuning(arch: Arch) -> &'static ArchTuning {
    let macro_value = arch.cuda_arch_macro();
    ARCH_TUNING
        .iter()
        .find(|row| row.cuda_arch.is_none_or(|a| a == macro_value))
        .expect("the table ends in a row for every architecture")
}

/// A value by element size: the first entry whose bound (bytes, inclusive)
/// the size does not exceed.
pub type BySize = [(usize, u32)];

/// Registers a thread of the plain single pass takes beyond its items'
/// words, by element size: measured on sm_90 with ptxas 13.0 for elements
/// of 1, 2 and whole words up to 24 bytes (`tests/nvrtc_sizes.rs`).
pub const SINGLE_PASS_OVERHEAD: [(usize, u32); 5] =
    [(4, 24), (8, 20), (12, 28), (20, 20), (usize::MAX, 28)];

/// The same for the segmented single pass; 0: no target (its registers
/// depend on the operator more than on the element: a 12-byte span join
/// needed 88 a thread, a 24-byte sum of three fields 56).
pub const SEGMENTED_SINGLE_PASS_OVERHEAD: [(usize, u32); 3] = [(4, 24), (8, 32), (usize::MAX, 0)];

/// Registers a reverse scan's thread takes beyond those (its mirrored
/// indices and spans).
pub const MIRRORED_OVERHEAD: u32 = 4;

/// Tiles a lookahead lane of the plain pipelined pass polls per round, by
/// element size: 6 up to 8 bytes (H200, 2^28: the `u32` sum and `f32` max
/// at 96% of copy, affine maps at 92%, against 93%, 87% with 4; 8 ran
/// affine maps at 90%), 4 up to 88 bytes (4 ran the `u32` sum at 94%, 2 at
/// 81%, 1 at 62%); wider elements poll fewer, which kept ptxas from
/// spilling at the pipelined kernels' register cap (sm_90, sm_100,
/// sm_120).
pub const LOOKAHEAD_TILES_PER_LANE: [(usize, u32); 4] = [
    (8, 6),
    (88, 4),
    (PIPELINED_FULL_SQUAD_MAX, 2),
    (usize::MAX, 1),
];

/// The same for the segmented pipelined pass: 4 up to 88 bytes (H200,
/// 2^28: 6 ran power-law `u32` offsets 2% slower and dense ones 3% faster;
/// BENCHMARKS.md), fewer for wider elements as above. A program holding a
/// segmented kernel prints this one ([`crate::program`]).
pub const SEGMENTED_LOOKAHEAD_TILES_PER_LANE: [(usize, u32); 3] =
    [(88, 4), (PIPELINED_FULL_SQUAD_MAX, 2), (usize::MAX, 1)];

/// The value `table` gives elements of `element_size` bytes.
pub const fn by_size(table: &BySize, element_size: usize) -> u32 {
    let mut i = 0;
    while i < table.len() {
        if element_size <= table[i].0 {
            return table[i].1;
        }
        i += 1;
    }
    panic!("a size table ends at usize::MAX")
}

/// Blocks per SM a single pass of `threads` × `items` over elements of
/// `element_size` bytes asks ptxas for, where a thread takes `overhead`
/// registers beyond its items' words (0: no target, one block). Elements
/// other than 1, 2 and whole words up to 24 bytes ask for one: structs of
/// byte or half-word fields take a register per field, and larger ones
/// spilled at every such size (`tests/nvrtc_sizes.rs`).
pub const fn single_pass_min_blocks(
    threads: u32,
    items: u32,
    element_size: usize,
    overhead: u32,
) -> u32 {
    let measured = element_size <= 2 || (element_size % 4 == 0 && element_size <= 24);
    if overhead == 0 || !measured {
        return 1;
    }
    let words = element_size.div_ceil(4) as u32;
    let blocks = 65536 / (threads * (items * words + overhead));
    if blocks < 1 {
        1
    } else if blocks > 2048 / threads {
        2048 / threads
    } else {
        blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_architecture_finds_its_row() {
        assert_eq!(arch_tuning(Arch::SM_90).cuda_arch, Some(900));
        for arch in Arch::CUDA_13 {
            let row = arch_tuning(arch);
            assert_eq!(row.cuda_arch.is_some(), arch == Arch::SM_90, "{arch:?}");
        }
        // The row for the others comes last, and only there (it prints as
        // the `#else` branch).
        let (last, tuned) = ARCH_TUNING.split_last().unwrap();
        assert_eq!(last.cuda_arch, None);
        assert!(tuned.iter().all(|row| row.cuda_arch.is_some()));
    }

    #[test]
    fn size_tables_cover_every_size() {
        for table in [
            &SINGLE_PASS_OVERHEAD[..],
            &SEGMENTED_SINGLE_PASS_OVERHEAD,
            &LOOKAHEAD_TILES_PER_LANE,
            &SEGMENTED_LOOKAHEAD_TILES_PER_LANE,
        ] {
            assert_eq!(table.last().unwrap().0, usize::MAX);
            assert!(table.windows(2).all(|w| w[0].0 < w[1].0));
        }
        assert_eq!(by_size(&LOOKAHEAD_TILES_PER_LANE, 8), 6);
        assert_eq!(by_size(&LOOKAHEAD_TILES_PER_LANE, 12), 4);
        assert_eq!(by_size(&LOOKAHEAD_TILES_PER_LANE, 88), 4);
        assert_eq!(by_size(&LOOKAHEAD_TILES_PER_LANE, 89), 2);
        assert_eq!(by_size(&LOOKAHEAD_TILES_PER_LANE, 157), 1);
        assert_eq!(by_size(&SEGMENTED_LOOKAHEAD_TILES_PER_LANE, 8), 4);
        assert_eq!(by_size(&SEGMENTED_LOOKAHEAD_TILES_PER_LANE, 89), 2);
    }

    #[test]
    fn single_pass_targets_follow_the_register_estimate() {
        // u32 sum, 256 × 16: 65536 / (256 · (16 + 24)) = 6, capped at 8.
        assert_eq!(single_pass_min_blocks(256, 16, 4, 24), 6);
        assert_eq!(single_pass_min_blocks(128, 1, 4, 24), 16);
        assert_eq!(single_pass_min_blocks(256, 16, 4, 0), 1);
        assert_eq!(single_pass_min_blocks(256, 4, 6, 28), 1); // not measured
        assert_eq!(single_pass_min_blocks(1024, 64, 24, 28), 1);
    }
}
