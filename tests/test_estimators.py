"""scikit-learn estimators: parity with KMeans, compliance, determinism, bad input."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans as SkKMeans
from sklearn.datasets import load_iris, load_wine, make_blobs
from sklearn.utils.estimator_checks import check_estimator

from hmrf import (
    ConstrainedKMeans,
    Constraints,
    COPKMeans,
    HMRFKMeans,
    InconsistentConstraintsError,
    InfeasibleError,
    KMeans,
    PCKMeans,
    SeededKMeans,
    SphericalKMeans,
)
from hmrf.metrics import nmi, objective

X_IRIS, Y_IRIS = load_iris(return_X_y=True)
ALL = [HMRFKMeans, PCKMeans, COPKMeans, SeededKMeans, ConstrainedKMeans, KMeans, SphericalKMeans]


# ------------------------------------------------------------ parity with sklearn
@pytest.mark.parametrize("data, k, seed", [("iris", 3, 0), ("iris", 5, 1), ("wine", 3, 2), ("blobs", 8, 3)])
@pytest.mark.parametrize("tol", [0.0, 1e-4])
def test_no_constraints_matches_sklearn_lloyd(data, k, seed, tol):
    if data == "iris":
        X = X_IRIS
    elif data == "wine":
        X = load_wine(return_X_y=True)[0]
    else:
        X = make_blobs(500, centers=k, n_features=6, cluster_std=3.0, random_state=seed)[0]
    rng = np.random.default_rng(seed)
    init = X[rng.choice(X.shape[0], k, replace=False)]
    ours = HMRFKMeans(k, init=init, tol=tol, max_iter=300).fit(X)
    ref = SkKMeans(k, init=init, n_init=1, algorithm="lloyd", tol=tol, max_iter=300).fit(X)
    assert np.array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-10, atol=1e-10)
    assert ours.objective_ == pytest.approx(ref.inertia_, rel=1e-10)
    if tol == 0.0:
        assert ours.n_iter_ == ref.n_iter_


# --------------------------------------------------------- scikit-learn checks
# Checks that pass an arbitrary ``y``: for these estimators ``y`` is supervision
# (seed labels or constraints), so an arbitrary y can legitimately be infeasible
# (COP-KMeans) or hold more classes than clusters (seeding). SP-KMeans rejects the
# all-zero rows some checks generate: cosine distance is undefined there.
Y_IS_SUPERVISION = {
    "check_dont_overwrite_parameters", "check_dtype_object", "check_estimator_sparse_array",
    "check_estimator_sparse_matrix", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1feature", "check_fit2d_predict1d",
    "check_estimators_dtypes", "check_pipeline_consistency", "check_estimators_nan_inf",
    "check_estimators_pickle", "check_fit_idempotent", "check_fit_check_is_fitted",
    "check_n_features_in",
}
EXPECTED_FAILURES = {
    HMRFKMeans: set(), PCKMeans: set(), KMeans: set(),
    COPKMeans: Y_IS_SUPERVISION,
    SeededKMeans: Y_IS_SUPERVISION, ConstrainedKMeans: Y_IS_SUPERVISION,
    SphericalKMeans: {"check_estimators_dtypes", "check_estimator_sparse_tag",
                      "check_estimator_sparse_array", "check_estimator_sparse_matrix"},
}


@pytest.mark.usefixtures("few_auto_runs")  # API checks: two runs show them (tests/conftest.py)
@pytest.mark.parametrize("Est", ALL, ids=lambda e: e.__name__)
def test_sklearn_estimator_checks(Est):
    results = check_estimator(Est(n_clusters=3, random_state=0), on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert failed <= EXPECTED_FAILURES[Est], failed - EXPECTED_FAILURES[Est]
    assert sum(r["status"] == "passed" for r in results) >= 25  # the checks really ran


@pytest.mark.parametrize("Est", [COPKMeans, SeededKMeans, ConstrainedKMeans, SphericalKMeans],
                         ids=lambda e: e.__name__)
def test_clustering_checks_pass_without_y(Est):
    from sklearn.utils.estimator_checks import check_clustering

    check_clustering(Est.__name__, Est(n_clusters=3, random_state=0))
    check_clustering(Est.__name__, Est(n_clusters=3, random_state=0), readonly_memmap=True)


# ------------------------------------------------------------------ behaviour
def iris_constraints(n_pairs, seed):
    return Constraints.sample_from_labels(Y_IRIS, n_pairs, rng=seed)


def test_constraints_improve_iris_nmi_on_average():
    base = np.mean([nmi(Y_IRIS, HMRFKMeans(3, random_state=s).fit(X_IRIS).labels_) for s in range(5)])
    with_c = np.mean([nmi(Y_IRIS, HMRFKMeans(3, random_state=s).fit(X_IRIS, constraints=iris_constraints(200, s)).labels_)
                      for s in range(5)])
    assert with_c > base + 0.05


def test_hard_must_links_are_always_satisfied():
    c = Constraints.sample_from_labels(Y_IRIS, 150, rng=4)
    c = c.select(c.kind == 1).with_weight(np.inf)
    for engine in ("icm",):
        est = HMRFKMeans(3, inference=engine, random_state=0).fit(X_IRIS, constraints=c)
        assert not c.violations(est.labels_).any()


def test_objective_attribute_matches_metric_and_history():
    c = iris_constraints(100, 0)
    est = PCKMeans(3, w=2.0, random_state=0).fit(X_IRIS, constraints=c)
    assert len(est.constraints_) > len(c)  # PCKMeans adds the closure (ICML 2004, §3.1)
    assert est.objective_ == pytest.approx(objective(X_IRIS, est.labels_, est.cluster_centers_, est.constraints_, w=2.0))
    assert np.all(np.diff(est.history_) <= 1e-9)
    assert est.objective_ <= est.history_[-1] + 1e-9


def test_partial_labels_become_constraints():
    y = np.full(150, -1)
    y[[0, 1, 50, 51, 100]] = Y_IRIS[[0, 1, 50, 51, 100]]
    est = HMRFKMeans(3, random_state=0).fit(X_IRIS, y)
    assert len(est.constraints_) == 10 and est.constraints_.n_must_link == 2
    both = HMRFKMeans(3, random_state=0).fit(X_IRIS, y, must_link=[(2, 3)])
    assert len(both.constraints_) == 11


def test_n_init_keeps_lowest_objective(monkeypatch):
    import hmrf.estimators.base as base

    seen = []
    real = base.run_em

    def spy(*args, **kwargs):
        res = real(*args, **kwargs)
        seen.append(res.objective)
        return res

    monkeypatch.setattr(base, "run_em", spy)
    est = HMRFKMeans(4, init="random", n_init=6, random_state=0).fit(X_IRIS)
    assert len(seen) == 6 and len(set(np.round(seen, 6))) > 1  # the runs really differ
    assert est.objective_ == min(seen)


def test_predict_matches_labels_without_constraints():
    est = KMeans(3, random_state=0).fit(X_IRIS)
    assert np.array_equal(est.predict(X_IRIS), est.labels_)
    assert est.predict(X_IRIS[:5].tolist()).shape == (5,)


def test_cop_kmeans_satisfies_constraints_and_keeps_must_links_in_cluster_0():
    c = iris_constraints(60, 5)
    est = COPKMeans(3, random_state=0).fit(X_IRIS, constraints=c)
    assert not c.violations(est.labels_).any()
    # must-linked points that land in cluster 0 stay together (a falsy label must not
    # be treated as "unassigned")
    for seed in range(8):
        ml = [(i, i + 1) for i in range(0, 40, 2)]
        lab = COPKMeans(3, random_state=seed).fit(X_IRIS, must_link=ml).labels_
        assert all(lab[i] == lab[j] for i, j in ml)
        if (lab[np.array(ml)[:, 0]] == 0).any():
            break
    else:  # pragma: no cover - would mean cluster 0 never got a must-linked pair
        pytest.fail("no seed put a must-linked pair into cluster 0")


def test_cop_kmeans_infeasible_names_the_point():
    cl = [(0, 1), (0, 2), (1, 2)]  # three mutually cannot-linked points, two clusters
    with pytest.raises(InfeasibleError, match=r"point \d+") as info:
        COPKMeans(2, random_state=0).fit(X_IRIS, cannot_link=cl)
    assert info.value.point in (0, 1, 2)


def test_cop_kmeans_contradiction_names_pair():
    """Soft pairs that contradict each other: COP-KMeans makes them hard, so the error
    names the pair and the chain and says what to do that COP-KMeans allows."""
    with pytest.raises(InconsistentConstraintsError,
                       match=r"keeps every constraint hard.*\(0, 2\).*chain 0 - 1 - 2.*remove one") as info:
        COPKMeans(3, random_state=0).fit(X_IRIS, must_link=[(0, 1), (1, 2)], cannot_link=[(0, 2)])
    assert info.value.pair == (0, 2) and tuple(info.value.path) == (0, 1, 2)


def test_seeded_and_constrained_kmeans():
    rng = np.random.default_rng(0)
    y = np.full(150, -1)
    seeds = rng.choice(150, 30, replace=False)
    y[seeds] = Y_IRIS[seeds]
    noisy = y.copy()
    flip = seeds[:6]
    noisy[flip] = (Y_IRIS[flip] + 1) % 3
    con = ConstrainedKMeans(3, random_state=0).fit(X_IRIS, noisy)
    # Constrained-KMeans never changes a seed's label (seed class h -> cluster h)
    assert np.array_equal(con.labels_[seeds], noisy[seeds])
    assert con.seed_classes_.tolist() == [0, 1, 2]
    seeded = SeededKMeans(3, random_state=0).fit(X_IRIS, noisy)
    assert np.any(seeded.labels_[flip] != noisy[flip])  # noisy seeds can be abandoned
    # incomplete seeding: only class 0 seeded
    y0 = np.where(Y_IRIS == 0, 0, -1)
    y0[np.flatnonzero(y0 == 0)[10:]] = -1
    inc = SeededKMeans(3, random_state=0).fit(X_IRIS, y0)
    assert nmi(Y_IRIS, inc.labels_) > 0.6
    with pytest.raises(ValueError, match="3 classes but n_clusters=2"):
        SeededKMeans(2).fit(X_IRIS, Y_IRIS)
    with pytest.raises(ValueError, match="not pairwise constraints"):
        SeededKMeans(3).fit(X_IRIS, must_link=[(0, 1)])


def test_spherical_kmeans_on_sparse_text():
    from sklearn.feature_extraction.text import TfidfVectorizer

    docs = ["space shuttle orbit launch nasa", "orbit moon launch rocket nasa",
            "baseball pitcher inning score", "pitcher home run baseball"] * 10
    X = TfidfVectorizer().fit_transform(docs)
    est = SphericalKMeans(2, random_state=0).fit(X)
    assert sp.issparse(X)
    truth = np.array([0, 0, 1, 1] * 10)
    assert nmi(truth, est.labels_) == pytest.approx(1.0)
    np.testing.assert_allclose(np.linalg.norm(est.cluster_centers_, axis=1), 1.0)


# ----------------------------------------------------------------- determinism
@pytest.mark.parametrize("Est", ALL, ids=lambda e: e.__name__)
def test_same_random_state_same_result(Est):
    kw = {}
    if Est in (SeededKMeans, ConstrainedKMeans):
        y = np.full(150, -1)
        y[::10] = Y_IRIS[::10]
        args = (X_IRIS, y)
    else:
        args = (X_IRIS,)
        if Est not in (KMeans, SphericalKMeans):
            kw = dict(constraints=iris_constraints(40, 1))
    a = Est(3, random_state=7).fit(*args, **kw)
    b = Est(3, random_state=7).fit(*args, **kw)
    assert np.array_equal(a.labels_, b.labels_) and a.objective_ == b.objective_


def test_global_numpy_state_untouched():
    state = np.random.get_state()[1].copy()
    err = np.geterr()
    HMRFKMeans(3, random_state=0).fit(X_IRIS, constraints=iris_constraints(50, 0))
    assert np.array_equal(np.random.get_state()[1], state) and np.geterr() == err


# ------------------------------------------------------------------- bad input
def test_inputs_are_never_mutated_and_readonly_accepted():
    X = X_IRIS.copy()
    X.flags.writeable = False
    ml = np.array([[0, 1], [2, 3]])
    y = np.full(150, -1)
    y[:5] = 0
    snapshot = (X.copy(), ml.copy(), y.copy())
    HMRFKMeans(3, random_state=0).fit(X, y, must_link=ml)
    SphericalKMeans(3, random_state=0).fit(X)
    ConstrainedKMeans(3, random_state=0).fit(X, y)
    for before, after in zip(snapshot, (X, ml, y)):
        assert np.array_equal(before, after)


@pytest.mark.parametrize("X, k, kw, exc, match", [
    (np.array([[0.0, np.nan], [1.0, 1.0]]), 1, {}, ValueError, r"NaN at row 0, column 1"),
    (np.array([[0.0, np.inf], [1.0, 1.0]]), 1, {}, ValueError, r"infinite value at row 0"),
    (np.arange(5.0), 2, {}, ValueError, r"2-D.*Reshape your data"),
    (np.zeros((3, 2)), 4, {}, ValueError, r"n_clusters=4 is larger"),
    (np.zeros((3, 2)), 0, {}, ValueError, r"at least 1"),
    (np.zeros((3, 2)), 2, dict(must_link=[(0, 3)]), ValueError, r"must_link pair #0 is \(0, 3\)"),
    (np.zeros((3, 2)), 2, dict(cannot_link=[(1, 1)]), ValueError, r"i == j"),
    (np.zeros((3, 2)), 2, dict(constraints=Constraints.empty(4)), ValueError, r"refer to 4 points"),
    (np.zeros((3, 2)), 2, dict(constraints=Constraints.empty(3), must_link=[(0, 1)]), ValueError, r"not both"),
    (np.zeros((3, 2)), 2, dict(y=[0, 1]), ValueError, r"2 labels but X has 3"),
    (np.array([[1j, 0.0]]), 1, {}, ValueError, r"Complex data"),
])
def test_bad_input_gives_clear_errors(X, k, kw, exc, match):
    kw = dict(kw)
    y = kw.pop("y", None)
    with pytest.raises(exc, match=match):
        HMRFKMeans(k).fit(X, y, **kw)


@pytest.mark.parametrize("emission, X, match", [
    ("kl", np.array([[1.0, -1.0], [1.0, 2.0]]), "non-negative"),
    ("idiv", np.array([[1.0, -1.0], [1.0, 2.0]]), "non-negative"),
    ("cosine", np.array([[0.0, 0.0], [1.0, 2.0]]), "row 0 of X is all zeros"),
])
def test_domain_errors_through_estimator(emission, X, match):
    with pytest.raises(ValueError, match=match):
        HMRFKMeans(2, emission=emission).fit(X)


@pytest.mark.parametrize("param, value, match", [
    ("max_iter", 0, "max_iter"), ("tol", -1.0, "tol"), ("w", -2.0, "w must"),
    ("n_init", 0, "n_init"), ("inference", "magic", "unknown inference"),
    ("emission", "hamming", "unknown emission"), ("init", "magic", "init must be"),
])
def test_bad_hyperparameters(param, value, match):
    with pytest.raises(ValueError, match=match):
        HMRFKMeans(2).set_params(**{param: value}).fit(X_IRIS)


def test_sparse_input_works_for_sqeuclidean_and_predict_checks_features():
    Xs = sp.csr_matrix(X_IRIS)  # non-negative: emission="auto" would take it for text
    a = HMRFKMeans(3, emission="sqeuclidean", random_state=0).fit(Xs, constraints=iris_constraints(30, 0))
    b = HMRFKMeans(3, emission="sqeuclidean", random_state=0).fit(X_IRIS, constraints=iris_constraints(30, 0))
    assert np.array_equal(a.labels_, b.labels_)
    with pytest.raises(ValueError, match="features"):
        a.predict(X_IRIS[:, :3])


def test_custom_potential_through_the_estimator():
    from hmrf.potentials import TablePotential

    # a strong "same label, preferably cluster 0" factor between two far-apart points
    T = np.full((3, 3), 50.0)
    np.fill_diagonal(T, 0.0)
    pot = TablePotential(150, [(0, 149)], T)
    est = HMRFKMeans(3, random_state=0).fit(X_IRIS, potentials=pot)
    assert est.labels_[0] == est.labels_[149]
    plain = HMRFKMeans(3, random_state=0).fit(X_IRIS)
    assert plain.labels_[0] != plain.labels_[149]
    with pytest.raises(ValueError, match="refers to 10 points"):
        HMRFKMeans(3).fit(X_IRIS, potentials=TablePotential(10, [(0, 1)], T))


def test_kmeanspp_projects_candidates_into_the_family_domain():
    from hmrf.emissions import BregmanFamily

    # Bernoulli family: a binary data row is not a valid centre (log 0)
    def phi(A):
        A = np.clip(A, 1e-12, 1 - 1e-12)
        return (A * np.log(A) + (1 - A) * np.log(1 - A)).sum(1)

    class Bernoulli(BregmanFamily):
        def init_params(self, X, centers):
            return super().init_params(X, np.clip(np.asarray(centers, float), 0.05, 0.95))

    fam = Bernoulli(phi, lambda M: np.log(M / (1 - M)), name="bernoulli")
    X = (np.random.default_rng(0).random((60, 8)) < np.repeat([[0.9] * 4 + [0.1] * 4, [0.1] * 4 + [0.9] * 4], 30, 0))
    from hmrf.initialization import initial_centers

    C = initial_centers(X.astype(float), 2, fam, None, "k-means++", np.random.default_rng(0))
    assert np.isfinite(fam.divergence(X.astype(float), fam.init_params(X, C).centers)).all()
