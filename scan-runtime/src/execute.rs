//! The one executor of scans over tiles, plain and segmented alike (a plain
//! scan is a segmented one with no segments, on the host as on the device):
//! the planner's [`Path`] ([`plan::choose`]) run as its [`Step`]s, each the
//! kernel of its [`Pass`] in the scan's [`Family`], with arguments from one
//! builder ([`launch::tile_pass`]) and the scratch the path asks for.

use crate::entry::Bound;
use crate::error::Result;
use crate::gpu::{plan_request, GpuScanner, ReadyPipelined};
use crate::kernels::LoadedKernel;
use crate::launch::{self, Heads, TileScanArgs};
use crate::operator::OperatorProgram;
use crate::path::ScanPath;
use crate::plan::{self, Path, Step};
use crate::segments::DeviceSegments;
use cudarc::driver::{CudaStream, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use kernels_gen::abi::{Family, KernelAbi, Pass, Stages, DETERMINISTIC_PREFIXES_THREADS};
use kernels_gen::{SegmentSource, SegmentedStrategy};
use scan_core::{Direction, ScanKind, ScanOp, ScanSpec};
use std::sync::Arc;

/// One scan over tiles, its addresses bound: what the executor runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileScan<E> {
    pub(crate) direction: Direction,
    pub(crate) inclusive: bool,
    /// The arguments every pass takes (with the heads of a segmented scan).
    pub(crate) args: TileScanArgs<E>,
    /// A segmented scan's source, and what the planner needs of it.
    pub(crate) segments: Option<(SegmentSource, plan::Segments)>,
    /// A staged scan's load and store stages (never with segments).
    pub(crate) stages: Option<Stages>,
}

impl<E: Copy> TileScan<E> {
    /// A scan of `kind` in `direction` over the `n` elements at `input`
    /// into `output` (the same address in place), writing the carry-out to
    /// `carry_out` (0: none); `identity` seeds kinds without an initial
    /// value.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        kind: ScanKind<E>,
        direction: Direction,
        identity: E,
        input: u64,
        output: u64,
        n: usize,
        carry_out: u64,
        segments: Option<(SegmentSource, plan::Segments, Heads)>,
    ) -> Self {
        let init = kind.init();
        TileScan {
            direction,
            inclusive: kind.is_inclusive(),
            args: TileScanArgs {
                input,
                output,
                heads: segments.map(|(_, _, heads)| heads),
                carry_out,
                seed: init.unwrap_or(identity),
                seeded: init.is_some(),
                n: n as u64,
                staged: false,
            },
            segments: segments.map(|(source, planned, _)| (source, planned)),
            stages: None,
        }
    }

    /// This scan (plain) through `stages`: its input and output hold their
    /// types.
    pub(crate) fn staged(self, stages: Stages) -> Self {
        debug_assert!(self.segments.is_none(), "staged scans have no segments");
        TileScan {
            args: TileScanArgs {
                staged: true,
                ..self.args
            },
            stages: Some(stages),
            ..self
        }
    }

    /// The kernels that run it.
    fn family(&self, strategy: SegmentedStrategy) -> Family {
        match (self.segments, self.stages) {
            (Some((source, _)), _) => Family::Segmented(source, strategy),
            (None, Some(stages)) => Family::Staged(stages),
            (None, None) => Family::Plain,
        }
    }

    /// Whether every buffer the pipelined pass copies in bulk (input,
    /// output, head flags) is 16-byte aligned.
    fn aligned(&self) -> bool {
        let a = &self.args;
        let flags = match a.heads {
            Some(Heads::Flags(flags)) => flags,
            _ => 0,
        };
        (a.input | a.output | flags) % 16 == 0
    }
}

impl<Op: ScanOp> GpuScanner<Op>
where
    Op::Element: DeviceRepr + ValidAsZeroBits,
{
    /// Enqueues the scan `spec` of `b.n` elements from `b.src` into `b.dst`
    /// (the same address in place), plain or over `segments`, writing the
    /// carry-out (the last segment's) to `b.carry` (0: none). A reverse
    /// scan runs the same kernels instantiated in reverse (no segmented
    /// pipelined pass).
    pub(crate) fn launch_tiles(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: ScanSpec<Op::Element>,
        segments: Option<&DeviceSegments<'_>>,
        b: &Bound,
    ) -> Result<()> {
        // The guards order the flags', offsets' or keys' use after their
        // writes.
        let (heads, _guards) = match segments {
            Some(segments) => {
                let (heads, guards) = segments.heads_arg(&b.at);
                let planned = match segments {
                    DeviceSegments::Keys(_) => plan::Segments::Keys,
                    DeviceSegments::Rows { row_length } => plan::Segments::Rows(*row_length),
                    _ => plan::Segments::FlagsOrOffsets,
                };
                (Some((segments.source(), planned, heads)), guards)
            }
            None => (None, Vec::new()),
        };
        let scan = TileScan::new(
            spec.kind,
            spec.direction,
            self.identity,
            b.src,
            b.dst,
            b.n,
            b.carry,
            heads,
        );
        self.execute(stream, &scan)
    }

    /// Loads the kernels of `family` for an inclusive or exclusive scan in
    /// `direction` on every path the current tuning may take (the pipelined
    /// one only where it can run here), so that no later scan compiles.
    pub(crate) fn load_passes(
        &mut self,
        family: Family,
        inclusive: bool,
        direction: Direction,
    ) -> Result<()> {
        let deterministic_plain = self.tuning.deterministic && family == Family::Plain;
        let passes: &[Pass] = match self.tuning.resolved_path() {
            // The three passes, and the one where the tuning allows it.
            _ if deterministic_plain => &[
                Pass::DeterministicReduce,
                Pass::DeterministicPrefixes,
                Pass::DeterministicScan,
                Pass::DeterministicPipelined,
            ],
            ScanPath::ReduceThenScan => &[Pass::ScanTiles, Pass::ReduceTiles, Pass::ScanTileTotals],
            ScanPath::SinglePass => &[Pass::ScanTiles, Pass::SinglePass, Pass::SinglePassSmall],
            _ => &[
                Pass::ScanTiles,
                Pass::SinglePass,
                Pass::SinglePassSmall,
                Pass::Pipelined,
            ],
        };
        let shared_bytes = pipelined_shared_bytes(&self.op, family);
        for &pass in passes {
            let Some(abi) = family.kernel(pass, inclusive, direction) else {
                continue;
            };
            let pipelined = matches!(pass, Pass::Pipelined | Pass::DeterministicPipelined);
            if pipelined && !(self.arch.has_bulk_copies() && shared_bytes > 0) {
                continue;
            }
            if pass == Pass::DeterministicPipelined
                && !(self.op.layout.deterministic_pipelined()
                    && plan::deterministic_one_pass_wanted(&self.tuning))
            {
                continue;
            }
            self.kernel(abi)?;
        }
        Ok(())
    }

    /// Plans `scan` and enqueues its launches on `stream`: every kernel is
    /// loaded and the scratch reserved before the first launch, so a
    /// failure enqueues nothing. `input` and `output` may be equal (in
    /// place): every tile reads all of its input before writing, and tile
    /// prefixes come from an earlier pass or from the look-back.
    pub(crate) fn execute(
        &mut self,
        stream: &Arc<CudaStream>,
        scan: &TileScan<Op::Element>,
    ) -> Result<()> {
        let a = &scan.args;
        let n = a.n as usize;
        let family = scan.family(self.tuning.segmented_strategy);
        let kernel = |pass| family.kernel(pass, scan.inclusive, scan.direction);
        let mut request = plan_request(
            &self.op,
            n,
            scan.direction,
            scan.segments.map(|(_, planned)| planned),
            scan.aligned(),
        );
        if scan.stages.is_some() {
            // No pipelined pass: its bulk copies move the operator's elements.
            request.pipelined_tile_items = 0;
            // No deterministic chain either (its kernels are plain ones):
            // a deterministic staged scan takes reduce-then-scan.
            request.deterministic.tile_items = 0;
        }
        let shared_bytes = pipelined_shared_bytes(&self.op, family);
        // A deterministic plain scan's one pass is the pipelined pass with
        // its deterministic lookahead.
        let pipelined = if self.tuning.deterministic && family == Family::Plain {
            Pass::DeterministicPipelined
        } else {
            Pass::Pipelined
        };
        let (path, ready) = self.plan_path(
            stream,
            &request,
            kernel(pipelined).map(|abi| (abi, shared_bytes)),
            kernel(Pass::SinglePass),
        )?;
        self.run(stream, scan, family, path, ready)
    }

    /// Enqueues the launches of `path`, planned for `scan` (of `family`)
    /// with `ready` the pipelined kernel the planner found ready: every
    /// kernel is loaded and the scratch reserved before the first launch.
    pub(crate) fn run(
        &mut self,
        stream: &Arc<CudaStream>,
        scan: &TileScan<Op::Element>,
        family: Family,
        path: Path,
        mut ready: Option<ReadyPipelined>,
    ) -> Result<()> {
        let a = &scan.args;
        let kernel = |pass| family.kernel(pass, scan.inclusive, scan.direction);
        if path == Path::Empty {
            return self.launch_empty_carry(stream, a.seed, a.carry_out);
        }
        let segmented = matches!(family, Family::Segmented(..));
        let scratch = self.reserve_scratch(path.scratch(segmented), stream)?;
        // Every step's kernel first (a path has at most three steps).
        let mut launches = [None, None, None];
        for (slot, step) in launches.iter_mut().zip(path.steps()) {
            let abi = kernel(step.pass).expect("the planner chose a pass of this family");
            *slot = Some(self.load_step(abi, step, stream, &mut ready)?);
        }
        for (kernel, abi, config, step) in launches.into_iter().flatten() {
            let args = launch::tile_pass(step.pass, a, scratch, step.tiles as u64);
            // SAFETY: `tile_pass` built the arguments of the step's pass,
            // checked against the ABI table (at the kernel's first launch). The prologue checked
            // that input and output hold n elements and the segments cover
            // them (offsets read below their count, checked for n), and that
            // the carry-out slot is null or one element; the path's scratch
            // on this stream was reserved above for its tiles, with a launch
            // state the previous single pass left reset (a reduction's
            // output is null: its passes write only scratch and the
            // carry-out); the grids are one
            // block per tile (the deterministic tile passes' with the
            // stage's dynamic shared memory given at load, or none), one
            // block for the passes over tile totals and the prefixes' chain, and the
            // pipelined passes' persistent grid (each block takes one index
            // past the last tile) with the dynamic shared memory given at
            // load, on 16-byte aligned buffers (the request said so). The
            // deterministic passes' totals and tile prefixes fit the
            // totals scratch reserved for the path (`Path::scratch`).
            unsafe { launch::launch_loaded(stream, &kernel, abi, self.op.name, &args, config) }?;
        }
        Ok(())
    }

    /// The kernel of `step` (`abi`) for a scan on `stream`, loaded
    /// ([`GpuScanner::kernel_now`]: perhaps a quick build while the
    /// optimized one compiles), and its launch shape; the pipelined kernel
    /// is the one the planner found ready.
    fn load_step(
        &mut self,
        abi: KernelAbi,
        step: Step,
        stream: &CudaStream,
        ready: &mut Option<ReadyPipelined>,
    ) -> Result<(Arc<LoadedKernel>, KernelAbi, LaunchConfig, Step)> {
        let shape = |x: usize, threads: u32| LaunchConfig {
            grid_dim: (x as u32, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let block_threads = self.op.block_threads();
        let blocks = |x: usize| shape(x, block_threads);
        Ok(match step.pass {
            Pass::DeterministicReduce | Pass::DeterministicScan => {
                // A block a tile, with the stage its kernel was given.
                let kernel = self.kernel(abi)?;
                let config = LaunchConfig {
                    shared_mem_bytes: kernel.tile_shared,
                    ..shape(step.tiles, self.op.layout.deterministic_threads())
                };
                (kernel, abi, config, step)
            }
            Pass::DeterministicPrefixes => (
                self.kernel(abi)?,
                abi,
                shape(1, DETERMINISTIC_PREFIXES_THREADS),
                step,
            ),
            Pass::Pipelined | Pass::DeterministicPipelined => {
                let (kernel, shape) = ready
                    .take()
                    .expect("the planner chose a ready pipelined kernel");
                (kernel, abi, shape.config(step.tiles), step)
            }
            Pass::ScanTileTotals => (self.kernel_now(abi, stream)?, abi, blocks(1), step),
            _ => (self.kernel_now(abi, stream)?, abi, blocks(step.tiles), step),
        })
    }
}

/// Dynamic shared memory of `family`'s pipelined pass for `Op` (0: it
/// cannot take that pass).
fn pipelined_shared_bytes(op: &OperatorProgram, family: Family) -> usize {
    match family {
        Family::Plain => op.layout.pipelined_shared_bytes,
        Family::Segmented(..) => op.layout.pipelined_segmented_shared_bytes,
        Family::Staged(_) => 0,
    }
}
