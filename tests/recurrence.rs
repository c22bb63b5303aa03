//! Linear recurrences on the CPU (`gpu_scan::recurrence`), the oracle of the
//! GPU's: against a direct transcription of `h[t] = a[t] · h[t-1] + b[t]`
//! (bit for bit: the same operations in the same order) for every
//! transition, layout, direction, initial state and readout over random
//! shapes, and against a scan of affine maps (the GPU's algorithm) within
//! a derived tolerance. `RECURRENCE_SEED` replays a run.

mod common;
use common::ops::Affine;
use gpu_scan::prelude::*;
use gpu_scan::recurrence::{
    linear_recurrence, Recurrence, RecurrenceLengthError, RecurrenceShape, TimeLayout, Transition,
};
use rand::{Rng, SeedableRng};

type Rng64 = rand::rngs::StdRng;

fn seed() -> u64 {
    let seed = common::seed::from_env_or_clock("RECURRENCE_SEED");
    println!("recurrence: seed {seed} (RECURRENCE_SEED={seed} replays)");
    seed
}

/// The transition's kind, for the direct transcription.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Scalar,
    Diagonal,
    Matrix,
}

/// `h[t] = a[t] · h[t-1] + b[t]` written out with its own index formulas.
#[allow(clippy::too_many_arguments)]
fn direct(
    shape: RecurrenceShape,
    kind: Kind,
    a: &[f64],
    b: &[f64],
    h0: Option<&[f64]>,
    reverse: bool,
    c: Option<&[f64]>,
) -> Vec<f64> {
    let (n, t_len, d) = (shape.sequences, shape.steps, shape.state);
    let time_major = shape.layout == TimeLayout::TimeMajor;
    // Entry (q, t) of an array of k values per entry, value j.
    let at = |q: usize, t: usize, k: usize, j: usize| {
        if time_major {
            (t * n + q) * k + j
        } else {
            (q * t_len + t) * k + j
        }
    };
    let k_out = if c.is_some() { 1 } else { d };
    let mut out = vec![f64::NAN; n * t_len * k_out];
    for q in 0..n {
        let mut h: Vec<f64> = (0..d).map(|j| h0.map_or(0.0, |h0| h0[q * d + j])).collect();
        let order: Vec<usize> = if reverse {
            (0..t_len).rev().collect()
        } else {
            (0..t_len).collect()
        };
        for t in order {
            let mut next = vec![0.0; d];
            for (j, slot) in next.iter_mut().enumerate() {
                let ah = match kind {
                    Kind::Scalar => a[at(q, t, 1, 0)] * h[j],
                    Kind::Diagonal => a[at(q, t, d, j)] * h[j],
                    Kind::Matrix => {
                        let mut sum = a[at(q, t, d * d, j * d)] * h[0];
                        for m in 1..d {
                            sum += a[at(q, t, d * d, j * d + m)] * h[m];
                        }
                        sum
                    }
                };
                *slot = ah + b[at(q, t, d, j)];
            }
            h = next;
            match c {
                Some(c) => {
                    // An empty state reads out 0.
                    let mut y = if d == 0 {
                        0.0
                    } else {
                        c[at(q, t, d, 0)] * h[0]
                    };
                    for j in 1..d {
                        y += c[at(q, t, d, j)] * h[j];
                    }
                    out[at(q, t, 1, 0)] = y;
                }
                None => {
                    for j in 0..d {
                        out[at(q, t, d, j)] = h[j];
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_form_matches_the_direct_transcription() {
    let mut rng = Rng64::seed_from_u64(seed());
    let mut cases = 0;
    for _ in 0..60 {
        let shape = RecurrenceShape {
            sequences: rng.random_range(1..6),
            steps: rng.random_range(0..40),
            state: rng.random_range(0..5),
            layout: [TimeLayout::SequenceMajor, TimeLayout::TimeMajor][rng.random_range(0..2)],
        };
        let entries = shape.sequences * shape.steps;
        let d = shape.state;
        let mut values =
            |len: usize| -> Vec<f64> { (0..len).map(|_| rng.random_range(-1.0..1.0)).collect() };
        let b = values(entries * d);
        let h0 = values(shape.sequences * d);
        let c = values(entries * d);
        let scalar = values(entries);
        let diagonal = values(entries * d);
        let matrix = values(entries * d * d);
        for (kind, a) in [
            (Kind::Scalar, Transition::Scalar(&scalar[..])),
            (Kind::Diagonal, Transition::Diagonal(&diagonal[..])),
            (Kind::Matrix, Transition::Matrix(&matrix[..])),
        ] {
            for reverse in [false, true] {
                for (initial, readout) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let mut r = Recurrence::new(shape, a, &b);
                    if reverse {
                        r = r.reverse();
                    }
                    if initial {
                        r = r.initial(&h0);
                    }
                    if readout {
                        r = r.readout(&c);
                    }
                    let mut got = vec![f64::NAN; r.output_len()];
                    linear_recurrence(&r, &mut got).unwrap();
                    let a_values = match a {
                        Transition::Scalar(v) | Transition::Diagonal(v) | Transition::Matrix(v) => {
                            v
                        }
                    };
                    let want = direct(
                        shape,
                        kind,
                        a_values,
                        &b,
                        initial.then_some(&h0[..]),
                        reverse,
                        readout.then_some(&c[..]),
                    );
                    assert_eq!(
                        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        "{shape:?} {kind:?} reverse {reverse} initial {initial} readout {readout}"
                    );
                    cases += 1;
                }
            }
        }
    }
    println!("recurrence: {cases} recurrences equal to the direct transcription");
}

/// The scalar recurrence as the GPU computes it: an inclusive scan of the
/// affine maps v ↦ a[t]·v + b[t] (each composed after the ones before),
/// applied to the initial state. With |a| ≤ 1 every partial product and
/// sum is bounded by M_t = |h0| + Σ_{i≤t} |b_i|, and each of the two
/// evaluations rounds each term at most 2(t+1) times (a product and a sum
/// per step, u = 2^-24 each), so they differ by at most about
/// 4(t+1)·u·M_t; the test allows that.
#[test]
fn a_scan_of_affine_maps_agrees_within_the_rounding_bound() {
    let mut rng = Rng64::seed_from_u64(seed());
    let steps = 100_000;
    let shape = RecurrenceShape {
        sequences: 1,
        steps,
        state: 1,
        layout: TimeLayout::SequenceMajor,
    };
    let a: Vec<f32> = (0..steps).map(|_| rng.random_range(0.9..1.0)).collect();
    let b: Vec<f32> = (0..steps).map(|_| rng.random_range(-1.0..1.0)).collect();
    let h0 = [0.5f32];
    let mut h = vec![0.0f32; steps];
    linear_recurrence(
        &Recurrence::new(shape, Transition::Scalar(&a), &b).initial(&h0),
        &mut h,
    )
    .unwrap();
    let maps: Vec<Affine> = a.iter().zip(&b).map(|(&a, &b)| Affine { a, b }).collect();
    let composed = cpu::inclusive_vec::<Affine>(&maps);
    let u = f32::EPSILON as f64 / 2.0;
    let mut magnitude = h0[0].abs() as f64;
    let mut worst = 0f64;
    for t in 0..steps {
        magnitude += b[t].abs() as f64;
        let scanned = composed[t].a as f64 * h0[0] as f64 + composed[t].b as f64;
        let diff = (scanned - h[t] as f64).abs();
        let bound = 4.0 * (t + 1) as f64 * u * magnitude;
        assert!(diff <= bound, "step {t}: {diff:e} over {bound:e}");
        worst = worst.max(diff / bound);
    }
    println!("recurrence: the affine scan within {worst:.3} of the bound at worst");
}

#[test]
fn arrays_that_do_not_fit_are_typed_errors_that_write_nothing() {
    let shape = RecurrenceShape {
        sequences: 2,
        steps: 3,
        state: 2,
        layout: TimeLayout::TimeMajor,
    };
    let (b, diag) = ([1.0f32; 12], [0.5f32; 12]);
    let mut out = [7.0f32; 12];
    let short = [0.5f32; 11];
    let cases = [
        (
            Recurrence::new(shape, Transition::Diagonal(&short), &b),
            12,
            "a",
            11,
            12,
        ),
        (
            Recurrence::new(shape, Transition::Matrix(&diag), &b),
            12,
            "a",
            12,
            24,
        ),
        (
            Recurrence::new(shape, Transition::Diagonal(&diag), &short),
            12,
            "b",
            11,
            12,
        ),
        (
            Recurrence::new(shape, Transition::Diagonal(&diag), &b).initial(&b[..3]),
            12,
            "initial",
            3,
            4,
        ),
        (
            Recurrence::new(shape, Transition::Diagonal(&diag), &b).readout(&short),
            6,
            "readout",
            11,
            12,
        ),
        (
            Recurrence::new(shape, Transition::Diagonal(&diag), &b),
            11,
            "output",
            11,
            12,
        ),
    ];
    for (r, len, array, given, expected) in cases {
        assert_eq!(
            linear_recurrence(&r, &mut out[..len]),
            Err(RecurrenceLengthError {
                array,
                given,
                expected
            })
        );
        assert!(out.iter().all(|&v| v == 7.0));
    }
}
