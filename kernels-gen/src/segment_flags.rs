//! The segment-flags program: the operator-independent kernels that check
//! and index segment offsets, turn offsets or keys into head flags, find
//! segment starts and store counts. Their parameters are declared here
//! once, as the scans' are in [`crate::abi`]: the program's `extern "C"`
//! wrappers are printed from [`FlagsKernel::params`], and the runtime
//! checks every launch's arguments against the same list.
//!
//! ```
//! use kernels_gen::abi::ParamType;
//! use kernels_gen::segment_flags::{segment_flags_program, FlagsKernel};
//! use kernels_gen::FlagFormat;
//!
//! let kernel = FlagsKernel::HeadsFromOffsets { offset_bits: 32, format: FlagFormat::Bits };
//! assert_eq!(kernel.symbol(), "scan_heads_from_offsets32_bits");
//! let names: Vec<_> = kernel.params().map(|p| p.name).collect();
//! assert_eq!(names, ["offsets", "count", "words", "n"]);
//! assert_eq!(kernel.params().next().unwrap().ty, ParamType::UnsignedIn(32));
//! assert!(segment_flags_program().contains("void scan_heads_from_offsets32_bits("));
//! assert_eq!(FlagsKernel::all().count(), 33);
//! ```

use crate::abi::{Param, ParamType};
use crate::kernel_kinds::FlagFormatNames;
use crate::segment_starts::HeadsIn;
use crate::FlagFormat;
use std::fmt::Write;

/// The templates the kernels instantiate (`segment_flags.cuh`).
const LIBRARY: &str = include_str!("templates/segment_flags.cuh");

/// One kernel of the segment-flags program. Every kernel walks its input
/// with a grid-stride loop (any grid is correct) but
/// [`FlagsKernel::FindStarts`], which takes one block per chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlagsKernel {
    /// `offsets`, `count`, then `flags` (bytes) or `words` (bits), `n`:
    /// marks a head at every offset below `n` and at element 0, in zeroed
    /// flags.
    HeadsFromOffsets {
        /// 32 or 64.
        offset_bits: u32,
        /// How the flags are written.
        format: FlagFormat,
    },
    /// `offsets`, `count`, `n`, `first_bad`: the smallest index of an
    /// offset past `n` or smaller than the one before it (`first_bad` is
    /// `u64::MAX` on entry).
    CheckOffsets {
        /// 32 or 64.
        offset_bits: u32,
    },
    /// `offsets`, `count`, `n`, `shift`, `index`: writes
    /// [`crate::offsets_index_len`]`(n)` entries of `entry_bits` bits,
    /// entry `j` the first `r` with `offsets[r] >= j << shift` (`count`
    /// where none is).
    IndexOffsets {
        /// 32 or 64.
        offset_bits: u32,
        /// 32 where the offsets' count fits, else 64.
        entry_bits: u32,
    },
    /// `keys`, then `flags` or `words`, `n`: a head where a key differs
    /// bit for bit from the one before, and at element 0.
    HeadsFromKeys {
        /// 8, 16, 32 or 64.
        key_bits: u32,
        /// How the flags are written.
        format: FlagFormat,
    },
    /// `heads`, `n`, `status`, `starts`, `capacity`, `count`: every
    /// segment's first element in order and the number of segments
    /// ([`crate::segment_starts`]).
    FindStarts(HeadsIn),
    /// `slot`, `value`: stores a count the host knows, in stream order.
    StoreCount,
    /// `heads`, `n`, `edges`: where a shard of a sequence split across
    /// ranks has heads besides element 0 (the first and last such element,
    /// into `edges[0]` by `atomicMin` and `edges[1]` by `atomicMax`), and
    /// its ends (element 0's own flag, or the first and last keys' bits,
    /// into `edges[2..4]`). The host sets `edges` to `[u64::MAX, 0, 0, 0]`
    /// first; `n > 0`.
    FindEdges(HeadsIn),
    /// `offsets`, `count`, `n`, `edges`: [`FlagsKernel::FindEdges`] over
    /// offsets, with `edges[2]` the number of offsets equal to 0 and
    /// `edges[3]` the number below `n`.
    OffsetEdges {
        /// 32 or 64.
        offset_bits: u32,
    },
}

use ParamType::{Count, HeadFlags, UnsignedIn, UnsignedOut};

/// `UnsignedIn(0)` / `UnsignedOut(0)` in these lists stand for the
/// kernel's own width ([`FlagsKernel::width`]).
const OFFSET_HEADS: &[Param] = &[
    param("offsets", UnsignedIn(0)),
    param("count", Count),
    param("flags", UnsignedOut(8)),
    param("n", Count),
];
const CHECK_OFFSETS: &[Param] = &[
    param("offsets", UnsignedIn(0)),
    param("count", Count),
    param("n", Count),
    param("first_bad", UnsignedOut(64)),
];
const INDEX_OFFSETS: &[Param] = &[
    param("offsets", UnsignedIn(0)),
    param("count", Count),
    param("n", Count),
    param("shift", Count),
    param("index", UnsignedOut(0)),
];
const KEY_HEADS: &[Param] = &[
    param("keys", UnsignedIn(0)),
    param("flags", UnsignedOut(8)),
    param("n", Count),
];
const FIND_STARTS: &[Param] = &[
    param("heads", HeadFlags),
    param("n", Count),
    param("status", UnsignedOut(64)),
    param("starts", UnsignedOut(64)),
    param("capacity", Count),
    param("count", UnsignedOut(64)),
];
const STORE_COUNT: &[Param] = &[param("slot", UnsignedOut(64)), param("value", Count)];
const FIND_EDGES: &[Param] = &[
    param("heads", HeadFlags),
    param("n", Count),
    param("edges", UnsignedOut(64)),
];
const OFFSET_EDGES: &[Param] = &[
    param("offsets", UnsignedIn(0)),
    param("count", Count),
    param("n", Count),
    param("edges", UnsignedOut(64)),
];

const fn param(name: &'static str, ty: ParamType) -> Param {
    Param { name, ty }
}

impl FlagsKernel {
    /// Every kernel of the program.
    pub fn all() -> impl Iterator<Item = FlagsKernel> {
        let formats = [FlagFormat::Bytes, FlagFormat::Bits];
        let offsets = [32, 64].into_iter().flat_map(move |offset_bits| {
            formats
                .map(|format| FlagsKernel::HeadsFromOffsets {
                    offset_bits,
                    format,
                })
                .into_iter()
                .chain([FlagsKernel::CheckOffsets { offset_bits }])
                .chain([32, 64].map(|entry_bits| FlagsKernel::IndexOffsets {
                    offset_bits,
                    entry_bits,
                }))
        });
        let keys = [8, 16, 32, 64].into_iter().flat_map(move |key_bits| {
            formats.map(|format| FlagsKernel::HeadsFromKeys { key_bits, format })
        });
        offsets
            .chain(keys)
            .chain(HeadsIn::ALL.map(FlagsKernel::FindStarts))
            .chain([FlagsKernel::StoreCount])
            .chain(HeadsIn::ALL.map(FlagsKernel::FindEdges))
            .chain([32, 64].map(|offset_bits| FlagsKernel::OffsetEdges { offset_bits }))
    }

    /// The exported symbol.
    pub fn symbol(self) -> String {
        match self {
            FlagsKernel::HeadsFromOffsets {
                offset_bits,
                format,
            } => format!("scan_heads_from_offsets{offset_bits}_{}", format.suffix()),
            FlagsKernel::CheckOffsets { offset_bits } => format!("scan_check_offsets{offset_bits}"),
            FlagsKernel::IndexOffsets {
                offset_bits,
                entry_bits,
            } => format!("scan_index_offsets{offset_bits}_{entry_bits}"),
            FlagsKernel::HeadsFromKeys { key_bits, format } => {
                format!("scan_heads_from_keys{key_bits}_{}", format.suffix())
            }
            FlagsKernel::FindStarts(heads) => format!("scan_find_starts_{}", heads.suffix()),
            FlagsKernel::StoreCount => "scan_store_count".to_string(),
            FlagsKernel::FindEdges(heads) => format!("scan_find_edges_{}", heads.suffix()),
            FlagsKernel::OffsetEdges { offset_bits } => format!("scan_offset_edges{offset_bits}"),
        }
    }

    /// The width in bits of the kernel's offsets or keys in, or index
    /// entries out (the lists' `UnsignedIn(0)` and `UnsignedOut(0)`).
    fn width(self) -> (u32, u32) {
        match self {
            FlagsKernel::HeadsFromOffsets { offset_bits, .. }
            | FlagsKernel::CheckOffsets { offset_bits }
            | FlagsKernel::OffsetEdges { offset_bits } => (offset_bits, 0),
            FlagsKernel::IndexOffsets {
                offset_bits,
                entry_bits,
            } => (offset_bits, entry_bits),
            FlagsKernel::HeadsFromKeys { key_bits, .. } => (key_bits, 0),
            FlagsKernel::FindStarts(_) | FlagsKernel::StoreCount | FlagsKernel::FindEdges(_) => {
                (0, 0)
            }
        }
    }

    /// The kernel's parameters, in order.
    pub fn params(self) -> impl ExactSizeIterator<Item = Param> {
        let list = match self {
            FlagsKernel::HeadsFromOffsets { .. } => OFFSET_HEADS,
            FlagsKernel::CheckOffsets { .. } => CHECK_OFFSETS,
            FlagsKernel::IndexOffsets { .. } => INDEX_OFFSETS,
            FlagsKernel::HeadsFromKeys { .. } => KEY_HEADS,
            FlagsKernel::FindStarts(_) => FIND_STARTS,
            FlagsKernel::StoreCount => STORE_COUNT,
            FlagsKernel::FindEdges(_) => FIND_EDGES,
            FlagsKernel::OffsetEdges { .. } => OFFSET_EDGES,
        };
        let (width_in, width_out) = self.width();
        let bits = match self {
            FlagsKernel::HeadsFromOffsets { format, .. }
            | FlagsKernel::HeadsFromKeys { format, .. } => Some(format),
            _ => None,
        };
        list.iter().map(move |&p| match (p.ty, bits) {
            (UnsignedIn(0), _) => param(p.name, UnsignedIn(width_in)),
            (UnsignedOut(0), _) => param(p.name, UnsignedOut(width_out)),
            // Flags as bits are 32-bit words.
            (UnsignedOut(8), Some(FlagFormat::Bits)) => param("words", UnsignedOut(32)),
            _ => p,
        })
    }

    /// The template the wrapper calls, its launch bounds, and how its
    /// first argument is passed (`heads` becomes the runs it reads).
    fn call(self) -> (String, &'static str, Option<String>) {
        let suffix = |format: FlagFormat| format.suffix();
        match self {
            FlagsKernel::HeadsFromOffsets { format, .. } => (
                format!("scan_heads_from_offsets_{}", suffix(format)),
                "",
                None,
            ),
            FlagsKernel::CheckOffsets { .. } => ("scan_check_offsets".into(), "", None),
            FlagsKernel::IndexOffsets { .. } => ("scan_index_offsets".into(), "", None),
            FlagsKernel::HeadsFromKeys { format, .. } => {
                (format!("scan_heads_from_keys_{}", suffix(format)), "", None)
            }
            FlagsKernel::FindStarts(heads) => (
                "find_starts".into(),
                "__launch_bounds__(SCAN_STARTS_THREADS) ",
                Some(heads.runs()),
            ),
            FlagsKernel::StoreCount => ("scan_store_count_at".into(), "", None),
            FlagsKernel::FindEdges(heads) => ("find_edges".into(), "", Some(heads.runs())),
            FlagsKernel::OffsetEdges { .. } => ("scan_offset_edges".into(), "", None),
        }
    }

    /// The kernel's `extern "C"` wrapper.
    pub fn wrapper(self) -> String {
        let params: Vec<String> = self
            .params()
            .map(|p| format!("{} {}", p.ty.cuda_type(""), p.name))
            .collect();
        let (template, bounds, first) = self.call();
        let args: Vec<String> = self
            .params()
            .enumerate()
            .map(|(i, p)| match (&first, i) {
                (Some(runs), 0) => runs.clone(),
                _ => p.name.to_string(),
            })
            .collect();
        format!(
            "extern \"C\" __global__ void {bounds}{}({}) {{\n  {template}({});\n}}\n",
            self.symbol(),
            params.join(", "),
            args.join(", ")
        )
    }
}

impl HeadsIn {
    /// The CUDA runs (`byte_runs`, `bit_runs`, `key_runs<K>`) over the
    /// kernel's `heads` argument.
    fn runs(self) -> String {
        match self {
            HeadsIn::Flags(FlagFormat::Bytes) => "byte_runs{(const unsigned char*)heads}".into(),
            HeadsIn::Flags(FlagFormat::Bits) => "bit_runs{(const unsigned*)heads}".into(),
            HeadsIn::Keys { key_bits } => {
                let key = ParamType::unsigned_name(key_bits);
                format!("key_runs<{key}>{{(const {key}*)heads}}")
            }
        }
    }
}

/// The whole program: the templates, then every kernel's wrapper.
pub fn segment_flags_program() -> String {
    let mut out = String::from(LIBRARY);
    let _ = writeln!(
        out,
        "\n// Kernels (kernels_gen::segment_flags::FlagsKernel)."
    );
    for kernel in FlagsKernel::all() {
        out.push_str(&kernel.wrapper());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_kernel_has_its_own_symbol_and_wrapper() {
        let symbols: HashSet<String> = FlagsKernel::all().map(FlagsKernel::symbol).collect();
        assert_eq!(symbols.len(), 33);
        let program = segment_flags_program();
        for kernel in FlagsKernel::all() {
            let declared = format!(" {}(", kernel.symbol());
            assert_eq!(program.matches(&declared).count(), 1, "{declared}");
        }
    }

    #[test]
    fn widths_reach_the_parameter_types() {
        let index = FlagsKernel::IndexOffsets {
            offset_bits: 64,
            entry_bits: 32,
        };
        let wrapper = index.wrapper();
        assert!(
            wrapper.contains("(const unsigned long long* offsets, unsigned long long count, unsigned long long n, unsigned long long shift, unsigned* index)"),
            "{wrapper}"
        );
        let keys = FlagsKernel::HeadsFromKeys {
            key_bits: 8,
            format: FlagFormat::Bytes,
        };
        assert!(keys
            .wrapper()
            .contains("(const unsigned char* keys, unsigned char* flags, unsigned long long n)"));
        let starts = FlagsKernel::FindStarts(HeadsIn::Keys { key_bits: 16 }).wrapper();
        assert!(starts.contains("find_starts(key_runs<unsigned short>{(const unsigned short*)heads}, n, status, starts, capacity, count);"), "{starts}");
    }
}
