"""The Numba input projection against plain torch, and its determinism."""

import pytest
import torch

from tsrnn.kernels.common import numba_dense

TOL = {torch.float64: dict(rtol=1e-10, atol=1e-12), torch.float32: dict(rtol=1e-5, atol=1e-5)}
DTYPES = pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])


@pytest.fixture(params=["numba", "torch"])
def linear_path(request, monkeypatch):
    """Run :func:`numba_dense.linear` on Numba, or on torch (its path for small products)."""
    work = 0 if request.param == "numba" else 10**18
    monkeypatch.setattr(numba_dense, "NUMBA_LINEAR_MIN_WORK", work)
    return request.param


@DTYPES
@pytest.mark.parametrize(
    ("N", "K", "M"), [(1, 1, 1), (5, 3, 15), (37, 1, 96), (70, 33, 20)], ids=lambda v: str(v)
)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_linear_matches_torch(N, K, M, bias, dtype, linear_path):
    gen = torch.Generator().manual_seed(N * 100 + K * 10 + M)
    x = torch.randn(N, 2, K, dtype=dtype, generator=gen)
    w = torch.randn(M, K, dtype=dtype, generator=gen)
    b = torch.randn(M, dtype=dtype, generator=gen) if bias else None
    got = numba_dense.linear(x, w, b)
    assert got.shape == (N, 2, M) and got.dtype == dtype
    torch.testing.assert_close(got, torch.nn.functional.linear(x, w, b), **TOL[dtype])


def test_linear_accepts_non_contiguous_input(linear_path):
    x = torch.randn(4, 6, 3, dtype=torch.float64).transpose(0, 1)
    w = torch.randn(9, 3, dtype=torch.float64)
    torch.testing.assert_close(numba_dense.linear(x, w, None), x @ w.T, **TOL[torch.float64])


@pytest.mark.skipif(
    __import__("numba").config.NUMBA_NUM_THREADS < 2,
    reason="needs at least 2 Numba threads to compare against 1",
)
def test_results_do_not_depend_on_thread_count(monkeypatch):
    from tsrnn.kernels.common.numba_config import num_threads

    monkeypatch.setattr(numba_dense, "NUMBA_LINEAR_MIN_WORK", 0)
    monkeypatch.setattr(numba_dense, "PARALLEL_MIN_WORK", 0)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(150, 21, 3, generator=gen)
    w = torch.randn(72, 3, generator=gen)
    b = torch.randn(72, generator=gen)
    runs = []
    for n in (1, 2):
        with num_threads(n):
            runs.append(numba_dense.linear(x, w, b))
    assert torch.equal(*runs)
