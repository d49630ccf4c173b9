"""Reproduce Basu (2005), ch. 5: active selection of constraints (Explore and Consolidate).

HMRF-KMeans given random pairs vs pairs chosen by EXPLORE + CONSOLIDATE (Figs. 5.1,
5.2) answered by an oracle that knows the training labels; protocol of §5.5.2:
10-fold CV, queries only about training points (the selector sees the training part
only), NMI and pairwise F on the held-out tenth, objective on the whole set.
w = 0.001 on text (cosine) and w = 1 on Iris (squared Euclidean), as in §5.5.3.
Then the ablation of Fig. 5.18 on 3-news-different: EXPLORE alone (k unknown, so it
explores with the whole budget, §5.4) vs EXPLORE + CONSOLIDATE.

Run from the repository root::

    python benchmarks/reproduce/ch5_active.py [--n-jobs 2] [--quick]

Needs :mod:`hmrf.active` (``ExploreConsolidate``, ``Explore``, ``LabelOracle``); the
script says so and stops if it is missing.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _common import Report, compare_line, parse_args, require, run, seed_of, show  # noqa: E402

from hmrf import Constraints, HMRFKMeans  # noqa: E402

POINTS = [0, 10, 20, 50, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
EXPERIMENTS = [("3-news-different", "cosine", 0.001, "Figs. 5.6-5.8"),
               ("3-news-related", "cosine", 0.001, "—"),
               ("3-news-similar", "cosine", 0.001, "Figs. 5.3-5.5"),
               ("iris", "sqeuclidean", 1.0, "Figs. 5.15-5.17")]


def active(selector, name):
    """Supervision callable: ``selector(seed)`` chooses queries among the training points
    and an oracle answers them from the training labels.

    The selectors never look at the budget when choosing, so one selection with the
    largest budget per fold gives every point of the curve (``constraints_at``); it is
    cached, which needs the curve to run in this process (``n_jobs=1``).
    """
    active_mod = require("hmrf.active")
    cache = {}

    def supervise(X, y, train, point, rng):
        n = y.shape[0]
        key = (seed_of(rng), train.tobytes())
        if key not in cache:
            cache.clear()
            sel = selector(key[0])
            sel.fit(X[train], active_mod.LabelOracle(y[train], budget=max(POINTS)))
            cache[key] = sel
        c = cache[key].constraints_at(int(point))  # indices into the training part
        return Constraints(n, train[c.pairs], c.kind, c.weight)

    supervise.__name__ = name
    return supervise


def curves(rep, ds, emission, w, title, arms):
    """One learning curve per (label, supervision) arm on the same splits, combined."""
    model = HMRFKMeans(3, emission=emission, w=w, inference="icm", init="neighborhoods", n_init=1)
    tables = [run(rep, f"ch5-{ds}-{label}", ds, {label: model}, supervision=sup, points=POINTS,
                  runs=1, folds=10, present=False, n_jobs=None if isinstance(sup, str) else 1)
              for label, sup in arms]
    if any(t is None for t in tables):
        return None
    table = tables[0]
    for t in tables[1:]:
        table = table + t
    table.meta = dict(tables[0].meta, seconds=sum(t.meta["seconds"] for t in tables))
    show(rep, f"ch5-{ds}-{'-vs-'.join(a for a, _ in arms)}", table, title=title)
    return table


def main():
    args = parse_args(__doc__.split("\n\n")[0], "results/reproduce/ch5")
    act = require("hmrf.active")
    rep = Report(args, "ch5_active")
    rep.add("## Chapter 5: active constraint selection (10-fold CV, NMI on the held-out tenth)")
    for ds, emission, w, fig in EXPERIMENTS:
        ec = active(lambda s, e=emission: act.ExploreConsolidate(3, emission=e, random_state=s),
                    "explore_consolidate")
        t = curves(rep, ds, emission, w, f"{ds}, {emission}, w={w:g} ({fig})",
                   [("random", "constraints"), ("explore-consolidate", ec)])
        if t is not None:
            rep.add("\n".join([compare_line(t, "explore-consolidate", "random"),
                               compare_line(t, "explore-consolidate", "random", "pairwise_f")]))
    ex = active(lambda s: act.Explore(None, emission="cosine", random_state=s), "explore")
    ec = active(lambda s: act.ExploreConsolidate(3, emission="cosine", random_state=s),
                "explore_consolidate")
    t = curves(rep, "3-news-different", "cosine", 0.001,
               "3-news-different, cosine: Explore vs Explore+Consolidate (Fig. 5.18)",
               [("random", "constraints"), ("explore", ex), ("explore-consolidate", ec)])
    if t is not None:
        rep.add("\n".join([compare_line(t, "explore-consolidate", "explore"),
                           compare_line(t, "explore", "random")]))
    rep.write()


if __name__ == "__main__":
    main()
