"""The recurrent product of one batch row, shared by the Numba kernels.

Dimension legend: N output size, K reduction size.

Written as dot products over contiguous rows (``fastmath`` reassociation lets LLVM vectorise
the reduction). Kept in the jitted time loop rather than calling BLAS once per step: for the
small hidden sizes of forecasting models a BLAS call costs more than the product itself.
"""

from __future__ import annotations

from tsrnn.kernels.common.numba_config import njit


@njit(inline="always")
def matvec_add(w, x, bias, out):
    """``out = bias + w @ x``; w (N, K) row-major, x (K,), bias (N,), out (N,)."""
    N, K = w.shape
    for j in range(N):
        acc = bias[j]
        for k in range(K):
            acc += w[j, k] * x[k]
        out[j] = acc
