"""What ships beside the code: the version in one place, the licence pyproject names,
the citation file, and the PEP 561 marker."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

import hmrf

tomllib = pytest.importorskip("tomllib")  # the standard library from Python 3.11

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_comes_from_the_package_metadata():
    assert hmrf.__version__ == importlib.metadata.version("hmrf") == PYPROJECT["project"]["version"]


def test_licence_file_is_the_one_pyproject_names():
    assert PYPROJECT["project"]["license"] == "BSD-3-Clause"
    for name in PYPROJECT["project"]["license-files"]:
        text = (ROOT / name).read_text(encoding="utf-8")
        assert text.startswith("BSD 3-Clause License")
        assert "Neither the name of the copyright holder" in text


def test_citation_file_names_this_version_and_the_papers():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"].startswith("1.2")
    assert str(cff["version"]) == PYPROJECT["project"]["version"]
    assert cff["license"] == PYPROJECT["project"]["license"]
    titles = " ".join(ref["title"] for ref in cff["references"])
    assert "metric learning" in titles and "probabilistic framework" in titles
    assert re.search(r"Semi-supervised Clustering", cff["preferred-citation"]["title"])


def test_package_is_typed():
    assert (Path(hmrf.__file__).parent / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["hmrf"]
