// A matrix scan (down the columns, or in two dimensions) writes no
// carry-out and takes no segments: its spec refuses both, whichever comes
// first.
use gpu_scan::prelude::*;
use gpu_scan::segmented::Segments;

fn main() {
    let mut carry = 0u32;
    let _ = ScanSpec::<u32>::inclusive().columns(4).carry_out(&mut carry);
    let _ = ScanSpec::<u32>::inclusive().carry_out(&mut carry).summed_area(4);
    let _ = ScanSpec::<u32>::inclusive().summed_area(4).segments(Segments::rows(4));
    let _ = ScanSpec::<u32>::inclusive().segments(Segments::rows(4)).columns(4);
}
