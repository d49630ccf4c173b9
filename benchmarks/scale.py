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
* with constraints: a default fit (``init="neighborhoods"``, ``tol=1e-4``) per engine; the
  per-iteration time is the fit's EM time over its iterations (``init`` is the rest of
  the fit: validation, the constraint graph and the initialisation), compared with
  scikit-learn's per-iteration time over ``--iters`` iterations from the fitted centres.
  The unconstrained rows' peak memory includes scikit-learn's fits in the same process.

Two more targets of the scale issue are measured with ``--extras``: the initialisation
of a 200,000 x 50 problem with 50,000 constraints (time and traced memory beyond ``X``),
and MPCKMeans with a diagonal metric on 100,000 x 50 with 10,000 constraints.

    python benchmarks/scale.py                       # n = 1e4, 1e5, 1e6; d = 100; k = 20
    python benchmarks/scale.py --sizes 10000 --repeats 3 --extras
"""

from __future__ import annotations

import argparse
import json
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
    for engine in ("icm", "bp"):
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
    est = MPCKMeans(20, metric="diagonal", random_state=0).fit(X, constraints=c)
    return dict(init_time=init_time, init_mem=init_mem, mpck_fit=time.perf_counter() - t0,
                mpck_iter=int(est.n_iter_))


def child(args):
    import sklearn.cluster  # noqa: F401  (the interpreter's baseline includes the libraries)

    import hmrf.estimators  # noqa: F401

    base = current_rss_mb()
    if args.job == "unconstrained":
        out = run_unconstrained(args.n, args.d, args.k, args.iters, args.repeats)
    elif args.job == "constrained":
        out = run_constrained(args.n, args.d, args.k, args.fraction, args.engine, args.iters)
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
    ap.add_argument("--engines", default="icm,bp")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--extras", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--job", default="", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--fraction", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--engine", default="icm", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    fractions = [float(f) for f in args.fractions.split(",")]
    engines = args.engines.split(",")
    print(f"d = {args.d}, k = {args.k}; X is n x d float64; times in seconds; peak RSS in MB above the "
          "interpreter with numpy, scipy, scikit-learn and hmrf loaded\n")
    print("| n | constraints | engine | fit | iterations | per iteration | init | sklearn per iteration "
          "| ratio | peak RSS | of which X | labels = sklearn |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in sizes:
        x_mb = n * args.d * 8 / 1e6
        for f in fractions:
            if f == 0:
                r = spawn(job="unconstrained", n=n, d=args.d, k=args.k, iters=args.iters,
                          repeats=args.repeats)
                print(f"| {n:,} | 0 | - | {r['fit']:.2f} | {r['n_iter']} | {r['per_iter']:.4f} | - | "
                      f"{r['sk_per_iter']:.4f} | {r['ratio']:.2f} | {r['peak_rss'] - r['base_rss']:.0f} | "
                      f"{x_mb:.0f} | {r['labels_equal']} |", flush=True)
                continue
            for engine in engines:
                r = spawn(job="constrained", n=n, d=args.d, k=args.k, fraction=f, engine=engine,
                          iters=args.iters)
                print(f"| {n:,} | {r['constraints']:,} | {engine} | {r['fit']:.2f} | {r['n_iter']} | "
                      f"{r['per_iter']:.4f} | {r['init']:.2f} | {r['sk_per_iter']:.4f} | {r['ratio']:.2f} | "
                      f"{r['peak_rss'] - r['base_rss']:.0f} | {x_mb:.0f} | - |", flush=True)
    if args.extras:
        r = spawn(job="extras")
        print(f"\ninitialisation, 200,000 x 50, 50,000 constraints: {r['init_time']:.2f} s, "
              f"{r['init_mem']:.0f} MB traced beyond X (target < 1 s, < 200 MB)")
        print(f"MPCKMeans (diagonal), 100,000 x 50, 10,000 constraints: {r['mpck_fit']:.1f} s, "
              f"{r['mpck_iter']} iterations (target < 30 s)")


if __name__ == "__main__":
    main()
