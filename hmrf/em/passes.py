"""One pass over the data in row blocks: the E-step of every unconstrained point, the cost
rows of the constrained ones, and the M-step statistics, in memory linear in n.

In an HMRF E-step (Basu 2005, §4.4.4) a point with no pairwise factor takes the argmin
of its own unary costs; only the points with factors need their whole (k,) cost row, for
the inference engine. So the pass computes the unary costs block by block
(:meth:`hmrf.HMRF.unary` on a slice of rows: one GEMM per block for the Bregman
families), reduces each block to its row argmin and minimum, keeps the rows of the
constrained points, adds up the cost of the previous labelling (the objective of the
previous M-step), and, when asked, accumulates the additive M-step statistics of every
row under its argmin label (:mod:`hmrf.emissions.stats`), as scikit-learn's Lloyd loop
does. At most one block of (rows x k) temporaries exists at a time.

Each block's work is :func:`assign_block`, a function of the block alone, so the same
code runs over the blocks of an in-memory array here and over the chunks of a Dask
array elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .. import _blocks
from .._optional import available
from ..inference.base import argmin_rows
from ..inference.meanfield import softmax_free_energy
from ..model import block_unary

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import MatrixLike
    from ..emissions.base import EmissionFamily, EmissionParams
    from ..model import HMRF

__all__ = ["AssignmentPass", "BlockResult", "SoftPass", "assign_block", "assignment_pass",
           "block_arguments", "collect_blocks", "nearest_clusters", "pass_width", "reduce_rows",
           "run_blocks", "soft_assign_block", "soft_pass"]

_NUMBA = {}


def _compiled_reduce_rows():
    """The compiled row reduction, or ``None`` without numba (loaded on first use)."""
    if "reduce_rows" not in _NUMBA:
        kernel = None
        if available("numba"):
            from .passes_numba import reduce_rows as kernel
        _NUMBA["reduce_rows"] = kernel
    return _NUMBA["reduce_rows"]


def reduce_rows(U: Any, previous: NDArray[np.intp] | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Row argmin (first minimiser, int64), row minimum (float64) and ``Σ U[i, previous_i]``
    (0.0 without ``previous``) of a block of unary costs: one compiled pass when numba is
    installed, else :func:`~hmrf.inference.base.argmin_rows` and a gather."""
    n = U.shape[0]
    kernel = _compiled_reduce_rows()
    if kernel is not None and U.dtype in (np.float32, np.float64):
        labels, mins = np.empty(n, dtype=np.int64), np.empty(n)
        prev = np.zeros(n, dtype=np.int64) if previous is None else np.asarray(previous, dtype=np.int64)
        total, nan_row = kernel(U, prev, previous is not None, labels, mins)
        if nan_row < 0:
            return labels, mins, float(total)
    labels, mins = argmin_rows(U)
    total = 0.0 if previous is None else float(U[np.arange(n), previous].sum(dtype=np.float64))
    return labels.astype(np.int64, copy=False), mins.astype(np.float64, copy=False), total


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

    A CSR block of a family whose costs are linear in the point goes through one
    compiled sweep (:func:`hmrf.em.sparse.sparse_assign_block`).
    """
    if sp.issparse(X_block):
        from .sparse import sparse_assign_block

        res = sparse_assign_block(family, X_block, params, normalizer, n_clusters, data=data, clamped=clamped,
                                  previous=previous, constrained_mask=constrained_mask, accumulate=accumulate,
                                  shift=shift)
        if res is not None:
            return res
    U = block_unary(family, X_block, params, normalizer, data, clamped)
    labels, mins, prev = reduce_rows(U, previous)
    if constrained_mask is not None and constrained_mask.any():
        rows = np.asarray(U[constrained_mask], dtype=np.float64)
    else:
        rows = np.empty((0, U.shape[1]))
    stats = None
    if accumulate:
        stats = family.statistics(X_block, labels, n_clusters, normalizer, shift)
    return BlockResult(labels, mins, prev, rows, stats)


def _threads() -> int:
    return max(1, min(os.cpu_count() or 1, MAX_THREADS))


def pass_width(family: EmissionFamily, X: MatrixLike, n_clusters: int) -> int:
    """Columns of a pass's per-row temporaries: ``k`` for CSR data and a family with
    linear costs (the sparse sweep forms no (rows x d) block), else ``max(k, d)``."""
    from ..emissions.base import EmissionFamily

    if sp.issparse(X) and type(family).linear_costs is not EmissionFamily.linear_costs:
        return n_clusters
    return max(n_clusters, X.shape[1])


def pool_threads(entries: int) -> int:
    """Threads a pass over ``entries`` data entries runs on (1 below
    ``MIN_THREADED_ENTRIES``)."""
    return 1 if entries < MIN_THREADED_ENTRIES else _threads()


def map_on_pool(work, items):
    """``work(item)`` for every item on the pass's thread pool, results in item order."""
    pool, _ = _thread_pool(_threads())
    return [f.result() for f in [pool.submit(work, it) for it in items]]


#: Threads that work on row blocks at once (each block's BLAS call then runs on one
#: thread, as scikit-learn's Lloyd loop does with OpenMP over chunks).
MAX_THREADS = 8
#: Passes over fewer data entries (rows x max(k, d)) than this run on the calling
#: thread: for them, handing blocks to threads costs more than it saves.
MIN_THREADED_ENTRIES = 2**22

_THREADING = {}


def _thread_pool(n_threads):
    """A pool of ``n_threads`` threads and a BLAS thread-limit controller, made once per
    process and reused by every pass."""
    if _THREADING.get("n") != n_threads:
        from concurrent.futures import ThreadPoolExecutor

        from threadpoolctl import ThreadpoolController

        _THREADING.update(n=n_threads, pool=ThreadPoolExecutor(n_threads, thread_name_prefix="hmrf-pass"),
                          controller=ThreadpoolController())
    return _THREADING["pool"], _THREADING["controller"]


def run_blocks(work: Any, blocks: Any, entries: int = MIN_THREADED_ENTRIES) -> Iterator[Any]:
    """``work(block)`` for every block, yielded in block order (so sums are added in the
    same order whatever the number of threads): on a pool of threads when the pass covers
    at least ``MIN_THREADED_ENTRIES`` entries, else on the calling thread. At most one
    block per thread (and one waiting) is in flight, so memory stays that of a few
    blocks."""
    from collections import deque

    blocks = list(blocks)
    n_threads = _threads()
    if n_threads == 1 or len(blocks) < 2 * n_threads or entries < MIN_THREADED_ENTRIES:
        yield from map(work, blocks)
        return
    pool, controller = _thread_pool(n_threads)
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
    """Run :func:`assign_block` over ``model.X`` in row blocks and combine the results.

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
        Rows per block (default: blocks of about 2**18 cost and data entries).
    """
    if sp.issparse(model.X) and block is None:
        from .sparse import sparse_assignment_pass

        res = sparse_assignment_pass(model, params, previous, constrained, accumulate, shift)
        if res is not None:
            return res
    n, k = model.n_samples, model.n_clusters
    labels, cost = np.empty(n, dtype=np.int64), np.empty(n)

    def work(args):
        rows, kw, prev = args
        return rows, assign_block(model.emission, model.X[rows], params, model.normalizer, k, previous=prev,
                                  accumulate=accumulate, shift=shift, **kw)

    width = max(k, model.X.shape[1])
    blocks = block_arguments(n, width, model.data_terms, model.clamped, previous, constrained, block)
    total, unary_c, stats = collect_blocks(run_blocks(work, blocks, n * width), labels, cost, k)
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
    """Argmin of the unary costs of every row of ``X`` (prepared data), in row blocks:
    the cluster of new points under fitted parameters, with no constraints."""
    n = X.shape[0]
    data = family.data_terms(X)
    if sp.issparse(X):
        from .sparse import sparse_labels

        labels = sparse_labels(family, X, params, normalizer, data)
        if labels is not None:
            return labels
    out = np.empty(n, dtype=np.int64)
    for rows in _blocks.row_blocks(n, max(params.n_clusters, X.shape[1])):
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
