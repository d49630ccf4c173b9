"""The in-memory pass over sparse data: CSR rows against dense centres.

For text (TF-IDF or counts: d ~ 10^4-10^5 features, ~10^2 stored entries a row) the
unary costs of every family the sparse path serves are linear in the point
(:class:`~hmrf.emissions.base.LinearCosts`: squared Euclidean, cosine/vMF, KL,
I-divergence, with either normaliser). So each row needs only the products of its stored
entries with the k centre columns: with the columns stored as a (d, k) array, every
stored entry reads one contiguous k-vector (:func:`hmrf.em.passes.linear_block`). No
(rows x d) block is ever formed and the only (rows x k) temporaries are the cost rows of
the constrained points, which the inference engine needs. As in scikit-learn's sparse
Lloyd kernel, the argmin of squared Euclidean costs is taken on ``||μ_h||² - 2 <x, μ_h>``,
summed in the same order, so the two agree label for label from the same centres.

The pass runs row blocks of about equal numbers of stored entries on the pass's thread
pool (:func:`hmrf.em.passes.run_blocks`), then adds each row into its cluster's sums with
the clusters split between threads (:func:`cluster_sums_by_part`): every sum is added in
row order, so the number of threads changes no bit of the result, and no thread holds a
(k, d) buffer of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import _blocks
from ..emissions.stats import ClusterStats
from . import passes

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import MatrixLike
    from ..emissions.base import LinearCosts
    from ..model import HMRF

__all__ = ["sparse_assignment_pass", "sparse_row_blocks", "cluster_sums_by_part", "BLOCK_NNZ"]

#: Stored entries per row block of the in-memory pass: enough that a block's work (k
#: multiply-adds an entry) dwarfs the cost of handing it to a thread.
BLOCK_NNZ = 2**17


def sparse_row_blocks(indptr: Any, n_clusters: int, nnz_per_block: int = BLOCK_NNZ) -> list[slice]:
    """Row slices of about ``nnz_per_block`` stored entries each, of at most
    :func:`hmrf._blocks.block_rows` rows for (rows x k) temporaries; they depend on the
    data only, never on the number of threads."""

    n = indptr.shape[0] - 1
    nnz = int(indptr[-1])
    cuts = np.searchsorted(indptr, np.arange(nnz_per_block, nnz, nnz_per_block), side="left")
    cap = _blocks.block_rows(n, n_clusters)
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
    stored entries, each added up by one call of
    :func:`hmrf.emissions.stats_numba.add_csr_rows` (``map_parts(fn, parts)`` runs them,
    e.g. on threads). Every sum is added in row order, so the result does not depend on
    ``n_parts``."""
    from ..emissions.stats_numba import add_csr_rows

    k, d = n_clusters, X.shape[1]
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    sums = np.zeros((k, d))
    second = np.zeros(k) if second_kind == "norm" else np.empty(0)
    owner = _balanced_owner(np.bincount(labels, weights=np.diff(X.indptr), minlength=k), n_parts)

    def part(t):
        add_csr_rows(X.indptr, X.indices, X.data, labels, owner, t, sums, second)

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


def sparse_assignment_pass(model: HMRF, form: LinearCosts, previous: NDArray[np.intp] | None = None,
                           constrained: NDArray[np.intp] | None = None, accumulate: bool = False,
                           shift: NDArray[np.floating] | None = None) -> passes.AssignmentPass:
    """:func:`hmrf.em.passes.assignment_pass` over a CSR ``model.X`` whose family has the
    linear costs ``form`` (module docstring)."""
    X = model.X.tocsr()
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
        return rows, passes.linear_block(X, form, rows, part(data), part(clamped), part(previous), part(mask))

    entries = int(X.nnz) * k
    total, parts = 0.0, []
    for rows, (lab, mins, prev, crows) in passes.run_blocks(work, sparse_row_blocks(X.indptr, k), entries):
        labels[rows], cost[rows] = lab, mins
        total += prev
        if crows.shape[0]:
            parts.append(crows)
    stats = None
    if accumulate:
        fused, kind = passes.fused_second_moment(model.emission, model.normalizer)
        if fused and shift is None:
            n_parts = _blocks.pool_threads(entries)
            stats = cluster_sums_by_part(X, labels, k, kind, _blocks.map_on_pool, n_parts)
        else:
            stats = model.emission.statistics(X, labels, k, model.normalizer, shift)
    unary_c = np.vstack(parts) if parts else np.empty((0, k))
    return passes.AssignmentPass(labels, float(cost.sum()), float("nan") if previous is None else total,
                                 unary_c, stats, costs=lambda: cost)
