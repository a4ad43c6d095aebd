"""Data layer of :class:`tsrnn.RNNForecaster`: validation, time indexes, scaling, windows.

Everything here is a pure function or a small record; the estimator is a thin shell over it.

One series and many series share one layout (:class:`SeriesData`): the rows of every series
stacked in one flat float64 array ``values`` (N, C) with ``offsets`` (S + 1,) marking where each
series starts. Training windows are never materialised as a (windows x window x C) array: a
window is a start row, and a batch is built by fancy-indexing ``values`` with
``starts[:, None] + arange(length)`` (:func:`gather`), so memory grows with the data, not with
the number of windows.

Dimension legend: N rows of all series, S series, C target columns, K covariate columns,
W window length, H steps emitted at once, B batch.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import numbers
import re
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from pandas.tseries.frequencies import to_offset

__all__ = [
    "SeriesData",
    "WindowPlan",
    "auto_window",
    "check_target",
    "future_index",
    "gather",
    "seasonal_mask",
    "seasonal_period",
    "steps_ahead",
]

MAX_AUTO_WINDOW = 64


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


def _as_float_values(values, what: str, columns=None, index=None) -> np.ndarray:
    """``values`` as float64, refusing non-numeric data, NaN and inf with a message that helps.

    ``index``: a panel's (series id, time) MultiIndex, for a message that names the series
    and a fix within each series."""
    arr = np.asarray(values)
    if arr.dtype.kind == "c":
        raise ValueError(
            f"{what} contains complex numbers. Complex data not supported: pass real values."
        )
    if arr.dtype.kind == "b":
        raise _boolean_target(what)
    refuse_time_values(arr if arr.dtype == object else arr.dtype, what)
    text = arr.dtype.kind in "US" or (
        arr.dtype.kind == "O" and any(isinstance(v, str | bytes) for v in arr.ravel())
    )
    if text:  # as a Series of text is refused: numbers written as text are not coerced
        raise TypeError(
            f"{what} holds text (dtype {arr.dtype}). Pass numbers: if the text holds numbers, "
            "convert it first, e.g. np.asarray(y, dtype=float) or pd.to_numeric(y)."
        )
    if arr.dtype.kind == "O" and any(isinstance(v, bool | np.bool_) for v in arr.ravel()):
        # as a boolean array is refused (and score refuses these as truths)
        raise _boolean_target(what, f"holds booleans (dtype {arr.dtype})")
    refuse_inexact_values(arr, what)
    if arr.dtype.kind not in "iuf":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{what} has non-numeric values (dtype {arr.dtype}): {exc}. Pass numbers only; "
                "convert text columns with pd.to_numeric or drop them."
            ) from None
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        bad = ~np.isfinite(arr)
        n_nan = int(np.isnan(arr).sum())
        n_inf = int(bad.sum()) - n_nan
        bad_rows = np.flatnonzero(bad.reshape(len(arr), -1).any(axis=1))
        rows = bad_rows[:5].tolist()
        n_bad = len(bad_rows)
        if isinstance(index, pd.MultiIndex):
            raise ValueError(
                f"{what} contains {n_nan} NaN and {n_inf} inf value(s), "
                f"{_panel_rows(index, bad_rows)}. Input contains NaN or infinity: the model "
                f"reads no missing values (to train, to continue from or to score against). "
                f"{_panel_fill(_argument(what))}"
            )
        if n_bad < len(arr) and (bad_rows[-1] == n_bad - 1 or bad_rows[0] == len(arr) - n_bad):
            # all at the start (or end): interpolate() and ffill() leave leading values missing
            if bad_rows[0] == 0:
                fix = (
                    f"They are the first {n_bad} row(s): drop them (e.g. y.dropna() or "
                    f"y.iloc[{n_bad}:]); interpolate() and ffill() do not fill leading values."
                )
            else:
                fix = (
                    f"They are the last {n_bad} row(s): drop them (e.g. y.dropna() or "
                    f"y.iloc[:-{n_bad}])."
                )
        else:
            fix = (
                "Fill them first (e.g. y.interpolate() or y.ffill()), or cut the series to a "
                "complete span."
            )
        raise ValueError(
            f"{what} contains {n_nan} NaN and {n_inf} inf value(s) (first at rows {rows}). "
            "Input contains NaN or infinity: the model reads no missing values (to train, "
            f"to continue from or to score against). {fix}"
        )
    check_magnitude(arr, what, target=True)
    return arr


# warnings.catch_warnings saves and restores the process's one filter list: two threads
# inside it at once could leave one's "ignore" filter in place for good (Python < 3.14)
_WARNINGS_LOCK = threading.RLock()


@contextlib.contextmanager
def quiet(category=Warning, message=""):
    """Ignore warnings of ``category`` (and ``message``, a regex of their start) inside the
    block: ``warnings.catch_warnings``, serialised across tsrnn's threads (fits in threads,
    a search's threading backend)."""
    with _WARNINGS_LOCK, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=message, category=category)
        yield


MAX_MAGNITUDE = 1e300  # larger values overflow the arithmetic on them (differences, sums)


def check_magnitude(arr: np.ndarray, what: str, target: bool = False) -> None:
    """Finite values near float64's limit (1.8e308) overflowed in the scaling and the
    seasonal sums: the fit ran, with overflow warnings, and forecast NaN."""
    top = float(np.abs(arr).max()) if arr.size else 0.0
    if top > MAX_MAGNITUDE:
        raise ValueError(
            f"{what} has values of magnitude up to {top:.3g}, beyond {MAX_MAGNITUDE:g}: "
            "float64 arithmetic on them (differences, sums) overflows. Rescale the data "
            f"(e.g. {_argument(what)} / 1e300) and fit the model on the rescaled data"
            + (", then scale the forecasts back." if target else ".")
        )


# float64, which every value is read into, holds each integer up to 2**53 exactly; beyond
# that neighbouring integers round to one value (2**60 + 1 reads as 2**60)
MAX_EXACT_INT = 2**53


def _may_round(dtype) -> bool:
    """Dtypes whose values float64 may not hold: integers (pandas' nullable ones too),
    objects (Python ints of any size), long doubles."""
    if isinstance(dtype, pd.api.extensions.ExtensionDtype):
        return pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
    return dtype.kind in "iuO" or (dtype.kind == "f" and dtype.itemsize > 8)


def refuse_inexact_values(values, what: str) -> None:
    """Values that float64 cannot tell apart are refused before they are read as float64:
    integers beyond :data:`MAX_EXACT_INT` in magnitude (a series ``2**60 + t`` read as one
    constant and was forecast flat, without a word) and long doubles (``1e17 + 10 sin(t)``
    read in steps of 16), where distinct values would merge. Rounding that keeps them apart
    (a counter of 1e16 + 1e12 t, any long double's last bits) is float64's own, as for any
    float. Python ints beyond float64's range are refused too. ``values``: a Series, a
    DataFrame or an array; float64 and narrower floats are not looked at."""
    if isinstance(values, pd.DataFrame):
        columns = [(c, values[c]) for c, t in zip(values.columns, values.dtypes) if _may_round(t)]
    elif isinstance(values, pd.Series):
        columns = [(None, values)] if _may_round(values.dtype) else []
    else:
        arr = np.asarray(values)
        if not _may_round(arr.dtype):
            columns = []
        elif arr.ndim == 2:  # each column on its own, as a frame's
            columns = [(j, arr[:, j]) for j in range(arr.shape[1])]
        else:
            columns = [(None, arr.ravel())]
    for name, col in columns:
        if isinstance(col, pd.Series):
            if col.dtype == object:
                continue  # refused as non-numeric where a Series or column is read
            # nullable Int64 and UInt64 without their missing values (to_numpy() goes
            # through float64 for them, and would round here already)
            col = col.dropna().to_numpy(dtype=getattr(col.dtype, "numpy_dtype", col.dtype))
        column = f" (column {name!r})" if name is not None else ""
        if col.dtype.kind == "O":
            # Python ints of any size (bools are ints too, and small)
            ints = [
                int(v)
                for v in col.flat
                if isinstance(v, int | np.integer) and not isinstance(v, bool)
            ]
            if not ints or max(map(abs, ints)) <= MAX_EXACT_INT:
                continue
            huge = [v for v in ints if abs(v) > int(np.finfo(np.float64).max)]
            if huge:
                digits = str(abs(huge[0]))
                shown = f"{'-' if huge[0] < 0 else ''}{digits[0]}.{digits[1:4]}e+{len(digits) - 1}"
                raise ValueError(
                    f"{what}{column} holds integers beyond float64's range (1.8e308), e.g. "
                    f"{shown}, and {len(huge)} in all: rescale them first (the model reads "
                    "values as float64)."
                )
            distinct, kept = len(set(ints)), np.unique(np.array(ints, dtype=np.float64)).size
            kind = "integers beyond 2**53"
        elif col.dtype.kind in "iu":
            if not ((col > MAX_EXACT_INT) | (col < -MAX_EXACT_INT)).any():
                continue
            distinct, kept = np.unique(col).size, np.unique(col.astype(np.float64)).size
            kind = "integers beyond 2**53"
        else:  # long doubles
            finite = col[np.isfinite(col)]
            distinct, kept = np.unique(finite).size, np.unique(finite.astype(np.float64)).size
            kind = f"long doubles (dtype {col.dtype})"
        if kept < distinct:
            arg = _argument(what)
            raise ValueError(
                f"{what}{column} holds {kind} that float64, in which the model computes, cannot "
                f"tell apart: its {distinct} distinct values would read as {kept}, and their "
                "differences be lost (float64 holds every integer exactly only up to 2**53 = "
                f"{MAX_EXACT_INT:,}; 2**60 + 1 reads as 2**60). Subtract a common offset first "
                f"(e.g. {arg} - {arg}.min()) and add it back to the forecasts, or convert to "
                f"float yourself ({arg}.astype(float)) if that rounding is acceptable."
            )


def _panel_rows(index: pd.MultiIndex, rows: np.ndarray) -> str:
    """Where a panel's bad rows are: the first series' time stamps, and the series."""
    ids, times = index.get_level_values(0)[rows], index.get_level_values(1)[rows]
    first = ids[0]
    at = [label(t) for t in times[ids == first][:3]]
    series = list(dict.fromkeys(ids))
    more = f" (series with any: {[label(i) for i in series[:5]]})" if len(series) > 1 else ""
    return f"first in series {label(first)!r} at {', '.join(map(str, at))}{more}"


def _panel_fill(name: str) -> str:
    """The fix for missing values in a panel: within each series."""
    return (
        f"Fill them within each series, e.g. {name} = {name}.groupby(level=0).ffill() or "
        f"{name}.groupby(level=0).transform(lambda s: s.interpolate()) (a series' leading "
        "missing rows stay missing: drop them); filling the whole table at once would carry "
        "one series' values into the next."
    )


def _boolean_target(what: str, problem: str = "is boolean") -> TypeError:
    """The error for a boolean target (``pd.to_numeric`` keeps booleans, so it is no fix)."""
    return TypeError(
        f"{what} {problem}. A target must be numeric: convert it with .astype(float) if the "
        "booleans are meant as 0/1."
    )


def stamp_like(dtype) -> bool:
    """A dtype of time stamps: datetime64 (naive or zoned) or periods."""
    return pd.api.types.is_datetime64_any_dtype(dtype) or isinstance(dtype, pd.PeriodDtype)


# Python's and numpy's time objects, as they sit in object arrays
TIME_OBJECTS = (datetime.date, datetime.timedelta, np.datetime64, np.timedelta64)


def refuse_time_values(dtype, what: str) -> None:
    """Time stamps or durations as the values to forecast: numpy read them as numbers
    (nanoseconds since 1970, or counts of the dtype's unit), which were fitted and forecast
    (9.5e14) without a word, and ``pd.to_numeric``, which the generic message offered, does
    the same. An object array is refused by its first time object, if any."""
    name = _argument(what)
    if isinstance(dtype, np.ndarray):  # an object array: the kind of its first time object
        first = next((v for v in dtype.flat if isinstance(v, TIME_OBJECTS)), None)
        if first is None:
            return
        stamps = not isinstance(first, datetime.timedelta | np.timedelta64)
        dtype = np.dtype("M8[ns]" if stamps else "m8[ns]")
        dtype_text = f"objects such as {first!r}"
    else:
        dtype_text = f"dtype {dtype}"
    if stamp_like(dtype):
        raise TypeError(
            f"{what} holds time stamps ({dtype_text}), not values to forecast: the time stamps "
            f"belong in the index. Pass the values with the stamps as their index, e.g. "
            f"{name} = df.set_index('date')['sales'] for a table with those columns."
        )
    if pd.api.types.is_timedelta64_dtype(dtype):
        raise TypeError(
            f"{what} holds durations ({dtype_text}). Convert them to numbers in the unit the "
            f"forecasts should be in, e.g. {name} / pd.Timedelta(hours=1) (hours) or "
            f"{name} / np.timedelta64(1, 's') (seconds)."
        )


def _check_frame_numeric(df: pd.DataFrame, what: str) -> None:
    dup = df.columns[df.columns.duplicated()].unique().tolist()
    if dup:
        raise ValueError(
            f"{what} has duplicated column name(s) {dup[:5]}: each target column is its own "
            "variable and needs its own name. Rename them (e.g. y.columns = [...]) or drop the "
            "repeats (y.loc[:, ~y.columns.duplicated()])."
        )
    dtypes = list(zip(df.columns, df.dtypes))
    booleans = [(c, t) for c, t in dtypes if pd.api.types.is_bool_dtype(t)]
    if booleans:
        kinds = ", ".join(f"{c!r} ({t})" for c, t in booleans[:5])
        raise _boolean_target(what, f"has boolean column(s): {kinds}")
    bad = [(c, t) for c, t in dtypes if not pd.api.types.is_numeric_dtype(t)]
    dates = [c for c, t in bad if stamp_like(t)]
    if dates:
        # the long layout of Prophet or statsforecast: time in a column, not the index
        name = _argument(what)
        keys = ", ".join(repr(c) for c in dates[:2])
        raise TypeError(
            f"{what} has date column(s) {keys}: the time stamps must be the index. Use "
            f"{name} = {name}.set_index({dates[0]!r}) (keeping the numeric target columns), "
            f"or for a long table of many series {name}.set_index(['<series id column>', "
            f"{dates[0]!r}])."
        )
    durations = [c for c, t in bad if pd.api.types.is_timedelta64_dtype(t)]
    if durations:
        name = _argument(what)
        raise TypeError(
            f"{what} has column(s) of durations: {', '.join(repr(c) for c in durations[:5])}. "
            "Convert them to numbers in the unit the forecasts should be in, e.g. "
            f"{name}[{durations[0]!r}] / pd.Timedelta(hours=1) (hours)."
        )
    texts = [c for c, _ in bad if _dates_as_text(df[c])]
    if texts:
        # pd.read_csv without parse_dates: "convert with pd.to_numeric or drop them" would fit
        # a model without its dates
        name = _argument(what)
        raise TypeError(
            f"{what} has column(s) of dates as text: {', '.join(repr(c) for c in texts[:2])}. "
            f"The time stamps must be the index, as dates: {name} = "
            f"{name}.set_index({texts[0]!r}); {name}.index = pd.to_datetime({name}.index), or "
            "read the file with "
            f"pd.read_csv(..., index_col={texts[0]!r}, parse_dates=True)."
        )
    if bad:
        kinds = ", ".join(f"{c!r} ({t})" for c, t in bad[:5])
        raise TypeError(
            f"{what} has non-numeric column(s): {kinds}. Every target column must be numeric: "
            "convert with pd.to_numeric, encode categories as covariates in X, or drop them."
        )
    complex_ = [c for c, t in dtypes if pd.api.types.is_complex_dtype(t)]
    if complex_:
        raise ValueError(
            f"{what} has complex column(s) {complex_[:5]}. Complex data not supported: pass "
            "real values (e.g. the real and imaginary parts as two columns)."
        )


def _dates_as_text(column: pd.Series) -> bool:
    """Whether a column holds dates written as text (its first 20 values, each with a date's
    separator, all parse with ``pd.to_datetime``): a CSV read without ``parse_dates``."""
    sample = column.dropna().iloc[:20]
    if not len(sample) or not all(
        isinstance(v, str) and any(sep in v for sep in "-/:") for v in sample
    ):
        return False
    try:
        with quiet():  # pandas' "could not infer format" notes
            pd.to_datetime(sample)
    except (ValueError, TypeError, OverflowError):
        return False
    return True


def check_same_index(covs, target, xname: str = "X", yname: str = "y") -> None:
    """Covariates and target given as pandas objects of the same length must share their index:
    their rows are paired by position, so a shifted or reordered index would pair the wrong
    steps. (Lengths that differ get their own message.) Covariates built without an index
    (``pd.DataFrame({"promo": values})``: a default RangeIndex, which cannot be time stamps)
    beside a target indexed by time are paired by position, as an array would be."""
    if (
        isinstance(target, pd.Series | pd.DataFrame)
        and isinstance(covs, pd.Series | pd.DataFrame)
        and len(covs) == len(target)
        and not covs.index.equals(target.index)
        and not paired_by_position(covs.index, target.index)
    ):
        if paired_by_position(target.index, covs.index):
            # df["sales"] of a frame read without its dates, beside X = df.set_index("date"):
            # reindexing X by y's row numbers would leave it all NaN
            raise ValueError(
                f"{yname} is numbered by rows ({type(target.index).__name__} "
                f"{label(target.index[0])}..{label(target.index[-1])}) and {xname} by time "
                f"stamps: give {yname} {xname}'s time stamps, {yname} = "
                f"{yname}.set_axis({xname}.index) where its rows are {xname}'s steps in order "
                f"(or pass {yname}.to_numpy(): the time is then taken from {xname})."
            )
        raise ValueError(
            f"{xname} and {yname} have different indexes. Covariates must be given for the "
            f"same time steps as the target, row by row: align them, e.g. "
            f"{xname} = {xname}.reindex({yname}.index) where {xname} is indexed by the same "
            f"steps, or {xname} = {xname}.set_axis({yname}.index) where its rows are "
            f"{yname}'s steps in order."
        )


def _check_covariate_array(X, what: str) -> None:
    """Covariates given as an array or nested lists, before scikit-learn's conversion to
    float64, which read time stamps as counts since 1970 and text as the numbers it holds,
    where the same values as DataFrame columns (and as targets) are refused."""
    if X is None or hasattr(X, "tocsr") or isinstance(X, pd.Series):
        return  # sparse matrices and Series get scikit-learn's (or the callers') messages
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError):
        return  # ragged: scikit-learn's message
    values = arr.ravel() if arr.dtype.kind == "O" else ()
    if arr.dtype.kind in "mM" or any(isinstance(v, TIME_OBJECTS) for v in values):
        raise ValueError(
            f"{what} holds time stamps or durations (dtype {arr.dtype}), which would be read as "
            "counts of their unit: covariates must be numbers. Encode dates as calendar "
            "features (e.g. pd.DatetimeIndex(dates).day_of_week) and durations in a unit "
            "(e.g. durations / np.timedelta64(1, 'h'))."
        )
    if arr.dtype.kind in "US" or any(isinstance(v, str | bytes) for v in values):
        raise ValueError(
            f"{what} holds text (dtype {arr.dtype}): covariates must be numbers. Convert text "
            "that holds numbers first (e.g. np.asarray(X, dtype=float)) and encode categories "
            "as numbers (e.g. pd.get_dummies)."
        )
    refuse_inexact_values(arr, what)  # as a frame's integer columns


def check_covariate_frame(X, what: str = "X") -> None:
    """Covariates given as a DataFrame: at least one column, every column numeric (or
    boolean), all values finite; else an error that names the columns and the fix. Arrays are
    left to scikit-learn's checks (its messages name no columns because arrays have none).
    A dict, or a list of pandas objects, is refused (:func:`refuse_pandas_collections`)."""
    refuse_pandas_collections(X, what)
    if not isinstance(X, pd.DataFrame):
        _check_covariate_array(X, what)
        return
    if X.shape[1] == 0:
        raise ValueError(
            f"{what} is a DataFrame with no columns: pass at least one numeric covariate column, "
            "or fit on the target alone (fit(y), then predict(h))."
        )
    if X.columns.has_duplicates:
        dup = list(dict.fromkeys(X.columns[X.columns.duplicated()]))[:5]
        raise ValueError(
            f"{what} has duplicated column name(s) {dup}: each covariate needs its own name "
            "(the model matches the future covariates to them by name). Rename them (e.g. "
            f"{what}.columns = [...]) or drop the repeats."
        )
    dtypes = list(zip(X.columns, X.dtypes))
    bad = [
        (c, t)
        for c, t in dtypes
        if not (pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t))
    ]
    sparse = [c for c, t in dtypes if isinstance(t, pd.SparseDtype)]
    if sparse:
        # scikit-learn turns them into a sparse matrix, then refuses it with a fix for arrays
        # (.toarray()), or fails first ("fill value must be 0": a float column's default fill
        # is NaN)
        raise ValueError(
            f"{what} has sparse column(s) {sparse[:5]}: the model reads dense covariates. "
            f"Convert them first, {what}[{sparse!r}] = {what}[{sparse!r}].sparse.to_dense()."
        )
    if bad:
        kinds = ", ".join(f"{c!r} ({t})" for c, t in bad[:5])
        raise ValueError(
            f"{what} has non-numeric covariate column(s): {kinds}. Covariates must be numbers: "
            "convert text that holds numbers with pd.to_numeric, encode categories as numbers "
            "(e.g. pd.get_dummies(X, columns=[...], dtype=float)) and dates as calendar "
            "features (e.g. X[col].dt.day_of_week)."
        )
    refuse_inexact_values(X, what)
    values = X.to_numpy(dtype=np.float64, na_value=np.nan)
    finite = np.isfinite(values)
    if not finite.all():
        rows, cols = np.nonzero(~finite)
        names = list(dict.fromkeys(repr(X.columns[c]) for c in cols))[:5]
        if isinstance(X.index, pd.MultiIndex):
            raise ValueError(
                f"Input {what} contains NaN or infinity: {int((~finite).sum())} value(s), in "
                f"column(s) {', '.join(names)}, {_panel_rows(X.index, np.unique(rows))}. "
                f"Covariates must be known at every step. {_panel_fill(what)}"
            )
        raise ValueError(
            f"Input {what} contains NaN or infinity: {int((~finite).sum())} value(s), in "
            f"column(s) {', '.join(names)} (first at row {int(rows[0])}). Covariates must be "
            f"known at every step: fill them first (e.g. {what}.ffill() or "
            f"{what}.interpolate()), or cut the data to a complete span."
        )
    check_magnitude(values, what)


# --------------------------------------------------------------------------------------------
# Time indexes
# --------------------------------------------------------------------------------------------


def _index_kind(index: pd.Index, panel: bool = False, what: str = "y") -> str:
    if isinstance(index, pd.DatetimeIndex):
        return "datetime"
    if isinstance(index, pd.PeriodIndex):
        return "period"
    if isinstance(index, pd.RangeIndex) or pd.api.types.is_integer_dtype(index.dtype):
        return "range"
    if panel:  # the time level of a (series id, time) MultiIndex
        raise TypeError(
            f"Unsupported time level of type {type(index).__name__} (dtype {index.dtype}) in "
            "the panel's (series id, time) MultiIndex. Use dates, periods or integers: e.g. "
            f"{what}.index = {what}.index.set_levels(pd.to_datetime({what}.index.levels[1]), "
            "level=1)."
        )
    if isinstance(index, pd.MultiIndex):
        raise TypeError(
            f"{what} has a {index.nlevels}-level MultiIndex, but the model was fitted on one "
            "series (a panel needs its (series id, time) MultiIndex at fit): pass rows with "
            "the training data's kind of time index."
        )
    raise TypeError(
        f"Unsupported time index of type {type(index).__name__} (dtype {index.dtype}) in "
        f"{what}. Use a DatetimeIndex or PeriodIndex with a regular frequency, or a "
        f"RangeIndex: e.g. {what}.index = pd.to_datetime({what}.index), or "
        f"{what}.reset_index(drop=True)."
    )


def label(value):
    """A series id as messages show it: NumPy scalars as plain Python values (99, not
    ``np.int64(99)``)."""
    return value.item() if isinstance(value, np.generic) else value


def refuse_pandas_collections(y, what: str) -> None:
    """A dict, or a list/tuple of pandas objects, is neither one array nor a panel: NumPy
    would read a list of series as rows (their stamps lost, time and series swapped)."""
    name = _argument(what)
    if sp.issparse(y):  # scipy's dok arrays are dicts: left to the sparse-input checks
        return
    if isinstance(y, Mapping):
        raise TypeError(
            f"{what} is a {type(y).__name__}. Pass one pandas object: a panel of series as a "
            f"Series or DataFrame with a (series id, time) MultiIndex, e.g. "
            f"{name} = pd.concat({name}, names=['id', 'time']), or the columns of one "
            f"series' variables, {name} = pd.DataFrame({name})."
        )
    if isinstance(y, list | tuple) and any(isinstance(v, pd.Series | pd.DataFrame) for v in y):
        raise TypeError(
            f"{what} is a {type(y).__name__} of pandas objects. Pass one pandas object: a "
            "panel of these series with a (series id, time) MultiIndex, e.g. "
            f"{name} = pd.concat(dict(enumerate({name})), names=['id', 'time']), or the "
            f"columns of one series' variables, {name} = pd.concat({name}, axis=1)."
        )


def refuse_complex(y: pd.Series, what: str) -> None:
    """A Series of complex numbers: ``to_numpy(float)`` would drop the imaginary part with
    only NumPy's ``ComplexWarning`` (fit's targets, score's truths)."""
    if pd.api.types.is_complex_dtype(y.dtype):
        raise ValueError(
            f"{what} contains complex numbers (dtype {y.dtype}). Complex data not supported: "
            "pass real values."
        )


def refuse_masked(values, what: str, truths: bool = False) -> None:
    """A NumPy masked array with masked entries: every conversion (``np.asarray``, pandas)
    reads the values under the mask, fill values such as netCDF's 9.97e36, and they were
    fitted, forecast or scored without a word. Refused, naming the fix that makes them the
    missing values they are."""
    if not isinstance(values, np.ma.MaskedArray):
        return
    hidden = int(np.ma.count_masked(values))
    if hidden:
        name = _argument(what)
        fix = (
            # true values to score: filling them in would make up what is scored
            "Score the steps that have true values: pass those alone, as a pandas object "
            "indexed by their steps."
            if truths
            else f"Make them missing values, {name}.filled(np.nan), then fill or drop them "
            "(e.g. pd.Series(...).interpolate()); rows must be consecutive time steps."
        )
        raise ValueError(
            f"{what} is a masked array with {hidden} masked value(s): tsrnn would read the "
            f"values under the mask. {fix}"
        )


def _argument(what: str) -> str:
    """The argument a message's ``what`` names ('y', 'X', 'X_new'), for the fix it suggests."""
    return what.split(" ")[0].rstrip(":")


def _check_sorted_unique(index: pd.Index, what: str, panel: bool = False) -> None:
    name = _argument(what)
    if index.hasnans:
        # before the order and duplicates: NaT reads as unsorted (sort_index moves it to the
        # end), two of them as duplicates
        rows = np.flatnonzero(index.isna())
        keep = f"{name}.index.get_level_values(1).notna()" if panel else f"{name}.index.notna()"
        raise ValueError(
            f"{what} has {len(rows)} missing time stamp(s) (NaT), at row(s) "
            f"{rows[:3].tolist()}{' ...' if len(rows) > 3 else ''}: every row needs one. Fix "
            f"those stamps, or drop their rows: {name} = {name}[{keep}]."
        )
    if not index.is_unique:
        dup = index[index.duplicated()][:3].tolist()
        level = "[0, 1]" if panel else "0"
        raise ValueError(
            f"{what} has duplicated time stamps (e.g. {dup}). Each row must be one time step: "
            f"aggregate duplicates first, e.g. {name} = {name}.groupby(level={level}).mean()."
        )
    if not index.is_monotonic_increasing:
        raise ValueError(
            f"{what} has an unsorted time index. Rows must be consecutive time steps in "
            f"increasing order: sort them with {name} = {name}.sort_index()."
        )


def _freq_value(offset):
    """An index's frequency as the model keeps it: its string ('MS', 'B', 'h'), or the pandas
    offset itself where the string loses part of it (custom business days' week mask and
    holidays, ``pd.DateOffset(months=1)``), so that forecasts keep to the same grid."""
    text = offset.freqstr
    try:
        same = to_offset(text) == offset
    except ValueError:  # '<DateOffset: months=1>' is no frequency string
        same = False
    return text if same else offset


def inferred_freq(index: pd.Index) -> str | None:
    """``pd.infer_freq`` as an alias string (None where there is none, or fewer than 3
    stamps). pandas 3 warns (``Pandas4Warning``, a ``DeprecationWarning``) on every call
    that it will return an offset instead; both are taken, and the warning, which reached
    users from ``DatetimeIndex.inferred_freq``, is not shown."""
    if len(index) < 3:
        return None
    with quiet(DeprecationWarning):
        freq = pd.infer_freq(index)
    if freq is None and isinstance(index, pd.DatetimeIndex):
        return _uninferred_grid(index)
    return getattr(freq, "freqstr", freq)


def _uninferred_grid(index: pd.DatetimeIndex) -> str | None:
    """A frequency that ``pd.infer_freq`` never finds but the whole index follows, or None:
    semi-month starts and ends (``'SMS'``, ``'SME'``, on other days ``'SMS-10'``) and
    business days or hours taken k at a time (``'2B'``, ``'2bh'``). Without it a
    semi-monthly series read from a file (no frequency set) was refused, with a guess
    from its first stamps, ``asfreq('2W-THU')``, that emptied most of its rows, and a
    semi-monthly panel could not be fitted at all (a level carries no frequency).

    Examples
    --------
    >>> _uninferred_grid(pd.DatetimeIndex(["2020-01-01", "2020-01-15", "2020-02-01", "2020-02-15"]))
    'SMS-15'
    >>> _uninferred_grid(pd.DatetimeIndex(["2020-01-06", "2020-01-08", "2020-01-10", "2020-01-14"]))
    '2B'
    """
    candidates = []
    if len(index) < 4:  # three monthly stamps are 21 business days apart, by chance
        return None
    if (index == index.normalize()).all():
        day = np.asarray(index.day)
        for edge, kind, default in (
            (day == 1, "SMS", 15),
            (np.asarray(index.is_month_end), "SME", 15),
        ):
            others = np.unique(day[~edge])
            if edge.any() and len(others) == 1 and 2 <= others[0] <= 27:
                candidates.append(kind if others[0] == default else f"{kind}-{others[0]}")
        if (np.asarray(index.day_of_week) < 5).all():
            k = int(np.busday_count(index[0].date(), index[1].date()))
            if k > 1:
                candidates.append(f"{k}B")
    else:
        hours = (index[1] - index[0]) / pd.Timedelta(hours=1)
        if hours == int(hours) and 2 <= hours <= 8:
            candidates.append(f"{int(hours)}bh")
    for freq in candidates:
        try:
            grid = pd.date_range(index[0], periods=len(index), freq=freq)
        except (ValueError, TypeError):
            continue
        if np.array_equal(grid.asi8, index.as_unit(grid.unit).asi8):
            return grid.freqstr
    return None


def _infer_freq(index: pd.Index, what: str, panel: bool = False, grid=None, grid_of=""):
    """The frequency of a datetime/period index that must be regular (see :func:`_freq_value`).

    ``grid``: the frequency the index must follow (``grid_of`` says whose: the model's, or
    the panel's other series'), named in the fix when none can be inferred, instead of a
    guess from a few stamps."""
    if isinstance(index, pd.PeriodIndex):
        freq = index.freqstr
        expected = pd.period_range(index[0], periods=len(index), freq=index.freq)
        if not index.equals(expected):
            name = _argument(what)
            fill = (
                f"{name} = {name}.groupby(level=0).apply("
                f"lambda s: s.droplevel(0).resample({freq!r}).asfreq())"
                if panel
                else f"{name} = {name}.resample({freq!r}).asfreq()"
            )
            raise ValueError(
                f"{what} has a PeriodIndex with missing periods (it is not a regular "
                f"{freq!r} sequence). Fill the gaps, e.g. {fill}, then interpolate the new NaNs."
            )
        return freq
    if index.freq is not None:
        return _freq_value(index.freq)
    if len(index) < 3:
        name = _argument(what)
        fix = (
            # a level of a MultiIndex carries no frequency; periods carry theirs in the dtype
            "Give longer series, or index the time level by periods, e.g. "
            f"{_periods_level_fix(name, 'D')} (with your data's frequency in place of 'D')."
            if panel
            else f"Set it explicitly, e.g. {name} = {name}.asfreq('MS')."
        )
        raise ValueError(
            f"{what} has {len(index)} time stamp(s) and no frequency set: at least 3 are "
            f"needed to infer one. {fix}"
        )
    freq = inferred_freq(index)
    months = months_on_one_day(index) if freq is None else 0
    if months:
        name = _argument(what)
        period = _MONTHS_PERIOD.get(months)  # None: no period frequency counts k months
        unit = {"M": "month", "Q": "quarter", "Y": "year"}.get(period)
        if panel:  # a level of a MultiIndex carries no frequency: periods carry theirs
            fix = (
                f"Index the time level by {unit}: {_periods_level_fix(name, period)}."
                if period
                else "Index the time level by periods of a regular frequency."
            )
        else:
            offset = f"pd.DateOffset(months={months})"
            fix = f"Give it that frequency, e.g. {name} = {name}.asfreq({offset})"
            if period:
                fix += f", or index it by {unit}: {name} = {name}.to_period({period!r})"
            fix += "."
        kind = {1: "monthly", 3: "quarterly", 12: "yearly"}.get(months)
        kind = f"{kind} time stamps" if kind else f"time stamps every {months} months"
        raise ValueError(
            f"{what} has {kind} on day {index[0].day} of the month, which no "
            f"pandas frequency string describes. {fix}"
        )
    if freq is None and grid is not None:
        name = _argument(what)
        grid_text = getattr(grid, "freqstr", grid)
        raise ValueError(
            f"{what} is not a regular {grid_text!r} sequence, the frequency of {grid_of} "
            "(time steps are missing or uneven). Put it on that grid, e.g. "
            + _regular_grid_fix(name, grid, panel, guessed=True)
        )
    if freq is None:
        name, guess = _argument(what), _local_freq(index)
        raise ValueError(
            f"{what} has a DatetimeIndex without a regular frequency (pd.infer_freq found "
            "none: time steps are missing or uneven). Put it on a regular grid, e.g. "
            + _regular_grid_fix(
                name, guess or "D", panel, guessed=guess is not None, calendar=True
            )
        )
    return freq


def _periods_level_fix(name: str, freq: str) -> str:
    """The code that turns a panel's time level into periods of ``freq``, stamp by stamp
    (``set_levels`` on the level's unique values fails where two stamps fall in one period:
    the 15th of one series, the 20th of another)."""
    return (
        f"{name}.index = pd.MultiIndex.from_arrays([{name}.index.get_level_values(0), "
        f"{name}.index.get_level_values(1).to_period({freq!r})], names={name}.index.names)"
    )


_MONTHS_PERIOD = {1: "M", 3: "Q", 12: "Y"}  # a period frequency for stamps k months apart


def months_on_one_day(index: pd.DatetimeIndex) -> int:
    """``k`` where the stamps are ``k`` months apart on the same day of the month, at most
    the 28th, and the same time of day (every 15th: 1; the 15th of every third month: 3),
    else 0. ``pd.DateOffset(months=k)`` is then their grid; no frequency string describes
    it, and ``pd.infer_freq`` finds none. Later days are left out: a month without that day
    would move the grid's later stamps.

    Examples
    --------
    >>> months_on_one_day(pd.DatetimeIndex(["2020-01-15", "2020-04-15", "2020-07-15"]))
    3
    >>> months_on_one_day(pd.DatetimeIndex(["2020-01-15", "2020-02-15", "2020-04-15"]))
    0
    """
    if len(index) < 2 or index[0].day > 28:
        return 0
    steps = np.diff(np.asarray(index.year) * 12 + np.asarray(index.month))
    same = (
        steps[0] >= 1
        and (steps == steps[0]).all()
        and (index.day == index[0].day).all()
        and (index.time == index[0].time()).all()
    )
    return int(steps[0]) if same else 0


def _regular_grid_fix(
    name: str, freq: str, panel: bool, guessed: bool, calendar: bool = False
) -> str:
    """The message's suggested fix: put the series (each series of a panel) on ``freq``'s grid.

    ``calendar``: a series being fitted (not a panel, not rows for a fitted model's grid),
    which may instead take its own business-day calendar."""
    which = "" if guessed else f" (with your data's frequency in place of {freq!r})"
    holidays = (
        " Business days with holidays missing can also be indexed by their own calendar: "
        f"{name}.asfreq(pd.offsets.CustomBusinessDay(holidays=[...]))."
        if freq == "B" and calendar and not panel
        else ""
    )
    if panel:
        return (
            f"{name} = {name}.groupby(level=0).apply(lambda s: s.droplevel(0).asfreq({freq!r})), "
            f"then fill the new NaNs{which}.{holidays}"
        )
    return (
        f"{name} = {name}.asfreq({freq!r}) (then fill the new NaNs), or "
        f"{name}.resample({freq!r}).mean(){which}.{holidays}"
    )


def _local_freq(index: pd.DatetimeIndex) -> str | None:
    """The frequency of the index's first or last few stamps, where regular: the grid an
    irregular index most likely lost stamps from (for the message's suggested fix)."""
    for part in (index[:4], index[-4:], index[:3], index[-3:]):
        if len(part) >= 3:
            freq = inferred_freq(part)
            if freq is not None:
                if freq == "D" and _weekdays_only(index):
                    return "B"  # a few weekdays read as 'D'; weekends filled would be wrong
                if freq == "h" and _business_hours_only(index):
                    return "bh"  # 'h' filled nights and weekends: most rows NaN
                return freq
    return None


def _business_hours_only(index: pd.DatetimeIndex) -> bool:
    """Whole hours from 9:00 to 16:00 on weekdays only, spanning more than a day: business
    hours ('bh'), whose gaps 'h' would fill with nights and weekends."""
    return bool(
        len(index) >= 3
        and (index[-1] - index[0]) > pd.Timedelta(days=1)
        and (np.asarray(index.day_of_week) < 5).all()
        and ((np.asarray(index.hour) >= 9) & (np.asarray(index.hour) < 17)).all()
        and (np.asarray(index.minute) == 0).all()
    )


def _weekdays_only(index: pd.DatetimeIndex) -> bool:
    """Daily stamps spanning weeks with none on a Saturday or Sunday: business days."""
    return bool(
        len(index) >= 5
        and (index[-1] - index[0]) >= pd.Timedelta(days=7)
        and (np.asarray(index.day_of_week) < 5).all()
        and (index.normalize() == index).all()
    )


def as_offset(freq: str):
    """A pandas offset from a frequency string of a DatetimeIndex or a PeriodIndex ('M')."""
    # pandas 2.2-2.3 read a PeriodIndex's 'M', 'Q-DEC', 'Y-DEC' as month/quarter/year ends
    # with a FutureWarning (they are the period strings, which the user did not write)
    with quiet(FutureWarning):
        try:
            return to_offset(freq)
        except ValueError:
            return to_offset(freq, is_period=True)


def _range_step(index: pd.Index, what: str) -> int:
    if isinstance(index, pd.RangeIndex):
        return int(index.step) if len(index) > 1 else 1
    values = np.asarray(index, dtype=np.int64)
    if len(values) < 2:
        return 1
    steps = np.diff(values)
    if not (steps == steps[0]).all():
        name = _argument(what)
        kinds, counts = np.unique(steps, return_counts=True)
        usual = int(kinds[np.argmax(counts)])  # the most common step
        row = int(np.flatnonzero(steps != usual)[0])
        fill = (
            f" Fill in the missing steps: {name} = {name}.reindex(range({int(values[0])}, "
            f"{int(values[-1]) + usual}, {usual})), then fill the new NaN rows (e.g. "
            f"{name}.interpolate())."
            if (steps % usual == 0).all()
            else ""
        )
        raise ValueError(
            f"{what} has an integer index with uneven steps: most steps are {usual}, but "
            f"{int(values[row])} is followed by {int(values[row + 1])}. Rows must be "
            f"consecutive, equally spaced time steps.{fill} If the labels are not time steps "
            f"(row numbers left after dropping rows), number the rows anew with "
            f"{name}.reset_index(drop=True); or use a DatetimeIndex with a frequency."
        )
    return int(steps[0])


@dataclass
class TimeAxis:
    """How one series' rows map to time: its kind, frequency and last label."""

    kind: str | None  # 'datetime' | 'period' | 'range' | None (arrays: positions only)
    # pandas frequency string for datetime/period, or the offset where its string loses part
    # of it (see _freq_value)
    freq: str | pd.DateOffset | None = None
    step: int = 1  # for 'range'
    name: object = None  # the index name


def check_time_index(
    index: pd.Index,
    what: str,
    freq: str | pd.DateOffset | None = None,
    panel: bool = False,
    kind: str | None = None,
    tz=None,
) -> TimeAxis:
    """Validate one series' time index and describe it.

    ``freq``, when given, is the frequency the index must follow: the other series' of a panel
    (``panel=True``), or the model's for rows given to ``update``/``score``, whose ``kind`` of
    index it must then also have. Rows on that grid are taken as they are, whatever frequency
    their index carries ('D' on three weekdays of a business-day model, '7D' on a weekly
    model's Sundays); their frequency is inferred only to name the problem when they are not
    (a few rows cannot show it: three weekdays infer as 'D'). ``tz``: the model's time zone;
    zone-aware rows are checked in it (the same instants in UTC are not daily across a
    daylight-saving change).
    """
    own_kind = _index_kind(index, panel, _argument(what))
    if tz is not None and isinstance(index, pd.DatetimeIndex) and index.tz is not None:
        index = index.tz_convert(tz)
    _check_sorted_unique(index, what, panel)
    if kind in ("datetime", "period") and own_kind != kind and own_kind != "range":
        raise TypeError(
            f"{what} has a {own_kind} index but the model was fitted on data with a {kind} "
            "index. Pass rows indexed like the training data, or a plain array (rows "
            "continuing it)."
        )
    if own_kind == "range":
        return TimeAxis("range", None, _range_step(index, what), index.name)
    if freq is not None and own_kind == "datetime":
        expected = pd.date_range(index[0], periods=len(index), freq=freq)
        if index.equals(expected):
            return TimeAxis(own_kind, freq, 1, index.name)
        if len(index) < 3:
            offset = as_offset(freq)
            off = [stamp for stamp in index if not offset.is_on_offset(stamp)][:3]
            if off:  # too few rows to show a frequency, but these are not on the grid
                raise ValueError(
                    f"{what} has time stamps that are not on the {freq!r} grid (e.g. {off}). "
                    "Use stamps of that frequency."
                )
            raise ValueError(f"{what} is not a regular {freq!r} sequence. {_FILL_GAPS}")
    model = kind is not None or not panel
    of = "the data the model was fitted on" if model else "the panel's other series"
    own = _infer_freq(index, what, panel, grid=freq, grid_of=of)
    if freq is not None and as_offset(own) != as_offset(freq):
        others = "the model was fitted on data of" if model else "the other series have"
        fix = (
            "Pass rows of the model's frequency."
            if model
            else "All series of a panel must share one frequency: resample them to a common one."
        )
        raise ValueError(f"{what} has frequency {own!r} but {others} {freq!r}. {fix}")
    if freq is not None and own_kind == "datetime" and len(index) > 1:
        expected = pd.date_range(index[0], periods=len(index), freq=freq)
        if not index.equals(expected):
            raise ValueError(f"{what} is not a regular {freq!r} sequence. {_FILL_GAPS}")
    return TimeAxis(own_kind, own, 1, index.name)


_FILL_GAPS = "Fill the gaps with asfreq and interpolate."


def mean_step(last, axis: TimeAxis) -> pd.Timedelta:
    """The mean length of the 12 steps after ``last`` (a stamp or a period) of a dated axis:
    exact for steps of a fixed length, the months' or business days' average otherwise."""
    start = last.to_timestamp() if isinstance(last, pd.Period) else pd.Timestamp(last)
    return ((start + 12 * as_offset(axis.freq)) - start) / 12


def _refuse_far(last, axis: TimeAxis, stamp, what, max_steps, steps=None):
    """A ``ValueError`` where ``stamp`` lies more than ``max_steps`` steps after ``last``.

    ``steps`` where they were counted; else estimated before counting, as the span over the
    mean length of the next 12 steps (exact for fixed-length steps and periods; up to 15%
    high for business days or hours, so the estimate refuses only beyond 1.25 times the cap,
    and the steps counted after are held to the cap itself)."""
    if steps is None:
        if axis.kind == "period":
            steps = (stamp - last).n / as_offset(axis.freq).n  # base units over the multiple
        else:
            steps = (stamp - pd.Timestamp(last)) / mean_step(last, axis)
        if steps <= 1.25 * max_steps:
            return
    elif steps <= max_steps:
        return
    shown = f"{steps:.3g}"
    if float(shown) <= max_steps:  # rounded onto the cap: "1e+08 steps, more than 1e+08"
        shown = f"{round(steps):,}"
    raise ValueError(
        f"{what} reaches {label(stamp)!r}, {'about ' * (steps % 1 != 0)}{shown} steps after the "
        f"end of the data seen by fit or update ({label(last)!r}): forecasting up to it takes "
        f"more than {max_steps:,} steps, each one network call, which would run for hours. "
        f"Check {_argument(what)}'s time stamps (a mistyped year?), or forecast fewer steps."
    )


def future_index(last, axis: TimeAxis, h: int) -> pd.Index:
    """The ``h`` time labels after ``last`` by the axis' frequency (pandas' offset arithmetic).

    Examples
    --------
    >>> import pandas as pd
    >>> future_index(pd.Timestamp("2000-12-01"), TimeAxis("datetime", "MS"), 2)
    DatetimeIndex(['2001-01-01', '2001-02-01'], dtype='datetime64[us]', freq='MS')
    >>> future_index(9, TimeAxis("range", step=1), 3)
    RangeIndex(start=10, stop=13, step=1)
    """
    if axis.kind == "datetime":
        try:
            return pd.date_range(start=last, periods=h + 1, freq=axis.freq, name=axis.name)[1:]
        except ValueError as exc:  # pandas' NonExistentTimeError, AmbiguousTimeError
            zone = getattr(last, "tz", None)
            if zone is None or not re.search("nonexistent|ambiguous", str(exc), re.I):
                raise
            raise ValueError(
                f"The {h} steps after {last} by {axis.freq!r} in time zone {zone} cross "
                f"a local time the clocks skip or repeat ({str(exc).split('. Try')[0]}): pandas "
                "has no stamp of that frequency there. Forecast only the steps before it, or fit "
                "on the local dates without the zone: y.tz_localize(None)."
            ) from None
    if axis.kind == "period":
        return pd.period_range(start=last, periods=h + 1, freq=axis.freq, name=axis.name)[1:]
    step = axis.step
    return pd.RangeIndex(last + step, last + step * (h + 1), step, name=axis.name)


MAX_FUTURE_GRID = 1_000_000
"""Labels :func:`future_labels` may lay out on one grid for a panel (else it goes end by end)."""


def _one_grid(first, last, axis: TimeAxis, extra: int = 0) -> pd.Index | None:
    """One ``date_range`` (``period_range``) of the axis' frequency from ``first`` through
    ``last`` and ``extra`` steps beyond, for checks and labels of a whole panel at once.

    None where it would pass :data:`MAX_FUTURE_GRID` steps (calendar frequencies counted in
    days), or where pandas cannot lay it: a zone-aware calendar grid through a midnight the
    clocks skip or repeat, which no series' own range need cross. The callers then go series
    by series.
    """
    if axis.kind == "period":
        span = (last - first).n  # periods apart
    else:
        offset = as_offset(axis.freq)
        tick = isinstance(offset, pd.tseries.offsets.Tick)
        span = (last - first) / (pd.Timedelta(offset) if tick else pd.Timedelta(days=1))
    if span + extra > MAX_FUTURE_GRID:
        return None
    make = pd.date_range if axis.kind == "datetime" else pd.period_range
    try:
        grid = make(start=first, end=last, freq=axis.freq, name=axis.name)
        if extra:
            grid = make(start=first, periods=len(grid) + extra, freq=axis.freq, name=axis.name)
    except (ValueError, OverflowError):
        return None
    return grid


def future_labels(ends: list, axis: TimeAxis, steps: list) -> pd.Index:
    """The labels of ``steps[j]`` (step numbers, 1 = the step after ``ends[j]``) for every
    series j, in one index: ``future_index(ends[j], axis, ...)[steps[j] - 1]``, concatenated.

    A panel's series share a frequency, and mostly a grid: the labels are taken from one
    ``date_range`` (``period_range``) laid from the earliest end, instead of one per series
    (10,000 series: 0.9 s). Ends off that grid (a '7D' panel whose series end on other
    weekdays), and panels :func:`_one_grid` lays no grid for, go end by end, once per
    distinct end.

    Examples
    --------
    >>> import pandas as pd
    >>> ends = [pd.Timestamp("2000-12-01"), pd.Timestamp("2001-02-01")]
    >>> labels = future_labels(ends, TimeAxis("datetime", "MS"), [np.array([1, 2]), np.array([1])])
    >>> [str(t.date()) for t in labels]
    ['2001-01-01', '2001-02-01', '2001-03-01']
    """
    counts = np.array([len(s) for s in steps], dtype=np.int64)
    flat = np.concatenate(steps).astype(np.int64) if len(steps) else np.empty(0, np.int64)
    if axis.kind == "range":
        starts = np.repeat(np.asarray(ends, dtype=np.int64), counts)
        return pd.Index(starts + axis.step * flat, name=axis.name)
    need = int(flat.max()) if len(flat) else 0
    ends_index = pd.Index(ends)
    grid = _one_grid(ends_index.min(), ends_index.max(), axis, extra=need)
    positions = np.full(len(ends), -1, dtype=np.int64)
    if grid is not None:
        positions = np.asarray(grid.get_indexer(ends_index), dtype=np.int64)
    if (positions >= 0).all():
        return grid.take(np.repeat(positions, counts) + flat)
    # series by series where the grid does not hold the end: once per distinct end
    futures, parts = {}, []
    for j, end in enumerate(ends):
        if positions[j] >= 0:
            parts.append(grid.take(positions[j] + np.asarray(steps[j])))
            continue
        if end not in futures:
            futures[end] = future_index(end, axis, need)
        parts.append(futures[end].take(np.asarray(steps[j]) - 1))
    return parts[0].append(parts[1:]) if len(parts) > 1 else parts[0]


def paired_by_position(covs_index, target_index) -> bool:
    """Covariates numbered by row (a default RangeIndex, or a slice of one such as a
    cross-validation fold's ``X.iloc[100:]``: consecutive whole numbers, which cannot be time
    stamps) beside a target indexed by dates or periods: their rows are the target's steps,
    in order."""
    if not isinstance(target_index, pd.DatetimeIndex | pd.PeriodIndex) or not row_numbers(
        covs_index
    ):
        return False
    # beside yearly data, numbers of four digits are years, not row numbers: 1991-2000 beside
    # 2001-2010 are other years, refused as a different index
    freq = getattr(target_index, "freqstr", None) or inferred_freq(target_index) or ""
    yearly = freq.upper().startswith(("Y", "A", "BY", "BA"))
    values = np.asarray(covs_index)
    return not (yearly and len(values) and values.min() >= 1000 and values.max() <= 9999)


def row_numbers(index) -> bool:
    """Whether ``index`` numbers rows: consecutive whole numbers (step 1), from any start."""
    if isinstance(index, pd.RangeIndex):
        return index.step == 1
    if isinstance(index, pd.Index) and pd.api.types.is_integer_dtype(index.dtype) and len(index):
        return bool((np.diff(np.asarray(index)) == 1).all())
    return False


def is_positionless(index) -> bool:
    """A default RangeIndex (0, 1, 2, ...) carries no position: rows continue the series."""
    if index is None:
        return True
    if isinstance(index, pd.RangeIndex):
        return index.start == 0 and index.step == 1
    if isinstance(index, pd.Index) and pd.api.types.is_integer_dtype(index.dtype) and len(index):
        values = np.asarray(index)
        return values[0] == 0 and (np.diff(values) == 1).all()
    return False


def steps_ahead(
    last,
    axis: TimeAxis,
    index,
    n: int,
    what: str = "X",
    panel: bool = False,
    max_steps: int | None = None,
) -> np.ndarray:
    """The step numbers (1 = the step right after ``last``) of ``n`` future rows.

    ``index`` is the rows' time index, or ``None`` (arrays) where the rows continue the series.
    A default ``RangeIndex`` starting at 0 also means "continue" (it carries no position). Rows
    must be strictly later than ``last``, on the frequency's grid, in increasing order.
    ``panel``: ``index`` is one series' time level of a panel (for the messages' fixes).
    ``max_steps``: rows reaching further than that many steps are refused before the steps
    are counted (counting them lays the frequency's grid up to the last row: a stamp in the
    year 2400 of minute data is 2e8 steps, and as many recursive forecast steps).

    Examples
    --------
    >>> import pandas as pd
    >>> axis = TimeAxis("datetime", "MS")
    >>> future = pd.date_range("2001-03", periods=2, freq="MS")
    >>> steps_ahead(pd.Timestamp("2000-12-01"), axis, future, 2).tolist()
    [3, 4]
    """
    timed = isinstance(index, pd.DatetimeIndex | pd.PeriodIndex)
    if axis.kind is None or index is None or (not timed and is_positionless(index)):
        return np.arange(1, n + 1)
    kind = _index_kind(index, panel, _argument(what))
    if kind != axis.kind:
        other = "" if panel else ", or a plain array (rows continuing it)"
        raise TypeError(
            f"{what} has a {kind} index but the training data had a {axis.kind} index. Pass "
            f"rows indexed like the training data{other}."
        )
    _check_sorted_unique(index, what, panel)
    if kind == "range":
        steps, rem = np.divmod(np.asarray(index, dtype=np.int64) - int(last), axis.step)
        if (rem != 0).any():
            raise ValueError(
                f"{what}'s index is not on the training index's grid (step {axis.step}). Pass "
                "consecutive labels continuing the training index."
            )
    else:
        if kind == "datetime" and (index.tz is None) != (pd.Timestamp(last).tz is None):
            raise ValueError(
                f"{what}'s time index and the training index differ in time zone awareness "
                f"({index.tz} vs {pd.Timestamp(last).tz}). Localize or convert one of them."
            )
        if kind == "datetime" and index.tz is not None:
            # the same instants in another zone, onto the training zone's grid
            index = index.tz_convert(pd.Timestamp(last).tz)
        if kind == "period" and as_offset(index.freqstr) != as_offset(axis.freq):
            raise ValueError(
                f"{what} has a PeriodIndex of frequency {index.freqstr!r} but the training data "
                f"had {axis.freq!r} periods. Pass periods of the training data's frequency, "
                f"e.g. {_argument(what)}.index.asfreq({axis.freq!r})."
            )
        if max_steps is not None and index[-1] > last:
            _refuse_far(last, axis, index[-1], what, max_steps)
        if index[0] <= last:
            steps = np.zeros(len(index), dtype=np.int64)
        else:
            make = pd.date_range if kind == "datetime" else pd.period_range
            grid = make(start=last, end=index[-1], freq=axis.freq)
            steps = grid.get_indexer(index)
            if (steps < 0).any():
                off = index[steps < 0][:3].tolist()
                raise ValueError(
                    f"{what} has time stamps that are not on the training data's "
                    f"{axis.freq!r} grid (e.g. {off}). Use stamps of the same frequency."
                )
    steps = np.asarray(steps, dtype=np.int64)
    if max_steps is not None and len(steps) and steps[-1] > max_steps:  # a step-numbered index
        _refuse_far(last, axis, index[-1], what, max_steps, steps=int(steps[-1]))
    if (steps < 1).any():
        raise ValueError(
            f"{what} starts at {label(index[0])!r}, which is not after the end of the data seen by "
            f"fit or update ({label(last)!r}). "
            + (
                "update takes new rows only: pass the rows after that end."
                if _argument(what) == "y_new"
                else "Forecasts (predict's, and score's of its true values) are of the steps "
                "after that end only, not in-sample: pass rows after the training end (or a "
                "plain array, taken as continuing it). In cross-validation, split with "
                "cv=TimeSeriesSplit(...) (tsrnn.model_selection.PanelSplit for a panel): "
                "scikit-learn's default cv (KFold) trains on rows after the test rows."
            )
        )
    return steps


# --------------------------------------------------------------------------------------------
# Target layout
# --------------------------------------------------------------------------------------------


@dataclass
class SeriesData:
    """One or many series stacked row-wise: ``values[offsets[k]:offsets[k+1]]`` is series k."""

    values: np.ndarray  # (N, C) float64
    offsets: np.ndarray  # (S + 1,) int64
    axis: TimeAxis  # shared by all series
    index: list | None  # per series: its time index (pd.Index), or None for arrays
    ids: pd.Index | None = None  # series ids of a panel, None for one series
    id_name: object = None
    kind: str = "array"  # 'array' | 'series' | 'frame'
    ndim: int = 1  # 1: one target column given as 1-D; 2: a 2-D target
    columns: pd.Index | None = None  # target column names (DataFrame)
    name: object = None  # Series name
    extra: dict = field(default_factory=dict)

    @property
    def n_series(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def n_columns(self) -> int:
        return self.values.shape[1]

    def ends(self) -> list:
        """The last time label of each series (its row count minus one for arrays)."""
        if self.index is None:
            return [int(n) - 1 for n in self.lengths]
        return [idx[-1] for idx in self.index]

    def series(self, k: int) -> np.ndarray:
        return self.values[self.offsets[k] : self.offsets[k + 1]]


def panel_blocks(index: pd.MultiIndex, what: str):
    if index.nlevels != 2:
        raise ValueError(
            f"{what} has a MultiIndex with {index.nlevels} levels. A panel needs exactly two: "
            "(series id, time). Combine the id levels into one, or drop the extra level."
        )
    check_panel_levels(index, what)
    ids_in_order = index.get_level_values(0)
    codes = index.codes[0]
    # contiguous blocks of one id each
    change = np.flatnonzero(np.diff(codes) != 0) + 1
    starts = np.concatenate([[0], change])
    block_codes = codes[starts]
    if (codes < 0).any():
        rows = np.flatnonzero(codes < 0)
        name = _argument(what)
        raise ValueError(
            f"{what} has {len(rows)} row(s) without a series id (a missing value in the "
            f"MultiIndex's first level, first at row {int(rows[0])}). Give them their series' "
            f"id, or drop them: {name} = {name}[{name}.index.get_level_values(0).notna()]."
        )
    if len(np.unique(block_codes)) != len(block_codes):
        raise ValueError(
            f"{what}'s rows of one series are not contiguous. "
            f"Sort the panel with {_argument(what)}.sort_index() so each series' rows follow "
            "each other."
        )
    offsets = np.concatenate([starts, [len(index)]]).astype(np.int64)
    return ids_in_order[starts], offsets


def check_panel_levels(index: pd.MultiIndex, what: str, time_kind: bool = False) -> None:
    """Refuse a two-level MultiIndex that is no (series id, time) panel: the stamps first
    and the ids second, or levels named as a calendar ((year, month)); ``time_kind``: also a
    time level of other than dates, periods or integers (text labels sort alphabetically:
    ``'Apr-2020'`` before ``'Jan-2020'``). The forecaster checks the kind where it reads
    the level; :class:`~tsrnn.model_selection.PanelSplit` cuts by it, and so asks here."""
    _refuse_calendar_levels(index, what)
    ids, times = index.get_level_values(0), index.get_level_values(1)
    if isinstance(ids, pd.DatetimeIndex | pd.PeriodIndex) and not isinstance(
        times, pd.DatetimeIndex | pd.PeriodIndex
    ):
        name = _argument(what)
        raise ValueError(
            f"{what}'s MultiIndex has the time stamps first and the series ids second "
            f"(levels {list(index.names)}). A panel is indexed (series id, time): swap the "
            f"levels, e.g. {name} = {name}.swaplevel().sort_index(). If the dates of the "
            "first level are the series ids (cohorts by start month, say) and the second "
            f"level counts steps, make the ids text: {name}.index = "
            f"{name}.index.set_levels({name}.index.levels[0].astype(str), level=0)."
        )
    if time_kind:
        _index_kind(times, panel=True, what=_argument(what))


# a panel its user chose level by level (the command line's --id-col year): its levels'
# names are no ambiguity to refuse
CHOSEN_PANEL: contextvars.ContextVar[bool] = contextvars.ContextVar("chosen_panel", default=False)

# a MultiIndex (year, month) is one series' calendar, not a panel of one series per year
_YEAR_NAMES = {"year", "yr", "years"}
_WITHIN_YEAR = {
    "month": "month",
    "months": "month",
    "mon": "month",
    "quarter": "quarter",
    "quarters": "quarter",
    "qtr": "quarter",
    "week": None,
    "day": None,
    "dayofyear": None,
    "doy": None,
}


def _refuse_calendar_levels(index: pd.MultiIndex, what: str) -> None:
    """Refuse a MultiIndex whose levels are named as a calendar, (year, month) or (year,
    quarter), ...: it read as a panel of one series per year, each counting its months 1 to
    12, and ``predict`` forecast months 13 and 14 of every year without a word."""
    first, second = (str(name).strip().lower() for name in index.names)
    if first not in _YEAR_NAMES or second not in _WITHIN_YEAR or CHOSEN_PANEL.get():
        return
    name = _argument(what)
    unit = _WITHIN_YEAR[second]
    levels = (
        f"{name}.index.get_level_values(0).to_numpy(), "
        f"{unit}={name}.index.get_level_values(1).to_numpy()"
    )
    fix = (
        f"{name}.index = pd.PeriodIndex.from_fields(year={levels}, freq="
        f"{'M' if unit == 'month' else 'Q'!r})"
        if unit
        else f"{name}.index = a DatetimeIndex of the dates the two levels name"
    )
    raise ValueError(
        f"{what}'s MultiIndex is named {list(index.names)}: as a panel, (series id, time), it "
        f"reads as one series per {index.names[0]}, each counting its {index.names[1]}s, and "
        f"the forecast would continue every {index.names[0]} past its last "
        f"{index.names[1]}. For one series over the years, make the index the time: {fix}. "
        f"If each {index.names[0]} is meant as a series of its own, name the levels so: "
        f"{name}.index = {name}.index.set_names(['series', 'step'])."
    )


def _panel_on_one_grid(times, offsets, freq, kind, tz) -> bool:
    """Whether every series of a dated panel runs without a gap on one ``freq`` grid: what
    :func:`check_time_index` finds series by series (a regular, sorted, unique sequence of the
    frequency) checked for all at once, from one ``date_range`` over the panel (10,000
    series: 0.9 s one by one). False where it cannot say so: the series are then checked one
    by one, which also names a series that fails."""
    if freq is None or not isinstance(times, pd.DatetimeIndex) or kind not in (None, "datetime"):
        return False
    if len(times) == 0 or times.hasnans:
        return False
    if tz is not None and times.tz is not None:
        times = times.tz_convert(tz)
    first = times.min()
    grid = _one_grid(first, times.max(), TimeAxis("datetime", freq))
    if grid is None:
        return False
    if len(grid) == 0 or grid[0] != first:  # the first stamp is off the frequency's anchor
        return False
    pos = grid.get_indexer(times)
    if (pos < 0).any():
        return False
    step = np.diff(pos)
    step[np.asarray(offsets[1:-1], dtype=np.int64) - 1] = 1  # from one series to the next
    return bool((step == 1).all())


def check_target(
    y,
    what: str = "y",
    freq: str | pd.DateOffset | None = None,
    index_kind: str | None = None,
    tz=None,
) -> SeriesData:
    """Validate a target (or a block of new target rows) and stack it as :class:`SeriesData`.

    Accepts a ``pd.Series`` / 1-D array (one variable), a ``pd.DataFrame`` / 2-D array (one
    column per variable) and either pandas object with a two-level ``MultiIndex`` (series id,
    time) for many series. ``freq`` and ``index_kind`` are the frequency and the kind of time
    index the rows must have, ``tz`` the zone they are checked in (the model's, for rows given
    to update or score).

    Examples
    --------
    >>> import pandas as pd
    >>> data = check_target(pd.Series([1.0, 2, 3], index=pd.period_range("2000", periods=3,
    ...                                                                  freq="Y")))
    >>> data.values.shape, data.axis.freq, data.n_series
    ((3, 1), 'Y-DEC', 1)
    """
    if isinstance(y, pd.Series | pd.DataFrame):
        if isinstance(y, pd.DataFrame):
            if y.shape[1] == 0:
                raise ValueError(
                    f"{what} is a DataFrame with no columns. Pass at least one numeric column."
                )
            _check_frame_numeric(y, what)
            kind, ndim, columns, name = "frame", 2, y.columns, None
        else:
            if pd.api.types.is_bool_dtype(y.dtype):
                raise _boolean_target(what, f"is boolean (dtype {y.dtype})")
            refuse_time_values(y.dtype, what)
            if not pd.api.types.is_numeric_dtype(y.dtype):
                raise TypeError(
                    f"{what} has non-numeric values (dtype {y.dtype}). Pass numbers: convert "
                    "with pd.to_numeric(y)."
                )
            refuse_complex(y, what)
            kind, ndim, columns, name = "series", 1, None, y.name
        _check_not_empty(len(y), what)
        refuse_inexact_values(y, what)  # before to_numpy rounds them
        values = _as_float_values(
            y.to_numpy(dtype=np.float64, na_value=np.nan), what, index=y.index
        ).reshape(len(y), -1)
        if isinstance(y.index, pd.MultiIndex):
            ids, offsets = panel_blocks(y.index, what)
            times = y.index.get_level_values(1)
            indexes, axis, stepped = [], None, None
            # the frequency is inferred from the longest series, then checked on every one
            if freq is None:
                k = int(np.argmax(np.diff(offsets)))
                seg = times[offsets[k] : offsets[k + 1]]
                probe = check_time_index(seg, f"{what} (series {label(ids[k])!r})", panel=True)
                freq = probe.freq
            shared = _panel_on_one_grid(times, offsets, freq, index_kind, tz)
            for k in range(0 if shared else len(ids)):
                seg = times[offsets[k] : offsets[k + 1]]
                seg = seg.rename(y.index.names[1])
                axis_k = check_time_index(
                    seg,
                    f"{what} (series {label(ids[k])!r})",
                    freq,
                    panel=True,
                    kind=index_kind,
                    tz=tz,
                )
                axis = axis_k if axis is None else axis
                if axis_k.kind != axis.kind:
                    raise ValueError(
                        f"{what}: series {label(ids[k])!r} has a different kind of time index "
                        f"than series {label(ids[0])!r}. Use one index type for all series."
                    )
                # a series of one row has no step of its own (rows given to update, say)
                if len(seg) > 1 and stepped is None:
                    stepped = (k, axis_k)
                elif len(seg) > 1 and axis_k.step != stepped[1].step:
                    raise ValueError(
                        f"{what}: series {label(ids[k])!r} steps by {axis_k.step} in its "
                        f"integer time but series {label(ids[stepped[0]])!r} by "
                        f"{stepped[1].step}. All series of a panel must share one step: "
                        "renumber them."
                    )
                indexes.append(seg)
            if stepped is not None:
                axis = stepped[1]
            if shared:
                axis = TimeAxis("datetime", freq, 1, y.index.names[1])
                times = times.rename(y.index.names[1])
                indexes = [times[offsets[k] : offsets[k + 1]] for k in range(len(ids))]
            return SeriesData(
                values,
                offsets,
                axis,
                indexes,
                pd.Index(ids),
                y.index.names[0],
                kind,
                ndim,
                columns,
                name,
            )
        axis = check_time_index(y.index, what, freq, kind=index_kind, tz=tz)
        return SeriesData(
            values,
            np.array([0, len(y)], dtype=np.int64),
            axis,
            [y.index],
            None,
            None,
            kind,
            ndim,
            columns,
            name,
        )
    if isinstance(y, str | bytes) or isinstance(y, numbers.Number) or y is None:
        raise TypeError(
            f"{what} must be a pandas Series/DataFrame or an array-like of numbers, got "
            f"{type(y).__name__}."
        )
    refuse_pandas_collections(y, what)
    if sp.issparse(y):  # np.asarray makes it a 0-d object array: "got a scalar"
        raise TypeError(
            f"Sparse data was passed for {what}, but dense data is required. Use "
            "'.toarray()' to convert to a dense numpy array."
        )
    try:
        arr = np.asarray(y)
    except Exception as exc:  # e.g. ragged nested lists
        raise TypeError(
            f"{what} could not be read as an array ({exc}). Pass a 1-D or 2-D array of numbers."
        ) from None
    if arr.ndim == 0:
        raise TypeError(
            f"{what} must be 1-D or 2-D (rows are time steps), got a scalar. Pass a sequence."
        )
    if arr.ndim > 2:
        raise ValueError(
            f"{what} must be 1-D or 2-D (rows are time steps, columns variables), got an array "
            f"of shape {arr.shape}. Reshape it, or pass a panel as a DataFrame with a "
            "(series id, time) MultiIndex."
        )
    _check_not_empty(len(arr), what)
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise ValueError(f"{what} has 0 columns. Pass at least one numeric column.")
    ndim = arr.ndim
    values = _as_float_values(arr, what).reshape(len(arr), -1)
    return SeriesData(
        values,
        np.array([0, len(arr)], dtype=np.int64),
        TimeAxis(None),
        None,
        None,
        None,
        "array",
        ndim,
    )


def _check_not_empty(n: int, what: str) -> None:
    if n == 0:
        raise ValueError(
            f"{what} is empty (0 samples: no time steps). Pass a series with at least a few "
            "time steps."
        )


# --------------------------------------------------------------------------------------------
# Seasonality and the window
# --------------------------------------------------------------------------------------------


def seasonal_period(freq: str | None) -> int:
    """The usual seasonal period of a frequency: 12 for monthly data, 4 quarterly, 7 daily, ...

    Sub-daily frequencies get the number of steps per day (24 hourly; business hours the
    steps of a business day, 8 from 9 to 17); steps of a fixed length count by it ('24h' is
    daily, '7D' weekly); yearly data and a missing frequency get 1.

    Examples
    --------
    >>> [seasonal_period(f) for f in ("MS", "QS-OCT", "YE", "D", "B", "h", "30min", None)]
    [12, 4, 1, 7, 5, 24, 48, 1]
    >>> [seasonal_period(f) for f in ("bh", "2bh", "cbh", "3bh")]
    [8, 4, 8, 1]
    >>> [seasonal_period(f) for f in ("7D", "14D", "24h", "1440min", "3D")]
    [52, 26, 7, 7, 1]
    """
    if freq is None:
        return 1
    off = as_offset(freq)
    n = max(1, abs(off.n))
    name = type(off).__name__
    if name == "DateOffset" and set(off.kwds) == {"months"}:  # e.g. monthly on the 15th
        months = abs(off.kwds["months"]) * n
        return 12 // months if months and 12 % months == 0 else 1
    per_year = {"SemiMonth": 24, "Month": 12, "Quarter": 4, "Week": 52}
    for key, base in per_year.items():
        if key in name:
            return base // n if base % n == 0 else 1
    if "Year" in name:
        return 1
    if name in ("BusinessDay", "CustomBusinessDay"):
        return 5 if n == 1 else 1
    if name in ("BusinessHour", "CustomBusinessHour"):  # steps per business day: 8 for 9-17
        minutes = sum(
            (e.hour * 60 + e.minute - s.hour * 60 - s.minute) % 1440 or 1440
            for s, e in zip(off.start, off.end, strict=True)
        )
        steps, rest = divmod(minutes, 60 * n)
        return steps if rest == 0 and steps > 1 else 1
    # steps of fixed length ('D', 'h', '7D', '24h'): by their length, whatever the unit
    day = 86_400 * 10**9
    if name == "Day":
        step = n * day
    elif isinstance(off, pd.offsets.Tick):
        step = abs(off.nanos)
    else:
        return 1
    if step < day:
        return day // step if day % step == 0 else 1
    if step == day:
        return 7  # daily: a week
    weeks, rest = divmod(step, 7 * day)
    return 52 // weeks if rest == 0 and 52 % weeks == 0 else 1  # weekly, fortnightly: a year


def unit_scale(values: np.ndarray) -> np.ndarray:
    """Per column, the power of two nearest above its largest magnitude (1 for a column of
    zeros): dividing by it is exact in float64, and leaves values in [-1, 1]."""
    top = np.abs(values).max(axis=0)
    return np.ldexp(1.0, np.frexp(np.where(top > 0, top, 1.0))[1])


def seasonal_mask(data: SeriesData, period: int) -> np.ndarray:
    """Which series and target columns are seasonal with ``period``: (S, C) bool.

    The test of the M4 competition's benchmarks, on first differences (so that a trend does
    not pass for a season): the autocorrelation at lag ``period`` must exceed the 90% one-sided
    limit ``1.645 * sqrt((1 + 2 * sum(acf[1:period] ** 2)) / n)``. Two guards on top of it:

    - the test runs twice, on the differences as they are and clipped to their median +- 4
      robust standard deviations (1.4826 MAD), and either finding a season is enough: a few
      outlier spikes swamped a clear season (eight spikes in a daily series hid its weekly
      season), while a season of one spike a year (December twice the level) is itself a
      few large differences, which the clipping would flatten;
    - the autocorrelation at lag ``period`` must show a season's signature: above that at
      half the period (lag ``period // 2``), or a peak (at least that of lags ``period - 1``
      and ``period + 1``). A periodic component's autocorrelation is largest at its period,
      while that of anything else falls with the lag; the differences of a smooth series are
      correlated at every short lag, falling slowly, and a smooth non-seasonal daily series
      passed the limit at lag 7 and was forecast from a week back. Simulated seasons (periods
      4 to 24, with noise, AR errors, trends or slower cycles) are found as often as without
      this guard; on the bundled data every series' verdict is the same.

    A series shorter than ``period + 4`` rows or with a constant difference is not seasonal;
    differences whose standard deviation is within ``n`` float64 epsilons of the series'
    largest absolute value count as constant (their variation is float64 round-off: a
    straight line such as ``1000 + t / 3`` was found seasonal in its rounding errors, and
    forecast from a year back). The bound is the one the forecaster puts on a constant series
    and scikit-learn's scalers on their own round-off; until session 39 it was 1e-9 of the
    largest value, far above round-off, and a season of amplitude 1 at a level of 1e9 was
    taken for none, so adding a constant to a series changed its forecasts.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(120)
    >>> data = check_target(np.c_[np.sin(2 * np.pi * t / 12) + t / 50, np.cos(t / 7.3)], "y")
    >>> seasonal_mask(data, 12).tolist()
    [[True, False]]
    """
    out = np.zeros((data.n_series, data.n_columns), dtype=bool)
    if period < 2:
        return out
    # the series of one length side by side, a column each: every step below works column by
    # column (10,000 series: one pass instead of 10,000)
    lengths = np.diff(data.offsets)
    for n in np.unique(lengths):
        if n < period + 4:
            continue
        members = np.flatnonzero(lengths == n)
        seg = np.stack([data.series(k) for k in members], axis=1).reshape(n, -1)
        # in units of the power of two nearest the series' largest magnitude (exact, so the
        # same autocorrelations; squares of 1e200 overflowed, those of 1e-170 underflowed)
        level = unit_scale(seg)
        d = np.diff(seg / level, axis=0)
        ok = d.std(axis=0) > n * np.finfo(np.float64).eps * (np.abs(seg).max(axis=0) / level)
        median = np.median(d, axis=0)
        spread = 4 * 1.4826 * np.median(np.abs(d - median), axis=0)
        clipped = np.where(spread > 0, np.clip(d, median - spread, median + spread), d)
        found = ok & (_season_in(d, period) | _season_in(clipped, period))
        out[members] = found.reshape(len(members), -1)
    return out


SEASONAL_YEARS = (1, 2, 3, 4, 6, 8)
BACKTEST_VALUES = 2**16  # forecast values per series and column judged by seasonal_years


def most_seasons(lengths, period: int) -> int:
    """The most past seasons the seasonal base may average: as many as the longest series has
    before its last season (:func:`seasonal_years` backtests forecasts of a season from the
    positions before it), at least 1.

    ``lengths`` (S,): rows of each series. A series with fewer seasons than the base averages
    loses no training window for it: each position averages the seasons its series has up to
    it (:func:`tsrnn._training.seasonal_base`), and :func:`seasonal_years` judges the bases so.
    Until session 30 every window needed all of them before it, and a cap kept short series'
    windows: it held the tourism panel's quarterly series to 6 and 4 seasons at its earlier
    origins, where 8 forecast better.

    Examples
    --------
    >>> most_seasons([200], 12), most_seasons([30], 12), most_seasons([30, 60, 68], 4)
    (15, 1, 16)
    """
    return max(1, (int(np.max(lengths)) - period) // period)


MIN_SEASON_WINDOWS = 128  # training windows enough for a panel (window_seasons)


def window_seasons(n_train, period: int, window: int, horizon: int) -> int:
    """How many past seasons each training window has before it (its ``min_lead``, in
    seasons, where the base averages more: :class:`WindowPlan`). Each one costs every series
    ``period`` windows, and a window with fewer than the base averages gets a base averaging
    the seasons its series has (:func:`tsrnn._training.seasonal_base`), noisier than the one
    the forecasts get.

    ``n_train`` (S,): training rows of each series. Every series keeps ``window // 2 + 1``
    windows, and the panel keeps two thirds of the windows that one season leaves, or
    :data:`MIN_SEASON_WINDOWS` in all; the number is then rounded down to one of
    :data:`SEASONAL_YEARS` (at least 1). Until session 30 this capped the seasons the base
    averages (a 96-month series with a wandering level trained on a dozen windows
    otherwise: MASE 1.15 against 1.03 with one season), with the same windows. It now caps
    only the history each window needs: on the bundled tourism panel at its two earliest
    forecast origins the base averages 8 seasons where the cap allowed 6 and 4, and
    forecasts better. Training on every window that one season leaves was worse where the
    windows can have all 8 (the latest origin, six seeds: geometric-mean MASE 0.885 against
    0.925): three quarters of the windows then had the noisier base of fewer seasons.

    Examples
    --------
    >>> window_seasons([200], 12, 24, 1), window_seasons([96], 12, 24, 1)
    (4, 2)
    >>> window_seasons([60] * 20, 4, 12, 1)  # 20 series keep 8 windows each: 160 in all
    8
    """
    n_train = np.asarray(n_train, dtype=np.int64)

    def windows(s):
        return int(np.maximum(n_train - s * period - window - horizon + 1, 0).sum())

    most = int((n_train.min() - window - horizon - window // 2) // period)
    one = windows(1)
    while most > 1 and 3 * windows(most) < 2 * one and windows(most) < MIN_SEASON_WINDOWS:
        most -= 1
    return max(k for k in SEASONAL_YEARS if k <= max(most, 1))


def seasonal_years(data: SeriesData, period: int, mask: np.ndarray, n_rows, most: int) -> int:
    """How many past seasons the seasonal base averages (see
    :func:`tsrnn._training.seasonal_base`): the number of :data:`SEASONAL_YEARS`, at most
    ``most``, whose base forecasts the series best.

    The base has no parameters fitted to the data, so its errors on the series are
    out-of-sample errors. From every position ``t`` of a series with a season before it (the
    last ``BACKTEST_VALUES // m`` of them on long series) the next season ``y[t+1 .. t+m]``
    is forecast, and the absolute errors are averaged. Each position averages the whole
    seasons it has, at most the candidate's number, as the fitted base does: the candidates
    differ only where a series has more seasons than the smaller one, and a candidate no
    position can use ties with the one below it (the fewer seasons are taken; so are they
    where scores differ by less than :data:`SCORE_RTOL` relative, round-off, so that the
    choice does not depend on the data's units). The first
    ``n_rows`` rows of each series are read (a fit passes every row, the validation rows
    too: they are the most recent season's evidence, and the base learns nothing from them).
    Each series and column in ``mask`` weighs the same: its errors are divided by its
    seasonal naive forecast's mean absolute error (MASE's scale).

    One season (the seasonal naive forecast) suits a season that changes from year to year
    (air passengers' grows with the trend); more average the noise of a steady one away (on
    the bundled tourism panel, eight seasons in place of one cut the base's holdout MASE by
    10-20%).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = np.arange(96)
    >>> steady = check_target(np.sin(2 * np.pi * t / 4) + rng.normal(0, 0.5, 96), "y")
    >>> seasonal_years(steady, 4, np.array([[True]]), [96], 8)
    8
    >>> growing = check_target((1 + t / 10) * np.sin(2 * np.pi * t / 4), "y")
    >>> seasonal_years(growing, 4, np.array([[True]]), [96], 8)
    1
    """
    candidates = [k for k in SEASONAL_YEARS if k <= most]
    if len(candidates) < 2 or not mask.any():
        return 1
    scores, counted = backtest_scores(data, period, mask, n_rows, candidates)
    if not counted:
        return 1
    # the fewest seasons among those that tie with the best up to round-off: where every
    # backtest error has one sign (a trend), all candidates score the same in exact
    # arithmetic, and argmin alone chose by the last digits, so the data's units (y * 1000)
    # changed the choice and the forecasts
    tied = scores <= scores.min() + SCORE_RTOL * abs(scores.min())
    return candidates[int(np.flatnonzero(tied)[0])]


# relative difference below which seasonal_years' scores tie: far above the round-off of
# their sums (about 1e-13 relative), far below any difference that means something
SCORE_RTOL = 1e-9


_BACKTEST_BLOCK = 2**18  # forecast values at once in backtest_scores: 16 MiB, in cache


def backtest_scores(data: SeriesData, period: int, mask, n_rows, candidates):
    """The scores :func:`seasonal_years` compares, one per candidate number of seasons (the
    sum over series and columns of the base's mean absolute error over MASE's scale), and
    the number of series and columns counted.

    The columns of the series of one length are backtested side by side, in blocks of
    :data:`_BACKTEST_BLOCK` forecast values (10,000 series: 1.4 s one by one, 0.35 s so),
    each laid out in memory as on its own, and the scores are summed series by series,
    column by column, in order: the same sums as one at a time.
    """
    m = period
    rows = np.array([int(n) for n in n_rows])
    pairs = [(i, c) for i in np.flatnonzero(mask.any(axis=1)) for c in np.flatnonzero(mask[i])]
    errors = {}  # (i, c) -> per-candidate error, or None (a flat season: not counted)
    for n in np.unique([rows[i] for i, _ in pairs]):
        if n < 2 * m:
            continue
        group = [(i, c) for i, c in pairs if rows[i] == n]
        # positions t (steps t+1 .. t+m are forecast) from the first with a season before
        # it, the last BACKTEST_VALUES // m of them; each averages the whole seasons it has,
        # up to the candidate's number, as the fitted base does (seasonal_base)
        origins = np.arange(max(m - 1, n - m - max(BACKTEST_VALUES // m, 1)), n - m)
        have = (origins + 1) // m  # (T,) whole seasons up to each position
        ahead = origins[:, None] + 1 + np.arange(m)  # (T, m) rows forecast
        step = max(1, _BACKTEST_BLOCK // ahead.size)
        for lo in range(0, len(group), step):
            block = group[lo : lo + step]
            # one row per series and column, contiguous as that column alone would be
            y = np.stack([data.series(i)[:n, c] for i, c in block])
            y = y / unit_scale(y.T)[:, None]
            scale = np.mean(np.abs(y[:, m:] - y[:, :-m]), axis=1)
            cs = np.concatenate([np.zeros((len(block), 1)), np.cumsum(y, axis=1)], axis=1)
            season = np.full(y.shape, np.nan)
            season[:, m - 1 :] = (cs[:, m:] - cs[:, :-m]) / m  # mean of y[e-m+1 .. e] at e
            # rows ahead - j*m of every origin: of the m-row windows
            runs = np.lib.stride_tricks.sliding_window_view(y, m, axis=1)
            o, T = int(origins[0]), len(origins)
            lagged = np.zeros((len(block), *ahead.shape))  # sum over years j of y[s - j*m]
            means = np.zeros((len(block), T))  # sum of season[t - (j-1)*m]
            err = np.zeros((len(block), len(candidates)))
            for j in range(1, candidates[-1] + 1):
                if j * m - 1 <= o:  # every position has season j: views, no copies
                    lagged += runs[:, o + 1 - j * m : o + 1 - j * m + T]
                    means += season[:, o - (j - 1) * m : o - (j - 1) * m + T]
                else:
                    has = have >= j
                    lag = np.maximum(origins + 1 - j * m, 0)
                    lagged += np.where(has[:, None], runs[:, lag], 0.0)
                    means += np.where(has, season[:, np.maximum(origins - (j - 1) * m, m - 1)], 0)
                if j in candidates:
                    used = np.minimum(have, j)[:, None]
                    base = season[:, o : o + T, None] + (lagged - means[:, :, None]) / used
                    miss = np.abs(runs[:, o + 1 : o + 1 + T] - base).reshape(len(block), -1)
                    # a season that repeats exactly has scale 0: not counted (below), and
                    # no division by it (numpy's "invalid value" warning reached the user)
                    err[:, candidates.index(j)] = np.divide(
                        np.mean(miss, axis=1), scale, out=np.zeros(len(block)), where=scale > 0
                    )
            for (i, c), e, s in zip(block, err, scale, strict=True):
                errors[i, c] = e if s > 0 else None
    scores = np.zeros(len(candidates))
    counted = 0
    for pair in pairs:
        e = errors.get(pair)
        if e is not None:
            scores += e
            counted += 1
    return scores, counted


def panel_seasons(data: SeriesData, period: int, mask: np.ndarray, n_rows, years: int, keep=None):
    """The seasonal mask of a panel, with the series that :func:`seasonal_mask` misses given
    the seasonal base where most of the panel is seasonal and the base forecasts them better
    than their last value: (S, C) bool, ``mask`` or more.

    The seasonality test reads each series alone, and a short one (the tourism panel's 44-68
    quarters) can hide a season in its noise that its neighbours show; the global model then
    forecast it from its last value. Where at least half of the panel's series are found
    seasonal in a column, each one that is not is backtested as :func:`seasonal_years` does:
    from every position ``t`` with a season before it (the last ``BACKTEST_VALUES // m`` on
    long series), the next season ``y[t+1 .. t+m]`` is forecast by the seasonal base over
    ``years`` seasons (or the whole seasons there are up to ``t``, where fewer: as the fitted
    base) and by the last value ``y[t]``, over the first ``n_rows`` rows. The base has no
    parameters fitted to the data, so these are out-of-sample errors; the series takes the
    seasonal base where its absolute errors sum less. A series with fewer than ``m`` such
    positions keeps what the test found. One series alone
    (``S == 1``) is never pooled. ``keep`` (S, C) bool or None: series and columns left as
    they are (the forecaster's: those that take the reverting base of :func:`revert_base`,
    which forecasts a stationary series better than either).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = np.arange(60)
    >>> season = np.tile([3.0, -1.0, 0.0, -2.0], 15)
    >>> rows = [season + rng.normal(0, 1.5, 60) for _ in range(3)]
    >>> rows.append(np.cumsum(rng.normal(size=60)))  # a random walk
    >>> data = check_target(pd.Series(np.concatenate(rows), index=pd.MultiIndex.from_product(
    ...     [list("abcd"), t])), "y")
    >>> panel_seasons(data, 4, np.array([[True], [True], [False], [False]]), [60] * 4, 4)
    array([[ True],
           [ True],
           [ True],
           [False]])
    """
    S, C = mask.shape
    if S < 2 or not mask.any():
        return mask
    m = period
    rows = np.array([int(n) for n in n_rows])
    out = mask.copy()
    for c in range(C):
        if 2 * int(mask[:, c].sum()) < S:
            continue
        todo = np.flatnonzero(~mask[:, c] & (True if keep is None else ~keep[:, c]))
        for n in np.unique(rows[todo]):
            # positions t (steps t+1 .. t+m are forecast) with a season of history before them
            lo = max(m - 1, n - m - max(BACKTEST_VALUES // m, 1))
            origins = np.arange(lo, n - m)
            if len(origins) < m:
                continue
            same = todo[rows[todo] == n]
            # in blocks of _BACKTEST_BLOCK forecast values, as backtest_scores (memory)
            step = max(1, _BACKTEST_BLOCK // (len(origins) * m))
            for lo_g in range(0, len(same), step):
                group = same[lo_g : lo_g + step]
                out[group, c] = _seasonal_beats_last(data, c, group, n, m, years, origins)
    return out


def _seasonal_beats_last(data, c, group, n, m, years, origins):
    """:func:`panel_seasons`' test for column ``c`` of the series ``group``, all ``n`` rows
    long: (G,) bool."""
    y = np.stack([data.series(i)[:n, c] for i in group])  # (G, n)
    cs = np.concatenate([np.zeros((len(group), 1)), np.cumsum(y, axis=1)], axis=1)
    means = np.full(y.shape, np.nan)
    means[:, m - 1 :] = (cs[:, m:] - cs[:, :-m]) / m  # A(e): mean of y[e-m+1 .. e]
    ahead = origins[:, None] + 1 + np.arange(m)  # (T, m) rows forecast
    offsets = np.zeros((len(group), *ahead.shape))
    have = (origins + 1) // m  # whole seasons up to each position
    for j in range(1, years + 1):
        has = (have >= j)[:, None]  # the positions with season j: the others read row 0
        lag = np.where(has, ahead - j * m, 0)
        prev = np.where(has[:, 0], origins - (j - 1) * m, m - 1)
        offsets += np.where(has, y[:, lag] - means[:, prev, None], 0.0)
    base = means[:, origins, None] + offsets / np.minimum(have, years)[:, None]
    seasonal_err = np.abs(y[:, ahead] - base).sum(axis=(1, 2))
    last_err = np.abs(y[:, ahead] - y[:, origins][:, :, None]).sum(axis=(1, 2))
    return seasonal_err < last_err


# the reverting base is taken where its out-of-sample backtest errors are below this share of
# the last value's (simulated random walks of 100-300 rows pass 12-16% of the time, stationary
# AR(0.9) series 53-88%: benchmarks/bench_revert.py; sunspots come out at 0.94)
REVERT_GATE = 0.95
# the phis revert_base chooses from: every 0.05 from -0.95 to 0.9, then 80 steps to 0.9999
# that halve the distance to 1 every 8 or so (slow reversions: monthly sunspots take 0.97)
REVERT_PHIS = np.unique(
    np.concatenate([np.linspace(-0.95, 0.9, 38).round(2), 1 - np.geomspace(0.1, 1e-4, 80)])
)


def _fit_phi(d, lo: int, hi: int, horizon: int) -> np.ndarray:
    """The phi of :data:`REVERT_PHIS` whose forecasts ``phi**k * d[:, t]`` of ``d[:, t+k]``,
    k = 1 .. ``horizon``, from the positions ``lo <= t < hi`` of deviations ``d`` (G, n, C)
    from a mean, have the least squared error: (G, C)."""
    last = d[:, lo:hi]
    # sum_t (ahead - p last)^2 = const - 2 p (ahead . last) + p^2 (last . last), for every
    # phi at once
    squares = np.einsum("gtc,gtc->gc", last, last)
    loss = np.zeros((len(REVERT_PHIS), *squares.shape))
    power = np.ones(len(REVERT_PHIS))
    for k in range(1, horizon + 1):
        power = power * REVERT_PHIS
        cross = np.einsum("gtc,gtc->gc", d[:, lo + k : hi + k], last)
        loss += power[:, None, None] * (power[:, None, None] * squares - 2 * cross)
    return REVERT_PHIS[np.argmin(loss, axis=0)]


def revert_base(y, offsets, n_rows, horizon: int, mask=None):
    """The base of series without a seasonal base, per series and column: (phi, mu) of the
    forecast ``mu + phi**k * (y[t] - mu)`` of ``y[t+k]`` (AR(1) reverting to the mean), where
    the series and column revert to their mean, else (1, 0): the last value, bit for bit.
    ``mask`` (S, C) bool or None (all): the series and columns considered; the others keep
    (1, 0) (in a panel, those with a seasonal base).

    ``y`` (N, C): the scaled rows of every series stacked, series ``i`` in rows
    ``offsets[i]:offsets[i + 1]``, of which the first ``n_rows[i]`` (the training rows) are
    read. ``mu`` is their mean. ``phi`` is fitted to the forecasts the base is for: from every
    position ``t`` of the second half of the rows, ``y[t+1 .. t+horizon]`` is forecast, and
    ``phi`` is the one of :data:`REVERT_PHIS` whose squared errors sum least (the lag-one
    autocorrelation fits one step ahead only: on monthly sunspots, whose noise hides a slow
    cycle, it gives 0.92, and that base forecast 10 steps worse than the last value; the
    multi-step fit gives 0.97).

    The reverting base is taken where it forecasts the second half better than the last value
    does, out of sample: from each position ``t`` of it, with ``mu`` the mean of the rows up
    to ``t`` and ``phi`` fitted as above on the first half alone (from its second quarter's
    positions, around the first half's mean), the absolute errors over horizons
    1 .. ``horizon`` must sum to less than :data:`REVERT_GATE` times the last value's. Judged
    on the rows it was fitted to, with the mean of all of them (until session 29), the base
    knew where each series would end up: it was taken for 41-55% of simulated random walks
    and for most noisy trends, where it forecast 5-24% worse than the last value. Most
    trending series and random walks now keep the last value (12-16% of random walks pass,
    and a quarter of short noisy trends: ``benchmarks/bench_revert.py``); changes, growth
    rates and other series that wander around a level revert. Series with fewer than
    ``horizon`` positions in the second half, or in the first half's second quarter, keep
    the last value.

    Returns an (S, C, 2) array, or None where every series and column keeps the last value.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> noise = rng.normal(size=(300, 2))
    >>> ar = np.zeros(300)
    >>> for t in range(1, 300):
    ...     ar[t] = 0.5 * ar[t - 1] + noise[t, 0]
    >>> walk = np.cumsum(noise[:, 1])
    >>> base = revert_base(np.column_stack([ar, walk]), [0, 300], [300], 12)
    >>> base[0, 0].round(2).tolist(), base[0, 1].tolist()  # simulated with phi 0.5
    ([0.6, -0.16], [1.0, 0.0])
    """
    offsets = np.asarray(offsets)
    n_rows = np.asarray(n_rows, dtype=np.int64)
    S, C = len(offsets) - 1, y.shape[1]
    out = np.empty((S, C, 2))
    out[..., 0], out[..., 1] = 1.0, 0.0
    taken = False
    # the series of one length side by side: (G, n, C)
    for n in np.unique(n_rows):
        half = n // 2
        if n - horizon - half < horizon or half - horizon - half // 2 < horizon:
            continue
        group = np.flatnonzero(n_rows == n)
        if mask is not None:
            group = group[mask[group].any(axis=1)]
            if not len(group):
                continue
        rows = np.stack([y[offsets[i] : offsets[i] + n] for i in group])
        # the backtest: phi from the first half, the mean of the rows up to each origin t
        early = rows[:, :half] - rows[:, :half].mean(axis=1)[:, None]
        phi_then = _fit_phi(early, half // 2, half - horizon, horizon)
        origins = np.arange(half, n - horizon)
        mu_then = np.cumsum(rows, axis=1)[:, origins] / (origins + 1)[None, :, None]
        last = rows[:, origins]
        naive_err = np.zeros((len(group), C))
        revert_err = np.zeros_like(naive_err)
        power = np.ones_like(phi_then)
        for k in range(1, horizon + 1):
            power = power * phi_then
            ahead = rows[:, origins + k]
            naive_err += np.abs(ahead - last).sum(axis=1)
            revert_err += np.abs(ahead - mu_then - power[:, None] * (last - mu_then)).sum(axis=1)
        # the base: the mean of every row, phi fitted on the second half
        mu = rows.mean(axis=1)
        d = rows - mu[:, None]
        phi = _fit_phi(d, half, n - horizon, horizon)
        spread = np.einsum("gnc,gnc->gc", d, d)
        keep = (spread > 0) & (revert_err < REVERT_GATE * naive_err)
        if mask is not None:
            keep &= mask[group]
        if keep.any():
            taken = True
            g, c = np.nonzero(keep)
            out[group[g], c, 0] = phi[g, c]
            out[group[g], c, 1] = mu[g, c]
    return out if taken else None


def _season_in(d: np.ndarray, period: int) -> np.ndarray:
    """The test of :func:`seasonal_mask` on differences ``d`` (n, C): (C,) bool."""
    d = d - d.mean(axis=0)
    n = len(d)
    denom = np.einsum("ij,ij->j", d, d)
    ok = denom > 0
    acf = np.stack(
        [np.einsum("ij,ij->j", d[:-lag], d[lag:]) for lag in range(1, period + 2)]
    ) / np.where(ok, denom, 1.0)
    at_period = acf[period - 1]
    limit = 1.645 * np.sqrt((1 + 2 * np.sum(acf[: period - 1] ** 2, axis=0)) / n)
    peak = (at_period >= acf[period - 2]) & (at_period >= acf[period])
    over_half = at_period > acf[period // 2 - 1]
    return ok & (at_period > limit) & (peak | over_half)


def auto_window(period: int, usable: int, horizon: int) -> int:
    """Window length for ``window='auto'``: about two seasons, capped, and fitted to the data.

    ``usable`` is the number of rows of the shortest series available to training windows.
    The window leaves room for at least as many training windows as its own length: it is
    at most half of ``usable - horizon + 1``.

    Examples
    --------
    >>> auto_window(12, 120, 1), auto_window(4, 80, 1), auto_window(1, 9, 1)
    (24, 12, 4)
    """
    target = max(2 * period, 12) if period > 1 else 12
    target = min(target, MAX_AUTO_WINDOW)
    fit = (usable - horizon + 1) // 2
    # at least 2: a window of one value, centred on its own mean, reads as 0 (no target)
    return int(max(2, min(target, fit)))


# --------------------------------------------------------------------------------------------
# Windows
# --------------------------------------------------------------------------------------------


def gather(flat: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """Rows ``starts[b] .. starts[b] + length - 1`` of ``flat`` (N, F) as a (B, length, F) batch.

    Only the batch is materialised. Rows before row 0 (a block of :class:`WindowPlan` that
    starts before the first series) read row 0: its users zero the rows a block holds before
    its series.

    Examples
    --------
    >>> import numpy as np
    >>> gather(np.arange(10.0)[:, None], np.array([0, 5]), 3)[..., 0]
    array([[0., 1., 2.],
           [5., 6., 7.]])
    """
    idx = starts[:, None] + np.arange(length)[None, :]
    return flat[np.maximum(idx, 0)]


class WindowPlan:
    """Training and validation windows of every series, as start rows computed on demand.

    A window block covers ``lead + window + horizon`` rows: ``lead`` rows of history (for the
    seasonal anchor of the outputs), inputs at the next ``W`` positions, and targets up to
    ``H`` steps past the last one. Training windows have every target before the series'
    validation cut; a validation window ends at a position whose ``H`` targets start at or
    after the cut (the validation part is the most recent rows of each series). No array of
    per-window data is built: :meth:`train_starts` maps window numbers to start rows with a
    ``searchsorted`` over per-series counts.

    Parameters
    ----------
    offsets : ndarray (S + 1,)
    window, horizon : int
    n_valid : ndarray (S,) of int
        Validation rows at the end of each series (0: no validation).
    lead : int, default=0
        Rows of history each window's block holds before it (see ``min_lead``).
    series_order : ndarray (S,) of int or None, default=None
        The order in which :meth:`visit_order` numbers the series' windows (a panel's series
        sorted by id: the same panel with its series in another order is then trained on the
        same batches); None: the data's order.
    min_lead : int or None, default=None
        The fewest rows of history a window needs (None: ``lead``). With ``min_lead < lead``
        a window's block may start up to ``lead - min_lead`` rows before its series: those
        rows are not the series' (:meth:`history` counts the ones that are), and a seasonal
        base averages the seasons that exist (:func:`tsrnn._training.seasonal_base`).

    Examples
    --------
    >>> import numpy as np
    >>> plan = WindowPlan(np.array([0, 10, 16]), window=3, horizon=1, n_valid=[2, 0])
    >>> plan.train_counts.tolist(), plan.train_starts(np.arange(plan.n_train)).tolist()
    ([5, 3], [0, 1, 2, 3, 4, 10, 11, 12])
    >>> plan.valid_starts(np.arange(plan.n_valid_windows)).tolist()
    [5, 6]
    >>> plan = WindowPlan(np.array([0, 10, 16]), 3, 1, [2, 0], lead=4, min_lead=2)
    >>> starts = plan.train_starts(np.arange(plan.n_train))
    >>> starts.tolist(), plan.history(starts).tolist()
    ([-2, -1, 0, 8], [2, 3, 4, 2])
    """

    def __init__(
        self,
        offsets,
        window: int,
        horizon: int,
        n_valid,
        lead: int = 0,
        series_order=None,
        min_lead: int | None = None,
    ):
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.window = int(window)
        self.horizon = int(horizon)
        self.lead = int(lead)
        self.min_lead = self.lead if min_lead is None else int(min_lead)
        lengths = np.diff(self.offsets)
        self.n_valid = np.asarray(n_valid, dtype=np.int64)
        cut = lengths - self.n_valid
        self.cut = cut
        # block starts from offset - (lead - min_lead): min_lead rows of history
        self.train_counts = np.maximum(0, cut - self.length + (self.lead - self.min_lead) + 1)
        self.train_cum = np.concatenate([[0], np.cumsum(self.train_counts)])
        # validation: last input positions i in [cut - 1, n - 1 - H], block start i - W + 1 - lead
        first_end = np.maximum(cut - 1, self.min_lead + self.window - 1)
        last_end = lengths - 1 - self.horizon
        self.valid_counts = np.where(self.n_valid > 0, np.maximum(0, last_end - first_end + 1), 0)
        self.valid_first_start = first_end - self.window + 1 - self.lead
        self.valid_cum = np.concatenate([[0], np.cumsum(self.valid_counts)])
        self._visit = None
        if series_order is not None and (np.diff(series_order) != 1).any():
            cum = self.train_cum
            self._visit = np.concatenate(
                [np.arange(cum[k], cum[k + 1], dtype=np.int64) for k in series_order]
            )

    def visit_order(self, shuffled: np.ndarray) -> np.ndarray:
        """Training window numbers for positions ``shuffled`` of the series order."""
        return shuffled if self._visit is None else self._visit[shuffled]

    @property
    def n_train(self) -> int:
        return int(self.train_cum[-1])

    @property
    def n_valid_windows(self) -> int:
        return int(self.valid_cum[-1])

    @property
    def length(self) -> int:
        return self.lead + self.window + self.horizon

    def train_starts(self, ids: np.ndarray) -> np.ndarray:
        """Global start rows of training windows numbered ``ids`` (0 .. n_train - 1): of their
        blocks, which may start before their series (see ``min_lead``)."""
        k = np.searchsorted(self.train_cum, ids, side="right") - 1
        return self.offsets[k] + (self.min_lead - self.lead) + (ids - self.train_cum[k])

    def series_of(self, starts: np.ndarray) -> np.ndarray:
        """The series of the windows whose blocks start at ``starts``."""
        return np.searchsorted(self.offsets, np.asarray(starts) + self.lead, side="right") - 1

    def history(self, starts: np.ndarray) -> np.ndarray:
        """Rows of each block's ``lead`` that are its series' (``lead`` where the block starts
        inside its series), for the windows whose blocks start at ``starts``."""
        starts = np.asarray(starts, dtype=np.int64)
        return np.minimum(starts + self.lead - self.offsets[self.series_of(starts)], self.lead)

    def valid_starts(self, ids: np.ndarray) -> np.ndarray:
        """Global start rows of validation windows numbered ``ids``."""
        k = np.searchsorted(self.valid_cum, ids, side="right") - 1
        return self.offsets[k] + self.valid_first_start[k] + (ids - self.valid_cum[k])


def n_valid_rows(lengths: np.ndarray, fraction: float, horizon: int) -> np.ndarray:
    """Rows held out for validation per series: the most recent ``fraction`` (>= horizon)."""
    return np.maximum(np.ceil(fraction * lengths - 1e-9).astype(np.int64), horizon)


def required_length(window: int, horizon: int, n_valid: int = 0) -> int:
    """Rows a series needs for one training window (and its validation rows)."""
    return window + horizon + n_valid


def mase_scale(data: SeriesData) -> np.ndarray:
    """Mean absolute one-step change per series and column (S, C): the MASE denominator, m=1."""
    out = np.zeros((data.n_series, data.n_columns))
    for k in range(data.n_series):
        seg = data.series(k)
        if len(seg) > 1:
            out[k] = np.abs(np.diff(seg, axis=0)).mean(axis=0)
    return out
