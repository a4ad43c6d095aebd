"""Numba's on-disk cache, kept in step with every kernel source a kernel is built from.

Numba decides whether a cached function is still valid from its own source file alone (its
content hash, or with older Numba its modification time and size). A kernel is built from
more than that file: the recurrent product (:mod:`~tsrnn.kernels.common.numba_linalg`), the
SIMD intrinsics (:mod:`~tsrnn.kernels.common.numba_simd`), the activations, inlined or linked
into it. An edit to one of those left every kernel that uses it cached as it was: in a
checkout, ``git pull`` or a local change to ``activations.py`` and the kernels kept running
the old code (found by editing ``vtanh``: the GRU's training kernel returned the same values
until its cache was cleared), and tests passed on code that was no longer there.

So the functions compiled with the project's options (:func:`~.numba_config.njit`) take a
stamp that adds, to Numba's own, a digest of the contents of every Numba source of
``tsrnn.kernels`` (:func:`~tsrnn.kernels.common._sources.sources_digest`: each ``.py``
file of the package but the Triton ones, ``triton_*.py``): an edit to any of them compiles
the kernels again at their next use, once; a file written again unchanged (a ``git
checkout`` back and forth) keeps the cache. The digest is that of the sources when the
package was imported (:class:`~tsrnn.kernels.common._sources.Snapshot`): a process whose
kernel sources changed while it ran caches what it compiles under a stamp that no other
process gives.
The locators are Numba's own, in Numba's order (``NUMBA_CACHE_DIR``, then beside the
modules, then the user's cache folder), with only the stamp extended; functions that are not
tsrnn's keep Numba's. A ``NUMBA_CACHE_LOCATOR_CLASSES`` set by the user replaces Numba's
locator list, and these with it.
"""

from __future__ import annotations

from numba.core import caching

from tsrnn.kernels.common._sources import SNAPSHOT

MARK = "_tsrnn_kernel"
"""Attribute set on the Python function of each of tsrnn's jitted functions
(:func:`mark`), which selects this module's locators."""


def mark(func):
    """Mark ``func`` (a Python function about to be jitted with caching) as one of tsrnn's."""
    setattr(func, MARK, True)
    return func


def _numba_class(name: str):
    """Numba's class ``name``: ``CacheImpl`` is public in every Numba tsrnn supports, the
    locators since Numba 0.62 (``_UserProvidedCacheLocator`` ... before)."""
    cls = getattr(caching, name, None)
    return cls if cls is not None else getattr(caching, "_" + name)


def _locator(base):
    """``base``, a Numba locator class, for tsrnn's functions only, its stamp extended."""

    class Locator(base):
        @classmethod
        def from_function(cls, py_func, py_file):
            if not getattr(py_func, MARK, False):
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return (super().get_source_stamp(), SNAPSHOT.stamp())

    Locator.__name__ = Locator.__qualname__ = "Kernel" + base.__name__.lstrip("_")
    return Locator


LOCATORS = tuple(
    _locator(_numba_class(name))
    for name in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
)
"""Numba's three file-backed locators, in Numba's order, for tsrnn's functions."""


def install() -> None:
    """Put :data:`LOCATORS` first in Numba's list (once): before any of tsrnn's functions
    is jitted, as the locator is chosen when a function is decorated."""
    impl = _numba_class("CacheImpl")
    classes = impl._locator_classes
    if classes[: len(LOCATORS)] != list(LOCATORS):
        impl._locator_classes = [*LOCATORS, *(c for c in classes if c not in LOCATORS)]
