"""Exact E-step by mixed-integer programming (Basu 2005, Appendix A.2 with integrality).

For binary ``u`` the optimal ``z^(M)``, ``z^(C)`` and ``mu`` of
:func:`~hmrf.inference.lp.build_program` are the indicators of eqs. A.3/A.4, so the
program's optimum is the minimum energy. HiGHS (``scipy.optimize.milp``) solves it by
branch and cut, one batch of connected components at a time.
"""

from __future__ import annotations

import time
from numbers import Real

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from .._validation import Interval
from ..exceptions import ConstraintSearchError, InfeasibleError
from .base import InferenceEngine, Solution
from .feasibility import violating_nodes
from .lp import build_program, solve_relaxation
from .polish import polish_labels

__all__ = ["ExactMILP"]

#: components are grouped into MILPs of at least this many nodes (large ones go alone)
BATCH_NODES = 64


def _batches(comp: np.ndarray, n_comp: int) -> list[np.ndarray]:
    """Node sets of component batches (largest components first)."""
    order = np.argsort(comp, kind="stable")
    bounds = np.searchsorted(comp[order], np.arange(n_comp + 1))
    sizes = np.diff(bounds)
    batches, current, count = [], [], 0
    for c in np.argsort(-sizes, kind="stable"):  # a loop over components, not nodes
        current.append(order[bounds[c]:bounds[c + 1]])
        count += sizes[c]
        if count >= BATCH_NODES:
            batches.append(np.sort(np.concatenate(current)))
            current, count = [], 0
    if current:
        batches.append(np.sort(np.concatenate(current)))
    return batches


class ExactMILP(InferenceEngine):
    """Exact MAP labelling of the E-step by integer programming (HiGHS branch and cut).

    Parameters
    ----------
    time_limit : float, default=60.0
        Seconds of HiGHS' branch and cut over the whole call; when it runs out the
        result is the best labelling found, ``converged=False``, the proven bound.
    mip_rel_gap : float, default=1e-9
        Relative optimality gap at which HiGHS stops (its own default 1e-4 is not exact).

    Notes
    -----
    The program of :func:`~hmrf.inference.lp.build_program` with binary ``u`` and the
    triangle inequalities of its frustrated triangles (``cycles=True``: same optimum,
    much tighter relaxation). For small problems and as the ground truth of tests; its
    cost can grow exponentially with cannot-links. Infeasible hard constraints raise
    :class:`~hmrf.InfeasibleError`: this engine decides feasibility exactly. When
    ``time_limit`` runs out before a labelling that keeps every hard constraint is found
    (neither HiGHS nor the warm start has one) and before infeasibility is proved, it
    raises :class:`~hmrf.ConstraintSearchError`.

    Anytime: the warm start is the ``"auto"`` engine's labelling and ``init``, each
    polished by ICM, the cheaper in every component; on a batch HiGHS does not solve to
    optimality the result is the cheaper of the warm start and HiGHS' incumbent, so the
    energy never increases with ``time_limit``. The bound is the larger of HiGHS' dual
    bound and the strengthened LP's value. ``info`` holds ``warm_energy``,
    ``highs_incumbents``, ``mip_nodes`` and ``anytime_batches``.

    References
    ----------
    Basu (2005), Appendix A.2 (eqs. A.1–A.8 with u, z binary); Sontag & Jaakkola (2007),
    NIPS; Barahona & Mahjoub (1986), Math. Programming 36.

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference import ExactMILP
    >>> unary = np.array([[0.0, 1.0], [1.0, 0.2], [0.5, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(1, 2)], n=3, weight=2.0)
    >>> res = ExactMILP().map(unary, c)
    >>> res.labels.tolist(), round(res.energy, 6)
    ([0, 0, 1], 1.0)
    """

    monotone_from_init = True
    _parameter_constraints = {
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "mip_rel_gap": [Interval(Real, 0, 1, closed="left")],
    }

    def __init__(self, time_limit: float = 60.0, mip_rel_gap: float = 1e-9) -> None:
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap

    def _solve(self, unary, graph, init, rng, notify):
        n, k = unary.shape
        n_comp, comp = graph.components()
        warm = _warm_start(unary, graph, init, rng)
        labels = np.full(n, -1, dtype=np.int64)
        bound, converged, nodes_explored, anytime, kept = 0.0, True, 0, 0, 0
        spent = 0.0  # seconds of branch and cut so far
        batches = _batches(comp, n_comp)
        for b, nodes in enumerate(batches):
            sub = graph.subgraph(nodes)
            remaining = float(self.time_limit) - spent
            res = None
            if remaining > 0.01:
                t0 = time.perf_counter()
                res = _solve_milp(unary[nodes], sub, remaining, float(self.mip_rel_gap))
                spent += time.perf_counter() - t0
            if res is not None:
                nodes_explored += int(getattr(res, "mip_node_count", 0) or 0)
                if res.status == 2:
                    raise InfeasibleError(
                        "the hard constraints of this point's connected component cannot all "
                        "hold (no labelling of finite energy exists).",
                        point=_infeasible_point(unary, graph, nodes, comp),
                    )
            incumbent = None if res is None or res.x is None else _labels_of(res, unary[nodes])
            if res is not None and res.status == 0:
                labels[nodes] = incumbent
                bound += _dual_bound(res)
                kept += 1
                continue
            converged = False
            anytime += 1
            u, w = unary[nodes], warm[nodes]
            if incumbent is not None and sub.energy(incumbent, u) < sub.energy(w, u):
                labels[nodes], kept = incumbent, kept + 1
            else:
                labels[nodes] = w
            if violating_nodes(u, sub, labels[nodes]).size:
                raise ConstraintSearchError(
                    f"ExactMILP's time_limit ({self.time_limit:g} s) ran out on a batch of "
                    f"{nodes.size} constrained (super-)nodes with neither a labelling that keeps "
                    "every hard constraint nor a proof that none exists: give a longer "
                    "time_limit, fewer hard constraints or more clusters.")
            # HiGHS' bound, or the LP's where HiGHS stopped before (or soon after) its root
            db = -np.inf if res is None else _dual_bound(res)
            bound += max(db, solve_relaxation(build_program(u, sub, cycles=True))[1])
            notify(b + 1, np.where(labels >= 0, labels, warm), None)
        info = {"mip_nodes": nodes_explored, "n_components": n_comp, "anytime_batches": anytime,
                "highs_incumbents": kept, "warm_energy": float(graph.energy(warm, unary))}
        return Solution(labels, lower_bound=bound, n_iter=len(batches), converged=converged, info=info)


def _warm_start(unary, graph, init, rng) -> np.ndarray:
    """The warm start of the Notes: ``"auto"`` (or BP) and ``init``, each polished by ICM,
    the cheaper per connected component."""
    from .auto import AutoEngine

    try:
        start = AutoEngine().map(unary, graph, rng=rng).labels
    except InfeasibleError:  # the heuristic found no feasible labelling: HiGHS decides
        start = np.argmin(unary, axis=1)
    cands = [polish_labels(unary, graph, start, rng)[0]]
    if init is not None:
        cands.append(polish_labels(unary, graph, init, rng)[0])
    return graph.best_per_component(unary, np.array(cands))[0]


def _solve_milp(unary, graph, time_limit, gap):
    """HiGHS on the program of :func:`~hmrf.inference.lp.build_program` with binary ``u``."""
    prog = build_program(unary, graph, cycles=True)
    cons = [LinearConstraint(prog.A_eq, prog.b_eq, prog.b_eq)]
    if prog.A_ub.shape[0]:
        cons.append(LinearConstraint(prog.A_ub, -np.inf, prog.b_ub))
    integrality = np.zeros(prog.c.shape[0])
    integrality[:prog.n_u] = 1
    res = milp(prog.c, integrality=integrality, bounds=Bounds(prog.lb, prog.ub), constraints=cons,
               options={"time_limit": time_limit, "mip_rel_gap": gap, "disp": False})
    if res.status not in (0, 1, 2):
        raise RuntimeError(f"HiGHS could not solve the MILP: {res.message}")
    return res


def _infeasible_point(unary, graph, nodes, comp) -> int:
    """First node of the first infeasible component in a batch HiGHS found infeasible
    (components are solved one by one only on this rare path)."""
    parts = np.unique(comp[nodes])
    if parts.size > 1:
        for c in parts:  # a loop over the batch's components
            members = np.flatnonzero(comp == c)
            if _solve_milp(unary[members], graph.subgraph(members), np.inf, 1e-4).status == 2:
                return int(members[0])
    return int(nodes[0])


def _labels_of(res, unary) -> np.ndarray:
    n, k = unary.shape
    return np.argmax(np.asarray(res.x[: n * k]).reshape(n, k), axis=1)


def _dual_bound(res) -> float:
    """HiGHS' proven bound (never above the incumbent's value)."""
    db = getattr(res, "mip_dual_bound", None)
    if db is None or not np.isfinite(db):
        return float(res.fun) if res.status == 0 else -np.inf
    return float(min(db, res.fun)) if res.x is not None else float(db)
