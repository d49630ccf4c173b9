"""The blocked E-step pass and the additive M-step statistics (hmrf.em.passes, hmrf.emissions.stats)."""

import numpy as np
import pytest
import scipy.sparse as sp
from oracles import passes_numpy as oracle
from sklearn.datasets import make_blobs

import hmrf.em.loop as em
import hmrf.em.passes as estep
from hmrf import HMRF, Constraints, HMRFKMeans, PCKMeans
from hmrf.em import run_em
from hmrf.emissions import EmissionParams, Mahalanobis
from hmrf.emissions.stats import ClusterStats, group_sums
from hmrf.inference import ICM
from hmrf.initialization import initial_centers
from hmrf.model import block_unary


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
    lab, mins, _ = oracle.reduce_rows(U)
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


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_reduction_equals_its_oracle(order, dtype):
    """Labels (first minimiser, first NaN), minima and the previous labels' summed cost
    bit for bit, on rows with many ties, infinite and NaN costs."""
    rng = np.random.default_rng(0)
    U = rng.integers(0, 4, size=(500, 7)).astype(dtype)
    U[3] = np.inf
    U[7, 2] = -1.0
    U[9, 4] = np.nan
    U[11] = np.nan
    U = np.asarray(U, order=order)
    prev = rng.integers(0, 7, 500)
    got = estep.reduce_rows(U, prev)
    want = oracle.reduce_rows(U, prev)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0], np.argmin(U, axis=1))
    np.testing.assert_array_equal(got[1], want[1])
    assert got[1].dtype == np.float64 and got[0].dtype == np.int64
    assert got[2] == want[2] or (np.isnan(got[2]) and np.isnan(want[2]))
    assert estep.reduce_rows(U)[2] == 0.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("emission, normalizer", [("sqeuclidean", "constant"), ("sqeuclidean", "closed_form"),
                                                  ("cosine", "closed_form"), ("kl", "constant")])
def test_dense_sweep_equals_its_oracle(emission, normalizer, dtype):
    """The compiled dense sweep (a GEMM per sub-block) against a NumPy product and the
    same formula: the same labels, costs to round-off, clamped rows and mixing weights
    included; the fused statistics equal the kernels' own and the oracle's group sums."""
    from hmrf.em.passes_numba import SUB_BLOCK

    X, _ = _blobs(n=3 * SUB_BLOCK + 17, d=6, k=5, seed=4)
    X = (np.abs(X) + 0.1 if emission == "kl" else X).astype(dtype)
    model = HMRF(X, 5, emission=emission, normalizer=normalizer)
    family, n, k = model.emission, X.shape[0], 5
    params = family.init_params(model.X, model.X[[0, 100, 200, 300, 400]].astype(np.float64))
    if normalizer == "closed_form":
        params = family.update(family.statistics(model.X, np.arange(n) % k, k, normalizer), params, normalizer)
    params = params.replace(weights=np.array([0.1, 0.3, 0.2, 0.25, 0.15]))
    form = estep.linear_form(family, params, normalizer, dtype)
    assert form.weights.dtype == dtype
    rng = np.random.default_rng(1)
    clamped = np.where(rng.random(n) < 0.1, rng.integers(0, k, n), -1)
    previous, constrained = rng.integers(0, k, n), rng.random(n) < 0.2
    shift = X.mean(axis=0).astype(np.float64)
    sums, second = np.zeros((k, X.shape[1])), np.zeros(k)
    data = family.data_terms(model.X)
    got = estep.linear_block(model.X, form, None, data, clamped, previous, constrained, sums, second, shift)
    want = oracle.linear_block(model.X, form, data, clamped, previous, constrained)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], **tol)
    assert got[2] == pytest.approx(want[2], rel=tol["rtol"])
    np.testing.assert_allclose(got[3], want[3], **tol)
    np.testing.assert_array_equal(got[0][clamped >= 0], clamped[clamped >= 0])
    np.testing.assert_allclose(sums, oracle.group_sums(model.X, got[0], k), rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(sums, group_sums(model.X, got[0], k))
    Z = model.X.astype(np.float64) - shift
    np.testing.assert_allclose(second, np.bincount(got[0], weights=(Z * Z).sum(1), minlength=k), rtol=1e-10)
    U = block_unary(family, model.X, params, normalizer, data, clamped).astype(np.float64)  # the general path
    np.testing.assert_allclose(got[1], U[np.arange(n), got[0]], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_diagonal_second_moment_equals_its_oracle(dtype):
    """``Σ (x - c)∘(x - c)`` per cluster: the compiled accumulator and its NumPy oracle
    (centred copy, squares, group sums)."""
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(700, 9)) * 3 + 1).astype(dtype)
    labels = rng.integers(0, 5, 700)
    shift = X.mean(axis=0).astype(np.float64)
    compiled = ClusterStats.from_data(X, labels, 5, "diagonal", shift)
    np.testing.assert_allclose(compiled.second, oracle.centred_squares(X, shift, labels, 5), rtol=1e-12)
    expected = np.stack([((X[labels == h].astype(np.float64) - shift) ** 2).sum(axis=0) for h in range(5)])
    np.testing.assert_allclose(compiled.second, expected, rtol=1e-10)


def test_group_sums_equal_the_sparse_indicator_oracle():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 6))
    g = rng.integers(0, 300, 1000)
    expected = np.zeros((300, 6))
    np.add.at(expected, g, X)
    np.testing.assert_allclose(oracle.group_sums(X, g, 300), expected, atol=1e-12)
    np.testing.assert_array_equal(group_sums(X, g, 300), expected)  # row order, as np.add.at
    np.testing.assert_allclose(group_sums(X.astype(np.float32), g, 300), expected, atol=1e-4)
    S = sp.csr_matrix(np.where(rng.random(X.shape) < 0.5, X, 0.0))
    np.testing.assert_allclose(group_sums(S, g, 300), oracle.group_sums(S, g, 300), atol=1e-12)
    np.testing.assert_allclose(group_sums(S.tocsc(), g, 300), oracle.group_sums(S, g, 300), atol=1e-12)
    assert group_sums(np.asfortranarray(X), g, 300).dtype == np.float64


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
    # around any centres, not only the cluster means (a family may ask at other parameters)
    other = means + rng.normal(size=means.shape)
    for h in range(3):
        R = Xd[lab == h] - other[h]
        direct = {"norm": (R * R).sum(), "diagonal": (R * R).sum(0), "full": R.T @ R}[kind]
        np.testing.assert_allclose(whole.scatter(other)[h], direct, rtol=1e-9, atol=1e-9)
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
    full = run_em(model, p0, ICM(), rng=np.random.default_rng(0), tol=0.0, max_iter=30)
    monkeypatch.setattr(HMRF, "incremental_statistics", True)  # update from the moved points where few moved
    ref = run_em(model, p0, ICM(), rng=np.random.default_rng(0), tol=0.0, max_iter=30)
    monkeypatch.setattr(em, "MOVED_FRACTION", -1.0)  # accumulate from scratch every pass
    assert run_em(model, p0, ICM(), rng=np.random.default_rng(0), tol=0.0, max_iter=30).objective == \
        pytest.approx(full.objective, rel=1e-12)
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
    monkeypatch.setattr(blocks, "MAX_THREADS", 1)
    one = fit()
    monkeypatch.setattr(blocks, "MAX_THREADS", 4)
    monkeypatch.setattr(blocks, "MIN_THREADED_ENTRIES", 0)
    many = fit()
    np.testing.assert_array_equal(one.labels_, many.labels_)
    assert one.objective_ == many.objective_
    np.testing.assert_array_equal(one.history_, many.history_)


def test_row_block_reductions_on_the_pool_equal_one_thread_and_nest(monkeypatch):
    """The entrance's reductions over X (finiteness, scale, squared norms) run by row
    blocks on the pass's pool; they equal the single-threaded results, and a pool thread
    that asks for them runs the blocks itself instead of waiting on its own pool."""
    import hmrf._blocks as blocks
    from hmrf._validation import check_data
    from hmrf.emissions.base import check_squared_scale
    from hmrf.emissions.bregman import row_dot

    X = np.random.default_rng(0).normal(size=(3000, 7)).astype(np.float32)
    one = row_dot(X)
    monkeypatch.setattr(blocks, "MIN_THREADED_ENTRIES", 0)
    monkeypatch.setattr(blocks, "BLOCK_ELEMENTS", 256 * 7)
    np.testing.assert_array_equal(row_dot(X), one)
    for got in blocks.map_on_pool(lambda _: row_dot(X), range(4)):
        np.testing.assert_array_equal(got, one)
    bad = X.copy()
    bad[2500, 3] = np.nan
    with pytest.raises(ValueError, match="NaN at row 2500, column 3"):
        check_data(bad, keep_float32=True)
    with pytest.raises(ValueError, match=r"entries reach 1e\+20"):
        check_squared_scale(np.where(np.arange(3000)[:, None] == 2999, np.float32(-1e20), X), "squared Euclidean")
