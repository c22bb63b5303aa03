//! Literal typing: the type rustc gives each unsuffixed literal.
//!
//! rustc types an unsuffixed literal (`{integer}`, `{float}`) by unification
//! over the whole function body: the literal takes the type of whatever it
//! meets (an operand, a `let` it initialises and *every* use of that `let`,
//! a method's argument, a branch's sibling, the return type), and a literal
//! that meets no type defaults to `i32` or `f64`. One more rule is local: an
//! unsuffixed literal directly under `as` (possibly negated) takes the
//! cast's target type when that is a type of its kind, so `0.1 as f32` is
//! the `f32` nearest 0.1 (one rounding), not `0.1f64 as f32` (two).
//!
//! [`annotate_body`] runs that unification over the IR and wraps every
//! literal whose type it can name in [`Expr::Typed`], so that the printer
//! prints it at exactly that type. What it cannot name is a literal whose
//! type is that of a struct field: the procedural macro sees one item at a
//! time and does not know the fields' types. Such literals stay untyped and
//! the printer lets C++ deduce their type from a typed sibling (see
//! [`crate::expr`]), which is the same type, since rustc has checked that
//! the two agree.

use crate::ir::{ArgKind, BinOp, Block, Expr, Lit, Pattern, Prim, PrimConst, StructName, UnOp};
use std::collections::HashMap;

/// What the pass knows of a variable's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarType {
    /// A primitive.
    Prim(Prim),
    /// A struct or array (its fields' types are not known here).
    Opaque,
}

/// Rewrites `body`, a function body over `params` returning `ret`, with
/// every unsuffixed literal whose type rustc infers as a primitive wrapped
/// in [`Expr::Typed`] of that primitive.
///
/// ```
/// use kernels_gen::infer::{annotate_body, VarType};
/// use kernels_gen::ir::{BinOp, Block, Expr, Lit, Prim};
///
/// // { let k = 200 + 100; x + k }   with x: u8 — k is a u8 (it meets x),
/// // so the sum wraps to 44 as in Rust, not 300.
/// let lit = |v| Expr::Lit(Lit::Int { value: v, suffix: None });
/// let body = Block {
///     lets: vec![("k".into(), Expr::Binary(BinOp::Add, Box::new(lit(200)), Box::new(lit(100))))],
///     value: Expr::Binary(BinOp::Add, Box::new(Expr::Var("x".into())), Box::new(Expr::Var("k".into()))),
/// };
/// let typed = annotate_body(&body, &[("x".into(), VarType::Prim(Prim::U8))], VarType::Prim(Prim::U8));
/// let Expr::Binary(_, a, _) = &typed.lets[0].1 else { unreachable!() };
/// assert_eq!(**a, Expr::Typed(Box::new(lit(200)), Prim::U8));
/// ```
pub fn annotate_body(body: &Block, params: &[(String, VarType)], ret: VarType) -> Block {
    let mut inf = Unifier::default();
    // A parameter is a place that names its type anywhere in the body,
    // unless a binding shadows it somewhere.
    let mut bound = Vec::new();
    bindings(body, &mut bound);
    for (name, ty) in params {
        let s = inf.of_type(*ty);
        if !bound.contains(name) {
            inf.place[s] = Some(Expr::Var(name.clone()));
            inf.element_place.get_or_insert_with(|| name.clone());
        }
        inf.scope.push((name.clone(), s));
    }
    let v = inf.block(body);
    let r = inf.of_type(ret);
    inf.unify(v, r);
    inf.rewrite_block(body)
}

/// Every name `b` binds, at any depth.
fn bindings(b: &Block, out: &mut Vec<String>) {
    fn walk(e: &Expr, out: &mut Vec<String>) {
        match e {
            Expr::If(c, t, f) => {
                walk(c, out);
                bindings(t, out);
                bindings(f, out);
            }
            Expr::Block(b) => bindings(b, out),
            Expr::Lit(_) | Expr::Var(_) | Expr::Const(..) => {}
            Expr::Field(e, _) | Expr::Index(e, _) | Expr::Unary(_, e) | Expr::Cast(e, _) => {
                walk(e, out)
            }
            Expr::Typed(e, _) | Expr::Repeat(e, _) => walk(e, out),
            Expr::TypedLike(a, b) | Expr::Binary(_, a, b) => {
                walk(a, out);
                walk(b, out);
            }
            Expr::Call { args: items, .. } | Expr::Array(items) => {
                items.iter().for_each(|i| walk(i, out))
            }
            Expr::Match(s, arms) => {
                walk(s, out);
                arms.iter().for_each(|(_, v)| walk(v, out));
            }
            Expr::Struct { fields, base, .. } => {
                fields.iter().for_each(|(_, v)| walk(v, out));
                base.iter().for_each(|b| walk(b, out));
            }
        }
    }
    for (name, value) in &b.lets {
        out.push(name.clone());
        walk(value, out);
    }
    walk(&b.value, out);
}

/// [`annotate_body`] for a single expression (an operator's identity).
pub fn annotate_expr(e: &Expr, ret: VarType) -> Expr {
    let body = Block {
        lets: Vec::new(),
        value: e.clone(),
    };
    annotate_body(&body, &[], ret).value
}

/// The state of a type variable's class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A primitive.
    Known(Prim),
    /// Typed, but by a type the pass does not know (a struct field); the
    /// class's place, if it has one, names it.
    Opaque,
    /// Only unsuffixed integer literals so far: `i32` unless unified.
    Int,
    /// Only unsuffixed float literals so far: `f64` unless unified.
    Float,
}

/// What a literal's type resolves to.
enum Resolved {
    Prim(Prim),
    /// The type of this place (a path from an operand).
    Like(Expr),
    /// Not known here: the printer's local rules apply.
    Unknown,
}

#[derive(Default)]
struct Unifier {
    parent: Vec<usize>,
    kind: Vec<Kind>,
    /// Per class root: an expression of the class's type that is valid
    /// anywhere in the body (a path from an unshadowed operand).
    place: Vec<Option<Expr>>,
    /// The first unshadowed operand: the element's fields are its fields.
    element_place: Option<String>,
    /// The bindings in scope, innermost last.
    scope: Vec<(String, usize)>,
    /// The class of each unsuffixed literal node (a negated literal is one
    /// node: the `Unary`).
    literals: HashMap<*const Expr, usize>,
}

impl Unifier {
    fn slot(&mut self, k: Kind) -> usize {
        self.parent.push(self.parent.len());
        self.kind.push(k);
        self.place.push(None);
        self.parent.len() - 1
    }

    fn known(&mut self, p: Prim) -> usize {
        self.slot(Kind::Known(p))
    }

    fn of_type(&mut self, t: VarType) -> usize {
        match t {
            VarType::Prim(p) => self.known(p),
            VarType::Opaque => self.slot(Kind::Opaque),
        }
    }

    fn root(&mut self, mut s: usize) -> usize {
        while self.parent[s] != s {
            self.parent[s] = self.parent[self.parent[s]];
            s = self.parent[s];
        }
        s
    }

    /// Merges two classes. A conflict (which rustc rejects, so the user's
    /// crate does not compile anyway) keeps the first class's kind.
    fn unify(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra == rb {
            return;
        }
        let merged = match (self.kind[ra], self.kind[rb]) {
            (Kind::Known(p), _) | (_, Kind::Known(p)) => Kind::Known(p),
            (Kind::Opaque, _) | (_, Kind::Opaque) => Kind::Opaque,
            (k, _) => k,
        };
        self.parent[rb] = ra;
        self.kind[ra] = merged;
        if self.place[ra].is_none() {
            self.place[ra] = self.place[rb].take();
        }
    }

    /// A new opaque class whose place, if `base` has one, is `path(base's place)`.
    fn opaque_at(&mut self, base: Option<usize>, path: impl FnOnce(Box<Expr>) -> Expr) -> usize {
        let place = base.and_then(|b| {
            let r = self.root(b);
            self.place[r].clone()
        });
        let s = self.slot(Kind::Opaque);
        self.place[s] = place.map(|p| path(Box::new(p)));
        s
    }

    /// The type a class ends with, after rustc's defaults.
    fn resolved(&mut self, s: usize) -> Resolved {
        let r = self.root(s);
        match self.kind[r] {
            Kind::Known(p) => Resolved::Prim(p),
            Kind::Int => Resolved::Prim(Prim::I32),
            Kind::Float => Resolved::Prim(Prim::F64),
            Kind::Opaque => match &self.place[r] {
                Some(place) => Resolved::Like(place.clone()),
                None => Resolved::Unknown,
            },
        }
    }

    fn block(&mut self, b: &Block) -> usize {
        let saved = self.scope.len();
        for (name, value) in &b.lets {
            let s = self.expr(value, None);
            self.scope.push((name.clone(), s));
        }
        let v = self.expr(&b.value, None);
        self.scope.truncate(saved);
        v
    }

    /// The class of an unsuffixed literal `node`; `cast` is the target of
    /// an `as` directly around it.
    fn literal(&mut self, node: &Expr, lit: &Lit, cast: Option<Prim>) -> usize {
        let s = match *lit {
            Lit::Bool(_) => return self.known(Prim::Bool),
            Lit::Int {
                suffix: Some(p), ..
            }
            | Lit::Float {
                suffix: Some(p), ..
            } => return self.known(p),
            Lit::Int { suffix: None, .. } => match cast {
                Some(p) if p.is_integer() => self.known(p),
                _ => self.slot(Kind::Int),
            },
            Lit::Float { suffix: None, .. } => match cast {
                Some(p) if p.is_float() => self.known(p),
                _ => self.slot(Kind::Float),
            },
        };
        self.literals.insert(node as *const Expr, s);
        s
    }

    fn expr(&mut self, e: &Expr, cast: Option<Prim>) -> usize {
        match e {
            Expr::Lit(lit) => self.literal(e, lit, cast),
            Expr::Var(v) => match self.scope.iter().rev().find(|(n, _)| n == v) {
                Some(&(_, s)) => s,
                None => self.slot(Kind::Opaque),
            },
            Expr::Field(base, f) => {
                let b = self.expr(base, None);
                self.opaque_at(Some(b), |p| Expr::Field(p, f.clone()))
            }
            Expr::Index(base, i) => {
                let b = self.expr(base, None);
                self.opaque_at(Some(b), |p| Expr::Index(p, *i))
            }
            // `-1 as u8` types the literal `u8` (and is then rejected).
            Expr::Unary(UnOp::Neg, inner) if matches!(**inner, Expr::Lit(_)) => {
                let Expr::Lit(lit) = &**inner else {
                    unreachable!()
                };
                self.literal(e, lit, cast)
            }
            Expr::Unary(_, inner) => self.expr(inner, cast),
            Expr::Binary(op, a, b) => {
                let sa = self.expr(a, None);
                let sb = self.expr(b, None);
                match op {
                    // The amount of a shift has a type of its own.
                    BinOp::Shl | BinOp::Shr => sa,
                    BinOp::And | BinOp::Or => {
                        let t = self.known(Prim::Bool);
                        self.unify(sa, t);
                        self.unify(sb, t);
                        t
                    }
                    _ if op.is_infix_in_cuda() => {
                        self.unify(sa, sb);
                        self.known(Prim::Bool)
                    }
                    _ => {
                        self.unify(sa, sb);
                        sa
                    }
                }
            }
            Expr::Cast(inner, to) => {
                self.expr(inner, Some(*to));
                self.known(*to)
            }
            Expr::Typed(inner, p) => {
                let s = self.expr(inner, None);
                let t = self.known(*p);
                self.unify(s, t);
                s
            }
            Expr::TypedLike(inner, place) => {
                let s = self.expr(inner, None);
                let t = self.expr(place, None);
                self.unify(s, t);
                s
            }
            Expr::Call { method, prim, args } => {
                let r = self.expr(&args[0], None);
                if let Some(p) = prim {
                    let t = self.known(*p);
                    self.unify(r, t);
                }
                for (arg, kind) in args[1..].iter().zip(method.args) {
                    let s = self.expr(arg, None);
                    let t = match kind {
                        ArgKind::SameAsReceiver => r,
                        ArgKind::I32 => self.known(Prim::I32),
                        ArgKind::U32 => self.known(Prim::U32),
                    };
                    self.unify(s, t);
                }
                match method.rust {
                    "count_ones" | "leading_zeros" | "trailing_zeros" => self.known(Prim::U32),
                    "is_nan" | "is_finite" | "is_infinite" => self.known(Prim::Bool),
                    _ => r,
                }
            }
            Expr::Const(p, c) => self.known(if *c == PrimConst::Bits { Prim::U32 } else { *p }),
            Expr::If(c, t, f) => {
                let sc = self.expr(c, None);
                let b = self.known(Prim::Bool);
                self.unify(sc, b);
                let st = self.block(t);
                let sf = self.block(f);
                self.unify(st, sf);
                st
            }
            Expr::Match(scrutinee, arms) => {
                let s = self.expr(scrutinee, None);
                let mut result = None;
                for (pattern, value) in arms {
                    self.pattern(pattern, s);
                    let v = self.expr(value, None);
                    match result {
                        Some(r) => self.unify(r, v),
                        None => result = Some(v),
                    }
                }
                result.unwrap_or_else(|| self.slot(Kind::Opaque))
            }
            Expr::Block(b) => self.block(b),
            Expr::Struct { name, fields, base } => {
                // The element's fields have the types of an operand's.
                let element = match name {
                    StructName::Element => self.element_place.clone(),
                    StructName::Named(_) => None,
                };
                for (field, value) in fields {
                    let v = self.expr(value, None);
                    let slot = self.slot(Kind::Opaque);
                    if let Some(x) = &element {
                        self.place[slot] =
                            Some(Expr::Field(Box::new(Expr::Var(x.clone())), field.clone()));
                    }
                    self.unify(v, slot);
                }
                if let Some(base) = base {
                    self.expr(base, None);
                }
                self.slot(Kind::Opaque)
            }
            Expr::Array(items) => {
                let element = self.slot(Kind::Opaque);
                for item in items {
                    let v = self.expr(item, None);
                    self.unify(v, element);
                }
                self.slot(Kind::Opaque)
            }
            Expr::Repeat(item, _) => {
                let v = self.expr(item, None);
                let element = self.slot(Kind::Opaque);
                self.unify(v, element);
                self.slot(Kind::Opaque)
            }
        }
    }

    fn pattern(&mut self, p: &Pattern, scrutinee: usize) {
        match p {
            Pattern::Wild => {}
            // Printed against the scrutinee (`scan_like`): nothing to rewrite.
            Pattern::Lit { .. } => {}
            Pattern::Range { lo, hi, .. } => {
                for bound in [lo, hi].into_iter().flatten() {
                    let b = self.expr(bound, None);
                    self.unify(b, scrutinee);
                }
            }
            Pattern::Or(alts) => {
                for alt in alts {
                    self.pattern(alt, scrutinee);
                }
            }
        }
    }

    fn rewrite_block(&mut self, b: &Block) -> Block {
        Block {
            lets: b
                .lets
                .iter()
                .map(|(name, value)| (name.clone(), self.rewrite(value)))
                .collect(),
            value: self.rewrite(&b.value),
        }
    }

    fn rewrite(&mut self, e: &Expr) -> Expr {
        if let Some(&s) = self.literals.get(&(e as *const Expr)) {
            return match self.resolved(s) {
                Resolved::Prim(p) => Expr::Typed(Box::new(e.clone()), p),
                Resolved::Like(place) => Expr::TypedLike(Box::new(e.clone()), Box::new(place)),
                Resolved::Unknown => e.clone(),
            };
        }
        match e {
            Expr::Lit(_) | Expr::Var(_) | Expr::Const(..) => e.clone(),
            Expr::Field(base, f) => Expr::Field(self.boxed(base), f.clone()),
            Expr::Index(base, i) => Expr::Index(self.boxed(base), *i),
            Expr::Unary(op, inner) => Expr::Unary(*op, self.boxed(inner)),
            Expr::Binary(op, a, b) => Expr::Binary(*op, self.boxed(a), self.boxed(b)),
            Expr::Cast(inner, p) => Expr::Cast(self.boxed(inner), *p),
            Expr::Typed(inner, p) => Expr::Typed(self.boxed(inner), *p),
            Expr::TypedLike(inner, place) => Expr::TypedLike(self.boxed(inner), place.clone()),
            Expr::Call { method, prim, args } => Expr::Call {
                method,
                prim: *prim,
                args: args.iter().map(|a| self.rewrite(a)).collect(),
            },
            Expr::If(c, t, f) => Expr::If(
                Box::new(self.rewrite(c)),
                Box::new(self.rewrite_block(t)),
                Box::new(self.rewrite_block(f)),
            ),
            Expr::Match(s, arms) => Expr::Match(
                Box::new(self.rewrite(s)),
                arms.iter()
                    .map(|(p, v)| (self.rewrite_pattern(p), self.rewrite(v)))
                    .collect(),
            ),
            Expr::Block(b) => Expr::Block(Box::new(self.rewrite_block(b))),
            Expr::Struct { name, fields, base } => Expr::Struct {
                name: name.clone(),
                fields: fields
                    .iter()
                    .map(|(f, v)| (f.clone(), self.rewrite(v)))
                    .collect(),
                base: base.as_ref().map(|b| Box::new(self.rewrite(b))),
            },
            Expr::Array(items) => Expr::Array(items.iter().map(|i| self.rewrite(i)).collect()),
            Expr::Repeat(item, n) => Expr::Repeat(Box::new(self.rewrite(item)), *n),
        }
    }

    fn boxed(&mut self, e: &Expr) -> Box<Expr> {
        Box::new(self.rewrite(e))
    }

    fn rewrite_pattern(&mut self, p: &Pattern) -> Pattern {
        match p {
            Pattern::Range { lo, hi, inclusive } => Pattern::Range {
                lo: lo.as_ref().map(|b| Box::new(self.rewrite(b))),
                hi: hi.as_ref().map(|b| Box::new(self.rewrite(b))),
                inclusive: *inclusive,
            },
            Pattern::Or(alts) => {
                Pattern::Or(alts.iter().map(|a| self.rewrite_pattern(a)).collect())
            }
            Pattern::Wild | Pattern::Lit { .. } => p.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{ExprPrinter, Hint};
    use crate::ir::{method, Lit};

    fn int(v: u128) -> Expr {
        Expr::Lit(Lit::Int {
            value: v,
            suffix: None,
        })
    }
    fn float(v: f64) -> Expr {
        Expr::Lit(Lit::Float {
            value: v,
            value_f32: v as f32,
            suffix: None,
        })
    }
    fn var(v: &str) -> Expr {
        Expr::Var(v.into())
    }
    fn field(b: &str, f: &str) -> Expr {
        Expr::Field(Box::new(var(b)), f.into())
    }
    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }
    fn cast(e: Expr, p: Prim) -> Expr {
        Expr::Cast(Box::new(e), p)
    }

    /// The CUDA of `body` over operands `x`, `y` of type `element`.
    fn print(lets: Vec<(&str, Expr)>, value: Expr, element: VarType) -> String {
        let body = Block {
            lets: lets.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
            value,
        };
        let params = [("x".to_string(), element), ("y".to_string(), element)];
        let body = annotate_body(&body, &params, element);
        let mut printer = ExprPrinter::new("op_t");
        let mut out = String::new();
        for (name, value) in &body.lets {
            out.push_str(&printer.let_binding(name, value));
            out.push(' ');
        }
        let hint = match element {
            VarType::Prim(p) => Hint::Prim(p),
            VarType::Opaque => Hint::None,
        };
        out + &printer.expr(&body.value, &hint)
    }

    #[test]
    fn an_untyped_binding_has_one_type_for_all_its_uses() {
        // let k = 200 + 100; (x + k) as u64 + k as u64   with x: u8
        // Rust: k is a u8 (it meets x), so both uses see 44; the cast use
        // does not give it a type of its own.
        let k = || bin(BinOp::Add, int(200), int(100));
        let value = bin(
            BinOp::Add,
            cast(bin(BinOp::Add, var("x"), var("k")), Prim::U64),
            cast(var("k"), Prim::U64),
        );
        let text = print(vec![("k", k())], value, VarType::Prim(Prim::U8));
        assert_eq!(
            text,
            "const auto k = scan_add(((unsigned char)200u), ((unsigned char)100u)); \
             scan_add(scan_cast<unsigned long long>(scan_add(x, k)), scan_cast<unsigned long long>(k))"
        );
        // Alone under a cast, k takes Rust's default i32: 300.
        let text = print(
            vec![("k", k())],
            cast(var("k"), Prim::U64),
            VarType::Prim(Prim::U8),
        );
        assert_eq!(
            text,
            "const auto k = scan_add(200, 100); scan_cast<unsigned long long>(k)"
        );
    }

    #[test]
    fn a_literal_directly_under_a_cast_takes_the_cast_type() {
        // 0.1 as f32 is rounded once; -0.1 as f32 too; (0.1 + 0.0) as f32 is an f64 sum.
        let text = print(
            vec![],
            cast(float(0.1), Prim::F32),
            VarType::Prim(Prim::F32),
        );
        assert_eq!(text, "scan_cast<float>(0.1f)");
        let neg = Expr::Unary(UnOp::Neg, Box::new(float(0.1)));
        let text = print(vec![], cast(neg, Prim::F32), VarType::Prim(Prim::F32));
        assert_eq!(text, "scan_cast<float>(-0.1f)");
        let sum = bin(BinOp::Add, float(0.1), float(0.0));
        let text = print(vec![], cast(sum, Prim::F32), VarType::Prim(Prim::F32));
        assert_eq!(text, "scan_cast<float>(scan_add(0.1, 0.0))");
        // An integer literal under a float cast stays an integer (i32).
        let text = print(vec![], cast(int(3), Prim::F32), VarType::Prim(Prim::F32));
        assert_eq!(text, "scan_cast<float>(3)");
    }

    #[test]
    fn literals_meet_types_through_calls_and_defaults() {
        // std::cmp::min(3, x) with x: u8 — the literal is a u8.
        let min = Expr::Call {
            method: method("min").unwrap(),
            prim: None,
            args: vec![int(3), var("x")],
        };
        assert_eq!(
            print(vec![], min, VarType::Prim(Prim::U8)),
            "scan_min(((unsigned char)3u), x)"
        );
        // x << 40 with x: u64: the amount is an i32 of its own.
        let shl = bin(BinOp::Shl, var("x"), int(40));
        assert_eq!(
            print(vec![], shl, VarType::Prim(Prim::U64)),
            "scan_shl(x, 40)"
        );
        // -2147483648 defaults to i32 (not C++'s long long).
        let min_i32 = Expr::Unary(UnOp::Neg, Box::new(int(1 << 31)));
        let cmp = bin(BinOp::Lt, min_i32, int(0));
        assert_eq!(
            print(vec![], cmp, VarType::Prim(Prim::Bool)),
            "scan_lt((-2147483647 - 1), 0)"
        );
    }

    #[test]
    fn literals_meeting_a_field_take_the_fields_type() {
        // let k = 200 + 100; Self { a: x.a + k, b: k as u64 }: k has x.a's type.
        let k = bin(BinOp::Add, int(200), int(100));
        let value = Expr::Struct {
            name: StructName::Element,
            fields: vec![
                ("a".into(), bin(BinOp::Add, field("x", "a"), var("k"))),
                ("b".into(), cast(var("k"), Prim::U64)),
            ],
            base: None,
        };
        let body = Block {
            lets: vec![("k".into(), k)],
            value,
        };
        let params = [
            ("x".to_string(), VarType::Opaque),
            ("y".to_string(), VarType::Opaque),
        ];
        let body = annotate_body(&body, &params, VarType::Opaque);
        let mut printer = ExprPrinter::new("op_t");
        assert_eq!(
            printer.let_binding(&body.lets[0].0, &body.lets[0].1),
            "const auto k = scan_add(scan_like(x.a, 200), scan_like(x.a, 100));"
        );
        // Self { a: 1 }: the element's field has the type of x.a.
        let lit = Expr::Struct {
            name: StructName::Element,
            fields: vec![("a".into(), int(1))],
            base: None,
        };
        let body = Block {
            lets: vec![],
            value: lit,
        };
        let body = annotate_body(&body, &params, VarType::Opaque);
        let Expr::Struct { fields, .. } = &body.value else {
            unreachable!()
        };
        assert_eq!(
            fields[0].1,
            Expr::TypedLike(Box::new(int(1)), Box::new(field("x", "a")))
        );
    }

    #[test]
    fn a_shadowed_operand_names_no_type() {
        // let x = 5; x + y.a — `x` is a local here, so `x.a` names nothing.
        let body = Block {
            lets: vec![("x".into(), int(5))],
            value: Expr::Struct {
                name: StructName::Element,
                fields: vec![("a".into(), int(1))],
                base: None,
            },
        };
        let params = [
            ("x".to_string(), VarType::Opaque),
            ("y".to_string(), VarType::Opaque),
        ];
        let body = annotate_body(&body, &params, VarType::Opaque);
        let Expr::Struct { fields, .. } = &body.value else {
            unreachable!()
        };
        // y is not shadowed: the element's fields are y's.
        assert_eq!(
            fields[0].1,
            Expr::TypedLike(Box::new(int(1)), Box::new(field("y", "a")))
        );
    }
}
