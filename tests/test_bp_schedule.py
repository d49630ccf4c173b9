"""BeliefPropagation's schedules: the oracle's colouring, the TRW-S cycles of reweight="auto"
on must-link components, patience, and the "auto" schedule on frustrated ones."""

import itertools

import numpy as np
import pytest
from mrf_problems import enumerate_energies
from oracles.bp_numpy import colour_classes, greedy_colouring

from hmrf import PairwiseGraph
from hmrf.inference import BeliefPropagation
from hmrf.inference.bp import trws
from hmrf.inference.bp.trws import TRW_BLOCK, chain_layout


def first_fit_reference(n, edges):
    """Node by node: higher degree first (ties in a fixed pseudo-random order), smallest colour
    not used by a neighbour."""
    adj = [set() for _ in range(n)]
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)
    colour = {}
    ties = np.random.default_rng(0).permutation(n)  # independent_sets' fixed tie order
    for v in sorted(range(n), key=lambda v: (-len(adj[v]), -ties[v])):
        used = {colour[u] for u in adj[v] if u in colour}
        colour[v] = next(c for c in itertools.count() if c not in used)
    return np.array([colour[v] for v in range(n)])


def as_colours(n, classes):
    colour = np.full(n, -1)
    for c, members in enumerate(classes):
        colour[members] = c
    return colour


@pytest.mark.parametrize("seed", range(25))
def test_greedy_colouring_is_sequential_first_fit(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    edges = rng.integers(0, n, size=(int(rng.integers(0, 3 * n + 1)), 2))
    edges = np.unique(np.sort(edges[edges[:, 0] != edges[:, 1]], axis=1), axis=0).reshape(-1, 2)
    colour = as_colours(n, greedy_colouring(n, edges))
    assert np.all(colour >= 0)
    assert np.all(colour[edges[:, 0]] != colour[edges[:, 1]])  # proper: classes are independent sets
    np.testing.assert_array_equal(colour, first_fit_reference(n, edges))


def test_greedy_colouring_needs_few_classes_on_a_sparse_graph():
    rng = np.random.default_rng(0)
    n = 3000
    edges = rng.integers(0, n, size=(6000, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    g = PairwiseGraph.potts(n, edges, np.ones(len(edges)), np.ones(len(edges), int))
    classes = colour_classes(g)
    degree = np.bincount(edges.ravel(), minlength=n)
    assert len(classes) <= degree.max() + 1
    assert len(classes) <= 8  # random graph of mean degree 4: first-fit needs about 5 colours


def brute_force(unary, graph):
    return enumerate_energies(unary, graph)[1].min()


def must_link_problem(rng, n, k, m):
    pairs = rng.integers(0, n, size=(m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return rng.random((n, k)) * 3, PairwiseGraph.potts(n, pairs, rng.random(len(pairs)) * 2, np.ones(len(pairs), int))


@pytest.mark.parametrize("seed", range(8))
def test_auto_runs_max_product_first_then_trws_and_proves_its_result(seed):
    rng = np.random.default_rng(900 + seed)
    unary, g = must_link_problem(rng, 8, 3, 16)
    best = brute_force(unary, g)
    seen = []
    res = BeliefPropagation(rel_gap=0.0, tol=1e-9).map(
        unary, g, rng=0, callback=lambda it, y, e, b: seen.append((it, e, b)))
    switch = res.info["trw_from_iter"]
    assert res.info["trws_components"] == res.info["n_components"] >= 1
    assert switch is not None and switch > 1  # a warm-up phase of ordinary max-product ran
    # no bound is reported while the warm-up phase runs, one is (and only rises) after it
    assert all(b is None for it, _, b in seen if it < switch)
    bounds = [b for it, _, b in seen if it >= switch]
    assert np.all(np.diff(bounds) >= -1e-9)
    assert res.lower_bound <= best + 1e-9 <= res.energy + 2e-9
    assert res.energy <= min(e for _, e, _ in seen) + 1e-12  # the best of both phases
    # the first TRW-S phase starts cold: its bounds are those of TRW-S run from the start
    cold = []
    pure = BeliefPropagation(reweight="trw", rel_gap=0.0, tol=1e-9).map(
        unary, g, rng=0, callback=lambda it, y, e, b: cold.append(b))
    assert pure.lower_bound <= best + 1e-9
    phase2 = [b for it, _, b in seen if it >= switch]  # bound after TRW-S iteration 1, 2, ...
    n_common = min(len(phase2), len(cold), TRW_BLOCK)
    assert n_common >= 1
    np.testing.assert_allclose(phase2[:n_common], cold[:n_common], rtol=1e-12)


def test_by_default_patience_stops_nothing():
    # a frustrated component (cannot-links on an odd cycle) runs ordinary max-product, by
    # default until its messages settle or max_iter
    rng = np.random.default_rng(3)
    n = 9
    cycle = np.array([(i, (i + 1) % n) for i in range(n)])
    g = PairwiseGraph.potts(n, cycle, rng.random(n) + 0.5, -np.ones(n, int))
    unary = rng.random((n, 2))
    res = BeliefPropagation(max_iter=40).map(unary, g, rng=0)
    assert res.info["trws_components"] == 0 and res.info["stopped"] in ("tol", "max_iter")
    # an explicit patience does stop it
    assert BeliefPropagation(max_iter=40, patience=1).map(unary, g, rng=0).n_iter <= 3


def test_any_node_order_works(monkeypatch):
    # the passes must not rely on the breadth-first order's property that every node but
    # a root has an earlier neighbour: in the order below node 4 has only a later
    # neighbour and 3 comes before its only neighbour's other neighbours; BP on this forest
    # stays exact
    rng = np.random.default_rng(950)
    g = PairwiseGraph.potts(6, [(0, 1), (0, 2), (4, 5), (3, 5)], [1.5, 0.7, 1.0, 0.4], [1, -1, 1, 1])
    unary = rng.random((6, 3)) * 3
    perm = np.array([0, 3, 1, 2, 4, 5])
    monkeypatch.setattr(trws, "bfs_order", lambda graph: perm)
    for reweight in (None, "trw"):
        res = BeliefPropagation(reweight=reweight, tol=1e-10).map(unary, g, rng=0)
        assert res.energy == pytest.approx(brute_force(unary, g), abs=1e-9)
    assert chain_layout(g, "bfs").perm.tolist() == perm.tolist()  # the order above was used


def closure_problem(rng, n, k):
    truth = rng.integers(k, size=n)
    i, j = np.triu_indices(n, 1)
    kind = np.where(truth[i] == truth[j], 1, -1)
    return rng.random((n, k)) * 3, PairwiseGraph.potts(n, np.c_[i, j], rng.uniform(0.2, 2.0, i.size), kind)


@pytest.mark.parametrize("seed", range(6))
def test_auto_schedule_is_no_worse_than_either_schedule_on_frustrated_problems(seed):
    # dense cliques of must-links joined by cannot-links (a closure): sequential
    # max-product can lock a clique onto a wrong label early, flooding does not; the
    # "auto" schedule keeps the cheaper part of both, component by component
    rng = np.random.default_rng(970 + seed)
    unary, g = closure_problem(rng, 24, 3)
    auto = BeliefPropagation().map(unary, g, rng=0)
    seq = BeliefPropagation(schedule="sequential").map(unary, g, rng=0)
    flood = BeliefPropagation(schedule="flooding").map(unary, g, rng=0)
    assert auto.energy <= min(seq.energy, flood.energy) + 1e-9
    assert "flooding_iter" in auto.info and "flooding_iter" not in seq.info


def giant_must_link_component(rng, n, k):
    """Uniform unary costs, 2n random must-links with weights in [0, 2): one giant component."""
    unary = rng.random((n, k))
    pairs = rng.integers(n, size=(2 * n, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return unary, PairwiseGraph.potts(n, pairs, 2 * rng.random(len(pairs)), np.ones(len(pairs), int))


def test_default_is_within_half_a_percent_of_the_optimum_where_plain_max_product_is_not():
    # a giant must-link component: ordinary max-product settles 5-10 % above the
    # optimum on these seeds; the default's TRW-S / max-product cycles reach it
    from hmrf.inference import ExactMILP

    for seed in (1, 4, 5):
        unary, g = giant_must_link_component(np.random.default_rng(seed), 300, 5)
        best = ExactMILP().map(unary, g).energy
        plain = BeliefPropagation(reweight=None).map(unary, g)
        res = BeliefPropagation().map(unary, g)
        assert plain.energy > 1.01 * best
        assert best - 1e-9 <= res.energy <= 1.005 * best
        assert res.lower_bound <= best + 1e-9 and res.info["trw_cycles"] >= 1


@pytest.mark.parametrize("seed", [0, 1, 6])
def test_trws_phases_resume_where_they_stopped(seed):
    # reweight="auto" alternates TRW-S and max-product from the TRW-S messages; each
    # TRW-S phase restarts from the messages the previous one ended with, so the bounds
    # the TRW-S phases report, in order, are those of one uninterrupted TRW-S run
    rng = np.random.default_rng(990 + seed)
    unary, g = giant_must_link_component(rng, 200, 5)
    seen, pure = [], []
    res = BeliefPropagation(rel_gap=0.0, tol=1e-12, max_iter=60).map(
        unary, g, callback=lambda it, y, e, b: seen.append(b))
    BeliefPropagation(reweight="trw", rel_gap=0.0, tol=1e-12, max_iter=60).map(
        unary, g, callback=lambda it, y, e, b: pure.append(b))
    assert res.info["trw_cycles"] >= 2
    # the reported bound is the best so far: its distinct values are the TRW-S bounds
    steps = [b for a, b in zip([None] + seen, seen) if b is not None and b != a]
    pure_steps = [b for a, b in zip([None] + pure, pure) if b is not None and b != a]
    n = min(len(steps), len(pure_steps))
    assert n > TRW_BLOCK
    np.testing.assert_allclose(steps[:n], pure_steps[:n], rtol=1e-9)


def test_the_split_into_parts_is_reweighted_with_the_graph():
    # reweight="auto" splits the graph into lattice / attractive / frustrated parts, cached
    # with their subgraphs (and so their layouts); new weights with the same hard edges
    # re-weight the parts' subgraphs, a new hard edge splits anew. Either way BP's result
    # is that on a freshly built graph.
    from hmrf.inference.bp.schedules import split_components

    rng = np.random.default_rng(31)
    ml = [(0, 1), (1, 2), (2, 3), (3, 0)]          # attractive
    mixed = [(4, 5), (5, 6), (6, 7), (7, 4)]       # with a cannot-link
    g = PairwiseGraph.potts(8, ml + mixed, rng.random(8) + 0.2, [1, 1, 1, 1, 1, -1, 1, 1])
    unary = rng.random((8, 3)) * 2
    bp = BeliefPropagation()
    bp.check_params()
    bp._solve(unary, g, None, np.random.default_rng(0), lambda *a: None)  # as a composing engine does
    parts = split_components(g)
    assert [name for name, _, _ in parts] == ["attractive", "frustrated"]
    w = rng.random(8) + 0.2
    g2 = g.with_weights(w)
    parts2 = split_components(g2)
    for (name, nodes, sub), (name2, nodes2, sub2) in zip(parts, parts2):
        assert name == name2 and nodes2 is nodes and sub2.edges is sub.edges
        layouts = sub.cache.peek(trws.LAYOUTS)
        assert layouts and sub2.cache.peek(trws.LAYOUTS) == layouts  # the layouts are kept
    np.testing.assert_array_equal(parts2[0][2].weight, w[:4])
    fresh = PairwiseGraph.potts(8, ml + mixed, w, g.kind)
    assert BeliefPropagation().map(unary, g2, rng=0).labels.tolist() == \
        BeliefPropagation().map(unary, fresh, rng=0).labels.tolist()
    w[0] = np.inf  # a hard must-link: its component is no longer soft-attractive
    assert [name for name, _, _ in split_components(g.with_weights(w))] == ["frustrated"]
    only = PairwiseGraph.potts(4, ml, rng.random(4) + 0.2, np.ones(4, int))  # one part: the graph itself, re-weighted
    assert split_components(only)[0][2] is only
    again = only.with_weights(rng.random(4) + 0.2)
    assert split_components(again)[0][2] is again
