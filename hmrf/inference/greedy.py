"""Greedy feasible assignment: the assignment step of COP-KMeans (Wagstaff et al. 2001).

Nodes are visited once; each takes its cheapest label that violates no hard factor with
the nodes already placed (Basu 2005, §2.3.3); a dead end raises
:class:`~hmrf.InfeasibleError` naming the point. Soft factors are ignored.
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
        Other point orders for the components at a dead end
        (:func:`~hmrf.inference.feasibility.greedy_with_restarts`); 0 aborts at the
        first dead end, as Wagstaff et al.'s algorithm does (in its own node order, Notes).
    repair : {None, "milp"}, default=None
        ``"milp"``: components still at a dead end are solved exactly on their hard
        factors by :class:`~hmrf.inference.ExactMILP`, which also proves infeasibility.
    time_limit : float, default=60.0
        Seconds for the MILP repair of one E-step (see :class:`ExactMILP`).

    Notes
    -----
    Only hard factors are enforced (hard Potts edges, infinite table entries, forbidden
    labels). The first pass visits the constrained nodes with the most hard constraints
    first (a static DSATUR-style order; Wagstaff et al. use data order), which makes dead
    ends on feasible problems much rarer. Hard must-link components arrive contracted, so
    a component moves as a unit at its summed cost. ``result.info["method"]`` is one of
    :data:`METHODS`: ``"greedy"`` (the first pass), ``"restarts"`` or ``"milp"``.

    Raises
    ------
    InfeasibleError
        A node with no label compatible with its placed neighbours after the restarts
        (without the MILP repair), or hard constraints no labelling satisfies.
    ConstraintSearchError
        With ``repair="milp"``: the MILP's time limit ran out before it found a labelling
        or proved there is none.

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

