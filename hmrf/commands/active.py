"""``hmrf active``: active constraint acquisition curves (Basu 2005, ch. 5; Xiong et al. 2014)."""

from __future__ import annotations

import sys

from ..estimators import ESTIMATORS, estimator_key
from . import _common as common

SUMMARY = "active constraint selection: learning curve against the number of queries"

#: selector name -> what it is
SELECTORS = {
    "random": "RandomPairs: random unasked, unimplied pairs",
    "explore": "Explore: farthest-first traversal only (Basu 2005, Fig. 5.1)",
    "ec": "ExploreConsolidate (Basu 2005, Figs. 5.1-5.2)",
    "minmax": "MinMax: Explore, then Min-Max consolidation (Mallapragada et al. 2008)",
    "npu": "NPU: normalized point-based uncertainty (Xiong et al. 2014)",
    "cobras": "COBRAS: super-instances split by k-means, merged by queries (Van Craenendonck "
              "et al. 2018)",
}

#: --estimator for the selector's own clustering (COBRAS has one)
OWN = "own"

DESCRIPTION = """\
Each run lets the selector ask an oracle "same cluster?" about pairs of points, up to
the largest budget; after the first b queries, for every budget b, the estimator
clusters all points with the answers (and their transitive closure; with COBRAS also
its super-instances) and is scored against the true classes, on all points and on the
points no query involved. The oracle answers from the true classes (bundled data set,
or --labels with --data), or you answer at the terminal with --interactive.

The default, COBRAS's queries clustered by MPCKMeans, is at or above the reference
implementation of COBRAS (cobras-ts) at every data set and budget of the table in
docs/active_learning.md (which standardises wine and breast_cancer only: the others
ran as with --no-standardize); --estimator own scores COBRAS's own clustering instead.

Writes in --out: active-<data>-<selector>-<estimator>.csv (one row per run and budget)
and .png.

Examples:
  hmrf active --dataset wine --budget 100 --runs 10
  hmrf active --dataset wine --selector npu --estimator mpckmeans --budget 100 --runs 10"""


def add_parser(sub):
    def epilog():
        estimators = common.estimator_listing() + "\n" + common.listing(
            "", {OWN: "the selector's own clustering (--selector cobras)"}).split("\n", 1)[1]
        return "\n\n".join([common.listing("selectors", SELECTORS), estimators, common.emission_listing(),
                            common.dataset_listing()])

    p = common.add_parser(sub, "active", summary=SUMMARY, description=DESCRIPTION, epilog=epilog)
    common.add_data_options(p, labels_help="true class of every row of --data: the oracle's "
                                           "answers and the reference of the scores",
                            standardize=True)
    p.add_argument("--selector", default="cobras", choices=list(SELECTORS), metavar="NAME",
                   help="query selector, listed below")
    p.add_argument("--estimator", default="mpckmeans", type=estimator_key, choices=[*ESTIMATORS, OWN],
                   metavar="NAME",
                   help="the estimator that clusters with the answers, listed below")
    p.add_argument("--budget", type=common.nonneg_int, default=100, help="largest number of queries")
    p.add_argument("--step", type=common.pos_int, default=10, help="budget step of the curve")
    p.add_argument("--runs", type=common.pos_int, default=10, help="repetitions")
    p.add_argument("--emission", metavar="NAME",
                   help="emission family of the estimator and of the selector's distances, listed below "
                        f"(default: {common.TEXT_EMISSION}; else the estimator's own, sqeuclidean "
                        "for most)")
    common.add_w_option(p)
    p.add_argument("--noise", type=common.fraction, default=0.0, help="oracle error rate")
    p.add_argument("--no-closure", action="store_true",
                   help="cluster with the answered pairs only, not their transitive closure")
    p.add_argument("--seed", type=common.seed_int, default=0, help="random seed")
    p.add_argument("--interactive", action="store_true",
                   help="answer the queries yourself at the terminal (one run)")
    common.add_run_options(p, out="results/active")
    common.add_plugin_option(p)
    return p


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
    if name == "cobras":
        return active.COBRAS(k, emission=emission)
    raise ValueError(f"unknown selector {name!r}; choose from {', '.join(SELECTORS)}.")


def run(args) -> int:
    import numpy as np

    from ..active import TerminalOracle
    from ..estimators import make_estimator
    from ..experiments import active_curve
    from ..experiments.table import legend

    own = args.estimator == OWN
    if own and args.selector != "cobras":
        raise ValueError(f"--estimator {OWN} needs a selector with a clustering of its own: "
                         "--selector cobras.")
    if own and args.w is not None:
        raise ValueError(f"--estimator {OWN} has no constraint weight w to set.")
    if args.w is not None and not ESTIMATORS[args.estimator].takes_w:
        raise ValueError(f"{args.estimator} has no constraint weight w to set.")
    if args.interactive and args.n_jobs not in (None, 1):
        raise ValueError("--interactive asks one run at a time: drop --n-jobs.")
    if not own:
        make_estimator(args.estimator, 2, args.emission, args.w)  # settings checked before reading
    data = common.load(args, need_labels=True, complete_labels=True)
    X, y = data.X, data.y
    k = int(np.unique(y).shape[0])
    if own:  # COBRAS's own clustering is free in its family, like an estimator without a fixed one
        emission = args.emission if args.emission is not None else (
            "cosine" if common.is_text(data) else None)
    else:
        emission = common.emission_for(args.emission, ESTIMATORS[args.estimator], data)
    clusterer = None if own else make_estimator(args.estimator, k, emission, args.w)
    selector = make_selector(args.selector, k, clusterer, emission=emission)
    budgets = list(range(0, args.budget + 1, args.step))
    if budgets[-1] != args.budget:
        budgets.append(args.budget)
    runs, factory = args.runs, None
    if args.interactive:
        runs = 1

        def factory(run, budget):
            return TerminalOracle(data.raw, budget=budget)  # shown as in the file

    print(f"data       {common.describe(data)}, standardized={data.source['standardized']}")
    print(f"selector   {args.selector}: {SELECTORS[args.selector]}")
    print(f"estimator  {args.estimator}  closure={not args.no_closure}  emission "
          f"{common.emission_text(args.emission, emission)}")
    print(f"budgets    {budgets[0]}..{budgets[-1]} step {args.step}, {runs} run(s), seed {args.seed}")
    sys.stdout.flush()
    stem = f"active-{common.safe_name(data.name)}-{args.selector}-{args.estimator}"
    with common.OutputDir(args.out) as out:
        curve = active_curve(selector, clusterer, X, y, budgets=budgets, n_runs=runs,
                             closure=not args.no_closure, noise=args.noise, oracle_factory=factory,
                             random_state=args.seed, dataset=data.name,
                             n_jobs=None if args.interactive else args.n_jobs,
                             progress=not (args.no_progress or args.interactive)
                             and f"active: {data.name}")
        curve.to_csv(out.file(stem + ".csv"))
        wrote = [out.file(stem + ".csv")]
        if common.has_matplotlib():
            curve.plot(path=out.file(stem + ".png"))
            wrote.append(out.file(stem + ".png"))
    metrics = ("pairwise_f", "pairwise_f_unqueried", "nmi", "ari", "n_constraints")
    print()
    print(curve.table(metrics))
    print()
    print(legend(metrics))
    print(f"\nselection time per run: {curve.select_seconds.mean():.2f} s "
          f"(queries asked: {int(curve.n_queries.min())}..{int(curve.n_queries.max())})")
    if curve.failures:
        print(f"{len(curve.failures)} clustering(s) failed, e.g. {curve.failures[0]}")
    print("wrote " + ", ".join(wrote))
    return 0
