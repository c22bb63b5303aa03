//! Every supported construct, with the Rust side checked against values
//! computed by hand (the CUDA side is compiled by tests/nvrtc_compile.rs
//! and run by the GPU suite).
use gpu_scan::prelude::*;

#[scan_op]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inner {
    pub lo: i16,
    pub hi: i16,
}

#[scan_op(
    identity = Everything { count: 0, small: 0, flag: false, total: 0.0, m: [0; 3], inner: Inner { lo: 0, hi: 0 }, wide: 0 },
    op = |x: Everything, y: Everything| {
        // let bindings, shadowing, casts, shifts, bit operations
        let shift = 3;
        let shift = shift + 1;
        let mixed = (x.count << shift) ^ (y.count >> 2u8) | (x.count & 0xff);
        let as_float = mixed as f64 * 0.5 + f64::EPSILON;
        // if/else and match (literals, ranges, or-patterns, negative literals, _)
        let pick = if x.flag && !y.flag { x.small } else { y.small.wrapping_add(1) };
        let bucket = match x.small {
            -128..=-1 => 0u8,
            0 | 1 => 1,
            2..10 => 2,
            _ => 3,
        };
        let negative = match y.inner.lo { -5 => true, _ => false };
        // methods, paths to methods and constants, blocks
        let m0 = std::cmp::max(x.m[0], y.m[0]).saturating_add(bucket as u32);
        let m1 = { let t = x.m[1].min(y.m[1]); t.rotate_left(1).count_ones() };
        let total = f64::max(x.total, y.total).mul_add(2.0, as_float.sqrt()).min(f64::MAX);
        Everything {
            count: x.count + y.count * 3 - 1,
            small: pick / 2 % 7,
            flag: negative || x.total.is_nan() || x.wide == u64::MAX,
            total: -total,
            m: [m0, m1, x.m[2] + u32::BITS],
            inner: Inner { hi: y.inner.hi, ..x.inner },
            wide: (x.wide as i64).abs() as u64 + (y.total as u64),
        }
    }
)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Everything {
    pub count: u32,
    pub small: i8,
    pub flag: bool,
    pub total: f64,
    pub m: [u32; 3],
    pub inner: Inner,
    pub wide: u64,
}

fn main() {
    let x = Everything { count: 7, small: 1, flag: true, total: 2.0, m: [5, 0x8000_0001, 2], inner: Inner { lo: 3, hi: 4 }, wide: 9 };
    let y = Everything { count: 1, small: -4, flag: false, total: 3.0, m: [9, 3, 0], inner: Inner { lo: -5, hi: 6 }, wide: 0 };
    let r = <Everything as ScanOp>::combine(x, y);
    let mixed = (7u32 << 4) ^ (1u32 >> 2) | (7 & 0xff);
    let as_float = mixed as f64 * 0.5 + f64::EPSILON;
    let expected = Everything {
        count: 7 + 3 - 1,
        small: 1 / 2 % 7,
        flag: true,
        total: -(3.0f64.mul_add(2.0, as_float.sqrt())),
        m: [9 + 1, 0x8000_0001u32.min(3).rotate_left(1).count_ones(), 2 + 32],
        inner: Inner { lo: 3, hi: 6 },
        wide: 9 + 3,
    };
    assert_eq!(r, expected);
    // The match with negative and range patterns picks class 0 for negative `small`.
    let neg = Everything { small: -3, ..x };
    assert_eq!(<Everything as ScanOp>::combine(neg, y).m[0], 9 + 0);
}
