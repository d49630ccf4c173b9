"""The client's memory during a Dask fit does not grow with n (hmrf.distributed).

Per iteration the client receives the constrained points' cost rows and labels, the
cluster sizes, the statistics and the objective; every point's label stays on the worker
that holds its chunk (:class:`hmrf.distributed.ChunkLabels`). Measured with
``tracemalloc`` in the client, data made on the workers: the same constraints and chunk
count at two sizes of n.

The measurement runs in a Python process of its own (this module run as a script), with
its own real ``LocalCluster`` of two worker processes, so that nothing but the fit
allocates in the traced process: in a test process, the scheduler of another test's
cluster (a ``LocalCluster`` runs its scheduler in the client's process) and that
cluster's traffic would be traced too. One process measures every initialisation; its
tests form one xdist group (``tests/conftest.py``) so that it runs once per test run.
"""

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

from hmrf import Constraints, HMRFKMeans  # noqa: E402
from hmrf.distributed import ChunkLabels  # noqa: E402

K, D, CHUNKS = 3, 5, 4
CENTERS = np.array([[0.0] * D, [3.0] * D, [-3.0] * D])
INITS = ["centres", "pckmeans++", "k-means++"]
SMALL, LARGE = 40_000, 400_000


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


def _client_peak(n, init):
    X, c = _data(n).persist(), _constraints(n)
    est = HMRFKMeans(K, init=init, n_init=1, max_iter=4, tol=0.0, random_state=0)
    tracemalloc.start()
    try:
        est.fit(X, constraints=c)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, est


def measure(inits):
    """``{init: (peak at SMALL, peak at LARGE, facts of the LARGE fit)}`` from a fresh
    ``LocalCluster`` in this process; the facts are checked by the tests."""
    import dask
    from conftest import DASK_QUIET, DASK_WORKER_MEMORY
    from distributed import Client, LocalCluster

    with dask.config.set(DASK_QUIET):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               memory_limit=DASK_WORKER_MEMORY, dashboard_address=None)
    out = {}
    with cluster, Client(cluster):
        for name in inits:
            init = CENTERS if name == "centres" else name
            _client_peak(SMALL, init)  # imports and compilation in the client, outside the measurement
            p_small, _ = _client_peak(SMALL, init)
            p_large, est = _client_peak(LARGE, init)
            out[name] = dict(small=p_small, large=p_large,
                             chunk_labels=isinstance(est.em_result_.labels, ChunkLabels),
                             labels_shape=list(est.labels_.shape),
                             smallest_cluster=int(np.bincount(est.labels_.compute(), minlength=K).min()))
    return out


@pytest.fixture(scope="module")
def peaks():
    """The measurement of every initialisation, in a process of its own (see above)."""
    proc = subprocess.run([sys.executable, __file__, *INITS], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("init", INITS)
def test_client_memory_does_not_grow_with_n(peaks, init):
    """With given centres (EM alone) and with the seedings that draw k-means++ candidates
    from every row's divergence (drawn on the workers: the client gets a sum per chunk)."""
    got = peaks[init]
    assert got["chunk_labels"]  # no client copy of the labels
    assert got["labels_shape"] == [LARGE]
    # one byte a point (the smallest O(n) vector: labels) would add 360 kB; the model's
    # stand-in data (one float broadcast to n rows) is checked for finite values in passing
    assert got["large"] - got["small"] < 0.5 * (LARGE - SMALL), (got["small"], got["large"])
    assert got["smallest_cluster"] > 0


if __name__ == "__main__":  # the measurement, in a process of its own (fixture ``peaks``)
    print(json.dumps(measure(sys.argv[1:])))
