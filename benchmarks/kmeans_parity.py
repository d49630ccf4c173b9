"""Per-iteration cost of HMRFKMeans with no constraints vs scikit-learn's Lloyd KMeans.

Both start from the same centres and run the same number of Lloyd iterations
(``tol=0``, fixed ``max_iter``); the two fits alternate ``--repeats`` times and we
report seconds per iteration (median, min, max), the median of the paired ratios
(target <= 1.5) and whether the labels agree.

    python benchmarks/kmeans_parity.py [--n 200000] [--d 50] [--k 10] [--iters 20] [--repeats 15]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.cluster import KMeans as SkKMeans
from sklearn.datasets import make_blobs

from hmrf import HMRFKMeans


def interleaved(fns, repeats):
    """Run the callables alternately ``repeats`` times; return last results and times.

    Alternating (rather than timing one after the other) exposes both to the same
    drift of a shared virtual machine, whose speed wanders by +-30 % over minutes.
    """
    times = [[] for _ in fns]
    out = [None] * len(fns)
    for _ in range(repeats):
        for j, fn in enumerate(fns):
            t0 = time.perf_counter()
            out[j] = fn()
            times[j].append(time.perf_counter() - t0)
    return out, [np.asarray(t) for t in times]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args(argv)

    X, _ = make_blobs(args.n, n_features=args.d, centers=args.k, cluster_std=8.0, random_state=0)
    rng = np.random.default_rng(0)
    init = X[rng.choice(args.n, args.k, replace=False)]

    (sk, ours), (t_sk, t_ours) = interleaved([
        lambda: SkKMeans(args.k, init=init, n_init=1, algorithm="lloyd", tol=0.0, max_iter=args.iters).fit(X),
        lambda: HMRFKMeans(args.k, init=init, tol=0.0, max_iter=args.iters).fit(X),
    ], args.repeats)
    per_sk, per_ours = t_sk / sk.n_iter_, t_ours / ours.n_iter_
    ratios = per_ours / per_sk  # paired: run r of each
    print(f"data: {args.n} x {args.d}, k={args.k}; {args.repeats} interleaved runs of "
          f"{args.iters} iterations")
    print(f"{'':22s}{'s / iter (median)':>18s}{'min':>9s}{'max':>9s}")
    print(f"{'scikit-learn KMeans':22s}{np.median(per_sk):18.4f}{per_sk.min():9.4f}{per_sk.max():9.4f}")
    print(f"{'hmrf HMRFKMeans':22s}{np.median(per_ours):18.4f}{per_ours.min():9.4f}{per_ours.max():9.4f}")
    q1, q3 = np.percentile(ratios, [25, 75])
    print(f"ratio (hmrf / sklearn) per iteration: median {np.median(ratios):.2f} "
          f"(quartiles {q1:.2f}-{q3:.2f}; best-of {per_ours.min() / per_sk.min():.2f})   (target <= 1.5)")
    print(f"labels identical: {np.array_equal(ours.labels_, sk.labels_)}; "
          f"objective {ours.objective_:.6g} vs inertia {sk.inertia_:.6g}")


if __name__ == "__main__":
    main()
