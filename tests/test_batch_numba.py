"""The Numba batch builder against the torch reference (``make_batch_torch``)."""

import numpy as np
import pytest
import torch

from tsrnn import _training as training
from tsrnn._batch_numba import train_batch
from tsrnn._data import WindowPlan


def _problem(
    *, C=2, K=0, H=1, lead=0, seasonal=None, period=None, revert=False, rng=0, min_lead=None
):
    rng = np.random.default_rng(rng)
    offsets = np.array([0, 70, 130, 200])
    y = rng.normal(size=(200, C)).cumsum(axis=0)
    x = rng.normal(size=(200, K)) if K else None
    plan = WindowPlan(
        offsets, window=9, horizon=H, n_valid=[5, 0, 7], lead=lead, min_lead=min_lead
    )
    if seasonal == "all":
        seasonal = np.ones((3, C), dtype=bool)
    elif seasonal == "mixed":
        seasonal = np.array([[True, False], [False, False], [True, True]])[:, :C]
    rev = None
    if revert:  # reverting bases (phi, mu) for some series and columns, the last value elsewhere
        rev = np.zeros((3, C, 2))
        rev[..., 0] = 1.0
        rev[0, 0] = (0.6, 1.5)
        rev[1, 0] = (0.8, -1.0)  # a series without a season in the "mixed" layouts
        rev[2, -1] = (-0.3, -2.0)
    return training.Problem(y, x, plan, H, seasonal, period, rev)


def _layout_id(layout):
    return ",".join(f"{k}={v}" for k, v in layout.items()) or "plain"


LAYOUTS = [
    dict(),
    dict(C=1),
    dict(K=3),
    dict(H=3, K=2),
    dict(lead=6, seasonal="all"),
    dict(lead=6, seasonal="mixed"),
    dict(lead=4, seasonal="mixed", H=3, K=2),
    dict(lead=4, seasonal="all", H=5, C=1, K=1),
    # the base averaged over past seasons (lead = 3 seasons of 4)
    dict(lead=12, period=4, seasonal="all"),
    dict(lead=12, period=4, seasonal="mixed", H=3, K=2),
    dict(lead=8, period=4, seasonal="all", H=4, C=1, K=1),
    # bases that revert to the mean (models without a seasonal base)
    dict(revert=True),
    dict(revert=True, H=3, K=2),
    dict(revert=True, C=1, H=4),
    # and beside seasonal bases: series 1 has none in the mixed layouts, and reverts
    dict(lead=6, seasonal="mixed", revert=True),
    dict(lead=12, period=4, seasonal="mixed", revert=True, H=3, K=2),
    dict(lead=4, seasonal="mixed", revert=True, C=1, H=2),
    # windows with fewer seasons before them than the base averages (min_lead < lead): the
    # first series' first blocks start before row 0, the others' in the series before them
    dict(lead=12, period=4, seasonal="all", min_lead=4),
    dict(lead=12, period=4, seasonal="mixed", min_lead=4, revert=True, H=3, K=2),
    dict(lead=8, period=4, seasonal="all", min_lead=4, H=4, C=1, K=1),
    dict(lead=24, period=4, seasonal="mixed", min_lead=8, H=2),
]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("layout", LAYOUTS, ids=_layout_id)
def test_matches_torch_reference(layout, dtype):
    problem = _problem(**layout)
    starts = problem.plan.train_starts(np.random.default_rng(1).permutation(problem.plan.n_train))
    if "min_lead" in layout:  # every window: those of each history, at each series' start
        assert (problem.plan.history(starts) < problem.plan.lead).any() and (starts < 0).any()
    else:
        starts = starts[:17]
    inputs, targets = train_batch(problem, starts, dtype)
    ref_in, ref_tg = training.make_batch_torch(problem, starts, "cpu", dtype)
    # float32: the reference's prefix sums run in float32 (Numba's in float64), over up to
    # 33 rows of a random walk reaching 20: sums of 600, whose float32 spacing is 6e-5
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=5e-5)
    assert inputs.dtype == targets.dtype == dtype
    assert inputs.shape == ref_in.shape and targets.shape == ref_tg.shape
    assert inputs.is_contiguous() and targets.is_contiguous()
    torch.testing.assert_close(inputs, ref_in, **tol)
    torch.testing.assert_close(targets, ref_tg, **tol)


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_a_seasonal_panel_reverts_where_it_has_no_season(backend):
    """Series 1 has no season in the mixed layout and its first column a reverting base: its
    windows' targets and base inputs change, nothing else does."""
    kw = dict(lead=6, seasonal="mixed", H=2)
    with_rev, without = _problem(**kw, revert=True), _problem(**kw)
    plan = with_rev.plan
    starts = plan.train_starts(np.arange(plan.n_train))
    build = {
        "numba": lambda p: train_batch(p, starts, torch.float64),
        "torch": lambda p: training.make_batch_torch(p, starts, "cpu", torch.float64),
    }[backend]
    (inputs, targets), (inputs0, targets0) = build(with_rev), build(without)
    series = np.searchsorted(plan.offsets, starts, side="right") - 1
    mine = torch.from_numpy(series == 1)
    C, H = 2, 2
    changed = [k * C for k in range(H)]  # column 0 of each step ahead
    assert not torch.allclose(targets[:, mine][..., changed], targets0[:, mine][..., changed])
    same = [k * C + 1 for k in range(H)]
    torch.testing.assert_close(targets[:, mine][..., same], targets0[:, mine][..., same])
    torch.testing.assert_close(targets[:, ~mine], targets0[:, ~mine])
    torch.testing.assert_close(inputs[:, ~mine], inputs0[:, ~mine])
    # the window's own rows are read alike; the base inputs (after them) are what changes
    torch.testing.assert_close(inputs[:, mine][..., :C], inputs0[:, mine][..., :C])
    assert not torch.allclose(inputs[:, mine][..., C:], inputs0[:, mine][..., C:])


@pytest.mark.parametrize("layout", [dict(K=2), dict(lead=6, seasonal="mixed", H=2)])
def test_noise_matches_torch_reference_draw_for_draw(layout):
    problem = _problem(**layout)
    starts = problem.plan.train_starts(np.arange(11))
    noise = training.input_noise(problem, "cpu", torch.float64)
    torch.manual_seed(3)
    inputs, targets = train_batch(problem, starts, torch.float64, noise)
    torch.manual_seed(3)
    ref_in, ref_tg = training.make_batch_torch(problem, starts, "cpu", torch.float64, noise)
    torch.testing.assert_close(inputs, ref_in)
    torch.testing.assert_close(targets, ref_tg)
    # the noise is there, on the target-derived inputs only
    clean, _ = train_batch(problem, starts, torch.float64)
    n = len(noise)
    assert not torch.allclose(inputs[..., :n], clean[..., :n])
    torch.testing.assert_close(inputs[..., n:], clean[..., n:])


def test_make_batch_takes_the_numba_path_on_cpu(monkeypatch):
    problem = _problem(K=1)
    starts = problem.plan.train_starts(np.arange(5))
    calls = []
    monkeypatch.setattr(
        training, "make_batch_torch", lambda *a, **k: calls.append(a) or (None, None)
    )
    inputs, _ = training.make_batch(problem, starts, "cpu", torch.float32)
    assert calls == [] and inputs.shape == (9, 5, problem.input_size)
    training.make_batch(problem, starts, "cpu", torch.float16)  # no Numba path for float16
    assert len(calls) == 1
