"""Random pairwise queries: the baseline of every active-learning comparison."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .base import ActiveSelector, _Closure, _Stop

if TYPE_CHECKING:
    from .._typing import RandomLike

__all__ = ["RandomPairs"]

_BATCH = 256
_TRIES = 8
_BLOCK = 512


class RandomPairs(ActiveSelector):
    """Uniformly random pairs neither asked before nor implied by the transitive closure
    of the answers: the "Random" policy of Xiong et al. (2014, §4.1.4) and the
    non-active baseline of Basu (2005, §5.5.2). As no implied pair is asked, even a
    noisy oracle gives no contradictory constraints.

    Pairs are drawn by rejection in batches of 256; after eight empty batches the
    remaining pairs are enumerated and one is drawn uniformly.
    """

    def __init__(self, *, random_state: RandomLike = None) -> None:
        self.random_state = random_state

    def _draw(self, clo: _Closure, rng) -> tuple[int, int]:
        n = clo.n
        for _ in range(_TRIES):
            a, b = rng.integers(n, size=_BATCH), rng.integers(n, size=_BATCH)
            keep = a != b
            lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
            ok = np.flatnonzero(clo.valid(lo, hi))
            if ok.size:
                return int(lo[ok[0]]), int(hi[ok[0]])
        found = []
        for r0 in range(0, n - 1, _BLOCK):
            rows = np.arange(r0, min(r0 + _BLOCK, n - 1))
            lo, hi = np.meshgrid(rows, np.arange(n), indexing="ij")
            upper = hi > lo
            lo, hi = lo[upper], hi[upper]
            ok = clo.valid(lo, hi)
            found.append(lo[ok] * n + hi[ok])
        keys = np.concatenate(found) if found else np.empty(0, dtype=np.int64)
        if keys.size == 0:
            raise _Stop("every pair is asked or implied")
        key = int(rng.choice(keys))
        return key // n, key % n

    def _select(self, state):
        if state.n < 2:
            raise _Stop("fewer than two points")
        clo = _Closure(state)
        while True:
            if not state.budget_left():
                raise _Stop("budget spent")
            i, j = self._draw(clo, state.rng)
            answer = state.ask(i, j)
            clo.update(i, j, answer)
