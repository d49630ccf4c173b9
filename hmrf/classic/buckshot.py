"""Buckshot initial centres (Cutting, Karger, Pedersen & Tukey 1992)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform

from .._validation import check_data, check_n_clusters, check_random_state
from ..emissions.base import cluster_sums
from ..emissions.euclidean import SquaredEuclidean
from ..emissions.vmf import VonMisesFisher
from .linkage import cut_linkage

if TYPE_CHECKING:

    from numpy.typing import NDArray

    from .._typing import MatrixLike, RandomLike
    from ..emissions.base import EmissionFamily

__all__ = ["buckshot_centers", "sample_size"]

#: Dense (block, d) centre arrays of a general family stay below this many entries.
_BLOCK_ENTRIES = 2**22


def sample_size(n_samples: int, n_clusters: int) -> int:
    """``min(n, ⌈√(k n)⌉)``: the Buckshot sample (never fewer than ``k`` points)."""
    return min(n_samples, max(n_clusters, math.isqrt(n_clusters * n_samples - 1) + 1))


def _gram(Xs) -> np.ndarray:
    G = Xs @ Xs.T
    return G.toarray() if sp.issparse(G) else np.asarray(G)


def _dissimilarities(Xs, family) -> np.ndarray:
    """Symmetric (s, s) dissimilarities between the sample points under ``family``."""
    s = Xs.shape[0]
    if type(family) is SquaredEuclidean:
        G = _gram(Xs)
        sq = np.diag(G).copy()
        D = np.maximum(sq[:, None] + sq[None, :] - 2.0 * G, 0.0)
    elif type(family) is VonMisesFisher:
        D = np.clip(1.0 - _gram(Xs), 0.0, 2.0)  # rows are unit vectors (prepared data)
    else:
        # any family: D(x_i, μ(x_j)) with x_j projected into the family's domain as a
        # centre (smoothed for KL), a block of dense centres at a time, then symmetrised
        D = np.empty((s, s))
        block = max(1, _BLOCK_ENTRIES // max(1, Xs.shape[1]))
        for lo in range(0, s, block):
            rows = Xs[lo:lo + block]
            rows = rows.toarray() if sp.issparse(rows) else rows
            D[:, lo:lo + block] = family.divergence(Xs, family.init_params(Xs, rows).centers)
        D = 0.5 * (D + D.T)
    np.fill_diagonal(D, 0.0)
    return D


def buckshot_centers(X: MatrixLike, n_clusters: int, rng: RandomLike = None,
                     family: EmissionFamily | None = None, *,
                     return_sample: bool = False,
                     ) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Initial centres by Buckshot: group-average HAC on a random sample of ``⌈√(k n)⌉`` points.

    ``s = min(n, ⌈√(k n)⌉)`` rows of ``X`` (rows the family has prepared,
    :meth:`~hmrf.emissions.EmissionFamily.prepare`, as the estimators pass them; sparse
    stays sparse) are drawn by ``rng`` without replacement,
    clustered by :func:`scipy.cluster.hierarchy.linkage` with ``method="average"``
    (UPGMA), cut at ``k`` clusters, and the centres are the clusters' means: O(k n d).
    The dissimilarity is squared Euclidean when ``family`` is omitted, ``1 - cos`` for
    :class:`~hmrf.emissions.VonMisesFisher`, else ``½ (D(x, μ(y)) + D(y, μ(x)))`` with
    each point made a centre by ``family.init_params``. ``return_sample`` also returns
    the sorted indices of the sampled rows.

    References
    ----------
    Cutting, Karger, Pedersen & Tukey (1992), "Scatter/Gather: a cluster-based approach
    to browsing large document collections", SIGIR (Buckshot). Mooney, CS 391L clustering
    slides ("Buckshot Algorithm").

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf.classic import buckshot_centers
    >>> X = np.r_[np.zeros((50, 2)), np.full((50, 2), 10.0)]
    >>> np.sort(buckshot_centers(X, 2, rng=0)[:, 0]).tolist()
    [0.0, 10.0]
    """
    X = check_data(X)
    n = X.shape[0]
    k = check_n_clusters(n_clusters, n)
    family = SquaredEuclidean() if family is None else family
    gen = check_random_state(rng, "rng")
    s = sample_size(n, k)
    sample = np.sort(gen.choice(n, size=s, replace=False))
    Xs = X[sample]
    D = _dissimilarities(Xs, family)
    if not np.all(np.isfinite(D)):
        raise ValueError(f"the {getattr(family, 'name', type(family).__name__)} divergence between "
                         "two sampled points is not finite; Buckshot needs finite dissimilarities "
                         "(use a smoothed family).")
    labels = np.zeros(s, dtype=np.int64)
    if s > 1:
        Z = linkage(squareform(D, checks=False), method="average")
        labels = cut_linkage(Z, s, s - k)
    sums, counts = cluster_sums(Xs, labels, k)
    centers = sums / counts[:, None]
    return (centers, sample) if return_sample else centers
