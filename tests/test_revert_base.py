"""The base that reverts to the mean, for series without a seasonal base that wander around a
level (tsrnn._data.revert_base): chosen by a backtest on the training rows, computed alike in
the torch and Numba batches, and used by forecasting, update and panels."""

import numpy as np
import pandas as pd
import pytest
import torch

from tsrnn import RNNForecaster
from tsrnn import _training as training
from tsrnn._data import REVERT_GATE, REVERT_PHIS, revert_base
from tsrnn.datasets import make_ar

TINY = dict(hidden_size=4, max_epochs=2, batch_size=16, random_state=0, n_threads=1)


def _ar(n, phi, rng, mean=0.0):
    noise = rng.normal(size=n)
    out = np.zeros(n)
    for t in range(1, n):
        out[t] = phi * out[t - 1] + noise[t]
    return out + mean


def _plain_phi(y, h, lo=None, hi=None):
    """The phi of REVERT_PHIS whose forecasts of y[t+1 .. t+h] from the positions
    lo <= t < hi (default: the second half's) around y's mean have the least squared error,
    computed plainly."""
    n = len(y)
    lo = n // 2 if lo is None else lo
    hi = n - h if hi is None else hi
    d = y - y.mean()
    losses = []
    for phi in REVERT_PHIS:
        loss = 0.0
        for t in range(lo, hi):
            for k in range(1, h + 1):
                loss += (d[t + k] - phi**k * d[t]) ** 2
        losses.append(loss)
    return REVERT_PHIS[int(np.argmin(losses))]


def test_phi_fits_the_forecasts_of_every_horizon():
    """Sunspot-like: a slow reversion hidden under noise. The lag-one autocorrelation is
    pulled down by the noise; the multi-step fit finds the slow reversion."""
    rng = np.random.default_rng(3)
    n = 2000
    slow = _ar(n, 0.98, rng) * 0.3
    y = slow + rng.normal(size=n)
    base = revert_base(y[:, None], [0, n], [n], 24)
    d = y - y.mean()
    lag_one = (d[1:] @ d[:-1]) / (d @ d)
    assert lag_one < 0.8
    assert base is not None and 0.9 < base[0, 0, 0] < 1.0
    assert base[0, 0, 0] == _plain_phi(y, 24)


def test_reverting_series_take_it_trends_and_walks_keep_the_last_value():
    rng = np.random.default_rng(0)
    n = 300
    columns = {
        "ar 0.5": _ar(n, 0.5, rng),
        "ar 0.9 around 40": _ar(n, 0.9, rng, mean=40.0),
        "negative phi": _ar(n, -0.4, rng),
        "walk with drift": np.cumsum(rng.normal(0.3, 1.0, n)),
        "trend": 0.05 * np.arange(n) + _ar(n, 0.5, rng),
        "constant": np.full(n, 3.0),
    }
    y = np.column_stack(list(columns.values()))
    base = revert_base(y, [0, n], [n], 12)
    phi, mu = base[0, :, 0], base[0, :, 1]
    assert phi.tolist()[:3] == [_plain_phi(y[:, c], 12) for c in range(3)]
    np.testing.assert_allclose(mu[:3], y[:, :3].mean(axis=0), rtol=1e-12)
    assert phi[2] < 0
    # the others keep the last value: (1, 0) exactly
    assert (phi[3:] == 1.0).all() and (mu[3:] == 0.0).all()
    # nothing reverts: None
    assert revert_base(y[:, 3:], [0, n], [n], 12) is None
    # only the first n_rows rows are read: a reverting tail after a trend is not seen
    assert revert_base(y[:, 4:5], [0, n], [n // 2], 12) is None


def test_the_backtest_decides_as_its_definition_says():
    """The reverting base is taken where, out of sample, its errors over horizons 1..h from
    the second half's positions t (phi fitted on the first half, mu the mean of the rows up
    to t) are below REVERT_GATE of the last value's, computed here plainly."""
    rng = np.random.default_rng(1)
    h = 6
    taken = 0
    for trial in range(60):
        n = int(rng.integers(30, 160))
        y = np.cumsum(rng.normal(size=(n, 1)), axis=0) * rng.uniform(0, 1) + rng.normal(
            size=(n, 1)
        )
        half = n // 2
        phi = _plain_phi(y[:half, 0], h, half // 2, half - h)
        naive = revert = 0.0
        for t in range(half, n - h):
            mu = y[: t + 1, 0].mean()
            for k in range(1, h + 1):
                naive += abs(y[t + k, 0] - y[t, 0])
                revert += abs(y[t + k, 0] - (mu + phi**k * (y[t, 0] - mu)))
        base = revert_base(y, [0, n], [n], h)
        enough = n - h - half >= h and half - h - half // 2 >= h
        assert (base is not None) == (enough and revert < REVERT_GATE * naive), trial
        if base is not None:
            taken += 1
            # the base itself: the mean of every row, phi fitted on the second half
            assert base[0, 0, 0] == _plain_phi(y[:, 0], h)
            np.testing.assert_allclose(base[0, 0, 1], y.mean(), rtol=1e-12)
    assert 5 < taken < 55  # both outcomes are tried


def test_random_walks_and_trends_rarely_take_it_stationary_series_mostly_do():
    """The backtest is out of sample: judged on the rows it was fitted to (the mean of all of
    them known at every origin) it took about half of all random walks and most noisy
    trends, where the base forecast worse than the last value."""
    rng = np.random.default_rng(7)
    n, h = 150, 12
    counts = {}
    for kind in ("walk", "trend", "ar"):
        taken = 0
        for _ in range(100):
            if kind == "walk":
                y = np.cumsum(rng.normal(size=n))
            elif kind == "trend":
                y = 0.1 * np.arange(n) + 5 * rng.normal(size=n)
            else:
                y = _ar(n, 0.5, rng)
            taken += revert_base(y[:, None], [0, n], [n], h) is not None
        counts[kind] = taken
    assert counts["walk"] <= 25 and counts["trend"] <= 10 and counts["ar"] >= 90, counts


def test_a_panel_is_decided_series_by_series():
    rng = np.random.default_rng(2)
    lengths = [160, 120, 160, 200, 120, 9]
    series = [
        _ar(lengths[0], 0.5, rng),
        np.cumsum(rng.normal(0.5, 1.0, lengths[1])),
        _ar(lengths[2], 0.8, rng, mean=-3.0),
        _ar(lengths[3], 0.2, rng),
        _ar(lengths[4], 0.7, rng),
        _ar(lengths[5], 0.1, rng),  # too short to tell: the last value
    ]
    y = np.concatenate(series)[:, None]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n_rows = np.array(lengths) - 4
    panel = revert_base(y, offsets, n_rows, 10)
    for i, s in enumerate(series):
        alone = revert_base(s[:, None], [0, len(s)], [n_rows[i]], 10)
        expected = np.array([[[1.0, 0.0]]]) if alone is None else alone
        np.testing.assert_array_equal(panel[i : i + 1], expected)
    assert (panel[[0, 3, 4], 0, 0] != 1.0).all() and (panel[[1, 5], 0] == [1.0, 0.0]).all()


def test_a_mask_leaves_the_other_series_and_columns_to_their_seasonal_base():
    rng = np.random.default_rng(5)
    n = 200
    y = np.column_stack([_ar(2 * n, 0.5, rng), _ar(2 * n, 0.5, rng)])
    offsets, n_rows = [0, n, 2 * n], [n, n]
    every = revert_base(y, offsets, n_rows, 8)
    assert (every[..., 0] != 1.0).all()
    mask = np.array([[True, False], [False, False]])
    some = revert_base(y, offsets, n_rows, 8, mask)
    np.testing.assert_array_equal(some[0, 0], every[0, 0])
    assert (some[~mask] == [1.0, 0.0]).all()
    assert revert_base(y, offsets, n_rows, 8, np.zeros((2, 2), dtype=bool)) is None


def test_make_inputs_reverting_base():
    rng = np.random.default_rng(3)
    B, W, H, C = 4, 7, 3, 2
    block = torch.as_tensor(rng.normal(size=(B, W + H, C)))
    revert = np.zeros((B, C, 2))
    revert[..., 0] = 1.0
    revert[0, 0] = (0.5, 2.0)
    revert[3, 1] = (-0.7, -1.0)
    inputs, base = training.make_inputs(block, None, H, revert=torch.as_tensor(revert))
    plain_inputs, naive = training.make_inputs(block, None, H)
    torch.testing.assert_close(inputs, plain_inputs, rtol=0, atol=0)  # the inputs are the same
    y = block[:, :W].numpy()
    for b in range(B):
        for c in range(C):
            phi, mu = revert[b, c]
            for k in range(H):
                expected = mu + phi ** (k + 1) * (y[b, :, c] - mu)
                np.testing.assert_allclose(base[b, :, k * C + c].numpy(), expected, rtol=1e-12)
    # phi 1 and mu 0: the last value, bit for bit
    same = [(1, 0), (1, 1), (2, 0), (2, 1), (3, 0)]
    for b, c in same:
        assert torch.equal(base[b, :, c::C], naive[b, :, c::C])


def _reverting(n):
    """An AR(1) series numbered by step: no season to find (the M4 test can find a weekly
    one in daily noise)."""
    y = make_ar(n, phi=0.6, mean=50.0, sigma=2.0, random_state=0)
    return y.reset_index(drop=True)


def _fit_reverting(**kw):
    y = _reverting(200)
    model = RNNForecaster(**{**TINY, **kw}).fit(y)
    assert model._revert_ is not None
    return y, model


def _base_alone(model, last, steps, series=0):
    """The reverting base's forecast in original units from the last value ``last``."""
    phi, mu = model._revert_[series, 0]
    loc, scale = model._y_loc_[series, 0], model._y_scale_[series, 0]
    z = (last - loc) / scale
    return (mu + phi ** np.arange(1, steps + 1) * (z - mu)) * scale + loc


@pytest.mark.parametrize("strategy", ["recursive", "direct"])
def test_forecasts_of_the_base_alone_revert(strategy):
    y, model = _fit_reverting(strategy=strategy, horizon=3)
    model._weight_ = 0.0  # the network's outputs weighted 0: the base alone
    forecast = model.predict(7)
    np.testing.assert_allclose(forecast.to_numpy(), _base_alone(model, y.iloc[-1], 7), rtol=1e-5)
    # and towards the series' mean
    gaps = np.abs(forecast.to_numpy() - y.mean())
    assert gaps[-1] < abs(y.iloc[-1] - y.mean()) or gaps[-1] < 0.05 * y.std()


def test_update_forecasts_from_the_new_end_with_the_fitted_base():
    y = _reverting(220)
    model = RNNForecaster(**TINY).fit(y.iloc[:200])
    revert = model._revert_.copy()
    model.update(y.iloc[200:])
    np.testing.assert_array_equal(model._revert_, revert)
    model._weight_ = 0.0
    np.testing.assert_allclose(
        model.predict(5).to_numpy(), _base_alone(model, y.iloc[-1], 5), rtol=1e-5
    )


def test_a_panel_forecasts_each_series_from_its_own_base():
    rng = np.random.default_rng(4)
    n = 160
    time = pd.RangeIndex(n)  # no season to find
    reverting = make_ar(n, phi=0.5, mean=10.0, random_state=1).to_numpy()
    walk = 10.0 + np.cumsum(rng.normal(0.4, 1.0, n))
    index = pd.MultiIndex.from_product([["a", "b"], time], names=["id", "time"])
    y = pd.Series(np.concatenate([reverting, walk]), index=index, name="y")
    model = RNNForecaster(**TINY).fit(y)
    assert model._revert_[0, 0, 0] != 1.0 and tuple(model._revert_[1, 0]) == (1.0, 0.0)
    model._weight_ = 0.0
    forecast = model.predict(4)
    np.testing.assert_allclose(
        forecast.xs("a", level=0).to_numpy(), _base_alone(model, reverting[-1], 4), rtol=1e-5
    )
    np.testing.assert_allclose(forecast.xs("b", level=0).to_numpy(), np.full(4, walk[-1]))
    # a forecast of series b alone (predict(X) of its rows) reads b's base, not a's
    future = pd.MultiIndex.from_product([["b"], [n, n + 1]])
    alone = model.predict(pd.DataFrame(index=future))
    np.testing.assert_allclose(alone.to_numpy(), np.full(2, walk[-1]))


def test_a_series_without_a_season_reverts_beside_seasonal_ones():
    """A panel of seasonal series and one that reverts to its mean: that one gets the
    reverting base (as it would alone), the seasonal ones keep theirs."""
    n = 300  # the backtest needs 8 windows of training rows
    time = pd.date_range("2000-01", periods=n, freq="MS")
    rng = np.random.default_rng(6)
    t = np.arange(n)
    seasonal = [20 + 3 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 0.3, n) for _ in range(2)]
    reverting = make_ar(n, phi=0.6, mean=50.0, sigma=2.0, random_state=0).to_numpy()
    index = pd.MultiIndex.from_product([["s1", "s2", "ar"], time], names=["id", "time"])
    y = pd.Series(np.concatenate([*seasonal, reverting]), index=index, name="y")
    model = RNNForecaster(**TINY).fit(y)
    assert model._seasonal_[:, 0].tolist() == [True, True, False]
    assert model._revert_[2, 0, 0] < 0.9 and (model._revert_[:2] == [1.0, 0.0]).all()
    model._weight_ = 0.0
    forecast = model.predict(6)
    np.testing.assert_allclose(
        forecast.xs("ar", level=0).to_numpy(),
        _base_alone(model, reverting[-1], 6, series=2),
        rtol=1e-5,
    )
    # the seasonal ones are forecast by their seasonal base, not by a reversion
    assert not np.allclose(forecast.xs("s1", level=0).to_numpy(), seasonal[0][-1])


def test_a_model_pickled_before_the_reverting_base_forecasts_from_the_last_value():
    y, model = _fit_reverting()
    del model._revert_  # as a model pickled before the attribute was kept
    model._weight_ = 0.0
    np.testing.assert_allclose(model.predict(3).to_numpy(), np.full(3, y.iloc[-1]))


def test_seasonal_models_have_no_reverting_base():
    t = np.arange(144)
    y = pd.Series(
        10 + np.sin(2 * np.pi * t / 12) + np.random.default_rng(0).normal(0, 0.1, 144),
        index=pd.date_range("2000-01", periods=144, freq="MS"),
    )
    model = RNNForecaster(**TINY).fit(y)
    assert model._seasonal_ is not None and model._revert_ is None
