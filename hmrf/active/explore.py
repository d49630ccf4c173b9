"""EXPLORE and EXPLORE + CONSOLIDATE (Basu 2005, ch. 5, Figs. 5.1 and 5.2)."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from .base import ActiveSelector, _State

if TYPE_CHECKING:
    from .._typing import RandomLike
    from ..emissions.base import EmissionFamily

__all__ = ["Explore", "ExploreConsolidate"]


def _check_k(k, n, allow_none):
    if k is None and allow_none:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= n:
        raise ValueError(f"n_clusters must be an integer in [1, {n}]{' or None' * allow_none}; got {k!r}.")
    return int(k)


class Explore(ActiveSelector):
    """EXPLORE: farthest-first traversal until k neighbourhoods are found (Fig. 5.1).

    The first point is random and starts neighbourhood ``N_1``. Then, while queries
    are allowed and fewer than ``k`` neighbourhoods exist, the point farthest from the
    existing neighbourhoods is queried against one member of each neighbourhood,
    nearest neighbourhood centroid first: a must-link adds it to that neighbourhood,
    cannot-links to all start a new one.

    Parameters
    ----------
    n_clusters : int or None, default=None
        ``k``. ``None``: keep exploring while the budget lasts (thesis §5.4).
    emission : str, EmissionFamily or None, default=None
        Divergence used for distances (``None``: squared Euclidean; the thesis uses
        ``"cosine"`` for text, §5.5.1).
    random_state : int, RandomState, Generator or None, default=None
        Chooses the first point.

    Notes
    -----
    The distance of a point to the neighbourhoods is that to their nearest member,
    ``d(x, S) = min_{x' ∈ S} D(x, x')`` (§5.2); a point is paired with the member of
    each neighbourhood closest to it. A point answered "don't know" for some
    neighbourhood and cannot-linked to the others is set aside.

    References
    ----------
    Basu (2005), §5.2, Fig. 5.1, Appendix B.3; Basu, Banerjee & Mooney (SDM 2004).
    """

    _allow_unknown_k = True

    def __init__(self, n_clusters: int | None = None, *, emission: str | EmissionFamily | None = None,
                 random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.emission = emission
        self.random_state = random_state

    def _validate_params(self, n):
        self._k = _check_k(self.n_clusters, n, self._allow_unknown_k)

    def _explore(self, state: _State) -> None:
        if not state.hoods:
            state.seed()
        members = np.concatenate([np.asarray(h) for h in state.hoods])
        dmin = state.divergence_to_points(None, members).min(axis=1)
        k = self._k
        while k is None or len(state.hoods) < k:
            free = state.free_points()
            x = int(free[np.argmax(dmin[free])])
            outcome = state.resolve(x, state.order_by_centroid(x))
            if outcome != "skipped":
                np.minimum(dmin, state.divergence_to_points(None, [x])[:, 0], out=dmin)

    def _select(self, state):
        self._explore(state)
        state.stop_reason = f"found {len(state.hoods)} neighbourhoods"


class ExploreConsolidate(Explore):
    """EXPLORE, then CONSOLIDATE with the remaining queries (Figs. 5.1 and 5.2).

    Once ``k`` neighbourhoods exist, CONSOLIDATE repeatedly takes a random point not
    in any neighbourhood and queries it against the neighbourhoods in increasing
    divergence of their centroids from it until a must-link is found. After ``k - 1``
    cannot-links the ``k``-th neighbourhood is inferred without a query, so a point
    costs at most ``k - 1`` queries (thesis §5.3).

    Parameters are those of :class:`Explore`; ``n_clusters`` must be an integer (default
    3), not ``None``.

    Notes
    -----
    Centroids are the family's M-step of the members. The inferred must-link (point,
    nearest member of the last neighbourhood) is in ``constraints_`` and ``inferred_``.
    After a "don't know" the last neighbourhood is not inferred.

    References
    ----------
    Basu (2005), §5.3–5.4, Fig. 5.2, Appendix B.3.
    """

    _allow_unknown_k = False

    def __init__(self, n_clusters: int = 3, *, emission: str | EmissionFamily | None = None,
                 random_state: RandomLike = None) -> None:
        super().__init__(n_clusters, emission=emission, random_state=random_state)

    def _pick(self, state: _State, free: np.ndarray) -> int:
        """A random point not in a neighbourhood (the random sampling of §5.4)."""
        return int(state.rng.choice(free))

    def _start_consolidate(self, state: _State) -> None:
        """Hook: called once when CONSOLIDATE begins."""

    def _placed(self, state: _State, x: int) -> None:
        """Hook: ``x`` joined a neighbourhood."""

    def _select(self, state):
        self._explore(state)
        self._start_consolidate(state)
        while True:
            free = state.free_points()
            x = self._pick(state, free)
            infer = len(state.hoods) == self._k
            if state.resolve(x, state.order_by_centroid(x), infer_last=infer) != "skipped":
                self._placed(state, x)
