use gpu_scan::prelude::*;

#[scan_op(identity = Pair { a: 0, b: 0 }, op = |x, y| Pair { a: x.a + y.a, b: x.b + y.b })]
#[derive(Clone)]
struct Pair { a: u32, b: u32 }

fn main() {}
