"""Loopy belief propagation on the HMRF factor graph (Basu 2005, Appendix A.1, Fig. A.1).

The factor graph has one variable per hidden label ``y_i``, one unary factor ``D_i``
per point and one pairwise factor per constraint (or table edge). Max-product in the
log domain is min-sum; the message updates, their O(k) Potts forms and the treatment
of infinite costs are in :mod:`hmrf.inference.messages`. All messages are updated at
once (flooding schedule), vectorised over directed edges, with damping in the log
domain. Only constrained nodes reach this engine (see
:func:`~hmrf.inference.base.reduce_problem`).
"""

from __future__ import annotations

import numpy as np

from ..graph import TABLE, as_graph, segment_sum
from .base import InferenceEngine, InferenceResult, check_unary, reduce_problem
from .icm import independent_sets
from .lp import connected_components
from .messages import FactorMessages, big_cost
from .polish import check_polish, finish, polish_labels

__all__ = ["BeliefPropagation", "uniform_edge_appearance"]

#: with ``damping="auto"``, undamped rounds before switching to damping 0.5
AUTO_SWITCH = 20


def uniform_edge_appearance(graph) -> np.ndarray:
    """Edge appearance probabilities ``rho_e = (n_c - 1) / m_c`` of edge e's component c.

    The uniform choice of tree-reweighted BP: a spanning tree of component c has
    ``n_c - 1`` of its ``m_c`` edges. On a forest every ``rho_e = 1`` (ordinary BP).
    """
    n_comp, comp = connected_components(graph)
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
        Maximum number of message-passing rounds.
    damping : "auto" or float in [0, 1), default="auto"
        New messages are ``(1 - damping) * update + damping * old`` (log domain).
        Undamped updates converge fastest (in finitely many rounds on trees) but can
        oscillate on frustrated loopy graphs (cannot-link cycles), where damping 0.5
        settles them. ``"auto"`` runs undamped for the first ``AUTO_SWITCH = 20``
        rounds and with damping 0.5 after that, if it has not converged by then.
    tol : float, default=1e-6
        Converged when no message changes by more than ``tol`` in one round.
    reweight : {None, "trw"} or float in (0, 1], default=None
        ``None``: ordinary loopy BP (the thesis's engine). ``"trw"``: tree-reweighted
        message passing (Wainwright, Jaakkola & Willsky 2005) with the uniform edge
        appearance probabilities of :func:`uniform_edge_appearance`; a float uses that
        ``rho`` for every edge. Reweighting avoids the over-counting of evidence around
        short loops that makes plain max-product lock dense must-link groups onto a
        wrong label; it converges more slowly (use it with ``damping=0.5``).
    polish : {None, "icm"}, default=None
        Run ICM from the decoded labelling (never increases the energy).
    patience : int, optional
        Max mode: also stop when the best decoded energy has not improved for this many
        rounds (``converged`` stays False, ``info["stopped"] = "patience"``). Loopy BP
        on frustrated graphs often keeps oscillating after it has found its best
        labelling; this bounds the time spent there. ``None`` runs to ``tol`` or
        ``max_iter``.

    Notes
    -----
    Each round costs O(k) per Potts factor and O(k²) per table factor, in a handful of
    vectorised NumPy operations over (k, 2m) message arrays. On a tree (a forest)
    max-product converges to the exact min-marginals and the decoding below gives the
    exact MAP labelling (with ties broken consistently); on loopy graphs it is a
    heuristic and gives no bound (``lower_bound`` is ``None``).

    Decoding (max mode). A per-node argmin of the beliefs can break a must-link or
    cannot-link that every belief agrees on when beliefs tie (two cannot-linked nodes
    with the same costs both pick the first label). We decode consistently across
    factors, as libDAI does: nodes are fixed one independent set at a time, each
    minimising its unary cost plus the messages from still-free neighbours plus the
    true factor costs towards already-decoded neighbours. That labelling is compared
    with the best per-node argmin seen during the iterations and the cheaper one is
    kept (then polished if asked). ``info["decoded_energy"]`` is the energy of the
    consistent decoding on the reduced problem (the constrained super-nodes).

    Hard factors are handled through a finite ``BIG`` cost (see
    :mod:`hmrf.inference.messages`); if the labelling found still breaks one, ICM
    repairs it, and :class:`~hmrf.InfeasibleError` is raised if that fails.

    References
    ----------
    Basu (2005), Appendix A.1 and Fig. A.1. Kschischang, Frey & Loeliger (2001),
    "Factor graphs and the sum-product algorithm". Felzenszwalb & Huttenlocher (2006),
    "Efficient belief propagation for early vision" (O(k) Potts messages). Wainwright,
    Jaakkola & Willsky (2005), "MAP estimation via agreement on trees".

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> from hmrf.inference import BeliefPropagation
    >>> unary = np.array([[0.0, 1.0], [1.0, 0.2], [0.5, 0.0]])
    >>> c = Constraints.from_pairs(must_link=[(0, 1)], n=3, weight=2.0)
    >>> BeliefPropagation().map(unary, c).labels.tolist()
    [0, 0, 1]
    >>> BeliefPropagation(mode="sum").marginals(unary, c).round(3)[0]  # exact on a tree
    array([0.6, 0.4])
    """

    def __init__(self, mode="max", max_iter=100, damping="auto", tol=1e-6, reweight=None, polish=None,
                 patience=None):
        self.mode = mode
        self.max_iter = max_iter
        self.damping = damping
        self.tol = tol
        self.patience = patience
        self.reweight = reweight
        self.polish = polish

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
        if not (rw is None or rw == "trw" or (isinstance(rw, (int, float)) and 0 < rw <= 1)):
            raise ValueError(f"reweight must be None, 'trw' or a number in (0, 1]; got {rw!r}.")
        return check_polish(self.polish)

    def _rho(self, graph):
        if self.reweight is None:
            return None
        if self.reweight == "trw":
            return uniform_edge_appearance(graph)
        return np.full(graph.n_edges, float(self.reweight))

    # ------------------------------------------------------------------ engine
    def _solve(self, unary, graph, init, rng, notify):
        polish = self._check_params()
        n, k = unary.shape
        big = big_cost(unary, graph)
        u0 = unary - np.min(unary, axis=1, keepdims=True)
        u0 = np.where(np.isinf(u0), big, u0)
        u0_t = np.ascontiguousarray(u0.T)
        fm = FactorMessages(graph, k, big, self._rho(graph))
        msgs = np.zeros((k, fm.n_dir))
        auto = isinstance(self.damping, str)
        lam, tol = (0.0 if auto else float(self.damping)), float(self.tol)
        best, best_e, stale = None, np.inf, 0
        patience = None if self.patience is None else int(self.patience)
        if patience is not None and patience < 1:
            raise ValueError(f"patience must be >= 1 or None; got {self.patience!r}.")
        stopped = "max_iter"
        converged, it = False, 0
        beliefs = fm.beliefs(u0_t, msgs)
        for it in range(1, int(self.max_iter) + 1):
            new = fm.update(beliefs, msgs, self.mode)
            diff = new - msgs
            delta = max(float(diff.max()), -float(diff.min())) if diff.size else 0.0
            if auto and it == AUTO_SWITCH + 1:
                lam = 0.5  # undamped updates did not settle: damp from now on
            if lam == 0.0:
                msgs = new
            else:  # (1 - lam) * new + lam * msgs
                diff *= 1.0 - lam
                msgs += diff
            beliefs = fm.beliefs(u0_t, msgs)
            if self.mode == "max":  # anytime: remember the best per-node argmin
                labels = np.argmin(beliefs, axis=0)
                e = graph.energy(labels, unary)
                if best is None or e < best_e:
                    best, best_e, stale = labels, e, 0
                else:
                    stale += 1
                notify(it, labels)
            if delta <= tol:
                converged, stopped = True, "tol"
                break
            if patience is not None and stale >= patience:
                stopped = "patience"
                break
        info = {"damping": lam, "big": big, "reweighted": fm.reweighted, "stopped": stopped}
        if self.mode == "sum":
            b = beliefs.T
            marg = np.exp(-(b - b.min(axis=1, keepdims=True)))
            marg /= marg.sum(axis=1, keepdims=True)
            labels = np.argmax(marg, axis=1)
            notify(it, labels)
            info["marginals"] = marg
            return {"labels": labels, "n_iter": it, "converged": converged, "info": info}
        decoded = self._decode(u0, fm, msgs, graph, rng)
        info["decoded_energy"] = graph.energy(decoded, unary)
        cands = [decoded, best]
        if polish:
            start = min(cands, key=lambda y: graph.energy(y, unary))
            polished, sweeps = polish_labels(unary, graph, start, rng)
            cands.append(polished)
            info["polish_sweeps"] = sweeps
        labels, _ = finish(unary, graph, cands, "belief propagation", rng, fallback=init)
        return {"labels": labels, "n_iter": it, "converged": converged, "info": info}

    @staticmethod
    def _decode(u0, fm: FactorMessages, msgs, graph, rng) -> np.ndarray:
        """Consistent sequential decoding over independent sets (class Notes)."""
        n, k = u0.shape
        sets = independent_sets(n, graph.edges, rng)
        set_of = np.empty(n, dtype=np.int64)
        pos = np.empty(n, dtype=np.int64)
        for s, members in enumerate(sets):  # a loop over colour classes
            set_of[members] = s
            pos[members] = np.arange(members.size)
        order = np.argsort(set_of[fm.dst], kind="stable")
        bounds = np.searchsorted(set_of[fm.dst][order], np.arange(len(sets) + 1))
        labels = np.full(n, -1, dtype=np.int64)
        for s, members in enumerate(sets):
            d = order[bounds[s]:bounds[s + 1]]
            contrib = (msgs[:, d] * fm.rho[d]).T
            src_lab = labels[fm.src[d]]
            done = src_lab >= 0
            if done.any():
                contrib[done] = fm.cost_rows(d[done], src_lab[done])
            total = u0[members] + segment_sum(pos[fm.dst[d]], contrib, members.size)
            labels[members] = np.argmin(total, axis=1)
        return labels

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
        engine = BeliefPropagation("sum", self.max_iter, self.damping, self.tol, self.reweight)
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
