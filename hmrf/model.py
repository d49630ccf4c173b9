"""The Hidden Markov Random Field: observed points, hidden labels, emissions, potentials.

:class:`HMRF` ties the layers below it together (Basu 2005, §4.3): the observed
points ``X``, one hidden label per point, an emission family ``p(x | y, Θ)`` and
pairwise potentials over the labels. It evaluates the objective

    J(y, Θ) = Σ_i D_Θ(x_i, y_i) + Σ_e cost_e(y) [+ normaliser terms]     (eq. 4.9/4.10)

and hands the E-step to engines as unary costs plus a
:class:`~hmrf.graph.PairwiseGraph`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._blocks import block_rows, row_blocks
from ._validation import check_data, check_dense, check_n_clusters
from .backend import RowBackend
from .constraints import Constraints, check_constraints
from .emissions import EmissionFamily, get_emission
from .emissions.base import MStepContext
from .emissions.stats import Spread
from .graph import POTTS_CL, POTTS_ML, TABLE, PairwiseGraph
from .potentials import PairwisePotential, PottsConstraints

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Literal

    import networkx as nx
    from numpy.typing import ArrayLike, NDArray
    from pgmpy.models import DiscreteMarkovNetwork, FactorGraph

    from ._typing import MatrixLike
    from .emissions.base import EmissionParams
    from .emissions.stats import ClusterStats

__all__ = ["HMRF", "block_unary", "clamp_rows", "AUTO_W_FACTOR"]

#: ``w="auto"``: a violated constraint costs this many times the data's scale
#: (:meth:`HMRF.data_scale`), i.e. the expected divergence between two random points
#: for squared Euclidean distance (docs/choosing.md has the measurements behind it).
AUTO_W_FACTOR = 2.0


def block_unary(family: EmissionFamily, X_block: MatrixLike, params: EmissionParams,
                normalizer: str = "constant", data: Any = None,
                clamped: NDArray[np.intp] | None = None) -> NDArray[np.floating]:
    """Unary costs of a block of rows (b, k) in the block's precision; ``clamped`` (b,)
    fixes the label of rows with a value >= 0 (the others get infinite cost:
    CONSTRAINED-KMEANS, Basu 2005, Fig. 3.2). Mixing weights, when ``params`` has them,
    add ``-log π_h``."""
    cost = family.unary(X_block, params, normalizer, data=data)
    if params.weights is not None:
        with np.errstate(divide="ignore"):
            cost -= np.log(params.weights).astype(cost.dtype)[None, :]
    if clamped is not None:
        clamp_rows(cost, clamped)
    return cost


def clamp_rows(cost: NDArray[Any], clamped: NDArray[np.intp] | None) -> NDArray[np.floating]:
    """Fix, in place, the label of the rows of ``cost`` (b, k) whose ``clamped`` (b,) value
    is >= 0, as :func:`block_unary` says. Returns ``cost``."""
    fixed = np.flatnonzero(clamped >= 0)
    if fixed.size:
        row = cost[fixed, clamped[fixed]].copy()
        cost[fixed] = np.inf
        cost[fixed, clamped[fixed]] = row
    return cost


def _is_auto(w) -> bool:
    return isinstance(w, str) and w == "auto"


def _check_w(w) -> float:
    """``w`` as a float >= 0 (``np.inf``: hard), or a ``ValueError`` naming it."""
    try:
        value = float(w)
    except (TypeError, ValueError):
        value = np.nan
    if isinstance(w, (str, bool)) or np.isnan(value) or value < 0:
        raise ValueError(f"w must be a number >= 0 (np.inf = hard) or 'auto'; got {w!r}.")
    return value


#: What each step of :meth:`HMRF.data_scale` computes, for its error message.
_SCALE_STEPS = {
    "update": "the M-step of one cluster of all the points",
    "linear_costs": "the GEMM form of the costs at that cluster's parameters",
    "unary": "the unary cost at the data mean or at the cluster's centre",
    "summed_cost": "the summed cost of the points from their statistics",
    "divergence_to": "the divergence of the rows to their mean, the Bregman information",
}


def _scale_error(family: EmissionFamily, scale: float, pieces: dict) -> str:
    """The message of a non-finite :meth:`HMRF.data_scale`: the family, the first of its
    methods (in ``pieces``, in the order computed) whose result is not finite, and the way
    out."""
    def finite(value):
        arrays = [getattr(value, f) for f in ("centers", "scale", "weights", "bias", "offset")
                  if getattr(value, f, None) is not None] or [value]
        return all(np.all(np.isfinite(np.asarray(a, dtype=np.float64))) for a in arrays)

    method = next((m for m, v in pieces.items() if not finite(v)), None)
    where = (f"{type(family).__name__}.{method} ({_SCALE_STEPS[method]}) gave a non-finite value"
             if method else "its finite pieces add up to a non-finite value")
    return (f"HMRF.data_scale(), the scale of w='auto', is {scale} for the emission family "
            f"{type(family).__name__} ({family.name!r}): {where}. A gradient or log that is "
            "infinite on the boundary of the family's domain does this, e.g. a feature that is "
            "0 in every row puts the data's mean on that boundary. Make that method finite on "
            "these data (keep the points it evaluates inside the domain, as the M-step does "
            "with its centres), drop the constant features, or give w a number.")


class HMRF:
    """A Hidden Markov Random Field for semi-supervised clustering.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d), or RowBackend
        Observed points, or a :class:`~hmrf.backend.RowBackend` of rows kept elsewhere
        (the model is then that backend's ``model_class()``, e.g.
        :class:`hmrf.distributed.DaskHMRF` for the chunks of a Dask array).
    n_clusters : int
    emission : str or EmissionFamily, default="sqeuclidean"
        A name of :mod:`hmrf.emissions` (``"auto"``: chosen from ``X`` as the estimators
        do, :func:`hmrf.emissions.data_emission`) or a family object.
    constraints : Constraints, optional
        Pairwise supervision: a :class:`~hmrf.potentials.PottsConstraints` potential
        with global weight ``w``.
    w : float or "auto", default=1.0
        Global constraint weight. ``"auto"``: ``AUTO_W_FACTOR`` (2) times
        :meth:`data_scale` (Notes).
    potentials : PairwisePotential or list of them, optional
        Further pairwise potentials, with their own costs (``w`` does not scale them).
    normalizer : {"constant", "closed_form"}, default="constant"
        Which emission normaliser terms the objective keeps. The MRF normaliser
        ``log Z`` is treated as constant, exact for potentials that do not depend on Θ.
    clamped : array-like of shape (n,), optional
        Labels fixed for some points (``-1`` = free): :func:`block_unary`.
    validated : bool, default=False
        Whether ``X`` is the output of :func:`hmrf._validation.check_data` and
        ``constraints`` a :class:`~hmrf.Constraints` on its rows (an estimator checks
        both at its entrance).

    Attributes
    ----------
    X : ndarray or csr_matrix
        The prepared data (domain-checked, normalised by the family).
    w_spec : float or str
        The ``w`` given.

    Notes
    -----
    ``w="auto"`` makes a violated constraint cost about what it costs to move a point
    across the data: ``w = 2 s`` with ``s`` the mean cost of a point above that of the
    centre when all the points form one cluster (:meth:`data_scale`). For a Bregman
    divergence ``s`` is the Bregman information ``mean_i φ(x_i) - φ(x̄)`` (Banerjee et
    al. 2005, §3.1); for squared Euclidean distance ``2 s = E ||x_i - x_j||²``.
    """


    def __new__(cls, X: Any = None, *args: Any, **kwargs: Any) -> HMRF:
        """An :class:`HMRF` on a row backend whose rows live elsewhere is the model of that
        backend (:meth:`hmrf.backend.RowBackend.model_class`: the Dask model for chunks on
        workers), so an estimator's ``_model`` builds the model where the rows are."""
        where = X.model_class() if cls is HMRF and isinstance(X, RowBackend) else None
        return super().__new__(cls if where is None else where)

    def __init__(self, X: MatrixLike, n_clusters: int, emission: str | EmissionFamily = "sqeuclidean",
                 constraints: Constraints | None = None, w: float = 1.0,
                 potentials: PairwisePotential | Sequence[PairwisePotential] | None = None,
                 normalizer: Literal["constant", "closed_form"] = "constant",
                 clamped: ArrayLike | None = None, *, validated: bool = False) -> None:
        self.emission: EmissionFamily = get_emission(emission, None if isinstance(X, RowBackend) else X)
        if isinstance(X, RowBackend):  # rows kept elsewhere, checked and prepared where they are
            self.X = X.prepare(self.emission)
        else:
            if not validated:
                X = check_data(X, accept_sparse=self.emission.accepts_sparse, keep_float32=True)
            elif not self.emission.accepts_sparse:
                check_dense(X)
            self.X = self.emission.prepare(X)
        self.n_samples = int(self.X.shape[0])
        self.n_clusters = check_n_clusters(n_clusters, self.n_samples)
        self.emission.check_normalizer(normalizer)
        self.normalizer = normalizer
        pots = []
        if constraints is not None:
            if not validated:
                check_constraints(constraints, self.n_samples)
            pots.append(PottsConstraints(constraints, 0.0 if _is_auto(w) else _check_w(w)))
        if potentials is not None:
            extra = [potentials] if isinstance(potentials, PairwisePotential) else list(potentials)
            for p in extra:
                if not isinstance(p, PairwisePotential):
                    raise TypeError(f"potentials must be PairwisePotential objects; got {type(p).__name__}.")
                if p.n_nodes != self.n_samples:
                    raise ValueError(f"a potential refers to {p.n_nodes} points but X has {self.n_samples}.")
            pots.extend(extra)
        self.potentials = pots
        self.constraints = constraints if constraints is not None else Constraints.empty(self.n_samples)
        self._potts = pots[0] if constraints is not None else None
        self.clamped = None
        if clamped is not None:
            c = np.asarray(clamped, dtype=np.int64)
            if c.shape != (self.n_samples,):
                raise ValueError(f"clamped must have shape ({self.n_samples},); got {c.shape}.")
            if np.any(c >= self.n_clusters) or np.any(c < -1):
                raise ValueError(f"clamped labels must be -1 (free) or in [0, {self.n_clusters - 1}].")
            self.clamped = c
        self._static_graph = None
        self._joined = None  # (graph, its parts): the last union of several potentials' graphs
        self._data_terms = None
        self._shift = None
        self.w_spec = w
        self._w = None if _is_auto(w) else _check_w(w)  # "auto": resolved on first use

    # ------------------------------------------------------------ constraint weight
    @property
    def w(self) -> float:
        """The global constraint weight in use (``"auto"`` resolved by :meth:`auto_w` the
        first time it is needed: the first E-step, or reading this)."""
        if self._w is None:
            self.set_w(self.auto_w())
        return self._w

    def set_w(self, w: float) -> None:
        """Use the global constraint weight ``w`` (a number >= 0; ``np.inf``: hard)."""
        w = _check_w(w)
        self._w = w
        if self._potts is not None and self._potts.w != w:
            new = PottsConstraints(self._potts.constraints, w)
            self.potentials[self.potentials.index(self._potts)] = new
            self._potts = new
            self._static_graph = None

    def auto_w(self) -> float:
        """The weight ``w="auto"`` stands for: ``AUTO_W_FACTOR * data_scale()`` (class
        Notes), a positive number (1 when the data have no spread at all)."""
        scale = self.data_scale()
        return AUTO_W_FACTOR * scale if scale > 0 else 1.0

    def data_scale(self) -> float:
        """The mean emission cost of a point, above that of the cluster's centre, when all
        the points form one cluster: ``mean_i u(x_i, θ̄) - u(μ̄, θ̄)`` with ``θ̄`` the
        family's M-step for one cluster of all the points (the normaliser as the model
        keeps it) and ``μ̄`` its centre. For a Bregman family with the constant
        normaliser, ``mean_i D(x_i, x̄)``.

        Computed once per model, in one pass over the rows. Where the costs are
        :class:`~hmrf.emissions.LinearCosts`, ``u(x) = s (a(x) + <x, g>) + const``, their
        mean is their value at the mean plus ``s`` times the Jensen gap of ``a``, for
        ``a = φ`` the Bregman information ``E φ(X) - φ(E X)`` (Banerjee et al. 2005, JMLR 6,
        §3.1), summed without cancellation by :class:`~hmrf.emissions.stats.Spread`; other
        families give the sum from the statistics
        (:meth:`~hmrf.emissions.EmissionFamily.summed_cost`) or a second pass.

        Raises
        ------
        ValueError
            The scale is not finite: the message names the family method that gave the
            first non-finite value.
        """
        cached = getattr(self, "_data_scale", None)
        if cached is not None:
            return cached
        stats, spread = self.one_cluster_moments()
        theta = self.emission.update(stats, None, self.normalizer, MStepContext(n_clusters=self.n_clusters))
        costs = self.emission.linear_costs(theta, self.normalizer, np.float64)
        centre = np.asarray(theta.centers[:1], dtype=np.float64)
        if costs is None:  # costs not affine in (a(x), x): their sum from the statistics, or a pass
            at_centre = float(block_unary(self.emission, centre, theta, self.normalizer)[0, 0])
            total = self.emission.summed_cost(theta, stats, self.normalizer)
            summed = "summed_cost" if total is not None else "unary"
            if total is None:
                total = self.unary_total(self._one_cluster(), theta)
            scale = total / self.n_samples - at_centre
            pieces = {"update": theta, "unary": at_centre, summed: total}
        else:
            mean = stats.sums[:1] / stats.counts[0]  # μ̄ itself for the plain mean: the first term is 0
            u = block_unary(self.emission, np.vstack([mean, centre]), theta, self.normalizer)[:, 0]
            slope = 1.0 if costs.scale is None else float(costs.scale[0])
            scale = float(u[0] - u[1]) + slope * spread.information / spread.count
            pieces = {"update": theta, "linear_costs": costs, "unary": u, "divergence_to": spread.information}
        if not np.isfinite(scale):
            raise ValueError(_scale_error(self.emission, scale, pieces))
        self._data_scale = float(scale)
        return self._data_scale

    def one_cluster_moments(self) -> tuple[ClusterStats, Spread]:
        """The M-step statistics of every point in cluster 0 (of ``n_clusters``) and the
        :class:`~hmrf.emissions.stats.Spread` of the rows, in one pass over blocks of
        rows (:meth:`data_scale`)."""
        fam, k, shift = self.emission, self.n_clusters, self.statistics_shift
        stats = spread = None
        for rows in row_blocks(self.n_samples, self.X.shape[1]):  # a loop over blocks of rows
            Z = self.X[rows]
            st = fam.statistics(Z, np.zeros(Z.shape[0], dtype=np.int64), k, self.normalizer, shift)
            part = Spread.of(fam, Z)
            stats = st if stats is None else stats + st
            spread = part if spread is None else spread + part
        return stats, spread

    def _one_cluster(self):
        """Every point in cluster 0, as labels of this model's points."""
        return np.zeros(self.n_samples, dtype=np.int64)

    def unary_total(self, labels: NDArray[np.intp], params: EmissionParams) -> float:
        """``Σ_i u(x_i, labels_i)`` under ``params``, ignoring clamped labels (float64, in
        blocks of rows)."""
        data = self.data_terms
        total = 0.0
        for rows in row_blocks(self.n_samples, max(self.n_clusters, self.X.shape[1])):
            U = block_unary(self.emission, self.X[rows], params, self.normalizer,
                            None if data is None else data[rows])
            lab = labels[rows]
            total += float(U[np.arange(lab.shape[0]), lab].sum(dtype=np.float64))
        return total

    @property
    def incremental_statistics(self) -> bool:
        """Whether EM may update the statistics from the points that moved: not for a
        family with linear costs and the default statistics, whose pass adds every row into
        its cluster's sums while the row is in cache (:mod:`hmrf.em.passes`)."""
        fam = type(self.emission)
        return (fam.linear_costs is EmissionFamily.linear_costs
                or fam.statistics is not EmissionFamily.statistics)

    def without_potentials(self) -> HMRF:
        """The same model with no pairwise potentials (a shallow copy sharing ``X`` and its
        data terms): the unconstrained clustering of the same data and emission."""
        import copy

        free = copy.copy(self)
        free.potentials, free._potts, free._static_graph = [], None, None
        free.constraints = Constraints.empty(self.n_samples)
        return free

    # --------------------------------------------------------------- E-step view
    @property
    def depends_on_params(self) -> bool:
        """Whether some potential must be rebuilt after each M-step."""
        return any(p.depends_on_params for p in self.potentials)

    @property
    def data_terms(self) -> NDArray[np.floating] | None:
        """The family's per-row data terms (e.g. ``φ(x_i)``), computed once, or ``None``."""
        if self._data_terms is None:
            terms = self.emission.data_terms(self.X)
            self._data_terms = False if terms is None else terms
        return None if self._data_terms is False else self._data_terms

    @property
    def statistics_shift(self) -> NDArray[np.float64] | None:
        """Centre of the M-step statistics' second moments (the data's mean for dense
        data; ``None``, i.e. 0, for sparse data or families without second moments)."""
        if self.emission.second_moment(self.normalizer) is None:
            return None
        if self._shift is None:
            shift = self.emission.default_shift(self.X)
            self._shift = False if shift is None else shift
        return None if self._shift is False else self._shift

    def unary(self, params: EmissionParams, rows: slice | None = None) -> np.ndarray:
        """Unary costs ``-log p(x_i | y_i = h, Θ)`` under the normaliser choice, (n, k),
        or for the rows of the slice ``rows`` only (the EM loop's blocks)."""
        rows = slice(None) if rows is None else rows
        data = self.data_terms
        return block_unary(self.emission, self.X[rows], params, self.normalizer,
                           None if data is None else data[rows],
                           None if self.clamped is None else self.clamped[rows])

    def graph(self, params: EmissionParams | None = None) -> PairwiseGraph:
        """Pairwise factors of the E-step as a :class:`~hmrf.graph.PairwiseGraph`."""
        if self._w is None and self._potts is not None and len(self._potts.constraints):
            # w="auto" costs a pass over X (the data's scale): only pairs need it
            self.set_w(self.auto_w())
        if not self.potentials:
            if self._static_graph is None:
                self._static_graph = PairwiseGraph.empty(self.n_samples)
            return self._static_graph
        if not self.depends_on_params and self._static_graph is not None:
            return self._static_graph
        graphs = [p.graph(self.X, params, self.n_clusters) for p in self.potentials]
        if len(graphs) == 1:
            g = graphs[0]
        elif self._joined is not None and all(a.edges is b.edges for a, b in zip(graphs, self._joined[1])):
            # the same factors re-weighted: keep the joined graph's structure and caches
            g = self._joined[0].with_weights(np.concatenate([p.weight for p in graphs]))
        else:
            g = PairwiseGraph.concatenate(graphs)
        if len(graphs) > 1:
            self._joined = (g, graphs)
        g.check_labels(self.n_clusters)
        if not self.depends_on_params:
            self._static_graph = g
        return g

    def statistics(self, assignment: NDArray[np.intp], rows: NDArray[np.intp] | None = None) -> ClusterStats:
        """The emission family's M-step statistics (:mod:`hmrf.emissions.stats`) of
        ``assignment`` (labels or responsibilities) for all points, or for the points
        ``rows`` (then ``assignment`` has one entry per row), in blocks of rows."""
        assignment = np.asarray(assignment)
        size = self.n_samples if rows is None else len(rows)
        fam, k, shift = self.emission, self.n_clusters, self.statistics_shift
        step = block_rows(size, self.X.shape[1])
        total = None
        for s0 in range(0, max(size, 1), step):  # a loop over blocks of rows
            part = slice(s0, s0 + step) if rows is None else np.asarray(rows[s0:s0 + step], dtype=np.int64)
            st = fam.statistics(self.X[part], assignment[s0:s0 + step], k, self.normalizer, shift)
            total = st if total is None else total + st
        return total

    def context(self, labels: NDArray[np.intp]) -> MStepContext:
        """What the family's M-step may read besides the statistics (its ``m_step_needs``)."""
        pairwise = None
        if "pairwise" in self.emission.m_step_needs and self.potentials:
            def pairwise(params):
                return self.graph(params).pairwise_energy(labels)
        return MStepContext(X=self.X, labels=labels, potentials=tuple(self.potentials),
                            pairwise_energy=pairwise, n_clusters=self.n_clusters)

    def update(self, stats: ClusterStats, labels: NDArray[np.intp], params: EmissionParams) -> EmissionParams:
        """The M-step from accumulated statistics of ``labels`` (Basu 2005, §4.4.5)."""
        return self.emission.update(stats, params, self.normalizer, self.context(labels))

    def m_step(self, labels: NDArray[np.intp], params: EmissionParams) -> EmissionParams:
        """Re-estimate Θ for ``labels`` (the M-step of Basu 2005, §4.4.5) from the
        statistics of all points."""
        labels = np.asarray(labels)
        return self.update(self.statistics(labels), labels, params)

    # ---------------------------------------------------------------- objective
    def _check_labels(self, labels) -> np.ndarray:
        y = np.asarray(labels)
        if y.shape != (self.n_samples,):
            raise ValueError(f"labels must have shape ({self.n_samples},); got {y.shape}.")
        if y.dtype.kind not in "iu" or (y.size and (y.min() < 0 or y.max() >= self.n_clusters)):
            raise ValueError(f"labels must be integers in [0, {self.n_clusters - 1}].")
        return y

    def energy(self, labels: NDArray[np.intp], params: EmissionParams) -> float:
        """The objective ``J(y, Θ)``: Basu (2005) eq. 4.10 plus kept normaliser terms."""
        y = self._check_labels(labels)
        return self.graph(params).energy(y, self.unary(params))

    def energy_terms(self, labels: NDArray[np.intp], params: EmissionParams) -> dict:
        """The objective term by term: ``distortion`` (Σ D(x_i, μ_{y_i})), ``normalizer``
        (the rest of the unary cost), ``must_link``, ``cannot_link``, ``table`` (factor
        costs by kind) and ``total``."""
        y = self._check_labels(labels)
        rows = np.arange(self.n_samples)
        unary = self.unary(params)[rows, y]
        distortion = self.emission.distortion(self.X, params, data=self.data_terms)[rows, y]
        g = self.graph(params)
        costs, cls = g.edge_costs(y), g.edge_classes()
        return {"distortion": float(distortion.sum()), "normalizer": float((unary - distortion).sum()),
                "must_link": float(costs[cls.must].sum()), "cannot_link": float(costs[cls.cannot].sum()),
                "table": float(costs[cls.table].sum()), "total": float(unary.sum() + costs.sum())}

    # -------------------------------------------------------------------- views
    def to_networkx(self, include_observed: bool = True) -> nx.Graph:
        """The HMRF as the factor graph of Basu (2005), Fig. A.1.

        Variable nodes ``("y", i)`` (hidden labels), unary factor nodes ``("D", i)``
        (distance potentials), one factor node per pairwise factor ``("M", e)``
        (must-link), ``("C", e)`` (cannot-link) or ``("T", e)`` (table), and, if
        ``include_observed``, observed nodes ``("x", i)`` attached to ``D_i``.
        Node attribute ``role`` is one of ``"hidden"``, ``"observed"``, ``"unary"``,
        ``"must_link"``, ``"cannot_link"``, ``"table"``; ``bipartite`` is 0 for
        variables, 1 for factors.
        """
        import networkx as nx

        g = nx.Graph()
        n = self.n_samples
        g.add_nodes_from((("y", i) for i in range(n)), role="hidden", bipartite=0)
        g.add_nodes_from((("D", i) for i in range(n)), role="unary", bipartite=1)
        g.add_edges_from((("D", i), ("y", i)) for i in range(n))
        if include_observed:
            g.add_nodes_from((("x", i) for i in range(n)), role="observed", bipartite=0)
            g.add_edges_from((("x", i), ("D", i)) for i in range(n))
        src = self.constraints if self.depends_on_params else self.graph(None)
        pairs = src.pairs if self.depends_on_params else src.edges
        kinds, weights = src.kind, src.weight
        names = {POTTS_ML: ("M", "must_link"), POTTS_CL: ("C", "cannot_link"), TABLE: ("T", "table")}
        for e, ((a, b), kd, wt) in enumerate(zip(pairs.tolist(), kinds.tolist(), weights.tolist())):
            tag, role = names[kd]
            g.add_node((tag, e), role=role, bipartite=1, weight=wt)
            g.add_edge((tag, e), ("y", a))
            g.add_edge((tag, e), ("y", b))
        return g

    def to_pgmpy(self, params: EmissionParams,
                 factor_graph: bool = False) -> DiscreteMarkovNetwork | FactorGraph:
        """The E-step problem under ``params`` as a pgmpy model with factors ``exp(-cost)``
        (:func:`hmrf.interop.to_pgmpy`)."""
        from .interop import to_pgmpy

        return to_pgmpy(self.unary(params), self.graph(params), factor_graph=factor_graph)

    def __repr__(self) -> str:
        return (
            f"HMRF(n={self.n_samples}, d={self.X.shape[1]}, k={self.n_clusters}, "
            f"emission={self.emission!r}, constraints={self.constraints!r}, "
            f"normalizer={self.normalizer!r})"
        )
