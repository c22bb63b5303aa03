//! Random, well-typed operator expressions for property tests of the
//! translation (`tests/generated_operators.rs`).
//!
//! [`operator_strategy`] is a proptest strategy of [`GenOp`]s: a body (a
//! [`Block`] of `let` bindings and a value, as `#[scan_op]` hands an
//! operator body to the printer) over the fixed input variables of
//! [`VARIABLES`] (`a_u8 … a_bool`, `b_u8 … b_bool`), together with the Rust
//! type of its value.
//!
//! Generation is type directed: [`Gen::expr`] builds an expression of a
//! given primitive type, and knows whether its context would fix the type
//! of an untyped literal (`{integer}`, `{float}`) the way rustc infers it:
//! an operand whose sibling is typed, a method argument, an annotated `let`,
//! the function's return value. Where nothing fixes it, an untyped value
//! defaults to `i32`/`f64` in Rust, so the generator only leaves values
//! untyped there when that default is the type it wants. The generator
//! aims at well-typed programs; [`gpu_scan::kernels_gen::eval::check`], which
//! infers types the way rustc does, is the final judge, and the tests
//! discard the few candidates it rejects (counting them).
//!
//! Covered: typed and untyped integer and float literals (0, 1, MAX-ish,
//! negative, subnormal, a literal whose `f32` rounding differs from the
//! `f32` rounding of its `f64` rounding), every [`BinOp`] and [`UnOp`],
//! shifts by any integer type, `as` casts between all primitives Rust
//! allows, the numeric methods of [`ir::METHODS`] on the receivers Rust
//! accepts (method and `prim::method(…)` call syntax), primitive
//! constants, `if`/`else`, `match` on integers (literal, range, `|` and `_`
//! patterns), and blocks with typed, annotated and untyped `let` bindings
//! (an untyped binding takes the type of its uses, as in rustc).
#![allow(dead_code)]

use gpu_scan::kernels_gen::ir::{
    self, ArgKind, BinOp, Block, Expr, Lit, Method, MethodReceivers, Pattern, Prim, PrimConst, UnOp,
};
use proptest::prelude::{Just, Rng, Strategy};
use proptest::test_runner::TestRng;

/// The integer types, narrowest first.
pub const INTS: [Prim; 8] = [
    Prim::U8,
    Prim::U16,
    Prim::U32,
    Prim::U64,
    Prim::I8,
    Prim::I16,
    Prim::I32,
    Prim::I64,
];

pub use gpu_scan::kernels_gen::eval::TRANSCENDENTAL;

/// The input variables every generated expression may read: `a_<prim>` and
/// `b_<prim>` for each primitive, in this order (the order of the generated
/// functions' parameters and of an input row).
pub fn variables() -> Vec<(String, Prim)> {
    let mut v = Vec::new();
    for side in ["a", "b"] {
        for p in Prim::ALL {
            v.push((format!("{side}_{}", p.rust_name()), p));
        }
    }
    v
}

/// [`variables`], as a constant count.
pub const VARIABLES: usize = 22;

/// How large and which constructs.
#[derive(Clone, Copy, Debug)]
pub struct GenConfig {
    /// Maximum nesting depth of an expression (leaves are depth 0).
    pub max_depth: u32,
    /// Whether to use the methods of [`TRANSCENDENTAL`] (bit exact on the
    /// host, where Rust and C++ call the same libm; not on a GPU).
    pub transcendentals: bool,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_depth: 4,
            transcendentals: false,
        }
    }
}

/// A generated operator body and the Rust type of its value (the type of
/// the function it is the body of).
#[derive(Clone, Debug)]
pub struct GenOp {
    /// `let` bindings and the value.
    pub body: Block,
    /// The type of the value.
    pub ty: Prim,
}

/// A strategy of generated operator bodies.
pub fn operator_strategy(config: GenConfig) -> impl Strategy<Value = GenOp> {
    Just(()).prop_perturb(move |(), mut rng| Gen::new(config, &mut rng).operator())
}

/// A generated expression and whether it has a type of its own (`false`
/// for Rust's `{integer}`/`{float}`: untyped literals, arithmetic of them,
/// untyped bindings).
struct G {
    e: Expr,
    typed: bool,
}

/// A `let` binding in scope.
#[derive(Clone)]
struct Binding {
    name: String,
    ty: Prim,
    /// An untyped binding: its type is that of its uses (all of them `ty`).
    untyped: bool,
}

/// Where an expression goes: whether the context fixes the type of an
/// untyped value, and whether the value must be untyped (an untyped `let`).
#[derive(Clone, Copy)]
struct Ctx {
    fixed: bool,
    untyped_only: bool,
}

const FIXED: Ctx = Ctx {
    fixed: true,
    untyped_only: false,
};
const FREE: Ctx = Ctx {
    fixed: false,
    untyped_only: false,
};

/// The generator's state: the random source, the bindings in scope.
pub struct Gen<'r> {
    rng: &'r mut TestRng,
    config: GenConfig,
    scope: Vec<Binding>,
    names: usize,
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

fn is_default(p: Prim) -> bool {
    p == Prim::I32 || p == Prim::F64
}

fn bits(p: Prim) -> u32 {
    (p.size() * 8) as u32
}

/// The largest magnitude of a non-negative literal of integer type `p`.
fn int_max(p: Prim) -> u128 {
    if p.is_signed_integer() {
        (1u128 << (bits(p) - 1)) - 1
    } else {
        (1u128 << bits(p)) - 1
    }
}

/// The largest magnitude of a negated literal of signed integer type `p`.
fn int_min_magnitude(p: Prim) -> u128 {
    1u128 << (bits(p) - 1)
}

/// Float literal texts: exact small values, halves (for `round`), a tenth,
/// huge and subnormal values, and `1 + 2^-24 + ε`, whose correct `f32`
/// rounding (`1 + 2^-23`) differs from rounding its `f64` value (`1`).
const FLOAT_TEXTS: [&str; 22] = [
    "0.0",
    "1.0",
    "2.0",
    "0.5",
    "1.5",
    "2.5",
    "3.0",
    "0.1",
    "100.0",
    "255.5",
    "1e10",
    "1e-10",
    "4294967296.0",
    "9.3e18",
    "16777217.0",
    "1e-40",
    "3.4e38",
    "1e300",
    "1e-310",
    "0.30000000000000004",
    "1.00000005960464477539062500000001",
    "2147483648.0",
];

impl<'r> Gen<'r> {
    /// A generator drawing from `rng`.
    pub fn new(config: GenConfig, rng: &'r mut TestRng) -> Self {
        Gen {
            rng,
            config,
            scope: Vec::new(),
            names: 0,
        }
    }

    fn below(&mut self, n: usize) -> usize {
        (self.rng.next_u64() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.rng.next_u64() % 100 < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn any_int(&mut self) -> Prim {
        self.pick(&INTS)
    }

    fn any_float(&mut self) -> Prim {
        if self.chance(50) {
            Prim::F32
        } else {
            Prim::F64
        }
    }

    /// A random result type: integers and floats often, `bool` less.
    fn any_prim(&mut self) -> Prim {
        match self.below(10) {
            0..=5 => self.any_int(),
            6..=8 => self.any_float(),
            _ => Prim::Bool,
        }
    }

    fn fresh(&mut self) -> String {
        self.names += 1;
        format!("l{}", self.names)
    }

    /// A whole operator body: a few `let` bindings, then the value.
    pub fn operator(&mut self) -> GenOp {
        let ty = self.any_prim();
        let depth = self.config.max_depth;
        let body = self.block(ty, FIXED, depth).0;
        GenOp { body, ty }
    }

    /// A block of type `ty`: 0–3 bindings, then a value. Returns whether the
    /// block is typed.
    fn block(&mut self, ty: Prim, ctx: Ctx, depth: u32) -> (Block, bool) {
        let saved = self.scope.len();
        let mut lets = Vec::new();
        let n = if depth == 0 { 0 } else { self.below(4) };
        for _ in 0..n {
            let name = self.fresh();
            let d = depth.saturating_sub(1);
            let (value, binding) = match self.below(3) {
                // `let l: P = value;`: the annotation fixes untyped literals.
                0 => {
                    let p = self.any_prim();
                    let v = self.expr(p, FIXED, d).e;
                    (
                        Expr::Typed(bx(v), p),
                        Binding {
                            name: name.clone(),
                            ty: p,
                            untyped: false,
                        },
                    )
                }
                // `let l = value;` with a typed value.
                1 => {
                    let p = self.any_prim();
                    let v = self.typed_expr(p, d);
                    (
                        v,
                        Binding {
                            name: name.clone(),
                            ty: p,
                            untyped: false,
                        },
                    )
                }
                // `let l = <untyped>;`: its type is that of its uses.
                _ => {
                    let p = if self.chance(50) {
                        self.any_int()
                    } else {
                        self.any_float()
                    };
                    let ctx = Ctx {
                        fixed: true,
                        untyped_only: true,
                    };
                    let v = self.expr(p, ctx, d).e;
                    (
                        v,
                        Binding {
                            name: name.clone(),
                            ty: p,
                            untyped: true,
                        },
                    )
                }
            };
            lets.push((name, value));
            self.scope.push(binding);
        }
        let value = self.expr(ty, ctx, depth);
        self.scope.truncate(saved);
        (
            Block {
                lets,
                value: value.e,
            },
            value.typed,
        )
    }

    /// An expression of type `ty` that has a type of its own.
    fn typed_expr(&mut self, ty: Prim, depth: u32) -> Expr {
        for _ in 0..4 {
            let g = self.expr(ty, FREE, depth);
            if g.typed {
                return g.e;
            }
        }
        self.variable(ty)
    }

    fn variable(&mut self, ty: Prim) -> Expr {
        let side = if self.chance(50) { "a" } else { "b" };
        Expr::Var(format!("{side}_{}", ty.rust_name()))
    }

    /// An expression of type `ty` in context `ctx`, at most `depth` deep.
    /// Untyped results only where the context fixes their type or where
    /// Rust's default is `ty`.
    fn expr(&mut self, ty: Prim, ctx: Ctx, depth: u32) -> G {
        if depth == 0 || self.chance(20) {
            return self.leaf(ty, ctx);
        }
        let d = depth - 1;
        if ctx.untyped_only {
            return self.untyped_expr(ty, ctx, d);
        }
        loop {
            let g = match self.below(14) {
                0..=3 => self.binary(ty, ctx, d),
                4 => self.unary(ty, ctx, d),
                5 | 6 => self.cast(ty, d),
                7 => self.call(ty, d),
                8 if self.chance(80) => self.call(ty, d),
                8 => self.cmp_call(ty, ctx, d),
                9 => self.if_expr(ty, ctx, d),
                10 => self.match_expr(ty, ctx, d),
                11 => {
                    let (b, typed) = self.block(ty, ctx, d);
                    Some(G {
                        e: Expr::Block(Box::new(b)),
                        typed,
                    })
                }
                12 => self.shift(ty, ctx, d),
                _ => Some(self.leaf(ty, ctx)),
            };
            if let Some(g) = g {
                return g;
            }
        }
    }

    /// An untyped expression (for `let l = …;`): literals, untyped
    /// bindings, arithmetic and shifts of them, branches of them.
    fn untyped_expr(&mut self, ty: Prim, ctx: Ctx, d: u32) -> G {
        let e = match self.below(6) {
            0 | 1 if ty != Prim::Bool => {
                let ops: &[BinOp] = if ty.is_float() {
                    &[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Rem]
                } else {
                    &[
                        BinOp::Add,
                        BinOp::Sub,
                        BinOp::Mul,
                        BinOp::Div,
                        BinOp::Rem,
                        BinOp::BitAnd,
                        BinOp::BitOr,
                        BinOp::BitXor,
                    ]
                };
                let op = self.pick(ops);
                let a = self.expr(ty, ctx, d).e;
                let b = self.expr(ty, ctx, d).e;
                Expr::Binary(op, bx(a), bx(b))
            }
            2 if ty.is_integer() => {
                let a = self.expr(ty, ctx, d).e;
                let amount_ty = self.any_int();
                let b = self.expr(amount_ty, FREE, d).e;
                let op = if self.chance(50) {
                    BinOp::Shl
                } else {
                    BinOp::Shr
                };
                Expr::Binary(op, bx(a), bx(b))
            }
            3 if ty.is_signed_integer() || ty.is_float() => {
                Expr::Unary(UnOp::Neg, bx(self.expr(ty, ctx, d).e))
            }
            4 => {
                let cond = self.expr(Prim::Bool, FREE, d).e;
                let t = self.block(ty, ctx, d).0;
                let f = self.block(ty, ctx, d).0;
                Expr::If(bx(cond), Box::new(t), Box::new(f))
            }
            _ => return self.leaf(ty, ctx),
        };
        G { e, typed: false }
    }

    /// A variable, binding, literal or constant of type `ty`.
    fn leaf(&mut self, ty: Prim, ctx: Ctx) -> G {
        let untyped_ok = ctx.fixed || is_default(ty);
        let bindings: Vec<Binding> = self
            .scope
            .iter()
            .filter(|b| b.ty == ty && (!ctx.untyped_only || b.untyped))
            .cloned()
            .collect();
        if ctx.untyped_only {
            if !bindings.is_empty() && self.chance(40) {
                let b = bindings[self.below(bindings.len())].clone();
                return G {
                    e: Expr::Var(b.name),
                    typed: false,
                };
            }
            return G {
                e: self.literal(ty, false),
                typed: false,
            };
        }
        match self.below(10) {
            0..=2 => G {
                e: self.variable(ty),
                typed: true,
            },
            3 | 4 if !bindings.is_empty() => {
                let b = bindings[self.below(bindings.len())].clone();
                G {
                    e: Expr::Var(b.name),
                    typed: !b.untyped,
                }
            }
            5 if ty != Prim::Bool => G {
                e: self.constant(ty),
                typed: true,
            },
            6..=8 if untyped_ok && ty != Prim::Bool => G {
                e: self.literal(ty, false),
                typed: false,
            },
            _ => G {
                e: self.literal(ty, true),
                typed: true,
            },
        }
    }

    /// A literal of type `ty`, with its suffix when `suffixed`; negative
    /// ones as `-` applied to the literal (as the translator produces them).
    fn literal(&mut self, ty: Prim, suffixed: bool) -> Expr {
        if ty == Prim::Bool {
            return Expr::Lit(Lit::Bool(self.chance(50)));
        }
        let suffix = suffixed.then_some(ty);
        if ty.is_float() {
            let text = self.pick(&FLOAT_TEXTS);
            let (value, value_f32): (f64, f32) = if self.chance(15) {
                // A random value, printed exactly.
                let v = (self.rng.next_u64() % 2_000_001) as f64 / 1000.0;
                (v, format!("{v:?}").parse().unwrap())
            } else {
                (text.parse().unwrap(), text.parse().unwrap())
            };
            // Keep within the type's range (rustc rejects `1e300f32`).
            let (value, value_f32) = if ty == Prim::F32 && !value_f32.is_finite() {
                (1.0, 1.0)
            } else {
                (value, value_f32)
            };
            let lit = Expr::Lit(Lit::Float {
                value,
                value_f32,
                suffix,
            });
            return if self.chance(30) {
                Expr::Unary(UnOp::Neg, bx(lit))
            } else {
                lit
            };
        }
        let negative = ty.is_signed_integer() && self.chance(30);
        let limit = if negative {
            int_min_magnitude(ty)
        } else {
            int_max(ty)
        };
        let value = match self.below(8) {
            0 => 0,
            1 => 1,
            2 => limit,
            3 => limit - 1,
            4 => self
                .pick(&[2u128, 3, 5, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100, 127])
                .min(limit),
            5 => self.rng.next_u64() as u128 % (2 * bits(ty) as u128 + 1),
            _ => self.rng.next_u64() as u128 % (limit + 1),
        };
        let lit = Expr::Lit(Lit::Int { value, suffix });
        if negative {
            Expr::Unary(UnOp::Neg, bx(lit))
        } else {
            lit
        }
    }

    /// A primitive constant of type `ty`.
    fn constant(&mut self, ty: Prim) -> Expr {
        if ty.is_float() {
            let c = self.pick(&[
                PrimConst::Max,
                PrimConst::Min,
                PrimConst::Infinity,
                PrimConst::NegInfinity,
                PrimConst::Nan,
                PrimConst::Epsilon,
                PrimConst::MinPositive,
            ]);
            return Expr::Const(ty, c);
        }
        if ty == Prim::U32 && self.chance(30) {
            // `BITS` is a u32 of every integer type.
            let of = self.any_int();
            return Expr::Const(of, PrimConst::Bits);
        }
        let c = self.pick(&[PrimConst::Max, PrimConst::Min]);
        Expr::Const(ty, c)
    }

    /// Arithmetic, bit operations, comparisons and logic.
    fn binary(&mut self, ty: Prim, ctx: Ctx, d: u32) -> Option<G> {
        let arith = [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Rem];
        let bit = [BinOp::BitAnd, BinOp::BitOr, BinOp::BitXor];
        let cmp = [
            BinOp::Eq,
            BinOp::Ne,
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
        ];
        if ty == Prim::Bool {
            let (op, operand) = match self.below(4) {
                0 | 1 => (self.pick(&cmp), self.any_prim()),
                2 => (self.pick(&[BinOp::And, BinOp::Or]), Prim::Bool),
                _ => (self.pick(&bit), Prim::Bool),
            };
            // A comparison's operands unify with each other, not with the result.
            let (a, b) = self.siblings(operand, FREE, d);
            return Some(G {
                e: Expr::Binary(op, bx(a.e), bx(b.e)),
                typed: true,
            });
        }
        let op = if ty.is_float() || self.chance(60) {
            self.pick(&arith)
        } else {
            self.pick(&bit)
        };
        let (a, b) = self.siblings(ty, ctx, d);
        let typed = a.typed || b.typed;
        Some(G {
            e: Expr::Binary(op, bx(a.e), bx(b.e)),
            typed,
        })
    }

    /// Two operands whose types rustc unifies: the first generated in the
    /// outer context, the second fixed when the first is typed; sometimes
    /// swapped, so that untyped left operands occur too.
    fn siblings(&mut self, ty: Prim, ctx: Ctx, d: u32) -> (G, G) {
        let first = self.expr(ty, ctx, d);
        let second_ctx = Ctx {
            fixed: ctx.fixed || first.typed,
            ..ctx
        };
        let second = self.expr(ty, second_ctx, d);
        if self.chance(50) {
            (first, second)
        } else {
            (second, first)
        }
    }

    fn shift(&mut self, ty: Prim, ctx: Ctx, d: u32) -> Option<G> {
        if !ty.is_integer() {
            return None;
        }
        let value = self.expr(ty, ctx, d);
        let amount_ty = self.any_int();
        let amount = self.expr(amount_ty, FREE, d);
        let op = if self.chance(50) {
            BinOp::Shl
        } else {
            BinOp::Shr
        };
        Some(G {
            e: Expr::Binary(op, bx(value.e), bx(amount.e)),
            typed: value.typed,
        })
    }

    fn unary(&mut self, ty: Prim, ctx: Ctx, d: u32) -> Option<G> {
        let op = if ty.is_float() || (ty.is_signed_integer() && self.chance(50)) {
            UnOp::Neg
        } else if ty.is_integer() || ty == Prim::Bool {
            UnOp::Not
        } else {
            return None;
        };
        let inner = self.expr(ty, ctx, d);
        Some(G {
            e: Expr::Unary(op, bx(inner.e)),
            typed: inner.typed,
        })
    }

    /// `operand as ty` from a type Rust can cast to `ty`.
    fn cast(&mut self, ty: Prim, d: u32) -> Option<G> {
        let from = match ty {
            Prim::Bool => Prim::Bool,
            p if p.is_float() => {
                if self.chance(50) {
                    self.any_int()
                } else {
                    self.any_float()
                }
            }
            _ => match self.below(10) {
                0..=4 => self.any_int(),
                5..=8 => self.any_float(),
                _ => Prim::Bool,
            },
        };
        let operand = self.expr(from, FREE, d).e;
        let operand = cast_operand(operand, from, ty);
        Some(G {
            e: Expr::Cast(bx(operand), ty),
            typed: true,
        })
    }

    /// `std::cmp::min(x, y)`/`std::cmp::max(x, y)` on integers: a call
    /// without a receiver type in the IR (as `x.min(y)`), whose arguments
    /// unify like an operator's operands, so `x` may be untyped.
    fn cmp_call(&mut self, ty: Prim, ctx: Ctx, d: u32) -> Option<G> {
        if !ty.is_integer() {
            return None;
        }
        let method = ir::method(if self.chance(50) { "min" } else { "max" }).unwrap();
        let (a, b) = self.siblings(ty, ctx, d);
        Some(G {
            typed: a.typed || b.typed,
            e: Expr::Call {
                method,
                prim: None,
                args: vec![a.e, b.e],
            },
        })
    }

    /// A numeric method call returning `ty`.
    fn call(&mut self, ty: Prim, d: u32) -> Option<G> {
        let candidates: Vec<(&'static Method, Prim)> = ir::METHODS
            .iter()
            .filter_map(|m| {
                if !self.config.transcendentals && TRANSCENDENTAL.contains(&m.rust) {
                    return None;
                }
                let receiver = match m.rust {
                    "count_ones" | "leading_zeros" | "trailing_zeros" if ty == Prim::U32 => {
                        return Some((m, Prim::U32)); // receiver chosen below
                    }
                    "is_nan" | "is_finite" | "is_infinite" if ty == Prim::Bool => {
                        return Some((m, Prim::F32));
                    }
                    "count_ones" | "leading_zeros" | "trailing_zeros" | "is_nan" | "is_finite"
                    | "is_infinite" => return None,
                    // Rust has no `wrapping_abs` on unsigned types (`abs` is
                    // rewritten to `semantics::abs`, which has).
                    "wrapping_abs" if !ty.is_signed_integer() => return None,
                    _ => ty,
                };
                let ok = match m.on {
                    MethodReceivers::Numbers => ty != Prim::Bool,
                    MethodReceivers::Integers => ty.is_integer(),
                    MethodReceivers::Floats => ty.is_float(),
                };
                ok.then_some((m, receiver))
            })
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let (method, mut receiver_ty) = candidates[self.below(candidates.len())];
        match method.rust {
            "count_ones" | "leading_zeros" | "trailing_zeros" => receiver_ty = self.any_int(),
            "is_nan" | "is_finite" | "is_infinite" => receiver_ty = self.any_float(),
            _ => {}
        }
        // `prim::method(receiver, …)` types an untyped receiver; the method
        // syntax needs a receiver with a type of its own.
        // (Not for `abs`: only the method syntax is rewritten to the
        // wrapping `semantics::abs`.)
        let ufcs = method.rust != "abs" && self.chance(25);
        let receiver = if ufcs {
            self.expr(receiver_ty, FIXED, d).e
        } else {
            self.typed_expr(receiver_ty, d)
        };
        let mut args = vec![receiver];
        for kind in method.args {
            let arg = match kind {
                ArgKind::SameAsReceiver => self.expr(receiver_ty, FIXED, d).e,
                ArgKind::I32 => self.expr(Prim::I32, FIXED, d).e,
                ArgKind::U32 => self.expr(Prim::U32, FIXED, d).e,
            };
            args.push(arg);
        }
        Some(G {
            e: Expr::Call {
                method,
                prim: ufcs.then_some(receiver_ty),
                args,
            },
            typed: true,
        })
    }

    /// `if cond { … } else { … }`: the branches unify.
    fn if_expr(&mut self, ty: Prim, ctx: Ctx, d: u32) -> Option<G> {
        let cond = self.expr(Prim::Bool, FREE, d).e;
        let (first, first_typed) = self.block(ty, ctx, d);
        let second_ctx = Ctx {
            fixed: ctx.fixed || first_typed,
            ..ctx
        };
        let (second, second_typed) = self.block(ty, second_ctx, d);
        let (t, f) = if self.chance(50) {
            (first, second)
        } else {
            (second, first)
        };
        Some(G {
            e: Expr::If(bx(cond), Box::new(t), Box::new(f)),
            typed: first_typed || second_typed,
        })
    }

    /// `match scrutinee { patterns => value, …, _ => value }` on an integer.
    fn match_expr(&mut self, ty: Prim, ctx: Ctx, d: u32) -> Option<G> {
        let s_ty = self.any_int();
        let scrutinee = self.typed_expr(s_ty, d);
        let n = 1 + self.below(4);
        let mut arms = Vec::new();
        let mut any_typed = false;
        for i in 0..=n {
            let pattern = if i == n {
                Pattern::Wild
            } else {
                self.pattern(s_ty, 2)
            };
            let arm_ctx = Ctx {
                fixed: ctx.fixed || any_typed,
                ..ctx
            };
            let value = self.expr(ty, arm_ctx, d);
            any_typed |= value.typed;
            arms.push((pattern, value.e));
        }
        Some(G {
            e: Expr::Match(bx(scrutinee), arms),
            typed: any_typed,
        })
    }

    /// A pattern of integer type `ty`.
    fn pattern(&mut self, ty: Prim, depth: u32) -> Pattern {
        match self.below(if depth == 0 { 2 } else { 3 }) {
            0 => {
                let (value, negative) = self.pattern_value(ty);
                let suffix = self.chance(20).then_some(ty);
                Pattern::Lit {
                    lit: Lit::Int { value, suffix },
                    negative,
                }
            }
            1 => {
                let x = self.pattern_value(ty);
                let y = self.pattern_value(ty);
                let (vx, vy) = (signed_of(x), signed_of(y));
                let (lo, hi) = if vx <= vy { (x, y) } else { (y, x) };
                let bound = |g: &mut Self, (value, negative): (u128, bool)| -> Box<Expr> {
                    let lit = Expr::Lit(Lit::Int {
                        value,
                        suffix: g.chance(20).then_some(ty),
                    });
                    bx(if negative {
                        Expr::Unary(UnOp::Neg, bx(lit))
                    } else {
                        lit
                    })
                };
                // `lo..hi` needs lo < hi; open ends sometimes.
                let inclusive = vx == vy || self.chance(60);
                let lo_e = if self.chance(15) {
                    None
                } else {
                    Some(bound(self, lo))
                };
                let hi_e = if self.chance(15) && inclusive {
                    None
                } else if self.chance(10) && inclusive {
                    Some(bx(Expr::Const(ty, PrimConst::Max)))
                } else {
                    Some(bound(self, hi))
                };
                Pattern::Range {
                    lo: lo_e,
                    hi: hi_e,
                    inclusive,
                }
            }
            _ => {
                let n = 2 + self.below(2);
                Pattern::Or((0..n).map(|_| self.pattern(ty, depth - 1)).collect())
            }
        }
    }

    /// A value a pattern of type `ty` may name: (magnitude, negative).
    fn pattern_value(&mut self, ty: Prim) -> (u128, bool) {
        let negative = ty.is_signed_integer() && self.chance(30);
        let limit = if negative {
            int_min_magnitude(ty)
        } else {
            int_max(ty)
        };
        let v = match self.below(4) {
            0 => self.rng.next_u64() as u128 % 8,
            1 => self.rng.next_u64() as u128 % 200,
            2 => limit,
            _ => self.rng.next_u64() as u128 % (limit + 1),
        };
        (v.min(limit), negative)
    }
}

fn signed_of((value, negative): (u128, bool)) -> i128 {
    if negative {
        -(value as i128)
    } else {
        value as i128
    }
}

/// rustc types an untyped literal that is directly cast (through `-`/`!`)
/// as the cast's target when both are integers or both floats
/// (`200 as u8` is a `u8` literal). Keeps such an operand untyped only when
/// it is valid at that type; otherwise gives the literal its suffix `from`.
fn cast_operand(operand: Expr, from: Prim, to: Prim) -> Expr {
    fn core(e: &Expr, negs: u32) -> Option<(&Lit, u32)> {
        match e {
            Expr::Lit(l) => Some((l, negs)),
            Expr::Unary(UnOp::Neg, inner) => core(inner, negs + 1),
            Expr::Unary(UnOp::Not, inner) => core(inner, negs),
            _ => None,
        }
    }
    fn with_suffix(e: Expr, p: Prim) -> Expr {
        match e {
            Expr::Lit(Lit::Int { value, .. }) => Expr::Lit(Lit::Int {
                value,
                suffix: Some(p),
            }),
            Expr::Lit(Lit::Float {
                value, value_f32, ..
            }) => Expr::Lit(Lit::Float {
                value,
                value_f32,
                suffix: Some(p),
            }),
            Expr::Unary(op, inner) => Expr::Unary(op, bx(with_suffix(*inner, p))),
            other => other,
        }
    }
    let Some((lit, negs)) = core(&operand, 0) else {
        return operand;
    };
    let fits = match *lit {
        Lit::Int {
            value,
            suffix: None,
        } if to.is_integer() => {
            if negs > 0 && !to.is_signed_integer() {
                false
            } else if negs == 1 && matches!(operand, Expr::Unary(UnOp::Neg, _)) {
                value <= int_min_magnitude(to)
            } else {
                value <= int_max(to)
            }
        }
        Lit::Float {
            value_f32,
            suffix: None,
            ..
        } if to == Prim::F32 => value_f32.is_finite(),
        _ => true,
    };
    if fits {
        operand
    } else {
        with_suffix(operand, from)
    }
}

/// The expression as Rust source (for failure reports).
pub fn rust_expr(e: &Expr) -> String {
    match e {
        Expr::Lit(l) => rust_lit(l, false),
        Expr::Var(v) => v.clone(),
        Expr::Field(b, f) => format!("{}.{f}", rust_expr(b)),
        Expr::Index(b, i) => format!("{}[{i}]", rust_expr(b)),
        Expr::Unary(UnOp::Neg, inner) => match &**inner {
            Expr::Lit(l) => rust_lit(l, true),
            _ => format!("-({})", rust_expr(inner)),
        },
        Expr::Unary(UnOp::Not, inner) => format!("!({})", rust_expr(inner)),
        Expr::Binary(op, a, b) => {
            let op = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                BinOp::Mul => "*",
                BinOp::Div => "/",
                BinOp::Rem => "%",
                BinOp::BitAnd => "&",
                BinOp::BitOr => "|",
                BinOp::BitXor => "^",
                BinOp::Shl => "<<",
                BinOp::Shr => ">>",
                BinOp::And => "&&",
                BinOp::Or => "||",
                BinOp::Eq => "==",
                BinOp::Ne => "!=",
                BinOp::Lt => "<",
                BinOp::Le => "<=",
                BinOp::Gt => ">",
                BinOp::Ge => ">=",
            };
            format!("({} {op} {})", rust_expr(a), rust_expr(b))
        }
        Expr::Cast(inner, p) => format!("({} as {})", rust_expr(inner), p.rust_name()),
        Expr::Typed(inner, _) => rust_expr(inner),
        Expr::Call { method, prim, args } => {
            let rest: Vec<String> = args[1..].iter().map(rust_expr).collect();
            let untyped_receiver = match &args[0] {
                Expr::Lit(Lit::Int { suffix, .. }) => suffix.is_none(),
                Expr::Unary(_, inner) => {
                    matches!(&**inner, Expr::Lit(Lit::Int { suffix: None, .. }))
                }
                _ => false,
            };
            if prim.is_none() && untyped_receiver {
                return format!(
                    "std::cmp::{}({}, {})",
                    method.rust,
                    rust_expr(&args[0]),
                    rest.join(", ")
                );
            }
            match prim {
                Some(p) => format!(
                    "{}::{}({})",
                    p.rust_name(),
                    method.rust,
                    std::iter::once(rust_expr(&args[0]))
                        .chain(rest)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => format!(
                    "({}).{}({})",
                    rust_expr(&args[0]),
                    method.rust,
                    rest.join(", ")
                ),
            }
        }
        Expr::Const(p, c) => format!("{}::{}", p.rust_name(), c.rust_name()),
        Expr::If(c, t, f) => format!(
            "if {} {{ {} }} else {{ {} }}",
            rust_expr(c),
            rust_block(t),
            rust_block(f)
        ),
        Expr::Match(s, arms) => {
            let arms: Vec<String> = arms
                .iter()
                .map(|(p, v)| format!("{} => {}", rust_pattern(p), rust_expr(v)))
                .collect();
            format!("match {} {{ {} }}", rust_expr(s), arms.join(", "))
        }
        Expr::Block(b) => format!("{{ {} }}", rust_block(b)),
        other => format!("{other:?}"),
    }
}

/// A block's statements and value as Rust source (without braces).
pub fn rust_block(b: &Block) -> String {
    let mut s = String::new();
    for (name, value) in &b.lets {
        match value {
            Expr::Typed(inner, p) => {
                s.push_str(&format!(
                    "let {name}: {} = {}; ",
                    p.rust_name(),
                    rust_expr(inner)
                ));
            }
            _ => s.push_str(&format!("let {name} = {}; ", rust_expr(value))),
        }
    }
    s + &rust_expr(&b.value)
}

fn rust_lit(l: &Lit, negative: bool) -> String {
    let sign = if negative { "-" } else { "" };
    match l {
        Lit::Int { value, suffix } => format!(
            "{sign}{value}{}",
            suffix.map(|p| p.rust_name()).unwrap_or("")
        ),
        Lit::Float {
            value,
            value_f32,
            suffix,
        } => match suffix {
            Some(Prim::F32) => format!("{sign}{value_f32:?}f32"),
            Some(p) => format!("{sign}{value:?}{}", p.rust_name()),
            None if (*value as f32) != *value_f32 => {
                // The literal as written had more digits than either value shows.
                format!("{sign}{value:?}/*f32: {value_f32:?}*/")
            }
            None => format!("{sign}{value:?}"),
        },
        Lit::Bool(b) => b.to_string(),
    }
}

fn rust_pattern(p: &Pattern) -> String {
    match p {
        Pattern::Wild => "_".into(),
        Pattern::Lit { lit, negative } => rust_lit(lit, *negative),
        Pattern::Range { lo, hi, inclusive } => format!(
            "{}{}{}",
            lo.as_deref().map(rust_expr).unwrap_or_default(),
            if *inclusive && hi.is_some() {
                "..="
            } else {
                ".."
            },
            hi.as_deref().map(rust_expr).unwrap_or_default()
        ),
        Pattern::Or(alts) => alts
            .iter()
            .map(rust_pattern)
            .collect::<Vec<_>>()
            .join(" | "),
    }
}
