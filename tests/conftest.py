"""Shared pytest configuration.

Hypothesis settings profiles, selected by the ``HYPOTHESIS_PROFILE`` environment
variable (DEVELOPERS.md, "Property tests"):

* ``ci`` (default): few examples per property, so the property suite
  (``tests/test_properties.py``, which also derandomises itself under this profile)
  stays within about 30 s and CI runs are reproducible;
* ``soak``: many examples and fresh randomness, for a long local run
  (``HYPOTHESIS_PROFILE=soak python -m pytest tests/test_properties.py``).

Tests that pin their own ``max_examples`` keep it under both profiles.

Fixture ``dask_client``: a real ``dask.distributed.LocalCluster`` of two worker
processes (one thread and ``DASK_WORKER_MEMORY`` bytes each) and its client, started
once for the session by the first test that asks for it (``tests/test_distributed.py``)
and closed at its end.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile("ci", max_examples=15, deadline=None, suppress_health_check=_SLOW_OK,
                          print_blob=True)
settings.register_profile("soak", max_examples=300, deadline=None, suppress_health_check=_SLOW_OK,
                          print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


#: Memory limit of each worker of the ``dask_client`` cluster (the out-of-core test
#: writes several times this much data). Workers with NumPy, SciPy, numba and hmrf
#: loaded take 330-420 MiB before any data (more on a fresh install, where numba
#: compiles); Dask pauses a worker at 80 % of its limit, which must stay clear of that.
DASK_WORKER_MEMORY = 768 * 2**20


@pytest.fixture(scope="session")
def dask_client():
    """A ``distributed`` client on a local cluster of two worker processes (see above)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       memory_limit=DASK_WORKER_MEMORY, dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
