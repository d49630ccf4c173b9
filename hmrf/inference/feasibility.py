"""Labellings that honour every hard factor: greedy assignment, repair and the final check.

A *hard factor* is anything of infinite cost: a Potts edge of weight ``inf`` (hard
must-link or cannot-link), an infinite entry of a table edge, or an infinite unary cost
(a forbidden label, e.g. a clamped seed). Deciding whether a labelling avoiding all of
them exists is graph colouring in general (NP-complete), so engines that are not exact
use the greedy assignment of COP-KMeans (Wagstaff et al. 2001; Basu 2005, §2.3.3):
visit the nodes one by one, each taking its cheapest label compatible with the hard
factors to the nodes already placed. The order matters; :func:`greedy_with_restarts`
tries the most constrained nodes first and then squeaky-wheel orders (the nodes that
hit dead ends first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import InfeasibleError
from ..graph import POTTS_CL, POTTS_ML, TABLE, PairwiseGraph

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["HardFactors", "greedy_assign", "constrained_first_order", "greedy_with_restarts",
           "greedy_repair", "violating_nodes", "raise_if_infeasible"]


class HardFactors:
    """The hard factors of a graph as a directed adjacency (CSR layout), built once.

    For node ``i`` the slice ``start[i]:start[i + 1]`` of ``dst`` lists the other end
    of each hard factor at ``i``; ``kind`` says whether it is a must-link, cannot-link
    or table edge, and for table edges ``allowed[t]`` is the (k, k) mask of finite
    entries oriented so that ``allowed[t][h, y_other]`` says whether ``i`` may take
    ``h`` next to a neighbour labelled ``y_other``.
    """

    def __init__(self, graph: PairwiseGraph, k: int) -> None:
        n = graph.n_nodes
        cls = graph.edge_classes()
        hard_potts = cls.hard
        tab = np.flatnonzero(cls.table)
        tab_allowed = np.empty((0, k, k), dtype=bool)
        hard_tab = np.empty(0, dtype=np.int64)
        if tab.size and np.isinf(graph.tables).any():
            finite = np.isfinite(graph.table_costs())  # (m_table, k, k)
            has_inf = ~finite.all(axis=(1, 2))
            hard_tab, tab_allowed = tab[has_inf], finite[has_inf]
        pe = graph.edges[hard_potts]
        te = graph.edges[hard_tab]
        src = np.r_[pe[:, 0], pe[:, 1], te[:, 0], te[:, 1]].astype(np.int64)
        dst = np.r_[pe[:, 1], pe[:, 0], te[:, 1], te[:, 0]].astype(np.int64)
        pk = graph.kind[hard_potts]
        kind = np.r_[pk, pk, np.full(2 * hard_tab.size, TABLE)].astype(np.int8)
        t = np.arange(hard_tab.size)
        # a table's row endpoint reads T[h, y_other]; its column endpoint T[y_other, h]
        self.tables = np.concatenate([tab_allowed, tab_allowed.transpose(0, 2, 1)])
        tab_id = np.r_[np.full(2 * pk.size, -1), t, t + hard_tab.size].astype(np.int64)
        order = np.argsort(src, kind="stable")
        self.dst, self.kind, self.tab_id = dst[order], kind[order], tab_id[order]
        self.start = np.searchsorted(src[order], np.arange(n + 1))
        self.degree = np.diff(self.start)

    def allowed(self, i: int, labels: np.ndarray, unary_row: np.ndarray) -> np.ndarray:
        """(k,) mask of the labels node ``i`` may take next to its placed neighbours."""
        ok = np.isfinite(unary_row)
        s, e = self.start[i], self.start[i + 1]
        if s == e:
            return ok
        y = labels[self.dst[s:e]]
        placed = y >= 0
        kind = self.kind[s:e]
        ok[y[placed & (kind == POTTS_CL)]] = False
        must = y[placed & (kind == POTTS_ML)]
        if must.size:
            only = np.zeros_like(ok)
            if (must == must[0]).all():
                only[must[0]] = True
            ok &= only
        tab = placed & (kind == TABLE)
        if tab.any():
            ok &= self.tables[self.tab_id[s:e][tab], :, y[tab]].all(axis=0)
        return ok


def greedy_assign(unary: NDArray[Any], hard: HardFactors, order: NDArray[np.intp],
                  labels: NDArray[Any] | None = None) -> np.ndarray:
    """One greedy pass (the assignment step of COP-KMeans, Wagstaff et al. 2001).

    The nodes of ``order`` take in turn their cheapest label allowed by ``hard``;
    ``labels`` (not modified) gives the other nodes' labels (``-1``: not placed).
    Returns a new labelling in which nodes that found no allowed label are ``-1``.
    """
    n = unary.shape[0]
    out = np.full(n, -1, dtype=np.int64) if labels is None else np.array(labels, dtype=np.int64)
    order = np.asarray(order, dtype=np.int64)
    out[order] = -1
    for i in order:  # inherently sequential: each choice constrains the next
        ok = hard.allowed(i, out, unary[i])
        if ok.any():
            out[i] = int(np.argmin(np.where(ok, unary[i], np.inf)))
    return out


def constrained_first_order(hard: HardFactors, nodes: NDArray[np.intp],
                            rng: np.random.Generator) -> np.ndarray:
    """``nodes`` sorted by decreasing number of hard factors, ties in random order
    (a static DSATUR-style order: dead ends of the greedy pass become rarer)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    return nodes[np.lexsort((rng.random(nodes.size), -hard.degree[nodes]))]


def violating_nodes(unary: NDArray[np.floating], graph: PairwiseGraph,
                    labels: NDArray[np.intp]) -> np.ndarray:
    """Sorted nodes that sit on a violated hard factor or hold a forbidden label."""
    labels = np.asarray(labels)
    bad = np.isinf(unary[np.arange(labels.shape[0]), labels])
    hard_edges = graph.n_edges and (np.isinf(graph.weight).any()
                                    or (graph.tables is not None and np.isinf(graph.tables).any()))
    if hard_edges:  # soft graphs (the common case) skip the edge pass
        broken = np.isinf(graph.edge_costs(labels))
        bad[graph.edges[broken].ravel()] = True
    return np.flatnonzero(bad)


def greedy_with_restarts(unary: NDArray[np.floating], hard: HardFactors, comp: Any, todo: Any,
                         rng: np.random.Generator, n_restarts: int,
                         labels: NDArray[np.intp] | None = None) -> tuple[np.ndarray, int, np.ndarray]:
    """Greedy passes over ``todo`` until every node is placed or ``n_restarts`` run out.

    The first pass visits :func:`constrained_first_order`; each restart re-assigns the
    components (``comp``) that still hold a dead end in a squeaky-wheel order (Joslin &
    Clements 1999): most dead ends first, then most constrained, ties random. Returns
    ``(labels, restarts, order)``: ``-1`` where the last pass found no allowed label,
    and that pass's visiting order.
    """
    order = constrained_first_order(hard, todo, rng)
    labels = greedy_assign(unary, hard, order, labels)
    dead_ends = np.zeros(labels.shape[0])
    restarts = 0
    while restarts < int(n_restarts) and (labels < 0).any():
        failed = labels < 0
        dead_ends[failed] += 1
        nodes = np.flatnonzero(np.isin(comp, np.unique(comp[failed])))
        order = nodes[np.lexsort((rng.random(nodes.size), -hard.degree[nodes], -dead_ends[nodes]))]
        labels = greedy_assign(unary, hard, order, labels)
        restarts += 1
    return labels, restarts, order


def greedy_repair(unary: NDArray[np.floating], graph: PairwiseGraph, labels: NDArray[np.intp],
                  rng: np.random.Generator, n_restarts: int = 10) -> np.ndarray:
    """Re-place greedily (:func:`greedy_with_restarts`) every connected component that
    breaks a hard factor; the others keep their labels. ``-1`` marks the nodes that
    found no allowed label in the last order tried for their component."""
    labels = np.array(labels, dtype=np.int64)
    bad = violating_nodes(unary, graph, labels)
    if bad.size == 0:
        return labels
    hard = HardFactors(graph, unary.shape[1])
    _, comp = graph.components()
    todo = np.flatnonzero(np.isin(comp, np.unique(comp[bad])))
    return greedy_with_restarts(unary, hard, comp, todo, rng, n_restarts, labels)[0]


def raise_if_infeasible(unary: NDArray[np.floating], graph: PairwiseGraph, labels: NDArray[np.intp],
                        engine: str) -> None:
    """Raise :class:`~hmrf.InfeasibleError` naming a node on a broken hard factor (or
    with a forbidden label): the last check of :meth:`~hmrf.inference.InferenceEngine.map`."""
    bad = violating_nodes(unary, graph, labels)
    if bad.size == 0:
        return
    i = int(bad[0])
    if np.isinf(unary[i, labels[i]]):
        what = f"it is in cluster {int(labels[i])}, which its unary costs forbid"
    else:
        what = "a hard constraint of this point is broken"
    raise InfeasibleError(
        f"point {i}: {engine} returned a labelling that breaks a hard constraint ({what}). "
        "The problem may be infeasible or merely hard for this engine; ExactMILP decides "
        "feasibility exactly.",
        point=i,
    )
