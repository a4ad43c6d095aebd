"""The kernels' entry points check their arguments (``kernels/common/checks.py``).

The Numba and Triton kernels index without bounds checks. Called directly, as
``tsrnn.kernels.get_kernel`` hands them out, a (G*H, 1) ``w_hh`` crashed the process with
heap corruption, an ``h0`` with fewer rows than ``gx`` dropped the other rows, mixed dtypes
failed in Numba's type inference, and the reference ran ReLU for any nonlinearity but
``'tanh'``. Every backend now refuses such arguments before any work, with the messages the
layers give.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest
import torch

from tsrnn.kernels import available_backends, get_kernel

GATES = {"rnn": 1, "gru": 3, "lstm": 4}
# Triton's kernels run in its CPU interpreter here (tests/conftest.py), called directly
BACKENDS = ["numba", "torch", "triton"]


def _kernel(cell, backend):
    if backend == "triton" and "triton" not in available_backends("cpu", "float64"):
        return importlib.import_module(f"tsrnn.kernels.{cell}.triton_gpu")
    return get_kernel(cell, backend)


def _args(cell, T=4, B=3, H=5, dtype=torch.float64):
    G = GATES[cell]
    gx = torch.randn(T, B, G * H, dtype=dtype)
    w = torch.randn(G * H, H, dtype=dtype) * 0.3
    b = torch.randn(G * H, dtype=dtype)
    h0 = torch.randn(B, H, dtype=dtype)
    c0 = torch.randn(B, H, dtype=dtype) if cell == "lstm" else None
    return gx, w, b, h0, c0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cell", list(GATES))
def test_forward_refuses_shapes_dtypes_and_states_that_disagree(cell, backend):
    kernel = _kernel(cell, backend)
    gx, w, b, h0, c0 = _args(cell)
    with pytest.raises(ValueError, match=r"w_hh has shape \(\d+, 1\), expected"):
        kernel.forward(gx, w[:, :1], b, h0, c0)
    with pytest.raises(ValueError, match=r"h0 has shape \(2, 5\), expected \(3, 5\)"):
        kernel.forward(gx, w, b, h0[:2], None if c0 is None else c0[:2])
    with pytest.raises(TypeError, match=r"is torch\.float64 but gx is torch\.float32"):
        kernel.forward(gx.float(), w, b, h0, c0)
    with pytest.raises(TypeError, match="floating-point"):
        kernel.forward(gx.long(), w.long(), b.long(), h0.long(), None if c0 is None else c0.long())
    with pytest.raises(ValueError, match="must be 2-D"):
        kernel.forward(gx, w, b, h0[0], c0)
    if cell != "lstm":
        with pytest.raises(ValueError, match="c0 is for cell='lstm' only"):
            kernel.forward(gx, w, b, h0, h0.clone())
    out, hn, cn, saved = kernel.forward(gx, w, b, h0, c0)  # and the right ones run
    with pytest.raises(ValueError, match=r"grad_out must be a tensor of shape \(4, 3, 5\)"):
        kernel.backward(out[:, :2], hn, cn, gx, w, b, h0, c0, out, saved)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unknown_nonlinearity_is_refused_by_every_backend(backend):
    """The reference ran ReLU for 'Tanh'; Numba raised a bare KeyError."""
    gx, w, b, h0, _ = _args("rnn")
    with pytest.raises(ValueError, match="Unknown nonlinearity 'Tanh'"):
        _kernel("rnn", backend).forward(gx, w, b, h0, nonlinearity="Tanh")


def _head_args():
    """A GRU layer with a linear head of one output: x (4, 3, 2), H = 5."""
    f = torch.float64
    _, w, b, h0, _ = _args("gru")
    x, w_ih = torch.randn(4, 3, 2, dtype=f), torch.randn(15, 2, dtype=f)
    return (
        x,
        w_ih,
        w,
        b,
        h0,
        torch.randn(1, 5, dtype=f),
        torch.zeros(1, dtype=f),
        torch.randn(4, 3, 1, dtype=f),
    )


def test_numba_head_functions_check_the_head():
    kernel = get_kernel("gru", "numba")
    x, w_ih, w, b, h0, w_o, b_o, y = _head_args()
    with pytest.raises(ValueError, match=r"w_o must be a tensor of shape \(1, 5\)"):
        kernel.train_head(x, w_ih, b, w, b, h0, w_o[:, :4], b_o, y, 1.0)
    with pytest.raises(ValueError, match=r"y must be a tensor of shape \(4, 3, 1\)"):
        kernel.forward_projected_head(x, w_ih, b, w, b, h0, w_o, b_o, y[:, :2])
    with pytest.raises(ValueError, match=r"w_ih has shape \(15, 3\), expected \(15, 2\)"):
        kernel.forward_projected(x, torch.randn(15, 3).double(), b, w, b, h0)
    kernel.train_head(x, w_ih, b, w, b, h0, w_o, b_o, y, 1.0)


def test_the_heap_corrupting_call_now_raises_before_any_work():
    """A (3H, 1) w_hh at H = 256 wrote past the kernel's arrays: "free(): invalid next size",
    the process aborted (run in a subprocess, so that a regression cannot take pytest down)."""
    code = (
        "import torch; from tsrnn.kernels import get_kernel\n"
        "k = get_kernel('gru', 'numba'); f = torch.float64; T, B, H = 50, 64, 256\n"
        "try:\n"
        "    k.forward(torch.randn(T, B, 3 * H, dtype=f), torch.randn(3 * H, 1, dtype=f),\n"
        "              torch.zeros(3 * H, dtype=f), torch.zeros(B, H, dtype=f))\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: gru.numba_cpu.forward: w_hh has shape (768, 1)" in done.stdout


def test_callers_that_checked_already_can_skip_the_checks():
    """tsrnn.nn and the forecaster check their arguments themselves: they take the kernels
    unchecked (about 6 us a call, 6% of a default model's forecast step)."""
    for cell in GATES:
        checked, view = get_kernel(cell, "numba"), get_kernel(cell, "numba", checked=False)
        assert view.forward is checked.forward.unchecked
        assert view.__name__ == checked.__name__ and view.GATES == checked.GATES


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cell", list(GATES))
def test_every_backend_keeps_one_calling_convention(cell, backend):
    """Only Triton took None for an unused incoming gradient (the reference and Numba
    failed inside), and Numba refused nonlinearity='tanh' for the GRU and LSTM, which the
    others took."""
    kernel, reference = _kernel(cell, backend), get_kernel(cell, "torch")
    gx, w, b, h0, c0 = _args(cell)
    out, _, _, saved = kernel.forward(gx, w, b, h0, c0, nonlinearity="tanh")
    g = torch.randn_like(out)
    got = kernel.backward(g, None, None, gx, w, b, h0, c0, out, saved, nonlinearity="tanh")
    zero = torch.zeros_like(h0)
    want = reference.backward(g, zero, None if c0 is None else zero, gx, w, b, h0, c0, out, ())
    for a, e in zip(got, want):
        if e is not None:
            torch.testing.assert_close(a, e, rtol=1e-10, atol=1e-10)
    if cell != "rnn":
        with pytest.raises(ValueError, match="option of the RNN cell only"):
            kernel.forward(gx, w, b, h0, c0, nonlinearity="relu")


def test_arguments_by_name_and_missing_tensors():
    """Keyword calls failed in the check ("missing ... argument: 'x'") and None for a
    required tensor gave an AssertionError from the check itself."""
    kernel = get_kernel("gru", "numba")
    gx, w, b, h0, _ = _args("gru")
    out, _, _, saved = kernel.forward(gx=gx, w_hh=w, b_hh=b, h0=h0)
    by_name = kernel.backward(
        grad_out=torch.ones_like(out), grad_hn=None, grad_cn=None, gx=gx, w_hh=w, b_hh=b,
        h0=h0, c0=None, out=out, saved=saved,
    )  # fmt: skip
    by_position = kernel.backward(torch.ones_like(out), None, None, gx, w, b, h0, None, out, saved)
    for a, e in zip(by_name, by_position):
        if e is not None:
            torch.testing.assert_close(a, e, rtol=0, atol=0)
    for args, name in (((gx, None, b, h0), "w_hh"), ((gx, w, b, None), "h0")):
        with pytest.raises(TypeError, match=f"{name} is required, got None"):
            kernel.forward(*args)
    import copy

    view = get_kernel("gru", "numba", checked=False)
    assert copy.copy(view).forward is view.forward  # a RecursionError before


def test_train_head_checks_the_gradients_it_adds_into():
    kernel = get_kernel("gru", "numba")
    x, w_ih, w, b, h0, w_o, b_o, y = _head_args()
    wrong = [torch.zeros(2, 2, dtype=torch.float64)] * 6  # wrote past them: a segfault
    with pytest.raises(ValueError, match="grads_out must be six arrays"):
        kernel.train_head(x, w_ih, b, w, b, h0, w_o, b_o, y, 1.0, grads_out=wrong)
    # of the right shapes but another dtype: int64 buffers took every gradient as 0, float32
    # ones beside float64 arguments rounded them, without a word
    shapes = [p.shape for p in (w_ih, b, w, b, w_o, b_o)]
    for dtype in (torch.int64, torch.float32):
        buffers = [torch.zeros(shape, dtype=dtype) for shape in shapes]
        with pytest.raises(TypeError, match=f"gradient of w_ih is {dtype}, but the arguments"):
            kernel.train_head(x, w_ih, b, w, b, h0, w_o, b_o, y, 1.0, grads_out=buffers)
        arrays = [buffer.numpy() for buffer in buffers]
        with pytest.raises(TypeError, match=r"gradient of w_ih is (int64|float32), but"):
            kernel.train_head(x, w_ih, b, w, b, h0, w_o, b_o, y, 1.0, grads_out=arrays)
    strided = [torch.zeros(shape, dtype=h0.dtype) for shape in shapes]
    strided[2] = torch.zeros(shapes[2][::-1], dtype=h0.dtype).T
    with pytest.raises(ValueError, match="gradient of w_hh must be a C-contiguous CPU array"):
        kernel.train_head(x, w_ih, b, w, b, h0, w_o, b_o, y, 1.0, grads_out=strided)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_numba_refuses_dtypes_it_cannot_run_as_resolve_backend_does(dtype):
    """float16 failed deep in Numba's type system ("NotImplementedError: float16"), bfloat16
    as "Got unsupported ScalarType BFloat16"; the reference runs them."""
    from tsrnn.kernels import BackendUnavailableError

    gx, w, b, h0, _ = _args("gru", dtype=dtype)
    with pytest.raises(BackendUnavailableError, match=r"numba_cpu.forward: backend='numba' "
                       rf"supports float32 and float64, got {str(dtype)[6:]}"):
        get_kernel("gru", "numba").forward(gx, w, b, h0)
    out, hn, _, _ = get_kernel("gru", "torch").forward(gx, w, b, h0)
    assert out.dtype == dtype
    with pytest.raises(BackendUnavailableError, match=r"numba_cpu\.backward"):
        get_kernel("gru", "numba").backward(out, hn, None, gx, w, b, h0, None, out, ())


def test_triton_on_cpu_tensors_outside_the_interpreter_names_the_fix():
    """Without TRITON_INTERPRET the kernels failed at launch with "0 active drivers ([]).
    There should only be one." (run in a subprocess without it: tests set it)."""
    pytest.importorskip("triton", reason="the Triton backend needs the triton package")
    if torch.cuda.is_available():
        pytest.skip("on a CUDA machine Triton has a driver: CPU tensors are what this checks")
    code = (
        "import torch; from tsrnn.kernels import get_kernel\n"
        "k = get_kernel('gru', 'triton')\n"
        "try:\n"
        "    k.forward(torch.randn(3, 2, 12), torch.randn(12, 4), torch.randn(12),\n"
        "              torch.randn(2, 4))\n"
        "except ValueError as e:\n"
        "    print('refused:', type(e).__name__, e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: BackendUnavailableError gru.triton_gpu.forward: backend='triton' runs on " \
        "CUDA tensors" in done.stdout
    assert "TRITON_INTERPRET=1" in done.stdout


def test_the_parallel_kernels_pickle_by_reference_as_numbas_dispatchers_do():
    # wrapped to take turns under the workqueue layer, they failed to pickle ("not the same
    # object as tsrnn.kernels.gru.numba_cpu._forward")
    import pickle

    from tsrnn.kernels.gru import numba_cpu

    assert pickle.loads(pickle.dumps(numba_cpu._forward)) is numba_cpu._forward
