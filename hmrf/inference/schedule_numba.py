"""The sequential schedule's passes compiled with numba (optional, ``pip install hmrf[fast]``).

Used by :class:`~hmrf.inference.BeliefPropagation` with ``kernel="numba"`` (and by
``"auto"`` when numba is installed) in max mode. :class:`CompiledSequentialMessages` has
the interface of :class:`~hmrf.inference.schedule.SequentialMessages`, with the two
passes as loops over the nodes in a node order (:mod:`hmrf.inference.order`): the same
messages, lazy-update flags, decoding and TRW-S bound (see
:mod:`hmrf.inference.schedule` for the mathematics); in the colour-class order, the
same values up to the order of floating-point sums. Written by hand because this is
the engine's hot path: the NumPy passes spend most of an iteration on gathers and
temporaries over the (2m, k) messages and on ~20 array calls per colour class, which
keeps BP an order of magnitude behind ICM on a 5,000-node E-step; compiled, one
iteration touches every message once.

Numba is imported only when this module is (never by ``import hmrf``); the kernels are
cached on disk after their first compilation (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np

from ..graph import POTTS_CL, POTTS_ML
from .order import MessageOrder, bfs_order, colour_classes
from .schedule import PassState

__all__ = ["CompiledSequentialMessages", "NodeOrder"]


@numba.njit(cache=True, nogil=True, inline="always")
def _send(i, first, last, out_ids, bel, h, new, msgs, read, into, dst, rev, kind, w, tab_of, tcost, undamped,
          dirty_f, dirty_b, stale, frozen, all_trw, backward, damping, tol, mins, lb, comp):
    """Recompute the messages ``out_ids[first:last]`` of node ``i`` (``_send`` of the NumPy
    passes): wake their receivers when they move by more than ``tol``, damp, keep the
    receivers' sums ``into`` up to date, and add their bound terms to ``lb`` when
    ``mins`` is finite. The factors' messages to the sender are read from ``read``:
    ``msgs`` itself in the sequential passes, last round's copy in flooding.

    The normalised min-sum updates of :mod:`hmrf.inference.messages`, with ``h`` the
    sender's (reweighted) belief minus the factor's message to the sender: must-link
    ``min(h - min h, w)``, cannot-link ``min(w, m2 - m1)`` at a unique argmin of ``h``
    (0 elsewhere), table ``min_x h(x) + cost[x, y]`` (O(k²)). The bound term is
    ``min_x [h(x) + min_y cost(x, y)]`` (Kolmogorov 2006, §5). Written out here rather
    than in a helper: a call inside this loop, even one never taken, made numba's
    compiled loop twice as slow.
    """
    k = bel.shape[0]
    moved = False
    for p in range(first, last):
        e = out_ids[p]
        r = rev[e]
        m1 = np.inf
        for y in range(k):
            h[y] = bel[y] - read[r, y]
            m1 = min(m1, h[y])
        ke, we, term = kind[e], w[e], m1
        if ke == POTTS_ML:
            for y in range(k):
                new[y] = min(h[y] - m1, we)
        elif ke == POTTS_CL:
            ties, m2, a1 = 0, np.inf, 0
            for y in range(k):
                new[y] = 0.0
                if h[y] == m1:
                    ties += 1
                    a1 = y
                elif h[y] < m2:
                    m2 = h[y]
            if ties == 1:
                new[a1] = min(m2 - m1, we)
        else:
            t, term, low = tab_of[e], np.inf, np.inf
            for y in range(k):
                best = np.inf
                for x in range(k):
                    v = h[x] + tcost[t, x, y]
                    best = v if v < best else best
                    term = v if v < term else term
                new[y] = best
                low = best if best < low else low
            for y in range(k):
                new[y] -= low
        if np.isfinite(mins):
            lb[comp[i]] += term - mins
        j = dst[e]
        scale = 1.0 if (all_trw or damping == 0.0 or undamped[e]) else 1.0 - damping
        change = 0.0
        for y in range(k):
            d = new[y] - msgs[e, y]
            change = max(change, abs(d))
            msgs[e, y] += scale * d
            into[j, y] += scale * d
        if all_trw:  # TRW-S stops on its gap, not on message changes: every receiver wakes
            moved = True
            if not frozen[j]:
                dirty_f[j] = True
                if backward:
                    stale[j] = True
        elif change > tol:
            moved = True
            if not frozen[j]:
                dirty_f[j] = True
                dirty_b[j] = True
                if backward:  # backward messages are what the decoding reads
                    stale[j] = True
    return moved


@numba.njit(cache=True, nogil=True)
def _forward(u, msgs, into_f, into_b, labels, node_e, in_ptr, in_mid, in_ids, out_ptr, out_mid, out_ids,
             src, dst, rev, kind, w, tab_of, tcost, gamma, undamped, dirty_f, dirty_b, stale, frozen, all_trw,
             damping, tol, send):
    """Forward pass (:meth:`SequentialMessages.forward`): decode, then send towards later nodes."""
    n, k = u.shape
    bel, cond, h, new, lb = np.empty(k), np.empty(k), np.empty(k), np.empty(k), np.zeros(1)
    moved = False
    for i in range(n):
        redo = stale[i]
        wake = send and dirty_f[i]
        if not (redo or wake):
            continue
        if redo:  # unary + true costs towards decoded earlier nodes + messages from later ones
            for y in range(k):
                cond[y] = u[i, y]
            for p in range(in_ptr[i], in_mid[i]):
                e = in_ids[p]
                x = labels[src[e]]
                if kind[e] == POTTS_ML:
                    for y in range(k):
                        if y != x:
                            cond[y] += w[e]
                elif kind[e] == POTTS_CL:
                    cond[x] += w[e]
                else:
                    for y in range(k):
                        cond[y] += tcost[tab_of[e], x, y]
            best, xb = np.inf, 0
            for y in range(k):
                if cond[y] + into_b[i, y] < best:
                    best, xb = cond[y] + into_b[i, y], y
            if xb != labels[i]:  # later neighbours of a relabelled node must look again
                for p in range(out_ptr[i], out_mid[i]):
                    stale[dst[out_ids[p]]] = True
            labels[i] = xb
            node_e[i] = cond[xb]
            stale[i] = False
        if wake:
            for y in range(k):
                bel[y] = gamma[i] * (u[i, y] + into_f[i, y] + into_b[i, y])
            moved |= _send(i, out_ptr[i], out_mid[i], out_ids, bel, h, new, msgs, msgs, into_f, dst, rev,
                           kind, w, tab_of, tcost, undamped, dirty_f, dirty_b, stale, frozen, all_trw, False,
                           damping, tol, np.inf, lb, src)  # (no bound in this pass: lb, src unused)
            dirty_f[i] = False
    return moved


@numba.njit(cache=True, nogil=True)
def _backward(u, msgs, into_f, into_b, out_ptr, out_mid, out_ids, dst, rev, kind, w, tab_of, tcost, gamma,
              undamped, dirty_f, dirty_b, stale, frozen, trw_node, all_trw, damping, tol, bound, comp, lb):
    """Backward pass (:meth:`SequentialMessages.backward`), adding the TRW-S bound of the
    components still running TRW-S to ``lb`` (other entries of ``lb`` are left at 0)."""
    n, k = u.shape
    bel, h, new = np.empty(k), np.empty(k), np.empty(k)
    moved = False
    for i in range(n - 1, -1, -1):
        with_bound = bound and trw_node[i] and not frozen[i]
        if with_bound:  # the bound needs every message of the component
            dirty_b[i] = True
        elif not dirty_b[i]:
            continue
        mins = np.inf
        for y in range(k):
            bel[y] = u[i, y] + into_f[i, y] + into_b[i, y]
            mins = min(mins, bel[y])
        if with_bound:
            lb[comp[i]] += mins
        mins = gamma[i] * mins if with_bound else np.inf
        for y in range(k):
            bel[y] *= gamma[i]
        moved |= _send(i, out_mid[i], out_ptr[i + 1], out_ids, bel, h, new, msgs, msgs, into_b, dst,
                       rev, kind, w, tab_of, tcost, undamped, dirty_f, dirty_b, stale, frozen, all_trw,
                       True, damping, tol, mins, lb, comp)
        dirty_b[i] = False
    return moved


@numba.njit(cache=True, nogil=True)
def _sums(msgs, dst, m, into_f, into_b):
    """``into_f[j]`` / ``into_b[j]``: the sums of the forward / backward messages into j."""
    into_f[:] = 0.0
    into_b[:] = 0.0
    for e in range(dst.shape[0]):
        into = into_f if e < m else into_b
        for y in range(msgs.shape[1]):
            into[dst[e], y] += msgs[e, y]


def _node_csr(owner, n_nodes, m):
    """Messages grouped by node: (ptr, mid, ids), forward ids (< m) before backward ones."""
    ids = np.lexsort((np.arange(owner.size) >= m, owner))
    ptr = np.searchsorted(owner[ids], np.arange(n_nodes + 1))
    mid = ptr[:-1] + np.bincount(owner[:m], minlength=n_nodes)
    return ptr.astype(np.int64), mid.astype(np.int64), ids.astype(np.int64)


def _concat(classes):
    return np.concatenate(classes) if classes else np.empty(0, dtype=np.int64)


class NodeOrder(MessageOrder):
    """:class:`~hmrf.inference.order.MessageOrder` of one node order with, per node,
    the messages it receives and sends (``node_in``, ``node_out``: CSR, forward first)."""

    def __init__(self, graph, perm):
        n, m = graph.n_nodes, graph.n_edges
        super().__init__(graph, perm, np.arange(n))
        self.node_in = _node_csr(self.dst, n, m)
        self.node_out = _node_csr(self.src, n, m)


class CompiledSequentialMessages(PassState):
    """The passes of :class:`~hmrf.inference.schedule.SequentialMessages`, compiled (max mode).

    Nodes are visited one at a time in a node order (``order``, see
    :mod:`hmrf.inference.order`): ``"bfs"`` (breadth-first, long monotonic chains) or
    ``"colour"``, the colour-class order of the NumPy passes (within a class the members
    share no factor, so visiting them one by one computes what the vectorised class step
    computes: the same results up to the order of floating-point sums). Each
    node's sums of incoming forward and backward messages are kept up to date as
    messages change (``into_f``, ``into_b``), so a belief costs O(k) instead of a pass
    over the node's messages; :meth:`new_messages` and :meth:`zero_messages` reset them,
    and messages must not be changed otherwise.
    """

    def __init__(self, graph, k, big, tol=0.0, order="bfs"):
        orders = graph.cache.bp_node_orders
        if order not in orders:
            perm = bfs_order(graph) if order == "bfs" else _concat(colour_classes(graph))
            orders[order] = NodeOrder(graph, perm)
        lay = orders[order]
        super().__init__(lay, graph.n_nodes, graph.n_edges, k, tol)
        self.n_colours = None
        self.w, self.tab_of, tcost = lay.factor_costs(graph, k, big)
        self.tcost = np.ascontiguousarray(tcost) if tcost.size else np.zeros((1, k, k))
        self.gamma_flat = np.ones(self.n)
        self.into_f, self.into_b = np.zeros((self.n, k)), np.zeros((self.n, k))

    def set_gamma(self, trws_nodes):
        super().set_gamma(trws_nodes)
        self.gamma_flat = np.ascontiguousarray(self.gamma_node[:, 0])

    def new_messages(self):
        self.into_f[:] = 0.0
        self.into_b[:] = 0.0
        return super().new_messages()

    def zero_messages(self, msgs, which):
        super().zero_messages(msgs, which)
        if which.all():
            self.into_f.fill(0.0)
            self.into_b.fill(0.0)
        else:
            self.sync(msgs)

    def sync(self, msgs):
        """Recompute the sums of incoming messages after ``msgs`` was changed directly."""
        _sums(msgs, self.layout.dst, self.m, self.into_f, self.into_b)

    def _flags(self):
        return self.undamped, self.dirty[0], self.dirty[1], self.stale_label, self.frozen

    def forward(self, unary, msgs, labels, mode="max", damping=0.0, send=True):
        if mode != "max":
            raise ValueError("the compiled passes are max-product only")
        lay = self.layout
        moved = _forward(unary, msgs, self.into_f, self.into_b, labels, self.node_e, *lay.node_in,
                         *lay.node_out, lay.src, lay.dst, lay.rev, lay.kind, self.w, self.tab_of, self.tcost,
                         self.gamma_flat, *self._flags(), self.all_trw, float(damping), self.tol, send)
        return self.node_e, bool(moved)

    def backward(self, unary, msgs, mode="max", damping=0.0, bound=False, beliefs=None):
        if mode != "max" or beliefs is not None:
            raise ValueError("the compiled passes are max-product only")
        lay = self.layout
        lb = np.zeros(self.n_comp)
        moved = _backward(unary, msgs, self.into_f, self.into_b, *lay.node_out, lay.dst, lay.rev, lay.kind,
                          self.w, self.tab_of, self.tcost, self.gamma_flat, *self._flags(), self.trw_node,
                          self.all_trw, float(damping), self.tol, bool(bound), lay.comp, lb)
        return bool(moved), (lb if bound else None)
