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

``--time`` times the command as a user runs it on a fresh clone: ``python -m hmrf
compare ...`` in a new process on a copy of the package without any ``__pycache__``
(so numba compiles every kernel: "cold"), then again on the same copy (numba's disk
cache filled: "warm"); wall-clock and CPU seconds of each run go to
``docs/results/main_job.md`` (the README's figure), the summary of the warm run to
``docs/results/<name>.md``. ``--before REV`` times the package at git revision ``REV`` the same way,
each of its runs just before the matching run of this tree (for a before/after
comparison on a loaded machine; not written to the results file)::

    python benchmarks/engine_study.py --name compare-iris --time
    python benchmarks/engine_study.py --name compare-iris --time --before 814c553

Times depend on the machine's load (the notes give the load average): run it on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import (  # noqa: E402
    ROOT,
    command_line,
    markdown_table,
    package_at,
    write_readme_section,
    write_result,  # noqa: E402
)

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


def fresh_copy(root: str) -> str:
    """A copy of the package at ``root`` as a fresh clone has it: no ``__pycache__``
    (no bytecode, no numba cache). Returns the folder to put on ``PYTHONPATH``."""
    folder = tempfile.mkdtemp(prefix="hmrf_clone_")
    shutil.copytree(os.path.join(root, "hmrf"), os.path.join(folder, "hmrf"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def timed_run(tree: str, compare_args, out: str) -> dict:
    """``python -m hmrf compare ...`` in a new process importing the package in ``tree``:
    its wall-clock and CPU seconds (the process and its children) and the load average."""
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("NUMBA_CACHE_DIR", None)  # numba caches beside the copy's sources
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "hmrf", "compare", *compare_args, "--out", out,
                           "--no-progress"], env=env, cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"hmrf compare failed in {tree}:\n{proc.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"wall": wall, "cpu": cpu, "load": os.getloadavg()[0]}


def time_job(compare_args, before=None):
    """Cold then warm runs of the command on a fresh copy of this tree (and of ``before``,
    each of its runs first). Returns ``({tree: {"cold": run, "warm": run}}, out)``, ``out``
    the output folder of this tree's warm run."""
    trees = {"before": fresh_copy(package_at(before))} if before else {}
    trees["this"] = fresh_copy(ROOT)
    times = {name: {} for name in trees}
    for state in ("cold", "warm"):
        for name, tree in trees.items():
            out = os.path.join(tree, f"out-{state}")
            times[name][state] = timed_run(tree, compare_args, out)
            print(f"{name} {state}: " + ", ".join(f"{k} {v:.1f}" for k, v in times[name][state].items()),
                  flush=True)
    return times, os.path.join(trees["this"], "out-warm")


def timing_table(command: str, runs: dict) -> str:
    """The Markdown table of the main job's times (one tree's cold and warm runs)."""
    body = [[f"`{command}`", f"{runs['cold']['wall']:.1f} s", f"{runs['warm']['wall']:.1f} s",
             f"{runs['cold']['cpu']:.1f} s", f"{runs['warm']['cpu']:.1f} s"]]
    return markdown_table(["command", "wall, cold", "wall, warm", "CPU, cold", "CPU, warm"], body,
                          ["---", "---:", "---:", "---:", "---:"])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    ours, compare_args = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--name", required=True, help="results file: docs/results/<name>.md")
    p.add_argument("--from", dest="source", metavar="DIR",
                   help="convert DIR/compare-summary.csv of a finished run instead of running")
    p.add_argument("--note", default="", help="a sentence for the notes (e.g. the load during a --from run)")
    p.add_argument("--time", action="store_true",
                   help="time the command in new processes on a fresh copy, numba cache cold then "
                        "warm; write docs/results/main_job.md")
    p.add_argument("--before", metavar="REV", help="with --time: also time the package at git revision REV, "
                                                     "interleaved (printed only)")
    args = p.parse_args(ours)
    compare_args = compare_args or README_JOB
    command = "hmrf compare " + " ".join(map(shlex.quote, compare_args))
    if args.source:
        folder = args.source
        how = f"the summary of a run of `{command}` (converted from its `compare-summary.csv`)"
    elif args.time:
        times, folder = time_job(compare_args, args.before)
        runs = times["this"]
        how = f"`{command}`, its run with numba's cache warm"
        load = " and ".join(f"{runs[s]['load']:.1f}" for s in ("cold", "warm"))
        notes = ("The README's main job as a user runs it on a fresh clone: a new process, the "
                 "package without bytecode or numba cache (cold: numba compiles every kernel, "
                 "counted in the time), then the same again with numba's disk cache filled "
                 f"(warm). Wall-clock and CPU seconds of the whole command on {os.cpu_count()} "
                 f"cores; load average {load} at the end of the runs. {args.note}").strip()
        print("wrote", write_result("main_job", timing_table(command, runs), command_line(), notes))
        if compare_args == README_JOB:
            line = (f"On {os.cpu_count()} cores the job takes {runs['cold']['wall']:.0f} s on a fresh clone "
                    f"(numba compiling its kernels) and {runs['warm']['wall']:.0f} s once they are "
                    "cached (`docs/results/main_job.md`, written by "
                    "`python benchmarks/engine_study.py --name compare-iris --time`).")
            print("wrote", write_readme_section("main job", line))
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
