"""Shared helpers of the reproduction scripts (run them from the repository root).

Each script runs learning curves with :func:`hmrf.experiments.learning_curve`, writes
``<out>/<name>.csv`` and ``<out>/<name>-<metric>.png`` for every experiment, and a
Markdown report ``<out>/<script>.md`` with the mean curves and paired comparisons
(two-tailed paired t-test over the same splits and supervision, as in the thesis).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from hmrf.datasets import load_dataset
from hmrf.experiments import learning_curve


def parse_args(description, default_out):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default=default_out, help=f"output directory (default {default_out})")
    p.add_argument("--n-jobs", type=int, default=2, help="parallel fits (default 2)")
    p.add_argument("--runs", type=int, default=None, help="override the number of runs")
    p.add_argument("--quick", action="store_true", help="smoke test: 1 run, 3 points")
    p.add_argument("--only", default=None, help="run only experiments whose name contains this")
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args()


class Report:
    """Collects Markdown sections and writes them to ``<out>/<script>.md``."""

    def __init__(self, args, script):
        self.args = args
        self.path = os.path.join(args.out, f"{script}.md")
        self.parts = []
        os.makedirs(args.out, exist_ok=True)

    def add(self, text):
        self.parts.append(text)
        print(text, flush=True)

    def write(self):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("\n\n".join(self.parts) + "\n")
        print(f"wrote {self.path}")


def run(report, name, dataset, models, *, supervision, points, runs, folds, noise=0.0,
        metrics=("nmi", "pairwise_f", "objective"), title=None, x=None, present=True,
        n_jobs=None):
    """Run one experiment; with ``present`` save CSV + PNGs and add its table to the report.

    ``n_jobs`` overrides ``--n-jobs`` (1 for supervision callables that cache work).
    """
    args = report.args
    if args.only and args.only not in name:
        return None
    if args.quick:
        runs = 1
        points = list(dict.fromkeys([points[0], points[len(points) // 2], points[-1]]))
    elif args.runs is not None:
        runs = args.runs
    X, y = load_dataset(dataset, random_state=0)
    t0 = time.perf_counter()
    table = learning_curve(models, X, y, supervision=supervision, points=points, runs=runs,
                           folds=folds, noise=noise, metrics=metrics, random_state=0,
                           n_jobs=args.n_jobs if n_jobs is None else n_jobs,
                           progress=not args.no_progress, errors="record")
    table.meta = dict(dataset=dataset, n=X.shape[0], d=X.shape[1], runs=runs, folds=folds,
                      seconds=time.perf_counter() - t0)
    if present:
        show(report, name, table, metrics=metrics, title=title, x=x)
    return table


def show(report, name, table, *, metrics=("nmi", "pairwise_f", "objective"), title=None, x=None):
    """Save ``table`` as CSV + one PNG per metric and add its NMI table to the report."""
    args = report.args
    meta = table.meta
    table.to_csv(os.path.join(args.out, f"{name}.csv"))
    for m in metrics:
        _plot(table, m, os.path.join(args.out, f"{name}-{m}.png"), title or name, x)
    runs, folds = meta["runs"], meta["folds"]
    proto = f"{runs} run(s) × {folds}-fold CV" if folds else f"{runs} run(s)"
    head = (f"### {title or name}\n\n`{meta['dataset']}` (n={meta['n']}, d={meta['d']}), {proto}, "
            f"{len(table)} fits in {meta['seconds']:.0f} s; mean NMI on held-out points "
            f"(± std over {runs * (folds or 1)} folds)")
    report.add(head + "\n\n" + markdown_curve(table, "nmi", x=x))


def markdown_curve(table, metric="nmi", x=None):
    """Mean ± std of ``metric``: one row per x value, one column per estimator."""
    rows = table.summary([metric])
    if x is None:
        x = "noise" if len({r["point"] for r in rows}) == 1 else "point"
    ests = table.estimators
    xs = sorted({r[x] for r in rows})
    cell = {(r["estimator"], r[x]): r for r in rows}
    out = [f"| {x} | " + " | ".join(ests) + " |", "|---" * (len(ests) + 1) + "|"]
    for v in xs:
        cells = []
        for e in ests:
            r = cell.get((e, v))
            if r is None or r["n"] == 0:
                cells.append("—")
            else:
                fail = f" ({r['n_failed']} failed)" if r["n_failed"] else ""
                cells.append(f"{r[metric + '_mean']:.3f} ± {r[metric + '_std']:.3f}{fail}")
        out.append(f"| {v:g} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def compare_line(table, a, b, metric="nmi", alpha=0.05):
    """One line: where ``a`` is significantly better / worse than ``b`` (paired t-test)."""
    rows = table.compare(a, b, metric)
    if not rows:
        return f"{a} vs {b}: no paired fits."
    key = "noise" if len({r["point"] for r in rows}) == 1 else "point"
    better = [r[key] for r in rows if r["mean_diff"] > 0 and r["p_value"] < alpha]
    worse = [r[key] for r in rows if r["mean_diff"] < 0 and r["p_value"] < alpha]
    diffs = ", ".join(f"{r[key]:g}: {r['mean_diff']:+.3f}" for r in rows)
    return (f"- **{a} − {b}** ({metric}, mean paired difference per {key}): {diffs}. "
            f"Significantly better (p < {alpha}) at {_fmt(better)}; significantly worse at "
            f"{_fmt(worse)}.")


def _fmt(values):
    return "none" if not values else "{" + ", ".join(f"{v:g}" for v in values) + "}"


def _plot(table, metric, path, title, x):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    table.plot(metric, x=x, ax=ax)
    ax.set_title(title)
    fig.savefig(path, dpi=100)


def require(module):
    """Import ``module`` or exit with a clear message (the package is being written)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        print(f"{module} is not available ({exc}); this reproduction needs it. Skipping.",
              file=sys.stderr)
        sys.exit(0)


def seed_of(rng):
    """An int seed from a numpy Generator (for estimators taking random_state)."""
    return int(rng.integers(np.iinfo(np.int32).max))
