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


PATHS = {"one_pass": (1.0, 0.0), "rerun": (0.7, 0.3)}
"""``(upstream, hn_weight)`` of :func:`_loss_state_grads` for the op's two backward paths:
``loss.backward()`` takes the gradients its forward formed in one kernel call; a scaled loss
and a gradient through the final state run the forward again and then the backward kernel."""


def _loss_state_grads(fn, params, x, h0, upstream, hn_weight=0.3):
    """Loss, final state and the gradients of every parameter, ``x`` and ``h0`` (given), with an
    upstream gradient ``upstream`` on the loss and ``hn_weight`` on each final state."""
    for p in params:
        p.grad = None
    x = x.clone().requires_grad_(True)
    h0 = None if h0 is None else h0.clone().requires_grad_(True)
    loss, hn = fn(x, h0)
    if upstream == 1.0 and hn_weight == 0.0:
        loss.backward()
    else:
        (upstream * loss + (hn_weight * hn).sum()).backward()
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
@pytest.mark.parametrize("path", list(PATHS))
def test_matches_torch_nn(T, B, I, H, O, bias, dtype, with_h0, path, monkeypatch):
    ours, ref, head, x, y, h0 = _setup(T, B, I, H, O, bias, dtype)
    upstream, hn_weight = PATHS[path]
    kernel_calls = _count_kernel_calls(monkeypatch)
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
    args = (x, h0, upstream, hn_weight)
    got = _loss_state_grads(fused, list(ours.parameters()) + head_params, *args)
    want = _loss_state_grads(reference, list(ref.parameters()) + head_params, *args)
    # one pass: one call of the forward-and-backward kernel; the rerun: also the forward
    # again and the backward kernel
    expected = ["train_head"] + ([] if path == "one_pass" else ["forward", "backward"])
    assert kernel_calls == expected
    torch.testing.assert_close(got[0], want[0], **TOL[dtype])
    torch.testing.assert_close(got[1], want[1], **TOL[dtype])
    assert got[1].shape == (1, B, H)
    names = [n for n, _ in ours.named_parameters()] + ["head.weight", "head.bias", "x", "h0"]
    assert len(got[2]) == len(want[2])
    for name, g, w in zip(names, got[2], want[2]):
        torch.testing.assert_close(g, w, **TOL[dtype], msg=lambda m, n=name: f"{n}: {m}")


def _count_kernel_calls(monkeypatch):
    """The GRU kernel module's entry points the op calls, recorded in call order."""
    from tsrnn.kernels.gru import numba_cpu

    calls = []
    for name, label in (
        ("train_head", "train_head"),
        ("forward_projected_head", "forward"),
        ("backward_head", "backward"),
    ):
        real = getattr(numba_cpu, name)

        def wrapper(*args, _real=real, _label=label, **kwargs):
            calls.append(_label)
            return _real(*args, **kwargs)

        monkeypatch.setattr(numba_cpu, name, wrapper)
    return calls


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize(
    ("T", "B", "I", "H", "O"),
    [
        (1, 1, 1, 1, 1),
        (7, 5, 3, 6, 2),
        (12, 33, 4, 20, 1),
        (6, 37, 3, 83, 3),
        (9, 70, 2, 64, 1),
        (5, 40, 4, 32, 2),
        (3, 530, 2, 16, 1),  # more blocks than partials: several blocks a chunk
    ],
)
@pytest.mark.parametrize("keep_d_gx", [False, True], ids=["no_d_gx", "d_gx"])
@pytest.mark.parametrize("l2", [None, 1], ids=["16_rows", "8_rows"])
def test_one_pass_kernel_equals_the_two_kernels(T, B, I, H, O, dtype, keep_d_gx, l2, monkeypatch):
    """``train_head`` (forward and backward in one call, a block's saved gates kept in its own
    buffers) against ``forward_projected_head`` then ``backward_head``: the same blocks and
    the same arithmetic per row, so every output agrees to the last bits in float64 and in
    float32 where H is whole SIMD vectors. Not always to the bit: a kernel compiled in this
    process and one loaded from Numba's disk cache can round differently (fastmath lets LLVM
    reorder; seen in float64: ``resid`` 1 ulp apart, each kernel equal to itself whether both
    were compiled fresh or both loaded). The float32 columns past the last whole vector are
    scalar code, which LLVM contracts and reorders as each kernel's context allows: there the
    gate gradients may differ by a few float32 ulp. Both forms take the same block rows, 16
    or 8 (``l2``: the L2 size patched, unknown or too small for any block)."""
    from tsrnn.kernels.common import cpu_caches
    from tsrnn.kernels.gru import numba_cpu

    monkeypatch.setattr(cpu_caches, "l2_bytes", lambda: l2)

    gen = torch.Generator().manual_seed(T * 1000 + B)
    x, y = torch.randn(T, B, I, dtype=dtype, generator=gen), torch.randn(T, B, O, generator=gen)
    y = y.to(dtype)
    w_ih, w_hh = 0.4 * torch.randn(3 * H, I, dtype=dtype), 0.3 * torch.randn(3 * H, H, dtype=dtype)
    b_ih, b_hh = 0.1 * torch.randn(3 * H, dtype=dtype), 0.1 * torch.randn(3 * H, dtype=dtype)
    h0 = 0.5 * torch.randn(B, H, dtype=dtype)
    w_o, b_o = 0.3 * torch.randn(O, H, dtype=dtype), torch.randn(O, dtype=dtype)
    factor = 2.0 / y.numel()
    hn, resid, d_gx, d_h0, *grads = numba_cpu.train_head(
        x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, y, factor, keep_d_gx=keep_d_gx
    )
    out, hn2, resid2, saved = numba_cpu.forward_projected_head(
        x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, y
    )
    d_gx2, d_h02, _, *grads2 = numba_cpu.backward_head(
        torch.zeros_like(h0),
        x,
        w_hh,
        b_hh,
        h0,
        out,
        saved,
        w_o,
        resid2 * factor,
        keep_d_gx=keep_d_gx,
    )
    exact = dtype == torch.float64 or H % 16 == 0

    def check(name, a, b):
        # a few ulp of the largest entry: of the dtype where H is whole vectors, else of float32
        eps = torch.finfo(dtype).eps if exact else 2 * torch.finfo(torch.float32).eps
        torch.testing.assert_close(
            a, b, rtol=0, atol=4 * eps * float(b.abs().max()), msg=lambda m: f"{name}: {m}"
        )

    check("h_n", hn, hn2)
    check("resid", resid, resid2)
    check("d_h0", d_h0, d_h02)
    assert (d_gx is None) == (d_gx2 is None) == (not keep_d_gx)
    if keep_d_gx:
        check("d_gx", d_gx, d_gx2)
    names = ["d_w_ih", "d_b_ih", "d_w_hh", "d_b_hh", "d_w_o", "d_b_o"]
    assert len(grads) == len(grads2) == len(names)
    for name, a, b in zip(names, grads, grads2):
        check(name, a, b)
    assert torch.isfinite(grads[2]).all() and grads[2].abs().sum() > 0


def test_a_second_backward_through_the_graph_gives_the_same_gradients():
    """The one-pass gradients serve one backward; a second (``retain_graph``) runs the forward
    again and the backward kernel, with the same results."""
    ours, _, head, x, y, _ = _setup(8, 6, 3, 10, 1, True, torch.float64)
    loss, _ = tnn.layer_head_sq_loss(ours, x, None, head.weight, head.bias, y, 0.1)
    params = list(ours.parameters()) + list(head.parameters())
    loss.backward(retain_graph=True)
    first = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    loss.backward()
    for a, b in zip(first, [p.grad for p in params]):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


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


@pytest.mark.parametrize("path", list(PATHS))
def test_results_do_not_depend_on_the_thread_count(path):
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
                    *PATHS[path],
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
    [
        "lstm",
        "two_layers",
        "bidirectional",
        "batch_first",
        "torch_backend",
        "too_many_outputs",
        "no_outputs",
    ],
)
def test_returns_none_where_it_does_not_apply(case):
    rnn = {
        "lstm": lambda: tnn.LSTM(2, 4),
        "two_layers": lambda: tnn.GRU(2, 4, num_layers=2),
        "bidirectional": lambda: tnn.GRU(2, 4, bidirectional=True),
        "batch_first": lambda: tnn.GRU(2, 4, batch_first=True),
        "torch_backend": lambda: tnn.GRU(2, 4, backend="torch"),
        "too_many_outputs": lambda: tnn.GRU(2, 4),
        "no_outputs": lambda: tnn.GRU(2, 4),
    }[case]()
    O = {"too_many_outputs": MAX_OUTPUTS + 1, "no_outputs": 0}.get(case, 1)
    args = _args(rnn, O=O)
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


@pytest.mark.parametrize("fn", ["layer_head_sq_loss", "layer_head_sq_loss_grads"])
@pytest.mark.parametrize("bad", ["weight_width", "bias_length"])
def test_bad_head_shapes_are_refused_before_the_kernel(fn, bad):
    """The kernel indexes the head without bounds checks: a weight 50 wide on 5 states ended
    the process (free(): invalid pointer), a bias of 7 for 2 outputs was taken silently."""
    rnn = tnn.GRU(3, 5)
    x, h0, w, b, y, scale = _args(rnn, O=2)
    if bad == "weight_width":
        w = torch.randn(2, 50)
    else:
        b = torch.randn(7)
    with pytest.raises(ValueError, match="the head's weight" if bad == "weight_width" else "bias"):
        getattr(tnn, fn)(rnn, x, h0, w, b, y, scale)


def _counting(real, calls):
    """``real`` (the fused op), recording for each call whether it applied."""

    def counting(*args, **kwargs):
        res = real(*args, **kwargs)
        calls.append(res is not None)
        return res

    return counting


@pytest.mark.parametrize("bptt", [None, 4])
def test_train_step_takes_the_fused_op_with_the_same_results(bptt, monkeypatch):
    """One optimisation step with the fused kernel's gradients (no autograd pass) and with
    neither fused op (the layer, then the head and the loss): the same loss and parameters."""
    torch.manual_seed(3)
    config = dict(cell="gru", input_size=3, hidden_size=12, num_layers=1, n_out=2)
    net = _training.ForecastNet(**config, backend="numba")
    twin = _training.ForecastNet(**config, backend="numba")
    twin.load_state_dict(net.state_dict())
    inputs, targets = torch.randn(10, 6, 3), torch.randn(10, 6, 2)
    calls = []
    counting = _counting(tnn.layer_head_sq_loss_grads, calls)
    results = []
    for model, fused in ((net, True), (twin, False)):
        direct = counting if fused else lambda *a, **k: None
        monkeypatch.setattr(tnn, "layer_head_sq_loss_grads", direct)
        if not fused:
            monkeypatch.setattr(tnn, "layer_head_sq_loss", lambda *a: None)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        loss = _training.train_step(model, opt, inputs, targets, bptt=bptt, clip_norm=1.0)
        results.append((loss, [p.detach().clone() for p in model.parameters()]))
    assert calls and all(calls), "train_step did not take the fused op"
    assert len(calls) == (1 if bptt is None else 3)
    (l1, p1), (l2, p2) = results
    assert l1 == pytest.approx(l2, rel=1e-5)
    for a, b in zip(p1, p2):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_h0", [False, True], ids=["h0=None", "h0"])
def test_direct_gradients_equal_the_autograd_ops(bias, with_h0):
    """``layer_head_sq_loss_grads`` (gradients from one kernel call, no autograd) against
    ``layer_head_sq_loss(...)`` then ``loss.backward()``: the same loss, state and gradient of
    every parameter that asks for one, to the bit (the same kernel); a frozen parameter gets
    none."""
    ours, _, head, x, y, h0 = _setup(11, 21, 3, 24, 2, bias, torch.float32, seed=4)
    h0 = h0 if with_h0 else None
    ours.weight_hh_l0.requires_grad_(False)
    loss, hn = tnn.layer_head_sq_loss(ours, x, h0, head.weight, head.bias, y, 0.05)
    loss.backward()
    got_loss, got_hn, pairs = tnn.layer_head_sq_loss_grads(
        ours, x, h0, head.weight, head.bias, y, 0.05
    )
    assert got_loss == float(loss.detach())
    assert torch.equal(got_hn, hn.detach()) and not got_hn.requires_grad
    wanted = [p for p in list(ours.parameters()) + list(head.parameters()) if p.requires_grad]
    assert [id(p) for p, _ in pairs] == [id(p) for p in wanted]
    assert id(ours.weight_hh_l0) not in [id(p) for p, _ in pairs]
    for p, g in pairs:
        assert torch.equal(g, p.grad)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_direct_gradients_added_in_place_equal_the_returned_ones(bias, dtype):
    """With ``accumulate`` the kernel adds the gradients to the parameters' own ``.grad`` (as a
    fit's flat gradient holds them), bit for bit what ``p.grad.add_(g)`` of the returned ones
    gives, over gradients already there (truncated BPTT's chunks add up); a frozen parameter's
    ``.grad`` is left alone; where a ``.grad`` is missing they come back instead."""
    ours, _, head, x, y, h0 = _setup(9, 13, 3, 20, 2, bias, dtype, seed=6)
    params = list(ours.parameters()) + list(head.parameters())
    ours.weight_ih_l0.requires_grad_(False)
    gen = torch.Generator().manual_seed(1)
    start = [torch.randn(p.shape, generator=gen, dtype=dtype) for p in params]
    loss, hn, pairs = tnn.layer_head_sq_loss_grads(ours, x, h0, head.weight, head.bias, y, 0.05)
    first = {id(p): s for p, s in zip(params, start)}
    want = {id(p): first[id(p)].clone().add_(g) for p, g in pairs}
    assert len(want) == len(params) - 1
    for p, s in zip(params, start):
        p.grad = s.clone()
    frozen = ours.weight_ih_l0.grad.clone()
    got_loss, got_hn, got_pairs = tnn.layer_head_sq_loss_grads(
        ours, x, h0, head.weight, head.bias, y, 0.05, accumulate=True
    )
    assert got_pairs == [] and got_loss == loss and torch.equal(got_hn, hn)
    for p in params[1:]:
        assert torch.equal(p.grad, want[id(p)])
    assert torch.equal(ours.weight_ih_l0.grad, frozen)
    head.bias.grad = None  # one missing: nothing added in place, all returned
    before = [p.grad.clone() for p in params[1:-1]]
    _, _, again = tnn.layer_head_sq_loss_grads(
        ours, x, h0, head.weight, head.bias, y, 0.05, accumulate=True
    )
    assert [id(p) for p, _ in again] == [id(p) for p, _ in pairs]
    for (_, g), (_, g0) in zip(again, pairs):
        assert torch.equal(g, g0)
    for p, b in zip(params[1:-1], before):
        assert torch.equal(p.grad, b)


def test_direct_gradients_decline_where_an_input_asks_for_a_gradient(monkeypatch):
    """Where ``x`` asks for a gradient the direct path declines (it forms none for ``x``), and
    train_step takes the autograd op instead, which gives ``x`` its gradient."""
    ours, _, head, x, y, h0 = _setup(5, 4, 3, 8, 1, True, torch.float32)
    xg = x.clone().requires_grad_(True)
    assert tnn.layer_head_sq_loss_grads(ours, xg, None, head.weight, head.bias, y, 0.1) is None
    h0g = h0.clone().requires_grad_(True)
    assert tnn.layer_head_sq_loss_grads(ours, x, h0g, head.weight, head.bias, y, 0.1) is None
    assert tnn.layer_head_sq_loss_grads(ours, x, None, head.weight, head.bias, y, 0.1) is not None
    net = _training.ForecastNet("gru", 3, 8, 1, 1, backend="numba")
    calls = []
    monkeypatch.setattr(tnn, "layer_head_sq_loss", _counting(tnn.layer_head_sq_loss, calls))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    _training.train_step(net, opt, xg, y)
    assert calls == [True]
    assert xg.grad is not None and xg.grad.abs().sum() > 0


def test_the_forecasters_gru_fit_takes_the_fused_op(monkeypatch):
    """The default model's training (a one-layer GRU on the CPU) runs on the fused op: a change
    that made it fall back would lose its speed without failing any other test."""
    calls = []
    counting = _counting(tnn.layer_head_sq_loss_grads, calls)
    monkeypatch.setattr(tnn, "layer_head_sq_loss_grads", counting)
    y = pd.Series(np.sin(np.arange(120) / 4.0), index=pd.RangeIndex(120))
    RNNForecaster(hidden_size=8, window=12, max_epochs=2, random_state=0).fit(y)
    assert calls and all(calls)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_an_empty_batch_gives_zero_gradients_as_torch_nn(dtype):
    """With no rows the kernel has no chunks: it summed a partial past its empty buffer and
    returned (or added to .grad) uninitialised memory, 1e276 and NaN."""
    ours, ref, head, x, y, _ = _setup(4, 0, 2, 5, 1, True, dtype)
    out = ref(x)[0]
    ((head(out) - y) ** 2).sum().backward()
    params = list(ours.parameters()) + list(head.parameters())
    for p in params:
        p.grad = torch.full_like(p, 3.0)
    loss, _, pairs = tnn.layer_head_sq_loss_grads(
        ours, x, None, head.weight, head.bias, y, 1.0, accumulate=True
    )
    assert float(loss) == 0.0 and pairs == []
    for p in params:
        assert torch.equal(p.grad, torch.full_like(p, 3.0))
    for p in ours.parameters():
        p.grad = None
    loss, _ = tnn.layer_head_sq_loss(ours, x, None, head.weight, head.bias, y, 1.0)
    loss.backward()
    for a, b in zip(ours.parameters(), ref.parameters()):
        assert torch.equal(a.grad, b.grad)  # zeros


def test_one_pass_block_rows_follow_the_l2_cache(monkeypatch):
    """16-row blocks where a block's saves fit one core's L2 (or its size is unknown), else 8:
    at the electricity benchmark's shape (T=96, H=64, I=4, O=1) a 16-row block keeps
    96 * 16 * 326 float32 values (2.0 MB)."""
    from tsrnn.kernels.common import cpu_caches
    from tsrnn.kernels.gru import numba_cpu

    need = 96 * 16 * (5 * 64 + 4 + 2) * 4
    for l2, rows in [(None, 16), (need, 16), (need - 1, 8), (512 * 1024, 8), (4 << 20, 16)]:
        monkeypatch.setattr(cpu_caches, "l2_bytes", lambda l2=l2: l2)
        assert numba_cpu.train_rows(96, 4, 64, 1, 4) == rows, l2
    # float64 keeps twice the bytes
    monkeypatch.setattr(cpu_caches, "l2_bytes", lambda: need)
    assert numba_cpu.train_rows(96, 4, 64, 1, 8) == 8


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("l2", [None, 1], ids=["16_rows", "8_rows"])
@pytest.mark.parametrize("path", list(PATHS))
def test_either_block_size_matches_torch_nn(dtype, l2, path, monkeypatch):
    """The one-pass kernel (and its two-call form) with 16- and with 8-row blocks (the L2
    size patched: unknown, or too small for any block) against torch.nn: B=64 cuts 16-row
    blocks as two halves, 8-row ones as one."""
    from tsrnn.kernels.common import cpu_caches, numba_grads

    monkeypatch.setattr(cpu_caches, "l2_bytes", lambda: l2)
    seen = []
    real_plan = numba_grads.plan

    def plan(*args):
        seen.append(args[-1])
        return real_plan(*args)

    monkeypatch.setattr(numba_grads, "plan", plan)
    ours, ref, head, x, y, h0 = _setup(12, 64, 3, 20, 1, True, dtype, seed=3)
    args = (x, h0, *PATHS[path])
    head_params = list(head.parameters())
    got = _loss_state_grads(
        lambda x, h0: tnn.layer_head_sq_loss(ours, x, h0, head.weight, head.bias, y, 0.01),
        list(ours.parameters()) + head_params,
        *args,
    )

    def reference(x, h0):
        out, hn = ref(x, h0)
        pred = torch.nn.functional.linear(out, head.weight, head.bias)
        return ((pred - y) ** 2).sum() * 0.01, hn

    want = _loss_state_grads(reference, list(ref.parameters()) + head_params, *args)
    assert seen and set(seen) == {16 if l2 is None else 8}
    torch.testing.assert_close(got[0], want[0], **TOL[dtype])
    torch.testing.assert_close(got[1], want[1], **TOL[dtype])
    for g, w in zip(got[2], want[2]):
        torch.testing.assert_close(g, w, **TOL[dtype])
