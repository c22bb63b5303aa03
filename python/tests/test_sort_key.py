"""Records sorted by a key written in Python (``gpu_scan.sort_key``) on the
CPU: against ``numpy.lexsort`` of the same components (and Python's own
stable ``sorted``), ascending and descending, one component and several,
struct and primitive records, equal keys in input order, signed zeros
and NaNs ordered as the radix sort orders floats; the refusals name the
line. The seed is printed (GPU_SCAN_PY_SEED replays a run)."""

import inspect
import os
import time

import numpy as np
import pytest

import gpu_scan
from gpu_scan import OperatorError

SEED = int(os.environ.get("GPU_SCAN_PY_SEED", time.time_ns() % (1 << 63)))
print(f"test_sort_key seed: {SEED} (GPU_SCAN_PY_SEED={SEED} replays it)")
ORDER = {"price": "f32", "size": "u32", "side": "i8"}


@gpu_scan.sort_key(ORDER, key=("i8", "f32", "u32"))
def by_side_price_size(o):
    return (o.side, o.price, ~o.size)


@gpu_scan.sort_key(ORDER, key="f32")
def by_price(o):
    return o.price


@gpu_scan.sort_key("i64", key="u8")
def low_byte(x):
    return u8(x & 255)


def orders(n, r):
    out = np.zeros(n, dtype=by_price.dtype)
    out["price"] = r.integers(0, 20, n).astype(np.float32) / 4  # many ties
    out["size"] = r.integers(0, 1 << 32, n, dtype=np.uint64)
    out["side"] = r.integers(-1, 2, n)
    return out


@pytest.mark.parametrize("n", [0, 1, 2, 33, 1000, 4097])
def test_records_sort_by_their_keys(n):
    r = np.random.default_rng([SEED, n])
    o = orders(n, r)
    inverted = (~o["size"]).astype(np.uint32)
    want = np.lexsort((inverted, o["price"], o["side"]))  # last key is primary
    got = gpu_scan.argsort(o, key=by_side_price_size)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want, err_msg=f"n={n} seed={SEED}")
    np.testing.assert_array_equal(gpu_scan.sort(o, key=by_side_price_size), o[want])
    # Descending: each component descending, ties in input order.
    want = sorted(range(n), key=lambda i: (-int(o["side"][i]), -float(o["price"][i]), -int(inverted[i])))
    np.testing.assert_array_equal(gpu_scan.argsort(o, key=by_side_price_size, descending=True), want)
    # One component, many ties: stable.
    np.testing.assert_array_equal(gpu_scan.argsort(o, key=by_price), np.argsort(o["price"], kind="stable"))


def test_primitive_records_and_the_keys_arithmetic():
    x = np.array([256 + 3, 1, -1, 2, 255], dtype=np.int64)
    assert low_byte(-1) == 255 and low_byte(259) == 3
    np.testing.assert_array_equal(gpu_scan.sort(x, key=low_byte), [1, 2, 256 + 3, -1, 255])


def test_float_keys_order_as_the_radix_sort():
    o = np.zeros(4, dtype=by_price.dtype)
    o["price"] = [0.0, -0.0, np.nan, -1.0]
    # -1 < -0.0 = +0.0 (input order) < nan.
    np.testing.assert_array_equal(gpu_scan.argsort(o, key=by_price), [3, 0, 1, 2])
    assert by_side_price_size((2.5, 7, -1)) == (-1, 2.5, 2**32 - 8)


def test_refusals():
    def wrong_arity(o):
        return (o.side, o.price)

    with pytest.raises(OperatorError, match="3 components, this tuple 2"):
        gpu_scan.sort_key(ORDER, key=("i8", "f32", "u32"))(wrong_arity)

    def mistyped(x):
        return x + 1.5  # an i64 and a float

    with pytest.raises(OperatorError) as e:
        gpu_scan.sort_key("i64", key="i64")(mistyped)
    assert f":{inspect.getsourcelines(mistyped)[1] + 1}" in str(e.value), str(e.value)
    assert "sort key `test_refusals.<locals>.mistyped`" in str(e.value), str(e.value)
    with pytest.raises(OperatorError, match="one to four"):
        gpu_scan.sort_key("i64", key="bool")(low_byte.function)
    with pytest.raises(TypeError, match="sort_key"):
        gpu_scan.sort(np.arange(3), key=lambda x: x)


def test_segmented_sorts_sort_each_segment_on_its_own():
    """By CSR offsets (empty segments, keys before the first offset and
    after the last left alone), both orders, against NumPy's stable sort of
    each segment."""
    r = np.random.default_rng([SEED, 7])
    for dtype in (np.uint8, np.int32, np.float64):
        keys = (r.integers(-100, 100, 5000) if dtype != np.uint8 else r.integers(0, 255, 5000)).astype(dtype)
        offsets = np.concatenate([[3], np.sort(r.integers(3, 4990, 40)), [4990]]).astype(np.int64)
        for descending in (False, True):
            want_order = np.arange(len(keys))
            for s, e in zip(offsets[:-1], offsets[1:]):
                seg = keys[s:e]
                o = np.argsort(-seg.astype(np.float64) if descending else seg, kind="stable")
                want_order[s:e] = s + o
            got = gpu_scan.argsort(keys, offsets=offsets, descending=descending)
            np.testing.assert_array_equal(got, want_order, err_msg=f"{dtype} seed={SEED}")
            np.testing.assert_array_equal(gpu_scan.sort(keys, offsets=offsets, descending=descending), keys[want_order])
    with pytest.raises(ValueError):
        gpu_scan.sort(np.arange(10, dtype=np.int32), offsets=[0, 5, 3])  # not increasing
