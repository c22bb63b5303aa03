//! CUDA C source generation for `gpu-scan` operators.
//!
//! `#[scan_op]` builds an [`OpDesc`] (the operator IR) and calls
//! [`operator_source`] at compile time; the text, the operator's part of its
//! program, is embedded in the user's binary. A complete program
//! ([`program`]) is:
//!
//! * the [`PRELUDE`]: Rust's semantics in CUDA, and the layout formulas;
//! * the [`LIBRARY`]: templates in namespace `gpu_scan`, parameterised by an
//!   operator policy — warp scans (Kogge–Stone with `__shfl_up_sync`, word
//!   by word for wide elements), block scans, tile scans of several items
//!   per thread, and the global algorithms (reduce-then-scan, single pass
//!   with decoupled look-back, the pipelined single pass). Each algorithm is
//!   one template over a segment-source policy: `no_segments` for plain
//!   scans (the segment logic compiles away) or `head_flags` (bytes or
//!   bits, in either [`SegmentedStrategy`], compiled only with
//!   [`SEGMENTED_DEFINE`]);
//! * the element's struct declarations ([`struct_declaration`]);
//! * the layout ([`layout::Layout`]): every size the host and the kernels
//!   share, computed in Rust;
//! * the operator's part: its policy `gpu_scan_ops::<name>` (element type,
//!   layout, `identity()` and `combine(x, y)` translated from Rust);
//! * one `extern "C"` wrapper per kernel the program is built for, printed
//!   from the ABI table ([`abi`]) that the runtime also builds its launches
//!   from.
//!
//! [`segment_flags`] is a separate, operator-independent program that
//! builds head flags from segment offsets or keys, and finds segments'
//! starts and count from head flags or keys ([`segment_starts`]).
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
//! // The library, the layout and the kernels come when the program is put together.
//! let layout = kernels_gen::layout::Layout::new(4, 1, 256, 16);
//! let kernels = [kernels_gen::abi::KernelAbi::plain(Kernel::ScanTilesInclusive)];
//! let program = kernels_gen::program("sum_u32", &cuda, &layout, &kernels);
//! assert!(program.contains("namespace gpu_scan {"));
//! assert!(program.contains(&Kernel::ScanTilesInclusive.symbol("sum_u32")));
//! assert!(!program.contains(&Kernel::ReduceTiles.symbol("sum_u32")));
//! ```

pub mod abi;
pub mod eval;
pub mod eval_compiled;
pub mod expr;
pub mod fold;
pub mod infer;
pub mod ir;
pub mod ir_text;
pub mod launch_state;
pub mod layout;
pub mod lower;
mod param_block;
pub mod pressure;
pub mod radix_sort;
mod real;
pub mod recurrence;
pub mod segment_flags;
pub mod segment_starts;
pub mod select;
pub mod spmv;
pub mod stage;
pub mod tuning;

mod arch;
mod kernel_kinds;
mod params;
mod single_pass_sizes;

pub use arch::{
    nvrtc_cubin_options, nvrtc_options, semantic_nvrtc_options, Arch, QUICK_BUILD_OPTION,
};
pub use kernel_kinds::{
    Direction, FlagFormat, Kernel, SegmentSource, SegmentedKernel, SegmentedStrategy,
    SEGMENTED_DEFINE, SYMBOL_PREFIX,
};
pub use params::{
    auto_block_threads, auto_items_per_thread, column_items_per_thread, column_one_block_per_sm,
    column_row_lanes, column_rows_packed, column_staged, column_windowed, columns_tiles,
    packed_element, small_items_per_thread, tile_fits, tile_shared_bytes, AreaTiles, GenParams,
    InvalidParams, ItemsPerThread, AREA_MAX_COLUMN_TILES, COLUMNS_PER_TILE, DEFAULT_BLOCK_THREADS,
    MAX_ELEMENT_REGISTERS, MAX_ELEMENT_SIZE, MAX_ITEMS_PER_THREAD, PACKED_ELEMENT_MIN_REGISTERS,
    STATIC_SHARED_LIMIT,
};
pub use real::RealType;
pub use single_pass_sizes::{
    pipelined_block_threads, pipelined_heads_warps, pipelined_items_per_thread,
    pipelined_looks_back, pipelined_offsets_block_threads, pipelined_run_padding,
    pipelined_run_stride, pipelined_segmented_shared_bytes, pipelined_segmented_stages,
    pipelined_shared_bytes, pipelined_squad_warps, pipelined_stages, pipelined_supported,
    pipelined_tile_items, pipelined_warp_total_slots, tile_status_bytes, tile_status_stride,
    PIPELINED_FULL_SQUAD_MAX, PIPELINED_HEADS_WARPS_MAX_ELEMENT, PIPELINED_MAX_ELEMENT_SIZE,
    PIPELINED_WALK_MAX_ELEMENT_SIZE, STATUS_GROUP_TILES, TILE_STATUS_STRIDE,
};
pub use single_pass_sizes::{status_capacity, status_chunk_offset};

use expr::{ExprPrinter, Hint};
use ir::{ElementType, Expr, FieldType, OpDesc, StructDesc};
use std::fmt::Write;

/// Helpers every program starts with: Rust's integer and float semantics,
/// casts, word-by-word warp shuffles, and the layout formulas of the tile
/// status and the pipelined pass. Guarded, so it may appear twice.
pub const PRELUDE: &str = include_str!("prelude.cuh");

/// The warp- and block-level scans (`warp.cuh`, `block.cuh`), guarded:
/// both the [`LIBRARY`] and the [`DEVICE_API`] hold them.
macro_rules! block_level {
    () => {
        concat!(
            "#ifndef GPU_SCAN_BLOCK_LEVEL\n#define GPU_SCAN_BLOCK_LEVEL\n",
            include_str!("templates/warp.cuh"),
            include_str!("templates/block.cuh"),
            "#endif  // GPU_SCAN_BLOCK_LEVEL\n",
        )
    };
}

/// The scan library: operator-independent templates in namespace
/// `gpu_scan`, parameterised by an operator policy (see `shape.cuh` for
/// what a policy provides): tile shapes, warp, block and tile scans, and
/// the global algorithms (reduce-then-scan, single pass with look-back,
/// pipelined single pass), plain and (with [`SEGMENTED_DEFINE`]) segmented.
/// The launch state's code (`launch.cuh`) needs
/// [`launch_state::launch_state_declaration`] before it; [`program`] puts
/// everything in order.
pub const LIBRARY: &str = concat!(
    include_str!("templates/launch.cuh"),
    "\n#ifndef GPU_SCAN_LIBRARY\n#define GPU_SCAN_LIBRARY\n",
    include_str!("templates/direction.cuh"),
    include_str!("templates/stages.cuh"),
    include_str!("templates/shape.cuh"),
    block_level!(),
    include_str!("templates/segments.cuh"),
    include_str!("templates/segment_offsets.cuh"),
    include_str!("templates/segment_keys.cuh"),
    include_str!("templates/segment_pairs.cuh"),
    include_str!("templates/tile.cuh"),
    include_str!("templates/reduce_then_scan.cuh"),
    include_str!("templates/single_pass.cuh"),
    include_str!("templates/pipelined_stages.cuh"),
    include_str!("templates/pipelined_heads.cuh"),
    include_str!("templates/pipelined_roles.cuh"),
    include_str!("templates/deterministic.cuh"),
    include_str!("templates/pipelined.cuh"),
    include_str!("templates/columns.cuh"),
    include_str!("templates/elementwise.cuh"),
    include_str!("templates/segment_totals.cuh"),
    include_str!("templates/summed_area.cuh"),
    "#endif  // GPU_SCAN_LIBRARY\n",
);

/// The device API for users' own kernels: the warp and block scans of the
/// library and `gpu_scan::BlockScan<Op, BlockThreads>` (`device_api.cuh`:
/// one value or several items per thread, inclusive or exclusive, chunks
/// with a running prefix), guarded, so that it may appear with the
/// [`LIBRARY`] or twice. [`device_api_source`] puts an operator in front.
pub const DEVICE_API: &str = concat!(
    block_level!(),
    "#ifndef GPU_SCAN_DEVICE_API\n#define GPU_SCAN_DEVICE_API\n",
    include_str!("templates/device_api.cuh"),
    "#endif  // GPU_SCAN_DEVICE_API\n",
);

/// The device API of operator `op_name` (see [`DEVICE_API`]), whose part
/// is `operator_part` as in [`program`], with tile shape `layout`: the
/// [`PRELUDE`], the layout, the operator's policy (struct
/// `gpu_scan_ops::<op_name>`, [`POLICY_NAMESPACE`]) and the device API,
/// with no kernel. Users put it in front of their own kernels.
pub fn device_api_source(op_name: &str, operator_part: &str, layout: &layout::Layout) -> String {
    use std::hash::{Hash, Hasher};
    let declarations = layout.cuda_declaration(op_name) + operator_part;
    // The guard names the text, not only the operator: the same operator's
    // part twice is skipped, while two different operators of the same name
    // (from two modules) are a redefinition NVRTC reports, never one of
    // them silently standing in for the other.
    let mut hasher = std::hash::DefaultHasher::new();
    declarations.hash(&mut hasher);
    let guard = format!("GPU_SCAN_DEVICE_API_OP_{op_name}_{:016x}", hasher.finish());
    let mut out = String::from(PRELUDE);
    let _ = writeln!(out, "#ifndef {guard}\n#define {guard}");
    out.push_str(&declarations);
    let _ = writeln!(out, "#endif  // {guard}");
    out.push_str(DEVICE_API);
    out
}

/// The complete program of operator `op_name`, whose part (element
/// declarations and policy: `ScanOp::CUDA_SOURCE`, [`operator_source`]
/// after the element's declarations) is `operator_part`, for the element
/// and tile shape `layout`, with the `extern "C"` wrappers of `kernels`
/// (printed from the ABI table, [`abi`]): the launch state's declaration,
/// the [`PRELUDE`], the [`LIBRARY`] (its segmented part switched on when a
/// segmented kernel is asked for), the layout, the operator, the wrappers.
/// A program holds the kernels a scan needs and no others.
pub fn program(
    op_name: &str,
    operator_part: &str,
    layout: &layout::Layout,
    kernels: &[abi::KernelAbi],
) -> String {
    let mut out = launch_state::launch_state_declaration();
    let segmented = kernels
        .iter()
        .any(|k| matches!(k.forward(), abi::KernelAbi::Segmented(..)));
    if segmented {
        let _ = writeln!(
            out,
            "#ifndef {SEGMENTED_DEFINE}\n#define {SEGMENTED_DEFINE} 1\n#endif"
        );
    }
    out.push_str(PRELUDE);
    out.push_str(LIBRARY);
    out.push_str(&layout.program_declaration(op_name, segmented));
    out.push_str(operator_part);
    // The staged kernels' stages, each declared once (their parts are
    // guarded), and their adapters.
    if kernels
        .iter()
        .any(|k| matches!(k.forward(), abi::KernelAbi::Staged(..)))
    {
        out.push_str(abi::STAGE_ADAPTERS);
    }
    for kernel in kernels {
        if let abi::KernelAbi::Staged(_, stages) = kernel.forward() {
            for stage in [stages.load, stages.store].into_iter().flatten() {
                out.push_str(stage.source);
            }
        }
    }
    let _ = writeln!(out, "\n// Kernels (kernels_gen::abi).");
    for kernel in kernels {
        out.push_str(&kernel.wrapper(op_name));
    }
    out
}

/// The offsets index of the segmented scans over offsets has an entry
/// every `1 << OFFSETS_INDEX_SHIFT` elements (32): a thread finds the
/// offsets of its items between two entries, read with two independent
/// loads, and reads the few offsets between them, none depending on
/// another, where a search of all offsets would chain a dozen dependent
/// loads. It costs 4 bytes per 32 elements (8 beyond 2^32 offsets).
pub const OFFSETS_INDEX_SHIFT: u32 = 5;

/// Entries of the offsets index for `n` elements: one per
/// `1 << OFFSETS_INDEX_SHIFT` elements and one past the end.
pub const fn offsets_index_len(n: usize) -> usize {
    n.div_ceil(1 << OFFSETS_INDEX_SHIFT) + 1
}

/// A piece of generated source whose CUDA type names are only known when
/// the user's crate is compiled: `#[scan_op]` joins the pieces in a
/// constant, with each struct's `ScanElement::CUDA_TYPE` (its Rust name
/// and a hash of its module path, so that two modules' `Pair`s never meet)
/// where a piece names one. [`join_parts`] prints them with the Rust names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Source text.
    Text(String),
    /// The CUDA name of the struct being declared, or of the operator's
    /// element.
    Element,
    /// The CUDA name of the declared struct's `k`-th struct-typed field's
    /// type (fields in order, counting only struct-typed ones).
    Field(usize),
    /// The CUDA name of a struct the operator names, by its Rust path as
    /// written in the operator.
    Named(String),
}

/// The pieces joined, each struct named by its Rust name: `element`, the
/// struct-typed fields' type names `fields`, named paths as written.
pub fn join_parts(parts: &[Part], element: &str, fields: &[&str]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.as_str(),
            Part::Element => element,
            Part::Field(k) => fields[*k],
            Part::Named(path) => path.as_str(),
        })
        .collect()
}

/// Accumulates [`Part`]s: text goes to the last text piece.
#[derive(Default)]
pub(crate) struct Parts(pub(crate) Vec<Part>);

impl Parts {
    pub(crate) fn text(&mut self, t: &str) {
        match self.0.last_mut() {
            Some(Part::Text(last)) => last.push_str(t),
            _ => self.0.push(Part::Text(t.to_string())),
        }
    }
    pub(crate) fn part(&mut self, p: Part) {
        self.0.push(p);
    }
}

/// The CUDA declaration of an element struct, in [`Part`]s, with an include
/// guard so that a struct used by several fields or structs is declared
/// once per program.
pub fn struct_declaration_parts(s: &StructDesc) -> Vec<Part> {
    let mut out = Parts::default();
    out.text("#ifndef GPU_SCAN_STRUCT_");
    out.part(Part::Element);
    out.text("\n#define GPU_SCAN_STRUCT_");
    out.part(Part::Element);
    out.text(&format!(
        "\n// Element `{}`: the fields, order and layout of the Rust #[repr(C)] struct.\nstruct ",
        s.name
    ));
    out.part(Part::Element);
    out.text(" {\n");
    let mut nested = 0;
    for f in &s.fields {
        match &f.ty {
            FieldType::Prim(p) => out.text(&format!("  {} {};\n", p.cuda_name(), f.name)),
            FieldType::Array(p, n) => out.text(&format!("  {} {}[{n}];\n", p.cuda_name(), f.name)),
            FieldType::Struct(_) => {
                out.text("  ");
                out.part(Part::Field(nested));
                out.text(&format!(" {};\n", f.name));
                nested += 1;
            }
        }
    }
    out.text("};\n#endif\n");
    out.0
}

/// [`struct_declaration_parts`] printed with the Rust names.
pub fn struct_declaration(s: &StructDesc) -> String {
    let fields: Vec<&str> = s
        .fields
        .iter()
        .filter_map(|f| match &f.ty {
            FieldType::Struct(name) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    join_parts(&struct_declaration_parts(s), &s.name, &fields)
}

/// The namespace of operator policies in a program.
pub const POLICY_NAMESPACE: &str = "gpu_scan_ops";

/// The operator's part of a program: its policy (element type, tile shape,
/// `identity()` and `combine(x, y)` translated from Rust) in namespace
/// [`POLICY_NAMESPACE`]. The element's declarations go before it;
/// [`program`] puts the library and the layout in front and the kernels a
/// scan needs after it.
pub fn operator_source(op: &OpDesc, params: &GenParams) -> Result<String, InvalidParams> {
    let parts = operator_source_parts(op, params)?;
    Ok(join_parts(&parts, op.element.cuda_name(), &[]))
}

/// [`operator_source`] in [`Part`]s: the element's and the named structs'
/// CUDA names are left to the user's crate.
pub fn operator_source_parts(op: &OpDesc, params: &GenParams) -> Result<Vec<Part>, InvalidParams> {
    params.validate()?;
    let name = &op.name;
    let mut out = Parts::default();
    let rule = "// ===========================================================================";
    let element = match &op.element {
        ElementType::Prim(p) => p.cuda_name(),
        ElementType::Struct(s) => s.as_str(),
    };
    out.text(&format!(
        "{rule}\n// Operator `{name}` on `{element}`, generated by #[scan_op].\n{rule}\n"
    ));
    out.text(&format!(
        "namespace {POLICY_NAMESPACE} {{\nstruct {name} {{\n  typedef "
    ));
    let held = match &op.element {
        ElementType::Prim(p) => {
            out.text(p.cuda_name());
            out.text(&format!(" T;\n  typedef T {ELEMENT_TYPEDEF};\n"));
            false
        }
        ElementType::Struct(_) => {
            out.part(Part::Element);
            out.text(&format!(" {ELEMENT_TYPEDEF};\n"));
            true
        }
    };
    out.text("  // Tile shape and sizes: this program's layout, computed in Rust.\n");
    out.text(&format!(
        "  typedef ::{} layout;\n",
        layout::layout_struct(name)
    ));
    if held {
        // A struct is held as the layout says: its fields, or its bytes in
        // words (packed_element); identity() and combine() convert.
        out.text(&format!(
            "  // Values as the kernels hold them: the element, or its bytes in 32-bit words\n  \
             // (layout::packed_element, see scan_held).\n  \
             typedef scan_held<{ELEMENT_TYPEDEF}, layout::packed_element> held;\n  \
             typedef held::type T;\n"
        ));
    }
    let (functions, named) = operator_functions(op, held);
    for path in named {
        out.text("  typedef ");
        out.part(Part::Named(path.clone()));
        out.text(&format!(" {};\n", expr::named_struct_alias(&path)));
    }
    out.text(&functions);
    out.text(&format!("}};\n}}  // namespace {POLICY_NAMESPACE}\n"));
    Ok(out.0)
}

/// The name translated operators use for their element type inside the
/// policy (`T` is the library's; a user's variable could shadow it).
const ELEMENT_TYPEDEF: &str = "scan_element_t";

/// The policy's `identity()` and `combine(x, y)`, translated from Rust, and
/// the paths of the structs other than the element that they name. With
/// `held`, the translations are `identity_element()` and
/// `combine_elements(x, y)`, on the element's fields, and `identity()` and
/// `combine(x, y)` take and give values as the kernels hold them (`T`,
/// through `held`).
fn operator_functions(op: &OpDesc, held: bool) -> (String, Vec<String>) {
    let (identity_fn, combine_fn) = if held {
        ("identity_element", "combine_elements")
    } else {
        ("identity", "combine")
    };
    let t = ELEMENT_TYPEDEF;
    let mut printer = ExprPrinter::new(t);
    let (hint, element) = match op.element {
        ElementType::Prim(p) => (Hint::Prim(p), infer::VarType::Prim(p)),
        ElementType::Struct(_) => (Hint::None, infer::VarType::Opaque),
    };
    // Literals typed as rustc types them, wherever the pass can name the type.
    // Then float arithmetic on constants computed in Rust (see `fold`).
    let identity = fold::fold_expr(&infer::annotate_expr(&op.identity, element));
    let params: Vec<(String, infer::VarType)> =
        op.params.iter().map(|p| (p.clone(), element)).collect();
    let body = fold::fold_body(&infer::annotate_body(&op.body, &params, element));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  // The identity element: identity ∘ v == v ∘ identity == v."
    );
    let _ = writeln!(
        out,
        "  static __device__ __forceinline__ {t} {identity_fn}() {{"
    );
    let mut text = String::new();
    result_statements(&mut printer, &identity, t, &hint, &mut text);
    for line in text.lines() {
        let _ = writeln!(out, "  {line}");
    }
    out.push_str("  }\n");
    let [x, y] = &op.params;
    let _ = writeln!(
        out,
        "  // {x} ∘ {y}: the operator, translated from Rust ({x} is the earlier element)."
    );
    let _ = writeln!(
        out,
        "  static __device__ __forceinline__ {t} {combine_fn}(const {t} {x}, const {t} {y}) {{"
    );
    text.clear();
    for (var, value) in &body.lets {
        let line = printer.let_binding(var, value);
        let _ = writeln!(text, "  {line}");
    }
    result_statements(&mut printer, &body.value, t, &hint, &mut text);
    for line in text.lines() {
        let _ = writeln!(out, "  {line}");
    }
    out.push_str("  }\n");
    if held {
        out.push_str(
            "  // The same on values as the kernels hold them.\n  \
             static __device__ __forceinline__ T identity() { return held::hold(identity_element()); }\n  \
             static __device__ __forceinline__ T combine(const T x, const T y) {\n    \
             return held::hold(combine_elements(held::fields(x), held::fields(y)));\n  }\n",
        );
    }
    let named = printer.named_structs().map(str::to_string).collect();
    (out, named)
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
