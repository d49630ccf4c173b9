"""Sequential tree-reweighted message passing, :class:`TRWS` (Kolmogorov 2006), and the chain
layout that every message-passing pass walks (:class:`ChainLayout`).

:func:`run_trws` drives the compiled passes (:mod:`~hmrf.inference.bp.kernels`) per
connected component until the best labelling is proven within ``rel_gap`` of the optimum
or the bound stops rising; with ``cycles`` it alternates TRW-S with ordinary max-product
started from the TRW-S messages (what :class:`~hmrf.inference.BeliefPropagation`'s
default composes on must-link components).
"""

from __future__ import annotations

import time
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from ..._lazy import lazy_module
from ..._validation import Interval, Options
from ...graph import POTTS_ML, TABLE, CacheKey, PairwiseGraph
from ..base import InferenceEngine, Solution, refuse_removed
from ..polish import finish

# the compiled kernels load on first use: listing or building engines needs no numba
kernels = lazy_module("hmrf.inference.bp.kernels")

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    from numpy.typing import NDArray

__all__ = ["TRWS", "run_trws", "trws_order", "chain_layout", "ChainLayout", "bfs_order", "big_cost",
           "STALL_WINDOW", "STALL_GAP", "TRW_BLOCK", "WARM_UP_PATIENCE"]

#: breadth-first order (a function of the edges alone) and the layouts of each order,
#: which hold no weight (a re-weighted graph starts from a copy of the dict)
BFS = CacheKey("bp.bfs", "keep")
LAYOUTS = CacheKey("bp.layouts", lambda layouts, weight: dict(layouts))

#: iterations over which a component's gap must close by more than ``tol`` per iteration
#: (relative; the bound rising and the best labelling improving together) for it to go on
STALL_WINDOW = 10
#: a component whose gap is above this (relative) must close it ten times more slowly to
#: stop: its decoding can still find a much better labelling as the messages converge
STALL_GAP = 0.01
#: ``cycles``: iterations of one TRW-S phase
TRW_BLOCK = 5
#: ``cycles``: iterations without a better labelling that end a max-product phase
WARM_UP_PATIENCE = 3
#: ``cycles``: a component stops after ``max(LABEL_PATIENCE, LABEL_PATIENCE_WORK / n_c)``
#: iterations without a better labelling
LABEL_PATIENCE = 10
LABEL_PATIENCE_WORK = 250_000


def big_cost(unary: NDArray[np.floating], graph: PairwiseGraph) -> float:
    """A finite stand-in for ``inf``: twice the sum of every finite spread of the costs
    (unary rows, Potts weights, tables) plus 800, so that every labelling breaking a hard
    factor costs more than every one that does not (the minimisers are unchanged when a
    feasible labelling exists), no ``inf - inf`` becomes NaN, and ``exp(-BIG)`` underflows
    to 0 in sum-product."""
    def spread(x, axis):
        fin = np.isfinite(x)
        hi = np.max(np.where(fin, x, -np.inf), axis=axis)
        lo = np.min(np.where(fin, x, np.inf), axis=axis)
        ok = np.isfinite(hi)
        return float(np.sum(hi[ok] - lo[ok]))

    total = spread(unary, 1) + float(graph.weight[~(graph.edge_classes().table | graph.hard)].sum())
    if not graph.is_potts:
        total += spread(graph.table_costs(), (1, 2))
    return 2.0 * total + 800.0


def bfs_order(graph: PairwiseGraph) -> np.ndarray:
    """Breadth-first order of every connected component from its highest-degree node (ties
    by index; neighbours in index order), as ``perm[new] = old``; cached on the graph.

    One traversal from a virtual node joined to each component's root: its monotonic
    chains follow the BFS layers across the whole component, so one pass carries evidence
    from the hub to the periphery and back.
    """
    def build():
        n, e = graph.n_nodes, graph.edges
        n_comp, comp = graph.components()
        deg = np.diff(graph.neighbors().indptr)
        by_comp = np.lexsort((np.arange(n), -deg, comp))
        roots = by_comp[np.r_[True, comp[by_comp][1:] != comp[by_comp][:-1]]] if n else by_comp
        hub = np.full(roots.size, n)
        rows, cols = np.r_[e[:, 0], e[:, 1], hub, roots], np.r_[e[:, 1], e[:, 0], roots, hub]
        aug = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n + 1, n + 1))
        aug.sum_duplicates()
        order = csgraph.breadth_first_order(aug, n, directed=True, return_predecessors=False)
        return order[1:].astype(np.int64)

    return graph.cache.get(BFS, build)


class ChainLayout:
    """The graph in one node order (``perm[new] = old``), as the compiled passes walk it.

    Edges are sorted by their earlier end ``lo``, then ``hi``: node ``s``'s edges to later
    nodes are ``fptr[s]:fptr[s + 1]``, those to earlier nodes ``be[bptr[s]:bptr[s + 1]]``.
    ``edge`` maps layout edges to graph edges, ``flip`` marks those whose first graph
    endpoint is the later one, ``comp`` is every node's connected component and ``gamma``
    the TRW-S weight ``1 / max(n_s^-, n_s^+, 1)`` of monotonic chains covering the graph
    (Kolmogorov 2006, §4.1). Graph-only: cached per order (:func:`chain_layout`).
    """

    def __init__(self, graph: PairwiseGraph, perm: NDArray[np.intp]) -> None:
        n = graph.n_nodes
        self.perm = np.asarray(perm, dtype=np.int64)
        new = np.empty(n, dtype=np.int64)
        new[self.perm] = np.arange(n)
        a, b = new[graph.edges[:, 0]], new[graph.edges[:, 1]]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        eo = np.lexsort((hi, lo))
        self.edge, self.lo, self.hi, self.flip = eo, lo[eo], hi[eo], (a > b)[eo]
        self.kind = graph.kind[eo]
        self.fptr = np.searchsorted(self.lo, np.arange(n + 1)).astype(np.int64)
        self.be = np.lexsort((self.lo, self.hi)).astype(np.int64)
        self.bptr = np.searchsorted(self.hi[self.be], np.arange(n + 1)).astype(np.int64)
        self.gamma = 1.0 / np.maximum(np.maximum(np.diff(self.bptr), np.diff(self.fptr)), 1)
        self.n_comp, comp = graph.components()
        self.comp = comp[self.perm]

    def factors(self, graph: PairwiseGraph, k: int, big: float) -> tuple:
        """``(lo, hi, fptr, bptr, be, kind, w, tab_of, tcost)``: the layout and the costs the
        kernels read, ``inf`` replaced by ``big``: Potts weights (0 for tables), the row of
        ``tcost`` of every table edge (-1 for Potts) and the tables ``[x_lo, x_hi]``."""
        w = np.where(self.kind == TABLE, 0.0, np.where(np.isinf(graph.weight), big, graph.weight)[self.edge])
        tab_of = np.full(self.edge.shape[0], -1, dtype=np.int64)
        tcost = np.zeros((1, k, k))
        tab = np.flatnonzero(self.kind == TABLE)
        if tab.size:
            row = np.cumsum(graph.edge_classes().table) - 1  # graph edge -> row of table_costs()
            tc = graph.table_costs()[row[self.edge[tab]]]
            tc = np.where(np.isinf(tc), big, tc)
            tcost = np.ascontiguousarray(np.where(self.flip[tab, None, None], tc.transpose(0, 2, 1), tc))
            tab_of[tab] = np.arange(tab.size)
        return (self.lo, self.hi, self.fptr, self.bptr, self.be, self.kind, np.ascontiguousarray(w), tab_of,
                tcost)


def chain_layout(graph: PairwiseGraph, order: str) -> ChainLayout:
    """The :class:`ChainLayout` of ``order`` (``"bfs"`` or ``"index"``), cached on the graph."""
    layouts = graph.cache.get(LAYOUTS, dict)
    if order not in layouts:
        layouts[order] = ChainLayout(graph, bfs_order(graph) if order == "bfs" else np.arange(graph.n_nodes))
    return layouts[order]


def trws_order(graph: PairwiseGraph) -> str:
    """``order="auto"``: ``"index"`` when the nodes' own order is local (at least 99 % of the
    edges join nodes at most ``2 sqrt(n)`` apart, as an image grid in raster order),
    else ``"bfs"``."""
    if graph.n_edges == 0:
        return "bfs"
    span = np.abs(graph.edges[:, 0] - graph.edges[:, 1])
    return "index" if np.mean(span <= 2.0 * np.sqrt(graph.n_nodes)) >= 0.99 else "bfs"


_ML_PASSES: dict = {}


def _passes(lay, fac, k):
    """``(forward(gamma, labels, node_e, active), backward(gamma, active, lb))`` of the layout:
    the must-link kernels compiled for ``k`` where every edge is a must-link."""
    lo, hi, fptr, bptr, be, kind, w, tab_of, tcost = fac
    if k >= 2 and bool(np.all(kind == POTTS_ML)):
        if k not in _ML_PASSES:
            _ML_PASSES[k] = kernels.compile_must_link_passes(k)
        fwd, bwd = _ML_PASSES[k]
        ulo, ufptr, ubptr, ube = (a.view(np.uint64) for a in (lo, fptr, bptr, be))
        return (lambda u, msg, g, labels, node_e, active:
                fwd(u, msg, ulo, w, ufptr, ubptr, ube, g, active, labels, node_e),
                lambda u, msg, g, active, lb: bwd(u, msg, w, ufptr, ubptr, ube, g, active, lay.comp, lb))
    return (lambda u, msg, g, labels, node_e, active: kernels.trws_forward(
                u, msg, lo, kind, w, tab_of, tcost, fptr, bptr, be, g, active, labels, node_e),
            lambda u, msg, g, active, lb: kernels.trws_backward(
                u, msg, kind, w, tab_of, tcost, fptr, bptr, be, g, active, lay.comp, lb))


class _Progress:
    """Per component, iterations without progress (``stale``: no better labelling, no bound
    higher by ``rel_gap |E|``), which stop it after ``patience``; and with ``cycle`` the
    phases (TRW-S raises the bound quickly but decodes slowly; ordinary max-product started
    from its messages decodes sharply):

    ordinary max-product (``gamma = 1``) from zero messages until ``mp_patience`` iterations
    pass without a better labelling; then ``TRW_BLOCK`` iterations of TRW-S, the first
    time from zero messages and later from where the last TRW-S phase stopped; then
    max-product from the TRW-S messages, and so on. A component stops after a cycle that
    brought no progress, or after ``max(LABEL_PATIENCE, LABEL_PATIENCE_WORK / n_c)``
    iterations without a better labelling where its gap is at most ``STALL_GAP`` of its
    energy.
    """

    def __init__(self, lay, gamma, msg, patience, rel_gap, cycle):
        self.lay, self.gamma, self.msg, self.patience, self.rel_gap = lay, gamma, msg, patience, rel_gap
        self.mp_patience = WARM_UP_PATIENCE if patience is None else patience
        size = np.bincount(lay.comp, minlength=lay.n_comp)
        self.label_patience = np.maximum(LABEL_PATIENCE, np.ceil(LABEL_PATIENCE_WORK / np.maximum(size, 1)))
        self.cycle, self.trw, self.saved = cycle, not cycle, None
        self.block, self.cycles, self.trw_from = 0, 0, None
        self.stale = np.zeros(lay.n_comp, dtype=np.int64)
        self.since_better = np.zeros(lay.n_comp, dtype=np.int64)
        self.progressed = np.zeros(lay.n_comp, dtype=bool)
        self.lb_ref = np.full(lay.n_comp, -np.inf)
        if cycle:
            gamma[:] = 1.0

    def step(self, it, better, best_e, best_lb, done):
        """After iteration ``it``: count progress, switch phase; returns the components to stop."""
        self.stale += 1
        self.since_better += 1
        self.stale[better], self.since_better[better] = 0, 0
        self.progressed |= better
        if self.trw:
            with np.errstate(invalid="ignore"):  # -inf - -inf before the first bound
                rising = ~(best_lb - self.lb_ref <= self.rel_gap * np.abs(best_e))
            self.stale[rising], self.lb_ref[rising] = 0, best_lb[rising]
            self.progressed |= rising
        stop = np.zeros_like(done)
        if self.patience is not None and (self.cycles or not self.cycle):
            stop = self.stale >= self.patience
        if not self.cycle:
            return stop
        live = ~done & ~stop
        if self.trw:
            self.block += 1
            if self.block >= TRW_BLOCK:  # to max-product, from the TRW-S messages (kept)
                self.saved, self.trw = self.msg.copy(), False
                self.gamma[:] = 1.0
                self.stale[:] = 0
        elif np.all(self.stale[live] >= self.mp_patience):
            if self.cycles:  # a cycle without progress ends a component; so does label
                # patience, unless the gap is above STALL_GAP (far from its bound, the decoding
                # can still jump to the optimum while the bound rises)
                near = best_e - best_lb <= STALL_GAP * np.abs(best_e)
                stop |= live & (~self.progressed | ((self.since_better >= self.label_patience) & near))
                live &= ~stop
            self.cycles += 1
            self.trw, self.block = True, 0
            if self.saved is None:
                self.msg.fill(0.0)
                self.trw_from = it + 1
            else:
                self.msg[:] = self.saved
            self.gamma[:] = self.lay.gamma
            self.stale[live] = 0
            self.progressed[:] = False
        return stop


def run_trws(unary: NDArray[np.floating], graph: PairwiseGraph, *, max_iter: int = 1000,
             rel_gap: float = 1e-4, tol: float | None = 1e-5, order: str = "bfs",
             notify: Callable[..., Any] | None = None, init: Any = None, cycles: bool = False,
             patience: int | None = None) -> Solution:
    """TRW-S on ``(unary, graph)`` (:class:`TRWS`; ``tol=None``: no stall rule; ``cycles`` and
    ``patience``: ``_Progress``).

    Returns a :class:`~hmrf.inference.base.Solution`: ``labels`` (the best decoded labelling
    of every connected component, or ``init`` where it is better), ``lower_bound``
    (``None`` until every component ran TRW-S), ``n_iter``, ``converged`` (every gap
    closed to ``rel_gap``) and ``info``: ``stopped`` ("gap"; "bound", the bound stopped
    rising; "patience"; "max_iter"), ``order``, ``gap_components``, ``bound_trace`` (the
    bound of each TRW-S backward pass, over the components still running),
    ``energy_trace`` and ``time_trace`` (the best energy and the seconds so far after
    each iteration); with ``cycles`` ``trw_from_iter`` and ``trw_cycles``.
    ``notify(iteration, labels, bound)`` after each iteration (``labels`` valid during
    the call only).
    """
    t_start = time.perf_counter()
    n, k = unary.shape
    lay = chain_layout(graph, order)
    perm, comp, n_comp = lay.perm, lay.comp, lay.n_comp
    big = big_cost(unary, graph)
    rowmin = np.min(unary, axis=1)
    u0 = unary - rowmin[:, None]
    u_p = np.ascontiguousarray(np.where(np.isinf(u0), big, u0)[perm])
    base = np.bincount(comp, weights=rowmin[perm], minlength=n_comp)  # true energy = E(u0) + base
    forward, backward = _passes(lay, lay.factors(graph, k, big), k)
    msg = np.zeros((lay.lo.shape[0], k))
    labels, node_e, active = np.zeros(n, dtype=np.int64), np.zeros(n), np.ones(n, dtype=bool)
    best, best_e, best_lb = np.zeros(n, dtype=np.int64), np.full(n_comp, np.inf), np.full(n_comp, -np.inf)
    if init is not None:  # the result is never worse than the start
        best = np.asarray(init, dtype=np.int64)[perm]
        best_e = graph.component_energies(unary, np.asarray(init, dtype=np.int64))
    gamma = lay.gamma.copy() if cycles else lay.gamma
    phases = _Progress(lay, gamma, msg, patience, rel_gap, cycles) if cycles or patience is not None else None
    done, closed = np.zeros(n_comp, dtype=bool), np.zeros(n_comp, dtype=bool)
    history, trace, energy_trace, time_trace = [], [], [], []
    one = n_comp == 1  # one component (an image grid): sums and copies without the gathers
    stopped, it = "max_iter", 0
    for it in range(1, int(max_iter) + 1):
        forward(u_p, msg, gamma, labels, node_e, active)
        e = (np.array([node_e.sum()]) if one else np.bincount(comp, weights=node_e, minlength=n_comp)) + base
        better = (e < best_e) & ~done
        if better.any():
            np.copyto(best, labels, where=True if one else better[comp])
            best_e = np.where(better, e, best_e)
        lb = np.zeros(n_comp)
        backward(u_p, msg, gamma, active, lb)
        if phases is None or phases.trw:
            trace.append(float((lb + base)[~done].sum()))
            best_lb = np.where(done, best_lb, np.maximum(best_lb, lb + base))
        energy_trace.append(float(best_e.sum()))
        time_trace.append(time.perf_counter() - t_start)
        if notify is not None:
            bound = float(best_lb.sum())
            y = best if order == "index" else _unpermute(best, perm)
            notify(it, y, None if bound == -np.inf else bound)
        scale = np.maximum(np.abs(best_e), 1.0)
        closed |= ~done & (best_e - best_lb <= rel_gap * scale)
        stall = np.zeros(n_comp, dtype=bool) if phases is None else phases.step(it, better, best_e, best_lb,
                                                                                  done | closed)
        if tol is not None and not cycles:
            history.append((best_e.copy(), best_lb.copy()))
            if it > STALL_WINDOW:  # the gap closed by at most `flat` per iteration, from either side
                old_e, old_lb = history.pop(0)
                flat = np.where(best_e - best_lb <= STALL_GAP * scale, tol, 0.1 * tol)
                stall |= (best_lb - old_lb) + (old_e - best_e) <= flat * STALL_WINDOW * scale
        newly = ~done & (closed | stall)
        if newly.any():
            done |= newly
            active &= ~newly[comp]
        if done.all():
            stopped = "gap" if closed.all() else ("patience" if phases is not None else "bound")
            break
    info = {"stopped": stopped, "order": order, "gap_components": int(closed.sum()),
            "n_components": int(n_comp), "bound_trace": trace, "energy_trace": energy_trace,
            "time_trace": time_trace}
    if cycles:
        info.update(trw_from_iter=phases.trw_from, trw_cycles=phases.cycles)
    bound = float(best_lb.sum())
    return Solution(_unpermute(best, perm), lower_bound=bound if np.isfinite(bound) else None, n_iter=it,
                    converged=bool(closed.all()), info=info)


def _unpermute(y, perm):
    out = np.empty(y.size, dtype=np.int64)
    out[perm] = y
    return out


class TRWS(InferenceEngine):
    """Sequential tree-reweighted max-product message passing, TRW-S (Kolmogorov 2006).

    Nodes are visited in a fixed order, forward then backward; each node ``s`` sends
    along its edges towards the pass's direction

    ``m_{s->t}(x_t) = min_{x_s} [ gamma_s θ̂_s(x_s) - m_{t->s}(x_s) + θ_st(x_s, x_t) ]``

    with ``θ̂_s = θ_s + sum_t m_{t->s}`` its belief and ``gamma_s = 1 / max(n_s^-, n_s^+)``
    (``n_s^-`` / ``n_s^+`` its edges to earlier / later nodes: the weight of the
    monotonic chains through it). Each backward pass gives a lower bound on the optimal
    energy that never decreases; each forward pass decodes a labelling node by node
    (:mod:`~hmrf.inference.bp.kernels`). Every connected component keeps its best
    labelling and its best bound and stops as soon as the gap is closed
    (``E - LB <= rel_gap s``, ``s = max(|E|, 1)``) or when, over ``STALL_WINDOW = 10``
    iterations, its gap closed by at most ``tol s`` per iteration (``tol s / 10`` while the gap is above
    ``STALL_GAP = 1 %``), the bound rising and the labelling improving together.

    Parameters
    ----------
    max_iter : int, default=1000
        Maximum number of iterations (a forward and a backward pass each).
    rel_gap : float in [0, 1), default=1e-4
        A component stops once its best labelling is proven within ``rel_gap``
        (relative to ``max(|E|, 1)``) of its optimum.
    tol : float, default=1e-5
        A component stops once its gap closes by at most ``tol`` (relative to
        ``max(|E|, 1)``) per iteration over 10 iterations, its bound rising and its best
        labelling improving together (ten times less while the gap is above
        ``STALL_GAP``: far from its bound the decoding can still jump to a much better
        labelling as the messages converge).
    order : {"auto", "bfs", "index"}, default="auto"
        Node order. ``"index"``: the nodes' own order (raster order on an image grid,
        the order of Kolmogorov's and Szeliski et al.'s grid experiments). ``"bfs"``:
        breadth first from each component's highest-degree node (:func:`bfs_order`),
        long monotonic chains on irregular graphs. ``"auto"``: ``"index"`` when the
        nodes' own order is local (:func:`trws_order`), else ``"bfs"``.

    Notes
    -----
    ``lower_bound`` is the sum of the components' best TRW-S bounds (plus the isolated
    nodes' minima). ``converged`` says whether every component's gap closed;
    ``info["stopped"]`` is ``"gap"``, ``"bound"`` (some component stopped because its
    bound stopped rising: the relaxation is not tight there) or ``"max_iter"``. The
    result is never worse than ``init``. Hard factors enter as a finite ``BIG`` cost
    (:func:`big_cost`); a result that still breaks one is repaired by ICM or raises
    :class:`~hmrf.InfeasibleError`.

    On trees TRW-S is exact. On graphs with cannot-links the relaxation is weak: the
    bound is valid but far below, and the decoded labellings are weaker than those of
    ordinary max-product (:class:`~hmrf.inference.BeliefPropagation`).

    References
    ----------
    Kolmogorov (2006), "Convergent tree-reweighted message passing for energy
    minimization", IEEE TPAMI 28(10), §3-5. Wainwright, Jaakkola & Willsky (2005),
    "MAP estimation via agreement on trees". Szeliski et al. (2008), "A comparative
    study of energy minimization methods for Markov random fields with smoothness-based
    priors", IEEE TPAMI 30(6).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference import TRWS
    >>> unary = np.array([[0.0, 1.0], [1.0, 0.2], [0.5, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1), (1, 2)], n=3, weight=0.4)
    >>> res = TRWS().map(unary, c)
    >>> res.labels.tolist(), round(res.energy, 6), round(res.lower_bound, 6)  # a chain: exact
    ([0, 1, 1], 0.6, 0.6)
    """

    _parameter_constraints = {
        "max_iter": [Interval(Integral, 1, None)],
        "rel_gap": [Interval(Real, 0, 1, closed="left")],
        "tol": [Interval(Real, 0, None)],
        "order": [Options("auto", "bfs", "index")],
    }

    monotone_from_init = True

    def __init__(self, max_iter: int = 1000, rel_gap: float = 1e-4, tol: float = 1e-5,
                 order: Literal["auto", "bfs", "index"] = "auto", **removed: Any) -> None:
        refuse_removed("TRWS", removed, {"kernel": "the passes are always compiled with numba; drop it."})
        self.max_iter = max_iter
        self.rel_gap = rel_gap
        self.tol = tol
        self.order = order

    def _solve(self, unary, graph, init, rng, notify):
        order = trws_order(graph) if self.order == "auto" else self.order
        out = run_trws(unary, graph, max_iter=self.max_iter, rel_gap=float(self.rel_gap), tol=float(self.tol),
                       order=order, init=init, notify=notify)
        out.labels, _ = finish(unary, graph, [out.labels], "TRW-S", rng, fallback=init)
        return out
