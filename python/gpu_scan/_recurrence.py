"""Linear recurrences ``h[t] = a[t] · h[t-1] + b[t]``, batched over
sequences, with a scalar, diagonal or matrix transition, read from separate
arrays (the recurrence of state-space layers): the library's
``linear_recurrence`` on the CPU, ``GpuRecurrence`` on a GPU.

>>> import numpy as np, gpu_scan
>>> a = np.float32([0.5, 0.5, 0.5])
>>> gpu_scan.linear_recurrence(a, np.float32([1.0, 2.0, 4.0]))
array([1.  , 2.5 , 5.25], dtype=float32)
>>> gpu_scan.linear_recurrence(a, np.float32([1.0, 2.0, 4.0]), reverse=True)
array([3., 4., 4.], dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any, Tuple

import numpy as np

from ._native import recurrence_bytes as _recurrence_bytes

_REALS = {"float32": "f32", "float64": "f64"}


def _dims(shape: Tuple[int, ...], time_major: bool) -> Tuple[int, int, int]:
    """``(sequences, steps, state)`` of ``b``'s shape: ``(steps,)`` one
    sequence of a scalar state; ``(sequences, steps)`` (time-major
    ``(steps, sequences)``) a scalar state; three dimensions the state
    last."""
    if len(shape) == 1:
        return 1, shape[0], 1
    if len(shape) not in (2, 3):
        raise ValueError(f"b of shape {shape}: (steps,), (sequences, steps) or (sequences, steps, state)")
    lead = (shape[1], shape[0]) if time_major else (shape[0], shape[1])
    return lead[0], lead[1], shape[2] if len(shape) == 3 else 1


def _kind(a_shape: Tuple[int, ...], b_shape: Tuple[int, ...], state: int) -> str:
    """The transition's kind by ``a``'s shape beside ``b``'s."""
    if len(b_shape) == 3:
        if a_shape in (b_shape[:-1], b_shape[:-1] + (1,)) or (a_shape == b_shape and state == 1):
            return "scalar"
        if a_shape == b_shape:
            return "diagonal"
        if a_shape == b_shape + (state,):
            return "matrix"
    elif a_shape == b_shape:
        return "scalar"
    raise ValueError(
        f"a of shape {a_shape} beside b of shape {b_shape}: b's shape without its state (a scalar), "
        "b's shape (a diagonal) or b's shape and the state again (a matrix)"
    )


def _plan(a_shape, b_shape, initial_shape, readout_shape, time_major):
    sequences, steps, state = _dims(b_shape, time_major)
    kind = _kind(a_shape, b_shape, state)
    if initial_shape is not None and math.prod(initial_shape) != sequences * state:
        raise ValueError(f"initial of shape {initial_shape}: {sequences * state} values, the state of each sequence")
    if readout_shape is not None and readout_shape != b_shape:
        raise ValueError(f"readout of shape {readout_shape}: b's shape {b_shape}")
    out_shape = b_shape if readout_shape is None or len(b_shape) < 3 else b_shape[:-1]
    return sequences, steps, state, kind, out_shape


def linear_recurrence(
    a: Any,
    b: Any,
    *,
    initial: Any = None,
    readout: Any = None,
    reverse: bool = False,
    time_major: bool = False,
) -> Any:
    """The states ``h[t] = a[t] · h[t-1] + b[t]`` of each sequence (from
    ``initial``, zeros by default; ``reverse``: ``h[t] = a[t] · h[t+1] +
    b[t]`` from the last step), or with ``readout`` ``c`` the outputs
    ``y[t] = c[t] · h[t]`` (so the states are never stored), as a new array
    of the inputs' framework (``float32`` or ``float64``).

    ``b`` is ``(steps,)``, ``(sequences, steps)`` or ``(sequences, steps,
    state)`` (``time_major``: steps first, as channels are often stored);
    ``a`` has ``b``'s shape without the state (a scalar a step), ``b``'s
    shape (a diagonal) or ``b``'s shape and the state again (a matrix, rows
    first); ``initial`` holds each sequence's state. Each step is a product
    then a sum, never fused, as on the GPU, so the two agree to rounding of
    the matrix sums' order only."""
    from . import _on_gpu

    if _on_gpu(b):
        from . import _gpu

        return _gpu.linear_recurrence(a, b, initial, readout, reverse, time_major)
    from . import _numpy

    b = np.ascontiguousarray(_numpy(b))
    real = _REALS.get(b.dtype.name)
    if real is None:
        raise TypeError(f"b of {b.dtype}: float32 or float64")
    arrays = [np.ascontiguousarray(_numpy(x)) if x is not None else None for x in (a, initial, readout)]
    for name, x in zip(("a", "initial", "readout"), arrays):
        if x is not None and x.dtype != b.dtype:
            raise TypeError(f"{name} of {x.dtype} beside b of {b.dtype}: one float type")
    a, initial, readout = arrays
    sequences, steps, state, kind, out_shape = _plan(
        a.shape, b.shape, None if initial is None else initial.shape, None if readout is None else readout.shape, time_major
    )
    out = _recurrence_bytes(
        real, sequences, steps, state, time_major, kind, a.tobytes(), b.tobytes(),
        initial=None if initial is None else initial.tobytes(),
        readout=None if readout is None else readout.tobytes(), reverse=reverse,
    )
    return np.frombuffer(out, dtype=b.dtype).reshape(out_shape).copy()


def spmv(row_ptr: Any, col_idx: Any, values: Any, x: Any) -> Any:
    """``y = A · x`` of the CSR matrix ``A`` of ``len(x)`` columns given by
    its row pointers (``row_ptr``, 32- or 64-bit, from 0 to the entries'
    count), each entry's column (``col_idx``, 32-bit: ``int32`` or
    ``uint32``) and value (``float32`` or ``float64``, as ``x``), as a new
    array of the inputs' framework. Each row's products are summed left to
    right on the CPU; on a GPU a segmented scan over the entries (tiles of
    entries, not rows, so power-law rows cost no imbalance) regroups them.
    The matrix is checked first (on a GPU too: the call waits for the
    verdict).

    >>> import numpy as np, gpu_scan
    >>> gpu_scan.spmv(np.int32([0, 2, 2, 3]), np.int32([0, 2, 1]), np.float32([1, 2, 3]), np.float32([1, 10, 100]))
    array([201.,   0.,  30.], dtype=float32)
    """
    from . import _on_gpu

    if _on_gpu(x):
        from . import _gpu

        return _gpu.spmv(row_ptr, col_idx, values, x)
    from . import _numpy
    from ._native import spmv_bytes

    row_ptr, col_idx, values, x = (np.ascontiguousarray(_numpy(a)) for a in (row_ptr, col_idx, values, x))
    real = _REALS.get(values.dtype.name)
    if real is None or x.dtype != values.dtype:
        raise TypeError(f"values of {values.dtype} and x of {x.dtype}: one of float32 and float64")
    if row_ptr.dtype.kind not in "iu" or row_ptr.dtype.itemsize not in (4, 8):
        raise TypeError(f"row pointers of {row_ptr.dtype}: 32- or 64-bit integers")
    if col_idx.dtype not in (np.int32, np.uint32):
        raise TypeError(f"column indices of {col_idx.dtype}: int32 or uint32")
    if (row_ptr.size and row_ptr.min() < 0) or (col_idx.size and col_idx.view(np.int32).min() < 0 and col_idx.dtype == np.int32):
        raise ValueError("negative row pointers or column indices")
    out = spmv_bytes(real, row_ptr.dtype.itemsize, len(x), row_ptr.tobytes(), col_idx.tobytes(), values.tobytes(), x.tobytes())
    return np.frombuffer(out, dtype=values.dtype).copy()
