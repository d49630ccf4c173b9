"""Pairwise supervision: must-link and cannot-link constraints with weights.

A :class:`Constraints` object is the observed constraint variables ``c_ij`` of the HMRF
(Basu 2005, §4.3.1) with their violation costs ``w_ij`` (§4.2): immutable, each pair
once with ``i < j``, and the structures derived from them (the must-link closure and its
components, "neighbourhoods", §4.4.3; the cannot-links they imply), by
:mod:`scipy.sparse.csgraph`, never recursion.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from ._pairs import (
    CANNOT_LINK,
    MUST_LINK,
    as_index_array,
    as_pair_array,
    check_pairs_in_range,
    check_weights,
    components,
    is_unordered,
    merge_duplicates,
    parse_kind,
    resolve_conflicts,
)
from ._validation import check_random_state

if TYPE_CHECKING:
    from typing import Any

    import networkx as nx
    from numpy.typing import ArrayLike, NDArray
    from typing_extensions import Self

    from ._typing import PairsLike, RandomLike

__all__ = ["Constraints", "MUST_LINK", "CANNOT_LINK", "check_constraints", "as_constraints"]

_CONFLICT_POLICIES = ("raise", "warn", "soften", "drop")


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"n must be a non-negative integer; got {n!r}.")
    return int(n)


def _ranks_within(counts) -> np.ndarray:
    """``0..c-1`` for every count ``c`` of ``counts``, concatenated (a vectorised
    ``np.concatenate([np.arange(c) for c in counts])``)."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    return np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)


class Constraints:
    """Immutable set of weighted must-link / cannot-link constraints on ``n`` points.

    Parameters
    ----------
    n : int
        Number of points the indices refer to.
    pairs : array-like of shape (m, 2)
        Point index pairs. Stored in canonical order ``i < j``.
    kind : array-like of shape (m,)
        ``+1`` for must-link, ``-1`` for cannot-link.
    weight : float or array-like of shape (m,), default=1.0
        Violation cost ``w_ij >= 0``; ``np.inf`` makes a constraint hard.
    conflicts : {"raise", "warn", "soften", "drop"}, default="raise"
        What to do with a cannot-link whose endpoints the must-link closure joins:

        - ``"raise"``: a *hard* contradiction (hard cannot-link inside a component of
          hard must-links) raises :class:`~hmrf.InconsistentConstraintsError` naming the
          pair and a must-link chain; soft contradictions are kept.
        - ``"soften"``: hard contradictions are kept with the cannot-link's weight set
          to 1.0 (the must-links are trusted); soft ones are kept.
        - ``"warn"``: as ``"soften"`` and a
          :class:`~hmrf.exceptions.ConstraintConflictWarning` lists them.
        - ``"drop"``: every cannot-link that contradicts the closure of *all*
          must-links (hard or soft) is removed, with a warning giving the count.

    Notes
    -----
    The potential of a constraint is the generalised Potts potential of Basu (2005),
    eq. 4.4: ``w_ij [y_i != y_j]`` for must-links, ``w_ij [y_i == y_j]`` for
    cannot-links. A pair given twice with the same kind is merged by summing its weights
    (the energy, eq. 4.10, is unchanged); a pair given as both kinds keeps both entries.

    Examples
    --------
    >>> from hmrf import Constraints
    >>> c = Constraints.from_pairs(must_link=[(0, 1), (1, 2)], cannot_link=[(2, 3)], n=5)
    >>> c
    Constraints(n=5, must_link=2, cannot_link=1, hard=0)
    >>> [nb.tolist() for nb in c.neighborhoods()]
    [[0, 1, 2]]
    """

    __slots__ = ("_n", "_pairs", "_kind", "_weight", "_cache")
    # the slots' types, for type checkers (set once, in __init__, by object.__setattr__)
    _n: int
    _pairs: np.ndarray
    _kind: np.ndarray
    _weight: np.ndarray
    _cache: dict[str, Any]

    def __init__(self, n: int, pairs: ArrayLike, kind: ArrayLike, weight: float | ArrayLike = 1.0, *,
                 conflicts: str = "raise") -> None:
        n = _check_n(n)
        if conflicts not in _CONFLICT_POLICIES:
            raise ValueError(f"conflicts must be one of {_CONFLICT_POLICIES}; got {conflicts!r}.")
        pairs = as_pair_array(pairs, "pairs")
        m = pairs.shape[0]
        kind = np.asarray(kind).reshape(-1) if m else np.empty(0, dtype=np.int8)
        if kind.shape != (m,):
            raise ValueError(f"kind must have one entry per pair ({m}); got shape {kind.shape}.")
        if m and not np.all(np.isin(kind, (MUST_LINK, CANNOT_LINK))):
            b = int(np.flatnonzero(~np.isin(kind, (MUST_LINK, CANNOT_LINK)))[0])
            raise ValueError(f"kind[{b}] is {kind[b]!r}; use +1 for must-link, -1 for cannot-link.")
        kind = kind.astype(np.int8)
        w = check_weights(weight, m, "weight")
        check_pairs_in_range(pairs, n, "pairs")

        pairs = np.sort(pairs, axis=1)
        pairs, kind, w = merge_duplicates(n, pairs, kind, w)
        pairs, kind, w = resolve_conflicts(n, pairs, kind, w, conflicts)
        self._set(n, pairs, kind, w)

    # ------------------------------------------------------------------ internals
    def _set(self, n, pairs, kind, weight):
        for a in (pairs, kind, weight):
            a.flags.writeable = False
        object.__setattr__(self, "_n", n)
        object.__setattr__(self, "_pairs", pairs)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_weight", weight)
        object.__setattr__(self, "_cache", {})

    def __setattr__(self, name, value):
        raise AttributeError("Constraints is immutable; build a new one instead.")

    def __reduce__(self):
        return (Constraints._from_validated, (self._n, self._pairs, self._kind, self._weight))

    @classmethod
    def _from_validated(cls, n, pairs, kind, weight):
        """Build without re-validating (arrays already canonical, merged, consistent)."""
        obj = cls.__new__(cls)
        obj._set(int(n), np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2),
                 np.asarray(kind, dtype=np.int8).copy(), np.asarray(weight, dtype=np.float64).copy())
        return obj

    # -------------------------------------------------------------- constructors
    @classmethod
    def from_pairs(cls, must_link: PairsLike | None = None, cannot_link: PairsLike | None = None,
                   n: int | None = None, weight: float | ArrayLike = 1.0, *,
                   conflicts: str = "raise") -> Constraints:
        """Build from lists of must-link and cannot-link pairs.

        Parameters
        ----------
        must_link, cannot_link : sequence of (i, j) or array of shape (m, 2), optional
            Any iterable of pairs (a generator too); a set is taken in sorted order and
            then needs a single ``weight``.
        n : int, optional
            Number of points. Defaults to ``1 + max index``; pass it explicitly so that
            out-of-range indices are caught.
        weight : float or array-like, default=1.0
            One weight for all pairs, or one per pair in the order given: all
            must-links first, then all cannot-links. ``np.inf`` = hard.
        conflicts : str, default="raise"
            See :class:`Constraints`.
        """
        if np.ndim(weight) != 0:
            for name, given in (("must_link", must_link), ("cannot_link", cannot_link)):
                if is_unordered(given):
                    raise TypeError(
                        f"{name} is a set, which has no order, so per-pair weights cannot follow "
                        f"it; pass a list of pairs (e.g. sorted({name})) or one weight for all."
                    )
        ml = as_pair_array(must_link, "must_link")
        cl = as_pair_array(cannot_link, "cannot_link")
        n = int(max(ml.max(initial=-1), cl.max(initial=-1)) + 1) if n is None else _check_n(n)
        check_pairs_in_range(ml, int(n), "must_link")
        check_pairs_in_range(cl, int(n), "cannot_link")
        w = check_weights(weight, ml.shape[0] + cl.shape[0], "weight")
        kind = np.concatenate([np.full(ml.shape[0], MUST_LINK), np.full(cl.shape[0], CANNOT_LINK)])
        return cls(int(n), np.vstack([ml, cl]), kind, w, conflicts=conflicts)

    @classmethod
    def from_labels(cls, y: ArrayLike, weight: float | ArrayLike = 1.0, *, pairs: str = "all") -> Constraints:
        """Constraints implied by partial labels (``-1`` = unlabelled).

        Parameters
        ----------
        y : array-like of shape (n,)
            Integer class labels, ``-1`` for unlabelled points.
        pairs : {"all", "spanning"}, default="all"
            ``"all"``: every labelled pair (must-link within a class, cannot-link across).
            ``"spanning"``: a must-link chain per class and one cannot-link between the
            first members of every two classes: the same closure in ``O(L + c^2)`` pairs
            (a different energy).
        """
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D; got shape {y.shape}.")
        if y.dtype.kind not in "iu":
            if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
                y = y.astype(np.int64)
            else:
                raise TypeError("y must hold integer labels with -1 for unlabelled.")
        if np.any(y < -1):
            b = int(np.flatnonzero(y < -1)[0])
            raise ValueError(f"y has label {y[b]} at position {b}; labels are >= 0, -1 = unlabelled.")
        n = y.shape[0]
        idx = np.flatnonzero(y >= 0)
        if pairs == "all":
            a, b = np.triu_indices(idx.shape[0], k=1)
            pa, pb = idx[a], idx[b]
            kind = np.where(y[pa] == y[pb], MUST_LINK, CANNOT_LINK)
            pr = np.column_stack([pa, pb])
        elif pairs == "spanning":
            order = idx[np.argsort(y[idx], kind="stable")]
            ys = y[order]
            same = ys[1:] == ys[:-1]
            ml = np.column_stack([order[:-1][same], order[1:][same]])
            firsts = order[np.r_[True, ~same]] if order.size else order
            a, b = np.triu_indices(firsts.shape[0], k=1)
            cl = np.column_stack([firsts[a], firsts[b]])
            pr = np.vstack([ml, cl]).reshape(-1, 2)
            kind = np.r_[np.full(ml.shape[0], MUST_LINK), np.full(cl.shape[0], CANNOT_LINK)]
        else:
            raise ValueError(f"pairs must be 'all' or 'spanning'; got {pairs!r}.")
        return cls(n, pr, kind, weight)

    @classmethod
    def from_metric_learn(cls, pairs: PairsLike, y: ArrayLike | None, n: int | None = None,
                          weight: float | ArrayLike = 1.0, *, conflicts: str = "raise") -> Self:
        """Build from metric-learn's pair format: ``pairs`` (m, 2) indices and ``y`` in {-1, +1}.

        ``y = +1`` is a similar pair (must-link), ``y = -1`` dissimilar (cannot-link).
        """
        pr = as_pair_array(pairs, "pairs")
        lab = np.asarray(y).reshape(-1)
        if lab.shape[0] != pr.shape[0]:
            raise ValueError(f"pairs has {pr.shape[0]} rows but y has {lab.shape[0]} entries.")
        if pr.shape[0] and not np.all(np.isin(lab, (-1, 1))):
            b = int(np.flatnonzero(~np.isin(lab, (-1, 1)))[0])
            raise ValueError(f"y[{b}] is {lab[b]!r}; metric-learn pairs use +1 (similar) / -1 (dissimilar).")
        if n is None:
            n = int(pr.max(initial=-1) + 1)
        return cls(n, pr, lab.astype(np.int8), weight, conflicts=conflicts)

    @classmethod
    def from_networkx(cls, graph: nx.Graph, n: int | None = None, kind: str = "kind",
                      weight: str = "weight", *, conflicts: str = "raise") -> Self:
        """Build from a networkx graph whose edges carry a constraint kind.

        Parameters
        ----------
        graph : networkx.Graph or networkx.MultiGraph
            Nodes are integer point indices. Each edge's ``kind`` attribute is ``"must_link"``
            (``"ml"``, ``+1``, ``True``, ...) or ``"cannot_link"`` (``"cl"``, ``-1``, ``False``, ...).
        n : int, optional
            Number of points; defaults to ``1 + max node``.
        kind, weight : str
            Edge attribute names. A missing weight means 1.0.
        """
        rows, kinds, weights = [], [], []
        for e, (u, v, data) in enumerate(graph.edges(data=True)):
            if kind not in data:
                raise ValueError(f"edge #{e} ({u}, {v}) has no {kind!r} attribute.")
            code = parse_kind(data[kind])
            if code is None:
                raise ValueError(f"edge #{e} ({u}, {v}) has {kind}={data[kind]!r}; use 'must_link' or "
                                 "'cannot_link'.")
            rows.append((u, v))
            kinds.append(code)
            weights.append(data.get(weight, 1.0))
        pr = as_pair_array(rows, "graph edges")
        if n is None:
            nodes = list(graph.nodes)
            n = int(max(nodes) + 1) if nodes else 0
        w = check_weights(weights, len(weights), "edge weight")
        return cls(n, pr, np.asarray(kinds, dtype=np.int8), w, conflicts=conflicts)

    @classmethod
    def sample_from_labels(cls, y: ArrayLike, n_pairs: int, rng: RandomLike = None, *,
                           among: ArrayLike | None = None, weight: float | ArrayLike = 1.0) -> Self:
        """Random labelled pairs, the supervision of the thesis's experiments (§4.5.2).

        Draws ``n_pairs`` distinct pairs (at most all there are) uniformly among the
        points ``among`` (default: all; e.g. the training fold) and makes each a
        must-link if the two labels ``y`` agree, else a cannot-link. ``rng`` is a seed or
        Generator, as the estimators' ``random_state``.
        """
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D with one label per point; got shape {y.shape}.")
        if isinstance(n_pairs, (bool, np.bool_)) or not isinstance(n_pairs, numbers.Integral) \
                or n_pairs < 0:
            raise ValueError(f"n_pairs must be an integer >= 0; got {n_pairs!r}.")
        n = y.shape[0]
        rng = check_random_state(rng, "rng")
        if among is None:
            idx = np.arange(n)
        else:
            idx = np.unique(as_index_array(among, "among"))
            if idx.size and (idx[0] < 0 or idx[-1] >= n):
                bad = int(idx[0] if idx[0] < 0 else idx[-1])
                raise ValueError(f"among holds point index {bad} outside [0, {n - 1}] for n={n} points.")
        m = idx.shape[0]
        target = int(min(int(n_pairs), m * (m - 1) // 2))
        keys = np.empty(0, dtype=np.int64)
        while keys.shape[0] < target:
            need = 2 * (target - keys.shape[0]) + 8
            a, b = idx[rng.integers(m, size=need)], idx[rng.integers(m, size=need)]
            ok = a != b
            lo, hi = np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])
            keys = np.unique(np.r_[keys, lo * n + hi])
        if keys.shape[0] > target:
            keys = rng.choice(keys, size=target, replace=False)
        pairs = np.column_stack([keys // max(n, 1), keys % max(n, 1)])
        kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], MUST_LINK, CANNOT_LINK)
        return cls(n, pairs, kind, weight)

    @classmethod
    def grid(cls, shape: tuple[int, int], connectivity: int = 4, weight: float | ArrayLike = 1.0, *,
             image: ArrayLike | None = None, beta: float | None = None) -> Constraints:
        """Soft must-links between neighbouring pixels of an image: the Potts smoothness
        prior of MRF image segmentation, as HMRF constraints.

        Pixel ``(r, c)`` of an ``(h, w)`` image is point ``p = r * w + c`` (row-major, the
        order of ``image.reshape(h * w, -1)``). Each pixel is must-linked to its right and
        lower neighbours (4-connectivity), and with ``connectivity=8`` also to its two
        lower diagonal neighbours. The weight of the edge ``(p, q)`` is::

            w_pq = weight / dist(p, q)                                   (uniform)
            w_pq = weight · exp(-β ||I_p - I_q||²) / dist(p, q)          (``image`` given)

        with ``dist = 1`` for horizontal and vertical and ``√2`` for diagonal neighbours.

        Parameters
        ----------
        weight : float, default=1.0
            ``λ >= 0``, the cost of a label change between two horizontal or vertical
            neighbours of equal colour (``np.inf``: hard, without ``image``). It is
            multiplied by the estimator's ``w``.
        image : array-like of shape (h, w) or (h, w, channels), optional
            Grey levels or colours ``I``; given, the weights are contrast-sensitive, so
            a label boundary is cheap where the colour changes.
        beta : float, optional
            ``β >= 0`` of the contrast term; default ``1 / (2 ⟨||I_p - I_q||²⟩)``, the
            mean over the grid's edges (0 for an image of one colour).

        Returns
        -------
        Constraints
            ``h (w - 1) + (h - 1) w`` must-links, plus ``2 (h - 1)(w - 1)`` with
            ``connectivity=8``, sorted by ``(p, q)``.

        Notes
        -----
        The ``1 / dist`` factor is the Euclidean-length weighting of Boykov & Kolmogorov
        (2003, "Computing geodesics and minimal surfaces via graph cuts", ICCV, §3): a
        boundary costs about its length in any direction. The contrast term and ``β``
        are GrabCut's (Rother, Kolmogorov & Blake 2004, ACM SIGGRAPH, eq. 5).

        Examples
        --------
        >>> from hmrf import Constraints
        >>> c = Constraints.grid((2, 3))
        >>> c
        Constraints(n=6, must_link=7, cannot_link=0, hard=0)
        >>> c.pairs.tolist()
        [[0, 1], [0, 3], [1, 2], [1, 4], [2, 5], [3, 4], [4, 5]]
        """
        from ._grid import check_connectivity, check_image, check_shape, contrast_weights, grid_edges

        h, w = check_shape(shape)
        connectivity = check_connectivity(connectivity)
        if np.ndim(weight) != 0:
            raise ValueError(f"weight must be one number >= 0 (λ); got an array of shape {np.shape(weight)}.")
        lam = float(check_weights(weight, 1, "weight")[0])
        pairs, length = grid_edges(h, w, connectivity)
        if image is None:
            wt = lam / length
        else:
            if np.isinf(lam):
                raise ValueError("contrast-sensitive weights need a finite weight; got weight=inf.")
            wt = lam * contrast_weights(check_image(image, h, w), pairs, beta)[0] / length
        return cls._from_validated(h * w, pairs, np.full(pairs.shape[0], MUST_LINK, dtype=np.int8), wt)

    @classmethod
    def empty(cls, n: int) -> Self:
        """No constraints on ``n`` points."""
        return cls._from_validated(_check_n(n), np.empty((0, 2)), np.empty(0), np.empty(0))

    # ----------------------------------------------------------------- accessors
    @property
    def n(self) -> int:
        """Number of points the indices refer to."""
        return self._n

    @property
    def pairs(self) -> np.ndarray:
        """(m, 2) read-only array of pairs, ``i < j``, sorted."""
        return self._pairs

    @property
    def kind(self) -> np.ndarray:
        """(m,) read-only array: +1 must-link, -1 cannot-link."""
        return self._kind

    @property
    def weight(self) -> np.ndarray:
        """(m,) read-only array of violation costs (``inf`` = hard)."""
        return self._weight

    @property
    def is_hard(self) -> np.ndarray:
        """(m,) boolean mask of hard constraints."""
        return np.isinf(self._weight)

    @property
    def must_link(self) -> np.ndarray:
        """(m_ML, 2) must-link pairs."""
        return self._pairs[self._kind == MUST_LINK]

    @property
    def cannot_link(self) -> np.ndarray:
        """(m_CL, 2) cannot-link pairs."""
        return self._pairs[self._kind == CANNOT_LINK]

    @property
    def n_must_link(self) -> int:
        return int(np.count_nonzero(self._kind == MUST_LINK))

    @property
    def n_cannot_link(self) -> int:
        return int(np.count_nonzero(self._kind == CANNOT_LINK))

    @property
    def constrained_points(self) -> np.ndarray:
        """Sorted indices of points that appear in at least one constraint."""
        return np.unique(self._pairs)

    def __len__(self) -> int:
        return int(self._pairs.shape[0])

    def __repr__(self) -> str:
        return (
            f"Constraints(n={self._n}, must_link={self.n_must_link}, "
            f"cannot_link={self.n_cannot_link}, hard={int(self.is_hard.sum())})"
        )

    def __eq__(self, other) -> bool:
        if not isinstance(other, Constraints):
            return NotImplemented
        return (
            self._n == other._n
            and np.array_equal(self._pairs, other._pairs)
            and np.array_equal(self._kind, other._kind)
            and np.array_equal(self._weight, other._weight)
        )

    __hash__ = None

    def __iter__(self):
        """Iterate over ``(i, j, kind, weight)`` tuples."""
        for (i, j), k, w in zip(self._pairs.tolist(), self._kind.tolist(), self._weight.tolist()):
            yield i, j, k, w

    def __add__(self, other: Constraints) -> Constraints:
        """Union of two constraint sets on the same points (duplicates merged)."""
        if not isinstance(other, Constraints):
            return NotImplemented
        if other.n != self.n:
            raise ValueError(f"cannot combine constraints on {self.n} and {other.n} points.")
        return Constraints(
            self.n,
            np.vstack([self._pairs, other._pairs]),
            np.concatenate([self._kind, other._kind]),
            np.concatenate([self._weight, other._weight]),
        )

    # ---------------------------------------------------------- derived structure
    def component_labels(self, *, hard_only: bool = False) -> np.ndarray:
        """Must-link closure component of each point (n,); points with no must-link are
        their own component. ``hard_only``: of the hard must-links only (the components
        every feasible labelling keeps together)."""
        key = "hard_components" if hard_only else "components"
        if key not in self._cache:
            mask = self._kind == MUST_LINK
            if hard_only:
                mask &= self.is_hard
            labels = components(self._n, self._pairs[mask])
            labels.flags.writeable = False
            self._cache[key] = labels
        return self._cache[key]

    def _member_components(self, members) -> np.ndarray:
        """``component_labels()[members]`` for increasing ``members``, computed on the
        graph of the must-linked points alone when the (n,) labels are not cached (memory
        in the number of constrained points, not in n). Component numbers follow the
        smallest member, as in the whole graph, so their order is the same."""
        if "components" in self._cache:
            return self._cache["components"][members]
        ml = self._pairs[self._kind == MUST_LINK]
        nodes = np.union1d(members, ml.ravel())
        comp = components(nodes.shape[0], np.searchsorted(nodes, ml))
        return comp[np.searchsorted(nodes, members)]

    def neighborhoods(self, *, include_singletons: bool = False) -> list[np.ndarray]:
        """Neighbourhoods: components of the must-link closure (Basu 2005, §4.4.3), as
        sorted member indices, largest first (ties: smallest first member first).
        ``include_singletons``: also points that appear only in cannot-links."""
        members, starts, _ = self.neighborhood_layout(include_singletons=include_singletons)
        return np.split(members.copy(), starts[1:]) if members.size else []  # the layout is cached, read-only

    def neighborhood_layout(self, *, include_singletons: bool = False) -> tuple[NDArray[Any], NDArray[Any]]:
        """Neighbourhoods as flat arrays, in the order of :meth:`neighborhoods` (largest
        first, ties by first member).

        Returns
        -------
        members : ndarray (m,)
            Points grouped by neighbourhood, sorted within each.
        starts, sizes : ndarray (g,)
            Where each neighbourhood's members begin in ``members``, and how many.
        """
        key = "layout", include_singletons
        if key not in self._cache:  # O(constrained points): every start of a fit reads it
            layout = self._layout(include_singletons)
            for a in layout:
                a.flags.writeable = False
            self._cache[key] = layout
        return self._cache[key]

    def _layout(self, include_singletons):
        members = self.constrained_points if include_singletons else np.unique(self.must_link)
        if members.size == 0:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty, empty
        _, group = np.unique(self._member_components(members), return_inverse=True)
        n_groups = int(group.max()) + 1
        sizes = np.bincount(group, minlength=n_groups)
        first = np.full(n_groups, np.iinfo(np.int64).max)
        np.minimum.at(first, group, members)
        rank = np.empty(n_groups, dtype=np.int64)
        rank[np.lexsort((first, -sizes))] = np.arange(n_groups)  # largest first, ties by member
        order = np.lexsort((members, rank[group]))
        sizes = sizes[np.argsort(rank)]
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        return members[order].astype(np.int64), starts, sizes

    def inferred_cannot_links(self, *, include_singletons: bool = True) -> np.ndarray:
        """Pairs ``(p, p')``, ``p < p'``, sorted, of neighbourhoods (indices into
        ``self.neighborhoods(include_singletons=...)``) joined by at least one cannot-link,
        which implies cannot-links between all their members (Basu, Bilenko & Mooney
        2004, §3.1)."""
        members, starts, sizes = self.neighborhood_layout(include_singletons=include_singletons)
        which = np.full(self._n, -1, dtype=np.int64)
        which[members] = np.repeat(np.arange(sizes.size), sizes)
        cl = self.cannot_link
        a, b = which[cl[:, 0]], which[cl[:, 1]]
        ok = (a >= 0) & (b >= 0) & (a != b)
        q = np.sort(np.column_stack([a[ok], b[ok]]), axis=1)
        return np.unique(q, axis=0) if q.size else np.empty((0, 2), dtype=np.int64)

    def closure(self, weight: float | ArrayLike = 1.0, *, max_pairs: int = 10**7) -> Constraints:
        """All constraints implied by transitivity (Basu, Bilenko & Mooney 2004, §3.1).

        Must-links between every two points of a neighbourhood and cannot-links between
        every two points of neighbourhoods joined by a cannot-link. Pairs already present
        keep their weight; inferred pairs get ``weight`` (unit in the thesis, §4.5.2). A
        ``ValueError`` if the closure would exceed ``max_pairs`` pairs.
        """
        members, starts, sizes = self.neighborhood_layout(include_singletons=True)
        q = self.inferred_cannot_links()
        n_ml = sizes * (sizes - 1) // 2
        n_cl = sizes[q[:, 0]] * sizes[q[:, 1]]
        total = int(n_ml.sum() + n_cl.sum())
        if total > max_pairs:
            raise ValueError(f"the closure has {total} pairs, more than max_pairs={max_pairs}: a must-link "
                             "component of m points closes into m (m - 1) / 2 pairs. Fit the pairs as "
                             "given (the estimators' closure=False) or pass a larger max_pairs.")
        # must-links: for the member at position i of a neighbourhood, the members after it
        pos = np.arange(members.size)
        after = np.repeat(starts + sizes, sizes) - pos - 1
        first = np.repeat(pos, after)
        second = first + 1 + _ranks_within(after)
        new_ml = np.column_stack([members[first], members[second]])
        # cannot-links: every member of neighbourhood a against every member of b (a outer)
        t = _ranks_within(n_cl)
        size_b = np.repeat(sizes[q[:, 1]], n_cl)
        new_cl = np.column_stack([members[np.repeat(starts[q[:, 0]], n_cl) + t // np.maximum(size_b, 1)],
                                  members[np.repeat(starts[q[:, 1]], n_cl) + t % np.maximum(size_b, 1)]])
        pairs = np.vstack([new_ml, new_cl]).astype(np.int64)
        kind = np.r_[np.full(new_ml.shape[0], MUST_LINK), np.full(new_cl.shape[0], CANNOT_LINK)]
        pairs = np.sort(pairs, axis=1)
        # Keep existing weights; only genuinely new pairs get ``weight``.
        def keys(p, k):
            return (p[:, 0] * max(self._n, 1) + p[:, 1]) * 2 + (k == MUST_LINK)

        new_mask = ~np.isin(keys(pairs, kind), keys(self._pairs, self._kind))
        return self + Constraints(self._n, pairs[new_mask], kind[new_mask], weight, conflicts="soften")

    def violations(self, labels: NDArray[np.intp]) -> np.ndarray:
        """Boolean mask (m,) of the constraints a labelling violates."""
        labels = np.asarray(labels)
        if labels.shape != (self._n,):
            raise ValueError(f"labels must have shape ({self._n},); got {labels.shape}.")
        same = labels[self._pairs[:, 0]] == labels[self._pairs[:, 1]]
        return np.where(self._kind == MUST_LINK, ~same, same)

    def subset(self, indices: NDArray[np.intp]) -> Constraints:
        """Constraints among ``indices`` only, re-indexed to ``0..len(indices)-1``."""
        idx = as_index_array(indices, "indices")
        if idx.size and (idx.min() < 0 or idx.max() >= self._n):
            bad = int(idx[(idx < 0) | (idx >= self._n)][0])
            raise ValueError(f"indices holds point index {bad} outside [0, {self._n - 1}] for "
                             f"n={self._n} points.")
        if np.unique(idx).shape[0] != idx.shape[0]:
            raise ValueError("indices must be distinct point indices.")
        pos = np.full(self._n, -1, dtype=np.int64)
        pos[idx] = np.arange(idx.shape[0])
        a, b = pos[self._pairs[:, 0]], pos[self._pairs[:, 1]]
        keep = (a >= 0) & (b >= 0)
        pairs = np.column_stack([a[keep], b[keep]])
        return Constraints(idx.shape[0], pairs, self._kind[keep], self._weight[keep])

    def select(self, mask: ArrayLike | None) -> Constraints:
        """The constraints where ``mask`` (m,) is true, on the same points."""
        mask = np.asarray(mask, dtype=bool)
        return Constraints._from_validated(self._n, self._pairs[mask], self._kind[mask], self._weight[mask])

    def with_weight(self, weight: float) -> Constraints:
        """Same pairs with new weights (scalar or (m,))."""
        w = check_weights(weight, len(self), "weight")
        return Constraints(self._n, self._pairs, self._kind, w)

    def to_networkx(self) -> nx.MultiGraph:
        """The constraint graph as a :class:`networkx.MultiGraph`.

        Nodes ``0..n-1``; one edge per constraint with key ``"must_link"`` or
        ``"cannot_link"`` and attributes ``kind`` and ``weight``.
        """
        import networkx as nx

        g = nx.MultiGraph()
        g.add_nodes_from(range(self._n))
        for i, j, k, w in self:
            name = "must_link" if k == MUST_LINK else "cannot_link"
            g.add_edge(i, j, key=name, kind=name, weight=w)
        return g


def check_constraints(constraints: Constraints | None, n: int | None = None) -> None:
    """A ``TypeError`` unless ``constraints`` is a :class:`Constraints`, a ``ValueError``
    unless it is on ``n`` points (when ``n`` is given): the check of supervision given to
    an estimator or an :class:`~hmrf.HMRF`."""
    if not isinstance(constraints, Constraints):
        raise TypeError(f"constraints must be an hmrf.Constraints; got {type(constraints).__name__}.")
    if n is not None and constraints.n != n:
        raise ValueError(f"constraints refer to {constraints.n} points but X has {n} samples.")


def as_constraints(constraints: Constraints | None = None, must_link: PairsLike | None = None,
                   cannot_link: PairsLike | None = None, n: int | None = None,
                   weight: float | ArrayLike = 1.0) -> Constraints:
    """The supervision an estimator's ``fit`` takes, as one :class:`Constraints`: the
    ``constraints`` given (checked against ``n``), or the pair lists (each pair with
    ``weight``); both at once is an error rather than one of them silently ignored."""
    if constraints is not None:
        if must_link is not None or cannot_link is not None:
            raise ValueError("pass either constraints= or must_link=/cannot_link=, not both.")
        check_constraints(constraints, n)
        return constraints
    return Constraints.from_pairs(must_link, cannot_link, n=n, weight=weight)
