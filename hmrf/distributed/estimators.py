"""``fit`` and ``predict`` of the HMRF estimators on Dask arrays.

:meth:`HMRFClusterMixin.fit <hmrf.estimators.HMRFClusterMixin.fit>` hands a Dask array
to :func:`fit_dask`, which does what the in-memory ``fit`` does with the distributed
pieces: the estimator's own ``_supervision`` and ``_model`` (built on a
``stand_in`` with the data's number of rows and taken over
by a :class:`~hmrf.distributed.DaskHMRF`), the initialisation of
``hmrf.distributed.initialization``, and the in-memory EM loops with the passes of
``hmrf.distributed.passes``. The fitted attributes are those of the in-memory fit,
except that ``labels_`` is a Dask array chunked like the rows of ``X`` and persisted on
the workers (the EM result keeps the client's copy).
"""

from __future__ import annotations

import dask
import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ..em.passes import nearest_clusters
from ..emissions import get_emission
from ..estimators.base import HMRFClusterMixin
from ..estimators.copkmeans import COPKMeans
from ..estimators.mpckmeans import MKMeans
from ..estimators.seeded import SeededKMeans, _seed_clusters
from .data import _global_rows, as_row_chunked, label_dtype, prepare_chunk
from .initialization import initial_centers_dask, seeded_centers_dask
from .labels import ChunkLabels
from .model import DaskHMRF, stand_in
from .passes import dask_assignment_pass, dask_soft_pass

__all__ = ["fit_dask", "predict_dask", "initial_params_dask"]


def initial_params_dask(estimator, model: DaskHMRF, constraints, y, rng):
    """The estimator's initial parameters on a :class:`~hmrf.distributed.DaskHMRF`: what its
    ``_initial_params`` computes in memory, with the initialisation of
    ``hmrf.distributed.initialization`` (same centres for the same generator).

    An estimator whose ``_initial_params`` is its own (COPKMeans with ``init="random"``:
    random rows of distinct must-link components) runs it on the model's
    :class:`~hmrf.distributed.GatheredRows`, which serves rows by index.
    """
    own = type(estimator)._initial_params
    family, k = model.emission, model.n_clusters
    if own is HMRFClusterMixin._initial_params:
        centers = initial_centers_dask(model, k, family, constraints, estimator._spec_init(), rng)
    elif own is MKMeans._initial_params:  # M-KMeans ignores the constraints when seeding
        centers = np.asarray(initial_centers_dask(model, k, family, None, estimator.init, rng))
    elif own is SeededKMeans._initial_params:
        seeds, _ = _seed_clusters(y, model.n_samples, k)
        centers = seeded_centers_dask(model, seeds, k, rng, fill="perturbed" if estimator.init == "perturbed"
                                      else "k-means++", family=family)
    elif own is COPKMeans._initial_params and not (isinstance(estimator.init, str)
                                                   and estimator.init == "random"):
        init = "pckmeans++" if isinstance(estimator.init, str) else estimator.init
        centers = initial_centers_dask(model, k, family, constraints, init, rng)
    else:
        return estimator._initial_params(model, constraints, y, rng)
    return family.init_params(model.X, centers)


def _labels(y):
    """Partial labels given as a Dask array, as a NumPy vector (n integers on the client)."""
    if y is not None and type(y).__module__.split(".")[0] == "dask":
        return np.asarray(y.compute())
    return y


def fit_dask(estimator, X, y=None, *, must_link=None, cannot_link=None, constraints=None,
             potentials=None, persist=None):
    """Fit an HMRF estimator on a row-chunked Dask array (module docstring).

    Parameters
    ----------
    estimator : HMRFClusterMixin
    X : dask.array.Array (n, d)
        Dense or with sparse chunks (for families that accept sparse data).
    y, must_link, cannot_link, constraints, potentials :
        As the estimator's ``fit``; ``y`` may be a Dask array (n labels are read).
    persist : {"auto", True, False}, optional
        Keep the prepared chunks in the workers' memory (see
        :class:`~hmrf.distributed.ChunkedData`); default: the Dask configuration value
        ``hmrf.persist``, else ``"auto"``.

    Returns
    -------
    estimator
        Fitted; ``labels_`` is a Dask array chunked like the rows of ``X``.
    """
    estimator._validate_params()
    X = as_row_chunked(X)
    validate_data(estimator, X, skip_check_array=True, reset=True)
    estimator._resolve_emission(X)
    persist = dask.config.get("hmrf.persist", "auto") if persist is None else persist
    n = int(X.shape[0])
    y = _labels(y)
    em = estimator._em(dask_assignment_pass, dask_soft_pass)
    c = estimator._supervision(n, y, must_link, cannot_link, constraints)
    template = estimator._model(stand_in(n), c, y, potentials)
    model = DaskHMRF.from_model(template, X, persist=persist)
    del template  # its stand-in data

    def initial_params(model, constraints, y, rng):
        return initial_params_dask(estimator, model, constraints, y, rng)

    best = estimator._best_of_runs(model, c, y, em, initial_params)
    if isinstance(best.labels, ChunkLabels):  # hard EM: the labels are on the workers
        labels = best.labels.to_dask()
    else:  # soft EM's pass gathers them
        labels = model.data.to_dask(best.labels.astype(label_dtype(model.n_clusters)), np.int64)
    return estimator._set_fitted(best, model, c, labels)


def _predict_chunk(block, family, params, normalizer, block_info=None):
    start = block_info[0]["array-location"][0][0] if block_info else 0
    X = prepare_chunk(block, family, start)
    try:
        return nearest_clusters(family, X, params, normalizer)
    except ValueError as exc:  # pragma: no cover - a family's own error while scoring
        raise ValueError(_global_rows(str(exc), start)) from None


def predict_dask(estimator, X):
    """Nearest cluster of the rows of a Dask array under the fitted emission (no
    constraints), as a lazy Dask array of int64 chunked like the rows of ``X``."""
    check_is_fitted(estimator, "params_")
    family = get_emission(estimator._spec_emission())
    X = as_row_chunked(X)
    validate_data(estimator, X, skip_check_array=True, reset=False)
    return X.map_blocks(_predict_chunk, family, estimator.params_, estimator._spec_normalizer(),
                        drop_axis=1, dtype=np.int64, meta=np.empty(0, dtype=np.int64))
