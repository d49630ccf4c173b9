"""The client's memory during a Dask fit does not grow with n (hmrf.distributed).

Per iteration the client receives the constrained points' cost rows and labels, the
cluster sizes, the statistics and the objective; every point's label stays on the worker
that holds its chunk (:class:`hmrf.distributed.ChunkLabels`). Measured with
``tracemalloc`` in the client on a real ``LocalCluster`` (the ``dask_client`` fixture),
data made on the workers: the same constraints and chunk count at two sizes of n.
"""

import tracemalloc

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

from hmrf import Constraints, HMRFKMeans  # noqa: E402
from hmrf.distributed import ChunkLabels  # noqa: E402

K, D, CHUNKS = 3, 5, 4
CENTERS = np.array([[0.0] * D, [3.0] * D, [-3.0] * D])


def _rows(block, block_id=None):
    """Rows around the three centres, made on the worker from the chunk's own seed."""
    rng = np.random.default_rng([7, block_id[0]])
    return rng.normal(size=block.shape) + CENTERS[rng.integers(0, K, block.shape[0])]


def _data(n):
    return da.zeros((n, D), chunks=(n // CHUNKS, D)).map_blocks(_rows, dtype=np.float64)


def _constraints(n):
    """The same 300 pairs among the first 2,000 points, labelled by distance."""
    rng = np.random.default_rng(3)
    pairs = rng.integers(0, 2000, size=(300, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    must = rng.random(pairs.shape[0]) < 0.5
    ml, cl = pairs[must], pairs[~must]
    return Constraints.from_pairs(must_link=ml.tolist(), cannot_link=cl[:50].tolist(), n=n,
                                  conflicts="drop")


def _client_peak(n, init=CENTERS):
    X, c = _data(n).persist(), _constraints(n)
    est = HMRFKMeans(K, init=init, n_init=1, max_iter=4, tol=0.0, random_state=0)
    tracemalloc.start()
    try:
        est.fit(X, constraints=c)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(est.em_result_.labels, ChunkLabels)  # no client copy of the labels
    assert est.labels_.shape == (n,)
    return peak, est


@pytest.mark.parametrize("init", ["centres", "pckmeans++", "k-means++"])
def test_client_memory_does_not_grow_with_n(dask_client, init):
    """With given centres (EM alone) and with the seedings that draw k-means++ candidates
    from every row's divergence (drawn on the workers: the client gets a sum per chunk)."""
    init = CENTERS if init == "centres" else init
    small, large = 40_000, 400_000
    _client_peak(small, init)  # imports and compilation in the client, outside the measurement
    p_small, _ = _client_peak(small, init)
    p_large, est = _client_peak(large, init)
    # one byte a point (the smallest O(n) vector: labels) would add 360 kB; the model's
    # stand-in data (one float broadcast to n rows) is checked for finite values in passing
    assert p_large - p_small < 0.5 * (large - small), (p_small, p_large)
    assert np.bincount(est.labels_.compute(), minlength=K).min() > 0
