"""Emission families: how each cluster generates its points (ARCHITECTURE.md, layer 2).

Built in: :class:`SquaredEuclidean`, :class:`KL`, :class:`IDivergence`,
:class:`ItakuraSaito` (all :class:`BregmanFamily`), :class:`VonMisesFisher`
(cosine), :class:`Mahalanobis` (learned metric, MPCKMeans) and :class:`Multinomial`
(word counts, naive Bayes). Define a new Bregman family with ``BregmanFamily(phi,
grad_phi)``; give a family a name with :func:`register_emission` (or the entry-point
group ``hmrf.emissions``).
"""


from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._registry import Registry, Spec
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
    "log_vmf_normalizer", "get_emission", "register_emission", "EMISSIONS", "Mahalanobis",
    "MahalanobisParams", "MStepContext", "ClusterStats", "LinearCosts", "MetricTerms",
    "inner_products", "AUTO", "data_emission",
    "Multinomial", "MultinomialParams",
]

#: The emission name that is chosen from the data (:func:`data_emission`).
AUTO = "auto"

#: Emission name -> :class:`~hmrf._registry.Spec` (``factory(**params)`` and a line of
#: description): the names ``emission=`` and ``--emission`` accept besides ``"auto"``.
#: :func:`register_emission` and the entry points of the group ``hmrf.emissions`` add to it.
EMISSIONS = Registry("emission", "hmrf.emissions", {
    "sqeuclidean": Spec(SquaredEuclidean, "squared Euclidean distance (Gaussian)"),
    "euclidean": Spec(SquaredEuclidean, "the same as sqeuclidean"),
    "kl": Spec(KL, "KL divergence of rows normalised to sum 1 (multinomial), smoothed centres"),
    "idiv": Spec(IDivergence, "I-divergence of non-negative rows (Poisson)"),
    "i-divergence": Spec(IDivergence, "the same as idiv"),
    "itakura_saito": Spec(ItakuraSaito, "Itakura-Saito divergence of positive rows (exponential)"),
    "itakura-saito": Spec(ItakuraSaito, "the same as itakura_saito"),
    "cosine": Spec(VonMisesFisher, "1 - cosine similarity on the unit sphere (von Mises-Fisher)"),
    "vmf": Spec(VonMisesFisher, "the same as cosine"),
    "mahalanobis": Spec(Mahalanobis, "squared Mahalanobis distance with a learned metric"),
})


def register_emission(name: str, factory: Callable[..., Any], description: str | None = None, *,
                      replace: bool = False) -> None:
    """Give an emission family a name, usable wherever the library's own are.

    After ``register_emission("bernoulli", Bernoulli)``, ``HMRFKMeans(emission="bernoulli")``,
    ``get_emission("bernoulli(eps=1e-4)")`` and ``hmrf fit --plugin MODULE --emission
    bernoulli`` build it. An installed package makes the name known without an import
    through an entry point::

        [project.entry-points."hmrf.emissions"]
        bernoulli = "my_package.families:Bernoulli"

    ``name``: lower-case letters, digits and ``_ . + -`` (case-insensitive when looked
    up); ``factory(**params) -> EmissionFamily``; ``description``: one line for ``hmrf
    <command> --help`` (default: the first line of the factory's docstring). A name
    already taken (without ``replace``) or not of that form is a ``ValueError``, a
    factory that is not callable a ``TypeError``.

    See Also
    --------
    hmrf.testing.check_emission : the contracts a registered family should pass.
    """
    if isinstance(name, str) and name.strip().lower() == AUTO:
        raise ValueError(f"{AUTO!r} is the emission chosen from the data; pick another name.")
    EMISSIONS.register(name, factory, description, replace=replace)


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
    >>> from hmrf.emissions import data_emission
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
    """Resolve an emission family from a name of :data:`EMISSIONS` (optionally with
    keyword arguments, ``"kl(smoothing=0.1)"``) or return a family instance as is.

    ``"auto"`` is chosen from the data ``X`` (:func:`data_emission`) and needs it.

    Raises
    ------
    ValueError
        Unknown name (the message lists the names), ``"auto"`` without data, or
        parameters the family refuses.
    TypeError
        A registered factory that does not build an :class:`EmissionFamily`.
    """
    if isinstance(spec, EmissionFamily):
        return spec
    if isinstance(spec, str) and spec.strip().lower() == AUTO:
        if X is None:
            raise ValueError("emission='auto' is chosen from the data (cosine for sparse non-negative "
                             "rows none of which is empty, such as TF-IDF text, squared Euclidean "
                             "otherwise) and no data was given; fit the estimator first or name a family.")
        return get_emission(data_emission(X))
    if not isinstance(spec, str):
        raise ValueError(f"unknown emission {spec!r}; pass a name ({', '.join([*EMISSIONS, AUTO])}) "
                         "or an EmissionFamily.")
    family = EMISSIONS.build(spec)
    if not isinstance(family, EmissionFamily):
        raise TypeError(f"the factory of emission {spec!r} returned {type(family).__name__}, not an "
                        "hmrf.emissions.EmissionFamily.")
    return family
