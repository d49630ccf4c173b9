"""Soft (variational) EM for the HMRF: posteriors instead of MAP labels.

Soft EM alternates posteriors ``q`` and parameters ``Θ``, descending the variational free
energy (Neal & Hinton 1998; for MRFs with a mean-field E-step, Zhang 1992)

    F(q, Θ) = Σ_i Σ_h q_ih (λ_i U_ih(Θ) + τ_i log q_ih) + Σ_e E_q[cost_e] + R(Θ)

with ``U_ih = -log p(x_i | h, Θ) - log π_h``, row weights ``λ_i`` (default 1), ``τ_i =
λ_i`` for a point with no pairwise factor and 1 for a constrained one, and ``R(Θ) = -log
p(Θ)`` the prior of a MAP M-step: the family's
:meth:`~hmrf.emissions.EmissionFamily.prior_cost`, plus ``-β Σ_h log π_h`` for mixing
weights with Dirichlet pseudo-count ``β``. With unit weights ``F - R >= -log Z(Θ)``.

* **E-step** (:func:`hmrf.em.passes.soft_pass`): a point with no pairwise factor has the
  exact posterior ``q_ih ∝ exp(-U_ih)`` and contributes ``-λ_i log Σ_h exp(-U_ih)``; the
  constrained points' posteriors and free energy come from an engine that gives marginals
  (``gives_marginals``; default :class:`~hmrf.inference.MeanField`) on the costs
  ``λ_i U_ih`` and the factors, started from the previous posteriors. With an engine that
  descends ``F`` from there (``descends_free_energy``: mean-field) the history of ``F``
  never increases; with sum-product BP's Bethe marginals it may rise slightly.
* **M-step**: the family's update on the statistics weighted by ``λ_i q_ih``
  (:mod:`hmrf.emissions.stats`) and, when mixing weights are learned,
  ``π_h = (β + n_h) / (k β + Σ_g n_g)`` with ``n_h = Σ_i λ_i q_ih``.

Dropped: the MRF normaliser ``log Z`` of the potentials (constant in Θ unless they
depend on Θ, which is why soft EM refuses MPCKMeans' distance-scaled penalties); with
mean-field, the correlations between constrained points.
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING

import numpy as np

from ..inference import MeanField, get_engine
from .loop import EMResult, _check_finite, _check_loop, check_engine, rise_tolerance, solve_e_step
from .passes import soft_pass

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import NDArray

    from ..emissions.base import EmissionParams
    from ..emissions.stats import ClusterStats
    from ..inference.base import InferenceEngine
    from ..model import HMRF

__all__ = ["run_soft_em", "posterior_engine", "update_params"]


def posterior_engine(spec: str | InferenceEngine | None = None) -> InferenceEngine:
    """Soft EM's engine for the constrained points' posteriors: ``None`` or ``"auto"``:
    :class:`~hmrf.inference.MeanField`; else :func:`~hmrf.inference.get_engine`'s, which
    must give marginals (``gives_marginals``), or a ``ValueError`` names it. A max-product
    ``BeliefPropagation`` is refused, not switched: its settings mean nothing to
    sum-product; ``BeliefPropagation(mode="sum")`` gives marginals."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "auto"):
        return MeanField()
    engine = get_engine(spec)
    if not getattr(engine, "gives_marginals", False):
        raise ValueError(
            f"em='soft' needs posteriors, and {engine!r} gives none (gives_marginals is false); "
            "use inference='mean_field' (MeanField) or BeliefPropagation(mode='sum')."
        )
    return engine


def update_params(model: HMRF, stats: ClusterStats, labels: NDArray[np.intp] | None,
                  params: EmissionParams | None, mixing: float | None = None) -> EmissionParams:
    """The M-step: the family's update on posterior-weighted statistics and, with
    ``mixing = β``, the mixing weights ``π_h = (β + n_h) / (k β + Σ_g n_g)`` of the
    statistics' counts ``n_h`` (module docstring)."""
    new = model.update(stats, labels, params)
    if mixing is None:
        return new
    counts = stats.counts
    pi = (counts + mixing) / (counts.sum() + mixing * counts.shape[0])
    return new.replace(weights=np.maximum(pi, np.finfo(float).tiny))


def run_soft_em(model: HMRF, params: EmissionParams, engine: str | InferenceEngine | None = None, *,
                max_iter: int = 100, tol: float = 1e-4, rng: np.random.Generator | None = None,
                callback: Callable[..., Any] | None = None, data_pass: Callable[..., Any] | None = None,
                row_weights: NDArray[np.floating] | None = None, mixing: float | None = None) -> EMResult:
    """Soft EM on ``model`` from ``params`` (module docstring); the other parameters are
    :func:`~hmrf.em.run_em`'s, ``callback`` called after each E-step.

    Parameters
    ----------
    engine : str or InferenceEngine, optional
        Posteriors of the constrained points (:func:`posterior_engine`; mean-field).
    row_weights : ndarray (n,), optional
        ``λ_i >= 0`` (finite; > 0 on rows with an infinite cost).
    mixing : float, optional
        Learn mixing weights with pseudo-count ``β = mixing``; default: ``β = 0`` under
        ``normalizer="closed_form"``, none otherwise.

    Returns
    -------
    EMResult
        ``labels``: the most probable label of every point (the engine's labels where
        constrained); ``objective``, ``history``: ``F`` after each E-step; ``params``: those
        of the last E-step; ``trace[-1]``: the constrained points' ``posteriors``, ``nodes``.
    """
    _check_loop(max_iter, tol)
    if "pairwise" in model.emission.m_step_needs and model.depends_on_params:
        raise ValueError(f"soft EM is not available for {model.emission!r} with parameter-dependent "
                         "potentials (MPCKMeans' metric update needs MAP labels); use em='hard'.")
    engine = posterior_engine(engine)
    check_engine(engine)
    extra = {} if row_weights is None else {"weights": np.asarray(row_weights, dtype=np.float64)}
    if extra and (extra["weights"].shape != (model.n_samples,) or not np.all(extra["weights"] >= 0)
                  or not np.all(np.isfinite(extra["weights"]))):
        raise ValueError(f"row_weights must be {model.n_samples} finite numbers >= 0.")
    if mixing is None:
        mixing = 0.0 if model.normalizer == "closed_form" else None
    elif not np.isfinite(mixing) or mixing < 0:
        raise ValueError(f"mixing must be a finite number >= 0; got {mixing}.")
    if mixing is not None and params.weights is None:  # uniform π: the prior's log k is part of F
        params = params.replace(weights=np.full(model.n_clusters, 1.0 / model.n_clusters))
    monotone = bool(getattr(engine, "descends_free_energy", False)) and model.emission.exact_m_step
    data_pass = soft_pass if data_pass is None else data_pass
    history, trace = [], []
    q_c, prev, converged, labels, it = None, np.inf, False, None, 0
    for it in range(1, int(max_iter) + 1):  # noqa: B007 (it is reported)
        t0 = time.perf_counter()
        graph = model.graph(params)
        nodes, sub = graph.constrained_part()
        step = data_pass(model, params, nodes, model.statistics_shift, **extra)
        free, labels, stats = step.free_energy, step.labels, step.stats
        if nodes.size:
            w_c = extra["weights"][nodes, None] if extra else None
            unary_c = step.constrained_unary if w_c is None else step.constrained_unary * w_c
            res = solve_e_step(engine, unary_c, sub, q_c, rng)
            q_c = res.marginals
            free += res.free_energy
            if isinstance(labels, np.ndarray):  # the pass's own vector
                labels[nodes] = res.labels
            else:  # labels kept where the rows are (hmrf.distributed.ChunkLabels)
                labels = labels.with_rows(nodes, res.labels)
            stats = stats + model.statistics(q_c if w_c is None else q_c * w_c, rows=nodes)
        free += model.emission.prior_cost(params)  # R(Θ)
        if mixing:
            free -= mixing * float(np.log(params.weights).sum())
        # iteration 0 of the message is the initial parameters, as in hard EM
        _check_finite(free, step.constrained_unary if nodes.size else None, model.emission, params,
                      it - 1)
        history.append(free)
        t1 = time.perf_counter()
        trace.append(dict(objective=free, e_time=t1 - t0, m_time=0.0, n_changed=None,
                          nodes=nodes, posteriors=q_c))
        if monotone and free > prev + rise_tolerance(prev, getattr(model.X, "dtype", np.float64)):
            warnings.warn(f"soft EM free energy increased from {prev:.10g} to {free:.10g} at "
                          f"iteration {it}.", RuntimeWarning, stacklevel=2)
        if callback is not None:
            callback(it, labels, params, free)
        converged = bool(np.isfinite(prev) and prev - free <= tol * abs(prev))
        if converged or it == int(max_iter):
            break
        prev = free
        params = update_params(model, stats, labels, params, mixing)
        trace[-1]["m_time"] = time.perf_counter() - t1
    return EMResult(labels=labels, params=params, objective=float(history[-1]), history=history,
                    n_iter=it, converged=converged, trace=trace)
