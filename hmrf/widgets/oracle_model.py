"""The state behind the oracle widget, with no user interface: queries, answers, clusters."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._validation import check_data, check_n_clusters
from ..active.interactive import InteractiveSession
from ..active.oracles import BudgetExhausted
from ..constraints import Constraints
from .projection import project_2d
from .refit import Reclusterer

if TYPE_CHECKING:

    from numpy.typing import ArrayLike
    from sklearn.base import BaseEstimator

    from .._typing import MatrixLike
    from ..active.base import ActiveSelector
    from ..active.oracles import OracleLike

__all__ = ["OracleModel", "CurvePoint"]


class CurvePoint(NamedTuple):
    """The clustering after ``n_answers`` answers (one point of the learning curve).

    ``nmi`` and ``ari`` compare it with the true classes (``None`` when they are not
    known); ``seconds`` is the wall time of the fit (0 when the answer changed no
    constraint and nothing was refitted).
    """

    n_answers: int
    n_constraints: int
    n_violated: int
    nmi: float | None
    ari: float | None
    seconds: float


def _number_of_clusters(n_clusters, estimator, y, n):
    if n_clusters is None and estimator is not None:
        n_clusters = estimator.get_params().get("n_clusters")
    if n_clusters is None and y is not None:
        n_clusters = int(np.unique(y).size)
    if n_clusters is None:
        raise ValueError("n_clusters is needed: give n_clusters=, an estimator, or the true labels y.")
    return check_n_clusters(n_clusters, n)


class OracleModel:
    """A person answering an active learner's queries, and the clustering that follows.

    After every answer (a query answered, or a pair of the person's own) the clustering
    is re-fitted with all the constraints known and recorded.

    Parameters
    ----------
    y : array-like of shape (n_samples,), optional
        True classes, for the learning curve (and, without ``n_clusters`` and estimator,
        ``k`` from their number); never shown to the selector or the estimator.
    n_clusters : int, optional
        ``k``; by default the estimator's, else the number of classes in ``y``.
    selector : ActiveSelector, optional
        Chooses the queries (default ``ExploreConsolidate(n_clusters=k)``, Basu 2005, §5.3).
    estimator : hmrf estimator, optional
        The clustering shown (default ``HMRFKMeans(n_clusters=k)``, Basu 2005, ch. 4).
    budget : int, optional
        Maximum number of queries (own pairs do not count).
    projection : array-like of shape (n_samples, 2), optional
        Where to draw the points (default: :func:`~hmrf.widgets.project_2d`).
    warm_start : bool, default=True
        Re-fit from the previous centres, ``max_iter`` EM iterations
        (:class:`~hmrf.widgets.Reclusterer`).

    Attributes
    ----------
    session : InteractiveSession
    reclusterer : Reclusterer
    xy : ndarray of shape (n_samples, 2)
        Drawing coordinates.
    history, label_history : list
        One :class:`CurvePoint` and one labelling per answer, and one for the start.
    """

    def __init__(self, X: MatrixLike, y: ArrayLike | None = None, *, n_clusters: int | None = None,
                 selector: ActiveSelector | None = None, estimator: BaseEstimator | None = None,
                 budget: int | None = None, constraints: Constraints | None = None,
                 projection: ArrayLike | None = None, warm_start: bool = True, max_iter: int = 10,
                 random_state: int | None = None) -> None:
        from ..active import ExploreConsolidate
        from ..estimators import HMRFKMeans

        self.X = check_data(X)
        n = int(self.X.shape[0])
        if y is not None:
            y = np.asarray(y)
            if y.shape != (n,):
                raise ValueError(f"y must have one label per point, shape ({n},); got {y.shape}.")
            y = y.copy()
        self.y = y
        k = _number_of_clusters(n_clusters, estimator, y, n)
        self.n_clusters = k
        if selector is None:
            selector = ExploreConsolidate(n_clusters=k, random_state=random_state)
        if estimator is None:
            estimator = HMRFKMeans(n_clusters=k, random_state=random_state)
        self.xy = project_2d(self.X, projection)
        self.reclusterer = Reclusterer(estimator, self.X, warm_start=warm_start, max_iter=max_iter)
        self.session = InteractiveSession(selector, self.X, budget=budget, constraints=constraints)
        self.history: list[CurvePoint] = []
        self.label_history: list[np.ndarray] = []
        self._fitted_on = None
        self._refit()

    # ------------------------------------------------------------------ state
    @property
    def labels(self) -> np.ndarray:
        """Cluster of every point in the current clustering (names kept stable)."""
        return self.reclusterer.labels_

    @property
    def query(self) -> tuple[int, int] | None:
        """The pair the selector asks about next (``None``: it has stopped)."""
        return self.session.next_query()

    @property
    def constraints(self) -> Constraints:
        """All constraints known: answers, inferred must-links, own pairs, warm start."""
        return self.session.constraints

    @property
    def violated(self) -> np.ndarray:
        """Mask of the constraints (in ``constraints`` order) the clustering violates."""
        return self.constraints.violations(self.labels)

    @property
    def n_answers(self) -> int:
        """Answers so far: queries answered ("don't know" included) and own pairs."""
        return self.session.n_answers

    # -------------------------------------------------------------- actions
    def answer(self, value: bool | None) -> tuple[int, int] | None:
        """Answer the pending query (True, False or None), re-fit; return the next query."""
        nxt = self.session.answer(value)
        self._refit()
        return nxt

    def add_pair(self, i: int, j: int, kind: str | bool | int) -> tuple[int, int] | None:
        """Add a must-link (``"must"``) or cannot-link (``"cannot"``) of one's own, re-fit."""
        nxt = self.session.add_constraint(i, j, kind)
        self._refit()
        return nxt

    def play(self, oracle: OracleLike, n_answers: int | None = None) -> int:
        """Let ``oracle`` answer the queries, as a person would, one at a time.

        Stops after ``n_answers`` answers, when the selector stops, or when the
        oracle's budget is spent. Returns the number of answers given.
        """
        given = 0
        while self.query is not None and (n_answers is None or given < n_answers):
            try:
                reply = oracle.query(*self.query)
            except BudgetExhausted:
                break
            self.answer(reply)
            given += 1
        return given

    def close(self) -> None:
        """Stop the selector's thread (answers and the clustering stay)."""
        self.session.close()

    # ------------------------------------------------------------ internals
    def _refit(self) -> None:
        """Re-fit when the constraints changed; record the clustering either way."""
        from ..metrics import ari, nmi

        c = self.constraints
        seconds = 0.0
        if self._fitted_on is None or c != self._fitted_on:
            self.reclusterer.fit(c)
            self._fitted_on = c
            seconds = self.reclusterer.seconds_
        labels = self.labels
        truth = self.y is not None
        self.history.append(CurvePoint(
            self.n_answers, len(c), int(c.violations(labels).sum()),
            nmi(self.y, labels) if truth else None, ari(self.y, labels) if truth else None, seconds,
        ))
        self.label_history.append(labels.copy())

    def __repr__(self) -> str:
        return (f"OracleModel(n={self.X.shape[0]}, k={self.n_clusters}, answers={self.n_answers}, "
                f"constraints={len(self.constraints)}, query={self.query})")
