"""Sequential tree-reweighted message passing: :class:`TRWS` (Kolmogorov 2006).

TRW-S maximises the lower bound of the LP relaxation of the E-step (the dual of the
local polytope, the same relaxation as :class:`~hmrf.inference.LPRelaxation` on Potts
factors) by message passing along monotonic chains, in a fixed node order, forward and
backward; the bound never decreases. The passes are in :mod:`.trws_numpy` (NumPy) and
:mod:`.trws_numba` (compiled); :func:`run_trws` drives them, per connected component,
until the best labelling is proven within ``rel_gap`` of the optimum or the bound stops
rising.
"""

from __future__ import annotations

import time
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np

from ..._optional import available, missing_message
from ..._params import Interval, Options
from ...graph import POTTS_ML
from ..base import InferenceEngine, Solution
from ..polish import finish
from .messages import big_cost
from .order import NODE_ORDERS, bfs_order
from .trws_numpy import TRWSLayout, backward_pass, edge_costs, forward_pass

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    from numpy.typing import NDArray

    from ...graph import PairwiseGraph

__all__ = ["TRWS", "run_trws", "trws_layout", "trws_order", "STALL_WINDOW", "STALL_GAP"]


#: iterations over which a component's gap must close by more than ``tol`` per iteration
#: (relative; the bound rising and the best labelling improving together) for it to go on
STALL_WINDOW = 10
#: a component whose gap is above this (relative) must close it ten times more slowly to
#: stop: its decoding can still find a much better labelling as the messages converge
STALL_GAP = 0.01


def trws_layout(graph: PairwiseGraph, order: str) -> TRWSLayout:
    """The :class:`~hmrf.inference.bp.trws_numpy.TRWSLayout` of ``order`` (``"bfs"`` or
    ``"index"``), cached on the graph."""
    key = "trws-" + order
    layouts = graph.cache.get(NODE_ORDERS, dict)
    if key not in layouts:
        perm = bfs_order(graph) if order == "bfs" else np.arange(graph.n_nodes)
        layouts[key] = TRWSLayout(graph, perm)
    return layouts[key]


def trws_order(graph: PairwiseGraph) -> str:
    """``order="auto"``: ``"index"`` when the nodes' own order is local (at least 99 % of the
    edges join nodes at most ``2 sqrt(n)`` apart, as an image grid in raster order),
    else ``"bfs"``."""
    n = graph.n_nodes
    if graph.n_edges == 0:
        return "bfs"
    span = np.abs(graph.edges[:, 0] - graph.edges[:, 1])
    return "index" if np.mean(span <= 2.0 * np.sqrt(n)) >= 0.99 else "bfs"


def run_trws(unary: NDArray[np.floating], graph: PairwiseGraph, *, max_iter: int = 1000,
             rel_gap: float = 1e-4, tol: float = 1e-5, order: str = "bfs", compiled: bool = True,
             notify: Callable[..., Any] | None = None, init: Any = None) -> Solution:
    """TRW-S on ``(unary, graph)`` (the engine's algorithm, see :class:`TRWS`).

    Returns a :class:`~hmrf.inference.base.Solution` with ``labels`` (the best decoded
    labelling of every connected component, or ``init`` where it is better), ``lower_bound``, ``n_iter``,
    ``converged`` (every component's gap closed to ``rel_gap``) and ``info``
    (``stopped``: "gap", "bound" (the bound stopped rising) or "max_iter"; ``order``;
    ``gap_components``: components whose gap closed; ``bound_trace``: the bound of each
    iteration's backward pass, summed over the components still running;
    ``energy_trace`` and ``time_trace``: the best energy so far and the seconds since
    this function started, after each iteration). ``notify(iteration, labels, bound)``
    after each iteration: ``labels`` is valid during the call only (copy it to keep it).
    """
    t_start = time.perf_counter()
    n, k = unary.shape
    lay = trws_layout(graph, order)
    perm, comp, n_comp = lay.perm, lay.comp, lay.n_comp
    big = big_cost(unary, graph)
    rowmin = np.min(unary, axis=1)
    u0 = unary - rowmin[:, None]
    u_p = np.ascontiguousarray(np.where(np.isinf(u0), big, u0)[perm])
    base = np.bincount(comp, weights=rowmin[perm], minlength=n_comp)  # true energy = E(u0) + base
    costs = edge_costs(lay, graph, k, big)
    msg = np.zeros((lay.lo.shape[0], k))
    labels = np.zeros(n, dtype=np.int64)
    node_e = np.zeros(n)
    active = np.ones(n, dtype=bool)
    best = np.zeros(n, dtype=np.int64)
    best_e = np.full(n_comp, np.inf)
    best_lb = np.full(n_comp, -np.inf)
    if init is not None:  # the result is never worse than the start
        best = np.asarray(init, dtype=np.int64)[perm].copy()
        best_e = _component_energy(u_p, lay, costs, best) + base
    history = []  # the last STALL_WINDOW iterations: (best energies, best bounds) per component
    trace = []  # per iteration: the bound of its backward pass (summed over the running components)
    done = np.zeros(n_comp, dtype=bool)
    closed = np.zeros(n_comp, dtype=bool)
    must_links = bool(np.all(lay.kind == POTTS_ML))
    passes = None
    if compiled and must_links:
        from . import trws_numba as kernels

        passes = kernels.must_link_passes(k)  # compiled for this k (None if k is not small)
    if passes is not None:
        fwd_k, bwd_k = passes
        lo, fptr, bptr, be = (a.view(np.uint64) for a in (lay.lo, lay.fptr, lay.bptr, lay.be))

        def forward():
            fwd_k(u_p, msg, lo, costs.w, fptr, bptr, be, lay.gamma, active, labels, node_e)

        def backward(lb):
            bwd_k(u_p, msg, costs.w, fptr, bptr, be, lay.gamma, active, comp, lb)
    elif compiled and must_links:
        def forward():
            kernels.forward_pass_ml(u_p, msg, lay.lo, costs.w, lay.fptr, lay.bptr, lay.be, lay.gamma, active,
                                    labels, node_e)

        def backward(lb):
            kernels.backward_pass_ml(u_p, msg, costs.w, lay.fptr, lay.bptr, lay.be, lay.gamma, active, comp,
                                     lb)
    elif compiled:
        from . import trws_numba as kernels

        def forward():
            kernels.forward_pass(u_p, msg, lay.lo, lay.kind, costs.w, costs.tab_of, costs.tcost, lay.fptr,
                                 lay.bptr, lay.be, lay.gamma, active, labels, node_e)

        def backward(lb):
            kernels.backward_pass(u_p, msg, lay.kind, costs.w, costs.tab_of, costs.tcost, lay.fptr, lay.bptr,
                                  lay.be, lay.gamma, active, comp, lb)
    else:
        def forward():
            forward_pass(u_p, msg, lay, costs, active, labels, node_e)

        def backward(lb):
            backward_pass(u_p, msg, lay, costs, active, lb)

    stopped, it = "max_iter", 0
    energy_trace, time_trace = [], []
    one = n_comp == 1  # one component (an image grid): sums and copies without the gathers
    identity = order == "index"  # perm is the identity: the labels need no reordering
    for it in range(1, int(max_iter) + 1):
        forward()
        e = (np.array([node_e.sum()]) if one else np.bincount(comp, weights=node_e, minlength=n_comp)) + base
        better = (e < best_e) & ~done
        if better.any():
            if one:
                np.copyto(best, labels)
            else:
                np.copyto(best, labels, where=better[comp])
            best_e = np.where(better, e, best_e)
        lb = np.zeros(n_comp)
        backward(lb)
        trace.append(float((lb + base)[~done].sum()))
        best_lb = np.where(done, best_lb, np.maximum(best_lb, lb + base))
        energy_trace.append(float(best_e.sum()))
        time_trace.append(time.perf_counter() - t_start)
        history.append((best_e.copy(), best_lb.copy()))
        if notify is not None:
            notify(it, best if identity else _unpermute(best, perm), float(best_lb.sum()))
        scale = np.maximum(np.abs(best_e), 1.0)
        closed |= ~done & (best_e - best_lb <= rel_gap * scale)
        stall = np.zeros(n_comp, dtype=bool)
        if it > STALL_WINDOW:
            old_e, old_lb = history[-1 - STALL_WINDOW]
            flat = np.where(best_e - best_lb <= STALL_GAP * scale, tol, 0.1 * tol)
            # the gap closed by at most `flat` per iteration, from either side
            stall = (best_lb - old_lb) + (old_e - best_e) <= flat * STALL_WINDOW * scale
            history.pop(0)
        newly = ~done & (closed | stall)
        if newly.any():
            done |= newly
            active &= ~newly[comp]
        if done.all():
            stopped = "gap" if closed.all() else "bound"
            break
    info = {"stopped": stopped, "order": order, "gap_components": int(closed.sum()),
            "n_components": int(n_comp), "bound_trace": trace, "energy_trace": energy_trace,
            "time_trace": time_trace}
    return Solution(_unpermute(best, perm), lower_bound=float(best_lb.sum()), n_iter=it,
                    converged=bool(closed.all()), info=info)


def _unpermute(y, perm):
    out = np.empty(y.size, dtype=np.int64)
    out[perm] = y
    return out


def _component_energy(u_p, lay, costs, y):
    """Energy of ``y`` (new numbering) on the capped costs, per component."""
    node = u_p[np.arange(y.size), y]
    from .trws_numpy import _costs_to

    edge = _costs_to(y[lay.lo], y[lay.hi][:, None], np.arange(lay.lo.size), lay, costs)[:, 0]
    return (np.bincount(lay.comp, weights=node, minlength=lay.n_comp)
            + np.bincount(lay.comp[lay.lo], weights=edge, minlength=lay.n_comp))


class TRWS(InferenceEngine):
    """Sequential tree-reweighted max-product message passing, TRW-S (Kolmogorov 2006).

    Nodes are visited in a fixed order, forward then backward; each node ``s`` sends
    along its edges towards the pass's direction

    ``m_{s->t}(x_t) = min_{x_s} [ gamma_s θ̂_s(x_s) - m_{t->s}(x_s) + θ_st(x_s, x_t) ]``

    with ``θ̂_s = θ_s + sum_t m_{t->s}`` its belief and ``gamma_s = 1 / max(n_s^-, n_s^+)``
    (``n_s^-`` / ``n_s^+`` its edges to earlier / later nodes: the weight of the
    monotonic chains through it). Each backward pass gives a lower bound on the optimal
    energy that never decreases; each forward pass decodes a labelling node by node
    (:mod:`~hmrf.inference.bp.trws_numpy` has the formulas). Every connected component
    keeps its best labelling and its best bound and stops as soon as the gap is closed
    (``E - LB <= rel_gap |E|``) or when, over ``STALL_WINDOW = 10`` iterations, its
    gap closed by at most ``tol |E|`` per iteration (``tol |E| / 10`` while the gap is
    above ``STALL_GAP = 1 %``), the bound rising and the labelling improving together.

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
        labelling improving together: both may still creep, but closing the remaining
        gap at that rate would take more than ``gap / tol`` iterations. While the gap is
        above ``STALL_GAP`` (1 %) the rate must be ten times lower: far from its bound,
        the decoding can still jump to a much better labelling as the messages converge
        (a 5,000-node must-link E-step went from 1.4 % above its bound to optimal 18
        iterations after its bound slowed to ``1e-5``).
    order : {"auto", "bfs", "index"}, default="auto"
        Node order. ``"index"``: the nodes' own order (raster order on an image grid,
        the order of Kolmogorov's and Szeliski et al.'s grid experiments). ``"bfs"``:
        breadth first from each component's highest-degree node
        (:func:`~hmrf.inference.bp.order.bfs_order`), long monotonic chains on
        irregular graphs. ``"auto"``: ``"index"`` when the nodes' own order is local
        (:func:`trws_order`: an image grid in raster order), else ``"bfs"``.
    kernel : {"auto", "numba", "numpy"}, default="auto"
        Passes compiled with numba (``pip install hmrf[fast]``) or vectorised over the
        levels of the order in NumPy (the same messages, a few times slower on grids,
        much slower on orders with many levels). ``"auto"``: numba when installed.

    Notes
    -----
    ``lower_bound`` is always reported: the sum of the components' best TRW-S bounds
    (plus the isolated nodes' minima). ``converged`` says whether every component's gap
    closed; ``info["stopped"]`` is ``"gap"``, ``"bound"`` (some component stopped
    because its bound stopped rising: the relaxation is not tight there) or
    ``"max_iter"``. The result is never worse than ``init``. Hard factors enter as a
    finite ``BIG`` cost (:func:`~hmrf.inference.bp.messages.big_cost`); a result that
    still breaks one is repaired by ICM or raises :class:`~hmrf.InfeasibleError`.

    On trees TRW-S is exact (``gamma = 1`` on a chain; on any tree the bound equals the
    optimum after one iteration in an order where every node has at most one earlier
    or one later neighbour, e.g. breadth first). On graphs with cannot-links the
    relaxation is weak: the bound is valid but far below, and the decoded labellings
    are weaker than those of ordinary max-product
    (:class:`~hmrf.inference.BeliefPropagation`).

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
        "kernel": [Options("auto", "numba", "numpy")],
    }

    monotone_from_init = True

    def __init__(self, max_iter: int = 1000, rel_gap: float = 1e-4, tol: float = 1e-5,
                 order: Literal["auto", "bfs", "index"] = "auto",
                 kernel: Literal["auto", "numba", "numpy"] = "auto") -> None:
        self.max_iter = max_iter
        self.rel_gap = rel_gap
        self.tol = tol
        self.order = order
        self.kernel = kernel

    def _solve(self, unary, graph, init, rng, notify):
        compiled = self.kernel != "numpy" and available("numba")
        if self.kernel == "numba" and not compiled:
            raise ImportError(missing_message("numba", "TRWS(kernel='numba')"))
        order = trws_order(graph) if self.order == "auto" else self.order
        out = run_trws(unary, graph, max_iter=self.max_iter, rel_gap=float(self.rel_gap), tol=float(self.tol),
                       order=order, compiled=compiled, init=init,
                       notify=lambda it, y, b: notify(it, y, b))
        out.labels, _ = finish(unary, graph, [out.labels], "TRW-S", rng, fallback=init)
        return out
