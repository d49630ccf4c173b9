"""Exact E-step by mixed-integer programming (Basu 2005, Appendix A.2 with integrality).

The program of :func:`~hmrf.inference.lp.build_program` with ``u`` binary is exactly
the E-step: for binary ``u`` the optimal ``z^(M)``, ``z^(C)`` and ``mu`` are the
indicator values of eqs. A.3/A.4, so the program's optimum is the minimum energy.
HiGHS (``scipy.optimize.milp``) solves it by branch and cut, one batch of connected
components at a time (components are independent; small ones are batched so the
per-call overhead stays small).
"""

from __future__ import annotations

import time
from numbers import Real

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from .._params import Interval
from ..exceptions import InfeasibleError
from .base import InferenceEngine
from .lp import build_program, relax_and_round, solve_lp
from .polish import polish_labels
from .rounding import best_per_component

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
        Wall-clock seconds for the branch and cut of the whole call. If it runs out the
        engine is *anytime*: it returns the best labelling it has seen (see Notes) with
        ``converged=False`` and ``lower_bound`` = the proven bound.
    mip_rel_gap : float, default=1e-9
        Relative optimality gap at which HiGHS stops (HiGHS' default 1e-4 is not
        "exact"). HiGHS also stops at its absolute gap of 1e-6.

    Notes
    -----
    Intended for small problems (tens to a few hundred constrained points) and as the
    ground truth of tests and benchmarks; its cost can grow exponentially, mostly with
    cannot-links, whose LP relaxation is weak. ``lower_bound`` equals the optimum up to
    the gap when ``converged`` is True. Infeasible hard constraints (e.g. k+1 mutually
    hard-cannot-linked points) raise :class:`~hmrf.InfeasibleError`: this engine
    decides feasibility exactly.

    Anytime behaviour. ``scipy.optimize.milp`` takes no starting solution, so the warm
    start competes afterwards instead: for every batch of components that HiGHS did not
    solve to optimality, the candidates are the HiGHS incumbent (if any), ICM from it,
    ICM from the warm start (``init``, or the unary argmin without one) and, when HiGHS
    found no incumbent, Kleinberg–Tardos rounding with ICM polish
    (:func:`~hmrf.inference.lp.relax_and_round`). Each connected component takes the
    cheapest candidate there (:func:`~hmrf.inference.rounding.best_per_component`), so
    the result is never worse than the warm start, the rounding or the incumbent. The
    bound is HiGHS' dual bound, or the LP value where the LP was solved (no incumbent,
    or a stop before the root relaxation) and is higher. These finishing steps run
    after the limit (ICM sweeps, and the LP when it is needed).

    References
    ----------
    Basu (2005), Appendix A.2 (eqs. A.1–A.8 with u, z binary).

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

    def __init__(self, time_limit=60.0, mip_rel_gap=1e-9):
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap

    def _solve(self, unary, graph, init, rng, notify):
        t0 = time.perf_counter()
        n, k = unary.shape
        n_comp, comp = graph.components()
        labels = np.full(n, -1, dtype=np.int64)
        bound, converged, nodes_explored, fallback, anytime = 0.0, True, 0, 0, 0
        batches = _batches(comp, n_comp)
        for b, nodes in enumerate(batches):
            sub = graph.subgraph(nodes)
            remaining = float(self.time_limit) - (time.perf_counter() - t0)
            res = None
            if remaining > 0.01:
                res = _solve_milp(unary[nodes], sub, remaining, float(self.mip_rel_gap))
            if res is not None:
                nodes_explored += int(getattr(res, "mip_node_count", 0) or 0)
                if res.status == 2:
                    raise InfeasibleError(
                        "the hard constraints of this point's connected component cannot all "
                        "hold (no labelling of finite energy exists).",
                        point=_infeasible_point(unary, graph, nodes, comp),
                    )
            if res is not None and res.status == 0:
                labels[nodes] = _labels_of(res, unary[nodes])
                bound += _dual_bound(res)
            else:
                warm = None if init is None else init[nodes]
                part, part_bound, lp_used = _anytime_best(unary[nodes], sub, res, warm, rng)
                labels[nodes] = part
                bound += part_bound
                converged = False
                anytime += 1
                fallback += nodes.size if lp_used else 0
            notify(b + 1, np.where(labels >= 0, labels, np.argmin(unary, axis=1)), None)
        info = {"mip_nodes": nodes_explored, "n_components": n_comp, "fallback_nodes": fallback,
                "anytime_batches": anytime}
        return {"labels": labels, "lower_bound": bound, "n_iter": len(batches),
                "converged": converged, "info": info}


def _solve_milp(unary, graph, time_limit, gap):
    """HiGHS on the program of :func:`~hmrf.inference.lp.build_program` with binary ``u``."""
    prog = build_program(unary, graph)
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


def _anytime_best(unary, graph, res, warm, rng) -> tuple[np.ndarray, float, bool]:
    """The best labelling seen for a batch HiGHS did not finish (ExactMILP Notes).

    Returns the labels, a lower bound and whether the LP fallback ran.
    """
    start = np.argmin(unary, axis=1) if warm is None else warm
    cands = [polish_labels(unary, graph, start, rng)[0]]
    incumbent = None if res is None or res.x is None else _labels_of(res, unary)
    bound = -np.inf if res is None else _dual_bound(res)
    if incumbent is not None:
        cands += [incumbent, polish_labels(unary, graph, incumbent, rng)[0]]
        if not np.isfinite(bound):  # stopped before the root LP: solve it for a bound
            bound = solve_lp(unary, graph)[1]
    else:
        lp = relax_and_round(unary, graph, rng, n_rounds=10, polish="icm", init=warm)
        cands.append(lp["labels"])
        bound = max(bound, lp["lower_bound"])
    n_comp, comp = graph.components()
    labels, _ = best_per_component(unary, graph, np.array(cands), comp, n_comp)
    return labels, float(bound), incumbent is None
