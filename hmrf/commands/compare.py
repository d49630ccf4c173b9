"""``hmrf compare``: E-step inference engines side by side (Basu 2005, §4.5.4, Fig. 4.13).

Example (the README's main job, thesis Fig. 4.13)::

    hmrf compare --dataset iris --engines icm,bp,lp --constraints 0,10,25,50,100,200,400 --runs 10

For every run a random 2-fold split (§4.5.2); the constraints are random pairs of the
training half (must-link if the classes agree, else cannot-link, unit weights); HMRF-
KMeans with each engine clusters all points; NMI is measured on the held-out half;
both folds are used. Every engine sees the same splits, constraints and initial
random state. Prints mean NMI, mean fit time and the mean final objective (eq. 4.10,
lower is better) per engine and constraint count,
writes ``DIR/compare.csv`` (one row per fit), ``DIR/compare-summary.csv`` and, when
matplotlib is installed, ``DIR/compare.png``.
"""

from __future__ import annotations

import csv
import os
import time

import numpy as np

from ..datasets import DATASETS, load_dataset
from .curve import parse_range

#: CLI engine names -> (description, factory of the engine)
ENGINES = {
    "icm": "iterated conditional modes (§4.4.4)",
    "bp": "loopy max-product belief propagation (App. A.1)",
    "bp+icm": "belief propagation, then ICM polish",
    "bp-trw": "tree-reweighted max-product",
    "lp": "Kleinberg-Tardos LP relaxation + randomized rounding (App. A.2)",
    "lp+icm": "LP relaxation + rounding, then ICM polish",
    "exact": "exact MILP (HiGHS); small problems only",
}


def make_engine(name):
    """The inference engine behind a CLI engine name."""
    from ..inference import ICM, BeliefPropagation, ExactMILP, LPRelaxation

    factories = {
        "icm": ICM,
        "bp": BeliefPropagation,
        "bp+icm": lambda: BeliefPropagation(polish="icm"),
        "bp-trw": lambda: BeliefPropagation(reweight="trw", damping=0.5, max_iter=200),
        "lp": LPRelaxation,
        "lp+icm": lambda: LPRelaxation(polish="icm"),
        "exact": lambda: ExactMILP(time_limit=30.0),
    }
    if name not in factories:
        raise ValueError(f"unknown engine {name!r}; choose from {', '.join(ENGINES)}.")
    return factories[name]()


def add_parser(sub):
    p = sub.add_parser("compare", help="compare E-step inference engines (thesis Fig. 4.13)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="iris", help=f"one of {sorted(DATASETS)}")
    p.add_argument("--engines", default="icm,bp,lp",
                   help=f"comma-separated, from {', '.join(ENGINES)} (default icm,bp,lp)")
    p.add_argument("--constraints", default="0,10,25,50,100,200,400", metavar="LIST|A:B:STEP",
                   help="numbers of random pairs (default 0,10,25,50,100,200,400)")
    p.add_argument("--runs", type=int, default=10, help="runs of 2-fold cross-validation (default 10)")
    p.add_argument("--folds", type=int, default=2, help="folds per run (default 2, as in §4.5.2)")
    p.add_argument("--emission", default="sqeuclidean", help="emission family (default sqeuclidean)")
    p.add_argument("--w", type=float, default=1.0, help="constraint weight (default 1, unit costs)")
    p.add_argument("--seed", type=int, default=0, help="random seed (splits, constraints, inits)")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel fits (joblib)")
    p.add_argument("--out", default=os.path.join("results", "compare"), metavar="DIR",
                   help="output directory (default results/compare)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def summarise(table, engines, points) -> list:
    """Mean/std NMI and mean fit time per (engine, number of constraints)."""
    rows = []
    for point in points:
        for name in engines:
            recs = [r for r in table if r["estimator"] == name and r["point"] == point]
            ok = [r for r in recs if not r.get("error")]
            nmi = np.array([r["nmi"] for r in ok], dtype=np.float64)
            obj = np.array([r["objective"] for r in ok], dtype=np.float64)
            t = np.array([r["fit_time"] for r in recs], dtype=np.float64)
            rows.append(dict(engine=name, constraints=point, n_fits=len(ok),
                             n_failed=len(recs) - len(ok),
                             nmi_mean=float(nmi.mean()) if nmi.size else np.nan,
                             nmi_std=float(nmi.std(ddof=1)) if nmi.size > 1 else 0.0,
                             objective_mean=float(obj.mean()) if obj.size else np.nan,
                             time_mean=float(t.mean()) if t.size else np.nan))
    return rows


def format_table(rows, engines, points) -> str:
    """Constraint counts down; per engine: NMI (mean ± std), mean fit time, mean objective."""
    cell = {(r["engine"], r["constraints"]): r for r in rows}
    head = ["constraints", *(f"{e} NMI" for e in engines), *(f"{e} time" for e in engines),
            *(f"{e} objective" for e in engines)]
    body = []
    for p in points:
        line = [str(p)]
        for e in engines:
            r = cell[(e, p)]
            fail = f" ({r['n_failed']} failed)" if r["n_failed"] else ""
            line.append(f"{r['nmi_mean']:.3f} ± {r['nmi_std']:.3f}{fail}")
        line += [f"{cell[(e, p)]['time_mean']:.3f}s" for e in engines]
        line += [f"{cell[(e, p)]['objective_mean']:.3f}" for e in engines]
        body.append(line)
    width = [max(len(x) for x in col) for col in zip(head, *body)]
    return "\n".join("  ".join(x.rjust(w) for x, w in zip(line, width)) for line in [head, *body])


def plot(rows, engines, path, title) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    ax_nmi, ax_t = fig.subplots(1, 2)
    for e in engines:
        rs = sorted((r for r in rows if r["engine"] == e), key=lambda r: r["constraints"])
        x = np.array([r["constraints"] for r in rs], dtype=float)
        mu = np.array([r["nmi_mean"] for r in rs])
        sem = np.array([r["nmi_std"] / np.sqrt(max(r["n_fits"], 1)) for r in rs])
        (line,) = ax_nmi.plot(x, mu, marker="o", ms=3, label=e)
        ax_nmi.fill_between(x, mu - sem, mu + sem, color=line.get_color(), alpha=0.15, lw=0)
        ax_t.plot(x, [r["time_mean"] for r in rs], marker="o", ms=3, label=e)
    ax_nmi.set(xlabel="number of constraints", ylabel="NMI (held-out half)", title=title)
    ax_t.set(xlabel="number of constraints", ylabel="mean fit time (s)", yscale="log",
             title="time per fit")
    ax_nmi.legend()
    fig.savefig(path, dpi=110)


def run(args) -> int:
    from ..estimators import HMRFKMeans
    from ..experiments import learning_curve

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines:
        raise ValueError("--engines is empty.")
    for e in engines:
        make_engine(e)  # validate names before any work
    points = parse_range(args.constraints, integer=True)
    if args.runs < 1 or args.folds < 2:
        raise ValueError("--runs must be >= 1 and --folds >= 2.")
    X, y = load_dataset(args.dataset, random_state=args.seed)
    k = int(np.unique(y).shape[0])
    models = {e: HMRFKMeans(k, emission=args.emission, inference=make_engine(e), w=args.w)
              for e in engines}
    t0 = time.perf_counter()
    table = learning_curve(models, X, y, supervision="constraints", points=points, runs=args.runs,
                           folds=args.folds, metrics=("nmi", "objective"), random_state=args.seed,
                           n_jobs=args.n_jobs, progress=not args.no_progress, errors="record")
    elapsed = time.perf_counter() - t0
    rows = summarise(table, engines, points)
    print(f"dataset {args.dataset} (n={X.shape[0]}, d={X.shape[1]}, k={k}), HMRF-KMeans, "
          f"emission {args.emission}, w={args.w:g}; {args.runs} run(s) x {args.folds}-fold CV; "
          f"NMI on held-out points (mean ± std), mean time per fit, mean final objective J")
    print(format_table(rows, engines, points))
    print(f"total {elapsed:.1f}s")
    os.makedirs(args.out, exist_ok=True)
    fits = os.path.join(args.out, "compare.csv")
    table.to_csv(fits)
    summary = os.path.join(args.out, "compare-summary.csv")
    with open(summary, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {fits} and {summary}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return 0
    png = os.path.join(args.out, "compare.png")
    plot(rows, engines, png, f"{args.dataset}: E-step engines")
    print(f"wrote {png}")
    return 0
