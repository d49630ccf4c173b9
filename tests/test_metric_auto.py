"""The defaults of the metric learners: ``metric="auto"``, ``shrinkage="auto"`` (the range
target), M-KMeans' choice of metric by the constraints it satisfies, and the papers'
setting one argument away."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits, load_iris, load_wine

from hmrf import HMRF, Constraints, MKMeans, MPCKMeans
from hmrf._validation import check_random_state
from hmrf.constraints import MUST_LINK
from hmrf.em import run_em
from hmrf.emissions import Mahalanobis
from hmrf.estimators.mpckmeans import MKMEANS_AUTO_SHRINKAGE, auto_shrinkage, satisfied_fraction
from hmrf.estimators.supervision import emission_of
from hmrf.inference import get_engine
from hmrf.initialization import initial_centers
from hmrf.potentials import DistanceScaledPotts

IRIS_X, IRIS_Y = load_iris(return_X_y=True)
WINE_X, WINE_Y = load_wine(return_X_y=True)


def _digits389():
    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, (3, 8, 9))
    return X[keep], y[keep]


def _inertia(X, labels):
    return sum(((X[labels == h] - X[labels == h].mean(axis=0)) ** 2).sum() for h in np.unique(labels))


# ------------------------------------------------------------- metric="auto"
@pytest.mark.parametrize("Est", [MPCKMeans, MKMeans])
def test_auto_metric_without_constraints_is_kmeans_on_digits(Est):
    """No constraints: the identity metric, so the fit minimises KMeans' objective; on
    64-dimensional digits it reaches scikit-learn's KMeans(n_init=10) inertia."""
    X, _ = _digits389()
    est = Est(3, random_state=0).fit(X)
    assert est.metric_kind_ == "identity"
    np.testing.assert_array_equal(est.metric_, np.ones(X.shape[1]))
    ref = KMeans(3, n_init=10, random_state=0).fit(X).inertia_
    assert _inertia(X, est.labels_) <= ref * (1 + 1e-9)


def test_auto_metric_rule():
    """Cosine for text (sparse non-negative rows); identity with fewer constraints
    (after the closure) than features or other sparse rows; the learned diagonal metric
    otherwise."""
    d = WINE_X.shape[1]
    few = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(0, 100)], n=len(WINE_X))
    many = Constraints.sample_from_labels(WINE_Y, 60, rng=0)
    assert len(few.closure()) < d <= len(many.closure())
    assert MPCKMeans(3, random_state=0).fit(WINE_X, constraints=few).metric_kind_ == "identity"
    est = MPCKMeans(3, random_state=0).fit(WINE_X, constraints=many)
    assert est.metric_kind_ == "diagonal" and not np.allclose(est.metric_, est.metric_[0])
    Xs = sp.csr_matrix(np.abs(WINE_X) / np.linalg.norm(WINE_X, axis=1, keepdims=True))
    assert MPCKMeans(3, random_state=0).fit(Xs, constraints=many).metric_kind_ == "cosine"
    signed = sp.csr_matrix(WINE_X - WINE_X.mean(axis=0))
    assert MPCKMeans(3, random_state=0).fit(signed, constraints=many).metric_kind_ == "identity"
    assert MPCKMeans(3, emission="mahalanobis", random_state=0).fit(Xs, constraints=many).metric_kind_ == "diagonal"


def test_auto_metric_on_iris_without_constraints_equals_identity():
    a = MPCKMeans(3, random_state=0).fit(IRIS_X)
    b = MPCKMeans(3, emission="sqeuclidean", random_state=0).fit(IRIS_X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-12)


# -------------------------------------------------------------- the range target
def test_range_target_is_unit_free_and_isotropic_for_a_common_range():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 16, size=(200, 5))
    X[:, 4] = 0.0
    X[0, 4] = 16.0  # a nearly constant feature of the same range: same target as the others
    fam = Mahalanobis(shrinkage=0.5, target="range")
    t = fam.init_params(X, X[:2]).prior
    r2 = np.ptp(X, axis=0) ** 2
    np.testing.assert_allclose(t, r2 * X.var(axis=0).sum() / r2.sum())
    np.testing.assert_allclose(t, t[0], rtol=0.05)  # every range is about 16
    Y = X * np.array([1.0, 10.0, 1e-3, 1.0, 1.0])  # rescaled features: t_d rescales by c_d²
    ratio = fam.init_params(Y, Y[:2]).prior / t
    np.testing.assert_allclose(ratio / ratio[0], [1.0, 100.0, 1e-6, 1.0, 1.0], rtol=1e-9)
    # the variance target would weigh the nearly constant feature 1 / var: 16 times the others
    v = Mahalanobis(shrinkage=0.5).init_params(X, X[:2]).prior
    assert v[0] / v[4] > 10 * t[0] / t[4]


def test_range_target_sparse_equals_dense():
    rng = np.random.default_rng(1)
    X = rng.random((50, 6)) * (rng.random((50, 6)) < 0.3)
    fam = Mahalanobis(target="range")
    np.testing.assert_allclose(fam.init_params(sp.csr_matrix(X), X[:2]).prior,
                               fam.init_params(X, X[:2]).prior, rtol=1e-12)


@pytest.mark.parametrize("lam", [0.0, 0.5, 0.999999])
def test_shrinkage_limits(lam):
    """(★) without constraint terms: ``1 / a_d = (1 - λ) S_d / n + λ t_d``; λ → 1 gives the
    target's weights ``1 / t_d``, λ = 0 the within-cluster dispersion alone."""
    X, y = WINE_X, WINE_Y
    model = HMRF(X, 3, emission=Mahalanobis(shrinkage=lam, target="range"))
    means = np.array([X[y == h].mean(axis=0) for h in range(3)])
    params = model.m_step(y, model.emission.init_params(X, means))
    t = params.prior
    S = sum(((X[y == h] - means[h]) ** 2).sum(axis=0) for h in range(3))
    np.testing.assert_allclose(1.0 / params.metric[0], (1 - lam) * S / len(X) + lam * t, rtol=1e-9)
    if lam > 0.99:
        np.testing.assert_allclose(params.metric[0] * t, 1.0, rtol=1e-5)


def test_auto_shrinkage_bounds_the_metric_against_constraint_terms():
    """``shrinkage="auto"``: whatever the violated-pair terms subtract, ``a_d t_d <= 1 / λ``
    (the floor of ``A⁻¹`` is the prior's share); the papers' floor lets weights explode."""
    c = Constraints.sample_from_labels(WINE_Y, 500, rng=np.random.default_rng(3))
    auto = MKMeans(3, emission="mahalanobis", penalty="distance", random_state=0).fit(WINE_X, constraints=c)
    assert np.all(auto.metric_ * auto.params_.prior <= 1 / auto.shrinkage_ * (1 + 1e-9))
    paper = MKMeans(3, emission=Mahalanobis(shrinkage=0.01), penalty="distance", w=1.0,
                    random_state=0).fit(WINE_X, constraints=c)
    assert np.max(paper.metric_ * paper.params_.prior) > 1e3


@pytest.mark.parametrize("Est", [MPCKMeans, MKMeans])
def test_auto_shrinkage_rule(Est):
    """The shrinkage of a named metric: for MPCKMeans ``λ = d / (n + d)`` (``λ' n = d``
    pseudo-points), for M-KMeans 0.9; used as the shrinkage and the floor of the
    range-target family the fit ran. A Mahalanobis family's own is kept."""
    c = Constraints.sample_from_labels(WINE_Y, 100, rng=np.random.default_rng(0))
    n, d = WINE_X.shape
    est = Est(3, emission="mahalanobis", random_state=0).fit(WINE_X, constraints=c)
    lam = est.shrinkage_
    if Est is MPCKMeans:
        assert lam == auto_shrinkage(n, d) == pytest.approx(d / (n + d))
        assert lam / (1 - lam) * n == pytest.approx(d)
        assert auto_shrinkage(10 * n, d) < lam < auto_shrinkage(n // 10, d)  # fades as n / d grows
    else:
        assert lam == MKMEANS_AUTO_SHRINKAGE
    fam = emission_of(est)
    assert (fam.shrinkage, fam.eig_floor, fam.target) == (lam, lam, "range")
    assert Est(3, emission=Mahalanobis(shrinkage=0.01), random_state=0).fit(
        WINE_X, constraints=c).shrinkage_ == 0.01


def test_auto_shrinkage_lets_constraints_reweigh_the_features_on_iris():
    """On iris the classes are tight along the petal features relative to their ranges:
    from 100 random pairs the learned weights of both petal features are several times
    the range target's and above the sepal features' (a fixed ``λ = 0.9``, whose floor
    holds every weight within ``1 / λ`` of the target's, would keep them under 1.12×)."""
    c = Constraints.sample_from_labels(IRIS_Y, 100, rng=np.random.default_rng(0))
    est = MPCKMeans(3, random_state=0).fit(IRIS_X, constraints=c)
    assert est.metric_kind_ == "diagonal"
    rel = est.metric_ * est.params_.prior  # a_d t_d: the weight in units of the target's
    assert np.all(rel <= 1 / est.shrinkage_ * (1 + 1e-9))
    assert min(rel[2], rel[3]) > 2.0 * max(rel[0], rel[1]) and min(rel[2], rel[3]) > 3.0


# --------------------------------------------------------------- M-KMeans' choice
def test_satisfied_fraction_by_hand():
    c = Constraints.from_pairs(must_link=[(0, 1), (2, 3)], cannot_link=[(0, 2), (1, 4)], n=5)
    labels = np.array([0, 0, 0, 1, 1])  # (0,1) kept, (2,3) broken, (0,2) broken, (1,4) kept
    assert satisfied_fraction(c, labels) == 0.5
    assert satisfied_fraction(Constraints.empty(5), labels) == 1.0


def test_mkmeans_keeps_the_metric_that_satisfies_more_constraints():
    """On raw wine (proline's variance dwarfs the rest) the learned metric satisfies far
    more constraints and is kept; on iris it does not clear the margin, and the fit is
    the identity-metric fit, label for label."""
    c = Constraints.sample_from_labels(WINE_Y, 100, rng=np.random.default_rng(0))
    est = MKMeans(3, random_state=0).fit(WINE_X, constraints=c)
    assert est.metric_kind_ == "diagonal"
    s = est.satisfied_
    assert s["diagonal"] == satisfied_fraction(est.constraints_, est.labels_) > s["identity"]
    ci = Constraints.sample_from_labels(IRIS_Y, 100, rng=np.random.default_rng(0))
    est = MKMeans(3, random_state=0).fit(IRIS_X, constraints=ci)
    s = est.satisfied_
    n = len(est.constraints_)
    if est.metric_kind_ == "identity":
        assert s["diagonal"] <= s["identity"] + np.sqrt(s["identity"] * (1 - s["identity"]) / n)
        plain = MKMeans(3, emission="sqeuclidean", random_state=0).fit(IRIS_X, constraints=ci)
        np.testing.assert_array_equal(est.labels_, plain.labels_)
    else:
        assert s["diagonal"] > s["identity"]


def test_mkmeans_auto_w_weighs_constraints_at_most_as_the_points():
    c = Constraints.sample_from_labels(WINE_Y, 500, rng=np.random.default_rng(0))
    est = MKMeans(3, emission="mahalanobis", random_state=0).fit(WINE_X, constraints=c)
    assert est.w_ == pytest.approx(min(1.0, len(WINE_X) / len(est.constraints_)))
    assert MKMeans(3, emission="mahalanobis", w=2.0, random_state=0).fit(WINE_X, constraints=c).w_ == 2.0


# ---------------------------------------------------------- the papers' setting
def test_paper_setting_is_the_paper_model():
    """``emission=Mahalanobis("diagonal", shrinkage=0.01)`` (and ``w=1``, the paper's
    seeding, one run) is Mahalanobis' own defaults (the variance target, the 1e-6 floor) with the
    distance-scaled potentials of eq. 4, run by the EM loop: the same labels and J."""
    c = Constraints.sample_from_labels(WINE_Y, 80, rng=np.random.default_rng(5)).closure()
    centers = initial_centers(WINE_X, 3, Mahalanobis(), c, "pckmeans", np.random.default_rng(0))
    est = MPCKMeans(3, emission=Mahalanobis("diagonal", shrinkage=0.01), w=1.0, init=centers, n_init=1,
                    inference="icm", closure=False, random_state=0).fit(WINE_X, constraints=c)
    model = HMRF(WINE_X, 3, emission=Mahalanobis(), potentials=[DistanceScaledPotts(c, 1.0)], w=1.0)
    res = run_em(model, model.emission.init_params(WINE_X, centers), get_engine("icm"),
                 rng=check_random_state(0))  # the generator the estimator draws from
    np.testing.assert_array_equal(est.labels_, res.labels)
    assert est.objective_ == pytest.approx(res.objective, rel=1e-12)
    np.testing.assert_allclose(est.params_.prior, WINE_X.var(axis=0), rtol=1e-12)


# -------------------------------------------------------------- text: metric="cosine"
def _topics(n_per=20, seed=0):
    """Word counts of three topics over 12 terms (sparse, non-negative): text."""
    rng = np.random.default_rng(seed)
    rates = np.full((3, 12), 0.2)
    for t in range(3):
        rates[t, 4 * t:4 * t + 4] = 3.0
    y = np.repeat(np.arange(3), n_per)
    counts = rng.poisson(rates[y]) + (rng.random((y.size, 12)) < 0.05)
    counts[counts.sum(axis=1) == 0, 0] = 1
    return sp.csr_matrix(counts.astype(np.float64)), y


def test_auto_metric_on_text_is_spherical_kmeans_without_constraints():
    """On text ``metric="auto"`` is the unit-sphere model: without constraints the fit is
    SP-KMeans' (the same labels as SphericalKMeans), its objective twice SP-KMeans'
    ``Σ (1 - x̂ᵀμ̂)``, since the cost is ``||x̂ - μ̂||² = 2 (1 - x̂ᵀμ̂)``."""
    from hmrf import SphericalKMeans

    X, _ = _topics()
    for Est in (MPCKMeans, MKMeans):
        est = Est(3, random_state=0).fit(X)
        sph = SphericalKMeans(3, random_state=0).fit(X)
        assert est.metric_kind_ == "cosine" and emission_of(est).name == "cosine"
        np.testing.assert_array_equal(est.labels_, sph.labels_)
        assert est.objective_ == pytest.approx(2.0 * sph.objective_, rel=1e-9)
        np.testing.assert_array_equal(est.metric_, np.ones(X.shape[1]))


def _unit(A):
    A = np.asarray(A, dtype=np.float64)
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def _cosine_mpck_objective(Xu, labels, ml, cl, k):
    """Eq. 4 on the unit sphere by hand: ``Σ ||x̂ - μ̂||²`` with ``μ̂`` the normalised
    cluster sums, plus ``f_M = max(0, α - ||x̂_i - x̂_j||²)`` per split must-link and
    ``f_C = min(||x̂_i - x̂_j||², α)`` per joined cannot-link, ``α`` the largest
    squared must-link distance."""
    mu = _unit(np.array([Xu[labels == h].sum(axis=0) for h in range(k)]))
    cost = float(((Xu - mu[labels]) ** 2).sum())
    sq = lambda i, j: float(((Xu[i] - Xu[j]) ** 2).sum())  # noqa: E731
    alpha = max(sq(i, j) for i, j in ml)
    cost += sum(max(0.0, alpha - sq(i, j)) for i, j in ml if labels[i] != labels[j])
    cost += sum(min(sq(i, j), alpha) for i, j in cl if labels[i] == labels[j])
    return cost


def test_cosine_mpckmeans_finds_the_enumerated_optimum_of_eq4_on_the_sphere():
    """Seven documents, two clusters, two must-links and a cannot-link that move the
    optimum away from the data's own: the fit's labelling is the minimum of eq. 4 on the
    unit sphere over all labellings (enumerated with the hand-written objective), and
    its ``objective_`` is that minimum. The optimum's basin is small on seven documents:
    twenty starts find it (``n_init="auto"`` stops once two runs agree on another)."""
    from itertools import product

    X = sp.csr_matrix(np.array([[5, 1, 3, 4], [1, 1, 1, 2], [2, 4, 2, 2], [3, 4, 2, 1],
                                [0, 3, 4, 3], [0, 0, 4, 1], [4, 0, 5, 1]], dtype=np.float64))
    est = MPCKMeans(2, n_init=20, random_state=0).fit(X, must_link=[(3, 6), (2, 3)], cannot_link=[(0, 2)])
    assert est.metric_kind_ == "cosine"
    # the transitive closure the fit uses (§3.1): (2, 6) must-linked, (0, 3), (0, 6) cannot-linked
    c = est.constraints_
    ml = [tuple(p) for p in c.pairs[c.kind == MUST_LINK]]
    cl = [tuple(p) for p in c.pairs[c.kind != MUST_LINK]]
    assert len(ml) == 3 and len(cl) == 3
    Xu = _unit(X.toarray())
    labellings = [np.array(lab) for lab in product((0, 1), repeat=7) if len(set(lab)) == 2]
    costs = [_cosine_mpck_objective(Xu, lab, ml, cl, 2) for lab in labellings]
    alone = [_cosine_mpck_objective(Xu, lab, ml[:1], [], 2) for lab in labellings]  # f_M = 0
    optimum = labellings[int(np.argmin(costs))]
    assert not _same_partition(optimum, labellings[int(np.argmin(alone))])  # the constraints matter
    assert _same_partition(est.labels_, optimum)
    assert est.objective_ == pytest.approx(min(costs), rel=1e-9)


def _same_partition(a, b):
    return np.array_equal(a, b) or np.array_equal(a, 1 - np.asarray(b))
