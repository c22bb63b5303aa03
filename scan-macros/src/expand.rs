//! Writing the output: the user's item, then, in one `const _: () = { … };`,
//! the `ScanElement` / `ScanOp` implementations and the embedded CUDA program.
//!
//! On errors the output is the user's item, the errors, and whatever
//! implementations can still be written without new errors (as thiserror
//! does): the element's impls when the struct itself is fine, and a stub
//! `ScanOp` impl when the element type is known. Code that uses the type
//! then type-checks, so the user sees the macro's errors and no second
//! wave of "trait not implemented" ones. The stub is never run: the crate
//! does not compile.

use crate::ast::{self, ElementRef, Errors, Item};
use crate::attr::Args;
use crate::rewrite::Rewriter;
use crate::translate::Translator;
use kernels_gen::ir::{Block, ElementType, OpDesc};
use kernels_gen::{GenParams, ItemsPerThread, Part};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

pub fn scan_op(args: TokenStream, item: TokenStream) -> TokenStream {
    let item: syn::Item = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let args = match Args::parse(args) {
        Ok(a) => Some(a),
        Err(e) => {
            errors.push_error(e);
            None
        }
    };
    let generated = expand(&item, args.as_ref(), &mut errors);
    output(&item, errors, generated)
}

/// An attribute's whole output: the user's item as written, the errors, and
/// the generated implementations in an unnamed constant.
pub fn output(item: &syn::Item, errors: Errors, generated: TokenStream) -> TokenStream {
    let errors = errors.into_compile_errors();
    quote! {
        #item
        #errors
        #[doc(hidden)]
        #[allow(clippy::all, unused_qualifications, non_upper_case_globals)]
        const _: () = { #generated };
    }
}

/// The parts of an operator, translated.
struct Operator {
    element_ty: TokenStream,
    identity: syn::Expr,
    desc: OpDesc,
    combine_fn: TokenStream,
    params: GenParams,
}

/// The implementations: all of them when `errors` stays empty, else those
/// that can be written without causing errors of their own (see the module
/// documentation). `args` is `None` when the attribute did not parse.
fn expand(item: &syn::Item, args: Option<&Args>, errors: &mut Errors) -> TokenStream {
    let krate = match args.and_then(|a| a.krate.as_ref()) {
        Some(p) => quote!(#p),
        None => quote!(::gpu_scan),
    };
    let private = quote!(#krate::__private);
    let before = errors.len();
    let Some(read) = ast::read_item(item, errors) else {
        return TokenStream::new();
    };
    let element_ok = errors.len() == before;
    let ident = match &read {
        Item::Struct { ident, .. } | Item::Marker { ident } => ident.clone(),
    };
    let mut out = TokenStream::new();

    if let Item::Struct {
        ident,
        desc,
        nested,
    } = &read
    {
        if let Some(ty) = args.and_then(|a| a.element.as_ref()) {
            errors.push(
                ty,
                "`element` is only for unit marker types: an annotated struct is its own element",
            );
        }
        if element_ok {
            out.extend(element_impls(&private, ident, desc, nested));
        }
    }
    let Some(args) = args else {
        return out;
    };

    let wants_op =
        args.identity.is_some() || args.op.is_some() || matches!(read, Item::Marker { .. });
    if wants_op {
        let op = operator(&private, &read, args, errors);
        match op {
            Some(op) if errors.is_empty() => {
                let commutative = args.commutative.as_ref().is_some_and(|b| b.value);
                out.extend(op_impl(&private, &ident, op, commutative))
            }
            _ => {
                // The stub needs an element type that is itself fine.
                let element_ty = match &read {
                    Item::Struct { .. } => element_ok.then(|| quote!(#ident)),
                    Item::Marker { .. } => args.element.as_ref().and_then(|ty| {
                        ast::element_ref(ty, &mut Errors::default()).map(|_| quote!(#ty))
                    }),
                };
                if let Some(element_ty) = element_ty {
                    out.extend(op_stub(&private, &ident, &element_ty));
                }
            }
        }
    } else if args.block_threads.is_some() || args.items_per_thread.is_some() {
        errors.push(
            &ident,
            "tile parameters need an operator (`identity` and `op`)",
        );
    } else if let Some(commutative) = &args.commutative {
        errors.push(
            commutative,
            "`commutative` needs an operator (`identity` and `op`)",
        );
    }
    out
}

/// A `ScanOp` impl that type-checks and does nothing, for an operator that
/// failed: uses of the type compile, so only the macro's errors show.
fn op_stub(private: &TokenStream, ident: &syn::Ident, element_ty: &TokenStream) -> TokenStream {
    let name = ast::policy_name(ident);
    quote! {
        impl #private::ScanOp for #ident {
            type Element = #element_ty;
            const NAME: &'static str = #name;
            // SAFETY: an element is a primitive or a struct of them (the
            // element's own checks passed), for which all-zero bits are valid.
            const IDENTITY: #element_ty = unsafe { ::core::mem::zeroed() };
            const CUDA_SOURCE: &'static str = "";
            const BLOCK_THREADS: u32 = 0;
            const ITEMS_PER_THREAD: u32 = 0;
            fn combine(_: #element_ty, _: #element_ty) -> #element_ty {
                ::core::unreachable!("#[scan_op] could not implement this operator: see its errors")
            }
        }
    }
}

fn element_impls(
    private: &TokenStream,
    ident: &syn::Ident,
    desc: &kernels_gen::ir::StructDesc,
    nested: &[syn::Path],
) -> TokenStream {
    let name = ident.to_string();
    let struct_ir = kernels_gen::ir_text::print_struct(desc);
    let own_cuda_type = quote!(<#ident as #private::ScanElement>::CUDA_TYPE);
    let own_decl = kernels_gen::struct_declaration_parts(desc)
        .into_iter()
        .map(|part| match part {
            Part::Text(t) => quote!(#t),
            Part::Element => own_cuda_type.clone(),
            Part::Field(k) => {
                let p = &nested[k];
                quote!(<#p as #private::ScanElement>::CUDA_TYPE)
            }
            Part::Named(_) => unreachable!("a struct declaration names its fields' types"),
        });
    let nested_decls = nested
        .iter()
        .map(|p| quote!(<#p as #private::ScanElement>::CUDA_DECL));
    // The fields' registers: primitives and arrays counted here, nested
    // structs by their own impls (in field order, as `nested` is).
    let mut nested_paths = nested.iter();
    let registers = desc.fields.iter().map(|field| match field.ty.registers() {
        Some(r) => quote!(#r),
        None => {
            let p = nested_paths.next().expect("a path for every nested struct");
            quote!(<#p as #private::ScanElement>::REGISTERS)
        }
    });
    // The widest scalar: primitives and arrays by their type, nested
    // structs by their own impls.
    let mut nested_paths = nested.iter();
    let scalar_registers = desc.fields.iter().map(|field| match &field.ty {
        kernels_gen::ir::FieldType::Prim(p) | kernels_gen::ir::FieldType::Array(p, _) => {
            let r = p.registers();
            quote!(#r)
        }
        kernels_gen::ir::FieldType::Struct(_) => {
            let p = nested_paths.next().expect("a path for every nested struct");
            quote!(<#p as #private::ScanElement>::SCALAR_REGISTERS)
        }
    });
    let lanes = desc.fields.iter().map(|field| {
        let name = quote::format_ident!("{}", field.name);
        match field.ty {
            kernels_gen::ir::FieldType::Array(..) => quote! {
                for lane in self.#name.iter() {
                    #private::ScanElement::for_each_lane(lane, visit);
                }
            },
            _ => quote!(#private::ScanElement::for_each_lane(&self.#name, visit);),
        }
    });
    quote! {
        // SAFETY: #[scan_op] checked that the struct is #[repr(C)] and Copy and that every
        // field has a CUDA type of the same layout; CUDA_DECL declares the same fields in
        // the same order, so the C layout rules give the same offsets on both sides.
        unsafe impl #private::ScanElement for #ident {
            // The Rust name and a hash of the module path: two modules'
            // same-named structs get different CUDA names.
            const CUDA_TYPE: &'static str = {
                const HASH: [u8; 16] = #private::const_str::hex16(#private::const_str::fnv1a(&[
                    ::core::module_path!(),
                    "::",
                    #name,
                ]));
                #private::concat_const!(#name, "_", #private::const_str::utf8(&HASH))
            };
            const CUDA_DECL: &'static str = #private::concat_const!(#(#nested_decls,)* #(#own_decl),*);
            const REGISTERS: usize = 0 #(+ #registers)*;
            const SCALAR_REGISTERS: usize = {
                let mut widest = 1;
                #(
                    let r: usize = #scalar_registers;
                    if r > widest {
                        widest = r;
                    }
                )*
                widest
            };
            const STRUCT_IR: &'static str = #struct_ir;
            fn for_each_lane(&self, visit: &mut dyn ::core::ops::FnMut(#private::laws::Lane)) {
                #(#lanes)*
            }
        }
        // cudarc's `DeviceRepr` and `ValidAsZeroBits` (with the `gpu` feature).
        #private::device_repr!(#ident);
    }
}

fn operator(
    private: &TokenStream,
    read: &Item,
    args: &Args,
    errors: &mut Errors,
) -> Option<Operator> {
    let (element_ty, element, element_name, self_allowed) = match read {
        Item::Struct { ident, .. } => (
            quote!(#ident),
            ElementType::Struct(ident.to_string()),
            Some(ident.to_string()),
            true,
        ),
        Item::Marker { ident } => {
            let Some(ty) = &args.element else {
                errors.push(ident, "a unit marker type needs `element = <type>` (a primitive or a #[scan_op] struct)");
                return None;
            };
            match ast::element_ref(ty, errors)? {
                ElementRef::Prim(p) => (quote!(#ty), ElementType::Prim(p), None, false),
                ElementRef::Struct(path) => {
                    let name = path
                        .segments
                        .last()
                        .expect("a path has a segment")
                        .ident
                        .to_string();
                    (
                        quote!(#ty),
                        ElementType::Struct(name.clone()),
                        Some(name),
                        false,
                    )
                }
            }
        }
    };
    let ident = match read {
        Item::Struct { ident, .. } | Item::Marker { ident } => ident,
    };
    let Some(identity) = &args.identity else {
        errors.push(
            ident,
            "missing `identity = <expr>`: the element e with e ∘ x == x ∘ e == x",
        );
        return None;
    };
    let Some(op) = &args.op else {
        errors.push(ident, "missing `op = |x, y| …`: the associative operator");
        return None;
    };
    let params = gen_params(args, errors);

    // Identity: translated for CUDA, kept as written for the Rust constant.
    let identity_ir = Translator::new(errors, element_name.clone(), self_allowed).expr(identity);

    // Operator: two operands and a body.
    let ast::FnParts {
        idents: param_idents,
        types: param_types,
        body: body_expr,
        return_type,
    } = ast::read_function(op, &ast::OPERATOR, errors)?;
    if param_idents.len() != 2 {
        return None;
    }

    let mut translator = Translator::new(errors, element_name, self_allowed);
    let x = translator.bind(&param_idents[0]);
    let y = translator.bind(&param_idents[1]);
    let body_ir = match &body_expr {
        syn::Expr::Block(b) if b.label.is_none() => translator.block(&b.block),
        other => translator.expr(other).map(|value| Block {
            lets: vec![],
            value,
        }),
    };
    let (identity_ir, body_ir) = (identity_ir?, body_ir?);

    // The Rust side: the same body with the CUDA side's integer semantics.
    let semantics = quote!(#private::semantics);
    let mut body = body_expr.clone();
    Rewriter {
        semantics: &semantics,
    }
    .visit_expr_mut(&mut body);
    let (xi, yi) = (&param_idents[0], &param_idents[1]);
    let type_checks = param_types
        .iter()
        .zip(&param_idents)
        .filter_map(|(ty, id)| {
            ty.as_ref().map(|ty| {
                quote_spanned! {ty.span()=>
                    let #id: #ty = #id;
                }
            })
        });
    // `fn f(…) -> R`: R must be the element type; a mismatch is reported
    // on the user's `R`.
    let return_check = return_type.map(|ty| {
        quote_spanned! {ty.span()=>
            let _: ::core::marker::PhantomData<#ty> = ::core::marker::PhantomData::<#element_ty>;
        }
    });
    let combine_fn = quote! {
        #[inline]
        #[allow(unused_parens, unused_braces, clippy::all)]
        fn combine(#xi: #element_ty, #yi: #element_ty) -> #element_ty {
            #(#type_checks)*
            #return_check
            #body
        }
    };

    let desc = OpDesc {
        name: ast::policy_name(ident),
        element: element.clone(),
        identity: identity_ir,
        params: [x, y],
        body: body_ir,
    };
    Some(Operator {
        element_ty,
        identity: identity.clone(),
        desc,
        combine_fn,
        params,
    })
}

fn gen_params(args: &Args, errors: &mut Errors) -> GenParams {
    let mut params = GenParams::default();
    if let Some(l) = &args.block_threads {
        match l.base10_parse::<u32>() {
            Ok(v) => params.block_threads = Some(v),
            Err(e) => errors.push_error(e),
        }
    }
    if let Some(l) = &args.items_per_thread {
        match l.base10_parse::<u32>() {
            Ok(v) => params.items_per_thread = ItemsPerThread::Fixed(v),
            Err(e) => errors.push_error(e),
        }
    }
    if let Err(e) = params.validate() {
        let span = args
            .block_threads
            .as_ref()
            .map(|l| l.span())
            .or(args.items_per_thread.as_ref().map(|l| l.span()))
            .unwrap_or_else(Span::call_site);
        errors.push(span, e);
    }
    params
}

fn op_impl(
    private: &TokenStream,
    ident: &syn::Ident,
    op: Operator,
    commutative: bool,
) -> TokenStream {
    let Operator {
        element_ty,
        identity,
        desc,
        combine_fn,
        params,
    } = op;
    let name = &desc.name;
    let live_temporaries = kernels_gen::pressure::peak_live_lets(&desc.body) as u32;
    let operator_ir = kernels_gen::ir_text::print(&desc, &params);
    let op_parts = match kernels_gen::operator_source_parts(&desc, &params) {
        Ok(parts) => parts,
        Err(e) => return syn::Error::new(ident.span(), e).to_compile_error(),
    };
    // The element's and the named structs' CUDA names come from their
    // ScanElement impls when the user's crate compiles.
    let op_source = op_parts.into_iter().map(|part| match part {
        Part::Text(t) => quote!(#t),
        Part::Element => quote!(<#element_ty as #private::ScanElement>::CUDA_TYPE),
        Part::Named(path) => match syn::parse_str::<syn::Path>(&path) {
            Ok(p) => quote!(<#p as #private::ScanElement>::CUDA_TYPE),
            Err(e) => e.to_compile_error(),
        },
        Part::Field(_) => unreachable!("an operator's part names no fields' types"),
    });
    let items_per_thread = match params.items_per_thread {
        ItemsPerThread::Fixed(n) => quote!(#n),
        ItemsPerThread::Auto => {
            quote!(#private::kernels_gen::auto_items_per_thread(::core::mem::size_of::<#element_ty>()))
        }
    };
    let block_threads = match params.block_threads {
        Some(n) => quote!(#n),
        None => quote! {
            #private::kernels_gen::auto_block_threads(
                ::core::mem::size_of::<#element_ty>(),
                <#ident as #private::ScanOp>::ITEMS_PER_THREAD,
            )
        },
    };
    // Checked when the crate compiles, on the user's type: the element's
    // size and the tile's shared memory.
    let size_message = format!(
        "#[scan_op] elements are 1 to {} bytes: this element is larger",
        kernels_gen::MAX_ELEMENT_SIZE
    );
    let registers_message = format!(
        "#[scan_op] elements take at most {} registers in a kernel, one per field of up to 4 bytes (a u8, i8, u16, i16 or bool too) and two per 8-byte field: this element's fields take more. Group small fields into wider ones (a [u8; 200] as [u32; 50])",
        kernels_gen::MAX_ELEMENT_REGISTERS
    );
    let tile_message = format!(
        "a tile of this operator's elements (block_threads × items_per_thread of them) needs more than the {} bytes of static shared memory a block has: lower `block_threads` or `items_per_thread`",
        kernels_gen::STATIC_SHARED_LIMIT
    );
    let shape_check = quote_spanned! {ident.span()=>
        const _: () = {
            let size = ::core::mem::size_of::<#element_ty>();
            ::core::assert!(size <= #private::kernels_gen::MAX_ELEMENT_SIZE, #size_message);
            ::core::assert!(
                <#element_ty as #private::ScanElement>::REGISTERS <= #private::kernels_gen::MAX_ELEMENT_REGISTERS,
                #registers_message
            );
            ::core::assert!(
                #private::kernels_gen::tile_fits(
                    size,
                    <#ident as #private::ScanOp>::BLOCK_THREADS,
                    <#ident as #private::ScanOp>::ITEMS_PER_THREAD,
                ),
                #tile_message
            );
        };
    };
    quote! {
        #shape_check
        impl #private::ScanOp for #ident {
            type Element = #element_ty;
            const NAME: &'static str = #name;
            const IDENTITY: #element_ty = #identity;
            const CUDA_SOURCE: &'static str = #private::concat_const!(
                <#element_ty as #private::ScanElement>::CUDA_DECL,
                #(#op_source),*
            );
            const BLOCK_THREADS: u32 = #block_threads;
            const ITEMS_PER_THREAD: u32 = #items_per_thread;
            const COMMUTATIVE: bool = #commutative;
            const LIVE_TEMPORARIES: u32 = #live_temporaries;
            const OPERATOR_IR: &'static str = #operator_ir;
            #combine_fn
        }
    }
}
