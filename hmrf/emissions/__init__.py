"""Emission families: how each cluster generates its points (ARCHITECTURE.md, layer 2).

Built in: :class:`SquaredEuclidean`, :class:`KL`, :class:`IDivergence`,
:class:`ItakuraSaito` (all :class:`BregmanFamily`), :class:`VonMisesFisher`
(cosine) and :class:`Mahalanobis` (learned metric, MPCKMeans). Define a new Bregman
family with ``BregmanFamily(phi, grad_phi)``.
"""


from __future__ import annotations

from .base import (
    EmissionFamily,
    EmissionParams,
    LinearCosts,
    MetricTerms,
    MStepContext,
    cluster_sums,
    inner_products,
)
from .bregman import BregmanFamily
from .euclidean import SquaredEuclidean
from .itakura_saito import ItakuraSaito
from .kl import KL, IDivergence, SmoothedParams
from .mahalanobis import Mahalanobis, MahalanobisParams
from .stats import ClusterStats
from .vmf import VonMisesFisher, log_vmf_normalizer

__all__ = [
    "EmissionFamily", "EmissionParams", "BregmanFamily", "SquaredEuclidean", "KL",
    "IDivergence", "ItakuraSaito", "VonMisesFisher", "SmoothedParams", "cluster_sums",
    "log_vmf_normalizer", "get_emission", "Mahalanobis", "MahalanobisParams", "MStepContext",
    "ClusterStats", "LinearCosts", "MetricTerms", "inner_products",
]

_ALIASES = {
    "sqeuclidean": SquaredEuclidean,
    "euclidean": SquaredEuclidean,
    "kl": KL,
    "idiv": IDivergence,
    "i-divergence": IDivergence,
    "itakura_saito": ItakuraSaito,
    "itakura-saito": ItakuraSaito,
    "cosine": VonMisesFisher,
    "vmf": VonMisesFisher,
    "mahalanobis": Mahalanobis,
}


def get_emission(spec: str | EmissionFamily) -> EmissionFamily:
    """Resolve an emission family from a name or return a family instance as is."""
    if isinstance(spec, EmissionFamily):
        return spec
    if isinstance(spec, str) and spec.lower() in _ALIASES:
        return _ALIASES[spec.lower()]()
    raise ValueError(
        f"unknown emission {spec!r}; choose from {sorted(_ALIASES)} or pass an EmissionFamily."
    )
