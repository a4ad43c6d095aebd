"""Plain-PyTorch reference of the GRU over time (torch's equations): the specification.

Dimension legend: T time steps, B batch, H hidden size, G = 3 gates (r, z, n).

    r = σ(gx_r + W_hr h + b_hr)
    z = σ(gx_z + W_hz h + b_hz)
    n = tanh(gx_n + r * (W_hn h + b_hn))
    h' = (1 - z) * n + z * h
"""

from __future__ import annotations

import torch

from tsrnn.kernels.common.checks import checked
from tsrnn.kernels.common.reference_autograd import backward_by_autograd

GATES = 3


@checked("gru", "forward")
def forward(gx, w_hh, b_hh, h0, c0=None, *, nonlinearity="tanh", gh_offset=None, save=True):
    """Run the recurrence. gx (T, B, 3H), w_hh (3H, H), b_hh (3H,), h0 (B, H).

    Returns ``out`` (T, B, H), ``h_n`` (B, H), ``None``, ``saved`` (an empty tuple).
    """
    H = h0.shape[-1]
    h = h0
    outs = []
    for t in range(gx.shape[0]):
        gh = h @ w_hh.T + b_hh
        if gh_offset is not None:
            gh = gh + gh_offset[t]
        xr, xz, xn = gx[t, :, :H], gx[t, :, H : 2 * H], gx[t, :, 2 * H :]
        hr, hz, hn = gh[:, :H], gh[:, H : 2 * H], gh[:, 2 * H :]
        r = torch.sigmoid(xr + hr)
        z = torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        outs.append(h)
    out = torch.stack(outs) if outs else gx.new_empty((0, *h0.shape))
    return out, h, None, ()


@checked("gru", "backward")
def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved, **options):
    """Gradients ``(d_gx, d_gh, d_h0, None)`` by autograd through :func:`forward`."""
    return backward_by_autograd(forward, grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0,
                                **options)
