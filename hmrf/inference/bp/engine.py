"""The belief-propagation engine: :class:`BeliefPropagation` (Basu 2005, Appendix A.1, Fig. A.1).

The factor graph has one variable per hidden label ``y_i``, one unary factor ``D_i``
per point and one pairwise factor per constraint (or table edge). Max-product in the
log domain is min-sum. The engine validates its settings
(:class:`~hmrf.inference.bp.settings.BPSettings`), picks the passes (compiled or NumPy)
and the schedule (:mod:`~hmrf.inference.bp.schedules`), and keeps the best labelling of
what ran. Only constrained nodes reach it (:func:`~hmrf.inference.base.reduce_problem`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..base import InferenceEngine, Solution
from ..polish import finish, polish_labels
from .flooding_numpy import FloodingRounds, uniform_edge_appearance
from .schedules import (
    AUTO_PATIENCE,
    BPProblem,
    dense_frustrated_part,
    lattice_components,
    run_flooding,
    run_sequential,
)
from .sequential_numpy import SequentialMessages
from .settings import BPSettings
from .trws import run_trws, trws_order

if TYPE_CHECKING:
    from typing import Literal

    from numpy.typing import NDArray

    from ...graph import PairwiseGraph

__all__ = ["BeliefPropagation", "uniform_edge_appearance"]


class BeliefPropagation(InferenceEngine):
    """Loopy max-product (min-sum) or sum-product belief propagation (Basu 2005, App. A.1).

    Messages on a pairwise factor ``f = (i, j)`` are, in the log domain,

    ``m_{f->j}(y_j) = min_{y_i} [ gamma_i B_i(y_i) - m_{f->i}(y_i) + cost_f(y_i, y_j) ]``

    with ``B_i = U_i + sum_{g ∋ i} m_{g->i}`` the belief of node i, O(k) for Potts
    factors (:mod:`~hmrf.inference.bp.messages`). By default the nodes are visited in a
    fixed order, forward then backward (the sequential schedule); ``gamma_i = 1`` is
    ordinary max-product, ``gamma_i = 1 / max(n_i^-, n_i^+)`` sequential tree-reweighted
    message passing (TRW-S), whose lower bound never decreases and certifies the result.

    Parameters
    ----------
    mode : {"max", "sum"}, default="max"
        ``"max"``: max-product (min-sum), for the MAP labelling of the E-step. ``"sum"``:
        sum-product; ``marginals`` of the result holds the (n, k) approximate posteriors
        ``p(y_i = h)`` (exact on trees) and ``labels`` their argmax. See :meth:`marginals`.
    max_iter : int or "auto", default="auto"
        Maximum number of iterations: a forward and a backward pass (sequential) or one
        round (flooding). ``"auto"``: 100, and 1000 on the components that run
        :class:`~hmrf.inference.bp.trws.TRWS` (``reweight="auto"``), whose own stopping
        rule ends them first.
    damping : "auto" or float in [0, 1), default="auto"
        New messages are ``(1 - damping) * update + damping * old`` (log domain).
        ``"auto"``: undamped for ``AUTO_SWITCH = 20`` iterations, then 0.5 (damping
        settles oscillations on frustrated cannot-link cycles). TRW-S updates are never
        damped (Kolmogorov 2006).
    tol : float, default=1e-6
        Converged when no message changes by more than ``tol`` in an iteration; senders
        none of whose inputs moved by more than ``tol`` are skipped (lazy updates).
    reweight : {"auto", None, "trw"} or float in (0, 1], default="auto"
        ``"auto"``: a *lattice* component (soft must-links only, at least
        ``LATTICE_NODES = 1000`` nodes and ``LATTICE_CYCLES = 0.1`` four-cycles per node,
        such as an image grid; :func:`~hmrf.inference.bp.schedules.lattice_components`)
        runs :class:`~hmrf.inference.bp.trws.TRWS` (its own stopping rule, ``rel_gap``
        and up to ``max_iter`` iterations); every other component whose factors are all
        soft must-links first runs ordinary max-product until its messages settle (at
        most ``AUTO_SWITCH`` iterations, or ``WARM_UP_PATIENCE = 3`` (or ``patience``)
        without a better labelling), then TRW-S from zero messages; the other components
        run ordinary max-product. ``None``: ordinary BP everywhere. ``"trw"``: TRW-S on every
        component (sequential), or the tree-reweighted updates of Wainwright, Jaakkola &
        Willsky (2005) with :func:`uniform_edge_appearance` (flooding; use
        ``damping=0.5``). A float is one ``rho`` for every edge and selects flooding.
        Sum-product uses ordinary updates with ``"auto"``, flooding when reweighted.
    polish : {None, "icm"}, default=None
        Run ICM from the best labelling found (never increases the energy).
    patience : int or None, default=None
        Max mode: stop a component after this many iterations without a better decoded
        labelling (for a TRW-S component: and without its bound rising by more than
        ``rel_gap * |E|``). ``None``: with ``schedule="auto"`` a frustrated component
        (with a cannot-link, table or hard factor) stops after
        ``max(AUTO_PATIENCE, AUTO_PATIENCE_WORK / n_c)`` such iterations (5 and 5000,
        ``n_c`` its number of nodes): few for a large component, where each iteration
        costs most, up to ``max_iter`` for a small one; attractive components stop on
        their TRW-S gap. Otherwise ``None`` runs to ``tol``, the gap or ``max_iter``.
    schedule : {"auto", "sequential", "flooding"}, default="auto"
        ``"sequential"``: forward and backward passes in a node order (``order``).
        ``"flooding"``: all messages at once per round (the thesis's schedule; per-node
        argmin anytime labelling and a final consistent decoding). ``"auto"``:
        sequential and, in max mode, on frustrated components of mean degree at least
        ``DENSE_DEGREE = 8``, flooding as well (at most ``AUTO_PATIENCE`` rounds without
        a better labelling), keeping per connected component the cheaper labelling
        (``info["flooding_iter"]``): sequential max-product can lock a dense must-link
        clique onto a wrong label early. The callback sees the sequential iterations.
    rel_gap : float in [0, 1), default=1e-3
        A TRW-S component stops as soon as its best labelling is proven within
        ``rel_gap`` (relative) of that component's optimum by the TRW-S bound.
    kernel : {"auto", "numba", "numpy"}, default="auto"
        Max-product passes compiled with numba (``pip install hmrf[fast]``) or
        vectorised NumPy. ``"auto"``: numba when it is installed. Sum-product and
        reweighted flooding always run the NumPy passes.
    order : {"auto", "bfs", "colour"}, default="auto"
        Node order of the sequential schedule (:mod:`~hmrf.inference.bp.order`).
        ``"colour"``: colour class by colour class, what the NumPy passes need.
        ``"bfs"``: breadth first from each component's highest-degree node (compiled
        passes only), whose monotonic chains carry evidence across the whole component
        in one pass. ``"auto"``: ``"bfs"`` with the compiled passes, else ``"colour"``.
        The same settings give the same result; different kernels or orders may give
        different (equally valid) labellings.

    Notes
    -----
    Ordinary loopy max-product over-counts evidence around short loops, so on a dense
    group of must-links its fixed point can be several per cent above the optimum.
    TRW-S optimises the dual of the LP relaxation, tight or nearly so when every factor
    is an attractive must-link; but its messages are scaled by ``gamma_i <= 1/2`` and
    move evidence slowly, hence ``reweight="auto"``: ordinary max-product first (a cheap
    labelling), then TRW-S, which improves on it or proves it within ``rel_gap``. With
    cannot-links the relaxation is weak and TRW-S decodes worse than ordinary
    max-product, so frustrated components run ordinary max-product only.
    docs/inference.md has the measurements behind each default.

    **Decoding.** Every forward pass decodes the current messages node by node in the
    schedule's order, with the true factor costs towards already-decoded nodes
    (Kolmogorov 2006, §5.1; libDAI's consistent decoding); each connected component
    keeps its best decoded labelling, so the result is never worse than any labelling
    the callback saw (``info["decoded_energy"]`` is the energy of the last decoding).

    **Bound.** When every component runs TRW-S, ``lower_bound`` is the sum of the
    components' best TRW-S bounds and ``converged`` says whether every gap closed (to
    ``rel_gap``); otherwise ``lower_bound`` is ``None``. ``info["trws_components"]``
    counts the lattice components solved by :class:`~hmrf.inference.bp.trws.TRWS`. On a
    forest both schedules are exact. ``info`` of the sequential schedule also holds ``n_colours``,
    ``n_components``, ``trw_components`` and ``trw_from_iter`` (the first TRW-S
    iteration, ``None`` if none ran).

    Hard factors are handled through a finite ``BIG`` cost
    (:func:`~hmrf.inference.bp.messages.big_cost`); if the labelling found still breaks
    one, ICM repairs it, and :class:`~hmrf.InfeasibleError` is raised if that fails.

    References
    ----------
    Basu (2005), Appendix A.1 and Fig. A.1. Kschischang, Frey & Loeliger (2001),
    "Factor graphs and the sum-product algorithm". Felzenszwalb & Huttenlocher (2006),
    "Efficient belief propagation for early vision" (O(k) Potts messages). Wainwright,
    Jaakkola & Willsky (2005), "MAP estimation via agreement on trees". Kolmogorov
    (2006), "Convergent tree-reweighted message passing for energy minimization", IEEE
    TPAMI 28(10) (TRW-S: §4-5, bound and decoding §5). Elidan, McGraw & Koller (2006),
    "Residual belief propagation" (updating only what changed).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference import BeliefPropagation
    >>> unary = np.array([[0.0, 1.0], [1.0, 0.2], [0.5, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], n=3, weight=2.0)
    >>> res = BeliefPropagation().map(unary, c)
    >>> res.labels.tolist(), res.energy, res.lower_bound  # TRW-S proves it optimal
    ([0, 0, 1], 1.0, 1.0)
    >>> BeliefPropagation(mode="sum").marginals(unary, c).round(3)[0]  # exact on a tree
    array([0.6, 0.4])
    """

    def __init__(self, mode: Literal["max", "sum"] = "max", max_iter: int | str = "auto",
                 damping: float | str = "auto", tol: float = 1e-6, reweight: str = "auto",
                 polish: Literal["icm"] | None = None, patience: int | None = None,
                 schedule: Literal["auto", "sequential", "flooding"] = "auto", rel_gap: float = 1e-3,
                 kernel: Literal["auto", "numba", "numpy"] = "auto",
                 order: Literal["auto", "bfs", "colour"] = "auto") -> None:
        self.mode = mode
        self.max_iter = max_iter
        self.damping = damping
        self.tol = tol
        self.patience = patience
        self.reweight = reweight
        self.polish = polish
        self.schedule = schedule
        self.rel_gap = rel_gap
        self.kernel = kernel
        self.order = order

    def settings(self) -> BPSettings:
        """This engine's parameters, validated (:class:`~hmrf.inference.bp.settings.BPSettings`)."""
        return BPSettings.of(self)

    # ------------------------------------------------------------------ engine
    def _solve(self, unary, graph, init, rng, notify):
        s = self.settings()
        if s.reweight == "auto" and s.sequential and s.mode == "max":
            lattice = lattice_components(graph)
            if lattice.any():
                return self._solve_with_trws(s, unary, graph, lattice, init, rng, notify)
        return self._solve_bp(s, unary, graph, init, rng, notify)

    def _solve_with_trws(self, s, unary, graph, lattice, init, rng, notify):
        """``reweight="auto"``: the lattice components (:func:`~.schedules.lattice_components`)
        run :class:`~hmrf.inference.bp.trws.TRWS`, the others this engine's schedule."""
        n_comp, comp = graph.components()
        on = lattice[comp]
        lat, rest = np.flatnonzero(on), np.flatnonzero(~on)
        whole = rest.size == 0
        lat_graph = graph if whole else graph.subgraph(lat)
        labels = np.zeros(unary.shape[0], dtype=np.int64)
        t = run_trws(unary[lat], lat_graph, max_iter=s.trws_max_iter, rel_gap=s.rel_gap,
                     order=trws_order(lat_graph), compiled=s.compiled,
                     init=None if init is None else init[lat])
        labels[lat], _ = finish(unary[lat], lat_graph, [t.labels], "TRW-S", rng,
                                fallback=None if init is None else init[lat])
        info = dict(t.info, trws_components=int(lattice.sum()), trws_iter=t.n_iter)
        if whole:
            notify(t.n_iter, labels, t.lower_bound)
            info.update(n_components=int(n_comp), trw_components=int(n_comp), schedule="trws")
            return Solution(labels, lower_bound=t.lower_bound, n_iter=t.n_iter, converged=t.converged,
                            info=info)
        rest_graph = graph.subgraph(rest)

        def notify_rest(it, y, bound=None):
            labels[rest] = y
            notify(it, labels, None if bound is None else bound + t.lower_bound)

        rest_init = None if init is None else init[rest]
        out = self._solve_bp(s, unary[rest], rest_graph, rest_init, rng, notify_rest)
        labels[rest] = out.labels
        bp_info = out.info
        bp_info.update({key: val for key, val in info.items() if key not in bp_info})
        bp_info.update(n_components=int(n_comp), trws_stopped=t.info["stopped"],
                       trw_components=bp_info["trw_components"] + int(lattice.sum()))
        bound = out.lower_bound
        return Solution(labels, lower_bound=None if bound is None else bound + t.lower_bound,
                        n_iter=max(out.n_iter, t.n_iter), converged=out.converged and t.converged,
                        info=bp_info)

    def _solve_bp(self, s, unary, graph, init, rng, notify):
        problem = BPProblem.build(unary, graph)
        if s.sequential:
            out = run_sequential(s, problem, _sequential_passes(s, problem), notify)
        else:
            rounds = _flooding_rounds(s, problem, s.edge_appearance(graph), rng)
            out = run_flooding(s, problem, rounds, notify)
        if s.mode == "sum":
            marginals = out.info.pop("marginals")
            return Solution(out.candidates[0], lower_bound=out.lower_bound, n_iter=out.n_iter,
                            converged=out.converged, info=out.info, marginals=marginals)
        info = out.info
        info["decoded_energy"] = graph.energy(out.candidates[0], unary)
        cands = list(out.candidates)
        known = [info["decoded_energy"]] + [None] * (len(cands) - 1)
        if s.schedule == "auto" and s.sequential and info["trw_components"] < info["n_components"]:
            cands += self._dense_flooding(s, problem, cands, rng, info)
        if s.polish_with:
            start = min(cands, key=lambda y: graph.energy(y, unary))
            polished, sweeps = polish_labels(unary, graph, start, rng)
            cands.append(polished)
            info["polish_sweeps"] = sweeps
        known += [None] * (len(cands) - len(known))
        labels, _ = finish(unary, graph, cands, "belief propagation", rng, fallback=init, energies=known)
        return Solution(labels, lower_bound=out.lower_bound, n_iter=out.n_iter, converged=out.converged,
                        info=info)

    @staticmethod
    def _dense_flooding(s, problem, cands, rng, info) -> list:
        """``schedule="auto"``: flooding max-product on the dense frustrated components too.

        Returns the new candidates: the flooding labellings spliced into the sequential
        decoding ``cands[0]``, and the cheapest of all candidates per component.
        """
        graph, unary = problem.graph, problem.unary
        nodes, sub = dense_frustrated_part(graph)
        if not nodes.size:
            return []
        part = problem.restrict(nodes, sub)
        patience = AUTO_PATIENCE if s.patience is None else s.patience
        fl = run_flooding(s, part, _flooding_rounds(s, part, None, rng), lambda *a: None, patience=patience)
        spliced = []
        for y in fl.candidates:
            spliced.append(cands[0].copy())
            spliced[-1][nodes] = y
        info["flooding_iter"] = fl.n_iter
        return spliced + [graph.best_per_component(unary, np.array(cands + spliced))[0]]

    # ------------------------------------------------------------- sum-product
    @property
    def gives_marginals(self) -> bool:
        """Sum-product gives posteriors (``InferenceResult.marginals``); max-product does not."""
        return self.mode == "sum"

    def marginals(self, unary: NDArray[np.floating], graph: PairwiseGraph | None = None,
                  rng: np.random.Generator | None = None) -> np.ndarray:
        """Sum-product marginals ``p(y_i = h) ∝ sum_{y: y_i = h} exp(-E(y))``, shape (n, k).

        Runs this engine's settings with ``mode="sum"``. Exact on trees and forests; the
        Bethe approximation on loopy graphs (a reweighted one with ``reweight``).
        """
        engine = BeliefPropagation("sum", self.max_iter, self.damping, self.tol, self.reweight,
                                   schedule=self.schedule)
        return engine.map(unary, graph, rng=rng).marginals


def _sequential_passes(s: BPSettings, problem: BPProblem):
    """The passes of the sequential schedule: compiled in ``s.node_order`` or NumPy."""
    k = problem.unary.shape[1]
    if s.compiled:
        from .kernels_numba import CompiledSequentialMessages

        return CompiledSequentialMessages(problem.graph, k, problem.big, s.tol, order=s.node_order)
    return SequentialMessages(problem.graph, k, problem.big, s.tol)


def _flooding_rounds(s: BPSettings, problem: BPProblem, rho, rng):
    """The rounds of the flooding schedule: compiled in max mode without reweighting."""
    if s.compiled and rho is None:
        from .kernels_numba import CompiledFloodingRounds

        return CompiledFloodingRounds(problem, s.tol, order=s.node_order)
    return FloodingRounds(problem, rho, s.mode, s.tol, rng)
