"""The Kleinberg–Tardos LP of Basu (2005), Appendix A.2, stated in cvxpy.

The same program as :func:`hmrf.inference.lp.build_program`, written the way the
thesis writes it, so that users can add their own variables and constraints (e.g. a
cluster-size constraint ``cp.sum(u, axis=0) >= m``) and re-solve. cvxpy is imported
only when this module is used (``LPRelaxation(solver="cvxpy")``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from .._optional import load
from ..exceptions import InfeasibleError
from ..graph import PairwiseGraph

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["kt_problem", "solve_kt_cvxpy"]

def _cvxpy():
    """cvxpy, imported on first use; an ImportError with the install command without it."""
    return load("cvxpy", purpose="LPRelaxation(solver='cvxpy') (hmrf.inference.lp_cvxpy)",
                hint="or use solver='highs' (the same LP, solved by HiGHS through highspy)")


def kt_problem(unary: NDArray[Any], graph: PairwiseGraph) -> tuple[Any, Any]:
    """The relaxation A.1–A.8 as a ``cvxpy.Problem``.

    Returns ``(problem, u)``, ``u`` the ``cvxpy.Variable`` (n, k) of the fractional
    assignment (read ``u.value`` after ``problem.solve()``). Without cvxpy, an
    ImportError gives the install command.

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints, PairwiseGraph
    >>> from hmrf.inference.lp_cvxpy import kt_problem
    >>> g = PairwiseGraph.from_constraints(Constraints.from_pairs(must_link=[(0, 1)], n=2))
    >>> prob, u = kt_problem(np.array([[0.0, 1.0], [0.4, 0.0]]), g)
    >>> round(float(prob.solve()), 6)
    0.4
    """
    cp = _cvxpy()

    unary = np.asarray(unary, dtype=np.float64)
    n, k = unary.shape
    e, w = graph.edges, graph.weight
    ml, cl, hard_ml, hard_cl, tab = (np.flatnonzero(c) for c in graph.edge_classes().split())
    forbidden = np.isinf(unary)

    u = cp.Variable((n, k), nonneg=True, name="u")
    objective = cp.sum(cp.multiply(np.where(forbidden, 0.0, unary), u))  # Σ D(x_i, μ_h) u_ih
    cons = [cp.sum(u, axis=1) == 1, u <= np.where(forbidden, 0.0, 1.0)]  # A.2
    if ml.size:
        zm = cp.Variable((ml.size, k), nonneg=True, name="z_M")
        ua, ub = u[e[ml, 0], :], u[e[ml, 1], :]
        cons += [zm >= ua - ub, zm >= ub - ua]  # A.5, A.6
        objective += cp.sum(cp.multiply((w[ml] / 2.0)[:, None], zm))  # w_k u^(M)_k, A.4
    if cl.size:
        zc = cp.Variable((cl.size, k), nonneg=True, name="z_C")
        ua, ub = u[e[cl, 0], :], u[e[cl, 1], :]
        cons += [zc <= ua + ub, zc >= ua + ub - 1]  # A.7, A.8
        objective += cp.sum(cp.multiply(w[cl][:, None], zc))  # w_k u^(C)_k, A.4
    if hard_cl.size:
        cons.append(u[e[hard_cl, 0], :] + u[e[hard_cl, 1], :] <= 1)
    if hard_ml.size:
        cons.append(u[e[hard_ml, 0], :] == u[e[hard_ml, 1], :])
    if tab.size:
        costs = graph.table_costs()
        keep = w[tab] > 0
        tab, costs = tab[keep], costs[keep]
    if tab.size:
        inf_t = np.isinf(costs).reshape(tab.size, k * k)
        mu = cp.Variable((tab.size, k * k), nonneg=True, name="mu")  # mu[e, s*k + t]
        rows = np.kron(np.eye(k), np.ones((k, 1)))  # (k*k, k): sums over t
        cols = np.kron(np.ones((k, 1)), np.eye(k))  # (k*k, k): sums over s
        cons += [mu @ rows == u[e[tab, 0], :], mu @ cols == u[e[tab, 1], :], mu <= np.where(inf_t, 0.0, 1.0)]
        objective += cp.sum(cp.multiply(np.where(inf_t, 0.0, costs.reshape(tab.size, k * k)), mu))
    return cp.Problem(cp.Minimize(objective), cons), u


def solve_kt_cvxpy(unary: NDArray[np.floating], graph: PairwiseGraph,
                   solver: Any = None) -> tuple[np.ndarray, float, dict]:
    """Solve :func:`kt_problem`; returns ``(u, value, info)`` like the HiGHS solver.

    ``solver`` is passed to ``problem.solve`` (default: HiGHS if cvxpy has it).
    """
    cp = _cvxpy()

    t0 = time.perf_counter()
    prob, u = kt_problem(unary, graph)
    if solver is None and "HIGHS" in cp.installed_solvers():
        solver = "HIGHS"
    value = prob.solve(solver=solver)
    info = {"lp_time": time.perf_counter() - t0, "lp_status": prob.status, "solver": solver}
    if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        raise InfeasibleError(
            "the LP relaxation is infeasible: hard cannot-links and forbidden labels leave "
            "no fractional labelling, hence no labelling at all."
        )
    if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise RuntimeError(f"cvxpy could not solve the LP relaxation (status {prob.status}).")
    return np.clip(u.value, 0.0, 1.0), float(value), info
