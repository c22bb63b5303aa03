use gpu_scan::prelude::*;

#[scan_op]
#[repr(C)]
#[derive(Clone, Copy)]
struct Bad {
    index: usize,
    letter: char,
    wide: u128,
    name: &'static str,
    pair: (u32, u32),
}

fn main() {}
