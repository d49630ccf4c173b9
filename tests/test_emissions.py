"""Emission families against their textbook formulas, dense and sparse."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import iv
from scipy.stats import multivariate_normal

from hmrf.emissions import (
    KL,
    BregmanFamily,
    EmissionParams,
    IDivergence,
    ItakuraSaito,
    SquaredEuclidean,
    VonMisesFisher,
    get_emission,
    log_vmf_normalizer,
)
from hmrf.emissions.vmf import _mean_resultant_ratio

rng = np.random.default_rng(0)


def positive(n, d):
    return rng.random((n, d)) + 0.05


def test_bregman_from_phi_reproduces_squared_euclidean_exactly():
    X, C = rng.normal(size=(50, 7)), rng.normal(size=(4, 7))
    fam = BregmanFamily(lambda A: np.einsum("ij,ij->i", A, A), lambda M: 2 * M)
    np.testing.assert_allclose(fam.divergence(X, C), SquaredEuclidean().divergence(X, C), rtol=0, atol=1e-12)
    textbook = ((X[:, None, :] - C[None]) ** 2).sum(-1)
    np.testing.assert_allclose(fam.divergence(X, C), textbook, atol=1e-10)


@pytest.mark.parametrize("family, textbook, data", [
    (SquaredEuclidean(), lambda x, m: np.sum((x - m) ** 2), lambda: rng.normal(size=(30, 5))),
    (IDivergence(smoothing=0.0), lambda x, m: np.sum(x * np.log(x / m) - x + m), lambda: positive(30, 5)),
    (ItakuraSaito(), lambda x, m: np.sum(x / m - np.log(x / m) - 1), lambda: positive(30, 5)),
])
def test_bregman_families_match_textbook(family, textbook, data):
    X = data()
    C = family.prepare(data()[:4])
    D = family.divergence(X, C)
    expected = np.array([[textbook(x, m) for m in C] for x in X])
    np.testing.assert_allclose(D, expected, rtol=1e-9, atol=1e-9)


def test_kl_matches_textbook_on_distributions():
    fam = KL(smoothing=0.0)
    X = fam.prepare(positive(20, 6))
    C = fam.prepare(positive(3, 6))
    expected = np.array([[np.sum(x * np.log(x / m)) for m in C] for x in X])
    np.testing.assert_allclose(fam.divergence(X, C), expected, atol=1e-10)
    np.testing.assert_allclose(X.sum(1), 1.0)


def test_cosine_matches_textbook():
    fam = VonMisesFisher()
    X = rng.normal(size=(20, 4))
    C = rng.normal(size=(3, 4))
    Xp, Cp = fam.prepare(X), fam.init_params(X, C).centers
    cos = (X @ C.T) / np.linalg.norm(X, axis=1)[:, None] / np.linalg.norm(C, axis=1)[None]
    np.testing.assert_allclose(fam.divergence(Xp, Cp), 1 - cos, atol=1e-12)


@pytest.mark.parametrize("family", [SquaredEuclidean(), KL(), IDivergence(), VonMisesFisher()])
def test_sparse_and_dense_agree(family):
    dense = positive(40, 12)
    dense[dense < 0.5] = 0.0
    dense[:, 0] += 0.1  # no empty rows
    Xd, Xs = family.prepare(dense), family.prepare(sp.csr_matrix(dense))
    assert sp.issparse(Xs)
    labels = np.arange(40) % 3
    pd_ = family.m_step(Xd, labels, family.init_params(Xd, Xd[:3]))
    ps = family.m_step(Xs, labels, family.init_params(Xs, Xd[:3]))
    np.testing.assert_allclose(pd_.centers, ps.centers, atol=1e-12)
    np.testing.assert_allclose(family.unary(Xd, pd_), family.unary(Xs, ps), atol=1e-10)


@pytest.mark.parametrize("family", [SquaredEuclidean(), IDivergence(smoothing=0.0), ItakuraSaito(),
                                    KL(smoothing=0.0)])
def test_m_step_mean_minimises_summed_divergence(family):
    gen = np.random.default_rng(3)  # its own stream: the data do not depend on the tests run before
    X = family.prepare(gen.random((25, 3)) + 0.05)
    labels = np.zeros(25, dtype=int)
    mu = family.m_step(X, labels, EmissionParams(X[:1].copy())).centers[0]

    def total(m):
        if not isinstance(family, SquaredEuclidean) and np.any(m <= 0):
            return np.inf  # outside the family's domain: the simplex steps back
        return family.divergence(X, m[None])[:, 0].sum()

    best = minimize(total, X[0] * 1.1, method="Nelder-Mead", options=dict(xatol=1e-10, fatol=1e-12, maxiter=5000))
    assert total(mu) <= best.fun + 1e-8
    for _ in range(20):  # and any perturbation inside the domain is worse
        m = mu * (1 + 0.01 * gen.normal(size=mu.shape))
        if isinstance(family, KL):
            m = m / m.sum()
        assert total(m) >= total(mu) - 1e-12


def test_kl_smoothing_is_eq_4_12_and_prior_term_in_unary():
    fam = KL(smoothing=0.1)
    X = fam.prepare(positive(10, 4))
    labels = np.r_[np.zeros(6, int), np.ones(4, int)]
    p = fam.m_step(X, labels, fam.init_params(X, X[:2]))
    u = np.full(4, 0.25)
    expected0 = (X[:6].mean(0) + 0.1 * u) / 1.1
    np.testing.assert_allclose(p.centers[0], expected0)
    np.testing.assert_allclose(p.centers.sum(1), 1.0)
    prior_cost = 0.1 * np.sum(u * np.log(u / p.centers[1]))
    np.testing.assert_allclose(fam.unary(X, p)[:, 1] - fam.divergence(X, p.centers)[:, 1], prior_cost)
    # the smoothed centre minimises sum_i D(x_i, mu) + alpha * D(u, mu) over the simplex
    f = lambda m: fam.divergence(X[:6], m[None])[:, 0].sum() + 6 * 0.1 * fam.divergence(u[None], m[None])[0, 0]
    for _ in range(20):
        m = np.abs(p.centers[0] * (1 + 0.02 * rng.normal(size=4)))
        assert f(m / m.sum()) >= f(p.centers[0]) - 1e-12


def test_squared_euclidean_closed_form_is_gaussian_log_density():
    fam = SquaredEuclidean()
    X = rng.normal(size=(60, 3)) * np.r_[np.ones(30), 3 * np.ones(30)][:, None]
    labels = np.r_[np.zeros(30, int), np.ones(30, int)]
    p = fam.m_step(X, labels, None, "closed_form")
    assert p.scale.shape == (2,)
    assert p.scale[1] > 4 * p.scale[0]  # the wider cluster has the larger variance
    U = fam.unary(X, p, "closed_form")
    for h in range(2):
        ref = -multivariate_normal(p.centers[h], p.scale[h] * np.eye(3)).logpdf(X)
        np.testing.assert_allclose(U[:, h], ref, rtol=1e-10)
    # sigma^2 is the maximum-likelihood estimate: per-cluster mean squared deviation / d
    np.testing.assert_allclose(p.scale[0], ((X[:30] - X[:30].mean(0)) ** 2).sum() / (3 * 30))


def test_vmf_log_normaliser_against_closed_forms():
    kappa = np.array([0.5, 3.0, 40.0])
    # d = 3: C_3(k) = k / (4 pi sinh k);  d = 2: C_2(k) = 1 / (2 pi I_0(k))
    np.testing.assert_allclose(log_vmf_normalizer(kappa, 3), np.log(kappa / (4 * np.pi * np.sinh(kappa))))
    np.testing.assert_allclose(log_vmf_normalizer(kappa, 2), -np.log(2 * np.pi * iv(0, kappa)))
    big = log_vmf_normalizer(np.array([1.0, 50.0, 5000.0]), 20000)
    assert np.all(np.isfinite(big))


def test_vmf_kappa_estimate_solves_likelihood_equation():
    fam = VonMisesFisher(newton_steps=4)
    for d, rbar in [(3, 0.3), (50, 0.8), (2000, 0.5)]:
        k = fam.estimate_kappa(np.array([rbar]), d)
        np.testing.assert_allclose(_mean_resultant_ratio(k, d), rbar, rtol=1e-6)


def test_vmf_closed_form_on_sparse_tfidf():
    from sklearn.feature_extraction.text import TfidfVectorizer

    docs = ["space shuttle orbit launch nasa", "orbit moon launch rocket", "nasa rocket moon orbit",
            "baseball pitcher inning", "pitcher home run baseball", "inning run score baseball"] * 3
    X = TfidfVectorizer().fit_transform(docs)
    fam = VonMisesFisher()
    Xp = fam.prepare(X)
    assert sp.issparse(Xp)
    labels = np.array([0, 0, 0, 1, 1, 1] * 3)
    p = fam.m_step(Xp, labels, fam.init_params(Xp, Xp[:2].toarray()), "closed_form")
    np.testing.assert_allclose(np.linalg.norm(p.centers, axis=1), 1.0)
    assert np.all(p.scale > 0)
    U = fam.unary(Xp, p, "closed_form")
    assert np.array_equal(U.argmin(1), labels)


def test_sparse_input_is_never_densified():
    n, d = 2000, 1_000_000  # dense would need 16 GB
    r = np.random.default_rng(0)
    rows = np.repeat(np.arange(n), 20)
    X = sp.csr_matrix((r.random(rows.size) + 0.1, (rows, r.integers(0, d, rows.size))), shape=(n, d))
    for fam in (VonMisesFisher(), SquaredEuclidean(), KL()):
        Xp = fam.prepare(X)
        labels = np.arange(n) % 3
        p = fam.m_step(Xp, labels, fam.init_params(Xp, Xp[:3].toarray()))
        assert fam.unary(Xp, p).shape == (n, 3)


@pytest.mark.parametrize("family, X, match", [
    (KL(), np.array([[1.0, -0.5], [1.0, 1.0]]), r"non-negative.*X\[0, 1\] = -0.5"),
    (KL(), np.array([[1.0, 1.0], [0.0, 0.0]]), r"row 1 of X sums to zero"),
    (IDivergence(), sp.csr_matrix(np.array([[1.0, 0.0], [0.0, -2.0]])), r"X\[1, 1\] = -2.0"),
    (VonMisesFisher(), np.array([[1.0, 1.0], [0.0, 0.0]]), r"row 1 of X is all zeros"),
    (ItakuraSaito(), np.array([[1.0, 0.0]]), r"strictly positive.*X\[0, 1\]"),
])
def test_domain_errors(family, X, match):
    with pytest.raises(ValueError, match=match):
        family.prepare(X)


def test_itakura_saito_rejects_sparse_and_inputs_are_not_mutated():
    with pytest.raises(TypeError, match="sparse"):
        ItakuraSaito().prepare(sp.csr_matrix(np.ones((2, 2))))
    X = positive(5, 3)
    X0 = X.copy()
    for fam in (KL(), VonMisesFisher()):
        fam.prepare(X)
    assert np.array_equal(X, X0)


def test_closed_form_refused_where_no_closed_form():
    with pytest.raises(ValueError, match="no closed-form normaliser"):
        KL().unary(np.eye(2), EmissionParams(np.eye(2)), "closed_form")
    with pytest.raises(ValueError, match="normalizer must be"):
        SquaredEuclidean().unary(np.eye(2), EmissionParams(np.eye(2)), "exact")


def test_get_emission_aliases():
    assert isinstance(get_emission("cosine"), VonMisesFisher)
    assert isinstance(get_emission("kl"), KL)
    with pytest.raises(ValueError, match="unknown emission"):
        get_emission("hamming")


# ------------------------------------------------------------- emission="auto"
def _text(n=30, d=20, seed=0):
    """Sparse non-negative rows, none empty (term weights)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.2, format="csr", random_state=seed)
    return (X + sp.csr_matrix((np.ones(n), (np.arange(n), rng.integers(0, d, n))), shape=(n, d))).tocsr()


def test_auto_is_cosine_for_sparse_non_negative_rows_and_squared_euclidean_otherwise():
    from hmrf.emissions import data_emission

    X = _text()
    assert data_emission(X) == "cosine"
    assert data_emission(X.toarray()) == "sqeuclidean"  # dense: points, not text
    neg = X.copy()
    neg.data[0] = -1.0
    assert data_emission(neg) == "sqeuclidean"
    empty = sp.vstack([X, sp.csr_matrix((1, X.shape[1]))]).tocsr()
    assert data_emission(empty) == "sqeuclidean"  # the cosine of an empty row is undefined
    assert isinstance(get_emission("auto", X), VonMisesFisher)
    assert isinstance(get_emission("AUTO", X.toarray()), SquaredEuclidean)


def test_auto_without_data_says_what_it_needs():
    with pytest.raises(ValueError, match="emission='auto' is chosen from the data"):
        get_emission("auto")


def test_auto_on_a_dask_array_agrees_with_the_array_in_memory():
    da = pytest.importorskip("dask.array")
    from hmrf.emissions import data_emission

    X = _text(40)
    for A in (X, -X, sp.vstack([X, sp.csr_matrix((1, X.shape[1]))]).tocsr()):
        assert data_emission(da.from_array(A, chunks=(10, A.shape[1]))) == data_emission(A)
    assert data_emission(da.from_array(X.toarray(), chunks=(10, 20))) == "sqeuclidean"


@pytest.mark.parametrize("name", ["HMRFKMeans", "PCKMeans", "COPKMeans", "SeededKMeans"])
def test_estimators_default_to_auto_and_fit_what_it_names(name):
    import hmrf

    Est = getattr(hmrf, name)
    assert Est().emission == "auto"
    X = _text(40)
    for data, family in ((X, "cosine"), (X.toarray(), "sqeuclidean")):
        auto = Est(3, random_state=0).fit(data)
        named = Est(3, emission=family, random_state=0).fit(data)
        assert auto.emission_ == family
        np.testing.assert_array_equal(auto.labels_, named.labels_)
        np.testing.assert_array_equal(auto.predict(data), named.predict(data))


def test_cosine_with_no_mean_direction_takes_an_optimal_centre():
    """Two opposite points: the data's resultant is zero, so every unit vector is an
    optimal one-cluster centre (``Σ (1 - xᵀμ) = n``). The update takes one (the first
    axis) instead of failing, the scale behind ``w="auto"`` is the mean cost above the
    centre's, 1, and a constrained fit on such data runs (the failing example hypothesis
    found for SphericalKMeans with k = 1)."""
    from hmrf import HMRF, Constraints, SphericalKMeans
    from hmrf.emissions import VonMisesFisher

    X = np.array([[0.12573022], [-0.13210486]])
    fam = VonMisesFisher()
    theta = fam.update(HMRF(X, 1, emission="cosine").statistics(np.zeros(2, dtype=np.int64)))
    np.testing.assert_array_equal(theta.centers, [[1.0]])
    assert HMRF(X, 1, emission="cosine").data_scale() == pytest.approx(1.0)
    X3 = np.array([[1.0, 2.0, 0.0], [-1.0, -2.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, -3.0]])
    assert HMRF(X3, 2, emission="cosine").data_scale() == pytest.approx(1.0)
    est = SphericalKMeans(1, random_state=0).fit(X, constraints=Constraints.empty(2))
    assert est.labels_.tolist() == [0, 0]
