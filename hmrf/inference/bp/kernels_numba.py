"""The passes of belief propagation compiled with numba (optional, ``pip install hmrf[fast]``).

Max-product only. :class:`CompiledSequentialMessages` is the compiled twin of
:class:`~hmrf.inference.bp.sequential_numpy.SequentialMessages` (the forward and backward
passes of :func:`~hmrf.inference.bp.schedules.run_sequential`) and
:class:`CompiledFloodingRounds` that of
:class:`~hmrf.inference.bp.flooding_numpy.FloodingRounds` (the rounds of
:func:`~hmrf.inference.bp.schedules.run_flooding`). They compute the same messages,
lazy-update flags, decoding and TRW-S bound as the NumPy passes (the mathematics is in
those modules and in :mod:`~hmrf.inference.bp.messages`); in the colour-class order,
the same values up to the order of floating-point sums (``tests/test_bp_compiled.py``).

Written by hand because this is the engine's hot path: the NumPy passes spend most of
an iteration on gathers and temporaries over the (2m, k) messages and on ~20 array
calls per colour class; compiled, one iteration touches every message once, node by
node in any node order (:mod:`~hmrf.inference.bp.order`). The kernels take their
arrays packed in three named tuples: :class:`MessageFactors` (what each directed message
is), :class:`NodeMessages` (which messages each node receives and sends) and
:class:`~hmrf.inference.bp.state.PassFlags` (the lazy-update state). Each kernel unpacks
the fields it uses into local names before its loops: read through the tuple inside the
loops, the passes ran three times slower.

Numba is imported only when this module is (never by ``import hmrf``); the kernels are
cached on disk after their first compilation (``cache=True``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numba
import numpy as np

from ... import graph
from ..._numba_cache import refresh
from ...graph import POTTS_CL, POTTS_ML
from . import messages_numba
from .messages_numba import cannot_link_message, must_link_message
from .order import node_order
from .state import PassFlags, PassState

# the kernels compile in the message functions and the graph's Potts codes
refresh(__file__, messages_numba.__file__, graph.__file__)

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

    from ...graph import PairwiseGraph

__all__ = ["CompiledSequentialMessages", "CompiledFloodingRounds", "MessageFactors", "NodeMessages"]

#: ``mins`` argument of :func:`_send` when no TRW-S bound term is wanted
NO_BOUND = np.inf


class MessageFactors(NamedTuple):
    """Per directed message ``e`` (layout of :class:`~hmrf.inference.bp.order.MessageOrder`):
    sender, receiver, the reverse message, factor kind, Potts weight (0 for a table),
    table index (-1 for Potts); and the (n_tables, k, k) tables ``[y_src, y_dst]``."""

    src: np.ndarray
    dst: np.ndarray
    rev: np.ndarray
    kind: np.ndarray
    w: np.ndarray
    tab_of: np.ndarray
    tcost: np.ndarray


class NodeMessages(NamedTuple):
    """Per node, CSR over the messages it receives (``in_*``) and sends (``out_*``):
    ``ids[ptr[i]:mid[i]]`` forward messages, ``ids[mid[i]:ptr[i + 1]]`` backward ones."""

    in_ptr: np.ndarray
    in_mid: np.ndarray
    in_ids: np.ndarray
    out_ptr: np.ndarray
    out_mid: np.ndarray
    out_ids: np.ndarray


@numba.njit(cache=True, nogil=True, inline="always")
def _send(i, first, last, bel, read, msgs, into, fac, out_ids, flags, all_trw, damping, tol, backward, mins,
          lb, comp, h, new):
    """Recompute the messages ``out_ids[first:last]`` of node ``i`` from its (reweighted)
    belief ``bel``: wake their receivers when they move by more than ``tol``, damp, keep
    the receivers' sums ``into`` up to date, and add their TRW-S bound terms to
    ``lb[comp[i]]`` unless ``mins`` is ``NO_BOUND``. The factors' messages to the sender
    are read from ``read``: ``msgs`` itself in the sequential passes, last round's copy in
    flooding. ``h`` and ``new`` are (k,) scratch arrays.

    The normalised min-sum updates of :mod:`~hmrf.inference.bp.messages`, with ``h`` the
    sender's belief minus the factor's message to the sender: must-link
    ``min(h - min h, w)``, cannot-link ``min(w, m2 - m1)`` at a unique argmin of ``h``
    (0 elsewhere), table ``min_x h(x) + cost[x, y]`` (O(k²)). The bound term is
    ``min_x [h(x) + min_y cost(x, y)] - mins`` (Kolmogorov 2006, §5). The Potts
    messages are :mod:`~hmrf.inference.bp.messages_numba`'s, inlined.
    """
    k = bel.shape[0]
    dst, rev, kind, w, tab_of, tcost = fac.dst, fac.rev, fac.kind, fac.w, fac.tab_of, fac.tcost
    undamped, dirty_f, dirty_b, stale, frozen = flags
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
            must_link_message(h, m1, we, new)
        elif ke == POTTS_CL:
            cannot_link_message(h, m1, we, new)
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
def _forward(u, msgs, into_f, into_b, labels, node_e, fac, nodes, gamma, flags, all_trw, damping, tol, send):
    """Forward pass (:meth:`SequentialMessages.forward`): decode, then send towards later nodes."""
    n, k = u.shape
    bel, cond, h, new, lb = np.empty(k), np.empty(k), np.empty(k), np.empty(k), np.zeros(1)
    src, dst, kind, w, tab_of, tcost = fac.src, fac.dst, fac.kind, fac.w, fac.tab_of, fac.tcost
    in_ptr, in_mid, in_ids, out_ptr, out_mid, out_ids = nodes
    stale, dirty_f = flags.stale, flags.dirty_f
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
            moved |= _send(i, out_ptr[i], out_mid[i], bel, msgs, msgs, into_f, fac, out_ids,
                           flags, all_trw, damping, tol, backward=False, mins=NO_BOUND, lb=lb, comp=src,
                           h=h, new=new)
            dirty_f[i] = False
    return moved


@numba.njit(cache=True, nogil=True)
def _backward(u, msgs, into_f, into_b, fac, nodes, gamma, flags, trw_node, all_trw, damping, tol, bound, comp,
              lb):
    """Backward pass (:meth:`SequentialMessages.backward`), adding the TRW-S bound of the
    components still running TRW-S to ``lb`` (other entries of ``lb`` are left at 0)."""
    n, k = u.shape
    bel, h, new = np.empty(k), np.empty(k), np.empty(k)
    out_ptr, out_mid, out_ids = nodes.out_ptr, nodes.out_mid, nodes.out_ids
    frozen, dirty_b = flags.frozen, flags.dirty_b
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
        mins = gamma[i] * mins if with_bound else NO_BOUND
        for y in range(k):
            bel[y] *= gamma[i]
        moved |= _send(i, out_mid[i], out_ptr[i + 1], bel, msgs, msgs, into_b, fac, out_ids,
                       flags, all_trw, damping, tol, backward=True, mins=mins, lb=lb, comp=comp, h=h, new=new)
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


@numba.njit(cache=True, nogil=True)
def _flooding_round(u, msgs, old, into_f, into_b, beliefs, labels, fac, nodes, flags, wake, damping, tol):
    """One flooding round; writes the per-node argmin into ``labels`` and returns
    (whether a message moved by more than ``tol``, the energy of ``labels`` on ``u``).

    Lazy, as the sequential passes: only the nodes flagged in ``wake`` send (one of
    their incoming messages moved by more than ``tol`` in the previous round, or, with
    damping, one of their own messages is still moving); the flags of the next round
    are set in ``flags.dirty_f``. Every message is computed from last round's beliefs and
    messages (copied into ``beliefs`` and ``old`` first).
    """
    n, k = u.shape
    src, dst, kind, w, tab_of, tcost = fac.src, fac.dst, fac.kind, fac.w, fac.tab_of, fac.tcost
    in_ptr, _, in_ids, out_ptr, out_mid, out_ids = nodes
    m = src.shape[0] // 2
    bel, h, new, lb = np.empty(k), np.empty(k), np.empty(k), np.zeros(1)
    for i in range(n):  # what the senders read: last round's beliefs and incoming messages
        if wake[i]:
            for y in range(k):
                beliefs[i, y] = u[i, y] + into_f[i, y] + into_b[i, y]
            for p in range(in_ptr[i], in_ptr[i + 1]):
                e = in_ids[p]
                for y in range(k):
                    old[e, y] = msgs[e, y]
    moved = False
    for i in range(n):
        if not wake[i]:
            continue
        for y in range(k):
            bel[y] = beliefs[i, y]
        sent = _send(i, out_ptr[i], out_mid[i], bel, old, msgs, into_f, fac, out_ids, flags,
                     False, damping, tol, backward=False, mins=NO_BOUND, lb=lb, comp=src, h=h, new=new)
        sent |= _send(i, out_mid[i], out_ptr[i + 1], bel, old, msgs, into_b, fac, out_ids,
                      flags, False, damping, tol, backward=True, mins=NO_BOUND, lb=lb, comp=src, h=h,
                      new=new)
        if sent and damping > 0.0:  # a damped message has not reached its update yet
            flags.dirty_f[i] = True
        moved |= sent
    energy = 0.0
    for i in range(n):
        best, xb = np.inf, 0
        for y in range(k):
            v = u[i, y] + into_f[i, y] + into_b[i, y]
            if v < best:
                best, xb = v, y
        labels[i] = xb
        energy += u[i, xb]
    for e in range(m):  # every factor once, through its forward message
        a, b = labels[src[e]], labels[dst[e]]
        if kind[e] == POTTS_ML:
            energy += w[e] if a != b else 0.0
        elif kind[e] == POTTS_CL:
            energy += w[e] if a == b else 0.0
        else:
            energy += tcost[tab_of[e], a, b]
    return moved, energy


class CompiledSequentialMessages(PassState):
    """The passes of :class:`~hmrf.inference.bp.sequential_numpy.SequentialMessages`, compiled
    (max mode).

    Nodes are visited one at a time in a node order (``order``, see
    :mod:`~hmrf.inference.bp.order`): ``"bfs"`` (breadth-first, long monotonic chains) or
    ``"colour"``, the colour-class order of the NumPy passes (within a class the members
    share no factor, so visiting them one by one computes what the vectorised class step
    computes). Each node's sums of incoming forward and backward messages are kept up to
    date as messages change (``into_f``, ``into_b``), so a belief costs O(k) instead of a
    pass over the node's messages; :meth:`new_messages` and :meth:`zero_messages` reset
    them, and messages must not be changed otherwise (or :meth:`sync` must follow).
    """

    def __init__(self, graph: PairwiseGraph, k: int, big: Any, tol: float = 0.0, order: str = "bfs") -> None:
        lay = node_order(graph, order)
        super().__init__(lay, graph.n_nodes, graph.n_edges, k, tol)
        self.n_colours = None
        w, tab_of, tcost = lay.factor_costs(graph, k, big)
        tcost = np.ascontiguousarray(tcost) if tcost.size else np.zeros((1, k, k))
        self.w, self.tab_of, self.tcost = w, tab_of, tcost
        self.factors = MessageFactors(lay.src, lay.dst, lay.rev, lay.kind, w, tab_of, tcost)
        self.nodes = NodeMessages(*lay.node_in, *lay.node_out)
        self.gamma_flat = np.ones(self.n)
        self.into_f, self.into_b = np.zeros((self.n, k)), np.zeros((self.n, k))

    def set_gamma(self, trws_nodes: NDArray[Any]) -> None:
        super().set_gamma(trws_nodes)
        self.gamma_flat = np.ascontiguousarray(self.gamma_node[:, 0])

    def new_messages(self) -> NDArray[np.float64]:
        self.into_f[:] = 0.0
        self.into_b[:] = 0.0
        return super().new_messages()

    def zero_messages(self, msgs: NDArray[Any], which: NDArray[Any]) -> None:
        super().zero_messages(msgs, which)
        if which.all():
            self.into_f.fill(0.0)
            self.into_b.fill(0.0)
        else:
            self.sync(msgs)

    def restore_messages(self, msgs: NDArray[Any], which: NDArray[Any], saved: Any) -> None:
        super().restore_messages(msgs, which, saved)
        self.sync(msgs)

    def sync(self, msgs: NDArray[Any]) -> None:
        """Recompute the sums of incoming messages after ``msgs`` was changed directly."""
        _sums(msgs, self.layout.dst, self.m, self.into_f, self.into_b)

    def forward(self, unary: NDArray[np.floating], msgs: NDArray[Any], labels: NDArray[np.intp],
                mode: str = "max", damping: float = 0.0, send: bool = True) -> tuple[Any, bool]:
        if mode != "max":
            raise ValueError("the compiled passes are max-product only")
        moved = _forward(unary, msgs, self.into_f, self.into_b, labels, self.node_e, self.factors, self.nodes,
                         self.gamma_flat, self.flags(), self.all_trw, float(damping), self.tol, send)
        return self.node_e, bool(moved)

    def backward(self, unary: NDArray[np.floating], msgs: NDArray[Any], mode: str = "max",
                 damping: float = 0.0, bound: bool = False,
                 beliefs: NDArray[Any] | None = None) -> tuple[bool, Any]:
        if mode != "max" or beliefs is not None:
            raise ValueError("the compiled passes are max-product only")
        lb = np.zeros(self.n_comp)
        moved = _backward(unary, msgs, self.into_f, self.into_b, self.factors, self.nodes, self.gamma_flat,
                          self.flags(), self.trw_node, self.all_trw, float(damping), self.tol, bool(bound),
                          self.layout.comp, lb)
        return bool(moved), (lb if bound else None)


class CompiledFloodingRounds:
    """Flooding max-product rounds, compiled, with ordinary updates: the interface of
    :class:`~hmrf.inference.bp.flooding_numpy.FloodingRounds` in max mode without
    reweighting, on the message layout of :class:`CompiledSequentialMessages`.

    The anytime labelling's energy is computed on ``problem.u0`` (the true energy minus a
    constant: the same order). The final decoding is the sequential forward pass without
    sending: node by node in ``order``, true costs towards decoded nodes and messages
    from the others (libDAI's consistent decoding).
    """

    def __init__(self, problem: Any, tol: float, order: str = "bfs") -> None:
        n, k = problem.u0.shape
        self.sm = sm = CompiledSequentialMessages(problem.graph, k, problem.big, tol, order)
        self.reweighted, self.tol = False, float(tol)
        self.u_p = np.ascontiguousarray(problem.u0[sm.perm])
        self.msgs = sm.new_messages()
        self.old, self.beliefs = np.empty_like(self.msgs), np.empty((n, k))
        self.labels = np.zeros(n, dtype=np.int64)
        self.wake, woke, scratch = np.ones(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        # the next round's senders go to dirty_f; the backward flags and the decoding's are unused
        self.flags = PassFlags(np.zeros(2 * problem.graph.n_edges, dtype=bool), woke, scratch, scratch,
                               np.zeros(n, dtype=bool))

    def _unpermute(self, y):
        out = np.empty(y.size, dtype=np.int64)
        out[self.sm.perm] = y
        return out

    def step(self, damping: float) -> tuple[bool, Any, Any]:
        """One round (see :meth:`~hmrf.inference.bp.flooding_numpy.FloodingRounds.step`)."""
        sm = self.sm
        moved, energy = _flooding_round(self.u_p, self.msgs, self.old, sm.into_f, sm.into_b, self.beliefs,
                                        self.labels, sm.factors, sm.nodes, self.flags, self.wake,
                                        float(damping), self.tol)
        woke = self.flags.dirty_f
        self.flags = self.flags._replace(dirty_f=self.wake)
        self.wake = woke
        self.flags.dirty_f[:] = False
        return bool(moved), self._unpermute(self.labels), energy

    def decode(self) -> NDArray[np.intp]:
        """Consistent decoding of the current messages in the node order."""
        sm = self.sm
        decoded = np.zeros(self.labels.size, dtype=np.int64)
        sm.stale_label[:] = True
        sm.forward(self.u_p, self.msgs, decoded, send=False)
        return self._unpermute(decoded)
