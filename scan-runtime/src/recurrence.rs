//! Batched linear recurrences `h[t] = a[t] · h[t-1] + b[t]` on the GPU
//! (issue 47, item 4), over the caller's device arrays, as the CPU's
//! [`linear_recurrence`](scan_core::recurrence::linear_recurrence) runs
//! them: scalar, diagonal or small-matrix transitions, sequence-major or
//! time-major, forward or in reverse, from an initial state, writing the
//! states or a readout `y[t] = c[t] · h[t]`.
//!
//! A plan ([`RecurrencePlan`], pure) picks the thread mapping and whether
//! the steps are cut into chunks: a batch with enough independent lanes
//! runs in one pass, each thread walking its lanes' steps in order and
//! reading each array once; a narrow one (few sequences, long ones)
//! composes each chunk's affine map, scans the maps over the chunks, and
//! runs each chunk from its state on entry.

use crate::capture::AddressStream;
use crate::error::{Result, ScanError};
use crate::kernels::{ProgramSet, ProgramStats};
use crate::real::{DeviceArray, DeviceReal};
use crate::workspace::{stream_key, RegionScratch};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaStream, DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg,
};
use kernels_gen::recurrence::{
    most_matrix_state, recurrence_program, RecurrenceKernel, RecurrenceParams, RecurrencePlan,
    RecurrenceProgram, RecurrenceTransition, MOST_LANE_STATE, RECURRENCE_THREADS,
};
use kernels_gen::RealType;
use scan_core::recurrence::{RecurrenceLengths, RecurrenceShape, TimeLayout, TransitionKind};
use scan_core::Direction;
use std::collections::HashMap;
use std::sync::Arc;

/// The transition `a[t]` of each step, in device memory (the GPU's
/// [`Transition`](scan_core::recurrence::Transition)).
#[derive(Clone, Copy)]
pub enum DeviceTransition<'a, T> {
    /// One factor per (sequence, step), for every value of the state.
    Scalar(DeviceArray<'a, T>),
    /// `state` factors per (sequence, step).
    Diagonal(DeviceArray<'a, T>),
    /// A `state` × `state` matrix per (sequence, step), row-major.
    Matrix(DeviceArray<'a, T>),
}

impl<'a, T> DeviceTransition<'a, T> {
    /// The transition's kind.
    pub fn kind(&self) -> TransitionKind {
        match self {
            DeviceTransition::Scalar(_) => TransitionKind::Scalar,
            DeviceTransition::Diagonal(_) => TransitionKind::Diagonal,
            DeviceTransition::Matrix(_) => TransitionKind::Matrix,
        }
    }

    fn values(&self) -> DeviceArray<'a, T> {
        match *self {
            DeviceTransition::Scalar(v)
            | DeviceTransition::Diagonal(v)
            | DeviceTransition::Matrix(v) => v,
        }
    }
}

/// A batch of linear recurrences over device arrays, built as the CPU's
/// [`Recurrence`](scan_core::recurrence::Recurrence) is (the same shapes,
/// layouts and meaning of every array).
#[derive(Clone, Copy)]
pub struct DeviceRecurrence<'a, T> {
    /// The batch's shape and layout.
    pub shape: RecurrenceShape,
    /// The transitions.
    pub a: DeviceTransition<'a, T>,
    /// The inputs: `state` values per (sequence, step).
    pub b: DeviceArray<'a, T>,
    /// The state before the first step (the last, in reverse), `state`
    /// values per sequence; zeros when `None`.
    pub initial: Option<DeviceArray<'a, T>>,
    /// Forward or in reverse.
    pub direction: Direction,
    /// With `Some(c)`, the output is `y[t] = c[t] · h[t]`.
    pub readout: Option<DeviceArray<'a, T>>,
}

impl<'a, T> DeviceRecurrence<'a, T> {
    /// A forward recurrence from a zero state, writing the states.
    pub fn new(shape: RecurrenceShape, a: DeviceTransition<'a, T>, b: DeviceArray<'a, T>) -> Self {
        DeviceRecurrence {
            shape,
            a,
            b,
            initial: None,
            direction: Direction::Forward,
            readout: None,
        }
    }

    /// This recurrence from `initial` (`state` values per sequence).
    pub fn initial(mut self, initial: DeviceArray<'a, T>) -> Self {
        self.initial = Some(initial);
        self
    }

    /// This recurrence from the last step back.
    pub fn reverse(mut self) -> Self {
        self.direction = Direction::Reverse;
        self
    }

    /// This recurrence writing `c[t] · h[t]` instead of the states.
    pub fn readout(mut self, c: DeviceArray<'a, T>) -> Self {
        self.readout = Some(c);
        self
    }

    /// Values the output holds.
    pub fn output_len(&self) -> usize {
        self.shape.output_len(self.readout.is_some())
    }

    fn lengths(&self, output: usize) -> RecurrenceLengths {
        RecurrenceLengths {
            kind: self.a.kind(),
            a: self.a.values().len(),
            b: self.b.len(),
            initial: self.initial.map(|v| v.len()),
            readout: self.readout.map(|v| v.len()),
            output,
        }
    }
}

fn transition(kind: TransitionKind) -> RecurrenceTransition {
    match kind {
        TransitionKind::Scalar => RecurrenceTransition::Scalar,
        TransitionKind::Diagonal => RecurrenceTransition::Diagonal,
        TransitionKind::Matrix => RecurrenceTransition::Matrix,
    }
}

/// Refuses a state the kernels cannot hold.
fn check_state(kind: TransitionKind, real: RealType, state: usize) -> Result<()> {
    let (name, most) = match kind {
        TransitionKind::Scalar => ("scalar", MOST_LANE_STATE),
        TransitionKind::Diagonal => ("diagonal", MOST_LANE_STATE),
        TransitionKind::Matrix => ("matrix", most_matrix_state(real)),
    };
    if state > most {
        return Err(ScanError::RecurrenceState {
            transition: name,
            state,
            most,
        });
    }
    Ok(())
}

/// The kernels' parameter block (`kernels_gen::recurrence::RecurrenceParams`).
#[repr(transparent)]
#[derive(Clone, Copy)]
struct Params(RecurrenceParams);

// SAFETY: `RecurrenceParams` is `#[repr(C)]`, 18 `u64`s with no padding,
// the layout of the CUDA `recurrence_params` printed from the same field
// table (its size asserted in the program).
unsafe impl DeviceRepr for Params {}

/// Linear recurrences on one context, each program compiled the first time
/// it is needed (through the disk cache) and kept.
///
/// ```no_run
/// use gpu_scan::recurrence::{RecurrenceShape, TimeLayout};
/// use gpu_scan::scan_runtime::{open_device, DeviceRecurrence, DeviceTransition, GpuRecurrence};
///
/// let ctx = open_device(0)?;
/// let stream = ctx.new_stream()?;
/// // One sequence of three steps, h = 0.5·h + b.
/// let shape = RecurrenceShape { sequences: 1, steps: 3, state: 1, layout: TimeLayout::SequenceMajor };
/// let a = stream.clone_htod(&[0.5f32; 3])?;
/// let b = stream.clone_htod(&[1.0f32, 2.0, 4.0])?;
/// let mut h = stream.alloc_zeros::<f32>(3)?;
/// let mut recurrences = GpuRecurrence::new(&ctx)?;
/// recurrences.run(&stream, &DeviceRecurrence::new(shape, DeviceTransition::Scalar(&a), &b), &mut h)?;
/// assert_eq!(stream.clone_dtoh(&h)?, [1.0, 2.5, 5.25]);
/// # Ok::<(), gpu_scan::ScanError>(())
/// ```
pub struct GpuRecurrence {
    programs: ProgramSet<RecurrenceProgram, RecurrenceKernel>,
    /// Per stream, the chunked plans' scratch.
    scratch: HashMap<usize, RegionScratch>,
    addresses: AddressStream,
    multiprocessors: usize,
}

impl GpuRecurrence {
    /// Recurrences on `ctx`, with the disk cache the environment selects.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        Self::with_disk_cache(ctx, &crate::cache::DiskCache::from_env())
    }

    /// Recurrences on `ctx` with an explicit disk cache.
    pub fn with_disk_cache(ctx: &Arc<CudaContext>, disk: &crate::cache::DiskCache) -> Result<Self> {
        Ok(GpuRecurrence {
            programs: ProgramSet::new(ctx, disk, "recurrence")?,
            scratch: HashMap::new(),
            addresses: AddressStream::default(),
            multiprocessors: crate::device::multiprocessors(ctx)?,
        })
    }

    /// How the programs used so far were obtained, summed.
    pub fn program_stats(&self) -> ProgramStats {
        self.programs.stats()
    }

    /// The plan a batch of `shape` with transitions of `kind` runs on this
    /// GPU (pure; for inspection and tuning).
    pub fn plan(&self, shape: &RecurrenceShape, kind: TransitionKind) -> RecurrencePlan {
        RecurrencePlan::new(
            transition(kind),
            shape.sequences,
            shape.steps,
            shape.state,
            shape.layout == TimeLayout::SequenceMajor || shape.sequences == 1,
            self.multiprocessors,
        )
    }

    /// Loads the program and reserves `stream`'s scratch for batches of
    /// `shape` with transitions of `kind` in `T`, so that such a batch can
    /// be captured in a CUDA graph (a batch that needs more then fails with
    /// [`ScanError::WorkspaceDuringCapture`]).
    pub fn reserve<T: DeviceReal>(
        &mut self,
        stream: &Arc<CudaStream>,
        shape: &RecurrenceShape,
        kind: TransitionKind,
    ) -> Result<()> {
        check_state(kind, T::REAL, shape.state)?;
        let plan = self.plan(shape, kind);
        self.program(&plan.program(T::REAL))?;
        self.scratch_for::<T>(stream, &plan).map(|_| ())
    }

    /// Runs the batch `r` on `stream`, writing its states (or readouts) to
    /// `output` in the shape's layout. Arrays whose lengths do not fit the
    /// shape fail with [`ScanError::Recurrence`], a state larger than the
    /// kernels hold with [`ScanError::RecurrenceState`], both before
    /// anything is enqueued.
    pub fn run<T: DeviceReal>(
        &mut self,
        stream: &Arc<CudaStream>,
        r: &DeviceRecurrence<'_, T>,
        output: &mut impl DevicePtrMut<T>,
    ) -> Result<()> {
        let s = r.shape;
        s.check_lengths(&r.lengths(output.len()))?;
        let kind = r.a.kind();
        check_state(kind, T::REAL, s.state)?;
        if s.entries() == 0 {
            return Ok(());
        }
        let at = self.addresses.for_stream(stream)?;
        let (out, _out_guard) = output.device_ptr_mut(&at);
        if s.state == 0 {
            // Only a readout has values: the empty sums, 0.
            // SAFETY: `out` holds the output's `entries` values (checked).
            unsafe {
                cudarc::driver::result::memset_d8_async(
                    out,
                    0,
                    r.output_len() * std::mem::size_of::<T>(),
                    stream.cu_stream(),
                )
            }?;
            return Ok(());
        }
        // Everything reserved and loaded before anything is enqueued (the
        // scratch first: during a capture without `reserve` it refuses).
        let plan = self.plan(&s, kind);
        let [agg_a, agg_b, carries] = self.scratch_for::<T>(stream, &plan)?;
        let functions = self.program(&plan.program(T::REAL))?;
        let (a, _a_guard) = r.a.values().device_ptr(&at);
        let (b, _b_guard) = r.b.device_ptr(&at);
        let initial = r.initial.map(|v| v.device_ptr(&at));
        let readout = r.readout.map(|v| v.device_ptr(&at));
        let (sequence_stride, step_stride) = match s.layout {
            TimeLayout::SequenceMajor => (s.steps as u64, 1),
            TimeLayout::TimeMajor => (1, s.sequences as u64),
        };
        let params = Params(RecurrenceParams {
            a,
            b,
            c: readout.as_ref().map_or(0, |v| v.0),
            initial: initial.as_ref().map_or(0, |v| v.0),
            out,
            agg_a,
            agg_b,
            carries,
            sequences: s.sequences as u64,
            steps: s.steps as u64,
            state: s.state as u64,
            sequence_stride,
            step_stride,
            chunks: plan.chunks as u64,
            chunk_steps: plan.chunk_steps as u64,
            reverse: (r.direction == Direction::Reverse) as u64,
            has_initial: initial.is_some() as u64,
            has_readout: readout.is_some() as u64,
        });
        for &kernel in plan.kernels() {
            let function = &functions[&kernel];
            let mut builder = stream.launch_builder(function);
            builder.arg(&params);
            let blocks = plan.threads(kernel).div_ceil(RECURRENCE_THREADS as usize);
            let config = LaunchConfig {
                grid_dim: (blocks as u32, 1, 1),
                block_dim: (RECURRENCE_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: the arrays' lengths were checked against the shape, so
            // every index the kernels form from it is inside them; the
            // scratch holds the plan's `scratch_values`; the output is
            // written only at the shape's indices.
            unsafe { builder.launch(config) }?;
        }
        Ok(())
    }

    /// `stream`'s scratch for `plan` in `T` (growing it outside a capture):
    /// the addresses of the composed factors, offsets and states on entry.
    fn scratch_for<T: DeviceReal>(
        &mut self,
        stream: &Arc<CudaStream>,
        plan: &RecurrencePlan,
    ) -> Result<[u64; 3]> {
        let size = std::mem::size_of::<T>();
        self.scratch.entry(stream_key(stream)).or_default().regions(
            stream,
            plan.scratch_values().map(|v| v * size),
            "GpuRecurrence::reserve",
        )
    }

    /// The kernels of `program`, compiled (or read from the disk cache)
    /// and loaded the first time.
    fn program(
        &mut self,
        program: &RecurrenceProgram,
    ) -> Result<HashMap<RecurrenceKernel, CudaFunction>> {
        self.programs.kernels(
            program,
            || recurrence_program(program),
            RecurrenceKernel::all(program.transition)
                .iter()
                .map(|&k| (k, k.symbol(program))),
        )
    }
}
