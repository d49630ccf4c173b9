"""The HMRF of a Dask array: the model of :class:`hmrf.HMRF` with its data on the workers.

What does not read the data (pairwise factors, energies of the pairwise part, M-steps
from statistics) is the in-memory model's code; what reads it runs per chunk
(``hmrf.distributed.passes``), and every pass accumulates the M-step statistics
(``incremental_statistics = False``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dask
import numpy as np

from .._blocks import row_blocks
from ..emissions import get_emission
from ..emissions.base import MStepContext
from ..emissions.stats import ClusterStats, Spread
from ..model import HMRF, block_unary
from ..potentials import DistanceScaledPotts
from .components import component_tasks_above
from .data import _sum_all, label_dtype, tree_reduce
from .labels import ChunkLabels
from .passes import dask_assignment_pass
from .rows import DaskRows, GatheredRows

if TYPE_CHECKING:
    from typing import Any, Literal

    from numpy.typing import NDArray

    from .._typing import MatrixLike
    from ..constraints import Constraints
    from ..emissions.base import EmissionFamily, EmissionParams

__all__ = ["DaskHMRF"]


def _needs_all_rows(potential) -> str | None:
    """Why a potential would read every row of ``X`` (the squared diameter of
    :class:`~hmrf.potentials.DistanceScaledPotts`), or ``None``."""
    if not isinstance(potential, DistanceScaledPotts) or not isinstance(potential.alpha_max, str):
        return None
    c = potential.constraints
    has_ml = bool(np.any(c.kind == 1))
    if potential.alpha_max == "must_link" and has_ml:
        return None
    if potential._decreasing().any() or potential.alpha_min != 0.0:
        return (f"alpha_max={potential.alpha_max!r} here needs the squared diameter of X, a pass "
                "over all pairs of points; on a Dask array give alpha_max a number")
    return None


class DaskHMRF(HMRF):
    """An :class:`~hmrf.HMRF` on a row-chunked Dask array (module docstring).

    Parameters
    ----------
    X : dask.array.Array of shape (n, d), or DaskRows
        Row-chunked data, dense or with sparse chunks (families that accept sparse data);
        ``HMRF(DaskRows(X), ...)`` builds a ``DaskHMRF``.
    persist : {"auto", True, False}, default="auto"
        As :class:`~hmrf.distributed.ChunkedData`; the other parameters are those of
        :class:`~hmrf.HMRF`.

    Attributes
    ----------
    data : ChunkedData
    X : GatheredRows
        Rows by index and the column summary (never every row).
    component_tasks_above : int
        With at least this many constrained points the E-step of the constrained part
        runs on the workers (:mod:`hmrf.distributed.components`).

    Notes
    -----
    Methods that would form n x k or per-point arrays on the client (``unary(params)``
    of all points, ``energy_terms``, ``to_pgmpy``) are refused with an error naming
    them; :meth:`energy`, :meth:`statistics` and :meth:`m_step` run a pass on the
    workers.

    Examples
    --------
    >>> import numpy as np, dask, dask.array as da
    >>> from hmrf import Constraints
    >>> from hmrf.em import run_em
    >>> from hmrf.inference import ICM
    >>> from hmrf.distributed import DaskHMRF, dask_assignment_pass
    >>> X = da.from_array(np.array([[0.0], [0.2], [5.0], [5.2], [2.4]]), chunks=2)
    >>> c = Constraints.from_pairs(must_link=[(0, 4)], n=5)
    >>> with dask.config.set(scheduler="synchronous"):
    ...     model = DaskHMRF(X, 2, constraints=c)
    ...     params = model.emission.init_params(model.X, np.array([[0.0], [5.0]]))
    ...     res = run_em(model, params, ICM(), data_pass=dask_assignment_pass)
    ...     labels = res.labels.compute()  # the labels stay on the workers until asked for
    >>> labels.tolist()
    [0, 0, 1, 1, 0]
    """

    incremental_statistics = False

    def __init__(self, X: MatrixLike | DaskRows | GatheredRows, n_clusters: int,
                 emission: str | EmissionFamily = "sqeuclidean", constraints: Constraints | None = None,
                 w: float = 1.0, potentials: Any = None, normalizer: str = "constant",
                 clamped: NDArray[np.intp] | None = None, *, validated: bool = False,
                 persist: Literal["auto"] | bool = "auto") -> None:
        family = get_emission(emission)
        if "data" in family.m_step_needs:
            raise ValueError(f"the M-step of {family!r} reads the data matrix itself; "
                             "it has no Dask path (its statistics would have to be additive).")
        rows = X if isinstance(X, (DaskRows, GatheredRows)) else DaskRows(X, persist)
        super().__init__(rows, n_clusters, emission=family, constraints=constraints, w=w,
                         potentials=potentials, normalizer=normalizer, clamped=clamped, validated=validated)
        extra = getattr(self.emission, "metric_potential", None)
        for p in [*self.potentials, *([extra] if extra is not None else [])]:
            reason = _needs_all_rows(p)
            if reason is not None:
                raise ValueError(reason + ".")
        self.data = self.X.data
        self._clamped_chunks = None
        self.component_tasks_above = component_tasks_above()
        self._component_plan = None

    # -------------------------------------------------------------- data views
    @property
    def data_terms(self) -> None:
        """``None``: the family's per-row data terms stay with the chunks on the workers."""
        return None

    @property
    def statistics_shift(self) -> NDArray[np.float64] | None:
        """The column means of dense data from the summary pass (``None`` for sparse data
        or families whose statistics have no second moment), as :class:`~hmrf.HMRF`."""
        if self.emission.second_moment(self.normalizer) is None or self.data.sparse:
            return None
        return self.data.summary.mean

    def one_cluster_moments(self) -> tuple[ClusterStats, Spread]:
        """As :meth:`hmrf.HMRF.one_cluster_moments`, from the summary pass (one more pass for
        a full second moment)."""
        summary, fam, k = self.data.summary, self.emission, self.n_clusters
        kind = fam.second_moment(self.normalizer)
        if kind == "full" or summary.spread is None:
            parts = [dask.delayed(_chunk_one_cluster, pure=False)(self.data.family_key, x, k, self.normalizer,
                                                                 self.statistics_shift)
                     for x in self.data.chunks]
            return dask.compute(tree_reduce(parts, combine=_add_pairs))[0]
        stats = ClusterStats.zeros(k, self.data.d, kind, self.statistics_shift)
        stats.counts[0], stats.sums[0] = summary.n, summary.sums
        if kind == "norm":
            stats.second[0] = summary.second.sum()
        elif kind == "diagonal":
            stats.second[0] = summary.second
        return stats, summary.spread

    def clamped_chunks(self) -> Any:
        """The clamped labels cut into the chunks' slices and kept on the workers (sent
        once), or ``None``."""
        if self.clamped is None:
            return None
        if self._clamped_chunks is None:
            small = self.clamped.astype(np.int16 if self.n_clusters < 2**15 else np.int64)
            self._clamped_chunks = self.data.send(self.data.pieces(small))
        return self._clamped_chunks

    def unary(self, params: EmissionParams, rows: slice | None = None) -> np.ndarray:
        """Unary costs of the rows of the slice ``rows`` (fetched from the workers); all
        n rows are refused (an n x k array on the client)."""
        if not isinstance(rows, slice):
            raise ValueError("DaskHMRF.unary gives the unary costs of a slice of rows only (rows=); the "
                             "passes of hmrf.distributed reduce all of them on the workers.")
        idx = np.arange(*rows.indices(self.n_samples))
        return block_unary(self.emission, self.X[idx], params, self.normalizer, None,
                           None if self.clamped is None else self.clamped[idx])

    def statistics(self, assignment: NDArray[np.intp], rows: NDArray[np.intp] | None = None) -> ClusterStats:
        """M-step statistics of ``assignment``: for all points (labels (n,)) by a pass on the
        workers, for the points ``rows`` from their gathered rows (as :class:`~hmrf.HMRF`)."""
        if rows is not None:
            return super().statistics(assignment, rows)
        shift, k = self.statistics_shift, self.n_clusters
        if isinstance(assignment, ChunkLabels):
            pieces = assignment.chunks
        else:
            labels = np.asarray(assignment)
            if labels.shape != (self.n_samples,):
                raise ValueError(f"a DaskHMRF accumulates statistics of hard labels of shape "
                                 f"({self.n_samples},); got {labels.shape}.")
            pieces = self.data.send(self.data.pieces(labels.astype(label_dtype(k))))
        parts = [dask.delayed(_chunk_statistics, pure=False)(self.data.family_key, x, lab, k,
                                                             self.normalizer, shift)
                 for x, lab in zip(self.data.chunks, pieces)]
        return dask.compute(tree_reduce(parts))[0]

    def m_step(self, labels: NDArray[np.intp] | ChunkLabels, params: EmissionParams) -> EmissionParams:
        """As :meth:`hmrf.HMRF.m_step`, for labels held by the client (n,) or kept on the
        workers (:class:`~hmrf.distributed.ChunkLabels`): the statistics by a pass on the
        workers."""
        return self.update(self.statistics(labels), labels, params)

    def _one_cluster(self) -> ChunkLabels:
        """Every point in cluster 0, made on the workers (no (n,) vector on the client)."""
        return ChunkLabels.constant(self.data, 0, self.n_clusters)

    def unary_total(self, labels: NDArray[np.intp], params: EmissionParams) -> float:
        """``Σ_i u(x_i, labels_i)`` by a pass on the workers (as :class:`~hmrf.HMRF`, but
        clamped labels apply: no estimator that clamps labels has a weight to resolve)."""
        return float(dask_assignment_pass(self, params, previous=labels).previous_cost)

    def energy(self, labels: NDArray[np.intp], params: EmissionParams) -> float:
        """The objective ``J(y, Θ)`` (as :meth:`hmrf.HMRF.energy`): the unary part by a pass
        on the workers, the pairwise part on the client."""
        if isinstance(labels, ChunkLabels):
            nodes, sub = self.graph(params).constrained_part()
            step = dask_assignment_pass(self, params, previous=labels)
            return float(step.previous_cost + sub.pairwise_energy(labels[nodes]))
        y = self._check_labels(labels)
        step = dask_assignment_pass(self, params, previous=y)
        return float(step.previous_cost + self.graph(params).pairwise_energy(y))

    def context(self, labels: NDArray[np.intp]) -> MStepContext:
        """As :meth:`hmrf.HMRF.context`; for an M-step that reads labels, labels kept on the
        workers become an (n,) vector holding those of the points in constraint pairs (0
        elsewhere, never read), or every label for a potential that is not a set of
        pairs."""
        if isinstance(labels, ChunkLabels) and set(self.emission.m_step_needs) - {"statistics"}:
            extra = getattr(self.emission, "metric_potential", None)
            pots = [*self.potentials, *([extra] if extra is not None else [])]
            if all(hasattr(p, "constraints") for p in pots):
                points = np.unique(np.concatenate([np.asarray(p.constraints.pairs, dtype=np.int64).ravel()
                                                   for p in pots] or [np.empty(0, dtype=np.int64)]))
                dense = np.zeros(self.n_samples, dtype=label_dtype(self.n_clusters))
                dense[points] = labels[points]  # the constrained points' labels, fetched if unknown
                labels = dense
            else:  # a potential that is not a set of constraint pairs: every label
                labels = labels.compute()
        return super().context(labels)

    def energy_terms(self, labels: NDArray[np.intp], params: EmissionParams) -> dict:
        raise ValueError("DaskHMRF.energy_terms reads every point's costs on the client; use "
                         "energy() (a pass on the workers).")

    def to_pgmpy(self, params: EmissionParams, factor_graph: bool = False) -> None:
        raise ValueError("DaskHMRF.to_pgmpy builds every point's and every pair's factor on "
                         "the client; not for data on a cluster.")

    def __repr__(self) -> str:
        return (f"DaskHMRF(n={self.n_samples}, d={self.X.shape[1]}, k={self.n_clusters}, "
                f"emission={self.emission!r}, constraints={self.constraints!r}, "
                f"normalizer={self.normalizer!r}, data={self.data!r})")


def _chunk_statistics(family, X, labels, n_clusters, normalizer, shift):
    """Statistics of one chunk's rows under ``labels``, in blocks of rows."""
    total = None
    for sl in row_blocks(X.shape[0], X.shape[1]):  # blocks of rows bound the temporaries
        st = family.statistics(X[sl], labels[sl].astype(np.int64), n_clusters, normalizer, shift)
        total = st if total is None else total + st
    return total


def _chunk_one_cluster(family, X, n_clusters, normalizer, shift):
    """Statistics of one chunk's rows all in cluster 0, and their Spread."""
    stats = _chunk_statistics(family, X, np.zeros(X.shape[0], dtype=np.int64), n_clusters, normalizer, shift)
    return stats, Spread.of(family, X)


def _add_pairs(*pairs):
    return _sum_all(*(p[0] for p in pairs)), _sum_all(*(p[1] for p in pairs))
