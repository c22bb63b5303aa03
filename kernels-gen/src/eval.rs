//! An interpreter of the operator IR ([`Expr`], [`Block`]) with Rust's
//! semantics: the host's evaluation of operators that exist only at run
//! time (read from their text, [`crate::ir_text`]), and the oracle of
//! `tests/generated_operators.rs`. [`OpValues`] checks and evaluates a
//! whole operator over a primitive element.
//!
//! [`check`] infers every node's type as rustc does (untyped literals are
//! inference variables unified with their typed siblings, the annotation
//! of a `let`, a method's signature, the function's return type; an
//! untyped `let` has one type, that of its uses; unresolved variables
//! default to `i32`/`f64`; a literal directly under `as` takes the cast's
//! type) and rejects what rustc would reject: type mismatches, literals out
//! of range of their type, `-` on unsigned integers, methods on receivers
//! of no known type, invalid casts and empty range patterns.
//!
//! [`Checked::eval`] then evaluates the body with the arithmetic of
//! `scan_core::semantics` (which the prelude mirrors): wrapping integer
//! arithmetic, `x / 0 == 0`, `x % 0 == 0`, `MIN / -1 == MIN`, shifts modulo
//! the width, saturating float-to-int casts (NaN to 0), NaN-ignoring
//! `min`/`max`, `powi` by compiler-rt's repeated squaring, and Rust's own
//! methods for the rest. Results Rust leaves unspecified (the sign of a NaN
//! copied by `copysign`, the sign of a zero from `min`/`max` of `+0` and
//! `-0`) are flagged in [`Outcome::unspecified`].
use crate::ir::{
    ArgKind, BinOp, Block, ElementType, Expr, Lit, MethodReceivers, OpDesc, Pattern, Prim,
    PrimConst, UnOp,
};
use crate::stage::{StageDesc, StageKind};
use std::collections::HashMap;

/// A value of one primitive type.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub enum Value {
    /// `u8`
    U8(u8),
    /// `u16`
    U16(u16),
    /// `u32`
    U32(u32),
    /// `u64`
    U64(u64),
    /// `i8`
    I8(i8),
    /// `i16`
    I16(i16),
    /// `i32`
    I32(i32),
    /// `i64`
    I64(i64),
    /// `f32`
    F32(f32),
    /// `f64`
    F64(f64),
    /// `bool`
    Bool(bool),
}

impl Value {
    /// The value's type.
    pub fn prim(self) -> Prim {
        match self {
            Value::U8(_) => Prim::U8,
            Value::U16(_) => Prim::U16,
            Value::U32(_) => Prim::U32,
            Value::U64(_) => Prim::U64,
            Value::I8(_) => Prim::I8,
            Value::I16(_) => Prim::I16,
            Value::I32(_) => Prim::I32,
            Value::I64(_) => Prim::I64,
            Value::F32(_) => Prim::F32,
            Value::F64(_) => Prim::F64,
            Value::Bool(_) => Prim::Bool,
        }
    }

    /// The value's bytes (little endian), zero-extended to 64 bits: what the
    /// generated code writes (`memcpy` of the value into a zeroed `u64`).
    pub fn to_bits(self) -> u64 {
        match self {
            Value::U8(x) => x as u64,
            Value::U16(x) => x as u64,
            Value::U32(x) => x as u64,
            Value::U64(x) => x,
            Value::I8(x) => x as u8 as u64,
            Value::I16(x) => x as u16 as u64,
            Value::I32(x) => x as u32 as u64,
            Value::I64(x) => x as u64,
            Value::F32(x) => x.to_bits() as u64,
            Value::F64(x) => x.to_bits(),
            Value::Bool(b) => b as u64,
        }
    }

    /// The value of type `p` whose bytes are the low bytes of `bits`
    /// (`bool`: bit 0).
    pub fn from_bits(p: Prim, bits: u64) -> Value {
        match p {
            Prim::U8 => Value::U8(bits as u8),
            Prim::U16 => Value::U16(bits as u16),
            Prim::U32 => Value::U32(bits as u32),
            Prim::U64 => Value::U64(bits),
            Prim::I8 => Value::I8(bits as i8),
            Prim::I16 => Value::I16(bits as i16),
            Prim::I32 => Value::I32(bits as i32),
            Prim::I64 => Value::I64(bits as i64),
            Prim::F32 => Value::F32(f32::from_bits(bits as u32)),
            Prim::F64 => Value::F64(f64::from_bits(bits)),
            Prim::Bool => Value::Bool(bits & 1 != 0),
        }
    }

    /// Whether the value is a NaN.
    pub fn is_nan(self) -> bool {
        match self {
            Value::F32(x) => x.is_nan(),
            Value::F64(x) => x.is_nan(),
            _ => false,
        }
    }

    /// Bit-for-bit equality, except that any NaN equals any NaN.
    pub fn same(self, other: Value) -> bool {
        self.prim() == other.prim()
            && (self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan()))
    }

    /// An integer's value, exactly.
    pub(crate) fn as_i128(self) -> i128 {
        match self {
            Value::U8(x) => x as i128,
            Value::U16(x) => x as i128,
            Value::U32(x) => x as i128,
            Value::U64(x) => x as i128,
            Value::I8(x) => x as i128,
            Value::I16(x) => x as i128,
            Value::I32(x) => x as i128,
            Value::I64(x) => x as i128,
            Value::Bool(b) => b as i128,
            other => panic!("not an integer: {other:?}"),
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::U8(x) => write!(f, "{x}u8"),
            Value::U16(x) => write!(f, "{x}u16"),
            Value::U32(x) => write!(f, "{x}u32"),
            Value::U64(x) => write!(f, "{x}u64"),
            Value::I8(x) => write!(f, "{x}i8"),
            Value::I16(x) => write!(f, "{x}i16"),
            Value::I32(x) => write!(f, "{x}i32"),
            Value::I64(x) => write!(f, "{x}i64"),
            Value::F32(x) => write!(f, "{x:?}f32 ({:#010x})", x.to_bits()),
            Value::F64(x) => write!(f, "{x:?}f64 ({:#018x})", x.to_bits()),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}

// ---------------------------------------------------------------------------
// Type inference, as rustc does it for this subset.
// ---------------------------------------------------------------------------

/// What an inference variable is known to be.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Known(Prim),
    /// `{integer}`
    Int,
    /// `{float}`
    Float,
}

/// A constraint checked once every type is known.
#[derive(Clone, Copy, Debug)]
enum Req {
    /// Unary `-`: signed integers and floats.
    Negatable,
    /// `!`, `& | ^`: integers and `bool`.
    IntOrBool,
    /// `+ - * / %`: integers and floats.
    Number,
    /// Shifts, integer methods, `match` scrutinees.
    Integer,
    /// Float methods.
    Float,
    /// `wrapping_abs`.
    Signed,
    /// `operand as to`.
    CastTo(Prim),
}

/// A body whose types rustc would accept, with every node's type.
pub struct Checked<'e> {
    pub(crate) body: &'e Block,
    /// Each node's type, by the node's address (an address, not a
    /// pointer, so that a checked body can be shared between threads).
    types: HashMap<usize, Prim>,
    /// The inferred type of the body's value.
    pub ty: Prim,
}

struct Infer<'e> {
    parent: Vec<usize>,
    kind: Vec<Kind>,
    node: HashMap<*const Expr, usize>,
    scope: Vec<(String, usize)>,
    /// Constraints: (slot, constraint, statement).
    reqs: Vec<(usize, Req, usize)>,
    /// Untyped or typed integer/float literals: (literal, negated, slot,
    /// statement).
    lits: Vec<(&'e Lit, bool, usize, usize)>,
    /// Range patterns, their scrutinee's slot and their statement.
    ranges: Vec<(&'e Pattern, usize, usize)>,
    /// The statement being checked and the next one's number
    /// ([`CheckError::statement`]).
    current: usize,
    next: usize,
}

type R<T> = Result<T, String>;

/// Why rustc would reject a body, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    /// What is wrong, in rustc's terms.
    pub message: String,
    /// The statement it was found in: the body's `let`s and block values
    /// numbered from 0 in the order they are written (a nested block's
    /// after the start of the statement it is in, before what follows),
    /// as [`crate::ir_text::parse_with_lines`] numbers them.
    pub statement: usize,
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Infers the types of `body`, the body of a function of the input
/// variables `vars` returning `ret`; `Err` says why rustc would reject it.
pub fn check<'e>(body: &'e Block, ret: Prim, vars: &[(String, Prim)]) -> R<Checked<'e>> {
    check_statements(body, ret, vars).map_err(|e| e.message)
}

/// [`check`], with the statement an error was found in.
pub fn check_statements<'e>(
    body: &'e Block,
    ret: Prim,
    vars: &[(String, Prim)],
) -> Result<Checked<'e>, CheckError> {
    let mut inf = Infer {
        parent: Vec::new(),
        kind: Vec::new(),
        node: HashMap::new(),
        scope: Vec::new(),
        reqs: Vec::new(),
        lits: Vec::new(),
        ranges: Vec::new(),
        current: 0,
        next: 0,
    };
    for (name, p) in vars {
        let s = inf.known(*p);
        inf.scope.push((name.clone(), s));
    }
    let at = |inf: &Infer<'e>, message: String| CheckError {
        message,
        statement: inf.current,
    };
    let v = inf.block(body).map_err(|m| at(&inf, m))?;
    let r = inf.known(ret);
    // The body's value against the return type: its last statement.
    inf.unify(v, r).map_err(|m| at(&inf, m))?;
    inf.finish(body, ret)
}

/// How a type reads in an error.
fn kind_name(k: Kind) -> String {
    match k {
        Kind::Known(p) => format!("`{}`", p.rust_name()),
        Kind::Int => "an integer literal".to_string(),
        Kind::Float => "a float literal".to_string(),
    }
}

impl<'e> Infer<'e> {
    fn slot(&mut self, k: Kind) -> usize {
        self.parent.push(self.parent.len());
        self.kind.push(k);
        self.parent.len() - 1
    }

    fn known(&mut self, p: Prim) -> usize {
        self.slot(Kind::Known(p))
    }

    fn root(&mut self, mut s: usize) -> usize {
        while self.parent[s] != s {
            self.parent[s] = self.parent[self.parent[s]];
            s = self.parent[s];
        }
        s
    }

    fn unify(&mut self, a: usize, b: usize) -> R<()> {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra == rb {
            return Ok(());
        }
        let merged = match (self.kind[ra], self.kind[rb]) {
            (Kind::Known(p), Kind::Known(q)) if p == q => Kind::Known(p),
            (Kind::Known(p), Kind::Int) | (Kind::Int, Kind::Known(p)) if p.is_integer() => {
                Kind::Known(p)
            }
            (Kind::Known(p), Kind::Float) | (Kind::Float, Kind::Known(p)) if p.is_float() => {
                Kind::Known(p)
            }
            (Kind::Int, Kind::Int) => Kind::Int,
            (Kind::Float, Kind::Float) => Kind::Float,
            (x, y) => {
                return Err(format!(
                    "mismatched types: {} and {}",
                    kind_name(x),
                    kind_name(y)
                ))
            }
        };
        self.parent[rb] = ra;
        self.kind[ra] = merged;
        Ok(())
    }

    fn resolved(&mut self, s: usize) -> Prim {
        let r = self.root(s);
        match self.kind[r] {
            Kind::Known(p) => p,
            Kind::Int => Prim::I32,
            Kind::Float => Prim::F64,
        }
    }

    fn block(&mut self, b: &'e Block) -> R<usize> {
        let saved = self.scope.len();
        let outer = self.current;
        for (name, value) in &b.lets {
            self.statement();
            let s = self.expr(value, None)?;
            self.scope.push((name.clone(), s));
        }
        self.statement();
        let v = self.expr(&b.value, None)?;
        self.scope.truncate(saved);
        self.current = outer;
        Ok(v)
    }

    /// Starts the next statement.
    fn statement(&mut self) {
        self.current = self.next;
        self.next += 1;
    }

    /// A constraint on slot `s`, checked once every type is known.
    fn require(&mut self, s: usize, req: Req) {
        self.reqs.push((s, req, self.current));
    }

    /// The slot of a literal; `cast` is the target of an enclosing `as`
    /// (rustc's "castable to" expectation types an untyped literal).
    fn literal(&mut self, lit: &'e Lit, negated: bool, cast: Option<Prim>) -> usize {
        let s = match *lit {
            Lit::Bool(_) => self.known(Prim::Bool),
            Lit::Int {
                suffix: Some(p), ..
            }
            | Lit::Float {
                suffix: Some(p), ..
            } => self.known(p),
            Lit::Int { suffix: None, .. } => match cast {
                Some(p) if p.is_integer() => self.known(p),
                _ => self.slot(Kind::Int),
            },
            Lit::Float { suffix: None, .. } => match cast {
                Some(p) if p.is_float() => self.known(p),
                _ => self.slot(Kind::Float),
            },
        };
        self.lits.push((lit, negated, s, self.current));
        s
    }

    fn expr(&mut self, e: &'e Expr, cast: Option<Prim>) -> R<usize> {
        let s = self.expr_inner(e, cast)?;
        self.node.insert(e as *const Expr, s);
        Ok(s)
    }

    fn expr_inner(&mut self, e: &'e Expr, cast: Option<Prim>) -> R<usize> {
        Ok(match e {
            Expr::Lit(lit) => self.literal(lit, false, cast),
            Expr::Var(v) => match self.scope.iter().rev().find(|(n, _)| n == v) {
                Some((_, s)) => *s,
                None => return Err(format!("`{v}` is neither an operand nor bound before")),
            },
            Expr::Unary(op, inner) => {
                let s = match &**inner {
                    Expr::Lit(lit) if *op == UnOp::Neg => {
                        let s = self.literal(lit, true, cast);
                        self.node.insert(&**inner as *const Expr, s);
                        s
                    }
                    _ => self.expr(inner, cast)?,
                };
                let req = match op {
                    UnOp::Neg => Req::Negatable,
                    UnOp::Not => Req::IntOrBool,
                };
                self.require(s, req);
                s
            }
            Expr::Binary(op, a, b) => {
                let sa = self.expr(a, None)?;
                let sb = self.expr(b, None)?;
                match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                        self.unify(sa, sb)?;
                        self.require(sa, Req::Number);
                        sa
                    }
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                        self.unify(sa, sb)?;
                        self.require(sa, Req::IntOrBool);
                        sa
                    }
                    BinOp::Shl | BinOp::Shr => {
                        self.require(sa, Req::Integer);
                        self.require(sb, Req::Integer);
                        sa
                    }
                    BinOp::And | BinOp::Or => {
                        let t = self.known(Prim::Bool);
                        self.unify(sa, t)?;
                        self.unify(sb, t)?;
                        t
                    }
                    BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                        self.unify(sa, sb)?;
                        self.known(Prim::Bool)
                    }
                }
            }
            Expr::Cast(inner, to) => {
                let s = self.expr(inner, Some(*to))?;
                self.require(s, Req::CastTo(*to));
                self.known(*to)
            }
            Expr::Typed(inner, p) => {
                let s = self.expr(inner, None)?;
                let t = self.known(*p);
                self.unify(s, t)?;
                s
            }
            Expr::Call { method, prim, args } => {
                let r = self.expr(&args[0], None)?;
                match prim {
                    Some(p) => {
                        let t = self.known(*p);
                        self.unify(r, t)?;
                    }
                    None => {
                        // `x.abs()` is rewritten to the generic `semantics::abs(x)`,
                        // and `std::cmp::min/max(x, y)` (the same IR as
                        // `x.min(y)`) are generic functions of `Ord` types;
                        // other methods need the receiver's type at this point.
                        let root = self.root(r);
                        let generic = matches!(method.rust, "abs" | "min" | "max");
                        if matches!(method.rust, "min" | "max")
                            && !matches!(self.kind[root], Kind::Known(_))
                        {
                            self.require(r, Req::Integer);
                        }
                        if !generic && !matches!(self.kind[root], Kind::Known(_)) {
                            return Err(format!(
                                "can't call method `{}` on ambiguous numeric type",
                                method.rust
                            ));
                        }
                    }
                }
                let req = match method.on {
                    MethodReceivers::Numbers => Req::Number,
                    MethodReceivers::Integers => Req::Integer,
                    MethodReceivers::Floats => Req::Float,
                };
                self.require(r, req);
                if method.rust == "wrapping_abs" || (method.rust == "abs" && prim.is_some()) {
                    self.require(r, Req::Signed);
                }
                if args.len() != method.args.len() + 1 {
                    return Err(format!("`{}`: wrong argument count", method.rust));
                }
                for (arg, kind) in args[1..].iter().zip(method.args) {
                    let s = self.expr(arg, None)?;
                    let t = match kind {
                        ArgKind::SameAsReceiver => r,
                        ArgKind::I32 => self.known(Prim::I32),
                        ArgKind::U32 => self.known(Prim::U32),
                    };
                    self.unify(s, t)?;
                }
                match method.rust {
                    "count_ones" | "leading_zeros" | "trailing_zeros" => self.known(Prim::U32),
                    "is_nan" | "is_finite" | "is_infinite" => self.known(Prim::Bool),
                    _ => r,
                }
            }
            Expr::Const(p, c) => {
                if PrimConst::parse(*p, c.rust_name()).is_none() {
                    return Err(format!(
                        "`{}::{}` does not exist",
                        p.rust_name(),
                        c.rust_name()
                    ));
                }
                self.known(if *c == PrimConst::Bits { Prim::U32 } else { *p })
            }
            Expr::If(c, t, f) => {
                let sc = self.expr(c, None)?;
                let b = self.known(Prim::Bool);
                self.unify(sc, b)?;
                let st = self.block(t)?;
                let sf = self.block(f)?;
                self.unify(st, sf)?;
                st
            }
            Expr::Match(scrutinee, arms) => {
                let s = self.expr(scrutinee, None)?;
                self.require(s, Req::Integer);
                if !matches!(arms.last(), Some((Pattern::Wild, _))) {
                    return Err("the last arm must be `_` (exhaustiveness is not checked)".into());
                }
                let mut result: Option<usize> = None;
                for (pattern, value) in arms {
                    self.pattern(pattern, s)?;
                    let v = self.expr(value, None)?;
                    match result {
                        Some(r) => self.unify(r, v)?,
                        None => result = Some(v),
                    }
                }
                result.expect("at least one arm")
            }
            Expr::Block(b) => self.block(b)?,
            other => return Err(format!("not interpreted: {other:?}")),
        })
    }

    fn pattern(&mut self, p: &'e Pattern, s: usize) -> R<()> {
        match p {
            Pattern::Wild => {}
            Pattern::Lit { lit, negative } => {
                let l = self.literal(lit, *negative, None);
                self.unify(l, s)?;
                if *negative {
                    self.require(s, Req::Negatable);
                }
            }
            Pattern::Range { lo, hi, .. } => {
                for bound in [lo, hi].into_iter().flatten() {
                    match &**bound {
                        Expr::Lit(_) | Expr::Unary(UnOp::Neg, _) | Expr::Const(..) => {}
                        other => return Err(format!("range bound {other:?}")),
                    }
                    let b = self.expr(bound, None)?;
                    self.unify(b, s)?;
                }
                self.ranges.push((p, s, self.current));
            }
            Pattern::Or(alts) => {
                for alt in alts {
                    self.pattern(alt, s)?;
                }
            }
        }
        Ok(())
    }

    /// Defaults the remaining variables and checks what depends on the
    /// final types.
    fn finish(mut self, body: &'e Block, ret: Prim) -> Result<Checked<'e>, CheckError> {
        for (s, req, statement) in self.reqs.clone() {
            let p = self.resolved(s);
            let ok = match req {
                Req::Negatable => p.is_signed_integer() || p.is_float(),
                Req::IntOrBool => p.is_integer() || p == Prim::Bool,
                Req::Number => p != Prim::Bool,
                Req::Integer => p.is_integer(),
                Req::Float => p.is_float(),
                Req::Signed => p.is_signed_integer(),
                Req::CastTo(to) => match (p, to) {
                    (Prim::Bool, to) => !to.is_float(),
                    (_, Prim::Bool) => false,
                    _ => true,
                },
            };
            if !ok {
                let t = p.rust_name();
                let message = match req {
                    Req::Negatable => {
                        format!("unary `-` takes a signed integer or a float, not `{t}`")
                    }
                    Req::IntOrBool => {
                        format!("`!`, `&`, `|` and `^` take integers or bools, not `{t}`")
                    }
                    Req::Number => format!("arithmetic takes numbers, not `{t}`"),
                    Req::Integer => {
                        format!("shifts, integer methods and `match` take integers, not `{t}`")
                    }
                    Req::Float => format!("this method takes a float, not `{t}`"),
                    Req::Signed => {
                        format!("`abs` and `wrapping_abs` take a signed integer, not `{t}`")
                    }
                    Req::CastTo(to) => format!("`{t}` cannot be cast to `{}`", to.rust_name()),
                };
                return Err(CheckError { message, statement });
            }
        }
        for (lit, negated, s, statement) in self.lits.clone() {
            let p = self.resolved(s);
            let ok = match *lit {
                Lit::Int { value, .. } if p.is_integer() => {
                    let bits = p.size() as u32 * 8;
                    if p.is_signed_integer() {
                        value <= (1u128 << (bits - 1)) - u128::from(!negated)
                    } else {
                        value < (1u128 << bits)
                    }
                }
                Lit::Int { .. } => false,
                Lit::Float { value_f32, .. } if p == Prim::F32 => value_f32.is_finite(),
                Lit::Float { value, .. } => p == Prim::F64 && value.is_finite(),
                Lit::Bool(_) => p == Prim::Bool,
            };
            if !ok {
                let sign = if negated { "-" } else { "" };
                let written = match *lit {
                    Lit::Int { value, .. } => format!("{sign}{value}"),
                    Lit::Float { value, .. } => format!("{sign}{value:?}"),
                    Lit::Bool(b) => b.to_string(),
                };
                return Err(CheckError {
                    message: format!("the literal {written} is not a `{}`", p.rust_name()),
                    statement,
                });
            }
        }
        let types: HashMap<usize, Prim> = self
            .node
            .clone()
            .into_iter()
            .map(|(e, s)| (e as usize, self.resolved(s)))
            .collect();
        let checked = Checked {
            body,
            types,
            ty: ret,
        };
        for (p, s, statement) in self.ranges.clone() {
            let Pattern::Range { lo, hi, inclusive } = p else {
                unreachable!()
            };
            let prim = self.resolved(s);
            let mut ev = Eval::new(&checked);
            let lo_v = lo.as_deref().map(|b| ev.expr(b).as_i128());
            let hi_v = hi.as_deref().map(|b| ev.expr(b).as_i128());
            let min = Value::from_bits(prim, 0).as_i128().min(signed_min(prim));
            let (l, h) = (lo_v.unwrap_or(min), hi_v);
            let ok = match (h, inclusive) {
                (Some(h), true) => l <= h,
                (Some(h), false) => l < h,
                (None, _) => true,
            };
            if !ok {
                return Err(CheckError {
                    message: format!("empty range pattern {lo_v:?}..{hi_v:?}"),
                    statement,
                });
            }
        }
        Ok(checked)
    }
}

fn signed_min(p: Prim) -> i128 {
    if p.is_signed_integer() {
        -(1i128 << (p.size() * 8 - 1))
    } else {
        0
    }
}

// ---------------------------------------------------------------------------
// Evaluation.
// ---------------------------------------------------------------------------

/// A result and whether Rust leaves some of its bits unspecified.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// The value.
    pub value: Value,
    /// A NaN's sign or a zero's sign reached the result through `copysign`
    /// or `min`/`max`: Rust specifies neither, so any sign is correct.
    pub unspecified: bool,
    /// A transcendental function ([`TRANSCENDENTAL`])
    /// was evaluated: its last bits depend on the math library (Rust's and
    /// the C compiler's constant folding, libm, CUDA's), so the result is
    /// not expected to be bit exact.
    pub inexact: bool,
}

impl Checked<'_> {
    /// Evaluates the body with the input variables bound to `inputs`.
    pub fn eval<'a>(&'a self, inputs: &[(&'a str, Value)]) -> Outcome {
        let mut ev = Eval::new(self);
        ev.env.extend_from_slice(inputs);
        let value = ev.block(self.body);
        Outcome {
            value,
            unspecified: ev.unspecified,
            inexact: ev.inexact,
        }
    }

    /// The inferred type of `e` (a node of this body).
    pub fn type_of(&self, e: &Expr) -> Prim {
        self.types[&(e as *const Expr as usize)]
    }
}

struct Eval<'a> {
    checked: &'a Checked<'a>,
    /// Bindings in scope, by name (the innermost last).
    env: Vec<(&'a str, Value)>,
    unspecified: bool,
    inexact: bool,
}

macro_rules! int_un {
    ($v:expr, |$x:ident| $body:expr) => {
        match $v {
            Value::U8($x) => Value::U8($body),
            Value::U16($x) => Value::U16($body),
            Value::U32($x) => Value::U32($body),
            Value::U64($x) => Value::U64($body),
            Value::I8($x) => Value::I8($body),
            Value::I16($x) => Value::I16($body),
            Value::I32($x) => Value::I32($body),
            Value::I64($x) => Value::I64($body),
            other => panic!("integer expected: {other:?}"),
        }
    };
}

macro_rules! int_to_u32 {
    ($v:expr, |$x:ident| $body:expr) => {
        match $v {
            Value::U8($x) => Value::U32($body),
            Value::U16($x) => Value::U32($body),
            Value::U32($x) => Value::U32($body),
            Value::U64($x) => Value::U32($body),
            Value::I8($x) => Value::U32($body),
            Value::I16($x) => Value::U32($body),
            Value::I32($x) => Value::U32($body),
            Value::I64($x) => Value::U32($body),
            other => panic!("integer expected: {other:?}"),
        }
    };
}

macro_rules! int_bin {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            (Value::U8($x), Value::U8($y)) => Value::U8($body),
            (Value::U16($x), Value::U16($y)) => Value::U16($body),
            (Value::U32($x), Value::U32($y)) => Value::U32($body),
            (Value::U64($x), Value::U64($y)) => Value::U64($body),
            (Value::I8($x), Value::I8($y)) => Value::I8($body),
            (Value::I16($x), Value::I16($y)) => Value::I16($body),
            (Value::I32($x), Value::I32($y)) => Value::I32($body),
            (Value::I64($x), Value::I64($y)) => Value::I64($body),
            (a, b) => panic!("integers of one type expected: {a:?} {b:?}"),
        }
    };
}

macro_rules! float_un {
    ($v:expr, |$x:ident| $body:expr) => {
        match $v {
            Value::F32($x) => Value::F32($body),
            Value::F64($x) => Value::F64($body),
            other => panic!("float expected: {other:?}"),
        }
    };
}

macro_rules! float_to_bool {
    ($v:expr, |$x:ident| $body:expr) => {
        match $v {
            Value::F32($x) => Value::Bool($body),
            Value::F64($x) => Value::Bool($body),
            other => panic!("float expected: {other:?}"),
        }
    };
}

macro_rules! float_bin {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            (Value::F32($x), Value::F32($y)) => Value::F32($body),
            (Value::F64($x), Value::F64($y)) => Value::F64($body),
            (a, b) => panic!("floats of one type expected: {a:?} {b:?}"),
        }
    };
}

/// The value of literal `lit` of type `ty`.
pub(crate) fn literal(lit: &Lit, ty: Prim) -> Value {
    match *lit {
        Lit::Bool(b) => Value::Bool(b),
        Lit::Int { value, .. } => Value::from_bits(ty, value as u64),
        Lit::Float {
            value, value_f32, ..
        } => match ty {
            Prim::F32 => Value::F32(value_f32),
            _ => Value::F64(value),
        },
    }
}

/// `-v` of an integer (wrapping).
pub(crate) fn int_neg(v: Value) -> Value {
    int_un!(v, |x| x.wrapping_neg())
}

/// `!v` of an integer.
pub(crate) fn int_not(v: Value) -> Value {
    int_un!(v, |x| !x)
}

/// `v as to`, with Rust's rules (float to integer saturates, NaN gives 0).
pub fn cast(v: Value, to: Prim) -> Value {
    macro_rules! to {
        ($x:expr) => {
            match to {
                Prim::U8 => Value::U8($x as u8),
                Prim::U16 => Value::U16($x as u16),
                Prim::U32 => Value::U32($x as u32),
                Prim::U64 => Value::U64($x as u64),
                Prim::I8 => Value::I8($x as i8),
                Prim::I16 => Value::I16($x as i16),
                Prim::I32 => Value::I32($x as i32),
                Prim::I64 => Value::I64($x as i64),
                Prim::F32 => Value::F32($x as f32),
                Prim::F64 => Value::F64($x as f64),
                Prim::Bool => panic!("Rust has no cast from {v:?} to bool"),
            }
        };
    }
    match v {
        Value::U8(x) => to!(x),
        Value::U16(x) => to!(x),
        Value::U32(x) => to!(x),
        Value::U64(x) => to!(x),
        Value::I8(x) => to!(x),
        Value::I16(x) => to!(x),
        Value::I32(x) => to!(x),
        Value::I64(x) => to!(x),
        Value::F32(x) => to!(x),
        Value::F64(x) => to!(x),
        Value::Bool(b) if to == Prim::Bool => Value::Bool(b),
        Value::Bool(b) => {
            assert!(!to.is_float(), "Rust has no cast from bool to {to:?}");
            to!(b as u8)
        }
    }
}

/// `a.powi(n)` as compiler-rt's `__powisf2`/`__powidf2` compute it (the
/// prelude's `scan_powi`): repeated squaring, then one reciprocal.
macro_rules! powi {
    ($a:expr, $n:expr, $t:ty) => {{
        let (mut a, mut n): ($t, i32) = ($a, $n);
        let recip = n < 0;
        let mut r: $t = 1.0;
        loop {
            if n & 1 != 0 {
                r *= a;
            }
            n /= 2;
            if n == 0 {
                break;
            }
            a *= a;
        }
        if recip {
            1.0 / r
        } else {
            r
        }
    }};
}

/// Whether `a` and `b` are zeros of different signs.
fn opposite_zeros(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::F32(x), Value::F32(y)) => x == 0.0 && y == 0.0 && x.to_bits() != y.to_bits(),
        (Value::F64(x), Value::F64(y)) => x == 0.0 && y == 0.0 && x.to_bits() != y.to_bits(),
        _ => false,
    }
}

impl<'a> Eval<'a> {
    fn new(checked: &'a Checked<'a>) -> Self {
        Eval {
            checked,
            env: Vec::new(),
            unspecified: false,
            inexact: false,
        }
    }

    fn ty(&self, e: &Expr) -> Prim {
        self.checked.type_of(e)
    }

    fn block(&mut self, b: &'a Block) -> Value {
        let saved = self.env.len();
        for (name, value) in &b.lets {
            let v = self.expr(value);
            self.env.push((name, v));
        }
        let v = self.expr(&b.value);
        self.env.truncate(saved);
        v
    }

    fn expr(&mut self, e: &'a Expr) -> Value {
        match e {
            Expr::Lit(lit) => literal(lit, self.ty(e)),
            Expr::Var(v) => {
                self.env
                    .iter()
                    .rev()
                    .find(|(n, _)| n == v)
                    .unwrap_or_else(|| panic!("unbound {v}"))
                    .1
            }
            Expr::Unary(UnOp::Neg, inner) => match self.expr(inner) {
                v @ (Value::F32(_) | Value::F64(_)) => float_un!(v, |x| -x),
                v => int_un!(v, |x| x.wrapping_neg()),
            },
            Expr::Unary(UnOp::Not, inner) => match self.expr(inner) {
                Value::Bool(b) => Value::Bool(!b),
                v => int_un!(v, |x| !x),
            },
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                binary(*op, a, b)
            }
            Expr::Cast(inner, to) => cast(self.expr(inner), *to),
            Expr::Typed(inner, _) => self.expr(inner),
            Expr::Call { method, args, .. } => {
                let vals: Vec<Value> = args.iter().map(|a| self.expr(a)).collect();
                self.call(method.rust, &vals)
            }
            Expr::Const(p, c) => constant(*p, *c),
            Expr::If(c, t, f) => {
                if self.expr(c) == Value::Bool(true) {
                    self.block(t)
                } else {
                    self.block(f)
                }
            }
            Expr::Match(scrutinee, arms) => {
                let s = self.expr(scrutinee);
                for (pattern, value) in arms {
                    if self.matches(pattern, s) {
                        return self.expr(value);
                    }
                }
                panic!("no arm matched {s:?}")
            }
            Expr::Block(b) => self.block(b),
            other => panic!("not interpreted: {other:?}"),
        }
    }

    fn matches(&mut self, p: &'a Pattern, s: Value) -> bool {
        match p {
            Pattern::Wild => true,
            Pattern::Lit { lit, negative } => {
                let v = literal(lit, s.prim());
                let v = if *negative {
                    int_un!(v, |x| x.wrapping_neg())
                } else {
                    v
                };
                v == s
            }
            Pattern::Range { lo, hi, inclusive } => {
                let x = s.as_i128();
                let lo_ok = lo.as_deref().is_none_or(|b| self.expr(b).as_i128() <= x);
                let hi_ok = hi.as_deref().is_none_or(|b| {
                    let h = self.expr(b).as_i128();
                    if *inclusive {
                        x <= h
                    } else {
                        x < h
                    }
                });
                lo_ok && hi_ok
            }
            Pattern::Or(alts) => alts.iter().any(|a| self.matches(a, s)),
        }
    }

    fn call(&mut self, method: &str, v: &[Value]) -> Value {
        if TRANSCENDENTAL.contains(&method) {
            self.inexact = true;
        }
        call_method(method, v, &mut self.unspecified)
    }
}

/// `v[0].method(v[1..])` with Rust's semantics; sets `unspecified` where
/// Rust leaves a sign unspecified ([`Outcome::unspecified`]).
pub(crate) fn call_method(method: &str, v: &[Value], unspecified: &mut bool) -> Value {
    {
        let a = v[0];
        let is_float = a.prim().is_float();
        match method {
            "min" | "max" if is_float => {
                if opposite_zeros(a, v[1]) {
                    *unspecified = true;
                }
                if method == "min" {
                    float_bin!(a, v[1], |x, y| x.min(y))
                } else {
                    float_bin!(a, v[1], |x, y| x.max(y))
                }
            }
            "min" => int_bin!(a, v[1], |x, y| std::cmp::min(x, y)),
            "max" => int_bin!(a, v[1], |x, y| std::cmp::max(x, y)),
            "abs" | "wrapping_abs" => match a {
                Value::I8(x) => Value::I8(x.wrapping_abs()),
                Value::I16(x) => Value::I16(x.wrapping_abs()),
                Value::I32(x) => Value::I32(x.wrapping_abs()),
                Value::I64(x) => Value::I64(x.wrapping_abs()),
                Value::F32(x) => Value::F32(x.abs()),
                Value::F64(x) => Value::F64(x.abs()),
                // `semantics::abs` of an unsigned integer is the identity.
                other => other,
            },
            "wrapping_add" => int_bin!(a, v[1], |x, y| x.wrapping_add(y)),
            "wrapping_sub" => int_bin!(a, v[1], |x, y| x.wrapping_sub(y)),
            "wrapping_mul" => int_bin!(a, v[1], |x, y| x.wrapping_mul(y)),
            "wrapping_neg" => int_un!(a, |x| x.wrapping_neg()),
            "wrapping_shl" | "wrapping_shr" | "rotate_left" | "rotate_right" => {
                let Value::U32(n) = v[1] else {
                    panic!("u32 amount expected")
                };
                match method {
                    "wrapping_shl" => int_un!(a, |x| x.wrapping_shl(n)),
                    "wrapping_shr" => int_un!(a, |x| x.wrapping_shr(n)),
                    "rotate_left" => int_un!(a, |x| x.rotate_left(n)),
                    _ => int_un!(a, |x| x.rotate_right(n)),
                }
            }
            "saturating_add" => int_bin!(a, v[1], |x, y| x.saturating_add(y)),
            "saturating_sub" => int_bin!(a, v[1], |x, y| x.saturating_sub(y)),
            "saturating_mul" => int_bin!(a, v[1], |x, y| x.saturating_mul(y)),
            "count_ones" => int_to_u32!(a, |x| x.count_ones()),
            "leading_zeros" => int_to_u32!(a, |x| x.leading_zeros()),
            "trailing_zeros" => int_to_u32!(a, |x| x.trailing_zeros()),
            "mul_add" => match (a, v[1], v[2]) {
                (Value::F32(x), Value::F32(y), Value::F32(z)) => Value::F32(x.mul_add(y, z)),
                (Value::F64(x), Value::F64(y), Value::F64(z)) => Value::F64(x.mul_add(y, z)),
                other => panic!("mul_add of {other:?}"),
            },
            "sqrt" => float_un!(a, |x| x.sqrt()),
            "cbrt" => float_un!(a, |x| x.cbrt()),
            "exp" => float_un!(a, |x| x.exp()),
            "exp2" => float_un!(a, |x| x.exp2()),
            "ln" => float_un!(a, |x| x.ln()),
            "log2" => float_un!(a, |x| x.log2()),
            "log10" => float_un!(a, |x| x.log10()),
            "sin" => float_un!(a, |x| x.sin()),
            "cos" => float_un!(a, |x| x.cos()),
            "tanh" => float_un!(a, |x| x.tanh()),
            "floor" => float_un!(a, |x| x.floor()),
            "ceil" => float_un!(a, |x| x.ceil()),
            "round" => float_un!(a, |x| x.round()),
            "trunc" => float_un!(a, |x| x.trunc()),
            "powi" => {
                let Value::I32(n) = v[1] else {
                    panic!("i32 exponent expected")
                };
                match a {
                    Value::F32(x) => Value::F32(powi!(x, n, f32)),
                    Value::F64(x) => Value::F64(powi!(x, n, f64)),
                    other => panic!("powi of {other:?}"),
                }
            }
            "powf" => float_bin!(a, v[1], |x, y| x.powf(y)),
            "hypot" => float_bin!(a, v[1], |x, y| x.hypot(y)),
            "copysign" => {
                if v[1].is_nan() {
                    *unspecified = true;
                }
                float_bin!(a, v[1], |x, y| x.copysign(y))
            }
            "is_nan" => float_to_bool!(a, |x| x.is_nan()),
            "is_finite" => float_to_bool!(a, |x| x.is_finite()),
            "is_infinite" => float_to_bool!(a, |x| x.is_infinite()),
            other => panic!("method {other} not interpreted"),
        }
    }
}

/// A binary operator on two evaluated operands (`scan_core::semantics`).
pub fn binary(op: BinOp, a: Value, b: Value) -> Value {
    let is_float = a.prim().is_float();
    match op {
        BinOp::Add if is_float => float_bin!(a, b, |x, y| x + y),
        BinOp::Sub if is_float => float_bin!(a, b, |x, y| x - y),
        BinOp::Mul if is_float => float_bin!(a, b, |x, y| x * y),
        BinOp::Div if is_float => float_bin!(a, b, |x, y| x / y),
        BinOp::Rem if is_float => float_bin!(a, b, |x, y| x % y),
        BinOp::Add => int_bin!(a, b, |x, y| x.wrapping_add(y)),
        BinOp::Sub => int_bin!(a, b, |x, y| x.wrapping_sub(y)),
        BinOp::Mul => int_bin!(a, b, |x, y| x.wrapping_mul(y)),
        BinOp::Div => int_bin!(a, b, |x, y| if y == 0 { 0 } else { x.wrapping_div(y) }),
        BinOp::Rem => int_bin!(a, b, |x, y| if y == 0 { 0 } else { x.wrapping_rem(y) }),
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
            if let (Value::Bool(x), Value::Bool(y)) = (a, b) {
                return Value::Bool(match op {
                    BinOp::BitAnd => x & y,
                    BinOp::BitOr => x | y,
                    _ => x ^ y,
                });
            }
            match op {
                BinOp::BitAnd => int_bin!(a, b, |x, y| x & y),
                BinOp::BitOr => int_bin!(a, b, |x, y| x | y),
                _ => int_bin!(a, b, |x, y| x ^ y),
            }
        }
        BinOp::Shl | BinOp::Shr => {
            // Any integer amount, converted like `as u32`, modulo the width.
            let Value::U32(n) = cast(b, Prim::U32) else {
                unreachable!()
            };
            if op == BinOp::Shl {
                int_un!(a, |x| x.wrapping_shl(n))
            } else {
                int_un!(a, |x| x.wrapping_shr(n))
            }
        }
        BinOp::And => Value::Bool(a == Value::Bool(true) && b == Value::Bool(true)),
        BinOp::Or => Value::Bool(a == Value::Bool(true) || b == Value::Bool(true)),
        BinOp::Eq => Value::Bool(a == b),
        BinOp::Ne => Value::Bool(a != b),
        BinOp::Lt => Value::Bool(a < b),
        BinOp::Le => Value::Bool(a <= b),
        BinOp::Gt => Value::Bool(a > b),
        BinOp::Ge => Value::Bool(a >= b),
    }
}

/// `p::c`.
pub fn constant(p: Prim, c: PrimConst) -> Value {
    macro_rules! int_const {
        ($t:ident, $v:ident) => {
            match c {
                PrimConst::Max => Value::$v($t::MAX),
                PrimConst::Min => Value::$v($t::MIN),
                PrimConst::Bits => Value::U32($t::BITS),
                other => panic!("{p:?} has no {other:?}"),
            }
        };
    }
    macro_rules! float_const {
        ($t:ident, $v:ident) => {
            Value::$v(match c {
                PrimConst::Max => $t::MAX,
                PrimConst::Min => $t::MIN,
                PrimConst::Infinity => $t::INFINITY,
                PrimConst::NegInfinity => $t::NEG_INFINITY,
                PrimConst::Nan => $t::NAN,
                PrimConst::Epsilon => $t::EPSILON,
                PrimConst::MinPositive => $t::MIN_POSITIVE,
                PrimConst::Bits => panic!("floats have no BITS"),
            })
        };
    }
    match p {
        Prim::U8 => int_const!(u8, U8),
        Prim::U16 => int_const!(u16, U16),
        Prim::U32 => int_const!(u32, U32),
        Prim::U64 => int_const!(u64, U64),
        Prim::I8 => int_const!(i8, I8),
        Prim::I16 => int_const!(i16, I16),
        Prim::I32 => int_const!(i32, I32),
        Prim::I64 => int_const!(i64, I64),
        Prim::F32 => float_const!(f32, F32),
        Prim::F64 => float_const!(f64, F64),
        Prim::Bool => panic!("bool has no constants"),
    }
}

/// Methods whose results may legitimately differ between Rust and a GPU in
/// their last bits (libm's and CUDA's math libraries differ).
pub const TRANSCENDENTAL: [&str; 11] = [
    "sin", "cos", "exp", "exp2", "ln", "log2", "log10", "tanh", "cbrt", "powf", "hypot",
];

// ---------------------------------------------------------------------------
// Whole operators.
// ---------------------------------------------------------------------------

/// An operator over a primitive element, checked as rustc would check its
/// `#[scan_op]` (the identity a value of the element type, the body a
/// function of two elements returning one) and ready to evaluate on the
/// host: the CPU side of an operator built at run time.
///
/// ```
/// use kernels_gen::eval::{OpValues, Value};
/// use kernels_gen::ir_text::parse;
///
/// let text = r#"(op "affine_step" (prim i32) (params "x" "y") (identity (int 0 -))
///     (body (block (let "t" (mul (var "x") (int 3 -))) (add (var "t") (var "y"))))
///     (block_threads auto) (items_per_thread auto))"#;
/// let (op, _) = parse(text).unwrap();
/// let op = OpValues::new(&op).unwrap();
/// assert_eq!(op.identity(), Value::I32(0));
/// assert_eq!(op.combine(Value::I32(2), Value::I32(5)).value, Value::I32(11));
/// // Integer arithmetic wraps, as `#[scan_op]`'s does.
/// assert_eq!(op.combine(Value::I32(i32::MAX), Value::I32(0)).value, Value::I32(i32::MAX.wrapping_mul(3)));
/// ```
pub struct OpValues<'o> {
    element: Prim,
    params: &'o [String; 2],
    identity: Value,
    combine: Checked<'o>,
}

/// Where an operator's check failed ([`OpCheckError::place`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpPlace {
    /// Its element type (a struct, which this evaluator does not take).
    Element,
    /// Its operands' names.
    Operands,
    /// Its identity.
    Identity,
    /// Statement `k` of its body ([`CheckError::statement`]).
    Statement(usize),
}

/// Why [`OpValues::new`] refused an operator, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpCheckError {
    /// The operator's name.
    pub operator: String,
    /// What is wrong.
    pub message: String,
    /// Where.
    pub place: OpPlace,
}

impl std::fmt::Display for OpCheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.place {
            OpPlace::Identity => write!(
                f,
                "operator `{}`, identity: {}",
                self.operator, self.message
            ),
            _ => write!(f, "operator `{}`: {}", self.operator, self.message),
        }
    }
}

impl std::error::Error for OpCheckError {}

impl<'o> OpValues<'o> {
    /// Checks `op`; `Err` says what rustc would reject and where, or that
    /// its element is a struct (which this evaluator does not take yet).
    pub fn new(op: &'o OpDesc) -> Result<OpValues<'o>, OpCheckError> {
        let error = |message: String, place: OpPlace| OpCheckError {
            operator: op.name.clone(),
            message,
            place,
        };
        let ElementType::Prim(element) = op.element else {
            return Err(error(
                format!(
                    "a struct element ({}) is not evaluated on the host yet; primitive elements are",
                    op.element.cuda_name()
                ),
                OpPlace::Element,
            ));
        };
        if op.params[0] == op.params[1] {
            return Err(error(
                format!("both operands are named `{}`", op.params[0]),
                OpPlace::Operands,
            ));
        }
        let identity = Block {
            lets: Vec::new(),
            value: op.identity.clone(),
        };
        let identity = check(&identity, element, &[])
            .map_err(|m| error(m, OpPlace::Identity))?
            .eval(&[])
            .value;
        let vars = [
            (op.params[0].clone(), element),
            (op.params[1].clone(), element),
        ];
        let combine = check_statements(&op.body, element, &vars)
            .map_err(|e| error(e.message, OpPlace::Statement(e.statement)))?;
        Ok(OpValues {
            element,
            params: &op.params,
            identity,
            combine,
        })
    }

    /// The element type.
    pub fn element(&self) -> Prim {
        self.element
    }

    /// The identity's value.
    pub fn identity(&self) -> Value {
        self.identity
    }

    /// The operands' names.
    pub(crate) fn params(&self) -> [&str; 2] {
        [&self.params[0], &self.params[1]]
    }

    /// The checked body.
    pub(crate) fn checked(&self) -> &Checked<'_> {
        &self.combine
    }

    /// `x ∘ y` (`x` the earlier element), with whether Rust leaves some of
    /// its bits unspecified ([`Outcome`]). Both are values of the element
    /// type.
    pub fn combine(&self, x: Value, y: Value) -> Outcome {
        assert!(
            x.prim() == self.element && y.prim() == self.element,
            "operands of the element type {:?}: {x:?}, {y:?}",
            self.element
        );
        self.combine
            .eval(&[(&self.params[0], x), (&self.params[1], y)])
    }
}

/// A load or store stage over primitives (`kernels_gen::stage`: a map, a
/// predicate or an equality), checked as rustc would check its function
/// and evaluated on the host: what the CPU backend runs for a stage built
/// at run time.
///
/// ```
/// use kernels_gen::eval::{StageValues, Value};
/// use kernels_gen::ir_text::parse_stage;
///
/// let text = r#"(stage "small" predicate (params "x") (input (prim f32)) (output (prim bool))
///     (body (block (lt (var "x") (float 0x3ff0000000000000 0x3f800000 -)))))"#;
/// let stage = parse_stage(text).unwrap();
/// let stage = StageValues::new(&stage).unwrap();
/// assert_eq!(stage.apply(&[Value::F32(0.5)]).value, Value::Bool(true));
/// assert_eq!(stage.apply(&[Value::F32(2.0)]).value, Value::Bool(false));
/// ```
pub struct StageValues<'s> {
    output: Prim,
    /// The function's inputs in order: the parameters, or for a struct
    /// element each parameter's leaves.
    inputs: Vec<(String, Prim)>,
    body: Checked<'s>,
}

/// Why [`StageValues::new`] refused a stage, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageCheckError {
    /// The stage's name.
    pub stage: String,
    /// What is wrong.
    pub message: String,
    /// The statement of its body it was found in, if in its body
    /// ([`CheckError::statement`]).
    pub statement: Option<usize>,
}

impl std::fmt::Display for StageCheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stage `{}`: {}", self.stage, self.message)
    }
}

impl std::error::Error for StageCheckError {}

impl<'s> StageValues<'s> {
    /// Checks `stage`, over a primitive: its parameters as many as its kind
    /// takes and named apart, a predicate's and an equality's result
    /// `bool`, its body one rustc would accept.
    pub fn new(stage: &'s StageDesc) -> Result<StageValues<'s>, StageCheckError> {
        let ElementType::Prim(input) = stage.input else {
            return Err(stage_error(
                stage,
                format!(
                    "a struct ({}) is checked lowered (StageValues::lowered)",
                    stage.input.cuda_name()
                ),
                None,
            ));
        };
        let inputs = stage.params.iter().map(|p| (p.clone(), input)).collect();
        Self::check_body(stage, &stage.body, inputs)
    }

    /// Checks `stage`, over a struct, as `lowered` (its body over its
    /// parameters' leaves, [`crate::lower::lower_stage`]); the function's
    /// inputs are the first parameter's leaves, then the second's.
    pub fn lowered(
        stage: &StageDesc,
        lowered: &'s crate::lower::LoweredStage,
    ) -> Result<StageValues<'s>, StageCheckError> {
        let inputs = lowered
            .params
            .iter()
            .flat_map(|names| {
                names
                    .iter()
                    .zip(&lowered.leaves)
                    .map(|(name, leaf)| (name.clone(), leaf.prim))
            })
            .collect();
        Self::check_body(stage, &lowered.body, inputs)
    }

    fn check_body(
        stage: &StageDesc,
        body: &'s Block,
        inputs: Vec<(String, Prim)>,
    ) -> Result<StageValues<'s>, StageCheckError> {
        let ElementType::Prim(output) = stage.output else {
            return Err(stage_error(
                stage,
                "a struct result is not evaluated on the host".to_string(),
                None,
            ));
        };
        let arity = match stage.kind {
            StageKind::Map | StageKind::Predicate => 1,
            StageKind::Equality => 2,
        };
        if stage.params.len() != arity {
            return Err(stage_error(
                stage,
                format!(
                    "{} parameters where this stage takes {arity}",
                    stage.params.len()
                ),
                None,
            ));
        }
        if arity == 2 && stage.params[0] == stage.params[1] {
            return Err(stage_error(
                stage,
                format!("both parameters are named `{}`", stage.params[0]),
                None,
            ));
        }
        if stage.kind != StageKind::Map && output != Prim::Bool {
            return Err(stage_error(
                stage,
                format!(
                    "a {:?} gives `bool`, not `{}`",
                    stage.kind,
                    output.rust_name()
                ),
                None,
            ));
        }
        let body = check_statements(body, output, &inputs)
            .map_err(|e| stage_error(stage, e.message, Some(e.statement)))?;
        Ok(StageValues {
            output,
            inputs,
            body,
        })
    }

    /// The result's type.
    pub fn output(&self) -> Prim {
        self.output
    }

    /// The function's inputs, in order, and their types.
    pub fn inputs(&self) -> &[(String, Prim)] {
        &self.inputs
    }

    /// The checked body.
    pub(crate) fn checked(&self) -> &Checked<'_> {
        &self.body
    }

    /// The function of `args`, the values of [`StageValues::inputs`].
    pub fn apply(&self, args: &[Value]) -> Outcome {
        assert!(
            args.len() == self.inputs.len()
                && args
                    .iter()
                    .zip(&self.inputs)
                    .all(|(a, (_, p))| a.prim() == *p),
            "arguments of types {:?}: {args:?}",
            self.inputs
        );
        let inputs: Vec<(&str, Value)> = self
            .inputs
            .iter()
            .map(|(n, _)| n.as_str())
            .zip(args.iter().copied())
            .collect();
        self.body.eval(&inputs)
    }
}

fn stage_error(stage: &StageDesc, message: String, statement: Option<usize>) -> StageCheckError {
    StageCheckError {
        stage: stage.name.clone(),
        message,
        statement,
    }
}

/// An operator over a struct element, lowered to its leaves
/// ([`crate::lower::lower_op`]), each leaf's block checked as rustc would
/// check it and evaluated on the host; values are the element's leaves in
/// order ([`crate::lower::Lowered::leaves`]).
pub struct StructValues<'l> {
    lowered: &'l crate::lower::Lowered,
    identity: Vec<Value>,
    bodies: Vec<Checked<'l>>,
}

impl<'l> StructValues<'l> {
    /// Checks every leaf of `lowered`'s identity and body.
    pub fn new(lowered: &'l crate::lower::Lowered) -> Result<StructValues<'l>, String> {
        let vars: Vec<(String, Prim)> = lowered
            .operands
            .iter()
            .flat_map(|names| names.iter().zip(&lowered.leaves))
            .map(|(name, leaf)| (name.clone(), leaf.prim))
            .collect();
        let mut identity = Vec::new();
        let mut bodies = Vec::new();
        for (k, leaf) in lowered.leaves.iter().enumerate() {
            let value = check(&lowered.identity[k], leaf.prim, &[])
                .map_err(|e| format!("identity, `{}`: {e}", leaf.path))?
                .eval(&[])
                .value;
            identity.push(value);
            bodies.push(
                check(&lowered.bodies[k], leaf.prim, &vars)
                    .map_err(|e| format!("`{}`: {e}", leaf.path))?,
            );
        }
        Ok(StructValues {
            lowered,
            identity,
            bodies,
        })
    }

    /// The identity's leaves.
    pub fn identity(&self) -> Vec<Value> {
        self.identity.clone()
    }

    /// The operands' leaf variables, the first's then the second's.
    pub(crate) fn operand_names(&self) -> Vec<&str> {
        self.lowered
            .operands
            .iter()
            .flatten()
            .map(String::as_str)
            .collect()
    }

    /// Each leaf's checked body.
    pub(crate) fn checked_bodies(&self) -> &[Checked<'_>] {
        &self.bodies
    }

    /// `x ∘ y` (`x` the earlier element), leaf by leaf.
    pub fn combine(&self, x: &[Value], y: &[Value]) -> Vec<Value> {
        self.combine_outcomes(x, y)
            .into_iter()
            .map(|o| o.value)
            .collect()
    }

    /// [`combine`](Self::combine) with each leaf's [`Outcome`].
    pub fn combine_outcomes(&self, x: &[Value], y: &[Value]) -> Vec<Outcome> {
        let leaves = &self.lowered.leaves;
        assert!(
            x.len() == leaves.len() && y.len() == leaves.len(),
            "operands of {} leaves",
            leaves.len()
        );
        let inputs: Vec<(&str, Value)> = self.lowered.operands[0]
            .iter()
            .zip(x)
            .chain(self.lowered.operands[1].iter().zip(y))
            .map(|(name, v)| (name.as_str(), *v))
            .collect();
        self.bodies.iter().map(|b| b.eval(&inputs)).collect()
    }
}
