"""The Hidden Markov Random Field: observed points, hidden labels, emissions, potentials.

:class:`HMRF` ties the layers below it together (Basu 2005, §4.3): the observed
points ``X``, one hidden label per point, an emission family ``p(x | y, Θ)`` and
pairwise potentials over the labels. It evaluates the objective

    J(y, Θ) = Σ_i D_Θ(x_i, y_i) + Σ_e cost_e(y) [+ normaliser terms]     (eq. 4.9/4.10)

and hands the E-step to engines as unary costs plus a
:class:`~hmrf.graph.PairwiseGraph`. It also shows itself as the factor graph of
thesis Fig. A.1 (:meth:`HMRF.to_networkx`).
"""

from __future__ import annotations

import inspect

import numpy as np

from ._validation import check_data, check_n_clusters
from .constraints import Constraints
from .emissions import EmissionFamily, get_emission
from .emissions.base import NORMALIZERS
from .graph import POTTS_CL, POTTS_ML, TABLE, PairwiseGraph
from .potentials import PairwisePotential, PottsConstraints

__all__ = ["HMRF"]


class HMRF:
    """A Hidden Markov Random Field for semi-supervised clustering.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
        Observed points.
    n_clusters : int
        Number of label values k.
    emission : str or EmissionFamily, default="sqeuclidean"
        Cluster-conditional distribution (see :mod:`hmrf.emissions`).
    constraints : Constraints, optional
        Pairwise supervision; becomes a :class:`~hmrf.potentials.PottsConstraints`
        potential with global weight ``w``.
    w : float, default=1.0
        Global constraint weight (only used with ``constraints``).
    potentials : PairwisePotential or list of them, optional
        Further pairwise potentials (e.g. a :class:`~hmrf.potentials.TablePotential`).
    normalizer : {"constant", "closed_form"}, default="constant"
        Which emission normaliser terms the objective keeps (see DESIGN.md,
        "Normalisers"). The MRF normaliser ``log Z`` is always treated as constant,
        which is exact for potentials that do not depend on Θ.
    clamped : array-like of shape (n,), optional
        Labels fixed for some points (``-1`` = free); other labels get infinite unary
        cost (CONSTRAINED-KMEANS, Basu 2005, Fig. 3.2).

    Attributes
    ----------
    X : ndarray or csr_matrix
        The prepared data (domain-checked, normalised by the family; never the
        caller's array modified in place).
    emission : EmissionFamily
    potentials : list of PairwisePotential
    """

    def __init__(self, X, n_clusters, emission="sqeuclidean", constraints=None, w=1.0,
                 potentials=None, normalizer="constant", clamped=None):
        self.emission: EmissionFamily = get_emission(emission)
        X = check_data(X, accept_sparse=self.emission.accepts_sparse)
        self.X = self.emission.prepare(X)
        self.n_samples = int(self.X.shape[0])
        self.n_clusters = check_n_clusters(n_clusters, self.n_samples)
        if normalizer not in NORMALIZERS:
            raise ValueError(f"normalizer must be one of {NORMALIZERS}; got {normalizer!r}.")
        self.emission.check_normalizer(normalizer)
        self.normalizer = normalizer
        pots = []
        if constraints is not None:
            if not isinstance(constraints, Constraints):
                raise TypeError(f"constraints must be an hmrf.Constraints; got {type(constraints).__name__}.")
            if constraints.n != self.n_samples:
                raise ValueError(
                    f"constraints refer to {constraints.n} points but X has {self.n_samples} samples."
                )
            pots.append(PottsConstraints(constraints, w))
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
        self.clamped = None
        if clamped is not None:
            c = np.asarray(clamped, dtype=np.int64)
            if c.shape != (self.n_samples,):
                raise ValueError(f"clamped must have shape ({self.n_samples},); got {c.shape}.")
            if np.any(c >= self.n_clusters) or np.any(c < -1):
                raise ValueError(f"clamped labels must be -1 (free) or in [0, {self.n_clusters - 1}].")
            self.clamped = c
        self._static_graph = None
        # data-only quantities a family may cache (e.g. φ(x_i)); X never changes here
        self._data_cache = {}
        self._pass_cache = "cache" in inspect.signature(self.emission.unary).parameters
        self._pass_cache_m = "cache" in inspect.signature(self.emission.m_step).parameters

    # --------------------------------------------------------------- E-step view
    @property
    def depends_on_params(self) -> bool:
        """Whether some potential must be rebuilt after each M-step."""
        return any(p.depends_on_params for p in self.potentials)

    def unary(self, params) -> np.ndarray:
        """Unary costs (n, k): ``-log p(x_i | y_i = h, Θ)`` under the normaliser choice."""
        if self._pass_cache:
            cost = self.emission.unary(self.X, params, self.normalizer, cache=self._data_cache)
        else:
            cost = self.emission.unary(self.X, params, self.normalizer)
        if self.clamped is not None:
            fixed = np.flatnonzero(self.clamped >= 0)
            row = cost[fixed, self.clamped[fixed]].copy()
            cost[fixed] = np.inf
            cost[fixed, self.clamped[fixed]] = row
        return cost

    def graph(self, params=None) -> PairwiseGraph:
        """Pairwise factors of the E-step as a :class:`~hmrf.graph.PairwiseGraph`."""
        if not self.potentials:
            if self._static_graph is None:
                self._static_graph = PairwiseGraph.empty(self.n_samples)
            return self._static_graph
        if not self.depends_on_params and self._static_graph is not None:
            return self._static_graph
        graphs = [p.graph(self.X, params, self.n_clusters) for p in self.potentials]
        g = graphs[0] if len(graphs) == 1 else PairwiseGraph.concatenate(graphs)
        g.check_labels(self.n_clusters)
        if not self.depends_on_params:
            self._static_graph = g
        return g

    def m_step(self, labels, params):
        """Re-estimate Θ for ``labels`` (the M-step of Basu 2005, §4.4.5).

        Delegates to ``emission.m_step``. A family whose update also needs the pairwise
        factors (MPCKMeans' metric update uses the violated constraints) defines
        ``m_step_model(model, labels, params)`` and receives this model instead.
        """
        hook = getattr(self.emission, "m_step_model", None)
        if hook is not None:
            return hook(self, labels, params)
        if self._pass_cache_m:
            return self.emission.m_step(self.X, labels, params, self.normalizer, cache=self._data_cache)
        return self.emission.m_step(self.X, labels, params, self.normalizer)

    # ---------------------------------------------------------------- objective
    def _check_labels(self, labels) -> np.ndarray:
        y = np.asarray(labels)
        if y.shape != (self.n_samples,):
            raise ValueError(f"labels must have shape ({self.n_samples},); got {y.shape}.")
        if y.dtype.kind not in "iu" or (y.size and (y.min() < 0 or y.max() >= self.n_clusters)):
            raise ValueError(f"labels must be integers in [0, {self.n_clusters - 1}].")
        return y

    def energy(self, labels, params) -> float:
        """The objective ``J(y, Θ)``: Basu (2005) eq. 4.10 plus kept normaliser terms."""
        y = self._check_labels(labels)
        return self.graph(params).energy(y, self.unary(params))

    def energy_terms(self, labels, params) -> dict:
        """The objective term by term (for teaching and debugging).

        Returns
        -------
        dict
            ``distortion`` (Σ D(x_i, μ_{y_i})), ``normalizer`` (the rest of the unary
            cost: log Z_Θ and prior terms), ``must_link``, ``cannot_link``, ``table``
            (violated factor costs by kind) and ``total``.
        """
        y = self._check_labels(labels)
        rows = np.arange(self.n_samples)
        unary = self.unary(params)[rows, y]
        distortion = self.emission.distortion(self.X, params)[rows, y]
        g = self.graph(params)
        costs = g.edge_costs(y)
        terms = {
            "distortion": float(distortion.sum()),
            "normalizer": float((unary - distortion).sum()),
            "must_link": float(costs[g.kind == POTTS_ML].sum()),
            "cannot_link": float(costs[g.kind == POTTS_CL].sum()),
            "table": float(costs[g.kind == TABLE].sum()),
        }
        terms["total"] = float(unary.sum() + costs.sum())
        return terms

    # -------------------------------------------------------------------- views
    def to_networkx(self, include_observed: bool = True):
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
        pg = self.graph(None) if not self.depends_on_params else None
        if pg is None:
            pairs = self.constraints.pairs
            kinds = self.constraints.kind
            weights = self.constraints.weight
        else:
            pairs, kinds, weights = pg.edges, pg.kind, pg.weight
        names = {POTTS_ML: ("M", "must_link"), POTTS_CL: ("C", "cannot_link"), TABLE: ("T", "table")}
        for e, ((a, b), kd, wt) in enumerate(zip(pairs.tolist(), kinds.tolist(), weights.tolist())):
            tag, role = names[kd]
            g.add_node((tag, e), role=role, bipartite=1, weight=wt)
            g.add_edge((tag, e), ("y", a))
            g.add_edge((tag, e), ("y", b))
        return g

    def to_pgmpy(self, params, factor_graph: bool = False):
        """The E-step problem under ``params`` as a pgmpy model with factors ``exp(-cost)``.

        A ``DiscreteMarkovNetwork`` (or, with ``factor_graph=True``, the
        ``FactorGraph`` of Basu 2005, Fig. A.1) over the hidden labels ``"y0"``,
        ``"y1"``, ...; see :func:`hmrf.interop.to_pgmpy`. pgmpy is imported lazily.
        """
        from .interop import to_pgmpy

        return to_pgmpy(self.unary(params), self.graph(params), factor_graph=factor_graph)

    def __repr__(self) -> str:
        return (
            f"HMRF(n={self.n_samples}, d={self.X.shape[1]}, k={self.n_clusters}, "
            f"emission={self.emission!r}, constraints={self.constraints!r}, "
            f"normalizer={self.normalizer!r})"
        )
