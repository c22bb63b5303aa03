"""PyTorch comparator for examples/recurrence_bench.rs's `diag-readout` row:
the diagonal recurrence h[t] = a[t] * h[t-1] + b[t] over 2^12 sequences x
2^14 steps x a state of 16, f32, sequence-major, with the readout
y[t] = sum_j c[t][j] * h[t][j], as a PyTorch user would write it without a
custom kernel: a Hillis-Steele scan of the affine maps (a, b) in log2(steps)
passes of whole-tensor operations (what jax.lax.associative_scan does in
spirit), then the readout. Its result is checked first against a sequential
float64 recurrence on 8 sequences. CUDA events, median of 5 after a warm-up.

    python3 recurrence_torch.py
"""

import torch

SEQUENCES, STEPS, STATE = 1 << 12, 1 << 14, 16


def scan_readout(a, b, c):
    a, b = a.clone(), b.clone()
    d = 1
    while d < a.shape[1]:
        # (a, b)[t] = (a, b)[t - d] then (a, b)[t]
        b[:, d:] = a[:, d:] * b[:, :-d] + b[:, d:]
        a[:, d:] = a[:, d:] * a[:, :-d].clone()
        d *= 2
    return (c * b).sum(-1)


def sequential(a, b, c):
    h = torch.zeros(a.shape[0], a.shape[2], dtype=torch.float64, device=a.device)
    y = torch.empty(a.shape[0], a.shape[1], dtype=torch.float64, device=a.device)
    for t in range(a.shape[1]):
        h = a[:, t].double() * h + b[:, t].double()
        y[:, t] = (c[:, t].double() * h).sum(-1)
    return y


def main():
    torch.manual_seed(1)
    dev = "cuda"
    a = torch.rand(SEQUENCES, STEPS, STATE, device=dev) * 0.5 + 0.5
    b = torch.rand(SEQUENCES, STEPS, STATE, device=dev) * 2 - 1
    c = torch.rand(SEQUENCES, STEPS, STATE, device=dev) * 2 - 1
    y = scan_readout(a, b, c)
    want = sequential(a[:8], b[:8], c[:8])
    err = ((y[:8].double() - want).abs() / (want.abs() + 1)).max().item()
    ok = err < 1e-3
    times = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        scan_readout(a, b, c)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    print(
        f"torch diag-readout {SEQUENCES} x {STEPS} x {STATE}: {times[len(times) // 2]:.3f} ms "
        f"(torch {torch.__version__}; largest relative error on 8 sequences {err:.2e}: {'ok' if ok else 'MISMATCH'})"
    )


if __name__ == "__main__":
    main()
