"""GRU forward and backward through time as Numba CPU kernels.

Dimension legend: T time steps, B batch, H hidden size, G = 3 gates (r, z, n), GH = 3H,
R batch rows per block.

Equations (torch's form, the reset gate applied to the recurrent product of n)::

    gh = W_hh h + b_hh                        (GH,)
    r = σ(gx_r + gh_r),  z = σ(gx_z + gh_z),  n = tanh(gx_n + r * gh_n)
    h' = (1 - z) * n + z * h  =  n + z * (h - n)

The kernel owns the time loop; batch rows are independent, so threads split the batch into
blocks of R rows (``prange`` over blocks) and each advances its block through every step, the
recurrent product of the block done at once (:func:`rows_matmul_add`). In the fused path
(``forward_projected``) the same product also forms the input projection of the r and z
gates, from the step's inputs kept beside the state (:func:`_forward`); only the n gate's
input part, which must stay apart from ``gh_n``, takes a second, I-deep product (forward
0.88x the time of a separate projection of all three gates, electricity shape, 2 threads,
where I = 4 made that projection's accumulators cost more than its arithmetic). In float32 the gate
math of a row is one pass of explicit SIMD vectors, activations inline (:func:`_gates_vector`;
forward 0.86x the time of the loops below at the electricity benchmark's shape, 2 threads;
likewise in backward, :func:`_backward_gates_vector`, 0.91-0.96x). The forward's gates run on
whole groups of vectors (:func:`~tsrnn.kernels.common.numba_simd.vgroup`), so the long chains
of their activations interleave, and each step runs for one half of a block of up to 16 rows,
then the other (:data:`HALF_ROWS`), so that one half's product overlaps the other's gate pass.
In float64 it runs as short loops over contiguous rows, each writing one array that none of
its reads can overlap (LLVM vectorises a loop only when a few runtime alias checks prove that;
a loop reading and writing one array at offsets H apart stays scalar). Saved for backward: the
activated gates (T, B, 3H) and ``gh_n`` (T, B, H).

The backward runs in reverse over chunks of such blocks, their rows and grouping set by ``B``
alone, and sums the layer's weight gradients in its time loop (``backward_with_weight_grads``,
:mod:`~tsrnn.kernels.common.numba_grads`; blocks of up to :data:`BACKWARD_ROWS` rows, each step
run for one half of the block, then the other: :data:`HALF_ROWS`); its plain ``backward`` (the
package's calling convention) is the same loop writing the gate gradients out instead.

With a linear head (``forward_projected_head``, ``backward_head``; the forecaster's training
loss, :func:`tsrnn.nn.layer_head_sq_loss`) the forward forms each step's residuals right after
its gates and the backward each step's state gradient from them, summing the head's weight
gradients per chunk (:mod:`~tsrnn.kernels.common.numba_head`). ``train_head`` runs both in one
call (:func:`_train_head`): each chunk runs its block forward, then at once backward, with
what the forward saves for that block (T, R, 5H) in the chunk's own buffers, which stay in the
core's cache (about 2 MB at T=96, R=16, H=64; blocks of 8 rows where 16 would not fit the
core's L2, :func:`train_rows`), where the two calls write the whole batch's
(T, B, 5H) out to memory (31 MB) and read it back. Kernel level, alternated calls: 0.90x the
time of the two calls at the electricity benchmark's shape, 0.79x at the hourly one; the same
blocks and arithmetic, so the same results (to the bit but for float32 columns past the last
whole vector, which LLVM may contract differently in the two kernels). Its threads take the
chunks one at a time from a shared count (:mod:`~tsrnn.kernels.common.numba_sched`), each with
its own buffers, rather than a fixed half each: on the 2-core development VM, whose cores
slow down one at a time for seconds, a fixed split kept the faster thread waiting at the end
of every call (electricity benchmark, alternated fits in one process: 0.89x the time with
another process taking 30% of one core, 0.99x with none; the same results, chunk for chunk).
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import prange, types
from numba.extending import overload

from tsrnn.kernels.common import aligned, cpu_caches, numba_grads, numba_head, workspace
from tsrnn.kernels.common.activations import fast_tanh, one_minus, sigmoid, vsigmoid, vtanh
from tsrnn.kernels.common.checks import checked
from tsrnn.kernels.common.numba_config import njit, njit_parallel
from tsrnn.kernels.common.numba_glue import as_array
from tsrnn.kernels.common.numba_grads import (
    block_buffers,
    reduce_parts,
    step_done,
    thread_buffers,
)
from tsrnn.kernels.common.numba_head import head_backward_rows, head_rows
from tsrnn.kernels.common.numba_linalg import (
    MAX_BLOCK_ROWS,
    padded,
    padded_columns,
    rows_matmul_add,
)
from tsrnn.kernels.common.numba_sched import next_chunk, workers
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

GATES = 3
BACKWARD_NEEDS_GX = False
# the backward reads what the forward saved, not b_hh: it is not kept for it (torch.nn's
# backward allows an in-place edit of b_hh between forward and backward too)
BACKWARD_NEEDS_B_HH = False


def _gates(gh, gxn, xh, out, gates, ghn, t, b0, nr, save):
    """Step ``t`` of rows ``b0 .. b0+nr-1`` from their pre-activations: ``gh`` (R, 3H), the
    r and z columns complete, the n columns ``b_hh + W_hh h``, and ``gxn`` (R, H), the n
    gate's input part; writes ``out[t]``, the block's state ``h`` (the last H columns of
    ``xh``) and, where ``save``, the activated gates and ``gh_n``. float32: one pass of
    explicit vectors (:func:`_gates_vector`); float64: loops that LLVM vectorises (libm's
    activations stay scalar)."""


@overload(_gates, inline="always")
def _gates_overload(gh, gxn, xh, out, gates, ghn, t, b0, nr, save):
    if out.dtype == types.float32:
        return _gates_vector.py_func
    return _gates_loops.py_func


@njit
def _gates_vector(gh, gxn, xh, out, gates, ghn, t, b0, nr, save):
    """All gates of a row in one pass of SIMD vectors (:mod:`numba_simd`), the activations
    inline (:func:`vsigmoid`, :func:`vtanh`): written as separate loops, LLVM vectorises each
    at half the register width and loads and stores every intermediate. Whole groups of
    vectors first (:func:`~tsrnn.kernels.common.numba_simd.vgroup`: their activations'
    chains interleaved), then single vectors; columns past the last whole vector go through
    :func:`_gates_loops`'s arithmetic, one at a time."""
    H = out.shape[2]
    s0 = xh.shape[1] - H  # the state's first column in xh
    L = vector_lanes(gh)
    G = L * GROUP
    Hv = H - H % L
    for r in range(nr):
        b = b0 + r
        j = 0
        while j + G <= H:
            _gate_columns(vgroup(gh), gh, gxn, xh, out, gates, ghn, t, b, r, s0, j, save)
            j += G
        while j < Hv:
            _gate_columns(vzero(gh), gh, gxn, xh, out, gates, ghn, t, b, r, s0, j, save)
            j += L
        for j in range(Hv, H):
            rj = sigmoid(gh[r, j])
            zj = sigmoid(gh[r, H + j])
            nj = fast_tanh(gxn[r, j] + rj * gh[r, 2 * H + j])
            hj = nj + zj * (xh[r, s0 + j] - nj)
            if save:
                gates[t, b, j] = rj
                gates[t, b, H + j] = zj
                gates[t, b, 2 * H + j] = nj
                ghn[t, b, j] = gh[r, 2 * H + j]
            out[t, b, j] = hj
            xh[r, s0 + j] = hj


@njit(inline="always")
def _gate_columns(like, gh, gxn, xh, out, gates, ghn, t, b, r, s0, j, save):
    """Columns ``j .. j+n-1`` of row ``r`` (batch row ``b``) of :func:`_gates_vector`, ``n``
    the lanes of ``like`` (a vector or a group of them)."""
    H = out.shape[2]
    rg = vsigmoid(vload_like(like, gh, r, j))
    zg = vsigmoid(vload_like(like, gh, r, H + j))
    ghn_j = vload_like(like, gh, r, 2 * H + j)
    ng = vtanh(vmuladd(rg, ghn_j, vload_like(like, gxn, r, j)))
    hj = vmuladd(zg, vsub(vload_like(like, xh, r, s0 + j), ng), ng)
    if save:
        vstore3(gates, t, b, j, rg)
        vstore3(gates, t, b, H + j, zg)
        vstore3(gates, t, b, 2 * H + j, ng)
        vstore3(ghn, t, b, j, ghn_j)
    vstore3(out, t, b, j, hj)
    vstore(xh, r, s0 + j, hj)


@njit
def _gates_loops(gh, gxn, xh, out, gates, ghn, t, b0, nr, save):
    H = out.shape[2]
    s0 = xh.shape[1] - H
    for r in range(nr):
        b = b0 + r
        for j in range(2 * H):  # r, z in place
            gh[r, j] = sigmoid(gh[r, j])
        for j in range(H):  # n, into out's row (in place would alias gh's reads)
            out[t, b, j] = fast_tanh(gxn[r, j] + gh[r, j] * gh[r, 2 * H + j])
        if save:
            for j in range(2 * H):
                gates[t, b, j] = gh[r, j]
            for j in range(H):
                gates[t, b, 2 * H + j] = out[t, b, j]
            for j in range(H):
                ghn[t, b, j] = gh[r, 2 * H + j]
        for j in range(H):
            out[t, b, j] += gh[r, H + j] * (xh[r, s0 + j] - out[t, b, j])
        for j in range(H):
            xh[r, s0 + j] = out[t, b, j]


HALF_ROWS = MAX_BLOCK_ROWS
"""Rows of a half block. Forward and backward run each step for one half of a block, then the
other: the second half's recurrent product does not wait for the first's gate pass (the
activations' long chains), so the CPU overlaps them."""


def forward_rows(B: int) -> int:
    """Rows per block of the forward: up to two halves (:data:`HALF_ROWS`), fewer when that
    would leave threads idle."""
    return max(1, min(2 * HALF_ROWS, -(-B // numba.get_num_threads())))


@njit_parallel
def _forward(gx, xin, w_c, b_c, w_n, b_n, h0, out, hn, gates, ghn, w_o, b_o, y, resid, save, R):
    """The time loop (see :func:`_forward_args` for ``w_c``, ``b_c``, ``w_n``, ``b_n``). Each
    block keeps its rows' step input and state side by side in ``xh`` (R, I + H), so one
    product forms the r and z pre-activations from both, and the n gate's recurrent part;
    a second, over the I input columns only, the n gate's input part ``gxn``. With ``gx``
    given (T, B, 3H; I = 0) its rows are added to the biases instead. With a head (``w_o``
    (O, H), ``b_o`` (O,), targets ``y`` (T, B, O); O = 0: none) each step's residuals go to
    ``resid`` (T, B, O) (:func:`~tsrnn.kernels.common.numba_head.head_rows`).

    Each step runs for one half of the block, then the other (:data:`HALF_ROWS`). A row's
    arithmetic does not depend on ``R`` nor on the halves."""
    T, B, H = out.shape
    I = xin.shape[2]
    for blk in prange((B + R - 1) // R):
        b0 = blk * R
        nr = min(R, B - b0)
        xh = aligned.zeros((R, I + H), out)
        for r in range(nr):
            for j in range(H):
                xh[r, I + j] = h0[b0 + r, j]
        gh = aligned.zeros((R, w_c.shape[1]), out)
        gxn = aligned.zeros((R, w_n.shape[1]), out)
        for t in range(T):
            for i in range(0, nr, HALF_ROWS):
                m = min(HALF_ROWS, nr - i)
                _forward_step(gx, xin, w_c, b_c, w_n, b_n, out, gates, ghn, w_o, b_o, y, resid,
                              save, xh[i : i + m], gh[i : i + m], gxn[i : i + m], t, b0 + i, m)
        for r in range(nr):
            for j in range(H):
                hn[b0 + r, j] = xh[r, I + j]


@njit(inline="always")
def _forward_step(gx, xin, w_c, b_c, w_n, b_n, out, gates, ghn, w_o, b_o, y, resid, save, xh, gh,
                  gxn, t, b0, nr):
    """Step ``t`` of the block of rows ``b0 .. b0+nr-1``, its scratch ``xh``, ``gh``, ``gxn``."""
    H = out.shape[2]
    I = xin.shape[2]
    infinite = False
    for r in range(nr):
        for i in range(I):
            v = xin[t, b0 + r, i]
            xh[r, i] = v
            infinite |= abs(v) == np.inf
        for j in range(w_c.shape[1]):
            gh[r, j] = b_c[j]
        for j in range(w_n.shape[1]):
            gxn[r, j] = b_n[j]
    if gx.shape[0] > 0:
        for r in range(nr):
            for j in range(2 * H):
                gh[r, j] += gx[t, b0 + r, j]
            for j in range(H):
                gxn[r, j] += gx[t, b0 + r, 2 * H + j]
    rows_matmul_add(xh, w_c, gh, nr)  # gh = b_c + [x, h] @ w_c
    if infinite:
        _n_columns_without_inputs(xh, w_c, b_c, gh, I, H, nr)
    if I > 0:
        rows_matmul_add(xh, w_n, gxn, nr)  # gxn = b_n + x @ w_n (xh's first I columns)
    _gates(gh, gxn, xh, out, gates, ghn, t, b0, nr, save)
    if w_o.shape[0] > 0:
        head_rows(xh, I, w_o, b_o, y, resid, t, b0, nr)


@njit
def _n_columns_without_inputs(xh, w_c, b_c, gh, I, H, nr):
    """The n columns of ``gh`` again, ``b_hh + W_hn h``, from the state's rows of ``w_c`` only.

    ``w_c``'s input rows are zero in the n columns, and the product adds ``x * 0`` there: 0,
    but NaN where an input is infinite, which torch's separate products never form. Only for
    steps with an infinite input, so a rare, slow path."""
    for r in range(nr):
        for j in range(2 * H, 3 * H):
            acc = b_c[j]
            for k in range(H):
                acc += xh[r, I + k] * w_c[I + k, j]
            gh[r, j] = acc


def _forward_args(x, w_ih, b_ih, w_hh, b_hh, dtype):
    """The forward kernel's weights for inputs ``x`` (T, B, I) projected by ``w_ih`` (3H, I)
    and ``b_ih`` (3H,) or None; ``x`` None: none (the caller passes ``gx``).

    Returns ``(xin, w_c, b_c, w_n, b_n)``: ``w_c`` (I + H, 3Hp) stacks ``W_ih^T`` with its n
    columns zero (the n gate needs its input and recurrent parts apart) over ``W_hh^T``;
    ``b_c`` = ``b_hh`` plus ``b_ih`` in the r and z columns; ``w_n`` (I, Hp), ``b_n`` (Hp):
    the n gate's input projection. Columns zero-padded to whole micro-kernel tiles
    (:func:`_kernel_weights`).
    """
    GH, H = w_hh.shape
    if x is None:
        xin, w_i, b_i = np.zeros((0, 1, 0), dtype=dtype), np.zeros((GH, 0), dtype=dtype), None
    else:
        xin, w_i, b_i = as_array(x), as_array(w_ih), b_ih
    b_i = np.zeros(0, dtype=dtype) if b_i is None else as_array(b_i)
    w_c, b_c, w_n, b_n, _ = _kernel_weights(
        w_i, b_i, as_array(w_hh), as_array(b_hh), padded(GH, dtype), padded(H, dtype)
    )
    return xin, w_c, b_c, w_n, b_n


@njit
def _kernel_weights(w_ih, b_ih, w_hh, b_hh, GHp, Hp):
    """:func:`_forward_args`' ``(w_c, b_c, w_n, b_n)`` (``b_ih`` empty: none; ``w_ih``
    (3H, 0): no inputs) and ``w_hh`` with its columns zero-padded to ``Hp``, the backward's
    (:func:`padded_columns`), in one call: the training step's kernel takes all five."""
    GH, H = w_hh.shape
    I = w_ih.shape[1]
    w_c = aligned.zeros((I + H, GHp), w_hh)
    b_c = aligned.zeros((GHp,), w_hh)
    w_n = aligned.zeros((I, Hp), w_hh)
    b_n = aligned.zeros((Hp,), w_hh)
    w_hp = aligned.zeros((GH, Hp), w_hh)
    for g in range(GH):
        for k in range(H):
            w_c[I + k, g] = w_hh[g, k]
            w_hp[g, k] = w_hh[g, k]
        b_c[g] = b_hh[g]
    for g in range(2 * H):
        for i in range(I):
            w_c[i, g] = w_ih[g, i]
        if b_ih.shape[0] > 0:
            b_c[g] += b_ih[g]
    for j in range(H):
        for i in range(I):
            w_n[i, j] = w_ih[2 * H + j, i]
        if b_ih.shape[0] > 0:
            b_n[j] = b_ih[2 * H + j]
    return w_c, b_c, w_n, b_n, w_hp


def _backward_gates(dh, grad_out, gates, ghn, hp, dgx, dgh, t, b0, o, nr):
    """The gate gradients of step ``t`` for rows ``b0 .. b0+nr-1``, into rows ``o ..`` of the
    block's ``dgx`` and ``dgh`` (S*R, 3H); ``dh`` (R, H) comes in as the gradient flowing
    from step ``t + 1`` and leaves as its direct path to step ``t - 1`` (through ``z``), the
    recurrent product then adds the rest (its columns padded to the product's tile). ``hp``
    (B, H): the previous states. float32: one
    pass of SIMD vectors (:func:`_backward_gates_vector`); float64: vectorisable loops."""


@overload(_backward_gates, inline="always")
def _backward_gates_overload(dh, grad_out, gates, ghn, hp, dgx, dgh, t, b0, o, nr):
    if gates.dtype == types.float32:
        return _backward_gates_vector.py_func
    return _backward_gates_loops.py_func


@njit
def _backward_gates_vector(dh, grad_out, gates, ghn, hp, dgx, dgh, t, b0, o, nr):
    H = ghn.shape[2]  # dh's columns are padded
    go = grad_out.shape[0] > 0  # else the head's gradient is in dh already
    L = vector_lanes(dh)
    Hv = H - H % L
    for r in range(nr):
        b = b0 + r
        q = o + r
        for j in range(0, Hv, L):
            d = vload(dh, r, j)
            if go:
                d = vadd(d, vload3(grad_out, t, b, j))
            rg = vload3(gates, t, b, j)
            zg = vload3(gates, t, b, H + j)
            ng = vload3(gates, t, b, 2 * H + j)
            one = vsplat(d, np.float32(1.0))
            dn = vmul(vmul(d, vsub(one, zg)), vsub(one, vmul(ng, ng)))
            dz = vmul(vmul(vmul(d, vsub(vload(hp, b, j), ng)), zg), vsub(one, zg))
            dghn = vmul(dn, rg)  # dn * r, the gradient of gh_n
            dr = vmul(vmul(dghn, vload3(ghn, t, b, j)), vsub(one, rg))  # dn gh_n r (1 - r)
            vstore(dgx, q, j, dr)
            vstore(dgx, q, H + j, dz)
            vstore(dgx, q, 2 * H + j, dn)
            vstore(dgh, q, j, dr)
            vstore(dgh, q, H + j, dz)
            vstore(dgh, q, 2 * H + j, dghn)
            vstore(dh, r, j, vmul(d, zg))
        for j in range(Hv, H):
            d = dh[r, j] + grad_out[t, b, j] if go else dh[r, j]
            rj, z, n = gates[t, b, j], gates[t, b, H + j], gates[t, b, 2 * H + j]
            dn = d * one_minus(z) * one_minus(n * n)
            dz = d * (hp[b, j] - n) * z * one_minus(z)
            dghn = dn * rj
            dr = dghn * ghn[t, b, j] * one_minus(rj)
            dgx[q, j] = dr
            dgx[q, H + j] = dz
            dgx[q, 2 * H + j] = dn
            dgh[q, j] = dr
            dgh[q, H + j] = dz
            dgh[q, 2 * H + j] = dghn
            dh[r, j] = d * z


@njit
def _backward_gates_loops(dh, grad_out, gates, ghn, hp, dgx, dgh, t, b0, o, nr):
    H = ghn.shape[2]  # dh's columns are padded
    for r in range(nr):
        b = b0 + r
        q = o + r
        if grad_out.shape[0] > 0:  # else the head's gradient is in dh already
            for j in range(H):
                dh[r, j] += grad_out[t, b, j]
        for j in range(H):  # dn
            z, n = gates[t, b, H + j], gates[t, b, 2 * H + j]
            dgx[q, 2 * H + j] = dh[r, j] * one_minus(z) * one_minus(n * n)
        for j in range(H):  # dz
            z, n = gates[t, b, H + j], gates[t, b, 2 * H + j]
            dgx[q, H + j] = dh[r, j] * (hp[b, j] - n) * z * one_minus(z)
        for j in range(H):
            dgh[q, 2 * H + j] = dgx[q, 2 * H + j] * gates[t, b, j]
        for j in range(H):  # dr = dn * gh_n * r * (1 - r)
            rj = gates[t, b, j]
            dgx[q, j] = dgh[q, 2 * H + j] * ghn[t, b, j] * one_minus(rj)
        for j in range(2 * H):
            dgh[q, j] = dgx[q, j]
        for j in range(H):  # the direct path h -> h' through z
            dh[r, j] *= gates[t, b, H + j]


BACKWARD_ROWS = 2 * HALF_ROWS
"""Most rows of a block of the backward that sums weight gradients: two halves, each step run
for one, then the other (the head's gradient, the gates, the recurrent product), as in the
forward; the staged weight-gradient sums add twice the rows at a time."""


def train_rows(T: int, I: int, H: int, O: int, itemsize: int) -> int:
    """Most rows of a block of :func:`train_head`: :data:`BACKWARD_ROWS` where what such a
    block keeps from its forward for its backward (its saved gates, ``gh_n`` and states, its
    inputs, targets and residuals: ``T * R * (5H + I + 2O)`` values) fits in one core's L2
    cache (:func:`~tsrnn.kernels.common.cpu_caches.l2_bytes`; unknown: assumed to fit), else
    one half (:data:`HALF_ROWS`), whose block keeps half as much.

    Measured on an AMD EPYC (Zen 3, 512 KB of L2 a core; AVX2) at B=256, H=64, I=4, O=1,
    alternated calls, 2 threads (paired medians of the 8-row over the 16-row kernel): T=96
    0.951x, T=48 0.946x, T=24 0.975x; the electricity benchmark's whole fit 0.927x (8 pairs).
    Where the 16-row block fits, the halves' overlap is kept (16 rows were chosen on the
    Intel VMs of sessions 29-34, whose L2 size was not recorded: at the electricity shape a
    16-row block keeps 2.0 MB, 8 rows 1.0 MB; the 8-row kernel is unmeasured there). On an
    AMD EPYC Zen 5 (1 MB of L2; AVX-512) the two are level: whole electricity fits with 16
    rows took 0.962x and 1.009x the 8-row time (medians of 8 and 20 alternated pairs). The
    rows change the order of the weight-gradient sums (rounding, about 2e-7 relative in
    float32), so a fit's results depend on the machine's L2 size as they do on its vector
    width, never on the thread count."""
    R = BACKWARD_ROWS
    l2 = cpu_caches.l2_bytes()
    if l2 is not None and T * R * (5 * H + I + 2 * O) * itemsize > l2:
        return HALF_ROWS
    return R


@njit_parallel
def _backward(grad_out, grad_hn, w_hh, h0, out, gates, ghn, x, d_gx, d_gh, d_h0, w_o, e, hacc, R,
              per_chunk, part, d_w_ih, d_b_ih, d_w_hh, d_b_hh):
    """With a head (``w_o`` (O, H); O = 0: none), ``grad_out`` is empty and the states'
    gradient from the head, ``e[t] @ w_o`` (``e`` (T, B, O)), is formed in the time loop, the
    head's weight and bias gradients summed into ``hacc`` (C, O, H + 1), float64, per chunk
    (:func:`~tsrnn.kernels.common.numba_head.head_backward_rows`)."""
    T, B, GH = gates.shape
    H = GH // 3
    head = w_o.shape[0] > 0
    fused = part.shape[0] > 0  # accumulate the weight gradients (numba_grads)
    keep_gx, keep_gh = d_gx.shape[0] > 0, d_gh.shape[0] > 0
    blocks = (B + R - 1) // R
    for c in prange((blocks + per_chunk - 1) // per_chunk):
        dgx, xs, hs, seg = block_buffers(part, c, R, x.shape[2], H, gates)
        dgh = aligned.zeros(dgx.shape, dgx)
        dh = aligned.zeros((R, w_hh.shape[1]), gates)
        stage = aligned.empty((1, w_o.shape[1]), gates)  # the head's row sums
        for blk in range(c * per_chunk, min(blocks, (c + 1) * per_chunk)):
            b0 = blk * R
            nr = min(R, B - b0)
            for r in range(nr):
                for j in range(H):
                    dh[r, j] = grad_hn[b0 + r, j]
            s = 0  # this step's slot
            f = 0  # additions to the segment's sum
            for t in range(T - 1, -1, -1):
                hp = out[t - 1] if t > 0 else h0  # h_prev of every row
                o = s * nr  # the slot's first row
                for i in range(0, nr, HALF_ROWS):  # the block's halves, one after the other
                    m = min(HALF_ROWS, nr - i)
                    dhi = dh[i : i + m]
                    if head:
                        head_backward_rows(dhi, e, w_o, out, hacc, stage, c, t, b0 + i, m)
                    _backward_gates(dhi, grad_out, gates, ghn, hp, dgx, dgh, t, b0 + i, o + i, m)
                    # dh_prev += d_gh @ W_hh
                    rows_matmul_add(dgh[o + i : o + i + m], w_hh, dhi, m)
                for r in range(nr):
                    b = b0 + r
                    q = o + r
                    if keep_gx:
                        for j in range(GH):
                            d_gx[t, b, j] = dgx[q, j]
                    if keep_gh:
                        for j in range(GH):
                            d_gh[t, b, j] = dgh[q, j]
                if fused:
                    s, f = step_done(
                        part[c], seg, xs, hs, dgx, dgh, x[t], hp, b0, o, nr, s, f, t == 0, False
                    )
            for r in range(nr):
                for j in range(H):
                    d_h0[b0 + r, j] = dh[r, j]
    if fused:
        reduce_parts(part, x.shape[2], False, d_w_ih, d_b_ih, d_w_hh, d_b_hh)


@checked("gru", "forward")
def forward(gx, w_hh, b_hh, h0, c0=None, *, save=True):
    """GRU over all steps. gx (T, B, 3H), w_hh (3H, H), b_hh (3H,), h0 (B, H).

    Returns ``out`` (T, B, H), ``h_n`` (B, H), ``None``, ``saved`` = (gates (T, B, 3H),
    gh_n (T, B, H)) when ``save`` else ``()``.
    """
    gx = as_array(gx)
    args = _forward_args(None, None, None, w_hh, b_hh, gx.dtype)
    return _run_forward(gx, args, gx.shape[0], h0, save)[:4]


@checked("gru", "forward_projected")
def forward_projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0=None, *, save=True):
    """:func:`forward` of ``gx = x @ w_ih.T + b_ih``, the projection formed step by step in
    the time loop; x (T, B, I), w_ih (3H, I), b_ih (3H,) or None."""
    dtype = as_array(h0).dtype
    args = _forward_args(x, w_ih, b_ih, w_hh, b_hh, dtype)
    return _run_forward(np.zeros((0, 1, 1), dtype=dtype), args, x.shape[0], h0, save)[:4]


@checked("gru", "forward_projected_head")
def forward_projected_head(x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, y):
    """:func:`forward_projected` (saving for backward) with a linear head on every step's
    state: w_o (O, H), b_o (O,), targets y (T, B, O). Returns ``out``, ``h_n``, ``resid``
    (T, B, O) = ``out @ w_o.T + b_o - y``, formed in the time loop, and ``saved``."""
    dtype = as_array(h0).dtype
    args = _forward_args(x, w_ih, b_ih, w_hh, b_hh, dtype)
    head = (aligned.aligned_view(w_o), aligned.aligned_view(b_o), as_array(y))
    out, hn, _, saved, resid = _run_forward(
        np.zeros((0, 1, 1), dtype=dtype), args, x.shape[0], h0, True, head
    )
    return out, hn, resid, saved


def _run_forward(gx, args, T, h0, save, head=None):
    """The kernel call; ``head`` None or ``(w_o, b_o, y)``. Returns ``(out, h_n, None,
    saved, resid)``, ``resid`` None without a head."""
    B, H = h0.shape
    GH = 3 * H
    dtype = h0.dtype
    out = workspace.empty((T, B, H), dtype)
    hn = torch.empty((B, H), dtype=dtype, device="cpu")
    shape_g, shape_n = ((T, B, GH), (T, B, H)) if save else ((1, 1, GH), (1, 1, H))
    gates = workspace.empty(shape_g, dtype)
    ghn = workspace.empty(shape_n, dtype)
    if head is None:
        head_args, resid = numba_head.no_head(out.numpy().dtype), None
    else:
        resid = workspace.empty((T, B, head[0].shape[0]), dtype)
        head_args = (*head, resid.numpy())
    _forward(
        gx, *args, as_array(h0), out.numpy(), hn.numpy(), gates.numpy(), ghn.numpy(), *head_args,
        save, forward_rows(B),
    )
    return out, hn, None, ((gates, ghn) if save else ()), resid


@checked("gru", "backward")
def backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved):
    """Gradients ``(d_gx, d_gh, d_h0, None)``; see :mod:`tsrnn.kernels` for the convention."""
    T, B, GH = saved[0].shape
    d_gx = workspace.empty((T, B, GH), saved[0].dtype)
    d_gh = workspace.empty((T, B, GH), saved[0].dtype)
    d_h0 = _run_backward(grad_out, grad_hn, w_hh, h0, out, saved, None, d_gx, d_gh)[0]
    return d_gx, d_gh, d_h0, None


@checked("gru", "backward_with_weight_grads")
def backward_with_weight_grads(grad_out, grad_hn, grad_cn, x, w_hh, b_hh, h0, c0, out, saved,
                               *, keep_d_gx=False):
    """Backward through time with the layer's weight gradients formed in the same pass
    (:mod:`~tsrnn.kernels.common.numba_grads`); x (T, B, I) is the layer's input.

    Returns ``(d_gx, d_h0, None, d_w_ih, d_b_ih, d_w_hh, d_b_hh)``, ``d_gx`` (T, B, 3H) only
    where ``keep_d_gx`` (else ``None``): the layer needs it for ``d_x`` alone.
    """
    T, B, GH = saved[0].shape
    d_gx = workspace.empty((T, B, GH), saved[0].dtype) if keep_d_gx else None
    d_h0, grads = _run_backward(grad_out, grad_hn, w_hh, h0, out, saved, x, d_gx, None)[:2]
    return (d_gx, d_h0, None, *grads)


@checked("gru", "backward_head")
def backward_head(grad_hn, x, w_hh, b_hh, h0, out, saved, w_o, e, *, keep_d_gx=False):
    """:func:`backward_with_weight_grads` after :func:`forward_projected_head`: the gradient
    reaches the states through the head only, ``e`` (T, B, O) being the loss's gradient with
    respect to the head's outputs, and the head's gradients are summed in the same pass.

    Returns ``(d_gx, d_h0, None, d_w_ih, d_b_ih, d_w_hh, d_b_hh, d_w_o, d_b_o)``.
    """
    T, B, GH = saved[0].shape
    d_gx = workspace.empty((T, B, GH), saved[0].dtype) if keep_d_gx else None
    d_h0, grads, head = _run_backward(None, grad_hn, w_hh, h0, out, saved, x, d_gx, None, (w_o, e))
    return (d_gx, d_h0, None, *grads, *head)


def _run_backward(grad_out, grad_hn, w_hh, h0, out, saved, x, d_gx, d_gh, head=None):
    """The kernel call; weight gradients where ``x`` is given; ``head`` None or ``(w_o, e)``
    (``grad_out`` then None). Returns ``(d_h0, grads, head_grads)``."""
    gates, ghn = saved
    T, B, GH = gates.shape
    rows = BACKWARD_ROWS
    if head is not None:  # train_head's two-call form: its blocks, hence its results
        I = 0 if x is None else x.shape[2]
        rows = train_rows(T, I, GH // 3, head[0].shape[0], gates.element_size())
    xa, tail, grads = numba_grads.backward_args(x, B, GH // 3, GH, gates, rows)
    d_h0 = torch.empty(h0.shape, dtype=gates.dtype, device="cpu")
    # contiguous, as the float32 gate pass's vector loads of it are typed for (or_none gives
    # the tensor's own view: it also passes output buffers, which must not be copies)
    go = numba_grads.or_none(None if grad_out is None else grad_out.contiguous(), xa)
    w_o, e, hacc = numba_head.head_backward_args(head, tail[2].shape[0], GH // 3, xa.dtype)
    _backward(
        go, as_array(grad_hn), padded_columns(w_hh), as_array(h0),
        as_array(out), as_array(gates), as_array(ghn), xa, numba_grads.or_none(d_gx, xa),
        numba_grads.or_none(d_gh, xa), d_h0.numpy(), w_o, e, hacc, *tail,
    )
    return d_h0, grads, numba_head.head_grads(hacc, d_h0.dtype)


@njit_parallel
def _train_head(x, w_c, b_c, w_n, b_n, w_hh, h0, w_o, b_o, y, factor, resid, hn, d_gx, d_h0, hacc,
                R, per_chunk, part, d_w_ih, d_b_ih, d_w_hh, d_b_hh, add, threads):
    """Forward and backward of :func:`forward_projected_head` then :func:`backward_head` in one
    pass over each block of rows: the block runs forward through every step, its saved gates,
    ``gh_n`` and states kept in the chunk's own buffers (T, R, ...), then at once backward
    through them, while they are still in the core's cache, instead of the whole batch's
    (T, B, 5H) going out to memory and coming back. The loss's gradient with respect to the
    head's outputs is ``factor * resid``; no gradient reaches the final state. The head's
    gradients are left in the chunks' float64 partials ``hacc`` (C, O, H + 1), reduced by the
    caller as after :func:`_backward` (:func:`~tsrnn.kernels.common.numba_head.head_grads`:
    reduced inside this kernel, LLVM may order that float64 sum differently).

    Blocks, chunks and every row's arithmetic are those of the two kernels (:func:`_forward`,
    :func:`_backward`), so results equal theirs bit for bit, but for float32 columns past the
    last whole SIMD vector (scalar code, which LLVM may contract differently in each kernel:
    a few ulp). ``threads``: ``numba.get_num_threads()``; each takes chunks in turn
    (:func:`~tsrnn.kernels.common.numba_sched.next_chunk`) until none is left, which thread
    runs a chunk changing nothing in the results."""
    T, B, I = x.shape
    H = hn.shape[1]
    GH = 3 * H
    O = w_o.shape[0]
    keep_gx = d_gx.shape[0] > 0
    empty_gx = np.zeros((0, 1, 1), dtype=hn.dtype)
    empty_go = np.zeros((0, 1, 1), dtype=hn.dtype)
    blocks = (B + R - 1) // R
    chunks = (blocks + per_chunk - 1) // per_chunk
    taken = np.zeros(1, dtype=np.int64)  # chunks handed out (numba_sched)
    for _ in prange(workers(chunks, threads)):
        # this thread's scratch, for each chunk it takes in turn (every block writes what it
        # reads first; see thread_buffers)
        dgx, xs, hs, seg = thread_buffers(part, R, I, H, hn)
        dgh = aligned.zeros(dgx.shape, dgx)
        dh = aligned.zeros((R, w_hh.shape[1]), hn)
        stage = aligned.empty((1, H), hn)
        xh = aligned.zeros((R, I + H), hn)
        gh = aligned.zeros((R, w_c.shape[1]), hn)
        gxn = aligned.zeros((R, w_n.shape[1]), hn)
        # the block's inputs, targets and initial state, and what its forward saves
        xl = aligned.empty((T, R, I), hn)
        yl = aligned.empty((T, R, O), hn)
        el = aligned.empty((T, R, O), hn)
        hl = aligned.empty((R, H), hn)
        out = aligned.empty((T, R, H), hn)
        gates = aligned.empty((T, R, GH), hn)
        ghn = aligned.empty((T, R, H), hn)
        c = next_chunk(taken)
        while c < chunks:
            part[c] = 0
            for blk in range(c * per_chunk, min(blocks, (c + 1) * per_chunk)):
                b0 = blk * R
                nr = min(R, B - b0)
                for t in range(T):
                    for r in range(nr):
                        for i in range(I):
                            xl[t, r, i] = x[t, b0 + r, i]
                        for o in range(O):
                            yl[t, r, o] = y[t, b0 + r, o]
                for r in range(nr):
                    for j in range(H):
                        hl[r, j] = h0[b0 + r, j]
                        xh[r, I + j] = h0[b0 + r, j]
                for t in range(T):
                    for i in range(0, nr, HALF_ROWS):
                        m = min(HALF_ROWS, nr - i)
                        _forward_step(empty_gx, xl, w_c, b_c, w_n, b_n, out, gates, ghn, w_o, b_o,
                                      yl, el, True, xh[i : i + m], gh[i : i + m], gxn[i : i + m],
                                      t, i, m)
                for r in range(nr):
                    for j in range(H):
                        hn[b0 + r, j] = xh[r, I + j]
                        dh[r, j] = 0
                for t in range(T):
                    for r in range(nr):
                        for o in range(O):
                            resid[t, b0 + r, o] = el[t, r, o]
                            el[t, r, o] *= factor
                s = 0  # this step's slot
                f = 0  # additions to the segment's sum
                for t in range(T - 1, -1, -1):
                    hp = out[t - 1] if t > 0 else hl
                    o = s * nr
                    for i in range(0, nr, HALF_ROWS):
                        m = min(HALF_ROWS, nr - i)
                        dhi = dh[i : i + m]
                        head_backward_rows(dhi, el, w_o, out, hacc, stage, c, t, i, m)
                        _backward_gates(dhi, empty_go, gates, ghn, hp, dgx, dgh, t, i, o + i, m)
                        rows_matmul_add(dgh[o + i : o + i + m], w_hh, dhi, m)
                    if keep_gx:
                        for r in range(nr):
                            for j in range(GH):
                                d_gx[t, b0 + r, j] = dgx[o + r, j]
                    s, f = step_done(
                        part[c], seg, xs, hs, dgx, dgh, xl[t], hp, 0, o, nr, s, f, t == 0, False
                    )
                for r in range(nr):
                    for j in range(H):
                        d_h0[b0 + r, j] = dh[r, j]
            c = next_chunk(taken)
    if part.shape[0] > 0:  # no chunks (an empty batch): nothing to add, zeros to keep
        reduce_parts(part, I, False, d_w_ih, d_b_ih, d_w_hh, d_b_hh, add)


@checked("gru", "train_head")
def train_head(x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, y, factor, *, keep_d_gx=False,
               grads_out=None):
    """:func:`forward_projected_head` and :func:`backward_head` in one kernel call
    (:func:`_train_head`), for a loss whose gradient with respect to the head's outputs is
    ``factor * resid`` and that does not use the final state.

    Returns ``(h_n, resid, d_gx, d_h0, d_w_ih, d_b_ih, d_w_hh, d_b_hh, d_w_o, d_b_o)``,
    ``d_gx`` (T, B, 3H) only where ``keep_d_gx`` (else ``None``).

    ``grads_out``: None (the six gradients come back as new tensors), or six C-contiguous
    arrays or CPU tensors of the gradients' shapes and ``h0``'s dtype (``d_w_ih`` ...
    ``d_b_o``) that the gradients are added to, in place, each as one addition of the
    gradient formed as above (``grad.add_(g)``: the same values), and returned: for a
    training step that accumulates into the parameters' gradients (no new tensors, no
    separate additions).

    Called once per training step, so its Python work is kept short (a tenth of a small
    model's step, the hourly benchmark's): the weights are laid out for the kernel in one
    jitted call (:func:`_kernel_weights`).
    """
    xa, h0a = as_array(x), as_array(h0)
    dtype = h0a.dtype
    T, B, I = xa.shape
    GH, H = w_hh.shape
    w_o, y = aligned.aligned_view(w_o), as_array(y)
    O = w_o.shape[0]
    b_i = np.zeros(0, dtype=dtype) if b_ih is None else as_array(b_ih)
    w_c, b_c, w_n, b_n, w_hp = _kernel_weights(
        as_array(w_ih), b_i, as_array(w_hh), as_array(b_hh), padded(GH, dtype), padded(H, dtype)
    )
    rows = train_rows(T, I, H, O, dtype.itemsize)
    R, per_chunk, part = numba_grads.plan(B, I, H, GH, dtype, True, rows)
    if grads_out is None:
        grads = numba_grads.weight_grad_buffers(GH, I, H, h0.dtype, True)
    else:
        grads = list(grads_out)
    resid = workspace.empty((T, B, O), h0.dtype)
    hn = torch.empty((B, H), dtype=h0.dtype, device="cpu")
    d_h0 = torch.empty((B, H), dtype=h0.dtype, device="cpu")
    d_gx = workspace.empty((T, B, GH), h0.dtype) if keep_d_gx else None
    hacc = aligned.zeros_array((part.shape[0], O, H + 1), np.float64)  # the head's partials
    _train_head(
        xa, w_c, b_c, w_n, b_n, w_hp, h0a, w_o, aligned.aligned_view(b_o), y, dtype.type(factor),
        resid.numpy(), hn.numpy(), numba_grads.or_none(d_gx, xa), d_h0.numpy(), hacc,
        R, per_chunk, part, *[_numpy(g) for g in grads[:4]], grads_out is not None,
        numba.get_num_threads(),
    )
    if grads_out is None:
        return (hn, resid, d_gx, d_h0, *grads, *numba_head.head_grads(hacc, h0.dtype))
    numba_head.add_head_grads(hacc, _numpy(grads[4]), _numpy(grads[5]))
    return (hn, resid, d_gx, d_h0, *grads)


def _numpy(a):
    """The NumPy view of a CPU tensor (no copy: the kernel writes into it), or the array."""
    return a.detach().numpy() if isinstance(a, torch.Tensor) else a
