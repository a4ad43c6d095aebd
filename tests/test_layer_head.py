"""The fused GRU layer + linear head + squared-error loss (``tsrnn.nn.layer_head_sq_loss``)
against torch.nn's GRU, ``F.linear`` and the sum of squares: the loss, the final state and
every gradient; where it applies; and that training steps take it with the same results."""

import numba
import numpy as np
import pandas as pd
import pytest
import torch

import tsrnn.nn as tnn
from tsrnn import RNNForecaster, _training
from tsrnn.kernels.common.numba_head import MAX_OUTPUTS

TOL = {torch.float64: dict(rtol=1e-10, atol=1e-12), torch.float32: dict(rtol=2e-5, atol=2e-6)}


def _setup(T, B, I, H, O, bias, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    ref = torch.nn.GRU(I, H, bias=bias).to(dtype)
    ours = tnn.GRU(I, H, bias=bias, backend="numba").to(dtype)
    ours.load_state_dict(ref.state_dict())
    head = torch.nn.Linear(H, O).to(dtype)
    x = torch.randn(T, B, I, dtype=dtype, generator=gen)
    y = torch.randn(T, B, O, dtype=dtype, generator=gen)
    h0 = 0.5 * torch.randn(1, B, H, dtype=dtype, generator=gen)
    return ours, ref, head, x, y, h0


def _loss_state_grads(fn, params, x, h0, upstream):
    """Loss, final state and the gradients of every parameter, ``x`` and ``h0`` (given), with an
    upstream gradient other than 1 on the loss and one on the final state."""
    for p in params:
        p.grad = None
    x = x.clone().requires_grad_(True)
    h0 = None if h0 is None else h0.clone().requires_grad_(True)
    loss, hn = fn(x, h0)
    (upstream * loss + (0.3 * hn).sum()).backward()
    grads = [p.grad.clone() for p in params] + [x.grad]
    if h0 is not None:
        grads.append(h0.grad)
    return loss.detach(), hn.detach(), grads


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize(
    ("T", "B", "I", "H", "O", "bias"),
    [
        (1, 1, 1, 1, 1, True),
        (7, 5, 3, 6, 1, True),  # H below one float32 vector
        (12, 33, 4, 20, 2, True),  # whole vectors and a tail; blocks of several sizes
        (9, 1, 2, 24, 3, False),
        (30, 17, 2, 32, MAX_OUTPUTS, True),
        (6, 37, 3, 83, 1, True),  # groups of vectors, single ones and a tail; half blocks
    ],
)
@pytest.mark.parametrize("with_h0", [False, True], ids=["h0=None", "h0"])
def test_matches_torch_nn(T, B, I, H, O, bias, dtype, with_h0):
    ours, ref, head, x, y, h0 = _setup(T, B, I, H, O, bias, dtype)
    scale = 1.0 / y.numel()
    h0 = h0 if with_h0 else None

    def fused(x, h0):
        res = tnn.layer_head_sq_loss(ours, x, h0, head.weight, head.bias, y, scale)
        assert res is not None, "the fused op should apply to a one-layer numba GRU"
        return res

    def reference(x, h0):
        out, hn = ref(x, h0)
        pred = torch.nn.functional.linear(out, head.weight, head.bias)
        return ((pred - y) ** 2).sum() * scale, hn

    head_params = list(head.parameters())
    got = _loss_state_grads(fused, list(ours.parameters()) + head_params, x, h0, 0.7)
    want = _loss_state_grads(reference, list(ref.parameters()) + head_params, x, h0, 0.7)
    torch.testing.assert_close(got[0], want[0], **TOL[dtype])
    torch.testing.assert_close(got[1], want[1], **TOL[dtype])
    assert got[1].shape == (1, B, H)
    names = [n for n, _ in ours.named_parameters()] + ["head.weight", "head.bias", "x", "h0"]
    assert len(got[2]) == len(want[2])
    for name, g, w in zip(names, got[2], want[2]):
        torch.testing.assert_close(g, w, **TOL[dtype], msg=lambda m, n=name: f"{n}: {m}")


def test_gradcheck_float64():
    """Finite differences for x, h0 and the head (the recurrent weights live in the module;
    test_matches_torch_nn checks their gradients against torch.nn)."""
    ours, _, head, x, y, h0 = _setup(4, 3, 2, 5, 2, True, torch.float64, seed=1)
    inputs = (
        x.clone().requires_grad_(True),
        h0.clone().requires_grad_(True),
        head.weight.detach().clone().requires_grad_(True),
        head.bias.detach().clone().requires_grad_(True),
    )
    assert torch.autograd.gradcheck(
        lambda x, h0, w_o, b_o: tnn.layer_head_sq_loss(ours, x, h0, w_o, b_o, y, 0.3), inputs
    )


def test_results_do_not_depend_on_the_thread_count():
    ours, _, head, x, y, h0 = _setup(16, 37, 3, 20, 2, True, torch.float32, seed=2)
    params = list(ours.parameters()) + list(head.parameters())
    runs = []
    for n in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        previous = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            runs.append(
                _loss_state_grads(
                    lambda x, h0: tnn.layer_head_sq_loss(
                        ours, x, h0, head.weight, head.bias, y, 0.01
                    ),
                    params,
                    x,
                    h0,
                    1.0,
                )
            )
        finally:
            numba.set_num_threads(previous)
    (l1, s1, g1), (l2, s2, g2) = runs
    assert torch.equal(l1, l2) and torch.equal(s1, s2)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2))


def _args(rnn, dtype=torch.float32, O=1, T=5, B=3):
    x = torch.randn(T, B, rnn.input_size, dtype=dtype)
    head = torch.nn.Linear(rnn.hidden_size, O).to(dtype)
    y = torch.randn(T, B, O, dtype=dtype)
    return x, None, head.weight, head.bias, y, 0.1


@pytest.mark.parametrize(
    "case",
    ["lstm", "two_layers", "bidirectional", "batch_first", "torch_backend", "too_many_outputs"],
)
def test_returns_none_where_it_does_not_apply(case):
    rnn = {
        "lstm": lambda: tnn.LSTM(2, 4),
        "two_layers": lambda: tnn.GRU(2, 4, num_layers=2),
        "bidirectional": lambda: tnn.GRU(2, 4, bidirectional=True),
        "batch_first": lambda: tnn.GRU(2, 4, batch_first=True),
        "torch_backend": lambda: tnn.GRU(2, 4, backend="torch"),
        "too_many_outputs": lambda: tnn.GRU(2, 4),
    }[case]()
    args = _args(rnn, O=MAX_OUTPUTS + 1 if case == "too_many_outputs" else 1)
    assert tnn.layer_head_sq_loss(rnn, *args) is None


def test_returns_none_without_gradients_or_on_a_dtype_mismatch():
    rnn = tnn.GRU(2, 4)
    with torch.no_grad():
        assert tnn.layer_head_sq_loss(rnn, *_args(rnn)) is None
    x, h0, w, b, y, scale = _args(rnn)
    assert tnn.layer_head_sq_loss(rnn, x, h0, w, b, y.double(), scale) is None
    assert tnn.layer_head_sq_loss(rnn, x.double(), h0, w, b, y, scale) is None


def test_bad_state_raises_as_the_layer_does():
    rnn = tnn.GRU(2, 4)
    x, _, w, b, y, scale = _args(rnn)
    with pytest.raises(ValueError, match="hx"):
        tnn.layer_head_sq_loss(rnn, x, torch.zeros(1, 2, 4), w, b, y, scale)


def _counting(real, calls):
    """``real`` (the fused op), recording for each call whether it applied."""

    def counting(*args):
        res = real(*args)
        calls.append(res is not None)
        return res

    return counting


@pytest.mark.parametrize("bptt", [None, 4])
def test_train_step_takes_the_fused_op_with_the_same_results(bptt, monkeypatch):
    """One optimisation step with and without the fused op: the same loss and parameters."""
    torch.manual_seed(3)
    config = dict(cell="gru", input_size=3, hidden_size=12, num_layers=1, n_out=2)
    net = _training.ForecastNet(**config, backend="numba")
    twin = _training.ForecastNet(**config, backend="numba")
    twin.load_state_dict(net.state_dict())
    inputs, targets = torch.randn(10, 6, 3), torch.randn(10, 6, 2)
    calls = []
    counting = _counting(tnn.layer_head_sq_loss, calls)
    results = []
    for model, fused in ((net, True), (twin, False)):
        monkeypatch.setattr(tnn, "layer_head_sq_loss", counting if fused else lambda *a: None)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        loss = _training.train_step(model, opt, inputs, targets, bptt=bptt, clip_norm=1.0)
        results.append((loss, [p.detach().clone() for p in model.parameters()]))
    assert calls and all(calls), "train_step did not take the fused op"
    assert len(calls) == (1 if bptt is None else 3)
    (l1, p1), (l2, p2) = results
    assert l1 == pytest.approx(l2, rel=1e-5)
    for a, b in zip(p1, p2):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_the_forecasters_gru_fit_takes_the_fused_op(monkeypatch):
    """The default model's training (a one-layer GRU on the CPU) runs on the fused op: a change
    that made it fall back would lose its speed without failing any other test."""
    calls = []
    monkeypatch.setattr(tnn, "layer_head_sq_loss", _counting(tnn.layer_head_sq_loss, calls))
    y = pd.Series(np.sin(np.arange(120) / 4.0), index=pd.RangeIndex(120))
    RNNForecaster(hidden_size=8, window=12, max_epochs=2, random_state=0).fit(y)
    assert calls and all(calls)
