"""Compiled kernels of the sparse pass (numba): CSR rows against dense centres.

:func:`linear_rows` computes, for a range of rows of a CSR matrix, each row's products
with the k columns of a :class:`~hmrf.emissions.base.LinearCosts` form, its argmin
label, its minimum cost, the cost of its previous label, the whole cost row of a
constrained point and, when asked, adds the row into its cluster's sums: one pass over
the row's stored entries, with O(k) temporaries. :func:`add_rows_of` adds rows into their
clusters' sums for the clusters of one part (the statistics of a threaded pass, split by
cluster so that no thread has a (k, d) buffer of its own and every sum is added in row
order whatever the number of threads).

Their NumPy twins are :func:`hmrf.em.sparse.linear_block_numpy` (a sparse-dense product
and vectorised reductions) and :meth:`hmrf.emissions.stats.ClusterStats.from_data`;
``tests/test_sparse_pass.py`` checks that both give the same labels, the same costs bit
for bit and the same sums.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["linear_rows", "add_rows_of"]


@numba.njit(cache=True, nogil=True)
def linear_rows(start, stop, indptr, indices, data, W, bias, offset, scale, scaled, clip,  # pragma: no cover
                row_terms, clamped, previous, constrained, labels, mins, crows, sums, second):
    """Rows ``start:stop`` of the CSR matrix ``(indptr, indices, data)``.

    ``U[i, h] = scale_h · min(max(a_i + (bias_h + Σ_p data_p W[indices_p, h]), clip[0]),
    clip[1]) + offset_h`` with ``a_i = row_terms[i - start]``; every array but the
    outputs is in the data's precision, and so is the arithmetic (the dot products are
    summed in the order of the stored entries). The label is the first minimiser of
    ``bias_h + Σ_p ... + offset_h`` when ``scaled`` is false (the clip and ``a_i`` change
    no comparison), else of ``U``; a row with ``clamped >= 0`` takes that label (its
    other costs are infinite). Outputs, indexed by ``i - start``: ``labels`` (int64),
    ``mins`` (float64), ``crows`` (the float64 cost rows of the rows with
    ``constrained`` true, in row order); when ``sums`` has rows, ``sums[label] += row``
    and ``second[label] += ||row||²`` (if ``second`` has entries). Empty ``clamped``,
    ``previous``, ``constrained`` mean none. Returns ``Σ U[i, previous_i]`` (float64).
    """
    k = W.shape[1]
    has_clamped = clamped.shape[0] > 0
    has_previous = previous.shape[0] > 0
    has_constrained = constrained.shape[0] > 0
    accumulate = sums.shape[0] > 0
    has_second = second.shape[0] > 0
    lo = clip[0]
    hi = clip[1]
    acc = np.empty_like(bias)
    total = 0.0
    nc = 0
    for i in range(start, stop):
        r = i - start
        for h in range(k):
            acc[h] = 0
        p0 = indptr[i]
        p1 = indptr[i + 1]
        for p in range(p0, p1):
            v = data[p]
            f = indices[p]
            for h in range(k):
                acc[h] += v * W[f, h]
        for h in range(k):
            acc[h] = bias[h] + acc[h]
        a = row_terms[r]
        c = clamped[r] if has_clamped else -1
        if c >= 0:
            arg = c
        else:
            arg = 0
            best = np.inf
            for h in range(k):
                if scaled:
                    key = scale[h] * min(max(a + acc[h], lo), hi) + offset[h]
                else:
                    key = acc[h] + offset[h]
                if key < best:
                    best = key
                    arg = h
        labels[r] = arg
        mins[r] = np.float64(scale[arg] * min(max(a + acc[arg], lo), hi) + offset[arg])
        if has_previous:
            q = previous[r]
            if c >= 0 and q != c:
                total += np.inf
            else:
                total += np.float64(scale[q] * min(max(a + acc[q], lo), hi) + offset[q])
        if has_constrained and constrained[r]:
            for h in range(k):
                if c >= 0 and h != c:
                    crows[nc, h] = np.inf
                else:
                    crows[nc, h] = np.float64(scale[h] * min(max(a + acc[h], lo), hi) + offset[h])
            nc += 1
        if accumulate:
            sq = 0.0
            for p in range(p0, p1):
                v = np.float64(data[p])
                sums[arg, indices[p]] += v
                sq += v * v
            if has_second:
                second[arg] += sq
    return total


@numba.njit(cache=True, nogil=True)
def add_rows_of(indptr, indices, data, labels, owner, part, sums, second):  # pragma: no cover - compiled
    """``sums[labels[i]] += row i`` (and ``second[labels[i]] += ||row i||²`` when
    ``second`` has entries) for the rows whose cluster has ``owner[labels[i]] == part``,
    in row order; float64 sums."""
    has_second = second.shape[0] > 0
    for i in range(labels.shape[0]):
        h = labels[i]
        if owner[h] != part:
            continue
        sq = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = np.float64(data[p])
            sums[h, indices[p]] += v
            sq += v * v
        if has_second:
            second[h] += sq
