"""Shared last steps of the global engines: optional ICM polish and the hard-constraint check.

The global engines (belief propagation, LP rounding, exact MILP) produce a labelling
of the reduced E-step problem by a method that does not look at one node at a time.
Two finishing steps are shared:

* ``polish="icm"`` runs :class:`~hmrf.inference.ICM` from that labelling. ICM never
  increases the energy, so the polished result is never worse; it repairs the
  single-node mistakes that rounding and max-product decoding can leave (typically a
  violated cannot-link between two nodes whose fractional / belief vectors agree).
* :func:`finish` keeps the cheapest of the candidate labellings and checks hard
  factors: a labelling with infinite energy (a violated hard cannot-link or a
  forbidden label) is never returned silently. If no candidate is finite, ICM repairs
  the best one (it minimises hard violations first, whatever ``polish`` says), then a
  greedy re-assignment of the components still broken; if that fails too the engine
  raises :class:`~hmrf.InfeasibleError` naming a point.
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

    If every candidate has infinite energy, ICM is run from the best one (ICM first
    minimises the number of violated hard factors, then the energy); if a hard factor
    is still broken, the components that break one are re-assigned greedily
    (:func:`~hmrf.inference.feasibility.greedy_repair`) and ICM runs again; if that
    fails too, ``fallback`` (the caller's ``init``) is returned if it is feasible, and
    otherwise the problem is reported as infeasible.

    Parameters
    ----------
    unary : ndarray (n, k)
    graph : PairwiseGraph
    candidates : list of ndarray (n,)
        Labellings of the reduced problem (``None`` entries are skipped).
    engine : str
        Engine name for the error message.
    rng : numpy Generator, optional
        For the ICM repair (its update order).
    fallback : ndarray (n,), optional
        Used only when no candidate (nor its repair) honours the hard factors.
    energies : list, optional
        Known energies of the candidates (``None`` where unknown); a candidate equal to
        an earlier one is not evaluated again either.

    Returns
    -------
    labels, energy

    Raises
    ------
    InfeasibleError
        When every candidate and every repair breaks a hard factor. ``point`` is a
        node the greedy repair could not place.
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
