"""Speed of a whole ``RNNForecaster.fit`` against the plain PyTorch loop a user would write.

Same work on both sides: the same scaled series, windows of the same length with stride 1 and
a next-value target at every step, as the forecaster builds them (inputs centred on the
window's mean, the seasonal base as a second input and as what the network corrects, input
noise of 2 times the sd of the series' one-step changes),
the same GRU size and linear head, batch size, Adam and learning rate, gradient clipping by norm,
epochs, float32 and 2 threads; no early stopping. The two run alternately in one process (both
warmed up first; the sides take turns going first), and the table reports the median time ratio
(and the range over the alternated pairs), the wall times,
the final training losses (they must be comparable) and the peak memory of each (measured in
a fresh subprocess per side). Pairs timed while other processes kept cores busy (from
``/proc/stat``) are flagged under the table: beside other work torch's threads spin-wait, and
the plain loop's times, not the code's, set the ratio.

Also times ``predict(h=24)`` of a fitted default model.

Usage::

    python benchmarks/bench_fit.py            # writes results/fit.json
    python benchmarks/bench_fit.py --quick    # fewer repeats
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import OthersLoad, machine_header, print_header, table, write_json

from tsrnn import RNNForecaster
from tsrnn.datasets import load_electricity_demand, make_sine_mixture

THREADS = 2
# a pair during which other processes kept more cores busy than this is flagged as unreliable
BUSY_CORES = 0.2
# Both series are seasonal (daily): the forecaster's network corrects the seasonal base, reads
# it as an input next to the window, and gets input noise of 2 times the sd of the series'
# one-step changes (see docs/api-notes.md); the plain loop does the same work. The base is the
# seasonal naive forecast y[t+1-m] on electricity, and on the hourly sine mixture (as the
# forecaster chooses it from the training rows) its average over 8 days: the season (m, past
# seasons averaged). fit_tsrnn checks the choice.
SEASON = {"hourly_2000": (24, 8), "electricity": (48, 1)}
INPUT_NOISE = 2.0
CASES = {
    "hourly_2000": dict(hidden_size=32, window=48, batch_size=32, max_epochs=2),
    "electricity": dict(hidden_size=64, window=96, batch_size=256, max_epochs=1),
}


def load_case(name, n_rows=None):
    """(X (N, K) DataFrame or None, y (N,) Series) for the forecaster; ``n_rows``: the first
    rows only (warm-up runs)."""
    if name == "hourly_2000":
        y = make_sine_mixture(2000, periods=(24.0, 168.0), noise=0.2, freq="h", random_state=0)
        return None, y.iloc[:n_rows]
    X, y = load_electricity_demand(return_X_y=True)
    return X.astype("float64").iloc[:n_rows], y.iloc[:n_rows]


def fit_tsrnn(name, seed=0, n_rows=None):
    cfg = CASES[name]
    X, y = load_case(name, n_rows)
    model = RNNForecaster(
        cell="gru",
        optimizer="adam",
        learning_rate=1e-3,
        clip_norm=1.0,
        early_stopping=False,
        scaler="standard",
        dtype="float32",
        n_threads=THREADS,
        random_state=seed,
        **cfg,
    )
    t0 = time.perf_counter()
    model.fit(y) if X is None else model.fit(X, y)
    seconds = time.perf_counter() - t0
    if n_rows is None and model._lead_ != SEASON[name][0] * SEASON[name][1]:
        raise RuntimeError(f"{name}: the forecaster's base is not the one of SEASON")
    return seconds, model.history_[-1]["train_loss"]


class PlainNet(torch.nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.rnn = torch.nn.GRU(input_size, hidden_size, batch_first=True)
        self.head = torch.nn.Linear(hidden_size, 1)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


def plain_base(ys, m, years):
    """The base of every row, as a plain user computes it once for the whole series: the
    forecast of y[p+1] from y[:p+1], the last season's mean plus the mean over the past
    ``years`` seasons of y[p+1-j*m] less its season's mean (with one season: y[p+1-m], the
    seasonal naive forecast). Rows before ``m * years`` are left at 0 (never read)."""
    base = np.zeros_like(ys)
    if years == 1:
        base[m - 1 : -1] = ys[:-m]
        return base
    L = m * years
    cs = np.concatenate([[0.0], np.cumsum(ys, dtype=np.float64)])
    mean = np.zeros(len(ys))
    mean[m - 1 :] = (cs[m:] - cs[:-m]) / m  # of y[e-m+1 .. e], at e
    p = np.arange(L, len(ys) - 1)
    offsets = sum(ys[p + 1 - j * m] - mean[p - (j - 1) * m] for j in range(1, years + 1))
    base[p] = mean[p] + offsets / years
    return base


def plain_batch(windows, base_windows, idx, L, W, xs=None, noise_sd=None):
    """Inputs (B, W, F) and targets (B, W) of the plain loop's windows ``idx``: the window
    and the base, centred on the window's mean (with noise when ``noise_sd`` is given), the
    covariates of the next step; the next value less the base."""
    win = windows[idx]  # (B, L + W + 1)
    hist, target = win[:, L : L + W], win[:, L + 1 :]
    base = base_windows[idx][:, L : L + W]  # the base at each position
    level = hist.mean(dim=1, keepdim=True)
    inp = torch.stack([hist - level, base - level], dim=-1)
    if noise_sd is not None:
        inp = inp + noise_sd * torch.randn_like(inp)
    if xs is not None:
        rows = idx[:, None] + L + torch.arange(1, W + 1)
        inp = torch.cat([inp, xs[rows]], dim=-1)
    return inp, target - base  # the network corrects the seasonal base


def fit_plain(name, seed=0, n_rows=None):
    """The loop a PyTorch user writes for the same job."""
    cfg = CASES[name]
    X, y = load_case(name, n_rows)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    ys = StandardScaler().fit_transform(y.to_numpy()[:, None])[:, 0].astype(np.float32)
    series = torch.from_numpy(ys)
    # Covariates of the step being predicted (known in advance), as the forecaster feeds them.
    xs = None
    if X is not None:
        xs = torch.from_numpy(StandardScaler().fit_transform(X.to_numpy()).astype(np.float32))
    W, (m, years) = cfg["window"], SEASON[name]
    L = m * years  # the history the base reads before a window
    bases = torch.from_numpy(plain_base(ys, m, years).astype(np.float32))
    # the history, the window, the next value: (N - L - W, L + W + 1) views, stride 1
    windows = series.unfold(0, L + W + 1, 1)
    base_windows = bases.unfold(0, L + W + 1, 1)
    noise_sd = INPUT_NOISE * float(np.diff(ys).std())
    net = PlainNet(2 + (0 if xs is None else xs.shape[1]), cfg["hidden_size"])
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    n = windows.shape[0]
    for _ in range(cfg["max_epochs"]):
        total = 0.0
        order = torch.from_numpy(rng.permutation(n))  # every window once per epoch
        for i in range(0, n, cfg["batch_size"]):
            idx = order[i : i + cfg["batch_size"]]
            inp, target = plain_batch(windows, base_windows, idx, L, W, xs, noise_sd)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(net(inp), target.unsqueeze(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            total += float(loss.detach()) * len(idx)
    return time.perf_counter() - t0, total / n


def peak_memory_mb(side, name):
    """Peak resident memory (MiB) of a fresh process during one fit, above what it held before
    the fit (interpreter, torch, numba, the data loaded, and what the allocators kept from a
    400-row warm-up fit of the same side: the growth a fit adds, not its whole footprint): the
    kernel's high-water mark is reset just before the fit (``/proc/self/clear_refs``), then
    read back (``VmHWM``)."""
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r});"
        "import bench_fit as b; b.setup_threads();"
        f"b.load_case({name!r}); b.fit_{side}({name!r}, n_rows=400);"
        "r0 = b.reset_peak();"
        f"b.fit_{side}({name!r});"
        "print((b.read_status('VmHWM') - r0) / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def read_status(key):
    """A field of ``/proc/self/status`` in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def reset_peak():
    """Reset the peak-RSS mark to the current RSS; returns the current RSS (KiB)."""
    import gc

    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    return read_status("VmRSS")


def setup_threads():
    torch.set_num_threads(THREADS)
    import numba

    numba.set_num_threads(min(THREADS, numba.config.NUMBA_NUM_THREADS))


def bench_predict(repeat):
    from tsrnn.datasets import load_air_passengers

    y = load_air_passengers()
    model = RNNForecaster(random_state=0, n_threads=THREADS).fit(y)
    model.predict(24)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        model.predict(24)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one timed pair per case")
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = p.parse_args(argv)
    repeated = sorted({c for c in args.cases if args.cases.count(c) > 1})
    if repeated:
        p.error(f"--cases names {repeated} more than once: give each case once")
    setup_threads()
    import tsrnn

    tsrnn.warmup(cells=["gru"], dtypes=["float32"])
    rows, warnings_ = [], []
    for name in args.cases:
        # warm caches (dataset files, kernels, torch's first autograd pass) on both sides
        # before timing either
        fit_tsrnn(name)
        fit_plain(name, n_rows=400)
        pairs = 1 if args.quick else 5
        t_ours, t_plain, l_ours, l_plain, others = [], [], [], [], []
        for i in range(pairs):
            # the sides take turns going first (plain, tsrnn; tsrnn, plain; ...)
            order = (fit_plain, fit_tsrnn) if i % 2 == 0 else (fit_tsrnn, fit_plain)
            with OthersLoad() as load:
                got = {fit: fit(name) for fit in order}
            others.append(load.cores)
            t_plain.append(got[fit_plain][0])
            l_plain.append(got[fit_plain][1])
            t_ours.append(got[fit_tsrnn][0])
            l_ours.append(got[fit_tsrnn][1])
        ratios = [a / b for a, b in zip(t_plain, t_ours)]
        busy = [i + 1 for i, c in enumerate(others) if c is not None and c > BUSY_CORES]
        if busy:
            warnings_.append(
                f"# WARNING {name}: other processes kept up to {max(others):.1f} core(s) busy "
                f"during pair(s) {busy}: those times are not the code's (torch's threads "
                "spin-wait for a core another process holds). Rerun on an idle machine."
            )
            print(warnings_[-1], file=sys.stderr)
        rows.append(
            dict(
                case=name,
                **{
                    k: CASES[name][k] for k in ("hidden_size", "window", "batch_size", "max_epochs")
                },
                plain_s=statistics.median(t_plain),
                tsrnn_s=statistics.median(t_ours),
                speedup=statistics.median(ratios),
                speedup_range=f"{min(ratios):.2f}-{max(ratios):.2f}",
                plain_pairs_s=t_plain,
                tsrnn_pairs_s=t_ours,
                # cores other processes kept busy during each pair (None: no /proc/stat)
                others_cores=others,
                busy_pairs=busy,
                plain_loss=l_plain[-1],
                tsrnn_loss=l_ours[-1],
                plain_peak_mb=peak_memory_mb("plain", name),
                tsrnn_peak_mb=peak_memory_mb("tsrnn", name),
            )
        )
        print(f"  {name}: x{rows[-1]['speedup']:.2f}", file=sys.stderr)
    predict_s = bench_predict(5 if args.quick else 20)
    info = machine_header(THREADS)
    print_header(info)
    print(
        table(
            rows,
            [
                ("case", "case", "s"),
                ("hidden_size", "H", "d"),
                ("window", "W", "d"),
                ("batch_size", "B", "d"),
                ("max_epochs", "epochs", "d"),
                ("plain_s", "plain s", ".2f"),
                ("tsrnn_s", "tsrnn s", ".2f"),
                ("speedup", "x", ".2f"),
                ("speedup_range", "x range", "s"),
                ("plain_loss", "plain loss", ".4f"),
                ("tsrnn_loss", "tsrnn loss", ".4f"),
                ("plain_peak_mb", "plain +MiB", ".0f"),
                ("tsrnn_peak_mb", "tsrnn +MiB", ".0f"),
            ],
        )
    )
    print(
        f"# predict(24) of a default model on air_passengers: {predict_s * 1e3:.2f} ms "
        f"({predict_s / 24 * 1e6:.0f} us per step)"
    )
    for line in warnings_:
        print(line)
    partial = args.quick or set(args.cases) != set(CASES)
    path = write_json(
        "fit", {"machine": info, "rows": rows, "predict_24_s": predict_s}, partial=partial
    )
    print(f"# written {path}")
    return json.dumps(rows)


if __name__ == "__main__":
    main()
