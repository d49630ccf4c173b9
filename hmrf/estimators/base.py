"""Shared machinery of the scikit-learn estimators (ARCHITECTURE.md, layer 8).

``fit`` checks ``X``, the parameters, the engine and the supervision once, builds an
:class:`~hmrf.HMRF`, and runs :func:`hmrf.em.run_em` from ``n_init`` starts on one
generator (as scikit-learn's KMeans delegates to ``_kmeans_single_lloyd``); the lowest
objective wins (:class:`LowestObjective`). ``__init__`` only stores its arguments;
randomness comes only from ``random_state``; no global NumPy state is touched.
"""

from __future__ import annotations

from enum import Enum
from numbers import Integral, Real
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from .._blocks import row_blocks
from .._validation import (
    Check,
    Interval,
    Options,
    check_data,
    check_partial_labels,
    check_random_state,
    is_dask_collection,
    validate_params,
)
from ..backend import InMemoryFit
from ..constraints import Constraints, as_constraints
from ..em import rise_tolerance, run_em
from ..em.loop import check_engine
from ..em.passes import nearest_clusters
from ..em.soft import posterior_engine, run_soft_em
from ..emissions import AUTO, EmissionFamily, VonMisesFisher, data_emission, get_emission
from ..exceptions import InfeasibleError
from ..inference import InferenceEngine, get_engine
from ..inference.posteriors import softmax_free_energy
from ..initialization import INIT_METHODS, initial_centers
from ..model import HMRF, block_unary

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import ArrayLike, NDArray
    from typing_extensions import Self

    from .._typing import MatrixLike, PairsLike
    from ..em import EMResult
    from ..potentials import PairwisePotential

__all__ = ["HMRFClusterMixin", "LowestObjective", "Start"]


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
#: (docs/choosing.md has the measured cost) ...
AUTO_WORK = 2e8
#: ... an E-step costing about this many times more per edge of a constrained point than
#: per entry of ``X`` (message passing sweeps over the edges) ...
EDGE_COST = 50
#: ... and no more once this many runs of a series' first kind of start have reached its
#: lowest objective (:func:`settled`).
AUTO_AGREE = 2


def auto_n_init(model) -> int:
    """The most runs ``n_init="auto"`` makes on ``model``: ``AUTO_MAX_RUNS``
    (``AUTO_MAX_RUNS_SPARSE`` for sparse rows) where a run is cheap, fewer as
    ``k (entries of X + EDGE_COST · constraint edges)`` grows, and at least one."""
    X = model.X
    n, d = X.shape
    sparse = hasattr(X, "nnz")
    entries = float(X.nnz) if sparse else float(n) * float(d)
    work = model.n_clusters * (entries + EDGE_COST * len(model.constraints))
    cap = AUTO_MAX_RUNS_SPARSE if sparse else AUTO_MAX_RUNS
    return int(min(cap, max(1, AUTO_WORK // max(work, 1.0))))


def settled(runs: Sequence[tuple], precision: Any) -> bool:
    """Whether a series of runs of ``n_init="auto"`` stops, given its runs as ``(start,
    objective)``: ``AUTO_AGREE`` runs from its first kind of start reached its lowest
    objective ``J*`` (within round-off of the working ``precision``,
    :func:`hmrf.em.rise_tolerance`). A minimum that several seedings reach is one further
    starts mostly find again; the other kinds pass through the model of the data alone,
    whose few optima many of them share, so their agreement is weak evidence."""
    best = min(j for _, j in runs)
    first = runs[0][0]
    return sum(s is first and j <= best + rise_tolerance(best, precision) for s, j in runs) >= AUTO_AGREE


class LowestObjective:
    """The rule that picks among the runs of ``n_init``: the lowest objective ``J``
    (the model's, constraints included: Basu 2005, eq. 4.10 plus the normaliser terms
    kept); a tie within round-off of the working ``precision`` goes to the earlier run,
    so that equal optima (the same clustering relabelled) give the first run whatever
    the order of the sums (threads, Dask chunks). One run's labels are kept (``best``)."""

    def __init__(self, precision: Any) -> None:
        self.precision = precision
        self.best: EMResult | None = None

    def add(self, result: EMResult) -> None:
        """Offer the result of one more run."""
        best = self.best
        if best is None or result.objective < best.objective - rise_tolerance(best.objective, self.precision):
            self.best = result


class Start(Enum):
    """Where a run of ``n_init`` starts."""

    #: ``init`` given the supervision (the constraints' neighbourhoods, the seeds)
    SUPERVISION = "supervision"
    #: ``init`` on the data alone, then EM on the model without its pairwise potentials:
    #: supervision that agrees with the data's own clusters keeps them
    DATA = "data"
    #: the data alone through Lloyd's iterations on the unit rows first (the cosine model,
    #: ``HMRFClusterMixin._chordal``)
    CHORD = "chord"


class Series(NamedTuple):
    """``count`` runs of ``n_init``, from the ``starts`` in turn, drawing on ``rng``;
    with ``n_init="auto"`` a series ends early once :func:`settled`."""

    starts: tuple
    count: int
    rng: np.random.Generator


def moved_parameters(owner: str, given: dict, new: str) -> TypeError:
    """The error for keyword arguments ``given`` that configure an object ``owner`` takes:
    ``owner(given) is spelled owner(new)``."""
    old = ", ".join(f"{k}={v!r}" for k, v in given.items())
    return TypeError(f"{owner}({old}) is spelled {owner}({new}).")


class HMRFClusterMixin(ClusterMixin, BaseEstimator):
    """Common ``fit``/``predict`` for estimators that run EM on an HMRF.

    Subclasses declare their hyper-parameters in ``__init__`` (checked against
    ``PARAMETERS`` and their ``_parameter_constraints``) and fix the settings they do not
    expose in ``_fixed``; ``_spec_emission``, ``_supervision``, ``_model``,
    ``_initial_params``, ``_series`` and ``_choice`` are where a subclass changes the
    model, its starts and the choice among its runs.

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
        Objective after every M-step of the best run (non-increasing where the M-step
        is an exact minimiser; MKMeans' metric step with constraints is not).
    n_iter_ : int
    converged_ : bool
    constraints_ : Constraints
        The pairwise supervision the model used: the pairs given, those implied by ``y``
        (estimators that take ``y`` as pairs) and, with ``closure=True``, the closure's.
    em_result_ : EMResult
        The full EM trace of the best run.
    n_runs_ : int
        EM runs made (``_best_of_runs``).
    w_ : float
        The constraint weight the fit used (``w="auto"`` resolved, see
        :meth:`hmrf.HMRF.data_scale`); NaN when the fit had no constraints. ``w`` weighs
        the constraint factors only, never the ``potentials=`` of :meth:`fit`.
    emission_ : str or EmissionFamily
        The emission the fit used (``emission="auto"`` resolved by
        :func:`hmrf.emissions.data_emission`; for ``MPCKMeans`` and ``MKMeans`` the data's
        family, the metric learned under it being ``metric_kind_``).
    n_features_in_ : int
    """

    #: Settings an estimator fixes instead of exposing them as parameters (a parameter of
    #: the same name takes precedence); subclasses override entries.
    _fixed = dict(emission="sqeuclidean", inference="icm", init="neighborhoods", w=1.0,
                  normalizer="constant", n_init=1, closure=False, em="hard")
    #: Checks of a subclass's own parameters, beyond ``PARAMETERS``.
    _parameter_constraints: dict = {}
    #: Keyword arguments that configure an object the estimator takes (its ``_moved_error``
    #: names the argument to use instead).
    _moved: tuple = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """Refuse the keyword arguments of ``_moved``, naming the argument to use; the
        others go to ``__init__``, whose signature scikit-learn reads."""
        given = {k: kwargs[k] for k in cls._moved if k in kwargs}
        if given:
            raise cls._moved_error(given)
        return super().__new__(cls)

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

    def _spec_normalizer(self):
        return self._setting("normalizer")

    def _supervision(self, n, y, must_link, cannot_link, constraints) -> Constraints:
        """All supervision as one Constraints object (partial labels -> pairs)."""
        c = as_constraints(constraints, must_link, cannot_link, n=n)
        if y is not None:
            labels = check_partial_labels(y, n)
            if np.any(labels >= 0):
                c = c + Constraints.from_labels(labels)
        return c.closure() if self._setting("closure") else c

    def _model(self, X, constraints, y, potentials=None):
        """The HMRF to fit (subclasses may clamp labels or add potentials), on ``X`` and
        ``constraints`` checked by ``fit``."""
        return HMRF(X, self.n_clusters, emission=self._spec_emission(), constraints=constraints,
                    w=self._setting("w"), normalizer=self._spec_normalizer(), potentials=potentials,
                    validated=True)

    def _initial_params(self, model, constraints, y, rng):
        centers = initial_centers(model.X, model.n_clusters, model.emission, constraints,
                                  self._spec_init(), rng)
        return model.emission.init_params(model.X, centers)

    def _choice(self, model, y):
        """The rule that picks among the runs (:class:`LowestObjective`)."""
        return LowestObjective(getattr(model.X, "dtype", np.float64))

    def _series(self, n_init, auto, data_alone, chord, rng) -> list[Series]:
        """The runs to make: one series of ``n_init`` runs on the fit's generator, from
        the supervision's seeding and, with ``n_init="auto"`` where there is supervision
        beyond the data (``data_alone``), from the data alone in turn (through the
        chord on the cosine model: ``chord``)."""
        starts = (Start.SUPERVISION,)
        if chord:
            starts += (Start.CHORD,)
        elif auto and data_alone:
            starts += (Start.DATA,)
        return [Series(starts, n_init, rng)]

    def _chordal(self, model):
        """The squared-Euclidean model of the data alone on the unit rows of a cosine
        model, whose optimum is :attr:`Start.CHORD` (``None`` for other families, soft EM
        or rows not in memory). SP-KMeans on small sets of sparse rows stops in poor local
        optima (Basu 2005, §4.5.1); on unit rows ``||x - m||² = 1 - 2 xᵀm + ||m||²``, so
        Lloyd's iterations on the chord keep a diffuse cluster's centre short."""
        if (self._setting("em") != "hard" or type(model) is not HMRF
                or not isinstance(model.emission, VonMisesFisher)):
            return None
        return HMRF(model.X, model.n_clusters, emission="sqeuclidean", validated=True)

    def _data_alone(self, model):
        """The model of the data alone, whose optimum starts :attr:`Start.DATA` (the model
        without its pairwise potentials), or ``None`` when there is no supervision beyond
        the model itself."""
        return model.without_potentials() if model.potentials else None

    # --------------------------------------------------------------------- API
    def fit(self, X: MatrixLike, y: ArrayLike | None = None, *, must_link: PairsLike | None = None,
            cannot_link: PairsLike | None = None, constraints: Constraints | None = None,
            potentials: PairwisePotential | Sequence[PairwisePotential] | None = None) -> Self:
        """Cluster ``X`` under pairwise supervision.

        Parameters
        ----------
        y : array-like of shape (n_samples,), optional
            Partial labels, ``-1`` for unlabelled; turned into must-links within and
            cannot-links across classes (:class:`~hmrf.SeededKMeans` and
            :class:`~hmrf.ConstrainedKMeans` take them as seeds instead; ``KMeans`` takes
            no supervision).
        constraints : Constraints, optional
            Alternative to the pair lists (not both).
        potentials : PairwisePotential or list of them, optional
            Further pairwise potentials on the points of ``X``, with their own costs
            (``w`` does not scale them).
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
        """The fit, written once against a fit backend (:mod:`hmrf.backend`: how ``X`` is
        checked, where the model keeps the rows, the passes over them, how ``labels_`` is
        kept). Everything is checked here, once: ``X``, the parameters, the engine's
        parameters, the supervision; ``random_state`` becomes the one generator of the fit."""
        self._validate_params()
        Xc = backend.data(X)
        validate_data(self, X, skip_check_array=True, reset=True)
        y = backend.partial_labels(y)
        self._resolve_emission(Xc)
        em = self._em(backend.hard_pass, backend.soft_pass)
        c = self._supervision(Xc.shape[0], y, must_link, cannot_link, constraints)
        model = backend.model(self._model, Xc, c, y, potentials)
        best = self._best_of_runs(model, c, y, em, check_random_state(self.random_state))
        return self._set_fitted(best, model, c, backend.labels(best, model))

    def _em(self, hard_pass=None, soft_pass=None):
        """The EM loop this estimator runs, as ``em(model, params, rng) -> EMResult``
        (hard or soft by ``em``; the passes over the data default to the in-memory ones).
        The engine is resolved and its parameters checked here, once per fit."""
        kw = dict(max_iter=self.max_iter, tol=float(self.tol))
        if self._setting("em") == "soft":  # "auto", or no inference parameter: mean-field
            own = "inference" in self._get_param_names()
            engine = posterior_engine(self._spec_inference() if own else None)
            return lambda model, params, rng: run_soft_em(model, params, engine, rng=rng,
                                                          data_pass=soft_pass, **kw)
        engine = get_engine(self._spec_inference())
        check_engine(engine)
        return lambda model, params, rng: run_em(model, params, engine, rng=rng, data_pass=hard_pass,
                                                 validated=True, **kw)

    def _best_of_runs(self, model, constraints, y, em, rng):
        """The run :meth:`_choice` keeps of the runs of ``em`` (:meth:`_series`), all on
        the fit's generator ``rng``, each from its :class:`Start`: ``n_init`` runs, or
        with ``n_init="auto"`` up to :func:`auto_n_init` (one for an array ``init``), a
        series ending once :func:`settled`, a run whose seeding repeats an earlier one of
        its kind skipped (a deterministic seeding has nothing to vary). A run ending in
        :class:`~hmrf.InfeasibleError` (a heuristic's dead end, e.g. COP-KMeans' greedy
        assignment) is skipped; the error is raised when every run ends in it."""
        n_init = self._setting("n_init")
        auto = isinstance(n_init, str)
        if auto:
            n_init = 1 if _is_array_init(self._spec_init()) else auto_n_init(model)
        alone = self._data_alone(model)
        chord = self._chordal(model) if auto else None
        choice = self._choice(model, y)
        precision = getattr(model.X, "dtype", np.float64)
        free = failed = None  # free: the supervision of a start from the data alone (none)
        self.n_runs_ = 0
        for series in self._series(int(n_init), auto, alone is not None, chord is not None, rng):
            seen, done = [], []
            for run in range(series.count):
                start, gen = series.starts[run % len(series.starts)], series.rng
                if start is Start.SUPERVISION:
                    params = self._initial_params(model, constraints, y, gen)
                else:
                    free = Constraints.empty(model.n_samples) if free is None else free
                    params = self._initial_params(model, free, None, gen)
                if auto:
                    centers = np.asarray(params.centers)
                    if any(kind is start and np.array_equal(centers, c) for kind, c in seen):
                        continue
                    seen.append((start, centers.copy()))
                if start is Start.CHORD:
                    means = em(chord, chord.emission.init_params(chord.X, params.centers), gen).params
                    params = model.emission.init_params(model.X, means.centers)
                if start is not Start.SUPERVISION and alone is not None and alone is not model:
                    params = em(alone, params, gen).params
                try:
                    result = em(model, params, gen)
                except InfeasibleError as exc:  # a heuristic's dead end in this run; others may not
                    failed = exc
                    continue
                self.n_runs_ += 1
                choice.add(result)
                done.append((start, result.objective))
                if auto and settled(done, precision):
                    break
        if choice.best is None:
            raise failed
        return choice.best

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
        """Nearest cluster of new points under the fitted emission (no constraints); a
        lazy Dask array for a Dask array ``X``."""
        if is_dask_collection(X):
            from ..distributed.fit import predict_dask
            return predict_dask(self, X)
        check_is_fitted(self, "params_")
        family, Xp = self._prepared(X)
        return nearest_clusters(family, Xp, self.params_, self._spec_normalizer())

    def _prepared(self, X):
        family = get_emission(self._spec_emission())
        Xc = check_data(X, accept_sparse=family.accepts_sparse, keep_float32=True)
        validate_data(self, X, skip_check_array=True, reset=False)
        return family, family.prepare(Xc)

    def _is_soft(self) -> bool:
        return self._setting("em") == "soft"

    def _has_density(self) -> bool:
        return self._is_soft() and self._spec_normalizer() == "closed_form"

    def _posterior(self, X, which):
        """``softmax_free_energy`` of the unary costs of new points, block by block:
        ``which=0`` the posteriors (n, k), ``1`` the free energies (n,)."""
        check_is_fitted(self, "params_")
        family, Xp = self._prepared(X)
        k = self.params_.n_clusters
        out = np.empty((Xp.shape[0], k) if which == 0 else Xp.shape[0])
        for rows in row_blocks(Xp.shape[0], max(k, Xp.shape[1])):
            out[rows] = softmax_free_energy(block_unary(family, Xp[rows], self.params_,
                                                        self._spec_normalizer()))[which]
        return out

    @available_if(_is_soft)
    def predict_proba(self, X):
        """Posterior ``p(y = h | x)`` (n_samples, n_clusters) of new points under the
        fitted model (no constraints): ``π_h p(x | h, Θ) / Σ_g π_g p(x | g, Θ)``, i.e.
        ``softmax(-U)`` (after ``em="soft"``)."""
        return self._posterior(X, 0)

    @available_if(_has_density)
    def score_samples(self, X):
        """Log-likelihood ``log Σ_h π_h p(x | h, Θ)`` of each new point (after ``em="soft"``
        with ``normalizer="closed_form"``, where ``p(x | h, Θ)`` is a normalised density)."""
        return -self._posterior(X, 1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        emission = self._spec_emission()
        auto = isinstance(emission, str) and emission.lower() == AUTO  # both candidates take sparse
        tags.input_tags.sparse = auto or get_emission(emission).accepts_sparse
        return tags
