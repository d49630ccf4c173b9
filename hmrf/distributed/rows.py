"""The client's stand-in for ``X``: a few rows by index, the column summary and the
initialisation's operations on the chunks, never all rows.

:class:`GatheredRows` gives rows by integer index (fetched and kept) and ``mean``,
``var``, ``sum``, ``max``, ``min`` along axis 0 from the
:class:`~hmrf.distributed.ColumnSummary`; anything that needs every row raises a
``ValueError``. It is the Dask :class:`~hmrf.backend.RowBackend`, on which
:mod:`hmrf.initialization` runs with the same random draws as in memory. Its k-means++
(:class:`ChunkDivergence`) keeps each row's divergence to its nearest centre with its
chunk: the client draws a chunk from the chunks' sums, then a task draws a row inside
it from the same uniform number, so a step holds O(chunks) and reads the chunks once;
the sums differ from the in-memory ones by round-off only.
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING

import dask
import numpy as np
import scipy.sparse as sp

from ..backend import InMemoryRows, MinDivergence, RowBackend, min_divergence_rows
from .data import FAN_IN, ChunkedData

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import DTypeLike, NDArray

    from ..emissions.base import EmissionFamily

__all__ = ["DaskRows", "GatheredRows", "ChunkDivergence"]


class DaskRows(RowBackend):
    """The rows of a row-chunked Dask array before a model reads them:
    ``HMRF(DaskRows(X), ...)`` is a :class:`~hmrf.distributed.DaskHMRF`; ``persist`` as
    :class:`~hmrf.distributed.ChunkedData`."""

    ndim = 2

    def __init__(self, X: Any, persist: bool | str = "auto") -> None:
        from .data import as_row_chunked

        self.array = as_row_chunked(X)
        self.persist = persist
        self.shape = tuple(int(s) for s in self.array.shape)

    def prepare(self, family: EmissionFamily) -> GatheredRows:
        """The chunks checked and prepared by ``family`` on the workers
        (:class:`~hmrf.distributed.ChunkedData`), read by index and summary."""
        return GatheredRows(ChunkedData(self.array, family, self.persist))

    @staticmethod
    def model_class() -> type:
        from .model import DaskHMRF

        return DaskHMRF

    def __repr__(self) -> str:
        return f"DaskRows(shape={self.shape}, persist={self.persist!r})"


class GatheredRows(RowBackend):
    """Rows of a :class:`ChunkedData` (``data``) by index, and its column summary:
    ``X[idx]`` (an integer, a list or an integer array) returns those prepared rows as
    the in-memory model would, fetching the missing ones in one computation;
    ``n_gathered`` counts the distinct rows fetched (the client holds these, m x d).
    """

    ndim = 2

    def __init__(self, data: ChunkedData) -> None:
        self._data = data
        self.data = data
        self.shape = (data.n, data.d)
        self.dtype = data.dtype
        self._index = np.empty(0, dtype=np.int64)
        self._rows = data.take(self._index)

    def prepare(self, family: EmissionFamily) -> GatheredRows:
        """These rows, prepared by their own family (another family needs the chunks again:
        :class:`DaskRows`)."""
        if family is not self._data.family:
            raise ValueError(f"these rows were prepared for {self._data.family!r}, not {family!r}; "
                             "build the model on DaskRows(X) instead.")
        return self

    model_class = staticmethod(DaskRows.model_class)

    @property
    def n_gathered(self) -> int:
        return int(self._index.size)

    @property
    def nnz(self) -> int:
        """Stored entries of sparse rows, from the summary pass; an ``AttributeError`` for
        dense rows, as for a NumPy array."""
        if not self._data.sparse:
            raise AttributeError("dense rows have no 'nnz'")
        return int(self._data.summary.nnz)

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            i = int(index) + (self.shape[0] if index < 0 else 0)
            rows = self._fetch(np.array([i]))
            return rows if sp.issparse(rows) else rows[0]
        idx = np.asarray(index) if isinstance(index, (list, tuple, np.ndarray)) else None
        if idx is None or (idx.size and idx.dtype.kind not in "iu") or idx.ndim != 1:
            raise ValueError(self._refusal(f"indexing with {type(index).__name__}"))
        idx = idx.astype(np.int64, copy=False)
        idx = np.where(idx < 0, idx + self.shape[0], idx)
        return self._fetch(idx)

    def _fetch(self, idx):
        if idx.size and (idx.min() < 0 or idx.max() >= self.shape[0]):
            raise IndexError(f"row index out of range for {self.shape[0]} rows.")
        missing = self.missing(np.unique(idx))
        if missing.size:
            self.keep(missing, self._data.take(missing))
        return self._rows[np.searchsorted(self._index, idx)]

    def missing(self, rows: NDArray[np.intp]) -> NDArray[np.int64]:
        """The points among ``rows`` (increasing, distinct) whose rows are not held yet."""
        return np.setdiff1d(np.asarray(rows, dtype=np.int64), self._index, assume_unique=True)

    def keep(self, rows: NDArray[np.intp], values: Any) -> None:
        """Hold ``values``, the prepared rows of the points ``rows`` (increasing, distinct,
        not held yet), e.g. sent by a data pass with its results."""
        rows = np.asarray(rows, dtype=np.int64)
        if not rows.size:
            return
        index = np.concatenate([self._index, rows])
        order = np.argsort(index, kind="stable")
        stack = sp.vstack([self._rows, values], format="csr") if self._data.sparse else \
            np.concatenate([self._rows, values])
        self._index, self._rows = index[order], stack[order]

    # ------------------------------------------------ the initialisation's operations
    def group_centroids(self, members: NDArray[np.intp], which: NDArray[np.intp],
                        n_groups: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Means of the rows ``members`` grouped by ``which`` and group sizes, from the
        gathered member rows (m x d on the client)."""
        uniq, local = np.unique(members, return_inverse=True)
        return InMemoryRows(self[uniq]).group_centroids(local.ravel(), which, n_groups)

    def min_divergence(self, family: EmissionFamily, centers: NDArray[np.floating]) -> ChunkDivergence:
        """``min_h D(x_i, c_h)`` of every row, one persisted task per chunk on the workers
        (:class:`ChunkDivergence`)."""
        return ChunkDivergence.of(self._data, family, centers)

    # ------------------------------------------------------- column summary
    @staticmethod
    def _check_axis(axis, what):
        if axis != 0:
            raise ValueError(f"X.{what} along axis {axis!r} needs every row; the Dask path "
                             "summarises the data along axis 0 only.")

    def mean(self, axis: Any = None, dtype: DTypeLike | None = None, out: Any = None,
             **kwargs: Any) -> NDArray[Any]:
        """Column means (float64), from the summary pass."""
        self._check_axis(axis, "mean")
        return self._data.summary.mean.copy()

    def var(self, axis: Any = None, dtype: DTypeLike | None = None, out: Any = None, ddof: int = 0,
            **kwargs: Any) -> NDArray[np.float64]:
        """Column variances (float64), from the summary pass."""
        self._check_axis(axis, "var")
        n = self._data.summary.n
        return self._data.summary.var * (n / max(n - ddof, 1))

    def sum(self, axis: Any = None, dtype: DTypeLike | None = None, out: Any = None,
            **kwargs: Any) -> NDArray[Any]:
        """Column sums (float64), from the summary pass."""
        self._check_axis(axis, "sum")
        return self._data.summary.sums.copy()

    def max(self, axis: Any = None, out: Any = None, **kwargs: Any) -> NDArray[np.float64]:
        """Column maxima (float64), from the summary pass."""
        self._check_axis(axis, "max")
        return self._data.summary.max.copy()

    def min(self, axis: Any = None, out: Any = None, **kwargs: Any) -> NDArray[np.float64]:
        """Column minima (float64), from the summary pass."""
        self._check_axis(axis, "min")
        return self._data.summary.min.copy()

    # -------------------------------------------------------------- refusals
    def _refusal(self, what: str) -> str:
        return (f"{what} needs every row of X, which the Dask path never gathers to the client "
                "(only rows by index: constraint endpoints, seeds, a few random rows).")

    def __array__(self, dtype=None, copy=None):
        raise ValueError(self._refusal("converting X to a NumPy array"))

    def _arith(self, other):
        raise ValueError(self._refusal("arithmetic on the whole of X"))

    __mul__ = __rmul__ = __matmul__ = __rmatmul__ = __add__ = __radd__ = __sub__ = __rsub__ = _arith

    def multiply(self, other: Any) -> None:
        raise ValueError(self._refusal("X.multiply"))

    def __repr__(self) -> str:
        return f"GatheredRows(shape={self.shape}, gathered={self.n_gathered})"


# ------------------------------------------------------------------ k-means++
def _chunk_update(family, X, data, closest, centers) -> np.ndarray:
    """The chunk's minimum divergence to ``centers``, or (with ``closest``) to them and the
    centres before."""
    d = min_divergence_rows(family, X, data, centers)
    return d if closest is None else np.minimum(closest, d)


def _chunk_potentials(family, X, data, closest, candidates) -> tuple[np.ndarray, list]:
    """For each candidate centre ``c_t``: the chunk's summed divergence to the nearest centre
    if ``c_t`` joined the centres (T,), and the rows it lowers (a packed mask, true where
    NaN too, as ``np.minimum`` propagates it) with their new values."""
    sums = np.empty(candidates.shape[0])
    lowered = []
    for t in range(candidates.shape[0]):  # a few candidates
        d = min_divergence_rows(family, X, data, candidates[t:t + 1])
        sums[t] = np.minimum(closest, d).sum()
        mask = (d < closest) | np.isnan(d)
        lowered.append((np.packbits(mask), d[mask]))
    return sums, lowered


def _chunk_lowered(closest, lowered, t) -> np.ndarray:
    """``np.minimum(closest, D(x_i, c_t))`` of a chunk from :func:`_chunk_potentials`' rows
    that candidate ``t`` lowers (no read of the chunk)."""
    bits, values = lowered[t]
    new = closest.copy()
    new[np.unpackbits(bits, count=closest.shape[0]).astype(bool)] = values
    return new


def _tree_sum(rows: list) -> np.ndarray:
    """The sum of ``rows`` in the order :func:`~hmrf.distributed.data.tree_reduce` adds
    them (groups of ``FAN_IN``, level by level), on the client."""
    while len(rows) > 1:  # a loop over the levels of the tree
        rows = [functools.reduce(operator.add, rows[i:i + FAN_IN]) for i in range(0, len(rows), FAN_IN)]
    return rows[0]


def _chunk_sum(closest) -> float:
    return float(closest.sum())


def _chunk_draw(closest, targets) -> np.ndarray:
    """Chunk-local rows at which the cumulative sum of ``closest`` reaches ``targets``."""
    return np.minimum(np.searchsorted(np.cumsum(closest), targets), closest.shape[0] - 1)


class ChunkDivergence(MinDivergence):
    """:class:`~hmrf.backend.MinDivergence` of a :class:`ChunkedData`: one persisted task a
    chunk, and the chunks' sums on the client (module docstring); ``potentials`` keeps
    what ``with_centre`` needs, so a k-means++ step reads the chunks once.

    Attributes
    ----------
    parts : list of Delayed
        Each chunk's minimum divergences (b,), on the workers.
    sums : ndarray (chunks,)
        Their sums.
    """

    def __init__(self, data: ChunkedData, family_key: Any, terms: Any, parts: Any,
                 sums: NDArray[np.float64] | None = None) -> None:
        self._data, self._family, self._terms = data, family_key, terms
        self.parts = list(dask.persist(*parts))
        if sums is None:
            sums = dask.compute(*[dask.delayed(_chunk_sum, pure=False)(p) for p in self.parts])
        self.sums = np.asarray(sums, dtype=np.float64)
        self._scored = None  # the last potentials: (candidates, per-chunk potentials, lowered rows)

    @classmethod
    def of(cls, data: ChunkedData, family: EmissionFamily, centers: NDArray[np.floating]) -> ChunkDivergence:
        own = family is data.family
        key = data.family_key if own else dask.delayed(family, traverse=False)
        terms = data.data_terms if own and data.data_terms else [None] * data.n_chunks
        parts = [dask.delayed(_chunk_update, pure=False)(key, x, t, None, centers)
                 for x, t in zip(data.chunks, terms)]
        return cls(data, key, terms, parts)

    def draw(self, trials: int, rng: np.random.Generator) -> np.ndarray:
        """A chunk by the cumulative sum of the chunks' sums, then a row inside it, from one
        uniform number per trial; uniformly when the total is zero or not finite."""
        ends = np.cumsum(self.sums)
        total = ends[-1] if ends.size else 0.0
        if not np.isfinite(total) or total <= 0:
            return rng.choice(self._data.n, size=trials)
        u = rng.random(trials) * total
        chunk = np.minimum(np.searchsorted(ends, u), ends.size - 1)
        offset = u - np.concatenate([[0.0], ends])[chunk]
        rows = np.empty(trials, dtype=np.int64)
        wanted = np.unique(chunk)
        tasks = [dask.delayed(_chunk_draw, pure=False)(self.parts[c], offset[chunk == c]) for c in wanted]
        for c, local in zip(wanted, dask.compute(*tasks)):  # a loop over the few chunks drawn
            rows[chunk == c] = self._data.starts[c] + local
        return rows

    def potentials(self, candidates: NDArray[np.intp]) -> np.ndarray:
        """Per-chunk potentials, one read of each chunk, added up in the order of a tree
        reduction."""
        tasks = [dask.delayed(_chunk_potentials, pure=False, nout=2)(self._family, x, t, c, candidates)
                 for x, t, c in zip(self._data.chunks, self._terms, self.parts)]
        out = dask.persist(*[t[1] for t in tasks], *[t[0] for t in tasks])  # one graph: one read a chunk
        n_chunks = len(tasks)
        per_chunk = np.array(dask.compute(*out[n_chunks:]), dtype=np.float64).reshape(n_chunks, -1)
        self._scored = (candidates, per_chunk, list(out[:n_chunks]))
        return _tree_sum(list(per_chunk))

    def with_centre(self, candidates: NDArray[np.intp], t: int) -> ChunkDivergence:
        """The minima once ``candidates[t]`` joined the centres: from what the last
        ``potentials`` of the same ``candidates`` kept, else by a pass."""
        if self._scored is not None and self._scored[0] is candidates:
            _, per_chunk, lowered = self._scored
            parts = [dask.delayed(_chunk_lowered, pure=False)(c, low, t)
                     for c, low in zip(self.parts, lowered)]
            return ChunkDivergence(self._data, self._family, self._terms, parts, per_chunk[:, t])
        chosen = candidates[t:t + 1]
        parts = [dask.delayed(_chunk_update, pure=False)(self._family, x, d, c, chosen)
                 for x, d, c in zip(self._data.chunks, self._terms, self.parts)]
        return ChunkDivergence(self._data, self._family, self._terms, parts)
