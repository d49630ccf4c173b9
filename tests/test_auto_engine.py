"""inference="auto": belief propagation, then α-expansion moves from its labelling."""

import collections

import numpy as np
import pytest
from mrf_problems import enumerate_energies

from hmrf import Constraints, PairwiseGraph
from hmrf.inference import AlphaExpansion, BeliefPropagation
from hmrf.inference.auto import AutoEngine


def brute_force(unary, g):
    return enumerate_energies(unary, g)[1].min()


def random_problem(rng, n, k, m, p_cl):
    pairs = rng.integers(0, n, size=(m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(rng.random(len(pairs)) < p_cl, -1, 1)
    return rng.random((n, k)) * 3, PairwiseGraph.potts(n, pairs, rng.uniform(0.2, 2.0, len(pairs)), kind)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("p_cl", [0.0, 0.4])
def test_never_worse_than_bp_or_the_moves_from_its_labelling_per_component(seed, p_cl):
    rng = np.random.default_rng(2000 + seed)
    unary, g = random_problem(rng, 9, 3, 14, p_cl)
    auto = AutoEngine().map(unary, g, rng=0)
    bp = BeliefPropagation().map(unary, g, rng=0)
    moves = AlphaExpansion().map(unary, g, init=bp.labels, rng=0)
    assert brute_force(unary, g) - 1e-9 <= auto.energy <= min(bp.energy, moves.energy) + 1e-9
    assert np.all(g.component_energies(unary, auto.labels) <= g.component_energies(unary, bp.labels) + 1e-9)
    if auto.lower_bound is not None:  # BP's TRW-S bound (must-links only)
        assert auto.lower_bound <= brute_force(unary, g) + 1e-9


def test_component_energies_add_up_to_the_energy():
    rng = np.random.default_rng(2100)
    unary, g = random_problem(rng, 30, 4, 25, 0.3)
    y = rng.integers(0, 4, 30)
    assert g.component_energies(unary, y).sum() == pytest.approx(g.energy(y, unary))


def test_the_moves_repair_what_bp_misses():
    # two must-link components; the moves lower the labelling BP would return on a
    # component whose BP labelling is not expansion-optimal, never another one
    rng = np.random.default_rng(2200)
    found = False
    for _ in range(40):
        unary, g = random_problem(rng, 40, 4, 90, 0.0)
        res = AutoEngine().map(unary, g, rng=0)
        bp = BeliefPropagation().map(unary, g, rng=0)
        assert res.energy <= bp.energy + 1e-9
        assert (res.info["improved_components"] > 0) == (res.energy < bp.energy - 1e-9)
        found |= res.info["improved_components"] > 0
        certified = bp.lower_bound is not None and bp.energy - bp.lower_bound <= 1e-10 * (1 + abs(bp.energy))
        assert (res.info["expansion_sweeps"] is None) == certified
    assert found


def test_no_moves_after_bp_proves_its_labelling_optimal():
    # a forest of small must-link trees: TRW-S is exact there and its bound proves it,
    # so auto returns BP's labelling, the optimum (enumerated), without running a move
    from hmrf import PairwiseGraph

    rng = np.random.default_rng(2250)
    for _ in range(5):
        edges = np.array([(0, 1), (1, 2), (1, 3), (4, 5), (5, 6)])
        g = PairwiseGraph.potts(7, edges, rng.uniform(0.2, 1.5, 5), np.ones(5, dtype=np.int8))
        unary = rng.random((7, 3))
        best = brute_force(unary, g)
        res = AutoEngine().map(unary, g, rng=0)
        assert res.energy == pytest.approx(best, abs=1e-12)
        assert res.info["expansion_sweeps"] is None and res.lower_bound == pytest.approx(best, abs=1e-9)


def test_hard_constraints_are_honoured():
    unary = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    c = Constraints.from_pairs(must_link=[(2, 3)], cannot_link=[(0, 1)], n=4, weight=np.inf)
    res = AutoEngine().map(unary, c, rng=0)
    assert res.labels[0] != res.labels[1] and res.labels[2] == res.labels[3]
    assert np.isfinite(res.energy)


def test_the_parts_are_checked_once_per_fit_and_solved_on_the_reduced_problem(monkeypatch):
    # auto composes BP and the α-expansion moves: their parameters are checked once per
    # fit (AutoEngine.check_params, which EM calls once), and they solve the problem auto
    # already reduced (their _solve), never through a map of their own
    from sklearn.datasets import load_iris

    from hmrf import HMRFKMeans

    checks, solves = collections.Counter(), collections.Counter()
    for cls in (BeliefPropagation, AlphaExpansion):
        def check(self, cls=cls, check=cls.check_params):
            checks[cls.__name__] += 1
            check(self)

        def solve(self, *args, cls=cls, solve=cls._solve):
            solves[cls.__name__] += 1
            return solve(self, *args)

        def no_map(self, *args, cls=cls, **kwargs):
            raise AssertionError(f"{cls.__name__}.map called")

        monkeypatch.setattr(cls, "check_params", check)
        monkeypatch.setattr(cls, "_solve", solve)
        monkeypatch.setattr(cls, "map", no_map)
    X, y = load_iris(return_X_y=True)
    c = Constraints.sample_from_labels(y, 50, rng=0)
    est = HMRFKMeans(3, inference=AutoEngine(), n_init=1, random_state=0).fit(X, constraints=c)
    assert checks == {"BeliefPropagation": 1, "AlphaExpansion": 1}
    assert solves["BeliefPropagation"] >= est.n_iter_ > 1 and solves["AlphaExpansion"] >= 1
    checks.clear()
    rng = np.random.default_rng(2300)
    AutoEngine().map(*random_problem(rng, 30, 3, 50, 0.3), rng=0)
    assert checks == {"BeliefPropagation": 1, "AlphaExpansion": 1}


def test_auto_is_a_registered_engine_name_for_the_estimators():
    from hmrf import HMRFKMeans
    from hmrf.inference import get_engine

    assert isinstance(get_engine("auto"), AutoEngine)
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.5, (15, 2)), rng.normal(3, 0.5, (15, 2))])
    est = HMRFKMeans(2, inference="auto", random_state=0).fit(
        X, must_link=[(0, 1), (16, 17), (2, 20)], cannot_link=[(0, 16), (3, 18)])
    assert est.labels_[0] == est.labels_[1] and est.labels_[0] != est.labels_[16]
    assert np.all(np.diff(est.history_) <= 1e-9)


def test_large_must_link_components_go_to_expansion_alone():
    """The rule of the module docstring: a must-link-only component of at least
    LARGE_COMPONENT nodes is solved by α-expansion alone, every other component by BP
    followed by expansion moves; the labelling is the union of the two."""
    from hmrf import PairwiseGraph
    from hmrf.inference import AlphaExpansion, BeliefPropagation
    from hmrf.inference.auto import LARGE_COMPONENT, AutoEngine

    rng = np.random.default_rng(0)
    big, small, k = LARGE_COMPONENT + 200, 60, 4
    n = big + small
    unary = rng.random((n, k))
    chain = np.column_stack([np.arange(big - 1), np.arange(1, big)])          # one must-link component
    extra = rng.integers(0, big, size=(big, 2))
    extra = extra[extra[:, 0] != extra[:, 1]]
    mixed = big + rng.integers(0, small, size=(120, 2))
    mixed = mixed[mixed[:, 0] != mixed[:, 1]]
    edges = np.vstack([chain, extra, mixed])
    kind = np.r_[np.ones(len(chain) + len(extra), np.int8), rng.choice([1, -1], len(mixed)).astype(np.int8)]
    g = PairwiseGraph.potts(n, edges, rng.random(len(edges)) * 0.5, kind)
    res = AutoEngine().map(unary, g, rng=0)
    assert res.info["expansion_nodes"] == big
    cut = np.arange(big)
    alone = AlphaExpansion().map(unary[cut], g.subgraph(cut), rng=0)
    np.testing.assert_array_equal(res.labels[cut], alone.labels)
    rest = np.arange(big, n)
    sub = g.subgraph(rest)
    bp = BeliefPropagation().map(unary[rest], sub, rng=0)
    assert sub.energy(res.labels[rest], unary[rest]) <= bp.energy + 1e-9


def test_tables_that_are_not_semi_metric_get_moves_too():
    # the moves start from BP's labelling and never raise its energy, so "auto" takes
    # any table (AlphaExpansion alone refuses a table that is not a semi-metric)
    from mrf_problems import brute_force

    rng = np.random.default_rng(8)
    k = 3
    T = rng.random((k, k)) * 2  # not symmetric, non-zero diagonal
    g = PairwiseGraph.from_tables(6, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (0, 5)], T)
    unary = rng.random((6, k))
    res = AutoEngine().map(unary, g, rng=0)
    bp = BeliefPropagation().map(unary, g, rng=0)
    assert brute_force(unary, g)[0] - 1e-9 <= res.energy <= bp.energy + 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_compiled_components_number_them_as_scipy_does(seed):
    # the union-find auto splits graphs with is the twin of PairwiseGraph.components
    # (SciPy's connected_components): the same partition with the same numbering,
    # isolated nodes, repeated edges and self-contained chains included
    from hmrf import PairwiseGraph
    from hmrf.inference.graphcut_numba import components

    rng = np.random.default_rng(2400 + seed)
    n = int(rng.integers(1, 300))
    m = int(rng.integers(0, n + 1))
    edges = rng.integers(0, n, size=(m, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    if seed % 2:
        edges = edges[::-1]  # edge order must not matter
    g = PairwiseGraph.potts(n, edges, np.ones(len(edges)), np.ones(len(edges), dtype=np.int8))
    n_comp, comp = components(n, g.edges[:, 0], g.edges[:, 1])
    ref_n, ref = g.components()
    assert n_comp == ref_n and comp.tolist() == ref.tolist()


@pytest.mark.parametrize("value", [False, True, "auto"])
def test_removed_expansion_parameter_names_its_replacement(value):
    with pytest.raises(TypeError, match=r'AutoEngine\(expansion=...\) was removed: expansion=False is inference="bp"'):
        AutoEngine(expansion=value)
