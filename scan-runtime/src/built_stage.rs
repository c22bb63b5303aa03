//! Stages built at run time: a predicate or an equality read from its text
//! (`kernels_gen::ir_text::print_stage`, what `#[scan_predicate]` and
//! `#[scan_equality]` record as `STAGE_IR` and what the Python package
//! translates a function into), checked as rustc would check it, its CUDA
//! written by the generator the macros use, for the compactions of
//! [`GpuSelect`](crate::GpuSelect) (`select_if_built` and the others).

use crate::dynamic::registered;
use crate::error::{Result, ScanError};
use crate::operator::OperatorKey;
use kernels_gen::eval::{StageValues, Value};
use kernels_gen::eval_compiled::CompiledStage;
use kernels_gen::ir::ElementType;
use kernels_gen::ir_text;
use kernels_gen::lower::{lower_stage, Leaf, Structs};
use kernels_gen::stage::{stage_source_parts, StageDesc, StageKind};
use kernels_gen::MAX_ELEMENT_SIZE;

/// A predicate or an equality over a primitive or a `repr(C)` struct,
/// read from its text at run time: the
/// [`ScanPredicate`](scan_core::stages::ScanPredicate) or
/// [`ScanEquality`](scan_core::stages::ScanEquality) of a compaction whose
/// function is a value. Its element's buffers are bytes
/// ([`BuiltLayout::elements`](crate::BuiltLayout::elements),
/// [`RawElements`](crate::RawElements)).
///
/// ```
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::{DynStage, ScanError};
/// use gpu_scan::stages::ScanPredicate;
///
/// #[scan_predicate(element = u32, keep = |x| x % 3 == 0)]
/// struct Third;
///
/// // The text #[scan_predicate] records; the Python package writes such
/// // texts from functions.
/// let third = DynStage::from_text(<Third as ScanPredicate>::STAGE_IR, &[])?;
/// assert_eq!((third.element_size(), third.keeps(&9u32.to_le_bytes())), (4, true));
/// assert!(!third.keeps(&10u32.to_le_bytes()));
/// assert!(matches!(DynStage::from_text("(stage", &[]), Err(ScanError::InvalidOperator(_))));
/// # Ok::<(), ScanError>(())
/// ```
#[derive(Clone)]
pub struct DynStage {
    kind: StageKind,
    element: ElementType,
    /// The element's leaves, size and alignment.
    leaves: Vec<Leaf>,
    size: usize,
    align: usize,
    /// The element's CUDA name and the declarations of its structs.
    cuda_type: String,
    declarations: String,
    /// The kernels' memory-cache key, and the policy's process-lived CUDA
    /// name and source ([`registered`]).
    key: OperatorKey,
    name: &'static str,
    source: &'static str,
    /// The checked function, compiled for the host: its inputs are the
    /// parameters' leaves.
    host: std::sync::Arc<CompiledStage>,
}

impl std::fmt::Debug for DynStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynStage")
            .field("kind", &self.kind)
            .field("element", &self.element)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl DynStage {
    /// Reads `text` (a predicate or an equality, `ir_text::print_stage`)
    /// and `structs` (the declarations of its struct element and the
    /// structs that one nests, `ir_text::print_struct`, any order), checks
    /// them and writes the stage's CUDA. [`ScanError::InvalidOperator`]
    /// says what is wrong: a text that does not parse, a body rustc would
    /// reject, or a map (compactions take predicates and equalities). No
    /// GPU is needed.
    pub fn from_text(text: &str, structs: &[&str]) -> Result<Self> {
        let refuse = |m: String| ScanError::InvalidOperator(m);
        let desc = ir_text::parse_stage(text).map_err(|e| refuse(e.to_string()))?;
        if desc.kind == StageKind::Map {
            return Err(refuse(format!(
                "stage `{}`: a map; a compaction takes a predicate or an equality",
                desc.name
            )));
        }
        let (leaves, size, align, declarations, by_name) = record_layout(&desc.input, structs)?;
        let host = host_function(&desc, &by_name)?;
        let cuda_type = match &desc.input {
            ElementType::Prim(p) => p.cuda_name().to_string(),
            ElementType::Struct(name) => name.clone(),
        };
        let (key, name, source) = register(&desc, &declarations);
        Ok(DynStage {
            kind: desc.kind,
            element: desc.input,
            leaves,
            size,
            align,
            cuda_type,
            declarations,
            key,
            name,
            source,
            host: std::sync::Arc::new(host),
        })
    }

    /// Predicate or equality.
    pub fn kind(&self) -> StageKind {
        self.kind
    }

    /// The element's type: a primitive, or a struct by its name.
    pub fn element(&self) -> &ElementType {
        &self.element
    }

    /// The element's leaves (a primitive's one leaf, a struct's
    /// primitives at their offsets).
    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }

    /// The element's size in bytes.
    pub fn element_size(&self) -> usize {
        self.size
    }

    /// The element's alignment (its widest primitive's).
    pub fn element_align(&self) -> usize {
        self.align
    }

    /// The predicate of the element in `bytes` (little-endian, `repr(C)`)
    /// on the host, as the kernels judge it. Panics where `bytes` is not
    /// one element or this is an equality.
    pub fn keeps(&self, bytes: &[u8]) -> bool {
        assert_eq!(self.kind, StageKind::Predicate, "a predicate's function");
        let args = self.values(bytes);
        self.host.apply(&args) == Value::Bool(true)
    }

    /// The equality of the elements in `a` and `b` on the host. Panics
    /// where either is not one element or this is a predicate.
    pub fn equal(&self, a: &[u8], b: &[u8]) -> bool {
        assert_eq!(self.kind, StageKind::Equality, "an equality's function");
        let mut args = self.values(a);
        args.extend(self.values(b));
        self.host.apply(&args) == Value::Bool(true)
    }

    /// The host's compiled function, of the parameters' leaves in order
    /// ([`DynStage::leaves`] of the first, then of the second).
    pub fn host(&self) -> &CompiledStage {
        &self.host
    }

    /// An element's leaves from its bytes.
    fn values(&self, bytes: &[u8]) -> Vec<Value> {
        assert_eq!(bytes.len(), self.size, "one element's bytes");
        leaf_values(&self.leaves, bytes)
    }

    pub(crate) fn key(&self) -> OperatorKey {
        self.key
    }

    /// The stage's CUDA policy name: its name and a hash of its text.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The stage's part of a CUDA program: its structs' declarations and
    /// the policy struct the macros write for its twin, under
    /// [`DynStage::name`].
    pub fn cuda_source(&self) -> &'static str {
        self.source
    }

    /// The element's CUDA type name and its structs' declarations.
    pub(crate) fn element_cuda(&self) -> (&str, &str) {
        (&self.cuda_type, &self.declarations)
    }
}

/// The structs of `texts` (`ir_text::print_struct`), by name, and their
/// CUDA declarations.
fn read_structs(texts: &[&str]) -> Result<(Structs, String)> {
    let mut by_name = Structs::default();
    let mut declarations = String::new();
    for text in texts {
        let s =
            ir_text::parse_struct(text).map_err(|e| ScanError::InvalidOperator(e.to_string()))?;
        declarations.push_str(&kernels_gen::struct_declaration(&s));
        by_name.insert(s.name.clone(), s);
    }
    Ok((by_name, declarations))
}

/// A record's leaves, size and alignment, and its structs' declarations:
/// a primitive's one leaf, or a struct's of `structs`.
fn record_layout(
    record: &ElementType,
    structs: &[&str],
) -> Result<(Vec<Leaf>, usize, usize, String, Structs)> {
    let (leaves, size, declarations, by_name) = match record {
        ElementType::Prim(p) => {
            let leaf = Leaf {
                path: String::new(),
                prim: *p,
                offset: 0,
            };
            (vec![leaf], p.size(), String::new(), Structs::default())
        }
        ElementType::Struct(name) => {
            let (by_name, declarations) = read_structs(structs)?;
            let size = by_name.size(name).map_err(ScanError::InvalidOperator)?;
            let leaves = by_name.leaves(name).map_err(ScanError::InvalidOperator)?;
            (leaves, size, declarations, by_name)
        }
    };
    if size == 0 || size > MAX_ELEMENT_SIZE {
        return Err(ScanError::InvalidOperator(format!(
            "an element of {size} bytes: the kernels take 1 to {MAX_ELEMENT_SIZE}"
        )));
    }
    let align = leaves.iter().map(|l| l.prim.size()).max().unwrap_or(1);
    Ok((leaves, size, align, declarations, by_name))
}

/// The values of an element's leaves, from its bytes.
fn leaf_values(leaves: &[Leaf], bytes: &[u8]) -> Vec<Value> {
    leaves
        .iter()
        .map(|leaf| {
            let mut bits = [0u8; 8];
            let width = leaf.prim.size();
            bits[..width].copy_from_slice(&bytes[leaf.offset..leaf.offset + width]);
            Value::from_bits(leaf.prim, u64::from_le_bytes(bits))
        })
        .collect()
}

/// A map stage checked and compiled for the host: over a primitive as it
/// is, over a struct lowered to its leaves.
fn host_function(stage: &StageDesc, structs: &Structs) -> Result<CompiledStage> {
    let refuse = |m: String| ScanError::InvalidOperator(m);
    match &stage.input {
        ElementType::Prim(_) => Ok(StageValues::new(stage)
            .map_err(|e| refuse(e.to_string()))?
            .compiled()),
        ElementType::Struct(_) => {
            let lowered = lower_stage(stage, structs).map_err(refuse)?;
            Ok(StageValues::lowered(stage, &lowered)
                .map_err(|e| refuse(e.to_string()))?
                .compiled())
        }
    }
}

/// The stage's policy, named by the stage's name and a hash of its text
/// (no clash with another stage of that name in a program, no C++
/// keyword), registered for the process.
fn register(desc: &StageDesc, declarations: &str) -> (OperatorKey, &'static str, &'static str) {
    let text = ir_text::print_stage(desc) + declarations;
    let policy = format!(
        "{}_{:016x}",
        snake(&desc.name),
        scan_core::const_str::fnv1a(&[&text])
    );
    let source = declarations.to_string()
        + &kernels_gen::join_parts(&stage_source_parts(desc), &policy, &[]);
    registered(&policy, source)
}

/// A sort key read from its text at run time (`ir_text::print_sort_key`,
/// what `#[sort_key]` records as `SORT_KEY_IR` and what the Python package
/// translates a function into): a function of a record (a primitive or a
/// `repr(C)` struct) giving one primitive or several, most significant
/// first, for [`GpuSort::sort_by_key_built`](crate::GpuSort::sort_by_key_built).
///
/// ```
/// use gpu_scan::prelude::*;
/// use gpu_scan::scan_runtime::{DynSortKey, ScanError};
/// use gpu_scan::sort::SortKey;
///
/// #[scan_op(identity = Pair { a: 0, b: 0.0 }, op = |x, y| Pair { a: x.a + y.a, b: x.b + y.b })]
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct Pair {
///     a: u32,
///     b: f32,
/// }
///
/// #[sort_key(record = Pair, key = (f32, u32), by = |p| (p.b, p.a))]
/// struct ByB;
///
/// let key = DynSortKey::from_text(<ByB as SortKey>::SORT_KEY_IR, &[Pair::STRUCT_IR])?;
/// assert_eq!((key.record_size(), key.widths()), (8, &[32, 32][..]));
/// let record = [7u32.to_le_bytes(), 2.5f32.to_le_bytes()].concat();
/// assert_eq!(key.ordered_bits(&record), [0xc020_0000, 7]); // 2.5's bits, sign set
/// # Ok::<(), ScanError>(())
/// ```
#[derive(Clone)]
pub struct DynSortKey {
    record: ElementType,
    leaves: Vec<Leaf>,
    size: usize,
    align: usize,
    components: Vec<kernels_gen::ir::Prim>,
    widths: Vec<u32>,
    key: OperatorKey,
    name: &'static str,
    source: &'static str,
    /// Each component's function, compiled for the host.
    host: std::sync::Arc<Vec<CompiledStage>>,
}

impl std::fmt::Debug for DynSortKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynSortKey")
            .field("record", &self.record)
            .field("components", &self.components)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl DynSortKey {
    /// Reads `text` (`ir_text::print_sort_key`) and `structs` (the
    /// record's struct declarations and those it nests), checks each
    /// component as rustc would (an integer or a float: what a radix sort
    /// orders) and writes the key's CUDA. [`ScanError::InvalidOperator`]
    /// says what is wrong. No GPU is needed.
    pub fn from_text(text: &str, structs: &[&str]) -> Result<Self> {
        let refuse = |m: String| ScanError::InvalidOperator(m);
        let desc = ir_text::parse_sort_key(text).map_err(|e| refuse(e.to_string()))?;
        let components: Vec<_> = desc.components.iter().map(|(p, _)| *p).collect();
        if let Some(p) = components
            .iter()
            .find(|p| **p == kernels_gen::ir::Prim::Bool)
        {
            return Err(refuse(format!(
                "sort key `{}`: a component of type `{}`: integers and floats are sorted",
                desc.name,
                p.rust_name()
            )));
        }
        if components.len() > 4 {
            return Err(refuse(format!(
                "sort key `{}`: {} components: at most 4",
                desc.name,
                components.len()
            )));
        }
        let (leaves, size, align, declarations, by_name) = record_layout(&desc.record, structs)?;
        let host = (0..desc.components.len())
            .map(|c| host_function(&desc.component_stage(c), &by_name))
            .collect::<Result<Vec<_>>>()?;
        let text = ir_text::print_sort_key(&desc) + &declarations;
        let policy = format!(
            "{}_{:016x}",
            snake(&desc.name),
            scan_core::const_str::fnv1a(&[&text])
        );
        let source = declarations
            + &kernels_gen::join_parts(
                &kernels_gen::stage::sort_key_source_parts(&desc),
                &policy,
                &[],
            );
        let (key, name, source) = registered(&policy, source);
        Ok(DynSortKey {
            record: desc.record,
            leaves,
            size,
            align,
            widths: components.iter().map(|p| 8 * p.size() as u32).collect(),
            components,
            key,
            name,
            source,
            host: std::sync::Arc::new(host),
        })
    }

    /// The record's type: a primitive, or a struct by its name.
    pub fn record(&self) -> &ElementType {
        &self.record
    }

    /// The record's size in bytes.
    pub fn record_size(&self) -> usize {
        self.size
    }

    /// The record's alignment (its widest primitive's).
    pub fn record_align(&self) -> usize {
        self.align
    }

    /// The components' types, most significant first.
    pub fn components(&self) -> &[kernels_gen::ir::Prim] {
        &self.components
    }

    /// The components' widths in bits, most significant first.
    pub fn widths(&self) -> &[u32] {
        &self.widths
    }

    /// The key's CUDA policy name: its name and a hash of its text.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The key's part of a CUDA program: its structs' declarations and the
    /// policy struct `#[sort_key]` writes for its twin.
    pub fn cuda_source(&self) -> &'static str {
        self.source
    }

    /// The key of the record in `bytes` on the host, each component's
    /// value.
    pub fn key_of(&self, bytes: &[u8]) -> Vec<Value> {
        assert_eq!(bytes.len(), self.size, "one record's bytes");
        let args = leaf_values(&self.leaves, bytes);
        self.host.iter().map(|f| f.apply(&args)).collect()
    }

    /// The key of the record in `bytes`, each component's bits transformed
    /// so that unsigned order is the key's order (the radix sort's digits:
    /// signed integers' sign flipped; floats' bits flipped for a negative
    /// sign, else the sign set, `-0.0` read as `+0.0`).
    pub fn ordered_bits(&self, bytes: &[u8]) -> Vec<u64> {
        self.key_of(bytes).into_iter().map(ordered_bits).collect()
    }

    pub(crate) fn key(&self) -> OperatorKey {
        self.key
    }
}

/// A component's value as its radix-ordered bits (`scan_core`'s
/// `RadixKey::ordered_bits`).
fn ordered_bits(v: Value) -> u64 {
    use scan_core::sort::RadixKey;
    match v {
        Value::U8(x) => x.ordered_bits(),
        Value::U16(x) => x.ordered_bits(),
        Value::U32(x) => x.ordered_bits(),
        Value::U64(x) => x.ordered_bits(),
        Value::I8(x) => x.ordered_bits(),
        Value::I16(x) => x.ordered_bits(),
        Value::I32(x) => x.ordered_bits(),
        Value::I64(x) => x.ordered_bits(),
        Value::F32(x) => x.ordered_bits(),
        Value::F64(x) => x.ordered_bits(),
        Value::Bool(_) => unreachable!("refused when the key was read"),
    }
}

/// A name as a C identifier's characters.
fn snake(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
