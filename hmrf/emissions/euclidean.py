"""Squared Euclidean distance: the Gaussian emission of KMeans and HMRF-KMeans."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .base import EmissionParams
from .bregman import BregmanFamily, row_dot

__all__ = ["SquaredEuclidean"]


def _twice(M):
    return 2.0 * M


def _weighted_within(D, assignment, k):
    """Σ_i r_ih D[i, h] and Σ_i r_ih for labels or responsibilities."""
    a = np.asarray(assignment)
    if a.ndim == 1:
        own = D[np.arange(D.shape[0]), a]
        return np.bincount(a, weights=own, minlength=k), np.bincount(a, minlength=k).astype(float)
    return (a * D).sum(axis=0), a.sum(axis=0)


def feature_variance(X) -> float:
    """Mean per-feature variance of dense or sparse ``X`` (sklearn's tolerance scale)."""
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        return float(np.mean(sq - mean**2))
    return float(np.mean(np.var(X, axis=0)))


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

    def __init__(self, var_floor: float = 1e-6):
        super().__init__(row_dot, _twice, name="sqeuclidean")
        self.var_floor = var_floor

    def __repr__(self) -> str:
        return f"SquaredEuclidean(var_floor={self.var_floor!r})"

    def _variance(self, params):
        if params.scale is None:
            return np.full(params.n_clusters, 0.5)
        return params.scale

    def unary(self, X, params, normalizer="constant", cache=None):
        self.check_normalizer(normalizer)
        cost = self.divergence(X, params.centers, cache=cache)
        if normalizer == "closed_form":
            var = self._variance(params)
            d = params.centers.shape[1]
            cost /= 2.0 * var[None, :]
            cost += 0.5 * d * np.log(2.0 * np.pi * var)[None, :]
        return cost

    def m_step(self, X, assignment, params=None, normalizer="constant", cache=None) -> EmissionParams:
        self.check_normalizer(normalizer)
        k = self._n_clusters(assignment, params)
        means, _ = self._means(X, assignment, k, params, cache)
        if normalizer == "constant":
            return EmissionParams(means)
        within, counts = _weighted_within(self.divergence(X, means), assignment, k)
        d = means.shape[1]
        floor = self.var_floor * max(feature_variance(X), np.finfo(float).tiny)
        prev = self._variance(params) if params is not None else np.full(k, 0.5)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(counts > 0, within / (d * counts), prev)
        return EmissionParams(means, np.maximum(var, floor))
