"""α-expansion (Boykov, Veksler & Zabih 2001): E-step moves that each solve one minimum cut.

An *α-expansion* of a labelling ``y`` lets any subset of the nodes switch to label
``α`` at once. Which subset is best is a binary problem, ``x_i = 1`` meaning "node i
takes α", with the energy

.. math::

    E(x) = \\sum_i U_{i, y_i \\text{ or } \\alpha}
         + \\sum_{(i,j)} \\theta_{ij}(x_i, x_j), \\qquad
    \\theta_{ij} = \\big(\\,V(y_i, y_j),\\ V(y_i, \\alpha),\\ V(\\alpha, y_j),
                         \\ V(\\alpha, \\alpha)\\big)

over ``(x_i, x_j) = (0,0), (0,1), (1,0), (1,1)``, solved by one s–t minimum cut
(:mod:`~hmrf.inference.qpbo`, :mod:`~hmrf.inference.maxflow_numba`). For must-links
``V = w [y_i != y_j]`` is a metric and every term is submodular (``V(a,b) + V(α,α) <=
V(a,α) + V(α,b)``, the triangle inequality; §5), so each move is optimal and the
converged labelling ``ŷ`` is within a factor 2 of the optimum ``y*``:
``E(ŷ) <= sum_i U_{i,y*_i} + 2 sum_e V_e(y*)`` (Theorem 6.1, ``c = 1`` for Potts).
A cannot-link ``w [y_i = y_j]`` between two nodes that may both switch has
``θ(1,1) = w > 0 = θ(0,1) = θ(1,0)``: not submodular. Such moves are solved by QPBO
(Kolmogorov & Rother 2007), whose labelled nodes are fixed (autarky: a fusion move,
Lempitsky, Rother, Roth & Blake 2010, with the constant labelling ``α`` as the
proposal), the rest by the cut of a submodular upper bound tight at their current
labels (truncation, Rother et al. 2005): neither raises the energy.
"""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._lazy import lazy_module
from .._validation import Interval, Options
from ..graph import CacheKey, PairwiseGraph
from .base import InferenceEngine, Solution, refuse_removed
from .polish import finish

# the compiled kernels load on first use: listing or building engines needs no numba
graphcut = lazy_module("hmrf.inference.graphcut_numba")
maxflow = lazy_module("hmrf.inference.maxflow_numba")

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import NDArray

    from .base import InferenceResult

__all__ = ["AlphaExpansion", "ExpansionMoves", "MoveCut", "classify_tables"]

#: a move is accepted when it lowers the energy by more than this (relative) amount
_REL_TOL = 1e-12

#: the largest memory (bytes) the moves keep for recycling every label's flow between
#: its moves (:class:`ExpansionMoves`)
_RECYCLE_BYTES = 1 << 30

#: the max-flow arc layout of a graph's edges (every E-step of a fit cuts the same graph)
ARC_LAYOUT = CacheKey("expansion.arc_layout", "keep")


def _arc_layout(graph: PairwiseGraph) -> tuple[np.ndarray, ...]:
    """:func:`~hmrf.inference.maxflow_numba.arc_layout` of ``graph``, cached on it."""
    def build():  # writable C arrays, as QPBO's own cuts pass: one compiled form of the max-flow
        return maxflow.arc_layout(graph.n_nodes, np.ascontiguousarray(graph.edges[:, 0]),
                                  np.ascontiguousarray(graph.edges[:, 1]))

    return graph.cache.get(ARC_LAYOUT, build)


def _not_semi_metric(T: np.ndarray):
    """``(table, description)`` of the first table in ``T`` (t, k, k) that is not a
    semi-metric, or ``None``."""
    k = T.shape[1]
    diagonal = np.zeros(T.shape, dtype=bool)
    diagonal[:, np.arange(k), np.arange(k)] = True
    asymmetric = "is not symmetric: T[{a}, {b}] = {v:g} but T[{b}, {a}] = {w:g}"
    for bad, what in ((T < 0, "is negative: T[{a}, {b}] = {v:g}"),
                      (diagonal & (T != 0), "has a non-zero diagonal: T[{a}, {b}] = {v:g}"),
                      (T != T.transpose(0, 2, 1), asymmetric)):
        if bad.any():
            t, a, b = (int(v) for v in np.argwhere(bad)[0])
            return t, what.format(a=a, b=b, v=T[t, a, b], w=T[t, b, a])
    return None


def classify_tables(graph: PairwiseGraph) -> bool:
    """Check that the graph's cost tables suit α-expansion; ``True`` if all are metric.

    A table ``T`` (scaled by a non-negative edge weight) is a *semi-metric* when
    ``T[a, b] = T[b, a] >= 0`` and ``T[a, a] = 0``, and a *metric* when moreover
    ``T[a, b] <= T[a, c] + T[c, b]`` (Boykov, Veksler & Zabih 2001; ``inf`` entries
    allowed): every expansion term of a metric is submodular, some of a semi-metric are
    not (QPBO moves). Only tables used by an edge of positive weight are checked.

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


class MoveCut(NamedTuple):
    """How a move was cut: ``exact`` (every term submodular: the best α-expansion), else
    by QPBO or truncation, with ``unlabelled`` nodes (every free node under truncation)."""

    exact: bool
    unlabelled: int


#: what a removed ``kernel=`` argument says to do
_COMPILED = "moves are built and cut by the compiled kernels; drop it."

class ExpansionMoves:
    """An E-step energy prepared for α-expansion moves.

    Hard factors (``inf`` Potts weights, table entries, unary costs) cost one finite
    penalty ``M`` larger than the spread of the finite energy over all labellings: a
    labelling with fewer violated hard factors has the lower penalised energy, so a
    move never breaks a hard constraint that holds, and no move proposes a forbidden
    label. A Potts edge costs ``wc - wk [a == b]`` (a must-link ``w (1 - [a == b])``, a
    cannot-link ``w [a == b]``), a table edge ``tab_cost[tab_of[e], a, b]``.

    Parameters
    ----------
    unary : ndarray of shape (n, k)
        Unary costs (``+inf`` forbids a label).
    graph : PairwiseGraph
        Potts must-links and cannot-links, cost tables of any kind.
    recycle : bool, default=True
        Whether each label's cut starts from the flow and search trees its last cut
        left (Kohli & Torr 2007; Alahari, Kohli & Torr 2010): the same cuts as from
        zero flow (up to rounding where the minimum is tied), for about the work of
        what changed. Needs ``k (2 m + 5 n)`` numbers, at most ``_RECYCLE_BYTES``
        (beyond, every cut starts from zero flow in one set of arrays).

    Attributes
    ----------
    penalty : float
        The finite cost ``M`` of one violated hard factor.
    """

    def __init__(self, unary: NDArray[Any], graph: PairwiseGraph, recycle: bool = True,
                 **removed: Any) -> None:
        refuse_removed("ExpansionMoves", removed, {"kernel": _COMPILED})
        unary = np.asarray(unary, dtype=np.float64)
        k = unary.shape[1]
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
        if self.tab.size:
            cost = graph.table_costs()
            finite = np.isfinite(cost)
            fin = np.where(finite, cost, np.nan)
            spread += float(np.nansum(np.nanmax(fin, axis=(1, 2)) - np.nanmin(fin, axis=(1, 2))))
        self.penalty = 2.0 * spread + 1.0
        # a forbidden label costs the penalty too: a labelling that uses one is worse
        # than any that does not, and no move proposes one
        self.unary = unary if all_allowed else np.where(self.allowed, unary, self.penalty)
        self.tab_cost = np.where(finite, cost, self.penalty) if self.tab.size else np.zeros((1, k, k))
        self.tab_of = np.full(graph.n_edges, -1, dtype=np.int64)
        self.tab_of[self.tab] = np.arange(self.tab.size)
        w_pen = np.where(hard, self.penalty, np.where(potts, w, 0.0))
        self.wc = np.where(cls.must, w_pen, 0.0)
        self.wk = np.where(potts, np.where(cls.must, w_pen, -w_pen), 0.0)
        self._alpha_allowed = [np.ascontiguousarray(self.allowed[:, a]) for a in range(k)]
        self._edges = (self.p, self.q, self.wc, self.wk, self.tab_of, self.tab_cost)
        self._graph = graph
        n = unary.shape[0]
        self._recycles = recycle and k * 8 * (2 * graph.n_edges + 5 * n) <= _RECYCLE_BYTES
        # the max-flow's queue and orphans, the marks of a recycled cut
        self._shared = (*(np.empty(n, dtype=np.int64) for _ in range(3)), np.zeros(n, dtype=bool))
        self._flow_kept = np.zeros(k, dtype=bool)
        self._states = [None] * (k if self._recycles else 1)

    def energy(self, labels: NDArray[np.intp]) -> float:
        """Penalised energy of ``labels`` (``M`` per violated hard factor)."""
        labels = np.asarray(labels)
        a, b = labels[self.p], labels[self.q]
        pair = self.wc - self.wk * (a == b)
        if self.tab.size:
            pair[self.tab] = self.tab_cost[np.arange(self.tab.size), a[self.tab], b[self.tab]]
        return float(self.unary[np.arange(labels.shape[0]), labels].sum() + pair.sum())

    def change(self, labels: NDArray[np.intp], alpha: int, x: NDArray[np.bool_]) -> float:
        """Penalised energy change of switching the nodes ``x`` (bool) of ``labels`` to ``alpha``."""
        return float(graphcut.move_change(np.asarray(labels, dtype=np.int64), int(alpha), x, self.unary,
                                          *self._edges))

    def move(self, labels: NDArray[np.intp], alpha: int,
             method: str = "qpbo") -> tuple[NDArray[np.intp], float, MoveCut | None]:
        """The α-expansion move from ``labels``: ``(new_labels, change, cut)``, ``change``
        the penalised energy change from the move's terms, ``cut`` ``None`` when no node
        can switch. A move whose terms are all submodular is cut by
        :func:`~hmrf.inference.graphcut_numba.move_cut` on the graph's arc layout, from
        the flow its label's last cut left; any other by
        :func:`~hmrf.inference.graphcut_numba.qpbo_move` (``method``: ``"qpbo"`` or
        ``"truncate"``), and its label's next cut starts from zero flow."""
        labels = np.asarray(labels, dtype=np.int64)
        alpha = int(alpha)
        ptr, edge, head, sister, arc_pq, arc_qp = _arc_layout(self._graph)
        i = alpha if self._recycles else 0  # the arrays of this label's last cut
        if self._states[i] is None:
            n = labels.shape[0]
            index = (np.empty(n, dtype=np.int64) for _ in range(3))  # parent, stamp, dist
            self._states[i] = (np.empty(2 * self.p.size), np.empty(n), *index, np.empty(n, dtype=bool),
                               np.empty(n, dtype=np.int64))
        state, recycle = self._states[i], self._recycles and bool(self._flow_kept[alpha])
        costs = (self.unary, self._alpha_allowed[alpha], *self._edges)
        x, n_free, non_sub = graphcut.move_cut(labels, alpha, *costs, ptr, head, sister, arc_pq, arc_qp,
                                               *state, *self._shared, recycle)
        if n_free:
            self._flow_kept[alpha] = not non_sub  # rcap and trcap hold this cut's residual network
        cut = MoveCut(True, 0)
        if non_sub:
            x, n_free, unlabelled = graphcut.qpbo_move(labels, alpha, *costs, ptr, edge, method == "truncate")
            cut = MoveCut(False, int(unlabelled))
        if n_free == 0:
            return labels, 0.0, None
        change = self.change(labels, alpha, x)
        new = labels.copy()
        new[x] = alpha
        return new, change, cut


class AlphaExpansion(InferenceEngine):
    """α-expansion by graph cuts (Boykov, Veksler & Zabih 2001), QPBO moves for cannot-links.

    Parameters
    ----------
    max_sweeps : int, default=100
        Maximum number of sweeps; a sweep tries one expansion move per label (with
        ``cycles="adaptive"``: at most ``max_sweeps * k`` moves).
    label_order : {"fixed", "random"}, default="fixed"
        Order of the labels: ``0, 1, ..., k-1`` (GCO's default order; with
        ``cycles="adaptive"`` the schedule of GCO's ``expansion(-1)``), or a permutation
        drawn from ``rng`` (every sweep with ``cycles="sweep"``, once with
        ``"adaptive"``, as GCO does): a different local minimum per seed, for restarts.
    nonsubmodular : {"qpbo", "truncate"}, default="qpbo"
        Moves with non-submodular terms (cannot-links, semi-metric tables): QPBO, then
        a truncated cut for the variables QPBO leaves unlabelled, or truncation alone
        (Rother et al. 2005; :func:`~hmrf.inference.qpbo.solve_split`).
    tables : {"semi-metric", "any"}, default="semi-metric"
        ``"semi-metric"`` refuses a table that is not one (:func:`classify_tables`), as
        expansion is defined (Boykov et al. 2001); ``"any"`` runs the moves on every
        table (QPBO where a term is not submodular): never raising the energy, without
        an approximation bound.
    cycles : {"sweep", "adaptive"}, default="sweep"
        ``"sweep"``: every sweep tries every label in ``label_order`` until a sweep
        changes nothing (Boykov et al. 2001, Fig. 2). ``"adaptive"``: GCO's adaptive
        cycles (Delong, Osokin, Isack & Boykov 2012; ``_adaptive``). Both stop only
        at a labelling no expansion move lowers (when every move is exact).

    Notes
    -----
    Minimises ``E(y) = sum_i U[i, y_i] + sum_e V_e(y_a, y_b)`` by moves (module
    docstring) from ``init`` or the unary argmin, until no label's move lowers the
    energy (``converged``) or ``max_sweeps`` is spent; a move is kept only if it lowers
    the energy, recomputed from its terms. Must-links (and metric tables) give exact
    moves, within a factor 2 (``2c``, ``c`` the ratio of the largest to the smallest
    non-zero table entry) of the optimum (Theorem 6.1), optimal with two labels;
    cannot-links and semi-metric tables QPBO moves, with no approximation factor. Hard
    must-links arrive contracted (the base class); other hard factors cost the penalty
    of :class:`ExpansionMoves`, and a result that still breaks one is repaired by ICM
    (:func:`~hmrf.inference.polish.finish`) or raises :class:`~hmrf.InfeasibleError`.
    ``info`` holds ``trace`` (the energy after every sweep or cycle, as passed to
    ``callback``), ``moves``, ``qpbo_moves`` and ``unlabelled`` (nodes QPBO left
    unlabelled), ``rejected_moves`` (moves that would raise the energy: 0 by the
    theory) and ``exact_moves``.

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
        "label_order": [Options("fixed", "random")],
        "nonsubmodular": [Options("qpbo", "truncate")],
        "tables": [Options("semi-metric", "any")],
        "cycles": [Options("sweep", "adaptive")],
    }

    monotone_from_init = True

    def __init__(self, max_sweeps: int = 100, label_order: str = "fixed", nonsubmodular: str = "qpbo",
                 tables: str = "semi-metric", cycles: str = "sweep", **removed: Any) -> None:
        refuse_removed("AlphaExpansion", removed, {"kernel": _COMPILED})
        self.max_sweeps = max_sweeps
        self.label_order = label_order
        self.nonsubmodular = nonsubmodular
        self.tables = tables
        self.cycles = cycles

    def solve_validated(self, unary: NDArray[np.float64], graph: PairwiseGraph,
                        init: NDArray[np.intp] | None = None, rng: np.random.Generator | None = None,
                        callback: Callable[..., Any] | None = None, *,
                        started: float | None = None) -> InferenceResult:
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
        moves = ExpansionMoves(unary, graph)
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
                counts["unlabelled"] += cut.unlabelled
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
                for alpha in order:  # a loop over labels; each move is compiled
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

        A cycle tries the labels of the current queue not yet tried in it; a label whose
        move fails moves behind the queue's end, and when fewer than half succeed those
        form a new, smaller queue. A cycle in which none succeeds returns to the labels
        dropped from the enclosing queue; the schedule ends when the outermost brings
        nothing (every label failed since the last change). At most ``max_sweeps * k``
        moves.
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
