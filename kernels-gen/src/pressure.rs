//! How many of an operator's `let` values are alive at once: its
//! temporaries, which a kernel's thread holds in registers beside its tile's
//! items. The launch bounds' register budget ([`crate::layout::Tuned`]) adds
//! them, so that an operator with long error-free transformations (a
//! compensated `f64` sum holds six `f64` temporaries) is not squeezed into
//! the registers of a plain sum and spilled.
//!
//! A `let` is alive from its definition to its last use (a use after a
//! binding of the same name belongs to that binding); a nested block or
//! branch adds its own peak at the point it is evaluated. Operands are not
//! counted: the tile holds them anyway; nor are lets that name a place or a
//! constant (`let a = x.a;` prints as a reference, `let k = 3;` as a
//! constant). Each let counts as one scalar: a struct-valued one takes
//! more registers than that (not yet weighed).

use crate::ir::{Block, Expr};

/// The most `let` values of `body` alive at any point of its evaluation.
///
/// ```
/// use kernels_gen::ir::{BinOp, Block, Expr};
/// use kernels_gen::pressure::peak_live_lets;
///
/// let var = |v: &str| Expr::Var(v.into());
/// let add = |a, b| Expr::Binary(BinOp::Add, Box::new(a), Box::new(b));
/// // { let s = x + y; let t = s + x; t + s }: s and t alive together.
/// let body = Block {
///     lets: vec![("s".into(), add(var("x"), var("y"))), ("t".into(), add(var("s"), var("x")))],
///     value: add(var("t"), var("s")),
/// };
/// assert_eq!(peak_live_lets(&body), 2);
/// ```
pub fn peak_live_lets(body: &Block) -> usize {
    let n = body.lets.len();
    // The evaluation points: each let's value, then the block's value.
    let point = |j: usize| -> &Expr {
        if j < n {
            &body.lets[j].1
        } else {
            &body.value
        }
    };
    // The last point that reads let i (i itself when nothing does).
    let last_use: Vec<usize> = (0..n)
        .map(|i| {
            let name = &body.lets[i].0;
            let mut last = i;
            for j in i + 1..=n {
                if mentions(point(j), name) {
                    last = j;
                }
                // A later binding of the name hides this one from the
                // points after it (its own value may still read this one).
                if j < n && &body.lets[j].0 == name {
                    break;
                }
            }
            last
        })
        .collect();
    let costs: Vec<bool> = body.lets.iter().map(|(_, e)| takes_a_register(e)).collect();
    (0..=n)
        .map(|j| {
            let alive = (0..n.min(j + 1))
                .filter(|&i| costs[i] && last_use[i] >= j)
                .count();
            alive + nested_peak(point(j))
        })
        .max()
        .unwrap_or(0)
}

/// Whether a let of value `e` holds a value of its own: not a place (a
/// variable, a field or element of one: a reference in CUDA) nor a
/// constant.
fn takes_a_register(e: &Expr) -> bool {
    match e {
        Expr::Var(_) | Expr::Lit(_) | Expr::Const(..) => false,
        Expr::Field(base, _) | Expr::Index(base, _) => takes_a_register(base),
        Expr::Typed(inner, _) | Expr::TypedLike(inner, _) => takes_a_register(inner),
        Expr::Unary(crate::ir::UnOp::Neg, inner) => !matches!(**inner, Expr::Lit(_)),
        _ => true,
    }
}

/// The largest peak of the blocks nested in `e` (branches, block
/// expressions), evaluated one at a time.
fn nested_peak(e: &Expr) -> usize {
    match e {
        Expr::If(cond, then, otherwise) => nested_peak(cond)
            .max(peak_live_lets(then))
            .max(peak_live_lets(otherwise)),
        Expr::Block(b) => peak_live_lets(b),
        _ => children(e).into_iter().map(nested_peak).max().unwrap_or(0),
    }
}

/// Whether `e` reads variable `name` anywhere (a shadowing binding inside
/// is not told apart: at worst a value counts as alive a little longer).
fn mentions(e: &Expr, name: &str) -> bool {
    match e {
        Expr::Var(v) => v == name,
        Expr::If(cond, then, otherwise) => {
            mentions(cond, name) || block_mentions(then, name) || block_mentions(otherwise, name)
        }
        Expr::Block(b) => block_mentions(b, name),
        _ => children(e).into_iter().any(|c| mentions(c, name)),
    }
}

fn block_mentions(b: &Block, name: &str) -> bool {
    b.lets.iter().any(|(_, v)| mentions(v, name)) || mentions(&b.value, name)
}

/// The direct sub-expressions of `e` outside blocks (which the callers
/// handle: `If` and `Block`).
fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Lit(_) | Expr::Var(_) | Expr::Const(..) | Expr::If(..) | Expr::Block(_) => vec![],
        Expr::Field(e, _)
        | Expr::Index(e, _)
        | Expr::Unary(_, e)
        | Expr::Cast(e, _)
        | Expr::Typed(e, _)
        | Expr::Repeat(e, _) => vec![e],
        Expr::TypedLike(a, b) | Expr::Binary(_, a, b) => vec![a, b],
        Expr::Call { args, .. } => args.iter().collect(),
        Expr::Array(items) => items.iter().collect(),
        Expr::Match(s, arms) => std::iter::once(&**s)
            .chain(arms.iter().map(|(_, v)| v))
            .collect(),
        Expr::Struct { fields, base, .. } => fields
            .iter()
            .map(|(_, v)| v)
            .chain(base.iter().map(|b| &**b))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::BinOp;

    fn var(v: &str) -> Expr {
        Expr::Var(v.into())
    }
    fn add(a: Expr, b: Expr) -> Expr {
        Expr::Binary(BinOp::Add, Box::new(a), Box::new(b))
    }
    fn block(lets: &[(&str, Expr)], value: Expr) -> Block {
        Block {
            lets: lets
                .iter()
                .map(|(n, e)| (n.to_string(), e.clone()))
                .collect(),
            value,
        }
    }

    #[test]
    fn places_and_constants_take_no_register() {
        // let a = x.f; let k = 3; let s = a + y; s + k: only s is a value.
        let body = block(
            &[
                ("a", Expr::Field(Box::new(var("x")), "f".into())),
                (
                    "k",
                    Expr::Lit(crate::ir::Lit::Int {
                        value: 3,
                        suffix: None,
                    }),
                ),
                ("s", add(var("a"), var("y"))),
            ],
            add(var("s"), var("k")),
        );
        assert_eq!(peak_live_lets(&body), 1);
    }

    #[test]
    fn no_lets_no_temporaries() {
        assert_eq!(peak_live_lets(&block(&[], add(var("x"), var("y")))), 0);
    }

    #[test]
    fn a_chain_keeps_one_value_alive() {
        // let a = x + y; let b = a + x; let c = b + y; c
        let body = block(
            &[
                ("a", add(var("x"), var("y"))),
                ("b", add(var("a"), var("x"))),
                ("c", add(var("b"), var("y"))),
            ],
            var("c"),
        );
        // At b's definition a is read and b made: two, then one at a time.
        assert_eq!(peak_live_lets(&body), 2);
    }

    #[test]
    fn values_read_at_the_end_stay_alive() {
        // let a = x + y; let b = y + y; let c = x + x; a + b + c
        let body = block(
            &[
                ("a", add(var("x"), var("y"))),
                ("b", add(var("y"), var("y"))),
                ("c", add(var("x"), var("x"))),
            ],
            add(add(var("a"), var("b")), var("c")),
        );
        assert_eq!(peak_live_lets(&body), 3);
    }

    #[test]
    fn a_shadowing_binding_ends_the_first() {
        // let a = x + y; let a = a + y; let b = x + x; a + b: the first a
        // dies at the second's definition.
        let body = block(
            &[
                ("a", add(var("x"), var("y"))),
                ("a", add(var("a"), var("y"))),
                ("b", add(var("x"), var("x"))),
            ],
            add(var("a"), var("b")),
        );
        assert_eq!(peak_live_lets(&body), 2);
    }

    #[test]
    fn nested_blocks_add_their_peak_where_they_run() {
        // let a = x + y;
        // if a { let p = y + y; let q = p + y; q + p } else { y } + a
        let inner = block(
            &[
                ("p", add(var("y"), var("y"))),
                ("q", add(var("p"), var("y"))),
            ],
            add(var("q"), var("p")),
        );
        let body = block(
            &[("a", add(var("x"), var("y")))],
            add(
                Expr::If(
                    Box::new(var("a")),
                    Box::new(inner),
                    Box::new(block(&[], var("y"))),
                ),
                var("a"),
            ),
        );
        assert_eq!(peak_live_lets(&body), 3);
    }
}
