"""Labels of a Dask fit, left on the workers with their chunks.

:class:`ChunkLabels` is what the EM loop holds for a :class:`~hmrf.distributed.DaskHMRF`
instead of an (n,) vector: one task per chunk (one byte a point for k <= 256), plus what
the client needs, O(m + k): the labels of the points it knows by index and the cluster
sizes. The chunks' labels are tasks of the graph, never scattered data, so a lost worker
recomputes them.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import dask
import dask.array as da
import numpy as np

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import DTypeLike, NDArray

    from .data import ChunkedData

__all__ = ["ChunkLabels"]


def _write_rows(labels, local, values):
    """A chunk's labels with ``labels[local] = values`` (a copy)."""
    out = labels.copy()
    out[local] = values
    return out


def _changed(labels, other) -> int:
    return int(np.count_nonzero(labels != other))


class ChunkLabels:
    """Labels of ``n`` points as one task per chunk, with the labels of some points and
    the cluster sizes on the client (module docstring).

    Parameters
    ----------
    data : ChunkedData
        The chunks the labels belong to (their row ranges).
    chunks : list of Delayed
        Each chunk's labels (of ``label_dtype(n_clusters)``), persisted on the workers.
    nodes, values : ndarray of int
        Increasing point indices whose labels the client knows, and those labels.
    counts : ndarray (k,) of int
    previous, free_changed, free_except : optional
        The labels of the pass that computed these, and the number of points outside
        ``free_except`` (the constrained points, left to the client) whose label differs
        from them (counted on the workers by that pass).
    Notes
    -----
    ``labels[idx]`` with integer indices returns their labels (read from their chunks
    when unknown); converting all labels to a NumPy array raises a ``ValueError``:
    :meth:`compute` gathers them, :meth:`to_dask` returns a lazy Dask array.
    """

    ndim = 1

    def __init__(self, data: ChunkedData, chunks: Any, nodes: NDArray[np.intp], values: NDArray[np.intp],
                 counts: NDArray[np.intp], previous: ChunkLabels | None = None,
                 free_changed: int | None = None, free_except: NDArray[np.intp] | None = None) -> None:
        self._data = data
        self.chunks = list(chunks)
        self.nodes = np.asarray(nodes, dtype=np.int64)
        self.values = np.asarray(values, dtype=np.int64)
        self.counts = np.asarray(counts, dtype=np.int64)
        self.shape = (data.n,)
        self.dtype = np.dtype(np.int64)
        # a weak reference: holding the previous labelling would keep every pass's labels
        # on the workers for the whole fit
        self._previous = None if previous is None else weakref.ref(previous)
        self._free_changed = free_changed
        self._free_except = np.empty(0, dtype=np.int64) if free_except is None else \
            np.asarray(free_except, dtype=np.int64)

    @classmethod
    def constant(cls, data: Any, label: int, n_clusters: int) -> ChunkLabels:
        """Every point labelled ``label``, each chunk's labels made on its worker."""
        from .data import label_dtype

        dtype = label_dtype(n_clusters)
        chunks = [dask.delayed(np.full, pure=True)(int(e - s), label, dtype=dtype)
                  for s, e in zip(data.starts, data.stops)]
        counts = np.zeros(n_clusters, dtype=np.int64)
        counts[label] = data.n
        return cls(data, chunks, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), counts)

    def __len__(self) -> int:
        return self.shape[0]

    # -------------------------------------------------------------- client view
    def __getitem__(self, index):
        idx = np.asarray(index)
        if idx.dtype.kind not in "iu":
            raise ValueError(self._refusal(f"indexing with {type(index).__name__}"))
        flat = idx.ravel().astype(np.int64)
        out = np.empty(flat.shape[0], dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.nodes, flat), max(self.nodes.size - 1, 0))
        known = self.nodes[pos] == flat if self.nodes.size else np.zeros(flat.shape[0], dtype=bool)
        out[known] = self.values[pos[known]]
        if not known.all():  # points the client does not know: read them from their chunks
            if flat.min() < 0 or flat.max() >= self.shape[0]:
                raise IndexError(f"label index out of range for {self.shape[0]} points.")
            missing, inverse = np.unique(flat[~known], return_inverse=True)
            out[~known] = self._fetch(missing)[inverse.ravel()]
        return out.reshape(idx.shape)

    def __array__(self, dtype=None, copy=None):
        raise ValueError(self._refusal("converting the labels to a NumPy array"))

    def _refusal(self, what: str) -> str:
        return (f"{what} needs every point's label, which stays on the workers; call "
                ".compute() for a NumPy copy or .to_dask() for a Dask array.")

    def n_used(self) -> int:
        """Number of non-empty clusters."""
        return int(np.count_nonzero(self.counts))

    def n_changed_from(self, previous: ChunkLabels) -> int:
        """Points whose label differs from ``previous``: from the pass's count, or else by a
        pass over the chunks (:meth:`count_changed`)."""
        if self._previous is not None and previous is self._previous() and self._free_changed is not None:
            try:
                nodes = self._free_except
                return int(self._free_changed + np.count_nonzero(self[nodes] != previous[nodes]))
            except ValueError:  # ``previous`` does not know all of them
                pass
        return self.count_changed(previous)

    # ---------------------------------------------------------------- updates
    def with_rows(self, rows: NDArray[np.intp], values: NDArray[Any]) -> ChunkLabels:
        """These labels with the points ``rows`` (increasing, distinct) set to ``values``
        (one small task per chunk that holds a changed point)."""
        rows = np.asarray(rows, dtype=np.int64)
        values = np.asarray(values, dtype=np.int64)
        k = self.counts.shape[0]
        old = self[rows]
        changed = old != values
        counts = self.counts - np.bincount(old[changed], minlength=k) \
            + np.bincount(values[changed], minlength=k)
        chunks = list(self.chunks)
        from .data import label_dtype

        for c, local in enumerate(self._data.split(rows[changed])):  # a loop over chunks
            if local.size:
                vals = values[changed][np.searchsorted(rows[changed], local + self._data.starts[c])]
                chunks[c] = dask.delayed(_write_rows, pure=False)(chunks[c], local,
                                                                  vals.astype(label_dtype(k)))
        nodes = np.union1d(self.nodes, rows)
        vals = np.empty(nodes.shape[0], dtype=np.int64)
        vals[np.searchsorted(nodes, self.nodes)] = self.values
        vals[np.searchsorted(nodes, rows)] = values
        # the pass's count of changed points holds while only the points it left out change
        free = self._free_changed if np.isin(rows[changed], self._free_except).all() else None
        previous = None if self._previous is None else self._previous()
        return ChunkLabels(self._data, chunks, nodes, vals, counts, previous, free, self._free_except)

    def _fetch(self, rows) -> np.ndarray:
        """Labels of the increasing, distinct points ``rows`` read from their chunks."""
        parts = [dask.delayed(np.take, pure=False)(self.chunks[c], local)
                 for c, local in enumerate(self._data.split(rows)) if local.size]
        got = dask.compute(*parts)
        return np.concatenate(got).astype(np.int64) if got else np.empty(0, dtype=np.int64)

    def persist(self) -> ChunkLabels:
        """The chunks' tasks persisted on the workers (computed once)."""
        self.chunks = list(dask.persist(*self.chunks))
        return self

    # --------------------------------------------------------------- results
    def moved_from(self, other: ChunkLabels) -> np.ndarray:
        """Points whose label differs from ``other``'s, for labels that agree outside the
        points both know (one was made from the other by :meth:`with_rows`)."""
        nodes = np.union1d(self.nodes, other.nodes)
        return nodes[self[nodes] != other[nodes]]

    def count_changed(self, other: ChunkLabels) -> int:
        """Points whose label differs from ``other``'s, by a pass over the chunks (only the
        count reaches the client)."""
        parts = [dask.delayed(_changed, pure=False)(a, b) for a, b in zip(self.chunks, other.chunks)]
        return int(sum(dask.compute(*parts)))

    def to_dask(self, dtype: DTypeLike = np.int64) -> NDArray[Any]:
        """The labels as a Dask array chunked like the rows of the data (no copy on the
        client), of ``dtype``."""
        from .data import label_dtype

        k = self.counts.shape[0]
        parts = [da.from_delayed(c, shape=(int(e - s),), dtype=label_dtype(k))
                 for c, s, e in zip(self.chunks, self._data.starts, self._data.stops)]
        arr = da.concatenate(parts) if len(parts) > 1 else parts[0]
        if tuple(arr.chunks[0]) != self._data.row_chunks:  # empty chunks of X
            arr = arr.rechunk((self._data.row_chunks,))
        return arr.astype(dtype)

    def compute(self) -> np.ndarray:
        """Every label, gathered to the client (n int64)."""
        parts = dask.compute(*self.chunks)
        return np.concatenate(parts).astype(np.int64)

    def __repr__(self) -> str:
        return f"ChunkLabels(n={self.shape[0]}, {len(self.chunks)} chunks, known={self.nodes.size})"
