"""The seasonal base of the forecaster's outputs and the validation-chosen output weight."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import tsrnn._training as training
from tsrnn import RNNForecaster, _data
from tsrnn._data import check_target, n_valid_rows, seasonal_mask

TINY = dict(hidden_size=4, max_epochs=2, batch_size=16, random_state=0, n_threads=1)


def monthly(n, seasonal=True, seed=0, name="sales"):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    season = 10 * np.sin(2 * np.pi * t / 12) if seasonal else 0.0
    values = 50 + 0.3 * t + season + rng.normal(0, 1, n)
    return pd.Series(values, index=pd.date_range("2000-01-01", periods=n, freq="MS"), name=name)


def test_seasonal_mask_finds_the_season_and_ignores_trend_and_noise():
    rng = np.random.default_rng(0)
    t = np.arange(200)
    columns = np.c_[
        monthly(200).to_numpy(),  # season + trend
        0.5 * t + rng.normal(0, 1, 200),  # trend only
        rng.normal(0, 1, 200),  # noise
        np.full(200, 3.0),  # constant: no autocorrelation at all
    ]
    assert seasonal_mask(check_target(columns, "y"), 12).tolist() == [[True, False, False, False]]
    # no season to test, or too few rows to test it
    assert not seasonal_mask(check_target(columns, "y"), 1).any()
    assert not seasonal_mask(check_target(columns[:14], "y"), 12).any()


def test_seasonal_series_get_a_season_of_history_and_the_naive_base():
    y = monthly(120)
    model = RNNForecaster(**TINY).fit(y)
    assert model._lead_ == 12
    assert model._seasonal_.tolist() == [[True]]
    assert model._y_tail_.shape == (1, 12 + model.window_, 1)
    # with the network's outputs weighted 0 the forecast is exactly the seasonal naive one
    model._weight_ = 0.0
    np.testing.assert_allclose(model.predict(24).to_numpy(), np.tile(y.to_numpy()[-12:], 2))


def test_non_seasonal_series_get_the_naive_base():
    y = monthly(120, seasonal=False)
    model = RNNForecaster(**TINY).fit(y)
    assert model._lead_ == 0 and model._seasonal_ is None
    assert model._y_tail_.shape == (1, model.window_, 1)
    model._weight_ = 0.0  # the naive forecast: the last value repeated
    np.testing.assert_allclose(model.predict(3).to_numpy(), np.full(3, y.iloc[-1]))


def test_a_panel_mixes_seasonal_naive_and_naive_bases_per_series():
    a, b = monthly(96, seed=1), monthly(96, seasonal=False, seed=2)
    panel = pd.concat({"a": a, "b": b}, names=["id", "date"])
    model = RNNForecaster(**TINY).fit(panel)
    assert model._seasonal_.tolist() == [[True], [False]]
    model._weight_ = 0.0
    out = model.predict(6)
    np.testing.assert_allclose(out.xs("a", level=0).to_numpy(), a.to_numpy()[-12:-6])
    np.testing.assert_allclose(out.xs("b", level=0).to_numpy(), np.full(6, b.iloc[-1]))


def test_a_horizon_longer_than_the_season_keeps_the_naive_base():
    y = pd.Series(monthly(120).to_numpy(), index=pd.period_range("2000Q1", periods=120, freq="Q"))
    model = RNNForecaster(**TINY, strategy="direct", horizon=6).fit(y)
    assert model._lead_ == 0 and model._seasonal_ is None
    model._weight_ = 0.0
    np.testing.assert_allclose(model.predict(8).to_numpy(), np.full(8, y.iloc[-1]))


def _problem(model, y):
    """The training problem the model was fitted on, rebuilt from the fitted attributes."""
    data = check_target(y)
    n_valid = n_valid_rows(data.lengths, 0.1, 1)
    scaled = (data.values - model._y_loc_[0]) / model._y_scale_[0]
    plan = training.WindowPlan(data.offsets, model.window_, 1, n_valid, model._lead_)
    return training.Problem(scaled, None, plan, 1, model._seasonal_, model.seasonal_period_)


def test_the_weight_drops_a_network_worse_than_its_base():
    y = monthly(600)  # 60 validation rows
    model = RNNForecaster(**TINY).fit(y)
    problem = _problem(model, y)
    settings = {"device": "cpu", "dtype": torch.float32}
    with torch.no_grad():
        model.module_.head.weight.zero_()
        model.module_.head.bias.fill_(3.0)  # every step 3 standard deviations off
    assert training.choose_weight(model.module_, problem, settings) == 0.0
    with torch.no_grad():
        model.module_.head.bias.fill_(0.0)  # the seasonal naive forecast at every weight
    # all weights tie: the first (0) is kept, and forecasts are the same at any weight
    assert training.choose_weight(model.module_, problem, settings) == 0.0


def test_the_weight_is_one_with_few_validation_values():
    y = monthly(120)  # 12 validation rows < MIN_WEIGHT_VALUES
    assert 12 < training.MIN_WEIGHT_VALUES
    model = RNNForecaster(**TINY).fit(y)
    problem = _problem(model, y)
    with torch.no_grad():
        model.module_.head.bias.fill_(3.0)
    settings = {"device": "cpu", "dtype": torch.float32}
    assert training.choose_weight(model.module_, problem, settings) == 1.0


@pytest.mark.parametrize("seasonal", [True, False])
def test_the_fitted_weight_is_one_of_the_grid_and_used_by_predict(seasonal):
    y = monthly(600, seasonal=seasonal)
    model = RNNForecaster(**TINY).fit(y)
    assert model._weight_ in training.WEIGHTS
    full = model.predict(5).to_numpy()
    model._weight_ = 0.0 if model._weight_ != 0.0 else 1.0
    assert not np.allclose(model.predict(5).to_numpy(), full)


def test_input_noise_follows_each_column_s_changes_within_series():
    rng = np.random.default_rng(0)
    # two series (rows 0-59, 60-99) of two columns, far apart in level
    y = np.c_[np.cumsum(rng.normal(0, 2.0, 100)), rng.normal(0, 0.5, 100)]
    y[60:] += 100.0
    offsets = np.array([0, 60, 100])
    steps = np.r_[np.diff(y[:60], axis=0), np.diff(y[60:], axis=0)]  # not row 59 -> 60
    sd = torch.as_tensor(steps.std(axis=0), dtype=torch.float64)
    plan = training.WindowPlan(offsets, 8, 1, np.array([6, 4]), 4)
    seasonal = training.Problem(y, None, plan, 1, np.array([[True, False], [True, True]]))
    noise = training.input_noise(seasonal, "cpu", torch.float64, scale=1.5)
    # the two target columns, then their seasonal naive inputs (horizon 1)
    torch.testing.assert_close(noise, 1.5 * torch.cat([sd, sd]))
    naive = training.Problem(y, None, training.WindowPlan(offsets, 8, 1, [6, 4]), 1)
    torch.testing.assert_close(training.input_noise(naive, "cpu", torch.float64, 1.5), 1.5 * sd)
    assert training.input_noise(naive, "cpu", torch.float64, scale=0.0) is None
    flat = training.Problem(np.ones((100, 1)), None, naive.plan, 1)
    assert training.input_noise(flat, "cpu", torch.float64) is None


def test_training_inputs_get_noise_on_the_target_features_only(monkeypatch):
    y = monthly(120)
    X = pd.DataFrame({"promo": np.arange(120) % 5 == 0}, index=y.index).astype(float)
    seen = []
    real = training.train_step

    def spy(net, optimizer, inputs, targets, **kwargs):
        seen.append(inputs.clone())
        return real(net, optimizer, inputs, targets, **kwargs)

    monkeypatch.setattr(training, "train_step", spy)
    model = RNNForecaster(**dict(TINY, max_epochs=1)).fit(X, y)
    noisy = seen[-1]
    scaled = (y.to_numpy() - model._y_loc_[0, 0]) / model._y_scale_[0, 0]
    expected = training.INPUT_NOISE * np.diff(scaled).std()
    seen.clear()
    monkeypatch.setattr(training, "input_noise", lambda *args, **kwargs: None)
    RNNForecaster(**dict(TINY, max_epochs=1)).fit(X, y)
    clean = seen[-1]
    # features: the centred window, the centred seasonal naive forecast, the covariate
    assert noisy.shape[-1] == clean.shape[-1] == 3
    diff = (noisy - clean)[..., :2]
    assert float(diff.std()) == pytest.approx(expected, rel=0.1)  # hundreds of draws
    torch.testing.assert_close(noisy[..., 2], clean[..., 2])  # covariates untouched


@pytest.mark.parametrize("seed", [0, 1])
def test_the_default_model_beats_the_seasonal_naive_forecast(seed):
    # a season (12) and a slower cycle (40 months) under noise: two years held out
    from tsrnn.datasets import make_sine_mixture
    from tsrnn.metrics import mase

    y = make_sine_mixture(240, periods=(12.0, 40.0), noise=0.3, freq="MS", random_state=seed)
    train, test = y.iloc[:-24], y.iloc[-24:].to_numpy()
    model = RNNForecaster(random_state=0, n_threads=1).fit(train)
    naive = np.tile(train.to_numpy()[-12:], 2)
    score = dict(y_train=train.to_numpy(), m=12)
    # measured: 0.40 vs 0.75 and 0.25 vs 1.22
    assert mase(test, model.predict(24).to_numpy(), **score) < 0.8 * mase(test, naive, **score)


@pytest.mark.parametrize("offset", [0.0, 10.0, 1000.0, 1e5])
@pytest.mark.parametrize("slope", [1 / 3, 1 / 7, 2 / 3, 0.1])
def test_a_straight_line_is_not_seasonal_in_its_round_off(offset, slope):
    """The differences of ``1000 + t / 3`` vary only by round-off (1e-13): the test found a
    season in it and the model forecast from a year back."""

    line = offset + slope * np.arange(120)
    assert not seasonal_mask(check_target(line, "y"), 12).any()
    # a real season on the same ramp still counts, also one of 5e-7 of the level
    t = np.arange(120)
    assert seasonal_mask(check_target(line + 0.05 * np.sin(2 * np.pi * t / 12), "y"), 12).all()


@pytest.mark.parametrize("level", [0.0, 1e6, 1e9, 1e12])
def test_the_season_is_found_at_any_level(level):
    """Adding a constant changes no verdict: the constant-difference bound is float64's
    round-off at the series' magnitude. It was 1e-9 of the largest value, and a season of
    amplitude 1 at a level of 1e9 was taken for none (the forecasts then lost the season)."""
    t = np.arange(120)
    season = np.sin(2 * np.pi * t / 12) + 0.1 * np.random.default_rng(0).standard_normal(120)
    assert seasonal_mask(check_target(level + season, "y"), 12).all()
    # the line's round-off still counts as none at the same levels
    assert not seasonal_mask(check_target(level + t / 3, "y"), 12).any()


def test_a_smooth_series_is_not_seasonal_for_its_short_lag_correlations():
    """The differences of a smooth series are correlated at every short lag: one passed the
    limit at lag 7 and was forecast from a week back (MASE 6.5 against ETS's 0.53)."""

    t = np.arange(272)
    smooth = pd.Series(
        np.sin(t / 40) + 0.5 * np.cos(t / 17), index=pd.date_range("2000", periods=272, freq="D")
    )
    assert not seasonal_mask(check_target(smooth, "y"), 7).any()
    assert RNNForecaster(**dict(TINY, max_epochs=1)).fit(smooth)._lead_ == 0
    # a weekly season on the same curve is still found
    weekly = smooth + 0.3 * np.sin(2 * np.pi * t / 7)
    assert seasonal_mask(check_target(weekly, "y"), 7).all()


def test_outlier_spikes_do_not_hide_a_season():
    # eight spikes of +10 over a weekly season with noise 0.2: the differences' variance was
    # the spikes', and the season was missed (MASE 0.78 against the seasonal naive's 0.22)

    rng = np.random.default_rng(0)
    t = np.arange(286)
    values = 5 + np.sin(2 * np.pi * t / 7) + 0.2 * rng.standard_normal(286)
    values[rng.choice(280, 8, replace=False)] += 10
    y = pd.Series(values, index=pd.date_range("2000", periods=286, freq="D"))
    assert seasonal_mask(check_target(y, "y"), 7).all()
    assert RNNForecaster(**dict(TINY, max_epochs=1)).fit(y)._lead_ == 7


def test_a_season_of_one_spike_a_year_is_found_on_a_short_series():
    # December twice the level, 30 months: the season is a few large differences, which
    # clipping the differences' outliers alone would flatten (it was missed, and December
    # forecast at November's level)
    t = np.arange(30)
    noise = 1 + 0.03 * np.random.default_rng(0).normal(size=30)
    values = (10 + 0.05 * t) * (1 + (t % 12 == 11)) * noise
    y = pd.Series(values, index=pd.date_range("2021-01-01", periods=30, freq="MS"))
    assert seasonal_mask(check_target(y, "y"), 12).all()
    model = RNNForecaster(**dict(TINY, max_epochs=1)).fit(y)
    assert model._lead_ == 12


# --------------------------------------------------------------------------------------------
# The base averaged over past seasons
# --------------------------------------------------------------------------------------------


def _base_by_hand(y, p, k, m, years):
    """The forecast of y[p+1+k] from rows up to p: the last season's mean plus the mean over
    the past ``years`` seasons of y[p+1+k-j*m] less the mean of the season it ends (over the
    whole seasons ``y`` has up to p, where they are fewer)."""

    def season(e):
        return y[e - m + 1 : e + 1].mean()

    used = min(years, (p + 1) // m)
    assert used >= 1
    return season(p) + np.mean(
        [y[p + 1 + k - j * m] - season(p - (j - 1) * m) for j in range(1, used + 1)]
    )


@pytest.mark.parametrize("years", [1, 2, 3])
@pytest.mark.parametrize("horizon", [1, 3])
def test_the_base_averages_the_past_seasons(years, horizon):
    m, W = 4, 5
    rng = np.random.default_rng(years)
    block = rng.normal(size=(2, years * m + W + horizon, 3))
    base = training.seasonal_base(torch.from_numpy(block), W, horizon, years * m, m)
    assert base.shape == (2, W, horizon * 3)
    for b in range(2):
        for t in range(W):
            for k in range(horizon):
                for c in range(3):
                    want = _base_by_hand(block[b, :, c], years * m + t, k, m, years)
                    assert base[b, t, k * 3 + c].item() == pytest.approx(want, abs=1e-12)
    if years == 1:  # exactly the seasonal naive forecast, no arithmetic on it
        naive = training._steps_ahead(torch.from_numpy(block[:, : W + horizon]), horizon)
        assert torch.equal(base, naive)


@pytest.mark.parametrize("build", ["numba", "torch"])
def test_a_window_with_fewer_seasons_before_it_averages_the_seasons_its_series_has(build):
    """Windows need one season of history, not the three the base averages: each position's
    base averages the seasons its series has up to it (the rows a block holds before its
    series, of the series before it or before row 0, are not read)."""
    from tsrnn._batch_numba import train_batch

    m, H, lead = 4, 2, 12
    rng = np.random.default_rng(5)
    offsets = np.array([0, 40, 75])
    y = rng.normal(size=(75, 1)) + 100 * np.repeat([[1.0], [-1.0]], [40, 35], axis=0)
    plan = training.WindowPlan(offsets, 6, H, [4, 0], lead, min_lead=m)
    problem = training.Problem(y, None, plan, H, np.ones((2, 1), dtype=bool), m)
    starts = plan.train_starts(np.arange(plan.n_train))
    assert plan.history(starts).min() == m and (plan.history(starts) == lead).any()
    if build == "numba":
        _, targets = train_batch(problem, starts, torch.float64)
    else:
        _, targets = training.make_batch_torch(problem, starts, "cpu", torch.float64)
    for b, s in enumerate(starts):
        k_series = plan.series_of([s])[0]
        series = y[offsets[k_series] : offsets[k_series + 1], 0]
        first = s + lead - offsets[k_series]  # the window's first row, in its series
        for t in range(6):
            for k in range(H):
                p = first + t
                want = series[p + 1 + k] - _base_by_hand(series, p, k, m, lead // m)
                assert targets[t, b, k].item() == pytest.approx(want, abs=1e-9)


def test_the_number_of_seasons_is_the_one_that_forecasts_the_training_rows_best():
    from tsrnn._data import SEASONAL_YEARS, seasonal_years

    rng = np.random.default_rng(0)
    t = np.arange(240)
    steady = 10 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 4, 240)  # noise over a fixed season
    growing = (1 + t / 12) * 10 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 0.5, 240)
    trend = 0.5 * t + rng.normal(0, 1, 240)
    data = check_target(np.c_[steady, growing, trend], "y")
    every = np.array([[True, True, False]])
    pick = {}
    for name, col in (("steady", 0), ("growing", 1)):
        mask = np.zeros((1, 3), dtype=bool)
        mask[0, col] = True
        pick[name] = seasonal_years(data, 12, mask, [240], 8)
    assert pick == {"steady": max(SEASONAL_YEARS), "growing": 1}
    # capped by what the windows leave room for; no choice below two candidates
    steady_only = np.array([[True, False, False]])
    assert seasonal_years(data, 12, steady_only, [240], 5) == 4
    assert seasonal_years(data, 12, every, [240], 1) == 1
    # nothing seasonal, or every series too short for the candidates' positions: one season
    assert seasonal_years(data, 12, np.zeros((1, 3), dtype=bool), [240], 8) == 1
    assert seasonal_years(data, 12, every, [40], 8) == 1
    # only the training rows are read: the validation rows can be anything
    spoiled = data.values.copy()
    spoiled[200:, 0] = 1e6
    spoiled = check_target(spoiled, "y")
    assert seasonal_years(spoiled, 12, steady_only, [200], 8) == max(SEASONAL_YEARS)
    assert seasonal_years(spoiled, 12, steady_only, [240], 8) == 1


def _steady_monthly(n=240, noise=4.0, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    values = 50 + 10 * np.sin(2 * np.pi * t / 12) + rng.normal(0, noise, n)
    return pd.Series(values, index=pd.date_range("2000-01-01", periods=n, freq="MS"))


def _recursive_base(values, n_steps, m, years):
    """The base alone (the network weighted 0), forecast step by step as predict does."""
    y = list(values)
    for _ in range(n_steps):
        y.append(_base_by_hand(np.asarray(y), len(y) - 1, 0, m, years))
    return np.asarray(y[len(values) :])


def test_a_noisy_steady_season_gets_a_base_averaged_over_past_seasons():
    y = _steady_monthly()
    model = RNNForecaster(**TINY).fit(y)
    years = model._lead_ // 12
    assert model._lead_ % 12 == 0 and years > 1
    assert model._y_tail_.shape == (1, model._lead_ + model.window_, 1)
    model._weight_ = 0.0
    want = _recursive_base(y.to_numpy(), 18, 12, years)
    np.testing.assert_allclose(model.predict(18).to_numpy(), want, rtol=1e-5, atol=1e-4)
    # update() keeps the history the base reads: the base of the longer series
    more = _steady_monthly(264).iloc[240:]
    model.update(more)
    want = _recursive_base(np.r_[y.to_numpy(), more.to_numpy()], 6, 12, years)
    np.testing.assert_allclose(model.predict(6).to_numpy(), want, rtol=1e-5, atol=1e-4)


def test_the_averaged_base_forecasts_a_noisy_season_better_than_last_year_s_values():
    """On a fixed season under noise the fitted model (network and all) beats the seasonal
    naive forecast by far more than with one season's base (geometric mean of the MASE ratios
    0.87 here, 0.97 with one season)."""
    from tsrnn.metrics import mase

    errors = []
    for seed in range(3):
        y = _steady_monthly(seed=seed)
        train, test = y.iloc[:-24], y.iloc[-24:].to_numpy()
        pred = RNNForecaster(random_state=seed).fit(train).predict(24).to_numpy()
        naive = np.tile(train.to_numpy()[-12:], 2)
        scale = dict(y_train=train.to_numpy(), m=12)
        errors.append(mase(test, pred, **scale) / mase(test, naive, **scale))
    assert np.exp(np.mean(np.log(errors))) < 0.92


def test_a_short_series_keeps_most_of_its_training_windows(monkeypatch):
    """Each season of history a window needs costs every series m windows: a 96-month series
    with a wandering level kept a dozen at four seasons, and the network trained on them added
    more error than the base saved. Two thirds of one season's windows stay (or 128 in all);
    the base averages the seasons the backtest chooses all the same (until session 30 the
    windows capped it too), over those a window has where it has fewer."""
    from tsrnn import forecaster
    from tsrnn._data import MIN_SEASON_WINDOWS, SEASONAL_YEARS, window_seasons

    plans = []

    class Recorded(forecaster.WindowPlan):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            plans.append(self)

    monkeypatch.setattr(forecaster, "WindowPlan", Recorded)
    y = _steady_monthly(96)
    model = RNNForecaster(**TINY).fit(y)
    train, W = 96 - n_valid_rows(np.array([96]), 0.1, 1)[0], model.window_
    (plan,) = plans
    windows = train - plan.min_lead - W  # training windows left, H = 1
    assert plan.n_train == windows
    assert 3 * windows >= 2 * (train - 12 - W) or windows >= MIN_SEASON_WINDOWS
    assert plan.min_lead // 12 == window_seasons([train], 12, W, 1) == 2  # not 4
    assert model._lead_ // 12 > 2  # the base is not held to the windows' history
    assert (plan.history(plan.train_starts(np.arange(plan.n_train))) < model._lead_).any()
    # a panel of twenty such series has windows enough for the longest history a series allows
    most = (train - W - 1 - W // 2) // 12
    assert window_seasons([train] * 20, 12, W, 1) == max(k for k in SEASONAL_YEARS if k <= most)


def test_the_seasons_are_chosen_on_every_row_the_validation_rows_too():
    """The base learns nothing from the rows it is judged on: the most recent ones, held out
    for the network's validation, are the best evidence of a season that just changed."""
    t = np.arange(240)
    rng = np.random.default_rng(0)
    shape = np.where(t < 204, np.sin(2 * np.pi * t / 12), np.cos(2 * np.pi * t / 12))
    y = pd.Series(50 + 10 * shape + rng.normal(0, 3, 240),
                  index=pd.date_range("2000-01-01", periods=240, freq="MS"))
    from tsrnn._data import most_seasons, seasonal_years

    model = RNNForecaster(**TINY).fit(y)  # 24 validation rows: two of the three new seasons
    most = most_seasons([240], 12)
    data, mask = check_target(y), np.array([[True]])
    assert model._lead_ // 12 == seasonal_years(data, 12, mask, [240], most)
    # judged on the 216 training rows, one year after the change, the old season won
    assert model._lead_ // 12 < seasonal_years(data, 12, mask, [216], most)


def test_a_short_series_does_not_cut_the_seasons_of_a_panel():
    """One new 72-month series beside ten of 20 years: until session 30 every window needed
    all the seasons the base averages before it, so the new series cut them for every series
    (with a warning). Now the panel keeps its seasons, and the new series' base averages the
    six it has, then more as update() brings them."""
    long = {f"s{i}": _steady_monthly(240, seed=i) for i in range(10)}
    new = _steady_monthly(72, seed=99)
    new.index = long["s0"].index[-72:]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        alone = RNNForecaster(**TINY).fit(pd.concat(long, names=["id", "date"]))
        both = RNNForecaster(**TINY).fit(pd.concat({**long, "new": new}, names=["id", "date"]))
    years = alone._lead_ // 12
    assert both._lead_ == alone._lead_ and years > 6
    both._weight_ = 0.0  # the base alone, as predict forecasts it
    pred = both.predict(15)
    for name, series in (("new", new), ("s3", long["s3"])):
        want = _recursive_base(series.to_numpy(), 15, 12, years)
        np.testing.assert_allclose(pred.xs(name).to_numpy(), want, rtol=1e-5, atol=1e-4)
    # a year more of the new series: its base averages seven seasons
    more = _steady_monthly(84, seed=99)
    more.index = pd.date_range(new.index[0], periods=84, freq="MS")
    both.update(pd.concat({"new": more.iloc[72:]}, names=["id", "date"]))
    want = _recursive_base(more.to_numpy(), 6, 12, years)
    np.testing.assert_allclose(both.predict(6).xs("new").to_numpy(), want, rtol=1e-5, atol=1e-4)


def test_a_season_longer_than_the_backtest_budget_is_still_judged():
    from tsrnn._data import BACKTEST_VALUES, seasonal_years

    m = BACKTEST_VALUES + 10
    rng = np.random.default_rng(0)
    y = np.tile(rng.normal(size=m), 4) + rng.normal(0, 0.1, 4 * m)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice"
        assert seasonal_years(check_target(y, "y"), m, np.array([[True]]), [4 * m], 2) == 2


def test_no_seasons_warning_where_the_series_own_errors_chose_fewer_seasons():
    """Three shorter series whose season grows: the panel's cap still allows 8 seasons with
    them, and the errors choose 1. Their rows did not cut anything: no warning."""
    long = {f"s{i}": _steady_monthly(240, seed=i) for i in range(10)}
    t = np.arange(150)
    growing = {
        f"g{i}": pd.Series(50 + (1 + t / 5) * np.sin(2 * np.pi * t / 12)
                           + np.random.default_rng(i).normal(0, 0.5, 150),
                           index=long["s0"].index[-150:])
        for i in range(3)
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model = RNNForecaster(**TINY).fit(pd.concat({**long, **growing}, names=["id", "date"]))
    assert model._lead_ == 12


def test_one_warning_for_a_short_series_that_cuts_the_window_and_the_seasons():
    long = {f"s{i}": _steady_monthly(240, seed=i) for i in range(10)}
    new = _steady_monthly(40, seed=99)
    new.index = long["s0"].index[-40:]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        RNNForecaster(**TINY).fit(pd.concat({**long, "new": new}, names=["id", "date"]))
    messages = [str(w.message) for w in caught if w.category is UserWarning]
    assert len(messages) == 1 and messages[0].startswith("window='auto' is 12 for every series")


def test_a_short_series_that_costs_a_panel_its_base_with_a_set_window_is_named():
    """With window= set, one 26-row series took the seasonal base from every series of the
    panel without a word (window='auto' warned)."""
    long = {f"s{i}": _steady_monthly(144, seed=i) for i in range(4)}
    new = _steady_monthly(26, seed=99)
    new.index = long["s0"].index[-26:]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert RNNForecaster(**TINY, window=12).fit(pd.concat(long))._lead_ > 0
    with pytest.warns(UserWarning, match=r"No series gets the seasonal base \(window=12\): "
                      r"series \['new'\] have as few as 2\d rows .* needs 25\. Fit the short "
                      r"series in a model of their own \(or drop them\), or set window=\d+ or"):
        model = RNNForecaster(**TINY, window=12).fit(pd.concat({**long, "new": new}))
    assert model._lead_ == 0


def _scores_one_by_one(data, m, mask, n_rows, candidates):
    """backtest_scores computed plainly: each series and column on its own, each position's
    base as _base_by_hand's (over the whole seasons it has, at most the candidate's)."""
    scores, counted = np.zeros(len(candidates)), 0
    for i in np.flatnonzero(mask.any(axis=1)):
        seg = data.series(i)[: int(n_rows[i])]
        n = len(seg)
        if n < 2 * m:
            continue
        origins = range(max(m - 1, n - m - max(_data.BACKTEST_VALUES // m, 1)), n - m)
        for c in np.flatnonzero(mask[i]):
            y = seg[:, c] / _data.unit_scale(seg[:, c])
            scale = np.mean(np.abs(y[m:] - y[:-m]))
            if not scale > 0:
                continue
            cs = np.concatenate([[0.0], np.cumsum(y)])
            for q, years in enumerate(candidates):
                miss = []
                for t in origins:  # _base_by_hand's sum, the m steps ahead at once
                    used = min(years, (t + 1) // m)
                    season = [(cs[e + 1] - cs[e + 1 - m]) / m for e in t - m * np.arange(used)]
                    lags = [y[t + 1 - j * m : t + 1 - j * m + m] for j in range(1, used + 1)]
                    base = season[0] + np.mean(np.array(lags) - np.array(season)[:, None], 0)
                    miss.append(np.abs(y[t + 1 : t + 1 + m] - base))
                scores[q] += np.mean(miss) / scale
            counted += 1
    return scores, counted


@pytest.mark.parametrize("trial", range(12))
def test_backtest_of_a_panel_side_by_side_equals_each_series_on_its_own(trial, monkeypatch):
    rng = np.random.default_rng(trial)
    m = int(rng.choice([4, 7, 12]))
    S, C = int(rng.integers(2, 25)), int(rng.integers(1, 3))
    lengths = rng.choice([m * 3, m * 10, m * 10, m * 20, 500], S)
    vals = np.concatenate([
        0.1 * rng.normal(0, 1, (n, C)).cumsum(0)
        + np.sin(np.arange(n) * 2 * np.pi / m)[:, None] * rng.normal(1, 1, C)
        for n in lengths
    ])
    vals[: lengths[0]] = 1.0  # a flat series: not counted
    data = _data.SeriesData(vals, np.cumsum([0, *lengths]), _data.TimeAxis(None), None)
    mask = rng.random((S, C)) < 0.8
    n_rows = [int(n - rng.integers(0, 3)) for n in lengths]
    candidates = list(_data.SEASONAL_YEARS)
    if trial % 3 == 0:  # blocks of a few columns at a time
        monkeypatch.setattr(_data, "_BACKTEST_BLOCK", 1)
    scores, counted = _data.backtest_scores(data, m, mask, n_rows, candidates)
    ref_scores, ref_counted = _scores_one_by_one(data, m, mask, n_rows, candidates)
    assert counted == ref_counted
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-13, atol=0)


def test_a_season_that_repeats_exactly_warns_nothing():
    """Its seasonal naive error (the backtest's scale) is 0: the backtest divided by it and
    numpy's "invalid value encountered in divide" reached the user."""
    import warnings

    import pandas as pd

    from tsrnn import RNNForecaster

    y = pd.Series(
        np.arange(60) % 7 + 1.0, index=pd.date_range("2021-03-01", periods=60, freq="D")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = RNNForecaster(hidden_size=4, max_epochs=1, random_state=0).fit(y)
    assert model._seasonal_ is not None


def _plain_seasonal_beats_last(x, m, years):
    """The decision of _data.panel_seasons for one series, computed plainly."""
    n = len(x)
    seasonal = last = 0.0
    for t in range(m - 1, n - m):
        for k in range(m):
            used = min(years, (t + 1) // m)  # the whole seasons there are up to t
            offsets = 0.0
            for j in range(1, used + 1):
                e = t - (j - 1) * m
                offsets += x[t + 1 + k - j * m] - x[e - m + 1 : e + 1].mean()
            base = x[t - m + 1 : t + 1].mean() + offsets / used
            seasonal += abs(x[t + 1 + k] - base)
            last += abs(x[t + 1 + k] - x[t])
    return seasonal < last


@pytest.mark.parametrize("trial", range(6))
def test_panel_seasons_decides_as_its_definition_says(trial, monkeypatch):
    """In a panel at least half seasonal, a series the test missed takes the seasonal base
    where the base over `years` seasons forecasts its next seasons better than its last
    value does; the others keep the test's answer. Odd trials take the series one block at
    a time (the blocks that bound the memory of a large panel)."""
    if trial % 2:
        monkeypatch.setattr(_data, "_BACKTEST_BLOCK", 1)
    rng = np.random.default_rng(trial)
    m, years, S = 4, int(rng.choice([1, 2, 4])), 6
    lengths = rng.integers(30, 70, S)
    series = []
    for n in lengths:
        season = np.tile(rng.normal(0, rng.uniform(0, 2), m), n // m + 1)[:n]
        walk = np.cumsum(rng.normal(0, rng.uniform(0, 1), n))
        series.append(season + walk + rng.normal(0, 1, n))
    index = pd.MultiIndex.from_tuples([(i, t) for i, n in enumerate(lengths) for t in range(n)])
    data = check_target(pd.Series(np.concatenate(series), index=index), "y")
    mask = np.array([[True], [True], [True], [False], [False], [False]])
    got = _data.panel_seasons(data, m, mask, lengths, years)
    expected = [True] * 3 + [
        bool(_plain_seasonal_beats_last(series[i], m, years)) for i in range(3, S)
    ]
    assert got[:, 0].tolist() == expected
    # kept: a series that takes the reverting base is not pooled
    keep = np.zeros((S, 1), dtype=bool)
    keep[3:] = True
    assert _data.panel_seasons(data, m, mask, lengths, years, keep).tolist() == mask.tolist()
    # fewer than half seasonal, or one series: the test's answer stands
    fewer = np.array([[True], [True], [False], [False], [False], [False]])
    assert _data.panel_seasons(data, m, fewer, lengths, years).tolist() == fewer.tolist()
    one = check_target(series[3], "y")
    assert not _data.panel_seasons(one, m, np.array([[False]]), [lengths[3]], years).any()


def test_a_panel_gives_a_season_the_test_missed_the_seasonal_base():
    """The tourism panel's short noisy series: the seasonality test, on each series alone,
    misses a season its neighbours show, and the global model forecast it from its last
    value. A random walk in the same panel keeps the last value."""
    m, n = 4, 64
    season = np.tile([3.0, -1.0, 0.0, -2.0], n // m)
    rows = [20 + season + np.random.default_rng(10 + i).normal(0, 1, n) for i in range(3)]
    hidden = 20 + season + np.random.default_rng(3).normal(0, 2.5, n)
    assert not seasonal_mask(check_target(hidden, "y"), m).any()  # missed on its own
    walk = 20 + np.cumsum(np.random.default_rng(4).normal(0, 1, n))
    time = pd.period_range("2000Q1", periods=n, freq="Q")
    y = pd.concat(
        {k: pd.Series(v, index=time) for k, v in zip("abcdw", [*rows, hidden, walk])},
        names=["id", "quarter"],
    )
    model = RNNForecaster(**TINY).fit(y)
    assert model._seasonal_[:, 0].tolist() == [True, True, True, True, False]
    model._weight_ = 0.0  # the base alone
    forecast = model.predict(4)
    assert np.ptp(forecast.xs("d", level=0).to_numpy()) > 1.0  # a season, not a flat line
    np.testing.assert_allclose(forecast.xs("w", level=0).to_numpy(), np.full(4, walk[-1]))


def test_the_number_of_seasons_does_not_depend_on_the_units():
    """With a trend every backtest error has one sign and the candidates' scores tie in exact
    arithmetic; argmin chose by the last digits, so y, y * 1000 and y / 1000 averaged 1, 4 or
    3 seasons and forecast differently (found by a review: 38 of 60 such series)."""
    from tsrnn._data import most_seasons, seasonal_years

    months = pd.date_range("2000-01-01", periods=144, freq="MS")
    for n in (60, 100, 144):
        for slope in (0.02, 0.1, 0.3):
            for seed in range(3):
                noise = np.random.default_rng(seed).normal(size=n) * 0.3
                v = 3 * np.sin(np.arange(n) * 2 * np.pi / 12) + slope * np.arange(n) + noise + 10
                chosen = set()
                for units in (1, 1000, 0.001):
                    data = check_target(pd.Series(units * v, index=months[:n]), "y")
                    mask = seasonal_mask(data, 12)
                    assert mask.any()
                    most = most_seasons(data.lengths, 12)
                    chosen.add(seasonal_years(data, 12, mask, data.lengths, most))
                assert len(chosen) == 1, (n, slope, seed, chosen)
