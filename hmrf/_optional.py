"""Optional dependencies: one way to import them, one message when one is missing.

Every optional import of the package goes through :func:`load` (the module, or an
``ImportError`` saying what needs it and the ``pip`` command that installs it) or
:func:`available` (whether it imports, for code with a fallback)::

    cvxpy = load("cvxpy", purpose="LPRelaxation(solver='cvxpy')")
    # ImportError: LPRelaxation(solver='cvxpy') needs cvxpy: pip install 'hmrf[cvxpy]'

Nothing is imported before it is asked for, so ``import hmrf`` stays light.
"""

from __future__ import annotations

import importlib

__all__ = ["load", "available", "missing_message", "EXTRAS"]

#: Top-level import name -> the extra of ``hmrf`` that installs it (pyproject.toml).
EXTRAS = {
    "cvxpy": "cvxpy",
    "matplotlib": "plot",
    "pyarrow": "parquet",
    "dask": "dask",
    "distributed": "dask",
    "anywidget": "widgets",
    "ipywidgets": "widgets",
    "traitlets": "widgets",
    "tqdm": "cli",
}

#: Top-level import name -> its PyPI distribution, where the two differ.
DISTRIBUTIONS = {"PIL": "Pillow"}


def _top(name: str) -> str:
    return name.split(".")[0]


def missing_message(name: str, purpose: str | None = None, extra: str | None = None,
                    hint: str | None = None) -> str:
    """What a missing optional dependency ``name`` stops, and how to install it.

    ``"{purpose} needs {distribution}: pip install 'hmrf[{extra}]'"`` (the distribution
    alone when no extra installs it), then ``"; {hint}"`` (e.g. an alternative that needs
    nothing more).
    """
    top = _top(name)
    dist = DISTRIBUTIONS.get(top, top)
    extra = EXTRAS.get(top) if extra is None else extra
    what = dist if dist == top else f"{dist} (import name {top})"
    command = f"pip install 'hmrf[{extra}]'" if extra else f"pip install {dist}"
    message = f"{purpose or 'this'} needs {what}: {command}"
    return message if hint is None else f"{message}; {hint}"


def load(name: str, extra: str | None = None, *, purpose: str | None = None, hint: str | None = None):
    """The module ``name`` (e.g. ``"cvxpy"``, ``"pyarrow.parquet"``), imported on first use.

    Parameters
    ----------
    name : str
        Import name of the module.
    extra : str, optional
        The extra of ``hmrf`` that installs it (default: :data:`EXTRAS`; none: the
        message names the distribution).
    purpose : str, optional
        What needs it, for the message (e.g. ``"AlphaExpansion"``).
    hint : str, optional
        Appended to the message (e.g. what to use instead).

    Returns
    -------
    module

    Raises
    ------
    ImportError
        ``name`` does not import; the message is :func:`missing_message`.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(missing_message(name, purpose, extra, hint), name=_top(name)) from exc


def available(name: str) -> bool:
    """Whether the module ``name`` imports (imported now if it does)."""
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True
