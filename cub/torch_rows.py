"""torch.cumsum along rows, for examples/rows_bench.rs: the same shapes and
inputs' types, timed as the median of 25 calls bracketed by CUDA events
after 3 warm-ups, with a device-to-device copy of the input timed the same
way. Writes one line per case (name, torch ms, copy ms) to the file given.
"""
import statistics
import sys

import torch


def median_ms(f):
    for _ in range(3):
        f()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(25):
        start.record()
        f()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def case(name, rows, cols, dtype):
    if dtype == torch.float32:
        x = torch.randint(-8, 9, (rows, cols), device="cuda").to(dtype)
    else:
        # torch has no cumsum for uint32: int32 of the same width.
        x = torch.randint(0, 1 << 16, (rows, cols), device="cuda", dtype=torch.int32)
    y = torch.empty_like(x)
    out = torch.empty_like(x)
    ms = median_ms(lambda: torch.cumsum(x, dim=1, out=out))
    copy = median_ms(lambda: y.copy_(x))
    return f"{name} {ms:.5f} {copy:.5f}"


lines = [
    case("u32_2^14x2^12", 1 << 14, 1 << 12, torch.int32),
    case("f32_2^22x16", 1 << 22, 16, torch.float32),
    case("u32_2^18x1000", 1 << 18, 1000, torch.int32),
]
print("\n".join(lines))
with open(sys.argv[1], "w") as f:
    f.write("\n".join(lines) + "\n")
