"""The α-expansion move's binary problem and its cut, compiled with numba.

For one move ``(labels, α)`` of :class:`~hmrf.inference.expansion.ExpansionMoves`: the
free nodes (another label than ``α``, and ``α`` allowed), their unary differences
``E(x_i = 1) - E(x_i = 0)`` with every term that touches one free node folded in, and
the split ``λ/2 [x_p != x_q]`` of the terms between two free nodes (the split form of
:mod:`~hmrf.inference.qpbo`), built in one pass over the edges and cut
(:func:`move_cut` when every term is submodular, :func:`qpbo_move` otherwise).
``tests/oracles/graphcut_numpy.py`` holds their NumPy form.
"""

from __future__ import annotations

import numba
import numpy as np

from .._numba_cache import refresh
from . import maxflow_numba, qpbo
from .maxflow_numba import NO_PARENT, maxflow, maxflow_reuse
from .qpbo import solve_split

# the moves compile in the max-flow of maxflow_numba and the QPBO of qpbo
refresh(__file__, maxflow_numba.__file__, qpbo.__file__)

__all__ = ["components", "move_change", "move_cut", "move_problem", "qpbo_move"]


@numba.njit(cache=True, nogil=True, inline="always")
def _terms(e, a, b, alpha, wc, wk, tab_of, tab_cost):
    """``θ(0,0), θ(0,1), θ(1,0), θ(1,1)`` of edge ``e`` with end labels ``a``, ``b``."""
    t = tab_of[e]
    if t >= 0:
        return tab_cost[t, a, b], tab_cost[t, a, alpha], tab_cost[t, alpha, b], tab_cost[t, alpha, alpha]
    c, s = wc[e], wk[e]
    return (c - s if a == b else c), (c - s if a == alpha else c), (c - s if b == alpha else c), c - s


@numba.njit(cache=True, nogil=True)
def move_change(labels, alpha, x, unary, p, q, wc, wk, tab_of, tab_cost):
    """Energy change of switching the nodes ``x`` (bool) of ``labels`` to ``alpha``."""
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
def components(n, p, q):
    """Connected components of the graph with edges ``(p[e], q[e])``: ``(n_components,
    component of every node)``, numbered in the order of their smallest node as
    :meth:`~hmrf.PairwiseGraph.components` numbers them (a union–find with path halving,
    without a sparse matrix; ``inference="auto"`` splits its graphs with it)."""
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
    """Fix the variables that every minimiser fixes, by dominance.

    Switching ``x_f`` changes ``E(x) = const + sum_f u_f x_f + sum_e h_e [x_p != x_q]``
    by ``±u_f`` plus at most ``s_f = sum_{e ∋ f} |h_e|``: ``u_f > s_f`` forces ``x_f = 0``
    and ``u_f < -s_f`` forces ``x_f = 1`` in every minimiser (cf. Kovtun 2003; the
    "reduce" step of Alahari, Kohli & Torr 2008; a relative margin of ``1e-9`` leaves
    near-ties to the cut). A fixed variable's terms become unary terms of its free
    neighbours (``u``, ``s`` updated in place), which are checked again: the fixed point
    does not depend on the order. Variable ``f`` is node ``node_of[f]`` (node ``i``
    variable ``var_of[i]``), edge ``e`` a term ``half[e] [x_p != x_q]`` (none where NaN).
    Returns the state of every variable: -1 (free), 0 or 1.
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
def move_problem(labels, alpha, unary, allowed_alpha, p, q, wc, wk, tab_of, tab_cost, inc_ptr, inc_edge,
                 reduce):
    """The α-expansion of ``labels`` in split form (:mod:`~hmrf.inference.qpbo`):
    ``(forced, nodes, u, ep, eq, half_lambda, non_submodular)``.

    The free nodes (another label than ``alpha``, and ``alpha`` allowed) have unary
    differences ``E(x_i = 1) - E(x_i = 0)``, every term with one free end folded in;
    with ``reduce`` those that every minimiser fixes by dominance
    (``_fix_by_dominance``) are taken out, the ones that switch in ``forced``.
    ``nodes`` are the free nodes left, ``u`` their unary differences, ``ep, eq`` and
    ``half_lambda`` the terms between two of them (positions in ``nodes``), and
    ``non_submodular`` whether a term of the move is not submodular. ``wc, wk, tab_of,
    tab_cost``: the edge costs of :class:`~hmrf.inference.expansion.ExpansionMoves`;
    ``inc_ptr, inc_edge``: the incidence of :func:`~.maxflow_numba.arc_layout`.
    """
    n, m = labels.shape[0], p.shape[0]
    pos = np.full(n, -1, dtype=np.int64)  # of every node among the free ones, or -1
    nf = 0
    for i in range(n):
        if labels[i] != alpha and allowed_alpha[i]:
            pos[i] = nf
            nf += 1
    node_of = np.empty(nf, dtype=np.int64)
    u = np.empty(nf)
    for i in range(n):
        if pos[i] >= 0:
            node_of[pos[i]] = i
            u[pos[i]] = unary[i, alpha] - unary[i, labels[i]]
    s = np.zeros(nf)  # the coupling sum |half| of every free node
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
                h = 0.0  # rounding noise on a term submodular with equality
            non_sub |= h < 0.0
            half[e] = h
            u[fi] += 0.5 * (D - A + C - B)
            u[fj] += 0.5 * (D - A + B - C)
            s[fi] += abs(h)
            s[fj] += abs(h)
        elif fi >= 0:  # a term with one free end is a unary term on it
            u[fi] += C - A
        else:
            u[fj] += B - A
    if reduce:
        state = _fix_by_dominance(u, s, half, p, q, pos, node_of, inc_ptr, inc_edge)
    else:
        state = np.full(nf, -1, dtype=np.int64)
    left = np.flatnonzero(state < 0)
    r = np.full(nf, -1, dtype=np.int64)  # the position of every free variable among those left
    r[left] = np.arange(left.shape[0])
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
    return node_of[state == 1], node_of[left], u[left], ep[:nb], eq[:nb], hl[:nb], non_sub


@numba.njit(cache=True, nogil=True)
def qpbo_move(labels, alpha, unary, allowed_alpha, p, q, wc, wk, tab_of, tab_cost, inc_ptr, inc_edge,
              truncate):
    """A move with terms that are not submodular: ``(x, n_free, n_unlabelled)``.

    QPBO on the problem left after dominance (:func:`move_problem`), or with
    ``truncate`` the truncated cut of the whole problem
    (:func:`~hmrf.inference.qpbo.solve_split`). ``x``: the nodes that switch to
    ``alpha`` (bool, all nodes); ``n_free``: the free nodes dominance did not keep (no
    cut when 0); ``n_unlabelled``: those QPBO left unlabelled (all under truncation).
    """
    forced, nodes, u, ep, eq, half, _ = move_problem(labels, alpha, unary, allowed_alpha, p, q, wc, wk,
                                                    tab_of, tab_cost, inc_ptr, inc_edge, not truncate)
    x = np.zeros(labels.shape[0], dtype=np.bool_)
    x[forced] = True
    sub, labelled = solve_split(u, ep, eq, half, truncate)
    x[nodes] = sub
    return x, forced.shape[0] + nodes.shape[0], nodes.shape[0] - np.count_nonzero(labelled)


@numba.njit(cache=True, nogil=True, inline="always")
def _mark(i, marked, is_marked, nm):
    """Add node ``i`` to the ``nm`` marked nodes unless it is one; the new count."""
    if not is_marked[i]:
        is_marked[i] = True
        marked[nm] = i
        nm += 1
    return nm


@numba.njit(cache=True, nogil=True)
def move_cut(labels, alpha, unary, allowed_alpha, p, q, wc, wk, tab_of, tab_cost, inc_ptr, head, sister,
             arc_pq, arc_qp, rcap, trcap, parent, stamp, dist, in_sink_tree, prev_labels, next_active,
             orphans, marked, is_marked, recycle):
    """A move whose terms are all submodular, cut: ``(x, n_free, non_submodular)``.

    The move's problem (:func:`move_problem`'s terms, unreduced) is written into the
    capacities ``rcap``, ``trcap`` of the E-step graph's arc layout (``inc_ptr, head,
    sister, arc_pq, arc_qp``: :func:`~.maxflow_numba.arc_layout`) and cut by
    :func:`~.maxflow_numba.maxflow` (``parent`` to ``orphans``: its per-node arrays);
    nodes that are not free keep zero capacities and stay on the source side. With
    ``recycle`` the arrays hold the residual network and trees of this label's last cut,
    built from ``prev_labels`` (Kohli & Torr 2007, §3; Alahari, Kohli & Torr 2010, §4):
    only what changed is rewritten (a lowered arc capacity below its flow sends the
    excess through the terminals, a reparametrisation), the nodes touched are marked
    (``is_marked`` all false on entry and return) and
    :func:`~.maxflow_numba.maxflow_reuse` resumes from them: the same sink side as from
    zero flow, up to rounding where the minimum is tied. ``x``: the nodes that switch
    (bool, all nodes); ``n_free``: the free nodes. When a term is not submodular no cut
    runs, ``x`` is empty and ``rcap``, ``trcap`` are part-written.
    """
    m, n = p.shape[0], labels.shape[0]
    x = (labels != alpha) & allowed_alpha  # the free nodes until the cut
    nf = np.count_nonzero(x)
    if nf == 0:
        return x, nf, False
    nm = np.int64(0)  # int64 from the start: one compiled maxflow_reuse
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
        # what the edge adds to its ends' terminal capacities (ti, tj) and its weight h;
        # with recycle, their change since the last cut (written out: a tuple-returning
        # helper here compiles to code several times slower)
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
    prev_labels[:] = labels
    return x & (parent != NO_PARENT) & in_sink_tree, nf, False
