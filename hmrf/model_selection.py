"""Choosing ``w`` and ``k`` from the data: cross-validation over the constraints.

Each fold clusters every point with the training pairs and scores the clustering on the
held-out pairs (Pourrajabi et al. 2014); held-out pairs the training pairs imply by
transitive closure are dropped. The *samples are the pairs* (:func:`pair_samples`), so
the pieces plug into scikit-learn's ``GridSearchCV`` unchanged::

    search = GridSearchCV(PairwiseClusterer(HMRFKMeans(3), X), {"estimator__w": [0.1, 1, 10]},
                          cv=ConstraintKFold(5, random_state=0), scoring=held_out_pairwise_f)
    search.fit(pair_samples(constraints))

References
----------
Pourrajabi, Moulavi, Campello, Zimek, Sander & Goebel (2014), "Model selection for
semi-supervised clustering", EDBT. Schwarz (1978), "Estimating the dimension of a
model", Annals of Statistics (BIC).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, clone
from sklearn.utils.validation import check_is_fitted

from ._validation import check_random_state
from .constraints import CANNOT_LINK, MUST_LINK, Constraints

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any, Literal

    from numpy.typing import ArrayLike
    from typing_extensions import Self

    from ._typing import MatrixLike, PairsLike, RandomLike

__all__ = ["pair_samples", "ConstraintKFold", "PairwiseClusterer", "held_out_pairwise_f",
           "held_out_accuracy", "choose_w", "choose_k", "bic_k", "Selection"]

#: ``choose_w``'s default grid, in units of the weight ``w="auto"`` stands for.
W_FACTORS = (0.0, 1 / 16, 1 / 4, 1.0, 4.0, 16.0)
SCORINGS = ("pairwise_f", "accuracy")


# ------------------------------------------------------------------- samples
def pair_samples(constraints: Constraints) -> np.ndarray:
    """The pairs of ``constraints`` as samples for scikit-learn: an ``(m, 4)`` float array
    of rows ``(i, j, kind, weight)`` (kind ``+1`` must-link, ``-1`` cannot-link; weight
    ``inf`` for a hard pair).

    Examples
    --------
    >>> from hmrf.model_selection import pair_samples
    >>> from hmrf import Constraints
    >>> pair_samples(Constraints.from_pairs([(0, 1)], [(1, 2)], n=3)).tolist()
    [[0.0, 1.0, 1.0, 1.0], [1.0, 2.0, -1.0, 1.0]]
    """
    if not isinstance(constraints, Constraints):
        raise TypeError(f"constraints must be an hmrf.Constraints; got {type(constraints).__name__}.")
    return np.column_stack([constraints.pairs.astype(np.float64), constraints.kind.astype(np.float64),
                            constraints.weight.astype(np.float64)]) if len(constraints) else np.empty((0, 4))


def _as_constraints(pairs, n: int) -> Constraints:
    P = np.asarray(pairs, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] not in (3, 4):
        raise ValueError("pairs must be an (m, 3) or (m, 4) array of rows (i, j, kind[, weight]) "
                         f"(see pair_samples); got shape {P.shape}.")
    idx = P[:, :2]
    if P.shape[0] and (not np.all(np.isfinite(idx)) or np.any(idx != np.round(idx))):
        raise ValueError("the first two columns of pairs must be point indices (integers).")
    weight = P[:, 3] if P.shape[1] == 4 else 1.0
    return Constraints(n, idx.astype(np.int64), P[:, 2].astype(np.int64), weight)


def _implied(train: Constraints, test_pairs: np.ndarray) -> np.ndarray:
    """Mask of the test pairs that the transitive closure of ``train`` decides: both points
    in one must-link component, or in two components joined by a cannot-link."""
    comp = train.component_labels()
    a, b = comp[test_pairs[:, 0]], comp[test_pairs[:, 1]]
    cl = np.sort(comp[train.cannot_link], axis=1)
    n = max(train.n, 1)
    return (a == b) | np.isin(np.minimum(a, b) * n + np.maximum(a, b), cl[:, 0] * n + cl[:, 1])


class ConstraintKFold:
    """K-fold cross-validation over constraint pairs, stratified by kind; the test folds
    lose the pairs the training folds imply by transitive closure.

    Parameters
    ----------
    n_splits : int, default=5
    shuffle : bool, default=True
    random_state : int, Generator or None, default=None
    exclude_implied : bool, default=True
        Drop implied pairs from the test folds.

    Examples
    --------
    >>> from hmrf.model_selection import ConstraintKFold, pair_samples
    >>> import numpy as np
    >>> from hmrf import Constraints
    >>> c = Constraints.sample_from_labels(np.repeat([0, 1, 2], 20), 60, rng=0)
    >>> folds = list(ConstraintKFold(3, random_state=0).split(pair_samples(c)))
    >>> len(folds), all(len(set(tr) & set(te)) == 0 for tr, te in folds)
    (3, True)
    """

    def __init__(self, n_splits: int = 5, *, shuffle: bool = True, random_state: RandomLike = None,
                 exclude_implied: bool = True) -> None:
        self.n_splits = n_splits
        self.shuffle = shuffle
        self.random_state = random_state
        self.exclude_implied = exclude_implied

    def get_n_splits(self, X: MatrixLike | None = None, y: ArrayLike | None = None,
                     groups: ArrayLike | None = None) -> int:
        """The number of folds."""
        return int(self.n_splits)

    def split(self, X: MatrixLike, y: ArrayLike | None = None,
              groups: ArrayLike | None = None) -> Iterator[Any]:
        """Yield ``(train, test)`` row indices of the pairs ``X`` (a :func:`pair_samples`
        array or a :class:`~hmrf.Constraints`).

        Raises
        ------
        ValueError
            ``n_splits < 2`` or fewer pairs than folds.
        """
        P = pair_samples(X) if isinstance(X, Constraints) else np.asarray(X, dtype=np.float64)
        k = int(self.n_splits)
        if k < 2:
            raise ValueError(f"n_splits must be >= 2; got {self.n_splits}.")
        m = P.shape[0]
        if m < k:
            raise ValueError(f"{m} pairs cannot be split into n_splits={k} folds.")
        kind = P[:, 2].astype(np.int64)
        rng = check_random_state(self.random_state) if self.shuffle else None
        fold = np.empty(m, dtype=np.int64)
        dealt = 0
        for value in (MUST_LINK, CANNOT_LINK):  # stratified: each kind dealt round-robin
            rows = np.flatnonzero(kind == value)
            if rng is not None:
                rows = rows[rng.permutation(rows.size)]
            fold[rows] = (dealt + np.arange(rows.size)) % k
            dealt += rows.size
        n = int(P[:, :2].max()) + 1 if m else 0
        for f in range(k):
            train, test = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
            if self.exclude_implied and test.size:
                tr = _as_constraints(P[train], n)
                test = test[~_implied(tr, P[test, :2].astype(np.int64))]
            yield train, test

    def __repr__(self) -> str:
        return (f"ConstraintKFold(n_splits={self.n_splits}, shuffle={self.shuffle}, "
                f"random_state={self.random_state!r}, exclude_implied={self.exclude_implied})")


# ----------------------------------------------------------------- estimator
class _Shared:
    """A value that scikit-learn's ``clone`` (``copy.deepcopy``) does not copy: the
    points a :class:`PairwiseClusterer` clusters, shared by every fold's clone."""

    def __init__(self, value):
        self.value = value

    def __deepcopy__(self, memo):
        return self

    def __repr__(self) -> str:
        shape = getattr(self.value, "shape", None)
        return f"<points {shape}>" if shape is not None else "<points>"


class PairwiseClusterer(ClusterMixin, BaseEstimator):
    """A clustering estimator whose samples are constraint pairs on fixed points ``X``.

    ``fit(pairs)`` fits a clone of ``estimator`` on all of ``X`` with the pairs as its
    constraints; :meth:`score` scores the clustering on other pairs. Parameters of the
    inner estimator are searched as ``estimator__<name>``.

    Parameters
    ----------
    estimator : estimator
        A clustering estimator taking ``fit(X, constraints=...)`` (any of hmrf's
        pairwise estimators).
    X : array-like or sparse matrix (n, d)
        The points; shared by clones, never copied.
    scoring : {"pairwise_f", "accuracy"}, default="pairwise_f"
        What :meth:`score` reports (:func:`held_out_pairwise_f` or
        :func:`held_out_accuracy`).

    Attributes
    ----------
    estimator_, labels_, constraints_
        The fitted clone, its labels of all the points, the pairs it was fitted with.
    """

    def __init__(self, estimator: BaseEstimator, X: MatrixLike, *,
                 scoring: Literal["pairwise_f", "accuracy"] = "pairwise_f") -> None:
        self.estimator = estimator
        self.X = X if isinstance(X, _Shared) else _Shared(X)
        self.scoring = scoring

    def _points(self):
        return self.X.value if isinstance(self.X, _Shared) else self.X

    def fit(self, pairs: PairsLike, y: ArrayLike | None = None) -> Self:
        """Cluster all of ``X`` under ``pairs`` ((m, 3) or (m, 4) rows ``(i, j, kind[,
        weight])``, or a :class:`~hmrf.Constraints`)."""
        if self.scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {SCORINGS}; got {self.scoring!r}.")
        X = self._points()
        n = X.shape[0]
        c = pairs if isinstance(pairs, Constraints) else _as_constraints(pairs, n)
        if c.n != n:
            raise ValueError(f"the pairs refer to {c.n} points but X has {n}.")
        self.estimator_ = clone(self.estimator).fit(X, constraints=c)
        self.labels_ = np.asarray(self.estimator_.labels_)
        self.constraints_ = c
        return self

    def score(self, pairs: PairsLike, y: ArrayLike | None = None) -> float:
        """The fitted clustering scored on ``pairs`` (``scoring``)."""
        return (held_out_pairwise_f if self.scoring == "pairwise_f" else held_out_accuracy)(self, pairs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = False
        return tags


def _held_out(estimator, pairs):
    check_is_fitted(estimator, "labels_")
    labels = np.asarray(estimator.labels_)
    P = pair_samples(pairs) if isinstance(pairs, Constraints) else np.asarray(pairs, dtype=np.float64)
    i, j = P[:, 0].astype(np.int64), P[:, 1].astype(np.int64)
    return labels[i] == labels[j], P[:, 2] == MUST_LINK


def held_out_pairwise_f(estimator: BaseEstimator, pairs: PairsLike, y: ArrayLike | None = None) -> float:
    """Pairwise F-measure ``2 P R / (P + R)`` of a fitted clustering (``labels_`` of all
    points, a :class:`PairwiseClusterer`) on held-out pairs, must-links the positives
    (Basu 2005, eq. 2.5, on the given pairs only); a ``GridSearchCV`` scorer. Precision
    and recall are 1 when there is nothing to count."""
    same, must = _held_out(estimator, pairs)
    tp = float(np.count_nonzero(same & must))
    precision = tp / same.sum() if same.any() else 1.0
    recall = tp / must.sum() if must.any() else 1.0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def held_out_accuracy(estimator: BaseEstimator, pairs: PairsLike, y: ArrayLike | None = None) -> float:
    """Share of held-out pairs a fitted clustering keeps (must-links together, cannot-links
    apart). A scorer for ``GridSearchCV``; 1.0 when there are no pairs."""
    same, must = _held_out(estimator, pairs)
    return float(np.mean(same == must)) if same.size else 1.0


# ------------------------------------------------------------------- helpers
@dataclass
class Selection:
    """Outcome of :func:`choose_w`, :func:`choose_k` or :func:`bic_k`.

    ``best`` is the chosen value among ``values``; ``scores`` the mean held-out score of
    each (higher is better) or the BIC (lower is better), ``std`` its deviation over the
    folds; ``search`` the :class:`~sklearn.model_selection.GridSearchCV` (``None`` for
    the BIC).
    """

    best: object
    values: np.ndarray
    scores: np.ndarray
    std: np.ndarray = field(default_factory=lambda: np.zeros(0))
    criterion: str = ""
    search: object = None


def _search(estimator, X, constraints, param, values, cv, scoring, random_state, n_jobs):
    from sklearn.model_selection import GridSearchCV

    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}; got {scoring!r}.")
    splitter = cv if hasattr(cv, "split") else ConstraintKFold(int(cv), random_state=random_state)
    scorer = held_out_pairwise_f if scoring == "pairwise_f" else held_out_accuracy
    search = GridSearchCV(PairwiseClusterer(estimator, X, scoring=scoring),
                          {f"estimator__{param}": list(values)}, cv=splitter, scoring=scorer,
                          n_jobs=n_jobs, refit=False, error_score="raise")
    search.fit(pair_samples(constraints))
    scores = np.asarray(search.cv_results_["mean_test_score"], dtype=np.float64)
    std = np.asarray(search.cv_results_["std_test_score"], dtype=np.float64)
    best = values[int(np.argmax(scores))]  # the first best: the smallest w / k on ties
    return Selection(best, np.asarray(values), scores, std, f"held-out {scoring}", search)


def choose_w(estimator: BaseEstimator, X: MatrixLike, constraints: Constraints,
             ws: Sequence[float] | None = None, *, cv: int = 5,
             scoring: Literal["pairwise_f", "accuracy"] = "pairwise_f", random_state: int | None = None,
             n_jobs: int | None = None) -> Selection:
    """The constraint weight ``w`` with the best held-out score, by cross-validation over
    the pairs (:class:`ConstraintKFold`, :class:`PairwiseClusterer`, ``GridSearchCV``).

    Parameters
    ----------
    ws : sequence of float, optional
        Weights to try; default ``W_FACTORS`` (0 to 16) times the weight the estimator's
        ``w="auto"`` stands for on ``X`` and ``constraints``: :meth:`hmrf.HMRF.auto_w`
        under its emission; 1 for MPCKMeans' distance-scaled penalties; MKMeans' own rule.
    cv : int or splitter, default=5
        Folds of :class:`ConstraintKFold`, or a splitter over the pairs.
    random_state : int, optional
        Shuffles the folds (the estimator keeps its own ``random_state``).

    Returns
    -------
    Selection
        ``best`` is the chosen weight (the first of equal scores in the order of ``ws``:
        the smallest for the default grid).
    """
    if ws is None:
        ws = [f * _auto_w(estimator, X, constraints) for f in W_FACTORS]
    return _search(estimator, X, constraints, "w", [float(w) for w in ws], cv, scoring, random_state, n_jobs)


def _auto_w(estimator, X, constraints) -> float:
    """The weight ``w="auto"`` stands for: MKMeans' rule on the constraints it uses (after
    its closure), 1 for MPCKMeans' distance-scaled penalties, else the model's
    (:meth:`hmrf.HMRF.auto_w`)."""
    from .estimators.supervision import emission_of
    from .model import HMRF

    if hasattr(estimator, "_metric_w"):
        used = constraints.closure() if getattr(estimator, "closure", False) else constraints
        return clone(estimator).set_params(w="auto")._metric_w(X.shape[0], len(used))
    if hasattr(estimator, "_distance_w") and getattr(estimator, "penalty", "distance") != "constant":
        return 1.0
    return HMRF(X, 1, emission=emission_of(estimator, X), constraints=constraints, w="auto").w


def choose_k(estimator: BaseEstimator, X: MatrixLike, constraints: Constraints, ks: Sequence[int], *,
             cv: int = 5, scoring: str = "pairwise_f", random_state: RandomLike = None,
             n_jobs: int | None = None) -> Selection:
    """The number of clusters with the best held-out score, by cross-validation over the
    pairs (as :func:`choose_w`, searching ``n_clusters`` over ``ks``; the first of equal
    scores in the order of ``ks``)."""
    ks = [int(k) for k in ks]
    return _search(estimator, X, constraints, "n_clusters", ks, cv, scoring, random_state, n_jobs)


def _n_parameters(family, k: int, d: int) -> int:
    """Free parameters of a mixture of ``k`` clusters of ``family`` with one scale each and
    mixing weights: isotropic Gaussian ``k d + k + (k - 1)``; von Mises-Fisher (means on
    the unit sphere) ``k (d - 1) + k + (k - 1)``."""
    name = getattr(family, "name", "")
    if name == "sqeuclidean":
        return k * d + k + (k - 1)
    if name in ("cosine", "vmf"):
        return k * (d - 1) + k + (k - 1)
    raise ValueError(f"bic_k needs a family with a normalised density (sqeuclidean or cosine); got {name!r}.")


def bic_k(X: MatrixLike, ks: Sequence[int], constraints: Constraints | None = None, *,
          emission: Literal["sqeuclidean", "cosine"] = "sqeuclidean", estimator: BaseEstimator | None = None,
          random_state: int | None = None) -> Selection:
    """The number of clusters with the lowest Bayesian information criterion,

        BIC(k) = -2 Σ_i log p(x_i | Θ_k) + p_k log n,

    after a soft fit with a normalised density (``HMRFKMeans(k, em="soft",
    normalizer="closed_form")``, an isotropic Gaussian or von Mises-Fisher mixture);
    ``p_k`` counts its free parameters (means, one scale per cluster, mixing weights).

    ``estimator``, optional, is an unfitted estimator to use instead, fitted with each
    ``n_clusters``; it must give a normalised density (``em="soft"`` and
    ``normalizer="closed_form"``, else a ``ValueError``). ``scores`` of
    the :class:`Selection` hold the BIC of every ``k`` (Schwarz 1978; Basu 2005, §4.3.4).
    """
    from .emissions import get_emission
    from .estimators import HMRFKMeans

    base = estimator if estimator is not None else HMRFKMeans(
        emission=emission, em="soft", normalizer="closed_form", random_state=random_state)
    given = base.get_params(deep=False)
    setting = getattr(base, "_setting", given.get)  # an hmrf estimator's settings include fixed ones
    em, normalizer = setting("em"), setting("normalizer")
    if (em, normalizer) != ("soft", "closed_form") and not (em is None and normalizer is None):
        raise ValueError("bic_k needs the likelihood of a normalised density: an estimator with "
                         f"em='soft' and normalizer='closed_form'; {type(base).__name__} has "
                         f"em={em!r}, normalizer={normalizer!r}.")
    n, d = X.shape
    ks = [int(k) for k in ks]
    bic = []
    for k in ks:
        est = clone(base).set_params(n_clusters=k)
        est.fit(X, constraints=constraints) if constraints is not None else est.fit(X)
        loglik = float(np.sum(est.score_samples(X)))
        used = getattr(est, "emission_", None) or est.get_params().get("emission", emission)
        family = get_emission(used, X)
        bic.append(-2.0 * loglik + _n_parameters(family, k, d) * np.log(n))
    bic = np.asarray(bic)
    return Selection(ks[int(np.argmin(bic))], np.asarray(ks), bic, np.zeros(len(ks)), "BIC")
