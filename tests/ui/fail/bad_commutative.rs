use gpu_scan::prelude::*;

// `commutative` takes a bool literal.
#[scan_op(element = u32, identity = 0, op = |a, b| a + b, commutative = 1)]
struct NotABool;

// Given twice.
#[scan_op(element = u32, identity = 0, op = |a, b| a + b, commutative = true, commutative = false)]
struct Twice;

// Said of an element with no operator.
#[scan_op(commutative = true)]
#[repr(C)]
#[derive(Clone, Copy)]
struct ElementOnly {
    x: u32,
}

fn main() {}
