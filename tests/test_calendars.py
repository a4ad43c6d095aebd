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
        ValueError, match=r"monthly time stamps on day 15 .*asfreq\(pd.DateOffset\(months=1\)\)"
    ):
        RNNForecaster(**TINY).fit(bare)
    # quarterly ones too (they were told of "no regular frequency"), and the offset works
    quarters = pd.date_range("2010-02-15", periods=40, freq=pd.DateOffset(months=3))
    with pytest.raises(
        ValueError, match=r"quarterly time stamps on day 15 .*months=3.*to_period\('Q'\)"
    ):
        RNNForecaster(**TINY).fit(wave(pd.DatetimeIndex(list(quarters))))
    model = RNNForecaster(**TINY).fit(wave(quarters))
    assert model.seasonal_period_ == 4
    assert list(model.predict(1).index) == [pd.Timestamp("2020-02-15")]


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
    with pytest.raises(ValueError, match="not on the 'B' grid"):
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



@pytest.mark.parametrize(
    "freq, start, new_freq",
    [("B", "2024-03-25", "D"), ("W-SUN", "2024-03-24", "7D"), ("D", "2024-03-23", "24h")],
)
def test_update_takes_rows_on_the_grid_whatever_frequency_their_index_carries(
    freq, start, new_freq
):
    """pd.date_range("2024-03-25", periods=3) sets freq 'D' on three weekdays of a business-day
    model: on its grid, as predict and score take them. update refused them ("frequency 'D'
    but the model was fitted on data of 'B'")."""
    y = wave(pd.date_range(end="2024-03-22", periods=60, freq=freq))
    n = 1 if freq == "B" else 3  # one weekday: the next three calendar days are not all 'B'
    new = wave(pd.date_range(start, periods=n, freq=new_freq))
    assert new.index.freq != y.index.freq
    model = RNNForecaster(**TINY).fit(y).update(new)
    plain = RNNForecaster(**TINY).fit(y).update(new.set_axis(list(new.index)))  # no freq
    pd.testing.assert_series_equal(model.predict(2), plain.predict(2))


@pytest.mark.parametrize(
    "freq, start, split", [("D", "2024-02-01", "2024-03-28"), ("W-SUN", "2023-06-04",
                                                               "2024-03-17"),
                           ("MS", "2020-01-01", "2024-02-01")]
)
def test_update_takes_the_same_instants_in_another_zone_across_daylight_saving(
    freq, start, split
):
    """Rows in another time zone are the same instants (api-notes): they were checked in their
    own zone, where Paris days across the spring change are not all 24 hours apart in UTC
    (refused as irregular, or as another frequency)."""
    y = wave(pd.date_range(start, periods=70, freq=freq, tz="Europe/Paris"))
    at = int(np.searchsorted(y.index, pd.Timestamp(split, tz="Europe/Paris")))
    train, new = y[:at], y[at : at + 5]
    assert new.index[0] < pd.Timestamp("2024-03-31", tz="Europe/Paris") < new.index[-1]
    same = RNNForecaster(**TINY).fit(train).update(new)
    other = RNNForecaster(**TINY).fit(train).update(new.tz_convert("UTC"))
    pd.testing.assert_series_equal(other.predict(2), same.predict(2))
    assert str(other.predict(2).index.tz) == "Europe/Paris"


@pytest.mark.parametrize("fixed, named, period", [("7D", "W-WED", 52), ("24h", "D", 7)])
def test_fixed_length_steps_get_the_season_of_their_length(fixed, named, period):
    """'7D' stamps are weekly ones (2020-01-01 is a Wednesday), '24h' daily ones: they got a
    seasonal period of 1, another window and another model than the same stamps named 'W-WED'
    or 'D'."""
    values = 10 + np.sin(2 * np.pi * np.arange(200) / period)
    models = [
        RNNForecaster(**TINY).fit(
            pd.Series(values, pd.date_range("2020-01-01", periods=200, freq=f))
        )
        for f in (fixed, named)
    ]
    assert models[0].seasonal_period_ == models[1].seasonal_period_ == period
    assert models[0].window_ == models[1].window_
    np.testing.assert_array_equal(models[0].predict(3).to_numpy(), models[1].predict(3).to_numpy())


@pytest.mark.parametrize(
    ("offset", "period"),
    [("bh", 8), ("2bh", 4), ("cbh", 8), (pd.offsets.BusinessHour(start="08:30", end="14:30"), 6)],
)
def test_business_hours_get_the_season_of_a_business_day(offset, period):
    """Business hours step through the business day and skip the night: their season is the
    steps of one business day (8 from 9 to 17). They got a seasonal period of 1, and no
    seasonal base, where hourly data gets 24."""
    index = pd.date_range("2024-01-01 09:00", periods=240, freq=offset)
    values = 10 + np.sin(2 * np.pi * np.arange(240) / period)
    model = RNNForecaster(**TINY).fit(pd.Series(values, index))
    assert model.seasonal_period_ == period
    assert model._seasonal_ is not None and model._seasonal_.all()
    future = model.predict(3).index
    assert future[0] == index[-1] + index.freq


def test_daily_stamps_through_a_skipped_midnight_get_a_fix_that_works():
    """Where daylight saving starts at midnight (America/Santiago, 8 September 2024) pandas
    has no 'D' stamp for that day: predict failed with pandas' "Try using the 'nonexistent'
    argument", which predict does not take."""
    index = pd.date_range("2024-07-01", "2024-09-05", freq="D", tz="America/Santiago")
    model = RNNForecaster(**TINY).fit(wave(index))
    assert len(model.predict(2)) == 2  # up to 7 September: no skipped midnight
    with pytest.raises(ValueError, match=r"skip or repeat.*2024-09-08.*tz_localize\(None\)"):
        model.predict(7)
    local = RNNForecaster(**TINY).fit(wave(index).tz_localize(None))
    assert local.predict(7).index[-1] == pd.Timestamp("2024-09-12")


def test_frequency_inference_in_threads_leaves_the_warning_filters_as_they_were():
    """warnings.catch_warnings saves and restores the one filter list: threads inferring
    frequencies at once left an "ignore DeprecationWarning" filter in place for good (the
    rest of the process then hid them). tsrnn's own uses now take turns."""
    import threading
    import warnings

    from tsrnn import _data

    index = pd.date_range("2000", periods=60, freq="D")
    before = list(warnings.filters)

    def work():
        for _ in range(1000):
            _data.inferred_freq(index)
            _data.as_offset("M")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert list(warnings.filters) == before


@pytest.mark.parametrize(
    ("freq", "start", "expected"),
    [
        ("SMS", "2020-01-15", ["2022-07-15", "2022-08-01", "2022-08-15"]),
        ("SME", "2020-01-15", ["2022-07-15", "2022-07-31", "2022-08-15"]),
        ("SMS-10", "2020-01-15", ["2022-08-01", "2022-08-10", "2022-09-01"]),
        ("2B", "2020-01-15", ["2020-07-01", "2020-07-03", "2020-07-07"]),
        ("2bh", "2020-01-06 09:00", ["2020-01-27 09:00", "2020-01-27 11:00", "2020-01-27 13:00"]),
    ],
)
def test_frequencies_pandas_does_not_infer_are_found_for_series_and_panels(freq, start, expected):
    """Semi-monthly stamps (and business days or hours taken two at a time) read from a file
    carry no frequency, and pd.infer_freq finds none: a series was refused with a guess,
    asfreq('2W-THU'), that emptied most of its rows, and a panel could not be fitted at all
    (a level carries no frequency; the suggested fix gave back the same panel)."""
    stamps = pd.DatetimeIndex(list(pd.date_range(start, periods=60, freq=freq)))
    assert stamps.freq is None
    y = pd.Series(np.sin(np.arange(60) / 2), stamps)
    model = RNNForecaster(**TINY).fit(y)
    assert list(model.predict(3).index) == list(pd.DatetimeIndex(expected))
    panel = pd.concat({"a": y, "b": y.iloc[3:]}, names=["id", "t"])
    forecast = RNNForecaster(**TINY).fit(panel).predict(3)
    assert list(forecast.loc["a"].index) == list(pd.DatetimeIndex(expected))


def test_business_hours_with_a_missing_hour_are_told_to_take_bh_not_h():
    """The fix named asfreq('h'), which filled nights and weekends: 65 of 104 rows NaN."""
    stamps = pd.date_range("2020-01-06 09:00", periods=104, freq="bh").delete(10)
    y = pd.Series(np.arange(103.0), pd.DatetimeIndex(list(stamps)))
    with pytest.raises(ValueError, match=r"y = y\.asfreq\('bh'\)"):
        RNNForecaster(**TINY).fit(y)


def test_three_monthly_stamps_are_not_read_as_business_days_taken_21_at_a_time():
    """Three month starts can lie 21 business days apart by chance (2016-01-01, 02-01,
    03-01): the grid search needs four stamps."""
    from tsrnn._data import _uninferred_grid

    assert _uninferred_grid(pd.DatetimeIndex(["2016-01-01", "2016-02-01", "2016-03-01"])) is None
    four = pd.DatetimeIndex(["2020-01-06", "2020-01-08", "2020-01-10", "2020-01-14"])
    assert _uninferred_grid(four) == "2B"
