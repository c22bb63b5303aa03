//! Property tests of the CPU column scans (`gpu_scan::columns`), the oracle
//! of the GPU's:
//!
//! * every column of the result equals the 1-D scan (`cpu::scan`, itself
//!   checked against the definition in `cpu_properties.rs`) of that column
//!   taken out of the matrix, for every kind, forward and in reverse, on
//!   non-commutative operators (affine maps, "keep the right one");
//! * parallel equals sequential and in place equals out of place, bit for
//!   bit, on matrices long enough for many parallel bands, wide and narrow;
//! * a row length of 0 or one that does not divide the length, and an
//!   output of another length, are typed errors that write nothing.

mod common;
use common::ops::*;
use common::specs::*;
use common::verb::ViaScanner;
use gpu_scan::columns;
use gpu_scan::prelude::*;
use gpu_scan::segmented::{RowLengthMismatch, SegmentedError};
use gpu_scan::LengthMismatch;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

type Rng64 = rand::rngs::StdRng;

/// The column scan built from 1-D scans of each column.
fn by_columns<Op: ScanOp>(
    spec: ScanSpec<Op::Element>,
    cols: usize,
    input: &[Op::Element],
) -> Vec<Op::Element> {
    let rows = input.len() / cols;
    let mut out = vec![Op::IDENTITY; input.len()];
    for c in 0..cols {
        let column: Vec<_> = (0..rows).map(|r| input[r * cols + c]).collect();
        let mut scanned = vec![Op::IDENTITY; rows];
        gpu_scan::cpu::scan::<Op>(spec, &column, &mut scanned).unwrap();
        for (r, x) in scanned.into_iter().enumerate() {
            out[r * cols + c] = x;
        }
    }
    out
}

fn check<Op: ViaScanner>(rows: usize, cols: usize, input: &[Op::Element], init: Op::Element)
where
    Op::Element: PartialEq + std::fmt::Debug,
{
    for spec in all_specs(init) {
        let want = by_columns::<Op>(spec, cols, input);
        let label = format!("{rows} × {cols}, {spec:?}");
        let mut out = vec![Op::IDENTITY; input.len()];
        columns::scan::<Op>(spec, cols, input, &mut out).unwrap();
        assert!(out == want, "{label}: scan");
        let mut out = vec![Op::IDENTITY; input.len()];
        columns::par_scan::<Op>(spec, cols, input, &mut out).unwrap();
        assert!(out == want, "{label}: par_scan");
        let mut data = input.to_vec();
        columns::scan_in_place::<Op>(spec, cols, &mut data).unwrap();
        assert!(data == want, "{label}: scan_in_place");
        let mut data = input.to_vec();
        columns::par_scan_in_place::<Op>(spec, cols, &mut data).unwrap();
        assert!(data == want, "{label}: par_scan_in_place");
        // The one verb, with the shape in the spec (the CPU backend).
        let got = Op::via_scanner(spec.columns(cols), input);
        assert!(got.is_none_or(|got| got == want), "{label}: Scanner::scan");
        // Along the rows: the same matrix as segments of a fixed length.
        let mut along = vec![Op::IDENTITY; input.len()];
        let rows = gpu_scan::segmented::Segments::rows(cols);
        gpu_scan::segmented::scan::<Op>(spec, rows, input, &mut along).unwrap();
        let got = Op::via_scanner(spec.rows(cols), input);
        assert!(got.is_none_or(|got| got == along), "{label}: rows");
    }
}

fn shapes() -> impl Strategy<Value = (usize, usize)> {
    prop_oneof![
        3 => (0usize..40, 1usize..70),
        1 => (1usize..4, 20_000usize..70_000),
        1 => (20_000usize..70_000, 1usize..4),
        1 => (300usize..700, 200usize..400),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn columns_are_the_scans_of_each_column((rows, cols) in shapes(), seed: u64) {
        let mut rng = Rng64::seed_from_u64(seed);
        let n = rows * cols;
        let affine: Vec<AffineU32> = (0..n).map(|_| AffineU32 { a: rng.random(), b: rng.random() }).collect();
        check::<AffineU32>(rows, cols, &affine, AffineU32 { a: 3, b: 7 });
        let latest: Vec<Latest> = (0..n).map(|_| random_latest(&mut rng, 0.3)).collect();
        check::<Latest>(rows, cols, &latest, Latest { valid: true, value: 5 });
    }
}

#[test]
fn bad_shapes_are_typed_errors_that_write_nothing() {
    let input = [1u32, 2, 3, 4, 5, 6];
    for (len, cols) in [(6, 0), (6, 4), (6, 7), (0, 0)] {
        let want = SegmentedError::Rows(RowLengthMismatch {
            elements: len,
            row_length: cols,
        });
        let mut out = [99u32; 6];
        let err =
            columns::scan::<SumU32>(ScanKind::Inclusive, cols, &input[..len], &mut out[..len])
                .unwrap_err();
        assert_eq!(err, want);
        let err = columns::par_scan_in_place::<SumU32>(ScanKind::Exclusive, cols, &mut out[..len])
            .unwrap_err();
        assert_eq!(err, want);
        assert_eq!(out, [99; 6]);
        #[cfg(feature = "gpu")]
        {
            let err = Scanner::<SumU32>::cpu()
                .scan(ScanSpec::inclusive().columns(cols), &input[..len])
                .unwrap_err();
            assert!(
                matches!(err, ScanError::RowLength(e) if e == RowLengthMismatch { elements: len, row_length: cols }),
                "{err:?}"
            );
        }
    }
    let mut out = [99u32; 4];
    let err = columns::par_scan::<SumU32>(ScanKind::Inclusive, 2, &input, &mut out).unwrap_err();
    assert_eq!(
        err,
        SegmentedError::Length(LengthMismatch {
            input: 6,
            output: 4
        })
    );
    assert_eq!(out, [99; 4]);
}
