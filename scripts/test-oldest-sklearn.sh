#!/usr/bin/env bash
# The oldest scikit-learn and pandas tsrnn supports (pyproject: >=1.6, >=3.0), in their own
# venv (.venv-oldest): the estimator checks and the scorers, and the tests that lean most on
# pandas (input checks, calendars, the datasets).
set -euo pipefail
cd "$(dirname "$0")/.."
OLDEST_SKLEARN=1.6.1
OLDEST_PANDAS=3.0.0
PY=${PYTHON:-python3}
if [ ! -x .venv-oldest/bin/python ]; then
  "$PY" -m venv .venv-oldest
fi
if [ ! -f .venv-oldest/.tsrnn-installed ] || [ pyproject.toml -nt .venv-oldest/.tsrnn-installed ] \
  || [ scripts/test-oldest-sklearn.sh -nt .venv-oldest/.tsrnn-installed ]; then
  .venv-oldest/bin/python -m pip install -q --upgrade pip
  .venv-oldest/bin/python -m pip install -q "torch==${TSRNN_TORCH_VERSION:-2.13.0}" "scikit-learn==$OLDEST_SKLEARN" "pandas==$OLDEST_PANDAS"
  # setuptools prints a generic notice on every editable install with a package-dir map (that
  # folders named like a package may shadow it), a block of '!!' in a newcomer's first run;
  # what it warns of here (a top-level `import datasets` run from the checkout's root finds
  # datasets/) is in API.md's layout section
  PYTHONWARNINGS="ignore:Editable installation" .venv-oldest/bin/python -m pip install -q -e ".[test]" "scikit-learn==$OLDEST_SKLEARN" "pandas==$OLDEST_PANDAS"
  touch .venv-oldest/.tsrnn-installed
fi
.venv-oldest/bin/python -c "import sklearn, pandas
assert sklearn.__version__ == '$OLDEST_SKLEARN', sklearn.__version__
assert pandas.__version__ == '$OLDEST_PANDAS', pandas.__version__"
.venv-oldest/bin/python -m pytest tests/test_forecaster_sklearn.py tests/test_metrics.py \
  tests/test_forecaster_bad_input.py tests/test_calendars.py tests/datasets "$@"
