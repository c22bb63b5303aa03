use gpu_scan::prelude::*;

#[scan_op(element = u32, identity = 0, op = |a, b| {
    let s = a;
    for _ in 0..3 {}
    s + b
})]
struct LoopSum;

fn main() {}
