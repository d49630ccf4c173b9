"""``hmrf curve``: learning curves of the thesis's experiments (Basu 2005, §3.5, §4.5, §5.5).

Example::

    hmrf curve --dataset 3-news-similar --estimator hmrf-kmeans --emission cosine \\
        --constraints 0:1000:100 --runs 20 --folds 2 --out results/curve

prints the mean ± std table and writes ``DIR/curve.csv`` and ``DIR/curve-<metric>.png``.
"""

from __future__ import annotations

import os

import numpy as np

from ..datasets import DATASETS, load_dataset

#: CLI name -> what it is
ESTIMATORS = {
    "hmrf-kmeans": "HMRF-KMeans-I-C: constraints in initialisation and assignment (ch. 4)",
    "hmrf-kmeans-i": "HMRF-KMeans-I: constraints in the initialisation only (w = 0)",
    "pckmeans": "PCKMeans (squared Euclidean only)",
    "mpckmeans": "MPCKMeans: PCKMeans plus a learned diagonal Mahalanobis metric",
    "copkmeans": "COP-KMeans: all constraints hard",
    "seeded-kmeans": "Seeded-KMeans (labels only)",
    "constrained-kmeans": "Constrained-KMeans (labels only)",
    "kmeans": "unsupervised KMeans from perturbed global centroids (the thesis's random KMeans)",
}


def add_parser(sub):
    import argparse

    epilog = "estimators:\n" + "\n".join(f"  {k:<19} {v}" for k, v in ESTIMATORS.items())
    p = sub.add_parser("curve", help="learning curve: scores vs amount of supervision",
                       description="Learning curves as in Basu (2005), §3.5, §4.5, §5.5: "
                                   "supervision drawn from the training part, NMI / pairwise F "
                                   "on the held-out part.",
                       epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="iris", help=f"one of {sorted(DATASETS)}")
    p.add_argument("--estimator", action="append", metavar="NAME",
                   help=f"one of {sorted(ESTIMATORS)}; repeat or comma-separate to compare several "
                        "(default hmrf-kmeans)")
    p.add_argument("--emission", default="sqeuclidean",
                   help="emission family (default sqeuclidean)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--constraints", metavar="A:B:STEP",
                     help="numbers of random pairs, e.g. 0:1000:100 (inclusive) or 0,50,200")
    how.add_argument("--seeds", metavar="A:B:STEP", help="seed fractions, e.g. 0:1:0.1")
    p.add_argument("--noise", default="0", metavar="F|A:B:STEP",
                   help="noise fraction(s) (default 0)")
    p.add_argument("--runs", type=int, default=1,
                   help="repetitions of the cross-validation (default 1)")
    p.add_argument("--folds", type=int, default=None, help="k-fold cross-validation (default 10)")
    p.add_argument("--test-fraction", type=float, default=None,
                   help="instead of --folds: one random split per run holding out this fraction")
    p.add_argument("--w", type=float, default=1.0, help="constraint weight (default 1)")
    p.add_argument("--engine", default=None,
                   help="E-step inference engine (icm, bp, lp, exact; default: the estimator's own)")
    p.add_argument("--metrics", default="nmi,pairwise_f,objective", help="comma-separated")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed (data sample, splits, supervision)")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel fits (joblib)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write curve.csv and curve-<metric>.png here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def parse_range(text: str, integer: bool) -> list:
    """``"a:b:step"`` (both ends included) or ``"x,y,z"`` as a list of numbers.

    >>> parse_range("0:1000:250", integer=True)
    [0, 250, 500, 750, 1000]
    >>> parse_range("0:1:0.25", integer=False)
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    conv = int if integer else float
    try:
        if ":" in text:
            parts = [float(v) for v in text.split(":")]
            if len(parts) != 3 or parts[2] <= 0 or parts[1] < parts[0]:
                raise ValueError
            a, b, step = parts
            m = int(np.floor((b - a) / step + 1e-9))
            vals = [round(a + i * step, 10) for i in range(m + 1)]
        else:
            vals = [float(v) for v in text.split(",") if v.strip()]
        if integer and any(v != int(v) for v in vals):
            raise ValueError
    except ValueError:
        kind = "integers" if integer else "numbers"
        raise ValueError(f"cannot read {text!r} as A:B:STEP (A <= B, STEP > 0) or a comma "
                         f"list of {kind}.") from None
    if not vals:
        raise ValueError(f"{text!r} gives no points.")
    return [conv(v) for v in vals]


def make_estimator(name, k, emission, w, engine):
    """The unfitted estimator behind a CLI name (random_state set by the driver)."""
    from .. import estimators as est

    inf = {} if engine is None else {"inference": engine}  # None: the estimator's default
    if name == "hmrf-kmeans":
        return est.HMRFKMeans(k, emission=emission, w=w, **inf)
    if name == "hmrf-kmeans-i":
        return est.HMRFKMeans(k, emission=emission, w=0.0, **inf)
    if name == "pckmeans":
        if emission not in ("sqeuclidean", "euclidean"):
            raise ValueError(f"pckmeans uses squared Euclidean distance; --emission {emission} "
                             "is not possible.")
        return est.PCKMeans(k, w=w, **inf)
    if name == "mpckmeans":
        if emission not in ("sqeuclidean", "euclidean", "mahalanobis"):
            raise ValueError(f"mpckmeans learns a Mahalanobis metric; --emission {emission} "
                             "is not possible.")
        return est.MPCKMeans(k, w=w, **inf)
    if name == "copkmeans":
        return est.COPKMeans(k, emission=emission)
    if name == "seeded-kmeans":
        return est.SeededKMeans(k, emission=emission)
    if name == "constrained-kmeans":
        return est.ConstrainedKMeans(k, emission=emission)
    if name == "kmeans":
        return est.KMeans(k, emission=emission, init="neighborhoods")
    raise ValueError(f"unknown estimator {name!r}; choose from {sorted(ESTIMATORS)}.")


def run(args) -> int:
    from ..experiments import learning_curve

    given = args.estimator or ["hmrf-kmeans"]
    names = [n.strip() for a in given for n in a.split(",") if n.strip()]
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    if args.seeds is not None:
        supervision, points = "labels", parse_range(args.seeds, integer=False)
    else:
        points = parse_range(args.constraints or "0:500:100", integer=True)
        supervision = "constraints"
    label_only = {"seeded-kmeans", "constrained-kmeans"} & set(names)
    if supervision == "constraints" and label_only:
        raise ValueError(f"{sorted(label_only)} take labelled seeds: use --seeds instead of "
                         "--constraints.")
    noise = parse_range(args.noise, integer=False)
    folds = args.folds if args.folds is not None or args.test_fraction is not None else 10
    X, y = load_dataset(args.dataset, random_state=args.seed)
    k = int(np.unique(y).shape[0])
    models = {n: make_estimator(n, k, args.emission, args.w, args.engine) for n in names}
    table = learning_curve(models, X, y, supervision=supervision, points=points, runs=args.runs,
                           folds=folds, test_fraction=args.test_fraction, noise=noise,
                           metrics=metrics, random_state=args.seed, n_jobs=args.n_jobs,
                           progress=not args.no_progress, errors="record")
    print(f"dataset {args.dataset} (n={X.shape[0]}, d={X.shape[1]}, k={k}), "
          f"emission {args.emission}, "
          f"{args.runs} run(s) x {folds or 1} fold(s); scores on held-out points")
    print(table.format_summary(metrics))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        csv = os.path.join(args.out, "curve.csv")
        table.to_csv(csv)
        print(f"wrote {csv}")
        for m in metrics:
            png = os.path.join(args.out, f"curve-{m}.png")
            _plot(table, m, png, f"{args.dataset} ({args.emission})")
            print(f"wrote {png}")
    return 0


def _plot(table, metric, path, title):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    table.plot(metric, ax=ax)
    ax.set_title(title)
    fig.savefig(path, dpi=100)
