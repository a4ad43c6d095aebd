"""A linear head and its sum of squared errors, forward and backward in one Numba call each.

Dimension legend: N rows (T*B positions), H hidden size, O outputs per row.

The training loss of :class:`tsrnn.RNNForecaster` is ``scale * Σ (h @ W^T + b - y)^2`` over
the recurrent layer's outputs ``h``. As torch ops that is a linear layer, a loss and a
division, and in backward three products, a sum and their autograd nodes: about 0.5 ms of a
3 ms training step at the hourly benchmark's shape (N = 1536, H = 32, O = 1), almost all of it
per-op overhead. :func:`head_sq_loss` does the same in one forward call and one backward call
(serial, rows in order, so results do not depend on threads), and falls back to the torch ops
where it does not apply (other devices and dtypes, or more than :data:`MAX_OUTPUTS`
outputs, where the products are worth MKL). ``tests/kernels/test_numba_head.py`` checks the
loss and every gradient against those torch ops.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from tsrnn.kernels.common import workspace
from tsrnn.kernels.common.numba_config import njit
from tsrnn.kernels.common.numba_glue import as_array

MAX_OUTPUTS = 8
"""Outputs per row up to which the Numba head is used (the hourly and electricity benchmarks
and every recursive model have 1 per target column)."""


@njit
def _forward(h, w, b, y, resid):
    """``resid = h @ w.T + b - y`` (N, O); returns ``Σ resid^2`` (accumulated in float64)."""
    N, H = h.shape
    O = w.shape[0]
    total = 0.0
    for n in range(N):
        hn = h[n]
        for o in range(O):
            wo = w[o]
            acc = b[o]
            for k in range(H):
                acc += hn[k] * wo[k]
            r = acc - y[n, o]
            resid[n, o] = r
            total += r * r
    return total


@njit
def _backward(h, w, resid, g, d_h, d_w, d_b):
    """With ``e = g * resid``: ``d_h = e @ w``, ``d_w = e^T h``, ``d_b = Σ_n e`` (g includes the
    2 and the scale of the loss)."""
    N, H = h.shape
    O = w.shape[0]
    d_w[:] = 0
    d_b[:] = 0
    for n in range(N):
        hn, dn = h[n], d_h[n]
        for k in range(H):
            dn[k] = 0
        for o in range(O):
            e = g * resid[n, o]
            d_b[o] += e
            wo, dwo = w[o], d_w[o]
            for k in range(H):
                dn[k] += e * wo[k]
                dwo[k] += e * hn[k]


class _HeadSqLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, target, scale):
        H = hidden.shape[-1]
        O = weight.shape[0]
        h = as_array(hidden).reshape(-1, H)
        resid = np.empty((h.shape[0], O), dtype=h.dtype)
        total = _forward(
            h, as_array(weight), as_array(bias), as_array(target).reshape(-1, O), resid
        )
        ctx.save_for_backward(hidden, weight)
        ctx.resid, ctx.scale = resid, scale
        return hidden.new_tensor(scale * total)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        hidden, weight = ctx.saved_tensors
        H = hidden.shape[-1]
        d_h = workspace.empty(hidden.shape, hidden.dtype)
        d_w = torch.empty(weight.shape, dtype=weight.dtype)
        d_b = torch.empty(weight.shape[0], dtype=weight.dtype)
        _backward(
            as_array(hidden).reshape(-1, H),
            as_array(weight),
            ctx.resid,
            2.0 * ctx.scale * float(grad),
            d_h.numpy().reshape(-1, H),
            d_w.numpy(),
            d_b.numpy(),
        )
        return d_h, d_w, d_b, None, None


def head_sq_loss(hidden, weight, bias, target, scale):
    """``scale * Σ (F.linear(hidden, weight, bias) - target) ** 2``, differentiable.

    Parameters
    ----------
    hidden : Tensor (..., H)
    weight : Tensor (O, H)
    bias : Tensor (O,)
    target : Tensor (..., O)
    scale : float

    Returns
    -------
    Tensor (0-dim)
    """
    fused = (
        hidden.device.type == "cpu"
        and hidden.dtype in (torch.float32, torch.float64)
        and weight.dtype == bias.dtype == target.dtype == hidden.dtype
        and weight.shape[0] <= MAX_OUTPUTS
    )
    if not fused:
        pred = torch.nn.functional.linear(hidden, weight, bias)
        return torch.nn.functional.mse_loss(pred, target, reduction="sum") * scale
    return _HeadSqLoss.apply(hidden, weight, bias, target, float(scale))
