"""The benchmark scripts refuse options they do not have, and settings that would write a
mislabelled full table, before any work (``benchmarks/README.md``: a partial run never
writes the full run's file)."""

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
