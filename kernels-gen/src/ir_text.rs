//! The operator IR as text: what a program that builds operators at run
//! time (the Python binding of issue 50) hands to the generator, and what
//! `#[scan_op]` records of each operator (`ScanOp::OPERATOR_IR`), so that
//! one generator serves both and a test can check that an operator read
//! back from its text generates the CUDA the macro generated.
//!
//! The form is an S-expression a node, each node's head naming its kind;
//! names are quoted, floats are their bit patterns (exact), integers are
//! decimal magnitudes. [`print()`] and [`parse`] are inverses.
//!
//! ```
//! use kernels_gen::ir_text::{parse, print};
//!
//! let text = r#"(op "sum_u32" (prim u32) (params "a" "b") (identity (int 0 -))
//!     (body (block (call "wrapping_add" - (var "a") (var "b"))))
//!     (block_threads auto) (items_per_thread auto))"#;
//! let (op, params) = parse(text).unwrap();
//! assert_eq!(op.name, "sum_u32");
//! assert_eq!(parse(&print(&op, &params)).unwrap(), (op, params));
//! ```

use crate::ir::{
    method, BinOp, Block, ElementType, Expr, FieldDesc, FieldType, Lit, OpDesc, Pattern, Prim,
    PrimConst, StructDesc, StructName, UnOp,
};
use crate::stage::{SortKeyDesc, StageDesc, StageKind};
use crate::{GenParams, ItemsPerThread};
use std::fmt::{self, Write};

/// Why a text is not an operator: what was expected, and where (a byte
/// offset into the text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The byte offset of the token that failed.
    pub offset: usize,
    /// What was expected there.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "operator IR, at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for ParseError {}

/// The text of operator `op` generated with `params`.
pub fn print(op: &OpDesc, params: &GenParams) -> String {
    let mut out = String::new();
    let _ = write!(out, "(op {} ", quoted(&op.name));
    element_type(&mut out, &op.element);
    let _ = write!(
        out,
        " (params {} {}) (identity ",
        quoted(&op.params[0]),
        quoted(&op.params[1])
    );
    expr(&mut out, &op.identity);
    out.push_str(") (body ");
    block(&mut out, &op.body);
    out.push_str(") (block_threads ");
    match params.block_threads {
        Some(n) => {
            let _ = write!(out, "{n}");
        }
        None => out.push_str("auto"),
    }
    out.push_str(") (items_per_thread ");
    match params.items_per_thread {
        ItemsPerThread::Fixed(n) => {
            let _ = write!(out, "{n}");
        }
        ItemsPerThread::Auto => out.push_str("auto"),
    }
    out.push_str("))");
    out
}

/// The operator and parameters of a text [`print()`] wrote (or another
/// program, in the same form).
pub fn parse(text: &str) -> Result<(OpDesc, GenParams), ParseError> {
    parse_with_lines(text).map(|(op, params, _)| (op, params))
}

/// [`parse`], with the line of each of the body's statements where the
/// text gives one: `(at LINE (let NAME EXPR))` and `(at LINE EXPR)` for a
/// block's value, as a program that translates another language writes
/// them (the Python binding). The statements are numbered as
/// [`crate::eval::CheckError::statement`] numbers them, so that an error
/// the checker finds in statement `k` was written at `lines[k]`.
///
/// ```
/// use kernels_gen::eval::{OpPlace, OpValues};
/// use kernels_gen::ir_text::parse_with_lines;
///
/// let text = r#"(op "f" (prim u32) (params "x" "y") (identity (int 0 -))
///     (body (block (at 3 (let "t" (add (var "x") (var "y"))))
///                  (at 4 (neg (var "t")))))
///     (block_threads auto) (items_per_thread auto))"#;
/// let (op, _, lines) = parse_with_lines(text).unwrap();
/// assert_eq!(lines, [Some(3), Some(4)]);
/// let err = OpValues::new(&op).err().unwrap();   // `-` of a u32
/// assert_eq!(err.place, OpPlace::Statement(1));
/// ```
pub fn parse_with_lines(text: &str) -> Result<(OpDesc, GenParams, Vec<Option<u32>>), ParseError> {
    let mut p = Parser {
        text,
        at: 0,
        depth: 0,
        lines: Vec::new(),
    };
    let (op, params) = p.op()?;
    p.skip_space();
    if p.at != text.len() {
        return Err(p.error("the end of the text"));
    }
    Ok((op, params, p.lines))
}

/// The text of an element struct's declaration: `(struct_decl NAME
/// (field NAME TYPE)…)`, a type being `(prim P)`, `(array P N)` or
/// `(struct NAME)` (`#[scan_op]` records it as `ScanElement::STRUCT_IR`).
///
/// ```
/// use kernels_gen::ir::{FieldDesc, FieldType, Prim, StructDesc};
/// use kernels_gen::ir_text::{parse_struct, print_struct};
///
/// let affine = StructDesc {
///     name: "Affine".into(),
///     fields: vec![
///         FieldDesc { name: "a".into(), ty: FieldType::Prim(Prim::F32) },
///         FieldDesc { name: "m".into(), ty: FieldType::Array(Prim::U8, 3) },
///     ],
/// };
/// let text = print_struct(&affine);
/// assert_eq!(text, r#"(struct_decl "Affine" (field "a" (prim f32)) (field "m" (array u8 3)))"#);
/// assert_eq!(parse_struct(&text).unwrap(), affine);
/// ```
pub fn print_struct(s: &StructDesc) -> String {
    let mut out = format!("(struct_decl {}", quoted(&s.name));
    for field in &s.fields {
        let _ = write!(out, " (field {} ", quoted(&field.name));
        match &field.ty {
            FieldType::Prim(p) => {
                let _ = write!(out, "(prim {}))", p.rust_name());
            }
            FieldType::Array(p, n) => {
                let _ = write!(out, "(array {} {n}))", p.rust_name());
            }
            FieldType::Struct(name) => {
                let _ = write!(out, "(struct {}))", quoted(name));
            }
        }
    }
    out.push(')');
    out
}

/// The declaration [`print_struct`] wrote.
pub fn parse_struct(text: &str) -> Result<StructDesc, ParseError> {
    let mut p = Parser {
        text,
        at: 0,
        depth: 0,
        lines: Vec::new(),
    };
    p.head("struct_decl")?;
    let name = p.string("the struct's name, quoted")?;
    let mut fields = Vec::new();
    while !p.at_close()? {
        p.head("field")?;
        let field = p.string("the field's name, quoted")?;
        p.open()?;
        let ty = match p.atom("`prim`, `array` or `struct`")? {
            "prim" => FieldType::Prim(p.prim()?),
            "array" => FieldType::Array(p.prim()?, p.number("the array's length")?),
            "struct" => FieldType::Struct(p.string("the struct's name, quoted")?),
            _ => return Err(p.error("`prim`, `array` or `struct`")),
        };
        p.close()?;
        p.close()?;
        fields.push(FieldDesc { name: field, ty });
    }
    p.close()?;
    p.skip_space();
    if p.at != text.len() {
        return Err(p.error("the end of the text"));
    }
    Ok(StructDesc { name, fields })
}

/// The text of a load or store stage (`#[scan_map]`, `#[scan_predicate]`,
/// `#[scan_equality]` record it as their `STAGE_IR`): `(stage NAME KIND
/// (params NAME…) (input TYPE) (output TYPE) (body BLOCK))`, KIND one of
/// `map`, `predicate`, `equality` and a type `(prim P)` or `(struct NAME)`.
///
/// ```
/// use kernels_gen::ir_text::{parse_stage, print_stage};
/// use kernels_gen::stage::StageKind;
///
/// let text = r#"(stage "even" predicate (params "x") (input (prim u32)) (output (prim bool))
///     (body (block (eq (rem (var "x") (int 2 -)) (int 0 -)))))"#;
/// let stage = parse_stage(text).unwrap();
/// assert_eq!((stage.name.as_str(), stage.kind), ("even", StageKind::Predicate));
/// assert_eq!(parse_stage(&print_stage(&stage)).unwrap(), stage);
/// ```
pub fn print_stage(stage: &StageDesc) -> String {
    let kind = match stage.kind {
        StageKind::Map => "map",
        StageKind::Predicate => "predicate",
        StageKind::Equality => "equality",
    };
    let mut out = format!("(stage {} {kind} (params", quoted(&stage.name));
    for p in &stage.params {
        out.push(' ');
        out.push_str(&quoted(p));
    }
    out.push(')');
    for (head, ty) in [("input", &stage.input), ("output", &stage.output)] {
        let _ = write!(out, " ({head} ");
        element_type(&mut out, ty);
        out.push(')');
    }
    out.push_str(" (body ");
    block(&mut out, &stage.body);
    out.push_str("))");
    out
}

/// The stage [`print_stage`] wrote (or another program, in the same form).
pub fn parse_stage(text: &str) -> Result<StageDesc, ParseError> {
    parse_stage_with_lines(text).map(|(stage, _)| stage)
}

/// [`parse_stage`], with the line of each of the body's statements where
/// the text gives one (as [`parse_with_lines`] reads an operator's).
pub fn parse_stage_with_lines(text: &str) -> Result<(StageDesc, Vec<Option<u32>>), ParseError> {
    let mut p = Parser {
        text,
        at: 0,
        depth: 0,
        lines: Vec::new(),
    };
    p.head("stage")?;
    let name = p.string("the stage's name, quoted")?;
    let kind = match p.atom("`map`, `predicate` or `equality`")? {
        "map" => StageKind::Map,
        "predicate" => StageKind::Predicate,
        "equality" => StageKind::Equality,
        _ => return Err(p.error("`map`, `predicate` or `equality`")),
    };
    p.head("params")?;
    let mut params = Vec::new();
    while !p.at_close()? {
        params.push(p.string("a parameter's name, quoted")?);
    }
    p.close()?;
    let arity = if kind == StageKind::Equality { 2 } else { 1 };
    if params.len() != arity {
        return Err(p.error(&format!("{arity} parameter(s) for this kind of stage")));
    }
    p.head("input")?;
    let input = p.element_type()?;
    p.close()?;
    p.head("output")?;
    let output = p.element_type()?;
    p.close()?;
    p.head("body")?;
    let body = p.block()?;
    p.close()?;
    p.close()?;
    p.skip_space();
    if p.at != text.len() {
        return Err(p.error("the end of the text"));
    }
    let stage = StageDesc {
        name,
        kind,
        params,
        input,
        output,
        body,
    };
    Ok((stage, p.lines))
}

/// The text of a sort key (`#[sort_key]` records it as
/// `SortKey::SORT_KEY_IR`): `(sort_key NAME (param NAME) (record TYPE)
/// (component P BLOCK)…)`, the components most significant first.
///
/// ```
/// use kernels_gen::ir::Prim;
/// use kernels_gen::ir_text::{parse_sort_key, print_sort_key};
///
/// let text = r#"(sort_key "by_neg" (param "x") (record (prim i32))
///     (component i32 (block (neg (var "x")))) (component u8 (block (int 0 -))))"#;
/// let key = parse_sort_key(text).unwrap();
/// assert_eq!(key.components.iter().map(|c| c.0).collect::<Vec<_>>(), [Prim::I32, Prim::U8]);
/// assert_eq!(parse_sort_key(&print_sort_key(&key)).unwrap(), key);
/// ```
pub fn print_sort_key(key: &SortKeyDesc) -> String {
    let mut out = format!(
        "(sort_key {} (param {}) (record ",
        quoted(&key.name),
        quoted(&key.param)
    );
    element_type(&mut out, &key.record);
    out.push(')');
    for (prim, body) in &key.components {
        let _ = write!(out, " (component {} ", prim.rust_name());
        block(&mut out, body);
        out.push(')');
    }
    out.push(')');
    out
}

/// The lines of each sort-key component's statements
/// ([`parse_sort_key_with_lines`]).
pub type ComponentLines = Vec<Vec<Option<u32>>>;

/// The sort key [`print_sort_key`] wrote.
pub fn parse_sort_key(text: &str) -> Result<SortKeyDesc, ParseError> {
    parse_sort_key_with_lines(text).map(|(key, _)| key)
}

/// [`parse_sort_key`], with the line of each statement where the text
/// gives one, each component's statements numbered from 0 on their own:
/// `lines[c][k]` is statement `k` of component `c`.
pub fn parse_sort_key_with_lines(text: &str) -> Result<(SortKeyDesc, ComponentLines), ParseError> {
    let mut p = Parser {
        text,
        at: 0,
        depth: 0,
        lines: Vec::new(),
    };
    p.head("sort_key")?;
    let name = p.string("the key's name, quoted")?;
    p.head("param")?;
    let param = p.string("the record's name, quoted")?;
    p.close()?;
    p.head("record")?;
    let record = p.element_type()?;
    p.close()?;
    let mut components = Vec::new();
    let mut lines = Vec::new();
    while !p.at_close()? {
        p.head("component")?;
        let prim = p.prim()?;
        p.lines.clear();
        let body = p.block()?;
        p.close()?;
        components.push((prim, body));
        lines.push(std::mem::take(&mut p.lines));
    }
    p.close()?;
    p.skip_space();
    if p.at != text.len() {
        return Err(p.error("the end of the text"));
    }
    if components.is_empty() {
        return Err(p.error("a component"));
    }
    let key = SortKeyDesc {
        name,
        param,
        record,
        components,
    };
    Ok((key, lines))
}

fn element_type(out: &mut String, ty: &ElementType) {
    match ty {
        ElementType::Prim(p) => {
            let _ = write!(out, "(prim {})", p.rust_name());
        }
        ElementType::Struct(s) => {
            let _ = write!(out, "(struct {})", quoted(s));
        }
    }
}

fn quoted(name: &str) -> String {
    let mut out = String::from("\"");
    for c in name.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn binop_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::Rem => "rem",
        BinOp::BitAnd => "bitand",
        BinOp::BitOr => "bitor",
        BinOp::BitXor => "bitxor",
        BinOp::Shl => "shl",
        BinOp::Shr => "shr",
        BinOp::And => "and",
        BinOp::Or => "or",
        BinOp::Eq => "eq",
        BinOp::Ne => "ne",
        BinOp::Lt => "lt",
        BinOp::Le => "le",
        BinOp::Gt => "gt",
        BinOp::Ge => "ge",
    }
}

fn suffix(out: &mut String, suffix: Option<Prim>) {
    out.push(' ');
    out.push_str(suffix.map_or("-", Prim::rust_name));
}

fn lit(out: &mut String, l: &Lit) {
    match l {
        Lit::Int { value, suffix: s } => {
            let _ = write!(out, "(int {value}");
            suffix(out, *s);
        }
        Lit::Float {
            value,
            value_f32,
            suffix: s,
        } => {
            let _ = write!(
                out,
                "(float 0x{:016x} 0x{:08x}",
                value.to_bits(),
                value_f32.to_bits()
            );
            suffix(out, *s);
        }
        Lit::Bool(b) => {
            let _ = write!(out, "(bool {b}");
        }
    }
    out.push(')');
}

fn block(out: &mut String, b: &Block) {
    out.push_str("(block");
    for (name, value) in &b.lets {
        let _ = write!(out, " (let {} ", quoted(name));
        expr(out, value);
        out.push(')');
    }
    out.push(' ');
    expr(out, &b.value);
    out.push(')');
}

fn pattern(out: &mut String, p: &Pattern) {
    match p {
        Pattern::Wild => out.push('_'),
        Pattern::Lit { lit: l, negative } => {
            out.push_str(if *negative { "(neg_lit " } else { "(lit " });
            lit(out, l);
            out.push(')');
        }
        Pattern::Range { lo, hi, inclusive } => {
            out.push_str("(range ");
            for bound in [lo, hi] {
                match bound {
                    Some(e) => expr(out, e),
                    None => out.push('-'),
                }
                out.push(' ');
            }
            out.push_str(if *inclusive {
                "inclusive)"
            } else {
                "exclusive)"
            });
        }
        Pattern::Or(ps) => {
            out.push_str("(or_pattern");
            for p in ps {
                out.push(' ');
                pattern(out, p);
            }
            out.push(')');
        }
    }
}

fn expr(out: &mut String, e: &Expr) {
    match e {
        Expr::Lit(l) => lit(out, l),
        Expr::Var(name) => {
            let _ = write!(out, "(var {})", quoted(name));
        }
        Expr::Field(base, name) => {
            out.push_str("(field ");
            expr(out, base);
            let _ = write!(out, " {})", quoted(name));
        }
        Expr::Index(base, i) => {
            out.push_str("(index ");
            expr(out, base);
            let _ = write!(out, " {i})");
        }
        Expr::Unary(op, x) => {
            out.push_str(match op {
                UnOp::Neg => "(neg ",
                UnOp::Not => "(not ",
            });
            expr(out, x);
            out.push(')');
        }
        Expr::Binary(op, x, y) => {
            let _ = write!(out, "({} ", binop_name(*op));
            expr(out, x);
            out.push(' ');
            expr(out, y);
            out.push(')');
        }
        Expr::Cast(x, p) | Expr::Typed(x, p) => {
            out.push_str(if matches!(e, Expr::Cast(..)) {
                "(cast "
            } else {
                "(typed "
            });
            expr(out, x);
            let _ = write!(out, " {})", p.rust_name());
        }
        Expr::TypedLike(x, place) => {
            out.push_str("(typed_like ");
            expr(out, x);
            out.push(' ');
            expr(out, place);
            out.push(')');
        }
        Expr::Call { method, prim, args } => {
            let _ = write!(out, "(call {}", quoted(method.rust));
            suffix(out, *prim);
            for a in args {
                out.push(' ');
                expr(out, a);
            }
            out.push(')');
        }
        Expr::Const(p, c) => {
            let _ = write!(out, "(const {} {})", p.rust_name(), c.rust_name());
        }
        Expr::If(cond, then, otherwise) => {
            out.push_str("(if ");
            expr(out, cond);
            out.push(' ');
            block(out, then);
            out.push(' ');
            block(out, otherwise);
            out.push(')');
        }
        Expr::Match(scrutinee, arms) => {
            out.push_str("(match ");
            expr(out, scrutinee);
            for (p, value) in arms {
                out.push_str(" (arm ");
                pattern(out, p);
                out.push(' ');
                expr(out, value);
                out.push(')');
            }
            out.push(')');
        }
        Expr::Block(b) => block(out, b),
        Expr::Struct { name, fields, base } => {
            out.push_str("(struct_lit ");
            match name {
                StructName::Element => out.push_str("self"),
                StructName::Named(n) => out.push_str(&quoted(n)),
            }
            for (field, value) in fields {
                let _ = write!(out, " (set {} ", quoted(field));
                expr(out, value);
                out.push(')');
            }
            if let Some(base) = base {
                out.push_str(" (base ");
                expr(out, base);
                out.push(')');
            }
            out.push(')');
        }
        Expr::Array(items) => {
            out.push_str("(array");
            for item in items {
                out.push(' ');
                expr(out, item);
            }
            out.push(')');
        }
        Expr::Repeat(value, n) => {
            out.push_str("(repeat ");
            expr(out, value);
            let _ = write!(out, " {n})");
        }
    }
}

/// A token: `(`, `)`, a quoted string, or a bare atom.
#[derive(Debug, PartialEq)]
enum Token<'a> {
    Open,
    Close,
    Str(String),
    Atom(&'a str),
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
    /// Expressions, blocks and patterns open around the current one.
    depth: usize,
    /// The line of each statement so far (`(at LINE …)`; `None`: none
    /// given).
    lines: Vec<Option<u32>>,
}

/// The deepest nesting a text may have: the parser, the checker and the
/// evaluator recurse once a level, and a text from outside the process
/// must not exhaust the stack.
pub const MAX_DEPTH: usize = 128;

impl<'a> Parser<'a> {
    fn error(&self, expected: &str) -> ParseError {
        ParseError {
            offset: self.at,
            message: format!("expected {expected}"),
        }
    }

    fn skip_space(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    /// The next token, without consuming it (with the offset after it).
    fn peek(&mut self) -> Result<(Token<'a>, usize), ParseError> {
        self.skip_space();
        let rest = &self.text[self.at..];
        let Some(c) = rest.chars().next() else {
            return Err(self.error("more text"));
        };
        match c {
            '(' => Ok((Token::Open, self.at + 1)),
            ')' => Ok((Token::Close, self.at + 1)),
            '"' => {
                let mut value = String::new();
                let mut chars = rest.char_indices().skip(1);
                while let Some((i, c)) = chars.next() {
                    match c {
                        '"' => return Ok((Token::Str(value), self.at + i + 1)),
                        '\\' => match chars.next() {
                            Some((_, c)) => value.push(c),
                            None => break,
                        },
                        c => value.push(c),
                    }
                }
                Err(self.error("a closing quote"))
            }
            _ => {
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == '"')
                    .unwrap_or(rest.len());
                Ok((Token::Atom(&rest[..end]), self.at + end))
            }
        }
    }

    fn next(&mut self) -> Result<Token<'a>, ParseError> {
        let (token, end) = self.peek()?;
        self.at = end;
        Ok(token)
    }

    fn at_close(&mut self) -> Result<bool, ParseError> {
        Ok(self.peek()?.0 == Token::Close)
    }

    fn open(&mut self) -> Result<(), ParseError> {
        match self.peek()?.0 {
            Token::Open => self.next().map(|_| ()),
            _ => Err(self.error("`(`")),
        }
    }

    fn close(&mut self) -> Result<(), ParseError> {
        match self.peek()?.0 {
            Token::Close => self.next().map(|_| ()),
            _ => Err(self.error("`)`")),
        }
    }

    fn atom(&mut self, what: &str) -> Result<&'a str, ParseError> {
        match self.peek()?.0 {
            Token::Atom(a) => {
                self.next()?;
                Ok(a)
            }
            _ => Err(self.error(what)),
        }
    }

    fn string(&mut self, what: &str) -> Result<String, ParseError> {
        match self.peek()?.0 {
            Token::Str(s) => {
                self.next()?;
                Ok(s)
            }
            _ => Err(self.error(what)),
        }
    }

    /// `(HEAD`, checking the head.
    fn head(&mut self, head: &str) -> Result<(), ParseError> {
        self.open()?;
        let at = self.at;
        if self.atom(&format!("`{head}`"))? != head {
            self.at = at;
            self.skip_space();
            return Err(self.error(&format!("`{head}`")));
        }
        Ok(())
    }

    fn number<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, ParseError> {
        let at = self.at;
        let a = self.atom(what)?;
        a.parse().map_err(|_| {
            self.at = at;
            self.skip_space();
            self.error(what)
        })
    }

    fn hex_bits(&mut self, what: &str) -> Result<u64, ParseError> {
        let at = self.at;
        let a = self.atom(what)?;
        a.strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| {
                self.at = at;
                self.skip_space();
                self.error(what)
            })
    }

    fn prim(&mut self) -> Result<Prim, ParseError> {
        let at = self.at;
        let a = self.atom("a primitive type (`u32`, `f64`, …)")?;
        Prim::from_rust_name(a).ok_or_else(|| {
            self.at = at;
            self.skip_space();
            self.error("a primitive type (`u32`, `f64`, …)")
        })
    }

    /// A primitive, or `-` for none.
    fn suffix(&mut self) -> Result<Option<Prim>, ParseError> {
        if self.peek()?.0 == Token::Atom("-") {
            self.next()?;
            return Ok(None);
        }
        self.prim().map(Some)
    }

    /// `N` or `auto`.
    fn count_or_auto(&mut self) -> Result<Option<u32>, ParseError> {
        if self.peek()?.0 == Token::Atom("auto") {
            self.next()?;
            return Ok(None);
        }
        self.number("a count or `auto`").map(Some)
    }

    /// `(prim P)` or `(struct NAME)`.
    fn element_type(&mut self) -> Result<ElementType, ParseError> {
        self.open()?;
        let element = match self.atom("`prim` or `struct`")? {
            "prim" => ElementType::Prim(self.prim()?),
            "struct" => ElementType::Struct(self.string("the struct's name, quoted")?),
            _ => return Err(self.error("`prim` or `struct`")),
        };
        self.close()?;
        Ok(element)
    }

    fn op(&mut self) -> Result<(OpDesc, GenParams), ParseError> {
        self.head("op")?;
        let name = self.string("the operator's name, quoted")?;
        let element = self.element_type()?;
        self.head("params")?;
        let params = [
            self.string("the first operand's name, quoted")?,
            self.string("the second operand's name, quoted")?,
        ];
        self.close()?;
        self.head("identity")?;
        let identity = self.expr()?;
        self.close()?;
        self.head("body")?;
        // The body's statements are numbered from 0 (the identity's
        // blocks are not statements of the body).
        self.lines.clear();
        let body = self.block()?;
        self.close()?;
        self.head("block_threads")?;
        let block_threads = self.count_or_auto()?;
        self.close()?;
        self.head("items_per_thread")?;
        let items_per_thread = match self.count_or_auto()? {
            Some(n) => ItemsPerThread::Fixed(n),
            None => ItemsPerThread::Auto,
        };
        self.close()?;
        self.close()?;
        Ok((
            OpDesc {
                name,
                element,
                identity,
                params,
                body,
            },
            GenParams {
                block_threads,
                items_per_thread,
            },
        ))
    }

    fn block(&mut self) -> Result<Block, ParseError> {
        self.head("block")?;
        self.block_rest()
    }

    /// A block after its head: `(let NAME EXPR)…` then its value, `)`.
    /// `(let NAME EXPR)`, after its `(`.
    fn let_rest(&mut self, line: Option<u32>) -> Result<(String, Expr), ParseError> {
        self.next()?; // `let`
        self.statement(line);
        let name = self.string("the binding's name, quoted")?;
        let value = self.expr()?;
        self.close()?;
        Ok((name, value))
    }

    /// A block after its head: `(let NAME EXPR)`… then its value, `)`;
    /// each may be wrapped in `(at LINE …)`.
    fn block_rest(&mut self) -> Result<Block, ParseError> {
        let mut lets = Vec::new();
        loop {
            let save = self.at;
            self.open()?;
            match self.peek()?.0 {
                Token::Atom("let") => lets.push(self.let_rest(None)?),
                Token::Atom("at") => {
                    self.next()?;
                    let line = self.number("a line number")?;
                    let inner = self.at;
                    self.open()?;
                    if self.peek()?.0 == Token::Atom("let") {
                        lets.push(self.let_rest(Some(line))?);
                        self.close()?;
                    } else {
                        self.at = inner;
                        self.statement(Some(line));
                        let value = self.expr()?;
                        self.close()?; // `at`
                        self.close()?; // the block
                        return Ok(Block { lets, value });
                    }
                }
                _ => {
                    self.at = save;
                    break;
                }
            }
        }
        self.statement(None);
        let value = self.expr()?;
        self.close()?;
        Ok(Block { lets, value })
    }

    /// Starts the next statement (a `let` or a block's value, numbered as
    /// `eval::CheckError::statement` numbers them), written at `line`.
    fn statement(&mut self, line: Option<u32>) {
        self.lines.push(line);
    }

    fn lit_rest(&mut self, kind: &str) -> Result<Lit, ParseError> {
        let l = match kind {
            "int" => Lit::Int {
                value: self.number("an integer's magnitude")?,
                suffix: self.suffix()?,
            },
            "float" => Lit::Float {
                value: f64::from_bits(self.hex_bits("an f64's bits (0x…)")?),
                value_f32: {
                    let bits = self.hex_bits("an f32's bits (0x…)")?;
                    f32::from_bits(u32::try_from(bits).map_err(|_| self.error("32 bits"))?)
                },
                suffix: self.suffix()?,
            },
            "bool" => Lit::Bool(match self.atom("`true` or `false`")? {
                "true" => true,
                "false" => false,
                _ => return Err(self.error("`true` or `false`")),
            }),
            _ => unreachable!("called for literal heads only"),
        };
        self.close()?;
        Ok(l)
    }

    fn lit(&mut self) -> Result<Lit, ParseError> {
        self.open()?;
        let kind = self.atom("`int`, `float` or `bool`")?;
        if !matches!(kind, "int" | "float" | "bool") {
            return Err(self.error("`int`, `float` or `bool`"));
        }
        self.lit_rest(kind)
    }

    fn pattern(&mut self) -> Result<Pattern, ParseError> {
        self.nested(Self::pattern_node)
    }

    fn pattern_node(&mut self) -> Result<Pattern, ParseError> {
        if self.peek()?.0 == Token::Atom("_") {
            self.next()?;
            return Ok(Pattern::Wild);
        }
        self.open()?;
        let p = match self.atom("a pattern")? {
            kind @ ("lit" | "neg_lit") => Pattern::Lit {
                lit: self.lit()?,
                negative: kind == "neg_lit",
            },
            "range" => {
                let bound = |p: &mut Self| -> Result<Option<Box<Expr>>, ParseError> {
                    if p.peek()?.0 == Token::Atom("-") {
                        p.next()?;
                        Ok(None)
                    } else {
                        p.expr().map(|e| Some(Box::new(e)))
                    }
                };
                let lo = bound(self)?;
                let hi = bound(self)?;
                let inclusive = match self.atom("`inclusive` or `exclusive`")? {
                    "inclusive" => true,
                    "exclusive" => false,
                    _ => return Err(self.error("`inclusive` or `exclusive`")),
                };
                Pattern::Range { lo, hi, inclusive }
            }
            "or_pattern" => {
                let mut ps = Vec::new();
                while !self.at_close()? {
                    ps.push(self.pattern()?);
                }
                Pattern::Or(ps)
            }
            _ => return Err(self.error("`_`, `lit`, `neg_lit`, `range` or `or_pattern`")),
        };
        self.close()?;
        Ok(p)
    }

    fn boxed(&mut self) -> Result<Box<Expr>, ParseError> {
        self.expr().map(Box::new)
    }

    /// One level deeper for `f`, refused past [`MAX_DEPTH`].
    fn nested<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, ParseError>,
    ) -> Result<T, ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(&format!("at most {MAX_DEPTH} levels of nesting")));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        self.nested(Self::expr_node)
    }

    fn expr_node(&mut self) -> Result<Expr, ParseError> {
        self.open()?;
        let head_at = self.at;
        let head = self.atom("an expression's kind")?;
        let e = match head {
            "int" | "float" | "bool" => return self.lit_rest(head).map(Expr::Lit),
            "block" => return self.block_rest().map(|b| Expr::Block(Box::new(b))),
            "var" => Expr::Var(self.string("a name, quoted")?),
            "field" => Expr::Field(self.boxed()?, self.string("a field's name, quoted")?),
            "index" => Expr::Index(self.boxed()?, self.number("an index")?),
            "neg" => Expr::Unary(UnOp::Neg, self.boxed()?),
            "not" => Expr::Unary(UnOp::Not, self.boxed()?),
            "cast" => Expr::Cast(self.boxed()?, self.prim()?),
            "typed" => Expr::Typed(self.boxed()?, self.prim()?),
            "typed_like" => Expr::TypedLike(self.boxed()?, self.boxed()?),
            "call" => {
                let at = self.at;
                let name = self.string("a method's name, quoted")?;
                let Some(method) = method(&name) else {
                    self.at = at;
                    self.skip_space();
                    return Err(self.error("a method of the operator subset (ir::METHODS)"));
                };
                let prim = self.suffix()?;
                let mut args = Vec::new();
                while !self.at_close()? {
                    args.push(self.expr()?);
                }
                Expr::Call { method, prim, args }
            }
            "const" => {
                let prim = self.prim()?;
                let at = self.at;
                let name = self.atom("a constant's name")?;
                let Some(c) = PrimConst::parse(prim, name) else {
                    self.at = at;
                    self.skip_space();
                    return Err(self.error("a constant of that type (`MAX`, `INFINITY`, …)"));
                };
                Expr::Const(prim, c)
            }
            "if" => Expr::If(
                self.boxed()?,
                Box::new(self.block()?),
                Box::new(self.block()?),
            ),
            "match" => {
                let scrutinee = self.boxed()?;
                let mut arms = Vec::new();
                while !self.at_close()? {
                    self.head("arm")?;
                    let p = self.pattern()?;
                    let value = self.expr()?;
                    self.close()?;
                    arms.push((p, value));
                }
                Expr::Match(scrutinee, arms)
            }
            "struct_lit" => {
                let name = if self.peek()?.0 == Token::Atom("self") {
                    self.next()?;
                    StructName::Element
                } else {
                    StructName::Named(self.string("`self` or a struct's name, quoted")?)
                };
                let (mut fields, mut base) = (Vec::new(), None);
                while !self.at_close()? {
                    self.open()?;
                    match self.atom("`set` or `base`")? {
                        "set" if base.is_none() => {
                            let field = self.string("a field's name, quoted")?;
                            fields.push((field, self.expr()?));
                        }
                        "base" if base.is_none() => base = Some(self.boxed()?),
                        _ => return Err(self.error("`set` or one `base`, last")),
                    }
                    self.close()?;
                }
                Expr::Struct { name, fields, base }
            }
            "array" => {
                let mut items = Vec::new();
                while !self.at_close()? {
                    items.push(self.expr()?);
                }
                Expr::Array(items)
            }
            "repeat" => Expr::Repeat(self.boxed()?, self.number("a count")?),
            _ => match BinOp::ALL.iter().find(|op| binop_name(**op) == head) {
                Some(&op) => Expr::Binary(op, self.boxed()?, self.boxed()?),
                None => {
                    self.at = head_at;
                    self.skip_space();
                    return Err(self.error("an expression's kind (`var`, `add`, `call`, …)"));
                }
            },
        };
        self.close()?;
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(value: u128) -> Expr {
        Expr::Lit(Lit::Int {
            value,
            suffix: None,
        })
    }

    fn var(name: &str) -> Expr {
        Expr::Var(name.into())
    }

    /// An operator that uses every node kind, printed and parsed back.
    #[test]
    fn every_node_round_trips() {
        let arms = vec![
            (
                Pattern::Lit {
                    lit: Lit::Int {
                        value: 3,
                        suffix: Some(Prim::I32),
                    },
                    negative: true,
                },
                int(1),
            ),
            (
                Pattern::Or(vec![
                    Pattern::Range {
                        lo: Some(Box::new(int(0))),
                        hi: None,
                        inclusive: false,
                    },
                    Pattern::Range {
                        lo: None,
                        hi: Some(Box::new(int(9))),
                        inclusive: true,
                    },
                ]),
                int(2),
            ),
            (Pattern::Wild, int(3)),
        ];
        let value = Expr::Struct {
            name: StructName::Element,
            fields: vec![
                (
                    "a".into(),
                    Expr::Binary(
                        BinOp::Add,
                        Box::new(Expr::Field(Box::new(var("x")), "a".into())),
                        Box::new(Expr::Cast(
                            Box::new(Expr::Index(Box::new(var("y")), 2)),
                            Prim::F32,
                        )),
                    ),
                ),
                (
                    "b".into(),
                    Expr::If(
                        Box::new(Expr::Unary(
                            UnOp::Not,
                            Box::new(Expr::Lit(Lit::Bool(false))),
                        )),
                        Box::new(Block {
                            lets: vec![],
                            value: Expr::Match(Box::new(var("k")), arms),
                        }),
                        Box::new(Block {
                            lets: vec![("z".into(), Expr::Const(Prim::F64, PrimConst::Nan))],
                            value: Expr::Call {
                                method: method("mul_add").unwrap(),
                                prim: Some(Prim::F64),
                                args: vec![var("z"), var("z"), var("z")],
                            },
                        }),
                    ),
                ),
                (
                    "c".into(),
                    Expr::Array(vec![
                        Expr::Repeat(Box::new(int(0)), 4),
                        Expr::Typed(Box::new(int(1 << 40)), Prim::U64),
                        Expr::TypedLike(
                            Box::new(int(7)),
                            Box::new(Expr::Field(Box::new(var("x")), "n".into())),
                        ),
                    ]),
                ),
            ],
            base: Some(Box::new(Expr::Block(Box::new(Block {
                lets: vec![],
                value: var("y"),
            })))),
        };
        let op = OpDesc {
            name: "every_node".into(),
            element: ElementType::Struct("Every \"quoted\" \\ name".into()),
            identity: Expr::Struct {
                name: StructName::Named("Other".into()),
                fields: vec![(
                    "f".into(),
                    Expr::Lit(Lit::Float {
                        value: -0.1,
                        value_f32: -0.1f32,
                        suffix: None,
                    }),
                )],
                base: None,
            },
            params: ["x".into(), "y".into()],
            body: Block {
                lets: vec![(
                    "k".into(),
                    Expr::Unary(UnOp::Neg, Box::new(Expr::Const(Prim::I32, PrimConst::Max))),
                )],
                value,
            },
        };
        let params = GenParams {
            block_threads: Some(128),
            items_per_thread: ItemsPerThread::Fixed(7),
        };
        let text = print(&op, &params);
        assert_eq!(parse(&text).unwrap(), (op, params), "{text}");
        // Every binary operator by its name.
        for b in BinOp::ALL {
            let e = Expr::Binary(b, Box::new(var("x")), Box::new(var("y")));
            let mut out = String::new();
            expr(&mut out, &e);
            let mut p = Parser {
                text: &out,
                at: 0,
                depth: 0,
                lines: Vec::new(),
            };
            assert_eq!(p.expr().unwrap(), e, "{out}");
        }
    }

    /// A text nested past MAX_DEPTH is refused, not a stack overflow; one
    /// at the limit parses.
    #[test]
    fn nesting_is_bounded() {
        let nest = |levels: usize| {
            let body = format!(
                "{}(var \"a\"){}",
                "(neg ".repeat(levels),
                ")".repeat(levels)
            );
            format!(
                r#"(op "s" (prim i32) (params "a" "b") (identity (int 0 -)) (body (block {body})) (block_threads auto) (items_per_thread auto))"#
            )
        };
        // The body's value sits one level below the identity's and the
        // body's own: MAX_DEPTH - 1 negations are the deepest it holds.
        // The deepest text parses, checks and evaluates on a test thread's
        // 2 MiB stack, in a debug build too.
        let (op, _) = parse(&nest(MAX_DEPTH - 1)).unwrap();
        let values = crate::eval::OpValues::new(&op).unwrap();
        let x = crate::eval::Value::I32(5);
        assert_eq!(values.combine(x, x).value, crate::eval::Value::I32(-5));
        let err = parse(&nest(MAX_DEPTH)).unwrap_err();
        assert!(err.message.contains("levels of nesting"), "{err}");
        let err = parse(&nest(1_000_000)).unwrap_err();
        assert!(err.message.contains("levels of nesting"), "{err}");
    }

    /// The checker's statement numbers and the parser's agree: an error
    /// planted in each statement of bodies with nested blocks (in a
    /// `let`'s value, in an `if`'s condition and branches, after a nested
    /// block) is reported at that statement's line.
    #[test]
    fn errors_are_found_at_their_line() {
        use crate::eval::{OpPlace, OpValues};
        let bad = r#"(add (bool true) (int 1 -))"#;
        let ok = r#"(var "x")"#;
        // Each body has `{k}` where the k-th planted place goes, and the
        // line an error there is reported at.
        let bodies: [(&str, &[u32]); 4] = [
            (
                r#"(block (at 10 (let "a" {0})) (at 11 (let "b" {1})) (at 12 {2}))"#,
                &[10, 11, 12],
            ),
            (
                r#"(block (at 20 (let "a" (if (eq {0} (var "y")) (block (at 21 (let "c" {1})) (at 22 {2})) (block (at 23 {3}))))) (at 24 {4}))"#,
                &[20, 21, 22, 23, 24],
            ),
            (
                r#"(block (at 30 (if (eq (block (at 31 {0})) (var "y")) (block (at 32 {1})) (block (at 33 (let "d" {2})) (at 34 {3})))))"#,
                &[31, 32, 33, 34],
            ),
            // After a nested block, the enclosing statement again.
            (
                r#"(block (at 40 (let "a" (add (block (at 41 {0})) {1}))) (at 42 {2}))"#,
                &[41, 40, 42],
            ),
        ];
        for (body, want) in bodies {
            for (planted, &line) in want.iter().enumerate() {
                let mut text = body.to_string();
                for k in 0..want.len() {
                    text = text.replace(&format!("{{{k}}}"), if k == planted { bad } else { ok });
                }
                let text = format!(
                    r#"(op "f" (prim i32) (params "x" "y") (identity (int 0 -)) (body {text}) (block_threads auto) (items_per_thread auto))"#
                );
                let (op, _, lines) = parse_with_lines(&text).unwrap();
                let err = OpValues::new(&op).err().expect("an error");
                let OpPlace::Statement(k) = err.place else {
                    panic!("{err:?}")
                };
                assert_eq!(lines[k], Some(line), "{text}: {err}");
            }
        }
    }

    /// Malformed texts name what was expected, at the token that failed.
    #[test]
    fn errors_say_where() {
        let good = r#"(op "s" (prim u32) (params "a" "b") (identity (int 0 -)) (body (block (add (var "a") (var "b")))) (block_threads auto) (items_per_thread auto))"#;
        assert!(parse(good).is_ok());
        let cases = [
            (good.replace("u32", "u33"), 0, "primitive"),
            (good.replace("add", "plus"), 0, "expression's kind"),
            (good.replace(r#""a" "b")"#, r#""a")"#), 0, "second operand"),
            (good.replace("(int 0 -)", "(int x -)"), 0, "integer"),
            (format!("{good} extra"), good.len() + 1, "end of the text"),
            (
                good[..good.len() - 1].to_string(),
                good.len() - 1,
                "more text",
            ),
            (
                good.replace(
                    "(add (var \"a\") (var \"b\"))",
                    "(call \"frobnicate\" - (var \"a\"))",
                ),
                0,
                "method",
            ),
            (
                good.replace("(int 0 -)", "(const u32 NAN)"),
                0,
                "constant of that type",
            ),
        ];
        for (text, offset, expected) in cases {
            let err = parse(&text).unwrap_err();
            assert!(err.message.contains(expected), "{text}: {err}");
            if offset != 0 {
                assert_eq!(err.offset, offset, "{text}: {err}");
            }
            assert!(err.offset <= text.len());
        }
        // The failing token, where it can be found: a bad primitive.
        let text = good.replace("u32", "u33");
        assert_eq!(&text[parse(&text).unwrap_err().offset..][..3], "u33");
    }
}
