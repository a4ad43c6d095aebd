"""Triton GPU kernels of the GRU over time (torch's form): one persistent launch each way.

Dimension legend: T time steps, B batch, H hidden size, G = 3 gates (r, z, n); ``BLOCK_B`` batch
rows per program, ``CH`` hidden chunk, ``NCH`` chunks (see
:mod:`tsrnn.kernels.common.triton_utils`).

    r = σ(gx_r + W_hr h + b_hr)
    z = σ(gx_z + W_hz h + b_hz)
    n = tanh(gx_n + r * (W_hn h + b_hn))
    h' = (1 - z) * n + z * h

Because the reset gate multiplies ``W_hn h + b_hn`` (not ``h``), all three recurrent products
depend on ``h`` alone and form one ``h @ W_hh^T`` (BLOCK_B x H) @ (H x 3H) per step, done as one
``tl.dot`` per gate block so that each gate's columns line up with ``h``'s without slicing.

Forward saves, in fp32 (fp64 for float64 inputs), ``saved[0]`` (T, B, 4H) = ``[r | z | n |
W_hn h + b_hn]``. Backward, time in reverse, with ``dh`` the gradient reaching ``h_t``::

    d_an = dh (1 - z) (1 - n^2)            d_gx_n = d_an,   d_gh_n = d_an * r
    d_ar = d_an (W_hn h + b_hn) r (1 - r)   d_gx_r = d_gh_r = d_ar
    d_az = dh (h_{t-1} - n) z (1 - z)       d_gx_z = d_gh_z = d_az
    dh_{t-1} = dh * z + d_gh_t @ W_hh

``d_gx`` and ``d_gh`` differ only in the ``n`` block; ``gx`` is not needed.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tsrnn.kernels.common import triton_utils as tu
from tsrnn.kernels.common.checks import checked
from tsrnn.kernels.common.triton_utils import load_rows, load_w, mm, sigmoid, store_rows, tanh
from tsrnn.kernels.gru import reference

GATES = 3
BACKWARD_NEEDS_GX = False


@triton.jit
def _bias(b, g, cols, H: tl.constexpr, ACC_DTYPE: tl.constexpr):
    return tl.load(b + g * H + cols, mask=cols < H, other=0.0).to(ACC_DTYPE)[None, :]


@triton.jit
def _gru_cell(gx, off, out, sv, row, cols, m, hr, hz, hn, h,
              H: tl.constexpr, HAS_OFFSET: tl.constexpr, SAVE: tl.constexpr,
              ACC_DTYPE: tl.constexpr):
    """One step on columns ``cols``: recurrent parts ``hr, hz, hn`` (bias included) -> ``h'``."""
    if HAS_OFFSET:
        hr += load_rows(off, row, 3 * H, cols, m).to(ACC_DTYPE)
        hz += load_rows(off, row, 3 * H, H + cols, m).to(ACC_DTYPE)
        hn += load_rows(off, row, 3 * H, 2 * H + cols, m).to(ACC_DTYPE)
    r = sigmoid(load_rows(gx, row, 3 * H, cols, m).to(ACC_DTYPE) + hr)
    z = sigmoid(load_rows(gx, row, 3 * H, H + cols, m).to(ACC_DTYPE) + hz)
    n = tanh(load_rows(gx, row, 3 * H, 2 * H + cols, m).to(ACC_DTYPE) + r * hn)
    h = (1.0 - z) * n + z * h
    store_rows(out, row, H, cols, h, m)
    if SAVE:
        store_rows(sv, row, 4 * H, cols, r, m)
        store_rows(sv, row, 4 * H, H + cols, z, m)
        store_rows(sv, row, 4 * H, 2 * H + cols, n, m)
        store_rows(sv, row, 4 * H, 3 * H + cols, hn, m)
    return h


@triton.heuristics({
    "HAS_OFFSET": lambda a: a["off"] is not None,
    "SAVE": lambda a: a["sv"] is not None,
})
@tu.autotune
@triton.jit(do_not_specialize=["T", "B"])
def _gru_fwd_kernel(
    gx, w, b, h0, off, out, hn_out, sv, hbuf, T, B,
    H: tl.constexpr, HAS_OFFSET: tl.constexpr, SAVE: tl.constexpr,
    BLOCK_B: tl.constexpr, CH: tl.constexpr, NCH: tl.constexpr, RESIDENT: tl.constexpr,
    DOT_DTYPE: tl.constexpr, ACC_DTYPE: tl.constexpr, PRECISION: tl.constexpr,
):
    rb = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)  # batch rows
    mb = rb < B
    rc = tl.arange(0, CH)
    step = B.to(tl.int64)
    if RESIDENT:
        m = mb[:, None] & (rc < H)[None, :]
        # W_hr^T, W_hz^T, W_hn^T (CH x CH each): on chip for all T steps
        wr = load_w(w, 0, 0, 0, H, CH, True)
        wz = load_w(w, 1, 0, 0, H, CH, True)
        wn = load_w(w, 2, 0, 0, H, CH, True)
        br = _bias(b, 0, rc, H, ACC_DTYPE)
        bz = _bias(b, 1, rc, H, ACC_DTYPE)
        bn = _bias(b, 2, rc, H, ACC_DTYPE)
        h = load_rows(h0, rb, H, rc, m).to(ACC_DTYPE)
        row = rb
        for _ in range(T):
            hr = mm(h, wr, DOT_DTYPE, ACC_DTYPE, PRECISION) + br
            hz = mm(h, wz, DOT_DTYPE, ACC_DTYPE, PRECISION) + bz
            hn = mm(h, wn, DOT_DTYPE, ACC_DTYPE, PRECISION) + bn
            h = _gru_cell(gx, off, out, sv, row, rc, m, hr, hz, hn, h,
                          H, HAS_OFFSET, SAVE, ACC_DTYPE)
            row += step
        store_rows(hn_out, rb, H, rc, h, m)
    else:
        n_rows = tl.num_programs(0).to(tl.int64) * BLOCK_B  # rows of one scratch slot
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(hbuf, rb, H, cols, load_rows(h0, rb, H, cols, m).to(ACC_DTYPE), m)
        tl.debug_barrier()
        row = rb
        for t in range(T):
            src = hbuf + (t % 2) * n_rows * H  # h_{t-1}, fp32
            dst = hbuf + ((t + 1) % 2) * n_rows * H  # h_t
            for n in range(NCH):
                cols = n * CH + rc
                m = mb[:, None] & (cols < H)[None, :]
                hr = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                hz = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                hn = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                for k in range(NCH):
                    kcols = k * CH + rc
                    hk = load_rows(src, rb, H, kcols, mb[:, None] & (kcols < H)[None, :])
                    hr += mm(hk, load_w(w, 0, k * CH, n * CH, H, CH, True),
                             DOT_DTYPE, ACC_DTYPE, PRECISION)
                    hz += mm(hk, load_w(w, 1, k * CH, n * CH, H, CH, True),
                             DOT_DTYPE, ACC_DTYPE, PRECISION)
                    hn += mm(hk, load_w(w, 2, k * CH, n * CH, H, CH, True),
                             DOT_DTYPE, ACC_DTYPE, PRECISION)
                hr += _bias(b, 0, cols, H, ACC_DTYPE)
                hz += _bias(b, 1, cols, H, ACC_DTYPE)
                hn += _bias(b, 2, cols, H, ACC_DTYPE)
                h = _gru_cell(gx, off, out, sv, row, cols, m, hr, hz, hn,
                              load_rows(src, rb, H, cols, m), H, HAS_OFFSET, SAVE, ACC_DTYPE)
                store_rows(dst, rb, H, cols, h, m)
            # every column of h_t must be written before any chunk of step t+1 reads it
            tl.debug_barrier()
            row += step
        last = hbuf + (T % 2) * n_rows * H
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(hn_out, rb, H, cols, load_rows(last, rb, H, cols, m), m)


@triton.jit
def _h_prev(out, h0, t, row, step, rb, cols, m, H: tl.constexpr, ACC_DTYPE: tl.constexpr):
    """``h_{t-1}`` on columns ``cols``: ``out[t-1]``, or ``h0`` at the first step."""
    if t > 0:
        hp = load_rows(out, row - step, H, cols, m).to(ACC_DTYPE)
    else:
        hp = load_rows(h0, rb, H, cols, m).to(ACC_DTYPE)
    return hp


@triton.jit
def _gru_cell_bwd(dh, hp, sv, d_gx, d_gh, row, cols, m,
                  H: tl.constexpr, ACC_DTYPE: tl.constexpr):
    """Gate gradients of one step on ``cols``; returns ``d_gh``'s three blocks and ``dh * z``."""
    r = load_rows(sv, row, 4 * H, cols, m)
    z = load_rows(sv, row, 4 * H, H + cols, m)
    n = load_rows(sv, row, 4 * H, 2 * H + cols, m)
    hn = load_rows(sv, row, 4 * H, 3 * H + cols, m)
    da_n = dh * (1.0 - z) * (1.0 - n * n)
    da_r = da_n * hn * r * (1.0 - r)
    da_z = dh * (hp - n) * z * (1.0 - z)
    d_hn = da_n * r
    store_rows(d_gx, row, 3 * H, cols, da_r, m)
    store_rows(d_gx, row, 3 * H, H + cols, da_z, m)
    store_rows(d_gx, row, 3 * H, 2 * H + cols, da_n, m)
    store_rows(d_gh, row, 3 * H, cols, da_r, m)
    store_rows(d_gh, row, 3 * H, H + cols, da_z, m)
    store_rows(d_gh, row, 3 * H, 2 * H + cols, d_hn, m)
    return da_r, da_z, d_hn, dh * z


@tu.autotune
@triton.jit(do_not_specialize=["T", "B"])
def _gru_bwd_kernel(
    grad_out, grad_hn, w, h0, out, sv, d_gx, d_gh, d_h0, dhbuf, dpbuf, dirbuf, T, B,
    H: tl.constexpr,
    BLOCK_B: tl.constexpr, CH: tl.constexpr, NCH: tl.constexpr, RESIDENT: tl.constexpr,
    DOT_DTYPE: tl.constexpr, ACC_DTYPE: tl.constexpr, PRECISION: tl.constexpr,
):
    rb = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    mb = rb < B
    rc = tl.arange(0, CH)
    step = B.to(tl.int64)
    if RESIDENT:
        m = mb[:, None] & (rc < H)[None, :]
        # W_hr, W_hz, W_hn (CH x CH each): dh_{t-1} = d_gh_t @ W_hh, on chip for all T steps
        wr = load_w(w, 0, 0, 0, H, CH, False)
        wz = load_w(w, 1, 0, 0, H, CH, False)
        wn = load_w(w, 2, 0, 0, H, CH, False)
        dh = load_rows(grad_hn, rb, H, rc, m).to(ACC_DTYPE)  # gradient reaching h_t
        for s in range(T):
            t = T - 1 - s
            row = t * step + rb
            dh += load_rows(grad_out, row, H, rc, m).to(ACC_DTYPE)
            hp = _h_prev(out, h0, t, row, step, rb, rc, m, H, ACC_DTYPE)
            da_r, da_z, d_hn, dh = _gru_cell_bwd(dh, hp, sv, d_gx, d_gh, row, rc, m,
                                                 H, ACC_DTYPE)
            dh += mm(da_r, wr, DOT_DTYPE, ACC_DTYPE, PRECISION)
            dh += mm(da_z, wz, DOT_DTYPE, ACC_DTYPE, PRECISION)
            dh += mm(d_hn, wn, DOT_DTYPE, ACC_DTYPE, PRECISION)
        store_rows(d_h0, rb, H, rc, dh, m)
    else:
        # dhbuf (2, rows, H): dh double-buffered over steps; dpbuf (rows, 3H): d_gh_t;
        # dirbuf (rows, H): the direct term dh * z.
        n_rows = tl.num_programs(0).to(tl.int64) * BLOCK_B
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(dhbuf, rb, H, cols, load_rows(grad_hn, rb, H, cols, m).to(ACC_DTYPE), m)
        tl.debug_barrier()
        for s in range(T):
            t = T - 1 - s
            row = t * step + rb
            src = dhbuf + (s % 2) * n_rows * H
            dst = dhbuf + ((s + 1) % 2) * n_rows * H
            for n in range(NCH):
                cols = n * CH + rc
                m = mb[:, None] & (cols < H)[None, :]
                dh = load_rows(src, rb, H, cols, m)
                dh += load_rows(grad_out, row, H, cols, m).to(ACC_DTYPE)
                hp = _h_prev(out, h0, t, row, step, rb, cols, m, H, ACC_DTYPE)
                da_r, da_z, d_hn, direct = _gru_cell_bwd(dh, hp, sv, d_gx, d_gh, row, cols, m,
                                                         H, ACC_DTYPE)
                store_rows(dpbuf, rb, 3 * H, cols, da_r, m)
                store_rows(dpbuf, rb, 3 * H, H + cols, da_z, m)
                store_rows(dpbuf, rb, 3 * H, 2 * H + cols, d_hn, m)
                store_rows(dirbuf, rb, H, cols, direct, m)
            tl.debug_barrier()  # all of d_gh_t before the product that mixes its columns
            for n in range(NCH):
                cols = n * CH + rc
                m = mb[:, None] & (cols < H)[None, :]
                acc = load_rows(dirbuf, rb, H, cols, m)
                for k in range(NCH):
                    kcols = k * CH + rc
                    mk = mb[:, None] & (kcols < H)[None, :]
                    acc += mm(load_rows(dpbuf, rb, 3 * H, kcols, mk),
                              load_w(w, 0, k * CH, n * CH, H, CH, False),
                              DOT_DTYPE, ACC_DTYPE, PRECISION)
                    acc += mm(load_rows(dpbuf, rb, 3 * H, H + kcols, mk),
                              load_w(w, 1, k * CH, n * CH, H, CH, False),
                              DOT_DTYPE, ACC_DTYPE, PRECISION)
                    acc += mm(load_rows(dpbuf, rb, 3 * H, 2 * H + kcols, mk),
                              load_w(w, 2, k * CH, n * CH, H, CH, False),
                              DOT_DTYPE, ACC_DTYPE, PRECISION)
                store_rows(dst, rb, H, cols, acc, m)
            tl.debug_barrier()  # dh_{t-1} complete; scratch free for the next step
        last = dhbuf + (T % 2) * n_rows * H
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(d_h0, rb, H, cols, load_rows(last, rb, H, cols, m), m)


@checked("gru", "forward")
def forward(gx, w_hh, b_hh, h0, c0=None, *, nonlinearity="tanh", gh_offset=None, save=True):
    """Run the GRU over time in one Triton launch.

    Parameters
    ----------
    gx : Tensor (T, B, 3H)
        Input projection ``x @ W_ih.T + b_ih`` of every step, gate blocks ``r, z, n``.
    w_hh : Tensor (3H, H)
    b_hh : Tensor (3H,)
    h0 : Tensor (B, H)
    c0 : None
    nonlinearity : str
        Ignored (the GRU's activations are fixed).
    gh_offset : Tensor (T, B, 3H), optional
        Added to the recurrent pre-activation ``h @ W_hh.T + b_hh`` (the reference's hook).
    save : bool
        Keep the activations for :func:`backward`.

    Returns
    -------
    out : Tensor (T, B, H)
    h_n : Tensor (B, H)
    c_n : None
    saved : tuple
        ``(gates,)`` with ``gates`` (T, B, 4H) fp32 ``[r | z | n | W_hn h + b_hn]``; empty when
        ``save`` is False; ``(gx,)`` on the reference fallback for H > 256.
    """
    T, B, _ = gx.shape
    H = h0.shape[-1]
    if not tu.fused("gru", H):
        out, hn, _, _ = reference.forward(gx, w_hh, b_hh, h0, gh_offset=gh_offset)
        return out, hn, None, ((gx,) if save else ())
    gx, w_hh, b_hh, h0, gh_offset = tu.as_contiguous(gx, w_hh, b_hh, h0, gh_offset)
    dev = gx.device
    out = torch.empty((T, B, H), dtype=gx.dtype, device=dev)
    hn = torch.empty((B, H), dtype=gx.dtype, device=dev)
    p = tu.plan(B, H, GATES, gx.dtype, dev)
    sv = torch.empty((T, B, 4 * H), dtype=p.acc_torch, device=dev) if save else None
    if B > 0:
        with tu.on_device(gx.device):
            _gru_fwd_kernel[p.grid](
                gx, w_hh, b_hh, h0, gh_offset, out, hn, sv, tu.scratch(p, 1, H, dev), T, B,
                H=H, **p.consts(),
            )
    return out, hn, None, ((sv,) if save else ())


@checked("gru", "backward")
def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved, **options):
    """Backward through time in one Triton launch.

    Parameters
    ----------
    grad_out : Tensor (T, B, H)
    grad_hn : Tensor (B, H) or None
    grad_cn, c0 : None
    gx : Tensor (T, B, 3H) or None
        Not needed (``BACKWARD_NEEDS_GX = False``).
    w_hh, b_hh, h0, out, saved
        As given to / returned by :func:`forward` (``save=True``).

    Returns
    -------
    d_gx : Tensor (T, B, 3H)
    d_gh : Tensor (T, B, 3H)
        Equal to ``d_gx`` but for the ``n`` block, which is multiplied by ``r``.
    d_h0 : Tensor (B, H)
    d_c0 : None
    """
    T, B, H = out.shape
    if grad_hn is None:  # before the fallback too: the reference needs a tensor
        grad_hn = torch.zeros_like(h0)
    if not tu.fused("gru", H):
        return reference.backward(grad_out, grad_hn, None, saved[0], w_hh, b_hh, h0, None, out,
                                  ())
    grad_out, grad_hn, w_hh, h0, out = tu.as_contiguous(grad_out, grad_hn, w_hh, h0, out)
    dev = out.device
    d_gx = torch.empty((T, B, 3 * H), dtype=out.dtype, device=dev)
    d_gh = torch.empty((T, B, 3 * H), dtype=out.dtype, device=dev)
    d_h0 = torch.empty((B, H), dtype=out.dtype, device=dev)
    if B == 0:
        return d_gx, d_gh, d_h0, None
    p = tu.plan(B, H, GATES, out.dtype, dev)
    dpbuf = tu.scratch(p, 3, H, dev, slots=1)
    dirbuf = tu.scratch(p, 1, H, dev, slots=1)
    with tu.on_device(out.device):
        _gru_bwd_kernel[p.grid](
            grad_out, grad_hn, w_hh, h0, out, saved[0].contiguous(), d_gx, d_gh, d_h0,
            tu.scratch(p, 1, H, dev), dpbuf, dirbuf, T, B, H=H, **p.consts(),
        )
    return d_gx, d_gh, d_h0, None
