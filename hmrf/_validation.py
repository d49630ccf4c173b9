"""Input checks shared by every layer: data, labels, seeds and parameters.

Errors name the argument and the position of the offending value, so a user sees
"X contains NaN at row 3, column 1" instead of a traceback from deep inside NumPy.
Nothing here modifies its input: conversions return new arrays when they must.

Parameters are checked against a declarative table per class, as scikit-learn's
estimators do with ``_parameter_constraints`` (written here for this project;
scikit-learn's module is private and slow to import)::

    class ICM(InferenceEngine):
        _parameter_constraints = {"max_iter": [Interval(Integral, 1, None)]}

:func:`validate_params` checks an object's attributes against its table, raising one
``ValueError`` that names the parameter, what it may be and what it got. A parameter is
valid when it matches any entry of its list: an :class:`Interval` (a real or integral
number in a range; ``bool`` is not a number), :class:`Options` (one of a fixed set of
values), a type or tuple of types (an instance of it), or a :class:`Check` (a predicate
with its description, for the rare custom rule).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ._blocks import map_row_blocks

if TYPE_CHECKING:
    from ._typing import MatrixLike

__all__ = ["check_data", "check_dense", "check_n_clusters", "check_partial_labels", "check_random_state",
           "is_dask_collection", "check_nonnegative", "convert_data", "Interval", "Options", "Check",
           "validate_params", "describe"]


def is_dask_collection(X: MatrixLike) -> bool:
    """Whether ``X`` is a Dask collection (array, data frame, ...), decided from its type's
    module so that Dask is not imported to ask."""
    return type(X).__module__.split(".")[0] in ("dask", "dask_expr")


def check_random_state(seed, name: str = "random_state") -> np.random.Generator:
    """A NumPy ``Generator`` from any of the seeds the library accepts: ``None`` a fresh
    one (NumPy's global state untouched); an int or a ``RandomState`` one seeded from one
    draw of ``RandomState(seed)`` (scikit-learn's convention, so the same int gives the
    same result everywhere); a ``Generator`` as is."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(np.iinfo(np.int32).max))
    if isinstance(seed, (numbers.Integral, np.integer)) and not isinstance(seed, bool):
        if not 0 <= int(seed) < 2**32:
            raise ValueError(f"{name} must be an int in [0, 2**32 - 1]; got {seed}.")
        return np.random.default_rng(np.random.RandomState(int(seed)).randint(np.iinfo(np.int32).max))
    raise ValueError(f"{name} must be None, an int, a numpy Generator or RandomState; got {seed!r}.")


def _all_finite(values: np.ndarray) -> bool:
    """Whether every entry is finite: a finite sum proves it in one read with no (n, d)
    temporary (NaN and inf propagate; a large matrix is summed by row blocks on every
    core); only a sum that overflows needs the entrywise test."""
    with np.errstate(over="ignore", invalid="ignore"):
        if values.ndim == 2:
            total = sum(map_row_blocks(lambda rows: values[rows].sum(), *values.shape))
        else:
            total = values.sum()
        if np.isfinite(total):
            return True
    return bool(np.all(np.isfinite(values)))


def _first_bad_position(values: np.ndarray) -> tuple[int, ...]:
    bad = np.argwhere(~np.isfinite(values))
    return tuple(int(v) for v in bad[0])


def check_data(X, *, name: str = "X", accept_sparse: bool = True, min_samples: int = 1,
               keep_float32: bool = False):
    """Validate a data matrix and return it as float64 (dense ndarray or CSR; float32
    kept with ``keep_float32``), sharing memory with the input when no conversion was
    needed (callers must not write to it). Sparse input is never densified.

    Raises
    ------
    ValueError
        1-D or >2-D input, fewer than ``min_samples`` rows, zero columns, NaN or infinite
        entries (the message gives the first position).
    TypeError
        Sparse input when ``accept_sparse=False``, complex or non-numeric input.
    """
    if is_dask_collection(X):
        raise TypeError(
            f"{name} is a Dask collection, but this method works on data in memory: the HMRF "
            "estimators (HMRFKMeans, PCKMeans, MPCKMeans, SphericalKMeans, ...) fit Dask arrays "
            f"where they are; otherwise call {name}.compute() if it fits in memory."
        )
    if sp.issparse(X):
        if not accept_sparse:
            check_dense(X, name)
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D; got a sparse array of shape {X.shape}.")
        if np.issubdtype(X.dtype, np.complexfloating):
            raise ValueError(f"Complex data not supported: {name} has complex entries; hmrf needs real data.")
        X = sp.csr_matrix(X, dtype=_work_dtype(X, keep_float32))  # copies only if format/dtype differ
        if not _all_finite(X.data):
            k = _first_bad_position(X.data)[0]
            row = int(np.searchsorted(X.indptr, k, side="right") - 1)
            col = int(X.indices[k])
            kind = "NaN" if np.isnan(X.data[k]) else "an infinite value"
            raise ValueError(f"{name} contains {kind} at row {row}, column {col}.")
    else:
        try:
            arr = np.asarray(X)
        except Exception as exc:  # ragged lists and the like
            raise ValueError(f"{name} could not be converted to a numeric array: {exc}") from exc
        if np.iscomplexobj(arr):
            raise ValueError(f"Complex data not supported: {name} has complex entries; hmrf needs real data.")
        if arr.dtype.kind not in "biuf":
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"{name} must be numeric; got dtype {arr.dtype} ({exc})."
                ) from exc
        if arr.ndim == 1:
            raise ValueError(
                f"{name} must be 2-D (n_samples, n_features); got a 1-D array of shape "
                f"{arr.shape}. Reshape your data with {name}.reshape(-1, 1) for a single "
                f"feature or {name}.reshape(1, -1) for a single sample."
            )
        if arr.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_samples, n_features); got shape {arr.shape}.")
        X = np.asarray(arr, dtype=_work_dtype(arr, keep_float32))
        if not _all_finite(X):
            r, c = _first_bad_position(X)
            kind = "NaN" if np.isnan(X[r, c]) else "an infinite value"
            raise ValueError(f"{name} contains {kind} at row {r}, column {c}.")
    n, d = X.shape
    if n < min_samples:
        raise ValueError(f"{name} has {n} sample(s); at least {min_samples} required.")
    if d == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape=({n}, 0)) while a minimum of 1 is required.")
    return X


def check_dense(X, name: str = "X") -> None:
    """A ``TypeError`` naming ``name`` if ``X`` is a scipy.sparse matrix (for a method that
    needs dense data)."""
    if sp.issparse(X):
        raise TypeError(
            f"{name} is a scipy.sparse matrix, but this method needs dense data; "
            f"convert it with {name}.toarray() if it fits in memory."
        )


def _work_dtype(X, keep_float32: bool):
    return np.float32 if keep_float32 and X.dtype == np.float32 else np.float64


def convert_data(X, keep_float32: bool = True):
    """The conversion :func:`check_data` makes (CSR for sparse input, float64 or kept
    float32), without its checks: for data that :func:`check_data` has already accepted
    and that is read again (a Dask chunk read by a later pass)."""
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=_work_dtype(X, keep_float32))
    return np.asarray(X, dtype=_work_dtype(np.asarray(X), keep_float32))


def check_nonnegative(X, need: str, name: str = "X") -> None:
    """Raise ``ValueError("{need}; {name}[r, c] = v.")`` at the first negative entry of
    dense or sparse ``X`` (the families and estimators that need counts say what in
    ``need``)."""
    data = X.data if sp.issparse(X) else X
    if not data.size or data.min() >= 0:
        return
    if sp.issparse(X):
        k = int(np.argmin(X.data))
        r, c, v = int(np.searchsorted(X.indptr, k, side="right") - 1), int(X.indices[k]), X.data[k]
    else:
        r, c = (int(t) for t in np.argwhere(X < 0)[0])
        v = X[r, c]
    raise ValueError(f"{need}; {name}[{r}, {c}] = {v}.")


def check_n_clusters(n_clusters, n_samples: int, name: str = "n_clusters") -> int:
    """Check ``1 <= n_clusters <= n_samples`` and return it as ``int``."""
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {n_clusters!r}.")
    k = int(n_clusters)
    if k < 1:
        raise ValueError(f"{name} must be at least 1; got {k}.")
    if k > n_samples:
        raise ValueError(
            f"{name}={k} is larger than the number of samples ({n_samples}); "
            "every cluster needs at least one point."
        )
    return k


def check_partial_labels(y, n_samples: int, name: str = "y") -> np.ndarray:
    """Validate partial labels: integers, -1 for unlabelled, length ``n_samples``; a new
    int64 array."""
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with one label per sample; got shape {arr.shape}.")
    if arr.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {arr.shape[0]} labels but X has {n_samples} samples; "
            "lengths must match."
        )
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            i = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise ValueError(f"{name} contains a non-finite label at position {i}; use -1 for unlabelled.")
        if not np.all(arr == np.round(arr)):
            i = int(np.flatnonzero(arr != np.round(arr))[0])
            raise ValueError(f"{name} must hold integer labels; position {i} is {arr[i]!r}.")
    elif arr.dtype.kind not in "biu":
        try:
            as_float = arr.astype(np.float64)
        except (TypeError, ValueError):
            as_float = None
        if as_float is None or not np.all(np.isfinite(as_float)) or np.any(as_float != np.round(as_float)):
            raise ValueError(
                f"Unknown label type: {name} must hold integer labels with -1 for unlabelled; "
                f"got dtype {arr.dtype}."
            )
        arr = as_float
    out = arr.astype(np.int64)
    if np.any(out < -1):
        i = int(np.flatnonzero(out < -1)[0])
        raise ValueError(f"{name} has label {out[i]} at position {i}; labels are >= 0, -1 = unlabelled.")
    return out


@dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (``numbers.Real`` or ``numbers.Integral``) between two bounds.

    ``None`` bounds are unbounded; ``closed`` says which ends belong to the interval
    (``"both"``, ``"left"``, ``"right"``, ``"neither"``). NaN never matches; ``inf``
    matches only an unbounded (or infinite, closed) end.
    """

    kind: type
    left: float | None = None
    right: float | None = None
    closed: str = "both"

    def matches(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        v = float(value)
        if np.isnan(v):
            return False
        left_in, right_in = self.closed in ("both", "left"), self.closed in ("both", "right")
        lo_ok = self.left is None or (v >= self.left if left_in else v > self.left)
        hi_ok = self.right is None or (v <= self.right if right_in else v < self.right)
        if np.isinf(v) and not ((v > 0 and self.right is None) or (v < 0 and self.left is None)
                                or (self.right == v and self.closed in ("both", "right"))):
            return False
        return lo_ok and hi_ok

    def __str__(self) -> str:
        what = "an integer" if self.kind is numbers.Integral else "a number"
        lo = "-inf" if self.left is None else f"{self.left:g}"
        hi = "inf" if self.right is None else f"{self.right:g}"
        lb = "[" if self.closed in ("both", "left") and self.left is not None else "("
        rb = "]" if self.closed in ("both", "right") and self.right is not None else ")"
        return f"{what} in {lb}{lo}, {hi}{rb}"


@dataclass(frozen=True)
class Options:
    """One of ``values`` (compared with ``==``; strings case-sensitively)."""

    values: tuple

    def __init__(self, *values):
        object.__setattr__(self, "values", tuple(values))

    def matches(self, value) -> bool:
        return any(value is v or (type(value) is type(v) and value == v) for v in self.values)

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Check:
    """A custom rule: ``predicate(value) -> bool`` with a description for the message."""

    predicate: object
    description: str

    def matches(self, value) -> bool:
        return bool(self.predicate(value))

    def __str__(self) -> str:
        return self.description


def _matches(entry, value) -> bool:
    if isinstance(entry, (Interval, Options, Check)):
        return entry.matches(value)
    if isinstance(entry, type) or (isinstance(entry, tuple) and all(isinstance(t, type) for t in entry)):
        return isinstance(value, entry)
    raise TypeError(f"unknown parameter constraint {entry!r}")


def describe(entries) -> str:
    """Human-readable alternatives of a constraint list, for error messages."""
    parts = []
    for e in entries:
        if isinstance(e, type):
            parts.append(f"a {e.__name__} instance")
        elif isinstance(e, tuple):
            parts.append(" or ".join(f"a {t.__name__} instance" for t in e))
        else:
            parts.append(str(e))
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def validate_params(obj, constraints: dict | None = None, owner: str | None = None) -> None:
    """Check every attribute of ``obj`` named in ``constraints`` (``{name: [entry, ...]}``,
    default ``type(obj)._parameter_constraints``): a ``ValueError`` for the first that
    matches none of its entries, e.g. ``ICM: max_iter must be an integer in [1, inf); got
    0.`` (``owner``, default the class name, starts the message)."""
    table = type(obj)._parameter_constraints if constraints is None else constraints
    who = owner or type(obj).__name__
    for name, entries in table.items():
        value = getattr(obj, name)
        if not any(_matches(e, value) for e in entries):
            raise ValueError(f"{who}: {name} must be {describe(entries)}; got {value!r}.")
