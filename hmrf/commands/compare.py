"""``hmrf compare``: the E-step engines side by side (Basu 2005, §4.5.4, Fig. 4.13)."""

from __future__ import annotations

import csv
import time

from . import _common as common

SUMMARY = "compare E-step engines inside one estimator (thesis Fig. 4.13)"

DESCRIPTION = """\
The engine study of the thesis's Fig. 4.13, on a bundled data set or your own
(--data with --labels, the true classes). Each run is a random split into --folds folds
(2 in Basu 2005, §4.5.2); the constraints are random pairs of the training part (must-link
when the classes agree), the estimator clusters all points with each engine, and NMI is
measured on the held-out fold. On every split each engine runs EM once from the same
initial state, with the same constraints, so that the engines alone differ (--n-init 1,
the thesis's protocol; --n-init auto lets each engine keep the best of several starts,
as the estimators do by default).

Besides NMI (which often coincides between engines) it reports, per engine and number
of constraints, what tells engines apart: the final objective J against the best engine
on the same split, the gap between each E-step's energy and the best lower bound on the
same problem (the engine's own LP, TRW-S or MILP bound, else the LP relaxation solved
for it: --bound lp), EM iterations, and the time in the engine apart from the whole fit.
Numba kernels are compiled before anything is timed; the compile time is printed apart.

Writes in --out: compare.csv (one row per fit), compare-summary.csv (one row per engine
and number of constraints) and compare.png (four panels).

Example (the README's main job):
  hmrf compare --dataset iris --engines icm,bp,lp --constraints 0,10,25,50,100,200,400 --runs 10"""


def add_parser(sub):
    def epilog():
        return "\n\n".join([common.engine_listing(), common.emission_listing(), common.dataset_listing()])

    p = common.add_parser(sub, "compare", summary=SUMMARY, description=DESCRIPTION, epilog=epilog)
    common.add_data_options(p, labels_help="true class of every row of --data (needed with --data)")
    p.add_argument("--engines", default="icm,bp,lp", metavar="LIST",
                   help="comma-separated engine names, listed below, each with settings if any: "
                        "icm,bp(polish=icm),lp")
    p.add_argument("--estimator", default="hmrf-kmeans", metavar="NAME",
                   help="an estimator with an E-step engine: hmrf-kmeans, hmrf-kmeans-i, pckmeans, "
                        "mpckmeans")
    p.add_argument("--constraints", default="0,10,25,50,100,200,400", metavar="LIST|A:B:STEP",
                   help="numbers of random pairs")
    p.add_argument("--runs", type=common.pos_int, default=10, help="runs of cross-validation")
    p.add_argument("--folds", type=common.pos_int, default=2, help="folds per run (the thesis: 2)")
    p.add_argument("--emission", metavar="NAME",
                   help=f"emission family, listed below (default: {common.TEXT_EMISSION}; else the "
                        "estimator's own, sqeuclidean for most)")
    common.add_w_option(p)
    p.add_argument("--bound", default="lp", choices=("lp", "none"),
                   help="reference lower bound of the E-step gap: lp solves the LP relaxation of "
                        "each E-step that has no bound as good; none uses the engines' own bounds")
    p.add_argument("--n-init", type=_n_init, default=1, metavar="N|auto",
                   help="EM runs per fit: 1 runs every engine from the same initial state; auto "
                        "keeps the best of several starts")
    p.add_argument("--seed", type=common.seed_int, default=0,
                   help="random seed (splits, constraints, initial states)")
    common.add_run_options(p, out="results/compare")
    common.add_plugin_option(p)
    return p


def _n_init(text):
    """argparse type: ``auto`` or an integer >= 1."""
    return "auto" if text.strip().lower() == "auto" else common.pos_int(text)


def run(args) -> int:
    from ..estimators import ESTIMATORS, estimator_key, make_estimator
    from ..experiments.engines import (
        SUMMARY_COLUMNS,
        compare_engines,
        format_engine_summary,
        plot_engine_summary,
        summarise_engines,
    )
    from ..inference import ENGINES

    engines = common.names(args.engines, ENGINES, "engine", "--engines")
    args.estimator = estimator_key(args.estimator)
    if args.estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {args.estimator!r}; choose from {', '.join(ESTIMATORS)}.")
    if not ESTIMATORS[args.estimator].takes_engine:
        make_estimator(args.estimator, 2, engine="icm")  # raises: this estimator has no engine
    points = common.parse_range(args.constraints, integer=True)
    if args.folds < 2:
        raise ValueError("--folds must be >= 2.")
    data = common.load(args, need_labels=True, complete_labels=True)
    emission = common.emission_for(args.emission, ESTIMATORS[args.estimator], data)
    make_estimator(args.estimator, 2, emission, args.w)  # settings checked before any fit
    with common.OutputDir(args.out) as out:
        t0 = time.perf_counter()
        table = compare_engines(data.X, data.y, engines, estimator=args.estimator,
                                emission=emission, w=args.w, points=points, runs=args.runs,
                                folds=args.folds, bound=args.bound, n_init=args.n_init,
                                random_state=args.seed,
                                n_jobs=args.n_jobs,
                                progress=False if args.no_progress else f"compare: {data.name}")
        elapsed = time.perf_counter() - t0
        rows = summarise_engines(table)
        table.to_csv(out.file("compare.csv"))
        with open(out.file("compare-summary.csv"), "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(SUMMARY_COLUMNS))
            w.writeheader()
            w.writerows({k: repr(float(v)) if isinstance(v, float) else v for k, v in r.items()}
                        for r in rows)
        wrote = [out.file("compare.csv"), out.file("compare-summary.csv")]
        if common.has_matplotlib():
            plot_engine_summary(rows, out.file("compare.png"),
                                f"{data.name}: E-step engines in {args.estimator}")
            wrote.append(out.file("compare.png"))
    w_text = args.w if args.w is not None else "default"
    print(f"data {common.describe(data)}; {args.estimator}, emission "
          f"{common.emission_text(args.emission, emission)}, w={w_text}; "
          f"{args.runs} run(s) x {args.folds}-fold CV, n_init={args.n_init}; bound {args.bound}")
    print(format_engine_summary(rows))
    print(f"total {elapsed:.1f} s")
    print("wrote " + ", ".join(wrote))
    return 0
