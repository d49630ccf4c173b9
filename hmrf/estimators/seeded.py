"""Seeded-KMeans and Constrained-KMeans: KMeans with labelled seeds (Basu 2005, ch. 3)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from .._params import Options
from .._validation import check_partial_labels
from ..constraints import Constraints
from ..initialization import seeded_centers
from ..model import HMRF, block_unary
from .base import HMRFClusterMixin

if TYPE_CHECKING:
    from typing import Literal

    from .._typing import RandomLike
    from ..emissions.base import EmissionFamily

__all__ = ["SeededKMeans", "ConstrainedKMeans"]


def _seed_clusters(y, n, k):
    """Map seed labels to cluster indices 0..c-1 (sorted classes); -1 stays -1."""
    if y is None:
        return np.full(n, -1, dtype=np.int64), np.empty(0, dtype=np.int64)
    lab = check_partial_labels(y, n)
    classes = np.unique(lab[lab >= 0])
    if classes.size > k:
        raise ValueError(
            f"the seeds contain {classes.size} classes but n_clusters={k}; every seed class "
            "needs its own cluster."
        )
    out = np.full(n, -1, dtype=np.int64)
    mask = lab >= 0
    out[mask] = np.searchsorted(classes, lab[mask])
    return out, classes


class SeededKMeans(HMRFClusterMixin):
    """Seeded-KMeans (Basu 2005, Fig. 3.1): seeds initialise the centroids only.

    ``fit(X, y)`` with ``y[i] = -1`` for unlabelled points. Cluster ``h`` starts at the
    mean of the seeds of the ``h``-th smallest seed class (``seed_classes_[h]``);
    clusters without seeds (incomplete seeding, §3.5.4) start as ``init`` says. After
    initialisation the seeds may change cluster, which makes the method robust to noisy
    seeds. The objective is the KMeans objective ``J_kmeans`` (eq. 3.3) of the emission.
    The thesis's algorithm is ``SeededKMeans(emission="sqeuclidean", init="perturbed",
    n_init=1)`` on points and the same with ``emission="cosine"`` on text (§3.5).

    Parameters
    ----------
    n_clusters : int, default=8
    emission : str or EmissionFamily, default="auto"
        ``"auto"``: cosine for sparse rows with no negative entry (text), the SP-KMeans
        variant the thesis runs on its high-dimensional sets (§3.5), and squared
        Euclidean otherwise (:func:`hmrf.emissions.data_emission`); ``emission_`` is the
        family used.
    init : {"k-means++", "perturbed"}, default="k-means++"
        Start of the clusters without seeds: ``"k-means++"``, greedy k-means++ given the
        seed means (Arthur & Vassilvitskii 2007), so that no empty-handed cluster starts
        where a seeded one is; ``"perturbed"``, random perturbations of the global
        centroid (the thesis, §3.5.4, after Dhillon et al. 2001).
    n_init : int or "auto", default="auto"
        Runs; among the runs that no other run beats in both ``J_kmeans`` and the number
        of seeds kept (the Pareto front of the two: a run that fits the data worse and
        keeps fewer seeds never wins), the lowest ``J_kmeans + Σ_i min(w, Δ_i)`` wins, the sum over the seeds
        outside the cluster matched to their class, ``Δ_i`` what moving seed ``i``
        there costs at the run's centres, ``w`` the weight of ``w="auto"``
        (:meth:`hmrf.HMRF.auto_w`: a seed label costs what a violated constraint does),
        and the clusters matched to the seed classes by the assignment of least total
        (Kuhn's Hungarian method). A seed just across a border costs its move. With an
        integer, every run starts the seeded clusters at their seed means and the runs
        differ in the clusters without seeds; the thesis makes one run (``n_init=1``).
        ``"auto"``: the runs of the fit without seeds (as :class:`~hmrf.HMRFKMeans`: up
        to 10 where a run is cheap, 30 on sparse rows, ``init`` on the data alone, on
        the cosine model every other one after Lloyd's iterations on the unit rows),
        from the same starts, and before them half as many runs from the seed means
        (one when every cluster has seeds: the runs would repeat), the first of them
        the run of ``n_init=1``. The seeds add starts
        and take none away, so the criterion of the fit with seeds is never above that
        of the fit without them. Seeded-KMeans converges to a local minimum of
        ``J_kmeans`` (§3.4) and the seeds are there to start it in a good region
        (§3.1); a seed class of a few atypical points gives a poor centroid (§3.3.2:
        its deviation falls exponentially with the number of seeds only) and can lead
        to a worse minimum than a start without seeds, which the criterion then
        rejects unless the seeds' start keeps enough more of the seeds in their
        clusters to pay for its higher ``J_kmeans`` (the seeds are labels the user
        gave, §3.1; the penalty is the HMRF's for a violated label, each seed at the
        cheaper of moving and paying it). The sum prices a labelling with its cheap
        seeds moved, not the labelling returned; the Pareto front keeps it from
        preferring a minimum that is worse than another run's in ``J_kmeans`` and
        in the seeds kept.
    max_iter : int, default=100
    tol : float, default=1e-4
    normalizer : {"constant", "closed_form"}, default="constant"
    em : {"hard", "soft"}, default="hard"
        ``"soft"``: EM with posteriors (:mod:`hmrf.em.soft`); for
        :class:`ConstrainedKMeans` the seeds' posteriors stay on their class, which is the
        semi-supervised EM of the clustering slides (Nigam et al. 2000) with this
        emission family.
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    seed_classes_ : ndarray
        The seed label of each seeded cluster.
    """

    _clamp = False
    _parameter_constraints = {"init": [Options("k-means++", "perturbed")]}

    def __init__(self, n_clusters: int = 8, *, emission: str | EmissionFamily = "auto",
                 init: Literal["k-means++", "perturbed"] = "k-means++", n_init: int | str = "auto",
                 max_iter: int = 100, tol: float = 1e-4,
                 normalizer: Literal["constant", "closed_form"] = "constant",
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
            raise ValueError(f"{type(self).__name__} takes labelled seeds y, not pairwise constraints.")
        return Constraints.empty(n)

    def _model(self, X, constraints, y, potentials=None):
        seeds, self.seed_classes_ = _seed_clusters(y, X.shape[0], self.n_clusters)
        return HMRF(X, self.n_clusters, emission=self._spec_emission(), potentials=potentials,
                    normalizer=self._spec_normalizer(), clamped=seeds if self._clamp else None,
                    validated=True)

    def _free_seeds(self, result, y):
        """``(seed clusters (n,), seed classes, positions of the seeds)`` for a run's
        ranking; no positions when the seeds are clamped (they cannot leave their
        clusters) or there are none."""
        seeds, classes = _seed_clusters(y, len(result.labels), self.n_clusters)
        seeded = np.empty(0, dtype=np.int64) if self._clamp else np.flatnonzero(seeds >= 0)
        return seeds, classes, seeded

    def _supervision_cost(self, model, result, y) -> float:
        """``Σ_seeds min(w, Δ_i)`` over the seeds outside the cluster matched to their
        class: ``Δ_i = u(x_i, μ_m) - u(x_i, μ_{y_i})`` is what moving seed ``i`` into the
        matched cluster ``m`` costs at the run's parameters, ``w`` the model's
        ``auto_w()``, the weight of a seed label. It is the HMRF objective with seed-label
        potentials of weight ``w`` (Basu 2005, eq. 3.4 with the seeds as labelled points),
        each seed at the cheaper of moving and paying ``w``, so that a run that leaves a
        seed just across a border pays what moving it costs, not ``w``. The clusters are
        matched to the seed classes by the assignment of least total cost (SciPy's
        ``linear_sum_assignment`` on the table of seed classes against clusters); only
        the seeds' rows are read. 0 when the seeds are clamped (Constrained-KMeans)."""
        from scipy.optimize import linear_sum_assignment

        seeds, classes, seeded = self._free_seeds(result, y)
        if seeded.size == 0:
            return 0.0
        data = model.data_terms
        U = np.asarray(block_unary(model.emission, model.X[seeded], result.params, model.normalizer,
                                   None if data is None else data[seeded]), dtype=np.float64)
        labels = np.asarray(result.labels[seeded], dtype=np.int64)
        move = np.clip(U - U[np.arange(seeded.size), labels][:, None], 0.0, model.auto_w())
        table = np.zeros((classes.size, self.n_clusters))
        np.add.at(table, seeds[seeded], move)
        rows, cols = linear_sum_assignment(table)
        return float(table[rows, cols].sum())

    def _supervision_missed(self, model, result, y) -> int:
        """The seeds outside the cluster matched to their class, under the matching of
        classes to clusters that keeps the most seeds (Kuhn's Hungarian method on the
        table of seed counts, SciPy's ``linear_sum_assignment``); 0 when the seeds are
        clamped. A run that keeps fewer seeds at a higher ``J_kmeans`` than another
        never wins, whatever its ``J_kmeans + Σ min(w, Δ_i)``."""
        from scipy.optimize import linear_sum_assignment

        seeds, classes, seeded = self._free_seeds(result, y)
        if seeded.size == 0:
            return 0
        table = np.zeros((classes.size, self.n_clusters), dtype=np.int64)
        np.add.at(table, (seeds[seeded], np.asarray(result.labels[seeded], dtype=np.int64)), 1)
        rows, cols = linear_sum_assignment(table, maximize=True)
        return int(seeded.size - table[rows, cols].sum())

    def _schedule(self, n_init, kinds, rng, auto, y):
        """With ``n_init="auto"``: the runs of the fit without seeds, the same starts on
        the fit's generator, and with seeds, before them, ``n_init // 2`` runs from the
        seed means on a copy of the generator as the fit received it (the first is
        then the run of ``n_init=1``, the thesis's), so that the seeds add starts to
        the search and take none away. Otherwise, and for Constrained-KMeans (whose
        model clamps the seeds, so no run is the fit without them), the runs of the
        base class."""
        if not auto or self._clamp:
            return super()._schedule(n_init, kinds, rng, auto, y)
        unseeded = [1, 2] if 2 in kinds else [1]
        runs = [(unseeded[run % len(unseeded)], rng) for run in range(n_init)]
        if not self.seed_classes_.size:
            return runs
        return [(0, copy.deepcopy(rng))] * max(1, n_init // 2) + runs

    def _data_alone(self, model):
        # the start without seeds is EM on the same model (no pairwise potentials): the
        # second kind of start of n_init="auto" whenever there are seeds
        return model if self.seed_classes_.size else None

    def _initial_params(self, model, constraints, y, rng):
        seeds, _ = _seed_clusters(y, model.n_samples, model.n_clusters)
        fill = "k-means++" if self.init == "k-means++" else "perturbed"
        centers = seeded_centers(model.X, seeds, model.n_clusters, rng, fill=fill, family=model.emission)
        return model.emission.init_params(model.X, centers)


class ConstrainedKMeans(SeededKMeans):
    """Constrained-KMeans (Basu 2005, Fig. 3.2): seeds initialise and stay fixed.

    As :class:`SeededKMeans`, but every seed keeps its cluster in all E-steps (its
    other labels get infinite cost). Appropriate for noise-free seeds.
    """

    _clamp = True
