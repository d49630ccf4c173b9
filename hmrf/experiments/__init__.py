"""Experiments: learning curves, active-learning curves and their one result table.

* :func:`learning_curve` (:mod:`hmrf.experiments.learning`) — the protocols of
  Basu (2005): supervision drawn from a training part, scores on the held-out part;
* :func:`active_curve` (:mod:`hmrf.experiments.active`) — an active selector and a
  clusterer over budgets and repetitions;
* :class:`CurveTable` (:mod:`hmrf.experiments.table`) — what both return: one record
  per fit, CSV, summaries, paired comparisons, plots; :data:`METRICS` says what each
  score measures.
"""

from .active import ActiveCurve, active_curve
from .learning import PROTOCOLS, learning_curve, make_splits
from .table import METRICS, CurveTable

__all__ = ["learning_curve", "CurveTable", "PROTOCOLS", "METRICS", "make_splits", "active_curve",
           "ActiveCurve"]
