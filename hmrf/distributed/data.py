"""The rows of a Dask array as prepared chunks on the cluster.

:class:`ChunkedData` validates and prepares each chunk where it is (``check_data`` and
the family's ``prepare``, errors naming rows of the whole array); its first pass is the
:class:`ColumnSummary`. The prepared chunks stay in the workers' memory (``persist``) or
are read again from their source by every pass (out of core), decided once from their
size and the workers' memory; chunks read again are checked only by the first pass.
"""

from __future__ import annotations

import functools
import operator
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from typing import Any, Literal

    from numpy.typing import DTypeLike, NDArray
    from scipy import sparse

    from .._typing import MatrixLike

try:
    import dask
    import dask.array as da
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError('hmrf.distributed needs Dask: pip install "hmrf[dask]".') from exc

from .._blocks import row_blocks
from .._validation import check_data, convert_data
from ..emissions.base import EmissionFamily
from ..emissions.stats import Spread

__all__ = ["ChunkedData", "ColumnSummary", "as_row_chunked", "tree_reduce", "label_dtype",
           "PERSIST_FRACTION"]

#: With ``persist="auto"`` the prepared chunks are kept in the workers' memory when they
#: take at most this fraction of the workers' summed memory limits (Dask workers start
#: spilling to disk at 60 % of their limit, and each task needs room for its temporaries).
PERSIST_FRACTION = 0.4

#: Number of partial results one task of a tree reduction adds up.
FAN_IN = 8


def as_row_chunked(X: MatrixLike, name: str = "X") -> da.Array:
    """``X`` as a 2-D Dask array of a real dtype with known row chunks and one chunk along
    the columns; the errors of ``check_data``, and how to get unknown chunk sizes."""
    if not isinstance(X, da.Array):
        if hasattr(X, "to_dask_array"):
            raise TypeError(f"{name} is a Dask {type(X).__name__}; pass "
                            f"{name}.to_dask_array(lengths=True), a Dask array with known chunk sizes.")
        raise TypeError(f"{name} must be a dask.array.Array here; got {type(X).__name__}.")
    if X.ndim == 1:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features); got a 1-D array of shape {X.shape}. "
            f"Reshape your data with {name}.reshape(-1, 1) for a single feature or "
            f"{name}.reshape(1, -1) for a single sample.")
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features); got shape {X.shape}.")
    if any(np.isnan(c) for c in X.chunks[0]) or any(np.isnan(c) for c in X.chunks[1]):
        raise ValueError(f"{name} has unknown chunk sizes; call {name}.compute_chunk_sizes() "
                         "(or build it with known lengths) first.")
    if X.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} has complex entries; hmrf needs real data.")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric; got dtype {X.dtype}.")
    n, d = (int(s) for s in X.shape)
    if n < 1:
        raise ValueError(f"{name} has {n} sample(s); at least 1 required.")
    if d == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape=({n}, 0)) while a minimum of 1 is required.")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def label_dtype(n_clusters: int) -> np.dtype:
    """The smallest unsigned integer type for labels ``0..k-1``: labels travel between
    the client and the workers in it (one byte a point for k <= 256)."""
    return np.min_scalar_type(max(int(n_clusters) - 1, 0))


def tree_reduce(parts: Any, combine: Any = None, fan_in: int = FAN_IN) -> Any:
    """Delayed sum of ``parts`` (Delayed objects whose values support ``+``, or are
    combined by ``combine(*values)``) as a tree of tasks with ``fan_in`` inputs each, in
    a fixed order: the result does not depend on how many workers there are."""
    combine = _sum_all if combine is None else combine
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to reduce.")
    while len(parts) > 1:  # a loop over the levels of the tree
        parts = [dask.delayed(combine, pure=False)(*parts[i:i + fan_in])
                 for i in range(0, len(parts), fan_in)]
    return parts[0]


def _sum_all(*values):
    return functools.reduce(operator.add, values)  # in order: v0 + v1 + ...


_ROW_PATTERNS = (re.compile(r"(\brow )(\d+)"), re.compile(r"(\bX\[)(\d+)(?=, )"))


def _global_rows(message: str, start: int) -> str:
    """``message`` with the row numbers of a chunk's error counted from the first row of
    the whole array (the chunk starts at row ``start``)."""
    if start == 0:
        return message
    for pattern in _ROW_PATTERNS:
        message = pattern.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + start}", message)
    return message


def prepare_chunk(block, family: EmissionFamily, start: int, name: str = "X"):
    """One chunk validated (``check_data``) and prepared by the family; errors name rows of
    the whole array."""
    return _checked(block, family, start, name)[1]


def _checked(block, family, start, name="X"):
    """``(X, prepared)``: the chunk after ``check_data`` and after the family's ``prepare``."""
    if not sp.issparse(block) and hasattr(block, "tocsr"):  # pydata/sparse chunks
        block = block.tocsr()
    try:
        X = check_data(block, name=name, accept_sparse=family.accepts_sparse, keep_float32=True)
        return X, family.prepare(X)
    except ValueError as exc:
        raise ValueError(_global_rows(str(exc), start)) from None


def load_chunk(block, family: EmissionFamily, transformed: bool):
    """A chunk that :func:`prepare_chunk` accepted, read again by a later pass: converted,
    and prepared again if ``prepare`` changed it the first time (``transformed``), not
    checked again."""
    if not sp.issparse(block) and hasattr(block, "tocsr"):  # pydata/sparse chunks
        block = block.tocsr()
    X = convert_data(block)
    return family.prepare(X) if transformed else X


def first_read(block, family: EmissionFamily, start: int, keep_terms: bool):
    """The first read of a chunk that is not kept in memory: :func:`prepare_chunk`, its
    moments for :class:`ColumnSummary`, the family's data terms when ``keep_terms`` (else
    ``None``), and whether ``prepare`` changed the chunk (see :func:`load_chunk`)."""
    X, prepared = _checked(block, family, start)
    terms = family.data_terms(prepared) if keep_terms else None
    return _Moments.of(prepared, family), terms, prepared is not X


def _data_terms(X, family):
    return family.data_terms(X)


def _nbytes(X) -> int:
    if sp.issparse(X):
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(X.nbytes)


@dataclass
class _Moments:
    """Count, column sums and second moments of some rows (dense: squared deviations from
    their mean, combined by Chan, Golub & LeVeque's pairwise update; sparse: raw sums of
    squares), column extremes, and the rows' :class:`~hmrf.emissions.stats.Spread`."""

    count: float
    sums: np.ndarray
    second: np.ndarray
    sparse: bool
    nbytes: int
    lo: np.ndarray | None = None  # column minima and maxima (the Mahalanobis range target)
    hi: np.ndarray | None = None
    nnz: int = 0  # stored entries of sparse rows
    spread: Spread | None = None

    @classmethod
    def of(cls, X, family: EmissionFamily | None = None) -> _Moments:
        spread = None if family is None else Spread.of(family, X)
        if sp.issparse(X):
            sums = np.asarray(X.sum(axis=0), dtype=np.float64).ravel()
            sq = np.asarray(X.multiply(X).sum(axis=0), dtype=np.float64).ravel()
            lo, hi = (np.asarray(m.toarray(), dtype=np.float64).ravel()
                      for m in (X.min(axis=0), X.max(axis=0)))
            return cls(float(X.shape[0]), sums, sq, True, _nbytes(X), lo, hi, int(X.nnz), spread)
        total = None
        for rows in row_blocks(X.shape[0], X.shape[1]):  # blocks of rows bound the temporaries
            Z = np.asarray(X[rows], dtype=np.float64)
            mean = Z.mean(axis=0)
            part = cls(float(Z.shape[0]), Z.sum(axis=0), ((Z - mean) ** 2).sum(axis=0), False, 0,
                       Z.min(axis=0), Z.max(axis=0))
            total = part if total is None else total + part
        total.nbytes = _nbytes(X)
        total.spread = spread
        return total

    def __add__(self, other: _Moments) -> _Moments:
        n = self.count + other.count
        if self.sparse:
            second = self.second + other.second
        else:
            delta = other.sums / other.count - self.sums / self.count
            second = self.second + other.second + delta * delta * (self.count * other.count / n)
        spread = None if self.spread is None or other.spread is None else self.spread + other.spread
        return _Moments(n, self.sums + other.sums, second, self.sparse, self.nbytes + other.nbytes,
                        np.minimum(self.lo, other.lo), np.maximum(self.hi, other.hi),
                        self.nnz + other.nnz, spread)


@dataclass(frozen=True)
class ColumnSummary:
    """What the initialisation and the families' priors read from the whole data, in one
    pass over the chunks.

    Attributes
    ----------
    sums, mean, var : ndarray (d,)
        Column sums, means and population variances (float64).
    nbytes : int
        Bytes of the prepared chunks.
    min, max : ndarray (d,)
        Column minima and maxima (implicit zeros of sparse chunks count).
    nnz : int
        Stored entries of sparse chunks (0 for dense chunks), read by ``n_init="auto"``.
    second : ndarray (d,)
        Column sums of squared deviations from the mean (dense), of squares (sparse).
    spread : Spread or None
        The rows' Bregman information under the family (:meth:`hmrf.HMRF.data_scale`).
    """

    n: int
    sums: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    nbytes: int
    min: np.ndarray | None = None
    max: np.ndarray | None = None
    nnz: int = 0
    second: np.ndarray | None = None
    spread: Spread | None = None

    @classmethod
    def from_moments(cls, m: _Moments) -> ColumnSummary:
        mean = m.sums / m.count
        if m.sparse:
            var = np.maximum(m.second / m.count - mean**2, 0.0)
        else:
            var = m.second / m.count
        return cls(int(m.count), m.sums, mean, var, int(m.nbytes), m.lo, m.hi, int(m.nnz), m.second,
                   m.spread)


class ChunkedData:
    """The prepared row chunks of a Dask array (dense, scipy.sparse or pydata ``sparse``
    chunks), left on the cluster; ``family`` validates and prepares each chunk.

    Parameters
    ----------
    persist : {"auto", True, False}, default="auto"
        Keep the prepared chunks (and the family's data terms) in the workers' memory;
        ``"auto"``: when they take at most ``PERSIST_FRACTION`` of the workers' summed
        memory limits, else every pass reads the chunks again (out of core).

    Attributes
    ----------
    dtype : numpy dtype
        float32 for float32 input, else float64 (as ``check_data``).
    starts, stops : ndarray
        First and one-past-last row of each non-empty chunk.
    chunks : list of Delayed
        The prepared chunks.
    data_terms : list of Delayed or None
        The family's per-row data terms of each chunk, when they fit on the workers.
    row_chunks : tuple of int
        The row chunks of ``X`` (for arrays returned to the user).
    n, d, sparse, persisted, summary
    """

    def __init__(self, X: MatrixLike, family: EmissionFamily, persist: Literal["auto"] = "auto") -> None:
        if persist not in ("auto", True, False):
            raise ValueError(f"persist must be 'auto', True or False; got {persist!r}.")
        X = as_row_chunked(X)
        self.family = family
        self.n, self.d = (int(s) for s in X.shape)
        self.row_chunks = tuple(int(c) for c in X.chunks[0])
        self.sparse = sp.issparse(X._meta) or type(X._meta).__module__.split(".")[0] == "sparse"
        if self.sparse and not family.accepts_sparse:
            raise TypeError(f"X is a Dask array of sparse chunks, but the {family.name} emission needs "
                            "dense data; convert the chunks with X.map_blocks(lambda b: b.toarray()).")
        self.dtype = np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64)
        sizes = np.asarray(self.row_chunks, dtype=np.int64)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        keep = sizes > 0
        self.starts, self.stops = bounds[:-1][keep], bounds[1:][keep]
        raw = [b for b, k in zip(X.to_delayed().ravel(), keep) if k]
        self.family_key = dask.delayed(family, traverse=False)
        self.chunks = [dask.delayed(prepare_chunk, pure=False)(b, self.family_key, int(s))
                       for b, s in zip(raw, self.starts)]
        self._has_terms = type(family).data_terms is not EmissionFamily.data_terms
        self.data_terms = None
        self.persisted = False
        dense_bytes = self.n * self.d * self.dtype.itemsize + (8 * self.n if self._has_terms else 0)
        if persist is True or (persist == "auto" and not self.sparse and self._fits(dense_bytes)):
            self._persist()
            self.summary = ColumnSummary.from_moments(dask.compute(tree_reduce(
                [dask.delayed(_Moments.of, pure=False)(c, self.family_key) for c in self.chunks]))[0])
            return
        self._read_once(raw)
        if persist == "auto" and self.sparse and self._fits(self.summary.nbytes + 8 * self.n):
            self._persist()

    def _read_once(self, raw) -> None:
        """The summary pass over chunks not kept in memory: validates them and keeps their
        data terms on the workers when those fit; later passes use :func:`load_chunk`."""
        keep_terms = self._has_terms and self._fits(8 * self.n)
        reads = [dask.delayed(first_read, pure=False, nout=3)(b, self.family_key, int(s), keep_terms)
                 for b, s in zip(raw, self.starts)]
        moments = tree_reduce([r[0] for r in reads])
        transformed = dask.delayed(list, pure=False)([r[2] for r in reads])
        if keep_terms:  # one computation: the reads are shared by the terms and the summary
            *terms, moments, transformed = dask.persist(*[r[1] for r in reads], moments, transformed)
            self.data_terms = list(terms)
        moments, transformed = dask.compute(moments, transformed)
        self.summary = ColumnSummary.from_moments(moments)
        self.chunks = [dask.delayed(load_chunk, pure=False)(b, self.family_key, t)
                       for b, t in zip(raw, transformed)]

    # ------------------------------------------------------------------ memory
    @staticmethod
    def _fits(nbytes: int) -> bool:
        return nbytes <= PERSIST_FRACTION * cluster_memory()

    def _persist(self) -> None:
        terms = [dask.delayed(_data_terms, pure=False)(c, self.family_key) for c in self.chunks] \
            if self._has_terms and self.data_terms is None else []
        out = dask.persist(*self.chunks, *terms)
        self.chunks = list(out[:len(self.chunks)])
        self.data_terms = list(out[len(self.chunks):]) or self.data_terms
        self.persisted = True

    # -------------------------------------------------------------------- rows
    @property
    def n_chunks(self) -> int:
        return len(self.chunks)

    def chunk_of(self, rows: NDArray[np.intp]) -> np.ndarray:
        """Index of the chunk that holds each of ``rows``."""
        return np.searchsorted(self.stops, np.asarray(rows, dtype=np.int64), side="right")

    def split(self, sorted_rows: Any) -> list[np.ndarray]:
        """``sorted_rows`` (increasing global indices) as per-chunk local indices."""
        rows = np.asarray(sorted_rows, dtype=np.int64)
        cut = np.searchsorted(rows, self.stops)
        lo = np.concatenate([[0], cut[:-1]])
        return [rows[a:b] - s for a, b, s in zip(lo, cut, self.starts)]

    def take(self, sorted_rows: Any) -> NDArray[np.floating] | sparse.csr_matrix:
        """The prepared rows ``sorted_rows`` (increasing, distinct), fetched from the chunks
        that hold them in one computation: a dense (r, d) array or a CSR matrix."""
        rows = np.asarray(sorted_rows, dtype=np.int64)
        if rows.size == 0:
            return sp.csr_matrix((0, self.d), dtype=self.dtype) if self.sparse else \
                np.empty((0, self.d), dtype=self.dtype)
        parts = [dask.delayed(operator.getitem, pure=False)(self.chunks[c], local)
                 for c, local in enumerate(self.split(rows)) if local.size]
        got = dask.compute(*parts)
        return sp.vstack(got, format="csr") if self.sparse else np.concatenate(got)

    def pieces(self, values: NDArray[Any]) -> list:
        """A vector of n values cut into the slices of the chunks (numpy views)."""
        return [values[s:e] for s, e in zip(self.starts, self.stops)]

    def send(self, pieces: Any) -> list:
        """Arrays held by the client (one per chunk) as arguments of the chunks' tasks: under
        a ``distributed`` client, persisted tasks whose values the scheduler keeps (a lost
        worker's piece is recomputed; ``client.scatter`` would lose it); the pieces
        themselves for Dask's local schedulers."""
        pieces = [np.ascontiguousarray(p) for p in pieces]
        if _current_client() is None:
            return pieces
        return list(dask.persist(*[dask.delayed(p, traverse=False) for p in pieces]))

    def to_dask(self, values: NDArray[Any], dtype: DTypeLike | None = None) -> da.Array:
        """An (n,) vector held by the client as a Dask array chunked like the rows of ``X``
        (pieces sent by :meth:`send`), computing to ``dtype``."""
        values = np.asarray(values)
        if _current_client() is None:  # Dask's local schedulers share the client's memory
            arr = da.from_array(values, chunks=(self.row_chunks,))
        else:
            bounds = np.concatenate([[0], np.cumsum(self.row_chunks)])
            sent = self.send([values[a:b] for a, b in zip(bounds[:-1], bounds[1:])])
            parts = [da.from_delayed(p, shape=(b - a,), dtype=values.dtype)
                     for p, a, b in zip(sent, bounds[:-1], bounds[1:])]
            arr = da.concatenate(parts) if len(parts) > 1 else parts[0]
        return arr if dtype is None or np.dtype(dtype) == values.dtype else arr.astype(dtype)

    def __repr__(self) -> str:
        kind = "sparse" if self.sparse else "dense"
        where = "persisted" if self.persisted else "read by every pass"
        return f"ChunkedData(n={self.n}, d={self.d}, {kind}, {self.n_chunks} chunks, {where})"


def cluster_memory() -> float:
    """Bytes of memory the work may use: the summed ``memory_limit`` of the current
    client's workers (this machine's memory for a worker without one, or without a
    client)."""
    physical = _physical_memory()
    client = _current_client()
    if client is None:
        return physical
    try:
        workers = client.scheduler_info(n_workers=-1)["workers"]
    except TypeError:  # distributed before n_workers=
        workers = client.scheduler_info()["workers"]
    limits = [float(w.get("memory_limit") or 0) for w in workers.values()]
    return float(sum(lim if lim > 0 else physical for lim in limits))


def _current_client():
    """The ``distributed`` client that ``dask.compute`` would use now, or ``None`` (no
    ``distributed``, no client, or a local scheduler chosen in ``dask.config``)."""
    try:
        from dask.base import get_scheduler
    except ImportError:  # pragma: no cover - every supported Dask has it
        return None
    scheduler = get_scheduler()
    client = getattr(scheduler, "__self__", None)
    return client if type(client).__name__ == "Client" else None


def _physical_memory() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # not POSIX
        try:
            import psutil

            return float(psutil.virtual_memory().total)
        except ImportError:
            return 0.0
