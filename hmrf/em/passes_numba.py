"""Compiled kernels of the E-step pass (numba).

:func:`linear_rows` is the pass of every family whose unary costs are linear in the point
(:class:`~hmrf.emissions.base.LinearCosts`), for dense rows (one GEMM per sub-block of
``SUB_BLOCK`` rows) and CSR rows (the products of each row's stored entries): per row the
argmin label, the minimum cost, the previous label's cost, the cost row of a constrained
point and, when asked, the row added into its cluster's statistics while the sub-block is
in cache. :func:`reduce_rows` reduces a block of unary costs of any other family.
Their NumPy oracles are in ``tests/oracles/passes_numpy.py``.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["linear_rows", "reduce_rows", "SUB_BLOCK"]

#: Dense rows per GEMM of :func:`linear_rows`: the sub-block (``SUB_BLOCK x d``) stays in
#: the core's L2 cache between the GEMM and the statistics (scikit-learn's Lloyd chunks
#: are as large).
SUB_BLOCK = 256


@numba.njit(cache=True, nogil=True)
def reduce_rows(U, previous, labels, mins):  # pragma: no cover - compiled
    """``labels[i] = argmin_h U[i, h]`` (the first minimiser; the first NaN if any, as
    ``np.argmin``), ``mins[i] = U[i, labels[i]]`` (float64); returns ``Σ_i U[i, previous_i]``
    (float64; 0 when ``previous`` is empty)."""
    n, k = U.shape
    total = 0.0
    for i in range(n):
        best = U[i, 0]
        arg = 0
        for h in range(1, k):
            v = U[i, h]
            if v < best or (v != v and best == best):
                best = v
                arg = h
        labels[i] = arg
        mins[i] = best
        if previous.shape[0] > 0:
            total += np.float64(U[i, previous[i]])
    return total


@numba.njit(cache=True, nogil=True)
def linear_rows(start, stop, dense, indptr, indices, data, W, bias, offset, scale,  # pragma: no cover
                scaled, clip, row_terms, clamped, previous, constrained, shift, labels, mins, crows, sums,
                second):
    """Rows ``start:stop`` of dense ``dense`` (n, d), or of the CSR matrix ``(indptr,
    indices, data)`` when ``indptr`` has entries.

    ``U[i, h] = scale_h · min(max(a_i + (bias_h + <x_i, W[:, h]>), clip[0]), clip[1]) +
    offset_h`` with ``a_i = row_terms[i - start]``, in the data's precision (a CSR row's
    products summed in the order of its stored entries). The label is the first minimiser
    of ``bias_h + <x_i, W[:, h]> + offset_h`` when ``scaled`` is false (``a_i`` and the
    clip change no comparison), else of ``U``; a row with ``clamped >= 0`` takes that
    label (its other costs are infinite). Outputs, indexed by ``i - start``: ``labels``
    (int64), ``mins`` (float64), ``crows`` (the float64 cost rows of the rows with
    ``constrained`` true, in row order); when ``sums`` has rows, ``sums[label] += x_i``
    and ``second[label] += ||x_i - shift||²`` (if ``second`` has entries; ``shift`` empty
    means 0), in float64. Empty ``clamped``, ``previous``, ``constrained`` mean none.
    Returns ``Σ U[i, previous_i]`` (float64).
    """
    k = W.shape[1]
    d = W.shape[0]
    csr = indptr.shape[0] > 0
    has_clamped = clamped.shape[0] > 0
    has_previous = previous.shape[0] > 0
    has_constrained = constrained.shape[0] > 0
    accumulate = sums.shape[0] > 0
    has_second = second.shape[0] > 0
    has_shift = shift.shape[0] > 0
    lo = clip[0]
    hi = clip[1]
    block = np.empty((SUB_BLOCK, k), dtype=W.dtype)
    total = 0.0
    nc = 0
    for s in range(start, stop, SUB_BLOCK):
        e = min(s + SUB_BLOCK, stop)
        if not csr:
            rows = np.ascontiguousarray(dense[s:e])  # a view of C-ordered data, else a copy of the sub-block
            np.dot(rows, W, block[:e - s])
        for i in range(s, e):
            # a CSR row's products are formed in place; the bias is added where a cost is
            # read, not written back into the block (a store per cost the loop never needs)
            acc = block[0] if csr else block[i - s]
            if csr:
                acc[:] = 0
                for p in range(indptr[i], indptr[i + 1]):
                    v = data[p]
                    f = indices[p]
                    for h in range(k):
                        acc[h] += v * W[f, h]
            r = i - start
            a = row_terms[r]
            c = clamped[r] if has_clamped else -1
            if c >= 0:
                arg = c
            else:
                arg = 0
                best = np.inf
                for h in range(k):
                    if scaled:
                        key = scale[h] * min(max(a + (bias[h] + acc[h]), lo), hi) + offset[h]
                    else:
                        key = (bias[h] + acc[h]) + offset[h]
                    if key < best:
                        best = key
                        arg = h
            labels[r] = arg
            mins[r] = np.float64(scale[arg] * min(max(a + (bias[arg] + acc[arg]), lo), hi) + offset[arg])
            if has_previous:
                q = previous[r]
                if c >= 0 and q != c:
                    total += np.inf
                else:
                    total += np.float64(scale[q] * min(max(a + (bias[q] + acc[q]), lo), hi) + offset[q])
            if has_constrained and constrained[r]:
                for h in range(k):
                    if c >= 0 and h != c:
                        crows[nc, h] = np.inf
                    else:
                        crows[nc, h] = np.float64(
                            scale[h] * min(max(a + (bias[h] + acc[h]), lo), hi) + offset[h])
                nc += 1
            if accumulate:
                sq = 0.0
                if csr:
                    for p in range(indptr[i], indptr[i + 1]):
                        v = np.float64(data[p])
                        sums[arg, indices[p]] += v
                        sq += v * v
                else:
                    x = rows[i - s]
                    for f in range(d):
                        sums[arg, f] += x[f]
                    if has_second:
                        for f in range(d):
                            z = np.float64(x[f]) - (shift[f] if has_shift else 0.0)
                            sq += z * z
                if has_second:
                    second[arg] += sq
    return total
