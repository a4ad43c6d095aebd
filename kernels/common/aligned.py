"""Arrays that start on a cache line, for the kernels' vector loads and stores.

The Numba kernels load and store whole SIMD vectors (:mod:`numba_simd`): on AVX-512 one
vector is 64 bytes, a whole cache line, and rows of their arrays are whole numbers of vectors
(the micro-kernel's padding). An array that starts on a cache line keeps every such vector
within one line; one that starts 32 bytes off splits every vector over two lines, and a split
load or store costs about twice as much. Numba's ``np.empty``/``np.zeros`` align only to
32 bytes and NumPy's to 16, so whether a kernel's scratch, its weights laid out for it or a
parameter (a view into the flat parameter buffer of a fit) start on a line was a matter of
the allocator's state: from one process to the next, the same training step of the GRU
(electricity shape, 2 threads, alternated calls in one process) took 1.12x the time with its
scratch 32 bytes off a line, 1.05x with its weights off, 1.18x with both. Torch's CPU
allocator aligns to 64 bytes already.

:func:`empty` and :func:`zeros` are for jitted code (``like``: an array of the wanted dtype);
:func:`empty_array`, :func:`zeros_array` and :func:`aligned_view` for the Python side.
Results do not change: only where the data lies.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from tsrnn.kernels.common.numba_config import njit
from tsrnn.kernels.common.numba_glue import as_array

LINE = 64
"""Bytes of a cache line (x86-64), and of an AVX-512 vector."""


@njit(inline="always")
def empty(shape, like):
    """``np.empty(shape, like.dtype)`` starting on a cache line (:data:`LINE`)."""
    n = 1
    for d in shape:
        n *= d
    extra = LINE // like.itemsize
    buf = np.empty(n + extra, dtype=like.dtype)
    off = ((-buf.ctypes.data) % LINE) // like.itemsize
    return buf[off : off + n].reshape(shape)


@njit(inline="always")
def zeros(shape, like):
    """``np.zeros(shape, like.dtype)`` starting on a cache line (:data:`LINE`)."""
    a = empty(shape, like)
    a[...] = 0
    return a


def empty_array(shape, dtype) -> np.ndarray:
    """``np.empty`` starting on a cache line (:data:`LINE`), from Python."""
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    buf = np.empty(n + LINE // dtype.itemsize, dtype=dtype)
    off = (-buf.ctypes.data % LINE) // dtype.itemsize
    return buf[off : off + n].reshape(shape)


def zeros_array(shape, dtype) -> np.ndarray:
    """``np.zeros`` starting on a cache line (:data:`LINE`), from Python."""
    a = empty_array(shape, dtype)
    a[...] = 0
    return a


def aligned_view(t) -> np.ndarray:
    """A C-contiguous NumPy view of a CPU tensor or array where its data starts on a cache
    line, else an aligned copy (a parameter's view into a fit's flat parameter buffer starts
    wherever the parameters before it end)."""
    a = as_array(t) if isinstance(t, torch.Tensor) else np.ascontiguousarray(t)
    if a.ctypes.data % LINE == 0:
        return a
    out = empty_array(a.shape, a.dtype)
    out[...] = a
    return out
