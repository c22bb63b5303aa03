//! `#[sort_key]`: a record's key for sorting, a function of the record on a
//! unit struct that names it, giving one primitive or a tuple of them
//! (compared most significant first). The function is read and translated
//! as a stage's is (`ast::read_function`, `translate`, `rewrite`), one
//! component at a time; the output is the struct, the errors, and the
//! `SortKey` implementation with its CUDA policy
//! (`kernels_gen::stage::sort_key_source_parts`). On errors a stub keeps
//! code that uses the key type-checking.

use crate::ast::{self, ElementRef, Errors, Signature};
use crate::attr::StageArgs;
use crate::rewrite::Rewriter;
use crate::stage::{source_tokens, stage_type, unit_struct_ident, StageTy};
use crate::translate::Translator;
use kernels_gen::ir::{Block, Prim};
use kernels_gen::stage::SortKeyDesc;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

const ATTRIBUTE: &str = "sort_key";

const SIGNATURE: Signature = Signature {
    noun: "sort key",
    arity: 1,
    takes: "one record",
    closure: "`|r|`",
    plain_closure: "the parameter must be a plain name (`|r|`), not a pattern",
    plain_fn: "the parameter must be a plain name, not a pattern",
    returns: "the key: add `-> <key type>`",
};

/// The most components a key may have (the tuples `CompositeKey` takes).
const MOST_COMPONENTS: usize = 4;

pub fn sort_key(args: TokenStream, item: TokenStream) -> TokenStream {
    let item: syn::Item = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let generated = match StageArgs::parse(args, &["record", "key"], "by") {
        Ok(args) => expand(&item, &args, &mut errors),
        Err(e) => {
            errors.push_error(e);
            TokenStream::new()
        }
    };
    crate::expand::output(&item, errors, generated)
}

/// A key's components, read from `key = T` or `key = (T, U, …)`: each a
/// numeric primitive.
fn components(key: &syn::Type, errors: &mut Errors) -> Option<Vec<Prim>> {
    let types: Vec<&syn::Type> = match key {
        syn::Type::Tuple(t) if t.elems.is_empty() => {
            errors.push(key, "a sort key has a component at least: `key = u32`, say");
            return None;
        }
        syn::Type::Tuple(t) => t.elems.iter().collect(),
        syn::Type::Paren(p) => vec![&*p.elem],
        other => vec![other],
    };
    if types.len() > MOST_COMPONENTS {
        errors.push(
            key,
            format!("a sort key has at most {MOST_COMPONENTS} components"),
        );
        return None;
    }
    let before = errors.len();
    let mut prims = Vec::new();
    for ty in types {
        match ast::element_ref(ty, errors)? {
            ElementRef::Prim(Prim::Bool) => {
                errors.push(ty, "`bool` is not a sort key: use `u8` (0 and 1)");
            }
            ElementRef::Prim(p) => prims.push(p),
            ElementRef::Struct(_) => errors.push(
                ty,
                "a sort key's components are integers or floats: give a struct's fields as a tuple, most significant first",
            ),
        }
    }
    (errors.len() == before).then_some(prims)
}

/// A key function's body split into its components: the tuple it ends in
/// (as the body, or as a block's last expression after its `let`s), or
/// the body itself for a key of one component.
enum Components<'a> {
    One(&'a syn::Expr),
    Tuple(Vec<syn::Expr>),
    Block(&'a syn::Block, Vec<syn::Expr>),
}

/// `body` split into `count` components, or an error on it.
fn split_body<'a>(
    body: &'a syn::Expr,
    count: usize,
    errors: &mut Errors,
) -> Option<Components<'a>> {
    if count == 1 {
        return Some(Components::One(body));
    }
    let tuple = |e: &syn::Expr| match e {
        syn::Expr::Tuple(t) if t.elems.len() == count => {
            Some(t.elems.iter().cloned().collect::<Vec<_>>())
        }
        _ => None,
    };
    let split = match body {
        syn::Expr::Block(b) if b.label.is_none() => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(tail, None)) => {
                tuple(tail).map(|values| Components::Block(&b.block, values))
            }
            _ => None,
        },
        other => tuple(other).map(Components::Tuple),
    };
    if split.is_none() {
        errors.push(
            body,
            format!("the key has {count} components: the sort key must give a tuple of {count}, most significant first"),
        );
    }
    split
}

fn expand(item: &syn::Item, args: &StageArgs, errors: &mut Errors) -> TokenStream {
    let krate = match &args.krate {
        Some(p) => quote!(#p),
        None => quote!(::gpu_scan),
    };
    let private = quote!(#krate::__private);
    let Some(ident) = unit_struct_ident(ATTRIBUTE, item, errors) else {
        return TokenStream::new();
    };
    let record = stage_type(args, "record", &ident, errors);
    let Some(key) = args.ty("key") else {
        errors.push(
            &ident,
            "missing `key = <type>` (a primitive, or a tuple of them most significant first)",
        );
        return TokenStream::new();
    };
    let (Some(record), Some(prims)) = (record, components(key, errors)) else {
        return TokenStream::new();
    };
    let Some(function) = &args.function else {
        errors.push(
            &ident,
            "missing `by = |r| …`: the function giving a record's key",
        );
        return stub(&private, &ident, &record, key);
    };
    let before = errors.len();
    let parts = ast::read_function(function, &SIGNATURE, errors);
    let translated = parts.as_ref().and_then(|parts| {
        let split = split_body(&parts.body, prims.len(), errors)?;
        let mut translator = Translator::new(errors, None, false);
        let param = translator.bind(&parts.idents[0]);
        let value = |value| Block {
            lets: vec![],
            value,
        };
        let bodies: Vec<Block> = match split {
            Components::One(syn::Expr::Block(b)) if b.label.is_none() => {
                vec![translator.block(&b.block)?]
            }
            Components::One(other) => vec![value(translator.expr(other)?)],
            Components::Tuple(values) => {
                let translated: Vec<Option<_>> =
                    values.iter().map(|v| translator.expr(v)).collect();
                translated
                    .into_iter()
                    .map(|t| t.map(value))
                    .collect::<Option<Vec<_>>>()?
            }
            Components::Block(block, values) => translator.block_values(block, &values)?,
        };
        Some((param, prims.iter().copied().zip(bodies).collect::<Vec<_>>()))
    });
    let (Some(parts), Some((param, components)), true) =
        (parts, translated, errors.len() == before)
    else {
        return stub(&private, &ident, &record, key);
    };
    let desc = SortKeyDesc {
        name: ast::snake_case(&ident),
        param,
        record: record.ty.clone(),
        components,
    };
    implementation(&private, &ident, &record, key, &desc, parts)
}

fn implementation(
    private: &TokenStream,
    ident: &syn::Ident,
    record: &StageTy,
    key: &syn::Type,
    desc: &SortKeyDesc,
    parts: ast::FnParts,
) -> TokenStream {
    let record_ty = &record.tokens;
    let (snake, rust_name) = (&desc.name, ident.to_string());
    let trait_ = quote!(#private::sort::SortKey);
    let policy = quote!(<#ident as #trait_>::NAME);
    let sort_key_ir = kernels_gen::ir_text::print_sort_key(desc);
    let source = source_tokens(
        kernels_gen::stage::sort_key_source_parts(desc),
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
    let x = &parts.idents[0];
    let param_check = parts.types[0].as_ref().map(|ty| {
        quote_spanned! {ty.span()=>
            let #x: #ty = #x;
        }
    });
    let return_check = parts.return_type.map(|ty| {
        quote_spanned! {ty.span()=>
            let _: ::core::marker::PhantomData<#ty> = ::core::marker::PhantomData::<#key>;
        }
    });
    quote! {
        impl #trait_ for #ident {
            type Record = #record_ty;
            type Key = #key;
            // The Rust name and a hash of the module path (as stages'):
            // no clash, no C++ keyword.
            const NAME: &'static str = {
                const HASH: [u8; 16] = #private::const_str::hex16(#private::const_str::fnv1a(&[
                    ::core::module_path!(),
                    "::",
                    #rust_name,
                ]));
                #private::concat_const!(#snake, "_", #private::const_str::utf8(&HASH))
            };
            const CUDA_SOURCE: &'static str = #private::concat_const!(
                <#record_ty as #private::ScanElement>::CUDA_DECL,
                #(#source),*
            );
            const SORT_KEY_IR: &'static str = #sort_key_ir;
            #[inline]
            #[allow(unused_parens, unused_braces, clippy::all)]
            fn key(#x: #record_ty) -> #key {
                #param_check
                #return_check
                #body
            }
        }
    }
}

/// The implementation without a function, after errors (never run: the
/// crate does not compile).
fn stub(
    private: &TokenStream,
    ident: &syn::Ident,
    record: &StageTy,
    key: &syn::Type,
) -> TokenStream {
    let record_ty = &record.tokens;
    let name = ast::snake_case(ident);
    quote! {
        impl #private::sort::SortKey for #ident {
            type Record = #record_ty;
            type Key = #key;
            const NAME: &'static str = #name;
            const CUDA_SOURCE: &'static str = "";
            const SORT_KEY_IR: &'static str = "";
            fn key(_: #record_ty) -> #key {
                ::core::unreachable!("#[sort_key] could not implement this key: see its errors")
            }
        }
    }
}
