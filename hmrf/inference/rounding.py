"""Kleinberg–Tardos randomized rounding of a fractional labelling (Basu 2005, App. A.2).

Given the LP solution ``u`` (n, k) with rows on the simplex, one rounding is::

    repeat
        pick a label h uniformly at random and a threshold alpha uniform in (0, 1]
        every still-unassigned node i with u[i, h] >= alpha takes label h
    until every node has a label

(Kleinberg & Tardos 2002, §4, the uniform labeling problem). Two nodes are separated
with probability at most ``||u_i - u_j||_1``, the factor-2 guarantee for must-links;
two cannot-linked nodes with the same fractional vector always get the same label.
The phases are drawn in blocks, each node taking the label of the first phase that
catches it: exactly the sequential process.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..graph import best_per_component  # public here as well (the graph layer defines it)

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["kleinberg_tardos_rounding", "best_per_component"]


def kleinberg_tardos_rounding(u: NDArray[Any], rng: np.random.Generator, n_rounds: int = 1,
                              max_phases: int | None = None) -> tuple[np.ndarray, dict]:
    """``n_rounds`` independent Kleinberg–Tardos roundings of ``u``.

    Parameters
    ----------
    u : ndarray of shape (n, k)
        Fractional labelling, rows summing to 1 (entries below 1e-9 count as 0).
    max_phases : int, optional
        Cap on phases per rounding; default ``ceil(10 k ln(n + 2))`` (a node stays
        unassigned with probability at most ``(n + 2)^-10``); nodes still unassigned
        take ``argmax_h u[i, h]``.

    Returns
    -------
    labels : ndarray of shape (n_rounds, n)
    info : dict
        ``phases`` (mean per rounding) and ``fallback`` (nodes placed by the argmax).

    References
    ----------
    Kleinberg & Tardos (2002), "Approximation algorithms for classification problems
    with pairwise relationships: metric labeling and Markov random fields", JACM 49(5).
    Basu (2005), Appendix A.2.
    """
    u = np.asarray(u, dtype=np.float64)
    n, k = u.shape
    u = np.where(u < 1e-9, 0.0, u)
    cap = int(max_phases) if max_phases is not None else math.ceil(10 * k * math.log(n + 2))
    block = max(8, math.ceil(k * math.log(n + 2)))
    out = np.empty((int(n_rounds), n), dtype=np.int64)
    phases_drawn, fallback = 0, 0
    for r in range(int(n_rounds)):  # a loop over rounds, each vectorised over nodes
        labels = np.full(n, -1, dtype=np.int64)
        free = np.arange(n)
        used = 0
        while free.size and used < cap:
            p = min(block, cap - used)
            h = rng.integers(k, size=p)
            alpha = 1.0 - rng.random(p)  # uniform in (0, 1]
            hit = u[free][:, h] >= alpha  # (free, p): phase t catches node i
            caught = hit.any(axis=1)
            first = np.argmax(hit, axis=1)
            labels[free[caught]] = h[first[caught]]
            free = free[~caught]
            used += p
        if free.size:
            labels[free] = np.argmax(u[free], axis=1)
            fallback += free.size
        out[r] = labels
        phases_drawn += used
    return out, {"phases": phases_drawn / max(int(n_rounds), 1), "fallback": fallback}
