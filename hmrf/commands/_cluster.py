"""``hmrf fit --data rows.zarr [--scheduler ADDRESS|local]``: a fit on a Dask cluster.

The rows are read from the Zarr store chunk by chunk on the workers (hmrf.distributed);
the labels are written to ``labels.zarr`` in --out by the workers, chunk by chunk, and
never gathered to the command's process.
"""

from __future__ import annotations

import json
import os
import time

HELP = """\
Data on a Dask cluster (pip install "hmrf[dask]" zarr):
  --data ROWS.zarr   a Zarr array of shape (n, d), chunked along the rows, read on the workers
  --scheduler ADDR   the scheduler of a running cluster (tcp://host:8786), or 'local' for a
                     cluster of worker processes on this machine (the default for .zarr)
  writes labels.zarr (one int64 label per row, chunked like the rows) and summary.json;
  supervision: --pairs FILE or none
  hmrf fit --data rows.zarr --k 20 --pairs pairs.csv --scheduler tcp://10.0.0.5:8786
"""


def add_options(p) -> None:
    """``--scheduler`` on the ``hmrf fit`` parser."""
    p.add_argument("--scheduler", metavar="ADDR|local",
                   help="fit on a Dask cluster: a scheduler address or 'local' (see 'Data on a Dask "
                        "cluster' above); implied by a .zarr --data")


def requested(args) -> bool:
    """Whether ``hmrf fit`` runs on a Dask cluster (``--scheduler`` or a ``.zarr`` --data)."""
    zarr_data = args.data is not None and os.path.splitext(str(args.data).rstrip("/\\"))[1].lower() == ".zarr"
    if args.scheduler is not None and not zarr_data:
        raise ValueError("--scheduler goes with --data ROWS.zarr (a Zarr array of the rows).")
    return zarr_data


def _check_options(args) -> None:
    for name, flag in (("constraints", "--constraints"), ("seeds", "--seeds"), ("labels", "--labels"),
                       ("id_column", "--id-column"), ("plot", "--plot")):
        if getattr(args, name, None) not in (None, False):
            raise ValueError(f"{flag} is not available with --data ROWS.zarr; give --pairs FILE "
                             "(or no supervision).")
    if args.k is None:
        raise ValueError("--k is needed with --data ROWS.zarr.")
    if getattr(args, "standardize", False):
        raise ValueError("--standardize is not available with --data ROWS.zarr.")


def _client(address):
    from distributed import Client, LocalCluster

    if address in (None, "local"):
        cluster = LocalCluster(threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(cluster), cluster
    return Client(address), None


def run(args) -> int:
    """Fit ``args.data`` (a Zarr store) on a Dask cluster; returns the exit code."""
    from .. import __version__
    from ..datasets import DataFileError, read_pairs
    from ..estimators import ESTIMATORS, make_estimator
    from . import _common as common
    from .fit import _family, _json_safe

    _check_options(args)
    try:
        import dask.array as da
    except ImportError as exc:
        raise ValueError('--data ROWS.zarr needs Dask: pip install "hmrf[dask]" zarr.') from exc
    try:
        X = da.from_zarr(args.data)
    except Exception as exc:  # zarr's errors for a missing or malformed store vary by version
        raise DataFileError(f"cannot read the Zarr array {args.data}: {exc}") from None
    spec = ESTIMATORS[args.estimator]
    if spec.supervision == "labels":
        raise ValueError(f"{args.estimator} takes labelled seeds, which --data ROWS.zarr does not read; "
                         "choose an estimator that takes pairs.")
    n = int(X.shape[0])
    supervision = read_pairs(args.pairs, n) if args.pairs is not None else None
    emission = args.emission or None
    est = make_estimator(args.estimator, args.k, emission, args.w, args.engine, random_state=args.seed)
    client, cluster = _client(args.scheduler)
    try:
        with common.OutputDir(args.out) as out:
            t0 = time.perf_counter()
            kw = {} if supervision is None else {"constraints": supervision}
            est.fit(X, **kw)
            elapsed = time.perf_counter() - t0
            store = out.file("labels.zarr")
            est.labels_.rechunk({0: X.chunks[0]}).to_zarr(store, overwrite=True)  # by the workers
            summary = dict(
                hmrf_version=__version__,
                arguments={a: v for a, v in vars(args).items() if not a.startswith("_")},
                data=dict(file=str(args.data), n=n, d=int(X.shape[1]), chunks=len(X.chunks[0])),
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
