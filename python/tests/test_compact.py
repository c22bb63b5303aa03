"""Compaction with predicates and equalities written in Python, on the CPU:
select, partition, unique and run-length encoding against NumPy and
plain-Python references, on fresh random inputs (the seed is printed;
GPU_SCAN_PY_SEED replays a run) and adversarial ones (nothing kept,
everything kept, one run, runs of one, NaNs and signed zeros); the
translation's refusals name the line."""

import doctest
import inspect
import os
import time

import numpy as np
import pytest

import gpu_scan
from gpu_scan import OperatorError
from gpu_scan import _compact

SEED = int(os.environ.get("GPU_SCAN_PY_SEED", time.time_ns() % (1 << 63)))
print(f"test_compact seed: {SEED} (GPU_SCAN_PY_SEED={SEED} replays it)")
LENGTHS = [0, 1, 2, 31, 32, 33, 1000, 4097]


def rng(salt):
    return np.random.default_rng([SEED, salt])


@gpu_scan.predicate("i32")
def positive(x):
    return x > 0


@gpu_scan.predicate("u32")
def third(x):
    r = x % 3
    return r == 0


@gpu_scan.predicate("f64")
def small(x):
    """Within (-1, 1), NaN never."""
    return -1.0 < x and x < 1.0


@gpu_scan.equality("f32")
def same_sign(a, b):
    return (a < 0.0) == (b < 0.0)


def runs_reference(values, equal):
    """Run heads, by the definition: i = 0 or not equal(values[i-1], values[i])."""
    heads = [i for i in range(len(values)) if i == 0 or not equal(values[i - 1], values[i])]
    lengths = [(heads[k + 1] if k + 1 < len(heads) else len(values)) - h for k, h in enumerate(heads)]
    return heads, lengths


def test_the_modules_examples():
    failures, tests = doctest.testmod(_compact)
    assert tests > 0 and failures == 0


@pytest.mark.parametrize("stage,dtype", [(positive, np.int32), (third, np.uint32), (small, np.float64)])
def test_select_and_partition_keep_what_the_predicate_keeps(stage, dtype):
    r = rng(hash(stage.function.__name__) % 1000)
    for n in LENGTHS:
        if np.dtype(dtype).kind == "f":
            a = (r.standard_normal(n) * 2).astype(dtype)
            a[r.random(n) < 0.1] = np.nan
        else:
            info = np.iinfo(dtype)
            a = r.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
        keep = np.array([stage(x.item()) for x in a], dtype=bool)
        before = a.copy()
        got = gpu_scan.select(a, stage)
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, a[keep], err_msg=f"select n={n} seed={SEED}")
        out, count = gpu_scan.partition(a, stage)
        assert count == keep.sum()
        np.testing.assert_array_equal(out, np.concatenate([a[keep], a[~keep]]), err_msg=f"n={n}")
        out, count = gpu_scan.partition(a, stage, rejected="reversed")
        np.testing.assert_array_equal(out, np.concatenate([a[keep], a[~keep][::-1]]), err_msg=f"n={n}")
        np.testing.assert_array_equal(a, before)  # the input untouched


def test_nothing_and_everything_kept():
    a = np.arange(1, 1001, dtype=np.int32)
    np.testing.assert_array_equal(gpu_scan.select(a, positive), a)
    assert gpu_scan.select(-a, positive).size == 0
    out, count = gpu_scan.partition(-a, positive)
    assert count == 0
    np.testing.assert_array_equal(out, -a)


def test_the_predicate_is_the_elements_arithmetic():
    # u32 `%`: 2**32 - 1 is a multiple of 3, as Rust's u32 says.
    assert third(2**32 - 1) and not third(2**32 - 2)
    a = np.array([2**32 - 1, 2**32 - 2, 0, 7], dtype=np.uint32)
    np.testing.assert_array_equal(gpu_scan.select(a, third), [2**32 - 1, 0])
    with pytest.raises(OverflowError):
        third(-1)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32, np.int64, np.float32, np.float64])
def test_unique_and_run_length_encode_by_equality(dtype):
    r = rng(np.dtype(dtype).itemsize * 7 + (np.dtype(dtype).kind == "f"))
    for n in LENGTHS:
        a = r.integers(0, 3, size=n).astype(dtype)
        if np.dtype(dtype).kind == "f" and n:
            a[r.random(n) < 0.1] = np.nan
            a[r.random(n) < 0.1] = -0.0
        heads, lengths = runs_reference(a.tolist(), lambda x, y: x == y)
        got = gpu_scan.unique(a)
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, a[heads], err_msg=f"unique n={n} seed={SEED}")
        values, got_lengths = gpu_scan.run_length_encode(a)
        np.testing.assert_array_equal(values, a[heads])
        assert got_lengths.dtype == np.int64
        np.testing.assert_array_equal(got_lengths, lengths, err_msg=f"lengths n={n}")
        assert got_lengths.sum() == n


def test_each_nan_is_a_run_and_signed_zeros_are_one():
    a = np.array([np.nan, np.nan, 0.0, -0.0, 1.0], dtype=np.float32)
    values, lengths = gpu_scan.run_length_encode(a)
    np.testing.assert_array_equal(lengths, [1, 1, 2, 1])
    assert np.isnan(values[:2]).all()


def test_one_run_and_runs_of_one():
    a = np.full(5000, 7, dtype=np.uint16)
    np.testing.assert_array_equal(gpu_scan.unique(a), [7])
    b = np.arange(5000, dtype=np.uint16)
    values, lengths = gpu_scan.run_length_encode(b)
    np.testing.assert_array_equal(values, b)
    assert (lengths == 1).all()


def test_a_custom_equality():
    a = np.array([1.0, 2.0, -1.0, -3.0, 0.0, 5.0, -0.5], dtype=np.float32)
    np.testing.assert_array_equal(gpu_scan.unique(a, same_sign), [1.0, -1.0, 0.0, -0.5])
    values, lengths = gpu_scan.run_length_encode(a, same_sign)
    np.testing.assert_array_equal(lengths, [2, 2, 2, 1])


def test_stages_write_cuda_as_the_macros_do():
    assert "static __device__ __forceinline__ output_t apply(const input_t x)" in positive.cuda_source()
    assert "gpu_scan_stages" in same_sign.cuda_source()
    assert positive.ir.startswith('(stage "py_positive_')


def test_refusals_name_the_line():
    def bad(x):
        t = x + 1
        return t < 0.5  # an i32 against a float

    with pytest.raises(OperatorError) as e:
        gpu_scan.predicate("i32")(bad)
    line = inspect.getsourcelines(bad)[1] + 2
    assert f":{line}" in str(e.value) and "mismatched types" in str(e.value), str(e.value)

    def not_bool(x):
        return x + 1

    with pytest.raises(OperatorError, match="bool"):
        gpu_scan.predicate("i32")(not_bool)

    def two(a, b):
        return a == b

    with pytest.raises(OperatorError, match="one element"):
        gpu_scan.predicate("i32")(two)
    with pytest.raises(OperatorError, match="two elements"):
        gpu_scan.equality("i32")(positive.function)
    # `x > 0` of a struct: a struct where a number goes.
    with pytest.raises(OperatorError, match="a struct or an array where a number goes"):
        gpu_scan.predicate({"a": "f32", "b": "f32"})(positive.function)


def test_wrong_stages_and_arrays_are_refused():
    a = np.arange(10, dtype=np.int32)
    with pytest.raises(TypeError, match="predicate"):
        gpu_scan.select(a, same_sign)
    with pytest.raises(TypeError, match="equality"):
        gpu_scan.unique(a, positive)
    with pytest.raises(TypeError):
        gpu_scan.select(a.astype(np.int64), positive)
    with pytest.raises(ValueError, match="one dimension"):
        gpu_scan.select(a.reshape(2, 5), positive)
    with pytest.raises(ValueError, match="rejected"):
        gpu_scan.partition(a, positive, rejected="sideways")


@gpu_scan.op(dtype={"a": "u32", "b": "u32"}, identity=(1, 0))
def affine_u32(x, y):
    """Affine maps over wrapping u32, x first: exact and not commutative."""
    return (x.a * y.a, y.a * x.b + y.b)


@gpu_scan.op(dtype="i64", identity=0)
def add_i64(x, y):
    return x + y


def test_reduce_by_key_combines_each_runs_values_in_order():
    r = rng(77)
    for n in LENGTHS:
        keys = r.integers(0, 3, n).astype(np.int32)
        heads, lengths = runs_reference(keys.tolist(), lambda a, b: a == b)
        values = r.integers(-(1 << 40), 1 << 40, n).astype(np.int64)
        got_keys, sums = gpu_scan.reduce_by_key(keys, values, add_i64)
        np.testing.assert_array_equal(got_keys, keys[heads], err_msg=f"n={n} seed={SEED}")
        want = np.add.reduceat(values, heads) if n else np.zeros(0, dtype=np.int64)
        np.testing.assert_array_equal(sums, want, err_msg=f"n={n} seed={SEED}")
        maps = np.zeros(n, dtype=affine_u32.dtype)
        maps["a"] = r.integers(0, 1 << 32, n, dtype=np.uint64)
        maps["b"] = r.integers(0, 1 << 32, n, dtype=np.uint64)
        _, composed = gpu_scan.reduce_by_key(keys, maps, affine_u32)
        for h, length, got in zip(heads, lengths, composed):
            acc = maps[h]
            for m in maps[h + 1 : h + length]:
                acc = affine_u32(acc, m)
            assert got.tolist() == acc.tolist(), f"run at {h}, n={n} seed={SEED}"


def test_reduce_by_key_by_a_custom_equality_and_its_refusals():
    keys = np.array([1.0, 2.0, -1.0, -3.0, 0.5], dtype=np.float32)
    values = np.arange(5, dtype=np.int64)
    got_keys, sums = gpu_scan.reduce_by_key(keys, values, add_i64, same_sign)
    np.testing.assert_array_equal(got_keys, [1.0, -1.0, 0.5])
    np.testing.assert_array_equal(sums, [1, 5, 4])
    with pytest.raises(ValueError, match="values"):
        gpu_scan.reduce_by_key(keys, values[:4], add_i64, same_sign)


PARTICLE = {"mass": "f32", "charge": "i16", "id": "u64"}


@gpu_scan.predicate(PARTICLE)
def heavy_and_charged(p):
    return p.mass > 0.5 and p.charge != 0


@gpu_scan.equality(PARTICLE)
def same_charge(a, b):
    return a.charge == b.charge


def random_particles(n, r):
    dtype = heavy_and_charged.dtype
    out = np.zeros(n, dtype=dtype)
    out["mass"] = r.random(n).astype(np.float32)
    out["charge"] = r.integers(-1, 2, n)
    out["id"] = r.integers(0, 1 << 63, n, dtype=np.uint64)
    return out


def test_struct_predicates_and_equalities():
    """A padded 16-byte struct (f32, i16, u64): select and partition by a
    predicate of two fields, unique and run-length encoding by one field,
    against NumPy's masks and the definition of runs."""
    assert heavy_and_charged.dtype.itemsize == 16
    r = rng(91)
    for n in LENGTHS:
        p = random_particles(n, r)
        keep = (p["mass"] > 0.5) & (p["charge"] != 0)
        got = gpu_scan.select(p, heavy_and_charged)
        assert got.dtype == p.dtype
        np.testing.assert_array_equal(got, p[keep], err_msg=f"n={n} seed={SEED}")
        out, count = gpu_scan.partition(p, heavy_and_charged)
        assert count == keep.sum()
        np.testing.assert_array_equal(out, np.concatenate([p[keep], p[~keep]]))
        heads, lengths = runs_reference(p["charge"].tolist(), lambda a, b: a == b)
        np.testing.assert_array_equal(gpu_scan.unique(p, same_charge), p[heads])
        values, got_lengths = gpu_scan.run_length_encode(p, same_charge)
        np.testing.assert_array_equal(values, p[heads])
        np.testing.assert_array_equal(got_lengths, lengths)
    assert heavy_and_charged((0.75, 1, 7)) and not heavy_and_charged({"mass": 0.75, "charge": 0, "id": 7})
    assert same_charge((0.1, -1, 1), (0.9, -1, 2))
    with pytest.raises(TypeError, match="equality"):
        gpu_scan.unique(random_particles(10, r))


@gpu_scan.predicate("i32")
def small_magnitude(x):
    return -10 < x and x < 10


def test_three_way_partitions_and_non_trivial_runs():
    r = rng(123)
    for n in LENGTHS:
        a = r.integers(-50, 50, n).astype(np.int32)
        first, second = a > 0, (a <= 0) & (-10 < a) & (a < 10)
        want = np.concatenate([a[first], a[second], a[~first & ~second]])
        out, counts = gpu_scan.partition(a, positive, small_magnitude)
        assert counts == (first.sum(), second.sum()), f"n={n} seed={SEED}"
        np.testing.assert_array_equal(out, want, err_msg=f"n={n} seed={SEED}")
        runs = r.integers(0, 3, n).astype(np.uint16)
        heads, lengths = runs_reference(runs.tolist(), lambda x, y: x == y)
        long = [(h, l) for h, l in zip(heads, lengths) if l > 1]
        offsets, got_lengths = gpu_scan.non_trivial_runs(runs)
        assert offsets.dtype == got_lengths.dtype == np.int64
        np.testing.assert_array_equal(offsets, [h for h, _ in long], err_msg=f"n={n}")
        np.testing.assert_array_equal(got_lengths, [l for _, l in long], err_msg=f"n={n}")
    with pytest.raises(TypeError, match="one element type"):
        gpu_scan.partition(np.arange(3, dtype=np.int32), positive, heavy_and_charged)
