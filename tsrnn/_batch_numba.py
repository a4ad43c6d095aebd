"""Training batches built in one Numba pass on the CPU (the fast path of ``make_batch``).

:func:`tsrnn._training.make_batch` builds a batch with a dozen small torch ops (gather, means,
unfolds, concatenations, a transpose) and the input noise with three more: about 0.5 ms a
batch at batch 32, a seventh of a whole training step of a small GRU. :func:`train_batch`
writes the same inputs and targets straight into contiguous ``(W, B, ·)`` tensors from the
scaled rows, noise included. The torch path stays the reference (and serves other devices):
``tests/test_batch_numba.py`` checks that the two agree on every layout (covariates, seasonal
and mixed panels, several steps ahead, float32 and float64).

Layout, as in :func:`tsrnn._training.make_inputs` (block row ``i`` of a window starting at
``s`` is ``y[s + i]``; ``L`` lead rows, ``W`` positions, ``H`` steps ahead, ``C`` targets,
``K`` covariates): the input at position ``t`` is ``y[s+L+t] - level`` (C), then, for seasonal
models, the base ``y[s+1+t+k] - level`` for ``k < H`` (H*C; for the columns that are not
seasonal, their base below), then the covariates ``x[s+L+1+t+k]`` (H*K); the target is
``y[s+L+1+t+k] - base``, the base of the series and columns without a seasonal one (in any
model) being ``y[s+L+t]`` or, for those that revert to their mean,
``mu + phi**(k+1) * (y[s+L+t] - mu)``.
``level`` is the mean of the window's ``W`` target rows.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import prange

from tsrnn.kernels.common.numba_config import njit_parallel


@njit_parallel
def _train_batch(
    y,
    x,
    starts,
    hist,
    L,
    W,
    H,
    M,
    seasonal,
    seas,
    rev_pow,
    rev_mu,
    noise,
    noise_sd,
    inputs,
    targets,
):
    """Fill ``inputs`` (W, B, I) and ``targets`` (W, B, H*C); see the module docstring.

    ``seasonal``: whether the inputs carry the base; ``seas`` (B, C) bool: the rows and
    columns whose base is the seasonal one (period ``M``, over ``L // M`` years: see
    :func:`tsrnn._training.seasonal_base`). ``hist`` (B,): the rows of each block's ``L`` that
    are its series' (the last ones): each position averages the whole seasons its series has
    up to it, at most ``L // M``, and the rows before the series count as zeros (they may
    belong to another series, or lie before the first row). ``rev_pow`` (B, H, C) and
    ``rev_mu`` (B, C), or empty: ``phi**(k+1)`` and ``mu`` of each row's and column's
    reverting base
    ``mu + phi**(k+1) * (y[t] - mu)`` (the rows and columns without a seasonal base,
    :func:`tsrnn._data.revert_base`; empty: the last value). ``noise`` (W, B, nf) standard normal
    draws scaled by ``noise_sd`` (nf,) and added to the first nf inputs (nf = 0: none).

    Positions run on Numba's threads; within one, each input column is a tight loop over the
    batch rows, whose writes are contiguous ((W, B, I) layout). One loop per position with the
    columns innermost (C, H and K are 1 or 2 in most models) spent its time on loop overhead:
    1.7 ms against 0.3 ms per electricity batch (2 threads; 0.4 ms on one), bit-identical.
    """
    B = starts.shape[0]
    C = y.shape[1]
    K = x.shape[1]
    nf = noise_sd.shape[0]
    revert = rev_mu.shape[0] > 0
    level = np.empty((B, C))
    for b in range(B):
        for c in range(C):
            acc = 0.0
            for t in range(W):
                acc += y[starts[b] + L + t, c]
            level[b, c] = acc / W
    xcol = C + H * C if seasonal else C  # the first covariate column
    years = L // M if seasonal else 1
    # prefix sums of each window's rows (years > 1): cs[b, r] = y[starts[b] .. + r - 1]
    cs = np.zeros((B, L + W + 1 if years > 1 else 0, C))
    for b in prange(B if years > 1 else 0):
        skip = L - hist[b]  # block rows before the series: zeros
        for c in range(C):
            acc = 0.0
            for r in range(L + W):
                if r >= skip:
                    acc += y[starts[b] + r, c]
                cs[b, r + 1, c] = acc
    for t in prange(W):
        # inputs[t, b, ...] indexed directly: a view of a row made Numba count references to
        # the array (atomic operations), 2.5x the time of the batch
        for c in range(C):
            for b in range(B):
                inputs[t, b, c] = y[starts[b] + L + t, c] - level[b, c]
        for k in range(H):
            for c in range(C):
                for b in range(B):
                    p = starts[b] + L + t  # the window's position t
                    if not seas[b, c]:
                        if revert:
                            mu = rev_mu[b, c]
                            base = mu + rev_pow[b, k, c] * (y[p, c] - mu)
                        else:
                            base = y[p, c]
                    elif years == 1:
                        base = y[p + 1 + k - M, c]
                    else:  # seasonal_base's formula on the window's prefix sums
                        r = L + t + 1  # cs index just past block row L + t (position t)
                        used = min(years, (hist[b] + t + 1) // M)  # the series' seasons
                        offsets = 0.0
                        for j in range(1, used + 1):
                            e = r - (j - 1) * M
                            mean_j = (cs[b, e, c] - cs[b, e - M, c]) / M
                            offsets += y[p + 1 + k - j * M, c] - mean_j
                        last = (cs[b, r, c] - cs[b, r - M, c]) / M
                        base = last + offsets / used
                    if seasonal:
                        inputs[t, b, C + k * C + c] = base - level[b, c]
                    targets[t, b, k * C + c] = y[p + 1 + k, c] - base
        for k in range(H):
            for j in range(K):
                for b in range(B):
                    inputs[t, b, xcol + k * K + j] = x[starts[b] + L + t + 1 + k, j]
        for f in range(nf):
            for b in range(B):
                inputs[t, b, f] += noise_sd[f] * noise[t, b, f]


def train_batch(problem, starts: np.ndarray, dtype: torch.dtype, noise_sd=None, generator=None):
    """Inputs (W, B, I) and targets (W, B, H*C) of the training windows at ``starts`` (CPU).

    ``noise_sd`` (nf,) tensor or None: Gaussian noise of these standard deviations is added to
    the first ``nf`` inputs, drawn in float32 as ``torch.randn((W, B, nf))`` from
    ``generator`` (None: torch's global generator).
    """
    plan, H = problem.plan, problem.horizon
    W, L = plan.window, plan.lead
    B = len(starts)
    C = problem.y.shape[1]
    x = problem.x if problem.x is not None else np.zeros((0, 0))
    seasonal = problem.seasonal is not None
    series = None if problem.seasonal is None and problem.revert is None else plan.series_of(starts)
    if seasonal:
        seas = np.ascontiguousarray(problem.seasonal[series])
    else:
        seas = np.zeros((B, C), dtype=bool)
    rev_pow, rev_mu = np.zeros((0, H, C)), np.zeros((0, C))
    if problem.revert is not None:
        rows = problem.revert[series]  # float64, as the rest of the batch is computed
        rev_pow = np.stack([rows[..., 0] ** (k + 1) for k in range(H)], axis=1)
        rev_mu = np.ascontiguousarray(rows[..., 1])
    inputs = torch.empty((W, B, problem.input_size), dtype=dtype)
    targets = torch.empty((W, B, H * C), dtype=dtype)
    if noise_sd is None:
        sd = np.zeros(0, dtype=inputs.numpy().dtype)
        noise = np.zeros((0, 0, 0), dtype=sd.dtype)
    else:
        sd = noise_sd.detach().numpy()
        # drawn in float32 whatever the dtype, then widened exactly: a float64 fit sees the
        # float32 fit's noise (torch.randn draws other numbers for each dtype)
        noise = torch.randn((W, B, len(sd)), dtype=torch.float32, generator=generator)
        noise = noise.to(dtype).numpy()
    _train_batch(
        problem.y,
        x,
        np.ascontiguousarray(starts, dtype=np.int64),
        plan.history(starts) if plan.min_lead < L else np.full(B, L, dtype=np.int64),
        L,
        W,
        H,
        problem.period or max(L, 1),
        seasonal,
        seas,
        rev_pow,
        rev_mu,
        noise,
        sd,
        inputs.numpy(),
        targets.numpy(),
    )
    return inputs, targets
