"""The sparse pass (hmrf.em.sparse, the CSR sweep of hmrf.em.passes_numba): its NumPy oracle,
the family's own costs, scikit-learn's sparse Lloyd iterations, thread counts and memory."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from oracles import passes_numpy as oracle

import hmrf._blocks as _blocks
import hmrf.em.passes as passes
import hmrf.em.sparse as sparse
from hmrf import HMRF, Constraints, HMRFKMeans, KMeans, SphericalKMeans
from hmrf.emissions import KL, EmissionParams, IDivergence, SquaredEuclidean, VonMisesFisher
from hmrf.emissions.stats import ClusterStats
from hmrf.model import block_unary

FAMILIES = {"sqeuclidean": SquaredEuclidean, "cosine": VonMisesFisher, "kl": KL, "idiv": IDivergence}


def _text(n=400, d=300, k=4, seed=0, density=None):
    """Count rows drawn from k word profiles (so that clusters exist), as CSR."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    profile = rng.random((k, d)) ** 8 * 3
    X = sp.csr_matrix(rng.poisson(profile[y]).astype(float))
    empty = np.flatnonzero(np.diff(X.indptr) == 0)
    X = sp.lil_matrix(X)
    X[empty, 0] = 1.0
    return sp.csr_matrix(X), y


def _params(family, X, k, normalizer, seed=0):
    rng = np.random.default_rng(seed)
    C = np.asarray(X[rng.choice(X.shape[0], k, replace=False)].todense()) + 0.05
    params = family.init_params(X, C)
    if normalizer == "closed_form":
        labels = rng.integers(0, k, X.shape[0])
        params = family.update(family.statistics(X, labels, k, normalizer), params, normalizer)
    return params


CASES = [(f, nz) for f in FAMILIES for nz in ("constant", "closed_form") if not (f in ("kl", "idiv") and
                                                                                 nz == "closed_form")]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,normalizer", CASES)
def test_compiled_sweep_equals_its_oracle(name, normalizer, dtype):
    """Labels, minimum costs, previous cost and constrained cost rows bit for bit, with
    clamped rows, previous labels and mixing weights; and the sums of the fused
    statistics equal those of the sparse-indicator product (the same additions in row
    order)."""
    family = FAMILIES[name]()
    X0, _ = _text()
    X = family.prepare(X0.astype(dtype))
    k, n = 5, X.shape[0]
    params = _params(family, X, k, normalizer)
    params = params.replace(weights=np.array([0.1, 0.3, 0.2, 0.25, 0.15]))
    form = passes.linear_form(family, params, normalizer, dtype)
    assert form.weights.dtype == dtype and form.weights.shape == (X.shape[1], k)
    rng = np.random.default_rng(1)
    data = family.data_terms(X)
    clamped = np.where(rng.random(n) < 0.1, rng.integers(0, k, n), -1)
    previous = rng.integers(0, k, n)
    constrained = rng.random(n) < 0.2
    sums, second = np.zeros((k, X.shape[1])), np.zeros(k)
    got = passes.linear_block(X, form, None, data, clamped, previous, constrained, sums, second)
    want = oracle.linear_block(X, form, data, clamped, previous, constrained)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert np.all(got[0][clamped >= 0] == clamped[clamped >= 0])
    np.testing.assert_array_equal(sums, oracle.group_sums(X, got[0], k))
    st = ClusterStats.from_data(X, got[0], k, "norm")
    np.testing.assert_array_equal(sums, st.sums)
    np.testing.assert_allclose(second, st.second, rtol=1e-6 if dtype == np.float32 else 1e-12)
    # and the costs are the family's own (the general path), to round-off
    U = block_unary(family, X, params, normalizer, data, clamped).astype(np.float64)
    np.testing.assert_allclose(got[1], U[np.arange(n), got[0]], rtol=1e-5 if dtype == np.float32 else 1e-10,
                               atol=1e-5 if dtype == np.float32 else 1e-10)
    np.testing.assert_allclose(got[3], U[constrained], rtol=1e-5 if dtype == np.float32 else 1e-10,
                               atol=1e-5 if dtype == np.float32 else 1e-10)
    assert np.all(U[np.arange(n), got[0]] <= U.min(axis=1) + (1e-4 if dtype == np.float32 else 1e-9))


@pytest.mark.parametrize("name,normalizer", CASES)
def test_sparse_pass_equals_the_family_costs(name, normalizer, monkeypatch):
    """The in-memory sparse pass in many blocks against the family's own costs
    (block_unary, argmin) and statistics, constrained points included."""
    X, y = _text(n=700)
    c = Constraints.sample_from_labels(y, 40, rng=0)
    model = HMRF(X, 4, emission=name, constraints=c, normalizer=normalizer)
    params = _params(model.emission, model.X, 4, normalizer)
    prev = np.random.default_rng(2).integers(0, 4, model.n_samples)
    nodes, _ = model.graph(params).constrained_part()
    monkeypatch.setattr(sparse, "BLOCK_NNZ", 500)  # many blocks
    step = passes.assignment_pass(model, params, previous=prev, constrained=nodes, accumulate=True,
                                  shift=model.statistics_shift)
    U = block_unary(model.emission, model.X, params, normalizer, model.data_terms).astype(np.float64)
    labels, mins, _ = oracle.reduce_rows(U)
    np.testing.assert_array_equal(step.labels, labels)
    np.testing.assert_allclose(step.costs(), mins, rtol=1e-12, atol=1e-12)
    assert step.previous_cost == pytest.approx(U[np.arange(U.shape[0]), prev].sum(), rel=1e-12)
    np.testing.assert_allclose(step.constrained_unary, U[nodes], rtol=1e-12, atol=1e-12)
    general = model.emission.statistics(model.X, labels, 4, normalizer, model.statistics_shift)
    np.testing.assert_array_equal(step.stats.counts, general.counts)
    np.testing.assert_allclose(step.stats.sums, general.sums, rtol=1e-12, atol=1e-12)
    if general.second is not None:
        np.testing.assert_allclose(step.stats.second, general.second, rtol=1e-12)


def test_statistics_by_cluster_part_do_not_depend_on_the_parts():
    X, _ = _text(n=900, d=200, seed=3)
    labels = np.random.default_rng(0).integers(0, 7, X.shape[0])
    one = sparse.cluster_sums_by_part(X, labels, 7, "norm", None, 1)
    for parts in (2, 3, 7):
        many = sparse.cluster_sums_by_part(X, labels, 7, "norm", _blocks.map_on_pool, parts)
        np.testing.assert_array_equal(many.sums, one.sums)
        np.testing.assert_array_equal(many.second, one.second)
    np.testing.assert_array_equal(one.sums, oracle.group_sums(X, labels, 7))
    np.testing.assert_array_equal(one.counts, np.bincount(labels, minlength=7))
    np.testing.assert_allclose(one.second, np.bincount(labels, weights=np.asarray(X.multiply(X).sum(1)).ravel(),
                                                       minlength=7), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_thread_count_changes_no_bit(name, monkeypatch):
    X, _ = _text(n=1500, d=400, seed=4)
    fits = []
    for threads in (1, 2, 5):
        monkeypatch.setattr(_blocks, "MAX_THREADS", threads)
        monkeypatch.setattr(_blocks, "MIN_THREADED_ENTRIES", 0)
        monkeypatch.setattr(sparse, "BLOCK_NNZ", 1000)
        monkeypatch.setattr(_blocks, "os", type("os", (), {"cpu_count": staticmethod(lambda t=threads: t)}))
        fits.append(KMeans(4, emission=name, random_state=0, max_iter=15, tol=0).fit(X))
    for f in fits[1:]:
        np.testing.assert_array_equal(f.labels_, fits[0].labels_)
        np.testing.assert_array_equal(f.cluster_centers_, fits[0].cluster_centers_)
        assert f.objective_ == fits[0].objective_


@pytest.mark.parametrize("threads", [1, 2])
def test_sparse_kmeans_equals_scikit_learn(threads, monkeypatch):
    """hmrf.KMeans on CSR rows and scikit-learn's sparse Lloyd KMeans from the same centres
    give the same labels after every number of iterations, at the same thread count."""
    from sklearn.cluster import KMeans as SkKMeans
    from sklearn.feature_extraction.text import TfidfTransformer
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(5)
    y = rng.integers(0, 6, 3000)
    profile = rng.random((6, 800)) ** 4 * 0.5  # ~70 distinct words a document, no duplicates
    X = TfidfTransformer().fit_transform(sp.csr_matrix(rng.poisson(profile[y]).astype(float))).tocsr()
    k = 12
    init = X[np.random.default_rng(0).choice(X.shape[0], k, replace=False)].toarray()
    monkeypatch.setattr(_blocks, "MAX_THREADS", threads)
    monkeypatch.setattr(_blocks, "MIN_THREADED_ENTRIES", 0)
    monkeypatch.setattr(sparse, "BLOCK_NNZ", 10_000)
    for it in (1, 3, 10, 30):  # converges (labels stop changing) after 17
        with threadpool_limits(threads):
            sk = SkKMeans(k, init=init, n_init=1, algorithm="lloyd", tol=0.0, max_iter=it).fit(X)
        ours = KMeans(k, init=init, tol=0.0, max_iter=it).fit(X)
        np.testing.assert_array_equal(ours.labels_, sk.labels_)
        assert ours.n_iter_ == sk.n_iter_
        np.testing.assert_allclose(ours.cluster_centers_, sk.cluster_centers_, rtol=1e-12, atol=1e-15)
        assert ours.objective_ == pytest.approx(sk.inertia_, rel=1e-10)


def test_float32_stays_float32():
    X, _ = _text(n=500)
    X32 = X.astype(np.float32)
    model = HMRF(X32, 3, emission="cosine")
    params = _params(model.emission, model.X, 3, "constant")
    form = passes.linear_form(model.emission, params, "constant", np.float32)
    assert form.weights.dtype == np.float32 and form.bias.dtype == np.float32
    step = passes.assignment_pass(model, params, accumulate=True)
    assert sp.issparse(model.X) and model.X.dtype == np.float32
    f32 = SphericalKMeans(3, random_state=0).fit(X32)
    f64 = SphericalKMeans(3, random_state=0).fit(X)
    np.testing.assert_array_equal(f32.labels_, f64.labels_)
    assert step.stats.sums.dtype == np.float64  # statistics are summed in float64


def test_sparse_stays_sparse():
    """A corpus whose dense form would take 16 GB: the pass's temporaries stay within a few
    (k x d) arrays (the centres and their sums) and a (rows x k) block."""
    rng = np.random.default_rng(0)
    n, d, k = 10_000, 200_000, 3
    nnz_per_row = 20
    indices = rng.integers(0, d, n * nnz_per_row)
    X = sp.csr_matrix((rng.random(n * nnz_per_row) + 0.1, indices, np.arange(0, n * nnz_per_row + 1,
                                                                             nnz_per_row)), shape=(n, d))
    X.sum_duplicates()
    model = HMRF(X, k, emission="cosine")
    params = model.emission.init_params(model.X, model.X[:k].toarray())
    passes.assignment_pass(model, params, accumulate=True)  # compile
    tracemalloc.start()
    step = passes.assignment_pass(model, params, previous=np.zeros(n, dtype=np.int64), accumulate=True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert step.labels.shape == (n,)
    assert peak < 10 * k * d * 8 + 100 * n * 8, peak


def test_zero_centre_entry_takes_the_general_path():
    """An I-divergence centre with a zero entry has infinite costs for the points with mass
    there: no linear form, and the pass still gives the general path's answer."""
    X, _ = _text(n=300, d=50)
    family = IDivergence(smoothing=0.0)
    model = HMRF(X, 3, emission=family)
    C = np.asarray(X[:3].todense()) + 0.0
    params = EmissionParams(C)
    assert family.linear_costs(params, "constant") is None
    step = passes.assignment_pass(model, params, accumulate=True)
    U = model.unary(params)
    np.testing.assert_array_equal(step.labels, np.argmin(U, axis=1))


def test_predict_on_sparse_rows_uses_the_sweep():
    X, _ = _text(n=600)
    est = HMRFKMeans(4, emission="kl", random_state=0).fit(X)
    new, _ = _text(n=50, seed=9)
    family = KL()
    U = family.unary(family.prepare(new), est.params_)
    np.testing.assert_array_equal(est.predict(new), np.argmin(U, axis=1))
