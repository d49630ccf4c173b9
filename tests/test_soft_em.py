"""Soft (variational) HMRF-EM and mean-field posteriors (hmrf.em.soft, hmrf.inference.meanfield,
hmrf.inference.posteriors)."""

import itertools
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.datasets import load_iris, make_blobs
from sklearn.mixture import GaussianMixture

from hmrf import HMRF, ConstrainedKMeans, Constraints, HMRFKMeans, KMeans, PairwiseGraph, SphericalKMeans
from hmrf.em.soft import posterior_engine, run_soft_em
from hmrf.emissions import EmissionParams
from hmrf.inference import ICM, BeliefPropagation, MeanField
from hmrf.inference.base import InferenceEngine, Solution
from hmrf.inference.posteriors import free_energy, softmax_free_energy

X_IRIS, Y_IRIS = load_iris(return_X_y=True)


def _enumerate(unary, graph):
    """Exact marginals and -log Z by enumerating every labelling."""
    n, k = unary.shape
    states = np.array(list(itertools.product(range(k), repeat=n)))
    energy = np.array([graph.energy(s, unary) for s in states])
    logz = logsumexp(-energy)
    p = np.exp(-energy - logz)
    marg = np.zeros((n, k))
    for i in range(n):
        np.add.at(marg[i], states[:, i], p)
    return marg, -logz


def _tiny(seed, tree):
    rng = np.random.default_rng(seed)
    n, k = 5, 3
    unary = rng.random((n, k)) * 2
    edges = [(0, 1), (1, 2), (1, 3), (3, 4)] if tree else [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 0)]
    kind = rng.choice([1, -1], size=len(edges))
    return unary, PairwiseGraph.potts(n, edges, rng.random(len(edges)) * 1.5, kind)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("tree", [True, False])
def test_mean_field_free_energy_bounds_the_exact_one(seed, tree):
    unary, g = _tiny(seed, tree)
    exact, neg_logz = _enumerate(unary, g)
    res = MeanField(tol=1e-10, max_iter=500).map(unary, g)
    np.testing.assert_allclose(res.marginals.sum(axis=1), 1.0)
    assert res.free_energy >= neg_logz - 1e-12
    assert res.free_energy == pytest.approx(free_energy(unary, g, res.marginals))
    # the exact marginals are a factorised q too: their F bounds -log Z as well
    assert free_energy(unary, g, exact) >= neg_logz - 1e-12


@pytest.mark.parametrize("seed", range(5))
def test_sum_product_marginals_are_exact_on_a_tree(seed):
    unary, g = _tiny(seed, tree=True)
    exact, _ = _enumerate(unary, g)
    q = BeliefPropagation(mode="sum", tol=1e-12).marginals(unary, g)
    np.testing.assert_allclose(q, exact, atol=1e-8)


def test_mean_field_without_factors_is_exact_and_hard_must_links_share_a_posterior():
    unary = np.array([[0.0, 1.0, 2.0], [2.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    res = MeanField().map(unary, PairwiseGraph.empty(3))
    exact = np.exp(-unary) / np.exp(-unary).sum(1, keepdims=True)
    np.testing.assert_allclose(res.marginals, exact)
    assert res.free_energy == pytest.approx(-logsumexp(-unary, axis=1).sum())
    g = PairwiseGraph.potts(3, [(0, 1)], [np.inf], [1])
    res = MeanField().map(unary, g)
    np.testing.assert_allclose(res.marginals[0], res.marginals[1])
    exact, neg_logz = _enumerate(unary, PairwiseGraph.potts(3, [(0, 1)], [50.0], [1]))
    np.testing.assert_allclose(res.marginals, exact, atol=1e-12)  # nodes 0-1 vs 2 independent
    assert res.free_energy == pytest.approx(neg_logz, abs=1e-12)


def test_free_energy_never_rises_from_the_first_iteration_with_learned_weights():
    y = np.where(np.arange(150) % 5 == 0, Y_IRIS, -1)
    for est in (KMeans(3, em="soft", normalizer="closed_form", random_state=0),
                ConstrainedKMeans(3, em="soft", normalizer="closed_form", random_state=0)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            est.fit(X_IRIS, y) if isinstance(est, ConstrainedKMeans) else est.fit(X_IRIS)
        h = est.history_
        assert np.all(np.diff(h) <= 1e-9 * np.maximum(1.0, np.abs(h[:-1])))


@pytest.mark.parametrize("posterior", ["mean_field", BeliefPropagation(mode="sum")], ids=["mean_field", "bp-sum"])
def test_soft_em_free_energy_history(posterior):
    c = Constraints.sample_from_labels(Y_IRIS, 60, rng=0)
    est = HMRFKMeans(3, em="soft", inference=posterior, normalizer="closed_form", random_state=0,
                     tol=0.0, max_iter=40)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est.fit(X_IRIS, constraints=c)
    h = est.history_
    if posterior == "mean_field":  # the objective both steps descend
        assert np.all(np.diff(h) <= 1e-9 * np.maximum(1.0, np.abs(h[:-1])))
    assert est.objective_ == h[-1]
    P = est.predict_proba(X_IRIS)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.all(est.params_.weights > 0) and est.params_.weights.sum() == pytest.approx(1.0)


def test_unconstrained_free_energy_is_minus_log_likelihood():
    model = HMRF(X_IRIS, 3, normalizer="closed_form")
    params = model.emission.init_params(model.X, X_IRIS[[0, 50, 100]])
    res = run_soft_em(model, params, max_iter=1)
    U = model.unary(params) + np.log(3.0)  # uniform mixing weights until the first M-step
    assert res.objective == pytest.approx(-logsumexp(-U, axis=1).sum(), rel=1e-12)


def test_soft_em_matches_scikit_learn_spherical_gaussian_mixture():
    """No constraints, closed-form normaliser: EM of a mixture of isotropic Gaussians."""
    X, _ = make_blobs(300, centers=3, n_features=2, cluster_std=[1.0, 2.0, 0.5], random_state=3)
    C = X[[0, 1, 2]]
    ours = KMeans(3, init=C, em="soft", normalizer="closed_form", tol=0.0, max_iter=9).fit(X)
    gm = GaussianMixture(3, covariance_type="spherical", means_init=C, weights_init=np.full(3, 1 / 3),
                         precisions_init=np.full(3, 2.0), reg_covar=0.0, max_iter=8, tol=0.0).fit(X)
    np.testing.assert_allclose(ours.cluster_centers_, gm.means_, rtol=1e-9)
    np.testing.assert_allclose(ours.params_.scale, gm.covariances_, rtol=1e-9)
    np.testing.assert_allclose(ours.params_.weights, gm.weights_, rtol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(X), gm.predict_proba(X), atol=1e-9)
    np.testing.assert_allclose(ours.score_samples(X), gm.score_samples(X), rtol=1e-9)


def test_seeds_stay_frozen_in_soft_constrained_kmeans():
    y = np.where(np.arange(150) % 5 == 0, Y_IRIS, -1)
    est = ConstrainedKMeans(3, em="soft", normalizer="closed_form", random_state=0).fit(X_IRIS, y)
    seeds = y >= 0
    np.testing.assert_array_equal(est.labels_[seeds], est.seed_classes_.searchsorted(y[seeds]))


def test_hard_em_stays_the_default_and_soft_only_methods_are_absent():
    est = HMRFKMeans(3, random_state=0).fit(X_IRIS)
    assert est.em == "hard"
    assert not hasattr(est, "predict_proba") and not hasattr(est, "score_samples")
    soft = HMRFKMeans(3, em="soft", random_state=0).fit(X_IRIS)
    assert hasattr(soft, "predict_proba") and not hasattr(soft, "score_samples")  # constant normaliser


def test_soft_em_refuses_map_only_engines():
    with pytest.raises(ValueError, match="em='soft' needs posteriors, and LPRelaxation"):
        HMRFKMeans(3, em="soft", inference="lp").fit(X_IRIS)
    # max-product BP is named, with the engine that gives posteriors
    with pytest.raises(ValueError, match=r"BeliefPropagation\(mode='max'.*BeliefPropagation\(mode='sum'\)"):
        HMRFKMeans(3, em="soft", inference="bp").fit(X_IRIS)
    assert isinstance(posterior_engine("auto"), MeanField)
    with pytest.raises(ValueError, match="em must be one of 'hard', 'soft'"):
        HMRFKMeans(3, em="fuzzy").fit(X_IRIS)


def test_spherical_soft_em_with_concentrations():
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(size=(200, 20))) + np.repeat(np.eye(4, 20) * 3, 50, axis=0)
    c = Constraints.sample_from_labels(np.repeat(np.arange(4), 50), 40, rng=0)
    est = SphericalKMeans(4, em="soft", normalizer="closed_form", random_state=0).fit(X, constraints=c)
    assert np.all(np.isfinite(est.score_samples(X)))
    assert np.all(est.params_.scale > 0)
    h = est.history_
    assert np.all(np.diff(h) <= 1e-9 * np.maximum(1.0, np.abs(h[:-1])))


def test_soft_em_same_seed_same_result_and_input_untouched():
    X = X_IRIS.copy()
    c = Constraints.sample_from_labels(Y_IRIS, 40, rng=1)
    a = HMRFKMeans(3, em="soft", init="k-means++", random_state=5).fit(X, constraints=c)
    b = HMRFKMeans(3, em="soft", init="k-means++", random_state=5).fit(X, constraints=c)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.objective_ == b.objective_
    np.testing.assert_array_equal(X, X_IRIS)
    assert isinstance(a.params_, EmissionParams)


# ------------------------------------------------ mean-field through the engine interface
@pytest.mark.parametrize("seed", range(4))
def test_mean_field_posteriors_equal_enumeration_where_it_is_exact(seed):
    """One node, two nodes joined by a hard must-link (one super-node) or by a factor of
    weight 0: the factorised posterior is the exact one, and F is -log Z."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    problems = [
        (rng.random((1, k)) * 3, PairwiseGraph.empty(1)),
        (rng.random((2, k)) * 3, PairwiseGraph.potts(2, [(0, 1)], [np.inf], [1])),
        (rng.random((2, k)) * 3, PairwiseGraph.potts(2, [(0, 1)], [0.0], [-1])),
    ]
    for unary, g in problems:
        finite = PairwiseGraph.potts(2, [(0, 1)], [200.0], [1]) if np.isinf(g.weight).any() else g
        exact, neg_logz = _enumerate(unary, finite)
        res = MeanField(tol=1e-12).map(unary, g)
        np.testing.assert_allclose(res.marginals, exact, atol=1e-12)
        assert res.free_energy == pytest.approx(neg_logz, abs=1e-10)
        np.testing.assert_array_equal(res.labels, np.argmax(exact, axis=1))


@pytest.mark.parametrize("seed", range(6))
def test_mean_field_free_energy_never_increases(seed):
    """Sweep after sweep (each run of t sweeps repeats the first t of a longer one), and
    from given posteriors: F never rises, on loopy graphs with cannot-links and tables."""
    from mrf_problems import random_problem

    rng = np.random.default_rng(40 + seed)
    unary, g = random_problem(rng, 12, 3, 30, tables=seed % 2 == 0)
    F = [MeanField(max_iter=t, tol=0.0).map(unary, g).free_energy for t in range(1, 15)]
    assert np.all(np.diff(F) <= 1e-10 * np.maximum(1.0, np.abs(F[:-1])))
    q0 = rng.dirichlet(np.ones(3), size=12)
    res = MeanField(max_iter=3).map(unary, g, init=q0)
    assert res.free_energy <= free_energy(unary, g, q0) + 1e-10


class _Independent(InferenceEngine):
    """A user engine that declares marginals: each node's posterior from its own costs."""

    gives_marginals = True

    def _solve(self, unary, graph, init, rng, notify):
        q = softmax_free_energy(unary)[0]
        return Solution(np.argmax(q, axis=1), marginals=q)


def test_soft_em_runs_a_user_engine_that_declares_marginals_and_refuses_one_that_does_not():
    c = Constraints.sample_from_labels(Y_IRIS, 40, rng=2)
    model = HMRF(X_IRIS, 3, constraints=c, w=5.0)
    free = HMRF(X_IRIS, 3)
    params = model.emission.init_params(model.X, X_IRIS[[0, 50, 100]])
    ours = run_soft_em(model, params, _Independent(), max_iter=6, tol=0.0)
    # posteriors that ignore the factors: the parameters of soft EM without constraints,
    # and F counts the factors' expected cost on top
    plain = run_soft_em(free, params, max_iter=6, tol=0.0)
    np.testing.assert_allclose(ours.params.centers, plain.params.centers, rtol=1e-12)
    assert ours.objective > plain.objective
    with pytest.raises(ValueError, match="em='soft' needs posteriors, and ICM"):
        run_soft_em(model, params, ICM())
    with pytest.raises(ValueError, match="_Independent"):
        run_soft_em(model, params, type("_Independent", (ICM,), {})())


class _ForgetsMarginals(ICM):
    gives_marginals = True


def test_the_marginal_contract_is_checked():
    unary = np.array([[0.0, 1.0], [1.0, 0.0]])
    c = Constraints.from_pairs(cannot_link=[(0, 1)], n=2, weight=1.0)
    with pytest.raises(TypeError, match="_ForgetsMarginals declares gives_marginals but its _solve returned no"):
        _ForgetsMarginals().map(unary, c)
    with pytest.raises(ValueError, match=r"init posteriors must have shape \(2, 2\) with rows summing to one"):
        MeanField().map(unary, c, init=np.array([[0.5, 0.6], [0.5, 0.5]]))
    # max-product engines carry no posteriors; sum-product BP and mean-field do, F included
    assert BeliefPropagation().map(unary, c).marginals is None
    for eng in (BeliefPropagation(mode="sum", tol=1e-12), MeanField(tol=1e-12)):
        res = eng.map(unary, c)
        assert res.marginals.shape == (2, 2) and res.free_energy == pytest.approx(
            free_energy(unary, PairwiseGraph.from_constraints(c),
                        res.marginals))
