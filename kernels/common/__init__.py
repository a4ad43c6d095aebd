"""What the cells share: the Numba policy, activations and the backend registry."""

# First, before any kernel module imports Numba: pass a thread request on (see _threads).
from tsrnn.kernels.common import _threads  # noqa: F401
