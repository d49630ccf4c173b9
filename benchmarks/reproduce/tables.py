"""Markdown tables of the reproduction results, for docs/results.md.

Reads the CSVs written by ch3_labels.py, ch4_constraints.py and ch5_active.py::

    python benchmarks/reproduce/tables.py [results/reproduce] [--points 0,50,100,...] [--write]

prints, per experiment, mean NMI ± std per estimator at the chosen points, with
``*`` where the estimator is significantly better than the reference column (two-tailed
paired t-test, p < 0.05, over the same splits and supervision) and ``−`` where it is
significantly worse. ``--write`` also writes each table to
``docs/results/reproduce-<experiment>.md``, which docs/results.md includes.

``--data`` writes ``docs/results/reproduce-data.md`` instead: the size of every data set
of the reproductions as :func:`hmrf.datasets.load_dataset` gives it (points, features or
TF-IDF terms, classes).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _results import markdown_table, write_result  # noqa: E402

from hmrf.experiments import CurveTable  # noqa: E402

#: the data sets of the reproductions (chapters 3-5), in the order of docs/results.md
DATASETS = ("3-news-different", "3-news-related", "3-news-similar", "20-news-100",
            "pendigits-389", "letters-ijl", "iris")

#: experiment file prefix -> reference estimator of the significance marks
REFERENCE = {"ch3-": "Random-KMeans", "ch4-": "KMeans", "ch5-": "random"}


def table(t: CurveTable, points=None, metric="nmi", alpha=0.05) -> str:
    rows = t.summary([metric])
    x = "noise" if len({r["point"] for r in rows}) == 1 else "point"
    ests = t.estimators
    ref = next((v for k, v in REFERENCE.items() if t.meta.startswith(k)), None)
    marks = {}
    if ref in ests:
        for e in ests:
            if e == ref:
                continue
            for c in t.compare(e, ref, metric):
                sig = c["p_value"] < alpha
                marks[e, c[x]] = ("*" if c["mean_diff"] > 0 else "−") if sig else ""
    xs = sorted({r[x] for r in rows})
    if points is not None and x == "point" and {r["supervision"] for r in t} != {"labels"}:
        xs = [v for v in xs if v in points]
    cell = {(r["estimator"], r[x]): r for r in rows}
    out = [f"| {x} | " + " | ".join(ests) + " |", "|---" * (len(ests) + 1) + "|"]
    for v in xs:
        cells = []
        for e in ests:
            r = cell[e, v]
            fail = f" ({r['n_failed']} failed)" if r["n_failed"] else ""
            cells.append(f"{r[metric + '_mean']:.3f} ± {r[metric + '_std']:.3f}"
                         f"{marks.get((e, v), '')}{fail}")
        out.append(f"| {v:g} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def data_table() -> str:
    """Points, features (TF-IDF terms on text) and classes of :data:`DATASETS`, loaded."""
    from hmrf.datasets import load_dataset

    rows = []
    for name in DATASETS:
        X, y = load_dataset(name)
        rows.append([f"`{name}`", f"{X.shape[0]:,}", f"{X.shape[1]:,}", len(set(y.tolist()))])
    return markdown_table(["data set", "points", "features (terms on text)", "classes"], rows)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", nargs="?", default="results/reproduce")
    p.add_argument("--points", default=None, help="comma-separated points to show")
    p.add_argument("--metric", default="nmi")
    p.add_argument("--write", action="store_true",
                   help="also write docs/results/reproduce-<experiment>.md for every table")
    p.add_argument("--data", action="store_true",
                   help="write docs/results/reproduce-data.md (the data sets' sizes) and stop")
    args = p.parse_args()
    if args.data:
        print("wrote", write_result("reproduce-data", data_table(),
                                    notes="Sizes as `hmrf.datasets.load_dataset(name)` returns "
                                          "them (sample seed 0)."))
        return
    points = None if args.points is None else {float(v) for v in args.points.split(",")}
    for path in sorted(glob.glob(os.path.join(args.root, "ch*", "ch*.csv"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name.startswith("ch5-") and "-vs-" not in name:
            continue  # single arms of the combined ch5 tables
        t = CurveTable.from_csv(path)
        t.meta = name
        body = table(t, points, args.metric)
        print(f"#### {name}\n\n{body}\n")
        if args.write:
            ref = next((v for k, v in REFERENCE.items() if name.startswith(k)), "—")
            write_result(f"reproduce-{name}", body,
                         notes=f"Mean {args.metric.upper()} ± std over {len(t)} fits in all "
                               f"(`{os.path.relpath(path)}`); `*` / `−`: significantly better / "
                               f"worse than {ref} (two-tailed paired t-test, p < 0.05).")


if __name__ == "__main__":
    main()
