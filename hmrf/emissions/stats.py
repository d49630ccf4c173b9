"""Additive per-cluster statistics: what an M-step needs from the data, in one pass.

Every M-step of the built-in families is a function of a few sums over the points of
each cluster (Basu 2005, §4.4.5; Banerjee et al. 2005, Prop. 1): the number of points,
their sum, and for families with a learned scale or metric a second moment. Such sums
are *additive*: the statistics of a data set are the sums of those of its row blocks,
and moving a point from cluster ``a`` to ``b`` subtracts its contribution from ``a`` and
adds it to ``b``. So the EM loop accumulates them block by block in the same pass that
computes the E-step (as scikit-learn's Lloyd loop does), a Dask cluster sums them in
chunk order (by a tree of tasks above ``TREE_ABOVE`` floats a chunk), and late EM
iterations update them from the few points that moved.

Second moments are taken around a fixed ``shift`` ``c`` (the data's global mean for
dense data, 0 for sparse data, so that sparse rows stay sparse), which keeps the
scatter ``Σ (x - μ)² = Σ (x - c)² - n (μ - c)²`` free of the cancellation of raw
moments and the same for every iteration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .._blocks import row_blocks

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from .._typing import MatrixLike

__all__ = ["ClusterStats", "Spread", "group_sums", "SECOND_MOMENTS"]

#: kinds of second moment a family may ask for: none, Σ||x-c||² (k,), Σ(x-c)∘(x-c)
#: (k, d), Σ(x-c)(x-c)ᵀ (k, d, d)
SECOND_MOMENTS = (None, "norm", "diagonal", "full")


def group_sums(X: MatrixLike, groups: ArrayLike, n_groups: int) -> np.ndarray:
    """``out[g] = Σ_{i: groups[i] = g} X[i]`` as a dense float64 (n_groups, d).

    One compiled pass over the rows of dense ``X`` or over the stored entries of sparse
    ``X`` (which stays sparse), whatever the number of groups
    (:mod:`hmrf.emissions.stats_numba`).
    """
    from .stats_numba import add_csr_rows, add_rows

    groups = np.asarray(groups, dtype=np.int64)
    out = np.zeros((n_groups, X.shape[1]))
    if sp.issparse(X):
        X = X.tocsr()
        add_csr_rows(X.indptr, X.indices, X.data, groups, np.zeros(n_groups, dtype=np.int64), 0, out,
                     np.empty(0))
    else:
        add_rows(X, groups, out)
    return out


def _centred(X, shift):
    """Dense ``X - shift`` in float64 (a block-sized temporary)."""
    Z = np.asarray(X, dtype=np.float64)
    return Z - shift[None, :] if shift is not None else Z


@dataclass
class ClusterStats:
    """Sufficient statistics of k clusters, additive over rows: ``counts`` (k,) of points
    (or summed responsibilities), ``sums`` ``Σ_i r_ih x_i`` (k, d), and ``second`` as
    ``second_kind`` says: ``Σ r_ih ||x_i - c||²`` (k,), ``Σ r_ih (x_i - c)∘(x_i - c)``
    (k, d) or ``Σ r_ih (x_i - c)(x_i - c)ᵀ`` (k, d, d), around ``shift`` ``c``
    (``None``: 0)."""

    counts: np.ndarray
    sums: np.ndarray
    second: np.ndarray | None = None
    second_kind: str | None = None
    shift: np.ndarray | None = None

    @property
    def n_clusters(self) -> int:
        return int(self.counts.shape[0])

    @classmethod
    def zeros(cls, n_clusters: int, n_features: int, second_kind: Any = None,
              shift: NDArray[np.floating] | None = None) -> ClusterStats:
        """Statistics of no points."""
        k, d = n_clusters, n_features
        shapes = {None: None, "norm": (k,), "diagonal": (k, d), "full": (k, d, d)}
        shape = shapes[second_kind]
        return cls(np.zeros(k), np.zeros((k, d)), None if shape is None else np.zeros(shape),
                   second_kind, shift)

    @classmethod
    def from_data(cls, X: MatrixLike, assignment: NDArray[np.intp], n_clusters: int, second_kind: Any = None,
                  shift: NDArray[np.floating] | None = None) -> ClusterStats:
        """Statistics of the rows of ``X`` under hard labels (n,) or responsibilities (n, k).

        Rows are processed as given; callers pass row blocks to bound the temporaries.
        """
        if second_kind not in SECOND_MOMENTS:
            raise ValueError(f"second_kind must be one of {SECOND_MOMENTS}; got {second_kind!r}.")
        a = np.asarray(assignment)
        k = n_clusters
        if a.ndim == 2:
            if a.shape != (X.shape[0], k):
                raise ValueError(f"responsibilities must have shape ({X.shape[0]}, {k}); got {a.shape}.")
            R = np.asarray(a, dtype=np.float64)
            sums = R.T @ X
            sums = np.asarray(sums.toarray() if sp.issparse(sums) else sums, dtype=np.float64)
            counts = R.sum(axis=0)
        else:
            a = a.astype(np.int64, copy=False)
            counts = np.bincount(a, minlength=k).astype(np.float64)
            sums = group_sums(X, a, k)
        second = None
        if second_kind is not None:
            second = _second_moment(X, a, k, second_kind, shift)
        return cls(counts, sums, second, second_kind, shift)

    def _check_compatible(self, other: ClusterStats) -> None:
        if self.second_kind != other.second_kind or self.counts.shape != other.counts.shape:
            raise ValueError("cannot combine statistics of different shapes or kinds.")

    def __add__(self, other: ClusterStats) -> ClusterStats:
        self._check_compatible(other)
        second = None if self.second is None else self.second + other.second
        return ClusterStats(self.counts + other.counts, self.sums + other.sums, second,
                            self.second_kind, self.shift)

    def __sub__(self, other: ClusterStats) -> ClusterStats:
        self._check_compatible(other)
        second = None if self.second is None else self.second - other.second
        return ClusterStats(self.counts - other.counts, self.sums - other.sums, second,
                            self.second_kind, self.shift)

    def means(self, fallback: Any = None) -> np.ndarray:
        """Cluster means ``sums / counts``; empty clusters take ``fallback`` rows (k, d)."""
        empty = self.counts <= 0
        with np.errstate(invalid="ignore", divide="ignore"):
            means = self.sums / self.counts[:, None]
        if empty.any():
            if fallback is None:
                raise ValueError("a cluster is empty and no previous centre was given.")
            means[empty] = np.broadcast_to(np.asarray(fallback, dtype=np.float64), means.shape)[empty]
        return means

    def scatter(self, means: Any) -> np.ndarray:
        """Second moment around any centres ``means`` instead of the shift ``c``:
        ``Σ r (x - μ)²`` per cluster, ``Σ r (x-c)² - 2 (μ-c)·Σ r (x-c) + n (μ-c)²`` (and the
        analogues for the other kinds; at the cluster means the middle term is
        ``-2 n (μ-c)²``)."""
        if self.second is None:
            raise ValueError("these statistics carry no second moment.")
        shift = 0.0 if self.shift is None else self.shift[None, :]
        dm = np.asarray(means, dtype=np.float64) - shift
        n = self.counts
        ds = np.asarray(self.sums, dtype=np.float64) - n[:, None] * shift  # Σ r (x - c)
        if self.second_kind == "norm":
            return np.maximum(self.second - 2.0 * np.einsum("kd,kd->k", dm, ds)
                              + n * np.einsum("kd,kd->k", dm, dm), 0.0)
        if self.second_kind == "diagonal":
            return np.maximum(self.second - 2.0 * dm * ds + n[:, None] * dm * dm, 0.0)
        cross = np.einsum("ki,kj->kij", ds, dm)
        out = (self.second - cross - np.swapaxes(cross, 1, 2)
               + n[:, None, None] * np.einsum("ki,kj->kij", dm, dm))
        return (out + np.swapaxes(out, 1, 2)) / 2.0


def _second_moment(X, a, k, kind, shift):
    """The second moment of ``kind`` for labels (n,) or responsibilities (n, k)."""
    soft = a.ndim == 2
    if sp.issparse(X):
        if shift is not None:
            raise ValueError("sparse data takes second moments around 0 (shift=None).")
        if kind == "norm":
            sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
            return a.T @ sq if soft else np.bincount(a, weights=sq, minlength=k)
        if kind == "diagonal":
            X2 = X.multiply(X).tocsr()
            return group_sums(X2, a, k) if not soft else np.asarray((a.T @ X2), dtype=np.float64)
        out = np.empty((k, X.shape[1], X.shape[1]))
        for h in range(k):  # one sparse (d, n) x (n, d) product per cluster
            r = a[:, h] if soft else (a == h).astype(np.float64)
            xx = X.multiply(r[:, None]).T @ X
            out[h] = np.asarray(xx.toarray() if sp.issparse(xx) else xx)
        return out
    if kind == "diagonal" and not soft:  # one compiled pass, no (rows x d) temporaries
        from .stats_numba import add_centred_squares

        out = np.zeros((k, X.shape[1]))
        add_centred_squares(X, np.zeros(X.shape[1]) if shift is None else np.asarray(shift, dtype=np.float64),
                            a, out)
        return out
    Z = _centred(X, shift)
    if kind == "norm":
        sq = np.einsum("ij,ij->i", Z, Z)
        return a.T @ sq if soft else np.bincount(a, weights=sq, minlength=k)
    if kind == "diagonal":
        return a.T @ (Z * Z)
    out = np.empty((k, X.shape[1], X.shape[1]))
    for h in range(k):  # one (d, n_h) x (n_h, d) product per cluster
        if soft:
            out[h] = (Z * a[:, h][:, None]).T @ Z
        else:
            Zh = Z[a == h]
            out[h] = Zh.T @ Zh
    return out


@dataclass
class Spread:
    """Count, column sums and summed divergence to their mean ``Σ_i D(x_i, x̄)`` of some
    rows under a family: ``n`` times the Bregman information of the rows (Banerjee et al.
    2005, JMLR 6, §3.1), ``E[D_φ(X, E X)] = E φ(X) - φ(E X)``, computed in one pass.

    Each row block contributes the divergences of its rows to the block's own mean (so no
    ``Σ φ(x_i) - n φ(x̄)`` of large terms cancels when the spread is small against the
    magnitude of the data, e.g. data offset by 1e6), and two parts add up as within-group
    plus between-group information (the decomposition behind Banerjee et al.'s Theorem 1,
    the law of total variance for squared Euclidean distance)::

        Σ_{a∪b} D(x_i, x̄) = Σ_a D(x_i, x̄_a) + Σ_b D(x_i, x̄_b) + n_a D(x̄_a, x̄) + n_b D(x̄_b, x̄)

    which holds because ``Σ_{i∈a} <x_i - x̄_a, ∇φ(x̄)> = 0``. The divergences come from
    the family's ``divergence_to``; a family without one (its costs are linear in ``x``:
    vMF) has no information term (0).

    ``information`` is ``Σ_i D(x_i, x̄)`` of these rows.
    """

    count: float
    sums: np.ndarray
    information: float
    family: Any

    @property
    def mean(self) -> np.ndarray:
        return self.sums / self.count

    @classmethod
    def of(cls, family: Any, X: MatrixLike) -> Spread:
        """The spread of the rows of ``X`` (n >= 1), in blocks of rows."""
        total = None
        for rows in row_blocks(X.shape[0], X.shape[1]):  # blocks of rows bound the temporaries
            Z = X[rows]
            sums = np.asarray(Z.sum(axis=0, dtype=np.float64), dtype=np.float64).ravel()
            count = float(Z.shape[0])
            div = family.divergence_to(Z, sums / count)
            part = cls(count, sums, 0.0 if div is None else float(div.sum()), family)
            total = part if total is None else total + part
        return total

    def __add__(self, other: Spread) -> Spread:
        if not other.count:
            return self
        if not self.count:
            return other
        n = self.count + other.count
        sums = self.sums + other.sums
        between = self.family.divergence_to(np.vstack([self.mean, other.mean]), sums / n)
        info = self.information + other.information
        if between is not None:
            info += self.count * float(between[0]) + other.count * float(between[1])
        return Spread(n, sums, info, self.family)
