"""Frequencies whose string loses part of them, and rows appended to or scored on a model's grid:
the forecaster keeps to the training data's calendar."""

import numpy as np
import pandas as pd
import pytest

from tsrnn import RNNForecaster

TINY = dict(hidden_size=4, max_epochs=2, batch_size=16, random_state=0, n_threads=1)


def wave(index, name="y"):
    return pd.Series(np.sin(np.arange(len(index)) / 3), index=index, name=name)


def test_custom_business_days_keep_their_week_mask_and_holidays():
    # A Sun-Thu working week with a holiday: the string 'C' would forecast Mon-Fri days
    cbd = pd.offsets.CustomBusinessDay(weekmask="Sun Mon Tue Wed Thu", holidays=["2021-01-18"])
    index = pd.date_range("2020-10-01", "2021-01-14", freq=cbd)  # ends Thu 2021-01-14
    model = RNNForecaster(**TINY).fit(wave(index))
    assert model.freq_ == cbd
    expected = pd.date_range(index[-1], periods=5, freq=cbd)[1:]  # Sun 17, Tue 19, Wed 20, ...
    forecast = model.predict(4)
    assert forecast.index.equals(expected)
    assert pd.Timestamp("2021-01-18") not in forecast.index
    assert forecast.index[0].day_name() == "Sunday"
    # the real next working days are steps 1 and 2 (the holiday is not a step)
    np.testing.assert_array_equal(model.predict(expected[:2]).to_numpy(), forecast.to_numpy()[:2])


def test_monthly_stamps_on_a_fixed_day_with_a_date_offset():
    index = pd.date_range("2015-01-15", periods=48, freq=pd.DateOffset(months=1))
    model = RNNForecaster(**TINY).fit(wave(index))
    assert model.freq_ == pd.DateOffset(months=1)
    assert model.seasonal_period_ == 12
    forecast = model.predict(3)
    assert forecast.index.equals(
        pd.date_range("2019-01-15", periods=3, freq=pd.DateOffset(months=1))
    )
    # without the offset set, the message names the fix
    bare = wave(pd.DatetimeIndex(list(index)))
    with pytest.raises(
        ValueError, match=r"day 15 of each month.*asfreq\(pd.DateOffset\(months=1\)\)"
    ):
        RNNForecaster(**TINY).fit(bare)


def test_update_takes_a_few_business_days_without_a_frequency():
    # three weekdays read from a file have no freq and infer as 'D': they are on the 'B' grid
    index = pd.bdate_range("2021-01-01", "2021-05-21")  # ends Fri 2021-05-21
    model = RNNForecaster(**TINY).fit(wave(index))
    new = pd.Series(
        [1.0, 2.0, 3.0], index=pd.DatetimeIndex(["2021-05-24", "2021-05-25", "2021-05-26"])
    )
    model.update(new)
    assert model.predict(2).index.equals(pd.DatetimeIndex(["2021-05-27", "2021-05-28"], freq="B"))
    # rows off the grid are still refused, with the model's frequency named
    weekend = pd.Series([1.0, 2.0], index=pd.DatetimeIndex(["2021-05-29", "2021-05-30"]))
    with pytest.raises(ValueError, match="not a regular 'B' sequence"):
        model.update(weekend)
    # rows already seen: the message is update's, not predict's
    with pytest.raises(ValueError, match="update takes new rows only"):
        model.update(new)


def test_update_in_another_time_zone_keeps_the_series_zone():
    index = pd.date_range("2021-01-01", periods=100, freq="D", tz="Europe/Berlin")
    y = wave(index)
    model = RNNForecaster(**TINY).fit(y[:60])
    model.update(y[60:80].tz_convert("UTC"))  # the same instants, written in UTC
    forecast = model.predict(10)  # crosses the change to summer time on 03-28
    assert forecast.index.equals(index[80:90])
    assert str(forecast.index.tz) == "Europe/Berlin"


def test_rows_of_another_kind_or_frequency_are_named_as_such():
    index = pd.date_range("2000-01-01", periods=48, freq="MS")
    model = RNNForecaster(**TINY).fit(wave(index))
    periods = pd.Series([1.0, 2.0, 3.0], index=pd.period_range("2004-01", periods=3, freq="M"))
    with pytest.raises(
        TypeError, match="period index but the model was fitted on data with a datetime"
    ):
        model.update(periods)
    daily = pd.Series([1.0, 2.0, 3.0], index=pd.date_range("2004-01-01", periods=3, freq="D"))
    with pytest.raises(ValueError, match="frequency 'D' but the model was fitted on data of 'MS'"):
        model.update(daily)

    monthly = RNNForecaster(**TINY).fit(wave(pd.period_range("2000-01", periods=48, freq="M")))
    quarters = pd.period_range("2004Q1", periods=2, freq="Q")
    with pytest.raises(
        ValueError, match=r"PeriodIndex of frequency 'Q-DEC' but the training data had 'M'"
    ):
        monthly.predict(quarters)
