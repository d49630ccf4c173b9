"""Choosing w and k: cross-validation over the constraints, with scikit-learn's GridSearchCV."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.model_selection import GridSearchCV, cross_val_score

from hmrf import Constraints, HMRFKMeans, MPCKMeans, PCKMeans
from hmrf.model_selection import (
    ConstraintKFold,
    PairwiseClusterer,
    bic_k,
    choose_k,
    choose_w,
    held_out_accuracy,
    held_out_pairwise_f,
    pair_samples,
)


def _blobs(n=240, k=3, seed=0, std=1.0):
    return make_blobs(n, centers=k, n_features=2, cluster_std=std, random_state=seed)


def _fast(k=3, **kw):
    return HMRFKMeans(k, inference="icm", n_init=1, random_state=0, **kw)


# ------------------------------------------------------------------- samples
def test_pair_samples_round_trip():
    c = Constraints.from_pairs([(0, 1), (2, 3)], [(1, 2)], n=5, weight=[1.0, np.inf, 2.0])
    P = pair_samples(c)
    assert P.shape == (3, 4)
    est = PairwiseClusterer(_fast(2), np.arange(10.0).reshape(5, 2)).fit(P)
    assert est.constraints_ == c


# ------------------------------------------------------------------ splitter
def test_folds_partition_the_pairs_and_keep_the_share_of_must_links():
    X, y = _blobs()
    c = Constraints.sample_from_labels(y, 90, np.random.default_rng(0))
    P = pair_samples(c)
    cv = ConstraintKFold(3, random_state=0, exclude_implied=False)
    seen = []
    for train, test in cv.split(P):
        assert np.intersect1d(train, test).size == 0
        assert train.size + test.size == P.shape[0]
        seen.extend(test.tolist())
        share = np.mean(P[test, 2] == 1)
        assert abs(share - np.mean(P[:, 2] == 1)) < 0.05
    assert sorted(seen) == list(range(P.shape[0]))
    assert cv.get_n_splits() == 3


def test_held_out_pairs_implied_by_the_training_pairs_are_dropped():
    # 0-1, 1-2 must-links imply 0-2; 2-3 cannot-link with them implies 0-3
    c = Constraints.from_pairs([(0, 1), (1, 2), (0, 2)], [(2, 3), (0, 3)], n=4)
    P = pair_samples(c)
    for train, test in ConstraintKFold(5, shuffle=False).split(P):
        tr = c.select(np.isin(np.arange(len(c)), train))
        for row in test:
            i, j, kind = int(P[row, 0]), int(P[row, 1]), int(P[row, 2])
            comp = tr.component_labels()
            implied_ml = comp[i] == comp[j]
            implied_cl = any({comp[a], comp[b]} == {comp[i], comp[j]} for a, b in tr.cannot_link)
            assert not implied_ml and not implied_cl, (i, j, kind)


def test_too_few_pairs_for_the_folds_is_an_error():
    P = pair_samples(Constraints.from_pairs([(0, 1)], [(1, 2)], n=3))
    with pytest.raises(ValueError, match="cannot be split"):
        list(ConstraintKFold(3).split(P))
    with pytest.raises(ValueError, match="n_splits must be >= 2"):
        list(ConstraintKFold(1).split(P))


# -------------------------------------------------------------------- scorers
def test_scorers_against_a_hand_count():
    from sklearn.base import BaseEstimator

    class Fitted(BaseEstimator):
        labels_ = np.array([0, 0, 1, 1, 2])

        def fit(self):  # pragma: no cover - a fitted stand-in
            return self

    # pairs: ML(0,1) kept, ML(1,2) broken, CL(2,3) broken, CL(3,4) kept
    P = np.array([[0, 1, 1, 1], [1, 2, 1, 1], [2, 3, -1, 1], [3, 4, -1, 1]], dtype=float)
    # together: (0,1), (2,3); of those, must-links: (0,1) -> precision 1/2; recall 1/2
    assert held_out_pairwise_f(Fitted(), P) == pytest.approx(0.5)
    assert held_out_accuracy(Fitted(), P) == pytest.approx(0.5)


# ----------------------------------------------------------- with GridSearchCV
def test_grid_search_cv_over_w_with_the_constraint_splitter_and_scorer():
    """Real GridSearchCV: the pairs are the samples; every fold clusters all the points
    with the training pairs. w = 0 ignores the constraints (on overlapping blobs it
    breaks held-out pairs; the seeding does not read them either); a weight that counts
    keeps more of them."""
    X, y = _blobs(std=3.5, seed=1)
    c = Constraints.sample_from_labels(y, 400, np.random.default_rng(1))
    search = GridSearchCV(PairwiseClusterer(_fast(init="k-means++"), X), {"estimator__w": [0.0, 500.0]},
                          cv=ConstraintKFold(3, random_state=0), scoring=held_out_accuracy)
    search.fit(pair_samples(c))
    scores = search.cv_results_["mean_test_score"]
    assert scores[1] > scores[0]
    assert search.best_params_ == {"estimator__w": 500.0}
    # refit: the best estimator clustered all points with all the pairs
    assert search.best_estimator_.constraints_ == c
    assert search.best_estimator_.labels_.shape == (X.shape[0],)


def test_cross_val_score_and_the_default_score():
    X, y = make_blobs(240, centers=[[0, 0], [10, 0], [0, 10]], cluster_std=1.0, random_state=0)
    c = Constraints.sample_from_labels(y, 60, np.random.default_rng(2))
    scores = cross_val_score(PairwiseClusterer(HMRFKMeans(3, random_state=0), X), pair_samples(c),
                             cv=ConstraintKFold(3, random_state=0))
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    # well-separated blobs: the clustering keeps every held-out pair
    assert np.all(scores == 1.0)


def test_the_points_are_not_copied_by_clone():
    from sklearn.base import clone

    X, _ = _blobs()
    est = PairwiseClusterer(_fast(), X)
    assert clone(est)._points() is X


# ------------------------------------------------------------------- helpers
def test_choose_k_finds_the_number_of_classes():
    X, y = _blobs(n=300, k=4, seed=3)
    c = Constraints.sample_from_labels(y, 120, np.random.default_rng(3))
    sel = choose_k(HMRFKMeans(inference="icm", n_init=3, random_state=0), X, c, range(2, 7), cv=3,
                   random_state=0)
    assert sel.best == 4
    assert sel.values.tolist() == [2, 3, 4, 5, 6] and sel.scores.shape == (5,)


def test_choose_w_prefers_a_weight_that_counts_and_grids_around_auto():
    X, y = _blobs(std=3.5, seed=1)
    c = Constraints.sample_from_labels(y, 150, np.random.default_rng(1))
    sel = choose_w(PCKMeans(3, inference="icm", n_init=1, random_state=0), X, c, cv=3, random_state=0)
    auto = 2 * X.var(axis=0).sum()
    np.testing.assert_allclose(sel.values, [f * auto for f in (0, 1 / 16, 1 / 4, 1, 4, 16)])
    assert sel.best > 0
    assert sel.scores[sel.values.tolist().index(sel.best)] > sel.scores[0]


def test_bic_chooses_k_of_well_separated_gaussians():
    X, _ = make_blobs(400, centers=3, n_features=2, cluster_std=0.5, random_state=4)
    sel = bic_k(X, range(1, 6), random_state=0)
    assert sel.best == 3 and sel.criterion == "BIC"
    # BIC by hand for k = 3: -2 loglik + (3*2 + 3 + 2) log n
    est = HMRFKMeans(3, em="soft", normalizer="closed_form", random_state=0).fit(X)
    by_hand = -2 * est.score_samples(X).sum() + 11 * np.log(400)
    assert sel.scores[2] == pytest.approx(by_hand, rel=1e-9)


def test_choose_w_grids_around_what_each_estimator_s_auto_resolves_to():
    """MKMeans' w="auto" is min(1, n / m) with m its constraints after the closure, the
    fitted ``w_``; the default grid is W_FACTORS times that."""
    from hmrf import MKMeans

    X, y = _blobs(n=90, std=2.0, seed=2)
    c = Constraints.sample_from_labels(y, 80, np.random.default_rng(0))
    est = MKMeans(3, n_init=1, max_iter=3, random_state=0)
    w_auto = est.fit(X, constraints=c).w_
    assert w_auto < 1  # more constraints after the closure than points
    sel = choose_w(est, X, c, cv=2, random_state=0)
    np.testing.assert_allclose(sel.values, [f * w_auto for f in (0, 1 / 16, 1 / 4, 1, 4, 16)])


def test_bic_takes_an_estimator_at_emission_auto():
    X, _ = make_blobs(300, centers=3, n_features=2, cluster_std=0.5, random_state=4)
    est = HMRFKMeans(em="soft", normalizer="closed_form", random_state=0)  # emission="auto"
    by_default = bic_k(X, [2, 3, 4], random_state=0)
    given = bic_k(X, [2, 3, 4], estimator=est)
    assert given.best == 3
    np.testing.assert_allclose(given.scores, by_default.scores, rtol=1e-9)


@pytest.mark.parametrize("make", [HMRFKMeans, lambda: HMRFKMeans(em="soft"),
                                  lambda: HMRFKMeans(normalizer="closed_form"),
                                  lambda: PCKMeans(em="soft"), MPCKMeans])
def test_bic_refuses_an_estimator_without_a_normalised_density(make):
    # PCKMeans has no normalizer and MPCKMeans no em: their fixed settings count
    X, _ = _blobs()
    with pytest.raises(ValueError, match="em='soft' and normalizer='closed_form'"):
        bic_k(X, [2], estimator=make())


def test_bic_refuses_a_family_without_a_normalised_density():
    X, _ = _blobs()
    with pytest.raises(ValueError):
        bic_k(X, [2], emission="kl")
