"""Test set-up shared by the whole suite.

Without a GPU, Triton runs its kernels in the CPU interpreter: ``TRITON_INTERPRET=1`` must be
set before triton is first imported, so it is set here, before any tsrnn import (importing
torch does not import triton). On a CUDA machine the real kernels run and the ``gpu`` tests
with them.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np
import pytest


def cuda_available() -> bool:
    return torch.cuda.is_available()


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)  # noqa: NPY002 - keeps tests that use the legacy global RNG deterministic
    torch.manual_seed(0)


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; this machine has none (torch.cuda)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
