"""Seeded-KMeans and Constrained-KMeans: KMeans with labelled seeds (Basu 2005, ch. 3)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from .._validation import Options, check_partial_labels
from ..constraints import Constraints
from ..em import rise_tolerance
from ..initialization import seeded_centers
from ..model import HMRF, block_unary
from .base import HMRFClusterMixin, Series, Start

if TYPE_CHECKING:
    from typing import Literal

    from .._typing import RandomLike
    from ..em import EMResult
    from ..emissions.base import EmissionFamily

__all__ = ["SeededKMeans", "ConstrainedKMeans", "SeedsKept"]


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
    """Seeded-KMeans (Basu 2005, Fig. 3.1): seeds initialise the centroids and stay free.

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
        As :class:`~hmrf.HMRFKMeans` (cosine on text: the thesis's SP-KMeans variant, §3.5).
    init : {"k-means++", "perturbed"}, default="k-means++"
        Start of the clusters without seeds: greedy k-means++ given the seed means
        (Arthur & Vassilvitskii 2007), or random perturbations of the global centroid
        (the thesis, §3.5.4, after Dhillon et al. 2001).
    n_init : int or "auto", default="auto"
        With an integer, every run starts the seeded clusters at their seed means and
        the runs differ in the others. ``"auto"``: the runs of the fit without seeds (as
        :class:`~hmrf.HMRFKMeans`, ``init`` on the data alone), and before them up to
        half as many from the seed means (one when every cluster has seeds), the first
        the run of ``n_init=1``; each series stops on its own, so the seeds add starts
        and take none away and the fit's criterion is never above the fit without seeds'.
    selection : {"seeds", "objective"}, default="seeds"
        Which run wins. ``"objective"``: the lowest ``J_kmeans``; ``"seeds"``: the rule
        of :class:`SeedsKept`, so
        that a seed class of a few atypical points (§3.3.2) cannot fix a worse minimum
        than a start without seeds unless it keeps enough more seeds to pay for it. With
        clamped seeds (:class:`ConstrainedKMeans`) both are the lowest ``J_kmeans``.
    max_iter, tol, normalizer, random_state :
        As :class:`~hmrf.HMRFKMeans`.
    em : {"hard", "soft"}, default="hard"
        ``"soft"``: EM with posteriors (:mod:`hmrf.em.soft`); for
        :class:`ConstrainedKMeans` the semi-supervised EM of Nigam et al. (2000).

    Attributes
    ----------
    seed_classes_ : ndarray
        The seed label of each seeded cluster.
    """

    _clamp = False
    _parameter_constraints = {"init": [Options("k-means++", "perturbed")],
                              "selection": [Options("seeds", "objective")]}

    def __init__(self, n_clusters: int = 8, *, emission: str | EmissionFamily = "auto",
                 init: Literal["k-means++", "perturbed"] = "k-means++", n_init: int | str = "auto",
                 selection: Literal["seeds", "objective"] = "seeds", max_iter: int = 100, tol: float = 1e-4,
                 normalizer: Literal["constant", "closed_form"] = "constant",
                 em: Literal["hard", "soft"] = "hard", random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.emission = emission
        self.init = init
        self.n_init = n_init
        self.selection = selection
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

    def _choice(self, model, y):
        if self.selection == "objective" or self._clamp:
            return super()._choice(model, y)
        return SeedsKept(model, _seed_clusters(y, model.n_samples, self.n_clusters), self.n_clusters)

    def _series(self, n_init, auto, data_alone, chord, rng):
        """With ``n_init="auto"`` and free seeds, the two series of the class docstring
        (the seeded one on a copy of the generator as the fit received it); otherwise,
        and for Constrained-KMeans (no run of which is the fit without seeds), the base
        class's."""
        if not auto or self._clamp:
            return super()._series(n_init, auto, data_alone, chord, rng)
        unseeded = Series((Start.DATA, Start.CHORD) if chord else (Start.DATA,), n_init, rng)
        if not self.seed_classes_.size:
            return [unseeded]
        return [Series((Start.SUPERVISION,), max(1, n_init // 2), copy.deepcopy(rng)), unseeded]

    def _data_alone(self, model):
        # the start without seeds is EM on the same model (no pairwise potentials)
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


class SeedsKept:
    """Seeded-KMeans' rule among its runs (``selection="seeds"``).

    Run ``q`` beats run ``r`` when ``J_q <= J_r`` and ``missed_q <= missed_r``, one of
    them strictly (within round-off a tie), ``missed`` the seeds outside the cluster
    matched to their class. Among the runs no other beats (the Pareto front), the lowest
    score ``J_kmeans + Σ_i min(w, Δ_i)`` over the missed seeds wins, the earlier run on a
    tie: ``Δ_i = u(x_i, μ_m) - u(x_i, μ_{y_i})`` is the cost of moving seed ``i`` into the
    matched cluster ``m``, ``w`` the model's ``auto_w()`` (the HMRF objective with
    seed-label potentials of weight ``w``, Basu 2005, eq. 3.4, each seed at the cheaper
    of moving and paying). Clusters are matched to seed classes by the least total cost
    for the score and by the most seeds kept for ``missed`` (Kuhn's Hungarian method,
    SciPy's ``linear_sum_assignment``). Only runs that can still win are kept (``front``).
    ``seeds`` is the seed cluster of every point (``-1`` unlabelled) and the seed classes.
    """

    def __init__(self, model: HMRF, seeds: tuple, n_clusters: int) -> None:
        self.model, self.k = model, n_clusters
        self.seeds, self.classes = seeds
        self.seeded = np.flatnonzero(self.seeds >= 0)
        self.precision = getattr(model.X, "dtype", np.float64)
        self.front: list = []

    def cost(self, result: EMResult) -> float:
        """``Σ_seeds min(w, Δ_i)`` of a run (class docstring)."""
        from scipy.optimize import linear_sum_assignment

        if self.seeded.size == 0:
            return 0.0
        model, seeded = self.model, self.seeded
        data = model.data_terms
        U = np.asarray(block_unary(model.emission, model.X[seeded], result.params, model.normalizer,
                                   None if data is None else data[seeded]), dtype=np.float64)
        labels = np.asarray(result.labels[seeded], dtype=np.int64)
        move = np.clip(U - U[np.arange(seeded.size), labels][:, None], 0.0, model.auto_w())
        table = np.zeros((self.classes.size, self.k))
        np.add.at(table, self.seeds[seeded], move)
        rows, cols = linear_sum_assignment(table)
        return float(table[rows, cols].sum())

    def missed(self, result: EMResult) -> int:
        """The seeds outside the cluster matched to their class, under the matching that
        keeps the most seeds."""
        from scipy.optimize import linear_sum_assignment

        if self.seeded.size == 0:
            return 0
        table = np.zeros((self.classes.size, self.k), dtype=np.int64)
        np.add.at(table, (self.seeds[self.seeded], np.asarray(result.labels[self.seeded], dtype=np.int64)), 1)
        rows, cols = linear_sum_assignment(table, maximize=True)
        return int(self.seeded.size - table[rows, cols].sum())

    def _unbeaten(self, runs):
        J = np.array([res.objective for res, _, _ in runs], dtype=np.float64)
        missed = np.array([m for _, _, m in runs])
        slack = np.array([rise_tolerance(j, self.precision) for j in J])
        no_worse = (J[:, None] <= J[None, :] + slack[None, :]) & (missed[:, None] <= missed[None, :])
        better = (J[:, None] < J[None, :] - slack[None, :]) | (missed[:, None] < missed[None, :])
        beaten = (no_worse & better).any(axis=0)
        return [run for run, out in zip(runs, beaten) if not out]

    def add(self, result: EMResult) -> None:
        """Offer the result of one more run."""
        self.offer((result, result.objective + self.cost(result), self.missed(result)))

    def offer(self, new: tuple) -> None:
        """Offer one more run as ``(result, score, missed)``."""
        kept = []
        for run in self._unbeaten([*self.front, new]):
            res, score, missed = run
            slack = rise_tolerance(res.objective, self.precision)
            tie = next((q for q in kept if q[2] == missed and abs(q[0].objective - res.objective) <= slack),
                       None)
            if tie is None:
                kept.append(run)
            elif score < tie[1] - rise_tolerance(tie[1], self.precision):
                kept[kept.index(tie)] = run
        self.front = kept

    @property
    def best(self) -> EMResult | None:
        """The winner so far (class docstring), ``None`` before any run."""
        best, best_score = None, np.inf
        for res, score, _ in self.front:  # unbeaten by construction
            if best is None or score < best_score - rise_tolerance(best_score, self.precision):
                best, best_score = res, score
        return best
