"""Triton GPU kernels of the Elman RNN over time: one persistent launch forward, one backward.

Dimension legend: T time steps, B batch, H hidden size, G = 1 gate; ``BLOCK_B`` batch rows per
program, ``CH`` hidden chunk, ``NCH`` chunks (see :mod:`tsrnn.kernels.common.triton_utils`).

    h_t = act(gx_t + h_{t-1} @ W_hh.T + b_hh),   act = tanh | relu

Forward: grid over batch tiles; each program runs all T steps with ``W_hh^T`` on chip (resident
mode) or streamed from L2 per step (streamed mode, large H), state and accumulation in fp32
(fp64 for float64 inputs). Nothing is saved besides ``out``: the activation's derivative is a
function of its output (``1 - h^2`` for tanh, ``h > 0`` for relu).

Backward: time in reverse, ``d_pre_t = (grad_out_t + dh) * act'(h_t)`` and
``dh = d_pre_t @ W_hh``; ``d_gx`` and ``d_gh`` are the same tensor ``d_pre`` (T, B, H).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tsrnn.kernels.common import triton_utils as tu
from tsrnn.kernels.common.checks import checked
from tsrnn.kernels.common.triton_utils import load_rows, load_w, mm, store_rows, tanh
from tsrnn.kernels.rnn import reference

GATES = 1
BACKWARD_NEEDS_GX = False


@triton.jit
def _act(pre, RELU: tl.constexpr):
    if RELU:
        return tl.maximum(pre, 0.0, propagate_nan=tl.PropagateNan.ALL)  # relu(NaN) is NaN
    return tanh(pre)


@triton.jit
def _act_grad(dh, h, RELU: tl.constexpr):
    """``dh * act'(pre)`` written with the activation's output ``h = act(pre)``."""
    if RELU:
        return tl.where(h <= 0, 0.0, dh)  # as torch's relu backward: NaN lets dh through
    return dh * (1.0 - h * h)


@triton.heuristics({"HAS_OFFSET": lambda a: a["off"] is not None})
@tu.autotune
@triton.jit(do_not_specialize=["T", "B"])
def _rnn_fwd_kernel(
    gx, w, b, h0, off, out, hn, hbuf, T, B,
    H: tl.constexpr, RELU: tl.constexpr, HAS_OFFSET: tl.constexpr,
    BLOCK_B: tl.constexpr, CH: tl.constexpr, NCH: tl.constexpr, RESIDENT: tl.constexpr,
    DOT_DTYPE: tl.constexpr, ACC_DTYPE: tl.constexpr, PRECISION: tl.constexpr,
):
    rb = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)  # batch rows (BLOCK_B,)
    mb = rb < B
    rc = tl.arange(0, CH)
    step = B.to(tl.int64)  # rows of (T*B) between two steps
    if RESIDENT:
        m = mb[:, None] & (rc < H)[None, :]
        wt = load_w(w, 0, 0, 0, H, CH, True)  # W_hh^T (CH x CH), on chip for all T steps
        bias = tl.load(b + rc, mask=rc < H, other=0.0).to(ACC_DTYPE)
        h = load_rows(h0, rb, H, rc, m).to(ACC_DTYPE)  # (BLOCK_B, CH)
        row = rb
        for _ in range(T):
            pre = mm(h, wt, DOT_DTYPE, ACC_DTYPE, PRECISION) + bias[None, :]
            pre += load_rows(gx, row, H, rc, m).to(ACC_DTYPE)
            if HAS_OFFSET:
                pre += load_rows(off, row, H, rc, m).to(ACC_DTYPE)
            h = _act(pre, RELU)
            store_rows(out, row, H, rc, h, m)
            row += step
        store_rows(hn, rb, H, rc, h, m)
    else:
        n_rows = tl.num_programs(0).to(tl.int64) * BLOCK_B  # rows of one scratch slot
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(hbuf, rb, H, cols, load_rows(h0, rb, H, cols, m).to(ACC_DTYPE), m)
        tl.debug_barrier()
        row = rb
        for t in range(T):
            src = hbuf + (t % 2) * n_rows * H  # h_{t-1}
            dst = hbuf + ((t + 1) % 2) * n_rows * H  # h_t
            for n in range(NCH):
                cols = n * CH + rc
                m = mb[:, None] & (cols < H)[None, :]
                pre = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                for k in range(NCH):
                    kcols = k * CH + rc
                    hk = load_rows(src, rb, H, kcols, mb[:, None] & (kcols < H)[None, :])
                    pre += mm(hk, load_w(w, 0, k * CH, n * CH, H, CH, True),
                              DOT_DTYPE, ACC_DTYPE, PRECISION)
                pre += tl.load(b + cols, mask=cols < H, other=0.0).to(ACC_DTYPE)[None, :]
                pre += load_rows(gx, row, H, cols, m).to(ACC_DTYPE)
                if HAS_OFFSET:
                    pre += load_rows(off, row, H, cols, m).to(ACC_DTYPE)
                h = _act(pre, RELU)
                store_rows(dst, rb, H, cols, h, m)
                store_rows(out, row, H, cols, h, m)
            # every column of h_t must be written before any chunk of step t+1 reads it
            tl.debug_barrier()
            row += step
        last = hbuf + (T % 2) * n_rows * H
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(hn, rb, H, cols, load_rows(last, rb, H, cols, m), m)


@tu.autotune
@triton.jit(do_not_specialize=["T", "B"])
def _rnn_bwd_kernel(
    grad_out, grad_hn, w, out, d_pre, d_h0, dbuf, T, B,
    H: tl.constexpr, RELU: tl.constexpr,
    BLOCK_B: tl.constexpr, CH: tl.constexpr, NCH: tl.constexpr, RESIDENT: tl.constexpr,
    DOT_DTYPE: tl.constexpr, ACC_DTYPE: tl.constexpr, PRECISION: tl.constexpr,
):
    rb = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    mb = rb < B
    rc = tl.arange(0, CH)
    step = B.to(tl.int64)
    if RESIDENT:
        m = mb[:, None] & (rc < H)[None, :]
        wk = load_w(w, 0, 0, 0, H, CH, False)  # W_hh (CH x CH), on chip for all T steps
        dh = load_rows(grad_hn, rb, H, rc, m).to(ACC_DTYPE)  # gradient flowing into h_t
        row = (T - 1) * step + rb
        for _ in range(T):
            dh += load_rows(grad_out, row, H, rc, m).to(ACC_DTYPE)
            dp = _act_grad(dh, load_rows(out, row, H, rc, m).to(ACC_DTYPE), RELU)
            store_rows(d_pre, row, H, rc, dp, m)
            dh = mm(dp, wk, DOT_DTYPE, ACC_DTYPE, PRECISION)
            row -= step
        store_rows(d_h0, rb, H, rc, dh, m)
    else:
        # dbuf (3, rows, H): two slots of dh (double-buffered over steps) and one of d_pre.
        n_rows = tl.num_programs(0).to(tl.int64) * BLOCK_B
        dpb = dbuf + 2 * n_rows * H
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(dbuf, rb, H, cols, load_rows(grad_hn, rb, H, cols, m).to(ACC_DTYPE), m)
        tl.debug_barrier()
        row = (T - 1) * step + rb
        for s in range(T):
            src = dbuf + (s % 2) * n_rows * H
            dst = dbuf + ((s + 1) % 2) * n_rows * H
            for n in range(NCH):
                cols = n * CH + rc
                m = mb[:, None] & (cols < H)[None, :]
                dh = load_rows(src, rb, H, cols, m) + load_rows(grad_out, row, H, cols, m).to(
                    ACC_DTYPE)
                dp = _act_grad(dh, load_rows(out, row, H, cols, m).to(ACC_DTYPE), RELU)
                store_rows(d_pre, row, H, cols, dp, m)
                store_rows(dpb, rb, H, cols, dp, m)
            tl.debug_barrier()  # all of d_pre_t before the product that mixes its columns
            for n in range(NCH):
                cols = n * CH + rc
                m = mb[:, None] & (cols < H)[None, :]
                acc = tl.zeros((BLOCK_B, CH), dtype=ACC_DTYPE)
                for k in range(NCH):
                    kcols = k * CH + rc
                    dk = load_rows(dpb, rb, H, kcols, mb[:, None] & (kcols < H)[None, :])
                    acc += mm(dk, load_w(w, 0, k * CH, n * CH, H, CH, False),
                              DOT_DTYPE, ACC_DTYPE, PRECISION)
                store_rows(dst, rb, H, cols, acc, m)
            tl.debug_barrier()  # dh_{t-1} complete, d_pre scratch free for the next step
            row -= step
        last = dbuf + (T % 2) * n_rows * H
        for n in range(NCH):
            cols = n * CH + rc
            m = mb[:, None] & (cols < H)[None, :]
            store_rows(d_h0, rb, H, cols, load_rows(last, rb, H, cols, m), m)


def _check_nonlinearity(nonlinearity):
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}.")
    return nonlinearity == "relu"


@checked("rnn", "forward")
def forward(gx, w_hh, b_hh, h0, c0=None, *, nonlinearity="tanh", gh_offset=None, save=True):
    """Run the RNN over time in one Triton launch.

    Parameters
    ----------
    gx : Tensor (T, B, H)
        Input projection ``x @ W_ih.T + b_ih`` of every step.
    w_hh : Tensor (H, H)
    b_hh : Tensor (H,)
    h0 : Tensor (B, H)
    c0 : None
    nonlinearity : {'tanh', 'relu'}
    gh_offset : Tensor (T, B, H), optional
        Added to the recurrent pre-activation (the reference's hook for ``d_gh``).
    save : bool
        Unused: the backward needs only ``out``.

    Returns
    -------
    out : Tensor (T, B, H)
    h_n : Tensor (B, H)
    c_n : None
    saved : tuple
        Empty (``(gx,)`` on the reference fallback for H > 256).
    """
    relu = _check_nonlinearity(nonlinearity)
    T, B, _ = gx.shape
    H = h0.shape[-1]
    if not tu.fused("rnn", H):
        out, hn, _, _ = reference.forward(gx, w_hh, b_hh, h0, nonlinearity=nonlinearity,
                                          gh_offset=gh_offset)
        return out, hn, None, ((gx,) if save else ())
    gx, w_hh, b_hh, h0, gh_offset = tu.as_contiguous(gx, w_hh, b_hh, h0, gh_offset)
    out = torch.empty((T, B, H), dtype=gx.dtype, device=gx.device)
    hn = torch.empty((B, H), dtype=gx.dtype, device=gx.device)
    if B == 0:
        return out, hn, None, ()
    p = tu.plan(B, H, GATES, gx.dtype, gx.device)
    with tu.on_device(gx.device):
        _rnn_fwd_kernel[p.grid](
            gx, w_hh, b_hh, h0, gh_offset, out, hn, tu.scratch(p, 1, H, gx.device), T, B,
            H=H, RELU=relu, **p.consts(),
        )
    return out, hn, None, ()


@checked("rnn", "backward")
def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved, *,
             nonlinearity="tanh"):
    """Backward through time in one Triton launch.

    Parameters
    ----------
    grad_out : Tensor (T, B, H)
    grad_hn : Tensor (B, H) or None
    grad_cn, c0 : None
    gx : Tensor (T, B, H) or None
        Not needed (``BACKWARD_NEEDS_GX = False``).
    w_hh, b_hh, h0, out, saved
        As given to / returned by :func:`forward`.
    nonlinearity : {'tanh', 'relu'}

    Returns
    -------
    d_gx, d_gh : Tensor (T, B, H)
        The same tensor: gradient of the pre-activation.
    d_h0 : Tensor (B, H)
    d_c0 : None
    """
    relu = _check_nonlinearity(nonlinearity)
    T, B, H = out.shape
    if grad_hn is None:  # before the fallback too: the reference needs a tensor
        grad_hn = torch.zeros_like(h0)
    if not tu.fused("rnn", H):
        return reference.backward(grad_out, grad_hn, None, saved[0], w_hh, b_hh, h0, None, out,
                                  (), nonlinearity=nonlinearity)
    grad_out, grad_hn, w_hh, out = tu.as_contiguous(grad_out, grad_hn, w_hh, out)
    d_pre = torch.empty((T, B, H), dtype=out.dtype, device=out.device)
    d_h0 = torch.empty((B, H), dtype=out.dtype, device=out.device)
    if B == 0:
        return d_pre, d_pre, d_h0, None
    p = tu.plan(B, H, GATES, out.dtype, out.device)
    with tu.on_device(out.device):
        _rnn_bwd_kernel[p.grid](
            grad_out, grad_hn, w_hh, out, d_pre, d_h0, tu.scratch(p, 1, H, out.device, slots=3),
            T, B, H=H, RELU=relu, **p.consts(),
        )
    return d_pre, d_pre, d_h0, None
