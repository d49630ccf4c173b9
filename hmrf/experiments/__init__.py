"""Experiments: learning curves, active-learning curves and their one result table.

* :func:`learning_curve` (``hmrf.experiments.learning``) — the protocols of
  Basu (2005): supervision drawn from a training part, scores on the held-out part;
* :func:`active_curve` (``hmrf.experiments.active``) — an active selector and a
  clusterer over budgets and repetitions;
* :func:`compare_engines` (``hmrf.experiments.engines``) — the engine study of
  ``hmrf compare``: E-step engines inside one estimator on the same splits, with the
  objective against the best engine and each E-step's energy against a lower bound;
* :class:`CurveTable` (``hmrf.experiments.table``) — what all of them return: one
  record per fit, CSV, summaries, paired comparisons, plots; :data:`METRICS` says what
  each score measures.
"""

from .active import ActiveCurve, active_curve
from .engines import compare_engines, format_engine_summary, plot_engine_summary, summarise_engines
from .learning import PROTOCOLS, learning_curve, make_splits
from .table import METRICS, CurveTable

__all__ = ["learning_curve", "CurveTable", "PROTOCOLS", "METRICS", "make_splits", "active_curve",
           "ActiveCurve", "compare_engines", "summarise_engines", "format_engine_summary",
           "plot_engine_summary"]
