"""Network and training loop of :class:`tsrnn.RNNForecaster`, as small pure functions.

:func:`fit_loop` runs epochs (:func:`run_epoch`), each a sequence of :func:`train_step` calls on
batches built by :func:`make_batch`; :func:`validate` scores the held-out most recent rows;
:func:`forecast` rolls the network forward. History is data: one dict per epoch.

What the network sees (dimension legend: W window, B batch, C target columns, K covariate
columns, H steps emitted at once, I = C + H*K inputs, O = H*C outputs): a window of scaled
target rows ``y[s .. s+W-1]`` and, at each position ``t``, the covariates of the steps it
predicts ``x[t+1 .. t+H]``. Targets are teacher-forced at every position: the output at ``t``
is compared with ``y[t+1 .. t+H]``. Each window is centred on its own level (the mean of its
inputs), so a trending series is seen as a shape around a moving level and forecasts
extrapolate trends instead of saturating at the training range.

The outputs are offsets from a base: the naive forecast ``y[t]`` (the last value), or, for
the series and columns that are seasonal (:func:`tsrnn._data.seasonal_mask`), the seasonal
base of each target (:func:`seasonal_base`: the seasonal naive forecast ``y[t+k-m]``, m the
seasonal period, averaged over the last ``s`` seasons; ``s`` from
:func:`tsrnn._data.seasonal_years`): the network learns corrections to the naive forecast
that suits the series. Series without a season that revert to their mean
(:func:`tsrnn._data.revert_base`) correct ``mu + phi**k * (y[t] - mu)`` instead of the last
value. Seasonal series also get their base (centred) as an input at every
position, so the network reads the value it corrects; each window then carries
``lead = s * m`` rows of history before its first input (:class:`WindowPlan`), of which
those before its series' first row (a window may have as few as ``min_lead``) are zeros and
not read: the base there averages the seasons the series has.
"""

from __future__ import annotations

import contextlib
import functools
import math
import signal
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

import tsrnn.nn
from tsrnn._data import WindowPlan, gather
from tsrnn.kernels.common import workspace
from tsrnn.kernels.common.registry import get_kernel, resolve_backend

__all__ = [
    "ForecastNet",
    "Problem",
    "fit_loop",
    "forecast",
    "make_batch",
    "run_epoch",
    "train_step",
    "validate",
]

_LAYERS = {"rnn": tsrnn.nn.RNN, "gru": tsrnn.nn.GRU, "lstm": tsrnn.nn.LSTM}
_OPTIMIZERS = {
    "adam": (torch.optim.Adam, {}),
    "adamw": (torch.optim.AdamW, {}),
    "sgd": (torch.optim.SGD, {"momentum": 0.9}),
    "rmsprop": (torch.optim.RMSprop, {}),
}
# relative improvement of the validation loss that counts as progress for ``patience``
_TOL = 1e-4
# and by more than this share of the first epoch's validation loss: float noise is no gain
_ABS_TOL = 1e-8
# optimizer steps before early stopping looks for the best epoch (see :func:`fit_loop`)
WARMUP_STEPS = 300
# a training loss this many times the one at the initial weights: the fit ran off
RUN_OFF = 10.0
_VALID_BATCH = 1024
# standard deviation of the training inputs' noise, relative to that of each target column's
# one-step changes
# (see :func:`input_noise`)
INPUT_NOISE = 2.0


_GLOBAL_RNG_LOCK = threading.RLock()


class FitRandom:
    """One fit's own torch random streams, so that fits in several threads at once (a
    threaded search, Dask's threads) each draw exactly what they would alone.

    ``cpu`` (a :class:`torch.Generator` seeded with ``seed``) draws the initial weights and,
    on the CPU, the input noise and dropout; on a CUDA device those two come from ``device``,
    seeded alike. The draws are those of ``torch.manual_seed(seed)`` and torch's global
    generators, in the same order, so a fit's results do not depend on which is used. The
    noise and dropout are drawn with ``generator=``; weight initialisation takes no generator
    argument in torch, so :meth:`as_global` lends it these streams as the global ones, under
    a lock that fits in other threads wait on (once, before training).
    """

    def __init__(self, seed: int, device):
        device = torch.device(device)
        self.cpu = torch.Generator().manual_seed(seed)
        self._cuda = device if device.type == "cuda" else None
        self.device = (
            torch.Generator(device=device).manual_seed(seed) if self._cuda is not None else self.cpu
        )

    @contextlib.contextmanager
    def as_global(self):
        """torch's global generators set to this fit's streams for the block (and what the
        block draws taken back into them); the global states are restored after."""
        with _GLOBAL_RNG_LOCK:
            saved = torch.get_rng_state()
            torch.set_rng_state(self.cpu.get_state())
            if self._cuda is not None:
                saved_cuda = torch.cuda.get_rng_state(self._cuda)
                torch.cuda.set_rng_state(self.device.get_state(), self._cuda)
            try:
                yield
            finally:
                self.cpu.set_state(torch.get_rng_state())
                torch.set_rng_state(saved)
                if self._cuda is not None:
                    self.device.set_state(torch.cuda.get_rng_state(self._cuda))
                    torch.cuda.set_rng_state(saved_cuda, self._cuda)


class ForecastNet(torch.nn.Module):
    """A recurrent layer of :mod:`tsrnn.nn` and a linear head emitting ``H * C`` values per step.

    Parameters
    ----------
    cell : {'rnn', 'gru', 'lstm'}
    input_size, hidden_size, num_layers : int
    n_out : int
        Outputs per step, ``horizon * n_targets``.
    dropout : float
    nonlinearity : {'tanh', 'relu'}
        ``cell='rnn'`` only.
    backend : str
        Passed to the layer.

    Examples
    --------
    >>> import torch
    >>> net = ForecastNet("gru", 3, 8, 1, n_out=2, backend="torch")
    >>> out, state = net(torch.zeros(5, 4, 3))          # (W, B, I)
    >>> tuple(out.shape), tuple(state.shape)
    ((5, 4, 2), (1, 4, 8))
    """

    def __init__(
        self,
        cell,
        input_size,
        hidden_size,
        num_layers,
        n_out,
        dropout=0.0,
        nonlinearity="tanh",
        backend="auto",
    ):
        super().__init__()
        kwargs = {"num_layers": num_layers, "dropout": dropout if num_layers > 1 else 0.0}
        if cell == "rnn":
            kwargs["nonlinearity"] = nonlinearity
        # drawn in float32 whatever torch's default dtype (torch.set_default_dtype): the same
        # random_state gives the same initial weights; build_net then casts to the fit's dtype
        kwargs["dtype"] = torch.float32
        self.rnn = _LAYERS[cell](input_size, hidden_size, backend=backend, **kwargs)
        self.head = torch.nn.Linear(hidden_size, n_out, dtype=torch.float32)

    def forward(self, x, state=None):
        out, state = self.rnn(x, state)
        return self.head(out), state


def build_net(config: dict, init: str, device, dtype) -> ForecastNet:
    """A fresh :class:`ForecastNet` from ``config`` with the recurrent weights initialised."""
    # in the fit's dtype before the fill: float64 weights filled in float32 and cast were
    # orthogonal only to float32's precision (4e-7)
    net = ForecastNet(**config).to(dtype=dtype)
    if init != "uniform":
        fill = torch.nn.init.orthogonal_ if init == "orthogonal" else torch.nn.init.xavier_uniform_
        for name, param in net.rnn.named_parameters():
            if name.startswith("weight_hh"):
                # one square block per gate, as torch lays them out (G*H, H)
                for block in param.data.chunk(param.shape[0] // param.shape[1]):
                    fill(block)
            elif name.startswith("weight_ih") and init == "xavier":
                fill(param.data)
    return net.to(device=device, dtype=dtype)


def detach_state(state):
    if state is None:
        return None
    if isinstance(state, tuple):
        return tuple(s.detach() for s in state)
    return state.detach()


@dataclass
class Problem:
    """Scaled training data and how windows are cut from it.

    ``y`` (N, C) and ``x`` (N, K) or ``None`` are the scaled rows of every series stacked;
    ``plan`` says where the training and validation windows start.
    """

    y: np.ndarray
    x: np.ndarray | None
    plan: WindowPlan
    horizon: int  # H, steps emitted at once
    # (S, C) bool: series and columns whose outputs are offsets from the seasonal base
    # (seasonal_base); None: every output is an offset from the last value
    seasonal: np.ndarray | None = None
    # the season's length m: ``plan.lead`` is a whole number of seasons (see seasonal_base);
    # None: the lead is one season
    period: int | None = None
    # (S, C, 2): per series and column, phi and mu of the base ``mu + phi**k * (y[t] - mu)``
    # where it has no seasonal base (:func:`revert_base`; phi 1 and mu 0: the last value,
    # bit for bit); None: every base without a season is the last value
    revert: np.ndarray | None = None

    @property
    def n_targets(self) -> int:
        return self.y.shape[1]

    @property
    def input_size(self) -> int:
        return input_size(
            self.n_targets,
            0 if self.x is None else self.x.shape[1],
            self.horizon,
            self.seasonal is not None,
        )


def input_size(n_targets, n_covariates, horizon, seasonal) -> int:
    """Inputs per step: the targets, the seasonal base's forecasts of the ``horizon`` steps
    ahead (seasonal models only) and the covariates of those steps."""
    return n_targets + horizon * n_covariates + (horizon * n_targets if seasonal else 0)


def _steps_ahead(rows: torch.Tensor, horizon: int) -> torch.Tensor:
    """(B, W + H, F) rows -> (B, W, H*F): for each position t, rows t+1 .. t+H, flattened."""
    B, L, F = rows.shape
    win = rows[:, 1:].unfold(1, horizon, 1)  # (B, W, F, H)
    return win.transpose(2, 3).reshape(B, L - horizon, horizon * F)


def make_inputs(
    block, x_next, horizon, lead=0, seasonal=None, period=None, revert=None, history=None
):
    """Network inputs and output bases of windows of targets.

    ``block`` (B, lead + W + H', C): ``lead`` rows of history, the window's ``W`` target rows,
    then (training) the ``H' = horizon`` rows it predicts or (forecasting) nothing further
    that is read: only rows before ``lead + W`` are. ``x_next`` (B, W, H*K) or ``None``: the
    covariates of the steps ahead. ``seasonal``: ``None`` (no seasonal model), ``True`` (every
    row and column seasonal) or a (B, C) bool tensor of the rows and columns whose outputs are
    offsets from the seasonal base (:func:`seasonal_base`, period ``period``, over
    ``lead // period`` seasons; ``period=None``: one season of ``lead`` rows). ``revert``
    (B, C, 2) tensor or None: each row's and column's phi and mu, the base of y[t+k] then
    ``mu + phi**k * (y[t] - mu)`` (:func:`revert_base`) where it has no seasonal base.
    ``history`` (B,) int64 tensor or None (all ``lead``): the rows of each block's ``lead``
    that are its series' (the last ones; those before them must be zeros), at least one
    season (:func:`seasonal_base`).

    Returns the inputs (W, B, I), centred on each window's level, and the base (B, W or 1,
    H*C) that the network's outputs are offsets from.
    """
    W = block.shape[1] - lead - horizon
    y_win = block[:, lead : lead + W]
    level = y_win.mean(dim=1, keepdim=True)
    if horizon > 1:
        level = level.repeat(1, 1, horizon)  # (B, 1, H*C), as the outputs are laid out
    parts = [y_win - level[..., : y_win.shape[-1]]]
    # the naive forecast of y[t+1 .. t+H] at each position t: y[t]
    base = y_win if horizon == 1 else y_win.repeat(1, 1, horizon)
    if revert is not None:
        phi, mu = revert[..., 0], revert[..., 1]  # (B, C) each
        # phi**k for k = 1 .. H, laid out as the outputs: (B, 1, H*C)
        powers = torch.cat([phi**k for k in range(1, horizon + 1)], dim=-1).unsqueeze(1)
        mus = mu.repeat(1, horizon).unsqueeze(1)
        base = mus + powers * (base - mus)
    if seasonal is not None:
        seasons = seasonal_base(block, W, horizon, lead, period or lead, history)
        if seasonal is True:
            base = seasons
        else:
            base = torch.where(seasonal.repeat(1, horizon).unsqueeze(1), seasons, base)
        parts.append(base - level)
    if x_next is not None:
        parts.append(x_next)
    inputs = parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)
    return inputs.transpose(0, 1), base


def seasonal_base(block, W, horizon, lead, period, history=None):
    """The seasonal base of ``make_inputs``: (B, W, H*C) forecasts of y[t+1 .. t+H] at each
    window position t from the ``lead = years * period`` rows before the window.

    With one year it is the seasonal naive forecast y[t+1-m .. t+H-m]. With more, each year's
    value is taken as an offset from the mean of the season (m rows) it ends, the offsets are
    averaged over the years and put on the last season's mean:
    ``A(t) + mean_j (y[t+1+k-j*m] - A(t-(j-1)*m))``, ``A(e)`` the mean of y[e-m+1 .. e]. On a
    noisy season that averages the noise away; on a noise-free season that repeats, it equals
    the seasonal naive forecast.

    ``history`` (B,) int64 tensor or None (all ``lead``): where a block's series has fewer
    rows before the window than ``lead`` (at least one season), each position averages the
    whole seasons its series has up to it, ``min(years, (history + t + 1) // m)``: a short
    series is not refused the averaged base, nor a long one held to a short one's seasons.
    The rows before the series must be zeros (they are read, and weighted by zero).
    """
    m = period
    years = lead // m
    if years <= 1:
        return _steps_ahead(block[:, lead - m : lead - m + W + horizon], horizon)
    B, _, C = block.shape
    cs = torch.cat([block.new_zeros((B, 1, C)), block.cumsum(dim=1)], dim=1)

    def season_mean(shift):  # A(t - shift) at each window position t, (B, W, C)
        hi = lead + 1 - shift
        return (cs[:, hi : hi + W] - cs[:, hi - m : hi - m + W]) / m

    used = None  # (B, W, 1): the seasons each position averages
    if history is not None and bool((history < lead).any()):
        pos = torch.arange(1, W + 1, device=block.device)
        used = torch.clamp((history.to(block.device)[:, None] + pos) // m, max=years)
        used = used.to(block.dtype).unsqueeze(-1)
    offsets = 0
    for j in range(1, years + 1):
        ahead = _steps_ahead(block[:, lead - j * m : lead - j * m + W + horizon], horizon)
        offset = ahead - season_mean((j - 1) * m).repeat(1, 1, horizon)
        offsets = offsets + (offset if used is None else (used >= j).to(block.dtype) * offset)
    return season_mean(0).repeat(1, 1, horizon) + offsets / (years if used is None else used)


def _seasonal_rows(mask, plan, starts, device):
    """``make_inputs``' ``seasonal`` for windows at ``starts``: True when every series is."""
    if mask.all():
        return True
    return torch.from_numpy(mask[plan.series_of(starts)]).to(device)


def _revert_rows(revert, plan, starts, device, dtype):
    """``make_inputs``' ``revert`` for windows at ``starts``: each window's series' row."""
    return torch.as_tensor(revert[plan.series_of(starts)], device=device, dtype=dtype)


def make_batch(problem: Problem, starts: np.ndarray, device, dtype, noise=None, generator=None):
    """Inputs (W, B, I) and teacher-forced targets (W, B, H*C) of the windows at ``starts``.

    ``noise`` (nf,) or None: standard deviations of Gaussian noise added to the first ``nf``
    inputs (the target-derived ones, :func:`input_noise`). On the CPU in float32/float64 the
    batch is built in one Numba pass (:mod:`tsrnn._batch_numba`); elsewhere by
    :func:`make_batch_torch`, the reference that pass is tested against. Both draw the noise
    in float32 as ``torch.randn((W, B, nf))`` from ``generator`` (None: torch's global one),
    so they agree draw for draw.
    """
    if torch.device(device).type == "cpu" and dtype in (torch.float32, torch.float64):
        from tsrnn._batch_numba import train_batch  # imports Numba: not at start-up

        return train_batch(problem, starts, dtype, noise, generator)
    return make_batch_torch(problem, starts, device, dtype, noise, generator)


def make_batch_torch(
    problem: Problem, starts: np.ndarray, device, dtype, noise=None, generator=None
):
    """:func:`make_batch` in torch ops on any device (the reference of the Numba path)."""
    plan, H = problem.plan, problem.horizon
    L = plan.lead
    y_rows = gather(problem.y, starts, plan.length)
    history = None
    if plan.min_lead < L:
        history = plan.history(starts)
        # the rows a block holds before its series: zeros (seasonal_base weighs them by zero)
        y_rows[np.arange(plan.length)[None, :] < (L - history)[:, None]] = 0.0
        history = torch.from_numpy(history)
    y_rows = torch.from_numpy(y_rows).to(device, dtype)
    x_next = None
    if problem.x is not None:
        x_rows = torch.from_numpy(gather(problem.x, starts + L, plan.length - L))
        x_next = _steps_ahead(x_rows.to(device, dtype), H)
    seasonal = revert = None
    if problem.seasonal is not None:
        seasonal = _seasonal_rows(problem.seasonal, plan, starts, device)
    if problem.revert is not None:
        revert = _revert_rows(problem.revert, plan, starts, device, dtype)
    inputs, base = make_inputs(y_rows, x_next, H, L, seasonal, problem.period, revert, history)
    targets = _steps_ahead(y_rows[:, L:], H) - base
    if noise is not None:
        n = len(noise)
        # float32 draws whatever the dtype (as _batch_numba.train_batch): dtype changes the
        # precision of a fit, not its random numbers
        draws = torch.randn(
            inputs[..., :n].shape, device=device, dtype=torch.float32, generator=generator
        ).to(dtype)
        inputs[..., :n] += noise * draws
    return inputs, targets.transpose(0, 1)


def train_step(net, optimizer, inputs, targets, *, bptt=None, clip_norm=None, clip_value=None):
    """One optimisation step on one batch; returns the batch's mean squared error.

    With ``bptt`` shorter than the window, the window runs in chunks of ``bptt`` steps: the
    state is carried into the next chunk but detached, so gradients flow back at most ``bptt``
    steps. Each chunk's loss is its share of the window's mean, so ``bptt >= W`` is exactly
    full backpropagation through time. Clipping acts on the optimizer's parameters (the flat
    one of :func:`flat_parameters` in a fit: the same norm). The head and the loss run as one op
    (:func:`tsrnn.kernels.common.numba_head.head_sq_loss`: ``net.head`` then the squared
    error, as ``net(...)`` would give), or, for a one-layer GRU on the Numba backend, the
    layer, the head and the loss together: their value and gradients from one kernel call
    (:func:`tsrnn.nn.layer_head_sq_loss_grads`, no autograd pass), or where the inputs ask for
    a gradient as one autograd op (:func:`tsrnn.nn.layer_head_sq_loss`).
    """
    from tsrnn.kernels.common.numba_head import head_sq_loss  # imports Numba: not at start-up
    from tsrnn.nn import layer_head_sq_loss, layer_head_sq_loss_grads

    # in place, not set to None: under :func:`flat_parameters` the parameters' gradients are
    # views of the one flat gradient the optimizer steps with, and must stay so
    optimizer.zero_grad(set_to_none=False)
    W = inputs.shape[0]
    chunk = W if bptt is None else min(int(bptt), W)
    total = targets.numel()
    state, loss_sum = None, 0.0
    head = net.head
    for start in range(0, W, chunk):
        x, y = inputs[start : start + chunk], targets[start : start + chunk]
        # the layer, the head, the loss and their gradients in one kernel call where the layer
        # allows it: the gradients added to the parameters' as loss.backward() would
        direct = layer_head_sq_loss_grads(
            net.rnn, x, state, head.weight, head.bias, y, 1.0 / total, accumulate=True
        )
        if direct is not None:
            loss, state, grads = direct
            for p, g in grads:
                if p.grad is None:
                    p.grad = g
                else:
                    p.grad.add_(g)
            loss_sum += loss
            continue
        # else as one op each way (the same kernels; where a gradient reaches the inputs)
        fused = layer_head_sq_loss(net.rnn, x, state, head.weight, head.bias, y, 1.0 / total)
        if fused is not None:
            loss, state = fused
        else:
            hidden, state = net.rnn(x, state)
            # net.head and the loss in one op each way (kernels/common/numba_head.py)
            loss = head_sq_loss(hidden, head.weight, head.bias, y, 1.0 / total)
        loss.backward()
        loss_sum += float(loss.detach())
        state = detach_state(state)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if clip_value is not None:
        torch.nn.utils.clip_grad_value_(params, clip_value)
    if clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(params, clip_norm)
    optimizer.step()
    return loss_sum


def run_epoch(net, optimizer, problem, rng, settings, first=None) -> float:
    """Visit every training window once, in a shuffled order; returns the mean training loss.

    ``first``: a list, given empty, to which the first batch's loss (at the weights the epoch
    starts from, before its first step) is appended.

    On the CPU the kernels reuse their large output buffers from one batch to the next
    (:func:`tsrnn.kernels.common.workspace.reuse_buffers`) instead of faulting in fresh pages;
    the epoch's last, shorter batch releases the full batches' buffers first.
    """
    net.train()
    n = problem.plan.n_train
    order = problem.plan.visit_order(rng.permutation(n))
    bs = settings["batch_size"]
    noise = settings.get("input_noise")
    streams = settings.get("random")
    generator = None if streams is None else streams.device
    # dropout between stacked layers draws from this fit's stream (not torch's global one)
    drops = streams is not None and net.training and _draws_dropout(net)
    loss_sum = 0.0
    cpu = torch.device(settings["device"]).type == "cpu"
    with workspace.reuse_buffers() if cpu else contextlib.nullcontext():
        for i in range(0, n, bs):
            starts = problem.plan.train_starts(order[i : i + bs])
            if i and len(starts) != bs:
                workspace.release_free()  # the last, shorter batch: full-batch buffers go
            inputs, targets = make_batch(
                problem, starts, settings["device"], settings["dtype"], noise, generator
            )
            with _dropout_drawn_from(net, generator) if drops else contextlib.nullcontext():
                loss = train_step(
                    net,
                    optimizer,
                    inputs,
                    targets,
                    bptt=settings["bptt"],
                    clip_norm=settings["clip_norm"],
                    clip_value=settings["clip_value"],
                )
            loss_sum += loss * len(starts)
            if first is not None and not first:
                first.append(loss)
    return loss_sum / max(n, 1)


def _draws_dropout(net) -> bool:
    """Whether ``net``'s training forward draws random numbers (dropout between layers)."""
    for m in net.modules():
        rate = getattr(m, "dropout", 0)  # a recurrent layer's, between its stacked layers
        if isinstance(rate, float) and rate > 0 and getattr(m, "num_layers", 1) > 1:
            return True
    return False


@contextlib.contextmanager
def _dropout_drawn_from(net, generator):
    """The recurrent layers' dropout masks drawn from ``generator`` inside the block (the
    same numbers ``F.dropout`` draws from torch's global generator on the CPU), so a fit
    neither reads nor moves the global stream that other threads use."""
    layers = [m for m in net.modules() if isinstance(m, tsrnn.nn._KernelRNNMixin)]
    for m in layers:
        m._dropout_generator = generator
    try:
        yield
    finally:
        for m in layers:
            m.__dict__.pop("_dropout_generator", None)


BASELINE_WINDOWS = 256


@torch.no_grad()
def initial_loss(net, problem, settings) -> float:
    """The training loss at the initial weights, on up to :data:`BASELINE_WINDOWS` training
    windows spread evenly over the training set (without the inputs' noise): the reference
    the run-off warning compares the kept epoch with. One small batch's loss would be one
    window's luck (batch_size=1: 0.0015 against an epoch's 0.05). Draws no random numbers."""
    net.eval()
    n = problem.plan.n_train
    picks = np.unique(np.linspace(0, n - 1, min(n, BASELINE_WINDOWS)).astype(np.int64))
    inputs, targets = make_batch(
        problem, problem.plan.train_starts(picks), settings["device"], settings["dtype"]
    )
    out, _ = net(inputs)
    return float(torch.mean((out - targets) ** 2))


@torch.no_grad()
def validate(net, problem, settings) -> float:
    """Mean squared error of the last position of every validation window (one step ahead of a
    full window of context, as in forecasting)."""
    net.eval()
    n = problem.plan.n_valid_windows
    loss_sum = 0.0
    for i in range(0, n, _VALID_BATCH):
        starts = problem.plan.valid_starts(np.arange(i, min(n, i + _VALID_BATCH)))
        inputs, targets = make_batch(problem, starts, settings["device"], settings["dtype"])
        out, _ = net(inputs)
        loss_sum += float(torch.sum((out[-1] - targets[-1]) ** 2))
    return loss_sum / max(n * targets.shape[-1], 1)


def input_noise(problem: Problem, device, dtype, scale=INPUT_NOISE):
    """Standard deviations of the noise added to the target-derived inputs of training batches.

    The network's inputs built from the target (the centred window and, for seasonal models,
    the centred seasonal base; not the covariates) get Gaussian noise of ``scale``
    times the standard deviation of their target column's one-step changes (within each
    series, in the scaled training rows), fresh for every batch (from torch's generator,
    seeded by the fit). Recursive forecasts feed the network its own outputs, which are never
    exact: trained on exact inputs only, a network leans on the last values so much that its
    errors grow step by step (one-step errors small, forecasts many steps ahead far off). With
    the noise it learns to read the window as a whole. The changes, not the levels, set the
    size: a trend would inflate a level's deviation. ``scale=2.0`` was chosen on the bundled
    datasets (benchmarks/README.md). Returns None when ``scale`` is 0 or the target never
    changes.
    """
    steps = np.diff(problem.y, axis=0)
    within = np.ones(len(steps), dtype=bool)
    within[problem.plan.offsets[1:-1] - 1] = False  # not from one series to the next
    sd = steps[within].std(axis=0) if within.any() else np.zeros(problem.n_targets)
    if not scale or not np.any(sd > 0):
        return None
    if problem.seasonal is not None:
        sd = np.concatenate([sd, np.tile(sd, problem.horizon)])
    return torch.as_tensor(scale * sd, device=device, dtype=dtype)


def make_optimizer(name, params, learning_rate, weight_decay):
    """The optimizer, on its fused implementation where torch has one for these parameters
    (one op per step instead of several per parameter: a third of the time of the default
    Adam step on a small network), else on the ``foreach`` one."""
    cls, extra = _OPTIMIZERS[name]
    params = list(params)
    kwargs = dict(lr=learning_rate, weight_decay=weight_decay, **extra)
    try:
        return cls(params, fused=True, **kwargs)
    except (RuntimeError, TypeError, ValueError):
        return cls(params, foreach=True, **kwargs)


@dataclass
class FitResult:
    history: list
    best_epoch: int
    interrupted: bool
    # the training loss at the initial weights (:func:`initial_loss`, or the first batch's
    # where it has BASELINE_WINDOWS windows or more; None before it completed)
    initial_loss: float | None = None
    # early stopping ended training (patience ran out), rather than max_epochs or an event
    stopped: bool = False
    # the warm-up (WARMUP_STEPS optimizer steps) ended within training, with early stopping
    warmed_up: bool = False
    # the validation loss at the initial weights, computed only where the kept epoch's is ten
    # times the initial training loss or more (a run-off to confirm); None otherwise
    initial_valid: float | None = None


@contextlib.contextmanager
def flat_parameters(net):
    """Put ``net``'s parameters and their gradients in one contiguous buffer each for the block;
    yields the one :class:`~torch.nn.Parameter` over the whole buffer, whose ``.grad`` is the
    flat gradient, for the optimizer and for clipping.

    Each parameter becomes a view of its slice of the buffer and its ``.grad`` a view of its
    slice of the gradient, so autograd accumulates into the flat gradient in place (it adds
    into a gradient that exists) and an optimizer step on the flat parameter updates them all.
    The optimizers offered are elementwise, so their steps are the same as on the separate
    parameters; the clipping norm is the same norm, summed in another order. What it saves is
    per-tensor work: gradient clipping and the optimizer step are one op each instead of a
    group of ops per parameter (a small GRU's fit: 0.91x the time, alternated fits).
    Afterwards (also on an error or interrupt) each parameter and gradient owns its storage
    again, with its last values.
    """
    params = [p for p in net.parameters() if p.requires_grad]
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    grad = torch.zeros_like(flat)
    holder = torch.nn.Parameter(flat)  # the same storage
    holder.grad = grad
    try:  # from the first view on: a failure part way still gives every parameter back
        offset = 0
        for p in params:
            n = p.numel()
            p.data = flat[offset : offset + n].view_as(p)
            p.grad = grad[offset : offset + n].view_as(p)
            offset += n
        yield holder
    finally:
        for p in params:
            p.data = p.data.clone()
            if p.grad is not None:
                p.grad = p.grad.clone()


def fit_loop(net, problem, settings, rng, progress=None) -> FitResult:
    """Train ``net`` in place, one :func:`run_epoch` at a time.

    With early stopping, training stops once the validation loss has not improved (by a
    relative ``1e-4``) for ``patience`` epochs, and the best epoch's weights are restored. The
    best epoch is looked for (and patience counted) from the first epoch that ends after
    :data:`WARMUP_STEPS` optimizer steps (or the last epoch, if training is shorter), as
    Keras' ``start_from_epoch`` but counted in steps so that it does not depend on the size
    of the data: a network a few steps from its initialisation forecasts close to its base,
    which a small validation set can prefer by chance (air_passengers' 12 validation rows
    chose epoch 1, three steps in, and its forecasts 24 months ahead were the worst of any
    epoch). Should training be interrupted during the warm-up, the last complete epoch's
    weights are kept; should it diverge, those of the warm-up epoch with the lowest validation
    loss, or the initial weights (``best_epoch`` 0) where their validation loss is lower.
    Without it, all ``max_epochs`` run and the last weights are kept. A non-finite loss (the
    training loss, or with early stopping the validation loss) ends training (the caller
    warns), with the best epoch's weights (without early stopping the last finite epoch's),
    or the initial ones (``best_epoch`` 0) if the first epoch diverged. ``KeyboardInterrupt``
    also ends it: the best weights so far (without early stopping, the last complete
    epoch's, not those of the epoch it cut short) are kept and ``interrupted`` is set in the
    result (the caller warns); before any epoch has completed it propagates, so that the fit
    fails and leaves the estimator as it was.
    """
    with flat_parameters(net) as flat:
        return _fit_loop(net, [flat], problem, settings, rng, progress)


def _fit_loop(net, params, problem, settings, rng, progress) -> FitResult:
    optimizer = make_optimizer(
        settings["optimizer"],
        params,
        settings["learning_rate"],
        settings["weight_decay"],
    )
    early = settings["early_stopping"]
    steps_per_epoch = -(-problem.plan.n_train // settings["batch_size"])
    history = []
    # the initial weights: what a first epoch that diverges falls back on (best_epoch 0)
    initial = _copy_state(net)
    best_loss, best_epoch, best_state, waited = math.inf, 0, initial, 0
    warm = None  # (validation loss, epoch, weights) of the warm-up's best epoch so far
    sane = (0, initial)  # without early stopping: the last epoch that had not run off
    first = []  # the training loss at the initial weights: the first batch's, if large enough
    interrupted = stopped = warmed_up = False
    initial_valid = None
    try:
        if settings["batch_size"] < BASELINE_WINDOWS and problem.plan.n_train > 0:
            first.append(initial_loss(net, problem, settings))
        for epoch in range(1, settings["max_epochs"] + 1):
            tic = time.perf_counter()
            train_loss = run_epoch(
                net, optimizer, problem, rng, settings, first if epoch == 1 else None
            )
            valid_loss = validate(net, problem, settings) if early else None
            record = {
                "epoch": epoch,
                "train_loss": train_loss,
                "valid_loss": valid_loss,
                "seconds": time.perf_counter() - tic,
            }
            history.append(record)
            if not math.isfinite(train_loss if valid_loss is None else valid_loss):
                if early and math.isinf(best_loss):  # diverged within the warm-up
                    best_epoch, best_state = _least_diverged(net, problem, settings, initial, warm)
                elif not early:  # the last epoch before the loss ran off, not one far off
                    best_epoch, best_state = sane
                break
            warming = epoch * steps_per_epoch < WARMUP_STEPS and epoch < settings["max_epochs"]
            if early and warming:
                # not a candidate, but what a later divergence or interrupt falls back on
                best_epoch, best_state = epoch, _copy_state(net)
                if warm is None or valid_loss < warm[0]:
                    warm = (valid_loss, epoch, best_state)
            elif early:
                warmed_up = warmed_up or epoch * steps_per_epoch >= WARMUP_STEPS
                # relative, and above float noise: a constant or noise-free series' loss
                # wobbles at 1e-11 and counted as improving for ever
                floor = _ABS_TOL * history[0]["valid_loss"]
                if valid_loss < best_loss * (1 - _TOL) - floor or math.isinf(best_loss):
                    # the copy first: an interrupt during it keeps the previous best epoch's
                    # number with its weights
                    state = _copy_state(net)
                    best_loss, best_epoch, waited, best_state = valid_loss, epoch, 0, state
                else:
                    waited += 1
            else:
                # the weights kept should training later diverge or be interrupted mid-epoch
                best_epoch, best_state = epoch, _copy_state(net)
                if not (first and train_loss >= RUN_OFF * first[0]):
                    sane = (epoch, best_state)  # a divergence falls back on these
            if progress is not None:
                progress(record, best_epoch)
            if early and waited >= settings["patience"]:
                stopped = True
                break
    except (KeyboardInterrupt, SystemError) as exc:
        if not is_interrupt(exc):
            raise
        if not history:  # no epoch to keep: the fit fails, as any other exception would
            raise KeyboardInterrupt from None
        interrupted = True
    kept_valid = history[best_epoch - 1]["valid_loss"] if best_epoch else None
    if kept_valid is not None and first and kept_valid >= RUN_OFF * first[0]:
        # a kept epoch far worse on the validation rows than the initial weights' training
        # loss: their validation loss says whether it ran off (an epoch of one optimizer step
        # hides a run-off from its training loss, the batch's before the step)
        net.load_state_dict(initial)
        initial_valid = validate(net, problem, settings)
    if best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    return FitResult(
        history,
        best_epoch,
        interrupted,
        first[0] if first else None,
        stopped,
        warmed_up,
        initial_valid,
    )


def _least_diverged(net, problem, settings, initial, warm):
    """``(epoch, weights)`` to keep when training diverged before the warm-up ended: of the
    initial weights (epoch 0) and the warm-up's best epoch (``warm``), those with the lower
    validation loss. A warm-up epoch can have run far off before the loss overflowed (a
    validation loss of 1e20 against the initial weights' 1), and its weights would then
    forecast worse than the untrained network."""
    net.load_state_dict(initial)
    initial_loss = validate(net, problem, settings)
    if warm is None or (math.isfinite(initial_loss) and initial_loss <= warm[0]):
        return 0, initial
    return warm[1], warm[2]


def _copy_state(net) -> dict:
    """A copy of ``net``'s state that owns its storage (each tensor alone, not the flat buffer
    that a parameter views)."""
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
MIN_WEIGHT_VALUES = 50


def choose_weight(net, problem: Problem, settings, constant=None) -> float:
    """The weight of the network's outputs on its base, chosen on the validation rows.

    Each series is forecast from its validation cut over its validation rows, recursively as
    :meth:`predict` does (``constant``: the series and columns forecast by their base alone,
    as :func:`forecast` takes it), with the outputs scaled by each weight of :data:`WEIGHTS`; the
    weight with the smallest mean absolute error (scaled units, every series, column and
    step) is kept. Weight 0 is the base alone (the seasonal base, the last value or its
    reversion to the mean, :func:`revert_base`), so a
    network that does not forecast its validation rows better than its base is shrunk
    towards it. With fewer than :data:`MIN_WEIGHT_VALUES` validation values (one season of a
    monthly series, say) the choice would follow noise: the weight is then 1, as it is
    without validation rows.
    """
    plan, H = problem.plan, problem.horizon
    n_valid = plan.n_valid
    if int(n_valid.sum()) * problem.n_targets < MIN_WEIGHT_VALUES:
        return 1.0
    ends = plan.offsets[:-1] + plan.cut
    y_tail, history = tails(problem.y, ends, plan.offsets[:-1], plan.lead, plan.window)
    x_tail = None
    if problem.x is not None:
        x_tail = np.stack([problem.x[e - plan.window : e] for e in ends])
    n_w = len(WEIGHTS)
    total, count = np.zeros(n_w), 0
    for idx in validation_groups(n_valid):
        # the group's series, once for each weight (weight-major): one forecast of them all
        steps = int(n_valid[idx].max())
        truth = np.full((len(idx), steps, problem.n_targets), np.nan)
        x_future = None if problem.x is None else np.zeros((len(idx), steps, problem.x.shape[1]))
        for i, j in enumerate(idx):
            e, n = ends[j], n_valid[j]
            truth[i, :n] = problem.y[e : e + n]
            if x_future is not None:
                x_future[i, :n] = problem.x[e : e + n]
                x_future[i, n:] = problem.x[e + n - 1]

        def each_weight(a, idx=idx):
            return None if a is None else np.concatenate([a[idx]] * n_w)

        pred = forecast(
            net,
            each_weight(y_tail),
            each_weight(x_tail),
            None if x_future is None else np.concatenate([x_future] * n_w),
            steps,
            H,
            settings["device"],
            settings["dtype"],
            plan.lead,
            each_weight(problem.seasonal),
            np.repeat(WEIGHTS, len(idx)),
            constant=each_weight(constant),
            period=problem.period,
            revert=each_weight(problem.revert),
            history=each_weight(history),
        ).reshape(n_w, len(idx), steps, problem.n_targets)
        known = ~np.isnan(truth)
        # a forecast that is NaN or inf where there is a true value makes its weight's error
        # infinite (nanmean skipped it: a network whose forecasts overflowed was kept)
        total += np.where(known, np.abs(pred - truth), 0.0).reshape(n_w, -1).sum(axis=1)
        count += int(known.sum())
    errors = np.where(np.isfinite(total), total / max(count, 1), np.inf)
    return float(WEIGHTS[int(np.argmin(errors))]) if np.isfinite(errors.min()) else 1.0


def validation_groups(n_valid: np.ndarray) -> list[np.ndarray]:
    """The series with validation rows, grouped by how many: each group is forecast as far
    as its longest series needs. Series share a group where the power of two at or above
    their counts is the same (5 to 8 rows, 9 to 16, ...), so no series of a group is
    forecast twice as far as it needs or more, in at most a few dozen groups.
    One batch forecast as far as the longest series: a panel of 1,000 series of 60 rows beside
    one of 20,000 forecast all 1,001 for 2,000 steps, five times (41 s of a 43 s fit).

    >>> [g.tolist() for g in validation_groups(np.array([6, 2000, 0, 7, 1500]))]
    [[0, 3], [1, 4]]
    """
    n_valid = np.asarray(n_valid, dtype=np.int64)
    has = np.flatnonzero(n_valid > 0)
    # the power of two at or above each count
    bucket = np.ceil(np.log2(n_valid[has])).astype(np.int64)
    return [has[bucket == b] for b in np.unique(bucket)]


def tails(y, ends, firsts, lead: int, window: int):
    """The last ``lead + window`` rows of each series before ``ends`` (S,), its first row at
    ``firsts`` (S,): (S, lead + W, C), with zeros where the series has fewer rows, and the rows
    of each tail's ``lead`` that are its series' (S,), as :func:`forecast` takes them (None
    where every tail has all of them)."""
    ends, firsts = np.asarray(ends, dtype=np.int64), np.asarray(firsts, dtype=np.int64)
    LW = lead + window
    out = np.zeros((len(ends), LW, y.shape[1]))
    for j, (first, end) in enumerate(zip(firsts, ends, strict=True)):
        n = min(LW, int(end - first))
        out[j, LW - n :] = y[end - n : end]
    history = np.minimum(ends - firsts - window, lead)
    return out, (None if (history >= lead).all() else history)


def window_runner(net: ForecastNet):
    """A function mapping inputs (W, S, I) to the network's outputs at the last position (S, O).

    What does not change between the calls of a forecast is looked up once: the parameters,
    the kernel of each layer, the zero initial state. Each call is then one kernel call per
    layer (without saving activations for a backward) and the head on the last position only:
    a forecast step reads a whole window but needs one output. The Numba kernels form the
    input projection inside their time loop (``forward_projected``), as in training; the
    others get it as one product before the call. (A separate product of the few input
    columns was a third of a forecast step at 10,000 series: 15 of 40 ms.)
    """
    rnn = net.rnn
    cell = {"RNN_TANH": "rnn", "RNN_RELU": "rnn", "GRU": "gru", "LSTM": "lstm"}[rnn.mode]
    if rnn.bidirectional or getattr(rnn, "proj_size", 0) > 0 or not rnn.bias:
        return lambda inputs: net(inputs)[0][-1]
    w = net.head.weight
    kernel = get_kernel(cell, resolve_backend(rnn.backend, w.device, w.dtype), checked=False)
    options = {"nonlinearity": rnn.nonlinearity} if cell == "rnn" else {}
    layers = [
        tuple(
            getattr(rnn, f"{name}_l{k}")
            for name in ("weight_ih", "bias_ih", "weight_hh", "bias_hh")
        )
        for k in range(rnn.num_layers)
    ]
    zeros = {}
    projected = getattr(kernel, "forward_projected", None)

    def run(inputs):
        B = inputs.shape[1]
        if B not in zeros:
            zeros[B] = inputs.new_zeros((B, rnn.hidden_size))
        h0 = zeros[B]
        x = inputs
        for w_ih, b_ih, w_hh, b_hh in layers:
            c0 = h0 if cell == "lstm" else None
            if projected is not None:
                x, _, _, _ = projected(x, w_ih, b_ih, w_hh, b_hh, h0, c0, save=False, **options)
                continue
            gx = torch.nn.functional.linear(x, w_ih, b_ih)  # (W, S, G*H)
            x, _, _, _ = kernel.forward(gx, w_hh, b_hh, h0, c0, save=False, **options)
        return torch.nn.functional.linear(x[-1], net.head.weight, net.head.bias)

    return run


@torch.inference_mode()
def forecast(
    net,
    y_tail,
    x_tail,
    x_future,
    n_steps,
    horizon,
    device,
    dtype,
    lead=0,
    seasonal=None,
    weight=1.0,
    constant=None,
    period=None,
    revert=None,
    history=None,
) -> np.ndarray:
    """Roll the network forward ``n_steps`` steps for every series at once.

    Parameters
    ----------
    y_tail : ndarray (S, lead + W, C)
        The last ``lead + W`` scaled target rows of each series.
    x_tail : ndarray (S, W, K) or None
        The scaled covariates of those rows.
    x_future : ndarray (S, n, K) or None
        Scaled covariates of the future steps. With ``strategy='direct'`` the last network
        call may reach past them (up to a multiple of ``horizon``): those rows repeat the
        last one.
    n_steps : int
    horizon : int
        Steps emitted per network call (1: recursive).
    lead : int
        Rows of history before the window (the seasons the base of a seasonal model
        averages, ``s * period``; else 0).
    seasonal : ndarray (S, C) of bool or None
        Series and columns forecast as offsets from the seasonal base.
    weight : float or ndarray (S,)
        Each forecast is ``base + weight * network output`` (see :func:`choose_weight`): one
        weight for all series, or one per series (the weights' trials, side by side).
    constant : ndarray (S, C) of bool or None
        Series and columns that were constant in training, forecast by their base alone: the
        network read nothing but zeros from them, and its small output bias, fed back step
        after step, would drift away from the constant.
    period : int or None
        The season's length m of a seasonal model (``lead`` is a whole number of seasons);
        None: ``lead`` is one season.
    revert : ndarray (S, C, 2) or None
        Each series' and column's phi and mu, its base ``mu + phi**k * (y[t] - mu)`` where
        ``seasonal`` does not give it the seasonal one (:func:`revert_base`); None: the last
        value.
    history : ndarray (S,) of int or None
        The rows of each tail's ``lead`` that are its series' (the rows before them must be
        zeros; see :func:`seasonal_base`); None: all of them. It grows by each step forecast.

    Returns
    -------
    ndarray (S, n_steps, C)
        Scaled forecasts. Each call re-reads the last ``W`` rows, the forecasts so far
        included, from a zero state: the context the network was trained on.

    Examples
    --------
    >>> import numpy as np, torch
    >>> net = ForecastNet("gru", 1, 4, 1, n_out=1, backend="torch")
    >>> forecast(net, np.zeros((2, 6, 1)), None, None, 3, 1, "cpu", torch.float32).shape
    (2, 3, 1)
    """
    net.eval()
    S, LW, C = y_tail.shape
    L, H = lead, horizon
    W = LW - L
    n_chunks = -(-n_steps // H)
    total = n_chunks * H
    Y = torch.zeros((S, LW + total, C), device=device, dtype=dtype)
    Y[:, :LW] = torch.as_tensor(y_tail, device=device, dtype=dtype)
    if seasonal is not None:
        seasonal = True if seasonal.all() else torch.as_tensor(seasonal, device=device)
    if revert is not None:
        revert = torch.as_tensor(revert, device=device, dtype=dtype)
    X = None
    if x_tail is not None:
        fut = np.asarray(x_future)
        if fut.shape[1] < total:
            pad = np.repeat(fut[:, -1:], total - fut.shape[1], axis=1)
            fut = np.concatenate([fut, pad], axis=1)
        X = torch.as_tensor(
            np.concatenate([x_tail, fut[:, :total]], axis=1), device=device, dtype=dtype
        )
    if history is not None:
        history = torch.as_tensor(np.asarray(history, dtype=np.int64), device=device)
    keep = None
    if constant is not None and constant.any():
        keep = torch.as_tensor(~constant, device=device, dtype=dtype).repeat(1, H)  # (S, H*C)
    # a weight per series (choose_weight's trials) or one for all; 1: the outputs as they are
    if np.ndim(weight):
        weight = torch.as_tensor(np.asarray(weight), device=device, dtype=dtype).reshape(S, 1)
    elif weight == 1.0:
        weight = None
    run = window_runner(net)
    cpu = torch.device(device).type == "cpu"
    # A handful of series is one block of the kernels' batch split: threads would only wait.
    # Every step runs the same shapes: the kernels' buffers are reused from step to step.
    with _numba_threads(1 if S < 8 and cpu else None), (
        workspace.reuse_buffers() if cpu else contextlib.nullcontext()
    ):
        for c in range(n_chunks):
            k = c * H
            x_next = None if X is None else _steps_ahead(X[:, k : k + W + H], H)
            # rows k + LW .. k + LW + H - 1 of the block are the ones being forecast: unread
            known = None if history is None else torch.clamp(history + k, max=L)
            inputs, base = make_inputs(
                Y[:, k : k + LW + H], x_next, H, L, seasonal, period, revert, known
            )
            step = run(inputs) if weight is None else weight * run(inputs)
            if keep is not None:
                step = step * keep
            Y[:, LW + k : LW + k + H] = (step + base[:, -1]).reshape(S, H, C)
    return Y[:, LW : LW + n_steps].double().cpu().numpy()


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C: a ``KeyboardInterrupt``, or the ``SystemError`` ("returned
    a result with an exception set") that a Numba function raises when the interrupt arrives
    while it hands back its result (Python runs the signal handler inside that call), with the
    ``KeyboardInterrupt`` as its context."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        if not isinstance(exc, SystemError):
            return False
        seen.add(id(exc))
        exc = exc.__context__ or exc.__cause__
    return False


@contextlib.contextmanager
def interrupts_held():
    """Hold Ctrl-C (SIGINT) back until the block ends, then raise it.

    For the modules a process's first fit imports (Numba and the kernels, ``torch._dynamo``
    with sympy: seconds): an interrupt inside an import leaves the package half-initialised
    in ``sys.modules``, and every later fit in the process failed (``module 'numba' has no
    attribute 'core'``). Only the main thread receives signals; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        # a handler set outside Python reads as None: Python's own takes its place
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
    if caught:
        # delivered again, to the handler that was in place: a KeyboardInterrupt under
        # Python's default one, nothing where SIGINT is ignored (SIG_IGN), a program's own
        # handler called
        signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def _numba_threads(n):
    if n is None:
        yield
        return
    from tsrnn.kernels.common.numba_config import num_threads

    with num_threads(n):
        yield


_TORCH_THREADS_LOCK = threading.Lock()
_torch_threads_users = 0
_torch_threads_saved = 1


@contextlib.contextmanager
def serial_torch():
    """Run torch's CPU ops on one intra-op thread inside the block, restoring the setting after.

    The recurrences run on Numba's thread pool; the torch ops between them (input projection,
    head, loss, optimizer) act on small tensors. Two OpenMP runtimes (Numba's and torch's
    bundled one) whose idle threads spin-wait on the same cores starve each other: on 2 cores a
    fit ran 2.5x slower with torch's pool active. Reference-counted under a lock so that
    concurrent fits in threads restore the process setting exactly once, at the end.
    """
    global _torch_threads_users, _torch_threads_saved
    from tsrnn.kernels.common import _threads

    with _TORCH_THREADS_LOCK:
        if _torch_threads_users == 0:
            _torch_threads_saved = torch.get_num_threads()
            _threads.torch_threads_outside_fits[0] = _torch_threads_saved
        if torch.get_num_threads() != 1:  # also where a nested threadpoolctl limit raised it
            torch.set_num_threads(1)
        _torch_threads_users += 1
    try:
        yield
    finally:
        with _TORCH_THREADS_LOCK:
            _torch_threads_users -= 1
            # also where it was 1: starting Numba's OpenMP pool in the block can raise it
            if _torch_threads_users == 0 and torch.get_num_threads() != _torch_threads_saved:
                torch.set_num_threads(_torch_threads_saved)
            if _torch_threads_users == 0:
                _threads.torch_threads_outside_fits[0] = None


@functools.cache
def _threadpools():
    """threadpoolctl's view of the loaded BLAS/OpenMP libraries, built once: building it scans
    every loaded library (milliseconds), which a ``predict`` cannot afford each time. torch's
    and the BLAS libraries are loaded with torch, before the first fit."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _pool_caps(n: int) -> dict:
    """threadpoolctl limits that bound each BLAS/OpenMP pool to ``n`` threads, and to Numba's
    pool size, without raising any above its current size (a caller's
    ``threadpool_limits(1)`` stays 1): ``{prefix: limit}``."""
    import numba

    n = max(1, min(n, numba.config.NUMBA_NUM_THREADS))
    caps = {}
    for lib in _threadpools().info():
        current = lib.get("num_threads") or n
        caps[lib["prefix"]] = min(caps.get(lib["prefix"], n), current)
    return caps


@contextlib.contextmanager
def own_torch_modes(device, train: bool):
    """torch's modes as the estimator needs them, whatever the caller's: autocast off (the
    estimator's ``dtype`` alone sets its precision) and, for training, gradients on and
    inference mode off (a fit inside ``torch.no_grad()`` trains as anywhere else)."""
    with contextlib.ExitStack() as stack:
        kinds = {"cpu", torch.device(device).type}
        for kind in sorted(kinds & {"cpu", "cuda"}):
            stack.enter_context(torch.autocast(kind, enabled=False))
        if train:
            stack.enter_context(torch.inference_mode(False))
            stack.enter_context(torch.enable_grad())
        yield


@contextlib.contextmanager
def thread_limits(n_threads, device=None):
    """Bound this thread's Numba kernels and BLAS/OpenMP pools to ``n_threads``; ``None``
    bounds the Numba kernels to torch's thread count (``torch.get_num_threads()``; see
    :func:`~tsrnn.kernels.common.numba_config.default_threads`) and leaves the pools alone.

    Numba's setting is thread-local (``numba.set_num_threads``); BLAS and OpenMP pools are
    bounded with ``threadpoolctl``, whose OpenMP limit is the calling thread's. On a CPU
    ``device``, torch's own ops run on one thread inside the block (:func:`serial_torch`):
    the kernels get the cores. Nothing is changed for other threads or after the block.
    """
    serial = device is not None and torch.device(device).type == "cpu"
    with contextlib.ExitStack() as stack:
        from tsrnn.kernels.common.numba_config import num_threads

        if n_threads is not None:
            stack.enter_context(_threadpools().limit(limits=_pool_caps(int(n_threads))))
            stack.enter_context(num_threads(int(n_threads)))
        else:
            # torch's count (or OMP_NUM_THREADS, where Numba came before tsrnn), read before
            # serial_torch sets torch's to one
            from tsrnn.kernels.common.numba_config import default_threads

            stack.enter_context(num_threads(default_threads()))
        if serial:
            stack.enter_context(serial_torch())
        yield
