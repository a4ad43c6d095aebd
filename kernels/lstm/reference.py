"""Plain-PyTorch reference of the LSTM over time (torch's equations): the specification.

Dimension legend: T time steps, B batch, H hidden size, G = 4 gates (i, f, g, o).

    i, f, o = σ(gx_* + W_h* h + b_h*),   g = tanh(gx_g + W_hg h + b_hg)
    c' = f * c + i * g
    h' = o * tanh(c')
"""

from __future__ import annotations

import torch

from tsrnn.kernels.common.checks import checked
from tsrnn.kernels.common.reference_autograd import backward_by_autograd

GATES = 4


@checked("lstm", "forward")
def forward(gx, w_hh, b_hh, h0, c0=None, *, nonlinearity="tanh", gh_offset=None, save=True):
    """Run the recurrence. gx (T, B, 4H), w_hh (4H, H), b_hh (4H,), h0 and c0 (B, H).

    Returns ``out`` (T, B, H), ``h_n`` (B, H), ``c_n`` (B, H), ``saved`` (an empty tuple).
    """
    H = h0.shape[-1]
    h, c = h0, c0
    outs = []
    for t in range(gx.shape[0]):
        pre = gx[t] + h @ w_hh.T + b_hh
        if gh_offset is not None:
            pre = pre + gh_offset[t]
        i = torch.sigmoid(pre[:, :H])
        f = torch.sigmoid(pre[:, H : 2 * H])
        g = torch.tanh(pre[:, 2 * H : 3 * H])
        o = torch.sigmoid(pre[:, 3 * H :])
        c = f * c + i * g
        h = o * torch.tanh(c)
        outs.append(h)
    out = torch.stack(outs) if outs else gx.new_empty((0, *h0.shape))
    return out, h, c, ()


@checked("lstm", "backward")
def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved, **options):
    """Gradients ``(d_gx, d_gh, d_h0, d_c0)`` by autograd through :func:`forward`."""
    return backward_by_autograd(forward, grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0,
                                **options)
