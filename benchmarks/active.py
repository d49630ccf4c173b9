"""Benchmark of active constraint selection (Basu 2005 ch. 5; Xiong et al. 2014; COBRAS).

Three parts, each writing a table that docs/active_learning.md includes
(``docs/results/active_*.md``, through ``benchmarks/_results.py``):

``xiong`` — on wine, iris, breast cancer and digits {3, 8, 9} (bundled with
scikit-learn; features standardised), for budgets of 20-100 queries and 10 runs: the
pairwise F-measure of the clustering obtained with the constraints (and their
transitive closure, Xiong et al. §4.1.2) selected by RandomPairs, ExploreConsolidate,
MinMax and NPU, clustered by MPCKMeans (the clusterer of Xiong et al.) and PCKMeans,
answered by a noise-free label oracle, both clusterers with the papers' settings
(``PAPER``: w = 1, the ICML 2004 seeding, one run); Xiong et al.'s Table 2 rows beside
ours for Wine, the one data set that is the same. "NPU, fast" is NPU with its interactive
settings (``warm_start=True, forest_tolerance=0.01``): what they cost in quality.

``cobras`` — the adjusted Rand index after 25, 50 and 100 queries on six data sets
(iris, wine, breast_cancer, digits389, pendigits-389, letters-ijl; wine and
breast_cancer standardised, the others as they come), 10 runs, label oracle: the
reference implementation ``cobras-ts`` (optional: ``pip install cobras-ts``; it needs
NumPy's removed ``np.int``, restored here for it only), hmrf's :class:`COBRAS` and the
hmrf pipelines (the library's defaults); then (``own``, also a part of its own) hmrf's
COBRAS against ``cobras-ts`` alone over 50 runs. ``--cache FILE`` (JSON) keeps each
finished cell (data set, column) of the ``cobras`` table, so that an interrupted run
resumes and several processes can share the work (``--cobras-datasets`` apart, then
one run over all data sets writes the table from the cache); delete it after changing
the library.

``timing`` — selection time against ``active_semi_clustering`` (Švehla 2018;
``pip install --no-deps active-semi-supervised-clustering metric-learn``) on digits
{3, 8, 9} with 50 queries, runs interleaved (ours, the peer, ours, ...) and the median
of the paired ratios reported; and the time per query of each selector on 1,000 points.
NPU re-clusters with the paper's PCKMeans in both libraries.

Run from the repository root (time it on an otherwise idle machine)::

    python benchmarks/active.py                       # every part
    python benchmarks/active.py --parts cobras        # one part (with ``own``)
    python benchmarks/active.py --parts own timing    # the 50-run COBRAS table and the timing
    python benchmarks/active.py --quick               # 2 runs, small budgets, no files
    python benchmarks/active.py --parts cobras --cache cobras.json --no-write \\
        --cobras-datasets iris wine breast_cancer     # one process; another the other three
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
import time

import numpy as np
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import markdown_table, write_result  # noqa: E402

from hmrf import Constraints, MPCKMeans, PCKMeans  # noqa: E402
from hmrf.active import (  # noqa: E402
    COBRAS,
    NPU,
    ExploreConsolidate,
    LabelOracle,
    MinMax,
    RandomPairs,
    fit_clusterer,
)
from hmrf.datasets import load_dataset  # noqa: E402
from hmrf.emissions import Mahalanobis  # noqa: E402
from hmrf.experiments import active_curve  # noqa: E402

XIONG_DATASETS = ("wine", "iris", "breast_cancer", "digits389")
COBRAS_DATASETS = ("iris", "wine", "breast_cancer", "digits389", "pendigits-389", "letters-ijl")
STANDARDISED = ("wine", "breast_cancer")  # standardised in the ``cobras`` part (module docstring)

SELECTORS = {
    "Random": lambda k: RandomPairs(),
    "E&C": lambda k: ExploreConsolidate(k),
    "Min-Max": lambda k: MinMax(k),
    "NPU": lambda k: NPU(),
    "NPU, fast": lambda k: NPU(warm_start=True, forest_tolerance=0.01),
}

#: Xiong, Azimi & Fern (2014), Table 2, pairwise F (mean ± std over 50 runs, MPCKMeans
#: in WekaUT), budgets 20, 40, 60, 80, 100. Only Wine is the same data set as ours.
XIONG_TABLE2 = {
    "Random": ("0.871 ± 0.044", "0.853 ± 0.073", "0.836 ± 0.102", "0.843 ± 0.082", "0.827 ± 0.095"),
    "Min-Max": ("0.909 ± 0.018", "0.935 ± 0.037", "0.945 ± 0.035", "0.953 ± 0.010", "0.959 ± 0.012"),
    "Huang": ("0.931 ± 0.042", "0.964 ± 0.031", "0.982 ± 0.012", "0.988 ± 0.011", "0.994 ± 0.007"),
    "NPU": ("0.945 ± 0.025", "0.992 ± 0.008", "1.000 ± 0.000", "1.000 ± 0.000", "1.000 ± 0.000"),
}
XIONG_BUDGETS = (20, 40, 60, 80, 100)

#: The papers' clusterers (WekaUT's PCKMeans / MPCKMeans): w = 1, the ICML 2004 seeding,
#: one run; PCKMeans' greedy (ICM) assignment, MPCKMeans' E-step by BP as in
#: docs/active_learning.md. The library's defaults differ (docs/choosing.md).
PAPER = {"PCKMeans": dict(w=1.0, emission="sqeuclidean", inference="icm", init="pckmeans", n_init=1),
         "MPCKMeans": dict(w=1.0, inference="bp", init="pckmeans", n_init=1,
                           emission=Mahalanobis("diagonal", shrinkage=0.01))}


def standardised(X):
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def load(name, standardise):
    X, y = load_dataset(name)
    return (standardised(X) if standardise else X), y


# ------------------------------------------------------------------ part 1: Xiong
def xiong(args):
    rows = []
    budgets = [0, *args.budgets]
    for ds in args.datasets:
        X, y = load(ds, True)
        k = int(np.unique(y).size)
        for cname, cls in (("MPCKMeans", MPCKMeans), ("PCKMeans", PCKMeans)):
            for sname in SELECTORS:
                t0 = time.perf_counter()
                cur = active_curve(SELECTORS[sname](k), cls(k, **PAPER[cname]), X, y, budgets=budgets,
                                   n_runs=args.runs, random_state=args.seed, dataset=ds)
                f = cur.mean("pairwise_f")
                print(f"  {ds:14s} {cname:10s} {sname:8s} "
                      + " ".join(f"F@{b}={v:.3f}" for b, v in zip(budgets, f, strict=True))
                      + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
                rows.append((ds, cname, sname, cur))
    header = ["data set", "clusterer", "selector", "F, 0 queries", *map(str, args.budgets)]
    body = []
    for ds, cname, sname, cur in rows:
        mu, sd = cur.mean("pairwise_f"), cur.std("pairwise_f")
        body.append([ds, cname, sname, f"{mu[0]:.3f}",
                     *(f"{mu[i]:.3f} ± {sd[i]:.3f}" for i in range(1, len(budgets)))])
    if "wine" in args.datasets and tuple(args.budgets) == XIONG_BUDGETS:
        for sname, cells in XIONG_TABLE2.items():
            body.append(["wine", "Xiong et al. Table 2 (MPCKMeans, WekaUT, 50 runs)", sname, "–", *cells])
    table = markdown_table(header, body, align=["---"] * 3 + ["---:"] * (len(budgets)))
    print("\nPairwise F-measure (mean ± std over runs)\n\n" + table)
    if args.write:
        write_result("active_xiong", table, notes=(
            f"Pairwise F-measure, mean ± std over {args.runs} runs (seed {args.seed}); features "
            "standardised; noise-free label oracle; PCKMeans and MPCKMeans with the papers' settings "
            "(w = 1, the ICML 2004 seeding, one run; ICM and BP E-steps); the clusterer gets the "
            "transitive closure of "
            "the answers; the \"F, 0 queries\" column is the clustering without constraints."))


# ----------------------------------------------------------------- part 2: COBRAS
def cobras_ts_curve(X, y, budgets, runs):
    """ARI of the reference ``cobras-ts`` 0.1.3 after each budget; None if not installed.

    Run ``r`` seeds NumPy's global generator with ``r`` (the package draws its k-means
    initialisations from it); the clustering after ``b`` queries is its intermediate
    result for query ``b`` (the last clustering whose merging phase was complete).
    """
    if not hasattr(np, "int"):
        np.int = int  # noqa: NPY001 -- cobras-ts 0.1.3 uses the alias NumPy 1.24 removed
    try:
        from cobras_ts.cobras_kmeans import COBRAS_kmeans
    except ImportError:
        return None

    class Querier:  # cobras_ts.querier imports its web front end (bokeh); the protocol is this
        def __init__(self, labels):
            self.labels = labels

        def query_points(self, i, j):
            return bool(self.labels[i] == self.labels[j])

        def continue_cluster_process(self):
            return True

        def update_clustering(self, clustering):
            pass

    out = np.empty((runs, len(budgets)))
    for r in range(runs):
        np.random.seed(r)  # noqa: NPY002 -- the package draws from NumPy's global generator
        final, intermediate, *_ = COBRAS_kmeans(X, Querier(y), max(budgets)).cluster()
        for b, budget in enumerate(budgets):
            labels = (intermediate[budget - 1] if budget - 1 < len(intermediate)
                      else final.construct_cluster_labeling())
            out[r, b] = adjusted_rand_score(y, labels)
    return out


def switch_curve(X, y, k, budgets, runs, at, seed):
    """COBRAS for the first ``at`` queries, then NPU warm-started from its answers;
    clustered by MPCKMeans (COBRAS's supervision up to ``at``, the closure after)."""
    seeds = np.random.default_rng(seed).integers(np.iinfo(np.int32).max, size=runs)
    out = np.empty((runs, len(budgets)))
    for r, s in enumerate(seeds.tolist()):
        first = COBRAS(k, random_state=s).fit(X, LabelOracle(y, budget=at))
        rest = NPU(MPCKMeans(k), random_state=s).fit(
            X, LabelOracle(y, budget=max(budgets) - at), constraints=first.constraints_)
        for b, budget in enumerate(budgets):
            sup = (first.clusterer_constraints(budget) if budget <= at
                   else rest.constraints_at(budget - at).closure())
            labels = fit_clusterer(MPCKMeans(k, closure=False, random_state=s), X, sup)
            out[r, b] = adjusted_rand_score(y, labels)
    return out


#: name -> (selector, clusterer) for a data set with k classes; None: the selector's own
PIPELINES = {
    "COBRAS (hmrf)": lambda k: (COBRAS(), None),
    "COBRAS + MPCKMeans": lambda k: (COBRAS(k), MPCKMeans(k)),
    "COBRAS + MPCKMeans, answers only": lambda k: (COBRAS(k, super_instance_weight=0.0), MPCKMeans(k)),
    "COBRAS + PCKMeans": lambda k: (COBRAS(k), PCKMeans(k)),
    "NPU + MPCKMeans": lambda k: (NPU(MPCKMeans(k)), MPCKMeans(k)),
    "E&C + PCKMeans": lambda k: (ExploreConsolidate(k), PCKMeans(k)),
}
SWITCH = "COBRAS, then NPU + MPCKMeans at 25"
WINNER = "COBRAS + MPCKMeans"


class CellCache:
    """Finished cells of the ``cobras`` table in a JSON file shared by processes: each
    write re-reads the file under an exclusive lock and adds its cell."""

    def __init__(self, path):
        self.path = path

    def _read(self):
        if not (self.path and os.path.exists(self.path)):
            return {}
        with open(self.path, encoding="utf-8") as f:
            return json.load(f)

    def get(self, key):
        cell = self._read().get(key)
        return None if cell is None else np.asarray(cell)

    def put(self, key, scores):
        if not self.path:
            return
        with open(self.path + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            cells = self._read()
            cells[key] = np.asarray(scores).tolist()
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(cells, f)
            os.replace(tmp, self.path)


def cobras(args):
    budgets = list(args.cobras_budgets)
    names = ["cobras-ts", *args.pipelines]
    results = {}
    cache = CellCache(args.cache)
    for ds in args.cobras_datasets:
        X, y = load(ds, ds in STANDARDISED)
        k = int(np.unique(y).size)
        for name in names:
            key = f"{ds}|{name}|{args.runs}|{args.seed}|{'/'.join(map(str, budgets))}"
            cached = cache.get(key)
            if cached is not None:
                results[ds, name] = cached
                print(f"  {ds:14s} {name:36s} " + " / ".join(f"{v:.3f}" for v in cached.mean(axis=0))
                      + "  (cached)", flush=True)
                continue
            t0 = time.perf_counter()
            if name == "cobras-ts":
                scores = cobras_ts_curve(X, y, budgets, args.runs)
                if scores is None:
                    print("  cobras-ts is not installed: no reference (pip install cobras-ts)")
                    continue
            elif name == SWITCH:
                scores = switch_curve(X, y, k, budgets, args.runs, 25, args.seed)
            else:
                sel, clu = PIPELINES[name](k)
                scores = active_curve(sel, clu, X, y, budgets=budgets, n_runs=args.runs,
                                      random_state=args.seed, dataset=ds).scores["ari"]
            results[ds, name] = scores
            cache.put(key, scores)
            dt = (time.perf_counter() - t0) / args.runs
            print(f"  {ds:14s} {name:36s} " + " / ".join(f"{v:.3f}" for v in scores.mean(axis=0))
                  + f"  ({dt:.1f} s a run)", flush=True)
    shown = [n for n in names if any((ds, n) in results for ds in args.cobras_datasets)]
    body = []
    for ds in args.cobras_datasets:
        row = [ds]
        for n in shown:
            if (ds, n) not in results:
                row.append("–")
                continue
            mu = results[ds, n].mean(axis=0)
            row.append(" / ".join(f"{v:.3f}" for v in mu))
        body.append(row)
    table = markdown_table(["data set", *shown], body, align=["---"] + ["---:"] * len(shown))
    notes = [f"Adjusted Rand index on all points after {' / '.join(map(str, budgets))} queries, mean "
             f"over {args.runs} runs; noise-free label oracle; wine and breast_cancer standardised, "
             "the others as they come. The pipelines cluster with the answers' transitive closure "
             "(and COBRAS's super-instances, `COBRAS.clusterer_constraints`); `COBRAS (hmrf)` is "
             "COBRAS's own clustering, without the number of classes."]
    if "cobras-ts" in shown and WINNER in shown:
        gaps = np.concatenate([results[ds, WINNER].mean(axis=0) - results[ds, "cobras-ts"].mean(axis=0)
                               for ds in args.cobras_datasets])
        cells = int(np.sum(gaps >= 0))
        notes.append(f"{WINNER} against cobras-ts: at or above it in {cells} of {gaps.size} cells; "
                     f"smallest difference {gaps.min():+.3f}, largest {gaps.max():+.3f}.")
        se = np.concatenate([np.sqrt(results[ds, WINNER].var(axis=0, ddof=1)
                                     + results[ds, "cobras-ts"].var(axis=0, ddof=1)) / np.sqrt(args.runs)
                             for ds in args.cobras_datasets])
        notes.append(f"Standard error of a difference of two means of {args.runs} runs: "
                     f"{se.min():.3f}–{se.max():.3f}.")
    print("\n" + table + "\n\n" + "\n".join(notes))
    if args.write:
        write_result("active_cobras", table, notes="\n".join(notes))
    if args.own_runs and "COBRAS (hmrf)" in args.pipelines and "own" not in args.parts:
        own_against_reference(args, budgets)


def own_against_reference(args, budgets):
    """hmrf's COBRAS and cobras-ts over many runs: mean ± standard error."""
    body = []
    for ds in args.cobras_datasets:
        X, y = load(ds, ds in STANDARDISED)
        ref = cobras_ts_curve(X, y, budgets, args.own_runs)
        if ref is None:
            return
        ours = active_curve(COBRAS(), None, X, y, budgets=budgets, n_runs=args.own_runs,
                            random_state=args.seed, dataset=ds).scores["ari"]
        row = [ds]
        for a in (ref, ours):
            se = a.std(axis=0, ddof=1) / np.sqrt(a.shape[0])
            row.append(" / ".join(f"{m:.3f} ± {e:.3f}" for m, e in zip(a.mean(axis=0), se, strict=True)))
        diff = ours.mean(axis=0) - ref.mean(axis=0)
        row.append(" / ".join(f"{d:+.3f}" for d in diff))
        body.append(row)
        print(f"  {ds:14s} {args.own_runs} runs: " + " | ".join(row[1:]), flush=True)
    table = markdown_table(["data set", "cobras-ts", "COBRAS (hmrf)", "difference"], body,
                           align=["---", "---:", "---:", "---:"])
    notes = (f"Adjusted Rand index after {' / '.join(map(str, budgets))} queries, mean ± standard error "
             f"over {args.own_runs} runs; the same protocol as the table above. Both are COBRAS "
             "without the number of classes.")
    print("\n" + table + "\n\n" + notes)
    if args.write:
        write_result("active_cobras_own", table, notes=notes)


# ----------------------------------------------------------------- part 3: timing
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


def _peer():
    try:
        from active_semi_clustering.active.pairwise_constraints import NPU as PeerNPU
        from active_semi_clustering.active.pairwise_constraints import ExploreConsolidate as PeerEC
        from active_semi_clustering.active.pairwise_constraints import MinMax as PeerMinMax
        from active_semi_clustering.active.pairwise_constraints.example_oracle import ExampleOracle
    except ImportError:
        return None
    return PeerNPU, PeerEC, PeerMinMax, ExampleOracle


def _time_ours(sel, X, y, budget):
    t0 = time.perf_counter()
    sel.fit(X, LabelOracle(y, budget=budget))
    total = time.perf_counter() - t0
    timings = getattr(sel, "timings_", None)
    return total, (timings["select"] if timings else total), getattr(sel, "n_iter_", sel.n_queries_)


def _time_peer(make, X, y, budget, oracle_cls, seed):
    np.random.seed(seed)  # noqa: NPY002 -- the peer draws from NumPy's global generator
    peer = make()
    spent = []
    inner = getattr(peer, "_most_informative", None)
    if inner is not None:
        def timed(*a, **kw):
            t = time.perf_counter()
            out = inner(*a, **kw)
            spent.append(time.perf_counter() - t)
            return out

        peer._most_informative = timed  # the selection step only (instance attribute)
    t0 = time.perf_counter()
    peer.fit(X, oracle=oracle_cls(y, max_queries_cnt=budget))
    total = time.perf_counter() - t0
    return total, (sum(spent) if inner is not None else total), (len(spent) or budget)


def timing(args):
    peer = _peer()
    X, y = load("digits389", True)
    k = int(np.unique(y).size)
    budget = args.timing_budget
    clusterer = PCKMeans(k, **PAPER["PCKMeans"], random_state=0)  # the same in both libraries
    fast = dict(warm_start=True, forest_tolerance=0.01)
    ours = {
        "NPU": lambda: NPU(clusterer, random_state=0),
        "NPU, warm_start=True, forest_tolerance=0.01": lambda: NPU(clusterer, **fast, random_state=0),
        "NPU, the same with n_jobs=2": lambda: NPU(clusterer, **fast, n_jobs=2, random_state=0),
        "E&C": lambda: ExploreConsolidate(k, random_state=0),
        "Min-Max": lambda: MinMax(k, random_state=0),
    }
    peers = {}
    if peer is not None:
        PeerNPU, PeerEC, PeerMinMax, ExampleOracle = peer
        peers = {"NPU": lambda: PeerNPU(clusterer=PeerClusterer(clusterer)),
                 "E&C": lambda: PeerEC(n_clusters=k), "Min-Max": lambda: PeerMinMax(n_clusters=k)}
    else:
        print("  active_semi_clustering is not installed: no comparison")
    print(f"\nSelection on digits389 (n={X.shape[0]}, d={X.shape[1]}), {budget} queries, "
          f"{args.repeats} interleaved repeats", flush=True)
    rec = {name: [] for name in ours}
    rec.update({("peer", name): [] for name in peers})
    for rep in range(args.repeats):
        for name, make in ours.items():
            rec[name].append(_time_ours(make(), X, y, budget))
            if name in peers:
                rec["peer", name].append(_time_peer(peers[name], X, y, budget, ExampleOracle, rep))
        print(f"  repeat {rep + 1}: " + ", ".join(
            f"{n if isinstance(n, str) else 'peer ' + n[1]} {v[-1][0]:.2f} s" for n, v in rec.items()),
            flush=True)

    def med(name, i):
        return float(np.median([r[i] for r in rec[name]]))

    header = ["selector", "implementation", "total", "selection", "selections",
              "per selection", "peer / ours, total", "peer / ours, selection"]
    body = []
    for name in ours:
        base = name.split(",")[0]
        row = [base, "hmrf" + (name[len(base):] if name != base else ""),
               f"{med(name, 0):.2f} s", f"{med(name, 1):.2f} s", f"{med(name, 2):.0f}",
               f"{1000 * med(name, 1) / max(med(name, 2), 1):.1f} ms"]
        if base in peers:
            pr = rec["peer", base]
            ratio_total = np.median([p[0] / o[0] for p, o in zip(pr, rec[name], strict=True)])
            ratio_sel = np.median([(p[1] / p[2]) / (o[1] / max(o[2], 1))
                                   for p, o in zip(pr, rec[name], strict=True)])
            row += [f"{ratio_total:.1f}×", f"{ratio_sel:.1f}×"]
        else:
            row += ["–", "–"]
        body.append(row)
    for base in peers:
        name = ("peer", base)
        body.append([base, "active_semi_clustering", f"{med(name, 0):.2f} s", f"{med(name, 1):.2f} s",
                     f"{med(name, 2):.0f}", f"{1000 * med(name, 1) / max(med(name, 2), 1):.1f} ms",
                     "1.0×", "1.0×"])
    table = markdown_table(header, body, align=["---", "---"] + ["---:"] * 6)

    # time per query on 1,000 points (10 classes)
    from sklearn.datasets import load_digits

    Xd, yd = load_digits(return_X_y=True)
    X1, y1 = standardised(Xd[:1000]), yd[:1000]
    k1 = int(np.unique(y1).size)
    big = PCKMeans(k1, **PAPER["PCKMeans"], random_state=0)
    per_query = []
    for name, make in (("NPU", lambda: NPU(big, random_state=0)),
                       ("NPU, warm_start=True, forest_tolerance=0.01",
                        lambda: NPU(big, warm_start=True, forest_tolerance=0.01, random_state=0)),
                       ("E&C", lambda: ExploreConsolidate(k1, random_state=0)),
                       ("Min-Max", lambda: MinMax(k1, random_state=0))):
        times = []
        for _ in range(args.repeats):
            sel = make()
            t0 = time.perf_counter()
            sel.fit(X1, LabelOracle(y1, budget=args.big_budget))
            times.append((time.perf_counter() - t0) / max(sel.n_queries_, 1))
        per_query.append([name, f"{1000 * float(np.median(times)):.1f} ms", f"{1000 * max(times):.1f} ms"])
        print(f"  1,000 points: {name} {per_query[-1][1]} a query", flush=True)
    table2 = markdown_table(["selector", "median time a query", "slowest run"], per_query,
                            align=["---", "---:", "---:"])
    notes = (f"Digits {{3, 8, 9}} ({X.shape[0]} × {X.shape[1]}, standardised), {budget} queries, label "
             f"oracle; {args.repeats} repeats, ours and the peer's interleaved; medians, and medians of "
             "the paired ratios. NPU re-clusters with the paper's PCKMeans (`PCKMeans(3, w=1, "
             "inference=\"icm\", init=\"pckmeans\", n_init=1)`) in both libraries, the peer through "
             "a 10-line adapter; \"selection\" is the time inside the most-informative-point step "
             "(random forest, probabilities, scores), timed by wrapping the peer's "
             "`_most_informative`; E&C and Min-Max have no clustering inside, so selection is their "
             "total. Below: the time per query of a whole selection run with "
             f"{args.big_budget} queries on the first 1,000 of scikit-learn's digits (10 classes, "
             "standardised), NPU re-clustering with the same model and k = 10.")
    print("\n" + table + "\n\n" + table2)
    if args.write:
        write_result("active_timing", table + "\n\n" + table2, notes=notes)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", nargs="+", default=["xiong", "cobras", "own", "timing"],
                   choices=["xiong", "cobras", "own", "timing"],
                   help="own: hmrf's COBRAS against cobras-ts alone, over --own-runs runs")
    p.add_argument("--datasets", nargs="+", default=list(XIONG_DATASETS))
    p.add_argument("--budgets", nargs="+", type=int, default=list(XIONG_BUDGETS))
    p.add_argument("--cobras-datasets", nargs="+", default=list(COBRAS_DATASETS))
    p.add_argument("--cobras-budgets", nargs="+", type=int, default=[25, 50, 100])
    p.add_argument("--pipelines", nargs="+", default=[*PIPELINES, SWITCH],
                   choices=[*PIPELINES, SWITCH])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--own-runs", type=int, default=50,
                   help="runs of hmrf's COBRAS against cobras-ts alone (0: skip)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", default=None, metavar="FILE",
                   help="JSON file keeping the finished cells of the cobras table")
    p.add_argument("--timing-budget", type=int, default=50)
    p.add_argument("--big-budget", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3, help="interleaved timing repeats")
    p.add_argument("--quick", action="store_true", help="2 runs, small budgets, nothing written")
    p.add_argument("--no-write", dest="write", action="store_false",
                   help="print the tables only (docs/results/ untouched)")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.write, args.repeats = 2, False, 1
        args.datasets, args.budgets = ["wine"], [20, 60]
        args.cobras_datasets, args.cobras_budgets = ["iris", "pendigits-389"], [10, 25]
        args.own_runs = 3
        args.timing_budget, args.big_budget = 15, 15
    print(f"active selection benchmark: parts {args.parts}, {args.runs} runs, seed {args.seed}")
    if "xiong" in args.parts:
        xiong(args)
    if "cobras" in args.parts:
        cobras(args)
    if "own" in args.parts and args.own_runs:
        own_against_reference(args, list(args.cobras_budgets))
    if "timing" in args.parts:
        timing(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
