//! Printing operator expressions as CUDA C.
//!
//! Types are not known here (see [`crate::ir`]), so the printer relies on two
//! rules. Arithmetic, bit operations and numeric methods go through the
//! prelude's overloads, which pick Rust's semantics from the C++ operand
//! types. An *untyped* literal (no suffix, like Rust's `{integer}`) is
//! printed against a *hint*: the typed sibling whose type Rust would have
//! inferred for it, e.g. `x.count + 1` becomes
//! `scan_add(x.count, scan_like(x.count, 1))`.

use crate::ir::{ArgKind, BinOp, Block, Expr, Lit, Pattern, Prim, PrimConst, StructName, UnOp};
use std::collections::HashSet;
use std::fmt::Write;

/// The type an untyped literal should take.
#[derive(Clone, Debug)]
pub enum Hint {
    /// No typed sibling: Rust's defaults apply (`i32`, `f64`), as in C++.
    None,
    /// A known primitive.
    Prim(Prim),
    /// The type of this (already printed, side-effect free) CUDA expression.
    Like(String),
}

/// Prints expressions of one operator.
pub struct ExprPrinter<'a> {
    element_typedef: &'a str,
    untyped_vars: HashSet<String>,
    temp_counter: usize,
    named_structs: std::collections::BTreeSet<String>,
}

impl<'a> ExprPrinter<'a> {
    /// A printer whose `Self`/element struct literals name `element_typedef`.
    pub fn new(element_typedef: &'a str) -> Self {
        ExprPrinter {
            element_typedef,
            untyped_vars: HashSet::new(),
            temp_counter: 0,
            named_structs: Default::default(),
        }
    }

    /// Whether `e` has no type of its own (Rust would infer it from context).
    pub fn is_untyped(&self, e: &Expr) -> bool {
        untyped(e, &self.untyped_vars)
    }

    fn block_is_untyped(&self, b: &Block) -> bool {
        block_untyped(b, &self.untyped_vars)
    }

    /// Prints `e`; untyped literals inside take the type `hint` gives.
    pub fn expr(&mut self, e: &Expr, hint: &Hint) -> String {
        match e {
            Expr::Lit(lit) => literal(lit, false, hint),
            // An untyped binding is a generic lambda (see `let_binding`):
            // each use evaluates it at the type Rust infers there.
            Expr::Var(v) if self.untyped_vars.contains(v) => match hint {
                Hint::Like(h) => format!("{v}({h})"),
                Hint::Prim(p) => format!("{v}(({})0)", p.cuda_name()),
                Hint::None => format!("{v}(scan_default_type())"),
            },
            Expr::Var(v) => v.clone(),
            Expr::Field(base, field) => format!("{}.{field}", self.place(base)),
            Expr::Index(base, i) => format!("{}[{i}]", self.place(base)),
            Expr::Unary(UnOp::Neg, inner) => match &**inner {
                Expr::Lit(lit) => literal(lit, true, hint),
                _ => format!("scan_neg({})", self.expr(inner, hint)),
            },
            Expr::Unary(UnOp::Not, inner) => format!("scan_not({})", self.expr(inner, hint)),
            Expr::Binary(op, a, b) => self.binary(*op, a, b, hint),
            Expr::Cast(inner, to) => format!(
                "scan_cast<{}>({})",
                to.cuda_name(),
                self.expr(inner, &Hint::None)
            ),
            // rustc has checked that a typed value already has this type;
            // the annotation only decides what its untyped literals are.
            Expr::Typed(inner, p) => self.expr(inner, &Hint::Prim(*p)),
            Expr::TypedLike(inner, place) => {
                let like = Hint::Like(self.expr(place, &Hint::None));
                self.expr(inner, &like)
            }
            Expr::Call { method, prim, args } => {
                let receiver_hint = match prim {
                    Some(p) => Hint::Prim(*p),
                    None => Hint::None,
                };
                let receiver = self.expr(&args[0], &receiver_hint);
                let same = match prim {
                    Some(p) => Hint::Prim(*p),
                    None => Hint::Like(receiver.clone()),
                };
                let mut out = format!("{}({receiver}", method.cuda);
                for (arg, kind) in args[1..].iter().zip(method.args) {
                    let h = match kind {
                        ArgKind::SameAsReceiver => same.clone(),
                        ArgKind::I32 => Hint::Prim(Prim::I32),
                        ArgKind::U32 => Hint::Prim(Prim::U32),
                    };
                    let text = self.expr(arg, &h);
                    let _ = write!(out, ", {text}");
                }
                out.push(')');
                out
            }
            Expr::Const(p, c) => prim_const(*p, *c),
            Expr::If(cond, then, otherwise) => {
                let cond = self.expr(cond, &Hint::None);
                let (t_hint, f_hint) = self.sibling_hints_blocks(then, otherwise, hint);
                let t = self.block_expr(then, &t_hint);
                let f = self.block_expr(otherwise, &f_hint);
                format!("({cond} ? {t} : {f})")
            }
            Expr::Match(scrutinee, arms) => self.match_expr(scrutinee, arms, hint),
            Expr::Block(b) => self.block_expr(b, hint),
            Expr::Struct { name, .. } => {
                // A struct value inside an expression: build it in a lambda.
                let ty = self.struct_name(name);
                let tmp = self.fresh("value");
                let mut body = String::new();
                self.assign(&tmp, e, &mut body, "");
                format!(
                    "[&]() {{ {ty} {tmp}; {}return {tmp}; }}()",
                    body.replace('\n', " ")
                )
            }
            Expr::Array(_) | Expr::Repeat(..) => {
                // The translator only lets array literals initialise fields,
                // where `assign` expands them element by element.
                panic!("array literal outside a struct field initialiser")
            }
        }
    }

    fn place(&mut self, base: &Expr) -> String {
        let text = self.expr(base, &Hint::None);
        match base {
            Expr::Var(_) | Expr::Field(..) | Expr::Index(..) => text,
            _ => format!("({text})"),
        }
    }

    fn fresh(&mut self, stem: &str) -> String {
        self.temp_counter += 1;
        format!("scan_{stem}_{}", self.temp_counter)
    }

    fn struct_name(&mut self, name: &StructName) -> String {
        match name {
            StructName::Element => self.element_typedef.to_string(),
            StructName::Named(n) => {
                self.named_structs.insert(n.clone());
                named_struct_alias(n)
            }
        }
    }

    /// The structs other than the element that the printed code names, by
    /// their Rust paths as written: the policy declares an alias of each
    /// ([`named_struct_alias`]) for their CUDA names.
    pub fn named_structs(&self) -> impl Iterator<Item = &str> {
        self.named_structs.iter().map(String::as_str)
    }

    /// Chooses hints for two sibling operands: an untyped one takes the
    /// other's type, or the outer hint when both are untyped.
    fn sibling_hints(&mut self, a: &Expr, b: &Expr, outer: &Hint) -> (Hint, Hint) {
        match (self.is_untyped(a), self.is_untyped(b)) {
            (true, false) => (self.hint_from(b), Hint::None),
            (false, true) => (Hint::None, self.hint_from(a)),
            (true, true) => (outer.clone(), outer.clone()),
            (false, false) => (Hint::None, Hint::None),
        }
    }

    fn sibling_hints_blocks(&mut self, a: &Block, b: &Block, outer: &Hint) -> (Hint, Hint) {
        match (self.block_is_untyped(a), self.block_is_untyped(b)) {
            (true, false) => (self.hint_from_block(b), Hint::None),
            (false, true) => (Hint::None, self.hint_from_block(a)),
            _ => (outer.clone(), outer.clone()),
        }
    }

    /// The type of a typed block: its value's when it binds nothing, else
    /// the block itself (its bindings are out of scope outside it).
    fn hint_from_block(&mut self, typed: &Block) -> Hint {
        if typed.lets.is_empty() {
            self.hint_from(&typed.value)
        } else {
            Hint::Like(self.block_expr(typed, &Hint::None))
        }
    }

    fn hint_from(&mut self, typed: &Expr) -> Hint {
        match typed {
            // Arithmetic keeps its operands' type: borrow it from the simplest typed leaf.
            Expr::Binary(op, a, b) if !op.is_infix_in_cuda() => {
                if op.is_shift() || !self.is_untyped(a) {
                    self.hint_from(a)
                } else {
                    self.hint_from(b)
                }
            }
            Expr::Unary(_, inner) => self.hint_from(inner),
            Expr::Cast(_, p) | Expr::Typed(_, p) => Hint::Prim(*p),
            Expr::TypedLike(_, place) => self.hint_from(place),
            Expr::Const(p, c) => Hint::Prim(if *c == PrimConst::Bits { Prim::U32 } else { *p }),
            Expr::Lit(Lit::Int {
                suffix: Some(p), ..
            })
            | Expr::Lit(Lit::Float {
                suffix: Some(p), ..
            }) => Hint::Prim(*p),
            _ => Hint::Like(self.expr(typed, &Hint::None)),
        }
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, outer: &Hint) -> String {
        if op.is_shift() {
            // The amount has its own type; the shifted value takes the outer hint.
            let lhs_hint = if self.is_untyped(a) {
                outer.clone()
            } else {
                Hint::None
            };
            let lhs = self.expr(a, &lhs_hint);
            let rhs = self.expr(b, &Hint::None);
            let f = if op == BinOp::Shl {
                "scan_shl"
            } else {
                "scan_shr"
            };
            return format!("{f}({lhs}, {rhs})");
        }
        let inner_outer = if op.is_infix_in_cuda() {
            Hint::None
        } else {
            outer.clone()
        };
        let (ha, hb) = if matches!(op, BinOp::And | BinOp::Or) {
            (Hint::None, Hint::None)
        } else {
            self.sibling_hints(a, b, &inner_outer)
        };
        let lhs = self.expr(a, &ha);
        let rhs = self.expr(b, &hb);
        let f = match op {
            BinOp::Add => "scan_add",
            BinOp::Sub => "scan_sub",
            BinOp::Mul => "scan_mul",
            BinOp::Div => "scan_div",
            BinOp::Rem => "scan_rem",
            BinOp::BitAnd => "scan_bitand",
            BinOp::BitOr => "scan_bitor",
            BinOp::BitXor => "scan_bitxor",
            BinOp::And => return format!("({lhs} && {rhs})"),
            BinOp::Or => return format!("({lhs} || {rhs})"),
            // Comparisons go through the prelude too (see its `scan_eq`).
            BinOp::Eq => "scan_eq",
            BinOp::Ne => "scan_ne",
            BinOp::Lt => "scan_lt",
            BinOp::Le => "scan_le",
            BinOp::Gt => "scan_gt",
            BinOp::Ge => "scan_ge",
            BinOp::Shl | BinOp::Shr => unreachable!("handled above"),
        };
        format!("{f}({lhs}, {rhs})")
    }

    fn match_expr(&mut self, scrutinee: &Expr, arms: &[(Pattern, Expr)], outer: &Hint) -> String {
        // The scrutinee is bound once; arms become a chain of conditionals.
        // Rust has checked exhaustiveness, so the last arm needs no test.
        let s = self.fresh("match");
        let scrut = self.expr(scrutinee, &Hint::None);
        let typed_arm = arms
            .iter()
            .find(|(_, v)| !self.is_untyped(v))
            .map(|(_, v)| v.clone());
        let arm_hint = match typed_arm {
            Some(v) => self.hint_from(&v),
            None => outer.clone(),
        };
        let mut out = format!("[&](const auto {s}) {{ ");
        let last = arms.len() - 1;
        for (i, (pat, value)) in arms.iter().enumerate() {
            let v = self.expr(value, &arm_hint);
            if i == last {
                let _ = write!(out, "return {v}; }}({scrut})");
            } else {
                let cond = self.pattern(pat, &s);
                let _ = write!(out, "if ({cond}) return {v}; ");
            }
        }
        out
    }

    fn pattern(&mut self, pat: &Pattern, s: &str) -> String {
        let like = Hint::Like(s.to_string());
        match pat {
            Pattern::Wild => "true".to_string(),
            Pattern::Lit { lit, negative } => {
                format!("scan_eq({s}, {})", literal(lit, *negative, &like))
            }
            Pattern::Range { lo, hi, inclusive } => {
                let mut parts = Vec::new();
                if let Some(lo) = lo {
                    parts.push(format!("scan_ge({s}, {})", self.expr(lo, &like)));
                }
                if let Some(hi) = hi {
                    let f = if *inclusive { "scan_le" } else { "scan_lt" };
                    parts.push(format!("{f}({s}, {})", self.expr(hi, &like)));
                }
                if parts.is_empty() {
                    "true".to_string()
                } else {
                    parts.join(" && ")
                }
            }
            Pattern::Or(alts) => {
                let alts: Vec<String> = alts
                    .iter()
                    .map(|p| format!("({})", self.pattern(p, s)))
                    .collect();
                alts.join(" || ")
            }
        }
    }

    /// A block as an expression: its value alone, or a lambda when it binds.
    fn block_expr(&mut self, b: &Block, hint: &Hint) -> String {
        if b.lets.is_empty() {
            return self.expr(&b.value, hint);
        }
        let saved = self.untyped_vars.clone();
        let mut out = String::from("[&]() { ");
        for (name, value) in &b.lets {
            let line = self.let_binding(name, value);
            out.push_str(&line);
            out.push(' ');
        }
        let v = self.expr(&b.value, hint);
        let _ = write!(out, "return {v}; }}()");
        self.untyped_vars = saved;
        out
    }

    /// `const auto name = value;` (a reference for places, so that array
    /// fields can be bound without copying).
    ///
    /// A binding without a type of its own (`let k = 1 << 40;`) takes the
    /// type of the places it is used in, which rustc infers from the whole
    /// body. It is printed as a generic lambda of a type tag, `k(tag)`
    /// computing the value at the tag's type, and every use passes the type
    /// its context gives (`scan_default_type` for Rust's `i32`/`f64`
    /// defaults): `x.wide + k` computes `1 << 40` in `u64`, as Rust does.
    pub fn let_binding(&mut self, name: &str, value: &Expr) -> String {
        if self.is_untyped(value) {
            let tag = self.fresh("type");
            let text = self.expr(value, &Hint::Like(tag.clone()));
            self.untyped_vars.insert(name.to_string());
            return format!("const auto {name} = [&](const auto {tag}) {{ return {text}; }};");
        }
        let text = self.expr(value, &Hint::None);
        self.untyped_vars.remove(name);
        match value {
            Expr::Var(_) | Expr::Field(..) | Expr::Index(..) => {
                format!("const auto& {name} = {text};")
            }
            _ => format!("const auto {name} = {text};"),
        }
    }

    /// Statements that store `value` into the place `dest`, field by field
    /// for struct and array literals. Each statement ends with a newline and
    /// is prefixed with `indent`.
    pub fn assign(&mut self, dest: &str, value: &Expr, out: &mut String, indent: &str) {
        match value {
            Expr::Struct { fields, base, .. } => {
                if let Some(base) = base {
                    let b = self.expr(base, &Hint::None);
                    let _ = writeln!(out, "{indent}{dest} = {b};");
                }
                for (field, v) in fields {
                    self.assign(&format!("{dest}.{field}"), v, out, indent);
                }
            }
            Expr::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.assign(&format!("{dest}[{i}]"), v, out, indent);
                }
            }
            Expr::Repeat(v, n) => {
                for i in 0..*n {
                    self.assign(&format!("{dest}[{i}]"), v, out, indent);
                }
            }
            Expr::Field(..) | Expr::Var(_) | Expr::Index(..) if !self.is_untyped(value) => {
                // Possibly an array: scan_copy_array would be needed. The
                // overload below picks plain assignment for non-arrays.
                let v = self.expr(value, &Hint::None);
                let _ = writeln!(out, "{indent}scan_assign({dest}, {v});");
            }
            _ => {
                let v = self.expr(value, &Hint::Like(dest.to_string()));
                let _ = writeln!(out, "{indent}{dest} = {v};");
            }
        }
    }
}

/// Whether `e` has no type of its own, given the untyped bindings in scope:
/// an unsuffixed literal, or arithmetic, a block or a branch made only of
/// such values (Rust's `{integer}` and `{float}`).
fn untyped(e: &Expr, vars: &HashSet<String>) -> bool {
    match e {
        Expr::Lit(Lit::Int { suffix, .. }) | Expr::Lit(Lit::Float { suffix, .. }) => {
            suffix.is_none()
        }
        Expr::Var(v) => vars.contains(v),
        Expr::Unary(_, inner) => untyped(inner, vars),
        Expr::Binary(op, a, b) if !op.is_infix_in_cuda() => {
            // A shift has the type of the value shifted.
            untyped(a, vars) && (op.is_shift() || untyped(b, vars))
        }
        Expr::Block(b) => block_untyped(b, vars),
        Expr::If(_, t, f) => block_untyped(t, vars) && block_untyped(f, vars),
        Expr::Match(_, arms) => arms.iter().all(|(_, v)| untyped(v, vars)),
        _ => false,
    }
}

/// [`untyped`] for a block, with its own bindings in scope.
fn block_untyped(b: &Block, vars: &HashSet<String>) -> bool {
    if b.lets.is_empty() {
        return untyped(&b.value, vars);
    }
    let mut inner = vars.clone();
    for (name, value) in &b.lets {
        if untyped(value, &inner) {
            inner.insert(name.clone());
        } else {
            inner.remove(name);
        }
    }
    untyped(&b.value, &inner)
}

/// Prints a literal, typed by its suffix or else by `hint`.
pub fn literal(lit: &Lit, negative: bool, hint: &Hint) -> String {
    match lit {
        Lit::Bool(b) => b.to_string(),
        Lit::Int { value, suffix } => {
            let ty = suffix.or(match hint {
                Hint::Prim(p) => Some(*p),
                _ => None,
            });
            match ty {
                Some(p) if p.is_float() => float_text(*value as f64, *value as f32, negative, p),
                Some(p) => typed_int(*value, negative, p),
                None => {
                    let text = untyped_int(*value, negative);
                    match hint {
                        Hint::Like(h) => format!("scan_like({h}, {text})"),
                        _ => text,
                    }
                }
            }
        }
        Lit::Float {
            value,
            value_f32,
            suffix,
        } => {
            let ty = suffix.or(match hint {
                Hint::Prim(p) if p.is_float() => Some(*p),
                _ => None,
            });
            match (ty, hint) {
                (Some(p), _) => float_text(*value, *value_f32, negative, p),
                (None, Hint::Like(h)) => format!(
                    "scan_like_float({h}, {}, {})",
                    float_text(*value, *value_f32, negative, Prim::F32),
                    float_text(*value, *value_f32, negative, Prim::F64)
                ),
                (None, _) => float_text(*value, *value_f32, negative, Prim::F64),
            }
        }
    }
}

fn untyped_int(value: u128, negative: bool) -> String {
    let sign = if negative { "-" } else { "" };
    // `-2147483648` is `-(2147483648ll)` in C++, a `long long`; Rust's is
    // an `i32`.
    if negative && value == 1 << 31 {
        return "(-2147483647 - 1)".to_string();
    }
    if value <= i32::MAX as u128 {
        format!("{sign}{value}")
    } else if value <= i64::MAX as u128 {
        format!("{sign}{value}ll")
    } else {
        format!("{sign}{value}ull")
    }
}

/// An integer literal of primitive type `p` (wrapping like Rust's `as`).
pub fn typed_int(value: u128, negative: bool, p: Prim) -> String {
    let bits = (p.size() * 8) as u32;
    let mask: u128 = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    let raw = if negative {
        value.wrapping_neg() & mask
    } else {
        value & mask
    };
    if p == Prim::Bool {
        return (raw != 0).to_string();
    }
    if p.is_signed_integer() {
        let signed = if raw >> (bits - 1) & 1 == 1 {
            raw as i128 - (1i128 << bits)
        } else {
            raw as i128
        };
        return match p {
            Prim::I64 if signed == i64::MIN as i128 => "(-9223372036854775807ll - 1)".to_string(),
            Prim::I64 => format!("{signed}ll"),
            Prim::I32 if signed == i32::MIN as i128 => "(-2147483647 - 1)".to_string(),
            Prim::I32 => format!("{signed}"),
            _ => format!("(({}){signed})", p.cuda_name()),
        };
    }
    match p {
        Prim::U64 => format!("{raw}ull"),
        Prim::U32 => format!("{raw}u"),
        _ => format!("(({}){raw}u)", p.cuda_name()),
    }
}

/// A float literal of type `p`, exact: the shortest decimal that reads back
/// as the same value (Rust's `{:?}`), with `f` for `f32`.
pub fn float_text(value: f64, value_f32: f32, negative: bool, p: Prim) -> String {
    let sign = if negative { "-" } else { "" };
    if p == Prim::F32 && value_f32.is_infinite() {
        // Out of `f32`'s range: rustc rejects such an `f32` literal, but the
        // text must still compile as the unused branch of `scan_like_float`.
        return format!("{sign}__int_as_float(0x7f800000)");
    }
    if p == Prim::F32 {
        format!("{sign}{}f", float_debug(format!("{value_f32:?}")))
    } else {
        format!("{sign}{}", float_debug(format!("{value:?}")))
    }
}

fn float_debug(s: String) -> String {
    // `{:?}` prints `1e-7` and `1.0`: both valid C++ floating literals once
    // an exponent-only form is given a fraction (`1e-7` is fine as is).
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

/// The CUDA text of `prim::CONST`.
pub fn prim_const(p: Prim, c: PrimConst) -> String {
    match (p, c) {
        (Prim::F32, PrimConst::Infinity) => "__int_as_float(0x7f800000)".into(),
        (Prim::F32, PrimConst::NegInfinity) => "__int_as_float((int)0xff800000u)".into(),
        (Prim::F32, PrimConst::Nan) => "__int_as_float(0x7fc00000)".into(),
        (Prim::F64, PrimConst::Infinity) => "__longlong_as_double(0x7ff0000000000000ll)".into(),
        (Prim::F64, PrimConst::NegInfinity) => {
            "__longlong_as_double((long long)0xfff0000000000000ull)".into()
        }
        (Prim::F64, PrimConst::Nan) => "__longlong_as_double(0x7ff8000000000000ll)".into(),
        (Prim::F32, PrimConst::Max) => float_text(0.0, f32::MAX, false, p),
        (Prim::F32, PrimConst::Min) => float_text(0.0, f32::MIN, false, p),
        (Prim::F32, PrimConst::Epsilon) => float_text(0.0, f32::EPSILON, false, p),
        (Prim::F32, PrimConst::MinPositive) => float_text(0.0, f32::MIN_POSITIVE, false, p),
        (Prim::F64, PrimConst::Max) => float_text(f64::MAX, 0.0, false, p),
        (Prim::F64, PrimConst::Min) => float_text(f64::MIN, 0.0, false, p),
        (Prim::F64, PrimConst::Epsilon) => float_text(f64::EPSILON, 0.0, false, p),
        (Prim::F64, PrimConst::MinPositive) => float_text(f64::MIN_POSITIVE, 0.0, false, p),
        (_, PrimConst::Bits) => format!("{}u", p.size() * 8),
        (_, PrimConst::Max) => {
            let bits = p.size() * 8 - usize::from(p.is_signed_integer());
            typed_int((1u128 << bits) - 1, false, p)
        }
        (_, PrimConst::Min) if p.is_signed_integer() => {
            typed_int(1u128 << (p.size() * 8 - 1), true, p)
        }
        (_, PrimConst::Min) => typed_int(0, false, p),
        _ => unreachable!("PrimConst::parse only accepts constants the type has"),
    }
}

/// The policy's alias of a struct named by its Rust path in an operator
/// (`a::Pair` is `a__Pair`): its CUDA name, mangled, is only known when the
/// user's crate is compiled.
pub fn named_struct_alias(path: &str) -> String {
    path.replace("::", "__")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: u128) -> Expr {
        Expr::Lit(Lit::Int {
            value: v,
            suffix: None,
        })
    }
    fn var(v: &str) -> Expr {
        Expr::Var(v.into())
    }
    fn field(b: &str, f: &str) -> Expr {
        Expr::Field(Box::new(var(b)), f.into())
    }

    #[test]
    fn untyped_literals_take_their_siblings_type() {
        let mut p = ExprPrinter::new("op_t");
        let e = Expr::Binary(BinOp::Add, Box::new(field("x", "count")), Box::new(int(1)));
        assert_eq!(
            p.expr(&e, &Hint::None),
            "scan_add(x.count, scan_like(x.count, 1))"
        );
        let e = Expr::Binary(BinOp::Mul, Box::new(int(2)), Box::new(field("y", "a")));
        assert_eq!(p.expr(&e, &Hint::None), "scan_mul(scan_like(y.a, 2), y.a)");
    }

    #[test]
    fn typed_literals_are_exact() {
        assert_eq!(typed_int(5, false, Prim::U8), "((unsigned char)5u)");
        assert_eq!(
            typed_int(1 << 63, true, Prim::I64),
            "(-9223372036854775807ll - 1)"
        );
        assert_eq!(typed_int(1, true, Prim::I32), "-1");
        assert_eq!(
            typed_int(u64::MAX as u128, false, Prim::U64),
            "18446744073709551615ull"
        );
        assert_eq!(float_text(0.1, 0.1f32, false, Prim::F32), "0.1f");
        assert_eq!(float_text(1e-7, 1e-7f32, true, Prim::F64), "-1e-7");
        assert_eq!(float_text(3.0, 3.0, false, Prim::F64), "3.0");
        assert_eq!(prim_const(Prim::I8, PrimConst::Min), "((signed char)-128)");
        assert_eq!(prim_const(Prim::U32, PrimConst::Max), "4294967295u");
        assert_eq!(prim_const(Prim::F32, PrimConst::Max), "3.4028235e38f");
    }

    fn shl(a: Expr, b: Expr) -> Expr {
        Expr::Binary(BinOp::Shl, Box::new(a), Box::new(b))
    }

    #[test]
    fn untyped_bindings_take_the_type_of_each_use() {
        // let k = 3; x.n * k   (k: the type of x.n, as rustc infers it)
        let mut p = ExprPrinter::new("op_t");
        assert_eq!(
            p.let_binding("k", &int(3)),
            "const auto k = [&](const auto scan_type_1) { return scan_like(scan_type_1, 3); };"
        );
        let e = Expr::Binary(BinOp::Mul, Box::new(field("x", "n")), Box::new(var("k")));
        assert_eq!(p.expr(&e, &Hint::None), "scan_mul(x.n, k(x.n))");
        // let j = k << 40; (still untyped: evaluated at each use's type)
        assert_eq!(
            p.let_binding("j", &shl(var("k"), int(40))),
            "const auto j = [&](const auto scan_type_2) { return scan_shl(k(scan_type_2), 40); };"
        );
        // `j as u64`: a cast does not type its operand, so Rust's i32 default applies.
        let cast = Expr::Cast(Box::new(var("j")), Prim::U64);
        assert_eq!(
            p.expr(&cast, &Hint::None),
            "scan_cast<unsigned long long>(j(scan_default_type()))"
        );
    }

    #[test]
    fn typed_bindings_type_their_literals() {
        // let k: u64 = 1 << 40;   (a u64 shift: 2^40, not int's 256)
        let mut p = ExprPrinter::new("op_t");
        let value = Expr::Typed(Box::new(shl(int(1), int(40))), Prim::U64);
        assert_eq!(
            p.let_binding("k", &value),
            "const auto k = scan_shl(1ull, 40);"
        );
        // let h: u8 = (200 + 100) / 2;   (wraps in u8: 22, as in Rust)
        let sum = Expr::Binary(BinOp::Add, Box::new(int(200)), Box::new(int(100)));
        let value = Expr::Typed(
            Box::new(Expr::Binary(BinOp::Div, Box::new(sum), Box::new(int(2)))),
            Prim::U8,
        );
        assert_eq!(
            p.let_binding("h", &value),
            "const auto h = scan_div(scan_add(((unsigned char)200u), ((unsigned char)100u)), ((unsigned char)2u));"
        );
    }

    #[test]
    fn a_block_with_bindings_can_be_untyped() {
        // if c { 1 << 40 } else { let t = x.w; t }: the literal branch is a u64 like x.w
        let mut p = ExprPrinter::new("op_t");
        let then = Block {
            lets: vec![],
            value: shl(int(1), int(40)),
        };
        let otherwise = Block {
            lets: vec![("t".into(), field("x", "w"))],
            value: var("t"),
        };
        let e = Expr::If(Box::new(var("c")), Box::new(then), Box::new(otherwise));
        let text = p.expr(&e, &Hint::None);
        assert!(
            text.starts_with(
                "(c ? scan_shl(scan_like([&]() { const auto& t = x.w; return t; }(), 1), 40)"
            ),
            "{text}"
        );
        // { let a = 2; a * 3 } has no type of its own.
        let block = Block {
            lets: vec![("a".into(), int(2))],
            value: Expr::Binary(BinOp::Mul, Box::new(var("a")), Box::new(int(3))),
        };
        assert!(p.is_untyped(&Expr::Block(Box::new(block))));
    }

    #[test]
    fn match_becomes_a_chain_with_the_last_arm_unconditional() {
        let mut p = ExprPrinter::new("op_t");
        let arms = vec![
            (
                Pattern::Lit {
                    lit: Lit::Int {
                        value: 0,
                        suffix: None,
                    },
                    negative: false,
                },
                field("x", "a"),
            ),
            (Pattern::Wild, field("y", "a")),
        ];
        let e = Expr::Match(Box::new(field("x", "tag")), arms);
        assert_eq!(
            p.expr(&e, &Hint::None),
            "[&](const auto scan_match_1) { if (scan_eq(scan_match_1, scan_like(scan_match_1, 0))) return x.a; return y.a; }(x.tag)"
        );
    }
}
