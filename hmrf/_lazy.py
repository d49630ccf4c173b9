"""Public names of a package loaded on first use (PEP 562), as SciPy does: ``import hmrf``
and ``import hmrf.classic`` stay fast, and scikit-learn, Dask or matplotlib load only
when a name that needs them is used."""

from __future__ import annotations

import importlib
import importlib.util
import sys

__all__ = ["lazy_names", "lazy_module"]


def lazy_names(package: str, namespace: dict, homes: dict, submodules=()):
    """``(__getattr__, __dir__)`` for the module ``package`` whose globals are
    ``namespace``: ``homes`` maps a public name to the submodule that defines it, and
    each name in ``submodules`` is a submodule loaded on first access. A loaded value is
    stored in ``namespace``, so ``__getattr__`` runs once per name."""

    def __getattr__(name):
        if name in submodules:
            value = importlib.import_module(f".{name}", package)
        elif name in homes:
            value = getattr(importlib.import_module(f".{homes[name]}", package), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(homes) | set(submodules))

    return __getattr__, __dir__


def lazy_module(name: str):
    """The module ``name``, executed on its first attribute access
    (``importlib.util.LazyLoader``): an engine module keeps its compiled kernels in a module
    it names at import, so that listing or constructing engines (``hmrf fit --help``,
    ``import hmrf.inference``) does not load numba."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
