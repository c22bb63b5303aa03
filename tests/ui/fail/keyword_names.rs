use gpu_scan::prelude::*;

#[scan_op(identity = K { class: 0 }, op = |x, y| {
    let scan_tmp = x.class;
    K { class: scan_tmp + y.class }
})]
#[repr(C)]
#[derive(Clone, Copy)]
struct K { class: u32 }

fn main() {}
