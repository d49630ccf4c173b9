"""Executing the notebooks of ``notebooks/`` once per test run, into a shared cache.

Each notebook is executed in a fresh kernel by its own test
(``tests/test_notebooks.py``), so that the notebooks run in parallel on the xdist
workers; the documentation build (``tests/test_docs.py``) takes their outputs from the
same jupyter-cache directory, as myst-nb's ``nb_execution_mode = "cache"`` does
between two builds (``docs/conf.py``), instead of executing them again.

The execution is myst-nb's own (``myst_nb.core.execute.cache``): jupyter-cache's
``single_nb_execution`` of the notebook as ``nbformat`` reads it, in the notebook's
folder, with the per-cell timeout of ``docs/conf.py``; a successful run is stored under
the hash of the notebook's code, which is the key the build looks up. A cell that
raises fails the execution, so it fails the notebook's test and the build (which then
executes the notebook itself and fails as well). Whichever test asks first executes
a notebook; the other finds it in the cache, or waits for the execution under way
(a file lock per notebook), so that no notebook runs twice in a run.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))

try:
    import fcntl
except ImportError:  # not POSIX: no lock, so two workers may both execute a notebook
    fcntl = None


def execution_timeout() -> int:
    """Seconds per cell, ``nb_execution_timeout`` of ``docs/conf.py`` (read, not
    imported: importing it deletes ``docs/api/generated``, which the build writes)."""
    tree = ast.parse((ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "nb_execution_timeout"):
            return ast.literal_eval(node.value)
    raise LookupError("docs/conf.py sets no nb_execution_timeout")


def missing_requirements(path: Path) -> list[str]:
    """The data packages the notebook declares (metadata ``hmrf.requires``) that are not
    installed; ``docs/conf.py`` leaves such a notebook unexecuted."""
    meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    missing = []
    for package in meta.get("hmrf", {}).get("requires", []):
        try:
            importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError:
            missing.append(package)
    return missing


class NotebookError(AssertionError):
    """A cell of the notebook raised, or timed out."""


@contextlib.contextmanager
def _lock(path: Path, blocking: bool = True):
    """An exclusive lock on ``path`` between processes; yields False when ``blocking`` is
    off and another process holds it."""
    if fcntl is None:
        yield True
        return
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _cached(cache_dir: Path, nb):
    """The cached execution of ``nb``'s code (its code cells, with their outputs), or None."""
    from jupyter_cache import get_cache

    with _lock(cache_dir / "db.lock"):
        cache = get_cache(str(cache_dir))
        try:
            return cache.get_cache_bundle(cache.match_cache_notebook(nb).pk).nb
        except KeyError:
            return None


def execute(path: Path, cache_dir: Path, blocking: bool = True):
    """Execute the notebook at ``path`` into the jupyter-cache at ``cache_dir``, unless it is
    there already; return the cached execution (its code cells, with their outputs).

    With ``blocking=False``, return None at once when another process is executing it.
    Raises `NotebookError` with the traceback when a cell fails.
    """
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.executors.utils import single_nb_execution

    cache_dir.mkdir(parents=True, exist_ok=True)
    with _lock(cache_dir / f"{path.stem}.lock", blocking) as held:
        if not held:
            return None
        nb = nbformat.read(path, as_version=4)  # myst-nb's reading (NOTEBOOK_VERSION 4)
        executed = _cached(cache_dir, nb)
        if executed is not None:
            return executed
        result = single_nb_execution(nb, cwd=str(path.parent), timeout=execution_timeout(),
                                     allow_errors=False, meta_override=True)
        if result.err is not None:
            raise NotebookError(f"{path.name} failed:\n{result.exc_string}")
        with _lock(cache_dir / "db.lock"):
            get_cache(str(cache_dir)).cache_notebook_bundle(
                CacheBundleIn(nb, str(path), data={"execution_seconds": result.time}),
                check_validity=False, overwrite=True)
        return _cached(cache_dir, nb)


def execute_all(paths, cache_dir: Path) -> None:
    """Execute every notebook of ``paths`` not yet in the cache: first those no other
    process is executing (last first, the opposite order of the notebooks' own tests),
    then wait for the rest."""
    waiting = [p for p in reversed(paths) if execute(p, cache_dir, blocking=False) is None]
    for p in waiting:
        execute(p, cache_dir)
