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
        let mut declarations = String::new();
        let (leaves, size, cuda_type, host) = match &desc.input {
            ElementType::Prim(p) => {
                let host = StageValues::new(&desc).map_err(|e| refuse(e.to_string()))?;
                let leaf = Leaf {
                    path: String::new(),
                    prim: *p,
                    offset: 0,
                };
                (
                    vec![leaf],
                    p.size(),
                    p.cuda_name().to_string(),
                    host.compiled(),
                )
            }
            ElementType::Struct(name) => {
                let mut by_name = Structs::default();
                for text in structs {
                    let s = ir_text::parse_struct(text).map_err(|e| refuse(e.to_string()))?;
                    declarations.push_str(&kernels_gen::struct_declaration(&s));
                    by_name.insert(s.name.clone(), s);
                }
                let size = by_name.size(name).map_err(refuse)?;
                let lowered = lower_stage(&desc, &by_name).map_err(refuse)?;
                let host = StageValues::lowered(&desc, &lowered)
                    .map_err(|e| refuse(e.to_string()))?
                    .compiled();
                (lowered.leaves, size, name.clone(), host)
            }
        };
        if size == 0 || size > MAX_ELEMENT_SIZE {
            return Err(refuse(format!(
                "an element of {size} bytes: the kernels take 1 to {MAX_ELEMENT_SIZE}"
            )));
        }
        let align = leaves.iter().map(|l| l.prim.size()).max().unwrap_or(1);
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
        self.leaves
            .iter()
            .map(|leaf| {
                let mut bits = [0u8; 8];
                let width = leaf.prim.size();
                bits[..width].copy_from_slice(&bytes[leaf.offset..leaf.offset + width]);
                Value::from_bits(leaf.prim, u64::from_le_bytes(bits))
            })
            .collect()
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

/// The stage's policy, named by the stage's name and a hash of its text
/// (no clash with another stage of that name in a program, no C++
/// keyword), registered for the process.
fn register(desc: &StageDesc, declarations: &str) -> (OperatorKey, &'static str, &'static str) {
    let text = ir_text::print_stage(desc) + declarations;
    let snake: String = desc
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let policy = format!("{snake}_{:016x}", scan_core::const_str::fnv1a(&[&text]));
    let source = declarations.to_string()
        + &kernels_gen::join_parts(&stage_source_parts(desc), &policy, &[]);
    registered(&policy, source)
}
