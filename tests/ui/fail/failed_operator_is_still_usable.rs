use gpu_scan::prelude::*;

// Each operator below fails in the macro. Code using them still type-checks
// (the macro emits stub impls), so the only errors are the macro's own.

#[scan_op(element = u32, identity = 0, op = |a, b| {
    for _ in 0..3 {}
    a + b
})]
struct LoopSum;

#[scan_op(identity = Pair { lo: 0, hi: 0 }, op = |x, y| Pair { lo: x.lo, hi: y.hi.frobnicate() })]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pair {
    lo: u32,
    hi: u32,
}

fn main() {
    let mut data = vec![1u32, 2, 3];
    cpu::scan_in_place::<LoopSum>(ScanKind::Inclusive, &mut data);
    let _scanner = Scanner::<LoopSum>::new();
    let mut pairs = vec![Pair { lo: 1, hi: 2 }];
    cpu::scan_in_place::<Pair>(ScanKind::Inclusive, &mut pairs);
    let _identity: Pair = <Pair as ScanOp>::IDENTITY;
}
