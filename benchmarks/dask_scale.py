"""HMRF EM on a Dask cluster: time per EM iteration on 1 and 2 local workers against the
in-memory path and against dask-ml's KMeans, peak memory per worker, and an out-of-core fit.

Data: ``n`` points in ``d`` dimensions from ``k`` overlapping Gaussian classes (unit noise,
class means ~ N(0, 0.25² I), as ``benchmarks/scale.py``: EM has work to do every
iteration), made chunk by chunk by one deterministic generator per chunk, in the
process for the in-memory path and on the workers for the Dask paths (persisted there),
so every path sees the same numbers. Constraints: random pairs labelled by the true
classes (``Constraints.sample_from_labels``).

Per iteration: every path starts from the same ``k`` centres (random rows) and runs
``--iters`` iterations with ``tol=0``.

* hmrf (in memory and Dask): HMRFKMeans at its default engine (``inference="auto"``)
  from the same start, far from the optimum; the EM loop's own time per iteration
  (``em_result_.trace``: the pass over the data, the engine on the constrained points,
  the M-step), the median over the iterations. The Dask fit's model building (the
  summary pass and keeping the prepared chunks) is not an iteration and is reported as
  ``setup``.
* dask-ml: ``dask_ml.cluster.KMeans`` (Lloyd) on the same persisted Dask array, no
  constraints; per iteration = (fit with ``--iters``) - (fit with 1 iteration), over
  ``--iters - 1``. Installed only for this benchmark (``pip install dask-ml``).

Workers: a ``LocalCluster`` of W processes with one thread each (W = 1, 2); the in-memory
path runs in one process with its BLAS threads. Every configuration runs in its own
process. ``peak/worker`` is each worker's peak resident memory (VmHWM), libraries
included (about 300 MB before any data).

Out of core: a Zarr store of float32 rows, ``--ooc-factor`` times one worker's
``--ooc-memory`` (600 MiB: the documented minimum worker memory), fit by HMRFKMeans
(100,000 constraints by default, its default engine and initialisation) on two workers; the peak
resident memory of every worker against its limit, and whether a worker was restarted.

    python benchmarks/dask_scale.py                          # n = 1e6, out of core, the fault run
    python benchmarks/dask_scale.py --sizes 1000000,10000000 # also 1e7 (X is 4 GB a copy)
    python benchmarks/dask_scale.py --ooc-only               # out of core on 600 MiB workers
    python benchmarks/dask_scale.py --client-only            # the client's memory against n
    python benchmarks/dask_scale.py --faults-only            # a fit with a worker killed mid-fit

The per-iteration table goes to docs/results/dask_per_iteration.md, the out-of-core run to
docs/results/dask_out_of_core.md (``--skip-client`` runs all but the client-memory
sizes, ``--skip-ooc`` leaves out the out-of-core run).

Faults: a Zarr store of ``--fault-n`` x ``--fault-d`` float32 rows, HMRFKMeans with belief
propagation (``inference="bp"``, ``--fault-pairs`` constraints, ``--fault-iters`` iterations,
``tol=0``) on a ``LocalCluster`` of three worker processes, undisturbed and with the worker
process holding the most of the fit's data SIGKILLed before the ``--fault-at``-th E-step
(as ``tests/test_distributed_faults.py``), alternated ``--fault-rounds`` times; wall time
of each fit, and whether labels, objective and centres equal the undisturbed fit's
(docs/results/dask_faults.md; ``--skip-faults`` leaves it out of the default run).

Client memory: the peak of ``tracemalloc`` in the client during a fit at each of
``--client-sizes`` rows made on the workers (docs/results/dask_client_memory.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

SEED = 0


def make_chunk(rows: int, d: int, k: int, index: int, dtype=np.float64):
    """Rows and classes of chunk ``index`` (its own generator: any process makes the same)."""
    rng = np.random.default_rng([SEED, index])
    centers = np.random.default_rng(SEED).normal(size=(k, d)) * 0.25
    y = rng.integers(0, k, rows)
    X = rng.standard_normal((rows, d)).astype(dtype, copy=False)
    X += centers[y].astype(dtype)
    return X, y


def chunk_sizes(n, chunk):
    return [min(chunk, n - s) for s in range(0, n, chunk)]


def classes(n, d, k, chunk):
    """The true classes of all points, without making the points."""
    return np.concatenate([np.random.default_rng([SEED, i]).integers(0, k, rows)
                           for i, rows in enumerate(chunk_sizes(n, chunk))])


def in_memory_data(n, d, k, chunk):
    X = np.empty((n, d))
    for i, rows in enumerate(chunk_sizes(n, chunk)):  # chunk by chunk, no (n, d) temporary
        X[i * chunk:i * chunk + rows] = make_chunk(rows, d, k, i)[0]
    return X


def _dask_chunk(block, d, k, dtype, block_id=None):
    return make_chunk(block.shape[0], d, k, block_id[0], dtype)[0]


def dask_data(n, d, k, chunk, dtype=np.float64):
    import dask.array as da

    template = da.zeros((n, d), chunks=(chunk, d), dtype=dtype)
    return template.map_blocks(_dask_chunk, d, k, dtype, dtype=dtype)


def start_points(n, k):
    return np.sort(np.random.default_rng(1).choice(n, k, replace=False))


def peak_rss_mib() -> float:
    with open("/proc/self/status") as fh:
        return int(fh.read().split("VmHWM:")[1].split()[0]) / 1024.0


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        return int(fh.read().split("VmRSS:")[1].split()[0]) / 1024.0


def warm_up():
    """Import everything and compile the numba kernels before any timing."""
    from hmrf import Constraints, HMRFKMeans

    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 2000)
    X = rng.normal(size=(2000, 5)) + y[:, None]
    HMRFKMeans(3, random_state=0).fit(X, constraints=Constraints.sample_from_labels(y, 200, rng=0))


def per_iteration(est) -> float:
    return float(np.median([t["e_time"] + t["m_time"] for t in est.em_result_.trace]))


def constraints_for(n, d, k, chunk, n_pairs):
    from hmrf import Constraints

    if n_pairs == 0:
        return {}
    return dict(constraints=Constraints.sample_from_labels(classes(n, d, k, chunk), n_pairs, rng=1))


# ---------------------------------------------------------------- the jobs
def job_memory(a):
    from hmrf import HMRFKMeans

    warm_up()
    X = in_memory_data(a.n, a.d, a.k, a.chunk)
    init = X[start_points(a.n, a.k)]
    kw = constraints_for(a.n, a.d, a.k, a.chunk, a.pairs)
    est = HMRFKMeans(a.k, init=init, tol=0.0, max_iter=a.iters, random_state=0).fit(X, **kw)
    return dict(per_iter=per_iteration(est), n_iter=int(est.n_iter_), peak=peak_rss_mib(),
                objective=est.objective_)


def _cluster(workers, memory):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           memory_limit=memory, dashboard_address=None)
    return cluster, Client(cluster)


def job_dask(a):
    from hmrf import HMRFKMeans

    cluster, client = _cluster(a.n_workers, a.memory)
    try:
        warm_up()
        client.run(warm_up)
        base = client.run(rss_mb)
        X = dask_data(a.n, a.d, a.k, a.chunk).persist()
        init = X[start_points(a.n, a.k)].compute()
        kw = constraints_for(a.n, a.d, a.k, a.chunk, a.pairs)
        t0 = time.perf_counter()
        est = HMRFKMeans(a.k, init=init, tol=0.0, max_iter=a.iters, random_state=0).fit(X, **kw)
        fit = time.perf_counter() - t0
        em = sum(t["e_time"] + t["m_time"] for t in est.em_result_.trace)
        out = dict(per_iter=per_iteration(est), n_iter=int(est.n_iter_), setup=fit - em,
                   peak=max(client.run(peak_rss_mib).values()), base=max(base.values()),
                   objective=est.objective_)
        if a.dask_ml:
            from dask_ml.cluster import KMeans as DaskMLKMeans

            def fit(iters):
                t0 = time.perf_counter()
                km = DaskMLKMeans(n_clusters=a.k, init=init, max_iter=iters, tol=0.0, random_state=0).fit(X)
                return time.perf_counter() - t0, int(km.n_iter_)

            fit(1)  # warm-up
            runs = [(fit(1), fit(a.iters)) for _ in range(2)]  # interleaved, the machine drifts
            m = runs[0][1][1]
            out["dask_ml_per_iter"] = float(np.median([(tm - t1) / max(m - 1, 1)
                                                       for (t1, _), (tm, _) in runs]))
            out["dask_ml_n_iter"] = m
        return out
    finally:
        client.close()
        cluster.close()


def job_ooc(a):
    import dask.array as da
    import zarr

    from hmrf import HMRFKMeans

    cluster, client = _cluster(2, a.ooc_memory)
    path = a.ooc_path or tempfile.mkdtemp(prefix="hmrf-ooc-")
    try:
        warm_up()
        client.run(warm_up)
        limit = min(w["memory_limit"] for w in client.scheduler_info()["workers"].values())
        n = int(a.ooc_factor * limit / (a.d * 4)) + 1
        store = os.path.join(path, "X.zarr")
        t0 = time.perf_counter()
        kw = {"compressors": None} if int(zarr.__version__.split(".")[0]) >= 3 else {"compressor": None}
        da.to_zarr(dask_data(n, a.d, a.k, a.ooc_chunk, np.float32), store, **kw)
        write = time.perf_counter() - t0
        X = da.from_zarr(store)
        kw = constraints_for(n, a.d, a.k, a.ooc_chunk, a.pairs)
        pids = client.run(os.getpid)
        t0 = time.perf_counter()
        est = HMRFKMeans(a.k, random_state=0, max_iter=a.iters).fit(X, **kw)
        fit = time.perf_counter() - t0
        peaks = client.run(peak_rss_mib)
        return dict(n=n, gb=X.nbytes / 1e9, limit_mb=limit / 2**20, write=write, fit=fit,
                    n_iter=int(est.n_iter_), per_iter=per_iteration(est), peaks=list(peaks.values()),
                    restarted=client.run(os.getpid) != pids)
    finally:
        client.close()
        cluster.close()
        if not a.ooc_path:  # a store of several GB in the temporary directory
            shutil.rmtree(path, ignore_errors=True)


def _scheduler_apart(workers, memory):
    """A scheduler and ``workers`` worker processes started by Dask's command-line
    entry points, each in a process of its own (as on a real cluster: a ``LocalCluster``
    runs its scheduler inside the client's process, whose allocations would count as the
    client's), and a client connected to them. Returns ``(stop, client)``."""
    from distributed import Client

    folder = tempfile.mkdtemp(prefix="hmrf-sched-")
    address = os.path.join(folder, "scheduler.json")
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--no-dashboard",
                               "--host", "127.0.0.1", "--scheduler-file", address],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    while not os.path.exists(address):
        time.sleep(0.2)
    procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                   address, "--nworkers", str(workers), "--nthreads", "1", "--memory-limit",
                                   memory, "--no-dashboard", "--host", "127.0.0.1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    client = Client(scheduler_file=address)
    client.wait_for_workers(workers, timeout=300)

    def stop():
        client.close()
        for p in reversed(procs):
            p.terminate()
            p.wait(timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
    return stop, client


def job_client(a):
    """Peak memory the client allocates (``tracemalloc``) during a fit whose data are made
    on the workers: the model, the initialisation, EM, and ``labels_`` (not computed).
    The scheduler runs in a process of its own (``_scheduler_apart``)."""
    import tracemalloc

    from hmrf import Constraints, HMRFKMeans

    stop, client = _scheduler_apart(2, a.memory)
    try:
        warm_up()
        client.run(warm_up)
        small = dask_data(20 * a.chunk // 100, a.d, a.k, a.chunk // 100, np.float32)
        y = classes(small.shape[0], a.d, a.k, a.chunk // 100)
        HMRFKMeans(a.k, n_init=1, max_iter=2, random_state=0).fit(  # the client's imports, untraced
            small, constraints=Constraints.sample_from_labels(y, a.pairs // 100, rng=1))
        X = dask_data(a.n, a.d, a.k, a.chunk, np.float32).persist()
        c = Constraints.sample_from_labels(classes(a.n, a.d, a.k, a.chunk), a.pairs, rng=1)  # made before
        tracemalloc.start()
        t0 = time.perf_counter()
        est = HMRFKMeans(a.k, n_init=1, max_iter=a.iters, tol=0.0, random_state=0).fit(X, constraints=c)
        fit = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return dict(peak_mb=peak / 1e6, fit=fit, n_iter=int(est.n_iter_))
    finally:
        stop()


def _killing_bp(client, at):
    """Belief propagation that, before its ``at``-th E-step, SIGKILLs the worker process
    holding the most of the fit's data (found by pid through ``client.run``), as
    ``tests/test_distributed_faults.py`` does; the nanny starts a new process."""
    import signal

    from hmrf.inference import BeliefPropagation

    class KillingBP(BeliefPropagation):
        def __init__(self):
            super().__init__()
            self.calls, self.killed = 0, None

        def solve_validated(self, *args, **kwargs):  # what the EM loop calls each E-step
            self.calls += 1
            if self.calls == at:
                pids = client.run(os.getpid)
                held = client.run(lambda dask_worker: len(dask_worker.data))
                victim = max(held, key=held.get)
                os.kill(pids[victim], signal.SIGKILL)
                self.killed = (victim, held[victim])
            return super().solve_validated(*args, **kwargs)

    return KillingBP()


def job_faults(a):
    """Undisturbed fits and fits with a worker SIGKILLed mid-fit, alternated, on one
    3-process cluster and one Zarr store; every fit compared with the first undisturbed one."""
    import dask.array as da
    import zarr

    from hmrf import Constraints, HMRFKMeans

    cluster, client = _cluster(3, a.memory)
    path = tempfile.mkdtemp(prefix="hmrf-faults-")
    try:
        warm_up()
        client.run(warm_up)
        store = os.path.join(path, "X.zarr")
        kw = {"compressors": None} if int(zarr.__version__.split(".")[0]) >= 3 else {"compressor": None}
        da.to_zarr(dask_data(a.n, a.d, a.k, a.chunk, np.float32), store, **kw)
        c = Constraints.sample_from_labels(classes(a.n, a.d, a.k, a.chunk), a.pairs, rng=1)

        def fit(engine):
            client.wait_for_workers(3, timeout=300)  # every fit starts on three workers
            pids = set(client.run(os.getpid).values())
            t0 = time.perf_counter()
            est = HMRFKMeans(a.k, inference=engine, n_init=1, max_iter=a.iters, tol=0.0,
                             random_state=0).fit(da.from_zarr(store), constraints=c)
            labels = est.labels_.compute()
            wall = time.perf_counter() - t0
            client.wait_for_workers(3, timeout=300)
            lost = len(pids - set(client.run(os.getpid).values()))
            return wall, est, labels, lost

        def same(est, labels, reference):
            return dict(labels=bool(np.array_equal(labels, reference[0])),
                        objective=bool(est.objective_ == reference[1]),
                        centers=bool(np.array_equal(est.cluster_centers_, reference[2])))

        reference = None
        rounds = []
        for _ in range(a.rounds):
            quiet_wall, quiet, quiet_labels, quiet_lost = fit("bp")
            if reference is None:
                reference = (quiet_labels, quiet.objective_, quiet.cluster_centers_)
            killer = _killing_bp(client, a.at)
            hit_wall, hit, hit_labels, hit_lost = fit(killer)
            rounds.append(dict(quiet=quiet_wall, hit=hit_wall, quiet_lost=quiet_lost, hit_lost=hit_lost,
                               quiet_same=same(quiet, quiet_labels, reference),
                               hit_same=same(hit, hit_labels, reference),
                               killed=killer.killed is not None, e_steps=killer.calls,
                               held=killer.killed[1] if killer.killed else 0, n_iter=int(hit.n_iter_)))
            print(rounds[-1], file=sys.stderr, flush=True)
        return dict(rounds=rounds, gb=a.n * a.d * 4 / 1e9)
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(path, ignore_errors=True)


JOBS = {"memory": job_memory, "dask": job_dask, "ooc": job_ooc, "client": job_client,
        "faults": job_faults}


def spawn(**kw) -> dict:
    cmd = [sys.executable, __file__] + [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-4000:]}")
    return json.loads(line[-1][7:])


def client_memory(a):
    """The client's peak allocations against n (``docs/results/dask_client_memory.md``)."""
    from _results import markdown_table, write_result

    rows = []
    for n in [int(s) for s in a.client_sizes.split(",")]:
        r = spawn(job="client", n=n, pairs=20_000, d=10, k=20, iters=5, chunk=a.chunk, memory=a.memory)
        rows.append([f"{n:,}", f"{r['peak_mb']:.1f}", f"{r['peak_mb'] * 1e6 / n:.1f}", r["n_iter"],
                     f"{r['fit']:.0f}"])
        print(rows[-1], flush=True)
        # written after every size, so that a run stopped early keeps what it measured
        write_result("dask_client_memory", markdown_table(
            ["n", "client peak (MB)", "bytes a row", "iterations", "fit (s)"], rows),
            notes="HMRFKMeans (defaults but `n_init=1`, `tol=0`, 5 iterations), 10 float32 features, "
                  f"k = 20, 20,000 random labelled pairs, chunks of {a.chunk:,} rows; data made on the "
                  "workers (2 worker processes of `--memory` each, the scheduler in a process of its "
                  "own, as on a cluster); peak of `tracemalloc` in the client over the whole `fit`, "
                  "after a small fit that imports the client's modules.")


def faults(a):
    """Wall time of a fit with and without a killed worker (``docs/results/dask_faults.md``)."""
    from _results import markdown_table, write_result

    load = os.getloadavg()[0]
    r = spawn(job="faults", n=a.fault_n, d=a.fault_d, k=a.k, pairs=a.fault_pairs, iters=a.fault_iters,
              at=a.fault_at, chunk=a.fault_chunk, memory=a.fault_memory, rounds=a.fault_rounds)
    after = os.getloadavg()[0]
    rows = []
    for i, x in enumerate(r["rounds"], 1):
        for kind, wall, lost, same in [("undisturbed", x["quiet"], x["quiet_lost"], x["quiet_same"]),
                                       ("worker killed", x["hit"], x["hit_lost"], x["hit_same"])]:
            rows.append([i, kind, f"{wall:.1f}", f"{wall / x['quiet']:.2f}",
                         ", ".join(f"{key} {'yes' if ok else 'NO'}" for key, ok in same.items()),
                         lost])
    ratios = [x["hit"] / x["quiet"] for x in r["rounds"]]
    table = markdown_table(["round", "fit", "wall (s)", "/ undisturbed", "same as the first undisturbed fit",
                            "worker processes lost (restarted)"], rows)
    print(table, flush=True)
    first = r["rounds"][0]
    write_result("dask_faults", table, notes=(
        f"{a.fault_n:,} x {a.fault_d} float32 rows ({r['gb']:.2f} GB) in a Zarr store in chunks of "
        f"{a.fault_chunk:,} rows; HMRFKMeans with belief propagation (`inference=\"bp\"`), k = {a.k}, "
        f"{a.fault_pairs:,} constraints, `n_init=1`, {a.fault_iters} iterations (`tol=0`), on a "
        f"`LocalCluster` of three worker processes (one thread, {a.fault_memory} each); wall time of "
        f"`fit` and computing `labels_`. \"worker killed\": before the {a.fault_at}th E-step the worker "
        f"process holding the most of the fit's data ({first['held']} keys in the first round) is "
        f"SIGKILLed (as `tests/test_distributed_faults.py` does); its nanny starts a new process and the "
        f"scheduler recomputes what the old one held. Undisturbed and killed fits alternate on the same "
        f"cluster; median ratio killed / undisturbed {np.median(ratios):.2f} over {len(ratios)} "
        f"round(s). The machine's 1-minute load average {load:.1f} before and {after:.1f} after (two "
        f"cores shared with other work)."))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000")
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--constraints", default="0,100000")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--chunk", type=int, default=250_000, help="rows per Dask chunk")
    ap.add_argument("--memory", default="8GiB", help="memory limit of each worker (in-memory data)")
    ap.add_argument("--no-dask-ml", action="store_true")
    ap.add_argument("--ooc-memory", default="600MiB",
                    help="memory limit of each of the two out-of-core workers")
    ap.add_argument("--ooc-factor", type=float, default=4.0)
    ap.add_argument("--ooc-chunk", type=int, default=200_000)
    ap.add_argument("--ooc-path", default="")
    ap.add_argument("--ooc-only", action="store_true")
    ap.add_argument("--skip-ooc", action="store_true")
    ap.add_argument("--client-sizes", default="1000000,4000000,10000000",
                    help="n of the client-memory runs (d = 10, 20,000 constraints)")
    ap.add_argument("--client-only", action="store_true")
    ap.add_argument("--skip-client", action="store_true")
    ap.add_argument("--fault-n", type=int, default=1_000_000, help="rows of the fault run")
    ap.add_argument("--fault-d", type=int, default=20)
    ap.add_argument("--fault-pairs", type=int, default=20_000)
    ap.add_argument("--fault-iters", type=int, default=8)
    ap.add_argument("--fault-at", type=int, default=4, help="the E-step before which a worker is killed")
    ap.add_argument("--fault-chunk", type=int, default=100_000)
    ap.add_argument("--fault-memory", default="2GiB", help="memory limit of each of the three workers")
    ap.add_argument("--fault-rounds", type=int, default=4, help="undisturbed/killed pairs, alternated")
    ap.add_argument("--faults-only", action="store_true")
    ap.add_argument("--skip-faults", action="store_true")
    ap.add_argument("--job", default="", help=argparse.SUPPRESS)
    ap.add_argument("--at", type=int, default=4, help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--pairs", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--dask-ml", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--n-workers", type=int, default=1, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.job:
        print("RESULT " + json.dumps(JOBS[a.job](a)))
        return
    common = dict(d=a.d, k=a.k, iters=a.iters, chunk=a.chunk)
    pairs = [int(p) for p in a.constraints.split(",")]
    started = time.perf_counter()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _results import markdown_table, write_result

    if a.faults_only:
        faults(a)
        return
    if not a.skip_client and not a.ooc_only:
        client_memory(a)
        if a.client_only:
            return
    if not a.ooc_only:
        header = ["n", "constraints", "in memory", "1 worker", "2 workers", "2 workers / in memory",
                  "dask-ml 1 worker", "dask-ml 2 workers", "setup (2 workers)", "peak in memory",
                  "peak/worker 1", "peak/worker 2", "load"]
        notes = (f"Seconds per EM iteration (median of {a.iters}; dask-ml: (fit of {a.iters} iterations - "
                 f"fit of 1) / {a.iters - 1}, median of two interleaved pairs), d = {a.d}, k = {a.k}; "
                 "HMRFKMeans at its default engine (`inference=\"auto\"`), the same start centres "
                 f"(random rows), `tol=0`; chunks of {a.chunk:,} rows persisted on the workers "
                 "(one thread each); `setup`: the Dask fit's time outside the iterations (s); peak: the "
                 "largest worker's (or the in-memory process's) peak resident memory in MiB, libraries "
                 "included; dask-ml runs without constraints; load: the machine's 1-minute load "
                 "average before and after the row (other work on the machine slows every column).")
        rows, remarks = [], []
        for n in [int(s) for s in a.sizes.split(",")]:
            for p in pairs:
                load = os.getloadavg()[0]
                mem = spawn(job="memory", n=n, pairs=p, **common)
                dist = {w: spawn(job="dask", n=n, pairs=p, n_workers=w, memory=a.memory,
                                 dask_ml=int(p == 0 and not a.no_dask_ml), **common)
                        for w in [int(w) for w in a.workers.split(",")]}
                one, two = dist.get(1, {}), dist.get(2, {})

                def cell(r, key, fmt="{:.3f}"):
                    return fmt.format(r[key]) if key in r else "-"
                rows.append([f"{n:,}", f"{p:,}", f"{mem['per_iter']:.3f}", cell(one, "per_iter"),
                             cell(two, "per_iter"),
                             f"{two['per_iter'] / mem['per_iter']:.2f}" if two else "-",
                             cell(one, "dask_ml_per_iter"), cell(two, "dask_ml_per_iter"),
                             cell(two, "setup", "{:.1f}"), f"{mem['peak']:.0f}", cell(one, "peak", "{:.0f}"),
                             cell(two, "peak", "{:.0f}"), f"{load:.1f}-{os.getloadavg()[0]:.1f}"])
                print(rows[-1], flush=True)
                for w, r in dist.items():
                    rel = abs(r["objective"] - mem["objective"]) / abs(mem["objective"])
                    if rel > 1e-9:
                        remarks.append(f"The objective of the {w}-worker fit at n = {n:,} with {p:,} "
                                       f"constraints differs from in memory by {rel:.1e}.")
                # written after every row, so that a run stopped early keeps what it measured
                write_result("dask_per_iteration", markdown_table(header, rows),
                             notes=" ".join([notes, *remarks]))
    if not a.skip_ooc:
        load = os.getloadavg()[0]
        r = spawn(job="ooc", pairs=pairs[-1], ooc_memory=a.ooc_memory, ooc_factor=a.ooc_factor,
                  ooc_chunk=a.ooc_chunk, ooc_path=a.ooc_path, d=a.d, k=a.k, iters=a.iters)
        table = markdown_table(
            ["write (s)", "fit (s)", "iterations", "per iteration (s)", "peak/worker (MiB)", "limit (MiB)",
             "worker restarted"],
            [[f"{r['write']:.0f}", f"{r['fit']:.0f}", r["n_iter"], f"{r['per_iter']:.1f}",
              ", ".join(f"{p:.0f}" for p in r["peaks"]), f"{r['limit_mb']:.0f}",
              "yes" if r["restarted"] else "no"]])
        print(table, flush=True)
        write_result("dask_out_of_core", table, notes=(
            f"{r['n']:,} x {a.d} float32 rows in a Zarr store, {r['gb']:.2f} GB = "
            f"{r['gb'] * 1e9 / (r['limit_mb'] * 2**20):.1f} x a worker's memory limit; HMRFKMeans "
            f"(its default engine and initialisation, at most {a.iters} iterations), k = {a.k}, "
            f"{pairs[-1]:,} constraints; two worker processes (one thread each) reading the store "
            f"in chunks of {a.ooc_chunk:,} rows at every pass; peak/worker: each worker's peak "
            f"resident memory, libraries included; the machine's 1-minute load average {load:.1f} "
            f"before and {os.getloadavg()[0]:.1f} after."))
    if not a.skip_faults and not a.ooc_only:
        faults(a)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
