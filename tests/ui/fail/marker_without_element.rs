use gpu_scan::prelude::*;

#[scan_op(identity = 0, op = |a, b| a + b)]
struct NoElement;

fn main() {}
