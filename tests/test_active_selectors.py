"""Explore, Explore+Consolidate, Min-Max and random pairs: query counts and constraints."""

import numpy as np
import pytest
import scipy.sparse as sp

from hmrf import Constraints
from hmrf.active import (
    Explore,
    ExploreConsolidate,
    LabelOracle,
    MinMax,
    Oracle,
    RandomPairs,
    neighborhoods_from_constraints,
)


def blobs(k, per=15, spread=0.05, gap=10.0, d=2, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d))
    centres = gap * centres / np.linalg.norm(centres, axis=1, keepdims=True) * np.arange(1, k + 1)[:, None]
    X = np.vstack([rng.normal(c, spread, size=(per, d)) for c in centres])
    return X, np.repeat(np.arange(k), per)


def overlapping(k=4, per=30, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0.4 * c, 1.0, size=(per, 3)) for c in range(k)])
    return X, np.repeat(np.arange(k), per)


def consistent(c, y):
    return all(y[i] == y[j] for i, j in c.must_link) and all(y[i] != y[j] for i, j in c.cannot_link)


SELECTORS = [
    lambda k, s: RandomPairs(random_state=s),
    lambda k, s: Explore(k, random_state=s),
    lambda k, s: ExploreConsolidate(k, random_state=s),
    lambda k, s: MinMax(k, random_state=s),
]


@pytest.mark.parametrize("k", [2, 3, 5, 7])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_explore_finds_every_class_on_separated_blobs(k, seed):
    X, y = blobs(k, seed=seed)
    sel = Explore(k, random_state=seed).fit(X, LabelOracle(y, budget=k * (k - 1) // 2 + k))
    assert len(sel.neighborhoods_) == k
    assert sorted(y[h[0]] for h in sel.neighborhoods_) == list(range(k))
    # each new cluster costs one cannot-link per existing neighbourhood: 1 + 2 + ... + (k-1)
    assert sel.n_queries_ == k * (k - 1) // 2
    assert sel.constraints_.n_cannot_link == k * (k - 1) // 2


def test_explore_without_k_keeps_exploring_until_the_budget():
    X, y = blobs(3, per=10)
    sel = Explore(None, random_state=0).fit(X, LabelOracle(y, budget=12))
    assert sel.n_queries_ == 12 and len(sel.neighborhoods_) == 3
    assert consistent(sel.constraints_, y)


def test_explore_goes_farthest_first_from_the_neighbourhood_members():
    X = np.array([[0.0], [1.0], [10.0], [4.0]])
    sel = Explore(3, random_state=0)
    oracle = LabelOracle([0, 1, 2, 1], budget=10)
    sel.fit(X, oracle, neighborhoods=[[0]])
    # from {0}: farthest is 10 (a new neighbourhood after 1 query); from {0, 10} the
    # farthest of {1, 4} is 4, asked against the nearer centroid (0) first
    assert [(q.i, q.j) for q in oracle.log] == [(0, 2), (0, 3), (2, 3)]
    assert sel.query_subjects_.tolist() == [2, 3, 3]
    assert len(sel.neighborhoods_) == 3


def test_consolidate_never_asks_more_than_k_minus_1_queries_per_point():
    X, y = overlapping(k=4)
    sel = ExploreConsolidate(4, random_state=3).fit(X, LabelOracle(y, budget=150))
    per_point = np.bincount(sel.query_subjects_)
    assert sel.n_queries_ == 150
    assert per_point.max() == 3  # k - 1, reached: the bound is tight here
    assert len(sel.inferred_) > 0  # and the k-th neighbourhood was inferred for free
    for i, j, _ in sel.inferred_:
        assert y[i] == y[j]
    assert consistent(sel.constraints_, y)


def test_inferred_must_links_appear_in_the_prefix_after_their_query():
    X, y = overlapping(k=3, seed=1)
    sel = ExploreConsolidate(3, random_state=0).fit(X, LabelOracle(y, budget=60))
    i, j, t = sel.inferred_[0]
    before, after = sel.constraints_at(t - 1), sel.constraints_at(t)
    assert not any((p == (i, j)).all() for p in before.must_link)
    assert any((p == (i, j)).all() for p in after.must_link)


def test_min_max_picks_the_point_least_similar_to_the_skeleton():
    X = np.array([[0.0], [0.5], [10.0], [10.4], [5.0], [5.2], [20.0]])
    y = np.array([0, 0, 1, 1, 2, 2, 3])
    sel = MinMax(2, random_state=0)
    sel.fit(X, LabelOracle(y, budget=2), neighborhoods=[[0], [2]])
    # skeleton {0, 10}: the minimum over points of the maximum kernel similarity is 20
    assert sel.query_subjects_[0] == 6
    d = np.abs(X - X.T)[~np.eye(7, dtype=bool)]
    assert sel.sigma_ == pytest.approx(np.percentile(d, 20))


@pytest.mark.parametrize("make", SELECTORS)
@pytest.mark.parametrize("budget", [0, 1, 7, 40])
def test_budget_is_never_exceeded_and_constraints_are_consistent(make, budget):
    X, y = overlapping(k=3)
    oracle = LabelOracle(y, budget=budget)
    sel = make(3, 0).fit(X, oracle)
    assert sel.n_queries_ == oracle.n_queries <= budget
    assert len({(q.i, q.j) for q in sel.queries_}) == sel.n_queries_
    assert consistent(sel.constraints_, y)
    assert consistent(sel.constraints_.closure(), y)


@pytest.mark.parametrize("make", SELECTORS)
def test_selection_ends_without_a_budget(make):
    X, y = blobs(3, per=4)
    sel = make(3, 0).fit(X, LabelOracle(y))
    assert sel.stop_reason_ in (
        "every point is placed",
        "every pair is asked or implied",
        "found 3 neighbourhoods",
    )
    if not isinstance(sel, Explore) or isinstance(sel, ExploreConsolidate):
        # everything is known: the closure gives every pair
        assert len(sel.constraints_.closure()) == 12 * 11 // 2


@pytest.mark.parametrize("make", SELECTORS)
def test_same_random_state_same_queries_and_prefix_equals_smaller_budget(make):
    X, y = overlapping(k=3, seed=2)
    full = make(3, 5).fit(X, LabelOracle(y, budget=30))
    again = make(3, 5).fit(X, LabelOracle(y, budget=30))
    assert full.queries_ == again.queries_
    for b in (0, 4, 17):
        small = make(3, 5).fit(X, LabelOracle(y, budget=b))
        assert small.constraints_ == full.constraints_at(b)
        assert small.queries_ == full.queries_[:b]


class _Unsure(Oracle):
    """Labels, but "don't know" whenever the pair involves one of ``unsure`` points."""

    def __init__(self, y, unsure, budget=None):
        super().__init__(budget)
        self.y, self.unsure = np.asarray(y), set(unsure)

    def _answer(self, i, j):
        if i in self.unsure or j in self.unsure:
            return None
        return bool(self.y[i] == self.y[j])


@pytest.mark.parametrize("make", [SELECTORS[0], lambda k, s: Explore(None, random_state=s), *SELECTORS[2:]])
def test_dont_know_answers_are_honoured(make):
    X, y = overlapping(k=3, per=12)
    unsure = set(range(0, 36, 3))
    oracle = _Unsure(y, unsure, budget=None)
    sel = make(3, 0).fit(X, oracle)  # the oracle raises if a pair is asked twice
    dont_know = {(q.i, q.j) for q in sel.queries_ if q.answer is None}
    assert dont_know
    got = {tuple(p) for p in sel.constraints_.pairs.tolist()}
    assert not dont_know & got
    assert consistent(sel.constraints_, y)
    for h in sel.neighborhoods_:  # an unsure point is never placed by an answer (it can be a seed)
        if set(h.tolist()) & unsure:
            assert len(h) == 1


def test_random_pairs_never_asks_an_implied_pair():
    X, y = overlapping(k=3, per=6)
    sel = RandomPairs(random_state=0).fit(X, LabelOracle(y))
    n = X.shape[0]
    for t, q in enumerate(sel.queries_):
        known = sel.constraints_at(t).closure()
        assert not any((p == (q.i, q.j)).all() for p in known.pairs)
    assert len(sel.constraints_.closure()) == n * (n - 1) // 2  # and then all are implied


def test_warm_start_grows_existing_neighbourhoods_and_never_reasks():
    X, y = overlapping(k=3, seed=4)
    idx = [np.flatnonzero(y == c)[:2] for c in range(3)]
    c0 = Constraints.from_labels(np.where(np.isin(np.arange(y.size), np.concatenate(idx)), y, -1))
    sel = ExploreConsolidate(3, random_state=0).fit(X, LabelOracle(y, budget=20), constraints=c0)
    assert sel.query_subjects_.size == 20
    assert not np.isin(sel.query_subjects_, np.concatenate(idx)).any()  # no exploring needed
    asked = {(q.i, q.j) for q in sel.queries_}
    assert not asked & {tuple(p) for p in c0.pairs.tolist()}
    assert all(((c0.pairs == p).all(1)).any() for p in c0.pairs)  # warm pairs kept
    assert len(sel.constraints_) >= len(c0) + 20 - 1


def test_neighborhoods_from_constraints_keeps_mutually_cannot_linked_components():
    c = Constraints.from_pairs(must_link=[(0, 1), (2, 3), (3, 4)], cannot_link=[(0, 2), (4, 5), (1, 5)], n=7)
    assert [h.tolist() for h in neighborhoods_from_constraints(c)] == [[2, 3, 4], [0, 1], [5]]
    no_cl = Constraints.from_pairs(must_link=[(0, 1), (2, 3), (3, 4)], n=6)
    assert [h.tolist() for h in neighborhoods_from_constraints(no_cl)] == [[2, 3, 4]]


def test_distances_respect_the_emission():
    # same direction, different lengths vs another direction: Euclidean and cosine disagree
    X = np.array([[1.0, 0.0], [9.0, 0.2], [0.3, 1.0], [8.0, 0.1]])
    y = np.array([0, 0, 1, 0])
    euclid = Explore(2, random_state=0).fit(X, LabelOracle(y), neighborhoods=[[0]])
    cosine = Explore(2, emission="cosine", random_state=0).fit(X, LabelOracle(y), neighborhoods=[[0]])
    assert euclid.query_subjects_[0] == 1
    assert cosine.query_subjects_[0] == 2


def test_bad_parameters_are_reported():
    X, y = blobs(2)
    with pytest.raises(ValueError, match="n_clusters"):
        ExploreConsolidate(None).fit(X, LabelOracle(y))
    with pytest.raises(ValueError, match="n_clusters"):
        Explore(100).fit(X, LabelOracle(y))
    with pytest.raises(TypeError, match="query"):
        Explore(2).fit(X, object())
    with pytest.raises(ValueError, match="shares point"):
        Explore(2).fit(X, LabelOracle(y), neighborhoods=[[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="percentile"):
        MinMax(2, percentile=0).fit(X, LabelOracle(y))
    with pytest.raises(AttributeError, match="not fitted"):
        RandomPairs().constraints_at(3)


def test_warm_start_knowledge_saves_queries():
    # 3 well separated groups; the warm start says point 10 is not with neighbourhood {0}
    X, y = blobs(3, per=10)
    c0 = Constraints.from_pairs(cannot_link=[(10, 1)], n=30)
    oracle = LabelOracle(y, budget=40)
    sel = ExploreConsolidate(3, random_state=0)
    sel.fit(X, oracle, constraints=c0, neighborhoods=[[0, 1], [20], [11]])
    asked_10 = [q for q in sel.queries_ if 10 in (q.i, q.j)]
    # 10 is cannot-linked to {0, 1} already; it is asked only against one neighbourhood
    assert all(y[q.j if q.i == 10 else q.i] != 0 for q in asked_10)
    assert len(asked_10) <= 1
    assert any({10, 11} <= set(h.tolist()) for h in sel.neighborhoods_)


def test_the_clusterers_emission_is_used_for_distances():
    from hmrf import HMRFKMeans, PCKMeans, SphericalKMeans
    from hmrf.active import NPU
    from hmrf.emissions import KL, SquaredEuclidean, VonMisesFisher

    assert isinstance(NPU(SphericalKMeans(3))._family(), VonMisesFisher)
    assert isinstance(NPU(HMRFKMeans(3, emission="kl"))._family(), KL)
    assert isinstance(NPU(PCKMeans(3))._family(np.ones((4, 2))), SquaredEuclidean)  # emission="auto"
    assert isinstance(NPU(PCKMeans(3))._family(sp.csr_matrix(np.eye(4))), VonMisesFisher)
    assert isinstance(NPU(PCKMeans(3), emission="cosine")._family(), VonMisesFisher)
