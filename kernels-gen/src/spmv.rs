//! Sparse matrix–vector products `y = A · x` over CSR on the GPU (issue
//! 47, item 5): the program ([`spmv_program`], one template
//! `templates/spmv.cuh`), its kernels' one parameter block
//! ([`SpmvParams`], printed into the program with its size asserted), the
//! tile shape as a table ([`SpmvShape::default_for`]) and the plan
//! ([`SpmvPlan`]). The CPU's `scan_core::spmv::csr_matvec` is the oracle.
//!
//! The work is the merge of the row ends with the entries (merge path):
//! every tile takes the same number of both together, so a row of a
//! million entries and a million empty rows cost a tile the same. Each
//! tile sums its products by rows as a segmented scan over its threads
//! and writes its carry-out; a second kernel completes each row begun in
//! earlier tiles from their carry-outs, always the same tiles in the same
//! order, and no tile waits for another: the result does not depend on
//! timing.
//!
//! ```
//! use kernels_gen::spmv::{SpmvPlan, SpmvShape};
//! use kernels_gen::{Arch, RealType};
//!
//! let shape = SpmvShape::default_for(RealType::F32, Arch::SM_90);
//! // 2^20 rows and 2^23 entries: one tile per `merge_items` of the two.
//! let plan = SpmvPlan::new(1 << 20, 1 << 23, shape);
//! assert_eq!(plan.tiles, ((1usize << 20) + (1 << 23)).div_ceil(shape.merge_items()));
//! assert_eq!(plan.splits(), plan.tiles + 1);
//! ```

use crate::{Arch, RealType};
use std::fmt::Write;

/// A tile's threads, the merge items (row ends and entries together) each
/// walks, the blocks an SM must hold (the register cap), and how the
/// vector is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpmvShape {
    /// Threads of a block (a multiple of 32, at most 1024).
    pub threads: u32,
    /// Merge items a thread walks.
    pub items: u32,
    /// Blocks an SM must be able to hold (`__launch_bounds__`' second
    /// argument); 0 leaves the registers to ptxas.
    pub min_blocks: u32,
    /// The vector's values read through L2 only (`ld.global.cg`), not the
    /// read-only L1 path (`__ldg`).
    pub gather_l2: bool,
}

/// Static shared memory a block may declare.
const MOST_STATIC_SHARED: usize = 48 * 1024;

impl SpmvShape {
    /// `threads` threads walking `items` items each, registers left to
    /// ptxas, the vector read through L1.
    pub const fn new(threads: u32, items: u32) -> SpmvShape {
        SpmvShape {
            threads,
            items,
            min_blocks: 0,
            gather_l2: false,
        }
    }

    /// Row ends and entries a tile takes together.
    pub fn merge_items(self) -> usize {
        (self.threads * self.items) as usize
    }

    /// Shared memory a tile of values of `real` declares: the row ends
    /// (`u32`, relative to the tile's first entry), the products and the
    /// rows' sums, and each warp's carry-out (a flag and a value).
    pub fn shared_bytes(self, real: RealType) -> usize {
        self.merge_items() * (4 + 2 * real.size())
            + (self.threads / 32) as usize * (4 + real.size())
    }

    /// The tile shape for values of `real` on `arch`: the fastest of the
    /// sweep of `examples/spmv_bench.rs` (`SPMV_BENCH_SWEEP=1`) on the H200
    /// over power-law and uniform rows (BENCHMARKS.md, issue 47's SpMV
    /// section); one entry for every architecture so far.
    pub fn default_for(real: RealType, arch: Arch) -> SpmvShape {
        let _ = arch;
        match real {
            RealType::F32 => SpmvShape::new(512, 7),
            RealType::F64 => SpmvShape::new(256, 5),
        }
    }

    /// The shapes `examples/spmv_bench.rs` sweeps (`SPMV_BENCH_SWEEP=1`)
    /// for values of `real`, each of which runs.
    pub fn sweep(real: RealType) -> Vec<SpmvShape> {
        // Shapes that spill on some architecture are left out: capping the
        // registers for more blocks an SM does (below 40 for floats), and
        // blocks of two or four warps of floats on sm_90.
        let shapes: &[(u32, u32, bool)] = match real {
            RealType::F32 => &[
                (256, 7, false),
                (256, 5, false),
                (512, 5, false),
                (256, 9, false),
                (256, 11, false),
                (256, 7, true),
            ],
            RealType::F64 => &[
                (128, 7, false),
                (128, 5, false),
                (128, 9, false),
                (64, 7, false),
                (128, 7, true),
            ],
        };
        shapes
            .iter()
            .map(|&(threads, items, gather_l2)| SpmvShape {
                gather_l2,
                ..SpmvShape::new(threads, items)
            })
            .collect()
    }

    /// Why this shape cannot run values of `real`, if it cannot.
    pub fn check(self, real: RealType) -> Result<(), String> {
        if self.threads == 0 || self.threads % 32 != 0 || self.threads > 1024 {
            return Err(format!(
                "{} threads: a tile takes a multiple of 32, at most 1024",
                self.threads
            ));
        }
        if u64::from(self.min_blocks) * u64::from(self.threads) > 2048 {
            return Err(format!(
                "{} blocks of {} threads: an SM holds 2048 threads",
                self.min_blocks, self.threads
            ));
        }
        if self.items == 0 || self.items > 32 {
            return Err(format!("{} items a thread: from 1 to 32", self.items));
        }
        let bytes = self.shared_bytes(real);
        if bytes > MOST_STATIC_SHARED {
            return Err(format!(
                "{} merge items of {} take {bytes} bytes of shared memory, past {MOST_STATIC_SHARED}",
                self.merge_items(),
                real.cuda_type()
            ));
        }
        Ok(())
    }
}

/// What a program is specialised for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpmvProgram {
    /// The values' (and vectors') type.
    pub real: RealType,
    /// The row pointers' width: 32 or 64 bits.
    pub offset_bits: u32,
    /// The tile shape.
    pub shape: SpmvShape,
}

impl SpmvProgram {
    fn suffix(&self) -> String {
        let s = self.shape;
        format!(
            "{}_o{}_t{}_i{}_b{}{}",
            self.real.cuda_type(),
            self.offset_bits,
            s.threads,
            s.items,
            s.min_blocks,
            if s.gather_l2 { "_cg" } else { "" }
        )
    }

    fn offset_type(&self) -> &'static str {
        if self.offset_bits == 64 {
            "unsigned long long"
        } else {
            "unsigned"
        }
    }
}

/// A kernel of a sparse-product program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpmvKernel {
    /// Checks each column index against the matrix's columns and writes
    /// the first entry out of range to a device slot (when a matrix is
    /// checked).
    CheckColumns,
    /// Each tile's first row: a merge-path search of the row ends (when a
    /// matrix is checked).
    Partition,
    /// The products, summed by rows, a tile a block (each product).
    Tiles,
    /// The first rows begun in earlier tiles completed from those tiles'
    /// carry-outs: a thread a tile for the 8 nearest, its block's warps
    /// beyond (each product, after `Tiles`).
    Fixup,
}

impl SpmvKernel {
    /// Every kernel of a program.
    pub const ALL: [SpmvKernel; 4] = [
        SpmvKernel::CheckColumns,
        SpmvKernel::Partition,
        SpmvKernel::Tiles,
        SpmvKernel::Fixup,
    ];

    /// The exported name in `program`.
    pub fn symbol(self, program: &SpmvProgram) -> String {
        let base = match self {
            SpmvKernel::CheckColumns => "spmv_check_columns",
            SpmvKernel::Partition => "spmv_partition",
            SpmvKernel::Tiles => "spmv_tiles",
            SpmvKernel::Fixup => "spmv_fixup",
        };
        format!("gpu_scan_{base}_{}", program.suffix())
    }

    /// Threads a block of this kernel.
    pub fn block_threads(self, shape: SpmvShape) -> u32 {
        match self {
            SpmvKernel::Tiles => shape.threads,
            _ => UTILITY_THREADS,
        }
    }

    /// The kernel's `__launch_bounds__` arguments.
    fn launch_bounds(self, shape: SpmvShape) -> String {
        match self {
            SpmvKernel::Tiles if shape.min_blocks > 0 => {
                format!("{}, {}", shape.threads, shape.min_blocks)
            }
            _ => self.block_threads(shape).to_string(),
        }
    }
}

/// Threads a block of the checking and partition kernels.
pub const UTILITY_THREADS: u32 = 256;

/// The one parameter block of every sparse-product kernel, passed by
/// value (`#[repr(C)]`; the CUDA `spmv_params` is printed from
/// [`SPMV_PARAM_FIELDS`] with its size asserted). Addresses are device
/// addresses; 0 where a kernel does not use them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpmvParams {
    /// Row pointers (`rows + 1`, `u32` or `u64`).
    pub row_ptr: u64,
    /// Each entry's column (`u32`).
    pub col_idx: u64,
    /// Each entry's value.
    pub values: u64,
    /// The vector multiplied (`cols` values).
    pub x: u64,
    /// The product written (`rows` values).
    pub y: u64,
    /// Each tile's first row (`tiles + 1` `u64`s, the last the rows).
    pub tile_rows: u64,
    /// Each tile's state: bit 0, a row ends in it; bit 1, its first row
    /// began in an earlier tile and ends in it.
    pub tile_flags: u64,
    /// Each tile's carry-out: the sum of its products after its last row
    /// end.
    pub tile_values: u64,
    /// The checking kernel's slot: the first entry whose column is out of
    /// range (`u64::MAX` for none).
    pub bad: u64,
    /// Rows.
    pub rows: u64,
    /// Entries.
    pub entries: u64,
    /// Columns.
    pub cols: u64,
    /// Tiles.
    pub tiles: u64,
}

/// The fields of [`SpmvParams`] in order, each a 64-bit word.
pub const SPMV_PARAM_FIELDS: [&str; 13] = [
    "row_ptr",
    "col_idx",
    "values",
    "x",
    "y",
    "tile_rows",
    "tile_flags",
    "tile_values",
    "bad",
    "rows",
    "entries",
    "cols",
    "tiles",
];

/// How a product of a matrix runs: its tiles (a block each). Pure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpmvPlan {
    /// The tile shape.
    pub shape: SpmvShape,
    /// Tiles of `shape.merge_items()` row ends and entries together.
    pub tiles: usize,
}

impl SpmvPlan {
    /// The plan of a matrix of `rows` rows and `entries` entries.
    pub fn new(rows: usize, entries: usize, shape: SpmvShape) -> SpmvPlan {
        SpmvPlan {
            shape,
            tiles: (rows + entries).div_ceil(shape.merge_items()),
        }
    }

    /// The tiles' splits the partition writes (each tile's first row and
    /// the end).
    pub fn splits(&self) -> usize {
        self.tiles + 1
    }

    /// The `u32` words of the tiles' states.
    pub fn flag_words(&self) -> usize {
        self.tiles
    }

    /// Threads of the fix-up kernel: a thread a tile (a tile whose row
    /// reaches further back than 8 tiles is then walked by a warp of its
    /// block).
    pub fn fixup_threads(&self) -> usize {
        self.tiles
    }
}

/// The CUDA declaration of [`SpmvParams`].
pub fn params_declaration() -> String {
    crate::param_block::declaration("spmv_params", &SPMV_PARAM_FIELDS)
}

/// The sparse-product program `program`: the parameter block, the
/// template, and one `extern "C"` wrapper per [`SpmvKernel`].
pub fn spmv_program(program: &SpmvProgram) -> String {
    let mut out = params_declaration();
    out.push_str(include_str!("templates/spmv.cuh"));
    let _ = writeln!(out, "\n// Kernels (kernels_gen::spmv::spmv_program).");
    let (t, o) = (program.real.cuda_type(), program.offset_type());
    let SpmvShape {
        threads,
        items,
        gather_l2,
        ..
    } = program.shape;
    for kernel in SpmvKernel::ALL {
        let body = match kernel {
            SpmvKernel::CheckColumns => "gpu_scan::spmv_check_columns(p)".to_string(),
            SpmvKernel::Partition => format!(
                "gpu_scan::spmv_partition<{o}>(p, {})",
                program.shape.merge_items()
            ),
            SpmvKernel::Tiles => {
                format!("gpu_scan::spmv_tiles<{t}, {o}, {threads}, {items}, {gather_l2}>(p)")
            }
            SpmvKernel::Fixup => format!("gpu_scan::spmv_fixup<{t}, {UTILITY_THREADS}>(p)"),
        };
        let _ = writeln!(
            out,
            "extern \"C\" __global__ void __launch_bounds__({}) {}(const spmv_params p) {{\n  {body};\n}}",
            kernel.launch_bounds(program.shape),
            kernel.symbol(program),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cuda_parameter_block_has_the_rust_one_s_offsets() {
        let p = SpmvParams::default();
        let base = &p as *const SpmvParams as usize;
        let fields: [&u64; 13] = [
            &p.row_ptr,
            &p.col_idx,
            &p.values,
            &p.x,
            &p.y,
            &p.tile_rows,
            &p.tile_flags,
            &p.tile_values,
            &p.bad,
            &p.rows,
            &p.entries,
            &p.cols,
            &p.tiles,
        ];
        for (i, field) in fields.iter().enumerate() {
            assert_eq!(
                *field as *const u64 as usize - base,
                8 * i,
                "{}",
                SPMV_PARAM_FIELDS[i]
            );
        }
        assert_eq!(
            std::mem::size_of::<SpmvParams>(),
            8 * SPMV_PARAM_FIELDS.len()
        );
        assert!(params_declaration().contains("sizeof(spmv_params) == 104"));
    }

    #[test]
    fn the_default_shapes_fit_and_bad_shapes_are_refused() {
        for real in [RealType::F32, RealType::F64] {
            for arch in Arch::CUDA_13 {
                assert_eq!(SpmvShape::default_for(real, arch).check(real), Ok(()));
            }
        }
        let shape = SpmvShape::new;
        assert!(shape(100, 7).check(RealType::F32).is_err());
        assert!(shape(256, 0).check(RealType::F32).is_err());
        assert!(shape(2048, 1).check(RealType::F32).is_err());
        // 256 · 32 merge items of doubles: 160 KiB.
        assert!(shape(256, 32).check(RealType::F64).is_err());
        assert_eq!(
            shape(256, 8).shared_bytes(RealType::F64),
            2048 * 20 + 8 * 12
        );
        // Exactly 48 KiB of tiles leaves no room for the warps' carry-outs.
        assert!(shape(512, 8).check(RealType::F32).is_err());
        assert!(shape(1024, 4).check(RealType::F32).is_err());
        let huge = SpmvShape {
            min_blocks: u32::MAX,
            ..shape(256, 5)
        };
        assert!(huge.check(RealType::F32).is_err());
        let capped = SpmvShape {
            min_blocks: 9,
            ..shape(256, 5)
        };
        assert!(capped.check(RealType::F32).is_err());
    }

    #[test]
    fn tiles_cover_the_rows_and_entries_together() {
        let shape = SpmvShape::new(128, 7);
        assert_eq!(shape.merge_items(), 896);
        assert_eq!(SpmvPlan::new(0, 0, shape).tiles, 0);
        assert_eq!(SpmvPlan::new(1, 0, shape).tiles, 1);
        assert_eq!(SpmvPlan::new(896, 0, shape).tiles, 1);
        assert_eq!(SpmvPlan::new(400, 497, shape).tiles, 2);
        // A million empty rows cost the tiles of a million entries.
        assert_eq!(
            SpmvPlan::new(1 << 20, 0, shape).tiles,
            SpmvPlan::new(1, (1 << 20) - 1, shape).tiles
        );
    }

    #[test]
    fn a_program_exports_each_kernel_with_its_shape() {
        let program = SpmvProgram {
            real: RealType::F64,
            offset_bits: 64,
            shape: SpmvShape {
                min_blocks: 12,
                gather_l2: true,
                ..SpmvShape::new(128, 5)
            },
        };
        let source = spmv_program(&program);
        for kernel in SpmvKernel::ALL {
            assert!(source.contains(&kernel.symbol(&program)), "{kernel:?}");
        }
        assert!(source.contains("spmv_tiles<double, unsigned long long, 128, 5, true>(p)"));
        assert!(source
            .contains("__launch_bounds__(128, 12) gpu_scan_spmv_tiles_double_o64_t128_i5_b12_cg("));
        assert!(source.contains("spmv_partition<unsigned long long>(p, 640)"));
    }
}
