"""The user's own files: points, pairwise constraints and labels (formats: :data:`FORMATS`).

Rows are the points, in file order; the pairs file refers to them by 0-based position.
Every problem is a :class:`DataFileError` (a ``ValueError``) naming the file, the row
(0-based), the line (1-based) and the column. A text table's first row is a header when
none of its cells (outside the id column) is a number.
"""

from __future__ import annotations

import csv
import os
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .._optional import load
from .._pairs import KIND_NAMES
from ..constraints import CANNOT_LINK, MUST_LINK, Constraints
from ..exceptions import InconsistentConstraintsError

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["DataFileError", "read_data", "read_pairs", "read_labels", "FORMATS"]

#: extension -> what it holds
FORMATS = {
    ".csv": "comma-separated text table",
    ".tsv": "tab-separated text table (also .tab)",
    ".npy": "NumPy array",
    ".npz": "NumPy archive (array 'X', or the only array) or scipy.sparse.save_npz matrix",
    ".parquet": "Parquet table (needs pyarrow)",
    ".txt": "one document a line: TF-IDF vectors (Basu 2005, §2.5); labels: one a line",
}


def _unsupported(path, ext, what):
    raise DataFileError(path, f"cannot read {what} from a {ext or 'extension-less'} file; use one "
                              f"of {', '.join(sorted(FORMATS))}")


class DataFileError(ValueError):
    """A problem in a user's file, located by 0-based data ``row``, 1-based ``line`` of
    a text file and ``column`` (header name or 0-based position)."""

    def __init__(self, path: str, message: str, *, row: int | None = None, line: int | None = None,
                 column: str | int | None = None) -> None:
        self.path, self.row, self.line, self.column = os.fspath(path), row, line, column
        where = []
        if row is not None:
            where.append(f"row {row}" + (f" (line {line})" if line is not None else ""))
        elif line is not None:
            where.append(f"line {line}")
        if column is not None:
            where.append(f"column {column!r}" if isinstance(column, str) else f"column {column}")
        prefix = ", ".join([self.path, *where])
        super().__init__(f"{prefix}: {message}")


# ------------------------------------------------------------------ text tables
class TextTable:
    """Cells of a text table as strings, with the file line of every data row."""

    def __init__(self, path, header, rows, lines):
        self.path, self.header, self.rows, self.lines = path, header, rows, lines

    def name(self, j: int):
        return self.header[j] if self.header is not None else j

    def column_index(self, spec, what: str) -> int:
        """Position of a column given by header name or 0-based position."""
        if isinstance(spec, str) and not spec.lstrip("-").isdigit():
            if self.header is None:
                raise DataFileError(self.path, f"{what} {spec!r} is a column name, but the file "
                                               "has no header row")
            if spec not in self.header:
                raise DataFileError(self.path, f"no column named {spec!r} for {what}; the columns "
                                               f"are {self.header}")
            return self.header.index(spec)
        j = int(spec)
        width = len(self.rows[0]) if self.rows else 0
        if not 0 <= j < width:
            raise DataFileError(self.path, f"{what} {j} is not a column position in [0, {width - 1}]")
        return j


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def read_text_table(path, delimiter, skip=None) -> TextTable:
    """Rows of a CSV/TSV file; blank lines are skipped; a header is detected (module notes)."""
    rows, lines = [], []
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f, delimiter=delimiter)
            for record in reader:
                if not record or all(not c.strip() for c in record):
                    continue
                rows.append([c.strip() for c in record])
                lines.append(reader.line_num)
    except UnicodeDecodeError as exc:
        raise DataFileError(path, f"not a UTF-8 text file ({exc.reason})") from None
    except csv.Error as exc:
        raise DataFileError(path, f"cannot parse the file: {exc}") from None
    if not rows:
        raise DataFileError(path, "the file has no rows")
    first = [c for j, c in enumerate(rows[0]) if j != skip]
    header = None
    if first and not any(is_number(c) for c in first):
        header, rows, lines = rows[0], rows[1:], lines[1:]
        if not rows:
            raise DataFileError(path, "the file has a header but no data rows")
    width = len(header) if header is not None else len(rows[0])
    for r, row in enumerate(rows):
        if len(row) != width:
            raise DataFileError(path, f"{len(row)} fields, expected {width} as in the "
                                      f"{'header' if header is not None else 'first row'}",
                                row=r, line=lines[r])
    return TextTable(path, header, rows, lines)


def numeric_columns(table: TextTable, columns, what="a number") -> np.ndarray:
    """The given columns as a float64 matrix; the first bad cell raises DataFileError."""
    cells = np.asarray([[row[j] for j in columns] for row in table.rows], dtype=str)
    if cells.size == 0:
        return np.empty((len(table.rows), len(columns)))
    try:
        values = cells.astype(np.float64)
    except ValueError:
        values = None
    if values is None:  # find the first cell that is not a number (error path only)
        for r, row in enumerate(cells.tolist()):
            for c, cell in enumerate(row):
                if not is_number(cell):
                    text = "an empty cell" if cell == "" else f"{cell!r}"
                    raise DataFileError(table.path, f"{text} is not {what}", row=r,
                                        line=table.lines[r], column=table.name(columns[c]))
    bad = np.argwhere(~np.isfinite(values))
    if bad.size:
        r, c = (int(v) for v in bad[0])
        raise DataFileError(table.path, f"{str(cells[r, c])!r} is not a finite number", row=r,
                            line=table.lines[r], column=table.name(columns[c]))
    return values


def extension(path) -> str:
    """The lower-case extension, with ``.tab`` read as ``.tsv`` and ``.pq`` as ``.parquet``."""
    ext = os.path.splitext(os.fspath(path))[1].lower()
    return {".tab": ".tsv", ".pq": ".parquet"}.get(ext, ext)


def check_exists(path):
    """Raise DataFileError unless ``path`` is a file."""
    if not os.path.isfile(path):
        raise DataFileError(path, "no such file" if not os.path.exists(path) else "not a file")


# -------------------------------------------------------------------- parquet
def parquet_columns(path) -> tuple[list, list]:
    """Column names and NumPy arrays of a Parquet file (pyarrow)."""
    pq = load("pyarrow.parquet", purpose=f"{path}: reading Parquet")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors have many types
        raise DataFileError(path, f"not a readable Parquet file ({exc})") from None
    names = list(table.column_names)
    cols = []
    for name in names:
        col = table.column(name)
        if col.null_count:
            r = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise DataFileError(path, "missing value", row=r, column=name)
        cols.append(col.to_numpy())
    return names, cols


def check_finite(path, X, columns=None):
    """Raise DataFileError at the first NaN or infinite entry of the dense matrix ``X``."""
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        r, c = (int(v) for v in bad[0])
        raise DataFileError(path, f"{float(X[r, c])!r} is not a finite number", row=r,
                            column=columns[c] if columns is not None else c)


def check_unique_ids(path, ids, lines):
    """Raise DataFileError at the second occurrence of the first repeated id."""
    uniq, _, counts = np.unique(ids, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = str(uniq[counts > 1][0])
        rows = np.flatnonzero(ids == dup)[:2]
        raise DataFileError(path, f"id {dup!r} appears again (first at row {int(rows[0])})",
                            row=int(rows[1]), line=None if lines is None else lines[rows[1]])


def load_array(path, ext, prefer):
    """The array of a ``.npy``, or of a ``.npz`` (its ``prefer`` array, or its only one, or
    the matrix of ``scipy.sparse.save_npz``)."""
    keys = []
    try:
        if ext == ".npy":
            return np.load(path, allow_pickle=False)
        with np.load(path, allow_pickle=False) as z:
            keys = list(z.keys())
            if {"format", "shape", "data"} <= set(keys):
                return sp.load_npz(path)
            if prefer in keys:
                return z[prefer]
            if len(keys) == 1:
                return z[keys[0]]
    except (ValueError, OSError, EOFError) as exc:
        raise DataFileError(path, f"not a readable NumPy file ({exc})") from None
    raise DataFileError(path, f"the archive holds {keys}; name the array {prefer!r} or keep one")


_MUST = [name for name, sign in KIND_NAMES.items() if sign == MUST_LINK]
_CANNOT = [name for name, sign in KIND_NAMES.items() if sign == CANNOT_LINK]
_UNKNOWN = ("", "-1")


# ----------------------------------------------------------------------- data
def read_data(path: str | os.PathLike[str], *, id_column: str | int | None = None, min_df: int = 5,
              max_df: float = 0.95) -> tuple[Any, Any]:
    """Points from a file (:data:`FORMATS`), one row per point, in file order.

    ``id_column`` (header name or 0-based position) of a CSV/TSV/Parquet table holds
    point identifiers, kept apart; ``min_df``, ``max_df`` are the document-frequency
    cut-offs of the TF-IDF of a ``.txt`` corpus (:func:`~hmrf.datasets.text.thesis_tfidf`).
    Returns ``(X, ids)``: float64 ``X`` (csr_matrix for a sparse ``.npz`` or a ``.txt``)
    and the id column or None.

    Raises
    ------
    DataFileError
        A missing or unreadable file, a text cell in a numeric column, NaN or infinity,
        a ragged row, duplicate ids, a document with no term left after the TF-IDF
        cut-offs (the message names the file, the row, the line and the column).
    """
    path = os.fspath(path)
    check_exists(path)
    ext = extension(path)
    if id_column is not None and ext not in (".csv", ".tsv", ".parquet"):
        raise DataFileError(path, "an id column applies to CSV, TSV and Parquet tables only")
    ids = None
    if ext in (".csv", ".tsv"):
        skip = int(id_column) if isinstance(id_column, int) or (
            isinstance(id_column, str) and id_column.isdigit()) else None
        table = read_text_table(path, "," if ext == ".csv" else "\t", skip=skip)
        cols = list(range(len(table.rows[0])))
        if id_column is not None:
            j = table.column_index(id_column, "the id column")
            ids = np.asarray([row[j] for row in table.rows], dtype=str)
            cols.remove(j)
        if not cols:
            raise DataFileError(path, "no feature column")
        X = numeric_columns(table, cols)
        if ids is not None:
            check_unique_ids(path, ids, table.lines)
    elif ext == ".parquet":
        names, arrays = parquet_columns(path)
        if id_column is not None:
            key = names[int(id_column)] if str(id_column).isdigit() and int(id_column) < len(names) \
                else id_column
            if key not in names:
                raise DataFileError(path, f"no column named {id_column!r} for the id column; the "
                                          f"columns are {names}")
            j = names.index(key)
            ids = np.asarray(arrays[j]).astype(str)
            del names[j], arrays[j]
            check_unique_ids(path, ids, None)
        for name, a in zip(names, arrays):
            if a.dtype.kind not in "biuf":
                first = next((r for r, v in enumerate(a) if not is_number(str(v))), 0)
                raise DataFileError(path, f"{str(a[first])!r} is not a number (column type {a.dtype})",
                                    row=first, column=name)
        if not names:
            raise DataFileError(path, "no feature column")
        X = np.column_stack([np.asarray(a, dtype=np.float64) for a in arrays])
        check_finite(path, X, names)
    elif ext in (".npy", ".npz"):
        X = load_array(path, ext, prefer="X")
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64)
            if not np.isfinite(X.data).all():
                k = int(np.flatnonzero(~np.isfinite(X.data))[0])
                r = int(np.searchsorted(X.indptr, k, side="right") - 1)
                raise DataFileError(path, f"{float(X.data[k])!r} is not a finite number", row=r,
                                    column=int(X.indices[k]))
        else:
            if X.ndim != 2:
                raise DataFileError(path, f"the array has {X.ndim} dimension(s); points need a 2-D "
                                          "array (one row per point)")
            if X.dtype.kind not in "biuf":
                raise DataFileError(path, f"the array has dtype {X.dtype}; points need numbers")
            X = X.astype(np.float64)
            check_finite(path, X)
    elif ext == ".txt":
        X = _read_documents(path, min_df, max_df)
    else:
        _unsupported(path, ext, "points")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise DataFileError(path, f"no data: the points have shape {X.shape}")
    return X, ids


def _read_documents(path, min_df, max_df):
    from .text import thesis_tfidf

    try:
        with open(path, encoding="utf-8-sig") as f:
            docs = [line.rstrip("\r\n") for line in f]
    except UnicodeDecodeError as exc:
        raise DataFileError(path, f"not a UTF-8 text file ({exc.reason})") from None
    while docs and not docs[-1].strip():
        docs.pop()
    if not docs:
        raise DataFileError(path, "the file has no documents")
    try:
        X, _ = thesis_tfidf(docs, min_df=min_df, max_df=max_df)
    except ValueError as exc:
        raise DataFileError(path, str(exc)) from None
    empty = np.flatnonzero(np.diff(X.indptr) == 0)
    if empty.size:
        r = int(empty[0])
        raise DataFileError(path, f"no term of this document survives the TF-IDF cut-offs "
                                  f"(min_df={min_df}, max_df={max_df}); {empty.size} document(s) "
                                  "are empty", row=r, line=r + 1)
    return X


# ---------------------------------------------------------------------- pairs
def read_pairs(path: str | os.PathLike[str], n: int) -> Constraints:
    """Pairwise constraints on ``n`` points from a CSV/TSV/Parquet table.

    Columns ``i``, ``j`` (0-based data rows), ``kind`` (``must``/``cannot``, also
    ``must-link``, ``ml``, ...) and an optional ``weight`` (``>= 0``, ``inf`` hard), by
    header name or, without a header, in that order.

    Raises
    ------
    DataFileError
        A text or negative index, an index past the last row, ``i == j``, an unknown
        kind, a bad weight, contradictory hard constraints (naming the row).
    """
    path = os.fspath(path)
    check_exists(path)
    ext = extension(path)
    if ext in (".csv", ".tsv"):
        table = read_text_table(path, "," if ext == ".csv" else "\t")
        names = table.header
        columns = [[row[j] for row in table.rows] for j in range(len(table.rows[0]))]
        lines = table.lines
    elif ext == ".parquet":
        names, arrays = parquet_columns(path)
        columns = [[str(v) for v in a] for a in arrays]
        lines = None
    else:
        _unsupported(path, ext, "pairs")
    if names is not None:
        lower = [str(c).strip().lower() for c in names]
        missing = [c for c in ("i", "j", "kind") if c not in lower]
        extra = [c for c in lower if c not in ("i", "j", "kind", "weight")]
        if missing or extra:
            raise DataFileError(path, f"the columns must be i, j, kind and optionally weight; got "
                                      f"{list(names)}")
        pos = {c: lower.index(c) for c in lower}
    else:
        if len(columns) not in (3, 4):
            raise DataFileError(path, f"{len(columns)} columns; a pairs file has i, j, kind and "
                                      "optionally weight")
        pos = dict(zip(("i", "j", "kind", "weight"), range(len(columns))))
    m = len(columns[0])

    def where(r, col):
        return dict(row=r, line=None if lines is None else lines[r],
                    column=col if names is None else names[pos[col]])

    def parse(col, conv, what):
        """A column converted at once; on failure, the first cell that does not convert."""
        cells = np.asarray(columns[pos[col]], dtype=str)
        try:
            return cells.astype(conv)
        except ValueError:
            for r, cell in enumerate(cells.tolist()):  # error path only
                try:
                    conv(cell)
                except ValueError:
                    raise DataFileError(path, f"{cell!r} is not {what}", **where(r, col)) from None
            raise

    idx = np.column_stack([parse("i", np.int64, "a row index (an integer)"),
                           parse("j", np.int64, "a row index (an integer)")]) if m else \
        np.empty((0, 2), dtype=np.int64)
    for c, col in enumerate(("i", "j")):
        neg, past = np.flatnonzero(idx[:, c] < 0), np.flatnonzero(idx[:, c] >= n)
        if neg.size:
            raise DataFileError(path, f"row index {idx[neg[0], c]} is negative", **where(int(neg[0]), col))
        if past.size:
            r = int(past[0])
            raise DataFileError(path, f"row index {idx[r, c]} is past the last row of the data "
                                      f"({n - 1})", **where(r, col))
    same = np.flatnonzero(idx[:, 0] == idx[:, 1])
    if same.size:
        r = int(same[0])
        raise DataFileError(path, f"a point cannot be paired with itself ({idx[r, 0]})",
                            **where(r, "j"))
    kinds = np.char.lower(np.char.strip(np.asarray(columns[pos["kind"]], dtype=str)))
    must, cannot = np.isin(kinds, _MUST), np.isin(kinds, _CANNOT)
    if not (must | cannot).all():
        r = int(np.flatnonzero(~(must | cannot))[0])
        raise DataFileError(path, f"kind {columns[pos['kind']][r]!r} is neither 'must' nor "
                                  "'cannot'", **where(r, "kind"))
    kind = np.where(must, MUST_LINK, CANNOT_LINK).astype(np.int8)
    weight = np.ones(m)
    if "weight" in pos:
        weight = parse("weight", np.float64, "a weight (a number >= 0; inf: hard)")
        bad = np.flatnonzero(~(weight >= 0))
        if bad.size:
            r = int(bad[0])
            raise DataFileError(path, f"weight {columns[pos['weight']][r]!r} is not a number >= 0 "
                                      "(inf: hard)", **where(r, "weight"))
    try:
        return Constraints(n, idx, kind, weight)
    except InconsistentConstraintsError as exc:
        if exc.pair is None:
            raise DataFileError(path, str(exc)) from None
        a, b = (int(v) for v in exc.pair)
        rows = np.flatnonzero((np.minimum(idx[:, 0], idx[:, 1]) == min(a, b))
                              & (np.maximum(idx[:, 0], idx[:, 1]) == max(a, b)) & (kind == CANNOT_LINK))
        chain = " - ".join(str(v) for v in exc.path) if exc.path is not None else f"{a} - {b}"
        message = (f"the hard cannot-link ({a}, {b}) contradicts the hard must-links that join the "
                   f"same points (chain {chain}); give one of these pairs a finite weight in the "
                   "weight column, or remove one")
        raise DataFileError(path, message, **(where(int(rows[0]), "kind") if rows.size else {})) from None


# --------------------------------------------------------------------- labels
def read_labels(path: str | os.PathLike[str], n: int,
                ids: NDArray[np.str_] | None = None) -> tuple[NDArray[np.int64], NDArray[Any]]:
    """Class labels from a file, one per data row, ``-1`` for unknown (or an empty label
    cell of an ``id, label`` table; blank lines are skipped).

    A single column of ``n`` labels (after an optional header row), or with ``ids`` a
    table ``id, label`` matched to the data by id. Returns ``(y, classes)``: labels
    numbered ``0..c-1`` in the sorted order of the labels written in the file,
    ``classes[c]`` the label written for class ``c``.

    Raises
    ------
    DataFileError
        A wrong number of labels, ids that do not match the data, a NaN label.
    """
    path = os.fspath(path)
    check_exists(path)
    ext = extension(path)
    lines = None
    if ext in (".csv", ".tsv", ".txt"):
        rows, lines = [], []
        delim = {".csv": ",", ".tsv": "\t", ".txt": None}[ext]
        with open(path, newline="", encoding="utf-8-sig") as f:
            for lineno, raw in enumerate(f, start=1):
                text = raw.rstrip("\r\n")
                if not text.strip():
                    continue
                cells = next(csv.reader([text], delimiter=delim)) if delim else [text]
                rows.append([c.strip() for c in cells])
                lines.append(lineno)
        width = {len(r) for r in rows}
        if len(width) > 1:
            bad = next(i for i, r in enumerate(rows) if len(r) != len(rows[0]))
            raise DataFileError(path, f"{len(rows[bad])} fields, expected {len(rows[0])}",
                                line=lines[bad])
        columns = [list(c) for c in zip(*rows)] if rows else [[]]
    elif ext == ".parquet":
        _, arrays = parquet_columns(path)
        columns = [[str(v) for v in a] for a in arrays]
    elif ext in (".npy", ".npz"):
        a = load_array(path, ext, prefer="y")
        if sp.issparse(a) or a.ndim != 1:
            raise DataFileError(path, f"labels need a 1-D array; got shape {a.shape}")
        if a.dtype.kind == "f" and np.isnan(a).any():
            raise DataFileError(path, "NaN is not a label; use -1 for unknown",
                                row=int(np.flatnonzero(np.isnan(a))[0]))
        columns = [[str(int(v)) if a.dtype.kind in "biuf" and float(v).is_integer() else str(v)
                    for v in a.tolist()]]
    else:
        _unsupported(path, ext, "labels")
    by_id = ids is not None and len(columns) == 2
    if len(columns) != 1 and not by_id:
        raise DataFileError(path, f"{len(columns)} columns; a labels file has one label a row"
                                  + (" (or id, label with --id-column)" if ids is None else ""))
    count = len(columns[0])
    if count == n + 1:  # header row
        columns = [c[1:] for c in columns]
        lines = None if lines is None else lines[1:]
    elif count != n:
        raise DataFileError(path, f"{count} labels for {n} data rows")
    if by_id:
        given = np.asarray(columns[0], dtype=str)
        order = {v: r for r, v in enumerate(given.tolist())}
        missing = [v for v in ids.tolist() if v not in order]
        if missing:
            raise DataFileError(path, f"no label for id {missing[0]!r} of the data")
        text = [columns[1][order[v]] for v in ids.tolist()]
    else:
        text = columns[0]
    known = [t for t in text if t not in _UNKNOWN]
    for r, t in enumerate(text):
        if t.lower() in ("nan", "na", "null", "none"):
            raise DataFileError(path, f"{t!r} is not a label; use -1 or an empty cell for unknown",
                                row=r, line=None if lines is None else lines[r])
    if all(t.lstrip("-").isdigit() for t in known):
        classes = np.unique(np.asarray(known, dtype=np.int64))
        keys = [int(t) for t in known]
    else:
        classes = np.unique(np.asarray(known, dtype=str))
        keys = known
    lookup = {k: c for c, k in enumerate(classes.tolist())}
    it = iter(keys)
    y = np.asarray([-1 if t in _UNKNOWN else lookup[next(it)] for t in text], dtype=np.int64)
    return y, classes
