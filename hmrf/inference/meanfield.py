"""Naive mean-field posteriors of an E-step problem: the soft counterpart of ICM.

For the E-step energy ``E(y) = Σ_i U[i, y_i] + Σ_e cost_e(y_a, y_b)`` the posterior
``p(y) ∝ exp(-E(y))`` is approximated by a product ``q(y) = Π_i q_i(y_i)`` minimising
the variational free energy (Jordan et al. 1999; Wainwright & Jordan 2008, §5)

    F(q) = Σ_i Σ_h q_ih U_ih + Σ_e E_q[cost_e] + Σ_i Σ_h q_ih log q_ih  >=  -log Z.

Fixing every factor but ``q_i``, the minimiser is

    q_i(h) ∝ exp(-U_ih - Σ_{e = (i, j)} E_{q_j}[cost_e(h, y_j)]),

which for a Potts must-link of weight ``w`` is ``w (1 - q_jh)``, for a cannot-link
``w q_jh`` and for a table ``Σ_b T(h, b) q_jb``: O(k) per Potts edge. Nodes that share
no factor do not enter each other's update, so a colour class of the graph is updated
at once, with exactly the result of updating its members one by one; each such update
is an exact coordinate minimisation, so ``F`` never increases (the soft analogue of
ICM's sweeps, Basu 2005, §4.4.4).

Hard must-links are contracted first (a joint distribution of finite energy puts all
its mass on equal labels; the super-node has one factor ``q``). Hard cannot-links and
infinite table entries are replaced by a finite cost ``HARD`` times larger than every
finite cost of the problem, so a posterior that puts mass on a violation pays for it
in ``F``.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np

from .._params import Interval, validate_params
from ..graph import POTTS_CL, POTTS_ML, TABLE, CacheKey, PairwiseGraph, as_graph, segment_sum
from .base import check_unary, reduce_problem

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from ..constraints import Constraints

__all__ = ["MeanField", "MarginalResult", "softmax_free_energy", "factorised_free_energy"]

#: colour classes with their (weighted) factors: built anew for new weights
LAYOUT = CacheKey("mean_field.layout")

#: factor of the largest finite cost that replaces an infinite one
HARD = 1e3


def softmax_free_energy(unary: NDArray[np.floating]) -> tuple[np.ndarray, np.ndarray]:
    """Exact posteriors ``q_ih ∝ exp(-U_ih)`` of independent nodes and their free
    energies ``-log Σ_h exp(-U_ih)`` (n,), computed stably (rows may hold ``+inf``)."""
    U = np.asarray(unary, dtype=np.float64)
    m = U.min(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(-(U - m))
    z = e.sum(axis=1, keepdims=True)
    return e / z, (m - np.log(z)).ravel()


@dataclass
class MarginalResult:
    """Posteriors of an E-step problem.

    Attributes
    ----------
    marginals : ndarray (n, k)
        ``q_i(h)``, rows summing to one.
    free_energy : float
        ``F(q)`` (an upper bound on ``-log Z``).
    n_iter : int
    converged : bool
    """

    marginals: np.ndarray
    free_energy: float
    n_iter: int
    converged: bool


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
            cls = dict(members=members, row=local[src[d]], dst=dst[d], w=ww[d], kind=kind[d])
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
        return segment_sum(cls["row"], vals, c) if w.size else np.zeros((c, k))


def _pairwise_expectation(graph: PairwiseGraph, q, big) -> float:
    """``Σ_e E_q[cost_e]`` for independent node posteriors ``q``."""
    if graph.n_edges == 0:
        return 0.0
    a, b = graph.edges[:, 0], graph.edges[:, 1]
    w = np.where(np.isinf(graph.weight), big, graph.weight)
    same = np.einsum("eh,eh->e", q[a], q[b])
    cls = graph.edge_classes()
    out = np.where(cls.must, w * (1.0 - same), 0.0)
    out = np.where(cls.cannot, w * same, out)
    tab = np.flatnonzero(cls.table)
    if tab.size:
        T = graph.table_costs()
        T = np.where(np.isinf(T), big, T)
        out[tab] = np.einsum("ta,tab,tb->t", q[a[tab]], T, q[b[tab]])
    return float(out.sum())


class MeanField:
    """Naive mean-field posteriors of the E-step (module docstring); used by soft EM.

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
    >>> MeanField().marginals(unary, c).marginals.argmax(axis=1).tolist()
    [0, 0]
    """

    _parameter_constraints = {
        "max_iter": [Interval(Integral, 1, None)],
        "tol": [Interval(Real, 0, None)],
    }

    def __init__(self, max_iter: int = 100, tol: float = 1e-6) -> None:
        self.max_iter = max_iter
        self.tol = tol

    def marginals(self, unary: ArrayLike, graph: PairwiseGraph | Constraints | None = None,
                  init: ArrayLike | None = None) -> MarginalResult:
        """Mean-field posteriors of ``E(y) = Σ_i U[i, y_i] + Σ_e cost_e``.

        Parameters
        ----------
        unary : array-like (n, k)
        graph : PairwiseGraph or Constraints or None
        init : array-like (n, k), optional
            Starting posteriors (EM passes the previous ones); default: the exact
            posteriors without the pairwise factors.

        Returns
        -------
        MarginalResult
        """
        validate_params(self)
        problem = _Contracted(unary, graph)
        q0 = None if init is None else problem.restrict(init)
        qa, n_iter, converged = np.empty((0, problem.sup.shape[1])), 0, True
        if problem.active.size:
            start = softmax_free_energy(problem.unary_active)[0] if q0 is None else q0
            qa, n_iter, converged = self._sweeps(problem.unary_active, problem.graph, start, problem.big)
        return MarginalResult(problem.expand(qa), problem.free_energy(qa), n_iter, converged)

    def _sweeps(self, U, graph, q, big):
        layout = _Layout.of(graph)
        tol = float(self.tol)
        for sweep in range(1, int(self.max_iter) + 1):
            change = 0.0
            for cls in layout.classes:  # a loop over colour classes, vectorised inside
                mem = cls["members"]
                new = softmax_free_energy(U[mem] + layout.expected_costs(cls, q, big))[0]
                change = max(change, float(np.abs(new - q[mem]).max()))
                q[mem] = new
            if change <= tol:
                return q, sweep, True
        return q, int(self.max_iter), False

    def __repr__(self) -> str:
        return f"MeanField(max_iter={self.max_iter!r}, tol={self.tol!r})"


def factorised_free_energy(unary: NDArray[np.floating], graph: PairwiseGraph, q: NDArray[Any]) -> float:
    """``F(q)`` of the module docstring for any factorised posteriors ``q`` (n, k) that
    agree within hard must-link components (e.g. belief propagation's marginals): an
    upper bound on ``-log Z`` whatever ``q``, minimised by the exact posterior when the
    graph has no factor."""
    problem = _Contracted(unary, graph)
    return problem.free_energy(problem.restrict(q))


class _Contracted:
    """An E-step problem with its hard must-links contracted (module docstring)."""

    def __init__(self, unary, graph):
        U = check_unary(unary)
        n, k = U.shape
        graph = as_graph(graph, n)
        graph.check_labels(k)
        red = reduce_problem(U, graph)
        self.n, self.node_of, self.active, self.graph = n, red.node_of, red.active, red.graph
        n_super = red.fixed_labels.shape[0]
        self.sup, self.const = _contract(U, graph, red.node_of, n_super)
        finite = np.concatenate([self.sup[np.isfinite(self.sup)], graph.weight[np.isfinite(graph.weight)],
                                 [1.0]])
        self.big = HARD * float(np.abs(finite).max())
        self.iso = np.ones(n_super, dtype=bool)
        self.iso[red.active] = False
        self.unary_active = self.sup[red.active]

    def restrict(self, q) -> np.ndarray:
        """Posteriors of the active super-nodes from those of the original nodes (the
        first member of each super-node decides)."""
        first = np.full(self.sup.shape[0], -1, dtype=np.int64)
        first[self.node_of[::-1]] = np.arange(self.n)[::-1]
        return np.asarray(q, dtype=np.float64)[first[self.active]]

    def expand(self, qa) -> np.ndarray:
        """Posteriors of every original node: exact softmax for isolated super-nodes."""
        q = np.empty_like(self.sup)
        q[self.iso] = softmax_free_energy(self.sup[self.iso])[0]
        q[self.active] = qa
        return q[self.node_of]

    def free_energy(self, qa) -> float:
        free = self.const + float(softmax_free_energy(self.sup[self.iso])[1].sum())
        if self.active.size:
            Ua = self.unary_active
            with np.errstate(invalid="ignore", divide="ignore"):
                ent = np.where(qa > 0, qa * np.log(np.where(qa > 0, qa, 1.0)), 0.0).sum()
                energy = np.where(qa > 0, qa * Ua, 0.0).sum()
            free += float(energy + ent + _pairwise_expectation(self.graph, qa, self.big))
        return free


def _contract(U, graph, node_of, n_super):
    """Unary costs of the hard-must-link super-nodes and the constant energy of the
    factors inside them (a cannot-link there is always violated; a table adds its
    diagonal)."""
    sup = segment_sum(node_of, U, n_super) if n_super < U.shape[0] else U.copy()
    a, b = node_of[graph.edges[:, 0]], node_of[graph.edges[:, 1]]
    inside = a == b
    cls = graph.edge_classes()
    const = float(graph.weight[inside & cls.cannot].sum())
    tab = inside & cls.table
    if tab.any():
        k = U.shape[1]
        diag = graph.tables[graph.table_index[tab]][:, np.arange(k), np.arange(k)]
        wt = graph.weight[tab][:, None]
        with np.errstate(invalid="ignore"):
            sup += segment_sum(a[tab], np.where(wt == 0, 0.0, wt * diag), n_super)
    return sup, const
