"""The Numba kernels' backward with the weight gradients summed in its time loop
(``backward_with_weight_grads``, :mod:`tsrnn.kernels.common.numba_grads`) against the plain
reference: the reference kernel's gradients through time, then the weight gradients as torch
products over every step and row."""

import pytest
import torch

from tsrnn.kernels import get_kernel
from tsrnn.kernels.common import numba_grads
from tsrnn.kernels.common.numba_config import num_threads

CASES = [("rnn", "tanh"), ("rnn", "relu"), ("gru", None), ("lstm", None)]
IDS = ["rnn_tanh", "rnn_relu", "gru", "lstm"]
GATES = {"rnn": 1, "gru": 3, "lstm": 4}
TOL = {torch.float64: dict(rtol=1e-10, atol=1e-12), torch.float32: dict(rtol=1e-5, atol=1e-5)}
# float32 results against the float64 reference of the same inputs: the weight gradients sum
# T*B float32 terms (relu's gradients can grow large), in an order that follows B
GRAD_TOL = {torch.float64: TOL[torch.float64], torch.float32: dict(rtol=1e-4, atol=1e-4)}


def _case(cell, nonlinearity, T, B, I, H, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    G = GATES[cell]
    x = torch.randn(T, B, I, dtype=dtype, generator=gen)
    w_ih = torch.randn(G * H, I, dtype=dtype, generator=gen) / I**0.5
    b_ih = torch.randn(G * H, dtype=dtype, generator=gen) * 0.1
    w_hh = torch.randn(G * H, H, dtype=dtype, generator=gen) / H**0.5
    b_hh = torch.randn(G * H, dtype=dtype, generator=gen) * 0.1
    h0 = torch.randn(B, H, dtype=dtype, generator=gen) * 0.5
    c0 = torch.randn(B, H, dtype=dtype, generator=gen) * 0.5 if cell == "lstm" else None
    opts = {"nonlinearity": nonlinearity} if cell == "rnn" else {}
    g_out = torch.randn(T, B, H, dtype=dtype, generator=gen)
    g_hn = torch.randn(B, H, dtype=dtype, generator=gen)
    g_cn = torch.randn(B, H, dtype=dtype, generator=gen) if cell == "lstm" else None
    return x, w_ih, b_ih, w_hh, b_hh, h0, c0, opts, (g_out, g_hn, g_cn)


def _reference(cell, x, w_ih, b_ih, w_hh, b_hh, h0, c0, opts, grads):
    """Reference kernel's backward, then the weight gradients as torch products."""
    ref = get_kernel(cell, "torch")
    gx = torch.nn.functional.linear(x, w_ih, b_ih)
    out, _, _, saved = ref.forward(gx, w_hh, b_hh, h0, c0, **opts)
    d_gx, d_gh, d_h0, d_c0 = ref.backward(*grads, gx, w_hh, b_hh, h0, c0, out, saved, **opts)
    GH, I, H = d_gx.shape[-1], x.shape[-1], h0.shape[-1]
    h_prev = torch.cat([h0.unsqueeze(0), out[:-1]]).reshape(-1, H)
    a, c = d_gx.reshape(-1, GH), d_gh.reshape(-1, GH)
    weights = (a.T @ x.reshape(-1, I), a.sum(0), c.T @ h_prev, c.sum(0))
    return d_gx, d_h0, d_c0, weights


def _fused(cell, x, w_ih, b_ih, w_hh, b_hh, h0, c0, opts, grads, keep_d_gx):
    nb = get_kernel(cell, "numba")
    out, _, _, saved = nb.forward_projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0, **opts)
    return nb.backward_with_weight_grads(
        *grads, x, w_hh, b_hh, h0, c0, out, saved, keep_d_gx=keep_d_gx, **opts
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
# B: one row; a block and a short one; more blocks than numba_grads.MAX_CHUNKS (chunks of two
# blocks, the last one short); and no rows at all (the sums over nothing are zeros).
@pytest.mark.parametrize(
    ("T", "B", "I", "H"),
    [
        (1, 1, 1, 1),
        (11, 13, 3, 24),
        (5, 8 * numba_grads.MAX_CHUNKS + 11, 2, 5),
        (3, 0, 2, 4),
        # input size 9: the 8-row tile of x^T d_gx; T=20: additions after 8 and 16 steps and
        # a short one at t=0
        (20, 6, 9, 7),
        # T=70: more than SEGMENT additions of STEPS steps, so a segment joins the partial
        # before the block ends; B=5: blocks of one row
        (70, 5, 2, 3),
    ],
    ids=lambda v: str(v),
)
@pytest.mark.parametrize(("cell", "nonlinearity"), CASES, ids=IDS)
def test_matches_reference(cell, nonlinearity, T, B, I, H, dtype):
    args = _case(cell, nonlinearity, T, B, I, H, dtype, seed=T * 100 + B + H)
    exact = [a.double() if isinstance(a, torch.Tensor) else a for a in args[:-1]]
    grads64 = [None if g is None else g.double() for g in args[-1]]
    want_gx, want_h0, want_c0, want_w = _reference(cell, *exact, grads64)
    for keep in (False, True):
        d_gx, d_h0, d_c0, *weights = _fused(cell, *args, keep_d_gx=keep)
        if keep:
            torch.testing.assert_close(d_gx.double(), want_gx, **TOL[dtype])
        else:
            assert d_gx is None
        torch.testing.assert_close(d_h0.double(), want_h0, **TOL[dtype])
        if cell == "lstm":
            torch.testing.assert_close(d_c0.double(), want_c0, **TOL[dtype])
        else:
            assert d_c0 is None
        for name, g, w in zip(("d_w_ih", "d_b_ih", "d_w_hh", "d_b_hh"), weights, want_w):
            assert g.shape == w.shape and g.dtype == dtype, name
            torch.testing.assert_close(
                g.double(), w, **GRAD_TOL[dtype], msg=lambda m, n=name: f"{n}: {m}"
            )
        # Separate tensors, even when equal (RNN, LSTM): AccumulateGrad may adopt each as a
        # parameter's .grad.
        assert weights[1].data_ptr() != weights[3].data_ptr() or B == 0


@pytest.mark.skipif(
    __import__("numba").config.NUMBA_NUM_THREADS < 2,
    reason="needs at least 2 Numba threads to compare against 1",
)
@pytest.mark.parametrize("B", [3, 13, 8 * numba_grads.MAX_CHUNKS + 27])
@pytest.mark.parametrize(("cell", "nonlinearity"), CASES, ids=IDS)
def test_results_do_not_depend_on_thread_count(cell, nonlinearity, B):
    """Blocks and chunks cut by ``B`` alone, partials added in order: bitwise the same on one
    thread or two (a fit on a one-thread Dask worker equals the laptop's), also where the
    forward's blocks follow the thread count (B=3, 13)."""
    args = _case(cell, nonlinearity, 9, B, 3, 20, torch.float32, 5)
    runs = []
    for n in (1, 2):
        with num_threads(n):
            runs.append([g for g in _fused(cell, *args, keep_d_gx=True) if g is not None])
    for a, b in zip(*runs):
        assert torch.equal(a, b)


@pytest.mark.parametrize("B", [5, 19])
@pytest.mark.parametrize(("cell", "nonlinearity"), CASES, ids=IDS)
def test_plain_backward_is_unchanged_by_the_fused_path(cell, nonlinearity, B):
    """The kernel's ``backward`` (the calling convention of :mod:`tsrnn.kernels`) shares the
    jitted loop, with blocks cut as the forward's (by the thread count); its ``d_gx`` equals
    the one the fused call keeps (blocks cut by ``B``)."""
    args = _case(cell, nonlinearity, 6, B, 2, 8, torch.float64, 11)
    x, w_ih, b_ih, w_hh, b_hh, h0, c0, opts, grads = args
    nb = get_kernel(cell, "numba")
    out, _, _, saved = nb.forward_projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0, **opts)
    gx = torch.nn.functional.linear(x, w_ih, b_ih)
    d_gx, _, d_h0, _ = nb.backward(*grads, gx, w_hh, b_hh, h0, c0, out, saved, **opts)
    fused = nb.backward_with_weight_grads(
        *grads, x, w_hh, b_hh, h0, c0, out, saved, keep_d_gx=True, **opts
    )
    torch.testing.assert_close(fused[0], d_gx, rtol=0, atol=0)
    torch.testing.assert_close(fused[1], d_h0, rtol=0, atol=0)


@pytest.mark.parametrize("layer", ["GRU", "LSTM", "RNN"])
def test_long_sequences_keep_float32_precision(layer):
    """3,000 steps of 4 rows: the sums run in two levels (numba_grads.SEGMENT), so float32
    weight gradients stay within 1e-6 of float64 ones (torch.nn's own float32 GRU: 1e-7 to
    1e-6 here; one running sum per block gave 2e-6 to 3e-6)."""
    import tsrnn.nn as tnn

    torch.manual_seed(0)
    ref = getattr(torch.nn, layer)(3, 8).double()
    ours = getattr(tnn, layer)(3, 8)
    ours.load_state_dict({k: v.float() for k, v in ref.state_dict().items()})
    x = torch.randn(3000, 4, 3, dtype=torch.float64)
    g = torch.randn(3000, 4, 8, dtype=torch.float64)
    (ref(x)[0] * g).sum().backward()
    (ours(x.float())[0] * g.float()).sum().backward()
    for (name, p), q in zip(ours.named_parameters(), ref.parameters()):
        err = ((p.grad.double() - q.grad).norm() / q.grad.norm()).item()
        assert err < 1e-6, (name, err)
