use gpu_scan::prelude::*;

const SCALE: u32 = 3;

#[scan_op(element = u32, identity = 0, op = |a, b| a + b * SCALE)]
struct Captures;

fn main() {}
