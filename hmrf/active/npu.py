"""Normalized point-based uncertainty (Xiong, Azimi & Fern, TKDE 2014, Alg. 1–2)."""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from .._params import Check, Interval, validate_params
from .base import ActiveSelector, _State, fit_clusterer

__all__ = [
    "NPU",
    "leaf_neighborhood_similarity",
    "neighborhood_probabilities",
    "normalized_uncertainty",
]


def leaf_neighborhood_similarity(leaves, hoods, candidates=None) -> np.ndarray:
    """Average random-forest similarity of points to each neighbourhood (eq. 1 numerator).

    ``M(x, x') = (1/T) Σ_t [leaf_t(x) = leaf_t(x')]`` (Xiong et al. 2014, §3.3.1) and
    ``A(x, N_i) = (1/|N_i|) Σ_{x' ∈ N_i} M(x, x')``.

    Parameters
    ----------
    leaves : ndarray of shape (n, T)
        Leaf index of every point in every tree (``RandomForestClassifier.apply``).
    hoods : list of array-like of int
        Members of each neighbourhood.
    candidates : array-like of int, optional
        Rows to compute (default: all points).

    Returns
    -------
    ndarray of shape (len(candidates), l)

    Notes
    -----
    ``Σ_{x' ∈ N_i} [leaf_t(x) = leaf_t(x')]`` is the number of members of ``N_i`` that
    fall in the leaf of ``x`` in tree ``t``. With ``L`` the sparse (n, #leaves) one-hot
    leaf-membership matrix and ``C = L[members]^T H`` the (#leaves, l) member counts
    per leaf (``H`` the member-to-neighbourhood indicator), ``A = L[candidates] C /
    (T |N_i|)``: two sparse products, O((n + m) T + n T l), never an n × m similarity
    block, and exactly the average of the pairwise similarities.
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
    m = members.size
    Lm = sp.csr_matrix(
        (np.ones(m * T), (np.repeat(np.arange(m), T), gid[members].ravel())), shape=(m, n_leaves)
    )
    H = sp.csr_matrix((np.ones(m), (np.arange(m), which)), shape=(m, len(hoods)))
    counts = (Lm.T @ H).tocsr()  # (n_leaves, l)
    rows = np.arange(n) if candidates is None else np.asarray(candidates, dtype=np.int64)
    r = rows.size
    Lc = sp.csr_matrix((np.ones(r * T), (np.repeat(np.arange(r), T), gid[rows].ravel())), shape=(r, n_leaves))
    A = (Lc @ counts).toarray()
    return A / (T * sizes[None, :])


def neighborhood_probabilities(similarity) -> np.ndarray:
    """``p(x ∈ N_i)``: average similarities normalised per point (Xiong et al., eq. 1).

    A point with zero similarity to every neighbourhood gets equal probabilities
    (§3.3.1: "we assign equal probabilities to all neighborhoods").
    """
    S = np.asarray(similarity, dtype=np.float64)
    total = S.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        P = np.where(total > 0, S / np.where(total > 0, total, 1.0), 1.0 / S.shape[1])
    return P


def normalized_uncertainty(P):
    """Entropy, expected number of queries, and their ratio (Xiong et al., eqs. 2–4).

    ``H(N | x) = -Σ_i p_i log2 p_i`` (eq. 2, ``0 log 0 = 0``);
    ``E[q(x)] = Σ_i i p_(i)`` with the probabilities sorted in *decreasing* order,
    the order the neighbourhoods are queried in (eq. 3); the score is ``H / E[q]``
    (eq. 4).

    Parameters
    ----------
    P : array-like of shape (n, l)
        Rows are probability vectors.

    Returns
    -------
    entropy, expected_cost, score : ndarray of shape (n,)

    Examples
    --------
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


class NPU(ActiveSelector):
    """Normalized point-based uncertainty: iterative active selection (Xiong et al. 2014).

    Algorithm 1: start with one random point as ``N_1``; then repeat — cluster the data
    with the current constraints (``clusterer``), pick the most informative point
    (Algorithm 2), query it against the neighbourhoods in decreasing ``p(x ∈ N_i)``
    until a must-link (join) or cannot-links to all (new neighbourhood) — while
    queries are allowed.

    Algorithm 2: a random forest of ``n_estimators`` trees learns to predict the
    current cluster labels; ``M(x, x')`` is the fraction of trees in which ``x`` and
    ``x'`` share a leaf; ``p(x ∈ N_i)`` is proportional to the average ``M`` to the
    members of ``N_i`` (eq. 1); the uncertainty is the entropy (eq. 2), the cost the
    expected number of queries with the probabilities sorted decreasingly (eq. 3),
    and ``x* = argmax_{x ∉ ∪N_i} H / E[q]`` (eq. 4).

    Parameters
    ----------
    clusterer : hmrf estimator
        Re-fitted (a clone) every iteration with ``fit(X, constraints=...)`` (see
        :func:`~hmrf.active.base.fit_clusterer` for seed-based estimators). Xiong et al.
        use MPCKMeans.
    n_estimators : int, default=50
    closure : bool, default=True
        Cluster with the transitive closure of the constraints (Xiong et al., §4.1.2).
    emission : str, EmissionFamily or None, default=None
        Divergence for choosing the member a point is paired with (``None``: the
        clusterer's ``emission`` if any, else squared Euclidean).
    reuse_forest : bool, default=True
        Reuse the previous iteration's forest when the clustering is unchanged (the
        forest would be trained on identical data; only its seed would differ). Set
        ``False`` to refit every iteration, literally as Alg. 2 line 1.
    n_jobs : int or None, default=None
        Passed to the random forest.
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
    With a single neighbourhood every point has entropy 0, so Alg. 2 cannot choose;
    the point is then drawn at random and no clustering is run. Ties of eq. 4 are
    broken at random. If re-clustering fails, a ``RuntimeError`` says at which query
    and why (there is no retry loop).

    References
    ----------
    S. Xiong, J. Azimi & X. Z. Fern (2014), "Active learning of constraints for
    semi-supervised clustering", IEEE TKDE 26(1): Alg. 1–2, eqs. 1–4.
    """

    _parameter_constraints = {
        "clusterer": [Check(lambda c: callable(getattr(c, "fit", None)),
                            "an estimator with a fit method (NPU needs a clusterer: an hmrf estimator "
                            "such as PCKMeans(n_clusters=k))")],
        "n_estimators": [Interval(Integral, 1, None)],
    }

    def __init__(
        self,
        clusterer=None,
        *,
        n_estimators=50,
        closure=True,
        reuse_forest=True,
        emission=None,
        n_jobs=None,
        random_state=None,
    ):
        self.clusterer = clusterer
        self.n_estimators = n_estimators
        self.closure = closure
        self.reuse_forest = reuse_forest
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
        c = state.constraints_at()
        if self.closure and len(c):
            c = c.closure()
        try:
            return fit_clusterer(est, state.X, c)
        except Exception as exc:
            raise RuntimeError(
                f"NPU: re-clustering with {type(est).__name__} failed after {len(state.queries)} "
                f"queries ({len(c)} constraints): {type(exc).__name__}: {exc}"
            ) from exc

    def _most_informative(self, state: _State, labels, free):
        from sklearn.ensemble import RandomForestClassifier

        seed = int(state.rng.integers(np.iinfo(np.int32).max))
        cached = self._forest_cache
        if self.reuse_forest and cached is not None and np.array_equal(cached[0], labels):
            leaves = cached[1]
        else:
            forest = RandomForestClassifier(
                n_estimators=int(self.n_estimators), n_jobs=self.n_jobs, random_state=seed
            )
            forest.fit(state.Xp, labels)
            leaves = forest.apply(state.Xp)
            self.n_forests_ += 1
            self._forest_cache = (np.array(labels, copy=True), leaves)
        P = neighborhood_probabilities(leaf_neighborhood_similarity(leaves, state.hoods, free))
        _, _, score = normalized_uncertainty(P)
        best = np.flatnonzero(score >= score.max() - 1e-12)
        pick = int(best[0]) if best.size == 1 else int(state.rng.choice(best))
        return int(free[pick]), P[pick]

    def _select(self, state):
        self.labels_, self.n_iter_, self.n_forests_ = None, 0, 0
        self._forest_cache = None
        self.timings_ = {"cluster": 0.0, "select": 0.0}
        try:
            self._loop(state)
        finally:
            self._forest_cache = None

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
