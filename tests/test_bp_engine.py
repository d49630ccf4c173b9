"""BeliefPropagation as an E-step engine: exactness on trees, TRW-S bounds, sum-product marginals."""

import numpy as np
import pytest
from mrf_problems import (
    brute_force,
    enumerate_energies,
    random_must_link_problem,
    random_problem,
    random_tree,
)

from hmrf import Constraints, PairwiseGraph
from hmrf.inference import BeliefPropagation, LPRelaxation


def tree_problem(seed, max_n, tables):
    """A random tree of 3 to ``max_n`` points and 2 or 3 labels, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, max_n + 1)), int(rng.integers(2, 4))
    return random_tree(rng, n, k, tables=tables)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("schedule", ["sequential", "flooding"])
@pytest.mark.parametrize("kernel", ["auto", "numpy"])
def test_bp_is_exact_on_trees(seed, schedule, kernel):
    unary, g = tree_problem(200 + seed, max_n=7, tables=seed % 3 == 0)
    best, _ = brute_force(unary, g)
    for damping in (0.0, 0.5):
        res = BeliefPropagation(damping=damping, tol=1e-10, patience=None, reweight=None,
                                schedule=schedule, kernel=kernel).map(unary, g, rng=seed)
        assert res.converged and res.info["stopped"] == "tol"
        assert res.energy == pytest.approx(best, abs=1e-9)
        # the consistent decoding alone is exact (every node is constrained here)
        assert res.info["decoded_energy"] == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("kernel", ["auto", "numpy"])
def test_trws_is_exact_on_trees_and_proves_it(seed, kernel):
    unary, g = tree_problem(250 + seed, max_n=8, tables=seed % 3 == 0)
    best, _ = brute_force(unary, g)
    res = BeliefPropagation(reweight="trw", rel_gap=0.0, tol=1e-9, kernel=kernel).map(unary, g, rng=seed)
    assert res.converged and res.info["stopped"] == "gap"  # the tree LP is tight
    assert res.energy == pytest.approx(best, abs=1e-7)
    assert best - 1e-6 <= res.lower_bound <= best + 1e-9


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("schedule", ["sequential", "flooding"])
def test_sum_product_marginals_on_a_tree_equal_enumeration(seed, schedule):
    unary, g = tree_problem(300 + seed, max_n=6, tables=seed % 2 == 1)
    n, k = unary.shape
    ys, e = enumerate_energies(unary, g)
    p = np.exp(-(e - e.min()))
    p /= p.sum()
    exact = np.stack([[p[ys[:, i] == h].sum() for h in range(k)] for i in range(n)])
    marg = BeliefPropagation(mode="sum", damping=0.0, tol=1e-12, schedule=schedule).marginals(unary, g)
    np.testing.assert_allclose(marg, exact, atol=1e-9)


def test_sum_product_marginals_cover_contracted_and_isolated_points():
    # hard must-link (0,1) is contracted, 2 is soft-linked to it, 3 is unconstrained
    unary = np.array([[0.0, 1.0], [0.3, 0.0], [1.0, 0.0], [0.2, 0.9]])
    g = PairwiseGraph.potts(4, [(0, 1), (1, 2)], [np.inf, 1.5], [1, -1])
    ys, e = enumerate_energies(unary, g)
    p = np.exp(-(e - e.min()))
    p /= p.sum()
    exact = np.stack([[p[ys[:, i] == h].sum() for h in range(2)] for i in range(4)])
    res = BeliefPropagation(mode="sum", tol=1e-12).map(unary, g)
    np.testing.assert_allclose(res.marginals, exact, atol=1e-9)
    assert res.labels.tolist() == np.argmax(exact, 1).tolist()


def test_sum_product_is_stable_with_huge_costs_and_hard_cannot_links():
    unary = np.array([[0.0, 800.0, 1e6], [900.0, 0.0, 5.0], [0.0, 0.0, 0.0]])
    g = PairwiseGraph.potts(3, [(0, 1), (1, 2)], [np.inf, 1000.0], [-1, 1])
    marg = BeliefPropagation(mode="sum", tol=1e-12).marginals(unary, g)
    assert np.all(np.isfinite(marg))
    np.testing.assert_allclose(marg.sum(1), 1.0)
    ys, e = enumerate_energies(unary, g)
    p = np.exp(-(e - e.min()))
    p /= p.sum()
    exact = np.stack([[p[ys[:, i] == h].sum() for h in range(3)] for i in range(3)])
    np.testing.assert_allclose(marg, exact, atol=1e-9)


def test_bp_decoding_is_consistent_under_ties():
    # equal costs: per-node argmin would put both cannot-linked points in cluster 0
    unary = np.zeros((2, 3))
    c = Constraints.from_pairs(cannot_link=[(0, 1)], n=2)
    res = BeliefPropagation().map(unary, c, rng=0)
    assert res.labels[0] != res.labels[1] and res.energy == 0.0
    # a must-link chain with tied beliefs stays together
    ml = Constraints.from_pairs(must_link=[(0, 1), (1, 2), (2, 3)], n=4)
    res = BeliefPropagation().map(np.zeros((4, 3)), ml, rng=0)
    assert len(set(res.labels.tolist())) == 1


def test_trw_reweighting_is_plain_bp_on_trees():
    rng = np.random.default_rng(5)
    unary, g = random_tree(rng, 6, 3)
    a = BeliefPropagation(reweight="trw", damping=0.0, schedule="flooding").map(unary, g, rng=0)
    b = BeliefPropagation(damping=0.0, schedule="flooding").map(unary, g, rng=0)
    assert a.labels.tolist() == b.labels.tolist() and a.n_iter == b.n_iter


@pytest.mark.parametrize("schedule", ["sequential", "flooding"])
def test_bp_notifies_every_iteration(schedule):
    rng = np.random.default_rng(6)
    unary, g = random_problem(rng, 8, 3, 12)
    seen = []
    res = BeliefPropagation(max_iter=7, tol=0.0, reweight=None, patience=None, schedule=schedule).map(
        unary, g, rng=0, callback=lambda it, y, e, b: seen.append((it, e, b)))
    assert [s[0] for s in seen] == list(range(1, res.n_iter + 1))
    assert res.n_iter == 7 and not res.converged or res.n_iter < 7 and res.converged
    assert all(s[2] is None for s in seen) and res.lower_bound is None
    # the result is never worse than a labelling the callback saw (the anytime best)
    assert res.energy <= min(s[1] for s in seen) + 1e-12


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kernel", ["auto", "numpy"])
def test_trws_bound_is_valid_monotone_and_below_the_lp_bound(seed, kernel):
    rng = np.random.default_rng(600 + seed)
    must_link_only = seed % 2 == 0
    if must_link_only:
        unary, g = random_must_link_problem(rng, 8, 3, 14)
    else:  # cannot-links, hard ones and tables too: the bound stays valid
        unary, g = random_problem(rng, 7, 3, 12, p_hard=0.3, tables=seed % 4 == 1)
    best, _ = brute_force(unary, g)
    bounds = []
    res = BeliefPropagation(reweight="trw", rel_gap=0.0, patience=None, max_iter=60, kernel=kernel).map(
        unary, g, rng=0, callback=lambda it, y, e, b: bounds.append(b))
    bounds = [b for b in bounds if b is not None]
    # the result's bound is the best one, at least the last the callback saw (the last
    # backward pass may raise it once more when max_iter stops the run)
    assert bounds and res.lower_bound >= bounds[-1] - 1e-9
    assert res.lower_bound <= best + 1e-9 <= res.energy + 2e-9
    assert np.all(np.diff(bounds) >= -1e-9)  # TRW-S never lowers its bound
    if must_link_only:  # a dual bound of the same relaxation as Kleinberg-Tardos's LP
        assert res.lower_bound <= LPRelaxation().map(unary, g).lower_bound + 1e-7


def test_auto_reweighting_runs_trws_on_attractive_components_only():
    rng = np.random.default_rng(7)
    unary = rng.random((8, 3)) * 2
    # component {0..3}: must-links only (a cycle); component {4..7}: a cannot-link too
    ml = PairwiseGraph.potts(8, [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6)], np.ones(6), np.ones(6, int))
    g = PairwiseGraph.concatenate([ml, PairwiseGraph.potts(8, [(6, 7), (7, 4)], np.ones(2), -np.ones(2, int))])
    res = BeliefPropagation().map(unary, g, rng=0)
    assert res.info["n_components"] == 2 and res.info["trw_components"] == 1
    assert res.lower_bound is None  # the frustrated component gives no bound
    assert res.energy == pytest.approx(brute_force(unary, g)[0])
    only_ml = BeliefPropagation().map(unary, ml, rng=0)
    assert only_ml.info["trw_components"] == only_ml.info["n_components"] == 2
    assert only_ml.lower_bound <= only_ml.energy + 1e-12


def test_trws_certificate_matches_the_exact_optimum_on_must_link_problems():
    rng = np.random.default_rng(8)
    certified = 0
    for _ in range(15):
        unary, g = random_must_link_problem(rng, 8, 3, 16)
        best, _ = brute_force(unary, g)
        res = BeliefPropagation(rel_gap=0.0).map(unary, g, rng=0)
        assert res.lower_bound <= best + 1e-9 <= res.energy + 2e-9
        if res.converged:
            certified += 1
            assert res.energy == pytest.approx(best, abs=1e-6)
    assert certified >= 10  # the relaxation is tight on most attractive problems


def test_sequential_bp_is_deterministic_and_the_colouring_is_a_proper_order():
    from hmrf.inference.bp.order import colour_classes

    rng = np.random.default_rng(10)
    unary, g = random_problem(rng, 30, 4, 60, tables=True)
    runs = [BeliefPropagation().map(unary, g, rng=seed) for seed in (0, 0, 1)]
    assert all(r.labels.tolist() == runs[0].labels.tolist() and r.n_iter == runs[0].n_iter for r in runs)
    classes = colour_classes(g)
    colour = np.full(g.n_nodes, -1)
    for c, members in enumerate(classes):
        colour[members] = c
    assert np.all(colour >= 0) and sum(len(c) for c in classes) == g.n_nodes
    assert np.all(colour[g.edges[:, 0]] != colour[g.edges[:, 1]])  # independent sets
