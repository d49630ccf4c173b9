"""The flooding schedule of belief propagation: every message updated at once per round.

Used by :class:`~hmrf.inference.BeliefPropagation` with ``schedule="flooding"`` (the
schedule of Basu 2005, App. A.1, and of this engine before the sequential schedule
became the default). One round computes all new messages from the beliefs of the
previous round, vectorised over the directed edges (:class:`FactorMessages`), with
optional damping in the log domain and, with ``rho < 1``, the tree-reweighted updates
of Wainwright, Jaakkola & Willsky (2005).
"""

from __future__ import annotations

import numpy as np

from ..graph import segment_sum
from .icm import independent_sets
from .messages import FactorMessages, marginals_from_beliefs

__all__ = ["flooding", "consistent_decode"]


def flooding(unary, u0, graph, big, rho, mode, max_iter, damping, tol, patience, auto_switch,
             notify, rng) -> dict:
    """Run flooding rounds; returns ``labels`` (max mode: [consistent decoding, best argmin]).

    ``damping`` is a number, or ``None`` for "auto" (undamped for ``auto_switch`` rounds,
    then 0.5). ``patience`` (or ``None``) stops max mode after that many rounds without a
    better per-node argmin labelling.
    """
    k = unary.shape[1]
    u0_t = np.ascontiguousarray(u0.T)
    fm = FactorMessages(graph, k, big, rho)
    msgs = np.zeros((k, fm.n_dir))
    lam = 0.0 if damping is None else float(damping)
    best, best_e, stale, stopped, converged, it = None, np.inf, 0, "max_iter", False, 0
    beliefs = fm.beliefs(u0_t, msgs)
    for it in range(1, int(max_iter) + 1):
        new = fm.update(beliefs, msgs, mode)
        diff = new - msgs
        delta = max(float(diff.max()), -float(diff.min())) if diff.size else 0.0
        if damping is None and it == auto_switch + 1:
            lam = 0.5  # undamped updates did not settle: damp from now on
        if lam == 0.0:
            msgs = new
        else:  # (1 - lam) * new + lam * msgs
            diff *= 1.0 - lam
            msgs += diff
        beliefs = fm.beliefs(u0_t, msgs)
        if mode == "max":  # anytime: remember the best per-node argmin
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
    info = {"damping": lam, "big": big, "reweighted": fm.reweighted, "stopped": stopped,
            "schedule": "flooding"}
    if mode == "sum":
        marg = marginals_from_beliefs(beliefs.T)
        labels = np.argmax(marg, axis=1)
        notify(it, labels)
        info["marginals"] = marg
        return {"labels": labels, "n_iter": it, "converged": converged, "info": info}
    decoded = consistent_decode(u0, fm, msgs, graph, rng)
    return {"labels": [decoded, best], "n_iter": it, "converged": converged, "info": info}


def consistent_decode(u0, fm: FactorMessages, msgs, graph, rng) -> np.ndarray:
    """Decode one independent set at a time (libDAI's consistent decoding).

    Each node minimises its unary cost plus the messages from still-free neighbours plus
    the true factor costs towards already-decoded neighbours.
    """
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
