"""The compiled Boykov–Kolmogorov max-flow (hmrf.inference.maxflow_numba) and the
compiled α-expansion move built on it (graphcut_numba.move_cut).

Checked against enumeration of every cut on small graphs and against PyMaxflow, the
NumPy path's max-flow (the same algorithm behind a C++ binding), on larger ones.
"""

import itertools

import numpy as np
import pytest

from hmrf import PairwiseGraph

pytest.importorskip("numba")
maxflow_lib = pytest.importorskip("maxflow")

from hmrf.inference.expansion import AlphaExpansion, ExpansionMoves  # noqa: E402
from hmrf.inference.graphcut_numba import incidence, move_cut, move_problem_reduced  # noqa: E402
from hmrf.inference.maxflow_numba import MaxflowWorkspace, arc_layout, maxflow, sink_side  # noqa: E402


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
        x, n_free, non_sub = move_cut(*args, *arcs, *work.arrays())
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
