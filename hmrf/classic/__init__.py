"""The course algorithms of Mooney's clustering slides, beside the HMRF.

:class:`~hmrf.NaiveBayesEM` (Nigam et al. 2000), :class:`~hmrf.HAC` and constrained HAC
(Davidson & Ravi 2005) with :func:`plot_dendrogram`, and :func:`buckshot_centers`
(Cutting et al. 1992). ``buckshot`` and ``linkage`` import neither scikit-learn nor
matplotlib, so :mod:`hmrf.initialization` can use Buckshot.
"""

from __future__ import annotations

from .._lazy import lazy_names

__all__ = ["NaiveBayesEM", "HAC", "buckshot_centers", "plot_dendrogram"]

_HOME = {"NaiveBayesEM": "naive_bayes", "HAC": "hac", "buckshot_centers": "buckshot",
         "plot_dendrogram": "dendrogram"}


__getattr__, __dir__ = lazy_names(__name__, globals(), _HOME)
