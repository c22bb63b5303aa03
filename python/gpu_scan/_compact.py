"""Compaction: select and partition by a predicate, unique and run-length
encoding by an equality, each written in Python in the operator subset and
run by the library's compactions (``GpuSelect`` on a GPU, its CPU
functions for NumPy arrays), one pass over the input.

>>> import numpy as np, gpu_scan
>>> @gpu_scan.predicate("i32")
... def positive(x):
...     return x > 0
>>> gpu_scan.select(np.array([3, -1, 4, -1, 5], dtype=np.int32), positive)
array([3, 4, 5], dtype=int32)
>>> gpu_scan.partition(np.array([3, -1, 4, -2, 5], dtype=np.int32), positive)
(array([ 3,  4,  5, -1, -2], dtype=int32), 3)
>>> gpu_scan.unique(np.array([1, 1, 2, 2, 2, 1, 3], dtype=np.uint8))
array([1, 2, 1, 3], dtype=uint8)
>>> values, lengths = gpu_scan.run_length_encode(np.array([7, 7, 7, 2, 9, 9], dtype=np.int64))
>>> values, lengths
(array([7, 2, 9]), array([3, 1, 2]))
>>> @gpu_scan.op(dtype="f64", identity=0.0)
... def add(x, y):
...     return x + y
>>> gpu_scan.reduce_by_key(np.array([4, 4, 1, 4], dtype=np.int32), np.array([1.0, 2.0, 3.0, 4.0]), add)
(array([4, 1, 4], dtype=int32), array([3., 3., 4.]))
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ._native import SortKeyFn as _NativeSortKey
from ._native import Stage as _NativeStage
from ._translate import OperatorError, StructSpec, element_of, equal_text, prim_of, stage_text


class _Function:
    """A function of elements written in Python, translated to a text that
    builds a native object: its element type, and that object."""

    def _element(self, dtype: Any) -> Any:
        element = element_of(dtype)
        self._struct = element if isinstance(element, StructSpec) else None
        self.prim = None if self._struct is not None else element
        return element

    def _build(self, native: Any, text: str, name: Optional[str], filename: Optional[str], what: str) -> None:
        """``self._native`` from ``text``, or the :class:`OperatorError`
        naming the function (not the text's name) and the line."""
        structs = self._struct.declarations() if self._struct is not None else []
        try:
            self._native = native(text, structs)
        except ValueError as e:
            message, line = e.args if len(e.args) == 2 else (str(e), None)
            if self.function is not None and name is not None:
                qualname = self.function.__qualname__
                message = message.replace(f"stage `{name}`", f"{what} `{qualname}`").replace(f"`{name}`", f"`{qualname}`")
            raise OperatorError(message, filename if line is not None else None, line) from None
        if self.function is not None:
            functools.update_wrapper(self, self.function)

    @property
    def dtype(self) -> np.dtype:
        """The element type (a struct's as a structured dtype laid out as C
        lays it out)."""
        if self._struct is not None:
            return self._struct.numpy_dtype()
        return np.dtype(_numpy_dtype(self.prim))

    @property
    def ir(self) -> str:
        """The IR text, the generator's input."""
        return self._native.ir


class Stage(_Function):
    """A predicate (one element to ``bool``) or an equality (two
    neighbouring elements to ``bool``) written in Python, made by
    :func:`predicate` or :func:`equality`. Calling it evaluates it with the
    element type's arithmetic, as the compactions do."""

    def __init__(self, function: Optional[Callable], dtype: Any, kind: str, text: Optional[str] = None):
        self.function = function
        self.kind = kind
        element = self._element(dtype)
        name = filename = None
        if text is None:
            translation = stage_text(function, element, kind)
            text, name, filename = translation.text, translation.name, translation.filename
        self._build(_NativeStage, text, name, filename, kind)

    def cuda_source(self) -> str:
        """The stage's CUDA policy, as ``#[scan_predicate]`` or
        ``#[scan_equality]`` writes it for the same function in Rust."""
        return self._native.cuda_source()

    def __call__(self, *args: Any) -> bool:
        if self._struct is not None:
            args = tuple(_record_bytes(self.dtype, a) for a in args)
        return self._native(*args)

    def __repr__(self) -> str:
        what = self.function.__qualname__ if self.function is not None else "=="
        return f"<gpu_scan.Stage {self.kind} {what} over {self.dtype}>"


def _record_bytes(dtype: np.dtype, value: Any) -> bytes:
    """A struct value (a record, a tuple of its fields, a dict) as its
    bytes."""
    if isinstance(value, dict):
        value = tuple(value[name] for name in dtype.names)
    return np.array([value], dtype=dtype).tobytes()


def _numpy_dtype(prim: str) -> Any:
    from . import _NUMPY_DTYPES

    return _NUMPY_DTYPES[prim]


def predicate(dtype: Any) -> Callable[[Callable], Stage]:
    """Decorates a function of one element returning a ``bool`` as a
    predicate for :func:`select` and :func:`partition` (the operator
    subset; ``dtype`` an element type as :func:`gpu_scan.op` takes it:
    ``"f32"``, ``numpy.int64``, a dict of fields; a struct's type errors
    name the predicate, not yet the line)."""
    element_of(dtype)

    def decorate(function: Callable) -> Stage:
        return Stage(function, dtype, "predicate")

    return decorate


def equality(dtype: Any) -> Callable[[Callable], Stage]:
    """Decorates a function of two neighbouring elements returning a
    ``bool`` (whether they belong to one run: an equivalence, as ``==`` is
    on integers) for :func:`unique` and :func:`run_length_encode`."""
    element_of(dtype)

    def decorate(function: Callable) -> Stage:
        return Stage(function, dtype, "equality")

    return decorate


@functools.lru_cache(maxsize=None)
def _equal(prim: str) -> Stage:
    return Stage(None, prim, "equality", text=equal_text(prim))


def _stage(stage: Stage, kind: str, data: Any) -> None:
    if not isinstance(stage, Stage) or stage.kind != kind:
        raise TypeError(f"a {kind} expected (made by gpu_scan.{kind}), not {stage!r}")


def _host(stage: Stage, data: Any) -> np.ndarray:
    from . import _host_array

    array = np.ascontiguousarray(_host_array(data, stage.dtype))
    if array.ndim != 1:
        raise ValueError(f"an array of shape {array.shape}: compactions take one dimension")
    return array


def _gpu(data: Any) -> bool:
    from . import _on_gpu

    return _on_gpu(data)


def select(data: Any, predicate: Stage) -> Any:
    """The elements of ``data`` (one dimension) that ``predicate`` keeps,
    in order, as a new array of ``data``'s framework (CUB's
    ``DeviceSelect::If``; ``data[mask]`` without the mask)."""
    _stage(predicate, "predicate", data)
    if _gpu(data):
        from . import _gpu as gpu

        out, count = gpu.compact(predicate, data, "select")
        return out[:count]
    array = _host(predicate, data)
    out, count = predicate._native.select_bytes(array.tobytes())
    return np.frombuffer(out, dtype=array.dtype).copy()


def partition(data: Any, predicate: Stage, second: Optional[Stage] = None, *, rejected: str = "in_order") -> Tuple[Any, Any]:
    """The elements ``predicate`` keeps, in order, then the others, and the
    number kept (CUB's ``DevicePartition::If``). ``rejected="in_order"``
    keeps the others in input order; ``"reversed"`` writes them in reverse,
    as CUB does, one pass fewer on a GPU. With ``second``, three parts:
    those ``predicate`` keeps, then of the others those ``second`` keeps,
    then the rest, each in input order, and the first two parts' lengths
    (a pass that counts them, then the partition)."""
    _stage(predicate, "predicate", data)
    if second is not None:
        _stage(second, "predicate", data)
        if second.dtype != predicate.dtype:
            raise TypeError(f"predicates of {predicate.dtype} and {second.dtype}: one element type")
        if _gpu(data):
            from . import _gpu as gpu

            return gpu.compact(predicate, data, "partition", second=second)
        array = _host(predicate, data)
        out, counts = predicate._native.partition_three_bytes(array.tobytes(), second._native)
        return np.frombuffer(out, dtype=array.dtype).copy(), tuple(counts)
    if rejected not in ("in_order", "reversed"):
        raise ValueError(f"rejected={rejected!r}: 'in_order' or 'reversed'")
    in_order = rejected == "in_order"
    if _gpu(data):
        from . import _gpu as gpu

        return gpu.compact(predicate, data, "partition", in_order=in_order)
    array = _host(predicate, data)
    out, count = predicate._native.partition_bytes(array.tobytes(), in_order)
    return np.frombuffer(out, dtype=array.dtype).copy(), count


def _equality_for(data: Any, equal: Optional[Stage]) -> Stage:
    if equal is not None:
        _stage(equal, "equality", data)
        return equal
    if _gpu(data):
        from ._gpu import prim_of_array

        return _equal(prim_of_array(data))
    from . import _numpy

    dtype = _numpy(data).dtype
    if dtype.names is not None:
        raise TypeError("structs have no default equality: pass one made by gpu_scan.equality")
    return _equal(prim_of(dtype))


def unique(data: Any, equal: Optional[Stage] = None) -> Any:
    """The first element of each run of neighbours ``equal`` calls equal
    (default ``==``: each NaN a run of its own), in order: consecutive
    duplicates removed (CUB's ``DeviceSelect::Unique``,
    ``torch.unique_consecutive``)."""
    stage = _equality_for(data, equal)
    if _gpu(data):
        from . import _gpu as gpu

        out, count = gpu.compact(stage, data, "unique")
        return out[:count]
    array = _host(stage, data)
    return np.frombuffer(stage._native.unique_bytes(array.tobytes()), dtype=array.dtype).copy()


def run_length_encode(data: Any, equal: Optional[Stage] = None) -> Tuple[Any, Any]:
    """Each run of neighbours ``equal`` calls equal (default ``==``): its
    first element and its length (``int64``), in order (CUB's
    ``DeviceRunLengthEncode::Encode``)."""
    stage = _equality_for(data, equal)
    if _gpu(data):
        from . import _gpu as gpu

        (values, lengths), count = gpu.compact(stage, data, "run_length_encode")
        return values[:count], lengths[:count]
    array = _host(stage, data)
    values, lengths = stage._native.run_length_encode_bytes(array.tobytes())
    return (
        np.frombuffer(values, dtype=array.dtype).copy(),
        np.frombuffer(lengths, dtype=np.uint64).astype(np.int64),
    )


def non_trivial_runs(data: Any, equal: Optional[Stage] = None) -> Tuple[Any, Any]:
    """The runs of two or more neighbours ``equal`` calls equal (default
    ``==``): each one's offset in ``data`` and its length (``int64``), in
    order (CUB's ``DeviceRunLengthEncode::NonTrivialRuns``)."""
    stage = _equality_for(data, equal)
    if _gpu(data):
        from . import _gpu as gpu

        (offsets, lengths), count = gpu.compact(stage, data, "non_trivial_runs")
        return offsets[:count], lengths[:count]
    array = _host(stage, data)
    offsets, lengths = stage._native.non_trivial_runs_bytes(array.tobytes())
    as_int64 = lambda b: np.frombuffer(b, dtype=np.uint64).astype(np.int64)  # noqa: E731
    return as_int64(offsets), as_int64(lengths)


def reduce_by_key(keys: Any, values: Any, operator: Any, equal: Optional[Stage] = None) -> Tuple[Any, Any]:
    """For each run of neighbouring ``keys`` that ``equal`` calls equal
    (default ``==``), its first key and the combination by ``operator`` (a
    :func:`gpu_scan.op`, commutative or not) of its values, in order
    (CUB's ``DeviceReduce::ReduceByKey``, one pass on a GPU). ``values``
    are one an element, as :func:`gpu_scan.scan` takes them (a struct
    operator's as ``uint8`` bytes on a GPU). Floats are combined left to
    right on the CPU; a GPU groups them otherwise (never reorders them)."""
    stage = _equality_for(keys, equal)
    if _gpu(keys) or _gpu(values):
        if not (_gpu(keys) and _gpu(values)):
            raise TypeError("keys and values on one device: both on a GPU, or both NumPy arrays")
        from . import _gpu as gpu

        return gpu.reduce_by_key(stage, operator, keys, values)
    from . import scan

    array = _host(stage, keys)
    firsts, lengths = run_length_encode(array, stage)
    offsets = np.zeros(len(lengths) + 1, dtype=np.uint64)
    np.cumsum(lengths, out=offsets[1:])
    if len(values) != len(array):
        raise ValueError(f"{len(values)} values for {len(array)} keys: one value a key")
    _, totals = scan(operator, values, offsets=offsets, totals=True)
    return firsts, totals


class SortKey(_Function):
    """A function of a record giving its sort key (one primitive, or a
    tuple of primitives compared most significant first), made by
    :func:`sort_key`: what :func:`gpu_scan.sort` and :func:`gpu_scan.argsort`
    order records by (``key=``). Calling it gives a record's key."""

    kind = "sort key"

    def __init__(self, function: Callable, dtype: Any, key: Any):
        from ._translate import sort_key_text

        self.function = function
        element = self._element(dtype)
        components = [prim_of(k) for k in (key if isinstance(key, (tuple, list)) else (key,))]
        if not 1 <= len(components) <= 4 or "bool" in components:
            raise OperatorError(f"a sort key of {components}: one to four integers or floats")
        self.components = tuple(components)
        translation = sort_key_text(function, element, components)
        self._build(_NativeSortKey, translation.text, translation.name, translation.filename, "sort key")

    def cuda_source(self) -> str:
        """The key's CUDA policy, as ``#[sort_key]`` writes it for the same
        function in Rust."""
        return self._native.cuda_source()

    def __call__(self, record: Any) -> Any:
        key = self._native.key_of(_record_bytes(self.dtype, record))
        return key if len(key) > 1 else key[0]

    def __repr__(self) -> str:
        return f"<gpu_scan.SortKey {self.function.__qualname__} over {self.dtype}>"


def sort_key(dtype: Any, key: Any) -> Callable[[Callable], SortKey]:
    """Decorates a function of one record (``dtype``: a primitive, or a
    dict of fields) returning its sort key in the operator subset: one
    value of type ``key``, or a tuple of values of the types in ``key``
    (a tuple), compared most significant first. Integers sort by value,
    floats by their bits' total order (``-0.0`` as ``+0.0``, NaNs at the
    ends), as :func:`gpu_scan.sort` sorts keys."""
    element_of(dtype)

    def decorate(function: Callable) -> SortKey:
        return SortKey(function, dtype, key)

    return decorate


def sort_records(records: Any, key: SortKey, descending: bool, indices: bool) -> Any:
    """:func:`gpu_scan.sort` and :func:`gpu_scan.argsort` by ``key``:
    stable, each component descending where ``descending``."""
    if not isinstance(key, SortKey):
        raise TypeError(f"key= takes a sort key made by gpu_scan.sort_key, not {key!r}")
    if _gpu(records):
        from . import _gpu as gpu

        return gpu.sort_by_key(key, records, descending, indices)
    array = _host(key, records)
    order = np.frombuffer(key._native.argsort_bytes(array.tobytes(), descending), dtype=np.uint64).astype(np.int64)
    return order if indices else array[order]
