"""The α-expansion move's binary problem, compiled with numba (optional, ``pip install hmrf[fast]``).

The compiled twin of the NumPy code in :class:`~hmrf.inference.expansion.ExpansionMoves`
(``tests/test_expansion.py`` checks that both compute the same move). For one move
``(labels, α)`` it builds, in one pass over the edges, what the minimum cut needs: the
free nodes (those that may switch to ``α``), their unary differences
``E(x_i = 1) - E(x_i = 0)`` with every pairwise term that touches one free node folded
in, and the split ``λ/2 [x_p != x_q]`` of the terms between two free nodes
(:func:`~hmrf.inference.qpbo.split_terms`); after the cut, the energy change of the
move from its terms. Written by hand because it is the move's hot path: vectorised,
each move allocates and gathers a dozen arrays over all edges (about twice the time of
the max-flow itself on a 273,000-pixel image grid), where one compiled loop reads each
edge once.

Numba is imported only when this module is (never by ``import hmrf``); the kernels are
cached on disk (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np

from .._numba_cache import refresh
from . import maxflow_numba
from .maxflow_numba import NO_PARENT, maxflow, maxflow_reuse

# the moves compile in the max-flow of maxflow_numba
refresh(__file__, maxflow_numba.__file__)

__all__ = ["move_problem", "move_change", "fix_dominated", "incidence", "components", "move_problem_reduced",
           "move_cut"]


@numba.njit(cache=True, nogil=True, inline="always")
def _terms(e, a, b, alpha, wc, wk, tab_of, tab_cost):
    """``θ(0,0), θ(0,1), θ(1,0), θ(1,1)`` of edge ``e`` with end labels ``a``, ``b``."""
    t = tab_of[e]
    if t >= 0:
        return tab_cost[t, a, b], tab_cost[t, a, alpha], tab_cost[t, alpha, b], tab_cost[t, alpha, alpha]
    c, s = wc[e], wk[e]
    return (c - s if a == b else c), (c - s if a == alpha else c), (c - s if b == alpha else c), c - s


@numba.njit(cache=True, nogil=True, inline="always")
def _free_nodes(labels, alpha, unary, allowed_alpha):
    """The move's free nodes (another label than ``alpha``, and ``alpha`` allowed):
    ``(pos, nodes, u)``, the position of every node among them (-1 if not free), the
    free nodes in order and their unary differences ``U[i, alpha] - U[i, labels[i]]``."""
    n = labels.shape[0]
    pos = np.full(n, -1, dtype=np.int64)
    nf = 0
    for i in range(n):
        if labels[i] != alpha and allowed_alpha[i]:
            pos[i] = nf
            nf += 1
    nodes = np.empty(nf, dtype=np.int64)
    u = np.empty(nf)
    for i in range(n):
        if pos[i] >= 0:
            nodes[pos[i]] = i
            u[pos[i]] = unary[i, alpha] - unary[i, labels[i]]
    return pos, nodes, u


@numba.njit(cache=True, nogil=True)
def move_problem(labels, alpha, unary, allowed_alpha, p, q, wc, wk, tab_of, tab_cost):
    """The binary problem of the α-expansion of ``labels`` in split form.

    Returns ``(nodes, u, ep, eq, half_lambda)``: the free nodes, their unary
    differences, and the endpoints (positions in ``nodes``) and ``[x_p != x_q]``
    weights of the terms between two free nodes. ``E(x) - E(0) = sum u x + sum
    half_lambda [x_p != x_q]`` (:func:`~hmrf.inference.qpbo.solve_split`).
    """
    m = p.shape[0]
    pos, nodes, u = _free_nodes(labels, alpha, unary, allowed_alpha)
    ep = np.empty(m, dtype=np.int64)
    eq = np.empty(m, dtype=np.int64)
    hl = np.empty(m)
    nb = 0
    for e in range(m):
        i, j = p[e], q[e]
        fi, fj = pos[i], pos[j]
        if fi < 0 and fj < 0:
            continue
        A, B, C, D = _terms(e, labels[i], labels[j], alpha, wc, wk, tab_of, tab_cost)
        if fi >= 0 and fj >= 0:
            half = 0.5 * (B + C - A - D)
            if half < 0.0 and half >= -1e-12 * (abs(A) + abs(B) + abs(C) + abs(D)):
                half = 0.0  # rounding noise on a term submodular with equality
            u[fi] += 0.5 * (D - A + C - B)
            u[fj] += 0.5 * (D - A + B - C)
            ep[nb], eq[nb], hl[nb] = fi, fj, half
            nb += 1
        elif fi >= 0:
            u[fi] += C - A
        else:
            u[fj] += B - A
    return nodes, u, ep[:nb], eq[:nb], hl[:nb]


@numba.njit(cache=True, nogil=True)
def move_change(labels, alpha, x, unary, p, q, wc, wk, tab_of, tab_cost):
    """Energy change of switching the nodes ``x`` (bool, all nodes) of ``labels`` to ``alpha``,
    from the move's terms."""
    change = 0.0
    for i in range(labels.shape[0]):
        if x[i]:
            change += unary[i, alpha] - unary[i, labels[i]]
    for e in range(p.shape[0]):
        i, j = p[e], q[e]
        xi, xj = x[i], x[j]
        if not (xi or xj):
            continue
        A, B, C, D = _terms(e, labels[i], labels[j], alpha, wc, wk, tab_of, tab_cost)
        change += (D if xj else C) - A if xi else B - A
    return change


@numba.njit(cache=True, nogil=True, inline="always")
def _dominated(u, s):
    """0 or 1 if a variable with unary difference ``u`` and coupling ``s`` is forced there, else -1."""
    margin = 1e-9 * (s + abs(u))
    if u - s > margin:
        return 0
    if -u - s > margin:
        return 1
    return -1


@numba.njit(cache=True, nogil=True)
def incidence(n, p, q):
    """Edges incident to each node, CSR ``(ptr, edge)`` (a counting sort of both endpoints)."""
    m = p.shape[0]
    ptr = np.zeros(n + 1, dtype=np.int64)
    for e in range(m):
        ptr[p[e] + 1] += 1
        ptr[q[e] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    edge = np.empty(2 * m, dtype=np.int64)
    for e in range(m):
        edge[fill[p[e]]] = e
        fill[p[e]] += 1
        edge[fill[q[e]]] = e
        fill[q[e]] += 1
    return ptr, edge


@numba.njit(cache=True, nogil=True)
def components(n, p, q):
    """Connected components of the graph with edges ``(p[e], q[e])``: ``(n_components,
    component of every node)``, numbered in the order of their smallest node, as
    :meth:`~hmrf.PairwiseGraph.components` (SciPy's ``connected_components``) numbers
    them; the compiled twin used by ``inference="auto"`` to split a graph (a union–find
    with path halving, linear in practice, without SciPy's sparse-matrix build)."""
    root = np.arange(n)
    for e in range(p.shape[0]):
        a, b = p[e], q[e]
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        while root[b] != b:
            root[b] = root[root[b]]
            b = root[b]
        if a != b:
            if a < b:
                root[b] = a
            else:
                root[a] = b
    comp = np.empty(n, dtype=np.int64)
    n_comp = 0
    for i in range(n):  # roots are the smallest node of their component: seen first
        r = i
        while root[r] != r:
            r = root[r]
        if r == i:
            comp[i] = n_comp
            n_comp += 1
        else:
            comp[i] = comp[r]
    return n_comp, comp


@numba.njit(cache=True, nogil=True, inline="always")
def _fix_by_dominance(u, s, half, p, q, var_of, node_of, inc_ptr, inc_edge):
    """The dominance worklist shared by :func:`fix_dominated` and :func:`move_problem_reduced`.

    Variables ``f`` with unary differences ``u[f]`` and couplings ``s[f]`` (the sum of
    ``|half|`` over their terms), over a graph of nodes: variable ``f`` is node
    ``node_of[f]``, node ``i`` is variable ``var_of[i]``, the edges of node ``i`` are
    ``inc_edge[inc_ptr[i]:inc_ptr[i + 1]]`` and edge ``e`` is a term ``half[e] [x_p != x_q]``
    between two variables, or not a term when ``half[e]`` is NaN. A variable is fixed
    as soon as it is dominated, its terms become unary terms of its free neighbours
    (``u`` and ``s`` are updated in place), and those are checked again. Returns the
    state of every variable: -1 (free), 0 or 1.
    """
    nf = u.shape[0]
    state = np.full(nf, -1, dtype=np.int64)
    stack = np.empty(nf, dtype=np.int64)
    queued = np.zeros(nf, dtype=np.bool_)
    top = 0
    for f in range(nf):
        if _dominated(u[f], s[f]) >= 0:
            stack[top] = f
            top += 1
            queued[f] = True
    while top:
        top -= 1
        f = stack[top]
        v = _dominated(u[f], s[f])  # conditions only get easier: still dominated
        state[f] = v
        i = node_of[f]
        for t in range(inc_ptr[i], inc_ptr[i + 1]):
            e = inc_edge[t]
            h = half[e]
            if np.isnan(h):
                continue
            fj = var_of[q[e]] if p[e] == i else var_of[p[e]]
            if state[fj] >= 0 or fj == f:
                continue
            s[fj] -= abs(h)
            u[fj] += h if v == 0 else -h  # h [x_j != 0] = h x_j; h [x_j != 1] = h - h x_j
            if not queued[fj] and _dominated(u[fj], s[fj]) >= 0:
                stack[top] = fj
                top += 1
                queued[fj] = True
    return state


@numba.njit(cache=True, nogil=True)
def fix_dominated(u, p, q, half_lambda):
    """The variables whose value every minimiser shares, by dominance; the compiled twin of
    :func:`~hmrf.inference.qpbo.fix_dominated` (same arguments, same result).

    A worklist (``_fix_by_dominance``): a variable is fixed as soon as it is
    dominated, its terms become unary terms of its free neighbours, and those are
    checked again. Returns ``(state, u)``: ``state`` -1 (free), 0 or 1 per variable,
    and the unary differences with the terms towards fixed variables folded in.
    """
    n, m = u.shape[0], p.shape[0]
    inc_ptr, inc_edge = incidence(n, p, q)
    s = np.zeros(n)
    for e in range(m):
        a = abs(half_lambda[e])
        s[p[e]] += a
        s[q[e]] += a
    uu = u.copy()
    ids = np.arange(n)
    state = _fix_by_dominance(uu, s, half_lambda, p, q, ids, ids, inc_ptr, inc_edge)
    return state, uu


@numba.njit(cache=True, nogil=True, inline="always")
def _move_terms(labels, alpha, unary, allowed_alpha, p, q, wc, wk, tab_of, tab_cost):
    """The move's free nodes and terms: ``(pos, node_of, u, s, half, non_submodular)``
    (:func:`_free_nodes`; ``s`` the coupling of every free node, ``half`` the
    ``[x_p != x_q]`` weight of every edge between two free nodes, NaN elsewhere)."""
    m = p.shape[0]
    pos, node_of, u = _free_nodes(labels, alpha, unary, allowed_alpha)
    nf = node_of.shape[0]
    s = np.zeros(nf)
    half = np.full(m, np.nan)  # the [x_p != x_q] weight of the terms between two free nodes
    non_sub = False
    for e in range(m):
        i, j = p[e], q[e]
        fi, fj = pos[i], pos[j]
        if fi < 0 and fj < 0:
            continue
        A, B, C, D = _terms(e, labels[i], labels[j], alpha, wc, wk, tab_of, tab_cost)
        if fi >= 0 and fj >= 0:
            h = 0.5 * (B + C - A - D)
            if h < 0.0 and h >= -1e-12 * (abs(A) + abs(B) + abs(C) + abs(D)):
                h = 0.0
            non_sub |= h < 0.0
            half[e] = h
            u[fi] += 0.5 * (D - A + C - B)
            u[fj] += 0.5 * (D - A + B - C)
            s[fi] += abs(h)
            s[fj] += abs(h)
        elif fi >= 0:
            u[fi] += C - A
        else:
            u[fj] += B - A
    return pos, node_of, u, s, half, non_sub


@numba.njit(cache=True, nogil=True)
def move_problem_reduced(labels, alpha, unary, allowed_alpha, p, q, wc, wk, tab_of, tab_cost, inc_ptr,
                         inc_edge):
    """:func:`move_problem` followed by :func:`fix_dominated` and the reduction to the
    free variables, in one pass and without the intermediate arrays over all nodes.

    Returns ``(forced, nodes, u, ep, eq, half_lambda, non_submodular)``: the nodes
    every minimiser switches to ``alpha``, the nodes left to the cut with their unary
    differences, the terms between two of them (positions in ``nodes``), and whether
    any term of the move was not submodular. ``inc_ptr, inc_edge``: :func:`incidence`.
    """
    m = p.shape[0]
    pos, node_of, u, s, half, non_sub = _move_terms(labels, alpha, unary, allowed_alpha, p, q, wc, wk, tab_of,
                                                     tab_cost)
    nf = node_of.shape[0]
    state = _fix_by_dominance(u, s, half, p, q, pos, node_of, inc_ptr, inc_edge)
    r = np.full(nf, -1, dtype=np.int64)
    n_left, n_forced = 0, 0
    for f in range(nf):
        if state[f] < 0:
            r[f] = n_left
            n_left += 1
        elif state[f] == 1:
            n_forced += 1
    nodes = np.empty(n_left, dtype=np.int64)
    u_left = np.empty(n_left)
    forced = np.empty(n_forced, dtype=np.int64)
    c = 0
    for f in range(nf):
        if r[f] >= 0:
            nodes[r[f]] = node_of[f]
            u_left[r[f]] = u[f]
        elif state[f] == 1:
            forced[c] = node_of[f]
            c += 1
    ep = np.empty(m, dtype=np.int64)
    eq = np.empty(m, dtype=np.int64)
    hl = np.empty(m)
    nb = 0
    for e in range(m):
        if np.isnan(half[e]):
            continue
        a, b = r[pos[p[e]]], r[pos[q[e]]]
        if a >= 0 and b >= 0:
            ep[nb], eq[nb], hl[nb] = a, b, half[e]
            nb += 1
    return forced, nodes, u_left, ep[:nb], eq[:nb], hl[:nb], non_sub


@numba.njit(cache=True, nogil=True, inline="always")
def _mark(i, marked, is_marked, nm):
    """Add node ``i`` to the ``nm`` marked nodes unless it is one; the new count."""
    if not is_marked[i]:
        is_marked[i] = True
        marked[nm] = i
        nm += 1
    return nm


@numba.njit(cache=True, nogil=True)
def move_cut(labels, alpha, unary, allowed_alpha, p, q, wc, wk, tab_of, tab_cost, inc_ptr, inc_edge, head,
             sister, arc_pq, arc_qp, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans,
             prev_labels, recycle, marked, is_marked):
    """The whole move of a submodular α-expansion, its cut included.

    One pass over the nodes and one over the edges write the move's binary problem
    (:func:`move_problem`'s terms) into the capacities of the E-step graph's arc
    layout (``inc_ptr, head, sister, arc_pq, arc_qp``:
    :func:`~hmrf.inference.maxflow_numba.arc_layout`), in place in the workspace arrays
    ``rcap`` to ``orphans`` (:class:`~hmrf.inference.maxflow_numba.MaxflowWorkspace`);
    then :func:`~hmrf.inference.maxflow_numba.maxflow` cuts it. A free node has its
    unary difference ``E(x_i = 1) - E(x_i = 0)`` (with the terms towards non-free
    neighbours folded in) as terminal capacity, an edge between two free nodes
    ``half_lambda`` both ways, every other node and arc capacity zero: nodes labelled
    ``alpha`` are never reached by the search trees and stay on the source side.

    **Recycled flow** (``recycle``: Kohli & Torr 2007, §3; for the moves of one label
    in successive sweeps, Alahari, Kohli & Torr 2010, §4). ``rcap`` and ``trcap``
    then hold the residual network that the last cut of this ``alpha`` left, built from
    the labels ``prev_labels``; only what changed since is rewritten. An edge whose
    ``[x_i != x_j]`` weight changes by ``d`` gets ``d`` more residual both ways; where
    that leaves a negative residual (its flow exceeds the new capacity) the flow is
    lowered to the capacity and the excess ``δ`` it leaves at one end and the deficit
    at the other are sent through their terminal arcs (``δ`` more to the sink from the
    one, from the source to the other: a reparametrisation, the same cuts). A node's
    terminal capacity changes by the difference of its new and old capacities. The
    residual network is then that of a valid flow of the new problem. The nodes whose
    capacities changed (and the ends of the arcs that did) are marked (``marked``,
    ``is_marked``: scratch arrays over the nodes, ``is_marked`` all false on entry and
    on return) and :func:`~hmrf.inference.maxflow_numba.maxflow_reuse` completes the
    flow from them, keeping the search trees that ``parent``, ``dist`` and
    ``in_sink_tree`` hold from that last cut: the work is about that of what the labels
    changed. The cut is the same as from zero flow: the sink side returned is the set
    of nodes with a residual path to the sink, which every maximum flow leaves the same
    (up to rounding where the minimum is tied). Ends with ``prev_labels = labels``.
    Without ``recycle`` every capacity is written afresh and the max-flow starts from
    zero flow (:func:`~hmrf.inference.maxflow_numba.maxflow`).

    Nothing is fixed by dominance first (:func:`move_problem_reduced` does that for
    the QPBO moves): the max-flow settles a dominated node in one growth or
    augmentation step, cheaper than the worklist that would find it
    (docs/inference.md, "α-expansion").
    ``inc_edge`` is unused (the incidence is in the arc layout); it keeps the argument
    order of :func:`move_problem_reduced`.

    Returns ``(x, n_free, non_submodular)``: the nodes that switch to ``alpha`` (bool,
    all nodes), the number of free nodes and whether a term was not submodular; then
    no cut is computed, ``x`` is empty, ``rcap`` and ``trcap`` are left part-written
    (the caller runs the QPBO move and does not recycle them).
    """
    m, n = p.shape[0], labels.shape[0]
    x = np.zeros(n, dtype=np.bool_)  # the free nodes until the cut
    nf = 0
    for i in range(n):
        if labels[i] != alpha and allowed_alpha[i]:
            x[i] = True
            nf += 1
    if nf == 0:
        return x, nf, False
    nm = 0
    for i in range(n):
        t = unary[i, alpha] - unary[i, labels[i]] if x[i] else 0.0
        if not recycle:
            trcap[i] = t
            continue
        if prev_labels[i] != alpha and allowed_alpha[i]:
            t -= unary[i, alpha] - unary[i, prev_labels[i]]
        if t != 0.0:
            trcap[i] += t
            nm = _mark(i, marked, is_marked, nm)
    for e in range(m):
        # what the edge adds to its ends' terminal capacities (ti, tj) and its
        # [x_i != x_j] weight h (between two free nodes); with recycle, the change of
        # both from the last cut's labels (written out: a tuple-returning helper here
        # compiles to code several times slower)
        i, j = p[e], q[e]
        fi, fj = x[i], x[j]
        h, ti, tj = 0.0, 0.0, 0.0
        if fi or fj:
            A, B, C, D = _terms(e, labels[i], labels[j], alpha, wc, wk, tab_of, tab_cost)
            if fi and fj:
                h = 0.5 * (B + C - A - D)
                if h < 0.0:
                    if h < -1e-12 * (abs(A) + abs(B) + abs(C) + abs(D)):
                        for t in range(nm):
                            is_marked[marked[t]] = False
                        return np.zeros(0, dtype=np.bool_), nf, True
                    h = 0.0  # rounding noise on a term submodular with equality
                ti = 0.5 * (D - A + C - B)
                tj = 0.5 * (D - A + B - C)
            elif fi:
                ti = C - A
            else:
                tj = B - A
        a, b = arc_pq[e], arc_qp[e]
        if not recycle:
            trcap[i] += ti
            trcap[j] += tj
            rcap[a] = h
            rcap[b] = h
            continue
        pi, pj = prev_labels[i], prev_labels[j]
        gi, gj = pi != alpha and allowed_alpha[i], pj != alpha and allowed_alpha[j]
        h0 = 0.0
        if gi or gj:
            A, B, C, D = _terms(e, pi, pj, alpha, wc, wk, tab_of, tab_cost)
            if gi and gj:
                h0 = max(0.5 * (B + C - A - D), 0.0)  # submodular: that cut ran
                ti -= 0.5 * (D - A + C - B)
                tj -= 0.5 * (D - A + B - C)
            elif gi:
                ti -= C - A
            else:
                tj -= B - A
        if ti != 0.0:
            trcap[i] += ti
            nm = _mark(i, marked, is_marked, nm)
        if tj != 0.0:
            trcap[j] += tj
            nm = _mark(j, marked, is_marked, nm)
        if h == h0:
            continue
        nm = _mark(i, marked, is_marked, nm)
        nm = _mark(j, marked, is_marked, nm)
        if h == 0.0:  # no arc left: its flow (i -> j) goes to the terminals
            f = 0.5 * (rcap[b] - rcap[a])
            rcap[a] = 0.0
            rcap[b] = 0.0
            trcap[i] += f
            trcap[j] -= f
            continue
        ra, rb = rcap[a] + (h - h0), rcap[b] + (h - h0)
        if ra < 0.0:  # flow i -> j above the new capacity: lowered to it
            trcap[i] -= ra
            trcap[j] += ra
            ra, rb = 0.0, 2.0 * h
        elif rb < 0.0:
            trcap[j] -= rb
            trcap[i] += rb
            ra, rb = 2.0 * h, 0.0
        rcap[a] = ra
        rcap[b] = rb
    if recycle:
        maxflow_reuse(inc_ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree,
                      orphans, marked, nm, is_marked)
    else:
        maxflow(inc_ptr, head, sister, rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans)
    for i in range(n):
        x[i] = x[i] and parent[i] != NO_PARENT and in_sink_tree[i]
        prev_labels[i] = labels[i]
    return x, nf, False
