"""Explicit SIMD vectors for the register-blocked recurrent product (:mod:`numba_linalg`).

LLVM keeps a matrix-product accumulator in registers only when it is an SSA value; an array
tile (heap or stack) stays in memory and every multiply-add then loads and stores it. These
intrinsics give Numba code a value type ``Vec`` (an LLVM ``<L x float>``/``<L x double>``, one
vector register: :data:`VECTOR_BYTES`) with the operations a micro-kernel needs (loads,
stores, a multiply-add with a broadcast scalar), and the elementwise ones of the float32 gate
arithmetic (:mod:`activations`' vector forms).

Loads and stores only for C-contiguous arrays (2-D, or 3-D with ``vload3``/``vstore3``);
callers guarantee ``j + L <= shape[-1]`` (no bounds checks).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model


def _vector_bytes() -> int:
    """64 (512-bit vectors) where Numba compiles for a CPU with AVX-512, else 32 (256 bits).

    The features are those Numba compiles with: ``NUMBA_CPU_FEATURES`` if set, else the
    host's (less AVX under ``NUMBA_ENABLE_AVX=0``). Numba's disk cache is keyed by the target
    CPU and its features, so code compiled for one width is never loaded for the other.
    """
    from numba.core import codegen, config

    features = config.CPU_FEATURES
    if features is None:
        features = codegen.get_host_cpu_features()
    return 64 if "+avx512f" in features.split(",") else 32


VECTOR_BYTES = _vector_bytes()
"""Bytes per vector: 64 on AVX-512 machines, else 32 (see :func:`_vector_bytes`).

AVX-512 doubles the width and the register file (32 vector registers): the micro-kernel of
:mod:`numba_linalg` then keeps an 8-row tile in registers. Measured on the 2-core AVX-512
development machine (recurrent product alone, T=96, B=256, 2 threads): 72 GFMA/s at H=64
and 58 at H=32, against 35-41 and 39 for 256-bit vectors with a 4-row tile.
"""


def lanes(dtype) -> int:
    """Elements of ``dtype`` (a NumPy or Numba float type) in one vector."""
    bits = getattr(dtype, "bitwidth", None) or dtype.itemsize * 8
    return VECTOR_BYTES * 8 // bits


GROUP = 4
"""Vectors in a group (:func:`vgroup`): the gate passes evaluate their activations on
``GROUP`` vectors of a row at once."""


class Vec(types.Type):
    """A SIMD vector of ``lanes(dtype)`` elements of ``dtype``, or with ``count`` > 1 a group of
    that many vectors handled as one value (:func:`vgroup`)."""

    def __init__(self, dtype, count=1):
        self.dtype = dtype
        self.count = count
        self.lanes = lanes(dtype) * count
        super().__init__(name=f"Vec({dtype}x{self.lanes})")


@register_model(Vec)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        elt = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(elt, fe_type.lanes))


def _vector_pointer(context, builder, aryty, ary, indices, vecty):
    arr = context.make_array(aryty)(context, builder, ary)
    ptr = cgutils.get_item_pointer(context, builder, aryty, arr, list(indices))
    return builder.bitcast(ptr, context.get_value_type(vecty).as_pointer())


def _check_2d(a):
    return isinstance(a, types.Array) and a.ndim == 2 and a.layout == "C"


def _check_3d(a):
    return isinstance(a, types.Array) and a.ndim == 3 and a.layout == "C"


@intrinsic
def vload(typingctx, a, i, j):
    """The vector ``a[i, j:j + L]``."""
    if not (_check_2d(a) and isinstance(i, types.Integer) and isinstance(j, types.Integer)):
        return None
    vecty = Vec(a.dtype)

    def codegen(context, builder, sig, args):
        ptr = _vector_pointer(context, builder, sig.args[0], args[0], args[1:], vecty)
        return builder.load(ptr, align=1)

    return vecty(a, i, j), codegen


@intrinsic
def vstore(typingctx, a, i, j, v):
    """``a[i, j:j + L] = v``."""
    if not (_check_2d(a) and isinstance(v, Vec) and v.dtype == a.dtype):
        return None

    def codegen(context, builder, sig, args):
        ptr = _vector_pointer(context, builder, sig.args[0], args[0], args[1:3], sig.args[3])
        builder.store(args[3], ptr, align=1)
        return context.get_dummy_value()

    return types.none(a, i, j, v), codegen


@intrinsic
def vfma(typingctx, acc, s, v):
    """``acc + s * v`` with the scalar ``s`` broadcast, as one fused multiply-add."""
    if not (isinstance(acc, Vec) and acc == v and s == acc.dtype):
        return None

    def codegen(context, builder, sig, args):
        vec, scalar, other = args
        spread = _broadcast(builder, vec.type, scalar)
        return _llvm_intrinsic(builder, "fma", vec.type, [spread, other, vec])

    return acc(acc, s, v), codegen


def vector_lanes(a):
    """Elements of ``a``'s dtype in one vector (a compile-time constant in jitted code)."""
    return lanes(a.dtype)


@overload(vector_lanes, inline="always")
def _vector_lanes_overload(a):
    n = lanes(a.dtype)
    return lambda a: n


@intrinsic
def vzero(typingctx, a):
    """A vector of zeros of ``a``'s dtype."""
    if not _check_2d(a):
        return None
    vecty = Vec(a.dtype)

    def codegen(context, builder, sig, args):
        return ir.Constant(context.get_value_type(vecty), None)

    return vecty(a), codegen


@intrinsic
def vgroup(typingctx, a):
    """A group of :data:`GROUP` vectors of zeros of ``a``'s dtype: pass it as ``like`` to
    :func:`vload_like` and :func:`vload3_like` to load whole groups.

    Elementwise code on a group does each operation on its ``GROUP`` vectors one after the
    other (LLVM splits the wide vector into registers), so a pass of long dependency chains,
    the activations' ``exp`` and division, has ``GROUP`` independent chains interleaved in its
    instruction stream rather than one chain after another: the CPU's scheduler, which holds
    a few hundred waiting operations, then keeps its units busy. Results are the same, lane by
    lane. Measured for the GRU's float32 gate pass (8 rows of H = 64, one thread): 30 against
    41 ns per vector.
    """
    if not _check_2d(a):
        return None
    vecty = Vec(a.dtype, GROUP)

    def codegen(context, builder, sig, args):
        return ir.Constant(context.get_value_type(vecty), None)

    return vecty(a), codegen


def _load_like(like):
    """The codegen of a load of ``like``'s lanes from ``args[1]`` at the indices after it."""

    def codegen(context, builder, sig, args):
        ptr = _vector_pointer(context, builder, sig.args[1], args[1], args[2:], like)
        return builder.load(ptr, align=1)

    return codegen


@intrinsic
def vload_like(typingctx, like, a, i, j):
    """``a[i, j:j + n]``, ``n`` the lanes of ``like`` (a vector or a group: :func:`vgroup`)."""
    if not (isinstance(like, Vec) and _check_2d(a) and like.dtype == a.dtype):
        return None
    return like(like, a, i, j), _load_like(like)


@intrinsic
def vload3_like(typingctx, like, a, i, j, k):
    """``a[i, j, k:k + n]`` of a 3-D C-contiguous array, ``n`` the lanes of ``like``."""
    if not (isinstance(like, Vec) and _check_3d(a) and like.dtype == a.dtype):
        return None
    return like(like, a, i, j, k), _load_like(like)


@intrinsic
def vload3(typingctx, a, i, j, k):
    """The vector ``a[i, j, k:k + L]`` of a 3-D C-contiguous array (no view made)."""
    if not (_check_3d(a) and all(isinstance(n, types.Integer) for n in (i, j, k))):
        return None
    vecty = Vec(a.dtype)

    def codegen(context, builder, sig, args):
        ptr = _vector_pointer(context, builder, sig.args[0], args[0], args[1:], vecty)
        return builder.load(ptr, align=1)

    return vecty(a, i, j, k), codegen


@intrinsic
def vstore3(typingctx, a, i, j, k, v):
    """``a[i, j, k:k + L] = v`` for a 3-D C-contiguous array (no view made)."""
    if not (_check_3d(a) and isinstance(v, Vec) and v.dtype == a.dtype):
        return None

    def codegen(context, builder, sig, args):
        ptr = _vector_pointer(context, builder, sig.args[0], args[0], args[1:4], sig.args[4])
        builder.store(args[4], ptr, align=1)
        return context.get_dummy_value()

    return types.none(a, i, j, k, v), codegen


def _elementwise(op: str, doc: str):
    @intrinsic
    def f(typingctx, u, v):
        if not (isinstance(u, Vec) and u == v):
            return None

        def codegen(context, builder, sig, args):
            return getattr(builder, op)(args[0], args[1])

        return u(u, v), codegen

    f.__doc__ = doc
    return f


vadd = _elementwise("fadd", "``u + v`` elementwise.")
vsub = _elementwise("fsub", "``u - v`` elementwise.")
vmul = _elementwise("fmul", "``u * v`` elementwise.")
vdiv = _elementwise("fdiv", "``u / v`` elementwise.")


@intrinsic
def vsplat(typingctx, like, s):
    """A vector of ``like``'s type with ``s`` in every lane."""
    if not (isinstance(like, Vec) and s == like.dtype):
        return None

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(sig.return_type)
        return _broadcast(builder, vt, args[1])

    return like(like, s), codegen


def _broadcast(builder, vt, scalar):
    spread = builder.insert_element(
        ir.Constant(vt, ir.Undefined), scalar, ir.Constant(ir.IntType(32), 0)
    )
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), vt.count), [0] * vt.count)
    return builder.shuffle_vector(spread, ir.Constant(vt, ir.Undefined), zeros)


def _llvm_intrinsic(builder, name, vt, args):
    elt = "f32" if vt.element == ir.FloatType() else "f64"
    fnty = ir.FunctionType(vt, [vt] * len(args))
    fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.{name}.v{vt.count}{elt}")
    return builder.call(fn, list(args))


@intrinsic
def vmuladd(typingctx, a, b, c):
    """``a * b + c`` elementwise, as one fused multiply-add."""
    if not (isinstance(a, Vec) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        return _llvm_intrinsic(builder, "fma", args[0].type, args)

    return a(a, b, c), codegen


@intrinsic
def vfloor(typingctx, x):
    """``floor(x)`` elementwise."""
    if not isinstance(x, Vec):
        return None

    def codegen(context, builder, sig, args):
        return _llvm_intrinsic(builder, "floor", args[0].type, args)

    return x(x), codegen


@intrinsic
def vclamp(typingctx, x, lo, hi):
    """``x`` clamped to ``[lo, hi]`` elementwise; NaN stays NaN."""
    if not (isinstance(x, Vec) and x == lo == hi):
        return None

    def codegen(context, builder, sig, args):
        x, lo, hi = args
        v = builder.select(builder.fcmp_ordered("<", x, lo), lo, x)
        return builder.select(builder.fcmp_ordered(">", v, hi), hi, v)

    return x(x, lo, hi), codegen


@intrinsic
def vscalef(typingctx, p, n):
    """``p * 2**n`` elementwise for float32 lanes, ``n`` holding integers in [-125, 128] or
    NaN (NaN out); past float32's largest value the product overflows to inf.

    With AVX-512 one ``vscalefps`` a vector (the group's vectors one by one); else ``2**n``
    built from its exponent bits, multiplied in, and NaN put back where ``n`` is NaN: seven
    operations (``2**n`` as ``2**(n-1)`` times 2, so that both factors are normal). The
    products are the same (multiplying by a power of two is exact in the normal range). In
    the gate passes' ``exp`` (:func:`~tsrnn.kernels.common.activations.vexp`), with the
    NaN-keeping :func:`vclamp` (which spares ``exp`` a final NaN check): the GRU's gate pass
    alone (groups, 8 rows of H = 64, one thread) 19.2 against 22.6 ns per vector, with
    bitwise the same results; in the whole GRU forward (alternated calls, electricity shape,
    2 threads) 0.96-1.01x, within the noise.
    """
    if not (isinstance(p, Vec) and p == n and p.dtype == types.float32):
        return None

    def codegen(context, builder, sig, args):
        p, n = args
        if VECTOR_BYTES == 64:
            return _scalef_avx512(builder, p, n)
        vt = p.type
        it = ir.VectorType(ir.IntType(32), vt.count)
        i = builder.fptosi(n, it)  # poison for NaN lanes: not selected below
        # 2**n as 2**(n-1) * 2, both factors normal for n in [-125, 128]
        i = builder.add(i, ir.Constant(it, [126] * vt.count))
        i = builder.shl(i, ir.Constant(it, [23] * vt.count))
        scaled = builder.fmul(p, builder.bitcast(i, vt))
        scaled = builder.fmul(scaled, ir.Constant(vt, [2.0] * vt.count))
        return builder.select(builder.fcmp_ordered("ord", n, n), scaled, n)

    return p(p, n), codegen


def _scalef_avx512(builder, p, n):
    """``vscalefps`` on each 16-lane vector of ``p`` and ``n``, the results joined again."""
    i32 = ir.IntType(32)
    v16 = ir.VectorType(ir.FloatType(), 16)
    fnty = ir.FunctionType(v16, [v16, v16, v16, ir.IntType(16), i32])
    fn = cgutils.get_or_insert_function(
        builder.module, fnty, "llvm.x86.avx512.mask.scalef.ps.512"
    )
    pick = [  # the 16-lane vectors of a group (a single vector: the identity, which LLVM drops)
        ir.Constant(ir.VectorType(i32, 16), list(range(c, c + 16)))
        for c in range(0, p.type.count, 16)
    ]
    # all lanes (mask -1), the current rounding mode (4)
    out = [
        builder.call(fn, [builder.shuffle_vector(p, p, k), builder.shuffle_vector(n, n, k),
                          ir.Constant(v16, None), ir.Constant(ir.IntType(16), -1),
                          ir.Constant(i32, 4)])
        for k in pick
    ]
    while len(out) > 1:  # joined pairwise: GROUP is a power of two
        k = 2 * out[0].type.count
        join = ir.Constant(ir.VectorType(i32, k), list(range(k)))
        out = [builder.shuffle_vector(out[i], out[i + 1], join) for i in range(0, len(out), 2)]
    return out[0]


@intrinsic
def vsum(typingctx, v):
    """The sum of ``v``'s lanes, as a fixed tree of pairwise additions (halves added until one
    lane is left)."""
    if not isinstance(v, Vec):
        return None

    def codegen(context, builder, sig, args):
        x = args[0]
        i32 = ir.IntType(32)
        n = x.type.count
        while n > 1:
            h = n // 2
            undef = ir.Constant(x.type, ir.Undefined)
            half = ir.VectorType(i32, h)
            lo = builder.shuffle_vector(x, undef, ir.Constant(half, list(range(h))))
            hi = builder.shuffle_vector(x, undef, ir.Constant(half, list(range(h, n))))
            x = builder.fadd(lo, hi)
            n = h
        return builder.extract_element(x, ir.Constant(i32, 0))

    return v.dtype(v), codegen
