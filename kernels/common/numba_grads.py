"""Weight gradients accumulated inside a Numba kernel's backward time loop.

Dimension legend: T time steps, B batch, I input size, H hidden size, GH = G*H gate columns,
GHp = GH padded to a whole micro-kernel tile (:func:`numba_linalg.padded`), R batch rows per
block, C chunks of blocks.

A layer's weight gradients are sums over every step and batch row::

    dW_ih = Σ d_gx^T x,  db_ih = Σ d_gx,  dW_hh = Σ d_gh^T h_prev,  db_hh = Σ d_gh

Formed after the backward kernel, as products over all ``T * B`` rows, they need ``d_gx`` and
``d_gh`` (T, B, GH) written out by the kernel and read back with ``x`` and ``h_prev``: at the
electricity benchmark's shape (T=96, B=256, H=64) about 80 MB of memory traffic a batch.
Here each block of the backward kernel stages its steps' rows in small buffers
(:func:`stage`) and adds them to a segment sum every :data:`STEPS` steps, while they are still
in cache (:func:`accumulate`), and the segment to its chunk's partial every :data:`SEGMENT`
additions (:func:`add_segment`); ``d_gx`` is written out only where the caller needs it (for
``d_x``), ``d_gh`` never. Measured at the electricity shape (alternated calls in one process,
2 threads): backward and weight gradients 0.68-0.89x the time of the kernel's backward followed
by a separate chunked weight-gradient kernel; whole fit 0.82x (hourly benchmark 0.88x).

Results do not depend on the thread count: the rows per block and the grouping of blocks into
chunks follow from ``B`` alone (:func:`plan`; the caller's ``max_rows`` may also follow from the
shape and the core's cache size, as the GRU's one-pass training kernel's does:
:func:`~tsrnn.kernels.gru.numba_cpu.train_rows`), each chunk sums its blocks' steps in a fixed
order into its own partial, and the partials are added in chunk order (:func:`reduce_parts`).
"""

from __future__ import annotations

import numpy as np
import torch

from tsrnn.kernels.common import aligned
from tsrnn.kernels.common.numba_config import njit
from tsrnn.kernels.common.numba_linalg import (
    MAX_BLOCK_ROWS,
    block_rows,
    padded,
    rows_matmul_add,
)
from tsrnn.kernels.common.numba_simd import vadd, vector_lanes, vload, vstore

BLOCK_ROWS = MAX_BLOCK_ROWS
"""Most batch rows per block of a backward that accumulates weight gradients."""

MIN_BLOCKS = 4
"""Blocks a batch of at least this many rows is cut into, at the least: the rows per block are
``B // MIN_BLOCKS`` up to :data:`BLOCK_ROWS`, a function of ``B`` alone (so the sums' order,
hence their rounding, does not depend on the thread count), and a batch of 8 still runs on
4 threads (in blocks of 2)."""

STEPS = 8
"""Steps of a block whose rows are added to the partial at once: each addition loads and
stores the whole partial, so it pays for ``STEPS * BLOCK_ROWS`` rows at a time. Measured at the
electricity shape (alternated calls in one process, 2 threads): 1, 2, 4, 8 steps took 10.3,
9.8, 9.5, 9.3 ms."""

SEGMENT = 8
"""Additions (of ``STEPS`` steps each) summed apart before they join the chunk's partial: a
two-level sum, so that float32 rounding grows with ``SEGMENT`` plus the number of segments
rather than with every step of a long sequence (T=3000, B=4: relative error 3e-6 summed in
one chain; see ``tests/kernels/test_numba_grads.py``)."""

MAX_CHUNKS = 32
"""Most partial sums (each ``(I + H + 2) * GHp`` elements) a backward keeps."""


@njit
def rows_sum_add(d, k0, k1, out, i):
    """``out[i] += Σ_{k0 <= k < k1} d[k]``, one chain per column; d and out C-contiguous with a
    whole number of vectors per row. The running sums stay in registers (a plain loop would
    load and store ``out[i]`` for every row of ``d``)."""
    L = vector_lanes(d)
    for j in range(0, d.shape[1], L):
        acc = vload(out, i, j)
        for k in range(k0, k1):
            acc = vadd(acc, vload(d, k, j))
        vstore(out, i, j, acc)


@njit(inline="always")
def stage(xs, hs, x_t, hp, b0, o, nr):
    """Copy rows ``b0 .. b0+nr-1`` of a step's input ``x_t`` (B, I) and previous state ``hp``
    (B, H) into rows ``o ..`` of the block's buffers ``xs`` (S*R, I) and ``hs`` (S*R, H)."""
    for r in range(nr):
        for i in range(xs.shape[1]):
            xs[o + r, i] = x_t[b0 + r, i]
        for i in range(hs.shape[1]):
            hs[o + r, i] = hp[b0 + r, i]


@njit
def accumulate(p, xs, hs, dgx, dgh, k, same):
    """Add the first ``k`` rows of a block's buffers to its chunk's partial ``p``
    (I + H + 2, GHp): the rows ``dW_ih^T`` (I), ``dW_hh^T`` (H), ``db_ih``, ``db_hh`` (unused
    when ``same``).

    xs (>= k, I) and hs (>= k, H): the rows' inputs and previous states; dgx, dgh (>= k, GHp):
    their gradients (zero beyond column GH); ``same``: ``dgh`` is ``dgx``.
    """
    I = xs.shape[1]
    H = hs.shape[1]
    rows_matmul_add(xs[:k].T, dgx[:k], p[:I], I)  # dW_ih^T += x^T d_gx
    rows_matmul_add(hs[:k].T, dgh[:k], p[I : I + H], H)  # dW_hh^T += h_prev^T d_gh
    rows_sum_add(dgx, 0, k, p, I + H)
    if not same:
        rows_sum_add(dgh, 0, k, p, I + H + 1)


@njit(inline="always")
def block_buffers(part, c, R, I, H, like):
    """A chunk's scratch for a backward kernel: zeroes the chunk's partial ``part[c]`` (where
    the gradients are summed) and returns :func:`thread_buffers`."""
    if part.shape[0] > 0:
        part[c] = 0
    return thread_buffers(part, R, I, H, like)


@njit(inline="always")
def thread_buffers(part, R, I, H, like):
    """``(dg, xs, hs, seg)``: the gate gradients of a block's last :data:`STEPS` steps
    (S*R, GHp), zero beyond column GH (the micro-kernel's padding), the staged inputs (S*R, I)
    and previous states (S*R, H), and the segment sum (I + H + 2, GHp); ``S`` is 1 and
    ``seg`` empty without partials (a plain backward). A thread may use them for one chunk
    after another: a block leaves ``seg`` zero (:func:`step_done` adds it to the partial at
    the block's last step) and never writes ``dg``'s padding; the chunk's partial is zeroed
    apart (``part[c] = 0``)."""
    fused = part.shape[0] > 0
    S = STEPS if fused else 1
    dg = aligned.zeros((S * R, part.shape[2]), like)
    xs = aligned.empty((S * R, I), like)
    hs = aligned.empty((S * R, H), like)
    seg = aligned.zeros((part.shape[1] if fused else 0, part.shape[2]), like)
    return dg, xs, hs, seg


@njit(inline="always")
def step_done(p, seg, xs, hs, dgx, dgh, x_t, hp, b0, o, nr, s, f, last, same):
    """After a block's step wrote its gradients into rows ``o = s * nr ..`` of ``dgx``/``dgh``:
    stage the step's inputs and ``h_prev`` (:func:`stage`); every :data:`STEPS` steps, or at
    the block's ``last`` step, add the staged rows to the segment sum ``seg``
    (:func:`accumulate`), and every :data:`SEGMENT` additions, or at the last step, the
    segment to the chunk's partial ``p`` (:func:`add_segment`). Returns the next slot and
    addition counts ``(s, f)``."""
    stage(xs, hs, x_t, hp, b0, o, nr)
    s += 1
    if s == STEPS or last:
        accumulate(seg, xs, hs, dgx, dgh, s * nr, same)
        s = 0
        f += 1
        if f == SEGMENT or last:
            add_segment(p, seg)
            f = 0
    return s, f


@njit
def add_segment(p, seg):
    """``p += seg``, then ``seg = 0``; p and seg (I + H + 2, GHp)."""
    for i in range(seg.shape[0]):
        for j in range(seg.shape[1]):
            p[i, j] += seg[i, j]
            seg[i, j] = 0


@njit
def reduce_parts(part, I, same, d_w_ih, d_b_ih, d_w_hh, d_b_hh, add=False):
    """Add the chunks' partials (C, I + H + 2, GHp) in chunk order into the gradients:
    d_w_ih (GH, I), d_b_ih (GH,), d_w_hh (GH, H), d_b_hh (GH,), written, or with ``add``
    added to what they hold (the sum first, then one addition in their dtype, as
    ``grad.add_(g)``). Loops, not array expressions: in a parallel function those would each
    become a parallel region of their own."""
    C, rows, _ = part.shape
    GH, H = d_w_hh.shape
    res = part[0]
    for c in range(1, C):
        for i in range(rows):
            for j in range(GH):
                res[i, j] += part[c, i, j]
    for j in range(GH):
        if add:
            for i in range(I):
                d_w_ih[j, i] += res[i, j]
            for i in range(H):
                d_w_hh[j, i] += res[I + i, j]
            d_b_ih[j] += res[I + H, j]
            d_b_hh[j] += res[I + H + (0 if same else 1), j]
            continue
        for i in range(I):
            d_w_ih[j, i] = res[i, j]
        for i in range(H):
            d_w_hh[j, i] = res[I + i, j]
        d_b_ih[j] = res[I + H, j]
        d_b_hh[j] = res[I + H + (0 if same else 1), j]


def plan(B: int, I: int, H: int, GH: int, dtype, fused: bool, max_rows: int = BLOCK_ROWS):
    """Block rows, blocks per chunk and the partials' scratch of a backward over ``B`` rows.

    ``fused``: accumulate weight gradients (``B // MIN_BLOCKS`` rows a block, at least 1 and
    at most ``max_rows``; chunks of whole blocks, a partial each); else no partials
    (shape (0, ...)), one block a chunk and ``block_rows`` as the forward uses it. Returns
    ``(R, per_chunk, part)``.
    """
    GHp = padded(GH, dtype)
    if not fused:
        return block_rows(B), 1, np.empty((0, I + H + 2, GHp), dtype=dtype)
    R = max(1, min(max_rows, B // MIN_BLOCKS))
    blocks = -(-B // R)
    per_chunk = max(1, -(-blocks // MAX_CHUNKS))
    chunks = -(-blocks // per_chunk)
    return R, per_chunk, aligned.empty_array((chunks, I + H + 2, GHp), dtype)


def weight_grad_buffers(GH: int, I: int, H: int, dtype: torch.dtype, fused: bool):
    """The gradients' tensors: d_w_ih (GH, I), d_b_ih (GH,), d_w_hh (GH, H), d_b_hh (GH,);
    zeros (the sums over no rows, where ``B`` is 0), or empty placeholders unless ``fused``."""
    shapes = ((GH, I), (GH,), (GH, H), (GH,)) if fused else ((0, 0), (0,), (0, 0), (0,))
    return [torch.zeros(s, dtype=dtype, device="cpu") for s in shapes]


def backward_args(x, B: int, H: int, GH: int, like: torch.Tensor, max_rows: int = BLOCK_ROWS):
    """What a backward kernel call takes for the weight gradients, given the layer input ``x``
    (T, B, I), or ``None`` for a plain backward; ``max_rows``: see :func:`plan`.

    Returns ``(xa, tail, grads)``: ``x``'s NumPy view (or an empty placeholder), the kernel's
    last arguments ``(R, per_chunk, part, d_w_ih, d_b_ih, d_w_hh, d_b_hh)``, and the four
    gradient tensors (``None`` for a plain backward).
    """
    fused = x is not None
    dtype = like.detach().numpy().dtype
    xa = x.detach().contiguous().numpy() if fused else np.zeros((0, B, 0), dtype=dtype)
    R, per_chunk, part = plan(B, xa.shape[2], H, GH, dtype, fused, max_rows)
    grads = weight_grad_buffers(GH, xa.shape[2], H, like.dtype, fused)
    return xa, (R, per_chunk, part, *[g.numpy() for g in grads]), (grads if fused else None)


def or_none(t, like: np.ndarray) -> np.ndarray:
    """``t``'s NumPy view, or for ``None`` an empty (0, 1, 1) placeholder of ``like``'s dtype:
    the kernels read a leading 0 as "not wanted"."""
    return np.zeros((0, 1, 1), dtype=like.dtype) if t is None else t.numpy()
