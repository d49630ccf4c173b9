"""Node orders of the sequential schedule and their directed-message layout.

Used by :mod:`~hmrf.inference.bp.sequential_numpy` (NumPy passes, vectorised over
colour classes) and :mod:`~hmrf.inference.bp.kernels_numba` (compiled passes, node by
node). The
sequential schedule visits the nodes in a fixed order, forward then backward; any
order is valid (Kolmogorov 2006, §4: TRW-S with monotonic chains works for every
order), but it sets how far evidence travels in one pass: along the chains of nodes
that increase in the order.

* :func:`colour_classes`: a greedy colouring, the nodes class by class. The NumPy
  passes need it (a class is an independent set, so it updates at once), but its
  monotonic chains are at most as long as the number of colours (about 5 on a random
  graph of mean degree 4).
* :func:`bfs_order`: breadth-first from the highest-degree node of every component.
  Node-by-node (compiled) passes can afford it; chains follow the BFS layers across
  the whole component, so one pass carries evidence from the hub to the periphery and
  back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from ...graph import TABLE, CacheKey, PairwiseGraph, independent_sets

if TYPE_CHECKING:
    from typing import Any

__all__ = ["colour_classes", "greedy_colouring", "bfs_order", "MessageOrder", "NodeOrder", "node_order"]

#: colour classes and breadth-first order: functions of the edges alone
COLOURS = CacheKey("bp.colours", "keep")
BFS = CacheKey("bp.bfs", "keep")
#: compiled node-order layouts and TRW-S's layouts, by order name; they read the weights
#: at every solve, so a re-weighted graph starts from a copy of the dict
NODE_ORDERS = CacheKey("bp.node_orders", lambda orders, weight: dict(orders))


def colour_classes(graph: PairwiseGraph) -> list[np.ndarray]:
    """Colour classes of the sequential order, cached on the graph.

    A greedy (first-fit) colouring in the fixed priority order of
    :meth:`~hmrf.graph.PairwiseGraph.independent_sets` (higher degree first, ties in a fixed
    pseudo-random order): every node takes the smallest colour none of its
    higher-priority neighbours has.
    Computed round by round (Jones & Plassmann 1993): the rounds of
    :meth:`~hmrf.graph.PairwiseGraph.independent_sets` are exactly the nodes whose
    higher-priority neighbours are all coloured, so each round is one vectorised step.
    First-fit needs far fewer classes than the rounds themselves (docs/inference.md),
    and each class is one Python step of a pass.
    """
    return graph.cache.get(COLOURS, lambda: greedy_colouring(graph.n_nodes, graph.edges))


def greedy_colouring(n_nodes: int, edges: np.ndarray) -> list[np.ndarray]:
    """First-fit colouring in degree-priority order, as a list of colour classes.

    See :func:`colour_classes`. Each round builds the (members, colours) table of the
    colours already taken by a member's neighbours and gives every member the first
    free one (the table has one more column than the largest colour, so one is free).
    """
    colour = np.full(n_nodes, -1, dtype=np.int64)
    if n_nodes == 0:
        return []
    src = np.r_[edges[:, 0], edges[:, 1]]
    dst = np.r_[edges[:, 1], edges[:, 0]]
    local = np.full(n_nodes, -1, dtype=np.int64)
    n_colours = 0
    for members in independent_sets(n_nodes, edges):
        local[members] = np.arange(members.size)
        sel = (local[src] >= 0) & (colour[dst] >= 0)
        taken = np.zeros((members.size, n_colours + 1), dtype=bool)
        taken[local[src[sel]], colour[dst[sel]]] = True
        colour[members] = np.argmin(taken, axis=1)  # the first False
        n_colours = max(n_colours, int(colour[members].max()) + 1)
        local[members] = -1
    return [np.flatnonzero(colour == c) for c in range(n_colours)]


def bfs_order(graph: PairwiseGraph) -> np.ndarray:
    """Breadth-first order of every connected component from its highest-degree node
    (ties by index; neighbours in index order), as ``perm[new] = old``; cached on the graph.

    One traversal from a virtual node joined to each component's root: the components'
    BFS layers interleave, which changes nothing (no message crosses components) and
    needs no Python loop over components.
    """
    def build():
        n, e = graph.n_nodes, graph.edges
        n_comp, comp = graph.components()
        deg = np.diff(graph.neighbors().indptr)  # distinct neighbours
        by_comp = np.lexsort((np.arange(n), -deg, comp))
        roots = by_comp[np.r_[True, comp[by_comp][1:] != comp[by_comp][:-1]]] if n else by_comp
        # the symmetric adjacency plus the virtual node n joined to every root; a node's
        # neighbours are visited in index order (canonical CSR)
        hub = np.full(roots.size, n)
        rows, cols = np.r_[e[:, 0], e[:, 1], hub, roots], np.r_[e[:, 1], e[:, 0], roots, hub]
        aug = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n + 1, n + 1))
        aug.sum_duplicates()
        order = csgraph.breadth_first_order(aug, n, directed=True, return_predecessors=False)
        return order[1:].astype(np.int64)

    return graph.cache.get(BFS, build)


class MessageOrder:
    """Directed messages of a node order (graph-only, shared by every implementation of the passes).

    ``perm[new] = old`` lists the nodes in schedule order. Message ``e < m`` goes from the
    earlier endpoint of factor ``edge[e]`` to the later one (forward pass), ``m + e``
    the other way (backward pass); within each half messages are sorted by
    ``group`` of their sender (its colour class, or its position) and then by factor
    kind. ``rev`` pairs the two messages of a factor; ``trw_gamma`` is TRW-S's
    ``1 / max(n_i^-, n_i^+)`` of every node; ``comp`` its connected component.
    """

    def __init__(self, graph: PairwiseGraph, perm: np.ndarray, group: np.ndarray) -> None:
        n, m = graph.n_nodes, graph.n_edges
        self.perm = perm
        new = np.empty(n, dtype=np.int64)
        new[perm] = np.arange(n)
        a, b = new[graph.edges[:, 0]], new[graph.edges[:, 1]]
        low, high = np.minimum(a, b), np.maximum(a, b)
        cls = graph.edge_classes()
        rank = np.select([cls.must, cls.cannot], [0, 1], 2)
        fo = np.lexsort((rank, group[low]))   # forward messages low -> high
        bo = np.lexsort((rank, group[high]))  # backward messages high -> low
        pos = np.empty(2 * m, dtype=np.int64)
        pos[fo], pos[m + bo] = np.arange(m), m + np.arange(m)
        self.src, self.dst = np.r_[low[fo], high[bo]], np.r_[high[fo], low[bo]]
        self.rev = np.r_[pos[m + fo], pos[bo]]
        self.edge = np.r_[fo, bo]
        self.kind = graph.kind[self.edge]
        self.trw_gamma = 1.0 / np.maximum(np.maximum(np.bincount(low, minlength=n),
                                                     np.bincount(high, minlength=n)), 1)
        self.n_comp, comp = graph.components()
        self.comp = comp[perm]

    def factor_costs(self, graph: PairwiseGraph, k: int, big: float) -> tuple[Any, Any, Any]:
        """Per message: the Potts weight (0 for tables), the table index (-1 for Potts) and
        the (n_tables, k, k) cost tables oriented ``[y_src, y_dst]``; ``inf`` -> ``big``."""
        m2 = self.src.size
        w = np.where(np.isinf(graph.weight), big, graph.weight)
        w = np.where(self.kind == TABLE, 0.0, w[self.edge])
        tab_of = np.full(m2, -1, dtype=np.int64)
        tab = np.flatnonzero(self.kind == TABLE)
        tcost = np.empty((0, k, k))
        if tab.size:  # graph tables are [y_a, y_b]; a message's cost is [y_src, y_dst]
            t_edge = np.full(graph.n_edges, -1, dtype=np.int64)
            is_tab = graph.edge_classes().table
            t_edge[is_tab] = np.arange(int(is_tab.sum()))
            tc = graph.table_costs()[t_edge[self.edge[tab]]]
            tc = np.where(np.isinf(tc), big, tc)
            a_is_src = graph.edges[self.edge[tab], 0] == self.perm[self.src[tab]]
            tcost = np.where(a_is_src[:, None, None], tc, tc.transpose(0, 2, 1))
            tab_of[tab] = np.arange(tab.size)
        return w, tab_of, tcost


def _node_csr(owner, n_nodes, m):
    """Messages grouped by node: (ptr, mid, ids), forward ids (< m) before backward ones."""
    ids = np.lexsort((np.arange(owner.size) >= m, owner))
    ptr = np.searchsorted(owner[ids], np.arange(n_nodes + 1))
    mid = ptr[:-1] + np.bincount(owner[:m], minlength=n_nodes)
    return ptr.astype(np.int64), mid.astype(np.int64), ids.astype(np.int64)


class NodeOrder(MessageOrder):
    """:class:`MessageOrder` of one node order with, per node, the messages it receives
    and sends (``node_in``, ``node_out``: CSR ``(ptr, mid, ids)``, forward messages
    first): what the node-by-node compiled passes walk."""

    def __init__(self, graph: PairwiseGraph, perm: np.ndarray) -> None:
        n, m = graph.n_nodes, graph.n_edges
        super().__init__(graph, perm, np.arange(n))
        self.node_in = _node_csr(self.dst, n, m)
        self.node_out = _node_csr(self.src, n, m)


def node_order(graph: PairwiseGraph, order: str) -> NodeOrder:
    """The :class:`NodeOrder` of ``order`` (``"bfs"`` or ``"colour"``), cached on the graph."""
    orders = graph.cache.get(NODE_ORDERS, dict)
    if order not in orders:
        perm = bfs_order(graph) if order == "bfs" else _concat(colour_classes(graph))
        orders[order] = NodeOrder(graph, perm)
    return orders[order]


def _concat(classes):
    return np.concatenate(classes) if classes else np.empty(0, dtype=np.int64)
