"""Shared machinery of the scikit-learn estimators (DESIGN.md, layer 8).

Estimators are thin: ``fit`` validates, builds an :class:`~hmrf.HMRF`, picks initial
centres (:mod:`hmrf.initialization`) and delegates to :func:`hmrf.em.run_em`, as
scikit-learn's KMeans delegates to ``_kmeans_single_lloyd``. ``__init__`` only stores
its arguments; all validation happens in ``fit``; randomness comes only from
``random_state``; no global NumPy state is touched.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import check_data, check_partial_labels
from ..constraints import Constraints
from ..em import run_em
from ..estep import nearest_clusters
from ..emissions import get_emission
from ..inference import get_engine
from ..initialization import initial_centers
from ..model import HMRF

__all__ = ["HMRFClusterMixin", "emission_of"]


def emission_of(estimator):
    """The emission family an HMRF estimator fits with (its ``emission`` parameter, or
    the family it fixes: squared Euclidean for PCKMeans, cosine for SphericalKMeans,
    the learned metric for MPCKMeans), as an :class:`~hmrf.emissions.EmissionFamily`."""
    return get_emission(estimator._spec_emission())


def _check_positive_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def _check_nonneg_float(value, name, allow_inf=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number; got {value!r}.")
    v = float(value)
    if np.isnan(v) or v < 0 or (np.isinf(v) and not allow_inf):
        bound = " (np.inf allowed)" if allow_inf else " and finite"
        raise ValueError(f"{name} must be >= 0{bound}; got {value!r}.")
    return v


def as_constraints(constraints=None, must_link=None, cannot_link=None, n=None, weight=1.0) -> Constraints:
    """Normalise the ways estimators accept supervision into one :class:`Constraints`.

    Exactly one of ``constraints`` or the pair lists may be given (both is an error, to
    avoid silently ignoring one).
    """
    if constraints is not None:
        if must_link is not None or cannot_link is not None:
            raise ValueError("pass either constraints= or must_link=/cannot_link=, not both.")
        if not isinstance(constraints, Constraints):
            raise TypeError(f"constraints must be an hmrf.Constraints; got {type(constraints).__name__}.")
        if n is not None and constraints.n != n:
            raise ValueError(f"constraints refer to {constraints.n} points but X has {n} samples.")
        return constraints
    return Constraints.from_pairs(must_link, cannot_link, n=n, weight=weight)


class HMRFClusterMixin(ClusterMixin, BaseEstimator):
    """Common ``fit``/``predict`` for estimators that run EM on an HMRF.

    Subclasses declare their hyper-parameters in ``__init__`` and may override the
    ``_spec_*`` hooks to fix the emission family, initialisation, engine or weight.

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
    n_features_in_ : int
    """

    # ------------------------------------------------------------------- hooks
    def _spec_emission(self):
        return getattr(self, "emission", "sqeuclidean")

    def _spec_inference(self):
        return getattr(self, "inference", "icm")

    def _spec_init(self):
        return getattr(self, "init", "neighborhoods")

    def _spec_w(self):
        return getattr(self, "w", 1.0)

    def _spec_normalizer(self):
        return getattr(self, "normalizer", "constant")

    def _spec_n_init(self):
        return getattr(self, "n_init", 1)

    def _spec_closure(self):
        return getattr(self, "closure", False)

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
        """The HMRF to fit (subclasses may clamp labels or add potentials)."""
        return HMRF(X, self.n_clusters, emission=self._spec_emission(), constraints=constraints,
                    w=self._spec_w(), normalizer=self._spec_normalizer(), potentials=potentials)

    def _initial_params(self, model, constraints, y, rng):
        centers = initial_centers(model.X, model.n_clusters, model.emission, constraints,
                                  self._spec_init(), rng)
        return model.emission.init_params(model.X, centers)

    # --------------------------------------------------------------------- API
    def fit(self, X, y=None, *, must_link=None, cannot_link=None, constraints=None, potentials=None):
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
            :class:`~hmrf.potentials.TablePotential`), added to the constraint factors.

        Returns
        -------
        self
        """
        Xc = check_data(X, keep_float32=True)
        validate_data(self, X, skip_check_array=True, reset=True)
        n = Xc.shape[0]
        _check_positive_int(self.max_iter, "max_iter")
        tol = _check_nonneg_float(self.tol, "tol")
        n_init = _check_positive_int(self._spec_n_init(), "n_init")
        _check_nonneg_float(self._spec_w(), "w", allow_inf=True)
        engine = get_engine(self._spec_inference())
        c = self._supervision(n, y, must_link, cannot_link, constraints)
        model = self._model(Xc, c, y, potentials)
        rs = check_random_state(self.random_state)
        rng = np.random.default_rng(rs.randint(np.iinfo(np.int32).max))
        best = None
        for _ in range(n_init):
            params = self._initial_params(model, c, y, rng)
            res = run_em(model, params, engine, max_iter=self.max_iter, tol=tol, rng=rng)
            if best is None or res.objective < best.objective:
                best = res
        self.labels_ = best.labels.astype(np.int64)
        self.params_ = best.params
        self.cluster_centers_ = best.params.centers.astype(model.X.dtype)
        self.objective_ = float(best.objective)
        self.history_ = np.asarray(best.history, dtype=np.float64)
        self.n_iter_ = int(best.n_iter)
        self.converged_ = bool(best.converged)
        self.constraints_ = c
        self.em_result_ = best
        return self

    def fit_predict(self, X, y=None, **fit_params):
        """Fit and return ``labels_`` (same arguments as :meth:`fit`)."""
        return self.fit(X, y, **fit_params).labels_

    def predict(self, X):
        """Nearest cluster of new points under the fitted emission (no constraints).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "params_")
        family = get_emission(self._spec_emission())
        Xc = check_data(X, accept_sparse=family.accepts_sparse, keep_float32=True)
        validate_data(self, X, skip_check_array=True, reset=False)
        return nearest_clusters(family, family.prepare(Xc), self.params_, self._spec_normalizer())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = get_emission(self._spec_emission()).accepts_sparse
        return tags
