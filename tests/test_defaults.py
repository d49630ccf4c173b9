"""Defaults that give the best answer: the scale-aware constraint weight ``w="auto"``,
the default engine and initialisation, ``n_init="auto"``, the command line's text model."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_wine, make_blobs

from hmrf import HMRF, Constraints, HMRFKMeans, MKMeans, MPCKMeans, PCKMeans, SphericalKMeans
from hmrf.emissions import BregmanFamily, SquaredEuclidean
from hmrf.metrics import objective

X_WINE, Y_WINE = load_wine(return_X_y=True)


def _pairs(y, n, seed=0):
    return Constraints.sample_from_labels(y, n, np.random.default_rng(seed))


# ----------------------------------------------------------------- w = "auto"
def test_auto_w_is_the_expected_squared_distance_between_two_random_points():
    X = np.random.default_rng(0).normal(size=(40, 3)) * [1.0, 10.0, 100.0]
    c = Constraints.from_pairs(must_link=[(0, 1)], n=40)
    model = HMRF(X, 2, constraints=c, w="auto")
    pairs = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)  # all n² ordered pairs, i = j included
    assert model.w == pytest.approx(pairs.mean(), rel=1e-12)
    assert model.w == pytest.approx(2 * X.var(axis=0).sum(), rel=1e-12)
    assert model.graph().weight.tolist() == [pytest.approx(model.w)]


def test_auto_w_of_a_bregman_family_is_twice_its_bregman_information():
    # I-divergence without smoothing, defined by φ alone: s = mean φ(x_i) - φ(x̄)
    def phi(A):
        A = np.asarray(A)
        return (A * np.log(A) - A).sum(axis=1)

    fam = BregmanFamily(phi, lambda M: np.log(M), name="idiv-raw")
    X = np.random.default_rng(1).uniform(0.5, 3.0, size=(30, 4))
    model = HMRF(X, 2, emission=fam, constraints=Constraints.from_pairs(cannot_link=[(0, 1)], n=30),
                 w="auto")
    info = phi(X).mean() - phi(X.mean(axis=0)[None])[0]
    assert model.data_scale() == pytest.approx(info, rel=1e-10)
    assert model.w == pytest.approx(2 * info, rel=1e-10)


def test_auto_w_of_cosine_is_twice_the_mean_cosine_distance_to_the_mean_direction():
    X = sp.random(50, 20, density=0.3, random_state=2, format="csr")
    X.data += 0.1
    Xn = X.toarray() / np.linalg.norm(X.toarray(), axis=1, keepdims=True)
    mu = Xn.mean(axis=0) / np.linalg.norm(Xn.mean(axis=0))
    est = SphericalKMeans(3, random_state=0).fit(X, must_link=[(0, 1)])
    assert est.w_ == pytest.approx(2 * np.mean(1 - Xn @ mu), rel=1e-10)


def test_auto_w_with_the_closed_form_normaliser_is_in_the_units_of_the_fitted_gaussian():
    # one isotropic Gaussian of all the data: σ² = tr(Σ) / d, so the mean scaled cost
    # ||x - x̄||² / (2σ²) is d / 2 and w = d
    X = np.random.default_rng(3).normal(size=(60, 5)) * 7.0
    model = HMRF(X, 2, emission=SquaredEuclidean(), normalizer="closed_form",
                 constraints=Constraints.from_pairs(must_link=[(0, 1)], n=60), w="auto")
    assert model.w == pytest.approx(5.0, rel=1e-10)


def test_auto_w_makes_the_clustering_independent_of_the_units_of_x():
    X, y = make_blobs(300, centers=3, n_features=4, cluster_std=2.5, random_state=0)
    c = _pairs(y, 60)
    for scale in (1e-3, 1e3):
        a = HMRFKMeans(3, inference="icm", random_state=0).fit(X, constraints=c)
        b = HMRFKMeans(3, inference="icm", random_state=0).fit(X * scale, constraints=c)
        assert np.array_equal(a.labels_, b.labels_)
        assert b.w_ == pytest.approx(a.w_ * scale**2, rel=1e-9)
        assert b.objective_ == pytest.approx(a.objective_ * scale**2, rel=1e-6)


def test_a_number_keeps_its_meaning():
    c = _pairs(Y_WINE, 50)
    est = HMRFKMeans(3, w=2.5, inference="icm", random_state=0).fit(X_WINE, constraints=c)
    assert est.w_ == 2.5
    assert est.objective_ == pytest.approx(
        objective(X_WINE, est.labels_, est.cluster_centers_, c, w=2.5), rel=1e-12)


def test_the_default_weight_is_auto_and_counts_on_unscaled_data():
    # wine's squared distances are ~1e5: w = 1 leaves the constraints ignored
    c = _pairs(Y_WINE, 500)
    auto = HMRFKMeans(3, inference="icm", init="neighborhoods", n_init=1, random_state=0)
    one = HMRFKMeans(3, w=1.0, inference="icm", init="neighborhoods", n_init=1, random_state=0)
    assert HMRFKMeans().w == "auto" and PCKMeans().w == "auto" and MPCKMeans().w == "auto"
    auto.fit(X_WINE, constraints=c)
    one.fit(X_WINE, constraints=c)
    assert auto.w_ == pytest.approx(2 * X_WINE.var(axis=0).sum(), rel=1e-12)
    assert c.violations(auto.labels_).sum() < c.violations(one.labels_).sum()


def test_pckmeans_auto_weight_is_the_models():
    c = _pairs(Y_WINE, 40)
    est = PCKMeans(3, random_state=0).fit(X_WINE, constraints=c)
    assert est.w_ == pytest.approx(2 * X_WINE.var(axis=0).sum(), rel=1e-12)


def test_distance_scaled_penalties_take_w_one():
    c = _pairs(Y_WINE, 40)
    assert MPCKMeans(3, random_state=0).fit(X_WINE, constraints=c).w_ == 1.0
    assert MKMeans(3, random_state=0).fit(X_WINE, constraints=c).w_ == 1.0
    # plain Potts penalties under the learned metric: the metric fitted to one cluster
    # whitens the data, so a point's mean cost above the centre's is d (less shrinkage)
    const = MPCKMeans(3, penalty="constant", random_state=0).fit(X_WINE, constraints=c)
    assert 1.9 * X_WINE.shape[1] < const.w_ <= 2 * X_WINE.shape[1] + 1e-9


def test_auto_w_on_a_dask_array_equals_in_memory():
    dask = pytest.importorskip("dask")
    import dask.array as da

    c = _pairs(Y_WINE, 40)
    mem = HMRFKMeans(3, inference="icm", random_state=0).fit(X_WINE, constraints=c)
    with dask.config.set(scheduler="synchronous"):
        dist = HMRFKMeans(3, inference="icm", random_state=0).fit(
            da.from_array(X_WINE, chunks=50), constraints=c)
    assert dist.w_ == pytest.approx(mem.w_, rel=1e-12)
    assert np.array_equal(np.asarray(dist.labels_), mem.labels_)


@pytest.mark.parametrize("w", ["big", -1.0, float("nan"), True])
def test_bad_w_names_the_problem(w):
    with pytest.raises(ValueError, match="w"):
        HMRFKMeans(2, w=w).fit(X_WINE[:20], must_link=[(0, 1)])
    with pytest.raises(ValueError, match="w must be"):
        HMRF(X_WINE[:20], 2, constraints=Constraints.from_pairs(must_link=[(0, 1)], n=20), w=w)


def test_fit_command_reports_the_resolved_weight(tmp_path, capsys):
    from hmrf.cli import main

    assert main(["fit", "--dataset", "wine", "--constraints", "20", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["parameters"]["w"] == "auto"
    assert summary["w"] == pytest.approx(2 * X_WINE.var(axis=0).sum(), rel=1e-9)
    assert "w=auto = " in out
    assert main(["fit", "--dataset", "wine", "--constraints", "20", "--w", "3", "--out",
                 str(tmp_path)]) == 0
    assert json.loads((tmp_path / "summary.json").read_text())["w"] == 3.0
