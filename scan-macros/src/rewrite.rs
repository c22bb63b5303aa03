//! Giving the Rust side of the operator the CUDA side's semantics.
//!
//! Integer `+ - * / % << >>`, unary `-` and `abs` would panic on overflow in
//! debug builds and wrap in release builds; the GPU always wraps. The
//! operator's Rust body is rewritten to call `scan_core::semantics`, which
//! wraps in every build (and defines division by zero), exactly like the
//! prelude of the CUDA program. Everything else is left as written, with
//! the user's spans, so rustc's type errors point at the user's tokens.

use proc_macro2::TokenStream;
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};

pub struct Rewriter<'a> {
    /// `::gpu_scan::__private::semantics` (or the `crate = …` override).
    pub semantics: &'a TokenStream,
}

impl VisitMut for Rewriter<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        visit_mut::visit_expr_mut(self, e);
        let sem = self.semantics;
        let replacement: Option<TokenStream> = match e {
            syn::Expr::Binary(b) => {
                let (l, r) = (&b.left, &b.right);
                let f = match b.op {
                    syn::BinOp::Add(_) => Some("add"),
                    syn::BinOp::Sub(_) => Some("sub"),
                    syn::BinOp::Mul(_) => Some("mul"),
                    syn::BinOp::Div(_) => Some("div"),
                    syn::BinOp::Rem(_) => Some("rem"),
                    syn::BinOp::Shl(_) => Some("shl"),
                    syn::BinOp::Shr(_) => Some("shr"),
                    _ => None,
                };
                f.map(|f| {
                    let f = syn::Ident::new(f, b.op.span());
                    quote_spanned!(b.op.span()=> #sem::#f(#l, #r))
                })
            }
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
                // `-1` on a literal stays a literal (it may be a constant pattern).
                if matches!(*u.expr, syn::Expr::Lit(_)) {
                    None
                } else {
                    let x = &u.expr;
                    Some(quote_spanned!(u.op.span()=> #sem::neg(#x)))
                }
            }
            syn::Expr::MethodCall(m) if m.method == "abs" && m.args.is_empty() => {
                let x = &m.receiver;
                Some(quote_spanned!(m.method.span()=> #sem::abs(#x)))
            }
            _ => None,
        };
        if let Some(tokens) = replacement {
            *e = syn::Expr::Verbatim(tokens);
        }
    }
}
