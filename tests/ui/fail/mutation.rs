use gpu_scan::prelude::*;

#[scan_op(element = u32, identity = 0, op = |a, b| {
    let mut s = a;
    s += b;
    s
})]
struct Mutates;

fn main() {}
