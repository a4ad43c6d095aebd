"""Forecast accuracy metrics and scorers for model selection.

Every metric takes ``(y_true, y_pred)``: NumPy arrays, ``pd.Series`` or ``pd.DataFrame``. Rows
are time steps, columns are target variables. With several columns the metric is computed per
column and then averaged with equal weights (``multioutput='uniform_average'``, as in
scikit-learn); ``multioutput='raw_values'`` returns one value per column and an array of
weights gives a weighted average (finite weights >= 0 with a positive sum; scikit-learn
would take NaN or negative ones, which give a NaN or a meaningless score).

``y_true`` and ``y_pred`` must have the same number of rows (a 1-D array and a one-column 2-D
array count as the same shape). They are compared row by row, never aligned: when both are
pandas objects their indexes must be equal, and two DataFrames must have the same columns in
the same order, otherwise a ``ValueError`` says what differs. NaN and infinite values are
rejected, not skipped.

Definitions, per target column over ``n`` rows with ``e = y_true - y_pred``:

- ``mae = mean(|e|)``, in the units of the data;
- ``rmse = sqrt(mean(e**2))``, in the units of the data;
- ``mape = mean(|e| / |y_true|)``, a fraction (0.1 is 10 %), as scikit-learn returns it;
- ``smape = 100 * mean(2 |e| / (|y_true| + |y_pred|))``, in percent from 0 to 200 (a step
  where both are 0 counts as 0);
- ``mase = mean(|e|) / scale``, unitless, where ``scale = mean(|y_t - y_{t-m}|)`` over the
  training series (the in-sample error of the naive forecast).

:func:`make_forecast_scorer` turns any of them into a scorer for
``GridSearchCV(scoring=...)`` that works for both ways of fitting
:class:`tsrnn.RNNForecaster`: target only (``fit(y)``) and with covariates (``fit(X, y)``).
"""

from __future__ import annotations

import inspect
import numbers
import warnings

import numpy as np
import pandas as pd
from sklearn.metrics import (
    mean_absolute_error,
    mean_absolute_percentage_error,
    root_mean_squared_error,
)

from tsrnn._data import MAX_MAGNITUDE, refuse_inexact_values, refuse_masked, unit_scale

__all__ = ["mae", "make_forecast_scorer", "mape", "mase", "mase_scale", "rmse", "smape"]

_MULTIOUTPUT_STRINGS = ("raw_values", "uniform_average")


# --------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------


def _to_2d(y, name):
    """Return ``y`` as a float64 array of shape (n_rows, n_columns), after checking it."""
    # every conversion reads the values under a mask (a fill value of 9.97e36 was scored)
    refuse_masked(y, name, truths=name == "y_true")
    # integers beyond 2**53 merge in float64 (2**60 + 1 and 2**60 + 3 scored an error of 0),
    # refused as fit refuses them
    refuse_inexact_values(y, name)
    if isinstance(y, pd.DataFrame):
        if y.columns.has_duplicates:
            twice = list(dict.fromkeys(y.columns[y.columns.duplicated()]))
            raise ValueError(
                f"{name} has duplicated column names {twice!r}; each target column is matched "
                "to its forecast by name: rename them first (e.g. y.columns = [...])."
            )
        bad = [(c, dtype) for c, dtype in y.dtypes.items() if not _is_real_dtype(dtype)]
        if bad:
            raise ValueError(
                f"{name} has non-numeric column(s) {[c for c, _ in bad]!r} (dtypes "
                f"{[str(dtype) for _, dtype in bad]}); metrics need numbers: drop or convert "
                "those columns first."
            )
        values = y.to_numpy(dtype=np.float64)
    elif isinstance(y, pd.Series):
        if not _is_real_dtype(y.dtype):
            raise ValueError(
                f"{name} has dtype {y.dtype}, not a numeric one; metrics need numbers: convert "
                "it first (e.g. pd.to_numeric)."
            )
        values = y.to_numpy(dtype=np.float64)
    else:
        values = np.asarray(y)
        if not _is_real_dtype(values.dtype):
            raise ValueError(
                f"{name} has dtype {values.dtype}, not a numeric one; metrics need real numbers."
            )
        values = values.astype(np.float64, copy=False)
    if values.ndim == 1:
        values = values.reshape(-1, 1)
    elif values.ndim != 2:
        raise ValueError(
            f"{name} must be 1-D (one series) or 2-D (rows are time steps, columns are "
            f"targets); got an array with {values.ndim} dimensions, shape {values.shape}."
        )
    if values.shape[0] == 0 or values.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {values.shape}); there is nothing to score.")
    finite = np.isfinite(values)
    if not finite.all():
        rows = np.flatnonzero(~finite.all(axis=1))
        raise ValueError(
            f"{name} contains NaN or infinite values ({int((~finite).sum())} of {values.size}, "
            f"first in row {rows[0]}); "
            + (
                "the MASE scale is undefined there: drop or fill those training rows first."
                if name == "y_train"
                else "the error is undefined there: drop or fill those rows in both y_true "
                "and y_pred before scoring."
            )
        )
    top = float(np.abs(values).max())
    if top > MAX_MAGNITUDE:
        # finite, but differences and sums of them overflow: mae, smape and mase came back
        # inf or NaN
        raise ValueError(
            f"{name} has values of magnitude up to {top:.3g}, beyond {MAX_MAGNITUDE:g}: "
            "float64 arithmetic on them overflows. Score the data rescaled (every input "
            "divided by one factor, e.g. 1e300): scale-free metrics (mape, smape, mase) are "
            "unchanged by it; multiply mae and rmse back."
        )
    return values


def _is_real_dtype(dtype):
    try:
        kind = np.dtype(dtype).kind
    except TypeError:  # pandas extension dtypes (nullable Int64, Float64, ...)
        return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)
    return kind in "biuf"


def _check_pair(y_true, y_pred):
    """Validate a (truth, forecast) pair and return both as 2-D float arrays."""
    true = _to_2d(y_true, "y_true")
    pred = _to_2d(y_pred, "y_pred")
    if true.shape[0] != pred.shape[0]:
        raise ValueError(
            f"y_true has {true.shape[0]} rows but y_pred has {pred.shape[0]}; a forecast is "
            "scored against the truth for the same time steps: pass equally long inputs."
        )
    if true.shape[1] != pred.shape[1]:
        raise ValueError(
            f"y_true has {true.shape[1]} column(s) but y_pred has {pred.shape[1]}; every target "
            "column needs a forecast column."
        )
    has_index = (pd.Series, pd.DataFrame)
    if isinstance(y_true, has_index) and isinstance(y_pred, has_index):
        if not y_true.index.equals(y_pred.index):
            raise ValueError(
                "y_true and y_pred have different indexes (y_true: "
                f"{_span(y_true.index)}; y_pred: {_span(y_pred.index)}); metrics compare rows "
                "in order and do not align: select the same time steps in both (e.g. "
                "y_pred.loc[y_true.index]), or pass arrays to compare by position."
            )
        if (
            isinstance(y_true, pd.DataFrame)
            and isinstance(y_pred, pd.DataFrame)
            and not y_true.columns.equals(y_pred.columns)
        ):
            raise ValueError(
                f"y_true has columns {list(y_true.columns)!r} but y_pred has "
                f"{list(y_pred.columns)!r}; put the forecast columns in the order of the "
                "target columns (y_pred[y_true.columns])."
            )
    return true, pred


def _span(index):
    if len(index) == 0:
        return "empty"
    first, last = (v.item() if isinstance(v, np.generic) else v for v in (index[0], index[-1]))
    return f"{len(index)} rows, {first!r} to {last!r}"


def _check_multioutput(multioutput, n_outputs):
    if isinstance(multioutput, str):
        if multioutput not in _MULTIOUTPUT_STRINGS:
            raise ValueError(
                f"multioutput must be 'uniform_average', 'raw_values' or an array of "
                f"{n_outputs} weights; got {multioutput!r}."
            )
        return multioutput
    try:
        weights = np.asarray(multioutput, dtype=np.float64)
    except (TypeError, ValueError):
        weights = None
    if weights is None or multioutput is None or weights.ndim != 1:
        raise ValueError(
            f"multioutput must be 'uniform_average', 'raw_values' or an array of "
            f"{n_outputs} weights (one per target column); got {multioutput!r}."
        )
    if weights.shape == (1,) == (n_outputs,) and np.isfinite(weights).all() and weights[0] > 0:
        # one column: its weight changes nothing (scikit-learn's mae and mape refuse it, its
        # rmse takes it; every metric here takes it)
        return "uniform_average"
    if weights.shape != (n_outputs,):
        raise ValueError(
            f"multioutput weights must have one entry per target column ({n_outputs}); got "
            f"shape {weights.shape}."
        )
    if not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
        raise ValueError(
            "multioutput weights must be finite and >= 0, with a positive sum (they weight "
            f"each target column's score in the average); got {multioutput!r}."
        )
    return weights


def _aggregate(per_column, multioutput):
    if isinstance(multioutput, str):
        if multioutput == "raw_values":
            return per_column
        return float(np.mean(per_column))
    return float(np.average(per_column, weights=multioutput))


def _as_result(value):
    # scikit-learn returns NumPy scalars for averages; a plain float prints and pickles simply.
    return value if isinstance(value, np.ndarray) else float(value)


# --------------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------------


def mae(y_true, y_pred, *, multioutput="uniform_average"):
    """Mean absolute error, ``mean(|y_true - y_pred|)``.

    Parameters
    ----------
    y_true : array-like, pd.Series or pd.DataFrame of shape (n_steps,) or (n_steps, n_targets)
        Observed values.
    y_pred : array-like, pd.Series or pd.DataFrame of the same shape
        Forecast values, row for row (pandas indexes must be equal).
    multioutput : {'uniform_average', 'raw_values'} or array-like of shape (n_targets,)
        How to combine target columns: their plain mean, one value per column, or a
        weighted mean.

    Returns
    -------
    float or ndarray of shape (n_targets,)
        In the units of the data; 0 is a perfect forecast.

    See Also
    --------
    sklearn.metrics.mean_absolute_error : the computation used here, after validation.

    Examples
    --------
    >>> from tsrnn.metrics import mae
    >>> mae([1.0, 2.0, 3.0], [1.5, 2.0, 2.0])
    0.5
    >>> mae([[1, 10], [2, 20]], [[2, 10], [2, 24]], multioutput="raw_values")
    array([0.5, 2. ])
    """
    true, pred = _check_pair(y_true, y_pred)
    multioutput = _check_multioutput(multioutput, true.shape[1])
    return _as_result(mean_absolute_error(true, pred, multioutput=multioutput))


def rmse(y_true, y_pred, *, multioutput="uniform_average"):
    """Root mean squared error, ``sqrt(mean((y_true - y_pred)**2))``, per target column.

    Parameters
    ----------
    y_true : array-like, pd.Series or pd.DataFrame of shape (n_steps,) or (n_steps, n_targets)
        Observed values.
    y_pred : array-like, pd.Series or pd.DataFrame of the same shape
        Forecast values, row for row (pandas indexes must be equal).
    multioutput : {'uniform_average', 'raw_values'} or array-like of shape (n_targets,)
        How to combine target columns. The average is taken of the per-column RMSEs (as in
        scikit-learn), not of the squared errors.

    Returns
    -------
    float or ndarray of shape (n_targets,)
        In the units of the data; 0 is a perfect forecast.

    See Also
    --------
    sklearn.metrics.root_mean_squared_error : the computation used here, after validation.

    Examples
    --------
    >>> from tsrnn.metrics import rmse
    >>> rmse([0.0, 0.0, 0.0, 0.0], [1.0, -1.0, 3.0, -1.0])
    1.7320508075688772
    """
    true, pred = _check_pair(y_true, y_pred)
    multioutput = _check_multioutput(multioutput, true.shape[1])
    # in units of a power of two per column (exact): squares of 1e200 overflowed (inf) and of
    # 1e-200 underflowed (0)
    unit = unit_scale(np.vstack([true, pred]))
    per_column = root_mean_squared_error(true / unit, pred / unit, multioutput="raw_values")
    return _as_result(_aggregate(per_column * unit, multioutput))


def mape(y_true, y_pred, *, multioutput="uniform_average"):
    """Mean absolute percentage error as a fraction, ``mean(|y_true - y_pred| / |y_true|)``.

    Returned as a fraction, like :func:`sklearn.metrics.mean_absolute_percentage_error`
    (0.1 means 10 %), not multiplied by 100. Unlike :func:`smape` it is asymmetric and
    undefined where ``y_true`` is 0: there scikit-learn divides by machine epsilon instead,
    which gives a huge value. Prefer :func:`mase` or :func:`smape` for series that touch 0.

    Parameters
    ----------
    y_true : array-like, pd.Series or pd.DataFrame of shape (n_steps,) or (n_steps, n_targets)
        Observed values.
    y_pred : array-like, pd.Series or pd.DataFrame of the same shape
        Forecast values, row for row (pandas indexes must be equal).
    multioutput : {'uniform_average', 'raw_values'} or array-like of shape (n_targets,)
        How to combine target columns.

    Returns
    -------
    float or ndarray of shape (n_targets,)
        A non-negative fraction; 0 is a perfect forecast.

    See Also
    --------
    sklearn.metrics.mean_absolute_percentage_error : the computation used here.

    Examples
    --------
    >>> from tsrnn.metrics import mape
    >>> mape([100.0, 200.0], [110.0, 150.0])
    0.175
    """
    true, pred = _check_pair(y_true, y_pred)
    multioutput = _check_multioutput(multioutput, true.shape[1])
    return _as_result(mean_absolute_percentage_error(true, pred, multioutput=multioutput))


def smape(y_true, y_pred, *, multioutput="uniform_average"):
    """Symmetric mean absolute percentage error, in percent from 0 to 200.

    ``smape = 100 / n * sum(2 * |y_true - y_pred| / (|y_true| + |y_pred|))``, the definition
    of the M3 and M4 competitions (with absolute values in the denominator). A step where
    both ``y_true`` and ``y_pred`` are 0 is a perfect forecast and contributes 0.

    Parameters
    ----------
    y_true : array-like, pd.Series or pd.DataFrame of shape (n_steps,) or (n_steps, n_targets)
        Observed values.
    y_pred : array-like, pd.Series or pd.DataFrame of the same shape
        Forecast values, row for row (pandas indexes must be equal).
    multioutput : {'uniform_average', 'raw_values'} or array-like of shape (n_targets,)
        How to combine target columns.

    Returns
    -------
    float or ndarray of shape (n_targets,)
        In percent: 0 is a perfect forecast, 200 the worst (e.g. opposite signs).

    Examples
    --------
    >>> from tsrnn.metrics import smape
    >>> smape([100.0, 0.0], [300.0, 0.0])  # (2 * 200 / 400, 0) -> mean 0.5 -> 50 %
    50.0
    """
    true, pred = _check_pair(y_true, y_pred)
    multioutput = _check_multioutput(multioutput, true.shape[1])
    denominator = np.abs(true) + np.abs(pred)
    ratio = np.divide(
        2.0 * np.abs(true - pred),
        denominator,
        out=np.zeros_like(denominator),
        where=denominator > 0,
    )
    return _as_result(_aggregate(100.0 * ratio.mean(axis=0), multioutput))


def mase_scale(y_train, *, m=1):
    """Scale of :func:`mase`: mean absolute ``m``-step change of the training series.

    This is the in-sample mean absolute error of the (seasonal) naive forecast
    ``y_hat[t] = y[t - m]``, computed per column.

    Parameters
    ----------
    y_train : array-like, pd.Series or pd.DataFrame of shape (n_steps,) or (n_steps, n_targets)
        The series the model was trained on, longer than ``m`` rows.
    m : int, default=1
        Seasonal period of the naive forecast (1: the previous value; 12: the same month a
        year earlier for monthly data).

    Returns
    -------
    ndarray of shape (n_targets,)
        One non-negative scale per target column (0 for a constant column).

    Examples
    --------
    >>> from tsrnn.metrics import mase_scale
    >>> mase_scale([1.0, 3.0, 2.0, 6.0])  # changes 2, -1, 4
    array([2.33333333])
    """
    m = _check_m(m)
    index = getattr(y_train, "index", None)
    if isinstance(index, pd.MultiIndex) and index.get_level_values(0).nunique() > 1:
        raise ValueError(
            "y_train is a panel (a (series id, time) MultiIndex): its steps would be differenced "
            "across series. Compute MASE series by series (e.g. with groupby(level=0)), or use "
            "RNNForecaster.score or make_forecast_scorer('mase'), which scale each series on "
            "its own."
        )
    if isinstance(index, pd.MultiIndex) and index.nlevels == 2:
        index = index.get_level_values(1)  # one series: its time level is checked as one's
    if isinstance(index, pd.Index) and not isinstance(index, pd.MultiIndex) and len(index):
        timed = isinstance(index, pd.DatetimeIndex | pd.PeriodIndex) or (
            pd.api.types.is_numeric_dtype(index.dtype) and not isinstance(index, pd.RangeIndex)
        )
        if timed and not index.is_monotonic_increasing:
            raise ValueError(
                "y_train's index is not in time order, so its naive forecast (the previous "
                "row) is not the previous step: sort it first (y_train.sort_index())."
            )
        if timed and index.has_duplicates:
            raise ValueError(
                f"y_train's index repeats stamps (first {index[index.duplicated()][0]!r}), so "
                "its rows are not one per step: aggregate them first, e.g. "
                "y_train.groupby(level=0).mean()."
            )
    train = _to_2d(y_train, "y_train")
    if train.shape[0] <= m:
        raise ValueError(
            f"y_train has {train.shape[0]} rows; the m={m} naive forecast that scales MASE "
            f"needs more than m, so pass at least {m + 1} rows (or a smaller m)."
        )
    return np.mean(np.abs(train[m:] - train[:-m]), axis=0)


def _check_m(m):
    if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 1:
        raise ValueError(f"m must be an int >= 1 (the seasonal period); got {m!r}.")
    return int(m)


def mase(y_true, y_pred, *, y_train=None, m=1, scale=None, multioutput="uniform_average"):
    """Mean absolute scaled error: MAE divided by the training series' naive-forecast MAE.

    ``mase = mean(|y_true - y_pred|) / scale`` per target column, where
    ``scale = mean(|y_train[t] - y_train[t - m]|)`` (see :func:`mase_scale`). Below 1 the
    forecast beats the in-sample naive forecast; it is unitless, so it can be averaged over
    series of different magnitudes. Give exactly one of ``y_train`` and ``scale``.

    A column whose scale is 0 (a constant training series, where the naive forecast is
    perfect) is scored by its plain MAE instead, with a ``RuntimeWarning``: the same rule as
    :meth:`tsrnn.RNNForecaster.score`.

    Parameters
    ----------
    y_true : array-like, pd.Series or pd.DataFrame of shape (n_steps,) or (n_steps, n_targets)
        Observed values.
    y_pred : array-like, pd.Series or pd.DataFrame of the same shape
        Forecast values, row for row (pandas indexes must be equal).
    y_train : array-like, pd.Series or pd.DataFrame of shape (n_train, n_targets), optional
        The training series, with the same target columns; the scale is computed from it.
        A DataFrame's columns must be those of a DataFrame ``y_true`` (or ``y_pred``), in the
        same order.
    m : int, default=1
        Seasonal period of the naive forecast that defines the scale, with ``y_train`` only:
        a given ``scale`` already holds its period, and another ``m`` beside it is a
        ``ValueError``.
    scale : float or array-like of shape (n_targets,) or (1, n_targets), optional
        A precomputed scale, e.g. the ``mase_scale_`` of a forecaster fitted on one series
        (one row). A panel model's table (one row per series) is refused: pass the row of
        the series scored.
    multioutput : {'uniform_average', 'raw_values'} or array-like of shape (n_targets,)
        How to combine target columns.

    Returns
    -------
    float or ndarray of shape (n_targets,)
        Unitless; 0 is a perfect forecast, 1 matches the naive forecast's in-sample error.

    Examples
    --------
    >>> from tsrnn.metrics import mase
    >>> y_train = [1.0, 3.0, 2.0, 6.0]  # one-step changes 2, 1, 4: scale 7/3
    >>> round(mase([5.0, 7.0], [6.0, 6.0], y_train=y_train), 4)  # MAE 1 / (7/3)
    0.4286
    >>> mase([5.0, 7.0], [6.0, 6.0], scale=2.0)
    0.5
    """
    true, pred = _check_pair(y_true, y_pred)
    n_outputs = true.shape[1]
    multioutput = _check_multioutput(multioutput, n_outputs)
    if (y_train is None) == (scale is None):
        raise ValueError(
            "mase needs the training series (y_train=...) or its scale (scale=...), exactly "
            f"one of them; got {'both' if scale is not None else 'neither'}."
        )
    if y_train is not None:
        train_scale = mase_scale(y_train, m=m)
        if train_scale.shape[0] != n_outputs:
            raise ValueError(
                f"y_train has {train_scale.shape[0]} column(s) but y_true has {n_outputs}; "
                "pass the training data of the same target columns."
            )
        _check_train_columns(y_train, y_true, y_pred)
    else:
        if _check_m(m) != 1:
            raise ValueError(
                f"m={m!r} is only used with y_train: a given scale already holds the seasonal "
                "period it was computed with, e.g. scale=mase_scale(y_train, m=12). Drop m."
            )
        train_scale = _check_scale(scale, n_outputs)
    errors = mean_absolute_error(true, pred, multioutput="raw_values")
    zero = train_scale == 0
    if zero.any():
        warnings.warn(
            f"the MASE scale is 0 for {int(zero.sum())} of {n_outputs} target column(s) (the "
            "training series is constant there, so the naive forecast is exact); those columns "
            "are scored by their MAE instead.",
            RuntimeWarning,
            stacklevel=2,
        )
    per_column = errors / np.where(zero, 1.0, train_scale)
    return _as_result(_aggregate(per_column, multioutput))


def _check_train_columns(y_train, y_true, y_pred):
    """A DataFrame ``y_train`` scales the columns of the same names, in the same order."""
    if not isinstance(y_train, pd.DataFrame):
        return
    named = next((y for y in (y_true, y_pred) if isinstance(y, pd.DataFrame)), None)
    if named is not None and not y_train.columns.equals(named.columns):
        which = "y_true" if named is y_true else "y_pred"
        raise ValueError(
            f"y_train has columns {list(y_train.columns)!r} but {which} has "
            f"{list(named.columns)!r}; each column's scale comes from the training column of "
            f"the same name: pass y_train[{which}.columns]."
        )


def _check_scale(scale, n_outputs):
    values = np.asarray(scale)
    if not _is_real_dtype(values.dtype):
        raise ValueError(f"scale must be a number or an array of numbers; got {scale!r}.")
    if values.ndim == 2 and values.shape[0] == 1:
        # a fitted forecaster's mase_scale_: (n_series_, n_targets), one row for one series
        values = values[0]
    elif values.ndim == 2:
        raise ValueError(
            f"scale has {values.shape[0]} rows, one per series of a panel (a panel model's "
            "mase_scale_); mase scores one series: pass that series' row (mase_scale_[i]), or "
            "score the panel with the forecaster's score(), which matches each series to its "
            "scale."
        )
    values = np.atleast_1d(values.astype(np.float64))
    if values.ndim != 1 or values.shape[0] not in (1, n_outputs):
        raise ValueError(
            f"scale must be one number or one per target column ({n_outputs}); got shape "
            f"{np.shape(scale)}."
        )
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError(f"scale must be finite and >= 0; got {scale!r}.")
    return np.broadcast_to(values, (n_outputs,))


# --------------------------------------------------------------------------------------------
# scorers
# --------------------------------------------------------------------------------------------

_METRICS = {"mae": mae, "rmse": rmse, "mape": mape, "smape": smape, "mase": mase}


class _ForecastScorer:
    """Scorer ``scorer(estimator, X, y=None)`` built by :func:`make_forecast_scorer`.

    A module-level class (not a closure) so that it pickles for ``n_jobs > 1``.
    """

    def __init__(self, metric, sign, kwargs):
        self._metric = metric
        self._sign = sign
        self._kwargs = kwargs

    def __call__(self, estimator, X, y=None, **kwargs):
        if kwargs:
            # Metadata routed by scikit-learn (e.g. sample_weight) cannot be honoured by a
            # forecast metric; silently ignoring it would score something else.
            raise TypeError(
                f"forecast scorers take no extra arguments; got {sorted(kwargs)}. Time steps "
                "cannot be weighted in these metrics."
            )
        if y is None:
            # Target only (fit(y)): the CV splitter hands the test part of the series as X and
            # no y; predict(X) forecasts those steps, so X itself is the truth. The forecaster
            # refuses what its own score refuses: no y after a fit with covariates, and the
            # training rows as the truth (cross_validate's train scores: NaN, as score's).
            model = _forecaster_of(estimator)
            _refuse_target_transformers(estimator, model, X)
            if hasattr(model, "_refuse_unscorable"):  # an RNNForecaster
                model._refuse_unscorable(X)
        y_true = X if y is None else y
        metric_kwargs = dict(self._kwargs)
        if self._metric is mase and "scale" not in metric_kwargs and "y_train" not in metric_kwargs:
            metric_kwargs.pop("m", None)  # 1: make_forecast_scorer refused any other here
            scale = np.asarray(_fitted_mase_scale(estimator), dtype=np.float64)
            if scale.ndim == 2 and scale.shape[0] > 1:
                # A panel: one scale per series, matched to the rows by series id, which the
                # forecaster's own score (negative MASE) does.
                if metric_kwargs or self._sign > 0:
                    raise ValueError(
                        "the forecaster was fitted on a panel of "
                        f"{scale.shape[0]} series, each with its own MASE scale; the mase "
                        "scorer then uses the forecaster's score (negative MASE), which takes "
                        "no extra arguments and is greater-is-better: drop "
                        f"{sorted(metric_kwargs) or 'greater_is_better=True'}."
                    )
                # (before any forecast here: score makes its own, once); the forecaster's
                # score, not a fitted search's, which scores by the search's own scoring
                model, X = _forecaster_and_rows(estimator, X)
                return model.score(X) if y is None else model.score(X, y)
            metric_kwargs["scale"] = scale.reshape(-1)
        y_pred = estimator.predict(X)
        return self._sign * self._metric(y_true, y_pred, **metric_kwargs)

    def __repr__(self):
        name = getattr(self._metric, "__name__", repr(self._metric))
        args = [name, f"greater_is_better={self._sign > 0}"]
        args += [f"{key}={_short_repr(value)}" for key, value in self._kwargs.items()]
        return f"make_forecast_scorer({', '.join(args)})"


def _short_repr(value):
    """A scorer's argument as its repr, but a training series (``y_train``) by its type and
    shape: its full repr filled a notebook cell, and every printed search that holds it."""
    if isinstance(value, (np.ndarray, pd.Series, pd.DataFrame)) and value.size > 4:
        name = f" {value.name!r}" if isinstance(value, pd.Series) and value.name is not None else ""
        return f"<{type(value).__name__}{name} of shape {value.shape}>"
    return repr(value)


_SCALE_ATTRIBUTES = ("mase_scale_", "_mase_scale_")


def _forecaster_and_rows(estimator, X=None):
    """The fitted forecaster inside ``estimator`` (a Pipeline's last step, a fitted search's
    best estimator, or ``estimator`` itself) and ``X`` as it reaches it, through the
    Pipelines' transformers as ``Pipeline.score`` passes it (``X=None``: not transformed).
    Scoring calls the forecaster's own ``score``: a fitted search's scores by the search's
    ``scoring``, and a nested search scored by MAE gave its MAE in the 'mase' column."""
    model = estimator
    while not _has_scale(model):
        if hasattr(model, "_final_estimator"):
            if X is not None and len(getattr(model, "steps", ())) > 1:
                X = model[:-1].transform(X)
            model = model._final_estimator
        elif hasattr(model, "best_estimator_"):
            model = model.best_estimator_
        else:
            break
    return model, X


def _forecaster_of(estimator):
    """The fitted forecaster inside ``estimator`` (see :func:`_forecaster_and_rows`)."""
    return _forecaster_and_rows(estimator)[0]


def _refuse_target_transformers(estimator, model, X):
    """A target-only forecaster behind Pipeline transformers that change the target: its
    forecasts come in their units, which the scorer compared with the raw truths (a
    StandardScaler's: MAE 95 on forecasts of about -1 for values of about 100). Transformers
    that leave the values as they are (an imputer on complete rows) pass."""
    if getattr(model, "_layout_", {}).get("covariates", True) or model is estimator:
        return
    _, reached = _forecaster_and_rows(estimator, X)
    try:
        same = np.allclose(
            np.asarray(reached, dtype=np.float64), np.asarray(X, dtype=np.float64), equal_nan=True
        )
    except (TypeError, ValueError):  # another shape or kind: certainly changed
        same = False
    if not same:
        raise ValueError(
            "the forecaster was fitted on a target only (fit(y)) behind transformers of a "
            "Pipeline that change the target's values: its forecasts come in their units, not "
            "the truths'. Use transformers with covariates, fit(X, y), where they act on X; "
            "the forecaster scales the target itself (its scaler parameter)."
        )


def _fitted_mase_scale(estimator):
    model = _forecaster_of(estimator)
    scale = next((getattr(model, name) for name in _SCALE_ATTRIBUTES if hasattr(model, name)), None)
    if scale is None:
        raise ValueError(
            f"the mase scorer takes the scale from the fitted forecaster's 'mase_scale_' "
            f"attribute, which {type(model).__name__} does not have; use an RNNForecaster, or "
            "pass scale=... or y_train=... to make_forecast_scorer."
        )
    return scale


def _has_scale(model):
    return any(hasattr(model, name) for name in _SCALE_ATTRIBUTES)


def make_forecast_scorer(metric, *, greater_is_better=False, **kwargs):
    """Make a scorer from a forecast metric, for ``GridSearchCV(scoring=...)``.

    The scorer has scikit-learn's signature ``scorer(estimator, X, y=None)`` and works for
    both ways of fitting :class:`tsrnn.RNNForecaster`:

    - target only, ``fit(y)``: the search passes the test part of the series as ``X`` and no
      ``y``; the scorer forecasts ``estimator.predict(X)`` and compares it with ``X``;
    - with covariates, ``fit(X, y)``: it compares ``estimator.predict(X)`` with ``y``.

    As with scikit-learn's ``neg_*`` scorers, an error metric is negated
    (``greater_is_better=False``), so that greater is always better.

    Parameters
    ----------
    metric : {'mae', 'rmse', 'mape', 'smape', 'mase'} or callable
        A metric of this module by name, or any ``metric(y_true, y_pred, **kwargs)`` that
        returns a number.
    greater_is_better : bool, default=False
        Whether a larger metric is a better forecast. False (the default, unlike
        :func:`sklearn.metrics.make_scorer`) because forecast metrics are errors: the scorer
        returns ``-metric``.
    **kwargs
        Passed to the metric, e.g. ``multioutput=[0.7, 0.3]``. For ``'mase'`` without
        ``scale`` or ``y_train``, the scale is read from the fitted forecaster's
        ``mase_scale_`` attribute (the mean absolute one-step change of its training data),
        as :meth:`tsrnn.RNNForecaster.score` does (through a Pipeline to its last step, and
        through a fitted search to its ``best_estimator_``). For a forecaster fitted on a
        panel (one scale per series), the scorer returns ``estimator.score``, negative MASE
        per series.

    Returns
    -------
    callable
        A picklable scorer ``scorer(estimator, X, y=None) -> float``.

    Raises
    ------
    TypeError, ValueError
        When it is made, not when it scores, for arguments every fold would fail on: a
        keyword the named metric does not take, ``'mase'`` with ``m != 1`` and no
        ``y_train``, both ``scale`` and ``y_train``, a non-boolean ``greater_is_better``.

    Examples
    --------
    With covariates, any regressor with ``predict`` works:

    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from tsrnn.metrics import make_forecast_scorer
    >>> X = np.arange(6.0).reshape(-1, 1)
    >>> y = 2 * X.ravel() + 1
    >>> scorer = make_forecast_scorer("mae")
    >>> scorer
    make_forecast_scorer(mae, greater_is_better=False)
    >>> round(scorer(LinearRegression().fit(X, y), X, y), 6) == 0
    True

    In a time-series search on a bare series (target only)::

        from sklearn.model_selection import GridSearchCV, TimeSeriesSplit
        search = GridSearchCV(RNNForecaster(), {"hidden_size": [8, 16]},
                              scoring=make_forecast_scorer("smape"),
                              cv=TimeSeriesSplit(n_splits=3, test_size=12))
        search.fit(y)
    """
    if isinstance(metric, str):
        try:
            metric = _METRICS[metric]
        except KeyError:
            raise ValueError(
                f"unknown metric {metric!r}; use one of {sorted(_METRICS)} or pass a callable "
                "metric(y_true, y_pred)."
            ) from None
    elif not callable(metric):
        raise TypeError(
            f"metric must be a metric name or a callable metric(y_true, y_pred); got {metric!r}."
        )
    if not isinstance(greater_is_better, (bool, np.bool_)):
        raise TypeError(f"greater_is_better must be True or False; got {greater_is_better!r}.")
    if isinstance(kwargs.get("multioutput"), str) and kwargs["multioutput"] == "raw_values":
        raise ValueError(
            "multioutput='raw_values' gives one number per column, but a scorer must return "
            "one number: use 'uniform_average' or an array of weights."
        )
    if metric is mase:
        # None is mase's own default for both: absent, so that the scorer takes the fitted
        # forecaster's scale (kept, every fold failed: "got neither")
        kwargs = {k: v for k, v in kwargs.items() if k not in ("y_train", "scale") or v is not None}
    if metric in _METRICS.values():
        _check_scorer_kwargs(metric, kwargs)
    return _ForecastScorer(metric, 1 if greater_is_better else -1, kwargs)


def _check_scorer_kwargs(metric, kwargs):
    """Refuse, when the scorer is made, keywords that would fail every fold's scoring (a
    search would fit every candidate and end with NaN scores)."""
    allowed = sorted(set(inspect.signature(metric).parameters) - {"y_true", "y_pred"})
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise TypeError(
            f"{metric.__name__} takes no keyword(s) {unknown}; its keywords are {allowed}."
        )
    if "multioutput" in kwargs:
        multioutput = kwargs["multioutput"]
        if isinstance(multioutput, str):
            if multioutput != "uniform_average":  # a scorer returns one number
                raise ValueError(
                    "a scorer's multioutput must be 'uniform_average' or a 1-D array of "
                    f"weights, one per target column; got {multioutput!r}."
                )
        else:
            weights = np.asarray(multioutput)
            if not _is_real_dtype(weights.dtype) or weights.ndim != 1:
                raise ValueError(
                    "multioutput must be 'uniform_average' or a 1-D array of weights, one "
                    f"per target column; got {multioutput!r}."
                )
            # their number can only be checked against the data; their values now
            weights = weights.astype(np.float64)
            if not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
                raise ValueError(
                    "multioutput weights must be finite and >= 0, with a positive sum (they "
                    f"weight each target column's score in the average); got {multioutput!r}."
                )
    if metric is mase:
        if "y_train" in kwargs and "scale" in kwargs:
            raise ValueError(
                "make_forecast_scorer('mase') takes y_train=... or scale=..., not both: the "
                "scale is computed from y_train."
            )
        if kwargs.get("scale") is not None:
            # its values now; its length (one, or one per target column) with the data
            scale = kwargs["scale"]
            values = np.asarray(scale)
            n = values.shape[-1] if values.ndim else 1
            _check_scale(scale, n)
        if kwargs.get("y_train") is not None:
            m = _check_m(kwargs.get("m", 1))
            if not np.isfinite(mase_scale(kwargs["y_train"], m=m)).all():
                raise ValueError(
                    "y_train has missing or infinite values, so the MASE scale computed from "
                    "it is not a number: pass the training rows without them."
                )
        if "m" in kwargs:
            m = _check_m(kwargs["m"])
            if m != 1 and "y_train" not in kwargs:
                raise ValueError(
                    f"the fitted forecaster stores the m=1 MASE scale; for m={m} also pass "
                    "y_train=... to make_forecast_scorer (or a scale=... computed with "
                    f"mase_scale(y_train, m={m}) and no m)."
                )
