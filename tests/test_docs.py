"""Build the documentation with warnings as errors.

``sphinx-build -W --keep-going -b html docs <tmp>`` must exit 0: a broken
cross-reference (``nitpicky = True``), a docstring that does not parse, or an error in
an executed page fails it. The build executes the executable pages, and shows every
notebook of ``notebooks/`` executed in this test run: myst-nb's execution cache is the
run's shared one (``tests/notebook_cache.py``), into which each notebook's own test in
``tests/test_notebooks.py`` executes it, in parallel on the xdist workers; a notebook
not there yet is executed here first, so a notebook with a failing cell fails this test
too, whatever the order. The site must show what they compute.
``tests/test_api_reference.py`` checks that the API reference lists every public name.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("myst_nb")
pytest.importorskip("numpydoc")
pytest.importorskip("pydata_sphinx_theme")

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_docs_build_without_warnings(tmp_path, notebook_cache_dir):
    from notebook_cache import PATHS, execute_all, missing_requirements

    execute_all([p for p in PATHS if not missing_requirements(p)], notebook_cache_dir)
    # -j auto: the pages are read (the MyST pages with code cells executed) in parallel
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-j", "auto", "-b", "html", "-q",
           "-D", f"nb_execution_cache_path={notebook_cache_dir}",
           "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    warnings = [line for line in proc.stderr.splitlines()
                if ("WARNING:" in line or "ERROR:" in line) and "IPKernelApp" not in line]
    assert proc.returncode == 0, "sphinx-build failed:\n" + "\n".join(warnings or [proc.stderr[-4000:]])
    html = tmp_path / "html"
    for page in ["index", "getting_started", "model", "emissions", "potentials", "inference",
                 "api/index", "notebooks/01_hmrf_basics"]:
        assert (html / f"{page}.html").is_file(), page
    # the executed walkthrough really ran: its divergence check printed its result
    emissions = (html / "emissions.html").read_text(encoding="utf-8")
    assert "(6, 3)" in emissions
    # every notebook whose packages are installed was executed: its figures and printed
    # tables are on the site
    sys.path.insert(0, str(DOCS))
    try:
        skipped = set(importlib.import_module("conf").nb_execution_excludepatterns)
    finally:
        sys.path.remove(str(DOCS))
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        if f"notebooks/{nb.name}" in skipped:
            continue
        page = (html / "notebooks" / f"{nb.stem}.html").read_text(encoding="utf-8")
        assert "cell_output" in page and ("<img" in page or "output text_plain" in page
                                          or "output stream" in page), nb.name
    # the facts the build writes from the code are on the pages: every estimator's and
    # engine's defaults, every command's options (docs/_ext/hmrf_facts.py)
    from hmrf.cli import COMMANDS
    from hmrf.inference import ENGINES

    choosing = (html / "choosing.html").read_text(encoding="utf-8")
    assert "MPCKMeans − HMRFKMeans" in choosing and "NaiveBayesEM" in choosing
    inference = (html / "inference.html").read_text(encoding="utf-8")
    own = [name for name, spec in ENGINES.items()  # not a plug-in another test registered
           if getattr(spec.factory, "__module__", "").startswith("hmrf.")]
    assert own and all(f"&quot;{name}&quot;" in inference for name in own)
    cli = re.sub(r"<[^>]+>", "", (html / "cli.html").read_text(encoding="utf-8"))  # the text
    assert all(f"hmrf {command}" in cli for command in COMMANDS) and "--engine" in cli
    # a class whose __new__ only passes its arguments on shows __init__'s parameters
    for cls in ("HMRFKMeans", "KMeans", "HMRF"):
        page = (html / "api" / "generated" / f"hmrf.{cls}.html").read_text(encoding="utf-8")
        page = re.sub(r"<[^>]+>", "", page)
        assert "n_clusters" in page.split("Parameters")[0] and "*args" not in page, cls
    # the landing page shows a picture of what the library does, and the picture exists
    index = (html / "index.html").read_text(encoding="utf-8")
    images = re.findall(r'<img[^>]+src="([^"]+)"', index)
    assert images and all((html / src).is_file() for src in images)
    assert (html / "_static" / "hmrf.css").is_file()  # wide tables scroll

