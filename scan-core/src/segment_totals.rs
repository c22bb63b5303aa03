//! Per-segment totals on the CPU ([`ScanSpec::segment_totals`](crate::ScanSpec::segment_totals)):
//! which elements each segment holds ([`segment_ranges`]) and every segment's
//! carry-out, folded from the input in scan order (the oracle of the
//! GPU's totals).

use crate::cpu::{carry_of, nth_index, step};
use crate::segments::{SegmentOffset, SegmentOffsets, Segments};
use crate::ScanOp;
use rayon::prelude::*;
use std::ops::Range;

/// The elements of each segment of a checked sequence of `n`, in memory
/// order: the runs that start at each head for flags, rows and keys (none
/// for an empty sequence), and for offsets the windows `[offsets[r],
/// offsets[r + 1])` of CSR row pointers (`offsets.len() - 1` of them, empty
/// ones included; elements before the first offset or after the last
/// belong to none).
///
/// ```
/// use gpu_scan::segmented::{segment_ranges, Segments};
///
/// assert_eq!(segment_ranges(Segments::rows(2), 6), [0..2, 2..4, 4..6]);
/// assert_eq!(segment_ranges(Segments::offsets(&[0u32, 2, 2, 5][..]), 5), [0..2, 2..2, 2..5]);
/// assert_eq!(segment_ranges(Segments::keys(&[7u8, 7, 1][..]), 3), [0..2, 2..3]);
/// ```
pub fn segment_ranges(segments: Segments<'_>, n: usize) -> Vec<Range<usize>> {
    fn windows<O: SegmentOffset>(offsets: &[O]) -> Vec<Range<usize>> {
        offsets
            .windows(2)
            .map(|w| w[0].to_u64() as usize..w[1].to_u64() as usize)
            .collect()
    }
    match segments {
        Segments::Offsets(SegmentOffsets::U32(o)) => windows(o),
        Segments::Offsets(SegmentOffsets::U64(o)) => windows(o),
        Segments::Rows { row_length } => (0..n / row_length)
            .map(|r| r * row_length..(r + 1) * row_length)
            .collect(),
        _ => {
            let mut ranges: Vec<Range<usize>> = Vec::new();
            for i in 0..n {
                if i == 0 || segments.is_head(i) {
                    ranges.push(i..i + 1);
                } else if let Some(last) = ranges.last_mut() {
                    last.end = i + 1;
                }
            }
            ranges
        }
    }
}

/// Writes every segment's carry-out to `slot` (one per segment of
/// [`segment_ranges`], checked by the caller): `init` (the identity when
/// `None` and the segment is empty) combined with the segment's elements
/// in scan order.
pub(crate) fn fill<Op: ScanOp>(
    init: Option<Op::Element>,
    reverse: bool,
    ranges: &[Range<usize>],
    input: &[Op::Element],
    slot: &mut [Op::Element],
) {
    slot.par_iter_mut().zip(ranges).for_each(|(total, range)| {
        let segment = &input[range.clone()];
        let mut running = init;
        for k in 0..segment.len() {
            running = Some(step::<Op>(
                reverse,
                running,
                segment[nth_index(reverse, segment.len(), k)],
            ));
        }
        *total = carry_of::<Op>(running);
    });
}
