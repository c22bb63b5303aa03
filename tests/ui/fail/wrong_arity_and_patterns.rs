use gpu_scan::prelude::*;

#[scan_op(element = u32, identity = 0, op = |a, b, c| a + b + c)]
struct ThreeOperands;

#[scan_op(element = u32, identity = 0, op = |(a, _), b| a + b)]
struct Pattern;

fn main() {}
