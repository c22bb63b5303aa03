//! Radix sort kernels (issue 48): least significant digit first, eight bits
//! a pass, one pass over the keys per digit (`templates/radix_sort.cuh`).
//! A program holds a sort's kernels for one key type and one value type
//! (or none); its wrappers' parameters are written here once
//! ([`SortKernel::params`]) and the runtime passes them in that order.
//!
//! ```
//! use kernels_gen::radix_sort::{sort_program, RadixKind, SortKernel, SortKeyType, SortShape};
//!
//! let key = SortKeyType { cuda_type: "unsigned int", kind: RadixKind::Unsigned, size: 4 };
//! let cuda = sort_program(&key, None, SortShape::default_for(&key, 0, kernels_gen::Arch::SM_90));
//! assert!(cuda.contains(&format!(" {}(", SortKernel::Onesweep.symbol(&key, None))));
//! ```

use crate::{Arch, LIBRARY, PRELUDE};
use std::fmt::Write;

/// How a key's bits order it ([`SortKeyType::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RadixKind {
    /// An unsigned integer: its bits.
    Unsigned,
    /// A signed integer: its sign bit flipped.
    Signed,
    /// A float: CUB's order (`scan_core::sort`).
    Float,
}

impl RadixKind {
    fn cuda_name(self) -> &'static str {
        match self {
            RadixKind::Unsigned => "gpu_scan::radix_unsigned",
            RadixKind::Signed => "gpu_scan::radix_signed",
            RadixKind::Float => "gpu_scan::radix_float",
        }
    }
}

/// The keys a program sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SortKeyType {
    /// Their CUDA type (`ScanElement::CUDA_TYPE`).
    pub cuda_type: &'static str,
    /// How their bits order them.
    pub kind: RadixKind,
    /// Their bytes: 1, 2, 4 or 8.
    pub size: usize,
}

/// The values a program carries along with the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SortValueType {
    /// Their CUDA type (`ScanElement::CUDA_TYPE`).
    pub cuda_type: &'static str,
    /// Its declarations (`ScanElement::CUDA_DECL`).
    pub declarations: &'static str,
    /// Their bytes.
    pub size: usize,
}

/// The kernels of a sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortKernel {
    /// Every pass's digit counts from one read of the keys (a grid-stride
    /// loop of [`SORT_BLOCK_THREADS`]-thread blocks).
    Histograms,
    /// Each pass's counts into its digits' starts: one block of 256
    /// threads a pass.
    Offsets,
    /// One pass: every key (and value) to its place for one digit; one
    /// block a tile of [`SortShape::tile_items`] keys.
    Onesweep,
    /// `out[i] = i`, the `u64` indices an argsort carries (grid-stride).
    Iota,
}

/// Threads of a block of [`SortKernel::Histograms`], [`SortKernel::Iota`].
pub const SORT_BLOCK_THREADS: usize = 256;

/// Threads of a block of [`SortKernel::Offsets`] (a digit each).
pub const SORT_DIGITS: usize = 256;

/// The most passes a sort takes (64-bit keys, eight bits a pass).
pub const SORT_MOST_PASSES: usize = 8;

/// The most bytes of a [`SortKernel::Onesweep`] tile staged in shared
/// memory: its keys, then its values where they fit (larger values are
/// stored where they go directly).
pub const SORT_STAGE_BYTES: usize = 32 * 1024;

/// Keys each thread of [`SortKernel::Histograms`] has in flight.
pub const SORT_HISTOGRAM_KEYS: usize = 4;

/// The static shared memory a kernel may declare.
const STATIC_SHARED_BYTES: usize = 48 * 1024;

/// How a warp of [`SortKernel::Onesweep`] finds, for each of its keys,
/// the lanes whose key has the same digit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortRank {
    /// Eight warp ballots, one a digit bit (CUB's `MatchAny`).
    Ballots,
    /// Each lane's bit or-ed into a shared word per digit and read back:
    /// one shared atomic a key instead of eight ballots.
    AtomicOr,
}

impl SortRank {
    fn cuda_name(self) -> &'static str {
        match self {
            SortRank::Ballots => "gpu_scan::radix_rank_ballots",
            SortRank::AtomicOr => "gpu_scan::radix_rank_atomic_or",
        }
    }
}

/// The tile of [`SortKernel::Onesweep`]: threads (at least 256, one per
/// digit), keys per thread, the blocks per SM its launch bounds ask
/// for (which caps its registers; 1 leaves them to ptxas), and how its
/// warps rank their keys.
/// [`SortShape::default_for`] is the default; the runtime takes another
/// for tuning ([`SortShape::check`] says which fit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SortShape {
    /// Threads per block, a multiple of 32, 256 to 1024.
    pub threads: usize,
    /// Keys per thread, 1 to 64.
    pub items: usize,
    /// The launch bounds' minimum blocks per SM.
    pub min_blocks: usize,
    /// How a warp ranks its keys.
    pub rank: SortRank,
}

impl SortShape {
    /// The shape for keys `key` carrying values of `value_size` bytes (0:
    /// none) on `arch`, among the shapes that compile without spilling
    /// there: 256 threads; 16 keys a thread up to 4 bytes (20 for `u32`
    /// keys alone before sm_100), 12 for 8 bytes (10
    /// with values of 8 bytes or more); registers capped for 3 blocks an
    /// SM (2 on sm_100 and newer, whose ptxas spilled at 3). From the sweep
    /// on the H200 (`SORT_BENCH_SWEEP`, BENCHMARKS.md): capped registers
    /// paid most (2^28 `u32` keys: 11.6 ms uncapped, 9.4 ms at 3 blocks),
    /// then 20 keys a thread (8.6 ms), which spill on the other key types
    /// and measured slower for `u32` pairs (17.5 ms against 14.5 at 16).
    pub const fn default_for(key: &SortKeyType, value_size: usize, arch: Arch) -> SortShape {
        let u32_keys = key.size == 4 && matches!(key.kind, RadixKind::Unsigned);
        let items = if u32_keys && value_size == 0 && arch.major < 10 {
            20
        } else if key.size <= 4 {
            16
        } else if value_size >= 8 {
            10
        } else {
            12
        };
        SortShape {
            threads: 256,
            items,
            min_blocks: if arch.major >= 10 { 2 } else { 3 },
            rank: SortRank::Ballots,
        }
    }

    /// Keys per tile.
    pub const fn tile_items(&self) -> usize {
        self.threads * self.items
    }

    /// Whether values of `value_size` bytes go through the staging buffer.
    pub const fn stages_values(&self, value_size: usize) -> bool {
        value_size > 0 && self.tile_items() * value_size <= SORT_STAGE_BYTES
    }

    /// The onesweep kernel's static shared memory, as the template declares
    /// it: the staging buffer (which holds the atomic-or ranking's word per
    /// warp and digit before the tile is staged), a count per warp and
    /// digit, a 64-bit shift per digit, a total per 32 digits and the
    /// tile's number.
    pub const fn shared_bytes(&self, key_size: usize, value_size: usize) -> usize {
        let keys = self.tile_items() * key_size;
        let values = if self.stages_values(value_size) {
            self.tile_items() * value_size
        } else {
            0
        };
        let warp_digits = (self.threads / 32) * SORT_DIGITS * 4;
        let masks = match self.rank {
            SortRank::Ballots => 0,
            SortRank::AtomicOr => warp_digits,
        };
        let staged = if keys > values { keys } else { values };
        let stage = if staged > masks { staged } else { masks };
        stage + warp_digits + SORT_DIGITS * 8 + SORT_DIGITS / 32 * 4 + 4
    }

    /// Whether the shape can sort keys of `key_size` bytes carrying values
    /// of `value_size` (0: none), and why not.
    pub fn check(&self, key_size: usize, value_size: usize) -> Result<(), String> {
        if self.threads % 32 != 0 || !(SORT_DIGITS..=1024).contains(&self.threads) {
            return Err(format!(
                "{} threads: a multiple of 32 from {SORT_DIGITS} to 1024",
                self.threads
            ));
        }
        if !(1..=64).contains(&self.items) || !(1..=32).contains(&self.min_blocks) {
            return Err(format!(
                "{} items, {} blocks per SM: 1 to 64 items, 1 to 32 blocks",
                self.items, self.min_blocks
            ));
        }
        if self.tile_items() * key_size > SORT_STAGE_BYTES {
            return Err(format!(
                "{} keys of {key_size} bytes a tile: more than the {SORT_STAGE_BYTES} staged bytes",
                self.tile_items()
            ));
        }
        let shared = self.shared_bytes(key_size, value_size);
        if shared > STATIC_SHARED_BYTES {
            return Err(format!(
                "{shared} bytes of shared memory: more than {STATIC_SHARED_BYTES}"
            ));
        }
        Ok(())
    }
}

impl SortKernel {
    /// Every kernel of a program.
    pub const ALL: [SortKernel; 4] = [
        SortKernel::Histograms,
        SortKernel::Offsets,
        SortKernel::Onesweep,
        SortKernel::Iota,
    ];

    fn suffix(self) -> &'static str {
        match self {
            SortKernel::Histograms => "histograms",
            SortKernel::Offsets => "offsets",
            SortKernel::Onesweep => "onesweep",
            SortKernel::Iota => "iota",
        }
    }

    /// The exported symbol for keys `key` (and values `value`).
    pub fn symbol(self, key: &SortKeyType, value: Option<&SortValueType>) -> String {
        let name = |t: &str| t.replace(' ', "_");
        let values = value.map_or("keys".to_string(), |v| {
            format!("pairs_{}", name(v.cuda_type))
        });
        format!(
            "gpu_scan_sort_{}_{values}_{}",
            name(key.cuda_type),
            self.suffix()
        )
    }

    /// The wrapper's parameters, in order: `(CUDA type, name)`, with `K` the
    /// key type and `V` the values'.
    pub fn params(self) -> &'static [(&'static str, &'static str)] {
        match self {
            SortKernel::Histograms => &[
                ("const K*", "keys"),
                ("unsigned long long", "n"),
                ("unsigned", "begin_bit"),
                ("unsigned", "end_bit"),
                ("int", "descending"),
                ("unsigned long long*", "counts"),
            ],
            SortKernel::Offsets => &[("unsigned long long*", "counts")],
            SortKernel::Onesweep => &[
                ("const K*", "keys_in"),
                ("K*", "keys_out"),
                ("const V*", "values_in"),
                ("V*", "values_out"),
                ("unsigned long long", "n"),
                ("unsigned", "shift"),
                ("unsigned", "width"),
                ("int", "descending"),
                ("const unsigned long long*", "offsets"),
                ("unsigned long long*", "status"),
                ("unsigned*", "tile_counter"),
            ],
            SortKernel::Iota => &[("unsigned long long*", "out"), ("unsigned long long", "n")],
        }
    }
}

/// The program of a sort of keys `key` (carrying values `value`) in tiles
/// of `shape`: the [`PRELUDE`], the [`LIBRARY`], the radix sort template,
/// the value's declarations, and a wrapper for every [`SortKernel`].
pub fn sort_program(key: &SortKeyType, value: Option<&SortValueType>, shape: SortShape) -> String {
    let mut out = radix_library();

    let (value_type, has_values) = match value {
        Some(v) => {
            out.push_str(v.declarations);
            (v.cuda_type, true)
        }
        None => ("unsigned char", false),
    };
    let _ = writeln!(
        out,
        "\n// Kernels (kernels_gen::radix_sort).\ntypedef {} sort_key_t;\ntypedef {value_type} sort_value_t;\n\
         static_assert(sizeof(sort_key_t) == {}, \"the key's size, as the host sees it\");",
        key.cuda_type, key.size
    );
    if let Some(v) = value {
        let _ = writeln!(
            out,
            "static_assert(sizeof(sort_value_t) == {}, \"the value's size, as the host sees it\");",
            v.size
        );
    }
    let kind = key.kind.cuda_name();
    for kernel in SortKernel::ALL {
        let params = wrapper_params(
            kernel.params(),
            &[('K', "sort_key_t"), ('V', "sort_value_t")],
        );
        let symbol = kernel.symbol(key, value);
        let (bounds, body) = match kernel {
            SortKernel::Histograms => (
                SORT_BLOCK_THREADS.to_string(),
                format!(
                    "gpu_scan::radix_histograms<sort_key_t, {kind}, {SORT_BLOCK_THREADS}>(keys, n, begin_bit, end_bit, descending != 0, counts);"
                ),
            ),
            SortKernel::Offsets => (
                SORT_DIGITS.to_string(),
                "gpu_scan::radix_offsets(counts);".to_string(),
            ),
            SortKernel::Onesweep => (
                format!("{}, {}", shape.threads, shape.min_blocks),
                format!(
                    "gpu_scan::radix_onesweep<sort_key_t, {kind}, sort_value_t, {has_values}, {}, {}, {}>(keys_in, keys_out, values_in, values_out, n, shift, width, descending != 0, offsets, status, tile_counter);",
                    shape.threads,
                    shape.items,
                    shape.rank.cuda_name()
                ),
            ),
            SortKernel::Iota => (
                SORT_BLOCK_THREADS.to_string(),
                "gpu_scan::radix_iota<unsigned long long>(out, n);".to_string(),
            ),
        };
        let _ = writeln!(
            out,
            "extern \"C\" __global__ void __launch_bounds__({bounds}) {symbol}({params}) {{\n  {body}\n}}"
        );
    }
    out
}

/// A wrapper's parameter list from `(CUDA type, name)` pairs, each
/// placeholder letter of `types` in a type replaced by its CUDA type.
fn wrapper_params(params: &[(&str, &str)], types: &[(char, &str)]) -> String {
    params
        .iter()
        .map(|(ty, name)| {
            // Letter by letter, so that no replacement is read again.
            let ty: String = ty
                .chars()
                .map(|c| match types.iter().find(|(letter, _)| *letter == c) {
                    Some((_, cuda)) => cuda.to_string(),
                    None => c.to_string(),
                })
                .collect();
            format!("{ty} {name}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The [`PRELUDE`], the [`LIBRARY`], the constants the radix sort template
/// takes from here, and the template.
fn radix_library() -> String {
    let mut out = crate::launch_state::launch_state_declaration();
    out.push_str(PRELUDE);
    out.push_str(LIBRARY);
    let _ = writeln!(
        out,
        "namespace gpu_scan {{ constexpr int radix_stage_bytes = {SORT_STAGE_BYTES}; \
         constexpr int radix_histogram_keys = {SORT_HISTOGRAM_KEYS}; }}"
    );
    out.push_str(include_str!("templates/radix_sort.cuh"));
    out
}

/// The kernels of a sort of records by a `#[sort_key]`, beside the radix
/// sort of each key component's bits ([`sort_program`] for unsigned keys
/// of the component's width, carrying the records' `u64` positions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByKeyKernel {
    /// `bits[i]` = component `c`'s ordered bits (`radix_key`) of record
    /// `order[i]` (grid-stride, [`SORT_BLOCK_THREADS`] a block).
    Extract(usize),
    /// `out[i] = records[order[i]]` (grid-stride).
    Gather,
    /// `order[i] = i`: the records' positions, before the first sort.
    Iota,
}

impl ByKeyKernel {
    /// Every kernel of the program of a key of `components` components.
    pub fn all(components: usize) -> impl Iterator<Item = ByKeyKernel> {
        (0..components)
            .map(ByKeyKernel::Extract)
            .chain([ByKeyKernel::Gather, ByKeyKernel::Iota])
    }

    /// The exported symbol for the sort key named `name`
    /// (`SortKey::NAME`).
    pub fn symbol(self, name: &str) -> String {
        match self {
            ByKeyKernel::Extract(c) => format!("gpu_scan_sort_by_{name}_extract{c}"),
            ByKeyKernel::Gather => format!("gpu_scan_sort_by_{name}_gather"),
            ByKeyKernel::Iota => format!("gpu_scan_sort_by_{name}_iota"),
        }
    }

    /// The wrapper's parameters, in order: `(CUDA type, name)`, with `R` the
    /// record type and `B` the component's bits (an unsigned integer of its
    /// width).
    pub fn params(self) -> &'static [(&'static str, &'static str)] {
        match self {
            ByKeyKernel::Extract(_) => &[
                ("const R*", "records"),
                ("const unsigned long long*", "order"),
                ("B*", "bits"),
                ("unsigned long long", "n"),
            ],
            ByKeyKernel::Gather => &[
                ("const R*", "records"),
                ("const unsigned long long*", "order"),
                ("R*", "out"),
                ("unsigned long long", "n"),
            ],
            ByKeyKernel::Iota => &[
                ("unsigned long long*", "order"),
                ("unsigned long long", "n"),
            ],
        }
    }
}

/// The program of a sort of records by the sort key `name` of
/// `widths.len()` components of `widths` bits (most significant first),
/// whose `#[sort_key]` translation is `source` (`SortKey::CUDA_SOURCE`,
/// with the record's declaration): an [`ByKeyKernel::Extract`] kernel a
/// component, the [`ByKeyKernel::Gather`] and the [`ByKeyKernel::Iota`].
///
/// ```
/// use kernels_gen::radix_sort::{sort_by_key_program, ByKeyKernel};
///
/// let source = "namespace gpu_scan_stages { struct by_x { typedef float input_t; \
///   static constexpr int components = 1; typedef float key0_t; \
///   static __device__ __forceinline__ key0_t key0(const input_t x) { return x; } }; }";
/// let cuda = sort_by_key_program("by_x", source, &[32]);
/// assert!(cuda.contains(&format!(" {}(", ByKeyKernel::Extract(0).symbol("by_x"))));
/// ```
pub fn sort_by_key_program(name: &str, source: &str, widths: &[u32]) -> String {
    let mut out = radix_library();
    out.push_str(source);
    let policy = format!("gpu_scan_stages::{name}");
    let _ = writeln!(
        out,
        "\n// Kernels (kernels_gen::radix_sort::sort_by_key_program).\n\
         static_assert({policy}::components == {}, \"the key's components, as the host sees them\");",
        widths.len()
    );
    let kernels = ByKeyKernel::all(widths.len());
    for kernel in kernels {
        let bits = match kernel {
            ByKeyKernel::Extract(c) => format!("gpu_scan::unsigned_bits_{}_t", widths[c]),
            ByKeyKernel::Gather | ByKeyKernel::Iota => String::new(),
        };
        let record = format!("{policy}::input_t");
        let params = wrapper_params(kernel.params(), &[('R', &record), ('B', &bits)]);
        let body = match kernel {
            ByKeyKernel::Extract(c) => format!(
                "static_assert(8 * sizeof({policy}::key{c}_t) == {}, \"component {c}'s width\");\n  \
                 gpu_scan::radix_extract<{policy}::key{c}_t>(records, order, bits, n, \
                 [](const {policy}::input_t r) {{ return {policy}::key{c}(r); }});",
                widths[c]
            ),
            ByKeyKernel::Gather => "gpu_scan::radix_gather(records, order, out, n);".to_string(),
            ByKeyKernel::Iota => "gpu_scan::radix_iota<unsigned long long>(order, n);".to_string(),
        };
        let _ = writeln!(
            out,
            "extern \"C\" __global__ void __launch_bounds__({SORT_BLOCK_THREADS}) {}({params}) {{\n  {body}\n}}",
            kernel.symbol(name)
        );
    }
    out
}

/// The kernels of a segmented sort by offsets, beside the radix sorts it
/// runs (keys with their `u64` positions, then the segments' numbers with
/// the positions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentedKernel {
    /// `bits[i]` (`u32`) = how many offsets are at most `order[i]`.
    SegmentOf32,
    /// The same in `u64`, for more than `u32::MAX` offsets.
    SegmentOf64,
    /// `out[i] = keys[order[i]]` inside the segments, `keys[i]` outside.
    GatherKeys,
    /// The same for the values.
    GatherValues,
}

impl SegmentedKernel {
    /// The kernels of a program with values or without.
    pub fn all(values: bool) -> &'static [SegmentedKernel] {
        use SegmentedKernel::*;
        if values {
            &[SegmentOf32, SegmentOf64, GatherKeys, GatherValues]
        } else {
            &[SegmentOf32, SegmentOf64, GatherKeys]
        }
    }

    /// The exported symbol for keys `key` (and values `value`).
    pub fn symbol(self, key: &SortKeyType, value: Option<&SortValueType>) -> String {
        let name = |t: &str| t.replace(' ', "_");
        let values = value.map_or("keys".to_string(), |v| {
            format!("pairs_{}", name(v.cuda_type))
        });
        let suffix = match self {
            SegmentedKernel::SegmentOf32 => "segment_of32",
            SegmentedKernel::SegmentOf64 => "segment_of64",
            SegmentedKernel::GatherKeys => "gather_keys",
            SegmentedKernel::GatherValues => "gather_values",
        };
        format!("gpu_scan_segsort_{}_{values}_{suffix}", name(key.cuda_type))
    }

    /// The wrapper's parameters, in order: `(CUDA type, name)`, with `T`
    /// the gathered type (the keys' or the values').
    pub fn params(self) -> &'static [(&'static str, &'static str)] {
        const OFFSETS: [(&str, &str); 3] = [
            ("const void*", "offsets"),
            ("unsigned long long", "count"),
            ("unsigned long long", "width"),
        ];
        match self {
            SegmentedKernel::SegmentOf32 => &[
                ("const unsigned long long*", "order"),
                ("unsigned*", "bits"),
                ("unsigned long long", "n"),
                OFFSETS[0],
                OFFSETS[1],
                OFFSETS[2],
            ],
            SegmentedKernel::SegmentOf64 => &[
                ("const unsigned long long*", "order"),
                ("unsigned long long*", "bits"),
                ("unsigned long long", "n"),
                OFFSETS[0],
                OFFSETS[1],
                OFFSETS[2],
            ],
            SegmentedKernel::GatherKeys | SegmentedKernel::GatherValues => &[
                ("const T*", "in"),
                ("const unsigned long long*", "order"),
                ("T*", "out"),
                ("unsigned long long", "n"),
                OFFSETS[0],
                OFFSETS[1],
                OFFSETS[2],
            ],
        }
    }
}

/// The program of a segmented sort of keys `key` (carrying values
/// `value`) by offsets (`u32` or `u64`, their width an argument): a
/// [`SegmentedKernel`] each.
pub fn segmented_sort_program(key: &SortKeyType, value: Option<&SortValueType>) -> String {
    let mut out = radix_library();
    if let Some(v) = value {
        out.push_str(v.declarations);
    }
    let _ = writeln!(
        out,
        "\n// Kernels (kernels_gen::radix_sort::segmented_sort_program)."
    );
    for &kernel in SegmentedKernel::all(value.is_some()) {
        let gathered = match (kernel, value) {
            (SegmentedKernel::GatherValues, Some(v)) => v.cuda_type,
            _ => key.cuda_type,
        };
        let params = wrapper_params(kernel.params(), &[('T', gathered)]);
        let body = match kernel {
            SegmentedKernel::SegmentOf32 => {
                "gpu_scan::radix_segment_of<unsigned>(order, bits, n, offsets, count, width);".to_string()
            }
            SegmentedKernel::SegmentOf64 => {
                "gpu_scan::radix_segment_of<unsigned long long>(order, bits, n, offsets, count, width);".to_string()
            }
            SegmentedKernel::GatherKeys | SegmentedKernel::GatherValues => {
                format!("gpu_scan::radix_gather_segments<{gathered}>(in, order, out, n, offsets, count, width);")
            }
        };
        let _ = writeln!(
            out,
            "extern \"C\" __global__ void __launch_bounds__({SORT_BLOCK_THREADS}) {}({params}) {{\n  {body}\n}}",
            kernel.symbol(key, value)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_define_every_kernel_of_both_forms() {
        let key = SortKeyType {
            cuda_type: "float",
            kind: RadixKind::Float,
            size: 4,
        };
        let value = SortValueType {
            cuda_type: "Pair_01",
            declarations: "struct Pair_01 { unsigned a; unsigned b; };\n",
            size: 8,
        };
        for value in [None, Some(&value)] {
            let program = sort_program(&key, value, SortShape::default_for(&key, 8, Arch::SM_90));
            for kernel in SortKernel::ALL {
                let symbol = kernel.symbol(&key, value);
                assert!(program.contains(&format!(" {symbol}(")), "{symbol}");
            }
            assert_eq!(program.contains("struct Pair_01"), value.is_some());
        }
        let shape = SortShape::default_for(&key, 0, Arch::SM_90);
        assert_eq!(
            shape.shared_bytes(4, 0),
            26_660,
            "as ptxas reports it for sm_90"
        );
        assert_eq!(
            shape.shared_bytes(4, 8),
            43_044,
            "values staged after the keys"
        );
        assert!(shape.stages_values(8) && !shape.stages_values(24));
        assert_eq!(
            SortShape::default_for(
                &SortKeyType {
                    cuda_type: "double",
                    kind: RadixKind::Float,
                    size: 8
                },
                8,
                Arch::SM_90
            )
            .tile_items(),
            2_560
        );
        assert_eq!(SortShape::default_for(&key, 0, Arch::SM_100).min_blocks, 2);
        // u32 keys alone take 20 a thread before sm_100.
        let u32_key = SortKeyType {
            cuda_type: "unsigned int",
            kind: RadixKind::Unsigned,
            size: 4,
        };
        assert_eq!(SortShape::default_for(&u32_key, 0, Arch::SM_90).items, 20);
        assert_eq!(SortShape::default_for(&u32_key, 4, Arch::SM_90).items, 16);
        assert_eq!(SortShape::default_for(&u32_key, 8, Arch::SM_90).items, 16);
        assert_eq!(SortShape::default_for(&u32_key, 0, Arch::SM_100).items, 16);
        let atomic_or = SortShape {
            rank: SortRank::AtomicOr,
            ..shape
        };
        assert_eq!(
            atomic_or.shared_bytes(4, 0),
            shape.shared_bytes(4, 0),
            "the masks live in the staging buffer"
        );
        assert_eq!(
            SortShape {
                items: 1,
                ..atomic_or
            }
            .shared_bytes(1, 0),
            8 * 256 * 4 * 2 + 256 * 8 + 8 * 4 + 4,
            "the masks outgrow one key of one byte a thread"
        );
        let wide = SortShape {
            threads: 512,
            ..shape
        };
        assert!(wide.check(4, 0).unwrap_err().contains("shared memory"));
        assert!(SortShape { items: 33, ..shape }
            .check(4, 0)
            .unwrap_err()
            .contains("staged"));
        assert_eq!(
            SortKernel::Onesweep.symbol(&key, Some(&value)),
            "gpu_scan_sort_float_pairs_Pair_01_onesweep"
        );
    }
}
