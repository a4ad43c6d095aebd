"""GRU forward and backward through time as Numba CPU kernels.

Dimension legend: T time steps, B batch, H hidden size, G = 3 gates (r, z, n), GH = 3H.

Equations (torch's form, the reset gate applied to the recurrent product of n)::

    gh = W_hh h + b_hh                        (GH,)
    r = σ(gx_r + gh_r),  z = σ(gx_z + gh_z),  n = tanh(gx_n + r * gh_n)
    h' = (1 - z) * n + z * h

The kernel owns the time loop; batch rows are independent, so threads split the batch
(``prange``) and each runs every step of its rows. Saved for backward: the activated gates
(T, B, 3H) and ``gh_n`` (T, B, H).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import prange

from tsrnn.kernels.common.activations import fast_tanh, sigmoid
from tsrnn.kernels.common.numba_config import njit_parallel
from tsrnn.kernels.common.numba_glue import as_array
from tsrnn.kernels.common.numba_linalg import matvec_add

GATES = 3
BACKWARD_NEEDS_GX = False


@njit_parallel
def _forward(gx, w_hh, b_hh, h0, out, hn, gates, ghn, save):
    T, B, GH = gx.shape
    H = GH // 3
    for b in prange(B):
        h = h0[b].copy()
        gh = np.empty(GH, dtype=gx.dtype)
        for t in range(T):
            matvec_add(w_hh, h, b_hh, gh)
            for j in range(H):
                r = sigmoid(gx[t, b, j] + gh[j])
                z = sigmoid(gx[t, b, H + j] + gh[H + j])
                n = fast_tanh(gx[t, b, 2 * H + j] + r * gh[2 * H + j])
                hj = (1.0 - z) * n + z * h[j]
                h[j] = hj  # h[j] is not read again this step: the product is done
                out[t, b, j] = hj
                if save:
                    gates[t, b, j] = r
                    gates[t, b, H + j] = z
                    gates[t, b, 2 * H + j] = n
                    ghn[t, b, j] = gh[2 * H + j]
        hn[b] = h


@njit_parallel
def _backward(grad_out, grad_hn, w_t, h0, out, gates, ghn, d_gx, d_gh, d_h0):
    T, B, GH = gates.shape
    H = GH // 3
    for b in prange(B):
        dh = grad_hn[b].copy()
        dhz = np.empty(H, dtype=gates.dtype)
        for t in range(T - 1, -1, -1):
            for j in range(H):
                dhj = dh[j] + grad_out[t, b, j]
                hp = out[t - 1, b, j] if t > 0 else h0[b, j]
                r = gates[t, b, j]
                z = gates[t, b, H + j]
                n = gates[t, b, 2 * H + j]
                dn = dhj * (1.0 - z) * (1.0 - n * n)
                dz = dhj * (hp - n) * z * (1.0 - z)
                dr = dn * ghn[t, b, j] * r * (1.0 - r)
                d_gx[t, b, j] = dr
                d_gx[t, b, H + j] = dz
                d_gx[t, b, 2 * H + j] = dn
                d_gh[t, b, j] = dr
                d_gh[t, b, H + j] = dz
                d_gh[t, b, 2 * H + j] = dn * r
                dhz[j] = dhj * z
            matvec_add(w_t, d_gh[t, b], dhz, dh)  # dh_prev = W_hh^T d_gh + dh * z
        d_h0[b] = dh


def forward(gx, w_hh, b_hh, h0, c0=None, *, save=True):
    """GRU over all steps. gx (T, B, 3H), w_hh (3H, H), b_hh (3H,), h0 (B, H).

    Returns ``out`` (T, B, H), ``h_n`` (B, H), ``None``, ``saved`` = (gates (T, B, 3H),
    gh_n (T, B, H)) when ``save`` else ``()``.
    """
    T, B, GH = gx.shape
    H = GH // 3
    out = torch.empty((T, B, H), dtype=gx.dtype)
    hn = torch.empty((B, H), dtype=gx.dtype)
    shape_g, shape_n = ((T, B, GH), (T, B, H)) if save else ((1, 1, GH), (1, 1, H))
    gates = torch.empty(shape_g, dtype=gx.dtype)
    ghn = torch.empty(shape_n, dtype=gx.dtype)
    _forward(
        as_array(gx), as_array(w_hh), as_array(b_hh), as_array(h0),
        out.numpy(), hn.numpy(), gates.numpy(), ghn.numpy(), save,
    )
    return out, hn, None, ((gates, ghn) if save else ())


def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved):
    """Gradients ``(d_gx, d_gh, d_h0, None)``; see :mod:`tsrnn.kernels` for the convention."""
    gates, ghn = saved
    T, B, GH = gates.shape
    d_gx = torch.empty((T, B, GH), dtype=gates.dtype)
    d_gh = torch.empty((T, B, GH), dtype=gates.dtype)
    d_h0 = torch.empty(h0.shape, dtype=gates.dtype)
    _backward(
        as_array(grad_out), as_array(grad_hn), as_array(w_hh.T), as_array(h0), as_array(out),
        as_array(gates), as_array(ghn), d_gx.numpy(), d_gh.numpy(), d_h0.numpy(),
    )
    return d_gx, d_gh, d_h0, None
