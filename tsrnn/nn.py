"""Recurrent layers on tsrnn's fused kernels: drop-in replacements for ``torch.nn``.

``tsrnn.nn.RNN``, ``GRU`` and ``LSTM`` subclass the ``torch.nn`` layers: same constructor
arguments, parameter names and shapes, ``state_dict`` (both ways), ``forward(input, hx=None)``
semantics and return values, unbatched input included. Only the recurrence runs elsewhere: on
the kernel chosen by ``backend`` (``'auto'``: Triton for CUDA tensors, Numba for CPU tensors;
``'torch'``: the plain PyTorch reference loop).

Per layer and direction the work is: one matmul for the input projection of all steps, one
kernel call for the time loop, and in backward one kernel call running time in reverse followed
by one matmul for each weight gradient. On the Numba backend one autograd Function covers the
whole layer direction (:class:`_NumbaLayer`): the kernel forms the input projection itself,
step by step in its time loop (``forward_projected``: the (T, B, G*H) projection is never
written out), and its backward sums the weight and bias gradients in its own time loop
(``backward_with_weight_grads``, :mod:`tsrnn.kernels.common.numba_grads`), while each step's
rows are in cache: the (T, B, G*H) gradients of the gates are never written out either,
except where the layer's input needs a gradient. For the forecaster's training,
:func:`layer_head_sq_loss` runs a one-layer GRU, its linear head and the squared-error loss
as one Function, the head inside the kernel's time loops, forward and backward in one kernel
call (each block of rows backward right after its forward, while its saved gates are in
cache); :func:`layer_head_sq_loss_grads` gives the same value and gradients without autograd.

Gradients are first order: the kernels' backward is not itself differentiable, so a second
derivative through a layer (a gradient penalty, a Hessian-vector product) raises torch's
"differentiate twice" error, as soon as a backward pass runs with ``create_graph=True``;
``backend='torch'`` supports it.

Under ``torch.func`` transforms (``grad``, ``jacrev``, ``vmap``, ...) the layers and the
functional forms run the ``backend='torch'`` reference loop whatever ``backend`` says: the
kernels read the tensors' memory, which the transforms' wrapped tensors do not expose. The
check is one call per layer direction (``torch._C._are_functorch_transforms_active``, the one
``torch.autograd.Function`` makes); results are those of ``backend='torch'``, slower. So do
they inside forward-mode AD's ``dual_level()`` (the kernels have no ``jvp``: a dual input's
tangent was dropped). While ``torch.jit.trace`` records (also ``torch.onnx.export`` with
``dynamo=False``), the layers run torch.nn's own op, which the trace records as one node valid
for any sequence length (the kernels write through NumPy, which the tracer cannot see); the
functional forms run the reference loop there, which the trace records unrolled at the
traced length: a longer input is silently cut to it, a shorter one fails. Trace the layers.
Under a torch dispatch mode (``make_fx``, ``FakeTensorMode``, ``FlopCounterMode``) the layers
run torch.nn's op and the functional forms the reference loop, which the mode sees (it cannot
see the kernels). ``torch.fx.symbolic_trace`` records a layer as one ``call_module`` node, as
it records torch.nn's layers.
Under ``torch.autocast`` the layers run in their parameters' dtype, the input and state cast
to it, on the kernels: their outputs are in that dtype, where torch.nn's are in the autocast
dtype (a half-precision input or state, the output of an autocast op, is cast to the
parameters' dtype; a float64 one is refused, as torch.nn does).
Batched backward passes (``autograd.grad(..., is_grads_batched=True)``,
``jacobian(..., vectorize=True)``) are not supported by the kernels' backward, and raise
a ``RuntimeError`` saying so: use ``torch.func`` or ``backend='torch'`` for them.
Processes forked (``multiprocessing``'s ``fork`` start method, the default on Linux before
Python 3.14) after a Numba kernel ran run the kernels and torch's operations on one thread:
GNU OpenMP, Numba's and torch's thread pool here, cannot start threads in such a child, so
tsrnn sets both to one thread there (as torch's ``DataLoader`` does in its workers). For more
threads a worker, start workers with ``spawn`` or ``forkserver`` (joblib's default ``loky``
backend does). ``torch.export`` records torch.nn's op while it exports (the kernels are not
traceable; the results are torch.nn's). ``torch.jit.script`` raises a ``RuntimeError`` naming
that and the other way: a model holding the ``torch.nn`` layer loaded with this one's
``state_dict``.

Under ``torch.compile`` the layers' forward and the functional forms are opaque to Dynamo
(``torch.compiler.disable``): a compiled model breaks its graph there and runs the layer
eagerly, with the same outputs and gradients. The kernels save the layer's output for their
backward, so modifying it in place before ``backward`` (``out += skip``,
``F.relu(out, inplace=True)``) raises torch's "modified by an inplace operation" error, as
``torch.nn.LSTM`` does on CPU; use an out-of-place op or ``out = out.clone()`` first.
Under CPU ``torch.autocast`` the layers run in the parameters' dtype (the kernels are not
autocast ops). Arguments are checked before any kernel runs (shapes and dtypes of the input,
the state and every parameter; the kernels index without bounds checks); a state of another
dtype or device than the parameters raises ``RuntimeError``, as torch.nn does.

Dimension legend: T time steps, B batch, I input size, H hidden size, G gates, D directions.
"""

from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable
from torch.nn.utils.rnn import PackedSequence

from tsrnn.kernels.common.checks import check_args as _check_args
from tsrnn.kernels.common.registry import BACKENDS, get_kernel, resolve_backend

__all__ = ["GRU", "LSTM", "RNN", "recurrence", "recurrent_layer"]

_CELL_OF_MODE = {"RNN_TANH": "rnn", "RNN_RELU": "rnn", "GRU": "gru", "LSTM": "lstm"}
# True inside torch.func transforms (grad, vmap, jacrev, ...), whose wrapped tensors have no
# storage the kernels could read. Private but long-standing (torch.autograd.Function.apply
# calls it on every call); without it the kernels run as before.
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)


def _dual_level_active() -> bool:
    """Inside ``torch.autograd.forward_ad.dual_level()``: the kernels have no ``jvp``, and a
    call whose inputs need no gradient runs them on detached tensors, which dropped a dual
    input's tangent without a word (the output's tangent was None)."""
    return torch.autograd.forward_ad._current_level >= 0


def _autocast_enabled(device_type) -> bool:
    """``torch.is_autocast_enabled(device_type)``, False for device types autocast does not
    know (meta tensors, for which it raises): none of them is under an autocast."""
    try:
        return torch.is_autocast_enabled(device_type)
    except RuntimeError:
        return False


def _autocast_check():
    """``torch.autocast``'s per-device check, chosen once: ``is_autocast_enabled(device_type)``
    from torch 2.4, the CPU and CUDA checks before it (a CUDA autocast does not cover a CPU
    layer)."""
    try:
        torch.is_autocast_enabled("cpu")
        return _autocast_enabled
    except TypeError:
        return lambda device_type: (
            torch.is_autocast_cpu_enabled()
            if device_type == "cpu"
            else device_type == "cuda" and torch.is_autocast_enabled()
        )


_autocast_active = _autocast_check()


# The number of torch dispatch modes in force (``make_fx``'s proxy mode, ``FakeTensorMode``,
# ``FlopCounterMode``, a user's ``TorchDispatchMode``): private but long-standing, 0 without it.
_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)


def _exporting() -> bool:
    """Whether ``torch.export`` is tracing (``torch.compiler.is_exporting``, torch 2.5+)."""
    is_exporting = getattr(torch.compiler, "is_exporting", None)
    return bool(is_exporting and is_exporting())


def _opaque_to_dynamo(fn):
    """``fn`` behind ``torch.compiler.disable``, made on the first call.

    Dynamo cannot trace into Numba's dispatcher (or a Triton launch): under ``torch.compile``
    the call breaks the graph and runs eagerly. ``torch.compiler.disable`` imports
    ``torch._dynamo`` (about a second), so the disabled function is made on the first call
    once something else has imported it (nothing compiles before that), not at
    ``import tsrnn.nn``; ``torch._disable_dynamo`` does the same inside torch.
    """

    @functools.wraps(fn)
    def inner(*args, **kwargs):
        disabled = fn.__dict__.get("_tsrnn_disabled")
        if disabled is None:
            if "torch._dynamo" not in sys.modules:
                return fn(*args, **kwargs)
            disabled = torch.compiler.disable(fn)
            fn._tsrnn_disabled = disabled
        return disabled(*args, **kwargs)

    return inner


def _b_hh_for_backward(kernel, b_hh):
    """``b_hh`` where the kernel's backward reads it, else ``None``: a saved tensor edited in
    place before the backward raises torch's version-counter error, and torch.nn allows an
    in-place edit of the biases (an optimizer's step) there."""
    return b_hh if getattr(kernel, "BACKWARD_NEEDS_B_HH", True) else None


def _resolve(backend, t):
    """The backend to run: :func:`resolve_backend`'s, or ``'torch'`` inside ``torch.func``
    transforms, while ``torch.jit.trace`` records (the kernels write through NumPy, which
    the tracer cannot see: without gradients it recorded empty outputs), inside a
    forward-mode AD ``dual_level`` (the kernels have no ``jvp``) and under a torch dispatch
    mode (``make_fx`` recorded only the outputs' allocation, and its graph returned
    uninitialised memory; fake tensors have no data to read). See the module docstring."""
    name = resolve_backend(backend, t.device, t.dtype)
    if name != "torch" and (
        _functorch_active()
        or torch.jit.is_tracing()
        or _dual_level_active()
        or _dispatch_modes() > 0
    ):
        return "torch"
    if name == "numba" and not _numba_pool[0]:
        from tsrnn.kernels.common.numba_config import start_pool

        start_pool()  # before the first kernel call: keeps torch's thread count
        _numba_pool[0] = True
    return name


_numba_pool = [False]  # start_pool has run (Numba is imported only once a kernel is used)


def _is_batched(t) -> bool:
    """Whether ``t`` is a batched tensor: a vmapped backward's incoming gradient
    (``is_grads_batched`` uses the legacy vmap's, ``torch.func`` the functorch one)."""
    functorch = getattr(torch._C, "_functorch", None)
    if functorch is None or not isinstance(t, torch.Tensor):
        return False
    checks = ("is_legacy_batchedtensor", "is_batchedtensor")
    return any(bool(getattr(functorch, name)(t)) for name in checks if hasattr(functorch, name))


def _first_order(backward):
    """``once_differentiable``, and torch's "differentiate twice" error as soon as a second
    derivative is asked for (``create_graph=True``).

    ``once_differentiable`` raises only where the incoming gradients need a gradient. A loss
    linear in the outputs (``out.sum()``) gives constant ones: its gradient came back as a
    constant, without the part a penalty on it owes the weights, and no error."""
    once = once_differentiable(backward)

    @functools.wraps(backward)
    def inner(ctx, *grads):
        if any(_is_batched(g) for g in grads):
            raise RuntimeError(
                "tsrnn.nn's kernels take one gradient at a time: batched gradients "
                "(torch.autograd.grad(..., is_grads_batched=True), "
                "torch.autograd.functional.jacobian(..., vectorize=True)) cannot go through "
                "them. Loop over the grad_outputs (vectorize=False), or use backend='torch'."
            )
        if torch.is_grad_enabled():  # backward runs with grad mode on only for create_graph
            raise RuntimeError(
                "trying to differentiate twice a function that was marked with "
                "@once_differentiable: tsrnn.nn's kernels give first-order gradients only, and "
                "create_graph=True asks for a second derivative (a gradient penalty, a "
                "Hessian-vector product). Use backend='torch' for those."
            )
        return once(ctx, *grads)

    return inner


def _numba_threads():
    """The block a Numba kernel call runs in: at most torch's thread count
    (:func:`~tsrnn.kernels.common.numba_config.torch_bounded`), so that
    ``torch.set_num_threads`` bounds these layers as it bounds torch.nn's."""
    from tsrnn.kernels.common.numba_config import torch_bounded

    return torch_bounded()


def _on_numba(kernel) -> bool:
    return kernel.__name__.endswith(".numba_cpu")


def _bounded(method):
    """A Function's forward or backward, run in :func:`_numba_threads` (backward runs
    later, maybe in another thread, so it bounds its own calls)."""

    @functools.wraps(method)
    def inner(ctx, *args):
        with _numba_threads():
            return method(ctx, *args)

    return inner


def _contiguous(grad_out, grad_hn, grad_cn):
    """The incoming gradients as the kernels take them (C-contiguous; ``grad_cn`` may be None)."""
    cn = None if grad_cn is None else grad_cn.contiguous()
    return grad_out.contiguous(), grad_hn.contiguous(), cn


def _kernel_backward(ctx, grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved):
    """The kernel's backward through time from a Function's saved state: ``(d_gx, d_gh, d_h0,
    d_c0)``."""
    return ctx.kernel.backward(
        *_contiguous(grad_out, grad_hn, grad_cn),
        gx,
        w_hh,
        b_hh,
        h0,
        c0,
        out,
        tuple(saved),
        **ctx.options,
    )


class _Recurrence(torch.autograd.Function):
    """Autograd glue around one kernel: forward and backward through time in one call each."""

    @staticmethod
    def forward(ctx, gx, w_hh, b_hh, h0, c0, kernel, options):
        out, hn, cn, saved = kernel.forward(gx, w_hh, b_hh, h0, c0, save=True, **options)
        ctx.kernel, ctx.options, ctx.has_c = kernel, options, c0 is not None
        ctx.n_saved = len(saved)
        keep_gx = getattr(kernel, "BACKWARD_NEEDS_GX", True)
        ctx.keep_gx = keep_gx
        ctx.save_for_backward(
            gx if keep_gx else None, w_hh, _b_hh_for_backward(kernel, b_hh), h0, c0, out, *saved
        )
        if ctx.has_c:
            return out, hn, cn
        return out, hn

    @staticmethod
    @_first_order
    def backward(ctx, grad_out, grad_hn, grad_cn=None):
        gx, w_hh, b_hh, h0, c0, out, *saved = ctx.saved_tensors
        with _numba_threads() if _on_numba(ctx.kernel) else contextlib.nullcontext():
            d_gx, d_gh, d_h0, d_c0 = _kernel_backward(
                ctx, grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved
            )
        # dW_hh = Σ_t d_gh_t^T h_{t-1}: one matmul over all steps and batch rows.
        H = h0.shape[-1]
        h_prev = torch.cat([h0.unsqueeze(0), out[:-1]], dim=0).reshape(-1, H)
        GH = d_gh.shape[-1]
        d_gh2 = d_gh.reshape(-1, GH)
        d_w_hh = d_gh2.T @ h_prev if ctx.needs_input_grad[1] else None
        d_b_hh = d_gh2.sum(0) if ctx.needs_input_grad[2] else None
        return d_gx, d_w_hh, d_b_hh, d_h0, d_c0, None, None


@_opaque_to_dynamo
def recurrence(cell, gx, w_hh, b_hh, h0, c0=None, *, backend="auto", nonlinearity="tanh"):
    """Run one recurrent layer's time loop on a kernel, differentiably.

    The arguments' shapes and dtypes are checked first (``ValueError`` / ``TypeError`` naming
    the tensor, the expected and the actual shape). Under ``torch.func`` transforms the
    reference loop runs (``backend='torch'``); under ``torch.compile`` the call is opaque to
    Dynamo (a graph break).

    Parameters
    ----------
    cell : {'rnn', 'gru', 'lstm'}
    gx : Tensor (T, B, G*H)
        Input projection of every step, ``x @ W_ih.T + b_ih``.
    w_hh : Tensor (G*H, H)
    b_hh : Tensor (G*H,)
    h0 : Tensor (B, H)
    c0 : Tensor (B, H), LSTM only
    backend : {'auto', 'numba', 'triton', 'torch'}
    nonlinearity : {'tanh', 'relu'}, RNN only

    Returns
    -------
    out : Tensor (T, B, H)
    h_n : Tensor (B, H)
    c_n : Tensor (B, H) or None

    Examples
    --------
    >>> import torch
    >>> gx, w, b, h0 = torch.zeros(5, 2, 12), torch.zeros(12, 4), torch.zeros(12), torch.zeros(2, 4)
    >>> out, h_n, c_n = recurrence("gru", gx, w, b, h0)
    >>> tuple(out.shape), c_n is None
    ((5, 2, 4), True)
    """
    _check_args("recurrence", cell, nonlinearity, gx, None, None, w_hh, b_hh, h0, c0)
    return _recurrence(cell, gx, w_hh, b_hh, h0, c0, backend, nonlinearity)


def _autocast_off(device_type):
    """A block without autocast on ``device_type`` where one is on (else a no-op): the torch
    reference's matmuls and the input projection are autocast ops; the kernels are not, and
    every backend computes in its arguments' dtypes."""
    if _autocast_active(device_type):
        return torch.autocast(device_type, enabled=False)
    return contextlib.nullcontext()


def _recurrence(cell, gx, w_hh, b_hh, h0, c0, backend, nonlinearity):
    """:func:`recurrence` without the checks."""
    name = _resolve(backend, gx)
    kernel = get_kernel(cell, name, checked=False)  # checked above
    options = {"nonlinearity": nonlinearity} if cell == "rnn" else {}
    needs_grad = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (gx, w_hh, b_hh, h0, c0)
    )
    with (
        _numba_threads() if name == "numba" else contextlib.nullcontext(),
        _autocast_off(gx.device.type),
    ):
        if name == "torch" or not needs_grad:
            # The reference is differentiable by autograd as it stands; without gradients the
            # kernel need not keep activations for a backward.
            out, hn, cn, _ = kernel.forward(gx, w_hh, b_hh, h0, c0, save=needs_grad, **options)
            return out, hn, cn
        res = _Recurrence.apply(gx, w_hh, b_hh, h0, c0, kernel, options)
    if c0 is None:
        return res[0], res[1], None
    return res


def _numba_forward(kernel, x, w_ih, b_ih, w_hh, b_hh, h0, c0, keep_gx, save, options):
    """A layer direction's forward on a Numba kernel: ``(out, h_n, c_n, saved, gx)``.

    Where backward does not need ``gx`` and the kernel can form the input projection itself
    (``forward_projected``), it does, step by step in its time loop, and ``gx`` (T, B, G*H) is
    never written out (``None``); else ``gx`` comes first, on Numba's threads.
    """
    fused = getattr(kernel, "forward_projected", None)
    if fused is not None and not keep_gx:
        out, hn, cn, saved = fused(x, w_ih, b_ih, w_hh, b_hh, h0, c0, save=save, **options)
        return out, hn, cn, saved, None
    from tsrnn.kernels.common import numba_dense

    gx = numba_dense.linear(x, w_ih, b_ih)  # (T, B, G*H)
    out, hn, cn, saved = kernel.forward(gx, w_hh, b_hh, h0, c0, save=save, **options)
    return out, hn, cn, saved, gx


class _NumbaLayer(torch.autograd.Function):
    """One layer direction on the Numba backend: input projection, recurrence, and in backward
    the weight and bias gradients, all on Numba's threads (results independent of their count).
    """

    @staticmethod
    def forward(ctx, x, w_ih, b_ih, w_hh, b_hh, h0, c0, kernel, options):
        keep_gx = getattr(kernel, "BACKWARD_NEEDS_GX", True)
        out, hn, cn, saved, gx = _numba_forward(
            kernel, x, w_ih, b_ih, w_hh, b_hh, h0, c0, keep_gx, True, options
        )
        ctx.kernel, ctx.options, ctx.has_c = kernel, options, c0 is not None
        ctx.save_for_backward(
            # w_ih only for d_x: torch.nn also lets an optimizer edit it in place before the
            # backward when the input needs no gradient
            x, w_ih if ctx.needs_input_grad[0] else None, gx if keep_gx else None, w_hh,
            _b_hh_for_backward(kernel, b_hh), h0, c0, out, *saved,
        )
        if ctx.has_c:
            return out, hn, cn
        return out, hn

    @staticmethod
    @_first_order
    @_bounded
    def backward(ctx, grad_out, grad_hn, grad_cn=None):
        x, w_ih, gx, w_hh, b_hh, h0, c0, out, *saved = ctx.saved_tensors
        need = ctx.needs_input_grad
        if not any(need[1:5]):  # frozen weights: the plain backward through time
            d_gx, _, d_h0, d_c0 = _kernel_backward(
                ctx, grad_out, grad_hn, grad_cn, gx, w_hh, b_hh, h0, c0, out, saved
            )
            d_x = (d_gx.reshape(-1, d_gx.shape[-1]) @ w_ih).view(x.shape) if need[0] else None
            return (d_x, None, None, None, None, d_h0, d_c0, None, None)
        # The weight gradients are summed in the kernel's time loop (numba_grads): d_gx
        # (T, B, G*H) is written out only where d_x needs it, d_gh never.
        d_gx, d_h0, d_c0, d_w_ih, d_b_ih, d_w_hh, d_b_hh = ctx.kernel.backward_with_weight_grads(
            *_contiguous(grad_out, grad_hn, grad_cn),
            x,
            w_hh,
            b_hh,
            h0,
            c0,
            out,
            tuple(saved),
            keep_d_gx=need[0],
            **ctx.options,
        )
        # d_x only where x needs it (a lower layer's output, an input with requires_grad); one
        # (N, G*H) @ (G*H, I) product, which torch handles well.
        d_x = (d_gx.reshape(-1, d_gx.shape[-1]) @ w_ih).view(x.shape) if need[0] else None
        return (
            d_x,
            d_w_ih if need[1] else None,
            d_b_ih if need[2] else None,
            d_w_hh if need[3] else None,
            d_b_hh if need[4] else None,
            d_h0,
            d_c0,
            None,
            None,
        )


class _NumbaLayerHeadLoss(torch.autograd.Function):
    """:class:`_NumbaLayer`, a linear head on every step's state and the scaled sum of squared
    errors as one op (see :func:`layer_head_sq_loss`).

    Where the kernel has ``train_head`` and a gradient is wanted, the forward runs forward and
    backward in one kernel call (each block of rows backward right after its forward, its
    saved gates still in cache) and keeps the gradients for a ``grad_loss`` of 1 and no
    gradient at ``h_n``: what ``loss.backward()`` asks for. Any other backward (a scaled loss,
    a gradient through ``h_n``) runs the forward again, saving, and then the backward kernel:
    the same results as the one-pass gradients where both apply, and what a second backward
    through the same graph runs."""

    @staticmethod
    @_bounded
    def forward(ctx, x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, target, scale, kernel):
        from tsrnn.kernels.common.numba_head import sum_squares

        ctx.kernel, ctx.scale, ctx.grads = kernel, scale, None
        need = ctx.needs_input_grad
        ctx.one_pass = any(need) and hasattr(kernel, "train_head")
        if ctx.one_pass:
            hn, resid, d_gx, d_h0, *grads = kernel.train_head(
                x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, target, 2.0 * scale, keep_d_gx=need[0]
            )
            d_x = (d_gx.reshape(-1, d_gx.shape[-1]) @ w_ih).view(x.shape) if need[0] else None
            d_w_ih, d_b_ih, d_w_hh, d_b_hh, d_w_o, d_b_o = grads
            ctx.grads = (d_x, d_w_ih, d_b_ih, d_w_hh, d_b_hh, d_h0, d_w_o, d_b_o)
            # for the other backward, which runs the forward again
            ctx.save_for_backward(x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, target)
            return x.new_tensor(scale * sum_squares(resid.numpy())), hn
        out, hn, resid, saved = kernel.forward_projected_head(
            x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, target
        )
        ctx.save_for_backward(x, w_ih, w_hh, b_hh, h0, out, w_o, resid, *saved)
        return x.new_tensor(scale * sum_squares(resid.numpy())), hn

    @staticmethod
    @_first_order
    @_bounded
    def backward(ctx, grad_loss, grad_hn):
        need = ctx.needs_input_grad
        grads, ctx.grads = ctx.grads, None  # kept for one backward only
        if grads is not None and float(grad_loss) == 1.0 and not bool(grad_hn.any()):
            return (*[g if n else None for g, n in zip(grads, need)], None, None, None)
        if ctx.one_pass:
            x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, target = ctx.saved_tensors
            out, _, resid, saved = ctx.kernel.forward_projected_head(
                x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, target
            )
        else:
            x, w_ih, w_hh, b_hh, h0, out, w_o, resid, *saved = ctx.saved_tensors
        e = resid * (2.0 * ctx.scale * float(grad_loss))  # d loss / d (head's outputs)
        d_gx, d_h0, _, d_w_ih, d_b_ih, d_w_hh, d_b_hh, d_w_o, d_b_o = ctx.kernel.backward_head(
            grad_hn.contiguous(), x, w_hh, b_hh, h0, out, tuple(saved), w_o, e, keep_d_gx=need[0]
        )
        d_x = (d_gx.reshape(-1, d_gx.shape[-1]) @ w_ih).view(x.shape) if need[0] else None
        grads = (d_x, d_w_ih, d_b_ih, d_w_hh, d_b_hh, d_h0, d_w_o, d_b_o)
        return (*[g if n else None for g, n in zip(grads, need)], None, None, None)


def layer_head_sq_loss(rnn, x, state, weight, bias, target, scale):
    """``scale * Σ (F.linear(rnn(x, state)[0], weight, bias) - target) ** 2`` and the layer's
    final state, in one kernel call each way, or ``None`` where that does not apply.

    It applies to a one-layer, unidirectional, sequence-first :class:`GRU` on the Numba
    backend, with gradients enabled and at most
    :data:`~tsrnn.kernels.common.numba_head.MAX_OUTPUTS` head outputs: the kernel forms each
    step's residuals in its forward time loop while the new states are in cache, and in its
    backward adds the head's gradient to the states' and sums the head's weight gradients, so
    the layer's output (T, B, H) is not read again by the head, nor its gradient written out
    and read back (:func:`tsrnn.kernels.common.numba_head.head_sq_loss` otherwise).

    Parameters
    ----------
    rnn : torch.nn.Module
    x : Tensor (T, B, I)
    state : Tensor (1, B, H) or None
    weight : Tensor (O, H)
    bias : Tensor (O,)
    target : Tensor (T, B, O)
    scale : float

    Returns
    -------
    (loss, h_n) : (Tensor (0-dim), Tensor (1, B, H)), or None
    """
    if not torch.is_grad_enabled():
        return None
    args = _fused_args(rnn, x, state, weight, bias, target)
    if args is None:
        return None
    kernel, w_ih, b_ih, w_hh, b_hh, h0, target = args
    loss, hn = _NumbaLayerHeadLoss.apply(
        x, w_ih, b_ih, w_hh, b_hh, h0, weight, bias, target, float(scale), kernel
    )
    return loss, hn.unsqueeze(0)


def layer_head_sq_loss_grads(rnn, x, state, weight, bias, target, scale, *, accumulate=False):
    """The value of :func:`layer_head_sq_loss` and its gradients with respect to the layer's
    and the head's parameters, from one kernel call, without autograd: for a training step
    whose loss is this alone (``loss.backward()``), where the autograd engine's pass, the
    accumulation of each gradient and the ``Function``'s calls would be all the work left
    after the kernel (about 3% of the forecaster's training step at the electricity
    benchmark's shape).

    The same cases apply as for :func:`layer_head_sq_loss`, and only where neither ``x``, the
    state nor ``target`` asks for a gradient (their gradients are not formed here);
    otherwise ``None``. The gradients equal those ``layer_head_sq_loss(...).backward()``
    accumulates (the same kernel).

    With ``accumulate``, where every parameter that requires a gradient has a ``.grad`` of
    its own shape and dtype, contiguous (as in a fit, where they are views of one flat
    gradient), the kernel adds the gradients to those in place, as ``p.grad.add_(g)``
    would (the same values), and ``grads`` is empty; otherwise they are returned.

    Returns
    -------
    (loss, h_n, grads) : (float, Tensor (1, B, H), list of (Parameter, Tensor)), or None
        ``grads`` pairs each parameter that requires a gradient (the layer's weights and
        biases, ``weight``, ``bias``) with its gradient, unless added in place
        (``accumulate``); ``h_n`` does not require one.
    """
    from tsrnn.kernels.common.numba_head import sum_squares

    # an LSTM's state is a pair (h, c): the fused kernel is the GRU's, but the check comes first
    states = state if isinstance(state, (tuple, list)) else (state,)
    if any(t is not None and t.requires_grad for t in (x, *states, target)):
        return None
    args = _fused_args(rnn, x, state, weight, bias, target)
    if args is None:
        return None
    kernel, w_ih, b_ih, w_hh, b_hh, h0, target = args
    params = (w_ih, b_ih, w_hh, b_hh, weight, bias)
    into = _grads_in_place(params, b_hh) if accumulate else None
    with torch.no_grad(), _numba_threads():
        hn, resid, _, _, *grads = kernel.train_head(
            x,
            w_ih,
            b_ih,
            w_hh,
            b_hh,
            h0,
            weight,
            bias,
            target,
            2.0 * float(scale),
            grads_out=into,
        )
    # the op's loss, rounded to x's dtype as x.new_tensor(...) would
    r = resid.numpy()
    with np.errstate(over="ignore"):  # a diverged fit's loss is inf: the forecaster warns
        loss = float(r.dtype.type(float(scale) * sum_squares(r)))
    if into is not None:
        return loss, hn.unsqueeze(0), []
    pairs = [(p, g) for p, g in zip(params, grads) if p is not None and p.requires_grad]
    return loss, hn.unsqueeze(0), pairs


def _grads_in_place(params, like):
    """What :func:`layer_head_sq_loss_grads` with ``accumulate`` gives the kernel to add the
    gradients to: each parameter's ``.grad`` where it requires one, a scratch array where it
    does not (or is None: no bias); None where a ``.grad`` is missing or not of the
    parameter's shape, dtype and layout."""
    out = []
    for p in params:
        if p is None or not p.requires_grad:
            shape = like.shape if p is None else p.shape
            out.append(np.zeros(shape, dtype=like.detach().numpy().dtype))
            continue
        g = p.grad
        if (
            g is None
            or g.shape != p.shape
            or g.dtype != p.dtype
            or g.device.type != "cpu"
            or not g.is_contiguous()
            or g.requires_grad
        ):
            return None
        out.append(g.detach().numpy())
    return out


def _fused_args(rnn, x, state, weight, bias, target):
    """``(kernel, w_ih, b_ih, w_hh, b_hh, h0, target)`` for the fused GRU kernel where it
    applies (see :func:`layer_head_sq_loss`), else None; ``b_ih`` None without biases (and
    ``b_hh`` zeros), ``target`` contiguous. Raises as the layer does on a bad state."""
    from tsrnn.kernels.common.numba_head import MAX_OUTPUTS

    if not (
        isinstance(rnn, GRU)
        and rnn.num_layers == 1
        and not rnn.bidirectional
        and not rnn.batch_first
        and isinstance(x, torch.Tensor)
        and x.dim() == 3
        and 1 <= weight.shape[0] <= MAX_OUTPUTS
        and x.dtype == weight.dtype == bias.dtype == target.dtype
        and target.shape == (*x.shape[:2], weight.shape[0])
        and _resolve(rnn.backend, x) == "numba"
    ):
        return None
    # the kernel indexes the head without bounds checks (a head 50 wide on 5 states wrote
    # past its arrays): its shapes are checked first, as torch's F.linear would
    H, O = rnn.hidden_size, weight.shape[0]
    if weight.dim() != 2 or weight.shape[1] != H:
        raise ValueError(
            f"the head's weight must be (outputs, hidden_size) = ({O}, {H}) for this layer, "
            f"got {tuple(weight.shape)}"
        )
    if bias.shape != (O,):
        raise ValueError(
            f"the head's bias must be (outputs,) = ({O},), one per row of its weight, got "
            f"{tuple(bias.shape)}"
        )
    rnn._check_input(x)
    B = x.shape[1]
    if state is None:
        h0 = x.new_zeros((B, rnn.hidden_size))
    else:
        rnn._check_state(state, B, "hx", False)
        h0 = state[0]
    w_ih, w_hh = rnn.weight_ih_l0, rnn.weight_hh_l0
    if rnn.bias:
        b_ih, b_hh = rnn.bias_ih_l0, rnn.bias_hh_l0
    else:
        b_ih, b_hh = None, w_hh.new_zeros(w_hh.shape[0])
    kernel = get_kernel("gru", "numba", checked=False)  # _fused_args checked them
    return kernel, w_ih, b_ih, w_hh, b_hh, h0, target.contiguous()


@_opaque_to_dynamo
def recurrent_layer(
    cell, x, w_ih, b_ih, w_hh, b_hh, h0, c0=None, *, backend="auto", nonlinearity="tanh"
):
    """Run one recurrent layer direction (input projection and time loop), differentiably.

    On the Numba backend the projection and, in backward, the weight gradients run on Numba's
    threads; elsewhere the projection is ``F.linear`` followed by :func:`recurrence`. Checks,
    ``torch.func`` and ``torch.compile`` as for :func:`recurrence`.

    Parameters
    ----------
    cell : {'rnn', 'gru', 'lstm'}
    x : Tensor (T, B, I)
    w_ih : Tensor (G*H, I)
    b_ih : Tensor (G*H,) or None
    w_hh : Tensor (G*H, H)
    b_hh : Tensor (G*H,)
    h0 : Tensor (B, H)
    c0 : Tensor (B, H), LSTM only
    backend : {'auto', 'numba', 'triton', 'torch'}
    nonlinearity : {'tanh', 'relu'}, RNN only

    Returns
    -------
    out : Tensor (T, B, H)
    h_n : Tensor (B, H)
    c_n : Tensor (B, H) or None

    Examples
    --------
    >>> import torch
    >>> x, w_ih, w_hh = torch.zeros(5, 2, 3), torch.zeros(12, 3), torch.zeros(12, 4)
    >>> out, h_n, c_n = recurrent_layer("gru", x, w_ih, None, w_hh, torch.zeros(12),
    ...                                 torch.zeros(2, 4))
    >>> tuple(out.shape), tuple(h_n.shape), c_n is None
    ((5, 2, 4), (2, 4), True)
    """
    if w_ih is None:  # check_args reads None as recurrence's projection: x taken for gx
        raise ValueError(
            "recurrent_layer: w_ih (G*H, I) is required. To run the recurrence on an input "
            "projection computed already, call recurrence(cell, gx, w_hh, b_hh, h0, c0)."
        )
    _check_args("recurrent_layer", cell, nonlinearity, x, w_ih, b_ih, w_hh, b_hh, h0, c0)
    return _recurrent_layer(cell, x, w_ih, b_ih, w_hh, b_hh, h0, c0, backend, nonlinearity)


def _recurrent_layer(cell, x, w_ih, b_ih, w_hh, b_hh, h0, c0, backend, nonlinearity):
    """:func:`recurrent_layer` without the checks."""
    name = _resolve(backend, x)
    if name != "numba":
        with _autocast_off(x.device.type):  # the projection too, in the arguments' dtypes
            return _recurrence(
                cell, F.linear(x, w_ih, b_ih).contiguous(), w_hh, b_hh, h0, c0, name, nonlinearity
            )
    kernel = get_kernel(cell, name, checked=False)  # checked above
    options = {"nonlinearity": nonlinearity} if cell == "rnn" else {}
    needs_grad = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (x, w_ih, b_ih, w_hh, b_hh, h0, c0)
    )
    with _numba_threads():
        if not needs_grad:
            out, hn, cn, _, _ = _numba_forward(
                kernel, x, w_ih, b_ih, w_hh, b_hh, h0, c0, False, False, options
            )
            return out, hn, cn
        res = _NumbaLayer.apply(x, w_ih, b_ih, w_hh, b_hh, h0, c0, kernel, options)
    if c0 is None:
        return res[0], res[1], None
    return res


class _KernelRNNMixin:
    """The forward shared by the three layers; the torch.nn base class holds the parameters."""

    def _init_backend(self, backend):
        if backend not in BACKENDS:
            raise ValueError(
                f"backend must be one of {BACKENDS}, got {backend!r}. Use 'auto' to run Numba "
                "kernels on CPU tensors and Triton kernels on CUDA tensors."
            )
        self.backend = backend

    def extra_repr(self):
        return super().extra_repr() + f", backend={self.backend!r}"

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("backend", "auto")

    def __prepare_scriptable__(self):
        """``torch.jit.script`` calls this first: it raises a ``RuntimeError`` naming what
        works. The kernels are not TorchScript, and handing torch a ``torch.nn`` layer in this
        one's place would not do: torch writes what this returns into the user's own model,
        which would then run torch.nn's op, without ``backend``, even where scripting failed."""
        base = next(c for c in type(self).__mro__ if c.__module__.startswith("torch.nn"))
        raise RuntimeError(
            f"torch.jit.script cannot compile {type(self).__name__} from tsrnn.nn: its kernels "
            "are not TorchScript (and torch.jit.script is deprecated). Use "
            "torch.export.export(model, args), which records torch.nn's op for this layer, or "
            f"script a model holding torch.nn.{base.__name__} with the same arguments and "
            "this layer's state_dict (the same parameters and results)."
        )

    def _forward(self, input, hx):
        if isinstance(input, torch.fx.Proxy):
            return self._fx_call(input, hx)
        if _exporting():
            # torch.export traces torch.nn's op (its graph cannot hold the kernels, which
            # write through NumPy): the same module and parameters, torch.nn's results
            if self.mode.startswith("RNN_"):
                self._nonlinearity()  # checked on every path
            return super().forward(input, hx)
        return self._run(input, hx)

    def _fx_call(self, input, hx):
        """Under ``torch.fx.symbolic_trace``: the layer as one ``call_module`` node, as FX
        records torch.nn's layers (its tracer treats only modules of ``torch.nn`` as leaves
        and traced into this one, whose checks cannot read a ``Proxy``). The traced model
        calls the layer, kernels and all."""
        tracer = input.tracer
        try:
            path = tracer.path_of_module(self)
        except NameError:  # not a submodule of the traced model
            path = ""
        if not path:
            raise TypeError(
                f"torch.fx.symbolic_trace cannot trace a {type(self).__name__} from tsrnn.nn on "
                "its own (nor torch.nn's layers: their forward has data-dependent control "
                "flow). Trace a model that holds it as a submodule: the layer is recorded as one "
                "call_module node, as torch.nn's layers are."
            )
        args = (input,) if hx is None else (input, hx)
        return tracer.create_proxy("call_module", path, args, {})

    def _check_input(self, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError(
                f"{type(self).__name__} expects a torch.Tensor input, got {type(x).__name__}. "
                "Convert it with torch.as_tensor(...)."
            )
        if x.dim() not in (2, 3):
            raise ValueError(
                f"{type(self).__name__}: expected a 2-D (unbatched) or 3-D (batched) input, got "
                f"{x.dim()}-D with shape {tuple(x.shape)}."
            )
        if x.shape[-1] != self.input_size:
            raise ValueError(
                f"{type(self).__name__}: input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {x.shape[-1]}."
            )
        steps = x.shape[1 if x.dim() == 3 and self.batch_first else 0]
        if steps == 0:
            # torch.nn raises a RuntimeError here; a sequence needs at least one step
            raise ValueError(
                f"{type(self).__name__}: the input has no time steps (shape "
                f"{tuple(x.shape)}, batch_first={self.batch_first}). Pass at least one step."
            )
        w = self.weight_ih_l0
        if x.dtype != w.dtype or x.device != w.device:
            if x.dtype.is_floating_point:
                fix = "Use module.to(input.dtype) / .to(device) or convert the input."
            else:  # a module holds floating-point parameters only: the input must change
                fix = f"Convert the input: input.to({w.dtype})" + (
                    f" (and .to({str(w.device)!r}))." if x.device != w.device else "."
                )
            raise TypeError(
                f"{type(self).__name__}: input is {x.dtype} on {x.device} but the parameters are "
                f"{w.dtype} on {w.device}. {fix}"
            )

    def _to_params_dtype(self, x, hx):
        """Under ``torch.autocast`` on the layer's device: a half-precision input and state
        (an autocast op's output) in the parameters' dtype, so that the layer runs on its
        kernels in that dtype (torch.nn's layers run in the autocast dtype; a bfloat16 layer
        here would be the slow reference loop). A float64 input stays refused, as torch.nn
        refuses it."""
        w = self.weight_ih_l0
        if w.dtype not in (torch.float32, torch.float64):
            return x, hx

        def cast(t):
            if (
                isinstance(t, torch.Tensor)
                and t.dtype in (torch.float16, torch.bfloat16)
                and t.device == w.device
            ):
                return t.to(w.dtype)
            return t

        if isinstance(hx, tuple | list):
            hx = tuple(cast(h) for h in hx)
        return cast(x), cast(hx)

    def _state_shape(self, batch):
        D = 2 if self.bidirectional else 1
        return (self.num_layers * D, batch, self.hidden_size)

    def _check_state(self, h, batch, what, unbatched):
        expected = self._state_shape(batch)
        if unbatched:
            expected = (expected[0], expected[2])
        if not isinstance(h, torch.Tensor):
            raise TypeError(f"{what} must be a torch.Tensor, got {type(h).__name__}.")
        if tuple(h.shape) != expected:
            raise ValueError(
                f"{type(self).__name__}: expected {what} of size {expected}, got {tuple(h.shape)}."
            )
        w = self.weight_ih_l0
        if h.dtype != w.dtype or h.device != w.device:
            # torch.nn fails here with a RuntimeError from its matmul; the kernels would be
            # compiled for mixed dtypes and fail in Numba's type inference
            raise RuntimeError(
                f"{type(self).__name__}: {what} is {h.dtype} on {h.device} but the parameters "
                f"are {w.dtype} on {w.device}. Pass {what} as {what}.to(input) (the input must "
                "match the parameters too), or convert the module with module.to(...)."
            )

    def _nonlinearity(self) -> str:
        """The RNN's activation, by its mode as torch.nn.RNN's forward reads it. The
        nonlinearity attribute must agree: one changed without the other would read as one
        function and compute another (torch.nn computes by the mode, silently)."""
        nonlinearity = "relu" if self.mode == "RNN_RELU" else "tanh"
        if self.nonlinearity != nonlinearity:
            raise ValueError(
                f"{type(self).__name__}: nonlinearity {self.nonlinearity!r} does not match "
                f"mode {self.mode!r} (torch.nn.RNN computes by the mode, here "
                f"{nonlinearity}). Build the layer with the nonlinearity you want, "
                "RNN(..., nonlinearity='relu'), or set both attributes "
                "(nonlinearity='relu' with mode='RNN_RELU')."
            )
        return nonlinearity

    @_opaque_to_dynamo
    def _run(self, x, hx):
        cell = _CELL_OF_MODE[self.mode]
        is_lstm = cell == "lstm"
        # checked on every path, the packed and traced ones too
        nonlinearity = self._nonlinearity() if cell == "rnn" else "tanh"
        if (
            isinstance(x, PackedSequence)
            or getattr(self, "proj_size", 0) > 0
            or torch.jit.is_tracing()
            or _dispatch_modes() > 0
        ):
            # Variable-length packed batches and LSTM projections run on torch.nn's own
            # implementation: same module, same parameters, same results. So does a trace:
            # torch.nn's op records as one node, valid for any sequence length (the kernels
            # write through NumPy, which the tracer cannot see, and a Python time loop would be
            # recorded unrolled at the traced length). So do the layers under a torch
            # dispatch mode (make_fx, FakeTensorMode, FlopCounterMode), which sees the
            # operations of torch.nn's op and none of the kernels'.
            return super().forward(x, hx)
        if isinstance(x, torch.Tensor) and _autocast_active(x.device.type):
            x, hx = self._to_params_dtype(x, hx)
        self._check_input(x)
        unbatched = x.dim() == 2
        if unbatched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        B = x.shape[1]
        if hx is None:
            h0 = x.new_zeros(self._state_shape(B))
            c0 = x.new_zeros(self._state_shape(B)) if is_lstm else None
        else:
            if is_lstm:
                if not (isinstance(hx, tuple | list) and len(hx) == 2):
                    raise TypeError("LSTM expects hx as a tuple (h_0, c_0).")
                h0, c0 = hx
                self._check_state(h0, B, "h_0", unbatched)
                self._check_state(c0, B, "c_0", unbatched)
            else:
                h0, c0 = hx, None
                self._check_state(h0, B, "hx", unbatched)
            if unbatched:
                h0 = h0.unsqueeze(1)
                c0 = None if c0 is None else c0.unsqueeze(1)

        D = 2 if self.bidirectional else 1
        layer_input = x
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                w_ih = getattr(self, "weight_ih" + sfx)
                w_hh = getattr(self, "weight_hh" + sfx)
                if self.bias:
                    b_ih = getattr(self, "bias_ih" + sfx)
                    b_hh = getattr(self, "bias_hh" + sfx)
                else:
                    b_ih, b_hh = None, w_hh.new_zeros(w_hh.shape[0])
                k = layer * D + d
                args = (
                    layer_input.flip(0) if d == 1 else layer_input,
                    w_ih,
                    b_ih,
                    w_hh,
                    b_hh,
                    h0[k],
                    None if c0 is None else c0[k],
                )
                # a parameter reassigned with a wrong shape or dtype is caught here
                _check_args(type(self).__name__, cell, nonlinearity, *args, sfx=sfx)
                out, hn, cn = _recurrent_layer(cell, *args, self.backend, nonlinearity)
                outs.append(out.flip(0) if d == 1 else out)
                h_n.append(hn)
                c_n.append(cn)
            layer_input = outs[0] if D == 1 else torch.cat(outs, dim=-1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                generator = self.__dict__.get("_dropout_generator")
                if generator is None:
                    layer_input = F.dropout(layer_input, self.dropout, training=True)
                else:  # a forecaster's own stream: F.dropout's mask, without the global one
                    keep = 1.0 - self.dropout
                    mask = torch.empty_like(layer_input).bernoulli_(keep, generator=generator)
                    layer_input = layer_input * mask.div_(keep)

        output = layer_input
        h_n = torch.stack(h_n)
        c_n = torch.stack(c_n) if is_lstm else None
        if unbatched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, ((h_n, c_n) if is_lstm else h_n)


class RNN(_KernelRNNMixin, torch.nn.RNN):
    """Elman RNN (tanh or relu) on tsrnn kernels; a drop-in for :class:`torch.nn.RNN`.

    Parameters
    ----------
    *args, **kwargs
        Exactly those of :class:`torch.nn.RNN`: ``input_size, hidden_size, num_layers=1,
        nonlinearity='tanh', bias=True, batch_first=False, dropout=0.0, bidirectional=False,
        device=None, dtype=None``.
    backend : {'auto', 'numba', 'triton', 'torch'}, keyword-only
        Kernel for the time loop; ``'auto'`` picks Triton for CUDA and Numba for CPU tensors.

    Examples
    --------
    >>> import torch, tsrnn.nn
    >>> rnn = tsrnn.nn.RNN(3, 8, num_layers=2, batch_first=True)
    >>> out, h_n = rnn(torch.randn(4, 10, 3))
    >>> tuple(out.shape), tuple(h_n.shape)
    ((4, 10, 8), (2, 4, 8))
    """

    def __init__(self, *args, backend="auto", **kwargs):
        super().__init__(*args, **kwargs)
        self._init_backend(backend)

    def forward(self, input, hx=None):
        return self._forward(input, hx)


class GRU(_KernelRNNMixin, torch.nn.GRU):
    """GRU on tsrnn kernels; a drop-in for :class:`torch.nn.GRU` (same ``state_dict``).

    Parameters
    ----------
    *args, **kwargs
        Exactly those of :class:`torch.nn.GRU`.
    backend : {'auto', 'numba', 'triton', 'torch'}, keyword-only

    Examples
    --------
    >>> import torch, tsrnn.nn
    >>> ref = torch.nn.GRU(1, 16)
    >>> gru = tsrnn.nn.GRU(1, 16)
    >>> _ = gru.load_state_dict(ref.state_dict())
    >>> x = torch.randn(20, 3, 1)
    >>> torch.allclose(gru(x)[0], ref(x)[0], atol=1e-5)
    True
    """

    def __init__(self, *args, backend="auto", **kwargs):
        super().__init__(*args, **kwargs)
        self._init_backend(backend)

    def forward(self, input, hx=None):
        return self._forward(input, hx)


class LSTM(_KernelRNNMixin, torch.nn.LSTM):
    """LSTM on tsrnn kernels; a drop-in for :class:`torch.nn.LSTM` (same ``state_dict``).

    ``proj_size > 0`` and ``PackedSequence`` inputs run on torch.nn's own implementation.

    Parameters
    ----------
    *args, **kwargs
        Exactly those of :class:`torch.nn.LSTM`.
    backend : {'auto', 'numba', 'triton', 'torch'}, keyword-only

    Examples
    --------
    >>> import torch, tsrnn.nn
    >>> lstm = tsrnn.nn.LSTM(2, 5)
    >>> out, (h_n, c_n) = lstm(torch.randn(7, 2))   # unbatched (T, I)
    >>> tuple(out.shape), tuple(h_n.shape), tuple(c_n.shape)
    ((7, 5), (1, 5), (1, 5))
    """

    def __init__(self, *args, backend="auto", **kwargs):
        super().__init__(*args, **kwargs)
        self._init_backend(backend)

    def forward(self, input, hx=None):
        return self._forward(input, hx)
