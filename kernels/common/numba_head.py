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

For a one-layer GRU on the Numba backend the forecaster goes further
(:func:`tsrnn.nn.layer_head_sq_loss`): :func:`head_rows` and :func:`head_backward_rows` run
the head inside the GRU kernel's time loops, so the layer's output is not read again by
:func:`head_sq_loss` (nor its (T, B, H) gradient written out and read back by the
kernel's backward). Electricity benchmark batch (T=96, B=256, H=64, 2 threads, alternated
fits in one process): 26.3 ms against 27.5 ms with the separate head.
``tests/test_layer_head.py`` checks it against torch.nn.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import prange
from torch.autograd.function import once_differentiable

from tsrnn.kernels.common import aligned, workspace
from tsrnn.kernels.common.numba_config import njit, njit_parallel
from tsrnn.kernels.common.numba_glue import as_array
from tsrnn.kernels.common.numba_simd import (
    vector_lanes,
    vfma,
    vload,
    vload3,
    vmuladd,
    vstore,
    vsum,
    vzero,
)

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


@njit
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


@njit
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


@njit
def _chunks(n: int) -> int:
    return (n + CHUNK_ROWS - 1) // CHUNK_ROWS


@njit
def _sum_forward(part):
    total = 0.0
    for c in range(part.shape[0]):
        total += part[c]
    return total


@njit
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


# The head inside a recurrent kernel's time loop (see :func:`tsrnn.nn.layer_head_sq_loss`): the
# forward forms each step's residuals while the new states are in cache, the backward adds the
# head's gradient to the state's and sums the head's weight gradients, so the layer's output
# is not read again by a head, nor a (T, B, H) gradient written out and read back.


@njit
def head_rows(h, s0, w_o, b_o, y, resid, t, b0, nr):
    """``resid[t, b] = h[r, s0 : s0 + H] @ w_o^T + b_o - y[t, b]`` for the rows ``r < nr``
    (``b = b0 + r``) of a block's states ``h``; w_o (O, H): the head's weight. Each dot
    product in SIMD vectors (:mod:`numba_simd`), then the columns past the last whole one."""
    O = w_o.shape[0]
    H = w_o.shape[1]
    L = vector_lanes(h)
    Hv = H - H % L
    for r in range(nr):
        b = b0 + r
        for o in range(O):
            acc = b_o[o]
            if Hv > 0:
                v = vzero(h)
                for j in range(0, Hv, L):
                    v = vmuladd(vload(h, r, s0 + j), vload(w_o, o, j), v)
                acc += vsum(v)
            for j in range(Hv, H):
                acc += h[r, s0 + j] * w_o[o, j]
            resid[t, b, o] = acc - y[t, b, o]


@njit
def head_backward_rows(dh, e, w_o, out, acc, stage, c, t, b0, nr):
    """For the rows ``b = b0 + r`` (``r < nr``) of step ``t``, with ``e`` (T, B, O) the loss's
    gradient with respect to the head's outputs: ``dh[r, :H] += e[t, b] @ w_o`` (the state's
    gradient from the head), and into chunk ``c``'s partial ``acc[c]`` (O, H + 1), float64,
    the head's weight gradient ``acc[c, o, :H] += Σ_r e[t, b, o] * out[t, b]`` and bias
    gradient ``acc[c, o, H] += Σ_r e[t, b, o]``. The rows' sum is formed in SIMD vectors of
    ``dh``'s dtype and staged in ``stage`` (1, >= H) before it joins the float64 partial
    (indexed, not a view: see :func:`_forward_chunk`)."""
    O = w_o.shape[0]
    H = w_o.shape[1]
    L = vector_lanes(dh)
    Hv = H - H % L
    for o in range(O):
        for r in range(nr):
            eo = e[t, b0 + r, o]
            for j in range(0, Hv, L):
                vstore(dh, r, j, vfma(vload(dh, r, j), eo, vload(w_o, o, j)))
            for j in range(Hv, H):
                dh[r, j] += eo * w_o[o, j]
        for j in range(0, Hv, L):
            v = vzero(dh)
            for r in range(nr):
                v = vfma(v, e[t, b0 + r, o], vload3(out, t, b0 + r, j))
            vstore(stage, 0, j, v)
        for j in range(Hv, H):
            sj = e[t, b0, o] * out[t, b0, j]
            for r in range(1, nr):
                sj += e[t, b0 + r, o] * out[t, b0 + r, j]
            stage[0, j] = sj
        sb = 0.0
        for r in range(nr):
            sb += e[t, b0 + r, o]
        for j in range(H):
            acc[c, o, j] += stage[0, j]
        acc[c, o, H] += sb


@njit
def sum_squares(resid):
    """``Σ resid^2`` in float64, in a fixed order: 8 running sums over the flat array (element
    ``i`` into sum ``i % 8``), then added in order. One running sum would wait on each
    addition's latency: 53 against 8 us at the electricity benchmark's (96, 256, 1)."""
    r = resid.reshape(-1)
    n = r.shape[0]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    m = n - n % 8
    for i in range(0, m, 8):
        s0 += np.float64(r[i]) * r[i]
        s1 += np.float64(r[i + 1]) * r[i + 1]
        s2 += np.float64(r[i + 2]) * r[i + 2]
        s3 += np.float64(r[i + 3]) * r[i + 3]
        s4 += np.float64(r[i + 4]) * r[i + 4]
        s5 += np.float64(r[i + 5]) * r[i + 5]
        s6 += np.float64(r[i + 6]) * r[i + 6]
        s7 += np.float64(r[i + 7]) * r[i + 7]
    for i in range(m, n):
        s0 += np.float64(r[i]) * r[i]
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


def head_backward_args(head, chunks: int, H: int, dtype):
    """A backward kernel's head arguments ``(w_o, e, hacc)`` for ``head`` ``(w_o, e)``
    (tensors) or None (empty arrays), ``hacc`` the chunks' zeroed float64 partials."""
    if head is None:
        return np.zeros((0, 0), dtype=dtype), np.zeros((0, 1, 1), dtype=dtype), np.zeros((0, 0, 0))
    w_o, e = aligned.aligned_view(head[0]), as_array(head[1])
    return w_o, e, aligned.zeros_array((chunks, w_o.shape[0], H + 1), np.float64)


def add_head_grads(hacc, d_w_o, d_b_o):
    """Add the head's gradients from the chunks' partials ``hacc`` into the arrays ``d_w_o``
    (O, H) and ``d_b_o`` (O,) (:func:`_reduce_head`)."""
    if hacc.shape[1]:
        _reduce_head(hacc, d_w_o, d_b_o, True)


def head_grads(hacc, dtype):
    """``(d_w_o, d_b_o)`` tensors of ``dtype`` from the chunks' partials ``hacc`` (C, O, H + 1),
    added in chunk order (:func:`_reduce_head`); ``()`` without a head."""
    if hacc.shape[1] == 0:
        return ()
    O, H1 = hacc.shape[1:]
    d_w_o = torch.empty((O, H1 - 1), dtype=dtype, device="cpu")
    d_b_o = torch.empty(O, dtype=dtype, device="cpu")
    _reduce_head(hacc, d_w_o.numpy(), d_b_o.numpy())
    return d_w_o, d_b_o


@njit
def _reduce_head(hacc, d_w_o, d_b_o, add=False):
    """``d_w_o`` (O, H) and ``d_b_o`` (O,) from the chunks' partials ``hacc`` (C, O, H + 1),
    added in chunk order; written, or with ``add`` added to what they hold (the sum rounded
    to their dtype first, as ``grad.add_(g)``)."""
    O, H = d_w_o.shape
    g = np.empty(1, dtype=d_w_o.dtype)  # the sum in the gradients' dtype
    for o in range(O):
        for j in range(H + 1):
            total = 0.0  # no chunks (no rows): zero gradients
            for c in range(hacc.shape[0]):
                total += hacc[c, o, j]
            g[0] = total
            if j < H:
                d_w_o[o, j] = d_w_o[o, j] + g[0] if add else g[0]
            else:
                d_b_o[o] = d_b_o[o] + g[0] if add else g[0]


def no_head(dtype):
    """Empty head arrays for a kernel called without one: ``(w_o, b_o, y, resid)``."""
    return (
        np.zeros((0, 0), dtype=dtype),
        np.zeros(0, dtype=dtype),
        np.zeros((0, 1, 1), dtype=dtype),
        np.zeros((0, 1, 1), dtype=dtype),
    )


def _parallel(h, w) -> bool:
    return h.shape[0] * h.shape[1] * w.shape[0] >= PARALLEL_MIN_WORK


class _HeadSqLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, bias, target, scale):
        H = hidden.shape[-1]
        O = weight.shape[0]
        h = as_array(hidden).reshape(-1, H)
        resid = np.empty((h.shape[0], O), dtype=h.dtype)
        w = aligned.aligned_view(weight)
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
        d_w = torch.empty(weight.shape, dtype=weight.dtype, device="cpu")
        d_b = torch.empty(weight.shape[0], dtype=weight.dtype, device="cpu")
        h, w = as_array(hidden).reshape(-1, H), aligned.aligned_view(weight)
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
        and 1 <= weight.shape[0] <= MAX_OUTPUTS
    )
    if not fused:
        pred = torch.nn.functional.linear(hidden, weight, bias)
        return torch.nn.functional.mse_loss(pred, target, reduction="sum") * scale
    return _HeadSqLoss.apply(hidden, weight, bias, target, float(scale))
