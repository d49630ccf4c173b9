"""Compiled row reduction of the E-step pass (numba): argmin, minimum and the cost of the
previous labels, in one pass over a block of unary costs.

Its NumPy twin is :func:`hmrf.inference.base.argmin_rows` plus one gather for the
previous labels' costs (four passes over the block); ``tests/test_em_passes.py`` checks that
both give the same labels (first minimiser), minima and sums.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["reduce_rows"]


@numba.njit(cache=True, nogil=True)
def reduce_rows(U, previous, has_previous, labels, mins):  # pragma: no cover - compiled
    """Row argmin into ``labels``, row minimum into ``mins``; returns ``Σ U[i, previous[i]]``
    (float64; 0 when ``has_previous`` is false) and the first row holding a NaN (-1 if
    none)."""
    n, k = U.shape
    total = 0.0
    nan_row = -1
    for i in range(n):
        best = U[i, 0]
        arg = 0
        for h in range(1, k):
            v = U[i, h]
            if v < best:
                best = v
                arg = h
            elif v != v and nan_row < 0:
                nan_row = i
        if best != best and nan_row < 0:
            nan_row = i
        labels[i] = arg
        mins[i] = best
        if has_previous:
            total += np.float64(U[i, previous[i]])
    return total, nan_row
