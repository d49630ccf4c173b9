"""``hmrf fit --data rows.zarr|parquet [--scheduler ADDRESS|local]``: a fit on a Dask cluster.

The rows are read chunk by chunk on the workers (hmrf.distributed), from a Zarr store or
from Parquet files (:func:`hmrf.datasets.read_parquet_rows`); the labels are written in
--out by the workers, chunk by chunk, to ``labels.zarr`` or ``labels.parquet``, and never
gathered to the command's process.
"""

from __future__ import annotations

import json
import os
import time

HELP = """\
Data on a Dask cluster (pip install "hmrf[dask]" zarr; for Parquet also "dask[dataframe]" pyarrow):
  --data ROWS.zarr   a Zarr array of shape (n, d), chunked along the rows, read on the workers
  --data DIR         a directory of Parquet files (or one .parquet file with --scheduler):
                     the rows of the files in the natural order of their names, one chunk a
                     partition; the numeric columns, or those of --columns a,b,c
  --scheduler ADDR   the scheduler of a running cluster (tcp://host:8786), or 'local' for a
                     cluster of worker processes on this machine (the default for .zarr and
                     a directory)
  writes labels.zarr (Zarr data) or labels.parquet (Parquet data; --labels-format chooses):
  one int64 label per row, one chunk (Parquet: one file, columns row and label) per chunk
  of rows, written by the workers; and summary.json; supervision: --pairs FILE or none
  hmrf fit --data rows.zarr --k 20 --pairs pairs.csv --scheduler tcp://10.0.0.5:8786
  hmrf fit --data rows/ --columns x0,x1,x2 --k 20 --scheduler local
"""

FORMATS = ("zarr", "parquet")


def add_options(p) -> None:
    """``--scheduler``, ``--columns`` and ``--labels-format`` on the ``hmrf fit`` parser."""
    p.add_argument("--scheduler", metavar="ADDR|local",
                   help="fit on a Dask cluster: a scheduler address or 'local' (see 'Data on a Dask "
                        "cluster' above); implied by a .zarr --data or a directory")
    p.add_argument("--columns", metavar="A,B,C",
                   help="the feature columns of Parquet --data on a cluster (default: all, each numeric)")
    p.add_argument("--labels-format", choices=FORMATS,
                   help="how the labels of a fit on a cluster are written (default: the format of --data)")


def data_format(path) -> str | None:
    """``"zarr"`` or ``"parquet"`` for data read on a cluster, else None: a ``.zarr`` path or
    a directory holding a Zarr array is Zarr; any other directory (of Parquet files), or a
    Parquet file, is Parquet."""
    from ..datasets.parquet_rows import is_parquet_dataset

    path = str(path).rstrip("/\\")
    zarr_metadata = (".zarray", "zarr.json")  # Zarr format 2, 3
    if os.path.splitext(path)[1].lower() == ".zarr" or (
            os.path.isdir(path) and any(os.path.exists(os.path.join(path, m)) for m in zarr_metadata)):
        return "zarr"
    return "parquet" if os.path.isdir(path) or is_parquet_dataset(path) else None


def requested(args) -> bool:
    """Whether ``hmrf fit`` runs on a Dask cluster: ``--scheduler`` (with Zarr or Parquet
    data), a Zarr store, or a directory (of Parquet files)."""
    if args.data is None:
        on_cluster = False
    else:
        kind = data_format(args.data)
        on_cluster = args.scheduler is not None or (kind == "zarr" or os.path.isdir(args.data))
        if on_cluster and not os.path.exists(args.data):
            from ..datasets import DataFileError

            raise DataFileError(args.data, "no such file or directory")
        if on_cluster and kind is None:
            raise ValueError(f"--data {args.data}: on a cluster (--scheduler) the rows come from a Zarr "
                             "array (ROWS.zarr) or Parquet files (a directory of them or a .parquet file).")
    for flag, value in (("--columns", args.columns), ("--labels-format", args.labels_format)):
        if value is not None and not on_cluster:
            raise ValueError(f"{flag} goes with data read on a cluster (--scheduler, a .zarr store or a "
                             "directory of Parquet files).")
    return on_cluster


def _check_options(args) -> None:
    for name, flag in (("constraints", "--constraints"), ("seeds", "--seeds"), ("labels", "--labels"),
                       ("id_column", "--id-column"), ("plot", "--plot")):
        if getattr(args, name, None) not in (None, False):
            raise ValueError(f"{flag} is not available on a cluster; give --pairs FILE "
                             "(or no supervision).")
    if args.k is None:
        raise ValueError("--k is needed on a cluster.")
    if getattr(args, "standardize", False):
        raise ValueError("--standardize is not available on a cluster.")


def _client(address):
    from distributed import Client, LocalCluster

    if address in (None, "local"):
        cluster = LocalCluster(threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(cluster), cluster
    return Client(address), None


def _read_rows(args, kind):
    """The rows of --data as a Dask array (Parquet: chunk sizes still unknown)."""
    from ..datasets import DataFileError

    if kind == "parquet":
        from ..datasets import read_parquet_rows

        columns = None if args.columns is None else [c.strip() for c in args.columns.split(",") if c.strip()]
        if columns == []:
            raise ValueError("--columns is empty.")
        return read_parquet_rows(args.data, columns, chunk_sizes=False)
    if args.columns is not None:
        raise ValueError("--columns goes with Parquet --data (a Zarr array has no named columns).")
    try:
        import dask.array as da
    except ImportError as exc:
        raise ValueError('--data ROWS.zarr needs Dask: pip install "hmrf[dask]" zarr.') from exc
    try:
        return da.from_zarr(args.data)
    except Exception as exc:  # zarr's errors for a missing or malformed store vary by version
        raise DataFileError(args.data, f"cannot read the Zarr array ({exc})") from None


def write_labels(labels, path, labels_format) -> None:
    """Write ``labels`` (a Dask array chunked like the rows) by the workers, chunk by chunk:
    a Zarr array, or a directory of Parquet files (one a chunk: ``part.<i>.parquet``) with
    the columns ``row`` (the row's 0-based position in --data) and ``label``."""
    import numpy as np

    if labels_format == "zarr":
        labels.to_zarr(path, overwrite=True)
        return
    import dask.array as da
    import dask.dataframe as dd

    rows = da.arange(labels.shape[0], chunks=labels.chunks, dtype=np.int64)
    table = da.stack([rows, labels.astype(np.int64)], axis=1)
    dd.from_dask_array(table, columns=["row", "label"]).to_parquet(path, write_index=False, overwrite=True)


def run(args) -> int:
    """Fit ``args.data`` (a Zarr store or Parquet files) on a Dask cluster; returns the exit code."""
    import numpy as np

    from .. import __version__
    from ..datasets import DataFileError, read_pairs
    from ..estimators import ESTIMATORS, make_estimator
    from . import _common as common
    from .fit import _family, _json_safe

    _check_options(args)
    kind = data_format(args.data)
    labels_format = args.labels_format or kind
    X = _read_rows(args, kind)
    spec = ESTIMATORS[args.estimator]
    if spec.supervision == "labels":
        raise ValueError(f"{args.estimator} takes labelled seeds, which a fit on a cluster does not read; "
                         "choose an estimator that takes pairs.")
    emission = args.emission or None
    est = make_estimator(args.estimator, args.k, emission, args.w, args.engine, random_state=args.seed)
    client, cluster = _client(args.scheduler)
    try:
        if np.isnan(X.shape[0]):  # Parquet: the rows of each partition, counted by the workers
            X.compute_chunk_sizes()
            if X.shape[0] == 0:
                raise DataFileError(args.data, "no rows")
        n = int(X.shape[0])
        supervision = read_pairs(args.pairs, n) if args.pairs is not None else None
        with common.OutputDir(args.out) as out:
            t0 = time.perf_counter()
            kw = {} if supervision is None else {"constraints": supervision}
            est.fit(X, **kw)
            elapsed = time.perf_counter() - t0
            store = out.file(f"labels.{labels_format}")
            write_labels(est.labels_.rechunk({0: X.chunks[0]}), store, labels_format)
            summary = dict(
                hmrf_version=__version__,
                arguments={a: v for a, v in vars(args).items() if not a.startswith("_")},
                data=dict(file=str(args.data), format=kind, n=n, d=int(X.shape[1]), chunks=len(X.chunks[0])),
                scheduler=args.scheduler or "local", n_workers=len(client.scheduler_info()["workers"]),
                estimator=args.estimator, n_clusters=args.k, emission=_family(est),
                w=getattr(est, "w_", None), n_constraints=0 if supervision is None else len(supervision),
                objective=est.objective_, history=est.history_, n_iter=est.n_iter_,
                converged=est.converged_, fit_time=elapsed, seed=args.seed,
                files=dict(labels=store, summary=out.file("summary.json")))
            with open(out.file("summary.json"), "w", encoding="utf-8") as f:
                json.dump(_json_safe(summary), f, indent=2)
                f.write("\n")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    print(f"data         {args.data}: {n:,} rows x {int(X.shape[1])}, {len(X.chunks[0])} chunks "
          f"on {summary['n_workers']} workers ({summary['scheduler']})")
    print(f"estimator    {args.estimator}  emission={_family(est)}  w={getattr(est, 'w_', None)}")
    print(f"supervision  {summary['n_constraints']} pairs")
    print(f"objective    {est.objective_:.4f}")
    print(f"iterations   {est.n_iter_}  converged={est.converged_}  time={elapsed:.3f}s")
    print(f"wrote        {store}, summary.json")
    return 0
