//! Sparse matrix–vector products `y = A · x` over CSR on the GPU (issue
//! 47, item 5), over the caller's device arrays, as the CPU's
//! [`csr_matvec`](scan_core::spmv::csr_matvec) computes them: each row's
//! products summed, an empty row 0.
//!
//! A matrix is checked once ([`GpuSpmv::check`]: row pointers from 0 to
//! the entries, never decreasing, every column inside the matrix) and its
//! tiles found then: each tile takes the same number of row ends and
//! entries together (merge path), so power-law rows and runs of empty
//! rows balance by themselves. Products with it ([`GpuSpmv::matvec`]) then
//! check nothing and wait for nothing, and may be captured in a CUDA graph:
//! a kernel sums each tile's rows as a segmented scan of its products over
//! the tile's threads, and a second completes the rows begun in earlier
//! tiles from those tiles' carry-outs, always in the same order: the same
//! matrix and vector give the same bits on every run.

use crate::capture::AddressStream;
use crate::error::{Result, ScanError};
use crate::flag_builder::HeadFlagBuilder;
use crate::kernels::{ProgramSet, ProgramStats};
use crate::offsets::DeviceOffset;
use crate::real::DeviceReal;
use crate::workspace::{stream_key, RegionScratch};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, CudaView, DevicePtr, DevicePtrMut,
    DeviceRepr, LaunchConfig, PushKernelArg,
};
use kernels_gen::spmv::{
    spmv_program, SpmvKernel, SpmvParams, SpmvPlan, SpmvProgram, SpmvShape, UTILITY_THREADS,
};
use kernels_gen::RealType;
use scan_core::segmented::SegmentOffset;
use scan_core::spmv::SpmvError;
use std::collections::HashMap;
use std::sync::Arc;

/// A CSR matrix in device memory, checked by [`GpuSpmv::check`] (the only
/// way to make one) and split into its tiles then. It borrows the arrays,
/// so they cannot change while it lives; products with it check nothing
/// and wait for nothing.
pub struct DeviceCsr<'a, T, O = u32> {
    cols: usize,
    row_ptr: CudaView<'a, O>,
    col_idx: CudaView<'a, u32>,
    values: CudaView<'a, T>,
    /// Each tile's first row, and the rows.
    tile_rows: CudaSlice<u64>,
    plan: SpmvPlan,
}

impl<T, O> DeviceCsr<'_, T, O> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Entries (values stored).
    pub fn entries(&self) -> usize {
        self.values.len()
    }

    /// The tiles its products run in.
    pub fn plan(&self) -> SpmvPlan {
        self.plan
    }
}

/// The kernels' parameter block (`kernels_gen::spmv::SpmvParams`).
#[repr(transparent)]
#[derive(Clone, Copy)]
struct Params(SpmvParams);

// SAFETY: `SpmvParams` is `#[repr(C)]`, 13 `u64`s with no padding, the
// layout of the CUDA `spmv_params` printed from the same field table (its
// size asserted in the program).
unsafe impl DeviceRepr for Params {}

/// Sparse matrix–vector products on one context, each program compiled the
/// first time it is needed (through the disk cache) and kept.
///
/// ```no_run
/// use gpu_scan::scan_runtime::{open_device, GpuSpmv};
///
/// let ctx = open_device(0)?;
/// let stream = ctx.new_stream()?;
/// // [[1 0 2]
/// //  [0 0 0]
/// //  [0 3 0]]
/// let row_ptr = stream.clone_htod(&[0u32, 2, 2, 3])?;
/// let col_idx = stream.clone_htod(&[0u32, 2, 1])?;
/// let values = stream.clone_htod(&[1.0f32, 2.0, 3.0])?;
/// let mut spmv = GpuSpmv::new(&ctx)?;
/// let m = spmv.check(&stream, 3, row_ptr.as_view(), col_idx.as_view(), values.as_view())?;
/// let x = stream.clone_htod(&[1.0f32, 10.0, 100.0])?;
/// let mut y = stream.alloc_zeros::<f32>(3)?;
/// spmv.matvec(&stream, &m, &x, &mut y)?;
/// assert_eq!(stream.clone_dtoh(&y)?, [201.0, 0.0, 30.0]);
/// # Ok::<(), gpu_scan::ScanError>(())
/// ```
pub struct GpuSpmv {
    programs: ProgramSet<SpmvProgram, SpmvKernel>,
    /// For the row pointers' check (`HeadFlagBuilder`).
    disk: crate::cache::DiskCache,
    /// Per stream, the tiles' states and carry-outs.
    scratch: HashMap<usize, RegionScratch>,
    shapes: HashMap<RealType, SpmvShape>,
    addresses: AddressStream,
}

impl GpuSpmv {
    /// Sparse products on `ctx`, with the disk cache the environment
    /// selects.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        Self::with_disk_cache(ctx, &crate::cache::DiskCache::from_env())
    }

    /// Sparse products on `ctx` with an explicit disk cache.
    pub fn with_disk_cache(ctx: &Arc<CudaContext>, disk: &crate::cache::DiskCache) -> Result<Self> {
        Ok(GpuSpmv {
            programs: ProgramSet::new(ctx, disk, "spmv")?,
            disk: disk.clone(),
            scratch: HashMap::new(),
            shapes: HashMap::new(),
            addresses: AddressStream::default(),
        })
    }

    /// How the programs used so far were obtained, summed.
    pub fn program_stats(&self) -> ProgramStats {
        self.programs.stats()
    }

    /// The tile shape matrices of values `T` are checked with from now on:
    /// the table's ([`SpmvShape::default_for`]) unless set.
    pub fn shape_for<T: DeviceReal>(&self) -> SpmvShape {
        self.shapes
            .get(&T::REAL)
            .copied()
            .unwrap_or_else(|| SpmvShape::default_for(T::REAL, self.programs.arch()))
    }

    /// Checks matrices of values `T` with `shape` from now on (`None`: the
    /// table's), for tuning; a shape that cannot run is a
    /// [`ScanError::SpmvShape`]. Matrices checked before keep theirs.
    pub fn set_shape<T: DeviceReal>(&mut self, shape: Option<SpmvShape>) -> Result<()> {
        match shape {
            None => {
                self.shapes.remove(&T::REAL);
            }
            Some(shape) => {
                shape
                    .check(T::REAL)
                    .map_err(|detail| ScanError::SpmvShape { detail })?;
                self.shapes.insert(T::REAL, shape);
            }
        }
        Ok(())
    }

    /// Checks on the device that `row_ptr`, `col_idx` and `values` are a
    /// CSR matrix of `cols` columns (`row_ptr.len() - 1` rows), waits for
    /// the verdict, and splits it into tiles for the products. The first
    /// thing wrong is a [`ScanError::Spmv`] naming it, as the CPU's
    /// [`Csr::check`](scan_core::spmv::Csr::check) would: no row pointers,
    /// column indices and values of other lengths, row pointers that
    /// decrease, pass the entries or do not run from 0 to them, an entry
    /// in a column past `cols`. Runs on `stream` after the work already
    /// there.
    pub fn check<'a, T: DeviceReal, O: DeviceOffset + SegmentOffset>(
        &mut self,
        stream: &Arc<CudaStream>,
        cols: usize,
        row_ptr: CudaView<'a, O>,
        col_idx: CudaView<'a, u32>,
        values: CudaView<'a, T>,
    ) -> Result<DeviceCsr<'a, T, O>> {
        let entries = values.len();
        if col_idx.len() != entries {
            return Err(SpmvError::Entries {
                col_idx: col_idx.len(),
                values: entries,
            }
            .into());
        }
        if row_ptr.is_empty() {
            return Err(SpmvError::NoRowPointers.into());
        }
        HeadFlagBuilder::with_disk_cache(stream.context(), &self.disk)?
            .check_offsets(stream, &row_ptr, entries)
            .map_err(|e| match e {
                ScanError::InvalidOffsets(e) => SpmvError::RowPointers(e).into(),
                e => e,
            })?;
        let rows = row_ptr.len() - 1;
        let first = stream.clone_dtoh(&row_ptr.slice(..1))?[0].to_u64();
        let last = stream.clone_dtoh(&row_ptr.slice(rows..))?[0].to_u64();
        if first != 0 || last != entries as u64 {
            return Err(SpmvError::RowPointerEnds {
                first,
                last,
                entries,
            }
            .into());
        }
        let shape = self.shape_for::<T>();
        let plan = SpmvPlan::new(rows, entries, shape);
        if plan.tiles > i32::MAX as usize {
            return Err(ScanError::TooLong {
                len: rows + entries,
                max: i32::MAX as usize * shape.merge_items(),
            });
        }
        let functions = self.program(&program::<T, O>(shape))?;
        let at = self.addresses.for_stream(stream)?;
        let mut bad = stream.clone_htod(&[u64::MAX])?;
        let mut tile_rows = stream.alloc_zeros::<u64>(plan.splits())?;
        {
            let (row_ptr_at, _r) = row_ptr.device_ptr(&at);
            let (col_at, _c) = col_idx.device_ptr(&at);
            let (bad_at, _b) = bad.device_ptr_mut(&at);
            let (tile_rows_at, _t) = tile_rows.device_ptr_mut(&at);
            let params = Params(SpmvParams {
                row_ptr: row_ptr_at,
                col_idx: col_at,
                tile_rows: tile_rows_at,
                bad: bad_at,
                rows: rows as u64,
                entries: entries as u64,
                cols: cols as u64,
                tiles: plan.tiles as u64,
                ..SpmvParams::default()
            });
            let multiprocessors = crate::device::multiprocessors(self.programs.context())?;
            let check_blocks = entries
                .div_ceil(UTILITY_THREADS as usize)
                .min(multiprocessors * 8);
            let launches = [
                (SpmvKernel::CheckColumns, check_blocks),
                (
                    SpmvKernel::Partition,
                    plan.splits().div_ceil(UTILITY_THREADS as usize),
                ),
            ];
            for (kernel, blocks) in launches {
                if blocks == 0 {
                    continue;
                }
                let mut builder = stream.launch_builder(&functions[&kernel]);
                builder.arg(&params);
                // SAFETY: the column check reads the `entries` column
                // indices and writes the one-`u64` slot; the partition reads
                // the `rows + 1` row pointers and writes `splits` tile rows.
                unsafe { builder.launch(config(blocks, UTILITY_THREADS)) }?;
            }
        }
        let entry = stream.clone_dtoh(&bad)?[0];
        if entry != u64::MAX {
            let col = stream.clone_dtoh(&col_idx.slice(entry as usize..entry as usize + 1))?[0];
            return Err(SpmvError::Column {
                entry: entry as usize,
                col,
                cols,
            }
            .into());
        }
        Ok(DeviceCsr {
            cols,
            row_ptr,
            col_idx,
            values,
            tile_rows,
            plan,
        })
    }

    /// Reserves `stream`'s scratch for products with `m`, so that they can
    /// be captured in a CUDA graph (a product that needs more then fails
    /// with [`ScanError::WorkspaceDuringCapture`]).
    pub fn reserve<T: DeviceReal, O: DeviceOffset>(
        &mut self,
        stream: &Arc<CudaStream>,
        m: &DeviceCsr<'_, T, O>,
    ) -> Result<()> {
        self.program(&program::<T, O>(m.plan.shape))?;
        self.scratch_for::<T>(stream, &m.plan).map(|_| ())
    }

    /// `y = m · x` on `stream`. An `x` of another length than the matrix's
    /// columns or a `y` of another than its rows fails with
    /// [`ScanError::Spmv`] before anything is enqueued.
    pub fn matvec<T: DeviceReal, O: DeviceOffset>(
        &mut self,
        stream: &Arc<CudaStream>,
        m: &DeviceCsr<'_, T, O>,
        x: &impl DevicePtr<T>,
        y: &mut impl DevicePtrMut<T>,
    ) -> Result<()> {
        scan_core::spmv::check_vectors(m.cols, m.rows(), x.len(), y.len())?;
        let plan = m.plan;
        if plan.tiles == 0 {
            return Ok(());
        }
        // Everything reserved and loaded before anything is enqueued (the
        // scratch first: during a capture without `reserve` it refuses).
        let [flags, carries] = self.scratch_for::<T>(stream, &plan)?;
        let functions = self.program(&program::<T, O>(plan.shape))?;
        let at = self.addresses.for_stream(stream)?;
        let (row_ptr, _r) = m.row_ptr.device_ptr(&at);
        let (col_idx, _c) = m.col_idx.device_ptr(&at);
        let (values, _v) = m.values.device_ptr(&at);
        let (tile_rows, _t) = m.tile_rows.device_ptr(&at);
        let (x, _x) = x.device_ptr(&at);
        let (y, _y) = y.device_ptr_mut(&at);
        let params = Params(SpmvParams {
            row_ptr,
            col_idx,
            values,
            x,
            y,
            tile_rows,
            tile_flags: flags,
            tile_values: carries,
            bad: 0,
            rows: m.rows() as u64,
            entries: m.entries() as u64,
            cols: m.cols as u64,
            tiles: plan.tiles as u64,
        });
        let launches = [
            (SpmvKernel::Tiles, config(plan.tiles, plan.shape.threads)),
            (
                SpmvKernel::Fixup,
                config(
                    plan.fixup_threads().div_ceil(UTILITY_THREADS as usize),
                    UTILITY_THREADS,
                ),
            ),
        ];
        for (kernel, config) in launches {
            let mut builder = stream.launch_builder(&functions[&kernel]);
            builder.arg(&params);
            // SAFETY: the matrix was checked (row pointers cut the entries,
            // columns below `cols`) and split for this plan, so a tile reads
            // only its row pointers, entries and the `cols` values of `x`
            // (checked), and writes only its rows of `y` (checked) and its
            // state and carry-out in the scratch, which holds the plan's; the
            // fix-up reads those and adds to its tiles' first rows of `y`.
            unsafe { builder.launch(config) }?;
        }
        Ok(())
    }

    /// `stream`'s scratch for `plan` in `T` (growing it outside a capture):
    /// the addresses of the tiles' flags and carry-outs.
    fn scratch_for<T: DeviceReal>(
        &mut self,
        stream: &Arc<CudaStream>,
        plan: &SpmvPlan,
    ) -> Result<[u64; 2]> {
        self.scratch.entry(stream_key(stream)).or_default().regions(
            stream,
            [plan.flag_words() * 4, plan.tiles * std::mem::size_of::<T>()],
            "GpuSpmv::reserve",
        )
    }

    /// The kernels of `program`, compiled (or read from the disk cache)
    /// and loaded the first time.
    fn program(&mut self, program: &SpmvProgram) -> Result<HashMap<SpmvKernel, CudaFunction>> {
        self.programs.kernels(
            program,
            || spmv_program(program),
            SpmvKernel::ALL.map(|k| (k, k.symbol(program))),
        )
    }
}

/// The program of values `T`, row pointers `O` and `shape`.
fn program<T: DeviceReal, O>(shape: SpmvShape) -> SpmvProgram {
    SpmvProgram {
        real: T::REAL,
        offset_bits: 8 * std::mem::size_of::<O>() as u32,
        shape,
    }
}

fn config(blocks: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}
