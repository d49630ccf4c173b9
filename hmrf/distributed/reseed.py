"""Re-seeding an empty cluster of a Dask fit by reductions on the workers.

The rule of :mod:`hmrf.em.loop` ("Empty clusters"), with each point's cost kept with
its chunk: per empty cluster one task a chunk returns its best candidate ``(cost,
row)`` and the client takes the largest (the first on ties, as in memory). The
constrained points enter with their cost under their label and whether their move
raises the pairwise energy; the fallback runs on them on the client. The client holds
O(m + chunks), never O(n).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dask
import numpy as np

from ..em.loop import OWN_COST_TRIALS, move_cost
from ..model import block_unary

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

    from ..graph import PairwiseGraph
    from .labels import ChunkLabels

__all__ = ["reseed_on_workers"]


def _chunk_best(family, X, data, params, normalizer, clamped, costs, labels, counts, node_local, node_cost,
                node_ok, h):
    """The chunk's best candidate for the empty cluster ``h``: ``(cost, chunk-local row)``,
    or ``(-inf, -1)`` when no row qualifies (module docstring)."""
    cost = np.array(costs, dtype=np.float64)
    cost[node_local] = node_cost
    cost = np.where(np.isfinite(cost), cost, np.finfo(float).max)
    may = counts[labels.astype(np.int64)] > 1
    if clamped is not None:
        may &= clamped < 0
    may[node_local[~node_ok]] = False
    score = np.where(may, cost, -np.inf)
    while True:  # largest cost first; a row the cluster forbids is skipped (rarely more than one)
        i = int(np.argmax(score))
        if score[i] == -np.inf:
            return -np.inf, -1
        row = block_unary(family, X[i:i + 1], params, normalizer, None if data is None else data[i:i + 1],
                          None if clamped is None else clamped[i:i + 1])
        if np.isfinite(row[0, h]):
            return float(score[i]), i
        score[i] = -np.inf


def _chunk_costs(*args):
    """Every row's minimum cost in a chunk's pass (:func:`~hmrf.distributed.passes.chunk_assignment`)."""
    from .passes import chunk_assignment

    return chunk_assignment(*args)[0][1]


def _take_costs(unary_c, labels, local):
    """The constrained rows' costs under their labels, from the rows kept on the worker."""
    return unary_c[np.arange(local.shape[0]), labels[local].astype(np.int64)].astype(np.float64)


def reseed_on_workers(model: Any, params: Any, pass_args: list, labels: ChunkLabels, graph: PairwiseGraph,
                      own_cost: Any, constrained_unary: NDArray[np.floating] | None = None,
                      kept_unary: list | None = None) -> tuple[ChunkLabels, int]:
    """Give empty clusters a point (module docstring): the choice of
    the in-memory re-seeding of :mod:`hmrf.em.loop`, with the costs on the workers.

    ``pass_args`` are the per-chunk arguments of
    :func:`~hmrf.distributed.passes.chunk_assignment` of the pass (its minimum costs are
    recomputed once and kept on the workers); ``own_cost`` as for the in-memory
    re-seeding (``hmrf.em.loop._reseed``); the constrained points' cost rows are
    ``constrained_unary`` when the client holds them, else each chunk's ``kept_unary``.
    Returns the new labels and the number of clusters re-seeded.
    """
    empty = np.flatnonzero(labels.counts == 0)
    if empty.size == 0:
        return labels, 0
    data = model.data
    nodes, sub = graph.constrained_part()
    lab_nodes = labels[nodes]
    if constrained_unary is not None:
        node_cost = np.asarray(constrained_unary[np.arange(nodes.size), lab_nodes], dtype=np.float64)
    else:  # the cost rows stayed on the workers: m costs fetched once
        parts = [dask.delayed(_take_costs, pure=False)(u, lab, loc)
                 for u, lab, loc in zip(kept_unary, labels.chunks, data.split(nodes))]
        node_cost = np.concatenate(dask.compute(*parts)) if parts else np.empty(0)
    finite = np.isfinite(node_cost)
    node_cost = np.where(finite, node_cost, np.finfo(float).max)
    movable = np.ones(nodes.size, dtype=bool) if model.clamped is None else model.clamped[nodes] < 0
    again = [(*a[:9], False, a[10], True) for a in pass_args]
    costs = dask.persist(*[dask.delayed(_chunk_costs, pure=False)(*a) for a in again])
    clamped = model.clamped_chunks() or [None] * data.n_chunks
    terms = data.data_terms or [None] * data.n_chunks
    par = dask.delayed(params, traverse=False)
    moved_nodes = np.zeros(nodes.size, dtype=bool)
    moved_free: list = []
    done = 0
    for h in empty:  # at most k iterations, each one reduction over the chunks
        counts = labels.counts
        delta = move_cost(lab_nodes, sub, h)
        may = (counts[lab_nodes] > 1) & movable
        ok = (delta <= 0) & ~moved_nodes
        pieces = data.split(nodes)
        offsets = np.searchsorted(nodes, data.starts)
        tasks = []
        chunk_args = zip(data.chunks, terms, clamped, costs, labels.chunks, pieces)
        for c, (x, t, cl, cost_c, lab_c, loc) in enumerate(chunk_args):  # a loop over chunks
            sl = slice(offsets[c], offsets[c] + loc.size)
            gone = np.asarray([i - data.starts[c] for i in moved_free if data.chunk_of([i])[0] == c],
                              dtype=np.int64)
            node_local = np.concatenate([loc, gone])
            tasks.append(dask.delayed(_chunk_best, pure=False)(
                data.family_key, x, t, par, model.normalizer, cl, cost_c, lab_c, counts, node_local,
                np.concatenate([node_cost[sl], np.full(gone.size, -np.inf)]),
                np.concatenate([ok[sl], np.zeros(gone.size, dtype=bool)]), int(h)))
        best = dask.compute(*tasks)
        scores = np.array([b[0] for b in best])
        c = int(np.argmax(scores)) if scores.size else 0
        if scores.size and scores[c] > -np.inf:
            i = int(data.starts[c] + best[c][1])
            labels = labels.with_rows(np.array([i]), np.array([h]))
            at = np.searchsorted(nodes, i)
            if at < nodes.size and nodes[at] == i:
                lab_nodes[at], moved_nodes[at], node_cost[at] = h, True, -np.inf
            else:
                moved_free.append(i)
            done += 1
            continue
        if own_cost is None:
            continue
        gain = np.where(may & finite & ~moved_nodes & (delta > 0) & np.isfinite(delta), node_cost - delta,
                        -np.inf)
        top = np.argsort(-gain, kind="stable")[:OWN_COST_TRIALS]
        for j in top[gain[top] > 0]:  # a few candidates, each one small M-step
            i = int(nodes[j])
            u = own_cost(i, int(h))
            if np.isfinite(u) and gain[j] - u > 1e-12 * max(1.0, abs(node_cost[j])):
                labels = labels.with_rows(np.array([i]), np.array([h]))
                lab_nodes[j], moved_nodes[j], node_cost[j] = h, True, -np.inf
                finite[j] = False
                done += 1
                break
    return labels, done
