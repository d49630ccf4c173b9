"""The Kleinberg–Tardos linear program of the E-step (Basu 2005, Appendix A.2, eqs. A.1–A.8).

Variables (all in [0, 1] or >= 0 in the relaxation, binary in the integer program):

* ``u[i, h]`` — point i is in cluster h;
* ``z^(M)[e, h]`` for each soft must-link ``e = (a, b)``;
* ``z^(C)[e, h]`` for each soft cannot-link;
* ``mu[e, s, t]`` for each table edge (the standard local-polytope pairwise marginals).

Program::

    min  Σ_i Σ_h U[i,h] u[i,h] + Σ_ML (w_e / 2) Σ_h z^(M)[e,h] + Σ_CL w_e Σ_h z^(C)[e,h]
         + Σ_table Σ_{s,t} C_e[s,t] mu[e,s,t]                                  (A.1, A.4)
    s.t. Σ_h u[i,h] = 1                                                        (A.2)
         z^(M)[e,h] >= u[a,h] - u[b,h]                                         (A.5)
         z^(M)[e,h] >= u[b,h] - u[a,h]                                         (A.6)
         z^(C)[e,h] <= u[a,h] + u[b,h]                                         (A.7)
         z^(C)[e,h] >= u[a,h] + u[b,h] - 1                                     (A.8)
         Σ_t mu[e,s,t] = u[a,s],  Σ_s mu[e,s,t] = u[b,t]    (table edges, local polytope)
         u[a,h] + u[b,h] <= 1                 (hard cannot-links, w = inf: never violated)
         u[i,h] = 0 where U[i,h] = inf,  mu[e,s,t] = 0 where C_e[s,t] = inf

(A.7) is implied at the optimum (z^(C) is minimised and w >= 0) and is kept only so
that the program is the thesis's, line for line. Zero-weight factors are dropped. With
binary ``u`` the program's value is exactly the E-step energy, so
:class:`~hmrf.inference.ExactMILP` solves it with integrality and
:class:`~hmrf.inference.LPRelaxation` solves its relaxation, whose value is a lower
bound on every labelling's energy.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .._optional import load
from .._validation import Interval, Options, validate_params
from ..exceptions import InfeasibleError
from ..graph import CacheKey, PairwiseGraph
from .base import InferenceEngine, Solution
from .feasibility import HardFactors, constrained_first_order, greedy_assign
from .polish import POLISH, check_polish, finish, polish_labels
from .rounding import kleinberg_tardos_rounding

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    from numpy.typing import NDArray

__all__ = ["KTProgram", "build_program", "frustrated_triangles", "solve_relaxation", "solve_lp",
           "relax_and_round", "LPRelaxation"]

#: the relaxation of a graph loaded into HiGHS, kept on the graph across E-steps (its
#: constraints depend on the graph alone; the unary costs change): see ``_HighsLP``
RELAXATION = CacheKey("lp.relaxation")


@dataclass
class KTProgram:
    """The program above as sparse matrices: ``min c x`` s.t. ``A_ub x <= b_ub``,
    ``A_eq x = b_eq``, ``lb <= x <= ub``. ``x[:n*k]`` is ``u`` in row-major order."""

    c: np.ndarray
    A_ub: sp.csr_matrix
    b_ub: np.ndarray
    A_eq: sp.csr_matrix
    b_eq: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    n: int
    k: int

    @property
    def n_u(self) -> int:
        return self.n * self.k

    def u(self, x: NDArray[Any]) -> np.ndarray:
        """The (n, k) assignment block of a solution vector, clipped to [0, 1]."""
        return np.clip(np.asarray(x[: self.n_u]).reshape(self.n, self.k), 0.0, 1.0)


class _Rows:
    """Accumulates sparse rows given as (row-local index, column, value) triplets."""

    def __init__(self):
        self.rows, self.cols, self.vals, self.rhs, self.n = [], [], [], [], 0

    def add(self, cols_list, vals_list, rhs):
        """One block of ``len(rhs)`` rows; each entry of ``cols_list`` is one coefficient per row."""
        m = np.asarray(rhs).shape[0]
        r = self.n + np.arange(m)
        for cols, val in zip(cols_list, vals_list):
            self.rows.append(r)
            self.cols.append(np.asarray(cols).ravel())
            self.vals.append(np.broadcast_to(np.asarray(val, dtype=np.float64), (m,)))
        self.rhs.append(np.asarray(rhs, dtype=np.float64))
        self.n += m

    def matrix(self, n_cols):
        if not self.rows:
            return sp.csr_matrix((0, n_cols)), np.empty(0)
        a = sp.csr_matrix((np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols))),
                          shape=(self.n, n_cols))
        return a, np.concatenate(self.rhs)


#: frustrated triangles are enumerated only while the number of two-paths to check
#: stays below this (a dense graph's triangles would dwarf the program)
MAX_TRIANGLE_WORK = 2_000_000


def frustrated_triangles(graph: PairwiseGraph) -> tuple[Any, Any] | tuple[Any, NDArray[Any]]:
    """The triangles of node pairs joined by two soft must-links and a cannot-link.

    Returns ``(pairs, rows)``: ``pairs`` (P, 2), the node pairs ``a < b`` that carry a
    Potts factor of positive weight, and ``rows`` (t, 3), pair indices
    ``(must, must, cannot)`` of every triangle ``a < b < c`` whose three pairs can take
    these roles (a pair with both kinds of factor may take either). Empty when the
    enumeration would check more than ``MAX_TRIANGLE_WORK`` two-paths.
    """
    n = graph.n_nodes
    cls = graph.edge_classes()
    ml = cls.soft_must
    cl = cls.soft_cannot | cls.hard_cannot
    use = ml | cl
    a = np.minimum(graph.edges[use, 0], graph.edges[use, 1])
    b = np.maximum(graph.edges[use, 0], graph.edges[use, 1])
    keys, inv = np.unique(a * n + b, return_inverse=True)
    pairs = np.column_stack(np.divmod(keys, n))
    is_ml = np.zeros(keys.size, dtype=bool)
    is_cl = np.zeros(keys.size, dtype=bool)
    is_ml[inv[ml[use]]] = True
    is_cl[inv[cl[use]]] = True
    empty = np.empty((0, 3), dtype=np.int64)
    if keys.size < 3:
        return pairs, empty
    # pairs sorted by their smaller end: the higher neighbours of node v are
    # pairs[ptr[v]:ptr[v + 1], 1] (keys are sorted by a, then b)
    ptr = np.searchsorted(pairs[:, 0], np.arange(n + 1))
    cnt = np.diff(ptr)[pairs[:, 1]]  # for pair (a, b): candidates c among b's higher neighbours
    if int(cnt.sum()) > MAX_TRIANGLE_WORK:
        return pairs, empty
    ab = np.repeat(np.arange(keys.size), cnt)
    starts = ptr[pairs[:, 1]]
    bc = np.repeat(starts - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()))
    c = pairs[bc, 1]
    ac = np.searchsorted(keys, pairs[ab, 0] * n + c)
    ok = (ac < keys.size) & (keys[np.minimum(ac, keys.size - 1)] == pairs[ab, 0] * n + c)
    tri = np.column_stack([ab[ok], bc[ok], ac[ok]])
    rows = []
    for neg in range(3):  # which pair is the cannot-link
        pos = [j for j in range(3) if j != neg]
        sel = is_cl[tri[:, neg]] & is_ml[tri[:, pos[0]]] & is_ml[tri[:, pos[1]]]
        rows.append(np.column_stack([tri[sel, pos[0]], tri[sel, pos[1]], tri[sel, neg]]))
    return pairs, np.concatenate(rows).astype(np.int64)


def build_program(unary: NDArray[Any], graph: PairwiseGraph, cycles: bool = False) -> KTProgram:
    """Assemble eqs. A.1–A.8 (plus table edges and hard factors) as sparse matrices.

    Parameters
    ----------
    unary : ndarray of shape (n, k)
        Unary costs (``inf`` forbids a label).
    graph : PairwiseGraph
        Factors; hard must-links are expected to be contracted already (see
        :func:`~hmrf.inference.reduce_problem`) but are accepted as ``u[a] = u[b]``.
    cycles : bool, default=False
        Add the cycle inequalities of frustrated triangles (:func:`frustrated_triangles`;
        Barahona & Mahjoub 1986, Sontag & Jaakkola 2007): an agreement variable ``x_p``
        per node pair, ``x_p >= 1 - (1/2) Σ_h z^(M)[e,h]`` for a must-link on ``p``,
        ``x_p <= Σ_h z^(C)[e,h]`` for a soft cannot-link (0 for a hard one), and
        ``x_ab + x_bc - x_ac <= 1`` with ``ac`` the cannot-link's pair. Every labelling
        keeps its energy, but the relaxation cannot hold both must-links of a triangle
        while its cannot-link costs nothing. :class:`~hmrf.inference.ExactMILP` uses them.
    """
    unary = np.asarray(unary, dtype=np.float64)
    n, k = unary.shape
    e, w = graph.edges, graph.weight
    hk = np.arange(k)
    ml, cl, hard_ml, hard_cl, tab = (np.flatnonzero(c) for c in graph.edge_classes().split())
    tab_costs = graph.table_costs() if tab.size else np.empty((0, k, k))
    keep_t = graph.weight[tab] > 0
    tab, tab_costs = tab[keep_t], tab_costs[keep_t]

    o_zm = n * k
    o_zc = o_zm + ml.size * k
    o_mu = o_zc + cl.size * k
    n_var = o_mu + tab.size * k * k

    def u_idx(nodes):  # (len, k) column indices of u[nodes, :]
        return nodes[:, None] * k + hk[None, :]

    c = np.zeros(n_var)
    lb = np.zeros(n_var)
    ub = np.full(n_var, np.inf)
    forbidden = np.isinf(unary)
    c[:o_zm] = np.where(forbidden, 0.0, unary).ravel()
    ub[:o_zm] = np.where(forbidden, 0.0, 1.0).ravel()
    zm = o_zm + np.arange(ml.size * k).reshape(ml.size, k)
    zc = o_zc + np.arange(cl.size * k).reshape(cl.size, k)
    c[zm] = (w[ml] / 2.0)[:, None]  # A.1 with A.4: w_e u^(M)_e = (w_e / 2) Σ_h z^(M)_eh
    c[zc] = w[cl][:, None]  # w_e u^(C)_e = w_e Σ_h z^(C)_eh
    if tab.size:
        mu = o_mu + np.arange(tab.size * k * k).reshape(tab.size, k, k)
        inf_t = np.isinf(tab_costs)
        c[mu] = np.where(inf_t, 0.0, tab_costs)
        ub[mu] = np.where(inf_t, 0.0, 1.0)

    ineq, eq = _Rows(), _Rows()
    ua, ub_ = u_idx(e[ml, 0]), u_idx(e[ml, 1])
    ineq.add([ua, ub_, zm], [1.0, -1.0, -1.0], np.zeros(ml.size * k))  # A.5
    ineq.add([ua, ub_, zm], [-1.0, 1.0, -1.0], np.zeros(ml.size * k))  # A.6
    ca, cb = u_idx(e[cl, 0]), u_idx(e[cl, 1])
    ineq.add([ca, cb, zc], [-1.0, -1.0, 1.0], np.zeros(cl.size * k))  # A.7
    ineq.add([ca, cb, zc], [1.0, 1.0, -1.0], np.ones(cl.size * k))  # A.8
    if hard_cl.size:
        ineq.add([u_idx(e[hard_cl, 0]), u_idx(e[hard_cl, 1])], [1.0, 1.0], np.ones(hard_cl.size * k))
    eq.add([u_idx(np.arange(n))[:, h] for h in range(k)], [1.0] * k, np.ones(n))  # A.2
    if hard_ml.size:
        eq.add([u_idx(e[hard_ml, 0]), u_idx(e[hard_ml, 1])], [1.0, -1.0], np.zeros(hard_ml.size * k))
    if tab.size:
        # Σ_t mu[e,s,t] - u[a,s] = 0 and Σ_s mu[e,s,t] - u[b,t] = 0
        eq.add([mu[:, :, t] for t in range(k)] + [u_idx(e[tab, 0])], [1.0] * k + [-1.0],
               np.zeros(tab.size * k))
        eq.add([mu[:, s, :] for s in range(k)] + [u_idx(e[tab, 1])], [1.0] * k + [-1.0],
               np.zeros(tab.size * k))
    if cycles:
        pairs, rows = frustrated_triangles(graph)
        if rows.size:
            used = np.unique(rows)
            col = np.full(pairs.shape[0], -1, dtype=np.int64)
            col[used] = n_var + np.arange(used.size)
            n_var += used.size
            zeros = np.zeros(used.size)
            c, lb, ub = np.r_[c, zeros], np.r_[lb, zeros], np.r_[ub, zeros + 1.0]
            key = pairs[:, 0] * n + pairs[:, 1]

            def pair_col(edges):  # agreement column of each edge's pair, -1 if none
                lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
                at = np.minimum(np.searchsorted(key, lo * n + hi), key.size - 1)
                return np.where(key[at] == lo * n + hi, col[at], -1)

            xm, xc, xh = pair_col(e[ml]), pair_col(e[cl]), pair_col(e[hard_cl])
            on = np.flatnonzero(xm >= 0)  # x_p + (1/2) Σ_h z^(M)[e,h] >= 1
            ineq.add([xm[on]] + [zm[on, h] for h in range(k)], [-1.0] + [-0.5] * k, -np.ones(on.size))
            on = np.flatnonzero(xc >= 0)  # x_p - Σ_h z^(C)[e,h] <= 0
            ineq.add([xc[on]] + [zc[on, h] for h in range(k)], [1.0] + [-1.0] * k, np.zeros(on.size))
            ub[xh[xh >= 0]] = 0.0  # a hard cannot-link never agrees
            ineq.add([col[rows[:, 0]], col[rows[:, 1]], col[rows[:, 2]]], [1.0, 1.0, -1.0],
                     np.ones(rows.shape[0]))
    A_ub, b_ub = ineq.matrix(n_var)
    A_eq, b_eq = eq.matrix(n_var)
    return KTProgram(c, A_ub, b_ub, A_eq, b_eq, lb, ub, n, k)


class _HighsLP:
    """A :class:`KTProgram` loaded into HiGHS (``highspy``) on the first solve, solved
    again whenever the unary costs change.

    The constraints depend on the graph alone; the unary costs enter only the objective
    of the ``u`` columns and, for forbidden labels, their upper bound. An optimal basis
    stays feasible when only costs change, so each solve hot-starts the simplex from the
    last one. Solves are serialised (a lock); a pickled copy drops the solver.
    """

    def __init__(self, prog: KTProgram) -> None:
        self.prog = prog
        self._highs = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {"prog": self.prog}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["prog"])

    def _load(self):
        highspy = load("highspy", purpose="the LP relaxation (LPRelaxation, ExactMILP's bound)")
        prog = self.prog
        A = sp.vstack([prog.A_ub, prog.A_eq], format="csc")
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = prog.c, prog.lb, prog.ub
        lp.row_lower_ = np.concatenate([np.full(prog.A_ub.shape[0], -np.inf), prog.b_eq])
        lp.row_upper_ = np.concatenate([prog.b_ub, prog.b_eq])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = A.shape[1], A.shape[0]
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
        # the core class: highspy.Highs adds Python callbacks (keyboard interrupts) and
        # prints HiGHS' banner on construction, before its output can be switched off
        highs = highspy._Highs()
        highs.setOptionValue("output_flag", False)
        # presolve finds little to remove in this program (the rows of A.7) and costs more
        # than it saves on E-step-sized problems; a hot start skips it anyway
        highs.setOptionValue("presolve", "off")
        highs.passModel(lp)
        self._status = highspy.HighsModelStatus
        self._columns = np.arange(prog.n_u, dtype=np.int32)
        self._upper = prog.ub[: prog.n_u].copy()
        return highs

    def solve(self, unary: NDArray[np.floating] | None = None) -> tuple[np.ndarray, float, dict]:
        """Solve the relaxation with the unary costs ``unary`` (n, k) (default: the
        program's own); returns ``(u, value, info)``, ``u`` (n, k) clipped to [0, 1].

        Raises
        ------
        InfeasibleError
            If the relaxation is infeasible (then so is every labelling).
        """
        t0 = time.perf_counter()
        with self._lock:
            warm = self._highs is not None
            if not warm:
                self._highs = self._load()
            highs = self._highs
            if unary is not None:
                unary = np.asarray(unary, dtype=np.float64).ravel()
                forbidden = np.isinf(unary)
                highs.changeColsCost(self._columns.size, self._columns, np.where(forbidden, 0.0, unary))
                upper = np.where(forbidden, 0.0, 1.0)
                if not np.array_equal(upper, self._upper):
                    highs.changeColsBounds(self._columns.size, self._columns, np.zeros_like(upper), upper)
                    self._upper = upper
            highs.run()
            status = highs.getModelStatus()
            info = {"lp_time": time.perf_counter() - t0, "lp_warm": warm,
                    "lp_iterations": int(highs.getInfo().simplex_iteration_count)}
            # the program is bounded below (u in [0, 1], the other columns >= 0 at costs
            # >= 0 or bounded), so "unbounded or infeasible" is infeasible
            if status in (self._status.kInfeasible, self._status.kUnboundedOrInfeasible):
                raise InfeasibleError(
                    "the LP relaxation is infeasible: hard cannot-links and forbidden labels leave "
                    "no fractional labelling, hence no labelling at all."
                )
            if status != self._status.kOptimal:
                raise RuntimeError("HiGHS could not solve the LP relaxation: "
                                   f"{highs.modelStatusToString(status)}")
            x = np.asarray(highs.getSolution().col_value)
            value = float(highs.getInfo().objective_function_value)
        return self.prog.u(x), value, info


def solve_relaxation(prog: KTProgram) -> tuple[np.ndarray, float, dict]:
    """Solve the LP relaxation of ``prog`` with HiGHS; returns ``(u, value, info)``.

    Raises
    ------
    InfeasibleError
        If the relaxation is infeasible (then so is every labelling).
    """
    return _HighsLP(prog).solve()


class LPRelaxation(InferenceEngine):
    """Kleinberg–Tardos LP relaxation with randomized rounding (Basu 2005, App. A.2).

    Parameters
    ----------
    n_rounds : int, default=10
        Independent roundings of the LP solution. In every connected component of the
        constraint graph the cheapest rounding is kept (the energy is a sum over
        components), so the result is never worse than the best single rounding.
    polish : {None, "icm"}, default=None
        Run ICM from the rounded labelling (never increases the energy). Recommended
        with cannot-links (see Notes).
    solver : {"highs", "cvxpy"}, default="highs"
        ``"highs"``: :func:`build_program` solved by HiGHS, each E-step of a fit from
        the previous one's optimal basis. ``"cvxpy"``: the same LP in cvxpy's modelling
        language (:mod:`hmrf.inference.lp_cvxpy`), for users who add constraints.
    max_phases : int, optional
        Cap on rounding phases (default ``ceil(10 k ln(n + 2))``).

    Notes
    -----
    The LP value is the ``lower_bound``, so ``gap == 0`` proves the labelling optimal.
    With must-links only (uniform metric labelling) the rounding costs at most twice the
    LP value in expectation (Kleinberg & Tardos 2002, Thm. 4.1). Cannot-links are not a
    metric and the relaxation is weak there (``u[i, h] = 1/k`` satisfies every (A.8) at
    zero cost): expect a gap and violated cannot-links; ``polish="icm"`` repairs most.
    Table edges use the local-polytope relaxation and the same rounding.

    References
    ----------
    Kleinberg & Tardos (2002), JACM 49(5), §4; Basu (2005), Appendix A.2, eqs. A.1–A.8.

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference import LPRelaxation
    >>> unary = np.array([[0.0, 1.0], [1.0, 0.2], [0.5, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], n=3, weight=2.0)
    >>> res = LPRelaxation().map(unary, c, rng=0)
    >>> res.labels.tolist(), round(res.energy, 6), round(res.gap, 6)
    ([0, 0, 1], 1.0, 0.0)
    """

    _parameter_constraints = {
        "n_rounds": [Interval(Integral, 1, None)],
        "polish": [Options(*POLISH)],
        "solver": [Options("highs", "cvxpy")],
        "max_phases": [Options(None), Interval(Integral, 1, None)],
    }

    def __init__(self, n_rounds: int = 10, polish: Literal["icm"] | None = None,
                 solver: Literal["highs", "cvxpy"] = "highs", max_phases: int | None = None,
                 **renamed: Any) -> None:
        if "backend" in renamed:
            raise TypeError("LPRelaxation(backend=...) is spelled LPRelaxation(solver=...): "
                            "the solver of the relaxation, 'highs' or 'cvxpy'.")
        if renamed:
            raise TypeError(f"LPRelaxation got an unexpected keyword argument {next(iter(renamed))!r}.")
        self.n_rounds = n_rounds
        self.polish = polish
        self.solver = solver
        self.max_phases = max_phases

    def relax(self, unary: NDArray[np.floating], graph: PairwiseGraph) -> tuple[np.ndarray, float, dict]:
        """Solve the relaxation of the (reduced) problem: ``(u, lp_value, info)``."""
        validate_params(self)
        return solve_lp(unary, graph, self.solver)

    def _solve(self, unary, graph, init, rng, notify):
        return relax_and_round(unary, graph, rng, n_rounds=self.n_rounds, polish=self.polish,
                               solver=self.solver, max_phases=self.max_phases, init=init,
                               notify=notify)


def solve_lp(unary: NDArray[np.floating], graph: PairwiseGraph,
             solver: str = "highs") -> tuple[np.ndarray, float, dict]:
    """The relaxation A.1–A.8 of ``(unary, graph)`` solved by ``solver``: ``(u, value, info)``.

    ``"highs"`` keeps the program (:func:`build_program`) in HiGHS on the graph, so the
    E-steps of a fit change only its costs and start from the last optimal basis.

    Raises
    ------
    InfeasibleError
        No labelling honours the hard factors; ``point`` is where a greedy assignment
        gets stuck.
    """
    t0 = time.perf_counter()
    try:
        if solver == "cvxpy":
            from .lp_cvxpy import solve_kt_cvxpy

            return solve_kt_cvxpy(unary, graph)
        solver = graph.cache.get(RELAXATION, lambda: _HighsLP(build_program(unary, graph)))
        build = time.perf_counter() - t0
        u, value, info = solver.solve(unary)
        info["build_time"] = build
        return u, value, info
    except InfeasibleError as exc:
        if exc.point is not None:
            raise
        hard = HardFactors(graph, unary.shape[1])
        order = constrained_first_order(hard, np.arange(unary.shape[0]), np.random.default_rng(0))
        stuck = np.flatnonzero(greedy_assign(unary, hard, order) < 0)
        point = int(stuck[0]) if stuck.size else 0
        raise InfeasibleError(f"{exc} A greedy assignment gets stuck at this point.", point=point) from None


def relax_and_round(unary: NDArray[Any], graph: PairwiseGraph, rng: np.random.Generator, *,
                    n_rounds: int = 10, polish: Any = None, solver: str = "highs", max_phases: Any = None,
                    init: NDArray[Any] | None = None, notify: Callable[..., Any] | None = None) -> Solution:
    """Kleinberg–Tardos on a (reduced) problem: solve the LP, round, optionally polish.

    The work of :class:`LPRelaxation`, whose parameters these are, as a function of a
    problem already reduced (for code that composes engines). ``init`` is
    returned only if no rounding (nor its repair) honours the hard factors;
    ``notify(iteration, labels, bound)`` runs after rounding and after polishing.
    """
    notify = notify or (lambda *a, **kw: None)
    polish = check_polish(polish)
    t0 = time.perf_counter()
    u, value, info = solve_lp(unary, graph, solver)
    t1 = time.perf_counter()
    cands, rinfo = kleinberg_tardos_rounding(u, rng, int(n_rounds), max_phases)
    # an integral u rounds to itself every time: nothing to choose between
    same = np.all(cands == cands[0])
    labels = cands[0] if same else graph.best_per_component(unary, cands)[0]
    notify(1, labels, value)
    t2 = time.perf_counter()
    candidates = [labels]
    if polish:
        polished, sweeps = polish_labels(unary, graph, labels, rng)
        candidates.append(polished)
        info["polish_sweeps"] = sweeps
        notify(2, polished, value)
    labels, _ = finish(unary, graph, candidates, "LP rounding", rng, fallback=init)
    t3 = time.perf_counter()
    integral = np.all((u < 1e-9) | (u > 1 - 1e-9), axis=1)
    info.update(lp_value=value, rounding_time=t2 - t1, polish_time=t3 - t2,
                solve_time=t1 - t0, integral_fraction=float(integral.mean()),
                phases=rinfo["phases"], fallback=rinfo["fallback"])
    return Solution(labels, lower_bound=value, n_iter=int(n_rounds), converged=True, info=info)
