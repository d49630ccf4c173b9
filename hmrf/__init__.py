"""hmrf: semi-supervised clustering with Hidden Markov Random Fields.

Quick start::

    from hmrf import HMRFKMeans
    est = HMRFKMeans(n_clusters=3, random_state=0)
    est.fit(X, must_link=[(0, 1)], cannot_link=[(0, 2)])
    est.labels_

Layers (ARCHITECTURE.md): :class:`Constraints` → :mod:`hmrf.emissions` →
:mod:`hmrf.potentials` → :class:`HMRF` → :mod:`hmrf.inference` → :mod:`hmrf.em` →
:mod:`hmrf.estimators`. Every public name is loaded on first use
(PEP 562), so ``import hmrf`` imports neither SciPy nor scikit-learn.
"""

from ._lazy import lazy_names
from .estimators.registry import ESTIMATOR_CLASSES

#: submodules loaded on first attribute access (``hmrf.inference.ICM`` works after
#: ``import hmrf``), as SciPy does (PEP 562)
_SUBMODULES = ("active", "classic", "constraints", "datasets", "em", "emissions", "estimators", "exceptions",
               "experiments", "graph", "inference", "initialization", "interop", "metrics", "model",
               "model_selection", "potentials", "testing")

#: public name -> the submodule that defines it (the estimators from their table,
#: :data:`hmrf.estimators.ESTIMATORS`), each imported on first use
_LAZY = {"Constraints": "constraints", "PairwiseGraph": "graph", "HMRF": "model",
         "InconsistentConstraintsError": "exceptions", "InfeasibleError": "exceptions",
         "ConstraintSearchError": "exceptions",
         **dict.fromkeys(ESTIMATOR_CLASSES, "estimators"), "NaiveBayesEM": "classic", "HAC": "classic",
         "register_engine": "inference", "register_emission": "emissions"}

__all__ = list(_LAZY)

_getattr, _dir = lazy_names(__name__, globals(), _LAZY, _SUBMODULES)


def __getattr__(name: str):
    if name == "__version__":  # importlib.metadata costs more than the rest of the package
        from importlib.metadata import PackageNotFoundError, version

        try:  # the installed distribution's version (pyproject.toml is its one source)
            value = version("hmrf")
        except PackageNotFoundError:  # a source tree on sys.path, not installed
            value = "0+unknown"
        globals()[name] = value
        return value
    return _getattr(name)


def __dir__() -> list[str]:
    return sorted({*_dir(), "__version__"})
