use gpu_scan::prelude::*;

#[scan_op(element = i32, identity = 0, op = |a, b| {
    println!("{a}");
    if a > b { return a; } else { b };
    let t = (a, b);
    a
})]
struct Many;

fn main() {}
