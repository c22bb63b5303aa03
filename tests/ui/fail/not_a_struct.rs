use gpu_scan::prelude::*;

#[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
enum Sum { A }

fn main() {}
