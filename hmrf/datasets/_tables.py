"""Reading tabular files cell by cell, with errors located by file, row, line and column.

The machinery behind ``hmrf.datasets.files``: CSV/TSV tables (a header row is
detected), Parquet columns (pyarrow), NumPy arrays, and :class:`DataFileError`.
"""

from __future__ import annotations

import csv
import os

import numpy as np
import scipy.sparse as sp

from .._optional import load

__all__ = ["DataFileError", "TextTable", "read_text_table", "numeric_columns", "parquet_columns",
           "load_array", "check_exists", "check_finite", "check_unique_ids", "extension", "is_number"]


class DataFileError(ValueError):
    """A problem in a user's file, located by row, line and column.

    Parameters
    ----------
    path : str
    message : str
    row : int, optional
        0-based data row (the position pairs files use).
    line : int, optional
        1-based line of a text file.
    column : int or str, optional
        Column name (header) or 0-based position.
    """

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
