"""Naive-Bayes EM: a multinomial mixture over word counts, unsupervised or semi-supervised.

The model of Nigam, McCallum, Thrun & Mitchell (2000) (and the "Naive Bayes EM"
and "Semi-Supervised EM" slides of Mooney's clustering lecture): a document ``x`` (a row
of word counts) is drawn from class ``c`` with probability ``π_c`` and then word by word
from the class's word distribution ``θ_c``, so that

    log P(c, x | θ) = log π_c + Σ_w x_w log θ_cw          (up to the multinomial coefficient)

EM alternates a soft E-step (posterior ``P(c | x_i)`` of every unlabelled document) and
an M-step that re-estimates ``π`` and ``θ`` from soft counts with Laplace smoothing.
Labelled documents keep their class ("frozen"); unlabelled ones weigh ``λ``.

Everything is one sparse product per step: the E-step is ``X θ_logᵀ`` (n × k), the
M-step ``Rᵀ X`` (k × d); ``X`` is never densified.

Must-links and cannot-links between documents enter through the soft HMRF
(:mod:`hmrf.em.soft`): the E-step replaces :func:`posteriors` on the constrained
documents by mean-field posteriors of an HMRF whose unary costs are
``-λ_i log P(c, x_i | θ)`` (:func:`log_joint`, labelled documents clamped to their
class) and whose factors are the Potts constraints; the objective becomes the negative
variational free energy, which EM still never decreases.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._params import Check, Interval, Options, validate_params
from .._validation import check_data, check_nonnegative, check_partial_labels, check_random_state
from ..constraints import as_constraints
from ..emissions.base import cluster_sums, inner_products
from ..graph import PairwiseGraph
from ..inference.meanfield import MeanField
from ..model import clamp_rows

if TYPE_CHECKING:
    from typing import Any, Literal

    from numpy.typing import ArrayLike, NDArray
    from scipy import sparse
    from typing_extensions import Self

    from .._typing import MatrixLike, PairsLike, RandomLike
    from ..constraints import Constraints

__all__ = ["NaiveBayesEM", "NaiveBayesRun", "m_step", "log_joint", "posteriors"]


def _finite_nonnegative(value) -> bool:
    return Interval(Real, 0, None).matches(value) and np.isfinite(float(value))


def m_step(X: NDArray[Any] | sparse.csr_matrix, resp: NDArray[Any], weights: NDArray[Any], alpha: float = 1.0,
           prior_smoothing: float = 1.0) -> tuple[NDArray[Any], NDArray[Any]]:
    """Laplace-smoothed class priors and word distributions from soft counts.

    Parameters
    ----------
    X : ndarray or csr_matrix (n, d)
        Word counts.
    resp : ndarray (n, k)
        Soft class labels ``P(c | x_i)`` (one-hot rows for labelled documents).
    weights : ndarray (n,)
        Weight ``Λ(i)`` of every document (1 labelled, λ unlabelled).
    alpha : float, default=1.0
        Pseudo-count added to every word of every class (1 = Laplace).
    prior_smoothing : float, default=1.0
        Pseudo-count added to every class's document count.

    Returns
    -------
    log_prior : ndarray (k,)
        ``log π_c``.
    log_theta : ndarray (k, d)
        ``log θ_cw``.

    Notes
    -----
    Nigam et al. (2000): the Laplace-smoothed naive-Bayes estimates on soft counts, the
    unlabelled documents weighted by λ (their EM-λ)::

        θ_cw = (α + N_cw) / (α d + Σ_w' N_cw'),    N_cw = Σ_i Λ(i) P(c | x_i) x_iw
        π_c  = (β + Σ_i Λ(i) P(c | x_i)) / (k β + Σ_i Λ(i))

    ``N = (Λ R)ᵀ X`` is one sparse product (:func:`hmrf.emissions.cluster_sums`).
    These are the MAP estimates under Dirichlet(α + 1) and Dirichlet(β + 1) priors,
    so EM increases the log posterior of ``NaiveBayesEM._objective``.
    """
    wr = resp * weights[:, None]
    counts, mass = cluster_sums(X, wr, resp.shape[1])
    d = X.shape[1]
    with np.errstate(divide="ignore"):
        log_theta = np.log(counts + alpha) - np.log(counts.sum(axis=1) + alpha * d)[:, None]
        log_prior = np.log(mass + prior_smoothing) - np.log(mass.sum() + prior_smoothing * mass.shape[0])
    return log_prior, log_theta


def log_joint(X: MatrixLike, log_prior: Any, log_theta: Any) -> np.ndarray:
    """``log π_c + Σ_w x_iw log θ_cw`` for every document and class, shape (n, k).

    One sparse-dense product ``X log θᵀ``; the multinomial coefficient
    ``|x|! / Π_w x_w!`` is left out (it does not depend on the class or on θ).
    """
    out = inner_products(X, log_theta)
    out += log_prior[None, :]
    return out


def posteriors(joint: NDArray[Any],
               frozen_labels: NDArray[Any] | None = None) -> tuple[NDArray[Any], NDArray[Any]]:
    """Soft E-step: ``P(c | x_i)`` from the log joint, in log space.

    Parameters
    ----------
    joint : ndarray (n, k)
        :func:`log_joint`.
    frozen_labels : ndarray (n,), optional
        Class of each labelled document, ``-1`` for unlabelled; labelled rows of the
        result are one-hot at their class.

    Returns
    -------
    resp : ndarray (n, k)
        Rows sum to one.
    log_evidence : ndarray (n,)
        ``log Σ_c P(c, x_i | θ)`` (stable log-sum-exp).
    """
    log_evidence = logsumexp(joint, axis=1)
    resp = np.exp(joint - log_evidence[:, None])
    if frozen_labels is not None:
        lab = np.flatnonzero(frozen_labels >= 0)
        resp[lab] = 0.0
        resp[lab, frozen_labels[lab]] = 1.0
    return resp, log_evidence


@dataclass(frozen=True)
class NaiveBayesRun:
    """Outcome of one EM run of :class:`NaiveBayesEM`.

    Attributes
    ----------
    resp : ndarray (n, k)
        ``P(c | x_i)`` at the final parameters (one-hot for labelled documents).
    log_prior : ndarray (k,)
        ``log π_c``.
    log_theta : ndarray (k, d)
        ``log θ_cw``.
    history : ndarray
        The log posterior ``ℓ(θ)`` at the start and after every iteration (non-decreasing).
    n_iter : int
    converged : bool
    """

    resp: np.ndarray
    log_prior: np.ndarray
    log_theta: np.ndarray
    history: np.ndarray
    n_iter: int
    converged: bool

    @property
    def objective(self) -> float:
        """``ℓ(θ)`` of the final parameters."""
        return float(self.history[-1])


class NaiveBayesEM(ClusterMixin, BaseEstimator):
    """Multinomial naive Bayes fitted by EM on labelled and unlabelled documents.

    Unsupervised (no labels), it is the slides' "Naive Bayes EM" soft clustering of text;
    with some labels (``y`` with ``-1`` for unlabelled documents) it is the
    semi-supervised EM of Nigam et al. (2000): labelled documents are frozen at their
    class, unlabelled ones are relabelled probabilistically at every E-step and count
    with weight ``λ = unlabeled_weight`` in the M-step. With every document labelled it
    is scikit-learn's ``MultinomialNB``.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of classes ``k``; labels in ``y`` are ``0..k-1``.
    alpha : float, default=1.0
        Laplace pseudo-count of every word in every class (> 0).
    unlabeled_weight : float, default=1.0
        ``λ`` of EM-λ (Nigam et al. 2000): the weight of an unlabelled document
        against a labelled one. When unlabelled documents vastly outnumber labelled ones,
        ``λ < 1`` keeps the labels from being swamped. ``0`` ignores unlabelled data.
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
        EM stops when the log posterior improves by less than ``tol`` times its
        absolute value.
    random_state : int, RandomState, Generator or None, default=None

    Attributes
    ----------
    labels_ : ndarray (n,)
        Class of every training document: its label if labelled, else the most
        probable class.
    responsibilities_ : ndarray (n, k)
        ``P(c | x_i)`` at the fitted parameters (one-hot for labelled documents).
    class_log_prior_ : ndarray (k,)
        ``log π_c``.
    feature_log_prob_ : ndarray (k, d)
        ``log θ_cw`` (scikit-learn's ``MultinomialNB`` names).
    cluster_centers_ : ndarray (k, d)
        ``θ_c``: each class's word distribution, the KL centre of the class (see Notes).
    log_likelihood_ : float
        Log posterior of the fitted parameters (objective below).
    log_likelihood_history_ : ndarray
        Its value at the start and after every iteration of the best run
        (non-decreasing).
    n_iter_ : int
    converged_ : bool
    n_features_in_ : int

    Notes
    -----
    EM maximises the λ-weighted log posterior of Nigam et al. (2000)::

        ℓ(θ) = Σ_{i labelled} log P(y_i, x_i | θ) + λ Σ_{i unlabelled} log Σ_c P(c, x_i | θ)
               + α Σ_c Σ_w log θ_cw + β Σ_c log π_c

    (the log Dirichlet priors that make the Laplace-smoothed M-step the MAP step),
    dropping the multinomial coefficients, which depend on neither θ nor the class.

    Link to the KL emission of the HMRF: with ``p_i = x_i / |x_i|``,
    ``Σ_w x_iw log θ_cw = -|x_i| KL(p_i ‖ θ_c) + |x_i| Σ_w p_iw log p_iw``, so the
    class-conditional log-likelihood is ``-|x_i|`` times the KL divergence of
    :class:`hmrf.emissions.KL` to the centre ``θ_c``, plus a per-document constant:
    the multinomial mixture is the exponential family behind KL clustering (Banerjee
    et al. 2005). See ``docs/classic.md`` for the derivation.

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

    # ------------------------------------------------------------------ internals
    def _check_X(self, X, reset):
        Xc = check_data(X)
        validate_data(self, X, skip_check_array=True, reset=reset)
        # word counts (or any non-negative weights, e.g. TF-IDF) only
        check_nonnegative(Xc, "Negative values in data: naive Bayes needs non-negative word counts")
        return Xc

    def _objective(self, joint, log_evidence, labels, weights, log_prior, log_theta) -> float:
        """ℓ(θ) of the class docstring at the parameters that produced ``joint``."""
        lab = np.flatnonzero(labels >= 0)
        unl = np.flatnonzero(labels < 0)
        value = joint[lab, labels[lab]].sum() + (weights[unl] * log_evidence[unl]).sum()
        value += float(self.alpha) * log_theta.sum()
        if self.prior_smoothing > 0:
            value += float(self.prior_smoothing) * log_prior.sum()
        return float(value)

    def _initial_resp(self, labels, k, rng):
        n = labels.shape[0]
        lab = labels >= 0
        resp = np.zeros((n, k))
        resp[np.flatnonzero(lab), labels[lab]] = 1.0
        mode = self.init
        if mode == "auto":
            every_class = np.unique(labels[lab]).size == k
            mode = "labeled" if every_class else "random"
        if mode == "labeled":
            if not lab.any():
                raise ValueError("init='labeled' needs labelled documents (y >= 0); "
                                 "use init='random' for unsupervised EM.")
            return resp
        unl = np.flatnonzero(~lab)
        resp[unl, rng.integers(k, size=unl.size)] = 1.0
        return resp

    def _run(self, X, labels, weights, resp, graph=None) -> NaiveBayesRun:
        alpha, beta = float(self.alpha), float(self.prior_smoothing)
        log_prior, log_theta = m_step(X, resp, weights, alpha, beta)
        history = []
        converged = False
        n_iter = 0
        nodes, sub = graph.constrained_part() if graph is not None else (np.empty(0, np.int64), None)
        q_c = None
        while True:
            joint = log_joint(X, log_prior, log_theta)
            resp, log_evidence = posteriors(joint, labels)
            objective = self._objective(joint, log_evidence, labels, weights, log_prior, log_theta)
            if nodes.size:
                q_c, correction = self._constrained_posteriors(joint, log_evidence, labels, weights,
                                                               nodes, sub, q_c)
                resp[nodes] = q_c
                objective += correction
            history.append(objective)
            if len(history) > 1 and history[-1] - history[-2] <= float(self.tol) * abs(history[-1]):
                converged = True
                break
            if n_iter == self.max_iter:
                break
            log_prior, log_theta = m_step(X, resp, weights, alpha, beta)
            n_iter += 1
        return NaiveBayesRun(resp=resp, log_prior=log_prior, log_theta=log_theta,
                             history=np.asarray(history), n_iter=n_iter, converged=converged)

    @staticmethod
    def _constrained_posteriors(joint, log_evidence, labels, weights, nodes, sub, q_prev):
        """Mean-field posteriors of the constrained documents and the change of the
        objective: their independent terms out, minus their free energy in."""
        U = clamp_rows(-weights[nodes, None] * joint[nodes], labels[nodes])
        res = MeanField().marginals(U, sub, init=q_prev)
        lab = labels[nodes]
        independent = np.where(lab >= 0, joint[nodes, np.maximum(lab, 0)],
                               weights[nodes] * log_evidence[nodes])
        return res.marginals, float(-res.free_energy - independent.sum())

    # ------------------------------------------------------------------------ API
    def fit(self, X: MatrixLike, y: ArrayLike | None = None, *, must_link: PairsLike | None = None,
            cannot_link: PairsLike | None = None, constraints: Constraints | None = None) -> Self:
        """Fit the mixture by EM.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_documents, n_words)
            Non-negative word counts (never densified).
        y : array-like of shape (n_documents,), optional
            Class ``0..k-1`` of labelled documents, ``-1`` for unlabelled ones
            (scikit-learn's semi-supervised convention); ``None``: all unlabelled.
        must_link, cannot_link : sequence of (i, j) pairs, optional
        constraints : Constraints, optional
            Pairwise supervision between documents (module docstring): Potts penalties
            with the constraints' weights, in the units of the log-likelihood.

        Returns
        -------
        self
        """
        validate_params(self)
        Xc = self._check_X(X, reset=True)
        n, k = Xc.shape[0], int(self.n_clusters)
        labels = np.full(n, -1, dtype=np.int64) if y is None else check_partial_labels(y, n)
        if labels.max(initial=-1) >= k:
            i = int(np.argmax(labels))
            raise ValueError(f"y[{i}] = {labels[i]} but n_clusters={k}; labels must be in 0..{k - 1} "
                             "or -1 for unlabelled.")
        lab = labels >= 0
        weights = np.where(lab, 1.0, float(self.unlabeled_weight))
        if weights.sum() <= 0:
            raise ValueError("no document carries weight: give labels (y >= 0) or "
                             "unlabeled_weight > 0.")
        c = as_constraints(constraints, must_link, cannot_link, n=n)
        graph = PairwiseGraph.from_constraints(c) if len(c) else None
        rng = check_random_state(self.random_state)
        best = None
        for _ in range(int(self.n_init)):
            run = self._run(Xc, labels, weights, self._initial_resp(labels, k, rng), graph)
            if best is None or run.objective > best.objective:
                best = run
        self.responsibilities_ = best.resp
        self.labels_ = np.where(lab, labels, np.argmax(best.resp, axis=1)).astype(np.int64)
        self.class_log_prior_ = best.log_prior
        self.feature_log_prob_ = best.log_theta
        self.cluster_centers_ = np.exp(best.log_theta)
        self.log_likelihood_history_ = best.history
        self.log_likelihood_ = best.objective
        self.n_iter_ = int(best.n_iter)
        self.converged_ = bool(best.converged)
        return self

    def _joint(self, X):
        check_is_fitted(self, "feature_log_prob_")
        Xc = self._check_X(X, reset=False)
        return log_joint(Xc, self.class_log_prior_, self.feature_log_prob_)

    def predict_proba(self, X: MatrixLike) -> NDArray[np.float64]:
        """Posterior ``P(c | x)`` of new documents, shape (n, k); rows sum to one."""
        return posteriors(self._joint(X))[0]

    def predict(self, X: MatrixLike) -> NDArray[Any]:
        """Most probable class of new documents."""
        return np.argmax(self._joint(X), axis=1).astype(np.int64)

    def score_samples(self, X: MatrixLike) -> NDArray[np.float64]:
        """``log P(x_i | θ) = log Σ_c π_c Π_w θ_cw^{x_iw}`` of every document.

        The probability of the document's word sequence (its bag of words without the
        multinomial coefficient and the length model, which do not depend on θ).
        """
        return logsumexp(self._joint(X), axis=1)

    def score(self, X: MatrixLike, y: ArrayLike | None = None) -> float:
        """Mean :meth:`score_samples` over the documents of ``X``."""
        return float(np.mean(self.score_samples(X)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags
