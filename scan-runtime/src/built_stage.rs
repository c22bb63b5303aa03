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
use kernels_gen::ir::{ElementType, Prim};
use kernels_gen::ir_text;
use kernels_gen::stage::{stage_source_parts, StageDesc, StageKind};

/// A predicate or an equality over a primitive element, read from its text
/// at run time: the [`ScanPredicate`](scan_core::stages::ScanPredicate) or
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
/// let third = DynStage::from_text(<Third as ScanPredicate>::STAGE_IR)?;
/// assert_eq!((third.element_size(), third.keeps(&9u32.to_le_bytes())), (4, true));
/// assert!(!third.keeps(&10u32.to_le_bytes()));
/// assert!(matches!(DynStage::from_text("(stage"), Err(ScanError::InvalidOperator(_))));
/// # Ok::<(), ScanError>(())
/// ```
#[derive(Clone)]
pub struct DynStage {
    kind: StageKind,
    element: Prim,
    /// The kernels' memory-cache key, and the policy's process-lived CUDA
    /// name and source ([`registered`]).
    key: OperatorKey,
    name: &'static str,
    source: &'static str,
    /// The checked function, compiled for the host.
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
    /// Reads `text` (a predicate or an equality, `ir_text::print_stage`),
    /// checks it and writes its CUDA. [`ScanError::InvalidOperator`] says
    /// what is wrong: a text that does not parse, a body rustc would
    /// reject, a map (compactions take predicates and equalities), or an
    /// element that is a struct (not built at run time yet). No GPU is
    /// needed.
    pub fn from_text(text: &str) -> Result<Self> {
        let refuse = |m: String| ScanError::InvalidOperator(m);
        let desc = ir_text::parse_stage(text).map_err(|e| refuse(e.to_string()))?;
        if desc.kind == StageKind::Map {
            return Err(refuse(format!(
                "stage `{}`: a map; a compaction takes a predicate or an equality",
                desc.name
            )));
        }
        let ElementType::Prim(element) = desc.input else {
            return Err(refuse(format!(
                "stage `{}`: an element struct is not built at run time yet; primitive elements are",
                desc.name
            )));
        };
        let host = StageValues::new(&desc)
            .map_err(|e| refuse(e.to_string()))?
            .compiled();
        let (key, name, source) = register(&desc);
        Ok(DynStage {
            kind: desc.kind,
            element,
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

    /// The element's type.
    pub fn element(&self) -> Prim {
        self.element
    }

    /// The element's size in bytes.
    pub fn element_size(&self) -> usize {
        self.element.size()
    }

    /// The element's alignment (its size: a primitive).
    pub fn element_align(&self) -> usize {
        self.element.size()
    }

    /// The predicate of the element in `bytes` (little-endian) on the
    /// host, as the kernels judge it. Panics where `bytes` is not one
    /// element or this is an equality.
    pub fn keeps(&self, bytes: &[u8]) -> bool {
        assert_eq!(self.kind, StageKind::Predicate, "a predicate's function");
        self.host.apply(&[self.value(bytes)]) == Value::Bool(true)
    }

    /// The equality of the elements in `a` and `b` on the host. Panics
    /// where either is not one element or this is a predicate.
    pub fn equal(&self, a: &[u8], b: &[u8]) -> bool {
        assert_eq!(self.kind, StageKind::Equality, "an equality's function");
        self.host.apply(&[self.value(a), self.value(b)]) == Value::Bool(true)
    }

    /// The host's compiled function (values of [`DynStage::element`]).
    pub fn host(&self) -> &CompiledStage {
        &self.host
    }

    fn value(&self, bytes: &[u8]) -> Value {
        assert_eq!(bytes.len(), self.element_size(), "one element's bytes");
        let mut bits = [0u8; 8];
        bits[..bytes.len()].copy_from_slice(bytes);
        Value::from_bits(self.element, u64::from_le_bytes(bits))
    }

    pub(crate) fn key(&self) -> OperatorKey {
        self.key
    }

    /// The stage's CUDA policy name: its name and a hash of its text.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The stage's part of a CUDA program: the policy struct the macros
    /// write for its twin, under [`DynStage::name`].
    pub fn cuda_source(&self) -> &'static str {
        self.source
    }
}

/// The stage's policy, named by the stage's name and a hash of its text
/// (no clash with another stage of that name in a program, no C++
/// keyword), registered for the process.
fn register(desc: &StageDesc) -> (OperatorKey, &'static str, &'static str) {
    let text = ir_text::print_stage(desc);
    let snake: String = desc
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let policy = format!("{snake}_{:016x}", scan_core::const_str::fnv1a(&[&text]));
    let source = kernels_gen::join_parts(&stage_source_parts(desc), &policy, &[]);
    registered(&policy, source)
}
