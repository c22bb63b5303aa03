//! The benchmarks' random numbers: splitmix64 of an index, so that a
//! comparator in CUDA (`cub/*_bench.cu`) draws the same inputs.

/// splitmix64 of `i`.
pub fn bits(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
