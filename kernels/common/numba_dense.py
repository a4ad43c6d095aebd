"""The dense products around a recurrent kernel on the CPU: input projection, weight gradients.

Dimension legend: T time steps, B batch, N = T*B rows, I input size, H hidden size,
GH = G*H gate columns (G gates), K reduction size, M output columns, Mp = M padded to a whole
micro-kernel tile (:func:`padded`), C chunks of rows.

Around each recurrent kernel call a layer runs

- forward: ``gx = x @ W_ih^T + b_ih`` (N, GH) from x (N, I);
- backward: ``dW_ih = d_gx^T x``, ``db_ih = Σ_n d_gx``, ``dW_hh = d_gh^T h_prev``,
  ``db_hh = Σ_n d_gh`` with ``h_prev = [h0, out[:-1]]``, and ``d_x = d_gx @ W_ih``.

These are skinny products (``I`` is often 1 to 3) and sums over tens of thousands of rows,
which torch runs on one thread next to the Numba kernels (:func:`tsrnn._training.serial_torch`)
and slowly: each cost more than the recurrence itself. Here they run on Numba's threads with
the register-blocked micro-kernel of :mod:`numba_linalg`.

Results never depend on the thread count: a row of a projection is one summation chain, and
the sums over rows are cut into chunks whose size depends on ``N`` only
(:func:`chunk_rows`); each chunk's partial sum is formed in a fixed order, then the partials
are added in chunk order.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from numba import prange

from tsrnn.kernels.common import workspace
from tsrnn.kernels.common.numba_config import njit, njit_parallel, num_threads
from tsrnn.kernels.common.numba_glue import as_array
from tsrnn.kernels.common.numba_linalg import padded, padded_columns, rows_matmul_add
from tsrnn.kernels.common.numba_simd import vadd, vector_lanes, vload, vstore

LINEAR_BLOCK_ROWS = 32
"""Rows of a projection per parallel task (each row is independent of the cut)."""

KB = 16
"""Rows of a chunk multiplied at a time, so that their operands stay in the L1 cache."""

PARALLEL_MIN_WORK = 10_000_000
"""Multiply-adds below which a product runs on one thread (see :func:`_threads_for`)."""

NUMBA_LINEAR_MIN_WORK = 5_000_000
"""Multiply-adds of a projection from which :func:`linear` runs on Numba rather than torch."""

GRADS_PARALLEL_MIN_WORK = 1_000_000
"""Multiply-adds of :func:`weight_grads` from which it runs on the caller's Numba threads.

Lower than :data:`PARALLEL_MIN_WORK`: at the hourly benchmark's shape (T=48, B=32, H=32,
I=2: 5.3e6 multiply-adds) the kernel takes 0.11 ms on 2 threads against 0.20 ms on one and
0.35 ms for the torch products it replaced (MKL's ``mm`` for ``dW_hh``, a serial Numba pass
for the rest), and the whole fit 0.88-0.94x (alternated fits in one process)."""

MIN_CHUNK_ROWS = 256
MAX_CHUNKS = 32


def chunk_rows(n: int) -> int:
    """Rows per chunk of the gradient sums over ``n`` rows: a function of ``n`` only.

    At least :data:`MIN_CHUNK_ROWS` (so a chunk's work outweighs its partial sum), and no more
    than :data:`MAX_CHUNKS` chunks (so adding the partials stays cheap); a multiple of 8.

    Examples
    --------
    >>> chunk_rows(1536), chunk_rows(24576)
    (256, 768)
    """
    rows = max(MIN_CHUNK_ROWS, -(-n // MAX_CHUNKS))
    return -(-rows // 8) * 8


@njit(inline="always")
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


def _threads_for(work: int, minimum: int = PARALLEL_MIN_WORK):
    """One thread for products under ``minimum`` multiply-adds, else the caller's setting.

    Each parallel region wakes the worker threads and waits for them at its end: a few
    microseconds on idle cores, but up to a scheduler time slice (milliseconds) when other
    processes keep the cores busy. Measured on 2 shared cores at the hourly benchmark's shape
    (GRU, T=48, B=32, H=32: 5e6 multiply-adds of weight gradients), alternated fits with the
    weight gradients on 2 threads against one: 0.88-0.94x the fit time on idle cores, 1.15x
    with another process busy on one core (an earlier round measured 7 ms more on a 16 ms
    step under load). :data:`GRADS_PARALLEL_MIN_WORK` takes the idle-core side; the
    recurrent kernels' own regions pay the same cost under load.
    """
    return num_threads(1) if work < minimum else contextlib.nullcontext()


@njit_parallel
def _linear(x, w_t, b, out, R):
    """``out = x @ w_t[:, :M] + b``; x (N, K), w_t (K, Mp) zero-padded, b (M,), out (N, M)."""
    N = x.shape[0]
    M = out.shape[1]
    Mp = w_t.shape[1]
    for blk in prange((N + R - 1) // R):
        n0 = blk * R
        nr = min(R, N - n0)
        # Rows of out are whole tiles when M is a multiple of the tile: accumulate in place.
        acc = out[n0 : n0 + nr] if M == Mp else np.zeros((nr, Mp), dtype=out.dtype)
        for r in range(nr):
            for j in range(M):
                acc[r, j] = b[j]
        rows_matmul_add(x[n0 : n0 + nr], w_t, acc, nr)
        if M != Mp:
            for r in range(nr):
                for j in range(M):
                    out[n0 + r, j] = acc[r, j]


@njit(inline="always")
def _padded_rows(src, n0, n1, width):
    """Rows ``n0 .. n1-1`` of ``src``, as a view, or as a zero-padded copy ``width`` wide."""
    if src.shape[1] == width:
        return src[n0:n1]
    out = np.zeros((n1 - n0, width), dtype=src.dtype)
    for n in range(n1 - n0):
        for j in range(src.shape[1]):
            out[n, j] = src[n0 + n, j]
    return out


@njit_parallel
def _weight_grads(d_gx, x, d_gh, h0, out, same, chunk, part, d_w_ih, d_b_ih, d_w_hh, d_b_hh):
    """Weight and bias gradients of one layer direction: d_w_ih (GH, I), d_b_ih (GH,),
    d_w_hh (GH, H), d_b_hh (GH,).

    d_gx, d_gh (N, GH); x (N, I); h0 (B, H); out (N, H), so that ``h_prev[n]`` is ``h0[n]``
    for ``n < B`` and ``out[n - B]`` after. ``same``: ``d_gh`` is ``d_gx`` (RNN, LSTM).
    ``part`` (C, I + H + 2, GHp) is scratch for the chunks' partial sums, its rows
    ``dW_ih^T`` (I), ``dW_hh^T`` (H), ``db_ih``, ``db_hh`` (unused when ``same``).

    One parallel region (the ``prange``; the partials are added after it on one thread): each
    region costs a wake-up of the worker threads, milliseconds when the cores are shared.
    """
    N, GH = d_gx.shape
    I = x.shape[1]
    B, H = h0.shape
    C, rows, GHp = part.shape
    for c in prange(C):
        n0 = c * chunk
        n1 = min(N, n0 + chunk)
        p = part[c]
        p[:] = 0
        # The micro-kernel reads whole tiles of GHp columns: pad a copy where GH falls short.
        dx = _padded_rows(d_gx, n0, n1, GHp)
        dh = dx if same else _padded_rows(d_gh, n0, n1, GHp)
        pi, ph = p[:I], p[I : I + H]
        for k0 in range(n0, n1, KB):
            # A block of KB rows of x, h_prev, d_gx and d_gh stays in L1 for all its products.
            k1 = min(n1, k0 + KB)
            rows_matmul_add(x[k0:k1].T, dx[k0 - n0 : k1 - n0], pi, I)  # dW_ih^T += x^T d_gx
            m = max(k0, min(k1, B))  # rows [k0, m) follow h0, [m, k1) follow out
            rows_matmul_add(h0[k0:m].T, dh[k0 - n0 : m - n0], ph, H)  # dW_hh^T += h_prev^T d_gh
            rows_matmul_add(out[m - B : k1 - B].T, dh[m - n0 : k1 - n0], ph, H)
            rows_sum_add(dx, k0 - n0, k1 - n0, p, I + H)  # db_ih
            if not same:
                rows_sum_add(dh, k0 - n0, k1 - n0, p, I + H + 1)  # db_hh
    # Loops, not array expressions: those would each become a parallel region of their own.
    res = part[0]
    for c in range(1, C):
        for i in range(rows):
            for j in range(GH):
                res[i, j] += part[c, i, j]
    for j in range(GH):
        for i in range(I):
            d_w_ih[j, i] = res[i, j]
        for i in range(H):
            d_w_hh[j, i] = res[I + i, j]
        d_b_ih[j] = res[I + H, j]
        d_b_hh[j] = res[I + H + (0 if same else 1), j]


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x @ weight.T + bias`` over the last dimension, as ``F.linear``, on Numba's threads.

    x (..., K), weight (M, K), bias (M,) or None; returns (..., M) with x's dtype. Below
    :data:`NUMBA_LINEAR_MIN_WORK` multiply-adds torch's own product is quicker (no parallel
    region, no padded copy of the weights) and is used instead.
    """
    K = x.shape[-1]
    M = weight.shape[0]
    x = x.detach()
    if x.numel() * M < NUMBA_LINEAR_MIN_WORK:
        x2 = x.reshape(-1, K)
        out2 = (
            x2 @ weight.detach().T
            if bias is None
            else torch.addmm(bias.detach(), x2, weight.detach().T)
        )
        return out2.view(*x.shape[:-1], M)
    x2 = as_array(x).reshape(-1, K)
    out = workspace.empty((*x.shape[:-1], M), x.dtype)
    b = np.zeros(M, dtype=x2.dtype) if bias is None else as_array(bias)
    with _threads_for(x2.shape[0] * K * M):
        _linear(
            x2,
            padded_columns(weight.T),
            b,
            out.numpy().reshape(-1, M),
            LINEAR_BLOCK_ROWS,
        )
    return out


def weight_grads(d_gx, x, d_gh, h0, out):
    """Weight and bias gradients of a layer direction from the kernel's backward.

    Parameters
    ----------
    d_gx, d_gh : Tensor (T, B, GH)
        Gradients of the input projection and of the recurrent pre-activation (the same
        tensor for RNN and LSTM).
    x : Tensor (T, B, I)
        The layer's input.
    h0 : Tensor (B, H)
    out : Tensor (T, B, H)
        The layer's output; ``h_prev = [h0, out[:-1]]``.

    Returns
    -------
    d_w_ih (GH, I), d_b_ih (GH,), d_w_hh (GH, H), d_b_hh (GH,)

    One chunked Numba kernel (:func:`_weight_grads`) whatever the size, on one thread below
    :data:`GRADS_PARALLEL_MIN_WORK` multiply-adds; its results do not depend on the thread
    count (fixed chunks, partials added in order).
    """
    T, B, GH = d_gx.shape
    I, H = x.shape[-1], h0.shape[-1]
    N = T * B
    if N == 0:  # no rows (an empty batch): the sums are empty, not the kernel's
        return tuple(torch.zeros(s, dtype=d_gx.dtype) for s in ((GH, I), (GH,), (GH, H), (GH,)))
    same = d_gh is d_gx
    dx = as_array(d_gx).reshape(N, GH)
    chunk = chunk_rows(N)
    part = np.empty((-(-N // chunk), I + H + 2, padded(GH, dx.dtype)), dtype=dx.dtype)
    grads = [torch.empty(shape, dtype=d_gx.dtype) for shape in ((GH, I), (GH,), (GH, H), (GH,))]
    with _threads_for(N * GH * (I + H + 2), GRADS_PARALLEL_MIN_WORK):
        _weight_grads(
            dx,
            as_array(x).reshape(N, I),
            dx if same else as_array(d_gh).reshape(N, GH),
            as_array(h0),
            as_array(out).reshape(N, H),
            same,
            chunk,
            part,
            *[g.numpy() for g in grads],
        )
    return tuple(grads)
