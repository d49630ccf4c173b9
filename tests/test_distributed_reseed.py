"""Re-seeding an empty cluster of a Dask fit by reductions on the workers
(hmrf.distributed.reseed) against the in-memory choice, on the session's two-process
``LocalCluster`` (``dask_client``): the labels of every point are never gathered."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

from hmrf import Constraints, HMRFKMeans  # noqa: E402
from hmrf.distributed import fit_dask  # noqa: E402
from hmrf.distributed.labels import ChunkLabels  # noqa: E402

pytestmark = pytest.mark.usefixtures("dask_client")

ROW_CHUNKS = (130, 250, 70, 150)
N, D = sum(ROW_CHUNKS), 3


def _blobs(seed, k=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, N)
    return rng.normal(size=(N, D)) + rng.normal(size=(k, D))[y] * 3.0, y


def _same(mem, dk):
    np.testing.assert_array_equal(np.asarray(dk.labels_.compute()), mem.labels_)
    assert dk.objective_ == pytest.approx(mem.objective_, rel=1e-9)
    np.testing.assert_allclose(dk.cluster_centers_, mem.cluster_centers_, rtol=1e-9, atol=1e-12)
    assert [t["reseeded"] for t in dk.em_result_.trace] == [t["reseeded"] for t in mem.em_result_.trace]


def _fit(X, init, c, above=None, **kw):
    est = HMRFKMeans(init.shape[0], init=init, n_init=1, random_state=0, **kw)
    with pytest.MonkeyPatch.context() as mp:
        def refuse(self):
            raise AssertionError("every label gathered to the client")
        mp.setattr(ChunkLabels, "compute", refuse)
        fit_dask(est, da.from_array(X, chunks=(ROW_CHUNKS, D)), constraints=c, component_tasks_above=above)
    return est


@pytest.mark.parametrize("above", [None, 10], ids=["client-engine", "component-tasks"])
def test_two_forced_empty_clusters_take_the_in_memory_points(above):
    X, y = _blobs(3)
    init = np.vstack([X[[0, 1, 2]], np.full((2, D), 1e3), np.full((1, D), -1e3)])  # three far centres
    rng = np.random.default_rng(4)
    pairs = rng.integers(0, N, size=(80, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    c = Constraints.from_pairs(must_link=pairs[same], cannot_link=pairs[~same], n=N)
    mem = HMRFKMeans(6, init=init, n_init=1, random_state=0).fit(X, constraints=c)
    assert sum(t["reseeded"] for t in mem.em_result_.trace) >= 2
    _same(mem, _fit(X, init, c, above))


@pytest.mark.parametrize("above", [None, 10], ids=["client-engine", "component-tasks"])
def test_every_point_constrained_reseeds_as_in_memory(above):
    """A must-link chain through every point: each move raises the pairwise energy, so the
    rule weighs the cost of the point in the cluster fitted to it alone."""
    X, y = _blobs(6, k=2)
    order = np.argsort(X[:, 0], kind="stable")
    c = Constraints.from_pairs(must_link=np.column_stack([order[:-1], order[1:]]), n=N, weight=0.05)
    init = np.vstack([X[order[[10, -10]]], np.full((1, D), 1e3)])
    mem = HMRFKMeans(3, init=init, n_init=1, random_state=0, w=0.05).fit(X, constraints=c)
    assert any(t["reseeded"] for t in mem.em_result_.trace)
    _same(mem, _fit(X, init, c, above, w=0.05))
