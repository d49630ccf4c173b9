"""Lazy public names (``hmrf._lazy``): every name a package lists in ``__all__`` resolves
to the object its submodule defines, ``dir()`` lists it, an unknown name raises
AttributeError naming the package, and ``import hmrf`` loads no heavy dependency."""

import importlib
import subprocess
import sys

import pytest

PACKAGES = ["hmrf", "hmrf.classic", "hmrf.estimators", "hmrf.distributed"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_and_is_listed(package):
    if package == "hmrf.distributed":
        pytest.importorskip("dask")
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        assert name in dir(module)
        home = getattr(value, "__module__", None)
        if home is not None and home != package:
            assert getattr(importlib.import_module(home), name) is value
    with pytest.raises(AttributeError, match=rf"module '{package}' has no attribute 'no_such_name'"):
        getattr(module, "no_such_name")  # noqa: B009 - the attribute access is the test


def test_submodules_load_on_first_access():
    code = ("import sys, hmrf; assert 'hmrf.inference.icm' not in sys.modules; "
            "hmrf.inference.ICM; print(sorted(m for m in ('sklearn', 'dask', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
