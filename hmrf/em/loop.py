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
Round-off is judged in the precision the costs are computed in (:func:`rise_tolerance`):
float32 data give costs accurate to about 1e-7 of their size, float64 data to 1e-16.

Empty clusters. A cluster left without points takes the point with the largest current
cost (as scikit-learn's KMeans relocates to far points) among the points whose move
does not raise the pairwise energy, e.g. any unconstrained point. After the M-step the
moved point costs no more than before (its new cluster is fitted to it alone) and its
old cluster's parameters only improve, so the objective cannot rise. When every point
is constrained (an image's pixel grid), a move that raises the pairwise energy by
``Δ_i`` is taken if it still lowers the objective: the point's cost ``c_i`` less its
cost ``u_i`` in the cluster fitted to it alone exceeds ``Δ_i`` (``u_i`` is computed
with the family's own M-step and unary, for families whose M-step reads only the cluster
statistics, under the constant normaliser), tried for the ``OWN_COST_TRIALS`` points of
largest ``c_i − Δ_i``. If none of them qualifies the cluster stays empty (keeping its
previous parameters) rather than break monotonicity.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ..inference.base import InferenceEngine
from .passes import assignment_pass

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import DTypeLike, NDArray

    from ..emissions.base import EmissionParams
    from ..graph import PairwiseGraph
    from ..inference.base import InferenceResult
    from ..model import HMRF

__all__ = ["EMResult", "run_em", "rise_tolerance", "check_engine", "solve_e_step", "move_cost",
           "OWN_COST_TRIALS"]

#: Relative rise of the objective below which it counts as round-off: at least this ...
RISE_RTOL = 1e-9
#: ... and at least this many units of round-off of the working precision (the costs of
#: float32 data are float32 numbers, each accurate to a few units of 1.2e-7).
RISE_ULPS = 100


def rise_tolerance(objective: float, dtype: DTypeLike) -> float:
    """The largest rise of the objective that counts as round-off, for costs computed in
    ``dtype``: ``max(RISE_RTOL, RISE_ULPS · eps(dtype)) · max(1, |objective|)`` (1.2e-5
    of the objective for float32, 1e-9 for float64)."""
    kind = np.dtype(dtype)
    eps = np.finfo(kind if kind.kind == "f" else np.float64).eps
    return max(RISE_RTOL, RISE_ULPS * float(eps)) * max(1.0, abs(float(objective)))


@dataclass
class EMResult:
    """Outcome of one EM run: ``labels``, ``params``, their ``objective`` and the
    ``history`` of the objective after every M-step (non-increasing where the family's
    M-step is an exact minimiser, ``exact_m_step``).

    Attributes
    ----------
    trace : list of dict
        Per iteration: ``objective``, ``e_energy``, ``lower_bound``, ``n_changed``,
        ``rejected``, ``reseeded``, ``e_time``, ``m_time``, and ``engine``: the
        ``info`` of the engine's :class:`~hmrf.inference.InferenceResult` for the
        E-step (``None`` when no point was constrained).
    final_engine_info : dict or None
        The engine's ``info`` for the last pass's E-step, which makes the labels
        consistent with the final parameters (``None`` when it did not run the engine).
    """

    labels: np.ndarray
    params: object
    objective: float
    history: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    trace: list = field(default_factory=list)
    final_engine_info: dict | None = None


def check_engine(engine: InferenceEngine) -> None:
    """Check an E-step engine's parameters once, at the start of a fit (its E-steps then
    go through :func:`solve_e_step`, which does not check them again)."""
    if isinstance(engine, InferenceEngine):
        engine.check_params()


def _check_loop(max_iter: int, tol: float) -> None:
    """``max_iter >= 1`` and a finite ``tol >= 0``, or a ``ValueError`` naming them."""
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}.")
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0; got {tol}.")


def solve_e_step(engine: InferenceEngine, unary: NDArray[np.floating], graph: PairwiseGraph, init: Any,
                 rng: np.random.Generator) -> InferenceResult:
    """``engine``'s labelling of one E-step problem of a fit: costs (n_c, k), a
    :class:`~hmrf.graph.PairwiseGraph` and the previous labels (or ``None``) that the model
    produced from inputs checked at the fit's entrance, and the fit's generator, so an
    :class:`~hmrf.inference.InferenceEngine` solves them without checking them again
    (:meth:`~hmrf.inference.InferenceEngine.solve_validated`); another object with a
    ``map`` method is called as usual."""
    if isinstance(engine, InferenceEngine):
        return engine.solve_validated(np.asarray(unary, dtype=np.float64), graph, init, rng)
    return engine.map(unary, graph, init=init, rng=rng)


def move_cost(labels: NDArray[np.intp], graph: PairwiseGraph, target: int) -> np.ndarray:
    """Change of the pairwise energy if each node alone moved to the empty cluster
    ``target`` (n,), for the re-seeding of empty clusters (module docstring)."""
    n = labels.shape[0]
    delta = np.zeros(n)
    if graph.n_edges == 0:
        return delta
    e, w = graph.edges, graph.weight
    cls = graph.edge_classes()
    src = np.r_[e[:, 0], e[:, 1]]
    dst = np.r_[e[:, 1], e[:, 0]]
    ww, must, cannot = np.r_[w, w], np.r_[cls.must, cls.must], np.r_[cls.cannot, cls.cannot]
    same = labels[src] == labels[dst]  # nobody is in ``target`` yet
    potts = np.zeros(src.shape[0])
    ml, cl = must & same, cannot & same
    potts[ml] = ww[ml]  # a kept must-link becomes violated
    potts[cl] = -ww[cl]  # a violated cannot-link is repaired
    delta += _inf_safe_sum(src, potts, n)
    tab = np.flatnonzero(cls.table)
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


#: Candidates whose own-cluster cost the re-seeding of an empty cluster evaluates (largest
#: gain first) before it leaves a cluster empty (``_reseed``).
OWN_COST_TRIALS = 8


def _reseed(labels, cost, graph, n_clusters, allowed, movable=None, own_cost=None) -> tuple[np.ndarray, int]:
    """Give empty clusters a point without increasing the objective, by the rule of the
    module docstring: ``(labels, number re-seeded)``, the labels a copy when something
    moved. A candidate's own cluster keeps a member; ``allowed(rows, h) -> bool array``
    says which points cluster ``h`` may take (finite cost); ``movable`` (n,) excludes
    clamped points; ``own_cost(i, h)``, when given, is ``u_i``, tried for the
    ``OWN_COST_TRIALS`` largest ``c_i - Δ_i``."""
    counts = np.bincount(labels, minlength=n_clusters)
    empty = np.flatnonzero(counts == 0)
    if empty.size == 0:
        return labels, 0
    labels = labels.copy()
    finite = np.isfinite(cost)
    cost = np.where(finite, cost, np.finfo(float).max)
    done = 0
    for h in empty:  # at most k iterations, each vectorised over points
        counts = np.bincount(labels, minlength=n_clusters)
        delta = move_cost(labels, graph, h)
        may = counts[labels] > 1
        if movable is not None:
            may &= movable
        score = np.where(may & (delta <= 0), cost, -np.inf)
        moved = False
        while True:  # largest cost first; a candidate the cluster forbids is skipped
            i = int(np.argmax(score))
            if not np.isfinite(score[i]) and score[i] < 0:
                break
            if allowed(np.array([i]), h)[0]:
                labels[i] = h
                cost[i] = -np.inf
                done += 1
                moved = True
                break
            score[i] = -np.inf
        if moved or own_cost is None:
            continue
        gain = np.where(may & finite & (delta > 0) & np.isfinite(delta), cost - delta, -np.inf)
        top = np.argsort(-gain, kind="stable")[:OWN_COST_TRIALS]
        for i in top[gain[top] > 0]:  # a few candidates, each one small M-step
            u = own_cost(int(i), int(h))
            if np.isfinite(u) and gain[i] - u > 1e-12 * max(1.0, abs(cost[i])):
                labels[i] = h
                cost[i] = -np.inf
                finite[i] = False
                done += 1
                break
    return labels, done


#: Accumulate the M-step statistics from scratch (in the E-step pass) at least every
#: this many iterations, so the update by moved points cannot drift ...
REFRESH_EVERY = 20
#: ... and whenever more than this fraction of the points moved in the last iteration
#: (updating from the moved points then costs more than a full accumulation).
MOVED_FRACTION = 0.2


def _move_statistics(model, stats, rows, new, old):
    """``stats`` after the points ``rows`` moved from labels ``old`` to ``new``."""
    if rows.size == 0:
        return stats
    return stats + model.statistics(new, rows) - model.statistics(old, rows)


def run_em(model: HMRF, params: EmissionParams, engine: InferenceEngine, *, max_iter: int = 100,
           tol: float = 1e-4, rng: np.random.Generator | None = None,
           callback: Callable[..., Any] | None = None,
           data_pass: Callable[..., Any] | None = None, validated: bool = False) -> EMResult:
    """Alternate E- and M-steps on ``model`` from ``params``.

    Each iteration is one pass over the data (:func:`hmrf.em.passes.assignment_pass`) under
    the current parameters. It scores the previous labelling (the objective after the
    previous M-step), gives every unconstrained point its argmin label, and hands the
    cost rows of the constrained points, with the factors among them, to ``engine``.
    The M-step statistics are accumulated in the same pass, or updated from the points
    that moved when few did; then the family's update gives the new parameters.

    Parameters
    ----------
    tol : float
        Stop when the relative decrease of the objective is at most ``tol`` or when the
        labels stop changing. After a stop on the tolerance or on ``max_iter``, the
        E-step of the last pass makes the labels consistent with the final parameters
        (as scikit-learn's KMeans does), kept only if it does not worsen the objective
        or empty a cluster.
    rng : numpy Generator
        Drawn on as is by every E-step (``None``: a fresh one).
    callback : callable, optional
        ``callback(iteration, labels, params, objective)`` after each M-step.
    data_pass : callable, optional
        The pass over the data, with the signature and result of
        :func:`hmrf.em.passes.assignment_pass` (the default); a distributed model supplies
        its own. When ``model.incremental_statistics`` is false the statistics are
        accumulated by every pass instead of updated from the points that moved.
    validated : bool, default=False
        Whether ``max_iter``, ``tol`` and the engine's parameters were checked by the
        caller (an estimator checks them once per fit, whatever its number of runs).
    """
    if not validated:
        _check_loop(max_iter, tol)
        check_engine(engine)
    rng = np.random.default_rng() if rng is None else rng
    k = model.n_clusters
    family = model.emission
    data_pass = assignment_pass if data_pass is None else data_pass
    movable = None if model.clamped is None else model.clamped < 0
    precision = getattr(model.X, "dtype", np.float64)
    labels, stats, stats_labels = None, None, None
    age, moved_fraction = 0, 1.0
    prev_obj = np.inf
    history, trace = [], []
    final_info = None
    converged = False
    it = 0
    while True:
        t0 = time.perf_counter()
        graph = model.graph(params)
        nodes, sub = graph.constrained_part()
        accumulate = stats is None or age >= REFRESH_EVERY or moved_fraction > MOVED_FRACTION \
            or not model.incremental_statistics
        step = data_pass(model, params, previous=labels, constrained=nodes, accumulate=accumulate,
                         shift=model.statistics_shift)
        _check_finite(step.cost_total, step.constrained_unary, family, params, it)
        # the E-step under these parameters: the final one of the fit, or the next one
        new, energy, res, rejected, previous_pairwise = _e_step(step, nodes, sub, labels, engine, rng)
        if labels is not None:
            if previous_pairwise is None:
                previous_pairwise = _pairwise_energy(graph, nodes, sub, labels)
            obj = step.previous_cost + previous_pairwise
            _check_finite(obj, None, family, params, it)
            history.append(obj)
            trace[-1]["objective"] = obj
            if obj > prev_obj + rise_tolerance(prev_obj, precision) and family.exact_m_step:
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
                # this pass's E-step under the final parameters, kept only if it does not
                # worsen J or empty a cluster (no M-step follows)
                final_info = None if res is None else res.info
                if energy <= obj and _n_used(new) >= _n_used(labels):
                    labels, obj = new, energy
                prev_obj = obj
                break
            prev_obj = obj
        it += 1
        reseeded = 0
        if _counts(new, k).min() == 0:  # an empty cluster
            if step.reseed is not None:  # a pass whose costs and labels stay with the data
                new, reseeded = step.reseed(new, graph, movable, _own_cost(model, params, new))
            else:  # labels in memory: every point's cost from the pass
                cost = np.array(step.costs(), dtype=np.float64)
                if nodes.size:
                    cost[nodes] = step.constrained_unary[np.arange(nodes.size), new[nodes]]
                new, reseeded = _reseed(new, cost, graph, k, partial(_finite_cost, model, params), movable,
                                        _own_cost(model, params, new))
        t1 = time.perf_counter()
        n_changed = int(new.shape[0] if labels is None else _n_changed(new, labels))
        trace.append(dict(objective=prev_obj, e_energy=energy,
                          lower_bound=None if res is None or res.lower_bound is None
                          else res.lower_bound + _free_energy(step, nodes),
                          n_changed=n_changed, rejected=rejected, reseeded=reseeded,
                          e_time=t1 - t0, m_time=0.0, engine=None if res is None else res.info))
        if labels is not None and n_changed == 0:
            converged = True
            break
        if accumulate:
            stats, stats_labels, age = step.stats, step.labels, 0
        moved = _moved(new, stats_labels)
        stats = _move_statistics(model, stats, moved, new[moved], stats_labels[moved])
        age += 1
        moved_fraction = n_changed / new.shape[0]
        labels, stats_labels = new, new
        params = model.update(stats, labels, params)
        trace[-1]["m_time"] = time.perf_counter() - t1
    return EMResult(labels=labels, params=params, objective=float(prev_obj), history=history,
                    n_iter=it, converged=converged, trace=trace, final_engine_info=final_info)


def _check_finite(total, rows, family, params, it) -> None:
    """Stop the fit at iteration ``it`` when the summed costs ``total`` are not finite or the
    cost rows ``rows`` (the constrained points', or ``None``) hold a NaN: a ``ValueError``
    naming the family, and whether its parameters or its costs of finite parameters are
    what is not finite (hard constraints kept, every cost is finite or a forbidden +inf)."""
    if np.isfinite(total) and (rows is None or not np.isnan(rows).any()):
        return
    fields = (params.centers, params.scale, params.weights)
    finite = all(np.all(np.isfinite(np.asarray(a, dtype=np.float64))) for a in fields if a is not None)
    name = type(family).__name__
    source = (f"{name}.unary gave non-finite costs at finite parameters" if finite else
              f"the parameters are not finite ({name}.{'init_params' if it == 0 else 'update'})")
    raise ValueError(
        f"the EM objective is not finite at iteration {it} ({total}): {source}, emission family "
        f"{name} ({family.name!r}). A gradient or log that is infinite on the boundary of the "
        "family's domain does this, e.g. a centre with an entry at 0 where the divergence takes "
        "its log; keep the centres inside the domain in init_params and update.")


def _own_cost(model, params, labels):
    """``own_cost(i, h)`` for ``_reseed``: point ``i``'s unary cost under the
    parameters ``params`` with cluster ``h`` re-estimated from ``i`` alone by the family's
    M-step (every other cluster keeps its parameters, so no other point's cost changes);
    ``None`` where that does not hold: a normaliser or mixing weights shared between
    clusters, an M-step that reads more than the cluster statistics, or an inexact one."""
    fam = model.emission
    if model.normalizer != "constant" or params.weights is not None or not fam.exact_m_step \
            or set(fam.m_step_needs) != {"statistics"}:
        return None

    def own_cost(i, h):
        rows = np.array([i])
        trial = model.update(model.statistics(np.array([h]), rows), labels, params)
        centers = np.array(params.centers, dtype=np.float64)
        centers[h] = trial.centers[h]
        return float(model.unary(params.replace(centers=centers), rows=slice(i, i + 1))[0, h])

    return own_cost


def _finite_cost(model, params, rows, h) -> np.ndarray:
    """Whether cluster ``h`` gives the points ``rows`` a finite unary cost."""
    return np.array([np.isfinite(model.unary(params, rows=slice(r, r + 1))[0, h]) for r in rows])


def _free_energy(step, nodes) -> float:
    """Summed minimum cost of the unconstrained points of a pass (all points' minima
    less those of the constrained points, whose cost rows the pass kept)."""
    if not nodes.size:
        return step.cost_total
    if step.constrained_unary is None:
        return step.cost_total - step.constrained_min
    return step.cost_total - float(step.constrained_unary.min(axis=1).sum())


def _e_step(step, nodes, sub, previous, engine, rng):
    """Labels of every point: the pass's argmin, and the engine's labelling of the
    constrained points (or their previous labels, if the engine's is worse: the energy is
    separable between the two sets, so the argmin part is always kept). Returns the
    labels, their energy, the engine's result (``None`` without constrained points),
    whether its labelling was rejected, and the pairwise energy of ``previous`` when the
    E-step computed it where the cost rows are (``step.solve``), else ``None``."""
    if nodes.size and step.solve is not None:
        return step.solve(step, engine, sub, previous, rng)
    free = _free_energy(step, nodes)
    if nodes.size == 0:
        return _with_rows(step.labels, nodes, None), free, None, False, None
    init = None if previous is None else previous[nodes]
    res = solve_e_step(engine, step.constrained_unary, sub, init, rng)
    if init is not None:
        old = sub.energy(init, step.constrained_unary)
        if res.energy > old:
            return _with_rows(step.labels, nodes, init), free + old, res, True, None
    return _with_rows(step.labels, nodes, res.labels), free + res.energy, res, False, None


# The labels of a pass: an (n,) ndarray in memory; on a cluster a labelling whose values
# stay where the data are (hmrf.distributed.ChunkLabels), which the client reads at the
# constrained points only and changes by ``with_rows``. The helpers below do the same
# thing to either.

def _with_rows(labels, rows, values):
    """A copy of ``labels`` with ``labels[rows] = values`` (``values=None``: a copy)."""
    if not isinstance(labels, np.ndarray):
        return labels if values is None else labels.with_rows(rows, values)
    out = labels.copy()
    if values is not None:
        out[rows] = values
    return out


def _pairwise_energy(graph, nodes, sub, labels) -> float:
    """``graph.pairwise_energy(labels)``; on labels kept elsewhere, from the constrained
    points' labels and the graph among them (the same factors, in the same order)."""
    if isinstance(labels, np.ndarray):
        return graph.pairwise_energy(labels)
    return sub.pairwise_energy(labels[nodes])


def _counts(labels, k) -> np.ndarray:
    """Points in each cluster."""
    return np.bincount(labels, minlength=k) if isinstance(labels, np.ndarray) else labels.counts


def _n_used(labels) -> int:
    """Number of non-empty clusters."""
    return int(np.count_nonzero(np.bincount(labels))) if isinstance(labels, np.ndarray) else labels.n_used()


def _n_changed(new, old) -> int:
    """Points whose label differs between ``new`` and ``old``."""
    return np.count_nonzero(new != old) if isinstance(new, np.ndarray) else new.n_changed_from(old)


def _moved(new, old) -> np.ndarray:
    """Indices of the points whose label differs between ``new`` and ``old`` (labels that
    a pass computed and the E-step changed at a few points)."""
    return np.flatnonzero(new != old) if isinstance(new, np.ndarray) else new.moved_from(old)
