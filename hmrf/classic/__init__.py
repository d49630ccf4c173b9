"""The course algorithms of Mooney's clustering slides, beside the HMRF (ARCHITECTURE.md, layer 11).

* :class:`~hmrf.NaiveBayesEM` — multinomial naive Bayes fitted by EM, unsupervised or
  semi-supervised with frozen labels and weighted unlabelled documents
  (Nigam et al. 2000);
* :class:`~hmrf.HAC` — hierarchical agglomerative clustering (single, complete,
  average link) on SciPy's ``linkage``, and constrained HAC with must-links and
  cannot-links (Davidson & Ravi 2005); :func:`plot_dendrogram` draws its tree;
* :func:`buckshot_centers` — Buckshot initial centres (Cutting et al. 1992).

Names are loaded on first use: ``hmrf.classic.buckshot`` and ``hmrf.classic.linkage``
import neither scikit-learn nor matplotlib, so :mod:`hmrf.initialization` can use
Buckshot without importing the estimators.
"""

from __future__ import annotations

from .._lazy import lazy_names

__all__ = ["NaiveBayesEM", "HAC", "buckshot_centers", "plot_dendrogram"]

_HOME = {
    "NaiveBayesEM": "naive_bayes",
    "HAC": "hac",
    "buckshot_centers": "buckshot",
    "plot_dendrogram": "dendrogram",
}


__getattr__, __dir__ = lazy_names(__name__, globals(), _HOME)
