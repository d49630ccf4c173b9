"""Teaching widgets for notebooks (the optional extra ``hmrf[widgets]``): :class:`OracleWidget`
(be the oracle of an active learner and watch the clustering follow), :class:`OracleModel`
(the same state without a user interface), :func:`plot_oracle` and :func:`project_2d`.
Only :class:`OracleWidget` needs anywidget.
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
