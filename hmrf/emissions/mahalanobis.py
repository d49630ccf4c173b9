"""Mahalanobis emission: Gaussian clusters whose metric ``A`` is learned in the M-step.

The emission of M-KMeans and MPCKMeans (Basu, Bilenko & Mooney 2004, §2.3-2.4, appendix;
Basu 2005, §7.1; derivation in ``docs/metric_learning.md``). Point ``x_i`` in cluster
``h`` costs

    u_ih = ||x_i - μ_h||²_{A_g} + λ' tr(A_g T) - (1 + λ') log det A_g,   λ' = λ / (1 - λ)

with ``||v||²_A = vᵀ A v``, ``g = h`` for per-cluster metrics (else the one shared
group) and ``T = diag(t)`` a fixed shrinkage target. The ``-log det A`` is counted per
point (a Gaussian ``N(μ, A⁻¹)`` per point; the paper writes one for the data set), so
the unconstrained update is ``A⁻¹ = scatter / n`` and per-cluster metrics are
well-posed. M-step (paper, appendix), for fixed labels, centres and penalty thresholds:

    A_g⁻¹ = (1 - λ) (S_g + K / G) / n_g + λ T                                   (★)

``S_g``: scatter ``Σ_{i∈g} (x_i - μ_{y_i})(x_i - μ_{y_i})ᵀ`` of group ``g`` (its diagonal
for ``metric="diagonal"``), ``n_g`` its size, ``G`` the number of groups, ``K = Σ c_ij
(x_i - x_j)(x_i - x_j)ᵀ`` the violated-constraint term of
:class:`hmrf.potentials.DistanceScaledPotts` (penalties use the mean metric, hence
``K / G``).

``λ = shrinkage`` pulls the estimate toward ``T``: the feature variances
(``target="variance"``; constant features get the mean variance of the others), or the
squared feature ranges rescaled to the same total (``target="range"``, ``t_d = r_d²
Σ_e var_e / Σ_e r_e²``). The prior term is a conjugate prior worth ``λ'`` pseudo-points
per point (Basu 2005, eq. 4.9), so (★) is the exact minimiser, positive definite for
``λ > 0``. If ``K`` makes (★) indefinite, the eigenvalues of ``T^-1/2 A⁻¹ T^-1/2`` are
clipped at ``eig_floor``. Clipping, and the thresholds (★) holds fixed, are why
:meth:`Mahalanobis.update` checks the objective before it accepts a new metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .base import EmissionFamily, EmissionParams, MetricTerms, check_squared_scale, inner_products, work_dtype
from .bregman import row_dot

if TYPE_CHECKING:
    from typing import Any, Literal

    from numpy.typing import NDArray
    from scipy import sparse

    from .._typing import MatrixLike
    from .stats import ClusterStats

__all__ = ["Mahalanobis", "MahalanobisParams", "log_det_pd", "pair_sq_distances", "METRICS", "TARGETS"]

METRICS = ("diagonal", "full", "identity")
TARGETS = ("variance", "range")
#: Largest dimension for which a full d x d metric is allowed (d² floats per metric).
MAX_FULL_DIM = 4096
#: A feature is constant when its variance is at most this times its mean square.
CONSTANT_REL = 1e-12


def log_det_pd(A: Any) -> np.ndarray:
    """``log det A = 2 Σ_d log L_dd`` (``A = L Lᵀ``) of symmetric positive-definite
    matrices (d, d) or (g, d, d), finite where ``det`` under- or overflows; a
    ``ValueError`` if some ``A`` is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf.emissions.mahalanobis import log_det_pd
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
    """``||v_e||²_A`` for every row ``v_e`` of ``diff`` (dense or sparse, (m, d)), ``A`` a
    (d,) diagonal, a (d, d) matrix or ``None`` (identity)."""
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
    """Centres plus the learned metric: ``metric`` (g, d) diagonal or (g, d, d) full
    ``A_g``, ``g = 1`` shared or ``k`` per cluster; ``prior`` the diagonal ``t`` of the
    shrinkage target ``T``; ``metric_step`` the fraction of the paper's metric update
    accepted in the last M-step (:meth:`Mahalanobis.update`)."""

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


def _feature_variance(X) -> tuple[np.ndarray, np.ndarray]:
    """Variance and mean of every feature (sparse ``X`` stays sparse)."""
    mean = np.asarray(X.mean(axis=0, dtype=np.float64)).ravel()
    if sp.issparse(X):
        return np.maximum(np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean**2, 0.0), mean
    return np.var(X, axis=0, dtype=np.float64), mean


def _stats_feature_variance(stats) -> tuple[np.ndarray, np.ndarray]:
    """Variance and mean of every feature of all the points in ``stats``."""
    n = max(stats.counts.sum(), np.finfo(float).tiny)
    mean = stats.sums.sum(axis=0) / n
    second = stats.second.sum(axis=0)
    if second.ndim == 2:
        second = np.diagonal(second)
    dm = mean - (0.0 if stats.shift is None else stats.shift)
    return np.maximum(second / n - dm * dm, 0.0), mean


def _shrinkage_target(var, mean) -> np.ndarray:
    """The diagonal ``t`` of ``T``: each feature's variance; numerically constant features
    (whose distances are all zero) get the mean variance of the others."""
    const = var <= CONSTANT_REL * (mean**2 + var)
    fill = float(var[~const].mean()) if np.any(~const) else 1.0
    return np.where(const, fill, var)


def _feature_range(X) -> np.ndarray:
    """``max - min`` of every feature (sparse ``X`` stays sparse; its implicit zeros count)."""
    if sp.issparse(X):
        hi, lo = X.max(axis=0), X.min(axis=0)
        return np.asarray((hi - lo).toarray() if sp.issparse(hi) else hi - lo, dtype=np.float64).ravel()
    return np.asarray(X.max(axis=0), dtype=np.float64) - np.asarray(X.min(axis=0), dtype=np.float64)


def _range_target(X) -> np.ndarray:
    """The diagonal ``t`` of ``T`` for ``target="range"``: squared feature ranges scaled to
    the total variance, ``t_d = r_d² Σ_e var_e / Σ_e r_e²``; constant features get the mean
    of the others (any positive value leaves their distances, all zero, unchanged)."""
    var, mean = _feature_variance(X)
    r2 = _feature_range(X) ** 2
    const = var <= CONSTANT_REL * (mean**2 + var)
    if not np.any(~const):
        return np.ones_like(var)
    t = r2 * (var[~const].sum() / r2[~const].sum())
    return np.where(const, float(t[~const].mean()), t)


class Mahalanobis(EmissionFamily):
    """Gaussian emission with a learned Mahalanobis metric (M-KMeans / MPCKMeans).

    Parameters
    ----------
    metric : {"diagonal", "full", "identity"}, default="diagonal"
        Diagonal ``A`` (feature weighting, the paper's experiments), full ``A``, or
        ``A = I`` fixed (no metric learning: squared Euclidean distance).
    per_cluster : bool, default=False
        One metric per cluster instead of one shared by all.
    shrinkage : float in [0, 1), default=0.01
        ``λ`` of the update (★) in the module docstring.
    target : {"variance", "range"}, default="variance"
        The shrinkage target ``T`` (module docstring).
    eig_floor : float, default=1e-6
        Floor of the eigenvalues of ``T^-1/2 A⁻¹ T^-1/2``, applied when constraint terms
        make the update indefinite.
    max_backtrack : int, default=5
        Halvings of the metric step tried before the old metric is kept.
    safeguard : bool, default=True
        Accept a new metric only if it does not increase the objective (otherwise the
        paper's update is applied as is, and the objective may rise).
    metric_potential : PairwisePotential, optional
        A :class:`~hmrf.emissions.base.MetricTerms` potential used *only* by the metric
        update, not by the E-step (M-KMeans). Potentials of the model itself are found automatically.

    Notes
    -----
    The objective, the update (★) and the regularisation are in the module docstring.
    The ``log det A`` normaliser is always kept (without it the metric update has no
    minimiser), whatever ``normalizer``; a full metric beyond ``MAX_FULL_DIM`` features
    is refused.

    References
    ----------
    Basu, Bilenko & Mooney (2004), eq. 2-4, §3.3 and appendix. Basu (2005), §7.1.
    """

    name = "mahalanobis"
    has_closed_form_normalizer = True
    accepts_sparse = True
    m_step_needs = frozenset({"statistics", "pairwise"})

    def __init__(self, metric: Literal["diagonal", "full", "identity"] = "diagonal",
                 per_cluster: bool = False, shrinkage: float = 0.01, eig_floor: float = 1e-6,
                 max_backtrack: int = 5, safeguard: bool = True,
                 metric_potential: MetricTerms | None = None,
                 target: Literal["variance", "range"] = "variance") -> None:
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}; got {metric!r}.")
        if target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}; got {target!r}.")
        if not isinstance(per_cluster, (bool, np.bool_)):
            raise ValueError(f"per_cluster must be True or False; got {per_cluster!r}.")
        shrinkage = float(shrinkage)
        if not 0.0 <= shrinkage < 1.0:
            raise ValueError(f"shrinkage must be in [0, 1); got {shrinkage}.")
        if not (np.isfinite(eig_floor) and eig_floor > 0):
            raise ValueError(f"eig_floor must be a positive number; got {eig_floor!r}.")
        if int(max_backtrack) < 0:
            raise ValueError(f"max_backtrack must be >= 0; got {max_backtrack!r}.")
        if metric_potential is not None and not isinstance(metric_potential, MetricTerms):
            raise TypeError("metric_potential must be a hmrf.emissions.base.MetricTerms potential, which "
                            "defines metric_terms(X, params, labels) (e.g. DistanceScaledPotts); got "
                            f"{type(metric_potential).__name__}.")
        self.metric = metric
        self.per_cluster = bool(per_cluster)
        self.shrinkage = shrinkage
        self.eig_floor = float(eig_floor)
        self.max_backtrack = int(max_backtrack)
        self.safeguard = bool(safeguard)
        self.metric_potential = metric_potential
        self.target = target

    @property
    def exact_m_step(self) -> bool:
        """Whether the M-step never increases the model's objective (``run_em`` checks)."""
        return self.metric == "identity" or (self.safeguard and self.metric_potential is None)

    # -------------------------------------------------------------- data domain
    def prepare(self, X: MatrixLike) -> NDArray[np.floating] | sparse.csr_matrix:
        check_squared_scale(X, self.name)
        if self.metric == "full" and X.shape[1] > MAX_FULL_DIM:
            raise ValueError(
                f"metric='full' needs a {X.shape[1]}x{X.shape[1]} matrix per metric; more than "
                f"MAX_FULL_DIM={MAX_FULL_DIM} features is refused. Use metric='diagonal' "
                "(it works on sparse data without densifying)."
            )
        return X

    # -------------------------------------------------------------------- costs
    def divergence(self, X: MatrixLike, centers: NDArray[np.floating], data: Any = None,
                   params: EmissionParams | None = None) -> np.ndarray:
        """``||x_i - μ_h||²_{A_h}`` (n, k); ``A = I`` when ``params`` is ``None``."""
        dt = work_dtype(X)
        M = np.asarray(centers, dtype=np.float64)
        if params is None or params.metric is None:
            cost = np.asarray(X @ (-2.0 * M.T).astype(dt))
            cost += row_dot(X)[:, None].astype(dt)
            cost += row_dot(M)[None, :].astype(dt)
        elif params.diagonal:
            a = params.cluster_metric()  # (k, d)
            if params.n_groups == 1 and not sp.issparse(X):
                # one metric: ||x||²_A is one number a row (one pass, no (n, d) temporary),
                # and the cross term one product, as for the squared Euclidean distance
                cost = inner_products(X, -2.0 * M * a)
                cost += np.einsum("ij,ij,j->i", X, X, params.metric[0].astype(dt))[:, None]
            else:
                sq = X.multiply(X) if sp.issparse(X) else X * X
                cost = np.asarray(sq @ a.T.astype(dt))
                cost -= np.asarray(X @ (2.0 * M * a).T.astype(dt))
            cost += np.einsum("kd,kd->k", M * M, a)[None, :].astype(dt)
        elif params.n_groups == 1:  # shared full metric: one (n, d) x (d, d) product
            L = params.factor[0]
            Z, Zc = np.asarray(X @ L.astype(dt)), (M @ L).astype(dt)
            cost = row_dot(Z)[:, None].astype(dt) - 2.0 * (Z @ Zc.T) + row_dot(Zc)[None, :].astype(dt)
        else:  # one (n, d) x (d, d) product per cluster metric
            L = params.factor
            cost = np.empty((X.shape[0], M.shape[0]), dtype=dt)
            for h in range(M.shape[0]):
                cost[:, h] = row_dot(np.asarray(X @ L[h].astype(dt)) - (M[h] @ L[h]).astype(dt))
        np.maximum(cost, 0.0, out=cost)
        return cost

    def distortion(self, X: MatrixLike, params: EmissionParams, data: Any = None) -> np.ndarray:
        """``||x_i - μ_h||²_{A_h}`` under the learned metric (the rest of the unary cost
        is ``-log det A`` and the shrinkage prior)."""
        return self.divergence(X, params.centers, params=params)

    def _lam(self) -> float:
        return self.shrinkage / (1.0 - self.shrinkage)

    def cluster_cost(self, params: EmissionParams, normalizer: str = "constant") -> np.ndarray:
        """``λ' tr(A_h T) - (1 + λ') log det A_h`` per cluster (0 for ``metric="identity"``)."""
        if self.metric == "identity" or params.metric is None:
            return np.zeros(params.n_clusters)
        lam = self._lam()
        diag = params.metric if params.diagonal else np.diagonal(params.metric, axis1=1, axis2=2)
        per_group = lam * (diag @ params.prior) - (1.0 + lam) * params.log_det
        return np.broadcast_to(per_group, (params.n_clusters,)).copy()

    def unary(self, X: MatrixLike, params: EmissionParams, normalizer: str = "constant",
              data: Any = None) -> np.ndarray:
        self.check_normalizer(normalizer)
        cost = self.divergence(X, params.centers, params=params)
        cost += self.cluster_cost(params)[None, :].astype(cost.dtype)
        return cost

    # --------------------------------------------------------------- parameters
    def init_params(self, X: MatrixLike, centers: NDArray[np.floating]) -> MahalanobisParams:
        """Centres with ``A = I`` (the paper's start) and the shrinkage target from ``X``."""
        C = np.array(centers, dtype=np.float64)
        prior = _range_target(X) if self.target == "range" else _shrinkage_target(*_feature_variance(X))
        return self._identity_params(C, prior)

    def _identity_params(self, centers, prior) -> MahalanobisParams:
        k, d = centers.shape
        g = k if self.per_cluster else 1
        metric = np.ones((g, d)) if self.metric != "full" else np.tile(np.eye(d), (g, 1, 1))
        return MahalanobisParams(centers, metric=metric, prior=prior)

    def second_moment(self, normalizer: str = "constant") -> str | None:
        return {"diagonal": "diagonal", "full": "full", "identity": None}[self.metric]

    def _scatter(self, stats, means):
        """Scatter around the cluster means, per group: (G, d) diagonals or (G, d, d)."""
        S = stats.scatter(means)
        return S if self.per_cluster else S.sum(axis=0, keepdims=True)

    def _metric_update(self, stats, means, counts, old, K):
        """The update (★); returns new metric (G, ...) and whether eigenvalues were clipped."""
        S = self._scatter(stats, means)
        n_g = counts if self.per_cluster else np.array([counts.sum()])
        G = n_g.shape[0]
        lam, t, floor = self.shrinkage, old.prior, self.eig_floor
        s = 1.0 / np.sqrt(t)  # floors act in units of T: C̃ = T^-1/2 C T^-1/2 >= floor I
        metric = np.array(old.metric, dtype=np.float64)
        clipped = False
        for g in np.flatnonzero(n_g > 0):  # at most k small (d or d x d) problems
            Sg = S[g] if K is None else S[g] + K / G
            if self.metric == "full":
                C = ((1.0 - lam) * Sg / n_g[g] + lam * np.diag(t)) * np.outer(s, s)
                w, V = np.linalg.eigh((C + C.T) / 2.0)
                clipped |= bool(np.any(w < floor))
                A = ((V / np.maximum(w, floor)) @ V.T) * np.outer(s, s)
                metric[g] = (A + A.T) / 2.0
            else:
                c = (1.0 - lam) * Sg / n_g[g] + lam * t
                clipped |= bool(np.any(c < floor * t))
                metric[g] = 1.0 / np.maximum(c, floor * t)
        return metric, clipped

    def update(self, stats: ClusterStats, params: EmissionParams | None = None, normalizer: str = "constant",
               context: Any = None) -> EmissionParams:
        """M-step of MPCKMeans (Fig. 1, steps 2b-2c): means, then the metric, safeguarded.

        1. Centres: cluster means, the exact minimiser for fixed labels and metric.
        2. Metric: the paper's update (★) with the violated-constraint terms of every
           :class:`~hmrf.emissions.base.MetricTerms` potential of ``context`` (plus
           ``metric_potential``).
        3. Safeguard: (★) holds the penalty thresholds fixed, but ``α_max`` moves with
           ``A``, so the objective is evaluated at ``A_old + t (A_new - A_old)`` for ``t =
           1, 1/2, ...`` (``max_backtrack`` halvings) and the first ``t`` that does not
           increase it is kept, else the old metric (``params.metric_step`` records
           ``t``). Skipped when (★) is exact: no metric-dependent penalty, no clipping.
        """
        self.check_normalizer(normalizer)
        means, counts = self._means(stats, params)
        if params is None or params.metric is None:  # no data here for ranges: the variance target
            prior = np.ones(means.shape[1]) if stats.second is None else \
                _shrinkage_target(*_stats_feature_variance(stats))
            params = self._identity_params(means, prior)
        mid = params.replace(centers=means, metric_step=0.0)
        if self.metric == "identity":
            return mid.replace(metric_step=1.0)
        pots = [] if context is None else [p for p in context.potentials if isinstance(p, MetricTerms)]
        extra = [self.metric_potential] if self.metric_potential is not None else []
        K = None
        if pots or extra:
            if context is None or context.labels is None:
                raise ValueError("the metric update with constraint terms needs the labels (MStepContext).")
            for p in pots + extra:
                terms = p.metric_terms(context.X, mid, context.labels)
                if terms is not None and terms[1].size:
                    K = (0.0 if K is None else K) + self._outer_sum(*terms)
        metric, clipped = self._metric_update(stats, means, counts, mid, K)
        new = mid.replace(metric=metric, metric_step=1.0)
        # (★) is the exact minimiser only when no penalty depends on the metric: even
        # with no pair in M*/C* (K is None), a violated pair sitting at a threshold moves
        # off it, and α_max moves, when A changes
        if not self.safeguard or (not pots and not extra and not clipped):
            return new
        scatter = stats.scatter(means)

        def objective(p):
            value = self._summed_cost(p, scatter, counts)
            if pots:
                value += context.pairwise_energy(p)
            for q in extra:
                value += q.graph(context.X, p, p.n_clusters).pairwise_energy(context.labels)
            return value

        j_old = objective(mid)
        t = 1.0
        for _ in range(self.max_backtrack + 1):
            trial = new if t == 1.0 else mid.replace(metric=(1 - t) * mid.metric + t * metric,
                                                     metric_step=t)
            if objective(trial) <= j_old:
                return trial
            t /= 2.0
        return mid

    def summed_cost(self, params: MahalanobisParams, stats: ClusterStats,
                    normalizer: str = "constant") -> float | None:
        """``Σ_i (x_i - μ_{y_i})ᵀ A_{y_i} (x_i - μ_{y_i}) + cluster_cost_{y_i}`` from the
        statistics (``_summed_cost``); ``None`` for the identity metric, whose
        statistics carry no second moment."""
        if stats.second is None:
            return None
        self.check_normalizer(normalizer)
        return self._summed_cost(params, stats.scatter(params.centers), stats.counts)

    def _summed_cost(self, params, scatter, counts) -> float:
        """``Σ_i u_{i, y_i}`` from the per-cluster scatter around ``params.centers``:
        ``Σ_h <A_h, S_h> + n_h · cluster_cost_h`` (no pass over the data)."""
        A = params.cluster_metric()
        if params.diagonal:
            distortion = float(np.einsum("kd,kd->", A, scatter))
        else:
            distortion = float(np.einsum("kij,kij->", A, scatter))
        return distortion + float(counts @ self.cluster_cost(params))

    def _outer_sum(self, diff, coef):
        """``Σ_e c_e v_e v_eᵀ`` (d, d), or its diagonal (d,) for diagonal metrics."""
        if self.metric == "full":
            wd = diff.multiply(coef[:, None]) if sp.issparse(diff) else diff * coef[:, None]
            out = wd.T @ diff
            return out.toarray() if sp.issparse(out) else np.asarray(out)
        sq = diff.multiply(diff) if sp.issparse(diff) else diff * diff
        return np.asarray(sq.T @ coef).ravel()

    def __repr__(self) -> str:
        target = "" if self.target == "variance" else f", target={self.target!r}"
        return (f"Mahalanobis(metric={self.metric!r}, per_cluster={self.per_cluster!r}, "
                f"shrinkage={self.shrinkage!r}{target})")
