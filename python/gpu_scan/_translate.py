"""Python functions to gpu-scan's operator IR text (``kernels_gen::ir_text``).

The translator reads a function's source with :mod:`ast` and writes the
IR's text; the types and Rust's arithmetic are the native half's
(``kernels_gen::eval``), the CUDA the generator's. What the subset accepts
is listed in ``OPERATOR_SUBSET`` (``gpu_scan.op``'s documentation); anything
else is an :class:`OperatorError` naming the function's file and line.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import math
import re
import struct
import textwrap
from typing import Callable, List, NamedTuple, Optional, Tuple

# Element types by their Rust names, with NumPy's names for them.
PRIMS = ("u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64", "bool")
NUMPY_NAMES = {
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "float32": "f32",
    "float64": "f64",
    "bool": "bool",
    "bool_": "bool",
}

# Calls of the subset: math functions and builtins to the IR's methods (the
# receiver first), with their argument counts.
MATH_METHODS = {
    "sqrt": ("sqrt", 1),
    "cbrt": ("cbrt", 1),
    "exp": ("exp", 1),
    "exp2": ("exp2", 1),
    "log": ("ln", 1),
    "log2": ("log2", 1),
    "log10": ("log10", 1),
    "sin": ("sin", 1),
    "cos": ("cos", 1),
    "tanh": ("tanh", 1),
    "floor": ("floor", 1),
    "ceil": ("ceil", 1),
    "trunc": ("trunc", 1),
    "fabs": ("abs", 1),
    "hypot": ("hypot", 2),
    "copysign": ("copysign", 2),
    "pow": ("powf", 2),
    "fma": ("mul_add", 3),
    "isnan": ("is_nan", 1),
    "isfinite": ("is_finite", 1),
    "isinf": ("is_infinite", 1),
}
BUILTIN_METHODS = {"min": ("min", 2), "max": ("max", 2), "abs": ("abs", 1)}

BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.BitAnd: "bitand",
    ast.BitOr: "bitor",
    ast.BitXor: "bitxor",
    ast.LShift: "shl",
    ast.RShift: "shr",
}
COMPARISONS = {
    ast.Eq: "eq",
    ast.NotEq: "ne",
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
}


class OperatorError(ValueError):
    """A function outside the operator subset, or one the types refuse.

    ``filename`` and ``lineno`` locate the offending code where the
    translator found it (``None`` for a type error found after
    translation, which names the operator instead).
    """

    def __init__(self, message: str, filename: Optional[str] = None, lineno: Optional[int] = None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        where = f"{filename}:{lineno}: " if filename is not None and lineno is not None else ""
        super().__init__(f"{where}{message}")


def prim_of(dtype) -> str:
    """The Rust name of an element type given by its Rust name, NumPy's name
    or a NumPy dtype (``"f32"``, ``"float32"``, ``numpy.float32``). A string
    is read as Rust spells types: ``"u8"`` is one byte (NumPy's ``"u8"`` is
    ``uint64``; pass ``numpy.uint64`` or ``"uint64"`` for that)."""
    name = getattr(dtype, "__name__", None) or str(getattr(dtype, "name", dtype))
    if name in PRIMS:
        return name
    if name in NUMPY_NAMES:
        return NUMPY_NAMES[name]
    raise TypeError(f"unsupported element type {dtype!r}: one of {', '.join(PRIMS)} (or NumPy's names)")


class StructSpec:
    """A struct element: fields in order, each a primitive, an array of a
    primitive or a nested struct; laid out as C lays it out (NumPy's
    ``align=True``, Rust's ``repr(C)``)."""

    def __init__(self, fields: List[Tuple[str, tuple]]):
        self.fields = fields
        text = repr([(name, kind if kind[0] != "struct" else ("struct", kind[1].name)) for name, kind in fields])
        self.name = "py_struct_" + hashlib.sha256(text.encode()).hexdigest()[:12]

    def declaration(self) -> str:
        """Its ``(struct_decl …)`` text (``kernels_gen::ir_text``)."""
        parts = []
        for name, kind in self.fields:
            if kind[0] == "prim":
                ty = f"(prim {kind[1]})"
            elif kind[0] == "array":
                ty = f"(array {kind[1]} {kind[2]})"
            else:
                ty = f"(struct {quoted(kind[1].name)})"
            parts.append(f"(field {quoted(name)} {ty})")
        return f"(struct_decl {quoted(self.name)} {' '.join(parts)})"

    def declarations(self) -> List[str]:
        """Its nested structs' declarations, then its own."""
        out: List[str] = []
        for _, kind in self.fields:
            if kind[0] == "struct":
                out += [d for d in kind[1].declarations() if d not in out]
        return out + [self.declaration()]

    def prims(self) -> List[str]:
        """The primitive types of its leaves."""
        out: List[str] = []
        for _, kind in self.fields:
            out += kind[1].prims() if kind[0] == "struct" else [kind[1]]
        return out

    def numpy_dtype(self):
        import numpy as np

        fields = []
        for name, kind in self.fields:
            if kind[0] == "prim":
                fields.append((name, NUMPY_OF[kind[1]]))
            elif kind[0] == "array":
                fields.append((name, NUMPY_OF[kind[1]], (kind[2],)))
            else:
                fields.append((name, kind[1].numpy_dtype()))
        return np.dtype(fields, align=True)


NUMPY_OF = {
    "u8": "u1",
    "u16": "<u2",
    "u32": "<u4",
    "u64": "<u8",
    "i8": "i1",
    "i16": "<i2",
    "i32": "<i4",
    "i64": "<i8",
    "f32": "<f4",
    "f64": "<f8",
    "bool": "?",
}


def element_of(dtype):
    """An element type: a primitive's Rust name (:func:`prim_of`), or a
    :class:`StructSpec` for a NumPy structured dtype or a dict of fields
    (``{"a": "f32", "m": ("u32", 4), "inner": {...}}``)."""
    import numpy as np

    if isinstance(dtype, dict):
        fields = []
        for name, kind in dtype.items():
            if isinstance(kind, tuple) and len(kind) == 2 and isinstance(kind[1], int):
                fields.append((name, ("array", prim_of(kind[0]), kind[1])))
            elif isinstance(kind, dict) or (isinstance(kind, np.dtype) and kind.names):
                fields.append((name, ("struct", element_of(kind))))
            else:
                fields.append((name, ("prim", prim_of(kind))))
        if not fields:
            raise TypeError("a struct element needs at least one field")
        return StructSpec(fields)
    if isinstance(dtype, np.dtype) and dtype.names:
        fields = {}
        for name in dtype.names:
            field = dtype.fields[name][0]
            if field.subdtype is not None:
                base, shape = field.subdtype
                if len(shape) != 1:
                    raise TypeError(f"field `{name}`: arrays of one dimension only, not {shape}")
                fields[name] = (base, shape[0])
            elif field.names:
                fields[name] = field
            else:
                fields[name] = field
        return element_of(fields)
    return prim_of(dtype)


def quoted(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def float_literal(value: float) -> str:
    """A non-negative finite float as the IR's literal: its f64 bits and its
    f32 bits (rounded from the f64, as NumPy's ``float32(value)`` does)."""
    f64 = struct.unpack("<Q", struct.pack("<d", value))[0]
    try:
        f32 = struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:
        f32 = 0x7F800000  # past f32's range: infinity, as a cast gives
    return f"(float 0x{f64:016x} 0x{f32:08x} -)"


def value_literal(value, prim) -> str:
    """A Python value as an expression of the element type (the identity):
    a number, or for a struct a tuple (fields in order), a dict or a NumPy
    record."""
    if isinstance(prim, StructSpec):
        return struct_literal(value, prim, True)
    if prim == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"the identity of a bool operator is True or False, not {value!r}")
        return f"(bool {'true' if value else 'false'})"
    if isinstance(value, bool):
        raise TypeError(f"the identity of a {prim} operator is a number, not {value!r}")
    if prim in ("f32", "f64"):
        value = float(value)
        if math.isnan(value):
            return f"(const {prim} NAN)"
        if math.isinf(value):
            return f"(const {prim} {'INFINITY' if value > 0 else 'NEG_INFINITY'})"
        lit = float_literal(abs(value))
        return f"(neg {lit})" if math.copysign(1.0, value) < 0 else lit
    if not isinstance(value, int):
        raise TypeError(f"the identity of a {prim} operator is an integer, not {value!r}")
    lit = f"(int {abs(value)} -)"
    return f"(neg {lit})" if value < 0 else lit


def struct_literal(value, spec: "StructSpec", element: bool) -> str:
    """A value of struct ``spec`` as a struct literal (of the element:
    ``self``)."""
    if hasattr(value, "item") and not isinstance(value, (int, float, bool)):
        value = value.item()  # a NumPy record: a tuple
    if isinstance(value, dict):
        missing = [name for name, _ in spec.fields if name not in value]
        if missing or len(value) != len(spec.fields):
            raise TypeError(f"a value of the struct needs exactly the fields {[n for n, _ in spec.fields]}")
        value = tuple(value[name] for name, _ in spec.fields)
    if not isinstance(value, (tuple, list)) or len(value) != len(spec.fields):
        raise TypeError(f"a value of the struct is a tuple of its {len(spec.fields)} fields, not {value!r}")
    sets = []
    for (name, kind), v in zip(spec.fields, value):
        if kind[0] == "prim":
            text = value_literal(v, kind[1])
        elif kind[0] == "array":
            if len(v) != kind[2]:
                raise TypeError(f"field `{name}` holds {kind[2]} values, not {len(v)}")
            text = "(array " + " ".join(value_literal(x, kind[1]) for x in v) + ")"
        else:
            text = struct_literal(v, kind[1], False)
        sets.append(f"(set {quoted(name)} {text})")
    return f"(struct_lit {'self' if element else quoted(spec.name)} {' '.join(sets)})"


class _Translator:
    def __init__(self, element, params: Tuple[str, str], filename: str, first_line: int):
        self.element = element
        # Whether the function returns an element (an operator) or a
        # primitive (a predicate's or an equality's bool).
        self.returns_element = True
        # For a sort key of `components` components: the one translated
        # (each `return` of a tuple gives its element of that index).
        self.component: Optional[Tuple[int, int]] = None
        # The type that decides what `/`, `//`, `%` and `math.inf` mean: the
        # element's, or a struct's leaves' where they all have one kind.
        prims = element.prims() if isinstance(element, StructSpec) else [element]
        if all(p in ("f32", "f64") for p in prims):
            self.prim = prims[0] if len(set(prims)) == 1 else "f64"
            self.floats = True
        else:
            self.prim = prims[0] if len(set(prims)) == 1 else "mixed"
            self.floats = False
        self.unsigned = all(p.startswith("u") for p in prims)
        self.params = params
        self.filename = filename
        self.first_line = first_line
        self.names = set(params)

    def line(self, node: ast.AST) -> int:
        """The file's line of ``node``."""
        return getattr(node, "lineno", 1) + self.first_line - 1

    def error(self, node: ast.AST, message: str) -> OperatorError:
        return OperatorError(message, self.filename, self.line(node))

    def at(self, node: ast.AST, text: str) -> str:
        """``text`` as a statement written at ``node``'s line, so that the
        native checker's errors name the line."""
        return f"(at {self.line(node)} {text})"

    # Statements: `name = value` bindings, then `return value`; an `if`
    # whose branch returns takes the statements after it as its `else`.
    def block(self, stmts: List[ast.stmt], node: ast.AST) -> str:
        lets = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                continue  # a docstring
            if isinstance(stmt, ast.Assign):
                if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
                    raise self.error(stmt, "assign to one name at a time (`t = ...`)")
                lets.append(self.let(stmt.targets[0].id, self.expr(stmt.value), stmt))
            elif isinstance(stmt, ast.AnnAssign):
                if not isinstance(stmt.target, ast.Name) or stmt.value is None:
                    raise self.error(stmt, "annotate a name with its value (`t: f32 = ...`)")
                prim = self.type_name(stmt.annotation)
                lets.append(self.let(stmt.target.id, f"(typed {self.expr(stmt.value)} {prim})", stmt))
            elif isinstance(stmt, ast.AugAssign):
                if not isinstance(stmt.target, ast.Name) or stmt.target.id not in self.names:
                    raise self.error(stmt, "augmented assignment to a name bound before")
                value = self.binop(stmt.op, f'(var {quoted(stmt.target.id)})', self.expr(stmt.value), stmt)
                lets.append(self.let(stmt.target.id, value, stmt))
            elif isinstance(stmt, ast.Return):
                if stmt.value is None:
                    raise self.error(stmt, "return a value")
                if i != len(stmts) - 1:
                    raise self.error(stmts[i + 1], "code after `return` never runs")
                expected = self.element if self.returns_element and isinstance(self.element, StructSpec) else None
                value = stmt.value
                if self.component is not None:
                    index, count = self.component
                    if isinstance(value, ast.Tuple):
                        if len(value.elts) != count:
                            raise self.error(stmt, f"the key has {count} components, this tuple {len(value.elts)}")
                        value = value.elts[index]
                    elif count > 1:
                        raise self.error(stmt, f"return a tuple of the key's {count} components")
                return self.wrap(lets, self.at(stmt, self.expr(value, expected)))
            elif isinstance(stmt, ast.If):
                if not self.returns(stmt.body):
                    raise self.error(stmt, "each branch of an `if` statement ends in `return`")
                then = self.block(stmt.body, stmt)
                rest = stmt.orelse + stmts[i + 1:]
                if not rest:
                    raise self.error(stmt, "an `if` without `else` needs a `return` after it")
                otherwise = self.block(rest, stmt)
                return self.wrap(lets, self.at(stmt, f"(if {self.expr(stmt.test)} {then} {otherwise})"))
            else:
                raise self.error(stmt, f"`{type(stmt).__name__}` statements are outside the operator subset")
        raise self.error(node, "the function must end in `return`")

    @staticmethod
    def returns(stmts: List[ast.stmt]) -> bool:
        last = stmts[-1]
        return isinstance(last, ast.Return) or (
            isinstance(last, ast.If) and _Translator.returns(last.body) and bool(last.orelse) and _Translator.returns(last.orelse)
        )

    def let(self, name: str, value: str, node: ast.AST) -> str:
        self.names.add(name)
        return self.at(node, f"(let {quoted(name)} {value})")

    @staticmethod
    def wrap(lets: List[str], value: str) -> str:
        return f"(block {' '.join(lets + [value])})"

    def type_name(self, node: ast.AST) -> str:
        name = None
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy"):
            name = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        if name in PRIMS:
            return name
        if name in NUMPY_NAMES:
            return NUMPY_NAMES[name]
        raise self.error(node, f"not an element type of the subset: one of {', '.join(PRIMS)} (or numpy's names)")

    def binop(self, op: ast.operator, left: str, right: str, node: ast.AST) -> str:
        if type(op) in BINOPS:
            return f"({BINOPS[type(op)]} {left} {right})"
        floats = self.floats
        unsigned = self.unsigned
        if isinstance(op, ast.Div):
            if not floats:
                raise self.error(node, "`/` on integers is true division in Python: the subset takes it on float elements (every field a float) only; use `//` on unsigned integers")
            return f"(div {left} {right})"
        if isinstance(op, ast.FloorDiv):
            if not unsigned:
                raise self.error(node, "`//` floors in Python but truncates in Rust and CUDA: the subset takes it on unsigned integers only (every field unsigned)")
            return f"(div {left} {right})"
        if isinstance(op, ast.Mod):
            if not unsigned:
                raise self.error(node, "`%` takes the divisor's sign in Python but the dividend's in Rust and CUDA: the subset takes it on unsigned integers only")
            return f"(rem {left} {right})"
        if isinstance(op, ast.Pow):
            raise self.error(node, "`**` is outside the subset: write `x * x`, or `math.pow(x, y)` on floats")
        raise self.error(node, f"`{type(op).__name__}` is outside the operator subset")

    def call(self, node: ast.Call) -> str:
        if node.keywords:
            raise self.error(node, "keyword arguments are outside the operator subset")
        func = node.func
        args = [self.expr(a) for a in node.args]
        # Casts: np.float32(x), numpy.int64(x), f32(x).
        cast_to = None
        if isinstance(func, ast.Name) and func.id in PRIMS and func.id not in self.names:
            cast_to = func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("np", "numpy"):
            if func.attr in NUMPY_NAMES:
                cast_to = NUMPY_NAMES[func.attr]
        if cast_to is not None:
            if len(args) != 1:
                raise self.error(node, "a cast takes one value")
            return f"(cast {args[0]} {cast_to})"
        table, name = None, None
        if isinstance(func, ast.Name) and func.id in BUILTIN_METHODS:
            table, name = BUILTIN_METHODS, func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "math":
            table, name = MATH_METHODS, func.attr
        if table is None or name not in table:
            raise self.error(node, f"`{ast.unparse(func)}` is not a function of the operator subset")
        method, count = table[name]
        if len(args) != count:
            raise self.error(node, f"`{ast.unparse(func)}` takes {count} argument{'s' if count > 1 else ''} here")
        return f"(call {quoted(method)} - {' '.join(args)})"

    def constant(self, node: ast.AST) -> str:
        value = node.value
        if isinstance(value, bool):
            return f"(bool {'true' if value else 'false'})"
        if isinstance(value, int):
            return f"(int {value} -)"
        if isinstance(value, float):
            if math.isinf(value) or math.isnan(value):
                raise self.error(node, "write infinities and NaN as `math.inf` and `math.nan`")
            return float_literal(value)
        raise self.error(node, f"a {type(value).__name__} constant is outside the operator subset")

    def struct_value(self, node: ast.AST, spec: StructSpec, element: bool) -> str:
        """A tuple (fields in order) or a dict (by name) as a struct."""
        if isinstance(node, ast.Dict):
            names = []
            for key in node.keys:
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    raise self.error(node, "a struct's dict has its field names as keys")
                names.append(key.value)
            if sorted(names) != sorted(n for n, _ in spec.fields):
                raise self.error(node, f"the struct's fields are {[n for n, _ in spec.fields]}, not {names}")
            given = dict(zip(names, node.values))
            values = [given[name] for name, _ in spec.fields]
        else:
            if len(node.elts) != len(spec.fields):
                raise self.error(node, f"the struct has {len(spec.fields)} fields, the tuple {len(node.elts)} values")
            values = node.elts
        sets = []
        for (name, kind), value in zip(spec.fields, values):
            want = kind[1] if kind[0] == "struct" else kind if kind[0] == "array" else None
            sets.append(f"(set {quoted(name)} {self.expr(value, want)})")
        return f"(struct_lit {'self' if element else quoted(spec.name)} {' '.join(sets)})"

    def expr(self, node: ast.AST, expected=None) -> str:
        """``node`` as an IR expression; ``expected`` is the struct (or
        array field) a tuple, dict or list there builds."""
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                raise self.error(node, f"`{node.id}` is neither an operand nor a name bound before")
            return f"(var {quoted(node.id)})"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math":
            if self.prim not in ("f32", "f64"):
                raise self.error(node, f"`math.{node.attr}` needs a float element (every field of one float type)")
            consts = {"inf": "INFINITY", "nan": "NAN"}
            if node.attr not in consts:
                raise self.error(node, f"`math.{node.attr}` is outside the operator subset")
            return f"(const {self.prim} {consts[node.attr]})"
        if isinstance(node, ast.Attribute):
            return f"(field {self.expr(node.value)} {quoted(node.attr)})"
        if isinstance(node, ast.Subscript):
            index = node.slice
            if not (isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool) and index.value >= 0):
                raise self.error(node, "an array is indexed by a non-negative integer constant")
            return f"(index {self.expr(node.value)} {index.value})"
        if isinstance(node, (ast.Tuple, ast.Dict)):
            if not isinstance(expected, StructSpec):
                raise self.error(node, "a tuple or dict builds a struct where one is returned or is a struct's field")
            return self.struct_value(node, expected, expected is self.element)
        if isinstance(node, ast.List):
            if not (isinstance(expected, tuple) and expected[0] == "array"):
                raise self.error(node, "a list builds an array field")
            if len(node.elts) != expected[2]:
                raise self.error(node, f"the array holds {expected[2]} values, not {len(node.elts)}")
            return "(array " + " ".join(self.expr(e) for e in node.elts) + ")"
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)
        if isinstance(node, ast.UnaryOp):
            operand = self.expr(node.operand)
            if isinstance(node.op, ast.USub):
                return f"(neg {operand})"
            if isinstance(node.op, ast.Not):
                # `not` is logical in Python, where Rust's `!` on an integer
                # is bitwise: written as `== false`, an integer operand is a
                # type error instead of another answer.
                return f"(eq {operand} (bool false))"
            if isinstance(node.op, ast.Invert):
                return f"(not {operand})"
            return operand  # unary +
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            values = [self.expr(v) for v in node.values]
            out = values[0]
            for v in values[1:]:
                out = f"({op} {out} {v})"
            return out
        if isinstance(node, ast.Compare):
            parts = []
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                if type(op) not in COMPARISONS:
                    raise self.error(node, f"`{type(op).__name__}` comparisons are outside the operator subset")
                parts.append(f"({COMPARISONS[type(op)]} {self.expr(left)} {self.expr(right)})")
                left = right
            out = parts[0]
            for p in parts[1:]:
                out = f"(and {out} {p})"
            return out
        if isinstance(node, ast.IfExp):
            test = self.expr(node.test)
            then = self.at(node.body, self.expr(node.body, expected))
            otherwise = self.at(node.orelse, self.expr(node.orelse, expected))
            return f"(if {test} (block {then}) (block {otherwise}))"
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.error(node, f"`{type(node).__name__}` expressions are outside the operator subset")


class Translation(NamedTuple):
    """A function translated: the operator's IR text and name (the
    function's name and a hash of its text, so that two functions of one
    name are two programs), and where the function was written."""

    text: str
    name: str
    filename: str
    first_line: int


def operator_text(function: Callable, prim: str, identity, block_threads=None, items_per_thread=None) -> Translation:
    """The IR text of ``function`` as an operator over ``prim`` with
    ``identity`` (:class:`Translation`)."""
    identity_text = value_literal(identity, prim)
    fn, filename, first_line = _function_def(function, "an operator")
    args = fn.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults or len(args.args) != 2:
        raise OperatorError("an operator takes exactly two operands, `(x, y)` with x the earlier element", filename, first_line + fn.lineno - 1)
    params = (args.args[0].arg, args.args[1].arg)
    if params[0] == params[1]:
        raise OperatorError("the two operands need two names", filename, first_line + fn.lineno - 1)
    translator = _Translator(prim, params, filename, first_line)
    body = translator.block(fn.body, fn)
    shape = (
        f"(block_threads {'auto' if block_threads is None else int(block_threads)}) "
        f"(items_per_thread {'auto' if items_per_thread is None else int(items_per_thread)})"
    )
    element = f"(struct {quoted(prim.name)})" if isinstance(prim, StructSpec) else f"(prim {prim})"
    rest = f"{element} (params {quoted(params[0])} {quoted(params[1])}) (identity {identity_text}) (body {body}) {shape})"
    digest = hashlib.sha256(rest.encode()).hexdigest()[:12]
    stem = re.sub(r"[^a-z0-9_]", "_", fn.name.lower()).strip("_") or "op"
    name = f"py_{stem}_{digest}"
    return Translation(f"(op {quoted(name)} {rest}", name, filename, first_line)


def _function_def(function: Callable, what: str):
    """``function``'s definition, file and first line (``what`` it is, for
    the refusal of a lambda)."""
    try:
        source = inspect.getsource(function)
        filename = inspect.getsourcefile(function) or "<unknown>"
        first_line = inspect.getsourcelines(function)[1]
    except (OSError, TypeError) as e:
        raise OperatorError(f"the source of {function!r} is not available: {e}") from None
    tree = ast.parse(textwrap.dedent(source))
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not defs:
        raise OperatorError(f"{what} is a `def` function (not a lambda)", filename, first_line)
    return defs[0], filename, first_line


def stage_text(function: Callable, prim: str, kind: str) -> Translation:
    """The IR text of ``function`` as a stage (``kernels_gen::ir_text::
    print_stage``) of ``kind``: a ``"predicate"`` of one element of
    ``prim`` (a primitive's name or a :class:`StructSpec`) or an
    ``"equality"`` of two, giving a ``bool`` (:class:`Translation`)."""
    fn, filename, first_line = _function_def(function, f"a {kind}")
    args = fn.args
    arity = 2 if kind == "equality" else 1
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults or len(args.args) != arity:
        what = "two elements, `(a, b)` with a the earlier" if arity == 2 else "one element"
        raise OperatorError(f"a {kind} takes {what}", filename, first_line + fn.lineno - 1)
    params = tuple(a.arg for a in args.args)
    if len(set(params)) != len(params):
        raise OperatorError("the two elements need two names", filename, first_line + fn.lineno - 1)
    translator = _Translator(prim, params, filename, first_line)
    translator.returns_element = False
    body = translator.block(fn.body, fn)
    element = f"(struct {quoted(prim.name)})" if isinstance(prim, StructSpec) else f"(prim {prim})"
    rest = (
        f"{kind} (params {' '.join(quoted(p) for p in params)}) (input {element}) (output (prim bool)) "
        f"(body {body}))"
    )
    digest = hashlib.sha256(rest.encode()).hexdigest()[:12]
    stem = re.sub(r"[^a-z0-9_]", "_", fn.name.lower()).strip("_") or kind
    name = f"py_{stem}_{digest}"
    return Translation(f"(stage {quoted(name)} {rest}", name, filename, first_line)


def equal_text(prim: str) -> str:
    """The IR text of the equality ``a == b`` over ``prim`` (unique's and
    run-length encoding's default: a NaN equals nothing, ``-0.0`` equals
    ``0.0``, as ``==`` says)."""
    return (
        f'(stage "equal_{prim}" equality (params "a" "b") (input (prim {prim})) (output (prim bool)) '
        f'(body (block (eq (var "a") (var "b")))))'
    )


def sort_key_text(function: Callable, record, components: List[str]) -> Translation:
    """The IR text of ``function`` as a sort key (``kernels_gen::ir_text::
    print_sort_key``) of a record of ``record`` (a primitive's name or a
    :class:`StructSpec`) giving ``components`` (primitives' names, most
    significant first): the function's ``return`` gives a tuple of them,
    or one value for one component (:class:`Translation`)."""
    fn, filename, first_line = _function_def(function, "a sort key")
    args = fn.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults or len(args.args) != 1:
        raise OperatorError("a sort key takes one record", filename, first_line + fn.lineno - 1)
    param = args.args[0].arg
    parts = []
    for i, prim in enumerate(components):
        translator = _Translator(record, (param,), filename, first_line)
        translator.returns_element = False
        translator.component = (i, len(components))
        parts.append(f"(component {prim} {translator.block(fn.body, fn)})")
    element = f"(struct {quoted(record.name)})" if isinstance(record, StructSpec) else f"(prim {record})"
    rest = f"(param {quoted(param)}) (record {element}) {' '.join(parts)})"
    digest = hashlib.sha256(rest.encode()).hexdigest()[:12]
    stem = re.sub(r"[^a-z0-9_]", "_", fn.name.lower()).strip("_") or "key"
    name = f"py_{stem}_{digest}"
    return Translation(f"(sort_key {quoted(name)} {rest}", name, filename, first_line)
