//! Operators over struct elements lowered to their primitive leaves, so
//! that the host's evaluator ([`crate::eval::StructValues`]) runs them with
//! the machinery it has for primitives: every struct-typed value becomes
//! one scalar expression per leaf (the struct's primitives in field order,
//! arrays element by element, nested structs depth first: the order of
//! `ScanElement::for_each_lane`), and the body becomes one block per leaf
//! over the operands' leaves (`x.a`, `x.m[2]`, `x.inner.v`).
//!
//! A leaf's block is checked on its own, so an untyped `let` used by two
//! leaves of different types is accepted here where rustc would refuse it
//! (each leaf gives it its own type, as the generated C++ does).
//!
//! ```
//! use kernels_gen::eval::{StructValues, Value};
//! use kernels_gen::ir_text::{parse, parse_struct};
//! use kernels_gen::lower::{lower_op, Structs};
//!
//! let affine = parse_struct(r#"(struct_decl "Affine" (field "a" (prim f32)) (field "b" (prim f32)))"#).unwrap();
//! let (op, _) = parse(r#"(op "affine" (struct "Affine") (params "x" "y")
//!     (identity (struct_lit self (set "a" (float 0x3ff0000000000000 0x3f800000 -)) (set "b" (float 0x0 0x0 -))))
//!     (body (block (struct_lit self (set "a" (mul (field (var "x") "a") (field (var "y") "a")))
//!                                   (set "b" (add (mul (field (var "y") "a") (field (var "x") "b")) (field (var "y") "b"))))))
//!     (block_threads auto) (items_per_thread auto))"#).unwrap();
//! let mut structs = Structs::default();
//! structs.insert("Affine", affine);
//! let lowered = lower_op(&op, &structs).unwrap();
//! assert_eq!(lowered.leaves.iter().map(|l| (l.path.as_str(), l.offset)).collect::<Vec<_>>(), [("a", 0), ("b", 4)]);
//! let values = StructValues::new(&lowered).unwrap();
//! // (2v + 1) then (3v + 0): 6v + 3.
//! let x = [Value::F32(2.0), Value::F32(1.0)];
//! let y = [Value::F32(3.0), Value::F32(0.0)];
//! assert_eq!(values.combine(&x, &y), [Value::F32(6.0), Value::F32(3.0)]);
//! assert_eq!(values.identity(), [Value::F32(1.0), Value::F32(0.0)]);
//! ```

use crate::ir::{Block, ElementType, Expr, FieldType, OpDesc, Prim, StructDesc, StructName};
use crate::stage::StageDesc;
use std::collections::HashMap;
use std::ops::Range;

/// One primitive of a struct: its path from the struct (`a`, `m[2]`,
/// `inner.v`), its type, and its byte offset in the `repr(C)` layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// The path from the struct.
    pub path: String,
    /// The type.
    pub prim: Prim,
    /// The byte offset.
    pub offset: usize,
}

/// The structs an operator uses, by the names it uses for them (a field's
/// struct type by its Rust name, a struct literal by its path as written,
/// the element by its name).
#[derive(Clone, Debug, Default)]
pub struct Structs {
    by_name: HashMap<String, StructDesc>,
}

/// How deep structs may nest (a struct that contains itself is refused).
const MAX_NESTING: usize = 16;

impl Structs {
    /// Adds `desc` under `name`.
    pub fn insert(&mut self, name: impl Into<String>, desc: StructDesc) {
        self.by_name.insert(name.into(), desc);
    }

    fn get(&self, name: &str) -> Result<&StructDesc, String> {
        self.by_name
            .get(name)
            .ok_or_else(|| format!("struct `{name}` is not described"))
    }

    /// The size and alignment of a field of type `ty` (`repr(C)`).
    fn size_align(&self, ty: &FieldType, depth: usize) -> Result<(usize, usize), String> {
        Ok(match ty {
            FieldType::Prim(p) => (p.size(), p.size()),
            FieldType::Array(p, n) => (p.size() * n, p.size()),
            FieldType::Struct(name) => self.struct_size_align(name, depth + 1)?,
        })
    }

    fn struct_size_align(&self, name: &str, depth: usize) -> Result<(usize, usize), String> {
        if depth > MAX_NESTING {
            return Err(format!(
                "struct `{name}` nests more than {MAX_NESTING} deep"
            ));
        }
        let (mut size, mut align) = (0usize, 1usize);
        for field in &self.get(name)?.fields {
            let (s, a) = self.size_align(&field.ty, depth)?;
            size = size.next_multiple_of(a) + s;
            align = align.max(a);
        }
        Ok((size.next_multiple_of(align), align))
    }

    /// The `repr(C)` size of struct `name`.
    pub fn size(&self, name: &str) -> Result<usize, String> {
        self.struct_size_align(name, 0).map(|(size, _)| size)
    }

    /// The leaves of struct `name`, in field order.
    pub fn leaves(&self, name: &str) -> Result<Vec<Leaf>, String> {
        let mut out = Vec::new();
        self.push_leaves(name, "", 0, 0, &mut out)?;
        Ok(out)
    }

    fn push_leaves(
        &self,
        name: &str,
        prefix: &str,
        base: usize,
        depth: usize,
        out: &mut Vec<Leaf>,
    ) -> Result<(), String> {
        if depth > MAX_NESTING {
            return Err(format!(
                "struct `{name}` nests more than {MAX_NESTING} deep"
            ));
        }
        let mut offset = 0usize;
        for field in &self.get(name)?.fields {
            let (size, align) = self.size_align(&field.ty, depth)?;
            offset = offset.next_multiple_of(align);
            let path = format!("{prefix}{}", field.name);
            match &field.ty {
                FieldType::Prim(p) => out.push(Leaf {
                    path,
                    prim: *p,
                    offset: base + offset,
                }),
                FieldType::Array(p, n) => out.extend((0..*n).map(|k| Leaf {
                    path: format!("{path}[{k}]"),
                    prim: *p,
                    offset: base + offset + k * p.size(),
                })),
                FieldType::Struct(inner) => {
                    self.push_leaves(inner, &format!("{path}."), base + offset, depth + 1, out)?
                }
            }
            offset += size;
        }
        Ok(())
    }

    /// The leaves of field `field` of struct `name`, as a range of the
    /// struct's leaves, and the field's shape.
    fn field(&self, name: &str, field: &str) -> Result<(Range<usize>, Shape), String> {
        let mut start = 0;
        for f in &self.get(name)?.fields {
            let shape = match &f.ty {
                FieldType::Prim(_) => Shape::Scalar,
                FieldType::Array(_, n) => Shape::Array(*n),
                FieldType::Struct(inner) => Shape::Struct(inner.clone()),
            };
            let count = self.count(&shape)?;
            if f.name == field {
                return Ok((start..start + count, shape));
            }
            start += count;
        }
        Err(format!("struct `{name}` has no field `{field}`"))
    }

    fn count(&self, shape: &Shape) -> Result<usize, String> {
        Ok(match shape {
            Shape::Scalar => 1,
            Shape::Array(n) => *n,
            Shape::Struct(name) => self.leaves(name)?.len(),
        })
    }
}

/// What a value is made of.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// A primitive.
    Scalar,
    /// A struct, by name.
    Struct(String),
    /// An array of primitives of this length.
    Array(usize),
}

/// An operator over a struct element, lowered to its leaves.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The element's leaves.
    pub leaves: Vec<Leaf>,
    /// The operands' leaf variables (`x.a`, …), the first's then the
    /// second's, in leaf order.
    pub operands: [Vec<String>; 2],
    /// The identity's leaves, each a block with no `let`s.
    pub identity: Vec<Block>,
    /// The body, one block a leaf.
    pub bodies: Vec<Block>,
}

/// Lowers `op`, whose element is a struct described in `structs`.
pub fn lower_op(op: &OpDesc, structs: &Structs) -> Result<Lowered, String> {
    let ElementType::Struct(element) = &op.element else {
        return Err(format!(
            "operator `{}`: its element is a primitive, not a struct",
            op.name
        ));
    };
    let leaves = structs.leaves(element)?;
    let mut lowerer = Lowerer {
        structs,
        element: element.clone(),
        scope: Vec::new(),
    };
    let identity = lowerer
        .lower(&op.identity)
        .map_err(|e| format!("operator `{}`, identity: {e}", op.name))?;
    if lowerer.shape(&op.identity)? != Shape::Struct(element.clone()) {
        return Err(format!(
            "operator `{}`: the identity is not a `{element}`",
            op.name
        ));
    }
    let element_shape = Shape::Struct(element.clone());
    for param in &op.params {
        lowerer.scope.push((param.clone(), element_shape.clone()));
    }
    let (lets, values) = lowerer
        .block(&op.body)
        .map_err(|e| format!("operator `{}`: {e}", op.name))?;
    if lowerer.block_shape(&op.body)? != element_shape {
        return Err(format!(
            "operator `{}`: the body's value is not a `{element}`",
            op.name
        ));
    }
    let operands = op
        .params
        .clone()
        .map(|p| leaves.iter().map(|l| format!("{p}.{}", l.path)).collect());
    Ok(Lowered {
        identity: identity
            .into_iter()
            .map(|value| Block {
                lets: Vec::new(),
                value,
            })
            .collect(),
        bodies: values
            .into_iter()
            .map(|value| Block {
                lets: lets.clone(),
                value,
            })
            .collect(),
        leaves,
        operands,
    })
}

/// A predicate or an equality over a struct element, lowered to its
/// leaves: one scalar block over the parameters' leaves.
#[derive(Clone, Debug)]
pub struct LoweredStage {
    /// The element's leaves.
    pub leaves: Vec<Leaf>,
    /// Each parameter's leaf variables (`x.a`, …), in leaf order.
    pub params: Vec<Vec<String>>,
    /// The body, its value the stage's primitive result.
    pub body: Block,
}

/// Lowers `stage`, whose input is a struct described in `structs` and
/// whose output is a primitive (a predicate's or an equality's `bool`).
pub fn lower_stage(stage: &StageDesc, structs: &Structs) -> Result<LoweredStage, String> {
    let ElementType::Struct(element) = &stage.input else {
        return Err(format!(
            "stage `{}`: its element is a primitive, not a struct",
            stage.name
        ));
    };
    if !matches!(stage.output, ElementType::Prim(_)) {
        return Err(format!(
            "stage `{}`: a struct result is not lowered; a primitive one is",
            stage.name
        ));
    }
    let leaves = structs.leaves(element)?;
    let mut lowerer = Lowerer {
        structs,
        element: element.clone(),
        scope: Vec::new(),
    };
    let element_shape = Shape::Struct(element.clone());
    for param in &stage.params {
        lowerer.scope.push((param.clone(), element_shape.clone()));
    }
    let (lets, mut values) = lowerer
        .block(&stage.body)
        .map_err(|e| format!("stage `{}`: {e}", stage.name))?;
    if lowerer.block_shape(&stage.body)? != Shape::Scalar || values.len() != 1 {
        return Err(format!(
            "stage `{}`: the body's value is a struct or an array, not a {}",
            stage.name,
            stage.output.cuda_name()
        ));
    }
    let params = stage
        .params
        .iter()
        .map(|p| leaves.iter().map(|l| format!("{p}.{}", l.path)).collect())
        .collect();
    Ok(LoweredStage {
        leaves,
        params,
        body: Block {
            lets,
            value: values.remove(0),
        },
    })
}

/// A block lowered: its `let`s (a compound one as a `let` a leaf) and its
/// value's leaves.
type LoweredBlock = (Vec<(String, Expr)>, Vec<Expr>);

struct Lowerer<'s> {
    structs: &'s Structs,
    element: String,
    /// Names in scope and their shapes (the innermost last).
    scope: Vec<(String, Shape)>,
}

impl Lowerer<'_> {
    fn struct_name(&self, name: &StructName) -> String {
        match name {
            StructName::Element => self.element.clone(),
            StructName::Named(path) => path.clone(),
        }
    }

    fn lookup(&self, name: &str) -> Result<Shape, String> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
            .ok_or_else(|| format!("`{name}` is neither an operand nor bound before"))
    }

    /// The leaf variables of a compound named `name`.
    fn leaf_names(&self, name: &str, shape: &Shape) -> Result<Vec<String>, String> {
        Ok(match shape {
            Shape::Scalar => vec![name.to_string()],
            Shape::Array(n) => (0..*n).map(|k| format!("{name}[{k}]")).collect(),
            Shape::Struct(s) => self
                .structs
                .leaves(s)?
                .into_iter()
                .map(|l| format!("{name}.{}", l.path))
                .collect(),
        })
    }

    fn shape(&mut self, e: &Expr) -> Result<Shape, String> {
        Ok(match e {
            Expr::Var(v) => self.lookup(v)?,
            Expr::Field(base, field) => match self.shape(base)? {
                Shape::Struct(s) => self.structs.field(&s, field)?.1,
                _ => return Err(format!("`.{field}` of a value that is not a struct")),
            },
            Expr::Index(base, i) => match self.shape(base)? {
                Shape::Array(n) if (*i as usize) < n => Shape::Scalar,
                Shape::Array(n) => return Err(format!("index {i} is past an array of {n}")),
                _ => return Err(format!("`[{i}]` of a value that is not an array")),
            },
            Expr::Struct { name, .. } => Shape::Struct(self.struct_name(name)),
            Expr::Array(items) => Shape::Array(items.len()),
            Expr::Repeat(_, n) => Shape::Array(*n as usize),
            Expr::If(_, then, _) => self.block_shape(then)?,
            Expr::Match(_, arms) => match arms.first() {
                Some((_, value)) => self.shape(value)?,
                None => return Err("a `match` without arms".to_string()),
            },
            Expr::Block(b) => self.block_shape(b)?,
            _ => Shape::Scalar,
        })
    }

    fn block_shape(&mut self, b: &Block) -> Result<Shape, String> {
        let saved = self.scope.len();
        for (name, value) in &b.lets {
            let shape = self.shape(value)?;
            self.scope.push((name.clone(), shape));
        }
        let shape = self.shape(&b.value);
        self.scope.truncate(saved);
        shape
    }

    /// `e`, which must be a primitive, as one scalar expression.
    fn scalar(&mut self, e: &Expr) -> Result<Expr, String> {
        if self.shape(e)? != Shape::Scalar {
            return Err("a struct or an array where a number goes".to_string());
        }
        let mut leaves = self.lower(e)?;
        Ok(leaves.remove(0))
    }

    /// A block's `let`s (compound ones as a `let` a leaf) and its value's
    /// leaves.
    fn block(&mut self, b: &Block) -> Result<LoweredBlock, String> {
        let saved = self.scope.len();
        let mut lets = Vec::new();
        for (name, value) in &b.lets {
            let shape = self.shape(value)?;
            let leaves = self.lower(value)?;
            lets.extend(self.leaf_names(name, &shape)?.into_iter().zip(leaves));
            self.scope.push((name.clone(), shape));
        }
        let value = self.lower(&b.value);
        self.scope.truncate(saved);
        Ok((lets, value?))
    }

    /// `e` as one scalar expression a leaf.
    fn lower(&mut self, e: &Expr) -> Result<Vec<Expr>, String> {
        let one = |e: Expr| Ok(vec![e]);
        match e {
            Expr::Var(v) => {
                let shape = self.lookup(v)?;
                Ok(self
                    .leaf_names(v, &shape)?
                    .into_iter()
                    .map(Expr::Var)
                    .collect())
            }
            Expr::Field(base, field) => {
                let Shape::Struct(s) = self.shape(base)? else {
                    return Err(format!("`.{field}` of a value that is not a struct"));
                };
                let (range, _) = self.structs.field(&s, field)?;
                Ok(self.lower(base)?[range].to_vec())
            }
            Expr::Index(base, i) => {
                self.shape(e)?; // the bounds
                Ok(vec![self.lower(base)?[*i as usize].clone()])
            }
            Expr::Struct { name, fields, base } => {
                let name = self.struct_name(name);
                let desc = self.structs.get(&name)?.clone();
                for (k, (field, _)) in fields.iter().enumerate() {
                    if !desc.fields.iter().any(|f| &f.name == field) {
                        return Err(format!("struct `{name}` has no field `{field}`"));
                    }
                    if fields[..k].iter().any(|(f, _)| f == field) {
                        return Err(format!("field `{field}` given twice"));
                    }
                }
                let base = match base {
                    Some(b) => {
                        if self.shape(b)? != Shape::Struct(name.clone()) {
                            return Err(format!("the base of a `{name}` is not a `{name}`"));
                        }
                        Some(self.lower(b)?)
                    }
                    None => None,
                };
                let mut out = Vec::new();
                for f in &desc.fields {
                    let (range, shape) = self.structs.field(&name, &f.name)?;
                    match fields.iter().find(|(given, _)| given == &f.name) {
                        Some((_, value)) => {
                            let given = self.shape(value)?;
                            if given != shape {
                                return Err(format!(
                                    "field `{}` of `{name}` given a value of another shape",
                                    f.name
                                ));
                            }
                            out.extend(self.lower(value)?);
                        }
                        None => match &base {
                            Some(b) => out.extend(b[range].iter().cloned()),
                            None => {
                                return Err(format!("field `{}` of `{name}` is missing", f.name))
                            }
                        },
                    }
                }
                Ok(out)
            }
            Expr::Array(items) => items.iter().map(|item| self.scalar(item)).collect(),
            Expr::Repeat(value, n) => {
                let x = self.scalar(value)?;
                Ok(vec![x; *n as usize])
            }
            Expr::If(cond, then, otherwise) => {
                let cond = self.scalar(cond)?;
                let (then_lets, then_values) = self.block(then)?;
                let (else_lets, else_values) = self.block(otherwise)?;
                if then_values.len() != else_values.len() {
                    return Err("an `if` whose branches differ in shape".to_string());
                }
                Ok(then_values
                    .into_iter()
                    .zip(else_values)
                    .map(|(t, f)| {
                        Expr::If(
                            Box::new(cond.clone()),
                            Box::new(Block {
                                lets: then_lets.clone(),
                                value: t,
                            }),
                            Box::new(Block {
                                lets: else_lets.clone(),
                                value: f,
                            }),
                        )
                    })
                    .collect())
            }
            Expr::Match(scrutinee, arms) => {
                let scrutinee = self.scalar(scrutinee)?;
                let mut lowered = Vec::new();
                for (pattern, value) in arms {
                    lowered.push((pattern.clone(), self.lower(value)?));
                }
                let count = lowered.first().map_or(0, |(_, v)| v.len());
                if lowered.iter().any(|(_, v)| v.len() != count) {
                    return Err("a `match` whose arms differ in shape".to_string());
                }
                Ok((0..count)
                    .map(|k| {
                        Expr::Match(
                            Box::new(scrutinee.clone()),
                            lowered
                                .iter()
                                .map(|(p, v)| (p.clone(), v[k].clone()))
                                .collect(),
                        )
                    })
                    .collect())
            }
            Expr::Block(b) => {
                let (lets, values) = self.block(b)?;
                Ok(values
                    .into_iter()
                    .map(|value| {
                        if lets.is_empty() {
                            value
                        } else {
                            Expr::Block(Box::new(Block {
                                lets: lets.clone(),
                                value,
                            }))
                        }
                    })
                    .collect())
            }
            Expr::Lit(_) | Expr::Const(..) => one(e.clone()),
            Expr::Unary(op, x) => one(Expr::Unary(*op, Box::new(self.scalar(x)?))),
            Expr::Binary(op, a, b) => one(Expr::Binary(
                *op,
                Box::new(self.scalar(a)?),
                Box::new(self.scalar(b)?),
            )),
            Expr::Cast(x, p) => one(Expr::Cast(Box::new(self.scalar(x)?), *p)),
            Expr::Typed(x, p) => one(Expr::Typed(Box::new(self.scalar(x)?), *p)),
            Expr::TypedLike(x, place) => one(Expr::TypedLike(
                Box::new(self.scalar(x)?),
                Box::new(self.scalar(place)?),
            )),
            Expr::Call { method, prim, args } => one(Expr::Call {
                method,
                prim: *prim,
                args: args
                    .iter()
                    .map(|a| self.scalar(a))
                    .collect::<Result<_, _>>()?,
            }),
        }
    }
}

/// The statement of `op` (over a struct described in `structs`) that
/// lowering or checking refuses, numbered as [`crate::eval::CheckError::statement`]
/// and [`crate::ir_text::parse_with_lines`] number them; `None` where the
/// whole operator is accepted. A struct operator is checked leaf by leaf
/// after lowering, where its statements are no longer apart: this checks
/// the body cut after each top-level statement (its value replaced by the
/// first operand, an element), so an error is placed at the first
/// statement whose prefix fails, a nested statement at its top-level one,
/// and one in the final value at that value; `None` too where the body
/// of the first operand alone is refused (the identity or the structs are
/// at fault, not a statement).
pub fn refused_statement(op: &OpDesc, structs: &Structs) -> Option<usize> {
    let accepted = |body: &Block| {
        let cut = OpDesc {
            body: body.clone(),
            ..op.clone()
        };
        lower_op(&cut, structs).is_ok_and(|l| crate::eval::StructValues::new(&l).is_ok())
    };
    let operand = Block {
        lets: Vec::new(),
        value: Expr::Var(op.params[0].clone()),
    };
    if accepted(&op.body) || !accepted(&operand) {
        return None;
    }
    let mut number = 0;
    for k in 0..op.body.lets.len() {
        let prefix = Block {
            lets: op.body.lets[..=k].to_vec(),
            value: Expr::Var(op.params[0].clone()),
        };
        if !accepted(&prefix) {
            return Some(number);
        }
        number += 1 + nested_statements(&op.body.lets[k].1);
    }
    Some(number)
}

/// The statements of the blocks inside `e` (each block's `let`s and its
/// value), as the checker numbers them.
fn nested_statements(e: &Expr) -> usize {
    let block = |b: &Block| {
        b.lets.len()
            + 1
            + b.lets
                .iter()
                .map(|(_, v)| nested_statements(v))
                .sum::<usize>()
            + nested_statements(&b.value)
    };
    match e {
        Expr::Lit(_) | Expr::Var(_) | Expr::Const(..) => 0,
        Expr::Field(a, _)
        | Expr::Index(a, _)
        | Expr::Unary(_, a)
        | Expr::Cast(a, _)
        | Expr::Typed(a, _)
        | Expr::Repeat(a, _) => nested_statements(a),
        Expr::Binary(_, a, b) | Expr::TypedLike(a, b) => {
            nested_statements(a) + nested_statements(b)
        }
        Expr::Call { args, .. } | Expr::Array(args) => args.iter().map(nested_statements).sum(),
        Expr::If(c, t, f) => nested_statements(c) + block(t) + block(f),
        Expr::Match(s, arms) => {
            nested_statements(s)
                + arms
                    .iter()
                    .map(|(_, v)| nested_statements(v))
                    .sum::<usize>()
        }
        Expr::Block(b) => block(b),
        Expr::Struct { fields, base, .. } => {
            fields
                .iter()
                .map(|(_, v)| nested_statements(v))
                .sum::<usize>()
                + base.as_deref().map_or(0, nested_statements)
        }
    }
}
