"""Compile (or load from the on-disk cache) every Numba kernel ahead of first use."""

from __future__ import annotations

import time

import torch

from tsrnn.kernels.common.registry import CELLS, _numba_jit_disabled, get_kernel


def warmup(cells=CELLS, dtypes=("float32", "float64"), *, verbose=False) -> float:
    """Compile the Numba kernels (forward and backward) for ``cells`` and ``dtypes``, and the
    layers' input projection and weight-gradient routines and the forecaster's batch builder
    and training loss for ``dtypes``.

    Kernels are cached on disk (``NUMBA_CACHE_DIR`` or beside the installed modules), so the
    first call in a fresh environment compiles and later processes only load machine code.
    Call it once per process (or per Dask worker) to move that cost out of the first fit.

    Parameters
    ----------
    cells : iterable of {'rnn', 'gru', 'lstm'}
    dtypes : iterable of {'float32', 'float64'}
    verbose : bool
        Print the time taken per cell and dtype.

    Returns
    -------
    float
        Seconds spent.

    Examples
    --------
    >>> import tsrnn
    >>> seconds = tsrnn.warmup(cells=["gru"], dtypes=["float32"])
    >>> seconds >= 0
    True
    """
    import numpy as np

    cells = _choices(cells, CELLS, "cells")
    dtypes = _choices(dtypes, ("float32", "float64"), "dtypes")
    if _numba_jit_disabled():
        import warnings

        warnings.warn(
            "tsrnn.warmup: NUMBA_DISABLE_JIT=1, so there is nothing to compile (the layers run "
            "the torch reference loop then); nothing was done.",
            UserWarning,
            stacklevel=2,
        )
        return 0.0

    from tsrnn._batch_numba import train_batch
    from tsrnn._data import WindowPlan
    from tsrnn._training import Problem
    from tsrnn.kernels.common import numba_head
    from tsrnn.kernels.common.numba_config import start_pool

    problem = Problem(np.zeros((4, 1)), None, WindowPlan([0, 4], 2, 1, [0]), 1)
    start = time.perf_counter()
    start_pool()  # the thread pool's starter, which the first layer call runs
    for name in dtypes:
        # the input projection and the weight gradients are formed inside the kernels
        # (forward_projected, backward_with_weight_grads), compiled with them below
        dtype = getattr(torch, name)
        train_batch(problem, np.array([0]), dtype, torch.ones(1, dtype=dtype))
        h, w = (torch.zeros(1, 1, dtype=dtype, requires_grad=True) for _ in range(2))
        b = torch.zeros(1, dtype=dtype, requires_grad=True)
        numba_head.head_sq_loss(h, w, b, torch.zeros(1, 1, dtype=dtype), 1.0).backward()
        # its parallel copy, which large inputs take
        a = np.zeros((1, 1), dtype=name)
        numba_head._forward_parallel(a, a, a[0], a, a.copy())
        numba_head._backward_parallel(a, a, a, 1.0, a.copy(), a.copy(), a[0].copy())
        numba_head.sum_squares(np.zeros((1, 1, 1), dtype=name))  # the GRU's fused head
        numba_head.head_grads(np.zeros((1, 1, 2)), dtype)
        # and the form that adds into gradients already held (a fit's fused GRU head)
        numba_head.add_head_grads(np.zeros((1, 1, 2)), np.zeros((1, 1), name), np.zeros(1, name))
    for cell in cells:
        kernel = get_kernel(cell, "numba")
        G = kernel.GATES
        for name in dtypes:
            t0 = time.perf_counter()
            dtype = getattr(torch, name)
            gx = torch.zeros(2, 1, G, dtype=dtype)
            w = torch.zeros(G, 1, dtype=dtype)
            b = torch.zeros(G, dtype=dtype)
            h0 = torch.zeros(1, 1, dtype=dtype)
            c0 = h0 if cell == "lstm" else None
            opts_list = [{"nonlinearity": "tanh"}] if cell == "rnn" else [{}]
            for opts in opts_list:
                out, hn, cn, saved = kernel.forward(gx, w, b, h0, c0, **opts)
                kernel.forward(gx, w, b, h0, c0, save=False, **opts)
                kernel.backward(out, hn, cn, gx, w, b, h0, c0, out, saved, **opts)
            if hasattr(kernel, "train_head"):  # the GRU's layer, head and loss in one pass
                x, y = torch.zeros(2, 1, 1, dtype=dtype), torch.zeros(2, 1, 1, dtype=dtype)
                kernel.train_head(x, w, b, w, b, h0, h0, h0[0], y, 1.0)
            if verbose:
                print(f"warmup {cell} {name}: {time.perf_counter() - t0:.2f}s")
    return time.perf_counter() - start


def _choices(values, allowed, name: str) -> list:
    """``values`` as a list of allowed names; one name alone (a string) is taken as a list of
    one, as a user writing ``warmup(cells="gru")`` means."""
    if not isinstance(values, str) and not hasattr(values, "__iter__"):
        raise TypeError(
            f"warmup's {name} must be a name or an iterable of names among {list(allowed)}, "
            f"got {values!r}."
        )
    values = [values] if isinstance(values, str) else list(values)
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(
            f"warmup's {name} must be names among {list(allowed)}, got {bad}: e.g. "
            f"tsrnn.warmup({name}={list(allowed)[:1]})."
        )
    return values
