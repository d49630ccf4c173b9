"""The emission-family protocol: how a cluster generates its points.

In the HMRF (Basu 2005, §4.3.4, eq. 4.8) point ``x_i`` in cluster ``h`` has density
``p(x | h, Θ) = exp(-D(x, μ_h)) / Z_Θ``. An :class:`EmissionFamily` supplies

* ``prepare(X)``: domain checks and normalisation (a new array; the input is never
  modified),
* ``divergence(X, C)``: the distortion ``D(x_i, c_h)`` for all pairs, (n, k),
* ``unary(X, params, normalizer)``: the per-point cost ``-log p(x_i | h)`` the E-step
  minimises, i.e. the divergence plus, when kept, the normaliser ``log Z_Θ`` and any
  prior term,
* ``m_step(X, assignment, params, normalizer)``: the parameters minimising the summed
  cost for a hard labelling or soft responsibilities,
* ``init_params(X, centers)``: parameters from initial centre vectors.

``normalizer="constant"`` drops ``log Z_Θ`` (the thesis's HMRF-KMeans, §4.4.1);
``"closed_form"`` keeps it for families that have one and learns the scale it depends
on (per-cluster variance, vMF concentration).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

__all__ = ["EmissionFamily", "EmissionParams", "cluster_sums", "scale_rows", "NORMALIZERS"]

NORMALIZERS = ("constant", "closed_form")


@dataclass(frozen=True)
class EmissionParams:
    """Parameters Θ of k clusters.

    Attributes
    ----------
    centers : ndarray of shape (k, d)
        Cluster representatives μ_h (expectation parameters).
    scale : ndarray of shape (k,), optional
        Per-cluster scale when the normaliser is kept: the variance σ_h² of the
        isotropic Gaussian, the concentration κ_h of the von Mises-Fisher. ``None``
        means the family's default scale.
    """

    centers: np.ndarray
    scale: np.ndarray | None = None

    @property
    def n_clusters(self) -> int:
        return int(self.centers.shape[0])

    def replace(self, **changes) -> EmissionParams:
        """A copy with some fields replaced."""
        return replace(self, **changes)


def scale_rows(X, scale: np.ndarray):
    """``X`` with row ``i`` divided by ``scale[i]`` (a new array; sparse stays CSR)."""
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(1.0 / scale) @ X)
    return X / scale[:, None]


def _check_normalizer(normalizer: str) -> str:
    if normalizer not in NORMALIZERS:
        raise ValueError(f"normalizer must be one of {NORMALIZERS}; got {normalizer!r}.")
    return normalizer


#: Incremental cluster sums are refreshed from scratch after this many updates.
_REFRESH_EVERY = 20
#: ... or when more than this fraction of the points changed cluster.
_INCREMENTAL_MAX_CHANGED = 0.2


def _indicator_product(X, labels, n_clusters):
    """``R @ X`` for the (k, n) cluster indicator ``R`` of ``labels``."""
    n = labels.shape[0]
    if sp.issparse(X):
        R = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(n_clusters, n))
    else:
        # a dense (k, n) indicator makes R @ X one multi-threaded GEMM, about 2.5x faster
        # than the sparse product for dense X (its size equals the unary matrix the
        # E-step already holds)
        R = np.zeros((n_clusters, n))
        R[labels, np.arange(n)] = 1.0
    out = R @ X
    return np.asarray(out.toarray() if sp.issparse(out) else out, dtype=np.float64)


def cluster_sums(X, assignment, n_clusters: int, cache=None):
    """Per-cluster sums of rows of ``X`` and cluster sizes.

    Parameters
    ----------
    X : ndarray or sparse matrix (n, d)
    assignment : ndarray (n,) of int labels, or (n, k) responsibilities
    n_clusters : int
    cache : dict, optional
        Per-model store (see :meth:`EmissionFamily.divergence`). With hard labels the
        previous call's labels and sums are kept there, and when few points changed
        cluster the sums are updated from those points only (O(changed · d) instead
        of O(n · d)), as late EM iterations move few points. They are recomputed from
        scratch every ``_REFRESH_EVERY`` updates or when more than
        ``_INCREMENTAL_MAX_CHANGED`` of the points moved, so round-off cannot drift.

    Returns
    -------
    sums : ndarray (k, d)
        Dense, even for sparse ``X`` (k centres, not n points).
    counts : ndarray (k,)
        Number of points (or total responsibility) per cluster.

    Notes
    -----
    One indicator product ``R X`` (sparse indicator for sparse ``X``: O(nnz(X))), no
    loop over clusters.
    """
    assignment = np.asarray(assignment)
    n = X.shape[0]
    if assignment.ndim == 2:
        if assignment.shape != (n, n_clusters):
            raise ValueError(f"responsibilities must have shape ({n}, {n_clusters}); got {assignment.shape}.")
        sums = assignment.T @ X
        sums = sums.toarray() if sp.issparse(sums) else sums
        return np.asarray(sums, dtype=np.float64), assignment.sum(axis=0)
    counts = np.bincount(assignment, minlength=n_clusters).astype(np.float64)
    prev = None if cache is None else cache.get("cluster_sums")
    if prev is not None and prev["labels"].shape == assignment.shape and prev["sums"].shape[0] == n_clusters \
            and prev["age"] < _REFRESH_EVERY:
        changed = np.flatnonzero(assignment != prev["labels"])
        if changed.size <= _INCREMENTAL_MAX_CHANGED * n:
            sums = prev["sums"].copy()
            if changed.size:
                rows = X[changed]
                sums += _indicator_product(rows, assignment[changed], n_clusters)
                sums -= _indicator_product(rows, prev["labels"][changed], n_clusters)
            cache["cluster_sums"] = dict(labels=assignment.copy(), sums=sums.copy(), age=prev["age"] + 1)
            return sums, counts
    sums = _indicator_product(X, assignment, n_clusters)
    if cache is not None:
        cache["cluster_sums"] = dict(labels=assignment.copy(), sums=sums.copy(), age=0)
    return sums, counts


class EmissionFamily(ABC):
    """Base class of emission families (see module docstring for the protocol).

    Subclasses must implement :meth:`divergence` and :meth:`m_step`; they may override
    :meth:`prepare`, :meth:`init_params`, :meth:`cluster_cost` and :meth:`unary`.

    Attributes
    ----------
    name : str
        Short name used in reprs and the CLI.
    has_closed_form_normalizer : bool
        Whether ``normalizer="closed_form"`` is meaningful for this family. If not,
        asking for it raises a ``ValueError`` rather than silently dropping it.
    accepts_sparse : bool
        Whether sparse ``X`` is supported (it is never densified).
    """

    name = "emission"
    has_closed_form_normalizer = False
    accepts_sparse = True

    # -------------------------------------------------------------- data domain
    def prepare(self, X):
        """Check the domain of ``X`` and return the data the family works on.

        The default accepts any finite real data unchanged. Must not modify ``X``.
        """
        return X

    # ------------------------------------------------------------------- costs
    @abstractmethod
    def divergence(self, X, centers, cache=None) -> np.ndarray:
        """Distortion ``D(x_i, c_h)`` for every row of ``X`` and of ``centers``, (n, k).

        ``cache`` is an optional dict owned by the caller (the :class:`~hmrf.HMRF`
        model) in which a family may keep quantities that depend on ``X`` only, such as
        ``φ(x_i)``; it is valid for as long as ``X`` is unchanged.
        """

    def distortion(self, X, params: EmissionParams, cache=None) -> np.ndarray:
        """The distortion part of the unary cost, (n, k): ``D(x_i, μ_h)`` by default.

        :meth:`HMRF.energy_terms <hmrf.HMRF.energy_terms>` reports the rest of the unary
        cost (normaliser and prior terms) separately. Families whose distortion depends
        on more than the centres (a learned metric) override this.
        """
        return self.divergence(X, params.centers, cache=cache)

    def cluster_cost(self, params: EmissionParams, normalizer: str = "constant") -> np.ndarray:
        """Per-cluster term of the unary cost (k,): log-normaliser and prior terms.

        Zero by default.
        """
        return np.zeros(params.n_clusters)

    def unary(self, X, params: EmissionParams, normalizer: str = "constant", cache=None) -> np.ndarray:
        """Per-point cost ``-log p(x_i | y_i = h, Θ)`` up to a constant, shape (n, k).

        With ``normalizer="constant"`` this is ``D(x_i, μ_h)`` (plus the family's prior
        term, if any); with ``"closed_form"`` the scaled divergence plus ``log Z_Θ``.
        """
        self.check_normalizer(normalizer)
        cost = self.divergence(X, params.centers, cache=cache)
        cost += self.cluster_cost(params, normalizer)[None, :]
        return cost

    # --------------------------------------------------------------- parameters
    @abstractmethod
    def m_step(self, X, assignment, params: EmissionParams | None = None,
               normalizer: str = "constant", cache=None) -> EmissionParams:
        """Parameters minimising the summed unary cost for ``assignment``.

        ``assignment`` is an (n,) label vector or (n, k) responsibilities. Clusters
        with no points keep their previous parameters (the EM loop re-seeds empty
        clusters before calling this).
        """

    def init_params(self, X, centers) -> EmissionParams:
        """Parameters from initial centre vectors (projected into the domain)."""
        return EmissionParams(np.array(centers, dtype=np.float64))

    # ------------------------------------------------------------------ helpers
    def check_normalizer(self, normalizer: str) -> str:
        """Validate ``normalizer`` for this family (clear error if unsupported)."""
        _check_normalizer(normalizer)
        if normalizer == "closed_form" and not self.has_closed_form_normalizer:
            raise ValueError(
                f"the {self.name} family has no closed-form normaliser (Basu 2005, §4.4.1); "
                "use normalizer='constant'."
            )
        return normalizer

    @staticmethod
    def _n_clusters(assignment, params) -> int:
        if params is not None:
            return params.n_clusters
        a = np.asarray(assignment)
        return int(a.shape[1]) if a.ndim == 2 else int(a.max()) + 1

    def _means(self, X, assignment, n_clusters, params, cache=None):
        """Cluster means, keeping previous centres for empty clusters."""
        sums, counts = cluster_sums(X, assignment, n_clusters, cache)
        empty = counts <= 0
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums / counts[:, None]
        if empty.any():
            fallback = params.centers if params is not None else np.asarray(X.mean(axis=0)).reshape(1, -1)
            means[empty] = np.broadcast_to(fallback, means.shape)[empty]
        return means, counts

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"
