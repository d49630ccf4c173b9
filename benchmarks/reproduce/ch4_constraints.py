"""Reproduce Basu (2005), ch. 4: HMRF-KMeans and its ablations under random constraints.

HMRF-KMeans-I-C (constraints in the initialisation and in the assignment, w = 1),
HMRF-KMeans-I (the same neighbourhood initialisation, w = 0: no constraint term in
the E-step) and unsupervised KMeans (from perturbations of the global centroid, which
is what HMRF-KMeans does with no constraints). Protocol of §4.5.2: 20 runs of 2-fold
CV, random pairs from the training half (unit weights), NMI on the test half.
Squared Euclidean on Iris, Digits-389 (``pendigits-389``) and Letters-IJL (Figs.
4.4-4.6); cosine (Figs. 4.7-4.9) and KL (Figs. 4.10-4.12) on 3-news-different,
-related and -similar. On the Euclidean sets a fourth curve, not in the thesis, uses
w = the mean squared distance between two points (the scale §5.5.3 recommends): with
unit weights the constraint term is negligible next to squared distances of ~10^4
(pendigits).

Run from the repository root::

    python benchmarks/reproduce/ch4_constraints.py [--n-jobs 2] [--runs 20] [--quick]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _common import Report, compare_line, parse_args, run  # noqa: E402

from hmrf import HMRFKMeans, KMeans  # noqa: E402
from hmrf.datasets import load_dataset  # noqa: E402

POINTS = [0, 50, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
EXPERIMENTS = [
    ("iris", "sqeuclidean", "Fig. 4.4"), ("pendigits-389", "sqeuclidean", "Fig. 4.5"),
    ("letters-ijl", "sqeuclidean", "Fig. 4.6"),
    ("3-news-different", "cosine", "Fig. 4.7"), ("3-news-related", "cosine", "Fig. 4.8"),
    ("3-news-similar", "cosine", "Fig. 4.9"),
    ("3-news-different", "kl", "Fig. 4.10"), ("3-news-related", "kl", "Fig. 4.11"),
    ("3-news-similar", "kl", "Fig. 4.12"),
]


#: The thesis's HMRF-KMeans (§4.4): ICM E-steps, the neighbourhood initialisation of
#: §4.4.3, one run; the library's defaults differ (docs/choosing.md).
THESIS = dict(inference="icm", init="neighborhoods", n_init=1)


def models(emission, w_bar=None):
    out = {
        "HMRF-KMeans-I-C": HMRFKMeans(3, emission=emission, w=1.0, **THESIS),
        "HMRF-KMeans-I": HMRFKMeans(3, emission=emission, w=0.0, **THESIS),
        "KMeans": KMeans(3, emission=emission, init="neighborhoods", n_init=1),
    }
    if w_bar is not None:
        out["HMRF-KMeans-I-C (w=d̄)"] = HMRFKMeans(3, emission=emission, w=w_bar, **THESIS)
    return out


def mean_sq_distance(dataset):
    """Mean squared Euclidean distance between two points, ``2 tr(Cov X)``: the scale of
    w suggested in §5.5.3 ("a constant of the same order as the average distance")."""
    X, _ = load_dataset(dataset, random_state=0)
    return float(2.0 * X.var(axis=0).sum())


def main():
    args = parse_args(__doc__.split("\n\n")[0], "results/reproduce/ch4")
    rep = Report(args, "ch4_constraints")
    rep.add("## Chapter 4: HMRF-KMeans ablations (20 × 2-fold CV, NMI on the test half)")
    for ds, emission, fig in EXPERIMENTS:
        w_bar = mean_sq_distance(ds) if emission == "sqeuclidean" else None
        t = run(rep, f"ch4-{ds}-{emission}", ds, models(emission, w_bar), supervision="constraints",
                points=POINTS, runs=20, folds=2, title=f"{ds}, {emission} ({fig})")
        if t is not None:
            rep.add("\n".join([compare_line(t, "HMRF-KMeans-I-C", "KMeans"),
                               compare_line(t, "HMRF-KMeans-I-C", "HMRF-KMeans-I"),
                               compare_line(t, "HMRF-KMeans-I", "KMeans")]))
            if w_bar is not None:
                rep.add(f"w = d̄ = {w_bar:.4g} (mean squared distance between two points).\n"
                        + compare_line(t, "HMRF-KMeans-I-C (w=d̄)", "HMRF-KMeans-I"))
    rep.write()


if __name__ == "__main__":
    main()
