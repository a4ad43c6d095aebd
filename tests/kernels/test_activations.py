"""The float32 activations of the Numba kernels, scalar and vector forms, against float64."""

import numpy as np
import pytest

from tsrnn.kernels.common.activations import (
    fast_exp,
    fast_tanh,
    sigmoid,
    vexp,
    vsigmoid,
    vtanh,
)
from tsrnn.kernels.common.numba_config import njit
from tsrnn.kernels.common.numba_simd import (
    GROUP,
    vector_lanes,
    vgroup,
    vload,
    vload_like,
    vstore,
)


@njit
def _scalar(x, out):
    for i in range(x.shape[1]):
        out[0, i] = fast_exp(x[0, i])
        out[1, i] = sigmoid(x[0, i])
        out[2, i] = fast_tanh(x[0, i])


@njit
def _vector(x, out):
    L = vector_lanes(x)
    for i in range(0, x.shape[1], L):
        v = vload(x, 0, i)
        vstore(out, 0, i, vexp(v))
        vstore(out, 1, i, vsigmoid(v))
        vstore(out, 2, i, vtanh(v))


@njit
def _group(x, out):
    """The vector forms on whole groups of vectors (as the gate passes run them)."""
    n = vector_lanes(x) * GROUP
    for i in range(0, x.shape[1], n):
        v = vload_like(vgroup(x), x, 0, i)
        vstore(out, 0, i, vexp(v))
        vstore(out, 1, i, vsigmoid(v))
        vstore(out, 2, i, vtanh(v))


def _inputs():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(-20, 20, 4000),
            rng.normal(0, 1, 4000),
            # small magnitudes, where tanh must keep its relative precision
            rng.choice([-1, 1], 2000) * 10 ** rng.uniform(-12, 0, 2000),
            [
                0.0,
                -0.0,
                1e-30,
                -1e-30,
                86.0,
                -86.0,
                88.5,
                -88.5,
                88.7,
                -88.7,
                88.8,
                -88.8,
                200.0,
                -200.0,
                np.inf,
                -np.inf,
                np.nan,
            ],
        ]
    ).astype(np.float32)
    pad = -len(x) % 64  # whole groups of vectors of any width
    return np.concatenate([x, np.zeros(pad, np.float32)])[None, :]


@pytest.mark.parametrize("form", [_scalar, _vector, _group], ids=["scalar", "vector", "group"])
def test_float32_activations_match_float64(form):
    x = _inputs()
    got = np.empty((3, x.shape[1]), np.float32)
    form(x, got)
    x64 = x[0].astype(np.float64)
    finite = np.isfinite(x64)
    with np.errstate(over="ignore"):
        want_exp = np.exp(x64)
    want_sig = 1 / (1 + np.exp(-x64))
    want_tanh = np.tanh(x64)
    # exp within a few ulps where it is in float32's normal range (inputs clamped to [-87, 89])
    normal = finite & (np.abs(x64) <= 86)
    np.testing.assert_allclose(got[0, normal], want_exp[normal], rtol=1e-6)
    np.testing.assert_allclose(got[1, finite], want_sig[finite], rtol=0, atol=2e-7)
    np.testing.assert_allclose(got[2, finite], want_tanh[finite], rtol=0, atol=2e-7)
    # tanh relative to its value, down to tiny inputs (2 sigmoid(2x) - 1 gave tanh(1e-8) = 0
    # and 1e-3 relative errors at 1e-4: small signals through an RNN lost digits)
    nonzero = finite & (want_tanh != 0)
    np.testing.assert_allclose(got[2, nonzero], want_tanh[nonzero], rtol=4e-7, atol=0)
    # exp near float32's largest value (e^88.72): finite below it, inf above, as libm's
    top = finite & (np.abs(x64) > 86) & (x64 > 0)
    near = top & (x64 < 88.72)
    np.testing.assert_allclose(got[0, near], want_exp[near], rtol=1e-6)
    assert (got[0, top & (x64 > 88.73)] == np.inf).all() and got[0, x64 == np.inf] == np.inf
    # saturation: sigmoid reaches exactly 0 once e^-x overflows (a subnormal floor used to
    # leak into a GRU's n gate next to a huge recurrent pre-activation), tanh exactly -1 and 1;
    # NaN in, NaN out (fastmath keeps NaN semantics)
    assert got[1, x64 == np.inf] == 1.0
    assert (got[1, x64 <= -88.8] == 0.0).all() and got[1, x64 == -np.inf] == 0.0
    assert got[2, x64 == np.inf] == 1.0
    assert got[2, x64 == -np.inf] == -1.0
    assert np.isnan(got[:, np.isnan(x64)]).all()


@pytest.mark.parametrize("form", [_vector, _group], ids=["vector", "group"])
def test_vector_and_scalar_forms_agree(form):
    x = _inputs()
    a = np.empty((3, x.shape[1]), np.float32)
    b = np.empty((3, x.shape[1]), np.float32)
    _scalar(x, a)
    form(x, b)
    finite = np.isfinite(x[0])
    # the same operations lane by lane, up to where LLVM fuses the scalar form's multiply-adds:
    # a few ulps apart at most
    np.testing.assert_allclose(b[:, finite], a[:, finite], rtol=5e-7, atol=1e-30)


def test_groups_give_the_vectors_results():
    """A group is its vectors evaluated side by side: the same results, lane by lane."""
    x = _inputs()
    a = np.empty((3, x.shape[1]), np.float32)
    b = np.empty((3, x.shape[1]), np.float32)
    _vector(x, a)
    _group(x, b)
    np.testing.assert_array_equal(b, a)
