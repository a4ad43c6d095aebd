"""The benchmark scripts refuse options they do not have, and settings that would write a
mislabelled full table, before any work (``benchmarks/README.md``: a partial run never
writes the full run's file)."""

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))


def _refused(module, argv, capsys, monkeypatch):
    written = []
    monkeypatch.setattr(module, "write_json", lambda *a, **k: written.append(a))
    with pytest.raises(SystemExit) as info:
        module.main(argv)
    assert info.value.code == 2 and not written
    return capsys.readouterr().err


def test_scripts_without_options_refuse_one(capsys, monkeypatch):
    """bench_revert.py and activations_triton.py read no options: --help, or a mistyped
    --quick, ran the whole benchmark and wrote over its committed results."""
    import bench_revert

    monkeypatch.setattr(bench_revert, "revert_base", None)  # the work would fail at once
    err = _refused(bench_revert, ["--quick"], capsys, monkeypatch)
    assert "unrecognized arguments: --quick" in err
    pytest.importorskip("triton")
    import activations_triton

    monkeypatch.setattr(activations_triton, "grid", None)
    err = _refused(activations_triton, ["--quick"], capsys, monkeypatch)
    assert "unrecognized arguments: --quick" in err


def test_bench_layers_refuses_settings_that_mislabel_its_table(capsys, monkeypatch):
    import bench_layers

    monkeypatch.setattr(bench_layers, "bench_cpu", None)  # the work would fail at once
    def refused(argv):
        return _refused(bench_layers, argv, capsys, monkeypatch)

    err = refused(["--kernels-only"])
    assert "--kernels-only times the Triton kernels: it needs --device cuda" in err
    assert "names a cell twice" in refused(["--cells", "rnn", "rnn"])
    if not bench_layers.torch.cuda.is_available():
        assert "needs a CUDA GPU" in refused(["--device", "cuda"])


def test_bench_fit_flags_pairs_timed_beside_other_work(capsys, monkeypatch):
    """A busy machine inflated the ratio in tsrnn's favour (torch's threads spin-wait for a
    core another process holds: the plain fit took 43-220 s instead of 3.6 s) and printed
    353x as an ordinary table. The machine's busy CPU time is faked here: the first pair
    beside a process keeping one core busy, the second alone."""
    import _common
    import bench_fit

    def fit(seconds):
        def run(name, seed=0, n_rows=None):
            clock["wall"] += seconds
            clock["own"] += seconds  # this process: one core for the fit's wall time
            clock["busy"] += seconds * (1 + others[0])
            return seconds, 0.1

        return run

    clock = {"wall": 0.0, "own": 0.0, "busy": 0.0}
    others = [1.0]
    monkeypatch.setattr(_common.time, "perf_counter", lambda: clock["wall"])
    monkeypatch.setattr(_common.time, "process_time", lambda: clock["own"])
    monkeypatch.setattr(_common, "_busy_cpu_seconds", lambda: clock["busy"])
    monkeypatch.setattr(bench_fit, "fit_plain", fit(3.0))
    monkeypatch.setattr(bench_fit, "fit_tsrnn", fit(0.5))
    monkeypatch.setattr(bench_fit, "peak_memory_mb", lambda side, name: 0.0)
    monkeypatch.setattr(bench_fit, "bench_predict", lambda repeat: 1e-3)
    monkeypatch.setattr(bench_fit, "write_json", lambda *a, **k: "results/fit.partial.json")
    monkeypatch.setattr(bench_fit, "setup_threads", lambda: None)  # the test process's
    monkeypatch.setattr("tsrnn.warmup", lambda **kwargs: None)

    with monkeypatch.context() as m:
        real = _common.OthersLoad.__exit__

        def exit_then_idle(self, *exc):
            out = real(self, *exc)
            others[0] = 0.0  # the other process ends after the first pair
            return out

        m.setattr(_common.OthersLoad, "__exit__", exit_then_idle)
        rows = json.loads(bench_fit.main(["--cases", "electricity"]))
    row = rows[0]
    assert row["others_cores"][0] == pytest.approx(1.0)
    assert all(c == pytest.approx(0.0) for c in row["others_cores"][1:])
    assert row["busy_pairs"] == [1]
    out = capsys.readouterr().out
    assert "WARNING electricity: other processes kept up to 1.0 core(s) busy during pair(s) [1]" \
        in out


@pytest.mark.parametrize(
    ("nbytes", "label"), [(64, "512-bit (AVX-512)"), (32, "256-bit (AVX2 or less)")]
)
def test_machine_header_names_the_kernels_vector_width(monkeypatch, nbytes, label):
    """The header says which vectors the Numba kernels were compiled for: the speed figures of
    an AVX-512 machine and of an AVX2 one differ by more than the targets' margins."""
    import _common

    from tsrnn.kernels.common import numba_simd

    monkeypatch.setattr(numba_simd, "VECTOR_BYTES", nbytes)
    assert _common.machine_header(2)["vectors"] == label


def test_bench_accuracy_per_series_takes_each_series_over_its_origins():
    """Each series' geometric mean of its MASE ratios over the origins, and the origins it won:
    a series that loses once by a little and wins once by a lot beats the baseline; one that
    loses at both origins does not, whatever the other series do."""
    import bench_accuracy
    import pandas as pd

    rows = [
        # series a: rnn/naive 1.1 then 0.5 (geometric mean 0.742), rnn/ets 2 then 0.5 (1)
        dict(dataset="d", series="a", origin=1, rnn=1.1, naive=1.0, ets=0.55),
        dict(dataset="d", series="a", origin=2, rnn=0.5, naive=1.0, ets=1.0),
        # series b: rnn/naive 1.2 then 1.05: loses both
        dict(dataset="d", series="b", origin=1, rnn=1.2, naive=1.0, ets=2.4),
        dict(dataset="d", series="b", origin=2, rnn=2.1, naive=2.0, ets=4.2),
    ]
    out = bench_accuracy.per_series(pd.DataFrame(rows)).set_index("series")
    assert list(out.index) == ["a", "b"]
    assert out.loc["a", "rnn_over_naive"] == pytest.approx((1.1 * 0.5) ** 0.5)
    assert out.loc["a", "rnn_over_ets"] == pytest.approx(1.0)
    assert out.loc["b", "rnn_over_naive"] == pytest.approx((1.2 * 1.05) ** 0.5)
    assert out.loc["b", "rnn_over_ets"] == pytest.approx(0.5)
    assert out["origins"].tolist() == [2, 2]
    assert out["won_naive"].tolist() == [1, 0]
    assert out["won_ets"].tolist() == [1, 2]
