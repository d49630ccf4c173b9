"""The course algorithms of Mooney's clustering slides, beside the HMRF (DESIGN.md, layer 11).

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

import importlib

__all__ = ["NaiveBayesEM", "HAC", "buckshot_centers", "plot_dendrogram"]

_HOME = {
    "NaiveBayesEM": "naive_bayes",
    "HAC": "hac",
    "buckshot_centers": "buckshot",
    "plot_dendrogram": "dendrogram",
}


def __getattr__(name):
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hmrf.classic' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
