"""AlphaExpansion (Boykov, Veksler & Zabih 2001) and its binary solver (graph cut / QPBO).

Every answer is checked against enumeration (all labellings, or all 2^n expansion
moves) or ExactMILP, never against the engine itself.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mrf_problems import brute_force
from oracles import graphcut_numpy as oracle

from hmrf import Constraints, InfeasibleError, PairwiseGraph
from hmrf.inference import ExactMILP, get_engine
from hmrf.inference.expansion import AlphaExpansion, ExpansionMoves, _arc_layout, classify_tables
from hmrf.inference.graphcut_numba import move_problem
from hmrf.inference.qpbo import solve_split


# ----------------------------------------------------------------------------- helpers
def all_labellings(n, k):
    return np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64)



def random_graph(rng, n, k, m, p_cl=0.0, p_hard=0.0):
    unary = rng.random((n, k)) * 3
    first = rng.integers(0, n, size=m)
    pairs = np.c_[first, (first + rng.integers(1, n, size=m)) % n]
    kind = np.where(rng.random(len(pairs)) < p_cl, -1, 1)
    w = rng.uniform(0.1, 2.0, size=len(pairs))
    w[(rng.random(len(pairs)) < p_hard) & (kind == -1)] = np.inf
    return unary, PairwiseGraph.potts(n, pairs, w, kind)


def random_tree(rng, n, k):
    parent = [int(rng.integers(0, i)) for i in range(1, n)]
    edges = np.array([(p, i + 1) for i, p in enumerate(parent)])
    return rng.random((n, k)) * 3, PairwiseGraph.potts(n, edges, rng.uniform(0.1, 2.0, n - 1), np.ones(n - 1))


def binary_energy(x, delta, p, q, A, B, C, D):
    x = np.asarray(x, dtype=bool)
    xp, xq = x[p], x[q]
    return float(delta[x].sum() + np.where(xp, np.where(xq, D, C), np.where(xq, B, A)).sum())


def solve_binary(delta, p, q, A, B, C, D, method="qpbo"):
    """The compiled solver on a problem given by its tables: ``(x, labelled, exact)``."""
    up, uq, half = oracle.split_terms(A, B, C, D)
    n = delta.shape[0]
    u = delta + np.bincount(p, weights=up, minlength=n) + np.bincount(q, weights=uq, minlength=n)
    x, labelled = solve_split(u, p, q, half, method == "truncate")
    return x, labelled, not (half < 0).any()


def random_binary(rng, n, m, submodular):
    delta = rng.normal(size=n)
    p = rng.integers(0, n, size=m)
    q = (p + rng.integers(1, n, size=m)) % n
    A, B, C, D = rng.normal(size=(4, m))
    if submodular:  # raise B + C until A + D <= B + C
        B += np.maximum(A + D - B - C, 0) + rng.random(m)
    return delta, p, q, A, B, C, D


# -------------------------------------------------------------- the binary solver
@pytest.mark.parametrize("seed", range(40))
def test_graph_cut_is_exact_on_submodular_binary_problems(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    prob = random_binary(rng, n, int(rng.integers(0, 3 * n + 1)) if n > 1 else 0, submodular=True)
    x, labelled, exact = solve_binary(*prob)
    assert exact and labelled.all()
    best = min(binary_energy(y, *prob) for y in itertools.product([0, 1], repeat=n))
    assert binary_energy(x, *prob) == pytest.approx(best, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 8))
def test_qpbo_labels_are_persistent_and_fusing_never_raises_the_energy(seed, n):
    """Kolmogorov & Rother (2007), §2.3: some global minimum agrees with the labelled
    variables (weak persistency), and fusing the partial labelling into any complete
    labelling y never raises E(y) (autarky)."""
    rng = np.random.default_rng(seed)
    prob = random_binary(rng, n, int(rng.integers(1, 3 * n + 1)), submodular=False)
    x, labelled, _ = solve_binary(*prob)
    xs = np.array(list(itertools.product([0, 1], repeat=n)), dtype=bool)
    e = np.array([binary_energy(y, *prob) for y in xs])
    agree = np.all(xs[:, labelled] == x[labelled], axis=1)
    assert e[agree].min() == pytest.approx(e.min(), abs=1e-9)
    for y in xs[rng.permutation(len(xs))[:8]]:
        fused = np.where(labelled, x, y)
        assert binary_energy(fused, *prob) <= binary_energy(y, *prob) + 1e-9
    assert binary_energy(x, *prob) <= binary_energy(np.zeros(n, bool), *prob) + 1e-9
    truncated, labelled_t, exact = solve_binary(*prob, method="truncate")
    assert labelled_t.all() if exact else not labelled_t.any()  # truncation proves nothing
    assert binary_energy(truncated, *prob) <= binary_energy(np.zeros(n, bool), *prob) + 1e-9


@pytest.mark.parametrize("truncate", [False, True])
@pytest.mark.parametrize("seed", range(10))
def test_qpbo_is_the_numpy_and_scipy_qpbo(seed, truncate):
    # integer split problems with non-submodular terms: the compiled QPBO graph, its cut
    # and the truncated cut of the unlabelled variables give the oracle's labelling
    rng = np.random.default_rng(800 + seed)
    n, m = 200, 600
    p = rng.integers(0, n, size=m)
    q = (p + rng.integers(1, n, size=m)) % n
    u = rng.integers(-6, 7, size=n).astype(float)
    half = rng.integers(-2, 5, size=m) / 2.0
    x, labelled = solve_split(u, p, q, half, truncate)
    y, labelled_y = oracle.solve_split(u, p, q, half, truncate)
    np.testing.assert_array_equal(labelled, labelled_y)
    np.testing.assert_array_equal(x, y)
    assert 0 < labelled.sum() < n or truncate


# ------------------------------------------------------------------ single moves
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 7), k=st.integers(2, 4))
def test_a_must_link_move_is_the_best_expansion(seed, n, k):
    """Every α-expansion of y, enumerated: the move reaches the cheapest one."""
    rng = np.random.default_rng(seed)
    unary, g = random_graph(rng, n, k, int(rng.integers(1, 2 * n + 1)))
    y = rng.integers(0, k, size=n)
    alpha = int(rng.integers(k))
    new, change, _ = ExpansionMoves(unary, g).move(y, alpha)
    switch = np.array(list(itertools.product([0, 1], repeat=n)), dtype=bool)
    best = min(g.energy(np.where(s, alpha, y), unary) for s in switch)
    assert np.all((new == y) | (new == alpha))
    assert g.energy(new, unary) == pytest.approx(best, abs=1e-9)
    assert change == pytest.approx(g.energy(new, unary) - g.energy(y, unary), abs=1e-9)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 12), k=st.integers(1, 4),
       p_cl=st.sampled_from([0.0, 0.5, 1.0]), p_hard=st.sampled_from([0.0, 0.5]),
       p_forbid=st.sampled_from([0.0, 0.3]), method=st.sampled_from(["qpbo", "truncate"]))
def test_no_move_raises_the_energy_or_breaks_a_hard_constraint(seed, n, k, p_cl, p_hard, p_forbid, method):
    """Each move, before the engine's guard, from a random labelling: the energy
    (PairwiseGraph.energy) never rises from a labelling that honours every hard
    constraint, which then stays honoured; from one that does not, the number of
    broken hard constraints (cannot-links, forbidden labels) never grows. Cannot-link
    moves go through QPBO or truncation."""
    rng = np.random.default_rng(seed)
    unary, g = random_graph(rng, n, k, int(rng.integers(1, 3 * n + 1)), p_cl=p_cl, p_hard=p_hard)
    forbid = rng.random((n, k)) < p_forbid
    forbid[np.arange(n), rng.integers(0, k, n)] = False  # every point keeps a label
    unary[forbid] = np.inf
    moves = ExpansionMoves(unary, g)
    y = rng.integers(0, k, size=n)
    hard_cl = np.isinf(g.weight) & (g.kind == -1)

    def broken(labels):
        return int(np.sum(hard_cl & (labels[g.edges[:, 0]] == labels[g.edges[:, 1]]))
                   + np.sum(forbid[np.arange(n), labels]))

    for alpha in rng.integers(0, k, size=2 * k):
        new, change, _ = moves.move(y, alpha, method)
        assert np.all((new == y) | (new == alpha)) and not np.any(forbid[new != y, alpha])
        assert broken(new) <= broken(y)
        assert change == pytest.approx(moves.energy(new) - moves.energy(y), abs=1e-9)
        if broken(y) == 0:
            assert moves.energy(y) == pytest.approx(g.energy(y, unary))
            assert broken(new) == 0
            assert g.energy(new, unary) <= g.energy(y, unary) + 1e-9
        else:
            assert moves.energy(new) <= moves.energy(y) + 1e-9
        y = new


# ------------------------------------------------------------------------ the engine
@pytest.mark.parametrize("seed", range(30))
def test_exact_with_two_labels_on_must_links(seed):
    """With two labels a Potts must-link energy is submodular, and a labelling no
    expansion improves is a global minimum."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 11))
    unary, g = random_graph(rng, n, 2, int(rng.integers(1, 3 * n)))
    res = AlphaExpansion().map(unary, g, rng=seed)
    assert res.energy == pytest.approx(brute_force(unary, g)[0], abs=1e-9)
    assert res.converged and res.info["exact_moves"] and res.info["qpbo_moves"] == 0


@pytest.mark.parametrize("seed", range(5))
def test_exact_with_two_labels_on_larger_must_link_problems_against_milp(seed):
    rng = np.random.default_rng(100 + seed)
    unary, g = random_graph(rng, 60, 2, 150)
    res = AlphaExpansion().map(unary, g, rng=seed)
    assert res.energy == pytest.approx(ExactMILP().map(unary, g).energy, abs=1e-6)


@pytest.mark.parametrize("seed", range(10))
def test_trees_against_exact_milp(seed):
    """Two labels: exact on trees (as on any graph). More labels: α-expansion is not
    exact on trees, but within Theorem 6.1's bound of the MILP optimum."""
    rng = np.random.default_rng(200 + seed)
    for k in (2, 3, 5):
        unary, g = random_tree(rng, 40, k)
        res = AlphaExpansion().map(unary, g, rng=seed)
        opt = ExactMILP().map(unary, g)
        if k == 2:
            assert res.energy == pytest.approx(opt.energy, abs=1e-6)
        y = opt.labels
        bound = unary[np.arange(40), y].sum() + 2 * g.pairwise_energy(y)
        assert opt.energy - 1e-6 <= res.energy <= bound + 1e-6


def test_trees_mostly_exact_with_more_labels():
    """Enumeration on 200 small trees with 3-4 labels: the optimum on nearly all
    (the exceptions are the non-exactness of expansion, within the bound)."""
    rng = np.random.default_rng(7)
    exact = 0
    for t in range(200):
        n, k = int(rng.integers(3, 7)), int(rng.integers(3, 5))
        unary, g = random_tree(rng, n, k)
        best, _ = brute_force(unary, g)
        exact += AlphaExpansion().map(unary, g, rng=t).energy <= best + 1e-9
    assert exact >= 190


@pytest.mark.parametrize("cycles", ["sweep", "adaptive"])
@pytest.mark.parametrize("seed", range(40))
def test_parity_with_brute_force_on_tiny_must_link_problems(seed, cycles):
    """Within the factor-2 bound of the optimum (Theorem 6.1), and no expansion of
    the result is cheaper (it is a local minimum of the move space), whichever schedule."""
    rng = np.random.default_rng(300 + seed)
    n, k = int(rng.integers(2, 7)), int(rng.integers(2, 5))
    unary, g = random_graph(rng, n, k, int(rng.integers(1, 3 * n)))
    res = AlphaExpansion(cycles=cycles).map(unary, g, rng=seed)
    best, y = brute_force(unary, g)
    assert best - 1e-9 <= res.energy <= unary[np.arange(n), y].sum() + 2 * g.pairwise_energy(y) + 1e-9
    switch = np.array(list(itertools.product([0, 1], repeat=n)), dtype=bool)
    for alpha in range(k):
        moved = min(g.energy(np.where(s, alpha, res.labels), unary) for s in switch)
        assert moved >= res.energy - 1e-9


def test_optimal_on_most_tiny_must_link_problems():
    rng = np.random.default_rng(11)
    hits = 0
    for t in range(100):
        n, k = int(rng.integers(2, 7)), int(rng.integers(2, 5))
        unary, g = random_graph(rng, n, k, int(rng.integers(1, 3 * n)))
        hits += AlphaExpansion().map(unary, g, rng=t).energy <= brute_force(unary, g)[0] + 1e-9
    assert hits >= 95


@pytest.mark.parametrize("method", ["qpbo", "truncate"])
@pytest.mark.parametrize("seed", range(20))
def test_cannot_links_never_raise_the_energy_of_the_start(seed, method):
    """Mixed problems, random start: the result is never worse than ``init`` nor than
    the optimum's lower limit, the guard never fires, and cannot-link moves use QPBO."""
    rng = np.random.default_rng(400 + seed)
    n, k = int(rng.integers(3, 8)), int(rng.integers(2, 4))
    unary, g = random_graph(rng, n, k, int(rng.integers(2, 3 * n)), p_cl=0.5)
    init = rng.integers(0, k, size=n)
    res = AlphaExpansion(nonsubmodular=method).map(unary, g, init=init, rng=seed)
    assert brute_force(unary, g)[0] - 1e-9 <= res.energy <= g.energy(init, unary) + 1e-9
    assert res.info["rejected_moves"] == 0


def test_quality_on_mixed_problems_against_brute_force():
    rng = np.random.default_rng(12)
    excess = []
    for t in range(60):
        n, k = int(rng.integers(3, 7)), int(rng.integers(2, 4))
        unary, g = random_graph(rng, n, k, int(rng.integers(2, 3 * n)), p_cl=0.5)
        best = brute_force(unary, g)[0]
        excess.append(AlphaExpansion().map(unary, g, rng=t).energy - best)
    excess = np.array(excess)
    assert excess.min() >= -1e-9
    assert np.mean(excess < 1e-9) >= 0.7


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 10), k=st.integers(2, 4),
       cycles=st.sampled_from(["sweep", "adaptive"]))
def test_trace_is_the_full_energy_after_each_sweep_and_never_rises(seed, n, k, cycles):
    rng = np.random.default_rng(seed)
    unary, g = random_graph(rng, n, k, int(rng.integers(1, 3 * n)), p_cl=0.3)
    seen = []
    res = AlphaExpansion(cycles=cycles).map(unary, g, init=rng.integers(0, k, n), rng=seed,
                               callback=lambda it, y, e, b: seen.append((it, g.energy(y, unary), e)))
    trace = res.info["trace"]
    assert len(trace) == max(res.n_iter, 1) and trace[-1] == pytest.approx(res.energy)
    assert np.all(np.diff(trace) <= 1e-9)
    assert [s[0] for s in seen] == list(range(1, res.n_iter + 1))
    assert [s[1] for s in seen] == pytest.approx(trace) and [s[2] for s in seen] == pytest.approx(trace)


def test_hard_cannot_links_are_honoured_from_a_violating_start():
    rng = np.random.default_rng(5)
    for t in range(20):
        unary, g = random_graph(rng, 12, 4, 30, p_cl=0.6, p_hard=0.6)
        res = AlphaExpansion().map(unary, g, init=np.zeros(12, dtype=np.int64), rng=t)
        assert np.isfinite(res.energy)
        hard = np.isinf(g.weight)
        assert np.all(res.labels[g.edges[hard, 0]] != res.labels[g.edges[hard, 1]])


def test_hard_constraints_contracted_and_infeasible_ones_raise_naming_a_point():
    c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(1, 2), (0, 3), (2, 3)], n=5,
                               weight=np.inf)
    unary = np.random.default_rng(0).random((5, 3))
    res = AlphaExpansion().map(unary, c, rng=0)
    y = res.labels
    assert y[0] == y[1] and y[1] != y[2] and y[0] != y[3] and y[2] != y[3]
    assert res.energy == pytest.approx(ExactMILP().map(unary, c).energy)
    # a hard cannot-link triangle with two labels cannot be coloured
    tri = PairwiseGraph.potts(4, [(0, 1), (1, 2), (0, 2)], [np.inf] * 3, [-1] * 3)
    with pytest.raises(InfeasibleError) as err:
        AlphaExpansion().map(np.zeros((4, 2)), tri, rng=0)
    assert err.value.point in (0, 1, 2)


def test_forbidden_labels_are_never_given():
    rng = np.random.default_rng(3)
    unary, g = random_graph(rng, 15, 4, 40, p_cl=0.3)
    unary[:, 0] = np.inf
    unary[3, 1:3] = np.inf
    res = AlphaExpansion().map(unary, g, init=np.zeros(15, dtype=np.int64), rng=0)
    assert np.isfinite(res.energy) and np.all(res.labels != 0) and res.labels[3] == 3


# ------------------------------------------------------------------------- tables
def potts_as_table(k):
    return 1.0 - np.eye(k)


def test_metric_tables_give_exact_moves_and_match_potts():
    rng = np.random.default_rng(8)
    unary, g = random_graph(rng, 7, 3, 12)
    tg = PairwiseGraph.from_tables(7, g.edges, potts_as_table(3), weight=g.weight)
    a = AlphaExpansion(label_order="fixed").map(unary, g)
    b = AlphaExpansion(label_order="fixed").map(unary, tg)
    assert b.info["exact_moves"] and b.info["qpbo_moves"] == 0
    assert a.energy == pytest.approx(b.energy) and np.array_equal(a.labels, b.labels)


@pytest.mark.parametrize("seed", range(10))
def test_truncated_linear_metric_within_the_bound(seed):
    """Truncated linear ``min(|a - b|, 2)`` is a metric: moves are exact; the result is
    within Theorem 6.1's ``2c`` factor, ``c`` = max / min non-zero table entry."""
    rng = np.random.default_rng(500 + seed)
    k, n = 4, 6
    a = np.arange(k)
    T = np.minimum(np.abs(a[:, None] - a[None]), 2).astype(float)
    e = rng.integers(0, n, size=(10, 2))
    e = e[e[:, 0] != e[:, 1]]
    g = PairwiseGraph.from_tables(n, e, T, weight=rng.uniform(0.1, 1.5, len(e)))
    unary = rng.random((n, k)) * 3
    assert classify_tables(g)
    res = AlphaExpansion().map(unary, g, rng=seed)
    best, y = brute_force(unary, g)
    assert best - 1e-9 <= res.energy <= unary[np.arange(n), y].sum() + 2 * 2 * g.pairwise_energy(y) + 1e-9
    assert res.info["exact_moves"]


def test_semi_metric_tables_use_qpbo_and_never_raise_the_energy():
    rng = np.random.default_rng(9)
    k, n = 4, 7
    a = np.arange(k)
    T = (a[:, None] - a[None]) ** 2.0  # a semi-metric, not a metric
    assert not classify_tables(PairwiseGraph.from_tables(2, [(0, 1)], T))
    # labels 0 and 2 around α = 1: T[0, 2] = 4 > T[0, 1] + T[1, 2] = 2, not submodular
    two = PairwiseGraph.from_tables(2, [(0, 1)], T)
    _, _, cut = ExpansionMoves(np.zeros((2, k)), two).move(np.array([0, 2]), 1)
    assert not cut.exact
    for t in range(15):
        e = rng.integers(0, n, size=(12, 2))
        e = e[e[:, 0] != e[:, 1]]
        g = PairwiseGraph.from_tables(n, e, T, weight=rng.uniform(0.1, 1.0, len(e)))
        unary = rng.random((n, k)) * 3
        init = rng.integers(0, k, n)
        res = AlphaExpansion().map(unary, g, init=init, rng=t)
        assert brute_force(unary, g)[0] - 1e-9 <= res.energy <= g.energy(init, unary) + 1e-9
        assert res.info["rejected_moves"] == 0


def test_forbidden_table_entries_are_honoured():
    k = 3
    T = potts_as_table(k)
    T[0, 1] = T[1, 0] = np.inf  # labels 0 and 1 may not be neighbours
    g = PairwiseGraph.from_tables(4, [(0, 1), (1, 2), (2, 3)], T)
    unary = np.array([[0, 5, 5], [5, 0, 5], [0, 5, 5], [5, 0, 5]], dtype=float)
    res = AlphaExpansion().map(unary, g, rng=0)
    assert np.isfinite(res.energy)
    assert res.energy == pytest.approx(brute_force(unary, g)[0])


@pytest.mark.parametrize("table, match", [
    (np.array([[0.5, 1.0], [1.0, 0.0]]), r"table 0 has a non-zero diagonal: T\[0, 0\] = 0.5"),
    (np.array([[0.0, 1.0], [2.0, 0.0]]), r"table 0 is not symmetric: T\[0, 1\] = 1 but T\[1, 0\] = 2"),
    (np.array([[0.0, -1.0], [-1.0, 0.0]]), r"table 0 is negative: T\[0, 1\] = -1"),
])
def test_tables_that_are_not_semi_metric_are_refused_by_name(table, match):
    g = PairwiseGraph.from_tables(3, [(0, 1), (1, 2)], table)
    with pytest.raises(ValueError, match=match + r".*AlphaExpansion\(tables='any'\)"):
        AlphaExpansion().map(np.zeros((3, 2)), g)


@pytest.mark.parametrize("seed", range(15))
def test_any_table_on_request_never_raises_the_energy(seed):
    """General tables (random, non-zero diagonals, asymmetric) with ``tables="any"``:
    exact cuts where the terms are submodular, QPBO elsewhere; never above ``init``."""
    rng = np.random.default_rng(600 + seed)
    n, k = 6, 3
    e = rng.integers(0, n, size=(9, 2))
    e = e[e[:, 0] != e[:, 1]]
    g = PairwiseGraph.concatenate([
        PairwiseGraph.from_tables(n, e, rng.random((len(e), k, k)) * 2),
        PairwiseGraph.potts(n, [(0, 5)], [1.0], [1]),
    ])
    unary = rng.random((n, k)) * 3
    init = rng.integers(0, k, n)
    res = AlphaExpansion(tables="any").map(unary, g, init=init, rng=seed)
    assert brute_force(unary, g)[0] - 1e-9 <= res.energy <= g.energy(init, unary) + 1e-9
    assert res.info["rejected_moves"] == 0


# ---------------------------------------------------------- engine contract details
def test_validated_parameters():
    with pytest.raises(ValueError, match=r"AlphaExpansion: max_sweeps must be an integer in \[1, inf\); got 0"):
        AlphaExpansion(max_sweeps=0).map(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="label_order must be one of 'fixed', 'random'; got 'up'"):
        AlphaExpansion(label_order="up").map(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="nonsubmodular must be one of 'qpbo', 'truncate'"):
        AlphaExpansion(nonsubmodular="ignore").map(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="tables must be one of 'semi-metric', 'any'"):
        AlphaExpansion(tables="metric").map(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="cycles must be one of 'sweep', 'adaptive'"):
        AlphaExpansion(cycles="queue").map(np.zeros((2, 2)))


@pytest.mark.parametrize("order", ["fixed", "random"])
def test_same_seed_same_result_inputs_untouched(order):
    rng = np.random.default_rng(13)
    unary, g = random_graph(rng, 200, 6, 500, p_cl=0.3)
    u0, init = unary.copy(), rng.integers(0, 6, 200)
    init0 = init.copy()
    a = AlphaExpansion(label_order=order).map(unary, g, init=init, rng=1)
    b = AlphaExpansion(label_order=order).map(unary, g, init=init, rng=1)
    assert np.array_equal(a.labels, b.labels) and a.energy == b.energy
    assert np.array_equal(unary, u0) and np.array_equal(init, init0)


def test_random_label_orders_reach_local_minima_of_comparable_energy():
    rng = np.random.default_rng(16)
    unary, g = random_graph(rng, 400, 8, 900)
    fixed = AlphaExpansion().map(unary, g)
    energies = [AlphaExpansion(label_order="random").map(unary, g, rng=s).energy for s in range(4)]
    assert all(abs(e - fixed.energy) <= 0.02 * fixed.energy for e in energies)


def test_a_converged_must_link_labelling_is_a_fixed_point():
    rng = np.random.default_rng(15)
    unary, g = random_graph(rng, 300, 6, 700)
    a = AlphaExpansion().map(unary, g, rng=1)
    assert a.converged
    again = AlphaExpansion().map(unary, g, init=a.labels, rng=2)
    assert np.array_equal(again.labels, a.labels) and again.n_iter == 1 and again.converged


@pytest.mark.parametrize("seed", range(30))
def test_adaptive_cycles_stop_at_a_local_minimum_of_every_expansion_move(seed):
    """GCO's adaptive schedule on tiny problems: never worse than its start, and on
    must-links (every move an exact cut) no expansion of its result (every α, all 2^n
    switching sets, enumerated) is cheaper. It is not always the plain schedule's local
    minimum: other moves, other minima (either may be the lower)."""
    rng = np.random.default_rng(900 + seed)
    n, k = int(rng.integers(2, 8)), int(rng.integers(3, 6))
    unary, g = random_graph(rng, n, k, int(rng.integers(1, 3 * n)), p_cl=0.3 * (seed % 2))
    init = rng.integers(0, k, n)
    res = AlphaExpansion(cycles="adaptive").map(unary, g, init=init, rng=seed)
    assert res.converged and res.energy <= g.energy(init, unary) + 1e-9
    assert res.energy >= brute_force(unary, g)[0] - 1e-9
    if seed % 2:  # cannot-links: QPBO moves, no local-minimum guarantee
        return
    assert res.info["exact_moves"]
    switch = np.array(list(itertools.product([0, 1], repeat=n)), dtype=bool)
    for alpha in range(k):
        moved = min(g.energy(np.where(s, alpha, res.labels), unary) for s in switch)
        assert moved >= res.energy - 1e-9


@pytest.mark.parametrize("seed", range(20))
def test_both_schedules_are_optimal_with_two_labels(seed):
    """Two labels, must-links: a labelling no expansion lowers is a global minimum, so
    the adaptive and the plain schedule both reach the enumerated optimum."""
    rng = np.random.default_rng(950 + seed)
    n = int(rng.integers(2, 9))
    unary, g = random_graph(rng, n, 2, int(rng.integers(1, 3 * n)))
    best = brute_force(unary, g)[0]
    for cycles in ("sweep", "adaptive"):
        assert AlphaExpansion(cycles=cycles).map(unary, g, rng=seed).energy == pytest.approx(best, abs=1e-9)


def test_adaptive_cycles_follow_gcos_queue_traced_by_hand():
    """The queue of GCO's ``expansion(-1)``, traced by hand for k = 4 and scripted move
    outcomes: a failed label swaps with the queue's last one (so 0 fails, then 3, 2
    are tried, 1 succeeds); fewer than half succeeded, so {1} is the next queue; 1
    fails, so the labels dropped from the enclosing queue are tried (2, 0, 3 in the
    table's order then); none succeeds and the queue stack is empty: done."""
    outcomes = iter([False, False, False, True, False, False, False, False])
    tried, cycles_seen = [], []

    def expand(alpha):
        tried.append(alpha)
        return next(outcomes)

    converged, cycles = AlphaExpansion()._adaptive(
        4, expand, np.random.default_rng(0), lambda c, y: cycles_seen.append(c), lambda: None)
    assert tried == [0, 3, 2, 1, 1, 2, 0, 3]
    assert converged and cycles == 3 and cycles_seen == [1, 2, 3]


def test_adaptive_cycles_stop_when_max_sweeps_moves_are_spent():
    """``max_sweeps * k`` moves at most: a label that always succeeds is tried until then."""
    tried = []

    def expand(alpha):
        tried.append(alpha)
        return alpha == 0

    converged, _ = AlphaExpansion(max_sweeps=2)._adaptive(
        3, expand, np.random.default_rng(0), lambda c, y: None, lambda: None)
    assert not converged and len(tried) == 6


def test_max_sweeps_caps_the_sweeps():
    rng = np.random.default_rng(14)
    unary, g = random_graph(rng, 300, 8, 900, p_cl=0.3)
    res = AlphaExpansion(max_sweeps=1).map(unary, g, rng=0)
    assert res.n_iter == 1 and len(res.info["trace"]) == 1


def test_no_edges_and_isolated_nodes():
    unary = np.random.default_rng(0).random((6, 3))
    res = AlphaExpansion().map(unary, PairwiseGraph.empty(6))
    assert np.array_equal(res.labels, unary.argmin(1)) and res.info["trace"] == [res.energy]


# ------------------------------------------------------------ through the estimators
ESTIMATORS_WITH_ENGINES = ["HMRFKMeans", "PCKMeans", "MPCKMeans"]  # M-KMeans has no engine


@pytest.mark.parametrize("spec", ["instance", "expansion"])
@pytest.mark.parametrize("name", ESTIMATORS_WITH_ENGINES)
def test_every_estimator_runs_with_alpha_expansion(name, spec):
    from sklearn.datasets import load_iris

    import hmrf

    X, y = load_iris(return_X_y=True)
    c = Constraints.sample_from_labels(y, 120, rng=3)
    hard = np.zeros(len(c), dtype=bool)
    hard[:30] = True
    weight = np.where(hard, np.inf, c.weight)
    c = Constraints(150, c.pairs, c.kind, weight)
    cls = getattr(hmrf, name)
    engine = AlphaExpansion() if spec == "instance" else spec
    # one run (n_init=1): the run this checks is the one it always checked
    fits = [cls(3, inference=engine, n_init=1, random_state=0).fit(X, constraints=c) for _ in range(2)]
    est = fits[0]
    assert np.array_equal(est.labels_, fits[1].labels_)
    assert set(np.unique(est.labels_)) <= {0, 1, 2} and np.isfinite(est.objective_)
    same = est.labels_[c.pairs[:, 0]] == est.labels_[c.pairs[:, 1]]
    assert np.all(same[hard] == (c.kind[hard] == 1))
    assert np.all(np.diff(est.history_) <= 1e-9 * np.abs(est.history_[:-1]).max())


def test_the_engine_registry_knows_expansion():
    engine = get_engine("expansion")
    assert isinstance(engine, AlphaExpansion) and engine.nonsubmodular == "qpbo"


# ----------------------------------------- compiled moves = the NumPy/SciPy oracle
def _mixed_problem(rng, n, k, m, tables, p_hard=0.3, integer=False):
    unary, g = random_graph(rng, n, k, m, p_cl=0.4, p_hard=p_hard)
    if integer:
        unary = np.floor(unary * 10)
        g = PairwiseGraph.potts(n, g.edges, np.ceil(g.weight * 5), g.kind)
    if tables:
        T = rng.integers(1, 10, size=(2, k, k)).astype(float) if integer else rng.random((2, k, k)) * 2
        T = T + T.transpose(0, 2, 1)
        T[:, np.arange(k), np.arange(k)] = 0.0  # semi-metric
        te = rng.integers(0, n, size=(m // 3 + 1, 2))
        te = te[te[:, 0] != te[:, 1]]
        g = PairwiseGraph.concatenate([g, PairwiseGraph.from_tables(n, te, T, rng.integers(0, 2, len(te)))])
    unary[rng.random(unary.shape) < 0.05] = np.inf
    unary[np.isinf(unary).all(axis=1), 0] = 0.0
    return unary, g


def _move_problem(moves, labels, alpha, reduce):
    ptr, edge = _arc_layout(moves._graph)[:2]
    return move_problem(labels, alpha, moves.unary, moves._alpha_allowed[alpha], moves.p, moves.q, moves.wc,
                        moves.wk, moves.tab_of, moves.tab_cost, ptr, edge, reduce)


@pytest.mark.parametrize("seed", range(12))
def test_a_compiled_move_builds_what_the_numpy_move_builds(seed):
    # the compiled problem of a move, with and without the fixing of its dominated
    # variables, and its energy change equal the NumPy oracle's
    rng = np.random.default_rng(600 + seed)
    unary, g = _mixed_problem(rng, 30, 4, 60, tables=seed % 2 == 0)
    moves = ExpansionMoves(unary, g)
    labels = rng.integers(0, 4, 30)
    for alpha in range(4):
        forced, *whole, non_sub = _move_problem(moves, labels, alpha, False)
        assert forced.size == 0
        for x, y in zip(whole, oracle.binary_problem(moves, labels, alpha)):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
        assert non_sub == bool((whole[-1] < 0).any())
        *reduced, non_sub_r = _move_problem(moves, labels, alpha, True)
        for x, y in zip(reduced, oracle.reduced_problem(moves, labels, alpha)):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
        assert non_sub_r == non_sub
        x = rng.random(30) < 0.4
        assert moves.change(labels, alpha, x) == pytest.approx(oracle.change(moves, labels, alpha, x))


@pytest.mark.parametrize("seed", range(8))
def test_expansion_with_qpbo_moves_is_the_numpy_and_scipy_expansion(seed):
    # cannot-links, semi-metric tables and forbidden labels (integer costs, so that every
    # cut is unique): the engine's labelling is the oracle's, whose moves build their
    # problems with NumPy and cut them, QPBO graphs included, with SciPy
    rng = np.random.default_rng(650 + seed)
    unary, g = _mixed_problem(rng, 40, 4, 90, tables=seed % 2 == 1, p_hard=0.0, integer=True)
    res = AlphaExpansion().map(unary, g, rng=0)
    assert res.info["qpbo_moves"] > 0
    expected = oracle.expansion(ExpansionMoves(unary, g), np.argmin(unary, axis=1), 4)
    np.testing.assert_array_equal(res.labels, expected)


@pytest.mark.parametrize("seed", range(30))
def test_dominated_variables_are_fixed_as_every_minimiser_fixes_them(seed):
    # enumerate every switching set of a small move: the nodes the compiled dominance
    # forces to switch do so in every minimiser, and the free nodes it keeps at their
    # label in none
    rng = np.random.default_rng(700 + seed)
    n, k = int(rng.integers(2, 9)), 3
    unary, g = _mixed_problem(rng, n, k, int(rng.integers(1, 2 * n + 1)), tables=seed % 3 == 0)
    moves = ExpansionMoves(unary, g)
    labels = rng.integers(0, k, n)
    labels[~moves.allowed[np.arange(n), labels]] = np.argmin(unary, axis=1)[~moves.allowed[np.arange(n), labels]]
    switch = np.array(list(itertools.product([False, True], repeat=n)))
    for alpha in range(k):
        free = (labels != alpha) & moves.allowed[:, alpha]
        forced, nodes = _move_problem(moves, labels, alpha, True)[:2]
        kept = free.copy()
        kept[forced] = kept[nodes] = False
        xs = switch[~np.any(switch & ~free, axis=1)]
        e = np.array([moves.energy(np.where(x, alpha, labels)) for x in xs])
        minimisers = xs[np.isclose(e, e.min(), rtol=1e-12, atol=1e-9)]
        assert minimisers[:, forced].all() and not minimisers[:, kept].any()


@pytest.mark.parametrize("make, match", [
    (lambda: AlphaExpansion(kernel="numba"), r"AlphaExpansion\(kernel=...\) was removed: moves are built"),
    (lambda: ExpansionMoves(np.zeros((2, 2)), None, kernel="numba"), r"ExpansionMoves\(kernel=...\) was removed"),
    (lambda: AlphaExpansion(sweeps=3), r"AlphaExpansion got an unexpected keyword argument 'sweeps'"),
])
def test_removed_parameters_name_what_to_do(make, match):
    with pytest.raises(TypeError, match=match):
        make()
