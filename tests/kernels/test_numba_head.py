"""The fused linear head and squared-error loss against torch's ops, values and gradients."""

import numpy as np
import pytest
import torch

from tsrnn.kernels.common import numba_head


def _reference(hidden, weight, bias, target, scale):
    pred = torch.nn.functional.linear(hidden, weight, bias)
    return torch.sum((pred - target) ** 2) * scale


def _leaves(shape, O, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    H = shape[-1]
    hidden = torch.randn(shape, dtype=dtype, generator=gen, requires_grad=True)
    weight = torch.randn(O, H, dtype=dtype, generator=gen, requires_grad=True)
    bias = torch.randn(O, dtype=dtype, generator=gen, requires_grad=True)
    target = torch.randn(*shape[:-1], O, dtype=dtype, generator=gen)
    return hidden, weight, bias, target


@pytest.fixture(params=["serial", "parallel"])
def head_path(request, monkeypatch):
    """Run the head on one thread, or on Numba's threads (its path for large inputs)."""
    work = 10**18 if request.param == "serial" else 0
    monkeypatch.setattr(numba_head, "PARALLEL_MIN_WORK", work)
    return request.param


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize(
    ("shape", "O"), [((1, 1, 1), 1), ((48, 32, 32), 1), ((7, 5, 13), 3), ((4, 9, 6), 8)]
)
def test_matches_torch_ops(shape, O, dtype, head_path):
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == torch.float64 else dict(rtol=2e-5, atol=1e-4)
    got_in = _leaves(shape, O, dtype, sum(shape) + O)
    want_in = [t.detach().clone().requires_grad_(t.requires_grad) for t in got_in]
    scale = 1.0 / got_in[3].numel()
    got = numba_head.head_sq_loss(*got_in, scale)
    want = _reference(*want_in, scale)
    assert got.shape == () and got.dtype == dtype
    torch.testing.assert_close(got, want, **tol)
    grad = torch.tensor(0.7, dtype=dtype)  # an upstream gradient other than 1
    got.backward(grad)
    want.backward(grad)
    for name, g, w in zip(("hidden", "weight", "bias"), got_in, want_in):
        assert g.grad.shape == w.grad.shape, name
        torch.testing.assert_close(g.grad, w.grad, **tol, msg=lambda m, n=name: f"{n}: {m}")


def test_gradcheck_float64():
    hidden, weight, bias, target = _leaves((3, 4, 5), 2, torch.float64, 0)
    assert torch.autograd.gradcheck(
        lambda h, w, b: numba_head.head_sq_loss(h, w, b, target, 0.3), (hidden, weight, bias)
    )


def test_many_outputs_and_other_dtypes_take_the_torch_ops(monkeypatch):
    calls = []
    monkeypatch.setattr(numba_head._HeadSqLoss, "apply", lambda *a: calls.append(a))
    hidden, weight, bias, target = _leaves((2, 3, 4), numba_head.MAX_OUTPUTS + 1, torch.float64, 1)
    out = numba_head.head_sq_loss(hidden, weight, bias, target, 0.5)
    torch.testing.assert_close(out, _reference(hidden, weight, bias, target, 0.5))
    small = _leaves((2, 3, 4), 1, torch.float16, 2)
    numba_head.head_sq_loss(*small, 0.5)
    assert calls == []
    numba_head.head_sq_loss(*_leaves((2, 3, 4), 1, torch.float32, 3), 0.5)
    assert len(calls) == 1


def test_serial_and_parallel_paths_agree_to_the_bit(monkeypatch):
    """The sums over rows are cut into chunks of fixed size either way (here 3 chunks, the last
    one short), so the thread count never changes a result."""
    leaves = _leaves((2 * numba_head.CHUNK_ROWS + 37, 1, 16), 2, torch.float32, 4)
    runs = []
    for work in (10**18, 0):
        monkeypatch.setattr(numba_head, "PARALLEL_MIN_WORK", work)
        inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in leaves]
        loss = numba_head.head_sq_loss(*inputs, 0.01)
        loss.backward()
        runs.append([loss.detach(), *(t.grad for t in inputs[:3])])
    for a, b in zip(*runs):
        assert torch.equal(a, b)


def test_no_rows_gives_zero_loss_and_gradients(head_path):
    hidden, weight, bias, target = _leaves((0, 3, 4), 2, torch.float32, 5)
    loss = numba_head.head_sq_loss(hidden, weight, bias, target, 1.0)
    loss.backward()
    assert float(loss.detach()) == 0.0
    for t in (hidden, weight, bias):
        assert torch.equal(t.grad, torch.zeros_like(t))


@pytest.mark.parametrize("shape", [(0, 3, 1), (1, 1, 1), (3, 5, 2), (7, 1, 3), (96, 256, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_sum_squares_matches_numpy_in_float64(shape, dtype):
    """The fused ops' loss: the squares summed in float64 whatever the residuals' dtype (8
    running sums, then added in order), to float64 rounding of NumPy's sum."""
    r = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)
    want = float(np.sum(r.astype(np.float64) ** 2))
    got = numba_head.sum_squares(r)
    assert isinstance(got, float)
    assert got == pytest.approx(want, rel=1e-13, abs=0.0)
    assert numba_head.sum_squares(r) == got  # the same order every call
