"""The constrained part of a Dask fit solved on the workers, a task per group of
connected components (hmrf.distributed.components), against the in-memory fit with the
same engine, on the session's two-process ``LocalCluster`` (``dask_client``).

The threshold (10^6 constrained points by default) is lowered by ``fit_dask``'s
``component_tasks_above=`` so that a few hundred constrained points take that path.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("distributed")

from hmrf import Constraints, HMRFKMeans  # noqa: E402
from hmrf.distributed import fit_dask  # noqa: E402
from hmrf.distributed.components import ComponentPlan, component_tasks_above  # noqa: E402
from hmrf.distributed.data import ChunkedData  # noqa: E402
from hmrf.emissions import get_emission  # noqa: E402
from hmrf.graph import PairwiseGraph  # noqa: E402

pytestmark = pytest.mark.usefixtures("dask_client")

ROW_CHUNKS = (130, 250, 70, 150)
N, D, K = sum(ROW_CHUNKS), 4, 3


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, N)
    X = rng.normal(size=(N, D)) + rng.normal(size=(K, D))[y] * 2.0
    return X, y


def _pairs_by_class(pairs, y, flip, rng):
    """Must-links within and cannot-links across the classes, a fraction ``flip`` of them
    wrong (so that the engine has something to decide)."""
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    same ^= rng.random(pairs.shape[0]) < flip
    return Constraints.from_pairs(must_link=pairs[same], cannot_link=pairs[~same], n=N)


def _many_components(seed=0):
    """Disjoint pairs and triangles over 300 points: ~120 components."""
    X, y = _blobs(seed)
    rng = np.random.default_rng(seed + 1)
    pts = rng.permutation(N)[:300]
    pairs = [pts[i:i + 2] for i in range(0, 150, 2)]
    for i in range(150, 300, 3):  # triangles
        a, b, c = pts[i:i + 3]
        pairs += [np.array([a, b]), np.array([b, c]), np.array([a, c])]
    return X, y, _pairs_by_class(np.array(pairs), y, 0.2, rng)


def _one_component(seed=0):
    """A path through 250 points plus chords: one connected component."""
    X, y = _blobs(seed)
    rng = np.random.default_rng(seed + 2)
    pts = rng.permutation(N)[:250]
    pairs = np.column_stack([pts[:-1], pts[1:]])
    chords = np.column_stack([pts[rng.integers(0, 250, 60)], pts[rng.integers(0, 250, 60)]])
    pairs = np.vstack([pairs, chords[chords[:, 0] != chords[:, 1]]])
    return X, y, _pairs_by_class(pairs, y, 0.15, rng)


def _fit_both(X, y, c, inference, **kw):
    start = X[[int(np.flatnonzero(y == h)[0]) for h in range(K)]] + 0.5
    make = lambda: HMRFKMeans(K, inference=inference, init=start, n_init=1, random_state=0, **kw)  # noqa: E731
    mem = make().fit(X, constraints=c)
    dk = fit_dask(make(), da.from_array(X, chunks=(ROW_CHUNKS, D)), constraints=c, component_tasks_above=10)
    return mem, dk


def _assert_same(mem, dk):
    np.testing.assert_array_equal(dk.labels_.compute(), mem.labels_)
    assert dk.objective_ == pytest.approx(mem.objective_, rel=1e-9)
    assert dk.n_iter_ == mem.n_iter_
    np.testing.assert_allclose(dk.cluster_centers_, mem.cluster_centers_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dk.history_, mem.history_, rtol=1e-9)


def test_many_components_exact_engine_matches_in_memory():
    X, y, c = _many_components()
    mem, dk = _fit_both(X, y, c, "exact")
    _assert_same(mem, dk)
    infos = [t["engine"] for t in dk.em_result_.trace]
    assert all(i["n_tasks"] >= 4 for i in infos)  # at least a task a chunk, components kept whole
    assert all("n_tasks" not in i for i in (t["engine"] for t in mem.em_result_.trace))


def test_single_giant_component_bp_matches_in_memory():
    X, y, c = _one_component()
    mem, dk = _fit_both(X, y, c, "bp")
    _assert_same(mem, dk)
    assert all(t["engine"]["n_tasks"] == 1 for t in dk.em_result_.trace)
    # the lower bound and the E-step energy are those of the in-memory E-step
    for a, b in zip(dk.em_result_.trace, mem.em_result_.trace):
        assert a["e_energy"] == pytest.approx(b["e_energy"], rel=1e-9)


def test_below_the_threshold_the_client_solves_the_constrained_part():
    X, y, c = _many_components()
    start = X[[int(np.flatnonzero(y == h)[0]) for h in range(K)]]
    dk = fit_dask(HMRFKMeans(K, inference="icm", init=start, n_init=1, random_state=0),
                  da.from_array(X, chunks=(ROW_CHUNKS, D)), constraints=c)
    assert all("n_tasks" not in t["engine"] for t in dk.em_result_.trace)


def test_plan_keeps_components_whole_and_balances_tasks():
    X, y, c = _many_components()
    nodes, sub = PairwiseGraph.from_constraints(c).constrained_part()
    with dask.config.set(scheduler="synchronous"):  # the plan's graphs as values, not tasks
        data = ChunkedData(da.from_array(X, chunks=(ROW_CHUNKS, D)), get_emission("sqeuclidean"))
        plan = ComponentPlan(data, nodes, sub)
    assert plan.n_tasks >= data.n_chunks
    assert plan.sizes.sum() == nodes.size
    # every edge of the constrained part is inside one task, with its weight and kind
    assert sum(g.n_edges for g in plan.task_graphs) == sub.n_edges
    assert plan.sizes.max() <= 2 * np.ceil(nodes.size / plan.n_tasks) + 3  # whole components of <= 3
    # the chunks' pieces add up to each task's points
    got = np.zeros(plan.n_tasks, dtype=int)
    for touch in plan.touch:
        for t, length in touch:
            got[t] += length
    np.testing.assert_array_equal(got, plan.sizes)


def test_threshold_is_checked_and_read_from_the_configuration():
    with dask.config.set({"hmrf.component-tasks-above": 7}):
        assert component_tasks_above() == 7
    assert component_tasks_above(3) == 3
    with pytest.raises(ValueError, match="component_tasks_above must be an integer >= 1"):
        component_tasks_above(0)
