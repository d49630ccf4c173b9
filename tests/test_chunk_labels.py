"""hmrf.distributed.ChunkLabels against the NumPy vector it stands for (Dask's
synchronous scheduler: the bookkeeping, not the cluster, is under test here)."""

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from hmrf.distributed import ChunkedData, ChunkLabels  # noqa: E402
from hmrf.distributed.data import label_dtype  # noqa: E402
from hmrf.emissions import get_emission  # noqa: E402

K = 4


def from_numpy(data, labels, n_clusters, nodes):
    """Labels held by the client (n,) as per-chunk tasks on the workers, knowing ``nodes``."""
    small = labels.astype(label_dtype(n_clusters))
    return ChunkLabels(data, data.send(data.pieces(small)), nodes, labels[nodes],
                       np.bincount(labels, minlength=n_clusters))


@pytest.fixture
def data():
    X = da.from_array(np.random.default_rng(0).normal(size=(50, 2)), chunks=((7, 20, 0, 23), 2))
    with dask.config.set(scheduler="synchronous"):
        yield ChunkedData(X, get_emission("sqeuclidean"), persist=True)


def test_reads_writes_and_counts_as_the_numpy_vector(data):
    with dask.config.set(scheduler="synchronous"):
        y = np.random.default_rng(1).integers(0, K, 50)
        lab = from_numpy(data, y, K, np.array([3, 10, 40]))
        np.testing.assert_array_equal(lab.compute(), y)
        np.testing.assert_array_equal(lab[np.array([40, 0, 26, 3])], y[[40, 0, 26, 3]])  # known and fetched
        rows, values = np.array([1, 8, 10, 27, 49]), np.array([3, 0, 2, 1, 0])
        new = lab.with_rows(rows, values)
        z = y.copy()
        z[rows] = values
        np.testing.assert_array_equal(new.compute(), z)
        np.testing.assert_array_equal(lab.compute(), y)  # unchanged
        np.testing.assert_array_equal(new.counts, np.bincount(z, minlength=K))
        assert new.n_used() == np.unique(z).size
        np.testing.assert_array_equal(new.moved_from(lab), np.flatnonzero(z != y))
        assert new.n_changed_from(lab) == np.count_nonzero(z != y)
        np.testing.assert_array_equal(new.to_dask().compute(), z)
        assert new.to_dask().chunks[0] == (7, 20, 0, 23)
        with pytest.raises(ValueError, match="stays on the workers"):
            np.asarray(new)


def test_constant_labels(data):
    with dask.config.set(scheduler="synchronous"):
        one = ChunkLabels.constant(data, 2, K)
        np.testing.assert_array_equal(one.compute(), np.full(50, 2))
        np.testing.assert_array_equal(one.counts, [0, 0, 50, 0])
