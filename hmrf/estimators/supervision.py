"""Giving supervision to an estimator: one adapter for every caller.

Learning curves, active learning, the NPU selector and the ``hmrf`` commands hand
"whatever supervision there is" (a :class:`~hmrf.Constraints`, partial labels or
nothing) to an estimator that may take pairs, labelled seeds or nothing at all:
:func:`fit_supervised` does it in one place, from what the estimator declares
(:func:`supervision_kind`). :func:`emission_of` says which emission family an HMRF
estimator fits with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..constraints import Constraints

if TYPE_CHECKING:
    from typing import Any

    from sklearn.base import BaseEstimator

    from .._typing import MatrixLike
    from ..emissions.base import EmissionFamily

__all__ = ["emission_of", "supervision_kind", "fit_supervised",
           "neighborhoods_from_constraints"]

KINDS = ("constraints", "labels", "none")


def emission_of(estimator: BaseEstimator, X: MatrixLike | None = None) -> EmissionFamily:
    """The emission family an HMRF estimator fits with (its ``emission`` parameter, or
    the family it fixes: cosine for SphericalKMeans, the learned metric for MPCKMeans),
    as an :class:`~hmrf.emissions.EmissionFamily`. ``emission="auto"`` is the family the
    fit chose; before a fit it is chosen from ``X`` (:func:`hmrf.emissions.data_emission`),
    which must then be given."""
    from ..emissions import AUTO, get_emission

    spec, setting = estimator._spec_emission(), estimator._setting("emission")
    if X is not None and isinstance(setting, str) and setting.lower() == AUTO:
        spec = AUTO  # chosen from this X, not from an earlier fit's data
    return get_emission(spec, X)


def supervision_kind(estimator: BaseEstimator) -> str:
    """What supervision ``estimator.fit`` takes: ``"constraints"``, ``"labels"`` or ``"none"``.

    The row of :data:`~hmrf.estimators.ESTIMATORS` whose class the estimator is an
    instance of (the most derived one); else the class attribute ``hmrf_supervision``
    (the protocol for a foreign scikit-learn estimator); else ``"none"``.

    Examples
    --------
    >>> from hmrf.estimators import supervision_kind
    >>> from hmrf import KMeans, SeededKMeans, PCKMeans
    >>> [supervision_kind(e(3)) for e in (PCKMeans, SeededKMeans, KMeans)]
    ['constraints', 'labels', 'none']
    """
    from .registry import ESTIMATORS

    best = None
    for spec in ESTIMATORS.values():
        cls = spec.load()
        if isinstance(estimator, cls) and (best is None or issubclass(cls, best[0])):
            best = (cls, spec.supervision)
    if best is not None:
        return best[1]
    declared = getattr(type(estimator), "hmrf_supervision", "none")
    if declared not in KINDS:
        raise ValueError(f"{type(estimator).__name__}.hmrf_supervision is {declared!r}; "
                         f"use one of {KINDS}.")
    return declared


def neighborhoods_from_constraints(constraints: Constraints) -> list[np.ndarray]:
    """Neighbourhoods implied by a constraint set (Xiong et al. 2014, Definition 1).

    Components of the must-link closure that are pairwise cannot-linked. Chosen
    greedily, largest component first, each kept if it is cannot-linked to every one
    kept before; with no cannot-link at all this is the largest component alone
    ("we will treat the largest connected component as the known neighborhood").
    Returns the sorted member indices of each, in the order chosen.
    """
    hoods = constraints.neighborhoods(include_singletons=True)
    if not hoods:
        return []
    joined = {tuple(p) for p in constraints.inferred_cannot_links(include_singletons=True).tolist()}
    chosen: list[int] = []
    for p in range(len(hoods)):
        if all((min(p, c), max(p, c)) in joined for c in chosen):
            chosen.append(p)
    return [hoods[p] for p in chosen]


def _seeds(constraints: Constraints, n_clusters: int | None = None) -> np.ndarray:
    """Partial labels from constraints: neighbourhood ``p`` -> label ``p``, others -1.

    When the neighbourhoods number ``n_clusters`` (one per cluster), a must-link
    component cannot-linked to all of them but one must join that one in every
    ``n_clusters``-clustering that keeps the constraints, so it is labelled too; repeated
    until nothing changes (the inference of CONSOLIDATE, Basu 2005, §5.3, applied to the
    constraints given).
    """
    y = np.full(constraints.n, -1, dtype=np.int64)
    hoods = neighborhoods_from_constraints(constraints)
    for p, members in enumerate(hoods):
        y[members] = p
    k = len(hoods)
    if n_clusters is None or k != n_clusters or k < 2 or constraints.n_cannot_link == 0:
        return y
    comp = constraints.component_labels()
    label = np.full(int(comp.max()) + 1, -1, dtype=np.int64)
    label[comp[y >= 0]] = y[y >= 0]
    cl = constraints.cannot_link
    ends = np.concatenate([comp[cl], comp[cl[:, ::-1]]])  # (component, cannot-linked component)
    total = k * (k - 1) // 2
    while True:
        other = label[ends[:, 1]]
        open_ = (label[ends[:, 0]] < 0) & (other >= 0)
        pairs = np.unique(np.column_stack([ends[open_, 0], other[open_]]), axis=0)
        if pairs.shape[0] == 0:
            break
        comps, first, counts = np.unique(pairs[:, 0], return_index=True, return_counts=True)
        sums = np.add.reduceat(pairs[:, 1], first)
        last = counts == k - 1  # cannot-linked to every neighbourhood but one
        if not last.any():
            break
        label[comps[last]] = total - sums[last]
    return label[comp]


def fit_supervised(estimator: BaseEstimator, X: MatrixLike, supervision: Any = None) -> BaseEstimator:
    """Fit ``estimator`` (in place) on ``X`` with ``supervision``, a
    :class:`~hmrf.Constraints` or partial labels (``-1`` unlabelled), in the form it
    takes, by :func:`supervision_kind`:

    * ``"constraints"``: ``fit(X, constraints=c)``, or ``fit(X, y)`` for partial labels
      (turned into must-links within and cannot-links across classes by the estimator);
    * ``"labels"``: ``fit(X, y)``; constraints are first turned into seeds, one label per
      neighbourhood (:func:`neighborhoods_from_constraints`), plus, when there is one
      neighbourhood per cluster, the must-link components cannot-linked to all of them
      but one (they can only join that one); with no neighbourhood at all the estimator
      is fitted unsupervised;
    * ``"none"``: ``fit(X)``, whatever is given.
    """
    kind = supervision_kind(estimator)
    if supervision is None or kind == "none":
        return estimator.fit(X)
    if isinstance(supervision, Constraints):
        if kind == "constraints":
            return estimator.fit(X, constraints=supervision)
        y = _seeds(supervision, getattr(estimator, "n_clusters", None))
        return estimator.fit(X, y) if np.any(y >= 0) else estimator.fit(X)
    labels = np.asarray(supervision)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValueError("supervision must be a Constraints or a 1-D array of integer labels "
                         f"(-1 = unlabelled); got an array of shape {labels.shape}, dtype {labels.dtype}.")
    return estimator.fit(X, labels)
