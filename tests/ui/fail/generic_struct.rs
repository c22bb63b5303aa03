use gpu_scan::prelude::*;

#[scan_op(identity = Pair { a: 0, b: 0 }, op = |x, y| x)]
#[repr(C)]
#[derive(Clone, Copy)]
struct Pair<T> { a: T, b: T }

fn main() {}
