"""NPU (Xiong, Azimi & Fern 2014): eqs. 1-4, the leaf similarity, the iterative loop."""

import math

import numpy as np
import pytest
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
