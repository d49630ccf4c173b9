"""Compiled row accumulation of the cluster statistics (numba): each row added into its
group's sums in one pass over the rows (dense) or their stored entries (CSR), with no
(groups x rows) indicator and no (rows x d) temporary. Their NumPy oracles are in
``tests/oracles/passes_numpy.py``.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["add_rows", "add_csr_rows", "add_centred_squares"]


@numba.njit(cache=True, nogil=True)
def add_rows(X, groups, out):  # pragma: no cover - compiled
    """``out[groups[i]] += X[i]`` for every row ``i`` (``out`` float64)."""
    n, d = X.shape
    for i in range(n):
        g = groups[i]
        for f in range(d):
            out[g, f] += X[i, f]


@numba.njit(cache=True, nogil=True)
def add_csr_rows(indptr, indices, data, groups, owner, part, out, second):  # pragma: no cover - compiled
    """``out[groups[i]] += row i`` of the CSR matrix ``(indptr, indices, data)`` (and
    ``second[groups[i]] += ||row i||²`` when ``second`` has entries) for the rows whose
    group has ``owner[groups[i]] == part``, in row order; float64 sums."""
    has_second = second.shape[0] > 0
    for i in range(groups.shape[0]):
        g = groups[i]
        if owner[g] != part:
            continue
        sq = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = np.float64(data[p])
            out[g, indices[p]] += v
            sq += v * v
        if has_second:
            second[g] += sq


@numba.njit(cache=True, nogil=True)
def add_centred_squares(X, shift, groups, out):  # pragma: no cover - compiled
    """``out[groups[i]] += (X[i] - shift)²`` elementwise for every row ``i`` (float64)."""
    n, d = X.shape
    for i in range(n):
        g = groups[i]
        for f in range(d):
            z = np.float64(X[i, f]) - shift[f]
            out[g, f] += z * z
