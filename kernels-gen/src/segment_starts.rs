//! The segment-starts kernels of the segment-flags program
//! ([`FlagsKernel::FindStarts`]):
//! every segment's first element, in order, and the number of segments,
//! found on the device from head flags or keys, whose count the host does
//! not know. A scan's per-segment totals over such segments read their
//! windows off these starts as off CSR offsets.
//!
//! One launch of [`FlagsKernel::FindStarts`], a block of [`STARTS_BLOCK_THREADS`]
//! per chunk of [`STARTS_CHUNK_ITEMS`] elements, after the host zeroes its
//! [`starts_status_words`] words of status (a compaction with decoupled
//! look-back, reading the heads once).
//!
//! ```
//! use kernels_gen::segment_flags::FlagsKernel;
//! use kernels_gen::segment_starts::{starts_chunks, HeadsIn};
//! use kernels_gen::FlagFormat;
//!
//! let bits = FlagsKernel::FindStarts(HeadsIn::Flags(FlagFormat::Bits));
//! assert_eq!(bits.symbol(), "scan_find_starts_bits");
//! let keys = FlagsKernel::FindStarts(HeadsIn::Keys { key_bits: 16 });
//! assert_eq!(keys.symbol(), "scan_find_starts_keys16");
//! assert_eq!(starts_chunks(4097), 2);
//! ```

use crate::kernel_kinds::FlagFormatNames;
#[cfg(doc)]
use crate::segment_flags::FlagsKernel;
use crate::FlagFormat;

/// Elements per chunk of [`FlagsKernel::FindStarts`] (`SCAN_STARTS_CHUNK`).
pub const STARTS_CHUNK_ITEMS: usize = 4096;

/// Threads per block of [`FlagsKernel::FindStarts`] (`SCAN_STARTS_THREADS`,
/// its launch bounds).
pub const STARTS_BLOCK_THREADS: u32 = 256;

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

    pub(crate) fn suffix(self) -> String {
        match self {
            HeadsIn::Flags(format) => format.suffix().to_string(),
            HeadsIn::Keys { key_bits } => format!("keys{key_bits}"),
        }
    }
}

/// Words of status [`FlagsKernel::FindStarts`] takes for `n` elements: one per
/// chunk, and the chunks' ticket counter.
pub const fn starts_status_words(n: usize) -> usize {
    starts_chunks(n) + 1
}

/// Words of scratch the segment starts of `n` elements take for a totals
/// slot of `capacity`: the [`starts_status_words`], then `capacity + 1`
/// starts (the last one closes segment `capacity - 1`).
pub const fn starts_scratch_words(n: usize, capacity: usize) -> usize {
    starts_status_words(n) + capacity + 1
}

/// Chunks of [`FlagsKernel::FindStarts`] for `n` elements.
pub const fn starts_chunks(n: usize) -> usize {
    n.div_ceil(STARTS_CHUNK_ITEMS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment_flags::segment_flags_program;

    fn define(name: &str) -> String {
        let prefix = format!("#define {name} ");
        segment_flags_program()
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no #define {name}"))
            .trim()
            .to_string()
    }

    #[test]
    fn the_constants_are_the_sources() {
        let threads: u32 = define("SCAN_STARTS_THREADS").parse().unwrap();
        let run: usize = define("SCAN_STARTS_RUN").parse().unwrap();
        assert_eq!(threads, STARTS_BLOCK_THREADS);
        assert_eq!(run * threads as usize, STARTS_CHUNK_ITEMS);
    }
}
