"""Greedy feasible assignment: the assignment step of COP-KMeans (Wagstaff et al. 2001).

Nodes are visited once; each takes its cheapest label that violates no hard factor with
the nodes already placed (Basu 2005, §2.3.3). If no label is legal the algorithm aborts
with :class:`~hmrf.InfeasibleError` naming the point, as COP-KMeans does. Soft factors
are ignored: COP-KMeans treats every constraint as hard. Two optional next steps for a
dead end are offered: restarts in other point orders, and an exact repair by
:class:`~hmrf.inference.ExactMILP`.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np

from .._validation import Interval, Options
from ..exceptions import InfeasibleError
from ..graph import PairwiseGraph
from .base import InferenceEngine, Solution
from .feasibility import HardFactors, greedy_with_restarts
from .milp import ExactMILP

if TYPE_CHECKING:
    from typing import Literal

__all__ = ["GreedyFeasible", "METHODS"]

#: what produced a labelling, from the paper's algorithm to the exact repair
METHODS = ("greedy", "restarts", "milp")


class GreedyFeasible(InferenceEngine):
    """Constraint-respecting greedy assignment (COP-KMeans' E-step), with optional repair.

    Parameters
    ----------
    n_restarts : int, default=0
        When the pass hits a dead end, re-assign the connected components that contain
        one in up to this many other point orders (squeaky wheel: the points that hit
        dead ends first; :func:`~hmrf.inference.feasibility.greedy_with_restarts`). 0 is
        Wagstaff et al.'s algorithm: abort at the first dead end.
    repair : {None, "milp"}, default=None
        ``"milp"``: components still at a dead end after the restarts are solved
        exactly by :class:`~hmrf.inference.ExactMILP` on their hard factors (the
        cheapest labelling that honours them all), which also proves infeasibility.
    time_limit : float, default=60.0
        Seconds for the MILP repair of one E-step (see :class:`ExactMILP`).

    Notes
    -----
    Only hard factors are enforced (hard Potts edges, infinite table entries, forbidden
    labels). Wagstaff et al. visit points in data order; the first pass visits the
    constrained nodes with the most hard constraints first (ties in random order), a
    static DSATUR-style order that makes greedy dead ends, and hence aborts on feasible
    problems, much rarer (unconstrained points are order-independent). Hard must-link
    components arrive contracted into one node whose cost is the sum of its members'
    costs (the base class's exact reduction), so a component moves as a unit; Wagstaff
    et al. instead let the first member visited decide, which can only give a higher
    summed cost. Only nodes with constraints reach the Python loop (it is inherently
    sequential); everything else is a vectorised argmin.

    ``result.info["method"]`` says what produced the labels: ``"greedy"`` (the first
    pass), ``"restarts"`` (a later point order) or ``"milp"`` (the exact repair).

    Raises
    ------
    InfeasibleError
        A node with no label compatible with its already-placed neighbours, after the
        restarts and without the MILP repair; or, with ``repair="milp"``, hard
        constraints that no labelling can satisfy.

    References
    ----------
    Wagstaff, Cardie, Rogers & Schroedl (2001), "Constrained k-means clustering with
    background knowledge", ICML, Table 1. Basu (2005), §2.3.3. Joslin & Clements
    (1999), "Squeaky wheel optimization", JAIR 10 (the restart orders).
    """

    _parameter_constraints = {
        "n_restarts": [Interval(Integral, 0, None)],
        "repair": [Options(None, "milp")],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, n_restarts: int = 0, repair: Literal["milp"] | None = None,
                 time_limit: float = 60.0) -> None:
        self.n_restarts = n_restarts
        self.repair = repair
        self.time_limit = time_limit

    def _solve(self, unary, graph, init, rng, notify):
        n, k = unary.shape
        _, comp = graph.components()
        labels, restarts, order = greedy_with_restarts(
            unary, HardFactors(graph, k), comp, np.arange(n), rng, self.n_restarts)
        method = "restarts" if restarts else "greedy"
        if (labels < 0).any() and self.repair == "milp":
            nodes = np.flatnonzero(np.isin(comp, np.unique(comp[labels < 0])))
            labels[nodes] = self._exact(unary[nodes], graph.subgraph(nodes), nodes, rng)
            method = "milp"
        if (labels < 0).any():
            first = order[np.flatnonzero(labels[order] < 0)[0]]
            tried = "" if restarts == 0 else f" (and in {restarts} other point orders)"
            raise InfeasibleError(
                "no cluster can take it without violating a hard constraint with the points "
                f"already assigned{tried}; COP-KMeans aborts here. The constraints may still be "
                "satisfiable: try GreedyFeasible(n_restarts=10) or GreedyFeasible(repair='milp').",
                point=int(first),
            )
        notify(1, labels)
        return Solution(labels, n_iter=1 + restarts, converged=True,
                        info={"method": method, "restarts": restarts})

    def _exact(self, unary, sub: PairwiseGraph, nodes, rng) -> np.ndarray:
        """The MILP repair: the cheapest labelling honouring the hard factors of ``sub``."""
        cls = sub.edge_classes()
        keep = cls.hard | cls.table
        hard_only = PairwiseGraph(sub.n_nodes, sub.edges[keep], sub.weight[keep], sub.kind[keep],
                                  sub.tables, None if sub.table_index is None else sub.table_index[keep])
        try:  # inputs reduced and checked by this engine's own call, ExactMILP's time limit here
            return ExactMILP(time_limit=self.time_limit).solve_validated(unary, hard_only, None, rng).labels
        except InfeasibleError as exc:
            point = int(nodes[exc.point]) if exc.point is not None else int(nodes[0])
            raise InfeasibleError(
                "the hard constraints of this point's component cannot all hold: ExactMILP "
                "proves that no labelling satisfies them.",
                point=point,
            ) from None

