"""Hierarchical agglomerative clustering (single, complete, average link), with constraints.

Unconstrained, :class:`HAC` is SciPy's ``linkage`` cut at ``n_clusters`` clusters or at a
distance threshold. With must-links and cannot-links it is the constrained HAC of
Davidson & Ravi (2005), run by :func:`hmrf.classic.linkage.constrained_linkage`.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import validate_data

from .._validation import (
    Interval,
    Options,
    check_data,
    check_n_clusters,
    check_partial_labels,
    validate_params,
)
from ..constraints import Constraints, as_constraints
from ..exceptions import InfeasibleError
from .linkage import (
    LINKAGES,
    METRICS,
    condensed_distances,
    constrained_linkage,
    contiguous_labels,
    cut_linkage,
    repair_dead_end,
)

if TYPE_CHECKING:
    from typing import Any, Literal

    from matplotlib.axes import Axes
    from numpy.typing import ArrayLike
    from typing_extensions import Self

    from .._typing import MatrixLike, PairsLike

__all__ = ["HAC"]


class HAC(ClusterMixin, BaseEstimator):
    """Hierarchical agglomerative clustering, optionally under must-link/cannot-link constraints.

    Repeatedly merges the two closest clusters (Mooney's slides, "HAC Algorithm") under
    single (``min d(x, y)``), complete (``max``) or average link (UPGMA, the mean over
    ``x∈A, y∈B``), and cuts the tree at ``n_clusters`` or ``distance_threshold``. With
    constraints (Davidson & Ravi 2005) the must-link components are the leaves and no
    merge joins two cannot-linked points; when merging stops above ``n_clusters``, an
    exact repair moves the fewest points (:func:`~hmrf.classic.linkage.repair_dead_end`).

    Parameters
    ----------
    n_clusters : int or None, default=None
        Number of clusters to cut the tree at.
    linkage : {"single", "complete", "average"}, default="average"
    distance_threshold : float or None, default=None
        Apply every merge at distance ``<= distance_threshold`` (SciPy's
        ``fcluster(..., criterion="distance")``).
    metric : {"euclidean", "sqeuclidean", "cosine", "cityblock"}, default="euclidean"
        Distance between points (``"cosine"``: ``1 - cos``, the slides' text setting).
    max_samples : int, default=10000
        Largest ``n`` accepted: HAC stores all ``n(n-1)/2`` pairwise distances.
    time_limit : float, default=60.0
        Seconds for the repair of a dead end.

    Attributes
    ----------
    labels_ : ndarray (n,)
        Contiguous cluster labels, in order of first point.
    linkage_matrix_ : ndarray (r, 4)
        The merges in SciPy's format over the ``n_leaves_`` leaves (the points, or the
        must-link components), sorted by height; ``r < n_leaves_ - 1`` when
        cannot-links stop the merging early.
    leaves_ : ndarray (n,)
        Leaf of every point (its must-link component).
    leaf_sizes_ : ndarray of int
    n_merges_ : int
        Rows of ``linkage_matrix_`` applied to obtain ``labels_``.
    n_moved_ : int
        Points the repair of a dead end moved out of their cluster.
    n_clusters_, n_leaves_, constraints_, n_features_in_

    Raises
    ------
    InconsistentConstraintsError
        A cannot-link joins two points that must-links (or their closure) join.
    InfeasibleError
        ``n_clusters`` exceeds the number of must-link components, or no
        ``n_clusters`` clusters keep every cannot-link.
    ConstraintSearchError
        The repair reached ``time_limit`` without an answer.

    Notes
    -----
    Unconstrained fits call :func:`scipy.cluster.hierarchy.linkage`; the constrained
    loop is O(n²) in time and memory. Whether ``k`` clusters can keep a set of
    cannot-links is NP-complete (Davidson & Ravi 2005): the repair decides it by a
    mixed-integer program over the cannot-linked leaves.

    References
    ----------
    Davidson & Ravi (2005), "Agglomerative hierarchical clustering with constraints:
    theoretical and empirical results", PKDD. Mooney, CS 391L clustering slides
    ("Hierarchical Agglomerative Clustering"). Lance & Williams (1967).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf import HAC
    >>> X = np.array([[0.0], [0.1], [1.0], [1.1], [5.0]])
    >>> HAC(n_clusters=2, linkage="single").fit(X).labels_.tolist()
    [0, 0, 0, 0, 1]
    >>> HAC(n_clusters=2, linkage="single").fit(X, cannot_link=[(0, 3)]).labels_.tolist()
    [0, 0, 1, 1, 1]
    """

    _parameter_constraints = {
        "n_clusters": [Interval(Integral, 1, None), Options(None)],
        "linkage": [Options(*LINKAGES)],
        "distance_threshold": [Interval(Real, 0, float("inf"), closed="left"), Options(None)],
        "metric": [Options(*METRICS)],
        "max_samples": [Interval(Integral, 2, None)],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, n_clusters: int | None = None, *,
                 linkage: Literal["single", "complete", "average"] = "average",
                 distance_threshold: float | None = None,
                 metric: Literal["euclidean", "sqeuclidean", "cosine", "cityblock"] = "euclidean",
                 max_samples: int = 10_000, time_limit: float = 60.0) -> None:
        self.n_clusters = n_clusters
        self.linkage = linkage
        self.distance_threshold = distance_threshold
        self.metric = metric
        self.max_samples = max_samples
        self.time_limit = time_limit

    def _check_params(self):
        validate_params(self)
        if (self.n_clusters is None) == (self.distance_threshold is None):
            raise ValueError("HAC: give exactly one of n_clusters and distance_threshold; got "
                             f"n_clusters={self.n_clusters!r}, "
                             f"distance_threshold={self.distance_threshold!r}.")

    def fit(self, X: MatrixLike, y: ArrayLike | None = None, *, must_link: PairsLike | None = None,
            cannot_link: PairsLike | None = None, constraints: Constraints | None = None) -> Self:
        """Build the hierarchy and cut it.

        ``y`` (partial labels, ``-1`` for unlabelled) gives must-links within and
        cannot-links across classes; ``constraints`` is the alternative to the pair lists.
        """
        self._check_params()
        Xc = check_data(X)
        validate_data(self, X, skip_check_array=True, reset=True)
        n = Xc.shape[0]
        if n > self.max_samples:
            gb = 4.0 * n * n / 1e9
            raise ValueError(
                f"HAC stores all n(n-1)/2 pairwise distances: {gb:.1f} GB for n={n}, above "
                f"max_samples={self.max_samples}. Raise max_samples if the memory is there, "
                "or cluster with k-means from Buckshot centres (hmrf.classic.buckshot_centers).")
        if self.n_clusters is not None:
            check_n_clusters(self.n_clusters, n)
        c = as_constraints(constraints, must_link, cannot_link, n=n)
        if y is not None:
            labels = check_partial_labels(y, n)
            if np.any(labels >= 0):
                c = c + Constraints.from_labels(labels)
        D = condensed_distances(Xc, self.metric)
        if len(c) == 0:
            Z = self._scipy_linkage(D, n)
            leaves, leaf_sizes = np.arange(n), np.ones(n)
        else:
            leaves = np.asarray(c.component_labels(), dtype=np.int64)
            Z, leaf_sizes = constrained_linkage(D, n, self.linkage, leaves, c.cannot_link)
        del D
        n_leaves = leaf_sizes.shape[0]
        n_merges = self._n_merges(Z, n_leaves, leaves, c)
        leaf_labels = cut_linkage(Z, n_leaves, n_merges)
        self.n_moved_ = 0
        if self.n_clusters is not None and n_leaves - n_merges > int(self.n_clusters):  # a dead end
            cl = c.cannot_link
            leaf_labels, self.n_moved_ = repair_dead_end(
                leaf_labels, leaf_sizes, np.column_stack([leaves[cl[:, 0]], leaves[cl[:, 1]]]),
                int(self.n_clusters), self.time_limit)
        self.labels_ = contiguous_labels(leaf_labels[leaves])
        self.n_clusters_ = int(self.labels_.max()) + 1
        self.linkage_matrix_ = Z
        self.leaves_ = leaves
        self.leaf_sizes_ = leaf_sizes.astype(np.int64)
        self.n_leaves_ = int(n_leaves)
        self.n_merges_ = int(n_merges)
        self.constraints_ = c
        return self

    def _scipy_linkage(self, D, n):
        if n == 1:
            return np.empty((0, 4))
        from scipy.cluster.hierarchy import linkage

        return linkage(D, method=self.linkage)

    def _n_merges(self, Z, n_leaves, leaves, c) -> int:
        if self.n_clusters is None:
            # cophenetic heights (a merge is never below its children's), as fcluster uses
            heights = np.maximum.accumulate(Z[:, 2]) if Z.shape[0] else Z[:, 2]
            return int(np.searchsorted(heights, float(self.distance_threshold), side="right"))
        k = int(self.n_clusters)
        if k > n_leaves:
            raise InfeasibleError(
                f"the must-links join the points into {n_leaves} groups, fewer than "
                f"n_clusters={k}; HAC only merges, so it cannot split a must-linked group.")
        return min(n_leaves - k, Z.shape[0])  # fewer: a dead end, repaired in fit

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def plot_dendrogram(self, ax: Axes | None = None, **kwargs: Any) -> Axes:
        """Draw the fitted tree; see :func:`hmrf.classic.plot_dendrogram`."""
        from .dendrogram import plot_dendrogram

        return plot_dendrogram(self, ax=ax, **kwargs)
