"""HMRF-KMeans (Basu 2005, ch. 4) and its special cases PCKMeans, KMeans and SP-KMeans."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import HMRFClusterMixin

if TYPE_CHECKING:
    from typing import Literal

    from numpy.typing import ArrayLike

    from .._typing import RandomLike
    from ..emissions.base import EmissionFamily
    from ..inference.base import InferenceEngine

__all__ = ["HMRFKMeans", "PCKMeans", "KMeans", "SphericalKMeans"]


class HMRFKMeans(HMRFClusterMixin):
    """Semi-supervised clustering with a Hidden Markov Random Field (HMRF-KMeans).

    Minimises ``J = Σ_i D(x_i, μ_{y_i}) + Σ_ML w w_ij [y_i != y_j] + Σ_CL w w_ij
    [y_i == y_j]`` (Basu 2005, eq. 4.10) by EM: an E-step by any inference engine and
    an M-step by the emission family.

    Parameters
    ----------
    n_clusters : int, default=8
    emission : str or EmissionFamily, default="auto"
        ``"sqeuclidean"``, ``"kl"``, ``"idiv"``, ``"itakura_saito"``, ``"cosine"``,
        ``"mahalanobis"`` or a family object (:mod:`hmrf.emissions`). ``"auto"``: cosine
        (the von Mises-Fisher model, §4.3.4) for sparse rows with no negative entry
        and no empty row (text, §3.5, §4.5), squared Euclidean otherwise
        (:func:`hmrf.emissions.data_emission`); the family used is ``emission_``.
    inference : str or InferenceEngine, default="auto"
        E-step engine: a name of :data:`hmrf.inference.ENGINES` or an engine instance.
        ``"auto"`` (:class:`~hmrf.inference.auto.AutoEngine`): per connected component,
        belief propagation then α-expansion moves, the lower energy kept, or α-expansion
        alone on a must-link-only component of at least 1,000 nodes (:doc:`/choosing`).
        ``"icm"`` is the thesis's engine (§4.4.4).
    w : float or "auto", default="auto"
        Global multiplier of the constraint weights (``np.inf``: all hard), the thesis's
        ``w`` (eq. 4.10). ``"auto"``: twice the mean emission cost of a point, above the
        cost of the centre, when all the data form one cluster; for squared Euclidean
        distance ``2 mean_i ||x_i - x̄||²``,
        the expected squared distance between two random points
        (:meth:`hmrf.HMRF.data_scale`). The resolved value is ``w_``.
    init : str or array of shape (k, d), default="pckmeans++"
        ``"pckmeans++"``: k-means++ over the data in which drawing a point of a must-link
        neighbourhood seeds the neighbourhood's centroid; ``"neighborhoods"`` (thesis
        §4.4.3), ``"pckmeans"`` (ICML 2004 §3.1, the k largest neighbourhoods),
        ``"k-means++"``, ``"buckshot"``, ``"random"`` or initial centres
        (:mod:`hmrf.initialization`).
    n_init : int or "auto", default="auto"
        Runs from different initialisations; the lowest objective wins. ``"auto"``: up to
        10 runs (30 on sparse rows, Basu 2005, §4.5.1), fewer as the work of a run grows,
        one for an array ``init``; seedings from the constraints and from the data alone
        in turn, until two runs seeded from the constraints reach the lowest objective
        (``n_runs_`` ran;
        :doc:`/choosing`).
    max_iter : int, default=100
    tol : float, default=1e-4
        Relative decrease of the objective below which EM stops.
    normalizer : {"constant", "closed_form"}, default="constant"
        ``"closed_form"``: keep the emission normaliser where it has a closed form
        (per-cluster variance, vMF concentration); ``"constant"``: drop it, as the thesis's
        HMRF-KMeans does.
    closure : bool, default=False
        Add the constraints implied by transitivity with unit weight, as the thesis's
        experiments do (§4.5.2).
    em : {"hard", "soft"}, default="hard"
        ``"hard"``: MAP labels in every E-step (HMRF-KMeans, :mod:`hmrf.em`). ``"soft"``:
        posteriors and the variational free energy (:mod:`hmrf.em.soft`) from an engine
        that gives them (``"auto"``: mean-field); then ``predict_proba`` and, with
        ``normalizer="closed_form"`` (which also learns mixing weights),
        ``score_samples``.

    Attributes
    ----------
    labels_, cluster_centers_, params_, objective_, history_, n_iter_, converged_,
    constraints_, em_result_, n_features_in_ : see :class:`HMRFClusterMixin`.

    References
    ----------
    Basu (2005), "Semi-supervised Clustering: Probabilistic Models, Algorithms and
    Experiments", ch. 4 (eq. 4.10, Fig. 4.3).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import HMRFKMeans
    >>> X = np.array([[0.0, 0.0], [0.2, 0.0], [5.0, 5.0], [5.2, 5.0], [2.5, 2.5]])
    >>> est = HMRFKMeans(n_clusters=2, random_state=0)
    >>> est.fit(X, must_link=[(0, 4)], cannot_link=[(1, 3)]).labels_.tolist()
    [0, 0, 1, 1, 0]
    """

    def __init__(self, n_clusters: int = 8, *, emission: str | EmissionFamily = "auto",
                 inference: str | InferenceEngine = "auto", w: float | str = "auto",
                 init: str | ArrayLike = "pckmeans++", n_init: int | str = "auto", max_iter: int = 100,
                 tol: float = 1e-4, normalizer: Literal["constant", "closed_form"] = "constant",
                 closure: bool = False, em: Literal["hard", "soft"] = "hard",
                 random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.emission = emission
        self.inference = inference
        self.w = w
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.normalizer = normalizer
        self.closure = closure
        self.em = em
        self.random_state = random_state


class PCKMeans(HMRFClusterMixin):
    """Pairwise Constrained KMeans (Basu, Bilenko & Mooney 2004, eq. 1).

    HMRF-KMeans with unit Potts penalties scaled by ``w``, squared Euclidean distance
    (the paper's) on points and cosine on text (``emission="auto"``), and the constraint
    sets augmented by their transitive closure (``closure=True``, ICML 2004 §3.1). The
    paper's algorithm is ``PCKMeans(w=1, emission="sqeuclidean", inference="icm",
    init="pckmeans", n_init=1)`` (§3.1 seeding, greedy assignment).

    Parameters
    ----------
    w : float or "auto", default="auto"
        Weight of a violated constraint against ``||x - μ||²`` (no ½: an implementation
        with ``½||x - μ||²`` and weight ``w`` has the optimum of ours with ``2w``).
    emission, inference, init, n_init, max_iter, tol, em, random_state :
        As :class:`HMRFKMeans`.
    closure : bool, default=True
        Augment the constraints by their transitive closure (ICML 2004, §3.1).
    """

    def __init__(self, n_clusters: int = 8, *, emission: str | EmissionFamily = "auto",
                 w: float | str = "auto", inference: str | InferenceEngine = "auto",
                 init: str | ArrayLike = "pckmeans++", n_init: int | str = "auto", closure: bool = True,
                 max_iter: int = 100, tol: float = 1e-4, em: Literal["hard", "soft"] = "hard",
                 random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.emission = emission
        self.w = w
        self.inference = inference
        self.init = init
        self.n_init = n_init
        self.closure = closure
        self.max_iter = max_iter
        self.tol = tol
        self.em = em
        self.random_state = random_state


class KMeans(HMRFClusterMixin):
    """KMeans as the HMRF with no constraints (Basu 2005, §2.3.1 and §3.3.1).

    Any emission family gives the corresponding Bregman (or spherical) KMeans.
    With ``init`` an array it reproduces scikit-learn's Lloyd iterations (label for label
    in float64; in float32 scikit-learn sums its centres in float32, :doc:`/scale`).

    Parameters
    ----------
    n_clusters : int, default=8
    emission : str or EmissionFamily, default="sqeuclidean"
        As :class:`HMRFKMeans` (``"auto"`` included), with squared Euclidean distance as
        the default.
    init : str or array of shape (k, d), default="k-means++"
        As :class:`HMRFKMeans` (without constraints the constraint-based seedings reduce
        to their data-only form).
    max_iter : int, default=300
        scikit-learn's.
    n_init, tol, normalizer, random_state :
        As :class:`HMRFKMeans`.
    em : {"hard", "soft"}, default="hard"
        ``"soft"`` with ``normalizer="closed_form"`` is the EM of a mixture of isotropic
        Gaussians (or vMF), mixing weights included (the "spherical" model of
        scikit-learn's ``GaussianMixture``).
    """

    def __init__(self, n_clusters: int = 8, *, emission: str | EmissionFamily = "sqeuclidean",
                 init: str | ArrayLike = "k-means++", n_init: int | str = "auto", max_iter: int = 300,
                 tol: float = 1e-4, normalizer: Literal["constant", "closed_form"] = "constant",
                 em: Literal["hard", "soft"] = "hard", random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.emission = emission
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.normalizer = normalizer
        self.em = em
        self.random_state = random_state

    def _supervision(self, n, y, must_link, cannot_link, constraints):
        if must_link is not None or cannot_link is not None or constraints is not None:
            raise ValueError("KMeans takes no constraints; use HMRFKMeans or PCKMeans.")
        return super()._supervision(n, None, None, None, None)


class SphericalKMeans(HMRFClusterMixin):
    """SP-KMeans: KMeans with cosine similarity on the unit sphere (Basu 2005, §2.3.2).

    Rows are L2-normalised and centroids are normalised cluster sums (eq. 4.13). The
    cost is the cosine distance ``1 - x^T μ``; constraints, when given, enter as in
    HMRF-KMeans, with its default E-step engine (``"auto"``).

    Parameters
    ----------
    w : float or "auto", default="auto"
        As :class:`HMRFKMeans`: ``"auto"`` is ``2 mean_i (1 - x_iᵀ μ̂)`` with ``μ̂`` the
        normalised mean direction of the data.
    init, n_init, max_iter, tol, random_state :
        As :class:`HMRFKMeans` (without constraints ``init`` is k-means++).
    normalizer : {"constant", "closed_form"}, default="constant"
        ``"closed_form"`` fits a von Mises-Fisher concentration per cluster.
    em : {"hard", "soft"}, default="hard"
        ``"soft"``: a mixture of von Mises-Fisher distributions (Banerjee et al. 2005,
        soft-moVMF with ``normalizer="closed_form"``).
    """

    _fixed = dict(HMRFClusterMixin._fixed, emission="cosine", inference="auto")

    def __init__(self, n_clusters: int = 8, *, w: float | str = "auto", init: str | ArrayLike = "pckmeans++",
                 n_init: int | str = "auto", max_iter: int = 100, tol: float = 1e-4,
                 normalizer: Literal["constant", "closed_form"] = "constant",
                 em: Literal["hard", "soft"] = "hard", random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.w = w
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.normalizer = normalizer
        self.em = em
        self.random_state = random_state
