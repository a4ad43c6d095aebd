"""Exceptions and warnings that subclass scikit-learn's (imported lazily by tsrnn.exceptions)."""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning, NotFittedError

__all__ = ["ConvergenceWarning", "InterruptedFitWarning", "NotFittedError"]


class InterruptedFitWarning(ConvergenceWarning):
    """Training was interrupted (e.g. Ctrl-C); the best model so far was kept."""
