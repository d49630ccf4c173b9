"""Boykov–Kolmogorov max-flow compiled with numba, on a graph whose arcs are laid out once.

Every cut of :mod:`~hmrf.inference.expansion` runs here. A graph's arcs are laid out
once (:func:`arc_layout`); a cut writes capacities, residual ``rcap`` per arc and
terminal ``trcap`` per node (positive from the source, negative to the sink; a node
with none stays on the source side). Boykov & Kolmogorov (2004), §3: a search tree
grows from each terminal over non-saturated arcs (growth); an arc joining the trees
gives an augmenting path, pushed by its bottleneck (augmentation), which orphans the
nodes whose tree arc it saturates; each orphan looks for a new parent in its tree whose
root is a terminal, the closest (adoption; distances cached with time stamps), or
becomes free and makes its tree neighbours active. Active nodes form a FIFO queue, and
the node that found the last augmenting path grows again first (as in maxflow-v3). The
sink side of the minimum cut, the sink's tree at the end, is the set of nodes with a
residual path to the sink, the same for every maximum flow. :func:`maxflow_reuse`
resumes from a previous cut after some capacities changed (Kohli & Torr 2007).

References
----------
Boykov & Kolmogorov (2004), "An experimental comparison of min-cut/max-flow algorithms
for energy minimization in vision", IEEE TPAMI 26(9), §3. Kohli & Torr (2007), "Dynamic
graph cuts for efficient inference in Markov random fields", IEEE TPAMI 29(12), §3.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["arc_layout", "maxflow", "maxflow_reuse", "min_cut"]

#: parent of a free node (in neither tree)
NO_PARENT = -1
#: parent of a node joined to its terminal directly
TERMINAL = -2
#: parent of an orphan (a node whose tree arc was saturated, waiting for adoption)
ORPHAN = -3
#: a distance larger than any path
_INF_DIST = 1 << 60


@numba.njit(cache=True, nogil=True)
def arc_layout(n, p, q):
    """The arcs of the graph with edges ``(p[e], q[e])``: ``(ptr, edge, head, sister, arc_pq, arc_qp)``.

    Arc ``a`` in ``ptr[i]:ptr[i + 1]`` leaves node ``i`` along edge ``edge[a]`` (a
    counting sort of both endpoints: the incidence of every node) and enters
    ``head[a]``; ``sister[a]`` is the reverse arc, and ``arc_pq[e]``, ``arc_qp[e]`` are
    the arcs ``p -> q`` and ``q -> p`` of edge ``e``.
    """
    m = p.shape[0]
    ptr = np.zeros(n + 1, dtype=np.int64)
    for e in range(m):
        ptr[p[e] + 1] += 1
        ptr[q[e] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    edge = np.empty(2 * m, dtype=np.int64)
    head = np.empty(2 * m, dtype=np.int64)
    sister = np.empty(2 * m, dtype=np.int64)
    arc_pq = np.empty(m, dtype=np.int64)
    arc_qp = np.empty(m, dtype=np.int64)
    for e in range(m):
        a, b = fill[p[e]], fill[q[e]]
        fill[p[e]] += 1
        fill[q[e]] += 1
        edge[a], edge[b] = e, e
        head[a], head[b] = q[e], p[e]
        sister[a], sister[b] = b, a
        arc_pq[e], arc_qp[e] = a, b
    return ptr, edge, head, sister, arc_pq, arc_qp


@numba.njit(cache=True, nogil=True)
def min_cut(u, p, q, half):
    """The sink side (``x = 1``) of the minimum cut of ``E(x) = sum_i u_i x_i + sum_e
    half_e [x_p != x_q]`` (``half >= 0``): terminal capacities ``u``, arcs ``half`` both
    ways."""
    n = u.shape[0]
    ptr, _, head, sister, arc_pq, arc_qp = arc_layout(n, p, q)
    rcap = np.empty(2 * p.shape[0])
    rcap[arc_pq] = half
    rcap[arc_qp] = half
    trcap = u.copy()
    parent = np.empty(n, dtype=np.int64)
    in_sink_tree = np.empty(n, dtype=np.bool_)
    maxflow(ptr, head, sister, rcap, trcap, parent, np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
            np.empty(n, dtype=np.int64), in_sink_tree, np.empty(n, dtype=np.int64))
    return (parent != NO_PARENT) & in_sink_tree


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
    residual capacities ``rcap`` and terminal capacities ``trcap``, which become the
    residual network (the other arrays, one entry per node, are scratch). Returns the
    flow value; the sink side of the minimum cut is ``(parent != NO_PARENT) &
    in_sink_tree``."""
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
    zero = np.int64(0)  # not a literal 0: one compiled _search for every caller
    return _search(ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans,
                   queue, zero, zero, zero)


@numba.njit(cache=True, nogil=True)
def maxflow_reuse(ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans,
                  marked, n_marked, is_marked):
    """:func:`maxflow` that keeps the search trees of the last cut on the same arrays
    (Kohli & Torr 2007, §3.3; the ``reuse_trees`` option of maxflow-v3).

    ``rcap``, ``trcap``, ``parent``, ``in_sink_tree``, ``stamp`` and ``dist`` are what
    the last cut left (a parent's stamp at least its child's, its distance below the
    child's at equal stamps: re-parenting never closes a cycle), after which the
    capacities of the nodes ``marked[:n_marked]`` (``is_marked`` true for them only)
    and of the arcs between them were changed into the residual network of a valid
    flow (``trcap`` of any sign, ``rcap`` non-negative). A marked node becomes a child
    of its terminal if it keeps terminal capacity (its children orphans if it changes
    tree), else an orphan; the orphans are adopted and the search resumes from the
    marked nodes. ``is_marked`` is cleared. Returns the flow added.
    """
    n = trcap.shape[0]
    queue = np.full(2, NO_PARENT, dtype=np.int64)
    time = np.int64(0)  # int64 from the start (a literal 0 would compile _search once more)
    for i in range(n):
        next_active[i] = NO_PARENT
        if stamp[i] > time:
            time = stamp[i]
    time += 1  # later than every stamp: no cached distance is current
    o_len = np.int64(0)
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
                   queue, np.int64(0), o_len, time)


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


@numba.njit(cache=True, nogil=True, inline="always")
def _bottleneck(k, bottleneck, to_sink, parent, head, sister, rcap, trcap):
    """The least of ``bottleneck`` and the residual capacities on the tree path from ``k``
    to its terminal (flow from parent to child in the source tree, from child to
    parent in the sink tree: ``to_sink``)."""
    while True:
        a = parent[k]
        if a == TERMINAL:
            break
        c = rcap[a] if to_sink else rcap[sister[a]]
        if c < bottleneck:
            bottleneck = c
        k = head[a]
    c = -trcap[k] if to_sink else trcap[k]
    return c if c < bottleneck else bottleneck


@numba.njit(cache=True, nogil=True, inline="always")
def _push(k, flow, to_sink, parent, head, sister, rcap, trcap, orphans, o_first, o_len):
    """Push ``flow`` along the tree path from ``k`` to its terminal (as in
    :func:`_bottleneck`); a node whose tree arc it saturates becomes an orphan, at the
    front of the deque ``orphans[o_first:]`` of ``o_len`` nodes. Returns ``(o_first, o_len)``."""
    n = trcap.shape[0]
    while True:
        a = parent[k]
        if a == TERMINAL:
            trcap[k] += flow if to_sink else -flow
            saturated = trcap[k] == 0.0
        else:
            along, back = (a, sister[a]) if to_sink else (sister[a], a)
            rcap[back] += flow
            rcap[along] -= flow
            saturated = rcap[along] == 0.0
        if saturated:
            parent[k] = ORPHAN
            o_first = o_first - 1 if o_first > 0 else n - 1
            orphans[o_first] = k
            o_len += 1
        if a == TERMINAL:
            return o_first, o_len
        k = head[a]


@numba.njit(cache=True, nogil=True)
def _search(ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans, queue,
            o_first, o_len, time):
    """Growth, augmentation and adoption (module docstring) from the active nodes in
    ``queue`` and the orphans ``orphans[o_first:o_first + o_len]`` (adopted first),
    until no active node is left. Returns the flow pushed."""
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
        # growth over the residual arcs out of a source-tree node (into a sink-tree node)
        mid = NO_PARENT
        sink = in_sink_tree[i]
        for a in range(ptr[i], ptr[i + 1]):
            if (rcap[sister[a]] if sink else rcap[a]) != 0.0:
                j = head[a]
                if parent[j] == NO_PARENT:
                    in_sink_tree[j] = sink
                    parent[j] = sister[a]
                    stamp[j] = stamp[i]
                    dist[j] = dist[i] + 1
                    _push_active(j, next_active, queue)
                elif in_sink_tree[j] != sink:
                    mid = sister[a] if sink else a  # from the source tree to the sink tree
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
        s_end, t_end = head[sister[mid]], head[mid]
        bottleneck = _bottleneck(t_end, rcap[mid], True, parent, head, sister, rcap, trcap)
        bottleneck = _bottleneck(s_end, bottleneck, False, parent, head, sister, rcap, trcap)
        rcap[sister[mid]] += bottleneck
        rcap[mid] -= bottleneck
        o_first, o_len = _push(s_end, bottleneck, False, parent, head, sister, rcap, trcap, orphans, o_first,
                               o_len)
        o_first, o_len = _push(t_end, bottleneck, True, parent, head, sister, rcap, trcap, orphans, o_first,
                               o_len)
        flow += bottleneck
        o_first = _adopt(ptr, head, sister, rcap, parent, next_active, stamp, dist, in_sink_tree, orphans,
                         queue, o_first, o_len, time)
        o_len = 0
    return flow
