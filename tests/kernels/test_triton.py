"""Triton kernels (``kernels/*/triton_gpu.py``) against the references and ``torch.nn``.

On a CPU-only machine the kernels run in Triton's interpreter (``TRITON_INTERPRET=1``, set by
``tests/conftest.py``), which costs milliseconds per step: shapes stay tiny but awkward (T in
{1, 3}, B in {1, 3}, H in {5, 16} and 24, none of them a tile size). On a CUDA machine the same
unmarked tests run the compiled kernels on CUDA tensors (``DEVICE``), and the tests marked
``gpu`` add larger shapes, cuDNN and float64 comparisons; the ``gpu`` tests skip under the
interpreter. Run them all with ``TRITON_INTERPRET=0 pytest tests/kernels/test_triton.py``, or with
``scripts/gpu-check.sh`` (which also prints the GPU speed tables). On an H100: the 35 ``gpu``
tests here passed on 2026-11-23; on 2026-11-24 the unmarked tests, run compiled for the first time,
found float32 exp, sigmoid and tanh 1e-6 off (fixed in ``triton_utils``; see
``test_activation_helpers_are_accurate``).

Dimension legend: T time steps, B batch, I input size, H hidden size, G gates.
"""

from __future__ import annotations

import copy
import importlib
import itertools
import warnings

import pytest
import torch

triton = pytest.importorskip("triton")  # before the imports that need it: skip, not error

import triton.language as tl  # noqa: E402

import tsrnn.nn  # noqa: E402
from tsrnn.exceptions import FallbackWarning  # noqa: E402
from tsrnn.kernels.common import triton_utils as tu  # noqa: E402
from tsrnn.kernels.common.registry import triton_interpreted  # noqa: E402

CELLS = {  # test id -> (cell, nonlinearity, torch.nn layer name)
    "rnn-tanh": ("rnn", "tanh", "RNN"),
    "rnn-relu": ("rnn", "relu", "RNN"),
    "gru": ("gru", None, "GRU"),
    "lstm": ("lstm", None, "LSTM"),
}

# float32: a few ulp per step over T <= 3 steps (observed <= 5e-7 absolute on O(1) values);
# float64: round-off only; bfloat16: outputs are rounded to 8 bits (2^-8 = 0.4 % relative), and
# on a GPU the recurrent product also takes bf16 operands, so several bf16 ulp.
TOL = {
    torch.float32: dict(rtol=1e-5, atol=2e-6),
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.bfloat16: dict(rtol=4e-2, atol=4e-2),
}
# Layers against torch.nn: compiled on a GPU, float32 products are tf32x3 (see
# triton_utils.FP32_PRECISION) in the kernels and cuDNN's own order on torch's side; at T = 3
# they differed by up to 1e-5 (H100, measured before the float32 exp fix of 2026-11-24), where
# test_gpu_layer_matches_torch_nn measures each against float64 over 50 steps. In the
# interpreter both sides are plain fp32: TOL holds.
LAYER_TOL = {} if triton_interpreted() else {torch.float32: dict(rtol=1e-4, atol=1e-5)}
DTYPE_IDS = {torch.float32: "f32", torch.float64: "f64", torch.bfloat16: "bf16"}

compiled_only = pytest.mark.skipif(
    triton_interpreted(),
    reason="tests the compiled kernels; run with TRITON_INTERPRET=0 on a CUDA machine",
)

# Where the unmarked tests run the kernels: CPU tensors in the interpreter (CI), CUDA tensors
# compiled on a GPU machine, so that the same checks (NaN, empty inputs, the fallback, the
# layers against torch.nn) cover the compiled kernels too.
DEVICE = "cpu" if triton_interpreted() else "cuda"


@pytest.fixture(autouse=True)
def _kernels_need_the_interpreter_or_a_gpu():
    # Outside the interpreter Triton runs CUDA tensors only.
    if not triton_interpreted() and not torch.cuda.is_available():
        pytest.skip("compiled Triton kernels need a CUDA GPU; set TRITON_INTERPRET=1 to run "
                    "them on the CPU in Triton's interpreter")


@pytest.fixture(autouse=True)
def no_tf32(monkeypatch):
    """Full fp32 products in the kernels, the reference's matmuls and cuDNN alike (on a GPU,
    torch lets cuDNN use TF32 by default: 1e-3 relative errors on the torch.nn side). Only
    where CUDA is: on a CPU build ``torch.backends.cuda.matmul.allow_tf32`` is served by the
    module's ``__getattr__``, and monkeypatch's undo (``delattr``) raises there."""
    if torch.cuda.is_available():
        monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
        monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)


def _modules(cell):
    return (importlib.import_module(f"tsrnn.kernels.{cell}.triton_gpu"),
            importlib.import_module(f"tsrnn.kernels.{cell}.reference"))


def _options(nonlinearity):
    return {"nonlinearity": nonlinearity} if nonlinearity else {}


def _inputs(cell, T, B, H, dtype, device=DEVICE, seed=0):
    """Kernel inputs (gx, w_hh, b_hh, h0, c0) with the scales of an initialised layer."""
    gen = torch.Generator().manual_seed(seed)
    G = {"rnn": 1, "gru": 3, "lstm": 4}[cell]

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(
            device=device, dtype=dtype)

    c0 = rand(B, H) if cell == "lstm" else None
    return rand(T, B, G * H), rand(G * H, H, scale=H**-0.5), rand(G * H, scale=0.3), \
        rand(B, H), c0


def _cotangents(out, hn, cn, seed=1):
    gen = torch.Generator().manual_seed(seed)

    def like(t):
        if t is None:
            return None
        return torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t)

    return like(out), like(hn), like(cn)


def _assert_close(actual, expected, dtype, what, tol=None):
    if expected is None:
        assert actual is None, what
        return
    torch.testing.assert_close(actual.to(torch.float64), expected.to(torch.float64),
                               **(tol or TOL[dtype]), msg=lambda m: f"{what}: {m}")


def _check_against_reference(name, T, B, H, dtype, device=DEVICE, tol=None):
    """Forward and backward of the Triton kernel vs the reference (float64 oracle for bf16)."""
    cell, nonlinearity, _ = CELLS[name]
    kernel, reference = _modules(cell)
    opts = _options(nonlinearity)
    gx, w, b, h0, c0 = _inputs(cell, T, B, H, dtype, device)
    out, hn, cn, saved = kernel.forward(gx, w, b, h0, c0, save=True, **opts)
    assert out.dtype == hn.dtype == dtype and out.shape == (T, B, H)

    oracle = torch.float64 if dtype == torch.bfloat16 else dtype

    def up(t):
        return None if t is None else t.to(oracle)

    r_out, r_hn, r_cn, _ = reference.forward(up(gx), up(w), up(b), up(h0), up(c0), **opts)
    _assert_close(out, r_out, dtype, "out", tol)
    _assert_close(hn, r_hn, dtype, "h_n", tol)
    _assert_close(cn, r_cn, dtype, "c_n", tol)

    g_out, g_hn, g_cn = _cotangents(out, hn, cn)
    got = kernel.backward(g_out, g_hn, g_cn, gx if kernel.BACKWARD_NEEDS_GX else None, w, b,
                          h0, c0, out, saved, **opts)
    if nonlinearity == "relu" and dtype == torch.bfloat16 and device != "cpu":
        want = _relu_backward_with_kinks_of(out, up(g_out), up(g_hn), up(gx), up(w), up(b),
                                            up(h0))
    else:
        want = reference.backward(up(g_out), up(g_hn), up(g_cn), up(gx), up(w), up(b),
                                  up(h0), up(c0), r_out, (), **opts)
    for what, a, e in zip(("d_gx", "d_gh", "d_h0", "d_c0"), got, want):
        _assert_close(a, e, dtype, what, tol)


def _relu_backward_with_kinks_of(out, g_out, g_hn, gx, w, b, h0):
    """Float64 gradients of the ReLU RNN, with ReLU's derivative taken where ``out`` is > 0.

    On a GPU the bfloat16 product rounds ``h`` to 8 bits, so a unit whose pre-activation lies
    within that rounding of 0 can land on the other side of the kink than in float64, and its
    gradient then differs by all of ``dh``, which flows on to earlier steps. Given the kernel's
    own choice of active units (``out > 0``) the recurrence is linear and the oracle exact.
    """
    active = (out > 0).to(torch.float64)
    gx, w, b, h0 = (t.detach().clone().requires_grad_(True) for t in (gx, w, b, h0))
    h, outs = h0, []
    for t in range(gx.shape[0]):
        h = (gx[t] + h @ w.T + b) * active[t]
        outs.append(h)
    d_gx, d_h0 = torch.autograd.grad([torch.stack(outs), h], [gx, h0], [g_out, g_hn])
    return d_gx, d_gx, d_h0, None


SHAPES = list(itertools.product((1, 3), (1, 3), (5, 16)))  # (T, B, H)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{}-B{}-H{}".format(*s))
@pytest.mark.parametrize("name", list(CELLS))
def test_kernel_matches_reference_float32(name, shape):
    _check_against_reference(name, *shape, torch.float32)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=DTYPE_IDS.get)
@pytest.mark.parametrize("name", list(CELLS))
def test_kernel_matches_reference_other_dtypes(name, dtype):
    _check_against_reference(name, 3, 3, 5 if dtype == torch.float64 else 16, dtype)


@pytest.mark.parametrize("dtype", list(TOL), ids=DTYPE_IDS.get)
@pytest.mark.parametrize("name", list(CELLS))
def test_streamed_mode_matches_reference(name, dtype, monkeypatch):
    """Weights streamed per step in 16-wide chunks: H = 24 gives a full and a partial chunk."""
    monkeypatch.setattr(tu, "RESIDENT_BYTES", 0)
    monkeypatch.setattr(tu, "STREAM_CHUNK", 16)
    p = tu.plan(3, 24, 1, dtype, torch.device(DEVICE))
    assert (p.RESIDENT, p.CH, p.NCH) == (False, 16, 2)
    _check_against_reference(name, 3, 3, 24, dtype)


@pytest.mark.parametrize("streamed", [False, True], ids=["resident", "streamed"])
@pytest.mark.parametrize("name", ["rnn-tanh", "gru", "lstm"])
def test_several_batch_tiles(name, streamed, monkeypatch):
    """B = 17 needs two 16-row programs; each indexes its own rows of the scratch buffers."""
    if streamed:
        monkeypatch.setattr(tu, "RESIDENT_BYTES", 0)
        monkeypatch.setattr(tu, "STREAM_CHUNK", 16)
    assert tu.plan(17, 24, 1, torch.float32, torch.device(DEVICE)).n_prog == 2
    _check_against_reference(name, 2, 17, 24, torch.float32)


def _layer_pair(name, dtype, input_size=2, hidden_size=5, **kwargs):
    _, nonlinearity, layer = CELLS[name]
    if nonlinearity:
        kwargs["nonlinearity"] = nonlinearity
    torch.manual_seed(0)
    ref = getattr(torch.nn, layer)(input_size, hidden_size, **kwargs).to(DEVICE, dtype)
    mine = getattr(tsrnn.nn, layer)(input_size, hidden_size, backend="triton", **kwargs)
    mine = mine.to(DEVICE, dtype)
    mine.load_state_dict(ref.state_dict())
    return ref, mine


def _layer_grads(module, x, hx, cotangents):
    """Outputs and the gradients of input, hx and every parameter, in parameter order."""
    out, state = module(x, hx)
    outs = [out, *state] if isinstance(state, tuple) else [out, state]
    hxs = list(hx) if isinstance(hx, tuple) else [hx]
    grads = torch.autograd.grad(outs, [x, *hxs, *module.parameters()], cotangents)
    return outs, grads


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16],
                         ids=DTYPE_IDS.get)
@pytest.mark.parametrize("name", list(CELLS))
def test_layer_matches_torch_nn(name, dtype):
    """tsrnn.nn layer on backend='triton' vs torch.nn with the same state_dict: output, final
    state and the gradients of input, every parameter and hx, with random cotangents for the
    output and the final state."""
    ref, mine = _layer_pair(name, dtype)
    T, B, I, H = 3, 3, 2, 5
    gen = torch.Generator().manual_seed(2)

    def rand(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).to(DEVICE, dtype)

    x = rand(T, B, I).requires_grad_(True)
    if CELLS[name][2] == "LSTM":
        hx = (rand(1, B, H).requires_grad_(True), rand(1, B, H).requires_grad_(True))
        cot = [rand(T, B, H), rand(1, B, H), rand(1, B, H)]
    else:
        hx = rand(1, B, H).requires_grad_(True)
        cot = [rand(T, B, H), rand(1, B, H)]
    if dtype == torch.bfloat16:
        # torch.nn in bf16 rounds every intermediate; compare both with a float64 torch.nn
        # run on the same (bf16-representable) values instead.
        ref = ref.double()
        x_ref = x.detach().double().requires_grad_(True)
        hx_ref = (tuple(h.detach().double().requires_grad_(True) for h in hx)
                  if isinstance(hx, tuple) else hx.detach().double().requires_grad_(True))
        cot_ref = [c.double() for c in cot]
    else:
        x_ref, hx_ref, cot_ref = x, hx, cot
    want_outs, want_grads = _layer_grads(ref, x_ref, hx_ref, cot_ref)
    got_outs, got_grads = _layer_grads(mine, x, hx, cot)
    names = ["input", "h_0", "c_0"][: 1 + len(hx) if isinstance(hx, tuple) else 2]
    names += [n for n, _ in mine.named_parameters()]
    for what, a, e in zip(["output", "h_n", "c_n"], got_outs, want_outs):
        _assert_close(a, e, dtype, what, LAYER_TOL.get(dtype))
    for what, a, e in zip(names, got_grads, want_grads):
        _assert_close(a, e, dtype, f"grad {what}", LAYER_TOL.get(dtype))


@pytest.mark.parametrize("name", list(CELLS))
def test_layer_stacked_bidirectional_batch_first(name):
    """Two layers, both directions, batch-first, default hx: every kernel call of a layer."""
    ref, mine = _layer_pair(name, torch.float32, 3, 5, num_layers=2, bidirectional=True,
                            batch_first=True)
    x = torch.randn(2, 3, 3, device=DEVICE, requires_grad=True)  # (B, T, I)
    o1, o2 = ref(x)[0], mine(x)[0]
    go = torch.randn_like(o1)
    g1 = torch.autograd.grad(o1, [x, *ref.parameters()], go)
    g2 = torch.autograd.grad(o2, [x, *mine.parameters()], go)
    _assert_close(o2, o1, torch.float32, "output", LAYER_TOL.get(torch.float32))
    for (what, _), a, e in zip([("input", None), *mine.named_parameters()], g2, g1):
        _assert_close(a, e, torch.float32, f"grad {what}", LAYER_TOL.get(torch.float32))


@pytest.mark.parametrize("name", list(CELLS))
def test_gradcheck_float64(name):
    """``torch.autograd.gradcheck`` of the differentiable ``tsrnn.nn.recurrence`` on Triton."""
    cell, nonlinearity, _ = CELLS[name]
    gx, w, b, h0, c0 = _inputs(cell, 2, 1, 2, torch.float64)
    inputs = [t.requires_grad_(True) for t in (gx, w, b, h0, c0) if t is not None]

    def run(*args):
        out, hn, cn = tsrnn.nn.recurrence(cell, *args, backend="triton",
                                          nonlinearity=nonlinearity or "tanh")
        return (out, hn) if cn is None else (out, hn, cn)

    # fast mode: one random directional derivative per input instead of full Jacobians, which
    # would cost the interpreter hundreds of kernel runs
    assert torch.autograd.gradcheck(run, inputs, eps=1e-6, atol=1e-7, fast_mode=True)


@pytest.mark.parametrize("name", list(CELLS))
def test_gh_offset_and_no_save(name):
    """The reference's ``gh_offset`` hook enters the pre-activation the same way; with
    ``save=False`` nothing is kept and the results do not change."""
    cell, nonlinearity, _ = CELLS[name]
    kernel, reference = _modules(cell)
    opts = _options(nonlinearity)
    gx, w, b, h0, c0 = _inputs(cell, 3, 3, 5, torch.float32)
    offset = torch.randn(gx.shape, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    got = kernel.forward(gx, w, b, h0, c0, gh_offset=offset, save=False, **opts)
    want = reference.forward(gx, w, b, h0, c0, gh_offset=offset, **opts)
    assert got[3] == ()
    for what, a, e in zip(("out", "h_n", "c_n"), got[:3], want[:3]):
        _assert_close(a, e, torch.float32, what)


@pytest.mark.parametrize("name", list(CELLS))
def test_empty_sequence_and_batch(name):
    cell, nonlinearity, _ = CELLS[name]
    kernel, _ = _modules(cell)
    opts = _options(nonlinearity)
    gx, w, b, h0, c0 = _inputs(cell, 0, 2, 5, torch.float32)
    out, hn, cn, saved = kernel.forward(gx, w, b, h0, c0, **opts)
    assert out.shape == (0, 2, 5)
    torch.testing.assert_close(hn, h0)
    if c0 is not None:
        torch.testing.assert_close(cn, c0)
    g = torch.ones_like(h0)
    d_gx, _, d_h0, d_c0 = kernel.backward(out, g, None if c0 is None else 2 * g, None, w, b, h0,
                                          c0, out, saved, **opts)
    assert d_gx.shape == gx.shape
    torch.testing.assert_close(d_h0, g)
    if c0 is not None:
        torch.testing.assert_close(d_c0, 2 * g)
    gx, w, b, h0, c0 = _inputs(cell, 2, 0, 5, torch.float32)
    out, hn, _, _ = kernel.forward(gx, w, b, h0, c0, **opts)
    assert out.shape == (2, 0, 5) and hn.shape == (0, 5)


def test_plan_tiles_and_modes():
    cpu = torch.device("cpu")
    p = tu.plan(3, 5, 4, torch.float32, cpu)
    assert p.RESIDENT and p.CH == 16 and p.NCH == 1 and p.BLOCK_B >= 16 and p.n_prog == 1
    p = tu.plan(40, 48, 3, torch.float64, cpu)
    assert p.BLOCK_B >= 16 and p.n_prog * p.BLOCK_B >= 40 and p.CH & (p.CH - 1) == 0
    # fp32 LSTM with H = 256 has 1 MiB of weights: they cannot stay on chip
    p = tu.plan(8, 256, 4, torch.float32, cpu)
    assert not p.RESIDENT and p.CH * p.NCH >= 256
    assert tu.plan(8, 5, 1, torch.float32, cpu).precision == "ieee"


@triton.jit
def _activations_kernel(x, y, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    tl.store(y + r, tu.exp(v))
    tl.store(y + N + r, tu.sigmoid(v))
    tl.store(y + 2 * N + r, tu.tanh(v))


def _activations(x):
    """The kernels' exp, sigmoid and tanh of ``x`` (1-D, a power of 2 long): (3, len(x))."""
    y = torch.empty(3, x.numel(), device=x.device, dtype=x.dtype)
    _activations_kernel[(1,)](x, y, x.numel())
    return y


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # e^88.7 in float32
@pytest.mark.parametrize("fn", ["exp", "sigmoid", "tanh"])
def test_activation_helpers_are_accurate(fn):
    """The kernels' exp, sigmoid and tanh (no libdevice in the interpreter) vs torch in float64,
    over tiny to huge values. float32: within 4 ulp relative. Compiled, ``tl.exp`` is the GPU's
    ``ex2.approx`` (3.7e-6 relative at 80; 1e-6 through sigmoid and tanh on an H100), and tanh's
    ``1 - 2 / (e^2x + 1)`` lost 1e-6 relative to cancellation just above its Taylor branch."""
    mags = torch.logspace(-8, 2, 1024, dtype=torch.float64)
    x = torch.cat([mags, -mags, torch.linspace(-1, 1, 2048, dtype=torch.float64)])
    if fn == "exp":
        x = x.clamp(-86.5, 88.5)  # float32's normal range, where the helper is exact
    want_fn = {"exp": torch.exp, "sigmoid": torch.sigmoid, "tanh": torch.tanh}[fn]
    for dtype, rtol in ((torch.float64, 1e-13), (torch.float32, 2.4e-7)):
        xs = x.to(DEVICE, dtype)
        y = _activations(xs)[("exp", "sigmoid", "tanh").index(fn)]
        # sigmoid(-100) = 4e-44 is subnormal in float32: 0 will do
        torch.testing.assert_close(y, want_fn(xs.double()).to(dtype), rtol=rtol,
                                   atol=torch.finfo(dtype).tiny)


@pytest.mark.skipif(not triton_interpreted(), reason="patches the interpreter's tl.exp; "
                    "compiled, test_activation_helpers_are_accurate catches ex2.approx itself")
def test_float32_activations_do_not_use_tl_exp(monkeypatch):
    """Compiled, ``tl.exp`` is the GPU's ``ex2.approx`` (3.7e-6 relative), but the interpreter
    runs it as ``np.exp``, exact: a float32 helper that went back to ``tl.exp`` would pass the
    accuracy test here and fail only on a GPU. With the interpreter's ``tl.exp`` made 1e-5
    off, the float32 helpers must stay accurate."""
    import numpy as np
    from triton.runtime import interpreter

    exact = np.exp
    monkeypatch.setattr(interpreter.np, "exp", lambda v, *a, **k: exact(v, *a, **k) * 1.00001)

    x = torch.linspace(-20, 20, 1024, dtype=torch.float32)
    xd = x.double()
    for got, fn in zip(_activations(x), (torch.exp, torch.sigmoid, torch.tanh)):
        torch.testing.assert_close(got, fn(xd).float(), rtol=2.4e-7, atol=0,
                                   msg=lambda m, f=fn: f"{f.__name__}: {m}")


# the interpreter evaluates both sides of the helpers' tl.where on inf and NaN lanes
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_activation_helpers_at_the_edges():
    """inf and NaN in, and float32's range ends: e^89 overflows to inf, sigmoid reaches exactly
    0 and 1, tanh exactly -1 and 1 and keeps the sign of zero, NaN stays NaN. Results below
    float32's smallest normal number may be flushed to 0 (a GPU may flush them)."""
    x = torch.tensor([float("-inf"), -200.0, -104.0, -87.5, 88.7, 89.0, 200.0, float("inf"),
                      float("nan"), 0.0, -0.0, 1e-30, -1e-30, 30.0, -30.0, 5.0],
                     device=DEVICE)
    exp, sig, tanh = _activations(x).double()
    xd = x.double()
    tiny = torch.finfo(torch.float32).tiny
    for got, fn in ((exp, torch.exp), (sig, torch.sigmoid), (tanh, torch.tanh)):
        torch.testing.assert_close(got, fn(xd).float().double(), rtol=1e-6, atol=tiny,
                                   equal_nan=True, msg=lambda m, f=fn: f"{f.__name__}: {m}")
    assert exp[5] == exp[6] == exp[7] == float("inf") and exp[0] == sig[0] == sig[1] == 0
    assert sig[7] == tanh[7] == 1 and tanh[0] == -1 and exp[8].isnan() and tanh[8].isnan()
    # tanh is odd down to zero's sign, as torch's (the Taylor branch on |x| gave +0.0 for -0.0)
    assert torch.equal(torch.signbit(tanh), torch.signbit(torch.tanh(xd)))


@pytest.mark.parametrize(
    ("name", "where"),
    [(n, w) for n in CELLS for w in ("gx_first", "gx_last_gate", "h0", "c0")
     if w != "c0" or CELLS[n][0] == "lstm"],
)
def test_nan_propagates_as_in_the_reference(name, where):
    """A NaN in the input, the state or the last gate's columns (the candidate: tanh, or relu)
    spreads as in the reference, forward and backward. The clamps in tanh and relu
    (``tl.minimum``/``tl.maximum``) dropped it by default: tanh(NaN) was 1, relu(NaN) 0, and
    training went on over bad data with finite losses."""
    cell, nonlinearity, _ = CELLS[name]
    kernel, reference = _modules(cell)
    opts = _options(nonlinearity)
    T, B, H = 3, 2, 5
    gx, w, b, h0, c0 = _inputs(cell, T, B, H, torch.float64)
    nan = float("nan")
    if where == "gx_first":
        gx[0, 0, 0] = nan
    elif where == "gx_last_gate":
        gx[0, 0, -1] = nan
    elif where == "h0":
        h0[1, 2] = nan
    else:
        c0[1, 2] = nan
    got = kernel.forward(gx, w, b, h0, c0, save=True, **opts)
    want = reference.forward(gx, w, b, h0, c0, **opts)
    assert torch.isnan(want[0]).any()
    for what, a, e in zip(("out", "h_n", "c_n"), got[:3], want[:3]):
        if e is not None:
            torch.testing.assert_close(a, e, **TOL[torch.float64], equal_nan=True,
                                       msg=lambda m, w=what: f"{w}: {m}")
    g_out, g_hn, g_cn = _cotangents(got[0], got[1], got[2])
    grads = kernel.backward(g_out, g_hn, g_cn, gx if kernel.BACKWARD_NEEDS_GX else None, w, b,
                            h0, c0, got[0], got[3], **opts)
    ref_grads = reference.backward(g_out, g_hn, g_cn, gx, w, b, h0, c0, want[0], (), **opts)
    for what, a, e in zip(("d_gx", "d_gh", "d_h0", "d_c0"), grads, ref_grads):
        if e is not None:
            torch.testing.assert_close(a, e, **TOL[torch.float64], equal_nan=True,
                                       msg=lambda m, w=what: f"{w}: {m}")


@pytest.mark.parametrize("name", list(CELLS))
def test_fallback_above_max_hidden_warns_once(name, monkeypatch):
    """H = 257 runs the reference (correct, slower) and says so once."""
    monkeypatch.setattr(tu, "_warned", set())
    cell, nonlinearity, _ = CELLS[name]
    kernel, reference = _modules(cell)
    opts = _options(nonlinearity)
    H = tu.MAX_FUSED_HIDDEN + 1
    gx, w, b, h0, c0 = _inputs(cell, 2, 1, H, torch.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, hn, cn, saved = kernel.forward(gx, w, b, h0, c0, **opts)
        g_out, g_hn, g_cn = _cotangents(out, hn, cn)
        got = kernel.backward(g_out, g_hn, g_cn, None, w, b, h0, c0, out, saved, **opts)
        kernel.forward(gx, w, b, h0, c0, **opts)
    fallbacks = [w for w in caught if issubclass(w.category, FallbackWarning)]
    assert len(fallbacks) == 1 and str(H) in str(fallbacks[0].message)
    want_fwd = reference.forward(gx, w, b, h0, c0, **opts)
    want = reference.backward(g_out, g_hn, g_cn, gx, w, b, h0, c0, out, (), **opts)
    for what, a, e in zip(("out", "h_n", "c_n", "d_gx", "d_gh", "d_h0", "d_c0"),
                          (out, hn, cn, *got), (*want_fwd[:3], *want)):
        _assert_close(a, e, torch.float32, what)
    # no gradient for the final state(s): None, as the fused path takes it (it crashed here)
    got = kernel.backward(g_out, None, None, None, w, b, h0, c0, out, saved, **opts)
    zeros = [None if t is None else torch.zeros_like(t) for t in (g_hn, g_cn)]
    want = reference.backward(g_out, *zeros, gx, w, b, h0, c0, out, (), **opts)
    for what, a, e in zip(("d_gx", "d_gh", "d_h0", "d_c0"), got, want):
        _assert_close(a, e, torch.float32, what)


def _interpreter_fails_on_this_numpy() -> bool:
    """Triton's interpreter before 3.7 converts a runtime loop bound with ``int()`` of a
    one-element array, which NumPy 2.4 refuses (triton-lang/triton#9171): every kernel's time
    loop fails there. Seen on a GPU machine with Triton 3.6.0 and NumPy 2.5.2."""
    import numpy as np

    triton_version = tuple(int(p) for p in triton.__version__.split(".")[:2])
    return triton_version < (3, 7) and np.lib.NumpyVersion(np.__version__) >= "2.4.0"


@pytest.mark.parametrize(
    "mode",
    [pytest.param("1", marks=pytest.mark.skipif(
        _interpreter_fails_on_this_numpy(),
        reason="Triton < 3.7's interpreter cannot run loops with NumPy >= 2.4 "
               "(triton-lang/triton#9171): upgrade triton or use NumPy < 2.4")),
     "0"],
    ids=["made-interpreted", "made-compiled"],
)
def test_interpreter_mode_is_the_kernels_not_the_variables(tmp_path, mode):
    """triton.jit reads TRITON_INTERPRET once, when the kernels are made: a later change of the
    variable must not switch the plan (a bfloat16 plan for compiled kernels ran in the
    interpreter and gave errors of 2.4) nor let CPU tensors reach compiled kernels (Triton's
    "0 active drivers")."""
    import os
    import subprocess
    import sys

    code = """
import os, sys, torch
mode = sys.argv[1]
from tsrnn.kernels.common.registry import BackendUnavailableError, get_kernel, resolve_backend
from tsrnn.kernels.common import triton_utils as tu
if mode == "1":
    torch.manual_seed(0)
    args = (torch.randn(2, 2, 9), torch.randn(9, 3) * 0.5, torch.zeros(9), torch.randn(2, 3))
    args = [a.bfloat16() for a in args]
    want = get_kernel("gru", "torch").forward(*[a.double() for a in args])[0]
    first = get_kernel("gru", "triton").forward(*args)[0].double()  # kernels made, run
else:
    get_kernel("gru", "triton")  # kernels made, compiled (no GPU to run them here)
os.environ["TRITON_INTERPRET"] = "0" if mode == "1" else "1"  # flipped after that
if mode == "1":
    assert str(tu.plan(2, 3, 3, torch.bfloat16, torch.device("cpu")).dot_dtype) == "fp32"
    got = get_kernel("gru", "triton").forward(*args)[0].double()
    assert (got - want).abs().max() < 0.03, (got - want).abs().max()
    assert torch.equal(got, first)
else:
    try:
        resolve_backend("triton", "cpu", "float32")
    except BackendUnavailableError as e:
        assert "before importing triton" in str(e)
    else:
        raise AssertionError("CPU tensors were sent to compiled Triton kernels")
print("ok")
"""
    env = dict(os.environ, TRITON_INTERPRET=mode)
    # cwd: not the checkout, whose tsrnn/ lacks tsrnn.kernels where it is not installed
    # (scripts/gpu-check.sh puts a mapped copy on PYTHONPATH)
    done = subprocess.run([sys.executable, "-c", code, mode], env=env, capture_output=True,
                          cwd=tmp_path, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_dtype_the_kernels_do_not_take_is_named():
    """The exported kernels raised a bare KeyError(torch.float16); now the entry checks name
    it as resolve_backend does (BackendUnavailableError, as for float16 on Numba)."""
    from tsrnn.kernels import BackendUnavailableError

    kernel, _ = _modules("gru")
    gx, w, b, h0, _ = _inputs("gru", 2, 1, 4, torch.float32)
    with pytest.raises(BackendUnavailableError,
                       match=r"supports float32, bfloat16, float64, got float16"):
        kernel.forward(gx.half(), w.half(), b.half(), h0.half(), None)


def test_fallback_layer_matches_torch_nn(monkeypatch):
    """Through tsrnn.nn: the fallback's backward gets gx back from ``saved`` although the
    module declares ``BACKWARD_NEEDS_GX = False``."""
    monkeypatch.setattr(tu, "_warned", set())
    H = tu.MAX_FUSED_HIDDEN + 1
    ref, mine = _layer_pair("gru", torch.float32, 1, H)
    x = torch.randn(2, 1, 1, device=DEVICE, requires_grad=True)
    hx = torch.randn(1, 1, H, device=DEVICE, requires_grad=True)
    cot = [torch.randn(2, 1, H, device=DEVICE), torch.randn(1, 1, H, device=DEVICE)]
    with pytest.warns(FallbackWarning) as record:
        got_outs, got = _layer_grads(mine, x, hx, cot)
    # attributed to the line that called the layer, not to tsrnn's own (nn.py)
    assert record[0].filename == __file__, record[0].filename
    want_outs, want = _layer_grads(ref, x, hx, cot)
    for a, e in zip([*got_outs, *got], [*want_outs, *want]):
        _assert_close(a, e, torch.float32, "fallback layer")


# ---- real GPU ---------------------------------------------------------------------------------

@pytest.mark.parametrize("H", [5, 48, 128, 256], ids=lambda h: f"H{h}")
@pytest.mark.parametrize("name", list(CELLS))
@pytest.mark.gpu
@compiled_only
def test_gpu_kernel_matches_reference(name, H):
    """Resident (small H) and streamed (large H) modes, batch over several tiles. The
    reference's cuBLAS products sum in another order; over 37 steps the difference grows past
    the few-ulp interpreter tolerance."""
    _check_against_reference(name, 37, 45, H, torch.float32, "cuda",
                             tol=dict(rtol=1e-4, atol=1e-5))


@pytest.mark.parametrize("name", list(CELLS))
@pytest.mark.gpu
@compiled_only
def test_gpu_exact_fp32_products(name, monkeypatch):
    """``FP32_PRECISION = "ieee"``: the fp32 FMA path instead of tf32x3, resident and streamed."""
    monkeypatch.setattr(tu, "FP32_PRECISION", "ieee")
    assert tu.plan(20, 48, 3, torch.float32, torch.device("cuda")).precision == "ieee"
    for H in (48, 160):
        _check_against_reference(name, 9, 20, H, torch.float32, "cuda",
                                 tol=dict(rtol=1e-4, atol=1e-5))


@pytest.mark.gpu
@compiled_only
def test_gpu_plan(monkeypatch):
    """float32 on sm_80+: tf32x3 unless torch allows TF32 (then tf32); other dtypes: ieee.
    128 KiB of weights resident only where shared memory allows (H100: 227 KiB a block)."""
    dev = torch.device("cuda")
    big_smem = torch.cuda.get_device_properties(dev).shared_memory_per_block_optin >= 200 << 10
    assert tu.plan(16, 128, 4, torch.bfloat16, dev).RESIDENT == big_smem
    assert not tu.plan(16, 128, 3, torch.float32, dev).RESIDENT
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    tensor_cores = torch.cuda.get_device_capability(dev) >= (8, 0)
    assert tu.plan(4, 64, 3, torch.float32, dev).precision == (
        "tf32x3" if tensor_cores else "ieee")
    assert tu.plan(4, 64, 3, torch.float64, dev).precision == "ieee"
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", True)
    assert tu.plan(4, 64, 3, torch.float32, dev).precision == "tf32"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64], ids=DTYPE_IDS.get)
@pytest.mark.parametrize("name", list(CELLS))
@pytest.mark.gpu
@compiled_only
def test_gpu_kernel_other_dtypes(name, dtype):
    # On the GPU the bf16 recurrent product rounds h and d_gh to bf16 too (tensor cores).
    tol = dict(rtol=6e-2, atol=6e-2) if dtype == torch.bfloat16 else None
    # bf16 weights: at H = 24 resident; at 96 resident too where 128 KiB fit (GRU 96 KiB, LSTM
    # 128 KiB); at 200 streamed, but for the RNN's 128 KiB
    for H in (24, 96, 200):
        _check_against_reference(name, 9, 20, H, dtype, "cuda", tol=tol)


@pytest.mark.parametrize("name", list(CELLS))
@pytest.mark.gpu
@compiled_only
def test_gpu_layer_matches_torch_nn(name):
    ref, mine = _layer_pair(name, torch.float32, 7, 64, num_layers=2, bidirectional=True,
                            batch_first=True)
    exact = copy.deepcopy(ref).double().cuda()
    ref, mine = ref.cuda(), mine.cuda()
    x = torch.randn(33, 50, 7, device="cuda", requires_grad=True)
    go = torch.randn(33, 50, 2 * 64, device="cuda")

    def run(module, x):
        out = module(x)[0]
        return [out, *torch.autograd.grad(out, [x, *module.parameters()], go.to(out.dtype))]

    x64 = x.detach().double().requires_grad_(True)
    # cuDNN and the kernels sum in different orders over 50 steps and 33 rows: each is measured
    # against float64, and the kernels must be about as close to it as cuDNN is.
    for i, (a, e, want) in enumerate(zip(run(mine, x), run(ref, x), run(exact, x64))):
        scale = want.abs().max().item()
        err_mine = (a.double() - want).abs().max().item() / scale
        err_cudnn = (e.double() - want).abs().max().item() / scale
        assert err_mine <= max(2 * err_cudnn, 2e-6), (i, err_mine, err_cudnn)


@pytest.mark.gpu
@compiled_only
def test_gpu_new_sequence_length_does_not_recompile():
    """T and B are not specialised on: a new length or batch reuses the compiled kernel. (Only
    testable compiled: the interpreter keeps no kernel cache.)"""
    from tsrnn.kernels.gru import triton_gpu as gru

    gx, w, b, h0, _ = _inputs("gru", 3, 2, 16, torch.float32, "cuda")
    out, hn, _, saved = gru.forward(gx, w, b, h0)
    gru.backward(out, hn, None, None, w, b, h0, None, out, saved)
    n_fwd = tu.jit_cache_size(gru._gru_fwd_kernel)
    n_bwd = tu.jit_cache_size(gru._gru_bwd_kernel)
    gx, *_ = _inputs("gru", 7, 5, 16, torch.float32, "cuda")
    h0 = torch.zeros(5, 16, device="cuda")
    out, hn, _, saved = gru.forward(gx, w, b, h0)
    gru.backward(out, hn, None, None, w, b, h0, None, out, saved)
    assert tu.jit_cache_size(gru._gru_fwd_kernel) == n_fwd
    assert tu.jit_cache_size(gru._gru_bwd_kernel) == n_bwd


@pytest.mark.gpu
@compiled_only
def test_gpu_do_bench_smoke():
    from triton.testing import do_bench

    from tsrnn.kernels.lstm import triton_gpu as lstm

    gx, w, b, h0, c0 = _inputs("lstm", 64, 32, 128, torch.float32, "cuda")
    ms = do_bench(lambda: lstm.forward(gx, w, b, h0, c0, save=False), warmup=5, rep=20)
    assert 0 < ms < 1e3


@pytest.mark.parametrize("name", list(CELLS))
def test_kernel_matches_reference_with_no_steps(name):
    """T = 0: the final state is the initial one, and its gradient passes straight through."""
    _check_against_reference(name, 0, 3, 5, torch.float64)
