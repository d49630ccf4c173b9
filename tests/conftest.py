"""Shared pytest configuration.

Hypothesis settings profiles, selected by the ``HYPOTHESIS_PROFILE`` environment
variable (DEVELOPERS.md, "Property tests"):

* ``ci`` (default): few examples per property, so the property suite
  (``tests/test_properties.py``, which also derandomises itself and caps the runs of
  ``n_init="auto"`` at ``AUTO_RUNS`` under this profile) stays within about 30 s and
  CI runs are reproducible;
* ``soak``: many examples and fresh randomness, for a long local run
  (``HYPOTHESIS_PROFILE=soak python -m pytest tests/test_properties.py``).

Tests that pin their own ``max_examples`` keep it under both profiles.

Fixture ``few_auto_runs``: ``n_init="auto"`` capped at ``AUTO_RUNS`` runs for a test
whose property holds run by run.

Fixture ``notebook_cache_dir``: the run's execution cache of the notebooks, shared by
the xdist workers (``tests/notebook_cache.py``).

Fixture ``dask_client``: a real ``dask.distributed.LocalCluster`` of two worker
processes (one thread and ``DASK_WORKER_MEMORY`` bytes each) and its client, started
once per test process (each xdist worker) by the first test there that asks for it
(``tests/test_distributed.py``, ...) and closed at the session's end.

The ``slow`` marker (``SLOW``, and every test that asks for a Dask cluster or the
notebooks' cache): the tests that start a Dask cluster, build the docs, execute the
notebooks, drive the browser, start a Python subprocess or fit large data. The inner
loop of development is ``python -m pytest -m "not slow"`` (DEVELOPERS.md); CI runs
everything.

Parallel runs (pytest-xdist, ``-n auto --dist loadgroup`` in ``pyproject.toml``;
DEVELOPERS.md, "Tests in parallel"): each test is a unit of work for whichever worker
process is free, except the modules of ``GROUPS``, whose tests share an expensive
module-scoped resource (a cluster whose workers a test kills, a Jupyter server) or a
file in the source tree and so run together on one worker. The session-scoped
``dask_client`` is not a group: each worker that runs a test asking for it starts its
own cluster, once (two on two cores), so the Dask tests spread over the workers like
the others. In a worker, the tests of ``LONG_FIRST`` are collected first, longest first,
so that the longest tests start at once and the short ones fill the other workers
around them; ``-n 0`` runs everything in one process in file order.
"""

import os
from pathlib import Path

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


#: Dask settings of the ``dask_client`` cluster: no statistical profiling (a sample of
#: every thread's stack each 10 ms) and the event-loop tick once a second instead of each
#: 20 ms; both only feed the dashboard and its warnings. An idle two-worker cluster took
#: 3.6 % of a core with them instead of 6.0 % (one minute each, on a loaded machine).
DASK_QUIET = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s"}


@pytest.fixture(scope="session")
def dask_client():
    """A ``distributed`` client on a local cluster of two worker processes (see above)."""
    distributed = pytest.importorskip("distributed")
    import dask

    # Without the diagnostics nobody reads here (the statistical profiler's samples, the
    # event-loop tick): they take CPU from the other tests all session, on every worker.
    with dask.config.set(DASK_QUIET):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           memory_limit=DASK_WORKER_MEMORY, dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


#: Runs of ``n_init="auto"`` under the ``few_auto_runs`` fixture, unless the test's
#: module sets its own ``AUTO_RUNS``: one of each kind of start (the supervision's
#: seeding, the data alone; ``HMRFClusterMixin._best_of_runs``).
AUTO_RUNS = 2


def auto_runs_capped(monkeypatch, runs):
    """Cap the runs of ``n_init="auto"`` at ``runs``, dense and sparse rows alike."""
    from hmrf.estimators import base

    monkeypatch.setattr(base, "AUTO_MAX_RUNS", runs)
    monkeypatch.setattr(base, "AUTO_MAX_RUNS_SPARSE", runs)


@pytest.fixture
def few_auto_runs(request, monkeypatch):
    """``n_init="auto"`` makes ``AUTO_RUNS`` runs (the module's, else the one above)
    instead of 10 (30 on sparse rows), for tests whose property holds run by run (an
    API check, an equality between two paths that make the same runs): the code of
    ``"auto"`` (both kinds of start, the choice of the best run, the random stream shared
    by the runs) runs as with the full count, at a fraction of the fits. How many runs
    ``"auto"`` makes is tested in ``tests/test_defaults.py`` and ``tests/test_seeded.py``."""
    auto_runs_capped(monkeypatch, getattr(request.module, "AUTO_RUNS", AUTO_RUNS))


@pytest.fixture(scope="session")
def notebook_cache_dir(request, tmp_path_factory):
    """The jupyter-cache directory of this test run, shared by its xdist workers: each
    notebook is executed into it once (``tests/notebook_cache.py``), by its own test or
    by the docs build, whichever comes first, and the docs build shows those executions."""
    base = tmp_path_factory.getbasetemp()
    if hasattr(request.config, "workerinput"):
        base = base.parent  # a worker's base is <the run's base>/<worker id>
    return base / "jupyter_cache"


#: Test modules whose tests run on one xdist worker, with the reason.
GROUPS = {
    # a module-scoped cluster whose workers the test kills
    "test_distributed_faults.py": "dask_faults",
    # one measuring process, with a cluster of its own, for every parametrization
    "test_distributed_memory.py": "dask_memory",
    # a module-scoped Jupyter server and browser
    "test_widget_browser.py": "browser",
    # importing docs/conf.py deletes docs/api/generated, which the docs build writes
    "test_docs.py": "docs_source",
    "test_api_reference.py": "docs_source",
}

#: The longest tests (``--durations``; the clusters' and the Jupyter server's start-up
#: included), longest first: a module, or a test function of a module
#: (``module::function``, all its parametrizations). The docs build comes first, the
#: out-of-core fit (a minute alone) second, then the notebooks' own tests, so that the
#: build executes the notebooks from the last while the other workers execute them from
#: the first (``tests/notebook_cache.py``).
LONG_FIRST = [
    "test_docs.py",
    "test_distributed.py::test_out_of_core_fit_from_a_zarr_store",
    "test_notebooks.py::test_notebook_runs",
    "test_distributed_faults.py",
    "test_widget_browser.py",
    "test_distributed_small_workers.py",
    "test_distributed.py",
    "test_cli_cluster.py",
    "test_distributed_model.py",
    "test_distributed_components.py",
    "test_distributed_reseed.py",
    "test_distributed_memory.py",
]


#: Slow tests beyond those that ask for ``SLOW_FIXTURES``: a module, or a test function of a
#: module (``module::function``, all its parametrizations), with the reason.
SLOW = {
    # a Dask LocalCluster of their own (or of the suite, ``dask_client``)
    **{m: "dask cluster" for m in (
        "test_distributed.py", "test_distributed_components.py", "test_distributed_faults.py",
        "test_distributed_memory.py", "test_distributed_model.py", "test_distributed_reseed.py",
        "test_distributed_small_workers.py", "test_cli_cluster.py")},
    "test_docs.py": "docs build",
    "test_notebooks.py": "notebooks executed",
    "test_widget_browser.py": "a Jupyter server and Chromium",
    "test_numba_cache.py": "Python subprocesses compiling kernels",
    # a Python subprocess (start-up, imports, the command line as a user runs it)
    **{t: "subprocess" for t in (
        "test_cli.py::test_cli_module_runs_as_a_script", "test_cli.py::test_import_is_light",
        "test_cli.py::test_help_is_fast_and_imports_no_scikit_learn", "test_cli.py::test_python_dash_m_hmrf",
        "test_cli_compare.py::test_numba_compilation_is_not_timed",
        "test_cli_files.py::test_readme_own_data_command_runs",
        "test_interop.py::test_submodules_load_on_attribute_access",
        "test_lazy.py::test_submodules_load_on_first_access",
        "test_lazy.py::test_import_and_help_start_fast",
        "test_widget_model.py::test_import_hmrf_does_not_import_the_widgets",
        "test_widget_model.py::test_without_anywidget_the_model_works_and_the_widget_says_what_to_install",
        "test_plugins.py::test_the_hmrf_command_imports_a_plugin",
        "test_plugins.py::test_compare_workers_import_the_plugin_modules")},
    # large data: memory budgets measured with tracemalloc on 10^4-10^5 points
    "test_memory.py": "large data",
    # real corpora read and vectorised (18,821 newsgroup documents)
    "test_datasets.py::test_real_newsgroups": "large data",
    # whole learning-curve experiments through the command line, with their plots
    "test_cli_curve.py": "whole experiments (the text one on a real corpus)",
    **{t: "whole experiments" for t in (
        "test_active_curve.py::test_cli_default_is_cobras_with_mpckmeans_and_own_is_cobras_alone",
        "test_active_curve.py::test_cli_prints_the_curve_and_writes_files",
        "test_active_curve.py::test_cli_interactive_session",
        "test_active_curve.py::test_explore_consolidate_curve_rises_on_data_in_large_units")},
    # joblib worker processes
    "test_experiments.py::test_deterministic_and_independent_of_n_jobs": "subprocess",
    # an engine that sleeps to stand for compilation, the whole compare command around it
    "test_cli_compare.py::test_compile_time_never_lands_in_a_timed_fit": "waits on purpose",
}

#: Fixtures whose tests are slow: a Dask cluster, the notebooks' execution cache.
SLOW_FIXTURES = ("dask_client", "notebook_cache_dir")


def _listed(item, table):
    """Whether ``item``'s module or ``module::function`` is a key of ``table``."""
    module = Path(str(item.fspath)).name
    function = getattr(item, "originalname", None) or item.name
    return module in table or f"{module}::{function}" in table


_RANK = {name: i for i, name in enumerate(LONG_FIRST)}


def _long_first_rank(item):
    module = Path(str(item.fspath)).name
    function = getattr(item, "originalname", None) or item.name
    return min(_RANK.get(f"{module}::{function}", len(_RANK)), _RANK.get(module, len(_RANK)))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _listed(item, SLOW) or any(f in getattr(item, "fixturenames", ()) for f in SLOW_FIXTURES):
            item.add_marker(pytest.mark.slow)
        group = GROUPS.get(Path(str(item.fspath)).name)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    if hasattr(config, "workerinput"):  # an xdist worker: its order is the schedule's
        items.sort(key=_long_first_rank)


def pytest_ignore_collect(collection_path, config):
    """Under ``-m "not slow"`` a module that is slow as a whole is not imported at all: its
    imports (Dask, nbformat, Playwright) would cost the inner loop seconds per worker for
    tests it deselects anyway."""
    if config.getoption("markexpr", "").replace(" ", "") == "notslow":
        return SLOW.get(collection_path.name) is not None or None
    return None
