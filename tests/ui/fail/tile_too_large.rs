use gpu_scan::prelude::*;

// 1024 threads × 16 items of 8 bytes: 128 KiB of staging per block.
#[scan_op(element = u64, identity = 0, op = |a, b| a + b, block_threads = 1024, items_per_thread = 16)]
struct WideTiles;

fn main() {}
