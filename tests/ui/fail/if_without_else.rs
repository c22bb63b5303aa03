use gpu_scan::prelude::*;

#[scan_op(element = u32, identity = 0, op = |a, b| if a > b { a })]
struct NoElse;

fn main() {}
