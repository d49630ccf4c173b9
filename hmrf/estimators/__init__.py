"""scikit-learn estimators built on the HMRF (DESIGN.md, layer 8).

The classes load scikit-learn, so they are imported on first access (PEP 562), as
the top-level package does: :data:`ESTIMATORS` (the table of names the command line
uses) can be read without that cost. :func:`fit_supervised` gives any estimator the
supervision it takes.
"""

from .registry import ESTIMATORS, EstimatorSpec, make_estimator
from .supervision import fit_supervised, supervision_kind

#: class name -> module of this package that defines it
_CLASSES = {
    "HMRFClusterMixin": "base", "HMRFKMeans": "hmrf_kmeans", "PCKMeans": "hmrf_kmeans",
    "KMeans": "hmrf_kmeans", "SphericalKMeans": "hmrf_kmeans", "SeededKMeans": "seeded",
    "ConstrainedKMeans": "seeded", "COPKMeans": "copkmeans", "MPCKMeans": "mpckmeans",
    "MKMeans": "mpckmeans",
}

__all__ = [
    "HMRFClusterMixin", "HMRFKMeans", "PCKMeans", "KMeans", "SphericalKMeans",
    "SeededKMeans", "ConstrainedKMeans", "COPKMeans", "MPCKMeans", "MKMeans",
    "ESTIMATORS", "EstimatorSpec", "make_estimator", "fit_supervised", "supervision_kind",
]


def __getattr__(name):
    if name in _CLASSES:
        import importlib

        value = getattr(importlib.import_module(f".{_CLASSES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hmrf.estimators' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_CLASSES))
