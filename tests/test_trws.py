"""TRWS (Kolmogorov 2006): compiled passes against their NumPy oracle, and the algorithm's properties.

The bound is checked against enumeration (bound <= optimum <= energy), its monotonicity
iteration by iteration, exactness on trees, and the stopping rules.
"""

import numpy as np
import pytest
from mrf_problems import brute_force, random_problem, random_tree
from oracles.trws_numpy import backward_pass, forward_pass

from hmrf import PairwiseGraph
from hmrf.inference import TRWS, BeliefPropagation, ExactMILP, LPRelaxation, get_engine
from hmrf.inference.bp import kernels, trws
from hmrf.inference.bp.trws import big_cost, chain_layout


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
    # messages, labels, node energies and bound; the oracle goes level by level, the
    # compiled passes node by node (and the must-link passes compiled for k where every
    # edge is one)
    rng = np.random.default_rng(2000 + seed)
    unary, g = random_problem(rng, 50, 4, 90, **CASES[case])
    k = unary.shape[1]
    lay = chain_layout(g, order)
    big = big_cost(unary, g)
    fac = lay.factors(g, k, big)
    lo, hi, fptr, bptr, be, kind, w, tab_of, tcost = fac
    u = np.ascontiguousarray(np.where(np.isinf(unary), big, unary)[lay.perm])
    start = rng.random((lay.lo.size, k))
    running = rng.random(lay.n_comp) < 0.8  # the other components have finished (frozen)
    running[lay.comp[0]] = True
    active = running[lay.comp]
    gamma = lay.gamma if seed < 2 else np.ones(g.n_nodes)  # gamma = 1: ordinary max-product
    runs = {}
    ml_only = bool(np.all(lay.kind == 1))
    for name in ("numpy", "numba", "numba-ml-k") if ml_only else ("numpy", "numba"):
        msg, labels = start.copy(), np.zeros(g.n_nodes, dtype=np.int64)
        node_e, lb = np.zeros(g.n_nodes), np.zeros(lay.n_comp)
        if name == "numpy":
            forward_pass(u, msg, lay, fac, active, labels, node_e, gamma)
            after = msg.copy()
            backward_pass(u, msg, lay, fac, active, lb, gamma)
        elif name == "numba":
            kernels.trws_forward(u, msg, lo, kind, w, tab_of, tcost, fptr, bptr, be, gamma, active, labels, node_e)
            after = msg.copy()
            kernels.trws_backward(u, msg, kind, w, tab_of, tcost, fptr, bptr, be, gamma, active, lay.comp, lb)
        else:  # compiled for this k, the index arrays unsigned
            fwd, bwd = trws._passes(lay, fac, k)
            fwd(u, msg, gamma, labels, node_e, active)
            after = msg.copy()
            bwd(u, msg, gamma, active, lb)
        runs[name] = (labels, node_e, after, msg, lb)
    ref = runs["numpy"]
    for name, out in runs.items():
        assert out[0].tolist() == ref[0].tolist(), name
        for a, b in zip(out[1:], ref[1:]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9, err_msg=name)
    for name, out in runs.items():  # the messages of frozen components are untouched
        assert np.array_equal(out[3][~active[lay.lo]], start[~active[lay.lo]]), name


def _oracle_passes(lay, fac, k):
    """The oracle's passes with the signature of :func:`hmrf.inference.bp.trws._passes`'."""
    return (lambda u, msg, g, labels, node_e, active: forward_pass(u, msg, lay, fac, active, labels, node_e, g),
            lambda u, msg, g, active, lb: backward_pass(u, msg, lay, fac, active, lb, g))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cycles", [False, True])
def test_the_engine_on_the_oracles_passes_gives_the_same_run(seed, cycles, monkeypatch):
    # the whole driver on the NumPy passes: the same labels, bounds and energies,
    # iteration by iteration (with cycles: TRW-S and max-product phases in turn)
    rng = np.random.default_rng(2100 + seed)
    unary, g = random_problem(rng, 60, 4, 150, p_cl=0.0 if cycles else 0.3 * (seed % 3), tables=seed % 2 == 0)
    runs = []
    for passes in (trws._passes, _oracle_passes):
        monkeypatch.setattr(trws, "_passes", passes)
        runs.append(trws.run_trws(unary, g, max_iter=25, cycles=cycles))
    assert runs[0].labels.tolist() == runs[1].labels.tolist() and runs[0].n_iter == runs[1].n_iter
    for key in ("bound_trace", "energy_trace"):
        np.testing.assert_allclose(runs[0].info[key], runs[1].info[key], rtol=1e-10)


@pytest.mark.parametrize("k", [2, 8, 17])
def test_must_link_grids_follow_the_oracle(k, monkeypatch):
    # the must-link passes compiled for k follow the NumPy passes iteration by iteration
    rng = np.random.default_rng(2150 + k)
    unary, g = grid_problem(rng, 9, 11, k, 0.3)
    runs = []
    for passes in (trws._passes, _oracle_passes):
        monkeypatch.setattr(trws, "_passes", passes)
        runs.append(TRWS(max_iter=30, rel_gap=0.0, tol=0.0).map(unary, g, rng=0))
    assert k in trws._ML_PASSES  # the kernels compiled for k ran
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
    with pytest.raises(TypeError, match=r"TRWS\(kernel=...\) was removed: the passes are always compiled"):
        TRWS(kernel="numpy")


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
    n_rand = rand.constrained_part()[1].components()[0]  # its components run TRW-S cycles
    assert res.info["trws_components"] == 1 + n_rand
    alone = TRWS(rel_gap=1e-3).map(u_grid, grid, rng=0)  # BP passes its rel_gap on
    np.testing.assert_array_equal(res.labels[:n], alone.labels)
    rest = BeliefPropagation().map(unary[n:], PairwiseGraph(n + 3, both.edges[grid.n_edges:] - n,
                                                             both.weight[grid.n_edges:], both.kind[grid.n_edges:]),
                                   rng=0)
    assert rest.info["trws_components"] == n_rand
    np.testing.assert_array_equal(res.labels[n:], rest.labels)
    assert res.lower_bound is None  # the frustrated triangle has no bound
    only = BeliefPropagation().map(u_grid, grid, rng=0)
    assert only.lower_bound == pytest.approx(alone.lower_bound) and only.energy == pytest.approx(alone.energy)


@pytest.mark.parametrize("bound, stops", [(99.5, True), (50.0, False)])
def test_label_patience_stops_a_cycle_only_near_its_bound(bound, stops):
    """After a cycle that raised the bound but found no better labelling for
    ``label_patience`` iterations, a component stops only if its gap is within
    ``STALL_GAP`` of its energy: far from its bound, TRW-S can still lead the decoding to
    a better labelling."""
    from types import SimpleNamespace

    lay = SimpleNamespace(comp=np.zeros(3, dtype=np.int64), n_comp=1, gamma=np.full(2, 0.5))
    progress = trws._Progress(lay, lay.gamma.copy(), np.zeros((2, 2)), None, 1e-3, True)
    progress.cycles, progress.trw = 1, False  # in the max-product phase of a later cycle
    progress.progressed[:] = True  # the last TRW-S phase raised the bound
    progress.stale[:] = progress.mp_patience
    progress.since_better[:] = progress.label_patience
    stop = progress.step(20, np.zeros(1, dtype=bool), np.array([100.0]), np.array([bound]),
                         np.zeros(1, dtype=bool))
    assert bool(stop[0]) is stops
