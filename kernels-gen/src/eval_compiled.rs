//! A checked body ([`Checked`]) compiled once into closures over numbered
//! slots: every variable resolved to its slot, every literal to its typed
//! value, every node's type looked up once, so that evaluating it is a walk
//! of closures with no name lookups or hashing. It gives the values
//! [`Checked::eval`] gives, bit for bit (`tests/operator_ir.rs` checks it
//! on every operator there and the differential family), without the
//! unspecified and inexact flags: the CPU path of operators built at run
//! time (the Python package's scans) runs it.

use crate::eval::{
    binary, call_method, cast, constant, literal, Checked, OpValues, StageValues, StructValues,
    Value,
};
use crate::ir::{Block, Expr, Pattern, UnOp};

/// One node: reads the slots, returns its value.
type Node = Box<dyn Fn(&mut [Value]) -> Value + Send + Sync>;
/// One pattern: whether the scrutinee matches.
type Test = Box<dyn Fn(&mut [Value], Value) -> bool + Send + Sync>;

/// A compiled body: inputs in slots `0..inputs`, its `let`s after them.
pub struct CompiledBody {
    root: Node,
    slots: usize,
}

impl CompiledBody {
    /// Compiles `checked` whose inputs are `inputs`, in slot order.
    pub fn new(checked: &Checked<'_>, inputs: &[&str]) -> Self {
        let mut c = Compiler {
            checked,
            scope: inputs
                .iter()
                .enumerate()
                .map(|(i, n)| (n.to_string(), i))
                .collect(),
            slots: inputs.len(),
        };
        let root = c.block(checked.body);
        CompiledBody {
            root,
            slots: c.slots,
        }
    }

    /// Slots an evaluation needs (inputs first).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The body's value, `slots` holding the inputs first (and room for
    /// [`CompiledBody::slots`] values).
    pub fn eval(&self, slots: &mut [Value]) -> Value {
        (self.root)(slots)
    }
}

struct Compiler<'c, 'e> {
    checked: &'c Checked<'e>,
    /// Names in scope and their slots, the innermost last.
    scope: Vec<(String, usize)>,
    slots: usize,
}

impl Compiler<'_, '_> {
    fn block(&mut self, b: &Block) -> Node {
        let saved = self.scope.len();
        let mut lets = Vec::with_capacity(b.lets.len());
        for (name, value) in &b.lets {
            let node = self.expr(value);
            let slot = self.slots;
            self.slots += 1;
            self.scope.push((name.clone(), slot));
            lets.push((slot, node));
        }
        let value = self.expr(&b.value);
        self.scope.truncate(saved);
        if lets.is_empty() {
            return value;
        }
        Box::new(move |env| {
            for (slot, node) in &lets {
                env[*slot] = node(env);
            }
            value(env)
        })
    }

    fn expr(&mut self, e: &Expr) -> Node {
        match e {
            Expr::Lit(lit) => {
                let v = literal(lit, self.checked.type_of(e));
                Box::new(move |_| v)
            }
            Expr::Var(name) => {
                let slot = self
                    .scope
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .unwrap_or_else(|| panic!("unbound {name}"))
                    .1;
                Box::new(move |env| env[slot])
            }
            Expr::Unary(op, inner) => {
                let inner = self.expr(inner);
                let op = *op;
                Box::new(move |env| unary(op, inner(env)))
            }
            Expr::Binary(op, a, b) => {
                let (a, b, op) = (self.expr(a), self.expr(b), *op);
                Box::new(move |env| {
                    let x = a(env);
                    binary(op, x, b(env))
                })
            }
            Expr::Cast(inner, to) => {
                let (inner, to) = (self.expr(inner), *to);
                Box::new(move |env| cast(inner(env), to))
            }
            Expr::Typed(inner, _) => self.expr(inner),
            Expr::Call { method, args, .. } => {
                let name = method.rust;
                let args: Vec<Node> = args.iter().map(|a| self.expr(a)).collect();
                Box::new(move |env| {
                    let mut v = [Value::Bool(false); 3];
                    for (slot, arg) in v.iter_mut().zip(&args) {
                        *slot = arg(env);
                    }
                    call_method(name, &v[..args.len()], &mut false)
                })
            }
            Expr::Const(p, c) => {
                let v = constant(*p, *c);
                Box::new(move |_| v)
            }
            Expr::If(c, t, f) => {
                let (c, t, f) = (self.expr(c), self.block(t), self.block(f));
                Box::new(move |env| {
                    if c(env) == Value::Bool(true) {
                        t(env)
                    } else {
                        f(env)
                    }
                })
            }
            Expr::Match(scrutinee, arms) => {
                let s = self.expr(scrutinee);
                let arms: Vec<(Test, Node)> = arms
                    .iter()
                    .map(|(p, v)| (self.pattern(p), self.expr(v)))
                    .collect();
                Box::new(move |env| {
                    let v = s(env);
                    for (test, value) in &arms {
                        if test(env, v) {
                            return value(env);
                        }
                    }
                    panic!("no arm matched {v:?}")
                })
            }
            Expr::Block(b) => self.block(b),
            other => panic!("not interpreted: {other:?}"),
        }
    }

    fn pattern(&mut self, p: &Pattern) -> Test {
        match p {
            Pattern::Wild => Box::new(|_, _| true),
            Pattern::Lit { lit, negative } => {
                let (lit, negative) = (lit.clone(), *negative);
                Box::new(move |_, s| {
                    let v = literal(&lit, s.prim());
                    let v = if negative { unary(UnOp::Neg, v) } else { v };
                    v == s
                })
            }
            Pattern::Range { lo, hi, inclusive } => {
                let lo = lo.as_deref().map(|b| self.expr(b));
                let hi = hi.as_deref().map(|b| self.expr(b));
                let inclusive = *inclusive;
                Box::new(move |env, s| {
                    let x = s.as_i128();
                    let lo_ok = lo.as_ref().is_none_or(|b| b(env).as_i128() <= x);
                    let hi_ok = hi.as_ref().is_none_or(|b| {
                        let h = b(env).as_i128();
                        if inclusive {
                            x <= h
                        } else {
                            x < h
                        }
                    });
                    lo_ok && hi_ok
                })
            }
            Pattern::Or(alts) => {
                let alts: Vec<Test> = alts.iter().map(|a| self.pattern(a)).collect();
                Box::new(move |env, s| alts.iter().any(|t| t(env, s)))
            }
        }
    }
}

/// A unary operator on a value (as [`Checked::eval`] applies it).
fn unary(op: UnOp, v: Value) -> Value {
    match (op, v) {
        (UnOp::Neg, Value::F32(x)) => Value::F32(-x),
        (UnOp::Neg, Value::F64(x)) => Value::F64(-x),
        (UnOp::Not, Value::Bool(b)) => Value::Bool(!b),
        (UnOp::Neg, v) => crate::eval::int_neg(v),
        (UnOp::Not, v) => crate::eval::int_not(v),
    }
}

/// An operator over a primitive, compiled ([`OpValues::compiled`]).
pub struct CompiledOp {
    identity: Value,
    body: CompiledBody,
}

impl CompiledOp {
    /// The identity.
    pub fn identity(&self) -> Value {
        self.identity
    }

    /// `x ∘ y`, as [`OpValues::combine`] gives its value.
    pub fn combine(&self, x: Value, y: Value) -> Value {
        let mut slots = [Value::Bool(false); 16];
        if self.body.slots <= slots.len() {
            slots[0] = x;
            slots[1] = y;
            self.body.eval(&mut slots)
        } else {
            let mut slots = vec![Value::Bool(false); self.body.slots];
            slots[0] = x;
            slots[1] = y;
            self.body.eval(&mut slots)
        }
    }
}

impl OpValues<'_> {
    /// This operator compiled for fast evaluation ([`CompiledOp`]).
    pub fn compiled(&self) -> CompiledOp {
        let [x, y] = self.params();
        CompiledOp {
            identity: self.identity(),
            body: CompiledBody::new(self.checked(), &[x, y]),
        }
    }
}

/// A stage over primitives, compiled ([`StageValues::compiled`]).
pub struct CompiledStage {
    body: CompiledBody,
}

impl CompiledStage {
    /// The function of `args`, as [`StageValues::apply`] gives its value.
    pub fn apply(&self, args: &[Value]) -> Value {
        let mut slots = [Value::Bool(false); 16];
        if self.body.slots <= slots.len() {
            slots[..args.len()].copy_from_slice(args);
            self.body.eval(&mut slots)
        } else {
            let mut slots = vec![Value::Bool(false); self.body.slots];
            slots[..args.len()].copy_from_slice(args);
            self.body.eval(&mut slots)
        }
    }
}

impl StageValues<'_> {
    /// This stage compiled for fast evaluation ([`CompiledStage`]).
    pub fn compiled(&self) -> CompiledStage {
        let params: Vec<&str> = self.inputs().iter().map(|(n, _)| n.as_str()).collect();
        CompiledStage {
            body: CompiledBody::new(self.checked(), &params),
        }
    }
}

/// An operator over a struct, compiled leaf by leaf
/// ([`StructValues::compiled`]): operands' leaves in slots, each leaf's
/// body after them.
pub struct CompiledStructOp {
    identity: Vec<Value>,
    bodies: Vec<CompiledBody>,
    slots: usize,
}

impl CompiledStructOp {
    /// The identity's leaves.
    pub fn identity(&self) -> Vec<Value> {
        self.identity.clone()
    }

    /// `x ∘ y` leaf by leaf, as [`StructValues::combine`] gives it.
    pub fn combine(&self, x: &[Value], y: &[Value]) -> Vec<Value> {
        let mut slots = vec![Value::Bool(false); self.slots];
        slots[..x.len()].copy_from_slice(x);
        slots[x.len()..x.len() + y.len()].copy_from_slice(y);
        self.bodies.iter().map(|b| b.eval(&mut slots)).collect()
    }
}

impl StructValues<'_> {
    /// This operator compiled for fast evaluation ([`CompiledStructOp`]).
    pub fn compiled(&self) -> CompiledStructOp {
        let inputs = self.operand_names();
        let bodies: Vec<CompiledBody> = self
            .checked_bodies()
            .iter()
            .map(|c| CompiledBody::new(c, &inputs))
            .collect();
        let slots = bodies.iter().map(CompiledBody::slots).max().unwrap_or(0);
        CompiledStructOp {
            identity: self.identity(),
            bodies,
            slots: slots.max(inputs.len()),
        }
    }
}
