use gpu_scan::prelude::*;

// 264 bytes: more than the 256 a #[scan_op] element may have.
#[scan_op(identity = Big { w: [0; 66] }, op = |_x, y| y)]
#[repr(C)]
#[derive(Clone, Copy)]
struct Big { w: [u32; 66] }

fn main() {}
