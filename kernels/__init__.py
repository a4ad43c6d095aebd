"""Recurrent kernels: the RNN/GRU/LSTM step, forward and backward through time.

One folder per cell (``rnn``, ``gru``, ``lstm``), one file per backend:

- ``reference.py``: plain PyTorch loops, the specification (differentiable by autograd);
- ``numba_cpu.py``: Numba-jitted CPU kernels owning the whole time loop;
- ``triton_gpu.py``: Triton GPU kernels (persistent over time).

Every kernel follows one calling convention (dimension legend: ``T`` time steps, ``B`` batch,
``H`` hidden size, ``G`` gates: 1 for RNN, 3 for GRU, 4 for LSTM)::

    forward(gx, w_hh, b_hh, h0, c0=None, **options) -> out, h_n, c_n, saved
    backward(grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved, **options)
        -> d_gx, d_gh, d_h0, d_c0

``gx`` (T, B, G*H) is the input projection ``x @ W_ih.T + b_ih`` for all steps, computed
before the kernel as one matmul; ``w_hh`` (G*H, H) and ``b_hh`` (G*H,) are the recurrent
weights; ``h0``/``c0`` (B, H) the initial state. ``d_gh`` (T, B, G*H) is the gradient of the
recurrent pre-activation ``h_{t-1} @ W_hh.T + b_hh``, from which the caller forms
``dW_hh = d_gh^T @ h_prev`` as one matmul after the loop; for RNN and LSTM it equals
``d_gx``. ``saved`` holds what the backend keeps for its backward (activated gates, ...);
``grad_hn``/``grad_cn`` are the gradients of the final state (truncated BPTT carries the state
on, so the final state has its own gradient) and ``d_h0``/``d_c0`` those of the initial state.
``grad_out``, ``grad_hn`` and ``grad_cn`` may be ``None`` (zeros: an output the loss
does not use; not through ``get_kernel(..., checked=False)``). ``options`` are
``nonlinearity`` ('tanh' | 'relu', RNN only; the GRU and LSTM take 'tanh' alone, as a
no-op). ``c0``, ``c_n``, ``grad_cn`` and ``d_c0`` are ``None`` except for the LSTM.

The Numba kernels also take the layer input itself::

    forward_projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0=None, **options) -> out, h_n, c_n, saved

the same as ``forward(x @ w_ih.T + b_ih, ...)`` with the projection formed block by block in
the time loop, so that ``gx`` is never written out (their backward does not need it), and::

    backward_with_weight_grads(grad_out, grad_hn, grad_cn, x, w_hh, b_hh, h0, c0, out, saved,
                               *, keep_d_gx=False, **options)
        -> d_gx, d_h0, d_c0, d_w_ih, d_b_ih, d_w_hh, d_b_hh

the backward with the weight and bias gradients summed in its time loop
(``common/numba_grads.py``); ``d_gx`` only where ``keep_d_gx`` (else ``None``), ``d_gh``
never written out. ``tsrnn.nn`` layers on the Numba backend use both. The Numba GRU also
runs a linear head inside its time loops, for the forecaster's training loss
(``tsrnn.nn.layer_head_sq_loss``)::

    forward_projected_head(x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, y) -> out, h_n, resid, saved
    backward_head(grad_hn, x, w_hh, b_hh, h0, out, saved, w_o, e, *, keep_d_gx=False)
        -> d_gx, d_h0, None, d_w_ih, d_b_ih, d_w_hh, d_b_hh, d_w_o, d_b_o

``resid`` (T, B, O) = ``out @ w_o.T + b_o - y`` formed while each step's states are in cache;
``e`` (T, B, O) the loss's gradient with respect to the head's outputs, from which the backward
forms the states' gradient step by step (no ``grad_out`` (T, B, H)) and sums the head's
gradients (``common/numba_head.py``). Both in one call, for a loss whose gradient with respect
to the head's outputs is ``factor * resid`` and which does not use ``h_n``::

    train_head(x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, y, factor, *, keep_d_gx=False,
               grads_out=None)
        -> h_n, resid, d_gx, d_h0, d_w_ih, d_b_ih, d_w_hh, d_b_hh, d_w_o, d_b_o

each block of batch rows run backward right after its forward, its saved gates kept in the
thread's own buffers (about 2 MB at the electricity benchmark's shape: in the core's cache)
instead of the whole batch's going out to memory and back; its threads take the blocks one at
a time, whichever is free (``common/numba_sched.py``), not a fixed share each. With
``grads_out`` (six arrays or tensors of the gradients' shapes) the six gradients are added to
those in place, as ``grad.add_(g)`` would, and returned: a training step's accumulation into
the parameters' gradients without new tensors.

On the CPU the Numba kernels' recurrent product is a register-tiled micro-kernel on explicit
SIMD vectors (``common/numba_linalg.py``): 512-bit with 8-row tiles where Numba compiles for
an AVX-512 CPU (3 vectors wide where the columns allow, as the GRU's 3H: each broadcast
element of the left operand then feeds 3 multiply-adds), else 256-bit with a 4-row tile;
every element is one chain of multiply-adds whatever its tile, so results do not depend on
the tiling nor on the thread count. The arrays those vectors are loaded from and stored to
start on a cache line (``common/aligned.py``): the kernels' scratch and the weights they lay
out, and the parameters' views, copied where a fit's flat buffer puts them off a line.
Their large outputs come from ``common/workspace.py``: fresh tensors, except
inside ``workspace.reuse_buffers()`` (the forecaster's training epochs), where a buffer
nothing uses any more is handed out again instead of new pages from the operating system.

Every backend's public functions check the arguments a caller builds first
(``common/checks.py``: shapes, dtypes and devices that agree, the RNN's ``nonlinearity``,
``train_head``'s ``grads_out``), raising ``ValueError`` or ``TypeError`` with the layers'
messages before any work: the Numba and Triton kernels index without bounds checks, and a
wrong shape read or wrote past an array's end. ``saved`` is not checked: it must be what the
same backend's forward returned for the same arguments. Tensors of a dtype or on a device the
backend cannot run (float16 on Numba, CPU tensors on Triton outside its interpreter) raise
``BackendUnavailableError``, as ``resolve_backend`` does.

The functions are the raw steps, not autograd operations: the Numba and Triton ones return
tensors that record no graph (``requires_grad=False`` whatever the inputs), while the
reference's, plain PyTorch, do. For gradients by autograd, call ``tsrnn.nn.recurrence`` (or
the layers), which wires each backend's backward in.

This package imports neither pandas, scikit-learn nor ``torch.nn``.
"""

from tsrnn.kernels.common.registry import (
    CELLS,
    BackendUnavailableError,
    available_backends,
    get_kernel,
    resolve_backend,
)

__all__ = [
    "CELLS",
    "BackendUnavailableError",
    "available_backends",
    "get_kernel",
    "resolve_backend",
]
