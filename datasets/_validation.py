"""Argument checks shared by the generators, with scikit-learn's wording.

Every check raises ``TypeError`` for a value of the wrong kind and ``ValueError`` for one out of
range, in the form "The 'n' parameter of make_ar must be an int in the range [1, inf). Got 0
instead." followed by what to do about it.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd


def _interval(low, high, closed_low=True, closed_high=True) -> str:
    left = "[" if closed_low and low is not None else "("
    right = "]" if closed_high and high is not None else ")"
    return f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"


def _fail(error, func, name, expected, value, hint):
    message = f"The {name!r} parameter of {func} must be {expected}. Got {value!r} instead."
    raise error(f"{message} {hint}" if hint else message)


def check_int(value, name, func, *, low=None, high=None, hint=""):
    """Return ``value`` as an ``int`` in ``[low, high]``, or raise."""
    expected = f"an int in the range {_interval(low, high)}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        _fail(TypeError, func, name, expected, value, hint)
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        _fail(ValueError, func, name, expected, value, hint)
    return value


def check_real(value, name, func, *, low=None, high=None, open_low=False, hint=""):
    """Return ``value`` as a finite ``float`` in ``[low, high]`` (``(low, high]`` if
    ``open_low``), or raise."""
    expected = f"a float in the range {_interval(low, high, closed_low=not open_low)}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _fail(TypeError, func, name, expected, value, hint)
    value = float(value)
    below = low is not None and (value <= low if open_low else value < low)
    if not np.isfinite(value) or below or (high is not None and value > high):
        _fail(ValueError, func, name, expected, value, hint)
    return value


def check_reals(value, name, func, *, low=None, open_low=False, min_size=1, hint=""):
    """Return a sequence of finite reals (or a single real) as a 1-D float64 array, or raise."""
    expected = "a real number or a sequence of real numbers"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = [value]
    # pandas' Series and Index are sequences of numbers too, though not registered as such
    sequence = isinstance(value, (Sequence, np.ndarray, pd.Series, pd.Index))
    if isinstance(value, (str, bytes)) or not sequence:
        _fail(TypeError, func, name, expected, value, hint)
    array = np.asarray(value)
    if array.ndim != 1 or not (array.dtype.kind in "iuf" or array.size == 0):
        _fail(TypeError, func, name, expected, value, hint)
    array = array.astype(np.float64)
    if array.size < min_size:
        _fail(ValueError, func, name, f"a sequence of at least {min_size} value(s)", value, hint)
    if not np.isfinite(array).all():
        _fail(ValueError, func, name, "finite (no NaN or inf)", value, hint)
    if low is not None and ((array <= low) if open_low else (array < low)).any():
        bound = f"> {low}" if open_low else f">= {low}"
        _fail(ValueError, func, name, f"made of values {bound}", value, hint)
    return array


def check_choice(value, name, func, choices, *, hint=""):
    """Return ``value`` if it is one of ``choices``, or raise."""
    if not isinstance(value, str) or value not in choices:
        expected = "a str among {" + ", ".join(repr(c) for c in choices) + "}"
        error = TypeError if not isinstance(value, str) else ValueError
        _fail(error, func, name, expected, value, hint)
    return value


def check_random_state(random_state, func) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    ``None`` gives fresh OS entropy; an int seeds a new generator; a ``Generator`` is used (and
    advanced) as is; a legacy ``RandomState`` (scikit-learn's kind) seeds a new generator from
    one draw, so reusing the same ``RandomState`` object gives new data on every call, as in
    scikit-learn.
    """
    if random_state is None or isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            _fail(
                ValueError,
                func,
                "random_state",
                "a non-negative int",
                random_state,
                "Use any seed in [0, inf), e.g. random_state=0.",
            )
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    _fail(
        TypeError,
        func,
        "random_state",
        "an int, a numpy.random.Generator, a numpy.random.RandomState or None",
        random_state,
        "Pass an int for reproducible data.",
    )


def _suggested(err: Exception) -> str | None:
    found = re.search(r"Please use '([^']+)' instead|Did you mean ([^?\s]+)\?", str(err))
    return (found.group(1) or found.group(2)) if found else None


def pandas_suggestion(err: Exception, freq=None) -> str | None:
    """The alias pandas suggests in its error for a retired or mistyped frequency ('M' ->
    'ME', 'H' -> 'h'), or None. With ``freq``, the suggestion is asked again until pandas
    takes it (pandas 3 suggests 'Y' for 'A', and then 'YE' for 'Y'), with ``freq``'s
    multiple put back ('2A' -> '2YE': pandas' suggestion drops it)."""
    found = _suggested(err)
    if found is None or freq is None:
        return found
    for _ in range(3):
        try:
            pd.tseries.frequencies.to_offset(found)
            break
        except (TypeError, ValueError) as again:
            better = _suggested(again)
            if better is None or better == found:
                return None
            found = better
    else:
        return None
    multiple = re.match(r"\s*(\d+)", str(freq))
    if multiple and not re.match(r"\d", found):
        found = multiple.group(1) + found
    return found


def time_index(n, start, freq, func, name="time", steps="n") -> pd.DatetimeIndex:
    """``n`` regular time stamps from ``start`` with frequency ``freq``, or a teaching error
    (``steps``: the parameter that sets ``n``, named in it)."""
    pandas_says = ""
    try:
        offset = pd.tseries.frequencies.to_offset(freq)
    except (TypeError, ValueError) as err:
        offset = None
        # pandas names the current spelling of a retired or mistyped alias ('M' -> 'ME')
        found = pandas_suggestion(err, freq)
        pandas_says = f"pandas suggests {found!r}. " if found else ""
    if offset is None:
        _fail(
            ValueError,
            func,
            "freq",
            "a pandas frequency alias",
            freq,
            pandas_says + "Use an offset alias such as 'D', 'h', '30min', 'MS' (month start), "
            "'ME' (month end) or 'QS'.",
        )

    def backwards():
        _fail(
            ValueError,
            func,
            "freq",
            "a frequency that moves forward in time",
            freq,
            "Use a positive step, e.g. 'D', '2h' or pd.DateOffset(months=1).",
        )

    if offset.n <= 0:  # '0D' repeats one stamp, '-1D' runs backwards in time
        backwards()
    if isinstance(start, (numbers.Number, np.number)):
        _fail(
            TypeError,
            func,
            "start",
            "a date, not a number (pandas reads a number as nanoseconds since 1970-01-01)",
            start,
            "Use e.g. start='2000-01-01'.",
        )
    try:
        first = pd.Timestamp(start)
    except (TypeError, ValueError):
        first = pd.NaT
    if first is pd.NaT:
        _fail(
            ValueError,
            func,
            "start",
            "a date or something pandas.Timestamp understands",
            start,
            "Use e.g. start='2000-01-01'.",
        )
    try:
        index = pd.date_range(first, periods=n, freq=offset, name=name)
    except (pd.errors.OutOfBoundsDatetime, OverflowError) as err:
        # pandas' message ("Out of bounds timestamp: 10001999-01-01") names no parameter
        raise ValueError(
            f"{func}: {n:,} steps of freq={freq!r} from start={str(start)!r} run past the "
            f"last date pandas can represent ({err}). Ask for fewer steps ({steps}), or a "
            "shorter freq."
        ) from None
    if len(index) != n or not index.is_monotonic_increasing or not index.is_unique:
        # an offset whose n is positive but that stands still or runs backwards
        # (pd.DateOffset(days=-1), pd.DateOffset(months=0))
        backwards()
    return index


def finite_output(values, func, scales: str) -> None:
    """Values that overflowed (``make_ar(sigma=1e308)``: every value inf or NaN, with only
    numpy's RuntimeWarning) are refused, naming the parameters that set their scale."""
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(values)
    if not finite.all():
        raise ValueError(
            f"{func}: {int((~finite).sum())} of {finite.size} generated values overflowed to "
            f"inf or NaN: float64 holds magnitudes up to 1.8e308. Lower {scales}."
        )
