"""The belief-propagation engine, :class:`BeliefPropagation` (Basu 2005, Appendix A.1, Fig. A.1),
and its settings, validated once per parameter set (:meth:`BeliefPropagation.check_params`)."""

from __future__ import annotations

from numbers import Integral, Real
from operator import attrgetter
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..._validation import Interval, Options, validate_params
from ..base import InferenceEngine, Solution, refuse_removed
from ..polish import POLISH, finish, polish_labels
from .schedules import (
    AUTO_PATIENCE,
    BPProblem,
    dense_frustrated_part,
    run_flooding,
    run_sequential,
    split_components,
    uniform_edge_appearance,
)
from .trws import run_trws, trws_order

if TYPE_CHECKING:
    from typing import Any, Literal

    from numpy.typing import NDArray

    from ...graph import PairwiseGraph

__all__ = ["BeliefPropagation"]


class _Settings(NamedTuple):
    """The parameters resolved: ``max_iter`` an integer (``trws_max_iter`` that of lattice
    components), ``damping`` a number or ``None`` ("auto"), ``polish`` ``None`` or
    ``"icm"``, ``sequential`` the schedule (a number as ``reweight``, or reweighted
    sum-product, floods)."""

    mode: str
    max_iter: int
    trws_max_iter: int
    damping: float | None
    tol: float
    reweight: Any
    polish: str | None
    patience: int | None
    schedule: str
    rel_gap: float
    sequential: bool


class BeliefPropagation(InferenceEngine):
    """Loopy max-product (min-sum) or sum-product belief propagation (Basu 2005, App. A.1).

    Messages on a pairwise factor ``f = (i, j)`` are, in the log domain,

    ``m_{f->j}(y_j) = min_{y_i} [ B_i(y_i) - m_{f->i}(y_i) + cost_f(y_i, y_j) ]``

    with ``B_i = U_i + sum_{g ∋ i} m_{g->i}`` the belief of node i, O(k) for Potts
    factors (:mod:`~hmrf.inference.bp.kernels`); sum-product replaces ``min`` by
    ``-log sum exp(-·)``. By default the nodes are visited breadth first, forward then
    backward (the sequential schedule); on components of soft must-links only the
    default composes :class:`~hmrf.inference.TRWS` (Kolmogorov 2006), whose lower bound
    certifies the result (:mod:`~hmrf.inference.bp.schedules` says what runs where).

    Parameters
    ----------
    mode : {"max", "sum"}, default="max"
        ``"max"``: max-product (min-sum), for the MAP labelling of the E-step. ``"sum"``:
        sum-product; ``marginals`` of the result holds the (n, k) approximate posteriors
        ``p(y_i = h)`` (exact on trees) and ``labels`` their argmax. See :meth:`marginals`.
    max_iter : int or "auto", default="auto"
        Maximum number of iterations: a forward and a backward pass (sequential) or one
        round (flooding). ``"auto"``: 100, and 1000 on lattice components (TRW-S, whose
        own stopping rule ends them first).
    damping : "auto" or float in [0, 1), default="auto"
        New messages are ``(1 - damping) * update + damping * old`` (log domain).
        ``"auto"``: undamped for ``AUTO_SWITCH = 20`` iterations, then 0.5 (damping
        settles oscillations on frustrated cannot-link cycles). TRW-S is never damped.
    tol : float, default=1e-6
        Converged when no message changes by more than ``tol`` in an iteration; senders
        none of whose inputs moved by more than ``tol`` are skipped (lazy updates).
    reweight : {"auto", None, "trw"} or float in (0, 1], default="auto"
        ``"auto"``: a *lattice* component (soft must-links only, at least
        ``LATTICE_NODES = 1000`` nodes and ``LATTICE_CYCLES = 0.1`` four-cycles per node,
        an image grid; :func:`~hmrf.inference.bp.schedules.lattice_components`) runs
        :class:`~hmrf.inference.TRWS`; every other component of soft must-links only runs
        TRW-S alternating with ordinary max-product started from its messages
        (:func:`~hmrf.inference.bp.trws.run_trws` with ``cycles``); the frustrated ones
        run ordinary max-product. ``None``: ordinary BP everywhere. ``"trw"``: TRW-S on
        every component (sequential), or the tree-reweighted updates of Wainwright,
        Jaakkola & Willsky (2005) with :func:`uniform_edge_appearance` (flooding; use
        ``damping=0.5``). A float is one ``rho`` for every edge and selects flooding.
        Sum-product uses ordinary updates with ``"auto"``, flooding when reweighted.
    polish : {None, "icm"}, default=None
        Run ICM from the best labelling found (never increases the energy).
    patience : int or None, default=None
        Max mode: stop a component after this many iterations without a better decoded
        labelling (a TRW-S component: and without its bound rising by more than
        ``rel_gap * |E|``); lattice components (image grids) keep TRW-S's own stopping
        rule. ``None``: with ``schedule="auto"`` a frustrated component
        stops after ``max(AUTO_PATIENCE, AUTO_PATIENCE_WORK / n_c)`` such iterations (5
        and 5000, ``n_c`` its number of nodes): few for a large component, where each
        iteration costs most; must-link components stop on their TRW-S gap or the TRW-S
        cycle rules (a cycle without progress, label patience near the bound). Otherwise
        ``None`` runs to ``tol``, the gap or ``max_iter``.
    schedule : {"auto", "sequential", "flooding"}, default="auto"
        ``"sequential"``: forward and backward passes. ``"flooding"``: all messages at
        once per round (the thesis's schedule; per-node argmin anytime labelling and a
        final consistent decoding). ``"auto"``: sequential and, in max mode, on
        frustrated components of mean degree at least ``DENSE_DEGREE = 8``, flooding as
        well (at most ``AUTO_PATIENCE`` rounds without a better labelling), keeping per
        connected component the cheaper labelling (``info["flooding_iter"]``):
        sequential max-product can lock a dense must-link clique onto a wrong label.
    rel_gap : float in [0, 1), default=1e-3
        A TRW-S component stops as soon as its best labelling is proven within
        ``rel_gap`` (relative) of that component's optimum by the TRW-S bound.

    Notes
    -----
    Ordinary loopy max-product over-counts evidence around short loops, so on a dense
    group of must-links its fixed point can be several per cent above the optimum.
    TRW-S optimises the dual of the LP relaxation, tight or nearly so when every factor
    is an attractive must-link, but decodes slowly; ordinary max-product started from
    its messages decodes sharply, hence the cycles. With cannot-links the relaxation is
    weak and TRW-S decodes worse than ordinary max-product. docs/inference.md has the
    measurements behind each default.

    **Decoding.** Every forward pass decodes the current messages node by node, with
    the true factor costs towards already-decoded nodes (Kolmogorov 2006, §5.1;
    libDAI's consistent decoding); each connected component keeps its best decoded
    labelling, so the result is never worse than any labelling the callback saw
    (``info["decoded_energy"]``: the energy of the last decoding of the max-product part).

    **Bound.** When every component ran TRW-S, ``lower_bound`` is the sum of their best
    TRW-S bounds and ``converged`` says whether every gap closed; otherwise
    ``lower_bound`` is ``None``. ``info["trws_components"]`` counts the components solved
    by TRW-S, ``info["n_components"]`` all of them. On a forest both schedules are exact.

    Hard factors are handled through a finite ``BIG`` cost
    (:func:`~hmrf.inference.bp.trws.big_cost`); if the labelling found still breaks one,
    ICM repairs it, and :class:`~hmrf.InfeasibleError` is raised if that fails.

    References
    ----------
    Basu (2005), Appendix A.1 and Fig. A.1. Kschischang, Frey & Loeliger (2001),
    "Factor graphs and the sum-product algorithm". Felzenszwalb & Huttenlocher (2006),
    "Efficient belief propagation for early vision" (O(k) Potts messages). Wainwright,
    Jaakkola & Willsky (2005), "MAP estimation via agreement on trees". Kolmogorov
    (2006), "Convergent tree-reweighted message passing for energy minimization", IEEE
    TPAMI 28(10). Elidan, McGraw & Koller (2006), "Residual belief propagation".

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

    _parameter_constraints = {
        "mode": [Options("max", "sum")],
        "max_iter": [Options("auto"), Interval(Integral, 1, None)],
        "damping": [Options("auto"), Interval(Real, 0, 1, closed="left")],
        "tol": [Interval(Real, 0, None)],
        "reweight": [Options(None, "auto", "trw"), Interval(Real, 0, 1, closed="right")],
        "polish": [Options(*POLISH)],
        "patience": [Options(None), Interval(Integral, 1, None)],
        "schedule": [Options("auto", "sequential", "flooding")],
        "rel_gap": [Interval(Real, 0, 1, closed="left")],
    }

    def __init__(self, mode: Literal["max", "sum"] = "max", max_iter: int | str = "auto",
                 damping: float | str = "auto", tol: float = 1e-6, reweight: str | float | None = "auto",
                 polish: Literal["icm"] | None = None, patience: int | None = None,
                 schedule: Literal["auto", "sequential", "flooding"] = "auto", rel_gap: float = 1e-3,
                 **removed: Any) -> None:
        refuse_removed("BeliefPropagation", removed, {
            "kernel": "the passes are always compiled with numba; drop it.",
            "order": "the sequential schedule visits the nodes breadth first from each component's "
                     "highest-degree node; drop it (TRWS(order=...) orders TRW-S).",
        })
        self.mode = mode
        self.max_iter = max_iter
        self.damping = damping
        self.tol = tol
        self.reweight = reweight
        self.polish = polish
        self.patience = patience
        self.schedule = schedule
        self.rel_gap = rel_gap

    # ------------------------------------------------------------ settings
    def _key(self) -> tuple:
        return _PARAMETERS(self)

    def check_params(self) -> None:
        """Validate the parameters (:mod:`hmrf._validation`) and resolve them into the settings
        every later :meth:`_solve` reads, until a parameter changes."""
        validate_params(self)
        auto_iter = self.max_iter == "auto"
        flooding = (self.schedule == "flooding" or self.reweight not in (None, "auto", "trw")
                    or (self.mode == "sum" and self.reweight == "trw"))
        self._resolved = (self._key(), _Settings(
            self.mode, 100 if auto_iter else int(self.max_iter), 1000 if auto_iter else int(self.max_iter),
            None if self.damping == "auto" else float(self.damping), float(self.tol), self.reweight,
            None if self.polish in (None, "none") else "icm", self.patience, self.schedule,
            float(self.rel_gap), not flooding))

    def _settings(self) -> _Settings:
        resolved = getattr(self, "_resolved", None)
        if resolved is None or resolved[0] != self._key():
            self.check_params()
            resolved = self._resolved
        return resolved[1]

    # ------------------------------------------------------------------ engine
    def _solve(self, unary, graph, init, rng, notify):
        s = self._settings()
        if s.mode == "sum" or not s.sequential or s.reweight is None:
            parts = [("bp", None, graph)]
        elif s.reweight == "trw":
            parts = [("trw", None, graph)]
        else:
            parts = split_components(graph)
        if len(parts) == 1:
            out = self._solve_part(s, parts[0][0], unary, graph, init, rng, notify)
        else:  # every part reports the whole labelling, the other parts' as they stand
            labels = np.zeros(unary.shape[0], dtype=np.int64)
            outs = []
            for name, nodes, sub in parts:
                def notify_part(it, y, bound=None, nodes=nodes):
                    labels[nodes] = y
                    notify(it, labels)

                part_init = None if init is None else init[nodes]
                outs.append(self._solve_part(s, name, unary[nodes], sub, part_init, rng, notify_part))
                labels[nodes] = outs[-1].labels
            info = {key: val for o in outs for key, val in o.info.items()}
            info.update(n_components=graph.components()[0],
                        trws_components=sum(o.info.get("trws_components", 0) for o in outs))
            bounds = [o.lower_bound for o in outs]
            out = Solution(labels, lower_bound=None if None in bounds else float(sum(bounds)), info=info,
                           n_iter=max(o.n_iter for o in outs), converged=all(o.converged for o in outs))
        if s.polish and s.mode == "max":
            polished, out.info["polish_sweeps"] = polish_labels(unary, graph, out.labels, rng)
            if graph.energy(polished, unary) < graph.energy(out.labels, unary):
                out.labels = polished
        return out

    def _solve_part(self, s, name, unary, graph, init, rng, notify):
        """One part of :meth:`_solve`: ``"bp"`` this engine's schedule, ``"lattice"`` TRW-S,
        ``"attractive"`` TRW-S cycles, ``"trw"`` TRW-S until the gap closes, ``patience`` or
        BP's ``max_iter``."""
        if name in ("bp", "frustrated"):
            return self._solve_bp(s, unary, graph, init, rng, notify)
        out = run_trws(unary, graph, max_iter=s.trws_max_iter if name == "lattice" else s.max_iter,
                       rel_gap=max(s.rel_gap, s.tol), order=trws_order(graph), notify=notify, init=init,
                       tol=None if name == "trw" else 1e-5, cycles=name == "attractive",
                       patience=None if name == "lattice" else s.patience)
        out.labels, _ = finish(unary, graph, [out.labels], "TRW-S", rng, fallback=init)
        out.info["trws_components"] = out.info["n_components"]
        return out

    def _solve_bp(self, s, unary, graph, init, rng, notify):
        problem = BPProblem.build(unary, graph)
        if s.sequential:
            out = run_sequential(s, problem, notify)
        else:
            rho = (None if s.reweight in (None, "auto") else uniform_edge_appearance(graph)
                   if s.reweight == "trw" else np.full(graph.n_edges, float(s.reweight)))
            out = run_flooding(s, problem, rho, notify)
        info = dict(out.info, n_components=graph.components()[0], trws_components=0)
        if s.mode == "sum":
            marginals = info.pop("marginals")
            return Solution(out.candidates[0], n_iter=out.n_iter, converged=out.converged, info=info,
                            marginals=marginals)
        cands = list(out.candidates)
        info["decoded_energy"] = graph.energy(cands[0], unary)
        nodes, sub = dense_frustrated_part(graph)
        if s.schedule == "auto" and s.sequential and nodes.size:
            # flooding max-product on the dense frustrated components too, spliced into the
            # sequential decoding; then the cheapest candidate per component
            fl = run_flooding(s, problem.restrict(nodes, sub), None, lambda *a: None,
                              patience=AUTO_PATIENCE if s.patience is None else s.patience)
            for y in fl.candidates:
                cands.append(cands[0].copy())
                cands[-1][nodes] = y
            cands.append(graph.best_per_component(unary, np.array(cands))[0])
            info["flooding_iter"] = fl.n_iter
        known = [info["decoded_energy"]] + [None] * (len(cands) - 1)
        labels, _ = finish(unary, graph, cands, "belief propagation", rng, fallback=init, energies=known)
        return Solution(labels, n_iter=out.n_iter, converged=out.converged, info=info)

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


_PARAMETERS = attrgetter(*BeliefPropagation._parameter_constraints)
