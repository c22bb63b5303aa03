"""Scans of arrays on a GPU: PyTorch tensors and CuPy arrays (read through
``__cuda_array_interface__``), by the native half's ``gpu_scan`` on the
framework's current stream, into new arrays of the same framework.

A primitive operator takes an array of its dtype; a struct operator an
array of ``uint8`` whose last dimension is the element's size (its bytes,
C layout: ``Op.dtype`` says where each field lies). Arrays must be
C-contiguous (``.contiguous()``, ``cupy.ascontiguousarray``)."""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

_TYPESTR = {
    "u8": "|u1", "u16": "<u2", "u32": "<u4", "u64": "<u8",
    "i8": "|i1", "i16": "<i2", "i32": "<i4", "i64": "<i8",
    "f32": "<f4", "f64": "<f8", "bool": "|b1",
}
_PRIM_OF_TYPESTR = {v: k for k, v in _TYPESTR.items()}
_PRIM_OF_TYPESTR["<b1"] = "bool"


class _Framework:
    """How to allocate and move arrays of the input's framework."""

    def __init__(self, data: Any):
        module = type(data).__module__.split(".")[0]
        if module == "torch":
            import torch

            self.name, self.xp, self.device = "torch", torch, data.device.index or 0
        elif module == "cupy":
            import cupy

            self.name, self.xp, self.device = "cupy", cupy, data.device.id
        else:
            raise TypeError(
                f"arrays on a GPU from {module!r}: PyTorch tensors, CuPy arrays and JAX arrays are scanned there; "
                "copy others to one of them or to NumPy"
            )

    def finish(self, array: Any) -> Any:
        """An array the scan wrote, as the caller's framework holds it."""
        return array

    def items_u64(self, counts: Any) -> list:
        """The values of a small device array of counts (waits for them)."""
        return [int(c) for c in (counts.tolist() if self.name == "torch" else counts.get().tolist())]

    def item_u64(self, count: Any) -> int:
        """The value of a one-element device array (waits for it)."""
        return self.items_u64(count)[0]

    def stream(self) -> int:
        """The framework's current stream on the array's device."""
        if self.name == "torch":
            raw = getattr(self.xp._C, "_cuda_getCurrentRawStream", None)  # what Triton asks
            if raw is not None:
                return raw(self.device)
            return self.xp.cuda.current_stream(self.device).cuda_stream
        with self.xp.cuda.Device(self.device):
            return self.xp.cuda.get_current_stream().ptr

    def empty(self, shape: Tuple[int, ...], like: Any) -> Any:
        if self.name == "torch":
            return self.xp.empty(shape, dtype=like.dtype, device=like.device)
        with self.xp.cuda.Device(self.device):
            return self.xp.empty(shape, dtype=like.dtype)

    def empty_u64(self, n: int = 1) -> Any:
        if self.name == "torch":
            return self.xp.zeros(n, dtype=self.xp.int64, device=f"cuda:{self.device}")
        with self.xp.cuda.Device(self.device):
            return self.xp.zeros(n, dtype=self.xp.uint64)

    def on_device(self, values: Any, like: Any) -> Any:
        """``values`` (host or device) as a C-contiguous array of the
        framework on the input's device."""
        if self.name == "torch":
            t = values if isinstance(values, self.xp.Tensor) else self.xp.as_tensor(np.asarray(values))
            return t.to(like.device).contiguous()
        with self.xp.cuda.Device(self.device):
            return self.xp.ascontiguousarray(self.xp.asarray(values))

    def moveaxis(self, data: Any, source: int, destination: int) -> Any:
        if self.name == "torch":
            return self.xp.movedim(data, source, destination).contiguous()
        return self.xp.ascontiguousarray(self.xp.moveaxis(data, source, destination))

    def nonzero_bytes(self, flags: Any) -> Any:
        """Byte flags (0 or 1) of ``flags != 0``."""
        return (flags != 0).contiguous() if self.name == "torch" else self.xp.ascontiguousarray(flags != 0)


_TORCH_TYPESTR: dict = {}


def _torch_typestr(dtype: Any) -> str:
    if not _TORCH_TYPESTR:
        import torch

        _TORCH_TYPESTR.update({
            torch.uint8: "|u1", torch.int8: "|i1", torch.int16: "<i2", torch.int32: "<i4",
            torch.int64: "<i8", torch.float32: "<f4", torch.float64: "<f8", torch.bool: "|b1",
        })
        for name, typestr in (("uint16", "<u2"), ("uint32", "<u4"), ("uint64", "<u8")):
            if hasattr(torch, name):
                _TORCH_TYPESTR[getattr(torch, name)] = typestr
    return _TORCH_TYPESTR.get(dtype, str(dtype))


def is_torch(data: Any) -> bool:
    return type(data).__module__.startswith("torch")


class _PackageMemory:
    """Arrays of a framework the package cannot allocate through: scanned
    on the package's own stream into memory of the package's
    (``DeviceBuffer``), which the framework then owns through DLPack
    without a copy (``finish``)."""

    def __init__(self, device: int):
        from ._native import DeviceBuffer

        self.buffer, self.device = DeviceBuffer, device

    def stream(self) -> int:
        from ._native import own_stream

        return own_stream(self.device)

    def empty(self, shape: Tuple[int, ...], like: Any) -> Any:
        return self.buffer(self.device, list(shape), _interface(like, "the array")["typestr"])

    def empty_u64(self, n: int = 1) -> Any:
        return self.buffer(self.device, [n], "<u8")

    def on_device(self, values: Any, like: Any) -> Any:
        host = np.ascontiguousarray(np.asarray(values))
        typestr = host.dtype.str if host.dtype != np.bool_ else "|b1"
        return self.buffer(self.device, list(host.shape), typestr, host.tobytes())

    def items_u64(self, counts: Any) -> list:
        return [int(c) for c in np.frombuffer(counts.to_bytes(), dtype=np.uint64)]

    def item_u64(self, count: Any) -> int:
        return self.items_u64(count)[0]


class _Jax(_PackageMemory):
    """JAX arrays: read through their array interface once computed
    (``block_until_ready``), handed back through ``jax.dlpack``."""

    name = "jax"

    def __init__(self, data: Any):
        import jax

        self.jax = jax
        devices = list(data.devices())
        if len(devices) != 1 or devices[0].platform != "gpu":
            raise ValueError(f"a JAX array on one GPU, not on {devices}")
        local = getattr(devices[0], "local_hardware_id", None)
        super().__init__(local if local is not None else devices[0].id)
        data.block_until_ready()

    def _ready(self, array: Any) -> Any:
        if isinstance(array, self.jax.Array):
            array.block_until_ready()
        return array

    def on_device(self, values: Any, like: Any) -> Any:
        if isinstance(values, self.jax.Array):
            return self._ready(self.jax.device_put(values, next(iter(like.devices()))))
        return super().on_device(values, like)

    def moveaxis(self, data: Any, source: int, destination: int) -> Any:
        return self._ready(self.jax.numpy.moveaxis(self.finish(data), source, destination))

    def nonzero_bytes(self, flags: Any) -> Any:
        return self._ready(self.finish(flags) != 0)

    def finish(self, array: Any) -> Any:
        if isinstance(array, self.buffer):
            return self.jax.dlpack.from_dlpack(array)
        return array


class _Dlpack(_PackageMemory):
    """Arrays on a GPU with DLPack only (``__dlpack__``, no
    ``__cuda_array_interface__``): read through a capsule taken for our
    stream (the producer orders its work before it), results handed back
    through the array's namespace's ``from_dlpack`` (the array API
    standard's ``__array_namespace__``), or as the package's
    ``DeviceBuffer`` (DLPack and ``__cuda_array_interface__``) where it
    has none."""

    name = "dlpack"

    def __init__(self, data: Any):
        kind, device = data.__dlpack_device__()
        if kind != _DL_CUDA:
            raise TypeError(f"a DLPack array on device type {kind}: CUDA (2) arrays are scanned on a GPU")
        super().__init__(int(device))
        namespace = getattr(data, "__array_namespace__", None)
        self.xp = namespace() if namespace is not None else None

    def moveaxis(self, data: Any, source: int, destination: int) -> Any:
        raise NotImplementedError("scans along an inner axis of DLPack-only arrays: move the axis last first")

    def nonzero_bytes(self, flags: Any) -> Any:
        if self.xp is None:
            raise TypeError("device flags of a DLPack array without an array namespace: pass them as bytes (0 or 1)")
        return self.xp.astype(flags != 0, self.xp.uint8)

    def finish(self, array: Any) -> Any:
        if isinstance(array, self.buffer) and self.xp is not None and hasattr(self.xp, "from_dlpack"):
            return self.xp.from_dlpack(array)
        return array


# DLPack's device type of CUDA memory.
_DL_CUDA = 2


def _dlpack_interface(data: Any) -> dict:
    """The array interface of a DLPack-only device array, from a capsule
    taken for the package's stream of its device; the view that holds the
    capsule rides along in the dictionary (``"_owner"``), so the
    producer's tensor is held as long as the interface is."""
    from ._native import DlpackView, own_stream

    kind, device = data.__dlpack_device__()
    if kind != _DL_CUDA:
        raise TypeError(f"a DLPack array on device type {kind}: CUDA (2) arrays are scanned on a GPU")
    try:
        capsule = data.__dlpack__(stream=own_stream(int(device)))
    except TypeError:  # a producer of DLPack before streams
        capsule = data.__dlpack__()
    view = DlpackView(capsule)
    cai = dict(view.__cuda_array_interface__)
    cai["_owner"] = view
    return cai


def _framework(data: Any) -> Any:
    module = type(data).__module__.split(".")[0]
    if module in ("jax", "jaxlib"):
        return _Jax(data)
    if module in ("torch", "cupy") or not hasattr(data, "__dlpack__"):
        return _Framework(data)
    return _Dlpack(data)


def _interface(data: Any, what: str) -> dict:
    """The array's shape, typestr and address: a PyTorch tensor's from its
    own attributes (its ``__cuda_array_interface__`` is built in Python, a
    few microseconds a read), any other's from that interface."""
    if is_torch(data):
        if not data.is_contiguous():
            raise ValueError(f"{what} is not C-contiguous: make it so first (.contiguous(), cupy.ascontiguousarray)")
        return {"shape": tuple(data.shape), "typestr": _torch_typestr(data.dtype), "data": (data.data_ptr(), False)}
    cai = data.__cuda_array_interface__ if hasattr(data, "__cuda_array_interface__") else _dlpack_interface(data)
    shape, strides = tuple(cai["shape"]), cai.get("strides")
    if strides is not None:
        itemsize = int(cai["typestr"][2:])
        expected, step = [], itemsize
        for extent in reversed(shape):
            expected.append(step)
            step *= extent
        if tuple(reversed(expected)) != tuple(strides) and int(np.prod(shape)) > 1:
            raise ValueError(f"{what} is not C-contiguous: make it so first (.contiguous(), cupy.ascontiguousarray)")
    return cai


def _address(data: Any, what: str) -> int:
    return int(_interface(data, what)["data"][0])


def _framework_dtype(fw: "_Framework", dtype: np.dtype) -> Any:
    if fw.name == "torch":
        return fw.xp.from_numpy(np.empty(0, dtype=dtype)).dtype
    return dtype


def pack_fields(operator, layout: list, fields: tuple) -> Any:
    """Device arrays, one a primitive field, packed into the ``uint8``
    elements the GPU path scans (the struct's C layout, padding zero)."""
    fw = _framework(fields[0])
    if fw.name == "jax":
        raise TypeError("a tuple of JAX arrays: pass the elements' bytes as one uint8 array")
    shape = tuple(fields[0].shape)
    size = operator.dtype.itemsize
    if fw.name == "torch":
        packed = fw.xp.zeros(shape + (size,), dtype=fw.xp.uint8, device=fields[0].device)
    else:
        with fw.xp.cuda.Device(fw.device):
            packed = fw.xp.zeros(shape + (size,), dtype=fw.xp.uint8)
    for (name, offset, dtype), field in zip(layout, fields):
        if tuple(field.shape) != shape:
            raise ValueError(f"field {name!r} has shape {tuple(field.shape)}, the first field {shape}")
        if _interface(field, f"field {name!r}")["typestr"] != dtype.str.replace("=", "<"):
            raise TypeError(f"field {name!r} is {dtype}, the array {field.dtype}: convert it first")
        width = dtype.itemsize
        flat = field.reshape(-1)
        raw = flat.view(fw.xp.uint8) if fw.name == "torch" else flat.view(np.uint8)
        packed[..., offset : offset + width] = raw.reshape(shape + (width,))
    return packed


def unpack_fields(operator, layout: list, packed: Any) -> tuple:
    """The fields of ``uint8`` elements, each as an array of its type."""
    fw = _Framework(packed)
    shape = tuple(packed.shape)[:-1]
    out = []
    for _, offset, dtype in layout:
        part = packed[..., offset : offset + dtype.itemsize]
        part = part.contiguous() if fw.name == "torch" else fw.xp.ascontiguousarray(part)
        out.append(part.view(_framework_dtype(fw, dtype)).reshape(shape))
    return tuple(out)


def prim_of_device(data: Any) -> str:
    """The element type of a device array (for ``cumsum``)."""
    typestr = _interface(data, "the array")["typestr"]
    if typestr not in _PRIM_OF_TYPESTR:
        raise TypeError(f"device arrays of {typestr}: integers, floats or bools")
    return _PRIM_OF_TYPESTR[typestr]


def _elements(operator, cai: dict) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """The shape of the operator's elements in an array, and what follows
    it (a struct's bytes: the last dimension)."""
    shape = tuple(cai["shape"])
    size = operator._native.element_size
    if operator._struct is not None:
        # Elements as bytes: the last dimension is one element.
        if cai["typestr"] != "|u1" or not shape or shape[-1] != size:
            raise TypeError(
                f"a struct operator scans uint8 arrays whose last dimension is its {size} bytes, "
                f"not {cai['typestr']} of shape {shape}"
            )
        return shape[:-1], (size,)
    expected = _TYPESTR[operator._native.element]
    if cai["typestr"] != expected and not (expected == "|b1" and cai["typestr"] == "<b1"):
        raise TypeError(
            f"the operator's elements are {operator.dtype}, the array's {cai['typestr']}: convert it first"
        )
    return shape, ()


def scan(operator, data: Any, *, axis, flags, offsets, keys, exclusive, reverse, init, totals):
    fw = _framework(data)
    cai = _interface(data, "the array")
    address = int(cai["data"][0])
    shape, tail = _elements(operator, cai)
    init_bytes: Optional[bytes] = None
    if init is not None:
        init_bytes = operator._element_bytes(init) if operator._struct is not None else np.array([init], dtype=operator.dtype).tobytes()
    stream = fw.stream()
    n = math.prod(shape)
    given = [name for name, value in (("flags", flags), ("offsets", offsets), ("keys", keys)) if value is not None]
    native = operator._native
    common = dict(inclusive=not exclusive, reverse=reverse, init=init_bytes)
    if given:
        if len(given) > 1:
            raise ValueError(f"one kind of segments at a time, not {' and '.join(given)}")
        if axis is not None or len(shape) != 1:
            raise ValueError(f"{given[0]} split a one-dimensional array, not one of shape {shape} along an axis")
        out = fw.empty(shape + tail, data)
        kw = {}
        if flags is not None:
            f = fw.on_device(flags, data)
            if tuple(f.shape) != shape:
                raise ValueError(f"{tuple(f.shape)} flags for {n} elements: one flag an element")
            f = fw.nonzero_bytes(f)
            kw["heads"] = _address(f, "flags")
            keep = f
        elif keys is not None:
            k = fw.on_device(keys, data)
            if tuple(k.shape) != shape:
                raise ValueError(f"{tuple(k.shape)} keys for {n} elements: one key an element")
            kcai = _interface(k, "keys")
            if kcai["typestr"] not in _PRIM_OF_TYPESTR:
                raise TypeError(f"keys of {kcai['typestr']}: integers, floats or bools")
            kw["keys"] = (int(kcai["data"][0]), int(kcai["typestr"][2:]))
            keep = k
        else:
            o = fw.on_device(offsets, data)
            ocai = _interface(o, "offsets")
            if len(o.shape) != 1 or ocai["typestr"][1] not in "ui" or ocai["typestr"][2:] not in ("4", "8"):
                raise ValueError("offsets are a one-dimensional array of 32- or 64-bit integers")
            kw["offsets"] = (int(ocai["data"][0]), int(o.shape[0]), int(ocai["typestr"][2:]))
            keep = o
        sums, count = None, None
        if totals:
            slots = n if offsets is None else max(int(o.shape[0]) - 1, 0)
            sums = fw.empty((max(slots, 1),) + tail, data)
            kw["totals"] = (_address(sums, "totals"), slots if offsets is not None else n)
            if offsets is None:
                count = fw.empty_u64()
                kw["count"] = _address(count, "count")
        native.gpu_scan(fw.device, stream, address, _address(out, "the output"), n, **common, **kw)
        del keep
        out = fw.finish(out)
        if not totals:
            return out
        if count is not None:
            sums = fw.finish(sums)[: fw.item_u64(count)]
        else:
            sums = fw.finish(sums)[:slots]
        return out, sums
    # Along an axis: None the flattened array, the last one rows, the first
    # of a matrix its columns, others the last after a move.
    if axis is None:
        lines_shape, row, moved = (n,), None, None
        source = data
    else:
        ndim = len(shape)
        if not -ndim <= axis < ndim:
            raise ValueError(f"axis {axis} is out of range for an array of {ndim} dimensions")
        axis %= ndim
        if axis == ndim - 1:
            source, moved = data, None
        elif ndim == 2 and axis == 0 and not totals:
            out = fw.empty(shape + tail, data)
            if n:
                native.gpu_scan(fw.device, stream, address, _address(out, "the output"), n, columns=shape[1], **common)
            return fw.finish(out)
        else:
            source, moved = fw.moveaxis(data, axis, ndim - 1), axis
        lines_shape = tuple(source.shape)[: len(shape)]
        row = lines_shape[-1]
    out = fw.empty(lines_shape + tail, data)
    lines = math.prod(lines_shape[:-1]) if row is not None else 1
    sums = fw.empty((lines,) + tail, data) if totals else None
    if n:
        kw = {"row_length": row} if row is not None else {}
        if totals:
            kw["totals"] = (_address(sums, "totals"), lines)
        native.gpu_scan(fw.device, stream, _address(source, "the array"), _address(out, "the output"), n, **common, **kw)
    elif totals and lines:
        # Totals of nothing: the initial value, or the identity.
        empty = init_bytes if init_bytes is not None else np.array([operator.identity], dtype=operator.dtype).tobytes()
        host = np.frombuffer(empty * lines, dtype=np.uint8 if tail else operator.dtype).reshape((lines,) + tail)
        sums = fw.on_device(host, data)
    out = fw.finish(out)
    if moved is not None:
        out = fw.moveaxis(out, len(shape) - 1, moved)
    if not totals:
        return out
    sums = fw.finish(sums)
    if axis is None:
        return out, sums.reshape(tail)
    return out, sums.reshape(lines_shape[:-1] + tail)


def sort(keys: Any, descending: bool, indices: bool, offsets: Any = None) -> Any:
    """:func:`gpu_scan.sort` and :func:`gpu_scan.argsort` of a device array
    (by segments with ``offsets``)."""
    from ._native import gpu_sort

    fw = _framework(keys)
    cai = _interface(keys, "the keys")
    shape = tuple(cai["shape"])
    if len(shape) != 1:
        raise ValueError(f"keys of shape {shape}: one dimension")
    n = shape[0]
    stream = fw.stream()
    if offsets is not None:
        return _segmented_sort(fw, keys, cai, n, descending, indices, offsets)
    if indices:
        order = _int64s(fw, n, keys)
        if n:
            gpu_sort(fw.device, stream, int(cai["data"][0]), n, cai["typestr"], descending, _address(order, "the indices"))
        return fw.finish(order)
    if fw.name == "jax":
        return keys[sort(keys, descending, True)]  # JAX's arrays are not written in place: gather
    out = keys.clone() if fw.name == "torch" else fw.xp.array(keys, copy=True)
    if n:
        gpu_sort(fw.device, stream, _address(out, "the output"), n, cai["typestr"], descending)
    return out


def _segmented_sort(fw: Any, keys: Any, cai: dict, n: int, descending: bool, indices: bool, offsets: Any) -> Any:
    """Each segment of the device keys that ``offsets`` cut sorted on its
    own, in a copy (or the copy's permutation, carried along as values
    from ``0..n``)."""
    from ._native import gpu_sort

    if fw.name not in ("torch", "cupy"):
        raise TypeError("segmented sorts of device arrays take PyTorch tensors and CuPy arrays")
    o = offsets if _on_device(offsets) else fw.on_device(np.asarray(offsets, dtype=np.int64), keys)
    oc = _interface(o, "the offsets")
    if oc["typestr"] not in ("<i4", "<u4", "<i8", "<u8") or len(oc["shape"]) != 1:
        raise TypeError(f"offsets of {oc['typestr']} and shape {tuple(oc['shape'])}: one dimension of 32- or 64-bit integers")
    out = keys.clone() if fw.name == "torch" else fw.xp.array(keys, copy=True)
    order = None
    if indices:
        if fw.name == "torch":
            order = fw.xp.arange(n, dtype=fw.xp.int64, device=keys.device)
        else:
            with fw.xp.cuda.Device(fw.device):
                order = fw.xp.arange(n, dtype=fw.xp.int64)
    if n:
        gpu_sort(
            fw.device, fw.stream(), _address(out, "the output"), n, cai["typestr"], descending,
            None if order is None else _address(order, "the indices"),
            (int(oc["data"][0]), int(oc["shape"][0]), int(oc["typestr"][2:])),
        )
    return order if indices else out


def _int64s(fw: Any, n: int, like: Any) -> Any:
    """An uninitialized ``int64`` array of ``n`` on ``like``'s device."""
    if fw.name == "torch":
        return fw.xp.empty(n, dtype=fw.xp.int64, device=like.device)
    if fw.name == "cupy":
        with fw.xp.cuda.Device(fw.device):
            return fw.xp.empty(n, dtype=fw.xp.int64)
    return fw.buffer(fw.device, [n], "<i8")


def prim_of_array(data: Any) -> str:
    """The element type of a device array, by its Rust name."""
    typestr = _interface(data, "the array")["typestr"]
    if typestr not in _PRIM_OF_TYPESTR:
        raise TypeError(f"an array of {typestr}: integers of 8 to 64 bits, f32, f64 or bool")
    return _PRIM_OF_TYPESTR[typestr]


def _can_cut(fw: Any) -> None:
    """Refuses a compaction whose results could not be cut to their count:
    a DLPack-only array's without an array namespace to hand them back."""
    if fw.name == "dlpack" and fw.xp is None:
        raise TypeError(
            "compactions of an array with DLPack only need its array namespace (__array_namespace__) "
            "to give the results back; convert it to a PyTorch, CuPy or JAX array first"
        )


def _stage_elements(stage, cai: dict) -> Tuple[int, ...]:
    """The shape of a stage's elements in a one-dimensional array of them
    (a struct's as ``uint8`` whose last dimension is its bytes)."""
    shape = tuple(cai["shape"])
    if stage._struct is not None:
        size = stage._native.element_size
        if cai["typestr"] != "|u1" or len(shape) != 2 or shape[1] != size:
            raise TypeError(
                f"a struct {stage.kind} takes a uint8 array of shape (n, {size}), not {cai['typestr']} of shape {shape}"
            )
        return shape[:1]
    if len(shape) != 1:
        raise ValueError(f"an array of shape {shape}: compactions take one dimension")
    if _PRIM_OF_TYPESTR.get(cai["typestr"]) != stage.prim:
        raise TypeError(f"the {stage.kind}'s elements are {stage.prim}, the array's {cai['typestr']}: convert it first")
    return shape


def compact(stage, data: Any, kind: str, in_order: bool = True, second: Any = None) -> Any:
    """A compaction (``kind``: ``select``, ``partition`` (three ways with
    ``second``), ``unique``, ``run_length_encode`` or
    ``non_trivial_runs``) of a one-dimensional device array by ``stage``
    on the framework's current stream, into new arrays of the framework,
    and the count (two for a three-way partition; read back: the call
    waits for it)."""
    fw = _framework(data)
    _can_cut(fw)
    cai = _interface(data, "the array")
    shape = _stage_elements(stage, cai)
    n = shape[0]
    out = _int64s(fw, n, data) if kind == "non_trivial_runs" else fw.empty(tuple(cai["shape"]), data)
    count = fw.empty_u64(2 if second is not None else 1)
    lengths = _int64s(fw, n, data) if kind in ("run_length_encode", "non_trivial_runs") else None
    if n:
        stage._native.gpu_compact(
            fw.device, fw.stream(), kind, int(cai["data"][0]), n, _address(out, "the output"),
            _address(count, "the count"),
            lengths=None if lengths is None else _address(lengths, "the lengths"), in_order=in_order,
            second=None if second is None else second._native,
        )
        counts = fw.items_u64(count)
    else:
        counts = [0, 0]
    kept = tuple(counts) if second is not None else counts[0]
    out = fw.finish(out)
    if lengths is not None:
        return (out, fw.finish(lengths)), kept
    return out, kept


def reduce_by_key(stage, operator, keys: Any, values: Any) -> Tuple[Any, Any]:
    """:func:`gpu_scan.reduce_by_key` of device arrays, in one pass."""
    from ._native import gpu_reduce_by_key

    fw = _framework(keys)
    _can_cut(fw)
    kc = _interface(keys, "the keys")
    vc = _interface(values, "the values")
    (n,) = _stage_elements(stage, kc)
    shape, tail = _elements(operator, vc)
    if shape != (n,):
        raise ValueError(f"{shape} values for {n} keys: one value a key")
    keys_out = fw.empty(tuple(kc["shape"]), keys)
    values_out = fw.empty((n,) + tail, values)
    count = fw.empty_u64()
    runs = 0
    if n:
        gpu_reduce_by_key(
            stage._native, operator._native, fw.device, fw.stream(), int(kc["data"][0]), int(vc["data"][0]), n,
            _address(keys_out, "the keys' output"), _address(values_out, "the values' output"), _address(count, "the count"),
        )
        runs = fw.item_u64(count)
    return fw.finish(keys_out)[:runs], fw.finish(values_out)[:runs]


def sort_by_key(key, data: Any, descending: bool, indices: bool) -> Any:
    """:func:`gpu_scan.sort` and :func:`gpu_scan.argsort` of device records
    by a :class:`gpu_scan.SortKey`."""
    fw = _framework(data)
    cai = _interface(data, "the records")
    (n,) = _stage_elements(key, cai)
    stream = fw.stream()
    if indices:
        order = _int64s(fw, n, data)
        if n:
            key._native.gpu_sort(fw.device, stream, int(cai["data"][0]), n, descending, _address(order, "the indices"))
        return fw.finish(order)
    if fw.name not in ("torch", "cupy"):
        return data[sort_by_key(key, data, descending, True)]  # not written in place: gather
    out = data.clone() if fw.name == "torch" else fw.xp.array(data, copy=True)
    if n:
        key._native.gpu_sort(fw.device, stream, _address(out, "the output"), n, descending)
    return out


def linear_recurrence(a: Any, b: Any, initial: Any, readout: Any, reverse: bool, time_major: bool) -> Any:
    """:func:`gpu_scan.linear_recurrence` of device arrays, on the
    framework's current stream, into a new array of the framework."""
    from ._native import gpu_recurrence
    from ._recurrence import _plan

    fw = _framework(b)
    interfaces = {}
    for name, x in (("a", a), ("b", b), ("initial", initial), ("readout", readout)):
        if x is not None:
            if not _on_device(x):
                raise TypeError(f"{name} is not on the GPU beside b: pass every array on one device")
            interfaces[name] = _interface(x, name)
    typestr = interfaces["b"]["typestr"]
    real = {"<f4": "f32", "<f8": "f64"}.get(typestr)
    if real is None:
        raise TypeError(f"b of {typestr}: float32 or float64")
    for name, cai in interfaces.items():
        if cai["typestr"] != typestr:
            raise TypeError(f"{name} of {cai['typestr']} beside b of {typestr}: one float type")
    shape = lambda name: tuple(interfaces[name]["shape"]) if name in interfaces else None  # noqa: E731
    sequences, steps, state, kind, out_shape = _plan(shape("a"), shape("b"), shape("initial"), shape("readout"), time_major)
    out = fw.empty(out_shape, b)
    arg = lambda name: (int(interfaces[name]["data"][0]), math.prod(shape(name))) if name in interfaces else None  # noqa: E731
    if math.prod(out_shape):
        gpu_recurrence(
            fw.device, fw.stream(), real, sequences, steps, state, time_major, kind, arg("a"), arg("b"),
            (_address(out, "the output"), math.prod(out_shape)), initial=arg("initial"), readout=arg("readout"),
            reverse=reverse,
        )
    return fw.finish(out)


def spmv(row_ptr: Any, col_idx: Any, values: Any, x: Any) -> Any:
    """:func:`gpu_scan.spmv` of device arrays (row pointers and column
    indices may be host arrays, copied there)."""
    from ._native import gpu_spmv

    fw = _framework(x)
    row_ptr, col_idx = (a if _on_device(a) else fw.on_device(np.asarray(a), x) for a in (row_ptr, col_idx))
    if not _on_device(values):
        raise TypeError("values on the host beside x on the GPU: pass them on one device")
    cai = {name: _interface(a, name) for name, a in (("row_ptr", row_ptr), ("col_idx", col_idx), ("values", values), ("x", x))}
    real = {"<f4": "f32", "<f8": "f64"}.get(cai["values"]["typestr"])
    if real is None or cai["x"]["typestr"] != cai["values"]["typestr"]:
        raise TypeError(f"values of {cai['values']['typestr']} and x of {cai['x']['typestr']}: one of float32 and float64")
    width = {"<i4": 4, "<u4": 4, "<i8": 8, "<u8": 8}.get(cai["row_ptr"]["typestr"])
    if width is None:
        raise TypeError(f"row pointers of {cai['row_ptr']['typestr']}: 32- or 64-bit integers")
    if cai["col_idx"]["typestr"] not in ("<i4", "<u4"):
        raise TypeError(f"column indices of {cai['col_idx']['typestr']}: int32 or uint32")
    arg = lambda name: (int(cai[name]["data"][0]), math.prod(cai[name]["shape"]))  # noqa: E731
    rows = max(arg("row_ptr")[1] - 1, 0)
    y = fw.empty((rows,), x)
    gpu_spmv(fw.device, fw.stream(), real, width, arg("x")[1], arg("row_ptr"), arg("col_idx"), arg("values"), arg("x"),
             (_address(y, "y"), rows))
    return fw.finish(y)


def _on_device(x: Any) -> bool:
    from . import _on_gpu

    return _on_gpu(x)


def summed_area(operator, data: Any, *, exclusive: bool, reverse: bool, init: Any) -> Any:
    """The two-dimensional scan of a matrix by a commutative operator in one
    call (the runtime reads it in tiles)."""
    fw = _framework(data)
    cai = _interface(data, "the matrix")
    shape = tuple(cai["shape"])
    rows, cols = shape[:2]
    out = fw.empty(shape, data)
    init_bytes = None
    if init is not None:
        init_bytes = operator._element_bytes(init) if operator._struct is not None else np.array([init], dtype=operator.dtype).tobytes()
    if rows * cols:
        operator._native.gpu_scan(
            fw.device, fw.stream(), _address(data, "the matrix"), _address(out, "the output"), rows * cols,
            not exclusive, reverse, init=init_bytes, summed_area=cols,
        )
    return fw.finish(out)
