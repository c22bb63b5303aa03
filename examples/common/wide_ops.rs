//! Wide elements for the benchmarks and the GPU tests: affine maps of a
//! vector, `v -> a·v + b` with `b` a vector of lanes and `a` one lane, in
//! wrapping integer arithmetic: `(a, b)` then `(c, d)` is `(a·c, c·b + d)`.
//! Associative, not commutative, and exact (outputs compare bit for bit),
//! 4 to 256 bytes. `Bytes41`, `Bytes109`, `Half122` and `Half172` have lanes of `u8`
//! and `u16`: their fields take more registers than their bytes fill words,
//! so the kernels hold them packed (`kernels_gen::packed_element`). `cub/wide_bench.cu` has the same operators and
//! generator. Shared by `examples/bench/wide.rs` and `tests/gpu_wide.rs`.
#![allow(dead_code)] // each user takes the sizes it needs

use gpu_scan::prelude::*;

/// Lane `j` of `b` from an element's random bits `x` (as `cub/wide_bench.cu`).
fn lane_bits(x: u64, j: u32) -> u32 {
    ((x >> (j % 32)) as u32) ^ j.wrapping_mul(0x9e37_79b9)
}

/// One operator per size: `$name` over `$lane` with `$k` lanes of `b`
/// (their indices listed, for the operator's array literal), its name in
/// `cub/wide_bench.cu` and its generator index there.
macro_rules! vec_affine {
    ($($name:ident: $lane:ident, $k:literal, [$($i:literal)*], $cub:literal, $index:literal;)*) => {$(
        #[scan_op(
            identity = $name { a: 1, b: [$(0 * $i),*] },
            op = |x, y| $name {
                a: x.a.wrapping_mul(y.a),
                b: [$(y.a.wrapping_mul(x.b[$i]).wrapping_add(y.b[$i])),*],
            }
        )]
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name {
            a: $lane,
            b: [$lane; $k],
        }

        impl $name {
            /// The case's name in `cub/wide_bench.cu`.
            pub const CUB_NAME: &'static str = $cub;
            /// The generator's seed offset there.
            pub const INDEX: u64 = $index;
            /// The element of random bits `x`, with an odd `a`: products of
            /// odd numbers stay odd, so long prefixes never collapse to the
            /// zero map.
            pub fn from_bits(x: u64) -> $name {
                $name {
                    a: (x as $lane) | 1,
                    b: [$(lane_bits(x, $i) as $lane),*],
                }
            }
        }
    )*};
}

vec_affine! {
    Wide4: u16, 1, [0], "wide-4", 104;
    Wide8: u32, 1, [0], "wide-8", 108;
    Wide12: u32, 2, [0 1], "wide-12", 112;
    Wide16: u32, 3, [0 1 2], "wide-16", 116;
    Wide24: u32, 5, [0 1 2 3 4], "wide-24", 124;
    Wide32: u32, 7, [0 1 2 3 4 5 6], "wide-32", 132;
    Wide48: u32, 11, [0 1 2 3 4 5 6 7 8 9 10], "wide-48", 148;
    Wide64: u32, 15, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14], "wide-64", 164;
    Wide72: u32, 17, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16], "wide-72", 172;
    Wide96: u32, 23, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22], "wide-96", 196;
    Wide128: u32, 31, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30], "wide-128", 228;
    Wide28: u32, 6, [0 1 2 3 4 5], "wide-28", 128;
    Wide40: u32, 9, [0 1 2 3 4 5 6 7 8], "wide-40", 140;
    Wide56: u32, 13, [0 1 2 3 4 5 6 7 8 9 10 11 12], "wide-56", 156;
    Wide80: u32, 19, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18], "wide-80", 180;
    Wide88: u32, 21, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20], "wide-88", 188;
    Wide104: u32, 25, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24], "wide-104", 204;
    Wide108: u32, 26, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25], "wide-108", 208;
    Bytes41: u8, 40, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39], "bytes-41", 441;
    Half122: u16, 60, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59], "half-122", 522;
    Half172: u16, 85, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84], "half-172", 572;
    Bytes109: u8, 108, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107], "bytes-109", 509;
    Wide256: u32, 63, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62], "wide-256", 356;
}

const _: () = {
    assert!(std::mem::size_of::<Wide4>() == 4);
    assert!(std::mem::size_of::<Wide12>() == 12);
    assert!(std::mem::size_of::<Wide72>() == 72);
    assert!(std::mem::size_of::<Wide256>() == 256);
    assert!(std::mem::size_of::<Bytes41>() == 41);
    assert!(std::mem::size_of::<Half122>() == 122);
    assert!(std::mem::size_of::<Bytes109>() == 109);
    assert!(std::mem::size_of::<Half172>() == 172);
};

/// `Bytes41` as it comes (a load stage from the element to itself) and its
/// lane 3 (a store stage), for the tests of scans through stages of an
/// element the kernels hold packed (`tests/gpu_stages.rs`).
#[scan_map(input = Bytes41, output = Bytes41, map = |m| Bytes41 { a: m.a, b: m.b })]
pub struct Bytes41Again;

/// Lane 3 of a `Bytes41`'s `b`.
#[scan_map(input = Bytes41, output = u8, map = |m| m.b[3])]
pub struct Bytes41Lane;
