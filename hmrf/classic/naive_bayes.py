"""Naive-Bayes EM: a multinomial mixture over word counts, unsupervised or semi-supervised.

The model of Nigam, McCallum, Thrun & Mitchell (2000): a document ``x`` (a row of word
counts) is drawn from class ``c`` with probability ``π_c``, then word by word from
``θ_c``, so that ``log P(c, x | θ) = log π_c + Σ_w x_w log θ_cw`` (up to the
multinomial coefficient). It is fitted by the soft EM loop (:func:`hmrf.em.run_soft_em`)
on an HMRF with the :class:`~hmrf.emissions.Multinomial` family, labelled documents
clamped; must-links and cannot-links are the HMRF's Potts factors.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    Check,
    Interval,
    Options,
    check_data,
    check_partial_labels,
    check_random_state,
    validate_params,
)
from ..constraints import as_constraints
from ..em.soft import run_soft_em, update_params
from ..emissions import Multinomial, inner_products
from ..inference.posteriors import softmax_free_energy
from ..model import HMRF

if TYPE_CHECKING:
    from typing import Any, Literal

    from numpy.typing import ArrayLike, NDArray
    from typing_extensions import Self

    from .._typing import MatrixLike, PairsLike, RandomLike
    from ..constraints import Constraints

__all__ = ["NaiveBayesEM", "log_joint"]


def _finite_nonnegative(value) -> bool:
    return Interval(Real, 0, None).matches(value) and np.isfinite(float(value))


def log_joint(X: MatrixLike, log_prior: Any, log_theta: Any) -> np.ndarray:
    """``log π_c + Σ_w x_iw log θ_cw`` for every document and class, shape (n, k).

    One sparse-dense product ``X log θᵀ``; the multinomial coefficient
    ``|x|! / Π_w x_w!`` is left out (it does not depend on the class or on θ).
    """
    out = inner_products(X, log_theta)
    out += log_prior[None, :]
    return out


class NaiveBayesEM(ClusterMixin, BaseEstimator):
    """Multinomial naive Bayes fitted by EM on labelled and unlabelled documents.

    Without labels, the "Naive Bayes EM" soft clustering of text; with some (``y``,
    ``-1`` for unlabelled documents), the semi-supervised EM of Nigam et al. (2000):
    labelled documents are frozen at their class, unlabelled ones weigh ``λ =
    unlabeled_weight`` in the M-step. With every document labelled and
    ``prior_smoothing=0``: ``MultinomialNB``.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of classes ``k``; labels in ``y`` are ``0..k-1``.
    alpha : float, default=1.0
        Laplace pseudo-count of every word in every class (> 0).
    unlabeled_weight : float, default=1.0
        ``λ`` of EM-λ (Nigam et al. 2000): the weight of an unlabelled document
        against a labelled one; ``0`` ignores unlabelled data.
    prior_smoothing : float, default=1.0
        Pseudo-count ``β`` of every class in the class prior (Nigam et al. use
        1; ``0`` gives the maximum-likelihood prior of ``MultinomialNB``).
    init : {"auto", "labeled", "random"}, default="auto"
        Responsibilities the first M-step sees. ``"labeled"``: labelled documents only
        (the slides' semi-supervised EM; needs labels). ``"random"``: every unlabelled
        document in a random class (the slides' unsupervised NB-EM). ``"auto"``:
        ``"labeled"`` when every class has a labelled document, else ``"random"``.
    n_init : int, default=1
        Runs from different random initialisations; the highest log posterior wins.
    max_iter : int, default=100
        EM iterations (``0``: the initial model, e.g. naive Bayes on the labels alone).
    tol : float, default=1e-6
        EM stops when the log posterior improves by at most ``tol`` times its
        previous absolute value.
    random_state : int, RandomState, Generator or None, default=None

    Attributes
    ----------
    labels_ : ndarray (n,)
        Label of every labelled document, the most probable class of the others.
    responsibilities_ : ndarray (n, k)
        ``P(c | x_i)`` at the fitted parameters (one-hot for labelled documents).
    class_log_prior_ : ndarray (k,)
        ``log π_c``.
    feature_log_prob_ : ndarray (k, d)
        ``log θ_cw`` (scikit-learn's ``MultinomialNB`` names).
    cluster_centers_ : ndarray (k, d)
        ``θ_c``, the KL centre of the class.
    log_likelihood_ : float
        Log posterior ``ℓ(θ)`` of the fitted parameters (Notes).
    log_likelihood_history_ : ndarray
        Its value at the start and after every iteration of the best run (non-decreasing).
    n_iter_, converged_, n_features_in_

    Notes
    -----
    The M-step is Nigam et al.'s Laplace-smoothed estimate on soft counts, the
    unlabelled documents weighted by λ (their EM-λ), with ``Λ(i)`` = 1 (labelled) or λ::

        θ_cw = (α + N_cw) / (α d + Σ_w' N_cw'),    N_cw = Σ_i Λ(i) P(c | x_i) x_iw
        π_c  = (β + Σ_i Λ(i) P(c | x_i)) / (k β + Σ_i Λ(i))

    the MAP estimates under Dirichlet(α + 1) and Dirichlet(β + 1) priors, so EM never
    decreases the λ-weighted log posterior

        ℓ(θ) = Σ_{i labelled} log P(y_i, x_i | θ) + λ Σ_{i unlabelled} log Σ_c P(c, x_i | θ)
               + α Σ_c Σ_w log θ_cw + β Σ_c log π_c,

    the negative of the soft EM loop's free energy plus prior term at the exact
    posteriors (:mod:`hmrf.em.soft`). With must-links and cannot-links (Potts penalties
    in the units of the log-likelihood), the constrained documents' terms are replaced by
    the negative mean-field free energy of the costs ``-Λ(i) log P(c, x_i | θ)`` and the
    factors (``docs/classic.md``).

    References
    ----------
    Nigam, McCallum, Thrun & Mitchell (2000), "Text classification from labeled and
    unlabeled documents using EM", Machine Learning 39. Mooney, CS 391L
    clustering slides ("Naive Bayes EM", "Semi-Supervised EM").

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import NaiveBayesEM
    >>> X = np.array([[3, 0, 1], [4, 1, 0], [0, 3, 2], [1, 4, 3], [5, 0, 0], [0, 5, 4]])
    >>> y = np.array([0, -1, 1, -1, -1, -1])
    >>> NaiveBayesEM(n_clusters=2).fit(X, y).labels_.tolist()
    [0, 0, 1, 1, 0, 1]
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None)],
        "alpha": [Check(lambda v: Interval(Real, 0, None, closed="neither").matches(v)
                        and np.isfinite(float(v)), "a finite number > 0")],
        "unlabeled_weight": [Check(_finite_nonnegative, "a finite number >= 0")],
        "prior_smoothing": [Check(_finite_nonnegative, "a finite number >= 0")],
        "init": [Options("auto", "labeled", "random")],
        "n_init": [Interval(Integral, 1, None)],
        "max_iter": [Interval(Integral, 0, None)],
        "tol": [Check(_finite_nonnegative, "a finite number >= 0")],
    }

    def __init__(self, n_clusters: int = 8, *, alpha: float = 1.0, unlabeled_weight: float = 1.0,
                 prior_smoothing: float = 1.0, init: Literal["auto", "labeled", "random"] = "auto",
                 n_init: int = 1, max_iter: int = 100, tol: float = 1e-6,
                 random_state: RandomLike = None) -> None:
        self.n_clusters = n_clusters
        self.alpha = alpha
        self.unlabeled_weight = unlabeled_weight
        self.prior_smoothing = prior_smoothing
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _check_X(self, X, reset):
        """``X`` checked once: the family's ``prepare`` refuses negative counts."""
        Xc = check_data(X)
        validate_data(self, X, skip_check_array=True, reset=reset)
        return Xc

    def _initial_resp(self, labels, k, rng):
        lab = labels >= 0
        resp = np.zeros((labels.shape[0], k))
        resp[np.flatnonzero(lab), labels[lab]] = 1.0
        mode = self.init
        if mode == "auto":
            mode = "labeled" if np.unique(labels[lab]).size == k else "random"
        if mode == "labeled":
            if not lab.any():
                raise ValueError("init='labeled' needs labelled documents (y >= 0); "
                                 "use init='random' for unsupervised EM.")
            return resp
        unl = np.flatnonzero(~lab)
        resp[unl, rng.integers(k, size=unl.size)] = 1.0
        return resp

    def fit(self, X: MatrixLike, y: ArrayLike | None = None, *, must_link: PairsLike | None = None,
            cannot_link: PairsLike | None = None, constraints: Constraints | None = None) -> Self:
        """Fit the mixture by EM.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_documents, n_words)
            Non-negative word counts (never densified).
        y : array-like of shape (n_documents,), optional
            Class ``0..k-1`` of labelled documents, ``-1`` for unlabelled ones.
        must_link, cannot_link, constraints : optional
            Pairwise supervision between documents (class Notes).
        """
        validate_params(self)
        Xc = self._check_X(X, reset=True)
        n, k = Xc.shape[0], int(self.n_clusters)
        labels = np.full(n, -1, dtype=np.int64) if y is None else check_partial_labels(y, n)
        if labels.max(initial=-1) >= k:
            i = int(np.argmax(labels))
            raise ValueError(f"y[{i}] = {labels[i]} but n_clusters={k}; labels must be in 0..{k - 1} "
                             "or -1 for unlabelled.")
        weights = np.where(labels >= 0, 1.0, float(self.unlabeled_weight))
        if weights.sum() <= 0:
            raise ValueError("no document carries weight: give labels (y >= 0) or "
                             "unlabeled_weight > 0.")
        c = as_constraints(constraints, must_link, cannot_link, n=n)
        model = HMRF(Xc, k, Multinomial(self.alpha), constraints=c if len(c) else None, clamped=labels,
                     validated=True)
        beta, rng = float(self.prior_smoothing), check_random_state(self.random_state)
        best = None
        for _ in range(int(self.n_init)):
            resp = self._initial_resp(labels, k, rng) * weights[:, None]
            params = update_params(model, model.emission.statistics(model.X, resp, k), None, None, beta)
            run = run_soft_em(model, params, rng=rng, max_iter=int(self.max_iter) + 1, tol=float(self.tol),
                              row_weights=weights, mixing=beta)
            if best is None or run.objective < best.objective:
                best = run
        resp = softmax_free_energy(model.unary(best.params))[0]
        last = best.trace[-1]
        if last["nodes"].size:
            resp[last["nodes"]] = last["posteriors"]
        self.responsibilities_ = resp
        self.labels_ = np.argmax(resp, axis=1).astype(np.int64)
        self.class_log_prior_ = np.log(best.params.weights)
        self.feature_log_prob_ = best.params.log_centers
        self.cluster_centers_ = best.params.centers
        self.log_likelihood_history_ = -np.asarray(best.history)
        self.log_likelihood_ = -best.objective
        self.n_iter_ = int(best.n_iter) - 1
        self.converged_ = bool(best.converged)
        return self

    def _joint(self, X):
        check_is_fitted(self, "feature_log_prob_")
        Xc = Multinomial(self.alpha).prepare(self._check_X(X, reset=False))
        return log_joint(Xc, self.class_log_prior_, self.feature_log_prob_)

    def predict_proba(self, X: MatrixLike) -> NDArray[np.float64]:
        """Posterior ``P(c | x)`` of new documents, shape (n, k); rows sum to one."""
        return softmax_free_energy(-self._joint(X))[0]

    def predict(self, X: MatrixLike) -> NDArray[Any]:
        """Most probable class of new documents."""
        return np.argmax(self._joint(X), axis=1).astype(np.int64)

    def score_samples(self, X: MatrixLike) -> NDArray[np.float64]:
        """``log P(x_i | θ) = log Σ_c π_c Π_w θ_cw^{x_iw}`` of every document (without the
        multinomial coefficient and the length model, which do not depend on θ)."""
        return logsumexp(self._joint(X), axis=1)

    def score(self, X: MatrixLike, y: ArrayLike | None = None) -> float:
        """Mean :meth:`score_samples` over the documents of ``X``."""
        return float(np.mean(self.score_samples(X)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags
