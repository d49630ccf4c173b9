"""Teaching widgets for notebooks (ARCHITECTURE.md, layer 13; the optional extra ``hmrf[widgets]``).

* :class:`OracleWidget` — be the oracle: answer an active learner's queries (buttons
  or keys), add must-links and cannot-links by clicking two points, and watch the
  clustering, its constraint violations and the learning curve change after every
  answer. Built on `anywidget`, it runs in JupyterLab, Jupyter Notebook 7 and VS Code.
* :class:`OracleModel` — the same state without a user interface, for scripts and tests.
* :func:`plot_oracle` — a matplotlib picture of a session; :func:`project_2d` — the
  drawing coordinates (principal components beyond two features).

``import hmrf`` never imports this package; its names load on first use, and only
:class:`OracleWidget` needs anywidget (``pip install "hmrf[widgets]"``).
"""

from .._lazy import lazy_names
from .._optional import missing_message

_HOMES = {
    "OracleWidget": "oracle_widget", "OracleModel": "oracle_model", "CurvePoint": "oracle_model",
    "Reclusterer": "refit", "align_labels": "refit", "plot_oracle": "plot", "project_2d": "projection",
}

__all__ = list(_HOMES)

_lazy_getattr, __dir__ = lazy_names(__name__, globals(), _HOMES)


def __getattr__(name):
    try:
        return _lazy_getattr(name)
    except ModuleNotFoundError as exc:
        if exc.name in ("anywidget", "ipywidgets", "traitlets"):
            raise ModuleNotFoundError(missing_message(exc.name, f"hmrf.widgets.{name}", extra="widgets"),
                                      name=exc.name) from exc
        raise
