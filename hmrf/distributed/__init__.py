"""HMRF EM on Dask arrays and a Dask cluster: the same model, E-step and M-step as in memory,
with the data left in the chunks of a row-chunked ``dask.array.Array`` on the workers.

:class:`DaskHMRF` is the :class:`~hmrf.HMRF` of such an array (only rows asked for by
index reach the client); :func:`dask_assignment_pass` and :func:`dask_soft_pass` are the
data passes of the EM loops (one task per chunk, statistics summed in chunk order, by a
tree of tasks above ``TREE_ABOVE`` floats a chunk, labels left on
the workers as :class:`ChunkLabels`); :class:`DaskFit` is the fit backend of the
estimators and :class:`GatheredRows` the row backend of their initialisation. Needs
``pip install "hmrf[dask]"``; see ``docs/scaling_out.md`` for the memory model.
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
