"""The constrained part of a Dask fit solved on the workers, one task per group of
connected components (docs/scaling_out.md).

From ``COMPONENT_TASKS_ABOVE`` constrained points on, the E-step of the constrained part
runs where its costs are, not on the client:

1. the components of the constraint graph (:meth:`hmrf.graph.PairwiseGraph.components`)
   are grouped whole into tasks of about equal numbers of points, once per graph;
2. each chunk's task of the pass keeps its constrained rows' costs, previous labels and
   data rows and cuts them into one piece per task;
3. each task runs the engine (:func:`hmrf.em.loop.solve_e_step`) from the previous
   labels and returns only numbers (energies, lower bound, cluster sizes, changes);
4. the client keeps or rejects the whole labelling as in memory, and one task per chunk
   writes the kept labels over its argmin labels and returns the change of its M-step
   statistics.

The client receives O(k·d + tasks + chunks) per iteration. Engines draw their random
numbers from a child generator per task, so their labels differ from the in-memory ones
by those draws.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import dask
import numpy as np

from ..em.loop import solve_e_step
from ..graph import PairwiseGraph
from ..inference.base import InferenceResult
from .data import _current_client, _sum_all, tree_reduce
from .labels import ChunkLabels

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

    from .data import ChunkedData

__all__ = ["ComponentPlan", "COMPONENT_TASKS_ABOVE", "POINTS_PER_TASK", "component_tasks_above",
           "solve_on_workers"]

#: With at least this many constrained points the constrained part is solved on the
#: workers (module docstring); the Dask configuration value ``hmrf.component-tasks-above``
#: or :func:`hmrf.distributed.fit_dask`'s ``component_tasks_above=`` overrides it.
COMPONENT_TASKS_ABOVE = 1_000_000

#: Points a component task aims at (as many tasks as chunks where the components allow,
#: at most as many as components; a large component takes a task of its own).
POINTS_PER_TASK = 250_000


def component_tasks_above(value: int | None = None) -> int:
    """The threshold in use: ``value`` if given, else ``hmrf.component-tasks-above`` from
    Dask's configuration, else ``COMPONENT_TASKS_ABOVE``."""
    if value is None:
        value = dask.config.get("hmrf.component-tasks-above", COMPONENT_TASKS_ABOVE)
    value = int(value)
    if value < 1:
        raise ValueError(f"component_tasks_above must be an integer >= 1; got {value}.")
    return value


def _keep(values: list) -> list:
    """Values made on the client as task arguments kept on the workers (as
    :meth:`~hmrf.distributed.ChunkedData.send`)."""
    if _current_client() is None:
        return values
    return list(dask.persist(*[dask.delayed(v, traverse=False) for v in values]))


class ComponentPlan:
    """Connected components of the constrained part grouped into tasks (module docstring).

    ``nodes`` are the constrained points (increasing) and ``sub`` the factors among
    them, re-indexed to ``0..m-1``. ``task_graphs`` holds each task's subgraph (on its
    points in increasing order), kept on the workers; ``chunk_cuts`` per chunk its
    constrained rows ordered by task, where each task's run ends, and which tasks they
    are.
    """

    def __init__(self, data: ChunkedData, nodes: NDArray[np.intp], sub: PairwiseGraph) -> None:
        m = int(nodes.shape[0])
        n_comp, comp = sub.components()
        size = np.bincount(comp, minlength=n_comp)
        want = int(min(n_comp, max(data.n_chunks, -(-m // POINTS_PER_TASK))))
        before = np.cumsum(size) - size  # points in the components before each one
        task_of_comp = np.minimum(before * want // max(m, 1), want - 1)
        used, task_of_comp = np.unique(task_of_comp, return_inverse=True)
        self.n_tasks = int(used.shape[0])
        task = task_of_comp.ravel()[comp]  # (m,) task of every constrained point
        order = np.argsort(task, kind="stable")  # points by task, increasing within a task
        per_task = np.bincount(task, minlength=self.n_tasks)
        first = np.concatenate([[0], np.cumsum(per_task)])
        local = np.empty(m, dtype=np.int64)
        local[order] = np.arange(m) - first[task[order]]  # a point's index in its task
        e = sub.edges
        edge_task = task[e[:, 0]] if e.shape[0] else np.empty(0, dtype=np.int64)
        by_task = np.argsort(edge_task, kind="stable")  # each task's edges in the graph's order
        cut = np.searchsorted(edge_task[by_task], np.arange(self.n_tasks + 1))
        graphs = []
        for t in range(self.n_tasks):  # a loop over tasks, each vectorised over its edges
            idx = by_task[cut[t]:cut[t + 1]]
            graphs.append(PairwiseGraph(
                int(per_task[t]), local[e[idx]].reshape(-1, 2), sub.weight[idx], sub.kind[idx], sub.tables,
                None if sub.table_index is None else sub.table_index[idx]))
        self.sizes = per_task
        # per chunk: its constrained rows are the positions [lo, hi) of ``nodes``
        bounds = np.searchsorted(nodes, np.concatenate([data.starts, data.stops[-1:]]))
        cuts, self.touch = [], []  # touch[c]: (task, piece length) of chunk c, in task order
        for c in range(data.n_chunks):  # a loop over chunks, each vectorised over its rows
            t_c = task[bounds[c]:bounds[c + 1]]
            o = np.argsort(t_c, kind="stable")
            tasks, counts = np.unique(t_c[o], return_counts=True)
            cuts.append((o, np.cumsum(counts)))
            self.touch.append(list(zip(tasks.tolist(), counts.tolist())))
        self.task_graphs = _keep(graphs)
        self.chunk_cuts = _keep(cuts)


# ----------------------------------------------------------------- worker tasks
def _cut(unary_c, previous_c, cut):
    """A chunk's constrained cost rows and previous labels, one piece per task that holds
    some of them (in task order)."""
    order, ends = cut
    starts = np.concatenate([[0], ends[:-1]])
    prev = None if previous_c is None else previous_c[order]
    rows = unary_c[order]
    return [(rows[a:b], None if prev is None else prev[a:b]) for a, b in zip(starts, ends)]


def _solve_task(engine, graph, rng, k, *pieces):
    """The engine on one task's components: ``(labels, previous labels or None),
    summary``, the summary being what the client receives (module docstring)."""
    unary = np.vstack([p[0] for p in pieces]).astype(np.float64, copy=False)
    init = None if pieces[0][1] is None else np.concatenate([p[1] for p in pieces]).astype(np.int64)
    res = solve_e_step(engine, unary, graph, init, rng)
    labels = np.asarray(res.labels, dtype=np.int64)
    old = prev_pairwise = np.nan
    old_counts, changed = np.zeros(k, dtype=np.int64), 0
    if init is not None:
        prev_pairwise = graph.pairwise_energy(init)
        old = float(unary[np.arange(init.shape[0]), init].sum() + prev_pairwise)
        old_counts = np.bincount(init, minlength=k)
        changed = int(np.count_nonzero(labels != init))
    summary = dict(energy=float(res.energy), old=old, prev_pairwise=float(prev_pairwise),
                   lower_bound=res.lower_bound, counts=np.bincount(labels, minlength=k),
                   old_counts=old_counts,
                   changed=changed, minima=float(unary.min(axis=1).sum()), n_iter=int(res.n_iter),
                   converged=bool(res.converged), info=res.info)
    return (labels, init), summary


def _kept(solved, rejected):
    """The labels kept of a task: the engine's, or the previous ones when rejected."""
    return solved[1] if rejected else solved[0]


def _write_back(family, X_c, labels, local, cut, stats_args, *pieces):
    """A chunk's labels with the kept labels of its constrained rows written over the
    argmin ones, and the change of its M-step statistics (``None`` without
    ``stats_args``), from ``X_c``, the constrained rows the pass kept (the chunk is not
    read again)."""
    order, _ = cut
    rows = local[order]
    new = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int64)
    old = labels[rows].astype(np.int64)
    out = labels.copy()
    out[rows] = new
    if stats_args is None:
        return out, None
    k, normalizer, shift = stats_args
    moved = np.flatnonzero(new != old)
    if not moved.size:
        return out, None
    sub = X_c[order[moved]]  # X[local][order] = X[rows]
    delta = family.statistics(sub, new[moved], k, normalizer, shift) - \
        family.statistics(sub, old[moved], k, normalizer, shift)
    return out, delta


def _add_stats(*parts):
    parts = [p for p in parts if p is not None]
    return _sum_all(*parts) if parts else None


# ----------------------------------------------------------------- the E-step
def solve_on_workers(plan: ComponentPlan, model: Any, step: Any, chunk_outputs: dict, engine: Any,
                     previous: Any, rng: np.random.Generator, accumulate: bool, shift: Any) -> tuple:
    """The E-step of the constrained part on the workers (module docstring, steps 2-4):
    ``(labels, energy, result, rejected, previous_pairwise)`` as the EM loop's E-step,
    with ``step.labels`` and ``step.stats`` set; ``chunk_outputs`` are the pass's
    per-chunk outputs (:func:`~hmrf.distributed.passes.dask_assignment_pass`).
    """
    data, k = model.data, model.n_clusters
    n_chunks = data.n_chunks
    cuts = [dask.delayed(_cut, pure=False)(u, p, c)
            for u, p, c in zip(chunk_outputs["unary"], chunk_outputs["previous"], plan.chunk_cuts)]
    inputs = [[] for _ in range(plan.n_tasks)]  # each task's pieces, in chunk order
    for c in range(n_chunks):
        for j, (t, _) in enumerate(plan.touch[c]):
            inputs[t].append(dask.delayed(operator.getitem, pure=False)(cuts[c], j))
    try:
        children = rng.spawn(plan.n_tasks)
    except (AttributeError, TypeError, ValueError):  # a Generator without a seed sequence
        children = [np.random.default_rng(s) for s in rng.integers(2**63, size=plan.n_tasks)]
    engine_key = dask.delayed(engine, traverse=False)
    tasks = [dask.delayed(_solve_task, pure=False, nout=2)(engine_key, g, r, k, *pieces)
             for g, r, pieces in zip(plan.task_graphs, children, inputs)]
    # both outputs persisted at once, so that each task runs once on any scheduler
    out = dask.persist(*[t[0] for t in tasks], *[t[1] for t in tasks])
    solved, summaries = out[:plan.n_tasks], dask.compute(*out[plan.n_tasks:])
    energy = float(sum(s["energy"] for s in summaries))
    has_previous = previous is not None
    old = float(sum(s["old"] for s in summaries)) if has_previous else np.nan
    rejected = bool(has_previous and energy > old)
    # each task's kept labels cut back into the chunks' pieces
    offsets = [0] * plan.n_tasks
    back = [[] for _ in range(n_chunks)]
    kept = [dask.delayed(_kept, pure=False)(s, rejected) for s in solved]
    for c in range(n_chunks):
        for t, length in plan.touch[c]:
            a = offsets[t]
            back[c].append(dask.delayed(operator.getitem, pure=False)(kept[t], slice(a, a + length)))
            offsets[t] = a + length
    stats_args = (k, model.normalizer, shift) if accumulate else None
    write = dask.delayed(_write_back, pure=False, nout=2)
    terms = [write(data.family_key, x, lab, loc, cut, stats_args, *pcs)
             for x, lab, loc, cut, pcs in zip(chunk_outputs["rows"], chunk_outputs["labels"],
                                              chunk_outputs["local"], plan.chunk_cuts, back)]
    out = dask.persist(*[t[0] for t in terms], *([tree_reduce([t[1] for t in terms], _add_stats)]
                                                  if accumulate else []))
    label_chunks = list(out[:n_chunks])
    if accumulate:
        delta = dask.compute(out[-1])[0]
        if delta is not None:
            step.stats = step.stats + delta
    counts = np.asarray(chunk_outputs["counts"], dtype=np.int64) - chunk_outputs["at_counts"] + \
        np.sum([s["old_counts" if rejected else "counts"] for s in summaries], axis=0)
    changed = chunk_outputs["free_changed"] + (0 if rejected else sum(s["changed"] for s in summaries))
    labels = ChunkLabels(data, label_chunks, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), counts,
                         previous=previous if isinstance(previous, ChunkLabels) else None,
                         free_changed=int(changed) if has_previous else None)
    step.labels = labels
    step.constrained_min = float(sum(s["minima"] for s in summaries))
    bounds = [s["lower_bound"] for s in summaries]
    result = InferenceResult(
        labels=np.empty(0, dtype=np.int64), energy=energy,
        lower_bound=None if any(b is None for b in bounds) else float(sum(bounds)),
        n_iter=max(s["n_iter"] for s in summaries), converged=all(s["converged"] for s in summaries),
        info=dict(n_tasks=plan.n_tasks, time=max(s["info"].get("time", 0.0) for s in summaries)))
    free = step.cost_total - step.constrained_min
    chosen = old if rejected else energy
    prev_pairwise = float(sum(s["prev_pairwise"] for s in summaries)) if has_previous else None
    return labels, free + chosen, result, rejected, prev_pairwise

