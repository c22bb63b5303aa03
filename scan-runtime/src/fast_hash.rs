//! A small, fast hasher for the maps a scan consults on every call (its
//! loaded kernels, its workspaces per stream): their keys are a few machine
//! words chosen by the library, not by an adversary, so the default
//! SipHash's protection against crafted collisions buys nothing there and
//! costs tens of nanoseconds a lookup. The multiply-rotate mix of rustc's
//! `FxHasher`, with its final rotation.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FxHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// rustc's Fx hash: each word rotated into the state and multiplied.
#[derive(Clone, Copy, Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.add(b as u64);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        // The product's low bits follow the key's low bits, which are zero
        // for aligned addresses (a stream's handle); the table indexes by
        // the low bits, so bring the well-mixed high ones down.
        self.hash.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gen::abi::KernelAbi;

    #[test]
    fn every_kernel_is_found_under_its_own_key() {
        let mut map: FastMap<KernelAbi, usize> = FastMap::default();
        let all: Vec<KernelAbi> = KernelAbi::all().collect();
        for (i, abi) in all.iter().enumerate() {
            map.insert(*abi, i);
        }
        assert_eq!(map.len(), all.len());
        for (i, abi) in all.iter().enumerate() {
            assert_eq!(map[abi], i);
        }
    }

    #[test]
    fn aligned_addresses_spread_over_the_low_bits() {
        let low = |key: usize| {
            let mut h = FxHasher::default();
            h.write_usize(key);
            h.finish() & 0xff
        };
        let buckets: std::collections::HashSet<u64> =
            (1..=64usize).map(|i| low(i * 0x1_0000)).collect();
        assert!(buckets.len() > 32, "{} of 64", buckets.len());
    }
}
