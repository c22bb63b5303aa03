//! Float arithmetic on constants, done here, in Rust, before printing.
//!
//! Rust evaluates `f32::EPSILON - 3.0f32` in `f32` arithmetic (-3.0, after
//! rounding to nearest even). The PTX NVRTC emits for it is right
//! (`sub.rn.f32` of the two constants), but the CUDA 13.0 driver's JIT on
//! the H200 folded it without rounding to `f32`:
//! `(-(f32::EPSILON - 3.0f32)).trunc()` came out 2.0, not 3.0
//! (tests/generated_operators.rs found it; ptxas 13.0.88 folds it right).
//! Every `+ - * /` of two float constants (and the negation of one) is
//! therefore computed here and printed as one literal, so no CUDA compiler
//! folds float arithmetic of ours. Results that are not finite are left to
//! the GPU (there is no literal for them), as are the other operations.

use crate::ir::{BinOp, Block, Expr, Lit, Prim, PrimConst, UnOp};

/// `body` with every float `+ - * /` of constants replaced by its value.
pub fn fold_body(body: &Block) -> Block {
    Block {
        lets: body
            .lets
            .iter()
            .map(|(name, value)| (name.clone(), fold_expr(value)))
            .collect(),
        value: fold_expr(&body.value),
    }
}

/// `e` with every float `+ - * /` of constants replaced by its value.
pub fn fold_expr(e: &Expr) -> Expr {
    let folded = match e {
        Expr::Lit(_) | Expr::Var(_) | Expr::Const(..) => e.clone(),
        Expr::Field(base, name) => Expr::Field(Box::new(fold_expr(base)), name.clone()),
        Expr::Index(base, i) => Expr::Index(Box::new(fold_expr(base)), *i),
        Expr::Unary(op, inner) => Expr::Unary(*op, Box::new(fold_expr(inner))),
        Expr::Binary(op, a, b) => Expr::Binary(*op, Box::new(fold_expr(a)), Box::new(fold_expr(b))),
        Expr::Cast(inner, p) => Expr::Cast(Box::new(fold_expr(inner)), *p),
        Expr::Typed(inner, p) => Expr::Typed(Box::new(fold_expr(inner)), *p),
        Expr::TypedLike(inner, place) => Expr::TypedLike(Box::new(fold_expr(inner)), place.clone()),
        Expr::Call { method, prim, args } => Expr::Call {
            method,
            prim: *prim,
            args: args.iter().map(fold_expr).collect(),
        },
        Expr::If(cond, then, otherwise) => Expr::If(
            Box::new(fold_expr(cond)),
            Box::new(fold_body(then)),
            Box::new(fold_body(otherwise)),
        ),
        Expr::Match(scrutinee, arms) => Expr::Match(
            Box::new(fold_expr(scrutinee)),
            arms.iter()
                .map(|(pattern, value)| (pattern.clone(), fold_expr(value)))
                .collect(),
        ),
        Expr::Block(block) => Expr::Block(Box::new(fold_body(block))),
        Expr::Struct { name, fields, base } => Expr::Struct {
            name: name.clone(),
            fields: fields
                .iter()
                .map(|(f, value)| (f.clone(), fold_expr(value)))
                .collect(),
            base: base.as_ref().map(|b| Box::new(fold_expr(b))),
        },
        Expr::Array(items) => Expr::Array(items.iter().map(fold_expr).collect()),
        Expr::Repeat(value, count) => Expr::Repeat(Box::new(fold_expr(value)), *count),
    };
    let arithmetic = match &folded {
        Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div, ..)
        | Expr::Unary(UnOp::Neg, _) => true,
        // `let x: f32 = 1.0 / 3.0;` types the whole expression.
        Expr::Typed(inner, p) => p.is_float() && !matches!(**inner, Expr::Lit(_)),
        _ => false,
    };
    match constant(&folded, None) {
        Some((p, v)) if arithmetic && v.is_finite() => literal(p, v),
        _ => folded,
    }
}

/// The value of a float constant expression and its type, computed as Rust
/// computes it (each operation rounded to the type). `ty` is the type the
/// context gives untyped literals (`Expr::Typed` around them or around an
/// expression holding them, as `kernels_gen::infer` writes it).
fn constant(e: &Expr, ty: Option<Prim>) -> Option<(Prim, f64)> {
    match e {
        Expr::Lit(Lit::Float {
            value,
            value_f32,
            suffix,
        }) => {
            let p = suffix.or(ty)?;
            Some((p, pick(p, *value, *value_f32)))
        }
        Expr::Typed(inner, p) if p.is_float() => constant(inner, Some(*p)).filter(|(q, _)| q == p),
        Expr::Const(p, c) if p.is_float() => Some((*p, float_const(*p, *c)?)),
        Expr::Unary(UnOp::Neg, inner) => constant(inner, ty).map(|(p, v)| (p, -v)),
        Expr::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), a, b) => {
            let ((pa, x), (pb, y)) = (constant(a, ty)?, constant(b, ty)?);
            if pa != pb {
                return None;
            }
            Some((pa, arithmetic(pa, *op, x, y)))
        }
        _ => None,
    }
}

fn pick(p: Prim, value: f64, value_f32: f32) -> f64 {
    if p == Prim::F32 {
        f64::from(value_f32)
    } else {
        value
    }
}

fn float_const(p: Prim, c: PrimConst) -> Option<f64> {
    let f32_or = |a: f32, b: f64| if p == Prim::F32 { f64::from(a) } else { b };
    Some(match c {
        PrimConst::Max => f32_or(f32::MAX, f64::MAX),
        PrimConst::Min => f32_or(f32::MIN, f64::MIN),
        PrimConst::Epsilon => f32_or(f32::EPSILON, f64::EPSILON),
        PrimConst::MinPositive => f32_or(f32::MIN_POSITIVE, f64::MIN_POSITIVE),
        PrimConst::Infinity => f64::INFINITY,
        PrimConst::NegInfinity => f64::NEG_INFINITY,
        PrimConst::Nan | PrimConst::Bits => return None,
    })
}

/// `x op y` in `p`'s arithmetic (`x` and `y` are values of `p`).
fn arithmetic(p: Prim, op: BinOp, x: f64, y: f64) -> f64 {
    if p == Prim::F32 {
        let (x, y) = (x as f32, y as f32);
        f64::from(match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            _ => x / y,
        })
    } else {
        match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            _ => x / y,
        }
    }
}

/// A finite value of `p` as a literal of type `p` (negated when negative,
/// as the parser represents `-1.5`; `-0.0` keeps its sign).
fn literal(p: Prim, v: f64) -> Expr {
    let magnitude = Expr::Lit(Lit::Float {
        value: v.abs(),
        value_f32: v.abs() as f32,
        suffix: Some(p),
    });
    if v.is_sign_negative() {
        Expr::Unary(UnOp::Neg, Box::new(magnitude))
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{ExprPrinter, Hint};

    fn lit(v: f64, suffix: Option<Prim>) -> Expr {
        Expr::Lit(Lit::Float {
            value: v,
            value_f32: v as f32,
            suffix,
        })
    }

    fn print(e: &Expr) -> String {
        ExprPrinter::new("op_t").expr(e, &Hint::None)
    }

    #[test]
    fn f32_constants_fold_with_f32_rounding() {
        // f32::EPSILON - 3.0f32 is -3.0 in f32 (a tie, to even); exactly it
        // would be -2.99999988.
        let e = Expr::Binary(
            BinOp::Sub,
            Box::new(Expr::Const(Prim::F32, PrimConst::Epsilon)),
            Box::new(lit(3.0, Some(Prim::F32))),
        );
        assert_eq!(print(&fold_expr(&e)), "-3.0f");
        let neg = Expr::Unary(UnOp::Neg, Box::new(e));
        assert_eq!(print(&fold_expr(&neg)), "3.0f");
        // A constant alone stays as written.
        let alone = Expr::Unary(UnOp::Neg, Box::new(lit(1.5, Some(Prim::F32))));
        assert_eq!(print(&fold_expr(&alone)), "-1.5f");
    }

    #[test]
    fn untyped_literals_fold_at_their_inferred_type() {
        // 1.0 / 3.0 as f32 and as f64 differ in the last bits.
        let third = |p| {
            Expr::Binary(
                BinOp::Div,
                Box::new(Expr::Typed(Box::new(lit(1.0, None)), p)),
                Box::new(Expr::Typed(Box::new(lit(3.0, None)), p)),
            )
        };
        assert_eq!(print(&fold_expr(&third(Prim::F32))), "0.33333334f");
        assert_eq!(print(&fold_expr(&third(Prim::F64))), "0.3333333333333333");
        // `(0.0f32 - f32::EPSILON) + -(-2.5)`: the untyped 2.5, negated
        // twice, is an f32 (inferred), and the sum rounds to 2.5 (a tie, to
        // even), as in Rust.
        let sum = Expr::Binary(
            BinOp::Add,
            Box::new(Expr::Binary(
                BinOp::Sub,
                Box::new(lit(0.0, Some(Prim::F32))),
                Box::new(Expr::Const(Prim::F32, PrimConst::Epsilon)),
            )),
            Box::new(Expr::Unary(
                UnOp::Neg,
                Box::new(Expr::Typed(
                    Box::new(Expr::Unary(UnOp::Neg, Box::new(lit(2.5, None)))),
                    Prim::F32,
                )),
            )),
        );
        assert_eq!(print(&fold_expr(&sum)), "2.5f");
        // A typed let around arithmetic of untyped literals.
        let typed = Expr::Typed(
            Box::new(Expr::Binary(
                BinOp::Div,
                Box::new(lit(1.0, None)),
                Box::new(lit(3.0, None)),
            )),
            Prim::F32,
        );
        assert_eq!(print(&fold_expr(&typed)), "0.33333334f");
    }

    #[test]
    fn non_finite_results_and_variables_stay() {
        let overflow = Expr::Binary(
            BinOp::Mul,
            Box::new(Expr::Const(Prim::F32, PrimConst::Max)),
            Box::new(lit(2.0, Some(Prim::F32))),
        );
        assert_eq!(fold_expr(&overflow), overflow);
        let with_var = Expr::Binary(
            BinOp::Add,
            Box::new(Expr::Var("x".into())),
            Box::new(lit(2.0, Some(Prim::F32))),
        );
        assert_eq!(fold_expr(&with_var), with_var);
        // Integers are exact in every compiler: left alone.
        let ints = Expr::Binary(
            BinOp::Add,
            Box::new(Expr::Lit(Lit::Int {
                value: 1,
                suffix: Some(Prim::I32),
            })),
            Box::new(Expr::Lit(Lit::Int {
                value: 2,
                suffix: Some(Prim::I32),
            })),
        );
        assert_eq!(fold_expr(&ints), ints);
    }
}
