"""Test set-up shared by the whole suite.

Triton runs its kernels in the CPU interpreter here: ``TRITON_INTERPRET=1`` must be set before
triton is first imported, so it is set at the top of this file, before any tsrnn import.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402


def cuda_available() -> bool:
    return torch.cuda.is_available()


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    torch.manual_seed(0)


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; this machine has none (torch.cuda)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
