"""The input projection of a recurrent layer on the CPU, on Numba's threads.

Dimension legend: N rows, K reduction size, M output columns, Mp = M padded to a whole
micro-kernel tile (:func:`padded`).

The Numba kernels form the projection ``gx = x @ W_ih^T + b_ih`` themselves, step by step in
their time loop (``forward_projected``), and their backward sums the weight gradients in its
own time loop (:mod:`numba_grads`). :func:`linear` is the projection formed first, for a kernel
whose backward needs ``gx`` (none does today) and for the kernel-level API: ``I`` is often 1
to 3, a skinny product that torch would run on one thread next to the Numba kernels
(:func:`tsrnn._training.serial_torch`), slowly; here it runs on Numba's threads with the
register-blocked micro-kernel of :mod:`numba_linalg`, each row one summation chain (results do
not depend on the thread count).
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from numba import prange

from tsrnn.kernels.common import aligned, workspace
from tsrnn.kernels.common.numba_config import njit_parallel, num_threads
from tsrnn.kernels.common.numba_glue import as_array
from tsrnn.kernels.common.numba_linalg import padded_columns, rows_matmul_add

LINEAR_BLOCK_ROWS = 32
"""Rows of a projection per parallel task (each row is independent of the cut)."""

PARALLEL_MIN_WORK = 10_000_000
"""Multiply-adds below which a product runs on one thread (see :func:`_threads_for`)."""

NUMBA_LINEAR_MIN_WORK = 5_000_000
"""Multiply-adds of a projection from which :func:`linear` runs on Numba rather than torch."""


def _threads_for(work: int, minimum: int = PARALLEL_MIN_WORK):
    """One thread for products under ``minimum`` multiply-adds, else the caller's setting.

    Each parallel region wakes the worker threads and waits for them at its end: a few
    microseconds on idle cores, but up to a scheduler time slice (milliseconds) when other
    processes keep the cores busy.
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
        acc = out[n0 : n0 + nr] if M == Mp else aligned.zeros((nr, Mp), out)
        for r in range(nr):
            for j in range(M):
                acc[r, j] = b[j]
        rows_matmul_add(x[n0 : n0 + nr], w_t, acc, nr)
        if M != Mp:
            for r in range(nr):
                for j in range(M):
                    out[n0 + r, j] = acc[r, j]


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
