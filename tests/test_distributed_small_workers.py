"""An out-of-core Dask fit on workers of 600 MiB (hmrf.distributed).

The minimum worker memory of ``docs/scaling_out.md``: a worker with NumPy, SciPy, Dask,
hmrf and the compiled E-step kernel loaded from numba's on-disk cache (no compilation)
and one chunk's temporaries stays clear of Dask's pause (80 %) and restart (95 %)
thresholds of a 600 MiB limit, with the chunks read from a Zarr store by every pass (as
for data larger than the workers keep in memory).
"""

import os

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

from hmrf import Constraints, HMRFKMeans  # noqa: E402
from hmrf.metrics import nmi  # noqa: E402

LIMIT = 600 * 2**20
D, K, SEED = 10, 4, 11


def _block(block, block_id=None):
    rng = np.random.default_rng([SEED, block_id[0]])
    y = rng.integers(0, K, block.shape[0])
    return (rng.normal(size=block.shape) + 4.0 * np.eye(K, D)[y]).astype(np.float32)


def _classes(rows, i):
    return np.random.default_rng([SEED, i]).integers(0, K, rows)


def _peak_rss():
    with open("/proc/self/status") as fh:
        return int(fh.read().split("VmHWM:")[1].split()[0]) * 1024


def test_out_of_core_fit_on_600_mib_workers(tmp_path):
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       memory_limit=LIMIT, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        # chunks read from the store by every pass, as for data beyond PERSIST_FRACTION of the
        # workers' limits (a smaller store keeps the test short)
        n = 2_000_000
        shape = da.zeros((n, D), chunks=(250_000, D), dtype=np.float32)
        kw = {"compressors": None} if int(zarr.__version__.split(".")[0]) >= 3 else {"compressor": None}
        da.to_zarr(shape.map_blocks(_block, dtype=np.float32), str(tmp_path / "X.zarr"), **kw)
        y = np.concatenate([_classes(b, i) for i, b in enumerate(shape.chunks[0])])
        X = da.from_zarr(str(tmp_path / "X.zarr"))
        pids = client.run(os.getpid)
        c = Constraints.sample_from_labels(y, n_pairs=1000, rng=0)
        with dask.config.set({"hmrf.persist": False}):
            est = HMRFKMeans(K, init="neighborhoods", n_init=1, max_iter=3, random_state=0).fit(X, constraints=c)
        assert not est.em_result_.labels._data.persisted
        assert client.run(os.getpid) == pids  # no worker restarted (for memory or else)
        peaks = client.run(_peak_rss)
        assert max(peaks.values()) < 0.8 * LIMIT, peaks  # below Dask's pause threshold
        assert nmi(y, est.labels_.compute()) > 0.9
    finally:
        client.close()
        cluster.close()
