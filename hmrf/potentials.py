"""Pairwise constraint potentials: the MRF prior over labels (ARCHITECTURE.md, layer 3).

A potential turns supervision into the factors of the E-step problem, a
:class:`~hmrf.graph.PairwiseGraph`. One whose costs depend on the emission parameters
sets ``depends_on_params = True``: the model asks for its graph after every M-step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .constraints import CANNOT_LINK, MUST_LINK, Constraints
from .emissions.base import MetricTerms
from .emissions.mahalanobis import MahalanobisParams, pair_sq_distances
from .graph import PairwiseGraph

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from ._typing import MatrixLike
    from .emissions.base import EmissionParams

__all__ = ["PairwisePotential", "PottsConstraints", "DistanceScaledPotts", "TablePotential"]


class PairwisePotential:
    """Base class: something that produces pairwise factors on ``n`` label variables, a
    :class:`~hmrf.graph.PairwiseGraph` (``graph``)."""

    depends_on_params = False

    def graph(self, X: MatrixLike | None = None, params: EmissionParams | None = None,
              n_clusters: int | None = None) -> PairwiseGraph:  # pragma: no cover
        """The factors as a :class:`~hmrf.graph.PairwiseGraph`."""
        raise NotImplementedError

    @property
    def n_nodes(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


class PottsConstraints(PairwisePotential):
    """Generalised Potts potential of must-link / cannot-link constraints.

    ``v(i, j) = w · w_ij · [y_i != y_j]`` for a must-link and ``w · w_ij · [y_i == y_j]``
    for a cannot-link (Basu 2005, eq. 4.4; Kleinberg & Tardos 2002), where ``w_ij`` is
    the constraint's own weight and ``w`` a global multiplier (the ``w`` of PCKMeans,
    Basu, Bilenko & Mooney 2004, eq. 1).

    ``w = np.inf`` makes every constraint hard.

    Examples
    --------
    >>> from hmrf import Constraints
    >>> from hmrf.potentials import PottsConstraints
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(1, 2)], n=3)
    >>> g = PottsConstraints(c, w=2.0).graph()
    >>> g.pairwise_energy([0, 1, 1])   # both violated: 2 + 2
    4.0
    """

    def __init__(self, constraints: Constraints, w: float = 1.0) -> None:
        if not isinstance(constraints, Constraints):
            raise TypeError(f"constraints must be an hmrf.Constraints; got {type(constraints).__name__}.")
        w = float(w)
        if np.isnan(w) or w < 0:
            raise ValueError(f"w must be >= 0 (np.inf = hard); got {w}.")
        self.constraints = constraints
        self.w = w
        self._graph = None

    @property
    def n_nodes(self) -> int:
        return self.constraints.n

    def edge_scale(self, X: MatrixLike | None = None,
                   params: EmissionParams | None = None) -> np.ndarray | float:
        """Per-edge multiplier ``f_ij`` (1 for plain Potts; MPCKMeans overrides)."""
        return 1.0

    def graph(self, X: MatrixLike | None = None, params: EmissionParams | None = None,
              n_clusters: int | None = None) -> PairwiseGraph:
        if self.depends_on_params:
            scale = self.w * np.asarray(self.edge_scale(X, params))
            return PairwiseGraph.from_constraints(self.constraints, scale)
        if self._graph is None:
            self._graph = PairwiseGraph.from_constraints(self.constraints, self.w)
        return self._graph

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.constraints!r}, w={self.w!r})"


class DistanceScaledPotts(PottsConstraints, MetricTerms):
    """Potts constraints whose penalties scale with the learned distance (MPCKMeans).

    A violated must-link costs ``w · w_ij · f_M(i, j)`` and a violated cannot-link
    ``w · w_ij · f_C(i, j)`` with (Basu, Bilenko & Mooney 2004, eq. 4)

        f_M = max(α_min, α_max - ||x_i - x_j||²_A),   f_C = min(α_min + ||x_i - x_j||²_A, α_max)

    ``A`` is the emission's current metric (its mean over clusters for per-cluster
    metrics, which keeps the factor a Potts factor; ``A = I`` without a metric).
    ``mirrored`` exchanges the two forms (Bilenko, Basu & Mooney, ICML 2004).

    Parameters
    ----------
    alpha_min : float, default=0.0
        ``α_min >= 0`` (the paper's experiments use 0).
    alpha_max : {"must_link", "data"} or float, default="must_link"
        ``"must_link"``: the largest squared must-link distance under the current
        metric (§4.1), else ``"data"``: the squared diameter of ``X`` under it (exact,
        O(n² d) in blocks, computed only where the cap can bind).

    Notes
    -----
    The MRF normaliser ``log Z(A)`` is dropped, as in the paper, so the objective is
    eq. 4 exactly; :meth:`metric_terms` differentiates ``f`` for fixed ``α_max``
    (the paper's appendix).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.potentials import DistanceScaledPotts
    >>> X = np.array([[0.0], [1.0], [3.0], [3.5]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1), (2, 3)], cannot_link=[(1, 2)], n=4)
    >>> DistanceScaledPotts(c).edge_scale(X).tolist()  # α_max = 1; f_C = min(4, α_max)
    [0.0, 1.0, 0.75]
    """

    depends_on_params = True

    def __init__(self, constraints: Constraints, w: float = 1.0, alpha_min: float = 0.0,
                 alpha_max: float | str = "must_link", mirrored: bool = False) -> None:
        super().__init__(constraints, w)
        alpha_min = float(alpha_min)
        if not (np.isfinite(alpha_min) and alpha_min >= 0):
            raise ValueError(f"alpha_min must be a finite number >= 0; got {alpha_min}.")
        if isinstance(alpha_max, str):
            if alpha_max not in ("must_link", "data"):
                raise ValueError(
                    f"alpha_max must be 'must_link', 'data' or a number; got {alpha_max!r}.")
        elif not (np.isfinite(float(alpha_max)) and float(alpha_max) >= alpha_min):
            raise ValueError(f"alpha_max must be a finite number >= alpha_min; got {alpha_max!r}.")
        self.alpha_min = alpha_min
        self.alpha_max = alpha_max
        self.mirrored = bool(mirrored)
        self._diff = None
        self._diff_sq = None  # (differences, their squares)
        self._last = None  # (X, params) of the last graph
        self._diameters = (None, {})  # (X, {metric bytes: squared diameter})

    def _decreasing(self) -> np.ndarray:
        """(m,) mask of the edges whose penalty falls with distance (``max(α_min, α_max - d²)``)."""
        return (self.constraints.kind == CANNOT_LINK) if self.mirrored else \
            (self.constraints.kind == MUST_LINK)

    def _differences(self, X):
        """``x_i - x_j`` for every constraint (m, d), cached for the model's ``X``."""
        if self._diff is None or self._diff[0] is not X:
            p = self.constraints.pairs
            self._diff = (X, X[p[:, 0]] - X[p[:, 1]])
        return self._diff[1]

    @staticmethod
    def _metric(params):
        if isinstance(params, MahalanobisParams) and params.metric is not None:
            return params.mean_metric()
        return None

    def sq_distances(self, X: MatrixLike, params: EmissionParams | None = None) -> np.ndarray:
        """``||x_i - x_j||²_Ā`` for every constraint (m,). For a diagonal metric and dense
        data, one product with the squared differences (cached with the differences):
        the M-step and the graph ask for these distances under several metrics."""
        metric = self._metric(params)
        diff = self._differences(X)
        if metric is not None and np.ndim(metric) == 1 and not sp.issparse(diff):
            if self._diff_sq is None or self._diff_sq[0] is not diff:
                self._diff_sq = (diff, diff * diff)
            # einsum, not a BLAS product: a matrix-vector product gains nothing from BLAS
            # threads, which cost much on a busy machine
            return np.einsum("ij,j->i", self._diff_sq[1], np.asarray(metric, dtype=np.float64))
        return pair_sq_distances(diff, metric)

    def thresholds(self, X: MatrixLike, params: EmissionParams | None = None,
                   d2: Any = None) -> tuple[float, float]:
        """``(α_min, α_max)`` under the current metric."""
        if not isinstance(self.alpha_max, str):
            return self.alpha_min, float(self.alpha_max)
        d2 = self.sq_distances(X, params) if d2 is None else d2
        ml = self.constraints.kind == MUST_LINK
        if self.alpha_max == "must_link" and ml.any():
            return self.alpha_min, float(d2[ml].max())
        if not self._decreasing().any() and self.alpha_min == 0.0:
            return 0.0, np.inf  # the diameter cap cannot bind (see class docstring)
        return self.alpha_min, self._sq_diameter(X, self._metric(params))

    def _sq_diameter(self, X, metric) -> float:
        """Squared diameter of ``X`` under ``metric``, cached: the safeguard of the metric
        step and the graph rebuild ask for it under the same few metrics."""
        if self._diameters[0] is not X:
            self._diameters = (X, {})
        cache = self._diameters[1]
        key = b"" if metric is None else np.ascontiguousarray(metric, dtype=np.float64).tobytes()
        if key not in cache:
            if len(cache) >= DIAMETER_CACHE:
                cache.pop(next(iter(cache)))  # oldest first
            cache[key] = _sq_diameter(X, metric)
        return cache[key]

    def edge_scale(self, X: MatrixLike | None = None, params: EmissionParams | None = None) -> np.ndarray:
        """``f_ij`` per constraint: ``f_M`` for must-links, ``f_C`` for cannot-links."""
        if X is None:
            raise ValueError("DistanceScaledPotts needs the data X to scale its penalties.")
        if len(self.constraints) == 0:
            return np.empty(0)
        d2 = self.sq_distances(X, params)
        amin, amax = self.thresholds(X, params, d2)
        return np.where(self._decreasing(), np.maximum(amin, amax - d2), np.minimum(amin + d2, amax))

    def graph(self, X: MatrixLike | None = None, params: EmissionParams | None = None,
              n_clusters: int | None = None) -> PairwiseGraph:
        """Potts graph with edge weights ``w · w_ij · f_ij``; hard constraints stay hard
        (also where ``f_ij = 0``). The graph is built once and re-weighted, so the
        engines' layouts of its structure are built once per fit; the graph of the last
        (immutable) ``(X, params)`` is remembered."""
        last = self._last
        if self._graph is not None and last is not None and last[0] is X and last[1] is params:
            return self._graph
        f = np.asarray(self.edge_scale(X, params), dtype=np.float64)
        weight = self.constraints.weight
        hard = np.isinf(weight) | (np.isinf(self.w) & (weight > 0))
        scale = np.zeros_like(f)
        soft = ~hard & (weight > 0)
        scale[soft] = self.w * f[soft]
        scale[hard] = np.inf
        if self._graph is None:
            self._graph = PairwiseGraph.from_constraints(self.constraints, scale)
        else:
            with np.errstate(invalid="ignore"):  # as from_constraints: 0 * inf stays hard
                w = np.where(np.isinf(weight), np.inf, scale * weight)
            self._graph = self._graph.with_weights(w)
        self._last = (X, params)
        return self._graph

    def metric_terms(self, X: MatrixLike, params: EmissionParams,
                     labels: NDArray[np.intp]) -> tuple[Any, Any] | tuple[NDArray[Any], NDArray[Any]]:
        """``(diff, coef)``: rows ``x_i - x_j`` of the violated soft constraints whose
        penalty is strictly between the thresholds, and ``∂ penalty / ∂ d²_ij``:
        ``-w w_ij`` for must-links, ``+w w_ij`` for cannot-links (exchanged when
        ``mirrored``)."""
        c = self.constraints
        if len(c) == 0:
            return np.empty((0, X.shape[1])), np.empty(0)
        d2 = self.sq_distances(X, params)
        amin, amax = self.thresholds(X, params, d2)
        viol = c.violations(labels)
        dec = self._decreasing()
        weight = self.w * c.weight
        inside = np.where(dec, amax - d2 > amin, amin + d2 < amax)
        idx = np.flatnonzero(viol & np.isfinite(weight) & inside)
        coef = np.where(dec[idx], -weight[idx], weight[idx])
        return self._differences(X)[idx], coef


#: Metrics whose squared diameter :class:`DistanceScaledPotts` remembers (one M-step's
#: safeguard tries at most ``max_backtrack + 2`` metrics).
DIAMETER_CACHE = 8


def _sq_diameter(X, metric, block: int = 2048) -> float:
    """Largest squared distance between two rows of ``X`` under ``metric`` (exact, blocked)."""
    if metric is None:
        Z = X
    elif np.ndim(metric) == 1:
        s = np.sqrt(metric)
        Z = sp.csr_matrix(X.multiply(s[None, :])) if sp.issparse(X) else X * s
    else:
        Z = np.asarray(X @ np.linalg.cholesky(metric))
    sq = pair_sq_distances(Z, None)
    best = 0.0
    for s0 in range(0, Z.shape[0], block):  # one (block, d) x (d, n) product per block
        cross = Z[s0:s0 + block] @ Z.T
        cross = cross.toarray() if sp.issparse(cross) else cross
        best = max(best, float((sq[s0:s0 + block, None] + sq[None, :] - 2.0 * cross).max()))
    return best


class TablePotential(PairwisePotential):
    """Arbitrary pairwise cost tables: ``cost_e(a, b) = weight_e · T[t_e][a, b]``.

    The parameters are those of :meth:`PairwiseGraph.from_tables`.

    Examples
    --------
    A "soft must-link with a preferred label": agreeing on label 0 is free, agreeing
    on another label costs 0.5, disagreeing costs 2.

    >>> import numpy as np
    >>> from hmrf.potentials import TablePotential
    >>> T = np.full((3, 3), 2.0); np.fill_diagonal(T, 0.5); T[0, 0] = 0.0
    >>> TablePotential(4, [(0, 1), (2, 3)], T).graph().pairwise_energy([0, 0, 1, 2])
    2.0
    """

    def __init__(self, n: int, edges: NDArray[Any], tables: ArrayLike,
                 table_index: NDArray[Any] | None = None, weight: float | ArrayLike = 1.0) -> None:
        self._graph = PairwiseGraph.from_tables(n, edges, tables, table_index, weight)

    @property
    def n_nodes(self) -> int:
        return self._graph.n_nodes

    def graph(self, X: MatrixLike | None = None, params: EmissionParams | None = None,
              n_clusters: int | None = None) -> PairwiseGraph:
        if n_clusters is not None:
            self._graph.check_labels(n_clusters)
        return self._graph

    def __repr__(self) -> str:
        return f"TablePotential({self._graph!r})"
