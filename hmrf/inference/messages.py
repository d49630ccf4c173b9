"""Message updates of belief propagation on pairwise factors, vectorised over edges.

Used by :class:`~hmrf.inference.BeliefPropagation`. With (possibly reweighted) beliefs
``B_i(y) = U_i(y) + sum_{g ∋ i} rho_g m_{g->i}(y)`` the message from pairwise factor
``f = (i, j)`` to ``j`` is, in the log domain (min-sum for max-product)::

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
import scipy.sparse as sp
from scipy.special import logsumexp

from ..graph import POTTS_CL, POTTS_ML, TABLE, PairwiseGraph

__all__ = ["FactorMessages", "big_cost", "potts_cannot_link_min", "logsumexp_excluding",
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
    spread += float(graph.weight[(graph.kind != TABLE) & np.isfinite(graph.weight)].sum())
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


class FactorMessages:
    """Directed-message layout of the pairwise factors, grouped by factor kind.

    Directed message ``d`` goes from its factor to node ``dst[d]``; the factor's other
    endpoint is ``src[d]`` and ``rev[d]`` is the message of the same factor to
    ``src[d]``. Must-link, cannot-link and table messages occupy contiguous slices so
    each kind is updated by one vectorised expression. Messages are (k, D) arrays:
    reductions over the k labels then run along contiguous memory, many times faster
    in NumPy than reducing short rows.

    Parameters
    ----------
    graph : PairwiseGraph
    k : int
    big : float
        Finite replacement of infinite costs (:func:`big_cost`).
    rho : ndarray of shape (m,), optional
        Edge appearance probabilities in (0, 1] (tree reweighting); default all 1.
    """

    def __init__(self, graph: PairwiseGraph, k: int, big: float, rho=None):
        e, kind = graph.edges, graph.kind
        rho = np.ones(graph.n_edges) if rho is None else np.asarray(rho, dtype=np.float64)
        w = np.where(np.isinf(graph.weight), big, graph.weight)
        tab_ids = np.flatnonzero(kind == TABLE)
        tab_costs = graph.table_costs() if tab_ids.size else np.empty((0, k, k))
        tab_costs = np.where(np.isinf(tab_costs), big, tab_costs)
        src, dst, rev, ids, slices = [], [], [], [], {}
        off = 0
        for name, code in (("ml", POTTS_ML), ("cl", POTTS_CL), ("tab", TABLE)):
            eid = np.flatnonzero(kind == code)
            c = eid.size
            src.append(np.r_[e[eid, 0], e[eid, 1]])
            dst.append(np.r_[e[eid, 1], e[eid, 0]])
            rev.append(off + np.r_[np.arange(c) + c, np.arange(c)])
            ids.append(np.r_[eid, eid])
            slices[name] = slice(off, off + 2 * c)
            off += 2 * c
        self.n, self.k, self.n_dir = graph.n_nodes, k, off
        self.src, self.dst, self.rev, self.edge = (
            np.concatenate(a).astype(np.intp) for a in (src, dst, rev, ids))
        self.kind = kind[self.edge]
        self.ml, self.cl, self.tab = slices["ml"], slices["cl"], slices["tab"]
        self.rho = rho[self.edge]
        self.reweighted = bool(np.any(self.rho != 1.0))
        self.w_true = np.where(self.kind == TABLE, 0.0, w[self.edge])  # decoding uses true costs
        w_msg = self.w_true / self.rho
        self.w_ml, self.w_cl = w_msg[self.ml], w_msg[self.cl]
        # table message d: cost[y_src, y_dst]; backward messages see the transposed table
        nt = tab_ids.size
        tc = np.concatenate([tab_costs, tab_costs.transpose(0, 2, 1)]) if nt else np.empty((0, k, k))
        self.tcost = tc  # (D_tab, k_src, k_dst), true costs, for decoding
        rho_t = self.rho[self.tab][:, None, None]
        self.tcost_t = np.ascontiguousarray((tc / rho_t).transpose(1, 2, 0)) if nt else np.empty((k, k, 0))
        # belief of node i = unary + sum_d rho_d m_d over messages d with dst[d] == i,
        # for all k labels at once: one sparse mat-vec with kron(I_k, A), A = (n, D)
        agg = sp.csr_matrix((self.rho, (self.dst, np.arange(off))), shape=(self.n, off))
        self.agg_k = sp.kron(sp.identity(k, format="csr"), agg, format="csr")

    def beliefs(self, unary_t, msgs):
        """(k, n) beliefs from (k, n) unary costs and (k, D) messages."""
        return unary_t + (self.agg_k @ msgs.ravel()).reshape(self.k, self.n)

    def update(self, beliefs, msgs, mode):
        """New normalised, undamped messages from the current messages and their beliefs."""
        h = np.take(beliefs, self.src, axis=1)
        for s in (self.ml, self.cl, self.tab):  # h -= msgs[:, rev]: the halves swap
            c = (s.stop - s.start) // 2
            h[:, s.start:s.start + c] -= msgs[:, s.start + c:s.stop]
            h[:, s.start + c:s.stop] -= msgs[:, s.start:s.start + c]
        new = np.empty_like(h)
        must_link_messages(h[:, self.ml], self.w_ml, mode, out=new[:, self.ml])
        cannot_link_messages(h[:, self.cl], self.w_cl, mode, out=new[:, self.cl])
        if self.tcost_t.shape[2]:
            table_messages(h[:, self.tab], self.tcost_t, mode, out=new[:, self.tab])
        return new

    def cost_rows(self, d, src_labels):
        """(len(d), k): the true cost ``cost_d(src_label, y)`` for all ``y``, messages ``d``."""
        eq = np.arange(self.k)[None, :] == src_labels[:, None]
        w = self.w_true[d][:, None]
        kind = self.kind[d]
        out = np.where((kind == POTTS_ML)[:, None], w * ~eq, w * eq)
        tab = kind == TABLE
        if tab.any():
            out[tab] = self.tcost[d[tab] - self.tab.start, src_labels[tab], :]
        return out
