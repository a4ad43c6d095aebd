"""Activations shared by the Numba kernels, written so that LLVM can vectorise them.

A call to libm's ``tanhf``/``expf`` cannot be vectorised by the LLVM that llvmlite ships (it
has no vector math library), and at about 20-30 ns per call the gate activations would cost
more than the recurrent product itself. In float32 we therefore evaluate ``exp`` inline:
Cody-Waite range reduction ``x = n ln2 + r`` with ``|r| <= ln2/2``, a degree-7 Taylor
polynomial for ``e^r`` (truncation below 1e-8 relative) and ``2^n`` built from its exponent
bits. ``sigmoid(x) = 1 / (1 + e^-x)`` follows, and ``tanh(x) = -m / (2 + m)`` with
``m = e^(-2x) - 1`` from the same evaluation, the polynomial's constant term left out so that
``m`` keeps its relative precision as ``x -> 0`` (``2 sigmoid(2x) - 1`` loses it: tanh(1e-8)
came out 0, and small signals through an RNN lost 5 digits at 1e-4): both accurate to a few
float32 ulps, relative. Above 88.4 ``exp`` overflows to inf
(float32's largest value is ``e^88.72``), so ``sigmoid`` reaches 0 and ``tanh`` -1 exactly, as
with libm. float64 keeps libm's functions.

:func:`vexp`, :func:`vsigmoid` and :func:`vtanh` are the same evaluations on whole SIMD
vectors (:class:`~tsrnn.kernels.common.numba_simd.Vec`), for the float32 gate passes of the
GRU and LSTM kernels: LLVM vectorises the scalar forms in a loop only at 256 bits on AVX-512
CPUs, and only loop by loop. ``tests/kernels/test_activations.py`` checks both forms against
float64.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from tsrnn.kernels.common.numba_config import njit
from tsrnn.kernels.common.numba_simd import (
    vadd,
    vclamp,
    vdiv,
    vfloor,
    vmul,
    vmuladd,
    vscalef,
    vsplat,
    vsub,
)

# String options become integer constants before entering jitted code.
TANH = 0
RELU = 1
NONLINEARITIES = {"tanh": TANH, "relu": RELU}

_LOG2E = 1.4426950408889634
_LN2_HI = 0.693145751953125  # ln 2 split so that n * _LN2_HI is exact in float32
_LN2_LO = 1.428606765330187e-06
# The upper clamp: past float32's largest finite value (e**88.72), so that 2**n is 2**128, whose
# exponent bits are those of inf, and exp overflows to inf as libm's does. Clamped at 88 it
# stopped at 1.65e38, and sigmoid(-1e37) gave 6e-39 instead of 0: enough, times a GRU's huge
# recurrent pre-activation, to move its output (a weight of 1e38, as a diverged fit has).
_EXP_HI = 89.0
# tanh's inputs are clamped to [-10, 10] (tanh(10) is 1 - 4e-9, 1 in float32), so that e**(-2x)
# stays finite and the quotient below never reads inf / inf
_TANH_HI = 10.0
_F32 = np.float32
_C = tuple(_F32(1.0 / math.factorial(k)) for k in range(8))  # e**r's Taylor coefficients


@intrinsic
def _float32_from_bits(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@njit(inline="always")
def _reduce(v):
    """Cody-Waite range reduction of a float32 ``v``: ``(n, r)`` with ``v = n ln2 + r``."""
    n = math.floor(v * _F32(_LOG2E) + _F32(0.5))
    nf = _F32(n)
    return n, (v - nf * _F32(_LN2_HI)) - nf * _F32(_LN2_LO)


@njit(inline="always")
def _taylor_to_c1(r):
    """``(e**r - 1) / r`` as the Taylor polynomial's Horner chain down to its ``r`` term, shared
    by ``exp`` (times ``r`` plus 1) and ``tanh`` (times ``r``: ``e**r - 1`` itself)."""
    p = _C[7]
    p = p * r + _C[6]
    p = p * r + _C[5]
    p = p * r + _C[4]
    p = p * r + _C[3]
    p = p * r + _C[2]
    return p * r + _C[1]


def fast_exp(x):
    """e**x (float32: vectorisable inline evaluation; float64: libm)."""
    return math.exp(x)


@overload(fast_exp, inline="always")
def _fast_exp_overload(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        lo_clamp, hi_clamp = np.float32(-87.0), np.float32(_EXP_HI)
        c0 = _C[0]
        two = np.float32(2.0)

        def impl(x):
            v = min(max(x, lo_clamp), hi_clamp)
            n, r = _reduce(v)
            p = _taylor_to_c1(r) * r + c0
            # 2**n as 2**(n-1) * 2: normal for every n the clamps allow ([-125, 128]), and
            # e**x near float32's largest value stays finite (p < 1 there) or overflows to inf
            scale = _float32_from_bits(np.int32((n + 126) << 23))
            out = (p * scale) * two
            # NaN in, NaN out (the clamp above would otherwise hide it).
            return out if x == x else x

        return impl
    return lambda x: math.exp(x)


def fast_tanh(x):
    """tanh(x) (float32: via :func:`fast_exp`; float64: libm)."""
    return math.tanh(x)


@overload(fast_tanh, inline="always")
def _fast_tanh_overload(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        bound, one, two = np.float32(_TANH_HI), np.float32(1.0), np.float32(2.0)

        def impl(x):
            u = np.float32(-2.0) * np.minimum(np.maximum(x, -bound), bound)
            n, r = _reduce(u)
            # e**r - 1 without its constant term, so that it keeps its relative precision
            q = _taylor_to_c1(r) * r
            scale = _float32_from_bits(np.int32((n + 127) << 23))
            em = scale * q + (scale - one)  # e**u - 1: exactly q where n is 0 (|u| < ln2/2)
            return em / (-two - em)  # NaN in, NaN out (np.maximum and np.minimum keep it)

        return impl
    return lambda x: math.tanh(x)


def sigmoid(x):
    """1 / (1 + e**-x), in the precision of ``x``."""
    return 1.0 / (1.0 + math.exp(-x))


@overload(sigmoid, inline="always")
def _sigmoid_overload(x):
    one = np.float32(1.0) if isinstance(x, types.Float) and x.bitwidth == 32 else 1.0

    def impl(x):
        return one / (one + fast_exp(-x))

    return impl


def _is_float32(x) -> bool:
    return isinstance(x, types.Float) and x.bitwidth == 32


def one_minus(x):
    """1 - x in the precision of ``x`` (a literal ``1.0`` would promote float32 to float64)."""
    return 1.0 - x


@overload(one_minus, inline="always")
def _one_minus_overload(x):
    one = np.float32(1.0) if _is_float32(x) else 1.0
    return lambda x: one - x


def relu(x):
    """max(x, 0) in the precision of ``x``; NaN stays NaN."""
    return 0.0 if x < 0.0 else x


@overload(relu, inline="always")
def _relu_overload(x):
    zero = np.float32(0.0) if _is_float32(x) else 0.0
    return lambda x: zero if x < zero else x


# Vector forms (float32 :class:`~tsrnn.kernels.common.numba_simd.Vec` only), the same
# operations in the same order as the scalar ones above, lane by lane: for loops that LLVM does
# not vectorise by itself, or only at half the register width (it prefers 256-bit vectors on
# AVX-512 CPUs).


@njit(inline="always")
def _vreduce(v):
    """:func:`_reduce` of each lane."""
    n = vfloor(vmuladd(v, vsplat(v, _F32(_LOG2E)), vsplat(v, _F32(0.5))))
    r = vmuladd(n, vsplat(v, _F32(-_LN2_HI)), v)
    return n, vmuladd(n, vsplat(v, _F32(-_LN2_LO)), r)


@njit(inline="always")
def _vtaylor_to_c1(r):
    """:func:`_taylor_to_c1` of each lane."""
    p = vsplat(r, _C[7])
    p = vmuladd(p, r, vsplat(r, _C[6]))
    p = vmuladd(p, r, vsplat(r, _C[5]))
    p = vmuladd(p, r, vsplat(r, _C[4]))
    p = vmuladd(p, r, vsplat(r, _C[3]))
    p = vmuladd(p, r, vsplat(r, _C[2]))
    return vmuladd(p, r, vsplat(r, _C[1]))


@njit(inline="always")
def vexp(x):
    """:func:`fast_exp` of each lane of a float32 vector."""
    v = vclamp(x, vsplat(x, _F32(-87.0)), vsplat(x, _F32(_EXP_HI)))
    n, r = _vreduce(v)
    p = vmuladd(_vtaylor_to_c1(r), r, vsplat(x, _C[0]))
    return vscalef(p, n)  # NaN in, NaN out (the clamp lets it through)


@njit(inline="always")
def vsigmoid(x):
    """:func:`sigmoid` of each lane of a float32 vector."""
    one = vsplat(x, _F32(1.0))
    return vdiv(one, vadd(one, vexp(vmul(vsplat(x, _F32(-1.0)), x))))


@njit(inline="always")
def vtanh(x):
    """:func:`fast_tanh` of each lane of a float32 vector."""
    v = vclamp(x, vsplat(x, _F32(-_TANH_HI)), vsplat(x, _F32(_TANH_HI)))
    u = vmul(vsplat(x, _F32(-2.0)), v)
    n, r = _vreduce(u)
    q = vmul(_vtaylor_to_c1(r), r)
    one = vsplat(x, _F32(1.0))
    scale = vscalef(one, n)
    em = vmuladd(scale, q, vsub(scale, one))  # e**u - 1, see fast_tanh
    return vdiv(em, vsub(vsplat(x, _F32(-2.0)), em))  # NaN in, NaN out (through the clamp)
