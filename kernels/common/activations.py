"""Scalar activations shared by the Numba kernels (inlined into the jitted loops)."""

from __future__ import annotations

import math

from tsrnn.kernels.common.numba_config import njit

# String options become integer constants before entering jitted code.
TANH = 0
RELU = 1
NONLINEARITIES = {"tanh": TANH, "relu": RELU}


@njit(inline="always")
def sigmoid(x):
    # Two branches keep exp() from overflowing for large |x| in float32.
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)
