"""Elman RNN forward and backward through time as Numba CPU kernels.

Dimension legend: T time steps, B batch, H hidden size, G = 1 gate.

    h' = act(gx + W_hh h + b_hh),   act = tanh | relu

The kernel owns the time loop; threads split the batch (``prange``). Nothing beyond the
outputs is saved for backward: act'(·) is recovered from ``h'`` itself
(tanh: 1 - h'^2, relu: [h' > 0]).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import prange

from tsrnn.kernels.common.activations import NONLINEARITIES, TANH, fast_tanh
from tsrnn.kernels.common.numba_config import njit_parallel
from tsrnn.kernels.common.numba_glue import as_array
from tsrnn.kernels.common.numba_linalg import matvec_add

GATES = 1
BACKWARD_NEEDS_GX = False


@njit_parallel
def _forward(gx, w_hh, b_hh, h0, out, hn, act):
    T, B, H = gx.shape
    for b in prange(B):
        h = h0[b].copy()
        gh = np.empty(H, dtype=gx.dtype)
        for t in range(T):
            matvec_add(w_hh, h, b_hh, gh)
            for j in range(H):
                pre = gx[t, b, j] + gh[j]
                hj = fast_tanh(pre) if act == TANH else max(pre, 0.0)
                h[j] = hj
                out[t, b, j] = hj
        hn[b] = h


@njit_parallel
def _backward(grad_out, grad_hn, w_t, out, d_pre, d_h0, act):
    T, B, H = out.shape
    zero = np.zeros(H, dtype=out.dtype)
    for b in prange(B):
        dh = grad_hn[b].copy()
        for t in range(T - 1, -1, -1):
            for j in range(H):
                hj = out[t, b, j]
                dhj = dh[j] + grad_out[t, b, j]
                if act == TANH:
                    d_pre[t, b, j] = dhj * (1.0 - hj * hj)
                else:
                    d_pre[t, b, j] = dhj if hj > 0.0 else 0.0
            matvec_add(w_t, d_pre[t, b], zero, dh)  # dh_prev = W_hh^T d_pre
        d_h0[b] = dh


def forward(gx, w_hh, b_hh, h0, c0=None, *, nonlinearity="tanh", save=True):
    """RNN over all steps. gx (T, B, H), w_hh (H, H), b_hh (H,), h0 (B, H).

    Returns ``out`` (T, B, H), ``h_n`` (B, H), ``None``, ``saved`` = ``()`` (backward needs
    only ``out``).
    """
    T, B, H = gx.shape
    out = torch.empty((T, B, H), dtype=gx.dtype)
    hn = torch.empty((B, H), dtype=gx.dtype)
    _forward(
        as_array(gx), as_array(w_hh), as_array(b_hh), as_array(h0), out.numpy(), hn.numpy(),
        NONLINEARITIES[nonlinearity],
    )
    return out, hn, None, ()


def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved, *,
             nonlinearity="tanh"):
    """Gradients ``(d_gx, d_gh, d_h0, None)`` with ``d_gh is d_gx``."""
    T, B, H = out.shape
    d_pre = torch.empty((T, B, H), dtype=out.dtype)
    d_h0 = torch.empty(h0.shape, dtype=out.dtype)
    _backward(
        as_array(grad_out), as_array(grad_hn), as_array(w_hh.T), as_array(out), d_pre.numpy(),
        d_h0.numpy(), NONLINEARITIES[nonlinearity],
    )
    return d_pre, d_pre, d_h0, None
