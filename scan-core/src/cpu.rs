//! The CPU backend: sequential and multi-threaded scans for any [`ScanOp`].
//!
//! Every function exists in four forms: out of place or in place, and
//! sequential or parallel (`par_*`, on rayon's thread pool). The parallel
//! forms use the same reduce-then-scan structure as the GPU (chunk totals,
//! scan of the totals, seeded rescan) and produce the same results as the
//! sequential ones whenever the operator is associative; integers match bit
//! for bit.
//!
//! ```
//! use gpu_scan::prelude::*;
//!
//! #[scan_op(element = u64, identity = 0, op = |a, b| a + b)]
//! struct Sum;
//!
//! let mut out = vec![0; 4];
//! cpu::exclusive::<Sum>(&[1, 2, 3, 4], &mut out).unwrap();
//! assert_eq!(out, [0, 1, 3, 6]);
//! assert_eq!(cpu::par_inclusive_vec::<Sum>(&[1, 2, 3, 4]), [1, 3, 6, 10]);
//! ```

use crate::ScanOp;
use rayon::prelude::*;

/// Which scan to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanKind<E> {
    /// `out[i] = in[0] ∘ … ∘ in[i]`
    Inclusive,
    /// `out[i] = in[0] ∘ … ∘ in[i-1]`, `out[0] = identity`
    Exclusive,
    /// `out[i] = init ∘ in[0] ∘ … ∘ in[i-1]`, `out[0] = init`
    ExclusiveWithInit(E),
}

/// The output slice's length differs from the input's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("output has {output} elements but the input has {input}: scans write one output element per input element")]
pub struct LengthMismatch {
    /// Input length.
    pub input: usize,
    /// Output length.
    pub output: usize,
}

/// `a ∘ b` where `None` stands for "nothing in front".
fn combine_opt<Op: ScanOp>(a: Option<Op::Element>, b: Op::Element) -> Op::Element {
    match a {
        Some(a) => Op::combine(a, b),
        None => b,
    }
}

fn seed_of<Op: ScanOp>(kind: ScanKind<Op::Element>) -> (bool, Option<Op::Element>) {
    match kind {
        ScanKind::Inclusive => (true, None),
        ScanKind::Exclusive => (false, None),
        ScanKind::ExclusiveWithInit(init) => (false, Some(init)),
    }
}

/// Scans `input` into `output` with `seed` in front (`None`: nothing).
fn scan_run<Op: ScanOp>(
    inclusive: bool,
    seed: Option<Op::Element>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) {
    let mut running = seed;
    for (x, out) in input.iter().zip(output.iter_mut()) {
        let next = combine_opt::<Op>(running, *x);
        *out = if inclusive {
            next
        } else {
            running.unwrap_or(Op::IDENTITY)
        };
        running = Some(next);
    }
}

fn scan_run_in_place<Op: ScanOp>(
    inclusive: bool,
    seed: Option<Op::Element>,
    data: &mut [Op::Element],
) {
    let mut running = seed;
    for slot in data.iter_mut() {
        let next = combine_opt::<Op>(running, *slot);
        *slot = if inclusive {
            next
        } else {
            running.unwrap_or(Op::IDENTITY)
        };
        running = Some(next);
    }
}

fn reduce<Op: ScanOp>(chunk: &[Op::Element]) -> Option<Op::Element> {
    chunk
        .iter()
        .fold(None, |acc, x| Some(combine_opt::<Op>(acc, *x)))
}

/// Scans `input` into `output` sequentially.
pub fn scan<Op: ScanOp>(
    kind: ScanKind<Op::Element>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), LengthMismatch> {
    check_lengths(input.len(), output.len())?;
    let (inclusive, seed) = seed_of::<Op>(kind);
    scan_run::<Op>(inclusive, seed, input, output);
    Ok(())
}

/// Scans `data` in place sequentially.
pub fn scan_in_place<Op: ScanOp>(kind: ScanKind<Op::Element>, data: &mut [Op::Element]) {
    let (inclusive, seed) = seed_of::<Op>(kind);
    scan_run_in_place::<Op>(inclusive, seed, data);
}

fn check_lengths(input: usize, output: usize) -> Result<(), LengthMismatch> {
    if input == output {
        Ok(())
    } else {
        Err(LengthMismatch { input, output })
    }
}

/// Elements per parallel chunk: enough chunks to balance the pool, never so
/// small that the pass over chunk totals dominates.
pub(crate) fn chunk_len(n: usize) -> usize {
    let chunks = rayon::current_num_threads().max(1) * 4;
    n.div_ceil(chunks).max(1 << 14)
}

/// Exclusive prefixes of the chunk totals, seeded with `seed`.
fn chunk_prefixes<Op: ScanOp>(
    seed: Option<Op::Element>,
    totals: &[Option<Op::Element>],
) -> Vec<Option<Op::Element>> {
    let mut prefixes = Vec::with_capacity(totals.len());
    let mut running = seed;
    for total in totals {
        prefixes.push(running);
        if let Some(t) = total {
            running = Some(combine_opt::<Op>(running, *t));
        }
    }
    prefixes
}

/// Scans `input` into `output` on all cores.
pub fn par_scan<Op: ScanOp>(
    kind: ScanKind<Op::Element>,
    input: &[Op::Element],
    output: &mut [Op::Element],
) -> Result<(), LengthMismatch> {
    check_lengths(input.len(), output.len())?;
    let (inclusive, seed) = seed_of::<Op>(kind);
    let len = chunk_len(input.len());
    if input.len() <= len {
        scan_run::<Op>(inclusive, seed, input, output);
        return Ok(());
    }
    let totals: Vec<_> = input.par_chunks(len).map(reduce::<Op>).collect();
    let prefixes = chunk_prefixes::<Op>(seed, &totals);
    input
        .par_chunks(len)
        .zip(output.par_chunks_mut(len))
        .zip(prefixes)
        .for_each(|((i, o), prefix)| {
            scan_run::<Op>(inclusive, prefix, i, o);
        });
    Ok(())
}

/// Scans `data` in place on all cores.
pub fn par_scan_in_place<Op: ScanOp>(kind: ScanKind<Op::Element>, data: &mut [Op::Element]) {
    let (inclusive, seed) = seed_of::<Op>(kind);
    let len = chunk_len(data.len());
    if data.len() <= len {
        scan_run_in_place::<Op>(inclusive, seed, data);
        return;
    }
    let totals: Vec<_> = data.par_chunks(len).map(reduce::<Op>).collect();
    let prefixes = chunk_prefixes::<Op>(seed, &totals);
    data.par_chunks_mut(len)
        .zip(prefixes)
        .for_each(|(chunk, prefix)| {
            scan_run_in_place::<Op>(inclusive, prefix, chunk);
        });
}

macro_rules! forms {
    ($(($doc:literal, $name:ident, $in_place:ident, $vec:ident, $engine:ident, $engine_in_place:ident, $kind:expr $(, $init:ident)?)),* $(,)?) => {$(
        #[doc = concat!("Out-of-place ", $doc, " of `input` into `output` (equal lengths).")]
        pub fn $name<Op: ScanOp>(input: &[Op::Element], output: &mut [Op::Element] $(, $init: Op::Element)?) -> Result<(), LengthMismatch> {
            $engine::<Op>($kind, input, output)
        }
        #[doc = concat!("In-place ", $doc, " of `data`.")]
        pub fn $in_place<Op: ScanOp>(data: &mut [Op::Element] $(, $init: Op::Element)?) {
            $engine_in_place::<Op>($kind, data)
        }
        #[doc = concat!($doc, " of `input` into a new `Vec`.")]
        pub fn $vec<Op: ScanOp>(input: &[Op::Element] $(, $init: Op::Element)?) -> Vec<Op::Element> {
            let mut out = input.to_vec();
            $engine_in_place::<Op>($kind, &mut out);
            out
        }
    )*};
}

forms! {
    ("sequential inclusive scan", inclusive, inclusive_in_place, inclusive_vec, scan, scan_in_place, ScanKind::Inclusive),
    ("sequential exclusive scan", exclusive, exclusive_in_place, exclusive_vec, scan, scan_in_place, ScanKind::Exclusive),
    ("sequential exclusive scan seeded with `init`", exclusive_with_init, exclusive_with_init_in_place, exclusive_with_init_vec, scan, scan_in_place, ScanKind::ExclusiveWithInit(init), init),
    ("parallel inclusive scan", par_inclusive, par_inclusive_in_place, par_inclusive_vec, par_scan, par_scan_in_place, ScanKind::Inclusive),
    ("parallel exclusive scan", par_exclusive, par_exclusive_in_place, par_exclusive_vec, par_scan, par_scan_in_place, ScanKind::Exclusive),
    ("parallel exclusive scan seeded with `init`", par_exclusive_with_init, par_exclusive_with_init_in_place, par_exclusive_with_init_vec, par_scan, par_scan_in_place, ScanKind::ExclusiveWithInit(init), init),
}
