"""scikit-learn estimators built on the HMRF (ARCHITECTURE.md, layer 8).

The classes load scikit-learn, so they are imported on first access (PEP 562), as
the top-level package does: :data:`ESTIMATORS` (the table of names the command line
uses) can be read without that cost. :func:`fit_supervised` gives any estimator the
supervision it takes.
"""

from .._lazy import lazy_names
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


__getattr__, __dir__ = lazy_names(__name__, globals(), _CLASSES)
