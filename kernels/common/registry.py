"""Backend registry: which kernel module runs a cell on which device and dtype.

Backend choice is one pure function, :func:`resolve_backend`; :func:`get_kernel` returns the
module implementing the calling convention described in :mod:`tsrnn.kernels`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

CELLS = ("rnn", "gru", "lstm")
BACKENDS = ("auto", "numba", "triton", "torch")
_MODULES = {"numba": "numba_cpu", "triton": "triton_gpu", "torch": "reference"}
_NUMBA_DTYPES = ("float32", "float64")
_TRITON_DTYPES = ("float32", "bfloat16", "float64")


class BackendUnavailableError(ValueError):
    """A kernel backend was asked for where it cannot run (device, dtype or missing package)."""


# Set when tsrnn's Triton kernels are made (:func:`_make_triton_kernels`): triton.jit reads
# TRITON_INTERPRET then, once, and the kernels stay interpreted (or compiled) whatever the
# variable says later.
_kernels_interpreted: bool | None = None


def _environment_interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def triton_interpreted() -> bool:
    """True when Triton runs tsrnn's kernels in its CPU interpreter (``TRITON_INTERPRET=1``).

    Once the kernels exist (the first :func:`get_kernel` for Triton), the mode they were made
    in: a later change of the variable does not change them, and the plan and the backend
    checks must not follow it either (a bfloat16 plan for compiled kernels gave garbage in the
    interpreter)."""
    if _kernels_interpreted is not None:
        return _kernels_interpreted
    return _environment_interpreted()


def _numba_jit_disabled() -> bool:
    """``NUMBA_DISABLE_JIT=1``: Numba runs functions as plain Python, which the kernels'
    SIMD intrinsics cannot do."""
    if "numba" in sys.modules:
        # the import statement, not sys.modules' entry: while another thread is still
        # importing Numba (a layer's first calls in several threads at once), the entry is
        # there but not yet complete, and the import waits for it
        import numba

        return bool(numba.config.DISABLE_JIT)
    return os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")


def _triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _device_type(device) -> str:
    return str(device).split(":")[0]


def resolve_backend(backend: str, device="cpu", dtype="float32") -> str:
    """Pick the kernel backend for tensors on ``device`` of ``dtype``.

    Parameters
    ----------
    backend : {'auto', 'numba', 'triton', 'torch'}
        ``'auto'`` picks Triton for CUDA tensors and Numba for CPU tensors (the torch
        reference under ``NUMBA_DISABLE_JIT=1``).
    device : str or torch.device
    dtype : str or torch.dtype

    Returns
    -------
    str
        ``'numba'``, ``'triton'`` or ``'torch'``.

    Raises
    ------
    BackendUnavailableError
        If the backend cannot run there, saying why and what to use instead.

    Examples
    --------
    >>> resolve_backend("auto", "cpu", "float64")
    'numba'
    >>> resolve_backend("torch", "cpu", "float16")
    'torch'
    """
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {BACKENDS}, got {backend!r}. Use 'auto' to let tsrnn "
            "choose Numba on CPU and Triton on CUDA."
        )
    dev = _device_type(device)
    name = _dtype_name(dtype)
    if backend == "auto":
        if dev == "cuda":
            backend = "triton" if _triton_installed() and name in _TRITON_DTYPES else "torch"
        elif dev == "cpu":
            numba_ok = name in _NUMBA_DTYPES and not _numba_jit_disabled()
            backend = "numba" if numba_ok else "torch"
        else:
            backend = "torch"
        return backend
    if backend == "numba":
        if dev != "cpu":
            raise BackendUnavailableError(
                f"backend='numba' runs on CPU tensors, but the input is on {device!r}. Move the "
                "module and input to the CPU, or use backend='auto' (Triton on CUDA)."
            )
        if name not in _NUMBA_DTYPES:
            raise BackendUnavailableError(
                f"backend='numba' supports float32 and float64, got {name}. Convert the input "
                "(e.g. .float()) or use backend='torch'."
            )
        if _numba_jit_disabled():
            raise BackendUnavailableError(
                "backend='numba' cannot run with NUMBA_DISABLE_JIT=1 (its kernels use SIMD "
                "intrinsics that exist only compiled). Unset it, or use backend='torch' (what "
                "backend='auto' then picks)."
            )
    elif backend == "triton":
        if not _triton_installed():
            raise BackendUnavailableError(
                "backend='triton' needs the triton package, which is not installed. "
                "`pip install triton` (Linux), or use backend='auto'."
            )
        if dev != "cuda" and not (dev == "cpu" and triton_interpreted()):
            raise BackendUnavailableError(
                f"backend='triton' runs on CUDA tensors, but the input is on {device!r}. Move it "
                "to a GPU, set TRITON_INTERPRET=1 before importing triton (and before tsrnn's "
                "first Triton call; the kernels keep the mode they were made in) to run them in "
                "Triton's (slow) CPU interpreter, or use backend='numba' on the CPU."
            )
        if name not in _TRITON_DTYPES:
            raise BackendUnavailableError(
                f"backend='triton' supports {', '.join(_TRITON_DTYPES)}, got {name}. Convert "
                "the input or use backend='torch'."
            )
    return backend


def available_backends(device="cpu", dtype="float32") -> list[str]:
    """The concrete backends that can run on ``device`` with ``dtype``.

    Examples
    --------
    >>> "numba" in available_backends("cpu", "float32")
    True
    """
    out = []
    for b in ("numba", "triton", "torch"):
        try:
            resolve_backend(b, device, dtype)
        except BackendUnavailableError:
            continue
        out.append(b)
    return out


def get_kernel(cell: str, backend: str, *, checked: bool = True):
    """The module implementing ``cell`` on a concrete ``backend``.

    Its functions check their arguments (``common/checks.py``). ``checked=False``, for
    callers that have checked them already (``tsrnn.nn``'s layers and functional forms, the
    forecaster's own calls): a view of the module whose functions skip that (a few us a
    call: 6% of a forecast step of a default model). Its functions take the arguments as
    they are (no ``None`` for the incoming gradients).

    Examples
    --------
    >>> get_kernel("gru", "torch").__name__
    'tsrnn.kernels.gru.reference'
    >>> get_kernel("gru", "torch", checked=False).__name__
    'tsrnn.kernels.gru.reference'
    """
    if cell not in CELLS:
        raise ValueError(f"cell must be one of {CELLS}, got {cell!r}.")
    if backend not in _MODULES:
        raise ValueError(
            f"get_kernel needs a concrete backend {tuple(_MODULES)}, got {backend!r}; "
            "call resolve_backend first."
        )
    if backend == "triton" and _kernels_interpreted is None:
        _make_triton_kernels()
    module = importlib.import_module(f"tsrnn.kernels.{cell}.{_MODULES[backend]}")
    if checked:
        return module
    view = _UNCHECKED.get(module.__name__)
    if view is None:
        view = _UNCHECKED[module.__name__] = _Unchecked(module)
    return view


class _Unchecked:
    """A kernel module whose checked functions are taken unchecked (their ``unchecked``);
    every other attribute is the module's, read from it at each access (a test's spy set on
    the module is seen)."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        if name == "_module":  # not set yet (copy.copy makes the object without __init__)
            raise AttributeError(name)
        value = getattr(self._module, name)
        return getattr(value, "unchecked", value)


_UNCHECKED: dict = {}


def _make_triton_kernels() -> None:
    """Import every cell's Triton kernels at once and record the mode they were made in.

    ``triton.jit`` reads ``TRITON_INTERPRET`` when it decorates a kernel: all of tsrnn's are
    made together, in one mode, which :func:`triton_interpreted` reports from then on."""
    global _kernels_interpreted
    mode = _environment_interpreted()
    for cell in CELLS:
        importlib.import_module(f"tsrnn.kernels.{cell}.triton_gpu")
    _kernels_interpreted = mode
