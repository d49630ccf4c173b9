"""Loopy belief propagation on the HMRF factor graph (Basu 2005, Appendix A.1, Fig. A.1).

The factor graph has one variable per hidden label ``y_i``, one unary factor ``D_i``
per point and one pairwise factor per constraint (or table edge). Max-product in the
log domain is min-sum; the message updates, their O(k) Potts forms and the treatment
of infinite costs are in :mod:`hmrf.inference.messages`. Two schedules:
:mod:`hmrf.inference.schedule` (sequential over colour classes, with TRW-S) and
:mod:`hmrf.inference.flooding` (all messages at once, the thesis's); the default runs
the first, and the second too on frustrated components.
Only constrained nodes reach this engine (see :func:`~hmrf.inference.base.reduce_problem`).
"""

from __future__ import annotations

import functools

import numpy as np

from ..graph import TABLE, as_graph, segment_sum
from .base import InferenceEngine, InferenceResult, check_unary, reduce_problem
from .flooding import flooding
from .messages import big_cost
from .polish import check_polish, finish, polish_labels
from .rounding import best_per_component
from .schedule import SequentialMessages
from .sequential import AUTO_PATIENCE, AUTO_SWITCH, frustrated_components, run_sequential

__all__ = ["BeliefPropagation", "uniform_edge_appearance"]

#: ``schedule="auto"``: frustrated components of at least this mean degree also run flooding
DENSE_DEGREE = 8


def uniform_edge_appearance(graph) -> np.ndarray:
    """Edge appearance probabilities ``rho_e = (n_c - 1) / m_c`` of edge e's component c.

    The uniform choice of tree-reweighted BP: a spanning tree of component c has
    ``n_c - 1`` of its ``m_c`` edges. On a forest every ``rho_e = 1`` (ordinary BP).
    """
    n_comp, comp = graph.components()
    ce = comp[graph.edges[:, 0]]
    sizes = np.bincount(comp, minlength=n_comp)
    m_c = np.bincount(ce, minlength=n_comp)
    rho = (sizes[ce] - 1) / np.maximum(m_c[ce], 1)
    return np.clip(rho, 1e-3, 1.0)


class BeliefPropagation(InferenceEngine):
    """Loopy max-product (min-sum) or sum-product belief propagation (Basu 2005, App. A.1).

    Parameters
    ----------
    mode : {"max", "sum"}, default="max"
        ``"max"``: max-product in the log domain (min-sum), for the MAP labelling of the
        E-step. ``"sum"``: sum-product; ``info["marginals"]`` of the result holds the
        (n, k) approximate posteriors ``p(y_i = h)`` of every point (exact on trees) and
        ``labels`` their argmax, for soft EM and for teaching. See also :meth:`marginals`.
    max_iter : int, default=100
        Maximum number of iterations: a forward and a backward pass (sequential) or one
        round (flooding).
    damping : "auto" or float in [0, 1), default="auto"
        New messages are ``(1 - damping) * update + damping * old`` (log domain).
        ``"auto"``: undamped for ``AUTO_SWITCH = 20`` iterations, then 0.5 if not
        converged (damping settles oscillations on frustrated cannot-link cycles). TRW-S
        updates are never damped (they need not be, Kolmogorov 2006).
    tol : float, default=1e-6
        Converged when no message changes by more than ``tol`` in an iteration; both
        schedules also skip senders none of whose inputs moved by more than ``tol``
        (lazy updates), and a TRW-S component whose gap is at most
        ``tol * max(1, |E|)`` is solved exactly.
    reweight : {"auto", None, "trw"} or float in (0, 1], default="auto"
        ``"auto"``: with the sequential schedule, every connected component whose
        factors are all soft must-links first runs ordinary max-product until its
        messages settle (at most ``AUTO_SWITCH`` iterations, or ``WARM_UP_PATIENCE = 3``
        (or ``patience``) without a better labelling), then TRW-S (sequential
        tree-reweighted message passing, Kolmogorov 2006) from zero messages; the other
        components run ordinary max-product throughout; with flooding, ordinary BP.
        ``None``: ordinary BP everywhere. ``"trw"``: TRW-S on every component
        (sequential), or the tree-reweighted updates of Wainwright, Jaakkola & Willsky
        (2005) with the uniform edge appearance probabilities of
        :func:`uniform_edge_appearance` (flooding; use ``damping=0.5``). A float is one
        ``rho`` for every edge and selects the flooding schedule. Sum-product uses
        ordinary updates with ``"auto"`` and the flooding schedule when reweighted.
    polish : {None, "icm"}, default=None
        Run ICM from the best labelling found (never increases the energy).
    patience : int or None, default=None
        Max mode: stop a component after this many iterations without a better decoded
        labelling (for a TRW-S component: and without its bound rising by more than
        ``rel_gap * |E|``); ``info["stopped"] = "patience"``. ``None``: with
        ``schedule="auto"``, a frustrated component (one with a cannot-link, table or
        hard factor) stops after ``max(AUTO_PATIENCE, AUTO_PATIENCE_WORK / n_c)``
        such iterations, ``n_c`` its number of nodes, ``AUTO_PATIENCE = 5`` and
        ``AUTO_PATIENCE_WORK = 5000`` (:mod:`hmrf.inference.sequential`): five for a
        large component, where each
        iteration costs most, up to ``max_iter`` for a small one, which often still
        improves after damping starts (on the cannot-link colourings of
        ``benchmarks/inference.py`` a patience of 10 gave 2.5 % mean excess, this rule
        0.35 %); attractive components stop on their TRW-S gap. Otherwise ``None``
        runs to ``tol``, the gap or ``max_iter``.
    schedule : {"auto", "sequential", "flooding"}, default="auto"
        ``"sequential"``: forward and backward passes in a node order (``order``;
        :mod:`hmrf.inference.sequential`). ``"flooding"``: all messages at once per
        round (:mod:`hmrf.inference.flooding`, the thesis's schedule; per-node argmin
        anytime labelling and a final consistent decoding). ``"auto"``: sequential,
        and in max mode, on the frustrated components of mean degree at least
        ``DENSE_DEGREE = 8``, flooding max-product as well (at most ``AUTO_PATIENCE``
        rounds without a better labelling), keeping per connected component the
        cheaper labelling (``info["flooding_iter"]``). Sequential max-product locks a
        dense must-link clique onto a wrong label early, where short loops over-count
        the first messages (mean excess 3.7 %, at most 40 %, on the complete "closure"
        graphs of ``benchmarks/inference.py``; flooding alone 1.4 %; both 0.07 %); on
        sparse graphs flooding added nothing (the same excess on the mixed and
        colouring groups) and cost more than the sequential run on a 5,000-node
        E-step. The callback sees the sequential iterations.
    rel_gap : float in [0, 1), default=1e-2
        A TRW-S component stops as soon as its decoded labelling is proven within
        ``rel_gap`` (relative) of that component's optimum by the TRW-S lower bound
        (1 %: the accuracy asked of an E-step by ``benchmarks/inference.py``; the
        bound climbs slowly near the optimum: on its three 5,000-node must-link
        E-steps 0.1 % took 81, 24 and 50 iterations against 18, 12 and 50, for a
        labelling 0.4 % better on the first and the same on the others).
    kernel : {"auto", "numba", "numpy"}, default="auto"
        Max-product passes compiled with numba (:mod:`hmrf.inference.schedule_numba`,
        :mod:`hmrf.inference.flooding_numba`; ``pip install hmrf[fast]``) or vectorised
        NumPy (:mod:`hmrf.inference.schedule`, :mod:`hmrf.inference.flooding`).
        ``"auto"``: numba when it is installed. The compiled passes made BP 3-5x faster
        on the 5,000-node E-steps of ``benchmarks/inference.py`` (part 2) and 6-15x on
        its small ones (part 1). Sum-product and reweighted flooding always run the
        NumPy passes.
    order : {"auto", "bfs", "colour"}, default="auto"
        Node order of the sequential schedule (:mod:`hmrf.inference.order`).
        ``"colour"``: colour class by colour class, what the NumPy passes need.
        ``"bfs"``: breadth first from each component's highest-degree node, compiled
        passes only: its monotonic chains cross the whole component, so a pass carries
        evidence further (on the three 5,000-node must-link E-steps of
        ``benchmarks/inference.py`` BP stopped on its 1 % gap after 18, 12 and 50
        iterations against 20, 17 and 70, and it was optimal on 95 % of the small
        must-link E-steps against 85 %). ``"auto"``: ``"bfs"`` with the compiled passes, else
        ``"colour"``. The same settings give the same result; different kernels or
        orders may give different (equally valid) labellings.

    Notes
    -----
    **Default and why.** Plain loopy max-product over-counts evidence around short
    loops: in a dense group of must-links early messages lock the group onto one label
    and the fixed point can be several per cent above the optimum (flooding BP was
    within 1 % of the exact optimum on 85 % of the must-link-only E-steps of
    ``benchmarks/inference.py``). TRW-S optimises the dual of the LP relaxation, which
    is tight or nearly so when every factor is an attractive must-link, never lowers
    its bound, and certifies its labelling: 100 % within 1 % there (95 % optimal),
    stopping on the gap. But TRW-S moves evidence slowly (its
    messages are scaled by ``gamma_i <= 1/2``): on a large sparse must-link graph
    ordinary sequential max-product can reach in 5-8 iterations a labelling TRW-S
    needs 40 for. Hence the two phases of ``reweight="auto"``: ordinary max-product
    first (a cheap labelling), then TRW-S, which improves on it or proves it within
    ``rel_gap``; the best labelling of both phases is returned. TRW-S restarts from
    zero messages: started from the max-product messages (a valid but over-counted
    reparametrisation) its bound climbed more slowly in colour order (100 against 50
    iterations to a 0.1 % gap on a 5,000-node E-step); in BFS order it took fewer
    iterations on two of the three large must-link E-steps but ended 0.7 % higher on
    the third and was optimal on 90 % of the small ones against 95 %. With cannot-links the
    relaxation is weak (see :class:`~hmrf.inference.LPRelaxation`) and TRW-S decodes
    worse than plain max-product (65-85 % within 1 % against 90-100 % on mixed
    E-steps), so frustrated components run ordinary max-product only, dense ones with
    flooding as well (``schedule`` above). Each iteration costs O(k) per Potts factor
    and O(k²) per table factor: node by node in compiled code, or in vectorised NumPy
    operations per colour class (the greedy colouring of
    :func:`~hmrf.inference.order.colour_classes`, hubs first, few classes).

    **Decoding and anytime result.** In max mode every forward pass decodes the
    current messages node by node in the schedule's order, with the true factor costs towards
    already-decoded nodes (Kolmogorov 2006, §5.1; libDAI's consistent decoding), and
    each connected component keeps its best decoded labelling; the best of these and
    of the last decoding is returned (``info["decoded_energy"]`` is the energy of the
    last decoding, on the reduced problem), so the result is never worse than any
    labelling the callback saw. With flooding the anytime labelling is the per-node
    argmin of the beliefs, plus one consistent decoding at the end.

    **Bound.** When every component runs TRW-S, ``lower_bound`` is the TRW-S bound
    (the sum of the components' best bounds), a valid lower bound on the optimum, and
    ``converged`` is True when the gap closed (to ``rel_gap``). Otherwise
    ``lower_bound`` is ``None`` (loopy max-product gives no bound). On a tree (a
    forest) both schedules are exact: max-product converges to the exact
    min-marginals and TRW-S's bound meets the optimum. ``info`` of the sequential
    schedule also holds ``n_colours``, ``n_components``, ``trw_components`` and
    ``trw_from_iter`` (the first TRW-S iteration, ``None`` if none ran).

    Hard factors are handled through a finite ``BIG`` cost (see
    :mod:`hmrf.inference.messages`); if the labelling found still breaks one, ICM
    repairs it, and :class:`~hmrf.InfeasibleError` is raised if that fails.

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

    def __init__(self, mode="max", max_iter=100, damping="auto", tol=1e-6, reweight="auto", polish=None,
                 patience=None, schedule="auto", rel_gap=1e-2, kernel="auto", order="auto"):
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

    def _check_params(self):
        if self.mode not in ("max", "sum"):
            raise ValueError(f"mode must be 'max' or 'sum'; got {self.mode!r}.")
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be >= 1; got {self.max_iter}.")
        if not (self.damping == "auto" or (not isinstance(self.damping, str)
                                           and 0.0 <= float(self.damping) < 1.0)):
            raise ValueError(f"damping must be 'auto' or a number in [0, 1); got {self.damping!r}.")
        if not float(self.tol) >= 0:
            raise ValueError(f"tol must be >= 0; got {self.tol}.")
        rw = self.reweight
        if not (rw is None or rw in ("auto", "trw")
                or (isinstance(rw, (int, float)) and not isinstance(rw, bool) and 0 < rw <= 1)):
            raise ValueError(f"reweight must be 'auto', None, 'trw' or a number in (0, 1]; got {rw!r}.")
        if self.schedule not in ("auto", "sequential", "flooding"):
            raise ValueError(f"schedule must be 'auto', 'sequential' or 'flooding'; got {self.schedule!r}.")
        pat = self.patience
        if not (pat is None or (isinstance(pat, (int, np.integer)) and pat >= 1)):
            raise ValueError(f"patience must be None or an int >= 1; got {pat!r}.")
        if not (isinstance(self.rel_gap, (int, float)) and 0 <= self.rel_gap < 1):
            raise ValueError(f"rel_gap must be a number in [0, 1); got {self.rel_gap!r}.")
        if self.kernel not in ("auto", "numba", "numpy"):
            raise ValueError(f"kernel must be 'auto', 'numba' or 'numpy'; got {self.kernel!r}.")
        if self.order not in ("auto", "bfs", "colour"):
            raise ValueError(f"order must be 'auto', 'bfs' or 'colour'; got {self.order!r}.")
        if self.order == "bfs" and not self._compiled():
            raise ValueError("order='bfs' needs the compiled kernel (numba, max mode): the NumPy passes "
                             "update one colour class at a time; use order='colour' or 'auto'.")
        return check_polish(self.polish)

    @staticmethod
    def _dense_part(graph):
        """Nodes of the frustrated components of mean degree >= ``DENSE_DEGREE`` and their
        subgraph (cached on the graph): where ``schedule="auto"`` also runs flooding."""
        if graph.cache.bp_dense is None:
            n_comp, comp = graph.components()
            frustrated = frustrated_components(graph)
            size = np.bincount(comp, minlength=n_comp)
            m_c = np.bincount(comp[graph.edges[:, 0]], minlength=n_comp)
            nodes = np.flatnonzero((frustrated & (2 * m_c >= DENSE_DEGREE * size))[comp])
            sub = graph if nodes.size == graph.n_nodes else graph.subgraph(nodes)
            graph.cache.bp_dense = (nodes, sub)
        return graph.cache.bp_dense

    def _compiled(self) -> bool:
        """Whether the max-product passes run compiled (``kernel``; numba importable)."""
        if self.kernel == "numpy" or self.mode == "sum":
            return False
        try:
            import numba  # noqa: F401
        except ImportError as exc:
            if self.kernel == "numba":
                raise ImportError("BeliefPropagation(kernel='numba') needs numba: "
                                  "pip install 'hmrf[fast]'") from exc
            return False
        return True

    def _order(self) -> str:
        """The node order of the sequential schedule (``order``)."""
        if self.order != "auto":
            return self.order
        return "bfs" if self._compiled() else "colour"

    def _passes(self):
        """The passes of the sequential schedule: compiled or NumPy (``kernel``), in ``order``."""
        if self._compiled():
            from .schedule_numba import CompiledSequentialMessages

            return functools.partial(CompiledSequentialMessages, order=self._order())
        return SequentialMessages

    def _flooding(self, unary, u0, graph, big, rho, mode, args, notify, rng):
        """The flooding schedule: compiled in max mode without reweighting (``kernel``)."""
        if self._compiled() and mode == "max" and rho is None:
            from .flooding_numba import compiled_flooding

            return compiled_flooding(graph, u0, big, *args, notify, order=self._order())
        return flooding(unary, u0, graph, big, rho, mode, *args, notify, rng)

    def _sequential(self) -> bool:
        """Whether this run uses the sequential schedule (see ``reweight`` and ``schedule``)."""
        if self.schedule == "flooding" or self.reweight not in (None, "auto", "trw"):
            return False
        return not (self.mode == "sum" and self.reweight == "trw")

    def _rho(self, graph):
        if self.reweight in (None, "auto"):
            return None
        if self.reweight == "trw":
            return uniform_edge_appearance(graph)
        return np.full(graph.n_edges, float(self.reweight))

    # ------------------------------------------------------------------ engine
    def _solve(self, unary, graph, init, rng, notify):
        polish = self._check_params()
        big = big_cost(unary, graph)
        u0 = unary - np.min(unary, axis=1, keepdims=True)
        u0 = np.where(np.isinf(u0), big, u0)
        flood_args = (self.max_iter, None if isinstance(self.damping, str) else self.damping, float(self.tol),
                      None if self.patience is None else int(self.patience), AUTO_SWITCH)
        if self._sequential():
            out = run_sequential(self, unary, u0, graph, big, notify, self._passes())
        else:
            out = self._flooding(unary, u0, graph, big, self._rho(graph), self.mode, flood_args, notify, rng)
        if self.mode == "sum":
            return out
        labels, info = out.pop("labels"), out["info"]
        decoded = labels[0]
        info["decoded_energy"] = graph.energy(decoded, unary)
        cands = list(labels)
        known = [info["decoded_energy"]] + [None] * (len(cands) - 1)
        if self.schedule == "auto" and self._sequential() and info["trw_components"] < info["n_components"]:
            # dense frustrated components: flooding max-product too, the cheaper part per
            # component is kept (``schedule``)
            nodes, sub = self._dense_part(graph)
            if nodes.size:
                patience = AUTO_PATIENCE if self.patience is None else int(self.patience)
                fl = self._flooding(unary[nodes], u0[nodes], sub, big, None, "max",
                                    flood_args[:3] + (patience, AUTO_SWITCH), lambda *a: None, rng)
                for y in fl["labels"]:
                    cands.append(cands[0].copy())
                    cands[-1][nodes] = y
                n_comp, comp = graph.components()
                cands.append(best_per_component(unary, graph, np.array(cands), comp, n_comp)[0])
                info["flooding_iter"] = fl["n_iter"]
        if polish:
            start = min(cands, key=lambda y: graph.energy(y, unary))
            polished, sweeps = polish_labels(unary, graph, start, rng)
            cands.append(polished)
            info["polish_sweeps"] = sweeps
        known += [None] * (len(cands) - len(known))
        out["labels"], _ = finish(unary, graph, cands, "belief propagation", rng, fallback=init,
                                  energies=known)
        return out

    # ------------------------------------------------------------- sum-product
    def map(self, unary, graph=None, init=None, rng=None, callback=None) -> InferenceResult:
        res = super().map(unary, graph, init=init, rng=rng, callback=callback)
        if self.mode == "sum":
            res.info["marginals"] = self._full_marginals(unary, graph, res.info.get("marginals"))
        return res

    def marginals(self, unary, graph=None, rng=None) -> np.ndarray:
        """Sum-product marginals ``p(y_i = h) ∝ sum_{y: y_i = h} exp(-E(y))``, shape (n, k).

        Runs this engine's settings with ``mode="sum"``. Exact on trees and forests; the
        Bethe approximation on loopy graphs (a reweighted one with ``reweight``).
        """
        engine = BeliefPropagation("sum", self.max_iter, self.damping, self.tol, self.reweight,
                                   schedule=self.schedule)
        return engine.map(unary, graph, rng=rng).info["marginals"]

    @staticmethod
    def _full_marginals(unary, graph, active_marg) -> np.ndarray:
        """Marginals of every original node from those of the active super-nodes.

        Isolated super-nodes get the exact softmax of their summed unary costs; nodes
        joined by hard must-links share their super-node's marginal.
        """
        u = check_unary(unary)
        n, k = u.shape
        g = as_graph(graph, n)
        red = reduce_problem(u, g)
        n_super = red.fixed_labels.shape[0]
        sup = segment_sum(red.node_of, u, n_super)
        a, b = red.node_of[g.edges[:, 0]], red.node_of[g.edges[:, 1]]
        inside = (a == b) & (g.kind == TABLE)
        if inside.any():  # table factors inside a contracted component act on its label
            diag = g.tables[g.table_index[inside]][:, np.arange(k), np.arange(k)]
            wt = g.weight[inside][:, None]
            with np.errstate(invalid="ignore"):
                sup += segment_sum(a[inside], np.where(wt == 0, 0.0, wt * diag), n_super)
        with np.errstate(invalid="ignore"):
            marg = np.exp(-(sup - sup.min(axis=1, keepdims=True)))
        marg /= marg.sum(axis=1, keepdims=True)
        if red.active.size:
            marg[red.active] = active_marg
        return marg[red.node_of]
