"""One pass over the data in row blocks: the E-step of every unconstrained point, the cost
rows of the constrained ones, and the M-step statistics, in memory linear in n.

In an HMRF E-step (Basu 2005, §4.4.4) a point with no pairwise factor takes the argmin
of its own unary costs ``U[i, h] = -log p(x_i | h, Θ)``; only the points with factors
need their whole (k,) cost row, for the inference engine. Each block of rows gives its
rows' argmin labels and minima, the cost rows of its constrained points, ``Σ_i U[i,
y_i]`` of the previous labelling ``y`` (the objective of the previous M-step) and, when
asked, the additive M-step statistics of its rows under their argmin labels
(:mod:`hmrf.emissions.stats`), as scikit-learn's Lloyd loop does.

A family whose costs are linear in the point (:class:`~hmrf.emissions.base.LinearCosts`)
goes through one compiled sweep of each block (:func:`hmrf.em.passes_numba.linear_rows`:
a GEMM per sub-block of dense rows, the stored entries of CSR rows), which adds each row
into its cluster's sums while the rows are in cache; any other family's costs come from
:meth:`hmrf.HMRF.unary` on the block, reduced row by row
(:func:`hmrf.em.passes_numba.reduce_rows`). At most one block of (rows x k)
temporaries exists per thread. :func:`assign_block` is a function of the block alone,
so the same code runs over the blocks of an in-memory array here and over the chunks of
a Dask array elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .. import _blocks
from ..emissions.base import EmissionFamily, work_dtype
from ..emissions.stats import ClusterStats
from ..inference.meanfield import softmax_free_energy
from ..model import block_unary

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from numpy.typing import DTypeLike, NDArray

    from .._typing import MatrixLike
    from ..emissions.base import EmissionParams, LinearCosts
    from ..model import HMRF

__all__ = ["AssignmentPass", "BlockResult", "SoftPass", "assign_block", "assignment_pass",
           "block_arguments", "collect_blocks", "fused_second_moment", "linear_block", "linear_form",
           "nearest_clusters", "pass_width", "reduce_rows", "run_blocks", "soft_assign_block", "soft_pass"]


def _none(dtype=np.int64, ndim=1):
    """An empty array: the kernels' "none given"."""
    return np.empty((0,) * ndim, dtype=dtype)


def reduce_rows(U: NDArray[np.floating],
                previous: NDArray[np.intp] | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Row argmin (first minimiser, int64), row minimum (float64) and ``Σ_i U[i, previous_i]``
    (0.0 without ``previous``) of a block of unary costs, in one compiled pass."""
    from .passes_numba import reduce_rows as kernel

    labels, mins = np.empty(U.shape[0], dtype=np.int64), np.empty(U.shape[0])
    total = kernel(U, _none() if previous is None else np.asarray(previous, dtype=np.int64), labels, mins)
    return labels, mins, float(total)


def linear_form(family: EmissionFamily, params: EmissionParams, normalizer: str,
                dtype: DTypeLike) -> LinearCosts | None:
    """The family's :class:`~hmrf.emissions.base.LinearCosts` in ``dtype`` with the
    mixing weights' ``-log π_h`` (when ``params`` has them) in the offset, or ``None``."""
    form = family.linear_costs(params, normalizer, np.dtype(dtype))
    if form is not None and params.weights is not None:
        with np.errstate(divide="ignore"):
            form = form.with_offset(-np.log(params.weights))
    return form


def fused_second_moment(family: EmissionFamily, normalizer: str) -> tuple[bool, str | None]:
    """``(True, kind)`` when the family's statistics are the default counts and sums with
    no second moment or the ``"norm"`` one (what the compiled sweep adds up), else
    ``(False, None)``."""
    kind = family.second_moment(normalizer)
    ok = type(family).statistics is EmissionFamily.statistics and kind in (None, "norm")
    return ok, (kind if ok else None)


def linear_block(X: MatrixLike, form: LinearCosts, rows: slice | None = None, row_terms: Any = None,
                 clamped: NDArray[np.intp] | None = None, previous: NDArray[np.intp] | None = None,
                 constrained: NDArray[np.bool_] | None = None, sums: NDArray[np.float64] | None = None,
                 second: NDArray[np.float64] | None = None, shift: NDArray[np.floating] | None = None,
                 ) -> tuple[NDArray[np.int64], NDArray[np.float64], float, NDArray[np.float64]]:
    """The compiled sweep (:func:`hmrf.em.passes_numba.linear_rows`) over the rows ``rows``
    (all by default) of dense or CSR ``X`` in ``form``'s precision.

    Parameters
    ----------
    X : ndarray or csr_matrix (n, d)
    form : LinearCosts
    rows : slice, optional
    row_terms, clamped, previous, constrained : ndarray (b,), optional
        Per-row data terms ``a_i``, fixed labels (-1 free), previous labels, and which
        rows are constrained, for the rows of the block.
    sums : ndarray (k, d) float64, optional
        Adds every row into its cluster's sums (and ``||x_i - shift||²`` into ``second``
        (k,), if given).

    Returns
    -------
    labels : ndarray (b,) int64
    mins : ndarray (b,) float64
    previous_cost : float
    constrained_unary : ndarray (b_c, k) float64
    """
    from .passes_numba import linear_rows

    start, stop, _ = (rows or slice(0, X.shape[0])).indices(X.shape[0])
    b, k = stop - start, form.weights.shape[1]
    dt = form.weights.dtype
    if sp.issparse(X):
        X = X.tocsr()
        data = X.data.astype(dt, copy=False)
        dense, csr = _none(dt, 2), (X.indptr, X.indices, data)
    else:
        dense, csr = X, (_none(), _none(), _none(dt))
    labels, mins = np.empty(b, dtype=np.int64), np.empty(b)
    mask = _none(bool) if constrained is None else np.asarray(constrained, dtype=bool)
    crows = np.empty((int(mask.sum()), k))
    total = linear_rows(
        start, stop, dense, *csr, form.weights, form.bias, form.offset,
        np.ones(k, dtype=dt) if form.scale is None else form.scale, form.scale is not None,
        np.array([form.lo, form.hi], dtype=dt),
        np.zeros(b, dtype=dt) if row_terms is None else np.asarray(row_terms, dtype=dt),
        _none() if clamped is None else np.asarray(clamped, dtype=np.int64),
        _none() if previous is None else np.asarray(previous, dtype=np.int64),
        mask, _none(np.float64) if shift is None else np.asarray(shift, dtype=np.float64),
        labels, mins, crows, _none(np.float64, 2) if sums is None else sums,
        _none(np.float64) if second is None else second)
    return labels, mins, float(total), crows


@dataclass
class BlockResult:
    """What one block of rows contributes to a pass.

    Attributes
    ----------
    labels : ndarray (b,)
        Row argmin (first minimiser) of the unary costs.
    cost : ndarray (b,)
        The row minimum, float64.
    previous_cost : float
        ``Σ U[i, previous_i]`` over the block (0 when there are no previous labels).
    constrained_unary : ndarray (b_c, k)
        Cost rows of the block's constrained points, float64, in row order.
    stats : ClusterStats or None
        Statistics of the block's rows under ``labels``.
    """

    labels: np.ndarray
    cost: np.ndarray
    previous_cost: float
    constrained_unary: np.ndarray
    stats: object = None


def assign_block(family: EmissionFamily, X_block: MatrixLike, params: EmissionParams, normalizer: str,
                 n_clusters: int, *, data: NDArray[Any] | None = None, clamped: NDArray[Any] | None = None,
                 previous: NDArray[Any] | None = None, constrained_mask: NDArray[np.bool_] | None = None,
                 accumulate: bool = False, shift: NDArray[Any] | None = None) -> BlockResult:
    """The pass's work on one block of rows (see the module docstring): a function of the
    block alone, so that it runs the same on an in-memory slice or a Dask chunk.

    Parameters
    ----------
    family : EmissionFamily
    X_block : ndarray or sparse matrix (b, d)
        Prepared rows.
    params : EmissionParams
    normalizer : str
    n_clusters : int
    data : ndarray (b,), optional
        The family's data terms of these rows (computed here if ``None``).
    clamped : ndarray (b,), optional
        Fixed labels (``-1`` = free).
    previous : ndarray (b,), optional
        Previous labels of these rows.
    constrained_mask : ndarray of bool (b,), optional
        Which rows have pairwise factors.
    accumulate : bool
        Also compute the M-step statistics of the rows under their argmin labels.
    shift : ndarray (d,), optional
        Centre of the statistics' second moments.
    """
    form = linear_form(family, params, normalizer, work_dtype(X_block))
    return _assign(family, X_block, params, normalizer, n_clusters, form, data, clamped, previous,
                   constrained_mask, accumulate, shift)


def _assign(family, X, params, normalizer, k, form, data, clamped, previous, mask, accumulate, shift):
    """:func:`assign_block` with the family's linear form (or ``None``) already built."""
    if form is None:
        U = block_unary(family, X, params, normalizer, data, clamped)
        labels, mins, prev = reduce_rows(U, previous)
        rows = np.asarray(U[mask], dtype=np.float64) if mask is not None else np.empty((0, k))
        stats = family.statistics(X, labels, k, normalizer, shift) if accumulate else None
        return BlockResult(labels, mins, prev, rows, stats)
    fused, kind = fused_second_moment(family, normalizer)
    fused = accumulate and fused and (shift is None or not sp.issparse(X))
    sums = np.zeros((k, X.shape[1])) if fused else None
    second = np.zeros(k) if fused and kind == "norm" else None
    labels, mins, prev, rows = linear_block(X, form, None, family.data_terms(X) if data is None else data,
                                            clamped, previous, mask, sums, second, shift)
    stats = None
    if fused:
        stats = ClusterStats(np.bincount(labels, minlength=k).astype(np.float64), sums, second, kind, shift)
    elif accumulate:
        stats = family.statistics(X, labels, k, normalizer, shift)
    return BlockResult(labels, mins, prev, rows, stats)


def pass_width(family: EmissionFamily, X: MatrixLike, n_clusters: int) -> int:
    """Columns of a pass's per-row temporaries: ``k`` for a family with linear costs (its
    sweep forms no (rows x d) block), else ``max(k, d)``."""
    if type(family).linear_costs is not EmissionFamily.linear_costs:
        return n_clusters
    return max(n_clusters, X.shape[1])


def run_blocks(work: Any, blocks: Any, entries: int | None = None) -> Iterator[Any]:
    """``work(block)`` for every block, yielded in block order (so sums are added in the
    same order whatever the number of threads): on the pass's pool of threads
    (:func:`hmrf._blocks.thread_pool`, each block's BLAS calls on one thread) when the
    pass covers at least ``MIN_THREADED_ENTRIES`` entries (``None``: taken as enough),
    else on the calling thread. At most one block per thread (and one waiting) is in
    flight, so memory stays that of a few blocks."""
    from collections import deque

    blocks = list(blocks)
    n_threads = _blocks.pool_threads(_blocks.MIN_THREADED_ENTRIES if entries is None else entries)
    if n_threads == 1 or len(blocks) < 2 * n_threads or _blocks.in_pool_thread():
        yield from map(work, blocks)
        return
    pool, controller = _blocks.thread_pool(n_threads)
    with controller.limit(limits=1, user_api="blas"):
        pending = deque()
        for b in blocks:
            pending.append(pool.submit(work, b))
            if len(pending) > n_threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


@dataclass
class AssignmentPass:
    """A whole pass (see the module docstring).

    Attributes
    ----------
    labels : ndarray (n,)
        Argmin label of every point (the E-step of the unconstrained ones).
    cost_total : float
        ``Σ_i min_h U[i, h]`` over all points.
    previous_cost : float
        ``Σ_i U[i, previous_i]``: the unary part of the objective of the previous
        labelling under these parameters (``nan`` without previous labels).
    constrained_unary : ndarray (n_c, k)
        Cost rows of the constrained points, in the order of ``constrained``.
    stats : ClusterStats or None
        Statistics of all points under ``labels`` (when accumulated).
    costs : callable
        ``costs() -> ndarray (n,)``: each point's minimum unary cost, float64. Only the
        re-seeding of an empty cluster needs them, so a distributed pass computes them
        on demand instead of sending n floats to the client every iteration.
    solve : callable or None
        Set by a pass that keeps the constrained points' cost rows where the data are
        (``constrained_unary`` is then ``None``): ``solve(step, engine, graph, previous, rng) ->
        (labels, energy, result, rejected, previous_pairwise)`` runs the E-step of the
        constrained part there (:mod:`hmrf.distributed.components`), as the EM loop
        does with the cost rows (:func:`hmrf.em.loop.run_em`), and sets ``labels`` and
        ``stats`` to the labels it keeps and their statistics, and ``constrained_min``.
    constrained_min : float or None
        ``Σ_i min_h U[i, h]`` over the constrained points, when ``constrained_unary`` is
        not on hand.
    reseed : callable or None
        Set by a pass whose costs stay where the data are: ``reseed(labels, graph,
        movable, own_cost) -> (labels, n_reseeded)``, the re-seeding of empty clusters
        (the choice of :mod:`hmrf.em.loop`, "Empty clusters") as reductions there.
    """

    labels: np.ndarray
    cost_total: float
    previous_cost: float
    constrained_unary: np.ndarray | None
    stats: object = None
    costs: object = None
    solve: object = None
    constrained_min: float | None = None
    reseed: object = None


def assignment_pass(model: HMRF, params: EmissionParams, previous: NDArray[Any] | None = None,
                    constrained: NDArray[Any] | None = None, accumulate: bool = False,
                    shift: NDArray[Any] | None = None, block: int | None = None) -> AssignmentPass:
    """Run :func:`assign_block` over ``model.X`` in row blocks and combine the results
    (CSR data in a family with linear costs: :func:`hmrf.em.sparse.sparse_assignment_pass`).

    Parameters
    ----------
    model : HMRF
    params : EmissionParams
    previous : ndarray (n,), optional
        The previous labelling, whose unary cost is summed.
    constrained : ndarray, optional
        Sorted indices of the points with pairwise factors.
    accumulate : bool
        Accumulate the M-step statistics of all points under their argmin labels.
    shift : ndarray (d,), optional
        Centre of the statistics' second moments.
    block : int, optional
        Rows per block (default :func:`hmrf._blocks.block_rows` for :func:`pass_width`
        columns).
    """
    X, n, k = model.X, model.n_samples, model.n_clusters
    form = linear_form(model.emission, params, model.normalizer, work_dtype(X))
    if sp.issparse(X) and form is not None:
        from .sparse import sparse_assignment_pass

        return sparse_assignment_pass(model, form, previous, constrained, accumulate, shift)
    labels, cost = np.empty(n, dtype=np.int64), np.empty(n)

    def work(args):
        rows, kw, prev = args
        return rows, _assign(model.emission, X[rows], params, model.normalizer, k, form, kw["data"],
                             kw["clamped"], prev, kw["constrained_mask"], accumulate, shift)

    blocks = block_arguments(n, pass_width(model.emission, X, k), model.data_terms, model.clamped, previous,
                             constrained, block)
    total, unary_c, stats = collect_blocks(run_blocks(work, blocks, n * max(k, X.shape[1])), labels, cost, k)
    return AssignmentPass(labels, float(cost.sum()), float("nan") if previous is None else total, unary_c,
                          stats, costs=lambda: cost)


def block_arguments(n: int, width: int, data: Any = None, clamped: NDArray[np.intp] | None = None,
                    previous: NDArray[np.intp] | None = None, constrained: NDArray[np.bool_] | None = None,
                    block: int | None = None, weights: NDArray[np.floating] | None = None) -> Iterator[Any]:
    """The row blocks of a pass over ``n`` rows and each block's per-row arguments: yields
    ``(rows, keywords, previous)`` with ``rows`` a slice, ``keywords`` the ``data``,
    ``clamped`` and ``constrained_mask`` slices for :func:`assign_block` /
    :func:`soft_assign_block` (``None`` where not given; and the ``weights`` slice, when
    given, for :func:`soft_assign_block`) and ``previous`` the slice of the
    previous labels. ``constrained``: sorted indices of the rows with pairwise factors;
    ``block``: rows per block (default :func:`hmrf._blocks.block_rows` for ``width``
    columns of temporaries)."""
    mask = None
    if constrained is not None and len(constrained):
        mask = np.zeros(n, dtype=bool)
        mask[constrained] = True
    step = block or _blocks.block_rows(n, width)
    for start in range(0, n, step):  # a loop over blocks of rows; each block is vectorised
        rows = slice(start, min(start + step, n))
        kw = dict(data=None if data is None else data[rows],
                  clamped=None if clamped is None else clamped[rows],
                  constrained_mask=None if mask is None else mask[rows])
        if weights is not None:
            kw["weights"] = weights[rows]
        yield rows, kw, None if previous is None else previous[rows]


def collect_blocks(results: Any, labels: NDArray[np.intp], cost: NDArray[Any],
                   n_clusters: int) -> tuple[Any, Any, Any]:
    """Put the :class:`BlockResult` of each ``(rows, result)`` of ``results`` (in block
    order) together: labels and per-row costs (minimum costs, or free-energy terms) into
    ``labels[rows]`` and ``cost[rows]``; returns the summed previous cost, the stacked
    constrained cost rows (n_c, k) and the summed statistics (``None`` if not
    accumulated)."""
    parts, total, stats = [], 0.0, None
    for rows, res in results:
        labels[rows] = res.labels
        cost[rows] = res.cost
        total += res.previous_cost
        if res.constrained_unary.shape[0]:
            parts.append(res.constrained_unary)
        if res.stats is not None:
            stats = res.stats if stats is None else stats + res.stats
    return total, np.vstack(parts) if parts else np.empty((0, n_clusters)), stats


def nearest_clusters(family: EmissionFamily, X: MatrixLike, params: EmissionParams,
                     normalizer: str = "constant") -> np.ndarray:
    """Argmin of the unary costs of every row of ``X`` (prepared data): the cluster of new
    points under fitted parameters, with no constraints."""
    data = family.data_terms(X)
    form = linear_form(family, params, normalizer, work_dtype(X))
    if form is not None:
        return linear_block(X, form, None, data)[0]
    out = np.empty(X.shape[0], dtype=np.int64)
    for rows in _blocks.row_blocks(X.shape[0], max(params.n_clusters, X.shape[1])):
        U = family.unary(X[rows], params, normalizer, data=None if data is None else data[rows])
        out[rows] = reduce_rows(U)[0]
    return out


@dataclass
class SoftPass:
    """A pass of soft EM (see :func:`soft_pass`).

    Attributes
    ----------
    labels : ndarray (n,)
        Most probable label of every point under its local posterior.
    free_energy : float
        ``Σ_i -log Σ_h exp(-U_ih)`` over the unconstrained points: their part of the
        variational free energy at their exact posteriors.
    constrained_unary : ndarray (n_c, k)
        Cost rows of the constrained points.
    stats : ClusterStats
        Statistics of the unconstrained points weighted by their posteriors.
    """

    labels: np.ndarray
    free_energy: float
    constrained_unary: np.ndarray
    stats: object


def soft_assign_block(family: EmissionFamily, X_block: MatrixLike, params: EmissionParams, normalizer: str,
                      n_clusters: int, *, data: Any = None, clamped: NDArray[np.intp] | None = None,
                      constrained_mask: NDArray[np.bool_] | None = None,
                      shift: NDArray[np.floating] | None = None,
                      weights: NDArray[np.floating] | None = None) -> BlockResult:
    """Soft E-step of one block: posteriors ``q_ih ∝ exp(-U_ih)`` of its unconstrained
    rows (never stored beyond the block), their free energy and weighted statistics, and
    the cost rows of its constrained rows, as a :class:`BlockResult` whose ``cost`` is each
    row's free-energy term ``Σ_h q_ih (U_ih + log q_ih)`` (0 for constrained rows, whose
    term the engine's posteriors give) and whose ``previous_cost`` is 0. Row weights
    ``weights`` (b,), when given, multiply each row's free-energy term and statistics."""
    U = block_unary(family, X_block, params, normalizer, data, clamped)
    labels = reduce_rows(U)[0]
    q, f = softmax_free_energy(U)
    rows = np.empty((0, U.shape[1]))
    if constrained_mask is not None and constrained_mask.any():
        rows = np.asarray(U[constrained_mask], dtype=np.float64)
        q[constrained_mask] = 0.0  # the engine's posteriors replace these
        f[constrained_mask] = 0.0
    if weights is not None:
        q *= weights[:, None]
        f *= weights
    stats = family.statistics(X_block, q, n_clusters, normalizer, shift)
    return BlockResult(labels, np.asarray(f, dtype=np.float64), 0.0, rows, stats)


def soft_pass(model: HMRF, params: EmissionParams, constrained: NDArray[np.bool_] | None = None,
              shift: NDArray[np.floating] | None = None,
              weights: NDArray[np.floating] | None = None) -> SoftPass:
    """:func:`soft_assign_block` over ``model.X`` in row blocks (with row ``weights`` (n,),
    when given)."""
    n, k = model.n_samples, model.n_clusters
    labels, free = np.empty(n, dtype=np.int64), np.empty(n)

    def work(args):
        rows, kw, _ = args
        return rows, soft_assign_block(model.emission, model.X[rows], params, model.normalizer, k,
                                       shift=shift, **kw)

    # CSR rows form no (rows x d) temporary: costs are sparse-dense products, the
    # statistics one (k, d) array per block (fewer blocks, fewer of those)
    width = k if sp.issparse(model.X) else max(k, model.X.shape[1])
    blocks = block_arguments(n, width, model.data_terms, model.clamped, None, constrained, weights=weights)
    _, unary_c, stats = collect_blocks(run_blocks(work, blocks, n * width), labels, free, k)
    return SoftPass(labels, float(free.sum()), unary_c, stats)
