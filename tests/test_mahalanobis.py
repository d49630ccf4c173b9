"""The Mahalanobis emission family: costs, log det, the metric M-step, regularisation."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from hmrf import HMRF, Constraints
from hmrf.emissions import Mahalanobis, MahalanobisParams, get_emission
from hmrf.emissions.mahalanobis import MAX_FULL_DIM, log_det_pd
from hmrf.potentials import DistanceScaledPotts


def _spd(rng, d, cond=10.0):
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return (Q * np.geomspace(1.0, cond, d)) @ Q.T


def _brute_unary(X, params, family):
    """(x - μ)ᵀ A (x - μ) + λ' tr(A T) - (1 + λ') log det A, one entry at a time."""
    k = params.n_clusters
    lam = family.shrinkage / (1 - family.shrinkage)
    out = np.empty((X.shape[0], k))
    for h in range(k):
        m = params.cluster_metric()[h]
        A = np.diag(m) if m.ndim == 1 else m
        logdet = np.linalg.slogdet(A)[1]
        prior = lam * np.trace(A @ np.diag(params.prior)) - (1 + lam) * logdet
        for i in range(X.shape[0]):
            v = X[i] - params.centers[h]
            out[i, h] = v @ A @ v + prior
    return out


def _params(rng, k, d, metric, per_cluster):
    g = k if per_cluster else 1
    if metric == "diagonal":
        M = rng.uniform(0.2, 3.0, size=(g, d))
    else:
        M = np.stack([_spd(rng, d) for _ in range(g)])
    return MahalanobisParams(rng.normal(size=(k, d)), metric=M, prior=rng.uniform(0.5, 2.0, size=d))


@pytest.mark.parametrize("metric", ["diagonal", "full"])
@pytest.mark.parametrize("per_cluster", [False, True])
def test_unary_matches_brute_force_dense_and_sparse(metric, per_cluster):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(15, 4))
    X[rng.random(X.shape) < 0.5] = 0.0
    fam = Mahalanobis(metric=metric, per_cluster=per_cluster, shrinkage=0.2)
    params = _params(rng, 3, 4, metric, per_cluster)
    expected = _brute_unary(X, params, fam)
    np.testing.assert_allclose(fam.unary(X, params), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fam.unary(sp.csr_matrix(X), params), expected, rtol=1e-10,
                               atol=1e-10)


def test_identity_metric_is_squared_euclidean_without_prior():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(10, 3))
    fam = Mahalanobis(metric="identity")
    p = fam.init_params(X, X[:2])
    D = ((X[:, None, :] - X[None, :2, :]) ** 2).sum(-1)
    np.testing.assert_allclose(fam.unary(X, p), D, atol=1e-12)
    assert get_emission("mahalanobis").metric == "diagonal"


def test_log_det_stable_for_near_singular_metric():
    rng = np.random.default_rng(2)
    B = _spd(rng, 30, cond=1e6)
    A = 1e-25 * B
    assert np.linalg.det(A) == 0.0  # underflows: log(det) would be -inf
    sign, ref = np.linalg.slogdet(A)
    assert sign == 1.0
    np.testing.assert_allclose(log_det_pd(A), ref, rtol=1e-10)
    # the same through the params of a fitted-looking full metric
    p = MahalanobisParams(np.zeros((1, 30)), metric=A[None], prior=np.ones(30))
    np.testing.assert_allclose(p.log_det, [ref], rtol=1e-10)
    # huge entries: det overflows to inf, Cholesky does not
    with np.errstate(over="ignore"):
        assert np.isinf(np.linalg.det(1e25 * B))
    np.testing.assert_allclose(log_det_pd(1e25 * B), np.linalg.slogdet(1e25 * B)[1], rtol=1e-10)
    with pytest.raises(ValueError, match="not positive definite"):
        log_det_pd(np.diag([1.0, -1e-3]))


# ------------------------------------------------------------------ the metric M-step
def _tiny_problem():
    """12 points, 3 features, 2 clusters, a fixed labelling with violated constraints."""
    rng = np.random.default_rng(3)
    X = np.r_[rng.normal(0, [1.0, 0.5, 2.0], size=(6, 3)),
              rng.normal(3, [0.7, 1.5, 0.4], size=(6, 3))]
    labels = np.repeat([0, 1], 6)
    # must-links across clusters between close-ish points (violated), cannot-links inside
    c = Constraints.from_pairs(must_link=[(0, 7), (2, 9)], cannot_link=[(1, 3), (8, 10)], n=12,
                               weight=0.02)
    return X, labels, c


def _minimise(fun, x0):
    res = minimize(fun, x0, method="BFGS", options={"gtol": 1e-10, "maxiter": 10000})
    return res.x


@pytest.mark.parametrize("per_cluster", [False, True])
@pytest.mark.parametrize("shrinkage", [0.0, 0.1])
@pytest.mark.parametrize("mirrored", [False, True])
def test_diagonal_metric_update_matches_numerical_minimiser(per_cluster, shrinkage, mirrored):
    X, labels, c = _tiny_problem()
    fam = Mahalanobis("diagonal", per_cluster=per_cluster, shrinkage=shrinkage)
    # α_max fixed and large: no penalty sits at a threshold, so the paper's update is exact
    pot = DistanceScaledPotts(c, w=1.0, alpha_max=500.0, mirrored=mirrored)
    model = HMRF(X, 2, emission=fam, potentials=[pot])
    p0 = fam.init_params(model.X, X[[0, 6]])
    got = model.m_step(labels, p0)
    assert got.metric_step == 1.0
    g = got.metric.shape[0]

    def J(theta):
        return model.energy(labels, got.replace(metric=np.exp(theta).reshape(g, 3)))

    best = np.exp(_minimise(J, np.zeros(g * 3))).reshape(g, 3)
    np.testing.assert_allclose(got.metric, best, rtol=1e-4)
    assert J(np.log(got.metric).ravel()) <= J(np.log(best).ravel()) + 1e-9


@pytest.mark.parametrize("per_cluster", [False, True])
def test_full_metric_update_matches_numerical_minimiser(per_cluster):
    X, labels, c = _tiny_problem()
    fam = Mahalanobis("full", per_cluster=per_cluster, shrinkage=0.05)
    model = HMRF(X, 2, emission=fam, potentials=[DistanceScaledPotts(c, w=1.0, alpha_max=500.0)])
    got = model.m_step(labels, fam.init_params(model.X, X[[0, 6]]))
    g = got.metric.shape[0]
    tril = np.tril_indices(3)

    def metric_of(theta):
        out = np.zeros((g, 3, 3))
        for h, t in enumerate(theta.reshape(g, 6)):
            L = np.zeros((3, 3))
            L[tril] = t
            L[np.diag_indices(3)] = np.exp(np.diag(L))
            out[h] = L @ L.T
        return out

    def J(theta):
        return model.energy(labels, got.replace(metric=metric_of(theta)))

    best = metric_of(_minimise(J, np.zeros(g * 6)))
    np.testing.assert_allclose(got.metric, best, rtol=1e-4, atol=1e-6)


def test_unconstrained_update_is_scatter_over_n():
    """No constraints, no shrinkage: A⁻¹ is the pooled within-cluster covariance (eq. 2)."""
    X, labels, _ = _tiny_problem()
    fam = Mahalanobis("full", shrinkage=0.0)
    p = fam.m_step(X, labels, fam.init_params(X, X[[0, 6]]))
    R = X - p.centers[labels]
    np.testing.assert_allclose(np.linalg.inv(p.metric[0]), R.T @ R / X.shape[0], rtol=1e-10)
    fam_d = Mahalanobis("diagonal", per_cluster=True, shrinkage=0.0)
    pd = fam_d.m_step(X, labels, fam_d.init_params(X, X[[0, 6]]))
    for h in range(2):
        np.testing.assert_allclose(1.0 / pd.metric[h], (R[labels == h] ** 2).mean(0), rtol=1e-10)


@pytest.mark.parametrize("metric", ["diagonal", "full"])
def test_per_cluster_metrics_reduce_to_shared_when_clusters_are_equal(metric):
    rng = np.random.default_rng(4)
    base = rng.normal(size=(20, 3)) * [1.0, 3.0, 0.3]
    X = np.r_[base, base + 10.0]  # cluster 1 is a translate of cluster 0
    labels = np.repeat([0, 1], 20)
    # mirrored constraints: the same differences violated in both clusters
    c = Constraints.from_pairs(cannot_link=[(0, 1), (20, 21)], must_link=[(2, 23), (22, 3)], n=40)
    out = {}
    for pc in (False, True):
        fam = Mahalanobis(metric, per_cluster=pc, shrinkage=0.05)
        model = HMRF(X, 2, emission=fam, potentials=[DistanceScaledPotts(c, alpha_max=1e4)])
        out[pc] = model.m_step(labels, fam.init_params(model.X, X[[0, 20]]))
    shared, per = out[False], out[True]
    np.testing.assert_allclose(per.metric[0], shared.metric[0], rtol=1e-10)
    np.testing.assert_allclose(per.metric[1], shared.metric[0], rtol=1e-10)
    fam = Mahalanobis(metric, per_cluster=True, shrinkage=0.05)
    shared_unary = Mahalanobis(metric, shrinkage=0.05).unary(X, shared)
    np.testing.assert_allclose(fam.unary(X, per), shared_unary, rtol=1e-10)


def test_sparse_diagonal_m_step_equals_dense_and_stays_sparse():
    rng = np.random.default_rng(5)
    X = sp.random(40, 30, density=0.2, random_state=6, format="csr")
    labels = rng.integers(0, 3, size=40)
    fam = Mahalanobis("diagonal", per_cluster=True)
    ps = fam.m_step(X, labels, fam.init_params(X, X[:3].toarray()))
    pd = fam.m_step(X.toarray(), labels, fam.init_params(X.toarray(), X[:3].toarray()))
    np.testing.assert_allclose(ps.metric, pd.metric, rtol=1e-9)
    np.testing.assert_allclose(fam.unary(X, ps), fam.unary(X.toarray(), pd), rtol=1e-9, atol=1e-9)
    soft = np.eye(3)[labels]  # responsibilities give the same answer as labels
    np.testing.assert_allclose(fam.m_step(X, soft, ps).metric, ps.metric, rtol=1e-9)


@pytest.mark.parametrize("metric", ["diagonal", "full"])
def test_more_features_than_points_and_constant_features(metric):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(8, 40))
    X[:, :5] = 1.0  # never varies
    labels = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    fam = Mahalanobis(metric, per_cluster=True, shrinkage=0.01)
    p = fam.m_step(X, labels, fam.init_params(X, X[[0, 3, 6]]))
    A = p.metric if metric == "full" else np.stack([np.diag(m) for m in p.metric])
    assert np.all(np.linalg.eigvalsh(A) > 0)
    assert np.all(np.isfinite(fam.unary(X, p)))
    assert np.all(np.isfinite(p.log_det))


def test_non_psd_update_is_projected_by_clipping_eigenvalues():
    """Heavy violated must-links make (★) indefinite; eigenvalues are clipped at the floor."""
    X, labels, _ = _tiny_problem()
    c = Constraints.from_pairs(must_link=[(0, 11), (1, 10), (2, 9)], n=12, weight=50.0)
    fam = Mahalanobis("full", shrinkage=0.0, safeguard=False)
    model = HMRF(X, 2, emission=fam, potentials=[DistanceScaledPotts(c, alpha_max=1e6)])
    p0 = fam.init_params(model.X, X[[0, 6]])
    p = model.m_step(labels, p0)
    cov = np.linalg.inv(p.metric[0])
    s = 1.0 / np.sqrt(p0.prior)  # the floor is in units of T: T^-1/2 A⁻¹ T^-1/2 >= floor I
    ev = np.linalg.eigvalsh(cov * np.outer(s, s))
    assert ev.min() == pytest.approx(fam.eig_floor, rel=1e-6)  # clipped, not negative
    assert np.all(np.linalg.eigvalsh(p.metric[0]) > 0)


@pytest.mark.parametrize("metric", ["diagonal", "full"])
@pytest.mark.parametrize("clip", [False, True])
def test_metric_update_is_equivariant_under_feature_rescaling(metric, clip):
    """Rescaling feature d by s_d rescales its metric entry by 1/s_d², even for features
    whose variance is tiny next to the others (no floor may depend on the units), and
    also when violated must-links make the update indefinite (``clip``)."""
    X, labels, _ = _tiny_problem()
    scale = np.array([1e-4, 1.0, 1e4])  # variances 1e-8 .. 1e8
    weight = 50.0 if clip else 0.02
    c = Constraints.from_pairs(must_link=[(0, 11), (1, 10), (2, 9)], cannot_link=[(1, 3)],
                               n=12, weight=weight)
    S = scale**2 if metric == "diagonal" else np.outer(scale, scale)  # A_d -> A_d / s_d²
    out = []
    for Z in (X, X * scale):
        fam = Mahalanobis(metric, shrinkage=0.0 if clip else 0.01, safeguard=False)
        model = HMRF(Z, 2, emission=fam, potentials=[DistanceScaledPotts(c, alpha_max=1e6)])
        p0 = fam.init_params(model.X, Z[[0, 6]])
        if Z is not X:  # start from the rescaled metric, so the same pairs are in M*, C*
            p0 = p0.replace(metric=out[0][1] / S)
        out.append((model.m_step(labels, p0).metric[0], p0.metric))
    out = [o[0] for o in out]
    np.testing.assert_allclose(out[1] * S, out[0], rtol=1e-8)
    if clip:  # the must-link terms made (★) indefinite: both were projected
        A = out[0] if metric == "full" else np.diag(out[0])
        assert np.linalg.eigvalsh(np.linalg.inv(A)).min() < 1e-5


def test_constant_features_get_a_positive_prior_without_affecting_distances():
    rng = np.random.default_rng(9)
    X = np.c_[rng.normal(size=(20, 2)) * [1e-3, 1e3], np.full(20, 7.0), np.zeros(20)]
    fam = Mahalanobis("diagonal")
    p = fam.init_params(X, X[:2])
    np.testing.assert_allclose(p.prior[:2], X[:, :2].var(0), rtol=1e-12)  # own variance kept
    assert np.all(p.prior[2:] == p.prior[:2].mean())  # constant features: mean of the others
    labels = np.repeat([0, 1], 10)
    q = fam.m_step(X, labels, p)
    assert np.all(np.isfinite(q.metric)) and np.all(q.metric > 0)
    d = fam.unary(X, q) - fam.unary(X[:, :2], fam.m_step(X[:, :2], labels,
                                                           fam.init_params(X[:, :2], X[:2, :2])))
    np.testing.assert_allclose(d - d[0, 0], 0.0, atol=1e-8)  # a per-point constant only


def test_bad_configuration_and_dimension_errors():
    with pytest.raises(ValueError, match="metric must be one of"):
        Mahalanobis("cosine")
    with pytest.raises(ValueError, match="shrinkage"):
        Mahalanobis(shrinkage=1.0)
    with pytest.raises(ValueError, match="per_cluster"):
        Mahalanobis(per_cluster="yes")
    with pytest.raises(TypeError, match="metric_terms"):
        Mahalanobis(metric_potential=object())
    wide = sp.csr_matrix((3, MAX_FULL_DIM + 1))
    with pytest.raises(ValueError, match="MAX_FULL_DIM"):
        Mahalanobis("full").prepare(wide)
    assert Mahalanobis("diagonal").prepare(wide) is wide


@pytest.mark.parametrize("metric", ["diagonal", "full", "identity"])
@pytest.mark.parametrize("per_cluster", [False, True])
def test_summed_cost_from_the_statistics_is_the_sum_of_the_unary_costs(metric, per_cluster):
    """``summed_cost`` (the scatter's ``Σ_h <A_h, S_h> + n_h · cluster_cost_h``) equals the
    unary costs summed point by point at labelled points, after a metric update; the
    identity metric's statistics carry no second moment, so it says ``None``."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 4)) * [1.0, 3.0, 0.5, 2.0] + 10.0
    labels = rng.integers(0, 3, 90)
    fam = Mahalanobis(metric=metric, per_cluster=per_cluster)
    params = fam.m_step(X, labels)
    stats = fam.statistics(X, labels, 3, shift=X.mean(axis=0))
    got = fam.summed_cost(params, stats)
    if metric == "identity":
        assert got is None
        return
    expected = _brute_unary(X, params, fam)[np.arange(90), labels].sum()
    assert got == pytest.approx(expected, rel=1e-10)
