"""Naive-Bayes EM (hmrf.NaiveBayesEM): supervised limit, EM invariants, the KL link."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.naive_bayes import MultinomialNB

from hmrf import NaiveBayesEM
from hmrf.classic.naive_bayes import log_joint
from hmrf.emissions import KL


def multinomial_mixture(n_per_class=60, k=3, d=30, length=40, seed=0, overlap=0.3):
    """Documents drawn from k word distributions that share ``overlap`` of their mass."""
    rng = np.random.default_rng(seed)
    base = rng.dirichlet(np.ones(d))
    theta = np.array([(1 - overlap) * rng.dirichlet(np.full(d, 0.3)) + overlap * base for _ in range(k)])
    y = np.repeat(np.arange(k), n_per_class)
    X = np.array([rng.multinomial(length, theta[c]) for c in y], dtype=np.float64)
    return X, y


def hide(y, keep_per_class, seed):
    rng = np.random.default_rng(seed)
    out = np.full_like(y, -1)
    for c in np.unique(y):
        idx = rng.choice(np.flatnonzero(y == c), keep_per_class, replace=False)
        out[idx] = c
    return out


# ------------------------------------------------------------ supervised limit
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("alpha", [1.0, 0.1, 2.5])
def test_all_labelled_equals_multinomial_nb(sparse, alpha):
    X, y = multinomial_mixture(seed=1)
    Xin = sp.csr_matrix(X) if sparse else X
    Xt, _ = multinomial_mixture(n_per_class=10, seed=2)
    ours = NaiveBayesEM(3, alpha=alpha, prior_smoothing=0.0).fit(Xin, y)
    ref = MultinomialNB(alpha=alpha).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(Xt), ref.predict_proba(Xt), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.feature_log_prob_, ref.feature_log_prob_, rtol=1e-12)
    np.testing.assert_allclose(ours.class_log_prior_, ref.class_log_prior_, rtol=1e-12)
    np.testing.assert_array_equal(ours.predict(Xt), ref.predict(Xt))
    # Nigam et al.'s Laplace-smoothed prior: (1 + N_c) / (k + N), computed by hand
    counts = np.bincount(y, minlength=3)
    prior = (1.0 + counts) / (3 + counts.sum())
    smoothed = NaiveBayesEM(3, alpha=alpha).fit(Xin, y)
    ref = MultinomialNB(alpha=alpha, class_prior=prior).fit(X, y)
    np.testing.assert_allclose(smoothed.predict_proba(Xt), ref.predict_proba(Xt), rtol=0, atol=1e-10)


@pytest.mark.parametrize("setting, data_seed, keep_per_class, hide_seed",
                         [(dict(unlabeled_weight=0.0), 3, 5, 0), (dict(max_iter=0), 4, 4, 1)],
                         ids=["zero-unlabelled-weight", "max-iter-zero"])
def test_labelled_model_is_naive_bayes_on_the_labels(setting, data_seed, keep_per_class, hide_seed):
    """No weight on the unlabelled documents, or no EM iteration, leaves naive Bayes fitted
    to the labelled ones, the model EM starts from (Nigam et al. 2000)."""
    X, y = multinomial_mixture(seed=data_seed)
    partial = hide(y, keep_per_class, seed=hide_seed)
    lab = partial >= 0
    ours = NaiveBayesEM(3, prior_smoothing=0.0, **setting).fit(X, partial)
    ref = MultinomialNB().fit(X[lab], y[lab])
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-10)
    if setting.get("max_iter") == 0:
        assert ours.n_iter_ == 0 and ours.log_likelihood_history_.shape == (1,)


# ------------------------------------------------------------- one EM step by hand
def test_one_em_iteration_matches_a_hand_computation():
    X = np.array([[2, 0, 1, 0], [0, 3, 0, 1], [1, 1, 1, 1], [0, 0, 4, 2], [3, 1, 0, 0]], dtype=float)
    y = np.array([0, 1, -1, -1, -1])
    lam, a, b, k, d = 0.5, 1.0, 1.0, 2, 4

    def fit_params(R, w):
        theta = [[(a + sum(w[i] * R[i][c] * X[i, v] for i in range(5)))
                  / (a * d + sum(w[i] * R[i][c] * X[i].sum() for i in range(5))) for v in range(d)]
                 for c in range(k)]
        prior = [(b + sum(w[i] * R[i][c] for i in range(5))) / (k * b + sum(w)) for c in range(k)]
        return theta, prior

    def post(theta, prior, i):
        logs = [math.log(prior[c]) + sum(X[i, v] * math.log(theta[c][v]) for v in range(d)) for c in range(k)]
        m = max(logs)
        e = [math.exp(v - m) for v in logs]
        return [v / sum(e) for v in e]

    w = [1.0, 1.0, lam, lam, lam]
    R0 = [[1, 0], [0, 1], [0, 0], [0, 0], [0, 0]]  # labelled documents only
    theta0, prior0 = fit_params(R0, w)
    R1 = [R0[0], R0[1]] + [post(theta0, prior0, i) for i in (2, 3, 4)]
    theta1, prior1 = fit_params(R1, w)
    R2 = [R0[0], R0[1]] + [post(theta1, prior1, i) for i in (2, 3, 4)]
    est = NaiveBayesEM(2, unlabeled_weight=lam, max_iter=1, tol=0.0).fit(X, y)
    np.testing.assert_allclose(np.exp(est.feature_log_prob_), theta1, rtol=1e-12)
    np.testing.assert_allclose(np.exp(est.class_log_prior_), prior1, rtol=1e-12)
    np.testing.assert_allclose(est.responsibilities_, R2, rtol=1e-12)
    # the reported objective: λ-weighted log-likelihood plus the Dirichlet log priors, at θ1
    joint = [[math.log(prior1[c]) + sum(X[i, v] * math.log(theta1[c][v]) for v in range(d))
              for c in range(k)] for i in range(5)]
    ll = joint[0][0] + joint[1][1] + sum(lam * math.log(sum(math.exp(v) for v in joint[i])) for i in (2, 3, 4))
    ll += a * sum(math.log(t) for row in theta1 for t in row) + b * sum(math.log(p) for p in prior1)
    assert est.log_likelihood_ == pytest.approx(ll, rel=1e-12)


# ------------------------------------------------------------------- invariants
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam, per_class", [(1.0, 0), (1.0, 2), (0.1, 2), (3.0, 1)])
def test_log_likelihood_never_decreases(seed, lam, per_class):
    X, y = multinomial_mixture(seed=10 + seed, overlap=0.6)
    partial = hide(y, per_class, seed) if per_class else None
    est = NaiveBayesEM(3, unlabeled_weight=lam, tol=0.0, max_iter=40, random_state=seed).fit(
        sp.csr_matrix(X), partial)
    h = est.log_likelihood_history_
    assert h.size > 2
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))


def test_frozen_labels_never_change_and_responsibilities_sum_to_one():
    X, y = multinomial_mixture(seed=5)
    partial = hide(y, 3, seed=2)
    # a labelled document given the wrong class keeps it
    i = int(np.flatnonzero(partial == 0)[0])
    partial[i] = 2
    est = NaiveBayesEM(3, random_state=0).fit(X, partial)
    lab = partial >= 0
    np.testing.assert_array_equal(est.labels_[lab], partial[lab])
    np.testing.assert_array_equal(est.responsibilities_[lab], np.eye(3)[partial[lab]])
    np.testing.assert_allclose(est.responsibilities_.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.predict_proba(X).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.argmax(est.predict_proba(X[[i]])) == 0  # the model itself still says class 0


def test_long_documents_stay_finite():
    X, y = multinomial_mixture(seed=6)
    est = NaiveBayesEM(3).fit(X, y)
    huge = X[:3] * 1e5  # log-likelihoods around -1e7: exp() alone would underflow
    p = est.predict_proba(huge)
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1.0)
    assert np.all(np.isfinite(est.score_samples(huge)))


def test_unlabelled_documents_help_with_few_labels():
    """The slides' claim on a synthetic multinomial mixture: 2 labels per class plus
    EM on the unlabelled documents beats naive Bayes on the 2 labels alone."""
    accs_nb, accs_em = [], []
    for seed in range(5):
        X, y = multinomial_mixture(n_per_class=150, seed=20 + seed, overlap=0.5, length=25)
        partial = hide(y, 2, seed)
        nb = NaiveBayesEM(3, max_iter=0).fit(X, partial)
        em = NaiveBayesEM(3).fit(X, partial)
        accs_nb.append(np.mean(nb.labels_ == y))
        accs_em.append(np.mean(em.labels_ == y))
    assert np.mean(accs_em) > np.mean(accs_nb) + 0.05


def test_score_samples_is_the_mixture_log_likelihood():
    X, y = multinomial_mixture(seed=7)
    est = NaiveBayesEM(3).fit(X, hide(y, 3, 0))
    theta, prior = np.exp(est.feature_log_prob_), np.exp(est.class_log_prior_)
    x = X[4]
    expected = math.log(sum(prior[c] * np.prod(theta[c] ** x) for c in range(3)))
    assert est.score_samples(X[[4]])[0] == pytest.approx(expected, rel=1e-10)
    assert est.score(X) == pytest.approx(est.score_samples(X).mean())


# ---------------------------------------------------------------- the KL link
def test_class_log_likelihoods_are_minus_length_times_kl_up_to_a_row_constant():
    X, y = multinomial_mixture(seed=8)
    X[0, :] = 0.0
    X[0, 3] = 5.0  # a document with a single word
    est = NaiveBayesEM(3).fit(sp.csr_matrix(X), hide(y, 4, 0))
    cond = log_joint(sp.csr_matrix(X), np.zeros(3), est.feature_log_prob_)  # Σ_w x_w log θ_cw
    kl = KL(smoothing=0.0)
    P = kl.prepare(sp.csr_matrix(X))
    div = kl.divergence(P, est.cluster_centers_)
    length = X.sum(axis=1)
    residual = cond + length[:, None] * div  # must not depend on the class
    np.testing.assert_allclose(residual - residual[:, :1], 0.0, atol=1e-9 * np.abs(cond).max())
    # the constant is |x| Σ_w p_w log p_w
    p = X / length[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(axis=1)
    np.testing.assert_allclose(residual[:, 0], length * plogp, rtol=1e-10, atol=1e-9)


# --------------------------------------------------------- sparse, determinism
def test_sparse_x_is_never_densified(monkeypatch):
    X, y = multinomial_mixture(seed=9)
    Xs = sp.csr_matrix(X)

    def refuse(self, *a, **k):
        raise AssertionError(f"densified a sparse matrix of shape {self.shape}")

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    est = NaiveBayesEM(3, random_state=0).fit(Xs, hide(y, 2, 0))
    monkeypatch.undo()
    dense = NaiveBayesEM(3, random_state=0).fit(X, hide(y, 2, 0))
    np.testing.assert_allclose(est.responsibilities_, dense.responsibilities_, rtol=1e-9, atol=1e-12)


def test_same_random_state_same_result_and_inputs_untouched():
    X, y = multinomial_mixture(seed=11, overlap=0.7)
    X.flags.writeable = False
    a = NaiveBayesEM(3, n_init=3, random_state=4).fit(X)
    b = NaiveBayesEM(3, n_init=3, random_state=4).fit(X)
    np.testing.assert_array_equal(a.responsibilities_, b.responsibilities_)
    assert a.log_likelihood_ == b.log_likelihood_
    partial = hide(y, 2, 0)
    before = partial.copy()
    NaiveBayesEM(3).fit(X, partial)
    np.testing.assert_array_equal(partial, before)


def test_n_init_keeps_the_highest_log_posterior():
    """The first of n_init runs is the n_init=1 run (same generator), so keeping the
    best can only raise the log posterior; on this overlapping mixture it does."""
    X, _ = multinomial_mixture(seed=12, overlap=0.7)
    gains = []
    for seed in range(4):
        one = NaiveBayesEM(3, random_state=seed).fit(X).log_likelihood_
        best = NaiveBayesEM(3, n_init=5, random_state=seed).fit(X).log_likelihood_
        assert best >= one
        gains.append(best - one)
    assert max(gains) > 0


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("params, match", [
    (dict(alpha=0.0), "alpha must be a finite number > 0"),
    (dict(unlabeled_weight=-1.0), "unlabeled_weight must be"),
    (dict(unlabeled_weight=np.inf), "unlabeled_weight must be"),
    (dict(init="kmeans"), "init must be one of"),
    (dict(max_iter=-1), "max_iter must be an integer"),
    (dict(n_clusters=0), "n_clusters must be an integer"),
])
def test_bad_hyperparameters(params, match):
    X, y = multinomial_mixture(seed=13)
    with pytest.raises(ValueError, match=match):
        NaiveBayesEM(**{"n_clusters": 3, **params}).fit(X, y)


def test_bad_data_and_labels_are_named():
    X, y = multinomial_mixture(seed=14)
    Xn = X.copy()
    Xn[5, 2] = -1.0
    with pytest.raises(ValueError, match=r"non-negative word counts; X\[5, 2\] = -1.0"):
        NaiveBayesEM(3).fit(Xn, y)
    with pytest.raises(ValueError, match=r"X\[5, 2\]"):
        NaiveBayesEM(3).fit(sp.csr_matrix(Xn), y)
    bad = y.copy()
    bad[7] = 3
    with pytest.raises(ValueError, match=r"y\[7\] = 3 but n_clusters=3"):
        NaiveBayesEM(3).fit(X, bad)
    with pytest.raises(ValueError, match="lengths must match"):
        NaiveBayesEM(3).fit(X, y[:-1])
    with pytest.raises(ValueError, match="no document carries weight"):
        NaiveBayesEM(3, unlabeled_weight=0.0).fit(X)
    with pytest.raises(ValueError, match="init='labeled' needs labelled documents"):
        NaiveBayesEM(3, init="labeled").fit(X)
    est = NaiveBayesEM(3).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :5])


# checks that pass an arbitrary y: for NaiveBayesEM y holds class labels 0..k-1, and
# a y with more classes than n_clusters is rightly refused; check_clustering feeds
# standardised (negative) data to a model of counts
EXPECTED_FAILURES = {
    "check_dont_overwrite_parameters", "check_dtype_object", "check_estimator_sparse_array",
    "check_estimator_sparse_matrix", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1feature", "check_fit2d_predict1d",
    "check_clustering",
}


def test_sklearn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(NaiveBayesEM(n_clusters=3, random_state=0), on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert failed <= EXPECTED_FAILURES, failed - EXPECTED_FAILURES
    assert sum(r["status"] == "passed" for r in results) >= 25


class _UnsupervisedNB(NaiveBayesEM):
    """NaiveBayesEM that ignores ``y``, so the checks above that pass arbitrary labels
    test everything else."""

    def fit(self, X, y=None):
        return super().fit(X)


def test_sklearn_estimator_checks_without_supervision():
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(_UnsupervisedNB(n_clusters=3, random_state=0), on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    # check_clustering: standardised (negative) data; the sparse checks read
    # classifier tags whenever predict_proba exists, which a clusterer has none of
    assert failed <= {"check_clustering", "check_estimator_sparse_array",
                      "check_estimator_sparse_matrix"}, failed
    assert sum(r["status"] == "passed" for r in results) >= 30


# ----------------------------------------------------------- constraints (soft HMRF)
def _topic_docs(seed=0, n=240, d=40, length=12):
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(d, 0.3), size=3)
    t = rng.integers(0, 3, n)
    X = np.vstack([rng.multinomial(length, topics[i]) for i in t]).astype(float)
    return X, t


def test_zero_weight_constraints_change_nothing():
    from hmrf import Constraints, NaiveBayesEM

    X, t = _topic_docs()
    y = np.where(np.arange(len(t)) < 6, t, -1)
    plain = NaiveBayesEM(3, random_state=0).fit(X, y)
    pairs = np.column_stack([np.arange(0, 100, 2), np.arange(1, 100, 2)])
    zero = Constraints.from_pairs(must_link=pairs, n=len(t), weight=0.0)
    constrained = NaiveBayesEM(3, random_state=0).fit(X, y, constraints=zero)
    np.testing.assert_allclose(constrained.responsibilities_, plain.responsibilities_, atol=1e-9)
    np.testing.assert_allclose(constrained.log_likelihood_history_, plain.log_likelihood_history_,
                               rtol=1e-9)


def test_constrained_objective_never_decreases_and_hard_links_hold():
    from hmrf import Constraints, NaiveBayesEM

    X, t = _topic_docs(seed=1, length=6)  # short documents: the constraints matter
    rng = np.random.default_rng(2)
    c = Constraints.sample_from_labels(t, 150, rng=3)
    est = NaiveBayesEM(3, init="random", random_state=0, tol=0.0, max_iter=30).fit(X, constraints=c)
    h = est.log_likelihood_history_
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[:-1]))
    hard = c.with_weight(np.inf)
    est = NaiveBayesEM(3, init="random", random_state=0).fit(X, constraints=hard)
    ml, cl = hard.must_link, hard.cannot_link
    assert np.all(est.labels_[ml[:, 0]] == est.labels_[ml[:, 1]])
    np.testing.assert_allclose(est.responsibilities_[ml[:, 0]], est.responsibilities_[ml[:, 1]])
    assert rng is not None and np.mean(est.labels_[cl[:, 0]] != est.labels_[cl[:, 1]]) > 0.95


def test_constraints_help_on_short_documents():
    from hmrf import Constraints, NaiveBayesEM
    from hmrf.metrics import nmi

    X, t = _topic_docs(seed=4, length=4)
    c = Constraints.sample_from_labels(t, 400, rng=0)
    runs = [nmi(t, NaiveBayesEM(3, init="random", n_init=3, random_state=s).fit(X).labels_) for s in range(3)]
    with_c = [nmi(t, NaiveBayesEM(3, init="random", n_init=3, random_state=s).fit(X, constraints=c).labels_)
              for s in range(3)]
    assert np.mean(with_c) > np.mean(runs) + 0.05
