use gpu_scan::prelude::*;

#[scan_op(identity = V { m: [0; 2] }, op = |x, y| {
    let both = [x.m[0], y.m[1]];
    V { m: both }
})]
#[repr(C)]
#[derive(Clone, Copy)]
struct V { m: [u32; 2] }

fn main() {}
