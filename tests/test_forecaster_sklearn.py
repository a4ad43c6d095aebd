"""RNNForecaster inside scikit-learn: estimator checks, searches, pipelines, cross-validation."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import (
    GridSearchCV,
    RandomizedSearchCV,
    TimeSeriesSplit,
    cross_val_score,
)
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.estimator_checks import estimator_checks_generator

from tsrnn import RNNForecaster

TINY = dict(hidden_size=4, max_epochs=2, batch_size=16, random_state=0, n_threads=1)

EXPECTED_FAILED_CHECKS = {
    "check_methods_sample_order_invariance": (
        "rows are consecutive time steps: permuting them changes the forecast"
    ),
    "check_methods_subset_invariance": (
        "rows are consecutive time steps: a subset of rows forecasts other steps"
    ),
}


def _check_id(value):
    """A test id part: the estimator's class, or the check's name."""
    if isinstance(value, RNNForecaster):
        return type(value).__name__
    return getattr(value, "func", value).__name__


# scikit-learn's own generator of its estimator checks, the expected failures marked xfail. As a
# list: ``parametrize_with_checks`` of scikit-learn 1.6 hands pytest a generator, which pytest
# deprecates (an error from pytest 10).
@pytest.mark.parametrize(
    ("estimator", "check"),
    list(
        estimator_checks_generator(
            RNNForecaster(hidden_size=4, max_epochs=2, window=4, random_state=0, n_threads=1),
            expected_failed_checks=EXPECTED_FAILED_CHECKS,
            mark="xfail",
        )
    ),
    ids=_check_id,
)
def test_sklearn_compatible_estimator(estimator, check):
    # Each scikit-learn check raises (AssertionError or the error it provokes) on failure.
    params = repr(estimator.get_params())
    check(estimator)
    # The parametrized instance is shared by every check: none may change its parameters.
    assert repr(estimator.get_params()) == params


def test_expected_failures_are_exactly_api_md_s():
    assert set(EXPECTED_FAILED_CHECKS) == {
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
    }


def test_tags():
    tags = RNNForecaster().__sklearn_tags__()
    assert tags.target_tags.required is False
    assert tags.target_tags.multi_output is True
    assert tags.regressor_tags.poor_score is True
    assert tags.estimator_type == "regressor"


def monthly(n=72, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    values = 100 + t + 10 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 1, n)
    return pd.Series(values, index=pd.date_range("2000-01", periods=n, freq="MS"), name="y")


def calendar_features(index):
    return pd.DataFrame(
        {"month": index.month.astype(str), "trend": np.arange(len(index), dtype=float)},
        index=index,
    )


def test_clone_keeps_params_and_drops_fitted_state():
    model = RNNForecaster(**TINY).fit(monthly(40))
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    assert not hasattr(copy, "module_") and hasattr(model, "module_")


@pytest.mark.parametrize("kind", ["series", "array", "range-series"])
def test_grid_search_with_time_series_split_on_a_bare_series(kind):
    y = monthly()
    if kind == "array":
        y = y.to_numpy()
    elif kind == "range-series":
        y = y.reset_index(drop=True)
    search = GridSearchCV(
        RNNForecaster(**TINY),
        {"hidden_size": [3, 5]},
        cv=TimeSeriesSplit(n_splits=2, test_size=6),
    ).fit(y)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all() and (scores < 0).all()  # negative MASE
    assert search.best_params_["hidden_size"] in (3, 5)
    forecast = search.predict(3)
    assert len(forecast) == 3
    if kind == "series":
        assert forecast.index[0] == pd.Timestamp("2006-01-01")


def test_search_scores_are_the_forecasters_own_test_fold_scores():
    y = monthly()
    cv = TimeSeriesSplit(n_splits=2, test_size=6)
    scores = cross_val_score(RNNForecaster(**TINY), y, cv=cv)
    for score, (train, test) in zip(scores, cv.split(y)):
        model = RNNForecaster(**TINY).fit(y.iloc[train])
        assert score == pytest.approx(model.score(y.iloc[test]))


def test_time_series_split_with_a_gap_forecasts_the_test_stamps():
    y = monthly()
    cv = TimeSeriesSplit(n_splits=2, test_size=6, gap=3)
    scores = cross_val_score(RNNForecaster(**TINY), y, cv=cv)
    train, test = list(cv.split(y))[-1]
    model = RNNForecaster(**TINY).fit(y.iloc[train])
    out = model.predict(y.iloc[test])
    pd.testing.assert_index_equal(out.index, y.iloc[test].index)
    np.testing.assert_allclose(out.to_numpy(), model.predict(9).to_numpy()[3:])
    assert scores[-1] == pytest.approx(model.score(y.iloc[test]))


def test_randomized_search_in_parallel_matches_a_serial_run():
    y = monthly()

    def search(n_jobs):
        return RandomizedSearchCV(
            RNNForecaster(**TINY),
            {"hidden_size": [3, 4, 5], "cell": ["gru", "lstm"]},
            n_iter=2,
            random_state=0,
            n_jobs=n_jobs,
            cv=TimeSeriesSplit(n_splits=2, test_size=6),
        ).fit(y)

    parallel, serial = search(2), search(1)
    assert len(parallel.cv_results_["params"]) == 2
    assert parallel.cv_results_["params"] == serial.cv_results_["params"]
    np.testing.assert_allclose(
        parallel.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"]
    )
    pd.testing.assert_series_equal(parallel.predict(3), serial.predict(3))


def test_grid_search_with_a_tsrnn_scorer():
    metrics = pytest.importorskip("tsrnn.metrics")
    if not hasattr(metrics, "make_forecast_scorer"):
        pytest.skip("tsrnn.metrics.make_forecast_scorer is not there yet")
    y = monthly()
    scorer = metrics.make_forecast_scorer("mae")
    search = GridSearchCV(
        RNNForecaster(**TINY),
        {"hidden_size": [3, 5]},
        scoring=scorer,
        cv=TimeSeriesSplit(n_splits=2, test_size=6),
    ).fit(y)
    train, test = next(iter(TimeSeriesSplit(n_splits=2, test_size=6).split(y)))
    model = RNNForecaster(**dict(TINY, hidden_size=3)).fit(y.iloc[train])
    mae = np.abs(model.predict(y.iloc[test]) - y.iloc[test]).mean()
    assert search.cv_results_["split0_test_score"][0] == pytest.approx(-mae)
    mase = metrics.make_forecast_scorer("mase")
    assert mase(model, y.iloc[test]) == pytest.approx(model.score(y.iloc[test]))


def test_covariates_in_a_pipeline_with_string_scoring():
    y = monthly()
    X = calendar_features(y.index)
    pipe = Pipeline(
        [
            (
                "features",
                ColumnTransformer(
                    [("month", OneHotEncoder(sparse_output=False), ["month"])],
                    remainder="passthrough",
                ),
            ),
            ("model", RNNForecaster(**TINY)),
        ]
    )
    search = GridSearchCV(
        pipe,
        {"model__hidden_size": [3, 5]},
        scoring="neg_mean_absolute_error",
        cv=TimeSeriesSplit(n_splits=2, test_size=6),
    ).fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    future = pd.date_range("2006-01", periods=4, freq="MS")
    forecast = search.predict(calendar_features(future).assign(trend=np.arange(72.0, 76.0)))
    assert len(forecast) == 4 and np.isfinite(forecast).all()
    model = search.best_estimator_.named_steps["model"]
    assert model.n_features_in_ == 13  # 12 months one-hot + trend


def test_pipeline_keeps_the_time_index_with_pandas_output():
    y = monthly()
    X = calendar_features(y.index)
    features = ColumnTransformer(
        [("month", OneHotEncoder(sparse_output=False), ["month"])],
        remainder="passthrough",
        verbose_feature_names_out=False,
    ).set_output(transform="pandas")
    pipe = Pipeline([("features", features), ("model", RNNForecaster(**TINY))])
    pipe.fit(X.iloc[:60], y.iloc[:60])
    model = pipe.named_steps["model"]
    assert model.freq_ == "MS" and "trend" in model.feature_names_in_
    out = pipe.predict(X.iloc[60:])
    pd.testing.assert_index_equal(out.index, y.index[60:])


def test_covariates_cross_val_score_matches_manual_folds():
    y = monthly()
    X = pd.DataFrame({"trend": np.arange(72.0)}, index=y.index)
    cv = TimeSeriesSplit(n_splits=2, test_size=6)
    scores = cross_val_score(RNNForecaster(**TINY), X, y, cv=cv)
    train, test = list(cv.split(X))[1]
    model = RNNForecaster(**TINY).fit(X.iloc[train], y.iloc[train])
    assert scores[1] == pytest.approx(model.score(X.iloc[test], y.iloc[test]))


def test_covariates_numbered_by_row_beside_a_dated_target_in_cross_validation():
    """X built without an index (pd.DataFrame({...}): rows 0, 1, ...) beside a dated y is paired
    row by row; a fold's X.iloc[60:] is numbered from 60, and every fold was refused (NaN
    scores, and a GridSearchCV choosing among NaNs)."""
    y = monthly()
    X = pd.DataFrame({"trend": np.arange(72.0)})
    dated = X.set_axis(y.index)
    cv = TimeSeriesSplit(n_splits=2, test_size=6, max_train_size=50)
    scores = cross_val_score(RNNForecaster(**TINY), X, y, cv=cv, error_score="raise")
    assert np.isfinite(scores).all()
    np.testing.assert_array_equal(scores, cross_val_score(RNNForecaster(**TINY), dated, y, cv=cv))
    # predict and update take rows numbered on from fit's, and refuse a jump
    model = RNNForecaster(**TINY).fit(X.iloc[10:60], y.iloc[10:60])
    pd.testing.assert_series_equal(model.predict(X.iloc[60:64]), model.predict(dated.iloc[60:64]))
    with pytest.raises(ValueError, match=r"numbered from 62, .* up to 59: .* from 60"):
        model.predict(X.iloc[62:66])
    with pytest.raises(ValueError, match=r"X_new's rows are numbered from 61"):
        model.update(X.iloc[61:63], y.iloc[60:62])
    model.update(X.iloc[60:63], y.iloc[60:63])
    pd.testing.assert_series_equal(model.predict(X.iloc[63:66]), model.predict(dated.iloc[63:66]))


def test_year_numbers_beside_yearly_data_are_not_row_numbers():
    """Covariates indexed by the years 1991-2000 beside a target of 2001-2010 were paired row
    by row as numbered rows: four-digit numbers beside yearly data are years."""
    y = pd.Series(np.arange(10.0) ** 1.1, index=pd.period_range("2001", periods=10, freq="Y"))
    X = pd.DataFrame({"c": np.arange(10.0)}, index=np.arange(1991, 2001))
    with pytest.raises(ValueError, match="X and y have different indexes"):
        RNNForecaster(**dict(TINY, window=3)).fit(X, y)
    # yearly stamps without a freq attribute (as read_csv parses them): years all the same
    stamps = pd.DatetimeIndex(pd.to_datetime([f"{year}-01-01" for year in range(2001, 2011)]))
    assert stamps.freq is None
    # without pandas 3's Pandas4Warning (a DeprecationWarning) from DatetimeIndex.inferred_freq
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(ValueError, match="X and y have different indexes"):
            RNNForecaster(**dict(TINY, window=3)).fit(X, y.set_axis(stamps))


def test_a_target_numbered_by_rows_beside_dated_covariates_gets_a_fix_that_works():
    """y = df["sales"] of a frame read without its dates, beside X = df.set_index("date"):
    the message said X = X.reindex(y.index) (an X all NaN) or X = X.set_axis(y.index) (the
    dates thrown away, then predict(X_future) refused for its dates)."""
    dates = pd.date_range("2000-01", periods=120, freq="MS")
    X = pd.DataFrame({"promo": np.arange(120.0) % 3}, index=dates)
    y = pd.Series(5 + np.sin(2 * np.pi * np.arange(120) / 12), name="sales")
    fix = r"y is numbered by rows \(RangeIndex 0..107\) and X by time stamps.*"
    with pytest.raises(ValueError, match=fix + r"y = y\.set_axis\(X\.index\).*y\.to_numpy\(\)"):
        RNNForecaster(**TINY).fit(X[:108], y[:108])
    # both fixes it names work, and take the dates: the same monthly model and forecasts
    named = RNNForecaster(**TINY).fit(X[:108], y[:108].set_axis(X.index[:108]))
    plain = RNNForecaster(**TINY).fit(X[:108], y[:108].to_numpy())
    assert named.freq_ == plain.freq_ == "MS" and named.seasonal_period_ == 12
    forecast = named.predict(X[108:])
    assert forecast.index.equals(dates[108:]) and forecast.name == "sales"
    np.testing.assert_allclose(plain.predict(X[108:]), forecast.to_numpy())


def test_training_rows_as_an_array_are_not_scored_as_a_forecast():
    """validation_curve and learning_curve score each training fold: as an array, those rows
    were taken as continuing the series and scored against the forecasts of the steps after
    them, finite nonsense (-9.6, -107.9); a pandas series gave NaN. Both give NaN now."""
    import warnings

    from sklearn.model_selection import validation_curve

    y = monthly().to_numpy()
    model = RNNForecaster(**TINY).fit(y[:60])
    with pytest.raises(ValueError, match="are the data the model was fitted on, row for row"):
        model.score(y[:60])
    with pytest.raises(ValueError, match="are the data the model was fitted on"):
        model.score(list(y[:60]))  # a list's .index is a method, not an index
    assert np.isfinite(model.score(y[60:66]))  # the rows after: a forecast's score
    assert np.isfinite(model.score(y[48:60] + 1.0))  # the same length, other values
    cv = TimeSeriesSplit(n_splits=2, test_size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn's warning for each NaN training score
        train, test = validation_curve(
            RNNForecaster(**TINY), y, None, param_name="hidden_size", param_range=[3, 4], cv=cv
        )
    assert np.isnan(train).all() and np.isfinite(test).all()
    # a real test fold that ends as the training data does (periodic, or intermittent with a
    # run of zeros) is scored: only the training data itself is refused (a fold identical to
    # it row for row, as np.tile makes, cannot be told apart)
    periodic = np.tile(np.arange(10.0), 4)
    model = RNNForecaster(**dict(TINY, window=6)).fit(periodic[:20])
    assert np.isfinite(model.score(periodic[20:30]))
    zeros = np.zeros(60)
    zeros[[3, 17, 31]] = 5.0
    model = RNNForecaster(**dict(TINY, window=6)).fit(zeros[:30])
    assert np.isfinite(model.score(zeros[30:60]))


def test_forecast_scorers_refuse_what_score_refuses():
    """The scorers of make_forecast_scorer forecast predict(X) themselves: on an array target
    they scored cross_validate's training folds (forecasts of the steps after the training end
    against the training rows: finite nonsense where score gives NaN), and without y on a
    covariate model they scored the forecasts against the covariates."""
    import warnings

    from sklearn.model_selection import cross_validate

    from tsrnn.metrics import make_forecast_scorer

    y = monthly().to_numpy()
    cv = TimeSeriesSplit(n_splits=2, test_size=6)
    for name in ("mae", "mase"):
        scorer = make_forecast_scorer(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sklearn's warning for each NaN training score
            result = cross_validate(
                RNNForecaster(**TINY), y, cv=cv, scoring=scorer, return_train_score=True
            )
        assert np.isnan(result["train_score"]).all(), name
        assert np.isfinite(result["test_score"]).all(), name
        model = RNNForecaster(**TINY).fit(y[:60])
        with pytest.raises(ValueError, match="are the data the model was fitted on"):
            scorer(model, y[:60])
        assert scorer(model, y[60:66]) < 0
    index = pd.date_range("2000-01", periods=72, freq="MS")
    X = pd.DataFrame({"trend": np.arange(72.0)}, index=index)
    target = pd.Series(y, index=index)
    model = RNNForecaster(**TINY).fit(X.iloc[:60], target.iloc[:60])
    for name in ("mae", "smape", "mase"):
        scorer = make_forecast_scorer(name)
        with pytest.raises(ValueError, match=r"needs the future covariates X and the true"):
            scorer(model, X.iloc[60:])
        assert scorer(model, X.iloc[60:], target.iloc[60:]) < 0
    search = GridSearchCV(
        RNNForecaster(**TINY), {"hidden_size": [4]}, cv=cv, scoring=make_forecast_scorer("mae")
    ).fit(X.iloc[:60], target.iloc[:60])
    with pytest.raises(ValueError, match="needs the future covariates X and the true"):
        search.score(X.iloc[60:])  # y forgotten


def test_pipeline_scores_with_metadata_routing_enabled():
    """Pipeline.score hands its last step sample_weight=None when metadata routing is on:
    score had no such parameter, so the pipeline could not score (cross_val_score: NaN)."""
    import sklearn
    from sklearn.preprocessing import StandardScaler

    y = monthly()
    X = pd.DataFrame({"trend": np.arange(72.0)}, index=y.index)
    cv = TimeSeriesSplit(n_splits=2, test_size=6)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline([("scale", StandardScaler()), ("model", RNNForecaster(**TINY))])
        pipe.fit(X.iloc[:60], y.iloc[:60])
        assert np.isfinite(pipe.score(X.iloc[60:], y.iloc[60:]))
        scores = cross_val_score(pipe, X, y, cv=cv, error_score="raise")
    assert np.isfinite(scores).all()
    model = pipe.named_steps["model"]
    with pytest.raises(TypeError, match="score takes no sample_weight"):
        model.score(X.iloc[60:], y.iloc[60:], sample_weight=np.ones(12))


def test_covariate_rows_as_an_array_are_scored_at_the_truths_steps():
    """A Pipeline's scaler hands the forecaster arrays: scored against a pandas y, the rows are
    y's steps. They were taken as continuing the training data, and a fold after a gap was
    scored against the forecasts of the steps before it."""
    from sklearn.preprocessing import StandardScaler

    y = monthly()
    X = pd.DataFrame({"trend": np.arange(72.0)}, index=y.index)
    model = RNNForecaster(**TINY).fit(X.iloc[:60], y.iloc[:60])
    right_after = model.score(X.iloc[60:66].to_numpy(), y.iloc[60:66])
    assert right_after == model.score(X.iloc[60:66], y.iloc[60:66])
    with pytest.raises(ValueError, match="starts 4 steps after it"):
        model.score(X.iloc[63:69].to_numpy(), y.iloc[63:69])
    with pytest.raises(ValueError, match="not after the end"):
        model.score(X.iloc[:60].to_numpy(), y.iloc[:60])  # in-sample: not a forecast
    pipe = Pipeline([("scale", StandardScaler()), ("model", RNNForecaster(**TINY))])
    with pytest.raises(ValueError, match="after the end of the data"):
        cross_val_score(
            pipe, X, y, cv=TimeSeriesSplit(n_splits=2, test_size=6, gap=3), error_score="raise"
        )


def test_covariates_numbered_by_row_beside_an_array_target_are_its_time_index():
    """An array target takes its time index from X (API.md): a model fitted on X.iloc[:100]
    took X.iloc[110:113] (a gap) and X.iloc[50:53] (training rows) as the next three steps,
    without a word, as in TransformedTargetRegressor, which passes y on as an array."""
    from sklearn.compose import TransformedTargetRegressor

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"promo": rng.integers(0, 2, 140).astype(float)})
    y = np.exp(1 + 0.5 * X["promo"].to_numpy())
    ttr = TransformedTargetRegressor(RNNForecaster(**TINY), func=np.log, inverse_func=np.exp)
    ttr.fit(X.iloc[:100], y[:100])
    assert ttr.predict(X.iloc[100:103]).shape == (3,)
    for start in (110, 50):  # a gap, training rows
        with pytest.raises(ValueError, match=rf"numbered from {start}, but .* up to 99"):
            ttr.predict(X.iloc[start : start + 3])
    model = RNNForecaster(**TINY).fit(X.iloc[:100], y[:100])
    model.update(X.iloc[100:110], y[100:110])
    with pytest.raises(ValueError, match=r"numbered from 100, but .* up to 109"):
        model.predict(X.iloc[100:103])
    np.testing.assert_array_equal(
        model.predict(X.iloc[110:113]), model.predict(X.iloc[110:113].to_numpy())
    )
    # a new frame numbered from 0 (no position) continues the data, as an array does
    fresh = X.iloc[110:113].reset_index(drop=True)
    np.testing.assert_array_equal(model.predict(fresh), model.predict(X.iloc[110:113]))
