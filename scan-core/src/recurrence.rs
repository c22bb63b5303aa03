//! Linear recurrences `h[t] = a[t] · h[t-1] + b[t]` on the CPU: the oracle
//! of the GPU's (a scan of affine maps, issue 47), and a reference in its
//! own right. A batch holds `sequences` independent recurrences of `steps`
//! steps over a state of `state` values, read from separate arrays (no
//! struct to build): the transition `a` is a scalar per step (shared by
//! the state's values), a diagonal (one factor per value) or a matrix (the
//! state times itself, row-major). The arrays are laid out sequence-major
//! (`[sequence][step][…]`) or time-major (`[step][sequence][…]`, as a
//! recurrence over channels is usually stored). A recurrence runs forward
//! from `h[-1]` or in reverse (`h[t] = a[t] · h[t+1] + b[t]` from the last
//! step), from an initial state (zeros by default), and writes the states
//! or, with a readout `c`, `y[t] = c[t] · h[t]` (the dot product over the
//! state, as a state-space layer's output), so that the states need not be
//! stored.
//!
//! ```
//! use gpu_scan::recurrence::{linear_recurrence, Recurrence, RecurrenceShape, TimeLayout, Transition};
//!
//! // One sequence, three steps, a scalar state: h = 0.5·h + b.
//! let shape = RecurrenceShape { sequences: 1, steps: 3, state: 1, layout: TimeLayout::SequenceMajor };
//! let (a, b) = ([0.5f32; 3], [1.0, 2.0, 4.0]);
//! let mut h = [0.0; 3];
//! linear_recurrence(&Recurrence::new(shape, Transition::Scalar(&a), &b), &mut h).unwrap();
//! assert_eq!(h, [1.0, 2.5, 5.25]);
//! ```

use crate::real::Real;
use crate::Direction;
use rayon::prelude::*;

/// How a batch's arrays are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeLayout {
    /// `[sequence][step][…]`: each sequence contiguous.
    SequenceMajor,
    /// `[step][sequence][…]`: each step of every sequence contiguous.
    TimeMajor,
}

/// A batch of recurrences: `sequences` of `steps` steps over `state`
/// values each, in `layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecurrenceShape {
    /// Independent recurrences.
    pub sequences: usize,
    /// Steps of each.
    pub steps: usize,
    /// Values of the state.
    pub state: usize,
    /// The arrays' layout.
    pub layout: TimeLayout,
}

impl RecurrenceShape {
    /// The index of value `j` of the `k`-value entry of `sequence` at `step`.
    fn index(&self, sequence: usize, step: usize, k: usize, j: usize) -> usize {
        let entry = match self.layout {
            TimeLayout::SequenceMajor => sequence * self.steps + step,
            TimeLayout::TimeMajor => step * self.sequences + sequence,
        };
        entry * k + j
    }

    /// Entries (sequence, step) in the batch.
    pub fn entries(&self) -> usize {
        self.sequences * self.steps
    }
}

/// The transition `a[t]` of each step.
#[derive(Clone, Copy, Debug)]
pub enum Transition<'a, T> {
    /// One factor per (sequence, step), for every value of the state.
    Scalar(&'a [T]),
    /// `state` factors per (sequence, step): each value its own recurrence.
    Diagonal(&'a [T]),
    /// A `state` × `state` matrix per (sequence, step), row-major:
    /// `h[t] = A[t] h[t-1] + b[t]`.
    Matrix(&'a [T]),
}

/// What a transition is, without its values: how many factors each
/// (sequence, step) has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransitionKind {
    /// One factor, for every value of the state.
    Scalar,
    /// One factor per value of the state.
    Diagonal,
    /// A `state` × `state` matrix, row-major.
    Matrix,
}

impl TransitionKind {
    /// Values per (sequence, step), for a state of `state` values.
    pub fn width(self, state: usize) -> usize {
        match self {
            TransitionKind::Scalar => 1,
            TransitionKind::Diagonal => state,
            TransitionKind::Matrix => state * state,
        }
    }
}

impl<T> Transition<'_, T> {
    /// The transition's kind.
    pub fn kind(&self) -> TransitionKind {
        match self {
            Transition::Scalar(_) => TransitionKind::Scalar,
            Transition::Diagonal(_) => TransitionKind::Diagonal,
            Transition::Matrix(_) => TransitionKind::Matrix,
        }
    }

    /// Values per entry, for a state of `state` values.
    fn width(&self, state: usize) -> usize {
        self.kind().width(state)
    }

    fn values(&self) -> &[T] {
        match self {
            Transition::Scalar(v) | Transition::Diagonal(v) | Transition::Matrix(v) => v,
        }
    }
}

/// A batch of linear recurrences (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Recurrence<'a, T> {
    /// The batch's shape and layout.
    pub shape: RecurrenceShape,
    /// The transitions.
    pub a: Transition<'a, T>,
    /// The inputs: `state` values per (sequence, step).
    pub b: &'a [T],
    /// The state before the first step (the last, in reverse): `state`
    /// values per sequence, `[sequence][value]`; zeros when `None`.
    pub initial: Option<&'a [T]>,
    /// Forward (from step 0) or in reverse (from the last step).
    pub direction: Direction,
    /// With `Some(c)` (`state` values per (sequence, step)), the output is
    /// `y[t] = c[t] · h[t]`, one value per (sequence, step), instead of the
    /// states.
    pub readout: Option<&'a [T]>,
}

impl<'a, T> Recurrence<'a, T> {
    /// A forward recurrence from a zero state, writing the states.
    pub fn new(shape: RecurrenceShape, a: Transition<'a, T>, b: &'a [T]) -> Self {
        Recurrence {
            shape,
            a,
            b,
            initial: None,
            direction: Direction::Forward,
            readout: None,
        }
    }

    /// This recurrence from `initial` (`state` values per sequence).
    pub fn initial(mut self, initial: &'a [T]) -> Self {
        self.initial = Some(initial);
        self
    }

    /// This recurrence from the last step back.
    pub fn reverse(mut self) -> Self {
        self.direction = Direction::Reverse;
        self
    }

    /// This recurrence writing `c[t] · h[t]` instead of the states.
    pub fn readout(mut self, c: &'a [T]) -> Self {
        self.readout = Some(c);
        self
    }

    /// Values the output holds: one per (sequence, step) with a readout,
    /// else `state` per (sequence, step).
    pub fn output_len(&self) -> usize {
        self.shape.output_len(self.readout.is_some())
    }
}

/// An array that does not fit the recurrence's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{array}` has {given} values where the recurrence's shape needs {expected}")]
pub struct RecurrenceLengthError {
    /// Which array: `a`, `b`, `initial`, `readout` or `output`.
    pub array: &'static str,
    /// Its length.
    pub given: usize,
    /// The length the shape needs.
    pub expected: usize,
}

fn expect(array: &'static str, given: usize, expected: usize) -> Result<(), RecurrenceLengthError> {
    if given == expected {
        Ok(())
    } else {
        Err(RecurrenceLengthError {
            array,
            given,
            expected,
        })
    }
}

impl<T> Recurrence<'_, T> {
    /// Checks every array's length against the shape (and `output`'s).
    pub fn check(&self, output: usize) -> Result<(), RecurrenceLengthError> {
        self.shape.check_lengths(&RecurrenceLengths {
            kind: self.a.kind(),
            a: self.a.values().len(),
            b: self.b.len(),
            initial: self.initial.map(<[T]>::len),
            readout: self.readout.map(<[T]>::len),
            output,
        })
    }
}

/// The lengths of a recurrence's arrays, wherever they live (the GPU's
/// recurrences check theirs with the CPU's rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecurrenceLengths {
    /// The transition's kind.
    pub kind: TransitionKind,
    /// Values of `a`, `b`, the initial state and the readout (if any).
    pub a: usize,
    /// See [`RecurrenceLengths::a`].
    pub b: usize,
    /// See [`RecurrenceLengths::a`].
    pub initial: Option<usize>,
    /// See [`RecurrenceLengths::a`].
    pub readout: Option<usize>,
    /// Values of the output.
    pub output: usize,
}

impl RecurrenceShape {
    /// Values the output holds: one per (sequence, step) with a readout,
    /// else `state` per (sequence, step).
    pub fn output_len(&self, readout: bool) -> usize {
        self.entries() * if readout { 1 } else { self.state }
    }

    /// Checks every array's length against the shape, in the order `a`,
    /// `b`, `initial`, `readout`, `output`.
    pub fn check_lengths(&self, l: &RecurrenceLengths) -> Result<(), RecurrenceLengthError> {
        expect("a", l.a, self.entries() * l.kind.width(self.state))?;
        expect("b", l.b, self.entries() * self.state)?;
        if let Some(h0) = l.initial {
            expect("initial", h0, self.sequences * self.state)?;
        }
        if let Some(c) = l.readout {
            expect("readout", c, self.entries() * self.state)?;
        }
        expect("output", l.output, self.output_len(l.readout.is_some()))
    }
}

/// Runs the recurrences on all cores (one sequence a task, its steps in
/// order) and writes their states, or their readouts, to `output` in the
/// shape's layout. Each step computes `a[t] · h + b[t]` as a product, then
/// a sum (a matrix row's products summed in column order), without fused
/// multiply-adds. On a length error nothing is written.
pub fn linear_recurrence<T: Real>(
    r: &Recurrence<'_, T>,
    output: &mut [T],
) -> Result<(), RecurrenceLengthError> {
    r.check(output.len())?;
    let s = r.shape;
    let d = s.state;
    let k_out = if r.readout.is_some() { 1 } else { d };
    let a_width = r.a.width(d);
    let per_sequence: Vec<Vec<T>> = (0..s.sequences)
        .into_par_iter()
        .map(|q| {
            let mut h: Vec<T> = match r.initial {
                Some(h0) => h0[q * d..(q + 1) * d].to_vec(),
                None => vec![T::ZERO; d],
            };
            let mut next = vec![T::ZERO; d];
            let mut out = vec![T::ZERO; s.steps * k_out];
            for i in 0..s.steps {
                let t = match r.direction {
                    Direction::Forward => i,
                    Direction::Reverse => s.steps - 1 - i,
                };
                let a = |j: usize| r.a.values()[s.index(q, t, a_width, j)];
                let b = |j: usize| r.b[s.index(q, t, d, j)];
                for j in 0..d {
                    let ah = match r.a {
                        Transition::Scalar(_) => a(0) * h[j],
                        Transition::Diagonal(_) => a(j) * h[j],
                        Transition::Matrix(_) => {
                            (1..d).fold(a(j * d) * h[0], |acc, m| acc + a(j * d + m) * h[m])
                        }
                    };
                    next[j] = ah + b(j);
                }
                std::mem::swap(&mut h, &mut next);
                match r.readout {
                    Some(c) => {
                        let c = |j: usize| c[s.index(q, t, d, j)];
                        out[t] = if d == 0 {
                            T::ZERO
                        } else {
                            (1..d).fold(c(0) * h[0], |acc, j| acc + c(j) * h[j])
                        };
                    }
                    None => out[t * d..(t + 1) * d].copy_from_slice(&h),
                }
            }
            out
        })
        .collect();
    for (q, values) in per_sequence.iter().enumerate() {
        for t in 0..s.steps {
            for j in 0..k_out {
                output[s.index(q, t, k_out, j)] = values[t * k_out + j];
            }
        }
    }
    Ok(())
}
