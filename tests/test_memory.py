"""Memory budget of a fit: linear in n, no (n x k x several) or (n x groups) temporaries.

NumPy reports its allocations to ``tracemalloc``, so the traced peak during ``fit`` is
the memory the fit adds beyond the caller's ``X``. The budget is a small multiple of
``X.nbytes``, plus a multiple of ``n_c · k`` floats (``n_c`` constrained points: their
cost rows and the engine's messages), plus the row blocks in flight (one per thread of
the pass and one waiting: a constant, whatever n). With k = 40 and d = 10 one dense
(n, k) float64 matrix is four times ``X``, so the old E-step (a full unary matrix with
its temporaries) or an (n x neighbourhoods) indicator in the initialisation breaks the
budget.
"""

import tracemalloc

import numpy as np
import pytest

from hmrf import Constraints, HMRFKMeans, KMeans, MPCKMeans, PCKMeans, SphericalKMeans
from hmrf._blocks import BLOCK_ELEMENTS, MIN_THREADED_ENTRIES, pool_threads

N, D, K = 50_000, 10, 40
#: the pass's blocks in flight: one (rows x k) float64 cost block per thread, one waiting
BLOCKS = (pool_threads(MIN_THREADED_ENTRIES) + 1) * BLOCK_ELEMENTS * 8


def _data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, K, N)
    X = rng.normal(size=(K, D))[y] * 2.0 + rng.normal(size=(N, D))
    return X, y


def _peak(fit):
    tracemalloc.start()
    try:
        fit()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


#: one run each (a run's memory is what is measured), but PCKMeans at its defaults:
#: several runs of both kinds (n_init="auto") keep at most the best result besides the
#: current run; three runs (``AUTO_RUNS``, fixture ``few_auto_runs``) show it, since
#: results kept beyond those two would add a third
AUTO_RUNS = 3
ESTIMATORS = {
    "hmrf-icm": lambda: HMRFKMeans(K, inference="icm", n_init=1, random_state=0),
    "hmrf-bp": lambda: HMRFKMeans(K, inference="bp", n_init=1, random_state=0),
    "pckmeans": lambda: PCKMeans(K, random_state=0, max_iter=10),
    "mpckmeans-diag": lambda: MPCKMeans(K, inference="icm", n_init=1, random_state=0, max_iter=10),
    "spherical": lambda: SphericalKMeans(K, n_init=1, random_state=0),
}

#: copies of X a family makes in ``prepare`` (cosine normalises the rows)
COPIES = {"spherical": 1}


@pytest.fixture(scope="module")
def data():
    X, y = _data()
    for make in ESTIMATORS.values():  # compile numba kernels outside the traced fits
        make().fit(X[:500], constraints=Constraints.sample_from_labels(y[:500], 50, rng=0))
    return X, y


@pytest.mark.usefixtures("few_auto_runs")
@pytest.mark.parametrize("name, n_pairs", [(name, 2_000) for name in ESTIMATORS]
                         + [("hmrf-icm", 20_000), ("mpckmeans-diag", 20_000)])
def test_fit_stays_within_memory_budget(data, name, n_pairs):
    X, y = data
    c = Constraints.sample_from_labels(y, n_pairs, rng=1)
    n_c = len(c.constrained_points)
    budget = (1.5 + COPIES.get(name, 0)) * X.nbytes + 12 * n_c * K * 8 + BLOCKS
    est = ESTIMATORS[name]()
    peak = _peak(lambda: est.fit(X, constraints=c))
    assert peak <= budget, f"{name}: peak {peak / 1e6:.1f} MB > budget {budget / 1e6:.1f} MB"
    assert np.unique(est.labels_).size == K


def test_unconstrained_fit_stays_within_memory_budget(data):
    X, _ = data
    est = KMeans(K, n_init=1, random_state=0, max_iter=20)
    peak = _peak(lambda: est.fit(X))
    budget = 1.5 * X.nbytes + BLOCKS
    assert peak <= budget, f"peak {peak / 1e6:.1f} MB > {budget / 1e6:.1f} MB"
