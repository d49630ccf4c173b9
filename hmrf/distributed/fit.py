"""``fit`` and ``predict`` of the HMRF estimators on Dask arrays: :class:`DaskFit` is the
fit backend (:mod:`hmrf.backend`) the estimators' one ``fit`` runs with; the fitted
attributes are those of the in-memory fit, except that ``labels_`` is a Dask array.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dask
import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ..em.passes import nearest_clusters
from ..emissions import get_emission
from .components import component_tasks_above as _component_tasks_above
from .data import _global_rows, as_row_chunked, label_dtype, prepare_chunk
from .labels import ChunkLabels
from .model import DaskHMRF
from .passes import dask_assignment_pass, dask_soft_pass
from .rows import DaskRows

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import dask.array as da
    from numpy.typing import ArrayLike
    from sklearn.base import BaseEstimator

    from .._typing import PairsLike
    from ..constraints import Constraints
    from ..em.loop import EMResult
    from ..model import HMRF
    from .data import ChunkedData

__all__ = ["DaskFit", "fit_dask", "predict_dask"]


class DaskFit:
    """The fit backend of a row-chunked Dask array (module docstring; the protocol is
    :class:`hmrf.backend.InMemoryFit`'s).

    Parameters
    ----------
    persist : {"auto", True, False}, optional
        Keep the prepared chunks in the workers' memory (see
        :class:`~hmrf.distributed.ChunkedData`); default: the Dask configuration value
        ``hmrf.persist``, else ``"auto"``.
    component_tasks_above : int, optional
        Constrained points from which the E-step of the constrained part runs on the
        workers (:mod:`hmrf.distributed.components`); default: the Dask configuration
        value ``hmrf.component-tasks-above``, else ``COMPONENT_TASKS_ABOVE``.
    """

    hard_pass = staticmethod(dask_assignment_pass)
    soft_pass = staticmethod(dask_soft_pass)

    def __init__(self, persist: bool | str | None = None, component_tasks_above: int | None = None) -> None:
        self.persist = dask.config.get("hmrf.persist", "auto") if persist is None else persist
        self.component_tasks_above = _component_tasks_above(component_tasks_above)

    def data(self, X: Any) -> ChunkedData:
        """``X`` as a row-chunked Dask array (:func:`~hmrf.distributed.data.as_row_chunked`);
        the chunks are checked on the workers when the model reads them."""
        return as_row_chunked(X)

    def partial_labels(self, y: Any) -> ArrayLike | None:
        """Partial labels given as a Dask array, as a NumPy vector."""
        if y is not None and type(y).__module__.split(".")[0] == "dask":
            return np.asarray(y.compute())
        return y

    def model(self, build: Callable[..., HMRF], X: ChunkedData, constraints: Constraints,
              y: ArrayLike | None, potentials: Any) -> DaskHMRF:
        """``build(DaskRows(X), constraints, y, potentials)``, a
        :class:`~hmrf.distributed.DaskHMRF`."""
        model = build(DaskRows(X, self.persist), constraints, y, potentials)
        if not isinstance(model, DaskHMRF):
            raise TypeError(f"_model built a {type(model).__name__} on the rows of a Dask array; there "
                            "it must build hmrf.HMRF (which is then a DaskHMRF) or a DaskHMRF.")
        model.component_tasks_above = self.component_tasks_above
        return model

    def labels(self, result: EMResult, model: DaskHMRF) -> da.Array:
        """The fitted ``labels_`` as a Dask array chunked like the rows of ``X``."""
        if isinstance(result.labels, ChunkLabels):
            return result.labels.to_dask()
        return model.data.to_dask(result.labels.astype(label_dtype(model.n_clusters)), np.int64)


def fit_dask(estimator: BaseEstimator, X: da.Array, y: ArrayLike | None = None, *,
             must_link: PairsLike | None = None, cannot_link: PairsLike | None = None,
             constraints: Constraints | None = None, potentials: Any = None,
             persist: bool | str | None = None, component_tasks_above: int | None = None) -> BaseEstimator:
    """Fit an HMRF estimator on a row-chunked Dask array (dense, or sparse chunks for
    families that accept sparse data): its ``fit`` with a :class:`DaskFit` backend
    (``persist``, ``component_tasks_above``; module docstring). ``y`` may be a Dask
    array. The fitted ``labels_`` is a Dask array chunked like the rows of ``X``.
    """
    return estimator._fit(DaskFit(persist, component_tasks_above), X, y, must_link=must_link,
                          cannot_link=cannot_link, constraints=constraints, potentials=potentials)


def _predict_chunk(block, family, params, normalizer, block_info=None):
    start = block_info[0]["array-location"][0][0] if block_info else 0
    X = prepare_chunk(block, family, start)
    try:
        return nearest_clusters(family, X, params, normalizer)
    except ValueError as exc:  # pragma: no cover - a family's own error while scoring
        raise ValueError(_global_rows(str(exc), start)) from None


def predict_dask(estimator: BaseEstimator, X: da.Array) -> da.Array:
    """Nearest cluster of the rows of a Dask array under the fitted emission (no
    constraints), as a lazy Dask array of int64 chunked like the rows of ``X``."""
    check_is_fitted(estimator, "params_")
    family = get_emission(estimator._spec_emission())
    X = as_row_chunked(X)
    validate_data(estimator, X, skip_check_array=True, reset=False)
    return X.map_blocks(_predict_chunk, family, estimator.params_, estimator._spec_normalizer(),
                        drop_axis=1, dtype=np.int64, meta=np.empty(0, dtype=np.int64))
