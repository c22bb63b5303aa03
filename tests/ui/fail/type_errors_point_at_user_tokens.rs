use gpu_scan::prelude::*;

// The macro accepts the syntax; rustc rejects the types on the user's tokens.
#[scan_op(element = u32, identity = 0, op = |a, b| a + b.sqrt())]
struct SqrtOfInteger;

fn main() {}
