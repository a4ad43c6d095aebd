"""Argument checks at the kernels' entry points: shapes, dtypes and devices that agree.

The Numba and Triton kernels index without bounds checks: a wrong shape read (or wrote) past
an array's end, and a user calling ``get_kernel(...).forward`` with a (G*H, 1) ``w_hh``
crashed the process with heap corruption; others ran on and dropped batch rows or returned
NaN. Every public function of every backend (the references too, for the same messages)
checks the arguments a caller builds first, with :func:`check_args`: only shape, dtype and
device comparisons, a few microseconds a call (internal callers that checked already take
the functions unchecked: ``get_kernel(..., checked=False)``). ``saved`` is not checked: it
must be what the same backend's forward returned for the same arguments.
:func:`checked` wraps a backend's function by the calling convention of
``tsrnn.kernels`` (its docstring); ``tsrnn.nn`` calls :func:`check_args` itself, with the
layer's parameter names in the messages.
"""

from __future__ import annotations

import functools
import inspect

import torch

GATES = {"rnn": 1, "gru": 3, "lstm": 4}
# argument names in messages; what each shape is made of
ARG_NAMES = ("x", "w_ih", "b_ih", "w_hh", "b_hh", "h0", "c0")
LAYER_ARG_NAMES = ("input", "weight_ih", "bias_ih", "weight_hh", "bias_hh", "h_0", "c_0")
ARG_SHAPES = ("(T, B, I)", "(G*H, I)", "(G*H,)", "(G*H, H)", "(G*H,)", "(B, H)", "(B, H)")


def check_args(
    where, cell, nonlinearity, x, w_ih, b_ih, w_hh, b_hh, h0, c0, sfx=None, *, min_steps=1
):
    """Raise unless one layer direction's arguments agree in shape, dtype and device.

    Only comparisons, as one expression (this runs on every call, about 1 us);
    :func:`raise_bad_args` finds what is wrong. ``w_ih`` None: ``x`` is the input projection
    ``gx`` (T, B, G*H). B and I come from ``x``, H from ``h0``. ``sfx``: the layer's
    parameter suffix (``'_l0'``), for torch.nn's names. ``min_steps``: the layers refuse a
    sequence without steps (torch.nn does too); the kernels themselves run one (0 there).
    """
    G = GATES.get(cell)
    if (
        G is not None
        and (nonlinearity == "tanh" or nonlinearity == "relu")
        and isinstance(x, torch.Tensor)
        and isinstance(h0, torch.Tensor)
        and isinstance(w_hh, torch.Tensor)
        and isinstance(b_hh, torch.Tensor)
        and x.dim() == 3
        and x.shape[0] >= min_steps
        and h0.dim() == 2
        and (c0 is None) == (G != 4)
    ):
        _, B, W = x.shape
        H = h0.shape[1]
        GH = G * H
        dtype, device = x.dtype, x.device
        if (
            H > 0
            and dtype.is_floating_point
            and h0.shape[0] == B
            and w_hh.shape == (GH, H)
            and b_hh.shape == (GH,)
            and (W == GH if w_ih is None else w_ih.shape == (GH, W))
            and (b_ih is None or b_ih.shape == (GH,))
            and (c0 is None or c0.shape == (B, H))
            and h0.dtype == dtype and h0.device == device
            and w_hh.dtype == dtype and w_hh.device == device
            and b_hh.dtype == dtype and b_hh.device == device
            and (w_ih is None or (w_ih.dtype == dtype and w_ih.device == device))
            and (b_ih is None or (b_ih.dtype == dtype and b_ih.device == device))
            and (c0 is None or (c0.dtype == dtype and c0.device == device))
        ):  # fmt: skip
            return
    raise_bad_args(where, cell, nonlinearity, x, w_ih, b_ih, w_hh, b_hh, h0, c0, sfx, min_steps)


def raise_bad_args(where, cell, nonlinearity, x, w_ih, b_ih, w_hh, b_hh, h0, c0, sfx, min_steps=1):
    """The error for arguments :func:`check_args` refused, naming the tensor, the expected
    and the actual shape (or dtype, or device)."""
    G = GATES.get(cell)
    if G is None:
        raise ValueError(f"{where}: cell must be one of 'rnn', 'gru', 'lstm', got {cell!r}.")
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"Unknown nonlinearity {nonlinearity!r}. Select from 'tanh' or 'relu'.")
    names = ARG_NAMES if sfx is None else LAYER_ARG_NAMES
    if w_ih is None and sfx is None:
        names = ("gx", *names[1:])
    x_shape = "(T, B, G*H)" if w_ih is None else ARG_SHAPES[0]
    for t, i in ((x, 0), (w_hh, 3), (h0, 5)):
        if t is None:
            raise TypeError(
                f"{where}: {name_of(names, i, sfx)} is required, got None: pass a tensor of "
                f"shape {ARG_SHAPES[i] if i else x_shape}."
            )
    for t, i in ((x, 0), (w_ih, 1), (b_ih, 2), (w_hh, 3), (b_hh, 4), (h0, 5), (c0, 6)):
        if t is not None and not isinstance(t, torch.Tensor):
            raise TypeError(
                f"{where}: {name_of(names, i, sfx)} must be a torch.Tensor, got "
                f"{type(t).__name__}. Convert it with torch.as_tensor(...)."
            )
    if x.dim() != 3:
        raise ValueError(f"{where}: {names[0]} must be 3-D {x_shape}, got shape {tuple(x.shape)}.")
    if h0.dim() != 2:
        raise ValueError(f"{where}: {names[5]} must be 2-D (B, H), got shape {tuple(h0.shape)}.")
    T, B, W = x.shape
    if T < min_steps:  # the layers': the backward's h_{t-1} would have no rows
        raise ValueError(
            f"{where}: {names[0]} has no time steps (shape {tuple(x.shape)}). Pass at least one "
            "step."
        )
    H = h0.shape[1]
    GH = G * H
    if H == 0:  # as torch.nn's "hidden_size must be greater than zero"
        raise ValueError(
            f"{where}: {names[5]} has shape {tuple(h0.shape)}: the hidden size H (its second "
            "dimension) must be at least 1."
        )
    if not x.dtype.is_floating_point:
        raise TypeError(
            f"{where}: {names[0]} is {x.dtype}; the recurrence needs floating-point tensors "
            "(float32, float64, ...): convert them with .float() or .double()."
        )
    if c0 is None and cell == "lstm":
        raise ValueError(f"{where}: cell='lstm' needs c0 of shape (B, H) = {(B, H)}.")
    if c0 is not None and cell != "lstm":
        raise ValueError(f"{where}: c0 is for cell='lstm' only; pass None for cell={cell!r}.")
    if b_hh is None:
        raise ValueError(f"{where}: {name_of(names, 4, sfx)} is required; pass zeros for no bias.")
    checks = (
        (x, (T, B, GH) if w_ih is None else (T, B, W), 0),
        (h0, (B, H), 5),
        (w_hh, (GH, H), 3),
        (b_hh, (GH,), 4),
        (w_ih, (GH, W), 1),
        (b_ih, (GH,), 2),
        (c0, (B, H), 6),
    )
    dtype, device = x.dtype, x.device
    for t, shape, i in checks:
        if t is None:
            continue
        if t.shape != shape:
            what = x_shape if i == 0 else ARG_SHAPES[i]
            raise ValueError(
                f"{where}: {name_of(names, i, sfx)} has shape {tuple(t.shape)}, expected "
                f"{shape} = {what} for cell={cell!r} (G={G}, B={B} from {names[0]}, H={H} from "
                f"{names[5]}" + ("" if w_ih is None else f", I={W} from {names[0]}") + ")."
            )
        if t.dtype != dtype:
            raise TypeError(
                f"{where}: {name_of(names, i, sfx)} is {t.dtype} but {names[0]} is {dtype}; the "
                "kernels take one dtype. Convert them with .to(dtype)."
            )
        if t.device != device:
            raise TypeError(
                f"{where}: {name_of(names, i, sfx)} is on {t.device} but {names[0]} is on "
                f"{device}; the kernels take one device. Move them with .to(device)."
            )
    raise AssertionError("check_args refused arguments raise_bad_args accepts")


def name_of(names, i, sfx):
    return names[i] + sfx if sfx is not None and i in (1, 2, 3, 4) else names[i]


def check_like(where, name, t, shape, like, optional=True):
    """``t`` (None where ``optional``) of ``shape``, with ``like``'s dtype and device."""
    if t is None and optional:
        return
    if (
        not isinstance(t, torch.Tensor)
        or t.shape != shape
        or t.dtype != like.dtype
        or t.device != like.device
    ):
        got = (
            f"{type(t).__name__}"
            if not isinstance(t, torch.Tensor)
            else f"shape {tuple(t.shape)}, {t.dtype} on {t.device}"
        )
        raise ValueError(
            f"{where}: {name} must be a tensor of shape {shape}, {like.dtype} on {like.device} "
            f"(as the other arguments), got {got}."
        )


def _state(where, cell, nonlinearity, x, w_hh, b_hh, h0, c0, out):
    """The arguments of a backward: ``out`` (T, B, H) and the recurrent ones, checked with a
    stand-in projection of ``out``'s steps and rows (no data; ``b_hh`` may be None); ``x``,
    the projection or the
    layer's input (T, B, I), or None where the backend's backward does not read it, must
    have those steps and rows."""
    if not isinstance(out, torch.Tensor) or out.dim() != 3:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"{where}: out must be the forward's output (T, B, H), got {got}.")
    T, B = out.shape[0], out.shape[1]
    G = GATES.get(cell, 1)
    H = h0.shape[1] if isinstance(h0, torch.Tensor) and h0.dim() == 2 else 1
    gx = out.new_empty(()).expand(T, B, G * H)
    if b_hh is None:  # a backward that does not read it (BACKWARD_NEEDS_B_HH = False)
        b_hh = out.new_empty(()).expand(G * H)
    check_args(where, cell, nonlinearity, gx, None, None, w_hh, b_hh, h0, c0, min_steps=0)
    check_like(where, "out", out, (T, B, H), h0, optional=False)
    if x is not None and (not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[:2] != (T, B)):
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(
            f"{where}: the forward's input must have out's steps and rows ({T}, {B}, ...), "
            f"got {got}."
        )


def _zero_grads(cell, args):
    """A backward's arguments with the incoming gradients left out (None: the output, the
    final state or cell state not used by the loss) as zeros: only Triton took None, the
    reference and Numba failed inside."""
    grad_out, grad_hn, grad_cn, *rest = args
    h0, out = rest[3], rest[5]  # (x, w_hh, b_hh, h0, c0, out, saved)
    if grad_out is None:
        grad_out = torch.zeros_like(out)
    if grad_hn is None:
        grad_hn = torch.zeros_like(h0)
    if grad_cn is None and cell == "lstm":
        grad_cn = torch.zeros_like(h0)
    return (grad_out, grad_hn, grad_cn, *rest)


# the compiled backends' modules (the references run wherever torch does)
_BACKEND_OF = {"numba_cpu": "numba", "triton_gpu": "triton"}
_RUNS_ON = {
    "numba": ("cpu", (torch.float32, torch.float64)),
    "triton": ("cuda", (torch.float32, torch.bfloat16, torch.float64)),
}


def _check_backend(where, backend, device, dtype):
    """The layers' error where the tensors are of a dtype or on a device the backend cannot
    run: Numba failed deep in its type system on float16 ("NotImplementedError: float16"),
    Triton on CPU tensors said "0 active drivers"."""
    home, dtypes = _RUNS_ON[backend]
    if device.type == home and dtype in dtypes:
        return
    from tsrnn.kernels.common.registry import BackendUnavailableError, resolve_backend

    try:
        resolve_backend(backend, device, dtype)  # (Triton's interpreter runs on the CPU)
    except BackendUnavailableError as exc:
        raise BackendUnavailableError(f"{where}: {exc}") from None


def checked(cell: str, kind: str):
    """Wrap a backend's ``kind`` function (the names of ``tsrnn.kernels``' calling
    convention) with the checks of its arguments."""

    def wrap(fn):
        where = f"{fn.__module__.removeprefix('tsrnn.kernels.')}.{fn.__name__}"

        def nl(options):
            return options.get("nonlinearity", "tanh") if cell == "rnn" else "tanh"

        if kind == "forward":

            def check(gx, w_hh, b_hh, h0, c0=None, **options):
                check_args(
                    where, cell, nl(options), gx, None, None, w_hh, b_hh, h0, c0, min_steps=0
                )

        elif kind == "forward_projected":

            def check(x, w_ih, b_ih, w_hh, b_hh, h0, c0=None, **options):
                check_args(where, cell, nl(options), x, w_ih, b_ih, w_hh, b_hh, h0, c0, min_steps=0)

        elif kind in ("backward", "backward_with_weight_grads"):

            def check(grad_out, grad_hn, grad_cn, x, w_hh, b_hh, h0, c0, out, saved, **options):
                _state(where, cell, nl(options), x, w_hh, b_hh, h0, c0, out)
                T, B, H = out.shape
                check_like(where, "grad_out", grad_out, (T, B, H), h0)
                check_like(where, "grad_hn", grad_hn, (B, H), h0)
                check_like(where, "grad_cn", grad_cn, (B, H), h0)

        elif kind in ("forward_projected_head", "train_head"):

            def check(x, w_ih, b_ih, w_hh, b_hh, h0, w_o, b_o, y, *args, **options):
                check_args(where, cell, "tanh", x, w_ih, b_ih, w_hh, b_hh, h0, None, min_steps=0)
                O = w_o.shape[0] if isinstance(w_o, torch.Tensor) and w_o.dim() == 2 else -1
                check_like(where, "w_o", w_o, (max(O, 0), h0.shape[1]), h0, optional=False)
                check_like(where, "b_o", b_o, (O,), h0, optional=False)
                check_like(where, "y", y, (x.shape[0], x.shape[1], O), h0, optional=False)
                grads_out = options.get("grads_out")
                if grads_out is not None:  # added into in place: the parameters' shapes
                    like = (w_ih, b_ih, w_hh, b_hh, w_o, b_o)
                    if len(grads_out) != 6 or any(
                        tuple(g.shape) != tuple(p.shape) for g, p in zip(grads_out, like)
                    ):
                        raise ValueError(
                            f"{where}: grads_out must be six arrays of the shapes of w_ih, "
                            "b_ih, w_hh, b_hh, w_o and b_o, to add the gradients into."
                        )
                    _check_grads_out_dtype(where, grads_out, h0)

        elif kind == "backward_head":

            def check(grad_hn, x, w_hh, b_hh, h0, out, saved, w_o, e, **options):
                _state(where, cell, "tanh", x, w_hh, b_hh, h0, None, out)
                T, B, H = out.shape
                O = w_o.shape[0] if isinstance(w_o, torch.Tensor) and w_o.dim() == 2 else -1
                check_like(where, "grad_hn", grad_hn, (B, H), h0)
                check_like(where, "w_o", w_o, (max(O, 0), H), h0, optional=False)
                check_like(where, "e", e, (T, B, O), h0, optional=False)

        else:
            raise ValueError(f"unknown kernel function kind {kind!r}")

        backward = kind in ("backward", "backward_with_weight_grads")
        signature = inspect.signature(fn)
        positional = [
            name
            for name, p in signature.parameters.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        backend = _BACKEND_OF.get(fn.__module__.rsplit(".", 1)[-1])
        at_h0 = positional.index("h0")

        @functools.wraps(fn)
        def inner(*args, **kwargs):
            if len(args) < len(positional) and any(name in kwargs for name in positional):
                # arguments given by name (the backends' own names: gx or x): in order
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                args = tuple(bound.arguments[name] for name in positional)
                kwargs = {k: v for k, v in kwargs.items() if k not in positional}
            if cell != "rnn" and "nonlinearity" in kwargs:
                # the RNN's option: the reference and Triton took it for any cell and
                # ignored it, Numba refused it; now every backend takes 'tanh' alone
                if kwargs.pop("nonlinearity") != "tanh":
                    raise ValueError(
                        f"{where}: nonlinearity is an option of the RNN cell only; the "
                        f"{cell.upper()}'s gates are fixed. Leave it out."
                    )
            check(*args, **kwargs)
            if backend is not None:
                h0 = args[at_h0] if len(args) > at_h0 else kwargs["h0"]
                _check_backend(where, backend, h0.device, h0.dtype)
            if backward and None in args[:3]:
                args = _zero_grads(cell, args)
            return fn(*args, **kwargs)

        inner.unchecked = fn
        return inner

    return wrap


def _check_grads_out_dtype(where, grads_out, h0):
    """``train_head``'s ``grads_out`` are added into in place: of ``h0``'s dtype and
    C-contiguous, or the sums were truncated (int64 buffers took every gradient as 0) or
    rounded (float32 buffers beside float64 arguments) without a word."""
    import numpy as np

    want = torch.empty(0, dtype=h0.dtype, device="cpu").numpy().dtype
    names = ("w_ih", "b_ih", "w_hh", "b_hh", "w_o", "b_o")
    for name, g in zip(names, grads_out, strict=True):
        if isinstance(g, torch.Tensor):
            dtype, contiguous = g.dtype, g.is_contiguous() and g.device.type == "cpu"
            same = dtype == h0.dtype
        else:
            array = np.asarray(g)
            dtype, contiguous = array.dtype, array.flags["C_CONTIGUOUS"]
            same = dtype == want
        if not same:
            raise TypeError(
                f"{where}: grads_out's gradient of {name} is {dtype}, but the arguments are "
                f"{h0.dtype}: the gradients are added into buffers of that dtype"
            )
        if not contiguous:
            raise ValueError(
                f"{where}: grads_out's gradient of {name} must be a C-contiguous CPU array "
                "(the kernel adds into its memory): pass .contiguous() buffers"
            )
