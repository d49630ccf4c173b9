"""Benchmark of active constraint selection (issue 5; Basu 2005 ch. 5; Xiong et al. 2014).

Part 1 — quality. On wine, iris, breast cancer and digits {3, 8, 9} (bundled with
scikit-learn; features standardised to zero mean and unit variance), for budgets of
20, 40, 60, 80 and 100 queries and 10 runs: the pairwise F-measure of the clustering
obtained with the constraints (and their transitive closure, as Xiong et al. §4.1.2)
selected by RandomPairs, ExploreConsolidate, MinMax and NPU, clustered by MPCKMeans
(the clusterer of Xiong et al.) and by PCKMeans, answered by a noise-free label
oracle. Xiong et al.'s Table 2 rows are printed next to ours where the data set is the
same: only Wine (their "Breast" is the 683 x 9 original Wisconsin data, not the
569 x 30 WDBC set scikit-learn bundles; their "Digits-389" is the 3165 x 16 pen-based
digits, not the 537 x 64 optical digits).

Part 2 — speed. One NPU selection run on digits {3, 8, 9} with the same budget,
ours against ``active_semi_clustering``'s NPU (Švehla 2018). Both re-cluster with the
same clusterer (our PCKMeans, the peer through a small adapter taking its ``ml``/``cl``
lists), so the difference is the selection itself: random forest + probabilities +
scores. We report the total time, the time inside the selection step per iteration,
and ours with and without forest reuse.

Run from the repository root::

    python benchmarks/active.py                      # full run, writes results/bench_active/
    python benchmarks/active.py --quick              # 2 runs, budgets 20 and 60, wine only
    python benchmarks/active.py --no-quality         # only the timing
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from sklearn.base import clone

from hmrf import Constraints, PCKMeans
from hmrf.active import NPU, ExploreConsolidate, LabelOracle, MinMax, RandomPairs
from hmrf.datasets import load_dataset
from hmrf.experiments import active_curve

DATASETS = ("wine", "iris", "breast_cancer", "digits389")

SELECTORS = {
    "Random": lambda k: RandomPairs(),
    "E&C": lambda k: ExploreConsolidate(k),
    "Min-Max": lambda k: MinMax(k),
    "NPU": lambda k: NPU(),
}

#: Xiong, Azimi & Fern (2014), Table 2, pairwise F (mean ± std over 50 runs, MPCKMeans
#: in WekaUT), budgets 20, 40, 60, 80, 100. Only Wine is the same data set as ours.
XIONG_TABLE2 = {
    "wine": {
        "Random": (
            "0.871 ± 0.044",
            "0.853 ± 0.073",
            "0.836 ± 0.102",
            "0.843 ± 0.082",
            "0.827 ± 0.095",
        ),
        "Min-Max": (
            "0.909 ± 0.018",
            "0.935 ± 0.037",
            "0.945 ± 0.035",
            "0.953 ± 0.010",
            "0.959 ± 0.012",
        ),
        "Huang": (
            "0.931 ± 0.042",
            "0.964 ± 0.031",
            "0.982 ± 0.012",
            "0.988 ± 0.011",
            "0.994 ± 0.007",
        ),
        "NPU": (
            "0.945 ± 0.025",
            "0.992 ± 0.008",
            "1.000 ± 0.000",
            "1.000 ± 0.000",
            "1.000 ± 0.000",
        ),
    },
}
XIONG_BUDGETS = (20, 40, 60, 80, 100)

#: The papers' clusterers (WekaUT's PCKMeans / MPCKMeans): w = 1, the ICML 2004 seeding,
#: one run; PCKMeans' greedy (ICM) assignment, MPCKMeans' E-step by BP as in
#: docs/active_learning.md. The library's defaults differ (docs/choosing.md).
PAPER_PCKMEANS = dict(w=1.0, inference="icm", init="pckmeans", n_init=1, random_state=0)
PAPER = {"PCKMeans": dict(w=1.0, inference="icm", init="pckmeans", n_init=1),
         "MPCKMeans": dict(w=1.0, inference="bp", init="pckmeans", n_init=1)}


def standardised(name):
    X, y = load_dataset(name)
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), y


def clusterers(names):
    out = {}
    for name in names:
        if name == "mpckmeans":
            try:
                from hmrf import MPCKMeans
            except ImportError:
                print("MPCKMeans is not available (hmrf.MPCKMeans missing): skipped", file=sys.stderr)
                continue
            out["MPCKMeans"] = MPCKMeans
        elif name == "pckmeans":
            out["PCKMeans"] = PCKMeans
        else:
            raise SystemExit(f"unknown clusterer {name!r}")
    return out


def quality(args):
    rows = []
    budgets = [0, *args.budgets]
    for ds in args.datasets:
        X, y = standardised(ds)
        k = int(np.unique(y).size)
        for cname, cls in clusterers(args.clusterers).items():
            for sname in args.selectors:
                t0 = time.perf_counter()
                cur = active_curve(
                    SELECTORS[sname](k),
                    cls(k, **PAPER[cname]),
                    X,
                    y,
                    budgets=budgets,
                    n_runs=args.runs,
                    random_state=args.seed,
                    dataset=ds,
                )
                dt = time.perf_counter() - t0
                rows.append((ds, cname, sname, cur))
                f = cur.mean("pairwise_f")
                print(
                    f"  {ds:14s} {cname:10s} {sname:8s} F@0={f[0]:.3f} "
                    + " ".join(f"F@{b}={v:.3f}" for b, v in zip(budgets[1:], f[1:], strict=True))
                    + f"  ({dt:.0f} s; failures: {len(cur.failures)})",
                    flush=True,
                )
                if args.out:
                    slug = sname.replace("&", "").replace("-", "")
                    cur.to_csv(os.path.join(args.out, f"curve-{ds}-{cname}-{slug}.csv"))
    return rows


def markdown(rows, budgets):
    head = "| data set | clusterer | selector | F, 0 queries | " + " | ".join(str(b) for b in budgets) + " |"
    lines = [head, "|" + "---|" * (4 + len(budgets))]
    for ds, cname, sname, cur in rows:
        mu, sd = cur.mean("pairwise_f"), cur.std("pairwise_f")
        cells = [f"{mu[i]:.3f} ± {sd[i]:.3f}" for i in range(1, len(budgets) + 1)]
        lines.append(f"| {ds} | {cname} | {sname} | {mu[0]:.3f} | " + " | ".join(cells) + " |")
    for ds, table in XIONG_TABLE2.items():
        if not any(r[0] == ds for r in rows) or tuple(budgets) != XIONG_BUDGETS:
            continue
        for sname, cells in table.items():
            lines.append(
                f"| {ds} | Xiong et al. Table 2 (MPCKMeans, WekaUT, 50 runs) | {sname} | – | "
                + " | ".join(cells)
                + " |"
            )
    return "\n".join(lines)


class PeerClusterer:
    """``active_semi_clustering``'s clusterer interface around an hmrf estimator."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y=None, ml=None, cl=None):
        n = X.shape[0]
        ml = np.asarray(ml, dtype=np.int64).reshape(-1, 2) if ml else None
        cl = np.asarray(cl, dtype=np.int64).reshape(-1, 2) if cl else None
        est = clone(self.estimator).fit(X, constraints=Constraints.from_pairs(ml, cl, n=n))
        self.labels_ = est.labels_
        return self


def timing(args):
    X, y = standardised("digits389")
    k = int(np.unique(y).size)
    budget = args.timing_budget
    print(
        f"\nNPU on digits389 (n={X.shape[0]}, d={X.shape[1]}), budget {budget}, "
        f"clusterer PCKMeans(k={k}, w=1, inference='icm', init='pckmeans', n_init=1) for both"
    )
    results = {}
    for reuse in (False, True):
        sel = NPU(PCKMeans(k, **PAPER_PCKMEANS), reuse_forest=reuse, random_state=0)
        t0 = time.perf_counter()
        sel.fit(X, LabelOracle(y, budget=budget))
        total = time.perf_counter() - t0
        per = sel.timings_["select"] / max(sel.n_iter_, 1)
        name = f"hmrf NPU (reuse_forest={reuse})"
        results[name] = (total, sel.timings_["select"], sel.n_iter_, per)
        print(
            f"  {name:34s} total {total:7.2f} s   selection {sel.timings_['select']:7.2f} s "
            f"over {sel.n_iter_} iterations = {1000 * per:7.1f} ms each "
            f"({sel.n_forests_} forests); clustering {sel.timings_['cluster']:.2f} s",
            flush=True,
        )
    try:
        from active_semi_clustering.active.pairwise_constraints import NPU as PeerNPU
        from active_semi_clustering.active.pairwise_constraints.example_oracle import ExampleOracle
    except ImportError:
        print("  active_semi_clustering is not installed: no comparison")
        return results
    np.random.seed(0)  # noqa: NPY002 -- the peer draws from NumPy's global generator
    peer = PeerNPU(clusterer=PeerClusterer(PCKMeans(k, **PAPER_PCKMEANS)))
    spent = []
    inner = peer._most_informative

    def timed(*a, **kw):
        t = time.perf_counter()
        out = inner(*a, **kw)
        spent.append(time.perf_counter() - t)
        return out

    peer._most_informative = timed  # time the selection step only (instance attribute)
    t0 = time.perf_counter()
    peer.fit(X, oracle=ExampleOracle(y, max_queries_cnt=budget))
    total = time.perf_counter() - t0
    per = sum(spent) / max(len(spent), 1)
    results["active_semi_clustering NPU"] = (total, sum(spent), len(spent), per)
    print(
        f"  {'active_semi_clustering NPU':34s} total {total:7.2f} s   "
        f"selection {sum(spent):7.2f} s "
        f"over {len(spent)} iterations = {1000 * per:7.1f} ms each",
        flush=True,
    )
    return results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--clusterers", nargs="+", default=["mpckmeans", "pckmeans"])
    p.add_argument("--selectors", nargs="+", default=list(SELECTORS), choices=list(SELECTORS))
    p.add_argument("--budgets", nargs="+", type=int, default=list(XIONG_BUDGETS))
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timing-budget", type=int, default=100)
    p.add_argument("--no-quality", action="store_true")
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--quick", action="store_true", help="wine, 2 runs, budgets 20 60")
    p.add_argument("--out", default=os.path.join("results", "bench_active"))
    args = p.parse_args(argv)
    if args.quick:
        args.datasets, args.runs, args.budgets, args.timing_budget = ["wine"], 2, [20, 60], 30
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    print(
        f"active selection benchmark: {args.runs} runs, budgets {args.budgets}, seed {args.seed}; "
        "features standardised; closure of the constraints given to the clusterer"
    )
    if not args.no_quality:
        rows = quality(args)
        table = markdown(rows, args.budgets)
        print("\nPairwise F-measure (mean ± std over runs)\n")
        print(table)
        if args.out:
            with open(os.path.join(args.out, "table.md"), "w") as fh:
                fh.write(table + "\n")
    if not args.no_timing:
        timing(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
