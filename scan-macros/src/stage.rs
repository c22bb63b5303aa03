//! `#[scan_map]`, `#[scan_predicate]` and `#[scan_equality]`: a load or
//! store stage, a function of one element (an equality: of two neighbours)
//! on a unit struct that names it. The function is read and
//! translated as an operator's is (`ast::read_function`, `translate`,
//! `rewrite`); the output is the struct, the errors, and the stage's trait
//! implementation with its CUDA policy (`kernels_gen::stage`). On errors a
//! stub implementation keeps code that uses the stage type-checking, as
//! `#[scan_op]` does.

use crate::ast::{self, ElementRef, Errors, Signature};
use crate::attr::StageArgs;
use crate::rewrite::Rewriter;
use crate::translate::Translator;
use kernels_gen::ir::{Block, ElementType, Prim};
use kernels_gen::stage::{StageDesc, StageKind};
use kernels_gen::Part;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// What distinguishes the two attributes.
struct Kind {
    kind: StageKind,
    attribute: &'static str,
    /// The type arguments: `input` and `output`, or `element`.
    type_keys: &'static [&'static str],
    function_key: &'static str,
    signature: Signature,
}

const MAP: Kind = Kind {
    kind: StageKind::Map,
    attribute: "scan_map",
    type_keys: &["input", "output"],
    function_key: "map",
    signature: Signature {
        noun: "map",
        arity: 1,
        takes: "one element",
        closure: "`|x|`",
        plain_closure: "the parameter must be a plain name (`|x|`), not a pattern",
        plain_fn: "the parameter must be a plain name, not a pattern",
        returns: "the mapped element: add `-> <output type>`",
    },
};

const PREDICATE: Kind = Kind {
    kind: StageKind::Predicate,
    attribute: "scan_predicate",
    type_keys: &["element"],
    function_key: "keep",
    signature: Signature {
        noun: "predicate",
        arity: 1,
        takes: "one element",
        closure: "`|x|`",
        plain_closure: "the parameter must be a plain name (`|x|`), not a pattern",
        plain_fn: "the parameter must be a plain name, not a pattern",
        returns: "whether the element is kept: add `-> bool`",
    },
};

const EQUALITY: Kind = Kind {
    kind: StageKind::Equality,
    attribute: "scan_equality",
    type_keys: &["element"],
    function_key: "eq",
    signature: Signature {
        noun: "equality",
        arity: 2,
        takes: "two elements",
        closure: "`|a, b|`",
        plain_closure: "the parameters must be plain names (`|a, b|`), not patterns",
        plain_fn: "the parameters must be plain names, not patterns",
        returns: "whether the two are in one run: add `-> bool`",
    },
};

pub fn scan_equality(args: TokenStream, item: TokenStream) -> TokenStream {
    stage(&EQUALITY, args, item)
}

pub fn scan_map(args: TokenStream, item: TokenStream) -> TokenStream {
    stage(&MAP, args, item)
}

pub fn scan_predicate(args: TokenStream, item: TokenStream) -> TokenStream {
    stage(&PREDICATE, args, item)
}

fn stage(kind: &Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let item: syn::Item = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let generated = match StageArgs::parse(args, kind.type_keys, kind.function_key) {
        Ok(args) => expand(kind, &item, &args, &mut errors),
        Err(e) => {
            errors.push_error(e);
            TokenStream::new()
        }
    };
    crate::expand::output(&item, errors, generated)
}

/// A type argument: its tokens and the generator's view of it.
pub(crate) struct StageTy {
    pub(crate) tokens: syn::Type,
    pub(crate) ty: ElementType,
}

/// The type argument `key` (a primitive or a `#[scan_op]` struct), or an
/// error on the item's name saying it is missing.
pub(crate) fn stage_type(
    args: &StageArgs,
    key: &str,
    ident: &syn::Ident,
    errors: &mut Errors,
) -> Option<StageTy> {
    let Some(ty) = args.ty(key) else {
        errors.push(
            ident,
            format!("missing `{key} = <type>` (a primitive or a #[scan_op] struct)"),
        );
        return None;
    };
    let view = match ast::element_ref(ty, errors)? {
        ElementRef::Prim(p) => ElementType::Prim(p),
        ElementRef::Struct(path) => ElementType::Struct(quote!(#path).to_string()),
    };
    Some(StageTy {
        tokens: ty.clone(),
        ty: view,
    })
}

fn expand(kind: &Kind, item: &syn::Item, args: &StageArgs, errors: &mut Errors) -> TokenStream {
    let krate = match &args.krate {
        Some(p) => quote!(#p),
        None => quote!(::gpu_scan),
    };
    let private = quote!(#krate::__private);
    let Some(ident) = unit_struct_ident(kind.attribute, item, errors) else {
        return TokenStream::new();
    };
    let (input, output) = match kind.kind {
        StageKind::Map => (
            stage_type(args, "input", &ident, errors),
            stage_type(args, "output", &ident, errors),
        ),
        StageKind::Predicate | StageKind::Equality => (
            stage_type(args, "element", &ident, errors),
            Some(StageTy {
                tokens: syn::parse_quote!(bool),
                ty: ElementType::Prim(Prim::Bool),
            }),
        ),
    };
    let (Some(input), Some(output)) = (input, output) else {
        return TokenStream::new();
    };
    let Some(function) = &args.function else {
        errors.push(
            &ident,
            format!(
                "missing `{} = |x| …`: the stage's function",
                kind.function_key
            ),
        );
        return stub(kind, &private, &ident, &input, &output);
    };
    let before = errors.len();
    let parts = ast::read_function(function, &kind.signature, errors);
    let translated = parts.as_ref().and_then(|parts| {
        let mut translator = Translator::new(errors, None, false);
        let params: Vec<String> = parts.idents.iter().map(|i| translator.bind(i)).collect();
        let body = match &parts.body {
            syn::Expr::Block(b) if b.label.is_none() => translator.block(&b.block),
            other => translator.expr(other).map(|value| Block {
                lets: vec![],
                value,
            }),
        }?;
        Some((params, body))
    });
    let (Some(parts), Some((params, body)), true) = (parts, translated, errors.len() == before)
    else {
        return stub(kind, &private, &ident, &input, &output);
    };
    let desc = StageDesc {
        name: ast::snake_case(&ident),
        kind: kind.kind,
        params,
        input: input.ty.clone(),
        output: output.ty.clone(),
        body,
    };
    implementation(kind, &private, &ident, &input, &output, &desc, parts)
}

/// The name of the unit struct `item` that `#[attribute]` annotates, or
/// the error saying it must be one (generics are an error too).
pub(crate) fn unit_struct_ident(
    attribute: &str,
    item: &syn::Item,
    errors: &mut Errors,
) -> Option<syn::Ident> {
    match item {
        syn::Item::Struct(s) if matches!(s.fields, syn::Fields::Unit) => {
            if !s.generics.params.is_empty() || s.generics.where_clause.is_some() {
                errors.push(
                    &s.generics,
                    "stages cannot be generic: the CUDA code is generated for one concrete type",
                );
            }
            Some(s.ident.clone())
        }
        syn::Item::Struct(s) => {
            errors.push(
                &s.fields,
                format!(
                    "#[{attribute}] goes on a unit struct (`struct {};`), which names the stage",
                    s.ident
                ),
            );
            None
        }
        _ => {
            errors.push(
                item,
                format!(
                    "#[{attribute}] goes on a unit struct (`struct Name;`), which names the stage"
                ),
            );
            None
        }
    }
}

fn implementation(
    kind: &Kind,
    private: &TokenStream,
    ident: &syn::Ident,
    input: &StageTy,
    output: &StageTy,
    desc: &StageDesc,
    parts: ast::FnParts,
) -> TokenStream {
    let (in_ty, out_ty) = (&input.tokens, &output.tokens);
    let (snake, rust_name) = (&desc.name, ident.to_string());
    let (trait_, types, function) = match kind.kind {
        StageKind::Map => (
            quote!(#private::stages::ScanMap),
            quote!(type Input = #in_ty; type Output = #out_ty;),
            quote!(apply),
        ),
        StageKind::Predicate => (
            quote!(#private::stages::ScanPredicate),
            quote!(type Element = #in_ty;),
            quote!(keep),
        ),
        StageKind::Equality => (
            quote!(#private::stages::ScanEquality),
            quote!(type Element = #in_ty;),
            quote!(equal),
        ),
    };
    let stage_ir = kernels_gen::ir_text::print_stage(desc);
    let policy = quote!(<#ident as #trait_>::NAME);
    let source = source_tokens(
        kernels_gen::stage::stage_source_parts(desc),
        private,
        &policy,
    );
    // The Rust side: the same body with the CUDA side's integer semantics,
    // the written types checked on the user's tokens.
    let semantics = quote!(#private::semantics);
    let mut body = parts.body;
    Rewriter {
        semantics: &semantics,
    }
    .visit_expr_mut(&mut body);
    let idents = &parts.idents;
    let param_checks = parts.types.iter().zip(idents).filter_map(|(ty, x)| {
        ty.as_ref().map(|ty| {
            quote_spanned! {ty.span()=>
                let #x: #ty = #x;
            }
        })
    });
    let return_check = parts.return_type.map(|ty| {
        quote_spanned! {ty.span()=>
            let _: ::core::marker::PhantomData<#ty> = ::core::marker::PhantomData::<#out_ty>;
        }
    });
    quote! {
        impl #trait_ for #ident {
            #types
            // The Rust name and a hash of the module path (as element
            // structs' CUDA names): no clash, no C++ keyword.
            const NAME: &'static str = {
                const HASH: [u8; 16] = #private::const_str::hex16(#private::const_str::fnv1a(&[
                    ::core::module_path!(),
                    "::",
                    #rust_name,
                ]));
                #private::concat_const!(#snake, "_", #private::const_str::utf8(&HASH))
            };
            const CUDA_SOURCE: &'static str = #private::concat_const!(
                <#in_ty as #private::ScanElement>::CUDA_DECL,
                <#out_ty as #private::ScanElement>::CUDA_DECL,
                #(#source),*
            );
            const STAGE_IR: &'static str = #stage_ir;
            #[inline]
            #[allow(unused_parens, unused_braces, clippy::all)]
            fn #function(#(#idents: #in_ty),*) -> #out_ty {
                #(#param_checks)*
                #return_check
                #body
            }
        }
    }
}

/// A stage's CUDA source parts as the tokens of its `CUDA_SOURCE`: struct
/// types named by their `ScanElement` CUDA names, the policy by `name`.
pub(crate) fn source_tokens<'a>(
    parts: Vec<Part>,
    private: &'a TokenStream,
    name: &'a TokenStream,
) -> impl Iterator<Item = TokenStream> + 'a {
    parts.into_iter().map(move |part| match part {
        Part::Text(t) => quote!(#t),
        Part::Named(path) => match syn::parse_str::<syn::Path>(&path) {
            Ok(p) => quote!(<#p as #private::ScanElement>::CUDA_TYPE),
            Err(e) => e.to_compile_error(),
        },
        Part::Element => name.clone(),
        Part::Field(_) => unreachable!("a stage names its types by path"),
    })
}

/// The trait implementation without a function, after errors (never run:
/// the crate does not compile).
fn stub(
    kind: &Kind,
    private: &TokenStream,
    ident: &syn::Ident,
    input: &StageTy,
    output: &StageTy,
) -> TokenStream {
    let (in_ty, out_ty) = (&input.tokens, &output.tokens);
    let name = ast::snake_case(ident);
    let attribute = kind.attribute;
    let message = format!("#[{attribute}] could not implement this stage: see its errors");
    match kind.kind {
        StageKind::Map => quote! {
            impl #private::stages::ScanMap for #ident {
                type Input = #in_ty;
                type Output = #out_ty;
                const NAME: &'static str = #name;
                const CUDA_SOURCE: &'static str = "";
                const STAGE_IR: &'static str = "";
                fn apply(_: #in_ty) -> #out_ty {
                    ::core::unreachable!(#message)
                }
            }
        },
        StageKind::Predicate => quote! {
            impl #private::stages::ScanPredicate for #ident {
                type Element = #in_ty;
                const NAME: &'static str = #name;
                const CUDA_SOURCE: &'static str = "";
                const STAGE_IR: &'static str = "";
                fn keep(_: #in_ty) -> bool {
                    ::core::unreachable!(#message)
                }
            }
        },
        StageKind::Equality => quote! {
            impl #private::stages::ScanEquality for #ident {
                type Element = #in_ty;
                const NAME: &'static str = #name;
                const CUDA_SOURCE: &'static str = "";
                const STAGE_IR: &'static str = "";
                fn equal(_: #in_ty, _: #in_ty) -> bool {
                    ::core::unreachable!(#message)
                }
            }
        },
    }
}
