"""hmrf: semi-supervised clustering with Hidden Markov Random Fields.

Quick start::

    from hmrf import HMRFKMeans
    est = HMRFKMeans(n_clusters=3, random_state=0)
    est.fit(X, must_link=[(0, 1)], cannot_link=[(0, 2)])
    est.labels_

Layers (ARCHITECTURE.md): :class:`Constraints` → :mod:`hmrf.emissions` →
:mod:`hmrf.potentials` → :class:`HMRF` → :mod:`hmrf.inference` → :mod:`hmrf.em` →
:mod:`hmrf.estimators`. The estimators (and scikit-learn, which is slow to import) are
loaded on first use, so ``import hmrf`` stays fast.
"""

from ._lazy import lazy_names
from .constraints import Constraints
from .estimators.registry import ESTIMATOR_CLASSES
from .exceptions import ConstraintSearchError, InconsistentConstraintsError, InfeasibleError
from .graph import PairwiseGraph
from .model import HMRF


def _version() -> str:
    """The installed distribution's version (pyproject.toml is its one source)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hmrf")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        return "0+unknown"


__version__ = _version()

#: submodules loaded on first attribute access (``hmrf.inference.ICM`` works after
#: ``import hmrf``), as SciPy does (PEP 562)
_SUBMODULES = ("active", "classic", "constraints", "datasets", "em", "emissions", "estimators", "exceptions",
               "experiments", "graph", "inference", "initialization", "interop", "metrics", "model",
               "model_selection", "potentials", "testing")

#: public name -> the subpackage that defines it (the estimators from their table,
#: :data:`hmrf.estimators.ESTIMATORS`)
_LAZY = {**dict.fromkeys(ESTIMATOR_CLASSES, "estimators"), "NaiveBayesEM": "classic", "HAC": "classic",
         "register_engine": "inference", "register_emission": "emissions"}

__all__ = ["Constraints", "PairwiseGraph", "HMRF", "InconsistentConstraintsError",
           "InfeasibleError", "ConstraintSearchError", *_LAZY]


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY, _SUBMODULES)
