"""``benchmarks/activations_triton.py`` reports the Triton kernels' float32 activation errors:
it runs (in the interpreter here, compiled on a GPU) and its figures are the helpers' accuracy."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import activations_triton


def test_the_script_reports_the_helpers_errors(monkeypatch, capsys):
    written = {}

    def write_json(name, payload, partial=False):
        written[name] = payload
        return Path(activations_triton.__file__).resolve().parent / "results" / f"{name}.json"

    monkeypatch.setattr(activations_triton, "write_json", write_json)
    activations_triton.main([])
    (name, payload), = written.items()
    assert name in ("activations_cpu", "activations_cuda")
    rows = {r["function"]: r for r in payload["rows"]}
    for fn in ("exp (tsrnn)", "sigmoid (tsrnn)", "tanh (tsrnn)"):
        assert 0 < rows[fn]["max_rel"] < 2.4e-7, rows[fn]  # 4 float32 ulp
        assert rows[fn]["inputs"] >= 200_000
    assert "tl.exp (Triton)" in rows
    out = capsys.readouterr().out
    assert "max rel err" in out and "tanh (tsrnn)" in out
