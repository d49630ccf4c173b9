"""TRWS (Kolmogorov 2006): compiled passes against the NumPy ones, and the algorithm's properties.

The bound is checked against enumeration (bound <= optimum <= energy), its monotonicity
iteration by iteration, exactness on trees, and the stopping rules.
"""

import numpy as np
import pytest
from mrf_problems import brute_force, random_problem, random_tree

from hmrf import PairwiseGraph
from hmrf.inference import TRWS, BeliefPropagation, ExactMILP, LPRelaxation, get_engine
from hmrf.inference.bp.messages import big_cost
from hmrf.inference.bp.trws import trws_layout
from hmrf.inference.bp.trws_numpy import backward_pass, edge_costs, forward_pass


def grid_problem(rng, h, w, k, lam):
    """A 4-neighbour grid of must-links (weight ``lam``) with random unary costs."""
    idx = np.arange(h * w).reshape(h, w)
    edges = np.r_[np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()], np.c_[idx[:-1].ravel(), idx[1:].ravel()]]
    return rng.random((h * w, k)), PairwiseGraph.potts(h * w, edges, np.full(len(edges), lam), np.ones(len(edges)))


CASES = {
    "must-link": dict(p_cl=0.0),
    "mixed": dict(p_cl=0.4),
    "hard": dict(p_cl=0.4, p_hard=0.3),
    "tables": dict(p_cl=0.3, tables=True),
}


# ---------------------------------------------------------- compiled = NumPy
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("order", ["bfs", "index"])
def test_a_compiled_pass_computes_what_a_numpy_pass_computes(seed, case, order):
    # from the same (random) messages, one forward and one backward pass give the same
    # messages, labels, node energies and bound; the NumPy passes go level by level, the
    # compiled ones node by node (and the must-link kernels where every edge is one)
    pytest.importorskip("numba")
    from hmrf.inference.bp import trws_numba as kernels

    rng = np.random.default_rng(2000 + seed)
    unary, g = random_problem(rng, 50, 4, 90, **CASES[case])
    k = unary.shape[1]
    lay = trws_layout(g, order)
    big = big_cost(unary, g)
    costs = edge_costs(lay, g, k, big)
    u = np.ascontiguousarray(np.where(np.isinf(unary), big, unary)[lay.perm])
    start = rng.random((lay.lo.size, k))
    running = rng.random(lay.n_comp) < 0.8  # the other components have finished (frozen)
    running[lay.comp[0]] = True
    active = running[lay.comp]
    runs = {}
    ml_only = bool(np.all(lay.kind == 1))
    for name in ("numpy", "numba", "numba-ml", "numba-ml-k") if ml_only else ("numpy", "numba"):
        msg, labels = start.copy(), np.zeros(g.n_nodes, dtype=np.int64)
        node_e, lb = np.zeros(g.n_nodes), np.zeros(lay.n_comp)
        if name == "numpy":
            forward_pass(u, msg, lay, costs, active, labels, node_e)
            after = msg.copy()
            backward_pass(u, msg, lay, costs, active, lb)
        elif name == "numba":
            kernels.forward_pass(u, msg, lay.lo, lay.kind, costs.w, costs.tab_of, costs.tcost, lay.fptr,
                                 lay.bptr, lay.be, lay.gamma, active, labels, node_e)
            after = msg.copy()
            kernels.backward_pass(u, msg, lay.kind, costs.w, costs.tab_of, costs.tcost, lay.fptr, lay.bptr,
                                  lay.be, lay.gamma, active, lay.comp, lb)
        elif name == "numba-ml":
            kernels.forward_pass_ml(u, msg, lay.lo, costs.w, lay.fptr, lay.bptr, lay.be, lay.gamma, active,
                                    labels, node_e)
            after = msg.copy()
            kernels.backward_pass_ml(u, msg, costs.w, lay.fptr, lay.bptr, lay.be, lay.gamma, active, lay.comp, lb)
        else:  # compiled for this k, the index arrays unsigned
            fwd, bwd = kernels.must_link_passes(k)
            lo, fptr, bptr, be = (a.view(np.uint64) for a in (lay.lo, lay.fptr, lay.bptr, lay.be))
            fwd(u, msg, lo, costs.w, fptr, bptr, be, lay.gamma, active, labels, node_e)
            after = msg.copy()
            bwd(u, msg, costs.w, fptr, bptr, be, lay.gamma, active, lay.comp, lb)
        runs[name] = (labels, node_e, after, msg, lb)
    if ml_only:  # the specialised kernels do the same operations in the same order
        for a, b in zip(runs["numba-ml-k"], runs["numba-ml"]):
            assert np.array_equal(a, b)
    ref = runs["numpy"]
    for name, out in runs.items():
        assert out[0].tolist() == ref[0].tolist(), name
        for a, b in zip(out[1:], ref[1:]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9, err_msg=name)
    for name, out in runs.items():  # the messages of frozen components are untouched
        assert np.array_equal(out[3][~active[lay.lo]], start[~active[lay.lo]]), name


@pytest.mark.parametrize("seed", range(4))
def test_the_engine_gives_the_same_result_with_either_kernel(seed):
    pytest.importorskip("numba")
    rng = np.random.default_rng(2100 + seed)
    unary, g = random_problem(rng, 60, 4, 150, p_cl=0.3 * (seed % 3), tables=seed % 2 == 0)
    seen = {}
    for kernel in ("numba", "numpy"):
        trace = []
        res = TRWS(kernel=kernel, max_iter=25).map(unary, g, rng=0,
                                                    callback=lambda it, y, e, b, trace=trace: trace.append((e, b)))
        seen[kernel] = (res, np.array(trace))
    a, b = seen["numba"], seen["numpy"]
    assert a[0].labels.tolist() == b[0].labels.tolist()
    np.testing.assert_allclose(a[1], b[1], rtol=1e-10)


@pytest.mark.parametrize("k", [2, 8, 17])
def test_must_link_grids_give_the_same_result_with_either_kernel(k):
    # up to SPECIALISED_K labels the passes compiled for k run, above it the must-link
    # passes for any k: both follow the NumPy passes iteration by iteration
    pytest.importorskip("numba")
    from hmrf.inference.bp.trws_numba import SPECIALISED_K, must_link_passes

    assert (must_link_passes(k) is None) == (k > SPECIALISED_K)
    rng = np.random.default_rng(2150 + k)
    unary, g = grid_problem(rng, 9, 11, k, 0.3)
    runs = [TRWS(kernel=kernel, max_iter=30, rel_gap=0.0, tol=0.0).map(unary, g, rng=0)
            for kernel in ("numba", "numpy")]
    assert runs[0].labels.tolist() == runs[1].labels.tolist()
    for key in ("bound_trace", "energy_trace"):
        np.testing.assert_allclose(runs[0].info[key], runs[1].info[key], rtol=1e-10)


# ---------------------------------------------------------- the bound
@pytest.mark.parametrize("seed", range(40))
def test_bound_below_the_optimum_below_the_energy(seed):
    rng = np.random.default_rng(2200 + seed)
    n, k = int(rng.integers(3, 7)), int(rng.integers(2, 4))
    unary, g = random_problem(rng, n, k, int(rng.integers(2, 12)), p_cl=0.25 * (seed % 4),
                              p_hard=0.2 * (seed % 2), tables=seed % 5 == 0)
    best, _ = brute_force(unary, g)
    res = TRWS().map(unary, g, rng=0)
    assert res.lower_bound <= best + 1e-7
    assert res.energy >= best - 1e-9
    assert res.energy == pytest.approx(g.energy(res.labels, unary))


@pytest.mark.parametrize("seed", range(8))
def test_the_bound_never_decreases(seed):
    # Kolmogorov (2006), Theorem 3.2: TRW-S is monotone; here the raw bound of every
    # backward pass (not the running maximum), on loopy graphs of every factor kind
    rng = np.random.default_rng(2300 + seed)
    if seed < 4:
        unary, g = grid_problem(rng, 12, 15, 4, 0.3 + 0.3 * seed)
    else:
        unary, g = random_problem(rng, 80, 4, 240, p_cl=0.2 * (seed - 4), tables=seed == 7)
    res = TRWS(rel_gap=0.0, tol=0.0, max_iter=60).map(unary, g, rng=0)
    trace = np.array(res.info["bound_trace"])
    assert trace.size == 60 or res.converged  # it ran until the cap or until the gap closed
    assert np.all(np.diff(trace) >= -1e-9 * np.maximum(1.0, np.abs(trace[1:])))
    # TRW-S maximises the dual of the local-polytope relaxation, which the LP solves
    assert res.lower_bound <= LPRelaxation().map(unary, g, rng=0).lower_bound + 1e-7


@pytest.mark.parametrize("seed", range(12))
def test_exact_on_trees(seed):
    # on a tree the chains of the breadth-first order make the bound tight: TRW-S
    # returns the optimum and proves it (gap closed, converged)
    rng = np.random.default_rng(2400 + seed)
    unary, g = random_tree(rng, int(rng.integers(3, 9)), int(rng.integers(2, 4)), tables=seed % 3 == 0)
    best, _ = brute_force(unary, g)
    res = TRWS().map(unary, g, rng=0)
    assert res.energy == pytest.approx(best, abs=1e-9)
    assert res.lower_bound == pytest.approx(best, abs=1e-7)
    assert res.converged and res.info["stopped"] == "gap"


def test_a_chain_in_index_order_is_solved_in_two_iterations():
    # one forward and one backward pass make the bound exact (dynamic programming along
    # the chain); the next forward pass decodes from the backward messages
    rng = np.random.default_rng(3)
    n, k = 30, 5
    unary = rng.random((n, k))
    g = PairwiseGraph.potts(n, np.c_[np.arange(n - 1), np.arange(1, n)], rng.random(n - 1),
                            np.where(rng.random(n - 1) < 0.3, -1, 1))
    res = TRWS(order="index").map(unary, g, rng=0)
    exact = ExactMILP().map(unary, g)
    assert res.info["bound_trace"][0] == pytest.approx(exact.energy)
    assert res.n_iter == 2 and res.converged
    assert res.energy == pytest.approx(exact.energy) and res.lower_bound == pytest.approx(exact.energy)


def test_a_potts_grid_gets_a_bound_and_a_small_gap():
    # the case of the photograph: a 4-neighbour grid of must-links; the bound is
    # reported, the labelling is no worse than alpha-expansion's by more than the gap
    rng = np.random.default_rng(5)
    unary, g = grid_problem(rng, 20, 25, 4, 0.4)
    res = get_engine("trws").map(unary, g, rng=0)
    exact = ExactMILP().map(unary, g).energy
    assert res.lower_bound <= exact + 1e-7 <= res.energy + 2e-7
    assert res.gap <= 0.01 * res.energy
    assert res.info["stopped"] in ("gap", "bound")


# ---------------------------------------------------------- stopping, warm start
def test_stops_on_the_gap_or_when_the_bound_stops_rising():
    rng = np.random.default_rng(7)
    unary, g = random_problem(rng, 40, 3, 120, p_cl=0.5)  # frustrated: the relaxation is not tight
    res = TRWS(max_iter=1000).map(unary, g, rng=0)
    assert res.info["stopped"] == "bound" and not res.converged and res.n_iter < 1000
    trace = np.array(res.info["bound_trace"])
    scale = max(1.0, abs(res.energy))
    assert trace[-1] - trace[-11] <= 1e-5 * 10 * scale + 1e-9  # the last window barely rose
    loose = TRWS(rel_gap=0.5).map(unary, g, rng=0)
    assert loose.info["stopped"] == "gap" and loose.converged and loose.gap <= 0.5 * abs(loose.energy)


def test_never_worse_than_init():
    rng = np.random.default_rng(11)
    unary, g = random_problem(rng, 40, 4, 150, p_cl=0.6)
    start = BeliefPropagation().map(unary, g, rng=0)
    res = TRWS(max_iter=1).map(unary, g, init=start.labels, rng=0)
    assert res.energy <= start.energy + 1e-9 < TRWS(max_iter=1).map(unary, g, rng=0).energy


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="order"):
        TRWS(order="random").map(np.zeros((2, 2)), PairwiseGraph.potts(2, [(0, 1)], [1.0], [1]))
    with pytest.raises(ValueError, match="rel_gap"):
        TRWS(rel_gap=2.0).map(np.zeros((2, 2)), PairwiseGraph.potts(2, [(0, 1)], [1.0], [1]))


# ---------------------------------------------------------- BP's default on lattices
def test_bp_runs_trws_on_lattice_components_and_its_schedule_elsewhere():
    # reweight="auto": a large must-link grid is a lattice (one four-cycle per node) and
    # runs TRW-S; a random must-link graph is locally tree-like and keeps BP's cycles
    from hmrf.inference.bp.schedules import LATTICE_NODES, lattice_components

    rng = np.random.default_rng(13)
    u_grid, grid = grid_problem(rng, 30, 40, 3, 0.6)
    assert grid.n_nodes >= LATTICE_NODES and lattice_components(grid).all()
    n = grid.n_nodes
    pairs = rng.integers(n, size=(2 * n, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    rand = PairwiseGraph.potts(n, pairs, rng.random(len(pairs)), np.ones(len(pairs)))
    assert not lattice_components(rand).any()
    # both in one problem (disjoint node sets), plus a frustrated triangle
    tri = PairwiseGraph.potts(3, [(0, 1), (1, 2), (0, 2)], [1.0, 1.0, 1.0], [-1, -1, -1])
    both = PairwiseGraph(2 * n + 3, np.r_[grid.edges, rand.edges + n, tri.edges + 2 * n],
                         np.r_[grid.weight, rand.weight, tri.weight], np.r_[grid.kind, rand.kind, tri.kind])
    unary = np.r_[u_grid, rng.random((n, 3)), rng.random((3, 3))]
    res = BeliefPropagation().map(unary, both, rng=0)
    assert res.info["trws_components"] == 1
    alone = TRWS(rel_gap=1e-3).map(u_grid, grid, rng=0)  # BP passes its rel_gap on
    np.testing.assert_array_equal(res.labels[:n], alone.labels)
    rest = BeliefPropagation().map(unary[n:], PairwiseGraph(n + 3, both.edges[grid.n_edges:] - n,
                                                             both.weight[grid.n_edges:], both.kind[grid.n_edges:]),
                                   rng=0)
    assert rest.info.get("trws_components", 0) == 0
    np.testing.assert_array_equal(res.labels[n:], rest.labels)
    assert res.lower_bound is None  # the frustrated triangle has no bound
    only = BeliefPropagation().map(u_grid, grid, rng=0)
    assert only.lower_bound == pytest.approx(alone.lower_bound) and only.energy == pytest.approx(alone.energy)
