//! The segment-starts kernels of [`SEGMENT_FLAGS_SOURCE`](crate::SEGMENT_FLAGS_SOURCE):
//! every segment's first element, in order, and the number of segments,
//! found on the device from head flags or keys, whose count the host does
//! not know. A scan's per-segment totals over such segments read their
//! windows off these starts as off CSR offsets.
//!
//! Three launches over chunks of [`STARTS_CHUNK_ITEMS`] elements:
//! [`count_heads_symbol`] (a block of [`STARTS_BLOCK_THREADS`] a chunk),
//! [`RANK_HEAD_CHUNKS_SYMBOL`] (one block of [`RANK_BLOCK_THREADS`]) and
//! [`write_starts_symbol`].
//!
//! ```
//! use kernels_gen::segment_starts::{count_heads_symbol, starts_chunks, HeadsIn};
//! use kernels_gen::FlagFormat;
//!
//! assert_eq!(count_heads_symbol(HeadsIn::Flags(FlagFormat::Bits)), "scan_count_heads_bits");
//! assert_eq!(count_heads_symbol(HeadsIn::Keys { key_bits: 16 }), "scan_count_heads_keys16");
//! assert_eq!(starts_chunks(4097), 2);
//! ```

use crate::FlagFormat;

/// Elements per chunk of the segment-starts kernels (`SCAN_STARTS_CHUNK`).
pub const STARTS_CHUNK_ITEMS: usize = 4096;

/// Threads per block of [`count_heads_symbol`] and [`write_starts_symbol`]
/// (`SCAN_STARTS_THREADS`, their launch bounds).
pub const STARTS_BLOCK_THREADS: u32 = 256;

/// Threads of the one block of [`RANK_HEAD_CHUNKS_SYMBOL`]
/// (`SCAN_RANK_THREADS`, its launch bounds).
pub const RANK_BLOCK_THREADS: u32 = 1024;

/// `(u64* chunk_counts, u64 chunks, u64 n, u64* starts, u64 capacity, u64*
/// count)`: the chunks' head counts scanned in place into each chunk's
/// first rank, by one block; `*count` receives the number of segments and,
/// where it is at most `capacity`, `starts[count] = n`.
pub const RANK_HEAD_CHUNKS_SYMBOL: &str = "scan_rank_head_chunks";

/// `(u64* slot, u64 value)`: stores a count the host knows in stream
/// order (one thread).
pub const STORE_COUNT_SYMBOL: &str = "scan_store_count";

/// Where the heads come from: head flags in a format, or keys of
/// `key_bits` bits (8, 16, 32 or 64; element `i > 0` starts a segment
/// where its key differs bit for bit from the one before).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeadsIn {
    /// Head flags.
    Flags(FlagFormat),
    /// Keys of this many bits.
    Keys {
        /// 8, 16, 32 or 64.
        key_bits: u32,
    },
}

impl HeadsIn {
    /// Every source the program has kernels for.
    pub const ALL: [HeadsIn; 6] = [
        HeadsIn::Flags(FlagFormat::Bytes),
        HeadsIn::Flags(FlagFormat::Bits),
        HeadsIn::Keys { key_bits: 8 },
        HeadsIn::Keys { key_bits: 16 },
        HeadsIn::Keys { key_bits: 32 },
        HeadsIn::Keys { key_bits: 64 },
    ];

    fn suffix(self) -> String {
        match self {
            HeadsIn::Flags(format) => format.suffix().to_string(),
            HeadsIn::Keys { key_bits } => format!("keys{key_bits}"),
        }
    }
}

/// `(const void* heads, u64 n, u64* chunk_counts)`: the heads in each of
/// [`starts_chunks`]`(n)` chunks (element 0 always one).
pub fn count_heads_symbol(heads: HeadsIn) -> String {
    format!("scan_count_heads_{}", heads.suffix())
}

/// `(const void* heads, u64 n, const u64* chunk_ranks, u64* starts, u64
/// capacity)`: `starts[rank] = i` for the head at element `i` of rank
/// `rank` (its segment's number), where `rank <= capacity`.
pub fn write_starts_symbol(heads: HeadsIn) -> String {
    format!("scan_write_starts_{}", heads.suffix())
}

/// Chunks of the segment-starts kernels for `n` elements.
pub const fn starts_chunks(n: usize) -> usize {
    n.div_ceil(STARTS_CHUNK_ITEMS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SEGMENT_FLAGS_SOURCE;

    fn define(name: &str) -> String {
        let prefix = format!("#define {name} ");
        SEGMENT_FLAGS_SOURCE
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no #define {name}"))
            .trim()
            .to_string()
    }

    #[test]
    fn the_constants_are_the_sources() {
        let threads: u32 = define("SCAN_STARTS_THREADS").parse().unwrap();
        let rows: usize = define("SCAN_STARTS_ROWS").parse().unwrap();
        assert_eq!(threads, STARTS_BLOCK_THREADS);
        assert_eq!(rows * threads as usize, STARTS_CHUNK_ITEMS);
        assert_eq!(
            define("SCAN_RANK_THREADS").parse::<u32>().unwrap(),
            RANK_BLOCK_THREADS
        );
    }

    #[test]
    fn every_symbol_is_exported() {
        let symbols = HeadsIn::ALL
            .into_iter()
            .flat_map(|h| [count_heads_symbol(h), write_starts_symbol(h)])
            .chain([RANK_HEAD_CHUNKS_SYMBOL, STORE_COUNT_SYMBOL].map(String::from));
        for symbol in symbols {
            let (name, suffix) = match symbol.strip_prefix("scan_count_heads_") {
                Some(s) => ("scan_count_heads_##NAME", s),
                None => match symbol.strip_prefix("scan_write_starts_") {
                    Some(s) => ("scan_write_starts_##NAME", s),
                    None => (symbol.as_str(), ""),
                },
            };
            assert!(SEGMENT_FLAGS_SOURCE.contains(name), "{symbol}");
            if !suffix.is_empty() {
                let instance = format!("SCAN_STARTS_KERNELS({suffix},");
                assert!(SEGMENT_FLAGS_SOURCE.contains(&instance), "{symbol}");
            }
        }
    }
}
