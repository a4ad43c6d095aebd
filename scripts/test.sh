#!/usr/bin/env bash
# The whole test suite, from a fresh clone: sets up .venv, then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# Most of a cold run is Numba compiling the kernels, one function at a time on one core.
# Compile (into Numba's on-disk cache) the float32 and float64 kernels in two processes side by
# side first, so that both cores share that work; the tests then load them. With the cache
# already warm this takes a few seconds.
pids=()
for dtype in float32 float64; do
  .venv/bin/python -c "import tsrnn; tsrnn.warmup(dtypes=['$dtype'])" &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid"  # each by its pid: a bare `wait` returns 0 even where a warm-up failed
done
.venv/bin/python -m pytest "$@"
