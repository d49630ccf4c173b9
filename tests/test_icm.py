"""E-step problems: PairwiseGraph energies, the exact reduction, and ICM."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mrf_problems import brute_force, random_hard_problem, random_problem

from hmrf import Constraints, InfeasibleError, PairwiseGraph
from hmrf.inference import ICM, get_engine, reduce_problem
from hmrf.inference.icm import independent_sets


# ---------------------------------------------------------------- hand-made problem
def thesis_fig_4_1_problem():
    """Fig. 4.1 of Basu (2005): must-links (x1,x2), (x1,x4); cannot-link (x2,x3)."""
    unary = np.array([
        [0.0, 2.0, 2.0],   # x1 prefers cluster 0
        [0.5, 0.0, 2.0],   # x2 slightly prefers 1
        [1.0, 0.0, 3.0],   # x3 prefers 1
        [0.0, 1.0, 1.0],   # x4 prefers 0
        [3.0, 1.0, 0.0],   # x5 unconstrained, prefers 2
    ])
    c = Constraints.from_pairs(must_link=[(0, 1), (0, 3)], cannot_link=[(1, 2)], n=5,
                               weight=[1.5, 1.5, 1.0])
    return unary, c


def test_hand_made_optimum_found_by_icm():
    unary, c = thesis_fig_4_1_problem()
    # By hand: keeping x2 with its must-link partners in cluster 0 costs 0.5 and leaves
    # the cannot-link (x2, x3) satisfied with x3 in 1; moving x2 to 1 costs 1.5 (must-link)
    # + 1.0 (cannot-link) - 0.5. So the optimum is (0, 0, 1, 0, 2) with energy 0.5.
    res = ICM().map(unary, c, rng=0)
    assert res.labels.tolist() == [0, 0, 1, 0, 2]
    assert res.energy == pytest.approx(0.5)
    g = PairwiseGraph.from_constraints(c)
    assert brute_force(unary, g)[0] == pytest.approx(0.5)
    # from the unary argmin (energy 2.5) ICM must descend to it
    start = unary.argmin(1)
    assert g.energy(start, unary) == pytest.approx(2.5)
    assert ICM().map(unary, c, init=start, rng=1).energy == pytest.approx(0.5)


def test_energy_definition_matches_eq_4_10_by_hand():
    unary, c = thesis_fig_4_1_problem()
    g = PairwiseGraph.from_constraints(c)
    y = np.array([1, 0, 0, 2, 2])
    # unary 2 + 0.5 + 1 + 1 + 0 = 4.5; ML (0,1) violated 1.5, ML (0,3) violated 1.5,
    # CL (1,2) violated (both 0) 1.0
    assert g.energy(y, unary) == pytest.approx(4.5 + 4.0)
    assert g.edge_costs(y).tolist() == [1.5, 1.5, 1.0]


# -------------------------------------------------------------------- reduction
def test_reduction_is_exact_for_hard_must_links():
    rng = np.random.default_rng(0)
    for _ in range(30):
        n, k = 6, 3
        unary = rng.random((n, k)) * 3
        ml = np.array([[0, 1], [1, 2]])
        c = Constraints.from_pairs(must_link=np.r_[ml, [[3, 4]]], cannot_link=[[2, 5], [0, 2]], n=n,
                                   weight=[np.inf, np.inf, 1.0, 0.7, 0.4])
        g = PairwiseGraph.from_constraints(c)
        red = reduce_problem(unary, g)
        assert red.active.size < n  # 0,1,2 contracted
        best_full, _ = brute_force(unary, g)
        best_red, arg = brute_force(red.unary, red.graph) if red.active.size else (0.0, np.empty(0, int))
        assert best_red + red.offset == pytest.approx(best_full)
        assert g.energy(red.expand(arg), unary) == pytest.approx(best_full)


def test_isolated_nodes_take_unary_argmin_without_engine():
    unary = np.array([[3.0, 1.0], [0.0, 2.0], [5.0, 4.0]])
    res = ICM().map(unary, None)
    assert res.labels.tolist() == [1, 0, 1]
    assert res.energy == pytest.approx(5.0)
    assert res.info["n_active"] == 0


def test_hard_cannot_link_inside_hard_must_link_component_is_infeasible():
    g = PairwiseGraph.potts(3, [[0, 1], [1, 2], [0, 2]], [np.inf, np.inf, np.inf], [1, 1, -1])
    with pytest.raises(InfeasibleError, match=r"\(0, 2\)"):
        ICM().map(np.zeros((3, 2)), g)


def test_point_with_no_allowed_label_is_named():
    unary = np.array([[0.0, 1.0], [np.inf, np.inf]])
    with pytest.raises(InfeasibleError, match="point 1"):
        ICM().map(unary, None)


@pytest.mark.parametrize("bad, match", [
    (np.zeros(3), "shape"),
    (np.array([[0.0, np.nan]]), "NaN"),
    (np.array([[0.0, -np.inf]]), "-inf"),
])
def test_bad_unary_rejected(bad, match):
    with pytest.raises(ValueError, match=match):
        ICM().map(bad, None)


def test_graph_validation():
    with pytest.raises(ValueError, match="outside"):
        PairwiseGraph.potts(2, [[0, 2]], [1.0], [1])
    with pytest.raises(ValueError, match="itself"):
        PairwiseGraph.potts(2, [[1, 1]], [1.0], [1])
    with pytest.raises(ValueError, match="finite"):
        PairwiseGraph.from_tables(2, [[0, 1]], np.eye(2), weight=np.inf)
    g = PairwiseGraph.from_tables(2, [[0, 1]], np.eye(3))
    with pytest.raises(ValueError, match="3x3"):
        ICM().map(np.zeros((2, 2)), g)
    with pytest.raises(ValueError, match="3 nodes"):
        ICM().map(np.zeros((2, 3)), PairwiseGraph.empty(3))


# ------------------------------------------------------------------------- ICM
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 12), k=st.integers(1, 4),
       m=st.integers(0, 25), tables=st.booleans(), p_hard=st.sampled_from([0.0, 0.3]))
def test_icm_never_increases_energy(seed, n, k, m, tables, p_hard):
    rng = np.random.default_rng(seed)
    unary, g = random_problem(rng, n, k, m, p_hard=p_hard, tables=tables)
    init = rng.integers(0, k, n)
    energies = []
    try:
        res = ICM().map(unary, g, init=init, rng=seed,
                        callback=lambda it, y, e, b: energies.append((e, g.energy(y, unary))))
    except InfeasibleError as exc:  # hard cannot-links that ICM and its repair cannot meet
        assert p_hard > 0 and exc.point in range(n)
        return
    start = g.energy(init, unary)
    assert res.energy <= start + 1e-9 or not np.isfinite(start)
    assert res.energy == pytest.approx(g.energy(res.labels, unary))
    # the callback reports the full problem's labels and energy, non-increasing
    for reported, recomputed in energies:
        assert reported == pytest.approx(recomputed)
    seq = [e for e, _ in energies]
    assert all(b <= a + 1e-9 for a, b in zip(seq, seq[1:]))


def test_icm_is_a_local_minimum_and_at_least_optimal():
    rng = np.random.default_rng(1)
    for _ in range(40):
        unary, g = random_problem(rng, 7, 3, 12, tables=True)
        res = ICM().map(unary, g, rng=0)
        best, _ = brute_force(unary, g)
        assert res.energy >= best - 1e-9
        # no single-node move improves it
        for i in range(7):
            for h in range(3):
                y = res.labels.copy()
                y[i] = h
                assert g.energy(y, unary) >= res.energy - 1e-9


def test_icm_satisfies_hard_cannot_links_when_labels_suffice():
    rng = np.random.default_rng(2)
    n, k = 30, 4
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.05])
    deg = np.bincount(pairs.ravel(), minlength=n).max()
    k = max(k, deg + 1)
    g = PairwiseGraph.potts(n, pairs, np.full(len(pairs), np.inf), np.full(len(pairs), -1))
    res = ICM().map(np.zeros((n, k)), g, rng=0)
    assert np.isfinite(res.energy)
    assert np.all(res.labels[pairs[:, 0]] != res.labels[pairs[:, 1]])


def test_constraints_accepted_as_graph_and_deterministic():
    rng = np.random.default_rng(3)
    unary = rng.random((40, 3))
    c = Constraints.sample_from_labels(rng.integers(0, 3, 40), 60, rng=1)
    a = ICM().map(unary, c, rng=7)
    b = ICM().map(unary, PairwiseGraph.from_constraints(c), rng=7)
    assert np.array_equal(a.labels, b.labels) and a.energy == b.energy


def test_independent_sets_are_a_proper_colouring():
    rng = np.random.default_rng(4)
    edges = rng.integers(0, 50, size=(200, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    sets = independent_sets(50, edges, rng)
    colour = np.empty(50, int)
    for c, s in enumerate(sets):
        colour[s] = c
    assert sorted(np.concatenate(sets).tolist()) == list(range(50))
    assert np.all(colour[edges[:, 0]] != colour[edges[:, 1]])


def test_get_engine():
    assert isinstance(get_engine("icm"), ICM)
    eng = ICM(max_iter=3)
    assert get_engine(eng) is eng
    with pytest.raises(ValueError, match="unknown inference engine"):
        get_engine("magic")
    with pytest.raises(ValueError, match="max_iter"):
        ICM(max_iter=0).map(np.zeros((2, 2)), PairwiseGraph.potts(2, [[0, 1]], [1.0], [1]))


# ----------------------------------------------------------------- hard constraints
@pytest.mark.parametrize("unary, cannot_link", [
    (np.zeros((2, 1)), [(0, 1)]),                        # one cluster, two cannot-linked points
    (np.zeros((3, 2)), [(0, 1), (1, 2), (0, 2)]),        # a triangle with two clusters
])
def test_icm_raises_on_infeasible_hard_cannot_links(unary, cannot_link):
    c = Constraints.from_pairs(cannot_link=cannot_link, n=unary.shape[0], weight=np.inf)
    with pytest.raises(InfeasibleError, match="point") as info:
        ICM().map(unary, c, rng=0)
    assert info.value.point in range(unary.shape[0])


def test_icm_repairs_a_sweep_stuck_on_a_hard_cannot_link():
    # A 4-cycle of hard cannot-links with two clusters, started from (0, 0, 1, 1): every
    # node sees one violation whichever label it takes, so the sweeps alone never move
    # (they minimise violations first, and the unary costs keep each node where it is).
    # The two feasible labellings alternate around the cycle; the repair must find one.
    init = np.array([0, 0, 1, 1])
    unary = np.where(np.arange(2)[None, :] == init[:, None], 0.0, 1.0)
    cl = [(0, 1), (1, 2), (2, 3), (3, 0)]
    g = PairwiseGraph.from_constraints(Constraints.from_pairs(cannot_link=cl, n=4, weight=np.inf))
    best, _ = brute_force(unary, g)
    assert best == pytest.approx(2.0)  # (0, 1, 0, 1) or (1, 0, 1, 0): two unary mismatches
    res = ICM().map(unary, g, init=init, rng=0)
    assert res.energy == pytest.approx(best)
    assert res.info["repaired"]
    assert all(res.labels[i] != res.labels[j] for i, j in cl)


@pytest.mark.parametrize("seed", range(40))
def test_icm_is_feasible_exactly_when_its_greedy_repair_is(seed):
    # random hard cannot-links (and forbidden labels), checked against enumeration:
    # infeasible problems raise; ICM fails on a feasible one only if the greedy repair
    # it documents (every order it tries) fails too
    from hmrf.inference.feasibility import greedy_repair

    rng = np.random.default_rng(seed)
    unary, g = random_hard_problem(rng, p_cl=0.8, p_hard=0.7, p_forbidden=0.15)
    n, k = unary.shape
    best, _ = brute_force(unary, g)
    init = rng.integers(0, k, n)
    try:
        res = ICM().map(unary, g, init=init, rng=seed)
    except InfeasibleError as exc:
        assert exc.point in range(n)
        if np.isfinite(best):  # feasible, but the documented repair could not find it
            start = np.where(np.isfinite(unary[np.arange(n), init]), init, np.argmin(unary, 1))
            assert (greedy_repair(unary, g, start, np.random.default_rng(seed)) < 0).any()
        return
    assert np.isfinite(best) and np.isfinite(res.energy)
    assert res.energy >= best - 1e-9
    hard = np.isinf(g.weight)
    assert np.all(res.labels[g.edges[hard, 0]] != res.labels[g.edges[hard, 1]])
