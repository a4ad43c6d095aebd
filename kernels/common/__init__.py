"""What the cells share: the Numba policy, activations and the backend registry."""

# In this order, before any kernel module imports Numba: pass a thread request on (see
# _threads), then take the snapshot of the Numba sources that the kernels' cache stamps come
# from, before any of them is read (see _sources.Snapshot; no Numba import).
from tsrnn.kernels.common import (
    _sources,  # noqa: F401
    _threads,  # noqa: F401
)
