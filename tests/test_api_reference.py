"""The API reference (``docs/api/*.rst``) documents every public name.

Public means: a name in the ``__all__`` of a module of the ``hmrf`` package none of
whose dotted parts starts with an underscore (``hmrf.widgets``, ``hmrf.model_selection``,
``hmrf.inference.bp.trws``, ...). A name re-exported by several modules (``hmrf.HMRF`` and
``hmrf.model.HMRF``) counts as documented when one of its spellings is. The pages are
read as text, so these tests need neither Sphinx nor a build; ``tests/test_docs.py``
builds the pages.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import hmrf

API = Path(__file__).resolve().parent.parent / "docs" / "api"


def _public_modules() -> list:
    """Every importable public module of ``hmrf`` (walk of the package)."""
    names = ["hmrf"] + [m.name for m in pkgutil.walk_packages(hmrf.__path__, "hmrf.")
                        if not any(part.startswith("_") for part in m.name.split("."))]
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:  # an optional extra that is not installed
            if exc.name is None or exc.name.split(".")[0] == "hmrf":
                raise
    return modules


def _public_entries() -> list:
    """``(module name, name, object)`` for every name of every public ``__all__``."""
    return [(mod.__name__, name, getattr(mod, name))
            for mod in _public_modules() for name in getattr(mod, "__all__", [])]


def _identity(name, obj):
    """What makes two spellings one object: the object for classes and functions (also
    compiled ones); for data the name as well, since equal small values share an id."""
    if inspect.isclass(obj) or inspect.isroutine(obj) or hasattr(obj, "py_func"):
        return ("object", id(obj))
    return ("data", name, id(obj))


def documented_names() -> set:
    """The full names the API pages list: autosummary entries under their
    ``currentmodule`` and ``autodata`` / ``autoclass`` / ``autofunction`` directives."""
    names = set()
    for page in API.glob("*.rst"):
        module = None
        for line in page.read_text(encoding="utf-8").splitlines():
            m = re.match(r"\.\. currentmodule:: (\S+)", line)
            if m:
                module = m.group(1)
            m = re.match(r"\.\. auto(?:data|class|function):: (\S+)", line)
            if m:
                names.add(m.group(1))
            m = re.match(r"   ~?([A-Za-z_][\w.]*)$", line)
            if m and module:
                names.add(f"{module}.{m.group(1)}")
    return names


def test_api_reference_lists_every_public_name():
    entries = _public_entries()
    documented = documented_names()
    covered = {_identity(name, obj) for module, name, obj in entries if f"{module}.{name}" in documented}
    missing = sorted(f"{module}.{name}" for module, name, obj in entries
                     if _identity(name, obj) not in covered)
    assert not missing, f"{len(missing)} public names missing from docs/api/*.rst: {missing}"


def test_api_reference_lists_only_public_names():
    """A listed name that no public ``__all__`` has is stale (renamed, moved or private)."""
    public = {f"{module}.{name}" for module, name, _ in _public_entries()}
    stale = sorted(documented_names() - public)
    assert not stale, f"docs/api/*.rst lists names that no public __all__ has: {stale}"


def test_each_object_is_documented_under_the_name_users_import_it_by():
    """The spelling ``docs/conf.py`` resolves references to (the first of its
    ``PUBLIC_NAMESPACES`` that exports the object) is the documented one."""
    docs = str(API.parent)
    sys.path.insert(0, docs)
    try:
        conf = importlib.import_module("conf")
    finally:
        sys.path.remove(docs)
    table, _ = conf._alias_table()
    missing = sorted(set(table.values()) - documented_names())
    assert not missing, f"documented under another spelling than docs/conf.py's: {missing}"


def test_every_engine_class_is_exported_by_hmrf_inference():
    """``from hmrf.inference import X`` works for every engine class of the package, and
    for the engine each name of ``ENGINES`` builds."""
    import hmrf.inference as inference

    engines = {cls for cls in (type(spec.factory()) for spec in inference.ENGINES.values())
               if cls.__module__.startswith("hmrf.")}  # not a plug-in a test registered
    for module in _public_modules():
        if module.__name__.startswith("hmrf.inference"):
            engines.update(obj for obj in vars(module).values()
                           if inspect.isclass(obj) and issubclass(obj, inference.InferenceEngine)
                           and obj.__module__ == module.__name__)
    missing = sorted(cls.__name__ for cls in engines if cls.__name__ not in inference.__all__)
    assert not missing, f"engine classes missing from hmrf.inference.__all__: {missing}"
    assert all(getattr(inference, cls.__name__) is cls for cls in engines)
