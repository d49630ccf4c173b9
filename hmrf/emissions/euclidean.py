"""Squared Euclidean distance: the Gaussian emission of KMeans and HMRF-KMeans."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .base import EmissionParams, LinearCosts, check_squared_scale
from .bregman import BregmanFamily, row_dot

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import DTypeLike, NDArray
    from scipy import sparse

    from .._typing import MatrixLike
    from .stats import ClusterStats

__all__ = ["SquaredEuclidean"]


def _twice(M):
    return 2.0 * M


def _mean_feature_variance(stats, d) -> float:
    """Mean per-feature variance of all the points in ``stats`` (second kind "norm")."""
    n = stats.counts.sum()
    if n <= 0:
        return 0.0
    mean = stats.sums.sum(axis=0) / n
    dm = mean - (0.0 if stats.shift is None else stats.shift)
    return float(max(stats.second.sum() / n - dm @ dm, 0.0) / d)


class SquaredEuclidean(BregmanFamily):
    """Squared Euclidean distance ``D(x, μ) = ||x - μ||²`` (Basu 2005, §4.3.4).

    The Bregman divergence of ``φ(x) = ||x||²``; the emission is a Gaussian with
    covariance ``I/2``, so ``-log p(x | h) = ||x - μ_h||² + (d/2) log π``.

    Parameters
    ----------
    var_floor : float, default=1e-6
        With ``normalizer="closed_form"``, per-cluster variances are floored at
        ``var_floor`` times the mean feature variance of ``X`` so that a one-point
        cluster cannot drive ``log σ²`` to ``-inf``.

    Notes
    -----
    ``normalizer="constant"`` (HMRF-KMeans, eq. 4.10): cost ``||x - μ_h||²``, no ½,
    as in the thesis and scikit-learn's inertia.

    ``normalizer="closed_form"``: an isotropic Gaussian per cluster,
    ``N(μ_h, σ_h² I)``, with cost ``||x - μ_h||² / (2 σ_h²) + (d/2) log(2π σ_h²)``.
    The M-step gives ``μ_h`` = mean and ``σ_h² = Σ_{i∈h} ||x_i - μ_h||² / (d n_h)``,
    the exact minimiser, so EM stays monotone. Before the first M-step (``scale is
    None``) ``σ² = 1/2``, which is the constant-normaliser model plus ``(d/2) log π``.
    """

    has_closed_form_normalizer = True

    def __init__(self, var_floor: float = 1e-6) -> None:
        super().__init__(row_dot, _twice, name="sqeuclidean")
        self.var_floor = var_floor

    def __repr__(self) -> str:
        return f"SquaredEuclidean(var_floor={self.var_floor!r})"

    def prepare(self, X: MatrixLike) -> NDArray[np.floating] | sparse.csr_matrix:
        check_squared_scale(X, self.name)
        return X

    def divergence_to(self, X: MatrixLike, point: NDArray[np.floating]) -> np.ndarray:
        """``||x_i - c||²`` (n,), float64, from the differences for dense rows (free of the
        cancellation of ``||x||² - 2<x, c> + ||c||²`` for data far from the origin)."""
        c = np.asarray(point, dtype=np.float64)
        if sp.issparse(X):
            return super().divergence_to(X, c)
        return row_dot(np.asarray(X, dtype=np.float64) - c[None, :])

    def _variance(self, params):
        if params.scale is None:
            return np.full(params.n_clusters, 0.5)
        return params.scale

    def unary(self, X: MatrixLike, params: EmissionParams, normalizer: str = "constant",
              data: Any = None) -> NDArray[np.floating]:
        self.check_normalizer(normalizer)
        cost = self.divergence(X, params.centers, data=data)
        if normalizer == "closed_form":
            var = self._variance(params)
            d = params.centers.shape[1]
            cost /= (2.0 * var[None, :]).astype(cost.dtype)
            cost += (0.5 * d * np.log(2.0 * np.pi * var)[None, :]).astype(cost.dtype)
        return cost

    def linear_costs(self, params: EmissionParams, normalizer: str = "constant",
                     dtype: DTypeLike = np.float64) -> LinearCosts:
        """``g_h = -2 μ_h``, ``bias_h = ||μ_h||²`` (summed as scikit-learn's ``row_norms``,
        so that a sparse pass orders clusters bit for bit as its Lloyd kernel does), and
        with the closed-form normaliser ``scale_h = 1 / (2 σ_h²)``, ``offset_h = (d/2)
        log(2π σ_h²)``."""
        self.check_normalizer(normalizer)
        M = np.asarray(params.centers, dtype=np.float64)
        sq = np.einsum("ij,ij->i", M, M)
        scale = offset = None
        if normalizer == "closed_form":
            var = self._variance(params)
            scale = 1.0 / (2.0 * var)
            offset = 0.5 * M.shape[1] * np.log(2.0 * np.pi * var)
        return LinearCosts.build(M, sq, offset, dtype, scale=scale, factor=-2.0)

    def second_moment(self, normalizer: str = "constant") -> str | None:
        return "norm" if normalizer == "closed_form" else None

    def update(self, stats: ClusterStats, params: EmissionParams | None = None, normalizer: str = "constant",
               context: Any = None) -> EmissionParams:
        self.check_normalizer(normalizer)
        means, counts = self._means(stats, params)
        if normalizer == "constant":
            return EmissionParams(means)
        k, d = means.shape
        within = stats.scatter(means)
        floor = self.var_floor * max(_mean_feature_variance(stats, d), np.finfo(float).tiny)
        prev = self._variance(params) if params is not None else np.full(k, 0.5)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(counts > 0, within / (d * counts), prev)
        return EmissionParams(means, np.maximum(var, floor))
