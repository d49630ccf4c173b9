"""Choosing w and k by cross-validation over the constraints (hmrf.model_selection).

For iris, wine and digits {3,8,9} with 300 random labelled pairs: the held-out pairwise
F-measure of HMRF-KMeans (defaults otherwise) against the constraint weight (multiples
of the weight ``w="auto"`` stands for) and against the number of clusters, by 3-fold
:class:`~hmrf.model_selection.ConstraintKFold` inside scikit-learn's ``GridSearchCV``
(:func:`~hmrf.model_selection.choose_w`, :func:`~hmrf.model_selection.choose_k`); and
the BIC of a soft isotropic-Gaussian fit against k (:func:`~hmrf.model_selection.bic_k`,
standardised features). Writes ``docs/results/model_selection.md`` (the table) and
``docs/_static/model_selection.png`` (the figure).

    python benchmarks/model_selection.py
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import ROOT, markdown_table, write_result  # noqa: E402

from hmrf import Constraints, HMRFKMeans  # noqa: E402
from hmrf.datasets import load_dataset  # noqa: E402
from hmrf.model_selection import W_FACTORS, bic_k, choose_k, choose_w  # noqa: E402

DATASETS = ["iris", "wine", "digits389"]
KS = list(range(2, 8))
FIGURE = os.path.join(ROOT, "docs", "_static", "model_selection.png")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=300)
    p.add_argument("--folds", type=int, default=3)
    args = p.parse_args(argv)
    results = {}
    for ds in DATASETS:
        X, y = load_dataset(ds, random_state=0)
        k = int(np.unique(y).size)
        c = Constraints.sample_from_labels(y, args.pairs, np.random.default_rng(0))
        sw = choose_w(HMRFKMeans(k, random_state=0), X, c, cv=args.folds, random_state=0)
        sk = choose_k(HMRFKMeans(random_state=0), X, c, KS, cv=args.folds, random_state=0)
        Z = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        sb = bic_k(Z, KS, random_state=0)
        results[ds] = (k, sw, sk, sb)
        print(ds, "w:", sw.scores.round(3), "k:", sk.scores.round(3), "BIC k:", sb.best, flush=True)
    rows = []
    for ds, (k, sw, sk, sb) in results.items():
        best_f = W_FACTORS[int(np.argmax(sw.scores))]
        rows.append([ds, k, " / ".join(f"{v:.3f}" for v in sw.scores), f"{best_f:g} × auto",
                     " / ".join(f"{v:.3f}" for v in sk.scores), sk.best, sb.best])
    header = ["data set", "classes", "held-out F at w = " + ", ".join(f"{f:g}" for f in W_FACTORS)
              + " × auto", "best w", f"held-out F at k = {KS[0]}..{KS[-1]}", "best k (F)",
              "best k (BIC)"]
    body = markdown_table(header, rows, ["---", "---:", "---:", "---:", "---:", "---:", "---:"])
    plot(results)
    print("wrote", write_result("model_selection", body, notes=(
        f"HMRF-KMeans (defaults otherwise), {args.pairs} random labelled pairs, {args.folds}-fold "
        "`ConstraintKFold` (held-out pairs implied by the training pairs dropped), mean held-out "
        "pairwise F-measure; BIC of `HMRFKMeans(k, em=\"soft\", normalizer=\"closed_form\")` on the "
        "standardised features without constraints. The figure is "
        "`docs/_static/model_selection.png`, written by the same command.")))


def plot(results):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    for ds, (k, sw, sk, sb) in results.items():
        x = np.array(W_FACTORS)
        axes[0].errorbar(np.where(x > 0, x, 1 / 64), sw.scores, yerr=sw.std, marker="o", capsize=2,
                         label=ds)
        axes[1].errorbar(sk.values, sk.scores, yerr=sk.std, marker="o", capsize=2, label=f"{ds} ({k})")
        axes[2].plot(sb.values, (sb.scores - sb.scores.min()) / np.ptp(sb.scores), marker="o", label=ds)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("w / auto (0 drawn at 1/64)")
    axes[0].set_ylabel("held-out pairwise F")
    axes[1].set_xlabel("k (classes in parentheses)")
    axes[1].set_ylabel("held-out pairwise F")
    axes[2].set_xlabel("k")
    axes[2].set_ylabel("BIC (scaled to [0, 1])")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=110)
    print("wrote", FIGURE)


if __name__ == "__main__":
    main()
