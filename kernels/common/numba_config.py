"""The one Numba policy: every ``@njit`` in tsrnn takes its options from here.

``cache=True`` stores compiled machine code next to the module (or in ``NUMBA_CACHE_DIR``), so
a fresh process loads kernels from disk instead of compiling them again; a cached kernel is
compiled again when any Numba source of ``tsrnn.kernels`` changes, not only its own module
(:mod:`~tsrnn.kernels.common.numba_cache`). ``fastmath`` allows
reassociation and contraction (so dot products vectorise) but not ``nnan``/``ninf``: a NaN that
enters a kernel must come out as a NaN, never be optimised away.

Inlining: a helper the kernels call at most once per block and step (the recurrent product
:func:`~tsrnn.kernels.common.numba_linalg.rows_matmul_add`, the head's rows, the weight
gradients' staged sums) is an ordinary ``@njit`` function, compiled once and linked into each
kernel (LLVM may still inline it). Numba's own inlining (``inline="always"``) copies the helper's
code into every call site before type inference, and its passes grow faster than the code:
with the product and those helpers inlined, the first compilation of the float32 kernels
(``tsrnn.warmup(dtypes=["float32"])``, empty cache) took 253 s against 131 s now, for the same
machine code speed. Inlined still, because linked they ran slower: a forward's step and
gate pass (GRU forward 1.2x; inlined, they sit in the function that allocates their scratch
arrays, presumably what lets LLVM keep those apart from the outputs), the helpers called per
row or per vector, and the backward's scratch arrays, gate pass and staging (a small GRU's
backward 1.06-1.08x).
The cheapest steps, a vanilla RNN's, still pay for the product's call: about 1.02-1.03x.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sys
import threading

import numba

from tsrnn.kernels.common import numba_cache
from tsrnn.kernels.common._threads import threads_from_environment as _threads_from_environment
from tsrnn.kernels.common._threads import torch_threads

FASTMATH = {"contract", "reassoc", "nsz", "arcp", "afn"}

NJIT_OPTIONS = dict(nogil=True, cache=True, fastmath=FASTMATH, error_model="numpy")
PARALLEL_OPTIONS = dict(NJIT_OPTIONS, parallel=True)


numba_cache.install()


def _jit(args, options):
    """``numba.njit(*args, **options)``, the function marked as tsrnn's first, so that its
    cache is kept in step with every kernel source (:mod:`numba_cache`)."""
    if len(args) == 1 and callable(args[0]):  # @njit, bare
        return numba.njit(numba_cache.mark(args[0]), **options)
    decorate = numba.njit(*args, **options)
    return lambda func: decorate(numba_cache.mark(func))


def njit(*args, **kwargs):
    """``numba.njit`` with the project's options (serial)."""
    return _jit(args, {**NJIT_OPTIONS, **kwargs})


def njit_parallel(*args, **kwargs):
    """``numba.njit`` with the project's options and ``parallel=True`` (use ``prange``),
    called one at a time where Numba's threading layer is ``workqueue``
    (:class:`OneAtATime`). Called from Python only: a jitted caller would not type it."""
    jitted = _jit(args, {**PARALLEL_OPTIONS, **kwargs})
    if len(args) == 1 and callable(args[0]):
        return OneAtATime(jitted)
    return lambda func: OneAtATime(jitted(func))


_ONE_AT_A_TIME = threading.RLock()
_workqueue: list[bool | None] = [None]  # the layer is workqueue; None: no pool started yet


def _is_workqueue() -> bool | None:
    """Whether Numba's threading layer is ``workqueue``, once a pool has started."""
    if _workqueue[0] is None:
        try:
            _workqueue[0] = numba.threading_layer() == "workqueue"
        except ValueError:  # no parallel region has run yet
            return None
    return _workqueue[0]


class OneAtATime:
    """A parallel kernel whose calls from several Python threads take turns where the
    threading layer is ``workqueue``.

    Numba's ``omp`` and ``tbb`` layers run parallel regions from several threads at once
    (tsrnn's kernels release the GIL: a threaded server runs them side by side), but its
    ``workqueue`` layer, the one layer that needs no OpenMP or TBB runtime (a container
    without libgomp; macOS without libomp), ends the whole process with SIGABRT
    ("Concurrent access has been detected") where two threads enter one, as a
    ``ThreadPoolExecutor`` over a layer did (a review found it; ``torch.nn`` runs there).
    So there, and only there, the calls take a process-wide lock. Where the layer is not
    known yet (no pool started), the call takes the lock too: the first call starts the pool.
    Attributes are the Numba dispatcher's (``py_func``, ``signatures``, ...)."""

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        functools.update_wrapper(self, dispatcher.py_func)

    def __call__(self, *args, **kwargs):
        if _workqueue[0] is False:
            return self.dispatcher(*args, **kwargs)
        with _ONE_AT_A_TIME:
            result = self.dispatcher(*args, **kwargs)
            _is_workqueue()
        return result

    def __getattr__(self, name):
        if name == "dispatcher":  # not set yet (copy and pickle make the object bare)
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __reduce__(self):
        # by reference, as the dispatcher pickled: its module's attribute of its name
        return _kernel_named, (self.dispatcher.py_func.__module__, self.__qualname__)


def _kernel_named(module: str, qualname: str):
    """The kernel ``module.qualname`` (what a pickled :class:`OneAtATime` names)."""
    import importlib

    return getattr(importlib.import_module(module), qualname)


@contextlib.contextmanager
def num_threads(n: int | None):
    """Bound the Numba threads of kernels called from this thread, restoring them after.

    ``numba.set_num_threads`` is thread-local: this does not touch other threads' settings nor
    the process-wide ``NUMBA_NUM_THREADS``. ``None`` leaves the current setting alone, except
    that an ``OMP_NUM_THREADS`` set without ``NUMBA_NUM_THREADS`` (as Dask does in its
    workers) is honoured when Numba was imported before tsrnn could pass it on.
    """
    if _forked_child[0]:
        n = 1  # a forked child: more would wait forever in GNU OpenMP (_after_fork_in_child)
    if n is None:
        n = _threads_from_environment()
    if n is None:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    depth = getattr(_explicit, "depth", 0)
    _explicit.depth = depth + 1
    try:
        yield
    finally:
        _explicit.depth = depth
        numba.set_num_threads(previous)


_explicit = threading.local()  # depth of num_threads blocks with a count, in this thread
_NO_BOUND = contextlib.nullcontext()


def torch_bounded():
    """A block whose Numba kernels run on at most as many threads as torch's own ops would
    (``torch.get_num_threads()``, the count before a fit set torch's to one while one runs;
    :func:`~tsrnn.kernels.common._threads.torch_threads`): what ``tsrnn.nn``'s layers run in,
    so that ``torch.set_num_threads`` bounds them as it bounds ``torch.nn``'s. Inside a
    :func:`num_threads` block with a count (a fit's ``n_threads``) that count rules instead, and
    a Numba count set lower (``numba.set_num_threads``) is kept: the smaller of the two."""
    if getattr(_explicit, "depth", 0):
        return _NO_BOUND
    start_pool()  # Numba's getter would start it, changing torch's count
    n = torch_threads()
    if numba.get_num_threads() <= n:
        return _NO_BOUND
    return num_threads(n)


def default_threads() -> int:
    """The thread count of a fit told none (``n_threads=None``): the smallest of torch's count
    (:func:`~tsrnn.kernels.common._threads.torch_threads`), this thread's Numba count and
    ``OMP_NUM_THREADS`` where ``NUMBA_NUM_THREADS`` is unset (Numba may have been imported
    before tsrnn could pass it on)."""
    start_pool()  # Numba's getter would start it, changing torch's count
    n = min(torch_threads(), numba.get_num_threads())
    env = _threads_from_environment()
    return n if env is None else min(n, env)


def cache_dir() -> str | None:
    """Where compiled kernels are cached (``NUMBA_CACHE_DIR``, or beside the modules)."""
    return os.environ.get("NUMBA_CACHE_DIR") or None


_forked_child = [False]  # this process was forked after the OpenMP pool started


def _after_fork_in_child() -> None:
    """Let a process forked after the kernels ran run them, on one thread.

    Numba's ``omp`` threading layer on GNU OpenMP (what a pip-installed Numba uses on Linux) is
    not fork-safe: the child of a fork made after the pool started would wait forever at its
    first parallel region, so Numba's ``parallel_for`` ends such a child with SIGTERM, and a
    ``multiprocessing.Pool`` (fork, the default on Linux before Python 3.14) then waits for it
    forever. A parallel region of one thread never touches the parent's pool, and one thread
    is what a worker among several wants anyway. So in the child, and only when the parent's
    pool had started, the layer's ``launch_threads`` is called again with one thread (it
    records the child as the process that started the pool, which lifts the SIGTERM, and
    makes one thread the default of threads started later), this thread is set to one thread
    (:func:`num_threads` keeps it there, also when asked for none). Other layers (``tbb``;
    OpenMP runtimes other than GNU's) are fork-safe and are left alone. Whatever the layer,
    torch's pool (GNU OpenMP in torch's wheels, with the same flaw) is set to one thread.
    Raising Numba's thread count in such a child by hand (``numba.set_num_threads(2)``)
    would wait forever: the guard that ended the child is lifted.
    """
    from numba.np.ufunc import parallel

    if not parallel._is_initialized:
        return  # no kernel ran in the parent: the child starts its own pools
    torch = sys.modules.get("torch")
    if torch is not None:
        # torch's own GNU OpenMP pool has the same flaw (a child's first parallel op after
        # the parent's waits forever), whatever Numba's layer: one thread, as torch's
        # DataLoader sets in its workers.
        torch.set_num_threads(1)
    if numba.threading_layer() != "omp":
        return
    from numba.np.ufunc import omppool

    if getattr(omppool, "openmp_vendor", None) != "GNU":
        return
    ctypes.CFUNCTYPE(None, ctypes.c_int)(omppool.launch_threads)(1)
    numba.set_num_threads(1)
    _forked_child[0] = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@njit_parallel
def _touch(a):
    for i in numba.prange(a.shape[0]):
        a[i] = i


_pool_started = False


def start_pool() -> None:
    """Start Numba's OpenMP thread pool now, keeping torch's thread count.

    The pool starts at the process's first parallel kernel call, and starting it sets the
    calling thread's OpenMP thread count to Numba's, which torch's ``get_num_threads`` reads: a
    ``torch.set_num_threads(1)`` made before (as in worker processes) was undone by the first
    layer call. ``tsrnn.nn`` calls this before its first Numba kernel; later calls return at
    once.
    """
    global _pool_started
    if _pool_started:
        return
    import numpy as np
    import torch

    saved = torch.get_num_threads()
    _touch(np.zeros(2))
    if torch.get_num_threads() != saved:
        torch.set_num_threads(saved)
    _pool_started = True
