"""Many series in one global model: fit time per epoch, peak memory, predict and update.

Generates panels with ``tsrnn.datasets.make_panel`` (series of 200 points each) and fits one
``RNNForecaster`` for one epoch, each run in a fresh process so its peak memory (the resident
high-water mark during the fit, above the resident memory just before it, as in
``bench_fit.py``) is its own. Memory must grow with the data, not
with the number of windows: at a fixed panel, a longer window multiplies the values a
materialised (windows x window) array would hold, but must not change the peak; the
largest run is the 10,000-series panel of the many-series issue. After the fit, the run
times ``predict(24)`` for every series, then ``predict(X)`` and ``score`` of the rows held back
(one new row of each series), and ``update`` with them.

Usage::

    python benchmarks/bench_panel.py          # writes results/panel.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_header, print_header, table, write_json

RUNS = [(1_000, 24), (1_000, 96), (10_000, 24)]
LENGTH = 200

_CHILD = """
import json, sys, time
import numba, torch
sys.path.insert(0, {here!r})
from bench_fit import read_status, reset_peak
torch.set_num_threads(2)
from tsrnn import RNNForecaster
from tsrnn.datasets import make_panel
n_series, window, length = {n}, {w}, {length}
# one row more per series: the last one is given to update after the fit
full = make_panel(n_series, min_length=length + 1, max_length=length + 1, random_state=0)
new = full.groupby(level=0).tail(1)
y = full.drop(new.index)
model = RNNForecaster(hidden_size=32, window=window, batch_size=256, max_epochs=1,
                      early_stopping=False, random_state=0, n_threads=2)
# the peak above what the process holds just before the fit (not its lifetime peak, which
# includes make_panel's temporaries): the high-water mark is reset, then read back
base = reset_peak()
t0 = time.perf_counter()
model.fit(y)
fit_s = time.perf_counter() - t0
peak = read_status("VmHWM")
# the model's forecasts for every series, and the rows that move every series' end on
t0 = time.perf_counter()
model.predict(24)
predict_s = time.perf_counter() - t0
t0 = time.perf_counter()
model.predict(new)  # the rows held back: one step of every series, given as rows
predict_rows_s = time.perf_counter() - t0
t0 = time.perf_counter()
model.score(new)
score_s = time.perf_counter() - t0
t0 = time.perf_counter()
model.update(new)
update_s = time.perf_counter() - t0
# every window of every series, after the seasons of history each window needs (the
# forecaster's rule; the base averages model._lead_ rows where there are that many)
from tsrnn._data import window_seasons
m = model.seasonal_period_
min_lead = min(model._lead_, window_seasons([length] * n_series, m, window, 1) * m)
n_windows = n_series * (length - window - min_lead)
print(json.dumps(dict(
    n_series=n_series, window=window, points=len(y), n_windows=n_windows,
    data_mb=y.to_numpy().nbytes / 2**20,
    materialised_mb=n_windows * (window + 1) * 4 / 2**20,
    epoch_s=model.history_[0]["seconds"], fit_s=fit_s, peak_above_base_mb=(peak - base) / 1024,
    predict_s=predict_s, predict_rows_s=predict_rows_s, score_s=score_s, update_s=update_s,
)))
"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.parse_args(argv)
    import tsrnn

    tsrnn.warmup(cells=["gru"], dtypes=["float32"])
    rows = []
    for n, w in RUNS:
        code = _CHILD.format(n=n, w=w, length=LENGTH, here=str(Path(__file__).resolve().parent))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"  {n} series, window {w}: {rows[-1]['epoch_s']:.1f} s/epoch", file=sys.stderr)
    info = machine_header(2)
    print_header(info)
    print(table(rows, [
        ("n_series", "series", "d"), ("window", "window", "d"), ("points", "points", "d"),
        ("n_windows", "windows", "d"), ("data_mb", "data MiB", ".1f"),
        ("materialised_mb", "as windows MiB", ".0f"), ("peak_above_base_mb", "peak +MiB", ".0f"),
        ("epoch_s", "s/epoch", ".1f"), ("fit_s", "fit s", ".1f"),
        ("predict_s", "predict(24) s", ".2f"), ("predict_rows_s", "predict(X) s", ".2f"),
        ("score_s", "score s", ".2f"), ("update_s", "update s", ".2f"),
    ]))
    path = write_json("panel", {"machine": info, "rows": rows})
    print(f"# written {path}")


if __name__ == "__main__":
    main()
