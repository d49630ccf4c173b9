"""NumPy oracles of the compiled kernels of the E-step pass and the cluster statistics
(``hmrf.em.passes_numba``, ``hmrf.emissions.stats_numba``): the same results from
vectorised NumPy and scipy.sparse, in the same precision and, where the tests compare
bits, the same order of additions."""

import numpy as np
import scipy.sparse as sp


def reduce_rows(U, previous=None):
    """``hmrf.em.passes.reduce_rows``: row argmin (first minimiser, first NaN), minimum
    and ``Σ U[i, previous_i]`` added left to right."""
    n = U.shape[0]
    labels = np.argmin(U, axis=1).astype(np.int64)
    mins = U[np.arange(n), labels].astype(np.float64)
    total = 0.0
    if previous is not None and n:
        total = float(np.cumsum(U[np.arange(n), previous].astype(np.float64))[-1])
    return labels, mins, total


def linear_block(X, form, row_terms=None, clamped=None, previous=None, constrained=None):
    """``hmrf.em.passes.linear_block`` on all rows of dense or CSR ``X`` (no statistics):
    the product ``X @ W`` (scipy adds each CSR row's entries in stored order, as the
    kernel does) and the same elementwise formula in the same precision and order of
    operations."""
    b, k = X.shape[0], form.weights.shape[1]
    dt = form.weights.dtype
    t = np.asarray(X @ form.weights, dtype=dt) + form.bias[None, :]
    a = np.zeros(b, dtype=dt) if row_terms is None else np.asarray(row_terms, dtype=dt)
    scale = np.ones(k, dtype=dt) if form.scale is None else form.scale
    U = scale[None, :] * np.minimum(np.maximum(a[:, None] + t, dt.type(form.lo)), dt.type(form.hi)) \
        + form.offset[None, :]
    key = U if form.scale is not None else t + form.offset[None, :]
    labels = np.argmin(key, axis=1).astype(np.int64)
    U = U.astype(np.float64)
    if clamped is not None:
        c = np.asarray(clamped, dtype=np.int64)
        fixed = np.flatnonzero(c >= 0)
        labels[fixed] = c[fixed]
        keep = U[fixed, c[fixed]].copy()
        U[fixed] = np.inf
        U[fixed, c[fixed]] = keep
    mins = U[np.arange(b), labels]
    total = 0.0
    if previous is not None and b:
        total = float(np.cumsum(U[np.arange(b), np.asarray(previous, dtype=np.int64)])[-1])
    rows = U[np.asarray(constrained, dtype=bool)] if constrained is not None else np.empty((0, k))
    return labels, mins, total, rows


def group_sums(X, groups, n_groups):
    """``hmrf.emissions.stats.group_sums``: the product of a sparse (n_groups, n)
    indicator with ``X``."""
    n = X.shape[0]
    R = sp.csr_matrix((np.ones(n), (np.asarray(groups), np.arange(n))), shape=(n_groups, n))
    out = R @ X
    return np.asarray(out.toarray() if sp.issparse(out) else out, dtype=np.float64)


def centred_squares(X, shift, groups, n_groups):
    """``Σ_{i in g} (x_i - shift)∘(x_i - shift)``: a centred float64 copy, its squares,
    their group sums."""
    Z = np.asarray(X, dtype=np.float64) - shift[None, :]
    return group_sums(Z * Z, groups, n_groups)
