"""tsrnn: forecasting time series with recurrent networks.

- :mod:`tsrnn.kernels`: fused RNN/GRU/LSTM kernels (Numba on CPU, Triton on GPU);
- :mod:`tsrnn.nn`: ``RNN``, ``GRU``, ``LSTM``, drop-in replacements for the ``torch.nn`` layers;
- :class:`tsrnn.RNNForecaster`: a scikit-learn forecaster on pandas series;
- :mod:`tsrnn.datasets`: bundled real series and seeded generators.

The estimator side (pandas, scikit-learn) is imported on first use, so ``import tsrnn.kernels``
and ``import tsrnn.nn`` stay light.
"""

from __future__ import annotations

import importlib

from tsrnn.kernels.common.registry import BackendUnavailableError

__version__ = "0.1.0"

_LAZY = {
    "RNNForecaster": "tsrnn.forecaster",
    "warmup": "tsrnn._warmup",
}
_SUBMODULES = ("nn", "kernels", "datasets", "metrics", "model_selection", "exceptions")

__all__ = ["BackendUnavailableError", "RNNForecaster", "__version__", "warmup"]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"tsrnn.{name}")
    raise AttributeError(f"module 'tsrnn' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
