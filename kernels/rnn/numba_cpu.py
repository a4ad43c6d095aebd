"""Elman RNN forward and backward through time as Numba CPU kernels.

Dimension legend: T time steps, B batch, H hidden size, G = 1 gate, R batch rows per block.

    h' = act(gx + W_hh h + b_hh),   act = tanh | relu

The kernel owns the time loop; threads split the batch into blocks of R rows (``prange`` over
blocks), each advanced through every step with one blocked recurrent product
(:func:`rows_matmul_add`). Nothing beyond the
outputs is saved for backward: act'(·) is recovered from ``h'`` itself
(tanh: 1 - h'^2, relu: [h' > 0]).

The backward runs in reverse over chunks of such blocks, their rows and grouping set by ``B``
alone, and sums the layer's weight gradients in its time loop (``backward_with_weight_grads``,
:mod:`~tsrnn.kernels.common.numba_grads`); its plain ``backward`` (the package's calling
convention) is the same loop writing the gate gradients out instead.
"""

from __future__ import annotations

import torch
from numba import prange

from tsrnn.kernels.common import aligned, numba_grads, workspace
from tsrnn.kernels.common.activations import NONLINEARITIES, TANH, fast_tanh, one_minus, relu
from tsrnn.kernels.common.checks import checked
from tsrnn.kernels.common.numba_config import njit_parallel
from tsrnn.kernels.common.numba_glue import as_array
from tsrnn.kernels.common.numba_grads import block_buffers, reduce_parts, step_done
from tsrnn.kernels.common.numba_linalg import (
    block_rows,
    no_projection_args,
    padded_columns,
    projection_args,
    rows_matmul_add,
    step_inputs,
)

GATES = 1
BACKWARD_NEEDS_GX = False
# the backward reads what the forward saved, not b_hh: it is not kept for it (torch.nn's
# backward allows an in-place edit of b_hh between forward and backward too)
BACKWARD_NEEDS_B_HH = False


@njit_parallel
def _forward(gx, xin, wi_t, b_ih, w_t, b_hh, h0, out, hn, act, R):
    T, B, H = out.shape
    for blk in prange((B + R - 1) // R):
        b0 = blk * R
        nr = min(R, B - b0)
        h = aligned.zeros((R, H), out)
        for r in range(nr):
            for j in range(H):
                h[r, j] = h0[b0 + r, j]
        pre = aligned.zeros((R, w_t.shape[1]), out)
        gxb = aligned.zeros((R, wi_t.shape[1]), out)  # padding columns stay 0
        for t in range(T):
            src = step_inputs(gx, xin, wi_t, b_ih, gxb, t, b0, nr)  # (nr, H) rows of gx
            for r in range(nr):
                for j in range(H):
                    pre[r, j] = src[r, j] + b_hh[j]
            rows_matmul_add(h, w_t, pre, nr)  # pre = gx + b_hh + h @ W_hh^T
            for r in range(nr):
                b = b0 + r
                if act == TANH:
                    for j in range(H):
                        out[t, b, j] = fast_tanh(pre[r, j])
                else:
                    for j in range(H):
                        out[t, b, j] = relu(pre[r, j])
                for j in range(H):
                    h[r, j] = out[t, b, j]
        for r in range(nr):
            for j in range(H):
                hn[b0 + r, j] = h[r, j]


@njit_parallel
def _backward(grad_out, grad_hn, w_hh, h0, out, x, d_pre, d_h0, act, R, per_chunk, part, d_w_ih,
              d_b_ih, d_w_hh, d_b_hh):
    T, B, H = out.shape
    fused = part.shape[0] > 0  # accumulate the weight gradients (numba_grads)
    keep = d_pre.shape[0] > 0
    blocks = (B + R - 1) // R
    for ch in prange((blocks + per_chunk - 1) // per_chunk):
        dg, xs, hs, seg = block_buffers(part, ch, R, x.shape[2], H, out)
        dh = aligned.zeros((R, w_hh.shape[1]), out)
        for blk in range(ch * per_chunk, min(blocks, (ch + 1) * per_chunk)):
            b0 = blk * R
            nr = min(R, B - b0)
            for r in range(nr):
                for j in range(H):
                    dh[r, j] = grad_hn[b0 + r, j]
            s = 0  # this step's slot
            f = 0  # additions to the segment's sum
            for t in range(T - 1, -1, -1):
                o = s * nr  # the slot's first row
                for r in range(nr):
                    b = b0 + r
                    q = o + r
                    if act == TANH:
                        for j in range(H):
                            ot = out[t, b, j]
                            dg[q, j] = (dh[r, j] + grad_out[t, b, j]) * one_minus(ot * ot)
                    else:
                        for j in range(H):
                            ot = out[t, b, j]
                            # 0 where the unit is off; a NaN output passes the gradient on,
                            # as torch's threshold_backward does (0 only where ot <= 0)
                            g = dh[r, j] + grad_out[t, b, j]
                            dg[q, j] = 0 if ot <= 0 else g
                    for j in range(H):
                        dh[r, j] = 0
                    if keep:
                        for j in range(H):
                            d_pre[t, b, j] = dg[q, j]
                rows_matmul_add(dg[o : o + nr], w_hh, dh, nr)  # dh_prev = d_pre @ W_hh
                if fused:
                    hq = out[t - 1] if t > 0 else h0
                    s, f = step_done(
                        part[ch], seg, xs, hs, dg, dg, x[t], hq, b0, o, nr, s, f, t == 0, True
                    )
            for r in range(nr):
                for j in range(H):
                    d_h0[b0 + r, j] = dh[r, j]
    if fused:
        reduce_parts(part, x.shape[2], True, d_w_ih, d_b_ih, d_w_hh, d_b_hh)


@checked("rnn", "forward")
def forward(gx, w_hh, b_hh, h0, c0=None, *, nonlinearity="tanh", save=True):
    """RNN over all steps. gx (T, B, H), w_hh (H, H), b_hh (H,), h0 (B, H).

    Returns ``out`` (T, B, H), ``h_n`` (B, H), ``None``, ``saved`` = ``()`` (backward needs
    only ``out``).
    """
    return _run_forward(no_projection_args(gx), gx.shape[0], w_hh, b_hh, h0, nonlinearity)


@checked("rnn", "forward_projected")
def forward_projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0=None, *, nonlinearity="tanh",
                      save=True):
    """:func:`forward` of ``gx = x @ w_ih.T + b_ih``, the projection formed step by step in
    the time loop; x (T, B, I), w_ih (H, I), b_ih (H,) or None."""
    args = projection_args(x, w_ih, b_ih, w_hh.shape[0], as_array(h0).dtype)
    return _run_forward(args, x.shape[0], w_hh, b_hh, h0, nonlinearity)


def _run_forward(inputs, T, w_hh, b_hh, h0, nonlinearity):
    B, H = h0.shape
    out = workspace.empty((T, B, H), h0.dtype)
    hn = torch.empty((B, H), dtype=h0.dtype, device="cpu")
    _forward(
        *inputs, padded_columns(w_hh.T), as_array(b_hh), as_array(h0),
        out.numpy(), hn.numpy(), NONLINEARITIES[nonlinearity], block_rows(B),
    )
    return out, hn, None, ()


@checked("rnn", "backward")
def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved, *,
             nonlinearity="tanh"):
    """Gradients ``(d_gx, d_gh, d_h0, None)`` with ``d_gh is d_gx``."""
    d_pre = workspace.empty(out.shape, out.dtype)
    d_h0, _ = _run_backward(grad_out, grad_hn, w_hh, h0, out, None, d_pre, nonlinearity)
    return d_pre, d_pre, d_h0, None


@checked("rnn", "backward_with_weight_grads")
def backward_with_weight_grads(grad_out, grad_hn, grad_cn, x, w_hh, b_hh, h0, c0, out, saved,
                               *, keep_d_gx=False, nonlinearity="tanh"):
    """Backward through time with the layer's weight gradients formed in the same pass
    (:mod:`~tsrnn.kernels.common.numba_grads`); x (T, B, I) is the layer's input.

    Returns ``(d_gx, d_h0, None, d_w_ih, d_b_ih, d_w_hh, d_b_hh)``, ``d_gx`` (T, B, H) only
    where ``keep_d_gx`` (else ``None``): the layer needs it for ``d_x`` alone.
    """
    d_gx = workspace.empty(out.shape, out.dtype) if keep_d_gx else None
    d_h0, grads = _run_backward(grad_out, grad_hn, w_hh, h0, out, x, d_gx, nonlinearity)
    return (d_gx, d_h0, None, *grads)


def _run_backward(grad_out, grad_hn, w_hh, h0, out, x, d_pre, nonlinearity):
    """The kernel call; weight gradients where ``x`` is given. Returns ``(d_h0, grads)``."""
    _, B, H = out.shape
    xa, tail, grads = numba_grads.backward_args(x, B, H, H, out)
    d_h0 = torch.empty(h0.shape, dtype=out.dtype, device="cpu")
    _backward(
        as_array(grad_out), as_array(grad_hn), padded_columns(w_hh), as_array(h0),
        as_array(out), xa, numba_grads.or_none(d_pre, xa), d_h0.numpy(),
        NONLINEARITIES[nonlinearity], *tail,
    )
    return d_h0, grads
