#!/usr/bin/env bash
# The Python package's GPU tests on the device (issue 50), from the
# repository root or gpu-bin/: installs the wheels carried in .whl/ (the
# package's, built here with `maturin build --release -m python/Cargo.toml
# -o .whl`, and pytest's) into /tmp/site and runs python/tests with
# GPU_REQUIRED=1 (a missing GPU or PyTorch fails). `PYTHON_BENCH=1` runs
# python/bench/gpu_bench.py instead (alone on the GPU), after two
# first-call runs in fresh processes (cold, then warm disk cache).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"   # scripts/gpu-steps/ in the repository
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$root"/.whl/*.whl || exit 1
export PYTHONPATH=/tmp/site GPU_REQUIRED=1 PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc.so.13'; then
  lib="$(find / -xdev -name 'libnvrtc.so.13' -not -path '*/proc/*' 2>/dev/null | head -n 1)"
  [ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
cd /tmp
if [ "${PYTHON_BENCH:-0}" = 1 ]; then
  cache="$(mktemp -d)"
  GPU_SCAN_CACHE_DIR="$cache" GPU_BENCH_FIRST=1 python3 "$root/python/bench/gpu_bench.py"
  GPU_SCAN_CACHE_DIR="$cache" GPU_BENCH_FIRST=1 python3 "$root/python/bench/gpu_bench.py"
  cd "$root/python/bench" && exec python3 gpu_bench.py
fi
exec python3 -m pytest -q -p no:cacheprovider -rs "$root/python/tests"
