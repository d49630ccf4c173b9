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

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from ..exceptions import InfeasibleError
from .base import InferenceEngine
from .lp import LPRelaxation, build_program

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
        Wall-clock seconds for the whole call. If it runs out, the best labelling found
        is returned with ``converged=False`` and ``lower_bound`` = the proven MIP dual
        bound; batches not started (or without an incumbent) fall back to
        :class:`~hmrf.inference.LPRelaxation` with ICM polish and the LP bound.
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

    def __init__(self, time_limit=60.0, mip_rel_gap=1e-9):
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap

    def _solve(self, unary, graph, init, rng, notify):
        limit = float(self.time_limit)
        if not limit > 0:
            raise ValueError(f"time_limit must be > 0; got {self.time_limit}.")
        gap = float(self.mip_rel_gap)
        if not 0 <= gap < 1:
            raise ValueError(f"mip_rel_gap must be in [0, 1); got {self.mip_rel_gap}.")
        t0 = time.perf_counter()
        n, k = unary.shape
        n_comp, comp = graph.components()
        labels = np.full(n, -1, dtype=np.int64)
        bound, converged, nodes_explored, fallback = 0.0, True, 0, 0
        batches = _batches(comp, n_comp)
        for b, nodes in enumerate(batches):
            sub = graph.subgraph(nodes)
            remaining = limit - (time.perf_counter() - t0)
            res = None
            if remaining > 0.01:
                prog = build_program(unary[nodes], sub)
                cons = [LinearConstraint(prog.A_eq, prog.b_eq, prog.b_eq)]
                if prog.A_ub.shape[0]:
                    cons.append(LinearConstraint(prog.A_ub, -np.inf, prog.b_ub))
                integrality = np.zeros(prog.c.shape[0])
                integrality[:prog.n_u] = 1
                res = milp(prog.c, integrality=integrality, bounds=Bounds(prog.lb, prog.ub),
                           constraints=cons,
                           options={"time_limit": remaining, "mip_rel_gap": gap, "disp": False})
                if res.status == 2:
                    raise InfeasibleError(
                        "the hard constraints of this point's connected component cannot all "
                        "hold (no labelling of finite energy exists).",
                        point=int(nodes[0]),
                    )
                if res.status not in (0, 1):
                    raise RuntimeError(f"HiGHS could not solve the MILP: {res.message}")
                nodes_explored += int(getattr(res, "mip_node_count", 0) or 0)
            if res is not None and res.x is not None:
                labels[nodes] = np.argmax(prog.u(res.x), axis=1)
                db = getattr(res, "mip_dual_bound", None)
                bound += float(res.fun if db is None or not np.isfinite(db) else min(db, res.fun))
                converged &= res.status == 0
            else:  # out of time before an incumbent: LP rounding with polish, LP bound
                fb = LPRelaxation(n_rounds=10, polish="icm")._solve(
                    unary[nodes], sub, None, rng, lambda *a, **kw: None)
                labels[nodes] = fb["labels"]
                db = None if res is None else getattr(res, "mip_dual_bound", None)
                lpb = fb["lower_bound"]
                bound += float(lpb if db is None or not np.isfinite(db) else max(db, lpb))
                converged = False
                fallback += nodes.size
            notify(b + 1, np.where(labels >= 0, labels, np.argmin(unary, axis=1)), None)
        info = {"mip_nodes": nodes_explored, "n_components": n_comp, "fallback_nodes": fallback}
        return {"labels": labels, "lower_bound": bound, "n_iter": len(batches),
                "converged": converged, "info": info}
