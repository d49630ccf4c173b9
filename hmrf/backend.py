"""Where the rows are: the operations the initialisation runs on the data
(ARCHITECTURE.md, layer 4).

The initialisation (:mod:`hmrf.initialization`) reads the data only through rows by
index, the column means and the methods of a :class:`RowBackend`: :class:`InMemoryRows`
for an array in memory, :class:`hmrf.distributed.GatheredRows` for the chunks of a Dask
array on its workers. One level up, an estimator's ``fit`` is written once against a
fit backend: :class:`InMemoryFit`, or :class:`hmrf.distributed.DaskFit`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ._blocks import row_blocks
from ._validation import check_data

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from ._typing import MatrixLike
    from .constraints import Constraints
    from .emissions.base import EmissionFamily
    from .model import HMRF

__all__ = ["RowBackend", "MinDivergence", "InMemoryRows", "InMemoryFit", "rows_of", "first_lowest",
           "kmeanspp_candidates", "min_divergence_rows"]


class MinDivergence:
    """Every row's divergence to its nearest centre, ``D_i = min_h D(x_i, c_h)``, kept
    where the rows are (the state of k-means++ seeding between two centres)."""

    def draw(self, trials: int, rng: np.random.Generator) -> np.ndarray:
        """``trials`` row indices drawn with probability ``D_i / Σ_j D_j`` (uniformly when
        the sum is zero or not finite), from ``trials`` uniform numbers of ``rng``."""
        raise NotImplementedError

    def potentials(self, candidates: NDArray[np.floating]) -> np.ndarray:
        """``Σ_i min(D_i, D(x_i, c_t))`` for each candidate centre ``c_t`` (T, d): the
        k-means++ potential if ``c_t`` joined the centres (T,)."""
        raise NotImplementedError

    def with_centre(self, candidates: NDArray[np.floating], t: int) -> MinDivergence:
        """The minimum divergence once ``candidates[t]`` has joined the centres (after
        :meth:`potentials` of the same ``candidates``)."""
        raise NotImplementedError


class RowBackend:
    """The rows of the data, wherever they are (module docstring), of ``shape`` (n, d)."""

    shape: tuple

    def prepare(self, family: EmissionFamily) -> RowBackend:
        """The rows as a model under ``family`` reads them (checked and prepared by the
        family where they are): what :class:`~hmrf.HMRF` keeps as its ``X`` when it is
        given a backend instead of an array."""
        return self

    @staticmethod
    def model_class() -> type | None:
        """The subclass of :class:`~hmrf.HMRF` that keeps its rows in this backend
        (``HMRF(rows, ...)`` builds one), or ``None`` for ``HMRF`` itself."""
        return None

    def group_centroids(self, members: NDArray[np.intp], which: NDArray[np.intp],
                        n_groups: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Means of the rows ``members`` grouped by ``which`` ``(n_groups, d)`` and the
        group sizes ``(n_groups,)``, float64."""
        raise NotImplementedError

    def min_divergence(self, family: EmissionFamily, centers: NDArray[np.floating]) -> MinDivergence:
        """``min_h D(x_i, c_h)`` of every row under ``family``'s divergence, kept where
        the rows are."""
        raise NotImplementedError


def first_lowest(values: NDArray[np.floating]) -> int | None:
    """Index of the first value strictly below every earlier one and below ``inf``: the
    k-means++ rule that keeps the first of equally good candidates; ``None`` when no
    value is below ``inf`` (every candidate infinite or NaN)."""
    best, low = None, np.inf
    for t, v in enumerate(values):  # a few candidates
        if v < low:
            best, low = t, v
    return best


def min_divergence_rows(family: EmissionFamily, X: MatrixLike, data: Any,
                        centers: NDArray[np.floating]) -> np.ndarray:
    """``min_h D(x_i, c_h)`` for every row of ``X`` (n,), float64, in blocks of rows
    (``data``: the family's data terms of the rows, or ``None``)."""
    n = X.shape[0]
    out = np.empty(n)
    for rows in row_blocks(n, max(centers.shape[0], X.shape[1])):  # blocks bound the temporaries
        out[rows] = family.divergence(X[rows], centers, data=None if data is None else data[rows]).min(axis=1)
    return out


def kmeanspp_candidates(closest: NDArray[np.floating], trials: int, rng: np.random.Generator) -> np.ndarray:
    """``trials`` candidate rows for the next k-means++ centre, drawn with probability
    proportional to ``closest`` (each row's divergence to its nearest centre; Arthur &
    Vassilvitskii 2007) from its cumulative sum, uniformly when the total is zero or not
    finite."""
    n = closest.shape[0]
    total = closest.sum()
    if not np.isfinite(total) or total <= 0:
        return rng.choice(n, size=trials)
    return np.minimum(np.searchsorted(np.cumsum(closest), rng.random(trials) * total), n - 1)


class _InMemoryDivergence(MinDivergence):
    """:class:`MinDivergence` of an array in memory: one (n,) vector, and the minima of
    the lowest candidate of the last :meth:`potentials`, kept for :meth:`with_centre`."""

    def __init__(self, X, family, data, closest):
        self._X, self._family, self._data, self.closest = X, family, data, closest
        self._best = None  # (candidates, t, minima) of the last potentials

    def draw(self, trials, rng):
        return kmeanspp_candidates(self.closest, trials, rng)

    def _with(self, centre):
        return np.minimum(self.closest, min_divergence_rows(self._family, self._X, self._data, centre))

    def potentials(self, candidates):
        pots = np.empty(candidates.shape[0])
        low, self._best = np.inf, None
        for t in range(candidates.shape[0]):  # a few candidates, each a pass over the rows
            d = self._with(candidates[t:t + 1])
            pots[t] = d.sum()
            if pots[t] < low:  # keep one vector: the lowest candidate's (first_lowest's rule)
                low, self._best = pots[t], (candidates, t, d)
        return pots

    def with_centre(self, candidates, t):
        best = self._best
        d = best[2] if best is not None and best[0] is candidates and best[1] == t else \
            self._with(candidates[t:t + 1])
        return _InMemoryDivergence(self._X, self._family, self._data, d)


class InMemoryRows(RowBackend):
    """The backend of prepared data in memory (ndarray or CSR matrix)."""

    def __init__(self, X: MatrixLike) -> None:
        self.X = X
        self.shape = X.shape

    def group_centroids(self, members: NDArray[np.intp], which: NDArray[np.intp],
                        n_groups: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """A sparse (n_groups, n) indicator times ``X``: O(len(members) · d) work and no
        copy of the member rows."""
        X = self.X
        R = sp.csr_matrix((np.ones(members.size), (which, members)), shape=(n_groups, X.shape[0]))
        sums = R @ X
        sums = np.asarray(sums.toarray() if sp.issparse(sums) else sums, dtype=np.float64)
        sizes = np.bincount(which, minlength=n_groups).astype(np.float64)
        return sums / np.maximum(sizes, 1.0)[:, None], sizes

    def min_divergence(self, family: EmissionFamily, centers: NDArray[np.floating]) -> MinDivergence:
        """One (n,) float64 vector; the family's data terms computed once for all the
        passes of the seeding."""
        data = family.data_terms(self.X)
        return _InMemoryDivergence(self.X, family, data, min_divergence_rows(family, self.X, data, centers))


def rows_of(X: MatrixLike | RowBackend) -> RowBackend:
    """The backend of ``X``: ``X`` itself if it is a :class:`RowBackend` (the ``X`` of a
    model on a Dask array), else :class:`InMemoryRows` of the array."""
    return X if isinstance(X, RowBackend) else InMemoryRows(X)


class InMemoryFit:
    """The fit backend of an array in memory: the estimators' ``fit`` calls, in order,
    ``data``, ``partial_labels``, ``model``, the EM loops with ``hard_pass``/``soft_pass``
    (``None``: the in-memory passes of :mod:`hmrf.em`), and ``labels``."""

    hard_pass = None
    soft_pass = None

    def data(self, X: MatrixLike) -> MatrixLike:
        """``X`` checked (``check_data``; float32 stays float32)."""
        return check_data(X, keep_float32=True)

    def partial_labels(self, y: ArrayLike | None) -> ArrayLike | None:
        """Partial labels as the supervision reads them."""
        return y

    def model(self, build: Callable[..., HMRF], X: MatrixLike, constraints: Constraints,
              y: ArrayLike | None, potentials: Any) -> HMRF:
        """The model of the estimator: ``build(X, constraints, y, potentials)`` (its
        ``_model``) on the checked array."""
        return build(X, constraints, y, potentials)

    def labels(self, result: Any, model: HMRF) -> NDArray[np.int64]:
        """The fitted ``labels_``: the EM result's labels as int64 (n,)."""
        return result.labels.astype(np.int64)
