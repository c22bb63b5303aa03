//! Column scans on the GPU ([`ScanSpec::columns`]), a row-major matrix
//! scanned down its columns (`columns.cuh`): one pass reads the matrix
//! once and writes it once, each warp scanning 32 adjacent columns with
//! coalesced loads. Where the matrix has enough strips of 32 columns to
//! fill half the device, each block walks down a whole strip; otherwise
//! the tiles of a strip are chained by decoupled look-back (narrow
//! matrices are far slower than wide ones: BENCHMARKS.md).

use crate::entry::Operands;
use crate::error::{Result, ScanError};
use crate::gpu::GpuScanner;
use crate::launch;
use crate::path::MAX_TILES;
use cudarc::driver::{CudaStream, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use kernels_gen::abi::KernelAbi;
use kernels_gen::Kernel;
use scan_core::segmented::RowLengthMismatch;
use scan_core::{NoCarryOut, ScanOp, ScanSpec};
use std::sync::Arc;

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// [`GpuScanner::scan`] of a matrix down its columns
    /// ([`ScanSpec::columns`]).
    pub(crate) fn scan_columns_of(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        row_length: usize,
        operands: Operands<'_, Op::Element>,
    ) -> Result<()> {
        let n = operands.len()?;
        self.enter(
            stream,
            operands,
            n,
            &mut NoCarryOut,
            |s| s.prepare_columns(n, row_length, stream),
            |s, tiles, b| s.launch_columns(stream, spec, row_length, tiles, b.src, b.dst, n),
        )
    }

    /// Checks the shape and reserves the scratch; returns the launch's tiles.
    pub(crate) fn prepare_columns(
        &mut self,
        n: usize,
        row_length: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<usize> {
        if self.tuning.deterministic {
            return Err(ScanError::NotDeterministic { shape: "columns" });
        }
        RowLengthMismatch::check(n, row_length)?;
        if n == 0 {
            return Ok(0);
        }
        let tiles = self.op.layout.columns_tiles(n / row_length, row_length);
        if tiles > MAX_TILES {
            return Err(ScanError::TooLong {
                len: n,
                max: MAX_TILES * self.op.tile_items(),
            });
        }
        self.workspace_allocations += self.workspace(stream).reserve_columns(stream, tiles)?;
        Ok(tiles)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_columns(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        row_length: usize,
        tiles: usize,
        src: u64,
        dst: u64,
        n: usize,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let kernel = if spec.kind.is_inclusive() {
            Kernel::ColumnsInclusive
        } else {
            Kernel::ColumnsExclusive
        };
        let seed = spec.kind.init().unwrap_or(self.identity);
        let abi = KernelAbi::plain(kernel)
            .in_direction(spec.direction)
            .expect("every plain kernel runs in both directions");
        let kernel = self.kernel(abi)?;
        let resident = match self.column_residency {
            Some(blocks) => blocks,
            None => {
                let per_sm = kernel
                    .function
                    .occupancy_max_active_blocks_per_multiprocessor(
                        self.op.block_threads(),
                        0,
                        None,
                    )?;
                let blocks = per_sm as usize * crate::device::multiprocessors(&self.ctx)?;
                self.column_residency = Some(blocks);
                blocks
            }
        };
        let rows = n / row_length;
        let strips = row_length.div_ceil(kernels_gen::COLUMNS_PER_TILE);
        let row_lanes = self.op.layout.column_row_lanes(row_length);
        // Strips that fill at least half the device's resident blocks walk
        // down their columns, one block each; fewer strips split their
        // columns into tiles chained by look-back, which keeps the device
        // full whatever the matrix's width (and packs the rows of a narrow
        // one several a warp).
        let walk = row_lanes == kernels_gen::COLUMNS_PER_TILE && 2 * strips >= resident;
        let grid = if walk { strips } else { tiles };
        let scratch = self.workspace(stream).single_pass_args();
        let args = launch::columns(
            src,
            dst,
            &scratch,
            seed,
            rows as u64,
            row_length as u64,
            row_lanes as u64,
            walk,
        );
        let config = LaunchConfig {
            grid_dim: (grid as u32, 1, 1),
            block_dim: (self.op.block_threads(), 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: (const T* input, T* output, void* status, T* aggregates, T* prefixes,
        // scan_launch_state* launch, T seed, u64 rows, u64 cols, u64 row_lanes, int walk), checked
        // against the ABI table; src and dst hold rows × cols = n elements (lengths and
        // shape checked); this stream's scratch holds >= tiles status entries and 32
        // aggregates and prefixes per tile (prepare_columns) and a reset launch state;
        // one block per tile (per strip when walking), so the launch takes exactly the
        // indices the kernel expects. In place is safe: every element is read and
        // written by one thread, which reads its items first.
        unsafe { launch::launch(stream, &kernel.function, abi, self.op.name, &args, config) }
    }
}
