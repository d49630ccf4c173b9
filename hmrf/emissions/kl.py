"""KL divergence (multinomial) and I-divergence (Poisson) emissions, with smoothing.

Both are the Bregman divergence of ``φ(x) = Σ_f x_f log x_f - x_f``:
``D_I(x, μ) = Σ_f x_f log(x_f / μ_f) - x_f + μ_f``; on the probability simplex the
last two terms cancel and it is the KL divergence (Basu 2005, §4.3.4). Sparse count
or TF-IDF matrices stay sparse: ``φ`` only touches stored entries (0 log 0 = 0).
:class:`Multinomial` is the same family on rows of counts, each scored at its length
(naive Bayes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .._validation import check_nonnegative
from .base import EmissionFamily, EmissionParams, LinearCosts, inner_products, scale_rows, work_dtype
from .bregman import BregmanFamily
from .stats import ClusterStats

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import DTypeLike, NDArray
    from scipy import sparse

    from .._typing import MatrixLike

__all__ = ["KL", "IDivergence", "SmoothedParams", "Multinomial", "MultinomialParams"]


@dataclass(frozen=True)
class SmoothedParams(EmissionParams):
    """Centres plus the prior mean ``u`` that smoothing pulls them towards."""

    prior: np.ndarray | None = None


def _xlogx_minus_x(A) -> np.ndarray:
    """``Σ_f x_f log x_f - x_f`` per row (0 log 0 = 0), float64; sparse rows touch only
    their stored entries."""

    def terms(v):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v > 0, v * np.log(np.where(v > 0, v, 1.0)), 0.0) - v

    if sp.issparse(A):
        A = sp.csr_matrix(A)
        v = terms(A.data.astype(np.float64))
        return np.asarray(sp.csr_matrix((v, A.indices, A.indptr), shape=A.shape).sum(axis=1)).ravel()
    return terms(np.asarray(A, dtype=np.float64)).sum(axis=1)


class IDivergence(BregmanFamily):
    """Generalised I-divergence ``Σ x log(x/μ) - x + μ`` (Poisson emission).

    Parameters
    ----------
    smoothing : float, default=0.01
        ``α`` of the smoothed M-step ``μ_h = (mean_h + α u) / (1 + α)`` with ``u`` the
        data's global mean (Basu 2005, eq. 4.12 uses the same form for KL). It keeps
        ``μ_hf > 0`` wherever any point has mass, so no divergence is infinite.

    Notes
    -----
    The smoothed centre is the exact minimiser of ``Σ_{i∈h} [D(x_i, μ) + α D(u, μ)]`` (a
    conjugate prior worth ``α`` pseudo-points per point at ``u``), so ``α D(u, μ_h)`` is
    added to every point's unary cost (the ``-log Pr(Θ)`` term of eq. 4.9): EM descends
    the objective it reports.
    """

    _prior_kind = "mean"

    def __init__(self, smoothing: float = 0.01) -> None:
        super().__init__(_xlogx_minus_x, np.log, name="idiv")
        self.smoothing = smoothing

    def __repr__(self) -> str:
        return f"{type(self).__name__}(smoothing={self.smoothing!r})"

    def _check_smoothing(self):
        a = float(self.smoothing)
        if not np.isfinite(a) or a < 0:
            raise ValueError(f"smoothing must be a finite number >= 0; got {self.smoothing!r}.")
        return a

    def prepare(self, X: MatrixLike) -> NDArray[np.floating] | sparse.csr_matrix:
        check_nonnegative(X, f"the {self.name} emission needs non-negative data (counts or frequencies)")
        return X

    def _prior(self, X) -> np.ndarray:
        return np.asarray(X.mean(axis=0), dtype=np.float64).ravel()

    def _prior_from_stats(self, stats) -> np.ndarray:
        """The prior mean ``u`` from the statistics of all points (the global mean)."""
        return stats.sums.sum(axis=0) / max(stats.counts.sum(), np.finfo(float).tiny)

    def divergence(self, X: MatrixLike, centers: NDArray[np.floating], data: Any = None) -> np.ndarray:
        M = np.asarray(centers, dtype=np.float64)
        zero = M <= 0
        logM = np.log(np.where(zero, 1.0, M))
        cost = inner_products(X, -logM)
        phi_x = self.data_terms(X) if data is None else data
        cost += phi_x[:, None].astype(cost.dtype, copy=False)
        cost += M.sum(axis=1)[None, :].astype(cost.dtype)
        np.maximum(cost, 0.0, out=cost)
        if zero.any():
            # mass on a feature where the centre has none: infinite divergence
            cost[np.asarray(X @ zero.T.astype(work_dtype(X))) > 0] = np.inf
        return cost

    def linear_costs(self, params: EmissionParams, normalizer: str = "constant",
                     dtype: DTypeLike = np.float64) -> LinearCosts | None:
        """``g_h = -log μ_h``, ``bias_h = Σ_f μ_hf``, ``offset_h`` the prior term; ``None``
        when a centre has a zero entry (an infinite divergence for the points with mass
        there, which :meth:`divergence` sets)."""
        self.check_normalizer(normalizer)
        M = np.asarray(params.centers, dtype=np.float64)
        if not np.all(M > 0):
            return None
        return LinearCosts.build(np.log(M), M.sum(axis=1), self.cluster_cost(params, normalizer), dtype,
                                 factor=-1.0)

    def cluster_cost(self, params: EmissionParams, normalizer: str = "constant") -> NDArray[np.float64]:
        a = self._check_smoothing()
        prior = params.prior if isinstance(params, SmoothedParams) else None
        if a == 0 or prior is None:
            return np.zeros(params.n_clusters)
        return a * self.divergence(prior[None, :], params.centers)[0]

    def init_params(self, X: MatrixLike, centers: NDArray[np.floating]) -> SmoothedParams:
        prior = self._prior(X)
        a = self._check_smoothing()
        C = np.array(centers, dtype=np.float64)
        C = self._project(C)
        return SmoothedParams((C + a * prior) / (1.0 + a), prior=prior)

    def _project(self, C):
        return np.maximum(C, 0.0)

    def update(self, stats: ClusterStats, params: EmissionParams | None = None, normalizer: str = "constant",
               context: Any = None) -> SmoothedParams:
        self.check_normalizer(normalizer)
        a = self._check_smoothing()
        prior = params.prior if isinstance(params, SmoothedParams) and params.prior is not None \
            else self._prior_from_stats(stats)
        means, _ = self._means(stats, params)
        return SmoothedParams((means + a * prior) / (1.0 + a), prior=prior)


class KL(IDivergence):
    """KL divergence ``Σ x log(x/μ)`` between distributions (multinomial emission).

    Rows of ``X`` are normalised to sum to one (term frequencies -> distributions);
    all-zero rows and negative entries raise ``ValueError``.

    Parameters
    ----------
    smoothing : float, default=0.01
        ``α`` of Basu (2005), eq. 4.12: ``μ_h = (mean_h + α u) / (1 + α)`` with ``u``
        uniform over the ``d`` features. (The thesis prints ``α/n``; read as the uniform
        distribution, ``1/d`` keeps ``μ_h`` on the simplex.) See :class:`IDivergence`
        for how the prior term enters the objective.

    References
    ----------
    Dhillon & Guan (2003); Basu (2005), §4.3.4 and eq. 4.12.
    """

    def __init__(self, smoothing: float = 0.01) -> None:
        super().__init__(smoothing)
        self.name = "kl"

    def prepare(self, X: MatrixLike) -> NDArray[np.floating] | sparse.csr_matrix:
        check_nonnegative(X, f"the {self.name} emission needs non-negative data (counts or frequencies)")
        sums = np.asarray(X.sum(axis=1), dtype=np.float64).ravel()
        if np.any(sums <= 0):
            r = int(np.flatnonzero(sums <= 0)[0])
            raise ValueError(
                f"row {r} of X sums to zero; the KL emission needs every row to be a "
                "non-empty distribution (drop empty documents first)."
            )
        return scale_rows(X, sums)

    def _prior(self, X) -> np.ndarray:
        d = X.shape[1]
        return np.full(d, 1.0 / d)

    def _prior_from_stats(self, stats) -> np.ndarray:
        d = stats.sums.shape[1]
        return np.full(d, 1.0 / d)

    def _project(self, C):
        C = np.maximum(C, 0.0)
        s = C.sum(axis=1, keepdims=True)
        return np.where(s > 0, C / np.where(s > 0, s, 1.0), 1.0 / C.shape[1])


@dataclass(frozen=True)
class MultinomialParams(EmissionParams):
    """Word distributions ``θ_h`` (``centers``) with their logarithms (k, d)."""

    log_centers: np.ndarray | None = None


class Multinomial(EmissionFamily):
    """Multinomial emission on rows of counts (naive Bayes; Nigam et al. 2000).

    A row ``x`` of word counts drawn word by word from the cluster's distribution
    ``θ_h`` costs::

        -log P(x | θ_h) = -Σ_w x_w log θ_hw  =  |x| KL(x / |x| ‖ θ_h) - |x| Σ_w p_w log p_w

    (the multinomial coefficient, the same for every cluster, left out): :class:`KL` on
    the row's distribution ``p = x / |x|``, scaled by its length, up to a per-row
    constant (Banerjee et al. 2005). The M-step is the MAP estimate under a symmetric
    Dirichlet(α + 1) prior on every ``θ_h``::

        θ_hw = (α + N_hw) / (α d + Σ_w' N_hw'),    N_h = Σ_i r_ih x_i,

    whose ``-log p(θ) = -α Σ_h Σ_w log θ_hw`` (up to a constant) is :meth:`prior_cost`.

    Parameters
    ----------
    pseudo_count : float, default=1.0
        ``α`` (1: Laplace smoothing); ``> 0`` keeps every ``θ_hw > 0``.
    """

    name = "multinomial"

    def __init__(self, pseudo_count: float = 1.0) -> None:
        self.pseudo_count = pseudo_count

    def _alpha(self) -> float:
        a = float(self.pseudo_count)
        if not np.isfinite(a) or a <= 0:
            raise ValueError(f"pseudo_count must be a finite number > 0; got {self.pseudo_count!r}.")
        return a

    def prepare(self, X: MatrixLike) -> NDArray[np.floating] | sparse.csr_matrix:
        check_nonnegative(X, "Negative values in data: the multinomial emission needs non-negative "
                             "word counts")
        return X

    def divergence(self, X: MatrixLike, centers: NDArray[np.floating], data: Any = None) -> np.ndarray:
        return inner_products(X, -np.log(np.asarray(centers, dtype=np.float64)))

    @staticmethod
    def _log_centers(params: EmissionParams) -> np.ndarray:
        if isinstance(params, MultinomialParams) and params.log_centers is not None:
            return params.log_centers
        return np.log(np.asarray(params.centers, dtype=np.float64))

    def unary(self, X: MatrixLike, params: EmissionParams, normalizer: str = "constant",
              data: Any = None) -> np.ndarray:
        self.check_normalizer(normalizer)
        return inner_products(X, -self._log_centers(params))

    def prior_cost(self, params: EmissionParams) -> float:
        return -self._alpha() * float(self._log_centers(params).sum())

    def update(self, stats: ClusterStats, params: EmissionParams | None = None, normalizer: str = "constant",
               context: Any = None) -> MultinomialParams:
        self.check_normalizer(normalizer)
        a, N = self._alpha(), stats.sums
        log_theta = np.log(N + a) - np.log(N.sum(axis=1) + a * N.shape[1])[:, None]
        return MultinomialParams(np.exp(log_theta), log_centers=log_theta)

    def init_params(self, X: MatrixLike, centers: NDArray[np.floating]) -> MultinomialParams:
        """Centre rows read as counts and smoothed as the M-step does."""
        C = np.maximum(np.asarray(centers, dtype=np.float64), 0.0)
        return self.update(ClusterStats(np.ones(C.shape[0]), C))
