"""Compiled row accumulation for :func:`hmrf.emissions.stats.group_sums` (numba).

Adding each row of a dense block to its group's sum is one pass over the block in
compiled code; NumPy has no vectorised form of it that is not either a dense
(groups x rows) indicator product (k times the arithmetic) or ``np.add.at`` (slow). Its
NumPy twin is the sparse-indicator product in ``group_sums``, which computes the same
sums; ``tests/test_em_passes.py`` checks that they agree. :func:`add_centred_squares`
adds ``(x - c)∘(x - c)`` the same way (the diagonal second moment, without the two
(rows x d) temporaries of its NumPy twin in ``stats._second_moment``).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["add_rows", "add_centred_squares"]


@numba.njit(cache=True, nogil=True)
def add_rows(X, groups, out):  # pragma: no cover - compiled
    """``out[groups[i]] += X[i]`` for every row ``i`` (out is float64, X float32 or 64)."""
    n, d = X.shape
    for i in range(n):
        g = groups[i]
        for f in range(d):
            out[g, f] += X[i, f]


@numba.njit(cache=True, nogil=True)
def add_centred_squares(X, shift, groups, out):  # pragma: no cover - compiled
    """``out[groups[i]] += (X[i] - shift)²`` elementwise for every row ``i`` (float64)."""
    n, d = X.shape
    for i in range(n):
        g = groups[i]
        for f in range(d):
            z = np.float64(X[i, f]) - shift[f]
            out[g, f] += z * z
