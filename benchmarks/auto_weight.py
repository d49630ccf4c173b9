"""The rule behind ``w="auto"``: which multiple of the data's scale to charge a violation.

``w="auto"`` is ``AUTO_W_FACTOR`` times :meth:`hmrf.HMRF.data_scale` (the mean cost of a
point when all the data form one cluster; for squared Euclidean distance the total
variance, so that a factor of 2 is the expected squared distance between two random
points). This measures the alternatives: HMRF-KMeans at its defaults but for ``w``, on
the papers' data sets with 100 and 500 random labelled pairs, mean NMI over ``--runs``
runs, for ``w`` = 1 (the thesis's number, whatever the units) and ``w`` = f × scale for
several factors f. Writes ``docs/results/auto_weight.md``; with ``--noise F``, 500 pairs
of which a fraction F have the wrong kind, ``docs/results/auto_weight_noisy.md`` (a large
weight makes wrong pairs count as much as right ones).

    python benchmarks/auto_weight.py
    python benchmarks/auto_weight.py --noise 0.1
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import markdown_table, write_result  # noqa: E402

from hmrf import HMRF, Constraints, HMRFKMeans  # noqa: E402
from hmrf.datasets import load_dataset  # noqa: E402
from hmrf.metrics import nmi  # noqa: E402

DATASETS = ["iris", "wine", "breast_cancer", "digits389", "pendigits-389", "letters-ijl",
            "3-news-similar", "3-news-related", "3-news-different"]
FACTORS = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--noise", type=float, default=0.0, help="fraction of wrong pairs (500 pairs)")
    args = p.parse_args(argv)
    levels = (500,) if args.noise else (100, 500)
    rows, wins = [], np.zeros(len(FACTORS) + 1)
    for ds in DATASETS:
        X, y = load_dataset(ds, random_state=0)
        k = int(np.unique(y).size)
        scale = HMRF(X, k).data_scale()
        for n_pairs in levels:
            scores = np.zeros((args.runs, len(FACTORS) + 1))
            for r in range(args.runs):
                rng = np.random.default_rng(r)
                c = Constraints.sample_from_labels(y, n_pairs, rng)
                if args.noise:
                    wrong = rng.random(len(c)) < args.noise
                    c = Constraints(c.n, c.pairs, np.where(wrong, -c.kind, c.kind), conflicts="soften")
                for j, w in enumerate([1.0, *[f * scale for f in FACTORS]]):
                    est = HMRFKMeans(k, w=w, random_state=r).fit(X, constraints=c)
                    scores[r, j] = nmi(y, est.labels_)
            mean = scores.mean(axis=0)
            wins += mean >= mean.max() - 0.005
            rows.append([ds, n_pairs, f"{scale:.4g}", *[f"{v:.3f}" for v in mean]])
            print(rows[-1], flush=True)
    rows.append(["**within 0.005 of the best**", "", "", *[f"{int(v)} of {len(levels) * len(DATASETS)}"
                                                           for v in wins]])
    header = ["data set", "pairs", "scale s", "w = 1", *[f"w = {f:g} s" for f in FACTORS]]
    body = markdown_table(header, rows, ["---", "---:", "---:", *["---:"] * (len(FACTORS) + 1)])
    name = "auto_weight_noisy" if args.noise else "auto_weight"
    wrong = f", {args.noise:.0%} of them of the wrong kind" if args.noise else ""
    print("wrote", write_result(name, body, notes=(
        f"HMRF-KMeans at its defaults but for `w`; mean NMI over {args.runs} runs of random labelled "
        f"pairs{wrong}. `s` is `HMRF(X, k).data_scale()`, the total variance of the features (on the text "
        "sets, unit-length TF-IDF rows, it is close to 1).")))


if __name__ == "__main__":
    main()
