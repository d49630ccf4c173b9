"""MPCKMeans / M-KMeans: distance-scaled potentials, the objective, monotonicity, API."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import pdist
from sklearn.base import clone
from sklearn.datasets import load_iris, load_wine
from sklearn.utils.estimator_checks import parametrize_with_checks

import hmrf.inference as inference
from hmrf import HMRF, Constraints, MKMeans, MPCKMeans, PCKMeans
from hmrf.emissions import Mahalanobis
from hmrf.estimators.supervision import emission_of
from hmrf.potentials import DistanceScaledPotts

IRIS_X, IRIS_Y = load_iris(return_X_y=True)
WINE_X, WINE_Y = load_wine(return_X_y=True)
ENGINES = sorted(
    name for name in inference.__all__
    if isinstance(getattr(inference, name), type)
    and issubclass(getattr(inference, name), inference.InferenceEngine)
    and getattr(inference, name) is not inference.InferenceEngine
)


def _metric_params(X, k, metric):
    fam = Mahalanobis("diagonal" if np.ndim(metric) == 1 else "full")
    p = fam.init_params(X, X[:k])
    return p.replace(metric=np.asarray(metric, dtype=float)[None])


# ------------------------------------------------------------ DistanceScaledPotts
def test_penalties_follow_eq4_under_the_metric():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 3))
    c = Constraints.from_pairs(must_link=[(0, 1), (2, 3), (4, 5)], cannot_link=[(0, 6), (1, 7)],
                               n=8)
    a = np.array([0.5, 2.0, 1.5])
    params = _metric_params(X, 2, a)
    pot = DistanceScaledPotts(c, w=2.0, alpha_min=0.3)
    d2 = np.array([(X[i] - X[j]) ** 2 @ a for i, j in c.pairs])
    ml = c.kind == 1
    amax = d2[ml].max()
    f = np.where(ml, np.maximum(0.3, amax - d2), np.minimum(0.3 + d2, amax))
    np.testing.assert_allclose(pot.edge_scale(X, params), f, rtol=1e-12)
    g = pot.graph(X, params)
    np.testing.assert_allclose(g.weight, 2.0 * f, rtol=1e-12)
    assert np.all(g.weight >= 0)
    # full metric: same distances through (x_i - x_j)ᵀ A (x_i - x_j)
    A = np.diag(a) + 0.1
    full = _metric_params(X, 2, A)
    d2f = np.array([(X[i] - X[j]) @ A @ (X[i] - X[j]) for i, j in c.pairs])
    np.testing.assert_allclose(pot.sq_distances(X, full), d2f, rtol=1e-12)
    np.testing.assert_allclose(pot.sq_distances(sp.csr_matrix(X), full), d2f, rtol=1e-12)


def test_mirrored_penalties_exchange_the_two_functions():
    """``mirrored``: far must-links and close cannot-links cost more (Bilenko et al. 2004)."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(8, 2))
    c = Constraints.from_pairs(must_link=[(0, 1), (2, 3)], cannot_link=[(4, 5), (6, 7)], n=8)
    d2 = np.array([((X[i] - X[j]) ** 2).sum() for i, j in c.pairs])
    ml = c.kind == 1
    amax = d2[ml].max()
    pot = DistanceScaledPotts(c, alpha_min=0.1, mirrored=True)
    f = np.where(ml, np.minimum(0.1 + d2, amax), np.maximum(0.1, amax - d2))
    np.testing.assert_allclose(pot.edge_scale(X, None), f, rtol=1e-12)
    labels = np.array([0, 1, 0, 1, 0, 0, 0, 0])  # all four violated
    diff, coef = pot.metric_terms(X, None, labels)
    inside = np.where(ml, 0.1 + d2 < amax, amax - d2 > 0.1)
    np.testing.assert_allclose(coef, np.where(ml, 1.0, -1.0)[inside])
    np.testing.assert_allclose(diff, (X[c.pairs[:, 0]] - X[c.pairs[:, 1]])[inside])


@pytest.mark.parametrize("sparse", [False, True])
def test_alpha_max_data_is_the_squared_diameter(sparse):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 4))
    a = rng.uniform(0.2, 3.0, size=4)
    Xs = sp.csr_matrix(X) if sparse else X
    c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(2, 3)], n=30)
    diam = (pdist(X * np.sqrt(a)) ** 2).max()
    pot = DistanceScaledPotts(c, alpha_max="data")
    assert pot.thresholds(Xs, _metric_params(X, 2, a))[1] == pytest.approx(diam, rel=1e-10)
    # no must-link: "must_link" falls back to the diameter, needed only when α_min > 0
    cl_only = Constraints.from_pairs(cannot_link=[(2, 3), (4, 5)], n=30)
    assert DistanceScaledPotts(cl_only).thresholds(Xs, _metric_params(X, 2, a)) == (0.0, np.inf)
    amin, amax = DistanceScaledPotts(cl_only, alpha_min=0.5).thresholds(Xs, _metric_params(X, 2, a))
    assert amax == pytest.approx(diam, rel=1e-10)


def test_metric_terms_are_the_violated_pairs_strictly_inside_the_thresholds():
    X = np.array([[0.0], [1.0], [0.0], [3.0], [10.0], [10.5], [20.0]])
    # ML (0,1): d²=1; ML (2,3): d²=9 = α_max (f_M = α_min = 0, excluded from M*)
    # CL (4,5): d²=0.25; CL (0,6): d²=400 > α_max (f_C = α_max, excluded from C*)
    c = Constraints.from_pairs(must_link=[(0, 1), (2, 3)], cannot_link=[(4, 5), (0, 6)], n=7,
                               weight=2.0)
    labels = np.array([0, 1, 0, 1, 0, 0, 0])  # every constraint violated
    pot = DistanceScaledPotts(c, w=0.5)
    diff, coef = pot.metric_terms(X, None, labels)
    np.testing.assert_allclose(diff.ravel(), [-1.0, -0.5])
    np.testing.assert_allclose(coef, [-1.0, 1.0])  # -w w_ij for ML, +w w_ij for CL
    _, coef_ok = pot.metric_terms(X, None, np.array([0, 0, 0, 0, 0, 1, 1]))  # none violated
    assert coef_ok.size == 0
    hard = DistanceScaledPotts(c.with_weight(np.inf))
    assert hard.metric_terms(X, None, labels)[1].size == 0
    g = hard.graph(X, None)
    assert np.all(np.isinf(g.weight))  # f = 0 on the farthest must-link, still hard


def test_alpha_max_auto_gives_bilenko_penalties_for_mirrored():
    """``alpha_max="auto"``: the paper's α_max for eq. 4, the data set's diameter for
    ``penalty="mirrored"`` (f_M = d², f_C = d²(x', x'') - d², Bilenko et al. 2004)."""
    c = Constraints.sample_from_labels(IRIS_Y, 40, rng=1)
    mir = MPCKMeans(3, penalty="mirrored", random_state=0).fit(IRIS_X, constraints=c)
    a = mir.metric_
    d2 = np.array([(IRIS_X[i] - IRIS_X[j]) ** 2 @ a for i, j in mir.constraints_.pairs])
    diam = (pdist(IRIS_X * np.sqrt(a)) ** 2).max()
    ml = mir.constraints_.kind == 1
    model = mir._model(IRIS_X, mir.constraints_, None)
    f = model.potentials[0].edge_scale(model.X, mir.params_)
    np.testing.assert_allclose(f, np.where(ml, d2, diam - d2), rtol=1e-9)
    plain = MPCKMeans(3, random_state=0)._distance_potential(mir.constraints_)
    assert plain.alpha_max == "must_link" and not plain.mirrored
    fixed = MPCKMeans(3, penalty="mirrored", alpha_max=2.5)._distance_potential(c)
    assert fixed.alpha_max == 2.5


def test_diameter_is_computed_once_per_metric(monkeypatch):
    import hmrf.potentials as pots

    calls = []
    real = pots._sq_diameter
    monkeypatch.setattr(pots, "_sq_diameter", lambda X, m: calls.append(1) or real(X, m))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    c = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(2, 3)], n=40)
    pot = DistanceScaledPotts(c, alpha_max="data", mirrored=True)
    a, b = _metric_params(X, 2, [1.0, 2.0, 3.0]), _metric_params(X, 2, [3.0, 2.0, 1.0])
    for p in (a, b, a, b, a):
        want = (pdist(X * np.sqrt(p.metric[0])) ** 2).max()
        assert pot.thresholds(X, p)[1] == pytest.approx(want, rel=1e-12)
    assert len(calls) == 2
    pot.thresholds(X.copy(), a)  # another data matrix: recomputed
    assert len(calls) == 3


def test_potential_validation():
    c = Constraints.from_pairs(must_link=[(0, 1)], n=3)
    with pytest.raises(ValueError, match="alpha_min"):
        DistanceScaledPotts(c, alpha_min=-1.0)
    with pytest.raises(ValueError, match="alpha_max"):
        DistanceScaledPotts(c, alpha_max="largest")
    with pytest.raises(ValueError, match="alpha_max"):
        DistanceScaledPotts(c, alpha_min=2.0, alpha_max=1.0)
    with pytest.raises(ValueError, match="needs the data"):
        DistanceScaledPotts(c).edge_scale(None, None)


# ------------------------------------------------------------------ the objective
def _hand_objective(X, est, c):
    """J of eq. 4 with per-point log det and the shrinkage prior, written out directly."""
    p, y = est.params_, est.labels_
    fam = emission_of(est)  # the family the fit used (shrinkage="auto" resolved)
    lam = fam.shrinkage / (1 - fam.shrinkage)
    mats = [np.diag(m) if m.ndim == 1 else m for m in p.cluster_metric()]
    total = 0.0
    for i in range(X.shape[0]):
        A = mats[y[i]]
        v = X[i] - p.centers[y[i]]
        total += v @ A @ v + lam * np.sum(np.diag(A) * p.prior)
        total -= (1 + lam) * np.linalg.slogdet(A)[1]
    Abar = np.mean([np.diag(m) if m.ndim == 1 else m for m in p.metric], axis=0)
    d2 = np.array([(X[i] - X[j]) @ Abar @ (X[i] - X[j]) for i, j in c.pairs])
    ml = c.kind == 1
    amax = d2[ml].max()
    f = np.where(ml, np.maximum(0.0, amax - d2), np.minimum(d2, amax))
    total += est.w_ * np.sum(f * c.violations(y))
    return total


@pytest.mark.parametrize("metric,per_cluster",
                         [("diagonal", False), ("full", False), ("diagonal", True)])
def test_reported_objective_is_eq4_and_history_never_increases(metric, per_cluster):
    for seed in range(3):
        c = Constraints.sample_from_labels(IRIS_Y, 60, rng=seed)
        est = MPCKMeans(3, emission=Mahalanobis(metric, per_cluster=per_cluster), random_state=seed)
        est.fit(IRIS_X, constraints=c)
        assert len(est.constraints_) >= len(c)  # the transitive closure (§3.1)
        assert est.objective_ == pytest.approx(_hand_objective(IRIS_X, est, est.constraints_),
                                               rel=1e-9)
        h = est.history_
        assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1])), h
        assert 0.0 <= est.params_.metric_step <= 1.0


@pytest.mark.parametrize("engine", ["icm", "bp"])
def test_identity_metric_and_unit_penalties_give_pckmeans(engine):
    """A = I and f ≡ 1 is PCKMeans, label for label, with the same E-step engine."""
    for X, Y in ((IRIS_X, IRIS_Y), (WINE_X, WINE_Y)):
        for seed in range(2):
            c = Constraints.sample_from_labels(Y, 80, rng=seed)
            a = MPCKMeans(3, emission="sqeuclidean", penalty="constant", inference=engine,
                          random_state=seed)
            a.fit(X, constraints=c)
            b = PCKMeans(3, inference=engine, random_state=seed).fit(X, constraints=c)
            np.testing.assert_array_equal(a.labels_, b.labels_)
            np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-10)
            assert a.objective_ == pytest.approx(b.objective_, rel=1e-10)
            assert a.n_iter_ == b.n_iter_


def _seed34_instance():
    """10 points where the paper's metric update raises J (found by a seeded search)."""
    rng = np.random.default_rng(34)
    X = rng.normal(size=(10, 2)) * [1.0, 2.0]
    ml = [tuple(rng.choice(10, 2, replace=False)) for _ in range(3)]
    cl = [tuple(rng.choice(10, 2, replace=False)) for _ in range(2)]
    return X, np.repeat([0, 1], 5), Constraints.from_pairs(must_link=ml, cannot_link=cl, n=10)


def test_paper_update_is_not_a_descent_step_because_alpha_max_moves():
    X, labels, c = _seed34_instance()
    pot = DistanceScaledPotts(c, w=0.2)
    raw = Mahalanobis("diagonal", shrinkage=0.0, safeguard=False)
    model = HMRF(X, 2, emission=raw, potentials=[pot])
    p0 = raw.init_params(model.X, X[[0, 5]])
    mid = p0.replace(centers=raw.m_step(X, labels, p0).centers)
    new = model.m_step(labels, p0)
    assert model.energy(labels, new) > model.energy(labels, mid)  # the paper's step goes up
    # with α_max frozen at its old value the same update is a descent step: the rise
    # comes from α_max's dependence on A, which the paper's derivative ignores
    old_alpha_max = pot.thresholds(X, mid)[1]
    frozen = HMRF(X, 2, emission=raw,
                  potentials=[DistanceScaledPotts(c, w=0.2, alpha_max=old_alpha_max)])
    assert frozen.energy(labels, new) < frozen.energy(labels, mid)
    # the safeguard backtracks and never goes up
    safe = HMRF(X, 2, emission=Mahalanobis("diagonal", shrinkage=0.0), potentials=[pot])
    ps = safe.m_step(labels, p0)
    assert ps.metric_step < 1.0
    assert safe.energy(labels, ps) <= safe.energy(labels, mid)
    assert not raw.exact_m_step and Mahalanobis().exact_m_step


def test_mkmeans_without_constraints_descends_and_predict_matches():
    for metric in ("diagonal", "full"):
        est = MKMeans(3, emission=Mahalanobis(metric), random_state=0).fit(WINE_X)
        h = est.history_
        assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))
        assert est.converged_
        np.testing.assert_array_equal(est.predict(WINE_X), est.labels_)


def test_mkmeans_uses_constraints_only_in_the_metric_update():
    c = Constraints.sample_from_labels(WINE_Y, 150, rng=0)
    plain = MKMeans(3, random_state=1).fit(WINE_X)
    sup = MKMeans(3, random_state=1).fit(WINE_X, constraints=c)
    assert not np.allclose(sup.metric_, plain.metric_)  # constraints change the metric ...
    # ... but not the assignment: labels are the nearest centres under the learned metric
    np.testing.assert_array_equal(sup.predict(WINE_X), sup.labels_)
    # ... nor the seeding
    est = MKMeans(3, random_state=1)
    m1 = est._model(WINE_X, c, None)
    m0 = est._model(WINE_X, Constraints.empty(len(WINE_Y)), None)
    c1 = est._initial_params(m1, c, None, np.random.default_rng(5)).centers
    none = Constraints.empty(len(WINE_Y))
    c0 = est._initial_params(m0, none, None, np.random.default_rng(5)).centers
    np.testing.assert_array_equal(c1, c0)
    assert not m1.emission.exact_m_step  # history may rise with constraints: no warning


def test_default_e_step_reaches_a_lower_objective_than_icm():
    """Why a global engine (``inference="auto"``: BP, then α-expansion moves) is the
    default: with distance-scaled penalties ICM's single-point moves stop far above the
    optimum of the E-step energy. Same initialisation and one run for every engine."""
    J = {"icm": [], "bp": [], "auto": []}
    for seed in range(3):
        c = Constraints.sample_from_labels(WINE_Y, 200, rng=seed)
        for engine in J:
            est = MPCKMeans(3, inference=engine, init="pckmeans", n_init=1,
                            random_state=seed).fit(WINE_X, constraints=c)
            J[engine].append(est.objective_)
    assert MPCKMeans().inference == "auto"
    assert np.mean(J["bp"]) < np.mean(J["icm"]) - 100.0, J
    assert np.mean(J["auto"]) < np.mean(J["icm"]) - 100.0, J


# --------------------------------------------------------------- engines and inputs
@pytest.mark.parametrize("cls, engine", [(MPCKMeans, e) for e in ENGINES] + [(MKMeans, None)])
def test_every_engine(engine, cls):
    rng = np.random.default_rng(2)
    idx = np.r_[rng.choice(50, 15, replace=False), 50 + rng.choice(50, 15, replace=False),
                100 + rng.choice(50, 15, replace=False)]
    X, y = IRIS_X[idx], IRIS_Y[idx]
    c = Constraints.sample_from_labels(y, 25, rng=3)
    kw = {} if engine is None else {"inference": getattr(inference, engine)()}  # M-KMeans: no engine
    est = cls(3, random_state=0, **kw).fit(X, constraints=c)
    assert est.labels_.shape == (45,) and set(est.labels_) <= {0, 1, 2}
    if cls is MPCKMeans:
        h = est.history_
        assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))
        model = est._model(X, est.constraints_, None)
        assert est.objective_ == pytest.approx(model.energy(est.labels_, est.params_), rel=1e-10)


@pytest.mark.parametrize("metric", ["diagonal", "full"])
def test_more_features_than_points_and_sparse_input(metric):
    rng = np.random.default_rng(4)
    X = np.r_[rng.normal(0, 1, size=(12, 30)), rng.normal(2, 1, size=(12, 30))]
    y = np.repeat([0, 1], 12)
    c = Constraints.sample_from_labels(y, 20, rng=5)
    for cls in (MPCKMeans, MKMeans):
        for data in (X, sp.csr_matrix(np.where(X > 1.0, X, 0.0))):
            est = cls(2, emission=Mahalanobis(metric), random_state=0).fit(data, constraints=c)
            assert np.all(np.isfinite(est.history_))
            assert est.predict(data).shape == (24,)
    shapes = {(False, "diagonal"): (30,), (False, "full"): (30, 30),
              (True, "diagonal"): (2, 30), (True, "full"): (2, 30, 30)}
    for pc in (False, True):
        est = MPCKMeans(2, emission=Mahalanobis(metric, per_cluster=pc), random_state=0).fit(X, constraints=c)
        assert est.metric_.shape == shapes[pc, metric]


def test_sklearn_conventions():
    c = Constraints.sample_from_labels(IRIS_Y, 40, rng=0)
    est = MPCKMeans(3, emission=Mahalanobis("full"), random_state=7)
    X = IRIS_X.copy()
    X.flags.writeable = False
    a = est.fit(X, constraints=c).labels_
    b = clone(est).fit(X.tolist(), constraints=c).labels_
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(X, IRIS_X)
    assert clone(est).get_params()["emission"].metric == "full"
    ml = c.must_link.tolist()
    cl = c.cannot_link.tolist()
    again = MPCKMeans(3, random_state=7, emission=Mahalanobis("full")).fit_predict(X, must_link=ml, cannot_link=cl)
    np.testing.assert_array_equal(again, a)
    MPCKMeans(3, random_state=0).fit(IRIS_X)  # no constraints needed
    MPCKMeans(3, w=np.inf, random_state=0).fit(IRIS_X, constraints=c)


@pytest.mark.parametrize("bad,match", [
    (dict(penalty="linear"), "penalty"), (dict(emission="geodesic"), "emission"),
    (dict(emission="kl"), "emission"), (dict(alpha_min=-1.0), "alpha_min"),
    (dict(alpha_max="largest"), "alpha_max.*auto"),
])
def test_bad_parameters_raise_at_fit(bad, match):
    c = Constraints.from_pairs(must_link=[(0, 1)], n=150)
    est = MPCKMeans(3, **bad)
    with pytest.raises(ValueError, match=match):
        est.fit(IRIS_X, constraints=c)


@pytest.mark.parametrize("old, new", [
    (dict(metric="full"), "MPCKMeans(emission=Mahalanobis('full'))"),
    (dict(metric="diagonal"), "MPCKMeans(emission='mahalanobis')"),
    (dict(metric="identity"), "MPCKMeans(emission='sqeuclidean')"),
    (dict(metric="cosine"), "MPCKMeans(emission='cosine')"),
    (dict(metric="full", per_cluster=True, shrinkage=0.01),
     "MPCKMeans(emission=Mahalanobis('full', per_cluster=True, shrinkage=0.01))"),
])
def test_the_metric_arguments_are_the_emissions_and_the_old_spelling_names_it(old, new):
    import re

    with pytest.raises(TypeError, match=re.escape(f"is spelled {new}")):
        MPCKMeans(3, **old)
    with pytest.raises(TypeError, match="MKMeans takes no inference engine"):
        MKMeans(3, inference="bp")
    with pytest.raises(TypeError, match="unexpected keyword argument 'metrics'"):
        MPCKMeans(3, metrics="full")
    # the new spelling fits the same model as the name it stands for
    c = Constraints.sample_from_labels(IRIS_Y, 60, rng=0)
    named = MPCKMeans(3, emission="mahalanobis", n_init=1, random_state=0).fit(IRIS_X, constraints=c)
    lam = named.shrinkage_
    given = MPCKMeans(3, emission=Mahalanobis("diagonal", shrinkage=lam, eig_floor=lam, target="range"),
                      n_init=1, random_state=0).fit(IRIS_X, constraints=c)
    np.testing.assert_array_equal(named.labels_, given.labels_)
    assert named.objective_ == pytest.approx(given.objective_, rel=1e-12)
    assert (given.metric_kind_, given.shrinkage_) == ("diagonal", lam)


@pytest.mark.usefixtures("few_auto_runs")  # API checks: two runs show them (tests/conftest.py)
@parametrize_with_checks([MPCKMeans(3, random_state=0), MKMeans(3, emission=Mahalanobis("full"), random_state=0)])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_regression_metric_step_with_violations_only_at_thresholds():
    """Kept fixture (tests/data): an MPCKMeans fit on standardised breast cancer whose
    6th M-step raised J by 13 when the safeguard was skipped for lack of pairs in
    M*/C*, although violated pairs at a threshold still depended on the metric."""
    import warnings
    from pathlib import Path

    from sklearn.datasets import load_breast_cancer

    data = np.load(Path(__file__).parent / "data" / "mpck_safeguard_regression.npz")
    X, _ = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    c = Constraints(X.shape[0], data["pairs"], data["kind"], data["weight"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est = MPCKMeans(int(data["n_clusters"]), random_state=int(data["random_state"])).fit(X, constraints=c)
    assert np.all(np.diff(est.history_) <= 1e-9 * np.abs(est.history_[:-1]))
