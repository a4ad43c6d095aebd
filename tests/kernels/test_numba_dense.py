"""The Numba input projection and weight gradients against plain torch, and their determinism."""

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


@pytest.fixture(params=["serial", "parallel"])
def grads_path(request, monkeypatch):
    """Run :func:`numba_dense.weight_grads` on one thread, or on the caller's threads from
    the smallest input."""
    work = 10**18 if request.param == "serial" else 0
    monkeypatch.setattr(numba_dense, "GRADS_PARALLEL_MIN_WORK", work)
    return request.param


def _grads_reference(d_gx, x, d_gh, h0, out):
    GH, I, H = d_gx.shape[-1], x.shape[-1], h0.shape[-1]
    h_prev = torch.cat([h0.unsqueeze(0), out[:-1]]).reshape(-1, H)
    a, c = d_gx.reshape(-1, GH), d_gh.reshape(-1, GH)
    return a.T @ x.reshape(-1, I), a.sum(0), c.T @ h_prev, c.sum(0)


def _grads_inputs(T, B, I, H, G, same, dtype, gen):
    x = torch.randn(T, B, I, dtype=dtype, generator=gen)
    d_gx = torch.randn(T, B, G * H, dtype=dtype, generator=gen)
    d_gh = d_gx if same else torch.randn(T, B, G * H, dtype=dtype, generator=gen)
    h0 = torch.randn(B, H, dtype=dtype, generator=gen)
    out = torch.randn(T, B, H, dtype=dtype, generator=gen)
    return d_gx, x, d_gh, h0, out


# (T, B, I, H, G): one row; h0 rows spanning several blocks and chunks (B=300); a block that
# straddles h0 and out (B=7, 37); many chunks (N=2100 > 256); gate widths not a tile multiple.
SHAPES = [
    (1, 1, 1, 1, 1),
    (2, 3, 2, 5, 3),
    (63, 7, 1, 13, 4),
    (300, 7, 9, 13, 3),
    (4, 300, 3, 6, 1),
    (9, 37, 64, 32, 3),
    (3, 0, 2, 5, 3),  # no rows (an empty batch): zero sums
]


@DTYPES
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{}B{}I{}H{}G{}".format(*s))
@pytest.mark.parametrize("same", [False, True], ids=["gru_like", "d_gh_is_d_gx"])
def test_weight_grads_match_torch(shape, same, dtype, grads_path):
    T, B, I, H, G = shape
    gen = torch.Generator().manual_seed(sum(shape))
    args = _grads_inputs(T, B, I, H, G, same, dtype, gen)
    got = numba_dense.weight_grads(*args)
    # Sums of up to 2100 float32 terms of size ~1: compare with exact (float64) sums of the
    # same inputs, to float32 rounding accumulated over that many terms.
    want = _grads_reference(*[a.double() for a in args])
    tol = TOL[dtype] if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-4)
    for name, g, w in zip(("d_w_ih", "d_b_ih", "d_w_hh", "d_b_hh"), got, want):
        assert g.shape == w.shape and g.is_contiguous() and g.dtype == dtype, name
        torch.testing.assert_close(g.double(), w, **tol, msg=lambda m, n=name: f"{n}: {m}")
    # Separate tensors, even when equal: AccumulateGrad may adopt each as a parameter's .grad.
    assert got[1].data_ptr() != got[3].data_ptr()


@pytest.mark.parametrize("N", [1, 255, 256, 257, 8000, 100_000])
def test_chunks_depend_on_rows_only(N):
    rows = numba_dense.chunk_rows(N)
    assert rows % 8 == 0 and rows >= numba_dense.MIN_CHUNK_ROWS
    assert -(-N // rows) <= numba_dense.MAX_CHUNKS


@pytest.mark.skipif(
    __import__("numba").config.NUMBA_NUM_THREADS < 2,
    reason="needs at least 2 Numba threads to compare against 1",
)
@pytest.mark.parametrize("same", [False, True], ids=["gru_like", "d_gh_is_d_gx"])
def test_results_do_not_depend_on_thread_count(same, monkeypatch):
    from tsrnn.kernels.common.numba_config import num_threads

    monkeypatch.setattr(numba_dense, "NUMBA_LINEAR_MIN_WORK", 0)
    monkeypatch.setattr(numba_dense, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(numba_dense, "GRADS_PARALLEL_MIN_WORK", 0)
    gen = torch.Generator().manual_seed(5)
    args = _grads_inputs(150, 21, 3, 24, 3, same, torch.float32, gen)
    w = torch.randn(72, 3, generator=gen)
    b = torch.randn(72, generator=gen)
    runs = []
    for n in (1, 2):
        with num_threads(n):
            runs.append([numba_dense.linear(args[1], w, b), *numba_dense.weight_grads(*args)])
    for a, b in zip(*runs):
        assert torch.equal(a, b)
