use gpu_scan::prelude::*;

#[scan_op(element = u32, identity = 1, op = |a, b| a.pow(2) * b.checked_mul(3))]
struct Powers;

fn main() {}
