"""How often the reverting base (``tsrnn._data.revert_base``) is taken, and what it does
to forecasts, on simulated series whose answer is known.

For each kind of series and length ``n``, 400 series are simulated with ``n + h`` rows. The
base is decided on the first ``n`` (scaled as the forecaster scales them), and its forecast
of the next ``h = window`` rows (the base alone, no network) is compared with the last
value's: the error is the mean absolute error over the last value's, and the table gives
how many series took the base and the geometric mean of that ratio over all of them (1 where
the last value was kept). Below 1 the base helps. ``window`` is 12 at 100 and 150 rows, 24
at 300, as ``window='auto'`` would have it for such series.

Two tests are compared: the forecaster's (out of sample: ``phi`` fitted on the first half, the
mean of the rows up to each origin) and session 28's, written out here (the same base judged
on the rows it was fitted to, with the mean of all of them known at every origin).

Usage::

    python benchmarks/bench_revert.py     # writes results/revert.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_header, print_header, table, write_json

from tsrnn._data import REVERT_GATE, _fit_phi, revert_base

REPEATS = 400
SIZES = [(100, 12), (150, 12), (300, 24)]


def in_sample_base(y: np.ndarray, h: int):
    """Session 28's test: (phi, mu) or None. The second half's forecasts, with the mean of
    every row and phi fitted to those same forecasts, must beat the last value's."""
    n = len(y)
    half = n // 2
    rows = y[None, :, None]
    mu = rows.mean(axis=1)
    d = rows - mu[:, None]
    phi = _fit_phi(d, half, n - h, h)
    last = d[:, half : n - h]
    naive = revert = 0.0
    for k in range(1, h + 1):
        ahead = d[:, half + k : n - h + k]
        naive += np.abs(ahead - last).sum()
        revert += np.abs(ahead - phi**k * last).sum()
    return (phi[0, 0], mu[0, 0]) if revert < REVERT_GATE * naive else None


def simulate(kind: str, n: int, rng) -> np.ndarray:
    e = rng.normal(size=n)
    if kind == "random walk":
        return np.cumsum(e)
    if kind == "trend + noise":  # 0.05 a row, noise sd 2
        return 0.05 * np.arange(n) + 2 * e
    phi = {"trend + AR(0.7)": 0.7, "AR(0.9)": 0.9, "AR(0.5)": 0.5}[kind]
    a = np.zeros(n)
    for t in range(1, n):
        a[t] = phi * a[t - 1] + e[t]
    return a + (0.05 * np.arange(n) if kind.startswith("trend") else 0)


def main(argv=None) -> None:
    # no options: --help, or a mistyped one, ran the whole benchmark over its results file
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    kinds = ["random walk", "trend + noise", "trend + AR(0.7)", "AR(0.9)", "AR(0.5)"]
    rows = []
    for n, h in SIZES:
        for i, kind in enumerate(kinds):
            rng = np.random.default_rng([n, i])
            ratios = {"now": [], "in_sample": []}
            for _ in range(REPEATS):
                y = simulate(kind, n + h, rng)
                y = (y - y[:n].mean()) / y[:n].std()
                naive = np.abs(y[n:] - y[n - 1]).mean()
                found = revert_base(y[:n, None], [0, n], [n], h)
                bases = {
                    "now": None if found is None else tuple(found[0, 0]),
                    "in_sample": in_sample_base(y[:n], h),
                }
                for name, base in bases.items():
                    if base is None:
                        ratios[name].append(np.nan)
                        continue
                    phi, mu = base
                    forecast = mu + phi ** np.arange(1, h + 1) * (y[n - 1] - mu)
                    ratios[name].append(np.abs(y[n:] - forecast).mean() / naive)
            row = dict(series=kind, n=n, window=h)
            for name, r in ratios.items():
                r = np.array(r)
                row[f"{name}_taken"] = int(np.isfinite(r).sum())
                row[f"{name}_error"] = float(np.exp(np.log(np.where(np.isfinite(r), r, 1)).mean()))
            rows.append(row)
    info = machine_header()
    print_header(info)
    columns = [
        ("series", "series", "s"),
        ("n", "rows", "d"),
        ("window", "window", "d"),
        ("now_taken", "taken", "d"),
        ("now_error", "error", ".3f"),
        ("in_sample_taken", "taken, s28", "d"),
        ("in_sample_error", "error, s28", ".3f"),
    ]
    print(table(rows, columns))
    print(f"# of {REPEATS} series each; error: geometric mean over all of them (1 where kept)")
    path = write_json("revert", {"machine": info, "repeats": REPEATS, "rows": rows})
    print(f"# written {path}")


if __name__ == "__main__":
    main()
