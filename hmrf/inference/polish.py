"""Shared last steps of the global engines: optional ICM polish and the hard-constraint check.

``polish="icm"`` runs :class:`~hmrf.inference.ICM` from a global engine's labelling:
never worse, it repairs the single-node mistakes that rounding and max-product decoding
leave. :func:`finish` keeps the cheapest candidate and never returns a labelling of
infinite energy silently: it repairs one or raises :class:`~hmrf.InfeasibleError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import InfeasibleError
from ..graph import PairwiseGraph
from .feasibility import greedy_repair
from .icm import iterated_conditional_modes

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["POLISH", "check_polish", "polish_labels", "finish"]

#: accepted values of the engines' ``polish`` parameter
POLISH = (None, "none", "icm")


def check_polish(polish: Any) -> str | None:
    """Validate an engine's ``polish`` argument; returns ``None`` or ``"icm"``."""
    if polish not in POLISH:
        raise ValueError(f"polish must be None or 'icm'; got {polish!r}.")
    return None if polish in (None, "none") else "icm"


def polish_labels(unary: NDArray[np.floating], graph: PairwiseGraph, labels: NDArray[np.intp],
                  rng: np.random.Generator, max_iter: int = 100) -> tuple[np.ndarray, int]:
    """ICM (Basu 2005, §4.4.4) started from ``labels``; returns the labels and sweeps run
    (:func:`~hmrf.inference.icm.iterated_conditional_modes`)."""
    out, sweeps, _ = iterated_conditional_modes(unary, graph, labels, rng, max_iter)
    return out, sweeps


def finish(unary: NDArray[Any], graph: PairwiseGraph, candidates: Any, engine: str,
           rng: np.random.Generator | None = None, fallback: NDArray[Any] | None = None,
           energies: Any = None) -> tuple[np.ndarray, float]:
    """The lowest-energy candidate labelling; repair or raise if it breaks a hard factor.

    ``candidates`` are labellings of the reduced problem (``None`` skipped), ``energies``
    their known energies (``None`` where unknown). If every candidate has infinite
    energy: ICM from the best one, then a greedy re-assignment of the broken components
    (:func:`~hmrf.inference.feasibility.greedy_repair`) and ICM again, then ``fallback``
    if it is feasible; otherwise :class:`~hmrf.InfeasibleError` names a point the repair
    could not place (``engine`` names the engine in the message). Returns
    ``(labels, energy)``.
    """
    known = [None] * len(candidates) if energies is None else list(energies)
    cands, energies = [], []
    for c, e in zip(candidates, known):
        if c is None:
            continue
        c = np.asarray(c, dtype=np.int64)
        if e is None:
            e = next((ei for ci, ei in zip(cands, energies) if np.array_equal(ci, c)), None)
        cands.append(c)
        energies.append(graph.energy(c, unary) if e is None else e)
    best = int(np.argmin(energies))
    if np.isfinite(energies[best]):
        return cands[best], float(energies[best])
    rng = np.random.default_rng(0) if rng is None else rng
    labels, _ = polish_labels(unary, graph, cands[best], rng)
    energy = graph.energy(labels, unary)
    if np.isfinite(energy):
        return labels, float(energy)
    repaired = greedy_repair(unary, graph, labels, rng)
    if (repaired >= 0).all():
        labels, _ = polish_labels(unary, graph, repaired, rng)
        return labels, float(graph.energy(labels, unary))
    if fallback is not None and np.isfinite(graph.energy(fallback, unary)):
        return np.asarray(fallback, dtype=np.int64), float(graph.energy(fallback, unary))
    raise InfeasibleError(
        f"{engine} found no labelling that honours every hard constraint, and no greedy "
        "re-assignment could place this point. The problem may be infeasible (e.g. more "
        "mutually cannot-linked groups than clusters) or merely hard for this engine; "
        "ExactMILP decides feasibility exactly.",
        point=int(np.flatnonzero(repaired < 0)[0]),
    )
