"""Normalized point-based uncertainty (Xiong, Azimi & Fern, TKDE 2014, Alg. 1–2)."""

from __future__ import annotations

import time
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from .._validation import Check, Interval, validate_params
from .base import ActiveSelector, _State, fit_clusterer, takes_centres

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import ArrayLike, NDArray
    from sklearn.base import BaseEstimator

    from .._typing import MatrixLike, RandomLike
    from ..emissions.base import EmissionFamily

__all__ = ["NPU", "forest_leaves", "relabelled_points", "leaf_neighborhood_similarity",
           "neighborhood_probabilities", "normalized_uncertainty"]


def forest_leaves(X: MatrixLike, labels: ArrayLike, n_estimators: int = 50, random_state: int = 0,
                  n_jobs: int | None = None) -> np.ndarray:
    """Leaf of every point in every tree of a random forest fitted to ``labels``, (n, T).

    The leaves of :class:`sklearn.ensemble.RandomForestClassifier`'s
    ``fit(X, labels).apply(X)`` with ``n_estimators`` and ``random_state`` (bootstrap
    trees, ``max_features="sqrt"``, ``X`` as float32), grown one by one without the
    forest's per-tree checks and copies on ``n_jobs`` threads (``None``: 1; ``-1``: all
    cores); the result does not depend on ``n_jobs``.
    """
    import os
    from concurrent.futures import ThreadPoolExecutor

    import sklearn
    from sklearn.tree import DecisionTreeClassifier

    labels = np.asarray(labels)
    if sp.issparse(X):
        X_fit = sp.csc_matrix(X, dtype=np.float32)
        X_fit.sort_indices()
        X_apply = sp.csr_matrix(X, dtype=np.float32)
        X_apply.sort_indices()
    else:
        X_fit = X_apply = np.ascontiguousarray(X, dtype=np.float32)
    n = labels.shape[0]
    seeds = np.random.RandomState(random_state).randint(np.iinfo(np.int32).max, size=int(n_estimators))

    def grow(seed):
        weight = np.bincount(np.random.RandomState(seed).randint(0, n, n), minlength=n).astype(np.float64)
        tree = DecisionTreeClassifier(max_features="sqrt", random_state=seed)
        with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
            tree.fit(X_fit, labels, sample_weight=weight, check_input=False)
            return tree.apply(X_apply, check_input=False)

    threads = 1 if n_jobs is None else (os.cpu_count() or 1) if n_jobs < 0 else int(n_jobs)
    if threads <= 1:
        columns = [grow(int(s)) for s in seeds]
    else:
        with ThreadPoolExecutor(threads) as pool:
            columns = list(pool.map(grow, seeds.tolist()))
    return np.column_stack(columns)


def leaf_neighborhood_similarity(leaves: NDArray[Any], hoods: Any,
                                 candidates: ArrayLike | None = None) -> np.ndarray:
    """Average random-forest similarity of points to each neighbourhood (eq. 1 numerator).

    ``M(x, x') = (1/T) Σ_t [leaf_t(x) = leaf_t(x')]`` (Xiong et al. 2014, §3.3.1) and
    ``A(x, N_i) = (1/|N_i|) Σ_{x' ∈ N_i} M(x, x')``, for the rows ``candidates``
    (default: all) of ``leaves`` (n, T) and the member lists ``hoods``. With ``L`` the
    sparse one-hot leaf membership and ``H`` the member-to-neighbourhood indicator,
    ``A = L[candidates] (L[members]^T H) / (T |N_i|)``: never an n × m block.
    """
    leaves = np.asarray(leaves)
    n, T = leaves.shape
    # global leaf ids: tree t's leaves are offset past those of trees < t
    span = leaves.max(axis=0).astype(np.int64) + 1
    offset = np.concatenate([[0], np.cumsum(span)[:-1]])
    gid = leaves.astype(np.int64) + offset[None, :]
    n_leaves = int(span.sum())
    members = np.concatenate([np.asarray(h, dtype=np.int64) for h in hoods])
    which = np.repeat(np.arange(len(hoods)), [len(h) for h in hoods])
    sizes = np.bincount(which, minlength=len(hoods)).astype(np.float64)

    def onehot(rows):  # (len(rows), n_leaves) leaf membership
        r = rows.size
        return sp.csr_matrix((np.ones(r * T), (np.repeat(np.arange(r), T), gid[rows].ravel())),
                             shape=(r, n_leaves))

    m = members.size
    H = sp.csr_matrix((np.ones(m), (np.arange(m), which)), shape=(m, len(hoods)))
    counts = (onehot(members).T @ H).tocsr()  # (n_leaves, l)
    rows = np.arange(n) if candidates is None else np.asarray(candidates, dtype=np.int64)
    return (onehot(rows) @ counts).toarray() / (T * sizes[None, :])


def neighborhood_probabilities(similarity: Any) -> np.ndarray:
    """``p(x ∈ N_i)``: average similarities normalised per point (Xiong et al., eq. 1).

    A point with zero similarity to every neighbourhood gets equal probabilities
    (§3.3.1: "we assign equal probabilities to all neighborhoods").
    """
    S = np.asarray(similarity, dtype=np.float64)
    total = S.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        P = np.where(total > 0, S / np.where(total > 0, total, 1.0), 1.0 / S.shape[1])
    return P


def normalized_uncertainty(P: ArrayLike) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Entropy, expected number of queries, and their ratio (Xiong et al., eqs. 2–4).

    ``H(N | x) = -Σ_i p_i log2 p_i`` (eq. 2, ``0 log 0 = 0``); ``E[q(x)] = Σ_i i p_(i)``
    with the rows of ``P`` sorted in decreasing order, the order the neighbourhoods are
    queried in (eq. 3); the score is ``H / E[q]`` (eq. 4). Returns the three (n,) arrays.
    Examples
    --------
    >>> from hmrf.active import normalized_uncertainty
    >>> H, E, s = normalized_uncertainty([[0.2, 0.5, 0.3]])
    >>> round(float(E[0]), 6)  # 1*0.5 + 2*0.3 + 3*0.2
    1.7
    """
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2:
        raise ValueError(f"P must be 2-D (points, neighbourhoods); got shape {P.shape}.")
    with np.errstate(divide="ignore", invalid="ignore"):
        H = -np.where(P > 0, P * np.log2(np.where(P > 0, P, 1.0)), 0.0).sum(axis=1)
    ranks = np.arange(1, P.shape[1] + 1, dtype=np.float64)
    E = -np.sort(-P, axis=1) @ ranks
    return H, E, H / E


def relabelled_points(a: Any, b: Any) -> int:
    """Points whose cluster differs between two labellings under the best one-to-one
    matching of their clusters: ``n - max_σ Σ_h C[h, σ(h)]``, ``C`` the contingency table
    (Hungarian algorithm, :func:`scipy.optimize.linear_sum_assignment`)."""
    from scipy.optimize import linear_sum_assignment

    _, a = np.unique(np.asarray(a), return_inverse=True)
    _, b = np.unique(np.asarray(b), return_inverse=True)
    ka, kb = int(a.max(initial=-1)) + 1, int(b.max(initial=-1)) + 1
    C = np.bincount(a * kb + b, minlength=ka * kb).reshape(ka, kb)
    rows, cols = linear_sum_assignment(C, maximize=True)
    return int(a.size - C[rows, cols].sum())


class NPU(ActiveSelector):
    """Normalized point-based uncertainty: iterative active selection (Xiong et al. 2014).

    Algorithm 1: start with one random point as ``N_1``; then repeat: cluster the data
    with the current constraints (``clusterer``), pick the most informative point
    (Algorithm 2: a random forest learns the cluster labels,
    :func:`leaf_neighborhood_similarity`, :func:`neighborhood_probabilities`,
    ``x* = argmax_{x ∉ ∪N_i}`` of :func:`normalized_uncertainty`), and query it against
    the neighbourhoods in decreasing ``p(x ∈ N_i)`` until a must-link (join) or
    cannot-links to all (new neighbourhood).

    Parameters
    ----------
    clusterer : hmrf estimator
        A clone is re-fitted every iteration (:func:`~hmrf.active.base.fit_clusterer`);
        Xiong et al. use MPCKMeans. A failed re-clustering raises a ``RuntimeError``.
    n_estimators : int, default=50
    closure : bool, default=True
        Cluster with the transitive closure of the constraints (Xiong et al., §4.1.2);
        ``False``: with the answered pairs only.
    emission : str, EmissionFamily or None, default=None
        Divergence for choosing the member a point is paired with (``None``: the
        clusterer's ``emission`` if any, else squared Euclidean).
    reuse_forest : bool, default=True
        Reuse the forest while the clustering it was trained on still holds, up to a
        renaming of the clusters and ``forest_tolerance`` (the fraction of points that
        may change cluster, :func:`relabelled_points`). ``False``: Alg. 2 line 1.
    forest_tolerance : float in [0, 1), default=0.0
    warm_start : bool, default=False
        Start each re-clustering from the previous cluster centres (one run), where the
        clusterer takes ``init`` centres (:func:`~hmrf.active.takes_centres`); the others
        re-cluster from their own start. ``False``: Alg. 1 line 3 (:doc:`/active_learning`).
    n_jobs : int or None, default=None
        Threads growing the forest's trees (the result does not depend on it).
    random_state : int, RandomState, Generator or None, default=None
        Source of the first point, the forests, ties, and the clusterer's
        ``random_state`` when that is ``None``.

    Attributes
    ----------
    labels_ : ndarray or None
        Clustering of the last iteration.
    n_iter_ : int
        Number of re-clusterings.
    n_forests_ : int
        Number of random forests trained.
    timings_ : dict
        Seconds spent ``"cluster"``-ing and ``"select"``-ing (forest + scores).

    Notes
    -----
    With a single neighbourhood the point is drawn at random and no clustering is run.
    Ties of eq. 4 are broken at random. ``n_jobs`` and ``warm_start`` are the two ways
    to scale up of §3.4.

    References
    ----------
    S. Xiong, J. Azimi & X. Z. Fern (2014), "Active learning of constraints for
    semi-supervised clustering", IEEE TKDE 26(1): Alg. 1–2, eqs. 1–4, §3.4.
    """

    _parameter_constraints = {
        "clusterer": [Check(lambda c: callable(getattr(c, "fit", None)),
                            "an estimator with a fit method (NPU needs a clusterer: an hmrf estimator "
                            "such as PCKMeans(n_clusters=k))")],
        "n_estimators": [Interval(Integral, 1, None)],
        "forest_tolerance": [Interval(Real, 0, 1, closed="left")],
    }

    def __init__(self, clusterer: BaseEstimator | None = None, *, n_estimators: int = 50,
                 closure: bool = True, reuse_forest: bool = True, forest_tolerance: float = 0.0,
                 warm_start: bool = False, emission: str | EmissionFamily | None = None,
                 n_jobs: int | None = None, random_state: RandomLike = None) -> None:
        self.clusterer = clusterer
        self.n_estimators = n_estimators
        self.closure = closure
        self.reuse_forest = reuse_forest
        self.forest_tolerance = forest_tolerance
        self.warm_start = warm_start
        self.emission = emission
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _validate_params(self, n):
        validate_params(self)

    def _cluster(self, state: _State) -> np.ndarray:
        est = clone(self.clusterer)
        params = est.get_params(deep=False)
        if "random_state" in params and params["random_state"] is None:
            est.set_params(random_state=int(state.rng.integers(np.iinfo(np.int32).max)))
        if self.warm_start and self._centers is not None and takes_centres(est):
            est.set_params(init=self._centers)
            if "n_init" in params:  # restarts from one set of centres would repeat one another
                est.set_params(n_init=1)
        if "closure" in params:  # NPU decides on the closure, once per iteration
            est.set_params(closure=False)
        if params.get("w") == "auto" and self._w is not None and np.isfinite(self._w):  # X alone sets it
            est.set_params(w=self._w)
        c = state.constraints_at()
        if self.closure and len(c):
            c = c.closure()
        try:
            labels = fit_clusterer(est, state.X, c)
            if self.warm_start and takes_centres(est):
                self._centers = np.array(est.cluster_centers_, dtype=np.float64)
            self._w = getattr(est, "w_", None)
            return labels
        except Exception as exc:
            raise RuntimeError(
                f"NPU: re-clustering with {type(est).__name__} failed after {len(state.queries)} "
                f"queries ({len(c)} constraints): {type(exc).__name__}: {exc}"
            ) from exc

    def _most_informative(self, state: _State, labels, free):
        seed = int(state.rng.integers(np.iinfo(np.int32).max))
        cached = self._forest_cache
        if (self.reuse_forest and cached is not None
                and relabelled_points(cached[0], labels) <= float(self.forest_tolerance) * labels.size):
            leaves = cached[1]
        else:
            leaves = forest_leaves(self._Xf, labels, int(self.n_estimators), seed, self.n_jobs)
            self.n_forests_ += 1
            self._forest_cache = (np.array(labels, copy=True), leaves)
        P = neighborhood_probabilities(leaf_neighborhood_similarity(leaves, state.hoods, free))
        _, _, score = normalized_uncertainty(P)
        best = np.flatnonzero(score >= score.max() - 1e-12)
        pick = int(best[0]) if best.size == 1 else int(state.rng.choice(best))
        return int(free[pick]), P[pick]

    def _select(self, state):
        self.labels_, self.n_iter_, self.n_forests_ = None, 0, 0
        self._forest_cache, self._centers, self._w = None, None, None
        # the forest's input format, converted once (sparse stays sparse)
        self._Xf = sp.csc_matrix(state.Xp, dtype=np.float32) if sp.issparse(state.Xp) else (
            np.ascontiguousarray(state.Xp, dtype=np.float32))
        self.timings_ = {"cluster": 0.0, "select": 0.0}
        try:
            self._loop(state)
        finally:
            self._forest_cache, self._centers, self._w, self._Xf = None, None, None, None

    def _loop(self, state):
        if not state.hoods:
            state.seed()
        while True:
            free = state.free_points()
            if len(state.hoods) == 1:
                x, order = int(state.rng.choice(free)), np.zeros(1, dtype=np.int64)
            else:
                t0 = time.perf_counter()
                self.labels_ = self._cluster(state)
                self.n_iter_ += 1
                t1 = time.perf_counter()
                x, p = self._most_informative(state, self.labels_, free)
                order = np.argsort(-p, kind="stable")
                self.timings_["cluster"] += t1 - t0
                self.timings_["select"] += time.perf_counter() - t1
            state.resolve(x, order)
