"""Issue 50's table on a GPU: gpu_scan's Python path against PyTorch (and
``torch._higher_order_ops.associative_scan`` compiled, where it compiles),
every output checked against a reference first; medians of CUDA-event
timings after warm-ups; "% copy" is a device-to-device copy of the same
bytes in the same run. ``python bench/gpu_bench.py`` on the device; the
table is printed last. ``GPU_BENCH_FIRST=1`` prints only the first-call
line (run it in a fresh process, twice: cold then warm disk cache)."""

import os
import sys
import time

import numpy as np

# JAX (a comparator) takes most of the GPU's memory at its start unless
# told not to; PyTorch shares this process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import torch  # noqa: E402

t0 = time.perf_counter()
import gpu_scan  # noqa: E402

REPS = int(os.environ.get("GPU_BENCH_REPS", "20"))


def timed(fn, reps=REPS):
    for _ in range(3):
        fn()
    # The first scans of an operator run on quick builds while the
    # optimized kernels compile in the background: time those.
    for op in (affine, mat2_affine, gpu_scan._sum("f32")):
        op.wait_for_background_compiles()
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def copy_ms(nbytes):
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return timed(lambda: dst.copy_(src))


@gpu_scan.op(dtype={"a": "f32", "b": "f32"}, identity=(1.0, 0.0))
def affine(x, y):
    return (x.a * y.a, y.a * x.b + y.b)


@gpu_scan.op(dtype={"a": "f32", "b": "f32", "c": "f32", "d": "f32", "e": "f32", "f": "f32"}, identity=(1.0, 0.0, 0.0, 1.0, 0.0, 0.0))
def mat2_affine(x, y):
    """A 24-byte struct: 2x2 matrix product with an offset (non-commutative)."""
    return (
        x.a * y.a + x.b * y.c,
        x.a * y.b + x.b * y.d,
        x.c * y.a + x.d * y.c,
        x.c * y.b + x.d * y.d,
        x.e * y.a + x.f * y.c + y.e,
        x.e * y.b + x.f * y.d + y.f,
    )


def first_call():
    x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    start = time.perf_counter()

    @gpu_scan.op(dtype="f32", identity=0.0)
    def first_sum(a, b):
        return a + b

    gpu_scan.scan(first_sum, x)
    torch.cuda.synchronize()
    print(f"first call of a new operator: {1e3 * (time.perf_counter() - start):.1f} ms (import {1e3 * (start - t0):.0f} ms before)")


def wall_ms(fn, reps=REPS):
    """Median wall-clock milliseconds of ``fn`` (which waits for its own
    result): for JAX, whose stream CUDA events on PyTorch's do not see."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - start))
    return float(np.median(times))


def other_comparators(log2, a, b, prefix, t_ours, t_copy):
    """Rows for Triton's and JAX's affine scans of ``a``, ``b`` (checked
    against ``prefix``, the recurrence's first values, first)."""
    import comparators

    rows = []
    k = prefix.shape[0]
    if comparators.triton_scan is not None:
        try:
            _, tb = comparators.triton_scan(a, b)
            np.testing.assert_allclose(tb[:k].double().cpu().numpy(), prefix, rtol=1e-3, atol=1e-6)
            rows.append((f"affine 2xf32 2^{log2}", t_ours, "Triton tl.associative_scan", timed(lambda: comparators.triton_scan(a, b)), t_copy))
        except Exception as e:  # noqa: BLE001
            print(f"Triton at 2^{log2}: {type(e).__name__}: {str(e)[:200]}")
    if comparators.jax_scan is not None:
        try:
            import jax

            ja, jb = jax.dlpack.from_dlpack(a), jax.dlpack.from_dlpack(b)
            _, out_b = comparators.jax_scan(ja, jb)
            np.testing.assert_allclose(np.asarray(out_b[:k], dtype=np.float64), prefix, rtol=1e-3, atol=1e-6)
            rows.append((f"affine 2xf32 2^{log2}", t_ours, "jax.lax.associative_scan (wall)", wall_ms(lambda: comparators.jax_scan(ja, jb)), t_copy))
        except Exception as e:  # noqa: BLE001
            print(f"JAX at 2^{log2}: {type(e).__name__}: {str(e)[:200]}")
    return rows


def main():
    if os.environ.get("GPU_BENCH_FIRST") == "1":
        first_call()
        return
    dev = torch.cuda.get_device_name()
    rows = []
    g = np.random.default_rng(1)

    # torch.cumsum, flat and in rows.
    for label, shape, dim in (("cumsum f32 2^28", (1 << 28,), 0), ("cumsum f32 2^14 x 2^12 rows", (1 << 14, 1 << 12), 1)):
        x = torch.rand(shape, device="cuda")
        ours = gpu_scan.cumsum(x, axis=dim)
        ref = torch.cumsum(x, dim=dim)
        torch.testing.assert_close(ours, ref, rtol=1e-3, atol=1e-2)
        t_ours = timed(lambda: gpu_scan.cumsum(x, axis=dim))
        t_ref = timed(lambda: torch.cumsum(x, dim=dim))
        t_copy = copy_ms(x.numel() * 4)
        rows.append((label, t_ours, "torch.cumsum", t_ref, t_copy))
        del x, ours, ref
    # Call overhead, 2^10 elements.
    small = torch.rand(1 << 10, device="cuda")
    gpu_scan.cumsum(small)
    rows.append(("cumsum f32 2^10 (call overhead)", timed(lambda: gpu_scan.cumsum(small), 200), "torch.cumsum", timed(lambda: torch.cumsum(small, 0), 200), None))

    # Affine maps (2 x f32) and a 24-byte struct.
    compiled = None
    try:
        from torch._higher_order_ops.associative_scan import associative_scan

        def combine(x, y):
            return (x[0] * y[0], y[0] * x[1] + y[1])

        compiled = torch.compile(lambda a, b: associative_scan(combine, (a, b), dim=0, combine_mode="generic"), dynamic=False)
    except Exception as e:  # noqa: BLE001
        print(f"torch associative_scan unavailable: {e}")
    for log2 in (24, 28):
        n = 1 << log2
        a = torch.rand(n, device="cuda") * 0.45 + 0.5
        b = torch.rand(n, device="cuda")
        packed = torch.stack([a, b], dim=1).contiguous().view(torch.uint8).reshape(n, 8)
        out = gpu_scan.scan(affine, packed)
        got = out.view(torch.float32).reshape(n, 2)
        # Reference: the products and the recurrence in float64 on the GPU.
        pa = torch.cumprod(a.double(), 0)
        # b: the recurrence v = a_i v + b_i, checked over a prefix on the host.
        k = 1 << 16
        host_a, host_b = a[:k].double().cpu().numpy(), b[:k].double().cpu().numpy()
        acc = np.empty(k)
        v = 0.0
        for i in range(k):
            v = host_a[i] * v + host_b[i]
            acc[i] = v
        np.testing.assert_allclose(got[:k, 1].double().cpu().numpy(), acc, rtol=1e-4)
        torch.testing.assert_close(got[:, 0].double(), pa, rtol=1e-3, atol=1e-30)
        del pa
        t_ours = timed(lambda: gpu_scan.scan(affine, packed))
        t_copy = copy_ms(n * 8)
        ref_label, t_ref = "assoc_scan (compiled)", None
        if compiled is not None:
            try:
                ra, rb = compiled(a, b)
                torch.testing.assert_close(rb[:k].double().cpu(), torch.from_numpy(acc), rtol=1e-3, atol=1e-6)
                t_ref = timed(lambda: compiled(a, b), 5)
            except Exception as e:  # noqa: BLE001
                print(f"torch associative_scan at 2^{log2}: {type(e).__name__}: {str(e)[:200]}")
        rows.append((f"affine 2xf32 2^{log2}", t_ours, ref_label, t_ref, t_copy))
        rows.extend(other_comparators(log2, a, b, acc, t_ours, t_copy))
        del a, b, packed, out, got
    n = 1 << 26
    x = torch.rand((n, 6), device="cuda") * 0.5
    packed = x.view(torch.uint8).reshape(n, 24)
    t_ours = timed(lambda: gpu_scan.scan(mat2_affine, packed))
    rows.append(("24-byte struct 2^26", t_ours, "-", None, copy_ms(n * 24)))

    print(f"\n===== gpu_scan Python on {dev} (median ms of {REPS}; ratio = comparator / ours)")
    print(f"| case | ours ms | % copy | comparator | its ms | ratio |")
    print("| --- | ---: | ---: | --- | ---: | ---: |")
    for label, ours, cname, theirs, copy in rows:
        pct = f"{100 * copy / ours:.1f}" if copy else "-"
        ratio = f"{theirs / ours:.2f}x" if theirs else "-"
        th = f"{theirs:.4f}" if theirs else "-"
        print(f"| {label} | {ours:.4f} | {pct} | {cname} | {th} | {ratio} |")


if __name__ == "__main__":
    sys.exit(main())
