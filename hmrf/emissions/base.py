"""The emission-family protocol: how a cluster generates its points.

In the HMRF (Basu 2005, §4.3.4, eq. 4.8) point ``x_i`` in cluster ``h`` has density
``p(x | h, Θ) = exp(-D(x, μ_h)) / Z_Θ``. An :class:`EmissionFamily` supplies the
distortion ``D`` (``divergence``), the per-point cost ``-log p(x_i | h)`` (``unary``),
additive per-cluster statistics (:mod:`hmrf.emissions.stats`) and the M-step from them
(``update``); :data:`REQUIRED_MEMBERS` and :data:`OPTIONAL_MEMBERS` list the protocol.
``normalizer="constant"`` drops ``log Z_Θ`` (the thesis's HMRF-KMeans, §4.4.1);
``"closed_form"`` keeps it for families that have one and learns the scale it depends
on (per-cluster variance, vMF concentration).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from .._blocks import map_row_blocks
from .stats import ClusterStats

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike, NDArray
    from scipy import sparse

    from .._typing import MatrixLike

__all__ = ["EmissionFamily", "EmissionProtocol", "EmissionParams", "LinearCosts", "MStepContext",
           "MetricTerms", "cluster_sums", "scale_rows", "inner_products", "NORMALIZERS", "M_STEP_NEEDS",
           "REQUIRED_MEMBERS", "OPTIONAL_MEMBERS", "work_dtype", "check_squared_scale"]

NORMALIZERS = ("constant", "closed_form")
#: what an M-step may ask the EM loop for (``EmissionFamily.m_step_needs``)
M_STEP_NEEDS = ("statistics", "data", "pairwise")


@dataclass(frozen=True)
class EmissionParams:
    """Parameters Θ of k clusters.

    Attributes
    ----------
    centers : ndarray of shape (k, d)
        Cluster representatives μ_h (expectation parameters).
    scale : ndarray of shape (k,), optional
        Per-cluster scale when the normaliser is kept: the variance σ_h² of the
        isotropic Gaussian, the concentration κ_h of the von Mises-Fisher. ``None``
        means the family's default scale.
    weights : ndarray of shape (k,), optional
        Mixing weights ``π_h`` (learned by soft EM with the closed-form normaliser);
        the model then adds ``-log π_h`` to every unary cost. ``None``: uniform, no term.
    """

    centers: np.ndarray
    scale: np.ndarray | None = None
    weights: np.ndarray | None = None

    @property
    def n_clusters(self) -> int:
        return int(self.centers.shape[0])

    def replace(self, **changes: Any) -> EmissionParams:
        """A copy with some fields replaced."""
        return replace(self, **changes)


@dataclass(frozen=True)
class LinearCosts:
    """Unary costs that are linear in the point, up to a clip and a per-cluster affine map:

        U[i, h] = scale_h · clip(a_i + bias_h + <x_i, g_h>, lo, hi) + offset_h

    with ``a_i`` the family's data terms (``φ(x_i)``; 0 for a family without them). Every
    Bregman divergence has this form (``g_h = -∇φ(μ_h)``, ``bias_h = <μ_h, ∇φ(μ_h)> -
    φ(μ_h)``, clip at 0 against round-off; Banerjee et al. 2005, eq. 3), and so has the
    vMF cost ``κ_h (1 - x^T μ_h) - κ_h - log C_d(κ_h)`` (``g_h = -μ_h``, ``bias_h = 1``,
    clip to [0, 2]). It is what the pass's compiled sweep needs
    (:func:`hmrf.em.passes.linear_block`): the products of each row with the dense
    columns ``g_h`` (a GEMM for dense rows, only the stored entries of a CSR row).

    Attributes
    ----------
    weights : ndarray (d, k)
        Row ``f`` holds ``g_hf`` of every cluster (the layout a sparse row reads: one
        contiguous k-vector per stored entry), C-contiguous. The arrays are in the data's
        precision.
    scale : ndarray (k,) or None
        ``None``: 1 for every cluster; then the argmin is taken on ``bias_h + <x_i, g_h>
        + offset_h`` (``a_i`` and the clip, which only undoes round-off, change no
        comparison).
    """

    weights: np.ndarray
    bias: np.ndarray
    offset: np.ndarray
    scale: np.ndarray | None = None
    lo: float = 0.0
    hi: float = np.inf

    @classmethod
    def build(cls, weights: NDArray[Any] | None, bias: Any, offset: Any, dtype: DTypeLike, scale: Any = None,
              lo: float = 0.0, hi: float = np.inf, factor: float = 1.0) -> LinearCosts:
        """The form with every array in ``dtype``; ``g_h`` is ``factor`` times row ``h`` of
        ``weights`` (k, d), stored transposed (one pass over the centres)."""
        weights = np.asarray(weights)
        k, d = weights.shape
        W = np.empty((d, k), dtype=dtype)
        np.multiply(weights.T, factor, out=W, casting="unsafe")
        offset = np.zeros(k) if offset is None else offset
        return cls(W, np.ascontiguousarray(bias, dtype=dtype), np.ascontiguousarray(offset, dtype=dtype),
                   None if scale is None else np.ascontiguousarray(scale, dtype=dtype), float(lo), float(hi))

    def with_offset(self, extra: Any) -> LinearCosts:
        """The same costs plus ``extra`` (k,) per cluster (e.g. ``-log π_h``)."""
        return replace(self, offset=(self.offset + np.asarray(extra)).astype(self.offset.dtype))


def work_dtype(X: MatrixLike) -> np.dtype:
    """The precision costs are computed in: float32 for float32 data, else float64."""
    return np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64)


def inner_products(X: MatrixLike, G: ArrayLike) -> np.ndarray:
    """``X @ G.T``, the (n, k) inner products ``<x_i, g_h>`` in ``X``'s precision: the one
    GEMM of an E-step (:class:`LinearCosts`)."""
    G = np.asarray(G, dtype=work_dtype(X))
    if sp.issparse(X):
        return np.asarray(X @ G.T)
    return (G @ X.T).T  # OpenBLAS is markedly faster with the long dimension last


def check_squared_scale(X: MatrixLike, family: str) -> None:
    """Refuse data whose squared distances overflow or underflow the working precision.

    Entries beyond ``sqrt(max / (16 d))`` leave no headroom for the sums of squared
    distances, which overflow to ``inf`` near ``sqrt(max / d)``; when even the largest
    entry is below ``1000 sqrt(tiny)`` squared distances underflow towards zero and
    round-off decides.
    """
    data = X.data if sp.issparse(X) else X
    if data.size == 0:
        return
    info = np.finfo(work_dtype(X))
    if data.ndim == 2:  # by row blocks on every core, no |X| temporary
        big = float(max(map_row_blocks(lambda rows: max(data[rows].max(), -data[rows].min()), *data.shape)))
    else:
        big = float(max(np.max(data), -np.min(data)))
    limit = np.sqrt(info.max / (16.0 * X.shape[1]))
    if big > limit or 0.0 < big < np.sqrt(info.tiny) * 1e3:
        raise ValueError(
            f"X's entries reach {big:.3g} in absolute value: the {family} emission's squared "
            f"distances would {'overflow' if big > limit else 'underflow'} {info.dtype} "
            "(usable magnitudes are about "
            f"{np.sqrt(info.tiny) * 1e3:.0e} to {limit:.0e}). Rescale X first, e.g. with "
            "sklearn.preprocessing.StandardScaler or by dividing it by a constant; the "
            "clustering does not change."
        )


def scale_rows(X: MatrixLike, scale: np.ndarray) -> NDArray[np.floating] | sparse.csr_matrix:
    """``X`` with row ``i`` divided by ``scale[i]`` (a new array of ``X``'s precision;
    sparse stays CSR)."""
    inv = (1.0 / scale).astype(work_dtype(X))
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(inv) @ X)
    return X * inv[:, None]


def _check_normalizer(normalizer: str) -> str:
    if normalizer not in NORMALIZERS:
        raise ValueError(f"normalizer must be one of {NORMALIZERS}; got {normalizer!r}.")
    return normalizer


def cluster_sums(X: MatrixLike, assignment: NDArray[np.intp],
                 n_clusters: int) -> tuple[NDArray[Any], NDArray[Any]]:
    """Dense per-cluster sums (k, d) of the rows of ``X`` and the counts (k,) under labels
    (n,) or responsibilities (n, k)."""
    st = ClusterStats.from_data(X, assignment, n_clusters)
    return st.sums, st.counts


@dataclass(frozen=True)
class MStepContext:
    """What the EM loop hands an M-step besides the cluster statistics.

    A family says which of these it reads in ``EmissionFamily.m_step_needs``
    (``"data"``: ``X`` and ``labels``; ``"pairwise"``: ``potentials`` and
    ``pairwise_energy(params) -> float``, the potentials' energy at ``labels`` under trial
    parameters), so that the loop (and the out-of-core path, which cannot hand over
    ``X``) knows what to provide.
    """

    X: object = None
    labels: np.ndarray | None = None
    potentials: tuple = ()
    pairwise_energy: object = None
    n_clusters: int = 0


class MetricTerms(ABC):
    """A pairwise potential whose costs depend on a learned metric ``A``, and which
    therefore adds terms to the metric's update (Basu, Bilenko & Mooney 2004, eq. 4 and
    appendix): :class:`~hmrf.emissions.Mahalanobis` adds the terms of every potential
    of the model that is a ``MetricTerms`` (and of its ``metric_potential``).
    :class:`~hmrf.potentials.DistanceScaledPotts` is one.
    """

    @abstractmethod
    def metric_terms(self, X: MatrixLike, params: EmissionParams,
                     labels: NDArray[np.intp]) -> tuple[np.ndarray, np.ndarray] | None:
        """``(diff, coef)``: rows ``x_i - x_j`` of the pairs that enter the update and
        their coefficients ``∂ penalty / ∂ ||x_i - x_j||²_A`` under ``labels``."""


@runtime_checkable
class EmissionProtocol(Protocol):
    """Every member of an emission family that the model, the EM loop and the
    initialisation call: what :class:`EmissionFamily` implements.

    A new family writes the :data:`REQUIRED_MEMBERS`; :data:`OPTIONAL_MEMBERS` says what
    overriding each other one buys. :func:`hmrf.testing.check_emission` checks a family.
    """

    name: str
    has_closed_form_normalizer: bool
    accepts_sparse: bool
    exact_m_step: bool
    m_step_needs: frozenset

    def prepare(self, X: MatrixLike) -> NDArray[np.floating] | sparse.csr_matrix: ...
    def data_terms(self, X: MatrixLike) -> np.ndarray | None: ...
    def divergence(self, X: MatrixLike, centers: NDArray[np.floating], data: Any = None) -> np.ndarray: ...
    def divergence_to(self, X: MatrixLike, point: NDArray[np.floating]) -> NDArray[np.float64] | None: ...
    def distortion(self, X: MatrixLike, params: EmissionParams, data: Any = None) -> np.ndarray: ...
    def cluster_cost(self, params: EmissionParams, normalizer: str = "constant") -> np.ndarray: ...
    def unary(self, X: MatrixLike, params: EmissionParams, normalizer: str = "constant",
              data: Any = None) -> np.ndarray: ...
    def linear_costs(self, params: EmissionParams, normalizer: str,
                     dtype: DTypeLike) -> LinearCosts | None: ...
    def summed_cost(self, params: EmissionParams, stats: ClusterStats,
                    normalizer: str = "constant") -> float | None: ...
    def prior_cost(self, params: EmissionParams) -> float: ...
    def second_moment(self, normalizer: str = "constant") -> str | None: ...
    def statistics(self, X: MatrixLike, assignment: NDArray[np.intp], n_clusters: int,
                   normalizer: str = "constant",
                   shift: NDArray[np.floating] | None = None) -> ClusterStats: ...
    def update(self, stats: ClusterStats, params: EmissionParams | None = None,
               normalizer: str = "constant", context: MStepContext | None = None) -> EmissionParams: ...
    def m_step(self, X: MatrixLike, assignment: NDArray[np.intp], params: EmissionParams | None = None,
               normalizer: str = "constant") -> EmissionParams: ...
    def default_shift(self, X: MatrixLike) -> NDArray[Any] | None: ...
    def init_params(self, X: MatrixLike, centers: NDArray[np.floating]) -> EmissionParams: ...
    def check_normalizer(self, normalizer: str) -> str: ...


#: The members of :class:`EmissionProtocol` a family must write (abstract in
#: :class:`EmissionFamily`).
REQUIRED_MEMBERS = {
    "divergence": "D(x_i, c_h) of every row and centre, (n, k), in X's precision",
    "update": "the M-step: the parameters minimising the summed unary cost, from cluster statistics",
}

#: What overriding each optional member of :class:`EmissionProtocol` buys; without it the
#: :class:`EmissionFamily` default applies.
OPTIONAL_MEMBERS = {
    "name": "the family's short name in reprs and messages; default 'emission'",
    "prepare": "a domain check (ValueError naming the entry) or a normalisation; default: X as given",
    "init_params": "centres projected into the domain (clipped, normalised); default: as given",
    "data_terms": "per-row terms (φ(x_i)) computed once per model instead of at every E-step",
    "linear_costs": "the fused GEMM pass: costs as one product per row block with the argmin fused, "
                    "the compiled sparse pass, and the one-pass data scale of w='auto'; default: "
                    "unary computed block by block, a second pass for the scale",
    "divergence_to": "the Bregman information of the data terms in the one-pass data scale; needed "
                     "with data_terms and linear_costs (default None: no information term)",
    "summed_cost": "the data scale from the one-cluster statistics, for families without "
                   "linear_costs; default: a second pass over the rows",
    "cluster_cost": "a per-cluster term of every unary cost (log-normaliser, prior); default 0",
    "prior_cost": "-log p(Θ) of a prior the update is the MAP step under and the unary costs do not "
                  "carry; soft EM adds it to its free energy; default 0",
    "distortion": "the distortion part of the cost that energy_terms reports, when it depends on "
                  "more than the centres; default: divergence",
    "unary": "costs other than distortion + cluster_cost (a scaled divergence); default: their sum",
    "second_moment": "a second moment in the statistics ('norm', 'diagonal', 'full') for an update "
                     "that learns a scale or a metric; default: counts and sums only",
    "statistics": "other additive statistics; default: counts, sums and second_moment's moment",
    "has_closed_form_normalizer": "normalizer='closed_form' accepted (and log Z_Θ learned)",
    "accepts_sparse": "False refuses sparse X with a TypeError instead of failing inside",
    "exact_m_step": "False: EM does not warn when the objective rises (an approximate M-step)",
    "m_step_needs": "'data' (X and labels) or 'pairwise' (the potentials) in the M-step's context",
    "default_shift": "the centre of the second moments; default: the data's mean (dense data)",
    "m_step": "update on the statistics of all of X at once (for direct use); keep the default",
    "check_normalizer": "refuses normalizer='closed_form' without has_closed_form_normalizer; keep "
                        "the default",
}


class EmissionFamily(ABC):
    """Base class of emission families.

    ``divergence`` and ``update`` are abstract, every other member of
    :class:`EmissionProtocol` has a default (:data:`OPTIONAL_MEMBERS` describes them and
    the class attributes).
    """

    name = "emission"
    has_closed_form_normalizer = False
    accepts_sparse = True
    exact_m_step = True
    m_step_needs = frozenset({"statistics"})

    # -------------------------------------------------------------- data domain
    def prepare(self, X: MatrixLike) -> NDArray[np.floating] | sparse.csr_matrix:
        """Check the domain of ``X`` and return the data the family works on (never
        modifying ``X``); the default returns it unchanged."""
        return X

    def data_terms(self, X: MatrixLike) -> np.ndarray | None:
        """Per-row quantities of the data alone (``φ(x_i)``), or ``None``; the model
        computes them once and passes each block's rows as ``data``."""
        return None

    # ------------------------------------------------------------------- costs
    @abstractmethod
    def divergence(self, X: MatrixLike, centers: NDArray[np.floating], data: Any = None) -> np.ndarray:
        """Distortion ``D(x_i, c_h)`` (n, k) in ``X``'s precision; ``data``: the rows of
        ``data_terms`` when the caller has them."""

    def divergence_to(self, X: MatrixLike, point: NDArray[np.floating]) -> NDArray[np.float64] | None:
        """``D_φ(x_i, c)`` of every row to one point ``c`` (n,), float64, for the Bregman
        information of the family's data terms ``φ(x_i)`` (:class:`~hmrf.emissions.stats.Spread`,
        behind :meth:`hmrf.HMRF.data_scale`); ``None`` for a family without data terms,
        whose costs are linear in ``x`` (the information term is then 0)."""
        return None

    def distortion(self, X: MatrixLike, params: EmissionParams, data: Any = None) -> np.ndarray:
        """The distortion part of the unary cost (n, k), ``D(x_i, μ_h)`` by default, that
        :meth:`HMRF.energy_terms <hmrf.HMRF.energy_terms>` reports apart from the rest."""
        return self.divergence(X, params.centers, data=data)

    def cluster_cost(self, params: EmissionParams, normalizer: str = "constant") -> np.ndarray:
        """Per-cluster term of the unary cost (k,): log-normaliser and prior; 0 by default."""
        return np.zeros(params.n_clusters)

    def unary(self, X: MatrixLike, params: EmissionParams, normalizer: str = "constant",
              data: Any = None) -> np.ndarray:
        """Per-point cost ``-log p(x_i | y_i = h, Θ)`` up to a constant, (n, k)."""
        self.check_normalizer(normalizer)
        cost = self.divergence(X, params.centers, data=data)
        cost += self.cluster_cost(params, normalizer)[None, :].astype(cost.dtype)
        return cost

    def linear_costs(self, params: EmissionParams, normalizer: str, dtype: DTypeLike) -> LinearCosts | None:
        """The unary costs of :meth:`unary` as a :class:`LinearCosts` in ``dtype``, or
        ``None`` when they do not have that form (then a pass computes :meth:`unary`
        block by block). ``None`` by default."""
        return None

    def summed_cost(self, params: EmissionParams, stats: ClusterStats,
                    normalizer: str = "constant") -> float | None:
        """``Σ_i u(x_i, θ_{y_i})``, the unary costs of :meth:`unary` summed over the
        points that ``stats`` (:meth:`statistics` under the labels ``y``) describe,
        from the statistics alone; ``None`` (the default) when the family cannot, and
        then a pass over the rows adds them up. A family whose costs are not affine in
        the data terms (:meth:`linear_costs` is ``None``) but quadratic in ``x`` gives
        it from the second moment (:class:`~hmrf.emissions.Mahalanobis`)."""
        return None

    def prior_cost(self, params: EmissionParams) -> float:
        """``-log p(Θ)`` of a prior under which :meth:`update` is the MAP step and that the
        unary costs do not already carry (the multinomial's Dirichlet pseudo-counts); soft
        EM adds it to its free energy (:mod:`hmrf.em.soft`). 0 by default."""
        return 0.0

    # --------------------------------------------------------------- parameters
    def second_moment(self, normalizer: str = "constant") -> str | None:
        """Which second moment :meth:`update` needs in its statistics (see
        :class:`~hmrf.emissions.stats.ClusterStats`): ``None`` (counts and sums only),
        ``"norm"``, ``"diagonal"`` or ``"full"``."""
        return None

    def statistics(self, X: MatrixLike, assignment: NDArray[np.intp], n_clusters: int,
                   normalizer: str = "constant", shift: NDArray[np.floating] | None = None) -> ClusterStats:
        """Additive statistics of the rows of ``X`` under ``assignment`` (labels (n,) or
        responsibilities (n, k)): what :meth:`update` needs, summed per cluster."""
        return ClusterStats.from_data(X, assignment, n_clusters, self.second_moment(normalizer), shift)

    @abstractmethod
    def update(self, stats: ClusterStats, params: EmissionParams | None = None,
               normalizer: str = "constant", context: MStepContext | None = None) -> EmissionParams:
        """The M-step: parameters minimising the summed unary cost, from cluster statistics;
        empty clusters keep their previous parameters."""

    def m_step(self, X: MatrixLike, assignment: NDArray[np.intp], params: EmissionParams | None = None,
               normalizer: str = "constant") -> EmissionParams:
        """:meth:`update` on the statistics of all of ``X`` under labels (n,) or
        responsibilities (n, k)."""
        self.check_normalizer(normalizer)
        k = self._n_clusters(assignment, params)
        shift = self.default_shift(X) if self.second_moment(normalizer) is not None else None
        stats = self.statistics(X, assignment, k, normalizer, shift)
        a = np.asarray(assignment)
        context = MStepContext(X=X, labels=a if a.ndim == 1 else None, n_clusters=k)
        return self.update(stats, params, normalizer, context)

    @staticmethod
    def default_shift(X: MatrixLike) -> NDArray[Any] | None:
        """The ``c`` of second moments: the global mean of dense data, ``None`` (0) for
        sparse data."""
        if sp.issparse(X):
            return None
        return np.asarray(X.mean(axis=0), dtype=np.float64).ravel()

    def init_params(self, X: MatrixLike, centers: NDArray[np.floating]) -> EmissionParams:
        """Parameters from initial centre vectors (projected into the domain)."""
        return EmissionParams(np.array(centers, dtype=np.float64))

    # ------------------------------------------------------------------ helpers
    def check_normalizer(self, normalizer: str) -> str:
        """Validate ``normalizer`` for this family (clear error if unsupported)."""
        _check_normalizer(normalizer)
        if normalizer == "closed_form" and not self.has_closed_form_normalizer:
            raise ValueError(
                f"the {self.name} family has no closed-form normaliser (Basu 2005, §4.4.1); "
                "use normalizer='constant'."
            )
        return normalizer

    @staticmethod
    def _n_clusters(assignment, params) -> int:
        if params is not None:
            return params.n_clusters
        a = np.asarray(assignment)
        return int(a.shape[1]) if a.ndim == 2 else int(a.max()) + 1

    @staticmethod
    def _means(stats: ClusterStats, params):
        """Cluster means from ``stats``, keeping previous centres for empty clusters."""
        fallback = params.centers if params is not None else None
        if fallback is None and np.any(stats.counts <= 0):
            fallback = stats.sums.sum(axis=0) / max(stats.counts.sum(), 1e-300)
        return stats.means(fallback), stats.counts

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"
