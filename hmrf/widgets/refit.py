"""Re-clustering after every answer: warm-started from the previous centres, labels kept stable."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from ..active.base import fit_clusterer, takes_centres
from ..constraints import Constraints

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from sklearn.base import BaseEstimator

    from .._typing import MatrixLike

__all__ = ["Reclusterer", "align_labels"]


def align_labels(labels: ArrayLike, reference: ArrayLike) -> np.ndarray:
    """Rename the clusters of ``labels`` to agree with ``reference`` as much as possible:
    the one-to-one renaming that keeps the most names, a maximum-weight matching on the
    contingency table (``scipy.optimize.linear_sum_assignment``). The partition is
    unchanged.

    Examples
    --------
    >>> from hmrf.widgets.refit import align_labels
    >>> align_labels([1, 1, 0, 2], [0, 0, 1, 1]).tolist()
    [0, 0, 1, 2]
    """
    from scipy.optimize import linear_sum_assignment

    labels = np.asarray(labels, dtype=np.int64)
    reference = np.asarray(reference, dtype=np.int64)
    if labels.shape != reference.shape or labels.ndim != 1:
        raise ValueError(
            f"labels and reference must be 1-D of one length; got {labels.shape} and {reference.shape}."
        )
    if labels.size == 0:
        return labels.copy()
    k = int(max(labels.max(), reference.max())) + 1
    table = np.zeros((k, k), dtype=np.int64)
    np.add.at(table, (labels, reference), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    rename = np.empty(k, dtype=np.int64)
    rename[rows] = cols
    return rename[labels]




class Reclusterer:
    """Fit an estimator with a growing constraint set, warm-starting each fit.

    Later fits of an estimator whose ``init`` takes an array of centres start from the
    previous ``cluster_centers_`` (``n_init=1``, at most ``max_iter`` EM iterations);
    others (``SeededKMeans``, ``ConstrainedKMeans``, ``NaiveBayesEM``) refit from their
    own initialisation. Labels are renamed to agree with the previous
    fit (:func:`align_labels`).

    ``estimator`` is cloned for every fit (:func:`~hmrf.active.fit_clusterer`);
    ``estimator_`` is the last fitted clone, ``labels_`` its labels renamed, ``warm_``
    whether it was warm-started and ``seconds_`` its wall time.
    """

    def __init__(self, estimator: BaseEstimator, X: MatrixLike, *, warm_start: bool = True,
                 max_iter: int = 10) -> None:
        if not callable(getattr(estimator, "fit", None)):
            raise TypeError(f"estimator must have a fit method; got {type(estimator).__name__}.")
        if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}.")
        self.estimator = estimator
        self.X = X
        self.warm_start = bool(warm_start)
        self.max_iter = int(max_iter)
        self.estimator_ = None
        self.labels_ = None
        self.warm_ = False
        self.seconds_ = 0.0

    def _clone(self):
        from sklearn.base import clone

        est = clone(self.estimator)
        centres = getattr(self.estimator_, "cluster_centers_", None)
        params = est.get_params(deep=False)
        self.warm_ = bool(self.warm_start and centres is not None and takes_centres(est))
        if self.warm_:
            update = {"init": np.array(centres, copy=True)}
            if "n_init" in params:
                update["n_init"] = 1
            if "max_iter" in params:
                update["max_iter"] = min(int(params["max_iter"]), self.max_iter)
            est.set_params(**update)
        return est

    def fit(self, constraints: Constraints) -> np.ndarray:
        """Fit with ``constraints``; return the (renamed) labels."""
        est = self._clone()
        t0 = time.perf_counter()
        labels = fit_clusterer(est, self.X, constraints)
        self.seconds_ = time.perf_counter() - t0
        self.estimator_ = est
        self.labels_ = labels.astype(np.int64) if self.labels_ is None else align_labels(labels, self.labels_)
        return self.labels_
