//! The overflow rules: the Rust side of a translated operator wraps in debug
//! builds (trybuild builds in debug), where plain Rust would panic.
use gpu_scan::prelude::*;

#[scan_op(element = i32, identity = 0, op = |a, b| a * 2 + b - (-a) / (b % 5) + (a << 40))]
struct Wrapping;

#[scan_op(element = u8, identity = 0, op = fn add_bytes(x: u8, y: u8) -> u8 { x + y + 250 })]
struct Bytes;

#[scan_op(element = f32, identity = 0.0, op = |a, b| (a as i8) as f32 + b.max(f32::NAN))]
struct Saturating;

fn main() {
    // i32::MAX * 2 wraps; division by zero (b % 5 == 0) gives 0; << 40 shifts by 8.
    let a = i32::MAX;
    let b = 5;
    let expected = a.wrapping_mul(2).wrapping_add(b).wrapping_sub(0).wrapping_add(a.wrapping_shl(40));
    assert_eq!(<Wrapping as ScanOp>::combine(a, b), expected);
    assert_eq!(<Bytes as ScanOp>::combine(200, 100), 200u8.wrapping_add(100).wrapping_add(250));
    // Float-to-int casts saturate; max ignores NaN.
    assert_eq!(<Saturating as ScanOp>::combine(1000.0, 1.5), 127.0 + 1.5);
    assert_eq!(<Saturating as ScanOp>::combine(f32::NAN, 1.0), 1.0);
}
