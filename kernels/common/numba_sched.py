"""Chunks of a parallel kernel handed out one at a time, to whichever thread is free.

``prange`` splits its range into one contiguous share per thread, fixed before the loop
starts (Numba's OpenMP layer runs ``#pragma omp for`` with the default, static schedule). On
a machine whose cores do not run at the same speed, as on shared cloud VMs, where a core's
other hyperthread or a power limit can slow it by 10-25% for seconds at a time, the faster
thread then waits at the end of every call for the slower one. A kernel that instead loops
``for _ in prange(workers(chunks, threads))`` and takes its chunks with :func:`next_chunk` from
a shared counter lets the faster thread do more of them.

Which thread runs a chunk never changes a result: each chunk writes only its own rows and
its own partial sums, added in chunk order afterwards (see
:mod:`~tsrnn.kernels.common.numba_grads`).

Used by the GRU's one-pass training kernel (``kernels/gru/numba_cpu.py``, ``_train_head``),
where a forecaster's fit spends nearly all its time; the other kernels keep ``prange``'s
split.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from tsrnn.kernels.common.numba_config import njit


@intrinsic
def _fetch_add(typingctx, a, v):
    """``a[0] += v`` as one atomic operation; returns ``a[0]`` as it was. ``a``: a 1-D int64
    array."""
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.dtype == types.int64):
        return None
    if not isinstance(v, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [zero])
        val = context.cast(builder, args[1], sig.args[1], types.int64)
        # monotonic: the count alone needs no ordering; the chunks' writes are published by
        # the barrier that ends the parallel region
        return builder.atomic_rmw("add", ptr, val, "monotonic")

    return types.int64(a, v), codegen


@njit(inline="always")
def next_chunk(taken):
    """The next chunk not yet handed out (``taken``: the threads' shared count of chunks
    handed out, ``np.zeros(1, np.int64)`` before the ``prange``); a number past the last
    chunk once all are taken."""
    return _fetch_add(taken, 1)


@njit(inline="always")
def workers(chunks, threads):
    """Iterations of the ``prange`` that hands out ``chunks`` chunks: one per thread
    (``threads``: ``numba.get_num_threads()``, read by the caller in Python: called in jitted
    code it would keep the kernel out of Numba's disk cache), no more than there are
    chunks."""
    return max(1, min(threads, chunks))
