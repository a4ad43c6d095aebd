"""Triton GPU kernels of the LSTM over time (torch's form): one persistent launch each way.

Dimension legend: T time steps, B batch, H hidden size, G = 4 gates (i, f, g, o); ``BLOCK_B``
batch rows per program, ``CH`` hidden chunk, ``NCH`` chunks (see
:mod:`tsrnn.kernels.common.triton_utils`).

    i, f, o = σ(gx_* + W_h* h + b_h*),   g = tanh(gx_g + W_hg h + b_hg)
    c' = f * c + i * g
    h' = o * tanh(c')

The four recurrent products are one ``h @ W_hh^T`` (BLOCK_B x H) @ (H x 4H) per step, done as one
``tl.dot`` per gate block so each gate's columns line up with ``h``'s and ``c``'s.

Forward saves, in fp32 (fp64 for float64 inputs), ``saved = (gates, c)``: the activated gates
(T, B, 4H) ``[i | f | g | o]`` and the cell states (T, B, H). Backward, time in reverse, with
``dh``/``dc`` the gradients reaching ``h_t``/``c_t``::

    dc += dh * o * (1 - tanh(c)^2)
    d_i = dc g i (1 - i),  d_f = dc c_{t-1} f (1 - f),  d_g = dc i (1 - g^2),
    d_o = dh tanh(c) o (1 - o)
    dc_{t-1} = dc * f,     dh_{t-1} = d_pre_t @ W_hh

``d_gx`` and ``d_gh`` are the same tensor ``d_pre`` (T, B, 4H); ``gx`` is not needed.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tsrnn.kernels.common import triton_utils as tu
from tsrnn.kernels.common.checks import checked
from tsrnn.kernels.common.triton_utils import load_rows, load_w, mm, sigmoid, store_rows, tanh
from tsrnn.kernels.lstm import reference

GATES = 4
BACKWARD_NEEDS_GX = False


@triton.jit
def _bias(b, g, cols, H: tl.constexpr, ACC_DTYPE: tl.constexpr):
    return tl.load(b + g * H + cols, mask=cols < H, other=0.0).to(ACC_DTYPE)[None, :]


@triton.jit
def _lstm_cell(gx, off, out, sg, sc, row, cols, m, ai, af, ag, ao, c,
               H: tl.constexpr, HAS_OFFSET: tl.constexpr, SAVE: tl.constexpr,
               ACC_DTYPE: tl.constexpr):
    """One step on columns ``cols``: recurrent parts ``a*`` (bias included), ``c`` -> h', c'."""
    ai += load_rows(gx, row, 4 * H, cols, m).to(ACC_DTYPE)
    af += load_rows(gx, row, 4 * H, H + cols, m).to(ACC_DTYPE)
    ag += load_rows(gx, row, 4 * H, 2 * H + cols, m).to(ACC_DTYPE)
    ao += load_rows(gx, row, 4 * H, 3 * H + cols, m).to(ACC_DTYPE)
    if HAS_OFFSET:
        ai += load_rows(off, row, 4 * H, cols, m).to(ACC_DTYPE)
        af += load_rows(off, row, 4 * H, H + cols, m).to(ACC_DTYPE)
        ag += load_rows(off, row, 4 * H, 2 * H + cols, m).to(ACC_DTYPE)
        ao += load_rows(off, row, 4 * H, 3 * H + cols, m).to(ACC_DTYPE)
    i = sigmoid(ai)
    f = sigmoid(af)
    g = tanh(ag)
    o = sigmoid(ao)
    c = f * c + i * g
    h = o * tanh(c)
    store_rows(out, row, H, cols, h, m)
    if SAVE:
        store_rows(sg, row, 4 * H, cols, i, m)
        store_rows(sg, row, 4 * H, H + cols, f, m)
        store_rows(sg, row, 4 * H, 2 * H + cols, g, m)
        store_rows(sg, row, 4 * H, 3 * H + cols, o, m)
        store_rows(sc, row, H, cols, c, m)
    return h, c


@triton.heuristics({
    "HAS_OFFSET": lambda a: a["off"] is not None,
    "SAVE": lambda a: a["sg"] is not None,
})
@tu.autotune
@triton.jit(do_not_specialize=["T", "B"])
def _lstm_fwd_kernel(
    gx, w, b, h0, c0, off, out, hn_out, cn_out, sg, sc, hbuf, cbuf, T, B,
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
        # W_hi^T, W_hf^T, W_hg^T, W_ho^T (CH x CH each): on chip for all T steps
        wi = load_w(w, 0, 0, 0, H, CH, True)
        wf = load_w(w, 1, 0, 0, H, CH, True)
        wg = load_w(w, 2, 0, 0, H, CH, True)
        wo = load_w(w, 3, 0, 0, H, CH, True)
        bi = _bias(b, 0, rc, H, ACC_DTYPE)
        bf = _bias(b, 1, rc, H, ACC_DTYPE)
        bg = _bias(b, 2, rc, H, ACC_DTYPE)
        bo = _bias(b, 3, rc, H, ACC_DTYPE)
        h = load_rows(h0, rb, H, rc, m).to(ACC_DTYPE)
        c = load_rows(c0, rb, H, rc, m).to(ACC_DTYPE)
        row = rb
        for _ in range(T):
            h, c = _lstm_cell(
                gx, off, out, sg, sc, row, rc, m,
                mm(h, wi, DOT_DTYPE, ACC_DTYPE, PRECISION) + bi,
                mm(h, wf, DOT_DTYPE, ACC_DTYPE, PRECISION) + bf,
                mm(h, wg, DOT_DTYPE, ACC_DTYPE, PRECISION) + bg,
                mm(h, wo, DOT_DTYPE, ACC_DTYPE, PRECISION) + bo,
                c, H, HAS_OFFSET, SAVE, ACC_DTYPE,
            )
            row += step
        store_rows(hn_out, rb, H, rc, h, m)
        store_rows(cn_out, rb, H, rc, c, m)
    else:
        # hbuf, cbuf (2, rows, H): h and c double-buffered over steps
        n_rows = tl.num_programs(0).to(tl.int64) * BLOCK_B
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(hbuf, rb, H, cols, load_rows(h0, rb, H, cols, m).to(ACC_DTYPE), m)
            store_rows(cbuf, rb, H, cols, load_rows(c0, rb, H, cols, m).to(ACC_DTYPE), m)
        tl.debug_barrier()
        row = rb
        for t in range(T):
            src = (t % 2) * n_rows * H
            dst = ((t + 1) % 2) * n_rows * H
            for n in range(NCH):
                cols = n * CH + rc
                m = mb[:, None] & (cols < H)[None, :]
                ai = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                af = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                ag = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                ao = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                for k in range(NCH):
                    kcols = k * CH + rc
                    hk = load_rows(hbuf + src, rb, H, kcols, mb[:, None] & (kcols < H)[None, :])
                    ai += mm(hk, load_w(w, 0, k * CH, n * CH, H, CH, True),
                             DOT_DTYPE, ACC_DTYPE, PRECISION)
                    af += mm(hk, load_w(w, 1, k * CH, n * CH, H, CH, True),
                             DOT_DTYPE, ACC_DTYPE, PRECISION)
                    ag += mm(hk, load_w(w, 2, k * CH, n * CH, H, CH, True),
                             DOT_DTYPE, ACC_DTYPE, PRECISION)
                    ao += mm(hk, load_w(w, 3, k * CH, n * CH, H, CH, True),
                             DOT_DTYPE, ACC_DTYPE, PRECISION)
                h, c = _lstm_cell(
                    gx, off, out, sg, sc, row, cols, m,
                    ai + _bias(b, 0, cols, H, ACC_DTYPE), af + _bias(b, 1, cols, H, ACC_DTYPE),
                    ag + _bias(b, 2, cols, H, ACC_DTYPE), ao + _bias(b, 3, cols, H, ACC_DTYPE),
                    load_rows(cbuf + src, rb, H, cols, m), H, HAS_OFFSET, SAVE, ACC_DTYPE,
                )
                store_rows(hbuf + dst, rb, H, cols, h, m)
                store_rows(cbuf + dst, rb, H, cols, c, m)
            # every column of h_t must be written before any chunk of step t+1 reads it
            tl.debug_barrier()
            row += step
        last = (T % 2) * n_rows * H
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(hn_out, rb, H, cols, load_rows(hbuf + last, rb, H, cols, m), m)
            store_rows(cn_out, rb, H, cols, load_rows(cbuf + last, rb, H, cols, m), m)


@triton.jit
def _c_prev(sc, c0, t, row, step, rb, cols, m, H: tl.constexpr, ACC_DTYPE: tl.constexpr):
    """``c_{t-1}`` on columns ``cols``: the saved ``c[t-1]``, or ``c0`` at the first step."""
    if t > 0:
        cp = load_rows(sc, row - step, H, cols, m).to(ACC_DTYPE)
    else:
        cp = load_rows(c0, rb, H, cols, m).to(ACC_DTYPE)
    return cp


@triton.jit
def _lstm_cell_bwd(dh, dc, cp, sg, sc, d_pre, row, cols, m, H: tl.constexpr):
    """Gate gradients of one step on ``cols``; returns them and ``dc_{t-1}``."""
    i = load_rows(sg, row, 4 * H, cols, m)
    f = load_rows(sg, row, 4 * H, H + cols, m)
    g = load_rows(sg, row, 4 * H, 2 * H + cols, m)
    o = load_rows(sg, row, 4 * H, 3 * H + cols, m)
    tc = tanh(load_rows(sc, row, H, cols, m))
    dc += dh * o * (1.0 - tc * tc)
    di = dc * g * i * (1.0 - i)
    df = dc * cp * f * (1.0 - f)
    dg = dc * i * (1.0 - g * g)
    do = dh * tc * o * (1.0 - o)
    store_rows(d_pre, row, 4 * H, cols, di, m)
    store_rows(d_pre, row, 4 * H, H + cols, df, m)
    store_rows(d_pre, row, 4 * H, 2 * H + cols, dg, m)
    store_rows(d_pre, row, 4 * H, 3 * H + cols, do, m)
    return di, df, dg, do, dc * f


@tu.autotune
@triton.jit(do_not_specialize=["T", "B"])
def _lstm_bwd_kernel(
    grad_out, grad_hn, grad_cn, w, c0, sg, sc, d_pre, d_h0, d_c0, dhbuf, dcbuf, dpbuf, T, B,
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
        # W_hi, W_hf, W_hg, W_ho (CH x CH each): dh_{t-1} = d_pre_t @ W_hh, on chip
        wi = load_w(w, 0, 0, 0, H, CH, False)
        wf = load_w(w, 1, 0, 0, H, CH, False)
        wg = load_w(w, 2, 0, 0, H, CH, False)
        wo = load_w(w, 3, 0, 0, H, CH, False)
        dh = load_rows(grad_hn, rb, H, rc, m).to(ACC_DTYPE)  # gradient reaching h_t
        dc = load_rows(grad_cn, rb, H, rc, m).to(ACC_DTYPE)  # gradient reaching c_t
        for s in range(T):
            t = T - 1 - s
            row = t * step + rb
            dh += load_rows(grad_out, row, H, rc, m).to(ACC_DTYPE)
            cp = _c_prev(sc, c0, t, row, step, rb, rc, m, H, ACC_DTYPE)
            di, df, dg, do, dc = _lstm_cell_bwd(dh, dc, cp, sg, sc, d_pre, row, rc, m, H)
            dh = mm(di, wi, DOT_DTYPE, ACC_DTYPE, PRECISION)
            dh += mm(df, wf, DOT_DTYPE, ACC_DTYPE, PRECISION)
            dh += mm(dg, wg, DOT_DTYPE, ACC_DTYPE, PRECISION)
            dh += mm(do, wo, DOT_DTYPE, ACC_DTYPE, PRECISION)
        store_rows(d_h0, rb, H, rc, dh, m)
        store_rows(d_c0, rb, H, rc, dc, m)
    else:
        # dhbuf, dcbuf (2, rows, H): dh and dc double-buffered over steps; dpbuf (rows, 4H):
        # d_pre_t in the accumulation dtype.
        n_rows = tl.num_programs(0).to(tl.int64) * BLOCK_B
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(dhbuf, rb, H, cols, load_rows(grad_hn, rb, H, cols, m).to(ACC_DTYPE), m)
            store_rows(dcbuf, rb, H, cols, load_rows(grad_cn, rb, H, cols, m).to(ACC_DTYPE), m)
        tl.debug_barrier()
        for s in range(T):
            t = T - 1 - s
            row = t * step + rb
            src = (s % 2) * n_rows * H
            dst = ((s + 1) % 2) * n_rows * H
            for n in range(NCH):
                cols = n * CH + rc
                m = mb[:, None] & (cols < H)[None, :]
                dh = load_rows(dhbuf + src, rb, H, cols, m)
                dh += load_rows(grad_out, row, H, cols, m).to(ACC_DTYPE)
                cp = _c_prev(sc, c0, t, row, step, rb, cols, m, H, ACC_DTYPE)
                di, df, dg, do, dc = _lstm_cell_bwd(dh, load_rows(dcbuf + src, rb, H, cols, m),
                                                    cp, sg, sc, d_pre, row, cols, m, H)
                store_rows(dpbuf, rb, 4 * H, cols, di, m)
                store_rows(dpbuf, rb, 4 * H, H + cols, df, m)
                store_rows(dpbuf, rb, 4 * H, 2 * H + cols, dg, m)
                store_rows(dpbuf, rb, 4 * H, 3 * H + cols, do, m)
                store_rows(dcbuf + dst, rb, H, cols, dc, m)
            tl.debug_barrier()  # all of d_pre_t before the product that mixes its columns
            for n in range(NCH):
                cols = n * CH + rc
                m = mb[:, None] & (cols < H)[None, :]
                acc = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                for k in range(NCH):
                    kcols = k * CH + rc
                    mk = mb[:, None] & (kcols < H)[None, :]
                    acc += mm(load_rows(dpbuf, rb, 4 * H, kcols, mk),
                              load_w(w, 0, k * CH, n * CH, H, CH, False),
                              DOT_DTYPE, ACC_DTYPE, PRECISION)
                    acc += mm(load_rows(dpbuf, rb, 4 * H, H + kcols, mk),
                              load_w(w, 1, k * CH, n * CH, H, CH, False),
                              DOT_DTYPE, ACC_DTYPE, PRECISION)
                    acc += mm(load_rows(dpbuf, rb, 4 * H, 2 * H + kcols, mk),
                              load_w(w, 2, k * CH, n * CH, H, CH, False),
                              DOT_DTYPE, ACC_DTYPE, PRECISION)
                    acc += mm(load_rows(dpbuf, rb, 4 * H, 3 * H + kcols, mk),
                              load_w(w, 3, k * CH, n * CH, H, CH, False),
                              DOT_DTYPE, ACC_DTYPE, PRECISION)
                store_rows(dhbuf + dst, rb, H, cols, acc, m)
            tl.debug_barrier()  # dh_{t-1} complete; scratch free for the next step
        last = (T % 2) * n_rows * H
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(d_h0, rb, H, cols, load_rows(dhbuf + last, rb, H, cols, m), m)
            store_rows(d_c0, rb, H, cols, load_rows(dcbuf + last, rb, H, cols, m), m)


@checked("lstm", "forward")
def forward(gx, w_hh, b_hh, h0, c0=None, *, nonlinearity="tanh", gh_offset=None, save=True):
    """Run the LSTM over time in one Triton launch.

    Parameters
    ----------
    gx : Tensor (T, B, 4H)
        Input projection ``x @ W_ih.T + b_ih`` of every step, gate blocks ``i, f, g, o``.
    w_hh : Tensor (4H, H)
    b_hh : Tensor (4H,)
    h0, c0 : Tensor (B, H)
    nonlinearity : str
        Ignored (the LSTM's activations are fixed).
    gh_offset : Tensor (T, B, 4H), optional
        Added to the pre-activation (the reference's hook for ``d_gh``).
    save : bool
        Keep the activations for :func:`backward`.

    Returns
    -------
    out : Tensor (T, B, H)
    h_n, c_n : Tensor (B, H)
    saved : tuple
        ``(gates, c)``: activated gates (T, B, 4H) and cell states (T, B, H), fp32; empty when
        ``save`` is False; ``(gx,)`` on the reference fallback for H > 256.
    """
    T, B, _ = gx.shape
    H = h0.shape[-1]
    if not tu.fused("lstm", H):
        out, hn, cn, _ = reference.forward(gx, w_hh, b_hh, h0, c0, gh_offset=gh_offset)
        return out, hn, cn, ((gx,) if save else ())
    gx, w_hh, b_hh, h0, c0, gh_offset = tu.as_contiguous(gx, w_hh, b_hh, h0, c0, gh_offset)
    dev = gx.device
    out = torch.empty((T, B, H), dtype=gx.dtype, device=dev)
    hn = torch.empty((B, H), dtype=gx.dtype, device=dev)
    cn = torch.empty((B, H), dtype=gx.dtype, device=dev)
    p = tu.plan(B, H, GATES, gx.dtype, dev)
    sg = torch.empty((T, B, 4 * H), dtype=p.acc_torch, device=dev) if save else None
    sc = torch.empty((T, B, H), dtype=p.acc_torch, device=dev) if save else None
    if B > 0:
        with tu.on_device(gx.device):
            _lstm_fwd_kernel[p.grid](
                gx, w_hh, b_hh, h0, c0, gh_offset, out, hn, cn, sg, sc,
                tu.scratch(p, 1, H, dev), tu.scratch(p, 1, H, dev), T, B, H=H, **p.consts(),
            )
    return out, hn, cn, ((sg, sc) if save else ())


@checked("lstm", "backward")
def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved, **options):
    """Backward through time in one Triton launch.

    Parameters
    ----------
    grad_out : Tensor (T, B, H)
    grad_hn, grad_cn : Tensor (B, H) or None
    gx : Tensor (T, B, 4H) or None
        Not needed (``BACKWARD_NEEDS_GX = False``).
    w_hh, b_hh, h0, c0, out, saved
        As given to / returned by :func:`forward` (``save=True``).

    Returns
    -------
    d_gx, d_gh : Tensor (T, B, 4H)
        The same tensor: gradient of the gate pre-activations.
    d_h0, d_c0 : Tensor (B, H)
    """
    T, B, H = out.shape
    if grad_hn is None:  # before the fallback too: the reference needs tensors
        grad_hn = torch.zeros_like(h0)
    if grad_cn is None:
        grad_cn = torch.zeros_like(c0)
    if not tu.fused("lstm", H):
        return reference.backward(grad_out, grad_hn, grad_cn, saved[0], w_hh, b_hh, h0, c0, out,
                                  ())
    grad_out, grad_hn, grad_cn, w_hh, c0 = tu.as_contiguous(grad_out, grad_hn, grad_cn, w_hh, c0)
    sg, sc = tu.as_contiguous(*saved)
    dev = out.device
    d_pre = torch.empty((T, B, 4 * H), dtype=out.dtype, device=dev)
    d_h0 = torch.empty((B, H), dtype=out.dtype, device=dev)
    d_c0 = torch.empty((B, H), dtype=out.dtype, device=dev)
    if B == 0:
        return d_pre, d_pre, d_h0, d_c0
    p = tu.plan(B, H, GATES, out.dtype, dev)
    with tu.on_device(out.device):
        _lstm_bwd_kernel[p.grid](
            grad_out, grad_hn, grad_cn, w_hh, c0, sg, sc, d_pre, d_h0, d_c0,
            tu.scratch(p, 1, H, dev), tu.scratch(p, 1, H, dev), tu.scratch(p, 4, H, dev, slots=1),
            T, B, H=H, **p.consts(),
        )
    return d_pre, d_pre, d_h0, d_c0
