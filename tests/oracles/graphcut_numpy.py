"""NumPy and SciPy oracles of the compiled α-expansion moves and cuts.

The NumPy form of the move construction of :mod:`hmrf.inference.graphcut_numba` (the
terms, the split, the fixing by dominance), and minimum cuts by SciPy's max-flow
(``scipy.sparse.csgraph.maximum_flow``, integer capacities: exact arithmetic) of the
graph and QPBO problems of :mod:`hmrf.inference.qpbo`. Vectorised over the edges, one
round of the dominance fixing per frontier: a different construction from the compiled
loops, checked against them in tests/test_expansion.py and tests/test_maxflow.py.
"""

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, maximum_flow


def split_terms(A, B, C, D):
    """``(unary_p, unary_q, half_lambda)`` of pairwise tables (qpbo's module docstring)."""
    half = 0.5 * (B + C - A - D)
    neg = np.flatnonzero(half < 0)
    noise = 1e-12 * (np.abs(A[neg]) + np.abs(B[neg]) + np.abs(C[neg]) + np.abs(D[neg]))
    half[neg[half[neg] >= -noise]] = 0.0  # submodular with equality, up to rounding
    return 0.5 * (D - A + C - B), 0.5 * (D - A + B - C), half


def terms(moves, labels, alpha):
    """``θ(0,0), θ(0,1), θ(1,0), θ(1,1)`` of every edge for the α-expansion of ``labels``
    (``moves``: an :class:`~hmrf.inference.expansion.ExpansionMoves`)."""
    a, b = labels[moves.p], labels[moves.q]
    wc, wk = moves.wc, moves.wk
    A, B, C, D = wc - wk * (a == b), wc - wk * (a == alpha), wc - wk * (b == alpha), wc - wk
    t = moves.tab
    if t.size:
        tc, i = moves.tab_cost, np.arange(t.size)
        A[t], B[t], C[t], D[t] = tc[i, a[t], b[t]], tc[i, a[t], alpha], tc[i, alpha, b[t]], tc[i, alpha, alpha]
    return A, B, C, D


def binary_problem(moves, labels, alpha):
    """The move's problem in split form: ``(nodes, u, ep, eq, half_lambda)`` over the free
    nodes (another label than ``alpha``, and ``alpha`` allowed)."""
    n = labels.shape[0]
    free = (labels != alpha) & moves.allowed[:, alpha]
    nodes = np.flatnonzero(free)
    A, B, C, D = terms(moves, labels, alpha)
    fp, fq = free[moves.p], free[moves.q]
    up, uq, half = split_terms(A, B, C, D)
    delta = np.zeros(n)
    delta[nodes] = moves.unary[nodes, alpha] - moves.unary[nodes, labels[nodes]]
    # a term with one free end is a unary term on it (the other end keeps x = 0)
    delta += np.bincount(moves.p, weights=np.where(fp, np.where(fq, up, C - A), 0.0), minlength=n)
    delta += np.bincount(moves.q, weights=np.where(fq, np.where(fp, uq, B - A), 0.0), minlength=n)
    both = np.flatnonzero(fp & fq)
    pos = np.cumsum(free) - 1
    return nodes, delta[nodes], pos[moves.p[both]], pos[moves.q[both]], half[both]


def change(moves, labels, alpha, x):
    """Penalised energy change of switching the nodes ``x`` of ``labels`` to ``alpha``."""
    A, B, C, D = terms(moves, labels, alpha)
    xp, xq = x[moves.p], x[moves.q]
    pair = np.where(xp, np.where(xq, D, C), np.where(xq, B, A)) - A
    return float((moves.unary[x, alpha] - moves.unary[x, labels[x]]).sum() + pair.sum())


def fix_dominated(u, p, q, half):
    """``(state, u_folded)``: -1 (free), 0 or 1 per variable of a split problem, fixed by
    dominance (``|u_i| > sum_e |half_e|`` over its terms, to the fixed point), and ``u``
    with the terms towards fixed variables folded in. Rounds over the frontier."""
    n, m = u.shape[0], p.shape[0]
    a = np.abs(half)
    s = np.bincount(p, weights=a, minlength=n) + np.bincount(q, weights=a, minlength=n)
    uu = np.asarray(u, dtype=np.float64).copy()
    state = np.full(n, -1, dtype=np.int64)
    ends = np.r_[p, q]
    order = np.argsort(ends, kind="stable")
    ptr = np.searchsorted(ends[order], np.arange(n + 1))
    term, other = np.r_[np.arange(m), np.arange(m)][order], np.r_[q, p][order]
    cand = np.arange(n)
    while cand.size:
        margin = 1e-9 * (s[cand] + np.abs(uu[cand]))
        v = np.where(uu[cand] - s[cand] > margin, 0, np.where(-uu[cand] - s[cand] > margin, 1, -1))
        fixed = cand[v >= 0]
        if not fixed.size:
            break
        state[fixed] = v[v >= 0]
        lo, hi = ptr[fixed], ptr[fixed + 1]
        cnt = hi - lo
        at = np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()))
        src, e, j = np.repeat(fixed, cnt), term[at], other[at]
        live = state[j] < 0
        e, j, src = e[live], j[live], src[live]
        h = half[e]
        s -= np.bincount(j, weights=np.abs(h), minlength=n)
        uu += np.bincount(j, weights=np.where(state[src] == 0, h, -h), minlength=n)
        cand = np.unique(j)
    return state, uu


def reduced_problem(moves, labels, alpha):
    """:func:`binary_problem` with the dominated variables fixed and removed:
    ``(forced, nodes, u, ep, eq, half_lambda)`` as ``graphcut_numba.move_problem``."""
    nodes, u, ep, eq, half = binary_problem(moves, labels, alpha)
    state, uu = fix_dominated(u, ep, eq, half)
    free = state < 0
    keep = free[ep] & free[eq]
    pos = np.cumsum(free) - 1
    return nodes[state == 1], nodes[free], uu[free], pos[ep[keep]], pos[eq[keep]], half[keep]


def min_cut(u, p, q, half, scale=2):
    """Sink side of the minimum cut of ``sum u x + sum half [x_p != x_q]`` (``half >= 0``)
    by SciPy's max-flow on capacities ``x scale`` (integers: ``u`` and ``half`` must be
    multiples of ``1 / scale``): the nodes with a residual path to the sink, the same
    for every maximum flow. Returns ``(x, cut value)``."""
    n = u.shape[0]
    s, t = n, n + 1
    cap = np.rint(np.r_[half, half, np.maximum(u, 0), np.maximum(-u, 0)] * scale).astype(np.int64)
    assert np.allclose(cap, np.r_[half, half, np.maximum(u, 0), np.maximum(-u, 0)] * scale)
    ids = np.arange(n)
    rows, cols = np.r_[p, q, np.full(n, s), ids], np.r_[q, p, ids, np.full(n, t)]
    graph = csr_matrix((cap, (rows, cols)), shape=(n + 2, n + 2))  # parallel arcs summed
    graph.sum_duplicates()
    flow = maximum_flow(graph, s, t).flow
    residual = csr_matrix(graph - flow)  # flow is antisymmetric: a reverse arc gets its value
    residual.eliminate_zeros()
    # nodes that reach t in the residual graph: those t reaches in the reversed graph
    reach = breadth_first_order(residual.T.tocsr(), t, directed=True, return_predecessors=False)
    x = np.zeros(n, dtype=bool)
    x[reach[reach < n]] = True
    return x, float(u @ x + half @ (x[p] != x[q]))


def solve_split(u, p, q, half, truncate=False):
    """``(x, labelled)`` of :func:`hmrf.inference.qpbo.solve_split` with SciPy's cuts: the
    graph cut, QPBO then the truncated cut of the unlabelled variables, or truncation."""
    n = u.shape[0]
    truncated = np.maximum(half, 0.0)
    if not (half < 0).any():
        return min_cut(u, p, q, half)[0], np.ones(n, dtype=bool)
    if truncate:
        return min_cut(u, p, q, truncated)[0], np.zeros(n, dtype=bool)
    non = half < 0
    side, _ = min_cut(np.r_[u, -u], np.r_[p, p + n], np.r_[np.where(non, q + n, q), np.where(non, q, q + n)],
                      np.r_[np.abs(half), np.abs(half)])
    labelled = side[:n] != side[n:]
    x = side[:n] & labelled
    rest = np.flatnonzero(~labelled)
    if rest.size:
        lp, lq = labelled[p], labelled[q]
        sign = np.where(x, -1.0, 1.0)
        d = u.copy()
        d += np.bincount(p[~lp & lq], weights=(half * sign[q])[~lp & lq], minlength=n)
        d += np.bincount(q[lp & ~lq], weights=(half * sign[p])[lp & ~lq], minlength=n)
        both = ~lp & ~lq
        pos = np.cumsum(~labelled) - 1
        x[rest] = min_cut(d[rest], pos[p[both]], pos[q[both]], truncated[both])[0]
    return x, labelled


def move(moves, labels, alpha, truncate=False):
    """The α-expansion move from ``labels`` as the engine makes it, from this module's
    problem and cuts: ``(new_labels, change)``. Submodular moves are cut whole; the
    others after dominance (QPBO) or whole (``truncate``)."""
    labels = np.asarray(labels, dtype=np.int64)
    x = np.zeros(labels.shape[0], dtype=bool)
    nodes, u, ep, eq, half = binary_problem(moves, labels, alpha)
    if not (half < 0).any():
        x[nodes] = min_cut(u, ep, eq, half)[0]
    elif truncate:
        x[nodes] = solve_split(u, ep, eq, half, truncate=True)[0]
    else:
        forced, nodes, u, ep, eq, half = reduced_problem(moves, labels, alpha)
        x[forced] = True
        x[nodes] = solve_split(u, ep, eq, half)[0]
    new = labels.copy()
    new[x] = alpha
    return new, change(moves, labels, alpha, x)


def expansion(moves, labels, k, max_sweeps=100):
    """α-expansion in sweeps over ``0..k-1`` from ``labels`` with :func:`move`, keeping
    moves that lower the energy, until a sweep changes nothing: the labelling."""
    for _ in range(max_sweeps):
        changed = False
        for alpha in range(k):
            new, delta = move(moves, labels, alpha)
            if delta < -1e-12 * (1.0 + abs(moves.energy(labels))):
                labels, changed = new, True
        if not changed:
            break
    return labels
