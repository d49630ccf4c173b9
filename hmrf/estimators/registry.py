"""The one table of estimator names, shared by the Python API and every command.

``hmrf curve --estimator pckmeans``, ``hmrf fit``, ``hmrf active`` and ``hmrf compare``
look names up in :data:`ESTIMATORS`; each row says which class a name builds, with
which fixed settings, and what the command line must know before it builds it: the
supervision the estimator takes, whether it has an E-step engine or a constraint
weight to set, and which emission families it can use. The classes are imported only
when an estimator is built, so reading the table (``hmrf --help``) stays fast.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:

    from sklearn.base import BaseEstimator

    from ..emissions.base import EmissionFamily
    from ..inference.base import InferenceEngine

__all__ = ["ESTIMATORS", "ESTIMATOR_CLASSES", "EstimatorSpec", "estimator_key", "make_estimator"]


@dataclass(frozen=True)
class EstimatorSpec:
    """One row of :data:`ESTIMATORS`.

    Attributes
    ----------
    cls : str
        ``"module:Class"`` inside :mod:`hmrf.estimators` (imported on first use).
    description : str
        One line, shown by ``hmrf <command> --help``.
    supervision : {"constraints", "labels", "none"}
        What ``fit`` takes: pairwise constraints (partial labels become pairs), labelled
        seeds only (``fit(X, y)``), or nothing.
    takes_engine, takes_w : bool
        Whether :func:`make_estimator` (the command line's ``--engine``, ``--w``) may set
        the E-step engine, the constraint weight: a row may fix a parameter its class has
        (COP-KMeans' search, HMRF-KMeans-I's ``w=0``).
    emissions : tuple of str or None
        ``None``: any family, passed as ``emission=``. Otherwise the names it takes:
        passed as ``emission=`` when ``named_emission`` (the metric learners' names of
        a metric), else only describing the family the estimator fixes.
    named_emission : bool
        Whether a name of ``emissions`` is passed as ``emission=``.
    params : dict
        Fixed keyword arguments of the row (e.g. ``w=0`` for HMRF-KMeans-I).
    no_engine : str
        For estimators without an engine: why (shown when ``--engine`` is given).
    """

    cls: str
    description: str
    supervision: str
    takes_engine: bool = False
    takes_w: bool = False
    emissions: tuple | None = None
    named_emission: bool = False
    params: dict = field(default_factory=dict)
    no_engine: str = ""

    @property
    def module(self) -> str:
        """The module of :mod:`hmrf.estimators` that defines the class."""
        return self.cls.split(":")[0]

    @property
    def class_name(self) -> str:
        return self.cls.split(":")[1]

    def load(self) -> type:
        """The estimator class (imports scikit-learn on first use)."""
        return getattr(importlib.import_module(f"hmrf.estimators.{self.module}"), self.class_name)


_FAMILY = {"sqeuclidean": "squared Euclidean distance", "mahalanobis": "a learned Mahalanobis metric",
           "cosine": "cosine similarity"}
#: ``--emission`` of the metric learners (their ``emission`` names; on text ``"auto"`` is
#: ``"cosine"``)
_METRICS = ("mahalanobis", "sqeuclidean", "euclidean", "cosine")
_ARGMIN = "its E-steps have no pairwise terms, so each point takes its nearest centre"

#: Estimator name -> :class:`EstimatorSpec`.
ESTIMATORS = {
    "hmrf-kmeans": EstimatorSpec(
        "hmrf_kmeans:HMRFKMeans",
        "HMRF-KMeans: any emission family and engine, Potts penalties (Basu 2005, ch. 4)",
        "constraints", takes_engine=True, takes_w=True),
    "hmrf-kmeans-i": EstimatorSpec(
        "hmrf_kmeans:HMRFKMeans",
        "HMRF-KMeans-I: constraints in the initialisation only (w = 0)",
        "constraints", takes_engine=True, params={"w": 0.0}),
    "pckmeans": EstimatorSpec(
        "hmrf_kmeans:PCKMeans",
        "PCKMeans: HMRF-KMeans with the constraint closure (Basu, Bilenko & Mooney 2004)",
        "constraints", takes_engine=True, takes_w=True),
    "mpckmeans": EstimatorSpec(
        "mpckmeans:MPCKMeans",
        "MPCKMeans: PCKMeans with distance-scaled penalties and, given as many constraints "
        "(after the closure) as features, a learned diagonal Mahalanobis metric (cosine on text)",
        "constraints", takes_engine=True, takes_w=True, emissions=_METRICS, named_emission=True),
    "mkmeans": EstimatorSpec(
        "mpckmeans:MKMeans",
        "MKMeans: KMeans under a metric learned from the constraints",
        "constraints", takes_w=True, emissions=_METRICS, named_emission=True, no_engine=_ARGMIN),
    "copkmeans": EstimatorSpec(
        "copkmeans:COPKMeans",
        "COP-KMeans: every constraint hard, greedy assignment (Wagstaff et al. 2001)",
        "constraints",
        no_engine="its E-step is its own greedy constraint-respecting assignment"),
    "seeded-kmeans": EstimatorSpec(
        "seeded:SeededKMeans",
        "Seeded-KMeans: labelled seeds initialise the centroids (Basu 2005, Fig. 3.1)",
        "labels", no_engine=_ARGMIN),
    "constrained-kmeans": EstimatorSpec(
        "seeded:ConstrainedKMeans",
        "Constrained-KMeans: seeds initialise and keep their labels (Fig. 3.2)",
        "labels", no_engine="its seeds are clamped and the other points take their nearest "
                            "centre"),
    "spherical-kmeans": EstimatorSpec(
        "hmrf_kmeans:SphericalKMeans",
        "SP-KMeans: cosine similarity on the unit sphere (text)",
        "constraints", takes_w=True, emissions=("cosine", "vmf"),
        no_engine="its E-steps always use the default engine, auto"),
    "kmeans": EstimatorSpec(
        "hmrf_kmeans:KMeans",
        "KMeans from perturbed global centroids (the thesis's initialisation; several runs where "
        "cheap), no supervision",
        "none", params={"init": "neighborhoods"}, no_engine=_ARGMIN),
}


#: Estimator class name -> the module of :mod:`hmrf.estimators` that defines it, in the
#: order of :data:`ESTIMATORS` (the lazy names of ``hmrf`` and ``hmrf.estimators``).
ESTIMATOR_CLASSES = {spec.class_name: spec.module for spec in ESTIMATORS.values()}


def _squeezed(name) -> str:
    return str(name).strip().lower().replace("-", "").replace("_", "")


#: Spellings of a name of :data:`ESTIMATORS` that also name it: the class name in any
#: case (``COPKMeans``, ``hmrfkmeans``), with or without hyphens or underscores; a class
#: with two rows (``HMRFKMeans``) names its first.
_ALIASES: dict[str, str] = {}
for _key, _row in ESTIMATORS.items():
    _ALIASES.setdefault(_squeezed(_key), _key)
    _ALIASES.setdefault(_squeezed(_row.class_name), _key)


def estimator_key(name: str) -> str:
    """The name of :data:`ESTIMATORS` that ``name`` spells: the name itself in any case,
    the estimator's class name (``"COPKMeans"`` -> ``"copkmeans"``, ``"SeededKMeans"`` ->
    ``"seeded-kmeans"``), with or without hyphens; ``name`` lower-cased when it spells
    none (the caller reports it)."""
    key = str(name).strip().lower()
    return key if key in ESTIMATORS else _ALIASES.get(_squeezed(name), key)


def _spec(name) -> EstimatorSpec:
    key = estimator_key(name)
    if key not in ESTIMATORS:
        raise ValueError(f"unknown estimator {name!r}; choose from {', '.join(ESTIMATORS)}.")
    return ESTIMATORS[key]


def make_estimator(name: str, n_clusters: int, emission: str | EmissionFamily | None = None,
                   w: float | None = None, engine: str | InferenceEngine | None = None, *,
                   random_state: int | None = None) -> BaseEstimator:
    """The unfitted estimator a name of :data:`ESTIMATORS` stands for.

    ``emission`` names the family of an estimator with a free one, or the family an
    estimator fixes; ``w`` and ``engine`` (``None``: the estimator's default) are a
    ``ValueError`` for an estimator without them, as an unknown name or engine is.

    Examples
    --------
    >>> from hmrf.estimators import make_estimator
    >>> make_estimator("hmrf-kmeans-i", 3).w
    0.0
    >>> make_estimator("kmeans", 3, engine="lp")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: kmeans has no E-step engine to choose: its E-steps have no pairwise terms, ...
    """
    spec = _spec(name)
    key = estimator_key(name)
    kwargs = dict(spec.params)
    if emission is not None:
        if spec.emissions is None:
            kwargs["emission"] = emission
        elif not (isinstance(emission, str) and emission.lower() in spec.emissions):
            raise ValueError(f"{key} uses {_FAMILY[spec.emissions[0]]}; emission {emission!r} is not "
                             f"possible (use {' or '.join(spec.emissions)}, or omit it).")
        elif spec.named_emission:
            kwargs["emission"] = emission.lower()
    if w is not None:
        if not spec.takes_w:
            raise ValueError(f"{key} has no constraint weight w to set.")
        kwargs["w"] = w
    if engine is not None:
        if not spec.takes_engine:
            with_engine = ", ".join(n for n, s in ESTIMATORS.items() if s.takes_engine)
            raise ValueError(f"{key} has no E-step engine to choose: {spec.no_engine}. "
                             f"Estimators with an engine: {with_engine}.")
        if isinstance(engine, str):
            from ..inference import get_engine

            get_engine(engine)  # an unknown name fails here, before any fit
        kwargs["inference"] = engine
    if random_state is not None:
        kwargs["random_state"] = random_state
    return spec.load()(n_clusters, **kwargs)
