//! Two-dimensional scans on the GPU (summed-area tables,
//! [`ScanSpec::summed_area`]). A commutative operator's scans run in tiles
//! (`summed_area.cuh`: two reads and one write of the matrix), inclusive
//! ones anywhere and exclusive ones out of place; every other scan runs
//! along the rows, then down the columns.

use crate::entry::{Bound, Operands};
use crate::error::Result;
use crate::gpu::GpuScanner;
use crate::launch::{self, AreaArgs};
use crate::segments::DeviceSegments;
use cudarc::driver::{CudaStream, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use kernels_gen::abi::{AreaStep, KernelAbi, ELEMENTWISE_BLOCK_THREADS};
use kernels_gen::AreaTiles;
use scan_core::segmented::RowLengthMismatch;
use scan_core::summed_area::row_spec;
use scan_core::{NoCarryOut, ScanKind, ScanOp, ScanSpec};
use std::sync::Arc;

/// How a two-dimensional scan runs.
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// Nothing to scan.
    Empty,
    /// In tiles: a commutative operator's inclusive scan, or its exclusive
    /// scan out of place.
    Tiled(AreaTiles),
    /// Along the rows, then down the columns (in `column_tiles` tiles).
    RowsThenColumns { column_tiles: usize },
}

/// Blocks of the carries step: one for the tiles' corners, and a grid-stride
/// loop of at most this many over the rows and columns.
const CARRY_BLOCKS: usize = 1024;

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// [`GpuScanner::scan`] of a matrix in two dimensions
    /// ([`ScanSpec::summed_area`]).
    pub(crate) fn scan_2d_of(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        row_length: usize,
        operands: Operands<'_, Op::Element>,
    ) -> Result<()> {
        let n = operands.len()?;
        let in_place = matches!(operands, Operands::InPlace(_));
        self.enter(
            stream,
            operands,
            n,
            &mut NoCarryOut,
            |s| s.prepare_2d(stream, &spec, n, row_length, in_place),
            |s, plan, b| s.launch_2d(stream, spec, plan, row_length, &b),
        )
    }

    /// Reserves the scratch of two-dimensional scans `spec` of up to `n`
    /// elements in rows of `row_length` on `stream`, in place or not.
    pub(crate) fn reserve_2d(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: &ScanSpec<Op::Element>,
        n: usize,
        row_length: usize,
    ) -> Result<()> {
        for in_place in [false, true] {
            self.prepare_2d(stream, spec, n, row_length, in_place)?;
        }
        Ok(())
    }

    /// Checks the shape, chooses how to scan (`in_place`: onto the input)
    /// and reserves the scratch.
    fn prepare_2d(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: &ScanSpec<Op::Element>,
        n: usize,
        row_length: usize,
        in_place: bool,
    ) -> Result<Plan> {
        RowLengthMismatch::check(n, row_length)?;
        if n == 0 {
            return Ok(Plan::Empty);
        }
        let rows = n / row_length;
        let inclusive = matches!(
            spec.kind,
            ScanKind::Inclusive | ScanKind::InclusiveWithInit(_)
        );
        if self.op.commutative && (inclusive || !in_place) {
            let layout = self.op.layout;
            let resident = self.area_residency()?;
            if let Some(tiles) = AreaTiles::new(
                rows,
                row_length,
                self.op.block_threads() as usize,
                layout.column_items_per_thread as usize,
                resident,
            ) {
                self.workspace_allocations += self
                    .workspace(stream)
                    .reserve_area(stream, tiles.scratch_len(rows, row_length))?;
                return Ok(Plan::Tiled(tiles));
            }
        }
        self.prepare(n, stream)?;
        let column_tiles = self.prepare_columns(n, row_length, stream)?;
        Ok(Plan::RowsThenColumns { column_tiles })
    }

    /// Blocks of the tiles' kernels resident on the device at once.
    fn area_residency(&mut self) -> Result<usize> {
        if let Some(blocks) = self.area_residency {
            return Ok(blocks);
        }
        let kernel = self.kernel(KernelAbi::SummedArea(AreaStep::Finish))?;
        let per_sm = kernel
            .function
            .occupancy_max_active_blocks_per_multiprocessor(self.op.block_threads(), 0, None)?;
        let blocks = (per_sm.max(1) as usize) * crate::device::multiprocessors(&self.ctx)?;
        self.area_residency = Some(blocks);
        Ok(blocks)
    }

    #[allow(clippy::too_many_arguments)]
    fn launch_2d(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        plan: Plan,
        row_length: usize,
        b: &Bound,
    ) -> Result<()> {
        let (src, dst, n) = (b.src, b.dst, b.n);
        match plan {
            Plan::Empty => Ok(()),
            Plan::RowsThenColumns { column_tiles } => {
                let rows = DeviceSegments::rows(row_length);
                self.launch_tiles(stream, row_spec(&spec), Some(&rows), &b.without_carry())?;
                self.launch_columns(stream, spec, row_length, column_tiles, dst, dst, n)
            }
            Plan::Tiled(tiles) => {
                let seed = spec.kind.init().unwrap_or(self.identity);
                let exclusive = !spec.kind.is_inclusive();
                self.launch_area_tiles(
                    stream,
                    tiles,
                    seed,
                    spec.is_reverse(),
                    exclusive,
                    row_length,
                    src,
                    dst,
                    n,
                )
            }
        }
    }

    /// The three launches of a scan in tiles (`summed_area.cuh`); an
    /// exclusive one (`exclusive`) out of place only.
    #[allow(clippy::too_many_arguments)]
    fn launch_area_tiles(
        &mut self,
        stream: &Arc<CudaStream>,
        tiles: AreaTiles,
        seed: Op::Element,
        reverse: bool,
        exclusive: bool,
        row_length: usize,
        src: u64,
        dst: u64,
        n: usize,
    ) -> Result<()> {
        let rows = n / row_length;
        let element = self.op.element_size() as u64;
        let row_totals = self.workspace(stream).area();
        let column_totals = row_totals + (rows * tiles.col_tiles) as u64 * element;
        let tile_totals = column_totals + (tiles.bands * row_length) as u64 * element;
        let area = AreaArgs {
            row_totals,
            column_totals,
            tile_totals,
            rows: rows as u64,
            cols: row_length as u64,
            band: tiles.band as u64,
        };
        let per_tile = LaunchConfig {
            grid_dim: (tiles.tiles() as u32, 1, 1),
            block_dim: (self.op.block_threads(), 1, 1),
            shared_mem_bytes: 0,
        };
        let carry_blocks = 1
            + (rows + row_length)
                .div_ceil(ELEMENTWISE_BLOCK_THREADS as usize)
                .min(CARRY_BLOCKS);
        let carries = LaunchConfig {
            grid_dim: (carry_blocks as u32, 1, 1),
            block_dim: (ELEMENTWISE_BLOCK_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let abi = KernelAbi::SummedArea(AreaStep::TileTotals);
        let kernel = self.kernel(abi)?;
        let args = launch::area_tile_totals::<Op::Element>(src, &area, reverse);
        // SAFETY: (const T* input, T* row_totals, T* column_totals, T*
        // tile_totals, u64 rows, u64 cols, u64 band, int reverse), checked
        // against the ABI table; input holds rows × cols = n elements (shape
        // checked); the scratch holds AreaTiles::scratch_len elements
        // (prepare_2d), split here as the kernels index it (rows × col_tiles,
        // bands × cols, bands × col_tiles); one block per tile.
        unsafe { launch::launch(stream, &kernel.function, abi, self.op.name, &args, per_tile)? };
        let abi = KernelAbi::SummedArea(AreaStep::Carries);
        let kernel = self.kernel(abi)?;
        let args = launch::area_carries(&area, seed);
        // SAFETY: (T* row_totals, T* column_totals, T* tile_totals, u64 rows,
        // u64 cols, u64 band, T seed), checked against the ABI table; the
        // same scratch, written by the launch before on this stream; block 0
        // takes the tiles' totals, the others a grid-stride loop over rows
        // and columns, each index by one thread.
        unsafe { launch::launch(stream, &kernel.function, abi, self.op.name, &args, carries)? };
        let abi = KernelAbi::SummedArea(AreaStep::Finish);
        let kernel = self.kernel(abi)?;
        let args = launch::area_finish::<Op::Element>(src, dst, &area, reverse, exclusive);
        // SAFETY: (const T* input, T* output, const T* left, const T* above,
        // const T* corners, u64 rows, u64 cols, u64 band, int reverse, int
        // exclusive), checked against the ABI table; input and output hold n
        // elements; the carries as above; one block per tile. An inclusive
        // scan in place is safe: each element is read and then written by
        // the same thread. An exclusive one writes into other tiles, and
        // prepare_2d plans it in tiles only out of place.
        unsafe { launch::launch(stream, &kernel.function, abi, self.op.name, &args, per_tile) }
    }
}
