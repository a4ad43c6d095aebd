"""LSTM forward and backward through time as Numba CPU kernels.

Dimension legend: T time steps, B batch, H hidden size, G = 4 gates (i, f, g, o), GH = 4H,
R batch rows per block.

    pre = gx + W_hh h + b_hh                                  (GH,)
    i, f, o = σ(pre_i), σ(pre_f), σ(pre_o);  g = tanh(pre_g)
    c' = f * c + i * g;   h' = o * tanh(c')

The kernel owns the time loop; threads split the batch into blocks of R rows (``prange`` over
blocks), each advanced through every step with one blocked recurrent product
(:func:`rows_matmul_add`); in float32 the gate math of a row, forward and backward, is one pass
of explicit SIMD vectors with the activations inline (:func:`_gates_vector`,
:func:`_backward_gates_vector`), in float64 short loops, each writing one array, that LLVM
vectorises. The forward's gate pass takes whole groups of vectors at a time
(:func:`~tsrnn.kernels.common.numba_simd.vgroup`), so the long chains of its five activations
interleave. Saved for backward: the activated gates (T, B, 4H) and the cell states (T, B, H).

The backward runs in reverse over chunks of such blocks, their rows and grouping set by ``B``
alone, and sums the layer's weight gradients in its time loop (``backward_with_weight_grads``,
:mod:`~tsrnn.kernels.common.numba_grads`); its plain ``backward`` (the package's calling
convention) is the same loop writing the gate gradients out instead.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import prange, types
from numba.extending import overload

from tsrnn.kernels.common import aligned, numba_grads, workspace
from tsrnn.kernels.common.activations import fast_tanh, one_minus, sigmoid, vsigmoid, vtanh
from tsrnn.kernels.common.checks import checked
from tsrnn.kernels.common.numba_config import njit, njit_parallel
from tsrnn.kernels.common.numba_glue import as_array
from tsrnn.kernels.common.numba_grads import block_buffers, reduce_parts, step_done
from tsrnn.kernels.common.numba_linalg import (
    block_rows,
    no_projection_args,
    padded_columns,
    projection_args,
    rows_matmul_add,
    step_inputs,
)
from tsrnn.kernels.common.numba_simd import (
    GROUP,
    vadd,
    vector_lanes,
    vgroup,
    vload,
    vload3,
    vload_like,
    vmul,
    vmuladd,
    vsplat,
    vstore,
    vstore3,
    vsub,
    vzero,
)

GATES = 4
BACKWARD_NEEDS_GX = False
# the backward reads what the forward saved, not b_hh: it is not kept for it (torch.nn's
# backward allows an in-place edit of b_hh between forward and backward too)
BACKWARD_NEEDS_B_HH = False


def _gates(pre, h, c, out, gates, cs, t, b0, nr, save):
    """Step ``t`` of rows ``b0 .. b0+nr-1`` from their pre-activations ``pre`` (R, 4H): writes
    ``out[t]``, the block's states ``h`` and ``c`` (R, H) and, where ``save``, the activated
    gates and the cell states. float32: one pass of SIMD vectors (:func:`_gates_vector`);
    float64: loops that LLVM vectorises (libm's activations stay scalar)."""


@overload(_gates, inline="always")
def _gates_overload(pre, h, c, out, gates, cs, t, b0, nr, save):
    if out.dtype == types.float32:
        return _gates_vector.py_func
    return _gates_loops.py_func


@njit
def _gates_vector(pre, h, c, out, gates, cs, t, b0, nr, save):
    """All gates of a row in one pass of SIMD vectors, the activations inline: whole groups of
    vectors first (:func:`~tsrnn.kernels.common.numba_simd.vgroup`: their activations' chains
    interleaved), then single vectors; the columns past the last whole vector one at a time,
    with the same arithmetic."""
    H = h.shape[1]
    L = vector_lanes(h)
    G = L * GROUP
    Hv = H - H % L
    for r in range(nr):
        b = b0 + r
        j = 0
        while j + G <= H:
            _gate_columns(vgroup(h), pre, h, c, out, gates, cs, t, b, r, j, save)
            j += G
        while j < Hv:
            _gate_columns(vzero(h), pre, h, c, out, gates, cs, t, b, r, j, save)
            j += L
        for j in range(Hv, H):
            ij = sigmoid(pre[r, j])
            fj = sigmoid(pre[r, H + j])
            gj = fast_tanh(pre[r, 2 * H + j])
            oj = sigmoid(pre[r, 3 * H + j])
            cj = fj * c[r, j] + ij * gj
            hj = oj * fast_tanh(cj)
            c[r, j] = cj
            h[r, j] = hj
            out[t, b, j] = hj
            if save:
                gates[t, b, j] = ij
                gates[t, b, H + j] = fj
                gates[t, b, 2 * H + j] = gj
                gates[t, b, 3 * H + j] = oj
                cs[t, b, j] = cj


@njit(inline="always")
def _gate_columns(like, pre, h, c, out, gates, cs, t, b, r, j, save):
    """Columns ``j .. j+n-1`` of row ``r`` (batch row ``b``) of :func:`_gates_vector`, ``n``
    the lanes of ``like`` (a vector or a group of them)."""
    H = h.shape[1]
    ig = vsigmoid(vload_like(like, pre, r, j))
    fg = vsigmoid(vload_like(like, pre, r, H + j))
    gg = vtanh(vload_like(like, pre, r, 2 * H + j))
    og = vsigmoid(vload_like(like, pre, r, 3 * H + j))
    cj = vmuladd(fg, vload_like(like, c, r, j), vmul(ig, gg))
    hj = vmul(og, vtanh(cj))
    vstore(c, r, j, cj)
    vstore(h, r, j, hj)
    vstore3(out, t, b, j, hj)
    if save:
        vstore3(gates, t, b, j, ig)
        vstore3(gates, t, b, H + j, fg)
        vstore3(gates, t, b, 2 * H + j, gg)
        vstore3(gates, t, b, 3 * H + j, og)
        vstore3(cs, t, b, j, cj)


@njit
def _gates_loops(pre, h, c, out, gates, cs, t, b0, nr, save):
    H = h.shape[1]
    GH = 4 * H
    for r in range(nr):
        b = b0 + r
        for j in range(2 * H):  # i, f in place
            pre[r, j] = sigmoid(pre[r, j])
        for j in range(H):  # g
            pre[r, 2 * H + j] = fast_tanh(pre[r, 2 * H + j])
        for j in range(H):  # o
            pre[r, 3 * H + j] = sigmoid(pre[r, 3 * H + j])
        for j in range(H):
            c[r, j] = pre[r, H + j] * c[r, j] + pre[r, j] * pre[r, 2 * H + j]
        for j in range(H):
            out[t, b, j] = pre[r, 3 * H + j] * fast_tanh(c[r, j])
        for j in range(H):
            h[r, j] = out[t, b, j]
        if save:
            for j in range(GH):
                gates[t, b, j] = pre[r, j]
            for j in range(H):
                cs[t, b, j] = c[r, j]


@njit_parallel
def _forward(gx, xin, wi_t, b_ih, w_t, b_hh, h0, c0, out, hn, cn, gates, cs, save, R):
    T, B, H = out.shape
    GH = 4 * H
    for blk in prange((B + R - 1) // R):
        b0 = blk * R
        nr = min(R, B - b0)
        h = aligned.zeros((R, H), out)
        c = aligned.zeros((R, H), out)
        for r in range(nr):
            for j in range(H):
                h[r, j] = h0[b0 + r, j]
                c[r, j] = c0[b0 + r, j]
        pre = aligned.zeros((R, w_t.shape[1]), out)
        gxb = aligned.zeros((R, wi_t.shape[1]), out)  # padding columns stay 0
        for t in range(T):
            src = step_inputs(gx, xin, wi_t, b_ih, gxb, t, b0, nr)  # (nr, 4H) rows of gx
            for r in range(nr):
                for j in range(GH):
                    pre[r, j] = src[r, j] + b_hh[j]
            rows_matmul_add(h, w_t, pre, nr)  # pre = gx + b_hh + h @ W_hh^T
            _gates(pre, h, c, out, gates, cs, t, b0, nr, save)
        for r in range(nr):
            for j in range(H):
                hn[b0 + r, j] = h[r, j]
                cn[b0 + r, j] = c[r, j]


def _backward_gates(dh, dc, grad_out, gates, cs, cp, dg, t, b0, o, nr):
    """The gate gradients of step ``t`` for rows ``b0 .. b0+nr-1``, into rows ``o ..`` of the
    block's ``dg`` (S*R, 4H). ``dh`` (R, Hp, columns padded to the product's tile) and ``dc``
    (R, H) come in as the gradients flowing from step ``t + 1``; ``dc`` leaves as its path to
    step ``t - 1`` (through ``f``), ``dh`` as zeros (the recurrent product then forms it).
    ``cp`` (B, H): the previous cell states. float32: one pass of SIMD vectors
    (:func:`_backward_gates_vector`); float64: vectorisable loops."""


@overload(_backward_gates, inline="always")
def _backward_gates_overload(dh, dc, grad_out, gates, cs, cp, dg, t, b0, o, nr):
    if gates.dtype == types.float32:
        return _backward_gates_vector.py_func
    return _backward_gates_loops.py_func


@njit
def _backward_gates_vector(dh, dc, grad_out, gates, cs, cp, dg, t, b0, o, nr):
    H = cs.shape[2]
    L = vector_lanes(dc)
    Hv = H - H % L
    for r in range(nr):
        b = b0 + r
        q = o + r
        for j in range(0, Hv, L):
            d = vadd(vload(dh, r, j), vload3(grad_out, t, b, j))
            ig = vload3(gates, t, b, j)
            fg = vload3(gates, t, b, H + j)
            gg = vload3(gates, t, b, 2 * H + j)
            og = vload3(gates, t, b, 3 * H + j)
            tc = vtanh(vload3(cs, t, b, j))
            one = vsplat(d, np.float32(1.0))
            dcj = vmuladd(vmul(d, og), vsub(one, vmul(tc, tc)), vload(dc, r, j))
            vstore(dg, q, j, vmul(vmul(vmul(dcj, gg), ig), vsub(one, ig)))
            vstore(dg, q, H + j, vmul(vmul(vmul(dcj, vload(cp, b, j)), fg), vsub(one, fg)))
            vstore(dg, q, 2 * H + j, vmul(vmul(dcj, ig), vsub(one, vmul(gg, gg))))
            vstore(dg, q, 3 * H + j, vmul(vmul(vmul(d, tc), og), vsub(one, og)))
            vstore(dc, r, j, vmul(dcj, fg))
            vstore(dh, r, j, vsub(d, d))
        for j in range(Hv, H):
            d = dh[r, j] + grad_out[t, b, j]
            ij, fj = gates[t, b, j], gates[t, b, H + j]
            gj, oj = gates[t, b, 2 * H + j], gates[t, b, 3 * H + j]
            tc = fast_tanh(cs[t, b, j])
            dcj = dc[r, j] + d * oj * one_minus(tc * tc)
            dg[q, j] = dcj * gj * ij * one_minus(ij)
            dg[q, H + j] = dcj * cp[b, j] * fj * one_minus(fj)
            dg[q, 2 * H + j] = dcj * ij * one_minus(gj * gj)
            dg[q, 3 * H + j] = d * tc * oj * one_minus(oj)
            dc[r, j] = dcj * fj
            dh[r, j] = 0


@njit
def _backward_gates_loops(dh, dc, grad_out, gates, cs, cp, dg, t, b0, o, nr):
    H = cs.shape[2]
    for r in range(nr):
        b = b0 + r
        q = o + r
        for j in range(H):
            dh[r, j] += grad_out[t, b, j]
        for j in range(H):  # dc += dh * o * tanh'(c)
            tc = fast_tanh(cs[t, b, j])
            dc[r, j] += dh[r, j] * gates[t, b, 3 * H + j] * one_minus(tc * tc)
        for j in range(H):  # d_o
            og = gates[t, b, 3 * H + j]
            dg[q, 3 * H + j] = dh[r, j] * fast_tanh(cs[t, b, j]) * og * one_minus(og)
        for j in range(H):  # d_i
            i = gates[t, b, j]
            dg[q, j] = dc[r, j] * gates[t, b, 2 * H + j] * i * one_minus(i)
        for j in range(H):  # d_f
            fj = gates[t, b, H + j]
            dg[q, H + j] = dc[r, j] * cp[b, j] * fj * one_minus(fj)
        for j in range(H):  # d_g
            gg = gates[t, b, 2 * H + j]
            dg[q, 2 * H + j] = dc[r, j] * gates[t, b, j] * one_minus(gg * gg)
        for j in range(H):
            dc[r, j] *= gates[t, b, H + j]
        for j in range(H):
            dh[r, j] = 0


@njit_parallel
def _backward(grad_out, grad_hn, grad_cn, w_hh, h0, c0, out, gates, cs, x, d_pre, d_h0, d_c0,
              R, per_chunk, part, d_w_ih, d_b_ih, d_w_hh, d_b_hh):
    T, B, GH = gates.shape
    H = GH // 4
    fused = part.shape[0] > 0  # accumulate the weight gradients (numba_grads)
    keep = d_pre.shape[0] > 0
    blocks = (B + R - 1) // R
    for ch in prange((blocks + per_chunk - 1) // per_chunk):
        dg, xs, hs, seg = block_buffers(part, ch, R, x.shape[2], H, gates)
        dh = aligned.zeros((R, w_hh.shape[1]), gates)
        dc = aligned.zeros((R, H), gates)
        for blk in range(ch * per_chunk, min(blocks, (ch + 1) * per_chunk)):
            b0 = blk * R
            nr = min(R, B - b0)
            for r in range(nr):
                for j in range(H):
                    dh[r, j] = grad_hn[b0 + r, j]
                    dc[r, j] = grad_cn[b0 + r, j]
            s = 0  # this step's slot
            f = 0  # additions to the segment's sum
            for t in range(T - 1, -1, -1):
                cp = cs[t - 1] if t > 0 else c0  # c_prev of every row
                o = s * nr  # the slot's first row
                _backward_gates(dh, dc, grad_out, gates, cs, cp, dg, t, b0, o, nr)
                for r in range(nr):
                    b = b0 + r
                    q = o + r
                    if keep:
                        for j in range(GH):
                            d_pre[t, b, j] = dg[q, j]
                rows_matmul_add(dg[o : o + nr], w_hh, dh, nr)  # dh_prev = d_pre @ W_hh
                if fused:
                    hq = out[t - 1] if t > 0 else h0
                    s, f = step_done(
                        part[ch], seg, xs, hs, dg, dg, x[t], hq, b0, o, nr, s, f, t == 0, True
                    )
            for r in range(nr):
                for j in range(H):
                    d_h0[b0 + r, j] = dh[r, j]
                    d_c0[b0 + r, j] = dc[r, j]
    if fused:
        reduce_parts(part, x.shape[2], True, d_w_ih, d_b_ih, d_w_hh, d_b_hh)


@checked("lstm", "forward")
def forward(gx, w_hh, b_hh, h0, c0=None, *, save=True):
    """LSTM over all steps. gx (T, B, 4H), w_hh (4H, H), b_hh (4H,), h0 and c0 (B, H).

    Returns ``out`` (T, B, H), ``h_n``, ``c_n`` (B, H), ``saved`` = (gates (T, B, 4H),
    cell states (T, B, H)) when ``save`` else ``()``.
    """
    return _run_forward(no_projection_args(gx), gx.shape[0], w_hh, b_hh, h0, c0, save)


@checked("lstm", "forward_projected")
def forward_projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0=None, *, save=True):
    """:func:`forward` of ``gx = x @ w_ih.T + b_ih``, the projection formed step by step in
    the time loop; x (T, B, I), w_ih (4H, I), b_ih (4H,) or None."""
    args = projection_args(x, w_ih, b_ih, w_hh.shape[0], as_array(h0).dtype)
    return _run_forward(args, x.shape[0], w_hh, b_hh, h0, c0, save)


def _run_forward(inputs, T, w_hh, b_hh, h0, c0, save):
    B, H = h0.shape
    GH = 4 * H
    dtype = h0.dtype
    if c0 is None:
        c0 = torch.zeros_like(h0)
    out = workspace.empty((T, B, H), dtype)
    hn = torch.empty((B, H), dtype=dtype, device="cpu")
    cn = torch.empty((B, H), dtype=dtype, device="cpu")
    shape_g, shape_c = ((T, B, GH), (T, B, H)) if save else ((1, 1, GH), (1, 1, H))
    gates = workspace.empty(shape_g, dtype)
    cs = workspace.empty(shape_c, dtype)
    _forward(
        *inputs, padded_columns(w_hh.T), as_array(b_hh), as_array(h0),
        as_array(c0), out.numpy(), hn.numpy(), cn.numpy(), gates.numpy(), cs.numpy(), save,
        block_rows(B),
    )
    return out, hn, cn, ((gates, cs) if save else ())


@checked("lstm", "backward")
def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved):
    """Gradients ``(d_gx, d_gh, d_h0, d_c0)`` with ``d_gh is d_gx``."""
    T, B, GH = saved[0].shape
    d_pre = workspace.empty((T, B, GH), saved[0].dtype)
    d_h0, d_c0, _ = _run_backward(grad_out, grad_hn, grad_cn, w_hh, h0, c0, out, saved, None,
                                  d_pre)
    return d_pre, d_pre, d_h0, d_c0


@checked("lstm", "backward_with_weight_grads")
def backward_with_weight_grads(grad_out, grad_hn, grad_cn, x, w_hh, b_hh, h0, c0, out, saved,
                               *, keep_d_gx=False):
    """Backward through time with the layer's weight gradients formed in the same pass
    (:mod:`~tsrnn.kernels.common.numba_grads`); x (T, B, I) is the layer's input.

    Returns ``(d_gx, d_h0, d_c0, d_w_ih, d_b_ih, d_w_hh, d_b_hh)``, ``d_gx`` (T, B, 4H) only
    where ``keep_d_gx`` (else ``None``): the layer needs it for ``d_x`` alone.
    """
    T, B, GH = saved[0].shape
    d_gx = workspace.empty((T, B, GH), saved[0].dtype) if keep_d_gx else None
    d_h0, d_c0, grads = _run_backward(grad_out, grad_hn, grad_cn, w_hh, h0, c0, out, saved, x,
                                      d_gx)
    return (d_gx, d_h0, d_c0, *grads)


def _run_backward(grad_out, grad_hn, grad_cn, w_hh, h0, c0, out, saved, x, d_pre):
    """The kernel call; weight gradients where ``x`` is given. Returns ``(d_h0, d_c0, grads)``."""
    gates, cs = saved
    _, B, GH = gates.shape
    H = GH // 4
    if c0 is None:
        c0 = torch.zeros_like(h0)
    if grad_cn is None:
        grad_cn = torch.zeros_like(h0)
    xa, tail, grads = numba_grads.backward_args(x, B, H, GH, gates)
    d_h0 = torch.empty(h0.shape, dtype=gates.dtype, device="cpu")
    d_c0 = torch.empty(h0.shape, dtype=gates.dtype, device="cpu")
    _backward(
        as_array(grad_out), as_array(grad_hn), as_array(grad_cn), padded_columns(w_hh),
        as_array(h0), as_array(c0), as_array(out), as_array(gates), as_array(cs), xa,
        numba_grads.or_none(d_pre, xa), d_h0.numpy(), d_c0.numpy(), *tail,
    )
    return d_h0, d_c0, grads
