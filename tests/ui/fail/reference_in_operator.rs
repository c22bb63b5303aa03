use gpu_scan::prelude::*;

#[scan_op(element = u32, identity = 0, op = |a, b| {
    let r = &a;
    a + b
})]
struct TakesReference;

fn main() {}
