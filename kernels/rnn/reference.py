"""Plain-PyTorch reference of the Elman RNN over time: the specification.

Dimension legend: T time steps, B batch, H hidden size, G = 1 gate.

    h_t = act(gx_t + h_{t-1} @ W_hh.T + b_hh),   act = tanh | relu
"""

from __future__ import annotations

import torch

from tsrnn.kernels.common.checks import checked
from tsrnn.kernels.common.reference_autograd import backward_by_autograd

GATES = 1


@checked("rnn", "forward")
def forward(gx, w_hh, b_hh, h0, c0=None, *, nonlinearity="tanh", gh_offset=None, save=True):
    """Run the recurrence. gx (T, B, H), w_hh (H, H), b_hh (H,), h0 (B, H).

    Returns ``out`` (T, B, H), ``h_n`` (B, H), ``None``, ``saved`` (an empty tuple).
    """
    act = torch.tanh if nonlinearity == "tanh" else torch.relu
    h = h0
    outs = []
    for t in range(gx.shape[0]):
        gh = h @ w_hh.T + b_hh
        if gh_offset is not None:
            gh = gh + gh_offset[t]
        h = act(gx[t] + gh)
        outs.append(h)
    out = torch.stack(outs) if outs else gx.new_empty((0, *h0.shape))
    return out, h, None, ()


@checked("rnn", "backward")
def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved, **options):
    """Gradients ``(d_gx, d_gh, d_h0, None)`` by autograd through :func:`forward`."""
    return backward_by_autograd(forward, grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0,
                                **options)
