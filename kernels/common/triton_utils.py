"""What the Triton kernels of the three cells share: activations, tile helpers, launch plans.

Dimension legend: T time steps, B batch, H hidden size, G gates (RNN 1, GRU 3, LSTM 4);
``BLOCK_B`` batch rows per program (>= 16: ``tl.dot`` needs every dimension >= 16), ``CH`` the
hidden chunk (a power of two >= 16, padded with masks), ``NCH`` chunks covering ``H``.

Every recurrent kernel is persistent: one launch, grid over batch tiles, each program runs the
whole time loop for its ``BLOCK_B`` rows and all ``H`` columns (the step's dependence runs through
all of ``h``, so a program owning every column needs no grid-wide synchronisation). Two modes,
chosen on the host by :func:`plan`:

- **resident** (``RESIDENT``, ``NCH == 1``): the ``G`` recurrent weight tiles (``CH x CH`` each)
  are loaded once before the time loop and stay on chip (registers, or shared memory where the
  compiler stages the ``tl.dot`` operand there, as it does on sm_90); the state stays in
  registers. Used while the padded weights take at most :data:`RESIDENT_BYTES`.
- **streamed** (not ``RESIDENT``): the weights are too large to keep on chip (fp32 LSTM with
  H = 256 is 1 MiB), so each step reads them again in ``CH x CH`` tiles (L2-resident across
  steps) and the state round-trips through a small scratch buffer in the accumulation dtype
  (double-buffered over time, one ``tl.debug_barrier`` per phase), because a register tensor
  cannot be sliced into chunks. Still one launch for the whole sequence.

Above :data:`MAX_FUSED_HIDDEN` the cells fall back to the plain PyTorch reference and warn once
with :class:`tsrnn.exceptions.FallbackWarning`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from tsrnn.exceptions import FallbackWarning
from tsrnn.kernels.common.registry import triton_interpreted

MAX_FUSED_HIDDEN = 256
"""Largest hidden size run by the fused Triton kernels; larger ones use the reference."""

RESIDENT_BYTES = 128 * 1024
"""Most bytes of recurrent weights (all gates, padded) kept on chip for the whole time loop.

On sm_90 the compiler stages the ``tl.dot`` operand in shared memory. Measured on an H100
(``benchmarks/tune_cuda.py``): bf16 GRU and LSTM at H = 128 and the bf16 RNN at H = 256 (96 to
128 KiB) run 4 to 7 times faster resident than streamed. fp32 weights come in 16, 48, 64, then
192 KiB and more (GRU H = 128): the latter do not fit (tf32x3 asked for 400 KiB of shared
memory), so fp32 is resident up to RNN H = 128, GRU/LSTM H = 64, under this limit. GPUs with
less than 200 KiB of shared memory per block (A100: 164) keep at most 64 KiB resident. A knob,
not a law: set it (module attribute, read at each call) to move the boundary.
"""

STREAM_CHUNK = 32
"""Hidden chunk (``CH``) of the streamed mode: one ``CH x CH`` weight tile per ``tl.dot``.

32 keeps the G tiles in flight per step small (fp32 LSTM: 16 KiB); 64 made ptxas spill
(checked by compiling for sm_90 ahead of time: 9.5 KB of spills for the fp32 LSTM forward).
"""

FP32_PRECISION = "tf32x3"
"""How float32 recurrent products run on a GPU when torch does not allow TF32.

``"tf32x3"`` (default on sm_80 and newer): each operand is split into a TF32 high part and a TF32
low part and three tensor-core products are summed in fp32, which keeps about 22 of fp32's 24
mantissa bits per operand. Measured on an H100 (``benchmarks/tune_cuda.py``): errors against a
float64 run of 9e-7 (outputs) and 4e-7 (input-projection gradients), relative to the largest
value, where the fp32 FMA path (``"ieee"``) gives 7e-7 and 4e-7, at 3 to 4 times its speed.
``"ieee"`` forces the fp32 FMA path (exact fp32 products, far slower: no tensor cores). Where
``torch.backends.cuda.matmul.allow_tf32`` is True the products use single TF32 (``"tf32"``,
errors near 2e-3), as torch's own matmuls then do. A knob, read at each call.
"""

_warned: set = set()


@triton.jit
def _exp_f32(x):
    """``e^x`` in float32 to about 1 ulp over the whole range: ``2^k e^r`` with ``k`` the nearest
    integer to ``x / ln 2``, ``r = x - k ln 2`` (Cody-Waite, ``ln 2`` in two parts, so ``k ln2_hi``
    is exact) and ``e^r`` by its Taylor polynomial to ``r^7`` (``|r| <= 0.35``: truncation below
    1e-8); ``2^k`` is two factors ``2^(k >> 1) 2^(k - (k >> 1))`` built from exponent bits, each
    a normal number for every ``k`` from -150 (results below float32's normals round gradually
    to 0) to 128. Compiled, ``tl.exp`` is the GPU's ``ex2.approx`` of ``x log2(e)``: errors up to
    3.7e-6 relative at ``|x| = 80``, 1e-6 in ``sigmoid`` and ``tanh`` (measured on an H100),
    where this gives 7.7e-8. NaN stays NaN, ``e^x`` past float32's range is ``inf``, and 0
    below ``e^-104``."""
    y = tl.minimum(tl.maximum(x, -104.0), 88.72283935546875)
    k = tl.floor(y * 1.4426950408889634 + 0.5)
    r = y - k * 0.693145751953125
    r = r - k * 1.428606765330187e-06
    p = r * (1.0 / 5040.0) + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    ki = k.to(tl.int32)
    k1 = ki >> 1  # floor(k / 2), also for negative k
    e = p * ((k1 + 127) << 23).to(tl.float32, bitcast=True)
    e = e * ((ki - k1 + 127) << 23).to(tl.float32, bitcast=True)
    e = tl.where(x > 88.72283935546875, float("inf"), e)  # e^x overflows float32 there
    e = tl.where(x < -104.0, 0.0, e)  # below half the smallest subnormal
    return tl.where(x != x, x, e)


@triton.jit
def exp(x):
    """``e^x`` in the dtype of ``x``: float32 by :func:`_exp_f32`; float64 (libdevice compiled)
    and other dtypes by ``tl.exp``."""
    if x.dtype == tl.float32:
        e = _exp_f32(x)
    else:
        e = tl.exp(x)
    return e


@triton.jit
def sigmoid(x):
    """Logistic function, in the dtype of ``x``."""
    return 1.0 / (1.0 + exp(-x))


@triton.jit
def tanh(x):
    """Hyperbolic tangent, accurate to a few ulp relative also near 0, in the dtype of ``x``.

    ``1 - 2 / (exp(2|x|) + 1)`` saturates correctly (no inf/inf) but loses relative precision
    as ``|x| -> 0`` (cancellation), so below a threshold the odd Taylor polynomial to ``x^11`` is
    used: 1/8 in float64 (truncation < 1e-13 relative), 0.35 in float32 (truncation < 2e-8;
    at 1/8 the cancellation left 1e-6 relative errors). One code path for the GPU and the
    interpreter, which lacks libdevice. Worst relative error in float32 over [-20, 20]: 2.2e-7
    on an H100 (libdevice's tanh: 1.9e-7).
    """
    a = tl.abs(x)
    # tanh(20) rounds to 1 in fp32 and fp64 alike; clamping keeps exp from overflowing. A NaN
    # must pass the clamp (tl.minimum drops it by default: tanh(NaN) was 1)
    clamped = tl.minimum(a, 20.0, propagate_nan=tl.PropagateNan.ALL)
    big = 1.0 - 2.0 / (exp(2.0 * clamped) + 1.0)
    if x.dtype == tl.float32:
        threshold = 0.35
    else:
        threshold = 0.125
    x2 = x * x
    poly = x2 * (-1382.0 / 155925.0) + 62.0 / 2835.0
    poly = x2 * poly - 17.0 / 315.0
    poly = x2 * poly + 2.0 / 15.0
    poly = x2 * poly - 1.0 / 3.0
    small = x + x * x2 * poly  # odd in x
    small = tl.where(x == 0.0, x, small)  # tanh(-0.0) = -0.0, as torch's (-0 + +0 is +0)
    return tl.where(a < threshold, small, tl.where(x < 0, -big, big))


@triton.jit
def load_rows(ptr, rows, stride, cols, mask):
    """Load ``ptr[rows, cols]`` of a row-major matrix with row ``stride``; 0 where masked."""
    return tl.load(ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)


@triton.jit
def store_rows(ptr, rows, stride, cols, value, mask):
    """Store ``value`` into ``ptr[rows, cols]``, cast to the element type of ``ptr``."""
    tl.store(ptr + rows[:, None] * stride + cols[None, :],
             value.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def load_w(w, g, k0, n0, H: tl.constexpr, CH: tl.constexpr, TRANSPOSE: tl.constexpr):
    """One ``CH x CH`` tile of gate ``g``'s block of ``W_hh`` (G*H, H), zero-padded.

    ``TRANSPOSE``: the tile ``W_g^T[k0:k0+CH, n0:n0+CH]`` (H_in x H_out), the right operand of the
    forward ``h @ W_g^T``; otherwise ``W_g[k0:k0+CH, n0:n0+CH]`` (gate rows x H_in), the right
    operand of the backward ``d_gh_g @ W_g``.
    """
    rk = k0 + tl.arange(0, CH).to(tl.int64)
    rn = n0 + tl.arange(0, CH).to(tl.int64)
    mask = (rk < H)[:, None] & (rn < H)[None, :]
    if TRANSPOSE:
        ptrs = w + (g * H + rn[None, :]) * H + rk[:, None]
    else:
        ptrs = w + (g * H + rk[:, None]) * H + rn[None, :]
    return tl.load(ptrs, mask=mask, other=0.0)


@triton.jit
def mm(a, b, DOT_DTYPE: tl.constexpr, ACC_DTYPE: tl.constexpr, PRECISION: tl.constexpr):
    """``a @ b`` on the tensor cores: operands in ``DOT_DTYPE``, accumulated in ``ACC_DTYPE``."""
    return tl.dot(a.to(DOT_DTYPE), b.to(DOT_DTYPE), input_precision=PRECISION,
                  out_dtype=ACC_DTYPE)


def autotune_configs() -> list:
    """Launch configurations tried by :func:`autotune`: warps and pipeline stages.

    Under the interpreter a single configuration: there is nothing to time, and each timing run
    would replay the whole sequence in Python.
    """
    if triton_interpreted():
        return [triton.Config({}, num_warps=4, num_stages=1)]
    return [triton.Config({}, num_warps=w, num_stages=s) for w in (4, 8) for s in (1, 2)]


def autotune(kernel):
    """``triton.autotune`` over :func:`autotune_configs`, keyed on the tiling (not on T or B).

    The kernels overwrite every output and re-initialise their scratch, so the timing runs need
    no reset; T is left out of the key so a new sequence length neither re-tunes nor recompiles.
    """
    return triton.autotune(configs=autotune_configs(),
                           key=["H", "BLOCK_B", "CH", "NCH", "RESIDENT"])(kernel)


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


@dataclass(frozen=True)
class Plan:
    """How one recurrent kernel is launched (all fields but ``grid`` are compile-time)."""

    BLOCK_B: int
    CH: int
    NCH: int
    RESIDENT: bool
    n_prog: int
    dot_dtype: object  # tl dtype of the tl.dot operands
    acc_dtype: object  # tl dtype of state and accumulators
    acc_torch: torch.dtype
    precision: str

    @property
    def grid(self):
        return (self.n_prog,)

    @property
    def rows(self) -> int:
        """Batch rows including the padding of the last tile (scratch buffers have this many)."""
        return self.n_prog * self.BLOCK_B

    def consts(self) -> dict:
        """The kernel's compile-time arguments (``num_warps``/``num_stages`` come from
        :func:`autotune`)."""
        return dict(BLOCK_B=self.BLOCK_B, CH=self.CH, NCH=self.NCH, RESIDENT=self.RESIDENT,
                    DOT_DTYPE=self.dot_dtype, ACC_DTYPE=self.acc_dtype,
                    PRECISION=self.precision)


def plan(B: int, H: int, G: int, dtype: torch.dtype, device) -> Plan:
    """Tile sizes, mode and dtypes for a batch of ``B`` rows of a ``G``-gate cell of size ``H``.

    Parameters
    ----------
    B, H, G : int
    dtype : torch.dtype
        float32, bfloat16 or float64 (the dtype of the inputs and outputs).
    device : torch.device

    Returns
    -------
    Plan
    """
    interpreted = triton_interpreted()
    # the compiled kernels' GPU, or None (the interpreter, or CPU tensors)
    gpu = (torch.cuda.get_device_properties(device)
           if device.type == "cuda" and not interpreted else None)
    BLOCK_H = max(16, next_pow2(H))
    sizes = {torch.bfloat16: 2, torch.float32: 4, torch.float64: 8}
    if dtype not in sizes:
        raise TypeError(
            f"tsrnn's Triton kernels take float32, bfloat16 or float64 tensors, got {dtype}: "
            "convert them (e.g. .float()) or use the torch reference (backend='torch')."
        )
    item = sizes[dtype]
    limit = RESIDENT_BYTES
    if gpu is not None and getattr(gpu, "shared_memory_per_block_optin", 0) < 200 * 1024:
        limit = min(limit, 64 * 1024)
    resident = G * BLOCK_H * BLOCK_H * item <= limit
    CH = BLOCK_H if resident else max(16, min(BLOCK_H, next_pow2(STREAM_CHUNK)))
    NCH = triton.cdiv(H, CH)
    BLOCK_B = 16
    if gpu is not None:
        # One program per SM is the fastest a persistent loop gets; only when the batch needs
        # more than one wave of 16-row tiles do larger tiles pay for their extra registers.
        while (triton.cdiv(B, BLOCK_B) > gpu.multi_processor_count and BLOCK_B < 64
               and BLOCK_B * CH < 2048):
            BLOCK_B *= 2
    n_prog = max(1, triton.cdiv(B, BLOCK_B))
    if dtype == torch.float64:
        dot_dtype, acc_dtype, acc_torch = tl.float64, tl.float64, torch.float64
    elif dtype == torch.bfloat16 and not interpreted:
        dot_dtype, acc_dtype, acc_torch = tl.bfloat16, tl.float32, torch.float32
    else:
        # The interpreter's tl.dot multiplies bfloat16 bit patterns as integers: feed it fp32.
        dot_dtype, acc_dtype, acc_torch = tl.float32, tl.float32, torch.float32
    precision = "ieee"
    if dtype == torch.float32 and gpu is not None:
        if torch.backends.cuda.matmul.allow_tf32:
            precision = "tf32"
        elif FP32_PRECISION != "ieee" and (gpu.major, gpu.minor) >= (8, 0):
            precision = FP32_PRECISION
    return Plan(BLOCK_B, CH, NCH, resident, n_prog, dot_dtype, acc_dtype, acc_torch, precision)


def fused(cell: str, H: int) -> bool:
    """Whether the fused kernels run hidden size ``H``; if not, warn once per cell and size."""
    if H <= MAX_FUSED_HIDDEN:
        return True
    if (cell, H) not in _warned:
        _warned.add((cell, H))
        warnings.warn(
            f"tsrnn triton {cell}: hidden_size={H} exceeds the fused kernels' limit of "
            f"{MAX_FUSED_HIDDEN}; running the plain PyTorch reference loop instead (correct, "
            "slower: one matmul per step, backward by autograd).",
            FallbackWarning,
            stacklevel=_outside_stacklevel(),
        )
    return False


def _outside_stacklevel() -> int:
    """``warnings.warn``'s stacklevel, from the function that calls this one, of the first frame
    outside tsrnn and torch: the user's line that called the layer (through ``Module.__call__``
    and autograd), not tsrnn's own."""
    import tsrnn
    import tsrnn.kernels

    roots = tuple(
        os.path.dirname(module.__file__) + os.sep for module in (tsrnn, tsrnn.kernels, torch)
    )
    frame, level = sys._getframe(2), 2  # the caller of the function that warns
    while frame is not None and frame.f_code.co_filename.startswith(roots):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2


def scratch(p: Plan, n: int, H: int, device, slots: int = 2):
    """fp32/fp64 state buffer ``(slots, rows, n*H)`` of the streamed mode; ``None`` if resident."""
    if p.RESIDENT:
        return None
    return torch.empty((slots, p.rows, n * H), dtype=p.acc_torch, device=device)


def on_device(device):
    """Launch context: Triton launches on the *current* CUDA device, not on the tensors' one."""
    if device.type == "cuda":
        return torch.cuda.device(device)
    return contextlib.nullcontext()


def as_contiguous(*tensors):
    return tuple(None if t is None else t.contiguous() for t in tensors)


def jit_cache_size(kernel) -> int:
    """Compiled variants of a (possibly heuristics-wrapped) ``@triton.jit`` kernel, all devices."""
    while not hasattr(kernel, "device_caches") and hasattr(kernel, "fn"):
        kernel = kernel.fn
    caches = getattr(kernel, "device_caches", None)
    if caches is None:
        raise TypeError("the interpreter compiles nothing: there is no kernel cache to inspect")
    return sum(len(c[0]) for c in caches.values())
