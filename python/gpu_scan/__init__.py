"""gpu-scan for Python: associative operators written in Python, scanned.

An operator is a function of two elements (``x`` the earlier one) in a
subset of Python, decorated with :func:`op`. The decorator translates it to
gpu-scan's operator IR, which the native half checks as Rust would check a
``#[scan_op]`` (types, literals in range) and evaluates with the element
type's arithmetic (integers wrap, as NumPy's fixed-width integers do); the
same text gives the CUDA that ``#[scan_op]`` generates (``cuda_source``).

>>> import numpy as np, gpu_scan
>>> @gpu_scan.op(dtype="i32", identity=0)
... def add(x, y):
...     return x + y
>>> gpu_scan.scan(add, np.array([3, 1, 4, 1, 5], dtype=np.int32))
array([ 3,  4,  8,  9, 14], dtype=int32)
>>> gpu_scan.scan(add, np.array([3, 1, 4], dtype=np.int32), exclusive=True, init=10)
array([10, 13, 14], dtype=int32)

NumPy arrays are scanned by the CPU backend. Arrays on a GPU (PyTorch
tensors, CuPy arrays, JAX arrays) are scanned there, by the kernels ``#[scan_op]`` generates for the same
operator, on the framework's current stream, into a new array of the same
framework; :func:`backend` says whether a GPU is usable and
:func:`gpu_unavailable_reason` why not. Elements are primitives (``u8`` to
``u64``, ``i8`` to ``i64``, ``f32``, ``f64``, ``bool``) or structs of them
(a dict of fields; on a GPU an array of ``uint8`` whose last dimension is
the element's bytes, C layout).

The subset (``OPERATOR_SUBSET``): ``def f(x, y):`` with a body of
``name = value`` bindings (``name: f32 = value`` to state a type;
``name += value``), ``if``/``else`` statements whose branches return, and a
final ``return``; expressions of the operands and bound names, literals,
``+ - *``, ``/`` on floats, ``//`` and ``%`` on unsigned integers (Python's
flooring differs from Rust's truncation for negative values, so signed
integers and floats refuse them), ``& | ^ << >> ~``, comparisons (chained
too), ``and or not``, ``a if c else b``, ``min``, ``max``, ``abs``, casts
(``np.float32(x)``, ``f32(x)``), ``math.inf``, ``math.nan`` and the math
functions ``sqrt cbrt exp exp2 log log2 log10 sin cos tanh floor ceil trunc
fabs hypot copysign pow fma isnan isfinite isinf``. Anything else is an
:class:`OperatorError` naming the file and line. The arithmetic is Rust's
and the library's, as on the GPU: integers wrap, integer division by zero
gives 0, shifts take their amount modulo the width, ``min`` and ``max`` of
floats ignore a NaN, and ``not``, ``and``, ``or`` and conditions take
bools only (no truthiness of numbers).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import numpy as np

from ._native import Operator as _NativeOperator
from ._native import gpu_unavailable_reason as _gpu_unavailable_reason
from ._native import sort_bytes as _sort_bytes
from ._translate import OperatorError, StructSpec, element_of, operator_text, prim_of

__all__ = [
    "Op",
    "OperatorError",
    "Stage",
    "backend",
    "cumsum",
    "equality",
    "gpu_unavailable_reason",
    "linear_recurrence",
    "non_trivial_runs",
    "op",
    "partition",
    "predicate",
    "reduce_by_key",
    "run_length_encode",
    "scan",
    "select",
    "sort",
    "sort_key",
    "spmv",
    "SortKey",
    "argsort",
    "summed_area",
    "unique",
]

OPERATOR_SUBSET = __doc__[__doc__.index("The subset") :]

_NUMPY_DTYPES = {
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
    "bool": np.bool_,
}


class Op:
    """An associative operator written in Python (made by :func:`op`).

    Calling it combines two elements as a scan does, with the element
    type's arithmetic.
    """

    def __init__(
        self,
        function: Callable,
        dtype: Any,
        identity: Any,
        block_threads: Optional[int] = None,
        items_per_thread: Optional[int] = None,
        commutative: bool = False,
    ):
        self.function = function
        self.commutative = commutative
        element = element_of(dtype)
        self._struct = element if isinstance(element, StructSpec) else None
        translation = operator_text(function, element, identity, block_threads, items_per_thread)
        structs = self._struct.declarations() if self._struct else []
        try:
            self._native = _NativeOperator(translation.text, structs, commutative)
        except ValueError as e:
            message, place = e.args if len(e.args) == 2 else (str(e), None)
            message = message.replace(f"operator `{translation.name}`", f"operator `{function.__qualname__}`")
            # A statement's line, or the decorator's for the identity.
            line = place if isinstance(place, int) else translation.first_line if place == "identity" else None
            raise OperatorError(message, translation.filename if line is not None else None, line) from None
        functools.update_wrapper(self, function)
        if commutative:
            self._check_commutative(translation)

    def _check_commutative(self, translation) -> None:
        """Refuses ``commutative=True`` where ``f(x, y)`` and ``f(y, x)``
        differ on one of 256 pairs of random values (the laws the GPU then
        relies on, as ``#[scan_op(commutative = true)]``'s are checked)."""
        g = np.random.default_rng(0x5EED)
        samples = np.zeros(512, dtype=self.dtype)
        raw = g.integers(0, 256, samples.nbytes, dtype=np.uint8)
        for name in self.dtype.names or [None]:
            field = samples[name] if name is not None else samples
            kind = field.dtype.base.kind
            if kind == "f":
                field[...] = g.standard_normal(field.shape) * 100
            elif kind == "b":
                field[...] = g.random(field.shape) < 0.5
            else:
                field[...] = raw[: field.nbytes].view(field.dtype.base).reshape(field.shape)
        for x, y in zip(samples[:256], samples[256:]):
            xy, yx = self(x, y), self(y, x)
            same = np.array([xy], dtype=self.dtype).tobytes() == np.array([yx], dtype=self.dtype).tobytes()
            if not same:
                raise OperatorError(
                    f"operator `{self.function.__qualname__}` is declared commutative, but f(x, y) = {xy!r} "
                    f"and f(y, x) = {yx!r} for x = {x!r}, y = {y!r}",
                    translation.filename,
                    translation.first_line,
                )

    @property
    def name(self) -> str:
        """The operator's name: the prefix of its CUDA symbols."""
        return self._native.name

    @property
    def dtype(self) -> np.dtype:
        """The element type (a struct's as a structured dtype laid out as C
        lays it out)."""
        if self._struct is not None:
            return self._struct.numpy_dtype()
        return np.dtype(_NUMPY_DTYPES[self._native.element])

    @property
    def identity(self) -> Any:
        """The identity element (a struct's as a NumPy record)."""
        if self._struct is not None:
            return np.frombuffer(self._native.identity, dtype=self.dtype)[0]
        return self._native.identity

    def _element_bytes(self, value: Any) -> bytes:
        """A struct value (a record, a tuple of its fields, a dict) as the
        element's bytes."""
        if isinstance(value, dict):
            value = tuple(value[name] for name in self.dtype.names)
        return np.array([value], dtype=self.dtype).tobytes()

    @property
    def ir(self) -> str:
        """The operator's IR text, the generator's input."""
        return self._native.ir

    def cuda_source(self) -> str:
        """The operator's part of its CUDA program, as ``#[scan_op]`` writes
        it for the same operator in Rust."""
        return self._native.cuda_source()

    def wait_for_background_compiles(self) -> None:
        """Waits until the fastest kernels of this operator's GPU scans are
        loaded: its first scans run on kernels that compile quickly while
        those compile in the background. Call it before capturing its scans
        in a CUDA graph (whose warm-up scans must run on the capturing
        stream, which then has its scratch) or before timing them."""
        self._native.wait_for_background_compiles()

    def __call__(self, x: Any, y: Any) -> Any:
        if self._struct is not None:
            out = self._native.combine(self._element_bytes(x), self._element_bytes(y))
            return np.frombuffer(out, dtype=self.dtype)[0]
        return self._native.combine(x, y)

    def __repr__(self) -> str:
        return f"<gpu_scan.Op {self.function.__qualname__} over {self.dtype}>"


def op(
    dtype: Any,
    identity: Any,
    *,
    block_threads: Optional[int] = None,
    items_per_thread: Optional[int] = None,
    commutative: bool = False,
) -> Callable[[Callable], Op]:
    """Decorates a function of two elements as an associative operator.

    ``dtype`` names the element type (``"f32"``, ``"int64"``,
    ``numpy.uint32``); ``identity`` is a value with
    ``f(identity, v) == f(v, identity) == v``. ``block_threads`` and
    ``items_per_thread`` fix the GPU program's tile shape (default: chosen
    from the element's size, as for ``#[scan_op]``). ``commutative=True``
    says ``f(x, y) == f(y, x)`` (checked on random values): a
    two-dimensional scan on the GPU then reads the matrix in tiles.
    """

    element_of(dtype)  # an unknown element type fails here, not at the def

    def decorate(function: Callable) -> Op:
        return Op(function, dtype, identity, block_threads, items_per_thread, commutative)

    return decorate


def _numpy(data: Any) -> np.ndarray:
    """A host array as a NumPy array (one with DLPack only through
    ``numpy.from_dlpack``, without a copy)."""
    if hasattr(data, "__dlpack_device__") and not isinstance(data, np.ndarray):
        kind = data.__dlpack_device__()[0]
        if kind != 1:  # 1: kDLCPU; CUDA arrays (2) go to the GPU path
            raise TypeError(f"an array on DLPack device type {kind}: host (1) and CUDA (2) arrays are taken")
        if not hasattr(data, "__array__") and not hasattr(data, "__array_interface__"):
            return np.from_dlpack(data)
    return np.asarray(data)


def _host_array(data: Any, dtype: np.dtype) -> np.ndarray:
    array = _numpy(data)
    if array.dtype != dtype:
        if dtype.names is not None and array.dtype.names == dtype.names and all(
            array.dtype.fields[n][0] == dtype.fields[n][0] for n in dtype.names
        ):
            return array.astype(dtype)  # the same fields in another layout
        raise TypeError(f"the operator's elements are {dtype}, the array's {array.dtype}: convert it with .astype(...) first")
    return array


def _heads_of_keys(keys: Any, n: int) -> bytes:
    """Head flags where a key differs from the one before, bit for bit (as
    the Rust library compares keys: a NaN equals a NaN of the same bits,
    -0.0 differs from +0.0)."""
    keys = np.ascontiguousarray(np.asarray(keys))
    if keys.ndim != 1 or keys.shape[0] != n:
        raise ValueError(f"{keys.shape} keys for {n} elements: one key an element")
    if keys.dtype.kind not in "uifb":
        raise TypeError(f"keys of {keys.dtype}: integers, floats or bools")
    bits = keys.view(f"u{keys.dtype.itemsize}")
    heads = np.zeros(n, dtype=np.uint8)
    heads[1:] = bits[1:] != bits[:-1]
    return heads.tobytes()


def scan(
    operator: Op,
    data: Any,
    *,
    axis: Optional[int] = None,
    flags: Any = None,
    offsets: Any = None,
    keys: Any = None,
    exclusive: bool = False,
    reverse: bool = False,
    init: Any = None,
    totals: bool = False,
) -> Any:
    """Scans ``data`` (an array of the operator's dtype).

    Inclusive by default: ``out[i] = data[0] ∘ … ∘ data[i]``;
    ``exclusive=True`` gives ``out[i] = data[0] ∘ … ∘ data[i - 1]``
    (``out[0]`` the identity). ``init`` goes in front of the scan order of
    every line or segment; ``reverse=True`` scans from the end
    (``out[i] = data[i] ∘ … ∘ data[n - 1]``, operands kept in their
    order). Returns a new array; the input is not changed.

    Along ``axis`` as ``numpy.cumsum`` does: ``None`` scans the flattened
    array (and returns it flat), ``k`` every line along dimension ``k`` on
    its own. A one-dimensional array may instead be split into segments,
    each scanned on its own: ``flags`` (an element whose flag is true
    starts one), ``offsets`` (CSR row pointers: non-decreasing, at most
    ``len(data)``, repeated ones empty segments) or ``keys`` (a segment
    runs while the key stays the same, compared bit for bit); element 0
    always starts one.

    ``totals=True`` returns ``(out, totals)`` with each line's or
    segment's total (its carry-out: what an inclusive scan ends at, with
    ``init``): one per line along ``axis`` (shaped as ``data`` without
    it), one per segment of ``flags`` or ``keys``, one per window
    ``offsets[r]:offsets[r + 1]`` (``init``, or the identity, for an
    empty one), or the whole array's.
    """
    if not isinstance(operator, Op):
        raise TypeError(f"an operator made by gpu_scan.op expected, not {operator!r}")
    if isinstance(data, tuple) and operator._struct is not None:
        return _scan_fields(
            operator, data, axis=axis, flags=flags, offsets=offsets, keys=keys,
            exclusive=exclusive, reverse=reverse, init=init, totals=totals,
        )
    if _on_gpu(data):
        from . import _gpu

        return _gpu.scan(
            operator, data, axis=axis, flags=flags, offsets=offsets, keys=keys,
            exclusive=exclusive, reverse=reverse, init=init, totals=totals,
        )
    array = _host_array(data, operator.dtype)
    given = [name for name, value in (("flags", flags), ("offsets", offsets), ("keys", keys)) if value is not None]
    segments = {}
    if given:
        if len(given) > 1:
            raise ValueError(f"one kind of segments at a time, not {' and '.join(given)}")
        if axis is not None or array.ndim != 1:
            raise ValueError(f"{given[0]} split a one-dimensional array, not one of shape {array.shape} along an axis")
        n = array.shape[0]
        if flags is not None:
            flags = np.asarray(flags)
            if flags.shape != (n,):
                raise ValueError(f"{flags.shape} flags for {n} elements: one flag an element")
            segments["heads"] = (flags != 0).astype(np.uint8).tobytes()
        elif keys is not None:
            segments["heads"] = _heads_of_keys(keys, n)
        else:
            offsets = np.asarray(offsets)
            if offsets.ndim != 1 or (offsets.size and (offsets.dtype.kind not in "ui" or offsets.min() < 0)):
                raise ValueError("offsets are a one-dimensional array of non-negative integers")
            segments["offsets"] = [int(o) for o in offsets]
        lines, shape = array, None
    else:
        if axis is None:
            array, axis = array.reshape(-1), 0
        if not -array.ndim <= axis < array.ndim:
            raise ValueError(f"axis {axis} is out of range for an array of {array.ndim} dimensions")
        # Each line along `axis` as a row of a row-major matrix.
        lines = np.ascontiguousarray(np.moveaxis(array, axis, -1))
        shape = lines.shape
        if lines.size:
            segments["row_length"] = lines.shape[-1]
    if init is not None and operator._struct is not None:
        init = operator._element_bytes(init)
    out, sums = operator._native.scan_bytes(np.ascontiguousarray(lines).tobytes(), not exclusive, reverse, init, **segments)
    scanned = np.frombuffer(out, dtype=operator.dtype).copy()
    sums = np.frombuffer(sums, dtype=operator.dtype).copy()
    if shape is not None:
        scanned = np.ascontiguousarray(np.moveaxis(scanned.reshape(shape), -1, axis))
        if "row_length" in segments:
            sums = sums.reshape(shape[:-1])
        elif shape[:-1] and not lines.size:
            # Lines of no elements: each total is the one total of nothing,
            # `init` or the identity.
            sums = np.broadcast_to(sums, shape[:-1]).copy()
        else:
            sums = sums.reshape(())  # the flattened array's one total
    return (scanned, sums) if totals else scanned


def _field_dtypes(operator: Op) -> list:
    """The struct's fields as (name, offset, NumPy dtype), refusing fields
    that are arrays or structs (a tuple of arrays holds one array a
    primitive field)."""
    dtype = operator.dtype
    out = []
    for name in dtype.names:
        field, offset = dtype.fields[name][:2]
        if field.names is not None or field.subdtype is not None:
            raise TypeError(f"a tuple of arrays gives a struct of primitive fields; field {name!r} is {field}: pass a structured array")
        out.append((name, offset, field))
    return out


def _scan_fields(operator: Op, fields: tuple, **kw: Any) -> Any:
    """:func:`scan` of a struct operator over a tuple of arrays, one a
    field (as ``torch``'s ``associative_scan`` takes them): the arrays are
    packed into elements, scanned, and the result unpacked into a tuple of
    arrays of the same framework (the totals too)."""
    layout = _field_dtypes(operator)
    if len(fields) != len(layout):
        raise ValueError(f"{len(fields)} arrays for a struct of {len(layout)} fields ({', '.join(n for n, _, _ in layout)})")
    if _on_gpu(fields[0]):
        from . import _gpu

        pack, unpack = _gpu.pack_fields, _gpu.unpack_fields
    else:
        pack, unpack = _pack_host_fields, _unpack_host_fields
    result = scan(operator, pack(operator, layout, fields), **kw)
    if kw.get("totals"):
        out, sums = result
        return unpack(operator, layout, out), unpack(operator, layout, sums)
    return unpack(operator, layout, result)


def _pack_host_fields(operator: Op, layout: list, fields: tuple) -> np.ndarray:
    arrays = [np.asarray(f) for f in fields]
    shape = arrays[0].shape
    packed = np.zeros(shape, dtype=operator.dtype)
    for (name, _, dtype), array in zip(layout, arrays):
        if array.shape != shape:
            raise ValueError(f"field {name!r} has shape {array.shape}, the first field {shape}")
        if array.dtype != dtype:
            raise TypeError(f"field {name!r} is {dtype}, the array {array.dtype}: convert it first")
        packed[name] = array
    return packed


def _unpack_host_fields(operator: Op, layout: list, packed: np.ndarray) -> tuple:
    return tuple(np.ascontiguousarray(packed[name]) for name, _, _ in layout)


def summed_area(operator: Op, data: Any, *, exclusive: bool = False, reverse: bool = False, init: Any = None) -> Any:
    """The two-dimensional scan of a matrix (a summed-area table, an
    integral image): inclusive, ``out[r, c]`` combines the rectangle of
    rows ``0..=r`` and columns ``0..=c``; exclusive, rows ``0..r`` and
    columns ``0..c`` (the identity where that is empty); ``reverse=True``
    runs the rectangle from ``(r, c)`` to the last row and column. The
    rectangle's elements are combined row by row, each from its first
    column to its last, so the operator need not be commutative; ``init``
    comes first in scan order, once. It is the scan along the rows (same
    kind and direction) followed by the scan down the columns with
    ``init``, which is how it runs, on the CPU or the GPU as :func:`scan`
    does. ``data`` is two-dimensional (on a GPU, a struct operator's
    ``uint8`` array has the element's bytes as a third dimension).

    >>> import numpy as np, gpu_scan
    >>> x = np.arange(1, 10, dtype=np.int32).reshape(3, 3)
    >>> gpu_scan.summed_area(gpu_scan._sum("i32"), x)
    array([[ 1,  3,  6],
           [ 5, 12, 21],
           [12, 27, 45]], dtype=int32)
    """
    if not isinstance(operator, Op):
        raise TypeError(f"an operator made by gpu_scan.op expected, not {operator!r}")
    matrix_dims = len(data.shape) - (1 if _on_gpu(data) and operator._struct is not None else 0) if hasattr(data, "shape") else np.ndim(data)
    if matrix_dims != 2:
        raise ValueError(f"a summed-area table of a matrix (two dimensions), not of shape {tuple(getattr(data, 'shape', np.shape(data)))}")
    if operator.commutative and _on_gpu(data):
        from . import _gpu

        return _gpu.summed_area(operator, data, exclusive=exclusive, reverse=reverse, init=init)
    rows = scan(operator, data, axis=1, exclusive=exclusive, reverse=reverse)
    return scan(operator, rows, axis=0, exclusive=exclusive, reverse=reverse, init=init)


@functools.lru_cache(maxsize=None)
def _sum(prim: str) -> Op:
    if prim == "bool":
        raise TypeError("cumsum of bools: convert to an integer type first")
    if prim in ("f32", "f64"):

        def add(x, y):
            return x + y

        return Op(add, prim, 0.0, commutative=True)

    def wrapping_add(x, y):
        return x + y

    return Op(wrapping_add, prim, 0, commutative=True)


def cumsum(data: Any, *, axis: Optional[int] = None, exclusive: bool = False, reverse: bool = False) -> np.ndarray:
    """The running sum along ``axis`` (``None``: of the flattened array) in
    the array's own dtype (integers wrap), as ``scan`` with the sum
    operator; ``numpy.cumsum(data, axis, dtype=data.dtype)`` for the
    inclusive forward scan."""
    if _on_gpu(data):
        from . import _gpu

        return scan(_sum(_gpu.prim_of_device(data)), data, axis=axis, exclusive=exclusive, reverse=reverse)
    array = _numpy(data)
    return scan(_sum(prim_of(array.dtype)), array, axis=axis, exclusive=exclusive, reverse=reverse)


def sort(keys: Any, *, descending: bool = False, key: Any = None, offsets: Any = None) -> Any:
    """The keys sorted (a new array of the input's framework): the
    library's radix sort of integers of 8 to 64 bits and floats, on the GPU
    for arrays there, on the CPU for NumPy's. Floats are ordered by their
    bits' total order: ``-nan < -inf < … < -0.0 < +0.0 < … < inf < nan``
    (NumPy puts every NaN last and keeps ``-0.0`` and ``+0.0`` in input
    order). With ``key`` (a :func:`sort_key`), ``keys`` are records
    sorted by the key each gives, stably (on a GPU a struct's records are
    ``uint8`` bytes, one row a record). With ``offsets`` (CSR row
    pointers, as :func:`scan` takes them), each segment
    ``keys[offsets[s]:offsets[s + 1]]`` is sorted on its own (CUB's
    ``DeviceSegmentedSort``); keys outside every segment stay."""
    if key is not None:
        if offsets is not None:
            raise ValueError("sorts by a key= are not segmented: sort each segment's records on its own")
        from ._compact import sort_records

        return sort_records(keys, key, descending, indices=False)
    return _sort(keys, descending, indices=False, offsets=offsets)


def argsort(keys: Any, *, descending: bool = False, key: Any = None, offsets: Any = None) -> Any:
    """The stable permutation (``int64``) that sorts ``keys`` as
    :func:`sort` does: ``keys[argsort(keys)]`` is ``sort(keys)``, equal
    keys in input order (NumPy's ``argsort(kind="stable")`` for integers
    and floats without NaNs or signed zeros); with ``key``, the records'
    permutation by it; with ``offsets``, each segment's (indices into the
    whole array; outside every segment, each index its own)."""
    if key is not None:
        if offsets is not None:
            raise ValueError("sorts by a key= are not segmented: sort each segment's records on its own")
        from ._compact import sort_records

        return sort_records(keys, key, descending, indices=True)
    return _sort(keys, descending, indices=True, offsets=offsets)


def _sort(keys: Any, descending: bool, indices: bool, offsets: Any = None) -> Any:
    if _on_gpu(keys):
        from . import _gpu

        return _gpu.sort(keys, descending, indices, offsets)
    array = np.ascontiguousarray(_numpy(keys))
    if array.ndim != 1:
        raise ValueError(f"keys of shape {array.shape}: one dimension")
    if array.dtype.kind not in "uif":
        raise TypeError(f"keys of {array.dtype}: integers of 8 to 64 bits, f32 or f64")
    typestr = array.dtype.str.replace("=", "<")
    if offsets is not None:
        offsets = [int(o) for o in np.asarray(_numpy(offsets)).reshape(-1)]
    out = _sort_bytes(array.tobytes(), typestr, descending, indices, offsets)
    if indices:
        return np.frombuffer(out, dtype=np.uint64).astype(np.int64)
    return np.frombuffer(out, dtype=array.dtype).copy()


def _on_gpu(data: Any) -> bool:
    module = type(data).__module__
    if module.startswith("torch"):
        return bool(getattr(data, "is_cuda", False))  # without building its __cuda_array_interface__
    if module.startswith(("jax", "jaxlib")) and hasattr(data, "devices"):
        return any(d.platform == "gpu" for d in data.devices())
    if isinstance(data, np.ndarray):
        return False
    if hasattr(data, "__cuda_array_interface__"):
        return True
    # DLPack only: CUDA memory (kDLCUDA).
    return hasattr(data, "__dlpack_device__") and data.__dlpack_device__()[0] == 2


@functools.lru_cache(maxsize=None)
def _gpu_reason() -> Optional[str]:
    return _gpu_unavailable_reason()


def backend() -> str:
    """Where scans of arrays on a GPU run: ``"gpu"`` where a device, its
    driver and NVRTC are usable, else ``"cpu"`` (NumPy arrays are always
    scanned by the CPU backend)."""
    return "gpu" if _gpu_reason() is None else "cpu"


def gpu_unavailable_reason() -> Optional[str]:
    """Why scans cannot run on a GPU here (no driver, no NVRTC, no
    device), or ``None`` where they can."""
    return _gpu_reason()


from ._compact import (  # noqa: E402
    Stage,
    equality,
    non_trivial_runs,
    partition,
    predicate,
    reduce_by_key,
    run_length_encode,
    select,
    sort_key,
    SortKey,
    unique,
)
from ._recurrence import linear_recurrence, spmv  # noqa: E402
