"""The sequential run of :class:`~hmrf.inference.BeliefPropagation`: phases and stopping.

The passes themselves are :class:`~hmrf.inference.schedule.SequentialMessages` (NumPy)
or :class:`~hmrf.inference.schedule_numba.CompiledSequentialMessages`; this module
decides per connected component what runs and when it stops (the engine's Notes say
why):

* attractive components (soft must-links only) with ``reweight="auto"``: ordinary
  max-product (warm-up) until its messages settle, ``AUTO_SWITCH`` iterations pass or
  ``WARM_UP_PATIENCE`` pass without a better labelling (its labelling is usually found
  in the first few; TRW-S does the rest); then TRW-S from zero messages until the
  TRW-S bound proves the best labelling within ``rel_gap``;
* frustrated components: ordinary max-product, undamped for ``AUTO_SWITCH``
  iterations and then damped, until the messages settle or (``schedule="auto"``) the
  labelling has not improved for ``max(AUTO_PATIENCE, AUTO_PATIENCE_WORK / n_c)``
  iterations, ``n_c`` the component's size.

The last rule spends a bounded amount of work on a component that no longer improves:
five iterations for a large one, where each costs most; more for a small one, which
costs little and often still improves after damping started (measured on the
cannot-link colourings of ``benchmarks/inference.py``: best labellings first reached
at iterations 29-45 on 4 of 20, mean excess 2.5 % with a patience of 10 against 0.35 %).
On the 5,000-node E-steps of that benchmark the best labelling came 4-8 iterations in;
these patiences (5 and 3, against 10 and 10) cut 10-30 % of the time there and changed
no result, large or small.
"""

from __future__ import annotations

import numpy as np

from ..graph import POTTS_ML
from .messages import marginals_from_beliefs

__all__ = ["run_sequential", "trw_components", "frustrated_components", "AUTO_SWITCH", "AUTO_PATIENCE",
           "AUTO_PATIENCE_WORK"]

#: with ``damping="auto"``, undamped iterations (or flooding rounds) before damping 0.5
AUTO_SWITCH = 20
#: iterations without a better labelling that end a frustrated component's sequential
#: run (at least) and the flooding run of ``schedule="auto"``
AUTO_PATIENCE = 5
#: frustrated components: node-iterations without a better labelling before stopping
AUTO_PATIENCE_WORK = 5000
#: iterations without a better labelling that end the max-product warm-up
WARM_UP_PATIENCE = 3


def frustrated_components(graph) -> np.ndarray:
    """Per component of :meth:`~hmrf.PairwiseGraph.components`: whether it has a factor
    other than a soft must-link (a cannot-link, a table or a hard factor)."""
    n_comp, comp = graph.components()
    bad = (graph.kind != POTTS_ML) | np.isinf(graph.weight)
    frustrated = np.zeros(n_comp, dtype=bool)
    frustrated[comp[graph.edges[bad, 0]]] = True
    return frustrated


def trw_components(reweight, graph) -> np.ndarray:
    """Components that run TRW-S: all with ``reweight="trw"``; with ``"auto"`` those
    whose factors are all soft must-links (attractive Potts); none with ``None``.
    Numbered as :meth:`~hmrf.PairwiseGraph.components` (and so as ``layout.comp``)."""
    n_comp = graph.components()[0]
    if reweight is None:
        return np.zeros(n_comp, dtype=bool)
    if reweight == "trw":
        return np.ones(n_comp, dtype=bool)
    return ~frustrated_components(graph)


def run_sequential(bp, unary, u0, graph, big, notify, passes) -> dict:
    """Run the sequential schedule with the settings of engine ``bp``.

    ``unary`` is the reduced problem's cost, ``u0`` its BIG-capped, row-minimum-free
    copy, ``passes`` the class of the passes (called as ``passes(graph, k, big, tol)``).
    Returns ``labels`` (max mode: [last decoding, best per component]; sum mode: the
    argmax of the marginals), ``n_iter``, ``converged``, ``info`` and, when every
    component ran TRW-S, ``lower_bound``.
    """
    n, k = unary.shape
    tol, max_mode = float(bp.tol), bp.mode == "max"
    sm = passes(graph, k, big, tol)
    perm, comp, n_comp = sm.perm, sm.comp, sm.n_comp
    u_p = np.ascontiguousarray(u0[perm])
    msgs = sm.new_messages()
    trw_target = trw_components(bp.reweight, graph) if max_mode else np.zeros(n_comp, dtype=bool)
    # "auto": the attractive components warm up with ordinary max-product, then run
    # TRW-S; "trw": TRW-S from the start
    warm_up = bp.reweight == "auto" and bool(trw_target.any())
    trw = np.zeros(n_comp, dtype=bool) if warm_up else trw_target
    sm.set_gamma(trw[comp])
    lam = 0.0 if isinstance(bp.damping, str) else float(bp.damping)
    if bp.patience is not None:
        patience = np.full(n_comp, float(bp.patience))
    elif bp.schedule == "auto" and max_mode:
        size = np.bincount(comp, minlength=n_comp)
        patience = np.where(trw_target, np.inf, np.maximum(AUTO_PATIENCE, np.ceil(AUTO_PATIENCE_WORK / size)))
    else:
        patience = np.full(n_comp, np.inf)
    warm_patience = WARM_UP_PATIENCE if bp.patience is None else bp.patience
    rel_gap = float(bp.rel_gap)
    base = float(np.min(unary, axis=1).sum())
    labels, best = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    best_e, best_lb, lb_ref = np.full(n_comp, np.inf), np.full(n_comp, -np.inf), np.full(n_comp, -np.inf)
    stale, done = np.zeros(n_comp, dtype=np.int64), np.zeros(n_comp, dtype=bool)
    beliefs = np.zeros((n, k)) if not max_mode else None
    converged, stopped, it, info_switch = False, "max_iter", 0, None

    def unpermute(y):
        out = np.empty(n, dtype=np.int64)
        out[perm] = y
        return out

    def keep_best(node_e):
        e = np.bincount(comp, weights=node_e, minlength=n_comp)
        better = e < best_e
        stale[:] += 1
        if np.count_nonzero(better):
            np.copyto(best, labels, where=better[comp])
            best_e[better], stale[better] = e[better], 0

    # (np.count_nonzero on the small per-component masks: cheaper than .any() / .all())
    n_done, all_trw = 0, bool(trw.all())
    for it in range(1, int(bp.max_iter) + 1):
        node_e, moved_f = sm.forward(u_p, msgs, labels, bp.mode, lam)
        if max_mode:  # labels: decoded from the messages of iteration it - 1
            keep_best(node_e)
            bound_now = best_lb.sum() + base if all_trw and np.isfinite(best_lb).all() else None
            notify(it, unpermute(labels), bound_now)
            gap_closed = trw & (best_e - best_lb <= np.maximum(tol * np.maximum(1.0, np.abs(best_e)),
                                                               rel_gap * np.abs(best_e)))
            # a warming-up component still has its TRW-S phase to run
            done |= gap_closed | ((stale >= patience) & ~(trw_target & ~trw))
            if np.count_nonzero(done) > n_done:
                n_done = np.count_nonzero(done)
                sm.freeze(done[comp])
            if n_done == n_comp:
                converged = np.count_nonzero(gap_closed) == n_comp
                stopped = "gap" if converged else "patience"
                break
        moved_b, lb = sm.backward(u_p, msgs, bp.mode, lam, bound=np.count_nonzero(trw & ~done) > 0,
                                  beliefs=beliefs)
        if lb is not None:  # a TRW-S component also progresses while its bound rises
            best_lb = np.where(trw & ~done, np.maximum(best_lb, lb), best_lb)
            with np.errstate(invalid="ignore"):  # -inf - -inf before the first bound
                rising = trw & ~(best_lb - lb_ref <= rel_gap * np.abs(best_e))
            stale[rising], lb_ref[rising] = 0, best_lb[rising]
        settled = not (moved_f or moved_b)
        if isinstance(bp.damping, str) and it == AUTO_SWITCH:
            lam = 0.5  # undamped updates did not settle: damp the plain updates from now on
        if warm_up and (settled or it == AUTO_SWITCH
                        or np.count_nonzero(stale[trw_target & ~done] < warm_patience) == 0):
            warm_up, trw, all_trw = False, trw_target, bool(trw_target.all())  # switch to TRW-S
            sm.set_gamma(trw[comp])
            sm.zero_messages(msgs, trw[comp[sm.layout.src]])  # TRW-S starts cold (engine Notes)
            sm.wake(trw[comp])  # only their messages changed
            stale[trw] = 0
            info_switch = it
            continue
        if settled:
            converged, stopped = True, "tol"
            break
    info = {"damping": lam, "big": big, "stopped": stopped, "schedule": "sequential",
            "n_colours": sm.n_colours, "trw_components": int(trw_target.sum()),
            "n_components": n_comp, "trw_from_iter": None if not trw.any() else (info_switch or 0) + 1}
    if not max_mode:
        marg = marginals_from_beliefs(beliefs[np.argsort(perm)])
        y = np.argmax(marg, axis=1)
        notify(it, y)
        info["marginals"] = marg
        return {"labels": y, "n_iter": it, "converged": converged, "info": info}
    if stopped != "gap":  # decode the last messages
        node_e, _ = sm.forward(u_p, msgs, labels, send=False)
        keep_best(node_e)
    out = {"labels": [unpermute(labels), unpermute(best)], "n_iter": it, "converged": converged, "info": info}
    if trw.all():
        out["lower_bound"] = float(best_lb.sum()) + base
    return out
