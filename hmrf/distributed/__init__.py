"""HMRF EM on Dask arrays and a Dask cluster (ARCHITECTURE.md, layer 8).

The same model, E-step and M-step as in memory, with the data left where they are: in
the chunks of a row-chunked ``dask.array.Array``, on the workers of a
``dask.distributed`` cluster (or Dask's local threads when no client is running).

* :class:`DaskHMRF` is the :class:`~hmrf.HMRF` of such an array: each chunk is
  validated and prepared by the emission family on the worker that holds it, and only
  the rows the model asks for by index (the endpoints of constraints, labelled seeds, a
  few random rows for the initialisation) ever reach the client.
* :func:`dask_assignment_pass` and :func:`dask_soft_pass` are the data passes of
  :func:`hmrf.em.run_em` and :func:`hmrf.em.run_soft_em`: one task per chunk runs
  :func:`hmrf.em.passes.assign_block` (or :func:`~hmrf.em.passes.soft_assign_block`) over the
  chunk's rows, the M-step statistics are tree-reduced on the workers, and the client
  receives the cost rows of the constrained points (O(m k)), on which the chosen engine
  runs as it does in memory, the cluster sizes and the statistics; every point's label
  stays on the worker that holds its chunk (:class:`ChunkLabels`).
* :class:`DaskFit` is the fit backend (:mod:`hmrf.backend`) the estimators' one ``fit``
  runs with when given a Dask array (:func:`fit_dask` with ``persist=``), and
  :class:`GatheredRows` the row backend their initialisation runs on;
  :func:`predict_dask` is what ``predict`` calls.

``import hmrf`` never imports Dask; this package loads its modules on first use
(``pip install "hmrf[dask]"``). See ``docs/scaling_out.md`` for the memory model.
"""

from __future__ import annotations

from .._lazy import lazy_names
from .._validation import is_dask_collection

__all__ = ["DaskHMRF", "DaskFit", "ChunkedData", "ChunkLabels", "ColumnSummary", "GatheredRows",
           "DaskRows", "dask_assignment_pass", "dask_soft_pass", "fit_dask", "predict_dask",
           "is_dask_collection"]

#: public name -> submodule of this package that defines it
_LAZY = {
    "DaskHMRF": "model", "ChunkedData": "data", "ChunkLabels": "labels", "ColumnSummary": "data",
    "GatheredRows": "rows", "DaskRows": "rows",
    "dask_assignment_pass": "passes", "dask_soft_pass": "passes", "DaskFit": "fit", "fit_dask": "fit",
    "predict_dask": "fit",
}


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)
