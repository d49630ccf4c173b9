"""Clustering evaluation: NMI, ARI, pairwise F-measure and the HMRF objective, from
scikit-learn's scores and pair counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.metrics.cluster import pair_confusion_matrix

if TYPE_CHECKING:
    from collections.abc import Collection

    from numpy.typing import ArrayLike

    from ._typing import MatrixLike
    from .constraints import Constraints
    from .emissions.base import EmissionFamily

__all__ = ["nmi", "ari", "pairwise_precision_recall_f", "pairwise_f_measure", "objective", "evaluate"]


def _check_pair(y_true, y_pred):
    a, b = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    if a.shape != b.shape:
        raise ValueError(f"y_true and y_pred have different lengths ({a.shape[0]} and {b.shape[0]}).")
    return a, b


def nmi(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Normalised mutual information ``I(C; K) / ((H(C) + H(K)) / 2)`` (Basu 2005, eq. 2.4).

    Strehl & Ghosh's arithmetic normalisation, as scikit-learn's
    ``normalized_mutual_info_score(average_method="arithmetic")``.
    """
    a, b = _check_pair(y_true, y_pred)
    return float(normalized_mutual_info_score(a, b, average_method="arithmetic"))


def ari(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985), from scikit-learn."""
    a, b = _check_pair(y_true, y_pred)
    return float(adjusted_rand_score(a, b))


def pairwise_precision_recall_f(y_true: ArrayLike, y_pred: ArrayLike) -> tuple[float, float, float]:
    """Pairwise precision, recall and F-measure (Basu 2005, eq. 2.5).

    Precision = same-class pairs among same-cluster pairs; recall = same-cluster pairs
    among same-class pairs (:func:`sklearn.metrics.cluster.pair_confusion_matrix`). A
    quantity with an empty denominator is 1 (no pair to get wrong).

    Examples
    --------
    >>> from hmrf.metrics import pairwise_precision_recall_f
    >>> pairwise_precision_recall_f([0, 0, 1, 1], [0, 0, 0, 1])
    (0.3333333333333333, 0.5, 0.4)
    """
    a, b = _check_pair(y_true, y_pred)
    if a.size == 0:
        return 1.0, 1.0, 1.0
    C = pair_confusion_matrix(a, b)  # ordered pairs: [[both apart, FP], [FN, TP]]
    tp, pred, true = float(C[1, 1]), float(C[1, 1] + C[0, 1]), float(C[1, 1] + C[1, 0])
    precision = tp / pred if pred > 0 else 1.0
    recall = tp / true if true > 0 else 1.0
    f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f


def pairwise_f_measure(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Pairwise F-measure (Basu 2005, eq. 2.5); see :func:`pairwise_precision_recall_f`."""
    return pairwise_precision_recall_f(y_true, y_pred)[2]


def objective(X: MatrixLike, labels: ArrayLike, centers: ArrayLike, constraints: Constraints | None = None,
              emission: str | EmissionFamily = "sqeuclidean", w: float = 1.0) -> float:
    """HMRF-KMeans objective (Basu 2005, eq. 4.10) of a labelling and centres:
    ``Σ_i D(x_i, μ_{y_i}) + w Σ_{violated} w_ij`` with the family's divergence
    (squared Euclidean: ``||x - μ||²``, no ½)."""
    from .emissions import EmissionParams
    from .model import HMRF

    centers = np.asarray(centers, dtype=np.float64)
    model = HMRF(X, centers.shape[0], emission=emission, constraints=constraints, w=w)
    return model.energy(np.asarray(labels), EmissionParams(centers))


def evaluate(y_true: ArrayLike, y_pred: ArrayLike, mask: ArrayLike | None = None,
             scores: Collection[str] | None = None) -> dict:
    """NMI, ARI and pairwise precision/recall/F on the points where ``mask`` is true;
    with ``scores``, only those of them named there (other names are ignored)."""
    a, b = _check_pair(y_true, y_pred)
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        a, b = a[m], b[m]
    wanted = _EVALUATED if scores is None else set(scores)
    out = {}
    if "nmi" in wanted:
        out["nmi"] = nmi(a, b)
    if "ari" in wanted:
        out["ari"] = ari(a, b)
    if wanted & {"pairwise_precision", "pairwise_recall", "pairwise_f"}:
        p, r, f = pairwise_precision_recall_f(a, b)
        out.update(pairwise_precision=p, pairwise_recall=r, pairwise_f=f)
    return out


_EVALUATED = {"nmi", "ari", "pairwise_precision", "pairwise_recall", "pairwise_f"}
