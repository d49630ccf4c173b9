"""``hmrf curve``: learning curves of the thesis's experiments (Basu 2005, §3.5, §4.5, §5.5)."""

from __future__ import annotations

import os

from ..estimators import ESTIMATORS, estimator_key
from . import _common as common
from ._common import parse_range

SUMMARY = "learning curves: scores against the amount of supervision"

DESCRIPTION = """\
Learning curves as in Basu (2005), §3.5, §4.5 and §5.5: runs of k-fold cross-validation;
at every point the supervision (random pairs with --constraints, or labelled seeds with
--seeds) is drawn from the training part only, each estimator clusters all points, and
NMI / pairwise F are measured on the held-out part. Every estimator sees the same splits
and supervision. Works on a bundled data set or your own (--data with --labels, the
true classes).

Fit times exclude compilation: each estimator is first fitted, untimed, on the data
(numba kernels compiled or loaded then). Writes in --out: curve.csv (one row per fit)
and curve-<metric>.png per metric.

Example:
  hmrf curve --dataset 3-news-similar --estimator hmrf-kmeans --emission cosine \\
      --constraints 0:1000:100 --runs 20 --folds 2"""


#: what runs without --estimator, --constraints / --seeds, --folds / --test-fraction
DEFAULT_ESTIMATOR, DEFAULT_CONSTRAINTS, DEFAULT_FOLDS = "hmrf-kmeans", "0:500:100", 10


def add_parser(sub):
    p = common.add_parser(sub, "curve", summary=SUMMARY, description=DESCRIPTION,
                          epilog=common.full_listing)
    common.add_data_options(p, labels_help="true class of every row of --data (needed with --data)")
    p.add_argument("--estimator", action="append", metavar="NAME",
                   help="estimator(s), listed below; repeat or comma-separate to compare several "
                        f"(default {DEFAULT_ESTIMATOR})")
    p.add_argument("--emission", metavar="NAME",
                   help=f"emission family, listed below (default: {common.TEXT_EMISSION}; else each "
                        "estimator's own, sqeuclidean for most)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--constraints", metavar="LIST|A:B:STEP",
                     help="numbers of random pairs, e.g. 0:1000:100 (both ends included) or "
                          f"0,50,200 (default {DEFAULT_CONSTRAINTS})")
    how.add_argument("--seeds", metavar="LIST|A:B:STEP",
                     help="seed fractions instead of pairs, e.g. 0:1:0.1")
    p.add_argument("--noise", default="0", metavar="F|LIST|A:B:STEP",
                   help="fraction(s) of the supervision made wrong")
    p.add_argument("--runs", type=common.pos_int, default=1, help="repetitions of the cross-validation")
    p.add_argument("--folds", type=common.pos_int, default=None,
                   help=f"k-fold cross-validation (default {DEFAULT_FOLDS})")
    p.add_argument("--test-fraction", type=common.fraction, default=None,
                   help="instead of --folds: one random split per run holding out this fraction")
    common.add_w_option(p)
    common.own_default(p.add_argument("--engine", metavar="NAME",
                                      help="E-step engine, listed below (default: each estimator's "
                                           "own, %(own)s)"), "inference", "takes_engine")
    p.add_argument("--metrics", default="nmi,pairwise_f,objective",
                   help="comma-separated, from nmi, ari, pairwise_f, pairwise_precision, "
                        "pairwise_recall, objective, n_iter")
    p.add_argument("--seed", type=common.seed_int, default=0,
                   help="random seed (data sample, splits, supervision)")
    common.add_run_options(p, out="results/curve")
    common.add_plugin_option(p)
    return p


def run(args) -> int:
    from functools import partial

    from ..estimators import make_estimator
    from ..experiments import learning_curve
    from ..experiments.engines import warm_up
    from ..experiments.learning import SCORES
    from ..experiments.table import legend

    given = args.estimator or [DEFAULT_ESTIMATOR]
    names = [estimator_key(n) for a in given for n in a.split(",") if n.strip()]
    for n in names:
        if n not in ESTIMATORS:
            raise ValueError(f"unknown estimator {n!r}; choose from {', '.join(ESTIMATORS)}.")
    metrics = common.names(args.metrics, dict.fromkeys(SCORES), "metric", "--metrics")
    if args.seeds is not None:
        supervision, points = "labels", parse_range(args.seeds, integer=False)
    else:
        points = parse_range(args.constraints or DEFAULT_CONSTRAINTS, integer=True)
        supervision = "constraints"
    label_only = sorted(n for n in names if ESTIMATORS[n].supervision == "labels")
    if supervision == "constraints" and label_only:
        raise ValueError(f"{label_only} take labelled seeds: use --seeds instead of --constraints.")
    noise = parse_range(args.noise, integer=False)
    folds = args.folds if args.folds is not None or args.test_fraction is not None else DEFAULT_FOLDS
    if args.folds is not None and args.test_fraction is not None:
        raise ValueError("give --folds or --test-fraction, not both.")
    # --engine and --w apply to the estimators that have them; settings are checked
    # before the data is read or anything is fitted
    if args.engine is not None and not any(ESTIMATORS[n].takes_engine for n in names):
        make_estimator(names[0], 2, engine=args.engine)  # raises: says which estimators have one
    if args.w is not None and not any(ESTIMATORS[n].takes_w for n in names):
        raise ValueError(f"--w: none of {names} has a constraint weight.")

    def build(name, k, data=None):
        spec = ESTIMATORS[name]
        emission = args.emission if data is None else common.emission_for(args.emission, spec, data)
        return make_estimator(name, k, emission, args.w if spec.takes_w else None,
                              args.engine if spec.takes_engine else None)

    for n in names:
        build(n, 2)
    data = common.load(args, need_labels=True, complete_labels=True)
    k = int(len(set(data.y.tolist())))
    models = {n: build(n, k, data) for n in names}
    free = [common.emission_for(args.emission, ESTIMATORS[n], data) for n in names]
    emission = common.emission_text(args.emission, next((e for e in free if e), None))
    nonzero = [int(p) for p in points if p] if supervision == "constraints" else []
    warm = partial(warm_up, X=data.X, y=data.y,
                   n_pairs=sorted({min(nonzero), max(nonzero)}) if nonzero else [0])
    with common.OutputDir(args.out) as out:
        table = learning_curve(models, data.X, data.y, supervision=supervision, points=points,
                               runs=args.runs, folds=folds, test_fraction=args.test_fraction,
                               noise=noise, metrics=metrics, random_state=args.seed,
                               n_jobs=args.n_jobs,
                               progress=False if args.no_progress else f"curve: {data.name}",
                               errors="record", prepare=warm)
        csv_path = out.file("curve.csv")
        table.to_csv(csv_path)
        wrote = [csv_path]
        if common.has_matplotlib():
            for m in metrics:
                png = out.file(f"curve-{m}.png")
                table.plot(m, path=png, title=f"{data.name} (emission: {emission})")
                wrote.append(png)
    print(f"data {common.describe(data)}, emission {emission}, "
          f"{args.runs} run(s) x {folds or 1} fold(s); scores on held-out points (mean ± std)")
    print(table.format_summary(metrics))
    print()
    print(legend(metrics))
    print("wrote " + ", ".join(os.path.relpath(w) if not os.path.isabs(args.out) else w for w in wrote))
    return 0
