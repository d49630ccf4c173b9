"""Rows of Parquet files as a row-chunked Dask array, read by the workers of a cluster."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from .files import DataFileError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import dask.array as da

__all__ = ["read_parquet_rows"]

#: file extensions read as Parquet in a directory (those of dask.dataframe.read_parquet)
PARQUET_EXTENSIONS = (".parquet", ".parq", ".pq")


def _dask_dataframe(path):
    try:
        import dask.dataframe as dd
        import pyarrow  # noqa: F401 - dask.dataframe's Parquet engine
    except ImportError as exc:
        raise ImportError(f"{path}: reading Parquet on a Dask cluster needs dask.dataframe and pyarrow: "
                          "pip install 'hmrf[dask,parquet]' 'dask[dataframe]'") from exc
    return dd


def is_parquet_dataset(path) -> bool:
    """Whether ``path`` is a Parquet file (by extension) or a directory holding one."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return any(name.lower().endswith(PARQUET_EXTENSIONS) for name in os.listdir(path))
    return path.lower().endswith(PARQUET_EXTENSIONS)


def read_parquet_rows(path: str | os.PathLike[str], columns: Sequence[str] | None = None, *,
                      chunk_sizes: bool = True) -> da.Array:
    """The rows of a Parquet file or directory as a Dask array (n, d), chunked by rows.

    ``path`` is a ``.parquet`` (``.parq``, ``.pq``) file or a directory of them that the
    workers see; ``columns`` the feature columns in order (default: every column, each
    numeric). Rows are in the order of ``dask.dataframe`` (files in the natural order of
    their names), one chunk per partition, float32 when every feature column is
    float32; ``chunk_sizes`` counts the rows of every chunk (one pass on the workers),
    as the estimators need (``False``: unknown, ``nan``).

    Raises
    ------
    DataFileError
        A missing path, no Parquet file, an unreadable file, an unknown or non-numeric
        column (the message names every such column), no feature column, no rows.
    """
    import pandas.api.types as ptypes

    path = os.fspath(path)
    if not os.path.exists(path):
        raise DataFileError(path, "no such file or directory")
    if os.path.isdir(path) and not is_parquet_dataset(path):
        raise DataFileError(path, f"no Parquet file ({', '.join(PARQUET_EXTENSIONS)}) in this directory")
    dd = _dask_dataframe(path)
    try:
        df = dd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow's and fsspec's errors have many types
        reason = str(exc).strip().splitlines()[-1].removeprefix("Original Message: ")
        raise DataFileError(path, f"not a readable Parquet data set ({reason})") from None
    names = [str(c) for c in df.columns]
    if columns is not None:
        columns = [str(c) for c in columns]
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise DataFileError(path, f"no column named {', '.join(map(repr, unknown))}; "
                                      f"the columns are {names}")
        if len(set(columns)) != len(columns):
            raise DataFileError(path, f"a column is named twice in {columns}")
        df = df[columns]
        names = columns
    if not names:
        raise DataFileError(path, "no feature column")
    dtypes = df.dtypes
    text = [f"{name!r} ({dtypes[name]})" for name in names
            if not (ptypes.is_numeric_dtype(dtypes[name]) or ptypes.is_bool_dtype(dtypes[name]))]
    if text:
        raise DataFileError(path, f"column{'s' if len(text) > 1 else ''} {', '.join(text)} "
                                  f"{'are' if len(text) > 1 else 'is'} not numeric; choose the "
                                  "feature columns (hmrf fit --columns a,b,c, or columns=)")
    dtype = np.float32 if all(dtypes[name] == np.float32 for name in names) else np.float64
    if any(dtypes[name] != dtype for name in names):
        df = df.astype(dtype)
    X = df.values  # the array of the optimised graph (its partitions may fuse small files)
    if chunk_sizes:
        try:
            X.compute_chunk_sizes()
        except KeyError as exc:  # the first file's columns, missing from a later file
            raise DataFileError(path, f"not every file has the columns {names} (missing: "
                                      f"{exc.args[0] if exc.args else exc}); give columns= that "
                                      "every file has") from None
        if X.shape[0] == 0:
            raise DataFileError(path, "no rows")
    return X
