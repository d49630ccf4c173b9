"""MPCKMeans and M-KMeans: metric learning inside the HMRF (Basu, Bilenko & Mooney 2004).

Both learn a Mahalanobis metric in the M-step of the EM loop
(:class:`~hmrf.emissions.Mahalanobis`). MPCKMeans adds the search-based component:
constraint-based seeding and distance-scaled constraint penalties in every E-step
(:class:`~hmrf.potentials.DistanceScaledPotts`). M-KMeans is the paper's ablation
without it (§4.2).
"""

from __future__ import annotations

import copy
from numbers import Real
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .._validation import Interval, Options
from ..constraints import MUST_LINK
from ..emissions import EmissionFamily, VonMisesFisher, data_emission
from ..emissions.mahalanobis import Mahalanobis
from ..initialization import initial_centers
from ..model import HMRF
from ..potentials import DistanceScaledPotts
from .base import HMRFClusterMixin, moved_parameters

if TYPE_CHECKING:
    from typing import Literal

    from numpy.typing import ArrayLike
    from typing_extensions import Self

    from .._typing import MatrixLike, PairsLike, RandomLike
    from ..constraints import Constraints
    from ..inference.base import InferenceEngine

__all__ = ["MPCKMeans", "MKMeans"]

PENALTIES = ("distance", "mirrored", "constant")
ALPHA_MAX = ("auto", "must_link", "data")


#: ``emission="cosine"``: ``A = I`` on the unit sphere (rows and centres L2-normalised)
COSINE = "cosine"

#: The family names the metric learners' ``emission`` takes, as the metric each stands for
#: (the shrinkage then follows the estimator's rule, ``shrinkage_``)
METRIC_OF = {"mahalanobis": "diagonal", "sqeuclidean": "identity", "euclidean": "identity", COSINE: COSINE}

#: The arguments of :class:`~hmrf.emissions.Mahalanobis` that ``emission=`` takes
MOVED = ("metric", "per_cluster", "shrinkage")


def _moved_emission(owner, moved):
    """The error naming the ``emission`` that the metric arguments ``moved`` stand for."""
    metric = moved.get("metric", "auto")
    rest = {k: v for k, v in moved.items() if k != "metric" and v not in ("auto", False)}
    named = {"auto": "auto", COSINE: COSINE, "diagonal": "mahalanobis", "identity": "sqeuclidean"}
    if not rest and metric in named:
        new = f"emission={named[metric]!r}"
    else:
        args = [repr(metric if metric in ("full", "identity") else "diagonal")]
        new = "emission=Mahalanobis({})".format(", ".join(args + [f"{k}={v!r}" for k, v in rest.items()]))
    return moved_parameters(owner, moved, new)


#: The shrinkage of M-KMeans' named metrics: the weight ``λ`` of the range target in its metric
#: update, and the floor of ``A⁻¹`` in units of the target (so ``a_d t_d <= 1 / λ``)
MKMEANS_AUTO_SHRINKAGE = 0.9


def auto_shrinkage(n_samples: int, n_features: int) -> float:
    """``λ`` of MPCKMeans' named metrics: ``d / (n + d)``, a prior worth ``d`` points.

    The prior ``-log Pr(Θ)`` (Basu 2005, eq. 4.9) of the Mahalanobis emission is worth
    ``λ / (1 - λ)`` pseudo-points per point, ``d`` in all, as many as a diagonal metric
    has parameters: the regularisation Basu, Bilenko & Mooney (2004, §5) call for where
    ``A`` would be singular, vanishing as ``n`` grows.

    Examples
    --------
    >>> auto_shrinkage(150, 4)  # iris
    0.025974025974025976
    """
    return n_features / (n_samples + n_features)


class _MetricLearner(HMRFClusterMixin):
    """Shared parts: the emission family and the ``metric_`` attribute."""

    _parameter_constraints = {
        "emission": [Options("auto", *METRIC_OF), Mahalanobis, VonMisesFisher],
        "alpha_min": [Interval(Real, 0, None, closed="left")],
        "alpha_max": [Options(*ALPHA_MAX), Interval(Real, 0, None, closed="left")],
        "penalty": [Options(*PENALTIES)],
    }

    _moved = MOVED

    @classmethod
    def _moved_error(cls, given):
        return _moved_emission(cls.__name__, given)

    def _resolved_metric(self, X=None, n_constraints=None) -> str:
        """The metric of ``emission``, ``"auto"`` resolved as the class docstring says
        (without ``X``: what the last fit resolved it to)."""
        emission = self.emission
        if isinstance(emission, EmissionFamily):
            return getattr(emission, "metric", COSINE)
        if emission != "auto":
            return METRIC_OF[emission]
        if X is None:
            return getattr(self, "metric_kind_", "diagonal")
        if data_emission(X) == "cosine":
            return COSINE
        d = getattr(self, "n_features_in_", None) or X.shape[1]
        if sp.issparse(X) or (n_constraints is not None and n_constraints < d):
            return "identity"
        return "diagonal"

    def _spec_emission(self, X=None, metric_potential=None, n_constraints=None):
        metric = self._resolved_metric(X, n_constraints)
        if X is not None:
            self._spec_emission_metric = metric
            self._spec_emission_shrinkage = self._resolved_shrinkage(X)
        if isinstance(self.emission, EmissionFamily):  # as given, with the metric update's terms
            family = copy.copy(self.emission)
            if metric_potential is not None and isinstance(family, Mahalanobis):
                family.metric_potential = metric_potential
            return family
        if metric == COSINE:
            # κ = 2: the cost 2 (1 - xᵀμ) is ||x - μ||² for unit x and μ, so the
            # emission and the distance-scaled penalties (squared distances between
            # the unit rows) keep eq. 4's common units, as A = I does off the sphere
            return VonMisesFisher(kappa=2.0)
        lam = self._resolved_shrinkage(X)
        return Mahalanobis(metric, shrinkage=lam, eig_floor=lam, target="range",
                           metric_potential=metric_potential)

    def _resolved_shrinkage(self, X=None) -> float:
        """The shrinkage of ``emission``: a Mahalanobis family's own, else the
        estimator's rule from the shape of ``X`` (without ``X``: the last fit's; before
        any fit ``1 / 2``, which only names the family)."""
        if isinstance(self.emission, Mahalanobis):
            return self.emission.shrinkage
        if X is None:
            return getattr(self, "shrinkage_", 0.5)
        return self._auto_shrinkage(X.shape[0], getattr(self, "n_features_in_", None) or X.shape[1])

    #: ``λ`` of a named metric from ``(n, d)``
    _auto_shrinkage = staticmethod(auto_shrinkage)

    def _distance_w(self) -> float:
        """``w`` of the distance-scaled penalties: ``"auto"`` is 1 (class docstring)."""
        return 1.0 if isinstance(self.w, str) else self.w

    def _distance_potential(self, constraints, w=None):
        mirrored = self._setting("penalty") == "mirrored"
        alpha_max = self.alpha_max
        if alpha_max == "auto":  # Bilenko et al.'s f_C uses the diameter (class docstring)
            alpha_max = "data" if mirrored else "must_link"
        w = self._distance_w() if w is None else w
        return DistanceScaledPotts(constraints, w, alpha_min=self.alpha_min,
                                   alpha_max=alpha_max, mirrored=mirrored)

    def _set_fitted(self, best, model, constraints, labels):
        super()._set_fitted(best, model, constraints, labels)
        self.metric_kind_ = self._spec_emission_metric
        self.shrinkage_ = self._spec_emission_shrinkage
        per_cluster = getattr(self.emission, "per_cluster", False)
        m = getattr(self.params_, "metric", None)
        if m is None:  # the cosine model: A = I on the unit sphere
            m = np.ones((self.n_clusters if per_cluster else 1, self.n_features_in_))
        self.metric_ = m[0] if m.shape[0] == 1 and not per_cluster else m
        return self


class MPCKMeans(_MetricLearner):
    """Metric Pairwise Constrained KMeans (Basu, Bilenko & Mooney 2004, eq. 4, Fig. 1).

    Minimises, by EM with any E-step engine,

        J = Σ_i [||x_i - μ_{y_i}||²_{A_{y_i}} - log det A_{y_i}]
            + Σ_{ML} w w_ij f_M(i, j) [y_i != y_j] + Σ_{CL} w w_ij f_C(i, j) [y_i = y_j]

    (plus the shrinkage prior of :class:`~hmrf.emissions.Mahalanobis`), with the ICML
    seeding (``init="pckmeans"``, §3.1; the default draws the neighbourhoods by
    k-means++), the distance-scaled penalties
    ``f_M = max(α_min, α_max - ||x_i - x_j||²_A)`` and
    ``f_C = min(α_min + ||x_i - x_j||²_A, α_max)``, and the metric update of the
    paper's appendix in every M-step.

    Parameters
    ----------
    n_clusters : int, default=8
    emission : {"auto", "mahalanobis", "sqeuclidean", "cosine"} or EmissionFamily, default="auto"
        The metric. A :class:`~hmrf.emissions.Mahalanobis` family is used as given. A
        name stands for a metric with this estimator's shrinkage: ``"mahalanobis"`` a
        learned diagonal ``A``, ``"sqeuclidean"`` ``A = I``, ``"cosine"`` ``A = I`` on the
        unit sphere (:class:`~hmrf.emissions.VonMisesFisher` with ``κ = 2``, whose cost
        ``2 (1 - xᵀμ̂) = ||x - μ̂||²`` keeps the units of the penalties). ``"auto"``:
        ``"cosine"`` for sparse non-negative rows none of which is empty (text),
        ``"sqeuclidean"`` for other
        sparse ``X`` or fewer constraints (after the closure) than features (Basu,
        Bilenko & Mooney 2004, §1, §5), ``"mahalanobis"`` otherwise. The shrinkage of a
        name is ``auto_shrinkage`` toward the squared feature ranges, with ``A⁻¹``
        floored at ``λ`` (:doc:`/metric_learning`).
    w : float or "auto", default="auto"
        Global constraint weight (``np.inf``: hard). ``"auto"``: 1 for the distance-scaled
        penalties (squared distances under the metric, in the emission's units); for
        ``penalty="constant"`` the weight of :class:`~hmrf.HMRFKMeans`.
    alpha_min : float, default=0.0
    alpha_max : {"auto", "must_link", "data"} or float, default="auto"
        ``"must_link"``: the largest squared must-link distance under the current metric
        (§4.1); ``"data"``: the squared diameter of ``X`` under it
        (:class:`~hmrf.potentials.DistanceScaledPotts`). ``"auto"``: ``"must_link"`` for
        ``penalty="distance"``, ``"data"`` for ``"mirrored"`` (Bilenko et al.'s
        ``f_C = ||x' - x''||²_A - ||x_i - x_j||²_A``, ``(x', x'')`` the farthest pair).
    penalty : {"distance", "mirrored", "constant"}, default="distance"
        ``"distance"``: eq. 4 above. ``"mirrored"``: ``f_M = min(α_min + d², α_max)``,
        ``f_C = max(α_min, α_max - d²)``, the MPCK-Means of Bilenko, Basu & Mooney (ICML
        2004). ``"constant"``: ``f ≡ 1`` (plain Potts, as PCKMeans).
    closure : bool, default=True
        Augment the constraints by their transitive closure (§3.1).
    init, n_init, inference, max_iter, tol, random_state :
        As :class:`~hmrf.HMRFKMeans`; the paper's seeding (§3.1) is ``init="pckmeans"``,
        its E-step greedy (``inference="icm"``, Fig. 1, step 2a), which cannot move a
        must-link neighbourhood as a whole (:doc:`/metric_learning`).

    Attributes
    ----------
    metric_ : ndarray
        Learned metric: (d,) or (d, d) shared; (k, d) or (k, d, d) per cluster (ones
        for ``"identity"`` and ``"cosine"``).
    metric_kind_, shrinkage_ : str, float
        The metric (``"diagonal"``, ``"full"``, ``"identity"``, ``"cosine"``) and ``λ``
        the fit used; ``emission_`` is the data's family (``"sqeuclidean"`` or
        ``"cosine"``), under which ``metric_kind_`` is learned.
    labels_, cluster_centers_, params_, objective_, history_, n_iter_, converged_,
    constraints_, em_result_, n_features_in_ : see :class:`HMRFClusterMixin`.
        ``objective_`` is ``J`` above.

    Notes
    -----
    The metric step applies the paper's update only as far as it lowers ``J``
    (:meth:`Mahalanobis.update`), so ``history_`` never increases.

    References
    ----------
    Basu, Bilenko & Mooney (2004), "Comparing and unifying search-based and
    similarity-based approaches to semi-supervised clustering", ICML workshop. Basu
    (2005), §4.4.4 and §7.1. Bilenko, Basu & Mooney (2004), "Integrating constraints
    and metric learning in semi-supervised clustering", ICML (``penalty="mirrored"``).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import MPCKMeans
    >>> X = np.array([[0.0, 0.0], [0.1, 5.0], [3.0, 0.2], [3.1, 5.1]])
    >>> est = MPCKMeans(n_clusters=2, random_state=0)
    >>> est.fit(X, must_link=[(0, 1), (2, 3)], cannot_link=[(1, 3)]).labels_.tolist()
    [0, 0, 1, 1]
    """

    def __init__(self, n_clusters: int = 8, *, emission: str | EmissionFamily = "auto",
                 w: float | str = "auto", alpha_min: float = 0.0, alpha_max: str = "auto",
                 penalty: Literal["distance", "mirrored", "constant"] = "distance", closure: bool = True,
                 init: str | ArrayLike = "pckmeans++", n_init: int | str = "auto",
                 inference: str | InferenceEngine = "auto", max_iter: int = 100, tol: float = 1e-4,
                 random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.emission = emission
        self.w = w
        self.alpha_min = alpha_min
        self.alpha_max = alpha_max
        self.penalty = penalty
        self.closure = closure
        self.init = init
        self.n_init = n_init
        self.inference = inference
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _model(self, X, constraints, y, potentials=None):
        family = self._spec_emission(X, n_constraints=len(constraints))
        extra = [] if potentials is None else (
            list(potentials) if isinstance(potentials, (list, tuple)) else [potentials])
        if self.penalty == "constant":
            return HMRF(X, self.n_clusters, emission=family, constraints=constraints, w=self.w,
                        potentials=extra or None, validated=True)
        pots = ([self._distance_potential(constraints)] if len(constraints) else []) + extra
        return HMRF(X, self.n_clusters, emission=family, potentials=pots or None, w=self._distance_w(),
                    validated=True)


def satisfied_fraction(constraints, labels) -> float:
    """Fraction of ``constraints`` that ``labels`` satisfy (1 when there are none)."""
    if len(constraints) == 0:
        return 1.0
    p = constraints.pairs
    points = np.unique(p)
    ends = np.asarray(labels[points])[np.searchsorted(points, p)]  # Dask labels: only these are read
    same = ends[:, 0] == ends[:, 1]
    return float(np.mean(np.where(constraints.kind == MUST_LINK, same, ~same)))


class MKMeans(_MetricLearner):
    """M-KMeans: KMeans with the metric learning of MPCKMeans (Basu et al. 2004, §4.2).

    The initialisation and the assignment (nearest centre under the learned metric)
    ignore the constraints, which enter only the metric update through the
    violated-pair terms of MPCKMeans. With ``emission="auto"`` and a learned metric, the
    fit is repeated with ``A = I`` and the learned metric is kept only if it satisfies
    more constraints by more than one standard error, ``sqrt(p (1 - p) / m)`` (``p`` the
    identity fit's fraction, ``m`` the constraints; the paper's "dip", §4.2).

    Parameters
    ----------
    n_clusters : int, default=8
    emission : {"auto", "mahalanobis", "sqeuclidean", "cosine"} or EmissionFamily, default="auto"
        As :class:`MPCKMeans`, but the shrinkage of a name is a fixed ``λ = 0.9`` toward
        the squared feature ranges, ``A⁻¹`` floored at ``λ``: nothing but this prior
        holds the metric that the violated-pair terms update (:doc:`/metric_learning`).
    w : float or "auto", default="auto"
        Weight of the constraint terms in the metric update. ``"auto"``:
        ``min(1, n / m)`` for ``m`` constraints: the constraints weigh at most as much as
        the ``n`` points whose dispersion the update also sums.
    penalty : {"mirrored", "distance"}, default="mirrored"
        The violated-pair terms of the metric update. ``"mirrored"``: Bilenko, Basu &
        Mooney's (ICML 2004), ``A⁻¹ += Σ_{M*} w (x_i - x_j)(x_i - x_j)ᵀ -
        Σ_{C*} w (x_i - x_j)(x_i - x_j)ᵀ`` (contracts violated must-links, stretches
        violated cannot-links). ``"distance"``: the derivative of eq. 4's penalties, the
        workshop paper's update (Fig. 1, step 2c), with the opposite signs.
    alpha_min, closure :
        As :class:`MPCKMeans`.
    alpha_max : {"must_link", "data", "auto"} or float, default="must_link"
        As :class:`MPCKMeans`, whose ``"auto"`` would give ``"data"`` here (mirrored
        penalties). ``alpha_*`` act only in the metric update.
    init : str or array of shape (k, d), default="k-means++"
        Any method of :func:`~hmrf.initialization.initial_centers`, applied without the
        constraints (the constraint-based ones reduce to their data-only form).
    n_init, max_iter, tol, random_state :
        As :class:`~hmrf.HMRFKMeans`.

    Attributes
    ----------
    metric_, metric_kind_, shrinkage_, labels_, cluster_centers_, params_, history_, n_iter_ :
        As MPCKMeans.
    objective_ : float
        ``Σ_i ||x_i - μ_{y_i}||²_A - log det A`` (eq. 2, plus the shrinkage prior); the
        metric step also weighs the constraint terms, so with constraints ``history_``
        can rise.
    satisfied_ : dict
        The fractions of the constraints satisfied with the learned (``"diagonal"``) and
        the identity metric, after a fit with ``emission="auto"`` that learned one.

    References
    ----------
    Basu, Bilenko & Mooney (2004), §2.3, §3.3, §4.2.
    """

    _parameter_constraints = dict(_MetricLearner._parameter_constraints,
                                  penalty=[Options("mirrored", "distance")])

    def __init__(self, n_clusters: int = 8, *, emission: str | EmissionFamily = "auto",
                 w: float | str = "auto", alpha_min: float = 0.0, alpha_max: float | str = "must_link",
                 penalty: Literal["mirrored", "distance"] = "mirrored", closure: bool = True,
                 init: str | ArrayLike = "k-means++", n_init: int | str = "auto", max_iter: int = 100,
                 tol: float = 1e-4, random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.emission = emission
        self.w = w
        self.alpha_min = alpha_min
        self.alpha_max = alpha_max
        self.penalty = penalty
        self.closure = closure
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    _auto_shrinkage = staticmethod(lambda n_samples, n_features: MKMEANS_AUTO_SHRINKAGE)
    _moved = (*MOVED, "inference")

    @classmethod
    def _moved_error(cls, given):
        if "inference" in given:
            return TypeError("MKMeans takes no inference engine: its E-steps have no pairwise terms, "
                             "so each point takes its nearest centre.")
        return _moved_emission(cls.__name__, given)

    def _metric_w(self, n_samples, n_constraints) -> float:
        """``w`` of the metric update's constraint terms (class docstring)."""
        if not isinstance(self.w, str):
            return self.w
        return min(1.0, n_samples / max(n_constraints, 1))

    def _model(self, X, constraints, y, potentials=None):
        w = self._metric_w(X.shape[0], len(constraints))
        pot = self._distance_potential(constraints, w) if len(constraints) else None
        family = self._spec_emission(X, metric_potential=pot, n_constraints=len(constraints))
        return HMRF(X, self.n_clusters, emission=family, potentials=potentials, w=w, validated=True)

    def _initial_params(self, model, constraints, y, rng):
        centers = initial_centers(model.X, model.n_clusters, model.emission, None, self.init, rng)
        return model.emission.init_params(model.X, np.asarray(centers))

    def fit(self, X: MatrixLike, y: ArrayLike | None = None, *, must_link: PairsLike | None = None,
            cannot_link: PairsLike | None = None, constraints: Constraints | None = None) -> Self:
        """Cluster ``X`` and learn the metric (arguments as ``HMRFKMeans.fit``, without
        ``potentials``: M-KMeans' assignments have no pairwise factors; the identity-metric
        check of the class docstring)."""
        super().fit(X, y, must_link=must_link, cannot_link=cannot_link, constraints=constraints)
        if not isinstance(self.emission, str) or self.emission != "auto" or self.metric_kind_ != "diagonal":
            return self
        from sklearn.base import clone

        plain = clone(self).set_params(emission="sqeuclidean").fit(
            X, y, must_link=must_link, cannot_link=cannot_link, constraints=constraints)
        learned, euclidean = (satisfied_fraction(self.constraints_, e.labels_) for e in (self, plain))
        margin = np.sqrt(euclidean * (1.0 - euclidean) / len(self.constraints_))
        if learned <= euclidean + margin:
            self.__dict__.update({k: v for k, v in vars(plain).items() if k.endswith("_")})
            self.metric_kind_ = "identity"
        self.satisfied_ = {"diagonal": learned, "identity": euclidean}
        return self
