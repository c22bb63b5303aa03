//! Compaction kernels: select by a predicate or by flags, partition (two-
//! and three-way), unique, run-length encoding, non-trivial runs and reduce
//! by key, each one pass over the input with a decoupled look-back over
//! the tiles' counts (`templates/select.cuh`; the three-way partition
//! counts its first two parts in a pass before it). A program holds one kernel,
//! for one stage (or, selecting by flags, one element type); its wrapper's
//! parameters are written here once ([`SelectKernel::params`]) and the
//! runtime passes them in that order.
//!
//! ```
//! use kernels_gen::select::{select_program, SelectKernel, SelectShape, SelectSource};
//!
//! let source = SelectSource::Element { cuda_type: "unsigned int", declarations: "" };
//! let cuda = select_program(SelectKernel::Flagged, &source, 4, SelectShape::default_for(SelectKernel::Flagged, 4, kernels_gen::Arch::SM_90));
//! assert!(cuda.contains("gpu_scan_select_unsigned_int_flagged("));
//! ```

use crate::launch_state::launch_state_declaration;
use crate::stage::STAGE_NAMESPACE;
use crate::{tile_status_stride, Arch, LIBRARY, PRELUDE};
use std::fmt::Write;

/// The compaction kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SelectKernel {
    /// The elements a predicate keeps, in order.
    If,
    /// The elements whose flag byte is non-zero, in order.
    Flagged,
    /// The first element of each run of neighbours an equality calls equal.
    Unique,
    /// The elements a predicate keeps, in order, then the rest reversed.
    PartitionIf,
    /// Reverses `out[count, n)` in place (a partition's rest, into input
    /// order); any number of blocks.
    ReverseTail,
    /// The first element of each run (as [`SelectKernel::Unique`]) and
    /// each run's length.
    RunLengthEncode,
    /// The first key of each run of keys and the combination of the run's
    /// values by an operator ([`SelectSource::Keyed`]).
    ReduceByKey,
    /// The offset and length of each run of two or more neighbours an
    /// equality calls equal.
    NonTrivialRuns,
    /// How many elements the first of two predicates keeps, and of the
    /// rest how many the second keeps ([`SelectSource::TwoStages`]),
    /// summed into the two count slots (zeroed before) by a grid that
    /// strides over the tiles: the bases of a three-way partition's parts.
    PartitionThreeCount,
    /// A three-way partition: the elements the first predicate keeps, then
    /// of the others those the second keeps, then the rest, each part in
    /// input order, at the bases [`SelectKernel::PartitionThreeCount`]
    /// wrote.
    PartitionThree,
}

/// What a select program is specialised for.
#[derive(Clone, Copy, Debug)]
pub enum SelectSource<'a> {
    /// A stage (`#[scan_predicate]` for [`SelectKernel::If`] and
    /// [`SelectKernel::PartitionIf`], `#[scan_equality]` for
    /// [`SelectKernel::Unique`] and [`SelectKernel::RunLengthEncode`]): its
    /// policy's name and its part of a
    /// program (types and policy).
    Stage {
        /// `ScanPredicate::NAME` or `ScanEquality::NAME`.
        name: &'a str,
        /// Its `CUDA_SOURCE`.
        source: &'a str,
    },
    /// An equality over keys and an operator over values
    /// ([`SelectKernel::ReduceByKey`]).
    Keyed {
        /// `ScanEquality::NAME`.
        name: &'a str,
        /// Its `CUDA_SOURCE`.
        source: &'a str,
        /// `ScanOp::NAME`: the policy `gpu_scan_ops::<op>`.
        op: &'a str,
        /// The operator's part of a program: its layout's declaration and
        /// its `CUDA_SOURCE` (as in [`crate::device_api_source`]).
        op_part: &'a str,
        /// The bytes of the operator's element.
        value_size: usize,
    },
    /// Two predicate stages over one element type, tried in order
    /// ([`SelectKernel::PartitionThree`] and its count).
    TwoStages {
        /// The first predicate's `ScanPredicate::NAME`.
        first: &'a str,
        /// Its `CUDA_SOURCE`.
        first_source: &'a str,
        /// The second predicate's `ScanPredicate::NAME`.
        second: &'a str,
        /// Its `CUDA_SOURCE`.
        second_source: &'a str,
    },
    /// An element type alone ([`SelectKernel::Flagged`],
    /// [`SelectKernel::ReverseTail`]).
    Element {
        /// `ScanElement::CUDA_TYPE`.
        cuda_type: &'a str,
        /// `ScanElement::CUDA_DECL`.
        declarations: &'a str,
    },
}

/// The tile shape of a select kernel: threads per block, items per
/// thread, and the blocks per SM its launch bounds ask for (which caps its
/// registers). [`SelectShape::default_for`] is the default; the runtime
/// takes another for tuning ([`SelectShape::check`] says which fit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SelectShape {
    /// Threads per block, a multiple of 32 up to 1024.
    pub threads: usize,
    /// Items per thread, 1 to 32 (a thread keeps one bit per item).
    pub items: usize,
    /// The launch bounds' minimum blocks per SM.
    pub min_blocks: usize,
}

/// Bytes of a select kernel's tile in shared memory, at most, by default
/// for elements over 4 bytes: the tile is compacted there before it is
/// written (24-byte elements: 7 items of 256 threads).
pub const SELECT_TILE_BYTES: usize = 42 * 1024;

impl SelectSource<'_> {
    /// The name its kernels' symbols carry ([`SelectKernel::symbol`]): the
    /// stage's, the equality's and operator's, both predicates', or the
    /// element's CUDA type.
    pub fn symbol_name(&self) -> String {
        match self {
            SelectSource::Stage { name, .. } => name.to_string(),
            SelectSource::Keyed { name, op, .. } => format!("{name}_{op}"),
            SelectSource::TwoStages { first, second, .. } => format!("{first}_{second}"),
            SelectSource::Element { cuda_type, .. } => cuda_type.to_string(),
        }
    }
}

/// Threads per block of [`SelectKernel::ReverseTail`].
pub const REVERSE_TAIL_BLOCK_THREADS: usize = 256;

impl SelectShape {
    /// The default shape of `kernel` for elements of `element_size` bytes
    /// on `arch`, from the sweeps on the H200 (BENCHMARKS.md), among the
    /// shapes that compile without spilling (reduce-by-key: below): 256
    /// threads (128 over 128 bytes, so that a tile of one element per
    /// thread fits the static shared memory); for words and smaller, 24 or
    /// 32 items per thread by kernel (24 at 4 blocks for the three-way
    /// partition, 16 at 6 blocks for its count pass; 19 for non-trivial
    /// runs, whose threads walk their items in shared memory with a stride
    /// of `items` words, as reduce-by-key's, not swept); for larger
    /// elements about 32 registers of items within [`SELECT_TILE_BYTES`]
    /// (staged tiles, [`SelectKernel::staged`], which hold no items in
    /// registers: as many as [`SELECT_TILE_BYTES`] holds). The launch
    /// bounds ask for 3 blocks per SM (4 for unique and the three-way
    /// partition over words and for staged tiles of wider elements; 2 for
    /// flags over words, whose bytes take registers too, for the two-way
    /// partition over words, for the three-way partition of wider
    /// elements, and on sm_100 and newer, whose ptxas spilled at 3),
    /// capping registers where occupancy paid (with a thread count alone
    /// ptxas held the kernels to 64 registers and spilled).
    pub const fn default_for(kernel: SelectKernel, element_size: usize, arch: Arch) -> SelectShape {
        let size = if element_size == 0 { 1 } else { element_size };
        let threads = if size > 128 { 128 } else { 256 };
        let (items, min_blocks) = if let SelectKernel::ReduceByKey = kernel {
            // `element_size`: a key's and a value's bytes together. Its
            // threads walk their items in shared memory with a stride of
            // `items` elements, so an odd number (no bank conflicts over
            // words): at most 19, the best of the H200 sweep for u32 keys
            // and values (BENCHMARKS.md).
            let items = SELECT_TILE_BYTES / (threads * size);
            let items = if items > 19 { 19 } else { items };
            let items = if items > 1 && items % 2 == 0 {
                items - 1
            } else {
                items
            };
            (if items == 0 { 1 } else { items }, 2)
        } else if size <= 4 {
            match kernel {
                SelectKernel::If => (32, 3),
                SelectKernel::Unique => (32, 4),
                SelectKernel::Flagged => (24, 2),
                SelectKernel::PartitionIf => (32, 2),
                SelectKernel::ReverseTail | SelectKernel::RunLengthEncode => (24, 3),
                // 24, not the sweep's best 28: at 28 the kernel sat at its
                // cap of 64 registers, and a renumbering by NVVM spilled.
                SelectKernel::PartitionThree => (24, 4),
                SelectKernel::PartitionThreeCount => (16, 6),
                SelectKernel::NonTrivialRuns => (19, 3),
                SelectKernel::ReduceByKey => (8, 2), // handled above
            }
        } else {
            // (A staged tile takes no registers.)
            let by_registers = if kernel.staged(size) {
                usize::MAX
            } else {
                32 / size.div_ceil(4)
            };
            let by_bytes =
                SELECT_TILE_BYTES / (threads * (size + kernel.shared_bytes_per_item(size)));
            let items = if by_registers < by_bytes {
                by_registers
            } else {
                by_bytes
            };
            // (The three-way partition holds two bit masks and more
            // counts: at 3 blocks, 8-byte elements spilled on sm_90.)
            let min_blocks = match kernel {
                SelectKernel::PartitionThree => 2,
                _ if kernel.staged(size) => 4,
                _ => 3,
            };
            (if items == 0 { 1 } else { items }, min_blocks)
        };
        SelectShape {
            threads,
            items,
            min_blocks: if arch.major >= 10 { 2 } else { min_blocks },
        }
    }

    /// Elements per tile.
    pub const fn tile_items(&self) -> usize {
        self.threads * self.items
    }

    /// Why this shape cannot hold elements of `element_size` bytes in
    /// `kernel`, if it cannot: threads not a multiple of 32 up to 1024,
    /// items not 1 to 32 (31 for reduce-by-key and non-trivial runs), no
    /// blocks, or a tile over the static shared memory.
    pub fn check(&self, kernel: SelectKernel, element_size: usize) -> Result<(), String> {
        if self.threads == 0 || self.threads % 32 != 0 || self.threads > 1024 {
            return Err(format!(
                "{} threads: a multiple of 32 up to 1024",
                self.threads
            ));
        }
        if self.items == 0 || self.items > 32 {
            return Err(format!("{} items per thread: 1 to 32", self.items));
        }
        // (A head bit per item and one for the element after them.)
        if matches!(
            kernel,
            SelectKernel::ReduceByKey | SelectKernel::NonTrivialRuns
        ) && self.items > 31
        {
            return Err(format!(
                "{} items per thread: reduce-by-key and non-trivial runs take 1 to 31",
                self.items
            ));
        }
        if self.min_blocks == 0 {
            return Err("0 blocks per SM".into());
        }
        let bytes =
            self.tile_items() * (element_size.max(1) + kernel.shared_bytes_per_item(element_size));
        if bytes > crate::STATIC_SHARED_LIMIT - 4096 {
            return Err(format!(
                "a tile of {bytes} bytes: at most {} of static shared memory",
                crate::STATIC_SHARED_LIMIT - 4096
            ));
        }
        Ok(())
    }
}

impl SelectKernel {
    /// Whether its tile of `element_size`-byte elements is staged in shared
    /// memory as loaded and written from there (`select_staged_pass`):
    /// the two-way partition, and select of elements over 4 bytes. The
    /// others hold their items in registers and compact the tile in shared
    /// memory, which for select of words was faster on the H200 (0.516
    /// against 0.550 ms at 2^28; partition 0.719 against 0.673, 24-byte
    /// select 0.785 against 0.638 ms at 2^26: BENCHMARKS.md).
    pub const fn staged(self, element_size: usize) -> bool {
        match self {
            SelectKernel::PartitionIf => true,
            SelectKernel::If | SelectKernel::Flagged => element_size > 4,
            _ => false,
        }
    }

    /// Shared memory a tile of `element_size`-byte elements takes per item
    /// besides the element: run-length encoding keeps each head's 2-byte
    /// position, a staged selection by flags the flag.
    pub const fn shared_bytes_per_item(self, element_size: usize) -> usize {
        match self {
            SelectKernel::RunLengthEncode => 2,
            SelectKernel::Flagged if self.staged(element_size) => 1,
            _ => 0,
        }
    }

    /// The bytes of the value its tiles publish: a 64-bit count; for
    /// run-length encoding and non-trivial runs the count and the last
    /// head's position; for a three-way partition the first two parts'
    /// counts; for
    /// reduce-by-key the count and a partial total of `value_size` bytes
    /// (as the kernels hold it: in whole 32-bit words where packed, the
    /// pair 8-byte aligned; the program checks this size).
    pub const fn status_value_bytes(self, value_size: usize) -> usize {
        match self {
            SelectKernel::RunLengthEncode
            | SelectKernel::NonTrivialRuns
            | SelectKernel::PartitionThree => 16,
            SelectKernel::ReduceByKey => (8 + value_size.div_ceil(4) * 4).div_ceil(8) * 8,
            _ => 8,
        }
    }

    /// Its tile status entries' bytes and stride
    /// ([`tile_status_bytes`](crate::tile_status_bytes) and
    /// [`tile_status_stride`] of [`SelectKernel::status_value_bytes`]).
    pub const fn status_layout(self, value_size: usize) -> (usize, usize) {
        let bytes = self.status_value_bytes(value_size);
        (crate::tile_status_bytes(bytes), tile_status_stride(bytes))
    }

    /// The suffix of the kernel's symbol.
    pub fn suffix(self) -> &'static str {
        match self {
            SelectKernel::If => "if",
            SelectKernel::Flagged => "flagged",
            SelectKernel::Unique => "unique",
            SelectKernel::PartitionIf => "partition_if",
            SelectKernel::ReverseTail => "reverse_tail",
            SelectKernel::RunLengthEncode => "run_length_encode",
            SelectKernel::ReduceByKey => "reduce_by_key",
            SelectKernel::NonTrivialRuns => "non_trivial_runs",
            SelectKernel::PartitionThreeCount => "partition_three_count",
            SelectKernel::PartitionThree => "partition_three",
        }
    }

    /// The kernel's symbol for a program specialised for `name` (a stage's
    /// name, or an element's CUDA type with spaces as underscores).
    pub fn symbol(self, name: &str) -> String {
        format!(
            "gpu_scan_select_{}_{}",
            name.replace(' ', "_"),
            self.suffix()
        )
    }

    /// The wrapper's parameters, in order: `(CUDA type, name)`, with `T`
    /// the element (or key) type and `V` the values'. The runtime passes device addresses for the
    /// pointers and the element count as a 64-bit integer.
    pub fn params(self) -> &'static [(&'static str, &'static str)] {
        match self {
            SelectKernel::If | SelectKernel::Unique | SelectKernel::PartitionIf => &[
                ("const T*", "in"),
                ("T*", "out"),
                ("unsigned long long*", "count"),
                ("void*", "status"),
                ("scan_launch_state*", "launch"),
                ("unsigned long long", "n"),
            ],
            SelectKernel::Flagged => &[
                ("const T*", "in"),
                ("const unsigned char*", "flags"),
                ("T*", "out"),
                ("unsigned long long*", "count"),
                ("void*", "status"),
                ("scan_launch_state*", "launch"),
                ("unsigned long long", "n"),
            ],
            SelectKernel::ReverseTail => &[
                ("T*", "out"),
                ("const unsigned long long*", "count"),
                ("unsigned long long", "n"),
            ],
            SelectKernel::ReduceByKey => &[
                ("const T*", "in"),
                ("const V*", "values"),
                ("T*", "keys_out"),
                ("V*", "values_out"),
                ("unsigned long long*", "count"),
                ("void*", "status"),
                ("scan_launch_state*", "launch"),
                ("unsigned long long", "n"),
            ],
            SelectKernel::NonTrivialRuns => &[
                ("const T*", "in"),
                ("unsigned long long*", "offsets"),
                ("unsigned long long*", "lengths"),
                ("unsigned long long*", "count"),
                ("void*", "status"),
                ("scan_launch_state*", "launch"),
                ("unsigned long long", "n"),
            ],
            SelectKernel::PartitionThreeCount => &[
                ("const T*", "in"),
                ("unsigned long long*", "counts"),
                ("unsigned long long", "n"),
            ],
            SelectKernel::PartitionThree => &[
                ("const T*", "in"),
                ("T*", "out"),
                ("const unsigned long long*", "counts"),
                ("void*", "status"),
                ("scan_launch_state*", "launch"),
                ("unsigned long long", "n"),
            ],
            SelectKernel::RunLengthEncode => &[
                ("const T*", "in"),
                ("T*", "out"),
                ("unsigned long long*", "lengths"),
                ("unsigned long long*", "count"),
                ("void*", "status"),
                ("scan_launch_state*", "launch"),
                ("unsigned long long", "n"),
            ],
        }
    }
}

/// The program of select kernel `kernel` for `source`, whose elements are
/// `element_size` bytes (checked by the program), in tiles of `shape`
/// (ignored by [`SelectKernel::ReverseTail`]): the launch state's
/// declaration, the [`PRELUDE`] and the [`LIBRARY`] (the look-back and the
/// launch state), the select template, the stage or element, and the one
/// wrapper.
pub fn select_program(
    kernel: SelectKernel,
    source: &SelectSource<'_>,
    element_size: usize,
    shape: SelectShape,
) -> String {
    let mut out = launch_state_declaration();
    out.push_str(PRELUDE);
    out.push_str(LIBRARY);
    out.push_str(include_str!("templates/select.cuh"));
    let mut value_size = 0;
    let source_name = || source.symbol_name();
    let (name, element, body) = match *source {
        SelectSource::Keyed {
            name,
            source,
            op,
            op_part,
            value_size: size,
        } => {
            out.push_str(source);
            out.push_str(op_part);
            value_size = size;
            let policy = format!("{STAGE_NAMESPACE}::{name}");
            let _ = writeln!(
                out,
                "typedef {}::{op} select_op_t;\ntypedef select_op_t::T select_value_t;\n\
                 static_assert(sizeof(gpu_scan::select_keyed_pair<select_op_t>) == {}, \"the pair's size, as the host sees it\");",
                crate::POLICY_NAMESPACE,
                kernel.status_value_bytes(size)
            );
            (
                source_name(),
                format!("{policy}::input_t"),
                format!("gpu_scan::select_run_heads<{policy}>"),
            )
        }
        SelectSource::Stage { name, source } => {
            out.push_str(source);
            let policy = format!("{STAGE_NAMESPACE}::{name}");
            let element = format!("{policy}::input_t");
            let source_type = match kernel {
                SelectKernel::Unique
                | SelectKernel::RunLengthEncode
                | SelectKernel::NonTrivialRuns => format!("gpu_scan::select_run_heads<{policy}>"),
                _ => format!("gpu_scan::select_by_predicate<{policy}>"),
            };
            (source_name(), element, source_type)
        }
        SelectSource::TwoStages {
            first,
            first_source,
            second,
            second_source,
        } => {
            // (Each stage's part is guarded: one element type's declarations
            // appear once.)
            out.push_str(first_source);
            out.push_str(second_source);
            let first = format!("{STAGE_NAMESPACE}::{first}");
            let second = format!("{STAGE_NAMESPACE}::{second}");
            let _ = writeln!(
                out,
                "static_assert(sizeof({first}::input_t) == sizeof({second}::input_t), \"two predicates of one element type\");"
            );
            (
                source_name(),
                format!("{first}::input_t"),
                format!("gpu_scan::select_by_two_predicates<{first}, {second}>"),
            )
        }
        SelectSource::Element {
            cuda_type,
            declarations,
        } => {
            out.push_str(declarations);
            (
                source_name(),
                cuda_type.to_string(),
                format!("gpu_scan::select_by_flags<{cuda_type}>"),
            )
        }
    };
    let symbol = kernel.symbol(&name);
    let params = kernel
        .params()
        .iter()
        .map(|(ty, name)| {
            let ty = ty
                .replace('T', "select_element_t")
                .replace('V', "select_value_t");
            format!("{ty} {name}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        out,
        "\n// Kernel (kernels_gen::select).\ntypedef {element} select_element_t;\n\
         static_assert(sizeof(select_element_t) == {element_size}, \"the element's size, as the host sees it\");"
    );
    match kernel {
        SelectKernel::ReduceByKey
        | SelectKernel::NonTrivialRuns
        | SelectKernel::PartitionThreeCount
        | SelectKernel::PartitionThree => {
            let (threads, items) = (shape.threads, shape.items);
            let (status_bytes, status_stride) = kernel.status_layout(value_size);
            let call = match kernel {
                SelectKernel::ReduceByKey => format!(
                    "select_reduce_by_key<source_t, select_op_t, {threads}, {items}, {status_bytes}, {status_stride}>(source, values, keys_out, values_out, count, status, launch, n)"
                ),
                SelectKernel::NonTrivialRuns => format!(
                    "select_non_trivial_runs<source_t, {threads}, {items}, {status_bytes}, {status_stride}>(source, offsets, lengths, count, status, launch, n)"
                ),
                SelectKernel::PartitionThreeCount => format!(
                    "select_partition_three_count<source_t, {threads}, {items}>(source, counts, n)"
                ),
                _ => format!(
                    "select_partition_three<source_t, {threads}, {items}, {status_bytes}, {status_stride}>(source, out, counts, status, launch, n)"
                ),
            };
            let _ = writeln!(
                out,
                "extern \"C\" __global__ void __launch_bounds__({threads}, {min_blocks}) {symbol}({params}) {{\n  \
                 typedef {body} source_t;\n  \
                 const source_t source = {{in}};\n  \
                 gpu_scan::{call};\n}}",
                min_blocks = shape.min_blocks,
            );
        }
        SelectKernel::ReverseTail => {
            let _ = writeln!(
                out,
                "extern \"C\" __global__ void __launch_bounds__({REVERSE_TAIL_BLOCK_THREADS}) {symbol}({params}) {{\n  \
                 gpu_scan::select_reverse_tail<select_element_t>(out, count, n);\n}}"
            );
        }
        _ => {
            let mode = match kernel {
                SelectKernel::PartitionIf => "gpu_scan::select_mode_partition",
                SelectKernel::RunLengthEncode => "gpu_scan::select_mode_runs",
                _ => "gpu_scan::select_mode_select",
            };
            let init = match kernel {
                SelectKernel::Flagged => "{in, flags}",
                _ => "{in}",
            };
            let lengths = match kernel {
                SelectKernel::RunLengthEncode => "lengths",
                _ => "nullptr",
            };
            let (status_bytes, status_stride) = kernel.status_layout(value_size);
            // Select and the two-way partition stage the tile
            // (`select_staged_pass`); unique and run-length encoding hold
            // it in registers and compact it in shared memory.
            let (pass, lengths) = if kernel.staged(element_size) {
                ("select_staged_pass", String::new())
            } else {
                ("select_single_pass", format!("{lengths}, "))
            };
            let _ = writeln!(
                out,
                "extern \"C\" __global__ void __launch_bounds__({threads}, {min_blocks}) {symbol}({params}) {{\n  \
                 typedef {body} source_t;\n  \
                 const source_t source = {init};\n  \
                 constexpr int items = {items};\n  \
                 gpu_scan::{pass}<source_t, {mode}, {threads}, items, {status_bytes}, {status_stride}>(source, out, {lengths}count, status, launch, n);\n}}",
                threads = shape.threads,
                min_blocks = shape.min_blocks,
                items = shape.items,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shapes the kernels cannot take are refused by `check`, before any
    /// program is built: the head bits of reduce-by-key cap its items at 31.
    #[test]
    fn shapes_out_of_range_are_refused() {
        let shape = |threads, items| SelectShape {
            threads,
            items,
            min_blocks: 2,
        };
        assert!(shape(128, 32).check(SelectKernel::If, 4).is_ok());
        assert!(shape(128, 32).check(SelectKernel::ReduceByKey, 8).is_err());
        assert!(shape(128, 31).check(SelectKernel::ReduceByKey, 8).is_ok());
        assert!(shape(100, 8).check(SelectKernel::If, 4).is_err());
        assert!(shape(1024, 32).check(SelectKernel::If, 4).is_err());
        for kernel in [SelectKernel::ReduceByKey, SelectKernel::If] {
            for size in [1, 4, 8, 12, 24, 32, 64, 256] {
                let default = SelectShape::default_for(kernel, size, Arch::SM_90);
                assert!(
                    default.check(kernel, size).is_ok(),
                    "{kernel:?} {size}: {default:?}"
                );
            }
        }
        let rbk = SelectShape::default_for(SelectKernel::ReduceByKey, 8, Arch::SM_90);
        assert_eq!((rbk.items % 2, rbk.items), (1, 19));
    }

    /// Every kind of source's program defines the symbol the runtime looks
    /// up: `kernel.symbol(&source.symbol_name())`.
    #[test]
    fn programs_define_the_symbols_their_sources_name() {
        let stage = "namespace gpu_scan_stages { struct same_1 { typedef unsigned int input_t; \
                     static __device__ bool apply(input_t a, input_t b) { return a == b; } }; }";
        let sources = [
            (
                SelectKernel::Unique,
                SelectSource::Stage {
                    name: "same_1",
                    source: stage,
                },
            ),
            (
                SelectKernel::ReduceByKey,
                SelectSource::Keyed {
                    name: "same_1",
                    source: stage,
                    op: "sum",
                    op_part: "",
                    value_size: 4,
                },
            ),
            (
                SelectKernel::NonTrivialRuns,
                SelectSource::Stage {
                    name: "same_1",
                    source: stage,
                },
            ),
            (
                SelectKernel::Flagged,
                SelectSource::Element {
                    cuda_type: "unsigned int",
                    declarations: "",
                },
            ),
            (
                SelectKernel::PartitionThree,
                SelectSource::TwoStages {
                    first: "same_1",
                    first_source: stage,
                    second: "same_1",
                    second_source: stage,
                },
            ),
        ];
        for (kernel, source) in sources {
            let shape = SelectShape::default_for(kernel, 8, Arch::SM_90);
            let program = select_program(kernel, &source, 4, shape);
            let symbol = kernel.symbol(&source.symbol_name());
            assert!(
                program.contains(&format!(" {symbol}(")),
                "{kernel:?}: no `{symbol}` in its program"
            );
        }
    }

    /// Select over words keeps its items in registers, the two-way
    /// partition and select over wider elements stage their tiles, whose
    /// size shared memory alone bounds.
    #[test]
    fn staged_kernels_are_the_planned_ones() {
        let flags = |size| SelectSource::Element {
            cuda_type: if size == 4 {
                "unsigned int"
            } else {
                "unsigned long long"
            },
            declarations: "",
        };
        for (kernel, size, staged) in [
            (SelectKernel::Flagged, 4, false),
            (SelectKernel::Flagged, 8, true),
            (SelectKernel::ReverseTail, 8, false),
        ] {
            assert_eq!(kernel.staged(size), staged, "{kernel:?} {size}");
            let shape = SelectShape::default_for(kernel, size, Arch::SM_90);
            let program = select_program(kernel, &flags(size), size, shape);
            assert_eq!(
                program.contains("gpu_scan::select_staged_pass<"),
                staged,
                "{kernel:?} {size}"
            );
        }
        assert!(SelectKernel::PartitionIf.staged(1) && SelectKernel::PartitionIf.staged(4));
        assert!(!SelectKernel::If.staged(4) && SelectKernel::If.staged(24));
        assert!(!SelectKernel::Unique.staged(24) && !SelectKernel::RunLengthEncode.staged(8));
        // 24-byte elements: 7 items a thread staged (42 KiB), 5 in registers.
        assert_eq!(
            SelectShape::default_for(SelectKernel::If, 24, Arch::SM_90).items,
            7
        );
        assert_eq!(
            SelectShape::default_for(SelectKernel::Unique, 24, Arch::SM_90).items,
            5
        );
    }
}
