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

from tsrnn.kernels.common import _sources, numba_cache, numba_grads

REPO = Path(__file__).resolve().parents[2]
SUM = float(np.arange(64).sum())

# rows_sum_add (numba_grads.py) adds rows with numba_simd's ``vadd``: the probe prints its
# sum and whether it came from the cache; the tests then edit numba_simd.py alone
PROBE = """
import numpy as np
from tsrnn.kernels.common import numba_grads
d = np.arange(64, dtype=np.float32).reshape(4, 16)
out = np.zeros((1, 16), dtype=np.float32)
numba_grads.rows_sum_add(d, 0, 4, out, 0)
print(numba_grads.__file__)
print(float(out.sum()), len(numba_grads.rows_sum_add.stats.cache_hits))
"""
# what a process that already imported numba_simd when the file changed (a git pull beside
# a running notebook) compiles and caches
EDIT_WHILE_RUNNING = """
import pathlib
from tsrnn.kernels.common import numba_simd
p = pathlib.Path(numba_simd.__file__)
p.write_text(p.read_text().replace('vadd = _elementwise("fadd"', 'vadd = _elementwise("fsub"'))
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


def _run_probe(path: Path, cache: Path, before: str = "") -> tuple[float, bool]:
    """``(the sum, whether it was loaded from the cache)`` in a new process."""
    env = {**os.environ, "PYTHONPATH": str(path), "NUMBA_CACHE_DIR": str(cache)}
    for name in ("NUMBA_DISABLE_JIT", "NUMBA_CACHE_LOCATOR_CLASSES"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", before + PROBE], env=env, cwd=path, capture_output=True,
        text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    module, total, hits = done.stdout.split()[-3:]
    assert Path(module).is_relative_to(path), module  # the copy, not the installed package
    return float(total), int(hits) > 0


def _edit_vadd(root: Path) -> None:
    simd = root / "tsrnn" / "kernels" / "common" / "numba_simd.py"
    text = simd.read_text()
    edited = text.replace('vadd = _elementwise("fadd"', 'vadd = _elementwise("fsub"')
    assert edited != text
    simd.write_text(edited)


def test_an_edit_to_a_helper_module_recompiles_the_kernels_that_use_it(tmp_path):
    root = _copy_package(tmp_path / "site")
    cache = tmp_path / "cache"
    assert _run_probe(root, cache) == (SUM, False)
    assert _run_probe(root, cache) == (SUM, True)  # unchanged: loaded from the cache
    _edit_vadd(root)
    # numba_grads.py is unchanged: Numba's own check alone loaded the sum from the cache
    assert _run_probe(root, cache) == (-SUM, False)
    assert _run_probe(root, cache) == (-SUM, True)


def test_code_compiled_while_the_sources_changed_is_never_loaded(tmp_path):
    root = _copy_package(tmp_path / "site")
    cache = tmp_path / "cache"
    # numba_simd was in memory before its file changed: the old code runs in that process...
    assert _run_probe(root, cache, before=EDIT_WHILE_RUNNING) == (SUM, False)
    # ...and no later process loads it (it was cached under the new files' digest before)
    assert _run_probe(root, cache) == (-SUM, False)
    assert _run_probe(root, cache) == (-SUM, True)


def _copy_kernels(tmp_path: Path) -> Path:
    root = tmp_path / "kernels"
    shutil.copytree(REPO / "kernels", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_digest_follows_the_numba_sources(tmp_path):
    root = _copy_kernels(tmp_path)
    first = _sources.sources_digest(root)
    (root / "common" / "triton_new.py").write_text("X = 1\n")  # a Triton source: not Numba's
    assert _sources.sources_digest(root) == first
    simd = root / "common" / "numba_simd.py"
    simd.write_text(simd.read_text() + "\n# edited\n")
    second = _sources.sources_digest(root)
    assert second != first
    (root / "common" / "extra.py").write_text("X = 1\n")  # a new module a kernel may import
    assert _sources.sources_digest(root) not in (first, second)


def test_snapshot_stamp_matches_only_the_sources_it_was_taken_from(tmp_path):
    root = _copy_kernels(tmp_path)
    snapshot = _sources.Snapshot(root)
    assert snapshot.stamp() == snapshot.digest == _sources.sources_digest(root)
    simd = root / "common" / "numba_simd.py"
    os.utime(simd, ns=(10**18, 10**18))  # written again, the same bytes
    assert snapshot.stamp() == snapshot.digest
    simd.write_text(simd.read_text() + "\n# edited\n")
    stamps = {snapshot.stamp(), snapshot.stamp()}
    assert len(stamps) == 2 and snapshot.digest not in stamps  # matches nothing, ever


def test_sources_are_the_numba_modules():
    names = {p.relative_to(_sources.ROOT).as_posix() for p in _sources.kernel_sources()}
    assert {"common/numba_simd.py", "common/activations.py", "gru/numba_cpu.py"} <= names
    assert not any(Path(n).name.startswith("triton_") for n in names)


@pytest.mark.skipif(
    numba.config.DISABLE_JIT, reason="NUMBA_DISABLE_JIT: nothing is compiled nor cached"
)
@pytest.mark.skipif(
    bool(getattr(numba.config, "CACHE_LOCATOR_CLASSES", None)),
    reason="NUMBA_CACHE_LOCATOR_CLASSES replaces Numba's locator list, and tsrnn's with it",
)
def test_tsrnn_functions_take_the_kernel_locator():
    locator = numba_grads.rows_sum_add._cache._impl.locator
    assert isinstance(locator, numba_cache.LOCATORS)
    _, digest = locator.get_source_stamp()
    assert digest == _sources.SNAPSHOT.digest == _sources.sources_digest()

    @numba.njit(cache=True)
    def not_tsrnns(x):
        return x

    assert not isinstance(not_tsrnns._cache._impl.locator, numba_cache.LOCATORS)
