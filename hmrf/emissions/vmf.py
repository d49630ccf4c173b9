"""von Mises-Fisher emission: cosine distance on the unit sphere (SP-KMeans)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.special import ive

from .base import EmissionFamily, EmissionParams, LinearCosts, inner_products, scale_rows
from .bregman import row_dot

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import DTypeLike, NDArray
    from scipy import sparse

    from .._typing import MatrixLike
    from .stats import ClusterStats

__all__ = ["VonMisesFisher", "log_vmf_normalizer"]


def _log_iv_debye(nu, x):
    """Uniform asymptotic (Debye) expansion of log I_nu(x) for large nu (Abramowitz &
    Stegun 9.7.7), with the first two correction terms."""
    z = x / nu
    s = np.sqrt(1.0 + z * z)
    t = 1.0 / s
    eta = s + np.log(z / (1.0 + s))
    u1 = (3.0 * t - 5.0 * t**3) / 24.0
    u2 = (81.0 * t**2 - 462.0 * t**4 + 385.0 * t**6) / 1152.0
    return -0.5 * np.log(2.0 * np.pi * nu) + nu * eta - 0.5 * np.log(s) + np.log1p(u1 / nu + u2 / nu**2)


def log_bessel_iv(nu, x):
    """``log I_nu(x)`` for ``nu >= 0``, ``x > 0``, without overflow or underflow.

    Uses SciPy's exponentially scaled ``ive`` where it is representable
    (``log I = log ive + x``) and the Debye expansion where ``ive`` underflows, which
    happens for the large orders ``nu = d/2 - 1`` of high-dimensional text.
    """
    nu, x = np.broadcast_arrays(np.asarray(nu, dtype=np.float64), np.asarray(x, dtype=np.float64))
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        v = ive(nu, x)
        out = np.log(v) + x
    bad = ~np.isfinite(out) | (v < 1e-280)
    if np.any(bad):
        nb = np.maximum(nu[bad], 1e-12)
        out = np.array(out, dtype=np.float64)
        out[bad] = _log_iv_debye(nb, x[bad])
    return out


def log_vmf_normalizer(kappa: float | NDArray[np.floating], d: int) -> np.ndarray:
    """``log C_d(κ)`` of the vMF density ``C_d(κ) exp(κ μ^T x)`` on the sphere in R^d.

    ``log C_d(κ) = (d/2 - 1) log κ - (d/2) log 2π - log I_{d/2-1}(κ)``, with the Bessel
    term from ``log_bessel_iv``, finite for any d and κ > 0.
    """
    kappa = np.asarray(kappa, dtype=np.float64)
    nu = d / 2.0 - 1.0
    return nu * np.log(kappa) - (d / 2.0) * np.log(2.0 * np.pi) - log_bessel_iv(abs(nu), kappa)


def _fallback_direction(X) -> np.ndarray:
    """A deterministic unit direction for a centre that has none (see ``init_params``)."""
    total = np.asarray(X.sum(axis=0), dtype=np.float64).ravel()
    if not np.linalg.norm(total) > 0:
        first = X[0]
        total = np.asarray(first.toarray() if sp.issparse(first) else first, dtype=np.float64).ravel()
    return total / np.max(np.abs(total))


def _mean_resultant_ratio(kappa, d: int) -> np.ndarray:
    """``A_d(κ) = I_{d/2}(κ) / I_{d/2-1}(κ)``, the expected cosine under vMF(κ)."""
    nu = d / 2.0 - 1.0
    return np.exp(log_bessel_iv(nu + 1.0, kappa) - log_bessel_iv(abs(nu), kappa))


def _row_max_abs(A) -> np.ndarray:
    """Largest absolute entry of every row (float64), without an |A| copy of dense A."""
    if sp.issparse(A):
        return np.asarray(abs(A).max(axis=1).toarray(), dtype=np.float64).ravel()
    return np.maximum(A.max(axis=1), -A.min(axis=1)).astype(np.float64)


def _unit_rows(A, what: str):
    """Rows of ``A`` scaled to unit L2 norm, each first divided by its largest absolute
    entry (no overflow or underflow)."""
    top = _row_max_abs(A)
    if np.any(top <= 0):
        r = int(np.flatnonzero(top <= 0)[0])
        raise ValueError(
            f"row {r} of {what} is all zeros; cosine distance is undefined for a zero vector "
            "(drop empty rows first)."
        )
    scaled = scale_rows(A, top)
    return scale_rows(scaled, np.sqrt(row_dot(scaled)))


class VonMisesFisher(EmissionFamily):
    """Cosine distance / von Mises-Fisher emission (Basu 2005, §4.3.4 and eq. 4.13).

    Rows of ``X`` are scaled to unit L2 norm (sparse stays sparse); a zero row raises.
    Centres are the cluster sums projected onto the sphere (eq. 4.13).

    Parameters
    ----------
    kappa : float, default=1.0
        Concentration used with ``normalizer="constant"``: the cost is
        ``κ (1 - x^T μ_h)``, i.e. the thesis's cosine distance for ``κ = 1``.
    max_kappa : float, default=1e6
        Cap on estimated concentrations (a one-point cluster has ``r̄ = 1``, κ = ∞).
    newton_steps : int, default=2
        Newton refinements of the Banerjee et al. (2005) κ estimate (Sra 2012).

    Notes
    -----
    ``normalizer="closed_form"`` fits one κ_h per cluster: the cost is the exact
    negative log-density ``-κ_h x^T μ_h - log C_d(κ_h)``. With ``r̄_h = ||Σ_{i∈h} x_i|| /
    n_h``, Banerjee et al.'s estimate ``κ ≈ r̄ (d - r̄²) / (1 - r̄²)`` is refined by
    Newton's method on ``A_d(κ) = r̄``; ``log C_d`` uses a stable log-Bessel
    (:func:`log_vmf_normalizer`), finite for the d ~ 10^4 of text.

    References
    ----------
    Banerjee, Dhillon, Ghosh & Sra (2005), "Clustering on the unit hypersphere using von
    Mises-Fisher distributions", JMLR 6. Sra (2012), "A short note on parameter
    approximation for von Mises-Fisher distributions". Dhillon & Modha (2001).
    """

    name = "cosine"
    has_closed_form_normalizer = True

    def __init__(self, kappa: float = 1.0, max_kappa: float = 1e6, newton_steps: int = 2) -> None:
        self.kappa = kappa
        self.max_kappa = max_kappa
        self.newton_steps = newton_steps

    def prepare(self, X: MatrixLike) -> NDArray[np.floating] | sparse.csr_matrix:
        return _unit_rows(X, "X")

    def divergence(self, X: MatrixLike, centers: NDArray[np.floating], data: Any = None) -> np.ndarray:
        C = np.asarray(centers, dtype=np.float64)
        cost = inner_products(X, -C)
        cost += 1.0
        np.clip(cost, 0.0, 2.0, out=cost)
        return cost

    def _kappa(self, params) -> np.ndarray:
        if params.scale is None:
            return np.full(params.n_clusters, float(self.kappa))
        return params.scale

    def unary(self, X: MatrixLike, params: EmissionParams, normalizer: str = "constant",
              data: Any = None) -> np.ndarray:
        self.check_normalizer(normalizer)
        cost = self.divergence(X, params.centers)
        if normalizer == "constant":
            if self.kappa != 1.0:
                cost *= cost.dtype.type(self.kappa)
            return cost
        kappa = self._kappa(params)
        d = params.centers.shape[1]
        # -log p = -κ x^T μ - log C_d(κ) = κ (1 - x^T μ) - κ - log C_d(κ)
        cost *= kappa[None, :].astype(cost.dtype)
        cost -= (kappa + log_vmf_normalizer(kappa, d))[None, :].astype(cost.dtype)
        return cost

    def linear_costs(self, params: EmissionParams, normalizer: str = "constant",
                     dtype: DTypeLike = np.float64) -> LinearCosts:
        """``g_h = -μ_h``, ``bias_h = 1``, clip to [0, 2]; ``scale_h = κ_h`` and, with the
        closed-form normaliser, ``offset_h = -κ_h - log C_d(κ_h)`` (as :meth:`unary`)."""
        self.check_normalizer(normalizer)
        C = np.asarray(params.centers, dtype=np.float64)
        k, d = C.shape
        scale = offset = None
        if normalizer == "constant":
            if self.kappa != 1.0:
                scale = np.full(k, float(self.kappa))
        else:
            scale = self._kappa(params)
            offset = -(scale + log_vmf_normalizer(scale, d))
        return LinearCosts.build(C, np.ones(k), offset, dtype, scale=scale, lo=0.0, hi=2.0, factor=-1.0)

    def init_params(self, X: MatrixLike, centers: NDArray[np.floating]) -> EmissionParams:
        """Centres projected onto the unit sphere; a zero centre takes the direction of
        the data's mean resultant (or of the first row of ``X``)."""
        C = np.array(centers, dtype=np.float64)
        top = np.max(np.abs(C), axis=1)
        zero = ~(top > 0)
        C[~zero] /= top[~zero, None]
        if zero.any():
            C[zero] = _fallback_direction(X)
        return EmissionParams(C / np.linalg.norm(C, axis=1)[:, None])

    def estimate_kappa(self, rbar: NDArray[Any], d: int) -> np.ndarray:
        """Maximum-likelihood κ for mean resultant lengths ``rbar`` (Banerjee + Newton)."""
        r = np.clip(np.asarray(rbar, dtype=np.float64), 1e-12, 1.0 - 1e-12)
        kappa = np.minimum(r * (d - r * r) / (1.0 - r * r), self.max_kappa)
        for _ in range(int(self.newton_steps)):
            a = _mean_resultant_ratio(kappa, d)
            denom = 1.0 - a * a - (d - 1.0) / kappa * a
            step = np.where(denom > 0, (a - r) / np.where(denom > 0, denom, 1.0), 0.0)
            kappa = np.clip(kappa - step, 1e-8, self.max_kappa)
        return kappa

    def update(self, stats: ClusterStats, params: EmissionParams | None = None, normalizer: str = "constant",
               context: Any = None) -> EmissionParams:
        """Centres ``Σ x / ||Σ x||`` (Basu 2005, eq. 4.13) and, with the closed-form
        normaliser, κ from the mean resultant length ``||Σ x|| / n``.

        A cluster whose resultant is zero (every unit vector is then optimal) keeps its
        previous centre, else takes the data's mean resultant or the first axis.
        """
        self.check_normalizer(normalizer)
        k = stats.n_clusters
        sums, counts = stats.sums, stats.counts
        norms = np.linalg.norm(sums, axis=1)
        ok = norms > 0
        centers = np.empty_like(sums)
        centers[ok] = sums[ok] / norms[ok, None]
        if not ok.all():
            if params is not None:
                centers[~ok] = params.centers[~ok]
            else:
                total = sums.sum(axis=0)
                nrm = np.linalg.norm(total)
                centers[~ok] = total / nrm if nrm > 0 else np.eye(1, sums.shape[1])
        if normalizer == "constant":
            return EmissionParams(centers)
        d = centers.shape[1]
        prev = self._kappa(params) if params is not None else np.full(k, float(self.kappa))
        with np.errstate(invalid="ignore", divide="ignore"):
            rbar = np.where(counts > 0, norms / np.where(counts > 0, counts, 1.0), 0.0)
        kappa = np.where(counts > 0, self.estimate_kappa(rbar, d), prev)
        return EmissionParams(centers, kappa)
