"""α-expansion (Boykov, Veksler & Zabih 2001): E-step moves that each solve one minimum cut.

An *α-expansion* of a labelling ``y`` lets any subset of the nodes switch to label
``α`` at once, everyone else keeping their label. Which subset is best is a binary
problem, ``x_i = 1`` meaning "node i takes α", with the energy

.. math::

    E(x) = \\sum_i U_{i, y_i \\text{ or } \\alpha}
         + \\sum_{(i,j)} \\theta_{ij}(x_i, x_j), \\qquad
    \\theta_{ij} = \\big(\\,V(y_i, y_j),\\ V(y_i, \\alpha),\\ V(\\alpha, y_j),
                         \\ V(\\alpha, \\alpha)\\big)

over ``(x_i, x_j) = (0,0), (0,1), (1,0), (1,1)``, solved by one s–t minimum cut
(:func:`~hmrf.inference.qpbo.solve_binary`). For must-links, ``V = w [y_i != y_j]``
is a metric, every term is submodular (``V(a,b) + V(α,α) <= V(a,α) + V(α,b)`` is the
triangle inequality; Boykov et al. 2001, §5), so each move is optimal and the
converged labelling ``ŷ`` is within a factor 2 of the optimum ``y*``:
``E(ŷ) <= sum_i U_{i,y*_i} + 2 sum_e V_e(y*)`` (Theorem 6.1, with ``c = 1`` for Potts).

A cannot-link ``w [y_i = y_j]`` between two nodes that may both switch has
``θ(1,1) = w > 0 = θ(0,1) = θ(1,0)``: not submodular, so no graph cut solves the move
exactly. Such moves are solved by QPBO (Kolmogorov & Rother 2007): nodes the QPBO cut
labels are fixed, which by QPBO's autarky property never raises the energy (the fusion
move of Lempitsky, Rother, Roth & Blake 2010, with the constant labelling ``α`` as
the proposal); the nodes it leaves unlabelled are then decided by a cut of a submodular
upper bound that is tight at their current labels (truncation, Rother et al. 2005),
which cannot raise it either.
"""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from .._optional import available, missing_message
from .._params import Interval, Options, validate_params
from ..graph import CacheKey, PairwiseGraph
from .base import InferenceEngine, Solution
from .polish import finish
from .qpbo import BinaryCut, load_maxflow, solve_split, split_terms

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from .._typing import RandomLike
    from ..constraints import Constraints
    from .base import InferenceResult

__all__ = ["AlphaExpansion", "ExpansionMoves", "classify_tables"]

#: a move is accepted when it lowers the energy by more than this (relative) amount
_REL_TOL = 1e-12

#: the largest memory (bytes) the compiled moves keep for recycling every label's flow
#: between its moves (:meth:`ExpansionMoves._label_state`)
_RECYCLE_BYTES = 1 << 30

#: the compiled moves' incidence and max-flow arc layout of a graph (its edges alone:
#: every E-step of a fit cuts the same graph)
ARC_LAYOUT = CacheKey("expansion.arc_layout", "keep")


def _arc_layout(graph: PairwiseGraph) -> tuple[np.ndarray, ...]:
    """``(inc_ptr, inc_edge, head, sister, arc_pq, arc_qp)`` of ``graph``, cached on it
    (:func:`~hmrf.inference.graphcut_numba.incidence`,
    :func:`~hmrf.inference.maxflow_numba.arc_layout`)."""
    def build():
        from .graphcut_numba import incidence
        from .maxflow_numba import arc_layout

        p, q = graph.edges[:, 0], graph.edges[:, 1]
        ptr, edge = incidence(graph.n_nodes, p, q)
        layout = (ptr, edge, *arc_layout(graph.n_nodes, p, q, ptr, edge))
        for a in layout:
            a.flags.writeable = False
        return layout

    return graph.cache.get(ARC_LAYOUT, build)


def _not_semi_metric(T: np.ndarray):
    """``(table, description)`` of the first table in ``T`` (t, k, k) that is not a
    semi-metric, or ``None``."""
    k = T.shape[1]
    bad = T < 0
    if bad.any():
        t, a, b = (int(v) for v in np.argwhere(bad)[0])
        return t, f"is negative: T[{a}, {b}] = {T[t, a, b]:g}"
    diag = T[:, np.arange(k), np.arange(k)]
    if np.any(diag != 0):
        t, a = (int(v) for v in np.argwhere(diag != 0)[0])
        return t, f"has a non-zero diagonal: T[{a}, {a}] = {T[t, a, a]:g}"
    bad = T != T.transpose(0, 2, 1)
    if bad.any():
        t, a, b = (int(v) for v in np.argwhere(bad)[0])
        return t, f"is not symmetric: T[{a}, {b}] = {T[t, a, b]:g} but T[{b}, {a}] = {T[t, b, a]:g}"
    return None


def classify_tables(graph: PairwiseGraph) -> bool:
    """Check that the graph's cost tables suit α-expansion; ``True`` if all are metric.

    A table ``T`` (scaled by a non-negative edge weight) is a *semi-metric* when
    ``T[a, b] = T[b, a] >= 0`` and ``T[a, a] = 0``, and a *metric* when moreover
    ``T[a, b] <= T[a, c] + T[c, b]`` for all labels (Boykov, Veksler & Zabih 2001;
    ``inf`` entries allowed). For a metric every expansion term is submodular; for a
    semi-metric some are not and the moves fall back to QPBO. Only tables used by an
    edge of positive weight are checked.

    Raises
    ------
    ValueError
        A table that is not a semi-metric, naming the table and the offending entry.
    """
    if graph.tables is None:
        return True
    used = graph.edge_classes().table & (graph.weight > 0)
    if not used.any():
        return True
    index = np.unique(graph.table_index[used])
    metric = True
    k = graph.tables.shape[1]
    chunk = max(1, 4_000_000 // max(k**3, 1))
    for start in range(0, index.size, chunk):  # blocks of tables, not edges
        ids = index[start:start + chunk]
        T = graph.tables[ids]
        problem = _not_semi_metric(T)
        if problem is not None:
            t, what = problem
            raise ValueError(
                f"AlphaExpansion needs metric or semi-metric cost tables (Boykov, Veksler & "
                f"Zabih 2001); table {int(ids[t])} {what}. Pass "
                "AlphaExpansion(tables='any') to run QPBO moves on it anyway (no "
                "approximation bound), or use BeliefPropagation, LPRelaxation or ExactMILP."
            )
        via = np.min(T[:, :, :, None] + T[:, None, :, :], axis=2)  # min_c T[a,c] + T[c,b]
        metric &= bool(np.all(T <= via + 1e-12 * np.abs(via)))
    return metric


def _use_compiled(kernel) -> bool:
    """Whether the moves' binary problems are built by the numba kernels
    (:mod:`~hmrf.inference.graphcut_numba`): ``"auto"`` when numba is installed."""
    if kernel not in ("auto", "numba", "numpy"):
        raise ValueError(f"kernel must be 'auto', 'numba' or 'numpy'; got {kernel!r}.")
    if kernel == "numpy":
        return False
    if kernel == "numba" and not available("numba"):
        raise ImportError(missing_message("numba", "kernel='numba'"))
    return available("numba")


class ExpansionMoves:
    """An E-step energy prepared for α-expansion moves.

    Hard factors (``inf`` Potts weights, ``inf`` table entries, ``inf`` unary costs)
    are replaced by one finite penalty ``M`` larger than the spread of the finite energy
    over all labellings, so that any labelling with fewer violated hard factors has the
    lower penalised energy: a move never breaks a hard constraint that holds, and moves
    repair violated ones first. A label with infinite unary cost is never proposed to
    a node.

    Parameters
    ----------
    unary : ndarray of shape (n, k)
        Unary costs (``+inf`` forbids a label).
    graph : PairwiseGraph
        Potts must-links and cannot-links, and cost tables of any kind (the moves are
        exact where their terms are submodular, QPBO or truncation elsewhere).
    kernel : {"auto", "numba", "numpy"}, default="auto"
        Who builds each move's binary problem: the compiled kernels of
        :mod:`~hmrf.inference.graphcut_numba` or vectorised NumPy (the same problem;
        ``"auto"``: numba when it is installed).
    recycle : bool, default=True
        Whether each label's compiled cut starts from the flow and search trees its
        last cut left (Kohli & Torr 2007; Alahari, Kohli & Torr 2010), so that a move
        costs about what changed since; the same cuts as from zero flow, up to
        rounding where the minimum is tied. Needs ``k (2 m + 5 n)`` numbers; beyond
        ``_RECYCLE_BYTES`` (1 GiB) every cut starts from zero flow.

    Attributes
    ----------
    penalty : float
        The finite cost ``M`` of one violated hard factor.
    """

    def __init__(self, unary: NDArray[Any], graph: PairwiseGraph, kernel: str = "auto",
                 recycle: bool = True) -> None:
        unary = np.asarray(unary, dtype=np.float64)
        self.recycle = recycle
        self.compiled = _use_compiled(kernel)
        self.n_labels = unary.shape[1]
        self.allowed = np.isfinite(unary)
        self.p, self.q = graph.edges[:, 0], graph.edges[:, 1]
        w = graph.weight
        cls = graph.edge_classes()
        potts, hard = ~cls.table, cls.hard
        all_allowed = bool(self.allowed.all())
        if all_allowed:  # the common case: no forbidden label, no NaN to skip
            spread = float(np.sum(unary.max(axis=1) - unary.min(axis=1)))
        else:
            finite_u = np.where(self.allowed, unary, np.nan)
            with np.errstate(invalid="ignore"):
                spread = float(np.nansum(np.nanmax(finite_u, axis=1) - np.nanmin(finite_u, axis=1)))
        spread += float(w[potts & ~hard].sum())
        self.tab = np.flatnonzero(cls.table)
        self.tab_cost = None
        if self.tab.size:
            cost = graph.table_costs()
            finite = np.isfinite(cost)
            fin = np.where(finite, cost, np.nan)
            spread += float(np.nansum(np.nanmax(fin, axis=(1, 2)) - np.nanmin(fin, axis=(1, 2))))
        self.penalty = 2.0 * spread + 1.0
        # a forbidden label costs the penalty too: a labelling that uses one is worse
        # than any that does not, and no move proposes one
        self.unary = unary if all_allowed else np.where(self.allowed, unary, self.penalty)
        if self.tab.size:
            self.tab_cost = np.where(finite, cost, self.penalty)
        # Potts cost = wc - wk [a == b]: must-link w (1 - [a == b]), cannot-link w [a == b]
        w_pen = np.where(hard, self.penalty, np.where(potts, w, 0.0))
        ml = cls.must
        self.wc = np.where(ml, w_pen, 0.0)
        self.wk = np.where(potts, np.where(ml, w_pen, -w_pen), 0.0)
        self.both_alpha = self.wc - self.wk  # θ(1,1) of Potts edges, whatever the labels
        self.both_alpha.flags.writeable = False
        # the compiled kernels' view of the tables: per edge its row of tab_cost, or -1
        self.tab_of = np.full(graph.n_edges, -1, dtype=np.int64)
        self.tab_of[self.tab] = np.arange(self.tab.size)
        k = self.n_labels
        self._tab_cost = self.tab_cost if self.tab.size else np.zeros((1, k, k))
        self._alpha_allowed = [np.ascontiguousarray(self.allowed[:, a]) for a in range(k)]
        self._graph = graph
        self._work = None  # the compiled max-flow's workspace, allocated on first use

    def terms(self, labels: NDArray[np.intp], alpha: int) -> tuple[Any, Any, Any, Any]:
        """``θ(0,0), θ(0,1), θ(1,0), θ(1,1)`` of every edge for the α-expansion of ``labels``."""
        a, b = labels[self.p], labels[self.q]
        A = self.wc - self.wk * (a == b)
        B = self.wc - self.wk * (a == alpha)
        C = self.wc - self.wk * (b == alpha)
        D = self.both_alpha
        if self.tab.size:
            D = D.copy()
            t, ta, tb = np.arange(self.tab.size), a[self.tab], b[self.tab]
            tc = self.tab_cost
            A[self.tab], B[self.tab] = tc[t, ta, tb], tc[t, ta, alpha]
            C[self.tab], D[self.tab] = tc[t, alpha, tb], tc[t, alpha, alpha]
        return A, B, C, D

    def energy(self, labels: NDArray[np.intp]) -> float:
        """Penalised energy of ``labels`` (``M`` per violated hard factor)."""
        labels = np.asarray(labels)
        a, b = labels[self.p], labels[self.q]
        pair = self.wc - self.wk * (a == b)
        if self.tab.size:
            pair[self.tab] = self.tab_cost[np.arange(self.tab.size), a[self.tab], b[self.tab]]
        return float(self.unary[np.arange(labels.shape[0]), labels].sum() + pair.sum())

    def binary_problem(self, labels: NDArray[np.intp], alpha: int) -> Any:
        """The move's binary problem in split form (:func:`~hmrf.inference.qpbo.solve_split`).

        Returns ``(nodes, u, ep, eq, half_lambda)``: the free nodes (those that may switch
        to ``alpha``: another label now, and ``alpha`` allowed), their unary differences
        ``E(x_i = 1) - E(x_i = 0)`` with every term that touches one free node folded in
        (its other end keeps ``x = 0``), and the ``[x_p != x_q]`` weights of the terms
        between two free nodes, whose endpoints are positions in ``nodes``.
        """
        labels = np.asarray(labels, dtype=np.int64)
        if self.compiled:
            from .graphcut_numba import move_problem

            return move_problem(labels, int(alpha), self.unary, self._alpha_allowed[alpha], self.p, self.q,
                                self.wc, self.wk, self.tab_of, self._tab_cost)
        n = labels.shape[0]
        free = (labels != alpha) & self.allowed[:, alpha]
        nodes = np.flatnonzero(free)
        A, B, C, D = self.terms(labels, alpha)
        fp, fq = free[self.p], free[self.q]
        up, uq, half_lambda = split_terms(A, B, C, D)
        delta = np.zeros(n)
        delta[nodes] = self.unary[nodes, alpha] - self.unary[nodes, labels[nodes]]
        # a term with one free end is a unary term on it (the other end keeps x = 0)
        delta += np.bincount(self.p, weights=np.where(fp, np.where(fq, up, C - A), 0.0), minlength=n)
        delta += np.bincount(self.q, weights=np.where(fq, np.where(fp, uq, B - A), 0.0), minlength=n)
        both = np.flatnonzero(fp & fq)
        pos = np.cumsum(free) - 1
        return nodes, delta[nodes], pos[self.p[both]], pos[self.q[both]], half_lambda[both]

    def change(self, labels: NDArray[np.intp], alpha: int, x: NDArray[Any]) -> float:
        """Penalised energy change of switching the nodes ``x`` (bool, shape (n,)) of
        ``labels`` to ``alpha``, from the move's terms (independent of any split or cut)."""
        labels = np.asarray(labels, dtype=np.int64)
        if self.compiled:
            from .graphcut_numba import move_change

            return float(move_change(labels, int(alpha), x, self.unary, self.p, self.q, self.wc, self.wk,
                                     self.tab_of, self._tab_cost))
        A, B, C, D = self.terms(labels, alpha)
        xp, xq = x[self.p], x[self.q]
        pair = np.where(xp, np.where(xq, D, C), np.where(xq, B, A)) - A
        return float((self.unary[x, alpha] - self.unary[x, labels[x]]).sum() + pair.sum())

    def move(self, labels: NDArray[np.intp], alpha: int,
             method: str = "qpbo") -> tuple[NDArray[Any], float, BinaryCut | None]:
        """The α-expansion move from ``labels``; ``method`` treats non-submodular terms
        (:func:`~hmrf.inference.qpbo.solve_split`).

        Returns
        -------
        new_labels : ndarray (n,)
        change : float
            Penalised energy of ``new_labels`` minus that of ``labels``, computed from
            the move's terms (not from the cut value).
        cut : BinaryCut or None
            The cut (``None`` when no node can switch to ``alpha``).
        """
        labels = np.asarray(labels)
        if self.compiled:
            x, cut = self._compiled_cut(labels, alpha, method)
        else:
            x = np.zeros(labels.shape[0], dtype=bool)
            nodes, u, ep, eq, half_lambda = self.binary_problem(labels, alpha)
            cut = None
            if nodes.size:
                cut = solve_split(u, ep, eq, half_lambda, method)
                x[nodes] = cut.x
        if cut is None:
            return labels, 0.0, None
        change = self.change(labels, alpha, x)
        new = labels.copy()
        new[x] = alpha
        return new, change, cut

    def _compiled_cut(self, labels, alpha, method):
        """The compiled move: ``(x, cut)``, the switching nodes (bool, all nodes) and a
        :class:`~hmrf.inference.qpbo.BinaryCut` (``None`` if no node can switch).

        A submodular move runs whole in :func:`~hmrf.inference.graphcut_numba.move_cut`
        (problem and the max-flow of :mod:`~hmrf.inference.maxflow_numba` on the graph's
        arc layout, cached on the graph); every label keeps the residual network its last
        cut left and the labels it was built from, and its next move recycles that flow
        (:meth:`_label_state`). A move with a term that is not submodular goes to QPBO
        (:meth:`_reduced_cut`) and its label starts its next cut from zero flow."""
        from .graphcut_numba import move_cut

        n = labels.shape[0]
        layout = _arc_layout(self._graph)
        labels = np.asarray(labels, dtype=np.int64)
        (rcap, trcap, parent, stamp, dist, in_sink, prev), recycle = self._label_state(n, alpha)
        next_active, orphans, marked, is_marked = self._shared
        x, n_free, non_sub = move_cut(labels, int(alpha), self.unary, self._alpha_allowed[alpha], self.p,
                                      self.q, self.wc, self.wk, self.tab_of, self._tab_cost, *layout,
                                      rcap, trcap, parent, next_active, stamp, dist, in_sink, orphans, prev,
                                      recycle, marked, is_marked)
        if n_free:  # a cut ran (its residual network is this label's), or rcap is part-written
            self._flow_kept[alpha] = not non_sub
        if non_sub:
            x = np.zeros(n, dtype=bool)
            return x, self._reduced_cut(labels, alpha, method, x)
        if n_free == 0:
            return x, None
        return x, BinaryCut(x=x, labelled=np.ones(n, dtype=bool), exact=True)

    def _label_state(self, n, alpha):
        """``((rcap, trcap, parent, stamp, dist, in_sink_tree, prev_labels), recycle)``: the
        arrays of label ``alpha``'s next compiled cut and whether they hold its last cut.

        The arrays every cut shares (:class:`~hmrf.inference.maxflow_numba.MaxflowWorkspace`'s
        scratch, the marks) are allocated on the first move. Each label has its own
        residual network, search trees and labels of its last cut (``k (2 m + 5 n)``
        numbers in all, allocated on the label's first move) while that stays within
        ``_RECYCLE_BYTES``; beyond it every cut starts afresh in one set of arrays."""
        from .maxflow_numba import MaxflowWorkspace

        if self._work is None:
            m2 = 2 * self.p.size
            self._recycles = self.recycle and self.n_labels * 8 * (m2 + 5 * n) <= _RECYCLE_BYTES
            work = MaxflowWorkspace(n, m2)
            self._work = work
            self._shared = (work.next_active, work.orphans, np.empty(n, dtype=np.int64),
                            np.zeros(n, dtype=bool))
            self._flow_kept = np.zeros(self.n_labels, dtype=bool)
            own = (work.rcap, work.trcap, work.parent, work.stamp, work.dist, work.in_sink_tree,
                   np.empty(n, dtype=np.int64))
            self._states = [None if self._recycles else own] * self.n_labels
            if self._recycles:
                self._states[alpha] = own
        if not self._recycles:
            return self._states[alpha], False
        if self._states[alpha] is None:
            index = [np.empty(n, dtype=np.int64) for _ in range(3)]  # parent, stamp, dist
            self._states[alpha] = (np.empty(2 * self.p.size), np.empty(n), *index, np.empty(n, dtype=bool),
                                   np.empty(n, dtype=np.int64))
        return self._states[alpha], bool(self._flow_kept[alpha])

    def _reduced_cut(self, labels, alpha, method, x):
        """The compiled move: problem, dominance and reduction in one kernel
        (:func:`~hmrf.inference.graphcut_numba.move_problem_reduced`), then the cut of
        what is left; writes the switching nodes into ``x`` and returns the
        :class:`~hmrf.inference.qpbo.BinaryCut` over the free nodes (``None`` if none)."""
        from .graphcut_numba import move_problem_reduced

        labels = np.asarray(labels, dtype=np.int64)
        forced, nodes, u, ep, eq, half, non_sub = move_problem_reduced(
            labels, int(alpha), self.unary, self._alpha_allowed[alpha], self.p, self.q, self.wc, self.wk,
            self.tab_of, self._tab_cost, *_arc_layout(self._graph)[:2])
        if non_sub and method == "truncate":  # truncation alone: nothing is fixed first
            nodes, u, ep, eq, half = self.binary_problem(labels, alpha)
            cut = solve_split(u, ep, eq, half, method, reduce=False)
            x[nodes] = cut.x
            return cut
        if forced.size + nodes.size == 0:
            return None
        x[forced] = True
        labelled = np.ones(forced.size + nodes.size, dtype=bool)
        if nodes.size:
            sub = solve_split(u, ep, eq, half, method, reduce=False)
            x[nodes] = sub.x
            labelled[forced.size:] = sub.labelled
        return BinaryCut(x=np.r_[np.ones(forced.size, dtype=bool), x[nodes]], labelled=labelled,
                         exact=not non_sub)


class AlphaExpansion(InferenceEngine):
    """α-expansion by graph cuts (Boykov, Veksler & Zabih 2001), QPBO moves for cannot-links.

    Parameters
    ----------
    max_sweeps : int, default=100
        Maximum number of sweeps; a sweep tries one expansion move per label (with
        ``cycles="adaptive"``: at most ``max_sweeps * k`` moves).
    cycles : {"sweep", "adaptive"}, default="sweep"
        Which labels are tried when. ``"sweep"``: every sweep tries every label in
        ``label_order`` until a sweep changes nothing (Boykov, Veksler & Zabih 2001,
        Fig. 2). ``"adaptive"``: the adaptive cycles of GCO (Delong, Osokin, Isack &
        Boykov 2012; its ``expansion(-1)``): a label whose move failed leaves the
        queue, the queue shrinks to the successful labels when fewer than half
        succeed, and the failed labels return once a queue brings no change. Both stop
        only at a labelling no expansion move lowers (when every move is exact).
    label_order : {"fixed", "random"}, default="fixed"
        Order of the labels: ``0, 1, ..., k-1`` (GCO's default order; with
        ``cycles="adaptive"`` the schedule of GCO's ``expansion(-1)``), or a permutation
        drawn from ``rng`` (every sweep with ``cycles="sweep"``, once with
        ``"adaptive"``, as GCO does): a different local minimum per seed, for restarts.
    nonsubmodular : {"qpbo", "truncate"}, default="qpbo"
        How moves with non-submodular terms (cannot-links, semi-metric tables) are
        solved: QPBO, then a truncated cut for the variables QPBO leaves unlabelled, or
        truncation alone (Rother et al. 2005); see
        :func:`~hmrf.inference.qpbo.solve_binary`. Both never raise the energy.
    tables : {"semi-metric", "any"}, default="semi-metric"
        Which cost tables are accepted. ``"semi-metric"`` refuses a table that is not a
        semi-metric with a ``ValueError`` (:func:`classify_tables`), the setting under
        which expansion is defined (Boykov et al. 2001); ``"any"`` runs the moves on
        every table, with exact cuts where the terms are submodular and QPBO elsewhere:
        still never raising the energy, but without an approximation bound.

    kernel : {"auto", "numba", "numpy"}, default="auto"
        Who builds each move's binary problem and its energy change: compiled with numba
        (:mod:`~hmrf.inference.graphcut_numba`, ``pip install hmrf[fast]``; a move whose
        terms are all submodular is cut by the compiled max-flow of
        :mod:`~hmrf.inference.maxflow_numba` too) or vectorised NumPy and PyMaxflow. Both
        solve the same problem; ``"auto"``: numba when installed.
    Notes
    -----
    Minimises ``E(y) = sum_i U[i, y_i] + sum_e V_e(y_a, y_b)`` by moves that let any set
    of nodes switch to one label ``α``; each move is one s–t minimum cut (module
    docstring, Boykov et al. 2001, §5). The labels are tried in sweeps or adaptive
    cycles (``cycles``); the engine stops when no label's move lowers the energy
    (``converged``) or when ``max_sweeps`` is spent.
    A move is kept only if it lowers the energy; the energy change is recomputed from
    the move's terms after each cut, and a move that would raise it is discarded and
    counted in ``info["rejected_moves"]`` (a guard: by the theory below it stays 0).
    A label is skipped when the labelling has not changed since its last move and that
    move was exact or changed nothing: its move would change nothing.

    * **Must-links** (Potts, a metric): every move is an exact graph cut and the result
      is within a factor 2 of the optimum (Boykov et al. 2001, Theorem 6.1); with two
      labels it is optimal (the binary energy is submodular, and a labelling no
      expansion improves is a global minimum).
    * **Cannot-links**: the expansion terms between two nodes that may both switch are
      not submodular. Moves with such terms are solved by QPBO (Kolmogorov & Rother
      2007); by QPBO's autarky property fixing the nodes it labels never raises the
      energy (a fusion move, Lempitsky et al. 2010), and the nodes it leaves
      unlabelled get a truncated cut tight at their current labels (Rother et al.
      2005), which cannot raise it either. No approximation factor holds then.
    * **Tables**: metric tables give exact moves as must-links do (within ``2c`` of the
      optimum, ``c`` the ratio of the largest to the smallest non-zero entry; Theorem
      6.1); semi-metric tables (symmetric, zero diagonal, non-negative) get QPBO moves;
      other tables raise ``ValueError`` unless ``tables="any"``.
    * **Hard constraints**: hard must-links arrive contracted (the base class); hard
      cannot-links and forbidden table entries cost one finite penalty larger than the
      spread of all finite costs (:class:`ExpansionMoves`), so no move ever breaks one
      that holds and moves repair violated ones first. If the result still breaks one,
      ICM repairs it (:func:`~hmrf.inference.polish.finish`), or
      :class:`~hmrf.InfeasibleError` names a point.

    The start is ``init`` (nodes whose ``init`` label is forbidden take their cheapest
    label) or the unary argmin. ``info`` holds ``trace`` (the energy of the full
    problem after every sweep or cycle, also passed to ``callback``), ``moves`` (cuts
    computed), ``qpbo_moves`` and ``unlabelled`` (moves with non-submodular terms and
    the nodes QPBO left unlabelled in them, every node of them under truncation),
    ``rejected_moves`` and ``exact_moves`` (whether every move was an exact cut).
    Needs PyMaxflow (``pip install "hmrf[graphcut]"``).

    References
    ----------
    Boykov, Veksler & Zabih (2001), "Fast approximate energy minimization via graph
    cuts", TPAMI 23(11), §5 and Theorem 6.1. Kolmogorov & Zabih (2004), TPAMI 26(2).
    Kolmogorov & Rother (2007), "Minimizing nonsubmodular functions with graph cuts —
    a review", TPAMI 29(7). Lempitsky, Rother, Roth & Blake (2010), "Fusion moves
    for Markov random field optimization", TPAMI 32(8). Rother, Kumar, Kolmogorov
    & Blake (2005), "Digital tapestry", CVPR. Delong, Osokin, Isack & Boykov (2012),
    "Fast approximate energy minimization with label costs", IJCV 96(1) (their GCO
    library's adaptive cycles).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference.expansion import AlphaExpansion
    >>> unary = np.array([[0.0, 3.0], [0.6, 0.5], [0.5, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], n=3, weight=2.0)
    >>> res = AlphaExpansion().map(unary, c, rng=0)  # point 1 joins its must-link partner
    >>> res.labels.tolist(), round(res.energy, 2)
    ([0, 0, 1], 0.6)
    """

    _parameter_constraints = {
        "max_sweeps": [Interval(Integral, 1, None)],
        "cycles": [Options("sweep", "adaptive")],
        "label_order": [Options("fixed", "random")],
        "nonsubmodular": [Options("qpbo", "truncate")],
        "tables": [Options("semi-metric", "any")],
        "kernel": [Options("auto", "numba", "numpy")],
    }

    monotone_from_init = True

    def __init__(self, max_sweeps: int = 100, label_order: str = "fixed", nonsubmodular: str = "qpbo",
                 tables: str = "semi-metric", kernel: str = "auto", cycles: str = "sweep") -> None:
        self.max_sweeps = max_sweeps
        self.cycles = cycles
        self.label_order = label_order
        self.nonsubmodular = nonsubmodular
        self.tables = tables
        self.kernel = kernel

    def map(self, unary: ArrayLike, graph: PairwiseGraph | Constraints | None = None,
            init: ArrayLike | None = None, rng: RandomLike = None,
            callback: Callable[..., Any] | None = None) -> InferenceResult:
        validate_params(self)
        load_maxflow()  # fail before any work, with the install command
        return super().map(unary, graph, init=init, rng=rng, callback=callback)
    map.__doc__ = InferenceEngine.map.__doc__

    def solve_validated(self, unary: NDArray[np.float64], graph: PairwiseGraph,
                        init: NDArray[np.intp] | None = None, rng: np.random.Generator | None = None,
                        callback: Callable[..., Any] | None = None, *,
                        started: float | None = None) -> InferenceResult:
        load_maxflow()
        trace = []

        def record(iteration, labels, energy, bound):
            trace.append(energy)
            if callback is not None:
                callback(iteration, labels, energy, bound)

        result = super().solve_validated(unary, graph, init, rng, record, started=started)
        result.info["trace"] = trace if trace else [result.energy]
        return result
    solve_validated.__doc__ = InferenceEngine.solve_validated.__doc__

    def _solve(self, unary, graph, init, rng, notify):
        n, k = unary.shape
        if self.tables == "semi-metric":
            classify_tables(graph)
        moves = ExpansionMoves(unary, graph, self.kernel)
        start = np.argmin(unary, axis=1)
        if init is None:
            labels = start
        else:
            labels = np.array(init, dtype=np.int64)
            forbidden = ~moves.allowed[np.arange(n), labels]
            labels[forbidden] = start[forbidden]
        energy = moves.energy(labels)
        counts = {"moves": 0, "qpbo_moves": 0, "unlabelled": 0, "rejected_moves": 0}
        step, last_change = 0, 0
        last_run = np.full(k, -1)  # step of each label's last move
        last_exact = np.zeros(k, dtype=bool)  # whether that move was an exact cut

        def expand(alpha):
            """Try the move of ``alpha``; whether it lowered the energy."""
            nonlocal labels, energy, step, last_change
            # the labelling has not changed since this label's last move, which was
            # optimal (exact) or changed nothing: the same move would change nothing
            if last_run[alpha] > last_change or (last_run[alpha] == last_change and last_exact[alpha]):
                return False
            step += 1
            last_run[alpha] = step
            new, change, cut = moves.move(labels, alpha, self.nonsubmodular)
            last_exact[alpha] = cut is None or cut.exact
            if cut is None:
                return False
            counts["moves"] += 1
            if not cut.exact:
                counts["qpbo_moves"] += 1
                counts["unlabelled"] += cut.n_unlabelled
            tol = _REL_TOL * (1.0 + abs(energy))
            if change < -tol:
                labels, energy, last_change = new, energy + change, step
                return True
            if change > tol:
                counts["rejected_moves"] += 1
            return False

        if self.cycles == "adaptive":
            converged, sweep = self._adaptive(k, expand, rng, notify, lambda: labels)
        else:
            converged, sweep = False, 0
            for sweep in range(1, int(self.max_sweeps) + 1):
                order = rng.permutation(k) if self.label_order == "random" else range(k)
                changed = False
                for alpha in order:  # a loop over labels; each move is vectorised
                    changed |= expand(alpha)
                notify(sweep, labels)
                if not changed:
                    converged = True
                    break
        if not np.isfinite(graph.energy(labels, unary)):  # a hard factor the moves left broken
            labels, _ = finish(unary, graph, [labels], "alpha-expansion", rng, fallback=init)
            notify(sweep, labels)
        info = dict(counts, exact_moves=counts["qpbo_moves"] == 0)
        return Solution(labels, n_iter=sweep, converged=converged, info=info)

    def _adaptive(self, k, expand, rng, notify, current):
        """GCO's adaptive cycles (its ``GCoptimization::expansion(-1)``): ``(converged, cycles)``.

        The labels form a queue; a cycle tries the labels of the current queue not yet
        tried in it. A label whose move fails (does not lower the energy) moves behind
        the queue's end; when fewer than half of the queue's labels succeed, those
        form a new, smaller queue. A cycle in which no move succeeds returns to the
        labels dropped from the enclosing queue, and the schedule ends when a cycle over
        the whole label set's remainder brings nothing: then every label has failed
        since the last change, so no expansion move lowers the energy. At most
        ``max_sweeps * k`` moves are tried.
        """
        table = rng.permutation(k) if self.label_order == "random" else np.arange(k)
        sizes = [k]  # the nested queues: table[:size]
        nxt, cycle, tried = 0, 0, 0
        budget = int(self.max_sweeps) * k
        while sizes:
            if tried >= budget:
                return False, cycle
            cycle += 1
            size, start = sizes[-1], nxt
            while nxt < size and tried < budget:
                tried += 1
                if expand(int(table[nxt])):
                    nxt += 1  # kept for the next (smaller) queue
                else:
                    size -= 1
                    table[nxt], table[size] = table[size], table[nxt]
            notify(cycle, current())
            if nxt == start:  # nothing succeeded: the labels dropped from the enclosing queue
                nxt = sizes.pop()
            elif size < sizes[-1] // 2:  # few succeeded: a queue of those
                sizes.append(size)
                nxt = 0
            else:  # most succeeded: the whole queue again
                nxt = 0
        return True, cycle
