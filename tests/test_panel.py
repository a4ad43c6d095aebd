"""Many series, one global model: panel layout, per-series indexes and scaling, PanelSplit."""

import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.model_selection import GridSearchCV, cross_val_score

from tsrnn import RNNForecaster, _data
from tsrnn._data import TimeAxis, WindowPlan, future_index, future_labels
from tsrnn.model_selection import PanelSplit

TINY = dict(hidden_size=4, max_epochs=2, batch_size=16, random_state=0, n_threads=1)


def make_panel(
    specs=(("a", "2000-01", 40, 1.0), ("b", "2001-03", 30, 1000.0), ("c", "2000-07", 36, 0.01)),
):
    """A panel of series with different starts, lengths and scales."""
    parts = []
    for k, (sid, start, n, scale) in enumerate(specs):
        t = np.arange(n)
        values = scale * (10 + np.sin(2 * np.pi * t / 12 + k) + 0.05 * t)
        index = pd.MultiIndex.from_arrays(
            [[sid] * n, pd.date_range(start, periods=n, freq="MS")], names=["store", "month"]
        )
        parts.append(pd.Series(values, index=index, name="sales"))
    return pd.concat(parts)


def ends(panel):
    return {sid: g.index.get_level_values(1)[-1] for sid, g in panel.groupby(level=0)}


def test_predict_h_gives_every_series_in_the_panel_layout():
    panel = make_panel()
    model = RNNForecaster(**TINY).fit(panel)
    out = model.predict(4)
    assert isinstance(out, pd.Series) and out.name == "sales"
    assert out.index.names == ["store", "month"]
    assert list(out.index.get_level_values(0)) == ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    for sid, last in ends(panel).items():
        expected = pd.date_range(last, periods=5, freq="MS")[1:]
        got = out.xs(sid).index
        assert list(got) == list(expected)
    assert model.n_series_ == 3 and model.freq_ == "MS"
    assert model.mase_scale_.shape == (3, 1)


def test_each_series_is_scaled_on_its_own():
    panel = make_panel()
    out = RNNForecaster(**TINY).fit(panel).predict(3)
    for sid, scale in (("a", 1.0), ("b", 1000.0), ("c", 0.01)):
        # forecasts come back in each series' own units
        assert 5 * scale < out.xs(sid).mean() < 20 * scale


def test_panel_dataframe_target():
    panel = make_panel()
    frame = pd.DataFrame({"sales": panel, "returns": panel * 0.1})
    out = RNNForecaster(**TINY).fit(frame).predict(2)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["sales", "returns"]
    assert len(out) == 6


def test_predict_rows_per_series_with_subsets_and_gaps():
    panel = make_panel()
    model = RNNForecaster(**TINY).fit(panel)
    full = model.predict(5)
    # only series b, 2 steps after a gap of 3; series a, the first 2 steps
    b_times = pd.date_range(ends(panel)["b"], periods=6, freq="MS")[4:]
    a_times = pd.date_range(ends(panel)["a"], periods=3, freq="MS")[1:]
    rows = pd.MultiIndex.from_arrays(
        [["b", "b", "a", "a"], b_times.append(a_times)], names=["store", "month"]
    )
    out = model.predict(pd.Series(0.0, index=rows))
    pd.testing.assert_index_equal(out.index, rows)
    np.testing.assert_allclose(out.xs("b").to_numpy(), full.xs("b").to_numpy()[3:5])
    np.testing.assert_allclose(out.xs("a").to_numpy(), full.xs("a").to_numpy()[:2])


def test_predict_unknown_series_raises():
    panel = make_panel()
    model = RNNForecaster(**TINY).fit(panel)
    rows = pd.MultiIndex.from_arrays([["zzz"], [pd.Timestamp("2004-01-01")]])
    with pytest.raises(ValueError, match=r"series not seen by fit: \['zzz'\].*refit it with their"):
        model.predict(pd.Series(0.0, index=rows))
    with pytest.raises(TypeError, match="fitted on a panel"):
        model.predict(np.zeros(3))


def test_panel_rows_must_be_grouped():
    panel = make_panel()
    shuffled = panel.iloc[np.random.default_rng(0).permutation(len(panel))]
    with pytest.raises(ValueError, match=r"not contiguous.*sort_index"):
        RNNForecaster(**TINY).fit(shuffled)


def test_panel_series_too_short_is_named():
    panel = make_panel((("long", "2000-01", 40, 1.0), ("tiny", "2002-01", 3, 1.0)))
    with pytest.raises(ValueError, match=r"Series 'tiny' of y is too short"):
        RNNForecaster(window=12, **TINY).fit(panel)


def test_panel_frequencies_must_agree():
    a = make_panel((("a", "2000-01", 30, 1.0),))
    b = pd.Series(
        np.arange(30.0),
        index=pd.MultiIndex.from_arrays(
            [["b"] * 30, pd.date_range("2000-01-01", periods=30, freq="D")]
        ),
    )
    with pytest.raises(ValueError, match="share one frequency"):
        RNNForecaster(**TINY).fit(pd.concat([a, b]))


def test_update_and_score_per_series():
    panel = make_panel()
    test = panel.groupby(level=0).tail(4)
    train = panel.drop(test.index)
    model = RNNForecaster(**TINY).fit(train)
    # score: negative MASE per series (own training scale), averaged over series
    pred = model.predict(test)
    per_series = []
    for k, sid in enumerate(["a", "b", "c"]):
        err = np.abs(pred.xs(sid) - test.xs(sid)).mean()
        per_series.append(err / model.mase_scale_[k, 0])
    assert model.score(test) == pytest.approx(-np.mean(per_series))
    # update with the observed rows of two series: their forecasts move on, c's do not
    before = model.predict(1)
    model.update(test.loc[["a", "b"]])
    after = model.predict(1)
    for sid in ("a", "b"):
        assert after.xs(sid).index[0] == ends(panel)[sid] + pd.offsets.MonthBegin(1)
    assert after.xs("c").index[0] == before.xs("c").index[0]
    np.testing.assert_allclose(after.xs("c").to_numpy(), before.xs("c").to_numpy())
    with pytest.raises(ValueError, match="continue the series right after its end"):
        model.update(test.loc[["c"]].iloc[1:])


def test_panel_with_covariates():
    panel = make_panel()
    X = pd.DataFrame(
        {"month": panel.index.get_level_values(1).month.astype(float)}, index=panel.index
    )
    test = panel.groupby(level=0).tail(3)
    train = panel.drop(test.index)
    model = RNNForecaster(**TINY).fit(X.loc[train.index], train)
    out = model.predict(X.loc[test.index])
    pd.testing.assert_index_equal(out.index, test.index)
    assert np.isfinite(model.score(X.loc[test.index], test))


def test_score_with_covariates_pairs_x_and_y_by_index_or_takes_arrays_in_x_order():
    panel = make_panel()
    X = pd.DataFrame(
        {"month": panel.index.get_level_values(1).month.astype(float)}, index=panel.index
    )
    test = panel.groupby(level=0).tail(3)
    model = RNNForecaster(**TINY).fit(X.drop(test.index), panel.drop(test.index))
    x_test = X.loc[test.index]
    want = model.score(x_test, test)
    order = ["c", "a", "b"]
    assert model.score(x_test.loc[order], test.loc[order]) == pytest.approx(want)
    # X in another series order than y: forecasts and truths would be paired across series
    with pytest.raises(ValueError, match=r"X and y have different indexes.*align them"):
        model.score(x_test.loc[order], test)
    # an array or a list y is taken row for row with X (it has no index to check)
    assert model.score(x_test, test.to_numpy()) == pytest.approx(want)
    assert model.score(x_test, test.tolist()) == pytest.approx(want)


def test_panel_messages_name_the_fix_that_fits_a_panel():
    panel = make_panel()
    dup = pd.concat([panel, panel.iloc[[45]]]).sort_index()
    with pytest.raises(ValueError, match=r"duplicated.*y = y\.groupby\(level=\[0, 1\]\)\.mean"):
        RNNForecaster(**TINY).fit(dup)
    swapped = panel.swaplevel().sort_index()
    with pytest.raises(ValueError, match=r"time stamps first.*y = y\.swaplevel\(\)\.sort_index"):
        RNNForecaster(**TINY).fit(swapped)
    # cohorts: dates as series ids, months on book as the time; the message names that case,
    # and its fix fits
    cohorts = pd.Series(
        np.sin(np.arange(60) / 3),
        index=pd.MultiIndex.from_product(
            [pd.date_range("2020-01", periods=2, freq="MS"), range(30)], names=["cohort", "mob"]
        ),
    )
    with pytest.raises(ValueError, match=r"first level are the series ids.*astype\(str\)"):
        RNNForecaster(**TINY).fit(cohorts)
    y = cohorts.copy()
    y.index = y.index.set_levels(y.index.levels[0].astype(str), level=0)
    assert RNNForecaster(**TINY).fit(y).n_series_ == 2
    gap = panel.drop(panel.index[45])  # one month of 'b' missing
    with pytest.raises(
        ValueError,
        match=r"series 'b'.*regular 'MS' sequence.*other series.*droplevel\(0\)\.asfreq\('MS'\)",
    ):
        RNNForecaster(**TINY).fit(gap)
    ids = pd.MultiIndex.from_arrays([[7] * 12 + [8] * 12, list(range(12)) + list(range(0, 24, 2))])
    with pytest.raises(ValueError, match=r"series 8 steps by 2 .* series 7 by 1"):
        RNNForecaster(**TINY).fit(pd.Series(np.arange(24.0), index=ids))
    short = pd.Series(
        np.arange(13.0), index=pd.MultiIndex.from_arrays([[7] * 12 + [9], range(13)])
    )
    with pytest.raises(
        ValueError,
        match=r"Series 9 of y is too short.*Use a longer series or a panel without the series "
        r"too short for it \(\[9\]\)\.$",
    ):
        # window 2 (the smallest), step 1 and early stopping off: nothing else to offer
        RNNForecaster(**TINY, early_stopping=False).fit(short)


def test_panel_covariates_from_a_pipeline_without_pandas_output_say_how():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    panel = make_panel()
    X = pd.DataFrame(
        {"month": panel.index.get_level_values(1).month.astype(float)}, index=panel.index
    )
    test = panel.groupby(level=0).tail(3)
    pipe = make_pipeline(StandardScaler(), RNNForecaster(**TINY))
    pipe.fit(X.drop(test.index), panel.drop(test.index))
    with pytest.raises(TypeError, match=r"set_output\(transform='pandas'\)"):
        pipe.predict(X.loc[test.index])
    pipe.set_output(transform="pandas").fit(X.drop(test.index), panel.drop(test.index))
    assert pipe.predict(X.loc[test.index]).index.equals(test.index)


def test_panel_with_integer_time_labels_rows_numbered_from_zero_by_their_real_steps():
    # rows labelled 0, 1 carry no position (as for one series): they continue each series,
    # and the forecasts are labelled with the steps they are, not with 0, 1
    values = np.sin(np.arange(30) / 3) + 5
    panel = pd.concat(
        [
            pd.Series(values, index=pd.MultiIndex.from_arrays([[s] * 30, start + np.arange(30)]))
            for s, start in (("a", 10), ("b", 100))
        ]
    ).rename_axis(["id", "t"])
    model = RNNForecaster(**TINY).fit(panel)
    rows = pd.DataFrame(index=pd.MultiIndex.from_arrays([["b", "b", "a"], [0, 1, 0]]))
    out = model.predict(rows)
    assert list(out.index) == [("b", 130), ("b", 131), ("a", 40)]
    assert out.index.names == ["id", "t"]
    np.testing.assert_array_equal(out.loc["b"].to_numpy(), model.predict(2).loc["b"].to_numpy())


def test_dated_panel_labels_rows_numbered_from_zero_by_their_dates():
    # as for one dated series: rows 0, 1, 2 continue each series and get its future stamps
    panel = make_panel()
    model = RNNForecaster(**TINY).fit(panel)
    rows = pd.DataFrame(index=pd.MultiIndex.from_product([["c", "a"], range(3)]))
    out = model.predict(rows)
    expected = model.predict(3).loc[["c", "a"]]
    assert out.index.equals(expected.index)
    assert isinstance(out.index.get_level_values(1), pd.DatetimeIndex)
    np.testing.assert_array_equal(out.to_numpy(), expected.to_numpy())


@pytest.mark.parametrize("dtype", ["category", "int32", "str"])
def test_forecasts_keep_the_series_ids_dtype(dtype):
    panel = make_panel()
    ids = pd.Index(panel.index.get_level_values(0).map({"a": 1, "b": 2, "c": 3})).astype(dtype)
    panel.index = pd.MultiIndex.from_arrays([ids, panel.index.get_level_values(1)])
    model = RNNForecaster(**TINY).fit(panel)
    out = model.predict(2)
    assert out.index.get_level_values(0).dtype == ids.dtype
    assert list(out.index.get_level_values(0)) == list(ids.unique().repeat(2))


def test_window_plan_matches_brute_force_enumeration():
    offsets = np.array([0, 40, 70, 76])
    window, horizon, lead = 5, 2, 3
    n_valid = np.array([4, 3, 2])
    plan = WindowPlan(offsets, window, horizon, n_valid, lead)
    expected_train, expected_valid = [], []
    for k in range(3):
        n, cut = offsets[k + 1] - offsets[k], offsets[k + 1] - offsets[k] - n_valid[k]
        for s in range(n):
            last_input = s + lead + window - 1
            if last_input + horizon <= cut - 1:
                expected_train.append(offsets[k] + s)
            if s >= 0 and cut - 1 <= last_input <= n - 1 - horizon:
                expected_valid.append(offsets[k] + s)
    assert plan.train_starts(np.arange(plan.n_train)).tolist() == expected_train
    assert plan.valid_starts(np.arange(plan.n_valid_windows)).tolist() == expected_valid


# ---------------------------------------------------------------------------------------------
# PanelSplit
# ---------------------------------------------------------------------------------------------


def test_panel_split_cuts_every_series_at_the_same_time_points():
    panel = make_panel()
    times = panel.index.get_level_values(1)
    ids = panel.index.get_level_values(0)
    splits = list(PanelSplit(n_splits=3, test_size=4).split(panel))
    assert len(splits) == 3
    stamps = np.sort(times.unique())
    for i, (train, test) in enumerate(splits):
        test_stamps = stamps[len(stamps) - (3 - i) * 4 :][:4]
        assert set(times[test]) <= set(test_stamps)
        assert times[train].max() < test_stamps[0]
        assert set(times[test]) == set(test_stamps) & set(times[np.isin(ids, ids[train])])
        # every series present in both parts is cut at the same stamp
        for sid in set(ids[test]):
            assert times[train][ids[train] == sid].max() < test_stamps[0]
    # training sets grow
    assert len(splits[0][0]) < len(splits[1][0]) < len(splits[2][0])


def test_panel_split_gap_and_late_series():
    panel = make_panel((("old", "2000-01", 40, 1.0), ("new", "2003-02", 3, 1.0)))
    train, test = next(iter(PanelSplit(n_splits=1, test_size=3, gap=2).split(panel)))
    times = panel.index.get_level_values(1)
    ids = panel.index.get_level_values(0)
    assert times[train].max() == pd.Timestamp("2002-11-01")  # 2 stamps left out
    assert set(ids[test]) == {"old"}  # 'new' has no history before the cut
    assert PanelSplit(n_splits=4).get_n_splits() == 4


def test_panel_split_errors():
    with pytest.raises(TypeError, match="TimeSeriesSplit"):
        list(PanelSplit().split(np.zeros(10)))
    with pytest.raises(ValueError, match="too few"):
        list(PanelSplit(n_splits=5, test_size=20).split(make_panel()))
    with pytest.raises(ValueError, match="'gap' parameter"):
        list(PanelSplit(gap=-1).split(make_panel()))
    # more folds than stamps: the derived test_size is 0, said as such (it read "28 distinct
    # time stamps, too few ... (at least 1 are needed)")
    n_times = make_panel().index.get_level_values(1).nunique()
    with pytest.raises(ValueError, match=rf"{n_times} distinct .* at least {n_times + 3} are"):
        list(PanelSplit(n_splits=n_times + 2).split(make_panel()))
    # a gap that is what leaves too few stamps is named in the fix
    n_times = make_panel().index.get_level_values(1).nunique()
    with pytest.raises(ValueError, match=r"with gap=.*Lower n_splits or test_size or gap\."):
        list(PanelSplit(n_splits=1, test_size=n_times - 1, gap=1).split(make_panel()))
    # booleans are not counts (True would silently mean one fold)
    for params in ({"n_splits": True}, {"gap": False}, {"test_size": True}):
        with pytest.raises(ValueError, match=f"'{next(iter(params))}' parameter"):
            list(PanelSplit(**params).split(make_panel()))
    # 'b' starts the month after 'a' ends: the first fold's test window has no trained series
    relay = make_panel((("a", "2000-01", 40, 1.0), ("b", "2003-05", 40, 1.0)))
    with pytest.raises(ValueError, match=r"Fold 0 of PanelSplit has no test rows.*Lower n_split"):
        list(PanelSplit(n_splits=4, test_size=10).split(relay))
    # a missing stamp sorted last and was named as a fold's end ("from ... to NaT")
    panel = make_panel()
    times = panel.index.get_level_values(1).to_numpy().copy()
    times[5] = np.datetime64("NaT")
    holed = panel.set_axis(pd.MultiIndex.from_arrays([panel.index.get_level_values(0), times]))
    with pytest.raises(ValueError, match=r"1 missing stamp\(s\) .*, the first in row 5"):
        list(PanelSplit(n_splits=2).split(holed))
    # rows without a series id matched no series and fell out of every fold, unsaid
    ids = panel.index.get_level_values(0).to_numpy().astype(object)
    ids[7:9] = np.nan
    nameless = panel.set_axis(pd.MultiIndex.from_arrays([ids, panel.index.get_level_values(1)]))
    with pytest.raises(ValueError, match=r"2 missing id\(s\) .*, the first in row 7"):
        list(PanelSplit(n_splits=2).split(nameless))


def test_panel_split_min_train_size_leaves_out_series_too_short_in_a_fold():
    # 'new' starts two months before the first cut: 2 training rows there, 8 and 14 later
    panel = make_panel(
        (("a", "2000-01", 54, 1.0), ("b", "2000-01", 54, 1.0), ("new", "2002-11", 20, 1.0))
    )
    ids = panel.index.get_level_values(0)
    cv = PanelSplit(n_splits=3, test_size=6)
    assert [int((ids[tr] == "new").sum()) for tr, _ in cv.split(panel)] == [2, 8, 14]
    with pytest.raises(ValueError, match="Series 'new' of y is too short"):
        cross_val_score(RNNForecaster(**TINY), panel, cv=cv, error_score="raise")
    cv = PanelSplit(n_splits=3, test_size=6, min_train_size=5)
    folds = list(cv.split(panel))
    assert [int((ids[tr] == "new").sum()) for tr, _ in folds] == [0, 8, 14]
    assert [int((ids[te] == "new").sum()) for _, te in folds] == [0, 6, 6]
    for tr, te in folds:  # the others take part in full
        assert int((ids[tr] == "a").sum()) > 0 and int((ids[te] == "a").sum()) == 6
    scores = cross_val_score(
        RNNForecaster(**TINY, window=3), panel, cv=cv, error_score="raise"
    )
    assert np.isfinite(scores).all()
    with pytest.raises(ValueError, match="'min_train_size' parameter"):
        list(PanelSplit(min_train_size=0).split(panel))


def test_grid_search_with_panel_split():
    panel = make_panel()
    cv = PanelSplit(n_splits=2, test_size=3)
    search = GridSearchCV(RNNForecaster(**TINY), {"hidden_size": [3, 5]}, cv=cv).fit(panel)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all() and (scores < 0).all()
    train, test = next(iter(cv.split(panel)))
    model = RNNForecaster(**dict(TINY, hidden_size=3)).fit(panel.iloc[train])
    assert search.cv_results_["split0_test_score"][0] == pytest.approx(
        model.score(panel.iloc[test])
    )
    assert len(search.predict(2)) == 6


def test_cross_val_score_with_panel_split_and_gap():
    scores = cross_val_score(
        RNNForecaster(**TINY), make_panel(), cv=PanelSplit(n_splits=2, test_size=3, gap=2)
    )
    assert np.isfinite(scores).all()


def test_target_array_beside_panel_covariates_scores_updates_and_cross_validates():
    """fit(X_panel, y_array) takes the series from X's index (PanelSplit's docstring offers
    the layout); score raised an AttributeError (no index on the array forecasts), update a
    TypeError asking for the MultiIndex X_new had, cross_val_score the AttributeError."""
    t = pd.date_range("2000-01", periods=60, freq="MS")
    idx = pd.MultiIndex.from_product([["a", "b"], t], names=["id", "time"])
    values = 10 + np.sin(np.arange(120) / 2)
    X = pd.DataFrame({"promo": (np.arange(120) % 3 == 0).astype(float)}, index=idx)
    y = pd.Series(values, index=idx)
    train = idx.get_level_values(1) < "2004-07"
    arr = RNNForecaster(**TINY).fit(X[train], values[train])
    ser = RNNForecaster(**TINY).fit(X[train], y[train])
    test = ~train
    assert arr.score(X[test], values[test]) == ser.score(X[test], y[test])
    new, after = X[test].iloc[[0, 6]], X[test].iloc[[1, 7]]
    arr.update(new, values[test][[0, 6]])
    ser.update(new, y[test].iloc[[0, 6]])
    np.testing.assert_array_equal(np.asarray(arr.predict(after)), ser.predict(after).to_numpy())
    cv = PanelSplit(n_splits=2, test_size=6)
    np.testing.assert_array_equal(
        cross_val_score(RNNForecaster(**TINY), X, values, cv=cv, error_score="raise"),
        cross_val_score(RNNForecaster(**TINY), X, y, cv=cv, error_score="raise"),
    )


def _three_series(n=48):
    t = pd.date_range("2000-01", periods=n, freq="MS")
    idx = pd.MultiIndex.from_product([["a", "b", "c"], t], names=["id", "time"])
    return pd.Series(10 + np.sin(np.arange(3 * n) / 2), index=idx), t


def test_missing_values_in_a_panel_are_located_by_series_and_filled_within_each():
    """The message gave flat row numbers and advised y.ffill() / X.ffill(), which on a long
    panel carry one series' last values into the next series' first rows."""
    y, t = _three_series()
    y[("b", t[0]) : ("b", t[2])] = np.nan
    with pytest.raises(ValueError, match=r"series 'b' at 2000-01-01.*groupby\(level=0\)\.ffill"):
        RNNForecaster(**TINY).fit(y)
    X = pd.DataFrame({"price": 1.0}, index=y.index)
    X.loc[("c", t[5]), "price"] = np.nan
    with pytest.raises(ValueError, match=r"'price', first in series 'c' at 2000-06-01.*groupby"):
        RNNForecaster(**TINY).fit(X, y.fillna(0.0))


def test_panel_messages_name_the_series_and_a_panel_fix():
    y, _ = _three_series()
    model = RNNForecaster(**TINY).fit(y)
    f = model.predict(3)
    # duplicated rows: groupby(level=0).mean() would collapse each series to one row
    with pytest.raises(ValueError, match=r"groupby\(level=\[0, 1\]\)"):
        model.predict(pd.concat([f, f.iloc[[2]]]).sort_index())
    # another kind of time level: a plain array is no fix for a panel
    periods = f.set_axis(pd.MultiIndex.from_arrays(
        [f.index.get_level_values(0), f.index.get_level_values(1).to_period("M")]))
    with pytest.raises(TypeError, match=r"rows indexed like the training data\.$"):
        model.predict(periods)
    # time stamps as text: to_datetime on the whole MultiIndex fails, reset_index loses it
    text = y.set_axis(pd.MultiIndex.from_arrays(
        [y.index.get_level_values(0), y.index.get_level_values(1).strftime("%Y-%m-%d")]))
    with pytest.raises(TypeError, match=r"set_levels\(pd\.to_datetime"):
        RNNForecaster(**TINY).fit(text)
    # a missing id: sorting cannot fix it
    ids = np.where(y.index.get_level_values(0) == "c", None, y.index.get_level_values(0))
    with pytest.raises(ValueError, match=r"48 row\(s\) without a series id.*notna"):
        RNNForecaster(**TINY).fit(y.set_axis(pd.MultiIndex.from_arrays(
            [ids, y.index.get_level_values(1)])))
    # update and future covariates: which series
    rows = pd.MultiIndex.from_arrays([["a", "b"], pd.DatetimeIndex(["2004-01", "2004-02"])])
    with pytest.raises(ValueError, match=r"y_new \(series 'b'\) must continue"):
        model.update(pd.Series(1.0, index=rows))
    X = pd.DataFrame({"promo": 1.0}, index=y.index)
    with_x = RNNForecaster(**TINY).fit(X, y)
    gap = pd.MultiIndex.from_arrays([["a", "a", "b", "b"], pd.DatetimeIndex(
        ["2004-01", "2004-02", "2004-01", "2004-03"])])
    with pytest.raises(ValueError, match=r"series 'b' \(it skips 1 step after 2004-01-01.*update"):
        with_x.predict(pd.DataFrame({"promo": 1.0}, index=gap))


def test_the_order_of_a_panels_series_does_not_change_the_model():
    """Window numbers followed the series blocks' order, so the same panel from a database in
    another row order trained on other batches (forecasts 0.014 apart here). Windows are now
    numbered in the ids' sorted order: the same weights; the forecasts differ only by float32
    rounding of rows at other places in predict's batch."""
    rng = np.random.default_rng(0)
    t = pd.date_range("2000-01", periods=72, freq="MS")
    idx = pd.MultiIndex.from_product([list("abcde"), t], names=["id", "time"])
    season = np.sin(np.tile(np.arange(72), 5) * np.pi / 6)
    y = pd.Series(10 + 3 * season + rng.normal(0, 0.3, 360), index=idx)
    shuffled = pd.concat([y.loc[[i]] for i in "ecabd"])
    kw = dict(TINY, hidden_size=8, max_epochs=8)
    a, b = RNNForecaster(**kw).fit(y), RNNForecaster(**kw).fit(shuffled)
    for p, q in zip(a.module_.parameters(), b.module_.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    fa, fb = a.predict(12), b.predict(12).reindex(a.predict(12).index)
    np.testing.assert_allclose(fb.to_numpy(), fa.to_numpy(), rtol=1e-6)


def test_a_short_series_shrinking_the_auto_window_of_every_series_warns():
    """One new 4-row product among 72-month series cut window_ from 24 to 1 and dropped the
    seasonal base for all of them, without a word (scores about 7x worse)."""
    t = pd.date_range("2000-01", periods=72, freq="MS")
    idx = pd.MultiIndex.from_product([list("abcd"), t], names=["id", "time"])
    y = pd.Series(10 + 3 * np.sin(np.tile(np.arange(72), 4) * np.pi / 6), index=idx)
    new = pd.Series(
        [9.0, 11, 12, 10], index=pd.MultiIndex.from_product([["new"], t[-4:]], names=["id", "time"])
    )
    from tsrnn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ConvergenceWarning)  # two epochs: max_epochs's
        assert RNNForecaster(**TINY).fit(y).window_ == 24
    with pytest.warns(UserWarning, match=r"window='auto' is 2 .*\['new'\].* window of 24 and the"):
        RNNForecaster(**TINY).fit(pd.concat([y, new]))


def test_no_short_series_warning_where_no_series_is_short():
    """A panel of equal-length series none of which passes the seasonality test: the warning
    fired anyway, claiming a lost seasonal base and naming an empty list of series."""
    rng = np.random.default_rng(0)
    t = pd.date_range("2000-01-01", periods=120, freq="D")
    idx = pd.MultiIndex.from_product([list("abc"), t], names=["id", "time"])
    y = pd.Series(rng.normal(size=360).cumsum(), index=idx)  # random walks: not seasonal
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        RNNForecaster(**TINY).fit(y)
    assert not [w for w in caught if "window='auto'" in str(w.message)]


def _panel_of(index, n_series=2):
    values = np.sin(np.arange(len(index)) / 2) + 5
    return pd.concat(
        {f"s{k}": pd.Series(values + k, index=index) for k in range(n_series)},
        names=["id", "time"],
    )


def test_a_panel_counting_from_zero_refuses_its_history_given_again():
    """Each series' time 0..39: update(y) took the whole history as 40 new rows each."""
    y = _panel_of(pd.RangeIndex(40))
    model = RNNForecaster(**TINY).fit(y)
    with pytest.raises(ValueError, match=r"y_new \(series 's0'\) is numbered 0, 1, .*\(39\)"):
        model.update(y)
    with pytest.raises(ValueError, match=r"X \(series 's0'\) is numbered 0, 1, .*time level"):
        model.score(_panel_of(pd.RangeIndex(5)))  # scored forecasts of 40-44 against 0-4
    later = _panel_of(pd.RangeIndex(40, 43))  # the fix the message names
    model.update(later)
    assert list(model.predict(1).index) == [("s0", 43), ("s1", 43)]


def test_shared_future_covariates_get_the_fix_that_repeats_them():
    """predict(X) with covariates indexed by time alone said "or use predict(h)", and
    predict(h) said "call predict(X_future) with h rows": each sent the user to the other."""
    t = pd.date_range("2000-01", periods=40, freq="MS")
    y = _panel_of(t)
    shared = pd.DataFrame({"promo": np.arange(40) % 3}, index=t)
    model = RNNForecaster(**TINY).fit(shared.reindex(y.index, level=1), y)
    X = pd.DataFrame({"promo": [1, 2, 0]}, index=pd.date_range("2003-05", periods=3, freq="MS"))
    with pytest.raises(TypeError, match=r"same two-level index.*repeat them") as err:
        model.predict(X)
    assert "predict(h)" not in str(err.value)
    with pytest.raises(ValueError, match=r"3 rows for each series \(a \(series id, time\)"):
        model.predict(3)
    scope = {"X": X, "y": y, "pd": pd}
    exec(re.search(r"series: (X = .*)\.$", str(err.value)).group(1), scope)  # the fix named
    out = model.predict(scope["X"])
    assert list(out.index.get_level_values(0).unique()) == ["s0", "s1"] and len(out) == 6


def test_monthly_stamps_on_one_day_in_a_panel_get_a_fix_that_works_on_a_panel():
    # a level of a MultiIndex carries no frequency, so y.asfreq(...) cannot be the fix there
    dates = pd.date_range("2000-01-01", periods=40, freq="MS")
    y = _panel_of(dates + pd.Timedelta(days=14))
    # the second series on the 20th: the level's unique values fall in the same months
    stamps = list(dates + pd.Timedelta(days=14)) + list(dates + pd.Timedelta(days=19))
    y.index = pd.MultiIndex.from_arrays(
        [y.index.get_level_values(0), stamps], names=y.index.names
    )
    with pytest.raises(ValueError, match="monthly time stamps on day 15 of the month") as err:
        RNNForecaster(**TINY).fit(y)
    fix = (
        "y.index = pd.MultiIndex.from_arrays([y.index.get_level_values(0), "
        "y.index.get_level_values(1).to_period('M')], names=y.index.names)"
    )
    assert fix in str(err.value)
    exec(fix)
    out = RNNForecaster(**TINY).fit(y).predict(2)
    assert list(out.loc["s0"].index) == list(pd.period_range("2003-05", periods=2, freq="M"))


def test_a_panel_with_missing_periods_gets_a_fix_that_works_on_a_panel():
    y = _panel_of(pd.period_range("2000-01", periods=40, freq="M"))
    y = y.drop(("s1", pd.Period("2001-06", "M")))
    with pytest.raises(ValueError, match="missing periods") as err:
        RNNForecaster(**TINY).fit(y)
    fix = "y = y.groupby(level=0).apply(lambda s: s.droplevel(0).resample('M').asfreq())"
    assert fix in str(err.value)
    scope = {"y": y}
    exec(fix, scope)
    y = scope["y"].interpolate()
    assert len(y) == 80
    assert np.isfinite(RNNForecaster(**TINY).fit(y).predict(2).to_numpy()).all()


def test_a_panel_of_two_stamp_series_is_not_told_to_set_a_frequency_it_cannot_hold():
    y = _panel_of(pd.date_range("2000-01-01", periods=2, freq="MS"))
    with pytest.raises(ValueError, match="at least 3 are needed") as err:
        RNNForecaster(**TINY).fit(y)
    assert "asfreq" not in str(err.value)
    assert "Give longer series" in str(err.value)
    assert "your data's frequency in place of 'D'" in str(err.value)


@pytest.mark.parametrize("names", [["id", "time"], [None, None]])
def test_covariates_shared_by_the_series_of_a_panel_are_told_how_to_repeat_them(names):
    y = _panel_of(pd.date_range("2000-01-01", periods=40, freq="MS"), n_series=3)
    y.index = y.index.set_names(names)
    dates = y.index.get_level_values(1).unique()
    X = pd.DataFrame({"promo": np.arange(40) % 3 == 0}, index=dates).astype(float)
    with pytest.raises(ValueError, match="shared by every series") as err:
        RNNForecaster(**TINY).fit(X, y)
    fix = re.search(r"X = (X\.reindex\(.*?\))\.", str(err.value)).group(1)
    X = eval(fix, {"X": X, "y": y})
    assert len(X) == 120 and X.notna().all().all()
    model = RNNForecaster(**TINY).fit(X, y)
    assert model.n_features_in_ == 1
    # rows numbered 0, 1, ... cannot be matched to the dates: they are told to take them first
    with pytest.raises(ValueError, match="index X by the panel's time stamps"):
        RNNForecaster(**TINY).fit(pd.DataFrame({"promo": np.zeros(40)}), y)


def _one_by_one(ends, axis, steps):
    """The labels as the forecaster used to make them: one future_index per series."""
    parts = [future_index(e, axis, int(s.max()))[s - 1] for e, s in zip(ends, steps)]
    return parts[0].append(parts[1:])


@pytest.mark.parametrize(
    "kind, freq, ends",
    [
        # many distinct ends on one grid, from one range
        ("datetime", "MS", list(pd.date_range("1990-01", periods=40, freq="MS")[::3])),
        ("datetime", "B", [pd.Timestamp("2020-01-03"), pd.Timestamp("2020-01-06")] * 3),
        # zone-aware hours and days across the spring daylight-saving change
        ("datetime", "h", list(pd.date_range("2021-03-27 20:00", periods=12, freq="h",
                                             tz="Europe/Paris"))),
        ("datetime", "D", list(pd.date_range("2021-03-25", periods=5, freq="D",
                                             tz="Europe/Paris"))),
        # '7D' series ending on different weekdays: not on one grid
        ("datetime", "7D", [pd.Timestamp("2020-01-01"), pd.Timestamp("2020-01-02"),
                            pd.Timestamp("2020-01-15")]),
        ("period", "Q-DEC", list(pd.period_range("2000Q1", periods=9, freq="Q"))),
        ("range", None, [10, 31, 57]),
    ],
)
def test_panel_forecast_labels_equal_those_of_each_series_on_its_own(kind, freq, ends,
                                                                    monkeypatch):
    axis = TimeAxis(kind, freq, 3 if kind == "range" else 1, "t")
    rng = np.random.default_rng(0)
    # contiguous steps and steps with gaps (predict(X) of some rows)
    steps = [np.arange(1, 5) if j % 2 else np.sort(rng.choice(np.arange(1, 12), 4, replace=False))
             for j in range(len(ends))]
    expected = _one_by_one(ends, axis, steps)
    got = future_labels(ends, axis, steps)
    assert got.equals(expected) and got.dtype == expected.dtype and got.name == "t"
    # and end by end where the grid would be too long
    monkeypatch.setattr(_data, "MAX_FUTURE_GRID", 2)
    got = future_labels(ends, axis, steps)
    assert got.equals(expected) and got.dtype == expected.dtype


def test_predict_on_a_panel_of_many_ends_labels_each_series_after_its_own_end():
    specs = [(f"s{k}", f"{2000 + k // 12}-{1 + k % 12:02d}", 36, 1.0) for k in range(40)]
    panel = make_panel(specs)
    model = RNNForecaster(**TINY, window=6).fit(panel)
    forecast = model.predict(3)
    for sid, end in ends(panel).items():
        stamps = forecast.xs(sid, level=0).index
        assert stamps.equals(pd.date_range(end, periods=4, freq="MS", name="month")[1:])


@pytest.mark.parametrize("zone", [None, "UTC"])
def test_update_of_every_series_at_once_equals_the_series_by_series_check(zone, monkeypatch):
    n, rows = 12, 40
    parts = []
    for k in range(n):
        stamps = pd.date_range("2021-03-20", periods=rows + k, freq="h", tz="Europe/Paris")
        values = 10 + np.sin(np.arange(rows + k) / 4 + k)
        parts.append(pd.Series(values, index=pd.MultiIndex.from_arrays(
            [[f"s{k}"] * len(stamps), stamps], names=["id", "t"])))
    panel = pd.concat(parts)
    new = panel.groupby(level=0).tail(3)
    model = RNNForecaster(**TINY, window=8).fit(panel.drop(new.index))
    if zone is not None:  # the same instants, given in another zone
        new.index = new.index.set_levels(new.index.levels[1].tz_convert(zone), level=1)
    fast = pickle.loads(pickle.dumps(model)).update(new)
    monkeypatch.setattr(RNNForecaster, "_continue_their_ends", staticmethod(lambda *a: False))
    slow = pickle.loads(pickle.dumps(model)).update(new)
    assert fast._ends_ == slow._ends_ == [ends(panel)[f"s{k}"] for k in range(n)]
    pd.testing.assert_series_equal(fast.predict(2), slow.predict(2))
    # a series that skips a step is named, as series by series
    monkeypatch.undo()
    gap = new.drop(new.index[3])  # s1 starts a step late
    with pytest.raises(ValueError, match=r"series 's1'.*continue the series right after"):
        pickle.loads(pickle.dumps(model)).update(gap)


def _dated_panel(stamps_by_series):
    parts = [pd.Series(np.arange(len(st), dtype=float), index=pd.MultiIndex.from_arrays(
        [[sid] * len(st), st], names=["id", "t"])) for sid, st in stamps_by_series.items()]
    return pd.concat(parts)


@pytest.mark.parametrize(
    "stamps, on_one_grid",
    [
        ({"a": pd.date_range("2000-01", periods=30, freq="MS"),
          "b": pd.date_range("2001-07", periods=5, freq="MS"),
          "c": pd.date_range("1999-02", periods=1, freq="MS")}, True),
        ({"a": pd.date_range("2021-03-27", periods=60, freq="h", tz="Europe/Paris"),
          "b": pd.date_range("2021-03-28 05:00", periods=9, freq="h", tz="Europe/Paris")}, True),
        ({"a": pd.date_range("2020-01-01", periods=20, freq="B"),
          "b": pd.date_range("2020-01-06", periods=20, freq="B")}, True),
        # hours on the half hour beside hours on the hour: regular each, not on one grid
        ({"a": pd.date_range("2020-01-01", periods=10, freq="h"),
          "b": pd.date_range("2020-01-01 00:30", periods=12, freq="h")}, False),
    ],
)
def test_panel_time_checks_at_once_equal_the_series_by_series_checks(stamps, on_one_grid,
                                                                     monkeypatch):
    panel = _dated_panel(stamps)
    seen = []
    at_once = _data._panel_on_one_grid
    monkeypatch.setattr(_data, "_panel_on_one_grid", lambda *a: seen.append(at_once(*a)) or
                        seen[-1])
    fast = _data.check_target(panel)
    assert seen == [on_one_grid]
    monkeypatch.setattr(_data, "_panel_on_one_grid", lambda *a: False)
    slow = _data.check_target(panel)
    assert fast.axis == slow.axis
    assert all(f.equals(s) and f.name == s.name for f, s in zip(fast.index, slow.index))
    assert len(fast.index) == len(slow.index) == len(stamps)
    np.testing.assert_array_equal(fast.offsets, slow.offsets)


def test_a_gap_in_one_series_of_a_panel_on_one_grid_is_named():
    stamps = {f"s{k}": pd.date_range("2000-01", periods=24, freq="MS") for k in range(5)}
    stamps["s3"] = stamps["s3"].delete(10)
    with pytest.raises(ValueError, match=r"series 's3'\) is not a regular 'MS' sequence"):
        _data.check_target(_dated_panel(stamps))


@pytest.mark.parametrize("scaler", ["standard", "robust", "minmax"])
@pytest.mark.parametrize("n_columns", [1, 3])
def test_series_of_one_length_scaled_in_one_fit_as_each_on_its_own(scaler, n_columns):
    from sklearn.preprocessing import MinMaxScaler, RobustScaler, StandardScaler

    from tsrnn.forecaster import _fit_scaler

    rng = np.random.default_rng(0)
    lengths = [40, 7, 40, 150, 7, 40, 1]
    blocks = [rng.normal(rng.normal(0, 50), 10.0 ** rng.integers(-3, 4), (n, n_columns))
              for n in lengths]
    blocks[2][:] = 3.0  # constant
    blocks[5] *= 1e-16  # tiny: scaled through the power of two, not left in raw units
    data = _data.SeriesData(np.concatenate(blocks), np.cumsum([0, *lengths]),
                            TimeAxis(None), None)
    loc, scale = _fit_scaler(scaler, data)
    cls = {"standard": StandardScaler, "robust": RobustScaler, "minmax": MinMaxScaler}[scaler]
    for k, block in enumerate(blocks):
        factor = _data.unit_scale(block)
        alone = cls().fit(block / factor)
        np.testing.assert_allclose((block - loc[k]) / scale[k], alone.transform(block / factor),
                                   rtol=1e-12, atol=1e-12, err_msg=f"series {k}")


def test_seasons_found_in_a_panel_are_those_found_in_each_series_on_its_own():
    rng = np.random.default_rng(0)
    lengths = [60, 60, 35, 60, 9, 35, 120]
    blocks = []
    for k, n in enumerate(lengths):
        t = np.arange(n)
        season = np.sin(2 * np.pi * t / 7) * (k % 3)  # none in every third series
        blocks.append(np.c_[season + rng.normal(0, 0.3, n), 1e-12 * rng.normal(0, 1, n) + 1e6,
                            t * (k + 1.0)])
    offsets = np.cumsum([0, *lengths])
    panel = _data.SeriesData(np.concatenate(blocks), offsets, TimeAxis(None), None)
    alone = [_data.seasonal_mask(_data.SeriesData(b, np.array([0, len(b)]), TimeAxis(None),
                                                  None), 7)[0] for b in blocks]
    mask = _data.seasonal_mask(panel, 7)
    np.testing.assert_array_equal(mask, np.array(alone))
    assert mask[:, 0].sum() >= 3 and not mask[:, 1:].any()  # found where there is one


def test_a_daily_panel_across_a_midnight_the_clocks_skip_fits_predicts_and_updates():
    # Sao Paulo's clocks went from 2018-11-04 00:00 to 01:00: no series has that day, but a
    # daily grid over the whole panel would (pandas refuses to lay it)
    zone = "America/Sao_Paulo"
    stamps = {"a": pd.date_range("2018-09-01", "2018-10-20", freq="D", tz=zone),
              "b": pd.date_range("2018-11-10", "2018-12-31", freq="D", tz=zone)}
    panel = _dated_panel(stamps)
    new = panel.groupby(level=0).tail(2)
    model = RNNForecaster(**TINY, window=6).fit(panel.drop(new.index))
    model.update(new)
    forecast = model.predict(2)
    for sid, idx in stamps.items():
        want = pd.date_range(idx[-1], periods=3, freq="D", tz=zone)[1:]
        assert forecast.xs(sid, level=0).index.equals(want)


def test_integer_time_panel_update_with_one_row_for_a_series_continues_both():
    t1, t2 = np.arange(0, 90, 3), np.arange(30, 120, 3)
    index = pd.MultiIndex.from_arrays([[1] * 30 + [2] * 30, np.r_[t1, t2]], names=["id", "t"])
    model = RNNForecaster(**TINY, window=4).fit(pd.Series(np.sin(np.arange(60) / 3) + 5, index))
    new = pd.Series([5.0, 5.1, 5.2],
                    pd.MultiIndex.from_arrays([[1, 2, 2], [90, 120, 123]], names=["id", "t"]))
    model.update(new)  # series 1's one row has no step of its own to disagree with
    assert model.predict(1).index.tolist() == [(1, 93), (2, 126)]
    # a series that does step otherwise is named, against the first series that steps
    other = pd.Series([1.0, 2, 3, 4, 5],
                      pd.MultiIndex.from_arrays([[1, 2, 2, 3, 3], [96, 129, 132, 0, 2]]))
    with pytest.raises(ValueError, match=r"series 3 steps by 2 .* but series 2 by 3"):
        model.update(other)


def test_predict_rows_of_every_series_at_once_equal_the_series_by_series_plan(monkeypatch):
    specs = [(f"s{k}", f"{2000 + k // 12}-{1 + k % 12:02d}", 36, 1.0 + k) for k in range(8)]
    panel = make_panel(specs)
    test = panel.groupby(level=0).tail(4)
    model = RNNForecaster(**TINY, window=6).fit(panel.drop(test.index))
    gapped = test.drop(test.index[[4, 5]])  # s1 forecast from its third step: not at once
    fast = [model.predict(test), model.predict(gapped), model.score(test)]
    monkeypatch.setattr(RNNForecaster, "_continue_their_ends", staticmethod(lambda *a: False))
    slow = [model.predict(test), model.predict(gapped), model.score(test)]
    pd.testing.assert_series_equal(fast[0], slow[0])
    pd.testing.assert_series_equal(fast[1], slow[1])
    assert fast[2] == slow[2]
    # each series' rows forecast from its own end: the continuing rows are predict(4)'s
    pd.testing.assert_series_equal(fast[0], model.predict(4).set_axis(test.index))


def test_weight_trials_forecast_each_series_only_about_as_far_as_it_needs(monkeypatch):
    """One batch forecast every series as far as the longest validation part: a panel of 1,000
    series of 60 rows beside one of 20,000 forecast all 1,001 for 2,000 steps, five times
    (41 s of a 43 s fit). Series are now grouped by their validation rows (within a factor of
    two), and the five weights run side by side in one forecast per group."""
    from tsrnn import _training

    calls = []
    real = _training.forecast

    def recording(net, y_tail, x_tail, x_future, n_steps, *args, **kwargs):
        calls.append((len(y_tail), n_steps))
        return real(net, y_tail, x_tail, x_future, n_steps, *args, **kwargs)

    monkeypatch.setattr(_training, "forecast", recording)
    rng = np.random.default_rng(0)
    parts = {f"s{i}": rng.normal(size=60).cumsum() for i in range(30)}
    parts["long"] = rng.normal(size=3000).cumsum()
    y = pd.concat(
        {k: pd.Series(v, index=pd.date_range("2000-01-01", periods=len(v), freq="D"))
         for k, v in parts.items()},
        names=["id", "time"],
    )
    model = RNNForecaster(hidden_size=4, max_epochs=1, window=14, random_state=0,
                          n_threads=1).fit(y)
    n_w = len(_training.WEIGHTS)
    n_valid = model._prepare(y, None)["problem"].plan.n_valid
    short, long_ = int(n_valid[:-1].max()), int(n_valid[-1])
    assert long_ > 20 * short
    # two trials: the 30 short series (as far as they need), the long one alone
    assert sorted(calls[:2]) == sorted([(30 * n_w, short), (n_w, long_)])


def test_weights_whose_trial_forecasts_overflow_are_not_chosen(monkeypatch):
    """nanmean skipped NaN forecasts: a network whose forecasts overflowed was judged on the
    steps before, and kept."""
    from tsrnn import _training

    real = _training.forecast

    def overflowing(net, *args, **kwargs):
        out = real(net, *args, **kwargs)
        weight = np.asarray(args[9])
        out[weight > 0, 3:] = np.nan  # every trial with the network's outputs, from step 4
        return out

    y = pd.Series(np.sin(np.arange(600) / 4), index=pd.date_range("2000", periods=600, freq="D"))
    settings = dict(hidden_size=4, max_epochs=5, random_state=0, n_threads=1)
    assert RNNForecaster(**settings).fit(y)._weight_ > 0  # the network's outputs help here
    monkeypatch.setattr(_training, "forecast", overflowing)
    assert RNNForecaster(**settings).fit(y)._weight_ == 0.0


# --------------------------------------------------------------------------------------------
# cross-validation of a panel (a review's findings)
# --------------------------------------------------------------------------------------------


def _two_series(n=40):
    t = np.arange(n)
    parts = [
        pd.Series(
            scale * np.sin(t / 3) + 10,
            index=pd.MultiIndex.from_arrays(
                [[sid] * n, pd.date_range("2020-01-01", periods=n, freq="D")], names=["id", "day"]
            ),
        )
        for sid, scale in (("a", 5.0), ("b", 50.0))
    ]
    return pd.concat(parts)


def test_the_mase_scorer_scores_a_nested_search_of_a_panel_by_mase():
    # a fitted search's score uses the search's own scoring: the 'mase' column of nested
    # cross-validation held the inner search's MAE
    from sklearn.model_selection import cross_validate

    from tsrnn.metrics import make_forecast_scorer

    panel = _two_series()
    inner = GridSearchCV(
        RNNForecaster(**TINY),
        {"hidden_size": [3, 4]},
        cv=PanelSplit(n_splits=2, test_size=4),
        scoring=make_forecast_scorer("mae"),
    )
    outer = PanelSplit(n_splits=2, test_size=4)
    scoring = {"mase": make_forecast_scorer("mase"), "mae": make_forecast_scorer("mae")}
    result = cross_validate(inner, panel, cv=outer, scoring=scoring, return_estimator=True)
    for k, (_, test) in enumerate(outer.split(panel)):
        best = result["estimator"][k].best_estimator_
        assert result["test_mase"][k] == pytest.approx(best.score(panel.iloc[test]), rel=1e-12)
        assert result["test_mase"][k] != pytest.approx(result["test_mae"][k])


def test_score_warns_where_a_panel_was_split_as_one_series():
    # TimeSeriesSplit cuts the panel's rows, not its time: series 'a' wholly in training, 'b'
    # scored on dates the model saw 'a' at
    from sklearn.model_selection import TimeSeriesSplit

    panel = _two_series()
    splits = list(TimeSeriesSplit(n_splits=2, test_size=10).split(panel))
    with pytest.warns(UserWarning, match=r"series 'b' from 2020-01-.*PanelSplit"):
        cross_val_score(RNNForecaster(**TINY), panel, cv=splits, error_score="raise")
    # PanelSplit's folds end every series' training rows before its test rows: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        scores = cross_val_score(
            RNNForecaster(**TINY), panel, cv=PanelSplit(n_splits=2, test_size=4)
        )
    assert np.isfinite(scores).all()
    # ragged ends ('a' 10 rows short, 'b' 5): truths after every training row are scored
    # without a word; 'a' on days the model saw 'b' at is warned of
    a, b = panel.loc[["a"]], panel.loc[["b"]]
    model = RNNForecaster(**TINY).fit(pd.concat([a.iloc[:-10], b.iloc[:-5]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert np.isfinite(model.score(b.iloc[-5:-2]))
    with pytest.warns(UserWarning, match=r"series 'a' from 2020-01-31.*the latest: 2020-02-04"):
        model.score(a.iloc[-10:-7])


@pytest.mark.parametrize(("levels", "freq"), [(["year", "month"], "M"), (["Year", "quarter"], "Q")])
def test_a_calendar_multiindex_is_refused_with_a_fix_that_works(levels, freq):
    """(year, month) read as a panel of one series per year counting months 1 to 12, and
    predict forecast months 13 and 14 of every year without a word."""
    per_year = 12 if freq == "M" else 4
    index = pd.MultiIndex.from_product([range(2000, 2010), range(1, per_year + 1)], names=levels)
    y = pd.Series(5 + np.sin(np.arange(len(index)) / 2), index=index)
    with pytest.raises(ValueError, match=rf"named \['{levels[0]}', '{levels[1]}'\]") as info:
        RNNForecaster(**TINY).fit(y)
    fix = re.search(r"the time: (y\.index = .*?freq='\w'\))\.", str(info.value)).group(1)
    exec(fix, {"pd": pd, "y": y})
    assert isinstance(y.index, pd.PeriodIndex) and y.index.freqstr.startswith(freq)
    assert len(RNNForecaster(**TINY).fit(y).predict(2)) == 2
    # named as a panel it stays one
    y.index = index.set_names(["series", "step"])
    assert RNNForecaster(**TINY).fit(y).predict(2).index.nlevels == 2


def test_panel_split_refuses_levels_that_are_no_id_and_time():
    """PanelSplit cut by whatever the second level sorted into: with the dates first it cut
    by store name (every fold trained on dates after its test dates), with text months it cut
    alphabetically (Apr, Aug, Dec, Feb, ... before Mar); fit refused both."""
    dates = pd.date_range("2020-01-01", periods=30, freq="D")
    stores = [f"s{i:02d}" for i in range(12)]
    idx = pd.MultiIndex.from_product([dates, stores], names=["date", "store"])
    y = pd.Series(np.random.default_rng(0).normal(size=len(idx)), index=idx)
    with pytest.raises(ValueError, match=r"time stamps first.*X = X\.swaplevel\(\)\.sort_index"):
        list(PanelSplit(3, test_size=2).split(y))
    fixed = y.swaplevel().sort_index()
    for train, test in PanelSplit(3, test_size=2).split(fixed):
        train_end = fixed.iloc[train].index.get_level_values(1).max()
        assert train_end < fixed.iloc[test].index.get_level_values(1).min()
    months = pd.date_range("2020-01-01", periods=12, freq="MS")
    text = pd.MultiIndex.from_product([stores[:3], months.strftime("%b-%Y")], names=["s", "t"])
    with pytest.raises(TypeError, match=r"Unsupported time level .*dtype (str|object)"):
        list(PanelSplit(2, test_size=2).split(pd.Series(0.0, index=text)))
    calendar = pd.MultiIndex.from_product(
        [range(2000, 2004), range(1, 13)], names=["year", "month"]
    )
    with pytest.raises(ValueError, match=r"named \['year', 'month'\]"):
        list(PanelSplit(2).split(pd.Series(0.0, index=calendar)))
