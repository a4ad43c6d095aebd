#!/usr/bin/env bash
# The whole test suite, from a fresh clone: sets up .venv, then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/python -m pytest "$@"
