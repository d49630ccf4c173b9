"""Declarative parameter checks: one table per class instead of ``if`` chains in methods.

A class lists what each of its parameters may be, as scikit-learn's estimators do with
``_parameter_constraints`` (written here for this project; scikit-learn's module is
private and slow to import)::

    class ICM(InferenceEngine):
        _parameter_constraints = {"max_iter": [Interval(Integral, 1, None)]}

and :func:`validate_params` checks an object's attributes against its table, raising one
``ValueError`` that names the parameter, what it may be and what it got. A parameter is
valid when it matches any entry of its list. Entries are:

* :class:`Interval` — a real or integral number in a range (``bool`` is not a number);
* :class:`Options` — one of a fixed set of values (strings, ``None``, ...);
* a type or tuple of types — an instance of it (e.g. an ``InferenceEngine`` object);
* a callable predicate wrapped in :class:`Check` — for the rare custom rule.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["Interval", "Options", "Check", "validate_params", "describe"]


@dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (``numbers.Real`` or ``numbers.Integral``) between two bounds.

    ``None`` bounds are unbounded; ``closed`` says which ends belong to the interval
    (``"both"``, ``"left"``, ``"right"``, ``"neither"``). NaN never matches; ``inf``
    matches only an unbounded (or infinite, closed) end.
    """

    kind: type
    left: float | None = None
    right: float | None = None
    closed: str = "both"

    def matches(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        v = float(value)
        if np.isnan(v):
            return False
        left_in, right_in = self.closed in ("both", "left"), self.closed in ("both", "right")
        lo_ok = self.left is None or (v >= self.left if left_in else v > self.left)
        hi_ok = self.right is None or (v <= self.right if right_in else v < self.right)
        if np.isinf(v) and not ((v > 0 and self.right is None) or (v < 0 and self.left is None)
                                or (self.right == v and self.closed in ("both", "right"))):
            return False
        return lo_ok and hi_ok

    def __str__(self) -> str:
        what = "an integer" if self.kind is numbers.Integral else "a number"
        lo = "-inf" if self.left is None else f"{self.left:g}"
        hi = "inf" if self.right is None else f"{self.right:g}"
        lb = "[" if self.closed in ("both", "left") and self.left is not None else "("
        rb = "]" if self.closed in ("both", "right") and self.right is not None else ")"
        return f"{what} in {lb}{lo}, {hi}{rb}"


@dataclass(frozen=True)
class Options:
    """One of ``values`` (compared with ``==``; strings case-sensitively)."""

    values: tuple

    def __init__(self, *values):
        object.__setattr__(self, "values", tuple(values))

    def matches(self, value) -> bool:
        return any(value is v or (type(value) is type(v) and value == v) for v in self.values)

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Check:
    """A custom rule: ``predicate(value) -> bool`` with a description for the message."""

    predicate: object
    description: str

    def matches(self, value) -> bool:
        return bool(self.predicate(value))

    def __str__(self) -> str:
        return self.description


def _matches(entry, value) -> bool:
    if isinstance(entry, (Interval, Options, Check)):
        return entry.matches(value)
    if isinstance(entry, type) or (isinstance(entry, tuple) and all(isinstance(t, type) for t in entry)):
        return isinstance(value, entry)
    raise TypeError(f"unknown parameter constraint {entry!r}")


def describe(entries) -> str:
    """Human-readable alternatives of a constraint list, for error messages."""
    parts = []
    for e in entries:
        if isinstance(e, type):
            parts.append(f"a {e.__name__} instance")
        elif isinstance(e, tuple):
            parts.append(" or ".join(f"a {t.__name__} instance" for t in e))
        else:
            parts.append(str(e))
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def validate_params(obj, constraints: dict | None = None, owner: str | None = None) -> None:
    """Check every parameter of ``obj`` named in ``constraints`` (default: its class table).

    Parameters
    ----------
    obj : object
        Read with ``getattr`` (estimators and engines store their parameters as attributes).
    constraints : dict, optional
        ``{name: [entry, ...]}``; defaults to ``type(obj)._parameter_constraints``.
    owner : str, optional
        Name used in the message; defaults to the class name.

    Raises
    ------
    ValueError
        The first parameter that matches none of its entries, e.g.
        ``ICM: max_iter must be an integer in [1, inf); got 0.``
    """
    table = type(obj)._parameter_constraints if constraints is None else constraints
    who = owner or type(obj).__name__
    for name, entries in table.items():
        value = getattr(obj, name)
        if not any(_matches(e, value) for e in entries):
            raise ValueError(f"{who}: {name} must be {describe(entries)}; got {value!r}.")
