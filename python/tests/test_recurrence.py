"""Linear recurrences on the CPU against a sequential NumPy reference
written from the definition: scalar, diagonal and matrix transitions,
sequence-major and time-major, forward and in reverse, from an initial
state, with a readout; f32 and f64. Tolerance: each step is a product and
a sum in the array's float type in both (the library never fuses them),
so scalar and diagonal states agree bit for bit; a matrix row's products
are summed in column order in both, also bit for bit. The seed is printed
(GPU_SCAN_PY_SEED replays a run)."""

import os
import time

import numpy as np
import pytest

import gpu_scan
from gpu_scan import _recurrence

SEED = int(os.environ.get("GPU_SCAN_PY_SEED", time.time_ns() % (1 << 63)))
print(f"test_recurrence seed: {SEED} (GPU_SCAN_PY_SEED={SEED} replays it)")


def reference(a, b, kind, initial=None, readout=None, reverse=False):
    """The definition over [sequence][step][state] arrays, one step at a
    time in b's float type: h = a·h (a product per entry, a matrix row's
    products summed left to right), then + b."""
    s, t, d = b.shape
    dtype = b.dtype.type
    h_all = np.zeros_like(b)
    for q in range(s):
        h = np.zeros(d, dtype=b.dtype) if initial is None else initial[q].copy()
        for i in range(t):
            k = t - 1 - i if reverse else i
            if kind == "scalar":
                ah = (a[q, k] * h).astype(b.dtype)
            elif kind == "diagonal":
                ah = (a[q, k] * h).astype(b.dtype)
            else:
                ah = np.zeros(d, dtype=b.dtype)
                for row in range(d):
                    acc = dtype(0)
                    for col in range(d):
                        acc = dtype(acc + dtype(a[q, k, row, col] * h[col]))
                    ah[row] = acc
            h = (ah + b[q, k]).astype(b.dtype)
            h_all[q, k] = h
    if readout is None:
        return h_all
    y = np.zeros((s, t), dtype=b.dtype)
    for q in range(s):
        for k in range(t):
            acc = dtype(0)
            for j in range(d):
                acc = dtype(acc + dtype(readout[q, k, j] * h_all[q, k, j]))
            y[q, k] = acc
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["scalar", "diagonal", "matrix"])
def test_batches_match_the_definition(dtype, kind):
    r = np.random.default_rng([SEED, np.dtype(dtype).itemsize, len(kind)])
    for sequences, steps, state in [(1, 1, 1), (3, 17, 4), (5, 64, 2), (2, 33, 3)]:
        b = r.standard_normal((sequences, steps, state)).astype(dtype)
        a_shape = {"scalar": (sequences, steps), "diagonal": (sequences, steps, state), "matrix": (sequences, steps, state, state)}[kind]
        a = (r.uniform(-0.9, 0.9, a_shape) / (state if kind == "matrix" else 1)).astype(dtype)
        a_full = a[..., None] if kind == "scalar" else a
        h0 = r.standard_normal((sequences, state)).astype(dtype)
        c = r.standard_normal(b.shape).astype(dtype)
        what = f"{kind} {dtype.__name__} {sequences}x{steps}x{state} seed={SEED}"
        for reverse in (False, True):
            got = gpu_scan.linear_recurrence(a, b, initial=h0, reverse=reverse)
            want = reference(a_full, b, kind, h0, reverse=reverse)
            np.testing.assert_array_equal(got, want, err_msg=what)
            # Time-major: the same recurrences with steps first.
            tm = gpu_scan.linear_recurrence(
                np.ascontiguousarray(np.swapaxes(a, 0, 1)), np.ascontiguousarray(np.swapaxes(b, 0, 1)),
                initial=h0, reverse=reverse, time_major=True,
            )
            np.testing.assert_array_equal(np.swapaxes(tm, 0, 1), want, err_msg=f"time-major {what}")
            y = gpu_scan.linear_recurrence(a, b, initial=h0, readout=c, reverse=reverse)
            assert y.shape == (sequences, steps)
            np.testing.assert_array_equal(y, reference(a_full, b, kind, h0, c, reverse), err_msg=f"readout {what}")
        np.testing.assert_array_equal(gpu_scan.linear_recurrence(a, b), reference(a_full, b, kind), err_msg=what)


def test_the_short_shapes_and_the_refusals():
    b = np.float64([1, 2, 4])
    np.testing.assert_array_equal(gpu_scan.linear_recurrence(np.float64([0.5] * 3), b, initial=np.float64([2])), [2, 3, 5.5])
    two = np.float32([[1, 2], [3, 4]])
    np.testing.assert_array_equal(gpu_scan.linear_recurrence(np.ones_like(two), two), [[1, 3], [3, 7]])
    with pytest.raises(ValueError, match="a of shape"):
        gpu_scan.linear_recurrence(np.ones((2, 3, 5), np.float32), np.ones((2, 3, 4), np.float32))
    with pytest.raises(TypeError, match="one float type"):
        gpu_scan.linear_recurrence(np.ones(3, np.float64), np.ones(3, np.float32))
    with pytest.raises(TypeError, match="float32 or float64"):
        gpu_scan.linear_recurrence(np.ones(3, np.int32), np.ones(3, np.int32))
    with pytest.raises(ValueError, match="initial"):
        gpu_scan.linear_recurrence(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32), initial=np.ones(3, np.float32))


def test_the_modules_examples():
    import doctest

    failures, tests = doctest.testmod(_recurrence)
    assert tests > 0 and failures == 0


def test_sparse_products_match_a_dense_one():
    """CSR products against the dense product of the same matrix, row by
    row in float64 (the float32 rows' sums of up to 300 products of
    values in [-1, 1) agree within a relative 1e-5 of the row's absolute
    sum: each rounding is half an ulp, 2^-24, times at most 300 terms);
    empty rows, power-law rows; the refusals."""
    r = np.random.default_rng([SEED, 11])
    rows, cols = 2000, 500
    lengths = np.minimum((r.pareto(1.3, rows) * 3).astype(np.int64), 300)
    lengths[::17] = 0
    row_ptr = np.concatenate([[0], np.cumsum(lengths)])
    col_idx = r.integers(0, cols, row_ptr[-1]).astype(np.int32)
    for dtype in (np.float32, np.float64):
        values = r.uniform(-1, 1, row_ptr[-1]).astype(dtype)
        x = r.uniform(-1, 1, cols).astype(dtype)
        dense = np.zeros((rows, cols))
        for i in range(rows):
            np.add.at(dense[i], col_idx[row_ptr[i]:row_ptr[i + 1]], values[row_ptr[i]:row_ptr[i + 1]].astype(np.float64))
        want = dense @ x.astype(np.float64)
        bound = np.abs(dense) @ np.abs(x.astype(np.float64))
        for pointers in (row_ptr.astype(np.int32), row_ptr.astype(np.int64)):
            y = gpu_scan.spmv(pointers, col_idx, values, x)
            assert y.dtype == dtype and y.shape == (rows,)
            tol = 1e-5 if dtype == np.float32 else 1e-13
            assert np.all(np.abs(y - want) <= tol * bound + 1e-30), f"{dtype} seed={SEED}"
    with pytest.raises(ValueError, match="column"):
        gpu_scan.spmv(np.int32([0, 1]), np.int32([7]), np.float32([1]), np.float32([1, 2]))
    with pytest.raises(TypeError, match="one of float32"):
        gpu_scan.spmv(np.int32([0, 1]), np.int32([0]), np.float32([1]), np.float64([1]))
