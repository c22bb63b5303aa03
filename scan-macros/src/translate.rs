//! Translating the operator's Rust into the `kernels-gen` IR.
//!
//! The supported subset is what can be printed as CUDA with the same
//! meaning; everything else is reported on its own tokens, all problems at
//! once. Returning `None` means "an error was recorded here".

use crate::ast::{reserved_name, Errors};
use kernels_gen::ir::{self, BinOp, Block, Expr, Lit, Pattern, Prim, PrimConst, StructName, UnOp};
use std::collections::HashMap;
use syn::spanned::Spanned;

const SUBSET: &str = "operators may use: literals, their two operands, `let` bindings, arithmetic, comparisons, \
                      logic, bit operations, shifts, `as` casts between primitives, `if`/`else`, `match` on integers, \
                      struct literals, field access, array indexing with constant indices, numeric methods \
                      (`min`, `max`, `abs`, `mul_add`, `sqrt`, `wrapping_add`, `saturating_sub`, …) and primitive \
                      constants (`f32::INFINITY`, `u32::MAX`, …)";

/// Translation state: the names in scope and the element's name.
pub struct Translator<'e> {
    pub errors: &'e mut Errors,
    /// Rust name → IR name, innermost scope last.
    scopes: Vec<HashMap<String, String>>,
    used_names: HashMap<String, usize>,
    /// Struct names that mean "the element" (`Self` where allowed, its ident).
    element_names: Vec<String>,
    self_allowed: bool,
    /// Set just before translating a struct literal's field value: the only
    /// place an array literal can go (C++ arrays are not values).
    array_allowed: bool,
}

impl<'e> Translator<'e> {
    pub fn new(errors: &'e mut Errors, element_name: Option<String>, self_allowed: bool) -> Self {
        Translator {
            errors,
            scopes: vec![HashMap::new()],
            used_names: HashMap::new(),
            element_names: element_name.into_iter().collect(),
            self_allowed,
            array_allowed: false,
        }
    }

    /// Binds a Rust name, renaming shadowed ones so that C++ sees distinct names.
    pub fn bind(&mut self, ident: &syn::Ident) -> String {
        let name = ident.to_string();
        if let Some(why) = reserved_name(&name) {
            self.errors.push(ident, format!("`{name}`: {why}"));
        }
        let count = self.used_names.entry(name.clone()).or_insert(0);
        *count += 1;
        let ir_name = if *count == 1 {
            name.clone()
        } else {
            format!("{name}_{count}")
        };
        self.scopes
            .last_mut()
            .expect("a scope")
            .insert(name, ir_name.clone());
        ir_name
    }

    fn lookup(&self, name: &str) -> Option<&String> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// A block: `let` statements then a final expression.
    pub fn block(&mut self, block: &syn::Block) -> Option<Block> {
        self.scopes.push(HashMap::new());
        let result = self.block_inner(block);
        self.scopes.pop();
        result
    }

    fn block_inner(&mut self, block: &syn::Block) -> Option<Block> {
        let mut lets = Vec::new();
        let mut value = None;
        let mut ok = true;
        let n = block.stmts.len();
        for (i, stmt) in block.stmts.iter().enumerate() {
            match stmt {
                syn::Stmt::Expr(e, None) if i + 1 == n => value = self.expr(e),
                _ => self.statement(stmt, i + 1 == n, &mut lets, &mut ok),
            }
        }
        if value.is_none() && ok {
            let span = block
                .stmts
                .last()
                .map(|s| s.span())
                .unwrap_or(block.brace_token.span.join());
            self.errors.push(
                span,
                "the block must end with the value it produces (an expression without `;`)",
            );
        }
        let value = value?;
        ok.then_some(Block { lets, value })
    }

    /// A block whose final expression gives several values (a sort key's
    /// tuple): its `let`s translated once, then each of `values` (the
    /// tuple's elements) in their scope, as a block each.
    pub fn block_values(&mut self, block: &syn::Block, values: &[syn::Expr]) -> Option<Vec<Block>> {
        self.scopes.push(HashMap::new());
        let mut lets = Vec::new();
        let mut ok = true;
        let n = block.stmts.len();
        for stmt in &block.stmts[..n.saturating_sub(1)] {
            self.statement(stmt, false, &mut lets, &mut ok);
        }
        let translated: Vec<Option<Expr>> = values.iter().map(|v| self.expr(v)).collect();
        self.scopes.pop();
        let blocks = translated
            .into_iter()
            .map(|value| {
                value.map(|value| Block {
                    lets: lets.clone(),
                    value,
                })
            })
            .collect::<Option<Vec<Block>>>()?;
        ok.then_some(blocks)
    }

    /// A statement before a block's final expression (or a final one
    /// ending in `;`): a `let` into `lets`; anything else an error.
    fn statement(
        &mut self,
        stmt: &syn::Stmt,
        last: bool,
        lets: &mut Vec<(String, Expr)>,
        ok: &mut bool,
    ) {
        match stmt {
            syn::Stmt::Local(local) => match self.local(local) {
                Some(l) => lets.push(l),
                None => *ok = false,
            },
            syn::Stmt::Expr(e, semi) => {
                // Report what is inside (a `return`, a loop…), then the statement itself.
                let _ = self.expr(e);
                let why = if last && semi.is_some() {
                    "remove the `;`: the operator's value is its final expression"
                } else {
                    "a statement here would have no effect: an operator body is `let` bindings followed by \
                     the value it produces"
                };
                self.errors.push(e, why);
                *ok = false;
            }
            syn::Stmt::Item(item) => {
                self.errors.push(
                    item,
                    "items (fn, struct, use, …) cannot be declared inside an operator",
                );
                *ok = false;
            }
            syn::Stmt::Macro(m) => {
                self.errors
                    .push(&m.mac, "macros cannot be translated to CUDA");
                *ok = false;
            }
        }
    }

    fn local(&mut self, local: &syn::Local) -> Option<(String, Expr)> {
        let (ident, annotated) = match &local.pat {
            syn::Pat::Ident(p) => (p, None),
            syn::Pat::Type(t) => match &*t.pat {
                syn::Pat::Ident(p) => (p, Some(&*t.ty)),
                other => {
                    self.errors.push(other, "`let` must bind a single name");
                    return None;
                }
            },
            other => {
                self.errors.push(
                    other,
                    "`let` must bind a single name (no tuple or struct patterns)",
                );
                return None;
            }
        };
        if let Some(m) = &ident.mutability {
            self.errors.push(m, "bindings are immutable in operators (no `mut`): compute a new value with another `let`");
        }
        if let Some(r) = &ident.by_ref {
            self.errors
                .push(r, "references are not supported in operators");
        }
        let Some(init) = &local.init else {
            self.errors.push(&local.pat, "`let` needs a value");
            return None;
        };
        if let Some((_, diverge)) = &init.diverge {
            self.errors.push(diverge, "`let … else` is not supported");
        }
        let value = self.expr(&init.expr);
        let prim = annotated.and_then(|t| match t {
            syn::Type::Path(p) => p
                .path
                .get_ident()
                .and_then(|i| Prim::from_rust_name(&i.to_string())),
            _ => None,
        });
        let name = self.bind(&ident.ident);
        // `let k: u64 = 1 << 40;` types the whole value, literals included
        // (a `u64` shift, as rustc infers it).
        let value = match prim {
            Some(p) => Expr::Typed(Box::new(value?), p),
            None => value?,
        };
        Some((name, value))
    }

    pub fn expr(&mut self, e: &syn::Expr) -> Option<Expr> {
        let array_allowed = std::mem::take(&mut self.array_allowed);
        if matches!(e, syn::Expr::Array(_) | syn::Expr::Repeat(_)) && !array_allowed {
            self.errors.push(
                e,
                "array literals can only initialise an array field of a struct literal",
            );
            return None;
        }
        match e {
            syn::Expr::Lit(l) => self.literal(&l.lit).map(|(lit, negative)| {
                let lit = Expr::Lit(lit);
                if negative {
                    Expr::Unary(UnOp::Neg, Box::new(lit))
                } else {
                    lit
                }
            }),
            syn::Expr::Path(p) => self.path(p),
            syn::Expr::Paren(p) => self.expr(&p.expr),
            syn::Expr::Group(g) => self.expr(&g.expr),
            syn::Expr::Field(f) => {
                let base = self.expr(&f.base);
                match &f.member {
                    syn::Member::Named(name) => {
                        Some(Expr::Field(Box::new(base?), name.to_string()))
                    }
                    syn::Member::Unnamed(_) => {
                        self.errors.push(
                            &f.member,
                            "tuple fields are not supported (elements have named fields)",
                        );
                        None
                    }
                }
            }
            syn::Expr::Index(i) => {
                let base = self.expr(&i.expr);
                let index = crate::ast::int_literal::<u64>(&i.index);
                if index.is_none() {
                    self.errors.push(&i.index, "array indices must be integer literals, so that they are checked at compile time");
                }
                Some(Expr::Index(Box::new(base?), index?))
            }
            syn::Expr::Unary(u) => {
                let op = match u.op {
                    syn::UnOp::Neg(_) => UnOp::Neg,
                    syn::UnOp::Not(_) => UnOp::Not,
                    _ => {
                        self.errors.push(
                            u.op,
                            "references and dereferences are not supported in operators",
                        );
                        return None;
                    }
                };
                Some(Expr::Unary(op, Box::new(self.expr(&u.expr)?)))
            }
            syn::Expr::Binary(b) => self.binary(b),
            syn::Expr::Cast(c) => {
                let inner = self.expr(&c.expr);
                let to = self.prim_type(&c.ty);
                Some(Expr::Cast(Box::new(inner?), to?))
            }
            syn::Expr::MethodCall(m) => self.method_call(m),
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::If(i) => self.if_expr(i),
            syn::Expr::Match(m) => self.match_expr(m),
            syn::Expr::Block(b) => {
                if let Some(label) = &b.label {
                    self.errors.push(label, "labels are not supported");
                }
                Some(Expr::Block(Box::new(self.block(&b.block)?)))
            }
            syn::Expr::Struct(s) => self.struct_literal(s),
            syn::Expr::Array(a) => {
                let items: Vec<_> = a.elems.iter().map(|e| self.expr(e)).collect();
                // (elements are scalars: `expr` refuses nested array literals)
                items
                    .into_iter()
                    .collect::<Option<Vec<_>>>()
                    .map(Expr::Array)
            }
            syn::Expr::Repeat(r) => {
                let value = self.expr(&r.expr);
                let len = crate::ast::int_literal::<u64>(&r.len);
                if len.is_none() {
                    self.errors
                        .push(&r.len, "array lengths must be integer literals");
                }
                Some(Expr::Repeat(Box::new(value?), len?))
            }
            other => {
                self.unsupported(other);
                None
            }
        }
    }

    fn unsupported(&mut self, e: &syn::Expr) {
        let what = match e {
            syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_) => {
                "loops are not supported: an operator combines two elements in a fixed number of steps"
            }
            syn::Expr::Return(_) => "`return` is not supported: the operator's value is its final expression",
            syn::Expr::Break(_) | syn::Expr::Continue(_) => "`break`/`continue` are not supported",
            syn::Expr::Closure(_) => "closures cannot be defined inside an operator",
            syn::Expr::Reference(_) => "references are not supported in operators: elements are passed by value",
            syn::Expr::Assign(_) => "assignment is not supported: bindings are immutable, use another `let`",
            syn::Expr::Macro(_) => "macros cannot be translated to CUDA",
            syn::Expr::Tuple(_) => "tuples are not supported: use a #[scan_op] struct",
            syn::Expr::Range(_) => "ranges are only supported as `match` patterns",
            syn::Expr::Try(_) => "`?` is not supported",
            syn::Expr::Async(_) | syn::Expr::Await(_) => "async code is not supported",
            syn::Expr::Unsafe(_) => "`unsafe` blocks are not supported",
            syn::Expr::Let(_) => "`if let` / `let` in conditions is not supported: use `match` on an integer",
            _ => {
                self.errors.push(e, format!("this expression is not supported; {SUBSET}"));
                return;
            }
        };
        self.errors.push(e, what);
    }

    /// A literal and whether it carries a minus sign (syn keeps the sign of
    /// negative literal patterns inside the literal).
    fn literal(&mut self, lit: &syn::Lit) -> Option<(Lit, bool)> {
        let split = |digits: &str| -> (String, bool) {
            match digits.strip_prefix('-') {
                Some(rest) => (rest.to_string(), true),
                None => (digits.to_string(), false),
            }
        };
        match lit {
            syn::Lit::Int(i) => {
                let suffix = self.suffix(i.suffix(), lit)?;
                let (digits, negative) = split(i.base10_digits());
                if suffix.is_some_and(|p| p.is_float()) {
                    let value: f64 = digits.parse().ok()?;
                    let value_f32: f32 = digits.parse().ok()?;
                    return Some((
                        Lit::Float {
                            value,
                            value_f32,
                            suffix,
                        },
                        negative,
                    ));
                }
                match digits.parse::<u128>() {
                    Ok(value) => Some((Lit::Int { value, suffix }, negative)),
                    Err(e) => {
                        self.errors
                            .push(lit, format!("this integer literal cannot be read: {e}"));
                        None
                    }
                }
            }
            syn::Lit::Float(f) => {
                let suffix = self.suffix(f.suffix(), lit)?;
                let (digits, negative) = split(f.base10_digits());
                match (digits.parse::<f64>(), digits.parse::<f32>()) {
                    (Ok(value), Ok(value_f32)) => Some((
                        Lit::Float {
                            value,
                            value_f32,
                            suffix,
                        },
                        negative,
                    )),
                    _ => {
                        self.errors.push(lit, "this float literal cannot be read");
                        None
                    }
                }
            }
            syn::Lit::Bool(b) => Some((Lit::Bool(b.value), false)),
            _ => {
                self.errors.push(lit, "only integer, float and bool literals are supported (no strings, chars or bytes)");
                None
            }
        }
    }

    fn suffix(&mut self, suffix: &str, lit: &syn::Lit) -> Option<Option<Prim>> {
        if suffix.is_empty() {
            return Some(None);
        }
        match Prim::from_rust_name(suffix) {
            Some(p) => Some(Some(p)),
            None => {
                self.errors.push(lit, format!("the `{suffix}` suffix has no CUDA equivalent; use u8 … u64, i8 … i64, f32 or f64"));
                None
            }
        }
    }

    fn prim_type(&mut self, ty: &syn::Type) -> Option<Prim> {
        if let syn::Type::Path(p) = ty {
            if let Some(prim) = p
                .path
                .get_ident()
                .and_then(|i| Prim::from_rust_name(&i.to_string()))
            {
                return Some(prim);
            }
        }
        self.errors.push(
            ty,
            "`as` casts must target a primitive: u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bool",
        );
        None
    }

    fn path(&mut self, p: &syn::ExprPath) -> Option<Expr> {
        if p.qself.is_none() {
            if let Some(ident) = p.path.get_ident() {
                let name = ident.to_string();
                if let Some(ir_name) = self.lookup(&name) {
                    return Some(Expr::Var(ir_name.clone()));
                }
                self.errors.push(
                    ident,
                    format!(
                        "`{name}` is not an operand or a `let` binding of this operator: operators cannot capture \
                         variables or use constants defined elsewhere (write the value, or a primitive constant \
                         such as `u32::MAX`)"
                    ),
                );
                return None;
            }
            if p.path.segments.len() == 2 {
                let ty = p.path.segments[0].ident.to_string();
                let name = p.path.segments[1].ident.to_string();
                if let Some(prim) = Prim::from_rust_name(&ty) {
                    if let Some(c) = PrimConst::parse(prim, &name) {
                        return Some(Expr::Const(prim, c));
                    }
                    self.errors.push(&p.path, format!("`{ty}::{name}` is not a supported constant (MAX, MIN, BITS, INFINITY, NEG_INFINITY, NAN, EPSILON, MIN_POSITIVE)"));
                    return None;
                }
            }
        }
        self.errors.push(
            p,
            format!("paths other than primitive constants cannot be translated; {SUBSET}"),
        );
        None
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Option<Expr> {
        use syn::BinOp as S;
        let op = match b.op {
            S::Add(_) => BinOp::Add,
            S::Sub(_) => BinOp::Sub,
            S::Mul(_) => BinOp::Mul,
            S::Div(_) => BinOp::Div,
            S::Rem(_) => BinOp::Rem,
            S::And(_) => BinOp::And,
            S::Or(_) => BinOp::Or,
            S::BitXor(_) => BinOp::BitXor,
            S::BitAnd(_) => BinOp::BitAnd,
            S::BitOr(_) => BinOp::BitOr,
            S::Shl(_) => BinOp::Shl,
            S::Shr(_) => BinOp::Shr,
            S::Eq(_) => BinOp::Eq,
            S::Lt(_) => BinOp::Lt,
            S::Le(_) => BinOp::Le,
            S::Ne(_) => BinOp::Ne,
            S::Ge(_) => BinOp::Ge,
            S::Gt(_) => BinOp::Gt,
            _ => {
                self.errors.push(b.op, "compound assignment is not supported: bindings are immutable, use another `let`");
                return None;
            }
        };
        let lhs = self.expr(&b.left);
        let rhs = self.expr(&b.right);
        Some(Expr::Binary(op, Box::new(lhs?), Box::new(rhs?)))
    }

    fn method_call(&mut self, m: &syn::ExprMethodCall) -> Option<Expr> {
        let name = m.method.to_string();
        let receiver = self.expr(&m.receiver);
        let args: Vec<_> = m.args.iter().map(|a| self.expr(a)).collect();
        if let Some(t) = &m.turbofish {
            self.errors
                .push(t, "turbofish is not supported on numeric methods");
            return None;
        }
        let Some(method) = ir::method(&name) else {
            self.errors.push(&m.method, unknown_method(&name));
            return None;
        };
        if args.len() != method.args.len() {
            self.errors.push(
                &m.method,
                format!("`{name}` takes {} argument(s)", method.args.len()),
            );
            return None;
        }
        let mut all = vec![receiver?];
        for a in args {
            all.push(a?);
        }
        Some(Expr::Call {
            method,
            prim: None,
            args: all,
        })
    }

    fn call(&mut self, c: &syn::ExprCall) -> Option<Expr> {
        let args: Vec<_> = c.args.iter().map(|a| self.expr(a)).collect();
        let syn::Expr::Path(p) = &*c.func else {
            self.errors.push(
                &c.func,
                format!("only numeric methods can be called; {SUBSET}"),
            );
            return None;
        };
        let segments: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let (prim, name) = match segments.as_slice() {
            [ty, name] if Prim::from_rust_name(ty).is_some() => {
                (Prim::from_rust_name(ty), name.clone())
            }
            [.., cmp, name] if cmp == "cmp" && (name == "min" || name == "max") => {
                (None, name.clone())
            }
            _ => {
                self.errors.push(
                    &c.func,
                    "calls to functions cannot be translated to CUDA: only numeric methods are supported, as \
                     `a.max(b)`, `f32::max(a, b)` or `std::cmp::max(a, b)`",
                );
                return None;
            }
        };
        let Some(method) = ir::method(&name) else {
            self.errors.push(&c.func, unknown_method(&name));
            return None;
        };
        if args.len() != method.args.len() + 1 {
            self.errors.push(
                &c.func,
                format!("`{name}` takes {} argument(s)", method.args.len() + 1),
            );
            return None;
        }
        let args: Option<Vec<_>> = args.into_iter().collect();
        Some(Expr::Call {
            method,
            prim,
            args: args?,
        })
    }

    fn if_expr(&mut self, i: &syn::ExprIf) -> Option<Expr> {
        let cond = self.expr(&i.cond);
        let then = self.block(&i.then_branch);
        let Some((_, otherwise)) = &i.else_branch else {
            self.errors.push(
                i.if_token,
                "`if` needs an `else`: the operator always produces a value",
            );
            return None;
        };
        let otherwise = match &**otherwise {
            syn::Expr::Block(b) => self.block(&b.block),
            other => self.expr(other).map(|value| Block {
                lets: vec![],
                value,
            }),
        };
        Some(Expr::If(
            Box::new(cond?),
            Box::new(then?),
            Box::new(otherwise?),
        ))
    }

    fn match_expr(&mut self, m: &syn::ExprMatch) -> Option<Expr> {
        let scrutinee = self.expr(&m.expr);
        let mut arms = Vec::new();
        let mut ok = true;
        for arm in &m.arms {
            if let Some((_, guard)) = &arm.guard {
                self.errors.push(guard, "match guards are not supported");
                ok = false;
            }
            let pat = self.pattern(&arm.pat);
            let body = self.expr(&arm.body);
            match (pat, body) {
                (Some(p), Some(b)) => arms.push((p, b)),
                _ => ok = false,
            }
        }
        if m.arms.is_empty() {
            self.errors
                .push(m.match_token, "`match` needs at least one arm");
            return None;
        }
        (ok && scrutinee.is_some())
            .then(|| Expr::Match(Box::new(scrutinee.expect("checked")), arms))
    }

    fn pattern(&mut self, p: &syn::Pat) -> Option<Pattern> {
        match p {
            syn::Pat::Wild(_) => Some(Pattern::Wild),
            syn::Pat::Lit(l) => self
                .literal(&l.lit)
                .map(|(lit, negative)| Pattern::Lit { lit, negative }),
            syn::Pat::Paren(p) => self.pattern(&p.pat),
            syn::Pat::Or(o) => {
                let alts: Vec<_> = o.cases.iter().map(|c| self.pattern(c)).collect();
                alts.into_iter()
                    .collect::<Option<Vec<_>>>()
                    .map(Pattern::Or)
            }
            syn::Pat::Range(r) => {
                let lo = r.start.as_ref().map(|e| self.pattern_bound(e));
                let hi = r.end.as_ref().map(|e| self.pattern_bound(e));
                let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
                let lo = match lo {
                    Some(b) => Some(Box::new(b?)),
                    None => None,
                };
                let hi = match hi {
                    Some(b) => Some(Box::new(b?)),
                    None => None,
                };
                Some(Pattern::Range { lo, hi, inclusive })
            }
            // Negative literals (`-1 =>`) arrive as `Pat::Lit` with the sign in the digits.
            _ => {
                self.errors.push(
                    p,
                    "patterns may be integer or bool literals, ranges of literals (`1..=9`), `_`, or `|` of those \
                     (no bindings)",
                );
                None
            }
        }
    }

    fn pattern_bound(&mut self, e: &syn::Expr) -> Option<Expr> {
        match e {
            syn::Expr::Lit(_)
            | syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Neg(_),
                ..
            }) => self.expr(e),
            syn::Expr::Path(p) if p.path.segments.len() == 2 => self.expr(e),
            other => {
                self.errors.push(
                    other,
                    "range bounds must be literals or primitive constants",
                );
                None
            }
        }
    }

    fn struct_literal(&mut self, s: &syn::ExprStruct) -> Option<Expr> {
        let last = s
            .path
            .segments
            .last()
            .map(|seg| seg.ident.to_string())
            .unwrap_or_default();
        let name = if s.path.is_ident("Self") {
            if !self.self_allowed {
                self.errors.push(
                    &s.path,
                    "`Self` is the marker type here, not the element: name the element struct",
                );
                return None;
            }
            StructName::Element
        } else if self.element_names.contains(&last) {
            StructName::Element
        } else {
            // The path as written: the policy aliases it to the struct's CUDA
            // name (kernels_gen::Part::Named).
            let path = &s.path;
            let written = quote::quote!(#path).to_string();
            StructName::Named(written.split_whitespace().collect())
        };
        let mut fields = Vec::new();
        let mut ok = true;
        for f in &s.fields {
            let member = match &f.member {
                syn::Member::Named(n) => n.to_string(),
                syn::Member::Unnamed(_) => {
                    self.errors
                        .push(&f.member, "tuple structs are not supported");
                    ok = false;
                    continue;
                }
            };
            self.array_allowed = true;
            match self.expr(&f.expr) {
                Some(v) => fields.push((member, v)),
                None => ok = false,
            }
        }
        let base = match &s.rest {
            Some(rest) => Some(Box::new(self.expr(rest)?)),
            None => None,
        };
        ok.then_some(Expr::Struct { name, fields, base })
    }
}

fn unknown_method(name: &str) -> String {
    let known: Vec<&str> = ir::METHODS.iter().map(|m| m.rust).collect();
    format!(
        "`{name}` cannot be translated to CUDA; the supported methods are: {}",
        known.join(", ")
    )
}
