"""Bad input to RNNForecaster: a ValueError/TypeError naming the problem and the fix, raised
before any training, leaving a fitted estimator as it was."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

import tsrnn._training as training
from tsrnn import BackendUnavailableError, RNNForecaster

TINY = dict(hidden_size=4, max_epochs=2, batch_size=16, random_state=0, n_threads=1)
N = 48
INDEX = pd.date_range("2000-01-01", periods=N, freq="MS")
Y = pd.Series(np.sin(np.arange(N) / 2) + np.arange(N) / 10, index=INDEX, name="y")
X = pd.DataFrame({"a": np.arange(N, dtype=float), "b": np.cos(np.arange(N))}, index=INDEX)
BIG = 2**60 + np.arange(N, dtype=np.int64)  # distinct integers float64 cannot tell apart


def with_nan(values, at=5):
    out = values.copy()
    out.iloc[at] = np.nan
    return out


def missing_dates():
    return Y.drop(Y.index[[10, 11]])


# (id, fit arguments, exception, message regex)
FIT_CASES = [
    ("nan", (with_nan(Y),), ValueError, r"1 NaN .* Fill them first"),
    ("inf", (Y.replace(Y.iloc[3], np.inf),), ValueError, r"inf value.*interpolate"),
    ("nan-array", (with_nan(Y).to_numpy(),), ValueError, r"NaN"),
    ("nan-covariate", (with_nan(X), Y), ValueError, r"Input X contains NaN.*'a'.*X.ffill\(\)"),
    ("nan-covariate-array", (with_nan(X).to_numpy(), Y), ValueError, r"Input X contains NaN"),
    ("empty", (pd.Series([], dtype=float),), ValueError, r"empty \(0 samples"),
    ("empty-array", (np.array([]),), ValueError, r"empty"),
    ("too-short", (Y.iloc[:2],), ValueError, r"too short: it has 2 time steps"),
    ("one-sample", (Y.iloc[:1],), ValueError, r"1 sample\)"),
    ("unsorted", (Y.iloc[::-1],), ValueError, r"unsorted time index.*sort_index"),
    ("duplicated", (pd.concat([Y, Y.iloc[-1:]]),), ValueError, r"duplicated time stamps"),
    (
        "irregular",
        (missing_dates(),),
        ValueError,
        # the fix names the grid the stamps were lost from (monthly here), not a fixed 'D'
        r"without a regular frequency.*y = y\.asfreq\('MS'\).*y\.resample\('MS'\)\.mean\(\)\.$",
    ),
    ("period-gaps", (Y.to_period().drop(Y.to_period().index[5]),), ValueError, r"missing periods"),
    ("string-index", (Y.set_axis(Y.index.astype(str)),), TypeError, r"pd.to_datetime"),
    ("float-index", (Y.set_axis(np.arange(N) / 2),), TypeError, r"Unsupported time index"),
    ("uneven-int-index", (Y.set_axis(np.arange(N) ** 2),), ValueError, r"uneven steps"),
    (
        "text-column",
        (pd.DataFrame({"y": Y, "name": "a"}),),
        TypeError,
        r"non-numeric column\(s\): 'name'",
    ),
    ("text-series", (Y.astype(str),), TypeError, r"non-numeric values"),
    ("text-array", (np.array(["a", "b"] * 24),), TypeError, r"holds text"),
    ("numbers-as-text", (np.array([str(v) for v in Y]),), TypeError, r"holds text.*dtype=float"),
    ("text-list", (["1.5", "2.5"] * 24,), TypeError, r"holds text"),
    ("text-objects", (np.array([1.0, "2"] * 24, dtype=object),), TypeError, r"holds text"),
    ("bool", (Y > 0,), TypeError, r"boolean.*astype\(float\)"),
    # numpy read stamps and durations as numbers (9.5e14 forecast); pd.to_numeric, the fix
    # the generic message offered, does the same
    ("stamps-array", (INDEX.to_numpy(),), TypeError, r"time stamps .*belong in the index"),
    ("stamps-series", (pd.Series(INDEX, index=INDEX),), TypeError, r"set_index\('date'\)"),
    (
        "stamps-objects",
        (np.array(list(INDEX), dtype=object),),
        TypeError,
        r"time stamps \(objects such as Timestamp",
    ),
    ("durations-array", (np.arange(N).astype("m8[s]"),), TypeError, r"durations.*Timedelta"),
    (
        "durations-series",
        (pd.Series(pd.to_timedelta(np.arange(N), unit="h"), index=INDEX),),
        TypeError,
        r"durations.*y / pd.Timedelta\(hours=1\)",
    ),
    (
        "durations-column",
        (pd.DataFrame({"y": Y, "t": pd.to_timedelta(np.arange(N), unit="h")}),),
        TypeError,
        r"durations: 't'.*y\['t'\] / pd.Timedelta",
    ),
    # as a boolean array is (score refused these already)
    ("bool-objects", (np.array([True, False] * 24, dtype=object),), TypeError, r"booleans"),
    # float64 holds integers exactly up to 2**53 only: 2**60 + t read as one constant and was
    # forecast flat; each form is checked before it is rounded
    ("big-int-array", (BIG,), ValueError, r"beyond 2\*\*53.*48 distinct values would read as 1,"),
    ("big-uint-array", (BIG.astype(np.uint64),), ValueError, r"beyond 2\*\*53"),
    ("big-int-series", (pd.Series(BIG, index=INDEX),), ValueError, r"y - y.min\(\)"),
    (
        "big-nullable-int",
        (pd.Series(BIG, index=INDEX, dtype="Int64"),),
        ValueError,
        r"beyond 2\*\*53",
    ),
    (
        "big-int-column",
        (pd.DataFrame({"y": Y, "n": BIG}, index=INDEX),),
        ValueError,
        r"y \(column 'n'\) holds integers beyond 2\*\*53",
    ),
    ("big-int-objects", (BIG.astype(object),), ValueError, r"beyond 2\*\*53"),
    # beyond float64's range: an OverflowError from numpy before
    (
        "huge-int-objects",
        (np.array([10**400] * N, dtype=object),),
        ValueError,
        r"beyond float64's range .*1\.000e\+400",
    ),
    ("big-int-list", (BIG.tolist(),), ValueError, r"beyond 2\*\*53"),
    ("big-int-covariate", (X.assign(n=BIG), Y), ValueError, r"X \(column 'n'\) holds integers"),
    ("big-int-covariate-array", (np.c_[np.arange(N), BIG], Y), ValueError, r"X \(column 1\) holds"),
    ("bool-column", (pd.DataFrame({"y": Y, "f": Y > 0}),), TypeError, r"'f'.*astype\(float\)"),
    (
        "duplicated-columns",
        (pd.DataFrame(np.c_[Y, 2 * Y], index=INDEX, columns=["y", "y"]),),
        ValueError,
        r"duplicated column name\(s\) \['y'\].*Rename",
    ),
    ("complex", (np.arange(N) * 1j,), ValueError, r"Complex data not supported"),
    ("3d", (np.zeros((N, 2, 2)),), ValueError, r"1-D or 2-D"),
    ("scalar", (3.0,), TypeError, r"Series/DataFrame or an array-like"),
    (
        "three-levels",
        (
            pd.Series(
                np.arange(8.0), index=pd.MultiIndex.from_product([["a"], ["b", "c"], range(4)])
            ),
        ),
        ValueError,
        r"exactly two",
    ),
    ("x-1d", (X["a"], Y), ValueError, r"Expected 2D array"),
    ("x-length", (X.iloc[:-1], Y), ValueError, r"X has 47 rows but y has 48"),
    (
        "x-index",
        (X.set_axis(INDEX + pd.offsets.MonthBegin(1)), Y),
        ValueError,
        r"different indexes.*reindex",
    ),
    ("x-text", (X.assign(c="z"), Y), ValueError, r"non-numeric covariate column\(s\): 'c'"),
    ("x-text-array", (X.assign(c="z").to_numpy(), Y), ValueError, r"X holds text"),
    # scikit-learn's conversion read these as numbers, where the same values as DataFrame
    # columns are refused: text holding numbers, stamps as counts since 1970
    ("x-numbers-as-text", (X.to_numpy().astype(str), Y), ValueError, r"X holds text.*dtype=float"),
    ("x-bytes", (X.to_numpy().astype("S8"), Y), ValueError, r"X holds text"),
    ("x-stamps-array", (INDEX.to_numpy().reshape(-1, 1), Y), ValueError, r"time stamps.*day_of"),
    ("x-stamps-objects", (X.assign(d=INDEX).to_numpy(), Y), ValueError, r"time stamps"),
    (
        "x-durations-array",
        (np.arange(N).astype("m8[h]").reshape(-1, 1), Y),
        ValueError,
        r"durations.*np.timedelta64\(1, 'h'\)",
    ),
    (
        "x-sparse-column",
        (X.astype({"a": pd.SparseDtype(float)}), Y),
        ValueError,
        r"sparse column\(s\) \['a'\].*X\[\['a'\]\].sparse.to_dense\(\)",
    ),
    (
        "x-category",
        (X.assign(c=pd.Categorical(["u", "v"] * (N // 2))), Y),
        ValueError,
        r"'c' \(category\).*pd.get_dummies",
    ),
    ("x-dates", (X.assign(c=INDEX), Y), ValueError, r"'c' \(datetime64.*day_of_week"),
    ("x-no-columns", (X[[]], Y), ValueError, r"no columns: pass at least one numeric"),
    # beside an array y the time index comes from X: dates as text (read_csv without
    # parse_dates) were left out, and the model fitted as on arrays
    (
        "x-dates-as-text-index",
        (X.set_axis(INDEX.strftime("%Y-%m-%d")), Y.to_numpy()),
        TypeError,
        r"X's index holds dates as text \(e.g. '2000-01-01'\).*pd.to_datetime\(X.index\)",
    ),
]

PARAM_CASES = [
    (
        {"hidden_size": 0},
        "The 'hidden_size' parameter of RNNForecaster must be an int in the range [1, inf). "
        "Got 0 instead.",
    ),
    ({"cell": "transformer"}, "The 'cell' parameter of RNNForecaster must be a str among"),
    (
        {"dropout": 1.0},
        "The 'dropout' parameter of RNNForecaster must be a float in the range [0.0, 1.0)",
    ),
    (
        {"window": 0},
        "The 'window' parameter of RNNForecaster must be a str among {'auto'} or "
        "an int in the range [2, inf). Got 0 instead.",
    ),
    ({"window": "long"}, "The 'window' parameter"),
    ({"horizon": 0}, "The 'horizon' parameter"),
    ({"strategy": "mimo"}, "The 'strategy' parameter"),
    ({"bptt": 0}, "The 'bptt' parameter"),
    ({"clip_norm": 0}, "The 'clip_norm' parameter"),
    ({"clip_value": -1.0}, "The 'clip_value' parameter"),
    ({"init": "zeros"}, "The 'init' parameter"),
    ({"optimizer": "lbfgs"}, "The 'optimizer' parameter"),
    ({"learning_rate": 0}, "The 'learning_rate' parameter"),
    ({"weight_decay": -1e-3}, "The 'weight_decay' parameter"),
    ({"batch_size": 0}, "The 'batch_size' parameter"),
    ({"max_epochs": 0}, "The 'max_epochs' parameter"),
    ({"early_stopping": "yes"}, "The 'early_stopping' parameter"),
    ({"validation_fraction": 1.0}, "The 'validation_fraction' parameter"),
    ({"patience": 0}, "The 'patience' parameter"),
    ({"scaler": "log"}, "The 'scaler' parameter"),
    ({"backend": "cuda"}, "The 'backend' parameter"),
    ({"dtype": "float16"}, "The 'dtype' parameter"),
    ({"n_threads": 0}, "The 'n_threads' parameter"),
    ({"nonlinearity": "sigmoid"}, "The 'nonlinearity' parameter"),
    ({"random_state": "seed"}, "The 'random_state' parameter"),
    # booleans are ints to Python: hidden_size=True fitted one unit, learning_rate=True 1.0
    (
        {"hidden_size": True},
        "The 'hidden_size' parameter of RNNForecaster must be an int in the range [1, inf). "
        "Got True instead.",
    ),
    ({"max_epochs": np.True_}, "The 'max_epochs' parameter"),
    ({"learning_rate": True}, "The 'learning_rate' parameter"),
    ({"dropout": False}, "The 'dropout' parameter"),
    ({"n_threads": True}, "The 'n_threads' parameter"),
    ({"bptt": True}, "The 'bptt' parameter"),
]


@pytest.fixture
def fitted():
    return RNNForecaster(**TINY).fit(Y.iloc[:40])


@pytest.fixture
def no_training(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("training started despite bad input")

    monkeypatch.setattr(training, "run_epoch", fail)


def snapshot(model):
    return model.predict(3), sorted(vars(model)), model.freq_, model.window_


def assert_unchanged(model, before):
    after = snapshot(model)
    pd.testing.assert_series_equal(after[0], before[0])
    assert after[1:] == before[1:]


@pytest.mark.parametrize(
    ("args", "error", "match"), [c[1:] for c in FIT_CASES], ids=[c[0] for c in FIT_CASES]
)
def test_bad_fit_input_raises_before_training(fitted, no_training, args, error, match):
    before = snapshot(fitted)
    with pytest.raises(error, match=match):
        fitted.fit(*args)
    assert_unchanged(fitted, before)


@pytest.mark.parametrize(
    ("params", "message"),
    PARAM_CASES,
    ids=[next(iter(p)) + "=" + repr(next(iter(p.values()))) for p, _ in PARAM_CASES],
)
def test_out_of_range_parameters(fitted, no_training, params, message):
    before, original = snapshot(fitted), fitted.get_params()
    fitted.set_params(**params)  # __init__/set_params only store
    with pytest.raises(ValueError, match=re.escape(message)):
        fitted.fit(Y)
    # the failed fit changed nothing fitted (predict reads n_threads: the bad value is put back)
    fitted.set_params(**original)
    assert_unchanged(fitted, before)


def test_window_too_long_names_the_fix(no_training):
    with pytest.raises(ValueError, match=r"window=60 .* smaller window \(window='auto'"):
        RNNForecaster(window=60, **TINY).fit(Y)


def test_too_short_message_offers_only_fixes_that_apply(no_training):
    # window='auto' gives its smallest, 2, here: "a smaller window" cannot help
    with pytest.raises(ValueError, match=r"gives 2 .* Use a longer series, a smaller horizon or "
                       r"early_stopping=False\.$") as info:
        RNNForecaster(strategy="direct", horizon=12, **TINY).fit(Y.iloc[:20])
    assert "smaller window" not in str(info.value)


def test_too_short_message_offers_no_fix_that_fails_too(no_training):
    """A one-row series was told to use early_stopping=False, with which it still fails."""
    with pytest.raises(ValueError, match=r"i\.e\. 4\. Use a longer series\.$"):
        RNNForecaster(**TINY).fit(np.arange(1.0))
    with pytest.raises(ValueError, match=r"need at least 3\. Use a longer series\.$"):
        RNNForecaster(**dict(TINY, early_stopping=False)).fit(np.arange(1.0))
    # in a panel, the short series can be left out
    idx = pd.MultiIndex.from_tuples(
        [("a", t) for t in range(40)] + [("b", 0)], names=["id", "t"]
    )
    panel = pd.Series(np.arange(41.0), index=idx)
    fix = r"Use a longer series or a panel without the series too short for it \(\['b'\]\)\.$"
    with pytest.raises(ValueError, match=fix):
        RNNForecaster(**TINY).fit(panel)
    # two short series: the fixes are those that work for the shorter one too (for 'b' alone
    # early_stopping=False would do, and 'c' then still failed)
    idx = pd.MultiIndex.from_tuples(
        [("a", t) for t in range(100)] + [("b", t) for t in range(13)] + [("c", 0), ("c", 1)],
        names=["id", "t"],
    )
    with pytest.raises(ValueError, match=r"Series 'c' of y is too short") as info:
        RNNForecaster(**dict(TINY, window=12)).fit(pd.Series(np.arange(115.0), index=idx))
    assert "early_stopping=False" not in str(info.value)
    assert "['b', 'c']" in str(info.value)
    # every series short: leaving them out leaves nothing, so it is not offered
    idx = pd.MultiIndex.from_product([["a", "b", "c"], range(2)], names=["id", "t"])
    with pytest.raises(ValueError, match=r"Use a longer series\.$"):
        RNNForecaster(**TINY).fit(pd.Series(np.arange(6.0), index=idx))


def test_too_short_for_a_long_direct_horizon_offers_a_smaller_one(no_training):
    """The validation part is at least the horizon: with horizon 40 it was counted at 40 for
    the smaller horizon too, and "a smaller horizon" (12 fits these 30 rows) was not offered."""
    with pytest.raises(ValueError, match=r"Use a longer series or a smaller horizon\.$"):
        RNNForecaster(**dict(TINY, strategy="direct", horizon=40)).fit(np.arange(30.0))


def test_window_one_is_refused(no_training):
    """A window of one value, centred on its own mean, reads as 0: the network got nothing of
    the target, and forecast the last value plus a constant step; with covariates it saw only
    the next step's, and forecast a level relation y = 2x + 5 worse than the last value."""
    covariates = pd.DataFrame({"x": np.sin(np.arange(len(Y)))}, index=Y.index)
    for args in ((Y,), (covariates, Y)):
        with pytest.raises(ValueError, match=r"'window' parameter .* range \[2, inf\)"):
            RNNForecaster(window=1, **TINY).fit(*args)


def test_auto_window_at_least_two():
    # 'auto' never gives 1: a 3-row series gets 2 (it got 1)
    assert RNNForecaster(**dict(TINY, early_stopping=False)).fit(np.arange(3.0)).window_ == 2


def test_complex_target_is_refused_not_cut_to_its_real_part(no_training):
    for y in (Y + 1j, (Y + 1j).to_frame()):
        with pytest.raises(ValueError, match="complex"):
            RNNForecaster(**TINY).fit(y)


def test_complex_truths_to_score_are_refused_not_cut_to_their_real_part():
    # a complex Series was scored by its real part, with only numpy's ComplexWarning
    model = RNNForecaster(**TINY).fit(Y[:40])
    for truth in (Y[40:] + 1000j, (Y[40:] + 1000j).to_frame(), (Y[40:] + 1000j).to_numpy()):
        with pytest.raises((ValueError, TypeError), match="complex"):
            model.score(truth)


def test_direct_horizon_too_long(no_training):
    with pytest.raises(ValueError, match="too short"):
        RNNForecaster(strategy="direct", horizon=40, window=8, **TINY).fit(Y)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_device_without_cuda(no_training):
    with pytest.raises(ValueError, match=r"CUDA is not available.*device='cpu'"):
        RNNForecaster(device="cuda", **TINY).fit(Y)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_backend_and_device_that_do_not_go_together_name_the_device_parameter(
    no_training, monkeypatch
):
    """The layers' message ("move the module and input to the CPU") reached the estimator's
    users, who pass no tensors: the knob is device=."""
    from tsrnn.kernels.common import registry

    # (the suite runs Triton in its CPU interpreter, which takes CPU tensors: not so here)
    monkeypatch.setattr(registry, "triton_interpreted", lambda: False)
    with pytest.raises(ValueError, match=r"backend='triton' runs on CUDA GPUs, but device='auto' "
                       r"chose the CPU \(CUDA is not available on this machine\)"):
        RNNForecaster(backend="triton", **TINY).fit(Y)
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)  # device='auto' picks cuda
    with pytest.raises(ValueError, match=r"backend='numba' runs on the CPU, but device='auto' "
                       r"chose cuda: pass device='cpu'"):
        RNNForecaster(backend="numba", **TINY).fit(Y)


def test_unknown_device(no_training):
    with pytest.raises(ValueError, match="is not a torch device"):
        RNNForecaster(device="tpu9", **TINY).fit(Y)


@pytest.mark.parametrize("device", ["meta", "mps", "xpu"])
def test_torch_devices_the_forecaster_does_not_run_on_are_refused(no_training, device):
    # torch knows them: they failed later with a RuntimeError or an AssertionError
    with pytest.raises(ValueError, match=rf"device='{device}' is not supported.*'cpu' or 'cuda'"):
        RNNForecaster(device=device, **TINY).fit(Y)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_unavailable_backend(no_training, monkeypatch):
    from tsrnn.kernels.common import registry

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    # as in a process whose Triton kernels are not made yet (or were made compiled)
    monkeypatch.setattr(registry, "_kernels_interpreted", None)
    with pytest.raises(BackendUnavailableError, match="triton"):
        RNNForecaster(backend="triton", device="cpu", **TINY).fit(Y)


def test_predict_before_fit():
    with pytest.raises(NotFittedError):
        RNNForecaster().predict(3)
    with pytest.raises(NotFittedError):
        RNNForecaster().update(Y)
    with pytest.raises(NotFittedError):
        RNNForecaster().score(Y)


PREDICT_CASES = [
    ("h=0", 0, ValueError, r"h must be an int >= 1 .* got 0"),
    ("h<0", -3, ValueError, r"got -3"),
    ("h-float", 2.5, TypeError, r"int h >= 1"),
    ("h-bool", True, TypeError, r"int h >= 1"),
    ("h-str", "12", TypeError, r"int h >= 1"),
    ("empty-rows", Y.iloc[:0], ValueError, r"empty"),
    ("past", Y.iloc[30:35], ValueError, r"not after the end of the data seen by fit"),
    (
        "off-grid",
        pd.Series(0.0, index=pd.DatetimeIndex(["2003-06-15"])),
        ValueError,
        r"not on the training data's 'MS' grid",
    ),
    (
        "wrong-index-kind",
        pd.Series(0.0, index=pd.period_range("2004-01", periods=2, freq="M")),
        TypeError,
        r"period index but the training data had a datetime index",
    ),
    (
        "tz",
        pd.Series(0.0, index=pd.date_range("2004-01", periods=2, freq="MS", tz="UTC")),
        ValueError,
        r"time zone",
    ),
    (
        "columns",
        pd.DataFrame(np.zeros((2, 3)), index=INDEX[40:42]),
        ValueError,
        r"X has 3 features, but RNNForecaster is expecting 1 features",
    ),
]


@pytest.mark.parametrize(
    ("arg", "error", "match"), [c[1:] for c in PREDICT_CASES], ids=[c[0] for c in PREDICT_CASES]
)
def test_bad_predict_input(fitted, arg, error, match):
    before = snapshot(fitted)
    with pytest.raises(error, match=match):
        fitted.predict(arg)
    assert_unchanged(fitted, before)


def test_covariate_model_needs_matching_future_covariates():
    model = RNNForecaster(**TINY).fit(X.iloc[:40], Y.iloc[:40])
    with pytest.raises(ValueError, match=r"fitted with covariates.*predict\(X_future\)"):
        model.predict(3)
    with (
        pytest.warns(UserWarning, match="does not have valid feature names"),
        pytest.raises(ValueError, match=r"X has 1 features, but RNNForecaster is expecting 2"),
    ):
        model.predict(X.iloc[40:44][["a"]].to_numpy())
    with pytest.raises(ValueError, match="feature names"):
        model.predict(X.iloc[40:44].rename(columns={"b": "c"}))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        model.predict(with_nan(X.iloc[40:44], at=1))
    with pytest.raises(ValueError, match=r"Reshape your data"):
        model.predict(X["a"].iloc[40:44].to_numpy())
    # named as X, with fixes for X (they named y, or gave scikit-learn's generic words)
    with pytest.raises(ValueError, match=r"got a Series instead.*X\.to_frame\(\)"):
        model.predict(X["a"].iloc[40:44])
    future = X.iloc[40:44]
    with pytest.raises(TypeError, match=r"in X\..*X\.index = pd\.to_datetime\(X\.index\)"):
        model.predict(future.set_axis(future.index.strftime("%Y-%m-%d")))
    with pytest.raises(TypeError, match=r"X has a 2-level MultiIndex, but the model was fitted"):
        model.predict(future.set_axis(pd.MultiIndex.from_arrays([["a"] * 4, future.index])))
    with pytest.raises(ValueError, match=r"every step right after the end"):
        model.predict(X.iloc[42:44])
    with pytest.raises(ValueError, match=r"score\(X, y\) needs"):
        model.score(X.iloc[40:44])
    with pytest.raises(ValueError, match=r"update\(X_new, y_new\) needs"):
        model.update(X.iloc[40:44])


def test_target_only_model_rejects_a_second_argument(fitted):
    with pytest.raises(ValueError, match=r"score\(y_future\)"):
        fitted.score(Y.iloc[40:44], Y.iloc[40:44])
    with pytest.raises(ValueError, match=r"update\(y_new\)"):
        fitted.update(Y.iloc[40:44], Y.iloc[40:44])


def test_bad_update_input_leaves_the_model_as_it_was(fitted):
    before = snapshot(fitted)
    with pytest.raises(ValueError, match="NaN"):
        fitted.update(with_nan(Y.iloc[40:44], at=1))
    with pytest.raises(ValueError, match="1 target column"):
        fitted.update(pd.DataFrame({"a": Y.iloc[40:44], "b": Y.iloc[40:44]}))
    with pytest.raises(ValueError, match="right after its end"):
        fitted.update(Y.iloc[41:44])
    assert_unchanged(fitted, before)


def test_score_with_bad_truth(fitted):
    with pytest.raises(ValueError, match="NaN"):
        fitted.score(with_nan(Y.iloc[40:44], at=0))


def test_integers_float64_cannot_hold_are_refused_by_update_score_and_predict():
    # each call reads its rows as float64 too: 2**60 + 1 would be scored, or continued, as 2**60
    model = RNNForecaster(**TINY).fit(X, Y)
    future = pd.date_range(INDEX[-1], periods=4, freq="MS")[1:]
    rows = pd.DataFrame({"a": 1.0, "b": 0.0}, index=future)
    before = model.predict(rows)
    with pytest.raises(ValueError, match=r"y_new holds integers beyond 2\*\*53"):
        model.update(rows, pd.Series(BIG[:3], index=future))
    with pytest.raises(ValueError, match=r"'b'\) holds integers beyond 2\*\*53"):
        model.predict(rows.assign(b=BIG[:3]))
    for truth in (pd.Series(BIG[:3], index=future), BIG[:3], BIG[:3].astype(object)):
        with pytest.raises(ValueError, match=r"holds integers beyond 2\*\*53"):
            model.score(rows, truth)
    pd.testing.assert_series_equal(model.predict(rows), before)  # update took nothing
    # the largest integers float64 holds exactly are taken
    exact = pd.Series(2**53 - np.arange(3), index=future)
    assert np.isfinite(model.score(rows, exact))


@pytest.mark.parametrize(
    "values",
    [10**16 + 10**12 * np.arange(N), 2**60 + 1024 * np.arange(N)],
    ids=["counter", "multiples-of-1024"],
)
def test_integers_beyond_2_53_that_float64_keeps_apart_are_read(values):
    # a counter near 1e16 growing by 1e12 a step rounds (if at all) in its last bits, as any
    # float does: it was refused for its magnitude alone (found by a review)
    assert np.unique(values.astype(np.float64)).size == N
    model = RNNForecaster(**TINY).fit(pd.Series(values, index=INDEX))
    assert np.isfinite(model.predict(2)).all()


def test_covariates_of_later_calls_are_checked_as_fit_checks_them():
    model = RNNForecaster(**TINY).fit(X, Y)
    future = pd.date_range(INDEX[-1], periods=4, freq="MS")[1:]
    with pytest.raises(ValueError, match=r"^X holds time stamps"):
        model.predict(future.to_numpy().reshape(-1, 1).repeat(2, axis=1))
    with pytest.raises(ValueError, match=r"^X_new holds text"):
        model.update(np.array([["1.0", "2.0"]] * 3), np.ones(3))
    with pytest.raises(TypeError, match=r"not numbers.*NAType"):
        model.score(np.ones((3, 2)), np.array([1.0, pd.NA, 2.0], dtype=object))


@pytest.mark.parametrize(
    "labels", [[0, 1], pd.MultiIndex.from_tuples([("x", "a"), ("x", "b")])], ids=["ints", "tuples"]
)
def test_covariate_frames_with_labels_that_are_not_strings_keep_fits_order(labels):
    # scikit-learn checks feature names only where they are strings: the same int labels
    # reordered were read by position, and the forecast changed without a word
    covs = X.set_axis(labels, axis=1)
    model = RNNForecaster(**TINY).fit(covs.iloc[:40], Y.iloc[:40])
    rows = covs.iloc[40:43]
    forecast = model.predict(rows)
    reordered = rows[rows.columns[::-1]]
    want = re.escape(str(list(labels)))
    with pytest.raises(ValueError, match=rf"but fit saw {want}.*reorder them"):
        model.predict(reordered)
    with pytest.raises(ValueError, match=r"reorder them"):
        model.score(reordered, Y.iloc[40:43])
    with pytest.raises(ValueError, match=r"^X_new has the covariate columns"):
        model.update(reordered, Y.iloc[40:43])
    with pytest.raises(ValueError, match=r"fitted on .*same columns in the same order"):
        model.predict(rows.iloc[:, :1])
    # fit's labels in fit's order, or an array (no labels: by position), are read as before
    pd.testing.assert_series_equal(model.predict(rows), forecast)
    np.testing.assert_array_equal(model.predict(rows.to_numpy()), forecast.to_numpy())


@pytest.mark.skipif(
    np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant,
    reason="np.longdouble is float64 on this platform: nothing is lost reading it",
)
def test_long_doubles_are_refused_only_where_float64_merges_their_values():
    # 1e17 + 10 sin(t) read in steps of 16 (3 distinct values of 48), and was forecast flat
    wave = 10 * np.sin(np.arange(N) / 3).astype(np.longdouble)
    merged = pd.Series(np.longdouble(1e17) + wave, index=INDEX)
    with pytest.raises(ValueError, match=r"long doubles.*48 distinct values would read as 3"):
        RNNForecaster(**TINY).fit(merged)
    with pytest.raises(ValueError, match=r"long doubles"):
        RNNForecaster(**TINY).fit(merged.to_numpy())
    # every long double rounds in its last bits: values float64 keeps apart are read
    model = RNNForecaster(**TINY).fit(pd.Series(wave, index=INDEX))
    assert np.isfinite(model.predict(2)).all()


def test_predict_with_sparse_rows_says_so(fitted):
    import scipy.sparse as sp

    with pytest.raises(TypeError, match=r"Sparse data was passed for X.*toarray"):
        fitted.predict(sp.csr_matrix(np.ones((3, 1))))


# --------------------------------------------------------------------------------------------
# messages that named the wrong fix, and input taken silently (session 21's reviews)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["start", "end"])
def test_nan_at_an_end_is_told_to_be_dropped(where):
    # interpolate() and ffill() leave leading NaN as they are: the advice repeated the error
    y = Y.copy()
    y.iloc[[0, 1] if where == "start" else [-1]] = np.nan
    message = r"first 2 row\(s\).*y\.iloc\[2:\]" if where == "start" else r"last 1 row.*iloc\[:-1\]"
    with pytest.raises(ValueError, match=message):
        RNNForecaster(**TINY).fit(y)


def test_duplicated_covariate_names_are_named():
    # narwhals' DuplicateError named neither X nor a fix
    with pytest.raises(ValueError, match=r"X has duplicated column name\(s\) \['a'\]"):
        RNNForecaster(**TINY).fit(X.set_axis(["a", "a"], axis=1), Y)


def test_validation_fraction_is_named_when_it_makes_the_series_too_short():
    with pytest.raises(ValueError, match=r"a smaller validation_fraction \(now 0\.9\)"):
        RNNForecaster(**TINY, window=6, validation_fraction=0.9).fit(Y)


def test_covariates_skipping_a_step_name_where():
    model = RNNForecaster(**TINY).fit(X, Y)
    future = pd.date_range(INDEX[-1], periods=5, freq="MS")[1:]
    rows = pd.DataFrame({"a": 1.0, "b": 0.0}, index=future[[0, 1, 3]])
    with pytest.raises(ValueError, match=r"it skips 1 step after 2004-02-01"):
        model.predict(rows)


def test_update_rows_off_the_grid_are_told_the_models_frequency():
    # hourly model, rows 1, 2, 4, 6 hours on: pd.infer_freq finds none, and the fix named
    # '2h' (from the last stamps), which update would then refuse as another frequency
    index = pd.date_range("2000-01-01", periods=60, freq="h")
    y = pd.Series(np.sin(np.arange(60) / 3), index=index)
    model = RNNForecaster(**TINY).fit(y)
    stamps = index[-1] + pd.to_timedelta([1, 2, 4, 6], unit="h")
    with pytest.raises(ValueError, match=r"not a regular 'h' sequence.*asfreq\('h'\)"):
        model.update(pd.Series([0.1, 0.2, 0.3, 0.4], index=stamps))


def test_score_refuses_text_and_booleans_as_fit_does():
    model = RNNForecaster(**TINY).fit(Y)
    future = pd.date_range(INDEX[-1], periods=4, freq="MS")[1:]
    with pytest.raises(TypeError, match="score needs numeric true values"):
        model.score(pd.Series(["1.0", "1.1", "1.2"], index=future))
    with pytest.raises(TypeError, match="score needs numeric true values"):
        model.score(pd.Series([True, False, True], index=future))
    with pytest.raises(TypeError, match="score needs numeric true values"):
        model.score(np.array(["1.0", "1.1", "1.2"]))
    with pytest.raises(TypeError, match="boolean"):
        model.score(np.array([True, False, True]))
    with pytest.raises(TypeError, match="score needs numeric true values"):
        model.score(future.to_numpy())  # stamps were scored as nanoseconds since 1970
    assert np.isfinite(model.score(pd.Series([1.0, 1.1, 1.2], index=future)))


def test_covariates_built_without_an_index_pair_with_a_dated_target_by_position():
    # pd.DataFrame({"promo": values}) beside a dated y was refused, and the suggested
    # X.reindex(y.index) made every covariate NaN
    plain = X.reset_index(drop=True)
    model = RNNForecaster(**TINY).fit(plain, Y)
    reference = RNNForecaster(**TINY).fit(X, Y)
    future = pd.DataFrame({"a": [1.0, 2.0], "b": [0.0, 0.5]})
    pd.testing.assert_series_equal(model.predict(future), reference.predict(future))
    # and scored at y's steps, after a gap too, as rows of an array are
    stamps = pd.date_range(INDEX[-1], periods=4, freq="MS")[2:]
    truth = pd.Series([1.0, 1.2], index=stamps)
    with pytest.raises(ValueError, match="every step right after the end"):
        model.score(future, truth)
    # an integer-indexed target keeps the check: 0..n-1 could be its steps
    shifted = Y.reset_index(drop=True).set_axis(pd.RangeIndex(100, 100 + N))
    with pytest.raises(ValueError, match=r"different indexes.*set_axis\(y\.index\)"):
        RNNForecaster(**TINY).fit(plain, shifted)


@pytest.mark.filterwarnings("error")  # pandas 3 deprecated DatetimeIndex.dayofweek, once read
def test_business_days_with_a_holiday_missing_are_told_the_business_day_grid():
    """The first stamps (Tue-Fri) read as 'D', and the message advised asfreq('D'), which
    inserts every weekend as NaN; the fix is 'B' (or the holidays' own calendar)."""
    index = pd.bdate_range("2024-01-02", periods=60).drop(pd.Timestamp("2024-01-15"))
    y = pd.Series(np.sin(np.arange(59) / 3), index=index)
    with pytest.raises(ValueError, match=r"asfreq\('B'\).*CustomBusinessDay"):
        RNNForecaster(**TINY).fit(y)


def test_a_date_column_is_told_to_become_the_index():
    """Prophet's layout (dates in a 'ds' column): "convert with pd.to_numeric ... or drop
    them" would fit a model without its dates."""
    df = pd.DataFrame({"ds": pd.date_range("2020", periods=60, freq="MS"), "y": np.arange(60.0)})
    with pytest.raises(TypeError, match=r"date column\(s\) 'ds'.*set_index\('ds'\)"):
        RNNForecaster(**TINY).fit(df)


def test_future_stamps_given_as_values_are_refused_with_the_index_that_works():
    """A target-only model reads only the length and index of predict's rows: dates given as
    values (a list of strings, index.values, Timestamps, a 'ds' column) were taken as that
    many rows, and the forecasts were of the steps right after the data, without a word."""
    y = pd.Series(np.sin(np.arange(60) / 2), index=pd.date_range("2020", periods=60, freq="MS"))
    model = RNNForecaster(**TINY).fit(y)
    later = pd.date_range("2025-03-01", periods=2, freq="MS")
    for X in (
        later.strftime("%Y-%m-%d").tolist(),
        later.values,
        list(later),
        pd.Series(later),
        later.to_period("M").tolist(),
    ):
        with pytest.raises(TypeError, match=r"X holds (time stamps|text) as values.*Index\(X\)"):
            model.predict(X)
    with pytest.raises(TypeError, match=r"date column\(s\) 'ds'.*set_index\('ds'\)"):
        model.predict(pd.DataFrame({"ds": later}))
    # the fix named works: the forecasts are of those months
    assert list(model.predict(pd.DatetimeIndex(later)).index) == list(later)
    # where the index carries the dates, the values may be them too (a review found these
    # refused by the first version of the check)
    for X in (later.to_series(), later.to_frame(), pd.DataFrame({"ds": later}, index=later)):
        assert list(model.predict(X).index) == list(later)
    # rows of numbers still count steps, as sklearn's splitters hand them over
    next_two = pd.date_range("2025-01-01", periods=2, freq="MS")
    assert list(model.predict(np.zeros(2)).index) == list(next_two)


def test_dates_read_as_text_are_told_to_become_the_index():
    """pd.read_csv without parse_dates gives the dates as text: the advice was "convert with
    pd.to_numeric ... or drop them", which would fit a model without its dates."""
    days = pd.date_range("2020-01-01", periods=40, freq="D").strftime("%Y-%m-%d")
    y = pd.DataFrame({"date": days, "sales": np.sin(np.arange(40.0))})
    with pytest.raises(TypeError, match=r"dates as text: 'date'") as err:
        RNNForecaster(**TINY).fit(y)
    assert "pd.to_numeric" not in str(err.value)
    scope = {"y": y, "pd": pd}
    exec(re.search(r"as dates: (.*?), or read", str(err.value)).group(1), scope)  # its fix
    fixed = scope["y"]
    assert list(RNNForecaster(**TINY).fit(fixed).predict(1).index) == [pd.Timestamp("2020-02-10")]
    # text that is not dates keeps the numeric advice
    with pytest.raises(TypeError, match=r"non-numeric column\(s\): 'region'.*pd.to_numeric"):
        RNNForecaster(**TINY).fit(y.assign(region="north").set_index("date"))


def test_integer_index_gaps_are_named_with_a_fix_that_keeps_the_steps():
    """The message showed the first four labels, not the gap, and advised reset_index, which
    closes the gap silently; update said "it starts 1 steps later" of rows that started
    right and then skipped a year."""
    years = np.r_[1900:1960, 1961:2001]
    y = pd.Series(np.sin(years / 3.0), index=years)
    with pytest.raises(ValueError, match="most steps are 1, but 1959 is followed by 1961") as err:
        RNNForecaster(**TINY).fit(y)
    fix = re.search(r"Fill in the missing steps: (.*?), then", str(err.value)).group(1)
    scope = {"y": y}
    exec(fix, scope)
    filled = scope["y"]
    assert len(filled) == 101 and filled.isna().sum() == 1  # the year put back, to be filled
    model = RNNForecaster(**TINY).fit(filled.interpolate())
    with pytest.raises(ValueError, match="skip steps: 2001 is followed by 2003"):
        model.update(pd.Series([1.0, 2.0], index=[2001, 2003]))
    with pytest.raises(ValueError, match="3 steps after it: the 2 rows between are missing"):
        model.update(pd.Series([1.0, 2.0], index=[2003, 2004]))


def test_values_near_the_float64_limit_are_refused_before_training():
    """1.79e308 is finite: the fit ran with overflow warnings and forecast NaN, with a
    ConvergenceWarning advising a lower learning rate."""
    y = np.r_[np.sin(np.arange(59.0)), 1.79e308]
    with pytest.raises(ValueError, match=r"y has values of magnitude up to 1.79e\+308.*y / 1e300"):
        RNNForecaster(**TINY).fit(y)
    ordinary = np.sin(np.arange(60.0))
    x = np.r_[np.zeros(59), -1e305].reshape(-1, 1)
    with pytest.raises(ValueError, match=r"X has values of magnitude up to 1e\+305"):
        RNNForecaster(**TINY).fit(x, ordinary)
    model = RNNForecaster(**TINY).fit(np.zeros((60, 1)), ordinary)
    with pytest.raises(ValueError, match="magnitude"):
        model.predict(np.full((2, 1), 1e301))
    # as large as the limit allows: finite forecasts of that size
    big = RNNForecaster(**TINY).fit(np.r_[ordinary[:-1], 1e300]).predict(2)
    assert np.isfinite(big).all() and np.abs(big).max() > 1e298


@pytest.mark.parametrize(("dtype", "magnitude"), [("float32", 1e25), ("float64", 1e160)])
def test_unscaled_values_whose_squares_overflow_are_refused(dtype, magnitude):
    """scaler=None trains on the values as they are: in float32 values of 1e25 ran with a
    divergence warning, 1e40 forecast NaN; in float64 so did 1e160."""
    y = pd.Series(magnitude * (5 + np.sin(np.arange(60.0))))
    with pytest.raises(ValueError, match=rf"scaler=None.*overflow {dtype}.*scaler='standard'"):
        RNNForecaster(**TINY, scaler=None, dtype=dtype).fit(y)
    # the default scaler takes them, and up to the limit unscaled ones train as they are
    scaled = RNNForecaster(**TINY, dtype=dtype).fit(y).predict(2)
    assert np.isfinite(scaled).all()
    limit = np.sqrt(np.finfo(dtype).max) / 10
    raw = RNNForecaster(**TINY, scaler=None, dtype=dtype).fit(y / magnitude * limit / 6)
    assert np.isfinite(raw.predict(2)).all()
    # what overflows is the spread, not the level: a high level with a small spread trains
    # (it was refused by its magnitude), a spread beyond the limit below it is refused (it
    # was let through, and warned that training diverged)
    edge = np.sqrt(np.finfo(dtype).max)  # 1.8e19 in float32, 1.3e154 in float64
    high = pd.Series(edge * 5 + edge * 5e-3 * np.sin(np.arange(60.0)))
    assert np.isfinite(RNNForecaster(**TINY, scaler=None, dtype=dtype).fit(high).predict(2)).all()
    wide = pd.Series(0.8 * edge * np.sign(np.sin(np.arange(60.0) * 2.1)))
    with pytest.raises(ValueError, match=r"values span .* overflow"):
        RNNForecaster(**TINY, scaler=None, dtype=dtype).fit(wide)


@pytest.mark.parametrize("level", [1e9, 1e6])
def test_unscaled_values_float32_rounds_coarser_than_their_spread_are_refused(level):
    """scaler=None in float32: 1e9 + 10 + sin(t) was rounded to float32's steps of 64 at that
    level, and forecast 1e9 flat (10 off at every step) without a word."""
    t = np.arange(60.0)
    y = pd.Series(level + 10 + np.sin(2 * np.pi * t / 12))
    with pytest.raises(ValueError, match=r"scaler=None.*in float32.*steps of .*fewer than 1000"):
        RNNForecaster(**TINY, scaler=None, dtype="float32").fit(y)
    # the default scaler takes the same series, float64 trains it as it is, and so does
    # float32 where the spread holds enough of its steps
    assert np.isfinite(RNNForecaster(**TINY, dtype="float32").fit(y).predict(2)).all()
    assert np.isfinite(RNNForecaster(**TINY, scaler=None, dtype="float64").fit(y).predict(2)).all()
    wider = y + 1e3 * level * np.finfo(np.float32).eps * np.sin(t)  # 1000 steps and more
    model = RNNForecaster(**TINY, scaler=None, dtype="float32").fit(wider)
    assert np.isfinite(model.predict(2)).all()


def test_fit_with_x_none_and_a_target_names_fit_y():
    # check_array's "Expected 2D array, got scalar array instead: array=nan" named neither
    with pytest.raises(TypeError, match=r"X=None.*fit\(y\)"):
        RNNForecaster(**TINY).fit(None, pd.Series(np.arange(50.0)))
    # the target by keyword alone: Python's "missing 1 required positional argument: 'X'"
    with pytest.raises(TypeError, match=r"X=None.*fit\(y\)"):
        RNNForecaster(**TINY).fit(y=pd.Series(np.arange(50.0)))
    with pytest.raises(TypeError, match=r"neither a series nor covariates.*fit\(y\)"):
        RNNForecaster(**TINY).fit()



def test_update_rows_missing_a_business_day_are_not_told_a_calendar_of_their_own():
    """The model's grid is 'B': rows put on a CustomBusinessDay are refused as another
    frequency, so the hint is only for fitting a series."""
    y = pd.Series(np.sin(np.arange(120) / 3), index=pd.bdate_range("2021-01-04", periods=120))
    model = RNNForecaster(**TINY).fit(y[:100])
    with pytest.raises(ValueError, match="'B'") as info:
        model.update(y[100:115].drop(y.index[104]))
    assert "CustomBusinessDay" not in str(info.value)


def _series_pieces():
    return {k: Y.copy() + i for i, k in enumerate("ab")}


@pytest.mark.parametrize("kind", ["dict", "list", "tuple"])
def test_a_collection_of_series_as_y_is_refused_with_the_panel_fix(kind):
    # NumPy read a list of series as rows: 2 time steps of 48 variables, stamps dropped
    pieces = _series_pieces()
    y = pieces if kind == "dict" else {"list": list, "tuple": tuple}[kind](pieces.values())
    with pytest.raises(TypeError, match=f"y is a {kind}") as err:
        RNNForecaster(**TINY).fit(y)
    fix = re.search(r"y = (pd\.concat\(.*?names=\['id', 'time'\]\))", str(err.value))
    panel = eval(fix.group(1), {"pd": pd, "y": y})
    model = RNNForecaster(**TINY).fit(panel)
    assert model.n_series_ == 2


@pytest.mark.parametrize("kind", ["dict", "list"])
def test_a_collection_of_series_as_covariates_is_refused_in_every_method(kind):
    fitted = RNNForecaster(**TINY).fit(X.iloc[:40], Y.iloc[:40])
    rows = X.iloc[40:]
    bad = dict(rows.items()) if kind == "dict" else [rows["a"], rows["b"]]
    whole = dict(X.items()) if kind == "dict" else [X["a"], X["b"]]
    with pytest.raises(TypeError, match=f"X is a {kind}"):
        RNNForecaster(**TINY).fit(whole, Y)
    with pytest.raises(TypeError, match=f"X is a {kind}"):
        fitted.predict(bad)
    with pytest.raises(TypeError, match=f"X is a {kind}"):
        fitted.score(bad, Y.iloc[40:])
    # the truth too: a list of two target Series was read as two rows and scored transposed
    truth = dict(y=Y.iloc[40:]) if kind == "dict" else [Y.iloc[40:], Y.iloc[40:]]
    with pytest.raises(TypeError, match=f"y is a {kind}"):
        fitted.score(rows, truth)
    fixed = pd.DataFrame(bad) if kind == "dict" else pd.concat(bad, axis=1)
    np.testing.assert_array_equal(fitted.predict(fixed).to_numpy(), fitted.predict(rows).to_numpy())


@pytest.mark.parametrize("bad", [0, -1, 2.5, "x"])
def test_n_threads_set_after_fit_is_checked_by_predict(bad):
    # predict is the one reader of a fitted model's n_threads: 0, -1 and 2.5 ran silently
    model = RNNForecaster(**TINY).fit(Y)
    before = model.predict(2)
    model.set_params(n_threads=bad)
    with pytest.raises(ValueError, match=r"'n_threads' parameter of RNNForecaster must be an int"):
        model.predict(2)
    model.set_params(n_threads=1)
    pd.testing.assert_series_equal(model.predict(2), before)


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_score_with_covariates_needs_one_x_row_per_truth():
    # X and y of other lengths were folded into each other's shape: raw numpy errors, and
    # four forecasts scored as a 2 x 2 block against a two-row truth of the wrong width
    model = RNNForecaster(**TINY).fit(X.iloc[:40], Y.iloc[:40])
    future, truth = X.iloc[40:44], Y.iloc[40:44]
    for x_rows, y_rows in [(4, 2), (2, 4), (3, 2)]:
        with pytest.raises(ValueError, match=rf"X has {x_rows} rows but y has {y_rows}"):
            model.score(future.iloc[:x_rows], truth.iloc[:y_rows])
        with pytest.raises(ValueError, match=rf"X has {x_rows} rows but y has {y_rows}"):
            model.score(future.to_numpy()[:x_rows], truth.to_numpy()[:y_rows])
    with pytest.raises(ValueError, match=r"y has 2 column\(s\) but the model forecasts 1"):
        model.score(future.to_numpy(), truth.to_numpy().reshape(2, 2))
    assert model.score(future, truth) == pytest.approx(model.score(future.to_numpy(), truth))


def test_score_of_an_empty_or_3d_truth_is_refused(fitted):
    # target only: the truth is score's one argument, X
    for empty in (Y.iloc[:0], np.array([]), np.zeros((0, 1))):
        with pytest.raises(ValueError, match=r"X is empty \(0 rows\)"):
            fitted.score(empty)
    with pytest.raises(ValueError, match=r"X has 3 dimension\(s\) \(4, 1, 1\)"):
        fitted.score(Y.iloc[40:44].to_numpy().reshape(4, 1, 1))
    with pytest.raises(ValueError, match=r"X has 2 column\(s\) but the model forecasts 1"):
        fitted.score(np.zeros((4, 2)))


def test_score_with_covariates_and_no_rows_of_x_gets_predicts_message():
    # a scalar or None as X raised "object of type 'int' has no len()"
    model = RNNForecaster(**TINY).fit(X.iloc[:40], Y.iloc[:40])
    for x in (3, 2.5, None):
        with pytest.raises((TypeError, ValueError), match=r"predict|X"):
            model.score(x, Y.iloc[40:43])


def test_predict_refuses_rows_of_more_than_two_dimensions(fitted):
    # a (3, 5, 7) array was taken as 3 steps without a word
    with pytest.raises(ValueError, match=r"Expected a 1D or 2D array, got 3D"):
        fitted.predict(np.zeros((3, 5, 7)))


@pytest.mark.parametrize(
    ("fault", "index", "fix"),
    [
        ("unsorted", INDEX[::-1], r"sort_index\(\)"),
        ("duplicated", INDEX[: N // 2].append(INDEX[: N // 2]), r"groupby\(level=0\)"),
        ("irregular", INDEX.delete(5).append(pd.DatetimeIndex(["2010-01-01"])), r"asfreq"),
    ],
)
def test_an_array_target_dated_by_x_has_x_index_faults_named_as_x(no_training, fault, index, fix):
    # they were reported as y's, with fixes (y.sort_index(), ...) that an array cannot take
    dated = X.iloc[: len(index)].set_axis(index)
    with pytest.raises(ValueError, match=rf"come from X's index.*{fix}"):
        RNNForecaster(**TINY).fit(dated, Y.to_numpy()[: len(index)])


def test_update_with_an_array_target_names_x_new_index_faults():
    model = RNNForecaster(**TINY).fit(X.iloc[:40], Y.iloc[:40].to_numpy())
    before = model.predict(X.iloc[40:42])
    with pytest.raises(ValueError, match=r"come from X_new's index.*sort_index"):
        model.update(X.iloc[40:44].iloc[::-1], Y.iloc[40:44].to_numpy())
    np.testing.assert_array_equal(model.predict(X.iloc[40:42]), before)


def test_update_of_a_one_series_model_refuses_panel_rows(fitted):
    # every series but the first was dropped silently
    new = pd.concat({"a": Y.iloc[40:42], "b": Y.iloc[40:42] + 100})
    before = snapshot(fitted)
    with pytest.raises(TypeError, match=r"y_new has a \(series id, time\) MultiIndex.*one series"):
        fitted.update(new)
    assert_unchanged(fitted, before)
    model = RNNForecaster(**TINY).fit(X.iloc[:40], Y.iloc[:40].to_numpy())
    future = pd.concat({"a": X.iloc[40:42], "b": X.iloc[40:42]})
    with pytest.raises(TypeError, match=r"X_new has a \(series id, time\) MultiIndex"):
        model.update(future, np.zeros(4))


def test_an_array_targets_dating_index_of_the_wrong_kind_is_named_as_x():
    # TypeErrors escaped the wrapper and named y_new, with y_new.index fixes an array cannot
    # take
    model = RNNForecaster(**TINY).fit(X.iloc[:40], Y.iloc[:40].to_numpy())
    new = X.iloc[40:42]
    for index in (new.index.strftime("%Y-%m-%d"), new.index.to_period("M")):
        with pytest.raises(TypeError, match=r"come from X_new's index, and that index has"):
            model.update(new.set_axis(index), np.zeros(2))


def test_messages_name_what_was_passed(fitted, no_training):
    # a set or a generator was "the scalar {1, 2, 3}"; score(None) "has 0 dimension(s)";
    # 3-D covariates at fit got scikit-learn's words without a fix; NaN in update rows was
    # told the model "cannot train"
    for rows, name in (({1, 2, 3}, "set"), ((i for i in range(3)), "generator")):
        with pytest.raises(TypeError, match=rf"got a {name}, which is not rows"):
            fitted.predict(rows)
    with pytest.raises(ValueError, match=r"X is None: score needs the true future values"):
        fitted.score(None)
    with pytest.raises(ValueError, match=r"got 3D array instead: covariates X are 2-D.*reshape"):
        RNNForecaster(**TINY).fit(np.zeros((N, 2, 1)), Y)
    with pytest.raises(ValueError, match=r"reads no missing values \(to train, to continue from"):
        fitted.update(with_nan(Y.iloc[40:44], at=1))


def test_missing_time_stamps_are_named_not_called_unsorted():
    """A NaT in the time index (pd.to_datetime(..., errors="coerce") leaves one for a bad
    label) was reported as an unsorted index, and the advised sort_index() only moved it to
    the end; two were called duplicates."""
    from tsrnn.datasets import load_air_passengers

    y = load_air_passengers().astype(float)
    gap = pd.Series(y.to_numpy(), index=y.index.where(np.arange(len(y)) != 5, pd.NaT))
    model = RNNForecaster(hidden_size=4, max_epochs=1, random_state=0)
    for bad in (gap, gap.sort_index()):
        with pytest.raises(ValueError, match=r"1 missing time stamp\(s\) \(NaT\)") as info:
            model.fit(bad)
        assert "unsorted" not in str(info.value)
    two = pd.Series(y.to_numpy(), index=y.index.where(~np.isin(np.arange(len(y)), [5, 9])))
    with pytest.raises(ValueError, match=r"2 missing time stamp\(s\) \(NaT\), at row\(s\) \[5, 9"):
        model.fit(two)
    X = pd.DataFrame(index=pd.DatetimeIndex(["1961-01-01", pd.NaT, "1961-03-01"]))
    fitted = RNNForecaster(hidden_size=4, max_epochs=1, random_state=0).fit(y)
    with pytest.raises(ValueError, match=r"X has 1 missing time stamp\(s\).*X = X\[X.index"):
        fitted.predict(X)
    time = list(pd.date_range("2000-01-01", periods=20, freq="D"))
    stamps = time + time[:5] + [pd.NaT] + time[6:]
    panel = pd.Series(
        np.arange(40.0), index=pd.MultiIndex.from_arrays([np.repeat(["a", "b"], 20), stamps])
    )
    with pytest.raises(ValueError, match=r"series 'b'\) has 1 missing.*get_level_values\(1\)"):
        RNNForecaster(hidden_size=4, max_epochs=1).fit(panel)


def test_masked_arrays_with_masked_values_are_refused_everywhere():
    """np.asarray and pandas read the values under a mask (netCDF's fill value 9.97e36):
    fit forecast 3.9e35, update and score took them, all without a word."""
    v = 50 + 10 * np.sin(np.arange(40) / 3)
    m = np.ma.masked_array(v.copy())
    m[10] = np.ma.masked
    m.data[10] = 9.96921e36
    fix = r"masked array with 1 masked value\(s\).*{}\.filled\(np\.nan\)"
    with pytest.raises(ValueError, match=fix.format("y")):
        RNNForecaster(**TINY).fit(m)
    with pytest.raises(ValueError, match=fix.format("X")):
        RNNForecaster(**TINY).fit(m.reshape(-1, 1), v)
    model = RNNForecaster(**TINY).fit(v)
    with pytest.raises(ValueError, match=fix.format("y_new")):
        model.update(m[8:13])
    # masked true values are not to be filled in: score the steps that have them
    with pytest.raises(ValueError, match=r"X is a masked array.*Score the steps that have"):
        model.score(m[8:13])
    with_x = RNNForecaster(**TINY).fit(v.reshape(-1, 1), v)
    with pytest.raises(ValueError, match=fix.format("X")):
        with_x.predict(m[8:13].reshape(-1, 1))
    # a target-only model reads X's length alone: nothing hides under the mask
    assert model.predict(m[8:13]).shape == (5,)
    # a masked array with nothing masked is its values
    np.testing.assert_array_equal(
        RNNForecaster(**TINY).fit(np.ma.masked_array(v)).predict(3), model.predict(3)
    )


def test_dropout_with_one_layer_warns_that_it_does_nothing():
    # torch.nn.GRU warns; the estimator built its one layer with dropout 0, silently
    with pytest.warns(UserWarning, match=r"dropout=0\.5 .*num_layers=1 it has no effect") as rec:
        one = RNNForecaster(**TINY, dropout=0.5).fit(Y)
    assert rec[0].filename == __file__  # the user's line, not scikit-learn's fit wrapper
    np.testing.assert_array_equal(one.predict(3), RNNForecaster(**TINY).fit(Y).predict(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        RNNForecaster(**TINY, dropout=0.5, num_layers=2).fit(Y)


def test_relu_with_a_gated_cell_warns_that_it_does_nothing():
    # torch.nn.GRU and LSTM take no nonlinearity; the estimator dropped it without a word
    for cell in ("gru", "lstm"):
        with pytest.warns(UserWarning, match=rf"nonlinearity='relu'.*cell='{cell}'.*ignores"):
            relu = RNNForecaster(**TINY, cell=cell, nonlinearity="relu").fit(Y)
        np.testing.assert_array_equal(
            relu.predict(3), RNNForecaster(**TINY, cell=cell).fit(Y).predict(3)
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        RNNForecaster(**TINY, cell="rnn", nonlinearity="relu").fit(Y)


def test_scoring_dated_training_rows_says_score_takes_the_rows_after():
    # the message said "predict forecasts the future only" to a call of score
    model = RNNForecaster(**TINY).fit(Y)
    for truth in (Y, Y[20:]):
        with pytest.raises(ValueError, match=r"score's of its true values.*not in-sample"):
            model.score(truth)


def test_a_row_vector_is_told_rows_are_time_steps():
    # "y is too short: it has 1 time step", without a word on the layout
    with pytest.raises(ValueError, match=r"one row of 48 columns: rows are time steps.*ravel"):
        RNNForecaster(**TINY).fit(Y.to_numpy().reshape(1, -1))


def test_a_horizon_beyond_what_memory_holds_names_h():
    # predict(10**9): numpy's MemoryError for 7.45 GiB; 2**63 - 1: "zero-size array to
    # reduction operation maximum which has no identity"
    model = RNNForecaster(**TINY).fit(Y)
    for h in (10**9, 2**63 - 1):
        with pytest.raises(ValueError, match=rf"h={h} asks for .* forecast values"):
            model.predict(h)


def test_rows_too_far_ahead_are_refused_before_the_forecast_runs(monkeypatch):
    """predict(h) refused more than 1e8 forecast values, but predict(X) with a stamp years
    ahead of minute data (2e8 recursive steps) ran for hours; score took the same path."""
    import tsrnn.forecaster as forecaster

    n = 60
    minutes = pd.date_range("2021-01-01", periods=n, freq="min")
    y = pd.Series(np.sin(np.arange(n) / 5) + 10, index=minutes)
    far = r"reaches .*2400-01-01.*1\.99e\+08 steps after the end.*mistyped year"
    models = {
        "datetime": (RNNForecaster(**TINY).fit(y), pd.DatetimeIndex(["2400-01-01"])),
        "period": (
            RNNForecaster(**TINY).fit(y.to_period()),
            pd.PeriodIndex(["2400-01-01 00:00"], freq="min"),
        ),
    }
    for model, stamps in models.values():
        with pytest.raises(ValueError, match=far):
            model.predict(stamps)
        with pytest.raises(ValueError, match=far):
            model.score(pd.Series([10.0], index=stamps))
    numbered = RNNForecaster(**TINY).fit(y.reset_index(drop=True))
    with pytest.raises(ValueError, match=r"reaches 1000000000, 1e\+09 steps after"):
        numbered.predict(pd.Series([1.0], index=[10**9]))
    panel = pd.concat({"a": y, "b": y}, names=["id", "time"])
    model = RNNForecaster(**TINY).fit(panel)
    rows = pd.MultiIndex.from_tuples([("a", pd.Timestamp("2400-01-01"))], names=["id", "time"])
    with pytest.raises(ValueError, match=r"series 'a'.*reaches"):
        model.predict(pd.Series([1.0], index=rows))
    # the cap counts every series forecast as far as the furthest: two series of one column
    # each may reach half of it, and a reach within it still forecasts
    monkeypatch.setattr(forecaster, "_MAX_FORECAST_VALUES", 200)

    def both(ahead):
        stamp = minutes[-1] + pd.Timedelta(minutes=ahead)
        rows = pd.MultiIndex.from_tuples([("a", stamp), ("b", stamp)], names=["id", "time"])
        return pd.Series([1.0, 1.0], index=rows)

    assert len(model.predict(both(100))) == 2
    with pytest.raises(ValueError, match=r"101 steps after the end.*more than 100 steps"):
        model.predict(both(101))
    assert len(model.predict(both(101).iloc[:1])) == 1  # one series alone may reach 200


def test_the_reach_cap_counts_steps_of_every_frequency():
    """The reach was estimated in a period's base units (15-minute periods counted 15 a
    step), and the estimate of business days and hours runs high: neither may refuse rows
    within the cap, and rows beyond it are refused whatever the frequency."""
    from tsrnn._data import TimeAxis, steps_ahead

    cases = [
        (pd.Period("2020-01-01 00:00", "15min"), TimeAxis("period", "15min")),
        (pd.Period("2020-01", "2M"), TimeAxis("period", "2M")),
        (pd.Timestamp("2024-01-01 16:00"), TimeAxis("datetime", "bh")),
        (pd.Timestamp("2024-01-05"), TimeAxis("datetime", "B")),  # a Friday
        (pd.Timestamp("2024-01-31"), TimeAxis("datetime", "ME")),
    ]
    for last, axis in cases:
        make = pd.period_range if axis.kind == "period" else pd.date_range
        rows = make(start=last, periods=3001, freq=axis.freq)[1:]
        steps = steps_ahead(last, axis, rows[-3:], 3, max_steps=3000)
        assert steps.tolist() == [2998, 2999, 3000], axis
        with pytest.raises(ValueError, match=r"reaches .* 3,001 steps after .* than 3,000"):
            steps_ahead(last, axis, make(start=rows[-1], periods=2, freq=axis.freq)[1:], 1,
                        max_steps=3000)


def test_a_sparse_target_is_told_to_convert_it_as_sparse_covariates_are():
    # "y must be 1-D or 2-D (rows are time steps), got a scalar": np.asarray of a sparse
    # matrix is a 0-d object array
    import scipy.sparse as sp

    y = sp.csr_matrix(np.asarray(Y, dtype=float).reshape(-1, 1))
    for call in (
        lambda: RNNForecaster(**TINY).fit(y),
        lambda: RNNForecaster(**TINY).fit(np.zeros((y.shape[0], 1)), y),
        lambda: RNNForecaster(**TINY).fit(Y).update(y),
    ):
        with pytest.raises(TypeError, match=r"Sparse data was passed for y(_new)?.*\.toarray"):
            call()
