"""LSTM forward and backward through time as Numba CPU kernels.

Dimension legend: T time steps, B batch, H hidden size, G = 4 gates (i, f, g, o), GH = 4H.

    pre = gx + W_hh h + b_hh                                  (GH,)
    i, f, o = σ(pre_i), σ(pre_f), σ(pre_o);  g = tanh(pre_g)
    c' = f * c + i * g;   h' = o * tanh(c')

The kernel owns the time loop; threads split the batch (``prange``). Saved for backward: the
activated gates (T, B, 4H) and the cell states (T, B, H).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import prange

from tsrnn.kernels.common.activations import fast_tanh, sigmoid
from tsrnn.kernels.common.numba_config import njit_parallel
from tsrnn.kernels.common.numba_glue import as_array
from tsrnn.kernels.common.numba_linalg import matvec_add

GATES = 4
BACKWARD_NEEDS_GX = False


@njit_parallel
def _forward(gx, w_hh, b_hh, h0, c0, out, hn, cn, gates, cs, save):
    T, B, GH = gx.shape
    H = GH // 4
    for b in prange(B):
        h = h0[b].copy()
        c = c0[b].copy()
        gh = np.empty(GH, dtype=gx.dtype)
        for t in range(T):
            matvec_add(w_hh, h, b_hh, gh)
            for j in range(H):
                i = sigmoid(gx[t, b, j] + gh[j])
                f = sigmoid(gx[t, b, H + j] + gh[H + j])
                g = fast_tanh(gx[t, b, 2 * H + j] + gh[2 * H + j])
                o = sigmoid(gx[t, b, 3 * H + j] + gh[3 * H + j])
                cj = f * c[j] + i * g
                hj = o * fast_tanh(cj)
                c[j] = cj
                h[j] = hj
                out[t, b, j] = hj
                if save:
                    gates[t, b, j] = i
                    gates[t, b, H + j] = f
                    gates[t, b, 2 * H + j] = g
                    gates[t, b, 3 * H + j] = o
                    cs[t, b, j] = cj
        hn[b] = h
        cn[b] = c


@njit_parallel
def _backward(grad_out, grad_hn, grad_cn, w_t, c0, gates, cs, d_pre, d_h0, d_c0):
    T, B, GH = gates.shape
    H = GH // 4
    zero = np.zeros(H, dtype=gates.dtype)
    for b in prange(B):
        dh = grad_hn[b].copy()
        dc = grad_cn[b].copy()
        for t in range(T - 1, -1, -1):
            for j in range(H):
                dhj = dh[j] + grad_out[t, b, j]
                i = gates[t, b, j]
                f = gates[t, b, H + j]
                g = gates[t, b, 2 * H + j]
                o = gates[t, b, 3 * H + j]
                cj = cs[t, b, j]
                cp = cs[t - 1, b, j] if t > 0 else c0[b, j]
                tc = fast_tanh(cj)
                dcj = dc[j] + dhj * o * (1.0 - tc * tc)
                d_pre[t, b, j] = dcj * g * i * (1.0 - i)
                d_pre[t, b, H + j] = dcj * cp * f * (1.0 - f)
                d_pre[t, b, 2 * H + j] = dcj * i * (1.0 - g * g)
                d_pre[t, b, 3 * H + j] = dhj * tc * o * (1.0 - o)
                dc[j] = dcj * f
            matvec_add(w_t, d_pre[t, b], zero, dh)  # dh_prev = W_hh^T d_pre
        d_h0[b] = dh
        d_c0[b] = dc


def forward(gx, w_hh, b_hh, h0, c0=None, *, save=True):
    """LSTM over all steps. gx (T, B, 4H), w_hh (4H, H), b_hh (4H,), h0 and c0 (B, H).

    Returns ``out`` (T, B, H), ``h_n``, ``c_n`` (B, H), ``saved`` = (gates (T, B, 4H),
    cell states (T, B, H)) when ``save`` else ``()``.
    """
    T, B, GH = gx.shape
    H = GH // 4
    if c0 is None:
        c0 = torch.zeros_like(h0)
    out = torch.empty((T, B, H), dtype=gx.dtype)
    hn = torch.empty((B, H), dtype=gx.dtype)
    cn = torch.empty((B, H), dtype=gx.dtype)
    shape_g, shape_c = ((T, B, GH), (T, B, H)) if save else ((1, 1, GH), (1, 1, H))
    gates = torch.empty(shape_g, dtype=gx.dtype)
    cs = torch.empty(shape_c, dtype=gx.dtype)
    _forward(
        as_array(gx), as_array(w_hh), as_array(b_hh), as_array(h0), as_array(c0),
        out.numpy(), hn.numpy(), cn.numpy(), gates.numpy(), cs.numpy(), save,
    )
    return out, hn, cn, ((gates, cs) if save else ())


def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved):
    """Gradients ``(d_gx, d_gh, d_h0, d_c0)`` with ``d_gh is d_gx``."""
    gates, cs = saved
    T, B, GH = gates.shape
    if c0 is None:
        c0 = torch.zeros_like(h0)
    if grad_cn is None:
        grad_cn = torch.zeros_like(h0)
    d_pre = torch.empty((T, B, GH), dtype=gates.dtype)
    d_h0 = torch.empty(h0.shape, dtype=gates.dtype)
    d_c0 = torch.empty(h0.shape, dtype=gates.dtype)
    _backward(
        as_array(grad_out), as_array(grad_hn), as_array(grad_cn), as_array(w_hh.T),
        as_array(c0), as_array(gates), as_array(cs), d_pre.numpy(), d_h0.numpy(), d_c0.numpy(),
    )
    return d_pre, d_pre, d_h0, d_c0
