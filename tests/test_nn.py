"""tsrnn.nn layers against torch.nn loaded with the same state_dict: outputs and all gradients."""

import contextlib
import pickle
import subprocess
import sys

import pytest
import torch

import tsrnn
import tsrnn.nn as tnn

PAIRS = {
    "rnn_tanh": (tnn.RNN, torch.nn.RNN, {"nonlinearity": "tanh"}),
    "rnn_relu": (tnn.RNN, torch.nn.RNN, {"nonlinearity": "relu"}),
    "gru": (tnn.GRU, torch.nn.GRU, {}),
    "lstm": (tnn.LSTM, torch.nn.LSTM, {}),
}
TOL = {torch.float64: dict(rtol=1e-10, atol=1e-10), torch.float32: dict(rtol=1e-5, atol=2e-5)}
CONFIGS = [
    # (T, B, I, H, num_layers, bidirectional, batch_first, bias)
    (1, 1, 1, 5, 1, False, False, True),
    (7, 3, 2, 6, 2, False, True, True),
    (5, 2, 3, 4, 2, True, False, True),
    (9, 1, 1, 13, 1, True, True, False),
    (4, 5, 3, 8, 3, False, False, False),
]


def _pair(kind, I, H, L, bi, bf, bias, dtype, backend="numba"):
    ours_cls, ref_cls, kw = PAIRS[kind]
    ref = ref_cls(I, H, num_layers=L, bidirectional=bi, batch_first=bf, bias=bias, **kw)
    ref = ref.to(dtype)
    ours = ours_cls(
        I, H, num_layers=L, bidirectional=bi, batch_first=bf, bias=bias, backend=backend, **kw
    ).to(dtype)
    ours.load_state_dict(ref.state_dict())
    return ours, ref


def _run_and_grads(module, x, hx, g_out, g_h):
    module.zero_grad()
    x = x.clone().requires_grad_(True)
    if isinstance(hx, tuple):
        hx = tuple(h.clone().requires_grad_(True) for h in hx)
        leaves = [x, *hx]
    elif hx is not None:
        hx = hx.clone().requires_grad_(True)
        leaves = [x, hx]
    else:
        leaves = [x]
    out, h = module(x, hx)
    states = list(h) if isinstance(h, tuple) else [h]
    loss = (out * g_out).sum() + sum((s * g).sum() for s, g in zip(states, g_h))
    loss.backward()
    grads = [leaf.grad for leaf in leaves] + [p.grad for p in module.parameters()]
    return out.detach(), [s.detach() for s in states], grads


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize(
    "config",
    CONFIGS,
    ids=lambda c: "T{}B{}I{}H{}L{}{}{}{}".format(
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        "bi" if c[5] else "",
        "bf" if c[6] else "",
        "" if c[7] else "nobias",
    ),
)
@pytest.mark.parametrize("kind", list(PAIRS))
@pytest.mark.parametrize("with_hx", [False, True], ids=["no_hx", "hx"])
def test_matches_torch_nn(kind, config, dtype, with_hx):
    T, B, I, H, L, bi, bf, bias = config
    torch.manual_seed(0)
    ours, ref = _pair(kind, I, H, L, bi, bf, bias, dtype)
    D = 2 if bi else 1
    x = torch.randn((B, T, I) if bf else (T, B, I), dtype=dtype)
    hx = None
    n_states = 2 if kind == "lstm" else 1
    if with_hx:
        hs = [torch.randn(L * D, B, H, dtype=dtype) for _ in range(n_states)]
        hx = tuple(hs) if kind == "lstm" else hs[0]
    g_out = torch.randn((B, T, D * H) if bf else (T, B, D * H), dtype=dtype)
    g_h = [torch.randn(L * D, B, H, dtype=dtype) for _ in range(n_states)]
    o1, s1, gr1 = _run_and_grads(ours, x, hx, g_out, g_h)
    o2, s2, gr2 = _run_and_grads(ref, x, hx, g_out, g_h)
    torch.testing.assert_close(o1, o2, **TOL[dtype])
    for a, b in zip(s1, s2):
        torch.testing.assert_close(a, b, **TOL[dtype])
    names = (
        ["input"]
        + (["h0", "c0"][:n_states] if with_hx else [])
        + [n for n, _ in ours.named_parameters()]
    )
    assert len(gr1) == len(gr2) == len(names)
    for name, a, b in zip(names, gr1, gr2):
        torch.testing.assert_close(a, b, **TOL[dtype], msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize("kind", list(PAIRS))
@pytest.mark.parametrize("scale", [1e-2, 1e-4, 1e-6])
def test_float32_small_signals_match_torch_nn_relatively(kind, scale):
    """Small inputs and no biases (unscaled data in small units): outputs and gradients keep
    float32's relative precision. tanh as 2 sigmoid(2x) - 1 was accurate only to 2e-7
    absolute: 1e-3 relative errors at 1e-4, 0.2 at 1e-6."""
    torch.manual_seed(0)
    ours, ref = _pair(kind, 1, 8, 1, False, False, False, torch.float32)
    x = torch.randn(50, 4, 1) * scale
    g_out = torch.randn(50, 4, 8)
    g_h = [torch.randn(1, 4, 8) for _ in range(2 if kind == "lstm" else 1)]
    o1, s1, gr1 = _run_and_grads(ours, x, None, g_out, g_h)
    o2, s2, gr2 = _run_and_grads(ref, x, None, g_out, g_h)
    for a, b in zip([o1, *s1, *gr1], [o2, *s2, *gr2]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * float(b.abs().max()))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("kind", list(PAIRS))
@pytest.mark.parametrize("projection", ["numba", "torch"])
def test_training_shape_matches_torch_nn(kind, dtype, projection, monkeypatch):
    """As in training: the input needs no gradient, the parameters do, and the batch spans more
    blocks than the backward keeps partial weight-gradient sums (``numba_grads.MAX_CHUNKS``:
    chunks of two blocks, the last one short); the whole layer runs as one Numba Function, its
    input projection on Numba or (small products) on torch."""
    from tsrnn.kernels.common import numba_dense, numba_grads

    monkeypatch.setattr(numba_dense, "NUMBA_LINEAR_MIN_WORK", 0 if projection == "numba" else 1e18)
    torch.manual_seed(8)
    ours, ref = _pair(kind, 3, 19, 2, False, False, True, dtype)
    B = numba_grads.BLOCK_ROWS * numba_grads.MAX_CHUNKS + 13
    x = torch.randn(40, B, 3, dtype=dtype)
    g_out = torch.randn(40, B, 19, dtype=dtype)
    outs, grads = [], []
    for module in (ours, ref):
        module.zero_grad()
        out, _ = module(x)
        (out * g_out).sum().backward()
        outs.append(out.detach())
        grads.append([p.grad for p in module.parameters()])
    assert type(ours(x)[0].grad_fn).__name__ == "_NumbaLayerBackward"
    tol = TOL[dtype] if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(outs[0], outs[1], **tol)
    for (name, _), a, b in zip(ours.named_parameters(), *grads):
        torch.testing.assert_close(a, b, **tol, msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize("kind", list(PAIRS))
def test_frozen_weights_still_give_input_gradients(kind):
    """With every parameter frozen the backward skips the weight gradients; the gradients of
    the input and of the initial state(s) still match torch.nn."""
    torch.manual_seed(3)
    ours, ref = _pair(kind, 2, 6, 2, False, False, True, torch.float64)
    for module in (ours, ref):
        module.requires_grad_(False)
    x = torch.randn(5, 11, 2, dtype=torch.float64)
    n_states = 2 if kind == "lstm" else 1
    hs = [torch.randn(2, 11, 6, dtype=torch.float64) for _ in range(n_states)]
    g_out = torch.randn(5, 11, 6, dtype=torch.float64)
    g_h = [torch.randn(2, 11, 6, dtype=torch.float64) for _ in range(n_states)]
    hx = tuple(hs) if kind == "lstm" else hs[0]
    _, _, got = _run_and_grads(ours, x, hx, g_out, g_h)
    _, _, want = _run_and_grads(ref, x, hx, g_out, g_h)
    n_leaves = 1 + n_states
    assert all(g is None for g in got[n_leaves:] + want[n_leaves:])  # frozen: no .grad
    for name, a, b in zip(["input", "h0", "c0"], got[:n_leaves], want[:n_leaves]):
        torch.testing.assert_close(a, b, **TOL[torch.float64], msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_second_order_gradients_need_the_torch_backend(kind):
    """As documented: the kernels' backward is first order; the reference loop gives a
    gradient penalty's gradient equal to torch.nn's."""
    torch.manual_seed(4)
    x = torch.randn(4, 3, 2, dtype=torch.float64, requires_grad=True)

    def penalty_grad(module):
        (g,) = torch.autograd.grad(module(x)[0].square().sum(), x, create_graph=True)
        g.square().sum().backward()
        return module.weight_hh_l0.grad

    ours, ref = _pair(kind, 2, 3, 1, False, False, True, torch.float64, backend="torch")
    torch.testing.assert_close(penalty_grad(ours), penalty_grad(ref), **TOL[torch.float64])
    numba_layer, _ = _pair(kind, 2, 3, 1, False, False, True, torch.float64)
    with pytest.raises(RuntimeError, match="differentiate twice"):
        penalty_grad(numba_layer)


@pytest.mark.parametrize("kind", ["rnn_tanh", "gru", "lstm"])
@pytest.mark.parametrize("outer", ["sum", "last_step_mean"])
def test_second_derivative_of_a_loss_linear_in_the_outputs_raises_too(kind, outer):
    """A loss linear in the outputs sends constant gradients back: ``once_differentiable``
    alone let create_graph=True through, and the penalty's share of the weight gradients was
    dropped without a word (0.0002 against torch.nn's -0.25)."""
    torch.manual_seed(5)
    x = torch.randn(4, 3, 2, dtype=torch.float64, requires_grad=True)
    layer, _ = _pair(kind, 2, 3, 1, False, False, True, torch.float64)
    out = layer(x)[0]
    loss = out.sum() if outer == "sum" else out[-1].mean()
    with pytest.raises(RuntimeError, match=r"differentiate twice.*backend='torch'"):
        torch.autograd.grad(loss, x, create_graph=True)
    # first order, as always
    (g,) = torch.autograd.grad(layer(x)[0].sum(), x)
    assert torch.isfinite(g).all() and g.grad_fn is None


@pytest.mark.parametrize("kind", list(PAIRS))
def test_unbatched_input(kind):
    torch.manual_seed(1)
    ours, ref = _pair(kind, 2, 5, 2, True, False, True, torch.float64)
    x = torch.randn(6, 2, dtype=torch.float64)
    o1, h1 = ours(x)
    o2, h2 = ref(x)
    torch.testing.assert_close(o1, o2)
    assert o1.shape == (6, 10)
    for a, b in zip(h1 if kind == "lstm" else [h1], h2 if kind == "lstm" else [h2]):
        assert a.shape == (4, 5)
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("kind", list(PAIRS))
@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_gradcheck_float64(kind, backend):
    torch.manual_seed(2)
    ours, _ = _pair(kind, 2, 3, 1, False, False, True, torch.float64, backend=backend)
    x = torch.randn(4, 2, 2, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(1, 2, 3, dtype=torch.float64, requires_grad=True)
    params = list(ours.parameters())

    def f(x, h0, *ps):
        with torch.no_grad():
            for p, v in zip(params, ps):
                p.copy_(v)
        # Parameters enter functionally so gradcheck perturbs them too.
        mod = torch.func.functional_call(
            ours,
            dict(zip([n for n, _ in ours.named_parameters()], ps)),
            (x, (h0, torch.zeros_like(h0)) if kind == "lstm" else h0),
        )
        out, h = mod
        hs = h if isinstance(h, tuple) else (h,)
        return (out, *hs)

    inputs = (x, h0, *[p.detach().clone().requires_grad_(True) for p in params])
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", list(PAIRS))
def test_two_chunks_with_carried_state_equal_whole(kind):
    """Truncated BPTT's building block: state carried across chunks gives the same outputs,
    and the gradient w.r.t. the carried state chains the chunks exactly."""
    torch.manual_seed(3)
    ours, _ = _pair(kind, 1, 6, 2, False, False, True, torch.float64)
    x = torch.randn(10, 3, 1, dtype=torch.float64, requires_grad=True)
    out_whole, h_whole = ours(x)
    out_a, h_a = ours(x[:4])
    out_b, h_b = ours(x[4:], h_a)
    torch.testing.assert_close(torch.cat([out_a, out_b]), out_whole)
    for a, b in zip(h_b if kind == "lstm" else [h_b], h_whole if kind == "lstm" else [h_whole]):
        torch.testing.assert_close(a, b)
    g_whole = torch.autograd.grad(out_whole.sum(), x)[0]
    g_chunks = torch.autograd.grad(torch.cat([out_a, out_b]).sum(), x)[0]
    torch.testing.assert_close(g_chunks, g_whole)


@pytest.mark.parametrize("kind", list(PAIRS))
def test_state_dict_both_ways_and_pickle(kind):
    ours_cls, ref_cls, kw = PAIRS[kind]
    ours = ours_cls(3, 4, num_layers=2, bidirectional=True, **kw)
    ref = ref_cls(3, 4, num_layers=2, bidirectional=True, **kw)
    ref.load_state_dict(ours.state_dict())
    assert ours.state_dict().keys() == ref.state_dict().keys()
    x = torch.randn(5, 2, 3)
    torch.testing.assert_close(ours(x)[0], ref(x)[0], rtol=1e-5, atol=1e-5)
    clone = pickle.loads(pickle.dumps(ours))
    assert clone.backend == "auto"
    torch.testing.assert_close(clone(x)[0], ours(x)[0])
    assert isinstance(ours, ref_cls)


def test_dropout_between_layers_only_in_training():
    torch.manual_seed(4)
    gru = tnn.GRU(2, 8, num_layers=2, dropout=0.5)
    x = torch.randn(6, 3, 2)
    gru.eval()
    a, b = gru(x)[0], gru(x)[0]
    torch.testing.assert_close(a, b)
    gru.train()
    torch.manual_seed(5)
    c = gru(x)[0]
    torch.manual_seed(6)
    d = gru(x)[0]
    assert not torch.allclose(c, d)


def test_backends_agree_and_bad_backend():
    torch.manual_seed(7)
    x = torch.randn(5, 2, 3)
    a = tnn.LSTM(3, 4, backend="numba")
    b = tnn.LSTM(3, 4, backend="torch")
    b.load_state_dict(a.state_dict())
    torch.testing.assert_close(a(x)[0], b(x)[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="backend must be one of"):
        tnn.GRU(3, 4, backend="cuda")
    with pytest.raises(tsrnn.BackendUnavailableError, match="float32 and float64"):
        tnn.GRU(3, 4, backend="numba").half()(x.half())


def test_bad_inputs_raise_clear_errors():
    gru = tnn.GRU(3, 4)
    with pytest.raises(ValueError, match="input_size"):
        gru(torch.randn(5, 2, 2))
    with pytest.raises(ValueError, match=r"2-D .* or 3-D"):
        gru(torch.randn(5))
    with pytest.raises(ValueError, match=r"expected hx of size \(1, 2, 4\)"):
        gru(torch.randn(5, 2, 3), torch.zeros(1, 3, 4))
    with pytest.raises(TypeError, match=r"module\.to"):
        gru(torch.randn(5, 2, 3, dtype=torch.float64))


@pytest.mark.parametrize("kind", list(PAIRS))
@pytest.mark.parametrize("batch_first", [False, True])
def test_empty_batch_gives_zero_gradients_as_torch_nn(kind, batch_first):
    ours, ref = _pair(kind, 2, 4, 2, False, batch_first, True, torch.float64)
    x = torch.randn((0, 3, 2) if batch_first else (3, 0, 2), dtype=torch.float64)
    for m in (ours, ref):
        out, h = m(x)
        h = h[0] if isinstance(h, tuple) else h
        assert out.shape == (x.shape[0], x.shape[1], 4) and h.shape == (2, 0, 4)
        (out.sum() + h.sum()).backward()
    for (name, p), q in zip(ours.named_parameters(), ref.parameters(), strict=True):
        assert torch.equal(p.grad, torch.zeros_like(p)), name  # not read from empty memory
        assert torch.equal(q.grad, p.grad), name


@pytest.mark.parametrize("kind", list(PAIRS))
def test_input_without_time_steps_raises(kind):
    ours, _ = _pair(kind, 2, 4, 1, False, True, True, torch.float64)
    with pytest.raises(ValueError, match="no time steps"):
        ours(torch.zeros(3, 0, 2, dtype=torch.float64))  # batch_first: (B, T, I)
    with pytest.raises(ValueError, match="no time steps"):
        ours(torch.zeros(0, 2, dtype=torch.float64))  # unbatched (T, I)


def test_kernels_import_without_pandas_or_sklearn():
    code = (
        "import sys, tsrnn.kernels, tsrnn.nn;"
        "bad = [m for m in ('pandas', 'sklearn') if m in sys.modules];"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_forecaster_imports_without_numba():
    # Numba loads on the first fit or layer call on the CPU, not when the estimator is imported
    # (a GPU or backend='torch' user never needs it).
    code = (
        "import sys; from tsrnn import RNNForecaster;"
        "assert 'numba' not in sys.modules, 'numba imported at start-up'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")  # torch.nn's own size checks
@pytest.mark.filterwarnings("ignore:`torch.jit.trace:DeprecationWarning")
@pytest.mark.parametrize("frozen", [True, False])
@pytest.mark.parametrize("kind", ["gru", "lstm", "rnn_tanh"])
def test_jit_trace_records_a_model_for_any_sequence_length(kind, frozen):
    """The kernels write through NumPy, unseen by the tracer: a traced layer with frozen
    parameters recorded empty outputs, and the reference loop was recorded unrolled at the
    traced length (a longer input cut short, a shorter one an index error). While tracing,
    the layers run torch.nn's own op."""
    torch.manual_seed(0)
    ours, ref = _pair(kind, 3, 4, 2, True, False, True, torch.float32)
    ours.eval().requires_grad_(not frozen)
    traced = torch.jit.trace(ours, (torch.randn(5, 2, 3),))
    for steps in (5, 8, 2):
        x = torch.randn(steps, 2, 3)
        (out, state), (want, want_state) = traced(x), ref(x)
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-6)
        for a, b in zip(*[s if isinstance(s, tuple) else (s,) for s in (state, want_state)]):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


class _Net(torch.nn.Module):
    """A user's model holding a layer."""

    def __init__(self, layer):
        super().__init__()
        self.rnn = layer
        self.head = torch.nn.Linear(layer.hidden_size * (1 + layer.bidirectional), 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


class _NetWithState(torch.nn.Module):
    """A user's model returning the layer's outputs and state."""

    def __init__(self, layer):
        super().__init__()
        self.rnn = layer

    def forward(self, x):
        return self.rnn(x)


@pytest.mark.filterwarnings("ignore:`torch.jit.script:DeprecationWarning")
@pytest.mark.parametrize("kind", list(PAIRS))
def test_jit_script_names_what_works_and_leaves_the_model_alone(kind):
    """The kernels are not TorchScript: torch.jit.script failed inside its compiler with an
    error naming neither the problem nor the fix; then, given the torch.nn layer in the
    layer's place, it wrote that layer into the user's model. It now raises a RuntimeError
    naming the ways that work, and the model keeps its layer."""
    torch.manual_seed(0)
    ours, ref = _pair(kind, 3, 4, 2, True, True, True, torch.float64)
    net = _NetWithState(ours.eval())
    with pytest.raises(RuntimeError, match=r"torch\.export\.export.*state_dict"):
        torch.jit.script(net)
    assert net.rnn is ours and ours.backend == "numba"
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    out, _ = net(x)
    # the way the message names: a model holding the torch.nn layer with this state_dict
    twin = (
        type(ref)(3, 4, num_layers=2, bidirectional=True, batch_first=True, **PAIRS[kind][2])
        .double()
        .eval()
    )
    twin.load_state_dict(ours.state_dict())
    scripted = torch.jit.script(_NetWithState(twin))
    torch.testing.assert_close(scripted(x)[0], out, **TOL[torch.float64])


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch.export's notes on its own ops
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("kind", ["gru", "lstm", "rnn_relu"])
def test_torch_export_exports_torch_nn_op(kind, strict):
    """torch.export traced into the kernels and failed with torch-internal errors; it now
    records torch.nn's op, with torch.nn's results."""
    torch.manual_seed(0)
    ours, _ = _pair(kind, 3, 4, 1, False, True, True, torch.float32)
    x = torch.randn(2, 5, 3)
    net = _Net(ours).eval()
    program = torch.export.export(net, (x,), strict=strict)
    y = torch.randn(2, 5, 3)
    torch.testing.assert_close(program.module()(y), net(y), rtol=1e-5, atol=1e-6)
    # and the layer runs its kernels again after the export
    assert not tnn._exporting()


@pytest.mark.parametrize("kind", ["gru", "lstm", "rnn_tanh"])
def test_make_fx_records_a_graph_that_computes_the_layer(kind):
    """The kernels write through NumPy, unseen by torch's dispatcher: make_fx recorded only
    the outputs' allocation, and its graph returned uninitialised memory (1e36, NaN) without
    an error. Under a dispatch mode the layers run torch.nn's op."""
    from torch.fx.experimental.proxy_tensor import make_fx

    torch.manual_seed(0)
    ours, ref = _pair(kind, 3, 4, 2, True, False, True, torch.float32)
    graph = make_fx(lambda x: ours(x)[0])(torch.randn(5, 2, 3))
    y = torch.randn(5, 2, 3)
    torch.testing.assert_close(graph(y), ref(y)[0], **TOL[torch.float32])
    # the functional form too: its reference loop is recorded
    layer = tnn.GRU(3, 4)
    args = [layer.weight_ih_l0, layer.bias_ih_l0, layer.weight_hh_l0, layer.bias_hh_l0]
    fn = make_fx(lambda x, h: tnn.recurrent_layer("gru", x, *args, h)[0])
    h0 = torch.zeros(2, 4)
    got = fn(torch.randn(5, 2, 3), h0)(y, h0)
    torch.testing.assert_close(got, layer(y)[0], **TOL[torch.float32])


@pytest.mark.parametrize("kind", ["GRU", "LSTM", "RNN"])
def test_fake_tensors_and_flop_counting_see_torch_nn_op(kind):
    """Fake tensors have no data: the kernels' ``.numpy()`` failed with an error naming
    neither problem nor fix. FlopCounterMode counted only the input projection (115,200
    FLOPs of 2,176,512 here)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode

    with FakeTensorMode():
        out, _ = getattr(tnn, kind)(3, 4)(torch.randn(5, 2, 3))
    assert out.shape == (5, 2, 4)
    counts = []
    for module in (getattr(tnn, kind), getattr(torch.nn, kind)):
        torch.manual_seed(0)
        layer = module(3, 16)
        x = torch.randn(50, 8, 3, requires_grad=True)
        with FlopCounterMode(display=False) as counter:
            layer(x)[0].sum().backward()
        counts.append(counter.get_total_flops())
    assert counts[0] == counts[1]
    assert counts[0] > 0 or kind == "LSTM"  # torch counts no FLOPs for its own LSTM op


@pytest.mark.parametrize("kind", list(PAIRS))
def test_fx_symbolic_trace_records_the_layer_as_one_node(kind):
    """torch.fx treats torch.nn's layers as leaves, not these: it traced into the layer and
    its input check failed on the Proxy, advising torch.as_tensor. The layer is now one
    call_module node, and the traced model runs it."""
    torch.manual_seed(0)
    ours, _ = _pair(kind, 3, 4, 1, False, True, True, torch.float32)
    net = _Net(ours)
    traced = torch.fx.symbolic_trace(net)
    calls = [n.target for n in traced.graph.nodes if n.op == "call_module"]
    assert calls == ["rnn", "head"]
    x = torch.randn(2, 5, 3)
    torch.testing.assert_close(traced(x), net(x), rtol=0, atol=0)
    with pytest.raises(TypeError, match="submodule"):
        torch.fx.symbolic_trace(ours)


@pytest.mark.parametrize("frozen", ["parameters", "no_grad"])
@pytest.mark.parametrize("kind", ["gru", "lstm", "rnn_tanh"])
def test_forward_mode_ad_keeps_the_tangent(kind, frozen):
    """Inputs needing no gradient run the kernels on detached tensors: a dual input's tangent
    was dropped (the output's tangent None, a silently wrong JVP). Inside a dual level the
    layers run the reference loop, as torch.nn gives the tangent."""
    import torch.autograd.forward_ad as fwad

    torch.manual_seed(0)
    ours, ref = _pair(kind, 2, 3, 1, False, False, True, torch.float64)
    x, v = torch.randn(4, 2, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64)
    tangents = []
    for module in (ref, ours):
        module.requires_grad_(frozen != "parameters")
        with torch.no_grad() if frozen == "no_grad" else contextlib.nullcontext():
            with fwad.dual_level():
                out, _ = module(fwad.make_dual(x, v))
                tangents.append(fwad.unpack_dual(out).tangent)
    assert tangents[1] is not None
    torch.testing.assert_close(tangents[1], tangents[0], rtol=1e-10, atol=1e-12)


def test_first_layer_call_keeps_torch_thread_count():
    # Starting Numba's OpenMP pool sets the calling thread's OpenMP thread count: a
    # torch.set_num_threads(1) made before was undone by the first layer call.
    code = (
        "import torch, tsrnn.nn as tnn;"
        "torch.set_num_threads(1);"
        "m = tnn.LSTM(3, 8); x = torch.randn(10, 4, 3, requires_grad=True);"
        "m(x)[0].sum().backward();"
        "assert torch.get_num_threads() == 1, torch.get_num_threads()"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("kind", ["GRU", "LSTM", "RNN"])
def test_meta_tensors_give_shapes_as_torch_nn(kind):
    """Shape inference on the meta device (torch.nn does it): the autocast check raised
    'unknown device type for autocast'."""
    ours = getattr(tnn, kind)(3, 4, num_layers=2, device="meta")
    theirs = getattr(torch.nn, kind)(3, 4, num_layers=2, device="meta")
    x = torch.randn(5, 2, 3, device="meta")
    (out, state), (ref, ref_state) = ours(x), theirs(x)
    assert out.device.type == "meta" and out.shape == ref.shape == (5, 2, 4)
    states = state if kind == "LSTM" else (state,)
    ref_states = ref_state if kind == "LSTM" else (ref_state,)
    assert [s.shape for s in states] == [s.shape for s in ref_states]


@pytest.mark.parametrize("kind", ["GRU", "LSTM", "RNN"])
def test_batched_gradients_get_a_message_naming_the_fix(kind):
    """is_grads_batched vmaps the backward: it failed inside the kernel's glue with torch's
    "Batching rule not implemented for aten::detach", which names no fix."""
    layer = getattr(tnn, kind)(2, 3)
    x = torch.randn(4, 2, 2, requires_grad=True)
    out = layer(x)[0]
    v = torch.randn(5, *out.shape)
    with pytest.raises(RuntimeError, match=r"batched gradients .* use backend='torch'"):
        torch.autograd.grad(out, x, v, is_grads_batched=True)


def test_first_calls_from_several_threads_at_once():
    """A layer's first calls in threads at once, in a fresh process (a threaded server's first
    requests): the threads that lost the race to import Numba read its half-made module and
    raised AttributeError (numba.config)."""
    code = """
import threading, torch, tsrnn.nn as tnn
layer, x = tnn.GRU(3, 8), torch.randn(6, 4, 3)
barrier, errors, outs = threading.Barrier(4), [], []
def call():
    barrier.wait()
    try:
        outs.append(layer(x)[0])
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=call) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
assert not errors, errors
assert len(outs) == 4 and all(torch.equal(o, outs[0]) for o in outs)
print("ok")
"""
    for _ in range(2):  # a race: it failed in each of four fresh processes
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def _spy_threads(monkeypatch, module, names):
    """Record ``numba.get_num_threads()`` at each call of the kernel functions ``names``."""
    import numba

    seen = []
    for name in names:
        real = getattr(module, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            seen.append((_name, numba.get_num_threads()))
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    return seen


@pytest.mark.skipif(
    __import__("os").cpu_count() < 2, reason="needs 2 cores to tell one thread from Numba's pool"
)
def test_torch_set_num_threads_bounds_the_kernels(monkeypatch):
    """torch.set_num_threads bounds torch.nn's layers: it bounds these too, in forward and
    backward (the kernels ran on all of Numba's threads whatever torch was told)."""
    import numba

    from tsrnn.kernels.common.numba_config import num_threads
    from tsrnn.kernels.gru import numba_cpu as gru

    layer, x = tnn.GRU(3, 8), torch.randn(6, 4, 3)
    layer(x)  # Numba's pool started
    full = numba.get_num_threads()
    if full < 2:
        pytest.skip("Numba has one thread here (NUMBA_NUM_THREADS=1)")
    seen = _spy_threads(
        monkeypatch, gru, ["forward_projected", "forward", "backward_with_weight_grads"]
    )
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        layer(x)[0].sum().backward()
        with torch.no_grad():
            layer(x)
        assert seen == [
            ("forward_projected", 1), ("backward_with_weight_grads", 1), ("forward_projected", 1)
        ], seen
        seen.clear()
        with num_threads(2):  # an explicit count (a fit's n_threads) rules inside its block
            layer(x)[0].sum().backward()
        assert [n for _, n in seen] == [2, 2], seen
        seen.clear()
        torch.set_num_threads(2)
        layer(x)[0].sum().backward()
        assert [n for _, n in seen] == [2, 2], seen
        seen.clear()
        numba.set_num_threads(1)  # a lower Numba count is kept: the smaller of the two
        layer(x)[0].sum().backward()
        assert [n for _, n in seen] == [1, 1], seen
    finally:
        numba.set_num_threads(full)
        torch.set_num_threads(previous)
    assert numba.get_num_threads() == full


@pytest.mark.parametrize("edited", [("bias_hh_l0", "bias_ih_l0"), ("weight_ih_l0",)])
@pytest.mark.parametrize("kind", list(PAIRS))
def test_parameters_edited_in_place_between_forward_and_backward(kind, edited):
    # torch.nn allows it (an optimizer stepping them before another loss's backward): the
    # kernels' backward does not read b_hh, so it is not saved for it, and weight_ih is saved
    # only for the input's gradient (this input needs none)
    torch.manual_seed(0)
    ours, ref = _pair(kind, 2, 5, 1, False, False, True, torch.float64)
    x = torch.randn(6, 3, 2, dtype=torch.float64)
    grads = []
    for m in (ours, ref):
        out = m(x)[0]
        with torch.no_grad():
            for name in edited:
                getattr(m, name).mul_(0.9).add_(1.0)
        out.sum().backward()
        grads.append([p.grad for p in m.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, **TOL[torch.float64])


def test_relu_nan_output_passes_the_gradient_on_as_torch_does():
    # torch's relu backward is 0 only where the output is <= 0: a NaN step the loss does not
    # read contributes a zero gradient, not NaN (the kernel gave NaN bias gradients)
    torch.manual_seed(0)
    ours, ref = _pair("rnn_relu", 2, 3, 1, False, False, True, torch.float64)
    x = torch.randn(4, 1, 2, dtype=torch.float64)
    x[2, 0, 0] = float("nan")
    for m in (ours, ref):
        m(x)[0][:2].sum().backward()
    assert torch.isfinite(ref.bias_hh_l0.grad).all()
    for a, b in zip(ours.parameters(), ref.parameters()):
        # (the weights' gradients read the NaN step's state: NaN in both)
        torch.testing.assert_close(a.grad, b.grad, equal_nan=True, **TOL[torch.float64])


@pytest.mark.parametrize(("built", "other"), [("tanh", "relu"), ("relu", "tanh")])
def test_rnn_refuses_a_mode_and_nonlinearity_that_disagree(built, other):
    # torch.nn.RNN's forward reads .mode, not .nonlinearity, and tsrnn's packed and traced
    # paths run torch's: the kernel path read .nonlinearity, so one module computed two
    # functions. Changed together they agree with torch.nn; one without the other is refused
    torch.manual_seed(0)
    ours, ref = _pair(f"rnn_{built}", 2, 3, 1, False, False, True, torch.float64)
    x = torch.randn(5, 2, 2, dtype=torch.float64)
    mode = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
    ours.mode = mode[other]
    with pytest.raises(ValueError, match=f"nonlinearity '{built}' does not match mode"):
        ours(x)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, [5, 3])
    with pytest.raises(ValueError, match=f"nonlinearity '{built}' does not match mode"):
        ours(packed)  # torch.nn's own path (super().forward) is checked too
    ours.mode, ours.nonlinearity = mode[built], other
    with pytest.raises(ValueError, match=f"nonlinearity '{other}' does not match mode"):
        ours(x)
    for m in (ours, ref):
        m.mode, m.nonlinearity = mode[other], other
    torch.testing.assert_close(ours(x)[0], ref(x)[0], **TOL[torch.float64])
    out = ours(x)[0]
    if other == "relu":
        assert (out >= 0).all() and (out == 0).any()
    else:
        assert (out < 0).any() and (out.abs() < 1).all()


@pytest.mark.parametrize("cell", ["RNN", "GRU", "LSTM"])
def test_cpu_inputs_stay_on_the_cpu_under_another_default_device(cell):
    """The Numba kernels made their outputs and gradients with torch.empty on torch's default
    device: under torch.device('meta') (or set_default_device('cuda') with a model kept on
    the CPU) the layer failed with "can't convert meta device type tensor to numpy", where
    torch.nn gives its result."""
    torch.manual_seed(0)
    ref = getattr(torch.nn, cell)(3, 4, num_layers=2, bidirectional=True).double()
    layer = getattr(tsrnn.nn, cell)(3, 4, num_layers=2, bidirectional=True).double()
    layer.load_state_dict(ref.state_dict())
    x = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    with torch.device("meta"):
        out, _ = layer(x)
        out.sum().backward()
        grads = [x.grad.clone(), *(p.grad.clone() for p in layer.parameters())]
        x.grad = None
        expected, _ = ref(x)
        expected.sum().backward()
    assert out.device.type == "cpu"
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    for got, want in zip(grads, [x.grad, *(p.grad for p in ref.parameters())], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
