"""The message algebra of belief propagation on pairwise factors, vectorised over messages.

The NumPy reference of every update: :mod:`~hmrf.inference.bp.sequential_numpy` and
:mod:`~hmrf.inference.bp.flooding_numpy` call these functions, and
:mod:`~hmrf.inference.bp.kernels_numba` writes the same formulas out node by node
(``tests/test_bp_compiled.py`` checks that both compute the same messages).

With (possibly reweighted) beliefs ``B_i(y) = U_i(y) + sum_{g ∋ i} rho_g m_{g->i}(y)``
the message from pairwise factor ``f = (i, j)`` to ``j`` is, in the log domain (min-sum for max-product)::

    m_{f->j}(y_j) = min_{y_i} [ B_i(y_i) - m_{f->i}(y_i) + cost_f(y_i, y_j) / rho_f ]

``rho_f = 1`` is ordinary loopy max-product (Basu 2005, App. A.1: the unary factors
``D_i`` are leaves, so only pairwise factors carry messages); ``rho_f < 1`` is the
tree-reweighted update of Wainwright, Jaakkola & Willsky (2005). For Potts factors the
minimum costs O(k) per message (Felzenszwalb & Huttenlocher 2006):

* must-link, ``cost = w [y_i != y_j]``: ``m(y) = min(h(y), min_y' h(y') + w)``;
* cannot-link, ``cost = w [y_i == y_j]``: ``m(y) = min(h(y) + w, min_{y' != y} h(y'))``
  (the minimum over the other labels is the smallest or the second-smallest entry),
  which after normalisation is ``min(w, m2 - m1)`` at the argmin of ``h`` and 0 elsewhere.

General ``(k, k)`` tables use the O(k²) minimum. Sum-product replaces ``min`` by
``-logsumexp(-·)``; its Potts messages are O(k) too and avoid cancellation. Messages
are normalised to ``min_y m(y) = 0``.

Infinite costs (hard factors, forbidden labels) would produce ``inf - inf``; they are
replaced by a finite ``BIG`` (:func:`big_cost`) that exceeds twice every finite energy
difference plus 800 (so that ``exp(-BIG)`` underflows to 0 in sum-product): every
labelling breaking a hard factor then costs more than every labelling that does not,
so the minimisers are unchanged whenever a feasible labelling exists, and nothing
becomes NaN.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ...graph import PairwiseGraph

__all__ = ["big_cost", "potts_cannot_link_min", "logsumexp_excluding",
           "must_link_messages", "cannot_link_messages", "table_messages", "marginals_from_beliefs"]


def _finite_spread(x: np.ndarray, axis) -> float:
    """Sum over the leading axis of ``max - min`` of the finite entries (0 if none)."""
    hi, lo = np.max(x, axis=axis), np.min(x, axis=axis)
    if np.isfinite(hi).all() and np.isfinite(lo).all():  # the common case: no inf
        return float(np.sum(hi - lo))
    fin = np.isfinite(x)
    hi = np.max(np.where(fin, x, -np.inf), axis=axis)
    lo = np.min(np.where(fin, x, np.inf), axis=axis)
    ok = np.isfinite(hi)
    return float(np.sum(hi[ok] - lo[ok]))


def big_cost(unary: np.ndarray, graph: PairwiseGraph) -> float:
    """A finite stand-in for ``inf`` that dominates every finite energy difference."""
    spread = _finite_spread(unary, axis=1)
    spread += float(graph.weight[~(graph.edge_classes().table | graph.hard)].sum())
    if not graph.is_potts:
        spread += _finite_spread(graph.table_costs(), axis=(1, 2))
    return 2.0 * spread + 800.0


def potts_cannot_link_min(h: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Normalised min-sum cannot-link messages for (k, c) arrays ``h`` and weights (c,).

    ``m(y) = min(h(y) + w, min_{y' != y} h(y'))`` is ``m1 = min h`` for every label
    but the argmin, and ``min(m1 + w, m2)`` there (``m2`` the second smallest entry,
    equal to ``m1`` under a tie). After subtracting ``m1``: ``min(w, m2 - m1)`` at the
    argmin, 0 elsewhere. O(k) per message.
    """
    if h.shape[0] == 1:
        return np.zeros_like(h)
    m1 = h.min(axis=0)
    is1 = h == m1
    m2 = (h + is1 * 1e300).min(axis=0)  # smallest entry that is not a minimum
    val = np.where(is1.sum(axis=0) > 1, 0.0, np.minimum(w, m2 - m1))
    return is1 * val


def logsumexp_excluding(v: np.ndarray) -> np.ndarray:
    """``out[y, :] = log sum_{y' != y} exp(v[y', :])`` for (k, c) arrays, without cancellation.

    ``S - e_y`` is accurate unless ``e_y`` is the dominant term; there the sum of the
    other terms is formed directly.
    """
    k, c = v.shape
    if k == 1:
        return np.full_like(v, -np.inf)
    cols = np.arange(c)
    amax = np.argmax(v, axis=0)
    vmax = v[amax, cols]
    e = np.exp(v - vmax)
    excl = e.sum(axis=0) - e
    e[amax, cols] = 0.0
    excl[amax, cols] = e.sum(axis=0)
    with np.errstate(divide="ignore"):
        return np.log(excl) + vmax


def marginals_from_beliefs(b: np.ndarray) -> np.ndarray:
    """Row-normalised ``p(y_i = h) ∝ exp(-b_ih)`` of (n, k) sum-product beliefs (log domain).

    The row minimum is subtracted first, so nothing overflows.
    """
    marg = np.exp(-(b - b.min(axis=1, keepdims=True)))
    marg /= marg.sum(axis=1, keepdims=True)
    return marg


def must_link_messages(h: np.ndarray, w: np.ndarray, mode: str, out: np.ndarray) -> np.ndarray:
    """Normalised must-link messages into ``out`` for (k, c) arrays ``h``, weights (c,).

    Max mode: ``m(y) = min(h(y) - min h, w)``. Sum mode:
    ``m(y) = -log(exp(-h(y)) (1 - e^{-w}) + e^{-w} sum_y' exp(-h(y')))``, both O(k).
    """
    if mode == "max":
        return np.minimum(h - h.min(axis=0), w, out=out)
    with np.errstate(divide="ignore"):
        lse = logsumexp(-h, axis=0)
        out[:] = -np.logaddexp(lse - w, np.log1p(-np.exp(-w)) - h)
    out -= out.min(axis=0)
    return out


def cannot_link_messages(h: np.ndarray, w: np.ndarray, mode: str, out: np.ndarray) -> np.ndarray:
    """Normalised cannot-link messages into ``out`` (:func:`potts_cannot_link_min` in max mode)."""
    if mode == "max":
        out[:] = potts_cannot_link_min(h, w)
        return out
    with np.errstate(divide="ignore"):
        out[:] = -np.logaddexp(logsumexp_excluding(-h), -w - h)
    out -= out.min(axis=0)
    return out


def table_messages(h: np.ndarray, cost_t: np.ndarray, mode: str, out: np.ndarray) -> np.ndarray:
    """Normalised table messages ``min_x h(x) + cost[x, y]`` into ``out``; ``cost_t`` is (k, k, c)."""
    if mode == "max":
        t = (h[:, None, :] + cost_t).min(axis=0)
    else:
        t = -logsumexp(-(h[:, None, :] + cost_t), axis=0)
    np.subtract(t, t.min(axis=0), out=out)
    return out
