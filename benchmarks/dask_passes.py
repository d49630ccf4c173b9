"""Reads of the data by an out-of-core Dask fit, by what the fit was doing.

The fit of ``tests/test_distributed.py::test_out_of_core_fit_from_a_zarr_store``:
HMRFKMeans (k = 4, its defaults, ``max_iter=4``) with 2,000 constraints on a Zarr store
of float32 rows 1.1 times the memory of a two-worker ``LocalCluster`` (768 MiB a worker,
as the test suite's ``dask_client``), so that every pass reads the chunks from the store.

Every ``dask.compute``/``dask.persist`` the client makes is inspected: the tasks of its
graph that read a chunk of ``X`` (``first_read``, ``load_chunk``) are counted and
attributed to the innermost hmrf function that asked. A pass is one read of every chunk;
rows fetched by index (``take``: constraint endpoints, k-means++ candidates) read only
the chunks that hold them and are listed apart, by the hmrf functions that asked. A
second table counts the reads from the start of each EM pass to the start of the next
(the pass itself and everything the iteration reads after it).

    python benchmarks/dask_passes.py [--workdir DIR] [--spread S] [--pairs N] [--max-iter T]

``--spread`` scales the distance between the class corners (4, the test's data, leaves
the classes apart; below about 1 they overlap, so that the constraints, drawn from the
classes, move constrained points away from their nearest centre). Prints the tables
and the fit's wall time (a single run: time it on an otherwise idle machine).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import tempfile
import time
import traceback

import dask
import numpy as np

READS = ("load_chunk", "first_read", "prepare_chunk")
K, D, SEED, ROWS = 4, 32, 11, 100_000
WORKER_MEMORY = 768 * 2**20
SPREAD = 4.0


def _block(block, block_id=None, spread=SPREAD):
    """Rows of four classes (the Zarr test's generator: its classes are apart at ``spread=4``)."""
    rng = np.random.default_rng([SEED, block_id[0]])
    corners = np.random.default_rng(SEED).random((K, D), dtype=np.float32) * np.float32(spread)
    y = rng.integers(0, K, block.shape[0])
    X = rng.random(block.shape, dtype=np.float32)
    X += corners[y]
    return X


def _classes(rows, i):
    return np.random.default_rng([SEED, i]).integers(0, K, rows)


def _counting(fn, log):
    """``fn`` (dask.compute or dask.persist) recording the chunk reads of each call."""
    def inner(*args, **kwargs):
        flat = []

        def walk(a):
            if dask.is_dask_collection(a):
                flat.append(a)
            elif isinstance(a, (list, tuple)):
                for b in a:
                    walk(b)

        walk(args)
        keys = set()
        for a in flat:
            keys.update(dict(a.__dask_graph__()).keys())
        reads = sum(1 for k in keys if isinstance(k, str) and k.split("-")[0] in READS)
        if reads:
            frames = [f for f in traceback.extract_stack()[:-1] if "hmrf" in f.filename]
            stack = [f.name for f in frames]
            if "take" in stack:  # who asked for the rows: the hmrf functions outside the row store
                askers = [f.name for f in frames if not f.filename.endswith(("rows.py", "data.py"))]
                where = "row fetches (take) by " + " < ".join(reversed(askers[-3:]))
            else:
                where = stack[-1] if stack else "?"
            log.append((reads, where))
        return fn(*args, **kwargs)
    return inner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=None, help="where the Zarr store is written (a temporary dir)")
    parser.add_argument("--spread", type=float, default=SPREAD, help="distance scale of the class corners")
    parser.add_argument("--pairs", type=int, default=2000, help="constraints drawn from the classes")
    parser.add_argument("--max-iter", type=int, default=4, help="EM iterations at most")
    args = parser.parse_args()

    import dask.array as da
    import distributed

    from hmrf import Constraints, HMRFKMeans

    log: list = []
    dask.compute, dask.persist = _counting(dask.compute, log), _counting(dask.persist, log)
    quiet = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s"}
    with dask.config.set(quiet):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           memory_limit=WORKER_MEMORY, dashboard_address=None)
    client = distributed.Client(cluster)
    tmp = tempfile.mkdtemp(dir=args.workdir)
    try:
        limits = [w["memory_limit"] for w in client.scheduler_info()["workers"].values()]
        n = int(1.1 * sum(limits) / (D * 4)) + 1
        shape = da.zeros((n, D), chunks=(ROWS, D), dtype=np.float32)
        da.to_zarr(shape.map_blocks(_block, spread=args.spread, dtype=np.float32), tmp + "/X.zarr",
                   compressors=None)
        y = np.concatenate([_classes(b, i) for i, b in enumerate(shape.chunks[0])])
        X = da.from_zarr(tmp + "/X.zarr")
        c = Constraints.sample_from_labels(y, n_pairs=args.pairs, rng=0)
        del log[:]
        t0 = time.perf_counter()
        est = HMRFKMeans(K, random_state=0, max_iter=args.max_iter).fit(X, constraints=c)
        seconds = time.perf_counter() - t0
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(tmp)
    chunks = len(X.chunks[0])
    by = collections.defaultdict(float)
    for reads, where in log:
        by[where] += reads / chunks
    print("| passes | asked by |\n|---:|---|")
    for where, passes in by.items():
        print(f"| {passes:.2f} | {where} |")
    full = sum(v for k, v in by.items() if not k.startswith("row fetches"))
    fetched = sum(v for k, v in by.items() if k.startswith("row fetches"))
    print("\n| EM pass | reads of the chunks, to the next pass (in passes) |\n|---:|---:|")
    passes = [i for i, (_, where) in enumerate(log) if where == "_run_chunk_tasks"]
    for j, (a, b) in enumerate(zip(passes, [*passes[1:], len(log)])):
        print(f"| {j + 1} | {sum(r for r, _ in log[a:b]) / chunks:.2f} |")
    print(f"\nwhole passes {full:.2f} and row fetches {fetched:.2f} passes' worth, over "
          f"{X.nbytes / 1e9:.2f} GB in {chunks} chunks; {args.pairs} constraints, spread {args.spread:g}; "
          f"runs {est.n_runs_}, EM iterations {est.n_iter_}, objective {est.objective_:.10g}; "
          f"fit {seconds:.1f} s")


if __name__ == "__main__":
    main()
