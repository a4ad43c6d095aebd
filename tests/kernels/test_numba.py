"""Numba kernels against the plain-PyTorch reference: outputs, final states, every gradient."""

import pytest
import torch

from tsrnn.kernels import get_kernel

CASES = [("rnn", "tanh"), ("rnn", "relu"), ("gru", None), ("lstm", None)]
GATES = {"rnn": 1, "gru": 3, "lstm": 4}
TOL = {torch.float64: dict(rtol=1e-10, atol=1e-12), torch.float32: dict(rtol=1e-5, atol=1e-5)}


def _inputs(cell, T, B, H, dtype, gen):
    G = GATES[cell]
    gx = torch.randn(T, B, G * H, dtype=dtype, generator=gen)
    w_hh = torch.randn(G * H, H, dtype=dtype, generator=gen) / H**0.5
    b_hh = torch.randn(G * H, dtype=dtype, generator=gen) * 0.1
    h0 = torch.randn(B, H, dtype=dtype, generator=gen) * 0.5
    c0 = torch.randn(B, H, dtype=dtype, generator=gen) * 0.5 if cell == "lstm" else None
    return gx, w_hh, b_hh, h0, c0


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
# (9, 23, 24): with 2 or 3 threads (CI has 2), blocks of 8, 8 and 7 rows, so the 8-row tile
# (AVX-512), the 4-row tile and single rows of the recurrent product all run.
# (5, 37, 83): float32 gate passes on whole groups of vectors, single vectors and a scalar tail
# (83 = 64 + 16 + 3 with AVX-512, 2 * 32 + 2 * 8 + 3 with AVX2); on 2 threads the GRU's
# forward runs blocks of 16, 16 and 5 rows, each step in halves of 8 (the last block: one).
# (0, 3, 5): no steps; the final state is the initial one, and so are its gradients.
@pytest.mark.parametrize(("T", "B", "H"),
                         [(0, 3, 5), (1, 1, 1), (2, 3, 5), (17, 4, 24), (63, 2, 7), (9, 23, 24),
                          (5, 37, 83)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize(("cell", "nonlinearity"), CASES, ids=["rnn_tanh", "rnn_relu", "gru",
                                                               "lstm"])
def test_forward_backward_match_reference(cell, nonlinearity, T, B, H, dtype):
    gen = torch.Generator().manual_seed(T * 100 + B * 10 + H)
    gx, w_hh, b_hh, h0, c0 = _inputs(cell, T, B, H, dtype, gen)
    opts = {"nonlinearity": nonlinearity} if cell == "rnn" else {}
    ref, nb = get_kernel(cell, "torch"), get_kernel(cell, "numba")

    r_out, r_hn, r_cn, _ = ref.forward(gx, w_hh, b_hh, h0, c0, **opts)
    n_out, n_hn, n_cn, saved = nb.forward(gx, w_hh, b_hh, h0, c0, **opts)
    torch.testing.assert_close(n_out, r_out, **TOL[dtype])
    torch.testing.assert_close(n_hn, r_hn, **TOL[dtype])
    if cell == "lstm":
        torch.testing.assert_close(n_cn, r_cn, **TOL[dtype])
    else:
        assert n_cn is None

    # Random cotangents for the outputs and the final state(s).
    g_out = torch.randn(r_out.shape, dtype=dtype, generator=gen)
    g_hn = torch.randn(r_hn.shape, dtype=dtype, generator=gen)
    g_cn = torch.randn(r_hn.shape, dtype=dtype, generator=gen) if cell == "lstm" else None
    want = ref.backward(g_out, g_hn, g_cn, gx, w_hh, b_hh, h0, c0, r_out, (), **opts)
    got = nb.backward(g_out, g_hn, g_cn, gx, w_hh, b_hh, h0, c0, n_out, saved, **opts)
    for name, w, g in zip(("d_gx", "d_gh", "d_h0", "d_c0"), want, got):
        if w is None:
            assert g is None, name
        else:
            torch.testing.assert_close(g, w, **TOL[dtype], msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_backward_takes_a_strided_output_gradient(cell, dtype):
    # the GRU's float32 gate pass loads grad_out as whole vectors of a C-contiguous array: a
    # transposed one failed to compile (Numba TypingError); the other cells copied it first
    gen = torch.Generator().manual_seed(3)
    T, B, H = 5, 3, 8
    gx, w_hh, b_hh, h0, c0 = _inputs(cell, T, B, H, dtype, gen)
    ref, nb = get_kernel(cell, "torch"), get_kernel(cell, "numba")
    out, _, _, saved = nb.forward(gx, w_hh, b_hh, h0, c0)
    g_out = torch.randn(B, T, H, dtype=dtype, generator=gen).transpose(0, 1)
    g_hn = torch.randn(B, H, dtype=dtype, generator=gen)
    g_cn = torch.zeros_like(g_hn) if cell == "lstm" else None
    assert not g_out.is_contiguous()
    want = ref.backward(g_out, g_hn, g_cn, gx, w_hh, b_hh, h0, c0, out, ())
    got = nb.backward(g_out, g_hn, g_cn, gx, w_hh, b_hh, h0, c0, out, saved)
    for w, g in zip(want, got):
        if w is not None:
            torch.testing.assert_close(g, w, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_forward_without_saving_gives_same_outputs(cell, dtype):
    gen = torch.Generator().manual_seed(1)
    # H = 20: float32 gates in whole SIMD vectors (8 or 16 lanes) and a scalar tail
    gx, w_hh, b_hh, h0, c0 = _inputs(cell, 5, 3, 20, dtype, gen)
    nb = get_kernel(cell, "numba")
    a = nb.forward(gx, w_hh, b_hh, h0, c0, save=True)
    b = nb.forward(gx, w_hh, b_hh, h0, c0, save=False)
    torch.testing.assert_close(a[0], b[0], rtol=0, atol=0)
    assert b[3] == ()


# H = 3: scalar gate arithmetic only; H = 20: SIMD vectors (column 0) and a scalar tail
@pytest.mark.parametrize("H", [3, 20])
def test_nan_propagates_not_dropped(H):
    # fastmath excludes nnan/ninf: a NaN in the input must reach the output.
    gen = torch.Generator().manual_seed(2)
    gx, w_hh, b_hh, h0, _ = _inputs("gru", 4, 2, H, torch.float32, gen)
    gx[1, 0, 0] = float("nan")
    out, *_ = get_kernel("gru", "numba").forward(gx, w_hh, b_hh, h0)
    assert not torch.isnan(out[0]).any()
    assert torch.isnan(out[1, 0, 0])
    assert torch.isnan(out[2:, 0]).all()  # spread through the recurrent product
    assert not torch.isnan(out[:, 1]).any()  # other batch rows untouched


@pytest.mark.skipif(
    __import__("numba").config.NUMBA_NUM_THREADS < 2,
    reason="needs at least 2 Numba threads to compare against 1",
)
@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_results_do_not_depend_on_thread_count(cell):
    """Blocks of batch rows are cut by thread count; the arithmetic must not follow them, or a
    fit would differ between a laptop and a one-thread Dask worker."""
    from tsrnn.kernels.common.numba_config import num_threads

    gen = torch.Generator().manual_seed(4)
    gx, w_hh, b_hh, h0, c0 = _inputs(cell, 6, 5, 24, torch.float32, gen)
    nb = get_kernel(cell, "numba")
    runs = []
    for n in (1, 2):
        with num_threads(n):
            out, hn, _, saved = nb.forward(gx, w_hh, b_hh, h0, c0)
            grads = nb.backward(torch.ones_like(out), torch.ones_like(hn),
                                None if c0 is None else torch.ones_like(hn),
                                gx, w_hh, b_hh, h0, c0, out, saved)
        runs.append([out, hn, *[g for g in grads if g is not None]])
    for a, b in zip(*runs):
        assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize(("cell", "nonlinearity"), CASES, ids=["rnn_tanh", "rnn_relu", "gru",
                                                               "lstm"])
def test_projection_in_the_time_loop_matches_projecting_first(cell, nonlinearity, bias, dtype):
    """``forward_projected`` forms ``x @ W_ih^T + b_ih`` step by step inside the kernel (blocks
    of 8, 8 and 7 rows with 2 or 3 threads); the reference kernel gets it precomputed."""
    gen = torch.Generator().manual_seed(7)
    T, B, H, I = 6, 23, 24, 3
    _, w_hh, b_hh, h0, c0 = _inputs(cell, T, B, H, dtype, gen)
    x = torch.randn(T, B, I, dtype=dtype, generator=gen)
    w_ih = torch.randn(GATES[cell] * H, I, dtype=dtype, generator=gen)
    b_ih = torch.randn(GATES[cell] * H, dtype=dtype, generator=gen) if bias else None
    opts = {"nonlinearity": nonlinearity} if cell == "rnn" else {}
    gx = torch.nn.functional.linear(x, w_ih, b_ih)
    want = get_kernel(cell, "torch").forward(gx, w_hh, b_hh, h0, c0, **opts)
    nb = get_kernel(cell, "numba")
    for save in (True, False):
        got = nb.forward_projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0, save=save, **opts)
        for name, g, w in zip(("out", "h_n", "c_n"), got[:3], want[:3]):
            if w is None:
                assert g is None, name
            else:
                torch.testing.assert_close(g, w, **TOL[dtype], msg=lambda m, n=name: f"{n}: {m}")
    # what backward reads from the fused forward's saved state equals the separate one's
    sep = nb.forward(gx, w_hh, b_hh, h0, c0, **opts)
    fused = nb.forward_projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0, **opts)
    for a, b in zip((sep[0], *sep[3]), (fused[0], *fused[3])):
        torch.testing.assert_close(a, b, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("H", [3, 20])
@pytest.mark.parametrize(("cell", "nonlinearity"), CASES, ids=["rnn_tanh", "rnn_relu", "gru",
                                                               "lstm"])
def test_infinite_input_saturates_the_gates_as_torch_does(cell, nonlinearity, H, dtype):
    """An infinite input gives infinite pre-activations, which the gates saturate: torch's
    outputs stay finite. The GRU's in-loop projection once added ``inf * 0`` (NaN) to the n
    gate's recurrent part, from the zero input rows of its stacked weights."""
    gen = torch.Generator().manual_seed(11)
    T, B, I = 4, 3, 2
    _, w_hh, b_hh, h0, c0 = _inputs(cell, T, B, H, dtype, gen)
    x = torch.randn(T, B, I, dtype=dtype, generator=gen)
    x[1, 0, 0], x[2, 2, 1] = float("inf"), float("-inf")
    w_ih = torch.randn(GATES[cell] * H, I, dtype=dtype, generator=gen)
    b_ih = torch.randn(GATES[cell] * H, dtype=dtype, generator=gen)
    opts = {"nonlinearity": nonlinearity} if cell == "rnn" else {}
    gx = torch.nn.functional.linear(x, w_ih, b_ih)
    want = get_kernel(cell, "torch").forward(gx, w_hh, b_hh, h0, c0, **opts)
    got = get_kernel(cell, "numba").forward_projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0, **opts)
    if cell == "rnn" and nonlinearity == "relu":
        assert torch.isinf(want[0]).any()  # relu does not saturate: inf on both sides
    else:
        assert torch.isfinite(want[0]).all()
    torch.testing.assert_close(got[0], want[0], **TOL[dtype], equal_nan=True)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_float32_sigmoid_reaches_zero_beside_huge_preactivations(cell):
    """A huge recurrent weight (a diverged fit's) drives the gates to exactly 0 or 1. float32
    ``sigmoid`` once stopped at 6e-39, which times a GRU's ~1e37 recurrent n-gate part moved
    the output by 0.03."""
    gen = torch.Generator().manual_seed(12)
    gx, w_hh, b_hh, h0, c0 = _inputs(cell, 4, 2, 20, torch.float64, gen)
    w_hh = w_hh * 1e37
    want = get_kernel(cell, "torch").forward(gx, w_hh, b_hh, h0, c0)[0]
    args = [None if a is None else a.float() for a in (gx, w_hh, b_hh, h0, c0)]
    got = get_kernel(cell, "numba").forward(*args)[0]
    torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-5)
