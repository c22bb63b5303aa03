use gpu_scan::prelude::*;

#[scan_op(element = u32, identity = 0, op = |a, b| a + b, block_threads = 100)]
struct OddBlock;

fn main() {}
