"""The GPU path on PyTorch tensors (and CuPy arrays where installed):
every result against the CPU backend's scan of the same data (integers bit
for bit; floats within a relative 1e-4, the reassociation of up to 2^20
f32 terms of [0, 1), or bit for bit where the operator's results are
exact), on fresh random data (the seed is printed), outputs checked for
what they must hold only. Skipped without a usable GPU and PyTorch; with
``GPU_REQUIRED=1`` (the device runs) their absence fails instead."""

import os
import time

# JAX takes most of the GPU's memory at its start unless told not to;
# PyTorch shares this process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np
import pytest

import gpu_scan

REQUIRED = os.environ.get("GPU_REQUIRED") == "1"
try:
    import torch

    HAVE = torch.cuda.is_available() and gpu_scan.backend() == "gpu"
    WHY = gpu_scan.gpu_unavailable_reason() or "torch sees no GPU"
except ImportError:  # pragma: no cover - CI has no PyTorch
    torch, HAVE, WHY = None, False, "no PyTorch"

if REQUIRED:
    assert HAVE, f"GPU_REQUIRED=1 but {WHY}"
pytestmark = pytest.mark.skipif(not HAVE, reason=WHY)

SEED = int(os.environ.get("GPU_SCAN_SEED", time.time_ns() % (1 << 32)))
print(f"test_gpu: seed {SEED} (GPU_SCAN_SEED)")
LENGTHS = [0, 1, 31, 32, 33, 1023, 1025, 12_345, (1 << 20) + 3]


@gpu_scan.op(dtype={"a": "f32", "b": "f32"}, identity=(1.0, 0.0))
def affine(x, y):
    """Affine maps composed, x first: not commutative."""
    return (x.a * y.a, y.a * x.b + y.b)


@gpu_scan.op(dtype={"a": "u32", "b": "u32"}, identity=(1, 0))
def affine_u32(x, y):
    """Affine maps over wrapping u32: exact and not commutative."""
    return (x.a * y.a, y.a * x.b + y.b)


@gpu_scan.op(dtype="i64", identity=0)
def add_i64(x, y):
    return x + y


def rng(salt):
    return np.random.default_rng(SEED + salt)


def cuda(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def as_bytes(records):
    """Struct elements as the GPU path takes them: uint8, last dim bytes."""
    records = np.ascontiguousarray(records)
    return cuda(records.view(np.uint8).reshape(len(records), records.dtype.itemsize))


def records(op, t):
    return t.cpu().numpy().reshape(-1).view(op.dtype)


def random_affine(op, n, g):
    out = np.zeros(n, dtype=op.dtype)
    if op is affine:
        out["a"] = g.uniform(0.5, 0.95, n)
        out["b"] = g.uniform(0, 1, n)
    else:
        out["a"] = g.integers(0, 1 << 32, n, dtype=np.uint64)
        out["b"] = g.integers(0, 1 << 32, n, dtype=np.uint64)
    return out


def close(op, got, want):
    if op is affine:
        for f in ("a", "b"):
            np.testing.assert_allclose(got[f], want[f], rtol=1e-4, atol=1e-30)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", LENGTHS)
def test_cumsum_matches_numpy(n):
    g = rng(n)
    x = g.integers(-1000, 1000, n).astype(np.int64)
    t = cuda(x)
    for exclusive in (False, True):
        for reverse in (False, True):
            got = gpu_scan.cumsum(t, exclusive=exclusive, reverse=reverse)
            assert isinstance(got, torch.Tensor) and got.device == t.device
            want = gpu_scan.cumsum(x, exclusive=exclusive, reverse=reverse)
            np.testing.assert_array_equal(got.cpu().numpy(), want)
    f = g.random(n, dtype=np.float32)
    np.testing.assert_allclose(gpu_scan.cumsum(cuda(f)).cpu().numpy(), np.cumsum(f, dtype=np.float64), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("op", [affine, affine_u32], ids=["affine_f32", "affine_u32"])
@pytest.mark.parametrize("n", LENGTHS)
def test_struct_operators_match_the_cpu(op, n):
    g = rng(7 * n + (op is affine))
    x = random_affine(op, n, g)
    init = random_affine(op, 1, g)[0]
    t = as_bytes(x) if n else torch.zeros((0, 8), dtype=torch.uint8, device="cuda")
    for exclusive in (False, True):
        for reverse in (False, True):
            for i in (None, init):
                got, total = gpu_scan.scan(op, t, exclusive=exclusive, reverse=reverse, init=i, totals=True)
                want, want_total = gpu_scan.scan(op, x, exclusive=exclusive, reverse=reverse, init=i, totals=True)
                close(op, records(op, got), want)
                close(op, records(op, total), np.atleast_1d(want_total))


def test_axes_rows_columns_and_moves():
    g = rng(3)
    x = g.integers(0, 1 << 62, (37, 129, 5), dtype=np.int64)
    t = cuda(x)
    for axis in (None, 0, 1, 2, -1):
        got, sums = gpu_scan.scan(add_i64, t, axis=axis, totals=True)
        want, want_sums = gpu_scan.scan(add_i64, x, axis=axis, totals=True)
        np.testing.assert_array_equal(got.cpu().numpy(), want)
        np.testing.assert_array_equal(sums.cpu().numpy(), want_sums)
    m = x[:, :, 0].copy()
    got = gpu_scan.scan(add_i64, cuda(m), axis=0, exclusive=True, reverse=True, init=5)
    np.testing.assert_array_equal(got.cpu().numpy(), gpu_scan.scan(add_i64, m, axis=0, exclusive=True, reverse=True, init=5))


@pytest.mark.parametrize("n", [1, 33, 4097, 300_001])
def test_segments_by_flags_offsets_and_keys(n):
    g = rng(11 * n)
    x = random_affine(affine_u32, n, g)
    t = as_bytes(x)
    flags = g.random(n) < 0.01
    offsets = np.concatenate([[0], np.sort(g.integers(0, n + 1, 40)), [n]]).astype(np.int64)
    keys = np.cumsum(flags).astype(np.int32)
    for kind, value, device_value in (
        ("flags", flags, cuda(flags)),
        ("offsets", offsets, cuda(offsets)),
        ("keys", keys, cuda(keys)),
        ("flags", flags, flags),  # host segments go to the device
    ):
        for reverse in (False, True):
            got, sums = gpu_scan.scan(affine_u32, t, reverse=reverse, exclusive=True, totals=True, **{kind: device_value})
            want, want_sums = gpu_scan.scan(affine_u32, x, reverse=reverse, exclusive=True, totals=True, **{kind: value})
            close(affine_u32, records(affine_u32, got), want)
            close(affine_u32, records(affine_u32, sums), want_sums)


def test_on_the_current_stream_and_under_graph_capture():
    g = rng(5)
    n = 1 << 20
    x = g.integers(0, 1000, n).astype(np.int64)
    t = cuda(x)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        got = gpu_scan.cumsum(t)
    s.synchronize()
    np.testing.assert_array_equal(got.cpu().numpy(), np.cumsum(x))
    # A graph: warmed up on the capturing stream (which then holds the
    # scan's scratch), captured, replayed on new data.
    static_in = t.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        gpu_scan.cumsum(static_in)
    gpu_scan._sum("i64").wait_for_background_compiles()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        static_out = gpu_scan.cumsum(static_in)
    for k in range(3):
        fresh = g.integers(0, 1000, n).astype(np.int64)
        static_in.copy_(cuda(fresh))
        static_out.fill_(-1)
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(static_out.cpu().numpy(), np.cumsum(fresh), err_msg=f"replay {k}")


def test_refusals_leave_the_output_alone():
    t = torch.arange(10, device="cuda", dtype=torch.int32)
    with pytest.raises(TypeError, match="int64"):
        gpu_scan.scan(add_i64, t)
    with pytest.raises(ValueError, match="contiguous"):
        gpu_scan.scan(add_i64, torch.arange(20, device="cuda")[::2])
    with pytest.raises(TypeError, match="uint8"):
        gpu_scan.scan(affine, torch.zeros((4, 4), device="cuda", dtype=torch.uint8))
    bad = torch.tensor([0, 5, 3, 10], device="cuda")
    with pytest.raises(ValueError, match="offset"):
        gpu_scan.scan(add_i64, torch.arange(10, device="cuda"), offsets=bad)


def test_summed_area_matches_the_cpu():
    g = rng(13)
    x = g.integers(-1000, 1000, (300, 257)).astype(np.int64)
    m = random_affine(affine_u32, 37 * 41, g).reshape(37, 41)
    for exclusive in (False, True):
        for reverse in (False, True):
            got = gpu_scan.summed_area(add_i64, cuda(x), exclusive=exclusive, reverse=reverse, init=7)
            np.testing.assert_array_equal(got.cpu().numpy(), gpu_scan.summed_area(add_i64, x, exclusive=exclusive, reverse=reverse, init=7))
            t = cuda(np.ascontiguousarray(m).view(np.uint8).reshape(37, 41, 8))
            got = gpu_scan.summed_area(affine_u32, t, exclusive=exclusive, reverse=reverse)
            want = gpu_scan.summed_area(affine_u32, m, exclusive=exclusive, reverse=reverse)
            close(affine_u32, got.cpu().numpy().reshape(-1).view(affine_u32.dtype), want.reshape(-1))


def test_tensors_read_as_their_cuda_array_interface():
    """The fast reading of a tensor (its attributes) gives what its
    ``__cuda_array_interface__`` gives."""
    from gpu_scan import _gpu

    base = torch.arange(4096, device="cuda", dtype=torch.int64)
    for t in (base, base[5:], base.view(64, 64), base.view(64, 64)[3:], base.float(), base > 7, base.to(torch.uint8), base[:0]):
        fast = _gpu._interface(t, "t")
        cai = t.__cuda_array_interface__
        assert fast["shape"] == tuple(cai["shape"])
        assert fast["typestr"] == cai["typestr"]
        if t.numel():
            assert fast["data"][0] == cai["data"][0]
    with pytest.raises(ValueError, match="contiguous"):
        _gpu._interface(base.view(64, 64).t(), "t")


def test_a_tuple_of_tensors_is_a_struct_of_fields():
    g = rng(17)
    n = 100_003
    x = random_affine(affine, n, g)
    a, b = cuda(x["a"]), cuda(x["b"])
    for kw in ({}, {"exclusive": True, "reverse": True, "init": (0.5, 0.25)}):
        got_a, got_b = gpu_scan.scan(affine, (a, b), **kw)
        assert got_a.dtype == torch.float32 and got_a.shape == (n,)
        want = gpu_scan.scan(affine, x, **kw)
        np.testing.assert_allclose(got_a.cpu().numpy(), want["a"], rtol=1e-4, atol=1e-30)
        np.testing.assert_allclose(got_b.cpu().numpy(), want["b"], rtol=1e-4, atol=1e-30)


def test_jax_arrays_scan_into_jax_arrays():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    g = rng(19)
    n = 300_007
    x = g.integers(-1000, 1000, n).astype(np.int32)
    j = jnp.asarray(x)
    got = gpu_scan.cumsum(j)
    assert isinstance(got, jax.Array)
    np.testing.assert_array_equal(np.asarray(got), np.cumsum(x, dtype=np.int32))
    flags = g.random(n) < 0.01
    got, sums = gpu_scan.scan(gpu_scan._sum("i32"), j, flags=jnp.asarray(flags), exclusive=True, reverse=True, totals=True)
    want, want_sums = gpu_scan.scan(gpu_scan._sum("i32"), x, flags=flags, exclusive=True, reverse=True, totals=True)
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(sums), want_sums)
    m = x[: 300 * 1000].reshape(300, 1000)
    for axis in (0, 1, None):
        got, sums = gpu_scan.scan(gpu_scan._sum("i32"), jnp.asarray(m), axis=axis, totals=True)
        want, want_sums = gpu_scan.scan(gpu_scan._sum("i32"), m, axis=axis, totals=True)
        np.testing.assert_array_equal(np.asarray(got), want)
        np.testing.assert_array_equal(np.asarray(sums), want_sums)
    maps = random_affine(affine, 4097, g)
    got = gpu_scan.scan(affine, jnp.asarray(np.ascontiguousarray(maps).view(np.uint8).reshape(4097, 8)))
    close(affine, np.asarray(got).reshape(-1).view(affine.dtype), gpu_scan.scan(affine, maps))


def test_package_memory_goes_to_torch_through_dlpack():
    from gpu_scan._native import DeviceBuffer

    data = np.arange(1000, dtype=np.float32)
    buffer = DeviceBuffer(torch.cuda.current_device(), [1000], "<f4", data.tobytes())
    t = torch.from_dlpack(buffer)
    assert t.device.type == "cuda" and t.dtype == torch.float32
    np.testing.assert_array_equal(t.cpu().numpy(), data)
    with pytest.raises(BufferError):
        buffer.__dlpack__()  # given away once
    del t
    torch.cuda.synchronize()


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.uint64, np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 33, 4097, 1_000_003])
def test_sort_and_argsort_match_the_cpu(dtype, n):
    g = rng(23 * n + np.dtype(dtype).itemsize)
    if np.dtype(dtype).kind == "f":
        keys = (g.standard_normal(n) * 1e3).astype(dtype)
    else:
        info = np.iinfo(dtype)
        keys = g.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        keys[::5] = keys[:1] if n else keys[::5]
    if dtype == np.uint64 and not hasattr(torch, "uint64"):
        pytest.skip("this PyTorch has no uint64 tensors")
    t = torch.from_numpy(keys).cuda()
    for descending in (False, True):
        got = gpu_scan.sort(t, descending=descending)
        assert got.dtype == t.dtype and got.shape == t.shape
        np.testing.assert_array_equal(got.cpu().numpy(), gpu_scan.sort(keys, descending=descending))
        order = gpu_scan.argsort(t, descending=descending)
        assert order.dtype == torch.int64
        np.testing.assert_array_equal(order.cpu().numpy(), gpu_scan.argsort(keys, descending=descending))
    np.testing.assert_array_equal(t.cpu().numpy(), keys)  # the input is left alone


def test_summed_area_of_a_commutative_operator_in_tiles():
    g = rng(29)
    x = g.integers(-1000, 1000, (1000, 777)).astype(np.int64)
    add = gpu_scan._sum("i64")  # declared commutative: the runtime's tiles
    assert add.commutative
    for exclusive in (False, True):
        for reverse in (False, True):
            got = gpu_scan.summed_area(add, cuda(x), exclusive=exclusive, reverse=reverse, init=3)
            want = gpu_scan.summed_area(add, x, exclusive=exclusive, reverse=reverse, init=3)
            np.testing.assert_array_equal(got.cpu().numpy(), want)


@gpu_scan.predicate("i32")
def positive_i32(x):
    return x > 0


@gpu_scan.predicate("f32")
def inside_unit(x):
    return -1.0 < x and x < 1.0


@gpu_scan.equality("f32")
def same_sign_f32(a, b):
    return (a < 0.0) == (b < 0.0)


@pytest.mark.parametrize("n", LENGTHS)
def test_compactions_match_the_cpu(n):
    """Select, partition (both orders), unique and run-length encoding by
    predicates and equalities written in Python, on torch tensors, against
    the CPU's on the same data, bit for bit; the input is left alone."""
    g = rng(29 * n + 1)
    ints = g.integers(-1000, 1000, n).astype(np.int32)
    floats = (g.standard_normal(n) * 1.5).astype(np.float32)
    floats[g.random(n) < 0.05] = np.nan
    floats[g.random(n) < 0.05] = -0.0
    runs = g.integers(0, 3, n).astype(np.int64)
    for data, stage in ((ints, positive_i32), (floats, inside_unit)):
        t = cuda(data)
        got = gpu_scan.select(t, stage)
        assert got.dtype == t.dtype and got.device == t.device
        np.testing.assert_array_equal(got.cpu().numpy(), gpu_scan.select(data, stage), err_msg=f"select n={n}")
        for rejected in ("in_order", "reversed"):
            got, count = gpu_scan.partition(t, stage, rejected=rejected)
            want, want_count = gpu_scan.partition(data, stage, rejected=rejected)
            assert count == want_count
            np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=f"partition {rejected} n={n}")
        np.testing.assert_array_equal(t.cpu().numpy(), data)
    for data, equal in ((runs, None), (floats, None), (floats, same_sign_f32)):
        t = cuda(data)
        np.testing.assert_array_equal(gpu_scan.unique(t, equal).cpu().numpy(), gpu_scan.unique(data, equal))
        values, lengths = gpu_scan.run_length_encode(t, equal)
        want_values, want_lengths = gpu_scan.run_length_encode(data, equal)
        assert lengths.dtype == torch.int64
        np.testing.assert_array_equal(values.cpu().numpy(), want_values, err_msg=f"values n={n}")
        np.testing.assert_array_equal(lengths.cpu().numpy(), want_lengths, err_msg=f"lengths n={n}")


def test_compactions_on_cupy_and_jax_arrays():
    g = rng(31)
    data = g.integers(-50, 50, 100_003).astype(np.int32)
    want = gpu_scan.select(data, positive_i32)
    cupy = pytest.importorskip("cupy")
    got = gpu_scan.select(cupy.asarray(data), positive_i32)
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(got), want)
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    got = gpu_scan.select(jax.numpy.asarray(data), positive_i32)
    assert isinstance(got, jax.Array)
    np.testing.assert_array_equal(np.asarray(got), want)
    values, lengths = gpu_scan.run_length_encode(jax.numpy.asarray(np.sort(data)))
    want_values, want_lengths = gpu_scan.run_length_encode(np.sort(data))
    np.testing.assert_array_equal(np.asarray(values), want_values)
    np.testing.assert_array_equal(np.asarray(lengths), want_lengths)


def test_compactions_refuse_other_dtypes_and_leave_arrays_alone():
    t = cuda(np.arange(100, dtype=np.int64))
    with pytest.raises(TypeError, match="i32"):
        gpu_scan.select(t, positive_i32)
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(100))


@gpu_scan.op(dtype="i64", identity=0)
def add_keyed(x, y):
    return x + y


@pytest.mark.parametrize("n", LENGTHS)
def test_reduce_by_key_matches_the_cpu(n):
    """Reduce-by-key in one pass on torch tensors against the CPU's two
    (run-length encoding, then a segmented scan): integer sums and
    non-commutative affine maps over wrapping u32, bit for bit."""
    g = rng(37 * n + 3)
    keys = g.integers(0, 3, n).astype(np.int32)
    values = g.integers(-1000, 1000, n).astype(np.int64)
    got_keys, got = gpu_scan.reduce_by_key(cuda(keys), cuda(values), add_keyed)
    want_keys, want = gpu_scan.reduce_by_key(keys, values, add_keyed)
    np.testing.assert_array_equal(got_keys.cpu().numpy(), want_keys, err_msg=f"n={n}")
    np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=f"n={n}")
    maps = random_affine(affine_u32, n, g)
    got_keys, got = gpu_scan.reduce_by_key(cuda(keys), as_bytes(maps), affine_u32)
    _, want = gpu_scan.reduce_by_key(keys, maps, affine_u32)
    np.testing.assert_array_equal(records(affine_u32, got), want, err_msg=f"maps n={n}")


@gpu_scan.predicate({"mass": "f32", "charge": "i16", "id": "u64"})
def heavy_and_charged(p):
    return p.mass > 0.5 and p.charge != 0


@gpu_scan.equality({"mass": "f32", "charge": "i16", "id": "u64"})
def same_charge(a, b):
    return a.charge == b.charge


@pytest.mark.parametrize("n", [0, 1, 33, 4097, 1_000_003])
def test_struct_compactions_match_the_cpu(n):
    """A padded 16-byte struct as uint8 bytes on the GPU: select,
    partition, unique and run-length encoding against the CPU's."""
    g = rng(41 * n + 5)
    p = np.zeros(n, dtype=heavy_and_charged.dtype)
    p["mass"] = g.random(n).astype(np.float32)
    p["charge"] = g.integers(-1, 2, n)
    p["id"] = g.integers(0, 1 << 63, n, dtype=np.uint64)
    t = as_bytes(p)
    got = gpu_scan.select(t, heavy_and_charged)
    np.testing.assert_array_equal(records(heavy_and_charged, got), gpu_scan.select(p, heavy_and_charged))
    got, count = gpu_scan.partition(t, heavy_and_charged)
    want, want_count = gpu_scan.partition(p, heavy_and_charged)
    assert count == want_count
    np.testing.assert_array_equal(records(heavy_and_charged, got), want)
    got = gpu_scan.unique(t, same_charge)
    np.testing.assert_array_equal(records(same_charge, got), gpu_scan.unique(p, same_charge))
    values, lengths = gpu_scan.run_length_encode(t, same_charge)
    want_values, want_lengths = gpu_scan.run_length_encode(p, same_charge)
    np.testing.assert_array_equal(records(same_charge, values), want_values)
    np.testing.assert_array_equal(lengths.cpu().numpy(), want_lengths)


class DlpackOnly:
    """A device array that offers DLPack alone (no
    ``__cuda_array_interface__``), over a torch tensor; with ``namespace``
    it names torch as its array namespace (whose ``from_dlpack`` then
    takes the results)."""

    def __init__(self, tensor, namespace=False):
        self._t = tensor
        if namespace:
            self.__array_namespace__ = lambda: torch

    def __dlpack__(self, stream=None, **kwargs):
        return self._t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_arrays_with_dlpack_only_are_scanned_on_the_gpu():
    g = rng(43)
    x = g.integers(-1000, 1000, 300_007).astype(np.int32)
    t = cuda(x)
    want = np.cumsum(x, dtype=np.int32)
    got = gpu_scan.cumsum(DlpackOnly(t))  # no namespace: the package's buffer
    assert not isinstance(got, torch.Tensor)
    np.testing.assert_array_equal(torch.from_dlpack(got).cpu().numpy(), want)
    got = gpu_scan.cumsum(DlpackOnly(t, namespace=True))
    assert isinstance(got, torch.Tensor) and got.is_cuda
    np.testing.assert_array_equal(got.cpu().numpy(), want)
    kept = gpu_scan.select(DlpackOnly(t, namespace=True), positive_i32)
    np.testing.assert_array_equal(kept.cpu().numpy(), x[x > 0])
    np.testing.assert_array_equal(t.cpu().numpy(), x)  # the input is left alone


@gpu_scan.sort_key({"price": "f32", "size": "u32", "side": "i8"}, key=("i8", "f32", "u32"))
def by_side_price_size(o):
    return (o.side, o.price, ~o.size)


@gpu_scan.sort_key("i64", key="u8")
def low_byte(x):
    return u8(x & 255)


@pytest.mark.parametrize("n", [0, 1, 33, 4097, 1_000_003])
def test_records_sort_by_python_keys_as_on_the_cpu(n):
    """Records as uint8 bytes (a 12-byte struct) and i64 elements sorted on
    the GPU by keys written in Python, against the CPU's, both orders."""
    g = rng(47 * n + 1)
    o = np.zeros(n, dtype=by_side_price_size.dtype)
    o["price"] = g.integers(0, 20, n).astype(np.float32) / 4
    o["size"] = g.integers(0, 1 << 32, n, dtype=np.uint64)
    o["side"] = g.integers(-1, 2, n)
    t = as_bytes(o)
    x = g.integers(-(1 << 40), 1 << 40, n).astype(np.int64)
    for descending in (False, True):
        want = gpu_scan.argsort(o, key=by_side_price_size, descending=descending)
        got = gpu_scan.argsort(t, key=by_side_price_size, descending=descending)
        np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=f"n={n}")
        got = gpu_scan.sort(t, key=by_side_price_size, descending=descending)
        np.testing.assert_array_equal(records(by_side_price_size, got), o[want])
        got = gpu_scan.sort(cuda(x), key=low_byte, descending=descending)
        np.testing.assert_array_equal(got.cpu().numpy(), gpu_scan.sort(x, key=low_byte, descending=descending))
    np.testing.assert_array_equal(records(by_side_price_size, t), o)  # the input is left alone


@pytest.mark.parametrize("n", LENGTHS)
def test_three_way_partitions_and_non_trivial_runs_match_the_cpu(n):
    g = rng(53 * n + 7)
    a = g.integers(-50, 50, n).astype(np.int32)
    small = gpu_scan.predicate("i32")(_small_magnitude)
    got, counts = gpu_scan.partition(cuda(a), positive_i32, small)
    want, want_counts = gpu_scan.partition(a, positive_i32, small)
    assert counts == want_counts
    np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=f"n={n}")
    runs = g.integers(0, 3, n).astype(np.int64)
    offsets, lengths = gpu_scan.non_trivial_runs(cuda(runs))
    want_offsets, want_lengths = gpu_scan.non_trivial_runs(runs)
    np.testing.assert_array_equal(offsets.cpu().numpy(), want_offsets)
    np.testing.assert_array_equal(lengths.cpu().numpy(), want_lengths)


def _small_magnitude(x):
    return -10 < x and x < 10


@pytest.mark.parametrize("kind", ["scalar", "diagonal", "matrix"])
@pytest.mark.parametrize("shape", [(1, 100_000, 2), (256, 129, 4), (4096, 16, 16)])
def test_linear_recurrences_match_the_cpu(kind, shape):
    """Batches of recurrences on torch tensors against the CPU's: narrow
    batches (one long sequence) run as a scan of chunk maps on the GPU,
    which regroups the products, so f32 agrees within a relative 1e-4
    (|a| < 0.9 keeps the states bounded: the regrouped terms' rounding
    stays within a few units in the last place of the largest state, far
    below it) and f64 within 1e-10; every layout, direction and readout."""
    sequences, steps, state = shape
    if kind == "matrix" and state > 8:
        pytest.skip("matrices of up to 8 x 8 on the GPU")
    g = rng(59 * steps + state + len(kind))
    for dtype, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        b = g.standard_normal(shape).astype(dtype)
        a_shape = {"scalar": shape[:2], "diagonal": shape, "matrix": shape + (state,)}[kind]
        a = (g.uniform(-0.9, 0.9, a_shape) / (state if kind == "matrix" else 1)).astype(dtype)
        h0 = g.standard_normal((sequences, state)).astype(dtype)
        c = g.standard_normal(shape).astype(dtype)
        for reverse in (False, True):
            for readout in (None, c):
                want = gpu_scan.linear_recurrence(a, b, initial=h0, readout=readout, reverse=reverse)
                got = gpu_scan.linear_recurrence(
                    cuda(a), cuda(b), initial=cuda(h0), readout=None if readout is None else cuda(readout), reverse=reverse
                )
                assert isinstance(got, torch.Tensor) and tuple(got.shape) == want.shape
                np.testing.assert_allclose(got.cpu().numpy(), want, rtol=tol, atol=tol, err_msg=f"{kind} {shape} {dtype}")
        tm = gpu_scan.linear_recurrence(
            cuda(np.ascontiguousarray(np.swapaxes(a, 0, 1))), cuda(np.ascontiguousarray(np.swapaxes(b, 0, 1))), time_major=True
        )
        np.testing.assert_allclose(
            np.swapaxes(tm.cpu().numpy(), 0, 1), gpu_scan.linear_recurrence(a, b), rtol=tol, atol=tol, err_msg="time-major"
        )


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint64])
def test_segmented_sorts_match_the_cpu(dtype):
    """Segments by CSR offsets on the device (power-law lengths, empty
    ones, keys outside every segment), both orders, keys and argsort."""
    if dtype == np.uint64 and not hasattr(torch, "uint64"):
        pytest.skip("this PyTorch has no uint64 tensors")
    g = rng(61 + np.dtype(dtype).itemsize)
    n = 1_000_003
    keys = (g.standard_normal(n) * 1e3).astype(dtype) if np.dtype(dtype).kind == "f" else g.integers(0, 1000, n).astype(dtype)
    lengths = np.minimum((g.pareto(1.2, 4000) * 20).astype(np.int64), 50_000)
    offsets = np.concatenate([[7], 7 + np.cumsum(lengths)])
    offsets = offsets[offsets <= n - 5]
    t, o = cuda(keys), cuda(offsets)
    for descending in (False, True):
        want = gpu_scan.argsort(keys, offsets=offsets, descending=descending)
        got = gpu_scan.argsort(t, offsets=o, descending=descending)
        np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=f"{dtype}")
        got = gpu_scan.sort(t, offsets=offsets, descending=descending)  # host offsets too
        np.testing.assert_array_equal(got.cpu().numpy(), keys[want])
    np.testing.assert_array_equal(t.cpu().numpy(), keys)  # the input is left alone


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_products_match_the_cpu(dtype):
    """CSR products of power-law rows (one of 200,000 entries) on torch
    tensors against the CPU's, within a relative 1e-4 (f32; 1e-12 f64) of
    each row's absolute sum: the GPU regroups a row's sum by tiles."""
    g = rng(67 + np.dtype(dtype).itemsize)
    rows, cols = 1 << 16, 1 << 12
    lengths = np.minimum((g.pareto(1.1, rows) * 4).astype(np.int64), 5000)
    lengths[rows // 2] = 200_000
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    col_idx = g.integers(0, cols, row_ptr[-1]).astype(np.int32)
    values = g.uniform(-1, 1, row_ptr[-1]).astype(dtype)
    x = g.uniform(-1, 1, cols).astype(dtype)
    want = gpu_scan.spmv(row_ptr, col_idx, values, x)
    got = gpu_scan.spmv(cuda(row_ptr), cuda(col_idx), cuda(values), cuda(x))
    assert isinstance(got, torch.Tensor) and got.dtype == cuda(x).dtype
    bound = gpu_scan.spmv(row_ptr, col_idx, np.abs(values), np.abs(x))
    tol = 1e-4 if dtype == np.float32 else 1e-12
    assert np.all(np.abs(got.cpu().numpy() - want) <= tol * bound + 1e-30)
    got = gpu_scan.spmv(row_ptr, col_idx, cuda(values), cuda(x))  # host structure, copied
    assert np.all(np.abs(got.cpu().numpy() - want) <= tol * bound + 1e-30)
