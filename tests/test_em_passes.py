"""The blocked E-step pass and the additive M-step statistics (hmrf.em.passes, hmrf.emissions.stats)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs

import hmrf.em.loop as em
import hmrf.em.passes as estep
from hmrf import HMRF, Constraints, HMRFKMeans, PCKMeans
from hmrf.em import run_em
from hmrf.emissions import EmissionParams, Mahalanobis
from hmrf.emissions.stats import ClusterStats, group_sums
from hmrf.inference import ICM
from hmrf.inference.base import argmin_rows
from hmrf.initialization import initial_centers


def _blobs(n=600, d=5, k=4, seed=0):
    X, y = make_blobs(n, n_features=d, centers=k, cluster_std=2.0, random_state=seed)
    return X, y


@pytest.mark.parametrize("emission", ["sqeuclidean", "cosine", "kl", "mahalanobis"])
@pytest.mark.parametrize("block", [7, 64, 10_000])
def test_pass_equals_full_unary(emission, block):
    X, y = _blobs()
    if emission == "kl":
        X = np.abs(X) + 0.1
    c = Constraints.sample_from_labels(y, 40, rng=0)
    model = HMRF(X, 4, emission=emission, constraints=c)
    params = model.emission.init_params(model.X, model.X[[0, 150, 300, 450]])
    U = model.unary(params)
    prev = np.random.default_rng(1).integers(0, 4, X.shape[0])
    nodes, _ = model.graph(params).constrained_part()
    step = estep.assignment_pass(model, params, previous=prev, constrained=nodes, accumulate=True,
                                 shift=model.statistics_shift, block=block)
    lab, mins = argmin_rows(np.asfortranarray(U))
    np.testing.assert_array_equal(step.labels, lab)
    np.testing.assert_allclose(step.costs(), mins, rtol=1e-12)
    assert step.cost_total == pytest.approx(mins.sum(), rel=1e-12)
    assert step.previous_cost == pytest.approx(U[np.arange(len(X)), prev].sum(), rel=1e-12)
    np.testing.assert_allclose(step.constrained_unary, U[nodes], rtol=1e-12)
    full = model.emission.statistics(model.X, lab, 4, model.normalizer, model.statistics_shift)
    np.testing.assert_allclose(step.stats.counts, full.counts)
    np.testing.assert_allclose(step.stats.sums, full.sums, rtol=1e-10, atol=1e-10)
    if full.second is not None:
        np.testing.assert_allclose(step.stats.second, full.second, rtol=1e-10, atol=1e-10)


def test_compiled_row_reduction_matches_numpy(monkeypatch):
    pytest.importorskip("numba")
    rng = np.random.default_rng(0)
    U = np.asfortranarray(rng.integers(0, 4, size=(500, 7)).astype(float))  # many ties
    U[3, :] = np.inf
    prev = rng.integers(0, 7, 500)
    compiled = estep.reduce_rows(U, prev)
    monkeypatch.setitem(estep._NUMBA, "reduce_rows", None)
    reference = estep.reduce_rows(U, prev)
    np.testing.assert_array_equal(compiled[0], reference[0])
    np.testing.assert_array_equal(compiled[1], reference[1])
    assert compiled[2] == reference[2]
    lab, mins = argmin_rows(U)
    np.testing.assert_array_equal(compiled[0], lab)
    U32 = U.astype(np.float32)
    np.testing.assert_array_equal(estep.reduce_rows(U32, prev)[0], lab)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_diagonal_second_moment_equals_numpy(dtype, monkeypatch):
    """``Σ (x - c)∘(x - c)`` per cluster: the compiled accumulator and its NumPy twin
    (centred copy, squares, group sums)."""
    pytest.importorskip("numba")
    import hmrf.emissions.stats as stats

    rng = np.random.default_rng(3)
    X = (rng.normal(size=(700, 9)) * 3 + 1).astype(dtype)
    labels = rng.integers(0, 5, 700)
    shift = X.mean(axis=0).astype(np.float64)
    compiled = ClusterStats.from_data(X, labels, 5, "diagonal", shift)
    monkeypatch.setitem(stats._NUMBA, "add_centred_squares", None)
    twin = ClusterStats.from_data(X, labels, 5, "diagonal", shift)
    np.testing.assert_allclose(compiled.second, twin.second, rtol=1e-12)
    expected = np.stack([((X[labels == h].astype(np.float64) - shift) ** 2).sum(axis=0) for h in range(5)])
    np.testing.assert_allclose(compiled.second, expected, rtol=1e-10)


def test_group_sums_compiled_and_sparse_indicator_agree(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 6))
    g = rng.integers(0, 300, 1000)
    expected = np.zeros((300, 6))
    np.add.at(expected, g, X)
    np.testing.assert_allclose(group_sums(X, g, 300), expected, atol=1e-12)
    np.testing.assert_allclose(group_sums(X.astype(np.float32), g, 300), expected, atol=1e-4)
    np.testing.assert_allclose(group_sums(sp.csr_matrix(X), g, 300), expected, atol=1e-12)
    import hmrf.emissions.stats as stats
    monkeypatch.setitem(stats._NUMBA, "add_rows", None)
    np.testing.assert_allclose(group_sums(X, g, 300), expected, atol=1e-12)


@pytest.mark.parametrize("kind", ["norm", "diagonal", "full"])
@pytest.mark.parametrize("sparse", [False, True])
def test_statistics_are_additive_and_give_the_scatter(kind, sparse):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)) + 50.0  # far from the origin: raw moments would cancel
    lab = rng.integers(0, 3, 200)
    Xd = X
    if sparse:
        X = sp.csr_matrix(np.where(rng.random(X.shape) < 0.5, X, 0.0))
        Xd = X.toarray()
    shift = None if sparse else Xd.mean(axis=0)
    whole = ClusterStats.from_data(X, lab, 3, kind, shift)
    parts = ClusterStats.from_data(X[:70], lab[:70], 3, kind, shift) + \
        ClusterStats.from_data(X[70:], lab[70:], 3, kind, shift)
    np.testing.assert_allclose(parts.second, whole.second, rtol=1e-12)
    means = whole.means()
    for h in range(3):
        R = Xd[lab == h] - means[h]
        direct = {"norm": (R * R).sum(), "diagonal": (R * R).sum(0), "full": R.T @ R}[kind]
        np.testing.assert_allclose(whole.scatter(means)[h], direct, rtol=1e-9, atol=1e-9)
    moved = whole - ClusterStats.from_data(X[:5], lab[:5], 3, kind, shift) + \
        ClusterStats.from_data(X[:5], (lab[:5] + 1) % 3, 3, kind, shift)
    lab2 = lab.copy()
    lab2[:5] = (lab[:5] + 1) % 3
    np.testing.assert_allclose(moved.sums, ClusterStats.from_data(X, lab2, 3, kind, shift).sums, atol=1e-9)


def test_responsibilities_statistics_match_hard_labels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    lab = rng.integers(0, 4, 50)
    R = np.eye(4)[lab]
    a = ClusterStats.from_data(X, lab, 4, "full", X.mean(0))
    b = ClusterStats.from_data(X, R, 4, "full", X.mean(0))
    np.testing.assert_allclose(a.sums, b.sums)
    np.testing.assert_allclose(a.second, b.second, atol=1e-12)


@pytest.mark.parametrize("emission", ["sqeuclidean", "cosine", "mahalanobis"])
def test_em_with_moved_point_updates_equals_full_accumulation(emission, monkeypatch):
    """Updating the statistics from the points that moved gives the same fit as
    accumulating them from scratch every iteration."""
    X, y = _blobs(n=400, seed=3)
    c = Constraints.sample_from_labels(y, 60, rng=1)
    model = HMRF(X, 4, emission=emission, constraints=c)
    C = initial_centers(model.X, 4, model.emission, c, "neighborhoods", np.random.default_rng(0))
    p0 = model.emission.init_params(model.X, C)
    ref = run_em(model, p0, ICM(), rng=np.random.default_rng(0), tol=0.0, max_iter=30)
    monkeypatch.setattr(em, "MOVED_FRACTION", -1.0)  # accumulate from scratch every pass
    full = run_em(model, p0, ICM(), rng=np.random.default_rng(0), tol=0.0, max_iter=30)
    np.testing.assert_array_equal(ref.labels, full.labels)
    assert ref.objective == pytest.approx(full.objective, rel=1e-10)


def test_float32_stays_float32_and_matches_float64():
    X, y = _blobs(n=2000, d=8, k=5, seed=2)
    c = Constraints.sample_from_labels(y, 100, rng=0)
    # one run: n_init="auto" may keep either of two runs whose objectives tie within
    # float32's round-off
    e64 = HMRFKMeans(5, n_init=1, random_state=0).fit(X, constraints=c)
    e32 = HMRFKMeans(5, n_init=1, random_state=0).fit(X.astype(np.float32), constraints=c)
    assert e32.cluster_centers_.dtype == np.float32 and e64.cluster_centers_.dtype == np.float64
    np.testing.assert_array_equal(e32.labels_, e64.labels_)
    assert e32.objective_ == pytest.approx(e64.objective_, rel=1e-5)
    model = HMRF(X.astype(np.float32), 5)
    assert model.X.dtype == np.float32
    assert model.unary(EmissionParams(X[:5])).dtype == np.float32
    p = PCKMeans(5, random_state=0).fit(X.astype(np.float32), constraints=c)
    np.testing.assert_array_equal(p.predict(X.astype(np.float32)), p.predict(X))


def test_predict_in_blocks_equals_full_argmin(monkeypatch):
    X, _ = _blobs(n=1000)
    est = HMRFKMeans(4, random_state=0).fit(X)
    full = est.predict(X)
    import hmrf._blocks as blocks

    monkeypatch.setattr(blocks, "BLOCK_ELEMENTS", 64)
    np.testing.assert_array_equal(est.predict(X), full)


def test_mahalanobis_metric_update_from_statistics_is_the_direct_one():
    X, y = _blobs(n=300, d=4, k=3, seed=5)
    fam = Mahalanobis("diagonal", per_cluster=True, shrinkage=0.05)
    lab = y
    p0 = fam.init_params(X, X[[0, 100, 200]])
    p = fam.m_step(X, lab, p0)
    lam = 0.05
    for h in range(3):
        R = X[lab == h] - X[lab == h].mean(0)
        c = (1 - lam) * (R * R).sum(0) / (lab == h).sum() + lam * p0.prior
        np.testing.assert_allclose(p.metric[h], 1.0 / c, rtol=1e-9)


@pytest.mark.parametrize("em_mode", ["hard", "soft"])
def test_threaded_pass_gives_the_single_threaded_result(em_mode, monkeypatch):
    """Blocks on a pool of threads, combined in block order: the same labels and the
    same objective, to the last bit, as one thread."""
    X, y = _blobs(n=3000, d=6, k=5, seed=7)
    c = Constraints.sample_from_labels(y, 200, rng=0)

    def fit():
        return HMRFKMeans(5, em=em_mode, random_state=0, tol=0.0, max_iter=15).fit(X, constraints=c)

    import hmrf._blocks as blocks

    monkeypatch.setattr(blocks, "BLOCK_ELEMENTS", 256 * 5)  # many blocks
    monkeypatch.setattr(estep, "MAX_THREADS", 1)
    one = fit()
    monkeypatch.setattr(estep, "MAX_THREADS", 4)
    monkeypatch.setattr(estep, "MIN_THREADED_ENTRIES", 0)
    many = fit()
    np.testing.assert_array_equal(one.labels_, many.labels_)
    assert one.objective_ == many.objective_
    np.testing.assert_array_equal(one.history_, many.history_)
