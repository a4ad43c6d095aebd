"""``benchmarks/bench_fit.py`` compares the forecaster's fit with a plain PyTorch loop doing the
same work: the loop's base, inputs and targets must be the forecaster's, window for window."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.preprocessing import StandardScaler

from tsrnn import RNNForecaster, _training

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_fit


@pytest.mark.parametrize("name", ["hourly_2000", "electricity"])
def test_the_plain_loop_builds_the_forecaster_s_batches(name):
    cfg = bench_fit.CASES[name]
    X, y = bench_fit.load_case(name, 900)
    model = RNNForecaster(early_stopping=False, dtype="float64", **cfg)
    problem = (model._prepare(y, None) if X is None else model._prepare(X, y))["problem"]
    m, years = bench_fit.SEASON[name][0], problem.plan.lead // bench_fit.SEASON[name][0]
    if name == "hourly_2000":
        assert years > 1  # the base averaged over past seasons is compared too
    ys = StandardScaler().fit_transform(y.to_numpy()[:, None])[:, 0]
    np.testing.assert_allclose(problem.y[:, 0], ys, rtol=0, atol=1e-12)
    xs = None
    if X is not None:
        xs = torch.from_numpy(StandardScaler().fit_transform(X.to_numpy()))
    L, W = m * years, cfg["window"]
    windows = torch.from_numpy(ys).unfold(0, L + W + 1, 1)
    bases = torch.from_numpy(bench_fit.plain_base(ys, m, years)).unfold(0, L + W + 1, 1)
    assert windows.shape[0] == problem.plan.n_train  # the same windows, stride 1
    idx = torch.arange(windows.shape[0])
    inputs, targets = bench_fit.plain_batch(windows, bases, idx, L, W, xs)
    starts = problem.plan.train_starts(np.arange(problem.plan.n_train))
    ref_in, ref_tg = _training.make_batch_torch(problem, starts, "cpu", torch.float64)
    torch.testing.assert_close(inputs, ref_in.transpose(0, 1), rtol=0, atol=1e-10)
    torch.testing.assert_close(targets, ref_tg.transpose(0, 1)[..., 0], rtol=0, atol=1e-10)
    # and the noise: 2 sd of the one-step changes on the window and the base, as the loop's
    noise = _training.input_noise(problem, "cpu", torch.float64)
    torch.testing.assert_close(noise, torch.full((2,), bench_fit.INPUT_NOISE * np.diff(ys).std(),
                                                 dtype=torch.float64))
