"""The model of a Dask fit built on its row backend (hmrf.distributed.DaskRows):
``HMRF(DaskRows(X), ...)`` is a DaskHMRF whose inherited methods give the in-memory
model's answers, or refuse with an error that names the method; on the session's
two-process ``LocalCluster`` (``dask_client``)."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

from hmrf import HMRF, Constraints, HMRFKMeans  # noqa: E402
from hmrf.distributed import DaskFit, DaskHMRF, DaskRows, GatheredRows, fit_dask  # noqa: E402

pytestmark = pytest.mark.usefixtures("dask_client")

ROW_CHUNKS = (40, 70, 50)
N, D, K = sum(ROW_CHUNKS), 3, 3


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    y = rng.integers(0, K, N)
    X = rng.normal(size=(N, D)) + 3.0 * rng.normal(size=(K, D))[y]
    c = Constraints.sample_from_labels(y, 40, rng=1)
    mem = HMRF(X, K, constraints=c, w="auto")
    dk = HMRF(DaskRows(da.from_array(X, chunks=(ROW_CHUNKS, D))), K, constraints=c, w="auto")
    params = mem.emission.init_params(X, X[[0, 1, 2]])
    return X, y, c, mem, dk, params


def test_hmrf_on_dask_rows_is_a_dask_model_with_hmrfs_own_attributes(problem):
    X, _, c, _, dk, _ = problem
    assert type(dk) is DaskHMRF and isinstance(dk.X, GatheredRows)
    assert dk.n_samples == N and dk.X.shape == (N, D)
    # HMRF's private attributes keep the values HMRF's constructor gave them
    assert dk._data_terms is None and dk._shift is None and dk._potts is dk.potentials[0]
    est = HMRFKMeans(K, emission="sqeuclidean")
    assert type(est._model(DaskRows(da.from_array(X, chunks=(ROW_CHUNKS, D))), c, None)) is DaskHMRF


def test_inherited_methods_give_the_in_memory_answers(problem):
    X, y, _, mem, dk, params = problem
    assert dk.w == pytest.approx(mem.w, rel=1e-12)  # "auto": data_scale by passes on the workers
    assert dk.data_scale() == pytest.approx(mem.data_scale(), rel=1e-12)
    assert dk.energy(y, params) == pytest.approx(mem.energy(y, params), rel=1e-12)
    np.testing.assert_allclose(dk.m_step(y, params).centers, mem.m_step(y, params).centers, rtol=1e-12)
    np.testing.assert_allclose(dk.unary(params, rows=slice(5, 60)), mem.unary(params, rows=slice(5, 60)))
    assert dk.graph(params).n_edges == mem.graph(params).n_edges
    assert dk.to_networkx().number_of_nodes() == mem.to_networkx().number_of_nodes()
    free = dk.without_potentials()
    assert type(free) is DaskHMRF and free.potentials == [] and free.data is dk.data


@pytest.mark.parametrize("call, name", [
    (lambda m, p, y: m.unary(p), "DaskHMRF.unary"),
    (lambda m, p, y: m.energy_terms(y, p), "DaskHMRF.energy_terms"),
    (lambda m, p, y: m.to_pgmpy(p), "DaskHMRF.to_pgmpy"),
])
def test_methods_that_would_gather_every_point_name_themselves(problem, call, name):
    _, y, _, _, dk, params = problem
    with pytest.raises(ValueError, match=name):
        call(dk, params, y)


class _OwnModel(HMRF):
    pass


class _OwnModelKMeans(HMRFKMeans):
    def _model(self, X, constraints, y, potentials=None):
        return _OwnModel(X, self.n_clusters, constraints=constraints)


def test_a_model_that_is_not_hmrf_is_refused_on_dask(problem):
    X, _, c, _, _, _ = problem
    with pytest.raises(TypeError, match="_model built a _OwnModel"):
        fit_dask(_OwnModelKMeans(K), da.from_array(X, chunks=(ROW_CHUNKS, D)), constraints=c)
    assert isinstance(DaskFit().model(HMRFKMeans(K, emission="sqeuclidean")._model, da.from_array(X, chunks=(ROW_CHUNKS, D)),
                                      c, None, None), DaskHMRF)
