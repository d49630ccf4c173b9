"""PCKMeans: hmrf vs active-semi-supervised-clustering on the same random constraints.

For iris, wine, digits {3,8,9} and breast cancer, with 0 / 50 / 200 random labelled
pairs and 5 runs, both implementations get the same constraints. Both minimise the
same energy: the peer uses ``½||x - μ||² + w·violations`` with ``w = 1`` and its own
transitive closure, so hmrf runs ``PCKMeans(w=2, closure=True)`` with the paper's
algorithm (``inference="icm", init="pckmeans", n_init=1``). We report mean NMI
over all points and over the points in no constraint, mean pairwise F, mean time, and
how often the peer aborted (it raises on empty clusters).

    pip install --no-deps active-semi-supervised-clustering metric-learn
    python benchmarks/peer_pckmeans.py [--runs 5] [--datasets iris,wine,digits389,breast_cancer]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hmrf import Constraints, PCKMeans
from hmrf.datasets import load_dataset
from hmrf.metrics import nmi, pairwise_f_measure


def peer_class():
    try:
        from active_semi_clustering.semi_supervised.pairwise_constraints import PCKMeans as Peer
    except ImportError as exc:  # pragma: no cover - benchmark helper
        raise SystemExit(
            f"the peer library is missing ({exc}); install it with\n"
            "  pip install --no-deps active-semi-supervised-clustering metric-learn"
        ) from exc
    return Peer


def run_once(X, y, k, n_pairs, seed, Peer):
    c = Constraints.sample_from_labels(y, n_pairs, rng=seed)
    free = np.ones(y.shape[0], dtype=bool)
    free[c.constrained_points] = False
    out = {}
    t0 = time.perf_counter()
    ours = PCKMeans(k, w=2.0, emission="sqeuclidean", closure=True, inference="icm", init="pckmeans",
                    n_init=1, random_state=seed).fit(X, constraints=c)
    out["hmrf"] = (time.perf_counter() - t0, ours.labels_)
    np.random.seed(seed)  # noqa: NPY002 - the peer draws from NumPy's global generator
    t0 = time.perf_counter()
    try:
        ml, cl = c.must_link.tolist(), c.cannot_link.tolist()
        peer = Peer(n_clusters=k, max_iter=100, w=1).fit(X, ml=ml, cl=cl)
        out["peer"] = (time.perf_counter() - t0, peer.labels_)
    except Exception as exc:  # the peer raises EmptyClustersException, among others
        out["peer"] = (time.perf_counter() - t0, type(exc).__name__)
    rows = {}
    for name, (secs, labels) in out.items():
        if isinstance(labels, str):
            rows[name] = dict(time=secs, failed=labels)
        else:
            rows[name] = dict(time=secs, nmi=nmi(y, labels), nmi_free=nmi(y[free], labels[free]),
                              f=pairwise_f_measure(y, labels))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--constraints", default="0,50,200")
    ap.add_argument("--datasets", default="iris,wine,digits389,breast_cancer")
    args = ap.parse_args(argv)
    Peer = peer_class()
    header = (f"{'dataset':14s}{'pairs':>6s} | {'NMI hmrf':>9s}{'NMI peer':>9s} | {'NMIfree h':>10s}"
              f"{'NMIfree p':>10s} | {'F hmrf':>7s}{'F peer':>7s} | {'s hmrf':>8s}{'s peer':>8s}"
              f"{'speedup':>8s}{'peer fail':>10s}")
    print(header)
    print("-" * len(header))
    for name in args.datasets.split(","):
        X, y = load_dataset(name)
        k = int(np.unique(y).shape[0])
        for n_pairs in (int(v) for v in args.constraints.split(",")):
            runs = [run_once(X, y, k, n_pairs, seed, Peer) for seed in range(args.runs)]
            ok = [r["peer"] for r in runs if "failed" not in r["peer"]]
            fails = args.runs - len(ok)

            def mean(who, key, rows=None, runs=runs):
                rows = rows if rows is not None else [r[who] for r in runs]
                vals = [r[key] for r in rows if key in r]
                return float(np.mean(vals)) if vals else float("nan")

            th, tp = mean("hmrf", "time"), mean("peer", "time")
            print(f"{name:14s}{n_pairs:6d} | {mean('hmrf', 'nmi'):9.3f}{mean('peer', 'nmi', ok):9.3f} | "
                  f"{mean('hmrf', 'nmi_free'):10.3f}{mean('peer', 'nmi_free', ok):10.3f} | "
                  f"{mean('hmrf', 'f'):7.3f}{mean('peer', 'f', ok):7.3f} | {th:8.3f}{tp:8.3f}{tp / th:8.1f}"
                  f"{fails:>7d}/{args.runs}")


if __name__ == "__main__":
    main()
