"""Tables of names for the library's extension points (engines, emission families).

A :class:`Registry` maps a lower-case name to what builds its object: the library's own
rows, :meth:`Registry.register`, and the entry points of installed packages (read the
first time a name is missing or the names are listed; a module is imported when its
name is used). A name may carry keyword arguments, ``"bp(polish=icm, damping=0.5)"``,
each a Python literal or else text.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from functools import partial
from typing import Any

__all__ = ["Registry", "Spec", "split_names", "parse_spec", "import_plugin", "PLUGIN_MODULES"]

#: The plug-in modules imported in this process by ``--plugin`` (:func:`import_plugin`), as
#: ``(folder, module)``: a worker process imports them again before it runs a task, since
#: the names they register live in the registries of the process that imported them
#: (:func:`hmrf.experiments.learning.run_tasks`).
PLUGIN_MODULES: list[tuple[str, str]] = []


def import_plugin(module: str, folder: str) -> None:
    """Import ``module`` with ``folder`` on ``sys.path`` (added if missing) and record it
    in :data:`PLUGIN_MODULES`."""
    import importlib
    import sys

    if folder not in sys.path:
        sys.path.insert(0, folder)
    importlib.import_module(module)
    if (folder, module) not in PLUGIN_MODULES:
        PLUGIN_MODULES.append((folder, module))

#: A registered name: lower case, no spaces, commas or parentheses (the command line
#: separates names by commas and parameters by parentheses).
NAME = re.compile(r"[a-z0-9][a-z0-9_.+-]*")


@dataclass(frozen=True)
class Spec:
    """One row of a :class:`Registry`: ``factory(**params)`` builds a new object; the
    one-line ``description`` is shown by ``hmrf <command> --help``."""

    factory: Callable[..., Any]
    description: str = ""


def _first_line(obj: Any) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0].rstrip(".") if doc else ""


def _load_and_call(ep: Any, **params: Any) -> Any:
    """The object an entry point names, imported on first call, then called."""
    try:
        factory = ep.load()
    except Exception as exc:  # an installed package's error, named with its entry point
        raise ImportError(f"the entry point {ep.name} = {ep.value} (group {ep.group}) cannot be "
                          f"loaded: {exc}") from exc
    return factory(**params)


def parse_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``"name(key=value, ...)"`` as ``(name, {key: value})``; the name lower-cased.

    >>> parse_spec("BP(polish=icm, damping=0.5)")
    ('bp', {'polish': 'icm', 'damping': 0.5})
    """
    text = text.strip()
    match = re.fullmatch(r"([^()]*?)\s*(?:\((.*)\))?", text, flags=re.S)
    if match is None:
        raise ValueError(f"cannot read {text!r} as name or name(key=value, ...).")
    name, inside = match.group(1).strip().lower(), match.group(2)
    params: dict[str, Any] = {}
    for item in split_names(inside or ""):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ValueError(f"cannot read {item!r} in {text!r} as key=value.")
        try:
            params[key] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            params[key] = value.strip()  # a bare word: text
    return name, params


def split_names(text: str) -> list[str]:
    """Comma-separated items, ignoring commas inside parentheses.

    >>> split_names("icm, bp(polish=icm, damping=0.5),lp")
    ['icm', 'bp(polish=icm, damping=0.5)', 'lp']
    """
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [t.strip() for t in items if t.strip()]


class Registry(MutableMapping):
    """Names of one kind of extension and the entry-point group that adds to them.

    ``what`` (``"engine"``, ``"emission"``) names the ``register_<what>`` function in
    messages, ``noun`` (default ``what``) an unknown name; ``rows`` are the library's own
    names, ``renamed`` maps a name to the one to use instead (looking it up raises a
    ``ValueError`` that says so).
    """

    def __init__(self, what: str, group: str, rows: dict[str, Spec],
                 renamed: dict[str, str] | None = None, noun: str | None = None) -> None:
        self.what = what
        self.noun = noun or what
        self.group = group
        self.renamed = dict(renamed or {})
        self._rows = dict(rows)
        self._own = frozenset(rows)
        self._loaded = False

    # ------------------------------------------------------------- registration
    def register(self, name: str, factory: Callable[..., Any], description: str | None = None, *,
                 replace: bool = False) -> None:
        """Add ``name``; ``replace=True`` to redefine a name."""
        if not isinstance(name, str) or not NAME.fullmatch(name.strip().lower()):
            raise ValueError(f"{self.what} name {name!r}: use lower-case letters, digits and _ . + - "
                             "(no spaces, commas or parentheses).")
        if not callable(factory):
            raise TypeError(f"the factory of {self.what} {name!r} must be callable (a class or a "
                            f"function); got {type(factory).__name__}.")
        key = name.strip().lower()
        if not replace and (key in self._rows or key in self.renamed):
            where = "an existing" if key in self._rows else "a renamed"
            raise ValueError(f"{key!r} is {where} {self.what} name; pass replace=True to redefine it.")
        self._rows[key] = Spec(factory, _first_line(factory) if description is None else description)

    def _load_entry_points(self) -> None:
        """The rows of the installed packages' entry points, once."""
        if self._loaded:
            return
        self._loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            key = ep.name.strip().lower()
            dist = getattr(getattr(ep, "dist", None), "name", None)
            if key in self._own:
                warnings.warn(f"the {self.group} entry point {ep.name} = {ep.value} of "
                              f"{dist or 'an installed package'} is ignored: {key!r} is one of "
                              f"hmrf's own {self.what} names.", RuntimeWarning, stacklevel=3)
                continue
            if key in self._rows:
                continue  # registered already, by the module the entry point names
            self._rows[key] = Spec(partial(_load_and_call, ep),
                                   f"{ep.value} (entry point of {dist or 'an installed package'})")

    # ---------------------------------------------------------------- lookups
    def _key(self, name: str) -> str:
        """``name`` lower-cased; the entry points read if it is not a row yet."""
        key = name.strip().lower()
        if key not in self._rows:
            self._load_entry_points()
        return key

    def spec(self, name: str) -> Spec:
        """The row of ``name`` (case-insensitive), or a ``ValueError`` listing the names, or
        naming the new spelling of a renamed one."""
        key = self._key(name)
        if key in self._rows:
            return self._rows[key]
        if key in self.renamed:
            raise ValueError(f"the {self.what} name {key!r} is spelled {self.renamed[key]}.")
        raise ValueError(f"unknown {self.noun} {name!r}; choose from {', '.join(self)}, or register "
                         f"one (hmrf.register_{self.what}, or --plugin MODULE on the command line).")

    def build(self, text: str) -> Any:
        """The object ``text`` (``name`` or ``name(key=value, ...)``) stands for."""
        name, params = parse_spec(text)
        factory = self.spec(name).factory
        try:
            return factory(**params)
        except TypeError as exc:
            if not params:
                raise
            raise ValueError(f"{self.what} {text!r}: {exc}") from None

    # ----------------------------------------------------------- the mapping
    def __getitem__(self, name: str) -> Spec:
        return self._rows[self._key(name)]

    def __setitem__(self, name: str, spec: Spec) -> None:
        self._rows[name.strip().lower()] = spec

    def __delitem__(self, name: str) -> None:
        del self._rows[name.strip().lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._key(name) in self._rows

    def __iter__(self) -> Iterator[str]:
        self._load_entry_points()
        return iter(list(self._rows))

    def __len__(self) -> int:
        self._load_entry_points()
        return len(self._rows)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {list(self._rows)})"
