"""The flooding schedule's rounds in NumPy: every message updated at once, vectorised over edges.

The reference (and sum-product, and tree-reweighted) implementation of the rounds that
:func:`~hmrf.inference.bp.schedules.run_flooding` drives (Basu 2005, App. A.1: all
messages of a round computed from the previous round's beliefs). One round is
:meth:`FactorMessages.update`, the message algebra of :mod:`~hmrf.inference.bp.messages`
over all directed messages at once, then damping in the log domain
(``m <- (1 - lambda) m_new + lambda m_old``); with ``rho < 1`` the updates are the
tree-reweighted ones of Wainwright, Jaakkola & Willsky (2005). The anytime labelling is
the per-node argmin of the beliefs; the final one the consistent decoding of
:func:`consistent_decode`. The compiled twin is
:class:`~hmrf.inference.bp.kernels_numba.CompiledFloodingRounds`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ...graph import POTTS_CL, POTTS_ML, TABLE, PairwiseGraph, independent_sets, segment_sum
from .messages import cannot_link_messages, marginals_from_beliefs, must_link_messages, table_messages

if TYPE_CHECKING:
    from typing import Any, Literal

    from numpy.typing import NDArray

    from .schedules import BPProblem

__all__ = ["FactorMessages", "FloodingRounds", "consistent_decode", "uniform_edge_appearance"]


def uniform_edge_appearance(graph: PairwiseGraph) -> np.ndarray:
    """Edge appearance probabilities ``rho_e = (n_c - 1) / m_c`` of edge e's component c.

    The uniform choice of tree-reweighted BP (Wainwright, Jaakkola & Willsky 2005): a
    spanning tree of component c has ``n_c - 1`` of its ``m_c`` edges. On a forest every
    ``rho_e = 1`` (ordinary BP).
    """
    n_comp, comp = graph.components()
    ce = comp[graph.edges[:, 0]]
    sizes = np.bincount(comp, minlength=n_comp)
    m_c = np.bincount(ce, minlength=n_comp)
    rho = (sizes[ce] - 1) / np.maximum(m_c[ce], 1)
    return np.clip(rho, 1e-3, 1.0)


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

    def __init__(self, graph: PairwiseGraph, k: int, big: float, rho: NDArray[Any] | None = None) -> None:
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

    def beliefs(self, unary_t: Any, msgs: NDArray[Any]) -> NDArray[np.float64]:
        """(k, n) beliefs from (k, n) unary costs and (k, D) messages."""
        return unary_t + (self.agg_k @ msgs.ravel()).reshape(self.k, self.n)

    def update(self, beliefs: NDArray[Any], msgs: NDArray[Any], mode: Any) -> NDArray[np.float64]:
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

    def cost_rows(self, d: Any, src_labels: Any) -> NDArray[np.float64]:
        """(len(d), k): the true cost ``cost_d(src_label, y)`` for all ``y``, messages ``d``."""
        eq = np.arange(self.k)[None, :] == src_labels[:, None]
        w = self.w_true[d][:, None]
        kind = self.kind[d]
        out = np.where((kind == POTTS_ML)[:, None], w * ~eq, w * eq)
        tab = kind == TABLE
        if tab.any():
            out[tab] = self.tcost[d[tab] - self.tab.start, src_labels[tab], :]
        return out


class FloodingRounds:
    """Flooding rounds on the vectorised :class:`FactorMessages` (what
    :func:`~hmrf.inference.bp.schedules.run_flooding` calls).

    Parameters
    ----------
    problem : BPProblem
        The reduced problem (:class:`~hmrf.inference.bp.schedules.BPProblem`).
    rho : ndarray of shape (m,) or None
        Edge appearance probabilities (tree reweighting); ``None`` for ordinary BP.
    mode : {"max", "sum"}
    tol : float
        A round moved when a message changed by more than ``tol``.
    rng : numpy.random.Generator
        Order of the independent sets of :func:`consistent_decode`.
    """

    def __init__(self, problem: BPProblem, rho: NDArray[Any] | None, mode: Literal["max", "sum"], tol: float,
                 rng: np.random.Generator) -> None:
        self.problem, self.mode, self.tol, self.rng = problem, mode, float(tol), rng
        self.fm = FactorMessages(problem.graph, problem.unary.shape[1], problem.big, rho)
        self.reweighted = self.fm.reweighted
        self.u0_t = np.ascontiguousarray(problem.u0.T)
        self.msgs = np.zeros((problem.unary.shape[1], self.fm.n_dir))
        self.beliefs = self.fm.beliefs(self.u0_t, self.msgs)

    def step(self, damping: float) -> tuple[Any, None, None] | tuple[Any, Any, Any]:
        """One round with ``damping``; returns (whether a message moved by more than
        ``tol`` before damping, the per-node argmin labelling, its energy), the last two
        ``None`` in sum mode."""
        new = self.fm.update(self.beliefs, self.msgs, self.mode)
        diff = new - self.msgs
        delta = max(float(diff.max()), -float(diff.min())) if diff.size else 0.0
        if damping == 0.0:
            self.msgs = new
        else:  # (1 - damping) * new + damping * msgs
            diff *= 1.0 - damping
            self.msgs += diff
        self.beliefs = self.fm.beliefs(self.u0_t, self.msgs)
        moved = delta > self.tol
        if self.mode != "max":
            return moved, None, None
        labels = np.argmin(self.beliefs, axis=0)
        return moved, labels, self.problem.graph.energy(labels, self.problem.unary)

    def marginals(self) -> NDArray[np.float64]:
        """(n, k) sum-product marginals of the current beliefs."""
        return marginals_from_beliefs(self.beliefs.T)

    def decode(self) -> NDArray[np.intp]:
        """The consistent decoding of the current messages (:func:`consistent_decode`)."""
        return consistent_decode(self.problem.u0, self.fm, self.msgs, self.problem.graph, self.rng)


def consistent_decode(u0: Any, fm: FactorMessages, msgs: NDArray[Any], graph: PairwiseGraph,
                      rng: np.random.Generator) -> np.ndarray:
    """Decode one independent set at a time (libDAI's consistent decoding).

    Each node minimises its unary cost plus the messages from still-free neighbours plus
    the true factor costs towards already-decoded neighbours.
    """
    n, k = u0.shape
    sets = independent_sets(n, graph.edges, rng)
    set_of = np.empty(n, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    for s, members in enumerate(sets):  # a loop over colour classes
        set_of[members] = s
        pos[members] = np.arange(members.size)
    order = np.argsort(set_of[fm.dst], kind="stable")
    bounds = np.searchsorted(set_of[fm.dst][order], np.arange(len(sets) + 1))
    labels = np.full(n, -1, dtype=np.int64)
    for s, members in enumerate(sets):
        d = order[bounds[s]:bounds[s + 1]]
        contrib = (msgs[:, d] * fm.rho[d]).T
        src_lab = labels[fm.src[d]]
        done = src_lab >= 0
        if done.any():
            contrib[done] = fm.cost_rows(d[done], src_lab[done])
        total = u0[members] + segment_sum(pos[fm.dst[d]], contrib, members.size)
        labels[members] = np.argmin(total, axis=1)
    return labels
