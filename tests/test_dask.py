"""Scale-out through joblib's Dask backend on a real distributed.LocalCluster (127.0.0.1)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GridSearchCV, TimeSeriesSplit

distributed = pytest.importorskip("distributed", reason="needs dask[distributed] (test extra)")
joblib = pytest.importorskip("joblib")

from tsrnn import RNNForecaster  # noqa: E402

TINY = dict(hidden_size=4, max_epochs=3, window=6, batch_size=16, random_state=0)


def _series(n=80):
    t = np.arange(n)
    values = 10 + np.sin(2 * np.pi * t / 12) + 0.01 * t
    return pd.Series(values, index=pd.period_range("2000-01", periods=n, freq="M"), name="y")


def _threads_in_task():
    import numba
    import torch

    from tsrnn.kernels.common.numba_config import num_threads

    with num_threads(None):
        inside = numba.get_num_threads()
    return {"numba": numba.get_num_threads(), "numba_in_fit_context": inside,
            "torch": torch.get_num_threads()}


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None, silence_logs=40,
    ) as cluster, Client(cluster) as c:
        import tsrnn

        # Kernels compiled (or loaded from the disk cache) once per worker, before any task.
        c.run(tsrnn.warmup, cells=["gru"], dtypes=["float32"])
        yield c


def test_grid_search_on_dask_matches_serial(client):
    y = _series()
    grid = {"hidden_size": [3, 5], "learning_rate": [0.01, 0.03]}
    cv = TimeSeriesSplit(n_splits=2, test_size=6)
    serial = GridSearchCV(RNNForecaster(**TINY), grid, cv=cv).fit(y)
    with joblib.parallel_config(backend="dask"):
        dist = GridSearchCV(RNNForecaster(**TINY), grid, cv=cv, n_jobs=-1).fit(y)
    np.testing.assert_array_equal(
        serial.cv_results_["mean_test_score"], dist.cv_results_["mean_test_score"]
    )
    assert serial.best_params_ == dist.best_params_


def test_one_thread_per_task(client):
    got = client.submit(_threads_in_task, pure=False).result()
    assert got == {"numba": 1, "numba_in_fit_context": 1, "torch": 1}


def test_fitted_model_round_trips_through_a_worker(client):
    y = _series()
    model = RNNForecaster(**TINY).fit(y)
    local = model.predict(12)
    remote = client.submit(lambda m: m.predict(12), model).result()
    pd.testing.assert_series_equal(local, remote)
    refit = client.submit(lambda m, s: m.fit(s), RNNForecaster(**TINY), y).result()
    pd.testing.assert_series_equal(refit.predict(12), local)


def test_worker_error_reaches_caller(client):
    bad = _series().to_numpy(copy=True)
    bad[5] = np.nan
    future = client.submit(lambda m, s: m.fit(s), RNNForecaster(**TINY), bad)
    with pytest.raises(ValueError, match="NaN"):
        future.result()
