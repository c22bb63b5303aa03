use gpu_scan::prelude::*;

// 200 bytes of bytes: 200 registers split into fields, more than the 112
// a #[scan_op] element may take (as [u32; 50] it would take 50).
#[scan_op(identity = Bytes { b: [0; 200] }, op = |_x, y| y)]
#[repr(C)]
#[derive(Clone, Copy)]
struct Bytes { b: [u8; 200] }

fn main() {}
