"""tsrnn.nn's argument checks and its behaviour under torch's transforms (torch.func,
torch.compile, autocast) and in-place edits of its output, against torch.nn."""

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import tsrnn.nn as tnn
from tsrnn.nn import recurrence, recurrent_layer

F64 = dict(rtol=1e-10, atol=1e-10)
CELLS = {
    "rnn": (tnn.RNN, torch.nn.RNN, 1),
    "gru": (tnn.GRU, torch.nn.GRU, 3),
    "lstm": (tnn.LSTM, torch.nn.LSTM, 4),
}


def _pair(cell, *args, dtype=torch.float64, **kwargs):
    ours_cls, ref_cls, _ = CELLS[cell]
    ref = ref_cls(*args, **kwargs).to(dtype)
    ours = ours_cls(*args, **kwargs).to(dtype)
    ours.load_state_dict(ref.state_dict())
    return ours, ref


# --- the state's dtype and device -------------------------------------------------------------


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.float64])
def test_input_of_another_dtype_is_told_a_fix_that_works(cell, dtype):
    layer = CELLS[cell][0](3, 4)
    x = torch.ones(5, 2, 3).to(dtype)
    with pytest.raises(TypeError, match=r"but the parameters are torch\.float32") as err:
        layer(x)
    if dtype.is_floating_point:
        assert "module.to(input.dtype)" in str(err.value)
        layer.to(dtype)(x)  # that fix works
    else:  # a module cannot take an integer dtype: the input must change
        assert "module.to" not in str(err.value)
        assert "input.to(torch.float32)" in str(err.value)
        layer(x.to(torch.float32))


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize(
    ("module_dtype", "state_dtype"),
    [(torch.float32, torch.float64), (torch.float64, torch.float32)],
    ids=["f32_module_f64_state", "f64_module_f32_state"],
)
def test_state_of_another_dtype_raises_as_torch_nn(cell, module_dtype, state_dtype):
    """torch.nn raises a RuntimeError; tsrnn raised a 65-line Numba TypingError."""
    ours, ref = _pair(cell, 3, 4, dtype=module_dtype)
    x = torch.randn(5, 2, 3, dtype=module_dtype)
    h = torch.zeros(1, 2, 4, dtype=state_dtype)
    hx = (h, h) if cell == "lstm" else h
    with pytest.raises(RuntimeError):
        ref(x, hx)
    what = "h_0" if cell == "lstm" else "hx"
    with pytest.raises(RuntimeError, match=rf"{what} is {state_dtype} on cpu but the parameters"):
        ours(x, hx)


def test_lstm_cell_state_of_another_dtype_raises():
    ours, ref = _pair("lstm", 3, 4, dtype=torch.float32)
    x, h = torch.randn(5, 2, 3), torch.zeros(1, 2, 4)
    with pytest.raises(RuntimeError):
        ref(x, (h, h.double()))
    with pytest.raises(RuntimeError, match=r"c_0 is torch\.float64 .* module\.to"):
        ours(x, (h, h.double()))


def test_state_on_another_device_raises():
    gru = tnn.GRU(3, 4)
    with pytest.raises(RuntimeError, match=r"hx is torch\.float32 on meta but the parameters"):
        gru(torch.randn(5, 2, 3), torch.zeros(1, 2, 4, device="meta"))


# --- the functional forms' shapes, dtypes and nonlinearity ------------------------------------

T, B, I, H = 4, 3, 2, 5


def _gx_args(cell, **change):
    G = CELLS[cell][2]
    args = dict(
        gx=torch.randn(T, B, G * H),
        w_hh=torch.randn(G * H, H),
        b_hh=torch.randn(G * H),
        h0=torch.zeros(B, H),
        c0=torch.zeros(B, H) if cell == "lstm" else None,
    )
    args.update(change)
    return args


def _layer_args(cell, **change):
    G = CELLS[cell][2]
    args = dict(x=torch.randn(T, B, I), w_ih=torch.randn(G * H, I), b_ih=torch.randn(G * H))
    args.update((k, v) for k, v in _gx_args(cell).items() if k != "gx")
    args.update(change)
    return args


# (function, cell, changed argument, its bad value, message); G*H = 15 for the GRU. Only the
# shapes matter: the bad values are zeros.
BAD_SHAPES = {
    "h0_batch": (
        "recurrence",
        "gru",
        "h0",
        torch.zeros(B + 2, H),
        r"h0 has shape \(5, 5\), expected \(3, 5\)",
    ),
    "gx_width": (
        "recurrence",
        "gru",
        "gx",
        torch.zeros(T, B, 14),
        r"gx has shape \(4, 3, 14\), expected \(4, 3, 15\)",
    ),
    "w_hh_width": (
        "recurrence",
        "gru",
        "w_hh",
        torch.zeros(15, H + 3),
        r"w_hh has shape \(15, 8\), expected \(15, 5\)",
    ),
    "b_hh_length": (
        "recurrence",
        "gru",
        "b_hh",
        torch.zeros(12),
        r"b_hh has shape \(12,\), expected \(15,\)",
    ),
    "c0_batch": (
        "recurrence",
        "lstm",
        "c0",
        torch.zeros(B + 1, H),
        r"c0 has shape \(4, 5\), expected \(3, 5\)",
    ),
    "c0_missing": ("recurrence", "lstm", "c0", None, r"cell='lstm' needs c0"),
    "c0_not_lstm": ("recurrence", "gru", "c0", torch.zeros(B, H), r"c0 is for cell='lstm' only"),
    "layer_w_ih_width": (
        "recurrent_layer",
        "gru",
        "w_ih",
        torch.zeros(15, I + 5),
        r"w_ih has shape \(15, 7\), expected \(15, 2\)",
    ),
    "layer_b_ih_length": (
        "recurrent_layer",
        "gru",
        "b_ih",
        torch.zeros(5),
        r"b_ih has shape \(5,\), expected \(15,\)",
    ),
    "layer_h0_batch": (
        "recurrent_layer",
        "rnn",
        "h0",
        torch.zeros(B + 2, H),
        r"h0 has shape \(5, 5\), expected \(3, 5\)",
    ),
    "layer_w_hh_rows": (
        "recurrent_layer",
        "lstm",
        "w_hh",
        torch.randn(15, H),
        r"w_hh has shape \(15, 5\), expected \(20, 5\)",
    ),
    "layer_x_2d": ("recurrent_layer", "gru", "x", torch.randn(T, I), r"x must be 3-D \(T, B, I\)"),
    # no steps: the backward's h_{t-1} (h0 then out[:-1]) had B rows against 0 (Triton, Numba)
    "no_steps": ("recurrence", "gru", "gx", torch.zeros(0, B, 15), r"gx has no time steps"),
    "layer_no_steps": ("recurrent_layer", "lstm", "x", torch.zeros(0, B, I), r"x has no time"),
}


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("case", list(BAD_SHAPES))
def test_functional_forms_refuse_mismatched_shapes(case, backend):
    """The Numba kernels index without bounds checks: these ran and returned numbers read
    from past the end of the smaller arrays (backend='torch' failed inside a matmul)."""
    fn_name, cell, arg, value, message = BAD_SHAPES[case]
    fn, make = (recurrence, _gx_args) if fn_name == "recurrence" else (recurrent_layer, _layer_args)
    args = make(cell, **{arg: value})
    with pytest.raises(ValueError, match=message):
        fn(cell, *args.values(), backend=backend)


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("arg", ["w_hh", "h0", "c0", "w_ih", "b_ih"])
def test_functional_forms_refuse_mixed_dtypes(arg, backend):
    args = _layer_args("lstm")
    args[arg] = args[arg].double()
    with pytest.raises(TypeError, match=rf"{arg} is torch\.float64 but x is torch\.float32"):
        recurrent_layer("lstm", *args.values(), backend=backend)


@pytest.mark.parametrize("backend", ["auto", "numba", "torch"])
def test_functional_forms_refuse_a_zero_hidden_size(backend):
    """H = 0 ran forward and failed in the backward's reshape (torch.nn refuses it when the
    layer is made)."""
    gx = torch.zeros(3, 2, 0, requires_grad=True)
    w, b, h0 = torch.zeros(0, 0), torch.zeros(0), torch.zeros(2, 0)
    with pytest.raises(ValueError, match=r"h0 has shape \(2, 0\): the hidden size H"):
        recurrence("gru", gx, w, b, h0, backend=backend)


@pytest.mark.parametrize("fn_name", ["recurrence", "recurrent_layer"])
def test_functional_forms_refuse_integer_tensors(fn_name):
    """backend='auto' sent int64 to the reference loop, which failed at its second step with
    torch's "float != long int", although no tensor was a float."""
    fn, make = (recurrence, _gx_args) if fn_name == "recurrence" else (recurrent_layer, _layer_args)
    args = {k: None if v is None else v.long() for k, v in make("rnn").items()}
    with pytest.raises(TypeError, match=r"is torch\.int64; the recurrence needs floating-point"):
        fn("rnn", *args.values())


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("I", [2, 15])
def test_recurrent_layer_needs_w_ih(I, backend):
    """w_ih=None was read as recurrence's projection: an error about a 'gx' the call never
    had, or, where I == G*H, an AttributeError from inside the kernel."""
    args = _layer_args("gru")
    args["x"] = torch.randn(4, 3, I)
    args["w_ih"] = None
    with pytest.raises(ValueError, match=r"w_ih \(G\*H, I\) is required.*recurrence\("):
        recurrent_layer("gru", *args.values(), backend=backend)


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("nonlinearity", ["Tanh", "sigmoid", None])
def test_functional_forms_refuse_unknown_nonlinearity(nonlinearity, backend):
    """backend='torch' ran ReLU for anything but 'tanh'; Numba raised a bare KeyError."""
    message = rf"Unknown nonlinearity {nonlinearity!r}\. Select from 'tanh' or 'relu'"
    with pytest.raises(ValueError, match=message):
        recurrence("rnn", *_gx_args("rnn").values(), backend=backend, nonlinearity=nonlinearity)
    with pytest.raises(ValueError, match=message):
        recurrent_layer(
            "rnn", *_layer_args("rnn").values(), backend=backend, nonlinearity=nonlinearity
        )


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_functional_forms_match_torch_nn_rnn(nonlinearity):
    ref = torch.nn.RNN(I, H, nonlinearity=nonlinearity).double()
    x = torch.randn(T, B, I, dtype=torch.float64)
    want = ref(x)[0]
    w_ih, w_hh, b_ih, b_hh = (p.detach() for p in ref.parameters())
    h0 = torch.zeros(B, H, dtype=torch.float64)
    for backend in ("numba", "torch"):
        out = recurrent_layer(
            "rnn", x, w_ih, b_ih, w_hh, b_hh, h0, backend=backend, nonlinearity=nonlinearity
        )[0]
        torch.testing.assert_close(out, want, **F64)


@pytest.mark.parametrize(
    ("name", "shape", "message"),
    [
        ("weight_ih_l0", (15, 7), r"weight_ih_l0 has shape \(15, 7\), expected \(15, 3\)"),
        ("weight_hh_l1", (15, 4), r"weight_hh_l1 has shape \(15, 4\), expected \(15, 5\)"),
        ("bias_hh_l0_reverse", (5,), r"bias_hh_l0_reverse has shape \(5,\), expected \(15,\)"),
        ("weight_ih_l1", (15, 5), r"weight_ih_l1 has shape \(15, 5\), expected \(15, 10\)"),
    ],
)
def test_layer_refuses_a_parameter_reassigned_with_a_wrong_shape(name, shape, message):
    """torch.nn fails in a matmul; tsrnn returned an output computed past the arrays' ends."""
    gru = tnn.GRU(3, 5, num_layers=2, bidirectional=True)
    setattr(gru, name, torch.nn.Parameter(torch.randn(shape)))
    with pytest.raises(ValueError, match=rf"^GRU: {message}"):
        gru(torch.randn(4, 2, 3))


def test_layer_refuses_a_parameter_of_another_dtype():
    lstm = tnn.LSTM(3, 5)
    lstm.weight_hh_l0 = torch.nn.Parameter(lstm.weight_hh_l0.detach().double())
    with pytest.raises(TypeError, match=r"weight_hh_l0 is torch\.float64 but input is"):
        lstm(torch.randn(4, 2, 3))


def test_layer_refuses_an_unknown_nonlinearity_set_after_construction():
    rnn = tnn.RNN(3, 5)
    rnn.nonlinearity = "sigmoid"
    with pytest.raises(ValueError, match="nonlinearity 'sigmoid' does not match mode 'RNN_TANH'"):
        rnn(torch.randn(4, 2, 3))


# --- torch.func ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["auto", "numba"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_torch_func_transforms_run_the_reference_and_match_torch_nn(cell, backend):
    """The kernels read raw storage, which functorch's wrapped tensors lack ("Cannot access
    storage of TensorWrapper"): inside a transform the reference loop runs."""
    torch.manual_seed(0)
    ours, ref = _pair(cell, 3, 4, num_layers=2, bidirectional=True)
    ours.backend = backend
    x = torch.randn(5, 2, 3, dtype=torch.float64)
    params = {k: v.detach() for k, v in ref.named_parameters()}

    def grads(m):
        return torch.func.grad(lambda p: torch.func.functional_call(m, p, (x,))[0].square().sum())(
            params
        )

    got, want = grads(ours), grads(ref)
    for k in params:
        torch.testing.assert_close(got[k], want[k], **F64, msg=lambda m, k=k: f"{k}: {m}")
    jac = [torch.func.jacrev(lambda xx, m=m: m(xx)[0].sum(0))(x) for m in (ours, ref)]
    torch.testing.assert_close(jac[0], jac[1], **F64)
    xs = torch.randn(3, 5, 2, 3, dtype=torch.float64)  # torch.nn has no vmap rule: vs a loop
    torch.testing.assert_close(
        torch.func.vmap(lambda xx: ours(xx)[0])(xs), torch.stack([ref(v)[0] for v in xs]), **F64
    )


def test_torch_func_grad_of_the_functional_form():
    args = {k: v.double() for k, v in _layer_args("gru").items() if v is not None}
    x, w_ih, b_ih, w_hh, b_hh, h0 = args.values()

    def loss(w, backend):
        return recurrent_layer("gru", x, w, b_ih, w_hh, b_hh, h0, backend=backend)[0].sum()

    got = torch.func.grad(loss)(w_ih, "numba")
    w = w_ih.clone().requires_grad_(True)
    loss(w, "numba").backward()
    torch.testing.assert_close(got, w.grad, **F64)


# --- torch.compile ------------------------------------------------------------------------


class _Net(torch.nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn
        D = 2 if rnn.bidirectional else 1
        self.head = torch.nn.Linear(D * rnn.hidden_size, 1, dtype=torch.float64)

    def forward(self, x):
        out, h = self.rnn(torch.tanh(x) * 2)
        h = h[0] if isinstance(h, tuple) else h
        return self.head(out).sum() + h.square().sum()


@pytest.mark.parametrize("compile_backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_torch_compile_breaks_the_graph_at_the_layer(cell, compile_backend):
    """Dynamo traced into Numba's dispatcher and failed (AssertionError); the layer is now
    opaque to it: same loss and gradients as eager."""
    torch.manual_seed(1)
    net = _Net(_pair(cell, 3, 4, num_layers=2, bidirectional=True)[0])
    x = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    torch._dynamo.reset()
    compiled = torch.compile(net, backend=compile_backend)
    leaves = [x, *net.parameters()]
    for _ in range(2):  # the first call compiles, the second runs the compiled graphs
        got = compiled(x)
        got_grads = torch.autograd.grad(got, leaves)
    want = net(x)
    want_grads = torch.autograd.grad(want, leaves)
    torch.testing.assert_close(got, want, **F64)
    for a, b in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(a, b, **F64)


def test_torch_compile_of_the_functional_form():
    args = {k: v.double() for k, v in _layer_args("lstm").items()}

    def f(x, backend):
        out, _, c = recurrent_layer("lstm", x, *list(args.values())[1:], backend=backend)
        return out.sum() * 2 + c.sum()

    torch._dynamo.reset()
    compiled = torch.compile(f, backend="eager")
    torch.testing.assert_close(compiled(args["x"], "numba"), f(args["x"], "numba"), **F64)


def test_torch_compile_of_a_layer_in_a_fresh_interpreter():
    """The reviewer's case, which the tests above cannot reproduce once any kernel has run in
    the process: the layer's first call is compiled, Dynamo traced into Numba's first-use
    set-up and failed with an AssertionError."""
    code = """
import torch, tsrnn.nn as tnn
torch.manual_seed(0)
x = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
for m in (tnn.GRU(3, 4, num_layers=2).double(), tnn.LSTM(3, 4, bidirectional=True).double()):
    got = torch.compile(m, backend="eager")(x)[0]  # the first call of any kernel
    (g_got,) = torch.autograd.grad(got.square().sum(), x)
    want = m(x)[0]
    (g_want,) = torch.autograd.grad(want.square().sum(), x)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g_got, g_want, rtol=1e-12, atol=1e-12)
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def test_eager_layers_do_not_import_dynamo():
    """torch.compiler.disable imports torch._dynamo (about a second): tsrnn.nn makes its
    disabled functions only once something else has imported it."""
    code = """
import sys, torch, tsrnn.nn as tnn
tnn.GRU(3, 4)(torch.randn(5, 2, 3))
tnn.recurrent_layer("rnn", torch.randn(5, 2, 3), torch.randn(4, 3), None,
                    torch.randn(4, 4), torch.zeros(4), torch.zeros(2, 4))
assert "torch._dynamo" not in sys.modules, "tsrnn.nn imported torch._dynamo"
"""
    subprocess.run([sys.executable, "-c", code], check=True)


# --- in-place edits of the output, autocast: documented differences ------------------------


@pytest.mark.parametrize("cell", list(CELLS))
def test_inplace_edit_of_the_output_raises_and_a_clone_fixes_it(cell):
    """The kernels save the output for backward: an in-place edit is caught by autograd's
    version counter (as for torch.nn.LSTM on CPU), never a silently wrong gradient.
    docs/api-notes.md gives the fix: an out-of-place op or out.clone() first."""
    torch.manual_seed(2)
    ours, ref = _pair(cell, 3, 4)
    x = torch.randn(5, 2, 3, dtype=torch.float64)
    out, _ = ours(x)
    F.relu(out, inplace=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    ours.zero_grad()
    for m in (ours, ref):
        out = m(x)[0].clone()
        F.relu(out, inplace=True)
        out.sum().backward()
    for (name, p), q in zip(ours.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, **F64, msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_cpu_autocast_runs_in_the_parameters_dtype(cell, backend):
    """As documented: under CPU autocast(bfloat16) the layers compute and return float32
    (torch.nn's RNN and LSTM return bfloat16), on every backend: the torch reference's
    projection and matmuls, autocast ops, ran in bfloat16 (2e-3 off)."""
    ours, _ = _pair(cell, 3, 4, num_layers=2, dtype=torch.float32)
    ours.backend = backend
    x = torch.randn(5, 2, 3)
    want = ours(x)[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = ours(x)[0]
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    # the functional form too
    args = (x, ours.weight_ih_l0, ours.bias_ih_l0, ours.weight_hh_l0, ours.bias_hh_l0)
    h0 = torch.zeros(2, 4)
    state = (h0, h0 if cell == "lstm" else None)
    want = tnn.recurrent_layer(cell, *args, *state, backend=backend)[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = tnn.recurrent_layer(cell, *args, *state, backend=backend)[0]
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    gx = torch.nn.functional.linear(x, ours.weight_ih_l0, ours.bias_ih_l0)
    recur = (gx, ours.weight_hh_l0, ours.bias_hh_l0, *state)
    want = tnn.recurrence(cell, *recur, backend=backend)[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = tnn.recurrence(cell, *recur, backend=backend)[0]
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("cell", list(CELLS))
def test_cpu_autocast_takes_the_bfloat16_output_of_an_autocast_op(cell):
    """The usual model, Linear then the layer: under autocast the Linear returns bfloat16,
    which torch.nn's layers accept (their dtype check is off under autocast) and ours refused
    with a TypeError. They run it (and a bfloat16 state) in the parameters' dtype."""
    ours, ref = _pair(cell, 3, 4, dtype=torch.float32)
    lin = torch.nn.Linear(2, 3)
    x = torch.randn(5, 2, 2)
    h = torch.zeros(1, 2, 4, dtype=torch.bfloat16)
    hx = (h, h) if cell == "lstm" else h
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = lin(x)
        assert z.dtype == torch.bfloat16
        got, _ = ours(z, hx)
        want, _ = ref(z, hx)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, ours(z.float())[0], rtol=0, atol=0)
    torch.testing.assert_close(got, want.float(), rtol=2e-2, atol=2e-2)



def test_cpu_autocast_keeps_a_namedtuple_state_and_refuses_float64_input():
    """The state was rebuilt with its own type (a namedtuple's constructor takes fields, not
    an iterable: TypeError), and a float64 input was cast to float32 silently, where torch.nn
    refuses it under autocast as without."""
    import collections

    HC = collections.namedtuple("HC", "h c")
    ours, _ = _pair("lstm", 3, 5, dtype=torch.float32)
    x, hc = torch.randn(4, 2, 3), HC(torch.zeros(1, 2, 5), torch.zeros(1, 2, 5))
    want = ours(x, hc)[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.testing.assert_close(ours(x, hc)[0], want, rtol=0, atol=0)
        with pytest.raises(TypeError, match="float64"):
            ours(x.double())
