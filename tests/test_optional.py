"""Optional dependencies (hmrf._optional): the module when it imports, else one
ImportError that says what needs it and which pip command installs it."""

import sys

import pytest

from hmrf._optional import available, load, missing_message


def test_an_installed_module_is_returned():
    import numpy

    assert load("numpy") is numpy and available("numpy")
    assert load("numpy.linalg") is numpy.linalg


@pytest.mark.parametrize("name, extra, distribution", [
    ("cvxpy", "cvxpy", "cvxpy"), ("distributed", "dask", "distributed"),
    ("pyarrow.parquet", "parquet", "pyarrow"), ("matplotlib.pyplot", "plot", "matplotlib"),
])
def test_a_missing_module_names_what_needs_it_and_the_extra(monkeypatch, name, extra, distribution):
    for blocked in {name, name.split(".")[0]}:  # "import name" now fails, even if it was imported
        monkeypatch.setitem(sys.modules, blocked, None)
    assert not available(name)
    with pytest.raises(ImportError) as err:
        load(name, purpose="the thing")
    message = str(err.value)
    assert message.startswith(f"the thing needs {distribution}") and f"pip install 'hmrf[{extra}]'" in message
    assert err.value.name == name.split(".")[0]


def test_without_an_extra_the_distribution_is_named_and_a_hint_follows(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    with pytest.raises(ImportError, match=r"^x.png: reading needs Pillow \(import name PIL\): "
                                          r"pip install Pillow; or not$"):
        load("PIL.Image", purpose="x.png: reading", hint="or not")
    assert missing_message("pgmpy", "to_pgmpy") == "to_pgmpy needs pgmpy: pip install pgmpy"


def test_a_module_that_comes_back_is_available_again(monkeypatch):
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "numpy", None)
        assert not available("numpy")
    assert available("numpy")
