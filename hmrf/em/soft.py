"""Soft (variational) EM for the HMRF: posteriors instead of MAP labels.

Hard EM (:mod:`hmrf.em.loop`) alternates MAP labels and parameters. Soft EM alternates
posteriors ``q`` over the labels and parameters, descending the variational free energy
(Neal & Hinton 1998; for MRFs with a mean-field E-step, Zhang 1992)

    F(q, Θ) = E_q[J(y, Θ)] - H(q)
            = Σ_i Σ_h q_i(h) U_ih(Θ) + Σ_e E_q[cost_e] + Σ_i Σ_h q_i(h) log q_i(h),

with ``U_ih = -log p(x_i | h, Θ)`` (plus ``-log π_h`` when mixing weights are learned).
``F >= -log Z(Θ)``, the negative log-likelihood of the data up to the MRF normaliser.

* **E-step**, in one pass over the data (:func:`hmrf.em.passes.soft_pass`): a point with no
  pairwise factor has the exact posterior ``q_i(h) ∝ exp(-U_ih)`` and contributes
  ``-log Σ_h exp(-U_ih)`` to ``F``; it is never stored beyond its block of rows. The
  constrained points get approximate posteriors from the chosen method:

  - ``MeanField`` (:mod:`hmrf.inference.meanfield`): factorised ``q`` minimising ``F``
    by coordinate descent from the previous posteriors. ``F`` is then exactly the
    objective both steps descend, so its history never increases.
  - ``BeliefPropagation(mode="sum")``: the sum-product marginals (exact on trees, the
    Bethe approximation on loopy graphs). The reported ``F`` is the factorised free
    energy at those marginals (still an upper bound on ``-log Z``); BP does not minimise
    it, so its history may rise slightly.

* **M-step**: the family's update on posterior-weighted statistics
  (:mod:`hmrf.emissions.stats`). With ``normalizer="closed_form"`` this fits the
  per-cluster variance (Gaussian) or concentration (vMF), and the mixing weights
  ``π_h = Σ_i q_i(h) / n`` are learned too; with ``"constant"`` the costs are the
  divergences and ``q_i(h) ∝ exp(-D(x_i, μ_h))`` (soft k-means at unit temperature).

What each approximation drops: the MRF normaliser ``log Z`` of the potentials (constant
in Θ for potentials that do not depend on Θ, which is why soft EM refuses MPCKMeans'
distance-scaled penalties); with mean-field, the correlations between constrained
points; with BP, the guarantee that ``F`` is what the E-step minimises.
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING

import numpy as np

from ..inference.bp import BeliefPropagation
from ..inference.meanfield import MeanField, factorised_free_energy
from .loop import EMResult, check_engine, rise_tolerance, solve_e_step
from .passes import soft_pass

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..emissions.base import EmissionParams
    from ..inference.base import InferenceEngine
    from ..model import HMRF

__all__ = ["run_soft_em", "posterior_engine", "POSTERIORS"]

#: names of the posterior methods of soft EM (``"icm"`` maps to its soft analogue)
POSTERIORS = ("mean_field", "bp")


def posterior_engine(spec: str | InferenceEngine) -> InferenceEngine:
    """The posterior method of soft EM from an estimator's ``inference`` setting.

    ``"mean_field"`` (and ``"icm"``, whose sequential coordinate updates mean-field
    makes soft) gives :class:`~hmrf.inference.meanfield.MeanField`; ``"bp"`` gives
    sum-product :class:`~hmrf.inference.BeliefPropagation`; instances of either are used
    as they are (a max-product BP instance is switched to sum-product).
    """
    if isinstance(spec, MeanField):
        return spec
    if isinstance(spec, BeliefPropagation):
        return spec if spec.mode == "sum" else BeliefPropagation(
            "sum", spec.max_iter, spec.damping, spec.tol, spec.reweight, schedule=spec.schedule)
    if isinstance(spec, str) and spec.lower() in ("mean_field", "meanfield", "icm"):
        return MeanField()
    if isinstance(spec, str) and spec.lower() == "bp":
        return BeliefPropagation(mode="sum")
    raise ValueError(
        f"em='soft' needs posteriors: inference must be 'mean_field' (or 'icm', its soft "
        f"analogue), 'bp' (sum-product), or a MeanField / BeliefPropagation instance; got {spec!r}."
    )


def _posteriors(engine, unary, graph, init, rng):
    """(posteriors, free energy) of the constrained points."""
    if isinstance(engine, MeanField):
        res = engine.marginals(unary, graph, init=init)
        return res.marginals, res.free_energy
    q = solve_e_step(engine, unary, graph, None, rng).info["marginals"]
    return q, factorised_free_energy(unary, graph, q)


def run_soft_em(model: HMRF, params: EmissionParams, engine: str | InferenceEngine | None = None, *,
                max_iter: int = 100, tol: float = 1e-4, rng: np.random.Generator | None = None,
                callback: Callable[..., Any] | None = None,
                data_pass: Callable[..., Any] | None = None) -> EMResult:
    """Soft EM on ``model`` from ``params`` (module docstring).

    Parameters
    ----------
    model : HMRF
    params : EmissionParams
    engine : MeanField or BeliefPropagation or str, optional
        Posterior method of the constrained points (default mean-field).
    max_iter : int
    tol : float
        Stop when the relative decrease of the free energy is at most ``tol``.
    rng : numpy Generator
    callback : callable, optional
        ``callback(iteration, labels, params, free_energy)`` after each E-step.
    data_pass : callable, optional
        The pass over the data, with the signature and result of
        :func:`hmrf.em.passes.soft_pass` (the default); a distributed model supplies its own.

    Returns
    -------
    EMResult
        ``labels``: the most probable label of every point under its posterior;
        ``objective`` and ``history``: the free energy after each E-step; ``params``: the
        parameters those posteriors were computed with; ``posteriors`` in ``trace[-1]``
        for the constrained points (with their indices, ``nodes``).
    """
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}.")
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0; got {tol}.")
    if "pairwise" in model.emission.m_step_needs and model.depends_on_params:
        raise ValueError(
            f"soft EM is not available for {model.emission!r} with parameter-dependent "
            "potentials (MPCKMeans' metric update needs MAP labels); use em='hard'."
        )
    engine = posterior_engine("mean_field" if engine is None else engine)
    check_engine(engine)
    monotone = isinstance(engine, MeanField) and model.emission.exact_m_step
    learn_weights = model.normalizer == "closed_form"
    if learn_weights and params.weights is None:  # uniform π: the prior's log k is part of F
        params = params.replace(weights=np.full(model.n_clusters, 1.0 / model.n_clusters))
    history, trace = [], []
    q_c, prev, converged, labels, it = None, np.inf, False, None, 0
    for it in range(1, int(max_iter) + 1):  # noqa: B007 (it is reported)
        t0 = time.perf_counter()
        graph = model.graph(params)
        nodes, sub = graph.constrained_part()
        step = (soft_pass if data_pass is None else data_pass)(model, params, nodes, model.statistics_shift)
        free = step.free_energy
        labels = step.labels
        stats = step.stats
        if nodes.size:
            q_c, f_c = _posteriors(engine, step.constrained_unary, sub, q_c, rng)
            free += f_c
            if isinstance(labels, np.ndarray):  # the pass's own vector
                labels[nodes] = np.argmax(q_c, axis=1)
            else:  # labels kept where the rows are (hmrf.distributed.ChunkLabels)
                labels = labels.with_rows(nodes, np.argmax(q_c, axis=1))
            stats = stats + model.statistics(q_c, rows=nodes)
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
        new = model.update(stats, labels, params)
        if learn_weights:
            total = stats.counts.sum()
            new = new.replace(weights=np.maximum(stats.counts / total, np.finfo(float).tiny))
        params = new
        trace[-1]["m_time"] = time.perf_counter() - t1
    return EMResult(labels=labels, params=params, objective=float(history[-1]), history=history,
                    n_iter=it, converged=converged, trace=trace)
