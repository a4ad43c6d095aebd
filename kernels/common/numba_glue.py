"""Torch tensors in, NumPy views to the Numba kernels, torch tensors out (no copies on CPU)."""

from __future__ import annotations

import numpy as np
import torch


def as_array(t: torch.Tensor) -> np.ndarray:
    """A NumPy view of a CPU tensor, made contiguous first if needed."""
    return t.detach().contiguous().numpy()


def empty_like_steps(gx: torch.Tensor, *shape) -> tuple[torch.Tensor, np.ndarray]:
    """A new tensor of ``shape`` with gx's dtype, and its NumPy view."""
    t = torch.empty(shape, dtype=gx.dtype, device="cpu")
    return t, t.numpy()
