//! Reading and checking the annotated item: an element struct, or a unit
//! marker type that names its element with `element = …`; and the function
//! arguments of the attributes (an operator, a stage's function).

use crate::attr::OpFn;
use kernels_gen::ir::{FieldDesc, FieldType, Prim, StructDesc};
use syn::spanned::Spanned;

/// Several errors, reported together.
#[derive(Default)]
pub struct Errors(Vec<syn::Error>);

impl Errors {
    pub fn push(&mut self, span: impl Spanned, message: impl std::fmt::Display) {
        self.0.push(syn::Error::new(span.span(), message));
    }

    pub fn push_error(&mut self, e: syn::Error) {
        self.0.push(e);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many errors so far (to tell whether a phase added any).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn into_compile_errors(self) -> proc_macro2::TokenStream {
        self.0.into_iter().map(|e| e.to_compile_error()).collect()
    }
}

/// Whether `name` is a C++/CUDA keyword or built-in type name.
fn is_cpp_keyword(name: &str) -> bool {
    CPP_KEYWORDS.contains(&name)
}

/// The CUDA name of an operator's policy struct: its snake-case name, with
/// `_op` after one that is a C++ keyword (`Double` is `double_op`).
pub fn policy_name(ident: &syn::Ident) -> String {
    let name = snake_case(ident);
    if is_cpp_keyword(&name) {
        format!("{name}_op")
    } else {
        name
    }
}

/// Names that cannot be C++ identifiers in the generated code.
pub fn reserved_name(name: &str) -> Option<&'static str> {
    if name.starts_with("scan_") || name.starts_with("__") {
        Some("names starting with `scan_` or `__` are reserved for the generated CUDA code")
    } else if is_cpp_keyword(name) {
        Some("this name is a C++/CUDA keyword or built-in, so it cannot name a variable or field in the generated CUDA code")
    } else {
        None
    }
}

const CPP_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "case",
    "catch",
    "char",
    "class",
    "compl",
    "const_cast",
    "constexpr",
    "decltype",
    "default",
    "delete",
    "double",
    "dynamic_cast",
    "explicit",
    "export",
    "float",
    "friend",
    "goto",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "short",
    "signed",
    "sizeof",
    "static_assert",
    "static_cast",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "xor",
    "xor_eq",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
];

/// What the attribute is on.
pub enum Item {
    /// A `#[repr(C)]`, `Copy` struct with named fields: its own element type.
    Struct {
        ident: syn::Ident,
        desc: StructDesc,
        nested: Vec<syn::Path>,
    },
    /// A unit struct that names its element with `element = …`.
    Marker { ident: syn::Ident },
}

/// Reads the item, pushing every problem found into `errors`.
pub fn read_item(item: &syn::Item, errors: &mut Errors) -> Option<Item> {
    let s = match item {
        syn::Item::Struct(s) => s,
        other => {
            errors.push(
                item_keyword_span(other),
                "#[scan_op] goes on a struct: a `#[repr(C)]` struct with `#[derive(Clone, Copy)]` (its own element \
                 type), or a unit struct with `element = <type>`",
            );
            return None;
        }
    };
    if !s.generics.params.is_empty() || s.generics.where_clause.is_some() {
        errors.push(&s.generics, "scan operators and elements cannot be generic: the CUDA code is generated for one concrete type");
    }
    match &s.fields {
        syn::Fields::Unit => {
            return Some(Item::Marker {
                ident: s.ident.clone(),
            })
        }
        syn::Fields::Unnamed(f) => {
            errors.push(
                f,
                "element structs need named fields (the CUDA struct uses the same names)",
            );
            return None;
        }
        syn::Fields::Named(_) => {}
    }
    check_repr_c_and_copy(s, errors);
    let mut desc = StructDesc {
        name: s.ident.to_string(),
        fields: Vec::new(),
    };
    let mut nested = Vec::new();
    for field in &s.fields {
        let ident = field.ident.as_ref().expect("named fields");
        let name = ident.to_string();
        if let Some(why) = reserved_name(&name) {
            errors.push(ident, format!("field `{name}`: {why}"));
        }
        if let Some(ty) = field_type(&field.ty, errors) {
            if let FieldType::Struct(_) = ty {
                if let syn::Type::Path(p) = &field.ty {
                    nested.push(p.path.clone());
                }
            }
            desc.fields.push(FieldDesc { name, ty });
        }
    }
    if desc.fields.is_empty() && !s.fields.is_empty() {
        return None;
    }
    if s.fields.is_empty() {
        errors.push(&s.ident, "an element struct needs at least one field");
    }
    Some(Item::Struct {
        ident: s.ident.clone(),
        desc,
        nested,
    })
}

fn item_keyword_span(item: &syn::Item) -> proc_macro2::Span {
    match item {
        syn::Item::Enum(e) => e.enum_token.span,
        syn::Item::Union(u) => u.union_token.span,
        syn::Item::Fn(f) => f.sig.fn_token.span,
        other => other.span(),
    }
}

fn check_repr_c_and_copy(s: &syn::ItemStruct, errors: &mut Errors) {
    let mut repr_c = false;
    let mut copy = false;
    for attr in &s.attrs {
        if attr.path().is_ident("repr") {
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("C") {
                    repr_c = true;
                } else {
                    errors.push(
                        &meta.path,
                        "only `#[repr(C)]` is supported: the CUDA struct must have exactly the C layout",
                    );
                }
                Ok(())
            });
        } else if attr.path().is_ident("derive") {
            let _ = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("Copy")
                    || meta.path.segments.last().is_some_and(|s| s.ident == "Copy")
                {
                    copy = true;
                }
                Ok(())
            });
        }
    }
    if !repr_c {
        errors.push(
            &s.ident,
            format!(
                "`{}` needs `#[repr(C)]`: the GPU reads it with the C layout, which Rust only promises under repr(C)",
                s.ident
            ),
        );
    }
    if !copy {
        errors.push(
            &s.ident,
            format!("`{}` needs `#[derive(Clone, Copy)]`: scan elements are plain data copied to and from the GPU", s.ident),
        );
    }
}

const FIELD_TYPES: &str =
    "supported field types: u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bool, fixed-size arrays of \
                           those (`[f32; 4]`), and other #[scan_op] structs";

/// The CUDA counterpart of a field type, or an error on its tokens.
fn field_type(ty: &syn::Type, errors: &mut Errors) -> Option<FieldType> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if !last.arguments.is_empty() {
                errors.push(
                    ty,
                    format!("generic types have no CUDA equivalent; {FIELD_TYPES}"),
                );
                return None;
            }
            let name = last.ident.to_string();
            if p.path.segments.len() == 1 {
                if let Some(prim) = Prim::from_rust_name(&name) {
                    return Some(FieldType::Prim(prim));
                }
                let hint = match name.as_str() {
                    "usize" | "isize" => Some("its width differs between targets; use u64 or i64"),
                    "u128" | "i128" => Some("CUDA has no 128-bit integers; use two u64 fields"),
                    "char" => Some("use u32 for a Unicode scalar value"),
                    "String" | "str" | "Vec" | "Box" | "Rc" | "Arc" | "Option" => {
                        Some("it is not plain data")
                    }
                    _ => None,
                };
                if let Some(hint) = hint {
                    errors.push(
                        ty,
                        format!("`{name}` has no CUDA equivalent ({hint}); {FIELD_TYPES}"),
                    );
                    return None;
                }
            }
            Some(FieldType::Struct(name))
        }
        syn::Type::Array(a) => {
            let elem = match &*a.elem {
                syn::Type::Path(p) if p.qself.is_none() => p
                    .path
                    .get_ident()
                    .and_then(|i| Prim::from_rust_name(&i.to_string())),
                _ => None,
            };
            let len = int_literal::<usize>(&a.len);
            match (elem, len) {
                (Some(p), Some(n)) if n > 0 => Some(FieldType::Array(p, n)),
                (None, _) => {
                    errors.push(
                        &a.elem,
                        format!("array elements must be primitives; {FIELD_TYPES}"),
                    );
                    None
                }
                (_, _) => {
                    errors.push(&a.len, "array lengths must be non-zero integer literals");
                    None
                }
            }
        }
        syn::Type::Reference(_) | syn::Type::Ptr(_) => {
            errors.push(
                ty,
                format!("references and pointers cannot live in GPU elements; {FIELD_TYPES}"),
            );
            None
        }
        _ => {
            errors.push(
                ty,
                format!("this type has no CUDA equivalent; {FIELD_TYPES}"),
            );
            None
        }
    }
}

/// The element type named by `element = …` on a marker.
pub enum ElementRef {
    Prim(Prim),
    Struct(syn::Path),
}

pub fn element_ref(ty: &syn::Type, errors: &mut Errors) -> Option<ElementRef> {
    match ty {
        syn::Type::Path(p)
            if p.qself.is_none()
                && p.path
                    .segments
                    .last()
                    .is_some_and(|s| s.arguments.is_empty()) =>
        {
            if let Some(prim) = p
                .path
                .get_ident()
                .and_then(|i| Prim::from_rust_name(&i.to_string()))
            {
                return Some(ElementRef::Prim(prim));
            }
            Some(ElementRef::Struct(p.path.clone()))
        }
        syn::Type::Array(_) => {
            errors.push(ty, "an array cannot be an element by itself: wrap it in a #[repr(C)] struct annotated with #[scan_op]");
            None
        }
        _ => {
            errors.push(ty, "`element` must be a primitive (u8 … f64, bool) or a struct annotated with #[scan_op]");
            None
        }
    }
}

/// `AffineOp` → `affine_op`.
pub fn snake_case(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if i > 0 && (prev_lower || (next_lower && chars[i - 1].is_uppercase())) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(*c);
        }
    }
    out
}

/// The value of an integer literal expression, seen through the invisible
/// groups `macro_rules!` wraps its `$x:literal` and `$x:expr` fragments in
/// (so that operators generated by a declarative macro take the same
/// literals as written ones); `None` for anything else.
pub(crate) fn int_literal<T: std::str::FromStr>(e: &syn::Expr) -> Option<T>
where
    T::Err: std::fmt::Display,
{
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) => n.base10_parse::<T>().ok(),
        syn::Expr::Group(g) => int_literal(&g.expr),
        _ => None,
    }
}

/// How a function argument of an attribute is described in its errors:
/// the operator of `#[scan_op]`, or a stage's function.
pub struct Signature {
    /// "operator", "map", "predicate".
    pub noun: &'static str,
    /// How many parameters it takes, in words and as a closure.
    pub arity: usize,
    pub takes: &'static str,
    pub closure: &'static str,
    /// Its parameters are plain names (closure and `fn` forms).
    pub plain_closure: &'static str,
    pub plain_fn: &'static str,
    /// What a `fn` without a return type should add.
    pub returns: &'static str,
}

/// `#[scan_op]`'s operator.
pub const OPERATOR: Signature = Signature {
    noun: "operator",
    arity: 2,
    takes: "two elements",
    closure: "`|x, y|`",
    plain_closure: "operands must be plain names (`|x, y|`), not patterns",
    plain_fn: "operands must be plain names, not patterns",
    returns: "the combined element: add `-> <element type>`",
};

/// A function read from an attribute: its parameters (with their types
/// where written), its body, and its return type where written.
pub struct FnParts {
    pub idents: Vec<syn::Ident>,
    pub types: Vec<Option<syn::Type>>,
    pub body: syn::Expr,
    pub return_type: Option<syn::Type>,
}

/// Reads a closure or `fn` of `sig.arity` plain parameters, pushing every
/// problem into `errors`; `None` when the parameters cannot be read.
pub fn read_function(f: &OpFn, sig: &Signature, errors: &mut Errors) -> Option<FnParts> {
    let noun = sig.noun;
    let mut return_type: Option<syn::Type> = None;
    let (idents, types, body) = match f {
        OpFn::Closure(c) => {
            if c.inputs.len() != sig.arity {
                errors.push(
                    &c.inputs,
                    format!(
                        "the {noun} takes {}, {}, not {}",
                        sig.takes,
                        sig.closure,
                        c.inputs.len()
                    ),
                );
                return None;
            }
            let mut idents = Vec::new();
            let mut types = Vec::new();
            for input in &c.inputs {
                let (pat, ty) = match input {
                    syn::Pat::Type(t) => (&*t.pat, Some((*t.ty).clone())),
                    other => (other, None),
                };
                match pat {
                    syn::Pat::Ident(p)
                        if p.by_ref.is_none() && p.mutability.is_none() && p.subpat.is_none() =>
                    {
                        idents.push(p.ident.clone());
                        types.push(ty);
                    }
                    other => errors.push(other, sig.plain_closure),
                }
            }
            if let Some(a) = &c.asyncness {
                errors.push(a, "async closures are not supported");
            }
            (idents, types, (*c.body).clone())
        }
        OpFn::Fn(f) => {
            let fn_sig = &f.sig;
            if !fn_sig.generics.params.is_empty() {
                errors.push(
                    &fn_sig.generics,
                    format!("the {noun} function cannot be generic"),
                );
            }
            if let Some(t) = fn_sig
                .asyncness
                .as_ref()
                .map(|a| a.span())
                .or(fn_sig.unsafety.as_ref().map(|u| u.span()))
            {
                errors.push(t, format!("the {noun} function must be a plain `fn`"));
            }
            if fn_sig.inputs.len() != sig.arity {
                errors.push(
                    &fn_sig.inputs,
                    format!("the {noun} function takes {}", sig.takes),
                );
                return None;
            }
            let mut idents = Vec::new();
            let mut types = Vec::new();
            for input in &fn_sig.inputs {
                match input {
                    syn::FnArg::Typed(t) => match &*t.pat {
                        syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                            idents.push(p.ident.clone());
                            types.push(Some((*t.ty).clone()));
                        }
                        other => errors.push(other, sig.plain_fn),
                    },
                    syn::FnArg::Receiver(r) => errors.push(
                        r,
                        format!("the {noun} function takes {}, not `self`", sig.takes),
                    ),
                }
            }
            match &fn_sig.output {
                syn::ReturnType::Default => errors.push(
                    fn_sig.paren_token.span.close(),
                    format!("the {noun} function returns {}", sig.returns),
                ),
                syn::ReturnType::Type(_, ty) => return_type = Some((**ty).clone()),
            }
            let block = syn::Expr::Block(syn::ExprBlock {
                attrs: vec![],
                label: None,
                block: (*f.block).clone(),
            });
            (idents, types, block)
        }
    };
    (idents.len() == sig.arity).then_some(FnParts {
        idents,
        types,
        body,
        return_type,
    })
}
