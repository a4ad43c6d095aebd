"""Exceptions and warnings of tsrnn.

They subclass scikit-learn's where they mean the same thing, so ``except NotFittedError`` and
``warnings.filterwarnings(category=ConvergenceWarning)`` written for scikit-learn catch ours.
Importing this module does not import scikit-learn unless the estimator side is used: the
kernel layer takes :class:`BackendUnavailableError` from :mod:`tsrnn.kernels`.
"""

from __future__ import annotations

from tsrnn.kernels.common.registry import BackendUnavailableError

# Also, built on first use (they subclass scikit-learn's): ConvergenceWarning,
# InterruptedFitWarning, NotFittedError.
__all__ = ["BackendUnavailableError", "FallbackWarning", "InconsistentVersionWarning"]


class FallbackWarning(UserWarning):
    """A fast path could not run and a slower, correct one was used instead."""


class InconsistentVersionWarning(UserWarning):
    """A model pickled by another tsrnn version was loaded; refit it or use that version."""


def __getattr__(name):
    # The sklearn-derived classes are built on first use so that ``import tsrnn.nn`` stays free
    # of scikit-learn (the kernel and layer side must not import it).
    if name in ("NotFittedError", "ConvergenceWarning", "InterruptedFitWarning"):
        from tsrnn import _sklearn_exceptions

        return getattr(_sklearn_exceptions, name)
    raise AttributeError(f"module 'tsrnn.exceptions' has no attribute {name!r}")
