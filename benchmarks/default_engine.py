"""The default E-step engine, and how long a fit at the defaults takes.

Two tables (docs/choosing.md includes both):

1. ``default_engine``: the estimators' objective ``J`` and NMI with ICM (the thesis's
   engine), belief propagation, and ``"auto"`` (BP, then α-expansion moves per
   component) with and without PyMaxflow, on the papers' data sets with 100 and 500
   random labelled pairs (HMRF-KMeans at its defaults otherwise: ``w="auto"``,
   ``n_init="auto"``; 3 runs each), and on a grid segmentation: a 150 x 150 image of
   three grey levels with noise, soft must-links between 4-neighbours (``w=0.05``), where
   the must-link component is large and α-expansion solves it. ``J`` is reported
   relative to the lowest of the engines on the same run.

2. ``fit_time``: how long a fit at the defaults takes at a given size, and what
   ``n_init="auto"`` costs: synthetic data (10 classes, 50 features, 1 % of n random
   labelled pairs) from 10^3 to 10^5 points (10^6 with ``--large``), the fit time with
   ``n_init=1`` and with the default, interleaved, median over ``--repeats``.

    python benchmarks/default_engine.py                  # both tables -> docs/results/
    python benchmarks/default_engine.py --fit-time-only  # the timed table alone

Timing: run the fit-time table on a machine as idle as you can get.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import markdown_table, write_result  # noqa: E402

DATASETS = ["iris", "wine", "breast_cancer", "digits389", "pendigits-389", "letters-ijl",
            "3-news-similar", "3-news-related", "3-news-different"]
ENGINES = ["icm", "bp", "auto (no PyMaxflow)", "auto"]


def engine(name):
    from hmrf.inference.auto import AutoEngine

    return {"icm": "icm", "bp": "bp", "auto (no PyMaxflow)": AutoEngine(expansion=False),
            "auto": AutoEngine()}[name]


def grid_image(h=150, width=150, seed=0):
    """A noisy three-level image (a disc, a band, the background) and its 4-neighbour
    must-links: ``(X (h*w, 1), y, Constraints)``."""
    from hmrf import Constraints

    rng = np.random.default_rng(seed)
    r, c = np.mgrid[:h, :width]
    y = np.zeros((h, width), dtype=np.int64)
    y[(r - h / 2) ** 2 + (c - width / 3) ** 2 < (h / 4) ** 2] = 1
    y[(c > 0.7 * width) & (c < 0.85 * width)] = 2
    levels = np.array([0.2, 0.5, 0.8])
    X = (levels[y] + rng.normal(0, 0.2, size=y.shape)).reshape(-1, 1)
    idx = np.arange(h * width).reshape(h, width)
    pairs = np.r_[np.column_stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()]),
                  np.column_stack([idx[:-1, :].ravel(), idx[1:, :].ravel()])]
    return X, y.ravel(), Constraints.from_pairs(must_link=pairs, n=h * width)


def quality(runs):
    from hmrf import Constraints, HMRFKMeans
    from hmrf.datasets import load_dataset
    from hmrf.metrics import nmi

    rows = []
    cases = [(ds, p) for ds in DATASETS for p in (100, 500)] + [("grid 150x150", None)]
    for ds, n_pairs in cases:
        J = {e: [] for e in ENGINES}
        N = {e: [] for e in ENGINES}
        for r in range(runs if n_pairs else 1):
            if n_pairs is None:
                X, y, c = grid_image(seed=r)
                kw = dict(w=0.05, n_init=1)
            else:
                X, y = load_dataset(ds, random_state=0)
                c = Constraints.sample_from_labels(y, n_pairs, np.random.default_rng(r))
                kw = {}
            k = int(np.unique(y).size)
            for e in ENGINES:
                est = HMRFKMeans(k, inference=engine(e), random_state=r, **kw).fit(X, constraints=c)
                J[e].append(est.objective_)
                N[e].append(nmi(y, est.labels_))
        best = np.min([J[e] for e in ENGINES], axis=0)
        rel = {e: float(np.mean((np.asarray(J[e]) - best) / np.abs(best))) for e in ENGINES}
        rows.append([ds, "" if n_pairs is None else n_pairs,
                     *[f"{rel[e]:+.1e} / {np.mean(N[e]):.3f}" for e in ENGINES]])
        print(rows[-1], flush=True)
    header = ["data set", "pairs", *[f"{e}: J above best / NMI" for e in ENGINES]]
    return markdown_table(header, rows, ["---", "---:", *["---:"] * len(ENGINES)])


def fit_time(repeats, large):
    import time

    from sklearn.datasets import make_blobs

    from hmrf import Constraints, HMRFKMeans

    sizes = [1_000, 10_000, 100_000] + ([1_000_000] if large else [])
    rows = []
    for n in sizes:
        X, y = make_blobs(n, 50, centers=10, random_state=0)
        c = Constraints.sample_from_labels(y, n // 100, np.random.default_rng(0))
        warm = min(n, 2000)  # loads the kernels before anything is timed
        HMRFKMeans(10, n_init=1, random_state=0).fit(X[:warm], constraints=c.subset(np.arange(warm)))
        t = {1: [], "auto": []}
        runs = None
        for r in range(repeats):  # interleaved: one run, the default, one run, ...
            for n_init in (1, "auto"):
                t0 = time.perf_counter()
                est = HMRFKMeans(10, n_init=n_init, random_state=r).fit(X, constraints=c)
                t[n_init].append(time.perf_counter() - t0)
                if n_init == "auto":
                    runs = est.n_runs_
        ratio = float(np.median(np.asarray(t["auto"]) / np.asarray(t[1])))
        rows.append([f"{n:,}", f"{len(c):,}", runs, f"{np.median(t[1]):.2f}", f"{np.median(t['auto']):.2f}",
                     f"{ratio:.1f}"])
        print(rows[-1], flush=True)
    header = ["n (d = 50, k = 10)", "pairs", "runs (n_init=\"auto\")", "fit, n_init=1 (s)",
              "fit, default (s)", "default / one run"]
    return markdown_table(header, rows, ["---:"] * 6)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quality-only", action="store_true")
    p.add_argument("--fit-time-only", action="store_true")
    p.add_argument("--large", action="store_true", help="also 10^6 points in the fit-time table")
    args = p.parse_args(argv)
    if not args.quality_only:
        body = fit_time(args.repeats, args.large)
        print("wrote", write_result("fit_time", body, notes=(
            f"HMRF-KMeans at its defaults (`inference=\"auto\"`, `w=\"auto\"`, `init=\"pckmeans++\"`) "
            f"with `n_init=1` and with the default `n_init=\"auto\"`, interleaved, median of "
            f"{args.repeats}; `make_blobs` data, 1 % of n random labelled pairs.")))
    if not args.fit_time_only:
        body = quality(args.runs)
        print("wrote", write_result("default_engine", body, notes=(
            f"HMRF-KMeans at its defaults but for the engine; mean over {args.runs} runs of random "
            "labelled pairs (the grid: one image, w = 0.05, one run). `J above best`: the objective "
            "relative to the lowest of the four engines on the same run (0 = the lowest).")))


if __name__ == "__main__":
    main()
