"""What every E-step engine promises: one interface, the energy chain, hard constraints.

``LP bound <= exact <= any engine's energy`` on random problems; hard constraints are
honoured or :class:`~hmrf.InfeasibleError` names a point; custom potentials work with
every engine; bad parameters are named; same seed, same result; inputs untouched.
"""

import numpy as np
import pytest
from mrf_problems import brute_force, preferred_label_table, random_problem

from hmrf import HMRF, Constraints, InfeasibleError, PairwiseGraph
from hmrf.inference import ICM, TRWS, BeliefPropagation, ExactMILP, LPRelaxation, MeanField, get_engine
from hmrf.inference.base import Solution
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
    "trws": TRWS(),
    "trws-numpy": TRWS(kernel="numpy"),
    "lp": LPRelaxation(),
    "lp-polish": LPRelaxation(polish="icm"),
    "exact": ExactMILP(),
    "mean_field": MeanField(),
}
#: engines that start from a labelling or posteriors and stop at a local optimum
LOCAL = ("icm", "mean_field")
GLOBAL = {k: v for k, v in ENGINES.items() if k != "icm"}


# ---------------------------------------------------------- energy chain


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


# ---------------------------------------------------------- hard factors


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


# ----------------------------------------------------- custom potentials


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
        if name in LOCAL:
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


# -------------------------------------------------------- misc behaviour


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
    (LPRelaxation(solver="gurobi"), "solver"),
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


# ------------------------------- the contract: hard constraints met or InfeasibleError
@pytest.mark.parametrize("name", sorted(ENGINES))
@pytest.mark.parametrize("k, cannot_link", [(1, [(0, 1)]), (2, [(0, 1), (1, 2), (0, 2)])])
def test_every_engine_raises_on_infeasible_hard_constraints_naming_a_point(name, k, cannot_link):
    c = Constraints.from_pairs(cannot_link=cannot_link, n=3, weight=np.inf)
    with pytest.raises(InfeasibleError) as info:
        ENGINES[name].map(np.zeros((3, k)), c, rng=0)
    assert info.value.point in (0, 1, 2)
    assert f"point {info.value.point}" in str(info.value)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_every_engine_honours_hard_constraints_or_raises(name):
    # random hard problems, some infeasible (enumeration decides): a returned labelling
    # honours every hard factor and has finite energy; an infeasible problem raises
    rng = np.random.default_rng(31)
    for _ in range(12):
        n, k = int(rng.integers(3, 7)), int(rng.integers(1, 4))
        unary, g = random_problem(rng, n, k, int(rng.integers(2, 12)), p_cl=0.8, p_hard=0.7)
        best, _ = brute_force(unary, g)
        try:
            res = ENGINES[name].map(unary, g, rng=0)
        except InfeasibleError as exc:
            assert exc.point in range(n)
            if name == "exact":  # the exact engine decides feasibility
                assert not np.isfinite(best)
            continue
        assert np.isfinite(best) and np.isfinite(res.energy), name
        hard = np.isinf(g.weight)
        assert np.all(res.labels[g.edges[hard, 0]] != res.labels[g.edges[hard, 1]]), name


class _BreaksCannotLinks(ICM):
    """An engine whose own algorithm ignores hard factors (every node takes label 0)."""

    def _solve(self, unary, graph, init, rng, notify):
        return Solution(np.zeros(unary.shape[0], dtype=np.int64))


def test_map_never_returns_a_labelling_that_breaks_a_hard_constraint():
    # the base class checks every engine's result: a broken hard cannot-link is reported
    c = Constraints.from_pairs(cannot_link=[(1, 3)], must_link=[(0, 1)], n=4, weight=np.inf)
    with pytest.raises(InfeasibleError, match="hard") as info:
        _BreaksCannotLinks().map(np.zeros((4, 2)), c, rng=0)
    assert info.value.point in (0, 1, 3)


@pytest.mark.parametrize("estimator", ["HMRFKMeans", "PCKMeans", "MPCKMeans"])
@pytest.mark.parametrize("inference", ["icm", "bp", "lp", "exact"])
def test_estimators_raise_instead_of_returning_an_infinite_objective(estimator, inference):
    import hmrf

    X = np.array([[0.0], [0.0]])
    c = Constraints.from_pairs(cannot_link=[(0, 1)], n=2, weight=np.inf)
    est = getattr(hmrf, estimator)(1, inference=inference, random_state=0)
    with pytest.raises(InfeasibleError) as info:
        est.fit(X, constraints=c)
    assert info.value.point in (0, 1)
