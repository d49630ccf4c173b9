"""Greedy feasible assignment: the assignment step of COP-KMeans (Wagstaff et al. 2001).

Nodes are visited once; each takes its cheapest label that violates no hard factor with
the nodes already placed (Basu 2005, §2.3.3). If no label is legal the
algorithm aborts with :class:`~hmrf.InfeasibleError` naming the point, as COP-KMeans
does. Soft factors are ignored: COP-KMeans treats every constraint as hard.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import InfeasibleError
from ..graph import POTTS_CL, POTTS_ML
from .base import InferenceEngine

__all__ = ["GreedyFeasible"]


class GreedyFeasible(InferenceEngine):
    """One pass of constraint-respecting greedy assignment (COP-KMeans' E-step).

    Notes
    -----
    Only hard Potts factors are enforced. Wagstaff et al. visit points in data order;
    we visit the constrained nodes with the most hard constraints first (ties in random
    order), a static DSATUR-style order that makes greedy dead ends, and hence aborts
    on feasible problems, much rarer (unconstrained points are order-independent).
    Hard must-link components arrive contracted into one node whose cost is the sum of
    its members' costs (the base class's exact reduction), so a component moves as a
    unit; Wagstaff et al. instead let the first
    member visited decide, which can only give a higher summed cost. Only nodes with
    constraints reach the Python loop below (it is inherently sequential); everything
    else is a vectorised argmin.

    Raises
    ------
    InfeasibleError
        When a node has no label compatible with its already-placed neighbours.
    """

    def _solve(self, unary, graph, init, rng, notify):
        n, k = unary.shape
        hard = np.isinf(graph.weight) & ((graph.kind == POTTS_CL) | (graph.kind == POTTS_ML))
        e = graph.edges[hard]
        kind = graph.kind[hard]
        src = np.r_[e[:, 0], e[:, 1]]
        dst = np.r_[e[:, 1], e[:, 0]]
        kk = np.r_[kind, kind]
        order = np.argsort(src, kind="stable")
        src, dst, kk = src[order], dst[order], kk[order]
        start = np.searchsorted(src, np.arange(n + 1))
        labels = np.full(n, -1, dtype=np.int64)
        ranking = np.argsort(unary, axis=1, kind="stable")
        # most-constrained first (ties in random order) makes spurious aborts rarer
        degree = np.diff(start)
        visit = np.lexsort((rng.random(n), -degree))
        for i in visit:
            nb = dst[start[i]:start[i + 1]]
            nk = kk[start[i]:start[i + 1]]
            placed = labels[nb] >= 0
            allowed = np.isfinite(unary[i])
            allowed[labels[nb[placed & (nk == POTTS_CL)]]] = False
            must = np.unique(labels[nb[placed & (nk == POTTS_ML)]])
            if must.size:
                only = np.zeros(k, dtype=bool)
                if must.size == 1:
                    only[must] = True
                allowed &= only
            legal = ranking[i][allowed[ranking[i]]]
            if legal.size == 0:
                raise InfeasibleError(
                    "no cluster can take it without violating a hard constraint with the "
                    "points already assigned (COP-KMeans aborts here)",
                    point=int(i),
                )
            labels[i] = legal[0]
        notify(1, labels)
        return {"labels": labels, "n_iter": 1, "converged": True}
