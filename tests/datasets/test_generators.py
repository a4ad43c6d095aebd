"""The synthetic generators: reproducibility, documented properties and argument checks."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from tsrnn.datasets import make_ar, make_lorenz, make_mackey_glass, make_panel, make_sine_mixture

# Small, fast calls of every generator: (function, keyword arguments).
SMALL = {
    "sine_mixture": (make_sine_mixture, {"n": 64}),
    "ar": (make_ar, {"n": 64, "phi": (0.5, -0.2)}),
    "mackey_glass": (make_mackey_glass, {"n": 64, "burn_in": 20.0}),
    "lorenz": (make_lorenz, {"n": 64, "burn_in": 1.0}),
    "panel": (make_panel, {"n_series": 7, "min_length": 3, "max_length": 20}),
}


def assert_same(a, b):
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    else:
        pd.testing.assert_series_equal(a, b, check_exact=True)


@pytest.mark.parametrize("name", list(SMALL))
def test_same_seed_same_data_different_seed_different_data(name):
    func, kwargs = SMALL[name]
    a = func(**kwargs, random_state=0)
    assert_same(a, func(**kwargs, random_state=0))
    assert_same(a, func(**kwargs, random_state=np.random.default_rng(0)))
    b = func(**kwargs, random_state=1)
    assert not np.array_equal(a.to_numpy(), b.to_numpy())  # False also when shapes differ


@pytest.mark.parametrize("name", list(SMALL))
def test_generators_and_legacy_random_states_advance(name):
    func, kwargs = SMALL[name]
    for state in (np.random.default_rng(5), np.random.RandomState(5)):
        first, second = func(**kwargs, random_state=state), func(**kwargs, random_state=state)
        assert not np.array_equal(first.to_numpy(), second.to_numpy())
    assert func(**kwargs).shape[0] >= 1  # random_state=None works


@pytest.mark.parametrize("name", [n for n in SMALL if n != "panel"])
def test_time_index_and_values(name):
    func, kwargs = SMALL[name]
    data = func(**kwargs, start="2021-03-01", freq="h", random_state=0)
    assert len(data) == kwargs["n"]
    assert isinstance(data.index, pd.DatetimeIndex) and data.index.name == "time"
    assert data.index.freqstr == "h" and data.index[0] == pd.Timestamp("2021-03-01")
    values = data.to_numpy()
    assert values.dtype == np.float64 and np.isfinite(values).all()


def test_sine_mixture_spectral_peaks_at_the_periods():
    n = 1200
    y = make_sine_mixture(n, periods=(12, 50), amplitudes=(2.0, 1.0), noise=0.5, random_state=0)
    power = np.abs(np.fft.rfft(y.to_numpy() - y.mean())) ** 2
    top_two = np.argsort(power)[-2:]
    assert sorted(n / top_two) == [12.0, 50.0]
    assert n / np.argmax(power) == 12.0  # the larger amplitude gives the higher peak


def test_sine_mixture_equation_without_noise():
    t = np.arange(30)
    y = make_sine_mixture(
        30, periods=(5.5, 10), amplitudes=(1.0, 3.0), phases=(0.1, 2.0), noise=0.0
    )
    expected = np.sin(2 * np.pi * t / 5.5 + 0.1) + 3.0 * np.sin(2 * np.pi * t / 10 + 2.0)
    np.testing.assert_allclose(y.to_numpy(), expected, rtol=0, atol=1e-12)
    assert y.name == "y"


def test_sequence_parameters_take_pandas_objects():
    """A Series or Index of numbers was refused as "not a sequence", printing it whole."""
    kw = dict(periods=(5.5, 10), amplitudes=(1.0, 3.0), noise=0.0, random_state=0)
    expected = make_sine_mixture(30, **kw)
    as_pandas = dict(kw, periods=pd.Series([5.5, 10.0]), amplitudes=pd.Index([1.0, 3.0]))
    pd.testing.assert_series_equal(make_sine_mixture(30, **as_pandas), expected)
    pd.testing.assert_series_equal(
        make_ar(50, phi=pd.Index([0.5, 0.2]), random_state=0),
        make_ar(50, phi=[0.5, 0.2], random_state=0),
    )
    with pytest.raises(TypeError, match="sequence of real numbers"):
        make_ar(50, phi=pd.Series(["a", "b"]), random_state=0)


def test_ar1_autocorrelation_and_variance():
    y = make_ar(20_000, phi=0.8, sigma=1.0, mean=5.0, random_state=0)
    assert abs(y.autocorr(lag=1) - 0.8) < 0.02
    assert abs(y.autocorr(lag=2) - 0.64) < 0.03
    assert abs(y.var() - 1 / (1 - 0.8**2)) < 0.15 * (1 / (1 - 0.8**2))
    assert abs(y.mean() - 5.0) < 0.15


def test_ar2_autocorrelation_follows_yule_walker():
    phi1, phi2 = 0.5, 0.3
    y = make_ar(50_000, phi=(phi1, phi2), random_state=1)
    rho1 = phi1 / (1 - phi2)
    assert abs(y.autocorr(lag=1) - rho1) < 0.02
    assert abs(y.autocorr(lag=2) - (phi1 * rho1 + phi2)) < 0.02


def test_ar_with_no_coefficients_is_white_noise():
    y = make_ar(5000, phi=(), sigma=2.0, random_state=0)
    assert abs(y.autocorr(lag=1)) < 0.05 and abs(y.std() - 2.0) < 0.1


def test_ar_burn_in_removes_the_zero_start():
    # burn_in=0 starts at the mean exactly; the default burn-in forgets it.
    assert make_ar(3, phi=0.9, sigma=1.0, burn_in=0, random_state=0).iloc[0] != 0.0
    starts = [make_ar(1, phi=0.95, random_state=s).iloc[0] for s in range(400)]
    assert abs(np.var(starts) - 1 / (1 - 0.95**2)) < 0.25 * (1 / (1 - 0.95**2))


@pytest.mark.parametrize(
    "phi", [(1.0,), (-1.2,), (0.5, 0.6), (0.0, 1.0)], ids=["unit", "explosive", "ar2", "seasonal"]
)
def test_ar_rejects_non_stationary_coefficients(phi):
    with pytest.raises(
        ValueError,
        match=r"does not define a stationary AR\(\d\) process.*"
        r"Choose coefficients whose roots all have \|z\| > 1",
    ):
        make_ar(10, phi=phi)


def test_mackey_glass_stays_positive_and_bounded():
    y = make_mackey_glass(1000, random_state=0)
    assert y.min() > 0.2 and y.max() < 1.5
    assert y.std() > 0.15  # chaotic oscillation, not a fixed point


@pytest.mark.parametrize("n", [20, 500])
def test_mackey_glass_refuses_an_unstable_step(n):
    # gamma * dt = 5: RK4 is unstable. n=20 returned values near 1e21, n=500 a bare
    # OverflowError from lagged**n_exp.
    with pytest.raises(ValueError, match=r"make_mackey_glass diverged.*dt=1\.0.*smaller dt"):
        make_mackey_glass(n, dt=1.0, gamma=5.0, random_state=0)


def test_mackey_glass_decay_to_zero_is_not_divergence():
    # beta < gamma: the solution decays to 0 (and underflows to it): a valid series
    y = make_mackey_glass(2000, gamma=1.0, dt=1.0, random_state=0)
    assert y.min() == 0.0 and np.isfinite(y).all()


def test_mackey_glass_small_delay_settles_at_the_fixed_point():
    # x* = (beta / gamma - 1) ** (1 / n) = 1 for the default beta, gamma.
    y = make_mackey_glass(50, tau=2.0, beta=0.2, gamma=0.1, burn_in=300.0, random_state=0)
    np.testing.assert_allclose(y.to_numpy(), 1.0, atol=1e-6)
    y = make_mackey_glass(
        50, tau=1.0, beta=0.3, gamma=0.1, n_exp=4.0, burn_in=300.0, random_state=0
    )
    np.testing.assert_allclose(y.to_numpy(), 2.0**0.25, atol=1e-6)


def test_mackey_glass_scheme_is_second_order():
    ref = make_mackey_glass(40, dt=0.1 / 16, sample_every=160, burn_in=0.0, initial=1.2)
    errors = [
        np.abs(
            make_mackey_glass(40, dt=0.1 / k, sample_every=10 * k, burn_in=0.0, initial=1.2) - ref
        ).max()
        for k in (1, 2)
    ]
    assert errors[0] < 1e-4
    assert 3.0 < errors[0] / errors[1] < 5.0


def test_lorenz_stays_on_the_attractor():
    frame = make_lorenz(3000, random_state=0)
    assert frame.columns.tolist() == ["x", "y", "z"]
    assert frame["x"].abs().max() < 25 and frame["y"].abs().max() < 30
    assert frame["z"].min() > 0 and frame["z"].max() < 55
    assert (frame["x"] > 5).any() and (frame["x"] < -5).any()  # visits both wings


def test_lorenz_decays_to_the_origin_below_rho_one():
    frame = make_lorenz(10, rho=0.5, burn_in=30.0, random_state=0)
    assert frame.abs().to_numpy().max() < 1e-3


def test_lorenz_scheme_is_fourth_order():
    def end(dt):
        steps = round(0.5 / dt)
        return (
            make_lorenz(2, dt=dt, sample_every=steps, burn_in=0.0, initial=(1.0, 1.0, 20.0))
            .iloc[-1]
            .to_numpy()
        )

    ref = end(0.01 / 32)
    ratio = np.abs(end(0.01) - ref).max() / np.abs(end(0.005) - ref).max()
    assert 12 < ratio < 20  # 2 ** 4 = 16


@pytest.mark.parametrize("align", ["end", "start", "random"])
def test_panel_lengths_alignment_and_layout(align):
    y = make_panel(300, min_length=5, max_length=40, align=align, freq="MS", random_state=0)
    assert y.name == "y" and y.dtype == np.float64 and np.isfinite(y.to_numpy()).all()
    assert list(y.index.names) == ["series", "time"]
    assert y.index.is_monotonic_increasing and y.index.is_unique
    assert isinstance(y.index.levels[1], pd.DatetimeIndex)
    calendar = pd.date_range("2000-01-01", periods=40, freq="MS")
    stamps = y.index.to_frame(index=False).groupby("series")["time"]
    lengths = stamps.size()
    assert lengths.index.tolist() == list(range(300))
    assert lengths.between(5, 40).all() and lengths.nunique() > 10
    first, last = stamps.min(), stamps.max()
    assert first.isin(calendar).all() and last.isin(calendar).all()
    # Consecutive steps: the span of each series equals its length.
    positions = calendar.get_indexer(y.index.get_level_values("time"))
    span = pd.Series(positions).groupby(y.index.codes[0]).agg(lambda p: p.max() - p.min() + 1)
    assert (span.to_numpy() == lengths.to_numpy()).all()
    if align == "end":
        assert (last == calendar[-1]).all() and first.nunique() > 1
    elif align == "start":
        assert (first == calendar[0]).all() and last.nunique() > 1
    else:
        assert first.nunique() > 1 and last.nunique() > 1


def test_panel_series_share_the_season():
    y = make_panel(50, min_length=70, max_length=70, period=7, noise=0.0, random_state=0)
    wide = y.unstack("series")
    relative = wide / wide.mean()
    # Without noise, the detrended seasonal shapes of all series peak on the same weekday.
    peaks = (relative - relative.rolling(7, center=True).mean()).iloc[7:-7].idxmax()
    assert peaks.dt.day_of_week.nunique() == 1


def test_panel_of_ten_thousand_series_is_fast():
    make_panel(10, random_state=0)  # warm-up: first-call costs are not the generator's
    start = time.perf_counter()
    y = make_panel(10_000, min_length=200, max_length=200, random_state=0)
    elapsed = time.perf_counter() - start
    assert len(y) == 2_000_000 and y.index.levels[0].size == 10_000
    assert elapsed < 2.0, f"10,000 x 200 took {elapsed:.2f} s"


# Bad arguments: (function, keyword arguments, error type, a part of the message).
BAD = [
    (
        make_ar,
        {"n": 0},
        ValueError,
        r"'n' parameter of make_ar must be an int in the range "
        r"\[1, inf\)\. Got 0 instead\. Ask for at least one time step",
    ),
    (make_ar, {"n": 2.5}, TypeError, r"'n' parameter of make_ar must be an int"),
    (make_ar, {"n": True}, TypeError, r"'n' parameter of make_ar must be an int"),
    (
        make_ar,
        {"sigma": -1.0},
        ValueError,
        r"'sigma' parameter of make_ar must be a float in "
        r"the range \[0\.0, inf\)",
    ),
    (make_ar, {"phi": "0.8"}, TypeError, r"'phi' parameter of make_ar"),
    (make_ar, {"phi": (0.5, np.nan)}, ValueError, r"'phi' parameter of make_ar must be finite"),
    (make_ar, {"burn_in": -1}, ValueError, r"'burn_in' parameter of make_ar"),
    (
        make_ar,
        {"random_state": "seed"},
        TypeError,
        r"'random_state' parameter of make_ar must "
        r"be an int, a numpy\.random\.Generator",
    ),
    (make_ar, {"random_state": -3}, ValueError, r"'random_state' parameter of make_ar"),
    (
        make_ar,
        {"freq": "fortnightly"},
        ValueError,
        r"'freq' parameter of make_ar must be a "
        r"pandas frequency alias.*'MS' \(month start\)",
    ),
    (make_ar, {"freq": None}, ValueError, r"'freq' parameter of make_ar"),
    (make_ar, {"start": "not a date"}, ValueError, r"'start' parameter of make_ar"),
    (make_ar, {"freq": "0D"}, ValueError, r"'freq'.*moves forward in time.*Got '0D'"),
    (make_ar, {"freq": "-1D"}, ValueError, r"'freq'.*moves forward in time.*Got '-1D'"),
    # offsets with n > 0 that stand still or run backwards: refused, not pandas' length error
    (make_ar, {"freq": pd.DateOffset(days=-1)}, ValueError, r"'freq'.*moves forward in time"),
    (make_ar, {"freq": pd.DateOffset(months=0)}, ValueError, r"'freq'.*moves forward in time"),
    # a retired alias: pandas' suggestion is passed on ('M' is month end, not 'MS')
    (make_ar, {"freq": "M"}, ValueError, r"'freq'.*pandas suggests 'ME'"),
    (make_ar, {"freq": "H"}, ValueError, r"'freq'.*pandas suggests 'h'"),
    # pandas 3 suggests 'Y' for 'A', which it refuses too, and drops the multiple
    (make_ar, {"freq": "A"}, ValueError, r"'freq'.*pandas suggests 'YE'"),
    (make_ar, {"freq": "2A-JUN"}, ValueError, r"'freq'.*pandas suggests '2YE-JUN'"),
    (make_ar, {"start": 5}, TypeError, r"'start'.*a date, not a number.*nanoseconds"),
    (make_panel, {"start": 2000}, TypeError, r"'start' parameter of make_panel.*not a number"),
    (
        make_sine_mixture,
        {"periods": (12, 1.5)},
        ValueError,
        r"'periods' parameter of "
        r"make_sine_mixture must be made of values >= 2\.0.*aliases",
    ),
    (make_sine_mixture, {"periods": ()}, ValueError, r"'periods'.*at least 1 value"),
    (
        make_sine_mixture,
        {"periods": (12, 50), "amplitudes": (1, 2, 3)},
        ValueError,
        r"one value per period: got 3 value\(s\) for 2 period\(s\)",
    ),
    (make_sine_mixture, {"noise": -0.1}, ValueError, r"'noise' parameter of make_sine_mixture"),
    (
        make_mackey_glass,
        {"tau": 17.05},
        ValueError,
        r"'tau' parameter of make_mackey_glass must "
        r"be a whole multiple of dt=0\.1",
    ),
    (
        make_mackey_glass,
        {"tau": 0.0},
        ValueError,
        r"'tau' parameter of make_mackey_glass must "
        r"be a float in the range \(0\.0, inf\)",
    ),
    (make_mackey_glass, {"initial": -1.0}, ValueError, r"'initial'.*positive history"),
    (make_mackey_glass, {"sample_every": 0}, ValueError, r"'sample_every' parameter"),
    (make_lorenz, {"dt": 0.0}, ValueError, r"'dt' parameter of make_lorenz"),
    (
        make_lorenz,
        {"burn_in": 0.015},
        ValueError,
        r"'burn_in' parameter of make_lorenz must be "
        r"a whole multiple of dt",
    ),
    (
        make_lorenz,
        {"initial": (1.0, 2.0)},
        ValueError,
        r"'initial' parameter of make_lorenz "
        r"must hold 3 values",
    ),
    (make_lorenz, {"rho": float("inf")}, ValueError, r"'rho' parameter of make_lorenz"),
    (
        make_lorenz,
        {"dt": 1.0, "burn_in": 0.0, "random_state": 0},
        ValueError,
        r"make_lorenz diverged: the Runge-Kutta step dt=1\.0 is too large.*smaller dt",
    ),
    (
        make_panel,
        {"min_length": 50, "max_length": 10},
        ValueError,
        r"min_length=50 is greater "
        r"than max_length=10.*Set min_length <= max_length",
    ),
    (
        make_panel,
        {"n_series": 0},
        ValueError,
        r"'n_series' parameter of make_panel.*at least "
        r"one series",
    ),
    (
        make_panel,
        {"align": "middle"},
        ValueError,
        r"'align' parameter of make_panel must be a "
        r"str among \{'end', 'start', 'random'\}\. Got 'middle'",
    ),
    (make_panel, {"period": 1.0}, ValueError, r"'period'.*period=None for no season"),
]


@pytest.mark.parametrize(
    ("func", "kwargs", "error", "match"),
    BAD,
    ids=[f"{f.__name__}-{','.join(k)}-{i}" for i, (f, k, _, _) in enumerate(BAD)],
)
def test_bad_arguments_raise_with_a_teaching_message(func, kwargs, error, match):
    with pytest.raises(error, match=match):
        func(**kwargs)


def test_panel_without_season_or_noise_is_a_straight_line_per_series():
    y = make_panel(5, min_length=10, max_length=10, period=None, noise=0.0, random_state=0)
    for _, series in y.groupby(level="series"):
        steps = np.diff(series.to_numpy())
        assert np.allclose(steps, steps[0], rtol=0, atol=1e-9 * abs(series).max())
    assert math.isfinite(y.sum())


def test_start_is_rolled_onto_the_frequency_grid_as_documented():
    # 2000-01-01 is a Saturday: weekly stamps ending on Sunday start the next day, as in
    # pandas.date_range (the generators' docstrings say so).
    y = make_ar(3, start="2000-01-01", freq="W", random_state=0)
    assert y.index[0] == pd.Timestamp("2000-01-02")
    assert y.index.equals(pd.date_range("2000-01-01", periods=3, freq="W", name="time"))


@pytest.mark.parametrize(
    ("make", "params", "what"),
    [
        (make_mackey_glass, {"dt": 1e-300}, "tau / dt"),  # raised a raw OverflowError
        (make_mackey_glass, {"tau": 1e12}, "tau / dt"),  # a bare MemoryError
        (make_mackey_glass, {"dt": 1e-7}, "tau / dt"),  # a 1.7e8-float buffer, then hours
        (make_mackey_glass, {"sample_every": 10**9}, "burn_in / dt"),
        (make_lorenz, {"dt": 1e-300}, "burn_in / dt"),  # these ran on silently
        (make_lorenz, {"burn_in": 1e9}, "burn_in / dt"),
        (make_lorenz, {"sample_every": 10**9}, "burn_in / dt"),
        (make_ar, {"burn_in": 10**10}, "n \\+ burn_in"),  # numpy's MemoryError for 74 GiB
    ],
)
def test_integration_step_counts_beyond_the_cap_are_refused(make, params, what):
    counted = r"(integration steps|delay values|recursion steps)"
    with pytest.raises(ValueError, match=rf"would take .* {counted} \({what}"):
        make(5, random_state=0, **params)


@pytest.mark.parametrize(
    ("make", "args", "what"),
    [
        # each built its whole date index before any cap: make_ar's 5e8 seconds took 4 GB
        # before its n + burn_in check, make_panel's 1e6 x 1e4 failed as numpy's MemoryError
        (make_ar, (5 * 10**8,), r"would take 5e\+08 time steps \(n\)"),
        (make_sine_mixture, (10**12,), r"would take 1e\+12 time steps \(n\)"),
        (make_mackey_glass, (10**9,), r"would take 1e\+09 time steps \(n\)"),
        (make_lorenz, (10**9,), r"would take 1e\+09 time steps \(n\)"),
        # one past the cap: it read "1e+08 time steps (n), more than 100,000,000"
        (make_ar, (10**8 + 1,), r"would take 100,000,001 time steps \(n\), more than 100,0"),
    ],
)
def test_sizes_beyond_the_cap_are_refused_before_any_allocation(make, args, what):
    with pytest.raises(ValueError, match=what):
        make(*args, random_state=0)
    with pytest.raises(ValueError, match=r"1e\+10 values \(n_series \* max_length\)"):
        make_panel(10**6, min_length=10**4, max_length=10**4, random_state=0)


@pytest.mark.parametrize("make", [make_ar, make_sine_mixture])
def test_dates_past_what_pandas_holds_name_n_and_freq(make):
    # pandas' OutOfBoundsDatetime ("Out of bounds timestamp: 10001999-01-01") named neither
    # (pandas 2 holds dates up to 2262, pandas 3's date_range up to year 294,000 or so)
    with pytest.raises(ValueError, match=r"10,000,000 steps of freq='YS'.*pandas can represent"):
        make(10**7, freq="YS", random_state=0)


def test_a_panel_past_pandas_dates_names_max_length():
    # make_panel has no n: the error told the user to lower it
    with pytest.raises(ValueError, match=r"fewer steps \(max_length\)"):
        make_panel(2, min_length=10, max_length=400_000, freq="YS")


def test_the_automatic_burn_in_leaves_room_for_n_up_to_the_cap():
    # make_ar(n=1e8), which the docs allow, was refused for the automatic burn-in's 100 steps
    from tsrnn.datasets._generators import MAX_STEPS, auto_burn_in

    assert auto_burn_in(0.8, 500) == 100
    assert auto_burn_in(0.999, 500) == math.ceil(math.log(1e-8) / math.log(0.999))
    assert auto_burn_in(0.8, MAX_STEPS - 40) == 40
    assert auto_burn_in(0.8, MAX_STEPS) == 0


@pytest.mark.parametrize(
    ("make", "kwargs", "scales"),
    [
        (make_ar, {"sigma": 1e308}, "sigma or mean"),
        (make_ar, {"sigma": 1e308, "mean": 1e308}, "sigma or mean"),
        (make_sine_mixture, {"noise": 1e308}, "amplitudes or noise"),
        (make_sine_mixture, {"amplitudes": (1e308, 1e308)}, "amplitudes or noise"),
        (make_mackey_glass, {"n": 50, "noise": 1e308}, "noise"),
        (make_lorenz, {"n": 50, "noise": 1e308}, "noise"),
        (make_panel, {"n_series": 2, "noise": 1e308}, "noise"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_values_that_overflow_are_refused(make, kwargs, scales):
    # they came back inf or NaN, with numpy's RuntimeWarning alone; then the ValueError came
    # after numpy's "overflow encountered in multiply": now the ValueError alone
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=rf"overflowed to inf or NaN.*Lower {scales}\.$"):
            make(random_state=0, **kwargs)
