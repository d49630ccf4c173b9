"""Dask fits that survive a lost worker (hmrf.distributed), on real ``LocalCluster``\\ s.

A worker process killed with SIGKILL (as an out-of-memory kill or a lost node ends it),
or restarted by its nanny for passing 95 % of its memory limit, in the middle of a fit
loses everything that worker held: prepared chunks, per-chunk labels, data terms. Every
one of them is a task the scheduler can recompute from its source (the Zarr store, the
Dask array's graph), so the fit goes on and its result is identical to the undisturbed
fit's.
"""

import os
import signal
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

from hmrf import Constraints, HMRFKMeans  # noqa: E402
from hmrf.inference import ICM  # noqa: E402

N, D, K, CHUNK = 24_000, 5, 4, 3_000


@pytest.fixture(scope="module")
def cluster_client():
    """A cluster of its own (workers are killed here): three worker processes."""
    cluster = distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                       memory_limit="1GiB", dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    y = rng.integers(0, K, N)
    X = (rng.normal(size=(N, D)) + 2.0 * rng.normal(size=(K, D))[y]).astype(np.float32)
    path = str(tmp_path_factory.mktemp("faults") / "X.zarr")
    da.to_zarr(da.from_array(X, chunks=(CHUNK, D)), path)
    return path, y


def _fit(X, c, engine, persist=None):
    settings = {} if persist is None else {"hmrf.persist": persist}
    with dask.config.set(settings):
        return HMRFKMeans(K, inference=engine, n_init=1, random_state=0, max_iter=8, tol=0).fit(X, constraints=c)


@pytest.fixture(scope="module")
def undisturbed(cluster_client, store):
    """The undisturbed fit every test compares with, computed once (the chunks kept or read
    again by every pass give the same numbers): constraints, labels, objective, centres."""
    path, y = store
    c = Constraints.sample_from_labels(y, n_pairs=300, rng=1)
    quiet = _fit(da.from_zarr(path), c, ICM())
    return c, quiet.labels_.compute(), quiet.objective_, quiet.cluster_centers_


class KillingICM(ICM):
    """ICM that, before its ``at``-th E-step, SIGKILLs the worker process holding the
    most of the fit's data (found by pid through ``client.run``)."""

    def __init__(self, client, at=3):
        super().__init__()
        self._client, self._at, self._calls, self.killed = client, at, 0, None

    def solve_validated(self, *args, **kwargs):  # what the EM loop calls each E-step
        self._calls += 1
        if self._calls == self._at:
            pids = self._client.run(os.getpid)
            held = self._client.run(lambda dask_worker: len(dask_worker.data))
            victim = max(held, key=held.get)
            os.kill(pids[victim], signal.SIGKILL)
            self.killed = victim
        return super().solve_validated(*args, **kwargs)


@pytest.mark.parametrize("persist", [True, False], ids=["persisted", "read-by-every-pass"])
def test_a_worker_killed_mid_fit_gives_the_undisturbed_result(cluster_client, store, undisturbed, persist):
    path, _ = store
    c, labels, objective, centers = undisturbed
    killer = KillingICM(cluster_client, at=3)
    hit = _fit(da.from_zarr(path), c, killer, persist)
    assert killer.killed is not None and killer._calls > killer._at  # the fit went on
    np.testing.assert_array_equal(hit.labels_.compute(), labels)
    assert hit.objective_ == objective
    np.testing.assert_array_equal(hit.cluster_centers_, centers)


def _allocate_past_the_limit(dask_worker):
    """In a thread of the worker process (its event loop stays free), fill 1.2 × the
    worker's memory limit and hold it: the nanny's memory monitor sees the process pass
    ``distributed.worker.memory.terminate`` (95 %) and restarts the worker."""
    import threading
    import time

    def hog():
        held = np.ones(int(1.2 * dask_worker.memory_manager.memory_limit) // 8)  # pages touched
        time.sleep(120)
        return held

    threading.Thread(target=hog, daemon=True).start()


class MemoryHogICM(ICM):
    """ICM that, before its ``at``-th E-step, makes the worker holding the most of the
    fit's data allocate past its memory limit, and waits until the nanny has taken the
    worker process down."""

    def __init__(self, client, at=3):
        super().__init__()
        self._client, self._at, self._calls, self.victim = client, at, 0, None

    def solve_validated(self, *args, **kwargs):
        self._calls += 1
        if self._calls == self._at:
            held = self._client.run(lambda dask_worker: len(dask_worker.data))
            victim = max(held, key=held.get)
            self.victim = (victim, self._client.run(os.getpid, workers=[victim])[victim])
            self._client.run(_allocate_past_the_limit, workers=[victim])  # returns at once
            deadline = time.monotonic() + 60
            while victim in self._client.scheduler_info()["workers"]:
                assert time.monotonic() < deadline, "the nanny did not restart the worker"
                time.sleep(0.1)
        return super().solve_validated(*args, **kwargs)


def test_a_nanny_restart_for_memory_mid_fit_gives_the_undisturbed_result(cluster_client, store, undisturbed):
    path, _ = store
    c, labels, objective, centers = undisturbed
    hog = MemoryHogICM(cluster_client, at=3)
    hit = _fit(da.from_zarr(path), c, hog)
    assert hog.victim is not None and hog._calls > hog._at  # the fit went on after the restart
    address, pid = hog.victim
    restarts = [e for _, e in cluster_client.get_events("worker-restart-memory")]  # the nanny's record
    assert {"worker": address, "pid": pid} in [{"worker": e["worker"], "pid": e["pid"]} for e in restarts]
    # a restarted worker imports NumPy, Dask and hmrf again: beside the rest of the suite on two
    # cores that has taken more than 60 s
    cluster_client.wait_for_workers(3, timeout=240)
    assert pid not in cluster_client.run(os.getpid).values()  # a new process in its place
    np.testing.assert_array_equal(hit.labels_.compute(), labels)
    assert hit.objective_ == objective
    np.testing.assert_array_equal(hit.cluster_centers_, centers)
