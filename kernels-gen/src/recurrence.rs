//! Batched linear recurrences `h[t] = a[t] · h[t-1] + b[t]` on the GPU
//! (issue 47, item 4): the program ([`recurrence_program`], one template
//! `templates/recurrence.cuh`), its kernels' one parameter block
//! ([`RecurrenceParams`], printed into the program with its offsets
//! asserted), and the plan ([`RecurrencePlan`]): how a batch's steps are
//! cut into chunks and which kernels run. The CPU's
//! `scan_core::recurrence` is the oracle.
//!
//! ```
//! use kernels_gen::recurrence::{RecurrenceKernel, RecurrencePlan, RecurrenceProgram, RecurrenceTransition};
//! use kernels_gen::RealType;
//!
//! // 4,096 sequences of 16 diagonal states give enough threads: one pass.
//! let plan = RecurrencePlan::new(RecurrenceTransition::Diagonal, 4096, 1 << 14, 16, true, 132);
//! assert_eq!(plan.chunks, 1);
//! assert_eq!(plan.kernels(), &[RecurrenceKernel::Apply]);
//! // One long sequence is cut into chunks (a warp each, its threads on
//! // consecutive steps): compose, carry, apply.
//! let plan = RecurrencePlan::new(RecurrenceTransition::Scalar, 1, 1 << 24, 1, true, 132);
//! assert!(plan.chunks > 1000);
//! let program = kernels_gen::recurrence::recurrence_program(&plan.program(RealType::F32));
//! assert_eq!(plan.kernels()[1], RecurrenceKernel::CarryWide);
//! assert!(program.contains(&RecurrenceKernel::CarryWide.symbol(&plan.program(RealType::F32))));
//! ```

use crate::RealType;
use std::fmt::Write;

/// Threads per block of every recurrence kernel.
pub const RECURRENCE_THREADS: u32 = 256;

/// The fewest blocks per SM the kernels' launch bounds ask for. Said
/// explicitly, it keeps ptxas from choosing 64 registers for occupancy and
/// spilling (NVRTC 12.9's PTX of four-lane kernels for sm_100); the
/// kernels use 40 to 130 registers.
const RECURRENCE_MIN_BLOCKS: u32 = 1;

/// The most values a diagonal or scalar state may have: a thread holds 8
/// lanes of a 32-thread group at most (16 spill on sm_80 and sm_90).
pub const MOST_LANE_STATE: usize = 32 * 8;

/// The most values a matrix transition's state may have: a thread holds
/// the state, a step's matrix and, composing, a product of them, which
/// spills past 8 × 8 in `f32` and 7 × 7 in `f64` (tests/nvrtc_compile.rs).
pub fn most_matrix_state(real: RealType) -> usize {
    match real {
        RealType::F32 => 8,
        RealType::F64 => 7,
    }
}

/// Threads a batch should keep busy before its steps are cut into chunks,
/// per multiprocessor: below it a single pass leaves the memory system
/// idle. Above it the extra read of `a` and `b` that chunks cost is not
/// worth paying.
const SINGLE_PASS_THREADS_PER_SM: usize = 256;

/// Threads a chunked batch is cut to give, per multiprocessor (full
/// occupancy on sm_80 and later).
const CHUNKED_THREADS_PER_SM: usize = 2048;

/// The fewest steps a chunk holds: fewer and the compose pass's maps cost
/// more than the steps they stand for.
const FEWEST_CHUNK_STEPS: usize = 64;

/// The most chunks a matrix recurrence is cut into: its carry pass runs
/// one thread a sequence over them in order.
const MOST_MATRIX_CHUNKS: usize = 64;

/// The most chunks a lane's steps are cut into: the carry pass composes
/// 128 of them a thread at most, in order.
const MOST_LANE_CHUNKS: usize = 128 * CARRY_WIDE_THREADS;

/// Chunks above which a lane's carry takes a block of
/// [`CARRY_WIDE_THREADS`] threads instead of a warp.
const CARRY_WARP_CHUNKS: usize = 8 * 32;

/// Steps a warp takes at once in the warp-per-unit mapping (32 threads ×
/// `rec_warp_steps`).
const WARP_TILE_STEPS: usize = 32 * 8;

/// Threads of the wide carry pass per lane (a block).
const CARRY_WIDE_THREADS: usize = RECURRENCE_THREADS as usize;

/// The transition's kind (`scan_core::recurrence::TransitionKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecurrenceTransition {
    /// One factor a step for the whole state.
    Scalar,
    /// One factor a step for each value of the state.
    Diagonal,
    /// A state × state matrix a step.
    Matrix,
}

/// What a program is specialised for: the real type, the transition, and
/// the thread mapping (lanes: `group` threads a unit, `lanes` values a
/// thread; matrices: the state's size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecurrenceProgram {
    /// The real type.
    pub real: RealType,
    /// The transition's kind.
    pub transition: RecurrenceTransition,
    /// Threads a unit (a power of two, at most 32); 1 for matrices.
    pub group: u32,
    /// Values of the state each thread holds: lanes for scalar and
    /// diagonal transitions, the whole state for matrices.
    pub lanes: u32,
}

impl RecurrenceProgram {
    fn name(&self) -> String {
        let transition = match self.transition {
            RecurrenceTransition::Scalar => "scalar",
            RecurrenceTransition::Diagonal => "diagonal",
            RecurrenceTransition::Matrix => "matrix",
        };
        format!(
            "{}_{transition}_g{}_r{}",
            self.real.cuda_type(),
            self.group,
            self.lanes
        )
    }

    /// The template arguments after the real type.
    fn template_args(&self) -> String {
        let t = self.real.cuda_type();
        match self.transition {
            RecurrenceTransition::Matrix => format!("{t}, {}", self.lanes),
            RecurrenceTransition::Scalar => format!("{t}, 0, {}, {}", self.group, self.lanes),
            RecurrenceTransition::Diagonal => format!("{t}, 1, {}, {}", self.group, self.lanes),
        }
    }
}

/// The kernels of a recurrence program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecurrenceKernel {
    /// Each unit's composed map over its chunk.
    Compose,
    /// Each unit's state on entry, from the maps of the chunks before it:
    /// a warp a lane (a thread a sequence for matrices).
    Carry,
    /// The same with a block a lane, for many chunks (lanes only).
    CarryWide,
    /// Each unit's steps from its state on entry: the states or readouts.
    Apply,
    /// [`RecurrenceKernel::Compose`] with a warp a unit (one-value lanes).
    ComposeWarp,
    /// [`RecurrenceKernel::Apply`] with a warp a unit (one-value lanes).
    ApplyWarp,
}

impl RecurrenceKernel {
    /// The kernels of a program for `transition`.
    pub fn all(transition: RecurrenceTransition) -> &'static [RecurrenceKernel] {
        use RecurrenceKernel::*;
        match transition {
            RecurrenceTransition::Matrix => &[Compose, Carry, Apply],
            _ => &[Compose, Carry, CarryWide, Apply, ComposeWarp, ApplyWarp],
        }
    }

    /// The exported symbol in `program`.
    pub fn symbol(self, program: &RecurrenceProgram) -> String {
        let kernel = match self {
            RecurrenceKernel::Compose => "compose",
            RecurrenceKernel::Carry => "carry",
            RecurrenceKernel::CarryWide => "carry_wide",
            RecurrenceKernel::Apply => "apply",
            RecurrenceKernel::ComposeWarp => "compose_warp",
            RecurrenceKernel::ApplyWarp => "apply_warp",
        };
        format!("gpu_scan_recurrence_{}_{kernel}", program.name())
    }

    /// The template it calls.
    fn template(self, transition: RecurrenceTransition) -> &'static str {
        let matrix = transition == RecurrenceTransition::Matrix;
        match (self, matrix) {
            (RecurrenceKernel::Compose, false) => "rec_compose_lanes",
            (RecurrenceKernel::Carry | RecurrenceKernel::CarryWide, false) => "rec_carry_lanes",
            (RecurrenceKernel::Apply, false) => "rec_apply_lanes",
            (RecurrenceKernel::Compose, true) => "rec_compose_matrix",
            (RecurrenceKernel::Carry | RecurrenceKernel::CarryWide, true) => "rec_carry_matrix",
            (RecurrenceKernel::ComposeWarp, _) => "rec_compose_warp",
            (RecurrenceKernel::ApplyWarp, _) => "rec_apply_warp",
            (RecurrenceKernel::Apply, true) => "rec_apply_matrix",
        }
    }
}

/// The one parameter block of every recurrence kernel, passed by value
/// (`#[repr(C)]`; the CUDA `recurrence_params` is printed from
/// [`RECURRENCE_PARAM_FIELDS`] with each offset asserted). Addresses are
/// device addresses; 0 where unused.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecurrenceParams {
    /// Transitions.
    pub a: u64,
    /// Inputs.
    pub b: u64,
    /// The readout's `c` (when `has_readout`).
    pub c: u64,
    /// The initial states (when `has_initial`).
    pub initial: u64,
    /// The states or readouts written.
    pub out: u64,
    /// Scratch: each unit's composed factors (chunked plans).
    pub agg_a: u64,
    /// Scratch: each unit's composed offsets.
    pub agg_b: u64,
    /// Scratch: each unit's state on entry.
    pub carries: u64,
    /// Independent recurrences.
    pub sequences: u64,
    /// Steps of each.
    pub steps: u64,
    /// Values of the state.
    pub state: u64,
    /// Entries between one sequence's step and the next sequence's.
    pub sequence_stride: u64,
    /// Entries between a step and the next of one sequence.
    pub step_stride: u64,
    /// Chunks the steps are cut into.
    pub chunks: u64,
    /// Steps of each chunk (the last may have fewer).
    pub chunk_steps: u64,
    /// 1: from the last step back.
    pub reverse: u64,
    /// 1: `initial` holds the states before the first step.
    pub has_initial: u64,
    /// 1: write `c · h` instead of the states.
    pub has_readout: u64,
}

/// The fields of [`RecurrenceParams`] in order, each a 64-bit word.
pub const RECURRENCE_PARAM_FIELDS: [&str; 18] = [
    "a",
    "b",
    "c",
    "initial",
    "out",
    "agg_a",
    "agg_b",
    "carries",
    "sequences",
    "steps",
    "state",
    "sequence_stride",
    "step_stride",
    "chunks",
    "chunk_steps",
    "reverse",
    "has_initial",
    "has_readout",
];

/// The CUDA declaration of [`RecurrenceParams`]: its fields printed in
/// [`RECURRENCE_PARAM_FIELDS`]' order, every one a 64-bit word, so that
/// each sits at 8 × its position as in the Rust struct (a unit test checks
/// those offsets); the size is asserted (NVRTC has no `offsetof`).
pub fn params_declaration() -> String {
    crate::param_block::declaration("recurrence_params", &RECURRENCE_PARAM_FIELDS)
}

/// How a batch runs: its program's thread mapping, the chunks its steps
/// are cut into, and the threads each kernel launches. Pure: the same
/// batch on the same number of multiprocessors gives the same plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecurrencePlan {
    /// The transition's kind.
    pub transition: RecurrenceTransition,
    /// Threads a unit (1 for matrices).
    pub group: u32,
    /// Values a thread holds.
    pub lanes: u32,
    /// A warp a unit, its threads on consecutive steps (one-value states
    /// with contiguous steps); else `group` threads a unit, each walking
    /// its lanes' steps.
    pub warp_steps: bool,
    /// Chunks of steps (1: a single pass).
    pub chunks: usize,
    /// Steps a chunk.
    pub chunk_steps: usize,
    /// Sequences of the batch.
    pub sequences: usize,
    /// Values of the state.
    pub state: usize,
}

impl RecurrencePlan {
    /// The plan of `sequences` recurrences of `steps` steps over `state`
    /// values on a GPU of `multiprocessors` SMs. The state must be within
    /// [`MOST_LANE_STATE`] (scalar, diagonal) or [`most_matrix_state`]
    /// (matrix) and at least 1.
    pub fn new(
        transition: RecurrenceTransition,
        sequences: usize,
        steps: usize,
        state: usize,
        steps_contiguous: bool,
        multiprocessors: usize,
    ) -> RecurrencePlan {
        let (group, lanes) = match transition {
            RecurrenceTransition::Matrix => (1, state.max(1)),
            _ => {
                let group = state.max(1).next_power_of_two().min(32);
                (group, state.max(1).div_ceil(group))
            }
        };
        // One-value states whose steps lie side by side: a warp a unit,
        // its threads on consecutive steps, so that its loads are contiguous.
        let warp_steps = transition != RecurrenceTransition::Matrix
            && state == 1
            && steps_contiguous
            && steps >= WARP_TILE_STEPS;
        let threads = sequences * if warp_steps { 32 } else { group };
        let wanted = multiprocessors.max(1) * SINGLE_PASS_THREADS_PER_SM;
        let mut chunks = 1;
        if threads < wanted && steps >= 2 * FEWEST_CHUNK_STEPS {
            // (The warps' chunks are longer: see `fewest`.)
            let most = match transition {
                RecurrenceTransition::Matrix => MOST_MATRIX_CHUNKS,
                _ => MOST_LANE_CHUNKS,
            };
            let goal = (multiprocessors.max(1) * CHUNKED_THREADS_PER_SM).div_ceil(threads.max(1));
            let fewest = if warp_steps {
                4 * WARP_TILE_STEPS
            } else {
                FEWEST_CHUNK_STEPS
            };
            chunks = goal.min(steps / fewest).min(most).max(1);
        }
        let chunk_steps = steps.div_ceil(chunks).max(1);
        // Rounding the chunks' length up may leave the last ones empty.
        let chunks = steps.div_ceil(chunk_steps).max(1);
        RecurrencePlan {
            transition,
            group: group as u32,
            lanes: lanes as u32,
            warp_steps,
            chunks,
            chunk_steps,
            sequences,
            state,
        }
    }

    /// The program this plan runs, for real type `real`.
    pub fn program(&self, real: RealType) -> RecurrenceProgram {
        RecurrenceProgram {
            real,
            transition: self.transition,
            group: self.group,
            lanes: self.lanes,
        }
    }

    /// The kernels launched, in order.
    pub fn kernels(&self) -> &'static [RecurrenceKernel] {
        use RecurrenceKernel::*;
        let lanes = self.transition != RecurrenceTransition::Matrix;
        let wide = lanes && self.chunks > CARRY_WARP_CHUNKS;
        match (self.chunks == 1, self.warp_steps, wide) {
            (true, false, _) => &[Apply],
            (true, true, _) => &[ApplyWarp],
            (false, false, false) => &[Compose, Carry, Apply],
            (false, false, true) => &[Compose, CarryWide, Apply],
            (false, true, false) => &[ComposeWarp, Carry, ApplyWarp],
            (false, true, true) => &[ComposeWarp, CarryWide, ApplyWarp],
        }
    }

    /// Threads `kernel` launches (in blocks of [`RECURRENCE_THREADS`]).
    pub fn threads(&self, kernel: RecurrenceKernel) -> usize {
        let units = self.chunks * self.sequences;
        match (kernel, self.transition) {
            (RecurrenceKernel::Carry, RecurrenceTransition::Matrix) => self.sequences,
            // One warp a lane, or a block.
            (RecurrenceKernel::Carry, _) => 32 * self.sequences * self.state,
            (RecurrenceKernel::CarryWide, _) => CARRY_WIDE_THREADS * self.sequences * self.state,
            (RecurrenceKernel::ComposeWarp | RecurrenceKernel::ApplyWarp, _) => 32 * units,
            (_, _) => units * self.group as usize,
        }
    }

    /// Values of each scratch array (composed factors, composed offsets,
    /// states on entry); none for a single pass.
    pub fn scratch_values(&self) -> [usize; 3] {
        if self.chunks == 1 {
            return [0; 3];
        }
        let units = self.chunks * self.sequences;
        let factors = match self.transition {
            RecurrenceTransition::Matrix => self.state * self.state,
            _ => self.state,
        };
        [units * factors, units * self.state, units * self.state]
    }
}

/// The recurrence program `program`: the parameter block, the template,
/// and one `extern "C"` wrapper per [`RecurrenceKernel`].
pub fn recurrence_program(program: &RecurrenceProgram) -> String {
    let mut out = params_declaration();
    out.push_str(include_str!("templates/recurrence.cuh"));
    let _ = writeln!(
        out,
        "\n// Kernels (kernels_gen::recurrence::recurrence_program)."
    );
    for &kernel in RecurrenceKernel::all(program.transition) {
        let t = program.real.cuda_type();
        let args = match (kernel, program.transition) {
            (RecurrenceKernel::Carry, RecurrenceTransition::Matrix) => {
                format!("{t}, {}", program.lanes)
            }
            (RecurrenceKernel::Carry, _) => format!("{t}, 32"),
            (RecurrenceKernel::CarryWide, _) => format!("{t}, {CARRY_WIDE_THREADS}"),
            (RecurrenceKernel::ComposeWarp | RecurrenceKernel::ApplyWarp, _) => t.to_string(),
            _ => program.template_args(),
        };
        let _ = writeln!(
            out,
            "extern \"C\" __global__ void __launch_bounds__({RECURRENCE_THREADS}, {RECURRENCE_MIN_BLOCKS}) {}(const recurrence_params p) {{\n  gpu_scan::{}<{args}>(p);\n}}",
            kernel.symbol(program),
            kernel.template(program.transition),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cuda_parameter_block_has_the_rust_one_s_offsets() {
        let p = RecurrenceParams::default();
        let base = &p as *const RecurrenceParams as usize;
        let fields: [&u64; 18] = [
            &p.a,
            &p.b,
            &p.c,
            &p.initial,
            &p.out,
            &p.agg_a,
            &p.agg_b,
            &p.carries,
            &p.sequences,
            &p.steps,
            &p.state,
            &p.sequence_stride,
            &p.step_stride,
            &p.chunks,
            &p.chunk_steps,
            &p.reverse,
            &p.has_initial,
            &p.has_readout,
        ];
        for (i, field) in fields.iter().enumerate() {
            assert_eq!(
                *field as *const u64 as usize - base,
                8 * i,
                "{}",
                RECURRENCE_PARAM_FIELDS[i]
            );
        }
        assert_eq!(
            std::mem::size_of::<RecurrenceParams>(),
            8 * RECURRENCE_PARAM_FIELDS.len()
        );
        let declaration = params_declaration();
        assert!(declaration.contains("  unsigned long long has_readout;\n};"));
        assert!(declaration.contains("sizeof(recurrence_params) == 144"));
    }

    #[test]
    fn lanes_take_groups_of_a_power_of_two_and_matrices_one_thread() {
        let plan = |t, state| RecurrencePlan::new(t, 1 << 16, 1 << 10, state, false, 132);
        let shape = |p: RecurrencePlan| (p.group, p.lanes);
        assert_eq!(shape(plan(RecurrenceTransition::Diagonal, 1)), (1, 1));
        assert_eq!(shape(plan(RecurrenceTransition::Diagonal, 16)), (16, 1));
        assert_eq!(shape(plan(RecurrenceTransition::Scalar, 17)), (32, 1));
        assert_eq!(shape(plan(RecurrenceTransition::Diagonal, 33)), (32, 2));
        assert_eq!(shape(plan(RecurrenceTransition::Diagonal, 256)), (32, 8));
        assert_eq!(shape(plan(RecurrenceTransition::Matrix, 4)), (1, 4));
    }

    #[test]
    fn wide_batches_run_in_one_pass_and_narrow_ones_in_chunks() {
        use RecurrenceTransition::*;
        // 2^12 sequences × 16 states: 65,536 threads, one pass.
        let wide = RecurrencePlan::new(Diagonal, 1 << 12, 1 << 14, 16, true, 132);
        assert_eq!((wide.chunks, wide.chunk_steps), (1, 1 << 14));
        assert_eq!(wide.scratch_values(), [0; 3]);
        // One scalar sequence: chunks of at least 64 steps, each step in one.
        for steps in [128, 1000, 1 << 20, (1 << 24) + 3] {
            let narrow = RecurrencePlan::new(Scalar, 1, steps, 1, false, 132);
            assert!(narrow.chunks > 1, "{steps}");
            assert!(narrow.chunk_steps >= FEWEST_CHUNK_STEPS);
            assert!((narrow.chunks - 1) * narrow.chunk_steps < steps);
            assert!(narrow.chunks * narrow.chunk_steps >= steps);
            assert!(narrow.chunks <= MOST_LANE_CHUNKS);
            let carry = if narrow.chunks > CARRY_WARP_CHUNKS {
                RecurrenceKernel::CarryWide
            } else {
                RecurrenceKernel::Carry
            };
            assert_eq!(
                narrow.kernels(),
                &[RecurrenceKernel::Compose, carry, RecurrenceKernel::Apply]
            );
        }
        // Too short to cut.
        assert_eq!(RecurrencePlan::new(Scalar, 1, 127, 1, false, 132).chunks, 1);
        // One-value states with contiguous steps: a warp a unit, chunks of
        // at least four of its tiles.
        let warp = RecurrencePlan::new(Scalar, 1, 1 << 28, 1, true, 132);
        assert!(warp.warp_steps);
        assert!(warp.chunk_steps >= 4 * WARP_TILE_STEPS);
        assert_eq!(warp.threads(RecurrenceKernel::ApplyWarp), 32 * warp.chunks);
        assert_eq!(
            warp.kernels(),
            &[
                RecurrenceKernel::ComposeWarp,
                RecurrenceKernel::CarryWide,
                RecurrenceKernel::ApplyWarp
            ]
        );
        let many = RecurrencePlan::new(Diagonal, 1 << 16, 1 << 12, 1, true, 132);
        assert_eq!((many.warp_steps, many.chunks), (true, 1));
        assert_eq!(many.kernels(), &[RecurrenceKernel::ApplyWarp]);
        // Not with a state of two values, nor across sequences time-major.
        assert!(!RecurrencePlan::new(Diagonal, 1, 1 << 20, 2, true, 132).warp_steps);
        assert!(!RecurrencePlan::new(Diagonal, 8, 1 << 20, 1, false, 132).warp_steps);
        // Matrices: at most 64 chunks, and the carry pass a thread a sequence.
        let matrix = RecurrencePlan::new(Matrix, 2, 1 << 20, 4, true, 132);
        assert_eq!(matrix.chunks, 64);
        assert_eq!(matrix.threads(RecurrenceKernel::Carry), 2);
        assert_eq!(
            matrix.scratch_values(),
            [64 * 2 * 16, 64 * 2 * 4, 64 * 2 * 4]
        );
    }

    #[test]
    fn the_plans_of_a_table_of_batches() {
        // Every transition over narrow and wide batches, one-value and
        // larger states, contiguous steps or not, on an H200 (132 SMs) and
        // a small GPU (40): the mapping, the chunks, the kernels and their
        // threads, the scratch.
        use RecurrenceTransition::*;
        let mut table = String::from(
            "transition sequences steps state contiguous sms | group lanes warp chunks chunk_steps | kernels (threads) | scratch\n",
        );
        let batches: [(usize, usize, usize); 9] = [
            (1, 1, 1),
            (1, 1 << 28, 1),
            (64, 1 << 22, 1),
            (1 << 16, 1 << 12, 1),
            (1 << 12, 1 << 14, 16),
            (4, 1 << 20, 16),
            (2, 50_001, 4),
            (1 << 10, 1 << 10, 33),
            (1 << 16, 256, 4),
        ];
        for transition in [Scalar, Diagonal, Matrix] {
            for (sequences, steps, state) in batches {
                if transition == Matrix && state > 8 {
                    continue;
                }
                for contiguous in [true, false] {
                    for sms in [132, 40] {
                        let p = RecurrencePlan::new(
                            transition, sequences, steps, state, contiguous, sms,
                        );
                        let kernels: Vec<String> = p
                            .kernels()
                            .iter()
                            .map(|&k| format!("{k:?}({})", p.threads(k)))
                            .collect();
                        let _ = writeln!(
                            table,
                            "{transition:?} {sequences} {steps} {state} {contiguous} {sms} | {} {} {} {} {} | {} | {:?}",
                            p.group,
                            p.lanes,
                            p.warp_steps,
                            p.chunks,
                            p.chunk_steps,
                            kernels.join(" "),
                            p.scratch_values()
                        );
                    }
                }
            }
        }
        insta::assert_snapshot!(table);
    }

    #[test]
    fn programs_define_each_kernel_once() {
        for transition in [
            RecurrenceTransition::Scalar,
            RecurrenceTransition::Diagonal,
            RecurrenceTransition::Matrix,
        ] {
            let program =
                RecurrencePlan::new(transition, 3, 1000, 4, true, 132).program(RealType::F64);
            let text = recurrence_program(&program);
            for &kernel in RecurrenceKernel::all(transition) {
                let definition = format!(" {}(", kernel.symbol(&program));
                assert_eq!(text.matches(&definition).count(), 1);
            }
        }
    }
}
