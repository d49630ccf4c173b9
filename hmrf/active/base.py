"""Shared machinery of the query selectors: neighbourhoods, the query log, warm starts.

Selectors grow *neighbourhoods* — groups of points known to share a class, different
groups known to differ (Basu 2005, §5.2; Xiong, Azimi & Fern 2014, Definition 1). The
constraints produced are the answered pairs plus the must-links CONSOLIDATE infers
(thesis §5.3), not closed under transitivity (``constraints_.closure()`` is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from .._validation import Options, check_data, check_random_state
from ..constraints import CANNOT_LINK, MUST_LINK, Constraints, check_constraints
from ..emissions import Mahalanobis, get_emission
from ..estimators.base import HMRFClusterMixin
from ..estimators.supervision import emission_of, fit_supervised, neighborhoods_from_constraints
from .oracles import BudgetExhausted, Query, check_answer

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import ArrayLike, NDArray
    from typing_extensions import Self

    from .._typing import MatrixLike
    from ..emissions.base import EmissionFamily
    from .oracles import Oracle, OracleLike

__all__ = ["ActiveSelector", "neighborhoods_from_constraints", "fit_clusterer", "takes_centres",
           "resolve_emission"]


def resolve_emission(emission: str | EmissionFamily | None = None,
                     clusterer: BaseEstimator | None = None, X: MatrixLike | None = None) -> EmissionFamily:
    """The emission family distances are measured with: ``emission`` if given, else the
    fixed family of ``clusterer``, else squared Euclidean (``"auto"``: chosen from ``X``)."""
    if emission is None and clusterer is not None:
        emission = clusterer_emission(clusterer)
    return get_emission("sqeuclidean" if emission is None else emission, X)


def clusterer_emission(clusterer):
    """The ``emission`` of an hmrf estimator, or the family it fixes; None for a learned
    metric (MPCKMeans) or a foreign estimator."""
    emission = getattr(clusterer, "emission", None)
    if emission is not None or not isinstance(clusterer, HMRFClusterMixin):
        return emission
    family = emission_of(clusterer)
    return None if isinstance(family, Mahalanobis) else family


def fit_clusterer(estimator: BaseEstimator, X: MatrixLike, constraints: Constraints) -> NDArray[Any]:
    """Fit an estimator with ``constraints`` in the form it accepts
    (:func:`hmrf.estimators.fit_supervised`); return its labels."""
    fit_supervised(estimator, X, constraints)
    return np.asarray(estimator.labels_)


def takes_centres(estimator: BaseEstimator) -> bool:
    """Whether ``estimator`` can start from an array of centres (a warm re-fit): it has an
    ``init`` parameter whose rule is not a list of named options only.

    True for the k-means-type estimators of :mod:`hmrf` that take ``init=`` centres and
    for scikit-learn's ``KMeans``; False for ``SeededKMeans`` and ``ConstrainedKMeans``
    (their starts are the seeds), ``NaiveBayesEM`` and ``HAC``.

    Examples
    --------
    >>> from hmrf import HMRFKMeans, SeededKMeans
    >>> from hmrf.active import takes_centres
    >>> takes_centres(HMRFKMeans(3)), takes_centres(SeededKMeans(3))
    (True, False)
    """
    if "init" not in estimator.get_params(deep=False):
        return False
    rule = getattr(type(estimator), "_parameter_constraints", {}).get("init")
    return rule is None or any(not isinstance(r, Options) for r in rule)


class _Stop(Exception):
    """Selection ends (``args[0]``: why): the budget is spent or no useful query is left."""


class _State:
    """Working state of one ``fit``: neighbourhoods, answers, the log, the budget."""

    def __init__(self, X, Xp, family, oracle, rng, warm: Constraints, hoods, asked):
        self.X, self.Xp, self.family, self.oracle, self.rng = X, Xp, family, oracle, rng
        self.n = int(Xp.shape[0])
        self.phi = family.data_terms(Xp)  # per-point terms of the divergence, computed once
        self.warm = warm
        self.hoods: list[list[int]] = [list(map(int, h)) for h in hoods]
        self.done = np.zeros(self.n, dtype=bool)  # in a neighbourhood, or given up on
        for h in self.hoods:
            self.done[h] = True
        self.asked = asked  # set of (i, j), i < j: never asked again
        # what the warm-start constraints already say, by must-link component
        self.warm_comp = np.asarray(warm.component_labels())
        cl = self.warm_comp[warm.cannot_link]
        self.warm_cl = {(int(min(a, b)), int(max(a, b))) for a, b in cl.tolist()}
        self.queries: list[Query] = []
        self.subjects: list[int] = []  # the point each query was placing (-1: none)
        self.answers: list[tuple[int, int, int, int]] = []  # i, j, kind, query ordinal (1-based)
        self.inferred: list[tuple[int, int, int]] = []  # i, j, number of queries before

    # ------------------------------------------------------------------ queries
    def ask(self, i: int, j: int, subject: int = -1) -> bool | None:
        """Ask the oracle (never the same pair twice); raise _Stop when it will not answer.

        ``subject`` is the point being placed (-1 if the query is about a pair).
        """
        a, b = (int(i), int(j)) if i < j else (int(j), int(i))
        if (a, b) in self.asked:
            raise RuntimeError(f"internal error: pair ({a}, {b}) would be asked twice.")
        if not self.budget_left():
            raise _Stop("budget spent")
        try:
            answer = self.oracle.query(a, b)
        except BudgetExhausted as exc:
            raise _Stop(str(exc) or "budget spent") from None
        answer = check_answer(answer, f"the oracle answered ({a}, {b}) with")
        self.asked.add((a, b))
        self.queries.append(Query(a, b, answer))
        self.subjects.append(int(subject))
        if answer is not None:
            self.answers.append((a, b, MUST_LINK if answer else CANNOT_LINK, len(self.queries)))
        return answer

    def budget_left(self) -> bool:
        remaining = getattr(self.oracle, "remaining", None)
        return remaining is None or remaining > 0

    def free_points(self) -> np.ndarray:
        """Points in no neighbourhood yet; raise _Stop when the budget or the points run out."""
        if not self.budget_left():
            raise _Stop("budget spent")
        free = np.flatnonzero(~self.done)
        if free.size == 0:
            raise _Stop("every point is placed")
        return free

    # ------------------------------------------------------------- geometry
    def point_centers(self, idx) -> np.ndarray:
        """Data points as cluster representatives of the family (e.g. smoothed for KL)."""
        rows = self.Xp[idx]
        rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows, dtype=np.float64)
        return np.asarray(self.family.init_params(self.Xp, rows).centers)

    def _data(self, rows):
        return None if self.phi is None else (self.phi if rows is None else self.phi[rows])

    def divergence_to_points(self, rows, idx) -> np.ndarray:
        """``D(x_r, x_j)`` for rows ``rows`` (or all points if None) and points ``idx``."""
        Xr = self.Xp if rows is None else self.Xp[rows]
        return self.family.divergence(Xr, self.point_centers(idx), data=self._data(rows))

    def centroids(self) -> np.ndarray:
        """Family centroid (M-step) of every neighbourhood, shape (l, d)."""
        members = np.concatenate([np.asarray(h) for h in self.hoods])
        which = np.repeat(np.arange(len(self.hoods)), [len(h) for h in self.hoods])
        return np.asarray(self.family.m_step(self.Xp[members], which).centers)

    def order_by_centroid(self, x: int) -> np.ndarray:
        """Neighbourhoods by increasing divergence of ``x`` to their centroids (§5.3)."""
        d = self.family.divergence(self.Xp[[x]], self.centroids(), data=self._data([x]))[0]
        return np.argsort(d, kind="stable")

    def known(self, x: int, h: int) -> int:
        """+1 / -1 if the warm-start constraints imply ``x``'s relation to ``h``, else 0."""
        if len(self.warm) == 0:
            return 0
        cx = int(self.warm_comp[x])
        comps = {int(c) for c in self.warm_comp[self.hoods[h]].tolist()}
        if cx in comps:
            return MUST_LINK
        if any((min(cx, c), max(cx, c)) in self.warm_cl for c in comps):
            return CANNOT_LINK
        return 0

    def nearest_member(self, x: int, h: int):
        """The member of neighbourhood ``h`` closest to ``x`` not yet asked with ``x``."""
        members = np.asarray(self.hoods[h])
        ok = np.array([(min(x, m), max(x, m)) not in self.asked for m in members.tolist()])
        if not ok.any():
            return None
        members = members[ok]
        d = self.divergence_to_points([x], members)[0]
        return int(members[int(np.argmin(d))])

    # -------------------------------------------------------- neighbourhoods
    def join(self, x: int, h: int) -> None:
        self.hoods[h].append(int(x))
        self.done[x] = True

    def new_hood(self, x: int) -> None:
        self.hoods.append([int(x)])
        self.done[x] = True

    def resolve(self, x: int, order, *, infer_last: bool = False) -> str:
        """Query ``x`` against the neighbourhoods in ``order`` until it is placed.

        Stops at the first must-link ("joined"). Cannot-linked to all: a new
        neighbourhood ("new"). With ``infer_last`` and ``x`` cannot-linked to all
        neighbourhoods but the last, that one is inferred without a query
        ("inferred", thesis §5.3). A "don't know" leaves its neighbourhood open; if no
        must-link is found, ``x`` is set aside and never selected again ("skipped").
        """
        n_hoods = len(self.hoods)
        n_cl, unknown = 0, False
        for h in (int(v) for v in order):
            known = self.known(x, h)
            if known == MUST_LINK:  # already implied by the warm start: no query
                self.join(x, h)
                return "joined"
            if known == CANNOT_LINK:
                n_cl += 1
                continue
            if infer_last and not unknown and n_hoods > 1 and n_cl == n_hoods - 1:
                m = self.nearest_member(x, h)
                if m is not None:
                    self.inferred.append((min(x, m), max(x, m), len(self.queries)))
                    self.join(x, h)
                    return "inferred"
            m = self.nearest_member(x, h)
            if m is None:
                unknown = True
                continue
            answer = self.ask(x, m, subject=x)
            if answer is True:
                self.join(x, h)
                return "joined"
            if answer is False:
                n_cl += 1
            else:
                unknown = True
        if n_cl == n_hoods:
            self.new_hood(x)
            return "new"
        self.done[x] = True
        return "skipped"

    def seed(self) -> int:
        """Start the first neighbourhood with a random point (Fig. 5.1 step 2; Alg. 1 line 1)."""
        if self.done.all():
            raise _Stop("every point is placed")
        x = int(self.rng.choice(np.flatnonzero(~self.done)))
        self.new_hood(x)
        return x

    # ---------------------------------------------------------------- output
    def constraints_at(self, n_queries=None) -> Constraints:
        t = len(self.queries) if n_queries is None else int(n_queries)
        ans = [(i, j, k) for i, j, k, q in self.answers if q <= t]
        ans += [(i, j, MUST_LINK) for i, j, q in self.inferred if q <= t]
        if not ans:
            return self.warm
        arr = np.asarray(ans, dtype=np.int64)
        new = Constraints(self.n, arr[:, :2], arr[:, 2])
        return self.warm + new if len(self.warm) else new


class _Closure:
    """The transitive closure of the answers and the warm start, updated per answer: a
    must-link component per point and the cannot-linked component pairs."""

    def __init__(self, state: _State):
        self.n = state.n
        self.comp = np.asarray(state.warm.component_labels()).copy()
        cl = state.warm.cannot_link
        a, b = self.comp[cl[:, 0]], self.comp[cl[:, 1]]
        pairs = zip(a.tolist(), b.tolist(), strict=True)
        self.cl = {(int(min(u, v)), int(max(u, v))) for u, v in pairs if u != v}
        self.asked = state.asked
        self._refresh()

    def _refresh(self):
        n = self.n
        self.cl_keys = np.fromiter((u * n + v for u, v in self.cl), dtype=np.int64, count=len(self.cl))
        self.asked_keys = np.fromiter(
            (i * n + j for i, j in self.asked), dtype=np.int64, count=len(self.asked)
        )

    def valid(self, lo, hi) -> np.ndarray:
        """Mask of pairs ``lo < hi`` neither asked nor implied by the closure."""
        n = self.n
        ca, cb = self.comp[lo], self.comp[hi]
        u, v = np.minimum(ca, cb), np.maximum(ca, cb)
        return (ca != cb) & ~np.isin(u * n + v, self.cl_keys) & ~np.isin(lo * n + hi, self.asked_keys)

    def implied(self, i: int, j: int) -> bool | None:
        """What the answers so far imply for the pair: True (same must-link component),
        False (components joined by a cannot-link), None (nothing)."""
        ci, cj = int(self.comp[i]), int(self.comp[j])
        if ci == cj:
            return True
        return False if (min(ci, cj), max(ci, cj)) in self.cl else None

    def update(self, i, j, answer):
        ci, cj = int(self.comp[i]), int(self.comp[j])
        if answer is True:
            self.comp[self.comp == cj] = ci  # merge component cj into ci
            renamed = (tuple(ci if c == cj else c for c in p) for p in self.cl)
            self.cl = {(min(p), max(p)) for p in renamed}
        elif answer is False:
            self.cl.add((min(ci, cj), max(ci, cj)))
        self._refresh()


class ActiveSelector(BaseEstimator):
    """Base class of the query selectors: subclasses implement ``_select(state)``.
    Selection ends when the budget is spent, the oracle stops answering, or the method
    has nothing left to ask (``stop_reason_``).

    Attributes
    ----------
    constraints_ : Constraints
        Warm-start constraints plus every answered pair (and inferred must-links).
    queries_ : list of Query
    inferred_ : list of (i, j, t)
        Must-links inferred without a query, after the ``t``-th query.
    neighborhoods_ : list of ndarray
        The neighbourhoods at the end (sorted member indices).
    query_subjects_ : ndarray of shape (n_queries,)
        The point each query was placing, -1 for a query about a pair (the cost in
        queries per point is ``np.bincount(q[q >= 0])`` for ``q = query_subjects_``).
    n_queries_, stop_reason_
    """

    def _family(self, X=None):
        return resolve_emission(getattr(self, "emission", None), getattr(self, "clusterer", None), X)

    def fit(self, X: MatrixLike, oracle: Oracle | OracleLike, *, constraints: Constraints | None = None,
            neighborhoods: Sequence[ArrayLike] | None = None) -> Self:
        """Select queries, ask ``oracle`` (its ``remaining`` budget bounds the queries)
        and record the constraints.

        Parameters
        ----------
        constraints : Constraints, optional
            Supervision already available (warm start): its pairs are never asked again
            and its neighbourhoods (:func:`neighborhoods_from_constraints`) are grown.
        neighborhoods : list of array-like of int, optional
            Disjoint groups of points known to be in different classes (warm start),
            used as the neighbourhoods and added to the constraints as a must-link chain
            per group and a cannot-link between every two groups.
        """
        Xc = check_data(X)
        n = Xc.shape[0]
        if not callable(getattr(oracle, "query", None)):
            raise TypeError(f"oracle must have a query(i, j) method; got {type(oracle).__name__}.")
        family = self._family(Xc)
        Xp = family.prepare(Xc)
        self._validate_params(n)
        warm, hoods = self._warm_start(n, constraints, neighborhoods)
        asked = {tuple(p) for p in warm.pairs.tolist()}
        for q in getattr(oracle, "log", ()) or ():
            asked.add((min(q[0], q[1]), max(q[0], q[1])))
        state = _State(Xc, Xp, family, oracle, check_random_state(self.random_state), warm, hoods, asked)
        try:
            self._select(state)
            reason = getattr(state, "stop_reason", None) or "nothing left to ask"
        except _Stop as stop:
            reason = stop.args[0]
        self._state_ = state
        self.constraints_ = state.constraints_at()
        self.queries_ = list(state.queries)
        self.inferred_ = list(state.inferred)
        hoods = state.hoods or (
            neighborhoods_from_constraints(self.constraints_) if len(self.constraints_) else []
        )
        self.neighborhoods_ = [np.sort(np.asarray(h, dtype=np.int64)) for h in hoods]
        self.query_subjects_ = np.asarray(state.subjects, dtype=np.int64)
        self.n_queries_ = len(state.queries)
        self.stop_reason_ = reason
        return self

    def constraints_at(self, n_queries: int) -> Constraints:
        """The constraints known after the first ``n_queries`` queries of this fit: the
        ``constraints_`` of a fit with the same ``random_state`` and that budget (the
        selectors never look at the budget when choosing)."""
        if not hasattr(self, "_state_"):
            raise AttributeError(f"{type(self).__name__} is not fitted; call fit(X, oracle) first.")
        if isinstance(n_queries, bool) or int(n_queries) != n_queries or n_queries < 0:
            raise ValueError(f"n_queries must be a non-negative integer; got {n_queries!r}.")
        return self._state_.constraints_at(min(int(n_queries), self.n_queries_))

    def clusterer_constraints(self, n_queries: int, closure: bool = True) -> Constraints:
        """:meth:`constraints_at`, closed if ``closure`` (Xiong et al. 2014, §4.1.2): the
        supervision of an estimator with ``closure=False`` after ``n_queries`` queries."""
        c = self.constraints_at(n_queries)
        return c.closure() if closure and len(c) else c

    def queried_points(self, n_queries: int | None = None) -> np.ndarray:
        """Sorted indices of the points in the first ``n_queries`` queries (default: all)."""
        qs = self.queries_ if n_queries is None else self.queries_[: int(n_queries)]
        if not qs:
            return np.empty(0, dtype=np.int64)
        return np.unique(np.asarray([(q.i, q.j) for q in qs], dtype=np.int64))

    # ----------------------------------------------------------------- hooks
    def _validate_params(self, n: int) -> None:
        """Check hyper-parameters against the data size (subclasses extend)."""

    def _warm_start(self, n, constraints, neighborhoods):
        warm = Constraints.empty(n)
        if constraints is not None:
            check_constraints(constraints, n)
            warm = constraints
        if neighborhoods is not None:
            labels = np.full(n, -1, dtype=np.int64)
            for p, h in enumerate(neighborhoods):
                idx = np.asarray(h)
                if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
                    raise ValueError(f"neighborhoods[{p}] must be a non-empty 1-D sequence of point indices.")
                if idx.min() < 0 or idx.max() >= n:
                    raise ValueError(f"neighborhoods[{p}] has an index outside [0, {n - 1}].")
                if np.any(labels[idx] >= 0):
                    raise ValueError(
                        f"neighborhoods[{p}] shares point {int(idx[labels[idx] >= 0][0])} with another."
                    )
                labels[idx] = p
            warm = warm + Constraints.from_labels(labels, pairs="spanning")
            return warm, [np.unique(np.asarray(h, dtype=np.int64)) for h in neighborhoods]
        return warm, neighborhoods_from_constraints(warm) if len(warm) else []

    def _select(self, state: _State) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
