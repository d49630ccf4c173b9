"""scikit-learn estimators built on the HMRF (ARCHITECTURE.md, layer 8).

The classes load scikit-learn, so they are imported on first access (PEP 562), as
the top-level package does: :data:`ESTIMATORS` (the table of names the command line
uses) can be read without that cost. :func:`fit_supervised` gives any estimator the
supervision it takes.
"""

from .._lazy import lazy_names
from .registry import ESTIMATOR_CLASSES, ESTIMATORS, EstimatorSpec, estimator_key, make_estimator

#: public name -> module of this package that defines it (the estimators from the table)
_CLASSES = {"HMRFClusterMixin": "base", **ESTIMATOR_CLASSES,
            "fit_supervised": "supervision", "supervision_kind": "supervision"}

__all__ = [
    *_CLASSES, "ESTIMATORS", "EstimatorSpec", "estimator_key", "make_estimator",
]


__getattr__, __dir__ = lazy_names(__name__, globals(), _CLASSES)
