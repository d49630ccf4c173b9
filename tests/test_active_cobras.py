"""COBRAS: splitting, merging, query counts, the clustering at any number of queries."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score

from hmrf import Constraints, MPCKMeans
from hmrf.active import COBRAS, LabelOracle, Oracle, RandomPairs
from hmrf.experiments import active_curve


def blobs(k, per=12, spread=0.05, seed=0):
    """``k`` tight blobs on a circle of radius 10 (distinct, far apart)."""
    rng = np.random.default_rng(seed)
    angles = 2 * np.pi * np.arange(k) / k
    centres = 10 * np.column_stack([np.cos(angles), np.sin(angles)])
    X = np.vstack([rng.normal(c, spread, size=(per, 2)) for c in centres])
    return X, np.repeat(np.arange(k), per)


def overlapping(k=3, per=40, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0.8 * c, 1.0, size=(per, 3)) for c in range(k)])
    return X, np.repeat(np.arange(k), per)


class Scripted(Oracle):
    """Answers from a function of the pair (the base class checks repeats and budget)."""

    def __init__(self, answer, budget=None):
        super().__init__(budget)
        self.answer = answer

    def _answer(self, i, j):
        return self.answer(i, j)


def test_two_blobs_need_two_queries():
    # 1-D: a blob at 0 and one at 10. The split level is asked on the k-means halves
    # (the blobs): their representatives (the middle points 1 and 4) cannot-link; the
    # smaller half is split in two and its halves must-link, so the level is 1: split
    # into the two blobs, whose representatives are known to differ — no merging query.
    X = np.array([[0.0], [0.1], [0.2], [10.0], [10.1], [10.2]])
    y = np.array([0, 0, 0, 1, 1, 1])
    est = COBRAS(random_state=0).fit(X, LabelOracle(y))
    assert est.queries_[0] == (1, 4, False)
    assert est.queries_[1].answer is True
    assert est.labels_at(0).tolist() == [0] * 6
    assert est.labels_at(1).tolist() == [0] * 6  # the merging phase is not over
    assert adjusted_rand_score(y, est.labels_at(2)) == 1.0
    assert adjusted_rand_score(y, est.labels_) == 1.0
    assert est.n_clusters_ == 2


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("seed", [0, 1])
def test_separated_blobs_are_recovered_exactly(k, seed):
    X, y = blobs(k, seed=seed)
    est = COBRAS(random_state=seed).fit(X, LabelOracle(y, budget=200))
    assert adjusted_rand_score(y, est.labels_) == 1.0
    c = est.constraints_
    assert all(y[i] == y[j] for i, j in c.must_link) and all(y[i] != y[j] for i, j in c.cannot_link)
    # every super-instance is pure and its representative is one of its members
    for members, rep in zip(est.super_instances_, est.representatives_, strict=True):
        assert np.unique(y[members]).size == 1 and rep in members


def test_never_asks_a_pair_twice_nor_an_implied_one():
    X, y = overlapping()
    oracle = LabelOracle(y, budget=300)  # the oracle raises on a repeated pair
    est = COBRAS(random_state=0).fit(X, oracle)
    pairs = [(q.i, q.j) for q in est.queries_]
    assert len(set(pairs)) == len(pairs) == est.n_queries_
    # no query's answer was implied by the answers before it
    for t in range(1, est.n_queries_):
        i, j, _ = est.queries_[t]
        before = est.constraints_at(t).closure()
        implied = {(a, b) for a, b in before.pairs.tolist()}
        assert (i, j) not in implied


@pytest.mark.parametrize("budget", [0, 1, 7, 30])
def test_respects_the_budget(budget):
    X, y = overlapping()
    oracle = LabelOracle(y, budget=budget)
    est = COBRAS(random_state=0).fit(X, oracle)
    assert est.n_queries_ == oracle.n_queries == budget
    assert "budget" in est.stop_reason_
    assert est.labels_.shape == (X.shape[0],)


def test_same_seed_same_queries_and_clustering():
    X, y = overlapping()
    a = COBRAS(random_state=3).fit(X, LabelOracle(y, budget=40))
    b = COBRAS(random_state=3).fit(X, LabelOracle(y, budget=40))
    assert a.queries_ == b.queries_
    assert np.array_equal(a.labels_, b.labels_)


@pytest.mark.parametrize("t", [0, 3, 10, 25, 40])
def test_labels_at_equal_a_fit_with_that_budget(t):
    X, y = overlapping(seed=2)
    full = COBRAS(random_state=1).fit(X, LabelOracle(y, budget=40))
    short = COBRAS(random_state=1).fit(X, LabelOracle(y, budget=t))
    assert short.queries_ == full.queries_[:t]
    assert np.array_equal(full.labels_at(t), short.labels_)
    assert full.constraints_at(t).pairs.tolist() == short.constraints_.pairs.tolist()
    m_full, r_full = full.super_instances_at(t)
    m_short, r_short = short.super_instances_at(t)
    assert np.array_equal(m_full, m_short) and np.array_equal(r_full, r_short)


def test_dont_know_answers():
    X, y = overlapping()
    oracle = LabelOracle(y, budget=80, dont_know=0.3, random_state=0)
    est = COBRAS(random_state=0).fit(X, oracle)
    unknown = [q for q in est.queries_ if q.answer is None]
    assert unknown and est.n_queries_ == 80
    c = est.constraints_
    assert len(c) == est.n_queries_ - len(unknown)
    assert all(y[i] == y[j] for i, j in c.must_link) and all(y[i] != y[j] for i, j in c.cannot_link)


def test_an_oracle_that_never_knows_ends_with_singletons():
    # "don't know" splits as a cannot-link would and never merges: COBRAS ends when every
    # super-instance is a single point, each its own cluster, without asking twice
    X, _ = blobs(2, per=4)
    est = COBRAS(random_state=0).fit(X, Scripted(lambda i, j: None))
    assert est.stop_reason_ == "no super-instance left to split"
    assert len(est.constraints_) == 0
    assert est.n_clusters_ == X.shape[0]
    assert len({(q.i, q.j) for q in est.queries_}) == est.n_queries_


def test_known_k_infers_the_last_cluster():
    # three blobs; with k = 3 a new cluster that differs from two of the three clusters
    # joins the third without a query
    X, y = blobs(3, per=10)
    plain = COBRAS(random_state=0).fit(X, LabelOracle(y))
    known = COBRAS(3, random_state=0).fit(X, LabelOracle(y))
    assert known.inferred_ and known.n_queries_ < plain.n_queries_
    assert all(y[i] == y[j] for i, j, _ in known.inferred_)
    assert adjusted_rand_score(y, known.labels_) == 1.0


def test_warm_start_constraints_answer_every_query():
    X, y = blobs(3, per=5)
    est = COBRAS(random_state=0).fit(X, LabelOracle(y), constraints=Constraints.from_labels(y))
    assert est.n_queries_ == 0
    assert adjusted_rand_score(y, est.labels_) == 1.0


def test_clusterer_constraints_tie_unqueried_points_to_their_representative():
    X, y = overlapping()
    est = COBRAS(random_state=0, super_instance_weight=0.5).fit(X, LabelOracle(y, budget=20))
    answered = est.constraints_at(20).closure()
    sup = est.clusterer_constraints(20)
    membership, reps = est.super_instances_at(20)
    queried = set(est.queried_points(20).tolist())
    extra = [(i, j, w) for (i, j), kind, w in zip(sup.pairs.tolist(), sup.kind.tolist(), sup.weight.tolist(),
                                                 strict=True)
             if (i, j) not in {tuple(p) for p in answered.pairs.tolist()}]
    assert extra
    for i, j, w in extra:
        point = i if j == reps[membership[i]] else j
        assert point not in queried and {i, j} == {point, reps[membership[point]]}
        assert 0 < w <= 0.5
    # weight 0: the answers and their closure only
    est.set_params(super_instance_weight=0.0)
    assert est.clusterer_constraints(20).pairs.tolist() == answered.pairs.tolist()


def test_margins_fall_to_zero_at_the_boundary_between_clusters():
    # two super-instances in two clusters on a line; a point half-way has margin 0,
    # a point at a centroid margin 1
    X = np.array([[0.0], [1.0], [2.0], [8.0], [9.0], [10.0]])
    y = np.array([0, 0, 0, 1, 1, 1])
    est = COBRAS(random_state=0).fit(X, LabelOracle(y, budget=2))
    point_si, label_of = est._membership_at(2)
    m = est._margins(point_si, label_of)
    # centroids 1 and 9: point 0 -> 1 - 1/81, point 2 -> 1 - 1/49, point 1 -> 1
    assert m[1] == pytest.approx(1.0) and m[4] == pytest.approx(1.0)
    assert m[0] == pytest.approx(1 - 1 / 81) and m[2] == pytest.approx(1 - 1 / 49)


def test_estimator_interface():
    X, y = overlapping()
    est = COBRAS(random_state=0)
    labels = est.fit_predict(X, LabelOracle(y, budget=30))
    assert np.array_equal(labels, est.labels_)
    assert labels.min() == 0 and np.array_equal(np.unique(labels), np.arange(est.n_clusters_))
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(AttributeError, match="not fitted"):
        COBRAS().labels_at(3)


def test_sparse_and_dense_agree():
    X, y = blobs(3, per=8)
    Xs = sp.csr_matrix(X - X.min(axis=0))
    dense = COBRAS(random_state=0).fit(Xs.toarray(), LabelOracle(y, budget=30))
    sparse = COBRAS(random_state=0).fit(Xs, LabelOracle(y, budget=30))
    assert dense.queries_ == sparse.queries_
    assert np.array_equal(dense.labels_, sparse.labels_)


def test_cosine_emission():
    rng = np.random.default_rng(0)
    dirs = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    X = np.vstack([d * rng.uniform(1, 5, size=(10, 1)) + rng.normal(0, 0.02, (10, 3)) for d in dirs])
    y = np.repeat(np.arange(3), 10)
    est = COBRAS(emission="cosine", random_state=0).fit(np.abs(X), LabelOracle(y, budget=40))
    assert adjusted_rand_score(y, est.labels_) == 1.0


@pytest.mark.parametrize("params, match", [
    (dict(n_clusters=0), "n_clusters"), (dict(n_clusters=2.5), "n_clusters"),
    (dict(n_init=0), "n_init"), (dict(super_instance_weight=-1.0), "super_instance_weight"),
    (dict(super_instance_weight=np.inf), "super_instance_weight"),
])
def test_bad_parameters(params, match):
    X, y = blobs(2, per=3)
    with pytest.raises(ValueError, match=match):
        COBRAS(**params).fit(X, LabelOracle(y))


def test_input_not_modified():
    X, y = overlapping()
    X0 = X.copy()
    COBRAS(random_state=0).fit(X, LabelOracle(y, budget=20))
    assert np.array_equal(X, X0)


def test_active_curve_with_cobras_own_clustering_and_with_a_clusterer():
    X, y = overlapping()
    own = active_curve(COBRAS(), None, X, y, budgets=[0, 10, 30], n_runs=2, random_state=0)
    assert own.clusterer == "COBRAS" and own.scores["ari"].shape == (2, 3)
    # the curve's labels are COBRAS's labels_at(b) of a selector with the run's seed
    seed = int(np.random.default_rng(0).integers(np.iinfo(np.int32).max, size=(2, 3))[0, 0])
    est = COBRAS(random_state=seed).fit(X, LabelOracle(y, budget=30))
    assert own.scores["ari"][0, 1] == pytest.approx(adjusted_rand_score(y, est.labels_at(10)))
    piped = active_curve(COBRAS(3), MPCKMeans(3), X, y, budgets=[10, 30], n_runs=1, random_state=0)
    assert np.all(np.isfinite(piped.scores["ari"]))
    with pytest.raises(ValueError, match="own clustering"):
        active_curve(RandomPairs(), None, X, y, budgets=[5], n_runs=1)


def test_an_interactive_session_asks_what_fit_asks():
    from hmrf.active import InteractiveSession

    X, y = overlapping()
    reference = COBRAS(3, random_state=0).fit(X, LabelOracle(y, budget=15))
    session = InteractiveSession(COBRAS(3, random_state=0), X, budget=15)
    pair = session.next_query()
    while pair is not None:
        pair = session.answer(bool(y[pair[0]] == y[pair[1]]))
    assert session.queries == reference.queries_
    assert session.constraints == reference.constraints_
    # an own pair restarts COBRAS warm: the pair's answer is known, never asked
    own = tuple(int(v) for v in np.flatnonzero(y == 0)[:2])
    session = InteractiveSession(COBRAS(3, random_state=0), X, budget=15)
    session.next_query()
    nxt = session.add_constraint(*own, "must")
    while nxt is not None:
        nxt = session.answer(bool(y[nxt[0]] == y[nxt[1]]))
    pairs = [(q.i, q.j) for q in session.queries]
    assert len(set(pairs)) == len(pairs) and own not in pairs
