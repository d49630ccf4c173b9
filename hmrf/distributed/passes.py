"""The data passes of EM on a Dask cluster: one task per chunk, statistics summed in chunk order.

Each chunk's task runs :func:`hmrf.em.passes.assign_block` (or
:func:`~hmrf.em.passes.soft_assign_block`) over the chunk's rows where it is held and
returns the costs summed, the cost rows of its constrained points (O(m k)), their rows
in the first pass that has them, its cluster sizes and its M-step statistics (added up
in chunk order, by a tree of tasks when large, ``run_chunks``); its labels stay on the
worker. A pass is one Dask computation; ``X`` never leaves the workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

    from .._typing import MatrixLike
    from ..emissions.base import EmissionFamily, EmissionParams
    from ..model import HMRF

try:
    import dask
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError('hmrf.distributed needs Dask: pip install "hmrf[dask]".') from exc

from ..em.passes import (
    AssignmentPass,
    SoftPass,
    assign_block,
    block_arguments,
    collect_blocks,
    pass_width,
    soft_assign_block,
)
from .data import _sum_all, label_dtype, tree_reduce
from .labels import ChunkLabels

__all__ = ["dask_assignment_pass", "dask_soft_pass", "chunk_assignment", "chunk_soft_assignment",
           "run_chunks", "TREE_ABOVE"]

#: Statistics of more floats than this per chunk are added up on the workers by a tree of
#: tasks; smaller ones travel with each chunk's results and the client adds them up (one
#: task a chunk instead of three: the per-task cost of the scheduler dominates small chunks).
TREE_ABOVE = 2**16


def chunk_assignment(family: EmissionFamily, X: NDArray[Any] | sp.csr_matrix, data: NDArray[Any] | None,
                     params: EmissionParams, normalizer: str, n_clusters: int, clamped: NDArray[Any] | None,
                     previous: NDArray[Any] | None, local: NDArray[Any] | None, accumulate: bool,
                     shift: NDArray[Any] | None,
                     return_costs: bool = False) -> tuple[tuple[Any, Any, Any, Any], Any]:
    """The hard E-step pass over one prepared chunk ``X`` (b rows): the arguments of
    :func:`hmrf.em.passes.assign_block`, ``data`` the family's data terms of the chunk
    (``None``: per block) and ``local`` the increasing chunk-local indices of its
    constrained rows.

    Returns ``(labels, cost, previous_cost, constrained_unary), stats``: ``labels`` (b,)
    of ``label_dtype``, ``cost`` the sum of the rows' minimum costs (with
    ``return_costs``, the (b,) minima, for re-seeding an empty cluster),
    ``constrained_unary`` (b_c, k) and ``stats`` a ClusterStats or ``None``.
    """
    b, k = X.shape[0], n_clusters
    labels = np.empty(b, dtype=label_dtype(k))
    cost = np.empty(b)
    width = pass_width(family, X, k)
    blocks = ((sl, assign_block(family, X[sl], params, normalizer, k, previous=prev, accumulate=accumulate,
                                shift=shift, **kw))
              for sl, kw, prev in block_arguments(b, width, data, clamped, previous, local))
    total, unary_c, stats = collect_blocks(blocks, labels, cost, k)
    return (labels, cost if return_costs else float(cost.sum()), total, unary_c), stats


def chunk_soft_assignment(family: EmissionFamily, X: MatrixLike, data: Any, params: EmissionParams,
                          normalizer: str, n_clusters: int, clamped: NDArray[np.intp] | None, local: Any,
                          shift: NDArray[np.floating] | None) -> tuple[tuple[Any, float, Any], Any]:
    """The soft E-step pass over one chunk: ``(labels (b,), free energy of its
    unconstrained rows, cost rows of its constrained rows), posterior-weighted
    statistics``."""
    b, k = X.shape[0], n_clusters
    labels, free = np.empty(b, dtype=label_dtype(k)), np.empty(b)
    blocks = ((sl, soft_assign_block(family, X[sl], params, normalizer, k, shift=shift, **kw))
              for sl, kw, _ in block_arguments(b, max(k, X.shape[1]), data, clamped, None, local))
    _, unary_c, stats = collect_blocks(blocks, labels, free, k)
    return (labels, float(free.sum()), unary_c), stats


def _per_chunk(model, constrained):
    """Per-chunk arguments every pass shares: data terms, clamped labels, local indices
    of the constrained rows."""
    data = model.data
    terms = data.data_terms or [None] * data.n_chunks
    clamped = model.clamped_chunks() or [None] * data.n_chunks
    local = data.split(constrained) if constrained is not None and len(constrained) else \
        [None] * data.n_chunks
    return terms, clamped, local


def _statistics_size(model) -> int:
    """Floats in one chunk's statistics: counts and sums, plus the second moment."""
    k, d = model.n_clusters, model.data.d
    second = {None: 0, "norm": k, "diagonal": k * d, "full": k * d * d}
    return k * (1 + d) + second[model.emission.second_moment(model.normalizer)]


def run_chunks(model: HMRF, function: Any, arguments: Any,
               statistics: bool = True) -> tuple[Any, Any] | tuple[list[Any], Any]:
    """One task per chunk, ``function(*arguments[c]) -> (results, statistics)``, computed
    at once; returns the list of every chunk's results (gathered to the client) and the
    sum of their statistics in chunk order (``None`` if ``statistics`` is false).

    Statistics of at most ``TREE_ABOVE`` floats a chunk are added up by the client,
    larger ones by a tree of tasks (``tree_reduce``); either way in chunk order.
    """
    tree = statistics and _statistics_size(model) > TREE_ABOVE
    tasks = [dask.delayed(function, pure=False, nout=2 if tree else None)(*args) for args in arguments]
    if tree:
        results, total = dask.compute([t[0] for t in tasks], tree_reduce([t[1] for t in tasks]))
        return results, total
    out = dask.compute(tasks)[0]
    return [r for r, _ in out], _sum_all(*(st for _, st in out)) if statistics else None


def _stack_rows(parts, k):
    parts = [p for p in parts if p.shape[0]]
    return np.vstack(parts) if parts else np.empty((0, k))


def chunk_pass(family, X, data, params, normalizer, n_clusters, clamped, previous, local, accumulate,
               shift, tree, gather=None):
    """:func:`chunk_assignment` with the chunk's labels as an output of their own, to stay
    on the worker: ``(labels, summary, stats)``. ``summary``, O(m_c k + k), is ``(cost,
    previous_cost, constrained_unary, labels of the constrained rows, free_changed,
    counts, stats, rows at gather)``; the statistics travel in it unless ``tree``.
    """
    (labels, cost, total, unary_c), stats = chunk_assignment(
        family, X, data, params, normalizer, n_clusters, clamped, previous, local, accumulate, shift)
    changed = 0
    if previous is not None:
        diff = labels != previous
        if local is not None:
            diff[local] = False
        changed = int(np.count_nonzero(diff))
    at = labels[local] if local is not None else labels[:0]
    summary = (cost, total, unary_c, at.astype(np.int64), changed, np.bincount(labels, minlength=n_clusters),
               None if tree else stats, _rows_at(X, gather))
    return labels, summary, stats if tree else None


def _rows_at(X, local):
    """The chunk's rows at the chunk-local indices ``local`` (``None`` without any)."""
    return X[local] if local is not None and len(local) else None


def _previous_chunks(model, previous):
    """The previous labelling as one argument a chunk: the chunks of a
    :class:`~hmrf.distributed.ChunkLabels`, or labels held by the client sent once."""
    data, k = model.data, model.n_clusters
    if previous is None:
        return [None] * data.n_chunks
    if isinstance(previous, ChunkLabels):
        return previous.chunks
    return data.send(data.pieces(np.asarray(previous).astype(label_dtype(k))))


def chunk_pass_kept(family, X, data, params, normalizer, n_clusters, clamped, previous, local, accumulate,
                    shift, tree):
    """:func:`chunk_pass` for a constrained part solved on the workers
    (:mod:`hmrf.distributed.components`): the constrained rows' cost rows, previous labels
    and data rows stay on the worker as outputs of their own, and the summary holds the
    argmin's cluster sizes at them: ``(labels, summary, stats, cost rows, previous
    labels or None, rows)``."""
    labels, summary, stats = chunk_pass(family, X, data, params, normalizer, n_clusters, clamped, previous,
                                        local, accumulate, shift, tree)
    cost, total, unary_c, at, changed, counts, st, _ = summary
    kept_previous = None if previous is None else np.asarray(previous[local])
    kept_rows = X[local if local is not None else np.empty(0, dtype=np.int64)]
    summary = (cost, total, None, np.bincount(at, minlength=n_clusters), changed, counts, st, None)
    return labels, summary, stats, unary_c, kept_previous, kept_rows


def _run_chunk_tasks(tasks, tree, kept_outputs=0):
    """Run the per-chunk ``(labels, summary, stats, *kept)`` tasks of a pass as one graph:
    ``(label_chunks, summaries, tree-reduced statistics or None, kept)``; the label
    chunks and the ``kept_outputs`` lists stay persisted on the workers."""
    n_chunks = len(tasks)
    wanted = [t[0] for t in tasks] + [t[3 + j] for j in range(kept_outputs) for t in tasks] + \
        [t[1] for t in tasks]
    if tree:
        wanted.append(tree_reduce([t[2] for t in tasks]))
    out = dask.persist(*wanted)
    stay = (1 + kept_outputs) * n_chunks
    small = dask.compute(*out[stay:])
    kept = [list(out[(1 + j) * n_chunks:(2 + j) * n_chunks]) for j in range(kept_outputs)]
    return list(out[:n_chunks]), small[:n_chunks], (small[-1] if tree else None), kept


def dask_assignment_pass(model: HMRF, params: EmissionParams, previous: NDArray[np.intp] | None = None,
                         constrained: NDArray[np.bool_] | None = None, accumulate: bool = False,
                         shift: NDArray[np.floating] | None = None) -> AssignmentPass:
    """:func:`hmrf.em.passes.assignment_pass` over the chunks of a
    :class:`~hmrf.distributed.DaskHMRF`, as one Dask computation (module docstring).

    Parameters and result as :func:`hmrf.em.passes.assignment_pass`, except that
    ``previous`` may be (and ``labels`` of the result is) a
    :class:`~hmrf.distributed.ChunkLabels`; the constrained points' rows come with the
    first pass that has them (``model.X`` keeps them,
    :meth:`hmrf.distributed.GatheredRows.keep`).
    """
    data, k = model.data, model.n_clusters
    terms, clamped, local = _per_chunk(model, constrained)
    prev = _previous_chunks(model, previous)
    par = dask.delayed(params, traverse=False)
    tree = bool(accumulate) and _statistics_size(model) > TREE_ABOVE
    args = [(data.family_key, x, t, par, model.normalizer, k, c, p, loc, accumulate, shift)
            for x, t, c, p, loc in zip(data.chunks, terms, clamped, prev, local)]
    on_workers = constrained is not None and len(constrained) >= model.component_tasks_above
    if on_workers:
        tasks = [dask.delayed(chunk_pass_kept, pure=False, nout=6)(*a, tree) for a in args]
    else:
        wanted, gather = _rows_to_gather(model, constrained)
        tasks = [dask.delayed(chunk_pass, pure=False, nout=3)(*a, tree, g) for a, g in zip(args, gather)]
    label_chunks, summaries, reduced, kept = _run_chunk_tasks(tasks, tree, 3 if on_workers else 0)
    cost, totals, rows, at, changed, counts, parts, gathered = zip(*summaries)
    if not on_workers:
        _keep_rows(model, wanted, gathered)
    stats = reduced if tree else _sum_all(*parts) if accumulate else None
    nodes = np.empty(0, dtype=np.int64) if constrained is None else np.asarray(constrained, dtype=np.int64)

    def costs():  # only for re-seeding an empty cluster: one more pass, minima gathered
        again = [(*a[:9], False, a[10], True) for a in args]
        return np.concatenate([r[1] for r in run_chunks(model, chunk_assignment, again, False)[0]])

    previous_cost = float("nan") if previous is None else float(sum(totals))
    if on_workers:  # the constrained part stays on the workers, solved there by the E-step
        labels = ChunkLabels(data, label_chunks, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64),
                             np.sum(counts, axis=0))
        step = AssignmentPass(labels, float(sum(cost)), previous_cost, None, stats, costs=costs)
        outputs = dict(unary=kept[0], previous=kept[1], rows=kept[2], labels=label_chunks, local=local,
                       counts=np.sum(counts, axis=0), at_counts=np.sum(at, axis=0),
                       free_changed=int(sum(changed)))

        def solve(step, engine, sub, prev_labels, rng):  # the step as an argument: no reference cycle
            from .components import solve_on_workers

            return solve_on_workers(_component_plan(model, nodes, sub), model, step, outputs, engine,
                                    prev_labels, rng, accumulate, shift)

        step.solve = solve
    else:
        labels = ChunkLabels(data, label_chunks, nodes, np.concatenate(at), np.sum(counts, axis=0),
                             previous=previous if isinstance(previous, ChunkLabels) else None,
                             free_changed=int(sum(changed)), free_except=nodes)
        step = AssignmentPass(labels, float(sum(cost)), previous_cost, _stack_rows(rows, k), stats,
                              costs=costs)

    constrained_unary = step.constrained_unary  # the closure holds the rows, not the step (no cycle)

    def reseed(new, graph, movable, own_cost):  # empty clusters: reductions on the workers
        from .reseed import reseed_on_workers

        return reseed_on_workers(model, params, args, new, graph, own_cost, constrained_unary,
                                 kept[0] if on_workers else None)

    step.reseed = reseed
    return step


def _rows_to_gather(model, constrained):
    """The constrained points whose rows the client does not hold yet, and their
    chunk-local indices per chunk (``None`` for a chunk without any)."""
    data = model.data
    if constrained is None or not len(constrained):
        return np.empty(0, dtype=np.int64), [None] * data.n_chunks
    wanted = model.X.missing(np.asarray(constrained, dtype=np.int64))
    if not wanted.size:
        return wanted, [None] * data.n_chunks
    return wanted, [loc if loc.size else None for loc in data.split(wanted)]


def _keep_rows(model, wanted, gathered):
    """The rows of the points ``wanted`` that a pass sent, kept by ``model.X``."""
    if not wanted.size:
        return
    parts = [g for g in gathered if g is not None]
    model.X.keep(wanted, sp.vstack(parts, format="csr") if model.data.sparse else np.concatenate(parts))


def _component_plan(model, nodes, sub):
    """The :class:`~hmrf.distributed.components.ComponentPlan` of the constrained part
    ``sub``, kept on the model while the E-steps see the same graph."""
    from .components import ComponentPlan

    cached = getattr(model, "_component_plan", None)
    if cached is None or cached[0] is not sub:
        cached = model._component_plan = (sub, ComponentPlan(model.data, nodes, sub))
    return cached[1]


def chunk_soft_pass(family, X, data, params, normalizer, n_clusters, clamped, local, shift, tree,
                    gather=None):
    """:func:`chunk_soft_assignment` as :func:`chunk_pass`: ``(labels, summary, stats)``,
    ``summary`` = ``(free energy, constrained cost rows, their labels, counts, stats,
    rows at gather)``."""
    (labels, free, unary_c), stats = chunk_soft_assignment(family, X, data, params, normalizer, n_clusters,
                                                           clamped, local, shift)
    at = labels[local] if local is not None else labels[:0]
    summary = (free, unary_c, at.astype(np.int64), np.bincount(labels, minlength=n_clusters),
               None if tree else stats, _rows_at(X, gather))
    return labels, summary, stats if tree else None


def dask_soft_pass(model: HMRF, params: EmissionParams, constrained: NDArray[np.bool_] | None = None,
                   shift: NDArray[np.floating] | None = None) -> SoftPass:
    """:func:`hmrf.em.passes.soft_pass` over the chunks of a :class:`~hmrf.distributed.DaskHMRF`,
    as one Dask computation (as :func:`dask_assignment_pass`; the most probable labels
    stay on the workers)."""
    data, k = model.data, model.n_clusters
    terms, clamped, local = _per_chunk(model, constrained)
    par = dask.delayed(params, traverse=False)
    tree = _statistics_size(model) > TREE_ABOVE
    wanted, gather = _rows_to_gather(model, constrained)
    tasks = [dask.delayed(chunk_soft_pass, pure=False, nout=3)(data.family_key, x, t, par, model.normalizer,
                                                               k, c, loc, shift, tree, g)
             for x, t, c, loc, g in zip(data.chunks, terms, clamped, local, gather)]
    label_chunks, summaries, stats, _ = _run_chunk_tasks(tasks, tree)
    free, rows, at, counts, parts, gathered = zip(*summaries)
    _keep_rows(model, wanted, gathered)
    if not tree:
        stats = _sum_all(*parts)
    nodes = np.empty(0, dtype=np.int64) if constrained is None else np.asarray(constrained, dtype=np.int64)
    labels = ChunkLabels(data, label_chunks, nodes, np.concatenate(at), np.sum(counts, axis=0))
    return SoftPass(labels, float(sum(free)), _stack_rows(rows, k), stats)
