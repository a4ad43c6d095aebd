"""The recurrent product of a block of batch rows, shared by the Numba kernels.

Dimension legend: R rows in the block, K reduction size, N output size (padded), L lanes of
one SIMD vector (16 float32 or 8 float64 with AVX-512, else 8 or 4).

Each thread runs the time loop for a block of up to ``R`` batch rows (see :func:`block_rows`),
so every weight it loads feeds several rows. The block's product is a register-blocked
micro-kernel: a tile of 8 rows (AVX-512, :data:`WIDE_TILE`) or 4 rows x 2 or 3 vectors of
``out`` stays in registers (explicit vectors, :mod:`numba_simd`; LLVM leaves array tiles in
memory) while ``k`` runs over the reduction, each step loading two or three vectors of ``w``
and broadcasting one element of ``a`` per row; columns that allow it go in 3-vector tiles,
8 x 3 on AVX-512, 4 x 3 with AVX2 (:func:`rows_matmul_add`). Rows past the last whole tile
go in tiles of 4, then 2, then one:
a single row has only 2 or 3 chains of multiply-adds, which wait on each other's latency.
``N`` must be a multiple of ``2L``: the kernels pad the weights' columns with zeros
(:func:`padded_columns`).
Kept in the jitted time loop rather than calling BLAS once per step: for the small hidden sizes
of forecasting models a BLAS call costs more than the product itself.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

from tsrnn.kernels.common import aligned
from tsrnn.kernels.common.numba_config import njit
from tsrnn.kernels.common.numba_simd import (
    VECTOR_BYTES,
    lanes,
    vector_lanes,
    vfma,
    vload,
    vstore,
)

WIDE_TILE = VECTOR_BYTES == 64
"""Use 8-row tiles (16 or 24 accumulators): only with AVX-512's 32 vector registers. With 16
(AVX2) the tiles have 4 rows (8 or 12 accumulators), as 8 would spill accumulators to
memory."""

MAX_BLOCK_ROWS = 8
"""Most batch rows a thread advances together through the time loop."""


def block_rows(batch: int) -> int:
    """Rows per block: up to :data:`MAX_BLOCK_ROWS`, fewer when that would leave threads idle."""
    threads = numba.get_num_threads()
    return max(1, min(MAX_BLOCK_ROWS, -(-batch // threads)))


def padded(n: int, dtype) -> int:
    """``n`` rounded up to a whole number of micro-kernel tiles (2 vectors) of ``dtype``."""
    tile = 2 * lanes(np.dtype(dtype))
    return -(-n // tile) * tile


def padded_columns(w) -> np.ndarray:
    """``w`` (K, N) with zero columns appended up to :func:`padded` ``(N)``, C-contiguous.

    ``w``: an array or a CPU tensor, of any strides (a transposed weight is copied once, here,
    not first made contiguous by torch). The copy starts on a cache line
    (:mod:`~tsrnn.kernels.common.aligned`)."""
    if isinstance(w, torch.Tensor):
        w = w.detach().numpy()
    K, N = w.shape
    out = aligned.zeros_array((K, padded(N, w.dtype)), w.dtype)
    out[:, :N] = w
    return out


@njit(inline="always")
def triple_columns(vectors):
    """Vectors of a row of ``out`` that :func:`rows_matmul_add` covers with 3-vector tiles:
    as many as leave an even number (``N`` is whole 2-vector tiles) for the 2-vector tiles.

    With AVX2 the 3-vector tile has 4 rows: 12 accumulators, 3 vectors of ``w`` and the
    broadcast fill the 16 registers. Measured on a 2-core AMD EPYC (Zen 3, AVX2), the GRU's
    one-pass kernel at the electricity benchmark's shape (T=96, B=256, H=64, 2 threads,
    alternated calls in one process, bitwise the same results): 0.957x and 0.970x the time
    of 4 x 2 tiles only (40 calls each, paired medians); alone, one thread, the forward's
    product 1.12-1.31x the throughput, the weight-gradient sums 1.14-1.21x (three runs)."""
    t = vectors // 3
    if (vectors - 3 * t) % 2:
        t -= 1
    return 3 * t


@njit
def rows_matmul_add(a, w, out, nr):
    """``out[:nr, :N] += a[:nr] @ w``; a (R, K), w (K, N) with N % 2L == 0, out (R, >= N).

    Every element is one chain of multiply-adds over ``k`` in order, whatever tile it falls
    in, so a row's result does not depend on the rows beside it nor on ``N``'s tiling.
    The columns go in tiles of 3 vectors where they can (:func:`triple_columns`), the rest
    in tiles of 2. On AVX-512, 8 rows x 3 vectors (24 accumulators) load each broadcast
    element of ``a`` for 3 multiply-adds instead of 2 (the GRU's 3H columns, the recurrent
    product and the weight-gradient sums; measured against 2-vector tiles at their shapes,
    2 threads, alternated: 1.05-1.16x the throughput; the one-pass GRU kernel at the
    electricity benchmark's shape 0.94-0.95x the time); with AVX2, 4 rows x 3 vectors.
    Rows past the 8-row tiles go 4, then 2 at a time (a 2-row tile has twice a single row's
    chains: the weight-gradient sums of 6 inputs, 8 x 2-vector tiles before, 1.4-1.6x the
    throughput)."""
    K, N = w.shape
    L = vector_lanes(w)
    n3 = triple_columns(N // L) * L
    for n0 in range(0, n3, 3 * L):
        r0 = 0
        while WIDE_TILE and r0 + 8 <= nr:
            _rows8_x3(a, w, out, r0, n0)
            r0 += 8
        while r0 + 4 <= nr:
            _rows4_x3(a, w, out, r0, n0)
            r0 += 4
        while r0 + 2 <= nr:
            _rows2_x3(a, w, out, r0, n0)
            r0 += 2
        for r in range(r0, nr):
            n1, n2 = n0 + L, n0 + 2 * L
            c0, c1, c2 = vload(out, r, n0), vload(out, r, n1), vload(out, r, n2)
            for k in range(K):
                ark = a[r, k]
                c0 = vfma(c0, ark, vload(w, k, n0))
                c1 = vfma(c1, ark, vload(w, k, n1))
                c2 = vfma(c2, ark, vload(w, k, n2))
            vstore(out, r, n0, c0)
            vstore(out, r, n1, c1)
            vstore(out, r, n2, c2)
    for n0 in range(n3, N, 2 * L):
        n1 = n0 + L
        r0 = 0
        while WIDE_TILE and r0 + 8 <= nr:
            c00, c01 = vload(out, r0, n0), vload(out, r0, n1)
            c10, c11 = vload(out, r0 + 1, n0), vload(out, r0 + 1, n1)
            c20, c21 = vload(out, r0 + 2, n0), vload(out, r0 + 2, n1)
            c30, c31 = vload(out, r0 + 3, n0), vload(out, r0 + 3, n1)
            c40, c41 = vload(out, r0 + 4, n0), vload(out, r0 + 4, n1)
            c50, c51 = vload(out, r0 + 5, n0), vload(out, r0 + 5, n1)
            c60, c61 = vload(out, r0 + 6, n0), vload(out, r0 + 6, n1)
            c70, c71 = vload(out, r0 + 7, n0), vload(out, r0 + 7, n1)
            for k in range(K):
                w0, w1 = vload(w, k, n0), vload(w, k, n1)
                a0, a1, a2, a3 = a[r0, k], a[r0 + 1, k], a[r0 + 2, k], a[r0 + 3, k]
                a4, a5, a6, a7 = a[r0 + 4, k], a[r0 + 5, k], a[r0 + 6, k], a[r0 + 7, k]
                c00, c01 = vfma(c00, a0, w0), vfma(c01, a0, w1)
                c10, c11 = vfma(c10, a1, w0), vfma(c11, a1, w1)
                c20, c21 = vfma(c20, a2, w0), vfma(c21, a2, w1)
                c30, c31 = vfma(c30, a3, w0), vfma(c31, a3, w1)
                c40, c41 = vfma(c40, a4, w0), vfma(c41, a4, w1)
                c50, c51 = vfma(c50, a5, w0), vfma(c51, a5, w1)
                c60, c61 = vfma(c60, a6, w0), vfma(c61, a6, w1)
                c70, c71 = vfma(c70, a7, w0), vfma(c71, a7, w1)
            vstore(out, r0, n0, c00)
            vstore(out, r0, n1, c01)
            vstore(out, r0 + 1, n0, c10)
            vstore(out, r0 + 1, n1, c11)
            vstore(out, r0 + 2, n0, c20)
            vstore(out, r0 + 2, n1, c21)
            vstore(out, r0 + 3, n0, c30)
            vstore(out, r0 + 3, n1, c31)
            vstore(out, r0 + 4, n0, c40)
            vstore(out, r0 + 4, n1, c41)
            vstore(out, r0 + 5, n0, c50)
            vstore(out, r0 + 5, n1, c51)
            vstore(out, r0 + 6, n0, c60)
            vstore(out, r0 + 6, n1, c61)
            vstore(out, r0 + 7, n0, c70)
            vstore(out, r0 + 7, n1, c71)
            r0 += 8
        while r0 + 4 <= nr:
            c00, c01 = vload(out, r0, n0), vload(out, r0, n1)
            c10, c11 = vload(out, r0 + 1, n0), vload(out, r0 + 1, n1)
            c20, c21 = vload(out, r0 + 2, n0), vload(out, r0 + 2, n1)
            c30, c31 = vload(out, r0 + 3, n0), vload(out, r0 + 3, n1)
            for k in range(K):
                w0, w1 = vload(w, k, n0), vload(w, k, n1)
                a0, a1, a2, a3 = a[r0, k], a[r0 + 1, k], a[r0 + 2, k], a[r0 + 3, k]
                c00, c01 = vfma(c00, a0, w0), vfma(c01, a0, w1)
                c10, c11 = vfma(c10, a1, w0), vfma(c11, a1, w1)
                c20, c21 = vfma(c20, a2, w0), vfma(c21, a2, w1)
                c30, c31 = vfma(c30, a3, w0), vfma(c31, a3, w1)
            vstore(out, r0, n0, c00)
            vstore(out, r0, n1, c01)
            vstore(out, r0 + 1, n0, c10)
            vstore(out, r0 + 1, n1, c11)
            vstore(out, r0 + 2, n0, c20)
            vstore(out, r0 + 2, n1, c21)
            vstore(out, r0 + 3, n0, c30)
            vstore(out, r0 + 3, n1, c31)
            r0 += 4
        while r0 + 2 <= nr:  # 4 chains, where a single row has 2
            c00, c01 = vload(out, r0, n0), vload(out, r0, n1)
            c10, c11 = vload(out, r0 + 1, n0), vload(out, r0 + 1, n1)
            for k in range(K):
                w0, w1 = vload(w, k, n0), vload(w, k, n1)
                a0, a1 = a[r0, k], a[r0 + 1, k]
                c00, c01 = vfma(c00, a0, w0), vfma(c01, a0, w1)
                c10, c11 = vfma(c10, a1, w0), vfma(c11, a1, w1)
            vstore(out, r0, n0, c00)
            vstore(out, r0, n1, c01)
            vstore(out, r0 + 1, n0, c10)
            vstore(out, r0 + 1, n1, c11)
            r0 += 2
        for r in range(r0, nr):
            # The same summation order as the row tiles (one chain over k), so a row's result
            # does not depend on how the batch was cut into blocks, hence not on the thread
            # count: a fit is identical serially and on a one-thread Dask worker.
            c0, c1 = vload(out, r, n0), vload(out, r, n1)
            for k in range(K):
                ark = a[r, k]
                c0, c1 = vfma(c0, ark, vload(w, k, n0)), vfma(c1, ark, vload(w, k, n1))
            vstore(out, r, n0, c0)
            vstore(out, r, n1, c1)



@njit(inline="always")
def _rows8_x3(a, w, out, r0, n0):
    """Rows ``r0 .. r0+7``, columns ``n0`` + 3 vectors, of :func:`rows_matmul_add`."""
    L = vector_lanes(w)
    n1, n2 = n0 + L, n0 + 2 * L
    c00, c01, c02 = vload(out, r0, n0), vload(out, r0, n1), vload(out, r0, n2)
    c10, c11, c12 = vload(out, r0 + 1, n0), vload(out, r0 + 1, n1), vload(out, r0 + 1, n2)
    c20, c21, c22 = vload(out, r0 + 2, n0), vload(out, r0 + 2, n1), vload(out, r0 + 2, n2)
    c30, c31, c32 = vload(out, r0 + 3, n0), vload(out, r0 + 3, n1), vload(out, r0 + 3, n2)
    c40, c41, c42 = vload(out, r0 + 4, n0), vload(out, r0 + 4, n1), vload(out, r0 + 4, n2)
    c50, c51, c52 = vload(out, r0 + 5, n0), vload(out, r0 + 5, n1), vload(out, r0 + 5, n2)
    c60, c61, c62 = vload(out, r0 + 6, n0), vload(out, r0 + 6, n1), vload(out, r0 + 6, n2)
    c70, c71, c72 = vload(out, r0 + 7, n0), vload(out, r0 + 7, n1), vload(out, r0 + 7, n2)
    for k in range(w.shape[0]):
        w0, w1, w2 = vload(w, k, n0), vload(w, k, n1), vload(w, k, n2)
        a0 = a[r0, k]
        c00, c01, c02 = vfma(c00, a0, w0), vfma(c01, a0, w1), vfma(c02, a0, w2)
        a1 = a[r0 + 1, k]
        c10, c11, c12 = vfma(c10, a1, w0), vfma(c11, a1, w1), vfma(c12, a1, w2)
        a2 = a[r0 + 2, k]
        c20, c21, c22 = vfma(c20, a2, w0), vfma(c21, a2, w1), vfma(c22, a2, w2)
        a3 = a[r0 + 3, k]
        c30, c31, c32 = vfma(c30, a3, w0), vfma(c31, a3, w1), vfma(c32, a3, w2)
        a4 = a[r0 + 4, k]
        c40, c41, c42 = vfma(c40, a4, w0), vfma(c41, a4, w1), vfma(c42, a4, w2)
        a5 = a[r0 + 5, k]
        c50, c51, c52 = vfma(c50, a5, w0), vfma(c51, a5, w1), vfma(c52, a5, w2)
        a6 = a[r0 + 6, k]
        c60, c61, c62 = vfma(c60, a6, w0), vfma(c61, a6, w1), vfma(c62, a6, w2)
        a7 = a[r0 + 7, k]
        c70, c71, c72 = vfma(c70, a7, w0), vfma(c71, a7, w1), vfma(c72, a7, w2)
    _store3(out, r0, n0, c00, c01, c02)
    _store3(out, r0 + 1, n0, c10, c11, c12)
    _store3(out, r0 + 2, n0, c20, c21, c22)
    _store3(out, r0 + 3, n0, c30, c31, c32)
    _store3(out, r0 + 4, n0, c40, c41, c42)
    _store3(out, r0 + 5, n0, c50, c51, c52)
    _store3(out, r0 + 6, n0, c60, c61, c62)
    _store3(out, r0 + 7, n0, c70, c71, c72)


@njit(inline="always")
def _rows4_x3(a, w, out, r0, n0):
    """Rows ``r0 .. r0+3``, columns ``n0`` + 3 vectors, of :func:`rows_matmul_add`."""
    L = vector_lanes(w)
    n1, n2 = n0 + L, n0 + 2 * L
    c00, c01, c02 = vload(out, r0, n0), vload(out, r0, n1), vload(out, r0, n2)
    c10, c11, c12 = vload(out, r0 + 1, n0), vload(out, r0 + 1, n1), vload(out, r0 + 1, n2)
    c20, c21, c22 = vload(out, r0 + 2, n0), vload(out, r0 + 2, n1), vload(out, r0 + 2, n2)
    c30, c31, c32 = vload(out, r0 + 3, n0), vload(out, r0 + 3, n1), vload(out, r0 + 3, n2)
    for k in range(w.shape[0]):
        w0, w1, w2 = vload(w, k, n0), vload(w, k, n1), vload(w, k, n2)
        a0 = a[r0, k]
        c00, c01, c02 = vfma(c00, a0, w0), vfma(c01, a0, w1), vfma(c02, a0, w2)
        a1 = a[r0 + 1, k]
        c10, c11, c12 = vfma(c10, a1, w0), vfma(c11, a1, w1), vfma(c12, a1, w2)
        a2 = a[r0 + 2, k]
        c20, c21, c22 = vfma(c20, a2, w0), vfma(c21, a2, w1), vfma(c22, a2, w2)
        a3 = a[r0 + 3, k]
        c30, c31, c32 = vfma(c30, a3, w0), vfma(c31, a3, w1), vfma(c32, a3, w2)
    _store3(out, r0, n0, c00, c01, c02)
    _store3(out, r0 + 1, n0, c10, c11, c12)
    _store3(out, r0 + 2, n0, c20, c21, c22)
    _store3(out, r0 + 3, n0, c30, c31, c32)


@njit(inline="always")
def _rows2_x3(a, w, out, r0, n0):
    """Rows ``r0, r0+1``, columns ``n0`` + 3 vectors, of :func:`rows_matmul_add`: 6 chains
    where a single row has 3 (the weight-gradient sums of 6 inputs, the electricity
    benchmark's, have 2 rows past their 4-row tile)."""
    L = vector_lanes(w)
    n1, n2 = n0 + L, n0 + 2 * L
    c00, c01, c02 = vload(out, r0, n0), vload(out, r0, n1), vload(out, r0, n2)
    c10, c11, c12 = vload(out, r0 + 1, n0), vload(out, r0 + 1, n1), vload(out, r0 + 1, n2)
    for k in range(w.shape[0]):
        w0, w1, w2 = vload(w, k, n0), vload(w, k, n1), vload(w, k, n2)
        a0 = a[r0, k]
        c00, c01, c02 = vfma(c00, a0, w0), vfma(c01, a0, w1), vfma(c02, a0, w2)
        a1 = a[r0 + 1, k]
        c10, c11, c12 = vfma(c10, a1, w0), vfma(c11, a1, w1), vfma(c12, a1, w2)
    _store3(out, r0, n0, c00, c01, c02)
    _store3(out, r0 + 1, n0, c10, c11, c12)


@njit(inline="always")
def _store3(out, r, n0, c0, c1, c2):
    L = vector_lanes(out)
    vstore(out, r, n0, c0)
    vstore(out, r, n0 + L, c1)
    vstore(out, r, n0 + 2 * L, c2)


@njit(inline="always")
def step_inputs(gx, x, wi_t, b_ih, gxb, t, b0, nr):
    """The input projection of batch rows ``b0 .. b0+nr-1`` at step ``t``, as rows of a 2-D array.

    Either read from ``gx`` (T, B, GH), formed before the time loop, or, where ``x`` has
    steps (the fused path; ``x`` of length 0 means none), formed here in the block's scratch
    ``gxb`` (R, GHp) as ``b_ih + x[t, b0:b0+nr] @ W_ih^T`` (``wi_t`` (I, GHp) zero-padded), the
    same sum in the same order as the Numba path of :func:`numba_dense.linear`. The
    fused path never writes ``gx`` out: a (T, B, GH) array less to write and read again.
    """
    if x.shape[0] == 0:
        return gx[t, b0 : b0 + nr]
    for r in range(nr):
        for j in range(b_ih.shape[0]):
            gxb[r, j] = b_ih[j]
    rows_matmul_add(x[t, b0 : b0 + nr], wi_t, gxb, nr)
    return gxb


def projection_args(x, w_ih, b_ih, GH, dtype):
    """``(gx placeholder, x, wi_t, b_ih)`` NumPy arguments of a fused-projection kernel call:
    x (T, B, I), w_ih (GH, I), b_ih (GH,) or None."""
    bias = np.zeros(GH, dtype=dtype) if b_ih is None else b_ih.detach().contiguous().numpy()
    return (
        np.zeros((1, 1, GH), dtype=dtype),
        x.detach().contiguous().numpy(),
        padded_columns(w_ih.T),
        bias,
    )


def no_projection_args(gx):
    """The same for a kernel call on a precomputed ``gx`` (T, B, GH)."""
    a = gx.detach().contiguous().numpy()
    GH = a.shape[2]
    return (
        a,
        np.zeros((0, 1, 1), dtype=a.dtype),
        np.zeros((1, GH), dtype=a.dtype),
        np.zeros(GH, dtype=a.dtype),
    )
