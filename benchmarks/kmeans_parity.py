"""Per-iteration cost of HMRFKMeans with no constraints vs scikit-learn's Lloyd KMeans.

Both start from the same centres and run the same number of Lloyd iterations
(``tol=0``, fixed ``max_iter``); we report seconds per iteration, the ratio
(target <= 1.5) and whether the labels agree.

    python benchmarks/kmeans_parity.py [--n 200000] [--d 50] [--k 10] [--iters 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.cluster import KMeans as SkKMeans
from sklearn.datasets import make_blobs

from hmrf import HMRFKMeans


def best_time(fn, repeats):
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    X, _ = make_blobs(args.n, n_features=args.d, centers=args.k, cluster_std=8.0, random_state=0)
    rng = np.random.default_rng(0)
    init = X[rng.choice(args.n, args.k, replace=False)]

    sk, t_sk = best_time(lambda: SkKMeans(args.k, init=init, n_init=1, algorithm="lloyd", tol=0.0,
                                          max_iter=args.iters).fit(X), args.repeats)
    ours, t_ours = best_time(lambda: HMRFKMeans(args.k, init=init, tol=0.0, max_iter=args.iters).fit(X),
                             args.repeats)
    per_sk, per_ours = t_sk / sk.n_iter_, t_ours / ours.n_iter_
    print(f"data: {args.n} x {args.d}, k={args.k}, best of {args.repeats} runs")
    print(f"{'':22s}{'iterations':>12s}{'total s':>10s}{'s / iter':>10s}")
    print(f"{'scikit-learn KMeans':22s}{sk.n_iter_:12d}{t_sk:10.3f}{per_sk:10.4f}")
    print(f"{'hmrf HMRFKMeans':22s}{ours.n_iter_:12d}{t_ours:10.3f}{per_ours:10.4f}")
    print(f"ratio (hmrf / sklearn) per iteration: {per_ours / per_sk:.2f}   (target <= 1.5)")
    print(f"labels identical: {np.array_equal(ours.labels_, sk.labels_)}; "
          f"objective {ours.objective_:.6g} vs inertia {sk.inertia_:.6g}")


if __name__ == "__main__":
    main()
