"""NPU (Xiong, Azimi & Fern 2014): eqs. 1-4, the leaf similarity, the iterative loop."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin

from hmrf import HMRFKMeans, PCKMeans
from hmrf.active import NPU, LabelOracle, normalized_uncertainty
from hmrf.active.npu import leaf_neighborhood_similarity, neighborhood_probabilities
from hmrf.estimators import ConstrainedKMeans, COPKMeans, KMeans, SeededKMeans


def data(k=3, per=20, sep=3.0, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(sep * c, 1.0, size=(per, 2)) for c in range(k)])
    return X, np.repeat(np.arange(k), per)


def test_expected_cost_sorts_probabilities_decreasingly():
    H, E, score = normalized_uncertainty([[0.2, 0.5, 0.3], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    # by hand: queried in the order 0.5, 0.3, 0.2 -> 1*0.5 + 2*0.3 + 3*0.2 = 1.7
    # (in the given order it would be 0.2 + 1.0 + 0.9 = 2.1)
    assert E[0] == pytest.approx(1.7)
    h = -(0.2 * math.log2(0.2) + 0.5 * math.log2(0.5) + 0.3 * math.log2(0.3))
    assert H[0] == pytest.approx(h)
    assert score[0] == pytest.approx(h / 1.7)
    # a certain point: one query, no information, wherever its neighbourhood is listed
    assert E[1] == E[2] == 1.0 and H[1] == H[2] == 0.0 and score[2] == 0.0


def test_uniform_probabilities_when_a_point_is_similar_to_no_neighbourhood():
    P = neighborhood_probabilities([[0.0, 0.0, 0.0, 0.0], [0.2, 0.6, 0.0, 0.2]])
    assert P[0].tolist() == [0.25] * 4
    assert P[1] == pytest.approx([0.2, 0.6, 0.0, 0.2])
    H, E, _ = normalized_uncertainty(P[:1])
    assert H[0] == pytest.approx(2.0) and E[0] == pytest.approx(2.5)


@pytest.mark.parametrize("seed", [0, 1])
def test_leaf_similarity_equals_the_average_pairwise_proximity(seed):
    rng = np.random.default_rng(seed)
    n, T = 40, 9
    leaves = rng.integers(0, 6, size=(n, T)) * 2 + 1  # leaf ids as apply() gives them (node ids)
    hoods = [np.array([0, 5, 7]), np.array([3]), np.array([10, 11, 12, 13])]
    M = np.array([[np.mean(leaves[a] == leaves[b]) for b in range(n)] for a in range(n)])  # brute force
    expected = np.column_stack([M[:, h].mean(axis=1) for h in hoods])
    cand = np.array([1, 2, 4, 20, 39])
    assert leaf_neighborhood_similarity(leaves, hoods) == pytest.approx(expected)
    assert leaf_neighborhood_similarity(leaves, hoods, cand) == pytest.approx(expected[cand])


@pytest.mark.usefixtures("few_auto_runs")  # holds run by run
def test_npu_budget_consistency_and_determinism():
    X, y = data()
    oracle = LabelOracle(y, budget=15)
    sel = NPU(PCKMeans(3), random_state=0).fit(X, oracle)
    assert sel.n_queries_ == oracle.n_queries == 15
    assert all(y[i] == y[j] for i, j in sel.constraints_.must_link)
    assert all(y[i] != y[j] for i, j in sel.constraints_.cannot_link)
    again = NPU(PCKMeans(3), random_state=0).fit(X, LabelOracle(y, budget=15))
    assert again.queries_ == sel.queries_
    smaller = NPU(PCKMeans(3), random_state=0).fit(X, LabelOracle(y, budget=6))
    assert smaller.constraints_ == sel.constraints_at(6)


def test_npu_discovers_every_cluster_and_places_points_with_few_queries():
    X, y = data(k=4, per=15, sep=8.0)
    sel = NPU(PCKMeans(4), n_estimators=20, random_state=1).fit(X, LabelOracle(y, budget=30))
    assert sorted(y[h[0]] for h in sel.neighborhoods_) == [0, 1, 2, 3]
    # on separated clusters the most probable neighbourhood is right: ~1 query per point
    placed = sum(len(h) for h in sel.neighborhoods_) - 1
    assert placed >= 20


def test_forest_reuse_only_when_the_clustering_is_unchanged():
    X, y = data(sep=6.0)
    reuse = NPU(PCKMeans(3), n_estimators=10, random_state=0).fit(X, LabelOracle(y, budget=20))
    fresh = NPU(PCKMeans(3), n_estimators=10, reuse_forest=False, random_state=0).fit(
        X, LabelOracle(y, budget=20)
    )
    assert fresh.n_forests_ == fresh.n_iter_
    assert reuse.n_forests_ < reuse.n_iter_


class _Failing(ClusterMixin, BaseEstimator):
    def __init__(self, n_clusters=2):
        self.n_clusters = n_clusters

    def fit(self, X, constraints=None):
        raise ValueError("boom: no feasible clustering")


def test_a_failing_clusterer_stops_npu_with_the_reason():
    X, y = data()
    with pytest.raises(RuntimeError, match=r"_Failing failed after \d+ queries .*boom"):
        NPU(_Failing(), random_state=0).fit(X, LabelOracle(y, budget=10))
    with pytest.raises(ValueError, match="needs a clusterer"):
        NPU().fit(X, LabelOracle(y))


@pytest.mark.parametrize(
    "make",
    [
        lambda: PCKMeans(3),
        lambda: HMRFKMeans(3),
        lambda: COPKMeans(3),
        lambda: SeededKMeans(3),
        lambda: ConstrainedKMeans(3),
        lambda: KMeans(3),
    ],
)
def test_npu_works_with_every_estimator(make):
    X, y = data(per=12, sep=6.0)
    sel = NPU(make(), random_state=0).fit(X, LabelOracle(y, budget=8))
    assert sel.n_queries_ == 8 and sel.n_iter_ >= 1
    assert sel.labels_.shape == (36,)
    assert all(y[i] == y[j] for i, j in sel.constraints_.must_link)


def test_npu_with_mpckmeans_when_available():
    hmrf = pytest.importorskip("hmrf")
    try:
        from hmrf import MPCKMeans
    except ImportError:
        pytest.skip("MPCKMeans not available")
    X, y = data(per=12, sep=6.0)
    sel = NPU(MPCKMeans(3), random_state=0).fit(X, LabelOracle(y, budget=8))
    assert sel.n_queries_ == 8 and hmrf is not None


def test_npu_warm_start_and_dont_know():
    X, y = data(per=10, sep=6.0)
    warm = [np.flatnonzero(y == 0)[:2], np.flatnonzero(y == 1)[:1]]
    oracle = LabelOracle(y, budget=12, dont_know=0.3, random_state=0)
    sel = NPU(PCKMeans(3), random_state=0).fit(X, oracle, neighborhoods=warm)
    assert sel.query_subjects_.min() >= 0
    assert not np.isin(sel.query_subjects_, np.concatenate(warm)).any()
    unknown = {(q.i, q.j) for q in sel.queries_ if q.answer is None}
    assert not unknown & {tuple(p) for p in sel.constraints_.pairs.tolist()}


# --------------------------------------------------------------- speed-ups, same answers
def test_forest_leaves_are_those_of_scikit_learns_random_forest():
    from sklearn.ensemble import RandomForestClassifier

    from hmrf.active.npu import forest_leaves

    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 6))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    for Xin in (X, sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0.0))):
        expected = RandomForestClassifier(12, random_state=7).fit(Xin, y).apply(Xin)
        assert np.array_equal(forest_leaves(Xin, y, 12, 7), expected)
        assert np.array_equal(forest_leaves(Xin, y, 12, 7, n_jobs=2), expected)


def test_relabelled_points_matches_clusters_one_to_one():
    from hmrf.active.npu import relabelled_points

    assert relabelled_points([0, 0, 1, 1], [1, 1, 0, 0]) == 0  # a renaming
    assert relabelled_points([0, 0, 1, 1], [5, 7, 7, 7]) == 1
    assert relabelled_points([0, 0, 0], [0, 1, 2]) == 2
    # by brute force over the matchings of 3 clusters to 3
    import itertools

    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    best = max(sum(int(np.sum((a == h) & (b == p[h]))) for h in range(3)) for p in itertools.permutations(range(3)))
    assert relabelled_points(a, b) == 40 - best


class _Scripted(ClusterMixin, BaseEstimator):
    """Returns the labellings of ``script`` in turn (one per re-clustering)."""

    calls = []

    def __init__(self, n_clusters=2, script=None):
        self.n_clusters = n_clusters
        self.script = script

    def fit(self, X, constraints=None):
        self.labels_ = np.asarray(self.script[min(len(_Scripted.calls), len(self.script) - 1)])
        _Scripted.calls.append(1)
        return self


def test_the_forest_is_reused_while_few_points_change_cluster():
    X, y = data(k=2, per=20, sep=6.0)
    base = (X[:, 0] > 3).astype(int)
    flip = base.copy()
    flip[0] = 1 - flip[0]  # one point of 40 relabelled
    renamed = 1 - base  # the same partition
    script = [base, renamed, flip, flip, base]
    counts = {}
    for tol in (0.0, 0.05):
        _Scripted.calls = []
        sel = NPU(_Scripted(2, script), n_estimators=5, forest_tolerance=tol, random_state=0)
        sel.fit(X, LabelOracle(y, budget=12))
        counts[tol] = (sel.n_iter_, sel.n_forests_)
    n_iter = counts[0.0][0]
    assert n_iter >= 5
    # tolerance 0: base, (renamed: reused), flip (new), flip (reused), base (new), then base...
    assert counts[0.0][1] == 3
    # 1 point in 40 is within 5 %: one forest for the whole run
    assert counts[0.05][1] == 1


def test_warm_start_starts_each_reclustering_at_the_previous_centres():
    seen = []

    class Spy(HMRFKMeans):
        def fit(self, X, y=None, **kw):
            seen.append((self.init if isinstance(self.init, str) else np.array(self.init), self.closure, self.w))
            out = super().fit(X, y, **kw)
            seen[-1] += (self.cluster_centers_.copy(), self.w_)
            return out

    X, y = data(per=15, sep=4.0)
    NPU(Spy(3, closure=True), warm_start=True, random_state=0).fit(X, LabelOracle(y, budget=15))
    assert len(seen) >= 3
    assert isinstance(seen[0][0], str)  # the first clustering starts from its own init
    for before, now in zip(seen, seen[1:], strict=False):
        assert np.array_equal(now[0], before[3])  # the previous centres
        assert now[2] == before[4]  # w="auto" resolved once, the same number after
    assert all(s[1] is False for s in seen)  # NPU closes the constraints itself
    seen.clear()
    NPU(Spy(3), random_state=0).fit(X, LabelOracle(y, budget=15))  # the default: restarts
    assert all(isinstance(s[0], str) for s in seen)


@pytest.mark.parametrize("make", [SeededKMeans, ConstrainedKMeans])
def test_warm_start_re_clusters_a_seeded_estimator_from_its_own_start(make):
    # their init names a start and takes no centres: warm_start leaves it alone
    from hmrf.active import takes_centres

    assert not takes_centres(make(3)) and takes_centres(HMRFKMeans(3)) and takes_centres(COPKMeans(3))
    X, y = data(per=15, sep=4.0)
    warm = NPU(make(3), warm_start=True, random_state=0).fit(X, LabelOracle(y, budget=15))
    cold = NPU(make(3), random_state=0).fit(X, LabelOracle(y, budget=15))
    assert warm.n_queries_ == cold.n_queries_ > 4
    assert np.array_equal(warm.labels_, cold.labels_)


def test_warm_start_keeps_a_clustering_that_a_restart_from_the_neighbourhoods_loses(monkeypatch):
    # The stated difference: with two neighbourhoods for three separated clusters the
    # ICML initialisation (largest neighbourhoods, then a perturbed global centroid),
    # one run with greedy (ICM) assignment, restarts badly; started at the previous
    # centres, EM keeps the classes. (The defaults' unconstrained start, n_init="auto",
    # and the "auto" engine avoid that bad restart.)
    from sklearn.metrics import adjusted_rand_score

    import hmrf.active.npu as npu

    X, y = data(k=3, per=15, sep=10.0)
    seen = {}
    inner = npu.NPU._most_informative

    def spy(self, state, labels, free):
        seen.setdefault(self.warm_start, []).append(adjusted_rand_score(y, labels))
        return inner(self, state, labels, free)

    monkeypatch.setattr(npu.NPU, "_most_informative", spy)
    for warm in (False, True):
        NPU(HMRFKMeans(3, init="pckmeans", n_init=1, inference="icm", closure=True, random_state=0),
            warm_start=warm,
            random_state=0).fit(X, LabelOracle(y, budget=20))
    assert min(seen[False][:4]) < 0.9
    assert min(seen[True][1:]) == 1.0


def test_the_forest_depends_on_the_partition_not_on_the_cluster_names():
    from hmrf.active.npu import forest_leaves

    X, y = data()
    assert np.array_equal(forest_leaves(X, y, 10, 3), forest_leaves(X, (y + 1) % 3, 10, 3))


@pytest.mark.usefixtures("few_auto_runs")  # holds run by run
def test_the_literal_setting_is_alg_2_with_scikit_learns_forest(monkeypatch):
    # warm_start=False, reuse_forest=False: every iteration a fresh clustering and a
    # fresh RandomForestClassifier, as Alg. 1-2 read; forest_leaves is that forest
    from sklearn.ensemble import RandomForestClassifier

    import hmrf.active.npu as npu

    X, y = data(per=15, sep=3.0)
    kw = dict(warm_start=False, reuse_forest=False, n_estimators=8, random_state=2)
    ours = NPU(PCKMeans(3, random_state=0), **kw).fit(X, LabelOracle(y, budget=20))

    def sklearn_forest(X, labels, n_estimators, random_state, n_jobs=None):
        rf = RandomForestClassifier(n_estimators=n_estimators, random_state=random_state)
        return rf.fit(X, labels).apply(X)

    monkeypatch.setattr(npu, "forest_leaves", sklearn_forest)
    literal = NPU(PCKMeans(3, random_state=0), **kw).fit(X, LabelOracle(y, budget=20))
    assert ours.queries_ == literal.queries_ and ours.n_forests_ == ours.n_iter_


def test_forest_tolerance_is_checked():
    X, y = data()
    with pytest.raises(ValueError, match="forest_tolerance"):
        NPU(PCKMeans(3), forest_tolerance=1.0).fit(X, LabelOracle(y, budget=3))
