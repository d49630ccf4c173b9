"""``hmrf active``: active constraint acquisition curves (Basu 2005, ch. 5; Xiong et al. 2014).

Example::

    hmrf active --dataset wine --selector npu --clusterer mpckmeans --budget 100 --runs 10

prints the learning curve (pairwise F, NMI, ARI against the number of queries, on all
points and on the points never queried) and writes ``DIR/active-<dataset>-<selector>-
<clusterer>.csv`` and ``.png``. ``--interactive`` asks you the queries at the terminal.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from ..datasets import DATASETS, load_dataset

SELECTORS = {
    "random": "RandomPairs: random unasked, unimplied pairs",
    "explore": "Explore: farthest-first traversal only (Basu 2005, Fig. 5.1)",
    "ec": "ExploreConsolidate (Basu 2005, Figs. 5.1-5.2)",
    "minmax": "MinMax: Explore, then Min-Max consolidation (Mallapragada et al. 2008)",
    "npu": "NPU: normalized point-based uncertainty (Xiong et al. 2014)",
}
CLUSTERERS = (
    "mpckmeans",
    "pckmeans",
    "hmrf-kmeans",
    "copkmeans",
    "seeded-kmeans",
    "constrained-kmeans",
    "kmeans",
)


def add_parser(sub):
    p = sub.add_parser(
        "active",
        help="active constraint selection: learning curve vs queries",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--dataset", default="wine", help=f"one of {sorted(DATASETS)} (default wine)")
    p.add_argument(
        "--selector", default="npu", choices=sorted(SELECTORS), help="query selector (default npu)"
    )
    p.add_argument("--clusterer", default="pckmeans", choices=CLUSTERERS, help="estimator (default pckmeans)")
    p.add_argument("--budget", type=int, default=100, help="largest number of queries (default 100)")
    p.add_argument("--step", type=int, default=10, help="budget step of the curve (default 10)")
    p.add_argument("--runs", type=int, default=10, help="repetitions (default 10)")
    p.add_argument(
        "--scale",
        choices=("standard", "none"),
        default="standard",
        help="feature scaling of dense data (default standard: zero mean, unit variance)",
    )
    p.add_argument(
        "--emission",
        default=None,
        help="emission of hmrf-kmeans and of distances (default sqeuclidean)",
    )
    p.add_argument("--w", type=float, default=1.0, help="constraint weight (default 1)")
    p.add_argument("--noise", type=float, default=0.0, help="oracle error rate (default 0)")
    p.add_argument("--no-closure", action="store_true", help="cluster with the answered pairs only")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", default=".", metavar="DIR", help="directory for the CSV and PNG (default .)")
    p.add_argument(
        "--interactive",
        action="store_true",
        help="answer the queries yourself at the terminal (one run)",
    )
    return p


def make_clusterer(name: str, k: int, *, w=1.0, emission=None, random_state=None):
    """The estimator behind a ``--clusterer`` name."""
    from .. import estimators as est

    emission = emission or "sqeuclidean"
    if name == "mpckmeans":
        try:
            from .. import MPCKMeans
        except ImportError as exc:
            raise ImportError(
                "MPCKMeans is not available in this version of hmrf; use --clusterer pckmeans."
            ) from exc
        return MPCKMeans(k, w=w, random_state=random_state)
    if name == "pckmeans":
        return est.PCKMeans(k, w=w, random_state=random_state)
    if name == "hmrf-kmeans":
        return est.HMRFKMeans(k, emission=emission, w=w, random_state=random_state)
    if name == "copkmeans":
        return est.COPKMeans(k, emission=emission, random_state=random_state)
    if name == "seeded-kmeans":
        return est.SeededKMeans(k, emission=emission, random_state=random_state)
    if name == "constrained-kmeans":
        return est.ConstrainedKMeans(k, emission=emission, random_state=random_state)
    if name == "kmeans":
        return est.KMeans(k, emission=emission, random_state=random_state)
    raise ValueError(f"unknown clusterer {name!r}; choose from {CLUSTERERS}.")


def make_selector(name: str, k: int, clusterer=None, *, emission=None):
    """The selector behind a ``--selector`` name."""
    from .. import active

    if name == "random":
        return active.RandomPairs()
    if name == "explore":
        return active.Explore(k, emission=emission)
    if name == "ec":
        return active.ExploreConsolidate(k, emission=emission)
    if name == "minmax":
        return active.MinMax(k, emission=emission)
    if name == "npu":
        return active.NPU(clusterer, emission=emission)
    raise ValueError(f"unknown selector {name!r}; choose from {sorted(SELECTORS)}.")


def scale(X, how: str):
    """Standardise dense features (zero mean, unit variance); sparse data is left alone."""
    if how == "none" or not isinstance(X, np.ndarray):
        return X
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def run(args) -> int:
    from ..active import TerminalOracle
    from ..experiments import active_curve

    if args.budget < 0 or args.step < 1 or args.runs < 1:
        raise ValueError("--budget must be >= 0, --step >= 1 and --runs >= 1.")
    X_raw, y = load_dataset(args.dataset, random_state=args.seed)
    X = scale(X_raw, args.scale)
    k = int(np.unique(y).shape[0])
    clusterer = make_clusterer(args.clusterer, k, w=args.w, emission=args.emission)
    selector = make_selector(args.selector, k, clusterer, emission=args.emission)
    budgets = list(range(0, args.budget + 1, args.step))
    if budgets[-1] != args.budget:
        budgets.append(args.budget)
    runs, factory = args.runs, None
    if args.interactive:
        runs = 1

        def factory(run, budget):
            return TerminalOracle(X_raw, budget=budget)  # shown unscaled

    print(f"dataset    {args.dataset} (n={X.shape[0]}, d={X.shape[1]}, k={k}, scaling={args.scale})")
    print(f"selector   {args.selector}: {SELECTORS[args.selector]}")
    print(f"clusterer  {args.clusterer}  w={args.w}  closure={not args.no_closure}")
    print(f"budgets    {budgets[0]}..{budgets[-1]} step {args.step}, {runs} run(s), seed {args.seed}")
    sys.stdout.flush()
    curve = active_curve(
        selector,
        clusterer,
        X,
        y,
        budgets=budgets,
        n_runs=runs,
        closure=not args.no_closure,
        noise=args.noise,
        oracle_factory=factory,
        random_state=args.seed,
        dataset=args.dataset,
        progress=lambda r, n: print(f"  run {r + 1}/{n} done", file=sys.stderr),
    )
    print()
    print(curve.table())
    print(
        f"\nselection time per run: {curve.select_seconds.mean():.2f} s "
        f"(queries asked: {int(curve.n_queries.min())}..{int(curve.n_queries.max())})"
    )
    if curve.failures:
        print(f"{len(curve.failures)} clustering(s) failed, e.g. {curve.failures[0]}")
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"active-{args.dataset}-{args.selector}-{args.clusterer}")
    curve.to_csv(stem + ".csv")
    print(f"wrote {stem}.csv")
    try:
        curve.plot(path=stem + ".png")
        print(f"wrote {stem}.png")
    except ImportError:  # pragma: no cover - matplotlib is optional
        print("matplotlib is not installed: no plot")
    return 0
