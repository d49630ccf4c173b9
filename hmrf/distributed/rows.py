"""The client's stand-in for ``X``: a few rows by index and the column summary, never all rows.

On the client a :class:`~hmrf.distributed.DaskHMRF` has no data matrix. What the layers
above the data passes read from ``model.X`` is small: the rows of the points in pairwise
factors (MPCKMeans' distance-scaled penalties and metric update read ``x_i - x_j`` of
the constraint pairs), labelled seeds, a few random rows (initialisation, the re-seeding
of an empty cluster), and the column means and variances (the families' priors and the
perturbed global centroid). :class:`GatheredRows` supplies exactly these: rows by integer
index, fetched from the chunks that hold them and kept, and ``mean``/``var``/``sum``
along axis 0 from the :class:`~hmrf.distributed.ColumnSummary`. Anything that needs
every row (slices, masks, arithmetic on the whole matrix, conversion to an array) raises
a ``ValueError`` that says so, instead of gathering the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .data import ChunkedData

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import DTypeLike, NDArray

__all__ = ["GatheredRows"]


class GatheredRows:
    """Rows of a :class:`ChunkedData` by index, and its column summary.

    Parameters
    ----------
    data : ChunkedData

    Attributes
    ----------
    shape : tuple (n, d)
    dtype : numpy dtype
    n_gathered : int
        Number of distinct rows fetched so far (the client holds these, m x d).

    Notes
    -----
    ``X[idx]`` with an integer, a list or an integer array returns those prepared rows
    as the in-memory model would (a 1-D row for an integer on dense data, a CSR matrix
    for sparse data), fetching the missing ones in one computation. ``X.mean(axis=0)``,
    ``X.var(axis=0)`` (also through ``np.mean``/``np.var``), ``X.sum(axis=0)``,
    ``X.max(axis=0)`` and ``X.min(axis=0)`` come from the summary pass.
    """

    ndim = 2

    def __init__(self, data: ChunkedData) -> None:
        self._data = data
        self.shape = (data.n, data.d)
        self.dtype = data.dtype
        self._index = np.empty(0, dtype=np.int64)
        self._rows = data.take(self._index)

    @property
    def n_gathered(self) -> int:
        return int(self._index.size)

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
        wanted = np.unique(idx)
        missing = np.setdiff1d(wanted, self._index, assume_unique=True)
        if missing.size:
            new = self._data.take(missing)
            index = np.concatenate([self._index, missing])
            order = np.argsort(index, kind="stable")
            stack = sp.vstack([self._rows, new], format="csr") if self._data.sparse else \
                np.concatenate([self._rows, new])
            self._index, self._rows = index[order], stack[order]
        return self._rows[np.searchsorted(self._index, idx)]

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
