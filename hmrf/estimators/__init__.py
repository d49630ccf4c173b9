"""scikit-learn estimators built on the HMRF (DESIGN.md, layer 8)."""

from .base import HMRFClusterMixin
from .copkmeans import COPKMeans
from .hmrf_kmeans import HMRFKMeans, KMeans, PCKMeans, SphericalKMeans
from .mpckmeans import MKMeans, MPCKMeans
from .seeded import ConstrainedKMeans, SeededKMeans

__all__ = [
    "HMRFClusterMixin", "HMRFKMeans", "PCKMeans", "KMeans", "SphericalKMeans",
    "SeededKMeans", "ConstrainedKMeans", "COPKMeans", "MPCKMeans", "MKMeans",
]
