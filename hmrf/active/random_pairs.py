"""Random pairwise queries: the baseline of every active-learning comparison."""

from __future__ import annotations

import numpy as np

from .base import ActiveSelector, _State, _Stop

__all__ = ["RandomPairs"]

_BATCH = 256
_TRIES = 8
_BLOCK = 512


class _Closure:
    """Must-link components and the cannot-links between them, updated per answer."""

    def __init__(self, state: _State):
        n = state.n
        self.n = n
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

    def update(self, i, j, answer):
        ci, cj = int(self.comp[i]), int(self.comp[j])
        if answer is True:
            self.comp[self.comp == cj] = ci  # merge component cj into ci

            def rename(c):
                return ci if c == cj else c

            self.cl = {(min(rename(u), rename(v)), max(rename(u), rename(v))) for u, v in self.cl}
        elif answer is False:
            self.cl.add((min(ci, cj), max(ci, cj)))
        self._refresh()


class RandomPairs(ActiveSelector):
    """Uniformly random pairs not already asked and not implied by the answers so far.

    The "Random" policy of Xiong et al. (2014, §4.1.4): each query is drawn uniformly
    among the pairs that are neither asked before (including "don't know" answers)
    nor implied by the transitive closure of the constraints known so far (same
    must-link component, or components joined by a cannot-link). Selection stops
    when the budget is spent or no such pair is left.

    Parameters
    ----------
    random_state : int, RandomState, Generator or None, default=None

    Notes
    -----
    Pairs are drawn by rejection, in vectorised batches of 256; if eight batches find
    nothing (almost every pair is implied) the remaining pairs are enumerated exactly,
    in row blocks, and one is drawn uniformly — or selection stops if there is none.
    Since no implied pair is ever asked, even a noisy oracle cannot produce
    contradictory constraints.

    References
    ----------
    Basu (2005), §5.5.2 (the non-active baseline); Xiong, Azimi & Fern (2014), §4.1.4.
    """

    def __init__(self, *, random_state=None):
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
