"""The Python package on the CPU: operators written in Python, translated to
the operator IR, checked and evaluated by the native half, scanned by the
CPU backend's loop; every result against NumPy or a plain-Python
reference on fresh random inputs (the seed is printed; GPU_SCAN_PY_SEED
replays a run)."""

import doctest
import math
import os
import time

import numpy as np
import pytest

import gpu_scan
from gpu_scan import OperatorError

SEED = int(os.environ.get("GPU_SCAN_PY_SEED", time.time_ns() % (1 << 63)))
print(f"test_cpu seed: {SEED} (GPU_SCAN_PY_SEED={SEED} replays it)")
LENGTHS = [0, 1, 2, 31, 32, 33, 1000, 4097]
INTS = ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64"]


def rng(salt):
    return np.random.default_rng([SEED, salt])


NUMPY = {
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "f32": np.float32,
    "f64": np.float64,
}


def random_array(prim, n, r):
    """Random elements of the Rust type `prim` (not NumPy's `u8`, uint64)."""
    dtype = np.dtype(NUMPY[prim])
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        return r.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    return r.standard_normal(n).astype(dtype)


def reference(combine, identity, values, exclusive=False, reverse=False, init=None):
    """The scan's definition, in plain Python: the running partial joined
    `running ∘ x` forward and `x ∘ running` in reverse."""
    n = len(values)
    out = [None] * n
    running = init
    order = range(n - 1, -1, -1) if reverse else range(n)
    for i in order:
        x = values[i]
        nxt = x if running is None else (combine(x, running) if reverse else combine(running, x))
        out[i] = (identity if running is None else running) if exclusive else nxt
        running = nxt
    return out


@gpu_scan.op(dtype="i32", identity=-1)
def latest(x, y):
    """Keeps the right one: the latest element that is not -1."""
    return x if y == -1 else y


@gpu_scan.op(dtype="u64", identity=0)
def first(x, y):
    """Keeps the left one: the first element that is not 0."""
    return y if x == 0 else x


def test_module_doctests():
    failures, tests = doctest.testmod(gpu_scan)
    assert tests > 0 and failures == 0


def test_the_readmes_examples():
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    failures, tests = doctest.testfile(readme, module_relative=False)
    assert tests >= 5 and failures == 0


@pytest.mark.parametrize("prim", INTS)
def test_integer_sums_wrap_as_numpy(prim):
    r = rng(INTS.index(prim))
    for n in LENGTHS:
        a = random_array(prim, n, r)
        got = gpu_scan.cumsum(a)
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, np.cumsum(a, dtype=a.dtype), err_msg=f"{prim} n={n}")
    a = random_array(prim, 100, r)
    before = a.copy()
    gpu_scan.cumsum(a, exclusive=True)
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("prim", ["f32", "f64"])
def test_float_sums_are_numpys_sequential_sums(prim):
    # NumPy's cumsum adds in order in the array's dtype, as the scan's
    # sequential loop does, so the bits agree.
    r = rng(100 + len(prim))
    for n in LENGTHS:
        a = random_array(prim, n, r)
        np.testing.assert_array_equal(gpu_scan.cumsum(a), np.cumsum(a, dtype=a.dtype), err_msg=f"n={n}")


def test_kinds_and_directions_of_non_commutative_operators():
    r = rng(7)
    for op, values in [
        (latest, lambda n: np.where(r.random(n) < 0.7, -1, r.integers(0, 1000, n)).astype(np.int32)),
        (first, lambda n: np.where(r.random(n) < 0.7, 0, r.integers(1, 1 << 63, n)).astype(np.uint64)),
    ]:
        for n in LENGTHS:
            a = values(n)
            items = [int(v) for v in a]
            for exclusive in (False, True):
                for reverse in (False, True):
                    for init in (None, int(a[0]) if n else 5):
                        got = gpu_scan.scan(op, a, exclusive=exclusive, reverse=reverse, init=init)
                        want = reference(op.function, op.identity, items, exclusive, reverse, init)
                        assert [int(v) for v in got] == want, (op.name, n, exclusive, reverse, init)


def test_along_an_axis_as_numpy():
    r = rng(13)
    for shape in [(3, 5), (4, 1, 7), (0, 3), (2, 0), (6,), (1, 33)]:
        a = random_array("i64", int(np.prod(shape)), r).reshape(shape)
        for axis in [None] + list(range(-len(shape), len(shape))):
            np.testing.assert_array_equal(
                gpu_scan.cumsum(a, axis=axis), np.cumsum(a, axis=axis, dtype=a.dtype), err_msg=f"{shape} axis={axis}"
            )
    # A non-commutative operator along each axis, every kind: each line on
    # its own, from `init` each.
    a = np.where(r.random((4, 3, 5)) < 0.6, -1, r.integers(0, 100, (4, 3, 5))).astype(np.int32)
    for axis in range(3):
        for exclusive in (False, True):
            for reverse in (False, True):
                for init in (None, 7):
                    got = gpu_scan.scan(latest, a, axis=axis, exclusive=exclusive, reverse=reverse, init=init)
                    want = np.apply_along_axis(
                        lambda line: reference(latest.function, -1, [int(v) for v in line], exclusive, reverse, init), axis, a
                    )
                    np.testing.assert_array_equal(got, want, err_msg=f"axis={axis} {exclusive} {reverse} {init}")


def fold(combine, identity, values, init=None, reverse=False):
    """A segment's total: its elements folded in scan order from `init`
    (in front going forward, at the end in reverse)."""
    running = init
    for x in reversed(values) if reverse else values:
        running = x if running is None else (combine(x, running) if reverse else combine(running, x))
    return identity if running is None else running


def segmented_reference(combine, identity, values, starts, exclusive, reverse, init):
    """Each run from a start to the next scanned on its own."""
    out = []
    bounds = list(starts) + [len(values)]
    for a, b in zip(bounds, bounds[1:]):
        out += reference(combine, identity, values[a:b], exclusive, reverse, init)
    return out


def test_segments_by_flags_offsets_and_keys():
    r = rng(17)
    for n in LENGTHS:
        a = np.where(r.random(n) < 0.5, -1, r.integers(0, 100, n)).astype(np.int32)
        items = [int(v) for v in a]
        flags = r.random(n) < 0.2
        starts = [i for i in range(n) if i == 0 or flags[i]]
        offsets = np.sort(np.concatenate([[0], r.integers(0, n + 1, 4), [n]])).astype(np.int64)
        offset_starts = sorted({0} | {int(o) for o in offsets if o < n}) if n else []
        keys = np.cumsum(flags) * 3 - 7  # equal within a segment
        for exclusive in (False, True):
            for reverse in (False, True):
                for init in (None, 3):
                    args = dict(exclusive=exclusive, reverse=reverse, init=init)
                    want = segmented_reference(latest.function, -1, items, starts, **args)
                    got, sums = gpu_scan.scan(latest, a, flags=flags, totals=True, **args)
                    assert [int(v) for v in got] == want, (n, args)
                    bounds = starts + [n]
                    assert [int(v) for v in sums] == [
                        fold(latest.function, -1, items[x:y], init, reverse) for x, y in zip(bounds, bounds[1:])
                    ]
                    got = gpu_scan.scan(latest, a, keys=keys, **args)
                    assert [int(v) for v in got] == want, (n, args, "keys")
                    got, sums = gpu_scan.scan(latest, a, offsets=offsets, totals=True, **args)
                    want = segmented_reference(latest.function, -1, items, offset_starts, **args)
                    assert [int(v) for v in got] == want, (n, args, offsets)
                    # One total a window, empty windows included.
                    assert [int(v) for v in sums] == [
                        fold(latest.function, -1, items[x:y], init, reverse) for x, y in zip(offsets, offsets[1:])
                    ], (n, offsets)


def test_keys_are_compared_bit_for_bit():
    values = np.ones(5, dtype=np.int64)
    keys = np.array([np.nan, np.nan, 0.0, -0.0, -0.0], dtype=np.float64)
    # NaN and NaN of the same bits: one segment; 0.0 and -0.0: two.
    np.testing.assert_array_equal(gpu_scan.cumsum(values), [1, 2, 3, 4, 5])
    got = gpu_scan.scan(gpu_scan._sum("i64"), values, keys=keys)
    np.testing.assert_array_equal(got, [1, 2, 1, 1, 2])


def test_totals_along_axes_and_of_the_whole():
    r = rng(19)
    a = random_array("u32", 24, r).reshape(2, 3, 4)
    for axis in range(3):
        out, sums = gpu_scan.scan(gpu_scan._sum("u32"), a, axis=axis, totals=True)
        np.testing.assert_array_equal(sums, np.sum(a, axis=axis, dtype=a.dtype))
        np.testing.assert_array_equal(out, np.cumsum(a, axis=axis, dtype=a.dtype))
    out, total = gpu_scan.scan(gpu_scan._sum("u32"), a, totals=True)
    assert total.shape == () and total == np.sum(a, dtype=a.dtype)
    empty = np.zeros((2, 0), dtype=np.uint32)
    _, sums = gpu_scan.scan(gpu_scan._sum("u32"), empty, axis=1, init=5, totals=True)
    np.testing.assert_array_equal(sums, [5, 5])
    _, total = gpu_scan.scan(latest, np.zeros(0, dtype=np.int32), totals=True)
    assert total == -1


def test_bad_segments_are_errors_and_change_nothing():
    a = np.arange(6, dtype=np.int32)
    before = a.copy()
    with pytest.raises(ValueError, match="past the sequence"):
        gpu_scan.scan(latest, a, offsets=[0, 7])
    with pytest.raises(ValueError):
        gpu_scan.scan(latest, a, offsets=[0, 4, 2])
    with pytest.raises(ValueError, match="one flag an element"):
        gpu_scan.scan(latest, a, flags=[True, False])
    with pytest.raises(ValueError, match="one kind of segments"):
        gpu_scan.scan(latest, a, flags=np.ones(6), keys=np.ones(6))
    with pytest.raises(ValueError, match="one-dimensional"):
        gpu_scan.scan(latest, a.reshape(2, 3), flags=np.ones(6))
    np.testing.assert_array_equal(a, before)


def test_max_and_min_of_floats():
    @gpu_scan.op(dtype=np.float32, identity=-math.inf)
    def running_max(x, y):
        return max(x, y)

    @gpu_scan.op(dtype="float64", identity=math.inf)
    def running_min(x, y):
        return x if x < y else y

    r = rng(11)
    for n in LENGTHS:
        a = random_array("f32", n, r)
        np.testing.assert_array_equal(gpu_scan.scan(running_max, a), np.maximum.accumulate(a) if n else a)
        b = random_array("f64", n, r)
        np.testing.assert_array_equal(gpu_scan.scan(running_min, b), np.minimum.accumulate(b) if n else b)
    assert running_max.identity == -math.inf and running_min.identity == math.inf


def test_the_element_types_arithmetic():
    @gpu_scan.op(dtype="u8", identity=0)
    def shifted(x, y):
        t = x << 1
        t += y
        return t // 1 + (y % 7) * 0

    assert shifted(200, 100) == (400 + 100) % 256
    assert shifted(0, 3) == 3

    @gpu_scan.op(dtype="f64", identity=0.0)
    def hyp(x, y):
        m: f64 = math.hypot(x, y)  # noqa: F821 (a type of the subset)
        return m if not math.isnan(m) else 0.0

    assert hyp(3.0, 4.0) == 5.0

    @gpu_scan.op(dtype="i16", identity=0)
    def wide(x, y):
        return np.int16(np.int64(x) + np.int64(y))

    assert wide(32767, 1) == -32768

    @gpu_scan.op(dtype="bool", identity=False)
    def either(x, y):
        return not (not x and not y)

    assert [either(a, b) for a in (False, True) for b in (False, True)] == [False, True, True, True]

    @gpu_scan.op(dtype="u16", identity=0)
    def odd(x, y):
        return ~x & y if x // 0 == 0 else y

    assert odd(0x00FF, 0x0F0F) == 0x0F00


def test_the_math_functions_are_pythons():
    """Each math function and builtin of the subset maps to the method that
    computes what Python's does (checked on f64, where both call the
    platform's libm: within 2 ulps for the transcendental ones, exactly for
    the rest)."""
    import math as m

    cases = {
        "math.sqrt(x)": lambda x, y: m.sqrt(x),
        "math.exp(x)": lambda x, y: m.exp(x),
        "math.log(x)": lambda x, y: m.log(x),
        "math.log2(x)": lambda x, y: m.log2(x),
        "math.log10(x)": lambda x, y: m.log10(x),
        "math.sin(x)": lambda x, y: m.sin(x),
        "math.cos(x)": lambda x, y: m.cos(x),
        "math.tanh(x)": lambda x, y: m.tanh(x),
        "math.floor(x)": lambda x, y: float(m.floor(x)),
        "math.ceil(x)": lambda x, y: float(m.ceil(x)),
        "math.trunc(x)": lambda x, y: float(m.trunc(x)),
        "math.fabs(x - y)": lambda x, y: m.fabs(x - y),
        "abs(x - y)": lambda x, y: abs(x - y),
        "math.hypot(x, y)": lambda x, y: m.hypot(x, y),
        "math.copysign(x, y - 1.5)": lambda x, y: m.copysign(x, y - 1.5),
        "math.pow(x, y)": lambda x, y: m.pow(x, y),
        "min(x, y)": lambda x, y: min(x, y),
        "max(x, y)": lambda x, y: max(x, y),
        "x / y if x < y <= 2.0 else y - x": lambda x, y: x / y if x < y <= 2.0 else y - x,
        "1.0 if math.isnan(x) or math.isinf(y) or not math.isfinite(x) else 0.5": lambda x, y: 0.5,
    }
    exact = {"math.floor(x)", "math.ceil(x)", "math.trunc(x)", "math.fabs(x - y)", "abs(x - y)", "min(x, y)", "max(x, y)",
             "math.copysign(x, y - 1.5)", "x / y if x < y <= 2.0 else y - x", "math.sqrt(x)",
             "1.0 if math.isnan(x) or math.isinf(y) or not math.isfinite(x) else 0.5"}
    r = rng(23)
    xs = r.uniform(0.01, 4.0, 300)
    ys = r.uniform(0.01, 4.0, 300)
    for k, (expression, python) in enumerate(cases.items()):
        source = f"@gpu_scan.op(dtype='f64', identity=0.0)\ndef case_{k}(x, y):\n    return {expression}\n"
        import importlib.util
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
            file.write("import math\nimport gpu_scan\n" + source)
        spec = importlib.util.spec_from_file_location(f"math_case_{k}", file.name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        os.unlink(file.name)
        op = getattr(module, f"case_{k}")
        for x, y in zip(xs, ys):
            got, want = op(float(x), float(y)), python(float(x), float(y))
            if expression in exact:
                assert got == want, (expression, x, y, got, want)
            else:
                assert abs(got - want) <= 2 * m.ulp(want), (expression, x, y, got, want)


def test_the_text_is_the_same_as_scan_op_writes():
    # `#[scan_op(element = u32, identity = 0, op = |a, b| a + b)] struct
    # SumU32` (tests/common/ops.rs), whose text tests/operator_ir.rs pins
    # to this string: the same text but for the name.
    rust = '(op "sum_u32" (prim u32) (params "a" "b") (identity (int 0 -)) (body (block (add (var "a") (var "b")))) (block_threads auto) (items_per_thread auto))'

    @gpu_scan.op(dtype="u32", identity=0)
    def sum_u32(a, b):
        return a + b

    assert sum_u32.ir == rust.replace('"sum_u32"', f'"{sum_u32.name}"')
    source = sum_u32.cuda_source()
    assert f"struct {sum_u32.name}" in source
    assert sum_u32.name.startswith("py_sum_u32_")


def test_two_functions_of_one_name_are_two_operators():
    def make(k):
        @gpu_scan.op(dtype="i64", identity=0)
        def f(x, y):
            return x + y

        @gpu_scan.op(dtype="i64", identity=1)
        def g(x, y):
            return x * y

        return f, g

    f, g = make(0)
    assert f.name != g.name


def source_error(source, expected):
    """Defines `source` in a file of its own and checks the error."""
    import importlib.util
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write("import math\nimport numpy as np\nimport gpu_scan\n" + source)
    spec = importlib.util.spec_from_file_location("case", file.name)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(OperatorError) as info:
        spec.loader.exec_module(module)
    os.unlink(file.name)
    assert expected[0] in str(info.value), str(info.value)
    if expected[1] is not None:
        assert info.value.lineno == expected[1], str(info.value)
        assert info.value.filename == file.name


@pytest.mark.parametrize(
    "source, expected",
    [
        ("@gpu_scan.op(dtype='f32', identity=0.0)\ndef f(x, y):\n    return x ** 2\n", ("`**`", 6)),
        ("@gpu_scan.op(dtype='i32', identity=0)\ndef f(x, y):\n    return x // y\n", ("`//` floors", 6)),
        ("@gpu_scan.op(dtype='i32', identity=0)\ndef f(x, y):\n    return x / y\n", ("true division", 6)),
        ("@gpu_scan.op(dtype='f32', identity=0.0)\ndef f(x, y):\n    return x % y\n", ("`%`", 6)),
        ("@gpu_scan.op(dtype='u32', identity=0)\ndef f(x, y):\n    t = 0\n    for i in range(3):\n        t = t + x\n    return t\n", ("`For` statements", 7)),
        ("@gpu_scan.op(dtype='u32', identity=0)\ndef f(x, y):\n    return z\n", ("`z` is neither", 6)),
        ("@gpu_scan.op(dtype='u32', identity=0)\ndef f(x, y):\n    return len(x)\n", ("`len` is not a function", 6)),
        ("@gpu_scan.op(dtype='u32', identity=0)\ndef f(x, y, z):\n    return x\n", ("exactly two operands", 5)),
        ("@gpu_scan.op(dtype='u32', identity=0)\ndef f(x, y):\n    if x > y:\n        t = x\n    return y\n", ("ends in `return`", 6)),
        # What the types refuse, found by the native half (Rust's rules).
        ("@gpu_scan.op(dtype='u32', identity=0)\ndef f(x, y):\n    return x + 1.5\n", ("mismatched types: `u32` and a float literal", 6)),
        ("@gpu_scan.op(dtype='u8', identity=300)\ndef f(x, y):\n    return x + y\n", ("identity: the literal 300 is not a `u8`", 4)),
        ("@gpu_scan.op(dtype='u32', identity=0)\ndef f(x, y):\n    t = x + y\n    u = -t\n    return u\n", ("unary `-` takes a signed integer or a float, not `u32`", 7)),
        ("@gpu_scan.op(dtype='i32', identity=0)\ndef f(x, y):\n    t = (x\n         if y > 0\n         else y << 1.0)\n    return t\n", ("operator `f`", 8)),
        # `not` is logical: on an integer it is refused, not bitwise.
        ("@gpu_scan.op(dtype='u32', identity=0)\ndef f(x, y):\n    return x if not y else y\n", ("mismatched types", 6)),
    ],
)
def test_errors_name_the_line(source, expected):
    source_error(source, expected)


def test_bad_calls_are_typed_errors_and_change_nothing():
    a = np.arange(10, dtype=np.int64)
    before = a.copy()
    with pytest.raises(TypeError, match="astype"):
        gpu_scan.scan(latest, a)
    with pytest.raises(ValueError, match="out of range"):
        gpu_scan.scan(latest, np.zeros((2, 2), dtype=np.int32), axis=2)
    with pytest.raises(OverflowError):
        gpu_scan.scan(latest, np.zeros(3, dtype=np.int32), init=1 << 40)
    with pytest.raises(TypeError):
        gpu_scan.op(dtype="complex64", identity=0)
    with pytest.raises(TypeError, match="True or False"):
        gpu_scan.op(dtype="bool", identity=0)(lambda x, y: x)
    with pytest.raises(TypeError, match="gpu_scan.op"):
        gpu_scan.scan(lambda x, y: x, a)
    np.testing.assert_array_equal(a, before)


def test_backend_says_why_not_a_gpu():
    reason = gpu_scan.gpu_unavailable_reason()
    assert (gpu_scan.backend() == "cpu") == (reason is not None)
    if reason is not None:
        assert reason  # says why: no driver, no NVRTC, no device

    class OnTheGpu:
        __cuda_array_interface__ = {"shape": (3,), "typestr": "<i4", "data": (0, False), "version": 3}

    # An array of a framework the GPU path does not know is refused by name.
    with pytest.raises(TypeError, match="PyTorch tensors, CuPy arrays and JAX arrays"):
        gpu_scan.scan(latest, OnTheGpu())


@gpu_scan.op(dtype={"a": "f32", "b": "f32"}, identity=(1.0, 0.0))
def affine(x, y):
    """Affine maps v -> a*v + b composed, x first: not commutative."""
    return (x.a * y.a, y.a * x.b + y.b)


def affine_reference(x, y):
    f = np.float32
    return (f(x[0]) * f(y[0]), f(y[0]) * f(x[1]) + f(y[1]))


@gpu_scan.op(dtype={"m": ("u32", 2), "span": {"first": "i16", "last": "i16"}, "joins": "u32"}, identity=([0, 1], (0, 0), 0))
def join(x, y):
    """Nested structs and array fields: sums and products of the array,
    the first of x's span and the last of y's, counted joins."""
    return {
        "m": [x.m[0] + y.m[0], x.m[1] * y.m[1]],
        "span": (x.span.first, y.span.last),
        "joins": x.joins + y.joins + 1,
    }


def join_reference(x, y):
    mask = (1 << 32) - 1
    return (
        [(x[0][0] + y[0][0]) & mask, (x[0][1] * y[0][1]) & mask],
        (x[1][0], y[1][1]),
        (x[2] + y[2] + 1) & mask,
    )


def records(op, values):
    return np.array([tuple(v) for v in values], dtype=op.dtype)


def test_struct_elements_every_kind_and_direction():
    r = rng(29)
    for n in LENGTHS:
        a = np.zeros(n, dtype=affine.dtype)
        a["a"] = r.uniform(-2, 2, n).astype(np.float32)
        a["b"] = r.uniform(-2, 2, n).astype(np.float32)
        items = [(np.float32(x), np.float32(y)) for x, y in zip(a["a"], a["b"])]
        flags = r.random(n) < 0.1
        starts = [i for i in range(n) if i == 0 or flags[i]]
        for exclusive in (False, True):
            for reverse in (False, True):
                for init in (None, (np.float32(0.5), np.float32(-1.0))):
                    args = dict(exclusive=exclusive, reverse=reverse, init=init)
                    want = reference(affine_reference, (np.float32(1), np.float32(0)), items, **args)
                    got = gpu_scan.scan(affine, a, **args)
                    assert [tuple(v) for v in got.tolist()] == [tuple(float(f) for f in w) for w in want], (n, args)
                    got = gpu_scan.scan(affine, a, flags=flags, **args)
                    want = segmented_reference(affine_reference, (np.float32(1), np.float32(0)), items, starts, **args)
                    assert [tuple(v) for v in got.tolist()] == [tuple(float(f) for f in w) for w in want], (n, args, "flags")


def test_nested_structs_and_array_fields():
    r = rng(31)
    n = 300
    values = [
        ([int(r.integers(0, 1 << 32)), int(r.integers(0, 1 << 32))], (int(r.integers(-(1 << 15), 1 << 15)), int(r.integers(-(1 << 15), 1 << 15))), int(r.integers(0, 1 << 32)))
        for _ in range(n)
    ]
    a = records(join, values)
    for exclusive in (False, True):
        for reverse in (False, True):
            got = gpu_scan.scan(join, a, exclusive=exclusive, reverse=reverse)
            want = reference(join_reference, ([0, 1], (0, 0), 0), values, exclusive, reverse)
            got = [(list(m), tuple(span), joins) for m, span, joins in got.tolist()]
            assert got == [(list(m), tuple(s), j) for m, s, j in want], (exclusive, reverse)
    def plain(record):
        m, span, joins = record.tolist()
        return (list(m), tuple(span), joins)

    assert plain(join.identity) == ([0, 1], (0, 0), 0)
    for x, y in zip(values, values[1:]):
        assert plain(join(x, y)) == tuple(join_reference(x, y))


def test_struct_arrays_of_another_layout_are_converted():
    packed = np.dtype([("a", "<f4"), ("b", "<f4")])  # align=False: the same offsets here
    mixed = {"flag": "u8", "v": "f64"}

    @gpu_scan.op(dtype=mixed, identity=(0, 0.0))
    def last_flagged(x, y):
        return y if y.flag != 0 else x

    assert last_flagged.dtype.itemsize == 16 and last_flagged.dtype.fields["v"][1] == 8
    unaligned = np.array([(1, 2.0), (0, 3.0), (1, 4.0)], dtype=np.dtype([("flag", "u1"), ("v", "<f8")]))
    assert unaligned.dtype.itemsize == 9
    got = gpu_scan.scan(last_flagged, unaligned)
    assert got.tolist() == [(1, 2.0), (1, 2.0), (1, 4.0)]
    assert gpu_scan.scan(affine, np.array([(2, 1), (3, 0)], dtype=packed)).tolist() == [(2.0, 1.0), (6.0, 3.0)]
    with pytest.raises(TypeError, match="astype"):
        gpu_scan.scan(last_flagged, np.zeros(3, dtype=[("flag", "u1"), ("w", "<f8")]))


def test_struct_totals_and_the_cuda():
    a = records(affine, [(2, 1), (3, 0), (1, 5), (0.5, 2)])
    _, sums = gpu_scan.scan(affine, a, offsets=[0, 2, 2, 4], totals=True)
    assert sums.tolist() == [(6.0, 3.0), (1.0, 0.0), (0.5, 4.5)]
    source = affine.cuda_source()
    name = affine.dtype  # the struct's declaration comes first, then the policy
    assert source.index("struct py_struct_") < source.index(f"struct {affine.name}")
    assert name.names == ("a", "b")


@pytest.mark.parametrize(
    "source, expected",
    [
        ("@gpu_scan.op(dtype={'a': 'f32', 'b': 'f32'}, identity=(1.0, 0.0))\ndef f(x, y):\n    return (x.a, y.b, x.b)\n", ("2 fields, the tuple 3", 6)),
        ("@gpu_scan.op(dtype={'a': 'u32', 'b': 'f32'}, identity=(1, 0.0))\ndef f(x, y):\n    return (x.a, x.b / y.b)\n", ("every field a float", 6)),
        ("@gpu_scan.op(dtype={'a': 'f32', 'b': 'f32'}, identity=(1.0, 0.0))\ndef f(x, y):\n    t = (x.a, y.b)\n    return t\n", ("where one is returned", 6)),
        ("@gpu_scan.op(dtype={'a': 'f32', 'b': 'f32'}, identity=(1.0, 0.0))\ndef f(x, y):\n    return (x.c, y.b)\n", ("no field `c`", None)),
    ],
)
def test_struct_errors(source, expected):
    source_error(source, expected)


def test_struct_identity_of_the_wrong_shape():
    with pytest.raises(TypeError, match="tuple of its 2 fields"):
        gpu_scan.op(dtype={"a": "f32", "b": "f32"}, identity=(1.0,))(affine.function)


@gpu_scan.op(dtype={"a": "u32", "b": "u32"}, identity=(1, 0))
def affine_u32(x, y):
    """Affine maps over wrapping u32: exact and not commutative."""
    return (x.a * y.a, y.a * x.b + y.b)


def _rectangle(op, x, r, c, exclusive, reverse, init):
    """The combination of the rectangle out[r, c] covers, by definition:
    its elements row by row, each row in column order."""
    rows, cols = x.shape
    if reverse:
        rr = range(r + 1 if exclusive else r, rows)
        cc = range(c + 1 if exclusive else c, cols)
    else:
        rr = range(0, r if exclusive else r + 1)
        cc = range(0, c if exclusive else c + 1)
    acc = op.identity if init is None or reverse else init
    for i in rr:
        for j in cc:
            acc = op(acc, x[i, j])
    if init is not None and reverse:
        acc = op(acc, init)
    return acc


@pytest.mark.parametrize("shape", [(1, 1), (3, 4), (5, 1), (1, 6), (7, 9)])
def test_summed_area_is_the_rectangle(shape):
    g = np.random.default_rng(sum(shape))
    x = np.zeros(shape, dtype=affine_u32.dtype)
    x["a"] = g.integers(0, 1 << 32, shape, dtype=np.uint64)
    x["b"] = g.integers(0, 1 << 32, shape, dtype=np.uint64)
    init = (3, 5)
    for exclusive in (False, True):
        for reverse in (False, True):
            for i in (None, init):
                got = gpu_scan.summed_area(affine_u32, x, exclusive=exclusive, reverse=reverse, init=i)
                assert got.shape == shape
                for r in range(shape[0]):
                    for c in range(shape[1]):
                        want = _rectangle(affine_u32, x, r, c, exclusive, reverse, None if i is None else np.array([i], dtype=affine_u32.dtype)[0])
                        assert tuple(got[r, c]) == tuple(want), (exclusive, reverse, i, r, c)
    with pytest.raises(ValueError, match="two dimensions"):
        gpu_scan.summed_area(affine_u32, x.reshape(-1))


def test_a_tuple_of_arrays_is_a_struct_of_fields():
    g = np.random.default_rng(3)
    n = 1000
    a = g.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    b = g.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    packed = np.zeros(n, dtype=affine_u32.dtype)
    packed["a"], packed["b"] = a, b
    for kw in ({}, {"exclusive": True, "reverse": True, "init": (3, 4)}, {"offsets": [0, 10, 10, 600, n]}):
        got_a, got_b = gpu_scan.scan(affine_u32, (a, b), **kw)
        want = gpu_scan.scan(affine_u32, packed, **kw)
        np.testing.assert_array_equal(got_a, want["a"])
        np.testing.assert_array_equal(got_b, want["b"])
    (out_a, out_b), (sum_a, sum_b) = gpu_scan.scan(affine_u32, (a, b), flags=a % 7 == 0, totals=True)
    want, want_sums = gpu_scan.scan(affine_u32, packed, flags=a % 7 == 0, totals=True)
    np.testing.assert_array_equal(out_b, want["b"])
    np.testing.assert_array_equal(sum_a, want_sums["a"])
    np.testing.assert_array_equal(sum_b, want_sums["b"])
    with pytest.raises(ValueError, match="2 fields"):
        gpu_scan.scan(affine_u32, (a,))
    with pytest.raises(TypeError, match="convert"):
        gpu_scan.scan(affine_u32, (a, b.astype(np.int64)))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32, np.int64, np.float32, np.float64])
def test_sort_and_argsort_match_numpy(dtype):
    g = np.random.default_rng(np.dtype(dtype).itemsize)
    n = 10_007
    if np.dtype(dtype).kind == "f":
        keys = (g.standard_normal(n) * 1e3).astype(dtype)
        keys[keys == 0] = 1  # no signed zeros: NumPy keeps them in input order
    else:
        info = np.iinfo(dtype)
        keys = g.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        keys[::7] = keys[3]  # ties: the argsort is stable
    np.testing.assert_array_equal(gpu_scan.sort(keys), np.sort(keys, kind="stable"))
    np.testing.assert_array_equal(gpu_scan.argsort(keys), np.argsort(keys, kind="stable"))
    order = gpu_scan.argsort(keys, descending=True)
    np.testing.assert_array_equal(keys[order], np.sort(keys)[::-1])
    # Stable when descending too: equal keys keep their input order.
    for k in np.unique(keys[order])[:5]:
        assert np.all(np.diff(order[keys[order] == k]) > 0)
    np.testing.assert_array_equal(gpu_scan.sort(keys, descending=True), np.sort(keys)[::-1])


def test_sort_orders_floats_by_their_bits():
    keys = np.array([1.0, -0.0, np.nan, 0.0, -np.inf, -np.nan, 2.0], dtype=np.float32)
    got = gpu_scan.sort(keys)
    want_bits = [(-np.nan), -np.inf, -0.0, 0.0, 1.0, 2.0, np.nan]
    assert [np.signbit(v) for v in got] == [np.signbit(np.float32(v)) for v in want_bits]
    assert np.isnan(got[0]) and np.isnan(got[-1]) and got[1] == -np.inf and got[4:6].tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="keys of"):
        gpu_scan.sort(np.array([True, False]))


def test_a_struct_operators_type_error_names_its_line():
    with pytest.raises(gpu_scan.OperatorError) as e:

        @gpu_scan.op(dtype={"a": "u32", "b": "f32"}, identity=(0, 0.0))
        def bad(x, y):
            s = x.b + y.b
            t = x.a + 1.5  # a u32 and a float
            return (t, s)

    assert e.value.lineno == line_of("t = x.a + 1.5") and "mismatched types" in str(e.value), str(e.value)
    with pytest.raises(gpu_scan.OperatorError) as e:

        @gpu_scan.op(dtype={"a": "u32", "b": "f32"}, identity=(0, 0.0))
        def bad_return(x, y):
            s = x.b + y.b
            return (x.a + 0.5, s)

    assert e.value.lineno == line_of("return (x.a + 0.5, s)"), str(e.value)


def line_of(code):
    """The line of `code` in the test above."""
    import inspect

    source, start = inspect.getsourcelines(test_a_struct_operators_type_error_names_its_line)
    return start + next(i for i, l in enumerate(source) if code in l)



def test_commutative_is_checked():
    @gpu_scan.op(dtype="i32", identity=0, commutative=True)
    def add(x, y):
        return x + y

    assert add.commutative
    with pytest.raises(gpu_scan.OperatorError, match="declared commutative"):

        @gpu_scan.op(dtype={"a": "f32", "b": "f32"}, identity=(1.0, 0.0), commutative=True)
        def not_commutative(x, y):
            return (x.a * y.a, y.a * x.b + y.b)

    with pytest.raises(gpu_scan.OperatorError, match="declared commutative"):

        @gpu_scan.op(dtype="u8", identity=0, commutative=True)
        def right(x, y):
            return y
