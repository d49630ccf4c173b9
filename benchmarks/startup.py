"""Start-up: the time of ``import hmrf`` and of ``hmrf --help``, beyond the interpreter's own.

Each is measured in a new interpreter, from inside it (``time.perf_counter`` around the
import, and around the import and ``main(["--help"])``), so the interpreter's own start
is left out; the median of ``--repeats`` runs is reported. Two ways the package can be
installed are measured, each on a copy of the package:

* with bytecode: every module compiled beforehand (``compileall``), as a normal install
  or any second run leaves it;
* from source: no ``__pycache__`` and ``PYTHONDONTWRITEBYTECODE=1``, so every module of
  the package is compiled at each start (the site-packages keep their bytecode).

``--before REV`` measures the package at git revision ``REV`` the same way, its runs interleaved with
this tree's, and adds its medians and the ratios to the table. ``python -X importtime``
gives the largest imports of this tree (with bytecode). Writes
``docs/results/startup.md``::

    python benchmarks/startup.py
    python benchmarks/startup.py --before 814c553 --repeats 9

Times depend on the machine's load (the notes give the load average): run it on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _results import ROOT, markdown_table, package_at, write_result  # noqa: E402

#: the measurement, run in a new interpreter: seconds of ``import hmrf`` and of the import
#: and ``hmrf --help`` together
PROBE = """
import contextlib, io, time
t0 = time.perf_counter()
import hmrf
t1 = time.perf_counter()
from hmrf.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(["--help"])
print(t1 - t0, time.perf_counter() - t0)
"""

TARGETS = {"import": 0.25, "help": 0.5}


def copies(root: str) -> dict:
    """``{"bytecode": folder, "source": folder}``: two copies of the package at ``root``
    (to put on ``PYTHONPATH``), one compiled beforehand, one without any bytecode."""
    out = {}
    for mode in ("bytecode", "source"):
        folder = tempfile.mkdtemp(prefix=f"hmrf_startup_{mode}_")
        shutil.copytree(os.path.join(root, "hmrf"), os.path.join(folder, "hmrf"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        if mode == "bytecode":
            compileall.compile_dir(os.path.join(folder, "hmrf"), quiet=1)
        out[mode] = folder
    return out


def environment(folder: str, mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=folder)
    if mode == "source":
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def probe(folder: str, mode: str) -> tuple[float, float]:
    """One run of :data:`PROBE`: ``(import seconds, import and --help seconds)``."""
    proc = subprocess.run([sys.executable, "-c", PROBE], env=environment(folder, mode), cwd=folder,
                          capture_output=True, text=True, check=True)
    first, second = proc.stdout.split()
    return float(first), float(second)


def top_imports(folder: str, code: str, n: int = 8) -> list[tuple[str, float]]:
    """The ``n`` modules that take longest to import themselves (their own time, their
    imports apart) under ``python -X importtime -c code``: ``(module, ms)``, the
    interpreter's own start-up modules left out."""
    start = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"],
                           env=environment(folder, "bytecode"), capture_output=True, text=True)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                          env=environment(folder, "bytecode"), cwd=folder, capture_output=True,
                          text=True, check=True)

    def modules(text):
        rows = {}
        for line in text.splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                own, _, name = line[len("import time:"):].split("|")
                rows[name.strip()] = int(own) / 1000
        return rows

    rows = modules(proc.stderr)
    for name in modules(start.stderr):
        rows.pop(name, None)
    return sorted(rows.items(), key=lambda r: -r[1])[:n]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=7, help="runs per tree and way of install")
    p.add_argument("--before", metavar="REV",
                   help="also measure the package at git revision REV, interleaved")
    args = p.parse_args(argv)
    trees = {"this": copies(ROOT)}
    if args.before:
        trees = {"before": copies(package_at(args.before)), **trees}
    runs = {(tree, mode): [] for tree in trees for mode in ("bytecode", "source")}
    for _ in range(args.repeats):
        for mode in ("bytecode", "source"):
            for tree, folders in trees.items():  # interleaved: before, this, before, this, ...
                runs[tree, mode].append(probe(folders[mode], mode))
    median = {key: [statistics.median(r[i] for r in rs) for i in (0, 1)] for key, rs in runs.items()}
    header = ["", "with bytecode", "from source", "target"]
    body = []
    for i, what in enumerate(("import", "help")):
        label = {"import": "`import hmrf`", "help": "`hmrf --help`"}[what]
        for tree in trees:
            name = label if tree == "this" else f"{label} before"
            body.append([name, *(f"{median[tree, mode][i]:.3f} s" for mode in ("bytecode", "source")),
                         f"{TARGETS[what]:.2f} s" if tree == "this" else ""])
        if "before" in trees:
            ratios = [median["before", mode][i] / median["this", mode][i] for mode in ("bytecode", "source")]
            body.append([f"{label}: before / this", *(f"{r:.1f}x" for r in ratios), ""])
    table = markdown_table(header, body, ["---", "---:", "---:", "---:"])
    offenders = []
    for what, code in (("import hmrf", "import hmrf"),
                       ("hmrf --help", "from hmrf.cli import main; main(['--help'])")):
        top = top_imports(trees["this"]["bytecode"], code)
        offenders.append(f"Slowest modules of `{what}` (`python -X importtime`, with bytecode; "
                         "own ms): " + ", ".join(f"`{m}` {ms:.1f}" for m, ms in top) + ".")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    notes = (f"Median of {args.repeats} runs, each in a new interpreter, timed from inside it (the "
             "interpreter's own start apart). With bytecode: the package compiled beforehand, as a "
             "normal install leaves it; from source: no `__pycache__` and "
             "`PYTHONDONTWRITEBYTECODE=1`. Both are meant to stay within the targets. "
             + " ".join(offenders) + f" Load average at the end: {load}.")
    for key, rs in runs.items():
        print(key, [f"{a:.3f}/{b:.3f}" for a, b in rs])
    print("wrote", write_result("startup", table, notes=notes))


if __name__ == "__main__":
    main()
