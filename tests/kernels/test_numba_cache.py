"""Numba's on-disk cache follows every kernel source, not only a kernel's own module."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from tsrnn.kernels.common import numba_cache, numba_grads

REPO = Path(__file__).resolve().parents[2]

# rows_sum_add (numba_grads.py) adds rows with numba_simd's ``vadd``: the probe below prints its
# sum, and the test then edits numba_simd.py alone
PROBE = """
import numpy as np
from tsrnn.kernels.common import numba_grads
d = np.arange(64, dtype=np.float32).reshape(4, 16)
out = np.zeros((1, 16), dtype=np.float32)
numba_grads.rows_sum_add(d, 0, 4, out, 0)
print(numba_grads.__file__)
print(float(out.sum()))
"""


def _copy_package(dest: Path) -> Path:
    """A copy of the package laid out as installed (tsrnn/, tsrnn/kernels, tsrnn/datasets),
    without caches; returns the folder to put on ``sys.path``."""
    skip = shutil.ignore_patterns("__pycache__")
    pkg = dest / "tsrnn"
    shutil.copytree(REPO / "tsrnn", pkg, ignore=skip)
    shutil.copytree(REPO / "kernels", pkg / "kernels", ignore=skip)
    shutil.copytree(REPO / "datasets", pkg / "datasets", ignore=skip)
    return dest


def _run_probe(path: Path, cache: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(path), "NUMBA_CACHE_DIR": str(cache)}
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=path, capture_output=True, text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    module, total = done.stdout.split()[-2:]
    assert Path(module).is_relative_to(path), module  # the copy, not the installed package
    return float(total)


def test_an_edit_to_a_helper_module_recompiles_the_kernels_that_use_it(tmp_path):
    root = _copy_package(tmp_path / "site")
    cache = tmp_path / "cache"
    assert _run_probe(root, cache) == float(np.arange(64).sum())
    assert any(cache.rglob("*.nbi")), "the probe's kernel was not cached"
    simd = root / "tsrnn" / "kernels" / "common" / "numba_simd.py"
    text = simd.read_text()
    edited = text.replace('vadd = _elementwise("fadd"', 'vadd = _elementwise("fsub"')
    assert edited != text
    simd.write_text(edited)
    # numba_grads.py is unchanged: Numba's own check alone loaded the sum from the cache
    assert _run_probe(root, cache) == -float(np.arange(64).sum())


def test_digest_follows_contents_not_times(tmp_path):
    root = tmp_path / "kernels"
    shutil.copytree(REPO / "kernels", root, ignore=shutil.ignore_patterns("__pycache__"))
    first = numba_cache.sources_digest(root)
    simd = root / "common" / "numba_simd.py"
    os.utime(simd, ns=(10**18, 10**18))  # written again, the same bytes
    assert numba_cache.sources_digest(root) == first
    (root / "common" / "triton_new.py").write_text("X = 1\n")  # a Triton source: not Numba's
    assert numba_cache.sources_digest(root) == first
    simd.write_text(simd.read_text() + "\n# edited\n")
    second = numba_cache.sources_digest(root)
    assert second != first
    (root / "common" / "extra.py").write_text("X = 1\n")  # a new module a kernel may import
    assert numba_cache.sources_digest(root) not in (first, second)


def test_sources_are_the_numba_modules():
    names = {p.relative_to(numba_cache.ROOT).as_posix() for p in numba_cache.kernel_sources()}
    assert {"common/numba_simd.py", "common/activations.py", "gru/numba_cpu.py"} <= names
    assert not any(Path(n).name.startswith("triton_") for n in names)


@pytest.mark.skipif(
    numba.config.DISABLE_JIT, reason="NUMBA_DISABLE_JIT: nothing is compiled nor cached"
)
def test_tsrnn_functions_take_the_kernel_locator():
    locator = numba_grads.rows_sum_add._cache._impl.locator
    assert isinstance(locator, numba_cache.LOCATORS)
    _, digest = locator.get_source_stamp()
    assert digest == numba_cache.sources_digest()

    @numba.njit(cache=True)
    def not_tsrnns(x):
        return x

    assert not isinstance(not_tsrnns._cache._impl.locator, numba_cache.LOCATORS)
