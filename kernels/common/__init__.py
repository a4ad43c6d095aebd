"""What the cells share: the Numba policy, activations and the backend registry."""

# In this order, before any kernel module imports Numba: pass a thread request on (see
# _threads), then take the snapshot of the Numba sources that the kernels' cache stamps come
# from, before any of them is read (see numba_cache.Snapshot).
from tsrnn.kernels.common import (
    _threads,  # noqa: F401
    numba_cache,  # noqa: F401
)
