"""Issue 50's comparators for the affine-map scan (2 x f32, ``v -> a*v + b``
composed first to last), each returning ``(a_out, b_out)`` of the
inclusive scan, for ``gpu_bench.py``:

- ``triton_scan``: a Triton kernel built on ``tl.associative_scan`` as its
  documentation shows it (a scan within a block), extended to any length
  the usual way: each block scans its tile and writes its total, the totals
  are scanned the same way (recursively), and each block then applies its
  predecessor's total (three launches a level).
- ``jax_scan``: ``jax.lax.associative_scan`` under ``jax.jit``, on JAX
  arrays (its O(log n) passes).

Each is ``None`` where its framework cannot be imported."""

from __future__ import annotations

BLOCK = 1024

try:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _combine(a1, b1, a2, b2):
        return a1 * a2, a2 * b1 + b2

    @triton.jit
    def _tile_scan(a_ptr, b_ptr, oa_ptr, ob_ptr, ta_ptr, tb_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        a = tl.load(a_ptr + offs, mask=mask, other=1.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        sa, sb = tl.associative_scan((a, b), 0, _combine)
        tl.store(oa_ptr + offs, sa, mask=mask)
        tl.store(ob_ptr + offs, sb, mask=mask)
        ta, tb = tl.reduce((a, b), 0, _combine)
        tl.store(ta_ptr + pid, ta)
        tl.store(tb_ptr + pid, tb)

    @triton.jit
    def _apply(oa_ptr, ob_ptr, pa_ptr, pb_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0) + 1  # block 0 has no predecessor
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        pa = tl.load(pa_ptr + pid - 1)
        pb = tl.load(pb_ptr + pid - 1)
        a = tl.load(oa_ptr + offs, mask=mask)
        b = tl.load(ob_ptr + offs, mask=mask)
        # prefix (pa, pb) then the block's own scan (a, b)
        tl.store(oa_ptr + offs, pa * a, mask=mask)
        tl.store(ob_ptr + offs, a * pb + b, mask=mask)

    def _scan_into(a, b, oa, ob):
        n = a.numel()
        blocks = triton.cdiv(n, BLOCK)
        ta = torch.empty(blocks, device=a.device, dtype=a.dtype)
        tb = torch.empty_like(ta)
        _tile_scan[(blocks,)](a, b, oa, ob, ta, tb, n, BLOCK=BLOCK)
        if blocks > 1:
            pa, pb = torch.empty_like(ta), torch.empty_like(tb)
            _scan_into(ta, tb, pa, pb)
            _apply[(blocks - 1,)](oa, ob, pa, pb, n, BLOCK=BLOCK)

    def triton_scan(a, b):
        oa, ob = torch.empty_like(a), torch.empty_like(b)
        _scan_into(a, b, oa, ob)
        return oa, ob

except Exception:  # noqa: BLE001 - no Triton or no GPU
    triton_scan = None

try:
    import jax
    import jax.numpy as jnp

    def _jax_combine(x, y):
        return (x[0] * y[0], y[0] * x[1] + y[1])

    _jax_scan = jax.jit(lambda a, b: jax.lax.associative_scan(_jax_combine, (a, b)))

    def jax_scan(a, b):
        """``a``, ``b``: JAX arrays; waits for the result."""
        out = _jax_scan(a, b)
        out[1].block_until_ready()
        return out

except Exception:  # noqa: BLE001
    jax_scan = None
