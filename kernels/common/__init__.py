"""What the cells share: the Numba policy, activations and the backend registry."""
