#!/usr/bin/env bash
# First use and quick builds on the device (issue 45, item 8; `bash
# gpu-bin/first_use.sh` after scripts/gpu-check), alone on the
# GPU: NVRTC's time for each plain kernel and the segmented look-back pass,
# optimized and as a quick build, on the device's host; then first use of
# four cases (runtime_timings first: one tile, 2^24 u32, 2^24 affine, 2^24
# u32 in segments) in fresh processes on empty caches, quick builds on
# (auto) and off (never) alternating, ROUNDS times; then the small scans'
# host time (scan_stress small). The tables are printed last and kept in
# $OUT/first_use.txt.
set -uo pipefail
bin="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$bin}"
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc.so.13'; then
  lib="$(find / -xdev -name 'libnvrtc.so.13' -not -path '*/proc/*' 2>/dev/null | head -n 1)"
  [ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export GPU_REQUIRED=1
log="$out/first_use.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$log"
for extra in "" "--Ofast-compile=mid"; do
  echo "== compile_times, EXTRA='$extra'" >> "$log"
  for filter in "Plain(" "Segmented(SinglePass { inclusive: true, source: Flags(Bytes)"; do
    EXTRA="$extra" "$bin/compile_times" sm_90 "$filter" >> "$log" 2>&1
  done
done
for round in $(seq 1 "${ROUNDS:-3}"); do
  for case in tile long affine segmented; do
    for quick in auto never; do
      CUDA_CACHE_DISABLE=1 GPU_SCAN_CACHE_DIR="$(mktemp -d)" GPU_SCAN_QUICK_BUILDS=$quick \
        "$bin/runtime_timings" first "$case" >> "$log" 2>&1
    done
  done
done
STRESS_ONLY=small STRESS_CALLS="${STRESS_CALLS:-200000}" timeout 120 "$bin/scan_stress" >> "$log" 2>&1
echo "scan_stress: rc $?" >> "$log"
grep -E "ms  |first use|small|rc " "$log"
