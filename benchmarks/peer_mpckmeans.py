"""MPCKMeans against active-semi-supervised-clustering's MPCKMeans, and the ICML 2004 ablation.

Three parts (all re-runnable; timings on a shared machine are indicative only):

1. **Peer comparison.** On iris, wine, digits {3,8,9} and breast cancer
   (scikit-learn's bundled data), with 0/50/200 random constraints
   (``Constraints.sample_from_labels``) and ``--runs`` repetitions, both libraries get
   the *same* constraints. Scores are NMI and pairwise F on the points that appear in
   no constraint; time is the wall-clock of ``fit``. The peer's failures (it raises on
   empty clusters and, having set ``np.seterr("raise")`` at import, on floating-point
   warnings) are caught and counted.

   The two libraries do **not** minimise the same energy: the peer implements the
   later MPCK-Means of Bilenko, Basu & Mooney (ICML 2004; f_M = d², f_C = d²_max - d²,
   ``log det A / log 2``, a single diagonal metric, ``max_iter=10``), we implement the
   Basu, Bilenko & Mooney (2004) model of the issue (f_M = max(α_min, α_max - d²),
   f_C = min(α_min + d², α_max)). To separate "model" from "optimiser", the column ``J``
   scores every labelling with *our* objective, the model of the ``hmrf[bp]`` column (the
   paper's settings, eq. 4's penalties): the fit's own ``objective_`` for the columns
   with that model, and for the others (and the peer) that model's objective with
   parameters refitted to the labelling by M-steps at fixed labels. Lower is better for
   our model.

2. **Monotonicity.** How often the paper's metric update would raise the objective
   (the safeguard then backtracks: ``metric_step < 1``), and how often the objective
   history rises when the safeguard is switched off.

3. **Ablation** (ICML 2004, Figs. 2-3): MPCKMeans, M-KMeans, PCKMeans and KMeans on
   iris and wine, pairwise F on held-out points vs number of constraints, 10-fold
   cross-validation repeated ``--curve-runs`` times (constraints from the training
   folds only; :func:`hmrf.experiments.learning_curve`). ``--plot out.png`` saves it.

Usage::

    python benchmarks/peer_mpckmeans.py --write               # everything (~15 min)
    python benchmarks/peer_mpckmeans.py --datasets iris wine --runs 2 --skip-ablation

``--write`` also writes each part's tables to ``docs/results/`` (``peer-mpckmeans.md``,
``peer-mpckmeans-monotonicity.md``, ``peer-mpckmeans-ablation.md``), which
``docs/metric_learning.md`` includes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import write_result  # noqa: E402

from hmrf import Constraints, KMeans, MKMeans, MPCKMeans, PCKMeans  # noqa: E402
from hmrf.datasets import load_dataset  # noqa: E402
from hmrf.em import run_em  # noqa: E402
from hmrf.emissions import Mahalanobis  # noqa: E402
from hmrf.inference import get_engine  # noqa: E402
from hmrf.metrics import nmi, pairwise_f_measure  # noqa: E402

DATASETS = ("iris", "wine", "digits389", "breast_cancer")

#: The paper's seeding (§3.1), one run, w = 1, its learned diagonal metric with the 1 % shrinkage
#: toward the feature variances: every variant below starts from these.
PAPER = dict(init="pckmeans", n_init=1, w=1.0, emission=Mahalanobis("diagonal", shrinkage=0.01))
#: MPCKMeans configurations: the E-step by BP first, then the paper's greedy E-step
#: (ICM), the thesis seeding and the mirrored penalties of Bilenko et al. (with
#: ``alpha_max="auto"``, the data set's diameter; ``mir-ml``: the largest must-link).
VARIANTS = {
    "bp": dict(PAPER, inference="bp"),
    "icm": dict(PAPER, inference="icm"),
    "bp+ff": dict(PAPER, inference="bp", init="neighborhoods"),
    "icm+ff": dict(PAPER, inference="icm", init="neighborhoods"),
    "bp+mir": dict(PAPER, inference="bp", penalty="mirrored"),
    "icm+mir": dict(PAPER, inference="icm", penalty="mirrored"),
    "bp+mir-ml": dict(PAPER, inference="bp", penalty="mirrored", alpha_max="must_link"),
    "bp+tol0": dict(PAPER, inference="bp", tol=0.0),  # stop only at a fixed point (not run unless asked for)
}
DEFAULT_VARIANTS = [v for v in VARIANTS if v != "bp+tol0"]


class Report:
    """The lines of one part: printed as they come, written to ``docs/results/`` with
    ``--write``."""

    def __init__(self, name, args):
        self.name, self.args, self.lines = name, args, []

    def __call__(self, line=""):
        print(line, flush=True)
        self.lines.append(line)

    def write(self, notes=""):
        if self.args.write:
            body = "\n".join(self.lines).strip()
            print("wrote", write_result(self.name, body, notes=notes))


def load_peer():
    """The peer's MPCKMeans, importing it without letting its ``np.seterr`` leak."""
    old = np.geterr()
    try:
        from active_semi_clustering.semi_supervised.pairwise_constraints import MPCKMeans as Peer
    except ImportError:
        return None
    finally:
        np.seterr(**old)
    return Peer


def refit_objective(model, labels, n_steps=20):
    """Our objective J at ``labels`` with parameters fitted to them (M-steps at fixed labels)."""
    fam = model.emission
    means = np.zeros((model.n_clusters, model.X.shape[1]))
    for h in np.unique(labels):
        means[h] = np.asarray(model.X[labels == h].mean(axis=0)).ravel()
    params = fam.init_params(model.X, means)
    for _ in range(n_steps):  # each M-step is a descent step at fixed labels
        params = model.m_step(labels, params)
    return model.energy(labels, params)


def run_ours(X, y, k, c, mask, variant, seed, model):
    est = MPCKMeans(k, random_state=seed, **VARIANTS[variant])
    t0 = time.perf_counter()
    est.fit(X, constraints=c)
    t = time.perf_counter() - t0
    lab = est.labels_
    # J of the default model: the fit's own objective, unless the variant changes the model
    same_model = not {"penalty", "alpha_max"} & set(VARIANTS[variant])
    J = est.objective_ if same_model else refit_objective(model, lab)
    return dict(nmi=nmi(y[mask], lab[mask]), f=pairwise_f_measure(y[mask], lab[mask]), time=t,
                J=J, labels=lab)


def run_peer(Peer, X, y, k, c, mask, seed, max_iter):
    ml = [tuple(p) for p in c.must_link.tolist()]
    cl = [tuple(p) for p in c.cannot_link.tolist()]
    np.random.seed(seed)  # noqa: NPY002 - the peer draws from NumPy's global generator
    t0 = time.perf_counter()
    try:
        with np.errstate(all="raise"):  # the peer's own setting, scoped here
            est = Peer(n_clusters=k, max_iter=max_iter).fit(X, ml=ml, cl=cl)
    except Exception as exc:  # noqa: BLE001 - record any failure of the peer
        return dict(error=f"{type(exc).__name__}: {exc}"[:80], time=time.perf_counter() - t0)
    t = time.perf_counter() - t0
    lab = np.asarray(est.labels_)
    return dict(nmi=nmi(y[mask], lab[mask]), f=pairwise_f_measure(y[mask], lab[mask]), time=t,
                labels=lab)


def peer_comparison(args):
    Peer = None if args.skip_peer else load_peer()
    if Peer is None and not args.skip_peer:
        print("active-semi-supervised-clustering is not installed: peer columns skipped "
              "(pip install active-semi-supervised-clustering metric-learn)")
    methods = [f"hmrf[{v}]" for v in args.variants] + (["peer"] if Peer is not None else [])
    rows, per_cell = [], {}
    MPCKMeans(3, random_state=0, **VARIANTS["bp"]).fit(load_dataset("iris")[0])  # warm-up, not timed
    for ds in args.datasets:
        X, y = load_dataset(ds)
        k = len(np.unique(y))
        for m in args.constraints:
            res = {name: [] for name in methods}
            for run in range(args.runs):
                c = Constraints.sample_from_labels(y, m, rng=np.random.default_rng(1000 + run))
                mask = np.ones(len(y), dtype=bool)
                mask[c.constrained_points] = False
                default = MPCKMeans(k, **VARIANTS["bp"])
                model = default._model(X, default._supervision(len(y), None, None, None, c), None)
                for v in args.variants:
                    res[f"hmrf[{v}]"].append(run_ours(X, y, k, c, mask, v, run, model))
                if Peer is not None:
                    r = run_peer(Peer, X, y, k, c, mask, run, args.peer_max_iter)
                    if "labels" in r:
                        r["J"] = refit_objective(model, r["labels"])
                    res["peer"].append(r)
            for name in methods:
                ok = [r for r in res[name] if "error" not in r]
                row = dict(data=ds, m=m, method=name, n_ok=len(ok), n_fail=len(res[name]) - len(ok),
                           nmi=np.mean([r["nmi"] for r in ok]) if ok else np.nan,
                           f=np.mean([r["f"] for r in ok]) if ok else np.nan,
                           time=np.mean([r["time"] for r in res[name]]),
                           J=np.mean([r["J"] for r in ok]) if ok else np.nan,
                           errors=sorted({r["error"] for r in res[name] if "error" in r}))
                rows.append(row)
                per_cell[ds, m, name] = row
    print("\n## Peer comparison (mean over runs; scores on unconstrained points)\n")
    out = Report("peer-mpckmeans", args)
    cells = [(ds, m) for ds in args.datasets for m in args.constraints]
    for key, title, fmt in (("nmi", "NMI", ".3f"), ("f", "pairwise F", ".3f"),
                            ("time", "fit time (s)", ".3f"), ("J", "J (lower is better)", ".1f")):
        out(f"**{title}**\n")
        out("| data | constraints | " + " | ".join(methods) + " |")
        out("|---|---:|" + "---:|" * len(methods))
        for ds, m in cells:
            vals = " | ".join(format(per_cell[ds, m, name][key], fmt) for name in methods)
            out(f"| {ds} | {m} | {vals} |")
        if key in ("nmi", "f"):
            means = " | ".join(format(np.nanmean([per_cell[c][key] for c in
                                                  [(d, m, name) for d, m in cells]]), ".3f")
                               for name in methods)
            out(f"| **mean** | | {means} |")
        out()
    fails = {name: sum(per_cell[ds, m, name]["n_fail"] for ds, m in cells) for name in methods}
    out("Failed fits: " + ", ".join(f"{k} {v}" for k, v in fails.items()) + ".")
    errs = {e for r in rows for e in r["errors"]}
    if errs:
        out("Peer errors: " + "; ".join(sorted(errs)) + ".")
    if "peer" in methods:
        out("\n**Speed-up over the peer** (ratio of mean fit times per data set)\n")
        out("| data | " + " | ".join(methods[:-1]) + " |")
        out("|---|" + "---:|" * (len(methods) - 1))
        for ds in args.datasets:
            tp = np.mean([per_cell[ds, m, "peer"]["time"] for m in args.constraints])
            ratios = [tp / np.mean([per_cell[ds, m, name]["time"] for m in args.constraints])
                      for name in methods[:-1]]
            out(f"| {ds} | " + " | ".join(f"{r:.0f}x" for r in ratios) + " |")
    if Peer is None:  # without the peer the table is not the comparison its file holds
        print("no peer columns: docs/results/peer-mpckmeans.md is not written")
        return
    out.write(notes=(
        f"Mean over {args.runs} runs of random labelled pairs (seeds 1000-{999 + args.runs}), both "
        "libraries on the same pairs; NMI and pairwise F on the points in no constraint; fit time "
        f"wall-clock on a shared machine (indicative), the peer with `max_iter={args.peer_max_iter}`. "
        "`hmrf[bp]` is MPCKMeans with the paper's seeding, one run and `w=1` (`init=\"pckmeans\", "
        "n_init=1, w=1`) and `inference=\"bp\"`; `icm`: `inference=\"icm\"`; `+ff`: "
        "`init=\"neighborhoods\"`; `+mir`: `penalty=\"mirrored\"` (`+mir-ml`: with "
        "`alpha_max=\"must_link\"`). J: our objective of the labelling under the model of the "
        "`hmrf[bp]` column (the paper's settings, eq. 4's penalties): the fit's own objective for "
        "the columns with that model, parameters refitted to the labels for the others and the "
        "peer; lower is better."))


def monotonicity(args):
    print("\n## Monotonicity of the metric step (MPCKMeans, ICM)\n")
    out = Report("peer-mpckmeans-monotonicity", args)
    out("| data | metric | M-steps | paper step raised J (backtracked) | old metric kept | "
          "runs whose history rose without the safeguard |")
    out("|---|---|---:|---:|---:|---:|")
    for ds in args.datasets:
        X, y = load_dataset(ds)
        k = len(np.unique(y))
        for metric in ("diagonal", "full"):
            steps, rose = [], 0
            for m in [v for v in args.constraints if v > 0]:
                for run in range(args.runs):
                    c = Constraints.sample_from_labels(y, m, rng=np.random.default_rng(1000 + run))
                    for safe in (True, False):
                        est = MPCKMeans(k, random_state=run, **dict(
                            VARIANTS["bp"], emission=Mahalanobis(metric, shrinkage=0.01)))
                        model = est._model(X, c, None)
                        model.emission.safeguard = safe
                        rng = np.random.default_rng(run)
                        p0 = est._initial_params(model, c, None, rng)
                        log = []
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", RuntimeWarning)
                            res = run_em(model, p0, get_engine("icm"), rng=rng,
                                         callback=lambda *a, log=log: log.append(a[2].metric_step))
                        if safe:
                            steps.extend(log)
                        else:
                            h = np.asarray(res.history)
                            rose += bool(np.any(np.diff(h) > 1e-9 * np.abs(h[:-1])))
            s = np.asarray(steps)
            n_runs = args.runs * len([v for v in args.constraints if v > 0])
            out(f"| {ds} | {metric} | {s.size} | {np.sum(s < 1)} | {np.sum(s == 0)} | "
                  f"{rose}/{n_runs} |")
    out.write(notes=(
        f"MPCKMeans with ICM, {args.runs} runs per number of constraints "
        f"({', '.join(str(v) for v in args.constraints if v > 0)}). \"Paper step raised J\": M-steps "
        "whose full metric update would have raised J, so the safeguard backtracked; \"old metric "
        "kept\": no halving helped either; the last column reruns the same fits with "
        "`safeguard=False`."))


def ablation(args):
    from hmrf.experiments import learning_curve

    print("\n## Ablation (ICML 2004 Figs. 2-3): pairwise F on held-out points\n")
    out = Report("peer-mpckmeans-ablation", args)
    tables = {}
    for ds in ("iris", "wine"):
        X, y = load_dataset(ds)
        k = len(np.unique(y))
        ests = {"MPCKMeans": MPCKMeans(k, **VARIANTS["bp"]),
                "MKMeans": MKMeans(k, n_init=1, w=1.0, emission=Mahalanobis("diagonal", shrinkage=0.01),
                                   penalty="distance"),
                "PCKMeans": PCKMeans(k, w=1.0, inference="icm", init="pckmeans", n_init=1),
                "KMeans": KMeans(k, n_init=1)}
        for v in args.ablation_variants:
            ests[f"MPCKMeans[{v}]"] = MPCKMeans(k, **VARIANTS[v])
        t = learning_curve(ests, X, y, points=args.curve_points, runs=args.curve_runs, folds=10,
                           metrics=("pairwise_f", "nmi"), progress=False)
        tables[ds] = t
        summ = t.summary(["pairwise_f"])
        names = list(ests)
        out(f"**{ds}**\n")
        out("| constraints | " + " | ".join(names) + " |")
        out("|---:|" + "---:|" * len(names))
        for p in args.curve_points:
            vals = {r["estimator"]: r["pairwise_f_mean"] for r in summ if r["point"] == p}
            out(f"| {p} | " + " | ".join(f"{vals[n]:.3f}" for n in names) + " |")
        out()
    out.write(notes=(
        f"Pairwise F on the held-out fold, {args.curve_runs} x 10-fold cross-validation, constraints "
        "from the training folds (`hmrf.experiments.learning_curve`). MPCKMeans and PCKMeans with "
        "the paper's seeding, one run and `w=1` (MPCKMeans with `inference=\"bp\"`, PCKMeans "
        "with ICM), MKMeans with one run, `w=1`, `penalty=\"distance\"` and its default "
        "k-means++ start; `[icm]`: MPCKMeans with ICM; `[bp+ff]`: with `init=\"neighborhoods\"`."))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, (ds, t) in zip(axes, tables.items(), strict=True):
            t.plot("pairwise_f", ax=ax, band="sem")
            ax.set_title(ds)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"saved {args.plot}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    p.add_argument("--constraints", nargs="+", type=int, default=[0, 50, 200])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS, choices=list(VARIANTS),
                   help="MPCKMeans configurations: bp = the paper's settings with BP, icm = inference='icm', "
                        "+ff = init='neighborhoods' (weighted farthest-first), +mir = "
                        "penalty='mirrored' (+mir-ml: with alpha_max='must_link'), "
                        "bp+tol0 = tol=0 (default: all but bp+tol0)")
    p.add_argument("--ablation-variants", nargs="*", default=["icm", "bp+ff"], choices=list(VARIANTS),
                   help="extra MPCKMeans curves besides the paper's four methods")
    p.add_argument("--peer-max-iter", type=int, default=10,
                   help="the peer's max_iter (its default: 10)")
    p.add_argument("--skip-peer", action="store_true",
                   help="run hmrf's columns without the peer library (their table is printed, not written)")
    p.add_argument("--skip-monotonicity", action="store_true")
    p.add_argument("--skip-ablation", action="store_true")
    p.add_argument("--curve-runs", type=int, default=2)
    p.add_argument("--curve-points", nargs="+", type=int, default=[0, 25, 50, 100, 200, 300])
    p.add_argument("--plot", metavar="PNG", help="save the ablation learning curves")
    p.add_argument("--write", action="store_true",
                   help="write each part's tables to docs/results/ (for docs/metric_learning.md)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    peer_comparison(args)
    if not args.skip_monotonicity:
        monotonicity(args)
    if not args.skip_ablation:
        ablation(args)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
