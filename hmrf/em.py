"""The generic EM loop of HMRF-KMeans (Basu 2005, §4.4.2, Fig. 4.3).

Repeat until the objective stops improving:

* **E-step**: labels from any inference engine, given the unary costs and pairwise
  factors under the current parameters (§4.4.4, Appendix A);
* **empty clusters**: re-seeded (below);
* **M-step**: the emission family re-estimates Θ (§4.4.5; for families with a metric,
  this includes the metric update), and parameter-dependent potentials are rebuilt.

Monotonicity. With an exact M-step the objective cannot increase, provided the E-step
does not return a labelling worse than the previous one under the current parameters
(§4.4.6). ICM started from the previous labels guarantees that; global engines do not
(BP, rounding), so the loop keeps the previous labels whenever the engine's labelling
has higher energy (counted in ``EMResult.trace[i]["rejected"]``). The objective history
is therefore non-increasing for every engine; an increase beyond round-off means the
M-step is not exact and triggers a ``RuntimeWarning`` for families that claim it is.

Empty clusters. A cluster left without points takes the point with the largest current
cost (as scikit-learn's KMeans relocates to far points) among the points whose move
does not raise the pairwise energy, e.g. any unconstrained point. After the M-step the
moved point costs no more than before (its new cluster is fitted to it alone) and its
old cluster's parameters only improve, so the objective cannot rise. If no point
qualifies the cluster stays empty (keeping its previous parameters) rather than break
monotonicity; this needs every point to be constrained.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .graph import POTTS_CL, POTTS_ML, TABLE
from .inference.base import InferenceEngine

__all__ = ["EMResult", "run_em", "reseed_empty_clusters"]


@dataclass
class EMResult:
    """Outcome of one EM run.

    Attributes
    ----------
    labels : ndarray (n,)
    params : EmissionParams
    objective : float
        ``J(labels, params)`` of the returned pair.
    history : list of float
        Objective after every M-step (non-increasing).
    n_iter : int
    converged : bool
    trace : list of dict
        Per iteration: ``objective``, ``e_energy``, ``lower_bound``, ``n_changed``,
        ``rejected``, ``reseeded``, ``e_time``, ``m_time``.
    """

    labels: np.ndarray
    params: object
    objective: float
    history: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    trace: list = field(default_factory=list)


def _move_cost(labels, graph, target) -> np.ndarray:
    """Change of the pairwise energy if each node alone moved to the empty ``target``."""
    n = labels.shape[0]
    delta = np.zeros(n)
    if graph.n_edges == 0:
        return delta
    e, w, kind = graph.edges, graph.weight, graph.kind
    src = np.r_[e[:, 0], e[:, 1]]
    dst = np.r_[e[:, 1], e[:, 0]]
    ww, kk = np.r_[w, w], np.r_[kind, kind]
    same = labels[src] == labels[dst]  # nobody is in ``target`` yet
    potts = np.zeros(src.shape[0])
    ml, cl = (kk == POTTS_ML) & same, (kk == POTTS_CL) & same
    potts[ml] = ww[ml]  # a kept must-link becomes violated
    potts[cl] = -ww[cl]  # a violated cannot-link is repaired
    delta += _inf_safe_sum(src, potts, n)
    tab = np.flatnonzero(kind == TABLE)
    if tab.size:
        T = graph.table_costs()
        a, b = e[tab, 0], e[tab, 1]
        ya, yb = labels[a], labels[b]
        idx = np.arange(tab.size)
        delta += _inf_safe_sum(a, T[idx, target, yb] - T[idx, ya, yb], n)
        delta += _inf_safe_sum(b, T[idx, ya, target] - T[idx, ya, yb], n)
    return delta


def _inf_safe_sum(rows, values, n):
    """``bincount`` that lets +inf / -inf through (nan, from inf - inf, counts as +inf)."""
    values = np.where(np.isnan(values), np.inf, values)
    out = np.zeros(n)
    np.add.at(out, rows, values)
    return np.where(np.isnan(out), np.inf, out)


def reseed_empty_clusters(labels, unary, graph, n_clusters) -> tuple[np.ndarray, int]:
    """Give empty clusters a point without increasing the objective (module docstring).

    Candidates are points whose move alone does not raise the pairwise energy (every
    unconstrained point qualifies) and whose cluster keeps at least one member; the one
    with the largest current cost moves. With an exact M-step its new cost cannot exceed
    its old one, so the objective after the M-step cannot rise. A cluster stays empty
    only when no point qualifies (every point constrained so that any move costs).

    Returns the new labels and the number of clusters re-seeded.
    """
    counts = np.bincount(labels, minlength=n_clusters)
    empty = np.flatnonzero(counts == 0)
    if empty.size == 0:
        return labels, 0
    labels = labels.copy()
    n = labels.shape[0]
    cost = unary[np.arange(n), labels]
    cost = np.where(np.isfinite(cost), cost, np.finfo(float).max)
    done = 0
    for h in empty:  # at most k iterations, each vectorised over points
        counts = np.bincount(labels, minlength=n_clusters)
        ok = (counts[labels] > 1) & (_move_cost(labels, graph, h) <= 0) & np.isfinite(unary[:, h])
        if not ok.any():
            continue
        i = int(np.argmax(np.where(ok, cost, -np.inf)))
        labels[i] = h
        cost[i] = -np.inf
        done += 1
    return labels, done


def run_em(model, params, engine: InferenceEngine, *, max_iter: int = 100, tol: float = 1e-4,
           rng=None, callback=None) -> EMResult:
    """Alternate E- and M-steps on ``model`` from ``params``.

    Parameters
    ----------
    model : HMRF
    params : EmissionParams
        Initial parameters (from :mod:`hmrf.initialization`).
    engine : InferenceEngine
    max_iter : int
        Maximum EM iterations.
    tol : float
        Stop when the relative decrease of the objective is at most ``tol`` or when the
        labels stop changing. After a stop on the tolerance or on ``max_iter``, one
        more E-step makes the labels consistent with the final parameters.
    rng : numpy Generator
    callback : callable, optional
        ``callback(iteration, labels, params, objective)`` after each M-step.

    Returns
    -------
    EMResult
    """
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}.")
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0; got {tol}.")
    k = model.n_clusters
    family = model.emission
    labels = None
    prev_obj = np.inf
    history, trace = [], []
    converged = False
    it = 0
    while True:
        # One unary evaluation per iteration: it scores the previous M-step's
        # (labels, params) pair *and* feeds this iteration's E-step.
        t0 = time.perf_counter()
        unary = model.unary(params)
        graph = model.graph(params)
        if labels is not None:
            obj = graph.energy(labels, unary)
            history.append(obj)
            trace[-1]["objective"] = obj
            if obj > prev_obj + 1e-9 * max(1.0, abs(prev_obj)) and getattr(family, "exact_m_step", True):
                warnings.warn(
                    f"EM objective increased from {prev_obj:.10g} to {obj:.10g} at iteration {it}; "
                    f"the M-step of {family!r} is not an exact minimiser.",
                    RuntimeWarning,
                    stacklevel=2,
                )
            if callback is not None:
                callback(it, labels, params, obj)
            converged = bool(np.isfinite(prev_obj) and prev_obj - obj <= tol * abs(prev_obj))
            if converged or it == int(max_iter):
                # Stopped on the tolerance or the iteration cap: one more E-step so that
                # the labels match the final parameters (as scikit-learn's KMeans does),
                # kept only if it does not worsen J or empty a cluster (no M-step follows).
                final = engine.map(unary, graph, init=labels, rng=rng)
                if final.energy <= obj and np.unique(final.labels).shape[0] >= np.unique(labels).shape[0]:
                    labels, obj = final.labels, final.energy
                prev_obj = obj
                break
            prev_obj = obj
        it += 1
        res = engine.map(unary, graph, init=labels, rng=rng)
        new, rejected = res.labels, False
        if labels is not None and res.energy > prev_obj:
            new, rejected = labels, True  # keep the better labelling (module docstring)
        new, reseeded = reseed_empty_clusters(new, unary, graph, k)
        t1 = time.perf_counter()
        n_changed = int(new.shape[0] if labels is None else np.count_nonzero(new != labels))
        trace.append(dict(objective=prev_obj, e_energy=res.energy, lower_bound=res.lower_bound,
                          n_changed=n_changed, rejected=rejected, reseeded=reseeded,
                          e_time=t1 - t0, m_time=0.0))
        if labels is not None and n_changed == 0:
            converged = True
            break
        labels = new
        params = model.m_step(labels, params)
        trace[-1]["m_time"] = time.perf_counter() - t1
    return EMResult(labels=labels, params=params, objective=float(prev_obj), history=history,
                    n_iter=it, converged=converged, trace=trace)
