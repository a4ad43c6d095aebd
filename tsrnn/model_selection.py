"""Cross-validation for panels of many series: :class:`PanelSplit`.

For one series, scikit-learn's :class:`~sklearn.model_selection.TimeSeriesSplit` already does the
job with :class:`tsrnn.RNNForecaster`. A panel (rows indexed by a two-level ``MultiIndex``
(series id, time), series stacked one after another) needs every series cut at the same time
points instead of at the same row numbers: that is :class:`PanelSplit`.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from sklearn.model_selection import BaseCrossValidator

from tsrnn._data import check_panel_levels

__all__ = ["PanelSplit"]


class PanelSplit(BaseCrossValidator):
    """Time-series cross-validation that cuts every series of a panel at the same time points.

    The distinct time stamps of the panel are split like
    :class:`~sklearn.model_selection.TimeSeriesSplit` splits rows: fold ``i`` trains on every
    row before its cut (minus ``gap`` steps) and tests on the next ``test_size`` time stamps,
    so successive training sets grow. A series with no training rows in a fold (it starts
    later) is left out of that fold's test rows: a global model can only forecast series whose
    history it has seen. A series with a few training rows is kept, and a forecaster may
    refuse it as too short for its window (the fold then fails and scores NaN in a search):
    ``min_train_size`` leaves such series out of the folds where they are that short, their
    training and test rows both.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds (>= 1).
    test_size : int or None, default=None
        Time stamps per test fold; ``None``: ``n_times // (n_splits + 1)``.
    gap : int, default=0
        Time stamps left out between each training set and its test set.
    min_train_size : int, default=1
        Training rows a series needs in a fold to take part in it (>= 1); a series with fewer
        is left out of that fold. E.g. ``window + horizon`` of the forecaster, plus its
        validation rows with early stopping (the "too short" error names the number).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrnn.model_selection import PanelSplit
    >>> index = pd.MultiIndex.from_product(
    ...     [["a", "b"], pd.date_range("2000-01", periods=6, freq="MS")], names=["id", "time"])
    >>> y = pd.Series(np.arange(12.0), index=index)
    >>> for train, test in PanelSplit(n_splits=2, test_size=2).split(y):
    ...     print(train, test)
    [0 1 6 7] [2 3 8 9]
    [0 1 2 3 6 7 8 9] [ 4  5 10 11]
    """

    def __init__(self, n_splits=5, *, test_size=None, gap=0, min_train_size=1):
        self.n_splits = n_splits
        self.test_size = test_size
        self.gap = gap
        self.min_train_size = min_train_size

    def _check_params(self):
        for name, low in (("n_splits", 1), ("gap", 0), ("min_train_size", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
                raise ValueError(
                    f"The '{name}' parameter of PanelSplit must be an int >= {low}. Got "
                    f"{value!r} instead."
                )
        if self.test_size is not None and (
            isinstance(self.test_size, bool)
            or not isinstance(self.test_size, numbers.Integral)
            or self.test_size < 1
        ):
            raise ValueError(
                "The 'test_size' parameter of PanelSplit must be an int >= 1 or None. Got "
                f"{self.test_size!r} instead."
            )

    @staticmethod
    def _panel_index(X, y) -> pd.MultiIndex:
        for data in (X, y):
            if isinstance(data, pd.Series | pd.DataFrame) and isinstance(data.index, pd.MultiIndex):
                if data.index.nlevels != 2:
                    raise ValueError(
                        "PanelSplit needs a two-level MultiIndex (series id, time), got "
                        f"{data.index.nlevels} levels."
                    )
                return data.index
        raise TypeError(
            "PanelSplit splits a panel: pass a pandas Series or DataFrame indexed by a "
            "two-level MultiIndex (series id, time). For a single series use "
            "sklearn.model_selection.TimeSeriesSplit."
        )

    def split(self, X, y=None, groups=None):
        """Generate row positions of the training and test set of each fold.

        Parameters
        ----------
        X : pd.Series or pd.DataFrame
            The panel (or covariates with the panel's index; then ``y`` may hold it instead).
        y : ignored unless ``X`` has no panel index
        groups : ignored

        Yields
        ------
        train, test : ndarray of int
            Row positions.
        """
        self._check_params()
        index = self._panel_index(X, y)
        # the checks fit makes of the levels: folds cut by the first level's dates, or by
        # text labels in alphabetical order, trained on the future without a word
        what = "X" if isinstance(X, pd.Series | pd.DataFrame) and index is X.index else "y"
        check_panel_levels(index, what, time_kind=True)
        times = index.get_level_values(1)
        ids = index.get_level_values(0)
        for level, what, why in (
            # rows without an id matched no series and fell out of every fold (fit refuses
            # them too); a missing stamp sorted last and was named as a fold's end
            (
                ids,
                "series id level has {} missing id(s) (NaN or None)",
                "those rows belong to no series, and every fold would leave them out. Give "
                "them their series' id, or drop them first.",
            ),
            (
                times,
                "time level has {} missing stamp(s) (NaT or NaN)",
                "folds are cut by time, so every row needs one. Drop or fill them first.",
            ),
        ):
            missing = np.asarray(pd.isna(level))
            if missing.any():
                raise ValueError(
                    f"The panel's {what.format(int(missing.sum()))}, the first in row "
                    f"{int(missing.argmax())}: {why}"
                )
        stamps = np.asarray(pd.Index(pd.unique(times)).sort_values())
        n_times = len(stamps)
        test_size = self.test_size or n_times // (self.n_splits + 1)
        need = self.n_splits * test_size + self.gap + 1
        if test_size < 1:
            raise ValueError(
                f"The panel has {n_times} distinct time stamps, too few for n_splits="
                f"{self.n_splits}: each test fold takes at least one of them and the first "
                f"training set another, so at least {self.n_splits + 1} are needed. Lower "
                "n_splits."
            )
        if n_times < need:
            raise ValueError(
                f"The panel has {n_times} distinct time stamps, too few for n_splits="
                f"{self.n_splits} test folds of test_size={test_size} with gap={self.gap} "
                f"(at least {need} are needed). Lower n_splits or test_size"
                f"{' or gap' if self.gap else ''}."
            )
        t = np.asarray(times)
        positions = np.arange(len(index))
        for i in range(self.n_splits):
            start = n_times - (self.n_splits - i) * test_size
            train_mask = t < stamps[start - self.gap]
            test_mask = (t >= stamps[start]) & (t <= stamps[start + test_size - 1])
            counts = pd.Series(np.asarray(ids[train_mask])).value_counts()
            trained_ids = counts.index[counts.to_numpy() >= self.min_train_size]
            taking_part = np.asarray(ids.isin(trained_ids))
            train_mask &= taking_part
            test_mask &= taking_part
            if not test_mask.any():
                show = pd.Index(stamps)  # the stamps as pandas shows them
                # an empty test set would score NaN (or fail), and a NaN fold makes every
                # candidate's mean score NaN in a search
                rows = "rows" if self.min_train_size == 1 else f"{self.min_train_size}+ rows"
                raise ValueError(
                    f"Fold {i} of PanelSplit has no test rows: no series with {rows} before "
                    f"{show[start - self.gap]} has rows from {show[start]} to "
                    f"{show[start + test_size - 1]} (the series start at different times). "
                    "Lower n_splits, raise test_size, or drop series too short to span the folds."
                )
            yield positions[train_mask], positions[test_mask]

    def get_n_splits(self, X=None, y=None, groups=None):
        """The number of folds, ``n_splits``."""
        return self.n_splits
