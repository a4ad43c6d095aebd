"""Backward of a plain-PyTorch reference forward, by autograd (the spec for every backward).

Dimension legend: T time steps, B batch, H hidden size, G gates (RNN 1, GRU 3, LSTM 4).
"""

from __future__ import annotations

import torch


def backward_by_autograd(forward, grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, **options):
    """Gradients ``(d_gx, d_gh, d_h0, d_c0)`` of a reference ``forward`` by autograd.

    ``d_gh`` (T, B, G*H), the gradient of the recurrent pre-activation, is recovered as
    autograd's gradient of an additive zero offset on ``b_hh`` expanded per step.
    """
    with torch.enable_grad():
        T, B, GH = gx.shape
        gx_ = gx.detach().requires_grad_(True)
        h0_ = h0.detach().requires_grad_(True)
        c0_ = None if c0 is None else c0.detach().requires_grad_(True)
        offset = torch.zeros(T, B, GH, dtype=gx.dtype, device=gx.device, requires_grad=True)
        out, hn, cn, _ = forward(
            gx_, w_hh.detach(), b_hh.detach(), h0_, c0_, gh_offset=offset, **options
        )
        outputs, grads = [out, hn], [grad_out, grad_hn]
        if cn is not None:
            outputs.append(cn)
            grads.append(torch.zeros_like(cn) if grad_cn is None else grad_cn)
        inputs = [gx_, offset, h0_] + ([c0_] if c0_ is not None else [])
        # at T = 0 the output is an empty tensor that depends on nothing: leave it out
        pairs = [(o, g) for o, g in zip(outputs, grads) if o.requires_grad]
        got = torch.autograd.grad(
            [o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True
        )
    got = [torch.zeros_like(i) if g is None else g for i, g in zip(inputs, got)]
    d_c0 = got[3] if c0_ is not None else None
    return got[0], got[1], got[2], d_c0
