"""HMRF EM on Dask arrays (hmrf.distributed) against the in-memory path, on a real
``dask.distributed`` cluster of two worker processes (the ``dask_client`` fixture).

For the same seed a Dask array must give what the NumPy array gives: identical labels,
the objective to 1e-9 relative, the same number of iterations. The out-of-core test
writes a Zarr store several times larger than a worker's memory limit and checks the
fit against the true classes, with no worker restarted.
"""

import os

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("distributed")

from hmrf import (  # noqa: E402
    ConstrainedKMeans,
    Constraints,
    COPKMeans,
    HMRFKMeans,
    MKMeans,
    MPCKMeans,
    PCKMeans,
    SeededKMeans,
    SphericalKMeans,
)
from hmrf.emissions import Mahalanobis  # noqa: E402
from hmrf.inference import BeliefPropagation  # noqa: E402
from hmrf.metrics import nmi  # noqa: E402

pytestmark = pytest.mark.usefixtures("dask_client", "few_auto_runs")

#: Runs of ``n_init="auto"`` here (fixture ``few_auto_runs``, ``tests/conftest.py``): one
#: of each kind of start, so that the Dask path is compared with the in-memory path run
#: by run over both kinds and the random stream they share, while every run costs a Dask
#: round trip per EM iteration.
AUTO_RUNS = 2

ROW_CHUNKS = (130, 250, 70, 150)  # uneven, so block and chunk boundaries differ
N, D, K = sum(ROW_CHUNKS), 6, 3


def _blobs(seed=0, spread=2.5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, N)
    X = rng.normal(size=(N, D)) + rng.normal(size=(K, D))[y] * spread
    return X, y


def _counts(seed=0):
    """Word-count-like rows (positive, so KL applies), classes by their word profile."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, N)
    profile = rng.random((K, D)) ** 3 + 0.05
    return rng.poisson(profile[y] * 8).astype(float) + 0.5, y


def _sparse_text(seed=0, d=40):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, N)
    profile = rng.random((K, d)) ** 6
    X = sp.csr_matrix(rng.poisson(profile[y] * 4).astype(float))
    X[np.flatnonzero(np.asarray(X.sum(axis=1)).ravel() == 0), 0] = 1.0  # no empty document
    return sp.csr_matrix(X), y


def _chunked(X):
    if sp.issparse(X):
        return da.from_array(X, chunks=(ROW_CHUNKS, -1), asarray=False)
    return da.from_array(X, chunks=(ROW_CHUNKS, -1))


def _same_fit(numpy_est, dask_est, rtol=1e-9):
    labels = dask_est.labels_
    assert isinstance(labels, da.Array) and labels.chunks[0] == ROW_CHUNKS
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels.compute(), numpy_est.labels_)
    assert dask_est.n_iter_ == numpy_est.n_iter_
    assert dask_est.objective_ == pytest.approx(numpy_est.objective_, rel=rtol)
    np.testing.assert_allclose(dask_est.history_, numpy_est.history_, rtol=rtol)
    np.testing.assert_allclose(dask_est.cluster_centers_, numpy_est.cluster_centers_, rtol=1e-7, atol=1e-12)


def _constraints(y, n_pairs=60, seed=1):
    return Constraints.sample_from_labels(y, n_pairs=n_pairs, rng=seed)


CASES = {
    "hmrf-sqeuclidean": (lambda inf: HMRFKMeans(K, inference=inf, random_state=0), _blobs),
    "hmrf-kl": (lambda inf: HMRFKMeans(K, emission="kl", inference=inf, random_state=0), _counts),
    "pckmeans": (lambda inf: PCKMeans(K, inference=inf, random_state=0), _blobs),
    "mpckmeans-diagonal": (lambda inf: MPCKMeans(K, emission="mahalanobis", inference=inf, random_state=0), _blobs),
    "spherical-sparse": (lambda inf: (SphericalKMeans if inf == "icm" else _SphericalBP)(K, random_state=0),
                         _sparse_text),
    # the compiled sparse sweep per chunk, for every family it serves
    "hmrf-sqeuclidean-sparse": (lambda inf: HMRFKMeans(K, inference=inf, random_state=0), _sparse_text),
    "hmrf-kl-sparse": (lambda inf: HMRFKMeans(K, emission="kl", inference=inf, random_state=0), _sparse_text),
    "hmrf-idiv-sparse": (lambda inf: HMRFKMeans(K, emission="idiv", inference=inf, random_state=0),
                         _sparse_text),
}


class _SphericalBP(SphericalKMeans):
    """SphericalKMeans has no ``inference`` parameter; this one runs belief propagation."""

    _fixed = dict(SphericalKMeans._fixed, inference="bp")


#: Engine and constraints: without constraints no engine runs (every E-step is the
#: argmin of the unary costs), so one engine covers that path.
SETTINGS = [pytest.param("icm", True, id="icm-constraints"), pytest.param("bp", True, id="bp-constraints"),
            pytest.param("icm", False, id="no-constraints")]


@pytest.mark.parametrize("inference, constrained", SETTINGS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_dask_array_fit_equals_numpy_fit(case, inference, constrained):
    make, data = CASES[case]
    X, y = data()
    kw = dict(constraints=_constraints(y)) if constrained else {}
    expected = make(inference).fit(X, **kw)
    got = make(inference).fit(_chunked(X), **kw)
    _same_fit(expected, got)
    assert got.n_runs_ == expected.n_runs_
    if case == "mpckmeans-diagonal":
        np.testing.assert_allclose(got.metric_, expected.metric_, rtol=1e-7)


def test_auto_makes_as_many_runs_on_dask_as_in_memory(monkeypatch):
    """The number of runs of ``n_init="auto"`` (uncapped here) is the in-memory one, dense
    and sparse: the equality tests above compare the paths at a capped count."""
    from hmrf import HMRF
    from hmrf.distributed import DaskHMRF
    from hmrf.estimators.base import auto_n_init

    monkeypatch.undo()  # the module's cap (fixture few_auto_runs)
    for data in (_blobs, _sparse_text):
        X, _ = data()
        assert auto_n_init(DaskHMRF(_chunked(X), K)) == auto_n_init(HMRF(X, K)), data.__name__


@pytest.mark.parametrize("estimator", [
    SeededKMeans(K, random_state=0), ConstrainedKMeans(K, random_state=0), COPKMeans(K, random_state=0),
    MKMeans(K, random_state=0),
    HMRFKMeans(K, em="soft", inference=BeliefPropagation(mode="sum"), random_state=0),
    HMRFKMeans(K, em="soft", normalizer="closed_form", random_state=0),
    HMRFKMeans(K, init="k-means++", inference="bp", random_state=0),
    MPCKMeans(K, emission=Mahalanobis("full"), random_state=0),
    HMRFKMeans(K, emission="itakura_saito", random_state=0),
], ids=["seeded", "constrained", "cop", "mkmeans", "soft-bp", "soft-closed-form", "kmeans++", "mpck-full",
        "itakura-saito"])
def test_every_estimator_takes_a_dask_array(estimator):
    X, y = _blobs(seed=3)
    X = np.abs(X) + 0.1  # positive, for Itakura-Saito
    if isinstance(estimator, SeededKMeans):
        args, kw = (np.where(np.arange(N) % 7 == 0, y, -1),), {}
    else:
        args, kw = (), dict(constraints=_constraints(y, n_pairs=40, seed=2))
    expected = estimator.fit(X, *args, **kw)
    expected_labels, expected_objective = expected.labels_.copy(), expected.objective_
    got = type(estimator)(**estimator.get_params()).fit(_chunked(X), *args, **kw)
    np.testing.assert_array_equal(got.labels_.compute(), expected_labels)
    assert got.objective_ == pytest.approx(expected_objective, rel=1e-9)


@pytest.mark.parametrize("emission", ["sqeuclidean", "cosine", "kl", "idiv"])
def test_sparse_chunk_runs_the_in_memory_sweep(emission):
    """A CSR chunk's task is the in-memory pass's compiled sweep over the same rows: the
    same labels, costs and statistics (run here in the client's process)."""
    from hmrf import HMRF
    from hmrf.distributed.passes import chunk_assignment
    from hmrf.em.passes import assignment_pass, pass_width

    X, y = _sparse_text(seed=7)
    model = HMRF(X, K, emission=emission)
    family = model.emission
    assert pass_width(family, model.X, K) == K  # one block per chunk, no (rows x d) block
    params = family.init_params(model.X, np.asarray(model.X[[0, 1, 2]].todense()))
    prev = np.random.default_rng(0).integers(0, K, N)
    local = np.flatnonzero(np.random.default_rng(1).random(N) < 0.1)
    (labels, cost, previous, rows), stats = chunk_assignment(
        family, model.X, model.data_terms, params, model.normalizer, K, None, prev, local, True, None,
        return_costs=True)
    step = assignment_pass(model, params, previous=prev, constrained=local, accumulate=True)
    np.testing.assert_array_equal(labels, step.labels)
    np.testing.assert_array_equal(cost, step.costs())
    np.testing.assert_array_equal(rows, step.constrained_unary)
    assert previous == pytest.approx(step.previous_cost, rel=1e-14)
    np.testing.assert_array_equal(stats.sums, step.stats.sums)
    np.testing.assert_array_equal(stats.counts, step.stats.counts)


def test_statistics_added_up_by_a_tree_on_the_workers(monkeypatch):
    """Large statistics (a full metric's) are tree-reduced on the workers instead of
    gathered per chunk: the same fit either way."""
    import hmrf.distributed.passes as passes

    X, y = _blobs(seed=8)
    c = _constraints(y)
    gathered = MPCKMeans(K, emission=Mahalanobis("full"), random_state=0).fit(_chunked(X), constraints=c)
    monkeypatch.setattr(passes, "TREE_ABOVE", 0)
    tree = MPCKMeans(K, emission=Mahalanobis("full"), random_state=0).fit(_chunked(X), constraints=c)
    np.testing.assert_array_equal(tree.labels_.compute(), gathered.labels_.compute())
    assert tree.objective_ == pytest.approx(gathered.objective_, rel=1e-12)


def test_float32_stays_float32_and_predict_is_lazy():
    X, y = _blobs(seed=4)
    X32 = X.astype(np.float32)
    c = _constraints(y)
    expected = HMRFKMeans(K, random_state=0).fit(X32, constraints=c)
    got = HMRFKMeans(K, random_state=0).fit(_chunked(X32), constraints=c)
    _same_fit(expected, got)
    assert got.cluster_centers_.dtype == np.float32
    new = np.random.default_rng(9).normal(size=(333, D)) * 3
    pred = got.predict(da.from_array(new, chunks=100))
    assert isinstance(pred, da.Array) and pred.chunks[0] == (100, 100, 100, 33)
    np.testing.assert_array_equal(pred.compute(), expected.predict(new))


def test_same_result_on_any_number_of_workers():
    """Two worker processes, and Dask's single-threaded scheduler in this process: the
    additions follow the chunks, so the results are the same to the last bit."""
    X, y = _blobs(seed=5)
    c = _constraints(y)
    two = HMRFKMeans(K, inference="bp", random_state=0).fit(_chunked(X), constraints=c)
    with dask.config.set(scheduler="synchronous"):
        one = HMRFKMeans(K, inference="bp", random_state=0).fit(_chunked(X), constraints=c)
        one_labels = one.labels_.compute()
    np.testing.assert_array_equal(two.labels_.compute(), one_labels)
    assert two.objective_ == one.objective_
    np.testing.assert_array_equal(two.cluster_centers_, one.cluster_centers_)


def test_only_constrained_rows_reach_the_client():
    """Run the pipeline of ``fit`` step by step: the rows on the client are those of the
    constrained points (MPCKMeans reads their differences), and no other."""
    from hmrf.distributed import DaskRows, dask_assignment_pass
    from hmrf.em import run_em
    from hmrf.inference import BeliefPropagation

    X, y = _blobs(seed=6)
    # the paper's seeding reads the constrained rows only (k-means++ would also read a few
    # candidate rows by index)
    est = MPCKMeans(K, init="pckmeans", random_state=0)
    c = est._supervision(N, None, None, None, _constraints(y))
    model = est._model(DaskRows(_chunked(X)), c, None)
    assert model.X.n_gathered == 0
    rng = np.random.default_rng(0)
    res = run_em(model, est._initial_params(model, c, None, rng), BeliefPropagation(), rng=rng,
                 data_pass=dask_assignment_pass)
    assert model.X.n_gathered == c.constrained_points.size
    assert res.objective == pytest.approx(MPCKMeans(K, init="pckmeans", n_init=1, random_state=0).fit(
        X, constraints=_constraints(y)).objective_)
    with pytest.raises(ValueError, match="never gathers"):
        np.asarray(model.X)
    with pytest.raises(ValueError, match="never gathers"):
        model.X[0:10]
    with pytest.raises(ValueError, match="slice of rows only"):
        model.unary(res.params)


def test_numpy_fits_never_import_dask():
    """``import hmrf`` and a NumPy fit do not load Dask (the estimators tell a Dask array
    by its type's module)."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, hmrf; hmrf.HMRFKMeans(2, random_state=0).fit(np.eye(4)); "
            "print([m for m in ('dask', 'distributed') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.parametrize("emission, transformed", [("kl", True), ("sqeuclidean", False)])
@pytest.mark.parametrize("persist", [True, False])
def test_chunks_read_again_by_every_pass_give_the_same_fit(persist, emission, transformed):
    """Out of core (``persist=False``: every pass reads the chunks again) and in the
    workers' memory: the same fit; ``hmrf.persist`` in the Dask configuration chooses for
    the estimators. Chunks read again are converted only, and prepared again only by a
    family whose ``prepare`` changed them (KL normalises rows); the data terms of a
    Bregman family stay on the workers either way."""
    from hmrf.distributed import DaskHMRF
    from hmrf.distributed.data import load_chunk

    X, y = _counts(seed=9)
    c = _constraints(y)
    model = DaskHMRF(_chunked(X), K, emission=emission, constraints=c, persist=persist)
    assert model.data.persisted is persist
    assert model.data.data_terms is not None
    if not persist:
        tasks = [dict(chunk.dask)[chunk.key] for chunk in model.data.chunks]
        assert all(t.func is load_chunk and t.args[-1] is transformed for t in tasks)
    expected = HMRFKMeans(K, emission=emission, random_state=0).fit(X, constraints=c)
    with dask.config.set({"hmrf.persist": persist}):
        got = HMRFKMeans(K, emission=emission, random_state=0).fit(_chunked(X), constraints=c)
    _same_fit(expected, got)


def _logged_reads(X, log):
    """``X`` chunked by ``ROW_CHUNKS``, each read of a chunk by a worker logged as a line
    (the chunk's number) appended to the file ``log``."""
    def read(block, block_info=None):
        with open(log, "a") as out:  # one short append a read: whole lines from both workers
            out.write(f"{block_info[0]['chunk-location'][0]}\n")
        return block

    return _chunked(X).map_blocks(read, dtype=X.dtype)


@pytest.mark.parametrize("path", ["client", "workers", "soft"])
def test_an_em_iteration_reads_each_chunk_once(path, tmp_path):
    """Out of core (``persist=False``), every EM iteration reads each chunk once, in its
    pass, and nothing else reads the chunks: the statistics of the constrained points
    whose labels the E-step changes from the pass's argmin (or, soft EM, of their
    posteriors) come from their rows, which the first pass sent with its results
    (``client``) or which each pass keeps on the workers for the constrained part solved
    there (``workers``), not from the chunks read again. Same labels as in memory."""
    from hmrf import HMRF
    from hmrf.distributed import DaskHMRF, dask_assignment_pass, dask_soft_pass
    from hmrf.em import run_em, run_soft_em
    from hmrf.em.loop import solve_e_step
    from hmrf.inference import ICM

    X, y = _blobs(seed=3, spread=1.0)  # overlapping classes, constraints from the classes
    c = _constraints(y, n_pairs=150, seed=2)
    log = tmp_path / "reads"
    model = DaskHMRF(_logged_reads(X, log), K, constraints=c, persist=False)
    if path == "workers":
        model.component_tasks_above = 1
    centres = X[[0, 1, 2]]
    params = model.emission.init_params(model.X, centres)
    # the first E-step moves constrained points away from their argmin labels
    mem = HMRF(X, K, constraints=c)
    nodes, sub = mem.graph(params).constrained_part()
    unary = mem.unary(params)[nodes]
    icm = solve_e_step(ICM(), unary, sub, None, np.random.default_rng(0))
    assert np.any(icm.labels != unary.argmin(axis=1))

    def lines():
        return log.read_text().split() if log.exists() else []

    starts = []  # reads before each pass

    def counted(data_pass):
        def run(*args, **kwargs):
            starts.append(len(lines()))
            return data_pass(*args, **kwargs)
        return run

    assert sorted(map(int, lines())) == list(range(len(ROW_CHUNKS)))  # the summary pass
    if path == "soft":
        got = run_soft_em(model, params, max_iter=4, tol=0, rng=np.random.default_rng(0),
                          data_pass=counted(dask_soft_pass))
        expected = run_soft_em(mem, params, max_iter=4, tol=0, rng=np.random.default_rng(0))
    else:
        got = run_em(model, params, ICM(), max_iter=4, tol=0, rng=np.random.default_rng(0),
                     data_pass=counted(dask_assignment_pass))
        expected = run_em(mem, params, ICM(), max_iter=4, tol=0, rng=np.random.default_rng(0))
    reads = lines()
    assert len(starts) >= 3
    for a, b in zip(starts, [*starts[1:], len(reads)]):  # a pass and what follows it, to the next
        assert sorted(map(int, reads[a:b])) == list(range(len(ROW_CHUNKS)))
    np.testing.assert_array_equal(got.labels.compute(), expected.labels)


def test_energy_and_statistics_of_the_dask_model_match_memory():
    from hmrf import HMRF
    from hmrf.distributed import DaskHMRF

    X, y = _blobs(seed=7)
    c = _constraints(y)
    params = HMRFKMeans(K, random_state=0).fit(X, constraints=c).params_
    labels = np.random.default_rng(0).integers(0, K, N)
    mem, dist = HMRF(X, K, constraints=c), DaskHMRF(_chunked(X), K, constraints=c)
    assert dist.energy(labels, params) == pytest.approx(mem.energy(labels, params), rel=1e-12)
    np.testing.assert_allclose(dist.statistics(labels).sums, mem.statistics(labels).sums, rtol=1e-12)
    np.testing.assert_allclose(dist.unary(params, rows=slice(140, 141)), mem.unary(params, rows=slice(140, 141)))


@pytest.mark.parametrize("persist", [True, False])
@pytest.mark.parametrize("row, col", [(3, 0), (230, 1)])
def test_nan_names_its_row_of_the_whole_array(row, col, persist):
    X, _ = _blobs()
    X[row, col] = np.nan
    with dask.config.set({"hmrf.persist": persist}), \
            pytest.raises(ValueError, match=rf"NaN at row {row}, column {col}\."):
        HMRFKMeans(K).fit(da.from_array(X, chunks=100))


def test_domain_errors_name_the_row_of_the_whole_array():
    X, _ = _counts()
    X[321, 4] = -2.0
    with pytest.raises(ValueError, match=r"X\[321, 4\] = -2.0"):
        HMRFKMeans(K, emission="kl").fit(da.from_array(X, chunks=100))
    Z, _ = _blobs()
    Z[205] = 0.0
    with pytest.raises(ValueError, match="row 205 of X is all zeros"):
        SphericalKMeans(K).fit(da.from_array(Z, chunks=100))


def test_shape_and_structure_errors():
    X, _ = _blobs()
    with pytest.raises(ValueError, match="must be 2-D"):
        HMRFKMeans(K).fit(da.from_array(X[:, 0], chunks=100))
    Xd = da.from_array(X, chunks=100)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        HMRFKMeans(K).fit(Xd[Xd[:, 0] > 0])
    with pytest.raises(TypeError, match="needs dense data"):
        HMRFKMeans(K, emission="itakura_saito").fit(
            da.from_array(sp.csr_matrix(np.abs(X) + 1), chunks=(100, -1), asarray=False))
    with pytest.raises(ValueError, match="alpha_max"):
        MPCKMeans(K, penalty="mirrored").fit(Xd, cannot_link=[(0, 1)])
    with pytest.raises(ValueError, match="larger than the number of samples"):
        HMRFKMeans(N + 1).fit(Xd)


# ------------------------------------------------------------------ out of core
_OOC_K, _OOC_D, _OOC_SEED = 4, 32, 11


def _ooc_block(block, block_id=None):
    """Rows of four separated classes (uniform noise around class corners), one
    deterministic generator per block."""
    rng = np.random.default_rng([_OOC_SEED, block_id[0]])
    corners = np.random.default_rng(_OOC_SEED).random((_OOC_K, _OOC_D), dtype=np.float32) * 4
    y = rng.integers(0, _OOC_K, block.shape[0])
    X = rng.random(block.shape, dtype=np.float32)
    X += corners[y]
    return X


def _ooc_classes(block, block_id=None):
    """The classes of :func:`_ooc_block`'s rows (its generator's first draw)."""
    return np.random.default_rng([_OOC_SEED, block_id[0]]).integers(0, _OOC_K, block.shape[0])


def test_out_of_core_fit_from_a_zarr_store(dask_client, tmp_path):
    zarr = pytest.importorskip("zarr")
    limits = [w["memory_limit"] for w in dask_client.scheduler_info()["workers"].values()]
    n = int(1.1 * sum(limits) / (_OOC_D * 4)) + 1  # data: more than the whole cluster's memory
    rows = 100_000
    shape = da.zeros((n, _OOC_D), chunks=(rows, _OOC_D), dtype=np.float32)
    no_compression = {"compressors": None} if int(zarr.__version__.split(".")[0]) >= 3 else {"compressor": None}
    da.to_zarr(shape.map_blocks(_ooc_block, dtype=np.float32), str(tmp_path / "X.zarr"), **no_compression)
    y = np.concatenate([_ooc_classes(np.empty(b), block_id=(i,)) for i, b in enumerate(shape.chunks[0])])
    X = da.from_zarr(str(tmp_path / "X.zarr"))
    assert X.nbytes > sum(limits)
    pids = dask_client.run(os.getpid)
    c = Constraints.sample_from_labels(y, n_pairs=2000, rng=0)
    est = HMRFKMeans(_OOC_K, random_state=0, max_iter=4).fit(X, constraints=c)
    assert dask_client.run(os.getpid) == pids  # no worker was restarted (for memory or else)
    assert nmi(y, est.labels_.compute()) > 0.99
    assert est.labels_.shape == (n,) and est.labels_.chunks[0] == X.chunks[0]


def test_empty_cluster_is_reseeded_the_same_way_on_dask():
    """A centre nobody is closest to: the pass's row costs are fetched from the workers
    only then, and the re-seeded fit equals the in-memory one."""
    X, y = _blobs(seed=5)
    init = np.vstack([X[[0, 1, 2]], np.full((1, D), 1e3)])  # the 4th centre attracts nobody
    mem = HMRFKMeans(4, init=init, random_state=0).fit(X, constraints=_constraints(y))
    assert any(t["reseeded"] for t in mem.em_result_.trace)
    _same_fit(mem, HMRFKMeans(4, init=init, random_state=0).fit(_chunked(X), constraints=_constraints(y)))


class _OwnInit(HMRFKMeans):
    """A user's estimator with its own initialisation: the centres are the rows of the
    first point of each true class, read by index from ``model.X`` (whatever backend holds
    the rows), and every call is recorded with the model it ran on."""

    calls: list = []
    firsts: tuple = ()

    def _initial_params(self, model, constraints, y, rng):
        type(self).calls.append(type(model).__name__)
        centers = np.asarray(model.X[list(self.firsts)], dtype=np.float64)
        return model.emission.init_params(model.X, centers)


class _OwnInitHook(HMRFKMeans):
    """A user's estimator that changes the initialisation by the ``_spec_init`` hook."""

    def _spec_init(self):
        return "k-means++"


def test_a_subclass_initialisation_runs_its_own_code_on_dask():
    """One pipeline: a subclass's ``_initial_params`` (and an ``init`` given by a hook) run
    as written on a Dask array on the cluster, and give the in-memory fit."""
    X, y = _blobs(seed=8)
    c = _constraints(y, n_pairs=30, seed=4)
    _OwnInit.firsts = tuple(int(np.flatnonzero(y == h)[0]) for h in range(K))
    _OwnInit.calls = []
    mem = _OwnInit(K, n_init=1, max_iter=1, random_state=0).fit(X, constraints=c)
    got = _OwnInit(K, n_init=1, max_iter=1, random_state=0).fit(_chunked(X), constraints=c)
    assert _OwnInit.calls == ["HMRF", "DaskHMRF"]
    _same_fit(mem, got)
    # its own centres: one EM iteration from the class's first rows is not the default's
    default = HMRFKMeans(K, n_init=1, max_iter=1, random_state=0).fit(X, constraints=c)
    assert not np.allclose(default.em_result_.history, mem.em_result_.history)

    hooked = _OwnInitHook(K, n_init=2, random_state=0)
    _same_fit(hooked.fit(X, constraints=c),
              _OwnInitHook(K, n_init=2, random_state=0).fit(_chunked(X), constraints=c))
    kpp = HMRFKMeans(K, init="k-means++", n_init=2, random_state=0).fit(X, constraints=c)
    np.testing.assert_array_equal(hooked.labels_, kpp.labels_)


def test_kmeanspp_draws_on_the_workers_the_rows_memory_draws():
    """k-means++ on the chunks: the client receives one sum a chunk and draws a chunk, then
    a row inside it on the worker, from the uniform numbers the in-memory draw uses; the
    rows drawn, the candidates' potentials and the update equal the in-memory ones."""
    from hmrf.backend import InMemoryRows
    from hmrf.distributed import ChunkedData, GatheredRows
    from hmrf.emissions import get_emission

    X, _ = _blobs(seed=9)
    fam = get_emission("sqeuclidean")
    rows = GatheredRows(ChunkedData(_chunked(X), fam))
    mem, dsk = InMemoryRows(X).min_divergence(fam, X[[3, 200]]), rows.min_divergence(fam, X[[3, 200]])
    assert dsk.sums.shape == (len(ROW_CHUNKS),)
    assert dsk.sums.sum() == pytest.approx(mem.closest.sum(), rel=1e-12)
    cand = X[[5, 300, 420]]
    np.testing.assert_allclose(dsk.potentials(cand), mem.potentials(cand), rtol=1e-12)
    for t in (1, 2):
        mem_t, dsk_t = mem.with_centre(cand, t), dsk.with_centre(cand, t)
        for seed in range(10):
            got, expected = (d.draw(9, np.random.default_rng(seed)) for d in (dsk_t, mem_t))
            np.testing.assert_array_equal(got, expected)
            # a row drawn lies in the chunk whose share of the total holds the number drawn
            assert np.all(mem_t.closest[got] > 0)
    # every row on the centre: the total is 0 and both draw uniformly from the same stream
    ones = np.ones((N, D))
    zero_d = GatheredRows(ChunkedData(_chunked(ones), fam)).min_divergence(fam, ones[:1])
    zero_m = InMemoryRows(ones).min_divergence(fam, ones[:1])
    assert not zero_d.sums.any()
    np.testing.assert_array_equal(zero_d.draw(5, np.random.default_rng(1)), zero_m.draw(5, np.random.default_rng(1)))
