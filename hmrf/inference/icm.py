"""Iterated conditional modes (Besag 1986), the E-step of HMRF-KMeans (Basu 2005, §4.4.4).

Each node in turn takes the label minimising its contribution to the objective given
its neighbours' current labels (eq. 4.11); sweeps repeat in random order until no
label changes. Every update is an exact coordinate minimisation, so the energy never
increases.

Nodes with no factor between them do not influence each other's conditional cost, so
updating an independent set at once equals updating its members one after another: the
constrained nodes are split into independent sets once per graph (cached on it) and the
sets are visited in a fresh random order every sweep.
"""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from .._validation import Interval
from ..exceptions import InfeasibleError
from ..graph import POTTS_ML, TABLE, CacheKey, PairwiseGraph, independent_sets, segment_sum
from .base import InferenceEngine, Solution
from .feasibility import greedy_repair, violating_nodes

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import NDArray

# independent_sets: defined by the graph layer (hmrf.graph), public here as well
__all__ = ["ICM", "iterated_conditional_modes", "independent_sets", "build_blocks"]

#: the independent sets with their factors (weighted): built anew for new weights
BLOCKS = CacheKey("icm.blocks")


class _Block:
    """Factors incident to one independent set, as directed (member -> neighbour) arrays."""

    def __init__(self, members, row, dst, w, kind, tab_cost, tab_first):
        self.members = members
        self.size = c = members.shape[0]
        finite = np.isfinite(w)
        soft = finite & (kind != TABLE)
        # ML: w [h != y_j] = w - w [h == y_j];  CL: w [h == y_j]
        self.soft_row, self.soft_dst = row[soft], dst[soft]
        self.soft_val = np.where(kind[soft] == POTTS_ML, -w[soft], w[soft])
        ml_soft = soft & (kind == POTTS_ML)
        self.base = np.bincount(row[ml_soft], weights=w[ml_soft], minlength=c)
        # After hard-must-link contraction only hard cannot-links remain, but keep both
        # kinds right for direct use: hard violations are minimised first.
        hard = ~finite & (kind != TABLE)
        self.has_hard = bool(hard.any())
        self.hard_row, self.hard_dst = row[hard], dst[hard]
        self.hard_sign = np.where(kind[hard] == POTTS_ML, -1.0, 1.0)
        self.hard_base = np.bincount(row[hard & (kind == POTTS_ML)], minlength=c).astype(float)
        tab = kind == TABLE
        self.tab_row, self.tab_dst = row[tab], dst[tab]
        self.tab_cost, self.tab_first = tab_cost, tab_first

    def conditional_costs(self, unary, labels, k):
        """(size, k) costs of each member's labels given its neighbours' labels."""
        c = self.size
        cost = unary[self.members] + self.base[:, None]
        if self.soft_row.size:
            cost += np.bincount(
                self.soft_row * k + labels[self.soft_dst], weights=self.soft_val, minlength=c * k
            ).reshape(c, k)
        if self.tab_row.size:
            yj = labels[self.tab_dst]
            idx = np.arange(yj.size)
            vals = np.where(
                self.tab_first[:, None],
                self.tab_cost[idx, :, yj],  # member is the row endpoint: T[h, y_j]
                self.tab_cost[idx, yj, :],  # member is the column endpoint: T[y_j, h]
            )
            cost += segment_sum(self.tab_row, vals, c)
        if self.has_hard:
            viol = self.hard_base[:, None] + np.bincount(
                self.hard_row * k + labels[self.hard_dst], weights=self.hard_sign, minlength=c * k
            ).reshape(c, k)
            cost = np.where(viol == viol.min(axis=1, keepdims=True), cost, np.inf)
        return cost


def build_blocks(graph: PairwiseGraph) -> list[_Block]:
    """Independent sets of ``graph`` with their incident factors (one O(m) pass, cached
    on the graph)."""
    return graph.cache.get(BLOCKS, lambda: _blocks(graph))


def _blocks(graph: PairwiseGraph) -> list[_Block]:
    n, m = graph.n_nodes, graph.n_edges
    sets = graph.independent_sets()
    colour = np.empty(n, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    for c, members in enumerate(sets):  # loop over colour classes, not nodes
        colour[members] = c
        pos[members] = np.arange(members.shape[0])
    e = graph.edges
    src, dst = np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]]
    w, kind = np.r_[graph.weight, graph.weight], np.r_[graph.kind, graph.kind]
    first = np.r_[np.ones(m, bool), np.zeros(m, bool)]
    tables = graph.table_costs() if not graph.is_potts else None
    tpos = np.full(2 * m, -1, dtype=np.int64)
    if tables is not None:
        t_of_edge = np.full(m, -1, dtype=np.int64)
        t_of_edge[graph.edge_classes().table] = np.arange(tables.shape[0])
        tpos = np.r_[t_of_edge, t_of_edge]
    order = np.argsort(colour[src], kind="stable")
    cuts = np.searchsorted(colour[src][order], np.arange(len(sets) + 1))
    blocks = []
    for c, members in enumerate(sets):
        d = order[cuts[c]:cuts[c + 1]]
        tab = d[kind[d] == TABLE]
        blocks.append(_Block(
            members, pos[src[d]], dst[d], w[d], kind[d],
            tables[tpos[tab]] if tables is not None else None, first[tab],
        ))
    return blocks


def iterated_conditional_modes(unary: NDArray[Any], graph: PairwiseGraph, labels: NDArray[Any],
                               rng: np.random.Generator, max_iter: int = 100,
                               notify: Callable[..., Any] | None = None) -> tuple[np.ndarray, int, bool]:
    """ICM sweeps (Basu 2005, §4.4.4, eq. 4.11) from ``labels`` until no label changes.

    Each sweep visits the independent sets of :func:`build_blocks` in a random order
    (from ``rng``); a node takes the label minimising first its number of violated hard
    factors, then its conditional cost, and keeps its label unless another is strictly
    better. The energy never increases, and hard factors once honoured stay honoured.
    ``labels`` is not modified; ``notify(sweep, labels)`` runs after each sweep. Returns
    ``(labels, n_sweeps, converged)``, ``converged`` when a sweep changed nothing.
    """
    k = unary.shape[1]
    labels = np.array(labels, dtype=np.int64)
    blocks = build_blocks(graph)
    sweep = 0
    for sweep in range(1, int(max_iter) + 1):
        changed = 0
        for b in rng.permutation(len(blocks)):
            blk = blocks[b]
            cost = blk.conditional_costs(unary, labels, k)
            cur = labels[blk.members]
            best = np.argmin(cost, axis=1)
            rows = np.arange(blk.size)
            move = cost[rows, best] < cost[rows, cur]
            if move.any():
                labels[blk.members[move]] = best[move]
                changed += int(move.sum())
        if notify is not None:
            notify(sweep, labels)
        if changed == 0:
            return labels, sweep, True
    return labels, sweep, False


class ICM(InferenceEngine):
    """Iterated conditional modes (Basu 2005, §4.4.4, eq. 4.11).

    Parameters
    ----------
    max_iter : int, default=100
        Maximum number of sweeps over the constrained nodes.
    repair_restarts : int, default=10
        Further point orders the hard-constraint repair tries after its first (Notes).

    Notes
    -----
    Starts from ``init`` when given (EM passes the previous labels), otherwise from the
    unary argmin; reaches a local minimum only. If the sweeps stall with a hard factor
    broken, every component that breaks one is re-assigned greedily
    (:func:`~hmrf.inference.feasibility.greedy_repair`: COP-KMeans' assignment, most
    constrained nodes first, then up to ``repair_restarts`` squeaky-wheel orders) and the
    sweeps resume; if every order hits a dead end, :class:`~hmrf.InfeasibleError` names
    the point that could not be placed (``ExactMILP`` decides feasibility exactly).

    References
    ----------
    Besag (1986), "On the statistical analysis of dirty pictures". Basu (2005), §4.4.4.
    Wagstaff, Cardie, Rogers & Schroedl (2001), "Constrained k-means clustering with
    background knowledge", ICML (the greedy assignment of the repair). Joslin &
    Clements (1999), "Squeaky wheel optimization", JAIR 10 (its restart orders).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference import ICM
    >>> unary = np.array([[0.0, 3.0], [0.6, 0.5], [0.5, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], n=3, weight=2.0)
    >>> res = ICM().map(unary, c, rng=0)  # point 1 joins its must-link partner
    >>> res.labels.tolist(), round(res.energy, 2)
    ([0, 0, 1], 0.6)
    """

    monotone_from_init = True
    _parameter_constraints = {
        "max_iter": [Interval(Integral, 1, None)],
        "repair_restarts": [Interval(Integral, 0, None)],
    }

    def __init__(self, max_iter: int = 100, repair_restarts: int = 10) -> None:
        self.max_iter = max_iter
        self.repair_restarts = repair_restarts

    def _solve(self, unary, graph, init, rng, notify):
        start = np.argmin(unary, axis=1) if init is None else init
        labels, sweeps, converged = iterated_conditional_modes(unary, graph, start, rng, self.max_iter,
                                                               notify)
        repaired = False
        if violating_nodes(unary, graph, labels).size:
            labels = greedy_repair(unary, graph, labels, rng, self.repair_restarts)
            stuck = np.flatnonzero(labels < 0)
            if stuck.size:
                raise InfeasibleError(
                    "ICM left a hard constraint broken and no greedy re-assignment of its "
                    f"component ({1 + int(self.repair_restarts)} orders tried) could place this "
                    "point. The hard constraints may be infeasible (e.g. more mutually "
                    "cannot-linked points than clusters); ExactMILP decides feasibility exactly.",
                    point=int(stuck[0]),
                )
            repaired = True
            done = sweeps
            labels, more, converged = iterated_conditional_modes(
                unary, graph, labels, rng, self.max_iter, lambda it, y: notify(done + it, y))
            sweeps += more
        return Solution(labels, n_iter=sweeps, converged=converged, info={"repaired": repaired})
