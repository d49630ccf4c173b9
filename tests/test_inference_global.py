"""Global E-step engines: belief propagation, Kleinberg–Tardos LP, exact MILP.

Every engine is checked against brute-force enumeration on problems small enough to
enumerate, and against the others through the chain LP bound <= exact <= any energy.
"""

import itertools

import numpy as np
import pytest

from hmrf import HMRF, Constraints, InfeasibleError, PairwiseGraph
from hmrf.inference import ICM, BeliefPropagation, ExactMILP, LPRelaxation, get_engine
from hmrf.inference.lp import build_program
from hmrf.inference.rounding import best_per_component, kleinberg_tardos_rounding
from hmrf.potentials import PairwisePotential, TablePotential

ENGINES = {
    "icm": ICM(),
    "bp": BeliefPropagation(),
    "bp-polish": BeliefPropagation(polish="icm"),
    "bp-trw": BeliefPropagation(reweight="trw"),
    "bp-plain": BeliefPropagation(reweight=None),
    "bp-flood": BeliefPropagation(schedule="flooding"),
    # the NumPy passes (colour order), what runs where numba is not installed
    "bp-numpy": BeliefPropagation(kernel="numpy"),
    "bp-flood-numpy": BeliefPropagation(schedule="flooding", kernel="numpy"),
    "lp": LPRelaxation(),
    "lp-polish": LPRelaxation(polish="icm"),
    "exact": ExactMILP(),
}
GLOBAL = {k: v for k, v in ENGINES.items() if k != "icm"}


# ------------------------------------------------------------------ helpers
def enumerate_energies(unary, graph):
    n, k = unary.shape
    ys = np.array(list(itertools.product(range(k), repeat=n)))
    return ys, np.array([graph.energy(y, unary) for y in ys])


def brute_force(unary, graph):
    ys, e = enumerate_energies(unary, graph)
    i = int(np.argmin(e))
    return float(e[i]), ys[i]


def random_problem(rng, n, k, m, p_cl=0.5, p_hard=0.0, tables=False):
    unary = rng.random((n, k)) * 3
    pairs = rng.integers(0, n, size=(m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(rng.random(len(pairs)) < p_cl, -1, 1)
    w = rng.random(len(pairs)) * 2
    hard = (rng.random(len(pairs)) < p_hard) & (kind == -1)
    w[hard] = np.inf
    g = PairwiseGraph.potts(n, pairs, w, kind)
    if tables:
        te = rng.integers(0, n, size=(m // 2 + 1, 2))
        te = te[te[:, 0] != te[:, 1]]
        T = rng.random((2, k, k)) * 2
        g = PairwiseGraph.concatenate([g, PairwiseGraph.from_tables(n, te, T, rng.integers(0, 2, len(te)))])
    return unary, g


def random_tree(rng, n, k, p_cl=0.5, tables=False):
    parent = [int(rng.integers(0, i)) for i in range(1, n)]
    edges = np.array([(p, i + 1) for i, p in enumerate(parent)])
    if tables:
        T = rng.random((n - 1, k, k)) * 2
        g = PairwiseGraph.from_tables(n, edges, T)
    else:
        kind = np.where(rng.random(n - 1) < p_cl, -1, 1)
        g = PairwiseGraph.potts(n, edges, rng.random(n - 1) * 2, kind)
    return rng.random((n, k)) * 3, g


def preferred_label_table(k, agree_preferred=0.0, agree_other=0.5, disagree=2.0, preferred=0):
    """A "soft must-link with a preferred label": agreeing on ``preferred`` is free,
    agreeing on another label costs ``agree_other``, disagreeing costs ``disagree``."""
    T = np.full((k, k), disagree)
    np.fill_diagonal(T, agree_other)
    T[preferred, preferred] = agree_preferred
    return T


# ----------------------------------------------------------- exact and bounds
@pytest.mark.parametrize("seed", range(12))
def test_exact_milp_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 7)), int(rng.integers(2, 4))
    unary, g = random_problem(rng, n, k, int(rng.integers(2, 10)), p_hard=0.2 * (seed % 2),
                              tables=seed % 3 == 0)
    best, _ = brute_force(unary, g)
    res = ExactMILP().map(unary, g)
    assert res.converged
    assert res.energy == pytest.approx(best, abs=1e-7)
    assert res.lower_bound == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize("seed", range(10))
def test_lp_bound_below_exact_below_every_engine(seed):
    rng = np.random.default_rng(100 + seed)
    n, k = int(rng.integers(4, 8)), int(rng.integers(2, 5))
    unary, g = random_problem(rng, n, k, int(rng.integers(3, 14)), tables=seed % 2 == 0)
    exact = ExactMILP().map(unary, g).energy
    lp = LPRelaxation().map(unary, g, rng=seed)
    assert lp.lower_bound <= exact + 1e-7
    for name, eng in ENGINES.items():
        res = eng.map(unary, g, rng=seed)
        assert res.energy >= exact - 1e-7, name
        assert res.energy == pytest.approx(g.energy(res.labels, unary)), name
        if res.lower_bound is not None:
            assert res.lower_bound <= res.energy + 1e-7, name


def test_lp_is_exact_when_its_solution_is_integral_and_gap_is_zero():
    # must-link-only problems with k = 2 are submodular: the relaxation is tight
    rng = np.random.default_rng(7)
    unary, g = random_problem(rng, 7, 2, 12, p_cl=0.0)
    res = LPRelaxation().map(unary, g, rng=0)
    assert res.info["integral_fraction"] == 1.0
    assert res.gap == pytest.approx(0.0, abs=1e-7)
    assert res.energy == pytest.approx(brute_force(unary, g)[0])


def test_cannot_links_make_the_relaxation_weak():
    # Three mutually cannot-linked points, two clusters, no unary preference. Some
    # cannot-link must be violated (cost = the smallest weight, 1.0), but u = 1/2
    # everywhere satisfies A.8 with z = 0, so the LP value is 0: an integrality gap.
    unary = np.zeros((3, 2))
    c = Constraints.from_pairs(cannot_link=[(0, 1), (1, 2), (0, 2)], n=3, weight=[1.0, 2.0, 3.0])
    lp = LPRelaxation().map(unary, c, rng=0)
    assert lp.lower_bound == pytest.approx(0.0, abs=1e-9)
    assert ExactMILP().map(unary, c).energy == pytest.approx(1.0)
    assert lp.energy >= 1.0 - 1e-9


def test_program_matches_equations_a1_to_a8_by_hand():
    # one must-link (w=2) and one cannot-link (w=3) on two clusters
    unary = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    g = PairwiseGraph.potts(3, [(0, 1), (1, 2)], [2.0, 3.0], [1, -1])
    p = build_program(unary, g)
    # variables: 6 u, 2 z^(M), 2 z^(C); rows: A.5 + A.6 (2 each), A.7 + A.8 (2 each), A.2 (3)
    assert p.c.shape == (10,)
    assert p.A_ub.shape == (8, 10) and p.A_eq.shape == (3, 10)
    np.testing.assert_allclose(p.c[6:8], [1.0, 1.0])  # w/2 per z^(M)_h
    np.testing.assert_allclose(p.c[8:10], [3.0, 3.0])  # w per z^(C)_h
    np.testing.assert_allclose(p.b_ub, [0, 0, 0, 0, 0, 0, 1, 1])
    # any labelling's program value equals its energy
    for y in itertools.product(range(2), repeat=3):
        x = np.zeros(10)
        x[np.arange(3) * 2 + np.array(y)] = 1
        u = x[:6].reshape(3, 2)
        x[6:8] = np.abs(u[0] - u[1])
        x[8:10] = np.maximum(u[1] + u[2] - 1, 0)
        assert np.all(p.A_ub @ x <= p.b_ub + 1e-12) and np.allclose(p.A_eq @ x, p.b_eq)
        assert p.c @ x == pytest.approx(g.energy(np.array(y), unary))


def test_cvxpy_backend_states_the_same_lp():
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    unary, g = random_problem(rng, 6, 3, 10, tables=True)
    a = LPRelaxation(backend="highs").map(unary, g, rng=0)
    b = LPRelaxation(backend="cvxpy").map(unary, g, rng=0)
    assert b.lower_bound == pytest.approx(a.lower_bound, abs=1e-5)


# ------------------------------------------------------------------ rounding
def test_rounding_returns_valid_labellings_and_respects_zero_weights():
    rng = np.random.default_rng(0)
    u = rng.dirichlet(np.ones(5) * 0.3, size=200)
    u[u < 0.05] = 0.0
    u /= u.sum(1, keepdims=True)
    labels, info = kleinberg_tardos_rounding(u, rng, n_rounds=20)
    assert labels.shape == (20, 200)
    assert labels.min() >= 0 and labels.max() < 5
    assert np.all(u[np.arange(200)[None, :], labels] > 0)  # never a label the LP gave 0
    assert info["fallback"] == 0
    # integral u is reproduced exactly
    y = rng.integers(5, size=50)
    lab, _ = kleinberg_tardos_rounding(np.eye(5)[y], rng, n_rounds=3)
    assert np.all(lab == y)


def test_rounding_phase_cap_falls_back_to_argmax():
    u = np.full((30, 4), 0.25)
    labels, info = kleinberg_tardos_rounding(u, np.random.default_rng(0), n_rounds=2, max_phases=1)
    assert labels.min() >= 0 and info["fallback"] > 0


def test_rounding_marginals_and_separation_probability():
    # Kleinberg & Tardos: P(y_i = h) = u_ih, and P(y_i != y_j) <= ||u_i - u_j||_1
    rng = np.random.default_rng(1)
    u = rng.dirichlet(np.ones(3), size=4)
    labels, _ = kleinberg_tardos_rounding(u, rng, n_rounds=20000)
    freq = np.stack([(labels == h).mean(0) for h in range(3)], axis=1)
    np.testing.assert_allclose(freq, u, atol=0.02)
    for i, j in itertools.combinations(range(4), 2):
        sep = np.mean(labels[:, i] != labels[:, j])
        assert sep <= np.abs(u[i] - u[j]).sum() + 0.02


def test_best_per_component_is_no_worse_than_any_candidate():
    rng = np.random.default_rng(2)
    unary, g = random_problem(rng, 12, 3, 8)
    n_comp, comp = g.components()
    cands = rng.integers(3, size=(6, 12))
    labels, _ = best_per_component(unary, g, cands, comp, n_comp)
    assert g.energy(labels, unary) <= min(g.energy(c, unary) for c in cands) + 1e-12


# ------------------------------------------------------------ belief propagation
@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("schedule", ["sequential", "flooding"])
@pytest.mark.parametrize("kernel", ["auto", "numpy"])
def test_bp_is_exact_on_trees(seed, schedule, kernel):
    rng = np.random.default_rng(200 + seed)
    n, k = int(rng.integers(3, 8)), int(rng.integers(2, 4))
    unary, g = random_tree(rng, n, k, tables=seed % 3 == 0)
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
    rng = np.random.default_rng(250 + seed)
    n, k = int(rng.integers(3, 9)), int(rng.integers(2, 4))
    unary, g = random_tree(rng, n, k, tables=seed % 3 == 0)
    best, _ = brute_force(unary, g)
    res = BeliefPropagation(reweight="trw", rel_gap=0.0, tol=1e-9, kernel=kernel).map(unary, g, rng=seed)
    assert res.converged and res.info["stopped"] == "gap"  # the tree LP is tight
    assert res.energy == pytest.approx(best, abs=1e-7)
    assert best - 1e-6 <= res.lower_bound <= best + 1e-9


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("schedule", ["sequential", "flooding"])
def test_sum_product_marginals_on_a_tree_equal_enumeration(seed, schedule):
    rng = np.random.default_rng(300 + seed)
    n, k = int(rng.integers(3, 7)), int(rng.integers(2, 4))
    unary, g = random_tree(rng, n, k, tables=seed % 2 == 1)
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
    np.testing.assert_allclose(res.info["marginals"], exact, atol=1e-9)
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


def _random_must_link_problem(rng, n, k, m):
    pairs = rng.integers(0, n, size=(m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    m = len(pairs)
    return rng.random((n, k)) * 3, PairwiseGraph.potts(n, pairs, rng.random(m) * 2, np.ones(m, int))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kernel", ["auto", "numpy"])
def test_trws_bound_is_valid_monotone_and_below_the_lp_bound(seed, kernel):
    rng = np.random.default_rng(600 + seed)
    must_link_only = seed % 2 == 0
    if must_link_only:
        unary, g = _random_must_link_problem(rng, 8, 3, 14)
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
        unary, g = _random_must_link_problem(rng, 8, 3, 16)
        best, _ = brute_force(unary, g)
        res = BeliefPropagation(rel_gap=0.0).map(unary, g, rng=0)
        assert res.lower_bound <= best + 1e-9 <= res.energy + 2e-9
        if res.converged:
            certified += 1
            assert res.energy == pytest.approx(best, abs=1e-6)
    assert certified >= 10  # the relaxation is tight on most attractive problems


def test_sequential_bp_is_deterministic_and_the_colouring_is_a_proper_order():
    from hmrf.inference.order import colour_classes

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


# -------------------------------------------------------------- hard factors
@pytest.mark.parametrize("name", sorted(ENGINES))
def test_hard_cannot_links_are_honoured(name):
    rng = np.random.default_rng(11)
    for _ in range(5):
        unary, g = random_problem(rng, 10, 4, 14, p_cl=0.7, p_hard=0.6)
        res = ENGINES[name].map(unary, g, rng=0)
        hard = g.hard & (g.kind == -1)
        assert np.all(res.labels[g.edges[hard, 0]] != res.labels[g.edges[hard, 1]])
        assert np.isfinite(res.energy)


@pytest.mark.parametrize("name", sorted(GLOBAL))
def test_infeasible_hard_constraints_raise(name):
    # three mutually hard-cannot-linked points and two clusters: no valid labelling
    c = Constraints.from_pairs(cannot_link=[(0, 1), (1, 2), (0, 2)], must_link=[(3, 4)],
                               n=5, weight=np.inf)
    with pytest.raises(InfeasibleError, match="point"):
        GLOBAL[name].map(np.zeros((5, 2)), c, rng=0)


@pytest.mark.parametrize("name", sorted(GLOBAL))
def test_forbidden_labels_and_table_infinities_are_honoured(name):
    k = 3
    T = np.ones((k, k))
    T[0, 1] = T[1, 0] = np.inf  # labels 0 and 1 may not sit side by side
    unary = np.array([[0.0, 5.0, 5.0], [5.0, 0.0, np.inf], [1.0, 1.0, 0.0]])
    g = PairwiseGraph.from_tables(3, [(0, 1), (1, 2)], T)
    best, y = brute_force(unary, g)
    res = GLOBAL[name].map(unary, g, rng=0)
    assert np.isfinite(res.energy) and res.energy >= best - 1e-9
    assert res.labels[1] != 2 and {res.labels[0], res.labels[1]} != {0, 1}
    if name.startswith("bp") or name == "exact":  # a tree: BP is exact too
        assert res.energy == pytest.approx(best)


# ---------------------------------------------------------- custom potentials
def test_soft_must_link_with_a_preferred_label_works_with_every_engine():
    # point 0 prefers label 1, point 1 prefers 2; the table makes agreeing on label 0
    # free, agreeing elsewhere cost 0.5 and disagreeing cost 2.5. For (0, 1): agreeing
    # on 0 costs 1 + 1 = 2, keeping the unary favourites 0 + 0 + 2.5, agreeing on 1 or
    # 2 costs 2.5. For (2, 3): agreeing on 0 costs 0 + 2 = 2, (0, 1) costs 2.5. Both
    # factors are trees, so BP and the (tight) local-polytope LP are exact too.
    k = 3
    T = preferred_label_table(k, disagree=2.5)
    unary = np.array([[1.0, 0.0, 2.0], [1.0, 2.0, 0.0], [0.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    pot = TablePotential(4, [(0, 1), (2, 3)], T)
    g = pot.graph(n_clusters=k)
    best, y = brute_force(unary, g)
    assert y.tolist() == [0, 0, 0, 0] and best == pytest.approx(4.0)
    for name, eng in ENGINES.items():
        res = eng.map(unary, g, rng=0)
        if name == "icm":
            assert res.energy >= best - 1e-9  # a local minimum only
        else:
            assert res.energy == pytest.approx(best), name


class PreferredLabelMustLink(PairwisePotential):
    """A user-defined potential: soft must-links that also prefer one cluster."""

    def __init__(self, n, pairs, k, preferred=0, weight=1.0):
        self.n, self.pairs, self.k = n, pairs, k
        self.table = preferred_label_table(k, preferred=preferred)
        self.weight = weight

    @property
    def n_nodes(self):
        return self.n

    def graph(self, X=None, params=None, n_clusters=None):
        return PairwiseGraph.from_tables(self.n, self.pairs, self.table, weight=self.weight)


def test_user_defined_potential_in_an_hmrf_works_with_every_engine():
    rng = np.random.default_rng(21)
    X = rng.normal(size=(7, 2))
    pot = PreferredLabelMustLink(7, [(0, 1), (1, 2), (3, 4), (5, 6), (2, 5)], k=3, preferred=2,
                                 weight=0.7)
    model = HMRF(X, 3, potentials=[pot],
                 constraints=Constraints.from_pairs(cannot_link=[(0, 6)], n=7, weight=1.5))
    params = model.emission.init_params(model.X, X[[0, 3, 6]])
    unary, g = model.unary(params), model.graph(params)
    assert g.n_labels == 3 and not g.is_potts
    best, y = brute_force(unary, g)
    for name, eng in ENGINES.items():
        res = eng.map(unary, g, rng=0)
        assert res.energy >= best - 1e-9
        assert model.energy(res.labels, params) == pytest.approx(res.energy)
        if name == "exact":
            assert res.energy == pytest.approx(best)
        if res.lower_bound is not None:
            assert res.lower_bound <= best + 1e-7


@pytest.mark.parametrize("seed", range(4))
def test_table_potentials_on_loopy_graphs(seed):
    rng = np.random.default_rng(400 + seed)
    n, k = 6, 3
    edges = np.array([(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5])
    T = rng.random((len(edges), k, k)) * 2
    g = PairwiseGraph.concatenate([
        PairwiseGraph.from_tables(n, edges, T),
        PairwiseGraph.potts(n, [(0, 5)], [1.0], [1]),
    ])
    unary = rng.random((n, k))
    best, _ = brute_force(unary, g)
    assert ExactMILP().map(unary, g).energy == pytest.approx(best)
    lp = LPRelaxation(polish="icm").map(unary, g, rng=0)
    assert lp.lower_bound <= best + 1e-7 <= lp.energy + 2e-7


# ----------------------------------------------------------- misc behaviour
@pytest.mark.parametrize("name", sorted(ENGINES))
def test_engines_agree_on_problems_with_no_edges(name):
    rng = np.random.default_rng(9)
    unary = rng.random((20, 4))
    res = ENGINES[name].map(unary, PairwiseGraph.empty(20), rng=0)
    assert res.labels.tolist() == np.argmin(unary, 1).tolist()
    assert res.energy == pytest.approx(unary.min(1).sum())
    # with only hard must-links everything is contracted: still the exact answer
    c = Constraints.from_pairs(must_link=[(0, 1), (1, 2)], n=20, weight=np.inf)
    best = unary.min(1).sum() - unary[:3].min(1).sum() + unary[:3].sum(0).min()
    assert ENGINES[name].map(unary, c, rng=0).energy == pytest.approx(best)


@pytest.mark.parametrize("name", sorted(GLOBAL))
def test_same_seed_same_result_and_inputs_untouched(name):
    rng = np.random.default_rng(12)
    unary, g = random_problem(rng, 15, 4, 25)
    u0 = unary.copy()
    a = GLOBAL[name].map(unary, g, rng=5)
    b = GLOBAL[name].map(unary, g, rng=5)
    assert a.labels.tolist() == b.labels.tolist()
    np.testing.assert_array_equal(unary, u0)


def test_exact_time_limit_reports_bound_and_not_converged():
    rng = np.random.default_rng(13)
    unary, g = random_problem(rng, 40, 5, 120, p_cl=0.8)
    res = ExactMILP(time_limit=1e-4).map(unary, g, rng=0)
    assert not res.converged
    assert res.lower_bound <= res.energy + 1e-7
    assert res.info["fallback_nodes"] > 0


def test_lp_callback_and_info():
    rng = np.random.default_rng(14)
    unary, g = random_problem(rng, 10, 3, 15)
    bounds = []
    res = LPRelaxation(polish="icm").map(unary, g, rng=0, callback=lambda it, y, e, b: bounds.append(b))
    assert bounds and all(b == pytest.approx(res.lower_bound) for b in bounds)
    assert {"lp_time", "rounding_time", "integral_fraction"} <= set(res.info)


@pytest.mark.parametrize("engine, match", [
    (BeliefPropagation(damping=1.0), "damping"),
    (BeliefPropagation(mode="avg"), "mode"),
    (BeliefPropagation(reweight=2.0), "reweight"),
    (BeliefPropagation(schedule="random"), "schedule"),
    (BeliefPropagation(rel_gap=1.5), "rel_gap"),
    (BeliefPropagation(patience=0), "patience"),
    (BeliefPropagation(polish="greedy"), "polish"),
    (BeliefPropagation(kernel="cuda"), "kernel"),
    (BeliefPropagation(order="random"), "order"),
    (BeliefPropagation(order="bfs", kernel="numpy"), "order='bfs' needs the compiled kernel"),
    (LPRelaxation(backend="gurobi"), "backend"),
    (LPRelaxation(n_rounds=0), "n_rounds"),
    (ExactMILP(time_limit=0), "time_limit"),
])
def test_bad_engine_parameters_are_named(engine, match):
    c = Constraints.from_pairs(must_link=[(0, 1)], n=2)
    with pytest.raises(ValueError, match=match):
        engine.map(np.zeros((2, 2)), c)


def test_engines_resolve_by_name_and_run_inside_hmrf_kmeans():
    from hmrf import HMRFKMeans

    assert isinstance(get_engine("bp"), BeliefPropagation)
    assert isinstance(get_engine("lp"), LPRelaxation)
    assert isinstance(get_engine("exact"), ExactMILP)
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.5, (15, 2)), rng.normal(3, 0.5, (15, 2))])
    ml, cl = [(0, 1), (16, 17), (2, 20)], [(0, 16), (3, 18)]
    for name in ("bp", "lp", "exact", LPRelaxation(polish="icm")):
        est = HMRFKMeans(2, inference=name, random_state=0).fit(X, must_link=ml, cannot_link=cl)
        assert np.all(np.diff(est.history_) <= 1e-9)
        assert est.labels_[0] != est.labels_[16] and est.labels_[0] == est.labels_[1]
