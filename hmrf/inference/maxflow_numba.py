"""Boykov–Kolmogorov max-flow compiled with numba, on a graph whose arcs are laid out once.

The α-expansion moves of :class:`~hmrf.inference.expansion.ExpansionMoves` solve one
minimum s–t cut per move, every one on the same graph (the E-step's edges) with other
capacities. This solver keeps the arcs of that graph in one layout built once
(:func:`arc_layout`: the arcs of node ``i`` are ``ptr[i]:ptr[i + 1]``, arc ``a`` goes
to ``head[a]``, its reverse is ``sister[a]``) and its working arrays in a
:class:`MaxflowWorkspace`; a move only writes capacities, so nothing is built or
allocated per move. What a move leaves out of its cut (nodes already labelled ``α``,
nodes that may not take it) keeps terminal and arc capacities zero: the search
trees only cross arcs with residual capacity, so such a node is never reached and
stays on the source side (``x = 0``), as if absent.

The algorithm is Boykov & Kolmogorov (2004), "An experimental comparison of
min-cut/max-flow algorithms for energy minimization in vision", IEEE TPAMI 26(9),
§3: a search tree grows from each terminal over non-saturated arcs (growth stage); an
arc joining the trees gives an augmenting path, pushed by its bottleneck
(augmentation stage), which orphans the nodes whose tree arc it saturates; each orphan
looks for a new parent in its tree whose root is a terminal, preferring the shortest
distance to it (adoption stage; the distances are cached with time stamps), or
becomes free and makes its tree neighbours active again. Nodes are taken from a FIFO
queue of active nodes, and the node that found the last augmenting path is grown
again first (as in the authors' reference implementation, maxflow-v3).
:func:`maxflow_reuse` resumes from the residual network and the trees of a previous cut
after some capacities changed (dynamic graph cuts, Kohli & Torr 2007): the α-expansion
moves of one label in successive sweeps differ where the labels changed.

It is the compiled twin of the PyMaxflow cut (:func:`~hmrf.inference.qpbo.solve_split`,
the same BK algorithm behind a C++ binding, used by the NumPy kernel and for QPBO
moves); ``tests/test_maxflow.py`` checks that both find cuts of the same value and
that the value is the minimum, by enumeration on small graphs. Written by hand
because the moves need what a binding cannot give: the graph built once and its
capacities written in place by the compiled move kernel, without a Python call per
move to build a graph of half a million arcs (docs/inference.md has the measurements).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

__all__ = ["arc_layout", "MaxflowWorkspace", "maxflow", "maxflow_reuse", "sink_side"]

#: parent of a free node (in neither tree)
NO_PARENT = -1
#: parent of a node joined to its terminal directly
TERMINAL = -2
#: parent of an orphan (a node whose tree arc was saturated, waiting for adoption)
ORPHAN = -3
#: a distance larger than any path
_INF_DIST = 1 << 60


@numba.njit(cache=True, nogil=True)
def arc_layout(n, p, q, ptr, edge):
    """The arcs of the graph with edges ``(p[e], q[e])``: ``(head, sister, arc_pq, arc_qp)``.

    ``ptr, edge``: the incidence of every node (:func:`~hmrf.inference.graphcut_numba.incidence`):
    arc ``a`` in ``ptr[i]:ptr[i + 1]`` leaves node ``i`` along edge ``edge[a]``.
    ``head[a]`` is the node it enters, ``sister[a]`` the reverse arc, and
    ``arc_pq[e]``, ``arc_qp[e]`` the arcs ``p -> q`` and ``q -> p`` of edge ``e``.
    """
    m = p.shape[0]
    head = np.empty(2 * m, dtype=np.int64)
    sister = np.empty(2 * m, dtype=np.int64)
    arc_pq = np.empty(m, dtype=np.int64)
    arc_qp = np.empty(m, dtype=np.int64)
    for i in range(n):
        for a in range(ptr[i], ptr[i + 1]):
            e = edge[a]
            if p[e] == i:
                head[a] = q[e]
                arc_pq[e] = a
            else:
                head[a] = p[e]
                arc_qp[e] = a
    for e in range(m):
        sister[arc_pq[e]] = arc_qp[e]
        sister[arc_qp[e]] = arc_pq[e]
    return head, sister, arc_pq, arc_qp


@dataclass
class MaxflowWorkspace:
    """The working arrays of :func:`maxflow` for a graph of ``n`` nodes and ``n_arcs``
    arcs, allocated once and reused by every cut.

    ``rcap`` (residual capacity of every arc) and ``trcap`` (terminal capacity of
    every node: positive from the source, negative to the sink) are the input, written
    by the caller before each cut and consumed by it.
    """

    n: int
    n_arcs: int
    rcap: np.ndarray = field(init=False)
    trcap: np.ndarray = field(init=False)
    parent: np.ndarray = field(init=False)
    next_active: np.ndarray = field(init=False)
    stamp: np.ndarray = field(init=False)
    dist: np.ndarray = field(init=False)
    in_sink_tree: np.ndarray = field(init=False)
    orphans: np.ndarray = field(init=False)

    def __post_init__(self):
        n = max(int(self.n), 1)
        self.rcap = np.zeros(self.n_arcs)
        self.trcap = np.zeros(n)
        self.parent = np.empty(n, dtype=np.int64)
        self.next_active = np.empty(n, dtype=np.int64)
        self.stamp = np.empty(n, dtype=np.int64)
        self.dist = np.empty(n, dtype=np.int64)
        self.in_sink_tree = np.empty(n, dtype=np.bool_)
        self.orphans = np.empty(n, dtype=np.int64)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays in :func:`maxflow`'s argument order after ``ptr, head, sister``."""
        return (self.rcap, self.trcap, self.parent, self.next_active, self.stamp, self.dist,
                self.in_sink_tree, self.orphans)


@numba.njit(cache=True, nogil=True, inline="always")
def _push_active(i, next_active, queue):
    """Append node ``i`` to the FIFO of active nodes unless it is in it (``queue``:
    first and last node, -1 when empty; ``next_active[i] == i`` marks the last)."""
    if next_active[i] == NO_PARENT:
        if queue[1] >= 0:
            next_active[queue[1]] = i
        else:
            queue[0] = i
        queue[1] = i
        next_active[i] = i


@numba.njit(cache=True, nogil=True)
def maxflow(ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans):
    """Maximum s–t flow of the graph ``ptr, head, sister`` (:func:`arc_layout`) with
    residual capacities ``rcap`` and terminal capacities ``trcap`` (module docstring).

    ``rcap`` and ``trcap`` become the residual network; the other arrays (of a
    :class:`MaxflowWorkspace`) are scratch, overwritten. Returns the flow value. The
    minimum cut: a node is on the sink side when it ends in the sink's tree
    (:func:`sink_side`); a node in neither tree is on the source side.
    """
    n = trcap.shape[0]
    queue = np.full(2, NO_PARENT, dtype=np.int64)
    for i in range(n):
        next_active[i] = NO_PARENT
        stamp[i] = 0
        c = trcap[i]
        if c != 0.0:
            in_sink_tree[i] = c < 0.0
            parent[i] = TERMINAL
            dist[i] = 1
            _push_active(i, next_active, queue)
        else:
            parent[i] = NO_PARENT
            in_sink_tree[i] = False
    return _search(ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans,
                   queue, 0, 0, 0)


@numba.njit(cache=True, nogil=True)
def maxflow_reuse(ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans,
                  marked, n_marked, is_marked):
    """:func:`maxflow` that keeps the search trees of the last cut on the same arrays
    (Kohli & Torr 2007, §3.3; the ``reuse_trees`` option of Boykov and Kolmogorov's
    maxflow-v3).

    ``rcap``, ``trcap``, ``parent``, ``in_sink_tree``, ``stamp`` and ``dist`` are what
    the last :func:`maxflow` or :func:`maxflow_reuse` on these arrays left (the time
    stamps keep a parent's stamp at least its child's, and its distance below the
    child's at equal stamps, so that the growth's re-parenting never closes a cycle),
    after which the
    capacities of the nodes ``marked[:n_marked]`` (``is_marked`` true for them, false
    for every other node) and of the arcs between them were changed, into the residual
    network of a valid flow (``trcap`` and ``rcap`` of any sign on a node, non-negative
    on an arc). Every marked node becomes a child of its terminal when it keeps
    terminal capacity (its children become orphans if it changes tree), or an orphan;
    the orphans are adopted, and the search resumes from the marked nodes (made active):
    the trees elsewhere are kept, so the work is about that of the changes. The cut is
    read as after :func:`maxflow` (:func:`sink_side`). ``is_marked`` is cleared.
    Returns the flow added.
    """
    n = trcap.shape[0]
    queue = np.full(2, NO_PARENT, dtype=np.int64)
    time = 0
    for i in range(n):
        next_active[i] = NO_PARENT
        if stamp[i] > time:
            time = stamp[i]
    time += 1  # later than every stamp: no cached distance is current
    o_len = 0
    for t in range(n_marked):
        i = marked[t]
        is_marked[i] = False
        _push_active(i, next_active, queue)
        c = trcap[i]
        if c == 0.0:
            if parent[i] != NO_PARENT and parent[i] != ORPHAN:
                parent[i] = ORPHAN
                orphans[o_len] = i
                o_len += 1
            continue
        sink = c < 0.0
        if parent[i] == NO_PARENT or parent[i] == ORPHAN or in_sink_tree[i] != sink:
            in_sink_tree[i] = sink
            for a in range(ptr[i], ptr[i + 1]):
                j = head[a]
                if is_marked[j]:
                    continue
                if parent[j] == sister[a]:  # j's tree arc leads to i, which changes tree
                    parent[j] = ORPHAN
                    orphans[o_len] = j
                    o_len += 1
                # a neighbour in the other tree (an orphan too) that a residual arc joins
                # to i searches again: i may leave its tree before its own search reaches it
                if parent[j] != NO_PARENT and in_sink_tree[j] != sink:
                    if (rcap[a] if not sink else rcap[sister[a]]) != 0.0:
                        _push_active(j, next_active, queue)
        parent[i] = TERMINAL
        stamp[i] = time
        dist[i] = 1
    return _search(ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans,
                   queue, 0, o_len, time)


@numba.njit(cache=True, nogil=True, inline="always")
def _adopt(ptr, head, sister, rcap, parent, next_active, stamp, dist, in_sink_tree, orphans, queue, o_first,
           o_len, time):
    """The adoption stage: every orphan (a circular deque ``orphans[o_first:]`` of
    ``o_len`` nodes) finds a parent in its tree whose root is a terminal, the closest
    to it, or becomes free, orphaning its children and activating its tree neighbours.
    Returns the deque's new start (it is left empty)."""
    n = parent.shape[0]
    while o_len:
        i2 = orphans[o_first]
        o_first = o_first + 1 if o_first + 1 < n else 0
        o_len -= 1
        sink = in_sink_tree[i2]
        d_min = _INF_DIST
        a0_min = NO_PARENT
        for a0 in range(ptr[i2], ptr[i2 + 1]):
            cap = rcap[a0] if sink else rcap[sister[a0]]
            if cap != 0.0:
                j = head[a0]
                if in_sink_tree[j] == sink and parent[j] != NO_PARENT:
                    d = 0
                    while True:
                        if stamp[j] == time:
                            d += dist[j]
                            break
                        a = parent[j]
                        d += 1
                        if a == TERMINAL:
                            stamp[j] = time
                            dist[j] = 1
                            break
                        if a == ORPHAN:
                            d = _INF_DIST
                            break
                        j = head[a]
                    if d < _INF_DIST:
                        if d < d_min:
                            a0_min = a0
                            d_min = d
                        j = head[a0]
                        while stamp[j] != time:
                            stamp[j] = time
                            dist[j] = d
                            d -= 1
                            j = head[parent[j]]
        parent[i2] = a0_min
        if a0_min != NO_PARENT:
            stamp[i2] = time
            dist[i2] = d_min + 1
        else:
            for a0 in range(ptr[i2], ptr[i2 + 1]):
                j = head[a0]
                a = parent[j]
                if in_sink_tree[j] == sink and a != NO_PARENT:
                    cap = rcap[a0] if sink else rcap[sister[a0]]
                    if cap != 0.0:
                        _push_active(j, next_active, queue)
                    if a != TERMINAL and a != ORPHAN and head[a] == i2:
                        parent[j] = ORPHAN
                        t = o_first + o_len
                        orphans[t - n if t >= n else t] = j
                        o_len += 1
    return o_first


@numba.njit(cache=True, nogil=True)
def _search(ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans, queue,
            o_first, o_len, time):
    """Growth, augmentation and adoption (module docstring) from the active nodes in
    ``queue`` and the orphans ``orphans[o_first:o_first + o_len]`` (adopted first),
    until no active node is left. Returns the flow pushed."""
    n = trcap.shape[0]
    flow = 0.0
    if o_len:
        o_first = _adopt(ptr, head, sister, rcap, parent, next_active, stamp, dist, in_sink_tree, orphans,
                         queue, o_first, o_len, time)
        o_len = 0
    current = NO_PARENT
    while True:
        i = current
        if i >= 0:
            next_active[i] = NO_PARENT
            if parent[i] == NO_PARENT:
                i = NO_PARENT
        if i < 0:
            # next active
            while True:
                i = queue[0]
                if i < 0:
                    break
                if next_active[i] == i:
                    queue[0] = NO_PARENT
                    queue[1] = NO_PARENT
                else:
                    queue[0] = next_active[i]
                next_active[i] = NO_PARENT
                if parent[i] != NO_PARENT:
                    break
            if i < 0:
                break
        # growth
        mid = NO_PARENT
        if not in_sink_tree[i]:
            for a in range(ptr[i], ptr[i + 1]):
                if rcap[a] != 0.0:
                    j = head[a]
                    if parent[j] == NO_PARENT:
                        in_sink_tree[j] = False
                        parent[j] = sister[a]
                        stamp[j] = stamp[i]
                        dist[j] = dist[i] + 1
                        _push_active(j, next_active, queue)
                    elif in_sink_tree[j]:
                        mid = a
                        break
                    elif stamp[j] <= stamp[i] and dist[j] > dist[i]:
                        parent[j] = sister[a]
                        stamp[j] = stamp[i]
                        dist[j] = dist[i] + 1
        else:
            for a in range(ptr[i], ptr[i + 1]):
                if rcap[sister[a]] != 0.0:
                    j = head[a]
                    if parent[j] == NO_PARENT:
                        in_sink_tree[j] = True
                        parent[j] = sister[a]
                        stamp[j] = stamp[i]
                        dist[j] = dist[i] + 1
                        _push_active(j, next_active, queue)
                    elif not in_sink_tree[j]:
                        mid = sister[a]
                        break
                    elif stamp[j] <= stamp[i] and dist[j] > dist[i]:
                        parent[j] = sister[a]
                        stamp[j] = stamp[i]
                        dist[j] = dist[i] + 1
        time += 1
        if mid < 0:
            current = NO_PARENT
            continue
        next_active[i] = i  # keep i active: it is current
        current = i
        # augment along mid (an arc from the source tree to the sink tree)
        s_end = head[sister[mid]]
        t_end = head[mid]
        bottleneck = rcap[mid]
        k = s_end
        while True:
            a = parent[k]
            if a == TERMINAL:
                break
            c = rcap[sister[a]]
            if c < bottleneck:
                bottleneck = c
            k = head[a]
        if trcap[k] < bottleneck:
            bottleneck = trcap[k]
        k = t_end
        while True:
            a = parent[k]
            if a == TERMINAL:
                break
            c = rcap[a]
            if c < bottleneck:
                bottleneck = c
            k = head[a]
        if -trcap[k] < bottleneck:
            bottleneck = -trcap[k]
        rcap[sister[mid]] += bottleneck
        rcap[mid] -= bottleneck
        k = s_end
        while True:
            a = parent[k]
            if a == TERMINAL:
                break
            rcap[a] += bottleneck
            rcap[sister[a]] -= bottleneck
            if rcap[sister[a]] == 0.0:
                parent[k] = ORPHAN
                o_first = o_first - 1 if o_first > 0 else n - 1
                orphans[o_first] = k
                o_len += 1
            k = head[a]
        trcap[k] -= bottleneck
        if trcap[k] == 0.0:
            parent[k] = ORPHAN
            o_first = o_first - 1 if o_first > 0 else n - 1
            orphans[o_first] = k
            o_len += 1
        k = t_end
        while True:
            a = parent[k]
            if a == TERMINAL:
                break
            rcap[sister[a]] += bottleneck
            rcap[a] -= bottleneck
            if rcap[a] == 0.0:
                parent[k] = ORPHAN
                o_first = o_first - 1 if o_first > 0 else n - 1
                orphans[o_first] = k
                o_len += 1
            k = head[a]
        trcap[k] += bottleneck
        if trcap[k] == 0.0:
            parent[k] = ORPHAN
            o_first = o_first - 1 if o_first > 0 else n - 1
            orphans[o_first] = k
            o_len += 1
        flow += bottleneck
        o_first = _adopt(ptr, head, sister, rcap, parent, next_active, stamp, dist, in_sink_tree, orphans,
                         queue, o_first, o_len, time)
        o_len = 0
    return flow


@numba.njit(cache=True, nogil=True)
def sink_side(parent, in_sink_tree):
    """The sink side of the minimum cut :func:`maxflow` found (bool per node)."""
    n = parent.shape[0]
    x = np.empty(n, dtype=np.bool_)
    for i in range(n):
        x[i] = parent[i] != NO_PARENT and in_sink_tree[i]
    return x
