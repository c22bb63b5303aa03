//! The operator IR: what `#[scan_op]` hands to the CUDA printer.
//!
//! The IR is deliberately *untyped* beyond what the source text says. A
//! procedural macro sees one item at a time, so it cannot know the fields of
//! an element struct annotated elsewhere. Everything type-dependent (Rust's
//! overflow rules, literal typing, NaN rules) is therefore resolved by C++
//! overloads in the prelude, and untyped literals borrow the type of a typed
//! sibling through `scan_like` (see [`crate::expr`]).

/// A primitive scalar type that has an exact CUDA counterpart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// `u8` ↔ `unsigned char`
    U8,
    /// `u16` ↔ `unsigned short`
    U16,
    /// `u32` ↔ `unsigned int`
    U32,
    /// `u64` ↔ `unsigned long long`
    U64,
    /// `i8` ↔ `signed char`
    I8,
    /// `i16` ↔ `short`
    I16,
    /// `i32` ↔ `int`
    I32,
    /// `i64` ↔ `long long`
    I64,
    /// `f32` ↔ `float`
    F32,
    /// `f64` ↔ `double`
    F64,
    /// `bool` ↔ `bool`
    Bool,
}

impl Prim {
    /// Every primitive, in declaration order.
    pub const ALL: [Prim; 11] = [
        Prim::U8,
        Prim::U16,
        Prim::U32,
        Prim::U64,
        Prim::I8,
        Prim::I16,
        Prim::I32,
        Prim::I64,
        Prim::F32,
        Prim::F64,
        Prim::Bool,
    ];

    /// Parses a Rust primitive type name (`"u32"`, `"f64"`, …).
    pub fn from_rust_name(name: &str) -> Option<Prim> {
        Prim::ALL.into_iter().find(|p| p.rust_name() == name)
    }

    /// The Rust spelling.
    pub fn rust_name(self) -> &'static str {
        match self {
            Prim::U8 => "u8",
            Prim::U16 => "u16",
            Prim::U32 => "u32",
            Prim::U64 => "u64",
            Prim::I8 => "i8",
            Prim::I16 => "i16",
            Prim::I32 => "i32",
            Prim::I64 => "i64",
            Prim::F32 => "f32",
            Prim::F64 => "f64",
            Prim::Bool => "bool",
        }
    }

    /// The CUDA C spelling (no headers needed).
    pub fn cuda_name(self) -> &'static str {
        match self {
            Prim::U8 => "unsigned char",
            Prim::U16 => "unsigned short",
            Prim::U32 => "unsigned int",
            Prim::U64 => "unsigned long long",
            Prim::I8 => "signed char",
            Prim::I16 => "short",
            Prim::I32 => "int",
            Prim::I64 => "long long",
            Prim::F32 => "float",
            Prim::F64 => "double",
            Prim::Bool => "bool",
        }
    }

    /// Size in bytes (identical in Rust and CUDA).
    pub fn size(self) -> usize {
        match self {
            Prim::U8 | Prim::I8 | Prim::Bool => 1,
            Prim::U16 | Prim::I16 => 2,
            Prim::U32 | Prim::I32 | Prim::F32 => 4,
            Prim::U64 | Prim::I64 | Prim::F64 => 8,
        }
    }

    /// The 32-bit registers a value of this type takes in a kernel once
    /// the compiler has split an element into its fields: one for every
    /// type of up to 4 bytes (a byte too), two for 8-byte ones. Summed over
    /// an element's fields, it decides how the kernels hold the element
    /// ([`crate::packed_element`]).
    pub const fn registers(self) -> usize {
        match self {
            Prim::U64 | Prim::I64 | Prim::F64 => 2,
            _ => 1,
        }
    }

    /// `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, Prim::F32 | Prim::F64)
    }

    /// Any integer type (not `bool`).
    pub fn is_integer(self) -> bool {
        !self.is_float() && self != Prim::Bool
    }

    /// A signed integer type.
    pub fn is_signed_integer(self) -> bool {
        matches!(self, Prim::I8 | Prim::I16 | Prim::I32 | Prim::I64)
    }
}

/// The type of one field of an element struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// A primitive.
    Prim(Prim),
    /// A fixed-size array of a primitive, e.g. `[f32; 4]`.
    Array(Prim, usize),
    /// Another annotated struct, by its CUDA (= Rust) name.
    Struct(String),
}

/// One field of an element struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDesc {
    /// Field name (same in Rust and CUDA).
    pub name: String,
    /// Field type.
    pub ty: FieldType,
}

/// A `#[repr(C)]` element struct, field by field in declaration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructDesc {
    /// Struct name (same in Rust and CUDA).
    pub name: String,
    /// Fields in declaration order (the order fixes the `repr(C)` layout).
    pub fields: Vec<FieldDesc>,
}

impl FieldType {
    /// The registers a value of this field takes ([`Prim::registers`] for
    /// each of its scalars), or `None` for a nested struct, whose count
    /// its own `ScanElement::REGISTERS` holds.
    pub fn registers(&self) -> Option<usize> {
        match self {
            FieldType::Prim(p) => Some(p.registers()),
            FieldType::Array(p, n) => Some(p.registers() * n),
            FieldType::Struct(_) => None,
        }
    }
}

/// A literal as written in the source.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// An integer literal; `suffix` is `Some` when written (`3u8`).
    Int {
        /// The magnitude (a leading `-` is a separate [`UnOp::Neg`]).
        value: u128,
        /// The written suffix, if any.
        suffix: Option<Prim>,
    },
    /// A float literal; `suffix` is `Some` when written (`0.5f32`).
    Float {
        /// The value parsed as `f64` (exact for `f64` literals).
        value: f64,
        /// The value parsed directly as `f32` (no double rounding).
        value_f32: f32,
        /// The written suffix, if any.
        suffix: Option<Prim>,
    },
    /// `true` or `false`.
    Bool(bool),
}

/// A unary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`: wrapping negation for integers, IEEE negation for floats.
    Neg,
    /// `!x`: logical not for `bool`, bitwise not for integers.
    Not,
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+` (wrapping on integers)
    Add,
    /// `-` (wrapping on integers)
    Sub,
    /// `*` (wrapping on integers)
    Mul,
    /// `/` (integers: `x / 0 == 0`, `MIN / -1 == MIN`)
    Div,
    /// `%` (integers: `x % 0 == 0`, `MIN % -1 == 0`; floats: `fmod`)
    Rem,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<` (shift amount taken modulo the bit width)
    Shl,
    /// `>>` (arithmetic for signed; amount modulo the bit width)
    Shr,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl BinOp {
    /// Every binary operator, in declaration order.
    pub const ALL: [BinOp; 18] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::BitAnd,
        BinOp::BitOr,
        BinOp::BitXor,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::And,
        BinOp::Or,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
    ];

    /// Comparisons and logical operators: printed as C++ infix operators.
    pub fn is_infix_in_cuda(self) -> bool {
        matches!(
            self,
            BinOp::And
                | BinOp::Or
                | BinOp::Eq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
        )
    }

    /// Shifts: the right operand may have any integer type.
    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }
}

/// How the arguments of a numeric method relate to its receiver's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// Same type as the receiver (`a.max(b)`).
    SameAsReceiver,
    /// Always `i32` (`powi`).
    I32,
    /// Always `u32` (`wrapping_shl`, `rotate_left`).
    U32,
}

/// A numeric method the translator knows: Rust name, CUDA helper and signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Method {
    /// The Rust method name (`"mul_add"`).
    pub rust: &'static str,
    /// The prelude helper that implements it (`"scan_mul_add"`).
    pub cuda: &'static str,
    /// Argument types after the receiver.
    pub args: &'static [ArgKind],
    /// Which receiver types Rust accepts it on (for the documentation).
    pub on: MethodReceivers,
}

/// Receivers a [`Method`] applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodReceivers {
    /// Integers and floats.
    Numbers,
    /// Integers only.
    Integers,
    /// Floats only.
    Floats,
}

use ArgKind::{SameAsReceiver as Same, I32, U32};
use MethodReceivers::{Floats, Integers, Numbers};

macro_rules! methods {
    ($($rust:literal => $cuda:literal ($($arg:expr),*) on $on:expr;)*) => {
        /// Every method an operator body may call, with its CUDA helper.
        pub const METHODS: &[Method] = &[
            $(Method { rust: $rust, cuda: $cuda, args: &[$($arg),*], on: $on },)*
        ];
    };
}

methods! {
    "min" => "scan_min" (Same) on Numbers;
    "max" => "scan_max" (Same) on Numbers;
    "abs" => "scan_abs" () on Numbers;
    "wrapping_add" => "scan_add" (Same) on Integers;
    "wrapping_sub" => "scan_sub" (Same) on Integers;
    "wrapping_mul" => "scan_mul" (Same) on Integers;
    "wrapping_neg" => "scan_neg" () on Integers;
    "wrapping_shl" => "scan_shl" (U32) on Integers;
    "wrapping_shr" => "scan_shr" (U32) on Integers;
    "wrapping_abs" => "scan_abs" () on Integers;
    "saturating_add" => "scan_saturating_add" (Same) on Integers;
    "saturating_sub" => "scan_saturating_sub" (Same) on Integers;
    "saturating_mul" => "scan_saturating_mul" (Same) on Integers;
    "rotate_left" => "scan_rotate_left" (U32) on Integers;
    "rotate_right" => "scan_rotate_right" (U32) on Integers;
    "count_ones" => "scan_count_ones" () on Integers;
    "leading_zeros" => "scan_leading_zeros" () on Integers;
    "trailing_zeros" => "scan_trailing_zeros" () on Integers;
    "mul_add" => "scan_mul_add" (Same, Same) on Floats;
    "sqrt" => "scan_sqrt" () on Floats;
    "cbrt" => "scan_cbrt" () on Floats;
    "exp" => "scan_exp" () on Floats;
    "exp2" => "scan_exp2" () on Floats;
    "ln" => "scan_ln" () on Floats;
    "log2" => "scan_log2" () on Floats;
    "log10" => "scan_log10" () on Floats;
    "sin" => "scan_sin" () on Floats;
    "cos" => "scan_cos" () on Floats;
    "tanh" => "scan_tanh" () on Floats;
    "floor" => "scan_floor" () on Floats;
    "ceil" => "scan_ceil" () on Floats;
    "round" => "scan_round" () on Floats;
    "trunc" => "scan_trunc" () on Floats;
    "powi" => "scan_powi" (I32) on Floats;
    "powf" => "scan_powf" (Same) on Floats;
    "hypot" => "scan_hypot" (Same) on Floats;
    "copysign" => "scan_copysign" (Same) on Floats;
    "is_nan" => "scan_is_nan" () on Floats;
    "is_finite" => "scan_is_finite" () on Floats;
    "is_infinite" => "scan_is_infinite" () on Floats;
}

/// Looks up a method by its Rust name.
pub fn method(rust_name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.rust == rust_name)
}

/// An associated constant of a primitive type (`f32::INFINITY`, `u32::MAX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrimConst {
    /// `MAX`
    Max,
    /// `MIN`
    Min,
    /// `BITS` (integers; a `u32`)
    Bits,
    /// `INFINITY`
    Infinity,
    /// `NEG_INFINITY`
    NegInfinity,
    /// `NAN` (the same bit pattern as Rust's)
    Nan,
    /// `EPSILON`
    Epsilon,
    /// `MIN_POSITIVE`
    MinPositive,
}

impl PrimConst {
    /// Every constant, in declaration order.
    pub const ALL: [PrimConst; 8] = [
        PrimConst::Max,
        PrimConst::Min,
        PrimConst::Bits,
        PrimConst::Infinity,
        PrimConst::NegInfinity,
        PrimConst::Nan,
        PrimConst::Epsilon,
        PrimConst::MinPositive,
    ];

    /// The Rust name (`"NEG_INFINITY"`).
    pub fn rust_name(self) -> &'static str {
        match self {
            PrimConst::Max => "MAX",
            PrimConst::Min => "MIN",
            PrimConst::Bits => "BITS",
            PrimConst::Infinity => "INFINITY",
            PrimConst::NegInfinity => "NEG_INFINITY",
            PrimConst::Nan => "NAN",
            PrimConst::Epsilon => "EPSILON",
            PrimConst::MinPositive => "MIN_POSITIVE",
        }
    }

    /// Parses the Rust constant name, checking it exists on `prim`.
    pub fn parse(prim: Prim, name: &str) -> Option<PrimConst> {
        let c = PrimConst::ALL.into_iter().find(|c| c.rust_name() == name)?;
        let ok = match c {
            PrimConst::Max | PrimConst::Min => prim != Prim::Bool,
            PrimConst::Bits => prim.is_integer(),
            _ => prim.is_float(),
        };
        ok.then_some(c)
    }
}

/// A pattern in a `match` arm (integers and `bool` only).
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// `_`
    Wild,
    /// A literal, possibly negative.
    Lit {
        /// The literal.
        lit: Lit,
        /// Whether a `-` precedes it.
        negative: bool,
    },
    /// `lo..=hi` or `lo..hi` (bounds are literal expressions).
    Range {
        /// Lower bound, inclusive (`None`: unbounded).
        lo: Option<Box<Expr>>,
        /// Upper bound (`None`: unbounded).
        hi: Option<Box<Expr>>,
        /// `..=` rather than `..`.
        inclusive: bool,
    },
    /// `a | b | …`
    Or(Vec<Pattern>),
}

/// Which struct a struct literal builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StructName {
    /// The operator's element type (`Self` or its own name).
    Element,
    /// Another annotated struct, by name.
    Named(String),
}

/// An expression of the operator subset.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal.
    Lit(Lit),
    /// A local binding or operator parameter.
    Var(String),
    /// `base.field`
    Field(Box<Expr>, String),
    /// `base[index]` with a constant index.
    Index(Box<Expr>, u64),
    /// A unary operator.
    Unary(UnOp, Box<Expr>),
    /// A binary operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `expr as prim`
    Cast(Box<Expr>, Prim),
    /// A value whose type the source states, as in `let k: u64 = 1 << 40;`:
    /// untyped literals inside take that type (Rust infers them from the
    /// annotation), so `1 << 40` is a `u64` shift here, not an `i32` one.
    Typed(Box<Expr>, Prim),
    /// A value (an unsuffixed literal) whose type is that of a place: a
    /// field of an operand whose type only the C++ compiler knows, as
    /// [`crate::infer`] found by unification (`x.n + k` with `let k = 3;`:
    /// `k` has the type of `x.n`).
    TypedLike(Box<Expr>, Box<Expr>),
    /// A numeric method: `args[0].method(args[1..])`, or `prim::method(args…)`
    /// when `prim` is `Some`.
    Call {
        /// The method.
        method: &'static Method,
        /// The receiver's type when spelled out (`f32::max(a, b)`).
        prim: Option<Prim>,
        /// Receiver first, then the arguments.
        args: Vec<Expr>,
    },
    /// `prim::CONST`
    Const(Prim, PrimConst),
    /// `if cond { then } else { otherwise }`
    If(Box<Expr>, Box<Block>, Box<Block>),
    /// `match scrutinee { pat => value, … }` (Rust checked exhaustiveness).
    Match(Box<Expr>, Vec<(Pattern, Expr)>),
    /// `{ let …; value }`
    Block(Box<Block>),
    /// `Name { field: value, …, ..base }`
    Struct {
        /// The struct built.
        name: StructName,
        /// Fields in written order.
        fields: Vec<(String, Expr)>,
        /// Functional update base (`..base`).
        base: Option<Box<Expr>>,
    },
    /// `[a, b, c]`
    Array(Vec<Expr>),
    /// `[value; count]`
    Repeat(Box<Expr>, u64),
}

/// `let` bindings followed by a value.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// `let name = value;` in order. Bindings are immutable.
    pub lets: Vec<(String, Expr)>,
    /// The block's value.
    pub value: Expr,
}

/// The element type as the printer names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElementType {
    /// A primitive element.
    Prim(Prim),
    /// An annotated struct, by name (its declaration is emitted separately).
    Struct(String),
}

impl ElementType {
    /// The CUDA spelling.
    pub fn cuda_name(&self) -> &str {
        match self {
            ElementType::Prim(p) => p.cuda_name(),
            ElementType::Struct(s) => s,
        }
    }
}

/// Everything the generator needs to know about one operator.
#[derive(Clone, Debug, PartialEq)]
pub struct OpDesc {
    /// The operator's name in snake case; prefixes every CUDA symbol.
    pub name: String,
    /// The element type.
    pub element: ElementType,
    /// The identity element.
    pub identity: Expr,
    /// The names of the two operands (`x` is the earlier element).
    pub params: [String; 2],
    /// The body computing `x ∘ y`.
    pub body: Block,
}
