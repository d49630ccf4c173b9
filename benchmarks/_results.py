"""One number, one source: benchmark scripts write the tables the docs show.

A script calls :func:`write_result` with a table (Markdown) and the command that produced
it; the file lands in ``docs/results/<name>.md`` and a docs page includes it::

    ```{include} results/<name>.md
    ```

The file carries the command and the date under the table, so a reader of the page sees
where every figure came from, and re-running the command is the only way to change it.
"""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import sys

__all__ = ["write_result", "markdown_table", "RESULTS_DIR", "command_line"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(ROOT, "docs", "results")


#: options naming where a run keeps files on its machine (finished cells, scratch output):
#: they change no number, so the recorded command leaves them out
LOCAL_OPTIONS = ("--cache", "--out")


def command_line(argv=None) -> str:
    """The command that ran this script, as a user would type it from the repository root,
    without :data:`LOCAL_OPTIONS`."""
    argv = sys.argv if argv is None else argv
    script = os.path.relpath(os.path.abspath(argv[0]), ROOT)
    args, skip = [], False
    for a in argv[1:]:
        if skip:
            skip = False
        elif a in LOCAL_OPTIONS:
            skip = True
        elif not a.startswith(tuple(o + "=" for o in LOCAL_OPTIONS)):
            args.append(a)
    return " ".join(["python", shlex.quote(script), *map(shlex.quote, args)])


def markdown_table(header, rows, align=None) -> str:
    """A Markdown table from a header and rows of cells (strings or numbers)."""
    align = align or ["---:" if i else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def write_result(name: str, body: str, command: str | None = None, notes: str = "") -> str:
    """Write ``docs/results/<name>.md``: ``body`` (a table), optional ``notes``, and the
    command and date that produced it. Returns the path."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = os.path.join(RESULTS_DIR, f"{name}.md")
    stamp = datetime.date.today().isoformat()
    cmd = command or command_line()
    text = [body.rstrip(), ""]
    if notes:
        text += [notes.rstrip(), ""]
    text.append(f"<small>Written by `{cmd}` on {stamp} ({platform.machine()}, "
                f"{os.cpu_count()} cores); do not edit by hand.</small>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(text) + "\n")
    return path


def package_at(revision: str) -> str:
    """A folder holding the package ``hmrf/`` as it is at git ``revision`` of this
    repository (``git archive``; no bytecode, no numba cache), to put on ``PYTHONPATH``
    for a before/after measurement: the command line names a revision, not a checkout."""
    import subprocess
    import tarfile
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
    folder = tempfile.mkdtemp(prefix="hmrf_at_")
    archive = os.path.join(folder, "hmrf.tar")
    subprocess.run(["git", "-C", root, "archive", "--format=tar", "-o", archive, revision, "hmrf"],
                   check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    os.remove(archive)
    return folder


def write_readme_section(name: str, text: str) -> str:
    """Replace what stands between the README's markers ``<!-- <name>: written by ... -->``
    and ``<!-- end of <name> -->`` by ``text``: a README figure comes from the script that
    measured it, as a results file does."""
    path = os.path.join(ROOT, "README.md")
    with open(path, encoding="utf-8") as f:
        readme = f.read()
    start = next((line for line in readme.splitlines() if line.startswith(f"<!-- {name}: written by ")), None)
    end = f"<!-- end of {name} -->"
    if start is None or end not in readme:
        raise SystemExit(f"README.md has no '<!-- {name}: written by ...' ... '{end}' markers "
                         "to write between.")
    head, rest = readme.split(start, 1)
    tail = rest.split(end, 1)[1]
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + start + "\n" + text + "\n" + end + tail)
    return path
