"""The compiled Boykov–Kolmogorov max-flow (hmrf.inference.maxflow_numba) and the
α-expansion moves built on it (graphcut_numba.move_cut).

Checked against enumeration of every cut on small graphs and against SciPy's max-flow
(tests/oracles/graphcut_numpy.py, integer capacities) on larger ones. The recycled
flows and search trees (maxflow_reuse, move_cut with recycle) are checked against cuts
from zero flow: with integer capacities the arithmetic is exact and the sink side, the
nodes with a residual path to the sink, is the same for every maximum flow.
"""

import itertools

import numpy as np
import pytest
from oracles import graphcut_numpy as oracle

from hmrf import PairwiseGraph
from hmrf.inference.expansion import AlphaExpansion, ExpansionMoves
from hmrf.inference.maxflow_numba import NO_PARENT, arc_layout, maxflow, maxflow_reuse, min_cut


def split_problem(rng, n, m, zeros=0.0, integer=False):
    """``E(x) = sum u x + sum half [x_p != x_q]`` with ``half >= 0`` (a submodular
    binary problem); ``zeros``: the share of terms and unary differences set to 0
    (ties, and arcs a cut must treat as absent); ``integer``: integer costs."""
    u = rng.integers(-6, 7, size=n).astype(float) if integer else rng.normal(size=n)
    first = rng.integers(0, n, size=m)
    p, q = first, (first + rng.integers(1, n, size=m)) % n
    half = rng.integers(0, 5, size=m).astype(float) if integer else rng.random(m) * 1.5
    u[rng.random(n) < zeros] = 0.0
    half[rng.random(m) < zeros] = 0.0
    return u, p.astype(np.int64), q.astype(np.int64), half


def cut_value(x, u, p, q, half):
    return float(u @ x + half @ (x[p] != x[q]))


def workspace(n, m):
    """``rcap, trcap, parent, next_active, stamp, dist, in_sink_tree, orphans`` of a cut."""
    return (np.zeros(2 * m), np.zeros(n), *(np.empty(n, dtype=np.int64) for _ in range(4)),
            np.empty(n, dtype=bool), np.empty(n, dtype=np.int64))


def sink_side(work):
    return (work[2] != NO_PARENT) & work[6]


def compiled_cut(u, p, q, half, work=None):
    """(flow, sink side) of the compiled max-flow; ``work`` reused when given."""
    n = u.shape[0]
    ptr, _, head, sister, arc_pq, arc_qp = arc_layout(n, p, q)
    work = work or workspace(n, p.size)
    work[0][arc_pq] = half
    work[0][arc_qp] = half
    work[1][:] = u
    flow = maxflow(ptr, head, sister, *work)
    return flow, sink_side(work)


@pytest.mark.parametrize("seed", range(40))
def test_the_cut_is_a_minimum_cut_by_enumeration(seed):
    rng = np.random.default_rng(900 + seed)
    n = int(rng.integers(1, 11))
    u, p, q, half = split_problem(rng, n, int(rng.integers(0, 3 * n + 1)) if n > 1 else 0, zeros=0.2)
    flow, x = compiled_cut(u, p, q, half)
    every = np.array(list(itertools.product([False, True], repeat=n)))
    best = min(cut_value(y, u, p, q, half) for y in every)
    assert cut_value(x, u, p, q, half) == pytest.approx(best, abs=1e-12)
    assert cut_value(min_cut(u, p, q, half), u, p, q, half) == pytest.approx(best, abs=1e-12)
    # max-flow = min-cut: the flow plus the constant sum(min(u, 0)) of the split
    assert flow + np.minimum(u, 0.0).sum() == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_the_cut_is_scipys_minimum_cut_on_larger_graphs(seed):
    # integer capacities: the sink side is the same for every maximum flow, SciPy's too
    rng = np.random.default_rng(950 + seed)
    n = 3000
    u, p, q, half = split_problem(rng, n, 4 * n, zeros=0.1 * (seed % 2), integer=True)
    flow, x = compiled_cut(u, p, q, half)
    y, value = oracle.min_cut(u, p, q, half)
    np.testing.assert_array_equal(x, y)
    assert cut_value(x, u, p, q, half) == value == flow + np.minimum(u, 0.0).sum()
    np.testing.assert_array_equal(min_cut(u, p, q, half), y)


def test_arrays_reused_for_other_capacities_give_each_graphs_cut():
    # the same arc layout and scratch arrays, capacities rewritten between cuts: no
    # state of one cut leaks into the next
    rng = np.random.default_rng(7)
    n, m = 400, 1200
    u, p, q, half = split_problem(rng, n, m)
    work = workspace(n, m)
    for _ in range(5):
        u2 = rng.integers(-8, 9, size=n).astype(float)
        half2 = np.where(rng.random(m) < 0.3, 0.0, rng.integers(0, 4, size=m))
        _, x = compiled_cut(u2, p, q, half2, work)
        np.testing.assert_array_equal(x, oracle.min_cut(u2, p, q, half2)[0])


def integer_must_links(rng, n, k, m, max_weight=8):
    first = rng.integers(0, n, size=m)
    edges = np.c_[first, (first + rng.integers(1, n, size=m)) % n]
    unary = rng.integers(0, 20, size=(n, k)).astype(float)
    return unary, PairwiseGraph.potts(n, edges, rng.integers(0, max_weight, size=m).astype(float),
                                      np.ones(m, dtype=np.int8))


@pytest.mark.parametrize("seed", range(10))
def test_a_compiled_move_is_scipys_minimum_cut_of_the_numpy_problem(seed):
    # move_cut (problem and cut on the E-step graph's arc layout) switches the sink side
    # of SciPy's cut of the move's problem built by NumPy (integer costs: one sink side)
    rng = np.random.default_rng(980 + seed)
    n, k = 300, 4
    unary, g = integer_must_links(rng, n, k, 900)
    moves = ExpansionMoves(unary, g, recycle=False)
    labels = rng.integers(0, k, n)
    for alpha in range(k):
        new, change, cut = moves.move(labels, alpha)
        assert cut.exact and not (new != labels)[labels == alpha].any()
        expected, expected_change = oracle.move(moves, labels, alpha)
        np.testing.assert_array_equal(new, expected)
        assert change == expected_change


@pytest.mark.parametrize("seed", range(6))
def test_expansion_on_a_grid_is_the_numpy_and_scipy_expansion(seed):
    # a 4-neighbour grid with Potts must-links: every move exact, the same labelling as
    # the oracle's sweeps (NumPy problems, SciPy cuts; integer costs)
    rng = np.random.default_rng(990 + seed)
    h, w, k = 12, 15, 3
    idx = np.arange(h * w).reshape(h, w)
    edges = np.vstack([np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()], np.c_[idx[:-1].ravel(), idx[1:].ravel()]])
    unary = rng.integers(0, 30, size=(h * w, k)).astype(float)
    g = PairwiseGraph.potts(h * w, edges, np.full(len(edges), 9.0), np.ones(len(edges), dtype=np.int8))
    res = AlphaExpansion().map(unary, g, rng=0)
    expected = oracle.expansion(ExpansionMoves(unary, g), np.argmin(unary, axis=1), k)
    assert res.info["exact_moves"]
    np.testing.assert_array_equal(res.labels, expected)
    assert res.energy == g.energy(expected, unary)


def test_e_steps_on_one_graph_share_its_arc_layout_and_match_fresh_graphs():
    # EM solves the same graph every E-step: the arc layout is built once and cached on
    # the graph, and solves on the cached layout give what solves on fresh graphs give
    from hmrf.inference.expansion import ARC_LAYOUT

    rng = np.random.default_rng(11)
    n, k, m = 500, 4, 1500
    first = rng.integers(0, n, size=m)
    edges = np.c_[first, (first + rng.integers(1, n, size=m)) % n]
    weight = rng.random(m)

    def graph():
        return PairwiseGraph.potts(n, edges, weight, np.ones(m, dtype=np.int8))

    g = graph()
    layout = None
    for _ in range(3):
        unary = rng.random((n, k)) * 2
        moves = ExpansionMoves(unary, g)
        labels = np.argmin(unary, axis=1)
        for alpha in range(k):
            labels, _, _ = moves.move(labels, alpha)
        layout = layout or g.cache.peek(ARC_LAYOUT)
        assert layout is not None and g.cache.peek(ARC_LAYOUT) is layout
        shared = AlphaExpansion().map(unary, g, rng=0)
        fresh = AlphaExpansion().map(unary, graph(), rng=0)
        np.testing.assert_array_equal(shared.labels, fresh.labels)


def residual_sink_side(ptr, head, sister, rcap, trcap):
    """The nodes with a residual path to the sink (a breadth-first search backwards)."""
    reach = trcap < 0
    stack = list(np.flatnonzero(reach))
    while stack:
        i = stack.pop()
        for a in range(ptr[i], ptr[i + 1]):
            j = head[a]
            if not reach[j] and rcap[sister[a]] > 0:  # the arc j -> i
                reach[j] = True
                stack.append(j)
    return reach


@pytest.mark.parametrize("seed", range(30))
def test_reused_trees_after_capacity_changes_give_the_cut_from_zero_flow(seed):
    # maxflow_reuse on the residual network and trees of the last cut, after the
    # capacities of some nodes and arcs changed (Kohli & Torr's update: an arc's
    # residual grows by its capacity change, a flow above the new capacity is lowered
    # and its excess sent through the terminals), cuts what a fresh max-flow cuts
    rng = np.random.default_rng(1200 + seed)
    n = int(rng.integers(2, 60))
    m = int(rng.integers(1, 4 * n))
    first = rng.integers(0, n, size=m)
    p, q = first, (first + rng.integers(1, n, size=m)) % n
    ptr, _, head, sister, arc_pq, arc_qp = arc_layout(n, p, q)
    u = rng.integers(-6, 7, size=n).astype(float)
    half = rng.integers(0, 5, size=m).astype(float)
    work = workspace(n, m)
    rcap, trcap = work[:2]
    rcap[arc_pq], rcap[arc_qp], trcap[:] = half, half, u
    maxflow(ptr, head, sister, *work)
    marked, is_marked = np.empty(n, dtype=np.int64), np.zeros(n, dtype=bool)
    for _ in range(6):
        changed = set()
        new_u, new_half = u.copy(), half.copy()
        for i in rng.choice(n, size=int(rng.integers(0, n // 2 + 1)), replace=False):
            new_u[i] = float(rng.integers(-6, 7))
        for e in rng.choice(m, size=int(rng.integers(0, m // 2 + 1)), replace=False):
            new_half[e] = float(rng.integers(0, 5))
        for i in np.flatnonzero(new_u != u):
            trcap[i] += new_u[i] - u[i]
            changed.add(int(i))
        for e in np.flatnonzero(new_half != half):
            a, b, i, j = arc_pq[e], arc_qp[e], p[e], q[e]
            ra, rb = rcap[a] + new_half[e] - half[e], rcap[b] + new_half[e] - half[e]
            if ra < 0:
                trcap[i] -= ra
                trcap[j] += ra
                ra, rb = 0.0, 2 * new_half[e]
            elif rb < 0:
                trcap[j] -= rb
                trcap[i] += rb
                ra, rb = 2 * new_half[e], 0.0
            rcap[a], rcap[b] = ra, rb
            changed |= {int(i), int(j)}
        u, half = new_u, new_half
        marked[:len(changed)] = sorted(changed)
        is_marked[marked[:len(changed)]] = True
        maxflow_reuse(ptr, head, sister, *work, marked, len(changed), is_marked)
        assert not is_marked.any()
        assert (rcap >= 0).all()
        x = sink_side(work)
        np.testing.assert_array_equal(x, residual_sink_side(ptr, head, sister, rcap, trcap))
        _, fresh = compiled_cut(u, p, q, half)
        np.testing.assert_array_equal(x, fresh)


@pytest.mark.parametrize("seed", range(12))
def test_recycled_moves_switch_the_nodes_that_moves_from_zero_flow_switch(seed):
    # ExpansionMoves recycles every label's flow and trees between its moves; with
    # integer costs every move switches exactly the nodes of the move from zero flow,
    # along a walk of labellings that mixes the moves' results and random changes
    rng = np.random.default_rng(1300 + seed)
    n, k = int(rng.integers(5, 250)), int(rng.integers(2, 6))
    m = int(rng.integers(n, 4 * n))
    first = rng.integers(0, n, size=m)
    edges = np.c_[first, (first + rng.integers(1, n, size=m)) % n]
    unary = rng.integers(0, 20, size=(n, k)).astype(float)
    g = PairwiseGraph.potts(n, edges, rng.integers(0, 8, size=m).astype(float), np.ones(m, dtype=np.int8))
    recycled, fresh = ExpansionMoves(unary, g), ExpansionMoves(unary, g, recycle=False)
    labels = rng.integers(0, k, n)
    for _ in range(8 * k):
        alpha = int(rng.integers(k))
        new, change, cut = recycled.move(labels, alpha)
        new_f, change_f, _ = fresh.move(labels, alpha)
        np.testing.assert_array_equal(new, new_f)
        assert change == change_f and change <= 0.0  # x = 0 is a cut: a move never raises the energy
        if rng.random() < 0.5:
            labels = new
        else:
            labels = labels.copy()
            labels[rng.integers(0, n, size=int(rng.integers(1, 5)))] = rng.integers(0, k)


@pytest.mark.parametrize("seed", range(6))
def test_recycled_moves_along_expansion_are_the_numpy_and_scipy_moves(seed):
    # recycled flows along a run of sweeps give, move after move, the oracle's move
    # from scratch (NumPy problem, SciPy cut; integer costs)
    rng = np.random.default_rng(1400 + seed)
    n, k = 400, 4
    unary, g = integer_must_links(rng, n, k, 1200, max_weight=6)
    moves = ExpansionMoves(unary, g)
    labels = np.argmin(unary, axis=1)
    for _ in range(3):
        for alpha in range(k):
            new, change, _ = moves.move(labels, alpha)
            expected, expected_change = oracle.move(moves, labels, alpha)
            np.testing.assert_array_equal(new, expected)
            assert change == expected_change <= 0.0
            labels = new
