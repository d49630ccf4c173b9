"""Shared machinery of the scikit-learn estimators (ARCHITECTURE.md, layer 8).

Estimators are thin: ``fit`` validates, builds an :class:`~hmrf.HMRF`, picks initial
centres (:mod:`hmrf.initialization`) and delegates to :func:`hmrf.em.run_em`, as
scikit-learn's KMeans delegates to ``_kmeans_single_lloyd``. ``__init__`` only stores
its arguments; all validation happens in ``fit``; randomness comes only from
``random_state``; no global NumPy state is touched.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from .._blocks import row_blocks
from .._params import Check, Interval, Options, validate_params
from .._validation import check_data, check_partial_labels, check_random_state, is_dask_collection
from ..backend import InMemoryFit
from ..constraints import Constraints
from ..em import rise_tolerance, run_em
from ..em.passes import nearest_clusters
from ..em.soft import posterior_engine, run_soft_em
from ..emissions import AUTO, EmissionFamily, VonMisesFisher, data_emission
from ..exceptions import InfeasibleError
from ..inference import InferenceEngine, get_engine
from ..inference.posteriors import softmax_free_energy
from ..initialization import INIT_METHODS, initial_centers
from ..model import HMRF, block_unary
from .supervision import as_constraints, emission_of

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import ArrayLike, NDArray
    from typing_extensions import Self

    from .._typing import MatrixLike, PairsLike
    from ..potentials import PairwisePotential

__all__ = ["HMRFClusterMixin"]


def _is_array_init(value) -> bool:
    return not isinstance(value, str) and np.ndim(value) == 2


#: What every parameter of the HMRF estimators may be (scikit-learn's
#: ``_parameter_constraints`` idea); a class checks the ones it has (``validate_params``).
#: ``n_clusters`` is checked against the data (``1 <= k <= n``) when the model is built.
PARAMETERS = {
    "max_iter": [Interval(Integral, 1, None)],
    "tol": [Interval(Real, 0, None, closed="left")],
    "n_init": [Options("auto"), Interval(Integral, 1, None)],
    "w": [Options("auto"), Interval(Real, 0, None)],
    "em": [Options("hard", "soft")],
    "normalizer": [Options("constant", "closed_form")],
    "closure": [Options(True, False)],
    "init": [Options(*INIT_METHODS), Check(_is_array_init, "an array of initial centres (k, d)")],
    "inference": [str, InferenceEngine,
                  Check(lambda v: callable(getattr(v, "map", None)), "an object with a .map() method")],
    "emission": [str, EmissionFamily],
    "random_state": [Options(None), Interval(Integral, 0, 2**32 - 1), np.random.RandomState,
                     np.random.Generator],
}


#: ``n_init="auto"``: at most this many runs ...
AUTO_MAX_RUNS = 10
#: ... or this many on sparse rows (text): on small sets of sparse high-dimensional rows
#: the EM "can easily get stuck in local optima" (Basu 2005, §4.5.1, after Dhillon &
#: Guan 2003), and a run costs the row's non-zeros only (docs/choosing.md) ...
AUTO_MAX_RUNS_SPARSE = 30
#: ... as many as fit in this much work per EM iteration summed over the runs, counted
#: as entries of ``X`` (non-zeros when sparse) and constraint edges, each times ``k``
#: (docs/choosing.md has the measured cost).
AUTO_WORK = 2e8
#: An E-step costs about this many times more per edge of a constrained point than per
#: entry of ``X`` (message passing sweeps over the edges).
EDGE_COST = 50


def auto_n_init(model) -> int:
    """The number of runs ``n_init="auto"`` makes on ``model``: ``AUTO_MAX_RUNS``
    (``AUTO_MAX_RUNS_SPARSE`` for sparse rows) where a run is cheap, fewer as
    ``k (entries of X + EDGE_COST · constraint edges)`` grows, and at least one."""
    X = model.X
    n, d = X.shape
    sparse = hasattr(X, "nnz")
    entries = float(X.nnz) if sparse else float(n) * float(d)
    work = model.n_clusters * (entries + EDGE_COST * len(model.constraints))
    cap = AUTO_MAX_RUNS_SPARSE if sparse else AUTO_MAX_RUNS
    return int(min(cap, max(1, AUTO_WORK // max(work, 1.0))))


def _unbeaten(runs, precision):
    """The runs among ``runs``, ``(EMResult, score, missed)`` in the order they ran, that
    no other run beats in both ``J`` (the run's objective) and ``missed`` (supervision
    left unkept that ``J`` does not count): the Pareto front of the two, in the same
    order. Run ``q`` beats run ``r`` when ``J_q <= J_r`` and ``missed_q <= missed_r``,
    one of them strictly; differences within round-off of the working ``precision``
    are ties."""
    J = np.array([res.objective for res, _, _ in runs], dtype=np.float64)
    missed = np.array([m for _, _, m in runs])
    slack = np.array([rise_tolerance(j, precision) for j in J])
    no_worse = (J[:, None] <= J[None, :] + slack[None, :]) & (missed[:, None] <= missed[None, :])
    better = (J[:, None] < J[None, :] - slack[None, :]) | (missed[:, None] < missed[None, :])
    beaten = (no_worse & better).any(axis=0)
    return [run for run, out in zip(runs, beaten) if not out]


def _contenders(runs, precision):
    """The runs of ``runs`` (as :func:`_unbeaten`) that can still win :func:`_best_run`
    once more runs come, so that a fit keeps one run's labels in memory, not ``n_init``
    of them: the unbeaten runs, and of those equal in ``J`` (within round-off) and in
    ``missed``, only the one :func:`_best_run` would take (the lowest score, the earlier
    on a tie). Without a count of unkept supervision, the run of least ``J`` alone."""
    kept = []
    for run in _unbeaten(runs, precision):
        res, score, missed = run
        slack = rise_tolerance(res.objective, precision)
        tie = next((q for q in kept if q[2] == missed and abs(q[0].objective - res.objective) <= slack), None)
        if tie is None:
            kept.append(run)
        elif score < tie[1] - rise_tolerance(tie[1], precision):
            kept[kept.index(tie)] = run
    return kept


def _best_run(runs, precision):
    """The winner among ``runs`` (as :func:`_unbeaten`): the lowest ``score`` among the
    unbeaten runs (a run of higher ``J`` that also keeps fewer seeds is never chosen,
    whatever its ``score``). A tie within round-off goes to the earlier run: equal
    optima (the same clustering, relabelled) go to the first run, whatever the order
    of the sums (threads, Dask chunks)."""
    best, best_score = None, np.inf
    for res, score, _ in _unbeaten(runs, precision):
        if best is None or score < best_score - rise_tolerance(best_score, precision):
            best, best_score = res, score
    return best


class HMRFClusterMixin(ClusterMixin, BaseEstimator):
    """Common ``fit``/``predict`` for estimators that run EM on an HMRF.

    Subclasses declare their hyper-parameters in ``__init__`` (checked against
    ``PARAMETERS`` and their own ``_parameter_constraints``) and fix the settings they
    do not expose in ``_fixed`` (PCKMeans fixes the emission and the initialisation,
    SphericalKMeans the emission). The methods ``_spec_emission``, ``_supervision``,
    ``_model`` and ``_initial_params`` are the places a subclass changes the model.

    Attributes
    ----------
    labels_ : ndarray (n,)
        Cluster of every training point (contiguous integers ``0..k-1``).
    cluster_centers_ : ndarray (k, d)
    params_ : EmissionParams
        All emission parameters (centres, scales, metric).
    objective_ : float
        ``J(labels_, params_)``: eq. 4.10 plus the normaliser terms kept.
    history_ : ndarray
        Objective after every M-step of the best run (non-increasing).
    n_iter_ : int
    converged_ : bool
    constraints_ : Constraints
        The supervision used (pairs given plus those implied by ``y``).
    em_result_ : EMResult
        The full EM trace of the best run.
    n_runs_ : int
        EM runs made: ``n_init``, or with ``n_init="auto"`` up to 10 (30 on sparse rows)
        where a run is cheap (``AUTO_WORK`` of work per iteration in all), fewer when some repeat the
        initial centres of an earlier run or end in :class:`~hmrf.InfeasibleError`.
    w_ : float
        The constraint weight the fit used (``w="auto"`` resolved, see
        :meth:`hmrf.HMRF.data_scale`); NaN when the fit had no constraints. ``w`` weighs
        the constraint factors only, never the ``potentials=`` of :meth:`fit`.
    emission_ : str or EmissionFamily
        The emission the fit used (``emission="auto"`` resolved by
        :func:`hmrf.emissions.data_emission`: ``"cosine"`` for sparse non-negative rows,
        ``"sqeuclidean"`` otherwise).
    n_features_in_ : int
    """

    #: Settings an estimator fixes instead of exposing them as parameters (a parameter of
    #: the same name takes precedence); subclasses override entries.
    _fixed = dict(emission="sqeuclidean", inference="icm", init="neighborhoods", w=1.0,
                  normalizer="constant", n_init=1, closure=False, em="hard")
    #: Checks of a subclass's own parameters, beyond ``PARAMETERS``.
    _parameter_constraints: dict = {}

    # ------------------------------------------------------------------- hooks
    def _setting(self, name):
        """The value of a setting: the parameter if the class has one, else ``_fixed``."""
        return getattr(self, name) if name in self._get_param_names() else self._fixed[name]

    def _validate_params(self):
        names = self._get_param_names()
        table = {n: PARAMETERS[n] for n in names if n in PARAMETERS}
        table.update({n: c for n, c in self._parameter_constraints.items() if n in names})
        validate_params(self, table)

    def _spec_emission(self):
        """The emission setting, with ``"auto"`` as the fit resolved it (``emission_``)."""
        emission = self._setting("emission")
        if isinstance(emission, str) and emission.lower() == AUTO and hasattr(self, "emission_"):
            return self.emission_
        return emission

    def _resolve_emission(self, X):
        """Set ``emission_``: the family name ``emission="auto"`` stands for on ``X``
        (:func:`hmrf.emissions.data_emission`), or the setting itself."""
        emission = self._setting("emission")
        auto = isinstance(emission, str) and emission.lower() == AUTO
        self.emission_ = data_emission(X) if auto else emission

    def _spec_inference(self):
        return self._setting("inference")

    def _spec_init(self):
        return self._setting("init")

    def _spec_w(self):
        return self._setting("w")

    def _spec_normalizer(self):
        return self._setting("normalizer")

    def _spec_n_init(self):
        return self._setting("n_init")

    def _spec_closure(self):
        return self._setting("closure")

    def _supervision(self, n, y, must_link, cannot_link, constraints) -> Constraints:
        """All supervision as one Constraints object (partial labels -> pairs)."""
        c = as_constraints(constraints, must_link, cannot_link, n=n)
        if y is not None:
            labels = check_partial_labels(y, n)
            if np.any(labels >= 0):
                c = c + Constraints.from_labels(labels)
        if self._spec_closure():
            c = c.closure()
        return c

    def _model(self, X, constraints, y, potentials=None):
        """The HMRF to fit (subclasses may clamp labels or add potentials), on ``X`` and
        ``constraints`` checked by ``fit``."""
        return HMRF(X, self.n_clusters, emission=self._spec_emission(), constraints=constraints,
                    w=self._spec_w(), normalizer=self._spec_normalizer(), potentials=potentials,
                    validated=True)

    def _initial_params(self, model, constraints, y, rng):
        centers = initial_centers(model.X, model.n_clusters, model.emission, constraints,
                                  self._spec_init(), rng)
        return model.emission.init_params(model.X, centers)

    # --------------------------------------------------------------------- API
    def fit(self, X: MatrixLike, y: ArrayLike | None = None, *, must_link: PairsLike | None = None,
            cannot_link: PairsLike | None = None, constraints: Constraints | None = None,
            potentials: PairwisePotential | Sequence[PairwisePotential] | None = None) -> Self:
        """Cluster ``X`` under pairwise supervision.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), optional
            Partial labels, ``-1`` for unlabelled (scikit-learn convention); turned into
            must-links within and cannot-links across classes.
        must_link, cannot_link : sequence of (i, j) pairs, optional
        constraints : Constraints, optional
            Alternative to the pair lists (not both).
        potentials : PairwisePotential or list of them, optional
            Further pairwise potentials on the points of ``X`` (e.g. a
            :class:`~hmrf.potentials.TablePotential`), added to the constraint factors
            with their own costs: ``w`` does not scale them.

        Returns
        -------
        self
        """
        if is_dask_collection(X):  # a Dask array: EM on its chunks, where they are (hmrf.distributed)
            from ..distributed.fit import DaskFit
            backend = DaskFit()
        else:
            backend = InMemoryFit()
        return self._fit(backend, X, y, must_link=must_link, cannot_link=cannot_link,
                         constraints=constraints, potentials=potentials)

    def _fit(self, backend, X, y=None, *, must_link=None, cannot_link=None, constraints=None,
             potentials=None):
        """The fit, written once against a fit backend (:mod:`hmrf.backend`): where the rows
        are decides how ``X`` is checked, where the model keeps them, the passes over them
        and how ``labels_`` is kept; the supervision, the model, the initialisation and the
        EM loop are the estimator's own on both."""
        self._validate_params()
        Xc = backend.data(X)
        validate_data(self, X, skip_check_array=True, reset=True)
        y = backend.partial_labels(y)
        self._resolve_emission(Xc)
        em = self._em(backend.hard_pass, backend.soft_pass)
        c = self._supervision(Xc.shape[0], y, must_link, cannot_link, constraints)
        model = backend.model(self._model, Xc, c, y, potentials)
        best = self._best_of_runs(model, c, y, em, self._initial_params)
        return self._set_fitted(best, model, c, backend.labels(best, model))

    def _em(self, hard_pass=None, soft_pass=None):
        """The EM loop this estimator runs, as ``em(model, params, rng) -> EMResult``
        (hard or soft by ``em``; the passes over the data default to the in-memory ones)."""
        kw = dict(max_iter=self.max_iter, tol=float(self.tol))
        if self._setting("em") == "soft":  # "auto", or no inference parameter: mean-field
            own = "inference" in self._get_param_names()
            engine = posterior_engine(self._spec_inference() if own else None)
            return lambda model, params, rng: run_soft_em(model, params, engine, rng=rng,
                                                          data_pass=soft_pass, **kw)
        engine = get_engine(self._spec_inference())
        return lambda model, params, rng: run_em(model, params, engine, rng=rng, data_pass=hard_pass, **kw)

    def _best_of_runs(self, model, constraints, y, em, initial_params):
        """The run with the lowest objective of ``n_init`` runs of ``em`` from
        ``initial_params(model, constraints, y, rng)``, all drawing on one generator.

        ``n_init="auto"``: ``auto_n_init(model)`` runs (one for an array ``init``) from two
        kinds of start in turn when there is supervision (``_data_alone``): the seeding
        from the supervision (``init`` given the constraints or labelled seeds), and the
        clustering of the data alone (``init`` without them, then EM on the model without
        its potentials where it has any), from whose parameters the supervised EM
        starts, so that supervision which agrees with the data's own clusters keeps them.
        On the cosine model the clustering of the data alone starts from Lloyd's
        iterations on the unit rows (``_chordal``), and every other run is of this kind,
        with or without supervision: how many runs start from the data alone does not
        depend on whether a few pairs were given. A run whose seeding repeats an earlier run's of its
        kind is skipped (a deterministic seeding has nothing to
        vary). The objective ``J`` of the model, constraints included, decides, plus what
        the run costs in supervision that ``J`` leaves out (``_supervision_cost``:
        Seeded-KMeans' seeds outside their class's cluster), among the runs that no
        other run beats in both ``J`` and that supervision's count
        (``_supervision_missed``; :func:`_best_run`). A run
        that ends in :class:`~hmrf.InfeasibleError` (a heuristic's dead end, e.g.
        COP-KMeans' greedy assignment) is skipped; the error is raised when every run
        ends in it.
        """
        rng = check_random_state(self.random_state)
        self.n_runs_ = 0
        n_init = self._spec_n_init()
        auto = isinstance(n_init, str)
        if auto:
            n_init = 1 if _is_array_init(self._spec_init()) else auto_n_init(model)
        alone = self._data_alone(model)
        chordal = self._chordal(model) if auto else None
        # the kinds of start: 0 the supervision's seeding, 1 the data alone, 2 the data
        # alone through Lloyd's iterations on the chord first (the cosine model's kind 1)
        if chordal is not None:
            kinds = [0, 2]
        else:
            kinds = [0] + ([1] if auto and alone is not None else [])
        schedule = self._schedule(int(n_init), kinds, rng, auto, y)
        runs, seen = [], {kind: [] for kind, _ in schedule}
        precision = getattr(model.X, "dtype", np.float64)
        for kind, gen in schedule:
            if kind == 0:
                params = initial_params(model, constraints, y, gen)
            else:  # the data alone: neither the pairs nor the labelled seeds
                params = initial_params(model, Constraints.empty(model.n_samples), None, gen)
            if auto:
                centers = np.asarray(params.centers)
                if any(np.array_equal(centers, c) for c in seen[kind]):
                    continue
                seen[kind].append(centers.copy())
            if kind == 2:
                means = em(chordal, chordal.emission.init_params(chordal.X, params.centers), gen).params
                params = model.emission.init_params(model.X, means.centers)
            if kind > 0 and alone is not None and alone is not model:
                params = em(alone, params, gen).params
            try:
                res = em(model, params, gen)
            except InfeasibleError as exc:  # a heuristic's dead end in this run; others may not
                failed = exc
                continue
            self.n_runs_ += 1
            runs = _contenders([*runs, (res, res.objective + self._supervision_cost(model, res, y),
                                        self._supervision_missed(model, res, y))], precision)
        if not runs:
            raise failed
        return _best_run(runs, precision)

    def _schedule(self, n_init, kinds, rng, auto, y):
        """The runs to make, as ``(kind of start, generator)``: ``n_init`` runs, the
        kinds in turn, all on the fit's generator ``rng``."""
        return [(kinds[run % len(kinds)], rng) for run in range(n_init)]

    def _supervision_cost(self, model, result, y) -> float:
        """What a run (its ``EMResult``: labels and parameters) costs in supervision its
        objective does not count, added to the objective to rank the runs of
        ``n_init``; 0 here: the objective of a model with pairwise potentials counts its
        constraints."""
        return 0.0

    def _supervision_missed(self, model, result, y) -> int:
        """How many pieces of supervision a run leaves unkept that its objective does
        not count (Seeded-KMeans' seeds outside their class's cluster): a run that is
        beaten by another in both this count and its objective ``J`` never wins
        (:func:`_best_run`); 0 here."""
        return 0

    def _chordal(self, model):
        """The squared-Euclidean model of the data alone on the unit rows of a cosine
        (von Mises-Fisher) model, whose optimum starts the third kind of run of
        ``n_init="auto"``; ``None`` for other families, soft EM or rows not in memory.

        SP-KMeans on small sets of sparse high-dimensional rows relocates few documents
        from most starts and stops in a poor local optimum (Basu 2005, §4.5.1, after
        Dhillon & Guan 2003). On unit rows ``||x - m||^2 = 1 - 2 x^T m + ||m||^2``:
        Lloyd's iterations on the chord keep each centre at its cluster's mean, whose
        length (the mean resultant) is small for a diffuse cluster, where SP-KMeans'
        assignment to the nearest direction ``x^T m / ||m||`` does not shrink it. The
        normalised means of that clustering start SP-KMeans (§2.3.2), and the cosine
        objective decides between the runs, as for every other start.
        """
        if (self._setting("em") != "hard" or type(model) is not HMRF
                or not isinstance(model.emission, VonMisesFisher)):
            return None
        return HMRF(model.X, model.n_clusters, emission="sqeuclidean", validated=True)

    def _data_alone(self, model):
        """The model of the data alone, whose optimum is the second kind of start of
        ``n_init="auto"`` (the model without its pairwise potentials), or ``None`` when
        there is no second kind (no supervision beyond the model itself)."""
        return model.without_potentials() if model.potentials else None

    def _set_fitted(self, best, model, constraints, labels):
        """Store the fitted attributes of the best run (``labels`` as the caller keeps them)."""
        self.labels_ = labels
        self.params_ = best.params
        self.cluster_centers_ = best.params.centers.astype(model.X.dtype)
        self.objective_ = float(best.objective)
        self.history_ = np.asarray(best.history, dtype=np.float64)
        self.n_iter_ = int(best.n_iter)
        self.converged_ = bool(best.converged)
        self.constraints_ = constraints
        self.em_result_ = best
        self.w_ = float(model.w) if constraints is not None and len(constraints) else float("nan")
        return self

    def fit_predict(self, X: MatrixLike, y: ArrayLike | None = None, **fit_params: Any) -> NDArray[np.intp]:
        """Fit and return ``labels_`` (same arguments as :meth:`fit`)."""
        return self.fit(X, y, **fit_params).labels_

    def predict(self, X: MatrixLike) -> NDArray[Any]:
        """Nearest cluster of new points under the fitted emission (no constraints).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            (a lazy Dask array for a Dask array ``X``)
        """
        if is_dask_collection(X):
            from ..distributed.fit import predict_dask
            return predict_dask(self, X)
        check_is_fitted(self, "params_")
        family, Xp = self._prepared(X)
        return nearest_clusters(family, Xp, self.params_, self._spec_normalizer())

    def _prepared(self, X):
        family = emission_of(self)
        Xc = check_data(X, accept_sparse=family.accepts_sparse, keep_float32=True)
        validate_data(self, X, skip_check_array=True, reset=False)
        return family, family.prepare(Xc)

    def _is_soft(self) -> bool:
        return self._setting("em") == "soft"

    def _has_density(self) -> bool:
        return self._is_soft() and self._spec_normalizer() == "closed_form"

    @available_if(_is_soft)
    def predict_proba(self, X):
        """Posterior ``p(y = h | x)`` of new points under the fitted model (no constraints):
        ``π_h p(x | h, Θ) / Σ_g π_g p(x | g, Θ)``, i.e. ``softmax(-U)`` (after ``em="soft"``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_clusters)
        """
        check_is_fitted(self, "params_")
        family, Xp = self._prepared(X)
        out = np.empty((Xp.shape[0], self.params_.n_clusters))
        for rows in row_blocks(Xp.shape[0], max(out.shape[1], Xp.shape[1])):  # blocks of rows
            out[rows] = softmax_free_energy(block_unary(family, Xp[rows], self.params_,
                                                        self._spec_normalizer()))[0]
        return out

    @available_if(_has_density)
    def score_samples(self, X):
        """Log-likelihood ``log Σ_h π_h p(x | h, Θ)`` of each new point (after ``em="soft"``
        with ``normalizer="closed_form"``, where ``p(x | h, Θ)`` is a normalised density:
        the isotropic Gaussian, the von Mises-Fisher on the unit sphere).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "params_")
        family, Xp = self._prepared(X)
        out = np.empty(Xp.shape[0])
        for rows in row_blocks(Xp.shape[0], max(self.params_.n_clusters, Xp.shape[1])):
            out[rows] = -softmax_free_energy(block_unary(family, Xp[rows], self.params_,
                                                         self._spec_normalizer()))[1]
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        emission = self._spec_emission()
        auto = isinstance(emission, str) and emission.lower() == AUTO  # both candidates take sparse
        tags.input_tags.sparse = auto or emission_of(self).accepts_sparse
        return tags
