"""The Numba sources of ``tsrnn.kernels`` and their snapshot at import, for the kernels' cache
stamps (:mod:`~tsrnn.kernels.common.numba_cache`).

No Numba here: ``kernels/common/__init__.py`` imports this module first, before any Numba
module of the package is read, and ``import tsrnn`` does not import Numba.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The ``tsrnn.kernels`` package folder."""


def kernel_sources(root: Path = ROOT) -> list[Path]:
    """The Numba sources under ``root``: every ``.py`` file but ``triton_*.py``, sorted."""
    return sorted(
        p for p in root.rglob("*.py")
        if not p.name.startswith("triton_") and "__pycache__" not in p.parts
    )


def _stats(files: list[Path]) -> tuple:
    return tuple((st.st_mtime_ns, st.st_size) for st in map(os.stat, files))


def sources_digest(root: Path = ROOT) -> str:
    """SHA-256 of the paths (relative to ``root``) and contents of :func:`kernel_sources`."""
    h = hashlib.sha256()
    for p in kernel_sources(root):
        h.update(p.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


class Snapshot:
    """The kernel sources as they were when ``tsrnn.kernels`` was imported, before any of its
    Numba modules (``kernels/common/__init__.py`` takes it first).

    Numba reads a function's stamp once, when it is decorated, and compiles it later from
    the modules in memory. A stamp read from the files as they are at that moment would be
    wrong where they changed since the package was imported (a ``git pull`` beside a
    running notebook): a kernel module imported after the change would be compiled with
    helpers imported before it and cached under the new files' digest, and every later
    process would load that mixture. So the stamp is the digest of the sources at import,
    and where they differ now, a stamp no other process gives (the code is compiled and
    cached, never loaded again)."""

    def __init__(self, root: Path = ROOT):
        self.root = root
        self.files = kernel_sources(root)
        self.stats = _stats(self.files)
        self.digest = sources_digest(root)

    def stamp(self) -> str:
        """:attr:`digest` where the sources are still those of the snapshot, else a stamp
        that matches nothing (a file touched but unchanged still matches: its contents are
        compared)."""
        files = kernel_sources(self.root)
        if files == self.files and _stats(files) == self.stats:
            return self.digest
        if sources_digest(self.root) == self.digest:
            return self.digest
        return "changed since import " + os.urandom(16).hex()


SNAPSHOT = Snapshot()
