#!/usr/bin/env bash
# On a CUDA machine: the compiled Triton kernels' tests, then the GPU speed tables.
#
#   ./scripts/gpu-check.sh            # tests, then activations_triton.py and bench_layers.py --device cuda
#   ./scripts/gpu-check.sh tests      # tests only
#   ./scripts/gpu-check.sh bench      # benchmarks only
#
# Uses the python3 on the PATH as it is (a GPU machine brings its own CUDA build of torch, with
# triton, numba, pandas and scikit-learn) and imports this checkout without installing it.
# Logs and the benchmarks' JSON go to benchmarks/results/ and, where $OUT is set, to $OUT.
#
# Time on an H100 (2026-11-24): Triton compiles each kernel variant on first use, about 1-2 s
# each, so `tests` takes 8-9 minutes (146 tests) and `bench` about 4; run them as separate
# calls where one command may run 10 minutes at most.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
PY=${PYTHON:-python3}
export TRITON_INTERPRET=0 PYTHONUNBUFFERED=1

# tsrnn.kernels and tsrnn.datasets live in kernels/ and datasets/ (see pyproject.toml's
# package-dir): a throwaway package folder maps them the same way without a pip install.
site=$(mktemp -d)
cp -r tsrnn "$site/tsrnn"
ln -s "$PWD/kernels" "$site/tsrnn/kernels"
ln -s "$PWD/datasets" "$site/tsrnn/datasets"
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || exit 1
"$PY" -c "import sys, torch, triton, numba; print(sys.version.split()[0], 'torch', torch.__version__,
'triton', triton.__version__, 'numba', numba.__version__, 'cuda', torch.version.cuda)"

rc=0
if [ "$what" = all ] || [ "$what" = tests ]; then
  # every Triton test (the unmarked ones run compiled on CUDA tensors here), then the
  # forecaster's gpu tests
  { "$PY" -P -m pytest -p no:cacheprovider -rA --tb=short -q tests/kernels/test_triton.py
    r1=$?
    "$PY" -P -m pytest -p no:cacheprovider -m gpu -rA --tb=short -q tests/test_forecaster.py
    r2=$?
    exit $((r1 || r2)); } 2>&1 | tee /tmp/gpu-tests.log
  rc=${PIPESTATUS[0]}
  [ -n "${OUT:-}" ] && cp /tmp/gpu-tests.log "$OUT/"
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  "$PY" benchmarks/activations_triton.py || rc=1
  for extra in "" --kernels-only; do
    "$PY" benchmarks/bench_layers.py --device cuda $extra || rc=1
  done
  [ -n "${OUT:-}" ] && cp benchmarks/results/layers_cuda*.json benchmarks/results/activations_cuda.json "$OUT/"
fi
exit "$rc"
