"""The compiled Boykov–Kolmogorov max-flow (hmrf.inference.maxflow_numba) and the
compiled α-expansion move built on it (graphcut_numba.move_cut).

Checked against enumeration of every cut on small graphs and against PyMaxflow, the
NumPy path's max-flow (the same algorithm behind a C++ binding), on larger ones. The
recycled flows and search trees (maxflow_reuse, move_cut with recycle) are checked
against cuts from zero flow: with integer capacities the arithmetic is exact and the
sink side, the nodes with a residual path to the sink, is the same for every maximum flow.
"""

import itertools

import numpy as np
import pytest

from hmrf import PairwiseGraph

pytest.importorskip("numba")
maxflow_lib = pytest.importorskip("maxflow")

from hmrf.inference.expansion import AlphaExpansion, ExpansionMoves  # noqa: E402
from hmrf.inference.graphcut_numba import incidence, move_cut, move_problem_reduced  # noqa: E402
from hmrf.inference.maxflow_numba import (  # noqa: E402
    MaxflowWorkspace,
    arc_layout,
    maxflow,
    maxflow_reuse,
    sink_side,
)


def split_problem(rng, n, m, zeros=0.0):
    """``E(x) = sum u x + sum half [x_p != x_q]`` with ``half >= 0`` (a submodular
    binary problem); ``zeros``: the share of terms and unary differences set to 0
    (ties, and arcs a cut must treat as absent)."""
    u = rng.normal(size=n)
    first = rng.integers(0, n, size=m)
    p, q = first, (first + rng.integers(1, n, size=m)) % n
    half = rng.random(m) * 1.5
    u[rng.random(n) < zeros] = 0.0
    half[rng.random(m) < zeros] = 0.0
    return u, p.astype(np.int64), q.astype(np.int64), half


def cut_value(x, u, p, q, half):
    return float(u @ x + half @ (x[p] != x[q]))


def compiled_cut(u, p, q, half, work=None):
    """(flow, sink side) of the compiled max-flow; ``work`` reused when given."""
    n = u.shape[0]
    ptr, edge = incidence(n, p, q)
    head, sister, arc_pq, arc_qp = arc_layout(n, p, q, ptr, edge)
    work = work or MaxflowWorkspace(n, 2 * p.size)
    work.rcap[arc_pq] = half
    work.rcap[arc_qp] = half
    work.trcap[:] = u
    flow = maxflow(ptr, head, sister, *work.arrays())
    return flow, sink_side(work.parent, work.in_sink_tree)


def pymaxflow_cut(u, p, q, half):
    n = u.shape[0]
    g = maxflow_lib.GraphFloat(n, p.size)
    g.add_nodes(n)
    g.add_edges(p, q, half, half)
    g.add_grid_tedges(np.arange(n), np.maximum(u, 0.0), np.maximum(-u, 0.0))
    g.maxflow()
    return g.get_grid_segments(np.arange(n))


@pytest.mark.parametrize("seed", range(40))
def test_the_cut_is_a_minimum_cut_by_enumeration(seed):
    rng = np.random.default_rng(900 + seed)
    n = int(rng.integers(1, 11))
    u, p, q, half = split_problem(rng, n, int(rng.integers(0, 3 * n + 1)) if n > 1 else 0, zeros=0.2)
    flow, x = compiled_cut(u, p, q, half)
    every = np.array(list(itertools.product([False, True], repeat=n)))
    best = min(cut_value(y, u, p, q, half) for y in every)
    assert cut_value(x, u, p, q, half) == pytest.approx(best, abs=1e-12)
    # max-flow = min-cut: the flow plus the constant sum(min(u, 0)) of the split
    assert flow + np.minimum(u, 0.0).sum() == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_the_cut_has_pymaxflows_value_on_larger_graphs(seed):
    rng = np.random.default_rng(950 + seed)
    n = 3000
    u, p, q, half = split_problem(rng, n, 4 * n, zeros=0.1 * (seed % 2))
    _, x = compiled_cut(u, p, q, half)
    y = pymaxflow_cut(u, p, q, half)
    assert cut_value(x, u, p, q, half) == pytest.approx(cut_value(y, u, p, q, half), rel=1e-12, abs=1e-9)


def test_a_workspace_reused_for_other_capacities_gives_each_graphs_cut():
    # the same arc layout and scratch arrays, capacities rewritten between cuts: no
    # state of one cut leaks into the next
    rng = np.random.default_rng(7)
    n, m = 400, 1200
    u, p, q, half = split_problem(rng, n, m)
    work = MaxflowWorkspace(n, 2 * m)
    for _ in range(5):
        u2 = rng.normal(size=n) * rng.random()
        half2 = np.where(rng.random(m) < 0.3, 0.0, rng.random(m))
        _, x = compiled_cut(u2, p, q, half2, work)
        y = pymaxflow_cut(u2, p, q, half2)
        assert cut_value(x, u2, p, q, half2) == pytest.approx(cut_value(y, u2, p, q, half2), abs=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_the_compiled_move_is_the_reduced_problems_minimum_cut(seed):
    # move_cut (problem and cut on the E-step graph's arc layout) switches a
    # set of nodes whose energy change is the minimum over the reduced problem, as
    # PyMaxflow's cut of move_problem_reduced's problem finds it
    rng = np.random.default_rng(980 + seed)
    n, k, m = 300, 4, 900
    unary = rng.random((n, k)) * 2
    first = rng.integers(0, n, size=m)
    edges = np.c_[first, (first + rng.integers(1, n, size=m)) % n]
    g = PairwiseGraph.potts(n, edges, rng.random(m) * 0.8, np.ones(m, dtype=np.int8))
    moves = ExpansionMoves(unary, g, kernel="numba")
    ptr, edge = incidence(n, moves.p, moves.q)
    arcs = arc_layout(n, moves.p, moves.q, ptr, edge)
    work = MaxflowWorkspace(n, 2 * m)
    labels = rng.integers(0, k, n)
    for alpha in range(k):
        args = (labels, alpha, moves.unary, moves._alpha_allowed[alpha], moves.p, moves.q, moves.wc, moves.wk,
                moves.tab_of, moves._tab_cost, ptr, edge)
        x, n_free, non_sub = move_cut(*args, *arcs, *work.arrays(), np.empty(n, dtype=np.int64), False,
                                      np.empty(n, dtype=np.int64), np.zeros(n, dtype=bool))
        assert not non_sub and n_free == np.count_nonzero(labels != alpha)
        assert not x[labels == alpha].any()
        forced, nodes, u, ep, eq, half, _ = move_problem_reduced(*args)
        y = np.zeros(n, dtype=bool)
        y[forced] = True
        if nodes.size:
            y[nodes] = pymaxflow_cut(u, ep, eq, half)
        assert moves.change(labels, alpha, x) == pytest.approx(moves.change(labels, alpha, y), abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_compiled_and_numpy_expansion_reach_the_same_energy_on_a_grid(seed):
    # a 4-neighbour grid with Potts must-links: every move exact in both kernels, the
    # compiled one on its own max-flow, the NumPy one on PyMaxflow
    rng = np.random.default_rng(990 + seed)
    h, w, k = 12, 15, 3
    idx = np.arange(h * w).reshape(h, w)
    edges = np.vstack([np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()], np.c_[idx[:-1].ravel(), idx[1:].ravel()]])
    unary = rng.random((h * w, k))
    g = PairwiseGraph.potts(h * w, edges, np.full(len(edges), 0.3), np.ones(len(edges), dtype=np.int8))
    a = AlphaExpansion(kernel="numba").map(unary, g, rng=0)
    b = AlphaExpansion(kernel="numpy").map(unary, g, rng=0)
    assert a.info["exact_moves"] and b.info["exact_moves"]
    assert a.energy == pytest.approx(b.energy, rel=1e-12)



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
        moves = ExpansionMoves(unary, g, kernel="numba")
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
    ptr, edge = incidence(n, p, q)
    head, sister, arc_pq, arc_qp = arc_layout(n, p, q, ptr, edge)
    u = rng.integers(-6, 7, size=n).astype(float)
    half = rng.integers(0, 5, size=m).astype(float)
    work = MaxflowWorkspace(n, 2 * m)
    work.rcap[arc_pq], work.rcap[arc_qp], work.trcap[:] = half, half, u
    maxflow(ptr, head, sister, *work.arrays())
    marked, is_marked = np.empty(n, dtype=np.int64), np.zeros(n, dtype=bool)
    for _ in range(6):
        changed = set()
        new_u, new_half = u.copy(), half.copy()
        for i in rng.choice(n, size=int(rng.integers(0, n // 2 + 1)), replace=False):
            new_u[i] = float(rng.integers(-6, 7))
        for e in rng.choice(m, size=int(rng.integers(0, m // 2 + 1)), replace=False):
            new_half[e] = float(rng.integers(0, 5))
        for i in np.flatnonzero(new_u != u):
            work.trcap[i] += new_u[i] - u[i]
            changed.add(int(i))
        for e in np.flatnonzero(new_half != half):
            a, b, i, j = arc_pq[e], arc_qp[e], p[e], q[e]
            ra, rb = work.rcap[a] + new_half[e] - half[e], work.rcap[b] + new_half[e] - half[e]
            if ra < 0:
                work.trcap[i] -= ra
                work.trcap[j] += ra
                ra, rb = 0.0, 2 * new_half[e]
            elif rb < 0:
                work.trcap[j] -= rb
                work.trcap[i] += rb
                ra, rb = 2 * new_half[e], 0.0
            work.rcap[a], work.rcap[b] = ra, rb
            changed |= {int(i), int(j)}
        u, half = new_u, new_half
        marked[:len(changed)] = sorted(changed)
        is_marked[marked[:len(changed)]] = True
        maxflow_reuse(ptr, head, sister, *work.arrays(), marked, len(changed), is_marked)
        assert not is_marked.any()
        assert (work.rcap >= 0).all()
        x = sink_side(work.parent, work.in_sink_tree)
        np.testing.assert_array_equal(x, residual_sink_side(ptr, head, sister, work.rcap, work.trcap))
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
def test_recycled_compiled_moves_and_numpy_moves_agree_along_expansion(seed):
    # the compiled twin (recycled flows, compiled max-flow) and the NumPy kernel
    # (PyMaxflow from scratch) give moves of the same energy change, move after move,
    # on real-valued costs; must-links and metric tables (exact cuts in both)
    rng = np.random.default_rng(1400 + seed)
    n, k, m = 400, 4, 1200
    first = rng.integers(0, n, size=m)
    edges = np.c_[first, (first + rng.integers(1, n, size=m)) % n]
    unary = rng.random((n, k)) * 2
    g = PairwiseGraph.potts(n, edges, rng.random(m) * 0.6, np.ones(m, dtype=np.int8))
    compiled, numpy_moves = ExpansionMoves(unary, g, kernel="numba"), ExpansionMoves(unary, g, kernel="numpy")
    labels = np.argmin(unary, axis=1)
    for _ in range(3):
        for alpha in range(k):
            new, change, _ = compiled.move(labels, alpha)
            _, change_np, _ = numpy_moves.move(labels, alpha)
            assert change == pytest.approx(change_np, abs=1e-9) and change <= 1e-12
            labels = new
