"""Index-pair helpers behind :class:`hmrf.Constraints`: validation, merging, conflicts.

Private: errors name the list and pair number so the public constructors can report
"must_link pair #3 is (2, 150)" instead of an index error from inside NumPy.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .exceptions import ConstraintConflictWarning, InconsistentConstraintsError

MUST_LINK = 1
CANNOT_LINK = -1

#: The names of the two kinds (any case, spaces around ignored).
KIND_NAMES = {"must": MUST_LINK, "must_link": MUST_LINK, "must-link": MUST_LINK, "ml": MUST_LINK,
              "cannot": CANNOT_LINK, "cannot_link": CANNOT_LINK, "cannot-link": CANNOT_LINK,
              "cl": CANNOT_LINK}


def parse_kind(kind) -> int | None:
    """``+1`` / ``-1`` from ``True`` / ``False``, ``+1`` / ``-1`` or a name of
    :data:`KIND_NAMES`; ``None`` for anything else."""
    if isinstance(kind, (bool, np.bool_)):  # before the integers: True == 1
        return MUST_LINK if kind else CANNOT_LINK
    if isinstance(kind, str):
        return KIND_NAMES.get(kind.strip().lower())
    if isinstance(kind, numbers.Integral) and int(kind) in (MUST_LINK, CANNOT_LINK):
        return int(kind)
    return None


def as_pair_array(pairs, name: str) -> np.ndarray:
    """Convert ``pairs`` to an int64 (m, 2) array.

    Accepted: ``None``, a list/tuple of 2-sequences, an (m, 2) array, any iterator or
    generator of pairs, and a set of pairs (taken in sorted order; see
    :func:`is_unordered`). Ragged entries, dicts and non-integer indices raise an error
    naming the list and the pair number.
    """
    if pairs is None:
        return np.empty((0, 2), dtype=np.int64)
    if isinstance(pairs, dict):
        raise TypeError(f"{name} is a dict; pass a sequence of (i, j) pairs, e.g. list({name}.items()).")
    if isinstance(pairs, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of (i, j) pairs; got the string {pairs!r}.")
    if is_unordered(pairs):
        pairs = _sorted_pairs(pairs, name)
    elif not isinstance(pairs, (np.ndarray, list, tuple)) and hasattr(pairs, "__iter__"):
        pairs = list(pairs)  # generators, iterators, pandas objects, ...
    try:
        arr = np.asarray(pairs)
    except ValueError:  # ragged: name the first entry that is not a pair
        _raise_bad_entry(pairs, name)
        raise
    if arr.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if arr.dtype == object and arr.ndim == 1:
        _raise_bad_entry(pairs, name)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must be a sequence of (i, j) pairs; got an array of shape {arr.shape}.")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            bad = int(np.flatnonzero(~np.isfinite(arr).all(1) | (arr != np.round(arr)).any(1))[0])
            raise ValueError(f"{name} pair #{bad} is {tuple(arr[bad])}: indices must be integers.")
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer point indices; got dtype {arr.dtype}.")
    return arr.astype(np.int64)


def as_index_array(indices, name: str) -> np.ndarray:
    """A 1-D int64 array of point indices (integral floats accepted), or a named error."""
    if hasattr(indices, "__iter__") and not isinstance(indices, (np.ndarray, list, tuple, str, bytes)):
        indices = list(indices)
    arr = np.asarray(indices)
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of point indices; got shape {arr.shape}.")
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer point indices; got dtype {arr.dtype}.")
    return arr.astype(np.int64)


def is_unordered(pairs) -> bool:
    """Whether ``pairs`` is a set (no order, so per-pair weights cannot follow it)."""
    return isinstance(pairs, (set, frozenset))


def _sorted_pairs(pairs, name: str) -> list:
    items = list(pairs)
    try:
        return sorted(items)
    except TypeError:  # mixed entry types: report the first entry that is not a pair
        _raise_bad_entry(items, name)
        raise


def _raise_bad_entry(pairs, name: str) -> None:
    """Raise ``ValueError`` naming the first entry of ``pairs`` that is not a 2-sequence."""
    for b, p in enumerate(pairs):
        if isinstance(p, (str, bytes)) or not hasattr(p, "__len__"):
            raise ValueError(f"{name} pair #{b} is {p!r}: each pair needs two point indices (i, j).")
        if len(p) != 2:
            what = "entry" if len(p) == 1 else "entries"
            raise ValueError(
                f"{name} pair #{b} has {len(p)} {what} {tuple(p)!r}: each pair needs exactly two "
                "point indices (i, j)."
            )


def check_pairs_in_range(pairs: np.ndarray, n: int, name: str) -> None:
    if pairs.shape[0] == 0:
        return
    bad = np.flatnonzero((pairs < 0).any(1) | (pairs >= n).any(1))
    if bad.size:
        b = int(bad[0])
        raise ValueError(
            f"{name} pair #{b} is ({pairs[b, 0]}, {pairs[b, 1]}), but point indices must lie "
            f"in [0, {n - 1}] for n={n} points."
        )
    same = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
    if same.size:
        b = int(same[0])
        raise ValueError(
            f"{name} pair #{b} is ({pairs[b, 0]}, {pairs[b, 1]}): a point cannot be constrained "
            "with itself (i == j)."
        )


def check_weights(weight, m: int, name: str) -> np.ndarray:
    """Weights as a new float64 (m,) array: a scalar is broadcast; NaN, negative and
    non-numeric entries raise an error naming the position."""
    arr = np.asarray(weight)
    if arr.dtype.kind not in "biuf":
        if arr.ndim == 0:
            raise TypeError(f"{name} must be a number >= 0 (np.inf = hard) or one per pair; got {weight!r}.")
        for b, v in enumerate(np.asarray(weight, dtype=object).ravel()):  # the caller's objects
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.number)) \
                    or isinstance(v, (np.complexfloating, complex)):
                raise TypeError(f"{name}[{b}] is {v!r}; constraint weights must be numbers >= 0 "
                                "(np.inf = hard).")
    w = arr.astype(np.float64)  # a new array: the caller's is never shared
    if w.ndim == 0:
        w = np.full(m, float(w))
    elif w.shape != (m,):
        raise ValueError(f"{name} must be a scalar or have one entry per pair ({m}); got shape {w.shape}.")
    if np.any(np.isnan(w)):
        b = int(np.flatnonzero(np.isnan(w))[0])
        raise ValueError(f"{name}[{b}] is NaN; constraint weights must be >= 0 (np.inf = hard).")
    if np.any(w < 0):
        b = int(np.flatnonzero(w < 0)[0])
        raise ValueError(f"{name}[{b}] is {w[b]}; constraint weights must be >= 0 (np.inf = hard).")
    return w


def components(n: int, pairs: np.ndarray) -> np.ndarray:
    """Connected-component label of every point in the graph with edges ``pairs``."""
    if n == 0:
        return np.empty(0, dtype=np.int64)
    g = sp.coo_matrix(
        (np.ones(pairs.shape[0], dtype=np.int8), (pairs[:, 0], pairs[:, 1])), shape=(n, n)
    ).tocsr()
    _, labels = csgraph.connected_components(g, directed=False)
    return labels.astype(np.int64)


def chain_between(n: int, pairs: np.ndarray, source: int, target: int) -> tuple[int, ...]:
    """A shortest chain of edges from ``source`` to ``target`` (for error messages)."""
    g = sp.coo_matrix(
        (np.ones(pairs.shape[0]), (pairs[:, 0], pairs[:, 1])), shape=(n, n)
    ).tocsr()
    _, pred = csgraph.breadth_first_order(g, source, directed=False, return_predecessors=True)
    chain = [target]
    while chain[-1] != source and pred[chain[-1]] >= 0:
        chain.append(int(pred[chain[-1]]))
    return tuple(int(v) for v in reversed(chain))


def merge_duplicates(n, pairs, kind, w):
    """Canonical sorted pairs; same pair and kind merged by summing weights (inf wins)."""
    if pairs.shape[0] == 0:
        return pairs.reshape(0, 2), kind, w
    key = (pairs[:, 0] * max(n, 1) + pairs[:, 1]) * 2 + (kind == MUST_LINK)
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    if uniq.shape[0] == key.shape[0]:
        order = np.argsort(key, kind="stable")
        return pairs[order], kind[order], w[order]
    merged_w = np.zeros(uniq.shape[0])
    np.add.at(merged_w, inverse, w)  # inf + finite stays inf (hard wins)
    return pairs[first], kind[first], merged_w

def resolve_conflicts(n, pairs, kind, w, policy):
    """Apply the ``conflicts`` policy of :class:`~hmrf.Constraints` (see its docstring)."""
    if pairs.shape[0] == 0:
        return pairs, kind, w
    ml = kind == MUST_LINK
    cl = ~ml
    hard = np.isinf(w)
    if policy == "drop":
        comp = components(n, pairs[ml])
        bad = cl & (comp[pairs[:, 0]] == comp[pairs[:, 1]])
        if bad.any():
            warnings.warn(
                f"dropped {int(bad.sum())} cannot-link(s) that contradict the must-link "
                f"closure, e.g. ({pairs[bad][0, 0]}, {pairs[bad][0, 1]}).",
                ConstraintConflictWarning,
                stacklevel=5,
            )
            keep = ~bad
            return pairs[keep], kind[keep], w[keep]
        return pairs, kind, w
    hard_ml = pairs[ml & hard]
    comp = components(n, hard_ml)
    bad = cl & hard & (comp[pairs[:, 0]] == comp[pairs[:, 1]])
    if not bad.any():
        return pairs, kind, w
    b = int(np.flatnonzero(bad)[0])
    i, j = int(pairs[b, 0]), int(pairs[b, 1])
    path = chain_between(n, hard_ml, i, j)
    if policy == "raise":
        chain = " - ".join(str(v) for v in path)
        raise InconsistentConstraintsError(
            f"hard cannot-link ({i}, {j}) contradicts hard must-links joining the same "
            f"points (chain {chain}); {int(bad.sum())} such contradiction(s) in total. "
            "Make one of them soft (finite weight) or pass conflicts='soften' or 'drop'.",
            pair=(i, j),
            path=path,
        )
    if policy == "warn":
        warnings.warn(
            f"{int(bad.sum())} hard cannot-link(s) contradict hard must-links, e.g. "
            f"({i}, {j}); their weight was set to 1.0.",
            ConstraintConflictWarning,
            stacklevel=5,
        )
    w = w.copy()
    w[bad] = 1.0
    return pairs, kind, w
