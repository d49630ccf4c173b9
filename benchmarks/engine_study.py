"""The engine study of ``hmrf compare`` as a results file for the docs.

Runs ``hmrf compare`` with the given arguments (by default the README's main job: the
E-step engines on Iris, thesis Fig. 4.13) and writes its summary, one row per number of
constraints and engine, to ``docs/results/<name>.md``, and its four-panel figure to
``docs/_static/<name>.png``; ``docs/experiments.md`` includes both. ``--from DIR``
converts the ``compare-summary.csv`` (and ``compare.png``) of a finished run of the same
command instead of running it again::

    python benchmarks/engine_study.py --name compare-iris
    python benchmarks/engine_study.py --name compare-iris --from results/compare
    python benchmarks/engine_study.py --name compare-3-news-similar -- \\
        --dataset 3-news-similar --emission cosine --runs 10

Times depend on the machine's load (the notes give the load average); wrap a run in
``flock /tmp/bench.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import ROOT, markdown_table, write_result  # noqa: E402

STATIC_DIR = os.path.join(ROOT, "docs", "_static")

README_JOB = ["--dataset", "iris", "--engines", "icm,bp,lp", "--constraints", "0,10,25,50,100,200,400",
              "--runs", "10"]


def _pct(x):
    return "–" if x != x else f"{100 * x:.3f} %"  # x != x: NaN, the engine never ran


def _secs(x):
    return "–" if x != x else f"{x:.4f} s"


def summary_table(path) -> str:
    """The Markdown table of a ``compare-summary.csv``."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = [{k: (v if k == "engine" else float(v)) for k, v in r.items()} for r in csv.DictReader(f)]
    header = ["constraints", "engine", "NMI", "J excess", "best J", "E-step gap", "E-steps optimal",
              "EM iterations", "E-step time", "fit time"]
    body = [[f"{r['constraints']:.0f}",
             r["engine"] + (f" ({r['n_failed']:.0f} failed)" if r["n_failed"] else ""),
             f"{r['nmi_mean']:.3f} ± {r['nmi_std']:.3f}", _pct(r["objective_excess"]),
             f"{100 * r['best_share']:.0f} %", _pct(r["estep_gap_rel"]),
             "–" if r["estep_optimal"] != r["estep_optimal"] else f"{100 * r['estep_optimal']:.0f} %",
             f"{r['n_iter_mean']:.1f}", _secs(r["estep_time_mean"]), _secs(r["fit_time_mean"])]
            for r in rows]
    return markdown_table(header, body, ["---:", "---", *["---:"] * (len(header) - 2)])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    ours, compare_args = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--name", required=True, help="results file: docs/results/<name>.md")
    p.add_argument("--from", dest="source", metavar="DIR",
                   help="convert DIR/compare-summary.csv of a finished run instead of running")
    p.add_argument("--note", default="", help="a sentence for the notes (e.g. the load during a --from run)")
    args = p.parse_args(ours)
    compare_args = compare_args or README_JOB
    command = "hmrf compare " + " ".join(map(shlex.quote, compare_args))
    if args.source:
        folder = args.source
        how = f"the summary of a run of `{command}` (converted from its `compare-summary.csv`)"
    else:
        from hmrf.cli import main as hmrf_main

        folder = tempfile.mkdtemp(prefix="engine_study_")
        code = hmrf_main(["compare", *compare_args, "--out", folder, "--no-progress"])
        if code:
            raise SystemExit(code)
        how = f"`{command}`"
    load = "" if args.source else (" Load average at the end: "
                                   + " ".join(f"{x:.1f}" for x in os.getloadavg()) + ".")
    notes = (f"Per number of constraints and engine: {how}. NMI on the held-out half (mean ± sd "
             "over runs × folds); J excess: the final objective above the best engine's on the same "
             "split; best J: the share of splits on which the engine reached it; E-step gap: energy "
             "above the best lower bound of the same E-step; times per fit, compilation apart "
             f"(`docs/experiments.md` defines each column).{load} {args.note}").strip()
    print("wrote", write_result(args.name, summary_table(os.path.join(folder, "compare-summary.csv")),
                                notes=notes))
    figure = os.path.join(folder, "compare.png")
    if os.path.exists(figure):
        print("wrote", shutil.copyfile(figure, os.path.join(STATIC_DIR, f"{args.name}.png")))


if __name__ == "__main__":
    main()
