"""Emission families: how each cluster generates its points (ARCHITECTURE.md, layer 2).

Built in: :class:`SquaredEuclidean`, :class:`KL`, :class:`IDivergence`,
:class:`ItakuraSaito` (all :class:`BregmanFamily`), :class:`VonMisesFisher`
(cosine), :class:`Mahalanobis` (learned metric, MPCKMeans) and :class:`Multinomial`
(word counts, naive Bayes). Define a new Bregman
family with ``BregmanFamily(phi, grad_phi)``.
"""


from __future__ import annotations

from typing import Any

import numpy as np

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
from .kl import KL, IDivergence, Multinomial, MultinomialParams, SmoothedParams
from .mahalanobis import Mahalanobis, MahalanobisParams
from .stats import ClusterStats
from .vmf import VonMisesFisher, log_vmf_normalizer

__all__ = [
    "EmissionFamily", "EmissionParams", "BregmanFamily", "SquaredEuclidean", "KL",
    "IDivergence", "ItakuraSaito", "VonMisesFisher", "SmoothedParams", "cluster_sums",
    "log_vmf_normalizer", "get_emission", "Mahalanobis", "MahalanobisParams", "MStepContext",
    "ClusterStats", "LinearCosts", "MetricTerms", "inner_products", "AUTO", "data_emission",
    "Multinomial", "MultinomialParams",
]

#: The emission name that is chosen from the data (:func:`data_emission`).
AUTO = "auto"

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


def data_emission(X: Any) -> str:
    """The emission ``"auto"`` stands for on ``X``: ``"cosine"`` for sparse rows with no
    negative entry (term counts or TF-IDF weights: text) of which none is all zeros
    (the cosine of an empty row is undefined), ``"sqeuclidean"`` otherwise.

    The thesis clusters text with the cosine / von Mises-Fisher model (SP-KMeans as the
    underlying KMeans of every method on the high-dimensional sets, Basu 2005, §3.5;
    the directional HMRF-KMeans of §4.3.4) and points in a low-dimensional space with
    squared Euclidean distance. A Dask array (anything with a ``compute``) is text when
    its chunks are sparse, its smallest entry is not negative and no row is empty.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> data_emission(sp.csr_matrix(np.eye(3))), data_emission(np.eye(3))
    ('cosine', 'sqeuclidean')
    """
    import scipy.sparse as sp

    if sp.issparse(X):
        return "cosine" if _text_rows(X)[0, 0] else "sqeuclidean"
    meta = getattr(X, "_meta", None)
    if callable(getattr(X, "compute", None)) and sp.issparse(meta):
        text = X.map_blocks(_text_rows, chunks=(1, 1), dtype=bool, meta=np.empty((0, 0), dtype=bool))
        return "cosine" if bool(text.all().compute()) else "sqeuclidean"
    return "sqeuclidean"


def _text_rows(block: Any) -> np.ndarray:
    """Whether a sparse block's rows are all non-negative and none is empty, as a 1×1
    array (also the map step of :func:`data_emission` on a Dask array)."""
    block = block.tocsr()
    text = block.nnz == 0 or float(block.data.min()) >= 0.0
    if text and block.shape[0]:  # non-negative rows: empty exactly when they sum to zero
        text = bool(np.all(np.asarray(block.sum(axis=1)).ravel() > 0))
    return np.full((1, 1), text)


def get_emission(spec: str | EmissionFamily, X: Any = None) -> EmissionFamily:
    """Resolve an emission family from a name or return a family instance as is.

    ``"auto"`` is chosen from the data ``X`` (:func:`data_emission`) and needs it.
    """
    if isinstance(spec, EmissionFamily):
        return spec
    if isinstance(spec, str) and spec.lower() == AUTO:
        if X is None:
            raise ValueError("emission='auto' is chosen from the data (cosine for sparse non-negative "
                             "rows such as TF-IDF text, squared Euclidean otherwise) and no data was "
                             "given; fit the estimator first or name a family.")
        return get_emission(data_emission(X))
    if isinstance(spec, str) and spec.lower() in _ALIASES:
        return _ALIASES[spec.lower()]()
    raise ValueError(
        f"unknown emission {spec!r}; choose from {sorted(_ALIASES) + [AUTO]} or pass an EmissionFamily."
    )
