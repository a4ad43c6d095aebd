#!/usr/bin/env bash
# Creates .venv in the checkout and installs tsrnn with what it needs (idempotent).
# torch is pinned to the CPU wheel this machine kind carries (any other spec pulls several GB
# of CUDA packages); the package itself accepts torch>=2.2.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [ ! -f .venv/.tsrnn-installed ] || [ pyproject.toml -nt .venv/.tsrnn-installed ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q "torch==${TSRNN_TORCH_VERSION:-2.13.0}"
  # setuptools prints a generic notice on every editable install with a package-dir map (that
  # folders named like a package may shadow it), a block of '!!' in a newcomer's first run;
  # what it warns of here (a top-level `import datasets` run from the checkout's root finds
  # datasets/) is in API.md's layout section
  PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q -e ".[test,plot]"
  touch .venv/.tsrnn-installed
fi
