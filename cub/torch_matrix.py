"""torch.cumsum along rows, down columns and both (a summed-area table),
for examples/matrix_bench.rs: the same shapes and inputs' types, timed as the median of 25 calls bracketed by CUDA events
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


def case(name, rows, cols, dtype, dims=(1,)):
    if dtype == torch.float32:
        x = torch.randint(-8, 9, (rows, cols), device="cuda").to(dtype)
    else:
        # torch has no cumsum for uint32: int32 of the same width.
        x = torch.randint(0, 1 << 16, (rows, cols), device="cuda", dtype=torch.int32)
    y = torch.empty_like(x)
    out = torch.empty_like(x)
    if dims == (1,) or dims == (0,):
        ms = median_ms(lambda: torch.cumsum(x, dim=dims[0], out=out))
    else:
        tmp = torch.empty_like(x)
        ms = median_ms(lambda: (torch.cumsum(x, dim=1, out=tmp), torch.cumsum(tmp, dim=0, out=out)))
    copy = median_ms(lambda: y.copy_(x))
    return f"{name} {ms:.5f} {copy:.5f}"


lines = [
    case("rows_u32_2^14x2^12", 1 << 14, 1 << 12, torch.int32),
    case("rows_f32_2^22x16", 1 << 22, 16, torch.float32),
    case("rows_u32_2^18x1000", 1 << 18, 1000, torch.int32),
    case("cols_f32_2^12x2^14", 1 << 12, 1 << 14, torch.float32, (0,)),
    case("cols_u32_2^16x2^10", 1 << 16, 1 << 10, torch.int32, (0,)),
    case("cols_f32_2^22x16", 1 << 22, 16, torch.float32, (0,)),
    case("sat_f32_8192x8192", 8192, 8192, torch.float32, (1, 0)),
]
print("\n".join(lines))
with open(sys.argv[1], "w") as f:
    f.write("\n".join(lines) + "\n")
