"""What belief propagation runs where, and its two schedules.

Per connected component, with ``reweight="auto"`` (:func:`split_components`): a *lattice*
(:func:`lattice_components`) runs :class:`~hmrf.inference.bp.trws.TRWS`; every other
component of soft must-links only runs TRW-S alternating with max-product from its
messages (:func:`~hmrf.inference.bp.trws.run_trws` with ``cycles``); the frustrated
components (a cannot-link, a table or a hard factor) run this module's schedules:

* :func:`run_sequential`: forward and backward passes in breadth-first order, ordinary
  max-product (or sum-product), undamped for ``AUTO_SWITCH`` iterations and then damped,
  until the messages settle or (``schedule="auto"``) a component's labelling has not
  improved for ``max(AUTO_PATIENCE, AUTO_PATIENCE_WORK / n_c)`` iterations, ``n_c`` its
  size: a bounded amount of work on a component that no longer improves;
* :func:`run_flooding`: rounds of all messages at once (Basu 2005, App. A.1), ordinary
  or tree-reweighted (Wainwright, Jaakkola & Willsky 2005), until they settle,
  ``max_iter`` or ``patience`` rounds without a better labelling.

Lazy updates: a node sends only when one of its incoming messages moved by more than
``tol`` (residual belief propagation, Elidan, McGraw & Koller 2006). The passes are
:mod:`~hmrf.inference.bp.kernels`; docs/inference.md has the measurements behind the
constants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..._lazy import lazy_module
from ...graph import CacheKey, PairwiseGraph
from .trws import big_cost, chain_layout

# the compiled kernels load on first use: listing or building engines needs no numba
kernels = lazy_module("hmrf.inference.bp.kernels")

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["BPProblem", "ScheduleRun", "split_components", "run_sequential", "run_flooding",
           "frustrated_components",
           "lattice_components", "dense_frustrated_part", "uniform_edge_appearance", "LATTICE_NODES",
           "LATTICE_CYCLES", "AUTO_SWITCH", "AUTO_PATIENCE", "AUTO_PATIENCE_WORK", "DENSE_DEGREE"]


def _reweight_parts(entry, weight):
    """The parts under new weights: the same subgraphs re-weighted while the hard edges stay."""
    hard, parts = entry
    if not np.array_equal(np.isinf(weight), hard):
        return None
    return hard, [(name, nodes, None if sub is None else sub.with_weights(weight[edges]), edges)
                  for name, nodes, sub, edges in parts]


#: which components are lattices, the dense frustrated part and the split into parts
#: (all depend on which edges are hard)
LATTICES = CacheKey("bp.lattices")
DENSE_PART = CacheKey("bp.dense_part")
PARTS = CacheKey("bp.parts", _reweight_parts)

#: with ``damping="auto"``, undamped iterations (or flooding rounds) before damping 0.5
AUTO_SWITCH = 20
#: iterations without a better labelling that end a frustrated component's sequential
#: run (at least) and the flooding run of ``schedule="auto"``
AUTO_PATIENCE = 5
#: frustrated components: node-iterations without a better labelling before stopping
AUTO_PATIENCE_WORK = 5000
#: ``schedule="auto"``: frustrated components of at least this mean degree also run flooding
DENSE_DEGREE = 8
#: ``reweight="auto"``: attractive components of at least this many nodes and at least
#: ``LATTICE_CYCLES`` four-cycles per node run :class:`~hmrf.inference.bp.trws.TRWS`
LATTICE_NODES = 1000
LATTICE_CYCLES = 0.1


@dataclass(frozen=True)
class BPProblem:
    """The reduced E-step problem as the passes see it: ``unary`` (``+inf`` allowed), ``u0``
    (every row minimum subtracted, ``inf`` replaced by ``big``, :func:`~.trws.big_cost`)
    and ``graph``."""

    unary: np.ndarray
    u0: np.ndarray
    graph: PairwiseGraph
    big: float

    @classmethod
    def build(cls, unary: NDArray[np.floating], graph: PairwiseGraph) -> BPProblem:
        big = big_cost(unary, graph)
        u0 = unary - np.min(unary, axis=1, keepdims=True)
        return cls(unary, np.where(np.isinf(u0), big, u0), graph, big)

    def restrict(self, nodes: NDArray[np.intp], sub: PairwiseGraph) -> BPProblem:
        """The problem on ``nodes`` with their subgraph ``sub`` (the same ``big``)."""
        return BPProblem(self.unary[nodes], self.u0[nodes], sub, self.big)


def frustrated_components(graph: PairwiseGraph) -> np.ndarray:
    """Per component of :meth:`~hmrf.PairwiseGraph.components`: whether it has a factor
    other than a soft must-link (a cannot-link, a table or a hard factor)."""
    n_comp, comp = graph.components()
    cls = graph.edge_classes()
    frustrated = np.zeros(n_comp, dtype=bool)
    frustrated[comp[graph.edges[~cls.must | cls.hard, 0]]] = True
    return frustrated


def lattice_components(graph: PairwiseGraph) -> np.ndarray:
    """Per component: whether it is attractive, has at least ``LATTICE_NODES`` nodes and at
    least ``LATTICE_CYCLES`` four-cycles per node (an image grid has one per node, a sparse
    random graph a handful in all); cached on the graph.

    On a lattice ordinary max-product over-counts evidence around the short cycles and its
    labellings creep down for hundreds of iterations, where TRW-S converges
    (docs/inference.md, "Image grids"). Four-cycles through node ``i`` are counted from the
    closed 4-walks of the simple adjacency ``A``: ``((A^4)_ii - d_i^2 - sum_{j~i} (d_j -
    1)) / 2``, each cycle seen from its four nodes; components where ``A^2`` would hold
    more than ``50 m`` entries (hubs) are not lattices.
    """
    def build():
        n_comp, comp = graph.components()
        size = np.bincount(comp, minlength=n_comp)
        out = ~frustrated_components(graph) & (size >= LATTICE_NODES)
        if out.any():
            nodes = np.flatnonzero(out[comp])
            sub = graph if nodes.size == graph.n_nodes else graph.subgraph(nodes)
            adj = sub.neighbors().copy()
            adj.data[:] = 1.0
            adj.sum_duplicates()
            adj.data[:] = 1.0  # simple graph: multi-edges once
            deg = np.asarray(adj.sum(axis=1)).ravel()
            if float(deg @ deg) <= 50.0 * max(sub.n_edges, 1):
                a2 = adj @ adj
                walks = np.asarray(a2.multiply(a2).sum(axis=1)).ravel()
                per_node = (walks - deg**2 - adj @ (deg - 1)) / 2.0
                cycles = np.bincount(comp[nodes], weights=per_node, minlength=n_comp) / 4.0
                out &= cycles >= LATTICE_CYCLES * size
            else:
                out[:] = False
        return out

    return graph.cache.get(LATTICES, build)


def split_components(graph: PairwiseGraph) -> list:
    """``reweight="auto"``: ``[(kind, nodes, subgraph)]`` for the non-empty parts ``"lattice"``,
    ``"attractive"`` (the other components of soft must-links only) and ``"frustrated"``;
    ``nodes`` is ``None`` for a part that is the whole graph. Cached on the graph."""
    def build():
        n_comp, comp = graph.components()
        frustrated = frustrated_components(graph)
        code = np.where(frustrated, 2, np.where(lattice_components(graph), 0, 1))[comp]
        ends = code[graph.edges[:, 0]]
        parts = []
        for c, name in enumerate(("lattice", "attractive", "frustrated")):
            nodes = np.flatnonzero(code == c)
            if nodes.size == graph.n_nodes:  # the whole graph (whatever its weights)
                return graph.hard, [(name, None, None, None)]
            if nodes.size:
                parts.append((name, nodes, graph.subgraph(nodes), np.flatnonzero(ends == c)))
        return graph.hard, parts

    parts = graph.cache.get(PARTS, build)[1]
    return [(name, nodes, graph if sub is None else sub) for name, nodes, sub, _ in parts]


def dense_frustrated_part(graph: PairwiseGraph) -> tuple:
    """Nodes of the frustrated components of mean degree >= ``DENSE_DEGREE`` and their
    subgraph (cached): where ``schedule="auto"`` also runs flooding."""
    def build():
        n_comp, comp = graph.components()
        size = np.bincount(comp, minlength=n_comp)
        m_c = np.bincount(comp[graph.edges[:, 0]], minlength=n_comp)
        nodes = np.flatnonzero((frustrated_components(graph) & (2 * m_c >= DENSE_DEGREE * size))[comp])
        return nodes, (graph if nodes.size == graph.n_nodes else graph.subgraph(nodes))

    return graph.cache.get(DENSE_PART, build)


def uniform_edge_appearance(graph: PairwiseGraph) -> np.ndarray:
    """Edge appearance probabilities ``rho_e = (n_c - 1) / m_c`` of edge e's component c:
    the uniform choice of tree-reweighted BP (Wainwright, Jaakkola & Willsky 2005), a
    spanning tree of c having ``n_c - 1`` of its ``m_c`` edges (1 on a forest)."""
    n_comp, comp = graph.components()
    ce = comp[graph.edges[:, 0]]
    sizes = np.bincount(comp, minlength=n_comp)
    m_c = np.bincount(ce, minlength=n_comp)
    return np.clip((sizes[ce] - 1) / np.maximum(m_c[ce], 1), 1e-3, 1.0)


@dataclass
class ScheduleRun:
    """What a schedule returns: ``candidates`` (max-product: the decoding of the last
    messages, then the best labelling seen; sum-product: the argmax of the marginals),
    ``n_iter``, ``converged`` and ``info`` (``stopped``, ``damping``, ``schedule``;
    ``marginals`` in sum mode)."""

    candidates: list
    n_iter: int
    converged: bool
    info: dict


class _Messages:
    """Messages, sums and lazy-update flags of the compiled passes on one problem, in
    breadth-first order (:func:`~hmrf.inference.bp.trws.chain_layout`): ``msgs[e]`` towards
    the later end of layout edge ``e``, ``msgs[m + e]`` towards the earlier one;
    ``into_f`` / ``into_b`` the sums of every node's incoming forward / backward messages;
    ``flags`` (nodes to send forward, backward, to decode again, frozen)."""

    def __init__(self, problem: BPProblem, tol: float, sum_mode: bool) -> None:
        n, k = problem.u0.shape
        self.lay = lay = chain_layout(problem.graph, "bfs")
        self.fac = lay.factors(problem.graph, k, problem.big)
        self.u = np.ascontiguousarray(problem.u0[lay.perm])
        self.msgs = np.zeros((2 * lay.lo.shape[0], k))
        self.into_f, self.into_b = np.zeros((n, k)), np.zeros((n, k))
        self.labels, self.node_e = np.zeros(n, dtype=np.int64), np.zeros(n)
        self.flags = (*(np.ones(n, dtype=bool) for _ in range(3)), np.zeros(n, dtype=bool))
        self.tol, self.sum_mode = float(tol), sum_mode

    def forward(self, damping: float, send: bool = True) -> bool:
        """Decode the stale nodes (max mode) and, with ``send``, send towards later nodes."""
        return kernels.bp_forward(self.u, self.msgs, self.into_f, self.into_b, self.labels, self.node_e,
                                  self.fac, self.flags, damping, self.tol, send, self.sum_mode)

    def backward(self, damping: float) -> bool:
        return kernels.bp_backward(self.u, self.msgs, self.into_f, self.into_b, self.fac, self.flags, damping,
                                   self.tol, self.sum_mode)

    def unpermute(self, y: NDArray[np.intp]) -> np.ndarray:
        out = np.empty(y.size, dtype=np.int64)
        out[self.lay.perm] = y
        return out

    def marginals(self) -> np.ndarray:
        """``p(y_i = h) ∝ exp(-B_ih)`` of the beliefs, in the graph's node order."""
        b = self.u + self.into_f + self.into_b
        marg = np.exp(-(b - b.min(axis=1, keepdims=True)))
        marg /= marg.sum(axis=1, keepdims=True)
        return marg[np.argsort(self.lay.perm)]


def component_patience(settings: Any, size: NDArray[np.intp]) -> np.ndarray:
    """Per component: iterations without a better labelling that stop it (``inf``: never)."""
    if settings.patience is not None:
        return np.full(size.size, float(settings.patience))
    if settings.schedule == "auto" and settings.mode == "max":
        return np.maximum(AUTO_PATIENCE, np.ceil(AUTO_PATIENCE_WORK / size))
    return np.full(size.size, np.inf)


def run_sequential(settings: Any, problem: BPProblem, notify: Callable[..., Any]) -> ScheduleRun:
    """The sequential schedule (module docstring); ``notify(iteration, labels)`` in max mode."""
    sum_mode = settings.mode == "sum"
    st = _Messages(problem, settings.tol, sum_mode)
    n, flags = st.u.shape[0], st.flags
    comp, n_comp = st.lay.comp, st.lay.n_comp
    patience = component_patience(settings, np.bincount(comp, minlength=n_comp))
    best, best_e = np.zeros(n, dtype=np.int64), np.full(n_comp, np.inf)
    stale, done = np.zeros(n_comp), np.zeros(n_comp, dtype=bool)
    lam = settings.damping or 0.0
    converged, stopped, it = False, "max_iter", 0
    for it in range(1, settings.max_iter + 1):
        moved_f = st.forward(lam)
        if not sum_mode:  # labels: decoded from the messages of iteration it - 1
            e = np.bincount(comp, weights=st.node_e, minlength=n_comp)
            better = e < best_e
            stale += 1
            if np.count_nonzero(better):
                np.copyto(best, st.labels, where=better[comp])
                best_e[better], stale[better] = e[better], 0
            notify(it, st.unpermute(st.labels))
            newly = ~done & (stale >= patience)
            if newly.any():  # a finished component's nodes stop sending
                done |= newly
                frozen = newly[comp]
                flags[3][frozen] = True
                flags[0][frozen] = flags[1][frozen] = False
            if done.all():
                stopped = "patience"
                break
        moved_b = st.backward(lam)
        if settings.damping is None and it == AUTO_SWITCH:
            lam = 0.5  # undamped updates did not settle: damp from now on
        if not (moved_f or moved_b):
            converged, stopped = True, "tol"
            break
    info = {"damping": lam, "big": problem.big, "stopped": stopped, "schedule": "sequential"}
    if sum_mode:
        return _sum_product_run(st, it, converged, info, notify)
    st.forward(0.0, send=False)  # decode the last messages
    e = np.bincount(comp, weights=st.node_e, minlength=n_comp)
    np.copyto(best, st.labels, where=(e < best_e)[comp])
    return ScheduleRun([st.unpermute(st.labels), st.unpermute(best)], it, converged, info)


def run_flooding(settings: Any, problem: BPProblem, rho: NDArray[np.floating] | None,
                 notify: Callable[..., Any], patience: int | None = None) -> ScheduleRun:
    """Flooding rounds (module docstring) with edge appearance probabilities ``rho`` (per graph
    edge; ``None``: ordinary BP); ``patience`` (default: the settings') stops max mode after
    that many rounds without a better per-node argmin labelling."""
    sum_mode = settings.mode == "sum"
    st = _Messages(problem, settings.tol, sum_mode)
    n = st.u.shape[0]
    patience = settings.patience if patience is None else patience
    r = np.ones(st.lay.lo.shape[0]) if rho is None else np.ascontiguousarray(np.asarray(rho)[st.lay.edge])
    old, beliefs = np.empty_like(st.msgs), np.empty_like(st.u)
    wake, scratch = np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
    flags = (np.zeros(n, dtype=bool), scratch, scratch, np.zeros(n, dtype=bool))
    lam = settings.damping or 0.0
    best, best_e, stale, stopped, converged, it = None, np.inf, 0, "max_iter", False, 0
    for it in range(1, settings.max_iter + 1):
        if settings.damping is None and it == AUTO_SWITCH + 1:
            lam = 0.5  # undamped updates did not settle: damp from now on
        moved, energy = kernels.bp_flood(st.u, st.msgs, old, st.into_f, st.into_b, beliefs, st.labels, st.fac,
                                         r, wake, flags, lam, st.tol, sum_mode)
        wake, flags = flags[0], (wake, scratch, scratch, flags[3])  # this round's woken send next
        flags[0][:] = False
        if not sum_mode:  # anytime: the best per-node argmin (energy on u0: the same order)
            if best is None or energy < best_e:
                best, best_e, stale = st.unpermute(st.labels), energy, 0
            else:
                stale += 1
            notify(it, st.unpermute(st.labels))
        if not moved:
            converged, stopped = True, "tol"
            break
        if patience is not None and stale >= patience:
            stopped = "patience"
            break
    info = {"damping": lam, "big": problem.big, "reweighted": rho is not None, "stopped": stopped,
            "schedule": "flooding"}
    if sum_mode:
        return _sum_product_run(st, it, converged, info, notify)
    st.flags = (flags[0], flags[1], np.ones(n, dtype=bool), flags[3])  # decode every node
    st.forward(0.0, send=False)
    return ScheduleRun([st.unpermute(st.labels), best], it, converged, info)


def _sum_product_run(st, it, converged, info, notify):
    info["marginals"] = marg = st.marginals()
    labels = np.argmax(marg, axis=1)
    notify(it, labels)
    return ScheduleRun([labels], it, converged, info)
