use gpu_scan::prelude::*;

// Two parameters where a map takes one.
#[scan_map(input = u8, output = u32, map = |x, y| x as u32)]
struct TwoParams;

// A predicate without its element type.
#[scan_predicate(keep = |x| x > 3)]
struct NoElement;

// A stage names itself with a unit struct.
#[scan_map(input = u8, output = u8, map = |x| x)]
struct WithFields {
    a: u8,
}

// An argument neither attribute takes.
#[scan_predicate(element = u32, keep = |x| x > 3, identity = 0)]
struct UnknownKey;

// A construct outside the operators' subset.
#[scan_map(input = u32, output = u32, map = |x| { let mut y = x; y += 1; y })]
struct Mutation;

// The fn form's return type is not the output type.
#[scan_map(input = u8, output = u32, map = fn widen(x: u8) -> u16 { x as u16 })]
struct WrongReturn;

// A predicate that does not return a bool.
#[scan_predicate(element = u32, keep = |x| x + 1)]
struct NotABool;

// An equality compares two neighbours.
#[scan_equality(element = u32, eq = |a| a == 1)]
struct OneSided;

fn main() {}
