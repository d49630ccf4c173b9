"""Iterated conditional modes (Besag 1986), the E-step of HMRF-KMeans (Basu 2005, §4.4.4).

Each node in turn takes the label minimising its contribution to the objective given
its neighbours' current labels (eq. 4.11); sweeps repeat in random order until no
label changes. Every update is an exact coordinate minimisation, so the energy never
increases.

Vectorisation without changing the algorithm: nodes with no factor between them do not
influence each other's conditional cost, so updating an independent set at once gives
the same result as updating its members one after another in any order. We split the
constrained nodes into independent sets once per call (Luby's random-priority rounds,
vectorised over edges) and visit the sets in a fresh random order every sweep. Each set
update costs O(k) per incident Potts edge and O(k) per incident table edge.
"""

from __future__ import annotations

import numpy as np

from ..graph import POTTS_CL, POTTS_ML, TABLE, PairwiseGraph, segment_sum
from .base import InferenceEngine

__all__ = ["ICM", "independent_sets"]


def independent_sets(n_nodes: int, edges: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Partition nodes into independent sets (a proper colouring), Luby-style.

    Every round selects the remaining nodes whose random priority beats all their
    remaining neighbours'; at least the top-priority node is selected, so it ends.
    """
    prio = rng.permutation(n_nodes)
    src = np.r_[edges[:, 0], edges[:, 1]]
    dst = np.r_[edges[:, 1], edges[:, 0]]
    remaining = np.ones(n_nodes, dtype=bool)
    sets = []
    while remaining.any():
        live = remaining[src] & remaining[dst]
        best_neighbor = np.full(n_nodes, -1, dtype=np.int64)
        np.maximum.at(best_neighbor, src[live], prio[dst[live]])
        chosen = remaining & (prio > best_neighbor)
        sets.append(np.flatnonzero(chosen))
        remaining &= ~chosen
        keep = remaining[src] & remaining[dst]  # drop edges that can no longer matter
        src, dst = src[keep], dst[keep]
    return sets


class _DirectedFactors:
    """Factors incident to one independent set, as directed (member -> neighbour) arrays."""

    def __init__(self, members, graph: PairwiseGraph, tables):
        n = graph.n_nodes
        pos = np.full(n, -1, dtype=np.int64)
        pos[members] = np.arange(members.shape[0])
        e, w, kind = graph.edges, graph.weight, graph.kind
        self.size = members.shape[0]
        self.members = members
        # Potts: both directions of every edge whose source is a member
        src = np.r_[e[:, 0], e[:, 1]]
        dst = np.r_[e[:, 1], e[:, 0]]
        ww = np.r_[w, w]
        kk = np.r_[kind, kind]
        mine = pos[src] >= 0
        soft = mine & np.isfinite(ww) & (kk != TABLE)
        # ML: w [h != y_j] = w - w [h == y_j];  CL: w [h == y_j]
        self.soft_row = pos[src[soft]]
        self.soft_dst = dst[soft]
        self.soft_val = np.where(kk[soft] == POTTS_ML, -ww[soft], ww[soft])
        self.base = np.zeros(self.size)
        ml_soft = soft & (kk == POTTS_ML)
        np.add.at(self.base, pos[src[ml_soft]], ww[ml_soft])
        hard = mine & np.isinf(ww) & (kk != TABLE)
        # After hard-must-link contraction only hard cannot-links remain, but keep both
        # kinds correct for direct calls: violations counted lexicographically first.
        self.hard_row = pos[src[hard]]
        self.hard_dst = dst[hard]
        self.hard_sign = np.where(kk[hard] == POTTS_ML, -1.0, 1.0)
        self.hard_base = np.zeros(self.size)
        hml = hard & (kk == POTTS_ML)
        np.add.at(self.hard_base, pos[src[hml]], 1.0)
        self.has_hard = bool(hard.any())
        # Tables: as first endpoint the member indexes rows, as second it indexes columns
        tab = np.flatnonzero(kind == TABLE)
        if tab.size:
            tpos = np.full(graph.n_edges, -1, dtype=np.int64)
            tpos[tab] = np.arange(tab.size)
            first = tab[pos[e[tab, 0]] >= 0]
            second = tab[pos[e[tab, 1]] >= 0]
            self.tab_row = np.r_[pos[e[first, 0]], pos[e[second, 1]]]
            self.tab_dst = np.r_[e[first, 1], e[second, 0]]
            self.tab_first = np.r_[np.ones(first.size, bool), np.zeros(second.size, bool)]
            self.tab_cost = tables[np.r_[tpos[first], tpos[second]]]
        else:
            self.tab_row = np.empty(0, dtype=np.int64)

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
                self.tab_cost[idx, :, yj],  # T[h, y_j]
                self.tab_cost[idx, yj, :],  # T[y_j, h]
            )
            cost += segment_sum(self.tab_row, vals, c)
        if self.has_hard:
            viol = self.hard_base[:, None] + np.bincount(
                self.hard_row * k + labels[self.hard_dst], weights=self.hard_sign, minlength=c * k
            ).reshape(c, k)
            cost = np.where(viol == viol.min(axis=1, keepdims=True), cost, np.inf)
        return cost


class ICM(InferenceEngine):
    """Iterated conditional modes (Basu 2005, §4.4.4, eq. 4.11).

    Parameters
    ----------
    max_iter : int, default=100
        Maximum number of sweeps over the constrained nodes.

    Notes
    -----
    Starts from ``init`` when given (EM passes the previous labels), otherwise from the
    unary argmin. A node keeps its label unless another label is strictly cheaper, so
    sweeps cannot cycle and the energy is non-increasing. Hard constraints are handled
    lexicographically: a node first minimises the number of hard violations, then the
    soft cost. ICM reaches a local minimum only; use the global engines for better
    optima on hard instances.

    References
    ----------
    Besag (1986), "On the statistical analysis of dirty pictures". Basu (2005), §4.4.4.

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference import ICM
    >>> unary = np.array([[0.0, 1.0], [1.0, 0.2], [0.5, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], n=3, weight=2.0)
    >>> ICM().map(unary, c, rng=0).labels.tolist()
    [0, 0, 1]
    """

    monotone_from_init = True

    def __init__(self, max_iter: int = 100):
        self.max_iter = max_iter

    def _solve(self, unary, graph, init, rng, notify):
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1; got {self.max_iter}.")
        n, k = unary.shape
        labels = np.argmin(unary, axis=1) if init is None else np.array(init, dtype=np.int64)
        tables = graph.table_costs() if not graph.is_potts else None
        blocks = [_DirectedFactors(s, graph, tables) for s in independent_sets(n, graph.edges, rng)]
        converged = False
        sweep = 0
        for sweep in range(1, int(self.max_iter) + 1):
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
            notify(sweep, labels)
            if changed == 0:
                converged = True
                break
        return {"labels": labels, "n_iter": sweep, "converged": converged}
