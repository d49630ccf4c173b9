"""The pass over sparse data: CSR rows against dense centres, in one compiled sweep.

For text (TF-IDF or counts: d ~ 10^4-10^5 features, ~10^2 stored entries a row) the
unary costs of every family the sparse path serves are linear in the point
(:class:`~hmrf.emissions.base.LinearCosts`: squared Euclidean, cosine/vMF, KL,
I-divergence, with either normaliser). So each row needs only the products of its stored
entries with the k centre columns: with the columns stored as a (d, k) array, every
stored entry reads one contiguous k-vector, and the row's argmin label, minimum cost,
previous label's cost and (for a constrained point) whole cost row follow from the k
sums at once, before the next row (``hmrf.em.sparse_numba.linear_rows``). No (rows x
d) block is ever formed and the only (rows x k) temporaries are the cost rows of the
constrained points, which the inference engine needs.

scikit-learn's sparse Lloyd kernel (``_k_means_lloyd.pyx``) computes the same products
cluster by cluster, gathering ``c_h[f]`` from k rows of the (k, d) centres for every
stored entry; reading one k-vector instead touches k/8 cache lines instead of k. Like
it, the argmin of squared Euclidean costs is taken on ``||μ_h||² - 2 <x, μ_h>`` (the
``||x||²`` term and the clip at 0 change no comparison), summed in the same order, so
the two agree label for label from the same centres.

The in-memory pass (:func:`sparse_assignment_pass`) runs row blocks of about equal
numbers of stored entries on the pass's thread pool (:func:`hmrf.em.passes.run_blocks`),
then adds each row into its cluster's sums with the clusters split between threads
(``hmrf.em.sparse_numba.add_rows_of``): every sum is added in row order, so the
number of threads changes no bit of the result, and no thread holds a (k, d) buffer of
its own. A block of a Dask array (or any caller of
:func:`hmrf.em.passes.assign_block`) does both in one sweep (:func:`sparse_assign_block`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .._optional import available
from ..emissions.base import EmissionFamily
from ..emissions.stats import ClusterStats

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import DTypeLike, NDArray
    from scipy import sparse

    from .._typing import MatrixLike
    from ..emissions.base import EmissionParams, LinearCosts
    from ..model import HMRF
    from .passes import AssignmentPass, BlockResult

__all__ = ["linear_form", "linear_block", "linear_block_numpy", "fused_second_moment",
           "sparse_assign_block", "sparse_assignment_pass", "sparse_labels", "sparse_row_blocks",
           "cluster_sums_by_part", "BLOCK_NNZ"]

#: Stored entries per row block of the in-memory pass: enough that a block's work (k
#: multiply-adds an entry) dwarfs the cost of handing it to a thread.
BLOCK_NNZ = 2**17

_NUMBA = {}


def _kernels():
    """The compiled kernels ``(linear_rows, add_rows_of)``, or ``None`` without numba."""
    if "k" not in _NUMBA:
        _NUMBA["k"] = None
        if available("numba"):
            from .sparse_numba import add_rows_of, linear_rows
            _NUMBA["k"] = (linear_rows, add_rows_of)
    return _NUMBA["k"]


def linear_form(family: EmissionFamily, params: EmissionParams, normalizer: str,
                dtype: DTypeLike) -> LinearCosts | None:
    """The family's :class:`~hmrf.emissions.base.LinearCosts` in ``dtype`` with the
    mixing weights' ``-log π_h`` (when ``params`` has them) in the offset, or ``None``."""
    form = family.linear_costs(params, normalizer, np.dtype(dtype))
    if form is not None and params.weights is not None:
        with np.errstate(divide="ignore"):
            form = form.with_offset(-np.log(params.weights))
    return form


def fused_second_moment(family: EmissionFamily, normalizer: str) -> tuple[Any, Any]:
    """``(True, kind)`` when the family's statistics are the default counts and sums with
    no second moment or the ``"norm"`` one (what the compiled sweep adds up), else
    ``(False, None)``."""
    kind = family.second_moment(normalizer)
    ok = type(family).statistics is EmissionFamily.statistics and kind in (None, "norm")
    return ok, (kind if ok else None)


def _as_csr(X):
    """``X`` in CSR format (stored entries in their order: the order of the sums)."""
    return X if X.format == "csr" else sp.csr_matrix(X)


def _empty(dtype=np.float64):
    return np.empty(0, dtype=dtype)


def linear_block(X: sparse.csr_matrix, form: LinearCosts, rows: NDArray[np.intp] | None = None,
                 row_terms: NDArray[Any] | None = None, clamped: NDArray[Any] | None = None,
                 previous: NDArray[Any] | None = None, constrained: NDArray[Any] | None = None,
                 sums: NDArray[np.float64] | None = None,
                 second: Any = None,
                 ) -> tuple[NDArray[np.int64], NDArray[np.float64], float, NDArray[np.float64]]:
    """The compiled sweep over the rows ``rows`` (a slice; all by default) of CSR ``X``.

    Parameters
    ----------
    X : csr_matrix (n, d)
    form : LinearCosts
    rows : slice, optional
    row_terms, clamped, previous, constrained : ndarray (b,), optional
        Per-row data terms ``a_i``, fixed labels (-1 free), previous labels, and which
        rows are constrained, for the rows of the block.
    sums : ndarray (k, d) float64, optional
        Adds every row into its cluster's sums (and its squared norm into ``second`` (k,),
        if given).

    Returns
    -------
    labels : ndarray (b,) int64
    mins : ndarray (b,) float64
    previous_cost : float
    constrained_unary : ndarray (b_c, k) float64
    """
    linear_rows = _kernels()[0]
    start, stop, _ = (rows or slice(0, X.shape[0])).indices(X.shape[0])
    b, k = stop - start, form.weights.shape[1]
    dt = form.weights.dtype
    labels, mins = np.empty(b, dtype=np.int64), np.empty(b)
    mask = _empty(bool) if constrained is None else np.asarray(constrained, dtype=bool)
    crows = np.empty((int(mask.sum()), k))
    total = linear_rows(
        start, stop, X.indptr, X.indices, X.data, form.weights, form.bias, form.offset,
        np.ones(k, dtype=dt) if form.scale is None else form.scale, form.scale is not None,
        np.array([form.lo, form.hi], dtype=dt),
        np.zeros(b, dtype=dt) if row_terms is None else np.asarray(row_terms, dtype=dt),
        _empty(np.int64) if clamped is None else np.asarray(clamped, dtype=np.int64),
        _empty(np.int64) if previous is None else np.asarray(previous, dtype=np.int64),
        mask, labels, mins, crows,
        np.empty((0, 0)) if sums is None else sums, _empty() if second is None else second)
    return labels, mins, float(total), crows


def linear_block_numpy(X: MatrixLike, form: Any, row_terms: Any = None,
                       clamped: NDArray[np.intp] | None = None, previous: NDArray[np.intp] | None = None,
                       constrained: NDArray[np.bool_] | None = None) -> tuple[Any, Any, Any, Any]:
    """NumPy twin of :func:`linear_block` on all rows of ``X`` (no statistics): the
    sparse-dense product ``X @ W`` (scipy adds each row's entries in stored order, as the
    compiled sweep does) and the same elementwise formula, in the same precision and
    order of operations."""
    X = _as_csr(X)
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
        prev = U[np.arange(b), np.asarray(previous, dtype=np.int64)]
        total = float(np.cumsum(prev)[-1])  # left to right: the compiled sweep's order of addition
    rows = U[np.asarray(constrained, dtype=bool)] if constrained is not None else np.empty((0, k))
    return labels, mins, total, rows


def sparse_assign_block(family: EmissionFamily, X_block: MatrixLike, params: EmissionParams, normalizer: str,
                        n_clusters: int, *, data: Any = None, clamped: NDArray[np.intp] | None = None,
                        previous: NDArray[np.intp] | None = None,
                        constrained_mask: NDArray[np.bool_] | None = None, accumulate: bool = False,
                        shift: NDArray[np.floating] | None = None) -> BlockResult | None:
    """:func:`hmrf.em.passes.assign_block` for a CSR block in one compiled sweep (labels,
    costs and statistics together), or ``None`` when the family's costs are not linear in
    the point or its statistics are not the default ones (the caller then takes the
    general path)."""
    from .passes import BlockResult

    if _kernels() is None or shift is not None:
        return None
    ok, kind = fused_second_moment(family, normalizer)
    if accumulate and not ok:
        return None
    X = _as_csr(X_block)
    form = linear_form(family, params, normalizer, X.dtype if X.dtype == np.float32 else np.float64)
    if form is None:
        return None
    X = _with_dtype(X, form.weights.dtype)
    sums = second = None
    if accumulate:
        sums = np.zeros((n_clusters, X.shape[1]))
        second = np.zeros(n_clusters) if kind == "norm" else None
    if data is None:
        data = family.data_terms(X)
    labels, mins, prev, rows = linear_block(X, form, None, data, clamped, previous, constrained_mask, sums,
                                            second)
    stats = None
    if accumulate:
        stats = ClusterStats(np.bincount(labels, minlength=n_clusters).astype(np.float64), sums, second, kind)
    return BlockResult(labels, mins, prev, rows, stats)


def sparse_labels(family: EmissionFamily, X: MatrixLike, params: EmissionParams, normalizer: str = "constant",
                  data: Any = None) -> NDArray[np.int64] | None:
    """Argmin labels of every row of CSR ``X`` (no constraints) in one compiled sweep,
    or ``None`` when the sweep does not serve the family."""
    if _kernels() is None:
        return None
    X = _as_csr(X)
    form = linear_form(family, params, normalizer, X.dtype if X.dtype == np.float32 else np.float64)
    if form is None:
        return None
    return linear_block(_with_dtype(X, form.weights.dtype), form, None, data)[0]


def _with_dtype(X, dtype):
    """``X`` with float32 or float64 data (the precision of the costs)."""
    if X.dtype == dtype:
        return X
    return sp.csr_matrix((X.data.astype(dtype), X.indices, X.indptr), shape=X.shape)


def sparse_row_blocks(indptr: Any, n_clusters: int, nnz_per_block: int = BLOCK_NNZ) -> list[slice]:
    """Row slices of about ``nnz_per_block`` stored entries each, of at most
    :func:`hmrf._blocks.block_rows` rows for (rows x k) temporaries; they depend on the
    data only, never on the number of threads."""
    from .._blocks import block_rows

    n = indptr.shape[0] - 1
    nnz = int(indptr[-1])
    cuts = np.searchsorted(indptr, np.arange(nnz_per_block, nnz, nnz_per_block), side="left")
    cap = block_rows(n, n_clusters)
    edges = np.unique(np.r_[0, cuts, n])
    out = []
    for s, e in zip(edges[:-1], edges[1:]):  # a loop over blocks; rows are split further if too many
        for t in range(int(s), int(e), cap):
            out.append(slice(t, min(t + cap, int(e))))
    return out


def cluster_sums_by_part(X: MatrixLike, labels: NDArray[np.intp], n_clusters: int, second_kind: Any = None,
                         map_parts: Any = None, n_parts: int = 1) -> ClusterStats:
    """Counts, sums (and the ``"norm"`` second moment) of the rows of CSR ``X`` under
    ``labels``, with the clusters split into ``n_parts`` parts of about equal numbers of
    stored entries, each added up by one call of ``add_rows_of`` (``map_parts(fn, parts)``
    runs them, e.g. on threads). Every sum is added in row order, so the result does not
    depend on ``n_parts``."""
    add_rows_of = _kernels()[1]
    k, d = n_clusters, X.shape[1]
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    sums = np.zeros((k, d))
    second = np.zeros(k) if second_kind == "norm" else _empty()
    owner = _balanced_owner(np.bincount(labels, weights=np.diff(X.indptr), minlength=k), n_parts)

    def part(t):
        add_rows_of(X.indptr, X.indices, X.data, labels, owner, t, sums, second)

    parts = range(int(owner.max()) + 1)
    if map_parts is None or len(parts) == 1:
        for t in parts:
            part(t)
    else:
        list(map_parts(part, parts))
    return ClusterStats(counts, sums, second if second_kind == "norm" else None, second_kind)


def _balanced_owner(load, n_parts: int) -> np.ndarray:
    """Part of each cluster: largest load first to the least loaded part (greedy)."""
    owner = np.zeros(load.shape[0], dtype=np.int64)
    if n_parts <= 1:
        return owner
    totals = np.zeros(n_parts)
    for h in np.argsort(-load, kind="stable"):  # a loop over the k clusters
        t = int(np.argmin(totals))
        owner[h] = t
        totals[t] += load[h]
    return owner


def sparse_assignment_pass(model: HMRF, params: EmissionParams, previous: NDArray[np.intp] | None = None,
                           constrained: NDArray[np.bool_] | None = None, accumulate: bool = False,
                           shift: NDArray[np.floating] | None = None) -> AssignmentPass | None:
    """:func:`hmrf.em.passes.assignment_pass` over a CSR ``model.X`` (module docstring),
    or ``None`` when the compiled sweep does not serve the model's family."""
    from . import passes

    X = model.X
    if _kernels() is None or not sp.issparse(X) or shift is not None:
        return None
    ok, kind = fused_second_moment(model.emission, model.normalizer)
    if accumulate and not ok:
        return None
    dtype = np.float32 if X.dtype == np.float32 else np.float64
    form = linear_form(model.emission, params, model.normalizer, dtype)
    if form is None:
        return None
    X = _with_dtype(_as_csr(X), form.weights.dtype)
    n, k = model.n_samples, model.n_clusters
    data, clamped = model.data_terms, model.clamped
    mask = None
    if constrained is not None and len(constrained):
        mask = np.zeros(n, dtype=bool)
        mask[constrained] = True
    labels, cost = np.empty(n, dtype=np.int64), np.empty(n)

    def work(rows):
        def part(a):
            return None if a is None else a[rows]
        return rows, linear_block(X, form, rows, part(data), part(clamped), part(previous), part(mask))

    entries = int(X.nnz) * k
    total, parts = 0.0, []
    for rows, (lab, mins, prev, crows) in passes.run_blocks(work, sparse_row_blocks(X.indptr, k), entries):
        labels[rows], cost[rows] = lab, mins
        total += prev
        if crows.shape[0]:
            parts.append(crows)
    stats = None
    if accumulate:
        n_parts = passes.pool_threads(entries)
        stats = cluster_sums_by_part(X, labels, k, kind, passes.map_on_pool, n_parts)
    unary_c = np.vstack(parts) if parts else np.empty((0, k))
    return passes.AssignmentPass(labels, float(cost.sum()), float("nan") if previous is None else total,
                                 unary_c, stats, costs=lambda: cost)
