use gpu_scan::prelude::*;

// The declared return type must be the element: reported on the user's type.
#[scan_op(element = u32, identity = 0, op = fn widen(x: u32, y: u32) -> u64 { x + y })]
struct Widening;

// And it must be declared.
#[scan_op(element = u32, identity = 0, op = fn unit(x: u32, y: u32) { x + y })]
struct NoReturnType;

fn main() {}
