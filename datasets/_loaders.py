"""Real time series bundled with tsrnn, read from CSV files inside the package.

Nothing here touches the network. Each file's source, units and licence are in
``datasets/README.md``; ``datasets/_make_data.py`` records how the files were produced.
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd

__all__ = [
    "load_air_passengers",
    "load_electricity_demand",
    "load_sunspots",
    "load_tourism_nights",
    "load_us_change",
]


def _read_csv(filename: str, **kwargs) -> pd.DataFrame:
    with resources.as_file(resources.files(__package__).joinpath("data", filename)) as path:
        return pd.read_csv(path, **kwargs)


def _monthly(labels: pd.Series) -> pd.DatetimeIndex:
    # Passing freq= makes pandas check that the stamps really are consecutive months.
    return pd.DatetimeIndex(pd.to_datetime(labels, format="%Y-%m"), freq="MS", name="month")


def _quarterly(labels: pd.Series) -> pd.DatetimeIndex:
    stamps = pd.PeriodIndex(labels, freq="Q").to_timestamp(how="start")
    # the grid built, then compared: pandas 2.x refuses freq='QS' in the constructor for
    # stamps it infers as 'QS-OCT' (the same quarter starts)
    grid = pd.date_range(stamps[0], periods=len(stamps), freq="QS", name="quarter")
    if not grid.equals(pd.DatetimeIndex(stamps)):
        raise ValueError("the bundled quarterly data has missing quarters: the file is damaged")
    return grid


def load_air_passengers() -> pd.Series:
    """Monthly totals of international airline passengers, 1949 to 1960.

    The classic "airline data" of Box and Jenkins (Series G), as in R's
    ``datasets::AirPassengers``: 144 monthly values in thousands of passengers, with a trend and a
    multiplicative yearly season.

    Returns
    -------
    y : pandas.Series of int64, shape (144,)
        Named ``'passengers'`` (thousands), indexed by a ``DatetimeIndex`` named ``'month'`` of
        month starts from 1949-01-01 to 1960-12-01 with ``freq='MS'``.

    See Also
    --------
    load_sunspots : A longer monthly series, with a cycle of about 11 years.

    Notes
    -----
    Source: Box, G. E. P. and Jenkins, G. M. (1976), *Time Series Analysis: Forecasting and
    Control*, revised ed., Holden-Day, Series G; distributed with R. See
    ``datasets/README.md`` for the licence.

    Examples
    --------
    >>> from tsrnn.datasets import load_air_passengers
    >>> y = load_air_passengers()
    >>> y.shape, y.index.freqstr
    ((144,), 'MS')
    >>> y.head(3).tolist(), int(y.sum())
    ([112, 118, 132], 40363)
    >>> str(y.idxmax().date()), int(y.max())
    ('1960-07-01', 622)
    """
    frame = _read_csv("air_passengers.csv", dtype={"passengers": "int64"})
    return pd.Series(
        frame["passengers"].to_numpy(), index=_monthly(frame["month"]), name="passengers"
    )


def load_sunspots() -> pd.Series:
    """Monthly mean sunspot numbers, January 1749 to September 2013.

    R's ``datasets::sunspot.month``: 3177 monthly means of the daily sunspot number from the
    World Data Center SILSO (Royal Observatory of Belgium). The series has a quasi-periodic
    cycle of about 11 years (about 130 months) whose amplitude changes from cycle to cycle.

    Returns
    -------
    y : pandas.Series of float64, shape (3177,)
        Named ``'sunspots'`` (a dimensionless count, published to 0.1), indexed by a
        ``DatetimeIndex`` named ``'month'`` of month starts with ``freq='MS'``.

    See Also
    --------
    load_air_passengers : A short monthly series with a yearly season.

    Notes
    -----
    These are the values in R (extended to 2013 and corrected after R 3.0.3), i.e. version 1
    of the sunspot number, as published before SILSO's July 2015 recalibration of the whole
    series: numbers downloaded from SILSO today (version 2) are on a different scale. Source
    and licence in ``datasets/README.md``.

    Examples
    --------
    >>> from tsrnn.datasets import load_sunspots
    >>> y = load_sunspots()
    >>> y.shape, y.index.freqstr
    ((3177,), 'MS')
    >>> str(y.index[0].date()), str(y.index[-1].date())
    ('1749-01-01', '2013-09-01')
    >>> y.head(3).tolist()
    [58.0, 62.6, 70.0]
    """
    frame = _read_csv("sunspots.csv", dtype={"sunspots": "float64"})
    return pd.Series(frame["sunspots"].to_numpy(), index=_monthly(frame["month"]), name="sunspots")


def load_electricity_demand(*, return_X_y: bool = False):
    """Half-hourly electricity demand in Victoria, Australia, in 2014, with covariates.

    R's ``fpp2::elecdemand``: 17520 half-hours (365 days × 48) of operational electricity demand
    for the state of Victoria, the temperature in Melbourne, and a work-day flag.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(X, y)``: the covariates and the target, ready for
        ``RNNForecaster().fit(X, y)``, instead of one DataFrame.

    Returns
    -------
    frame : pandas.DataFrame, shape (17520, 3)
        Indexed by a ``DatetimeIndex`` named ``'time'`` from 2014-01-01 00:00 to
        2014-12-31 23:30 with ``freq='30min'``. Columns:

        - ``demand`` (float64): the target, operational demand in gigawatts (GW);
        - ``workday`` (int64): 1 on work days, 0 on weekends and Victorian public holidays;
        - ``temperature`` (float64): half-hourly temperature in Melbourne, degrees Celsius
          (Bureau of Meteorology site 086071).

    (X, y) : tuple of (pandas.DataFrame, pandas.Series)
        With ``return_X_y=True``: ``X`` holds the columns ``workday`` and ``temperature``, ``y``
        the series ``demand``; both share the index above.

    Notes
    -----
    Each stamp labels the start of its half hour: rows ``48 k`` to ``48 k + 47`` are day ``k``
    of 2014 (the work-day flag changes only at those rows and matches the 2014 holidays of
    Victoria). The grid has no daylight-saving jumps. The work-day flag is known in advance;
    temperature is observed, so forecasting with it as a covariate needs a weather forecast for
    the future rows (or assumes a perfect one). Six temperatures (e.g. 16.733333) are not on
    the 0.1 °C grid of the others: they look interpolated in the source and are kept as
    published. Source (AEMO, Bureau of Meteorology via fpp2) and licence in
    ``datasets/README.md``.

    Examples
    --------
    >>> from tsrnn.datasets import load_electricity_demand
    >>> frame = load_electricity_demand()
    >>> frame.shape, frame.index.freqstr, frame.columns.tolist()
    ((17520, 3), '30min', ['demand', 'workday', 'temperature'])
    >>> X, y = load_electricity_demand(return_X_y=True)
    >>> X.columns.tolist(), y.name, round(float(y.max()), 6)
    (['workday', 'temperature'], 'demand', 9.345004)
    """
    if not isinstance(return_X_y, (bool, np.bool_)):
        raise TypeError(
            f"The 'return_X_y' parameter of load_electricity_demand must be a bool. "
            f"Got {return_X_y!r} instead."
        )
    frame = _read_csv(
        "electricity_demand.csv.gz",
        dtype={"demand": "float64", "workday": "int64", "temperature": "float64"},
    )
    index = pd.DatetimeIndex(
        pd.to_datetime(frame.pop("time"), format="%Y-%m-%d %H:%M"), freq="30min", name="time"
    )
    frame.index = index
    if return_X_y:
        return frame[["workday", "temperature"]], frame["demand"]
    return frame


def load_us_change() -> pd.DataFrame:
    """Quarterly percentage changes of five US economic series, 1970 Q1 to 2016 Q3.

    R's ``fpp2::uschange``: 187 quarters of growth rates of real personal consumption
    expenditure, real personal disposable income, industrial production and personal savings,
    and the change in the unemployment rate, for the United States.

    Returns
    -------
    frame : pandas.DataFrame of float64, shape (187, 5)
        Columns ``consumption``, ``income``, ``production``, ``savings`` (percentage change on
        the previous quarter) and ``unemployment`` (change in the unemployment rate, percentage
        points), indexed by a ``DatetimeIndex`` named ``'quarter'`` of quarter starts from
        1970-01-01 to 2016-07-01 with ``freq='QS-JAN'``.

    Notes
    -----
    All five columns are observed together, so the frame is meant as a multivariate target
    (``fit(frame)``) rather than target plus covariates known in advance. R's help page says
    "1960 to 2016", but the series starts in 1970 Q1. Source (Federal Reserve Bank of
    St. Louis, FRED, via fpp2) and licence in ``datasets/README.md``.

    Examples
    --------
    >>> from tsrnn.datasets import load_us_change
    >>> frame = load_us_change()
    >>> frame.shape, frame.index.freqstr
    ((187, 5), 'QS-JAN')
    >>> frame.columns.tolist()
    ['consumption', 'income', 'production', 'savings', 'unemployment']
    >>> str(frame.index[-1].date())
    '2016-07-01'
    """
    frame = _read_csv("us_change.csv")
    frame.index = _quarterly(frame.pop("quarter"))
    return frame.astype("float64")


def load_tourism_nights() -> pd.Series:
    """Quarterly visitor nights in 20 regions of Australia, 1998 Q1 to 2016 Q4 (a panel).

    R's ``fpp2::visnights``: total domestic visitor nights, in millions, spent in twenty
    regions of six Australian states, from Tourism Research Australia's National Visitor
    Survey. Returned in the long layout of many related series: one row per (region, quarter).

    Returns
    -------
    y : pandas.Series of float64, shape (1520,)
        Named ``'visitor_nights'`` (millions of nights), with a two-level ``MultiIndex``:
        ``'region'`` (20 region codes, sorted, e.g. ``'NSWMetro'``, ``'VICInner'``) and
        ``'quarter'`` (a ``DatetimeIndex`` level of quarter starts, 1998-01-01 to
        2016-10-01). Every region has all 76 quarters.

    Notes
    -----
    A ``MultiIndex`` level cannot carry a ``freq``: the frequency is quarterly, quarter start
    (``'QS-JAN'``); ``y.loc[region].asfreq("QS")`` gives one region with its ``freq`` set, and
    ``y.unstack("region")`` the wide table (regions in sorted order, not the file's). The
    region codes are a state prefix (NSW, QLD, SAU, VIC, WAU, OTH = other states and
    territories) and an area: Metro, NthCo / SthCo / WstCo / EstCo (coasts), Cntrl, Coast,
    Inner, NthIn / SthIn (inland), NoMet (non-metropolitan). Source and licence in
    ``datasets/README.md``.

    Examples
    --------
    >>> from tsrnn.datasets import load_tourism_nights
    >>> y = load_tourism_nights()
    >>> y.shape, list(y.index.names)
    ((1520,), ['region', 'quarter'])
    >>> y.index.get_level_values("region").nunique()
    20
    >>> vic = y.loc["VICMetro"].asfreq("QS")
    >>> len(vic), vic.index.freqstr, str(vic.index[0].date())
    (76, 'QS-JAN', '1998-01-01')
    """
    wide = _read_csv("tourism_nights.csv")
    quarters = _quarterly(wide.pop("quarter"))
    regions = sorted(wide.columns)
    index = pd.MultiIndex.from_product([regions, quarters], names=["region", "quarter"])
    values = wide[regions].to_numpy(dtype="float64").T.ravel()
    return pd.Series(values, index=index, name="visitor_nights")
