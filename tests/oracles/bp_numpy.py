"""NumPy oracles of belief propagation's compiled passes (:mod:`hmrf.inference.bp.kernels`).

The vectorised forms the package kept before its passes were compiled only: the message
algebra over (k, c) arrays, the sequential passes one colour class at a time (a class is
an independent set, so updating it at once *is* the node-by-node pass in that order) and
the flooding rounds over all messages at once. ``tests/test_bp_compiled.py`` runs the
kernels in the oracles' node order and compares them message by message.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.special import logsumexp

from hmrf.graph import POTTS_CL, POTTS_ML, TABLE, PairwiseGraph, independent_sets, segment_sum

_KINDS = (POTTS_ML, POTTS_CL, TABLE)

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

def colour_classes(graph):
    """First-fit colour classes of the graph (:func:`greedy_colouring`)."""
    return greedy_colouring(graph.n_nodes, graph.edges)


def greedy_colouring(n_nodes: int, edges: np.ndarray) -> list[np.ndarray]:
    """First-fit colouring in degree-priority order, as a list of colour classes.

    See :func:`colour_classes`. Each round builds the (members, colours) table of the
    colours already taken by a member's neighbours and gives every member the first
    free one (the table has one more column than the largest colour, so one is free).
    """
    colour = np.full(n_nodes, -1, dtype=np.int64)
    if n_nodes == 0:
        return []
    src = np.r_[edges[:, 0], edges[:, 1]]
    dst = np.r_[edges[:, 1], edges[:, 0]]
    local = np.full(n_nodes, -1, dtype=np.int64)
    n_colours = 0
    for members in independent_sets(n_nodes, edges):
        local[members] = np.arange(members.size)
        sel = (local[src] >= 0) & (colour[dst] >= 0)
        taken = np.zeros((members.size, n_colours + 1), dtype=bool)
        taken[local[src[sel]], colour[dst[sel]]] = True
        colour[members] = np.argmin(taken, axis=1)  # the first False
        n_colours = max(n_colours, int(colour[members].max()) + 1)
        local[members] = -1
    return [np.flatnonzero(colour == c) for c in range(n_colours)]


class MessageOrder:
    """Directed messages of a node order (graph-only, shared by every implementation of the passes).

    ``perm[new] = old`` lists the nodes in schedule order. Message ``e < m`` goes from the
    earlier endpoint of factor ``edge[e]`` to the later one (forward pass), ``m + e``
    the other way (backward pass); within each half messages are sorted by
    ``group`` of their sender (its colour class, or its position) and then by factor
    kind. ``rev`` pairs the two messages of a factor; ``comp`` is every node's component.
    """

    def __init__(self, graph: PairwiseGraph, perm: np.ndarray, group: np.ndarray) -> None:
        n, m = graph.n_nodes, graph.n_edges
        self.perm = perm
        new = np.empty(n, dtype=np.int64)
        new[perm] = np.arange(n)
        a, b = new[graph.edges[:, 0]], new[graph.edges[:, 1]]
        low, high = np.minimum(a, b), np.maximum(a, b)
        cls = graph.edge_classes()
        rank = np.select([cls.must, cls.cannot], [0, 1], 2)
        fo = np.lexsort((rank, group[low]))   # forward messages low -> high
        bo = np.lexsort((rank, group[high]))  # backward messages high -> low
        pos = np.empty(2 * m, dtype=np.int64)
        pos[fo], pos[m + bo] = np.arange(m), m + np.arange(m)
        self.src, self.dst = np.r_[low[fo], high[bo]], np.r_[high[fo], low[bo]]
        self.rev = np.r_[pos[m + fo], pos[bo]]
        self.edge = np.r_[fo, bo]
        self.kind = graph.kind[self.edge]
        self.n_comp, comp = graph.components()
        self.comp = comp[perm]

    def factor_costs(self, graph: PairwiseGraph, k: int, big: float) -> tuple[Any, Any, Any]:
        """Per message: the Potts weight (0 for tables), the table index (-1 for Potts) and
        the (n_tables, k, k) cost tables oriented ``[y_src, y_dst]``; ``inf`` -> ``big``."""
        m2 = self.src.size
        w = np.where(np.isinf(graph.weight), big, graph.weight)
        w = np.where(self.kind == TABLE, 0.0, w[self.edge])
        tab_of = np.full(m2, -1, dtype=np.int64)
        tab = np.flatnonzero(self.kind == TABLE)
        tcost = np.empty((0, k, k))
        if tab.size:  # graph tables are [y_a, y_b]; a message's cost is [y_src, y_dst]
            t_edge = np.full(graph.n_edges, -1, dtype=np.int64)
            is_tab = graph.edge_classes().table
            t_edge[is_tab] = np.arange(int(is_tab.sum()))
            tc = graph.table_costs()[t_edge[self.edge[tab]]]
            tc = np.where(np.isinf(tc), big, tc)
            a_is_src = graph.edges[self.edge[tab], 0] == self.perm[self.src[tab]]
            tcost = np.where(a_is_src[:, None, None], tc, tc.transpose(0, 2, 1))
            tab_of[tab] = np.arange(tab.size)
        return w, tab_of, tcost


class PassState:
    """Messages of a :class:`MessageOrder`, lazy-update flags and frozen (finished) nodes.

    ``dirty[0]`` / ``dirty[1]``: the node sends in the next forward / backward pass;
    ``stale_label``: the node is decoded again in the next forward pass.
    """

    def __init__(self, layout: MessageOrder, n: int, m: int, k: int, tol: float) -> None:
        self.layout = layout
        self.n, self.m, self.k, self.tol = n, m, k, float(tol)
        self.perm, self.comp, self.n_comp = layout.perm, layout.comp, layout.n_comp
        self.dirty = [np.ones(n, dtype=bool), np.ones(n, dtype=bool)]  # forward, backward
        self.frozen = np.zeros(n, dtype=bool)
        self.any_frozen = False
        self.stale_label = np.ones(n, dtype=bool)
        self.node_e = np.zeros(n)

    def freeze(self, nodes: NDArray[np.intp]) -> None:
        """Stop updating the messages sent by ``nodes`` (bool mask, permuted order)."""
        self.frozen |= nodes
        self.any_frozen = bool(self.frozen.any())
        self.dirty[0] &= ~nodes
        self.dirty[1] &= ~nodes

    def new_messages(self) -> NDArray[Any]:
        """All-zero messages, shape (2m + 1, k)."""
        return np.zeros((2 * self.m + 1, self.k))


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
    """Colour-class layout of :class:`SequentialMessages`."""

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
        Finite replacement of infinite costs (:func:`~hmrf.inference.bp.trws.big_cost`).
    tol : float
        Message changes up to ``tol`` do not wake the receiving node (lazy updates).
    """

    def __init__(self, graph: PairwiseGraph, k: int, big: float, tol: float = 0.0) -> None:
        lay = _Layout(graph)
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
    def _send(self, lo, hi, belief, msgs, out, flags, mode, damping):
        """Recompute the messages of ``out`` whose sender is flagged, from ``belief`` of the
        (n_c, k) members of the class; (k, len) arrays, reducing over labels along
        contiguous memory. Returns whether a message moved by more than ``tol``."""
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
        h = np.take(belief, lay.lpos[idx], axis=0)  # B_i of every sender
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
            new *= 1.0 - damping
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
                moved |= self._send(lo, hi, sb, msgs, out, self.dirty[0], mode, damping)
        return (self.node_e if mode == "max" else None), moved

    def backward(self, unary: NDArray[np.floating], msgs: NDArray[Any], mode: str = "max",
                 damping: float = 0.0) -> bool:
        """Backward pass; returns whether a message moved by more than ``tol``."""
        lay = self.layout
        moved = False
        for c in range(len(lay.out_bwd) - 1, -1, -1):
            lo, hi = self.bounds[c], self.bounds[c + 1]
            if not self.dirty[1][lo:hi].any():
                continue
            b = lay.in_all[c] @ msgs
            b += unary[lo:hi]
            moved |= self._send(lo, hi, b, msgs, lay.out_bwd[c], self.dirty[1], mode, damping)
        return moved

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
        Finite replacement of infinite costs (:func:`~hmrf.inference.bp.trws.big_cost`).
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
    """Flooding rounds on the vectorised :class:`FactorMessages`.

    Parameters
    ----------
    problem : BPProblem
        The reduced problem (:class:`hmrf.inference.bp.schedules.BPProblem`).
    rho : ndarray of shape (m,) or None
        Edge appearance probabilities (tree reweighting); ``None`` for ordinary BP.
    mode : {"max", "sum"}
    tol : float
        A round moved when a message changed by more than ``tol``.
    rng : numpy.random.Generator
        Order of the independent sets of :func:`consistent_decode`.
    """

    def __init__(self, problem: Any, rho: NDArray[Any] | None, mode: Literal["max", "sum"], tol: float,
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
