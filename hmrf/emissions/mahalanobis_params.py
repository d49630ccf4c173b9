"""Parameters and distance helpers of the Mahalanobis emission (:mod:`hmrf.emissions.mahalanobis`).

``MahalanobisParams`` holds the centres and the learned metrics ``A_g``; ``log_det_pd``
and ``pair_sq_distances`` are shared with :class:`hmrf.potentials.DistanceScaledPotts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .base import EmissionParams
from .bregman import row_dot

if TYPE_CHECKING:
    from typing import Any

__all__ = ["MahalanobisParams", "log_det_pd", "pair_sq_distances"]


def log_det_pd(A: Any) -> np.ndarray:
    """``log det A`` of symmetric positive-definite matrices from their Cholesky factors.

    ``log det A = 2 Σ_d log L_dd`` with ``A = L Lᵀ``; finite where ``det`` under- or
    overflows (e.g. ``A = 1e-30 I`` in 30 dimensions). ``A`` has shape (d, d) or (g, d, d).

    Raises
    ------
    ValueError
        If some ``A`` is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> A = 1e-30 * np.eye(30)
    >>> float(np.linalg.det(A)), round(float(log_det_pd(A)), 3)   # 30 * log(1e-30)
    (0.0, -2072.327)
    """
    A = np.asarray(A, dtype=np.float64)
    try:
        L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        raise ValueError("the metric is not positive definite (Cholesky failed).") from None
    return 2.0 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(axis=-1)


def pair_sq_distances(diff: Any, metric: Any) -> np.ndarray:
    """``||v_e||²_A`` for every row ``v_e`` of ``diff`` (dense or sparse, (m, d)).

    ``metric`` is a (d,) diagonal, a (d, d) matrix or ``None`` (identity).
    """
    if metric is None:
        return row_dot(diff)
    metric = np.asarray(metric)
    if metric.ndim == 1:
        if not sp.issparse(diff):  # one pass, no (m, d) temporary (and no BLAS threads)
            return np.einsum("ij,ij,j->i", diff, diff, metric, dtype=np.float64)
        return np.asarray(diff.multiply(diff) @ metric, dtype=np.float64).ravel()
    prod = np.asarray(diff @ metric)
    if sp.issparse(diff):
        return np.asarray(diff.multiply(prod).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", prod, diff)


@dataclass(frozen=True)
class MahalanobisParams(EmissionParams):
    """Centres plus the learned metric.

    Attributes
    ----------
    metric : ndarray of shape (g, d) or (g, d, d)
        Diagonal (2-D) or full (3-D) metrics ``A_g``; ``g = 1`` when shared by all
        clusters, ``g = k`` for per-cluster metrics.
    prior : ndarray of shape (d,)
        Diagonal ``t`` of the shrinkage target ``T``.
    metric_step : float
        Fraction of the paper's metric update that was accepted in the last M-step
        (1 = all of it, 0 = the previous metric was kept; see
        :meth:`Mahalanobis.update`).
    """

    metric: np.ndarray | None = None
    prior: np.ndarray | None = None
    metric_step: float = 1.0

    @property
    def diagonal(self) -> bool:
        return self.metric.ndim == 2

    @property
    def n_groups(self) -> int:
        return int(self.metric.shape[0])

    @cached_property
    def factor(self) -> np.ndarray:
        """Cholesky factors ``L_g`` (g, d, d) with ``A_g = L_g L_gᵀ`` (full metrics)."""
        return np.linalg.cholesky(self.metric)

    @cached_property
    def log_det(self) -> np.ndarray:
        """``log det A_g`` for every group (g,), from Cholesky factors (or the diagonal)."""
        if self.diagonal:
            return np.log(self.metric).sum(axis=1)
        return 2.0 * np.log(np.diagonal(self.factor, axis1=-2, axis2=-1)).sum(axis=-1)

    def mean_metric(self) -> np.ndarray:
        """``Ā = Σ_g A_g / G``, the metric of the distance-scaled penalties ((d,) or (d, d))."""
        return self.metric.mean(axis=0)

    def cluster_metric(self) -> np.ndarray:
        """The metric of every cluster, shape (k, d) or (k, d, d)."""
        if self.n_groups > 1:
            return self.metric
        return np.broadcast_to(self.metric, (self.n_clusters,) + self.metric.shape[1:])
