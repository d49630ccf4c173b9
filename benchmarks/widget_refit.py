"""What one answer costs in the oracle widget: next query, re-fit, redraw (docs/widgets.md).

On n points (default 1,000, eight features, five overlapping clusters) a truthful
``LabelOracle`` answers the queries of Explore/Consolidate through
:class:`hmrf.widgets.OracleModel`; every answer re-fits HMRF-KMeans with all the
constraints so far. Warm re-fits (from the previous centres, at most ``max_iter`` EM
iterations) and cold ones (the estimator's own initialisation) see the same answers,
so the runs are paired answer by answer; they alternate (warm, cold, warm, cold, ...)
and the table gives medians over all answers and the median of the paired ratios. The
last row is the widget itself (model plus the trait update a browser would receive).

    python benchmarks/widget_refit.py                    # writes docs/results/widget_refit.md
    python benchmarks/widget_refit.py --n 5000 --no-write
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._results import markdown_table, write_result  # noqa: E402
from hmrf.active import LabelOracle  # noqa: E402
from hmrf.widgets import OracleModel  # noqa: E402


def data(n, d=8, k=5, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(k, d))
    y = rng.integers(k, size=n)
    return centres[y] + rng.normal(size=(n, d)), y


def run(X, y, answers, *, warm, widget=False):
    """Per-answer wall times: the whole answer, and the re-fit within it; EM iterations."""
    if widget:
        from hmrf.widgets import OracleWidget

        view = OracleWidget(X, y, warm_start=warm, random_state=0)
        model, act = view.model, view.answer
    else:
        model = OracleModel(X, y, warm_start=warm, random_state=0)
        act = model.answer
    oracle = LabelOracle(y)
    total, fit, iters = [], [], []
    for _ in range(answers):
        q = model.query
        if q is None:
            break
        reply = oracle.query(*q)
        t0 = time.perf_counter()
        act(reply)
        total.append(time.perf_counter() - t0)
        fit.append(model.history[-1].seconds)
        iters.append(int(getattr(model.reclusterer.estimator_, "n_iter_", 0)))
    nmi = model.history[-1].nmi
    (view if widget else model).close()
    return np.array(total), np.array(fit), np.array(iters), nmi


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--answers", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    X, y = data(args.n)
    run(X, y, 3, warm=True)  # imports, first calls
    warm, cold = [], []
    for _ in range(args.repeats):
        warm.append(run(X, y, args.answers, warm=True))
        cold.append(run(X, y, args.answers, warm=False))
    widget = run(X, y, args.answers, warm=True, widget=True)

    def cat(runs, i):
        return np.concatenate([r[i] for r in runs])

    refit_w, refit_c = cat(warm, 1), cat(cold, 1)
    changed = (refit_w > 0) & (refit_c > 0)  # answers that changed the constraints
    ratio = np.median(refit_c[changed] / refit_w[changed])
    ms = lambda v: f"{1e3 * float(np.median(v)):.1f}"  # noqa: E731
    rows = [
        ["warm (previous centres)", ms(cat(warm, 0)), ms(refit_w[changed]),
         f"{np.median(cat(warm, 2)[changed]):.0f}", f"{warm[-1][3]:.3f}"],
        ["cold (estimator's own start)", ms(cat(cold, 0)), ms(refit_c[changed]),
         f"{np.median(cat(cold, 2)[changed]):.0f}", f"{cold[-1][3]:.3f}"],
        ["widget, warm (model + traits)", ms(widget[0]), ms(widget[1][widget[1] > 0]),
         f"{np.median(widget[2][widget[1] > 0]):.0f}", f"{widget[3]:.3f}"],
    ]
    header = ["re-fit", "ms per answer", "ms per re-fit", "EM iterations", "NMI at the end"]
    table = markdown_table(header, rows)
    notes = (f"{args.n} points, 8 features, 5 clusters; {args.answers} answers of a truthful oracle to "
             f"Explore/Consolidate, HMRF-KMeans re-fitted after each; medians over {args.repeats} "
             f"alternating runs. Cold re-fit / warm re-fit, median of paired ratios: {ratio:.1f}x.")
    print(table)
    print(notes)
    if not args.no_write:
        print("wrote", write_result("widget_refit", table, notes=notes))


if __name__ == "__main__":
    main()
