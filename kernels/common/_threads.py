"""Thread count requested by the environment, passed on to Numba before it is imported.

Imported by ``tsrnn.kernels.common`` itself, so it runs before any kernel module imports Numba.
"""

from __future__ import annotations

import os
import sys


def threads_from_environment() -> int | None:
    """Threads asked for through ``OMP_NUM_THREADS`` when ``NUMBA_NUM_THREADS`` is unset.

    Dask's nanny (like many schedulers) starts each worker process with ``OMP_NUM_THREADS=1``
    so that tasks do not oversubscribe the cores, but it does not set ``NUMBA_NUM_THREADS``,
    and Numba would otherwise start one thread per core in every worker.
    """
    if os.environ.get("NUMBA_NUM_THREADS"):
        return None
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


# torch's intra-op thread count before tsrnn's fits set it to one (tsrnn._training.serial_torch),
# while one runs; None otherwise
torch_threads_outside_fits: list[int | None] = [None]


def torch_threads() -> int:
    """The thread count the user gave torch (``torch.set_num_threads``, or its default): while
    a fit runs torch's own ops on one thread, the count it will restore."""
    saved = torch_threads_outside_fits[0]
    if saved is not None:
        return saved
    import torch

    return torch.get_num_threads()


if "numba" not in sys.modules and threads_from_environment() is not None:
    # Numba reads its thread count once, at import: pass the request on before that.
    os.environ["NUMBA_NUM_THREADS"] = str(threads_from_environment())

