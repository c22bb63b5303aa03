//! CUDA C source generation for `gpu-scan` operators.
//!
//! `#[scan_op]` builds an [`OpDesc`] (the operator IR) and calls
//! [`operator_source`] at compile time; the text is embedded in the user's
//! binary. A complete program is the [`PRELUDE`], the declarations of the
//! element structs ([`struct_declaration`]) and the operator's part:
//!
//! * the operator: `<op>_identity()` and `<op>_combine(x, y)`;
//! * warp level: `<op>_warp_inclusive_scan`, `<op>_warp_exclusive_scan`
//!   (Kogge–Stone with `__shfl_up_sync`, word by word for wide elements);
//! * block level: `<op>_block_exclusive_scan`, `<op>_block_inclusive_scan`;
//! * tile level: several items per thread (`<op>_tile_scan`);
//! * global level, reduce-then-scan and single pass with decoupled
//!   look-back: the kernels listed in [`Kernel`];
//! * segmented scans (compiled only with [`SEGMENTED_DEFINE`]): the same
//!   levels over head flags, in both strategies of [`SegmentedStrategy`],
//!   with the kernels listed in [`SegmentedKernel`].
//!
//! [`SEGMENT_FLAGS_SOURCE`] is a separate, operator-independent program that
//! builds head flags from segment offsets or keys.
//!
//! This crate has no GPU and no CUDA dependency: its output is plain text,
//! tested with snapshots and compiled with NVRTC by the workspace's tests.
//!
//! ```
//! use kernels_gen::ir::{BinOp, Block, ElementType, Expr, Lit, OpDesc, Prim};
//! use kernels_gen::{operator_source, GenParams, Kernel};
//!
//! let var = |n: &str| Expr::Var(n.to_string());
//! let op = OpDesc {
//!     name: "sum_u32".into(),
//!     element: ElementType::Prim(Prim::U32),
//!     identity: Expr::Lit(Lit::Int { value: 0, suffix: None }),
//!     params: ["x".into(), "y".into()],
//!     body: Block { lets: vec![], value: Expr::Binary(BinOp::Add, Box::new(var("x")), Box::new(var("y"))) },
//! };
//! let cuda = operator_source(&op, &GenParams::default()).unwrap();
//! assert!(cuda.contains("scan_add(x, y)"));
//! assert!(cuda.contains(&Kernel::ScanTilesInclusive.symbol("sum_u32")));
//! ```

pub mod expr;
pub mod ir;
pub mod launch_state;
mod params;

pub use params::{
    auto_items_per_thread, nvrtc_options, pipelined_items_per_thread,
    pipelined_segmented_shared_bytes, pipelined_segmented_shared_bytes_symbol,
    pipelined_segmented_stages, pipelined_segmented_supported, pipelined_shared_bytes,
    pipelined_shared_bytes_symbol, pipelined_stages, pipelined_supported, pipelined_tile_items,
    pipelined_tile_items_symbol, segmented_nvrtc_options, small_items_per_thread,
    small_tile_items_symbol, tile_items_symbol, tile_status_bytes, tile_status_bytes_symbol,
    tile_status_stride_symbol, Arch, FlagFormat, GenParams, InvalidParams, ItemsPerThread, Kernel,
    SegmentedKernel, SegmentedStrategy, MAX_ITEMS_PER_THREAD, PIPELINED_BLOCK_THREADS,
    SEGMENTED_DEFINE, TILE_STATUS_STRIDE,
};

use expr::{ExprPrinter, Hint};
use ir::{ElementType, Expr, FieldType, OpDesc, StructDesc};
use std::fmt::Write;

/// Helpers every program starts with: Rust's integer and float semantics,
/// casts, word-by-word warp shuffles. Guarded, so several operators' sources
/// can be concatenated into one program.
pub const PRELUDE: &str = include_str!("prelude.cuh");

const LAUNCH: &str = include_str!("templates/launch.cuh");
const WARP_LEVEL: &str = include_str!("templates/warp.cuh");
const BLOCK_LEVEL: &str = include_str!("templates/block.cuh");
const TILE_LEVEL: &str = include_str!("templates/tile.cuh");
const REDUCE_THEN_SCAN: &str = include_str!("templates/reduce_then_scan.cuh");
const SINGLE_PASS: &str = include_str!("templates/single_pass.cuh");
const PIPELINED: &str = include_str!("templates/pipelined.cuh");
const SEGMENTED: &str = include_str!("templates/segmented.cuh");

/// The program that builds segment head flags: from segment start offsets
/// ([`heads_from_offsets_symbol`]) and from keys ([`heads_from_keys_symbol`]).
/// It does not depend on any operator.
pub const SEGMENT_FLAGS_SOURCE: &str = include_str!("templates/segment_flags.cuh");

/// The kernel of [`SEGMENT_FLAGS_SOURCE`] that marks heads at the offsets of
/// an array of `offset_bits`-bit (32 or 64) unsigned offsets:
/// `(const uN* offsets, u64 count, flags*, u64 n)`; the flags must be zeroed.
pub fn heads_from_offsets_symbol(offset_bits: u32, format: FlagFormat) -> String {
    format!("scan_heads_from_offsets{offset_bits}_{}", format.suffix())
}

/// The kernel of [`SEGMENT_FLAGS_SOURCE`] that marks heads where a key of
/// `key_bits` bits (8, 16, 32 or 64) differs from the one before:
/// `(const uN* keys, flags*, u64 n)`.
pub fn heads_from_keys_symbol(key_bits: u32, format: FlagFormat) -> String {
    format!("scan_heads_from_keys{key_bits}_{}", format.suffix())
}

/// The CUDA declaration of an element struct, with an include guard so that
/// a struct used by several operators is declared once per program.
pub fn struct_declaration(s: &StructDesc) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "#ifndef GPU_SCAN_STRUCT_{}", s.name);
    let _ = writeln!(out, "#define GPU_SCAN_STRUCT_{}", s.name);
    let _ = writeln!(
        out,
        "// Element `{}`: the fields, order and layout of the Rust #[repr(C)] struct.",
        s.name
    );
    let _ = writeln!(out, "struct {} {{", s.name);
    for f in &s.fields {
        match &f.ty {
            FieldType::Prim(p) => {
                let _ = writeln!(out, "  {} {};", p.cuda_name(), f.name);
            }
            FieldType::Array(p, n) => {
                let _ = writeln!(out, "  {} {}[{n}];", p.cuda_name(), f.name);
            }
            FieldType::Struct(name) => {
                let _ = writeln!(out, "  {name} {};", f.name);
            }
        }
    }
    out.push_str("};\n#endif\n");
    out
}

/// The operator's part of a program: its functions at every level and its
/// kernels. Every symbol starts with `op.name`, so several operators can
/// live in one module.
pub fn operator_source(op: &OpDesc, params: &GenParams) -> Result<String, InvalidParams> {
    params.validate()?;
    let name = &op.name;
    let t = format!("{name}_t");
    let items = match params.items_per_thread {
        ItemsPerThread::Auto => format!("scan_auto_items_per_thread(sizeof({t}))"),
        ItemsPerThread::Fixed(n) => n.to_string(),
    };
    let mut out = String::new();
    let rule = "// ===========================================================================";
    let _ = writeln!(out, "{rule}");
    let _ = writeln!(
        out,
        "// Operator `{name}` on `{}`, generated by #[scan_op].",
        op.element.cuda_name()
    );
    let _ = writeln!(out, "{rule}");
    out.push('\n');
    let _ = writeln!(out, "typedef {} {t};\n", op.element.cuda_name());
    let _ = writeln!(out, "// Tile shape (generation parameters).");
    let _ = writeln!(
        out,
        "constexpr int {name}_block_threads = {};",
        params.block_threads
    );
    let _ = writeln!(out, "constexpr int {name}_items_per_thread = {items};");
    let _ = writeln!(
        out,
        "constexpr int {name}_items_per_tile = {name}_block_threads * {name}_items_per_thread;"
    );
    let _ = writeln!(
        out,
        "constexpr int {name}_warps = {name}_block_threads / 32;"
    );
    let _ = writeln!(
        out,
        "// Shared staging for a tile, with a padding slot after every 32 elements."
    );
    let _ = writeln!(
        out,
        "constexpr int {name}_staging_items = {name}_items_per_tile + {name}_items_per_tile / 32;"
    );
    let _ = writeln!(
        out,
        "// Small tiles of the single pass for short inputs: a quarter of the items."
    );
    let _ = writeln!(
        out,
        "constexpr int {name}_small_items_per_thread = {name}_items_per_thread >= 4 ? {name}_items_per_thread / 4 : 1;"
    );
    let _ = writeln!(
        out,
        "constexpr int {name}_single_pass_min_blocks = scan_single_pass_min_blocks({name}_block_threads, {name}_items_per_thread, sizeof({t}), scan_single_pass_overhead(sizeof({t})));"
    );
    let _ = writeln!(
        out,
        "constexpr int {name}_segmented_single_pass_min_blocks = scan_single_pass_min_blocks({name}_block_threads, {name}_items_per_thread, sizeof({t}), scan_segmented_single_pass_overhead(sizeof({t})));"
    );
    let _ = writeln!(
        out,
        "// Exported so that the host can check its sizes against these."
    );
    let exported = [
        (tile_items_symbol(name), format!("{name}_items_per_tile")),
        (
            small_tile_items_symbol(name),
            format!("{name}_small_items_per_thread * {name}_block_threads"),
        ),
        (
            tile_status_bytes_symbol(name),
            format!("scan_tile_status_bytes(sizeof({t}))"),
        ),
        (
            tile_status_stride_symbol(name),
            "scan_tile_status_stride".to_string(),
        ),
        (
            pipelined_tile_items_symbol(name),
            format!("scan_pipelined_supported(sizeof({t})) ? scan_pipelined_squad_threads * scan_pipelined_items_per_thread(sizeof({t})) : 0"),
        ),
        (
            pipelined_shared_bytes_symbol(name),
            format!("scan_pipelined_shared_bytes(sizeof({t}))"),
        ),
        (
            pipelined_segmented_shared_bytes_symbol(name),
            format!("scan_pipelined_segmented_shared_bytes(sizeof({t}))"),
        ),
    ];
    for (symbol, value) in exported {
        let _ = writeln!(
            out,
            "extern \"C\" __constant__ unsigned int {symbol} = {value};"
        );
    }
    out.push('\n');

    out.push_str(&launch_state::launch_state_declaration());
    out.push_str(LAUNCH);
    out.push('\n');
    out.push_str(&operator_functions(op, &t));
    for template in [
        WARP_LEVEL,
        BLOCK_LEVEL,
        TILE_LEVEL,
        REDUCE_THEN_SCAN,
        SINGLE_PASS,
        PIPELINED,
    ] {
        out.push('\n');
        out.push_str(&template.replace("$op", name));
    }
    let _ = writeln!(out, "\n#ifdef {SEGMENTED_DEFINE}");
    out.push_str(&SEGMENTED.replace("$op", name));
    out.push_str(&segmented_kernels(name, &t));
    let _ = writeln!(out, "#endif  // {SEGMENTED_DEFINE}");
    Ok(out)
}

/// The exported segmented kernels: one thin wrapper per strategy, flag
/// format and kind around the templates of `segmented.cuh`.
fn segmented_kernels(name: &str, t: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n// Exported segmented kernels, one per strategy, flag format and kind."
    );
    for strategy in SegmentedStrategy::ALL {
        let s = strategy.cuda_name();
        for kernel in SegmentedKernel::ALL {
            let symbol = kernel.symbol(name, strategy);
            let bounds = match kernel {
                SegmentedKernel::SinglePass { .. } => format!(
                    "__launch_bounds__({name}_block_threads, {name}_segmented_single_pass_min_blocks)"
                ),
                SegmentedKernel::Pipelined { .. } => {
                    "__launch_bounds__(scan_pipelined_block_threads, 1)".to_string()
                }
                _ => format!("SCAN_BOUNDS({name}_block_threads)"),
            };
            let _ = writeln!(out, "extern \"C\" __global__ void {bounds}");
            let _ = match kernel {
                SegmentedKernel::ReduceTiles(format) => writeln!(
                    out,
                    "{symbol}(const {t}* input, const void* flags, {t}* tile_totals, unsigned char* tile_flags, const {t} seed, int seeded, unsigned long long n) {{\n  \
                     {name}_segmented_reduce_tile<{s}, {}>(input, flags, tile_totals, tile_flags, seed, seeded, n);\n}}",
                    format.cuda_name()
                ),
                SegmentedKernel::ScanTileTotals => writeln!(
                    out,
                    "{symbol}({t}* tile_totals, const unsigned char* tile_flags, unsigned long long num_tiles) {{\n  \
                     {name}_segmented_scan_tile_totals<{s}>(tile_totals, tile_flags, num_tiles);\n}}"
                ),
                SegmentedKernel::ScanTiles { inclusive, format } => writeln!(
                    out,
                    "{symbol}(const {t}* input, const void* flags, {t}* output, const {t}* tile_prefixes, const {t} seed, int seeded, unsigned long long n) {{\n  \
                     {name}_segmented_scan_tile<{}, {s}, {}>(input, flags, output, tile_prefixes, seed, seeded, n);\n}}",
                    if inclusive { "scan_segmented_inclusive" } else { "scan_segmented_exclusive" },
                    format.cuda_name()
                ),
                SegmentedKernel::Pipelined { inclusive, format } => writeln!(
                    out,
                    "{symbol}(const {t}* input, const void* flags, {t}* output, void* status, {t}* aggregates, {t}* prefixes, \
                     scan_launch_state* launch, const {t} seed, int seeded, unsigned long long n, unsigned long long tiles) {{\n  \
                     {name}_segmented_scan_pipelined<{}, {s}, {}>(input, flags, output, status, aggregates, prefixes, launch, seed, seeded, n, tiles);\n}}",
                    if inclusive { "scan_segmented_inclusive" } else { "scan_segmented_exclusive" },
                    format.cuda_name()
                ),
                SegmentedKernel::SinglePass { inclusive, format } => writeln!(
                    out,
                    "{symbol}(const {t}* input, const void* flags, {t}* output, void* status, {t}* aggregates, {t}* prefixes, \
                     scan_launch_state* launch, const {t} seed, int seeded, unsigned long long n) {{\n  \
                     {name}_segmented_scan_single_pass<{}, {s}, {}>(input, flags, output, status, aggregates, prefixes, launch, seed, seeded, n);\n}}",
                    if inclusive { "scan_segmented_inclusive" } else { "scan_segmented_exclusive" },
                    format.cuda_name()
                ),
            };
        }
    }
    out
}

/// `<op>_identity()` and `<op>_combine(x, y)`, translated from Rust.
fn operator_functions(op: &OpDesc, t: &str) -> String {
    let name = &op.name;
    let mut printer = ExprPrinter::new(t);
    let hint = match op.element {
        ElementType::Prim(p) => Hint::Prim(p),
        ElementType::Struct(_) => Hint::None,
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// The identity element: identity ∘ v == v ∘ identity == v."
    );
    let _ = writeln!(out, "__device__ __forceinline__ {t} {name}_identity() {{");
    result_statements(&mut printer, &op.identity, t, &hint, &mut out);
    out.push_str("}\n\n");

    let [x, y] = &op.params;
    let _ = writeln!(
        out,
        "// {x} ∘ {y}: the operator, translated from Rust ({x} is the earlier element)."
    );
    let _ = writeln!(
        out,
        "__device__ __forceinline__ {t} {name}_combine(const {t} {x}, const {t} {y}) {{"
    );
    for (var, value) in &op.body.lets {
        let line = printer.let_binding(var, value);
        let _ = writeln!(out, "  {line}");
    }
    result_statements(&mut printer, &op.body.value, t, &hint, &mut out);
    out.push_str("}\n");
    out
}

fn result_statements(
    printer: &mut ExprPrinter<'_>,
    value: &Expr,
    t: &str,
    hint: &Hint,
    out: &mut String,
) {
    if let Expr::Struct { .. } = value {
        let _ = writeln!(out, "  {t} scan_result;");
        printer.assign("scan_result", value, out, "  ");
        out.push_str("  return scan_result;\n");
    } else {
        let v = printer.expr(value, hint);
        let _ = writeln!(out, "  return {v};");
    }
}
