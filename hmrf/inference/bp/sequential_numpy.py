"""The sequential schedule's passes in NumPy: Gauss–Seidel max-product (or sum-product) and TRW-S.

The reference implementation of the passes that
:func:`~hmrf.inference.bp.schedules.run_sequential` drives, and the one sum-product
uses; :class:`~hmrf.inference.bp.kernels_numba.CompiledSequentialMessages` is its
compiled twin. :class:`~hmrf.inference.bp.state.PassState` is what both share (messages,
TRW-S weights, lazy-update flags, finished components).

The nodes are ordered by colour class (each class an independent set, see
:func:`~hmrf.inference.bp.order.colour_classes`). One *iteration* is a forward pass over
the classes in order and a backward pass in reverse order. At a class, every member computes its belief
``B_i = U_i + sum_{f ∋ i} m_{f->i}`` from the current messages and sends the messages
of its factors towards later classes (forward pass) or earlier classes (backward pass)::

    m_{f->j}(y_j) = min_{y_i} [ gamma_i B_i(y_i) - m_{f->i}(y_i) + cost_f(y_i, y_j) ]

Members of one class share no factor, so updating a whole class at once *is* the
node-by-node sequential schedule in that order, vectorised within the class (the only
Python loop is over colour classes). Every message is updated once per iteration, as
in one flooding round, but evidence crosses the whole graph in one pass.

``gamma_i = 1`` is sequential ordinary max-product (or sum-product). ``gamma_i =
1 / max(n_i^-, n_i^+)``, with ``n_i^-`` / ``n_i^+`` the factors joining i to earlier /
later nodes, is sequential tree-reweighted message passing, TRW-S (Kolmogorov 2006,
§4-5, with monotonic chains): its lower bound never decreases. The bound of a
component is accumulated in the backward pass (Kolmogorov 2006, §5, as in the
reference implementation)::

    LB = sum_i min B_i + sum_{backward f->j} min_{y} [ gamma_i (B_i - min B_i) - m_{f->i} ](y)

(for a table factor ``min_{y_j} cost(y, y_j)`` is added inside the minimum).

Decoding (Kolmogorov 2006, §5.1). In each forward pass the members of a class take the
label minimising their unary cost, the *true* costs of the factors towards decoded
earlier classes and the messages from later classes (sent in the previous backward
pass). Its energy is summed on the way (every factor counted at its later endpoint).

Lazy updates. A message only changes if an input of its sender changed, so each node
carries a flag per pass, set when one of its incoming messages moves by more than
``tol`` and cleared when it sends. Only flagged senders are recomputed; once most of
the graph has settled an iteration costs a fraction of a full one (in the spirit of
residual belief propagation, Elidan, McGraw & Koller 2006).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import scipy.sparse as sp

from ...graph import POTTS_CL, POTTS_ML, TABLE, CacheKey, PairwiseGraph
from .messages import cannot_link_messages, must_link_messages, table_messages
from .order import MessageOrder, colour_classes
from .state import PassState

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["SequentialMessages", "ClassDecoding"]

#: the message layout of the colour order
LAYOUT = CacheKey("bp.sequential_layout")

_KINDS = (POTTS_ML, POTTS_CL, TABLE)


def _row_blocks(rows, cols, n_rows, n_cols, bounds):
    """0/1 CSR matrices ``A[r, c] = 1`` for the pairs (rows, cols), cut into row blocks.

    One block per colour class (rows ``bounds[b]:bounds[b + 1]``), built directly from
    the sorted pairs (no sparse slicing).
    """
    order = np.argsort(rows, kind="stable")
    rows, cols = rows[order], cols[order].astype(np.int32)
    indptr = np.searchsorted(rows, np.arange(n_rows + 1)).astype(np.int32)
    ones = np.ones(rows.size)
    blocks = []
    for b in range(len(bounds) - 1):
        lo, hi = bounds[b], bounds[b + 1]
        a, z = indptr[lo], indptr[hi]
        blocks.append(sp.csr_matrix((ones[a:z], cols[a:z], indptr[lo:hi + 1] - a), shape=(hi - lo, n_cols)))
    return blocks


class _Layout(MessageOrder):
    """Colour-class layout of :class:`SequentialMessages`, cached on the graph."""

    def __init__(self, graph: PairwiseGraph):
        classes = colour_classes(graph)
        n, m = graph.n_nodes, graph.n_edges
        perm = np.concatenate(classes) if classes else np.empty(0, dtype=np.int64)
        self.bounds = np.r_[0, np.cumsum([c.size for c in classes])].astype(np.int64)
        n_cls = len(classes)
        colour = np.repeat(np.arange(n_cls), np.diff(self.bounds))
        super().__init__(graph, perm, colour)
        self.lpos = self.src - self.bounds[colour[self.src]]
        # incoming messages of each class, per member: from earlier classes (forward
        # messages) and from later classes (backward messages), as (n_c, 2m+1) row blocks
        self.in_f, self.in_b, self.in_all = (
            _row_blocks(self.dst[sl], d, n, 2 * m + 1, self.bounds)
            for sl, d in ((slice(0, m), np.arange(m)), (slice(m, 2 * m), np.arange(m, 2 * m)),
                          (slice(0, 2 * m), np.arange(2 * m))))
        # forward messages into each class (for decoding), with their receiver's row
        self.dec = [(blk.indices.astype(np.int64), np.repeat(np.arange(blk.shape[0]), np.diff(blk.indptr)))
                    for blk in self.in_f]
        self.out_fwd = self._slices(colour[self.src[:m]], 0, n_cls)
        self.out_bwd = self._slices(colour[self.src[m:]], m, n_cls)
        self.ids = np.arange(2 * m)

    def _slices(self, col, base, n_cls):
        """Per class: the contiguous range of messages it sends, and its per-kind parts."""
        cuts = np.searchsorted(col, np.arange(n_cls + 1))
        out = []
        for c in range(n_cls):
            s0, s1 = base + cuts[c], base + cuts[c + 1]
            kind = self.kind[s0:s1]
            parts = []
            for code in _KINDS:
                sel = np.flatnonzero(kind == code)
                if sel.size:
                    parts.append((code, s0 + int(sel[0]), s0 + int(sel[-1]) + 1))
            out.append((int(s0), int(s1), parts))
        return out


class ClassDecoding(NamedTuple):
    """What decoding a colour class reads (:meth:`SequentialMessages.forward`): the
    true costs of its members' factors towards decoded earlier nodes.

    Potts factors as ``base_i + sum sign_w [y_i == x_j]`` (must-link ``w [y != x] = w -
    w [y == x]``, cannot-link ``w [y == x]``); table factors by their rows.
    """

    potts: np.ndarray       #: message ids of the Potts factors towards earlier nodes
    potts_row: np.ndarray   #: their member (local index) times k
    sign_w: np.ndarray      #: ``-w`` for must-links, ``+w`` for cannot-links
    base: np.ndarray        #: (n_c,) summed must-link weights of each member
    tables: np.ndarray      #: message ids of the table factors towards earlier nodes
    table_row: np.ndarray   #: their member (local index)


class SequentialMessages(PassState):
    """Messages, costs and passes of the sequential schedule (module docstring).

    Nodes are renumbered so that every colour class is a contiguous range
    (``perm[new] = old``). There is one message per factor and direction: the first
    ``m`` (towards the later endpoint) grouped by the sender's class and then by factor
    kind, so that what a class sends in a pass is one contiguous slice; then the ``m``
    backward messages, grouped likewise. ``msgs`` is a (2m + 1, k) array, one row per
    message (the last row is an unused zero row).

    Parameters
    ----------
    graph : PairwiseGraph
    k : int
    big : float
        Finite replacement of infinite costs (:func:`~hmrf.inference.bp.messages.big_cost`).
    tol : float
        Message changes up to ``tol`` do not wake the receiving node (lazy updates).
    """

    def __init__(self, graph: PairwiseGraph, k: int, big: float, tol: float = 0.0) -> None:
        lay = graph.cache.get(LAYOUT, lambda: _Layout(graph))
        super().__init__(lay, graph.n_nodes, graph.n_edges, k, tol)
        self.bounds, self.n_colours = lay.bounds, len(lay.bounds) - 1
        self.w, self.tab_of, self.tcost = lay.factor_costs(graph, k, big)
        # decoding: costs of the Potts factors towards decoded earlier nodes, per class
        # (must-link w [y != x] = w - w [y == x], cannot-link w [y == x])
        self.dec = []
        for (d, row), size in zip(lay.dec, np.diff(lay.bounds)):  # size: members of the class
            ml, potts = lay.kind[d] == POTTS_ML, lay.kind[d] != TABLE
            base = np.bincount(row[ml], weights=self.w[d][ml], minlength=size)
            sw = np.where(ml, -self.w[d], self.w[d])
            self.dec.append(ClassDecoding(d[potts], row[potts] * k, sw[potts], base, d[~potts], row[~potts]))

    # ------------------------------------------------------------------ passes
    def _send(self, lo, hi, belief, msgs, out, flags, mode, damping, mins, lb_msg):
        """Recompute the messages of ``out`` whose sender is flagged.

        ``belief`` holds ``gamma_i B_i`` for the (n_c, k) members of the class. The
        kernels work on (k, len) arrays, reducing over labels along contiguous memory.
        With ``mins`` (``gamma_i min B_i``, for the TRW-S bound) each recomputed message's
        bound term is written into ``lb_msg``. Returns whether a message moved by more
        than ``tol``.
        """
        lay = self.layout
        s0, s1, parts = out
        local = flags[lo:hi]
        n_wake = int(np.count_nonzero(local))
        if s1 == s0 or n_wake == 0:
            local[:] = False
            return False
        if n_wake == hi - lo:
            idx, ids = slice(s0, s1), lay.ids[s0:s1]
            cuts = [(code, p0 - s0, p1 - s0) for code, p0, p1 in parts]
        else:
            sel = np.flatnonzero(local[lay.lpos[s0:s1]])
            if sel.size == 0:
                local[:] = False
                return False
            idx = ids = s0 + sel
            edges = np.searchsorted(sel, [p - s0 for _, p0, p1 in parts for p in (p0, p1)])
            cuts = [(code, int(edges[2 * i]), int(edges[2 * i + 1])) for i, (code, _, _) in enumerate(parts)]
        local[:] = False
        h = np.take(belief, lay.lpos[idx], axis=0)  # gamma_i B_i of every sender
        h -= np.take(msgs, lay.rev[idx], axis=0)
        h = np.ascontiguousarray(h.T)
        new = np.empty_like(h)
        for code, a, b in cuts:
            if b == a:
                continue
            hp, out_p, d = h[:, a:b], new[:, a:b], ids[a:b]
            if code == POTTS_ML:
                must_link_messages(hp, self.w[d], mode, out=out_p)
            elif code == POTTS_CL:
                cannot_link_messages(hp, self.w[d], mode, out=out_p)
            else:
                cost_t = np.ascontiguousarray(self.tcost[self.tab_of[d]].transpose(1, 2, 0))
                table_messages(hp, cost_t, mode, out=out_p)
                if mins is not None:
                    hp = hp + cost_t.min(axis=1)
            if mins is not None:
                lb_msg[d] = hp.min(axis=0) - mins[lay.lpos[d]]
        if self.all_trw:  # TRW-S stops on its gap, not on message changes: just write
            msgs[idx] = new.T
            woken = lay.dst[idx]
            if self.any_frozen:
                woken = woken[~self.frozen[woken]]
            self.dirty[0][woken] = True
            if s0 >= self.m:
                self.stale_label[woken] = True
            return True
        old = msgs[idx]
        new -= old.T  # the change of every message, (k, len)
        moved = np.abs(new).max(axis=0) > self.tol
        any_moved = bool(moved.any())
        if any_moved:
            woken = lay.dst[ids[moved]]
            if self.any_frozen:
                woken = woken[~self.frozen[woken]]
            self.dirty[0][woken] = True
            self.dirty[1][woken] = True
            if s0 >= self.m:  # backward messages are what the decoding reads
                self.stale_label[woken] = True
        if damping:
            new *= np.where(self.undamped[ids], 1.0, 1.0 - damping)
        if isinstance(idx, slice):
            msgs[idx] += new.T
        else:
            old += new.T
            msgs[idx] = old
        return any_moved

    def forward(self, unary: NDArray[np.floating], msgs: NDArray[Any], labels: NDArray[np.intp],
                mode: str = "max", damping: float = 0.0, send: bool = True) -> tuple[Any, Any]:
        """Forward pass; in max mode decodes into ``labels`` (permuted order).

        ``unary`` is the (n, k) BIG-capped cost in permuted order. Returns the (n,) cost
        of every node's decoded label (its unary cost plus its factors towards earlier
        nodes; ``None`` in sum mode) and whether a message moved by more than ``tol``.
        ``send=False`` only decodes. A class is decoded again only if a label before it
        or a message into it from a later class changed (its labels cannot change
        otherwise).
        """
        lay = self.layout
        moved = False
        for c, out in enumerate(lay.out_fwd):
            lo, hi = self.bounds[c], self.bounds[c + 1]
            redo = mode == "max" and self.stale_label[lo:hi].any()
            wake = send and self.dirty[0][lo:hi].any()
            if not (redo or wake):
                continue
            sb = lay.in_b[c] @ msgs
            if redo:
                cond = self._decided_costs(c, labels, unary[lo:hi])
                x = np.argmin(cond + sb, axis=1)
                changed = x != labels[lo:hi]
                if changed.any():  # later neighbours of a relabelled node must look again
                    s0, s1, _ = out
                    self.stale_label[lay.dst[s0:s1][changed[lay.lpos[s0:s1]]]] = True
                labels[lo:hi] = x
                self.node_e[lo:hi] = np.take_along_axis(cond, x[:, None], axis=1)[:, 0]
                self.stale_label[lo:hi] = False
            if wake:
                sb += unary[lo:hi]
                sb += lay.in_f[c] @ msgs
                if self.reweighted:
                    sb *= self.gamma_node[lo:hi]
                moved |= self._send(lo, hi, sb, msgs, out, self.dirty[0], mode, damping, None, None)
        return (self.node_e if mode == "max" else None), moved

    def backward(self, unary: NDArray[np.floating], msgs: NDArray[Any], mode: str = "max",
                 damping: float = 0.0, bound: bool = False,
                 beliefs: NDArray[Any] | None = None) -> tuple[Any, Any]:
        """Backward pass; returns whether a message moved by more than ``tol`` and, with
        ``bound``, the per-component TRW-S bound (valid for the components whose nodes
        use TRW-S weights). With ``beliefs`` (an (n, k) array) the final beliefs are stored.
        """
        lay = self.layout
        moved, lb = False, (np.zeros(self.n_comp) if bound else None)
        lb_msg = np.zeros(2 * self.m) if bound else None
        for c in range(len(lay.out_bwd) - 1, -1, -1):
            lo, hi = self.bounds[c], self.bounds[c + 1]
            if bound:
                self.dirty[1][lo:hi] |= self.trw_node[lo:hi] & ~self.frozen[lo:hi]  # the bound needs them all
            elif beliefs is None and not self.dirty[1][lo:hi].any():
                continue
            b = lay.in_all[c] @ msgs
            b += unary[lo:hi]
            if beliefs is not None:
                beliefs[lo:hi] = b
            mins = None
            if bound:
                mins = b.min(axis=1)
                lb += np.bincount(self.comp[lo:hi], weights=mins, minlength=self.n_comp)
            if self.reweighted:
                b *= self.gamma_node[lo:hi]
                if bound:
                    mins = mins * self.gamma_node[lo:hi, 0]
            moved |= self._send(lo, hi, b, msgs, lay.out_bwd[c], self.dirty[1], mode, damping, mins, lb_msg)
        if bound:
            lb += np.bincount(self.comp[lay.src[self.m:]], weights=lb_msg[self.m:], minlength=self.n_comp)
        return moved, lb

    def _decided_costs(self, c, labels, unary_c):
        """(n_c, k): unary costs plus the true costs of the factors to decoded earlier nodes."""
        lay, k = self.layout, self.k
        size = unary_c.shape[0]
        d, rowk, sw, base, dt, rowt = self.dec[c]  # a ClassDecoding
        out = unary_c.copy()
        if d.size:
            out += np.bincount(rowk + labels[lay.src[d]], weights=sw, minlength=size * k).reshape(size, k)
            out += base[:, None]
        if dt.size:
            x = labels[lay.src[dt]]
            rows = self.tcost[self.tab_of[dt], x, :]
            out += np.bincount(np.repeat(rowt * k, k) + np.tile(np.arange(k), dt.size),
                               weights=rows.ravel(), minlength=size * k).reshape(size, k)
        return out
