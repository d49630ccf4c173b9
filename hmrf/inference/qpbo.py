"""Minimising a quadratic pseudo-boolean function by s–t minimum cuts (graph cut / QPBO), compiled.

Every move of :class:`~hmrf.inference.AlphaExpansion` is a binary problem
``E(x) = const + sum_p Δ_p x_p + sum_(p,q) θ_pq(x_p, x_q)``, ``x = 0`` the current
labelling. Each pairwise table ``(A, B, C, D) = (θ(0,0), θ(0,1), θ(1,0), θ(1,1))`` is
split exactly into

.. math::

    \\theta_{pq}(x_p, x_q) = A + \\tfrac{D - A + C - B}{2} x_p + \\tfrac{D - A + B - C}{2} x_q
        + \\tfrac{\\lambda}{2} [x_p \\ne x_q], \\qquad \\lambda = B + C - A - D,

so that ``E(x) - E(0) = sum_p u_p x_p + sum_e (λ_e / 2) [x_p != x_q]`` (the *split
form*); a term is *submodular* (``A + D <= B + C``, Kolmogorov & Zabih 2004) exactly
when its ``λ/2`` is non-negative, and if every term is, one cut of a graph with ``n``
nodes gives a global minimum. Otherwise this is the QPBO graph of Kolmogorov & Rother
(2007): nodes ``p`` and ``p̄`` (``1 - x_p``) per variable; a submodular term joins
``p–q`` and ``p̄–q̄``, a non-submodular one (``-λ/2 [x_p != 1 - x_q]``) ``p–q̄`` and
``p̄–q``. After the cut ``x_p = 0`` when ``p`` is on the source side and ``p̄`` on the
sink side, ``x_p = 1`` in the mirror case, and ``p`` is *unlabelled* otherwise. By
autarky (Kolmogorov & Rother 2007; Boros & Hammer 2002) fusing this partial labelling
with ``x = 0`` never raises the energy; the unlabelled variables are then decided by
the cut of the submodular upper bound tight at ``x = 0`` that drops every
non-submodular term (truncation, Rother, Kumar, Kolmogorov & Blake 2005).

References
----------
Kolmogorov & Zabih (2004), "What energy functions can be minimized via graph cuts?",
TPAMI 26(2). Kolmogorov & Rother (2007), "Minimizing nonsubmodular functions with graph
cuts — a review", TPAMI 29(7). Boros & Hammer (2002), "Pseudo-Boolean optimization",
Discrete Applied Mathematics 123. Rother, Kumar, Kolmogorov & Blake (2005), "Digital
tapestry", CVPR.
"""

from __future__ import annotations

import numba
import numpy as np

from .._numba_cache import refresh
from . import maxflow_numba
from .maxflow_numba import min_cut

# the QPBO kernel compiles in the max-flow of maxflow_numba
refresh(__file__, maxflow_numba.__file__)

__all__ = ["solve_split"]


@numba.njit(cache=True, nogil=True)
def solve_split(u, p, q, half, truncate):
    """Minimise ``sum_p u_p x_p + sum_e half_e [x_p != x_q]`` (module docstring).

    Parameters
    ----------
    u : ndarray (n,)
    p, q : ndarray of int (m,)
        Endpoints of the terms (``p != q``).
    half : ndarray (m,)
        ``λ/2`` of every term; negative exactly where it is not submodular.
    truncate : bool
        Cut the truncated problem (every non-submodular term dropped) alone.

    Returns
    -------
    x : ndarray of bool (n,)
        A global minimum when every term is submodular; otherwise a labelling with
        ``E(x) <= E(0)``: QPBO's partial labelling (unlabelled variables decided by the
        truncated cut with the labelled ones fixed), or the truncated cut alone.
    labelled : ndarray of bool (n,)
        Variables whose value some global minimum shares: all when every term is
        submodular, QPBO's labelled set otherwise, none under ``truncate``.
    """
    n, m = u.shape[0], p.shape[0]
    truncated = np.maximum(half, 0.0)
    if not np.any(half < 0.0):
        return min_cut(u, p, q, half), np.ones(n, dtype=np.bool_)
    if truncate:
        return min_cut(u, p, q, truncated), np.zeros(n, dtype=np.bool_)
    # the QPBO graph: node p + n is p̄, its terminal capacity the mirror of p's
    gp, gq = np.empty(2 * m, dtype=np.int64), np.empty(2 * m, dtype=np.int64)
    for e in range(m):
        a, b = p[e], q[e]
        flip = n if half[e] < 0.0 else 0
        gp[e], gq[e] = a, b + flip
        gp[m + e], gq[m + e] = a + n, b + n - flip
    side = min_cut(np.concatenate((u, -u)), gp, gq, np.concatenate((np.abs(half), np.abs(half))))
    labelled = side[:n] != side[n:]
    x = side[:n] & labelled
    rest = np.flatnonzero(~labelled)
    if rest.size == 0:
        return x, labelled
    # the truncated cut of the unlabelled variables, a term with one labelled end x_j
    # becoming the unary term λ/2 [x_i != x_j] (±λ/2 on E(x_i = 1) - E(x_i = 0))
    pos = np.full(n, -1, dtype=np.int64)
    pos[rest] = np.arange(rest.size)
    d = u[rest]
    rp, rq, rh = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.empty(m)
    nb = 0
    for e in range(m):
        a, b = p[e], q[e]
        if pos[a] >= 0 and pos[b] >= 0:
            rp[nb], rq[nb], rh[nb] = pos[a], pos[b], truncated[e]
            nb += 1
        elif pos[a] >= 0:
            d[pos[a]] += -half[e] if x[b] else half[e]
        elif pos[b] >= 0:
            d[pos[b]] += -half[e] if x[a] else half[e]
    x[rest] = min_cut(d, rp[:nb], rq[:nb], rh[:nb])
    return x, labelled
