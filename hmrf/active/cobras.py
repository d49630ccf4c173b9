"""COBRAS: constraint-based repeated aggregation and splitting (Van Craenendonck et al. 2018)."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import ClusterMixin

from .._validation import Interval, validate_params
from .base import ActiveSelector, _Closure, _State
from .explore import _check_k

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import ArrayLike, NDArray
    from typing_extensions import Self

    from .._typing import MatrixLike, RandomLike
    from ..constraints import Constraints
    from ..emissions.base import EmissionFamily
    from .oracles import OracleLike

__all__ = ["COBRAS"]


@dataclass(eq=False)
class _SuperInstance:
    """A group of points assumed to share a class, with its representative and centroid."""

    indices: np.ndarray
    rep: int
    centroid: np.ndarray
    splittable: bool = True


@dataclass(eq=False)
class _Cluster:
    """A set of super-instances (ids) with the label it shows in the clustering."""

    members: list
    label: int
    old: bool  # existed before the split being merged (keeps its label)


class COBRAS(ClusterMixin, ActiveSelector):
    """COBRAS: interactive clustering with pairwise queries (Van Craenendonck et al. 2018).

    Start with one super-instance holding every point and one cluster. Then, while
    queries are allowed:

    1. **Split** the largest super-instance ``S`` with k-means into ``2^s``
       super-instances. The *splitting level* ``s`` is estimated with queries: split
       ``S`` in two, ask the two representatives; a cannot-link counts one level and the
       smaller part is split in two again; a must-link (or a part too small to split)
       stops, and ``s`` is the number of cannot-links (at least 1).
    2. Put each new super-instance in a cluster of its own, and **merge**: among the
       pairs of clusters not known to differ, take the closest (the distance of their
       two closest super-instances' centroids) and ask the representatives of that pair
       of super-instances. A must-link merges the clusters; a cannot-link goes on with
       the next pair. The phase ends when every pair of clusters is known to differ.

    A super-instance's representative is ``argmin_{i ∈ S} D(x_i, μ_S)``; every point
    takes the cluster of its super-instance (new super-instances show the cluster they
    came from until a cannot-link says otherwise).

    Parameters
    ----------
    n_clusters : int or None, default=None
        ``k`` if known. Then a cluster known to differ from ``k - 1`` of ``k``
        pairwise-different clusters is merged with the last one without a query (as
        CONSOLIDATE, Basu 2005, §5.3); the inferred must-link is in ``inferred_``.
    emission : str, EmissionFamily or None, default=None
        Divergence of the k-means splits, the representatives and the distances
        (``None``: squared Euclidean).
    n_init : int, default=3
        k-means restarts per split.
    super_instance_weight : float, default=0.5
        ``ω`` of :meth:`clusterer_constraints`.
    random_state : int, RandomState, Generator or None, default=None
        Seeds of the k-means splits.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        The clustering after the last query, labels ``0..c-1``.
    super_instances_ : list of ndarray
        Members of each super-instance at the end.
    representatives_ : ndarray
    n_clusters_, constraints_, queries_, inferred_, n_queries_, stop_reason_
        As :class:`~hmrf.active.ActiveSelector` (pairs of representatives).

    Notes
    -----
    A pair asked before, or implied by the transitive closure of the answers, is never
    asked. A "don't know" counts as a cannot-link when estimating the splitting level and
    keeps two clusters apart for a merging phase. The distance of two super-instances is
    ``(D(μ_a, μ_b) + D(μ_b, μ_a)) / 2``.

    References
    ----------
    T. Van Craenendonck, S. Dumančić, E. Van Wolputte & H. Blockeel (2018), "COBRAS:
    interactive clustering with pairwise queries", IDA XVII, §3. T. Van Craenendonck,
    S. Dumančić & H. Blockeel (2018), "COBRAS-TS", IJCAI.

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf.active import COBRAS, LabelOracle
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]])
    >>> y = np.array([0, 0, 0, 1, 1, 1])
    >>> est = COBRAS(random_state=0).fit(X, LabelOracle(y, budget=10))
    >>> est.labels_.tolist(), est.n_queries_ <= 10
    ([0, 0, 0, 1, 1, 1], True)
    """

    _parameter_constraints = {"n_init": [Interval(Integral, 1, None)],
                              "super_instance_weight": [Interval(Real, 0, float("inf"), closed="left")]}

    def __init__(self, n_clusters: int | None = None, *, emission: str | EmissionFamily | None = None,
                 n_init: int = 3, super_instance_weight: float = 0.5,
                 random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.emission = emission
        self.n_init = n_init
        self.super_instance_weight = super_instance_weight
        self.random_state = random_state

    def _validate_params(self, n):
        _check_k(self.n_clusters, n, allow_none=True)
        validate_params(self)

    def fit(self, X: MatrixLike, oracle: OracleLike, *, constraints: Constraints | None = None,
            neighborhoods: Sequence[ArrayLike] | None = None) -> Self:
        """Cluster ``X`` by asking ``oracle`` (see :meth:`ActiveSelector.fit
        <hmrf.active.ActiveSelector.fit>`); sets ``labels_``."""
        super().fit(X, oracle, constraints=constraints, neighborhoods=neighborhoods)
        self.labels_ = self.labels_at(self.n_queries_)
        self.n_clusters_ = int(self.labels_.max()) + 1 if self.labels_.size else 0
        return self

    def fit_predict(self, X: MatrixLike, oracle: OracleLike, **kwargs: Any) -> NDArray[np.intp]:
        """``fit(X, oracle, **kwargs).labels_``."""
        return self.fit(X, oracle, **kwargs).labels_

    def labels_at(self, n_queries: int) -> np.ndarray:
        """The clustering after the first ``n_queries`` queries, labels ``0..c-1`` (the
        ``labels_`` of a fit with that budget, as :meth:`constraints_at`)."""
        point_si, label_of = self._membership_at(n_queries)
        _, labels = np.unique(label_of[point_si], return_inverse=True)
        return labels.astype(np.int64)

    def super_instances_at(self, n_queries: int) -> tuple[NDArray[Any], NDArray[Any]]:
        """The super-instances after the first ``n_queries`` queries: ``(membership,
        representatives)``, the super-instance ``0..s-1`` of every point and the
        representative of each."""
        point_si, _ = self._membership_at(n_queries)
        ids, membership = np.unique(point_si, return_inverse=True)
        reps = np.asarray([self._sis[s].rep for s in ids.tolist()], dtype=np.int64)
        return membership.astype(np.int64), reps

    def clusterer_constraints(self, n_queries: int, closure: bool = True) -> Constraints:
        """The supervision a clusterer gets after ``n_queries`` queries.

        The answered pairs (closed if ``closure``) plus, if ``ω = super_instance_weight >
        0``, a soft must-link from every point ``i`` no query involved to the
        representative of its super-instance ``s(i)``, of weight

        ``ω · max(0, 1 - D(x_i, μ_s(i)) / min_{s' ∉ c(s(i))} D(x_i, μ_s'))``

        (``μ`` the super-instance centroids, ``c(s)`` the cluster of ``s``): ``ω`` deep
        inside a super-instance, 0 at the boundary with another cluster. These links are
        not closed: give the result to an estimator with ``closure=False``.
        """
        from ..constraints import MUST_LINK, Constraints

        c = self.constraints_at(n_queries)
        if closure and len(c):
            c = c.closure()
        omega = float(self.super_instance_weight)
        if omega <= 0:
            return c
        point_si, label_of = self._membership_at(n_queries)
        weight = omega * self._margins(point_si, label_of)
        rep_of = np.asarray([si.rep for si in self._sis], dtype=np.int64)[point_si]
        keep = (weight > 0) & (rep_of != np.arange(self._n))
        keep[self.queried_points(n_queries)] = False
        i = np.flatnonzero(keep)
        if i.size == 0:
            return c
        links = Constraints(self._n, np.column_stack([i, rep_of[i]]), np.full(i.size, MUST_LINK), weight[i])
        return c + links if len(c) else links

    def _margins(self, point_si, label_of, block: int = 4096) -> np.ndarray:
        """``max(0, 1 - D(x_i, μ_s(i)) / min_{s' in another cluster} D(x_i, μ_s'))`` per
        point (1 where there is no other cluster), in row blocks."""
        state = self._state_
        ids = np.unique(point_si)
        centers = np.vstack([self._sis[s].centroid for s in ids.tolist()])
        params = state.family.init_params(state.Xp, centers)
        pos = np.searchsorted(ids, point_si)
        cluster = label_of[ids]
        out = np.empty(self._n)
        for r0 in range(0, self._n, block):
            rows = slice(r0, min(r0 + block, self._n))
            D = np.asarray(state.family.divergence(state.Xp[rows], params.centers, data=state._data(rows)),
                           dtype=np.float64)
            own_pos = pos[rows]
            own = D[np.arange(D.shape[0]), own_pos]
            D[cluster[None, :] == cluster[own_pos][:, None]] = np.inf
            other = D.min(axis=1)
            ratio = np.divide(own, other, out=np.ones_like(own), where=other > 0)
            out[rows] = np.clip(1.0 - ratio, 0.0, 1.0)
        return out

    def _membership_at(self, n_queries: int):
        """Super-instance id of every point and label of every super-instance id."""
        self.constraints_at(n_queries)  # fitted and argument checks
        t = min(int(n_queries), self.n_queries_)
        times = [h[0] for h in self._history]
        pos = int(np.searchsorted(times, t, side="right")) - 1
        _, n_splits, label_of = self._history[pos]
        point_si = np.zeros(self._n, dtype=np.int64)
        for parent, child_of_member in self._splits[:n_splits]:
            point_si[self._sis[parent].indices] = child_of_member
        return point_si, label_of

    # ------------------------------------------------------------ selection
    def _select(self, state: _State) -> None:
        from ..estimators import KMeans

        self._n = state.n
        self._kmeans = KMeans
        self._closure = _Closure(state)
        self._family_cache = state.family
        self._dist_n, self._dist = -1, None
        self._sis: list[_SuperInstance] = []
        self._splits: list[tuple[int, np.ndarray]] = []  # (parent id, child id per member)
        self._history: list[tuple[int, int, np.ndarray]] = []  # (queries, splits, label per si)
        self._next_label = 1
        self._phase = None
        root = self._add_si(self._make_si(state, np.arange(state.n)))
        self._clusters = [_Cluster([root], 0, True)]
        self._record(state)
        try:
            self._refine(state)
        finally:
            self._record(state)
            self.super_instances_ = [self._sis[s].indices.copy() for c in self._clusters for s in c.members]
            self.representatives_ = np.asarray(
                [self._sis[s].rep for c in self._clusters for s in c.members], dtype=np.int64)
            del self._closure, self._kmeans, self._family_cache, self._dist

    def _refine(self, state: _State) -> None:
        while True:
            pick = self._largest()
            if pick is None:
                state.stop_reason = "no super-instance left to split"
                return
            cl, s = pick
            k = self._split_level(state, s)
            children = self._split(state, self._sis[s].indices, k)
            if len(children) < 2:
                self._sis[s].splittable = False
                continue
            ids = [self._add_si(c) for c in children]
            members = self._sis[s].indices
            which = np.empty(members.size, dtype=np.int64)
            for cid in ids:
                which[np.searchsorted(members, self._sis[cid].indices)] = cid
            self._splits.append((s, which))
            origin = self._clusters[cl]
            origin.members.remove(s)
            if not origin.members:
                del self._clusters[cl]
            for c in self._clusters:
                c.old = True
            self._phase = (origin.label, self._sis[s].rep)
            self._clusters += [_Cluster([cid], -1, False) for cid in ids]
            self._merge(state)
            for c in self._clusters:
                if c.label < 0:
                    c.label, self._next_label = self._next_label, self._next_label + 1
            self._phase = None

    def _largest(self):
        best, size = None, 1
        for c, cluster in enumerate(self._clusters):
            for s in cluster.members:
                si = self._sis[s]
                if si.splittable and si.indices.size > size:
                    best, size = (c, s), si.indices.size
        return best

    # ---------------------------------------------------------- queries
    def _query(self, state: _State, a: int, b: int):
        """The answer for ``(a, b)``: implied by the answers so far, else asked."""
        if a == b:
            return True
        known = self._closure.implied(a, b)
        if known is not None:
            return known
        if (min(a, b), max(a, b)) in state.asked:  # asked before, not answered
            return None
        self._record(state)
        answer = state.ask(a, b)
        self._closure.update(a, b, answer)
        return answer

    def _record(self, state: _State) -> None:
        """Remember the clustering shown after ``len(state.queries)`` queries."""
        label_of = np.full(len(self._sis), -1, dtype=np.int64)
        for c in self._clusters:
            label_of[c.members] = c.label if c.label >= 0 else self._pending_label(c)
        entry = (len(state.queries), len(self._splits), label_of)
        if self._history and self._history[-1][0] == entry[0]:
            self._history[-1] = entry
        else:
            self._history.append(entry)

    def _pending_label(self, cluster: _Cluster) -> int:
        """Label shown for a cluster of new super-instances while merging is under way:
        the split super-instance's cluster unless known to differ from it, then the
        closest earlier cluster not known to differ, else a label of its own."""
        origin_label, origin_rep = self._phase
        rep = self._rep(cluster)
        if self._closure.implied(rep, origin_rep) is not False:
            return origin_label
        d = self._cluster_distances()
        me = self._clusters.index(cluster)
        best, label = np.inf, None
        for c, other in enumerate(self._clusters):
            if other.old and d[me, c] < best and self._closure.implied(rep, self._rep(other)) is not False:
                best, label = d[me, c], other.label
        return label if label is not None else self._next_label + me

    # ------------------------------------------------------------ splitting
    def _add_si(self, si: _SuperInstance) -> int:
        self._sis.append(si)
        return len(self._sis) - 1

    def _make_si(self, state: _State, indices) -> _SuperInstance:
        indices = np.sort(np.asarray(indices, dtype=np.int64))
        Xs = state.Xp[indices]
        centroid = state.family.m_step(Xs, np.zeros(indices.size, dtype=np.int64))
        d = state.family.divergence(Xs, centroid.centers, data=state._data(indices))[:, 0]
        return _SuperInstance(indices, int(indices[int(np.argmin(d))]), np.asarray(centroid.centers[0]))

    def _split(self, state: _State, indices, k: int) -> list[_SuperInstance]:
        """k-means of the points ``indices`` into at most ``k`` super-instances."""
        indices = np.asarray(indices)
        k = min(int(k), indices.size)
        if k < 2:
            return [self._make_si(state, indices)]
        if k == indices.size:
            labels = np.arange(k)
        else:
            seed = int(state.rng.integers(np.iinfo(np.int32).max))
            km = self._kmeans(k, emission=state.family, n_init=int(self.n_init), random_state=seed)
            labels = km.fit(state.Xp[indices]).labels_
        return [self._make_si(state, indices[labels == h]) for h in np.unique(labels)]

    def _split_level(self, state: _State, s: int) -> int:
        """``2^s`` with ``s`` the number of cannot-links before a must-link (at least 2 parts)."""
        si = self._sis[s]
        level, part = 0, si.indices
        while part.size >= 2:
            halves = self._split(state, part, 2)
            if len(halves) < 2:
                break
            answer = self._query(state, halves[0].rep, halves[1].rep)
            if answer is True:
                break
            level += 1
            halves = [h for h in halves if h.indices.size >= 2]
            if not halves:
                break
            part = min(halves, key=lambda h: h.indices.size).indices
        return min(si.indices.size, 2 ** max(level, 1))

    # -------------------------------------------------------------- merging
    def _rep(self, cluster: _Cluster) -> int:
        return self._sis[cluster.members[0]].rep

    def _si_distances(self) -> np.ndarray:
        C = np.vstack([si.centroid for si in self._sis])
        if C.shape[0] != self._dist_n:
            fam = self._family_cache
            D = np.asarray(fam.divergence(C, C), dtype=np.float64)
            self._dist = 0.5 * (D + D.T)
            self._dist_n = C.shape[0]
        return self._dist

    def _cluster_distances(self) -> np.ndarray:
        D = self._si_distances()
        m = len(self._clusters)
        out = np.full((m, m), np.inf)
        for a in range(m):
            rows = D[self._clusters[a].members]
            for b in range(a + 1, m):
                out[a, b] = out[b, a] = rows[:, self._clusters[b].members].min()
        return out

    def _closest_reps(self, a: _Cluster, b: _Cluster) -> tuple[int, int]:
        D = self._si_distances()[np.ix_(a.members, b.members)]
        i, j = np.unravel_index(int(np.argmin(D)), D.shape)
        return self._sis[a.members[i]].rep, self._sis[b.members[j]].rep

    def _merge(self, state: _State) -> None:
        """Merge clusters, closest pair first, until every pair is known to differ."""
        unknown: set[tuple[int, int]] = set()
        while True:
            if self._infer_last(state):
                continue
            d = self._cluster_distances()
            m = len(self._clusters)
            iu, ju = np.triu_indices(m, 1)
            order = np.argsort(d[iu, ju], kind="stable")
            merged = False
            for a, b in zip(iu[order].tolist(), ju[order].tolist(), strict=True):
                ca, cb = self._clusters[a], self._clusters[b]
                if (id(ca), id(cb)) in unknown:
                    continue
                if self._closure.implied(self._rep(ca), self._rep(cb)) is False:
                    continue
                ra, rb = self._closest_reps(ca, cb)
                answer = self._query(state, ra, rb)
                if answer is True:
                    self._join(a, b)
                    merged = True
                    break
                if answer is None:
                    unknown.add((id(ca), id(cb)))
            if not merged:
                return

    def _join(self, a: int, b: int) -> None:
        ca, cb = self._clusters[a], self._clusters[b]
        keep, drop = (ca, cb) if (ca.old or not cb.old) else (cb, ca)
        keep.members += drop.members
        self._clusters.remove(drop)

    def _infer_last(self, state: _State) -> bool:
        """With ``k`` known: merge a cluster that differs from k-1 of k pairwise-different
        clusters into the last one, without a query. True if it merged."""
        k = self.n_clusters
        if k is None or k < 2 or len(self._clusters) <= k:
            return False
        reps = [self._rep(c) for c in self._clusters]
        m = len(reps)
        differ = np.zeros((m, m), dtype=bool)
        for a in range(m):
            for b in range(a + 1, m):
                differ[a, b] = differ[b, a] = self._closure.implied(reps[a], reps[b]) is False
        clique: list[int] = []
        for c in sorted(range(m), key=lambda c: (not self._clusters[c].old, -self._size(c))):
            if all(differ[c, q] for q in clique):
                clique.append(c)
                if len(clique) == k:
                    break
        if len(clique) < k:
            return False
        for c in range(m):
            if c in clique:
                continue
            same = [q for q in clique if not differ[c, q]]
            if len(same) == 1:
                ra, rb = self._closest_reps(self._clusters[same[0]], self._clusters[c])
                state.inferred.append((min(ra, rb), max(ra, rb), len(state.queries)))
                self._closure.update(ra, rb, True)
                self._join(same[0], c)
                return True
        return False

    def _size(self, c: int) -> int:
        return sum(self._sis[s].indices.size for s in self._clusters[c].members)
