"""Naive mean-field posteriors of an E-step problem: the soft counterpart of ICM.

For the E-step energy ``E(y) = Σ_i U[i, y_i] + Σ_e cost_e(y_a, y_b)`` the posterior
``p(y) ∝ exp(-E(y))`` is approximated by a product ``q(y) = Π_i q_i(y_i)`` minimising
the variational free energy ``F(q)`` of :mod:`hmrf.inference.posteriors`. Fixing every
factor but ``q_i``, the minimiser is ``q_i(h) ∝ exp(-U_ih - Σ_{e = (i, j)}
E_{q_j}[cost_e(h, y_j)])``, where the expectation
for a Potts must-link of weight ``w`` is ``w (1 - q_jh)``, for a cannot-link
``w q_jh`` and for a table ``Σ_b T(h, b) q_jb``. A colour class of the graph is updated
at once (its nodes share no factor), each update an exact coordinate minimisation, so
``F`` never increases (the soft analogue of ICM, Basu 2005, §4.4.4). Infinite pairwise
costs count as the finite :func:`~hmrf.inference.posteriors.hard_cost`, as in ``F``.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .._validation import Interval
from ..graph import POTTS_CL, POTTS_ML, TABLE, CacheKey, PairwiseGraph, segment_matrix
from .base import InferenceEngine, Solution
from .polish import finish
from .posteriors import hard_cost, softmax_free_energy

__all__ = ["MeanField"]

#: colour classes with their (weighted) factors: built anew for new weights
LAYOUT = CacheKey("mean_field.layout")


class _Layout:
    """Colour classes of a graph with their incident factors as directed arrays."""

    def __init__(self, graph: PairwiseGraph):
        e, m = graph.edges, graph.n_edges
        w = graph.weight
        src, dst = np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]]
        ww, kind = np.r_[w, w], np.r_[graph.kind, graph.kind]
        first = np.r_[np.ones(m, bool), np.zeros(m, bool)]
        tables = None
        if not graph.is_potts:
            t = graph.table_costs()
            pos = np.full(m, -1)
            pos[graph.edge_classes().table] = np.arange(t.shape[0])
            tables = (t, np.r_[pos, pos])
        self.classes = []
        colour = np.empty(graph.n_nodes, dtype=np.int64)
        sets = graph.independent_sets()
        for c, members in enumerate(sets):
            colour[members] = c
        local = np.empty(graph.n_nodes, dtype=np.int64)
        for c, members in enumerate(sets):  # a loop over colour classes
            local[members] = np.arange(members.size)
            d = np.flatnonzero(colour[src] == c)
            row = local[src[d]]
            # the sum of a class's directed factors into its members, built once per layout:
            # the sweeps apply it many times
            cls = dict(members=members, agg=segment_matrix(row, members.size), dst=dst[d], w=ww[d],
                       kind=kind[d])
            if tables is not None:
                t_idx = tables[1][d]
                sel = kind[d] == TABLE
                cls["tab"] = (tables[0][t_idx[sel]], first[d][sel], sel)
            self.classes.append(cls)

    @staticmethod
    def of(graph: PairwiseGraph) -> _Layout:
        """The layout of ``graph``, cached on it (EM solves the same graph repeatedly)."""
        return graph.cache.get(LAYOUT, lambda: _Layout(graph))

    @staticmethod
    def expected_costs(cls, q, big) -> np.ndarray:
        """``Σ_{e ∋ i} E_{q_j}[cost_e(h, y_j)]`` for the members of a class, (c, k)."""
        c, k = cls["members"].size, q.shape[1]
        w, kind, qd = cls["w"], cls["kind"], q[cls["dst"]]
        w = np.where(np.isinf(w), big, w)
        vals = np.zeros((w.size, k))
        ml, cl = kind == POTTS_ML, kind == POTTS_CL
        vals[ml] = w[ml, None] * (1.0 - qd[ml])
        vals[cl] = w[cl, None] * qd[cl]
        if "tab" in cls:
            T, is_first, sel = cls["tab"]
            T = np.where(np.isinf(T), big, T)
            qs = qd[sel]
            vals[sel] = np.where(is_first[:, None], np.einsum("thb,tb->th", T, qs),
                                 np.einsum("tbh,tb->th", T, qs))
        return np.asarray(cls["agg"] @ vals) if w.size else np.zeros((c, k))


class MeanField(InferenceEngine):
    """Naive mean-field posteriors of the E-step (module docstring): coordinate descent
    on ``F(q)`` by colour classes.

    ``labels`` are the argmax of the posteriors ``q`` (made to honour the hard factors by
    :func:`~hmrf.inference.polish.finish`). ``init`` may be posteriors (n, k), as soft
    EM passes, or labels; without it the sweeps start from the unary posteriors.

    Parameters
    ----------
    max_iter : int, default=100
        Maximum sweeps over the colour classes.
    tol : float, default=1e-6
        Converged when no posterior changes by more than ``tol`` in a sweep.

    References
    ----------
    Wainwright & Jordan (2008), "Graphical models, exponential families, and variational
    inference", §5. Zhang (1992), mean-field EM for Markov random fields.

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference.meanfield import MeanField
    >>> unary = np.array([[0.0, 2.0], [1.0, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], n=2, weight=3.0)
    >>> MeanField().map(unary, c).marginals.argmax(axis=1).tolist()
    [0, 0]
    """

    gives_marginals = True
    descends_free_energy = True
    _parameter_constraints = {
        "max_iter": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
    }

    def __init__(self, max_iter: int = 100, tol: float = 1e-6) -> None:
        self.max_iter = max_iter
        self.tol = tol

    def _solve(self, unary, graph, init, rng, notify):
        k = unary.shape[1]
        if init is None:
            q = softmax_free_energy(unary)[0]
        else:
            q = np.eye(k)[init] if np.ndim(init) == 1 else np.array(init, dtype=np.float64)
        big, layout, tol = hard_cost(unary, graph), _Layout.of(graph), float(self.tol)
        sweep, converged = 0, False
        while sweep < int(self.max_iter) and not converged:
            sweep += 1
            change = 0.0
            for cls in layout.classes:  # a loop over colour classes, vectorised inside
                mem = cls["members"]
                new = softmax_free_energy(unary[mem] + layout.expected_costs(cls, q, big))[0]
                change = max(change, float(np.abs(new - q[mem]).max()))
                q[mem] = new
            converged = change <= tol
            notify(sweep, np.argmax(q, axis=1))
        labels, _ = finish(unary, graph, [np.argmax(q, axis=1)], "mean field", rng)
        return Solution(labels, n_iter=sweep, converged=converged, marginals=q)
