"""``RNNForecaster``: a scikit-learn estimator forecasting time series with a recurrent network.

A thin shell: validation, index handling and windows live in :mod:`tsrnn._data`, the network
and the training loop in :mod:`tsrnn._training`; this module ties them to scikit-learn's
contract (parameters stored by ``__init__``, validated at ``fit``; learned state in attributes
ending in ``_``; pickling to plain CPU arrays).
"""

from __future__ import annotations

import datetime
import numbers
import sys
import time
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.preprocessing import MinMaxScaler, RobustScaler, StandardScaler
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import (
    _get_feature_names,
    check_array,
    check_is_fitted,
    validate_data,
)

from tsrnn import _training
from tsrnn._data import (
    SeriesData,
    TimeAxis,
    WindowPlan,
    _check_frame_numeric,
    _dates_as_text,
    auto_window,
    check_covariate_frame,
    check_magnitude,
    check_same_index,
    check_target,
    future_index,
    future_labels,
    is_positionless,
    label,
    mase_scale,
    most_seasons,
    n_valid_rows,
    paired_by_position,
    panel_blocks,
    panel_seasons,
    quiet,
    refuse_complex,
    refuse_inexact_values,
    refuse_masked,
    refuse_pandas_collections,
    revert_base,
    row_numbers,
    seasonal_mask,
    seasonal_period,
    seasonal_years,
    stamp_like,
    steps_ahead,
    unit_scale,
    window_seasons,
)
from tsrnn.kernels.common.registry import BackendUnavailableError, get_kernel, resolve_backend

__all__ = ["RNNForecaster"]

# a seasonal model needs windows at least this long (else the last value is the base)
_MIN_SEASONAL_WINDOW = 4
_SCALERS = {"standard": StandardScaler, "robust": RobustScaler, "minmax": MinMaxScaler}
# score's refusals, shared with the forecast scorers (RNNForecaster._refuse_unscorable)
_SCORE_NEEDS_Y = (
    "This model was fitted with covariates: score(X, y) needs the future covariates X and the "
    "true values y."
)
# the most values one predict(h) makes: memory for them and their windows, and hours of steps
_MAX_FORECAST_VALUES = 10**8
_IN_SAMPLE_SCORE = (
    "The true values given to score are the data the model was fitted on, row for row: "
    "forecasts of the steps after them would be scored against them. In-sample scores are not "
    "offered (a forecaster is scored on the rows after its training data); with "
    "validation_curve, learning_curve or a halving search the training scores are NaN for "
    "this reason."
)


def _version() -> str:
    import tsrnn

    return tsrnn.__version__


def _affine(scaler, values: np.ndarray):
    """``(loc, scale)`` with ``scaler.transform(v) == (v - loc) / scale`` for a fitted scaler."""
    if isinstance(scaler, StandardScaler):
        return scaler.mean_, scaler.scale_
    if isinstance(scaler, RobustScaler):
        return scaler.center_, scaler.scale_
    # MinMaxScaler: v * scale_ + min_
    return -scaler.min_ / scaler.scale_, 1.0 / scaler.scale_


def _constant(values: np.ndarray) -> np.ndarray:
    """Per column of one series' rows: constant, or varying only at the round-off level of
    its magnitude (a spread within ``n`` float64 epsilons of its largest value, the bound
    scikit-learn's scalers put on their own round-off). Such a column cannot be scaled:
    scikit-learn takes its spread for none and scales it by 1, the network reads zeros, and
    its output, fed back step by step, drifted away (0.3 with one 0.1 + 0.2 among its rows
    forecast 0.42, 0.55, 0.69, ...)."""
    top = np.abs(values).max(axis=0)
    return np.ptp(values, axis=0) <= len(values) * np.finfo(np.float64).eps * top


UNSCALED_LEVELS = 1000  # the fewest steps of ``dtype`` a series' spread must hold, scaler=None


def _check_unscaled_spread(data: SeriesData, dtype: str) -> None:
    """With ``scaler=None`` the network trains on the target as it is, in ``dtype``: on
    windows centred on their own mean, for offsets from a base. Two spreads are refused:

    - values that span more than the square root of that type's largest number: the squared
      errors of those differences overflow (the fit ran, warned that training diverged, and
      forecast NaN). The level itself does not matter: 1e155 + 1e150 sin(t) trains in
      float64;
    - in float32, values whose span holds fewer than :data:`UNSCALED_LEVELS` steps of
      float32 at the series' largest magnitude: the values are rounded to those steps before
      training, and so are the forecasts (1e9 + 10 + sin(t), steps of 64, came back as 1e9
      flat, 10 off on every step, without a word). In float64 the values are trained as
      they were given; a column constant but for round-off (:func:`_constant`) is forecast
      by its base alone either way."""
    limit = float(np.sqrt(np.finfo(dtype).max))
    spread, coarse = 0.0, None
    for k in range(data.n_series):
        values = data.series(k)
        if not len(values):
            continue
        span = np.ptp(values, axis=0)
        spread = max(spread, float(span.max()))
        if np.dtype(dtype) == np.float64:
            continue
        step = np.spacing(np.abs(values).max(axis=0).astype(dtype)).astype(np.float64)
        varies = ~_constant(values)  # constant ones are forecast by their base alone
        ratio = np.where(varies, step * UNSCALED_LEVELS / np.where(varies, span, 1), 0)
        j = int(np.argmax(ratio))
        if ratio[j] > 1 and (coarse is None or ratio[j] > coarse[0]):
            coarse = (float(ratio[j]), float(np.abs(values[:, j]).max()), float(step[j]),
                      float(span[j]))
    fix = (
        "Keep the default scaler='standard' (forecasts still come back in the original units)"
        + (", or set dtype='float64'." if dtype == "float32" else ".")
    )
    if spread > limit:
        raise ValueError(
            f"scaler=None trains on the target as it is, and a series' values span "
            f"{spread:.3g} (its largest minus its smallest): the squared differences the "
            f"network trains on overflow {dtype} (beyond {limit:.2g}). " + fix
        )
    if coarse is not None:
        _, top, step, span = coarse
        raise ValueError(
            f"scaler=None trains on the target as it is, in {dtype}, and a series' values "
            f"reach {top:.6g} where {dtype} holds steps of {step:.3g}: their spread of "
            f"{span:.3g} is fewer than {UNSCALED_LEVELS} such steps, and the values (and the "
            "forecasts) would be rounded to them. " + fix
        )


def _fit_scaler(name, data: SeriesData):
    """Per-series affine scaling of the target: ``loc``, ``scale`` each (S, C).

    Each column is first divided by the power of two nearest its largest magnitude, then
    fitted by scikit-learn's scaler, and the factor is folded back into ``loc`` and ``scale``.
    Dividing by a power of two is exact, so for ordinary data the result is bit for bit the
    scaler's own; but scikit-learn takes a spread below 10 machine epsilons (2e-15) for none
    and scales by 1, so a series of magnitude 1e-16 was modelled in raw units (forecasts off
    by 1e12), and a variance that underflows (1e-200) did the same.

    The series of a panel that have the same length are scaled by one fit, side by side (a
    column per series and target column): scikit-learn's scalers work column by column, so
    each column gets what a fit on its own series gives, and 10,000 series take one fit
    instead of 10,000 (2.5 s). The columns are laid out in the memory order of a single
    series' rows (one column: each contiguous), in which NumPy sums each column as it sums
    that series alone.
    """
    S, C = data.n_series, data.n_columns
    loc, scale = np.zeros((S, C)), np.ones((S, C))
    if name is None:
        return loc, scale
    lengths = np.diff(data.offsets)
    for n in np.unique(lengths):
        members = np.flatnonzero(lengths == n)
        block = np.stack([data.series(k) for k in members], axis=1).reshape(n, -1)
        if C == 1:
            block = np.asfortranarray(block)
        factor = unit_scale(block)
        shift, size = _affine(_SCALERS[name]().fit(block / factor), block)
        loc[members] = (shift * factor).reshape(-1, C)
        scale[members] = (size * factor).reshape(-1, C)
    return loc, scale


def _rows_at_truths_steps(X, y):
    """Covariate rows given as an array (a Pipeline's transformers return arrays) scored
    against a pandas ``y``: the rows are ``y``'s steps, so they get ``y``'s index. As an
    array they would be taken as continuing the training data, and a fold after a gap
    (``TimeSeriesSplit(gap=k)``) scored against forecasts of the steps before it."""
    if not isinstance(y, pd.Series | pd.DataFrame) or is_positionless(y.index):
        return X
    if isinstance(X, pd.Series | pd.DataFrame):
        if paired_by_position(X.index, y.index) and len(X) == len(y):
            return X.set_axis(y.index)  # built without an index: rows are y's steps
        return X
    if isinstance(X, str | bytes):
        return X
    arr = np.asarray(X)
    if arr.ndim != 2 or len(arr) != len(y):
        return X  # predict's checks name the problem
    return pd.DataFrame(arr, index=y.index)


def _digest(values: np.ndarray) -> str:
    """A digest of float64 rows, to recognise the same data later without keeping it."""
    import hashlib

    rows = np.ascontiguousarray(values, dtype=np.float64)
    return hashlib.sha256(rows.tobytes() + repr(rows.shape).encode()).hexdigest()


def _check_backend_device(backend, asked, device: torch.device) -> None:
    """A backend that cannot run on the fit's device, said in the estimator's terms (its
    ``device`` parameter; the layers' message speaks of moving tensors and modules)."""
    from tsrnn.kernels.common.registry import triton_interpreted

    if backend == "numba" and device.type != "cpu":
        raise BackendUnavailableError(
            f"backend='numba' runs on the CPU, but device={asked!r} chose {device.type}: pass "
            "device='cpu' (or backend='auto', which runs Triton on a GPU)."
        )
    if backend == "triton" and device.type != "cuda" and not triton_interpreted():
        why = "" if torch.cuda.is_available() else " (CUDA is not available on this machine)"
        raise BackendUnavailableError(
            f"backend='triton' runs on CUDA GPUs, but device={asked!r} chose the CPU{why}: "
            "pass device='cuda' where there is a GPU, or use backend='auto' or 'numba' on the "
            "CPU (TRITON_INTERPRET=1 set before the first import of triton runs Triton's slow "
            "CPU interpreter)."
        )


def _resolve_device(device) -> torch.device:
    if isinstance(device, torch.device):
        dev = device
    elif device == "auto":
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            dev = torch.device(device)
        except (RuntimeError, ValueError) as exc:
            raise ValueError(
                f"device={device!r} is not a torch device ({exc}). Use 'auto', 'cpu' or 'cuda'."
            ) from None
    if dev.type not in ("cpu", "cuda"):
        # torch knows 'meta', 'mps', 'xpu', ...: the forecaster reads its results back on the
        # CPU and its kernels run on CPUs and CUDA GPUs only
        raise ValueError(
            f"device={str(device)!r} is not supported: the forecaster runs on 'cpu' or 'cuda' "
            "('auto' picks). Use one of those."
        )
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={str(device)!r} but CUDA is not available on this machine "
            "(torch.cuda.is_available() is False). Use device='cpu', or 'auto' to take a GPU "
            "only where there is one."
        )
    return dev


def _is_int(h) -> bool:
    """An integer (a NumPy one, or a 0-d integer array such as ``np.array(3)``), not a bool."""
    if isinstance(h, np.ndarray) and h.ndim == 0 and np.issubdtype(h.dtype, np.integer):
        return True
    return isinstance(h, numbers.Integral) and not isinstance(h, bool | np.bool_)


def _warn_short_series(
    data, usable, period: int, H: int, window: int, lead: int, seasonal_data: bool
) -> bool:
    """Warn when a few short series (fewer than half) shrink a panel's ``window='auto'`` by a
    quarter or more (or cost it the seasonal base) for every series: one new product with
    four rows must not silently cut the window of a hundred established ones.
    ``seasonal_data``: some series pass the seasonality test (the base is possible at all).
    Returns whether it warned."""
    typical = int(np.median(usable))
    base_lost = False
    if lead:  # the base kept: the seasonal windows compare
        w_typical = auto_window(period, typical - period, H)
        need = period + 2 * w_typical + H - 1
    else:
        w_typical = auto_window(period, typical, H)
        need = 2 * w_typical + H - 1  # rows auto_window wants for the typical window
        if seasonal_data:
            w = auto_window(period, typical - period, H)
            if w >= _MIN_SEASONAL_WINDOW and typical >= period + w + H:
                base_lost, w_typical, need = True, w, period + 2 * w + H - 1
    if not base_lost and 4 * window > 3 * w_typical:  # shrunk by under a quarter: no matter
        return False
    short = data.ids[usable < need]
    if len(short) == 0 or 2 * len(short) >= len(usable):  # none, or the panel's are short
        return False
    lost = " and the seasonal base" if base_lost else ""
    names = [label(i) for i in short[:5]] + (["..."] if len(short) > 5 else [])
    warnings.warn(
        f"window='auto' is {window} for every series{lost and ' (without the seasonal base)'}: "
        f"series {names} have as few as {int(usable.min())} rows for training, where the "
        f"typical series would get a window of {w_typical}{lost}. Fit the short series in a "
        "model of their own (or drop them), or set window= yourself (series too short for it "
        "are then refused, by name).",
        UserWarning,
        stacklevel=5,
    )
    return True


def _panel_names(layout) -> list:
    """The names of a fitted panel's index levels, for a fix that rebuilds one."""
    time = layout["axis"].name
    return [layout["id_name"] or "id", time if time is not None else "time"]


def _refuse_stamps_as_values(X) -> None:
    """A target-only model reads only the length and index of ``predict``'s rows: future
    stamps given as their values (a list of dates, ``index.values``, a ``ds`` column) were
    taken as so many rows, and the forecasts were of the steps right after the data, whatever
    the dates said. Raise ``TypeError`` naming the index that says it."""
    if isinstance(X, pd.Series | pd.DataFrame) and not is_positionless(X.index):
        return  # its index says which steps (the dates may be its values too)
    if isinstance(X, pd.DataFrame):
        dates = [c for c, t in X.dtypes.items() if stamp_like(t)]
        if dates:
            raise TypeError(
                f"X has date column(s) {', '.join(repr(c) for c in dates[:2])}, but this model "
                "has no covariates and reads only X's length and index: the stamps must be the "
                f"index. Use X.set_index({dates[0]!r}), or pass the stamps themselves: "
                f"predict(pd.DatetimeIndex(X[{dates[0]!r}]))."
            )
        return
    if sp.issparse(X) or (isinstance(X, np.ndarray) and X.dtype.kind not in "MOUS"):
        return  # numbers: rows
    if isinstance(X, pd.Series):
        values, stamps = X.to_numpy(), stamp_like(X.dtype)
    else:
        try:
            values = np.asarray(X)
        except Exception:  # not rows: _rows_and_index says so
            return
        stamps = values.dtype.kind == "M"
    if values.ndim != 1 or not len(values):
        return
    first = values[0]
    kind = None
    if stamps or isinstance(first, datetime.date | np.datetime64 | pd.Period):
        kind = "time stamps"
    elif isinstance(first, str | bytes):
        kind = "text"
    if kind is not None:
        build = "pd.PeriodIndex(X)" if isinstance(first, pd.Period) else "pd.DatetimeIndex(X)"
        if kind == "text":
            build += " if they are dates"
        raise TypeError(
            f"X holds {kind} as values ('{first}', ...), but this model has no covariates and "
            "reads only X's length and index: the forecasts would be of the steps right after "
            f"the data, whatever they say. Pass the future stamps as an index, {build}, or "
            "an int h."
        )


def _warn_base_lost(data, train, period: int, window: int, H: int, mask) -> None:
    """With ``window`` set, warn when a few short series (fewer than half) leave every series
    of a panel without the seasonal base that the others' seasons call for (each window needs
    ``period`` rows of history before it): ``_warn_short_series`` says so for
    ``window='auto'``."""
    need = period + window + H
    short = train < need
    if window < _MIN_SEASONAL_WINDOW or not short.any() or 2 * short.sum() >= len(train):
        return
    if not mask[~short].any():  # the longer series are not seasonal: nothing lost
        return
    n_short = int(short.sum())
    names = [label(i) for i in data.ids[short][:5]] + (["..."] if n_short > 5 else [])
    which = f"series {names}" if n_short <= 5 else f"{n_short} series ({names})"
    fits = int(train.min()) - period - H  # the largest window the short series allow
    smaller = f", or set window={fits} or less" if fits >= _MIN_SEASONAL_WINDOW else ""
    warnings.warn(
        f"No series gets the seasonal base (window={window}): {which} have as few as "
        f"{int(train.min())} rows for training, where a window with a season of history "
        f"before it needs {need}. Fit the short series in a model of their own (or drop "
        f"them){smaller}.",
        UserWarning,
        stacklevel=5,
    )


def _indexed_like(arr: np.ndarray, covs: pd.DataFrame):
    """A target array (1-D or 2-D) as a Series/DataFrame on its covariates' index (the
    model's time steps and a panel's series come from ``X`` when ``y`` is an array)."""
    if arr.ndim == 1:
        return pd.Series(arr, index=covs.index)
    return pd.DataFrame(arr, index=covs.index)


def _check_covariates_index(covs: pd.DataFrame, yname: str, xname: str, **check) -> None:
    """The index that dates a target array (its covariates'), checked as the target's would be;
    a fault is named as the covariates' index, with a fix that keeps the rows paired."""
    try:
        check_target(pd.Series(np.zeros(len(covs)), index=covs.index), yname, **check)
    except (ValueError, TypeError) as err:
        raise type(err)(
            f"{yname} is an array, so its time steps come from {xname}'s index, and that index "
            f"has a problem. Give {yname} the same index first ({yname} = pd.Series({yname}, "
            f"index={xname}.index), or pd.DataFrame for several columns) and fix {xname} and "
            f"{yname} alike, so their rows stay paired. {err}"
        ) from None


def _series_order(ids):
    """A panel's series sorted by id (training then does not depend on the order of their
    blocks); None for one series, or ids that do not sort (mixed types): the data's order."""
    if ids is None or len(ids) < 2:
        return None
    try:
        return np.asarray(ids.argsort(), dtype=np.int64)
    except TypeError:
        return None


def _covariate_gap(steps, index, whose: str) -> ValueError:
    """Future covariates that skip steps after the data's end: where, and the fix."""
    n = len(steps)
    if steps[0] == 1:  # a step missing further on
        at = int(np.flatnonzero(steps != np.arange(1, n + 1))[0])
        gap = int(steps[at] - steps[at - 1] - 1)
        row = f"row {at - 1}" if index is None else f"{index[at - 1]}"
        where = f"it skips {gap} step{'s' if gap != 1 else ''} after {row}"
    else:
        where = f"it starts {int(steps[0])} steps after it"
    return ValueError(
        f"With covariates, X must hold every step right after the end of {whose} ({where}): "
        "the covariates of the skipped steps are unknown. Pass their rows too, or update() "
        "the model with the observed gap first."
    )


RUN_OFF = _training.RUN_OFF


def _user_stacklevel() -> int:
    """``warnings.warn``'s stacklevel, from the function that calls this one, of the first frame
    outside tsrnn: the user's line (or scikit-learn's, in a search), through predict or
    score alike."""
    import os
    import sys

    root = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2


def _warn_not_finite(values: list, steps: list) -> None:
    """Say where forecasts (one (len(steps), C) array per series, of the steps ahead
    ``steps``) stop being finite: they came back NaN or infinite without a word (a network
    whose training ran off, with its own warning at fit only, or a 'relu' recursion that
    grows step after step). Called from :meth:`RNNForecaster._predict`."""
    first = [
        int(k[np.argmax(~np.isfinite(v).all(axis=1))])
        for v, k in zip(values, steps, strict=True)
        if v.size and not np.isfinite(v).all()
    ]
    if not first:
        return
    from tsrnn.exceptions import ConvergenceWarning

    where = f" in {len(first)} of {len(values)} series" if len(values) > 1 else ""
    warnings.warn(
        f"The forecasts are NaN or infinite from step {min(first)} on{where}: the "
        "network's outputs, fed back step after step, overflowed. Refit with a lower "
        "learning_rate or gradient clipping (clip_norm), or with nonlinearity='tanh' (a "
        "'relu' recursion can grow without bound); check the fit's warnings.",
        ConvergenceWarning,
        stacklevel=4,  # the user's call of predict or score
    )


def _ran_off(history, best_epoch, initial_loss, initial_valid=None) -> str | None:
    """Which loss of the kept epoch is :data:`RUN_OFF` times its value at the initial weights
    or more: ``'training'`` (against :func:`tsrnn._training.initial_loss`), ``'validation'``,
    or None. The loss at the initial weights is what a fit that learns improves on (the
    network's outputs start near zero, so it is about the base forecast's loss), so ten times
    it is a divergence that has not overflowed: SGD at too high a learning rate went from 2.4
    to 6.5e21, Adam at 1e6 from about 1 to 2e11 within its first epoch, with forecasts to
    match. (Epoch 1's mean can already hold the run-off.) An epoch of one optimizer step
    shows it in its validation loss only: its training loss is the batch's before the step."""
    record = history[best_epoch - 1]
    if initial_valid is not None and initial_loss is not None and np.isfinite(initial_loss):
        # and above ten times the training loss too: validation rows the base forecasts
        # almost exactly (a flat or all-zero tail) give a near-zero initial loss
        initial_valid = max(initial_valid, initial_loss)
    for kind, kept, initial in (
        ("training", record["train_loss"], initial_loss),
        ("validation", record["valid_loss"], initial_valid),
    ):
        if (
            kept is not None
            and initial is not None
            and np.isfinite(initial)
            and kept >= RUN_OFF * initial
            and kept > 0
        ):
            return kind
    return None


class _Number(Interval):
    """scikit-learn's ``Interval`` without booleans: ``True`` is an ``int`` to Python, and
    ``hidden_size=True`` fitted a network of one unit (``learning_rate=True``: 1.0) without a
    word. The error names the interval and the value, as scikit-learn's does."""

    def is_satisfied_by(self, val):
        return not isinstance(val, bool | np.bool_) and super().is_satisfied_by(val)


class RNNForecaster(RegressorMixin, BaseEstimator):
    """Forecast time series with a recurrent network (RNN, GRU or LSTM), scikit-learn style.

    ``fit(y)`` learns from a series (``pd.Series`` / 1-D array), several jointly modelled
    series (``pd.DataFrame`` / 2-D array) or a panel of many series (a two-level
    ``MultiIndex`` (series id, time): one global model); ``fit(X, y)`` adds covariates ``X``
    known in advance. ``predict(h)`` forecasts ``h`` steps past the end of the data;
    ``predict(X)`` forecasts up to the rows of ``X`` (future covariates, or, target-only, just
    future time stamps). Forecasts come back in the input's type and units, indexed by future
    time stamps.

    The network reads windows of ``window`` consecutive steps, each scaled per series
    (``scaler``) and centred on the window's own level, and learns to predict the next step
    (``strategy='recursive'``) or the next ``horizon`` steps (``strategy='direct'``) at every
    position of the window. Training holds out the most recent ``validation_fraction`` of each
    series for early stopping and keeps the best weights.

    The network predicts corrections to a naive forecast: the last value, or, for series that
    are seasonal (the frequency's period ``m``, e.g. 12 for monthly data, confirmed by the M4
    seasonality test on the series' differences; in a panel mostly seasonal, also a series the
    test missed where the seasonal base forecasts it better than its last value), a seasonal
    base, which it also reads as an input: the seasonal naive forecast ``y[t-m]``, or its
    average over up to 8 past seasons, each taken relative to its season's mean and put on the
    last season's mean (as many seasons as forecast the training rows best: one where the season
    changes from year to year, more where noise hides a steady one). A series without a season
    that wanders around a level (changes, growth rates: where this base forecasts its training
    rows better than its last value, in a backtest) gets the base that reverts to that level,
    ``mu + phi**k * (y[t] - mu)`` k steps ahead, mu its training rows' mean and phi the
    reversion rate that forecasts them best over ``window_`` steps. During training its
    target-derived inputs get noise (2 times the sd of the series' one-step changes), so that
    recursive forecasts, which feed it its own outputs, stay stable. After training, the weight
    of its outputs on the base (0, 0.25, ..., 1) is chosen by the error of recursive forecasts
    of the validation rows, so a network that forecasts worse than its base is shrunk towards it
    (with at least 50 validation values; else the weight is 1). A series (column) that was
    constant throughout training is forecast by its base alone. See ``docs/api-notes.md``.

    Parameters
    ----------
    cell : {'gru', 'lstm', 'rnn'}, default='gru'
        Recurrent cell.
    nonlinearity : {'tanh', 'relu'}, default='tanh'
        Activation of ``cell='rnn'``; only used there (``fit`` warns that ``'relu'`` has
        no effect with another cell).
    hidden_size : int, default=32
        Features of the hidden state.
    num_layers : int, default=1
        Stacked recurrent layers.
    dropout : float, default=0.0
        Dropout between stacked layers, as in :class:`torch.nn.GRU`: no effect with one
        layer, where ``fit`` warns (``UserWarning``), as torch.nn does.
    window : int or 'auto', default='auto'
        Length of the training subsequences, and the context read when forecasting.
        ``'auto'``: two seasonal periods of the data's frequency (12 for monthly data, 4
        quarterly, 7 daily, 24 hourly; at least 12, at most 64), shortened so that the
        shortest series still yields at least as many training windows as the window is
        long (at most half its rows left for training), and never below 2. Each window is
        centred on its own mean, so a window of one value would read as 0: an int window is
        at least 2.
    horizon : int, default=1
        Steps the network emits at once with ``strategy='direct'``; only used there.
    strategy : {'recursive', 'direct'}, default='recursive'
        ``'recursive'``: one step at a time, each forecast fed back as the next input.
        ``'direct'``: ``horizon`` steps at once, chained for longer forecasts.
    bptt : int or None, default=None
        Truncated backpropagation through time: windows run in chunks of ``bptt`` steps, the
        state carried forward but detached between chunks. ``None`` (or ``>= window``): full
        backpropagation through the window.
    clip_norm : float or None, default=1.0
        Clip the global gradient norm (:func:`torch.nn.utils.clip_grad_norm_`).
    clip_value : float or None, default=None
        Clip each gradient entry (:func:`torch.nn.utils.clip_grad_value_`).
    init : {'uniform', 'orthogonal', 'xavier'}, default='uniform'
        Initialisation of the recurrent weights: torch's U(-1/sqrt(H), 1/sqrt(H)),
        orthogonal per gate, or Xavier-uniform (input weights too).
    optimizer : {'adam', 'adamw', 'sgd', 'rmsprop'}, default='adam'
        The :mod:`torch.optim` optimizer (``'sgd'`` with momentum 0.9).
    learning_rate : float, default=0.003
        The optimizer's step size (``lr``).
    weight_decay : float, default=0.0
        The optimizer's weight decay (L2 penalty; decoupled for ``'adamw'``).
    batch_size : int, default=32
        Windows per optimisation step.
    max_epochs : int, default=200
        An epoch visits every training window once, in a seeded random order. With
        ``early_stopping``, reaching it after the warm-up but before patience runs out
        warns (``ConvergenceWarning``, as scikit-learn's ``max_iter`` does).
    early_stopping : bool, default=True
        Hold out the most recent ``validation_fraction`` of each series (at least ``horizon``
        steps), stop when its loss has not improved for ``patience`` epochs, and keep the
        best weights. The best epoch is looked for after a warm-up of 300 optimizer steps
        (or at the last epoch, if training is shorter): a barely trained network forecasts
        close to the naive forecast, which a small validation set can prefer by chance.
        ``False``: train on everything for ``max_epochs`` epochs.
    validation_fraction : float, default=0.1
        With ``early_stopping``: the share of each series' most recent rows held out for
        validation (rounded up, at least ``horizon`` rows); no training target falls in it.
    patience : int, default=30
        With ``early_stopping``: epochs without an improvement of the validation loss (by a
        relative 1e-4) before training stops.
    scaler : {'standard', 'robust', 'minmax'} or None, default='standard'
        Per-series scaling of the target (scikit-learn's scalers, fitted on each series);
        forecasts come back in the original units. Covariates are always standardised.
        ``None`` trains on the target as it is: a series whose values span more than the
        square root of ``dtype``'s largest number (1.8e19 in float32) is refused, the squared
        errors of its differences overflow.
    backend : {'auto', 'numba', 'triton', 'torch'}, default='auto'
        Kernel of the recurrent layer (see :mod:`tsrnn.nn`).
    device : str or torch.device, default='auto'
        ``'auto'``: CUDA when available, else the CPU. Other torch devices (``'mps'``,
        ``'meta'``, ...) are refused.
    dtype : {'float32', 'float64'}, default='float32'
        Precision of the network.
    n_threads : int or None, default=None
        CPU threads for this estimator's work: bounds the Numba kernels (thread-locally) and
        the BLAS/OpenMP pools (through ``threadpoolctl``) during ``fit``, ``predict`` and
        ``update``. ``None``: the kernels take torch's thread count (``torch.get_num_threads()``,
        as torch.nn's layers would; at most Numba's), and the pools are left alone. Either way,
        on a CPU torch's
        own ops run on one thread during ``fit`` and ``predict`` (restored after): the
        recurrent kernels use the cores, and two thread pools spinning on the same cores
        would slow each other down. In a process forked after the kernels ran (a
        ``multiprocessing`` pool's worker on Linux) they run on one thread whatever this says.
    random_state : int, RandomState instance or None, default=None
        Seeds the weights, the training inputs' noise, dropout and the order of windows.
        Same value, same data, same machine: identical forecasts, also when fits run in
        several threads at once (each fit draws from its own torch generators; weight
        initialisation borrows them as the global ones under a lock, once before training,
        so threaded fits wait on each other only there). With an int or a ``RandomState``,
        torch's and NumPy's global RNG states are left untouched; ``None`` draws the seeds
        from NumPy's global RNG (scikit-learn's convention), which advances it. A panel's
        windows are shuffled in the order of its sorted series ids, so the same panel with
        its series in another order trains the same network (ids that do not sort, of mixed
        types, keep the data's order).
    verbose : int, default=0
        ``1``: a progress bar over epochs with the losses, and a one-line summary.

    Attributes
    ----------
    module_ : torch.nn.Module
        The trained network (a :mod:`tsrnn.nn` recurrent layer and a linear head).
    history_ : list of dict
        One dict per epoch: ``epoch``, ``train_loss``, ``valid_loss`` (None without early
        stopping), ``seconds``.
    n_epochs_ : int
        Epochs run.
    best_epoch_ : int
        The epoch whose weights were kept (0: the initial weights, where the first epoch
        already diverged).
    window_ : int
        The window used (resolves ``'auto'``).
    seasonal_period_ : int
        Seasonal period inferred from the frequency (1 without one).
    freq_ : str, pandas offset or None
        The time index's frequency (``None`` for arrays and integer indexes): its string
        (``'MS'``), or the pandas offset itself where the string would lose part of it (a
        ``CustomBusinessDay`` with holidays or a week mask, ``pd.DateOffset(months=1)``).
    n_features_in_ : int
        Covariate columns (target columns for ``fit(y)``).
    feature_names_in_ : ndarray of str
        Covariate names, when ``X`` was a DataFrame with string column names.
    n_series_ : int
        Series in the data (1 unless a panel).
    mase_scale_ : ndarray of shape (n_series_, n_targets)
        Mean absolute one-step change of each training series and target column: the
        denominator of the MASE that :meth:`score` reports.
    device_ : torch.device
    backend_ : str
        The kernel backend that ran (resolves ``'auto'``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrnn import RNNForecaster
    >>> idx = pd.date_range("2000-01", periods=72, freq="MS")
    >>> y = pd.Series(10 + np.sin(np.arange(72) * np.pi / 6), index=idx)
    >>> model = RNNForecaster(hidden_size=8, max_epochs=5, random_state=0).fit(y)
    >>> forecast = model.predict(3)
    >>> forecast.index.strftime("%Y-%m").tolist()
    ['2006-01', '2006-02', '2006-03']
    >>> model.window_, model.freq_
    (24, 'MS')
    """

    _parameter_constraints: ClassVar[dict] = {
        "cell": [StrOptions({"rnn", "gru", "lstm"})],
        "nonlinearity": [StrOptions({"tanh", "relu"})],
        "hidden_size": [_Number(Integral, 1, None, closed="left")],
        "num_layers": [_Number(Integral, 1, None, closed="left")],
        "dropout": [_Number(Real, 0, 1, closed="left")],
        # at least 2: a window of one value, centred on its own mean, always reads as 0
        "window": [StrOptions({"auto"}), _Number(Integral, 2, None, closed="left")],
        "horizon": [_Number(Integral, 1, None, closed="left")],
        "strategy": [StrOptions({"recursive", "direct"})],
        "bptt": [_Number(Integral, 1, None, closed="left"), None],
        "clip_norm": [_Number(Real, 0, None, closed="neither"), None],
        "clip_value": [_Number(Real, 0, None, closed="neither"), None],
        "init": [StrOptions({"uniform", "orthogonal", "xavier"})],
        "optimizer": [StrOptions({"adam", "adamw", "sgd", "rmsprop"})],
        "learning_rate": [_Number(Real, 0, None, closed="neither")],
        "weight_decay": [_Number(Real, 0, None, closed="left")],
        "batch_size": [_Number(Integral, 1, None, closed="left")],
        "max_epochs": [_Number(Integral, 1, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [_Number(Real, 0, 1, closed="neither")],
        "patience": [_Number(Integral, 1, None, closed="left")],
        "scaler": [StrOptions({"standard", "robust", "minmax"}), None],
        "backend": [StrOptions({"auto", "numba", "triton", "torch"})],
        "device": [str, torch.device],
        "dtype": [StrOptions({"float32", "float64"})],
        "n_threads": [_Number(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        cell="gru",
        nonlinearity="tanh",
        hidden_size=32,
        num_layers=1,
        dropout=0.0,
        window="auto",
        horizon=1,
        strategy="recursive",
        bptt=None,
        clip_norm=1.0,
        clip_value=None,
        init="uniform",
        optimizer="adam",
        learning_rate=0.003,
        weight_decay=0.0,
        batch_size=32,
        max_epochs=200,
        early_stopping=True,
        validation_fraction=0.1,
        patience=30,
        scaler="standard",
        backend="auto",
        device="auto",
        dtype="float32",
        n_threads=None,
        random_state=None,
        verbose=0,
    ):
        self.cell = cell
        self.nonlinearity = nonlinearity
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.dropout = dropout
        self.window = window
        self.horizon = horizon
        self.strategy = strategy
        self.bptt = bptt
        self.clip_norm = clip_norm
        self.clip_value = clip_value
        self.init = init
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.scaler = scaler
        self.backend = backend
        self.device = device
        self.dtype = dtype
        self.n_threads = n_threads
        self.random_state = random_state
        self.verbose = verbose

    # ----------------------------------------------------------------------------------------
    # fit
    # ----------------------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X=None, y=None):
        """Train the network on a series (``fit(y)``) or on covariates and a target (``fit(X, y)``).

        Parameters
        ----------
        X : pd.Series, pd.DataFrame or array-like
            Target only (``y`` omitted): the series, rows consecutive time steps; a
            ``pd.DataFrame`` / 2-D array holds several variables modelled jointly, and a
            two-level ``MultiIndex`` (series id, time) a panel of many series. With ``y``:
            covariates known in advance, 2-D, one row per row of ``y``.
        y : pd.Series, pd.DataFrame, array-like or None, default=None
            The target when ``X`` holds covariates.

        Returns
        -------
        self : RNNForecaster
            Fitted; a failed fit leaves a previous fit untouched. A ``KeyboardInterrupt``
            (Ctrl-C) after at least one epoch ends training early, keeping the best weights
            so far (without early stopping, the last complete epoch's) with an
            ``InterruptedFitWarning``; before the first epoch ends it propagates, a failed
            fit.

        Examples
        --------
        >>> import numpy as np
        >>> from tsrnn import RNNForecaster
        >>> y = np.sin(np.arange(60) / 3)
        >>> model = RNNForecaster(hidden_size=4, max_epochs=2, random_state=0).fit(y)
        >>> model.predict(4).shape
        (4,)
        """
        refuse_masked(X, "y" if y is None else "X")
        refuse_masked(y, "y")
        prep = self._prepare(X, y)
        if self.dropout > 0 and self.num_layers == 1:
            # torch.nn.GRU warns of this; the network is built with dropout 0 at one layer,
            # so its warning never showed (a search over dropout found ties and no reason)
            warnings.warn(
                f"dropout={self.dropout!r} acts between stacked recurrent layers, so with "
                "num_layers=1 it has no effect (torch.nn's layers warn likewise). Set "
                "num_layers to 2 or more, or leave dropout at 0.",
                UserWarning,
                stacklevel=3,  # the user's call: fit runs inside scikit-learn's _fit_context
            )
        if self.nonlinearity != "tanh" and self.cell != "rnn":
            # torch.nn.GRU and LSTM take no nonlinearity: the choice was dropped without a word
            warnings.warn(
                f"nonlinearity={self.nonlinearity!r} is the activation of cell='rnn'; "
                f"cell={self.cell!r} has its own gates and ignores it. Set cell='rnn' to use "
                "it, or leave nonlinearity='tanh' (the default).",
                UserWarning,
                stacklevel=3,  # the user's call: fit runs inside scikit-learn's _fit_context
            )
        fitted = self._train(prep)
        summary = fitted.pop("_summary")
        for name, value in {**prep["attrs"], **fitted}.items():
            setattr(self, name, value)
        # feature names exist only for covariates given as a DataFrame with string columns
        if prep["attrs"].get("feature_names_in_") is None:
            self.__dict__.pop("feature_names_in_", None)
        if summary is not None:
            # printed once the fit is stored: a closed or broken stdout loses the line only
            try:
                print(summary)
            except (OSError, ValueError) as exc:
                warnings.warn(
                    f"verbose: the fit summary could not be printed ({exc}); the fit is kept.",
                    UserWarning,
                    stacklevel=3,  # as above
                )
        return self

    def _prepare(self, X, y):
        """Validate everything and build the scaled training problem; sets nothing on self."""
        covariates = y is not None
        if X is None and y is None:
            raise TypeError(
                "fit got neither a series nor covariates: pass the series to train on, "
                "fit(y), or covariates and a target, fit(X, y)."
            )
        if covariates and X is None:  # also fit(y=series): X defaults to None
            raise TypeError(
                "fit got X=None and a target y: without covariates the target is the one "
                "argument, fit(y) (fit(X, y) is for covariates X beside the target y)."
            )
        target, covs = (y, X) if covariates else (X, None)
        data = self._target_with_index(target, covs)
        x_values, x_names = None, None
        if covariates:
            x_values, x_names = self._check_fit_covariates(covs, data)

        H = int(self.horizon) if self.strategy == "direct" else 1
        lengths = data.lengths
        n_valid = (
            n_valid_rows(lengths, self.validation_fraction, H)
            if self.early_stopping
            else np.zeros_like(lengths)
        )
        period = seasonal_period(data.axis.freq)
        usable = int((lengths - n_valid).min())
        if self.window == "auto":
            window = auto_window(period, usable, H)
        else:
            window = int(self.window)
        self._check_lengths(data, window, H, n_valid, bool(covariates))
        lead, seasonal, seasonal_data = 0, None, False
        if period > 1 and H <= period:
            # Seasonal series learn corrections to the seasonal base; each window then needs
            # the seasons of history the base averages before it (see _training).
            mask = seasonal_mask(data, period)
            seasonal_data = bool(mask.any())
            w = auto_window(period, usable - period, H) if self.window == "auto" else window
            if mask.any() and w >= _MIN_SEASONAL_WINDOW and usable >= period + w + H:
                most = most_seasons(lengths, period)
                years = seasonal_years(data, period, mask, lengths, most)
                lead, seasonal, window = years * period, mask, w
        if self.window == "auto" and data.n_series > 1:
            train = lengths - n_valid
            _warn_short_series(data, train, period, H, window, lead, seasonal_data)
        elif seasonal_data and seasonal is None and data.n_series > 1:
            _warn_base_lost(data, lengths - n_valid, period, window, H, mask)

        if self.scaler is None:
            _check_unscaled_spread(data, self.dtype)
        loc, scale = _fit_scaler(self.scaler, data)
        rows_series = np.repeat(np.arange(data.n_series), lengths)
        y_scaled = (data.values - loc[rows_series]) / scale[rows_series]
        x_loc = x_scale = x_scaled = None
        if x_values is not None:
            # as the target (_fit_scaler): a power of two first, exact, so that magnitudes
            # of 1e200 do not overflow the variance (NaN forecasts) nor 1e-170 underflow it
            # (scale 1: the covariate read as zeros)
            factor = unit_scale(x_values)
            sc = StandardScaler().fit(x_values / factor)
            x_loc, x_scale = sc.mean_ * factor, sc.scale_ * factor
            x_scaled = (x_values - x_loc) / x_scale

        device = _resolve_device(self.device)
        _check_backend_device(self.backend, self.device, device)
        backend = resolve_backend(self.backend, device, self.dtype)
        try:
            with _training.interrupts_held():  # a fit's first imports, whole or not at all
                get_kernel(self.cell, backend)
                import torch._dynamo  # noqa: F401  (torch.optim's optimizers import it)
        except ImportError as exc:
            raise BackendUnavailableError(
                f"backend {backend!r} cannot be loaded for cell={self.cell!r} ({exc}). Use "
                "backend='torch'."
            ) from exc

        ends = data.offsets[1:]
        # windows with fewer seasons before them than the base averages, where the panel's
        # short series need them (the base then averages the seasons there are)
        min_lead = min(lead, window_seasons(lengths - n_valid, period, window, H) * period)
        y_tail, history = _training.tails(y_scaled, ends, data.offsets[:-1], lead, window)
        x_tail = None if x_scaled is None else np.stack([x_scaled[e - window : e] for e in ends])
        plan = WindowPlan(
            data.offsets, window, H, n_valid, lead, _series_order(data.ids), min_lead
        )
        # series and columns without a seasonal base that revert to their mean correct the
        # base that reverts (phi, mu from the training rows), the others the last value
        no_season = None if seasonal is None else ~seasonal
        revert = revert_base(y_scaled, data.offsets, lengths - n_valid, window, no_season)
        if seasonal is not None:
            # in a panel mostly seasonal, the series whose season the test missed take the
            # seasonal base where it forecasts them better than their last value (those that
            # revert to their mean keep that base)
            reverts = None if revert is None else (revert[..., 0] != 1) | (revert[..., 1] != 0)
            seasonal = panel_seasons(data, period, seasonal, lengths, years, reverts)
        problem = _training.Problem(y_scaled, x_scaled, plan, H, seasonal, period, revert)
        attrs = {
            "window_": window,
            "seasonal_period_": period,
            "freq_": data.axis.freq,
            "n_series_": data.n_series,
            "n_features_in_": x_values.shape[1] if covariates else data.n_columns,
            "feature_names_in_": x_names,
            "device_": device,
            "backend_": backend,
            "_layout_": self._layout(
                data,
                covariates,
                covs.columns
                if covariates and isinstance(covs, pd.DataFrame) and x_names is None
                else None,
            ),
            "_ends_": data.ends(),
            # the training data's ends, which update leaves as they are (score's look-ahead
            # warning on panels compares with them)
            "_fit_ends_": data.ends(),
            # integer time: each series' first label (update and score refuse rows numbered
            # 0, 1, ... that may be its own)
            "_starts_": (
                [int(idx[0]) for idx in data.index] if data.axis.kind == "range" else None
            ),
            "_y_tail_": y_tail,
            "_lead_": lead,
            # rows of each tail's lead that are its series' (None: all of them)
            "_history_": history,
            "_seasonal_": seasonal,
            "_revert_": revert,
            "_x_tail_": x_tail,
            "_y_loc_": loc,
            # series and columns constant in training: forecast by their base (last value) alone
            "_constant_": np.stack([_constant(data.series(k)) for k in range(data.n_series)]),
            "_y_scale_": scale,
            "_x_loc_": x_loc,
            "_x_scale_": x_scale,
            # the last row number of covariates numbered by row beside a dated target (a
            # fold's X.iloc[a:b]) or beside an array, whose time index X's is (API.md): where
            # predict's rows so numbered must start (an array target's model took X.iloc[110:]
            # and X.iloc[50:] after a fit on X.iloc[:100] as the next steps, without a word)
            "_x_row_end_": (
                int(covs.index[-1])
                if covariates
                and isinstance(covs, pd.Series | pd.DataFrame)
                and (
                    paired_by_position(covs.index, target.index)
                    if isinstance(target, pd.Series | pd.DataFrame)
                    else row_numbers(covs.index)
                )
                else None
            ),
            "mase_scale_": mase_scale(data),
            # (rows, digest) of a single series' target without covariates: what score
            # recognises as the training data itself (_is_training_tail)
            "_train_digest_": (
                (len(data.values), _digest(data.values))
                if not covariates and data.ids is None
                else None
            ),
        }
        return {"problem": problem, "attrs": attrs}

    @staticmethod
    def _layout(data: SeriesData, covariates: bool, x_columns=None) -> dict:
        return {
            "kind": data.kind,
            "ndim": data.ndim,
            "columns": data.columns,
            "name": data.name,
            "ids": data.ids,
            "id_name": data.id_name,
            "axis": data.axis,
            "covariates": covariates,
            "n_targets": data.n_columns,
            "kind_from_covariates": data.extra.get("kind_from_covariates", False),
            # a covariate frame's labels where scikit-learn keeps no feature names (labels
            # that are not all strings: ints, a MultiIndex), so that later frames are checked
            "x_columns": x_columns,
        }

    def _target_with_index(self, target, covs) -> SeriesData:
        """The target as SeriesData, its time index taken from ``X`` when it is an array."""
        if covs is None:
            return check_target(target, "y")
        if isinstance(target, pd.Series | pd.DataFrame):
            data = check_target(target, "y")
            check_same_index(covs, target)
            return data
        if isinstance(covs, pd.DataFrame) and (
            isinstance(covs.index, pd.MultiIndex | pd.DatetimeIndex | pd.PeriodIndex)
        ):
            arr = np.asarray(target) if not isinstance(target, str | bytes) else target
            if getattr(arr, "ndim", 0) in (1, 2) and len(arr) == len(covs):
                _check_covariates_index(covs, "y", "X")
                data = check_target(_indexed_like(arr, covs), "y")
                data.kind = "array"
                data.extra["kind_from_covariates"] = True
                return data
        if (
            isinstance(covs, pd.DataFrame)
            and not isinstance(target, pd.Series | pd.DataFrame)
            and (covs.index.dtype == object or pd.api.types.is_string_dtype(covs.index.dtype))
            and _dates_as_text(covs.index.to_series())
        ):
            # pd.read_csv(..., index_col='date') without parse_dates: the stamps were left
            # out, and the model fitted as on arrays, with no time index, without a word
            raise TypeError(
                f"X's index holds dates as text (e.g. {label(covs.index[0])!r}): the model "
                "takes its time stamps from X's index beside an array y, as dates. Convert "
                "them first, X.index = pd.to_datetime(X.index), or read the file with "
                "pd.read_csv(..., index_col=..., parse_dates=True); or pass y as a Series "
                "with those dates as its index."
            )
        return check_target(target, "y")

    def _time_zone(self):
        """The zone of the training data's time stamps (None: naive, or not dates)."""
        if self._layout_["axis"].kind != "datetime":
            return None
        return pd.Timestamp(self._ends_[0]).tz

    def _check_fit_covariates(self, covs, data: SeriesData):
        check_covariate_frame(covs, "X")  # a dict or list of Series first: not read as rows
        ndim = 1 if isinstance(covs, pd.Series) else getattr(np.asarray(covs), "ndim", 2)
        if ndim == 1:
            raise ValueError(
                "Expected 2D array, got 1D array instead: covariates X are 2-D, one row per "
                "time step and one column per covariate. Reshape your data, e.g. "
                "X.to_frame() or X.reshape(-1, 1) for a single covariate; to fit on the "
                "target alone call fit(y) with one argument."
            )
        if ndim > 2:
            raise ValueError(
                f"Expected 2D array, got {ndim}D array instead: covariates X are 2-D, one row "
                "per time step and one column per covariate. Reshape your data, e.g. "
                "X.reshape(len(X), -1)."
            )
        names = _get_feature_names(covs)
        x = check_array(
            covs,
            dtype=np.float64,
            ensure_2d=True,
            ensure_all_finite=True,
            estimator=self,
            input_name="X",
            ensure_min_samples=1,
        )
        check_magnitude(x, "X")
        n_rows = len(data.values)
        if len(x) != n_rows:
            shared = ""
            if (
                data.ids is not None
                and isinstance(covs, pd.DataFrame)
                and not isinstance(covs.index, pd.MultiIndex)
            ):
                # one row per time step, shared by every series of the panel
                level = data.index[0].name
                level = 1 if level is None else repr(level)
                dated = isinstance(data.index[0], pd.DatetimeIndex | pd.PeriodIndex)
                stamped = isinstance(covs.index, pd.DatetimeIndex | pd.PeriodIndex)
                first = (
                    "index X by the panel's time stamps (X.index = the dates of its rows), "
                    "then "
                    if dated and not stamped
                    else ""
                )
                shared = (
                    " For covariates shared by every series of the panel, "
                    f"{first}repeat them for each series: "
                    f"X = X.reindex(y.index, level={level})."
                )
            raise ValueError(
                f"X has {len(x)} rows but y has {n_rows}: covariates need exactly one row per "
                "time step of the target. Found input variables with inconsistent numbers of "
                f"samples: [{len(x)}, {n_rows}].{shared}"
            )
        return x, names

    def _check_lengths(self, data: SeriesData, window, H, n_valid, covariates):
        need = window + H + n_valid
        short = np.flatnonzero(data.lengths < need)
        if not len(short):
            return
        # the series furthest from long enough: a fix offered for it works for every one
        k = int(short[np.argmax((need - data.lengths)[short])])
        n = int(data.lengths[k])
        which = "y" if data.ids is None else f"Series {label(data.ids[k])!r} of y"
        valid = (
            f" plus {int(n_valid[k])} for early stopping's validation part"
            if self.early_stopping
            else ""
        )
        wname = "window='auto' gives " if self.window == "auto" else "window="
        v = int(n_valid[k])
        # each fix offered only where it alone would make the series long enough
        smallest = 2  # window=1 is refused
        fixes = ["a longer series"]
        if data.ids is not None and len(short) < data.n_series:  # some series are long enough
            names = [label(data.ids[i]) for i in short[:5]]
            more = f" and {len(short) - 5} more" if len(short) > 5 else ""
            fixes.append(f"a panel without the series too short for it ({names}{more})")
        if window > smallest and n >= smallest + H + v:
            fixes.append("a smaller window (window='auto' adapts to short series)")
        # with a horizon of 1 the validation part shrinks too (it is at least the horizon)
        v1 = int(n_valid_rows(np.array([n]), self.validation_fraction, 1)[0]) if valid else 0
        fixes.append("a smaller horizon" if H > 1 and n >= window + 1 + v1 else None)
        # the validation part grows with the series: past the horizon it is the fraction's
        fixes.append(
            f"a smaller validation_fraction (now {self.validation_fraction})"
            if valid and v > H and n >= window + 2 * H
            else None
        )
        fixes.append("early_stopping=False" if valid and n >= window + H else None)
        fixes = [f for f in fixes if f is not None]
        fix = ", ".join(fixes[:-1]) + (" or " if len(fixes) > 1 else "") + fixes[-1]
        # one row of many columns: most likely one series laid out as a row vector
        row = data.ids is None and n == 1 and data.n_columns > 1
        raise ValueError(
            f"{which} is too short: it has {n} time step{'s' if n != 1 else ''} ({n} "
            f"sample{'s' if n != 1 else ''}), but {wname}{window} and a step of {H} need at "
            f"least {window + H}{valid}{f', i.e. {int(need[k])}' if valid else ''}. Use {fix}."
            + (
                f" It is one row of {data.n_columns} columns: rows are time steps, columns "
                "variables. For one series of that many steps pass a column, y.ravel() "
                "(or y.T for a DataFrame)."
                if row
                else ""
            )
        )

    def _train(self, prep) -> dict:
        problem = prep["problem"]
        attrs = prep["attrs"]
        device, backend = attrs["device_"], attrs["backend_"]
        dtype = getattr(torch, self.dtype)
        H = problem.horizon
        config = {
            "cell": self.cell,
            "input_size": problem.input_size,
            "hidden_size": int(self.hidden_size),
            "num_layers": int(self.num_layers),
            "n_out": H * problem.n_targets,
            "dropout": float(self.dropout),
            "nonlinearity": self.nonlinearity,
            "backend": backend,
        }
        rs = check_random_state(self.random_state)
        torch_seed = int(rs.randint(np.iinfo(np.int32).max))
        rng = np.random.default_rng(rs.randint(np.iinfo(np.int32).max))
        settings = {
            "batch_size": int(self.batch_size),
            "bptt": self.bptt,
            "clip_norm": self.clip_norm,
            "clip_value": self.clip_value,
            "device": device,
            "dtype": dtype,
            "optimizer": self.optimizer,
            "learning_rate": float(self.learning_rate),
            "weight_decay": float(self.weight_decay),
            "max_epochs": int(self.max_epochs),
            "early_stopping": bool(self.early_stopping),
            "patience": int(self.patience),
            "input_noise": _training.input_noise(problem, device, dtype),
            # the fit's own torch streams: its draws do not depend on fits in other threads,
            # and torch's global generators are left as they were
            "random": _training.FitRandom(torch_seed, device),
        }
        bar = self._progress_bar()
        tic = time.perf_counter()
        weighing_interrupted = False
        try:
            with (
                _training.thread_limits(self.n_threads, device),
                _training.own_torch_modes(device, train=True),
            ):
                with settings["random"].as_global():
                    net = _training.build_net(config, self.init, device, dtype)
                result = _training.fit_loop(
                    net, problem, settings, rng, progress=None if bar is None else bar.step
                )
                # the last step's gradients are no part of the fitted model (a deepcopy or a
                # torch.save of module_ carried them)
                net.zero_grad(set_to_none=True)
                try:
                    weight = _training.choose_weight(
                        net, problem, settings, constant=attrs["_constant_"]
                    )
                except (KeyboardInterrupt, SystemError) as exc:
                    if not _training.is_interrupt(exc):
                        raise
                    # after training: keep the trained network, its outputs unshrunk (weight
                    # 1, as without validation rows), and say so below
                    weight, weighing_interrupted = 1.0, True
        finally:
            if bar is not None:
                bar.close()
        history = result.history
        if result.interrupted:
            from tsrnn.exceptions import InterruptedFitWarning

            warnings.warn(
                f"Training was interrupted after {len(history)} epoch(s) "
                "(KeyboardInterrupt); the best model so far was kept "
                f"(epoch {result.best_epoch}).",
                InterruptedFitWarning,
                stacklevel=4,
            )
        if weighing_interrupted:
            from tsrnn.exceptions import InterruptedFitWarning

            warnings.warn(
                "The weight of the network's outputs on its base was being chosen when the fit "
                "was interrupted (KeyboardInterrupt): the trained network was kept with weight "
                "1 (its outputs as they are).",
                InterruptedFitWarning,
                stacklevel=4,
            )
        last = history[-1] if history else {}
        # what a diverged or run-off fit can change (the target is scaled unless scaler=None)
        advice = "Lower learning_rate" + (
            ", keep gradient clipping on (clip_norm), or set scaler='standard'."
            if self.scaler is None
            else " or keep gradient clipping on (clip_norm)."
        )
        if history and not all(
            np.isfinite(last[k]) for k in ("train_loss", "valid_loss") if last[k] is not None
        ):
            from tsrnn.exceptions import ConvergenceWarning

            warnings.warn(
                "The training loss became NaN or infinite: training diverged (the "
                + (
                    f"weights of epoch {result.best_epoch} were kept"
                    + (
                        ", the last before the loss ran off"
                        if not self.early_stopping and result.best_epoch < len(history) - 1
                        else ""
                    )
                    if result.best_epoch
                    else "initial weights were kept"
                    + (
                        ": it diverged in its first epoch"
                        if len(history) == 1
                        else ", as their validation loss was lower than any epoch's"
                        if self.early_stopping
                        else ", as every epoch had run off before the loss overflowed"
                    )
                )
                + "). "
                + advice,
                ConvergenceWarning,
                stacklevel=4,
            )
        elif result.best_epoch and (
            ran := _ran_off(
                history, result.best_epoch, result.initial_loss, result.initial_valid
            )
        ):
            from tsrnn.exceptions import ConvergenceWarning

            record = history[result.best_epoch - 1]
            first, kept = (
                (result.initial_loss, record["train_loss"])
                if ran == "training"
                else (result.initial_valid, record["valid_loss"])
            )
            warnings.warn(
                f"The {ran} loss rose from {first:.3g} (at the initial weights) to "
                f"{kept:.3g} in epoch {result.best_epoch}, whose weights were "
                "kept: training ran off, though its loss did not overflow (its forecasts "
                "may). " + advice,
                ConvergenceWarning,
                stacklevel=4,
            )
        elif (
            self.early_stopping
            and result.warmed_up  # (shorter than the warm-up: the last epoch, by design)
            and not np.all(attrs["_constant_"])  # forecast by their base alone: net unused
            and not result.stopped
            and not result.interrupted
            and len(history) == self.max_epochs
        ):
            from tsrnn.exceptions import ConvergenceWarning

            warnings.warn(
                f"max_epochs={self.max_epochs} reached before early stopping ended training "
                f"(the validation loss had improved within the last patience={self.patience} "
                "epochs). Raise max_epochs, or set early_stopping=False to train a fixed "
                "number of epochs.",
                ConvergenceWarning,
                stacklevel=4,
            )
        summary = None
        if self.verbose:
            valid = history[result.best_epoch - 1]["valid_loss"] if result.best_epoch else None
            valid_txt = "" if valid is None else f", valid loss {valid:.4g}"
            summary = (
                f"RNNForecaster: {len(history)} epochs in {time.perf_counter() - tic:.1f} s, "
                f"best epoch {result.best_epoch}{valid_txt} ({backend} on {device})"
            )
        return {
            "_summary": summary,
            "module_": net,
            "history_": history,
            "n_epochs_": len(history),
            "best_epoch_": result.best_epoch,
            "_net_config_": config,
            "_weight_": weight,
        }

    def _progress_bar(self):
        if not self.verbose:
            return None
        # in a notebook without ipywidgets tqdm.auto warns once, then uses its text bar,
        # which works there: the warning is noise to someone who asked for a progress bar
        with quiet(message="IProgress not found"):
            from tqdm.auto import tqdm

        bar = tqdm(
            total=int(self.max_epochs),
            desc="RNNForecaster",
            unit="epoch",
            leave=False,
            disable=sys.stderr is None,  # pythonw and some embedded interpreters: no stream
        )

        def step(record, best_epoch):
            post = {"train": f"{record['train_loss']:.4g}", "best": best_epoch}
            if record["valid_loss"] is not None:
                post["valid"] = f"{record['valid_loss']:.4g}"
            bar.set_postfix(post, refresh=False)
            bar.update(1)

        bar.step = step
        return bar

    # ----------------------------------------------------------------------------------------
    # predict
    # ----------------------------------------------------------------------------------------

    def predict(self, X):
        """Forecast ``h`` steps past the end of the data, or up to the rows of ``X``.

        Parameters
        ----------
        X : int or pd.Series, pd.DataFrame, array-like
            ``h``, an int >= 1: the number of steps to forecast (target-only models).
            Rows: with covariates, their future values, one row per step; target only, only
            the length and index of ``X`` are used (its values are not), and ``X`` may be the
            index itself (a ``pd.DatetimeIndex``/``PeriodIndex``/``RangeIndex`` of future
            stamps); values that are dates or text (a list of dates, ``index.values``, a
            ``ds`` column) raise ``TypeError``: they would say nothing of the steps. A time
            index that starts later than the step after the end (e.g.
            ``TimeSeriesSplit(gap=k)``) gives the forecasts at those stamps. A panel forecasts
            each series up to its rows. With ``strategy='direct'`` each network call emits
            ``horizon`` steps from the covariates of all of them: rows of ``X`` short of a
            multiple of ``horizon`` leave the last call's covariates unknown, and those steps
            repeat ``X``'s last row (with a ``UserWarning``).

        Returns
        -------
        forecast : pd.Series, pd.DataFrame or ndarray
            Same type as the target given to ``fit`` (float64), indexed by the future time
            stamps (``X``'s index when it has one).

        Examples
        --------
        >>> import pandas as pd
        >>> from tsrnn import RNNForecaster
        >>> y = pd.Series(range(40), index=pd.period_range("2000Q1", periods=40, freq="Q"),
        ...               dtype=float)
        >>> model = RNNForecaster(hidden_size=4, max_epochs=3, random_state=0).fit(y)
        >>> model.predict(2).index.astype(str).tolist()
        ['2010Q1', '2010Q2']
        """
        check_is_fitted(self)
        return self._predict(X)

    def _predict(self, X):
        """:meth:`predict`'s work, called by it and by :meth:`score` at the same depth (so
        that a warning points at the user's call of either)."""
        if self._layout_["covariates"]:
            # (a target-only model reads X's length and index alone: a mask hides nothing)
            refuse_masked(X, "X")
        # the one parameter a fitted model reads (set_params after fit): checked as fit does
        validate_parameter_constraints(
            {"n_threads": self._parameter_constraints["n_threads"]},
            {"n_threads": self.n_threads},
            caller_name=type(self).__name__,
        )
        try:
            with (
                _training.thread_limits(self.n_threads, self.device_),
                _training.own_torch_modes(self.device_, train=False),
            ):
                plan = self._plan_forecast(X)
                values = self._run_forecast(plan)
        except SystemError as exc:
            if _training.is_interrupt(exc):  # Ctrl-C as a Numba kernel returned
                raise KeyboardInterrupt from None
            raise
        _warn_not_finite(values, plan["steps"])
        return self._assemble(values, plan)

    def _plan_forecast(self, X) -> dict:
        """Which steps to forecast for which series, and their future covariates."""
        layout = self._layout_
        axis: TimeAxis = layout["axis"]
        S = len(self._ends_)
        if _is_int(X):
            h = int(X)
            if h < 1:
                raise ValueError(
                    f"h must be an int >= 1 (the number of steps to forecast), got {h}."
                )
            cells = h * S * int(layout["n_targets"])
            if cells > _MAX_FORECAST_VALUES:
                # numpy's MemoryError (7.45 GiB at 1e9), or "zero-size array" at 2**63 - 1
                raise ValueError(
                    f"h={h} asks for {cells:.3g} forecast values ({S} series x "
                    f"{layout['n_targets']} target column(s) x h steps), more than "
                    f"{_MAX_FORECAST_VALUES:.0e}: forecast fewer steps (each step is one "
                    "network call)."
                )
            if layout["covariates"]:
                rows = (
                    f"{h} rows for each series (a (series id, time) MultiIndex)"
                    if layout["ids"] is not None
                    else f"{h} rows"
                )
                raise ValueError(
                    "This model was fitted with covariates (fit(X, y)): forecasting needs "
                    f"their future values. Call predict(X_future) with {rows} of the "
                    f"{self.n_features_in_} covariate column(s) instead of predict({h})."
                )
            steps = [np.arange(1, h + 1)] * S
            return {"series": np.arange(S), "steps": steps, "x": None, "index": None, "h": h}
        if isinstance(X, float | np.floating | bool | np.bool_ | str | bytes) or X is None:
            raise TypeError(
                f"predict expects an int h >= 1 or rows X (a pandas object or array), got "
                f"{X!r} of type {type(X).__name__}."
            )
        refuse_pandas_collections(X, "X")
        if isinstance(X, pd.Index):
            X = self._stamps_as_rows(X)
        elif not layout["covariates"]:
            _refuse_stamps_as_values(X)
        if layout["ids"] is not None:
            return self._plan_panel(X)
        n, index = self._rows_and_index(X, what="X")
        x = self._future_covariates(X, n) if layout["covariates"] else None
        index = self._row_numbered(index)
        reach = _MAX_FORECAST_VALUES // int(layout["n_targets"])
        steps = steps_ahead(self._ends_[0], axis, index, n, "X", max_steps=reach)
        if layout["covariates"] and not np.array_equal(steps, np.arange(1, n + 1)):
            raise _covariate_gap(steps, index, "the data")
        # X's own index labels the forecasts only where it says which steps they are
        keep_index = (
            axis.kind is not None
            and index is not None
            and (isinstance(index, pd.DatetimeIndex | pd.PeriodIndex) or not is_positionless(index))
        )
        return {
            "series": np.array([0]),
            "steps": [steps],
            "x": None if x is None else [x],
            "index": X.index if keep_index else None,
            "h": None,
        }

    def _refuse_unscorable(self, X, y=None):
        """The refusals of :meth:`score` that the forecast scorers of :mod:`tsrnn.metrics`
        share (they score ``predict(X)`` themselves): a model fitted with covariates scored
        without the true values, and the training rows given as the truth."""
        if self._layout_["covariates"] and y is None:
            raise ValueError(_SCORE_NEEDS_Y)
        truth = X if y is None else y
        try:
            t_arr = np.asarray(truth, dtype=np.float64)
        except (TypeError, ValueError):
            return  # not numbers: predict and the metric say so
        rows = t_arr.reshape(len(t_arr), -1) if t_arr.ndim and len(t_arr) else None
        if rows is not None and self._is_training_tail(truth, rows):
            raise ValueError(_IN_SAMPLE_SCORE)

    def _is_training_tail(self, truth, t_arr) -> bool:
        """Whether ``truth``, without time stamps (an array, or numbered from 0), is the very
        data the model was fitted on (the same rows, bit for bit: their digest is kept at fit).
        Such rows are taken as continuing the series, so the forecasts of the steps after the
        training data would be scored against the training rows (scikit-learn's
        ``validation_curve`` and ``learning_curve`` score the training fold, and cannot be
        told not to). After ``update`` the check is off: the digest covers fit's rows only."""
        digest = getattr(self, "_train_digest_", None)
        index = truth.index if isinstance(truth, pd.Series | pd.DataFrame) else None
        if digest is None or not (index is None or is_positionless(index)):
            return False
        return len(t_arr) == digest[0] and _digest(t_arr) == digest[1]

    def _refuse_zero_based(self, index, what: str, k: int = 0) -> None:
        """Rows numbered 0, 1, ... continue a series whose stamps are dates (they cannot be
        dates), or whose integer labels start after them; but where the series' own labels
        start at or before their last number they may be its own rows: ``update(y[:70])``
        after ``fit(y[:60])`` on ``pd.Series(values)`` appended the 60 training rows again,
        and ``score(y[:75])`` scored forecasts of steps 60-134 against rows 0-74, without an
        error. Raise there, naming both readings' fixes."""
        axis = self._layout_["axis"]
        starts = getattr(self, "_starts_", None)  # None: not integer time (or an older model)
        if starts is None or index is None or not is_positionless(index):
            return
        if starts[k] > len(index) - 1:  # labels before the series' data: they continue it
            return
        end, step = int(self._ends_[k]), axis.step
        name = what.split(" ")[0]
        if self._layout_["ids"] is not None:
            fix = (
                f"Number each series' new rows on from the step after its own end (here "
                f"{end + step}) in the time level of {name}'s index."
            )
        else:
            stop = f"{end + step} + {f'{step} * ' if step != 1 else ''}len({name})"
            fix = (
                f"Number new rows on from {end + step} ({name}.index = range({end + step}, "
                f"{stop}{f', {step}' if step != 1 else ''})), or pass their values as an "
                f"array (np.asarray({name})) to continue the series."
            )
        raise ValueError(
            f"{what} is numbered 0, 1, ..., which on the model's integer time axis are labels "
            f"at or before the end of its data ({end}), not new rows. {fix}"
        )

    def _row_numbered(self, index):
        """``index``, or None where it numbers rows continuing covariates that fit (and
        update) took numbered by row beside dated targets: a cross-validation fold's
        ``X.iloc[110:]`` after a fit on ``X.iloc[:110]``. Numbers that do not continue them
        are refused: the covariates of the rows between are unknown."""
        end = getattr(self, "_x_row_end_", None)
        if end is None or index is None or not row_numbers(index) or is_positionless(index):
            return index
        first = int(index[0])
        if first != end + 1:
            raise ValueError(
                f"X's rows are numbered from {first}, but the covariates given so far (to fit "
                f"and update) were numbered up to {end}: X must hold the rows right after "
                f"them, from {end + 1}. The covariates of the rows between are unknown: pass "
                "them too, or update() the model with the rows observed in between first."
            )
        return None

    def _stamps_as_rows(self, index: pd.Index) -> pd.DataFrame:
        """``predict(index)``: the future stamps themselves, as rows without columns (a target-only
        model reads only the rows' length and index; a panel's index is (series id, time))."""
        if self._layout_["covariates"]:
            raise TypeError(
                "predict got an index of future stamps, but this model was fitted with "
                "covariates (fit(X, y)) and needs their future values: pass a DataFrame with "
                f"those stamps as its index and the {self.n_features_in_} covariate column(s)."
            )
        return pd.DataFrame(index=index)

    def _rows_and_index(self, X, what):
        if isinstance(X, pd.Series | pd.DataFrame):
            n, index = len(X), X.index
            if (
                not self._layout_["covariates"]
                and isinstance(X, pd.DataFrame)
                and X.shape[1] not in (0, self._layout_["n_targets"])
            ):
                raise ValueError(
                    f"X has {X.shape[1]} features, but RNNForecaster is expecting "
                    f"{self._layout_['n_targets']} features as input (the target columns "
                    "seen by fit); only X's length and index are used."
                )
        else:
            if sp.issparse(X):  # np.asarray would make it a 0-d object array, "a scalar"
                raise TypeError(
                    f"Sparse data was passed for {what}, but dense data is required. Use "
                    "'.toarray()' to convert to a dense numpy array."
                )
            try:
                arr = np.asarray(X)
            except Exception:
                raise TypeError(
                    f"{what} must be rows (a pandas object or an array), got {type(X).__name__}."
                ) from None
            if arr.ndim == 0:
                kind = (
                    f"a {type(X).__name__}, which is not rows"
                    if arr.dtype == object and not np.isscalar(X) and X is not None
                    else f"the scalar {X!r}"
                )
                raise TypeError(
                    f"{what} must be an int h >= 1 or rows (a list, array or pandas object), "
                    f"got {kind}."
                )
            if self._layout_["covariates"] and arr.ndim != 2:
                raise ValueError(
                    f"Expected 2D array, got {arr.ndim}D array instead. Reshape your data: "
                    "covariates X need one row per future step and one column per covariate, "
                    "e.g. X.reshape(-1, 1) if it has a single feature."
                )
            if arr.ndim > 2:
                raise ValueError(
                    f"Expected a 1D or 2D array, got {arr.ndim}D array {arr.shape} instead: "
                    f"{what} holds one row per future step (its length says how many steps "
                    "to forecast)."
                )
            if (
                not self._layout_["covariates"]
                and arr.ndim == 2
                and arr.shape[1] not in (0, self._layout_["n_targets"])
            ):
                raise ValueError(
                    f"X has {arr.shape[1]} features, but RNNForecaster is expecting "
                    f"{self._layout_['n_targets']} features as input (the target columns "
                    "seen by fit); only X's length is used."
                )
            n, index = len(arr), None
        if n == 0:
            raise ValueError(
                f"{what} is empty (0 samples): pass at least one future row, or an int h."
            )
        return n, index

    def _future_covariates(self, X, n):
        check_covariate_frame(X, "X")
        if isinstance(X, pd.Series):
            raise ValueError(
                "Expected 2D array, got a Series instead: future covariates X are 2-D, one row "
                "per step and one column per covariate, as at fit. Pass X.to_frame() (for a "
                "single covariate, named as at fit)."
            )
        self._check_covariate_labels(X, "X")
        x = validate_data(
            self, X, reset=False, dtype=np.float64, ensure_all_finite=True, ensure_2d=True
        )
        check_magnitude(x, "X")
        return (x - self._x_loc_) / self._x_scale_

    def _plan_panel(self, X) -> dict:
        layout = self._layout_
        if not isinstance(X, pd.Series | pd.DataFrame) or not isinstance(X.index, pd.MultiIndex):
            if not layout["covariates"]:
                hint = ", or use predict(h)."
            elif isinstance(X, np.ndarray):
                hint = (
                    ". In a Pipeline whose transformers give arrays (e.g. StandardScaler), keep "
                    "the index with pipe.set_output(transform='pandas')."
                )
            elif isinstance(X, pd.Series | pd.DataFrame):
                # covariates shared by every series, indexed by time alone (as fit's hint has
                # them before they are repeated)
                names = _panel_names(layout)
                hint = (
                    ". For covariates shared by every series, repeat them for each series: "
                    f"X = pd.concat({{sid: X for sid in y.index.unique(0)}}, names={names})."
                )
            else:
                hint = "."
            raise TypeError(
                "This model was fitted on a panel (a (series id, time) MultiIndex): X must be "
                "a pandas object with the same two-level index, giving the future rows of each "
                f"series{hint}"
            )
        n, _ = self._rows_and_index(X, "X")
        x_all = self._future_covariates(X, n) if layout["covariates"] else None
        ids, offsets = panel_blocks(X.index, "X")
        known = layout["ids"]
        pos = known.get_indexer(ids)
        if (pos < 0).any():
            unknown = ids[pos < 0][:3].tolist()
            raise ValueError(
                f"X has series not seen by fit: {unknown}. The global model forecasts only "
                "series whose history it holds: refit it with their history to add them "
                "(update() takes new rows of the fitted series only)."
            )
        times = X.index.get_level_values(1)
        steps, xs = [], []
        relabel = False  # a series' rows labelled 0, 1, ...: they continue it (as for one series)
        counts = np.diff(offsets)
        continuing = self._continue_their_ends(
            times, counts, [self._ends_[k] for k in pos], layout["axis"]
        )
        for j, k in enumerate(pos):
            if continuing:  # every series' rows are the steps right after its end
                steps.append(np.arange(1, counts[j] + 1))
                if x_all is not None:
                    xs.append(x_all[offsets[j] : offsets[j + 1]])
                continue
            seg = times[offsets[j] : offsets[j + 1]]
            relabel |= layout["axis"].kind is not None and is_positionless(seg)
            st = steps_ahead(
                self._ends_[k],
                layout["axis"],
                seg,
                len(seg),
                f"X (series {label(ids[j])!r})",
                panel=True,
                # every planned series is forecast as far as the furthest one
                max_steps=_MAX_FORECAST_VALUES // (len(pos) * int(layout["n_targets"])),
            )
            if layout["covariates"] and not np.array_equal(st, np.arange(1, len(st) + 1)):
                raise _covariate_gap(st, seg, f"series {label(ids[j])!r}")
            steps.append(st)
            if x_all is not None:
                xs.append(x_all[offsets[j] : offsets[j + 1]])
        return {
            "series": pos,
            "steps": steps,
            "x": xs if x_all is not None else None,
            "index": None if relabel else X.index,  # None: labelled by the steps' stamps
            "h": None,
        }

    def _run_forecast(self, plan) -> list:
        """Forecasts in original units, one (len(steps), C) array per planned series."""
        series = plan["series"]
        n_steps = int(max(int(s.max()) for s in plan["steps"]))
        y_tail = self._y_tail_[series]
        x_tail = None if self._x_tail_ is None else self._x_tail_[series]
        x_future = None
        if plan["x"] is not None:
            K = self._x_tail_.shape[2]
            x_future = np.zeros((len(series), n_steps, K))
            for j, x in enumerate(plan["x"]):
                x_future[j, : len(x)] = x
                x_future[j, len(x) :] = x[-1]
        H = self._net_config_["n_out"] // self._layout_["n_targets"]
        if plan["x"] is not None and H > 1:
            self._warn_covariates_past_x(plan["x"], H)
        scaled = _training.forecast(
            self.module_,
            y_tail,
            x_tail,
            x_future,
            n_steps,
            H,
            self.device_,
            next(self.module_.parameters()).dtype,
            lead=self._lead_,
            seasonal=None if self._seasonal_ is None else self._seasonal_[series],
            weight=self._weight_,
            constant=self._constant_columns(series),
            period=self.seasonal_period_,
            # models pickled before the reverting base was kept have none
            revert=None if getattr(self, "_revert_", None) is None else self._revert_[series],
            # models pickled before partial histories (session 30) have none: full tails
            history=None if getattr(self, "_history_", None) is None else self._history_[series],
        )
        out = []
        for j, k in enumerate(series):
            vals = scaled[j, plan["steps"][j] - 1]
            out.append(vals * self._y_scale_[k] + self._y_loc_[k])
        return out

    def _constant_columns(self, series):
        """:func:`_training.forecast`'s ``constant`` for the planned series (models pickled
        before it was kept have none)."""
        constant = getattr(self, "_constant_", None)
        return None if constant is None else constant[series]

    @staticmethod
    def _warn_covariates_past_x(xs: list, H: int) -> None:
        """``strategy='direct'``: a network call emits ``H`` steps from the covariates of all of
        them, so rows of ``X`` short of a multiple of ``H`` leave the last call's covariates
        unknown; they repeat ``X``'s last row (a forecast for step 4 with horizon 3 then
        depends on whether X reaches step 6). Said, not hidden."""
        short = [len(x) for x in xs if len(x) % H]
        if not short:
            return
        n = short[0]
        full = -(-n // H) * H
        warnings.warn(
            f"strategy='direct' emits horizon={H} steps per network call from the covariates "
            f"of all of them, but X has {n} row(s): the call for steps {full - H + 1}-{full} "
            f"read X's last row in place of the {full - n} step(s) past X. Pass X up to a "
            f"multiple of horizon ({full} rows here) to forecast from the real covariates "
            "(in score or cross-validation: test folds of a multiple of horizon rows, e.g. "
            "TimeSeriesSplit(test_size=...)).",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )

    def _assemble(self, values: list, plan):
        layout = self._layout_
        stacked = np.concatenate(values, axis=0) if values else np.empty((0, 1))
        if layout["kind"] == "array":
            return stacked[:, 0] if layout["ndim"] == 1 else stacked
        axis = layout["axis"]
        if plan["index"] is not None:
            index = plan["index"]
        elif layout["ids"] is None:
            steps = plan["steps"][0]
            future = future_index(self._ends_[0], axis, int(steps.max()))
            contiguous = np.array_equal(steps, np.arange(1, len(steps) + 1))
            index = future if contiguous else future[steps - 1]
        else:
            series = plan["series"]
            times = future_labels([self._ends_[k] for k in series], axis, plan["steps"])
            # pandas' repeat keeps the ids' dtype (categories, int32, ...)
            ids = layout["ids"][series].repeat([len(s) for s in plan["steps"]])
            index = pd.MultiIndex.from_arrays([ids, times], names=[layout["id_name"], axis.name])
        if layout["kind"] == "series":
            return pd.Series(stacked[:, 0], index=index, name=layout["name"])
        return pd.DataFrame(stacked, index=index, columns=layout["columns"])

    @staticmethod
    def _continue_their_ends(stamps, counts, ends, axis) -> bool:
        """Whether the dated rows of every series of a panel (``stamps``, ``counts[j]`` rows
        of series j in turn, whose end is ``ends[j]``) are the steps right after that series'
        end, checked at once (:func:`future_labels`) instead of series by series (for 10,000
        series, 1.8 s). Where not, :meth:`update` and :meth:`predict` check each series, and
        name one that does not continue, or find its steps."""
        if axis.kind not in ("datetime", "period") or type(stamps) is not type(pd.Index(ends[:1])):
            return False
        want = [np.arange(1, n + 1) for n in counts]
        try:
            expected = future_labels(list(ends), axis, want)
            if isinstance(stamps, pd.DatetimeIndex) and (stamps.tz is None) != (
                expected.tz is None
            ):
                return False
            return bool(len(stamps) == len(expected) and (stamps == expected).all())
        except (TypeError, ValueError, OverflowError):
            return False  # the series are checked one by one, and a failing one named

    # ----------------------------------------------------------------------------------------
    # score
    # ----------------------------------------------------------------------------------------

    def score(self, X, y=None, sample_weight=None):
        """Negative MASE of the forecasts of ``X``'s rows (greater is better).

        MASE (m=1): mean absolute error divided by the mean absolute one-step change of the
        training data (stored at fit), per series and target column, then averaged; the
        plain mean absolute error where that change is 0.

        Parameters
        ----------
        X : pd.Series, pd.DataFrame or array-like
            Target only: the true future values (their length and index say what to
            forecast). With covariates: the future covariates.
        y : pd.Series, pd.DataFrame, array-like or None, default=None
            With covariates: the true future values.
        sample_weight : None
            Must be None: MASE weighs every forecast step alike. The parameter is there
            because scikit-learn's ``Pipeline.score`` passes ``sample_weight=None`` to its
            last step's ``score`` when metadata routing is enabled
            (``sklearn.set_config(enable_metadata_routing=True)``).

        Returns
        -------
        score : float

        Examples
        --------
        >>> import numpy as np
        >>> from tsrnn import RNNForecaster
        >>> y = np.sin(np.arange(80) / 3)
        >>> model = RNNForecaster(hidden_size=4, max_epochs=3, random_state=0).fit(y[:70])
        >>> bool(model.score(y[70:]) < 0)
        True
        """
        check_is_fitted(self)
        if sample_weight is not None:
            raise TypeError(
                "score takes no sample_weight: MASE weighs every forecast step alike. Drop "
                "sample_weight (or score with a metric of tsrnn.metrics on a subset of rows)."
            )
        # the truths: X for a target-only model, else y (X's covariates as in predict)
        covariates = self._layout_["covariates"]
        refuse_masked(X, "X", truths=not covariates)
        refuse_masked(y, "y", truths=True)
        refuse_pandas_collections(X, "X")
        if y is not None:
            refuse_pandas_collections(y, "y")
        if self._layout_["covariates"]:
            if y is None:
                raise ValueError(_SCORE_NEEDS_Y)
            check_same_index(X, y)  # the forecasts come in X's row order, the truths in y's
            truth = y
            X = _rows_at_truths_steps(X, y)
        else:
            if y is not None:
                raise ValueError(
                    "This model was fitted on a target only (fit(y)): call score(y_future) "
                    "with the true future values as the one argument."
                )
            truth = X
        # the truth's name in messages: y, or X where it is the one argument (target only)
        tname = "y" if self._layout_["covariates"] else "X"
        self._check_target_columns(truth, tname)
        # the truth is checked before any forecasting work
        true = (
            check_target(
                truth,
                tname,
                freq=self.freq_,
                index_kind=self._layout_["axis"].kind,
                tz=self._time_zone(),
            )
            if isinstance(truth, pd.Series | pd.DataFrame)
            and isinstance(truth.index, pd.MultiIndex)
            else None
        )
        t_arr = true.values if true is not None else _to_2d(truth, tname)
        n_targets = self._layout_["n_targets"]
        if t_arr.shape[1] != n_targets:
            raise ValueError(
                f"{tname} has {t_arr.shape[1]} column(s) but the model forecasts {n_targets} "
                "target column(s): pass one true value per forecast row and target column."
            )
        # rows of covariates (a scalar or None is left to predict's own message)
        x_rows = isinstance(X, pd.Series | pd.DataFrame) or np.ndim(X) >= 1
        if self._layout_["covariates"] and x_rows and len(X) != len(t_arr):
            raise ValueError(
                f"X has {len(X)} rows but y has {len(t_arr)}: score needs one row of future "
                "covariates per true value (row for row)."
            )
        if self._is_training_tail(truth, t_arr):
            raise ValueError(_IN_SAMPLE_SCORE)
        if true is None and isinstance(truth, pd.Series | pd.DataFrame):
            self._refuse_zero_based(truth.index, tname)
        elif true is not None and self._layout_["ids"] is not None:
            known = self._layout_["ids"].get_indexer(true.ids)
            for j, k in enumerate(known):
                if k >= 0:
                    series = f"{tname} (series {label(self._layout_['ids'][k])!r})"
                    self._refuse_zero_based(true.index[j], series, k)
        if true is not None and self._layout_["ids"] is not None:
            self._warn_look_ahead(true, tname)  # (after the refusals: a truth refused is not)
        pred = self._predict(X)
        p_arr = np.asarray(pred, dtype=np.float64).reshape(len(pred), -1)
        if t_arr.shape != p_arr.shape:
            raise ValueError(
                f"y has shape {t_arr.shape} but the forecasts have {p_arr.shape}: pass one "
                "true value per forecast row and target column."
            )
        if self._layout_["ids"] is not None:
            # a panel: each row's series (its MASE scale) from y's index, or, for an array y
            # (taken as is, row for row), from the forecasts', which is X's
            if true is not None:
                rows = truth.index
            elif isinstance(pred, pd.Series | pd.DataFrame):
                rows = pred.index
            else:  # fitted on a target array beside panel covariates: X's index has the ids
                rows = X.index
            ids = self._layout_["ids"].get_indexer(rows.get_level_values(0))
        else:
            ids = np.zeros(len(t_arr), dtype=np.int64)
        err = np.abs(t_arr - p_arr)
        # each series' mean error per column, in one pass over the rows
        series, where, count = np.unique(ids, return_inverse=True, return_counts=True)
        e = np.zeros((len(series), err.shape[1]))
        np.add.at(e, where.ravel(), err)
        e /= count[:, None]
        s = self.mase_scale_[series]
        return -float(np.mean(np.where(s > 0, e / np.where(s > 0, s, 1.0), e).mean(axis=1)))

    def _warn_look_ahead(self, true: SeriesData, tname: str) -> None:
        """A panel's truths that start at or before another series' last training row: the
        global model trained on that series' values of the dates it is scored on.
        scikit-learn's TimeSeriesSplit on a panel's rows does this (one series wholly in
        training, the next scored on earlier dates), without a word before."""
        ends = getattr(self, "_fit_ends_", None)  # (absent from models saved before it)
        if ends is None:
            return
        try:
            latest = max(ends)
            for j in range(true.n_series):
                first = true.index[j][0]
                if first <= latest:
                    break
            else:
                return
        except TypeError:  # stamps that do not compare (an index of other kinds)
            return
        warnings.warn(
            f"{tname} holds true values of series {label(true.ids[j])!r} from {first}, at or "
            f"before the end of other series' training rows (the latest: {latest}): the "
            "global model was trained on those series' values of the dates it is scored on, "
            "so the score may be better than a forecast made on those dates would get. A "
            "panel whose series end at different times gives this by design; to "
            "cross-validate a panel, split it with tsrnn.model_selection.PanelSplit, which "
            "cuts every series at the same time points.",
            UserWarning,
            stacklevel=3,
        )

    def _check_covariate_labels(self, X, what: str) -> None:
        """A covariate frame whose labels are not all strings must have fit's labels, in fit's
        order: scikit-learn checks names only where they are strings, and a frame of the same
        int labels reordered was read by position, its forecast changed without a word."""
        fitted = self._layout_.get("x_columns")  # (absent from models saved before it)
        if fitted is None or not isinstance(X, pd.DataFrame) or X.columns.equals(fitted):
            return
        got, want = list(X.columns), list(fitted)
        if len(got) == len(want) and sorted(map(str, got)) == sorted(map(str, want)):
            fix = f"reorder them, e.g. {what}[{want!r}]"
            if list(map(str, got)) == list(map(str, want)):
                fix = f"give them fit's labels, e.g. {what}.columns = {want!r}"
            raise ValueError(
                f"{what} has the covariate columns {got}, but fit saw {want}: the model reads "
                f"covariates by position, so {fix}."
            )
        raise ValueError(
            f"{what} has the covariate columns {got}, but the model was fitted on {want}: pass "
            "the same columns in the same order (rename them if only their labels changed)."
        )

    def _check_target_columns(self, target, what: str) -> None:
        """A DataFrame of target rows must have the columns ``fit`` saw, in the same order:
        the network reads them by position (an array, which has no names, is taken as is)."""
        fitted = self._layout_["columns"]
        if fitted is None or not isinstance(target, pd.DataFrame):
            return
        if target.columns.equals(fitted):
            return
        got, want = list(target.columns), list(fitted)
        if list(map(str, got)) == list(map(str, want)):
            kinds = ["/".join(sorted({type(c).__name__ for c in cs})) for cs in (got, want)]
            raise ValueError(
                f"{what} has the target columns {got}, labelled as {kinds[0]}, but fit "
                f"saw {want}, labelled as {kinds[1]}: give them fit's labels, e.g. "
                f"{what}.columns = {want!r}."
            )
        if sorted(map(str, got)) == sorted(map(str, want)) and len(got) == len(want):
            raise ValueError(
                f"{what} has the target columns {got} in another order than fit saw ({want}): "
                f"reorder them, e.g. {what}[{want!r}]."
            )
        raise ValueError(
            f"{what} has the target columns {got}, but the model was fitted on {want}: pass "
            "rows of the same columns (rename them if only their names changed)."
        )

    # ----------------------------------------------------------------------------------------
    # update
    # ----------------------------------------------------------------------------------------

    def update(self, X, y=None):
        """Append observations that continue the series; ``predict`` then starts from them.

        The network and the scaling are not refitted.

        Parameters
        ----------
        X : pd.Series, pd.DataFrame or array-like
            Target only: the new target rows. With covariates: their covariates.
        y : pd.Series, pd.DataFrame, array-like or None, default=None
            With covariates: the new target rows.

        Returns
        -------
        self : RNNForecaster

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from tsrnn import RNNForecaster
        >>> index = pd.date_range("2000-01", periods=60, freq="MS")
        >>> y = pd.Series(np.sin(np.arange(60) / 3), index=index)
        >>> model = RNNForecaster(hidden_size=4, max_epochs=2, random_state=0).fit(y[:50])
        >>> model.predict(1).index[0].strftime("%Y-%m")
        '2004-03'
        >>> model.update(y[50:]).predict(1).index[0].strftime("%Y-%m")
        '2005-01'
        """
        check_is_fitted(self)
        refuse_masked(X, "y_new" if y is None else "X_new")
        refuse_masked(y, "y_new")
        layout = self._layout_
        if layout["covariates"]:
            if y is None or X is None:
                raise ValueError(
                    "This model was fitted with covariates: update(X_new, y_new) needs the new "
                    "covariates and the new target rows"
                    + (" (X_new is None)." if X is None and y is not None else ".")
                )
            target, covs = y, X
            check_same_index(covs, target, "X_new", "y_new")
        else:
            if y is not None:
                raise ValueError(
                    "This model was fitted on a target only: call update(y_new) with the new "
                    "rows as the one argument."
                )
            target, covs = X, None
        if (
            layout["kind_from_covariates"]
            and isinstance(covs, pd.DataFrame)
            and not isinstance(target, pd.Series | pd.DataFrame)
        ):
            # the target an array, its steps (and a panel's series) from X_new's index, as fit
            arr = np.asarray(target)
            if arr.ndim in (1, 2) and len(arr) == len(covs):
                _check_covariates_index(
                    covs,
                    "y_new",
                    "X_new",
                    freq=self.freq_,
                    index_kind=layout["axis"].kind,
                    tz=self._time_zone(),
                )
                target = _indexed_like(arr, covs)
        if layout["ids"] is not None and not (
            isinstance(target, pd.Series | pd.DataFrame) and isinstance(target.index, pd.MultiIndex)
        ):
            raise TypeError(
                "This model was fitted on a panel: update needs the new rows as a pandas "
                "object with the same (series id, time) MultiIndex (or, for a model fitted "
                "on a target array beside panel covariates, X_new with that index)."
            )
        self._check_target_columns(target, "y_new")
        # the argument whose index dates the new rows: X_new where y_new is an array
        dated_by = (
            "X_new" if covs is not None and not isinstance(y, pd.Series | pd.DataFrame) else "y_new"
        )
        new = check_target(
            target, "y_new", freq=self.freq_, index_kind=layout["axis"].kind, tz=self._time_zone()
        )
        if layout["ids"] is None and new.ids is not None:
            # a one-series model: the rows of every series but the first were dropped silently
            raise TypeError(
                f"{dated_by} has a (series id, time) MultiIndex, but the model was fitted on "
                "one series: pass that series' new rows indexed by time alone, e.g. "
                f"{dated_by}.xs(series_id, level=0)."
            )
        if new.n_columns != layout["n_targets"]:
            raise ValueError(
                f"y_new has {new.n_columns} target column(s) but the model was fitted on "
                f"{layout['n_targets']} target column(s): pass new rows of the same columns."
            )
        x_new = None
        if covs is not None:
            check_covariate_frame(covs, "X_new")
            self._check_covariate_labels(covs, "X_new")
            x_new = validate_data(
                self,
                covs,
                reset=False,
                dtype=np.float64,
                ensure_all_finite=True,
                ensure_2d=True,
            )
            if len(x_new) != len(new.values):
                raise ValueError(
                    f"X_new has {len(x_new)} rows but y_new has {len(new.values)}: one row of "
                    "covariates per new time step."
                )
            x_new = (x_new - self._x_loc_) / self._x_scale_
        if layout["ids"] is not None:
            pos = layout["ids"].get_indexer(new.ids)
            if (pos < 0).any():
                raise ValueError(
                    f"y_new has series not seen by fit: {new.ids[pos < 0][:3].tolist()}. "
                    "Refit the model to add series."
                )
        else:
            pos = np.array([0])
        row_end = getattr(self, "_x_row_end_", None)
        if row_end is not None:
            covs_index = covs.index if isinstance(covs, pd.Series | pd.DataFrame) else None
            if row_numbers(covs_index) and not is_positionless(covs_index):
                if int(covs_index[0]) != row_end + 1:
                    raise ValueError(
                        f"X_new's rows are numbered from {int(covs_index[0])}, but the "
                        f"covariates given so far (to fit and update) were numbered up to "
                        f"{row_end}: the new rows must continue them, from {row_end + 1} (or "
                        "carry y_new's time stamps)."
                    )
                row_end = int(covs_index[-1])
            else:
                row_end += len(new.values)
        y_tail, x_tail = (
            self._y_tail_.copy(),
            None if self._x_tail_ is None else (self._x_tail_.copy()),
        )
        history = getattr(self, "_history_", None)
        history = None if history is None else history.copy()
        ends = list(self._ends_)
        axis = layout["axis"]
        L = y_tail.shape[1]
        W = self.window_
        continuing = (
            new.ids is not None
            and new.index is not None
            and self._continue_their_ends(
                new.index[0].append(new.index[1:]) if len(new.index) > 1 else new.index[0],
                np.diff(new.offsets),
                [ends[k] for k in pos],
                axis,
            )
        )
        for j, k in enumerate(pos):
            seg = new.series(j)
            n = len(seg)
            index = None if new.index is None else new.index[j]
            if layout["kind"] == "array" and not layout["kind_from_covariates"]:
                index = None
            what = "y_new"
            if layout["ids"] is not None:
                what = f"y_new (series {label(layout['ids'][k])!r})"
            if index is not None and is_positionless(index):
                self._refuse_zero_based(index, what, k)
                index = None  # rows labelled 0, 1, ...: they continue the series, as an array
            if continuing:
                st = None  # checked for every series at once
            else:
                st = steps_ahead(ends[k], axis, index, n, what, panel=layout["ids"] is not None)
            if st is not None and not np.array_equal(st, np.arange(1, n + 1)):
                if st[0] != 1:
                    gap = int(st[0]) - 1
                    between = f"the {gap} rows between are" if gap > 1 else "the row between is"
                    how = f"its first row is {int(st[0])} steps after it: {between} missing"
                else:  # it starts right, then skips steps
                    i = int(np.flatnonzero(st != np.arange(1, n + 1))[0])
                    how = (
                        f"its rows skip steps: {label(index[i - 1])!r} is followed by "
                        f"{label(index[i])!r}"
                    )
                raise ValueError(
                    f"{what} must continue the series right after its end "
                    f"({label(ends[k])!r}), one row per step; {how}. Pass the missing rows too."
                )
            scaled = (seg - self._y_loc_[k]) / self._y_scale_[k]
            y_tail[k] = np.concatenate([y_tail[k], scaled])[-L:]
            if history is not None:
                history[k] = min(history[k] + n, self._lead_)
            if x_tail is not None:
                xs = x_new[new.offsets[j] : new.offsets[j + 1]]
                x_tail[k] = np.concatenate([x_tail[k], xs])[-W:]
            if axis.kind is None or (index is None and axis.kind == "range"):
                ends[k] = ends[k] + n * (axis.step if axis.kind == "range" else 1)
            elif index is None:
                ends[k] = future_index(ends[k], axis, n)[-1]
            else:
                last = index[-1]
                if isinstance(last, pd.Timestamp) and last.tz is not None:
                    last = last.tz_convert(pd.Timestamp(ends[k]).tz)  # the series' own zone
                ends[k] = last
        self._y_tail_, self._x_tail_, self._ends_ = y_tail, x_tail, ends
        if history is not None:
            self._history_ = None if (history >= self._lead_).all() else history
        self._train_digest_ = None  # the data seen is no longer fit's alone
        if row_end is not None:
            self._x_row_end_ = row_end
        return self

    # ----------------------------------------------------------------------------------------
    # scikit-learn and pickling
    # ----------------------------------------------------------------------------------------

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.target_tags.multi_output = True
        tags.regressor_tags.poor_score = True
        return tags

    def __getstate__(self):
        state = super().__getstate__()
        if "module_" in state:
            state = dict(state)
            net = state.pop("module_")
            state["_module_state_"] = {
                k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()
            }
            state["_module_dtype_"] = str(next(net.parameters()).dtype).replace("torch.", "")
            state["device_"] = str(state["device_"])
        state["_tsrnn_version"] = _version()
        return state

    def __setstate__(self, state):
        state = dict(state)
        saved_version = state.pop("_tsrnn_version", None)
        if saved_version is not None and saved_version != _version():
            from tsrnn.exceptions import InconsistentVersionWarning

            warnings.warn(
                f"Trying to unpickle RNNForecaster from tsrnn version {saved_version} when "
                f"using version {_version()}. This might lead to breaking code or invalid "
                "results: refit the model with this version, or install the one it was saved "
                "with.",
                InconsistentVersionWarning,
                stacklevel=2,
            )
        module_state = state.pop("_module_state_", None)
        dtype_name = state.pop("_module_dtype_", None)
        super().__setstate__(state)
        if module_state is not None:
            device = torch.device(self.device_)
            backend = self.backend_
            if device.type == "cuda" and not torch.cuda.is_available():
                # trained on a GPU, loaded where there is none: run on the CPU's kernels
                device = torch.device("cpu")
                backend = "auto" if self.backend in ("auto", "triton") else self.backend
            try:
                backend = resolve_backend(backend, device, dtype_name)
            except BackendUnavailableError:
                backend = resolve_backend("auto", device, dtype_name)
            config = dict(self._net_config_, backend=backend)
            # in the saved dtype before loading: loading float64 weights into the float32
            # parameters of a fresh module would round them (forecasts off by ~1e-7)
            net = _training.ForecastNet(**config).to(dtype=getattr(torch, dtype_name))
            # torch.tensor copies: the arrays may be read-only (joblib.load(mmap_mode='r'))
            net.load_state_dict({k: torch.tensor(v) for k, v in module_state.items()})
            self.module_ = net.to(device=device).eval()
            self.device_ = device
            self.backend_ = backend
            self._net_config_ = config


def _to_2d(values, what) -> np.ndarray:
    """True values for :meth:`RNNForecaster.score` as a float64 (n, k) array; text and
    booleans are refused, as fit and update refuse them (they were scored as numbers)."""
    if values is None:
        raise ValueError(
            f"{what} is None: score needs the true future values, one row per step."
        )
    if isinstance(values, pd.DataFrame):
        _check_frame_numeric(values, what)
        refuse_inexact_values(values, what)
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
    elif isinstance(values, pd.Series):
        dtype = values.dtype
        if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype):
            raise TypeError(
                f"{what} has dtype {dtype}: score needs numeric true values. Convert them "
                "first (pd.to_numeric for numbers written as text)."
            )
        refuse_complex(values, what)
        refuse_inexact_values(values, what)
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        arr = np.asarray(values)
        flat = arr.ravel() if arr.dtype.kind == "O" else ()
        not_numbers = (str, bytes, bool, np.bool_)
        if arr.dtype.kind in "bUScmM" or any(isinstance(v, not_numbers) for v in flat):
            raise TypeError(
                f"{what} holds {'booleans' if arr.dtype.kind == 'b' else 'non-numbers'} (dtype "
                f"{arr.dtype}): score needs numeric true values. Convert them first, e.g. "
                "np.asarray(y, dtype=float) for numbers written as text."
            )
        refuse_inexact_values(arr, what)
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:  # pd.NA, None beside numbers, a dict, ...
            raise TypeError(
                f"{what} holds values that are not numbers (dtype {arr.dtype}): {exc}. score "
                "needs numeric true values: pass the steps that have them."
            ) from None
    if arr.ndim not in (1, 2):
        raise ValueError(
            f"{what} has {arr.ndim} dimension(s) {arr.shape}: score needs the true values as "
            "one row per step, a 1-D array (one target) or a 2-D array (steps x target columns)."
        )
    if len(arr) == 0:
        raise ValueError(
            f"{what} is empty (0 rows): score needs at least one true future value."
        )
    arr = arr.reshape(len(arr), -1)
    if not np.isfinite(arr).all():
        raise ValueError(
            f"{what} contains NaN or inf: score needs finite true values. Drop or fill them."
        )
    return arr
