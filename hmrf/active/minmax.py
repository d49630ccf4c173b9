"""Min-Max consolidation (Mallapragada, Jin & Jain, ICPR 2008; Švehla 2018, §3.1.2)."""

from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING

import numpy as np

from .._validation import Interval, validate_params
from .base import _State
from .explore import ExploreConsolidate

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._typing import RandomLike
    from ..emissions.base import EmissionFamily

__all__ = ["MinMax", "kernel_width"]

#: Above this many points σ is estimated on a random subset of this size.
_MAX_EXACT = 2000
_BLOCK = 512


def kernel_width(divergence: Callable[..., Any], n: int, percentile: float = 20.0,
                 rng: RandomLike = None) -> float:
    """``σ``: the ``percentile``-th percentile of ``sqrt(D(x_i, x_j))`` over the ordered
    pairs ``i ≠ j`` (of 2000 points drawn by ``rng`` when ``n > 2000``), with
    ``divergence(rows, cols) -> (len(rows), len(cols))``; 1.0 if all are zero."""
    if n < 2:
        return 1.0
    idx = np.arange(n)
    if n > _MAX_EXACT:
        idx = np.sort(np.random.default_rng(rng).choice(n, size=_MAX_EXACT, replace=False))
    vals = []
    for r0 in range(0, idx.size, _BLOCK):
        rows = idx[r0 : r0 + _BLOCK]
        D = np.asarray(divergence(rows, idx), dtype=np.float64)
        off = np.ones(D.shape, dtype=bool)
        off[np.arange(rows.size), np.arange(r0, r0 + rows.size)] = False  # the diagonal
        vals.append(D[off])
    d = np.sqrt(np.maximum(np.concatenate(vals), 0.0))
    sigma = float(np.percentile(d, percentile))
    return sigma if sigma > 0 else 1.0


class MinMax(ExploreConsolidate):
    """EXPLORE, then consolidation by the Min-Max criterion.

    After EXPLORE has found ``k`` neighbourhoods, each step queries the point least
    similar to the skeleton ``X_s`` (all points in neighbourhoods):

    ``x* = argmin_{x ∉ X_s} max_{x_j ∈ X_s} s(x, x_j)``,
    ``s(x, x') = exp(-D(x, x') / (2 σ²))``,

    with ``D`` the emission's divergence (``||x - x'||²`` for squared Euclidean, the
    Gaussian kernel of Švehla 2018, §3.1.2) and ``σ`` the ``percentile``-th percentile
    of the pairwise distances ``sqrt(D)`` over all pairs ``i ≠ j`` (of 2,000 points drawn
    at random when there are more: :func:`kernel_width`). The point is then
    placed as in CONSOLIDATE: neighbourhoods by centroid distance, at most ``k - 1``
    queries, the last neighbourhood inferred.

    Parameters are those of :class:`~hmrf.active.ExploreConsolidate`, and
    ``percentile``, of the pairwise distances used as the kernel width σ (``sigma_``).

    Notes
    -----
    As the kernel decreases with ``D``, the point chosen is the farthest from the
    skeleton in EXPLORE's sense; σ matters only where the kernel underflows to 0, where
    ties go to the smallest index.

    References
    ----------
    P. Mallapragada, R. Jin & A. Jain (2008), "Active query selection for
    semi-supervised clustering", ICPR. Švehla (2018), §3.1.2. Xiong et al. (2014), §4.1.4.
    """

    _parameter_constraints = {"percentile": [Interval(Real, 0, 100, closed="right")]}

    def __init__(self, n_clusters: int = 3, *, percentile: float = 20.0,
                 emission: str | EmissionFamily | None = None,
                 random_state: RandomLike = None) -> None:
        super().__init__(n_clusters, emission=emission, random_state=random_state)
        self.percentile = percentile

    def _validate_params(self, n):
        super()._validate_params(n)
        validate_params(self)

    def _similarity(self, state: _State, idx) -> np.ndarray:
        D = state.divergence_to_points(None, idx)
        with np.errstate(under="ignore"):
            return np.exp(-D / (2.0 * self.sigma_**2))

    def _start_consolidate(self, state):
        self.sigma_ = kernel_width(state.divergence_to_points, state.n, float(self.percentile), state.rng)
        skeleton = np.concatenate([np.asarray(h) for h in state.hoods])
        self._maxsim = np.zeros(state.n)
        for s in range(0, skeleton.size, _BLOCK):
            np.maximum(
                self._maxsim,
                self._similarity(state, skeleton[s : s + _BLOCK]).max(axis=1),
                out=self._maxsim,
            )

    def _pick(self, state, free):
        return int(free[np.argmin(self._maxsim[free])])

    def _placed(self, state, x):
        np.maximum(self._maxsim, self._similarity(state, [x])[:, 0], out=self._maxsim)
