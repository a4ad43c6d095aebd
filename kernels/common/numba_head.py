"""A linear head and its sum of squared errors, forward and backward in one Numba call each.

Dimension legend: N rows (T*B positions), H hidden size, O outputs per row.

The training loss of :class:`tsrnn.RNNForecaster` is ``scale * Σ (h @ W^T + b - y)^2`` over
the recurrent layer's outputs ``h``. As torch ops that is a linear layer, a loss and a
division, and in backward three products, a sum and their autograd nodes: about 0.5 ms of a
3 ms training step at the hourly benchmark's shape (N = 1536, H = 32, O = 1), almost all of it
per-op overhead. :func:`head_sq_loss` does the same in one forward call and one backward call
(sums over rows in fixed chunks, on Numba's threads for large inputs, with results that do
not depend on the thread count), and falls back to the torch ops
where it does not apply (other devices and dtypes, or more than :data:`MAX_OUTPUTS`
outputs, where the products are worth MKL). ``tests/kernels/test_numba_head.py`` checks the
loss and every gradient against those torch ops.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import prange
from torch.autograd.function import once_differentiable

from tsrnn.kernels.common import workspace
from tsrnn.kernels.common.numba_config import njit, njit_parallel
from tsrnn.kernels.common.numba_glue import as_array

MAX_OUTPUTS = 8
"""Outputs per row up to which the Numba head is used (the hourly and electricity benchmarks
and every recursive model have 1 per target column)."""


CHUNK_ROWS = 512
"""Rows per chunk of the sums over rows: each chunk's partial sums are formed in row order and
the partials added in chunk order, on one thread or several alike (results never depend on
the thread count)."""

PARALLEL_MIN_WORK = 1_000_000
"""Multiply-adds (rows x H x O) from which the head runs on Numba's threads: below, a
parallel region costs more than it saves (see :func:`numba_dense._threads_for`)."""


@njit(inline="always")
def _forward_chunk(h, w, b, y, resid, n0, n1):
    O, H = w.shape
    total = 0.0
    # Arrays indexed directly: a view per row (h[n]) would count references atomically.
    for n in range(n0, n1):
        for o in range(O):
            acc = b[o]
            for k in range(H):
                acc += h[n, k] * w[o, k]
            r = acc - y[n, o]
            resid[n, o] = r
            total += r * r
    return total


@njit(inline="always")
def _backward_chunk(h, w, resid, g, d_h, d_w, d_b, n0, n1):
    """Rows n0..n1-1 of ``d_h``; this chunk's partial ``d_w`` (O, H), ``d_b`` (O,)."""
    O, H = w.shape
    d_w[:] = 0
    d_b[:] = 0
    for n in range(n0, n1):
        for k in range(H):
            d_h[n, k] = 0
        for o in range(O):
            e = g * resid[n, o]
            d_b[o] += e
            for k in range(H):
                d_h[n, k] += e * w[o, k]
                d_w[o, k] += e * h[n, k]


@njit(inline="always")
def _chunks(n: int) -> int:
    return (n + CHUNK_ROWS - 1) // CHUNK_ROWS


@njit(inline="always")
def _sum_forward(part):
    total = 0.0
    for c in range(part.shape[0]):
        total += part[c]
    return total


@njit(inline="always")
def _sum_backward(part_w, part_b, d_w, d_b):
    d_w[:] = 0
    d_b[:] = 0
    for c in range(part_w.shape[0]):  # no chunks (no rows): zero gradients
        for o in range(d_w.shape[0]):
            d_b[o] += part_b[c, o]
            for k in range(d_w.shape[1]):
                d_w[o, k] += part_w[c, o, k]


# The drivers: ``forward`` sets ``resid = h @ w.T + b - y`` (N, O) and returns ``Σ resid^2``
# (float64 sums); ``backward``, with ``e = g * resid`` (g includes the 2 and the scale of the
# loss), sets ``d_h = e @ w``, ``d_w = e^T h``, ``d_b = Σ_n e``. Serial and parallel copies of
# the same chunked arithmetic (two functions, not one factory: Numba's disk cache tells
# functions apart by name).


@njit
def _forward_serial(h, w, b, y, resid):
    N = h.shape[0]
    part = np.zeros(_chunks(N))
    for c in range(part.shape[0]):
        part[c] = _forward_chunk(h, w, b, y, resid, c * CHUNK_ROWS, min(N, (c + 1) * CHUNK_ROWS))
    return _sum_forward(part)


@njit_parallel
def _forward_parallel(h, w, b, y, resid):
    N = h.shape[0]
    part = np.zeros(_chunks(N))
    for c in prange(part.shape[0]):
        part[c] = _forward_chunk(h, w, b, y, resid, c * CHUNK_ROWS, min(N, (c + 1) * CHUNK_ROWS))
    return _sum_forward(part)


@njit
def _backward_serial(h, w, resid, g, d_h, d_w, d_b):
    N = h.shape[0]
    C = _chunks(N)
    part_w = np.empty((C, w.shape[0], w.shape[1]), dtype=d_w.dtype)
    part_b = np.empty((C, w.shape[0]), dtype=d_b.dtype)
    for c in range(C):
        n1 = min(N, (c + 1) * CHUNK_ROWS)
        _backward_chunk(h, w, resid, g, d_h, part_w[c], part_b[c], c * CHUNK_ROWS, n1)
    _sum_backward(part_w, part_b, d_w, d_b)


@njit_parallel
def _backward_parallel(h, w, resid, g, d_h, d_w, d_b):
    N = h.shape[0]
    C = _chunks(N)
    part_w = np.empty((C, w.shape[0], w.shape[1]), dtype=d_w.dtype)
    part_b = np.empty((C, w.shape[0]), dtype=d_b.dtype)
    for c in prange(C):
        n1 = min(N, (c + 1) * CHUNK_ROWS)
        _backward_chunk(h, w, resid, g, d_h, part_w[c], part_b[c], c * CHUNK_ROWS, n1)
    _sum_backward(part_w, part_b, d_w, d_b)


def _parallel(h, w) -> bool:
    return h.shape[0] * h.shape[1] * w.shape[0] >= PARALLEL_MIN_WORK


class _HeadSqLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, target, scale):
        H = hidden.shape[-1]
        O = weight.shape[0]
        h = as_array(hidden).reshape(-1, H)
        resid = np.empty((h.shape[0], O), dtype=h.dtype)
        w = as_array(weight)
        forward = _forward_parallel if _parallel(h, w) else _forward_serial
        total = forward(h, w, as_array(bias), as_array(target).reshape(-1, O), resid)
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
        h, w = as_array(hidden).reshape(-1, H), as_array(weight)
        backward = _backward_parallel if _parallel(h, w) else _backward_serial
        backward(
            h,
            w,
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
