"""The two schedules of belief propagation: what runs, per connected component, and when it stops.

Both drivers are written once and run either implementation of the passes: the NumPy
reference (:mod:`~hmrf.inference.bp.sequential_numpy`,
:mod:`~hmrf.inference.bp.flooding_numpy`) or the compiled one
(:mod:`~hmrf.inference.bp.kernels_numba`).

:func:`run_sequential` (forward and backward passes in a node order) decides per
connected component:

* attractive components (soft must-links only) with ``reweight="auto"``: ordinary
  max-product until its messages settle or ``WARM_UP_PATIENCE`` iterations pass
  without a better labelling; then cycles of ``TRW_BLOCK`` iterations of TRW-S
  (Kolmogorov 2006), which raises a lower bound, and ordinary max-product started from
  the TRW-S messages, which decodes them; until the bound proves the best labelling
  within ``rel_gap`` or the cycles stop improving (``_Phases``);
* frustrated components: ordinary max-product, undamped for ``AUTO_SWITCH``
  iterations and then damped, until the messages settle or (``schedule="auto"``) the
  labelling has not improved for ``max(AUTO_PATIENCE, AUTO_PATIENCE_WORK / n_c)``
  iterations, ``n_c`` the component's size: a bounded amount of work on a component
  that no longer improves (docs/inference.md has the measurements behind these values).

:func:`run_flooding` runs rounds of all messages at once (Basu 2005, App. A.1) until
they settle, ``max_iter`` or ``patience`` rounds without a better labelling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...graph import CacheKey, PairwiseGraph
from .messages import big_cost, marginals_from_beliefs
from .settings import BPSettings

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["BPProblem", "ScheduleRun", "run_sequential", "run_flooding", "trw_components",
           "frustrated_components",
           "lattice_components", "LATTICE_NODES", "LATTICE_CYCLES",
           "dense_frustrated_part", "component_patience", "AUTO_SWITCH", "AUTO_PATIENCE",
           "AUTO_PATIENCE_WORK", "WARM_UP_PATIENCE", "DENSE_DEGREE"]

#: which components are lattices, and the dense frustrated part (both depend on which
#: edges are hard): built anew for new weights
LATTICES = CacheKey("bp.lattices")
DENSE_PART = CacheKey("bp.dense_part")

#: with ``damping="auto"``, undamped iterations (or flooding rounds) before damping 0.5
AUTO_SWITCH = 20
#: iterations without a better labelling that end a frustrated component's sequential
#: run (at least) and the flooding run of ``schedule="auto"``
AUTO_PATIENCE = 5
#: frustrated components: node-iterations without a better labelling before stopping
AUTO_PATIENCE_WORK = 5000
#: iterations without a better labelling that end the max-product warm-up
WARM_UP_PATIENCE = 3
#: ``schedule="auto"``: frustrated components of at least this mean degree also run flooding
DENSE_DEGREE = 8
#: ``reweight="auto"``: iterations of one TRW-S phase
TRW_BLOCK = 5
#: ``reweight="auto"``: attractive components of at least this many nodes and at least
#: ``LATTICE_CYCLES`` four-cycles per node run :class:`~hmrf.inference.bp.trws.TRWS`
LATTICE_NODES = 1000
LATTICE_CYCLES = 0.1
#: ``reweight="auto"``: an attractive component stops after
#: ``max(LABEL_PATIENCE, LABEL_PATIENCE_WORK / n_c)`` iterations without a better labelling
LABEL_PATIENCE = 10
LABEL_PATIENCE_WORK = 250_000


@dataclass(frozen=True)
class BPProblem:
    """The reduced E-step problem as the passes see it.

    Attributes
    ----------
    unary : ndarray (n, k)
        Unary costs of the constrained nodes (``+inf`` allowed).
    u0 : ndarray (n, k)
        The same with every row minimum subtracted and ``inf`` replaced by ``big``.
    graph : PairwiseGraph
    big : float
        The finite stand-in for infinite costs (:func:`~hmrf.inference.bp.messages.big_cost`).
    """

    unary: np.ndarray
    u0: np.ndarray
    graph: PairwiseGraph
    big: float

    @classmethod
    def build(cls, unary: NDArray[np.floating], graph: PairwiseGraph) -> BPProblem:
        big = big_cost(unary, graph)
        u0 = unary - np.min(unary, axis=1, keepdims=True)
        return cls(unary, np.where(np.isinf(u0), big, u0), graph, big)

    def restrict(self, nodes: NDArray[np.intp], sub: Any) -> BPProblem:
        """The problem on ``nodes`` with their subgraph ``sub`` (the same ``big``)."""
        return BPProblem(self.unary[nodes], self.u0[nodes], sub, self.big)


def frustrated_components(graph: PairwiseGraph) -> np.ndarray:
    """Per component of :meth:`~hmrf.PairwiseGraph.components`: whether it has a factor
    other than a soft must-link (a cannot-link, a table or a hard factor)."""
    n_comp, comp = graph.components()
    cls = graph.edge_classes()
    bad = ~cls.must | cls.hard
    frustrated = np.zeros(n_comp, dtype=bool)
    frustrated[comp[graph.edges[bad, 0]]] = True
    return frustrated


def trw_components(reweight: Any, graph: PairwiseGraph) -> np.ndarray:
    """Components that run TRW-S: all with ``reweight="trw"``; with ``"auto"`` those
    whose factors are all soft must-links (attractive Potts); none with ``None``.
    Numbered as :meth:`~hmrf.PairwiseGraph.components` (and so as ``layout.comp``)."""
    n_comp = graph.components()[0]
    if reweight is None:
        return np.zeros(n_comp, dtype=bool)
    if reweight == "trw":
        return np.ones(n_comp, dtype=bool)
    return ~frustrated_components(graph)


def lattice_components(graph: PairwiseGraph) -> np.ndarray:
    """Per component of :meth:`~hmrf.PairwiseGraph.components`: whether it is attractive
    (soft must-links only), has at least ``LATTICE_NODES`` nodes and at least
    ``LATTICE_CYCLES`` four-cycles per node: an image grid (one per node), not a sparse
    random graph (a handful in all). Cached on the graph.

    Ordinary max-product over-counts evidence around short cycles; on a large lattice
    its labellings creep down for hundreds of iterations, where TRW-S converges
    (docs/inference.md, "Image grids"). Four-cycles through node ``i`` are counted from
    the closed 4-walks of the simple adjacency ``A``: ``((A^4)_ii - d_i^2 - sum_{j~i}
    (d_j - 1)) / 2``, each cycle seen from its four nodes. Components where ``A^2``
    would hold more than ``50 m`` entries (hubs of high degree) are not counted, and
    not lattices.
    """
    def build():
        n_comp, comp = graph.components()
        size = np.bincount(comp, minlength=n_comp)
        out = ~frustrated_components(graph) & (size >= LATTICE_NODES)
        if out.any():
            nodes = np.flatnonzero(out[comp])
            sub = graph if nodes.size == graph.n_nodes else graph.subgraph(nodes)
            adj = sub.neighbors().copy()
            adj.data[:] = 1.0
            adj.sum_duplicates()
            adj.data[:] = 1.0  # simple graph: multi-edges once
            deg = np.asarray(adj.sum(axis=1)).ravel()
            if float(deg @ deg) <= 50.0 * max(sub.n_edges, 1):
                a2 = adj @ adj
                walks = np.asarray(a2.multiply(a2).sum(axis=1)).ravel()
                per_node = (walks - deg**2 - adj @ (deg - 1)) / 2.0
                cycles = np.bincount(comp[nodes], weights=per_node, minlength=n_comp) / 4.0
                out &= cycles >= LATTICE_CYCLES * size
            else:
                out[:] = False
        return out

    return graph.cache.get(LATTICES, build)


def dense_frustrated_part(graph: PairwiseGraph) -> Any:
    """Nodes of the frustrated components of mean degree >= ``DENSE_DEGREE`` and their
    subgraph (cached on the graph): where ``schedule="auto"`` also runs flooding."""
    def build():
        n_comp, comp = graph.components()
        size = np.bincount(comp, minlength=n_comp)
        m_c = np.bincount(comp[graph.edges[:, 0]], minlength=n_comp)
        nodes = np.flatnonzero((frustrated_components(graph) & (2 * m_c >= DENSE_DEGREE * size))[comp])
        sub = graph if nodes.size == graph.n_nodes else graph.subgraph(nodes)
        return nodes, sub

    return graph.cache.get(DENSE_PART, build)


def component_patience(settings: BPSettings, trw_target: Any, size: int) -> np.ndarray:
    """Per component: iterations without a better labelling that stop it (``inf``: never)."""
    if settings.patience is not None:
        return np.full(size.size, float(settings.patience))
    if settings.schedule == "auto" and settings.mode == "max":
        return np.where(trw_target, np.inf, np.maximum(AUTO_PATIENCE, np.ceil(AUTO_PATIENCE_WORK / size)))
    return np.full(size.size, np.inf)


class _Progress:
    """Per connected component: the best decoded labelling and its energy, the best TRW-S
    bound, iterations without progress (``stale``) and whether it has finished."""

    def __init__(self, comp, n_comp, n):
        self.comp, self.n_comp = comp, n_comp
        self.best = np.zeros(n, dtype=np.int64)
        self.best_e, self.best_lb = np.full(n_comp, np.inf), np.full(n_comp, -np.inf)
        self.lb_ref = np.full(n_comp, -np.inf)  # the bound when progress was last counted
        self.stale = np.zeros(n_comp, dtype=np.int64)
        self.progressed = np.zeros(n_comp, dtype=bool)  # since the driver last cleared it
        self.since_better = np.zeros(n_comp, dtype=np.int64)  # iterations since a better labelling
        self.done = np.zeros(n_comp, dtype=bool)

    def keep_best(self, labels, node_e):
        """Count an iteration; keep ``labels`` in every component where it is better."""
        e = np.bincount(self.comp, weights=node_e, minlength=self.n_comp)
        better = e < self.best_e
        self.stale += 1
        self.since_better += 1
        if np.count_nonzero(better):
            self.since_better[better] = 0  # (count_nonzero: cheaper than .any() on small masks)
            np.copyto(self.best, labels, where=better[self.comp])
            self.best_e[better], self.stale[better] = e[better], 0
            self.progressed |= better

    def gap_closed(self, trw, tol, rel_gap):
        """TRW-S components whose best labelling is proven within ``rel_gap`` (or ``tol``)."""
        e = self.best_e
        return trw & (e - self.best_lb <= np.maximum(tol * np.maximum(1.0, np.abs(e)), rel_gap * np.abs(e)))

    def add_bound(self, lb, trw, rel_gap):
        """Record this pass's TRW-S bound; a component whose bound rose by more than
        ``rel_gap * |E|`` since progress was last counted is progressing."""
        running = trw & ~self.done
        self.best_lb = np.where(running, np.maximum(self.best_lb, lb), self.best_lb)
        with np.errstate(invalid="ignore"):  # -inf - -inf before the first bound
            rising = trw & ~(self.best_lb - self.lb_ref <= rel_gap * np.abs(self.best_e))
        self.stale[rising], self.lb_ref[rising] = 0, self.best_lb[rising]
        self.progressed |= rising


@dataclass
class ScheduleRun:
    """What a schedule's driver returns (:func:`run_sequential`, :func:`run_flooding`).

    Attributes
    ----------
    candidates : list of ndarray
        Max-product: the decoding of the last messages, then the best labelling of
        every component seen on the way; sum-product: the argmax of the marginals.
    n_iter : int
    converged : bool
    info : dict
        ``stopped``, ``damping``, ``schedule``, ...; ``marginals`` in sum mode.
    lower_bound : float or None
        The TRW-S bound, when every component ran TRW-S (sequential schedule).
    """

    candidates: list
    n_iter: int
    converged: bool
    info: dict
    lower_bound: float | None = None


def run_sequential(settings: BPSettings, problem: BPProblem, passes: Any,
                   notify: Callable[..., Any] | None) -> ScheduleRun:
    """Run the sequential schedule (module docstring) with the passes ``passes``.

    ``passes`` is a :class:`~hmrf.inference.bp.sequential_numpy.SequentialMessages` or
    :class:`~hmrf.inference.bp.kernels_numba.CompiledSequentialMessages` of the problem's
    graph; ``notify(iteration, labels, bound)`` reports progress. Returns a
    :class:`ScheduleRun` (``lower_bound`` when every component ran TRW-S).
    """
    unary, graph = problem.unary, problem.graph
    n, k = unary.shape
    mode, tol, rel_gap = settings.mode, float(settings.tol), float(settings.rel_gap)
    max_mode = mode == "max"
    sm = passes
    perm, comp, n_comp = sm.perm, sm.comp, sm.n_comp
    u_p = np.ascontiguousarray(problem.u0[perm])
    msgs = sm.new_messages()
    trw_target = trw_components(settings.reweight, graph) if max_mode else np.zeros(n_comp, dtype=bool)
    # "auto": the attractive components alternate ordinary max-product and TRW-S (phases
    # below); "trw": TRW-S from the start to the end
    phases = _Phases(sm, msgs, trw_target, cycle=settings.reweight == "auto")
    lam = settings.fixed_damping or 0.0
    patience = component_patience(settings, trw_target, np.bincount(comp, minlength=n_comp))
    mp_patience = WARM_UP_PATIENCE if settings.patience is None else settings.patience
    base = float(np.min(unary, axis=1).sum())
    labels = np.zeros(n, dtype=np.int64)
    prog = _Progress(comp, n_comp, n)
    beliefs = np.zeros((n, k)) if not max_mode else None
    converged, stopped, it = False, "max_iter", 0
    bounded = bool(trw_target.all())  # every component has a TRW-S bound (once it ran)

    def unpermute(y):
        out = np.empty(n, dtype=np.int64)
        out[perm] = y
        return out

    n_done = 0
    for it in range(1, settings.max_iter + 1):
        node_e, moved_f = sm.forward(u_p, msgs, labels, mode, lam)
        if max_mode:  # labels: decoded from the messages of iteration it - 1
            prog.keep_best(labels, node_e)
            bound_now = prog.best_lb.sum() + base if bounded and np.isfinite(prog.best_lb).all() else None
            notify(it, unpermute(labels), bound_now)
            closed = prog.gap_closed(trw_target, tol, rel_gap)
            # a component with a TRW-S phase still to run goes on
            prog.done |= closed | ((prog.stale >= patience) & ~phases.pending)
            if np.count_nonzero(prog.done) > n_done:
                n_done = np.count_nonzero(prog.done)
                sm.freeze(prog.done[comp])
            if n_done == n_comp:
                converged = np.count_nonzero(closed) == n_comp
                stopped = "gap" if converged else "patience"
                break
        moved_b, lb = sm.backward(u_p, msgs, mode, lam, bound=np.count_nonzero(phases.trw & ~prog.done) > 0,
                                  beliefs=beliefs)
        if lb is not None:  # a TRW-S component also progresses while its bound rises
            prog.add_bound(lb, phases.trw, rel_gap)
        settled = not (moved_f or moved_b)
        if settings.fixed_damping is None and it == AUTO_SWITCH:
            lam = 0.5  # undamped updates did not settle: damp the plain updates from now on
        if phases.step(it, settled, prog, mp_patience):
            continue
        if settled:
            converged, stopped = True, "tol"
            break
    info = {"damping": lam, "big": problem.big, "stopped": stopped, "schedule": "sequential",
            "n_colours": sm.n_colours, "trw_components": int(trw_target.sum()),
            "n_components": n_comp, "trw_from_iter": phases.trw_from, "trw_cycles": phases.cycles}
    if not max_mode:
        marg = marginals_from_beliefs(beliefs[np.argsort(perm)])
        y = np.argmax(marg, axis=1)
        notify(it, y)
        info["marginals"] = marg
        return ScheduleRun([y], it, converged, info)
    if stopped != "gap":  # decode the last messages
        node_e, _ = sm.forward(u_p, msgs, labels, send=False)
        prog.keep_best(labels, node_e)
    out = ScheduleRun([unpermute(labels), unpermute(prog.best)], it, converged, info)
    if bounded and np.isfinite(prog.best_lb).all():
        out.lower_bound = float(prog.best_lb.sum()) + base
    return out


class _Phases:
    """Which update the attractive components run: ordinary max-product or TRW-S.

    With ``cycle`` (``reweight="auto"``) the components in ``trw_target`` alternate: a
    max-product phase (until the messages settle or ``mp_patience`` iterations pass
    without a better labelling), then ``TRW_BLOCK`` iterations of TRW-S, the first time
    from zero messages and later from where the previous TRW-S phase stopped, then
    max-product again *from the TRW-S messages*, and so on. A component stops when its
    gap closes (in the driver), after a cycle that brought neither a better labelling
    nor a bound higher by ``rel_gap * |E|``, or after
    ``max(LABEL_PATIENCE, LABEL_PATIENCE_WORK / n_c)`` iterations without a better
    labelling (a bounded amount of work where the relaxation is not tight and the bound
    creeps up without closing the gap). TRW-S raises the bound quickly but decodes
    slowly; max-product started from its messages decodes sharply (docs/inference.md).
    Without ``cycle`` the components in ``trw_target`` run TRW-S throughout.
    """

    def __init__(self, sm, msgs, trw_target, cycle):
        self.sm, self.msgs, self.target, self.cycle = sm, msgs, trw_target, cycle and bool(trw_target.any())
        self.trw = np.zeros_like(trw_target) if self.cycle else trw_target.copy()
        self.pending = self.target & ~self.trw if self.cycle else np.zeros_like(trw_target)
        self.saved, self.block, self.cycles = None, 0, 0
        self.trw_from = 1 if self.trw.any() else None
        size = np.bincount(sm.comp, minlength=trw_target.size)
        self.label_patience = np.maximum(LABEL_PATIENCE, np.ceil(LABEL_PATIENCE_WORK / np.maximum(size, 1)))
        sm.set_gamma(self.trw[sm.comp])

    def step(self, it, settled, prog, mp_patience) -> bool:
        """After iteration ``it``: switch phase if this one is over; returns whether it switched."""
        if not self.cycle:
            return False
        sm, live = self.sm, self.target & ~prog.done
        if self.trw.any():
            self.block += 1
            if self.block < TRW_BLOCK and not settled:
                return False
            # to max-product, from the TRW-S messages (kept for the next TRW-S phase)
            self.saved = self.msgs.copy()
            self.trw = np.zeros_like(self.trw)
            sm.set_gamma(self.trw[sm.comp])
            sm.wake(live[sm.comp])
            prog.stale[self.target] = 0
            return True
        if not (settled or np.count_nonzero(prog.stale[live] < mp_patience) == 0):
            return False
        if self.cycles:  # a cycle without progress ends a component
            prog.done |= live & (~prog.progressed | (prog.since_better >= self.label_patience))
            live = self.target & ~prog.done
            if not live.any():
                return False
        # to TRW-S: from zero messages the first time, then from where it stopped
        self.cycles += 1
        self.trw, self.pending, self.block = live.copy(), np.zeros_like(live), 0
        which = self.trw[sm.comp[sm.layout.src]]
        if self.saved is None:
            sm.zero_messages(self.msgs, which)
            self.trw_from = it + 1
        else:
            sm.restore_messages(self.msgs, which, self.saved)
        sm.set_gamma(self.trw[sm.comp])
        sm.wake(self.trw[sm.comp])
        prog.stale[self.trw] = 0
        prog.progressed[:] = False
        return True


def run_flooding(settings: BPSettings, problem: BPProblem, rounds: Any, notify: Callable[..., Any] | None,
                 patience: Any = None) -> ScheduleRun:
    """Run flooding rounds (module docstring) with the rounds ``rounds``.

    ``rounds`` is a :class:`~hmrf.inference.bp.flooding_numpy.FloodingRounds` or
    :class:`~hmrf.inference.bp.kernels_numba.CompiledFloodingRounds`: ``step(damping)``
    runs one round and returns (moved, anytime labels, their energy); ``decode()`` and
    ``marginals()`` read the final messages. ``patience`` (default: the settings')
    stops max mode after that many rounds without a better anytime labelling. Returns a
    :class:`ScheduleRun` (max mode: the consistent decoding, then the best anytime
    labelling; sum mode: the argmax of the marginals).
    """
    patience = settings.patience if patience is None else patience
    max_mode = settings.mode == "max"
    lam = settings.fixed_damping or 0.0
    best, best_e, stale, stopped, converged, it = None, np.inf, 0, "max_iter", False, 0
    for it in range(1, settings.max_iter + 1):
        if settings.fixed_damping is None and it == AUTO_SWITCH + 1:
            lam = 0.5  # undamped updates did not settle: damp from now on
        moved, labels, energy = rounds.step(lam)
        if max_mode:  # anytime: remember the best per-node argmin
            if best is None or energy < best_e:
                best, best_e, stale = labels.copy(), energy, 0
            else:
                stale += 1
            notify(it, labels)
        if not moved:
            converged, stopped = True, "tol"
            break
        if patience is not None and stale >= patience:
            stopped = "patience"
            break
    info = {"damping": lam, "big": problem.big, "reweighted": rounds.reweighted, "stopped": stopped,
            "schedule": "flooding"}
    if not max_mode:
        marg = rounds.marginals()
        labels = np.argmax(marg, axis=1)
        notify(it, labels)
        info["marginals"] = marg
        return ScheduleRun([labels], it, converged, info)
    return ScheduleRun([rounds.decode(), best], it, converged, info)
