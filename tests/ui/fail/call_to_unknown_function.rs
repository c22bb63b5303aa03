use gpu_scan::prelude::*;

fn helper(a: u32) -> u32 { a }

#[scan_op(element = u32, identity = 0, op = |a, b| helper(a) + b)]
struct CallsHelper;

fn main() {}
