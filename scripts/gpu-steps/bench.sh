#!/usr/bin/env bash
# The timing call, alone on the GPU (`bash gpu-bin/bench.sh` on the device
# after scripts/gpu-check here, which copies this into gpu-bin/; the
# baseline's scan_bench copied to gpu-bin/scan_bench_base): CUB's
# comparator, built there with nvcc, then
# this commit's main table and the baseline's, alternating RUNS times each;
# the deterministic table; the first-use suite. Every output is kept under
# $OUT; the tables of each run are printed last.
set -uo pipefail
bin="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$bin}"
runs="${RUNS:-2}"
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc.so.13'; then
  lib="$(find / -xdev -name 'libnvrtc.so.13' -not -path '*/proc/*' 2>/dev/null | head -n 1)"
  [ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export GPU_REQUIRED=1 GPU_SCAN_CACHE_DIR="$(mktemp -d)"
results="$out/cub-results"
mkdir -p "$results"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
nvcc="$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -n 1)"
if [ ! -x "$bin/scan_bench_cub" ]; then
  "$nvcc" -O3 -arch=sm_90 -o "$bin/scan_bench_cub" "$bin/scan_bench.cu" 2>&1 | tail -n 3
fi
"$bin/scan_bench_cub" "$results" > "$out/cub.txt" 2>&1
echo "cub: rc $?"
for r in $(seq 1 "$runs"); do
  SCAN_BENCH_MAIN_ONLY=1 timeout 240 "$bin/scan_bench" "$results" > "$out/new-$r.txt" 2>&1
  echo "new run $r: rc $?"
  if [ -x "$bin/scan_bench_base" ]; then
    SCAN_BENCH_MAIN_ONLY=1 timeout 240 "$bin/scan_bench_base" "$results" > "$out/base-$r.txt" 2>&1
    echo "base run $r: rc $?"
  fi
done
SCAN_BENCH_DETERMINISTIC=1 timeout 240 "$bin/scan_bench" > "$out/deterministic.txt" 2>&1
echo "deterministic: rc $?"
timeout 120 "$bin/gpu_first_use" --nocapture --test-threads=1 > "$out/first_use.txt" 2>&1
echo "first use: rc $?"
for f in "$out"/new-*.txt "$out"/base-*.txt; do
  [ -f "$f" ] || continue
  echo "===== $(basename "$f")"
  awk '/^scan_bench summary/ { on = 1 } on' "$f"
done
echo "===== deterministic"
grep -A20 'deterministic scans' "$out/deterministic.txt"
echo "===== first use"
grep -E 'first|ms' "$out/first_use.txt" | tail -n 12
# At most 8 files come back from a device call: the logs in one archive.
if [ -n "${OUT:-}" ]; then
  (cd "$OUT" && tar czf bench-logs.tgz --remove-files ./*.txt cub-results 2>/dev/null)
fi
